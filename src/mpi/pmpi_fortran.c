/*
 * libnumacoll_mpi: the Fortran entry points of MPI_Barrier, MPI_Bcast, MPI_Allreduce,
 * MPI_Reduce, MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan and the gather family
 * (MPI_Allgather(v), MPI_Gather(v), MPI_Scatter(v)), MPI_Alltoall(v,w) and the neighbourhood
 * collectives (MPI_Neighbor_allgather(v), MPI_Neighbor_alltoall(v,w)).
 */
#include "mpi_internal.h"

/* ---- Fortran entry points ------------------------------------------------------------
 * mpif.h / `use mpi` call these names directly; Open MPI's own versions call PMPI_* and
 * would bypass the C wrappers, so they are interposed themselves (MPICH 4.0's call the C
 * MPI_Bcast, but that is not a documented promise, so its names are interposed too). Open MPI's
 * mpi_f08 module goes through ompi_barrier_f / ompi_bcast_f; MPICH's mpi_f08 barrier is
 * mpi_barrier_f08_. */

static void f_barrier(MPI_Fint *comm, MPI_Fint *ierr)
{
    COUNT(fortran_calls);
    int rc = barrier_impl(PMPI_Comm_f2c(*comm));
    if (ierr) *ierr = (MPI_Fint)rc;
}

/* Fortran's MPI_BOTTOM and MPI_IN_PLACE arrive as the addresses of variables in the MPI's
 * Fortran library; the C call needs C's constants (an MPI_BOTTOM left as an address makes
 * every absolute displacement of the datatype point elsewhere: a crash or silent
 * corruption). The symbols are weak: a C program has no Fortran library loaded. */
