/*
 * Team glue of the topology layer: probe (real machine, or NUMACOLL_TOPO_SYNTHETIC with
 * a simulated placement), exchange of the localities through the team's OOB allgather,
 * and the hierarchies cached per level string.
 */
#include "topo.h"

#include <pthread.h>

#include <stdlib.h>
#include <string.h>

typedef struct hier_cache {
    char *levels;
    nc_hier_t *h; /* NULL = flat */
    struct hier_cache *next;
} hier_cache_t;

struct nc_topo_team {
    nc_topo_levels_t lv;
    nc_topo_loc_t *loc; /* [size] */
    unsigned usable;
    int simulated;
    int wrapped;
    char source[160]; /* "real machine" or "synthetic '...' map-by ..." */
    hier_cache_t *cache;
};

/* What every member contributes to the exchange. */
typedef struct topo_msg {
    int32_t status;
    int32_t wrapped;
    nc_topo_loc_t loc;
    nc_topo_levels_t lv;
} topo_msg_t;

/*
 * Loading a topology with hwloc costs milliseconds (about 3 ms of CPU here), which would
 * dominate the creation of every team (MPI_Comm_split, MPI_Comm_dup...). The machine does
 * not change under a running process, so each distinct topology (the real one, or one per
 * NUMACOLL_TOPO_SYNTHETIC string) is loaded once per process and kept until exit. Only
 * read-only hwloc calls are made on a cached topology (safe from several threads).
 */
typedef struct machine_cache {
    char *key; /* "" = the real machine */
    nc_topo_machine_t *m;
    struct machine_cache *next;
} machine_cache_t;

static machine_cache_t *g_machines;
static pthread_mutex_t g_machines_lock = PTHREAD_MUTEX_INITIALIZER;

static int machine_cached(const char *synthetic, const nc_topo_machine_t **out)
{
    const char *key = synthetic ? synthetic : "";
    int rc = NUMACOLL_OK;
    pthread_mutex_lock(&g_machines_lock);
    machine_cache_t *c = g_machines;
    while (c && strcmp(c->key, key) != 0)
        c = c->next;
    if (!c) {
        nc_topo_machine_t *m = NULL;
        rc = nc_topo_machine_load(synthetic, &m);
        if (rc == NUMACOLL_OK) {
            c = calloc(1, sizeof *c);
            if (c) c->key = strdup(key);
            if (!c || !c->key) {
                free(c);
                c = NULL;
                nc_topo_machine_free(m);
                rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory caching the topology");
            } else {
                c->m = m;
                c->next = g_machines;
                g_machines = c;
            }
        }
    }
    *out = c ? c->m : NULL;
    pthread_mutex_unlock(&g_machines_lock);
    return rc;
}

