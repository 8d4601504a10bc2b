/*
 * The broadcast's decisions as read-only functions: the team's parameters from the
 * configuration and the team (tree, relay, queue geometry, inline room, copy-mode
 * thresholds), and per message its path, its fragment size, its static copy mode and the
 * copy-mode selector's candidates. The broadcast makes its choices through these, and
 * numacoll-info --explain reports them through the same calls, so the explanation cannot
 * drift from what the library does.
 *
 * The per-message helpers are static inline: they sit on the call path.
 */
#ifndef NC_BCAST_PLAN_H
#define NC_BCAST_PLAN_H

#include "bcast.h"

#include <math.h>

#define INL_HDR 16 /* stamp + size */

typedef struct cma_desc {
    uint64_t addr; /* root's buffer address */
    int64_t pid;   /* root's pid */
    int64_t root;  /* root's rank */
} cma_desc_t;

/* A queue message of SPLIT_MIN+1 .. SPLIT_MAX bytes goes in two halves unless the root
 * chose the model's one fragment (OPF_WHOLE, bcast_internal.h; nc_bcast_msg_fragment) */
#define SPLIT_MIN 2048
#define SPLIT_MAX 8192
#define SEL_NOROT_MAX ((size_t)16 << 10) /* up to here, modes without rotating offsets too */

/* the hierarchy levels the topology tree groups by */
#define NC_BCAST_TREE_LEVELS "numa,socket"

/** The team's broadcast parameters before the members' agreement and the /dev/shm cut of
 *  the slot count (state.c, bc_state_create). */
typedef struct nc_bcast_plan {
    size_t budget;     /* queue budget b (NUMACOLL_BCAST_QUEUE_BYTES, or the auto value) */
    int budget_auto;   /* 1: NUMACOLL_BCAST_QUEUE_BYTES = 0 */
    size_t f, s, q;    /* fragment, slots, sets */
    int fixed_f;       /* f configured (no per-message adaptation) */
    int s_auto;        /* s from the model (cut at run time to fit /dev/shm) */
    size_t f_model;    /* the model's f* before the b / (2q) bound (0 if f configured) */
    size_t f_max;      /* that bound (0 if f configured) */
    int tree, k, relay;
    int tree_auto, relay_auto; /* NUMACOLL_BCAST_TREE / _RELAY = auto */
    const char *tree_why, *relay_why; /* the rule that chose them (static strings) */
    int numa_count;            /* NUMA nodes the team spans (nc_topo_team_numa_count) */
    size_t inline_max, room, inl_block, inl_fast, cma_min;
    size_t nt_min, nt_out_min; /* streamed root / receiver stores from (0 = never) */
    int nt_min_from_out;       /* nt_min is STREAM_OUT_MIN's (oversubscribed, STREAM_MIN unset) */
    int rotate, adapt, check;
} nc_bcast_plan_t;

/**
 * The team's broadcast parameters from the configuration, the team (size, oversubscription,
 * NUMA nodes, line size) and the model @p md. Pure: no communication. NUMACOLL_OK, or
 * NUMACOLL_ERR_CONFIG with a message for a configuration the broadcast refuses (sets > slots,
 * NUMACOLL_BCAST_CHECK with lines under 64 bytes); *p is filled in either case.
 */
int nc_bcast_plan_params(const numacoll_team_t *t, const nc_bcast_model_t *md, nc_bcast_plan_t *p);

/** Where the model's constants come from (calibrate.c): 0 configured, 1 measured at the
 *  team's first broadcast, 2 the fallback (oversubscribed team). */
enum { NC_BMODEL_CONFIGURED = 0, NC_BMODEL_MEASURED, NC_BMODEL_FALLBACK };
/** The model a team starts from without measuring: configured constants, else the fallback
 *  constants (nc_bcast_model_default); *t_src and *tw_src say which applies at run time
 *  (NC_BMODEL_MEASURED: measured then, the fallback stands in here). */
void nc_bcast_model_plan(const numacoll_team_t *t, nc_bcast_model_t *md, int *t_src, int *tw_src);

/** The group levels of the topology tree (NC_BCAST_TREE_LEVELS) on this team: their number
 *  (0: none) and *groups = the hierarchy's group_of ([nlev * P], owned by the team). */
int nc_bcast_tree_groups(numacoll_team_t *t, const int **groups);

/* ---- per message ------------------------------------------------------------------------ */

enum { NC_BPATH_INLINE = 0, NC_BPATH_CMA, NC_BPATH_QUEUE };
extern const char *const nc_bcast_path_names[3]; /* "inline", "cma", "queue" */