#if defined(OPEN_MPI) && OPEN_MPI
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_in_place_ __attribute__((weak));
static void *f_buf(void *b)
{
    if (&mpi_fortran_bottom_ && b == (void *)&mpi_fortran_bottom_) return MPI_BOTTOM;
    if (&mpi_fortran_in_place_ && b == (void *)&mpi_fortran_in_place_) return MPI_IN_PLACE;
    return b;
}
static int f_delegate_bcast(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root,
                            MPI_Fint *comm, MPI_Fint *ierr)
{
    (void)buf, (void)count, (void)dt, (void)root, (void)comm, (void)ierr;
    return 0;
}
static int f_delegate_reduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt,
                             MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
    (void)sendbuf, (void)recvbuf, (void)count, (void)dt, (void)op, (void)root, (void)comm;
    (void)ierr;
    return 0;
}
static int f_delegate_ss(int kind, void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt,
                         MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
{
    (void)kind, (void)sendbuf, (void)recvbuf, (void)count, (void)dt, (void)op, (void)comm;
    (void)ierr;
    return 0;
}
#define F_DELEGATE_MOVE(kind, call) 0
#else
/* MPICH: pointers to the Fortran constants, filled by its Fortran runtime on first use
 * (MPIR_F_NeedInit != 0 until then). Before that, the call goes to MPICH's own binding,
 * which initialises them, maps the constants and calls MPI_Bcast (so ours) itself. */
extern void *MPIR_F_MPI_BOTTOM __attribute__((weak));
extern void *MPIR_F_MPI_IN_PLACE __attribute__((weak));
extern int MPIR_F_NeedInit __attribute__((weak));
extern void pmpi_bcast_(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
    __attribute__((weak));
extern void pmpi_allreduce_(void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                            MPI_Fint *) __attribute__((weak));
extern void pmpi_reduce_(void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                         MPI_Fint *, MPI_Fint *) __attribute__((weak));
static void *f_buf(void *b)
{
    if (&MPIR_F_MPI_BOTTOM && MPIR_F_MPI_BOTTOM && b == MPIR_F_MPI_BOTTOM) return MPI_BOTTOM;
    if (&MPIR_F_MPI_IN_PLACE && MPIR_F_MPI_IN_PLACE && b == MPIR_F_MPI_IN_PLACE)
        return MPI_IN_PLACE;
    return b;
}
static int f_delegate_bcast(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root,
                            MPI_Fint *comm, MPI_Fint *ierr)
{
    if (!(&MPIR_F_NeedInit && MPIR_F_NeedInit && pmpi_bcast_)) return 0;
    MPI_Fint rc = MPI_SUCCESS;
    pmpi_bcast_(buf, count, dt, root, comm, &rc);
    if (ierr) *ierr = rc;
    return 1;
}
/* as f_delegate_bcast, for MPI_Allreduce (@p root NULL) and MPI_Reduce */
static int f_delegate_reduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt,
                             MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
    if (!(&MPIR_F_NeedInit && MPIR_F_NeedInit && (root ? !!pmpi_reduce_ : !!pmpi_allreduce_)))
        return 0;
    MPI_Fint rc = MPI_SUCCESS;
    if (root) pmpi_reduce_(sendbuf, recvbuf, count, dt, op, root, comm, &rc);
    else pmpi_allreduce_(sendbuf, recvbuf, count, dt, op, comm, &rc);
    if (ierr) *ierr = rc;
    return 1;
}
typedef void f_ss_fn(void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
extern f_ss_fn pmpi_reduce_scatter_block_ __attribute__((weak));
extern f_ss_fn pmpi_reduce_scatter_ __attribute__((weak));
extern f_ss_fn pmpi_scan_ __attribute__((weak));
extern f_ss_fn pmpi_exscan_ __attribute__((weak));
/* as f_delegate_bcast, for f_scatter_scan's @p kind */
static int f_delegate_ss(int kind, void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt,
                         MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
{
    f_ss_fn *fn = kind == 0   ? pmpi_reduce_scatter_block_
                  : kind == 1 ? pmpi_reduce_scatter_
                  : kind == 2 ? pmpi_scan_
                              : pmpi_exscan_;
    if (!(&MPIR_F_NeedInit && MPIR_F_NeedInit && fn)) return 0;
    MPI_Fint rc = MPI_SUCCESS;
    fn(sendbuf, recvbuf, count, dt, op, comm, &rc);
    if (ierr) *ierr = rc;
    return 1;
}
/* as f_delegate_bcast, for the gather family: MPICH's binding @p call when its Fortran
 * constants are not set up yet (1), else 0 */
#define F_ARGS_GATHER void *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *
extern void pmpi_allgather_(F_ARGS_GATHER, MPI_Fint *, MPI_Fint *) __attribute__((weak));
extern void pmpi_allgatherv_(F_ARGS_GATHER, MPI_Fint *, MPI_Fint *, MPI_Fint *)
    __attribute__((weak));
extern void pmpi_gather_(F_ARGS_GATHER, MPI_Fint *, MPI_Fint *, MPI_Fint *) __attribute__((weak));
extern void pmpi_gatherv_(F_ARGS_GATHER, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
    __attribute__((weak));
extern void pmpi_scatter_(F_ARGS_GATHER, MPI_Fint *, MPI_Fint *, MPI_Fint *) __attribute__((weak));
extern void pmpi_scatterv_(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *,
                           MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *) __attribute__((weak));
extern void pmpi_alltoall_(F_ARGS_GATHER, MPI_Fint *, MPI_Fint *) __attribute__((weak));
extern void pmpi_alltoallv_(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *,
                            MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *) __attribute__((weak));
extern void pmpi_alltoallw_(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *,
                            MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *) __attribute__((weak));
#define F_DELEGATE_MOVE(fn, call)                                                                  \
    (&MPIR_F_NeedInit && MPIR_F_NeedInit && fn ? (fn call, 1) : 0)
#endif

static void f_bcast(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,
                    MPI_Fint *ierr)
{
    COUNT(fortran_calls);
    if (f_delegate_bcast(buf, count, dt, root, comm, ierr)) return;
    int rc =
        MPI_Bcast(f_buf(buf), (int)*count, PMPI_Type_f2c(*dt), (int)*root, PMPI_Comm_f2c(*comm));
    if (ierr) *ierr = (MPI_Fint)rc;
}

/* MPI_Allreduce (@p root NULL) and MPI_Reduce */
static void f_reduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                     MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
    COUNT(fortran_calls);
    if (f_delegate_reduce(sendbuf, recvbuf, count, dt, op, root, comm, ierr)) return;
    MPI_Datatype cdt = PMPI_Type_f2c(*dt);
    MPI_Op cop = PMPI_Op_f2c(*op);
    MPI_Comm ccomm = PMPI_Comm_f2c(*comm);
    int rc = root ? MPI_Reduce(f_buf(sendbuf), f_buf(recvbuf), (int)*count, cdt, cop, (int)*root,
                               ccomm)
                  : MPI_Allreduce(f_buf(sendbuf), f_buf(recvbuf), (int)*count, cdt, cop, ccomm);
    if (ierr) *ierr = (MPI_Fint)rc;
}

/* MPI_Reduce_scatter_block (@p kind 0; @p count the recvcount), MPI_Reduce_scatter (1; the
 * recvcounts), MPI_Scan (2), MPI_Exscan (3) */
static void f_scatter_scan(int kind, void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt,
                           MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
{
    COUNT(fortran_calls);
    if (f_delegate_ss(kind, sendbuf, recvbuf, count, dt, op, comm, ierr)) return;
    MPI_Datatype cdt = PMPI_Type_f2c(*dt);
    MPI_Op cop = PMPI_Op_f2c(*op);
    MPI_Comm ccomm = PMPI_Comm_f2c(*comm);
    void *sb = f_buf(sendbuf), *rb = f_buf(recvbuf);
    int rc;
    if (kind == 1) {
        int size = 0, *counts = (int *)count;
        if (sizeof(MPI_Fint) != sizeof(int)) { /* INTEGER of another size: the C ints */
            PMPI_Comm_size(ccomm, &size);
            counts = malloc((size_t)(size > 0 ? size : 1) * sizeof *counts);
            for (int m = 0; counts && m < size; m++)
                counts[m] = (int)count[m];
        }
        rc = counts ? MPI_Reduce_scatter(sb, rb, counts, cdt, cop, ccomm) : MPI_ERR_NO_MEM;
        if (counts != (int *)count) free(counts);
    } else if (kind == 0) {
        rc = MPI_Reduce_scatter_block(sb, rb, (int)*count, cdt, cop, ccomm);
    } else if (kind == 2) {
        rc = MPI_Scan(sb, rb, (int)*count, cdt, cop, ccomm);
    } else {
        rc = MPI_Exscan(sb, rb, (int)*count, cdt, cop, ccomm);
    }
    if (ierr) *ierr = (MPI_Fint)rc;
}

#define NC_F_SCATTER_SCAN(name, kind)                                                             \
    void name(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,           \
              MPI_Fint *comm, MPI_Fint *ierr);                                                     \
    void name(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,           \
              MPI_Fint *comm, MPI_Fint *ierr)                                                      \
    {                                                                                              \
        f_scatter_scan(kind, sendbuf, recvbuf, count, dt, op, comm, ierr);                         \
    }
/* the gather family: Fortran's INTEGER arrays are MPI_Fint, the C int of the MPI-3 calls */
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint is a C int");
#define F_RET(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (ierr) *ierr = (MPI_Fint)rc_;                                                           \
    } while (0)

#define NC_F_ALLGATHER(name)                                                                       \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt,          \
              MPI_Fint *comm, MPI_Fint *ierr);                                                     \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt,          \
              MPI_Fint *comm, MPI_Fint *ierr)                                                      \
    {                                                                                              \
        COUNT(fortran_calls);                                                                      \
        if (F_DELEGATE_MOVE(pmpi_allgather_, (sb, sc, st, rb, rc, rt, comm, ierr))) return;        \
        F_RET(MPI_Allgather(f_buf(sb), (int)*sc, PMPI_Type_f2c(*st), f_buf(rb), (int)*rc,          \
                            PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm)));                            \
    }
