/*
 * The pipelined shared-memory broadcast of paper 3 (M. Kurnosov, E. Tokmasheva), with
 * inline small messages, an optional NUMA relay and an optional CMA path.
 *
 * Segment (created collectively at the team's first broadcast; w = page size):
 *
 *   global (first-touched by rank 0):
 *       leaders[P] (int32; the NUMA leader of each rank)          rounded up to a page
 *       q pages, one per set: the set's `op` line (op + 1 of the last op started on it,
 *       written by that op's root; diagnostic, nobody waits on it)
 *   per process r (first-touched by r, bound to its NUMA node):
 *       ack line                 (word 0: op + 1 of the last op r has finished; word 1: the
 *                                CMA guard, cma_guard; words 2-7: r's arguments of
 *                                its last two checked calls, NUMACOLL_BCAST_CHECK;
 *                                single writer r)
 *       s control lines          (one per queue slot: {stamp, size})
 *       8 inline blocks          (one per op mod 8: {stamp, size, payload[room]})
 *       (rounded up to a page)
 *       s buffers of f bytes     (the cyclic queue, split into q sets of s/q slots)
 *
 * The paper's size is w + w q + p s (w + f) (a page per control block); ours packs the
 * control blocks into lines, and both figures are printed in verbose mode.
 *
 * Operations: every broadcast is a sequence of *ops*, numbered identically on all members
 * (op counter in the local state). A small message is one op whose data travel in the
 * receivers' inline blocks (block op % 8); a CMA broadcast is one op whose inline blocks
 * carry the root's address and pid; a queue broadcast takes ceil(m / (s/q * fe)) ops, op n
 * filling up to s/q slots of set n % q with fragments of fe bytes. The control line of
 * fragment i is that of slot i of the set; its data lie at a rotating offset inside the set
 * (frag_buf: successive uses of a set by messages smaller than the set start further on, so
 * the root does not rewrite lines the receivers read one use ago and still cache).
 *
 * Synchronisation, all monotonic (the segment starts zero-filled, nothing is ever reset):
 *  - stamps: the parent of a process in this op's tree writes the payload (and size), then
 *    stores stamp = op + 1 with release into the child's control line or inline block.
 *    The child waits with acquire for that stamp; every stamp value is used once per line.
 *  - acks (the monotonic form of the paper's nreaders counter): every member, root
 *    included, stores ack = op + 1 with release when it has finished op (all its reads of
 *    slots and blocks). Ops are processed in order, so ack >= a means ops < a are done.
 *    The root of op n may write into set n % q (previous user: op n - q) once every other
 *    member's ack >= n - q + 1, and into inline block n % 8 once every ack >= n - 8 + 1; at
 *    that point every reader of the previous use, including readers of relay copies and of
 *    blocks written by inner tree nodes (who only write after the root's wait), is done.
 *    The root caches the acks it has seen, so with q sets it reads a peer's ack line about
 *    once per q ops.
 */
#include "bcast.h"
#include "plan.h"
#include "../../topo/topo.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* inline blocks per process (ops mod 8): a root of back-to-back small broadcasts reads a
 * receiver's ack line (a cache miss) once per 8 calls. More blocks spread the polled lines
 * over more cache: measured at np = 2 (MPI, interleaved), 64 blocks made 256-512 B
 * broadcasts 15-40 % slower (0.36 vs 0.31 us, 0.48 vs 0.34 us) and saved nothing below;
 * 4 and 16 were no better than 8. */
#define INLINE_BLOCKS 8
#define CMA_MAGIC 0x6e63636d61707262ull

typedef struct ctl_line {
    _Atomic uint64_t stamp; /* op + 1 of the last notification (written by the parent) */
    uint64_t size;          /* bytes of the fragment (written before the stamp) */
    uint64_t flags;         /* the root's copy mode and op flags for this message (NT_*, OPF_*)
                             * and its rank (root_bits), written before the stamp and
                             * forwarded down the tree */
    uint64_t msg_bytes;     /* the root's message size (sets the fragment geometry) */
} ctl_line_t;

/* Members that pass different sizes (an erroneous program) may choose different paths.
 * A receiver learns the root's path and size from the first notification of the op it
 * starts with: its inline block of the op (inline: word 1 is the payload size; CMA: word 1
 * is KIND_CMA | the size) or the control line of the first slot of the op's set (queue:
 * `msg_bytes`). It waits for the line its own size expects, and after the spin phase for the
 * other one too (wait_first), then follows the root's ops whatever its own size chose, so
 * it neither waits for a notification that never comes nor takes a later message for this
 * one, and the members' op counts stay equal. Only the root writes either line of op
 * (an inner tree node after the root), so each shows op + 1 only if the root took that
 * path, and neither can be reused before this receiver acks op. */
#define KIND_CMA (1ull << 63)
#define KIND_MARK (1ull << 62) /* an inline message marked by its root (nc_bcast_opts_t.mark) */

/* Every notification names the op's root: bits ROOT_SHIFT.. of an inline word (whose size
 * is below 2^ROOT_SHIFT, the inline room) and of a control line's `flags`, and a CMA
 * descriptor's `root`. A receiver that passed another root (an erroneous program) would
 * otherwise forward to the children and read from the source of its own root's tree, that
 * is, leave members waiting and take another rank's stale data. Instead it follows the
 * root named (follow_root) like a receiver of another size, and fails. Ranks are named
 * modulo 2^ROOT_BITS: in a team of more members, roots 2^22 apart are not told apart. */
#define ROOT_SHIFT 40
#define ROOT_BITS 22
#define ROOT_MASK ((1ull << ROOT_BITS) - 1)
#define INL_SIZE_MASK ((1ull << ROOT_SHIFT) - 1)
#define SEL_CLASSES 48      /* the copy-mode selector's log2 size classes (sel_of) */
#define FLAGS_MASK 0x1ffull /* the NT_* and OPF_* bits of a control line's `flags` */
static inline uint64_t root_bits(int root)
{
    return ((uint64_t)root & ROOT_MASK) << ROOT_SHIFT;
}
static inline int root_of(uint64_t w)
{
    return (int)((w >> ROOT_SHIFT) & ROOT_MASK);
}
/* whether the root named in @p w (root_bits) is @p root */
static inline int names_root(uint64_t w, int root)
{
    return root_of(w) == root_of(root_bits(root));
}

/* Per root, for this process: where to wait, whom to notify, where to read. */
typedef struct tree_cache {
    int built, fanout;
    int *parent;      /* [root] */
    int *source;      /* [root] data source with relay (holder of the nearest copy) */
    char *holds_copy; /* [root] 1 if I keep a relay copy in my own queue */
    int *child_off;   /* [root] offsets into children (P + 1 entries) */
    int *children;    /* the children of every root, in rotated order from the root */
} tree_cache_t;

/* the optional cache hints of inl_put (per team: hot_line_t.hints; per call: call_t.hints) */
#define HINT_DEMOTE 1u   /* NUMACOLL_BCAST_DEMOTE */
#define HINT_PREFETCH 2u /* NUMACOLL_BCAST_PREFETCH */
static inline unsigned hints_of(int demote, int prefetch)
{
    return (demote ? HINT_DEMOTE : 0u) | (prefetch ? HINT_PREFETCH : 0u);
}

/* The local state of the default small-message call (nc_bcast_run -> run_hot), packed
 * into one cache line at the start of the line-aligned bcast_t. The general path touches
 * about a dozen lines of local state per call (team, options, tree arrays, ack cache);
 * measured at np = 2 (MPI harness, 1 B), the root spent 7-25 ns more than a hand-written
 * inline broadcast in the same run, the most when another tenant of the VM's host evicts
 * our lines. The cached child list is the default tree's for one root (the last one).
 * What is left against the bench's limit:inline is the call's own work, not the memory:
 * limit:inline's code run on this segment's blocks cost the same as on its MPI window,
 * while numacoll_bcast stayed 4-24 % above it at 1-512 B; taking out the root's own ack,
 * the diagnostics' entry/exit stamps, the size/root word check, the two-part copy or the
 * yielding wait each changed that by no more than the launch-to-launch noise, and all of
 * them together left it 6-14 % above (Open MPI, np = 2, 3-8 launches per setting). */
#define HOT_KIDS 2
typedef struct hot {
    uint64_t op;                /* ops done so far (identical on all members) */
    uint64_t acks_min;          /* every other member's ack is >= acks_min (a lower bound) */
    char *my_area;              /* this process's area (its ack line first) */
    char *kid_blocks[HOT_KIDS]; /* inline block 0 of each child of kids_root (default tree) */
    uint32_t blocks_off;        /* offset of inline block 0 in a process's area */
    uint32_t block_bytes;       /* bytes per inline block */
    uint32_t fast_limit;        /* messages of 0 .. fast_limit - 1 bytes take this path (0: off) */
    int16_t kids_root;          /* root that kid_blocks[] belongs to (-1: none cached) */
    int16_t nkids;
    uint16_t head_bytes; /* payload bytes that share the stamp's line */
    uint8_t hints;       /* HINT_* in effect (inl_put) */
} hot_line_t;
_Static_assert(sizeof(hot_line_t) <= 64, "the hot state must fit one cache line");

struct nc_bcast_team {
    hot_line_t hot; /* first: line-aligned (see bcast_init) */
    nc_seg_t seg;
    size_t fragment_bytes;     /* f in the paper: bytes per queue slot */
    size_t slots;              /* s in the paper: slots of a process's queue */
    size_t sets;               /* q in the paper: the queue's sets, s / q slots each */
    size_t slots_per_set;      /* s / q */
    size_t queue_bytes;        /* b = s f in the paper: bytes of a process's queue */
    size_t inline_room;        /* payload bytes of an inline block */
    size_t inline_block_bytes; /* bytes per inline block (header and room, whole lines) */
    size_t ctl_area_bytes;     /* a process's control area (ack line to report words, pages) */
    size_t proc_area_bytes;    /* a process's area: control area and queue */
    size_t global_area_bytes;  /* the global area: leaders, the sets' op words */
    size_t paper_seg_bytes;    /* the paper's segment size w + w q + p s (w + f) (the log) */
    size_t set_words_off;      /* offset of the sets' op words in the global area (set_op_word) */
    int fragment_fixed;        /* f set explicitly: no per-message fragment adaptation */
    int tree_kind, fanout;     /* the team's tree (nc_bcast_tree_kind_t) and its fan-out k */
    int relay, cma_permitted;
    int demote;   /* NUMACOLL_BCAST_DEMOTE in effect: demote inline payload lines (inl_put) */
    int prefetch; /* NUMACOLL_BCAST_PREFETCH: write-prefetch inline payload lines (inl_put) */
    size_t inline_max, cma_min;
    size_t inline_limit; /* inline_max clamped to inline_room: the default call's limit */
    char *global_area, *proc_areas;
    int32_t *numa_leaders;  /* [P] in the global area (informational) */
    int *numa_of;           /* [P] NUMA node per rank (-1 unknown) */
    uint64_t *acks_seen;    /* [P] highest ack seen per rank (local cache) */
    int trace;              /* NUMACOLL_VERBOSE >= 3 at creation (per-call tracing) */
    size_t stream_root_min; /* NUMACOLL_BCAST_STREAM_MIN: the root streams into its queue (0 =
                               never) */
    size_t stream_recv_min; /* NUMACOLL_BCAST_STREAM_OUT_MIN: receivers stream out (0 = never) */
    int rotate;             /* rotate an op's data through its set (frag_buf) */
    int adapt;              /* choose the copy mode per size class from timed probes (sel) */
    int check;              /* NUMACOLL_BCAST_CHECK: compare the arguments first (check.c) */
    uint64_t checks_done;   /* checked calls so far (identical on all members) */
    struct sel {            /* per log2 size class, on the root side only (local state) */
        double samples[NC_BCAST_SEL_MODES][4]; /* last 4 samples (ns per byte) of each mode */
        uint32_t nsamples[NC_BCAST_SEL_MODES]; /* samples per mode (modes: flags_of_mode) */
        uint32_t runs[NC_BCAST_SEL_MODES];     /* measured runs started per mode */
        uint64_t calls;
        int best_mode, next_cand; /* the mode in use; where exploration goes on in the cands */
        int run_mode, run_pos, run_len, run_unmeasured; /* a measured run: its mode, calls
                                                         * done, length, unmeasured calls first */
        int due_mode;         /* 1 + a mode whose run was due while another class's run was
                               * open: start it next (0: none) */
        uint32_t quiet_calls; /* calls of the best not to measure (they pay an exploration's
                               * debts) */
    } sel_classes[SEL_CLASSES];
    int open_run_class; /* the size class whose measured run is open (-1: none; one at a time, since
                         * a receiver keeps one sum per root), opened at selection call open_run_at
                         */
    uint64_t open_run_at, sel_calls; /* sel_calls: calls that chose a mode (every class) */
    uint64_t sel_runs_lost;          /* runs whose sample a receiver's count voided */
    struct {                         /* the open run's measured calls so far, the root's side */
        double ns, bytes;
        uint32_t calls;
        int size_class, mixed; /* the run's class; a measured call of another class came in */
    } root_run;
    struct recv_run { /* a receiver, per root: its sum over the measured calls of the root's
                       * current run, their count, and whether the root announced a run
                       * (OPF_RUN_ARM) that has not ended (the calls to time) */
        uint64_t ns;
        uint32_t calls;
        int armed;
    } *recv_runs;      /* [P] */
    size_t report_off; /* offset of the report words in a process's area (report_word) */
    struct { /* the last mismatch of this receiver, until nc_bcast_last_mismatch reads it */
        int valid, mark, root;
        size_t sent;
        uint64_t head;
    } mismatch;
    struct { /* the last complete measured run, until every receiver's report is in */
        int valid, mode;
        size_t bytes;     /* a message size of the run's class */
        uint64_t tag;     /* the op count after the run's last call (identical on every member) */
        uint32_t calls;   /* measured calls in the run */
        double root_ns;   /* the root's own time in them */
        double sum_bytes; /* their bytes */
    } pending_run;
    int group_levels;
    int *group_of; /* [group_levels * P] for the topology tree */
    tree_cache_t trees[NC_BTREE_COUNT];
    nc_bcast_model_t model;
    int t_measured, tw_measured; /* where the model's t / t_W came from (model_src) */
    size_t *populated; /* [q] bytes from the start of my queue's set that have their memory
                        * (the whole set unless lazy); ops use their set from its start up,
                        * rotating (frag_buf), so a high-water mark describes it */
};

