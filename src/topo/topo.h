/*
 * Topology: where every team member runs, and the group hierarchy built from it
 * (paper 1, section 2.1).
 *
 * Two parts:
 *  - hier.c: a pure builder. Input: for each of L active levels (lowest first) the index
 *    of the unit (which L2, L3, NUMA node, package) each of P processes lies in. Output:
 *    groups per level; the leader of a group is its lowest rank; leaders go on to the next
 *    level; a final "top" group joins the remaining leaders. No hwloc, no I/O: the
 *    paper's figures are unit tests of this function.
 *  - probe.c / team glue: hwloc probe of the real machine (or of NUMACOLL_TOPO_SYNTHETIC
 *    with a simulated placement), the per-process locality exchanged through the team's
 *    OOB allgather, and the usable-level rules.
 */
#ifndef NC_TOPO_H
#define NC_TOPO_H

#include "../core/nc_internal.h"

enum { NC_LVL_L2 = 0, NC_LVL_L3, NC_LVL_NUMA, NC_LVL_SOCKET, NC_NLEVELS };
extern const char *const nc_level_names[NC_NLEVELS]; /* "l2", "l3", "numa", "socket" */

typedef struct nc_group {
    int size;
    int *members; /* ascending ranks; members[0] is the leader */
} nc_group_t;

typedef struct nc_hier_level {
    char name[16]; /* "l2", "l3", "numa", "socket" or "top" */
    int ngroups;
    nc_group_t *groups;
} nc_hier_level_t;

typedef struct nc_hier {
    int nprocs;
    int nlevels;             /* group levels, lowest first, "top" last; 0 = flat */
    nc_hier_level_t *levels;
    int *group_of;           /* [l * nprocs + r]: group of rank r at level l, -1 if none */
} nc_hier_t;

/**
 * Build the hierarchy. @p unit is [nlevels][nprocs] (unit index of process r at level l,
 * lowest level first; every entry >= 0). @p names are the level names.
 * A level whose groups all have one member is skipped; the top group is added only when
 * more than one leader remains.
 */
int nc_hier_build(int nprocs, int nlevels, const int *unit, const char *const *names,
                  nc_hier_t **out);
void nc_hier_free(nc_hier_t *h);
/** JSON {"levels":[{"name":..,"groups":[[..],..]},..]} into out (truncated to n). */
int nc_hier_to_json(const nc_hier_t *h, char *out, size_t n);

/** Per-team topology state (opaque outside topo/). */
struct nc_topo_team;

/** Collective: probe, exchange localities, decide usable levels; sets t->topo and
 *  t->numa_node. Never fails for lack of binding (then no level is usable). */
int nc_topo_team_init(numacoll_team_t *t);
void nc_topo_team_fini(numacoll_team_t *t);

/**
 * Hierarchy over the usable levels among @p levels (comma-separated subset of
 * l2,l3,numa,socket). Returns NULL (flat) if none is usable. The result is cached in the
 * team and owned by it.
 */
const nc_hier_t *nc_topo_team_hier(numacoll_team_t *t, const char *levels);

/** Number of distinct NUMA nodes used by the team's members (1 if unknown). */
int nc_topo_team_numa_count(const numacoll_team_t *t);
/** NUMA node index of rank r (-1 if unknown / not bound inside one node). */
int nc_topo_team_numa_of(const numacoll_team_t *t, int r);

/** Human-readable summary (levels usable, groups) for verbose output. */
int nc_topo_team_describe(const numacoll_team_t *t, char *out, size_t n);

#endif
