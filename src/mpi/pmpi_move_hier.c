/*
 * libnumacoll_mpi: the gather family on a hierarchical communicator (several nodes, or
 * NUMACOLL_FAKE_NODES pseudo-nodes). The node steps run on the node team (numacoll's
 * gatherv / scatterv / bcast with the node's leader, node rank 0, as the root), the step
 * between nodes is the MPI library's own collective over the leaders' communicator, in
 * bytes:
 *   allgather(v): node gatherv to the leader, leaders' allgatherv of the nodes' blocks,
 *                 node broadcast of the whole, each member unpacks it into its recvbuf;
 *   gather:       node gather to the leader, leaders' gatherv to the root's leader, which
 *                 sends the whole to the root when it is not the root itself;
 *   scatter:      the reverse of gather.
 * The blocks travel in node order: node 0's members by their rank in the node, then node
 * 1's, ... (a node's members need not be neighbours in the communicator), and each member
 * places them by communicator rank at the end. So recvbuf's gaps (allgatherv) are never
 * written: the whole travels in a separate buffer. Totals are at most INT_MAX bytes
 * (pmpi_move.c's hier_fits, a rule on arguments every member has).
 */
#include "pmpi_move.h"

enum { TAG_MOVE = 0x4e44 }; /* leader <-> root on the private node communicator */

/* Node order: order[first[k] + i] is the communicator rank of member i of node k
 * (first[nnodes] = size). One allocation: free(*first). */
static int node_order(const nc_comm_t *s, int **order, int **first)
{
    int *mem = malloc(((size_t)s->nnodes + 1 + (size_t)s->size) * sizeof *mem);
    if (!mem) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory for the node order");
    int *f = mem, *o = mem + s->nnodes + 1;
    memset(f, 0, ((size_t)s->nnodes + 1) * sizeof *f);
    for (int r = 0; r < s->size; r++)
        f[s->node_of[r] + 1]++;
    for (int k = 0; k < s->nnodes; k++)
        f[k + 1] += f[k];
    for (int r = 0; r < s->size; r++)
        o[f[s->node_of[r]] + s->rank_in_node[r]] = r;
    *first = f;
    *order = o;
    return NUMACOLL_OK;
}

/* A step of the MPI library that timed out (hier_step.c) stays pending and may still
 * write its buffer: keep (leak) it then, else free it */
static inline void free_unless_pending(void *p, int rc)
{
    if (rc != NUMACOLL_ERR_TIMEOUT) free(p);
}

/* MPI_Allgather (uniform blocks of rcount) and MPI_Allgatherv */
static inline MPI_Count blk_count(const mv_call_t *c, int r)
{
    return c->kind == MV_ALLGATHER ? c->rcount : mv_vcount(c, r);
}
static inline MPI_Aint blk_displ(const mv_call_t *c, int r)
{
    return c->kind == MV_ALLGATHER ? (MPI_Aint)r * (MPI_Aint)c->rcount : mv_vdispl(c, r);
}

