/*
 * libnumacoll_mpi: MPI_Alltoallw (and MPI-4's MPI_Alltoallw_c) on a flat communicator: the
 * team's numacoll_alltoallv, in bytes.
 *
 * Every block has its own datatype and a displacement in bytes. Which calls numacoll runs
 * is decided as for MPI_Alltoallv (pmpi_alltoall.c), alike on every member without
 * communicating: from the communicator's agreed state (flat; not pass-through, deferred or
 * given up by the core: s->move_native, shared with the gather family) and
 * NUMACOLL_MPI_GATHER. Datatypes play no part: a block whose datatype is plain goes to the
 * core where it lies (recvbuf + rdispls[r]), any other is packed into or unpacked from a
 * stage of this member's with PMPI_Pack / PMPI_Unpack, so the core sees the same bytes
 * either way and compares each pair's byte counts, which MPI requires to match. The
 * hierarchical mode (several nodes, NUMACOLL_FAKE_NODES) calls the MPI's own alltoallw.
 *
 * The core takes one base address and byte displacements from it per side. A side's
 * blocks may lie in different objects (the user's buffer, this member's stage, or, with
 * recvbuf = MPI_BOTTOM, anywhere), so the base is the lowest address of the side's
 * non-empty blocks and each displacement the distance from it; the core only forms
 * base + displacement of the blocks it is given (out of place it never walks the span).
 * In place, the input (recvbuf's blocks with recvcounts, rdispls, recvtypes) is first
 * gathered into a send stage, and the call then runs out of place: the core's own in-place
 * copy spans the receive side from its base, which for blocks in separate objects is not
 * one buffer.
 */
#include "pmpi_move.h"

/* one call as the application made it: counts and displacements as int (MPI_Alltoallw) or
 * as MPI_Count / MPI_Aint (MPI_Alltoallw_c) */
typedef struct a2aw_call {
    int is_c;
    const void *sendbuf;
    const int *scounts_i, *sdispls_i, *rcounts_i, *rdispls_i;
    const MPI_Count *scounts_c, *rcounts_c;
    const MPI_Aint *sdispls_c, *rdispls_c;
    const MPI_Datatype *stypes, *rtypes;
    void *recvbuf;
    MPI_Comm comm;
    mv_call_t mv; /* what the staging helpers keep: pack errors, staged (mv.comm) */
    int bad;      /* MPI error class of a block of this member's that took part empty */
} a2aw_call_t;

static inline MPI_Count count_of(const a2aw_call_t *c, int send, int r)
{
    if (send) return c->scounts_c ? c->scounts_c[r] : (MPI_Count)c->scounts_i[r];
    return c->rcounts_c ? c->rcounts_c[r] : (MPI_Count)c->rcounts_i[r];
}
static inline MPI_Aint displ_of(const a2aw_call_t *c, int send, int r)
{
    if (send) return c->sdispls_c ? c->sdispls_c[r] : (MPI_Aint)c->sdispls_i[r];
    return c->rdispls_c ? c->rdispls_c[r] : (MPI_Aint)c->rdispls_i[r];
}

static int native(const a2aw_call_t *c)
{
#if MPI_VERSION >= 4
    if (c->is_c)
        return NC_HAVE(PMPI_Alltoallw_c)
                   ? nc_mpi4.PMPI_Alltoallw_c(c->sendbuf, c->scounts_c, c->sdispls_c, c->stypes,
                                              c->recvbuf, c->rcounts_c, c->rdispls_c, c->rtypes,
                                              c->comm)
                   : MPI_ERR_COUNT;
#endif
    return PMPI_Alltoallw(c->sendbuf, c->scounts_i, c->sdispls_i, c->stypes, c->recvbuf,
                          c->rcounts_i, c->rdispls_i, c->rtypes, c->comm);
}

/* ---- one side's blocks ---------------------------------------------------------------- */

/* a block of one side: its datatype's description (sd.buf: the block's address, buf +
 * displacement), its elements and bytes, and where the core finds its bytes */
