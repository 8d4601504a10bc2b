/*
 * shm-sense-reversing: one global atomic counter, one global release word.
 * O(P) contended atomics on one line; the paper's slowest shared-memory barrier.
 *
 * Instead of resetting the counter and flipping a sense bit, the counter only grows
 * (the k-th barrier is complete when it reaches k*P) and the release word holds the
 * number of the last completed barrier: zero-filled memory is a valid initial state and
 * there is no reset race.
 */
#include "barrier.h"

static size_t global_bytes(const numacoll_team_t *t)
{
    return 2 * t->line;
}
static size_t rank_bytes(const numacoll_team_t *t)
{
    (void)t;
    return 0;
}

static int run(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    uint64_t k = ++s->calls;
    _Atomic uint64_t *count = (_Atomic uint64_t *)s->global;
    _Atomic uint64_t *release = (_Atomic uint64_t *)(s->global + t->line);

    /* acq_rel: the last arriver acquires every earlier arriver's writes (they form one
     * release sequence on the counter) and publishes them with its release store below */
    uint64_t prev = atomic_fetch_add_explicit(count, 1, memory_order_acq_rel);
    if (prev == k * (uint64_t)t->size - 1) {
        nc_flag_post(t, release, k); /* release, and wakes the sleepers (nc_internal.h) */
        return NUMACOLL_OK;
    }
    nc_wait_t w;
    nc_wait_init(&w, t, "barrier(sense-reversing)");
    /* release is written only by the last process to arrive at barrier k. Seeing a value
     * >= k (acquire) means all P members arrived, and their writes made before arriving
     * are visible to us. The last arriver wakes us if we sleep in the kernel on it. */
    uint64_t v;
    while ((v = atomic_load_explicit(release, memory_order_acquire)) < k) {
        int rc = nc_wait_step_on(&w, release, v);
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

const nc_barrier_algo_t nc_barrier_sense_reversing = {
    .name = "sense-reversing",
    .description = "one global atomic counter and a release word (O(P) contended atomics)",
    .global_bytes = global_bytes,
    .rank_bytes = rank_bytes,
    .run = run,
};
