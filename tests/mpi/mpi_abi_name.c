/*
 * A plain MPI program for the preload-linkage test (tests/mpi/test_renamed_mpi.sh): it is
 * linked against a copy of an MPI library under another name (MPICH's libmpich.so.12 as
 * libmpi.so.12, the name Intel MPI, MVAPICH and Cray MPICH give it), runs barriers,
 * broadcasts and allreduces, finds numacoll's counters with dlsym (present only under the
 * preload; the file that defines them names the preload that ran) and lists the MPI
 * libraries mapped into the process (/proc/self/maps). tests/mpi/test_cluster_prefix.sh
 * runs it too, built with each of two MPIs of one family.
 *   mpi_abi_name ITERATIONS
 */
#define _GNU_SOURCE 1 /* dladdr */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numacoll_mpi.h"

/* the distinct files mapped whose name starts with libmpi (libmpi.so*, libmpich.so*) */
static int mpi_libraries(char *list, size_t cap)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int n = 0;
    list[0] = '\0';
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/');
        if (!path) continue;
        path[strcspn(path, "\n")] = '\0';
        const char *base = strrchr(path, '/') + 1;
        if (strncmp(base, "libmpi", 6) != 0 || strstr(list, path)) continue;
        if (strlen(list) + strlen(path) + 2 > cap) break;
        if (n++) strcat(list, " ");
        strcat(list, path);
    }
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 50, rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) { /* what the MPI library says it is: the first line */
        static char ident[MPI_MAX_LIBRARY_VERSION_STRING + 16];
        int len = 0;
        MPI_Get_library_version(ident, &len);
        ident[len > 0 && len < (int)sizeof ident ? len : 0] = '\0';
        ident[strcspn(ident, "\n")] = '\0';
        printf("abi_name: rank 0: the MPI library says \"%s\"\n", ident);
        fflush(stdout);
    }
    for (int i = 0; i < iters; i++) {
        char buf[256];
        int v = rank + i, sum = 0;
        memset(buf, rank == i % size ? 'a' + i % 26 : 0, sizeof buf);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Bcast(buf, sizeof buf, MPI_CHAR, i % size, MPI_COMM_WORLD);
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (buf[0] != 'a' + i % 26 || buf[sizeof buf - 1] != 'a' + i % 26 ||
            sum != size * (size - 1) / 2 + size * i)
            bad++;
    }
    size_t (*stats_fn)(numacoll_mpi_stats_t *, size_t);
    *(void **)&stats_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_stats_sized");
    numacoll_mpi_stats_t st;
    memset(&st, 0, sizeof st);
    char preload[1024] = "no preload";
    Dl_info where;
    if (stats_fn) {
        stats_fn(&st, sizeof st);
        const char *name = "?";
        if (dladdr(*(void **)&stats_fn, &where) && where.dli_fname) {
            name = strrchr(where.dli_fname, '/') ? strrchr(where.dli_fname, '/') + 1 : where.dli_fname;
        }
        snprintf(preload, sizeof preload, "preloaded by %s", name);
    }
    char libs[8192];
    int nlibs = mpi_libraries(libs, sizeof libs);
    /* one write: stdio may cut a long line into pieces that interleave with another rank's */
    char line[8192 + 512];
    int n = snprintf(line, sizeof line,
           "abi_name: rank %d: %s; barrier %llu (numacoll %llu), bcast %llu (numacoll %llu), "
           "allreduce %llu (numacoll %llu); %d wrong results; %d MPI libraries loaded: %s\n",
           rank, preload, (unsigned long long)st.barrier_calls,
           (unsigned long long)st.barrier_numacoll, (unsigned long long)st.bcast_calls,
           (unsigned long long)st.bcast_numacoll, (unsigned long long)st.allreduce_calls,
           (unsigned long long)st.allreduce_numacoll, bad, nlibs, libs);
    fflush(stdout);
    if (n > 0 && write(STDOUT_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0)
        bad++;
    MPI_Finalize();
    return bad ? 1 : 0;
}