typedef struct wblock {
    mv_side_t sd;
    MPI_Count n;
    size_t bytes;
    int staged; /* its bytes go through the side's stage (packed or, in place, copied) */
    char *at;   /* a plain block's first byte, else its place in the side's stage */
} wblock_t;

/* Describe side @p send (1: sendbuf with the send arrays; 0: recvbuf with the receive
 * arrays) into @p b[0..P-1]: plain blocks at their first byte, the others' bytes counted in
 * *@p stage_bytes (placed by w_place). A block whose datatype cannot be queried or whose
 * bytes overflow takes part empty (its peer then fails naming this member) and this member
 * fails with the MPI's class for it (c->bad). */
static void w_describe(a2aw_call_t *c, int send, int P, wblock_t *b, size_t *stage_bytes)
{
    const MPI_Datatype *types = send ? c->stypes : c->rtypes;
    const void *buf = send ? c->sendbuf : c->recvbuf;
    *stage_bytes = 0;
    for (int r = 0; r < P; r++) {
        wblock_t *w = &b[r];
        w->n = count_of(c, send, r), w->bytes = 0, w->at = NULL, w->staged = 0;
        if (w->n == 0) continue; /* its datatype is not significant (may be a null handle) */
        /* in integers: buf may be MPI_BOTTOM and the displacement an absolute address */
        const void *blk = (const void *)((intptr_t)buf + (intptr_t)displ_of(c, send, r));
        int ok = mv_side_init(&w->sd, blk, types[r]);
        if (!ok || !mv_bytes(w->n, w->sd.tsz, &w->bytes) ||
            (!w->sd.plain && __builtin_add_overflow(*stage_bytes, w->bytes, stage_bytes))) {
            int rank = -1;
            PMPI_Comm_rank(c->comm, &rank);
            mpi_say("numacoll-mpi: MPI_Alltoallw: rank %d's %s block %s rank %d (%lld "
                    "elements) %s; it takes part with 0 bytes and fails\n",
                    rank, send ? "send" : "receive", send ? "to" : "from", r, (long long)w->n,
                    ok ? "is too large" : "has a datatype that cannot be queried");
            if (!c->bad) c->bad = ok ? MPI_ERR_COUNT : MPI_ERR_TYPE;
            w->bytes = 0, w->n = 0;
            continue;
        }
        w->staged = !w->sd.plain;
        if (w->sd.plain) w->at = mv_at(&w->sd, 0);
    }
}

/* Place the staged blocks of @p b in @p stage (rank order) and give the core the side:
 * bytes[r], displs[r] from the returned base (the lowest non-empty block; NULL when the
 * side has no bytes, which the core accepts) */
static char *w_place(int P, wblock_t *b, char *stage, size_t *bytes, size_t *displs)
{
    uintptr_t lo = UINTPTR_MAX;
    size_t off = 0;
    for (int r = 0; r < P; r++) {
        if (b[r].staged) b[r].at = stage + off, off += b[r].bytes;
        if (b[r].bytes && (uintptr_t)b[r].at < lo) lo = (uintptr_t)b[r].at;
    }
    for (int r = 0; r < P; r++) {
        bytes[r] = b[r].bytes;
        displs[r] = b[r].bytes ? (size_t)((uintptr_t)b[r].at - lo) : 0;
    }
    return lo == UINTPTR_MAX ? NULL : (char *)lo;
}