#define NC_F_ALLGATHERV(name)                                                                      \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rcs, MPI_Fint *dsp,        \
              MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr);                                       \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rcs, MPI_Fint *dsp,        \
              MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr)                                        \
    {                                                                                              \
        COUNT(fortran_calls);                                                                      \
        if (F_DELEGATE_MOVE(pmpi_allgatherv_, (sb, sc, st, rb, rcs, dsp, rt, comm, ierr))) return; \
        F_RET(MPI_Allgatherv(f_buf(sb), (int)*sc, PMPI_Type_f2c(*st), f_buf(rb), (int *)rcs,       \
                             (int *)dsp, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm)));               \
    }
#define NC_F_GATHER(name, cname, pname)                                                            \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt,          \
              MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr);                                     \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt,          \
              MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)                                      \
    {                                                                                              \
        COUNT(fortran_calls);                                                                      \
        if (F_DELEGATE_MOVE(pname, (sb, sc, st, rb, rc, rt, root, comm, ierr))) return;            \
        F_RET(cname(f_buf(sb), (int)*sc, PMPI_Type_f2c(*st), f_buf(rb), (int)*rc,                  \
                    PMPI_Type_f2c(*rt), (int)*root, PMPI_Comm_f2c(*comm)));                        \
    }
#define NC_F_GATHERV(name)                                                                         \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rcs, MPI_Fint *dsp,        \
              MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr);                       \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rcs, MPI_Fint *dsp,        \
              MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)                        \
    {                                                                                              \
        COUNT(fortran_calls);                                                                      \
        if (F_DELEGATE_MOVE(pmpi_gatherv_, (sb, sc, st, rb, rcs, dsp, rt, root, comm, ierr)))      \
            return;                                                                                \
        F_RET(MPI_Gatherv(f_buf(sb), (int)*sc, PMPI_Type_f2c(*st), f_buf(rb), (int *)rcs,          \
                          (int *)dsp, PMPI_Type_f2c(*rt), (int)*root, PMPI_Comm_f2c(*comm)));      \
    }
