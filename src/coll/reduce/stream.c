/*
 * Copy modes of the reductions: what a member writes for others to read (its posted input,
 * rsag's reduced slices) goes with plain or with non-temporal (streamed) stores. Which is
 * faster depends on where the reader finds the lines: in the writer's cache (plain stores:
 * fast when the two cores share a cache, slow when a line must come from another core
 * complex and the writer must invalidate the reader's copy at every reuse) or in memory
 * (streamed stores). On one machine the answer changes with where the host places the
 * cores (docs/tuning-notes.md), so NUMACOLL_REDUCE_STREAM=auto measures.
 *
 * auto, for a reduction of at least NUMACOLL_REDUCE_STREAM_MIN bytes (a reduce-scatter's:
 * its longest slice), kind k (allreduce, reduce, reduce-scatter, scan) and size class c
 * (the message's power of two above that minimum):
 *   - every member counts its calls of (k, c); all members make the same calls, so the
 *     count is the same on all of them and they pick the same mode for a call: the first
 *     four calls alternate plain, streamed, plain, streamed; after that every 16th call
 *     tries the mode that is not the best, the others use the best;
 *   - the decider (a reduce's root, a scan's last member, else member 0) times its calls,
 *     keeps the last 4 times per byte of each mode, and stores the best mode of (k, c) in
 *     its modes line; the others read it there. The best changes when the other mode's
 *     median is 10% lower.
 * The mode only says how a member writes its own buffers; readers read the same way
 * either way. A member that sees a stale best mode is slower for a call, never wrong; so
 * are members whose counts drift apart after a call they disagreed on (a mismatch error
 * with different sizes): they then try the other mode in different calls.
 */
#include "reduce_internal.h"

#include <string.h>

enum { EXPLORE_EVERY = 16, WARMUP_CALLS = 4 };

/* size class of a message of @p bytes >= @p min: floor(log2(bytes / min)), capped */
static int class_of(size_t bytes, size_t min)
{
    int c = 0;
    size_t unit = min ? min : 1;
    while (c < RD_STREAM_CLASSES - 1 && bytes / unit >= 2)
        unit *= 2, c++;
    return c;
}

/* median of the kept samples of one mode (the mean of the middle two of four) */
static uint64_t median_of(const rd_mode_times_t *t, int mode)
{
    uint32_t x[4];
    int n = t->count[mode];
    memcpy(x, t->ns_per_kib[mode], sizeof x);
    for (int i = 1; i < n; i++) /* insertion sort of at most 4 */
        for (int j = i; j > 0 && x[j - 1] > x[j]; j--) {
            uint32_t tmp = x[j];
            x[j] = x[j - 1];
            x[j - 1] = tmp;
        }
    return n % 2 ? x[n / 2] : ((uint64_t)x[n / 2 - 1] + x[n / 2]) / 2;
}

int rd_stream_pick(const rd_mode_times_t *t, int best)
{
    if (t->count[0] == 0 || t->count[1] == 0) return best;
    uint64_t mine = median_of(t, best), other = median_of(t, !best);
    return other * 10 < mine * 9 ? !best : best;
}

void rd_stream_record(rd_mode_times_t *t, int mode, uint64_t ns, size_t bytes)
{
    uint64_t per_kib = bytes ? ns * 1024 / bytes : ns;
    t->ns_per_kib[mode][t->next[mode]] = per_kib > UINT32_MAX ? UINT32_MAX : (uint32_t)per_kib;
    t->next[mode] = (uint8_t)((t->next[mode] + 1) % 4);
    if (t->count[mode] < 4) t->count[mode]++;
}

void rd_stream_begin(rd_call_t *call, int kind)
{
    nc_reduce_team_t *r = call->state;
    size_t bytes = call->count * call->esize;
    call->stream = 0;
    call->timed = 0;
    call->kind = call->cls = 0;
    call->t0 = 0;
    if (r->stream == RD_STREAM_OFF || bytes < r->stream_min || call->nprocs == 1) return;
    if (r->stream == RD_STREAM_ON) {
        call->stream = 1;
        return;
    }
    call->kind = kind;
    call->cls = class_of(bytes, r->stream_min);
    uint64_t n = r->class_calls[call->kind][call->cls]++;
    /* the member whose call time shows the copies' cost: a reduce's root, a scan's last
     * member (it waits for the whole chain), else member 0 */
    int decider = kind == RD_KIND_REDUCE ? call->root
                  : kind == RD_KIND_SCAN ? call->nprocs - 1
                                         : 0;
    /* relaxed: the decider alone writes its modes line; any value is a valid mode, and a
     * stale one costs speed only */
    int best = atomic_load_explicit(rd_best_mode(r, decider, call->kind, call->cls),
                                    memory_order_relaxed);
    if (n < WARMUP_CALLS) call->stream = (int)(n & 1);
    else if (n % EXPLORE_EVERY == EXPLORE_EVERY / 2) call->stream = !best;
    else call->stream = best;
    if (call->me == decider) {
        call->timed = 1;
        call->t0 = nc_now_ns();
    }
}

void rd_stream_end(rd_call_t *call)
{
    if (!call->timed) return;
    nc_reduce_team_t *r = call->state;
    rd_mode_times_t *t = &r->times[call->kind][call->cls];
    rd_stream_record(t, call->stream, nc_now_ns() - call->t0, call->count * call->esize);
    _Atomic uint8_t *best = rd_best_mode(r, call->me, call->kind, call->cls);
    int was = atomic_load_explicit(best, memory_order_relaxed);
    int now = rd_stream_pick(t, was);
    if (now != was) atomic_store_explicit(best, (uint8_t)now, memory_order_relaxed);
}

void rd_copy_shared(const rd_call_t *call, void *dst, const void *src, size_t n)
{
    if (call->stream) {
        nc_copy_stream(dst, src, n);
    } else if (n <= 64) { /* a small chunk: no call into the C library */
        unsigned char *d = dst;
        const unsigned char *s = src;
        size_t i = 0;
        for (; i + 8 <= n; i += 8) { /* 8-byte words (memcpy of a constant 8: one move) */
            uint64_t w;
            memcpy(&w, s + i, 8);
            memcpy(d + i, &w, 8);
        }
        for (; i < n; i++)
            d[i] = s[i];
    } else {
        memcpy(dst, src, n);
    }
}