/** The path of a message of @p bytes: inline up to @p inl bytes, else CMA from @p cma_min
 *  (0 = never) when @p cma_ok, else the queues. */
static inline int nc_bcast_msg_path(size_t bytes, size_t inl, int cma_ok, size_t cma_min)
{
    if (bytes <= inl) return NC_BPATH_INLINE;
    if (cma_ok && cma_min && bytes >= cma_min) return NC_BPATH_CMA;
    return NC_BPATH_QUEUE;
}

/** The static copy mode of a queue message (nt bits: 1 the root streams into its queue,
 *  2 the receivers stream out), from the thresholds nt_min / nt_out_min (0 = never). */
static inline int nc_bcast_msg_nt(size_t nt_min, size_t nt_out_min, size_t bytes)
{
    return (nt_min && bytes >= nt_min ? 1 : 0) | (nt_out_min && bytes >= nt_out_min ? 2 : 0);
}

/**
 * The fragment size of a queue message of @p bytes: the team's @p f, or with a model-chosen
 * f (!fixed_f) the paper's rule for a known m, f = sqrt(m t_W / t) (at most the team's f),
 * and for SPLIT_MIN+1 .. SPLIT_MAX bytes two halves unless @p whole (the root's OPF_WHOLE).
 */
static inline size_t nc_bcast_msg_fragment(size_t f, int fixed_f, const nc_bcast_model_t *md,
                                           size_t bytes, int whole)
{
    size_t fe = f;
    if (!fixed_f) { /* the paper's rule for a known m: f = sqrt(m t_W / t), <= f */
        double opt = sqrt((double)bytes * md->t_w / md->t);
        size_t o = nc_round_up((size_t)opt + 1, 4096);
        if (o < fe) fe = o;
        /* up to two pages, at least two fragments of at least 2 KiB unless the root chose
         * the rule's one fragment (OPF_WHOLE, see nc_bcast_sel_cands): the rule above keeps
         * such a message whole (its t is a local memcpy's, while the receiver's copy here
         * pulls every line from the root's cache), so the receiver could not start before
         * the root had copied it all; in two halves it copies the first while the root
         * copies the second. The floor and the bound: smaller halves, or more fragments for
         * larger messages, cost more in notifications than they overlap. Messages of 2 KiB
         * or less keep the rule's fragment (a smaller one, though still one fragment, moves
         * where ops rotate through the set). */
        if (bytes > SPLIT_MIN && bytes <= SPLIT_MAX && !whole) {
            size_t half = nc_round_up((bytes + 1) / 2, 64);
            size_t small = half < 2048 ? 2048 : half;
            if (small < fe) fe = small;
        }
    }
    return fe;
}

/**
 * The copy-mode selector's candidate modes for a queue message of @p bytes into c[0..3], the
 * static default first; their number, 0 when the selector does not choose for this size.
 * Modes: bit 0 streamed root stores, bit 1 streamed receiver stores, bit 2 the model's one
 * fragment (OPF_WHOLE), bit 3 no rotating offset (OPF_NOROT). A mode bit that does not apply to
 * some size of a class does nothing there (the classes at the range ends hold sizes of both
 * kinds).
 */
static inline int nc_bcast_sel_cands(size_t nt_min, size_t nt_out_min, int fixed_f, int rotate,
                                     size_t bytes, int *c)
{
    /* all four from STREAM_OUT_MIN (the thresholds only order them: the first is tried
     * first) */
    if (nt_out_min && bytes >= nt_out_min) {
        c[0] = 3, c[1] = 0, c[2] = 2, c[3] = 1;
        return 4;
    }
    int n = 0;
    if (nt_min && bytes >= nt_min) {
        c[n++] = 1, c[n++] = 0;
    } else if (bytes > SPLIT_MIN && bytes <= SPLIT_MAX && !fixed_f) {
        /* two halves (the default) or the model's one fragment (OPF_WHOLE), see queue.c;
         * not with a configured fragment size */
        c[n++] = 0, c[n++] = 4;
    } else if (bytes > SPLIT_MIN && bytes <= SEL_NOROT_MAX) {
        c[n++] = 0;
    }
    /* up to SEL_NOROT_MAX, each of those also without rotating offsets (OPF_NOROT) */
    if (rotate && bytes > SPLIT_MIN && bytes <= SEL_NOROT_MAX)
        for (int i = 0, k = n; i < k; i++)
            c[n++] = c[i] | 8;
    return n > 1 ? n : 0;
}

#endif