int allgatherv_hier(nc_comm_t *s, mv_call_t *c)
{
    const int P = s->size, me = s->rank, K = s->nnodes, leader = s->node_rank == 0;
    const int in_place = c->sendbuf == MPI_IN_PLACE;
    mv_side_t R;
    int *order = NULL, *first = NULL;
    hier_setups(s, HIER_SETUP_BCAST | HIER_SETUP_MOVE);
    if (!mv_side_init(&R, c->recvbuf, c->rtype))
        return nc_error(NUMACOLL_ERR_ARG, "the receive type cannot be queried");
    int rc = node_order(s, &order, &first);
    if (rc != NUMACOLL_OK) return rc;
    /* off[r]: rank r's block in the whole (node order); bytes[r] its size */
    size_t *bytes = malloc(2 * (size_t)P * sizeof *bytes), *off = bytes ? bytes + P : NULL;
    size_t *nb = malloc(2 * (size_t)s->node_size * sizeof *nb), *nd = nb ? nb + s->node_size : NULL;
    int *cnt = malloc(2 * (size_t)K * sizeof *cnt), *dsp = cnt ? cnt + K : NULL;
    char *whole = NULL, *sstage = NULL;
    size_t total = 0;
    if (!bytes || !nb || !cnt) rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory for block sizes");
    for (int j = 0; rc == NUMACOLL_OK && j < P; j++) {
        int r = order[j];
        mv_bytes(blk_count(c, r), R.tsz, &bytes[r]); /* checked by hier_fits */
        off[r] = total;
        total += bytes[r];
    }
    if (rc == NUMACOLL_OK && !(whole = mv_alloc(total))) rc = NUMACOLL_ERR_NOMEM;
    const size_t mine = rc == NUMACOLL_OK ? off[me] : 0;
    const void *sendp = NUMACOLL_IN_PLACE;
    size_t sbytes = rc == NUMACOLL_OK ? bytes[me] : 0;
    if (rc == NUMACOLL_OK) {
        if (in_place)
            mv_pack(c, &R, blk_displ(c, me), blk_count(c, me), whole + mine, sbytes);
        else
            rc = mv_send_begin(c, &sbytes, &sendp, &sstage);
        if (rc == NUMACOLL_OK && in_place && !leader) sendp = whole + mine;
        if (rc == NUMACOLL_OK && !in_place && leader) {
            memcpy(whole + mine, sendp, sbytes);
            sendp = NUMACOLL_IN_PLACE;
        }
    }
    /* the node's blocks, in node-rank order, into their place in the whole at the leader */
    const int k0 = s->my_node;
    const size_t node_off = rc == NUMACOLL_OK ? off[order[first[k0]]] : 0;
    for (int i = 0; rc == NUMACOLL_OK && i < s->node_size; i++) {
        int r = order[first[k0] + i];
        nb[i] = bytes[r];
        nd[i] = off[r] - node_off;
    }
    if (rc == NUMACOLL_OK) rc = mv_node_gatherv(s, sendp, sbytes, whole + node_off, nb, nd);
    if (rc == NUMACOLL_OK && leader && K > 1) {
        for (int k = 0; k < K; k++) {
            size_t a = off[order[first[k]]], z = k + 1 < K ? off[order[first[k + 1]]] : total;
            cnt[k] = (int)(z - a), dsp[k] = (int)a;
        }
        rc = HIER_STEP(s, "MPI_Allgatherv between the node leaders",
                       PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, whole, cnt, dsp, MPI_BYTE,
                                       s->leaders),
                       PMPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, whole, cnt, dsp, MPI_BYTE,
                                        s->leaders, HIER_REQ));
    }
    if (rc == NUMACOLL_OK) rc = node_bcast_bytes(s, whole, total, 0);
    for (int r = 0; rc == NUMACOLL_OK && r < P; r++)
        if (!(r == me && in_place))
            mv_unpack(c, &R, blk_displ(c, r), blk_count(c, r), whole + off[r], bytes[r]);
    free_unless_pending(whole, rc);
    free(sstage);
    free(bytes);
    free(nb);
    free_unless_pending(cnt, rc);
    free(first);
    return rc;
}

/* the root's position in its node, and the leader <-> root hop of gather and scatter */
static int root_hop(nc_comm_t *s, int root, char *buf, size_t bytes, int to_root)
{
    int rin = s->rank_in_node[root];
    if (s->node_of[root] != s->my_node || rin == 0) return NUMACOLL_OK;
    const int n = (int)bytes;
    const int sends = s->node_rank == 0 ? to_root : !to_root, peer = s->node_rank == 0 ? rin : 0;
    if (s->node_rank != 0 && s->rank != root) return NUMACOLL_OK;
    if (sends)
        return HIER_HOP(s, "send between the node leader and the root", peer,
                         PMPI_Send(buf, n, MPI_BYTE, peer, TAG_MOVE, s->node),
                         PMPI_Isend(buf, n, MPI_BYTE, peer, TAG_MOVE, s->node, HIER_REQ));
    return HIER_HOP(s, "receive between the node leader and the root", peer,
                     PMPI_Recv(buf, n, MPI_BYTE, peer, TAG_MOVE, s->node, MPI_STATUS_IGNORE),
                     PMPI_Irecv(buf, n, MPI_BYTE, peer, TAG_MOVE, s->node, HIER_REQ));
}

