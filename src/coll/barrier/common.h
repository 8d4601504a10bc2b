/*
 * Small helpers shared by the barrier algorithms (private to coll/barrier/).
 *
 * Every flag is a monotonically increasing 64-bit sequence number: the owner stores the
 * number of the barrier episode it has reached (1, 2, 3, ...), readers wait until the
 * value is >= the episode they need. Zero-filled memory is the valid initial state, no
 * flag is ever reset, and a reader that is late and sees a larger value (the writer has
 * already moved on to the next episode) is still right, because the writer could only
 * move on after this episode completed.
 */
#ifndef NC_BARRIER_COMMON_H
#define NC_BARRIER_COMMON_H

#include "barrier.h"

/* The flag at line @p i of an area (each flag alone on a t->line-byte line). */
static inline _Atomic uint64_t *nc_bar_line(const numacoll_team_t *t, char *area, size_t i)
{
    return (_Atomic uint64_t *)(area + i * t->line);
}

/* Publish "episode @p k reached": release, so that a reader that acquires the value also
 * sees everything this process wrote before (its own arrival, or the arrivals it
 * gathered from others, which it acquired itself); then wake the readers sleeping on the
 * flag in the kernel, if any (nc_flag_post). */
static inline void nc_bar_post(numacoll_team_t *t, _Atomic uint64_t *flag, uint64_t k)
{
    nc_flag_post(t, flag, k);
}

/*
 * Wait until *flag >= k. The caller's comment at each call site says who writes the flag
 * and what seeing it means. The first load is tried before nc_wait_init so the common
 * "already there" case costs one load.
 */
static inline int nc_bar_wait(numacoll_team_t *t, _Atomic uint64_t *flag, uint64_t k,
                              const char *op)
{
    if (atomic_load_explicit(flag, memory_order_acquire) >= k) return NUMACOLL_OK;
    nc_wait_t w;
    nc_wait_init(&w, t, op);
    /* writer: named by the caller; acquire pairs with the writer's release store in
     * nc_bar_post, so after the loop everything the writer published is visible. The
     * writer wakes us (nc_bar_post) when we sleep in the kernel on the flag. */
    uint64_t v;
    while ((v = atomic_load_explicit(flag, memory_order_acquire)) < k) {
        int rc = nc_wait_step_on(&w, flag, v);
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

/* ceil(log2(n)) for n >= 1 */
static inline int nc_bar_ceil_log2(int n)
{
    int r = 0;
    while ((1 << r) < n)
        r++;
    return r;
}

#endif