typedef struct nc_bcast_team bcast_t;

static volatile uint64_t cma_probe_word = CMA_MAGIC;

/* ---- layout helpers ---------------------------------------------------------------- */

static inline _Atomic uint64_t *set_op_word(bcast_t *b, size_t set)
{
    return (_Atomic uint64_t *)(b->global_area + b->set_words_off + set * nc_page_size());
}
static inline char *proc_area(bcast_t *b, int r)
{
    return b->proc_areas + (size_t)r * b->proc_area_bytes;
}
static inline _Atomic uint64_t *ack_word(bcast_t *b, int r)
{
    return (_Atomic uint64_t *)proc_area(b, r);
}
/* word 1 of r's ack line, the CMA guard (root_cma, cma_guarded_read): op + 1 of the CMA op
 * whose root's buffer receiver r reads, or CMA_ABANDONED | (op + 1) of the CMA op root r
 * returned from before its receivers were done. Single writer r. */
static inline _Atomic uint64_t *cma_guard(bcast_t *b, int r)
{
    return (_Atomic uint64_t *)proc_area(b, r) + 1;
}
#define CMA_ABANDONED (1ull << 63)
/* a report word (report_word): (ns << REPORT_NS_SHIFT) | (calls << REPORT_TAG_BITS) | (tag &
 * REPORT_TAG_MASK): the receiver's summed time (ns, saturating at 32 bits) over the calls of a
 * measured run, their number and the run's last call's tag, one atomic word so that the
 * root never pairs a time with another run's tag or count */
#define REPORT_TAG_BITS 24
#define REPORT_TAG_MASK ((1ull << REPORT_TAG_BITS) - 1)
#define REPORT_NS_SHIFT 32
#define REPORT_CALLS_MASK 0xffull
/* A queue message's flags (call_t.flags, a control line's `flags` below the root's bits):
 * the two copy-mode bits that choose non-temporal (streamed) stores, then the op flags
 * (OPF_*), all chosen by the root and forwarded down the tree as they are. */
#define NT_STREAM_ROOT 1 /* the root copies into its queue with non-temporal stores */
#define NT_STREAM_RECV 2 /* the receivers copy out of the queue with non-temporal stores */
#define OPF_REPORT 4     /* a measured call: receivers add their time in it to their sum */
#define OPF_NOSPACE 8    /* the root could not populate its queue; the call fails */
#define OPF_RUN_FIRST 16 /* the first measured call of a run: receivers start a new sum */
#define OPF_RUN_LAST 32  /* the last one: receivers publish their sum (report_word) */
/* the root's next call of this class starts a measured run: receivers time their calls
 * from the next one to the run's last */
#define OPF_RUN_ARM 64
/* a message of SPLIT_MIN+1 .. SPLIT_MAX bytes goes in the model's fragment, not split in two
 * (run_queue); the root's choice, which every member reads from the op's first control line */
#define OPF_WHOLE 128
/* this op's data start at the start of its set, not at a rotating offset (frag_buf); the
 * root's choice, read as OPF_WHOLE */
#define OPF_NOROT 256
/* The copy-mode selector's modes 0..NC_BCAST_SEL_MODES-1: bit 0 streamed root stores, bit 1
 * streamed receiver stores (NT_STREAM_ROOT, NT_STREAM_RECV), bit 2 OPF_WHOLE, bit 3
 * OPF_NOROT */
static inline int flags_of_mode(int m)
{
    return (m & (NT_STREAM_ROOT | NT_STREAM_RECV)) | (m & 4 ? OPF_WHOLE : 0) |
           (m & 8 ? OPF_NOROT : 0);
}
static inline int mode_of_flags(int flags)
{
    return (flags & (NT_STREAM_ROOT | NT_STREAM_RECV)) | (flags & OPF_WHOLE ? 4 : 0) |
           (flags & OPF_NOROT ? 8 : 0);
}
static inline uint64_t report_tag(uint64_t op) /* never 0, the word's initial value */
{
    return op % REPORT_TAG_MASK + 1;
}
/* receiver r's report word for root @p root: P words of r's control area after the inline
 * blocks, one per root, so that roots measuring runs at the same time do not overwrite
 * each other's reports */
static inline _Atomic uint64_t *report_word(bcast_t *b, int r, int root)
{
    return (_Atomic uint64_t *)(proc_area(b, r) + b->report_off) + root;
}
static inline ctl_line_t *ctl_line(bcast_t *b, numacoll_team_t *t, int r, size_t slot)
{
    return (ctl_line_t *)(proc_area(b, r) + (1 + slot) * t->line);
}
static inline char *inl_block(bcast_t *b, numacoll_team_t *t, int r, size_t set)
{
    return proc_area(b, r) + (1 + b->slots) * t->line + set * b->inline_block_bytes;
}
static inline char *slot_buf(bcast_t *b, int r, size_t slot)
{
    return proc_area(b, r) + b->ctl_area_bytes + slot * b->fragment_bytes;
}
/* Data of fragment i of an op on @p set whose fragments take @p span bytes in all: the op
 * may use any part of its set (the whole set is reserved for it), so successive uses of a
 * set start at rotating offsets and a small message does not rewrite the same lines every
 * q ops (lines the receivers still hold in their caches, which the root would have to
 * invalidate on every write). Identical on all members (function of op only). */
static inline char *frag_buf(bcast_t *b, int rot, int r, size_t set, uint64_t op, size_t span,
                             size_t fe, size_t i)
{
    size_t set_bytes = b->slots_per_set * b->fragment_bytes;
    size_t npos = rot && span ? set_bytes / span : 1;
    size_t pos = npos > 1 ? (size_t)((op / b->sets) % npos) : 0;
    return slot_buf(b, r, set * b->slots_per_set) + pos * span + i * fe;
}

/* ---- waits --------------------------------------------------------------------------- */

/* The fast check and the wait policy's spin phase (spin_limit pauses, none when
 * oversubscribed) on @p p as a bare loop, nc_wait_t set up only after it (with inl_take's
 * length from `bytes`, 128 B went from 1.24x to 1.16x of limit:inline, A/B over 6 launches
 * each): 1 if @p p showed @p want. Its loop is that of its callers' waits. */
static inline int spin_stamp(numacoll_team_t *t, _Atomic uint64_t *p, uint64_t want)
{
    if (NC_LIKELY(atomic_load_explicit(p, memory_order_acquire) >= want)) return 1;
    uint32_t spins = t->spin_limit;
    for (uint32_t i = 0; i < spins; i++) {
        nc_cpu_relax();
        if (atomic_load_explicit(p, memory_order_acquire) >= want) return 1;
    }
    return 0;
}

/* The yielding phase after spin_stamp: until @p p, or @p alt if not NULL (then *in_alt =
 * 1), shows @p want. */
static int wait_yield(numacoll_team_t *t, _Atomic uint64_t *p, _Atomic uint64_t *alt, uint64_t want,
                      int *in_alt)
{
    nc_wait_t w;
    nc_wait_init(&w, t, "bcast");
    w.iter = w.spin_limit; /* spun already: on to yielding */
    /* Wait loop: see the callers' (wait_stamp, wait_first) for who writes p and alt */
    for (;;) {
        if (atomic_load_explicit(p, memory_order_acquire) >= want) return NUMACOLL_OK;
        if (alt && atomic_load_explicit(alt, memory_order_acquire) >= want) {
            *in_alt = 1;
            return NUMACOLL_OK;
        }
        int rc = nc_wait_step(&w);
        if (rc) return rc;
    }
}

static int wait_stamp(numacoll_team_t *t, _Atomic uint64_t *p, uint64_t want)
{
    /* Wait loop: the only writer is this op's parent of ours in the tree; it stores the
     * stamp with release after the size and payload (and after the data it forwards were
     * written by it or by its own parent). After the acquire load shows `want`, the size,
     * the payload and the fragment in the source's slot are visible to us. */
    if (spin_stamp(t, p, want)) return NUMACOLL_OK;
    return wait_yield(t, p, NULL, want, NULL);
}

/* wait_first's yielding phase, on both lines of op @p op (out of line: the hot path's code
 * stays small, and the control line's address costs a division). */
static __attribute__((noinline)) int wait_both(numacoll_team_t *t, bcast_t *b, int p_is_blk,
                                               uint64_t op, int *in_alt)
{
    _Atomic uint64_t *blk = (_Atomic uint64_t *)inl_block(b, t, t->rank, op % INLINE_BLOCKS);
    _Atomic uint64_t *ctl = &ctl_line(b, t, t->rank, (op % b->sets) * b->slots_per_set)->stamp;
    return wait_yield(t, p_is_blk ? blk : ctl, p_is_blk ? ctl : blk, op + 1, in_alt);
}

/* A receiver's wait for the first notification of op @p op at @p p: its inline block of
 * the op (@p p_is_blk) or the control line of the op's first slot; past the spin phase on
 * both lines (see KIND_CMA), *in_alt = 1 if the other one came.
 * Wait loop: p and the other line are two lines of ours that only this op's parent writes
 * (an inline block and the control line of the op's first slot), each with release after
 * what it publishes (payload, word, size, total), so an acquire load that shows op + 1
 * makes that visible. Which of the two it writes depends on the root's path. */
static inline int wait_first(numacoll_team_t *t, bcast_t *b, _Atomic uint64_t *p, int p_is_blk,
                             uint64_t op, int *in_alt)
{
    *in_alt = 0;
    if (spin_stamp(t, p, op + 1)) return NUMACOLL_OK;
    return wait_both(t, b, p_is_blk, op, in_alt);
}

/* Wait until member @p r has finished the ops before @p need (ack >= need). */
static int wait_ack_of(numacoll_team_t *t, bcast_t *b, int r, uint64_t need)
{
    if (b->acks_seen[r] >= need) return NUMACOLL_OK;
    _Atomic uint64_t *p = ack_word(b, r);
    uint64_t v = atomic_load_explicit(p, memory_order_acquire);
    if (v < need) {
        /* Wait loop: the only writer of r's ack line is r, which stores op + 1 with
         * release after its last read of op's slots and blocks. Once the acquire load
         * shows >= need, r has finished every op before `need` and we may overwrite
         * what those ops read. */
        nc_wait_t w;
        nc_wait_init(&w, t, "bcast");
        while ((v = atomic_load_explicit(p, memory_order_acquire)) < need) {
            int rc = nc_wait_step(&w);
            if (rc) return rc;
        }
    }
    b->acks_seen[r] = v;
    return NUMACOLL_OK;
}

