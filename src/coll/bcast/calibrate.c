/*
 * The model's constants for a team (NUMACOLL_BCAST_MODEL_T / _TW): configured, or measured
 * at the team's first broadcast, t from a memcpy of this process and t_W from the team's
 * barriers; every member adopts rank 0's.
 */
#include "bcast_internal.h"

#include <stdlib.h>
#include <string.h>

/* t in seconds per byte: the best of 3 memcpy runs of 1 MiB between two buffers of this
 * process; measured once per process (later teams reuse it). 0 if it cannot be measured. */
static double measure_t(void)
{
    static _Atomic uint64_t cached_bits; /* the double's bits, 0 = not measured yet */
    uint64_t bits = atomic_load_explicit(&cached_bits, memory_order_relaxed);
    double t;
    if (bits) {
        memcpy(&t, &bits, sizeof t);
        return t;
    }
    size_t n = 1u << 20;
    char *a = malloc(n), *c = malloc(n);
    if (!a || !c) {
        free(a), free(c);
        return 0;
    }
    memset(a, 1, n), memset(c, 2, n); /* first touch outside the timing */
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        a[i] = (char)i;
        uint64_t t0 = nc_now_ns();
        memcpy(c, a, n);
        __asm__ __volatile__("" ::"r"(c) : "memory"); /* the copy is not dead */
        uint64_t dt = nc_now_ns() - t0;
        if (dt < best) best = dt;
    }
    free(a), free(c);
    t = best > 0 && best < UINT64_MAX ? (double)best * 1e-9 / (double)n : 0;
    if (t > 0) {
        memcpy(&bits, &t, sizeof bits);
        atomic_store_explicit(&cached_bits, bits, memory_order_relaxed);
    }
    return t;
}

/* Median of @p n (a handful of) samples, the mean of the middle two for even n, 0 for none;
 * sorts @p v ascending in place (insertion sort). */
