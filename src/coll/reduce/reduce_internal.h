/*
 * Private header of coll/reduce/: the team's reduction buffers and the chunk protocol
 * every reduction algorithm runs on.
 *
 * Files:
 *   ops.c        element types and the kernels out = a op b
 *   state.c      the reduction buffers (created at a team's first reduction)
 *   protocol.c   the chunk protocol below and the call's loop over chunks
 *   flat.c       algorithm "flat": every reader folds all contributions of a chunk
 *   rsag.c       algorithm "rsag": reduce-scatter (each member folds its slice), allgather
 *   hier.c       algorithm "hier": group leaders fold up the topology levels
 *   registry.c   the algorithm table, the automatic choice, the public entry points
 *   stream.c     copy modes: plain or streamed stores, chosen by measured call times
 *   rscatter.c   algorithm "rscatter" of reduce_scatter(_block): each member folds its slice
 *   scan_flat.c  algorithm "scan-flat": member m folds the inputs of members 0..m
 *   scan_chain.c algorithm "scan-chain": member m folds member m-1's prefix and its input
 *   scatter_scan.c  their table, the automatic choice, the public entry points
 *   config_rows.c  NUMACOLL_ALLREDUCE, NUMACOLL_REDUCE and the sizes
 *
 * Buffers: member m owns one area (NUMA-local to it, written only by m):
 *   line 0: reduced (a chunk number: m's slice of it is in its result slot; rsag)
 *   line 1: done    (a chunk number: m has finished reading everything of it)
 *   line 2: partial (chunk * 16 + level + 1: m's partial fold of a level is in its result
 *           slot; hier)
 *   modes:  (lines after them) RD_STREAM_KINDS x RD_STREAM_CLASSES bytes: the copy mode m
 *           found best for allreduces, reduce-scatters and scans (as member 0) and reduces
 *           (as their root) of each size class (stream.c)
 *   in slots:     slots x (16 + fragment) bytes, m's input of chunk c in slot c % slots:
 *                 a stamp (the chunk number, the flag that posts it), the call's signature,
 *                 then the data, so that a small chunk travels in the stamp's line
 *   result slots: slots x fragment bytes, m's folded slice of chunk c (rsag) or its
 *                 partial fold (hier)
 *
 * A call cuts the message into chunks of at most fragment bytes; every member numbers them
 * with the same running count (state->next_chunk, 1, 2, ... over the team's life), so that
 * a flag's value says which chunk of which call it announces. For chunk c in slot c % slots:
 *   1. reuse: wait until every member's done >= c - slots (nobody reads the slot's previous
 *      chunk any more, neither our input nor our result slice);
 *   2. copy what the others read of our input of the chunk into our in slot (the
 *      algorithm's post step), write the call's signature, and publish stamp = c (release);
 *   3. wait until every member's stamp of the slot is >= c (acquire: their inputs and
 *      signatures of c are visible); on the call's first chunk compare every signature with
 *      ours (every algorithm waits there, so that a mismatch is seen by all);
 *   4. the algorithm's step (flat.c, rsag.c);
 *   5. publish done = c (release: all our reads of c happened before).
 * A member's stamps and done can be ahead of c by at most slots - 1 chunks (step 1), so the
 * slot a reader looks at holds chunk c until that reader's own done says c.
 *
 * Order of the fold: flat and rsag compute each element as ((x_0 op x_1) op x_2) ... op
 * x_{P-1}, in rank order; hier folds group by group (hier.c). Either way all members get
 * bitwise the same result, at every call.
 */
#ifndef NC_REDUCE_INTERNAL_H
#define NC_REDUCE_INTERNAL_H

#include "reduce.h"

/* out[k] = a[k] op b[k], k < n elements; out may be a */
typedef void (*rd_kernel_fn)(void *out, const void *a, const void *b, size_t n);

/* ops.c: the kernel of (dtype, op), or NUMACOLL_ERR_ARG naming what is allowed */
int rd_kernel_get(const char *who, numacoll_dtype_t dtype, numacoll_op_t op, rd_kernel_fn *fn);