/* the uniform block of gather and scatter (hier_fits has checked it) */
static size_t block_bytes(const mv_call_t *c, int rank)
{
    mv_side_t sd;
    size_t b = 0;
    const int recv_side = (c->kind == MV_GATHER) == (rank == c->root);
    if (recv_side && mv_side_init(&sd, c->recvbuf, c->rtype)) mv_bytes(c->rcount, sd.tsz, &b);
    if (!recv_side && mv_side_init(&sd, c->sendbuf, c->stype)) mv_bytes(c->scount, sd.tsz, &b);
    return b;
}

/* the whole (root's node's leader and the root) or the node's part (other leaders) of a
 * gather or scatter, in node order; *seg: where this node's part starts in it */
static char *leader_buffer(const nc_comm_t *s, int root, const int *first, size_t b, char **seg)
{
    const int root_node = s->node_of[root] == s->my_node;
    *seg = NULL;
    if (s->node_rank != 0 && s->rank != root) return NULL;
    size_t n = root_node ? (size_t)s->size * b : (size_t)s->node_size * b;
    char *p = mv_alloc(n);
    if (p) *seg = root_node ? p + (size_t)first[s->my_node] * b : p;
    return p;
}

/* the leaders' counts and displacements of the nodes' parts, in bytes */
static void node_parts(const nc_comm_t *s, const int *first, size_t b, int *cnt, int *dsp)
{
    for (int k = 0; k < s->nnodes; k++)
        cnt[k] = (int)((size_t)(first[k + 1] - first[k]) * b), dsp[k] = (int)((size_t)first[k] * b);
}

int gather_hier(nc_comm_t *s, mv_call_t *c)
{
    const int P = s->size, me = s->rank, root = c->root, K = s->nnodes;
    const int leader = s->node_rank == 0, root_node = s->node_of[root] == s->my_node;
    int *order = NULL, *first = NULL, *cnt = NULL;
    size_t b = block_bytes(c, me);
    char *whole = NULL, *seg = NULL, *sstage = NULL;
    size_t *nb = NULL;
    hier_setups(s, HIER_SETUP_BCAST | HIER_SETUP_MOVE);
    int rc = node_order(s, &order, &first);
    if (rc != NUMACOLL_OK) return rc;
    mv_side_t R;
    const int is_root = me == root;
    if (is_root && !mv_side_init(&R, c->recvbuf, c->rtype)) rc = NUMACOLL_ERR_ARG;
    if (rc == NUMACOLL_OK) whole = leader_buffer(s, root, first, b, &seg);
    if (rc == NUMACOLL_OK && (leader || is_root) && !whole) rc = NUMACOLL_ERR_NOMEM;
    nb = malloc(2 * (size_t)s->node_size * sizeof *nb);
    cnt = malloc(2 * (size_t)K * sizeof *cnt);
    if (rc == NUMACOLL_OK && (!nb || !cnt)) rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    /* this member's block */
    const void *sendp = NUMACOLL_IN_PLACE;
    if (rc == NUMACOLL_OK && is_root && c->sendbuf == MPI_IN_PLACE) {
        if (!(sstage = mv_alloc(b))) rc = NUMACOLL_ERR_NOMEM;
        else mv_pack(c, &R, (MPI_Aint)root * c->rcount, c->rcount, sstage, b);
        sendp = sstage;
    } else if (rc == NUMACOLL_OK) {
        rc = mv_send_begin(c, &b, &sendp, &sstage);
    }
    for (int i = 0; rc == NUMACOLL_OK && i < s->node_size; i++)
        nb[i] = b, nb[s->node_size + i] = (size_t)i * b;
    if (rc == NUMACOLL_OK) rc = mv_node_gatherv(s, sendp, b, seg, nb, nb + s->node_size);
    if (rc == NUMACOLL_OK && leader && K > 1) {
        node_parts(s, first, b, cnt, cnt + K);
        const void *send = root_node ? MPI_IN_PLACE : seg;
        const int n = (int)((size_t)s->node_size * b);
        rc = HIER_STEP(s, "MPI_Gatherv between the node leaders",
                       PMPI_Gatherv(send, n, MPI_BYTE, whole, cnt, cnt + K, MPI_BYTE,
                                    s->node_of[root], s->leaders),
                       PMPI_Igatherv(send, n, MPI_BYTE, whole, cnt, cnt + K, MPI_BYTE,
                                     s->node_of[root], s->leaders, HIER_REQ));
    }
    if (rc == NUMACOLL_OK && root_node) rc = root_hop(s, root, whole, (size_t)P * b, 1);
    if (rc == NUMACOLL_OK && is_root)
        for (int j = 0; j < P; j++)
            mv_unpack(c, &R, (MPI_Aint)order[j] * c->rcount, c->rcount, whole + (size_t)j * b, b);
    free_unless_pending(whole, rc);
    free(sstage);
    free(nb);
    free_unless_pending(cnt, rc);
    free(first);
    return rc;
}

