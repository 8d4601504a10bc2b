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
#define DEAD_CHECK_NS 20000000ull /* look for dead members every 20 ms of waiting */

struct numacoll_fork_oob {
    int nprocs;
    size_t map_size;
    _Alignas(128) _Atomic uint64_t count; /* arrivals in the current round (multi-writer) */
    _Alignas(128) _Atomic uint64_t gen;   /* completed rounds; written by the last arriver */
    /* nprocs pids, then nprocs arrival words (arrived_of), then nprocs slots of CHUNK */
    _Alignas(128) _Atomic int32_t pids[];
};

/* per-process: our rank in each region (a process uses one region at a time) */
static _Thread_local int my_rank = -1;

static size_t arrived_off(int nprocs)
{
    return nc_round_up(sizeof(numacoll_fork_oob_t) + (size_t)nprocs * sizeof(int32_t), 8);
}

static size_t slots_off(int nprocs)
{
    return nc_round_up(arrived_off(nprocs) + (size_t)nprocs * sizeof(uint64_t), 64);
}

/* Word r: the last round (gen + 1) rank r has arrived at; written by rank r only. */
static _Atomic uint64_t *arrived_of(numacoll_fork_oob_t *o)
{
    return (_Atomic uint64_t *)((char *)o + arrived_off(o->nprocs));
}

static char *slot(numacoll_fork_oob_t *o, int r)
{
    return (char *)o + slots_off(o->nprocs) + (size_t)r * CHUNK;
}

numacoll_fork_oob_t *numacoll_fork_oob_create(int nprocs)
{
    if (nprocs < 1) {
        nc_error(NUMACOLL_ERR_ARG, "numacoll_fork_oob_create: nprocs=%d; allowed: >= 1", nprocs);
        return NULL;
    }
    size_t size = slots_off(nprocs) + (size_t)nprocs * CHUNK;
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

/* The members that have not arrived at round @p g + 1, as "1, 3 (exited), 4 (not started)"
 * in @p list (not started: no numacoll_fork_oob_set_rank yet); returns how many of them
 * have exited. */
static int not_arrived(numacoll_fork_oob_t *o, uint64_t g, char *list, size_t cap, int *nlist)
{
    size_t n = 0;
    int ndead = 0;
    *nlist = 0;
    list[0] = 0;
    for (int r = 0; r < o->nprocs; r++) {
        /* relaxed: diagnostic; the round's outcome is decided by gen alone */
        if (r == my_rank || atomic_load_explicit(&arrived_of(o)[r], memory_order_relaxed) > g)
            continue;
        pid_t pid = atomic_load_explicit(&o->pids[r], memory_order_relaxed);
        int dead = nc_pid_gone(pid);
        ndead += dead;
        if (n + 48 < cap)
            n += (size_t)snprintf(list + n, cap - n, "%s%d%s", *nlist ? ", " : "", r,
                                  dead ? " (exited)" : pid == 0 ? " (not started)" : "");
        (*nlist)++;
    }
    return ndead;
}

int numacoll_fork_oob_barrier(numacoll_fork_oob_t *o)
{
    if (o->nprocs == 1) return 0;
    uint64_t g = atomic_load_explicit(&o->gen, memory_order_acquire);
    /* relaxed: read only by the reports of members that wait too long */
    if (my_rank >= 0 && my_rank < o->nprocs)
        atomic_store_explicit(&arrived_of(o)[my_rank], g + 1, memory_order_relaxed);
    /* acq_rel: the last arriver sees every member's slot writes before publishing */
    if (atomic_fetch_add_explicit(&o->count, 1, memory_order_acq_rel) == (uint64_t)o->nprocs - 1) {
        atomic_store_explicit(&o->count, 0, memory_order_relaxed);
        atomic_store_explicit(&o->gen, g + 1, memory_order_release);
        return 0;
    }
    nc_wait_t w;
    nc_wait_init_standalone(&w, "fork bootstrap barrier",
                            (uint64_t)(nc_cfg_double(NC_CFG_TIMEOUT) * 1e9));
    w.spin_limit = 64;
    uint64_t t0 = nc_now_ns(), last_check = t0;
    uint32_t steps = 0;
    char list[256];
    int nlist;
    /* gen is written only by the last arriver of a round; once it moves past g every
     * member has arrived and its writes before arriving are visible (acquire) */
    while (atomic_load_explicit(&o->gen, memory_order_acquire) == g) {
        int rc = nc_wait_step(&w);
        if (rc == NUMACOLL_ERR_TIMEOUT) {
            not_arrived(o, g, list, sizeof list, &nlist);
            return nc_error(rc,
                            "fork bootstrap (rank %d of %d): NUMACOLL_TIMEOUT=%s s expired after "
                            "%.6f s waiting for rank(s) %s",
                            my_rank, o->nprocs, nc_cfg_str(NC_CFG_TIMEOUT),
                            (double)(nc_now_ns() - t0) / 1e9, nlist ? list : "(none missing)");
        }
        if (rc) return rc;
        if ((++steps & 63) != 0) continue;
        uint64_t now = nc_now_ns();
        if (now - last_check < DEAD_CHECK_NS) continue;
        last_check = now;
        if (not_arrived(o, g, list, sizeof list, &nlist) &&
            atomic_load_explicit(&o->gen, memory_order_acquire) == g)
            return nc_error(NUMACOLL_ERR_PEER_DEAD,
                            "fork bootstrap (rank %d of %d): rank(s) %s exited before arriving, "
                            "while the others waited for them (waited %.3f s)",
                            my_rank, o->nprocs, list, (double)(now - t0) / 1e9);
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