double bc_median_small(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        double x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    if (n == 0) return 0;
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* t_W in seconds: the median of 5 batches of 4 team barriers (after 4 unmeasured ones),
 * per barrier, divided by the ceil(log2 P) notification rounds of a barrier. Not a mean:
 * it would carry the members' arrival skew after the set-up's allgather and any
 * preemption, and a t_W too large makes f too large and s too small (f ~ sqrt(b t_W / t));
 * the median ignores up to 2 disturbed batches. @p spread gets the fastest and slowest
 * batch (log). Collective. */
static int measure_tw(numacoll_team_t *t, double *tw, double spread[2])
{
    enum { BATCHES = 5, PER_BATCH = 4 };
    int rc = NUMACOLL_OK;
    double batch[BATCHES] = {0};
    for (int i = 0; i < 4 && rc == NUMACOLL_OK; i++)
        rc = nc_team_barrier_default(t);
    for (int k = 0; k < BATCHES && rc == NUMACOLL_OK; k++) {
        uint64_t t0 = nc_now_ns();
        for (int i = 0; i < PER_BATCH && rc == NUMACOLL_OK; i++)
            rc = nc_team_barrier_default(t);
        batch[k] = (double)(nc_now_ns() - t0) * 1e-9 / PER_BATCH;
    }
    int rounds = 0;
    while ((1 << rounds) < t->size)
        rounds++;
    if (rounds == 0) rounds = 1;
    *tw = bc_median_small(batch, BATCHES) / rounds; /* batch now ascending */
    spread[0] = batch[0] / rounds, spread[1] = batch[BATCHES - 1] / rounds;
    return rc;
}

const char *const bc_model_src[3] = {"configured", "measured", "fallback"};

/* The model for this team: configured constants, or measured ones; every member adopts
 * rank 0's (the layout derived from them must be identical everywhere). Collective. */
int bc_model_init(numacoll_team_t *t, nc_bcast_model_t *md, int *t_meas, int *tw_meas)
{
    double t_cfg = nc_cfg_double(NC_CFG_BCAST_MODEL_T) * 1e-9;
    double tw_cfg = nc_cfg_double(NC_CFG_BCAST_MODEL_TW) * 1e-9;
    nc_bcast_model_t fb = nc_bcast_model_default();
    /* the branches below (barriers, an allgather) must be the same on every member: first
     * check that every member has the same settings, so that a mismatch is an error on all
     * of them instead of a hang */
    int P = t->size;
    double *all = malloc((size_t)P * 3 * sizeof(double));
    if (!all) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory measuring the bcast model");
    double mine[3] = {t_cfg, tw_cfg, t->oversubscribed};
    int orc = nc_oob_allgather(t->allgather, mine, all, sizeof mine, t->oob_ctx,
                               "setting up the broadcast");
    if (orc != NUMACOLL_OK) {
        free(all);
        return orc;
    }
    for (int r = 1; r < P; r++)
        if (memcmp(&all[3 * r], &all[0], sizeof mine) != 0) {
            int rc = nc_error(NUMACOLL_ERR_CONFIG,
                              "broadcast model settings differ between ranks 0 and %d "
                              "(NUMACOLL_BCAST_MODEL_T %g/%g ns, NUMACOLL_BCAST_MODEL_TW %g/%g "
                              "ns, oversubscribed %g/%g); every member must see the same",
                              r, all[0] * 1e9, all[3 * r] * 1e9, all[1] * 1e9, all[3 * r + 1] * 1e9,
                              all[2], all[3 * r + 2]);
            free(all);
            return rc;
        }
    if (t->oversubscribed) {
        free(all);
        /* the paper's model assumes a core per process. Oversubscribed, a barrier measures
         * the scheduler, not a notification, and its t_W would make the fragments far too
         * large. So the fallback constants, unless configured (plan.c). */
        nc_bcast_model_plan(t, md, t_meas, tw_meas);
        return NUMACOLL_OK;
    }
    double v[2] = {t_cfg, tw_cfg}, spread[2] = {0, 0}, tt = t_cfg, tw = tw_cfg;
    if (t_cfg <= 0 && t->rank == 0) v[0] = measure_t();
    /* A notification is a cache-line transfer plus a loop: tens of ns to a few us on any
     * machine. A median above TW_PLAUSIBLE means all batches were disturbed (a loaded
     * machine), and would make f absurdly large. Every member sees rank 0's value after the
     * allgather, so all take the same branch: measure again, at most TW_TRIES times in
     * all, then fall back (below). */
    enum { TW_TRIES = 3 };
    const double TW_PLAUSIBLE = 100e-6;
    for (int k = 0; k < TW_TRIES; k++) {
        if (tw_cfg <= 0) {
            int rc = measure_tw(t, &v[1], spread);
            if (rc) {
                free(all);
                return rc;
            }
        }
        orc = nc_oob_allgather(t->allgather, v, all, sizeof v, t->oob_ctx,
                               "setting up the broadcast");
        if (orc != NUMACOLL_OK) {
            free(all);
            return orc;
        }
        tt = all[0], tw = all[1];
        if (tw_cfg <= 0 && t->rank == 0)
            nc_log(1, t->rank, t->size,
                   "bcast: t_W batches (per notification) fastest %.1f, median "
                   "%.1f (used), slowest %.1f ns%s",
                   spread[0] * 1e9, v[1] * 1e9, spread[1] * 1e9,
                   tw > TW_PLAUSIBLE ? " - disturbed, not used" : "");
        if (tw_cfg > 0 || tw <= TW_PLAUSIBLE) break;
        tw = -1; /* the fallback, unless the next try is plausible */
    }
    free(all);
    *t_meas = t_cfg <= 0, *tw_meas = tw_cfg <= 0;
    if (!(tt > 0 && tt < 1e-6)) { /* not measurable (or absurd): the fallback */
        nc_log(1, t->rank, t->size, "bcast: t could not be measured; using %.3f ns/byte",
               fb.t * 1e9);
        tt = fb.t, *t_meas = 2;
    }
    if (!(tw > 0 && tw < 1)) {
        nc_log(1, t->rank, t->size, "bcast: t_W could not be measured; using %.1f ns",
               fb.t_w * 1e9);
        tw = fb.t_w, *tw_meas = 2;
    }
    *md = nc_bcast_model_from(tt, tw);
    return NUMACOLL_OK;
}
