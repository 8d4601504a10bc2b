/*
 * libnumacoll_mpi: what the gather family's files share (pmpi_move.c, pmpi_move_hier.c,
 * pmpi_allgather.c, pmpi_gather.c, pmpi_scatter.c).
 *
 * A call is kept as it came (mv_call_t): the native call can always be made from it, and
 * the numacoll paths read the arguments through it. Datatypes become byte streams: a side
 * whose datatype is "plain" (a predefined type or a contiguous run of one, lower bound at
 * its first byte, extent = size) hands its buffer to the core directly; any other side is
 * staged, i.e. packed into or unpacked from a contiguous buffer with PMPI_Pack /
 * PMPI_Unpack. Both give the core the same bytes, so whether a member stages is its own
 * business and needs no agreement: the core compares byte counts only, which MPI requires
 * to match (equal type signatures).
 */
#ifndef NC_PMPI_MOVE_H
#define NC_PMPI_MOVE_H

#include "mpi_internal.h"

#pragma GCC visibility push(hidden)

/* the collectives, in the order of nc_mpi_counters_t's move_* arrays */
enum { MV_ALLGATHER, MV_ALLGATHERV, MV_GATHER, MV_GATHERV, MV_SCATTER, MV_SCATTERV, MV_KINDS };

/* one call's arguments as the application passed them. The v-array (recvcounts/displs of
 * allgatherv and gatherv, sendcounts/displs of scatterv) comes as int (MPI_X) or as
 * MPI_Count / MPI_Aint (MPI_X_c): exactly one of vcounts_i / vcounts_c is set. */
typedef struct mv_call {
    int kind;
    int is_c; /* came through the _c entry point */
    const void *sendbuf;
    MPI_Count scount;
    MPI_Datatype stype;
    void *recvbuf;
    MPI_Count rcount;
    MPI_Datatype rtype;
    const int *vcounts_i, *vdispls_i;
    const MPI_Count *vcounts_c;
    const MPI_Aint *vdispls_c;
    int root; /* -1 for the allgathers */
    MPI_Comm comm;
    /* filled on the way */
    int staged; /* this member packed or unpacked a non-contiguous side */
    int prc;    /* the first PMPI_Pack / PMPI_Unpack error (MPI_SUCCESS: none) */
    int truncated; /* this member's block had another size than expected (say_mismatch) */
    /* the hierarchical mode's room (pmpi_move_hier.c) for this call's buffers: mv_stage
     * takes them from it while it has space; NULL (every other call): from the heap */
    char *room;
    size_t room_cap, room_used;
} mv_call_t;

/* A call's arguments with uniform blocks (no v-arrays), every field stored by name: a
 * designated initializer's zero fill of the struct compiles to a rep stos, whose start-up
 * is a tenth of a tiny call's time */
static inline void mv_args(mv_call_t *c, int kind, int is_c, const void *sendbuf, MPI_Count scount,
                           MPI_Datatype stype, void *recvbuf, MPI_Count rcount,
                           MPI_Datatype rtype, int root, MPI_Comm comm)
{
    c->kind = kind, c->is_c = is_c;
    c->sendbuf = sendbuf, c->scount = scount, c->stype = stype;
    c->recvbuf = recvbuf, c->rcount = rcount, c->rtype = rtype;
    c->vcounts_i = NULL, c->vdispls_i = NULL, c->vcounts_c = NULL, c->vdispls_c = NULL;
    c->root = root, c->comm = comm;
    c->staged = 0, c->prc = MPI_SUCCESS, c->truncated = 0;
    c->room = NULL, c->room_cap = c->room_used = 0;
}

static inline MPI_Count mv_vcount(const mv_call_t *c, int r)
{
    return c->vcounts_c ? c->vcounts_c[r] : (MPI_Count)c->vcounts_i[r];
}
static inline MPI_Aint mv_vdispl(const mv_call_t *c, int r)
{
    return c->vdispls_c ? c->vdispls_c[r] : (MPI_Aint)c->vdispls_i[r];
}

/* one side of a call: a buffer and the datatype of its elements */
typedef struct mv_side {
    void *buf;
    MPI_Datatype dt;
    size_t tsz;         /* bytes of one element (type size) */
    MPI_Aint ext, tlb;  /* extent and true lower bound */
    int plain;          /* element i's bytes are tsz bytes at buf + tlb + i * tsz */
} mv_side_t;

/* 1 when the datatype could be queried (else the call goes native: the MPI reports it) */
int mv_side_init(mv_side_t *sd, const void *buf, MPI_Datatype dt);

/* the first byte of element @p elem of a plain side (in integers: buf may be MPI_BOTTOM) */
static inline char *mv_at(const mv_side_t *sd, MPI_Aint elem)
{
    return (char *)((intptr_t)sd->buf + (intptr_t)sd->tlb + (intptr_t)elem * (intptr_t)sd->ext);
}

/* @p n elements from element @p elem on into / out of @p bytes contiguous bytes (a plain
 * side copies, any other packs / unpacks). Errors are kept in c->prc (the first one); a
 * failed pack leaves zeros, so the member still takes part and nobody waits for it. */
void mv_pack(mv_call_t *c, const mv_side_t *sd, MPI_Aint elem, MPI_Count n, char *dst,
             size_t bytes);
void mv_unpack(mv_call_t *c, const mv_side_t *sd, MPI_Aint elem, MPI_Count n, const char *src,
               size_t bytes);

/* @p n * @p size in *@p out; 0 on overflow or a negative count */
static inline int mv_bytes(MPI_Count n, size_t size, size_t *out)
{
    return n >= 0 && !__builtin_mul_overflow((size_t)n, size, out);
}