#define NC_F_SCATTERV(name)                                                                        \
    void name(void *sb, MPI_Fint *scs, MPI_Fint *dsp, MPI_Fint *st, void *rb, MPI_Fint *rc,        \
              MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr);                       \
    void name(void *sb, MPI_Fint *scs, MPI_Fint *dsp, MPI_Fint *st, void *rb, MPI_Fint *rc,        \
              MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)                        \
    {                                                                                              \
        COUNT(fortran_calls);                                                                      \
        if (F_DELEGATE_MOVE(pmpi_scatterv_, (sb, scs, dsp, st, rb, rc, rt, root, comm, ierr)))     \
            return;                                                                                \
        F_RET(MPI_Scatterv(f_buf(sb), (int *)scs, (int *)dsp, PMPI_Type_f2c(*st), f_buf(rb),       \
                           (int)*rc, PMPI_Type_f2c(*rt), (int)*root, PMPI_Comm_f2c(*comm)));       \
    }
/* every spelling of one gather-family name */
#define NC_F_ALL4(macro, lower, upper) macro(lower##_) macro(lower##__) macro(lower) macro(upper)
#define NC_F_ALL4G(lower, upper, cname, pname)                                                     \
    NC_F_GATHER(lower##_, cname, pname)                                                            \
    NC_F_GATHER(lower##__, cname, pname)                                                           \
    NC_F_GATHER(lower, cname, pname) NC_F_GATHER(upper, cname, pname)
NC_F_ALL4(NC_F_ALLGATHER, mpi_allgather, MPI_ALLGATHER)
NC_F_ALL4(NC_F_ALLGATHERV, mpi_allgatherv, MPI_ALLGATHERV)
NC_F_ALL4G(mpi_gather, MPI_GATHER, MPI_Gather, pmpi_gather_)
NC_F_ALL4(NC_F_GATHERV, mpi_gatherv, MPI_GATHERV)
NC_F_ALL4G(mpi_scatter, MPI_SCATTER, MPI_Scatter, pmpi_scatter_)
NC_F_ALL4(NC_F_SCATTERV, mpi_scatterv, MPI_SCATTERV)
#if defined(OPEN_MPI) && OPEN_MPI
NC_F_ALLGATHER(ompi_allgather_f)
NC_F_ALLGATHERV(ompi_allgatherv_f)
NC_F_GATHER(ompi_gather_f, MPI_Gather, pmpi_gather_)
NC_F_GATHERV(ompi_gatherv_f)
NC_F_GATHER(ompi_scatter_f, MPI_Scatter, pmpi_scatter_)
NC_F_SCATTERV(ompi_scatterv_f)
#endif

/* MPI_Alltoall has MPI_Allgather's arguments */
#define NC_F_ALLTOALL(name)                                                                        \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt,          \
              MPI_Fint *comm, MPI_Fint *ierr);                                                     \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt,          \
              MPI_Fint *comm, MPI_Fint *ierr)                                                      \
    {                                                                                              \
        COUNT(fortran_calls);                                                                      \
        if (F_DELEGATE_MOVE(pmpi_alltoall_, (sb, sc, st, rb, rc, rt, comm, ierr))) return;         \
        F_RET(MPI_Alltoall(f_buf(sb), (int)*sc, PMPI_Type_f2c(*st), f_buf(rb), (int)*rc,           \
                           PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm)));                             \
    }
