/*
 * Private header of coll/move/: the data-movement engine shared by gather, scatter,
 * allgather, alltoall and their v-forms.
 *
 * Files:
 *   state.c        the team's buffers and agreed parameters (created at its first call)
 *   copy.c         path "copy": a member's stream of chunks through its NUMA-local slots
 *   cma.c          path "cma": single copy from the owner's buffer with process_vm_readv
 *   engine.c       the paths' table and one call's progress loop (writer and readers)
 *   collectives.c  the public entry points: arguments, the blocks each member moves
 *   config_rows.c  NUMACOLL_MOVE and its sizes
 *
 * Every call is a set of blocks, each with one owner (the member whose buffer holds it)
 * and one or more readers: allgather(v) every member's block read by all others, gather(v)
 * read by the root, scatter(v) the root's block d read by member d, alltoall(v) member o's
 * block d read by member d. A member's own block is copied locally.
 *
 * Each call has a number k, the same on every member (state->calls: every member counts
 * every call). In call k an owner writes one stream:
 *   head     16 bytes: the call's signature, the owner's pid, the number of entries n
 *   entries  n x 16 bytes: per block (one: the same block for every reader; or one per
 *            destination member but the owner, in member order: member d's is entry
 *            mv_entry_of(o, d), so that at P = 2 a block of up to 16 bytes still travels
 *            in the stamp's line) its size and where it is: MV_IN_STREAM | its offset in
 *            the stream, or (single copy) its address in the owner's process; a reader
 *            reads the head and its own entry only
 *   data     the blocks that go through the stream, in entry order, back to back
 * cut into chunks of C bytes, the owner's choice for the call: C = slot_stride - 16 when
 * its slots have all their pages, else the short C = eager - 16 (the part of each slot
 * that has pages from set-up: an owner that cannot get the rest at a call streams it in
 * short chunks, only slower). Chunk i of call k goes into the owner's slot (k + i) % slots:
 * a stamp (8 bytes: st(k, i) = k << 24 | (i + 1), which grows with k and i), C (8 bytes),
 * then the chunk's bytes; so a small block (up to 16 bytes in a one-block stream, or in a
 * stream of P = 2) travels in the stamp's cache line. The eager part holds at least the slot's header, the head
 * and P entries (state.c; where these exceed a whole slot, eager is the whole slot and
 * the short C the full one), so a short chunk 0 holds the head and every entry. A reader
 * learns C from chunk 0 (its first read, the head with entry 0, lies in the first 32
 * bytes: in chunk 0 for every C) before it needs C to find any later byte; C is the
 * owner's alone, the same for all of its stream in a call, and may differ between calls.
 *
 * Member m's area (NUMA-local to m, written only by m):
 *   line 0      read_done: k once m has finished every read of call k (single-copy owners
 *               wait for it before they return; their buffer must not change earlier)
 *   line 1      cma_reading: k while m may read an owner's buffer in call k (cma.c)
 *   line 2      cma_abandoned: MV_ABANDONED | k when m, an owner, gave up waiting for its
 *               readers in call k (a member died or timed out; cma.c)
 *   lines 3..   consumed[o], one line per member o: m is done with every chunk of o's
 *               stream up to this stamp (st(k, MV_END): with all of o's call k)
 *   slots       slots x slot_stride bytes
 *
 * Protocol of chunk i of call k, owner o, slot s = (k + i) % slots:
 *   1. reuse: o keeps (local) the stamp of the chunk last written to s and the range of
 *      members that read it; it waits until each of them has consumed[o] >= that stamp
 *      (loading a reader's line only when the value it last loaded there is too low);
 *   2. o writes C and the chunk's bytes into s and publishes stamp = st(k, i) (release);
 *   3. a reader waits for stamp >= st(k, i) (acquire: the bytes are visible), copies what
 *      it needs, and after its last read of the chunk publishes consumed[o] = st(k, i)
 *      (release), or st(k, MV_END) after its last read of o's stream in call k.
 * A stamp above st(k, i) in the slot means o did not count the reader among those of the
 * chunk: the members disagree about the call (different roots or kinds); the reader
 * fails with NUMACOLL_ERR_ARG. Owners write and readers read in one loop (engine.c) that
 * never blocks on one flag while it could make progress on another, so that members that
 * are owners and readers at once (allgather, alltoall) cannot wait on each other.
 *
 * Arguments: every member computes the call's signature from what all members must pass
 * alike (the kind, the root, allgather's block size, allgatherv's sizes); a reader
 * compares the owner's signature and the size the owner gives its block with its own, and
 * fails with NUMACOLL_ERR_ARG naming the owner on a difference (after taking part in the
 * rest of the call: it still writes its stream and marks every owner read, so that the
 * next call finds the slots as the others do). An owner whose arguments are invalid
 * (NULL buffers, a message too large) posts a marked signature (MV_SIG_BAD) and no
 * blocks, and its readers fail too. Memory is no reason to fail: an owner without the
 * pages of its slots beyond the eager part streams in short chunks (above).
 *
 * Giving the pages back (state.c, mv_state_give_back): after give_back calls in a row in
 * which its own stream (if it wrote one) fit the eager part, a member punches its slots'
 * pages beyond the eager part out of the shared file, at the end of a call; its next
 * larger stream gets them again (ready = 0: the lazy path above). Only the owner writes
 * its slots and only it chooses C, so this needs no agreement: its readers follow the C
 * it announces, whether its pages are there or not, and the members may count apart.
 * A reader may still be reading a large chunk of an earlier call from the owner's slot:
 * an owner leaves a call once its chunks are written and its own reads done, not when its
 * readers are done; an owner that wrote a stream in each of the give_back (>= slots)
 * calls since has reused every slot and so waited for them (step 1), but one that wrote
 * none in some of them (a gather's root, a scatter's non-root) waited for nobody there. So the owner keeps, per slot,
 * whether the chunk last written there went beyond the eager part, and punches only when
 * every reader of each such chunk has consumed[owner] at or past its stamp (acquire: the
 * reader's reads of it happened before, so removing the pages cannot change what it read;
 * it reads the slot again only after a later stamp there, which the owner publishes after
 * the punch). Earlier chunks of a slot were consumed before the owner reused it (step 1
 * below), so the last is the only one to check. The stamp and C live in the slot's first
 * bytes, in the eager part, which is never punched: readers that wait on a stamp keep
 * reading valid memory. Otherwise (a reader is behind) the owner looks again at the end
 * of its next call; it never waits for it.
 */
