/*
 * Private to coll/bcast/: the broadcast's shared-memory protocol, its team state and the
 * helpers its files share. Functions named bc_* are the files' exchange (hidden: no PLT,
 * not exported); the static inline ones sit on the call path.
 *
 * The pipelined shared-memory broadcast of paper 3 (M. Kurnosov, E. Tokmasheva), with
 * inline small messages, an optional NUMA relay and an optional CMA path. Its files:
 *   bcast.c      the entry (nc_bcast_run_opts) and the choice of the path
 *   inline.c     the inline path, the default call nc_bcast_run and its hot path
 *                (inline.h: the inline copies, in line where they are used)
 *   queue.c      the queue path (the paper's pipeline: fragments, sets, relay)
 *   cma.c        the CMA path
 *   select.c     the copy-mode selector of the queue path
 *   state.c      the team's state: agreement, layout, segment
 *   give_back.c  a queue's pages returned after NUMACOLL_BCAST_GIVE_BACK calls without it
 *   calibrate.c  the model's constants t and t_W
 *   wait.c       the waits that run out of line (the others are below)
 *   tree.c       notification trees and this process's tree cache
 *   model.c, plan.c, check.c: the cost model, the decisions (plan.h), NUMACOLL_BCAST_CHECK
 *
 * Segment (created collectively at the team's first broadcast; w = page size):
 *
 *   global (first-touched by rank 0):
 *       numa_leaders[P] (int32; the NUMA leader of each rank)     rounded up to a page
 *       q pages, one per set: the set's op word (set_op_word: op + 1 of the last op
 *       started on it, written by that op's root; diagnostic, nobody waits on it)
 *   per process r (first-touched by r, bound to its NUMA node):
 *       ack line                 (word 0: op + 1 of the last op r has finished; word 1: the
 *                                CMA guard, cma_guard; words 2-7: r's arguments of
 *                                its last two checked calls, NUMACOLL_BCAST_CHECK;
 *                                single writer r)
 *       s control lines          (one per queue slot: ctl_line_t)
 *       8 inline blocks          (one per op mod 8: {stamp, word, payload[inline_room]})
 *       report words             (P, one per root: report_word; the copy-mode selector)
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
 *
 * Queue memory (NUMACOLL_BCAST_POPULATE=first-use, no relay: "lazy"): a process's queue
 * has no pages at set-up; the root of op n gives set n % q pages up to where the op's data
 * end (populate_set, queue.c) after its reuse wait. A relay copy needs pages in the
 * relay's queue too (only with the relay forced per call on lazy queues): a relay that
 * cannot get them fails its subtree's call (OPF_NOSPACE). A root that cannot get the
 * first pages of its queue fails the call on every member the same way (it tells its
 * children, who forward it; the MPI layer then uses the MPI's broadcast on that
 * communicator). A root whose queue had pages and gave them back (below) has been working
 * with them, so failing to get them again must not fail the call: it sends the op in an
 * inline piece instead (OPF_SHORT): min(left, inline_room) bytes of
 * the message in every child's inline block n % 8, written after the root's wait for
 * every ack >= n - 8 + 1 (root_inline's argument: nobody reads the blocks), announced
 * with size and OPF_SHORT in the control line of the set's first slot (stamp n + 1,
 * release after the payload); each receiver, after its acquire load of that stamp, copies
 * its block into its children's blocks and announces it the same way, then copies its
 * share out and acks n. The piece's size follows from the root's message size and the
 * agreed inline room, so a receiver checks it; the choice is the root's alone, per op, and
 * needs no agreement (the receivers read it where they wait anyway). The rest of the call
 * goes in pieces too; the next call tries to populate again. No extra pages: the blocks
 * lie in the control area, which has its pages from set-up.
 *
 * Giving the pages back (give_back.c; lazy queues, NUMACOLL_BCAST_GIVE_BACK = G > 0):
 * a process that wrote into its queue in op L (as root, or as a relay's copy) counts the
 * calls since (hot.op: one op per inline or CMA broadcast; a queue broadcast of other
 * roots counts as one, bc_run_queue moves give_due on), and after the G-th looks, without
 * waiting, at every other member's ack: if each is >= L + 1, it punches its queue's pages
 * out of the shared file (MADV_REMOVE) and sets populated[] to 0, so its next queue op
 * populates again; else it looks again after its next call. Why this is safe: only this
 * process writes its queue; its readers (the children of its ops, and the readers of a
 * relay copy) read it only in ops that wrote it, the last being L, and each acks an op
 * (release) after its last read of it; acks are monotonic and ops processed in order, so
 * the acquire load that shows ack >= L + 1 orders every read of the queue before the
 * punch. A later read needs a later stamp from this process, which it publishes (release)
 * after populating and writing the set again. The control lines, inline blocks, acks and
 * the sets' op words lie outside the queue and are never punched, so waiters keep polling
 * valid memory. The decision is each process's own (its queue is read only through the
 * stamps it publishes), so the members need not agree and may count apart. The hot path
 * compares the low 32 bits of give_due with hot.op after each call (a line it holds
 * anyway); bc_give_back checks the whole count.
 */
