/*
 * libnumacoll_mpi: the gather family (MPI_Allgather, MPI_Allgatherv, MPI_Gather,
 * MPI_Gatherv, MPI_Scatter, MPI_Scatterv and their _c forms): the decision which calls
 * numacoll runs, datatype layouts and staging, the native calls, errors and counters.
 *
 * Which calls numacoll runs is decided alike on every member without communicating, from
 * the communicator's agreed state (comm.c: flat, hierarchical, pass-through, deferred, and
 * whether the core gave up on the team) and from arguments that are significant on every
 * member (the root). Datatypes play no part: a non-contiguous side is staged (pmpi_move.h),
 * so every datatype MPI allows goes through numacoll. The hierarchical mode runs allgather,
 * allgatherv, gather and scatter (pmpi_move_hier.c); gatherv and scatterv go native there
 * (their counts are significant at the root only, so a node leader does not know what its
 * members send), as does any call whose total exceeds INT_MAX bytes (the leaders' step
 * counts bytes in int), a rule on the block sizes, which every member knows for these four.
 */
#include "pmpi_move.h"

static const char *const g_names[MV_KINDS] = {"MPI_Allgather", "MPI_Allgatherv", "MPI_Gather",
                                               "MPI_Gatherv",   "MPI_Scatter",    "MPI_Scatterv"};

/* ---- datatype layouts and staging -------------------------------------------------- */

/* a predefined type, or a contiguous run (MPI_Type_contiguous, MPI_Type_dup, nested) of
 * one: its bytes are in type-map order at increasing addresses (a struct or an indexed type
 * with a dense extent may still list its blocks out of order: those are staged) */
static int in_order(MPI_Datatype dt, int depth)
{
    int ni = 0, na = 0, nd = 0, combiner = 0;
    if (depth > 8 || PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return 0;
    if (combiner == MPI_COMBINER_NAMED) return 1;
    if (!((combiner == MPI_COMBINER_CONTIGUOUS && ni == 1) || combiner == MPI_COMBINER_DUP) ||
        na != 0 || nd != 1)
        return 0;
    int ints[1] = {0};
    MPI_Aint addrs[1];
    MPI_Datatype inner;
    if (PMPI_Type_get_contents(dt, ni, 0, 1, ints, addrs, &inner) != MPI_SUCCESS) return 0;
    int ok = in_order(inner, depth + 1);
    int ci = 0, ca = 0, cd = 0, cc = 0;
    if (PMPI_Type_get_envelope(inner, &ci, &ca, &cd, &cc) == MPI_SUCCESS && cc != MPI_COMBINER_NAMED)
        PMPI_Type_free(&inner);
    return ok;
}

int mv_side_init(mv_side_t *sd, const void *buf, MPI_Datatype dt)
{
    MPI_Count tsz = 0;
    MPI_Aint lb = 0, ext = 0, tlb = 0, text = 0;
    sd->buf = (void *)buf;
    sd->dt = dt;
    size_t psz = predefined_size(dt);
    if (psz) {
        sd->tsz = psz, sd->ext = (MPI_Aint)psz, sd->tlb = 0, sd->plain = 1;
        return 1;
    }
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size_x(dt, &tsz) != MPI_SUCCESS || tsz < 0 ||
        PMPI_Type_get_extent(dt, &lb, &ext) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dt, &tlb, &text) != MPI_SUCCESS)
        return 0;
    sd->tsz = (size_t)tsz;
    sd->ext = ext;
    sd->tlb = tlb;
    sd->plain = (MPI_Count)ext == tsz && (MPI_Count)text == tsz && in_order(dt, 0);
    return 1;
}

/* element @p elem's address (not its first byte: PMPI_Pack applies the type map) */
static inline void *elem_at(const mv_side_t *sd, MPI_Aint elem)
{
    return (void *)((intptr_t)sd->buf + (intptr_t)elem * (intptr_t)sd->ext);
}

