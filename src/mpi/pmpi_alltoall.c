/*
 * libnumacoll_mpi: MPI_Alltoall and MPI_Alltoallv (and MPI-4's _c forms) on a flat
 * communicator: the team's numacoll_alltoall / numacoll_alltoallv.
 *
 * Which calls numacoll runs is decided alike on every member without communicating, from
 * the communicator's agreed state (flat; not pass-through, deferred or given up by the
 * core: s->move_native, shared with the gather family) and NUMACOLL_MPI_GATHER. Datatypes
 * play no part: a side whose datatype is plain goes to the core as it is, any other is
 * staged with PMPI_Pack / PMPI_Unpack (pmpi_move.h), so the core sees the same bytes
 * either way and compares byte counts only, which MPI requires to match. The hierarchical
 * mode (several nodes, NUMACOLL_FAKE_NODES) calls the MPI's own alltoall(v).
 */
#include "pmpi_move.h"

enum { A2A, A2AV };
static const char *const g_a2a_names[2] = {"MPI_Alltoall", "MPI_Alltoallv"};

/* one call as the application made it: counts and displacements as int (MPI_X) or as
 * MPI_Count / MPI_Aint (MPI_X_c) */
typedef struct a2a_call {
    int kind, is_c;
    const void *sendbuf;
    MPI_Count scount, rcount;                /* alltoall */
    const int *scounts_i, *sdispls_i, *rcounts_i, *rdispls_i; /* alltoallv */
    const MPI_Count *scounts_c, *rcounts_c;
    const MPI_Aint *sdispls_c, *rdispls_c;
    MPI_Datatype stype, rtype;
    void *recvbuf;
    MPI_Comm comm;
    mv_call_t mv; /* what the staging helpers keep: pack errors, staged (c.mv.comm) */
} a2a_call_t;

static inline MPI_Count scount_of(const a2a_call_t *c, int r)
{
    return c->scounts_c ? c->scounts_c[r] : (MPI_Count)c->scounts_i[r];
}
static inline MPI_Aint sdispl_of(const a2a_call_t *c, int r)
{
    return c->sdispls_c ? c->sdispls_c[r] : (MPI_Aint)c->sdispls_i[r];
}
static inline MPI_Count rcount_of(const a2a_call_t *c, int r)
{
    return c->rcounts_c ? c->rcounts_c[r] : (MPI_Count)c->rcounts_i[r];
}
static inline MPI_Aint rdispl_of(const a2a_call_t *c, int r)
{
    return c->rdispls_c ? c->rdispls_c[r] : (MPI_Aint)c->rdispls_i[r];
}

static int native(const a2a_call_t *c)
{
#if MPI_VERSION >= 4
    if (c->is_c && c->kind == A2A)
        return NC_HAVE(PMPI_Alltoall_c)
                   ? nc_mpi4.PMPI_Alltoall_c(c->sendbuf, c->scount, c->stype, c->recvbuf,
                                             c->rcount, c->rtype, c->comm)
                   : MPI_ERR_COUNT;
    if (c->is_c)
        return NC_HAVE(PMPI_Alltoallv_c)
                   ? nc_mpi4.PMPI_Alltoallv_c(c->sendbuf, c->scounts_c, c->sdispls_c, c->stype,
                                              c->recvbuf, c->rcounts_c, c->rdispls_c, c->rtype,
                                              c->comm)
                   : MPI_ERR_COUNT;
#endif
    if (c->kind == A2A)
        return PMPI_Alltoall(c->sendbuf, (int)c->scount, c->stype, c->recvbuf, (int)c->rcount,
                             c->rtype, c->comm);
    return PMPI_Alltoallv(c->sendbuf, c->scounts_i, c->sdispls_i, c->stype, c->recvbuf,
                          c->rcounts_i, c->rdispls_i, c->rtype, c->comm);
}

/* ---- datatypes ------------------------------------------------------------------------ */

/* The size of a predefined C type that is plain by definition (lower bound 0, extent =
 * size), told by its handle alone; 0 for any other type. Saves the four datatype queries
 * of mv_side_init on both sides of a small call (15-50 ns each side). */