#ifndef NC_BCAST_INTERNAL_H
#define NC_BCAST_INTERNAL_H

#include "bcast.h"
#include "plan.h"

#pragma GCC visibility push(hidden)

/* inline blocks per process (ops mod 8): a root of back-to-back small broadcasts reads a
 * receiver's ack line (a cache miss) once per 8 calls. More blocks would spread the polled
 * lines over more cache, which costs more than the ack reads they save; fewer would read
 * the ack lines more often. */
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
#define FLAGS_MASK 0x3ffull /* the NT_* and OPF_* bits of a control line's `flags` */
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
 * into one cache line at the start of the line-aligned bcast_t, where the general path
 * touches about a dozen lines of local state per call (team, options, tree arrays, ack
 * cache), each a cache miss when another tenant of the host has evicted it. The cached
 * child list is the default tree's for one root (the last one). */
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
    uint32_t give_due32; /* the low 32 bits of give_due (bc_give_back: op == this after a
                          * call of the hot path; a match at another op only looks) */
} hot_line_t;
_Static_assert(sizeof(hot_line_t) <= 64, "the hot state must fit one cache line");

struct nc_bcast_team {
    hot_line_t hot; /* first: line-aligned (see bc_state_create) */
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
    size_t stream_root_min; /* NUMACOLL_BCAST_STREAM_MIN: the root streams (0 = never) */
    size_t stream_recv_min; /* NUMACOLL_BCAST_STREAM_OUT_MIN: receivers stream (0 = never) */
    int rotate;             /* rotate an op's data through its set (frag_buf) */
    int adapt;              /* choose the copy mode per size class from timed probes (sel) */
    int check;              /* NUMACOLL_BCAST_CHECK: compare the arguments first (check.c) */
    uint64_t checks_done;   /* checked calls so far (identical on all members) */
    /* [SEL_CLASSES], per log2 size class, on the root side only (local state); allocated
     * at the first broadcast that has copy modes to choose from (select.c), so a team that
     * broadcasts only small messages does not carry it; NULL before */
    struct sel *sel_classes;
    /* the size class whose measured run is open (-1: none; one at a time, since a receiver
     * keeps one sum per root), opened at selection call open_run_at */
    int open_run_class;
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
    int t_measured, tw_measured; /* where the model's t / t_W came from (bc_model_src) */
    size_t *populated; /* [q] bytes from the start of my queue's set that have their memory
                        * (the whole set unless lazy); ops use their set from its start up,
                        * rotating (frag_buf), so a high-water mark describes it */
    /* giving the queue's pages back (give_back.c; the protocol at the top) */
    uint64_t give_back;     /* NUMACOLL_BCAST_GIVE_BACK (0: never, also when not lazy) */
    uint64_t give_due;      /* look at the acks after the call that leaves hot.op here
                             * (UINT64_MAX: nothing in the queue to give back) */
    uint64_t queue_last_op; /* the last op that wrote into my queue */
    int gave_back;          /* we gave the queue's pages back at least once: a root that
                             * cannot get them again sends in inline pieces (OPF_SHORT) */
    int short_logged;       /* we said (NUMACOLL_VERBOSE) that we send in inline pieces */
};

struct sel { /* the copy-mode selector of one log2 size class (bcast_t.sel_classes) */
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
};

typedef struct nc_bcast_team bcast_t;

