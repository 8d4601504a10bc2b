/*
 * The copy-mode selector of the queue path.
 *
 * Which copy is fastest depends on the machine, on where the host currently places the
 * vCPUs (on a VM this can change within tens of seconds) and on where the receivers'
 * buffers are (streamed receiver stores pay when the destination is not in cache anyway).
 * So the root, the only one who chooses (the mode travels to the receivers in the control
 * lines' flags), measures some of its broadcasts and picks per log2 size class.
 *
 * Measuring. A sample is the members' mean time in the call, as the benchmark reports it:
 * the root's own time and each receiver's, which a receiver sums over the measured calls
 * of a run and writes into its report word for that root (report_word) after the run's
 * last one (flags OPF_RUN_ARM, OPF_REPORT, OPF_RUN_FIRST, OPF_RUN_LAST). The root reads those
 * words at a later call (bc_sel_harvest), so a measured call costs it no wait; a root that
 * waited for the acks instead would charge a call of plain stores too little, since the
 * cost of the dirty lines it leaves behind comes later. A measured run of one mode is W
 * unmeasured calls, enough for the class's messages to pass once through the whole queue
 * (sel_warm: the queue's lines then have the cache state the run's mode leaves, not the
 * previous mode's), then M measured calls, M = SEL_SAMPLE_BYTES / the class's lower bound
 * (1..SEL_MEAS_MAX): one sample sums the times of M calls, so that one interrupted call
 * does not make a sample. Per class the root keeps the last 4 samples (ns per byte) of
 * each candidate mode.
 *
 * Choosing. Every candidate is run twice, then those within 2x of the best once more
 * (round robin); then every SEL_PERIOD-th run length of calls of the class starts a run of
 * another candidate and, offset half a period, a run of the current best (a candidate more
 * than twice as slow as the best only every SEL_RARE-th time). The best changes to a mode
 * whose median of its last 4 samples is below NC_BCAST_SEL_SWITCH times the best's. One run
 * is open at a time (a receiver keeps one sum per root): a run due while another class's is
 * open starts at the class's next call after it, and one left open for SEL_STALE run
 * lengths of calls is dropped. Exploring costs one run in SEL_PERIOD in a mode up to 2x
 * slower, plus the queue's passage back to the best's state. Local state only.
 *
 * Candidates (bc_sel_cands, plan.h): plain and streamed root stores (modes 0, 1) from
 * NUMACOLL_BCAST_STREAM_MIN on, all four stream modes (bits 0..1) from
 * NUMACOLL_BCAST_STREAM_OUT_MIN on (streamed receivers are left out below it, where they
 * are not the best and would double what exploring costs); the thresholds decide which is
 * tried first. Below STREAM_MIN, messages of SPLIT_MIN+1 .. SPLIT_MAX bytes in two halves or
 * in the model's one fragment (mode 4, OPF_WHOLE; not with a configured fragment size): the
 * halves overlap the root's copy of one half with the receiver's and cost one more
 * notification, so which wins depends on t_W. Up to SEL_NOROT_MAX, each candidate also
 * without rotating offsets (mode 8, OPF_NOROT; when the team rotates): the same lines
 * again may still be in a cache both sides share.
 *
 * Known limit: plain receiver stores into buffers that are not in cache leave dirty lines
 * that the L3 writes back only many calls later, which a run of a few calls does not see;
 * with such buffers the selector rates plain receiver stores a little too well. Those
 * deferred costs fall on the calls after an exploration run, so the best's every-call
 * samples (SEL_EVERY_MIN) skip the next max(W, SEL_QUIET) calls after one.
 *
 * Several roots (rotating roots at np >= 3) measure their runs at the same time: a
 * receiver keeps a sum, an armed flag and a report word per root, so that one root's
 * OPF_RUN_FIRST does not restart another's run.
 */
#include "bcast_internal.h"

#include <string.h>

#define SEL_PERIOD 256
#define SEL_RARE 4 /* a candidate > 2x slower than the best: every SEL_RARE-th exploration */
#define SEL_FIRST 3
#define SEL_WARM_MAX 512
#define SEL_SAMPLE_BYTES ((size_t)256 << 10)
#define SEL_MEAS_MAX 16
#define SEL_STALE 4
#define SEL_QUIET 8

static size_t class_low(size_t bytes) /* the lower bound of the size class of @p bytes */
{
    return (size_t)1 << (63 - __builtin_clzll((unsigned long long)bytes));
}

/* measured calls per sample in the size class of @p bytes (the same for the whole class) */
static int sel_meas(size_t bytes)
{
    size_t m = SEL_SAMPLE_BYTES / class_low(bytes);
    return m < 1 ? 1 : m > SEL_MEAS_MAX ? SEL_MEAS_MAX : (int)m;
}