static size_t basic_size(MPI_Datatype dt)
{
    if (dt == MPI_BYTE || dt == MPI_CHAR || dt == MPI_SIGNED_CHAR || dt == MPI_UNSIGNED_CHAR ||
        dt == MPI_INT8_T || dt == MPI_UINT8_T)
        return 1;
    if (dt == MPI_INT || dt == MPI_UNSIGNED || dt == MPI_FLOAT || dt == MPI_INT32_T ||
        dt == MPI_UINT32_T)
        return 4;
    if (dt == MPI_DOUBLE || dt == MPI_LONG_LONG || dt == MPI_UNSIGNED_LONG_LONG ||
        dt == MPI_INT64_T || dt == MPI_UINT64_T)
        return 8;
    if (dt == MPI_LONG || dt == MPI_UNSIGNED_LONG) return sizeof(long);
    if (dt == MPI_SHORT || dt == MPI_UNSIGNED_SHORT || dt == MPI_INT16_T || dt == MPI_UINT16_T)
        return 2;
    return 0;
}

/* mv_side_init, with the predefined C types told without asking the MPI */
static int side_init(mv_side_t *sd, const void *buf, MPI_Datatype dt)
{
    size_t b = basic_size(dt);
    if (!b) return mv_side_init(sd, buf, dt);
    *sd = (mv_side_t){.buf = (void *)buf, .dt = dt, .tsz = b, .ext = (MPI_Aint)b, .plain = 1};
    return 1;
}

/* ---- alltoall ------------------------------------------------------------------------ */

static int alltoall_flat(nc_comm_t *s, a2a_call_t *c)
{
    const int P = s->size;
    mv_side_t R, S;
    size_t b = 0, total = 0, sb = 0;
    if (!side_init(&R, c->recvbuf, c->rtype) || !mv_bytes(c->rcount, R.tsz, &b) ||
        __builtin_mul_overflow(b, (size_t)P, &total))
        return nc_error(NUMACOLL_ERR_ARG, "MPI_Alltoall: %lld elements of the receive type "
                                          "from each of %d members overflow",
                        (long long)c->rcount, P);
    const MPI_Count rall = (MPI_Count)P * c->rcount;
    char *stage = NULL, *sstage = NULL;
    if (!R.plain && !(stage = mv_alloc(total))) return NUMACOLL_ERR_NOMEM;
    void *recvp = stage ? stage : mv_at(&R, 0);
    const void *sendp = NUMACOLL_IN_PLACE;
    if (c->sendbuf == MPI_IN_PLACE) {
        if (stage) mv_pack(&c->mv, &R, 0, rall, stage, total);
    } else {
        int ok = side_init(&S, c->sendbuf, c->stype) && mv_bytes(c->scount, S.tsz, &sb);
        if (ok && sb == b && S.plain) {
            sendp = mv_at(&S, 0);
        } else {
            /* a non-contiguous send side, or (erroneous) send and receive blocks of other
             * sizes: this member takes part with the receivers' b bytes a block (zeros if
             * the sizes differ) and fails with MPI_ERR_TRUNCATE */
            if (!(sstage = mv_alloc(total))) {
                mv_free(stage);
                return NUMACOLL_ERR_NOMEM;
            }
            if (ok && sb == b) {
                mv_pack(&c->mv, &S, 0, (MPI_Count)P * c->scount, sstage, total);
            } else {
                memset(sstage, 0, total);
                int rank = -1;
                PMPI_Comm_rank(c->comm, &rank);
                mpi_say("numacoll-mpi: MPI_Alltoall: rank %d sends blocks of %zu bytes but "
                        "receives blocks of %zu (sendcount x sendtype size must equal recvcount "
                        "x recvtype size); it takes part with %zu-byte blocks of zeros and "
                        "fails with MPI_ERR_TRUNCATE\n",
                        rank, sb, b, b);
                c->mv.truncated = 1;
            }
            sendp = sstage;
        }
    }
    int rc = numacoll_alltoall(s->team, sendp, recvp, b);
    if (rc == NUMACOLL_OK && stage) mv_unpack(&c->mv, &R, 0, rall, stage, total);
    mv_free(stage);
    mv_free(sstage);
    return rc;
}

/* ---- alltoallv ----------------------------------------------------------------------- */