#define NC_F_ALLTOALLV(name)                                                                       \
    void name(void *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *st, void *rb, MPI_Fint *rcs,       \
              MPI_Fint *rds, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr);                        \
    void name(void *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *st, void *rb, MPI_Fint *rcs,       \
              MPI_Fint *rds, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr)                         \
    {                                                                                              \
        COUNT(fortran_calls);                                                                      \
        if (F_DELEGATE_MOVE(pmpi_alltoallv_, (sb, scs, sds, st, rb, rcs, rds, rt, comm, ierr)))    \
            return;                                                                                \
        F_RET(MPI_Alltoallv(f_buf(sb), (int *)scs, (int *)sds, PMPI_Type_f2c(*st), f_buf(rb),      \
                            (int *)rcs, (int *)rds, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm)));    \
    }
/* MPI_Alltoallw: Fortran's datatypes are INTEGER handles, one a block: the C handles of
 * as many blocks as the arrays have (the communicator's size; an intercommunicator's
 * remote group's), the send side's only when it is not in place (MPI_IN_PLACE leaves
 * sendtypes unspecified) */
static void f_alltoallw(void *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *sts, void *rb,
                        MPI_Fint *rcs, MPI_Fint *rds, MPI_Fint *rts, MPI_Fint *comm, MPI_Fint *ierr)
{
    COUNT(fortran_calls);
    if (F_DELEGATE_MOVE(pmpi_alltoallw_, (sb, scs, sds, sts, rb, rcs, rds, rts, comm, ierr)))
        return;
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    void *send = f_buf(sb), *recv = f_buf(rb);
    int P = 0, inter = 0;
    if (PMPI_Comm_test_inter(c, &inter) != MPI_SUCCESS ||
        (inter ? PMPI_Comm_remote_size(c, &P) : PMPI_Comm_size(c, &P)) != MPI_SUCCESS || P < 1)
        P = 1; /* an invalid communicator: the MPI's call reports it */
    MPI_Datatype *types = malloc(2 * (size_t)P * sizeof *types);
    if (!types) {
        F_RET(MPI_ERR_NO_MEM);
        return;
    }
    MPI_Datatype *st = types, *rt = types + P;
    for (int r = 0; r < P; r++) {
        rt[r] = PMPI_Type_f2c(rts[r]);
        st[r] = send == MPI_IN_PLACE ? MPI_DATATYPE_NULL : PMPI_Type_f2c(sts[r]);
    }
    F_RET(MPI_Alltoallw(send, (int *)scs, (int *)sds, st, recv, (int *)rcs, (int *)rds, rt, c));
    free(types);
}
#define NC_F_ALLTOALLW(name)                                                                       \
    void name(void *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *sts, void *rb, MPI_Fint *rcs,      \
              MPI_Fint *rds, MPI_Fint *rts, MPI_Fint *comm, MPI_Fint *ierr);                       \
    void name(void *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *sts, void *rb, MPI_Fint *rcs,      \
              MPI_Fint *rds, MPI_Fint *rts, MPI_Fint *comm, MPI_Fint *ierr)                        \
    {                                                                                              \
        f_alltoallw(sb, scs, sds, sts, rb, rcs, rds, rts, comm, ierr);                             \
    }