enum { RD_LINE_REDUCED = 0, RD_LINE_DONE = 1, RD_LINE_PARTIAL = 2, RD_CTL_LINES = 3 };
/* NUMACOLL_REDUCE_STREAM (stream.c) */
enum { RD_STREAM_OFF = 0, RD_STREAM_ON = 1, RD_STREAM_AUTO = 2 };
enum { RD_STREAM_CLASSES = 16 }; /* size classes: powers of two from NUMACOLL_REDUCE_STREAM_MIN */
/* the kinds of call whose copy modes are chosen apart (stream.c) */
enum { RD_KIND_ALLREDUCE = 0, RD_KIND_REDUCE = 1, RD_KIND_RSCATTER = 2, RD_KIND_SCAN = 3,
       RD_STREAM_KINDS = 4 };

/* stream.c: a decider's last call times of one kind and size class, per mode (0 plain, 1
 * streamed), in nanoseconds per KiB */
typedef struct rd_mode_times {
    uint32_t ns_per_kib[2][4];
    uint8_t count[2]; /* samples kept (up to 4) */
    uint8_t next[2];  /* where the next one goes */
} rd_mode_times_t;
enum { RD_SLOT_HEADER = 16 }; /* stamp and signature before an in slot's data */
#define RD_HIER_LEVELS "numa,socket" /* the topology levels hier folds up (src/topo/) */

typedef struct nc_reduce_team {
    nc_seg_t seg;
    char *areas;          /* member m's area: areas + m * area_stride */
    size_t area_stride;   /* page multiple */
    size_t line;          /* the team's padding unit */
    size_t fragment;      /* bytes of a chunk (a multiple of 64) */
    unsigned slots;       /* in slots (and result slots) per member */
    size_t in_off;        /* offset of the in slots in an area */
    size_t in_stride;     /* bytes from one in slot to the next (header + fragment, 64-aligned) */
    size_t result_off;    /* offset of the result slots */
    size_t flat_max;      /* automatic choice: flat up to this many bytes, then rsag */
    const struct nc_hier *hier; /* topology groups for hier (owned by the team; NULL: flat) */
    int numa_nodes;       /* NUMA nodes the team spans (the automatic choice) */
    int oversubscribed;   /* the team's (agreed: from the union of the members' CPUs) */
    int alg_allreduce;    /* configured algorithm (-1 = auto) */
    int alg_reduce;
    int stream;           /* NUMACOLL_REDUCE_STREAM: RD_STREAM_OFF, _ON or _AUTO */
    size_t stream_min;    /* NUMACOLL_REDUCE_STREAM_MIN */
    size_t modes_off;     /* offset of the modes bytes in an area */
    /* auto: calls so far per kind (RD_KIND_*) and size class, the same on every member; and
     * this member's call times as the decider */
    uint64_t class_calls[RD_STREAM_KINDS][RD_STREAM_CLASSES];
    rd_mode_times_t times[RD_STREAM_KINDS][RD_STREAM_CLASSES];
    uint64_t next_chunk;  /* number of this process's next chunk (same on every member) */
    unsigned next_slot;   /* its slot: next_chunk % slots */
    uint64_t done_min;    /* lowest done seen at the last reuse check (a lower bound) */
    size_t eager;         /* bytes of each slot with pages from set-up (NUMACOLL_REDUCE_EAGER) */
    size_t ready;         /* bytes of each of this member's slots with pages: eager, fragment */
    int all_ready;        /* every member's slots have all their pages (a call of chunks
                             larger than eager passed its first-chunk check here) */
    uint64_t give_back;   /* NUMACOLL_REDUCE_GIVE_BACK (>= slots, or 0) */
    uint64_t small_run;   /* calls in a row within eager since the slots got all pages */
    uint64_t *sigs;       /* P signatures of a call's first chunk, kept where the call asks
                             (rd_call_t.keep_sigs: rbcast's member 0) */
} nc_reduce_team_t;

/* A first chunk's signature from a member that could not get the pages of its slots
 * (rd_state_ready failed): even, so never a call's signature (call_signature sets bit 0) */