void mv_pack(mv_call_t *c, const mv_side_t *sd, MPI_Aint elem, MPI_Count n, char *dst,
             size_t bytes)
{
    if (!bytes) return;
    if (sd->plain) {
        memcpy(dst, mv_at(sd, elem), bytes);
        return;
    }
    c->staged = 1;
    int rc = c->prc == MPI_SUCCESS
                 ? pack_io(0, elem_at(sd, elem), n, sd->dt, sd->tlb, dst, bytes, c->comm)
                 : c->prc;
    if (rc != MPI_SUCCESS) {
        memset(dst, 0, bytes);
        c->prc = rc;
    }
}

void mv_unpack(mv_call_t *c, const mv_side_t *sd, MPI_Aint elem, MPI_Count n, const char *src,
               size_t bytes)
{
    if (!bytes) return;
    if (sd->plain) {
        memcpy(mv_at(sd, elem), src, bytes);
        return;
    }
    c->staged = 1;
    if (c->prc == MPI_SUCCESS)
        c->prc = pack_io(1, elem_at(sd, elem), n, sd->dt, sd->tlb, (char *)src, bytes, c->comm);
}

void *mv_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) nc_error(NUMACOLL_ERR_NOMEM, "out of memory for a %zu-byte stage", bytes);
    return p;
}

void *mv_stage(mv_call_t *c, size_t bytes)
{
    size_t need = (bytes + 15) & ~(size_t)15;
    if (c->room && need >= bytes && need <= c->room_cap - c->room_used) {
        void *p = c->room + c->room_used;
        c->room_used += need;
        return p;
    }
    return mv_alloc(bytes);
}

int mv_intra_size(MPI_Comm comm)
{
    int size = 0, inter = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
        PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return 0;
    return size;
}

int mv_take_part(nc_comm_t *s, int kind, int root, uint64_t calls_before, int rc)
{
    numacoll_team_t *t = s->team;
    if (rc == NUMACOLL_OK || nc_move_calls(t) != calls_before) return rc;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", numacoll_last_error());
    /* one byte where there is no buffer: invalid on every member, so it takes part as one
     * whose arguments are invalid (the core's own message is replaced below) */
    switch (kind) {
    case MV_ALLGATHER: (void)numacoll_allgather(t, NULL, NULL, 1); break;
    case MV_ALLGATHERV: (void)numacoll_allgatherv(t, NULL, 1, NULL, NULL, NULL); break;
    case MV_GATHER: (void)numacoll_gather(t, NULL, NULL, 1, root); break;
    case MV_GATHERV: (void)numacoll_gatherv(t, NULL, 1, NULL, NULL, NULL, root); break;
    case MV_SCATTER: (void)numacoll_scatter(t, NULL, NULL, 1, root); break;
    case MV_SCATTERV: (void)numacoll_scatterv(t, NULL, NULL, NULL, NULL, 1, root); break;
    case MV_PART_ALLTOALL: (void)numacoll_alltoall(t, NULL, NULL, 1); break;
    default: (void)numacoll_alltoallv(t, NULL, NULL, NULL, NULL, NULL, NULL); break;
    }
    return nc_error(rc, "%s", msg);
}

/* the message of a member whose send or receive side differs from what the others expect */
static void say_mismatch(mv_call_t *c, const char *side, size_t have, size_t want)
{
    int rank = -1;
    PMPI_Comm_rank(c->comm, &rank);
    mpi_say("numacoll-mpi: %s: rank %d's %s block is %zu bytes, but %zu are expected of it "
            "(count x datatype size must match between sender and receiver); it takes part "
            "with %zu bytes and fails with MPI_ERR_TRUNCATE\n",
            g_names[c->kind], rank, side, have, want, want);
    c->truncated = 1;
}

int mv_send_begin(mv_call_t *c, size_t *want, const void **sendp, char **stage)
{
    mv_side_t sd;
    size_t have = 0;
    int ok = mv_side_init(&sd, c->sendbuf, c->stype) && mv_bytes(c->scount, sd.tsz, &have);
    *stage = NULL;
    if (*want == SIZE_MAX) *want = have;
    if (ok && sd.plain && have == *want) {
        *sendp = mv_at(&sd, 0);
        return NUMACOLL_OK;
    }
    if (!ok || have != *want) say_mismatch(c, "send", have, *want);
    size_t cap = have > *want ? have : *want;
    if (!(*stage = mv_stage(c, cap)) && cap > *want && (*stage = mv_stage(c, *want))) {
        memset(*stage, 0, *want); /* zeros only: its own bytes have no room */
        *sendp = *stage;
        return NUMACOLL_OK;
    }
    if (!*stage) return NUMACOLL_ERR_NOMEM;
    memset(*stage, 0, cap);
    if (ok && c->prc == MPI_SUCCESS) mv_pack(c, &sd, 0, c->scount, *stage, have);
    *sendp = *stage;
    return NUMACOLL_OK;
}