NC_F_ALL4(NC_F_ALLTOALL, mpi_alltoall, MPI_ALLTOALL)
NC_F_ALL4(NC_F_ALLTOALLV, mpi_alltoallv, MPI_ALLTOALLV)
NC_F_ALL4(NC_F_ALLTOALLW, mpi_alltoallw, MPI_ALLTOALLW)
#if defined(OPEN_MPI) && OPEN_MPI
NC_F_ALLTOALL(ompi_alltoall_f)
NC_F_ALLTOALLV(ompi_alltoallv_f)
NC_F_ALLTOALLW(ompi_alltoallw_f)
#endif

/* The neighbourhood collectives: MPI_Neighbor_allgather and MPI_Neighbor_alltoall have
 * MPI_Allgather's arguments, MPI_Neighbor_allgatherv MPI_Allgatherv's, MPI_Neighbor_alltoallv
 * MPI_Alltoallv's (arrays of the topology's degrees); MPI_Neighbor_alltoallw takes byte
 * displacements as INTEGER(KIND=MPI_ADDRESS_KIND), MPI_Aint, and a datatype a neighbour */
#if !(defined(OPEN_MPI) && OPEN_MPI)
extern void pmpi_neighbor_allgather_(F_ARGS_GATHER, MPI_Fint *, MPI_Fint *) __attribute__((weak));
extern void pmpi_neighbor_alltoall_(F_ARGS_GATHER, MPI_Fint *, MPI_Fint *) __attribute__((weak));
extern void pmpi_neighbor_allgatherv_(F_ARGS_GATHER, MPI_Fint *, MPI_Fint *, MPI_Fint *)
    __attribute__((weak));
extern void pmpi_neighbor_alltoallv_(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, void *,
                                     MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
    __attribute__((weak));
extern void pmpi_neighbor_alltoallw_(void *, MPI_Fint *, MPI_Aint *, MPI_Fint *, void *,
                                     MPI_Fint *, MPI_Aint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
    __attribute__((weak));
#endif
#define NC_F_NB_UNIFORM(name, cname, pname)                                                        \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt,          \
              MPI_Fint *comm, MPI_Fint *ierr);                                                     \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt,          \
              MPI_Fint *comm, MPI_Fint *ierr)                                                      \
    {                                                                                              \
        COUNT(fortran_calls);                                                                      \
        if (F_DELEGATE_MOVE(pname, (sb, sc, st, rb, rc, rt, comm, ierr))) return;                  \
        F_RET(cname(f_buf(sb), (int)*sc, PMPI_Type_f2c(*st), f_buf(rb), (int)*rc,                  \
                    PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm)));                                    \
    }
#define NC_F_NB_ALLGATHERV(name)                                                                   \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rcs, MPI_Fint *dsp,        \
              MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr);                                       \
    void name(void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rcs, MPI_Fint *dsp,        \
              MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr)                                        \
    {                                                                                              \
        COUNT(fortran_calls);                                                                      \
        if (F_DELEGATE_MOVE(pmpi_neighbor_allgatherv_,                                             \
                            (sb, sc, st, rb, rcs, dsp, rt, comm, ierr)))                           \
            return;                                                                                \
        F_RET(MPI_Neighbor_allgatherv(f_buf(sb), (int)*sc, PMPI_Type_f2c(*st), f_buf(rb),          \
                                      (int *)rcs, (int *)dsp, PMPI_Type_f2c(*rt),                  \
                                      PMPI_Comm_f2c(*comm)));                                      \
    }
#define NC_F_NB_ALLTOALLV(name)                                                                    \
    void name(void *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *st, void *rb, MPI_Fint *rcs,       \
              MPI_Fint *rds, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr);                        \
    void name(void *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *st, void *rb, MPI_Fint *rcs,       \
              MPI_Fint *rds, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr)                         \
    {                                                                                              \
        COUNT(fortran_calls);                                                                      \
        if (F_DELEGATE_MOVE(pmpi_neighbor_alltoallv_,                                              \
                            (sb, scs, sds, st, rb, rcs, rds, rt, comm, ierr)))                     \
            return;                                                                                \
        F_RET(MPI_Neighbor_alltoallv(f_buf(sb), (int *)scs, (int *)sds, PMPI_Type_f2c(*st),        \
                                     f_buf(rb), (int *)rcs, (int *)rds, PMPI_Type_f2c(*rt),        \
                                     PMPI_Comm_f2c(*comm)));                                       \
    }