#define RD_SIG_NOMEM 2u
/* ... from a member that cannot run the call on its own (invalid arguments, no memory for
 * its scratch; scatter_scan.c: it returns its own error, the others fail the call naming
 * it): even too */
#define RD_SIG_BADARG 4u

static inline char *rd_area(const nc_reduce_team_t *r, int m)
{
    return r->areas + (size_t)m * r->area_stride;
}
static inline _Atomic uint64_t *rd_flag(const nc_reduce_team_t *r, int m, int line)
{
    return (_Atomic uint64_t *)(rd_area(r, m) + (size_t)line * r->line);
}
/* member m's best copy mode for @p kind (0 allreduce, 1 reduce) and size class @p cls */
static inline _Atomic uint8_t *rd_best_mode(const nc_reduce_team_t *r, int m, int kind, int cls)
{
    return (_Atomic uint8_t *)(rd_area(r, m) + r->modes_off) + kind * RD_STREAM_CLASSES + cls;
}
/* Member m's in slot @p slot (a chunk c goes through slot c % slots: rd_chunk_t.slot) */
static inline char *rd_slot(const nc_reduce_team_t *r, int m, unsigned slot)
{
    return rd_area(r, m) + r->in_off + (size_t)slot * r->in_stride;
}
/* the stamp that posts member m's input of the chunk in @p slot (its first word) */
static inline _Atomic uint64_t *rd_stamp(const nc_reduce_team_t *r, int m, unsigned slot)
{
    return (_Atomic uint64_t *)rd_slot(r, m, slot);
}
static inline _Atomic uint64_t *rd_sig(const nc_reduce_team_t *r, int m, unsigned slot)
{
    return (_Atomic uint64_t *)rd_slot(r, m, slot) + 1;
}
static inline char *rd_in(const nc_reduce_team_t *r, int m, unsigned slot)
{
    return rd_slot(r, m, slot) + RD_SLOT_HEADER;
}
static inline char *rd_result(const nc_reduce_team_t *r, int m, unsigned slot)
{
    return rd_area(r, m) + r->result_off + (size_t)slot * r->fragment;
}

/* One call, as the algorithms see it. */
typedef struct rd_call {
    numacoll_team_t *team;
    nc_reduce_team_t *state;
    const char *input;  /* this member's input (recvbuf when in place) */
    char *output;       /* recvbuf; NULL on a reduce's non-root */
    size_t count;       /* elements */
    size_t esize;       /* bytes per element */
    rd_kernel_fn kernel;
    int root;           /* -1: allreduce */
    int me, nprocs;
    uint64_t sig;       /* the call's signature: count, type, op, root, algorithm */
    const char *who;    /* the entry point, for messages */
    int stream;         /* copy what others read with streamed stores (stream.c) */
    int timed;          /* this member times the call for the copy-mode choice */
    int kind, cls;      /* the call's kind and size class there */
    uint64_t t0;        /* when the timed call began (ns) */
    int keep_sigs;      /* copy every member's signature into state->sigs (first chunk) */
    /* calls that cut their chunks themselves (rd_run_chunks_of; 0 for the others): count
     * is then in units of the call's own choosing (scatter_scan.c: columns of slices),
     * chunk_elems of them per chunk, and a chunk uses at most slot_bytes of a slot */
    size_t chunk_elems;
    size_t slot_bytes;
    const size_t *slice_off; /* reduce_scatter: member m's slice starts at element
                                slice_off[m] of the vector, slice_off[P] is its length */
    int exclusive;           /* exscan */
    int post_own;            /* rscatter: post our own slice too and fold it from our in
                                slot (our input and output overlap: in place) */
} rd_call_t;

/* One chunk: elements [first, first + n) of the message, chunk number `number`, in slot
 * number % slots (kept by the caller: no division on the small-message path) */
typedef struct rd_chunk {
    uint64_t number;
    size_t first, n;
    unsigned slot;
} rd_chunk_t;