/* The byte layout of one side of an alltoallv (@p P blocks, counts / displacements through
 * @p count_of / @p displ_of): bytes[r] and displs[r] from *@p base. A plain side is its own
 * buffer (base: its lowest non-empty block; an empty block's displacement is not
 * significant and never read or written); any other is a stage of the blocks packed in rank
 * order (*@p base NULL, *@p total bytes for the caller to allocate). */
static int a2a_layout(const a2a_call_t *c, const mv_side_t *sd, int P,
                      MPI_Count (*count_of)(const a2a_call_t *, int),
                      MPI_Aint (*displ_of)(const a2a_call_t *, int), size_t *bytes,
                      size_t *displs, char **base, size_t *total)
{
    MPI_Aint lo = 0;
    int any = 0;
    *total = 0;
    for (int r = 0; r < P; r++) {
        if (!mv_bytes(count_of(c, r), sd->tsz, &bytes[r]) ||
            __builtin_add_overflow(*total, bytes[r], total))
            return nc_error(NUMACOLL_ERR_ARG, "MPI_Alltoallv: the blocks' sizes overflow");
        if (bytes[r] && (!any || displ_of(c, r) < lo)) lo = displ_of(c, r), any = 1;
    }
    if (!sd->plain) {
        size_t off = 0;
        for (int r = 0; r < P; r++)
            displs[r] = off, off += bytes[r];
        *base = NULL;
        return NUMACOLL_OK;
    }
    for (int r = 0; r < P; r++)
        displs[r] = bytes[r] ? (size_t)(displ_of(c, r) - lo) * sd->tsz : 0;
    *base = mv_at(sd, lo);
    return NUMACOLL_OK;
}

static int alltoallv_flat(nc_comm_t *s, a2a_call_t *c)
{
    const int P = s->size;
    const int in_place = c->sendbuf == MPI_IN_PLACE;
    mv_side_t R, S;
    if (!side_init(&R, c->recvbuf, c->rtype) ||
        (!in_place && !side_init(&S, c->sendbuf, c->stype)))
        return nc_error(NUMACOLL_ERR_ARG, "MPI_Alltoallv: a datatype cannot be queried");
    size_t *arr = malloc(4 * (size_t)P * sizeof *arr), rtotal = 0, stotal = 0;
    if (!arr) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory for %d block sizes", P);
    size_t *rb = arr, *rd = arr + P, *sbytes = arr + 2 * P, *sd = arr + 3 * P;
    char *rbase = NULL, *sbase = NULL, *rstage = NULL, *sstage = NULL;
    int rc = a2a_layout(c, &R, P, rcount_of, rdispl_of, rb, rd, &rbase, &rtotal);
    if (rc == NUMACOLL_OK && !in_place)
        rc = a2a_layout(c, &S, P, scount_of, sdispl_of, sbytes, sd, &sbase, &stotal);
    if (rc == NUMACOLL_OK && !R.plain && !(rbase = rstage = mv_alloc(rtotal)))
        rc = NUMACOLL_ERR_NOMEM;
    if (rc == NUMACOLL_OK && !in_place && !S.plain && !(sbase = sstage = mv_alloc(stotal)))
        rc = NUMACOLL_ERR_NOMEM;
    if (rc == NUMACOLL_OK && rstage && in_place) /* the input is in recvbuf's blocks */
        for (int r = 0; r < P; r++)
            mv_pack(&c->mv, &R, rdispl_of(c, r), rcount_of(c, r), rstage + rd[r], rb[r]);
    if (rc == NUMACOLL_OK && sstage)
        for (int r = 0; r < P; r++)
            mv_pack(&c->mv, &S, sdispl_of(c, r), scount_of(c, r), sstage + sd[r], sbytes[r]);
    if (rc == NUMACOLL_OK)
        rc = in_place ? numacoll_alltoallv(s->team, NUMACOLL_IN_PLACE, NULL, NULL, rbase, rb, rd)
                      : numacoll_alltoallv(s->team, sbase, sbytes, sd, rbase, rb, rd);
    if (rc == NUMACOLL_OK && rstage)
        for (int r = 0; r < P; r++)
            mv_unpack(&c->mv, &R, rdispl_of(c, r), rcount_of(c, r), rstage + rd[r], rb[r]);
    free(rstage);
    mv_free(sstage);
    free(arr);
    return rc;
}

