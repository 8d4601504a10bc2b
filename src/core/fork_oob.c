/*
 * OOB allgather for fork()ed processes over an anonymous shared mapping
 * (see include/numacoll/fork_oob.h).
 */
#include "nc_internal.h"

#include <numacoll/fork_oob.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHUNK 4096

struct numacoll_fork_oob {
    int nprocs;
    size_t map_size;
    _Alignas(128) _Atomic uint64_t count; /* arrivals in the current round (multi-writer) */
    _Alignas(128) _Atomic uint64_t gen;   /* completed rounds; written by the last arriver */
    _Alignas(128) _Atomic int32_t pids[]; /* nprocs entries, then nprocs slots of CHUNK */
};

/* per-process: our rank in each region (a process uses one region at a time) */
static _Thread_local int my_rank = -1;

static char *slot(numacoll_fork_oob_t *o, int r)
{
    char *base = (char *)o + nc_round_up(sizeof *o + (size_t)o->nprocs * sizeof(int32_t), 64);
    return base + (size_t)r * CHUNK;
}

numacoll_fork_oob_t *numacoll_fork_oob_create(int nprocs)
{
    if (nprocs < 1) {
        nc_error(NUMACOLL_ERR_ARG, "numacoll_fork_oob_create: nprocs=%d; allowed: >= 1", nprocs);
        return NULL;
    }
    size_t size = nc_round_up(sizeof(numacoll_fork_oob_t) + (size_t)nprocs * sizeof(int32_t), 64) +
                  (size_t)nprocs * CHUNK;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        nc_error(NUMACOLL_ERR_SYS, "mmap of the fork bootstrap region failed: %s", strerror(errno));
        return NULL;
    }
    numacoll_fork_oob_t *o = m;
    o->nprocs = nprocs;
    o->map_size = size;
    return o;
}

void numacoll_fork_oob_set_rank(numacoll_fork_oob_t *o, int rank)
{
    my_rank = rank;
    atomic_store_explicit(&o->pids[rank], (int32_t)getpid(), memory_order_relaxed);
}

static int dead_member(numacoll_fork_oob_t *o)
{
    for (int r = 0; r < o->nprocs; r++) {
        if (nc_pid_gone(atomic_load_explicit(&o->pids[r], memory_order_relaxed))) return r;
    }
    return -1;
}

int numacoll_fork_oob_barrier(numacoll_fork_oob_t *o)
{
    if (o->nprocs == 1) return 0;
    uint64_t g = atomic_load_explicit(&o->gen, memory_order_acquire);
    /* acq_rel: the last arriver sees every member's slot writes before publishing */
    if (atomic_fetch_add_explicit(&o->count, 1, memory_order_acq_rel) == (uint64_t)o->nprocs - 1) {
        atomic_store_explicit(&o->count, 0, memory_order_relaxed);
        atomic_store_explicit(&o->gen, g + 1, memory_order_release);
        return 0;
    }
    nc_wait_t w;
    nc_wait_init_standalone(&w, "fork bootstrap barrier",
                            (uint64_t)(nc_cfg_double("NUMACOLL_TIMEOUT") * 1e9));
    w.spin_limit = 64;
    uint64_t checks = 0;
    /* gen is written only by the last arriver of a round; once it moves past g every
     * member has arrived and its writes before arriving are visible (acquire) */
    while (atomic_load_explicit(&o->gen, memory_order_acquire) == g) {
        int rc = nc_wait_step(&w);
        if (rc) return rc;
        if ((++checks & 1023) == 0) {
            int d = dead_member(o);
            if (d >= 0 && atomic_load_explicit(&o->gen, memory_order_acquire) == g)
                return nc_error(NUMACOLL_ERR_PEER_DEAD,
                                "fork bootstrap: process of rank %d exited while the others "
                                "waited for it",
                                d);
        }
    }
    return 0;
}

int numacoll_fork_oob_allgather(const void *sendbuf, void *recvbuf, size_t size, void *ctx)
{
    numacoll_fork_oob_t *o = ctx;
    if (my_rank < 0 || my_rank >= o->nprocs) return -1;
    for (size_t off = 0; off < size || (size == 0 && off == 0); off += CHUNK) {
        size_t n = size - off < CHUNK ? size - off : CHUNK;
        memcpy(slot(o, my_rank), (const char *)sendbuf + off, n);
        if (numacoll_fork_oob_barrier(o)) return -1;
        for (int r = 0; r < o->nprocs; r++)
            memcpy((char *)recvbuf + (size_t)r * size + off, slot(o, r), n);
        if (numacoll_fork_oob_barrier(o)) return -1;
        if (size == 0) break;
    }
    return 0;
}

void numacoll_fork_oob_destroy(numacoll_fork_oob_t *o)
{
    if (o) munmap(o, o->map_size);
}