/* MPI_Neighbor_alltoallw: the C handles of the out-degree's send types and the in-degree's
 * receive types */
static void f_neighbor_alltoallw(void *sb, MPI_Fint *scs, MPI_Aint *sds, MPI_Fint *sts, void *rb,
                                 MPI_Fint *rcs, MPI_Aint *rds, MPI_Fint *rts, MPI_Fint *comm,
                                 MPI_Fint *ierr)
{
    COUNT(fortran_calls);
    if (F_DELEGATE_MOVE(pmpi_neighbor_alltoallw_,
                        (sb, scs, sds, sts, rb, rcs, rds, rts, comm, ierr)))
        return;
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    int in = 0, out = 0;
    (void)neighbor_degrees(c, &in, &out); /* none: the MPI's call reports it */
    MPI_Datatype *types = malloc(((size_t)in + (size_t)out + 1) * sizeof *types);
    if (!types) {
        F_RET(MPI_ERR_NO_MEM);
        return;
    }
    MPI_Datatype *st = types, *rt = types + out;
    for (int j = 0; j < out; j++)
        st[j] = PMPI_Type_f2c(sts[j]);
    for (int i = 0; i < in; i++)
        rt[i] = PMPI_Type_f2c(rts[i]);
    F_RET(MPI_Neighbor_alltoallw(f_buf(sb), (int *)scs, sds, st, f_buf(rb), (int *)rcs, rds, rt,
                                 c));
    free(types);
}
#define NC_F_NB_ALLTOALLW(name)                                                                    \
    void name(void *sb, MPI_Fint *scs, MPI_Aint *sds, MPI_Fint *sts, void *rb, MPI_Fint *rcs,      \
              MPI_Aint *rds, MPI_Fint *rts, MPI_Fint *comm, MPI_Fint *ierr);                       \
    void name(void *sb, MPI_Fint *scs, MPI_Aint *sds, MPI_Fint *sts, void *rb, MPI_Fint *rcs,      \
              MPI_Aint *rds, MPI_Fint *rts, MPI_Fint *comm, MPI_Fint *ierr)                        \
    {                                                                                              \
        f_neighbor_alltoallw(sb, scs, sds, sts, rb, rcs, rds, rts, comm, ierr);                    \
    }
#define NC_F_NB_ALLGATHER(name)                                                                    \
    NC_F_NB_UNIFORM(name, MPI_Neighbor_allgather, pmpi_neighbor_allgather_)
#define NC_F_NB_ALLTOALL(name) NC_F_NB_UNIFORM(name, MPI_Neighbor_alltoall, pmpi_neighbor_alltoall_)
NC_F_ALL4(NC_F_NB_ALLGATHER, mpi_neighbor_allgather, MPI_NEIGHBOR_ALLGATHER)
NC_F_ALL4(NC_F_NB_ALLGATHERV, mpi_neighbor_allgatherv, MPI_NEIGHBOR_ALLGATHERV)
NC_F_ALL4(NC_F_NB_ALLTOALL, mpi_neighbor_alltoall, MPI_NEIGHBOR_ALLTOALL)
NC_F_ALL4(NC_F_NB_ALLTOALLV, mpi_neighbor_alltoallv, MPI_NEIGHBOR_ALLTOALLV)
NC_F_ALL4(NC_F_NB_ALLTOALLW, mpi_neighbor_alltoallw, MPI_NEIGHBOR_ALLTOALLW)
#if defined(OPEN_MPI) && OPEN_MPI
NC_F_NB_ALLGATHER(ompi_neighbor_allgather_f)
NC_F_NB_ALLGATHERV(ompi_neighbor_allgatherv_f)
NC_F_NB_ALLTOALL(ompi_neighbor_alltoall_f)
NC_F_NB_ALLTOALLV(ompi_neighbor_alltoallv_f)
NC_F_NB_ALLTOALLW(ompi_neighbor_alltoallw_f)
#endif

