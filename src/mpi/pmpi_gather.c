/*
 * libnumacoll_mpi: MPI_Gather and MPI_Gatherv (and MPI-4's _c forms) on a flat
 * communicator: the team's numacoll_gather / numacoll_gatherv, the root's receive side
 * straight in its buffer when its datatype is plain, else through a stage (pmpi_move.h).
 * The decision and the hierarchical mode: pmpi_move.c, pmpi_move_hier.c.
 */
#include "pmpi_move.h"

int gather_flat(nc_comm_t *s, mv_call_t *c)
{
    const int P = s->size, me = s->rank, root = c->root;
    char *sstage = NULL;
    const void *sendp = NUMACOLL_IN_PLACE;
    int rc;
    if (me != root) {
        size_t b = SIZE_MAX; /* a non-root knows its own block only */
        rc = mv_send_begin(c, &b, &sendp, &sstage);
        if (rc == NUMACOLL_OK) rc = numacoll_gather(s->team, sendp, NULL, b, root);
        mv_free(sstage);
        return rc;
    }
    mv_side_t R;
    size_t b = 0, total = 0;
    if (!mv_side_init(&R, c->recvbuf, c->rtype) || !mv_bytes(c->rcount, R.tsz, &b) ||
        __builtin_mul_overflow(b, (size_t)P, &total))
        return nc_error(NUMACOLL_ERR_ARG, "MPI_Gather: %lld elements of the receive type from "
                                          "each of %d members overflow",
                        (long long)c->rcount, P);
    char *stage = NULL;
    if (!R.plain && !(stage = mv_alloc(total))) return NUMACOLL_ERR_NOMEM;
    void *recvp = stage ? stage : mv_at(&R, 0);
    rc = NUMACOLL_OK;
    if (c->sendbuf == MPI_IN_PLACE) {
        if (stage) mv_pack(c, &R, (MPI_Aint)me * c->rcount, c->rcount, stage + (size_t)me * b, b);
    } else {
        rc = mv_send_begin(c, &b, &sendp, &sstage);
    }
    if (rc == NUMACOLL_OK) rc = numacoll_gather(s->team, sendp, recvp, b, root);
    if (rc == NUMACOLL_OK && stage) mv_unpack(c, &R, 0, (MPI_Count)P * c->rcount, stage, total);
    mv_free(stage);
    mv_free(sstage);
    return rc;
}

int gatherv_flat(nc_comm_t *s, mv_call_t *c)
{
    const int P = s->size, me = s->rank, root = c->root;
    char *sstage = NULL;
    const void *sendp = NUMACOLL_IN_PLACE;
    int rc;
    if (me != root) {
        size_t b = SIZE_MAX;
        rc = mv_send_begin(c, &b, &sendp, &sstage);
        if (rc == NUMACOLL_OK) rc = numacoll_gatherv(s->team, sendp, b, NULL, NULL, NULL, root);
        mv_free(sstage);
        return rc;
    }
    mv_side_t R;
    if (!mv_side_init(&R, c->recvbuf, c->rtype))
        return nc_error(NUMACOLL_ERR_ARG, "MPI_Gatherv: the receive type cannot be queried");
    size_t *rb = malloc(2 * (size_t)P * sizeof *rb), total = 0;
    if (!rb) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory for %d block sizes", P);
    size_t *db = rb + P;
    char *base = NULL, *stage = NULL;
    rc = mv_vlayout(c, &R, P, rb, db, &base, &total);
    if (rc == NUMACOLL_OK && !R.plain && !(base = stage = mv_alloc(total))) rc = NUMACOLL_ERR_NOMEM;
    size_t sbytes = rb[me];
    if (rc == NUMACOLL_OK && c->sendbuf == MPI_IN_PLACE) {
        if (stage) mv_pack(c, &R, mv_vdispl(c, me), mv_vcount(c, me), stage + db[me], rb[me]);
    } else if (rc == NUMACOLL_OK) {
        rc = mv_send_begin(c, &sbytes, &sendp, &sstage);
    }
    if (rc == NUMACOLL_OK) rc = numacoll_gatherv(s->team, sendp, sbytes, base, rb, db, root);
    if (rc == NUMACOLL_OK && stage)
        for (int r = 0; r < P; r++)
            if (!(r == me && c->sendbuf == MPI_IN_PLACE))
                mv_unpack(c, &R, mv_vdispl(c, r), mv_vcount(c, r), stage + db[r], rb[r]);
    mv_free(stage);
    mv_free(sstage);
    free(rb);
    return rc;
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int rc;
    if (mv_plain(MV_GATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                 &rc))
        return rc;
    mv_call_t c;
    mv_args(&c, MV_GATHER, 0, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
            comm);
    return mv_entry(&c);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm)
{
    mv_call_t c = {.kind = MV_GATHERV, .sendbuf = sendbuf, .scount = sendcount,
                   .stype = sendtype, .recvbuf = recvbuf, .vcounts_i = recvcounts,
                   .vdispls_i = displs, .rtype = recvtype, .root = root, .comm = comm};
    return mv_entry(&c);
}

#if MPI_VERSION >= 4
int MPI_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                 MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    mv_call_t c;
    mv_args(&c, MV_GATHER, 1, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
            comm);
    return mv_entry(&c);
}

int MPI_Gatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                  int root, MPI_Comm comm)
{
    mv_call_t c = {.kind = MV_GATHERV, .is_c = 1, .sendbuf = sendbuf, .scount = sendcount,
                   .stype = sendtype, .recvbuf = recvbuf, .vcounts_c = recvcounts,
                   .vdispls_c = displs, .rtype = recvtype, .root = root, .comm = comm};
    return mv_entry(&c);
}
#endif
