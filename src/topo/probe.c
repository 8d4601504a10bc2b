/*
 * hwloc probe (paper 1, section 2.1, steps 1-2): the units of each candidate level
 * (L2, L3, NUMA node, package), which of them are active, and the locality of a binding
 * (real, given, or simulated by a mapping as in paper 3, section 3).
 */
#include "topo.h"

#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

const char *const nc_level_names[NC_NLEVELS] = {"l2", "l3", "numa", "socket"};

struct nc_topo_machine {
    hwloc_topology_t topo;
    int synthetic;
    hwloc_obj_type_t core_type; /* HWLOC_OBJ_CORE, or PU when the machine has no cores */
    int nunits[NC_NLEVELS];
    hwloc_bitmap_t *units[NC_NLEVELS]; /* cpusets, ordered by logical index */
    int *unit_os[NC_NLEVELS];          /* OS index (NUMA nodes), else logical index */
    nc_topo_levels_t lv;
};

void nc_topo_machine_free(nc_topo_machine_t *m)
{
    if (!m) return;
    for (int l = 0; l < NC_NLEVELS; l++) {
        for (int u = 0; u < m->nunits[l]; u++)
            hwloc_bitmap_free(m->units[l][u]);
        free(m->units[l]);
        free(m->unit_os[l]);
    }
    if (m->topo) hwloc_topology_destroy(m->topo);
    free(m);
}

static int ncores_in(const nc_topo_machine_t *m, hwloc_const_bitmap_t set)
{
    return hwloc_get_nbobjs_inside_cpuset_by_type(m->topo, set, m->core_type);
}

/* Collect the units of one level: objects of @p type (NUMA nodes: their local cpuset),
 * skipping empty cpusets and duplicates; for NUMA nodes only the finest ones are kept
 * (a node whose cpuset strictly contains another node's is dropped). */
static int collect(nc_topo_machine_t *m, int l, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(m->topo, type);
    if (n <= 0) return NUMACOLL_OK;
    m->units[l] = calloc((size_t)n, sizeof(hwloc_bitmap_t));
    m->unit_os[l] = calloc((size_t)n, sizeof(int));
    if (!m->units[l] || !m->unit_os[l]) return NUMACOLL_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(m->topo, type, (unsigned)i);
        if (!o || !o->cpuset || hwloc_bitmap_iszero(o->cpuset)) continue;
        int dup = 0;
        for (int u = 0; u < m->nunits[l] && !dup; u++)
            dup = hwloc_bitmap_isequal(m->units[l][u], o->cpuset);
        if (dup) continue;
        if (type == HWLOC_OBJ_NUMANODE) {
            int coarser = 0;
            for (int j = 0; j < n && !coarser; j++) {
                hwloc_obj_t p = hwloc_get_obj_by_type(m->topo, type, (unsigned)j);
                coarser = p && p->cpuset && !hwloc_bitmap_iszero(p->cpuset) &&
                          !hwloc_bitmap_isequal(p->cpuset, o->cpuset) &&
                          hwloc_bitmap_isincluded(p->cpuset, o->cpuset);
            }
            if (coarser) continue;
        }
        m->units[l][m->nunits[l]] = hwloc_bitmap_dup(o->cpuset);
        if (!m->units[l][m->nunits[l]]) return NUMACOLL_ERR_NOMEM;
        m->unit_os[l][m->nunits[l]] = type == HWLOC_OBJ_NUMANODE ? (int)o->os_index : i;
        m->nunits[l]++;
    }
    return NUMACOLL_OK;
}

static int same_units(const nc_topo_machine_t *m, int a, int b)
{
    if (m->nunits[a] != m->nunits[b]) return 0;
    for (int u = 0; u < m->nunits[a]; u++) {
        int found = 0;
        for (int v = 0; v < m->nunits[b] && !found; v++)
            found = hwloc_bitmap_isequal(m->units[a][u], m->units[b][v]);
        if (!found) return 0;
    }
    return 1;
}

