/*
 * The CMA path: one op whose inline blocks carry the root's buffer address and pid; the
 * receivers read the buffer with process_vm_readv, and the root returns once they all have.
 */
#include "inline.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static volatile uint64_t cma_probe_word = CMA_MAGIC;

uint64_t bc_cma_probe_addr(void)
{
    return (uint64_t)(uintptr_t)&cma_probe_word;
}

int bc_cma_probe(int32_t pid, uint64_t addr)
{
    uint64_t v = 0;
    struct iovec l = {&v, sizeof v}, r = {(void *)(uintptr_t)addr, sizeof v};
    ssize_t n = process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
    if (n == (ssize_t)sizeof v && v == CMA_MAGIC) return 1;
    return 0;
}

/* The root's end of a CMA broadcast: one op whose blocks carry our buffer's address and
 * pid; the receivers read the buffer with process_vm_readv (cma_read). */
static int cma_abandon(call_t *x, uint64_t op, int rc);

int bc_root_cma(call_t *x, void *buf, size_t bytes)
{
    bcast_t *b = x->b;
    uint64_t op = b->hot.op++;
    /* Wait: every member's ack of the block's previous op (op - INLINE_BLOCKS; only member r
     * writes its ack, with release after its last read of the op): then nobody reads the
     * block any more, and we may rewrite it */
    int rc = wait_reuse(x->t, b, op, INLINE_BLOCKS);
    if (rc) return rc;
    cma_desc_t d = {.addr = (uint64_t)(uintptr_t)buf, .pid = getpid(), .root = x->me};
    bc_inl_forward(x, op % INLINE_BLOCKS, &d, sizeof d, KIND_CMA | bytes, op + 1);
    post_ack(x->t, b, x->me, op);
    /* Wait: the receivers read our user buffer, which must not change before they are done:
     * every member's ack of op (written after its process_vm_readv has returned) */
    rc = wait_acks(x->t, b, op + 1);
    return rc ? cma_abandon(x, op, rc) : NUMACOLL_OK;
}

/* The root of CMA op @p op gives up on it (@p rc: a member died or timed out). A receiver
 * that has begun to read our buffer, or will, must not see it change or go away with our
 * process (it took the error of process_vm_readv, not the team's, and a reader of a changed
 * buffer would return stale bytes as a success). So, Dekker-style with seq_cst on both
 * sides: we mark the op abandoned, then wait for every receiver whose guard shows it
 * reading; a receiver marks itself reading, then reads only if the op is not marked
 * abandoned (bc_cma_guarded_read). One of the two sees the other's store. Returns @p rc with
 * its message. */
static __attribute__((noinline)) int cma_abandon(call_t *x, uint64_t op, int rc)
{
    bcast_t *b = x->b;
    char why[512];
    snprintf(why, sizeof why, "%s", numacoll_last_error());
    atomic_store_explicit(cma_guard(b, x->me), CMA_ABANDONED | (op + 1), memory_order_seq_cst);
    for (int r = 0; r < x->P; r++) {
        if (r == x->me || atomic_load_explicit(cma_guard(b, r), memory_order_seq_cst) != op + 1)
            continue;
        /* r reads or has read our buffer: until its ack (or its own death or timeout) */
        (void)bc_wait_ack_of(x->t, b, r, op + 1);
    }
    return nc_error(rc, "%s", why);
}

/* Read @p bytes of the root's buffer described by @p d into @p buf; *@p gone = 1 if the
 * root's process no longer exists. */
static int cma_read(call_t *x, const cma_desc_t *d, void *buf, size_t bytes, int *gone)
{
    size_t got = 0;
    while (got < bytes) {
        struct iovec l = {(char *)buf + got, bytes - got};
        struct iovec r = {(void *)(uintptr_t)(d->addr + got), bytes - got};
        ssize_t n = process_vm_readv((pid_t)d->pid, &l, 1, &r, 1, 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            *gone = n < 0 && errno == ESRCH;
            return nc_error(NUMACOLL_ERR_SYS,
                            "bcast: process_vm_readv of %zu bytes from the root (rank %d, pid "
                            "%lld) failed after %zu bytes: %s",
                            bytes, x->root, (long long)d->pid, got,
                            n < 0 ? strerror(errno) : "no progress");
        }
        got += (size_t)n;
    }
    return NUMACOLL_OK;
}

/* A receiver of CMA op @p op whose root gave up on it (cma_abandon) or whose root's process
 * is gone: the root did so because a member died or timed out, so we wait as for any
 * missing member, and the team's peer check or timeout ends the wait with the report that
 * names who is missing (as our other waits do), not process_vm_readv's error. */
static __attribute__((noinline)) int cma_lost_root(call_t *x, uint64_t op)
{
    numacoll_team_t *t = x->t;
    if (!t->check_peers && !t->timeout_ns) /* nothing would end the wait */
        return nc_error(NUMACOLL_ERR_PEER_DEAD,
                        "bcast: rank %d: the root (rank %d) gave up broadcast op %llu, in which "
                        "a member exited or timed out (set NUMACOLL_TIMEOUT to be told which)",
                        x->me, x->root, (unsigned long long)op);
    nc_wait_t w;
    nc_wait_init(&w, t, "bcast");
    /* Wait loop: for nothing that will come (nobody writes anything we read here); it ends
     * in nc_wait_step's dead-member check or the team's timeout */
    for (;;) {
        int rc = nc_wait_step(&w);
        if (rc) return rc;
    }
}

/* A receiver's read of the root's buffer in CMA op @p op (see cma_abandon for the guard):
 * we mark ourselves reading, then read only if the root has not abandoned the op. */
int bc_cma_guarded_read(call_t *x, const cma_desc_t *d, void *buf, size_t bytes, uint64_t op)
{
    bcast_t *b = x->b;
    atomic_store_explicit(cma_guard(b, x->me), op + 1, memory_order_seq_cst);
    if (atomic_load_explicit(cma_guard(b, (int)d->root), memory_order_seq_cst) ==
        (CMA_ABANDONED | (op + 1)))
        return cma_lost_root(x, op);
    int gone = 0;
    int rc = cma_read(x, d, buf, bytes, &gone);
    return rc && gone ? cma_lost_root(x, op) : rc;
}