/* 1 if a fold may read our own input from our buffer while it writes the output: the two
 * do not overlap, or are the same buffer (in place) and we are member 0 or 1, whose input
 * the first kernel call reads element by element before writing the same element (rd_fold).
 * Buffers that overlap in part (MPI forbids them, some programs pass them) never. */
static inline int rd_fold_from_input_ok(const rd_call_t *call)
{
    if (call->input == call->output) return call->me <= 1;
    uintptr_t in = (uintptr_t)call->input, out = (uintptr_t)call->output;
    size_t bytes = call->count * call->esize;
    return in + bytes <= out || out + bytes <= in;
}

/* An algorithm's step 2: copy into our in slot what the others read of our input of the
 * chunk (no flag) */
typedef void (*rd_post_fn)(rd_call_t *call, const rd_chunk_t *chunk);
/* An algorithm's step 4 for one chunk; returns a status (wait failures) */
typedef int (*rd_step_fn)(rd_call_t *call, const rd_chunk_t *chunk);

typedef struct rd_algorithm {
    const char *name;
    const char *description;
    rd_post_fn post;
    rd_step_fn step;
} rd_algorithm_t;

/* indices into rd_algorithms */
enum { RD_ALG_FLAT = 0, RD_ALG_RSAG = 1, RD_ALG_HIER = 2, RD_ALG_RBCAST = 3 };
extern const rd_algorithm_t rd_algorithms[];
extern const int rd_algorithm_count;
void rd_post_flat(rd_call_t *call, const rd_chunk_t *chunk);
int rd_step_flat(rd_call_t *call, const rd_chunk_t *chunk);
void rd_post_rsag(rd_call_t *call, const rd_chunk_t *chunk);
int rd_step_rsag(rd_call_t *call, const rd_chunk_t *chunk);
int rd_step_hier(rd_call_t *call, const rd_chunk_t *chunk);
void rd_post_rscatter(rd_call_t *call, const rd_chunk_t *chunk);
int rd_step_rscatter(rd_call_t *call, const rd_chunk_t *chunk);
void rd_post_scan_flat(rd_call_t *call, const rd_chunk_t *chunk);
int rd_step_scan_flat(rd_call_t *call, const rd_chunk_t *chunk);
void rd_post_scan_chain(rd_call_t *call, const rd_chunk_t *chunk);
int rd_step_scan_chain(rd_call_t *call, const rd_chunk_t *chunk);
/* registry.c: nc_reduce_run, and with @p keep_sigs the members' signatures of the call's
 * first chunk in the state's sigs (the member compares them: the root of a reduce, every
 * member of an allreduce) */
int rd_reduce_run(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                  numacoll_dtype_t dtype, numacoll_op_t op, int root, int alg, const char *who,
                  int keep_sigs);
/* registry.c: the part a member whose own arguments are invalid still takes in a call of
 * the others (its error @p rc, message set): the first chunk, an empty one posting
 * RD_SIG_BADARG, as the reduce to @p root (-1: an allreduce) with algorithm @p alg (-1:
 * the automatic choice; an allreduce's rbcast adds member 0's two broadcasts); every
 * member then fails the call and all keep counting chunks and broadcasts alike. @p root
 * out of range: a reduce whose root this member does not know. Returns @p rc with this
 * member's message, or the team's failure (a dead member, a timeout). */
int rd_fail_alike(numacoll_team_t *t, int rc, int root, int alg, const char *who);
/* the empty first chunk of rd_fail_alike (and of rbcast.c's reduce to member 0), with
 * @p keep_sigs as rd_reduce_run's */
int rd_badarg_chunk(numacoll_team_t *t, int root, int alg, int keep_sigs, const char *who);
/* rbcast.c: rd_fail_alike's part in an allreduce that the others run as rbcast */
int rd_rbcast_fail_alike(numacoll_team_t *t, const char *who);
/* registry.c: NUMACOLL_ERR_ARG naming the first member (rank order) whose signature in
 * @p sigs differs from member @p me's */
int rd_mismatch_error(const char *who, const uint64_t *sigs, int nprocs, int me, int root);
/* rbcast.c: an allreduce as a flat reduce to member 0 and its broadcast of the result (not
 * a chunk algorithm: its table entry has no post and step) */