int mv_recv_begin(mv_call_t *c, mv_recv_t *r, size_t *want, void **recvp)
{
    int ok = mv_side_init(&r->side, c->recvbuf, c->rtype) && mv_bytes(c->rcount, r->side.tsz, &r->have);
    r->stage = NULL;
    if (!ok) r->have = 0;
    if (*want == SIZE_MAX) *want = r->have;
    r->want = *want;
    if (ok && r->side.plain && r->have == *want) {
        *recvp = mv_at(&r->side, 0);
        return NUMACOLL_OK;
    }
    if (!ok || r->have != *want) say_mismatch(c, "receive", r->have, *want);
    if (!(r->stage = mv_stage(c, *want))) return NUMACOLL_ERR_NOMEM;
    *recvp = r->stage;
    return NUMACOLL_OK;
}

void mv_recv_end(mv_call_t *c, mv_recv_t *r, int rc)
{
    if (r->stage && rc == NUMACOLL_OK && r->have == r->want)
        mv_unpack(c, &r->side, 0, c->rcount, r->stage, r->have);
    mv_stage_free(c, r->stage);
    r->stage = NULL;
}

int mv_vlayout(mv_call_t *c, const mv_side_t *sd, int size, size_t *bytes, size_t *displs,
               char **base, size_t *total)
{
    MPI_Aint lo = 0;
    int any = 0;
    *total = 0;
    for (int r = 0; r < size; r++) {
        if (!mv_bytes(mv_vcount(c, r), sd->tsz, &bytes[r]) ||
            __builtin_add_overflow(*total, bytes[r], total))
            return nc_error(NUMACOLL_ERR_ARG, "%s: the blocks' sizes overflow", g_names[c->kind]);
        if (bytes[r] && (!any || mv_vdispl(c, r) < lo)) lo = mv_vdispl(c, r), any = 1;
    }
    if (!sd->plain) {
        *base = NULL;
        size_t off = 0;
        for (int r = 0; r < size; r++)
            displs[r] = off, off += bytes[r];
        return NUMACOLL_OK;
    }
    /* a zero-size block's displacement is not significant: never read or written */
    for (int r = 0; r < size; r++)
        displs[r] = bytes[r] ? (size_t)(mv_vdispl(c, r) - lo) * sd->tsz : 0;
    *base = mv_at(sd, lo);
    return NUMACOLL_OK;
}

/* ---- native calls --------------------------------------------------------------------- */

#if MPI_VERSION >= 4
static int native_c(const mv_call_t *c)
{
    switch (c->kind) {
    case MV_ALLGATHER:
        if (!NC_HAVE(PMPI_Allgather_c)) return MPI_ERR_COUNT;
        return nc_mpi4.PMPI_Allgather_c(c->sendbuf, c->scount, c->stype, c->recvbuf, c->rcount,
                                        c->rtype, c->comm);
    case MV_ALLGATHERV:
        if (!NC_HAVE(PMPI_Allgatherv_c)) return MPI_ERR_COUNT;
        return nc_mpi4.PMPI_Allgatherv_c(c->sendbuf, c->scount, c->stype, c->recvbuf,
                                         c->vcounts_c, c->vdispls_c, c->rtype, c->comm);
    case MV_GATHER:
        if (!NC_HAVE(PMPI_Gather_c)) return MPI_ERR_COUNT;
        return nc_mpi4.PMPI_Gather_c(c->sendbuf, c->scount, c->stype, c->recvbuf, c->rcount,
                                     c->rtype, c->root, c->comm);
    case MV_GATHERV:
        if (!NC_HAVE(PMPI_Gatherv_c)) return MPI_ERR_COUNT;
        return nc_mpi4.PMPI_Gatherv_c(c->sendbuf, c->scount, c->stype, c->recvbuf, c->vcounts_c,
                                      c->vdispls_c, c->rtype, c->root, c->comm);
    case MV_SCATTER:
        if (!NC_HAVE(PMPI_Scatter_c)) return MPI_ERR_COUNT;
        return nc_mpi4.PMPI_Scatter_c(c->sendbuf, c->scount, c->stype, c->recvbuf, c->rcount,
                                      c->rtype, c->root, c->comm);
    default:
        if (!NC_HAVE(PMPI_Scatterv_c)) return MPI_ERR_COUNT;
        return nc_mpi4.PMPI_Scatterv_c(c->sendbuf, c->vcounts_c, c->vdispls_c, c->stype,
                                       c->recvbuf, c->rcount, c->rtype, c->root, c->comm);
    }
}
#endif