/* ---- layout ------------------------------------------------------------------------ */

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
/* word 1 of r's ack line, the CMA guard (bc_root_cma, bc_cma_guarded_read): op + 1 of the CMA op
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
 * (bc_run_queue); the root's choice, which every member reads from the op's first control line */
#define OPF_WHOLE 128
/* this op's data start at the start of its set, not at a rotating offset (frag_buf); the
 * root's choice, read as OPF_WHOLE */
#define OPF_NOROT 256
/* this op of a queue broadcast carries min(left, inline_room) bytes of the message in the
 * receivers' inline blocks of the op (op % INLINE_BLOCKS), not in the queue: the root
 * could not get its queue's pages (see the protocol at the top); the root's choice per op,
 * in the control line of the op's first slot (its `size`: the piece's bytes) */
#define OPF_SHORT 512
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

/* ---- a call ------------------------------------------------------------------------ */

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

/* ---- waits (wait.c; the spin phases in line) ---------------------------------------- */

/* The fast check and the wait policy's spin phase (spin_limit pauses, none when
 * oversubscribed) on @p p as a bare loop, nc_wait_t set up only after it, off the receiver's
 * fast path: 1 if @p p showed @p want.
 * Wait loop: the callers' (wait_stamp, wait_first) say who writes @p p and what the acquire
 * load that shows @p want makes visible. */
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

/* The yielding phase after spin_stamp: until @p p shows @p want (NUMACOLL_OK) or @p alt, if
 * not NULL, does (WAIT_ALT); or the wait's error (a dead member, the team's timeout). */
#define WAIT_ALT 1
int bc_wait_yield(numacoll_team_t *t, _Atomic uint64_t *p, _Atomic uint64_t *alt, uint64_t want);
/* wait_first's yielding phase, on both lines of op @p op (out of line: the hot path's code
 * stays small, and the control line's address costs a division). */
__attribute__((noinline)) int bc_wait_both(numacoll_team_t *t, bcast_t *b, int p_is_blk,
                                           uint64_t op);
/* Wait until member @p r has finished the ops before @p need (ack >= need). */
int bc_wait_ack_of(numacoll_team_t *t, bcast_t *b, int r, uint64_t need);

static inline int wait_stamp(numacoll_team_t *t, _Atomic uint64_t *p, uint64_t want)
{
    /* Wait loop: the only writer is this op's parent of ours in the tree; it stores the
     * stamp with release after the size and payload (and after the data it forwards were
     * written by it or by its own parent). After the acquire load shows `want`, the size,
     * the payload and the fragment in the source's slot are visible to us. */
    if (spin_stamp(t, p, want)) return NUMACOLL_OK;
    return bc_wait_yield(t, p, NULL, want);
}

/* A receiver's wait for the first notification of op @p op at @p p: its inline block of
 * the op (@p p_is_blk) or the control line of the op's first slot; past the spin phase on
 * both lines (see KIND_CMA), *in_alt = 1 if the other one came.
 * Wait loop: p and the other line are two lines of ours that only this op's parent writes
 * (an inline block and the control line of the op's first slot), each with release after
 * what it publishes (payload and word; size, flags and msg_bytes), so an acquire load that
 * shows op + 1 makes that visible. Which of the two it writes depends on the root's path. */
static inline int wait_first(numacoll_team_t *t, bcast_t *b, _Atomic uint64_t *p, int p_is_blk,
                             uint64_t op, int *in_alt)
{
    *in_alt = 0;
    if (spin_stamp(t, p, op + 1)) return NUMACOLL_OK;
    /* out of line, our flag as its result (no address of the caller's flag escapes, so the
     * hot path's callers keep their tail calls) */
    int rc = bc_wait_both(t, b, p_is_blk, op);
    *in_alt = rc == WAIT_ALT;
    return rc == WAIT_ALT ? NUMACOLL_OK : rc;
}

/* Wait until every other member has finished the ops before @p need (bc_wait_ack_of says
 * who writes the acks and what seeing one means). */
static inline int wait_acks(numacoll_team_t *t, bcast_t *b, uint64_t need)
{
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank) continue;
        int rc = bc_wait_ack_of(t, b, r, need);
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

/* Before reusing what op - lag used: every member must have finished op - lag. */
static inline int wait_reuse(numacoll_team_t *t, bcast_t *b, uint64_t op, uint64_t lag)
{
    return op >= lag ? wait_acks(t, b, op - lag + 1) : NUMACOLL_OK;
}

