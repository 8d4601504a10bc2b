/*
 * numacoll-bench: the benchmark driver.
 *
 *   numacoll-bench barrier --procs P [--iters N] [--csv FILE] ...   (fork-based)
 *   numacoll-bench bcast ...                                        (fork-based)
 *   numacoll-bench --mpi barrier|bcast ...                          (under mpirun)
 *   numacoll-bench --help | --version
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

#ifndef NC_VERSION
#define NC_VERSION "unknown"
#endif

static void usage(FILE *f)
{
    fprintf(f, "usage: numacoll-bench barrier|bcast [options]   (fork-based, this node)\n"
               "       numacoll-bench --mpi COLLECTIVE [options]   (under mpirun/mpiexec; "
               "COLLECTIVE:\n"
               "         barrier, bcast, allreduce, reduce, reduce_scatter_block, scan, "
               "allgather,\n"
               "         allgatherv, gather, gatherv, scatter, scatterv, alltoall, alltoallv)\n"
               "       numacoll-bench COMMAND --help   for the options of a command\n"
               "       numacoll-bench --version\n");
}

/* the help of one command, as COMMAND --help prints it */
static void command_help(const char *cmd)
{
    char c0[16], c1[16] = "--help", c2[16] = "--help";
    snprintf(c0, sizeof c0, "%s", cmd);
    char *av[] = {c0, c1, c2, NULL};
    fflush(stdout);
    if (!strcmp(cmd, "barrier")) bench_barrier_main(2, av);
    if (!strcmp(cmd, "bcast")) bench_bcast_main(2, av);
    if (!strcmp(cmd, "--mpi")) bench_mpi_main(2, av);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        printf("numacoll-bench: benchmarks of numacoll's barriers and broadcasts against the\n"
               "physical references measured in the same run (fork-based: barrier, bcast), and\n"
               "of numacoll under MPI against the MPI's own collectives (--mpi). Times are in\n"
               "microseconds (us) unless a column says otherwise; sizes in bytes.\n\n");
        usage(stdout);
        printf("  --version   print the version and exit\n"
               "  -h, --help  print this help (every command's options, below) and exit\n\n");
        command_help("barrier");
        printf("\n");
        command_help("bcast");
        printf("\n");
        command_help("--mpi");
        return 0;
    }
    /* --version anywhere (numacoll-bench --mpi bcast --version too) */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--version")) {
            printf("numacoll-bench (numacoll) %s\n", NC_VERSION);
            return 0;
        }
    if (!strcmp(argv[1], "--mpi")) return bench_mpi_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "barrier")) return bench_barrier_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "bcast")) return bench_bcast_main(argc - 1, argv + 1);
    fprintf(stderr, "numacoll-bench: unknown command '%s'; allowed: barrier, bcast, --mpi\n",
            argv[1]);
    usage(stderr);
    return 2;
}
