/*
 * Lowering a resource limit of the calling process so that the next allocation of that
 * resource fails: shared by the C-library tests (test_exhaustion.c) and the MPI test
 * program (tests/mpi/mpi_coll_mismatch.c).
 */
#ifndef NC_TEST_SQUEEZE_H
#define NC_TEST_SQUEEZE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

/* RLIMIT_NOFILE: the soft limit becomes the lowest free descriptor, so the next open fails
 * with EMFILE; RLIMIT_AS: the soft limit becomes the process's VmSize plus @p slack bytes.
 * *@p saved gets the old limit (setrlimit(resource, saved) lifts it). 0 on success. */
static inline int nc_test_squeeze(int resource, size_t slack, struct rlimit *saved)
{
    if (getrlimit(resource, saved) != 0) return -1;
    struct rlimit lim = *saved;
    if (resource == RLIMIT_NOFILE) {
        int lowest_free = dup(0);
        if (lowest_free < 0) return -1;
        close(lowest_free);
        lim.rlim_cur = (rlim_t)lowest_free;
    } else {
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        long kb = -1;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "VmSize: %ld kB", &kb) == 1) break;
        if (f) fclose(f);
        if (kb <= 0) return -1;
        lim.rlim_cur = (rlim_t)kb * 1024 + slack;
    }
    return setrlimit(resource, &lim);
}

#endif
