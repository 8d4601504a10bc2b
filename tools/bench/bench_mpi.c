/*
 * numacoll-bench --mpi ...: the MPI mode lives in MPI-linked binaries, one per MPI
 * library (numacoll-bench-mpi-openmpi, numacoll-bench-mpi-mpich, next to this program; a
 * further MPI of a family under its preload name: numacoll-bench-mpi-openmpi5).
 * This front end recognises the launcher from the environment it set up for the rank
 * (Open MPI: OMPI_COMM_WORLD_SIZE; MPICH's Hydra: PMI_RANK / PMI_SIZE) and execs the
 * matching binary with the same arguments. NUMACOLL_BENCH_MPI is not used (unknown
 * NUMACOLL_* variables are rejected); `--impl openmpi|mpich|<preload name>` forces the
 * choice.
 * -h / --help anywhere prints the MPI mode's help here (no launcher, no MPI needed).
 */
#define _GNU_SOURCE 1
#include "bench.h"
#include "mpi/help.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    nc_bench_mpi_help(f);
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
        /* a family, or a preload name: the family and a major version (openmpi5) */
        size_t fam = !strncmp(impl, "openmpi", 7) ? 7 : !strncmp(impl, "mpich", 5) ? 5 : 0;
        if (!fam || (impl[fam] && strspn(impl + fam, "0123456789") != strlen(impl + fam))) {
            fprintf(stderr,
                    "numacoll-bench --mpi: --impl '%s' is not valid; allowed: openmpi, "
                    "mpich, or a preload name of numacoll-info --mpis (openmpi5)\n",
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