int nc_topo_machine_load(const char *synthetic, nc_topo_machine_t **out)
{
    if (!out) return nc_error(NUMACOLL_ERR_ARG, "nc_topo_machine_load: out is NULL");
    *out = NULL;
    nc_topo_machine_t *m = calloc(1, sizeof *m);
    if (!m) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory probing the topology");
    if (hwloc_topology_init(&m->topo) != 0) {
        free(m);
        return nc_error(NUMACOLL_ERR_SYS, "hwloc_topology_init failed");
    }
    hwloc_topology_set_io_types_filter(m->topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_icache_types_filter(m->topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    if (synthetic && synthetic[0]) {
        m->synthetic = 1;
        if (hwloc_topology_set_synthetic(m->topo, synthetic) != 0) {
            nc_topo_machine_free(m);
            return nc_error(NUMACOLL_ERR_CONFIG,
                            "'%s' is not a valid hwloc synthetic topology; allowed: a list of "
                            "type:count from the top, e.g. \"pack:2 numa:2 l3:1 core:4 pu:1\"",
                            synthetic);
        }
    }
    if (hwloc_topology_load(m->topo) != 0) {
        nc_topo_machine_free(m);
        return nc_error(NUMACOLL_ERR_SYS, "hwloc_topology_load failed%s%s%s",
                        synthetic && synthetic[0] ? " for synthetic topology '" : "",
                        synthetic && synthetic[0] ? synthetic : "",
                        synthetic && synthetic[0] ? "'" : "");
    }
    m->core_type =
        hwloc_get_nbobjs_by_type(m->topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    static const hwloc_obj_type_t types[NC_NLEVELS] = {HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE,
                                                       HWLOC_OBJ_NUMANODE, HWLOC_OBJ_PACKAGE};
    int rc = NUMACOLL_OK;
    for (int l = 0; l < NC_NLEVELS && rc == NUMACOLL_OK; l++)
        rc = collect(m, l, types[l]);
    if (rc != NUMACOLL_OK) {
        nc_topo_machine_free(m);
        return nc_error(rc, "out of memory probing the topology");
    }
    nc_topo_levels_t *lv = &m->lv;
    lv->ncores = hwloc_get_nbobjs_by_type(m->topo, m->core_type);
    for (int l = 0; l < NC_NLEVELS; l++) {
        lv->nunits[l] = m->nunits[l];
        lv->maxcores[l] = 0;
        for (int u = 0; u < m->nunits[l]; u++) {
            int c = ncores_in(m, m->units[l][u]);
            if (c > lv->maxcores[l]) lv->maxcores[l] = c;
        }
        lv->base[l] = -1;
        if (lv->maxcores[l] < 2) continue; /* absent, or private to one core */
        for (int k = 0; k < l && lv->base[l] < 0; k++)
            if (lv->base[k] == k && same_units(m, l, k)) lv->base[l] = k; /* another name */
        if (lv->base[l] < 0) lv->base[l] = l;
    }
    *out = m;
    return NUMACOLL_OK;
}

const nc_topo_levels_t *nc_topo_machine_levels(const nc_topo_machine_t *m)
{
    return &m->lv;
}

static void locality_of_set(const nc_topo_machine_t *m, hwloc_const_bitmap_t set,
                            nc_topo_loc_t *loc)
{
    loc->numa_os = -1;
    for (int l = 0; l < NC_NLEVELS; l++) {
        loc->unit[l] = -1;
        if (hwloc_bitmap_iszero(set)) continue;
        for (int u = 0; u < m->nunits[l]; u++)
            if (hwloc_bitmap_isincluded(set, m->units[l][u])) {
                loc->unit[l] = u;
                if (l == NC_LVL_NUMA) loc->numa_os = m->unit_os[l][u];
                break;
            }
    }
}

int nc_topo_locality_of_list(const nc_topo_machine_t *m, const char *pulist, nc_topo_loc_t *loc)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    if (!pulist || hwloc_bitmap_list_sscanf(set, pulist) != 0) {
        hwloc_bitmap_free(set);
        return nc_error(NUMACOLL_ERR_ARG,
                        "'%s' is not a list of PU indices; allowed: e.g. \"0-3,8\"",
                        pulist ? pulist : "(null)");
    }
    hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(m->topo));
    locality_of_set(m, set, loc);
    hwloc_bitmap_free(set);
    return NUMACOLL_OK;
}

int nc_topo_locality_self(const nc_topo_machine_t *m, nc_topo_loc_t *loc, char *bind, size_t n)
{
    if (m->synthetic)
        return nc_error(NUMACOLL_ERR_STATE,
                        "the binding of this process means nothing on a synthetic topology");
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    int rc = NUMACOLL_OK;
    if (hwloc_get_cpubind(m->topo, set, 0) != 0) {
        /* cannot tell where we run: same as unbound */
        hwloc_bitmap_copy(set, hwloc_topology_get_topology_cpuset(m->topo));
    }
    hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(m->topo));
    if (bind && n) hwloc_bitmap_list_snprintf(bind, n, set);
    locality_of_set(m, set, loc);
    hwloc_bitmap_free(set);
    return rc;
}