int mv_native(const mv_call_t *c)
{
#if MPI_VERSION >= 4
    if (c->is_c) return native_c(c);
#endif
    const int sc = (int)c->scount, rc = (int)c->rcount;
    switch (c->kind) {
    case MV_ALLGATHER:
        return PMPI_Allgather(c->sendbuf, sc, c->stype, c->recvbuf, rc, c->rtype, c->comm);
    case MV_ALLGATHERV:
        return PMPI_Allgatherv(c->sendbuf, sc, c->stype, c->recvbuf, c->vcounts_i, c->vdispls_i,
                               c->rtype, c->comm);
    case MV_GATHER:
        return PMPI_Gather(c->sendbuf, sc, c->stype, c->recvbuf, rc, c->rtype, c->root, c->comm);
    case MV_GATHERV:
        return PMPI_Gatherv(c->sendbuf, sc, c->stype, c->recvbuf, c->vcounts_i, c->vdispls_i,
                            c->rtype, c->root, c->comm);
    case MV_SCATTER:
        return PMPI_Scatter(c->sendbuf, sc, c->stype, c->recvbuf, rc, c->rtype, c->root, c->comm);
    default:
        return PMPI_Scatterv(c->sendbuf, c->vcounts_i, c->vdispls_i, c->stype, c->recvbuf, rc,
                             c->rtype, c->root, c->comm);
    }
}

/* ---- the decision ---------------------------------------------------------------------- */

/* Arguments this member can check alone that make the call erroneous (the MPI's own call
 * then reports them): negative counts, MPI_IN_PLACE where MPI does not allow it, a null
 * datatype where it is significant. @p is_root: this member is the root (or an allgather). */
static int args_valid(const mv_call_t *c, int size, int is_root)
{
    const int all = c->kind == MV_ALLGATHER || c->kind == MV_ALLGATHERV;
    const int gathers = all || c->kind == MV_GATHER || c->kind == MV_GATHERV;
    if (c->recvbuf == MPI_IN_PLACE && (gathers || !is_root)) return 0;
    if (c->sendbuf == MPI_IN_PLACE && (!gathers || !is_root)) return 0;
    /* the side this member sends from, unless in place */
    if (c->sendbuf != MPI_IN_PLACE && (gathers || is_root) &&
        (c->stype == MPI_DATATYPE_NULL || (c->kind != MV_SCATTERV && c->scount < 0)))
        return 0;
    /* the side it receives into */
    if (c->recvbuf != MPI_IN_PLACE && (!gathers || is_root) &&
        (c->rtype == MPI_DATATYPE_NULL ||
         (c->kind != MV_ALLGATHERV && c->kind != MV_GATHERV && c->rcount < 0)))
        return 0;
    const int has_v = c->kind == MV_ALLGATHERV || c->kind == MV_GATHERV || c->kind == MV_SCATTERV;
    if (has_v && is_root) {
        if (!(c->vcounts_i || c->vcounts_c) || !(c->vdispls_i || c->vdispls_c)) return 0;
        for (int r = 0; r < size; r++)
            if (mv_vcount(c, r) < 0) return 0;
    }
    return 1;
}

/* this member's bytes of the call, for the deferral's units (see defer_step: they need not
 * be the same on every member) */