/* ---- the decision --------------------------------------------------------------------- */

/* Arguments this member can check alone that make the call erroneous (the MPI's own call
 * then reports them): negative counts, missing arrays, null datatypes where significant */
static int args_valid(const a2a_call_t *c, int P)
{
    if (c->recvbuf == MPI_IN_PLACE || c->rtype == MPI_DATATYPE_NULL) return 0;
    if (c->sendbuf != MPI_IN_PLACE && c->stype == MPI_DATATYPE_NULL) return 0;
    if (c->kind == A2A) return c->rcount >= 0 && (c->sendbuf == MPI_IN_PLACE || c->scount >= 0);
    if (!(c->rcounts_i || c->rcounts_c) || !(c->rdispls_i || c->rdispls_c)) return 0;
    if (c->sendbuf != MPI_IN_PLACE &&
        (!(c->scounts_i || c->scounts_c) || !(c->sdispls_i || c->sdispls_c)))
        return 0;
    for (int r = 0; r < P; r++)
        if (rcount_of(c, r) < 0 || (c->sendbuf != MPI_IN_PLACE && scount_of(c, r) < 0)) return 0;
    return 1;
}

/* this member's bytes received, for the deferral's units (they need not be the same on
 * every member: see defer_step) */
static uint64_t units_of(const a2a_call_t *c, int P)
{
    int sz = (int)basic_size(c->rtype);
    if (!sz && (PMPI_Type_size(c->rtype, &sz) != MPI_SUCCESS || sz < 0)) return 1;
    MPI_Count n = 0;
    if (c->kind == A2A)
        n = (MPI_Count)P * c->rcount;
    else
        for (int r = 0; r < P; r++)
            n += rcount_of(c, r);
    return bcast_units(n, sz);
}

/* the team's data-movement state (shared with the gather family, created at the first call
 * of either, with a status agreed by every member): 1 when the team can run them, else 0
 * on every member, for good */
static int a2a_ready(nc_comm_t *s)
{
    if (s->move_native || !s->team) return 0;
    if (NC_LIKELY(s->team->move != NULL)) return 1;
    int rc = nc_move_setup(s->team);
    if (rc == NUMACOLL_OK) return 1;
    s->move_native = 1;
    warn_setup(s, "the data-movement set-up", rc);
    return 0;
}

static int a2a_result(nc_comm_t *s, a2a_call_t *c, int rc);

static int a2a_entry(a2a_call_t *c)
{
    /* what the staging helpers keep (mv_args: no zero fill of the struct) */
    mv_args(&c->mv, MV_ALLGATHER, 0, NULL, 0, MPI_DATATYPE_NULL, NULL, 0, MPI_DATATYPE_NULL, -1,
            c->comm);
    /* fast path: this thread's cached state of the communicator is one flat team whose
     * data-movement state is set up: the decision below without the MPI's size query, the
     * deferral's units and locked adds on process-wide counters */
    nc_comm_t *s = comm_cached_flat(c->comm);
    int fast = s && g_gather && !s->move_native && s->team->move != NULL;
    if (fast) {
        if (c->kind == A2A)
            BUMP(s->st_alltoall_calls);
        else
            BUMP(s->st_alltoallv_calls);
        if (!args_valid(c, s->size)) return native(c);
    } else {
        ensure_init();
        if (c->kind == A2A)
            COUNT(alltoall_calls);
        else
            COUNT(alltoallv_calls);
        if (c->comm == MPI_COMM_NULL) return native(c);
        const int P = mv_intra_size(c->comm); /* 0: an intercommunicator, the MPI's */
        if (!P) return native(c);
        /* with erroneous arguments here (the MPI reports them), NUMACOLL_MPI_GATHER=0 or
         * numacoll off here too: every member joins the communicator's set-up and counts
         * the same calls toward the deferral, and a flat team's data-movement set-up
         * (mv_entry) */
        const int to_mpi = !args_valid(c, P);
        s = comm_get(c->comm, to_mpi ? 1 : units_of(c, P), 0);
        if (!g_active || !g_gather || !s || s->mode != MODE_FLAT || !a2a_ready(s) || to_mpi)
            return native(c);
    }
    const uint64_t calls = nc_move_calls(s->team);
    int rc = c->kind == A2A ? alltoall_flat(s, c) : alltoallv_flat(s, c);
    if (NC_UNLIKELY(rc != NUMACOLL_OK))
        rc = mv_take_part(s, c->kind == A2A ? MV_PART_ALLTOALL : MV_PART_ALLTOALLV, -1, calls, rc);
    if (rc == NUMACOLL_OK && fast) {
        if (c->kind == A2A)
            BUMP(s->st_alltoall_numacoll);
        else
            BUMP(s->st_alltoallv_numacoll);
        if (c->mv.staged) BUMP(s->st_alltoall_staged);
    } else if (rc == NUMACOLL_OK) {
        if (c->kind == A2A)
            COUNT(alltoall_numacoll);
        else
            COUNT(alltoallv_numacoll);
        if (c->mv.staged) COUNT(alltoall_staged);
    }
    return a2a_result(s, c, rc);
}