#define NC_F_BARRIER(name)                                                                         \
    void name(MPI_Fint *comm, MPI_Fint *ierr);                                                     \
    void name(MPI_Fint *comm, MPI_Fint *ierr)                                                      \
    {                                                                                              \
        f_barrier(comm, ierr);                                                                     \
    }
#define NC_F_BCAST(name)                                                                           \
    void name(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,            \
              MPI_Fint *ierr);                                                                     \
    void name(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,            \
              MPI_Fint *ierr)                                                                      \
    {                                                                                              \
        f_bcast(buf, count, dt, root, comm, ierr);                                                 \
    }

#define NC_F_ALLREDUCE(name)                                                                       \
    void name(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,           \
              MPI_Fint *comm, MPI_Fint *ierr);                                                     \
    void name(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,           \
              MPI_Fint *comm, MPI_Fint *ierr)                                                      \
    {                                                                                              \
        f_reduce(sendbuf, recvbuf, count, dt, op, NULL, comm, ierr);                               \
    }
#define NC_F_REDUCE(name)                                                                          \
    void name(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,           \
              MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr);                                     \
    void name(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,           \
              MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)                                      \
    {                                                                                              \
        f_reduce(sendbuf, recvbuf, count, dt, op, root, comm, ierr);                               \
    }

NC_F_ALLREDUCE(mpi_allreduce_)
NC_F_ALLREDUCE(mpi_allreduce__)
NC_F_ALLREDUCE(mpi_allreduce)
NC_F_ALLREDUCE(MPI_ALLREDUCE)
NC_F_REDUCE(mpi_reduce_)
NC_F_REDUCE(mpi_reduce__)
NC_F_REDUCE(mpi_reduce)
NC_F_REDUCE(MPI_REDUCE)
NC_F_SCATTER_SCAN(mpi_reduce_scatter_block_, 0)
NC_F_SCATTER_SCAN(mpi_reduce_scatter_block__, 0)
NC_F_SCATTER_SCAN(mpi_reduce_scatter_block, 0)
NC_F_SCATTER_SCAN(MPI_REDUCE_SCATTER_BLOCK, 0)
NC_F_SCATTER_SCAN(mpi_reduce_scatter_, 1)
NC_F_SCATTER_SCAN(mpi_reduce_scatter__, 1)
NC_F_SCATTER_SCAN(mpi_reduce_scatter, 1)
NC_F_SCATTER_SCAN(MPI_REDUCE_SCATTER, 1)
NC_F_SCATTER_SCAN(mpi_scan_, 2)
NC_F_SCATTER_SCAN(mpi_scan__, 2)
NC_F_SCATTER_SCAN(mpi_scan, 2)
NC_F_SCATTER_SCAN(MPI_SCAN, 2)
NC_F_SCATTER_SCAN(mpi_exscan_, 3)
NC_F_SCATTER_SCAN(mpi_exscan__, 3)
NC_F_SCATTER_SCAN(mpi_exscan, 3)
NC_F_SCATTER_SCAN(MPI_EXSCAN, 3)
NC_F_BARRIER(mpi_barrier_)
NC_F_BARRIER(mpi_barrier__)
NC_F_BARRIER(mpi_barrier)
NC_F_BARRIER(MPI_BARRIER)
NC_F_BCAST(mpi_bcast_)
NC_F_BCAST(mpi_bcast__)
NC_F_BCAST(mpi_bcast)
NC_F_BCAST(MPI_BCAST)
#if defined(OPEN_MPI) && OPEN_MPI
NC_F_BARRIER(ompi_barrier_f)
NC_F_BARRIER(mpi_barrier_f08_)
NC_F_BCAST(ompi_bcast_f)
NC_F_ALLREDUCE(ompi_allreduce_f)
NC_F_REDUCE(ompi_reduce_f)
NC_F_SCATTER_SCAN(ompi_reduce_scatter_block_f, 0)
NC_F_SCATTER_SCAN(ompi_reduce_scatter_f, 1)
NC_F_SCATTER_SCAN(ompi_scan_f, 2)
NC_F_SCATTER_SCAN(ompi_exscan_f, 3)
#else
NC_F_BARRIER(mpi_barrier_f08_)
#endif
