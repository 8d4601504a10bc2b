/*
 * Broadcast (paper 3): pipelined through per-process queues in shared memory.
 * The team-level entry point; state is created at a team's first broadcast.
 *
 * Files: bcast_internal.h lists them (the entry and path choice, the inline, queue and CMA
 * paths, the copy-mode selector, the team state, the model's calibration, the waits) and
 * describes the protocol; tree.c (notification trees), model.c (the paper's cost model
 * and the choice of f and s; pure functions), plan.h (the decisions as read-only
 * functions), check.c (NUMACOLL_BCAST_CHECK: the members' arguments compared before each
 * broadcast).
 */
#ifndef NC_BCAST_H
#define NC_BCAST_H

#include "../../core/nc_internal.h"
#include "../barrier/barrier.h" /* nc_team_barrier_default: the barriers a broadcast needs */

NC_CFG_LINK(bcast); /* config_rows.c: this layer's rows (config.h) */

/** Collective broadcast of @p bytes from @p root (arguments already validated). */
int nc_bcast_run(numacoll_team_t *t, void *buf, size_t bytes, int root);
/** Free the team's broadcast state (local). The next broadcast re-creates it (collectively)
 *  from the current configuration. */
void nc_bcast_team_fini(numacoll_team_t *t);
/** Create the team's broadcast state (queues, model, trees) if it has none: collective (every
 *  member calls it at the same point), and every member gets the same status, so a caller
 *  that takes a failure as "broadcast natively" decides alike everywhere. A team of one
 *  process needs none. */
int nc_bcast_setup(numacoll_team_t *t);
/** Bytes of queue memory this member's broadcast state holds (the sets of its own queue
 *  that got their memory, all of them when populated at creation); 0 without a broadcast
 *  state or with only its control block. */
size_t nc_bcast_team_queue_bytes(const numacoll_team_t *t);

/* ---- argument check (check.c, NUMACOLL_BCAST_CHECK) ------------------------------------ */

typedef struct nc_bcast_args {
    int root, mark;
    uint32_t opts; /* nc_bcast_opts_sig of the call's effective per-call options */
    size_t bytes;
} nc_bcast_args_t;

/** A 31-bit signature of a call's effective per-call options (check.c resolves the team
 *  defaults first, so a default and the same value passed explicitly agree). */
uint32_t nc_bcast_opts_sig(int tree, int k, long inline_max, long long cma_min, int relay,
                           int copy_mode, int rotate);
/**
 * Collective: publish @p mine as this member's arguments of checked call @p n (counted
 * alike on every member), barrier, compare every member's. Member r's six check words lie
 * at @p words0 + r * @p stride (single writer r). NUMACOLL_OK if all match; otherwise
 * NUMACOLL_ERR_ARG on every member, with a message naming a member whose arguments differ
 * from those most members passed (ties: the lowest rank's), and *@p other_root = the first root passed by a member that differs
 * from ours (-1: all passed our root).
 */
int nc_bcast_check_args(numacoll_team_t *t, char *words0, size_t stride, uint64_t n,
                        const nc_bcast_args_t *mine, int *other_root);

/* ---- trees ---------------------------------------------------------------------------- */

typedef enum nc_bcast_tree_kind {
    NC_BTREE_KARY = 0,
    NC_BTREE_KNOMIAL,
    NC_BTREE_FLAT,
    NC_BTREE_CHAIN,
    NC_BTREE_TOPO,
    NC_BTREE_COUNT
} nc_bcast_tree_kind_t;

extern const char *const nc_bcast_tree_names[NC_BTREE_COUNT]; /* "kary", ... */
int nc_bcast_tree_find(const char *name);                     /* -1 if unknown */