/* The MPI result of a call that numacoll ran (its core result @p rc): a mismatch of sizes
 * between members is the caller's (MPI_ERR_ARG, the team stays usable); a dead member or a
 * timeout breaks the team */
static int a2a_result(nc_comm_t *s, a2a_call_t *c, int rc)
{
    const char *name = g_a2a_names[c->kind];
    if (rc == NUMACOLL_OK && c->mv.truncated) {
        PMPI_Comm_call_errhandler(c->comm, MPI_ERR_TRUNCATE);
        return MPI_ERR_TRUNCATE;
    }
    if (rc == NUMACOLL_OK) return c->mv.prc; /* a pack error: the MPI has called the handler */
    if (rc == NUMACOLL_ERR_ARG) {
        mpi_say("numacoll-mpi: %s: %s\n", name, numacoll_last_error());
        PMPI_Comm_call_errhandler(c->comm, MPI_ERR_ARG);
        return MPI_ERR_ARG;
    }
    s->broken = 1;
    return raise_error(c->comm, name, rc);
}

/* ---- entry points ------------------------------------------------------------------- */

/* MPI_Alltoall's fast path: predefined datatypes of equal block bytes on a cached flat
 * communicator, straight into the core (as mv_plain for the gather family). 1: the call
 * ran, its MPI result in *@p mpi_rc; 0: not such a call, nothing done or counted */
static int a2a_plain(const void *sendbuf, MPI_Count scount, MPI_Datatype stype, void *recvbuf,
                     MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, int *mpi_rc);

/* MPI_Alltoall's arguments, every field stored by name (see mv_args) */
static inline void a2a_uniform(a2a_call_t *c, int is_c, const void *sendbuf, MPI_Count scount,
                               MPI_Datatype stype, void *recvbuf, MPI_Count rcount,
                               MPI_Datatype rtype, MPI_Comm comm)
{
    c->kind = A2A, c->is_c = is_c;
    c->sendbuf = sendbuf, c->scount = scount, c->rcount = rcount;
    c->scounts_i = c->sdispls_i = c->rcounts_i = c->rdispls_i = NULL;
    c->scounts_c = c->rcounts_c = NULL;
    c->sdispls_c = c->rdispls_c = NULL;
    c->stype = stype, c->rtype = rtype;
    c->recvbuf = recvbuf;
    c->comm = comm;
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc;
    if (a2a_plain(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &rc))
        return rc;
    a2a_call_t c;
    a2a_uniform(&c, 0, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return a2a_entry(&c);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    a2a_call_t c = {.kind = A2AV,         .sendbuf = sendbuf,     .scounts_i = sendcounts,
                    .sdispls_i = sdispls, .stype = sendtype,      .recvbuf = recvbuf,
                    .rcounts_i = recvcounts, .rdispls_i = rdispls, .rtype = recvtype,
                    .comm = comm};
    return a2a_entry(&c);
}

#if MPI_VERSION >= 4
int MPI_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                   void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    a2a_call_t c;
    a2a_uniform(&c, 1, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return a2a_entry(&c);
}

int MPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    a2a_call_t c = {.kind = A2AV,         .is_c = 1,          .sendbuf = sendbuf,
                    .scounts_c = sendcounts, .sdispls_c = sdispls, .stype = sendtype,
                    .recvbuf = recvbuf,   .rcounts_c = recvcounts, .rdispls_c = rdispls,
                    .rtype = recvtype,    .comm = comm};
    return a2a_entry(&c);
}
#endif