int rd_allreduce_rbcast(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                        numacoll_dtype_t dtype, numacoll_op_t op, const char *who);

/* protocol.c: wait until *@p flag, written by @p member, is >= @p target (acquire); the
 * caller's comment says what the value announces */
int rd_wait_flag(rd_call_t *call, int member, _Atomic uint64_t *flag, uint64_t target);
/* protocol.c: wait until every member's flag @p line is >= @p target (acquire) */
int rd_wait_all(rd_call_t *call, int line, uint64_t target);
/* protocol.c: wait until every member has posted its input of @p chunk (acquire) */
int rd_wait_posted(rd_call_t *call, const rd_chunk_t *chunk);
/* protocol.c: fold elements [first, first + n) of @p chunk (counted from the chunk's first
 * element) of every member's input, in rank order, into @p out. Member m's input comes from
 * its in slot, ours from our own input buffer when @p own_from_input (rsag does not post
 * the slice it folds itself, nor does a reduce's root in flat). @p out overlaps no input,
 * or is our own input (in place) and we are member 0 or 1, whose input the first kernel
 * call reads element by element before it writes the same element. */
void rd_fold(const rd_call_t *call, const rd_chunk_t *chunk, size_t first, size_t n, char *out,
             int own_from_input);
/* protocol.c: post our whole input of @p chunk in our in slot (rd_copy_shared; hier's post,
 * flat's but for a reduce's root) */
void rd_post_whole(rd_call_t *call, const rd_chunk_t *chunk);
/* protocol.c: run a call's chunks with algorithm @p alg (of rd_algorithms) */
int rd_run_chunks(rd_call_t *call, int alg);
/* protocol.c: run a call's chunks with @p algorithm, cut as call->chunk_elems says */
int rd_run_chunks_of(rd_call_t *call, const rd_algorithm_t *algorithm);
/* registry.c: before a call's first chunk, whose chunks use up to @p slot_bytes of each
 * slot: count calls within the set-up pages (give back the rest after give_back of them
 * in a row), or get the rest of this member's pages; where they cannot be had, the call's
 * signature becomes RD_SIG_NOMEM (every member then fails it: protocol.c) */
void rd_call_pages(rd_call_t *call, size_t slot_bytes);

/* stream.c: choose the copy mode (call->stream) of a call of @p kind (RD_KIND_*) before its
 * first chunk */
void rd_stream_begin(rd_call_t *call, int kind);
/* stream.c: after a call that succeeded: the decider records its time */
void rd_stream_end(rd_call_t *call);
/* stream.c: copy @p n bytes that other members will read, in the call's copy mode */
void rd_copy_shared(const rd_call_t *call, void *dst, const void *src, size_t n);
/* stream.c: the best mode after the samples in @p t (the current one, @p best, unless the
 * other's median is 10% lower; the current one while a mode has no sample) */
int rd_stream_pick(const rd_mode_times_t *t, int best);
/* stream.c: keep a call of @p ns nanoseconds and @p bytes in mode @p mode's last samples */
void rd_stream_record(rd_mode_times_t *t, int mode, uint64_t ns, size_t bytes);

/* state.c: the team's reduction state, created collectively at its first reduction */
int rd_state_get(numacoll_team_t *t, nc_reduce_team_t **state);
/* state.c: give member @p me's whole area its pages (once; NUMACOLL_ERR_NOMEM naming the
 * cause when they cannot be had). Local: the call's first chunk tells the others. */
int rd_state_ready(nc_reduce_team_t *r, int me);
/* state.c: return the pages of member @p me's slots beyond their eager bytes. Called at
 * the start of a call after more than give_back (>= slots) calls in a row within eager:
 * each of them waited, before reusing a slot, until every member was done with that
 * slot's chunk of slots chunks before, so nobody reads the returned pages any more. Every
 * member counts the same calls (all_ready was set on all or none), so all reset
 * all_ready at the same call. */
void rd_state_give_back(nc_reduce_team_t *r, int me);

#endif