int nc_topo_team_init(numacoll_team_t *t)
{
    t->topo = NULL;
    t->numa_node = -1;
    const char *syn = nc_cfg_str(NC_CFG_TOPO_SYNTHETIC);
    int simulated = syn && syn[0];
    const char *map_by = nc_cfg_str(NC_CFG_TOPO_MAP_BY);

    topo_msg_t mine;
    memset(&mine, 0, sizeof mine);
    for (int l = 0; l < NC_NLEVELS; l++) {
        mine.loc.unit[l] = -1;
        mine.lv.base[l] = -1;
    }
    mine.loc.numa_os = -1;
    char bind[128] = "";
    char err[512] = "";
    const nc_topo_machine_t *m = NULL;
    int rc = machine_cached(simulated ? syn : NULL, &m);
    if (rc == NUMACOLL_OK) {
        mine.lv = *nc_topo_machine_levels(m);
        int w = 0;
        if (simulated)
            rc = nc_topo_locality_simulated(m, t->rank, t->size, map_by, &mine.loc, NULL, &w);
        else
            rc = nc_topo_locality_self(m, &mine.loc, bind, sizeof bind);
        mine.wrapped = w;
    }
    if (rc != NUMACOLL_OK && !simulated) {
        /* the real machine could not be probed: no level, flat, but no failure */
        nc_log(1, t->rank, t->size, "topology probe failed (%s): flat", numacoll_last_error());
        for (int l = 0; l < NC_NLEVELS; l++)
            mine.lv.base[l] = -1;
        rc = NUMACOLL_OK;
    }
    if (rc != NUMACOLL_OK) snprintf(err, sizeof err, "%s", numacoll_last_error());
    mine.status = rc;

    topo_msg_t *all = calloc((size_t)t->size, sizeof *all);
    struct nc_topo_team *tt = calloc(1, sizeof *tt);
    nc_topo_loc_t *loc = calloc((size_t)t->size, sizeof *loc);
    if (!all || !tt || !loc) {
        free(all);
        free(tt);
        free(loc);
        return nc_error(NUMACOLL_ERR_NOMEM,
                        "out of memory exchanging the topology of %d "
                        "processes",
                        t->size);
    }
    int orc = nc_oob_allgather(t->allgather, &mine, all, sizeof mine, t->oob_ctx,
                               "exchanging the topology");
    if (orc != NUMACOLL_OK) {
        free(all);
        free(tt);
        free(loc);
        return orc;
    }
    for (int r = 0; r < t->size; r++)
        if (all[r].status != NUMACOLL_OK) {
            rc = all[r].status;
            free(all);
            free(tt);
            free(loc);
            if (r == t->rank) return nc_error(rc, "topology: %s", err);
            return nc_error(rc, "topology: rank %d failed to probe the topology", r);
        }
    /* levels: rank 0's view (all members run on the same machine / synthetic string);
     * a level counts only if every member sees it */
    tt->lv = all[0].lv;
    for (int r = 1; r < t->size; r++)
        for (int l = 0; l < NC_NLEVELS; l++)
            if (all[r].lv.base[l] != tt->lv.base[l]) tt->lv.base[l] = -1;
    for (int r = 0; r < t->size; r++) {
        loc[r] = all[r].loc;
        tt->wrapped |= all[r].wrapped;
    }
    free(all);
    tt->loc = loc;
    tt->simulated = simulated;
    tt->usable = nc_topo_usable(t->size, loc, &tt->lv);
    if (simulated)
        snprintf(tt->source, sizeof tt->source, "synthetic '%s', map-by %s", syn, map_by);
    else
        snprintf(tt->source, sizeof tt->source, "this machine");
    t->topo = tt;
    /* a simulated node must never be used to bind real memory */
    t->numa_node = simulated ? -1 : loc[t->rank].numa_os;

    if (t->rank == 0 && nc_verbose() >= 1) {
        int active = 0;
        for (int l = 0; l < NC_NLEVELS; l++)
            active |= tt->lv.base[l] >= 0;
        if (!active && t->size > 1)
            nc_log(1, t->rank, t->size,
                   "topology: no level (L2, L3, NUMA node, package) is shared by 2 or more "
                   "cores here: no hierarchy, topology-aware algorithms fall back to flat ones");
        if (active && tt->usable == 0)
            nc_log(1, t->rank, t->size,
                   "topology: processes are not bound inside one unit of any level (e.g. "
                   "unbound): no hierarchy, topology-aware algorithms fall back to flat ones");
        if (tt->wrapped)
            nc_log(1, t->rank, t->size,
                   "topology: %d processes do not fit one per core on the synthetic topology "
                   "'%s' (map-by %s): the simulated placement wraps around",
                   t->size, syn, map_by);
    }
    if (!simulated && nc_verbose() >= 2)
        nc_log(2, t->rank, t->size, "topology: bound to PUs %s, NUMA node %d", bind, t->numa_node);
    return NUMACOLL_OK;
}

int nc_topo_team_init_planned(numacoll_team_t *t, const nc_topo_plan_t *p, const char *source)
{
    t->topo = NULL;
    t->numa_node = -1;
    if (!p || p->nprocs != t->size)
        return nc_error(NUMACOLL_ERR_ARG, "a planned topology of %d processes for a team of %d",
                        p ? p->nprocs : 0, t->size);
    struct nc_topo_team *tt = calloc(1, sizeof *tt);
    nc_topo_loc_t *loc = calloc((size_t)t->size, sizeof *loc);
    if (!tt || !loc) {
        free(tt);
        free(loc);
        return nc_error(NUMACOLL_ERR_NOMEM, "out of memory planning a topology of %d processes",
                        t->size);
    }
    memcpy(loc, p->loc, (size_t)t->size * sizeof *loc);
    tt->lv = p->lv;
    tt->loc = loc;
    tt->simulated = 1;
    tt->wrapped = p->wrapped;
    tt->usable = nc_topo_usable(t->size, loc, &tt->lv);
    snprintf(tt->source, sizeof tt->source, "%s", source ? source : "planned");
    t->topo = tt;
    return NUMACOLL_OK;
}

