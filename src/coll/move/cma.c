/*
 * Path "cma": single copy. An owner's entry gives a block's address in its process (the
 * head gives its pid); the reader copies the block straight from there into its buffer
 * with process_vm_readv, so each byte crosses between cores once. The owner's buffer must
 * not change before every reader is done: an owner with such blocks waits, at the end of
 * the call, for the read_done of each of its readers (written after its last read).
 *
 * An owner whose wait fails (a member died or timed out) returns, and its caller may then
 * reuse or free the buffer. So, Dekker-style with seq_cst on both sides, as the
 * broadcast's single copy does: the owner marks the call abandoned, then waits for every
 * reader whose cma_reading shows the call; a reader marks itself reading, then reads only
 * if the owner has not marked the call abandoned. One of the two sees the other's store.
 */
#include "move_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define MV_CMA_MAGIC 0x6e636d6f76656d61ull

static volatile uint64_t probe_word = MV_CMA_MAGIC;

uint64_t mv_cma_probe_addr(void)
{
    return (uint64_t)(uintptr_t)&probe_word;
}

int mv_cma_probe(int32_t pid, uint64_t addr)
{
    uint64_t v = 0;
    struct iovec l = {&v, sizeof v}, r = {(void *)(uintptr_t)addr, sizeof v};
    ssize_t n = process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
    return n == (ssize_t)sizeof v && v == MV_CMA_MAGIC;
}

/* A reader whose owner gave up on the call (or whose process is gone): the owner did so
 * because a member died or timed out, so we wait as for any missing member, and the
 * team's peer check or timeout ends the wait with the report that names who is missing. */
static __attribute__((noinline)) int lost_owner(mv_call_t *c, int owner)
{
    numacoll_team_t *t = c->team;
    if (!t->check_peers && !t->timeout_ns)
        return nc_error(NUMACOLL_ERR_PEER_DEAD,
                        "%s: rank %d: rank %d gave up call %llu, in which a member exited or "
                        "timed out (set NUMACOLL_TIMEOUT to be told which)",
                        c->who, c->me, owner, (unsigned long long)c->k);
    nc_wait_t w;
    nc_wait_init(&w, t, c->who);
    w.waiting_for = owner;
    /* Wait loop: for nothing that will come (nobody writes anything we read here); it ends
     * in nc_wait_step's dead-member check or the team's timeout */
    for (;;) {
        int rc = nc_wait_step(&w);
        if (rc) return rc;
    }
}

int mv_cma_read_begin(mv_call_t *c, mv_read_t *rd, const mv_head_t *h, const mv_entry_t *e)
{
    nc_move_team_t *s = c->state;
    if (!c->cma_reading) {
        atomic_store_explicit(mv_flag(s, c->me, MV_LINE_CMA_READING), c->k, memory_order_seq_cst);
        c->cma_reading = 1;
    }
    if (atomic_load_explicit(mv_flag(s, rd->owner, MV_LINE_CMA_ABANDONED),
                             memory_order_seq_cst) == (MV_ABANDONED | c->k))
        return lost_owner(c, rd->owner);
    size_t got = 0, bytes = (size_t)e->size;
    while (got < bytes) {
        struct iovec l = {rd->dst + got, bytes - got};
        struct iovec r = {(void *)(uintptr_t)(e->where + got), bytes - got};
        ssize_t n = process_vm_readv((pid_t)h->pid, &l, 1, &r, 1, 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == ESRCH) return lost_owner(c, rd->owner);
            return nc_error(NUMACOLL_ERR_SYS,
                            "%s: process_vm_readv of %zu bytes from rank %d (pid %d) failed "
                            "after %zu bytes: %s",
                            c->who, bytes, rd->owner, (int)h->pid, got,
                            n < 0 ? strerror(errno) : "no progress");
        }
        got += (size_t)n;
    }
    return NUMACOLL_OK;
}

/* Wait until reader @p m is done with the call (its read_done) or its process is gone,
 * whatever happens to the other members (the team's own waits end at the first dead
 * member: here that member may not be the one reading our buffer), bounded by the team's
 * NUMACOLL_TIMEOUT. Returns NUMACOLL_OK once m reads our buffers no more. */
static int wait_reader_gone_or_done(mv_call_t *c, int m)
{
    _Atomic uint64_t *f = mv_flag(c->state, m, MV_LINE_READ_DONE);
    pid_t pid = atomic_load_explicit(&nc_team_ctl(c->team, m)->pid, memory_order_relaxed);
    nc_wait_t w;
    nc_wait_init_standalone(&w, c->who, c->team->timeout_ns);
    uint64_t next_check = 0;
    /* Wait loop: m alone writes its read_done, with release after its last read; seen
     * >= k (acquire), or m's process gone, it reads our buffers no more */
    while (atomic_load_explicit(f, memory_order_acquire) < c->k) {
        uint64_t now = nc_now_ns();
        if (now >= next_check) {
            if (nc_pid_gone(pid)) return NUMACOLL_OK;
            next_check = now + 1000000; /* look at m's process every ms */
        }
        int rc = nc_wait_step(&w);
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

int mv_cma_wait_readers(mv_call_t *c)
{
    nc_move_team_t *s = c->state;
    int rc = NUMACOLL_OK;
    /* Wait: reader m alone writes its read_done, with release after its last read of our
     * buffers in the call; read_done >= k (acquire) means it reads them no more */
    for (int m = c->lo; m <= c->hi && rc == NUMACOLL_OK; m++)
        if (m != c->me) rc = mv_wait_flag(c, m, mv_flag(s, m, MV_LINE_READ_DONE), c->k);
    if (rc == NUMACOLL_OK) return rc;
    char why[512];
    snprintf(why, sizeof why, "%s", numacoll_last_error());
    atomic_store_explicit(mv_flag(s, c->me, MV_LINE_CMA_ABANDONED), MV_ABANDONED | c->k,
                          memory_order_seq_cst);
    for (int m = c->lo; m <= c->hi; m++) {
        if (m == c->me || atomic_load_explicit(mv_flag(s, m, MV_LINE_CMA_READING),
                                               memory_order_seq_cst) != c->k)
            continue;
        /* m reads or has read our buffers: until its read_done (or its death or timeout) */
        (void)wait_reader_gone_or_done(c, m);
    }
    return nc_error(rc, "%s", why);
}