static uint64_t units_of(const mv_call_t *c)
{
    int sz = 0;
    MPI_Count n = c->sendbuf != MPI_IN_PLACE ? c->scount : c->rcount;
    MPI_Datatype dt = c->sendbuf != MPI_IN_PLACE ? c->stype : c->rtype;
    if (c->kind == MV_SCATTER || c->kind == MV_SCATTERV) n = c->rcount, dt = c->rtype;
    if (c->recvbuf == MPI_IN_PLACE || dt == MPI_DATATYPE_NULL) return 1;
    sz = (int)predefined_size(dt);
    if (!sz && (PMPI_Type_size(dt, &sz) != MPI_SUCCESS || sz < 0)) return 1;
    return bcast_units(n, sz);
}

/* The team's data-movement state, created at its first call of the family (collective over
 * the team, with a status agreed by every member: nc_move_setup): 1 when the team can run
 * them, else 0 on every member, for good: flat, the communicator's calls go native;
 * hierarchical, this node's steps do (mv_node_*), the rest stays as it is. */
int move_ready(nc_comm_t *s)
{
    if (s->move_native || !s->team) return 0;
    if (NC_LIKELY(s->team->move != NULL)) return 1;
    int rc = nc_move_setup(s->team);
    if (rc == NUMACOLL_OK) return 1;
    s->move_native = 1;
    warn_setup(s, "the data-movement set-up", rc);
    return 0;
}

/* MPI error of a failed numacoll call: a mismatch of sizes or roots between members is the
 * caller's (MPI_ERR_ARG, the team stays usable); the rest (a dead member, a timeout) breaks
 * the team */
static int result(nc_comm_t *s, const mv_call_t *c, int rc)
{
    if (rc == NUMACOLL_OK && c->truncated) {
        PMPI_Comm_call_errhandler(c->comm, MPI_ERR_TRUNCATE);
        return MPI_ERR_TRUNCATE;
    }
    if (rc == NUMACOLL_OK) return c->prc; /* the MPI has called the handler */
    const char *name = g_names[c->kind];
    if (rc == NUMACOLL_ERR_ARG) {
        mpi_say("numacoll-mpi: %s: %s\n", name, numacoll_last_error());
        PMPI_Comm_call_errhandler(c->comm, MPI_ERR_ARG);
        return MPI_ERR_ARG;
    }
    s->broken = 1;
    return raise_error_on(s, c->comm, name, rc);
}

typedef int (*mv_fn)(nc_comm_t *s, mv_call_t *c);
static const mv_fn g_flat[MV_KINDS] = {allgather_flat, allgatherv_flat, gather_flat,
                                       gatherv_flat,   scatter_flat,    scatterv_flat};
/* NULL: native in hierarchical mode */
static const mv_fn g_hier[MV_KINDS] = {allgatherv_hier, allgatherv_hier, gather_hier,
                                       NULL,            scatter_hier,    NULL};

/* whether the call's total in bytes, from arguments significant on every member (the four
 * collectives with a hierarchical path), fits the leaders' step: 1 yes, 0 it exceeds
 * INT_MAX, -1 it cannot be told from this member's arguments (an erroneous count or
 * datatype) */
static int hier_size(const mv_call_t *c, int size, int rank)
{
    mv_side_t sd;
    size_t b = 0, total = 0;
    if (c->kind == MV_ALLGATHERV) {
        if (!mv_side_init(&sd, c->recvbuf, c->rtype)) return -1;
        for (int r = 0; r < size; r++) {
            if (!mv_bytes(mv_vcount(c, r), sd.tsz, &b)) return mv_vcount(c, r) < 0 ? -1 : 0;
            if (b > INT_MAX) return 0;
            total += b;
        }
        return total <= INT_MAX;
    }
    /* a uniform block: from the receive side where it is significant (every allgather
     * member, a gather's root, a scatter's non-roots), else from the send side */
    const int recv_side = c->kind == MV_ALLGATHER || (c->kind == MV_GATHER) == (rank == c->root);
    const void *buf = recv_side ? c->recvbuf : c->sendbuf;
    const MPI_Count n = recv_side ? c->rcount : c->scount;
    if (buf == MPI_IN_PLACE || !mv_side_init(&sd, buf, recv_side ? c->rtype : c->stype) || n < 0)
        return -1;
    return mv_bytes(n, sd.tsz, &b) && !__builtin_mul_overflow(b, (size_t)size, &total) &&
           total <= INT_MAX;
}

