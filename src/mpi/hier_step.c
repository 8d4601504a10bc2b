/*
 * libnumacoll_mpi: the MPI library's steps of the hierarchical mode (the leaders'
 * collective between nodes, the point-to-point hops between a node's leader and a root or
 * its last member) under NUMACOLL_TIMEOUT.
 *
 * A member that fails its node step (a member of its node never arrived: erroneous
 * arguments it gave the MPI instead, a timeout, a dead member) skips the rest of the call,
 * so a node leader that fails never joins the leaders' step, and the other leaders (and a
 * root that waits for its leader's hop) would wait inside the MPI library, which no
 * numacoll timeout ends. On a communicator whose members all run with NUMACOLL_TIMEOUT
 * (s->step_timeout_ns, agreed at its set-up: the blocking and the nonblocking form of a
 * collective do not match each other) every such step is the MPI's nonblocking form,
 * completed here by PMPI_Test in a numacoll wait loop; after NUMACOLL_TIMEOUT the member
 * fails with NUMACOLL_ERR_TIMEOUT naming the step. Otherwise the steps are the MPI's
 * blocking calls, as fast as the MPI makes them.
 *
 * A step that timed out stays pending in the MPI library (MPI forbids freeing or
 * cancelling a collective's request), which may still write its receive buffer: the callers
 * keep (leak) their scratch buffers then. The communicator's later calls are what MPI
 * makes of a communicator after an error: undefined.
 */
#include "mpi_internal.h"

int hier_step_status(int mrc, const char *what)
{
    return mrc == MPI_SUCCESS
                   ? NUMACOLL_OK
                   : nc_error(NUMACOLL_ERR_OOB, "the MPI library's %s failed (MPI error %d)",
                              what, mrc);
}

/* whom a timed-out step waited for, into @p out: the communicator rank of node rank @p peer
 * of this node, or (peer -1) the other nodes' leaders */
static void waited_for(const nc_comm_t *s, int peer, char *out, size_t n)
{
    size_t o = 0;
    int found = 0;
    for (int r = 0; r < s->size && o + 16 < n; r++) {
        int hit = peer >= 0 ? s->node_of[r] == s->my_node && s->rank_in_node[r] == peer
                            : s->node_of[r] != s->my_node && s->rank_in_node[r] == 0;
        if (!hit) continue;
        o += (size_t)snprintf(out + o, n - o, "%s%d", found++ ? ", " : "", r);
    }
    if (o + 16 >= n) snprintf(out + o, n - o, ", ...");
}

int hier_step_wait(nc_comm_t *s, int started, MPI_Request *req, const char *what, int peer)
{
    if (started != MPI_SUCCESS) return hier_step_status(started, what);
    nc_wait_t w;
    nc_wait_init_standalone(&w, what, s->step_timeout_ns);
    /* the node team's spin policy (none before yielding when it is oversubscribed) */
    if (s->team) w.spin_limit = s->team->spin_limit;
    /* the flag is the MPI's request: PMPI_Test drives the MPI's progress and completes it;
     * once it reports the request done, the step's buffers hold its result (the MPI's
     * guarantee for a completed request) */
    for (;;) {
        int done = 0, mrc = PMPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (mrc != MPI_SUCCESS) return hier_step_status(mrc, what);
        if (done) return NUMACOLL_OK;
        if (nc_wait_step(&w) != NUMACOLL_OK) break;
    }
    char ranks[160] = "";
    waited_for(s, peer, ranks, sizeof ranks);
    const int one = peer >= 0 || s->nnodes == 2;
    return nc_error(NUMACOLL_ERR_TIMEOUT,
                    "the MPI library's %s (hierarchical mode, rank %d of %d, node %d of %d) "
                    "timed out: NUMACOLL_TIMEOUT=%.9g s expired after %.6f s of waiting for "
                    "%s %s, %s an earlier step of the call or did not make it (the "
                    "messages of its node's members name the rank they missed)",
                    what, s->rank, s->size, s->my_node, s->nnodes,
                    (double)s->step_timeout_ns / 1e9, (double)(nc_now_ns() - w.start_ns) / 1e9,
                    peer >= 0 ? "rank" : one ? "the other node's leader, rank"
                                              : "the other nodes' leaders, ranks",
                    ranks, one ? "which failed" : "one or more of which failed");
}

void hier_setups(nc_comm_t *s, int which)
{
    if (!s->team) return; /* a node of one member, or none: nothing to set up */
    if (which & HIER_SETUP_BCAST) bcast_ready(s);
    if (which & HIER_SETUP_REDUCE) (void)reduce_ready(s);
    if (which & HIER_SETUP_MOVE) (void)move_ready(s);
}