static int alltoallw_flat(nc_comm_t *s, a2aw_call_t *c)
{
    const int P = s->size;
    const int in_place = c->sendbuf == MPI_IN_PLACE;
    wblock_t *blk = malloc(2 * (size_t)P * sizeof *blk);
    size_t *arr = malloc(4 * (size_t)P * sizeof *arr);
    if (!blk || !arr) {
        free(blk);
        free(arr);
        return nc_error(NUMACOLL_ERR_NOMEM, "out of memory for %d blocks' layouts", P);
    }
    wblock_t *R = blk, *S = blk + P;
    size_t *rb = arr, *rd = arr + P, *sb = arr + 2 * P, *sd = arr + 3 * P;
    size_t rstage_bytes = 0, sstage_bytes = 0;
    char *rstage = NULL, *sstage = NULL;
    int rc = NUMACOLL_OK;
    w_describe(c, 0, P, R, &rstage_bytes);
    if (in_place) { /* the input: recvbuf's blocks, every one of them gathered (see above) */
        for (int r = 0; r < P; r++) {
            S[r] = R[r];
            S[r].staged = S[r].bytes != 0;
            if (__builtin_add_overflow(sstage_bytes, S[r].bytes, &sstage_bytes))
                rc = nc_error(NUMACOLL_ERR_NOMEM, "MPI_Alltoallw: the blocks' bytes overflow");
        }
    } else {
        w_describe(c, 1, P, S, &sstage_bytes);
    }
    if (rc == NUMACOLL_OK && rstage_bytes && !(rstage = mv_alloc(rstage_bytes)))
        rc = NUMACOLL_ERR_NOMEM;
    if (rc == NUMACOLL_OK && sstage_bytes && !(sstage = mv_alloc(sstage_bytes)))
        rc = NUMACOLL_ERR_NOMEM;
    if (rc == NUMACOLL_OK) {
        char *rbase = w_place(P, R, rstage, rb, rd);
        const char *sbase = w_place(P, S, sstage, sb, sd);
        for (int r = 0; r < P; r++) /* a plain block in place is copied, any other packed */
            if (S[r].staged) mv_pack(&c->mv, &S[r].sd, 0, S[r].n, S[r].at, S[r].bytes);
        rc = numacoll_alltoallv(s->team, sbase, sb, sd, rbase, rb, rd);
    }
    if (rc == NUMACOLL_OK)
        for (int r = 0; r < P; r++)
            if (R[r].staged) mv_unpack(&c->mv, &R[r].sd, 0, R[r].n, R[r].at, R[r].bytes);
    mv_free(rstage);
    mv_free(sstage);
    free(blk);
    free(arr);
    return rc;
}

/* ---- the decision --------------------------------------------------------------------- */

/* Arguments this member can check alone that make the call erroneous (the MPI's own call
 * then reports them): missing arrays, negative counts, a null datatype for a block that
 * has elements */
static int args_valid(const a2aw_call_t *c, int P)
{
    const int in_place = c->sendbuf == MPI_IN_PLACE;
    if (c->recvbuf == MPI_IN_PLACE || !c->rtypes || !(c->rcounts_i || c->rcounts_c) ||
        !(c->rdispls_i || c->rdispls_c))
        return 0;
    if (!in_place && (!c->stypes || !(c->scounts_i || c->scounts_c) ||
                      !(c->sdispls_i || c->sdispls_c)))
        return 0;
    for (int r = 0; r < P; r++) {
        MPI_Count n = count_of(c, 0, r);
        if (n < 0 || (n && c->rtypes[r] == MPI_DATATYPE_NULL)) return 0;
        if (in_place) continue;
        n = count_of(c, 1, r);
        if (n < 0 || (n && c->stypes[r] == MPI_DATATYPE_NULL)) return 0;
    }
    return 1;
}

/* this member's bytes received, for the deferral's units (they need not be the same on
 * every member: see defer_step) */
static uint64_t units_of(const a2aw_call_t *c, int P)
{
    MPI_Count n = 0, b = 0;
    for (int r = 0; r < P; r++) {
        MPI_Count k = count_of(c, 0, r);
        int sz = 0;
        if (!k) continue;
        sz = (int)predefined_size(c->rtypes[r]);
        if (!sz && (PMPI_Type_size(c->rtypes[r], &sz) != MPI_SUCCESS || sz < 0)) return 1;
        if (__builtin_mul_overflow(k, (MPI_Count)sz, &b) || __builtin_add_overflow(n, b, &n))
            return bcast_units(LLONG_MAX, 1); /* as many as there can be */
    }
    return bcast_units(n, 1);
}

/* The MPI result of a call that numacoll ran (its core result @p rc): a mismatch of sizes
 * between members is the caller's (MPI_ERR_ARG, the team stays usable); a dead member or a
 * timeout breaks the team */
