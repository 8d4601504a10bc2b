/*
 * adaptive-logp: paper 2's AdaptiveBarrierLogP (Paznikov, Zharikov). Estimate the time of
 * the central counter, the combining tree and the dissemination barrier in the LogP model
 * with the parameters of the NUMACOLL_BARRIER_LOGP_* rows, and run the argmin.
 *
 * Notation: f_r = max(o_r, g), f_s = max(o_s, g), t_r = t_s = max(g, o_s + L + o_r).
 *   central counter  2(o_s + L + o_r) + (P-2) f_r + (P-2) f_s
 *   combining tree   (o_s + L + f_r (n-2) + o_r) log_n P + o_s + (log_2 P - 1) t_s + L + o_r
 *   dissemination    max(t_r, t_s) log_2 P
 * log means the number of tree levels / rounds, ceil(log).
 *
 * The choice is a pure function of P and the configuration, so every member makes the same
 * one without communicating. The chosen algorithm runs in its own registry slot (so calls
 * of "adaptive-logp" and of the chosen algorithm by name can be mixed freely, as long as
 * every member makes the same sequence of calls, which any barrier requires).
 *
 * Mapping to this library: central counter = sense-reversing-counter (every process
 * reports to one coordinator, which answers), combining tree = combining-tree (fan-in n =
 * NUMACOLL_BARRIER_TREE_K), dissemination = dissemination.
 */
#include "common.h"

#include <string.h>

#include <stdlib.h>

static int ceil_log(int P, int n)
{
    int d = 0;
    long long x = 1;
    while (x < P) {
        x *= n;
        d++;
    }
    return d;
}

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

double nc_logp_central(const nc_logp_t *m, int P)
{
    if (P <= 1) return 0.0;
    double f_r = dmax(m->o_r, m->g), f_s = dmax(m->o_s, m->g);
    return 2.0 * (m->o_s + m->L + m->o_r) + (P - 2) * f_r + (P - 2) * f_s;
}

double nc_logp_combining(const nc_logp_t *m, int P, int n)
{
    if (P <= 1) return 0.0;
    if (n < 2) n = 2;
    double f_r = dmax(m->o_r, m->g);
    double t_s = dmax(m->g, m->o_s + m->L + m->o_r);
    return (m->o_s + m->L + f_r * (n - 2) + m->o_r) * ceil_log(P, n) + m->o_s +
           (ceil_log(P, 2) - 1) * t_s + m->L + m->o_r;
}

double nc_logp_dissemination(const nc_logp_t *m, int P)
{
    if (P <= 1) return 0.0;
    double t = dmax(m->g, m->o_s + m->L + m->o_r); /* t_r = t_s */
    return t * ceil_log(P, 2);
}

int nc_logp_choose(const nc_logp_t *m, int P, int n, double *est)
{
    double e[NC_LOGP_NALG] = {nc_logp_central(m, P), nc_logp_combining(m, P, n),
                              nc_logp_dissemination(m, P)};
    int best = 0;
    for (int i = 0; i < NC_LOGP_NALG; i++) {
        if (est) est[i] = e[i];
        if (e[i] < e[best]) best = i;
    }
    return best;
}

const char *nc_logp_algorithm(int which)
{
    switch (which) {
    case NC_LOGP_CENTRAL:
        return "sense-reversing-counter";
    case NC_LOGP_COMBINING:
        return "combining-tree";
    default:
        return "dissemination";
    }
}

nc_logp_t nc_logp_from_config(void)
{
    nc_logp_t m = {.L = nc_cfg_double(NC_CFG_BARRIER_LOGP_L),
                   .o_s = nc_cfg_double(NC_CFG_BARRIER_LOGP_OS),
                   .o_r = nc_cfg_double(NC_CFG_BARRIER_LOGP_OR),
                   .g = nc_cfg_double(NC_CFG_BARRIER_LOGP_G)};
    return m;
}

static size_t no_bytes(const numacoll_team_t *t)
{
    (void)t;
    return 0;
}

static int init(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    nc_logp_t m = nc_logp_from_config();
    double est[NC_LOGP_NALG];
    int n = (int)nc_cfg_int(NC_CFG_BARRIER_TREE_K);
    int which = nc_logp_choose(&m, t->size, n, est);
    int idx = nc_barrier_find(nc_logp_algorithm(which));
    if (idx < 0)
        return nc_error(NUMACOLL_ERR_STATE, "adaptive-logp: '%s' is not registered",
                        nc_logp_algorithm(which));
    s->priv = (void *)(intptr_t)(idx + 1);
    if (t->rank == 0 && t->size > 1)
        nc_log(
            strcmp(nc_cfg_str(NC_CFG_BARRIER), "adaptive-logp") == 0 ? 1 : 2, t->rank, t->size,
            "adaptive-logp (L=%g o_s=%g o_r=%g g=%g ns, P=%d, n=%d): central %.0f, "
            "combining %.0f, dissemination %.0f ns -> %s",
            m.L, m.o_s, m.o_r, m.g, t->size, n, est[0], est[1], est[2], nc_logp_algorithm(which));
    return NUMACOLL_OK;
}

static int run(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    int idx = (int)(intptr_t)s->priv - 1;
    s->calls++;
    return nc_barrier_registry[idx]->run(t, &t->barrier_slots[idx]);
}

const nc_barrier_algo_t nc_barrier_adaptive_logp = {
    .name = "adaptive-logp",
    .description = "paper 2: LogP estimates of central counter, combining tree and "
                   "dissemination (NUMACOLL_BARRIER_LOGP_*), runs the argmin",
    .global_bytes = no_bytes,
    .rank_bytes = no_bytes,
    .init = init,
    .run = run,
};