/* the hierarchical path takes the call (a member whose arguments are valid) */
static inline int hier_fits(const mv_call_t *c, int size, int rank)
{
    return hier_size(c, size, rank) == 1;
}

/* the bytes of @p count elements of predefined type @p dt into *@p out; 0 when the type is
 * not one of predefined_size's, the count is negative or the product overflows */
static inline int plain_bytes(MPI_Count count, MPI_Datatype dt, size_t *out)
{
    size_t tsz = predefined_size(dt);
    return tsz && mv_bytes(count, tsz, out);
}

int mv_plain(int kind, const void *sendbuf, MPI_Count scount, MPI_Datatype stype, void *recvbuf,
             MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm, int *mpi_rc)
{
    nc_comm_t *s = comm_cached_flat(comm);
    if (!s || !g_gather || s->move_native || !s->team->move) return 0;
    const int P = s->size, me = s->rank;
    const int is_root = kind == MV_ALLGATHER || me == root;
    size_t b = 0, mine = 0, total = 0;
    if (kind != MV_ALLGATHER && (root < 0 || root >= P)) return 0;
    /* the side whose size is significant here: the receive side where this member receives
     * P blocks or one (allgather, a gather's root, a scatter's non-root), else the send
     * side; the other side of a root or an allgather member must have the same bytes (else
     * the general path reports the mismatch) */
    const int gathers = kind != MV_SCATTER;
    const int recv_side = gathers ? is_root : !is_root;
    if (recv_side ? recvbuf == MPI_IN_PLACE || !plain_bytes(rcount, rtype, &b)
                  : sendbuf == MPI_IN_PLACE || !plain_bytes(scount, stype, &b))
        return 0;
    const void *send = sendbuf;
    void *recv = recvbuf;
    if (is_root) {
        if (__builtin_mul_overflow(b, (size_t)P, &total)) return 0;
        /* the root's (or allgather member's) other side: in place, or as many bytes */
        if (gathers && sendbuf == MPI_IN_PLACE) send = NUMACOLL_IN_PLACE;
        else if (!gathers && recvbuf == MPI_IN_PLACE) recv = (void *)NUMACOLL_IN_PLACE;
        else if (!(gathers ? plain_bytes(scount, stype, &mine) : plain_bytes(rcount, rtype, &mine))
                 || mine != b)
            return 0;
    } else if (gathers ? sendbuf == MPI_IN_PLACE : recvbuf == MPI_IN_PLACE) {
        return 0; /* erroneous: the general path hands it to the MPI */
    }
    BUMP(s->st_move_calls[kind]);
    int rc = kind == MV_ALLGATHER ? numacoll_allgather(s->team, send, recv, b)
             : kind == MV_GATHER  ? numacoll_gather(s->team, send, me == root ? recv : NULL, b, root)
                                  : numacoll_scatter(s->team, me == root ? send : NULL, recv, b, root);
    if (NC_LIKELY(rc == NUMACOLL_OK)) {
        BUMP(s->st_move_numacoll[kind]);
        *mpi_rc = MPI_SUCCESS;
        return 1;
    }
    mv_call_t c;
    mv_args(&c, kind, 0, sendbuf, scount, stype, recvbuf, rcount, rtype, root, comm);
    *mpi_rc = result(s, &c, rc);
    return 1;
}

