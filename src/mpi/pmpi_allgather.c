/*
 * libnumacoll_mpi: MPI_Allgather and MPI_Allgatherv (and MPI-4's _c forms) on a flat
 * communicator: the team's numacoll_allgather / numacoll_allgatherv, the receive side
 * straight in the user's buffer when its datatype is plain, else through a stage
 * (pmpi_move.h). The decision and the hierarchical mode: pmpi_move.c, pmpi_move_hier.c.
 */
#include "pmpi_move.h"

int allgather_flat(nc_comm_t *s, mv_call_t *c)
{
    const int P = s->size, me = s->rank;
    mv_side_t R;
    size_t b = 0, total = 0;
    if (!mv_side_init(&R, c->recvbuf, c->rtype) || !mv_bytes(c->rcount, R.tsz, &b) ||
        __builtin_mul_overflow(b, (size_t)P, &total))
        return nc_error(NUMACOLL_ERR_ARG, "MPI_Allgather: %lld elements of the receive type "
                                          "from each of %d members overflow",
                        (long long)c->rcount, P);
    char *stage = NULL, *sstage = NULL;
    if (!R.plain && !(stage = mv_alloc(total))) return NUMACOLL_ERR_NOMEM;
    void *recvp = stage ? stage : mv_at(&R, 0);
    const void *sendp = NUMACOLL_IN_PLACE;
    int rc = NUMACOLL_OK;
    if (c->sendbuf == MPI_IN_PLACE) {
        /* our block is in place in recvbuf: into its place in the stage too */
        if (stage) mv_pack(c, &R, (MPI_Aint)me * c->rcount, c->rcount, stage + (size_t)me * b, b);
    } else {
        rc = mv_send_begin(c, &b, &sendp, &sstage);
    }
    if (rc == NUMACOLL_OK) rc = numacoll_allgather(s->team, sendp, recvp, b);
    if (rc == NUMACOLL_OK && stage) mv_unpack(c, &R, 0, (MPI_Count)P * c->rcount, stage, total);
    mv_free(stage);
    mv_free(sstage);
    return rc;
}

int allgatherv_flat(nc_comm_t *s, mv_call_t *c)
{
    const int P = s->size, me = s->rank;
    mv_side_t R;
    if (!mv_side_init(&R, c->recvbuf, c->rtype))
        return nc_error(NUMACOLL_ERR_ARG, "MPI_Allgatherv: the receive type cannot be queried");
    size_t *rb = malloc(2 * (size_t)P * sizeof *rb), total = 0;
    if (!rb) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory for %d block sizes", P);
    size_t *db = rb + P;
    char *base = NULL, *stage = NULL, *sstage = NULL;
    int rc = mv_vlayout(c, &R, P, rb, db, &base, &total);
    if (rc == NUMACOLL_OK && !R.plain && !(base = stage = mv_alloc(total))) rc = NUMACOLL_ERR_NOMEM;
    const void *sendp = NUMACOLL_IN_PLACE;
    size_t sbytes = rb[me];
    if (rc == NUMACOLL_OK && c->sendbuf == MPI_IN_PLACE) {
        if (stage) mv_pack(c, &R, mv_vdispl(c, me), mv_vcount(c, me), stage + db[me], rb[me]);
    } else if (rc == NUMACOLL_OK) {
        rc = mv_send_begin(c, &sbytes, &sendp, &sstage);
    }
    if (rc == NUMACOLL_OK) rc = numacoll_allgatherv(s->team, sendp, sbytes, base, rb, db);
    if (rc == NUMACOLL_OK && stage)
        for (int r = 0; r < P; r++)
            if (!(r == me && c->sendbuf == MPI_IN_PLACE))
                mv_unpack(c, &R, mv_vdispl(c, r), mv_vcount(c, r), stage + db[r], rb[r]);
    mv_free(stage);
    mv_free(sstage);
    free(rb);
    return rc;
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc;
    if (mv_plain(MV_ALLGATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, -1, comm,
                 &rc))
        return rc;
    mv_call_t c;
    mv_args(&c, MV_ALLGATHER, 0, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, -1,
            comm);
    return mv_entry(&c);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm)
{
    mv_call_t c = {.kind = MV_ALLGATHERV, .sendbuf = sendbuf, .scount = sendcount,
                   .stype = sendtype, .recvbuf = recvbuf, .vcounts_i = recvcounts,
                   .vdispls_i = displs, .rtype = recvtype, .root = -1, .comm = comm};
    return mv_entry(&c);
}

#if MPI_VERSION >= 4
int MPI_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                    void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    mv_call_t c;
    mv_args(&c, MV_ALLGATHER, 1, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, -1,
            comm);
    return mv_entry(&c);
}

int MPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                     void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                     MPI_Datatype recvtype, MPI_Comm comm)
{
    mv_call_t c = {.kind = MV_ALLGATHERV, .is_c = 1, .sendbuf = sendbuf, .scount = sendcount,
                   .stype = sendtype, .recvbuf = recvbuf, .vcounts_c = recvcounts,
                   .vdispls_c = displs, .rtype = recvtype, .root = -1, .comm = comm};
    return mv_entry(&c);
}
#endif