/**
 * Parent of every rank for root @p root (parent[root] = -1). Pure function of the shape.
 * @p k is the fan-out (kary, knomial). For NC_BTREE_TOPO, @p groups gives for each rank a
 * group index per level: groups[l * P + r] (lowest level first, @p nlev levels; group
 * index < 0 = not in a group at that level); NULL or nlev == 0 degrades to kary.
 * Rotation: ranks are renumbered v = (r - root) mod P for kary/knomial/chain/flat.
 */
void nc_bcast_tree_parents(int kind, int P, int root, int k, int nlev, const int *groups,
                           int *parent);

/* ---- model (model.c) ------------------------------------------------------------------ */

typedef struct nc_bcast_model {
    double t;    /* seconds per byte copied */
    double t_wo; /* wait for a set's readers */
    double t_a;  /* atomic decrement */
    double t_w;  /* wait for one notification */
} nc_bcast_model_t;

/** The paper's ratios around a notification wait @p t_w and a time per byte @p t:
 *  t_WO = 2 t_W, t_A = 0.2 t_W. */
nc_bcast_model_t nc_bcast_model_from(double t, double t_w);
/** Paper's constants: t = 1e-9, t_WO = 100 t, t_A = 10 t, t_W = 50 t. */
nc_bcast_model_t nc_bcast_model_paper(void);
/** Modelled time of one broadcast of @p m bytes with fragment @p f and @p s buffers
 *  (queue b = s f), following the digest's piecewise formula. */
double nc_bcast_model_time(const nc_bcast_model_t *md, double m, double f, double s);
/** f* = sqrt(b t_W / t) rounded up to a multiple of @p page (>= page). */
size_t nc_bcast_model_fragment(const nc_bcast_model_t *md, size_t b, size_t page);
/** s* = b / f (at least @p min_s). */
size_t nc_bcast_model_slots(size_t b, size_t f, size_t min_s);
/** Fallback constants when a measurement fails (t = 0.1 ns/B, t_W = 0.2 us). */
nc_bcast_model_t nc_bcast_model_default(void);

/* ---- per-call options (benchmarks, tests) --------------------------------------------- */

typedef struct nc_bcast_opts {
    int tree;          /* nc_bcast_tree_kind_t, or -1 = team default */
    int k;             /* 0 = team default */
    long inline_max;   /* -1 = team default; otherwise clamped to the team's inline room */
    long long cma_min; /* -1 = team default; 0 = off */
    int relay;         /* -1 = team default, 0 off, 1 on */
    int copy_mode;     /* -1 = team default (NUMACOLL_BCAST_STREAM_MIN, the selector); else
                        * forced for every queue message: bit 0 = the root streams into its
                        * queue, bit 1 = receivers stream out (non-temporal stores), bit 2 = a
                        * message of 2 KiB + 1 .. 8 KiB in one fragment, not two halves,
                        * bit 3 = no rotating offset for this message (as rotate = 0)
                        * (NC_BCAST_SEL_MODES modes; anything else is NUMACOLL_ERR_ARG) */
    int rotate;        /* -1 = team default; 0 = every use of a set starts at its first slot, 1 =
                        * successive uses start at rotating offsets (frag_buf, bcast_internal.h) */
    int demote;        /* -1 = team default (NUMACOLL_BCAST_DEMOTE); 0 off, 1 on (the root's and
                        * forwarders' hint for inline payload lines; members need not agree) */
    int prefetch;      /* -1 = team default (NUMACOLL_BCAST_PREFETCH); 0 off, 1 on (the root's and
                        * forwarders' write prefetch of inline payload lines; need not agree) */
    int mark;          /* 1: a marked message, inline (at most the inline room): the MPI layer's
                        * header of a broadcast over 2 GiB. A receiver whose mark differs from
                        * the root's fails as one whose size differs (nc_bcast_last_mismatch) */
} nc_bcast_opts_t;