void nc_topo_team_fini(numacoll_team_t *t)
{
    struct nc_topo_team *tt = t->topo;
    if (!tt) return;
    for (hier_cache_t *c = tt->cache, *n; c; c = n) {
        n = c->next;
        nc_hier_free(c->h);
        free(c->levels);
        free(c);
    }
    free(tt->loc);
    free(tt);
    t->topo = NULL;
}

const nc_hier_t *nc_topo_team_hier(numacoll_team_t *t, const char *levels)
{
    struct nc_topo_team *tt = t->topo;
    if (!tt || !levels) return NULL;
    for (hier_cache_t *c = tt->cache; c; c = c->next)
        if (strcmp(c->levels, levels) == 0) return c->h;
    nc_hier_t *h = NULL;
    char why[256];
    if (nc_topo_build(t->size, tt->loc, &tt->lv, levels, &h, why, sizeof why) != NUMACOLL_OK)
        return NULL; /* bad level list: message recorded, flat */
    hier_cache_t *c = calloc(1, sizeof *c);
    if (!c || !(c->levels = strdup(levels))) {
        free(c);
        nc_hier_free(h);
        return NULL;
    }
    c->h = h;
    c->next = tt->cache;
    tt->cache = c;
    if (!h && t->rank == 0)
        nc_log(1, t->rank, t->size, "topology: levels %s: flat (%s)", levels, why);
    return h;
}

int nc_topo_team_numa_count(const numacoll_team_t *t)
{
    const struct nc_topo_team *tt = t->topo;
    if (!tt) return 1;
    int count = 0;
    for (int r = 0; r < t->size; r++) {
        int n = tt->loc[r].numa_os, seen = 0;
        if (n < 0) continue;
        for (int q = 0; q < r && !seen; q++)
            seen = tt->loc[q].numa_os == n;
        if (!seen) count++;
    }
    return count ? count : 1;
}

int nc_topo_team_numa_of(const numacoll_team_t *t, int r)
{
    const struct nc_topo_team *tt = t->topo;
    if (!tt || r < 0 || r >= t->size) return -1;
    return tt->loc[r].numa_os;
}

int nc_topo_team_simulated(const numacoll_team_t *t)
{
    const struct nc_topo_team *tt = t->topo;
    return tt ? tt->simulated : 0;
}

int nc_topo_team_describe(const numacoll_team_t *t, char *out, size_t n)
{
    const struct nc_topo_team *tt = t->topo;
    if (!tt) {
        snprintf(out, n, "topology: not probed (flat)");
        return NUMACOLL_OK;
    }
    char lv[512];
    nc_topo_levels_describe(&tt->lv, tt->usable, lv, sizeof lv);
    size_t o = (size_t)snprintf(out, n, "topology (%s): %s", tt->source, lv);
    const char *levels = nc_cfg_str(NC_CFG_BARRIER_TOPO_LEVELS);
    nc_hier_t *h = NULL;
    char why[256] = "";
    if (o < n &&
        nc_topo_build(t->size, tt->loc, &tt->lv, levels, &h, why, sizeof why) == NUMACOLL_OK) {
        if (!h) {
            o += (size_t)snprintf(out + o, n - o, "; groups by %s: flat (%s)", levels, why);
        } else {
            o += (size_t)snprintf(out + o, n - o, "; groups by %s:", levels);
            for (int l = 0; l < h->nlevels && o < n; l++) {
                const nc_hier_level_t *hl = &h->levels[l];
                int mx = 0;
                for (int g = 0; g < hl->ngroups; g++)
                    if (hl->groups[g].size > mx) mx = hl->groups[g].size;
                o += (size_t)snprintf(out + o, n - o, "%s %s %d group%s of <= %d", l ? "," : "",
                                      hl->name, hl->ngroups, hl->ngroups == 1 ? "" : "s", mx);
            }
        }
    }
    nc_hier_free(h);
    return NUMACOLL_OK;
}