int nc_topo_locality_simulated(const nc_topo_machine_t *m, int rank, int nprocs, const char *map_by,
                               nc_topo_loc_t *loc, int *core, int *wrapped)
{
    if (rank < 0 || rank >= nprocs)
        return nc_error(NUMACOLL_ERR_ARG, "simulated placement: rank %d; allowed: 0..%d", rank,
                        nprocs - 1);
    int ncores = m->lv.ncores;
    if (ncores < 1) return nc_error(NUMACOLL_ERR_UNSUPPORTED, "the topology has no cores");
    int lvl;
    if (!map_by || strcmp(map_by, "core") == 0)
        lvl = -1;
    else if (strcmp(map_by, "numa") == 0)
        lvl = NC_LVL_NUMA;
    else if (strcmp(map_by, "socket") == 0)
        lvl = NC_LVL_SOCKET;
    else
        return nc_error(NUMACOLL_ERR_ARG, "map-by '%s' is not known; allowed: core, numa, socket",
                        map_by);
    int c = -1, wrap = 0;
    if (lvl < 0 || m->nunits[lvl] == 0) {
        c = rank % ncores;
        wrap = nprocs > ncores;
    } else {
        int nu = m->nunits[lvl];
        int u = rank % nu, k = rank / nu;
        /* cores of unit u in logical order; the k-th rank placed there takes the k-th */
        hwloc_const_bitmap_t us = m->units[lvl][u];
        int len = ncores_in(m, us);
        if (len < 1) return nc_error(NUMACOLL_ERR_UNSUPPORTED, "a %s unit has no cores", map_by);
        /* every unit gets ranks u, u+nu, ...: the largest k of unit u decides wrapping */
        int kmax = (nprocs - 1 - u) / nu;
        wrap = kmax >= len;
        hwloc_obj_t o =
            hwloc_get_obj_inside_cpuset_by_type(m->topo, us, m->core_type, (unsigned)(k % len));
        c = o ? (int)o->logical_index : -1;
    }
    hwloc_obj_t o = c >= 0 ? hwloc_get_obj_by_type(m->topo, m->core_type, (unsigned)c) : NULL;
    if (!o) return nc_error(NUMACOLL_ERR_SYS, "simulated placement: core %d not found", c);
    locality_of_set(m, o->cpuset, loc);
    if (core) *core = c;
    if (wrapped) *wrapped = wrap;
    return NUMACOLL_OK;
}

int nc_topo_parse_levels(const char *levels, unsigned *mask)
{
    *mask = 0;
    if (!levels) return nc_error(NUMACOLL_ERR_ARG, "level list is NULL");
    const char *p = levels;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int found = -1;
        for (int l = 0; l < NC_NLEVELS; l++)
            if (strlen(nc_level_names[l]) == len && strncmp(nc_level_names[l], p, len) == 0)
                found = l;
        if (found < 0)
            return nc_error(NUMACOLL_ERR_ARG,
                            "level '%.*s' in '%s' is not known; allowed: a comma-separated "
                            "subset of l2,l3,numa,socket",
                            (int)len, p, levels);
        *mask |= 1u << found;
        if (!e) break;
        p = e + 1;
    }
    if (*mask == 0)
        return nc_error(NUMACOLL_ERR_ARG,
                        "empty level list; allowed: a comma-separated subset of l2,l3,numa,socket");
    return NUMACOLL_OK;
}

unsigned nc_topo_usable(int nprocs, const nc_topo_loc_t *loc, const nc_topo_levels_t *lv)
{
    unsigned usable = 0;
    for (int l = 0; l < NC_NLEVELS; l++) {
        if (lv->base[l] < 0) continue;
        int ok = 1;
        for (int r = 0; r < nprocs && ok; r++)
            ok = loc[r].unit[l] >= 0;
        if (ok) usable |= 1u << l;
    }
    return usable;
}