int mv_entry(mv_call_t *c)
{
    c->prc = MPI_SUCCESS;
    c->staged = c->truncated = 0;
    c->room = NULL, c->room_cap = c->room_used = 0;
    /* a root < 0 (MPI_ROOT, MPI_PROC_NULL: intercommunicators) or beyond: the MPI's */
    const int rooted = c->kind >= MV_GATHER;
    /* fast path: this thread's cached state of the communicator is one flat team whose
     * data-movement state is set up: the decision below without the MPI's size and rank
     * queries, the deferral's units and a locked add on a process-wide counter (together
     * about a third of a tiny gather's time) */
    nc_comm_t *s = comm_cached_flat(c->comm);
    if (NC_LIKELY(s && g_gather && !s->move_native && s->team->move &&
                  (!rooted || (c->root >= 0 && c->root < s->size)))) {
        BUMP(s->st_move_calls[c->kind]);
        if (!args_valid(c, s->size, !rooted || s->rank == c->root)) return mv_native(c);
        const uint64_t calls = nc_move_calls(s->team);
        int rc = g_flat[c->kind](s, c);
        if (NC_UNLIKELY(rc != NUMACOLL_OK)) rc = mv_take_part(s, c->kind, c->root, calls, rc);
        if (rc == NUMACOLL_OK) {
            BUMP(s->st_move_numacoll[c->kind]);
            if (c->staged) BUMP(s->st_move_staged);
        }
        return result(s, c, rc);
    }
    ensure_init();
    COUNT(move_calls[c->kind]);
    if (c->comm == MPI_COMM_NULL) return mv_native(c);
    /* an intercommunicator (the MPI's: no set-up joins it) has v-arrays of its remote
     * group's size, which args_valid must not read by the local one */
    int size = 0, rank = 0, inter = 0;
    if (PMPI_Comm_test_inter(c->comm, &inter) != MPI_SUCCESS || inter ||
        PMPI_Comm_size(c->comm, &size) != MPI_SUCCESS ||
        PMPI_Comm_rank(c->comm, &rank) != MPI_SUCCESS)
        return mv_native(c);
    /* a root out of range (negative, or beyond) and erroneous arguments go to the MPI,
     * which reports them */
    const int to_mpi = (rooted && (c->root < 0 || c->root >= size)) ||
                       !args_valid(c, size, !rooted || rank == c->root);
    /* with erroneous arguments here, NUMACOLL_MPI_GATHER=0 or numacoll off here
     * (NUMACOLL_DISABLE, an invalid setting) too: every member joins the communicator's
     * set-up and counts the same calls toward the deferral, and one that differs from the
     * others in the settings is found in the agreement (the communicator then passes
     * through on every member). A member whose arguments alone are wrong also joins its
     * team's data-movement set-up before the MPI reports them (flat: the communicator's
     * team; hierarchical: its node team's set-ups of the path, hier_setups, when the call has
     * a hierarchical path and its size, as far as this member can tell, fits it), so that the
     * others wait in numacoll's call (NUMACOLL_TIMEOUT ends that wait, naming it), never in
     * a set-up or a deferral agreement it does not join */
    s = comm_get(c->comm, to_mpi ? 1 : units_of(c), 0);
    if (!g_active || !g_gather || !s || s->mode == MODE_PASS || s->mode == MODE_DEFER)
        return mv_native(c);
    int rc;
    if (s->mode == MODE_FLAT) {
        if (!move_ready(s) || to_mpi) return mv_native(c);
        const uint64_t calls = nc_move_calls(s->team);
        rc = g_flat[c->kind](s, c);
        if (rc != NUMACOLL_OK) rc = mv_take_part(s, c->kind, c->root, calls, rc);
    } else {
        if (to_mpi && g_hier[c->kind] && hier_size(c, size, rank) != 0)
            hier_setups(s, HIER_SETUP_BCAST | HIER_SETUP_MOVE);
        if (to_mpi || !g_hier[c->kind] || !hier_fits(c, size, rank)) return mv_native(c);
        rc = g_hier[c->kind](s, c);
    }
    /* numacoll's when it ran the node part (hierarchical: a node of one member has none) */
    if (rc == NUMACOLL_OK &&
        (s->mode == MODE_FLAT || s->node_size == 1 || (s->team && !s->move_native))) {
        COUNT(move_numacoll[c->kind]);
        if (c->staged) COUNT(move_staged);
    }
    return result(s, c, rc);
}

/* the node steps of the hierarchical mode: numacoll's on the node team, else the MPI's in
 * bytes on the node communicator. A team whose set-up failed (agreed by the node's
 * members) hands them to the MPI for good. */