/* Unmeasured calls that start a run in the size class of @p bytes: enough for the class's
 * messages to pass once through the whole queue (ops rotate through it, frag_buf), so that
 * the measured calls find the cache state the run's mode leaves there, not the previous
 * mode's (streamed root stores leave the queue in memory, plain ones in the caches) */
static int sel_warm(const bcast_t *b, size_t bytes)
{
    size_t w = b->rotate ? (b->queue_bytes + class_low(bytes) - 1) / class_low(bytes) : 1;
    return w < 1 ? 1 : w > SEL_WARM_MAX ? SEL_WARM_MAX : (int)w;
}

/* The candidate modes of a message of @p bytes into c[0..3], the static default first;
 * their number. A mode bit that does not apply to some size of a class does nothing there
 * (the classes at the range ends hold sizes of both kinds). */
int bc_sel_cands(const bcast_t *b, size_t bytes, int *c)
{
    /* plan.h: the same candidates numacoll-info --explain reports */
    return nc_bcast_sel_cands(b->stream_root_min, b->stream_recv_min, b->fragment_fixed, b->rotate,
                              bytes, c);
}

/* The selector state of @p bytes' size class; NULL while the team has none (no
 * broadcast had modes to choose from yet, or no memory for it) */
static struct sel *sel_of(bcast_t *b, size_t bytes)
{
    if (!b->sel_classes) return NULL;
    int l = 63 - __builtin_clzll((unsigned long long)bytes);
    return &b->sel_classes[l < SEL_CLASSES ? l : SEL_CLASSES - 1];
}

/* A mode's estimate: the median of its last 4 samples (the mean of the middle two; of
 * fewer, their median): one preempted or page-faulting sample does not count, nor does one
 * lucky one (with the minimum, a mode could stay the best on a single low sample until it
 * aged out); a change of the host's regime shows after 2-3 samples. */
static double sel_est(const struct sel *S, int mode)
{
    uint32_t k = S->nsamples[mode] < 4 ? S->nsamples[mode] : 4;
    double v[4];
    memcpy(v, S->samples[mode], k * sizeof v[0]);
    return bc_median_small(v, k);
}

/* The measurement bits of call @p pos (0-based) of @p S's run */
static int run_flags(const struct sel *S, int pos)
{
    if (pos < S->run_unmeasured) return pos == S->run_unmeasured - 1 ? OPF_RUN_ARM : 0;
    return OPF_REPORT | (pos == S->run_unmeasured ? OPF_RUN_FIRST : 0) |
           (pos == S->run_len - 1 ? OPF_RUN_LAST : 0);
}

/* Drop the open run, if any (its samples are lost; the receivers restart at OPF_RUN_FIRST) */
static void sel_drop(bcast_t *b)
{
    if (b->open_run_class >= 0) b->sel_classes[b->open_run_class].run_len = 0;
    b->open_run_class = -1;
}

/* Mode for this call (the static default first); *measure = the call's measurement bits
 * (OPF_REPORT, OPF_RUN_FIRST, OPF_RUN_LAST; OPF_RUN_ARM on the call before a run's first measured
 * one), 0 for a call outside runs. */
