/*
 * libnumacoll_mpi: MPI_Barrier, flat (the node team's barrier) or hierarchical (node,
 * leaders, node).
 */
#include "mpi_internal.h"

static int node_barrier(nc_comm_t *s)
{
    if (s->team) return numacoll_barrier(s->team);
    if (s->node_size > 1)
        return PMPI_Barrier(NODE_COMM(s)) == MPI_SUCCESS ? NUMACOLL_OK : NUMACOLL_ERR_OOB;
    return NUMACOLL_OK;
}

/* MPI_Barrier (C or Fortran) outside the fast path */
int barrier_impl(MPI_Comm comm)
{
    ensure_init();
    if (comm == MPI_COMM_NULL) {
        COUNT(barrier_calls);
        return PMPI_Barrier(comm);
    }
    nc_comm_t *s = comm_get(comm, 1, 0);
    if (!s || s->mode == MODE_PASS || s->mode == MODE_DEFER) {
        COUNT(barrier_calls);
        return PMPI_Barrier(comm);
    }
    BUMP(s->st_barrier_calls);
    int rc;
    if (s->mode == MODE_FLAT) {
        rc = node_barrier(s);
    } else {
        /* node gather, leaders' barrier, node release: nobody leaves the second node
         * barrier before its leader has left the leaders' barrier, which no leader leaves
         * before every node's members have entered the first one */
        rc = node_barrier(s);
        if (rc == NUMACOLL_OK && s->leaders != MPI_COMM_NULL && s->nnodes > 1)
            rc = HIER_STEP(s, "MPI_Barrier between the node leaders", PMPI_Barrier(s->leaders),
                           PMPI_Ibarrier(s->leaders, HIER_REQ));
        if (rc == NUMACOLL_OK) rc = node_barrier(s);
    }
    if (rc != NUMACOLL_OK) {
        s->broken = 1;
        return raise_error_on(s, comm, "MPI_Barrier", rc);
    }
    BUMP(s->st_barrier_numacoll);
    return MPI_SUCCESS;
}

int MPI_Barrier(MPI_Comm comm)
{
    /* fast path: this thread's cached state of @p comm is one flat team (never where
     * numacoll is inactive: such a state is pass-through): straight into the team's default
     * barrier, without barrier_impl's checks and calls (about 15 ns of a 200 ns barrier) */
    nc_comm_t *s = tl_last.state;
    if (NC_LIKELY(s && tl_last.comm == comm &&
                  tl_last.gen == atomic_load_explicit(&g_gen, memory_order_acquire) &&
                  s->mode == MODE_FLAT && s->team)) {
        BUMP(s->st_barrier_calls);
        int rc = nc_team_barrier_default(s->team);
        if (NC_UNLIKELY(rc != NUMACOLL_OK)) {
            s->broken = 1;
            return raise_error(comm, "MPI_Barrier", rc);
        }
        BUMP(s->st_barrier_numacoll);
        return MPI_SUCCESS;
    }
    return barrier_impl(comm);
}

numacoll_team_t *numacoll_mpi_comm_team(MPI_Comm comm)
{
    ensure_init();
    if (comm == MPI_COMM_NULL) return NULL;
    nc_comm_t *s = comm_get(comm, 1, 1);
    return s && s->mode == MODE_FLAT ? s->team : NULL;
}

int numacoll_mpi_comm_mode(MPI_Comm comm)
{
    ensure_init();
    if (comm == MPI_COMM_NULL) return MODE_PASS;
    nc_comm_t *s = comm_get(comm, 1, 1);
    return s && s->mode != MODE_DEFER ? s->mode : MODE_PASS; /* DEFER: promotion failed */
}
