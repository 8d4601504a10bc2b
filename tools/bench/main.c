/*
 * numacoll-bench: the benchmark driver.
 *
 *   numacoll-bench barrier --procs P [--iters N] [--csv FILE] ...   (fork-based)
 *   numacoll-bench bcast ...                                        (fork-based)
 *   numacoll-bench --mpi barrier|bcast ...                          (under mpirun)
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: numacoll-bench barrier|bcast [options]   (fork-based, this node)\n"
               "       numacoll-bench --mpi barrier|bcast [options]   (under mpirun/mpiexec)\n"
               "       numacoll-bench COMMAND --help   for the options of a command\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--mpi")) return bench_mpi_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "barrier")) return bench_barrier_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "bcast")) return bench_bcast_main(argc - 1, argv + 1);
    fprintf(stderr, "numacoll-bench: unknown command '%s'; allowed: barrier, bcast, --mpi\n",
            argv[1]);
    usage(stderr);
    return 2;
}
