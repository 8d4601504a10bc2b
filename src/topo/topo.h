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

NC_CFG_LINK(topo); /* config_rows.c: this layer's rows (config.h) */

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
    int nlevels; /* group levels, lowest first, "top" last; 0 = flat */
    nc_hier_level_t *levels;
    int *group_of; /* [l * nprocs + r]: group of rank r at level l, -1 if none */
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
/** The team's topology state from a planned placement (nc_topo_plan_create, t->size ranks)
 *  instead of a probe and an exchange: no communication. For tools that explain a team's
 *  choices (numacoll-info --explain); released by nc_topo_team_fini. */
struct nc_topo_plan;
int nc_topo_team_init_planned(numacoll_team_t *t, const struct nc_topo_plan *p,
                              const char *source);

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

/** True when the team's localities are simulated (NUMACOLL_TOPO_SYNTHETIC): then
 *  nc_topo_team_numa_of gives simulated nodes, never to be used to bind real memory
 *  (t->numa_node is -1 in that case). */
int nc_topo_team_simulated(const numacoll_team_t *t);

/* ---- machine probe, localities and planning without a team (probe.c) ----------------
 *
 * Levels: for each of l2, l3, numa, socket the machine's units (cpusets; a NUMA node's
 * unit is the cpuset it is local to; identical NUMA cpusets are one unit). A level is
 * ACTIVE when one of its units holds 2 or more cores and its units differ from those of
 * the nearest lower active level. A level with the same units as a lower active level is
 * the same level under another name (base[] points at that lower level): asking for
 * either name gives the same groups, labelled with the highest name asked for (so with
 * an L3 per NUMA node, "numa" groups are the L3 groups, as in the paper's example).
 */
typedef struct nc_topo_levels {
    int nunits[NC_NLEVELS];   /* units of the level (0 = absent) */
    int maxcores[NC_NLEVELS]; /* most cores in one unit */
    int base[NC_NLEVELS];     /* active level with the same units (itself if active and new);
                                 -1 if not active */
    int ncores;               /* cores of the machine (PUs if it has no cores) */
} nc_topo_levels_t;

/** Locality of one process: per level the unit its whole binding lies in, or -1. */
typedef struct nc_topo_loc {
    int unit[NC_NLEVELS];
    int numa_os; /* OS index of the NUMA node the binding lies in, -1 if none */
} nc_topo_loc_t;

typedef struct nc_topo_machine nc_topo_machine_t;

/** Load the real machine (@p synthetic NULL or "") or an hwloc synthetic description. */
int nc_topo_machine_load(const char *synthetic, nc_topo_machine_t **out);
void nc_topo_machine_free(nc_topo_machine_t *m);
const nc_topo_levels_t *nc_topo_machine_levels(const nc_topo_machine_t *m);
/** Locality of a binding given as an hwloc list of PU OS indices ("0-3,8"). */
int nc_topo_locality_of_list(const nc_topo_machine_t *m, const char *pulist, nc_topo_loc_t *loc);
/** Locality of the calling process's current binding (real machine only); @p bind gets
 *  the binding as a list (may be NULL). */
int nc_topo_locality_self(const nc_topo_machine_t *m, nc_topo_loc_t *loc, char *bind, size_t n);
/** Simulated placement of paper 3, section 3: @p map_by "core" (rank r on core r), "numa"
 *  (NUMA node r mod #nodes, next free core there), "socket" (package r mod #packages,
 *  next free core there); more ranks than cores wrap around (*wrapped = 1). @p core gets
 *  the core's logical index (may be NULL). */
int nc_topo_locality_simulated(const nc_topo_machine_t *m, int rank, int nprocs, const char *map_by,
                               nc_topo_loc_t *loc, int *core, int *wrapped);

/** Parse a comma-separated subset of l2,l3,numa,socket into a bit mask (1 << NC_LVL_*). */
int nc_topo_parse_levels(const char *levels, unsigned *mask);
/** Which levels are usable for a locality table: active and every process inside one unit
 *  (bit mask). */
unsigned nc_topo_usable(int nprocs, const nc_topo_loc_t *loc, const nc_topo_levels_t *lv);
/**
 * The hierarchy of @p nprocs processes with localities @p loc over the usable levels among
 * @p levels. *out = NULL when flat (no usable level asked for, or a single process); then
 * @p why (may be NULL) says why.
 */
int nc_topo_build(int nprocs, const nc_topo_loc_t *loc, const nc_topo_levels_t *lv,
                  const char *levels, nc_hier_t **out, char *why, size_t whyn);

/** A whole placement for planning: machine levels + the locality of every rank. */
typedef struct nc_topo_plan {
    int nprocs;
    nc_topo_levels_t lv;
    nc_topo_loc_t *loc; /* [nprocs] */
    int *core;          /* [nprocs] simulated core (logical index) */
    int wrapped;        /* more ranks than cores (or than a unit's cores): wrapped around */
} nc_topo_plan_t;

/** Plan @p nprocs ranks placed by @p map_by on @p synthetic (NULL/"" = the real machine). */
int nc_topo_plan_create(const char *synthetic, int nprocs, const char *map_by,
                        nc_topo_plan_t **out);
void nc_topo_plan_free(nc_topo_plan_t *p);
/** Readable description of a level set ("l3 (2 units of <= 32 cores) = numa; socket ..."). */
int nc_topo_levels_describe(const nc_topo_levels_t *lv, unsigned usable, char *out, size_t n);
/** Readable multi-line form of a hierarchy. */
int nc_hier_to_text(const nc_hier_t *h, char *out, size_t n);

#endif