int bc_sel_choose(bcast_t *b, size_t bytes, int deflt, int *measure)
{
    int c[4], nc = bc_sel_cands(b, bytes, c);
    *measure = 0;
    if (nc == 0) return deflt;
    /* the first broadcast with modes to choose from: the selector's state (local: the
     * root decides alone, and without it keeps the static default) */
    if (NC_UNLIKELY(!b->sel_classes) &&
        !(b->sel_classes = calloc(SEL_CLASSES, sizeof *b->sel_classes)))
        return deflt;
    struct sel *S = sel_of(b, bytes);
    int cls = (int)(S - b->sel_classes);
    uint64_t now = b->sel_calls++;
    if (S->calls == 0) S->best_mode = deflt;
    uint64_t k = S->calls++;
    if (S->run_len > 0) { /* inside a measured run: run_unmeasured calls, then the measured ones */
        int pos = S->run_pos++;
        *measure = run_flags(S, pos);
        int mode = S->run_mode;
        if (S->run_pos == S->run_len) S->run_len = 0; /* the root closes open_run_class after it */
        return mode;
    }
    if (b->open_run_class >= 0 &&
        now - b->open_run_at >
            (uint64_t)SEL_STALE * (uint64_t)b->sel_classes[b->open_run_class].run_len)
        sel_drop(b); /* its class has not been called for a while */
    int blocked = b->open_run_class >= 0;
    int warm = sel_warm(b, bytes);
    uint64_t len = (uint64_t)warm + (uint64_t)sel_meas(bytes), per = SEL_PERIOD * len;
    int m = -1;
    /* each mode twice first (a mode's first run may pay for first use of queue memory,
     * and a mode excluded on one bad sample would wait for the rare explorations), then
     * SEL_FIRST - 2 more runs of those not twice as slow as the best (the others wait for
     * the rare explorations: their first runs would cost more than they can win back) */
    for (uint32_t round = 1; round <= SEL_FIRST && m < 0; round++)
        for (int i = 0; i < nc && m < 0; i++)
            if (S->runs[c[i]] < round &&
                (round <= 2 || !S->nsamples[c[i]] || !S->nsamples[S->best_mode] ||
                 sel_est(S, c[i]) <= 2 * sel_est(S, S->best_mode)))
                m = c[i];
    if (m < 0 && S->due_mode) m = S->due_mode - 1;
    if (m < 0 && k % per == 0) { /* explore the next candidate that is not the best;
                                  * one more than twice as slow only rarely */
        int rare = (k / per) % SEL_RARE != 0;
        for (int j = 0; j < nc && m < 0; j++) {
            int x = c[S->next_cand++ % nc];
            if (x == S->best_mode || (rare && sel_est(S, x) > 2 * sel_est(S, S->best_mode)))
                continue;
            m = x;
        }
    }
    if (m < 0 && k % per == per / 2) m = S->best_mode; /* re-measure the best */
    if (m >= 0 && blocked) {
        S->due_mode = m + 1; /* after the open run */
        m = -1;
    }
    if (m < 0) {
        /* large messages: every call of the best is measured (reading the reports costs the
         * root one cache miss per receiver, little next to a call of SEL_EVERY_MIN bytes),
         * so a change of the host's regime shows after 2-3 calls, not after 2-3
         * re-measurements half a period apart; not the SEL_QUIET calls after an
         * exploration, which pay for what it left behind */
        if (S->quiet_calls) {
            S->quiet_calls--;
        } else if (bytes >= SEL_EVERY_MIN && !blocked) {
            *measure = OPF_REPORT | OPF_RUN_FIRST | OPF_RUN_LAST;
            b->open_run_class = cls, b->open_run_at = now;
        }
        return S->best_mode;
    }
    S->runs[m]++;
    S->due_mode = 0;
    if (m != S->best_mode) S->quiet_calls = (uint32_t)(warm > SEL_QUIET ? warm : SEL_QUIET);
    S->run_mode = m;
    S->run_unmeasured = warm;
    S->run_len = (int)len;
    S->run_pos = 1;
    *measure = run_flags(S, 0);
    if (S->run_pos == S->run_len) S->run_len = 0;
    b->open_run_class = cls, b->open_run_at = now;
    return m;
}

/* A sample of @p mode in the class of @p bytes: @p nspb ns per byte (members' mean) */
static void sel_record(numacoll_team_t *t, bcast_t *b, size_t bytes, int mode, double nspb)
{
    struct sel *S = sel_of(b, bytes);
    int c[4], nc = bc_sel_cands(b, bytes, c);
    /* Until the first runs are done (bc_sel_choose: every candidate twice, those within 2x of
     * the best a third time), the lowest estimate wins outright; the switching margin holds
     * after that (with it from the start, the static default would keep a class whose
     * better mode is less than the margin ahead). Judged before this sample, so that the
     * last first run still chooses freely. */
    int settled = S->nsamples[S->best_mode] > 0;
    for (int i = 0; i < nc && settled; i++) {
        uint32_t k = S->nsamples[c[i]];
        if (k < 2 || (k < SEL_FIRST && sel_est(S, c[i]) <= 2 * sel_est(S, S->best_mode)))
            settled = 0;
    }
    double margin = settled ? NC_BCAST_SEL_SWITCH : 1.0;
    S->samples[mode][S->nsamples[mode]++ % 4] = nspb;
    for (int i = 0; i < nc; i++)
        if (S->nsamples[c[i]] &&
            (!S->nsamples[S->best_mode] || sel_est(S, c[i]) < margin * sel_est(S, S->best_mode))) {
            if (S->best_mode != c[i] && b->trace)
                nc_log(3, t->rank, t->size,
                       "bcast: the %zu-byte class now uses copy mode %d (%.3f ns/B; was %d)", bytes,
                       c[i], sel_est(S, c[i]), S->best_mode);
            S->best_mode = c[i];
        }
}

/* The root after a measured call of @p bytes in copy mode @p mode (@p bits: its measurement
 * bits, @p ns: the root's time in it): add it to the run; after the run's last call, the
 * run waits in `pending_run` for the receivers' sums. A failed call drops the run. */