/* Wait until every other member below @p upto has finished the ops before @p need. */
static int wait_acks_upto(numacoll_team_t *t, bcast_t *b, uint64_t need, int upto)
{
    for (int r = 0; r < upto; r++) {
        if (r == t->rank) continue;
        int rc = wait_ack_of(t, b, r, need);
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

static int wait_acks(numacoll_team_t *t, bcast_t *b, uint64_t need)
{
    return wait_acks_upto(t, b, need, t->size);
}

/* Before reusing what op - lag used: every member must have finished op - lag. */
static inline int wait_reuse(numacoll_team_t *t, bcast_t *b, uint64_t op, uint64_t lag)
{
    return op >= lag ? wait_acks(t, b, op - lag + 1) : NUMACOLL_OK;
}

static inline void post_ack(bcast_t *b, int me, uint64_t op)
{
    /* release: all our reads (and writes) of op happen before a root sees the ack */
    atomic_store_explicit(ack_word(b, me), op + 1, memory_order_release);
}

/* ---- trees --------------------------------------------------------------------------- */

static void tree_free(tree_cache_t *c)
{
    free(c->parent), free(c->source), free(c->holds_copy), free(c->child_off), free(c->children);
    memset(c, 0, sizeof *c);
}

static int tree_build(numacoll_team_t *t, bcast_t *b, int kind, int k)
{
    tree_cache_t *c = &b->trees[kind];
    if (c->built && c->fanout == k) return NUMACOLL_OK;
    if (kind == b->tree_kind) b->hot.kids_root = -1; /* its child list may change */
    tree_free(c);
    int P = t->size, me = t->rank;
    int *par = malloc((size_t)P * sizeof *par);
    int *H = malloc((size_t)P * sizeof *H); /* nearest holder at or above each rank */
    int *nch = malloc((size_t)P * sizeof *nch);
    int *stack = malloc((size_t)P * sizeof *stack);
    c->parent = malloc((size_t)P * sizeof *c->parent);
    c->source = malloc((size_t)P * sizeof *c->source);
    c->holds_copy = calloc((size_t)P, 1);
    c->child_off = calloc((size_t)P + 1, sizeof *c->child_off);
    size_t cap = (size_t)P, n = 0;
    c->children = malloc(cap * sizeof *c->children);
    int rc = NUMACOLL_OK;
    if (!par || !H || !nch || !stack || !c->parent || !c->source || !c->holds_copy ||
        !c->child_off || !c->children) {
        rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory building the broadcast trees");
        goto out;
    }
    for (int root = 0; root < P; root++) {
        nc_bcast_tree_parents(kind, P, root, k, b->group_levels, b->group_of, par);
        c->parent[root] = par[me];
        c->child_off[root] = (int)n;
        for (int i = 1; i < P; i++) { /* children in rotated order from the root */
            int r = (root + i) % P;
            if (par[r] != me) continue;
            if (n == cap) {
                int *nc2 = realloc(c->children, 2 * cap * sizeof *nc2);
                if (!nc2) {
                    rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory building the trees");
                    goto out;
                }
                c->children = nc2, cap *= 2;
            }
            c->children[n++] = r;
        }
        /* relay holders: a rank keeps a copy if it has children and lies on another NUMA
         * node than the copy it reads from */
        memset(nch, 0, (size_t)P * sizeof *nch);
        for (int r = 0; r < P; r++)
            if (par[r] >= 0) nch[par[r]]++;
        for (int r = 0; r < P; r++)
            H[r] = -2; /* unknown */
        H[root] = root;
        for (int r = 0; r < P; r++) {
            int top = 0, y = r;
            while (H[y] == -2)
                stack[top++] = y, y = par[y]; /* up to a resolved rank */
            while (top > 0) {                 /* resolve the path top-down */
                int z = stack[--top], from = H[par[z]];
                int nz = b->numa_of[z], nf = b->numa_of[from];
                H[z] = (nch[z] > 0 && nz >= 0 && nf >= 0 && nz != nf) ? z : from;
            }
        }
        c->source[root] = me == root ? root : H[par[me]];
        c->holds_copy[root] = (char)(me != root && H[me] == me);
    }
    c->child_off[P] = (int)n;
    c->built = 1;
    c->fanout = k;
out:
    free(par), free(H), free(nch), free(stack);
    if (rc) tree_free(c);
    return rc;
}

/* ---- state creation ------------------------------------------------------------------ */

typedef struct init_msg {
    uint64_t f, s, q, room, inline_max, cma_min;
    uint64_t shm_free;
    int32_t tree, k, relay, pid, rotate, check;
    uint64_t probe_addr;
} init_msg_t;

static int cma_probe(const init_msg_t *peer)
{
    uint64_t v = 0;
    struct iovec l = {&v, sizeof v}, r = {(void *)(uintptr_t)peer->probe_addr, sizeof v};
    ssize_t n = process_vm_readv((pid_t)peer->pid, &l, 1, &r, 1, 0);
    if (n == (ssize_t)sizeof v && v == CMA_MAGIC) return 1;
    return 0;
}

/* ---- the model's constants (NUMACOLL_BCAST_MODEL_T / _TW) ------------------------------ */

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
static double median_small(double *v, size_t n)
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
 * per barrier, divided by the ceil(log2 P) notification rounds of a barrier. A mean over
 * all of them (the first version) carried the members' arrival skew after the set-up's
 * allgather and any preemption: 4x the fastest batch typically, and once 12.9 us instead
 * of ~0.24 us, which made f = 1.6 MB and s = 4. The median ignores up to 2 disturbed
 * batches. @p spread gets the fastest and slowest batch (log). Collective. */
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
    *tw = median_small(batch, BATCHES) / rounds; /* batch now ascending */
    spread[0] = batch[0] / rounds, spread[1] = batch[BATCHES - 1] / rounds;
    return rc;
}

static const char *const model_src[] = {"configured", "measured", "fallback"};

/* The model for this team: configured constants, or measured ones; every member adopts
 * rank 0's (the layout derived from them must be identical everywhere). Collective. */
static int model_init(numacoll_team_t *t, nc_bcast_model_t *md, int *t_meas, int *tw_meas)
{
    double t_cfg = nc_cfg_double("NUMACOLL_BCAST_MODEL_T") * 1e-9;
    double tw_cfg = nc_cfg_double("NUMACOLL_BCAST_MODEL_TW") * 1e-9;
    nc_bcast_model_t fb = nc_bcast_model_default();
    /* the branches below (barriers, an allgather) must be the same on every member: first
     * check that every member has the same settings, so that a mismatch is an error on all
     * of them instead of a hang */
    int P = t->size;
    double *all = malloc((size_t)P * 3 * sizeof(double));
    if (!all) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory measuring the bcast model");
    double mine[3] = {t_cfg, tw_cfg, t->oversubscribed};
    if (t->allgather(mine, all, sizeof mine, t->oob_ctx) != 0) {
        free(all);
        return nc_error(NUMACOLL_ERR_OOB, "the OOB allgather failed setting up the broadcast");
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
         * the scheduler, not a notification: at P = 8 on 2 CPUs it gave t_W = 2.2 us, hence
         * fragments of 644 KiB, and 64-128 KiB broadcasts took 1.07x Open MPI's time
         * instead of 0.57x. So the fallback constants, unless configured (plan.c). */
        nc_bcast_model_plan(t, md, t_meas, tw_meas);
        return NUMACOLL_OK;
    }
    double v[2] = {t_cfg, tw_cfg}, spread[2] = {0, 0}, tt = t_cfg, tw = tw_cfg;
    if (t_cfg <= 0 && t->rank == 0) v[0] = measure_t();
    /* A notification is a cache-line transfer plus a loop: tens of ns to a few us on any
     * machine. A median above TW_PLAUSIBLE means the batches were disturbed (once here:
     * 5.5 ms, all 5 batches, right after a build; f came out at 19 MB). Every member sees
     * rank 0's value after the allgather, so all take the same branch: measure again, at
     * most TW_TRIES times in all, then fall back (below). */
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
        if (t->allgather(v, all, sizeof v, t->oob_ctx) != 0) {
            free(all);
            return nc_error(NUMACOLL_ERR_OOB, "the OOB allgather failed setting up the broadcast");
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

static int bcast_init(numacoll_team_t *t)
{
    int P = t->size, rc = NUMACOLL_OK;
    size_t ps = nc_page_size(), line = t->line;
    bcast_t *b = aligned_alloc(64, nc_round_up(sizeof(bcast_t), 64)); /* hot line aligned */
    if (b) memset(b, 0, sizeof *b);
    init_msg_t *all = calloc((size_t)P, sizeof *all);
    if (!b || !all) {
        free(b), free(all);
        rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory creating the broadcast state");
        return nc_agree(t->rank, P, t->allgather, t->oob_ctx, rc);
    }
    rc = model_init(t, &b->model, &b->t_measured, &b->tw_measured);
    if (rc) {
        free(b), free(all);
        return rc;
    }
    /* the parameters from the configuration and the team (plan.c) */
    nc_bcast_plan_t pl;
    rc = nc_bcast_plan_params(t, &b->model, &pl);
    b->stream_root_min = pl.nt_min, b->stream_recv_min = pl.nt_out_min;
    b->rotate = pl.rotate, b->adapt = pl.adapt, b->check = pl.check;
    b->open_run_class = -1;       /* no measured run open */
    b->trace = nc_verbose() >= 3; /* read once: the config lookup is too slow per call */
    b->fragment_fixed = pl.fixed_f;
    size_t f = pl.f, s = pl.s, q = pl.q;
    int s_auto = pl.s_auto;
    b->tree_kind = pl.tree, b->fanout = pl.k, b->relay = pl.relay;
    b->inline_max = pl.inline_max;
    b->demote = nc_cfg_bool("NUMACOLL_BCAST_DEMOTE");
    if (b->demote && !nc_cpu_has_demote()) {
        b->demote = 0; /* the hint would run as a NOP: save the instructions */
        if (t->rank == 0)
            nc_log(1, t->rank, P,
                   "bcast: NUMACOLL_BCAST_DEMOTE=1 has no effect: this CPU has no CLDEMOTE");
    }
    b->prefetch = nc_cfg_bool("NUMACOLL_BCAST_PREFETCH");
    b->cma_min = pl.cma_min;
    b->inline_block_bytes = pl.inl_block, b->inline_room = pl.room, b->inline_limit = pl.inl_fast;

    init_msg_t me = {.f = f,
                     .s = s,
                     .q = q,
                     .room = b->inline_room,
                     .inline_max = b->inline_max,
                     .cma_min = b->cma_min,
                     .shm_free = nc_shm_free_bytes(),
                     .tree = b->tree_kind,
                     .k = b->fanout,
                     .relay = b->relay,
                     .rotate = b->rotate,
                     .check = b->check,
                     .pid = (int32_t)getpid(),
                     .probe_addr = (uint64_t)(uintptr_t)&cma_probe_word};
    if (t->allgather(&me, all, sizeof me, t->oob_ctx) != 0) {
        free(b), free(all);
        return nc_error(NUMACOLL_ERR_OOB, "the OOB allgather failed setting up the broadcast");
    }
    size_t shm_free = me.shm_free;
    for (int r = 0; r < P && rc == NUMACOLL_OK; r++) {
        const init_msg_t *o = &all[r];
        if (o->f != f || o->s != s || o->q != q || o->room != b->inline_room ||
            o->inline_max != b->inline_max || o->cma_min != b->cma_min || o->tree != b->tree_kind ||
            o->k != b->fanout || o->relay != b->relay || o->rotate != b->rotate ||
            o->check != b->check)
            rc = nc_error(NUMACOLL_ERR_CONFIG,
                          "broadcast parameters differ between ranks %d and %d (f %zu/%llu, s "
                          "%zu/%llu, q %zu/%llu, tree %d/%d, check %d/%d, ...); every member "
                          "must see the same NUMACOLL_BCAST_* settings",
                          t->rank, r, f, (unsigned long long)o->f, s, (unsigned long long)o->s, q,
                          (unsigned long long)o->q, b->tree_kind, o->tree, b->check, o->check);
        if (o->shm_free < shm_free) shm_free = o->shm_free;
    }
    int cma_mine = rc == NUMACOLL_OK && cma_probe(&all[(t->rank + 1) % P]);
    if (!cma_mine && b->cma_min)
        nc_log(1, t->rank, P,
               "bcast: process_vm_readv from rank %d failed (%s); the CMA path "
               "is off, large messages use the queues",
               (t->rank + 1) % P, strerror(errno));

    /* geometry, capped so that the P queues take at most half of the free /dev/shm */
    size_t rep_bytes = nc_round_up((size_t)P * sizeof(uint64_t), line); /* report_word */
    b->ctl_area_bytes =
        nc_round_up((1 + s) * line + INLINE_BLOCKS * b->inline_block_bytes + rep_bytes, ps);
    b->proc_area_bytes = b->ctl_area_bytes + s * f;
    if (rc == NUMACOLL_OK && s_auto && (double)P * b->proc_area_bytes > shm_free / 2.0) {
        size_t per = shm_free / 2 / (size_t)P;
        size_t s2 = per > b->ctl_area_bytes ? (per - b->ctl_area_bytes) / f : 0;
        if (s2 < q) s2 = q;
        nc_log(1, t->rank, P,
               "bcast: /dev/shm has %zu bytes free: queue cut from %zu to %zu "
               "slots",
               shm_free, s, s2);
        s = s2;
        b->ctl_area_bytes =
            nc_round_up((1 + s) * line + INLINE_BLOCKS * b->inline_block_bytes + rep_bytes, ps);
        b->proc_area_bytes = b->ctl_area_bytes + s * f;
    }
    b->fragment_bytes = f, b->slots = s, b->sets = q, b->slots_per_set = s / q,
    b->queue_bytes = s * f;
    b->report_off =
        (1 + s) * line + INLINE_BLOCKS * b->inline_block_bytes; /* line-aligned: both terms are */
    b->set_words_off = nc_round_up((size_t)P * sizeof(int32_t), ps);
    b->global_area_bytes = b->set_words_off + q * ps;
    size_t total = b->global_area_bytes + (size_t)P * b->proc_area_bytes;
    b->paper_seg_bytes = ps + ps * q + (size_t)P * s * (ps + f);

    /* NUMA nodes and the hierarchy for the topology tree */
    b->numa_of = malloc((size_t)P * sizeof *b->numa_of);
    b->acks_seen = calloc((size_t)P, sizeof *b->acks_seen);
    b->recv_runs = calloc((size_t)P, sizeof *b->recv_runs);
    if ((!b->numa_of || !b->acks_seen || !b->recv_runs) && rc == NUMACOLL_OK)
        rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    if (b->numa_of)
        for (int r = 0; r < P; r++)
            b->numa_of[r] = nc_topo_team_numa_of(t, r);
    const int *groups;
    int group_levels = nc_bcast_tree_groups(t, &groups); /* plan.c */
    if (group_levels > 0 && rc == NUMACOLL_OK) {
        b->group_of = malloc((size_t)group_levels * P * sizeof *b->group_of);
        if (b->group_of) {
            memcpy(b->group_of, groups, (size_t)group_levels * P * sizeof *b->group_of);
            b->group_levels = group_levels;
        }
    }

    /* agree on the parameters and on CMA (AND over the members) */
    rc = nc_agree(t->rank, P, t->allgather, t->oob_ctx, rc);
    if (rc == NUMACOLL_OK) {
        int32_t mine = cma_mine, *cmas = (int32_t *)all; /* reuse: P * 4 <= P * sizeof */
        if (t->allgather(&mine, cmas, sizeof mine, t->oob_ctx) != 0)
            rc = nc_error(NUMACOLL_ERR_OOB, "the OOB allgather failed setting up the broadcast");
        b->cma_permitted = 1;
        for (int r = 0; r < P && rc == NUMACOLL_OK; r++)
            b->cma_permitted &= cmas[r] != 0;
    }
    free(all);
    /* a queue's memory at its owner's first write into each set (first-use), unless
     * configured otherwise, the kernel cannot populate without the risk of SIGBUS, or
     * relays write into their queues for other roots (a relay that failed would leave its
     * node without the data while the rest of the team returns success) */
    int lazy = strcmp(nc_cfg_str("NUMACOLL_BCAST_POPULATE"), "first-use") == 0 && !b->relay &&
               nc_seg_populate_supported();
    b->populated = malloc(q * sizeof *b->populated);
    if (!b->populated && rc == NUMACOLL_OK) rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    for (size_t i = 0; b->populated && i < q; i++)
        b->populated[i] = lazy ? 0 : b->slots_per_set * b->fragment_bytes;
    if (rc == NUMACOLL_OK)
        rc = nc_seg_create_collective(
            t->rank, P, t->allgather, t->oob_ctx, total, b->global_area_bytes,
            b->global_area_bytes + (size_t)t->rank * b->proc_area_bytes, b->proc_area_bytes,
            lazy ? b->ctl_area_bytes : b->proc_area_bytes, t->numa_node, "the broadcast queues",
            &b->seg);
    if (rc != NUMACOLL_OK) {
        free(b->numa_of), free(b->acks_seen), free(b->recv_runs), free(b->group_of),
            free(b->populated), free(b);
        return rc;
    }
    b->global_area = b->seg.base;
    b->proc_areas = b->global_area + b->global_area_bytes;
    b->hot = (hot_line_t){
        .my_area = proc_area(b, t->rank),
        .blocks_off = (uint32_t)((1 + b->slots) * line),
        .block_bytes = (uint32_t)b->inline_block_bytes,
        /* off when tracing or checking: the general path does both */
        .fast_limit = b->trace || b->check || P > INT16_MAX ? 0 : (uint32_t)b->inline_limit + 1,
        .kids_root = -1,
        .head_bytes = (uint16_t)(line - INL_HDR),
        .hints = (uint8_t)hints_of(b->demote, b->prefetch)};
    b->numa_leaders = (int32_t *)b->global_area;
    if (t->rank == 0) /* informational: the NUMA leader (lowest rank of its node) */
        for (int r = 0; r < P; r++) {
            int l = r;
            for (int x = 0; x < r; x++)
                if (b->numa_of[x] == b->numa_of[r]) {
                    l = x;
                    break;
                }
            b->numa_leaders[r] = l;
        }
    t->bcast = b;

    if (t->rank == 0 || nc_verbose() >= 3)
        nc_log(1, t->rank, P,
               "bcast: segment %zu bytes (paper's w + wq + ps(w+f) = %zu), f = %zu%s, s = %zu, "
               "q = %zu, queue b = %zu per process (model: t = %.4f ns/byte %s, t_W = %.1f ns "
               "%s), inline <= %zu (room %zu, cache hint %s, write prefetch %s), tree %s (k %d), "
               "relay %s, CMA %s, streamed copies from %zu (root) / %zu (receivers) bytes "
               "(0 = never), queue memory at %s",
               total, b->paper_seg_bytes, f, b->fragment_fixed ? "" : " (model)", s, q,
               b->queue_bytes, b->model.t * 1e9, model_src[b->t_measured], b->model.t_w * 1e9,
               model_src[b->tw_measured], b->inline_max, b->inline_room, b->demote ? "on" : "off",
               b->prefetch ? "on" : "off", nc_bcast_tree_names[b->tree_kind], b->fanout,
               b->relay ? "on" : "off",
               !b->cma_permitted ? "not permitted"
               : b->cma_min      ? "on"
                                 : "off",
               b->stream_root_min, b->stream_recv_min, lazy ? "first use" : "creation");
    if (nc_verbose() >= 2) {
        size_t on = 0, off = 0;
        size_t n = lazy ? b->ctl_area_bytes : b->proc_area_bytes;
        int node = nc_seg_check_placement(proc_area(b, t->rank), n, t->numa_node, &on, &off);
        nc_log(2, t->rank, P,
               "bcast: my %s (%zu bytes) lies on NUMA node %d (expected %d: %zu pages "
               "there, %zu elsewhere)%s",
               lazy ? "control block" : "queue", n, node, t->numa_node, on, off,
               lazy ? "; the queue's sets get their memory at first use" : "");
    }
    return NUMACOLL_OK;
}

static void sel_log(numacoll_team_t *t, bcast_t *b);

void nc_bcast_team_fini(numacoll_team_t *t)
{
    bcast_t *b = t ? t->bcast : NULL;
    if (!b) return;
    if (b->adapt && nc_verbose() >= 2) sel_log(t, b);
    for (int i = 0; i < NC_BTREE_COUNT; i++)
        tree_free(&b->trees[i]);
    nc_seg_destroy(&b->seg);
    free(b->numa_of), free(b->acks_seen), free(b->recv_runs), free(b->group_of), free(b->populated),
        free(b);
    t->bcast = NULL;
}

size_t nc_bcast_team_queue_bytes(const numacoll_team_t *t)
{
    const bcast_t *b = t ? t->bcast : NULL;
    size_t n = 0;
    for (size_t i = 0; b && i < b->sets; i++)
        n += b->populated[i];
    return n;
}

int nc_bcast_info(numacoll_team_t *t, nc_bcast_info_t *info)
{
    if (!t->bcast) {
        int rc = bcast_init(t);
        if (rc) return rc;
    }
    bcast_t *b = t->bcast;
    *info = (nc_bcast_info_t){.f = b->fragment_bytes,
                              .s = b->slots,
                              .q = b->sets,
                              .b = b->queue_bytes,
                              .inline_room = b->inline_room,
                              .seg_size = b->seg.size,
                              .paper_size = b->paper_seg_bytes,
                              .tree = b->tree_kind,
                              .k = b->fanout,
                              .relay = b->relay,
                              .cma_ok = b->cma_permitted,
                              .cma_min = b->cma_min,
                              .model = b->model,
                              .t_measured = b->t_measured,
                              .tw_measured = b->tw_measured};
    return NUMACOLL_OK;
}

int nc_bcast_debug_set_numa(numacoll_team_t *t, const int *numa)
{
    if (!t->bcast) {
        int rc = bcast_init(t);
        if (rc) return rc;
    }
    bcast_t *b = t->bcast;
    memcpy(b->numa_of, numa, (size_t)t->size * sizeof *numa);
    for (int i = 0; i < NC_BTREE_COUNT; i++)
        tree_free(&b->trees[i]);
    return NUMACOLL_OK;
}

/* ---- the three paths ------------------------------------------------------------------ */

typedef struct call {
    numacoll_team_t *t;
    bcast_t *b;
    tree_cache_t *tree; /* the call's tree */
    int root, me, P, relay;
    int flags; /* the message's copy mode and op flags (NT_*, OPF_*; the root's, on a receiver
                * once it has read them) */
    int rotate, mark;
    unsigned hints; /* HINT_* for inl_put */
    const int *kids;
    int nkids;
    uint64_t t_enter; /* when this member entered the call (0: not timed) */
    size_t msg_bytes; /* queue path: the root's message size (the fragments' geometry) */
} call_t;

/* memcpy for the inline path: up to 16 bytes as two possibly overlapping fixed-size moves
 * (a handful of instructions instead of a call into libc), larger sizes through memcpy */
static inline void small_copy(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    if (n >= 8 && n <= 16) {
        uint64_t a, z;
        __builtin_memcpy(&a, s, 8);
        __builtin_memcpy(&z, s + n - 8, 8);
        __builtin_memcpy(d, &a, 8);
        __builtin_memcpy(d + n - 8, &z, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, z;
        __builtin_memcpy(&a, s, 4);
        __builtin_memcpy(&z, s + n - 4, 4);
        __builtin_memcpy(d, &a, 4);
        __builtin_memcpy(d + n - 4, &z, 4);
    } else if (n < 4) {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else {
        memcpy(d, s, n);
    }
}

/* CLDEMOTE every 64-byte line of [@p p, @p end) (p line-aligned), see inl_put */
static inline void nc_demote_range(const char *p, const char *end)
{
    for (; p < end; p += 64)
        nc_cache_demote(p);
}

/* PREFETCHW every 64-byte line of [@p p, @p end) (p line-aligned), see inl_put */
static inline void nc_prefetch_w_range(const char *p, const char *end)
{
    for (; p < end; p += 64)
        nc_prefetch_w(p);
}

/* Copy a small payload into the inline block @p blk and publish it (the first @p head
 * payload bytes share the line of the stamp).
 *
 * Cache-line traffic: the child polls the block's first line (the stamp). Were that line
 * written first (payload head) and again last (size, stamp), a poll in between would pull
 * it over to the child and the root would have to take it back: two extra transfers of
 * the polled line per call. So the payload beyond the first line is written first, then
 * the payload head, the size and the stamp, all in the polled line, back to back: the line
 * moves once to the root and once back. The child never reads a torn payload: it reads the
 * payload only after its acquire load has seen this op's stamp, which the release store
 * below publishes after every payload byte; and nobody rewrites the block before the child
 * has acked this op (the root waits for the acks of op - INLINE_BLOCKS + 1 before reusing a
 * block, see root_inline), so the bytes stay as published while the child copies them.
 * Two optional hints (@p hints), neither of which changes a value anyone reads, so no
 * ordering argument depends on them:
 * - HINT_PREFETCH (NUMACOLL_BCAST_PREFETCH): the lines beyond the first are prefetched for
 *   writing before they are written. The child read them at the block's previous op, so
 *   they sit shared in its cache, and each store must first take its line back; the stores
 *   leave the store buffer in order, so those requests would go out one after another, and
 *   the stamp, stored last, would wait for all of them. Prefetched, they travel together.
 *   The polled first line is not prefetched: the child is usually polling it, and would
 *   pull it back before the stamp is written.
 * - HINT_DEMOTE (NUMACOLL_BCAST_DEMOTE): the lines beyond the first get a CLDEMOTE hint
 *   right after they are written, before the stamp: a child on another core then reads them
 *   from L3; the polled first line is left alone, as above. */
static inline void inl_put(char *blk, size_t head, const void *data, size_t n, uint64_t word,
                           uint64_t stamp, unsigned hints)
{
    /* head: payload bytes that share the stamp's line (line size - INL_HDR) */
    if (n > head) {
        char *tail = blk + INL_HDR + head, *end = blk + INL_HDR + n; /* beyond the first line */
        if (hints & HINT_PREFETCH) nc_prefetch_w_range(tail, end);
        memcpy(tail, (const char *)data + head, n - head);
        if (hints & HINT_DEMOTE) nc_demote_range(tail, end);
        memcpy(blk + INL_HDR, data, head);
    } else {
        small_copy(blk + INL_HDR, data, n);
    }
    ((uint64_t *)blk)[1] = word; /* n for an inline message, see KIND_CMA */
    /* release: payload and word before the stamp the child waits for */
    atomic_store_explicit((_Atomic uint64_t *)blk, stamp, memory_order_release);
}

/* Copy a small payload into each child's inline block of @p set and publish it. */
static void inl_forward(call_t *x, size_t set, const void *data, size_t n, uint64_t word,
                        uint64_t stamp)
{
    for (int i = 0; i < x->nkids; i++)
        inl_put(inl_block(x->b, x->t, x->kids[i], set), x->b->hot.head_bytes, data, n, word, stamp,
                x->hints);
}

/* The error of a receiver whose size @p cap differs from the root's @p sent, after it has
 * taken part in all of the root's ops (so the members' op counts stay equal and the next
 * broadcast works). */
static int size_error(int me, int root, size_t cap, size_t sent)
{
    return nc_error(NUMACOLL_ERR_ARG,
                    "bcast: rank %d expected %zu bytes and the root (rank %d) sent %zu: members "
                    "passed different sizes; this rank got the first %zu bytes, no more, and "
                    "took part in all of the root's broadcast (nobody waits for it)",
                    me, cap, root, sent, sent < cap ? sent : cap);
}

/* A receiver's end of an inline op, after forwarding: copy at most its own size out of
 * block @p blk, ack op (@p ack_line is its ack line), and report a size different from the
 * root's @p sent. Shared by recv_first and run_hot. */
static inline int inl_take(int me, int root, const char *blk, size_t sent, void *buf, size_t bytes,
                           char *ack_line, uint64_t op)
{
    /* the length from `bytes` when the sizes match: memcpy's tail loads are addressed from
     * the length, and with min(sent, bytes) they waited for the load of `sent` (see
     * spin_stamp for the measured effect of both changes) */
    if (NC_LIKELY(sent == bytes))
        small_copy(buf, blk + INL_HDR, bytes);
    else
        small_copy(buf, blk + INL_HDR, sent < bytes ? sent : bytes);
    /* release: all our reads of the block happen before a root sees the ack */
    atomic_store_explicit((_Atomic uint64_t *)ack_line, op + 1, memory_order_release);
    if (NC_UNLIKELY(sent != bytes)) return size_error(me, root, bytes, sent);
    return NUMACOLL_OK;
}

static int run_queue(call_t *x, char *buf, size_t bytes, size_t cap);
static int cma_guarded_read(call_t *x, const cma_desc_t *d, void *buf, size_t bytes, uint64_t op);

/* A receiver whose notification names root @p r, not the one it passed (ROOT_SHIFT): from
 * here on it is a receiver of @p r's broadcast (its children in @p r's tree; run_queue
 * takes the data source from x->root). */
static void follow_root(call_t *x, int r)
{
    x->root = r;
    x->kids = x->tree->children + x->tree->child_off[r];
    x->nkids = x->tree->child_off[r + 1] - x->tree->child_off[r];
}

/* A receiver's broadcast: wait for the first notification where our own size @p cap
 * expects it (@p in_blk: the inline block, for an inline or CMA broadcast; else the first
 * control line of a queue broadcast), or where the root's path put it (see KIND_CMA), and
 * follow the root's path: forward what the root sent, keep at most @p cap bytes, ack
 * every op, and report a size or mark that differs from the root's (kept in b->mismatch). */
static int recv_first(call_t *x, void *buf, size_t cap, int in_blk)
{
    bcast_t *b = x->b;
    uint64_t op = b->hot.op;
    char *blk = inl_block(b, x->t, x->me, op % INLINE_BLOCKS);
    ctl_line_t *cl = ctl_line(b, x->t, x->me, (op % b->sets) * b->slots_per_set);
    int alt, mark = 0, told = x->root;
    int rc = wait_first(x->t, b, in_blk ? (_Atomic uint64_t *)blk : &cl->stamp, in_blk, op, &alt);
    if (rc) return rc;
    size_t sent;
    uint64_t head = 0;
    if (!(in_blk ^ alt)) { /* the control line: a queue broadcast of the root's `msg_bytes` */
        sent = (size_t)cl->msg_bytes;
        if (NC_UNLIKELY(!names_root(cl->flags, told))) follow_root(x, root_of(cl->flags));
        /* the root's copy mode, OPF_WHOLE and OPF_NOROT included: run_queue's fragment
         * geometry and offsets depend on it (the acquire load of the stamp above makes the
         * root's mode visible) */
        x->flags = (int)(cl->flags & FLAGS_MASK);
        rc = run_queue(x, buf, sent, cap);
    } else {
        b->hot.op++;
        uint64_t word = ((const uint64_t *)blk)[1];
        size_t set = op % INLINE_BLOCKS;
        if (!(word & KIND_CMA)) { /* inline: forward what the root sent (subtree in step) */
            sent = (size_t)(word & INL_SIZE_MASK);
            if (NC_UNLIKELY(!names_root(word, told))) follow_root(x, root_of(word));
            size_t n = sent <= b->inline_room ? sent : b->inline_room;
            mark = (word & KIND_MARK) != 0;
            inl_forward(x, set, blk + INL_HDR, n, word, op + 1);
            memcpy(&head, blk + INL_HDR, n < sizeof head ? n : sizeof head); /* before the ack */
            rc = inl_take(x->me, x->root, blk, sent, buf, cap, (char *)ack_word(b, x->me), op);
        } else {
            sent = (size_t)(word & ~KIND_CMA);
            cma_desc_t d;
            memcpy(&d, blk + INL_HDR, sizeof d);
            if (NC_UNLIKELY(d.root != told)) follow_root(x, (int)d.root);
            inl_forward(x, set, &d, sizeof d, word, op + 1);
            rc = cma_guarded_read(x, &d, buf, sent < cap ? sent : cap, op);
            post_ack(b, x->me, op); /* even on failure, so that the root is not left waiting */
            if (rc == NUMACOLL_OK && sent != cap) rc = size_error(x->me, x->root, cap, sent);
        }
    }
    if (NC_UNLIKELY(x->root != told || sent != cap || mark != x->mark)) {
        b->mismatch.valid = 1, b->mismatch.mark = mark, b->mismatch.sent = sent,
        b->mismatch.head = head;
        b->mismatch.root = x->root;
    }
    if (NC_UNLIKELY(x->root != told)) {
        if (rc == NUMACOLL_OK || rc == NUMACOLL_ERR_ARG) {
            char got[96] = "";
            if (sent != cap)
                snprintf(got, sizeof got, "; it expected %zu bytes and got the first %zu", cap,
                         sent < cap ? sent : cap);
            rc = nc_error(NUMACOLL_ERR_ARG,
                          "bcast: rank %d passed root %d and the root is rank %d: members passed "
                          "different roots; this rank took part in rank %d's broadcast of %zu "
                          "bytes (nobody waits for it)%s",
                          x->me, told, x->root, x->root, sent, got);
        }
    } else if (NC_UNLIKELY(mark != x->mark)) {
        if (rc == NUMACOLL_OK)
            rc = nc_error(NUMACOLL_ERR_ARG,
                          "bcast: rank %d expected %s message and the root (rank %d) sent %s one "
                          "of the same size (%zu bytes): members passed different sizes (a mark "
                          "heads the MPI layer's broadcasts over 2 GiB)",
                          x->me, x->mark ? "a marked" : "an unmarked", x->root,
                          mark ? "a marked" : "an unmarked", sent);
    }
    return rc;
}

int nc_bcast_last_mismatch(numacoll_team_t *t, size_t *sent, int *mark, uint64_t *head, int *root)
{
    bcast_t *b = t->bcast;
    if (!b || !b->mismatch.valid) return 0;
    b->mismatch.valid = 0;
    *sent = b->mismatch.sent, *mark = b->mismatch.mark, *head = b->mismatch.head;
    if (root) *root = b->mismatch.root;
    return 1;
}

/* The root's end of an inline broadcast: one op, the payload in the children's blocks. */
static int root_inline(call_t *x, void *buf, size_t bytes)
{
    bcast_t *b = x->b;
    uint64_t op = b->hot.op++;
    int rc = wait_reuse(x->t, b, op, INLINE_BLOCKS);
    if (rc) return rc;
    inl_forward(x, op % INLINE_BLOCKS, buf, bytes,
                bytes | root_bits(x->me) | (x->mark ? KIND_MARK : 0), op + 1);
    post_ack(b, x->me, op);
    return NUMACOLL_OK;
}

/* The root's end of a CMA broadcast: one op whose blocks carry our buffer's address and
 * pid; the receivers read the buffer with process_vm_readv (cma_read). */
static int cma_abandon(call_t *x, uint64_t op, int rc);

static int root_cma(call_t *x, void *buf, size_t bytes)
{
    bcast_t *b = x->b;
    uint64_t op = b->hot.op++;
    int rc = wait_reuse(x->t, b, op, INLINE_BLOCKS);
    if (rc) return rc;
    cma_desc_t d = {.addr = (uint64_t)(uintptr_t)buf, .pid = getpid(), .root = x->me};
    inl_forward(x, op % INLINE_BLOCKS, &d, sizeof d, KIND_CMA | bytes, op + 1);
    post_ack(b, x->me, op);
    /* the receivers read our user buffer: it must not change before they are done */
    rc = wait_acks(x->t, b, op + 1);
    return rc ? cma_abandon(x, op, rc) : NUMACOLL_OK;
}

/* The root of CMA op @p op gives up on it (@p rc: a member died or timed out). A receiver
 * that has begun to read our buffer, or will, must not see it change or go away with our
 * process (it took the error of process_vm_readv, not the team's, and a reader of a changed
 * buffer would return stale bytes as a success). So, Dekker-style with seq_cst on both
 * sides: we mark the op abandoned, then wait for every receiver whose guard shows it
 * reading; a receiver marks itself reading, then reads only if the op is not marked
 * abandoned (cma_guarded_read). One of the two sees the other's store. Returns @p rc with
 * its message. */
static __attribute__((noinline)) int cma_abandon(call_t *x, uint64_t op, int rc)
{
    bcast_t *b = x->b;
    char why[512];
    snprintf(why, sizeof why, "%s", numacoll_last_error());
    atomic_store_explicit(cma_guard(b, x->me), CMA_ABANDONED | (op + 1), memory_order_seq_cst);
    for (int r = 0; r < x->P; r++) {
        if (r == x->me || atomic_load_explicit(cma_guard(b, r), memory_order_seq_cst) != op + 1)
            continue;
        /* r reads or has read our buffer: until its ack (or its own death or timeout) */
        (void)wait_ack_of(x->t, b, r, op + 1);
    }
    return nc_error(rc, "%s", why);
}

/* Read @p bytes of the root's buffer described by @p d into @p buf; *@p gone = 1 if the
 * root's process no longer exists. */
static int cma_read(call_t *x, const cma_desc_t *d, void *buf, size_t bytes, int *gone)
{
    size_t got = 0;
    while (got < bytes) {
        struct iovec l = {(char *)buf + got, bytes - got};
        struct iovec r = {(void *)(uintptr_t)(d->addr + got), bytes - got};
        ssize_t n = process_vm_readv((pid_t)d->pid, &l, 1, &r, 1, 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            *gone = n < 0 && errno == ESRCH;
            return nc_error(NUMACOLL_ERR_SYS,
                            "bcast: process_vm_readv of %zu bytes from the root (rank %d, pid "
                            "%lld) failed after %zu bytes: %s",
                            bytes, x->root, (long long)d->pid, got,
                            n < 0 ? strerror(errno) : "no progress");
        }
        got += (size_t)n;
    }
    return NUMACOLL_OK;
}

/* A receiver of CMA op @p op whose root gave up on it (cma_abandon) or whose root's process
 * is gone: the root did so because a member died or timed out, so we wait as for any
 * missing member, and the team's peer check or timeout ends the wait with the report that
 * names who is missing (as our other waits do), not process_vm_readv's error. */
static __attribute__((noinline)) int cma_lost_root(call_t *x, uint64_t op)
{
    numacoll_team_t *t = x->t;
    if (!t->check_peers && !t->timeout_ns) /* nothing would end the wait */
        return nc_error(NUMACOLL_ERR_PEER_DEAD,
                        "bcast: rank %d: the root (rank %d) gave up broadcast op %llu, in which "
                        "a member exited or timed out (set NUMACOLL_TIMEOUT to be told which)",
                        x->me, x->root, (unsigned long long)op);
    nc_wait_t w;
    nc_wait_init(&w, t, "bcast");
    /* Wait loop: for nothing that will come (nobody writes anything we read here); it ends
     * in nc_wait_step's dead-member check or the team's timeout */
    for (;;) {
        int rc = nc_wait_step(&w);
        if (rc) return rc;
    }
}

/* A receiver's read of the root's buffer in CMA op @p op (see cma_abandon for the guard):
 * we mark ourselves reading, then read only if the root has not abandoned the op. */
static int cma_guarded_read(call_t *x, const cma_desc_t *d, void *buf, size_t bytes, uint64_t op)
{
    bcast_t *b = x->b;
    atomic_store_explicit(cma_guard(b, x->me), op + 1, memory_order_seq_cst);
    if (atomic_load_explicit(cma_guard(b, (int)d->root), memory_order_seq_cst) ==
        (CMA_ABANDONED | (op + 1)))
        return cma_lost_root(x, op);
    int gone = 0;
    int rc = cma_read(x, d, buf, bytes, &gone);
    return rc && gone ? cma_lost_root(x, op) : rc;
}

static void notify(call_t *x, size_t slot, size_t n, uint64_t stamp)
{
    for (int i = 0; i < x->nkids; i++) {
        ctl_line_t *cl = ctl_line(x->b, x->t, x->kids[i], slot);
        cl->size = n;
        cl->flags = (uint64_t)x->flags | root_bits(x->root);
        cl->msg_bytes = x->msg_bytes;
        /* release: the fragment (in the source's slot) and the size before the stamp */
        atomic_store_explicit(&cl->stamp, stamp, memory_order_release);
    }
}

#if defined(__x86_64__)
/* Copy with non-temporal stores (the lines go to memory instead of staying dirty in this
 * core's cache, where a reader on another core would have to snoop them out). */
static void copy_nt(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head > n) head = n;
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    memcpy(d + i, s + i, n - i);
    _mm_sfence(); /* order the streamed stores before the release store that follows */
}
#else
static void copy_nt(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}
#endif

/* Tell the children that op fails for want of the root's queue (forwarded down the
 * tree), ack op so that nobody waits for us, and fail. Every member of the call reaches
 * this through the first fragment of op, so all return the same error. */
static int queue_failed(call_t *x, size_t slot, uint64_t op, const char *why)
{
    x->flags = OPF_NOSPACE;
    notify(x, slot, 0, op + 1);
    post_ack(x->b, x->me, op);
    if (why)
        return nc_error(NUMACOLL_ERR_UNSUPPORTED,
                        "bcast: rank %d (%s) could not get the memory of its queue: %s; this "
                        "broadcast did not happen on any member",
                        x->me, x->me == x->root ? "the root" : "a NUMA relay", why);
    return nc_error(NUMACOLL_ERR_UNSUPPORTED,
                    "bcast: the root (rank %d) or a NUMA relay could not get the memory of its "
                    "queue; this broadcast did not happen on any member",
                    x->root);
}

/* NUMACOLL_BCAST_POPULATE first-use: before op @p op writes into @p set of my queue, give
 * the set memory up to @p end bytes from its start (where the op's data end), at least
 * POPULATE_STEP more at a time: a message populates what it needs, not the whole set (np=2, a
 * new communicator's first 1 MiB broadcast populated a 2 MiB set, ~0.85 ms per MiB here),
 * and the rotation of later ops grows the mark step by step. Failing, the whole call fails
 * on every member (queue_failed), with the reason in the log. */
#define POPULATE_STEP (256u << 10)
static int populate_set(call_t *x, size_t set, size_t end, uint64_t op)
{
    bcast_t *b = x->b;
    size_t set_bytes = b->slots_per_set * b->fragment_bytes, hw = b->populated[set];
    end = end > set_bytes ? set_bytes : end;
    size_t to = hw + POPULATE_STEP > end ? hw + POPULATE_STEP : end;
    to = to > set_bytes ? set_bytes : nc_round_up(to, nc_page_size());
    char *p = slot_buf(b, x->me, set * b->slots_per_set) + hw;
    int rc = nc_seg_populate(p, to - hw, "a broadcast queue set");
    if (rc == NUMACOLL_OK) {
        b->populated[set] = to;
        if (nc_verbose() >= 2) {
            size_t on = 0, off = 0;
            int node = nc_seg_check_placement(p, to - hw, x->t->numa_node, &on, &off);
            nc_log(2, x->me, x->P,
                   "bcast: set %zu of my queue got memory for bytes %zu..%zu of %zu on NUMA "
                   "node %d (expected %d: %zu pages there, %zu elsewhere)",
                   set, hw, to, set_bytes, node, x->t->numa_node, on, off);
        }
        return NUMACOLL_OK;
    }
    char why[256];
    snprintf(why, sizeof why, "%s", numacoll_last_error());
    return queue_failed(x, set * b->slots_per_set, op, why);
}

/* A queue broadcast of the root's @p bytes (its geometry), of which a receiver keeps the
 * first @p cap (its own size: cap == bytes unless the program passed different sizes). */
static int run_queue(call_t *x, char *buf, size_t bytes, size_t cap)
{
    bcast_t *b = x->b;
    /* the fragment for this message (plan.h: the paper's rule for a known m, halves) */
    size_t fe = nc_bcast_msg_fragment(b->fragment_bytes, b->fragment_fixed, &b->model, bytes,
                                      x->flags & OPF_WHOLE);
    x->msg_bytes = bytes;
    size_t per_op = b->slots_per_set * fe;
    int is_root = x->me == x->root;
    int rot = x->rotate && !(x->flags & OPF_NOROT); /* the root's choice (receivers: recv_first) */
    int src = x->relay ? x->tree->source[x->root] : x->root;
    int hold = x->relay && x->tree->holds_copy[x->root];
    size_t off = 0;
    int rc = NUMACOLL_OK;
    while (off < bytes) {
        uint64_t op = b->hot.op++;
        size_t set = op % b->sets;
        size_t n_op = bytes - off < per_op ? bytes - off : per_op;
        size_t nfrag = (n_op + fe - 1) / fe;
        size_t span = nfrag * fe;
        /* where this op's data end in its set (the same on every member) */
        size_t use_end = (size_t)(frag_buf(b, rot, 0, set, op, span, fe, 0) -
                                  slot_buf(b, 0, set * b->slots_per_set)) +
                         span;
        if (is_root) {
            rc = wait_reuse(x->t, b, op, b->sets);
            if (rc) return rc;
            if (NC_UNLIKELY(b->populated[set] < use_end)) {
                rc = populate_set(x, set, use_end, op);
                if (rc) return rc;
            }
            /* diagnostic only (nobody waits on it): last op started on this set */
            atomic_store_explicit(set_op_word(b, set), op + 1, memory_order_relaxed);
        }
        for (size_t i = 0; i < nfrag; i++) {
            size_t slot = set * b->slots_per_set + i;
            size_t n = i + 1 < nfrag ? fe : n_op - i * fe;
            if (is_root) {
                if (x->flags & NT_STREAM_ROOT)
                    copy_nt(frag_buf(b, rot, x->me, set, op, span, fe, i), buf + off, n);
                else
                    memcpy(frag_buf(b, rot, x->me, set, op, span, fe, i), buf + off, n);
                notify(x, slot, n, op + 1);
            } else {
                ctl_line_t *cl = ctl_line(b, x->t, x->me, slot);
                rc = wait_stamp(x->t, &cl->stamp, op + 1);
                if (rc) return rc;
                if (NC_UNLIKELY(cl->flags & OPF_NOSPACE)) return queue_failed(x, slot, op, NULL);
                if (cl->size != n || !names_root(cl->flags, x->root))
                    return nc_error(NUMACOLL_ERR_ARG,
                                    "bcast: rank %d expected a fragment of %zu bytes and got "
                                    "%llu: members passed different roots or options",
                                    x->me, n, (unsigned long long)cl->size);
                /* what of this fragment we keep (cap: our own size; nothing, and no
                 * address formed in buf, past it: buf may be NULL for 0 bytes) */
                size_t take = off >= cap ? 0 : cap - off < n ? cap - off : n;
                x->flags = (int)(cl->flags & FLAGS_MASK); /* the root's choice, forwarded as is */
                if (hold) {
                    /* lazy queues with the relay forced per call (nc_bcast_opts_t; auto
                     * relay makes the queues eager): a failure here fails only this
                     * relay's subtree, which the internal callers report */
                    if (NC_UNLIKELY(b->populated[set] < use_end)) {
                        rc = populate_set(x, set, use_end, op);
                        if (rc) return rc;
                    }
                    memcpy(frag_buf(b, rot, x->me, set, op, span, fe, i),
                           frag_buf(b, rot, src, set, op, span, fe, i), n);
                    notify(x, slot, n, op + 1);
                    if (take)
                        memcpy(buf + off, frag_buf(b, rot, x->me, set, op, span, fe, i), take);
                } else {
                    notify(x, slot, n, op + 1);
                    const char *from = frag_buf(b, rot, src, set, op, span, fe, i);
                    if (take && (x->flags & NT_STREAM_RECV))
                        copy_nt(buf + off, from, take);
                    else if (take)
                        memcpy(buf + off, from, take);
                }
            }
            off += n;
        }
        post_ack(b, x->me, op);
    }
    if (!is_root && (x->flags & OPF_REPORT) && x->t_enter) {
        /* the root asked for our time in this call (copy-mode selection): we add it to
         * our sum for this root's run and publish the sum after the run's last call; the
         * root reads that word later, without waiting, and uses it only if tag and count
         * are its run's (a measured call we did not time, not armed, lowers the count) */
        uint64_t ns = nc_now_ns() - x->t_enter;
        struct recv_run *a = &b->recv_runs[x->root];
        if (x->flags & OPF_RUN_FIRST) a->ns = 0, a->calls = 0;
        a->ns += ns;
        a->calls++;
        if (x->flags & OPF_RUN_LAST) {
            uint64_t sum = a->ns > UINT32_MAX ? UINT32_MAX : a->ns;
            uint64_t n = a->calls > REPORT_CALLS_MASK ? REPORT_CALLS_MASK : a->calls;
            atomic_store_explicit(report_word(b, x->me, x->root),
                                  (sum << REPORT_NS_SHIFT) | (n << REPORT_TAG_BITS) |
                                      report_tag(b->hot.op),
                                  memory_order_relaxed);
        }
    }
    if (!is_root && (x->flags & (OPF_RUN_ARM | OPF_RUN_LAST)))
        b->recv_runs[x->root].armed = !(x->flags & OPF_RUN_LAST);
    if (rc == NUMACOLL_OK && cap != bytes) rc = size_error(x->me, x->root, cap, bytes);
    return rc;
}

/* ---- copy-mode selection ------------------------------------------------------------
 * Which copy is fastest depends on the machine and, on the reference VM, on the host's
 * current vCPU placement (it changes every few tens of seconds): measured at np = 2, 1 MiB,
 * plain copies 32 us vs streamed root copy 212 us in one regime, 306 vs 150 in the other;
 * and on where the receivers' buffers are (streamed receivers won 2x at 256 KiB - 1 MiB with
 * off-cache destinations and lost with cache-resident ones).
 * So the root (the only one who chooses; the mode travels to the receivers in the control
 * lines) measures some of its broadcasts: the members' mean time in the call, as the
 * benchmark reports it, from its own time and each receiver's own time, which a receiver
 * sums over the measured calls of a run and writes into its report word for that root
 * (report_word) after the run's last one (mode bits OPF_RUN_ARM, OPF_REPORT, OPF_RUN_FIRST,
 * OPF_RUN_LAST). The root reads those words at a later call (sel_harvest), so a measured call costs
 * the root no wait. (The first version made the root wait for every receiver's ack in a measured
 * call and charged it the time until it saw each: a call of plain stores then looked cheap, because
 * the cost of the dirty lines it left behind came later; at 1 MiB with off-cache buffers the
 * selector settled on plain copies, 72-95 us, while streamed receivers took 59 us.) Per log2 size
 * class the root keeps the last 4 samples (ns per byte) of each candidate mode. A measured run of
 * one mode is W unmeasured calls, enough for the class's messages to pass once through the whole
 * queue (sel_warm: the queue's lines then have the cache state the run's mode leaves, not the
 * previous mode's), then M measured calls, M = SEL_SAMPLE_BYTES / the class's lower bound
 * (1..SEL_MEAS_MAX): one sample sums the times of M calls. (The first version measured one call
 * after one other: at 16-64 KiB, 0.5-1.5 us a call, one interrupted call made a sample, and a plain
 * run started where streamed stores had left the queue in memory; on the AMD VM the root switched
 * modes every few samples, all estimates within 0.04-0.12 ns/B, once on a 4.6 ns/B outlier, and 256
 * KiB ran at 0.94-1.11x Open MPI's coll/sm against 0.79-0.85x now.) Every candidate is run twice,
 * then those within 2x of the best once more (round robin); then every SEL_PERIOD-th run length of
 * calls of the class starts a run of another candidate and, offset half a period, a run of the
 * current best (a candidate more than twice as slow as the best only every SEL_RARE-th time). The
 * best changes to a mode whose median of its last 4 samples is below NC_BCAST_SEL_SWITCH times the
 * best's. One run is open at a time (a receiver keeps one sum per root): a run due while another
 * class's is open starts at the class's next call after it, and one left open for SEL_STALE
 * run lengths of calls is dropped. Local state only.
 * Candidates: plain and streamed root stores (modes 0, 1) from NUMACOLL_BCAST_STREAM_MIN on, all
 * four modes (bits 0..1) from NUMACOLL_BCAST_STREAM_OUT_MIN on; the thresholds decide which
 * is tried first. (Streamed receivers below 256 KiB were 1.2-7x slower on both VMs measured,
 * never the best; leaving them out halves what exploring costs there.) Below STREAM_MIN,
 * messages of SPLIT_MIN+1 .. SPLIT_MAX bytes in two halves or in the model's one fragment
 * (mode 4, OPF_WHOLE; not with a configured fragment size): the halves were 30 % faster on the
 * Intel VM (4 and 8 KiB), one fragment 24 % faster at 8 KiB on the AMD VM in its slow regime
 * (0.84 -> 0.64 us, Open MPI np = 2) and the same in its fast one. The model says why: the
 * halves overlap the root's copy of one half with the receiver's, and cost one more
 * notification, t_W = 40-90 ns on the Intel VM and 200-250 ns on the AMD one. Up to
 * SEL_NOROT_MAX, each candidate also without rotating offsets (mode 8, OPF_NOROT; when the
 * team rotates): on the AMD VM in its fast regime 8 and 16 KiB ran 10-13 % faster without
 * (the same lines again, still in the shared cache of what are likely two SMT siblings), in
 * its slow one 5-8 % slower; 32 KiB was the same and 64-128 KiB 8-10 % slower without, in
 * the fast regime. The cost of exploring: one run in SEL_PERIOD in another mode, up to 2x
 * slower: under 0.5 %, plus the queue's passage back to the best's state.
 * Known limit: plain receiver stores into buffers that are not in cache leave dirty lines
 * that the L3 (32 MB here) writes back only some 30 calls of 1 MiB later, which a run of a
 * few calls does not see; with such buffers (the off-cache benchmarks) the selector rates
 * plain receiver stores a little too well. Those deferred costs fall on the calls after an
 * exploration run, so the best's every-call samples (SEL_EVERY_MIN) skip the next
 * max(W, SEL_QUIET) calls after one.
 * Several roots (rotating roots at np >= 3) measure their runs at the same time: a receiver
 * keeps a sum, an armed flag and a report word per root (with one sum, each root's OPF_RUN_FIRST
 * restarted the others' runs and every sample of such a team was dropped). */
#define SEL_PERIOD 256
#define SEL_RARE 4 /* a candidate > 2x slower than the best: every SEL_RARE-th exploration */
#define SEL_FIRST 3
#define SEL_WARM_MAX 512
#define SEL_SAMPLE_BYTES ((size_t)256 << 10)
#define SEL_MEAS_MAX 16
#define SEL_STALE 4
#define SEL_QUIET 8
#define SEL_EVERY_MIN ((size_t)1 << 20) /* from here on every call of the best is measured */

static size_t class_low(size_t bytes) /* the lower bound of the size class of @p bytes */
{
    return (size_t)1 << (63 - __builtin_clzll((unsigned long long)bytes));
}

/* measured calls per sample in the size class of @p bytes (the same for the whole class) */
static int sel_meas(size_t bytes)
{
    size_t m = SEL_SAMPLE_BYTES / class_low(bytes);
    return m < 1 ? 1 : m > SEL_MEAS_MAX ? SEL_MEAS_MAX : (int)m;
}

/* Unmeasured calls that start a run in the size class of @p bytes: enough for the class's
 * messages to pass once through the whole queue (ops rotate through it, frag_buf), so that
 * the measured calls find the cache state the run's mode leaves there, not the previous
 * mode's (streamed root stores leave the queue in memory, plain ones in the caches) */
static int sel_warm(const bcast_t *b, size_t bytes)
{
    size_t w = b->rotate ? (b->queue_bytes + class_low(bytes) - 1) / class_low(bytes) : 1;
    return w < 1 ? 1 : w > SEL_WARM_MAX ? SEL_WARM_MAX : (int)w;
}

/* The candidate modes of a message of @p bytes into c[0..3], the static default first;
 * their number. A mode bit that does not apply to some size of a class does nothing there
 * (the classes at the range ends hold sizes of both kinds). */
static int sel_cands(const bcast_t *b, size_t bytes, int *c)
{
    /* plan.h: the same candidates numacoll-info --explain reports */
    return nc_bcast_sel_cands(b->stream_root_min, b->stream_recv_min, b->fragment_fixed, b->rotate,
                              bytes, c);
}

static struct sel *sel_of(bcast_t *b, size_t bytes)
{
    int l = 63 - __builtin_clzll((unsigned long long)bytes);
    return &b->sel_classes[l < SEL_CLASSES ? l : SEL_CLASSES - 1];
}

/* A mode's estimate: the median of its last 4 samples (the mean of the middle two; of
 * fewer, their median): one preempted or page-faulting sample does not count, nor does one
 * lucky one (with the minimum, a mode could stay the best on a single low sample until it
 * aged out); a regime change shows after 2-3 samples. */
static double sel_est(const struct sel *S, int mode)
{
    uint32_t k = S->nsamples[mode] < 4 ? S->nsamples[mode] : 4;
    double v[4];
    memcpy(v, S->samples[mode], k * sizeof v[0]);
    return median_small(v, k);
}

/* The measurement bits of call @p pos (0-based) of @p S's run */
static int run_flags(const struct sel *S, int pos)
{
    if (pos < S->run_unmeasured) return pos == S->run_unmeasured - 1 ? OPF_RUN_ARM : 0;
    return OPF_REPORT | (pos == S->run_unmeasured ? OPF_RUN_FIRST : 0) |
           (pos == S->run_len - 1 ? OPF_RUN_LAST : 0);
}

/* Drop the open run, if any (its samples are lost; the receivers restart at OPF_RUN_FIRST) */
static void sel_drop(bcast_t *b)
{
    if (b->open_run_class >= 0) b->sel_classes[b->open_run_class].run_len = 0;
    b->open_run_class = -1;
}

/* Mode for this call (the static default first); *measure = the call's measurement bits
 * (OPF_REPORT, OPF_RUN_FIRST, OPF_RUN_LAST; OPF_RUN_ARM on the call before a run's first measured
 * one), 0 for a call outside runs. */
static int sel_choose(bcast_t *b, size_t bytes, int deflt, int *measure)
{
    int c[4], nc = sel_cands(b, bytes, c);
    *measure = 0;
    if (nc == 0) return deflt;
    struct sel *S = sel_of(b, bytes);
    int cls = (int)(S - b->sel_classes);
    uint64_t now = b->sel_calls++;
    if (S->calls == 0) S->best_mode = deflt;
    uint64_t k = S->calls++;
    if (S->run_len > 0) { /* inside a measured run: run_unmeasured calls, then the measured ones */
        int pos = S->run_pos++;
        *measure = run_flags(S, pos);
        int mode = S->run_mode;
        if (S->run_pos == S->run_len) S->run_len = 0; /* the root closes open_run_class after it */
        return mode;
    }
    if (b->open_run_class >= 0 &&
        now - b->open_run_at >
            (uint64_t)SEL_STALE * (uint64_t)b->sel_classes[b->open_run_class].run_len)
        sel_drop(b); /* its class has not been called for a while */
    int blocked = b->open_run_class >= 0;
    int warm = sel_warm(b, bytes);
    uint64_t len = (uint64_t)warm + (uint64_t)sel_meas(bytes), per = SEL_PERIOD * len;
    int m = -1;
    /* each mode twice first (a mode's first run may pay for first use of queue memory,
     * and a mode excluded on one bad sample waited for the rare explorations: at 16 KiB
     * plain copies, the best there, stayed unused after one 2.3x sample), then SEL_FIRST - 2
     * more runs of those not twice as slow as the best (the others wait for the rare
     * explorations: up to 7x slower, their first runs took a third of the calls of a
     * 4 MiB benchmark measurement) */
    for (uint32_t round = 1; round <= SEL_FIRST && m < 0; round++)
        for (int i = 0; i < nc && m < 0; i++)
            if (S->runs[c[i]] < round &&
                (round <= 2 || !S->nsamples[c[i]] || !S->nsamples[S->best_mode] ||
                 sel_est(S, c[i]) <= 2 * sel_est(S, S->best_mode)))
                m = c[i];
    if (m < 0 && S->due_mode) m = S->due_mode - 1;
    if (m < 0 && k % per == 0) { /* explore the next candidate that is not the best;
                                  * one more than twice as slow only rarely */
        int rare = (k / per) % SEL_RARE != 0;
        for (int j = 0; j < nc && m < 0; j++) {
            int x = c[S->next_cand++ % nc];
            if (x == S->best_mode || (rare && sel_est(S, x) > 2 * sel_est(S, S->best_mode)))
                continue;
            m = x;
        }
    }
    if (m < 0 && k % per == per / 2) m = S->best_mode; /* re-measure the best */
    if (m >= 0 && blocked) {
        S->due_mode = m + 1; /* after the open run */
        m = -1;
    }
    if (m < 0) {
        /* large messages: every call of the best is measured (reading the reports costs the
         * root one cache miss per receiver, under 1 % of a call of SEL_EVERY_MIN bytes), so
         * a regime change of the VM shows after 2-3 calls, not after 2-3 re-measurements
         * half a period apart (a 4 MiB benchmark measurement spent most of its calls in the
         * mode that had become 6x slower: 860 us median against a 242 us memcpy); not
         * the SEL_QUIET calls after an exploration, which pay for what it left behind */
        if (S->quiet_calls) {
            S->quiet_calls--;
        } else if (bytes >= SEL_EVERY_MIN && !blocked) {
            *measure = OPF_REPORT | OPF_RUN_FIRST | OPF_RUN_LAST;
            b->open_run_class = cls, b->open_run_at = now;
        }
        return S->best_mode;
    }
    S->runs[m]++;
    S->due_mode = 0;
    if (m != S->best_mode) S->quiet_calls = (uint32_t)(warm > SEL_QUIET ? warm : SEL_QUIET);
    S->run_mode = m;
    S->run_unmeasured = warm;
    S->run_len = (int)len;
    S->run_pos = 1;
    *measure = run_flags(S, 0);
    if (S->run_pos == S->run_len) S->run_len = 0;
    b->open_run_class = cls, b->open_run_at = now;
    return m;
}

/* A sample of @p mode in the class of @p bytes: @p nspb ns per byte (members' mean) */
static void sel_record(numacoll_team_t *t, bcast_t *b, size_t bytes, int mode, double nspb)
{
    struct sel *S = sel_of(b, bytes);
    int c[4], nc = sel_cands(b, bytes, c);
    /* Until the first runs are done (sel_choose: every candidate twice, those within 2x of
     * the best a third time), the lowest estimate wins outright; the switching margin holds
     * after that. (With the margin from the start, the static default kept 16 KiB on the AMD
     * VM with 0.0255 ns/B against 0.0247 for no rotation, which the benchmark then ran 5-10 %
     * faster.) Judged before this sample, so that the last first run still chooses freely. */
    int settled = S->nsamples[S->best_mode] > 0;
    for (int i = 0; i < nc && settled; i++) {
        uint32_t k = S->nsamples[c[i]];
        if (k < 2 || (k < SEL_FIRST && sel_est(S, c[i]) <= 2 * sel_est(S, S->best_mode)))
            settled = 0;
    }
    double margin = settled ? NC_BCAST_SEL_SWITCH : 1.0;
    S->samples[mode][S->nsamples[mode]++ % 4] = nspb;
    for (int i = 0; i < nc; i++)
        if (S->nsamples[c[i]] &&
            (!S->nsamples[S->best_mode] || sel_est(S, c[i]) < margin * sel_est(S, S->best_mode))) {
            if (S->best_mode != c[i] && b->trace)
                nc_log(3, t->rank, t->size,
                       "bcast: the %zu-byte class now uses copy mode %d (%.3f ns/B; was %d)", bytes,
                       c[i], sel_est(S, c[i]), S->best_mode);
            S->best_mode = c[i];
        }
}

/* The root after a measured call of @p bytes in copy mode @p mode (@p bits: its measurement
 * bits, @p ns: the root's time in it): add it to the run; after the run's last call, the
 * run waits in `pending_run` for the receivers' sums. A failed call drops the run. */
static void sel_root_done(bcast_t *b, size_t bytes, int mode, int bits, int rc, uint64_t ns)
{
    if (rc != NUMACOLL_OK) {
        sel_drop(b);
        return;
    }
    int cls = (int)(sel_of(b, bytes) - b->sel_classes);
    if (bits & OPF_RUN_FIRST)
        b->root_run.ns = 0, b->root_run.bytes = 0, b->root_run.calls = 0,
        b->root_run.size_class = cls, b->root_run.mixed = 0;
    b->root_run.mixed |= cls != b->root_run.size_class; /* never with one run open at a time */
    b->root_run.ns += (double)ns;
    b->root_run.bytes += (double)bytes;
    b->root_run.calls++;
    if ((bits & OPF_RUN_LAST) && b->root_run.mixed) {
        b->sel_runs_lost++;
        b->open_run_class = -1;
    } else if (bits & OPF_RUN_LAST) {
        b->pending_run = (__typeof__(b->pending_run)){.valid = 1,
                                                      .mode = mode,
                                                      .bytes = bytes,
                                                      .tag = b->hot.op,
                                                      .calls = b->root_run.calls,
                                                      .root_ns = b->root_run.ns,
                                                      .sum_bytes = b->root_run.bytes};
        b->open_run_class = -1;
    }
}

/* Complete the pending run if every receiver has reported it: their words for this root
 * carry the run's tag until our next measured run, which replaces the pending one. A
 * receiver whose count is not the run's (it did not time every measured call) voids the
 * sample (sel_runs_lost). Reads only, never waits. */
static void sel_harvest(numacoll_team_t *t, bcast_t *b)
{
    double sum = b->pending_run.root_ns;
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank) continue;
        /* relaxed: the word is self-contained (time, count and tag in one store) */
        uint64_t w = atomic_load_explicit(report_word(b, r, t->rank), memory_order_relaxed);
        if ((w & REPORT_TAG_MASK) != report_tag(b->pending_run.tag)) return; /* not yet */
        if (((w >> REPORT_TAG_BITS) & REPORT_CALLS_MASK) != b->pending_run.calls) {
            b->pending_run.valid = 0;
            b->sel_runs_lost++;
            return;
        }
        sum += (double)(w >> REPORT_NS_SHIFT);
    }
    b->pending_run.valid = 0;
    sel_record(t, b, b->pending_run.bytes, b->pending_run.mode,
               sum / t->size / b->pending_run.sum_bytes);
}

int nc_bcast_debug_sel(numacoll_team_t *t, size_t bytes, uint32_t samples[NC_BCAST_SEL_MODES],
                       double est[NC_BCAST_SEL_MODES], int *best, int *adapt)
{
    bcast_t *b = t->bcast;
    if (!b || bytes == 0)
        return nc_error(NUMACOLL_ERR_STATE, "bcast: no broadcast state yet (or zero bytes)");
    struct sel *S = sel_of(b, bytes);
    for (int m = 0; m < NC_BCAST_SEL_MODES; m++) {
        samples[m] = S->nsamples[m];
        est[m] = S->nsamples[m] ? sel_est(S, m) : 0;
    }
    *best = S->best_mode;
    *adapt = b->adapt;
    return NUMACOLL_OK;
}

/* NUMACOLL_VERBOSE >= 2, at the team's end: what the copy-mode selector of this member (as
 * a root) chose per size class, from which samples (modes: flags_of_mode) */
static void sel_log(numacoll_team_t *t, bcast_t *b)
{
    for (int l = 0; l < SEL_CLASSES; l++) {
        const struct sel *S = &b->sel_classes[l];
        char line[512];
        int o = 0;
        for (int m = 0; m < NC_BCAST_SEL_MODES && o < (int)sizeof line - 40; m++)
            if (S->nsamples[m])
                o += snprintf(line + o, sizeof line - (size_t)o, " %d: %u/%.4f", m, S->nsamples[m],
                              sel_est(S, m));
        if (!o) continue;
        nc_log(2, t->rank, t->size,
               "bcast: copy-mode selector, %zu-byte class: %llu calls, mode %d; samples/estimate "
               "(ns/B) per mode (bit 0 streamed root, 1 streamed receivers, 2 one fragment, 3 "
               "no rotation):%s; runs lost (all classes) %llu",
               (size_t)1 << l, (unsigned long long)S->calls, S->best_mode, line,
               (unsigned long long)b->sel_runs_lost);
    }
}

uint64_t nc_bcast_debug_sel_lost(numacoll_team_t *t)
{
    return t->bcast ? t->bcast->sel_runs_lost : 0;
}

/* NUMACOLL_BCAST_CHECK: this call's arguments against every member's (check.c), with
 * the per-call options resolved against the team's defaults. On a mismatch nothing has
 * moved and the op counts are untouched; the mismatch record tells the MPI layer whether
 * the roots differ (MPI_ERR_ROOT) or only sizes, marks or options (MPI_ERR_TRUNCATE). */
static __attribute__((noinline)) int check_call(numacoll_team_t *t, bcast_t *b, size_t bytes,
                                                int root, const nc_bcast_opts_t *o)
{
    nc_bcast_args_t a = {.root = root, .mark = o && o->mark > 0, .bytes = bytes};
    a.opts =
        nc_bcast_opts_sig(o && o->tree >= 0 && o->tree < NC_BTREE_COUNT ? o->tree : b->tree_kind,
                          o && o->k > 0 ? o->k : b->fanout,
                          o && o->inline_max >= 0 ? o->inline_max : (long)b->inline_max,
                          o && o->cma_min >= 0 ? o->cma_min : (long long)b->cma_min,
                          o && o->relay >= 0 ? o->relay : b->relay, o && o->nt >= 0 ? o->nt : -1,
                          o && o->rotate >= 0 ? o->rotate : b->rotate);
    int other = -1;
    /* the six check words: words 2-7 of each member's ack line (single writer: its owner) */
    int rc = nc_bcast_check_args(t, (char *)(ack_word(b, 0) + 2), b->proc_area_bytes,
                                 b->checks_done++, &a, &other);
    if (rc == NUMACOLL_ERR_ARG)
        b->mismatch.valid = 1, b->mismatch.mark = 0, b->mismatch.sent = bytes, b->mismatch.head = 0,
        b->mismatch.root = other >= 0 ? other : root;
    return rc;
}

int nc_bcast_run_opts(numacoll_team_t *t, void *buf, size_t bytes, int root,
                      const nc_bcast_opts_t *o)
{
    /* 0 bytes is an op like any other (an inline one without payload), so that a member
     * passing 0 against a root's n, or n against a root's 0, gets the size error instead
     * of leaving the root waiting or taking the next message for this one */
    if (o && (o->nt < -1 || o->nt >= NC_BCAST_SEL_MODES))
        return nc_error(NUMACOLL_ERR_ARG,
                        "bcast: copy mode (option nt) %d; allowed: -1 (the team's choice) or "
                        "0..%d (bit 0 streamed root stores, bit 1 streamed receiver stores, "
                        "bit 2 a message of %d..%d bytes in one fragment, not two, bit 3 no "
                        "rotating offset)",
                        o->nt, NC_BCAST_SEL_MODES - 1, SPLIT_MIN + 1, SPLIT_MAX);
    if (t->size == 1) return NUMACOLL_OK;
    if (!t->bcast) {
        int rc = bcast_init(t);
        if (rc) return rc;
    }
    bcast_t *b = t->bcast;
    if (NC_UNLIKELY(b->check)) {
        int rc = check_call(t, b, bytes, root, o);
        if (rc) return rc;
    }
    int kind = o && o->tree >= 0 && o->tree < NC_BTREE_COUNT ? o->tree : b->tree_kind;
    int k = o && o->k > 0 ? o->k : b->fanout;
    int rc = tree_build(t, b, kind, k);
    if (rc) return rc;
    call_t x = {.t = t, .b = b, .tree = &b->trees[kind], .root = root, .me = t->rank, .P = t->size};
    x.relay = o && o->relay >= 0 ? o->relay : b->relay;
    x.rotate = o && o->rotate >= 0 ? o->rotate : b->rotate;
    x.hints = hints_of(o && o->demote >= 0 ? o->demote : b->demote,
                       o && o->prefetch >= 0 ? o->prefetch : b->prefetch);
    /* the two sides separately: the root's streamed stores keep the fragments out of its
     * cache, so the receivers read them from L3/memory instead of snooping dirty lines out
     * of another core (very slow on the reference VM); the receivers' streamed stores only
     * pay when their destination does not fit the cache anyway */
    x.flags = o && o->nt >= 0 ? flags_of_mode(o->nt)
                              : nc_bcast_msg_nt(b->stream_root_min, b->stream_recv_min, bytes);
    x.kids = x.tree->children + x.tree->child_off[root];
    x.nkids = x.tree->child_off[root + 1] - x.tree->child_off[root];
    size_t inl = b->inline_max;
    if (o && o->inline_max >= 0) inl = (size_t)o->inline_max;
    if (inl > b->inline_room) inl = b->inline_room;
    size_t cma_min = o && o->cma_min >= 0 ? (size_t)o->cma_min : b->cma_min;
    x.mark = o && o->mark > 0;
    if (x.mark) { /* always inline */
        if (bytes > b->inline_room)
            return nc_error(NUMACOLL_ERR_ARG,
                            "bcast: a marked message carries at most %zu bytes (the inline "
                            "room), not %zu",
                            b->inline_room, bytes);
        inl = b->inline_room;
    }
    if (NC_UNLIKELY(b->trace))
        nc_log(3, t->rank, t->size,
               "bcast #%llu: %zu bytes from %d, tree %s, parent %d, %d "
               "children",
               (unsigned long long)b->hot.op, bytes, root, nc_bcast_tree_names[kind],
               x.tree->parent[root], x.nkids);
    /* the path from our own size; a receiver follows the root's if that differs (recv_first) */
    int is_root = x.me == root;
    int path = nc_bcast_msg_path(bytes, inl, b->cma_permitted, cma_min); /* plan.h */
    if (path != NC_BPATH_QUEUE) {
        if (!is_root) return recv_first(&x, buf, bytes, 1);
        return path == NC_BPATH_INLINE ? root_inline(&x, buf, bytes) : root_cma(&x, buf, bytes);
    }
    int measure = 0;
    if (b->adapt && !(o && o->nt >= 0) && sel_cands(b, bytes, (int[4]){0}) > 0) {
        if (b->pending_run.valid) sel_harvest(t, b);
        /* the clock only where a time is used (20 ns a read on the AMD VM, 4 % of a
         * 16 KiB call): the root's measured calls; a receiver's calls from the root's
         * OPF_RUN_ARM to the run's last (run_queue keeps `armed`), every call from
         * SEL_EVERY_MIN on (the best's every-call runs come unannounced) */
        if (x.me == root) {
            x.flags = flags_of_mode(sel_choose(b, bytes, mode_of_flags(x.flags), &measure));
            if (measure & OPF_REPORT) x.t_enter = nc_now_ns();
        } else if (b->recv_runs[root].armed || bytes >= SEL_EVERY_MIN) {
            x.t_enter = nc_now_ns();
        }
    }
    int mode = mode_of_flags(x.flags);
    x.flags |= measure; /* the root's measurement bits (receivers: 0) */
    if (!(measure & OPF_REPORT))
        return is_root ? run_queue(&x, buf, bytes, bytes) : recv_first(&x, buf, bytes, 0);
    rc = run_queue(&x, buf, bytes, bytes);
    sel_root_done(b, bytes, mode, measure, rc, nc_now_ns() - x.t_enter);
    return rc;
}

/* Cache the default tree's children of @p root in the hot line; 0 if they do not fit (or
 * the tree is not built yet: the general path builds it). */
static int hot_fill(bcast_t *b, int root)
{
    tree_cache_t *c = &b->trees[b->tree_kind];
    if (!c->built || c->fanout != b->fanout) return 0;
    int n = c->child_off[root + 1] - c->child_off[root];
    if (n > HOT_KIDS) return 0;
    for (int i = 0; i < n; i++)
        b->hot.kid_blocks[i] =
            proc_area(b, c->children[c->child_off[root] + i]) + b->hot.blocks_off;
    b->hot.nkids = (int16_t)n;
    b->hot.kids_root = (int16_t)root;
    return 1;
}

/* Before the hot path's root reuses an inline block: wait until every other member has
 * acked the block's previous op (ack >= @p need, as wait_reuse), then recompute the lower
 * bound of all acks from the cache wait_acks keeps. */
static __attribute__((noinline)) int hot_refresh(numacoll_team_t *t, bcast_t *b, uint64_t need)
{
    int rc = wait_acks(t, b, need);
    if (rc) return rc;
    uint64_t lo = UINT64_MAX;
    for (int r = 0; r < t->size; r++)
        if (r != t->rank && b->acks_seen[r] < lo) lo = b->acks_seen[r];
    b->hot.acks_min = lo;
    return NUMACOLL_OK;
}

/* An inner tree node's forwarding of inline block @p blk (@p bytes, the root's size and
 * ours) to its cached children. Out of line: a leaf's path (every receiver at np = 2)
 * measured 12 % faster at 128 B without this loop in it (receiver time against
 * limit:inline 1.25 -> 1.09, 5 launches each, interleaved), though the loop ran 0 times. */
static __attribute__((noinline)) void hot_forward(const hot_line_t *h, const char *blk, size_t off,
                                                  size_t bytes, uint64_t op)
{
    for (int i = 0; i < h->nkids; i++)
        inl_put(h->kid_blocks[i] + off, h->head_bytes, blk + INL_HDR, bytes,
                bytes | root_bits(h->kids_root), op + 1, h->hints);
}

/* The hot path's receiver found a word other than its own size in its block, or the root
 * took the queue path: give the op back to the general path, whose receivers follow the
 * root (recv_first). */
static __attribute__((noinline)) int hot_mismatch(numacoll_team_t *t, void *buf, size_t bytes,
                                                  int root)
{
    t->bcast->hot.op--;
    return nc_bcast_run_opts(t, buf, bytes, root, NULL);
}

/* The inline broadcast (root_inline, recv_first) for the default tree and a cached root, from the
 * hot line only (plus the shared blocks and ack lines): same ops, blocks, stamps and acks, so
 * members may take this path or the general one in the same broadcast. */
static int run_hot(numacoll_team_t *t, bcast_t *b, void *buf, size_t bytes, int root)
{
    hot_line_t *h = &b->hot;
    uint64_t op = h->op++;
    size_t off = (size_t)(op % INLINE_BLOCKS) * h->block_bytes;
    if (t->rank == root) {
        if (NC_UNLIKELY(op >= INLINE_BLOCKS && h->acks_min < op - INLINE_BLOCKS + 1)) {
            int rc = hot_refresh(t, b, op - INLINE_BLOCKS + 1);
            if (rc) return rc;
        }
        for (int i = 0; i < h->nkids; i++)
            inl_put(h->kid_blocks[i] + off, h->head_bytes, buf, bytes, bytes | root_bits(root),
                    op + 1, h->hints);
        /* release: as ack() */
        atomic_store_explicit((_Atomic uint64_t *)h->my_area, op + 1, memory_order_release);
        return NUMACOLL_OK;
    }
    char *blk = h->my_area + h->blocks_off + off;
    int alt; /* its loops say who writes */
    int rc = wait_first(t, b, (_Atomic uint64_t *)blk, 1, op, &alt);
    if (rc) return rc;
    if (NC_UNLIKELY(alt || ((uint64_t *)blk)[1] != (bytes | root_bits(root))))
        return hot_mismatch(t, buf, bytes, root);
    /* lengths from `bytes` (a register, not the load of the word: the copies' addresses
     * need not wait for that load; see spin_stamp for the measured effect) */
    if (NC_UNLIKELY(h->nkids)) hot_forward(h, blk, off, bytes, op);
    return inl_take(t->rank, root, blk, bytes, buf, bytes, h->my_area, op);
}

/* The default call. Small messages (0 .. fast_limit - 1 bytes, all inline; 0 bytes is a
 * payload-free inline op on the general path too) with the default tree's children
 * of this root cached in the hot line go to run_hot; everything else, and the first call
 * of a root, to the general path (which builds the tree). */
int nc_bcast_run(numacoll_team_t *t, void *buf, size_t bytes, int root)
{
    bcast_t *b = t->bcast;
    if (NC_LIKELY(b && bytes < b->hot.fast_limit) &&
        (NC_LIKELY(b->hot.kids_root == root) || hot_fill(b, root)))
        return run_hot(t, b, buf, bytes, root);
    return nc_bcast_run_opts(t, buf, bytes, root, NULL);
}