#ifndef NC_MOVE_INTERNAL_H
#define NC_MOVE_INTERNAL_H

#include "move.h"

enum { MV_MODE_AUTO = 0, MV_MODE_COPY = 1, MV_MODE_CMA = 2 };
enum { MV_PATH_COPY = 0, MV_PATH_CMA = 1 }; /* indices into mv_paths */
enum { MV_LINE_READ_DONE = 0, MV_LINE_CMA_READING = 1, MV_LINE_CMA_ABANDONED = 2,
       MV_CTL_LINES = 3 };
enum { MV_SLOT_HEADER = 16, MV_HEAD_BYTES = 16, MV_ENTRY_BYTES = 16 };
#define MV_CHUNK_BITS 24
#define MV_END ((1ull << MV_CHUNK_BITS) - 1) /* stamp index of "all of the call" */
#define MV_MAX_CHUNKS (MV_END - 1)           /* chunks of one stream in one call */
#define MV_ABANDONED (1ull << 63)
/* marked signatures (even: a call's signature has bit 0 set) */
#define MV_SIG_BAD 2u /* the owner's arguments are invalid (its own error says which) */

static inline uint64_t mv_stamp(uint64_t k, uint64_t i)
{
    return k << MV_CHUNK_BITS | (i + 1);
}

typedef struct mv_head {
    uint64_t sig;
    int32_t pid;
    uint32_t entries;
} mv_head_t;
typedef struct mv_entry {
    uint64_t size;
    uint64_t where; /* MV_IN_STREAM | offset in the stream, or the address (single copy) */
} mv_entry_t;
#define MV_IN_STREAM (1ull << 63) /* above every user-space address */
static inline int mv_in_stream(const mv_entry_t *e)
{
    return (e->where & MV_IN_STREAM) != 0;
}

/* the entry of destination member @p d (not @p owner) in @p owner's list of one entry per
 * destination, and back */
static inline uint32_t mv_entry_of(int owner, int d)
{
    return (uint32_t)(d < owner ? d : d - 1);
}
static inline int mv_member_of(int owner, uint32_t e)
{
    return (int)e < owner ? (int)e : (int)e + 1;
}

/* what the owner remembers of the chunk last written to a slot */
typedef struct mv_slot_rec {
    uint64_t stamp;
    int lo, hi; /* the members that read it: lo..hi but the owner (none: lo > hi); lo
                   advances past the members known to have consumed it */
    int big;    /* its bytes went beyond the slot's eager part */
} mv_slot_rec_t;