/* malloc of at least one byte; NULL (with numacoll's NOMEM message) when out of memory */
void *mv_alloc(size_t bytes);
/* a buffer of the call: from its room while that has space (16-byte aligned), else
 * mv_alloc; mv_stage_free frees one that is not in the room */
void *mv_stage(mv_call_t *c, size_t bytes);
static inline int mv_in_room(const mv_call_t *c, const void *p)
{
    return c->room && (uintptr_t)p >= (uintptr_t)c->room &&
           (uintptr_t)p < (uintptr_t)c->room + c->room_cap;
}
static inline void mv_stage_free(const mv_call_t *c, void *p)
{
    if (p && !mv_in_room(c, p)) free(p);
}

/* the size of @p comm by which a call's arrays may be read: 0 for an intercommunicator (the
 * MPI's: no set-up joins it, and its arrays have the remote group's size) or a failed
 * query */
int mv_intra_size(MPI_Comm comm);

/* the kinds of mv_take_part: the gather family's MV_* and these */
enum { MV_PART_ALLTOALL = MV_KINDS, MV_PART_ALLTOALLV };
/* A member whose flat call failed before it reached the core's call (a stage or a layout
 * it could not allocate, sizes that overflow: the core's call count @p calls_before is
 * unchanged) still takes part in that call, with no buffers: the core posts the marker of
 * invalid arguments and reads nothing, so the others fail naming this member instead of
 * waiting for it, and the team's next call finds every member at the same call. Returns
 * @p rc, its message kept. A call that reached the core returns @p rc as it is. */
int mv_take_part(nc_comm_t *s, int kind, int root, uint64_t calls_before, int rc);
/* free a stage of mv_alloc, if any: the common call (plain datatypes) has none and makes no
 * call into the allocator */
static inline void mv_free(void *stage)
{
    if (stage) free(stage);
}

/* This member's send block: (sendbuf, scount, stype) as *@p want bytes (SIZE_MAX: its own
 * size, returned there) at *@p sendp, straight from a plain buffer or packed into *@p stage
 * (mv_stage: free it with mv_stage_free after the call). A send side whose size differs
 * from the @p want the receivers expect (erroneous: MPI requires equal type signatures)
 * still takes part with @p want bytes (its first ones, then zeros; only zeros when a stage
 * of its own size is beyond the heap but @p want bytes are in the room), so nobody waits for
 * it, and the call then fails here with MPI_ERR_TRUNCATE (c->prc). Status numacoll's
 * (NOMEM). */
int mv_send_begin(mv_call_t *c, size_t *want, const void **sendp, char **stage);

/* This member's receive block (recvbuf, rcount, rtype): *@p want bytes (SIZE_MAX: its own
 * size) at *@p recvp, a plain buffer itself or a stage that mv_recv_end unpacks (and frees);
 * a size other than the @p want expected fails as in mv_send_begin. */
typedef struct mv_recv {
    mv_side_t side;
    size_t have, want;
    char *stage;
} mv_recv_t;
int mv_recv_begin(mv_call_t *c, mv_recv_t *r, size_t *want, void **recvp);
void mv_recv_end(mv_call_t *c, mv_recv_t *r, int rc);

/* The byte layout of the v-array side @p sd (@p size blocks): bytes[r], and displs[r]
 * from *@p base: a plain side's own buffer (base = its lowest block), else a stage of the
 * blocks packed in rank order (*@p base NULL: the caller allocates *@p total bytes) */
int mv_vlayout(mv_call_t *c, const mv_side_t *sd, int size, size_t *bytes, size_t *displs,
               char **base, size_t *total);

/* the node steps of the hierarchical mode: the core's gatherv / scatterv on @p s->team, or
 * the MPI's own on the node communicator in bytes when the node has no team or the core
 * gave up on it (s->move_native), its counts and displacements as ints in @p ints (2 x
 * node_size, the leader's, allocated by the caller before any step). Statuses are
 * numacoll's. */
int mv_node_gatherv(nc_comm_t *s, const void *send, size_t sbytes, void *recv,
                    const size_t *rbytes, const size_t *displs, int *ints);
int mv_node_scatterv(nc_comm_t *s, const void *send, const size_t *sbytes, const size_t *displs,
                     void *recv, size_t rbytes, int *ints);

/* the numacoll paths of each collective (statuses are numacoll's) */
int allgather_flat(nc_comm_t *s, mv_call_t *c);
int allgatherv_flat(nc_comm_t *s, mv_call_t *c);
int gather_flat(nc_comm_t *s, mv_call_t *c);
int gatherv_flat(nc_comm_t *s, mv_call_t *c);
int scatter_flat(nc_comm_t *s, mv_call_t *c);
int scatterv_flat(nc_comm_t *s, mv_call_t *c);
/* hierarchical mode (pmpi_move_hier.c): allgather and allgatherv, gather, scatter */
int allgatherv_hier(nc_comm_t *s, mv_call_t *c);
int gather_hier(nc_comm_t *s, mv_call_t *c);
int scatter_hier(nc_comm_t *s, mv_call_t *c);

/* the common entry: decide (identically on every member), run, count, report */
int mv_entry(mv_call_t *c);
/* The fast path of MPI_Allgather, MPI_Gather and MPI_Scatter (@p kind) in predefined
 * datatypes on a cached flat communicator: straight into the core, without mv_entry's
 * argument struct and queries. 1: the call ran (its MPI result in *@p mpi_rc); 0: it is
 * not such a call (nothing done, nothing counted: the caller goes through mv_entry, which
 * takes the same decision on every member, as a member's other datatypes play no part) */
int mv_plain(int kind, const void *sendbuf, MPI_Count scount, MPI_Datatype stype, void *recvbuf,
             MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm, int *mpi_rc);
/* the MPI library's own call, as the application made it */
int mv_native(const mv_call_t *c);

#pragma GCC visibility pop

#endif