static int a2a_plain(const void *sendbuf, MPI_Count scount, MPI_Datatype stype, void *recvbuf,
                     MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, int *mpi_rc)
{
    nc_comm_t *s = comm_cached_flat(comm);
    if (!s || !g_gather || s->move_native || !s->team->move) return 0;
    size_t b = 0, mine = 0, total = 0, rsz = basic_size(rtype);
    if (recvbuf == MPI_IN_PLACE || !rsz || !mv_bytes(rcount, rsz, &b) ||
        __builtin_mul_overflow(b, (size_t)s->size, &total))
        return 0;
    const void *send = NUMACOLL_IN_PLACE;
    if (sendbuf != MPI_IN_PLACE) {
        size_t ssz = basic_size(stype);
        if (!ssz || !mv_bytes(scount, ssz, &mine) || mine != b) return 0;
        send = sendbuf;
    }
    BUMP(s->st_alltoall_calls);
    int rc = numacoll_alltoall(s->team, send, recvbuf, b);
    if (NC_LIKELY(rc == NUMACOLL_OK)) {
        BUMP(s->st_alltoall_numacoll);
        *mpi_rc = MPI_SUCCESS;
        return 1;
    }
    a2a_call_t c;
    a2a_uniform(&c, 0, sendbuf, scount, stype, recvbuf, rcount, rtype, comm);
    mv_args(&c.mv, MV_ALLGATHER, 0, NULL, 0, MPI_DATATYPE_NULL, NULL, 0, MPI_DATATYPE_NULL, -1,
            comm);
    *mpi_rc = a2a_result(s, &c, rc);
    return 1;
}

/* ---- counters (MPI_Alltoallw's, pmpi_alltoallw.c, too) -------------------------------- */

void alltoall_stats_text(char *out, size_t n)
{
    snprintf(out, n,
             ", MPI_Alltoall %llu (numacoll %llu), MPI_Alltoallv %llu (numacoll %llu), "
             "MPI_Alltoallw %llu (numacoll %llu), alltoall staged %llu",
             (unsigned long long)READ(alltoall_calls), (unsigned long long)READ(alltoall_numacoll),
             (unsigned long long)READ(alltoallv_calls),
             (unsigned long long)READ(alltoallv_numacoll),
             (unsigned long long)READ(alltoallw_calls),
             (unsigned long long)READ(alltoallw_numacoll),
             (unsigned long long)READ(alltoall_staged));
}

void alltoall_stats_fill(numacoll_mpi_stats_t *o)
{
    /* the released communicators' counts (g_st) plus the live ones', under the list lock
     * (a state is folded into g_st and unlinked in one critical section) */
    pthread_mutex_lock(&g_lock);
    o->alltoall_calls = READ(alltoall_calls);
    o->alltoall_numacoll = READ(alltoall_numacoll);
    o->alltoallv_calls = READ(alltoallv_calls);
    o->alltoallv_numacoll = READ(alltoallv_numacoll);
    o->alltoall_staged = READ(alltoall_staged);
    o->alltoallw_calls = READ(alltoallw_calls);
    o->alltoallw_numacoll = READ(alltoallw_numacoll);
    for (nc_comm_t *s = g_list; s; s = s->next) {
#define LIVE(x) atomic_load_explicit(&s->st_##x, memory_order_relaxed)
        o->alltoall_calls += LIVE(alltoall_calls);
        o->alltoall_numacoll += LIVE(alltoall_numacoll);
        o->alltoallv_calls += LIVE(alltoallv_calls);
        o->alltoallv_numacoll += LIVE(alltoallv_numacoll);
        o->alltoall_staged += LIVE(alltoall_staged);
        o->alltoallw_calls += LIVE(alltoallw_calls);
        o->alltoallw_numacoll += LIVE(alltoallw_numacoll);
#undef LIVE
    }
    pthread_mutex_unlock(&g_lock);
}