static inline void post_ack(numacoll_team_t *t, bcast_t *b, int me, uint64_t op)
{
    /* release: all our reads (and writes) of op happen before a root sees the ack (woken if
     * it sleeps on it) */
    nc_flag_post(t, ack_word(b, me), op + 1);
}

/* ---- the files' exchange -------------------------------------------------------------- */

/* state.c: create the team's broadcast state (collective; t->bcast on success) */
int bc_state_create(numacoll_team_t *t);

/* calibrate.c: the model's constants for the team (collective; every member gets rank 0's)
 * and where t and t_W came from (NC_BMODEL_*) */
int bc_model_init(numacoll_team_t *t, nc_bcast_model_t *md, int *t_meas, int *tw_meas);
extern const char *const bc_model_src[3]; /* "configured", "measured", "fallback" */
/* Median of @p n (a handful of) samples, the mean of the middle two for even n, 0 for none;
 * sorts @p v ascending in place (insertion sort). */
double bc_median_small(double *v, size_t n);

/* tree.c: the per-root tree cache of this process */
void bc_tree_free(tree_cache_t *c);
int bc_tree_build(numacoll_team_t *t, bcast_t *b, int kind, int k);
/* The tree @p kind with fan-out @p k, built at its first use (or when k changed). */
static inline int tree_ready(numacoll_team_t *t, bcast_t *b, int kind, int k)
{
    tree_cache_t *c = &b->trees[kind];
    if (c->built && c->fanout == k) return NUMACOLL_OK;
    return bc_tree_build(t, b, kind, k);
}

/* bcast.c: a receiver's error for a size @p cap other than the root's @p sent */
int bc_size_error(int me, int root, size_t cap, size_t sent);

/* inline.c: copy a small payload into each child's inline block @p set and publish it */
void bc_inl_forward(call_t *x, size_t set, const void *data, size_t n, uint64_t word,
                    uint64_t stamp);

/* cma.c */
int bc_cma_probe(int32_t pid, uint64_t addr); /* 1: process_vm_readv from @p pid works */
uint64_t bc_cma_probe_addr(void);             /* the address bc_cma_probe reads in this process */
int bc_root_cma(call_t *x, void *buf, size_t bytes);
int bc_cma_guarded_read(call_t *x, const cma_desc_t *d, void *buf, size_t bytes, uint64_t op);

/* queue.c: a queue broadcast of the root's @p bytes, of which a receiver keeps @p cap */
int bc_run_queue(call_t *x, char *buf, size_t bytes, size_t cap);

/* give_back.c: after a call, when hot.op has reached give_due: return my queue's pages if
 * every other member has acked the last op that wrote into it (never waits; else look
 * again after the next call) */
__attribute__((noinline)) void bc_give_back(numacoll_team_t *t, bcast_t *b);
/* after every call (the general path's; the hot path compares the low 32 bits in line) */
static inline void give_back_check(numacoll_team_t *t, bcast_t *b)
{
    if (NC_UNLIKELY(b->hot.op >= b->give_due)) bc_give_back(t, b);
}
/* a write into my queue in op @p op: the count starts again */
static inline void queue_written(bcast_t *b, uint64_t op)
{
    b->queue_last_op = op;
    b->give_due = b->give_back ? op + 1 + b->give_back : UINT64_MAX;
    b->hot.give_due32 = (uint32_t)b->give_due;
}

/* select.c: the copy-mode selector (see there) */
#define SEL_EVERY_MIN ((size_t)1 << 20) /* from here on every call of the best is measured */
int bc_sel_cands(const bcast_t *b, size_t bytes, int *c);
int bc_sel_choose(bcast_t *b, size_t bytes, int deflt, int *measure);
void bc_sel_root_done(bcast_t *b, size_t bytes, int mode, int bits, int rc, uint64_t ns);
void bc_sel_harvest(numacoll_team_t *t, bcast_t *b);
void bc_sel_log(numacoll_team_t *t, bcast_t *b);

/* check.c: NUMACOLL_BCAST_CHECK for this call (see there) */
__attribute__((noinline)) int bc_check_call(numacoll_team_t *t, bcast_t *b, size_t bytes, int root,
                                            const nc_bcast_opts_t *o);

#pragma GCC visibility pop

#endif