int mv_node_gatherv(nc_comm_t *s, const void *send, size_t sbytes, void *recv,
                    const size_t *rbytes, const size_t *displs, int *ints)
{
    if (move_ready(s)) return numacoll_gatherv(s->team, send, sbytes, recv, rbytes, displs, 0);
    if (s->node_size == 1) {
        if (send != NUMACOLL_IN_PLACE && sbytes) memcpy((char *)recv + displs[0], send, sbytes);
        return NUMACOLL_OK;
    }
    const int n = s->node_size;
    int *cnt = NULL, *dsp = NULL;
    if (s->node_rank == 0) {
        cnt = ints, dsp = ints + n;
        for (int i = 0; i < n; i++)
            cnt[i] = (int)rbytes[i], dsp[i] = (int)displs[i]; /* <= INT_MAX: hier_fits */
    }
    int rc = PMPI_Gatherv(send == NUMACOLL_IN_PLACE ? MPI_IN_PLACE : send, (int)sbytes, MPI_BYTE,
                          recv, cnt, dsp, MPI_BYTE, 0, s->node);
    return rc == MPI_SUCCESS ? NUMACOLL_OK : NUMACOLL_ERR_OOB;
}

int mv_node_scatterv(nc_comm_t *s, const void *send, const size_t *sbytes, const size_t *displs,
                     void *recv, size_t rbytes, int *ints)
{
    if (move_ready(s)) return numacoll_scatterv(s->team, send, sbytes, displs, recv, rbytes, 0);
    if (s->node_size == 1) {
        if (recv != (void *)NUMACOLL_IN_PLACE && rbytes)
            memcpy(recv, (const char *)send + displs[0], rbytes);
        return NUMACOLL_OK;
    }
    const int n = s->node_size;
    int *cnt = NULL, *dsp = NULL;
    if (s->node_rank == 0) {
        cnt = ints, dsp = ints + n;
        for (int i = 0; i < n; i++)
            cnt[i] = (int)sbytes[i], dsp[i] = (int)displs[i]; /* <= INT_MAX: hier_fits */
    }
    int rc = PMPI_Scatterv(send, cnt, dsp, MPI_BYTE,
                           recv == (void *)NUMACOLL_IN_PLACE ? MPI_IN_PLACE : recv, (int)rbytes,
                           MPI_BYTE, 0, s->node);
    return rc == MPI_SUCCESS ? NUMACOLL_OK : NUMACOLL_ERR_OOB;
}

/* ---- counters ---------------------------------------------------------------------------- */

void move_stats_text(char *out, size_t n)
{
    size_t o = 0;
    out[0] = '\0';
    for (int k = 0; k < MV_KINDS && o < n; k++)
        o += (size_t)snprintf(out + o, n - o, ", %s %llu (numacoll %llu)", g_names[k],
                              (unsigned long long)READ(move_calls[k]),
                              (unsigned long long)READ(move_numacoll[k]));
    if (o < n)
        snprintf(out + o, n - o, ", gather/scatter staged %llu",
                 (unsigned long long)READ(move_staged));
}

void move_stats_fill(numacoll_mpi_stats_t *o)
{
    uint64_t *calls[MV_KINDS] = {&o->allgather_calls, &o->allgatherv_calls, &o->gather_calls,
                                 &o->gatherv_calls,   &o->scatter_calls,    &o->scatterv_calls};
    uint64_t *ran[MV_KINDS] = {&o->allgather_numacoll, &o->allgatherv_numacoll,
                               &o->gather_numacoll,    &o->gatherv_numacoll,
                               &o->scatter_numacoll,   &o->scatterv_numacoll};
    /* the released communicators' counts (g_st) plus the live ones', under the list lock
     * (a state is folded into g_st and unlinked in one critical section) */
    pthread_mutex_lock(&g_lock);
    for (int k = 0; k < MV_KINDS; k++) {
        *calls[k] = READ(move_calls[k]);
        *ran[k] = READ(move_numacoll[k]);
    }
    o->move_staged = READ(move_staged);
    for (nc_comm_t *s = g_list; s; s = s->next) {
        for (int k = 0; k < MV_KINDS; k++) {
            *calls[k] += atomic_load_explicit(&s->st_move_calls[k], memory_order_relaxed);
            *ran[k] += atomic_load_explicit(&s->st_move_numacoll[k], memory_order_relaxed);
        }
        o->move_staged += atomic_load_explicit(&s->st_move_staged, memory_order_relaxed);
    }
    pthread_mutex_unlock(&g_lock);
}