int scatter_hier(nc_comm_t *s, mv_call_t *c)
{
    const int P = s->size, me = s->rank, root = c->root, K = s->nnodes;
    const int leader = s->node_rank == 0, root_node = s->node_of[root] == s->my_node;
    const int is_root = me == root;
    int *order = NULL, *first = NULL, *cnt = NULL;
    size_t b = block_bytes(c, me);
    char *whole = NULL, *seg = NULL;
    size_t *nb = NULL;
    mv_recv_t r = {.stage = NULL};
    hier_setups(s, HIER_SETUP_BCAST | HIER_SETUP_MOVE);
    int rc = node_order(s, &order, &first);
    if (rc != NUMACOLL_OK) return rc;
    whole = leader_buffer(s, root, first, b, &seg);
    if ((leader || is_root) && !whole) rc = NUMACOLL_ERR_NOMEM;
    nb = malloc(2 * (size_t)s->node_size * sizeof *nb);
    cnt = malloc(2 * (size_t)K * sizeof *cnt);
    if (rc == NUMACOLL_OK && (!nb || !cnt)) rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    if (rc == NUMACOLL_OK && is_root) { /* the whole in node order */
        mv_side_t S;
        if (!mv_side_init(&S, c->sendbuf, c->stype)) rc = NUMACOLL_ERR_ARG;
        for (int j = 0; rc == NUMACOLL_OK && j < P; j++)
            mv_pack(c, &S, (MPI_Aint)order[j] * c->scount, c->scount, whole + (size_t)j * b, b);
    }
    if (rc == NUMACOLL_OK && root_node) rc = root_hop(s, root, whole, (size_t)P * b, 0);
    if (rc == NUMACOLL_OK && leader && K > 1) {
        node_parts(s, first, b, cnt, cnt + K);
        void *recv = root_node ? MPI_IN_PLACE : seg;
        const int n = (int)((size_t)s->node_size * b);
        rc = HIER_STEP(s, "MPI_Scatterv between the node leaders",
                       PMPI_Scatterv(whole, cnt, cnt + K, MPI_BYTE, recv, n, MPI_BYTE,
                                     s->node_of[root], s->leaders),
                       PMPI_Iscatterv(whole, cnt, cnt + K, MPI_BYTE, recv, n, MPI_BYTE,
                                      s->node_of[root], s->leaders, HIER_REQ));
    }
    /* this member's block: a root in place that is not its node's leader takes it into a
     * scratch buffer (in place means something to the node step's root only) */
    void *recvp = (void *)NUMACOLL_IN_PLACE;
    char *scratch = NULL;
    if (rc == NUMACOLL_OK && is_root && c->recvbuf == MPI_IN_PLACE && !leader) {
        if (!(recvp = scratch = mv_alloc(b))) rc = NUMACOLL_ERR_NOMEM;
    } else if (rc == NUMACOLL_OK && !(is_root && c->recvbuf == MPI_IN_PLACE)) {
        rc = mv_recv_begin(c, &r, &b, &recvp);
    }
    for (int i = 0; rc == NUMACOLL_OK && i < s->node_size; i++)
        nb[i] = b, nb[s->node_size + i] = (size_t)i * b;
    if (rc == NUMACOLL_OK) rc = mv_node_scatterv(s, seg, nb, nb + s->node_size, recvp, b);
    mv_recv_end(c, &r, rc);
    free(scratch);
    free_unless_pending(whole, rc);
    free(nb);
    free_unless_pending(cnt, rc);
    free(first);
    return rc;
}