/* Every field at its default (the team's), named: a new field gets its default here. */
#define NC_BCAST_OPTS_DEFAULT                                                                      \
    {                                                                                              \
        .tree = -1, .k = 0, .inline_max = -1, .cma_min = -1, .relay = -1, .copy_mode = -1,         \
        .rotate = -1, .demote = -1, .prefetch = -1, .mark = 0                                      \
    }

/** Like nc_bcast_run with per-call overrides (all members must pass the same options). */
int nc_bcast_run_opts(numacoll_team_t *t, void *buf, size_t bytes, int root,
                      const nc_bcast_opts_t *o);

/** The options of the named variant @p name (variants.c; numacoll_bcast_variant_name lists
 *  them): NUMACOLL_OK, or NUMACOLL_ERR_NOT_FOUND with a message listing the allowed names. */
int nc_bcast_variant_opts(const char *name, nc_bcast_opts_t *o);

/** After a broadcast that failed on this receiver with NUMACOLL_ERR_ARG because the root's
 *  message differed from its own (size or mark) or its root was another rank than the one
 *  this receiver passed: 1 and the root's size, its mark, the first (up to) 8 bytes of an
 *  inline payload (else 0) and (if @p root is not NULL) the root's rank, once; 0 if the
 *  last such failure was read already (or there was none). Local. */
int nc_bcast_last_mismatch(numacoll_team_t *t, size_t *sent, int *mark, uint64_t *head,
                           int *root);

/** Geometry chosen for the team (creates the state collectively if needed). */
typedef struct nc_bcast_info {
    size_t fragment_bytes; /* f in the paper */
    size_t slots;          /* s in the paper: slots of a process's queue */
    size_t sets;           /* q in the paper */
    size_t queue_bytes;    /* b = s f in the paper: bytes of a process's queue */
    size_t inline_room, seg_size, paper_size;
    int tree, k, relay, cma_ok;
    size_t cma_min;
    nc_bcast_model_t model; /* the constants f and s were derived from (rank 0's) */
    int t_measured, tw_measured; /* 1: measured at run time, 0: configured, 2: fallback
                                  * constants (oversubscribed team, or not measurable) */
} nc_bcast_info_t;
int nc_bcast_info(numacoll_team_t *t, nc_bcast_info_t *info);

/** Test hook: pretend rank r lies on NUMA node numa[r] (exercises the relay on a
 *  one-node machine). Creates the state if needed; local; all members must call it. */
int nc_bcast_debug_set_numa(numacoll_team_t *t, const int *numa);

/** The copy-mode selector switches to another mode only when its estimate is below this
 *  fraction of the current mode's: modes whose estimates lie close together would otherwise
 *  alternate every few samples, each switch paying for the state the previous mode left
 *  behind. */
#define NC_BCAST_SEL_SWITCH 0.9

/** The copy-mode selector's modes: bit 0 streamed root stores, bit 1 streamed receiver
 *  stores, bit 2 a message of 2 KiB + 1 .. 8 KiB in one fragment instead of two halves,
 *  bit 3 the message at the start of its queue set instead of a rotating offset. */
#define NC_BCAST_SEL_MODES 16

/** Test hook: the copy-mode selector's state for the size class of @p bytes on this member
 *  (local): samples recorded per mode (NC_BCAST_SEL_MODES), each mode's estimate in ns per
 *  byte (0 without samples), the mode it uses now (-1: no broadcast had modes to choose from
 *  yet), and whether selection is on for the team.
 *  NUMACOLL_ERR_STATE if the team has not broadcast yet. */
int nc_bcast_debug_sel(numacoll_team_t *t, size_t bytes, uint32_t samples[NC_BCAST_SEL_MODES],
                       double est[NC_BCAST_SEL_MODES], int *best, int *adapt);

/** Test hook: measured runs whose sample this member (as a root) discarded because their
 *  measured calls mixed two runs: on its side (calls of another size class) or on a
 *  receiver's (its count of measured calls differed from the run's). */
uint64_t nc_bcast_debug_sel_lost(numacoll_team_t *t);

#endif
