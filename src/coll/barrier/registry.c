/* The barrier algorithm registry: one row per algorithm (each in its own file). */
#include "barrier.h"

#include "../../topo/topo.h"

#include <string.h>

extern const nc_barrier_algo_t nc_barrier_sense_reversing;
extern const nc_barrier_algo_t nc_barrier_sense_reversing_counter;
extern const nc_barrier_algo_t nc_barrier_sense_reversing_gr;
extern const nc_barrier_algo_t nc_barrier_combining_tree;
extern const nc_barrier_algo_t nc_barrier_mcs;
extern const nc_barrier_algo_t nc_barrier_tournament;
extern const nc_barrier_algo_t nc_barrier_dissemination;
extern const nc_barrier_algo_t nc_barrier_topo;
extern const nc_barrier_algo_t nc_barrier_topo_numa;
extern const nc_barrier_algo_t nc_barrier_topo_socket;
extern const nc_barrier_algo_t nc_barrier_topo_numa_socket;
extern const nc_barrier_algo_t nc_barrier_adaptive_logp;

const nc_barrier_algo_t *const nc_barrier_registry[] = {
    &nc_barrier_sense_reversing,
    &nc_barrier_sense_reversing_counter,
    &nc_barrier_sense_reversing_gr,
    &nc_barrier_combining_tree,
    &nc_barrier_mcs,
    &nc_barrier_tournament,
    &nc_barrier_dissemination,
    &nc_barrier_topo,
    &nc_barrier_topo_numa,
    &nc_barrier_topo_socket,
    &nc_barrier_topo_numa_socket,
    &nc_barrier_adaptive_logp,
};
const int nc_barrier_registry_count =
    (int)(sizeof nc_barrier_registry / sizeof nc_barrier_registry[0]);

int nc_barrier_find(const char *name)
{
    /* numacoll_barrier_with() looks the name up on every call, and a benchmark alternates
     * a few names: remember the last hit per thread, so the common case costs one strcmp
     * instead of a walk over the registry (tens of ns next to a ~60 ns barrier) */
    static _Thread_local int last = -1;
    if (last >= 0 && strcmp(nc_barrier_registry[last]->name, name) == 0) return last;
    for (int i = 0; i < nc_barrier_registry_count; i++)
        if (strcmp(nc_barrier_registry[i]->name, name) == 0) return last = i;
    return -1;
}

/*
 * The "auto" choice (NUMACOLL_BARRIER unset or "auto"); the same on every member because
 * it depends only on P, the configuration and the exchanged topology.
 *  - P = 1: sense-reversing-counter (returns at once).
 *  - P = 2: dissemination: each process stores its own line and waits on the other's, the
 *    two one-way transfers overlap (about half a cache-line round trip).
 *  - oversubscribed (more processes than CPUs): combining-tree. Every wait may cost a
 *    context switch there, so what matters is how many times processes must be scheduled:
 *    in the combining tree (like the central counter) each process arrives once and waits
 *    once on one word, and the LAST arriver releases at once, whoever it is; flat trees
 *    wait for rank 0 to be scheduled again after the last arrival, and log P-round schemes
 *    need every process scheduled once per round. Interleaved runs of numacoll-bench on 2
 *    CPUs (busy machine, 9 reps, median us): P = 4: combining-tree 32.5, sense-reversing
 *    44.2, sense-reversing-counter 54.0, -gr 54.9, dissemination 50.4; P = 8: 63.9, 59.7,
 *    86.2, 89.4, 103.9. The k-ary tree also bounds the contention per counter to k.
 *  - a hierarchy with more than one group level (NUMACOLL_BARRIER_TOPO_LEVELS): topo.
 *  - otherwise paper 2's LogP argmin (as adaptive-logp, parameters NUMACOLL_BARRIER_LOGP_*).
 */
int nc_barrier_auto_explain(const numacoll_team_t *t, nc_barrier_auto_t *out)
{
    const char *pick, *why;
    char buf[160];
    memset(out, 0, sizeof *out);
    out->logp = nc_logp_from_config();
    out->logp_n = (int)nc_cfg_int(NC_CFG_BARRIER_TREE_K);
    out->logp_pick = nc_logp_choose(&out->logp, t->size, out->logp_n, out->est);
    if (t->size <= 1) {
        pick = "sense-reversing-counter";
        why = "one process";
        out->rule = NC_BAUTO_ONE;
    } else if (t->size == 2) {
        pick = "dissemination";
        why = "two processes: one parallel exchange of two lines";
        out->rule = NC_BAUTO_TWO;
    } else if (t->oversubscribed) {
        pick = "combining-tree";
        why = "oversubscribed: the last arriver releases, fewest reschedulings";
        out->rule = NC_BAUTO_OVERSUB;
    } else {
        const char *levels = nc_cfg_str(NC_CFG_BARRIER_TOPO_LEVELS);
        const nc_hier_t *h = nc_topo_team_hier((numacoll_team_t *)(uintptr_t)t, levels);
        out->hier_levels = h ? h->nlevels : 0;
        if (h && h->nlevels > 1) {
            pick = "topo";
            snprintf(buf, sizeof buf, "hierarchy of %d group levels over '%s'", h->nlevels, levels);
            why = buf;
            out->rule = NC_BAUTO_TOPO;
        } else {
            const double *est = out->est;
            pick = nc_logp_algorithm(out->logp_pick);
            snprintf(buf, sizeof buf,
                     "flat placement, LogP model: central %.0f, combining %.0f, "
                     "dissemination %.0f ns",
                     est[NC_LOGP_CENTRAL], est[NC_LOGP_COMBINING], est[NC_LOGP_DISSEMINATION]);
            why = buf;
            out->rule = NC_BAUTO_LOGP;
        }
    }
    out->pick = pick;
    snprintf(out->why, sizeof out->why, "%s", why);
    int i = nc_barrier_find(pick);
    return i >= 0 ? i : 0;
}

int nc_barrier_auto(const numacoll_team_t *t)
{
    nc_barrier_auto_t a;
    int i = nc_barrier_auto_explain(t, &a);
    if (t->rank == 0) nc_log(1, t->rank, t->size, "auto barrier: %s (%s)", a.pick, a.why);
    return i;
}

/* "auto|name1|name2|..." for the NUMACOLL_BARRIER row of the config table */
const char *nc_barrier_allowed_names(void)
{
    static char buf[1024];
    if (!buf[0]) {
        size_t o = (size_t)snprintf(buf, sizeof buf, "auto");
        for (int i = 0; i < nc_barrier_registry_count && o < sizeof buf; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "|%s", nc_barrier_registry[i]->name);
    }
    return buf;
}

const numacoll_algorithm_info_t *numacoll_barrier_algorithms(int *count)
{
    static numacoll_algorithm_info_t info[64];
    for (int i = 0; i < nc_barrier_registry_count && i < 64; i++) {
        info[i].name = nc_barrier_registry[i]->name;
        info[i].description = nc_barrier_registry[i]->description;
    }
    if (count) *count = nc_barrier_registry_count;
    return info;
}
