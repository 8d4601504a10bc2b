/*
 * libnumacoll_mpi: MPI_Scatter and MPI_Scatterv (and MPI-4's _c forms) on a flat
 * communicator: the team's numacoll_scatter / numacoll_scatterv, the root's send side
 * straight from its buffer when its datatype is plain, else packed into a stage, and each
 * receive side likewise (pmpi_move.h). The decision and the hierarchical mode:
 * pmpi_move.c, pmpi_move_hier.c.
 */
#include "pmpi_move.h"

int scatter_flat(nc_comm_t *s, mv_call_t *c)
{
    const int P = s->size, me = s->rank, root = c->root;
    mv_recv_t r = {.stage = NULL};
    void *recvp = (void *)NUMACOLL_IN_PLACE;
    int rc;
    if (me != root) {
        size_t b = SIZE_MAX; /* a non-root knows its own block only */
        rc = mv_recv_begin(c, &r, &b, &recvp);
        if (rc == NUMACOLL_OK) rc = numacoll_scatter(s->team, NULL, recvp, b, root);
        mv_recv_end(c, &r, rc);
        return rc;
    }
    mv_side_t S;
    size_t b = 0, total = 0;
    if (!mv_side_init(&S, c->sendbuf, c->stype) || !mv_bytes(c->scount, S.tsz, &b) ||
        __builtin_mul_overflow(b, (size_t)P, &total))
        return nc_error(NUMACOLL_ERR_ARG, "MPI_Scatter: %lld elements of the send type to each "
                                          "of %d members overflow",
                        (long long)c->scount, P);
    char *stage = NULL;
    if (!S.plain && !(stage = mv_alloc(total))) return NUMACOLL_ERR_NOMEM;
    const void *sendp = stage ? stage : mv_at(&S, 0);
    if (stage) mv_pack(c, &S, 0, (MPI_Count)P * c->scount, stage, total);
    rc = NUMACOLL_OK;
    if (c->recvbuf != MPI_IN_PLACE) rc = mv_recv_begin(c, &r, &b, &recvp);
    if (rc == NUMACOLL_OK) rc = numacoll_scatter(s->team, sendp, recvp, b, root);
    mv_recv_end(c, &r, rc);
    mv_free(stage);
    return rc;
}

int scatterv_flat(nc_comm_t *s, mv_call_t *c)
{
    const int P = s->size, me = s->rank, root = c->root;
    mv_recv_t r = {.stage = NULL};
    void *recvp = (void *)NUMACOLL_IN_PLACE;
    int rc;
    if (me != root) {
        size_t b = SIZE_MAX;
        rc = mv_recv_begin(c, &r, &b, &recvp);
        if (rc == NUMACOLL_OK) rc = numacoll_scatterv(s->team, NULL, NULL, NULL, recvp, b, root);
        mv_recv_end(c, &r, rc);
        return rc;
    }
    mv_side_t S;
    if (!mv_side_init(&S, c->sendbuf, c->stype))
        return nc_error(NUMACOLL_ERR_ARG, "MPI_Scatterv: the send type cannot be queried");
    size_t *sb = malloc(2 * (size_t)P * sizeof *sb), total = 0;
    if (!sb) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory for %d block sizes", P);
    size_t *db = sb + P;
    char *base = NULL, *stage = NULL;
    rc = mv_vlayout(c, &S, P, sb, db, &base, &total);
    if (rc == NUMACOLL_OK && !S.plain && !(base = stage = mv_alloc(total))) rc = NUMACOLL_ERR_NOMEM;
    if (rc == NUMACOLL_OK && stage)
        for (int q = 0; q < P; q++)
            mv_pack(c, &S, mv_vdispl(c, q), mv_vcount(c, q), stage + db[q], sb[q]);
    size_t b = sb[me];
    if (rc == NUMACOLL_OK && c->recvbuf != MPI_IN_PLACE) rc = mv_recv_begin(c, &r, &b, &recvp);
    if (rc == NUMACOLL_OK) rc = numacoll_scatterv(s->team, base, sb, db, recvp, b, root);
    mv_recv_end(c, &r, rc);
    mv_free(stage);
    free(sb);
    return rc;
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int rc;
    if (mv_plain(MV_SCATTER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                 &rc))
        return rc;
    mv_call_t c;
    mv_args(&c, MV_SCATTER, 0, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
            comm);
    return mv_entry(&c);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm)
{
    mv_call_t c = {.kind = MV_SCATTERV, .sendbuf = sendbuf, .vcounts_i = sendcounts,
                   .vdispls_i = displs, .stype = sendtype, .recvbuf = recvbuf,
                   .rcount = recvcount, .rtype = recvtype, .root = root, .comm = comm};
    return mv_entry(&c);
}

#if MPI_VERSION >= 4
int MPI_Scatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    mv_call_t c;
    mv_args(&c, MV_SCATTER, 1, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
            comm);
    return mv_entry(&c);
}

int MPI_Scatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                   MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                   MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    mv_call_t c = {.kind = MV_SCATTERV, .is_c = 1, .sendbuf = sendbuf, .vcounts_c = sendcounts,
                   .vdispls_c = displs, .stype = sendtype, .recvbuf = recvbuf,
                   .rcount = recvcount, .rtype = recvtype, .root = root, .comm = comm};
    return mv_entry(&c);
}
#endif