static int a2aw_result(nc_comm_t *s, a2aw_call_t *c, int rc)
{
    if (rc == NUMACOLL_OK && c->bad) {
        PMPI_Comm_call_errhandler(c->comm, c->bad);
        return c->bad;
    }
    if (rc == NUMACOLL_OK) return c->mv.prc; /* a pack error: the MPI has called the handler */
    if (rc == NUMACOLL_ERR_ARG) {
        mpi_say("numacoll-mpi: MPI_Alltoallw: %s\n", numacoll_last_error());
        PMPI_Comm_call_errhandler(c->comm, MPI_ERR_ARG);
        return MPI_ERR_ARG;
    }
    s->broken = 1;
    return raise_error(c->comm, "MPI_Alltoallw", rc);
}

static int a2aw_entry(a2aw_call_t *c)
{
    /* what the staging helpers keep (mv_args: no zero fill of the struct) */
    mv_args(&c->mv, MV_ALLGATHER, 0, NULL, 0, MPI_DATATYPE_NULL, NULL, 0, MPI_DATATYPE_NULL, -1,
            c->comm);
    c->bad = 0;
    /* fast path: this thread's cached state of the communicator is one flat team whose
     * data-movement state is set up: the decision below without the MPI's size query, the
     * deferral's units and locked adds on process-wide counters */
    nc_comm_t *s = comm_cached_flat(c->comm);
    const int fast = s && g_gather && !s->move_native && s->team->move != NULL;
    if (fast) {
        BUMP(s->st_alltoallw_calls);
        if (!args_valid(c, s->size)) return native(c);
    } else {
        ensure_init();
        COUNT(alltoallw_calls);
        if (c->comm == MPI_COMM_NULL) return native(c);
        const int P = mv_intra_size(c->comm); /* 0: an intercommunicator, the MPI's */
        if (!P) return native(c);
        /* with erroneous arguments here (the MPI reports them), NUMACOLL_MPI_GATHER=0 or
         * numacoll off here too: every member joins the communicator's set-up and counts
         * the same calls toward the deferral, and a flat team's data-movement set-up, so
         * that the others wait in numacoll's call (NUMACOLL_TIMEOUT ends that wait, naming
         * this member), never in a set-up it does not join */
        const int to_mpi = !args_valid(c, P);
        s = comm_get(c->comm, to_mpi ? 1 : units_of(c, P), 0);
        if (!g_active || !g_gather || !s || s->mode != MODE_FLAT || !move_ready(s) || to_mpi)
            return native(c);
    }
    const uint64_t calls = nc_move_calls(s->team);
    int rc = alltoallw_flat(s, c);
    if (NC_UNLIKELY(rc != NUMACOLL_OK)) rc = mv_take_part(s, MV_PART_ALLTOALLV, -1, calls, rc);
    if (rc == NUMACOLL_OK && fast) {
        BUMP(s->st_alltoallw_numacoll);
        if (c->mv.staged) BUMP(s->st_alltoall_staged);
    } else if (rc == NUMACOLL_OK) {
        COUNT(alltoallw_numacoll);
        if (c->mv.staged) COUNT(alltoall_staged);
    }
    return a2aw_result(s, c, rc);
}

/* ---- entry points ------------------------------------------------------------------- */

int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    a2aw_call_t c = {.sendbuf = sendbuf,       .scounts_i = sendcounts, .sdispls_i = sdispls,
                     .stypes = sendtypes,      .recvbuf = recvbuf,      .rcounts_i = recvcounts,
                     .rdispls_i = rdispls,     .rtypes = recvtypes,     .comm = comm};
    return a2aw_entry(&c);
}

#if MPI_VERSION >= 4
int MPI_Alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    a2aw_call_t c = {.is_c = 1,           .sendbuf = sendbuf,       .scounts_c = sendcounts,
                     .sdispls_c = sdispls, .stypes = sendtypes,     .recvbuf = recvbuf,
                     .rcounts_c = recvcounts, .rdispls_c = rdispls, .rtypes = recvtypes,
                     .comm = comm};
    return a2aw_entry(&c);
}
#endif
