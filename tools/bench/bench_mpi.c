/*
 * numacoll-bench --mpi ...: the MPI mode lives in MPI-linked binaries, one per MPI
 * library (numacoll-bench-mpi-openmpi, numacoll-bench-mpi-mpich, next to this program).
 * This front end recognises the launcher from the environment it set up for the rank
 * (Open MPI: OMPI_COMM_WORLD_SIZE; MPICH's Hydra: PMI_RANK / PMI_SIZE) and execs the
 * matching binary with the same arguments. NUMACOLL_BENCH_MPI is not used (unknown
 * NUMACOLL_* variables are rejected); `--impl openmpi|mpich` forces the choice.
 * -h / --help anywhere prints the MPI mode's help here (no launcher, no MPI needed).
 */
#define _GNU_SOURCE 1
#include "bench.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: numacoll-bench --mpi [--impl openmpi|mpich] barrier|bcast [--csv FILE]\n"
            "         [--csv-slowest FILE] [--iters N] [--reps R] [--target-ms MS]\n"
            "         [--min-bytes B] [--max-bytes B] [--variants A,B,...]\n"
            "         [--native-label NAME] [--root-shift] [--quiet]\n"
            "MPI_Barrier / MPI_Bcast under numacoll against the MPI's own collectives, the\n"
            "variants interleaved in every repetition. Run it under a launcher, e.g.\n"
            "  mpirun -np 2 numacoll-bench --mpi bcast      (or mpiexec.mpich -n 2 ...)\n"
            "(numacoll-bench-mpi-<mpi>, linked with libnumacoll_mpi, does the work; no\n"
            "numacoll-run needed). Times in microseconds (us), sizes in bytes.\n"
            "  --impl M          the MPI binary to run: openmpi or mpich (default: recognised\n"
            "                    from the launcher's environment); must come first\n"
            "  --csv FILE        append rows collective,algorithm,procs,bytes,\n"
            "                    latency_us_median,latency_us_min,latency_us_max,mpi (barrier:\n"
            "                    the slowest rank's mean per call; bcast: the mean over the\n"
            "                    ranks, OSU's Avg Latency)\n"
            "  --csv-slowest FILE  (bcast) the same rows from the slowest rank's mean\n"
            "  --iters N         at most N calls per run, 1..1000000000 (default 2000)\n"
            "  --reps R          runs per variant and size, interleaved, 1..1000 (default 11);\n"
            "                    median, min and max are over these\n"
            "  --target-ms MS    calls per run scaled so that a run lasts about MS\n"
            "                    milliseconds, 0 < MS <= 60000 (default 20)\n"
            "  --min-bytes B     (bcast) smallest message, a size like 64, 4K, 16M (default 1)\n"
            "  --max-bytes B     (bcast) largest message, at most 1G (default 4M); sizes double\n"
            "  --variants L      only the comma-separated variants L; an unknown name is an\n"
            "                    error listing the allowed ones. Both: native (the MPI's own\n"
            "                    call), default (numacoll's MPI call), native-sm (Open MPI's\n"
            "                    coll/sm), core (numacoll on the communicator's team, without\n"
            "                    the MPI wrapper). barrier: every registered algorithm\n"
            "                    (numacoll-info --algorithms). bcast: tree:kary, tree:knomial,\n"
            "                    tree:flat, tree:chain, tree:topo, cma, copy:plain,\n"
            "                    copy:stream-root, copy:stream-recv, copy:stream (the names of\n"
            "                    numacoll-bench bcast), demote:on|off, prefetch:on|off, and the\n"
            "                    references limit:memcpy, limit:signal, limit:inline (up to\n"
            "                    1 KiB), limit:xcore, limit:pipe (np >= 2)\n"
            "                    Default: native, default, native-sm, limit:memcpy, and with\n"
            "                    np <= CPUs limit:signal and limit:inline (bcast); native,\n"
            "                    default, native-sm and every algorithm (barrier)\n"
            "  --native-label NAME  the name of the native rows (default native)\n"
            "  --root-shift      (bcast) the root of timed call i is i mod np, as IMB's\n"
            "                    -root_shift on (limit:memcpy, limit:xcore, limit:pipe stay on\n"
            "                    rank 0)\n"
            "  --quiet           no table on stdout (CSV only)\n"
            "  --version         print the version and exit\n"
            "  -h, --help        print this help and exit\n"
            "Table columns: coll, algorithm, procs, bytes, then mean_med_us (bcast; barrier:\n"
            "median_us), min_us, max_us, slowest_med (the slowest rank's median, us), iters\n"
            "(calls per run), mpi.\n");
}

static const char *detect(void)
{
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("OMPI_COMM_WORLD_RANK")) return "openmpi";
    if (getenv("PMI_RANK") || getenv("PMI_SIZE") || getenv("PMIX_RANK") ||
        getenv("HYDRA_CONTROL_FD") || getenv("MPI_LOCALNRANKS"))
        return getenv("PMIX_RANK") && !getenv("PMI_RANK") ? "openmpi" : "mpich";
    return NULL;
}

int bench_mpi_main(int argc, char **argv)
{
    /* argv[0] is "--mpi" */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
    const char *impl = NULL;
    int first = 1;
    if (argc > 2 && !strcmp(argv[1], "--impl")) {
        impl = argv[2];
        first = 3;
        if (strcmp(impl, "openmpi") && strcmp(impl, "mpich")) {
            fprintf(stderr,
                    "numacoll-bench --mpi: --impl '%s' is not valid; allowed: openmpi, "
                    "mpich\n",
                    impl);
            return 2;
        }
    }
    if (!impl) impl = detect();
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "numacoll-bench --mpi: cannot locate myself: %s\n", strerror(errno));
        return 1;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash) slash[1] = 0;
    char path[PATH_MAX + 64];
    if (!impl) {
        /* a singleton run (no launcher): take the first binary present */
        static const char *order[] = {"openmpi", "mpich"};
        for (int i = 0; i < 2 && !impl; i++) {
            snprintf(path, sizeof path, "%snumacoll-bench-mpi-%s", self, order[i]);
            if (access(path, X_OK) == 0) impl = order[i];
        }
        if (!impl) {
            fprintf(stderr,
                    "numacoll-bench --mpi: no MPI benchmark binary next to %s (built "
                    "without MPI?)\n",
                    self);
            return 1;
        }
    }
    snprintf(path, sizeof path, "%snumacoll-bench-mpi-%s", self, impl);
    if (access(path, X_OK) != 0) {
        fprintf(stderr,
                "numacoll-bench --mpi: %s is missing: numacoll was built without %s "
                "(NUMACOLL_MPI)\n",
                path, impl);
        return 1;
    }
    char **av = calloc((size_t)argc + 1, sizeof *av);
    if (!av) return 1;
    av[0] = path;
    int k = 1;
    for (int i = first; i < argc; i++)
        av[k++] = argv[i];
    av[k] = NULL;
    execv(path, av);
    fprintf(stderr, "numacoll-bench --mpi: cannot run %s: %s\n", path, strerror(errno));
    free(av);
    return 1;
}