void bc_sel_root_done(bcast_t *b, size_t bytes, int mode, int bits, int rc, uint64_t ns)
{
    if (rc != NUMACOLL_OK) {
        sel_drop(b);
        return;
    }
    if (!b->sel_classes) return; /* a measured call had the selector: cannot happen */
    int cls = (int)(sel_of(b, bytes) - b->sel_classes);
    if (bits & OPF_RUN_FIRST)
        b->root_run.ns = 0, b->root_run.bytes = 0, b->root_run.calls = 0,
        b->root_run.size_class = cls, b->root_run.mixed = 0;
    b->root_run.mixed |= cls != b->root_run.size_class; /* never with one run open at a time */
    b->root_run.ns += (double)ns;
    b->root_run.bytes += (double)bytes;
    b->root_run.calls++;
    if ((bits & OPF_RUN_LAST) && b->root_run.mixed) {
        b->sel_runs_lost++;
        b->open_run_class = -1;
    } else if (bits & OPF_RUN_LAST) {
        b->pending_run = (__typeof__(b->pending_run)){.valid = 1,
                                                      .mode = mode,
                                                      .bytes = bytes,
                                                      .tag = b->hot.op,
                                                      .calls = b->root_run.calls,
                                                      .root_ns = b->root_run.ns,
                                                      .sum_bytes = b->root_run.bytes};
        b->open_run_class = -1;
    }
}

/* Complete the pending run if every receiver has reported it: their words for this root
 * carry the run's tag until our next measured run, which replaces the pending one. A
 * receiver whose count is not the run's (it did not time every measured call) voids the
 * sample (sel_runs_lost). Reads only, never waits. */
void bc_sel_harvest(numacoll_team_t *t, bcast_t *b)
{
    double sum = b->pending_run.root_ns;
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank) continue;
        /* relaxed: the word is self-contained (time, count and tag in one store) */
        uint64_t w = atomic_load_explicit(report_word(b, r, t->rank), memory_order_relaxed);
        if ((w & REPORT_TAG_MASK) != report_tag(b->pending_run.tag)) return; /* not yet */
        if (((w >> REPORT_TAG_BITS) & REPORT_CALLS_MASK) != b->pending_run.calls) {
            b->pending_run.valid = 0;
            b->sel_runs_lost++;
            return;
        }
        sum += (double)(w >> REPORT_NS_SHIFT);
    }
    b->pending_run.valid = 0;
    sel_record(t, b, b->pending_run.bytes, b->pending_run.mode,
               sum / t->size / b->pending_run.sum_bytes);
}

int nc_bcast_debug_sel(numacoll_team_t *t, size_t bytes, uint32_t samples[NC_BCAST_SEL_MODES],
                       double est[NC_BCAST_SEL_MODES], int *best, int *adapt)
{
    bcast_t *b = t->bcast;
    if (!b || bytes == 0)
        return nc_error(NUMACOLL_ERR_STATE, "bcast: no broadcast state yet (or zero bytes)");
    struct sel *S = sel_of(b, bytes);
    if (!S) { /* no broadcast had modes to choose from: nothing sampled */
        memset(samples, 0, NC_BCAST_SEL_MODES * sizeof *samples);
        memset(est, 0, NC_BCAST_SEL_MODES * sizeof *est);
        *best = -1;
        *adapt = b->adapt;
        return NUMACOLL_OK;
    }
    for (int m = 0; m < NC_BCAST_SEL_MODES; m++) {
        samples[m] = S->nsamples[m];
        est[m] = S->nsamples[m] ? sel_est(S, m) : 0;
    }
    *best = S->best_mode;
    *adapt = b->adapt;
    return NUMACOLL_OK;
}

/* NUMACOLL_VERBOSE >= 2, at the team's end: what the copy-mode selector of this member (as
 * a root) chose per size class, from which samples (modes: flags_of_mode) */
void bc_sel_log(numacoll_team_t *t, bcast_t *b)
{
    for (int l = 0; b->sel_classes && l < SEL_CLASSES; l++) {
        const struct sel *S = &b->sel_classes[l];
        char line[512];
        int o = 0;
        for (int m = 0; m < NC_BCAST_SEL_MODES && o < (int)sizeof line - 40; m++)
            if (S->nsamples[m])
                o += snprintf(line + o, sizeof line - (size_t)o, " %d: %u/%.4f", m, S->nsamples[m],
                              sel_est(S, m));
        if (!o) continue;
        nc_log(2, t->rank, t->size,
               "bcast: copy-mode selector, %zu-byte class: %llu calls, mode %d; samples/estimate "
               "(ns/B) per mode (bit 0 streamed root, 1 streamed receivers, 2 one fragment, 3 "
               "no rotation):%s; runs lost (all classes) %llu",
               (size_t)1 << l, (unsigned long long)S->calls, S->best_mode, line,
               (unsigned long long)b->sel_runs_lost);
    }
}

uint64_t nc_bcast_debug_sel_lost(numacoll_team_t *t)
{
    return t->bcast ? t->bcast->sel_runs_lost : 0;
}