typedef struct nc_move_team {
    nc_seg_t seg;
    char *areas;
    size_t area_stride; /* page multiple */
    size_t line;
    size_t fragment;    /* NUMACOLL_MOVE_FRAGMENT */
    unsigned slots;
    size_t slot_stride; /* fragment + 64 */
    size_t chunk;       /* bytes of a chunk: slot_stride - MV_SLOT_HEADER */
    size_t slots_off;   /* offset of the slots in an area (page multiple) */
    size_t eager;       /* bytes of each slot with pages from set-up */
    int short_logged;   /* we said (NUMACOLL_VERBOSE) that we stream in short chunks */
    size_t stream_min;  /* NUMACOLL_MOVE_STREAM_MIN: blocks this large go in streamed */
    int ready;          /* this member's slots have all their pages */
    int mode;           /* MV_MODE_*, after the agreement on single copy */
    int cma_ok;         /* process_vm_readv works between the members (agreed) */
    int32_t pid;        /* ours, for the streams' heads */
    size_t cma_min;     /* auto: single copy for blocks of at least this many bytes */
    size_t cma_read_oversub; /* NUMACOLL_MOVE_CMA_READ_OVERSUB (path_rule, state.c) */
    uint64_t cma_cost_milli; /* NUMACOLL_MOVE_CMA_COST x 1000: process_vm_readv's time per
                                byte over memcpy's (path_rule, state.c) */
    int members;        /* the team's size */
    int oversubscribed; /* the team's (agreed): auto weighs cma_read_oversub, not cma_min */
    uint64_t calls;     /* calls so far (the same on every member) */
    uint64_t give_back; /* NUMACOLL_MOVE_GIVE_BACK (>= slots, or 0: never) */
    uint64_t small_run; /* calls in a row in which our stream (if any) fit the eager part */
    unsigned call_slot; /* calls % slots, kept without a division */
    mv_slot_rec_t *rec; /* per slot */
    uint64_t *seen;     /* per member: its consumed[us] as we last loaded it (a lower bound:
                           slot reuse loads another's line only when this is too low) */
    /* per-call scratch, P entries each */
    mv_entry_t *ent;
    const char **src;
    struct mv_read *reads;
    char *heads; /* P x (head, our entry) as read from the owners */
} nc_move_team_t;

static inline char *mv_area(const nc_move_team_t *s, int m)
{
    return s->areas + (size_t)m * s->area_stride;
}
static inline _Atomic uint64_t *mv_flag(const nc_move_team_t *s, int m, int line)
{
    return (_Atomic uint64_t *)(mv_area(s, m) + (size_t)line * s->line);
}
/* reader m's progress in owner o's stream */
static inline _Atomic uint64_t *mv_consumed(const nc_move_team_t *s, int m, int o)
{
    return mv_flag(s, m, MV_CTL_LINES + o);
}
static inline char *mv_slot(const nc_move_team_t *s, int m, unsigned slot)
{
    return mv_area(s, m) + s->slots_off + (size_t)slot * s->slot_stride;
}
static inline _Atomic uint64_t *mv_slot_stamp(const nc_move_team_t *s, int m, unsigned slot)
{
    return (_Atomic uint64_t *)mv_slot(s, m, slot);
}
/* the second word of a slot's header: C, the bytes of a chunk of the stream it belongs to
 * (written by the owner before the stamp, read after it) */
static inline uint64_t *mv_slot_chunk(const nc_move_team_t *s, int m, unsigned slot)
{
    return (uint64_t *)(mv_slot(s, m, slot) + sizeof(uint64_t));
}

/* One reader's reading of one owner in a call */
enum { MV_READ_HEAD = 0, MV_READ_ENTRY, MV_READ_DATA, MV_READ_DONE };
typedef struct mv_read {
    int owner;
    uint32_t entry;  /* our entry in the owner's list (0: one block for all readers) */
    uint32_t nent;   /* entries in the owner's list (1, or one per member but the owner) */
    size_t expect;   /* the size we expect (checked against the owner's entry) */
    char *dst;       /* where the block goes */
    int phase;
    int path;             /* MV_PATH_* of the block, as its owner chose it */
    size_t chunk;         /* the owner's C in this call (0: not read yet, chunk 0 says) */
    size_t off, len, got; /* the stream range being read, and how much of it we have */
    char *into;           /* where that range goes */
    uint64_t last_chunk;  /* the last chunk we read from (to publish when we leave it) */
} mv_read_t;

