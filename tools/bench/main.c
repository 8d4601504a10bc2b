/*
 * numacoll-bench: the benchmark driver.
 *
 *   numacoll-bench barrier --procs P [--iters N] [--csv FILE] ...   (fork-based)
 *   numacoll-bench bcast ...                                        (fork-based)
 *   numacoll-bench --mpi barrier|bcast ...                          (under mpirun)
 */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bench_parse_long(const char *tool, const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr,
                "numacoll-bench %s: %s '%s' is not valid; allowed: an integer in %ld..%ld\n", tool,
                opt, s ? s : "(missing)", lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

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