int nc_topo_build(int nprocs, const nc_topo_loc_t *loc, const nc_topo_levels_t *lv,
                  const char *levels, nc_hier_t **out, char *why, size_t whyn)
{
    *out = NULL;
    if (why && whyn) why[0] = 0;
    unsigned want;
    int rc = nc_topo_parse_levels(levels, &want);
    if (rc != NUMACOLL_OK) return rc;
    unsigned usable = nc_topo_usable(nprocs, loc, lv);

    /* one column per distinct active base level asked for (under any of its names) */
    int ncol = 0, colbase[NC_NLEVELS];
    const char *colname[NC_NLEVELS];
    for (int b = 0; b < NC_NLEVELS; b++) {
        int name = -1;
        for (int l = 0; l < NC_NLEVELS; l++)
            if ((want & (1u << l)) && lv->base[l] == b && (usable & (1u << l))) name = l;
        if (name < 0) continue;
        colbase[ncol] = b;
        colname[ncol] = nc_level_names[name];
        ncol++;
    }
    /* finest first: on most machines that is the l2 < l3 < numa < socket order, but a NUMA
     * node may also span packages (then it comes after them); stable for ties */
    for (int i = 1; i < ncol; i++)
        for (int j = i; j > 0 && lv->nunits[colbase[j]] > lv->nunits[colbase[j - 1]]; j--) {
            int b = colbase[j];
            const char *nm = colname[j];
            colbase[j] = colbase[j - 1];
            colname[j] = colname[j - 1];
            colbase[j - 1] = b;
            colname[j - 1] = nm;
        }
    if (ncol == 0) {
        if (why && whyn) {
            size_t o = 0;
            o += (size_t)snprintf(why, whyn, "no usable level among %s:", levels);
            for (int l = 0; l < NC_NLEVELS && o < whyn; l++) {
                if (!(want & (1u << l))) continue;
                const char *r = lv->base[l] < 0
                                    ? (lv->nunits[l] ? "not shared by 2 cores" : "absent")
                                    : "some process is not bound inside one unit of it";
                o += (size_t)snprintf(why + o, whyn - o, " %s %s;", nc_level_names[l], r);
            }
        }
        return NUMACOLL_OK;
    }
    int *unit = malloc((size_t)ncol * (size_t)nprocs * sizeof *unit);
    if (!unit) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory building the hierarchy");
    for (int c = 0; c < ncol; c++)
        for (int r = 0; r < nprocs; r++)
            unit[(size_t)c * (size_t)nprocs + (size_t)r] = loc[r].unit[colbase[c]];
    nc_hier_t *h = NULL;
    rc = nc_hier_build(nprocs, ncol, unit, colname, &h);
    free(unit);
    if (rc != NUMACOLL_OK) return rc;
    if (h->nlevels == 0) {
        nc_hier_free(h);
        if (why && whyn) snprintf(why, whyn, "a single process: nothing to group");
        return NUMACOLL_OK;
    }
    *out = h;
    return NUMACOLL_OK;
}

void nc_topo_plan_free(nc_topo_plan_t *p)
{
    if (!p) return;
    free(p->loc);
    free(p->core);
    free(p);
}

int nc_topo_plan_create(const char *synthetic, int nprocs, const char *map_by, nc_topo_plan_t **out)
{
    *out = NULL;
    if (nprocs < 1 || nprocs > 1 << 20)
        return nc_error(NUMACOLL_ERR_ARG, "procs=%d; allowed: 1..%d", nprocs, 1 << 20);
    nc_topo_machine_t *m = NULL;
    int rc = nc_topo_machine_load(synthetic, &m);
    if (rc != NUMACOLL_OK) return rc;
    nc_topo_plan_t *p = calloc(1, sizeof *p);
    if (p) {
        p->loc = calloc((size_t)nprocs, sizeof *p->loc);
        p->core = calloc((size_t)nprocs, sizeof *p->core);
    }
    if (!p || !p->loc || !p->core) {
        nc_topo_plan_free(p);
        nc_topo_machine_free(m);
        return nc_error(NUMACOLL_ERR_NOMEM, "out of memory planning %d processes", nprocs);
    }
    p->nprocs = nprocs;
    p->lv = m->lv;
    for (int r = 0; r < nprocs && rc == NUMACOLL_OK; r++) {
        int w = 0;
        rc = nc_topo_locality_simulated(m, r, nprocs, map_by, &p->loc[r], &p->core[r], &w);
        p->wrapped |= w;
    }
    nc_topo_machine_free(m);
    if (rc != NUMACOLL_OK) {
        nc_topo_plan_free(p);
        return rc;
    }
    *out = p;
    return NUMACOLL_OK;
}

int nc_topo_levels_describe(const nc_topo_levels_t *lv, unsigned usable, char *out, size_t n)
{
    size_t o = 0;
    if (n) out[0] = 0;
    for (int b = 0; b < NC_NLEVELS; b++) {
        if (lv->base[b] != b) continue;
        if (o < n) o += (size_t)snprintf(out + o, n - o, "%s%s", o ? "; " : "", nc_level_names[b]);
        for (int l = b + 1; l < NC_NLEVELS; l++)
            if (lv->base[l] == b && o < n)
                o += (size_t)snprintf(out + o, n - o, "=%s", nc_level_names[l]);
        if (o < n)
            o += (size_t)snprintf(out + o, n - o, " (%d unit(s) of <= %d cores, %s)", lv->nunits[b],
                                  lv->maxcores[b], (usable & (1u << b)) ? "usable" : "dropped");
    }
    if (o == 0 && n) snprintf(out, n, "no active level");
    return NUMACOLL_OK;
}