/* One call, as the engine sees it */
typedef struct mv_call {
    numacoll_team_t *team;
    nc_move_team_t *state;
    const char *who;
    int me, P, root; /* root -1: allgather, alltoall */
    nc_move_shape_t shape; /* the pattern of the call's movement (the path's choice) */
    uint64_t k;      /* call number */
    unsigned slot0;  /* k % slots: the slot of chunk 0 of every stream of the call */
    uint64_t sig;    /* ours: compared with every owner's */
    int rc;          /* the call's first error (its message is the thread's last error) */
    /* owner side: the stream */
    int posts;          /* we write a stream */
    int lo, hi;         /* members that read our head (our readers) */
    int multi;          /* one entry per destination member but us (else one for all) */
    uint32_t nent;
    mv_entry_t *ent;    /* nent entries */
    const char **src;   /* nent sources */
    mv_head_t head;
    size_t len;         /* stream bytes */
    size_t chunk;       /* C: bytes of a chunk of our stream in this call */
    uint64_t nchunks, next_chunk;
    int cma_blocks;     /* some of our blocks are read by single copy */
    size_t wpos;        /* writer: stream bytes written */
    /* our own block's local copy (0 bytes: none, or done): before the movement, or, when
     * our readers copy our blocks straight from our buffer (cma_blocks), in mv_run right
     * after our head is out, so that they read while we copy */
    char *own_dst;
    const char *own_src;
    size_t own_bytes;
    /* reader side */
    int nreads, cur_read;
    mv_read_t *reads;
    int cma_reading;    /* we announced reads of owners' buffers in this call */
    /* the waits the loop found blocking: how many, and the first (the writer's, which the
     * loop tries first: our readers wait for it; else the first owner's in our order) */
    int nblocked;
    _Atomic uint64_t *blk_flag;
    uint64_t blk_seen;
    int blk_member;
} mv_call_t;

/* the slot of chunk @p i of a stream of call @p c: (k + i) % slots, without a division for
 * the chunks of the call's first ring */
static inline unsigned mv_slot_of(const mv_call_t *c, const nc_move_team_t *s, uint64_t i)
{
    uint64_t slot = c->slot0 + i;
    return (unsigned)(slot < s->slots ? slot : (c->k + i) % s->slots);
}

/* the loop found *@p flag (written by @p member) at @p seen, short of what it waits for */
static inline void mv_blocked(mv_call_t *c, _Atomic uint64_t *flag, uint64_t seen, int member)
{
    if (c->nblocked++ == 0) c->blk_flag = flag, c->blk_seen = seen, c->blk_member = member;
}

/* a block's path in a call of @p shape, from its size (the same on every member that knows
 * the size) */
int mv_path_of(const nc_move_team_t *s, nc_move_shape_t shape, size_t bytes);

/* copy.c */
int mv_copy_read_begin(mv_call_t *c, mv_read_t *rd, const mv_head_t *h, const mv_entry_t *e);
int mv_copy_write(mv_call_t *c);       /* 1 progress, 0 blocked, < 0 error */
int mv_copy_pull(mv_call_t *c, mv_read_t *rd); /* 1 range complete, 0 blocked, < 0 error */
void mv_copy_leave(mv_call_t *c, mv_read_t *rd); /* done with the owner's stream */

/* cma.c */
int mv_cma_probe(int32_t pid, uint64_t addr); /* 1: process_vm_readv from @p pid works */
uint64_t mv_cma_probe_addr(void);
int mv_cma_read_begin(mv_call_t *c, mv_read_t *rd, const mv_head_t *h, const mv_entry_t *e);
int mv_cma_wait_readers(mv_call_t *c);

/* engine.c: the paths a block may take. read_begin: a reader, having checked the owner's
 * head and our entry @p e (size > 0), starts reading the block: it either reads it whole
 * (cma) and returns with rd->phase unchanged, or sets rd->phase = MV_READ_DATA and the
 * stream range to pull (copy); NUMACOLL_OK or an error. */
typedef struct mv_path {
    const char *name;
    const char *description;
    int (*read_begin)(mv_call_t *c, mv_read_t *rd, const mv_head_t *h, const mv_entry_t *e);
} mv_path_t;
extern const mv_path_t mv_paths[];
extern const int mv_path_count;
int mv_run(mv_call_t *c);
void mv_own_copy(mv_call_t *c); /* the local copy of our own block, if not done yet */
/* wait until *@p flag (written by @p member) >= @p target (acquire) */
int mv_wait_flag(mv_call_t *c, int member, _Atomic uint64_t *flag, uint64_t target);

/* state.c */
int mv_state_get(numacoll_team_t *t, nc_move_team_t **state);
int mv_state_ready(nc_move_team_t *s, int me); /* all pages of our slots */
/* return the pages of member @p me's slots beyond their eager part if every reader of the
 * chunks that went there is done with them (this header's protocol comment): 1 given back
 * (ready = 0), 0 not yet (a reader is behind; try again later). Local to @p me. */
int mv_state_give_back(nc_move_team_t *s, int me);

#endif
