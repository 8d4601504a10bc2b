/*
 * Barrier algorithm interface and registry (one file per algorithm, one row each in
 * registry.c).
 *
 * Shared memory: every algorithm gets an area in the team's global block and an area in
 * every rank's block (the block first-touched by, and NUMA-local to, that rank). The team
 * sizes both from the algorithm's global_bytes()/rank_bytes(), which must return the same
 * values on every member (functions of P, the line size and the configuration only).
 * Segments start zero-filled: an algorithm's initial state must be all-zero bytes
 * (use monotonically increasing sequence numbers or senses that start at 0).
 *
 * Conventions: each flag or counter sits alone on a line of t->line bytes; every flag has
 * a single writer unless the comment says otherwise; every wait goes through nc_wait_t and
 * carries a comment saying who writes the flag and what the reader may assume after it.
 */
#ifndef NC_BARRIER_H
#define NC_BARRIER_H

#include "../../core/nc_internal.h"

NC_CFG_LINK(barrier); /* config_rows.c: this layer's rows (config.h) */

typedef struct nc_barrier_slot {
    char *global;    /* this algorithm's area in the global block */
    size_t rank_off; /* offset of this algorithm's area inside every rank block */
    void *priv;      /* process-private state (init/fini) */
    uint64_t calls;  /* calls of this algorithm by this process */
} nc_barrier_slot_t;

/* Area of this algorithm in rank @p r's block. */
static inline char *nc_barrier_rank_area(const numacoll_team_t *t, const nc_barrier_slot_t *s,
                                         int r)
{
    return nc_team_rank_block(t, r) + s->rank_off;
}

typedef struct nc_barrier_algo {
    const char *name;
    const char *description;
    size_t (*global_bytes)(const numacoll_team_t *t);
    size_t (*rank_bytes)(const numacoll_team_t *t);
    /* optional: build process-private state after the segment exists (no communication) */
    int (*init)(numacoll_team_t *t, nc_barrier_slot_t *s);
    /* the barrier; returns NUMACOLL_OK or the error of a failed wait */
    int (*run)(numacoll_team_t *t, nc_barrier_slot_t *s);
    /* optional */
    void (*fini)(numacoll_team_t *t, nc_barrier_slot_t *s);
} nc_barrier_algo_t;

extern const nc_barrier_algo_t *const nc_barrier_registry[];
extern const int nc_barrier_registry_count;

/** Index of a registered algorithm by name, -1 if unknown. */
int nc_barrier_find(const char *name);
/** Index of the algorithm used for "auto" on this team. */
int nc_barrier_auto(const numacoll_team_t *t);

/** "auto|name|...": allowed values of NUMACOLL_BARRIER (config table). */
const char *nc_barrier_allowed_names(void);

/* ---- pieces of individual algorithms exposed for unit tests ---------------------- */

struct nc_hier;
/**
 * Topology barrier tree (topo_tree.c): the ranks whose arrival @p me waits for (the non-leader
 * members of every group it leads, lowest level first; P-1 entries at most) and the root.
 * @p h NULL = flat (everyone reports to rank 0). Pure; returns NUMACOLL_OK or NOMEM.
 */
int nc_barrier_topo_tree(const struct nc_hier *h, int P, int me, int *children, int *nchildren,
                         int *root);

/** LogP parameters (ns) of paper 2 (adaptive-logp.c). */
typedef struct nc_logp {
    double L, o_s, o_r, g;
} nc_logp_t;

enum { NC_LOGP_CENTRAL = 0, NC_LOGP_COMBINING, NC_LOGP_DISSEMINATION, NC_LOGP_NALG };

/** Paper 2's estimates (ns) for P processes; @p n = combining-tree fan-in (>= 2).
 *  Tree depths and rounds are whole numbers: log_n P means ceil(log_n P). P = 1 gives 0. */
double nc_logp_central(const nc_logp_t *m, int P);
double nc_logp_combining(const nc_logp_t *m, int P, int n);
double nc_logp_dissemination(const nc_logp_t *m, int P);
/** Argmin of the three estimates (ties: the lower enum value); fills est[NC_LOGP_NALG]. */
int nc_logp_choose(const nc_logp_t *m, int P, int n, double *est);
/** Registry name of a NC_LOGP_* algorithm. */
const char *nc_logp_algorithm(int which);
/** The model parameters from the config table (NUMACOLL_BARRIER_LOGP_*). */
nc_logp_t nc_logp_from_config(void);

/** The "auto" choice and why (registry.c; nc_barrier_auto logs it, numacoll-info --explain
 *  prints it): the same index as nc_barrier_auto, without the log line. The LogP fields hold
 *  the estimates for the team's size whichever rule decided (the rule NC_BAUTO_LOGP runs
 *  their argmin). */
enum { NC_BAUTO_ONE = 0, NC_BAUTO_TWO, NC_BAUTO_OVERSUB, NC_BAUTO_TOPO, NC_BAUTO_LOGP };
typedef struct nc_barrier_auto {
    const char *pick;         /* registry name */
    int rule;                 /* NC_BAUTO_*: which rule decided */
    int hier_levels;          /* group levels of the hierarchy consulted (0: flat / not asked) */
    nc_logp_t logp;           /* the LogP parameters (NUMACOLL_BARRIER_LOGP_*) */
    int logp_n;               /* the combining tree's fan-in (NUMACOLL_BARRIER_TREE_K) */
    double est[NC_LOGP_NALG]; /* the LogP estimates (ns) */
    int logp_pick;            /* their argmin (NC_LOGP_*) */
    char why[160];            /* the reason as NUMACOLL_VERBOSE=1 logs it */
} nc_barrier_auto_t;
int nc_barrier_auto_explain(const numacoll_team_t *t, nc_barrier_auto_t *out);

/* run.c: the algorithms' areas in the team segment (the team's creation lays them out),
 * and running one */
size_t nc_barrier_layout(numacoll_team_t *t, size_t global_off, size_t *rank_bytes_total);
/** Run the algorithm at registry index @p idx on team @p t (valid), bracketed by the team's
 *  collective bookkeeping (nc_team_op_enter / nc_team_op_leave). */
int nc_barrier_run(numacoll_team_t *t, int idx);
/** numacoll_barrier(t) for a team known to be valid, called directly (hidden: no PLT
 *  indirection from the MPI interposition layer, which calls it once per MPI_Barrier). */
__attribute__((visibility("hidden"))) int nc_team_barrier_default(numacoll_team_t *t);

#endif
