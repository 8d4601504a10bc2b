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
 *
 * Memory: every member takes all it needs for the call (the node order, the stages of
 * non-contiguous datatypes, the leaders' and the root's scratch buffers) before any step,
 * from the communicator's room when every room holds them (room_need), and agrees on it
 * otherwise (hier_memory.c). The node step of the agreement is the core's gather of the
 * records on the node team (node_short_records).
 */
#include "pmpi_move.h"

enum { TAG_MOVE = 0x4e44 }; /* leader <-> root on the private node communicator */

/* Node order: order[first[k] + i] is the communicator rank of member i of node k
 * (first[nnodes] = size). One buffer of the call (mv_stage): *first. */
static int node_order(const nc_comm_t *s, mv_call_t *c, int **order, int **first)
{
    int *mem = mv_stage(c, ((size_t)s->nnodes + 1 + (size_t)s->size) * sizeof *mem);
    if (!mem) return NUMACOLL_ERR_NOMEM;
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
 * write its buffer: keep (leak) it then (the room too: the communicator lets go of it),
 * else free it unless it is in the room */
static inline void free_unless_pending(nc_comm_t *s, const mv_call_t *c, void *p, int rc)
{
    if (rc != NUMACOLL_ERR_TIMEOUT) mv_stage_free(c, p);
    else if (p && mv_in_room(c, p)) s->mem_room = NULL, s->mem_room_size = 0;
}

/* ---- the memory agreement ---------------------------------------------------------- */

/* The node's records, their minimum into @p rec at the leader: the core's gather on the
 * node team (a leader without memory for the records takes part without a buffer and is
 * short itself: *@p short_here), else the MPI's reduction on the node communicator */
static int node_short_records(nc_comm_t *s, int *rec, int *short_here)
{
    if (s->node_size == 1) return NUMACOLL_OK;
    const int leader = s->node_rank == 0, n = s->node_size;
    if (!move_ready(s)) {
        int mrc = leader ? PMPI_Reduce(MPI_IN_PLACE, rec, 3, MPI_INT, MPI_MIN, 0, s->node)
                         : PMPI_Reduce(rec, NULL, 3, MPI_INT, MPI_MIN, 0, s->node);
        return hier_step_status(mrc, "MPI_Reduce of the memory status on the node");
    }
    int on_stack[3 * 64], *all = NULL, *heap = NULL;
    if (leader) all = n <= 64 ? on_stack : (heap = malloc(3 * (size_t)n * sizeof *heap));
    int rc = numacoll_gather(s->team, rec, all, 3 * sizeof *rec, 0);
    if (leader && !all) { /* its own invalid arguments: it took part, and it is short */
        *short_here = 1;
        nc_error(NUMACOLL_ERR_NOMEM, "out of memory for the node's %d memory records", n);
        hier_short_record(rec, s, 1);
        return rc == NUMACOLL_ERR_ARG ? NUMACOLL_OK : rc;
    }
    for (int i = 0; rc == NUMACOLL_OK && leader && i < n; i++)
        for (int j = 0; j < 3; j++)
            if (all[3 * i + j] < rec[j]) rec[j] = all[3 * i + j];
    free(heap);
    return rc;
}

/* hier_agree_memory with the gather family's node step */
static inline int agree_memory(nc_comm_t *s, int short_here, int receives, int *go)
{
    return hier_agree_memory(s, short_here, receives, node_short_records, go);
}

/* int arrays of the leaders' step and the node step's MPI form: 2 x max(nnodes, node_size) */
static int *step_ints(const nc_comm_t *s, mv_call_t *c)
{
    size_t n = (size_t)(s->nnodes > s->node_size ? s->nnodes : s->node_size);
    return mv_stage(c, 2 * n * sizeof(int));
}

/* ---- the room ------------------------------------------------------------------------ */

static inline size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

/* The most any member's buffers of a call of @p total bytes (the whole) take: the node
 * order, the block sizes and offsets, the node's sizes, the step counts (each at most for
 * size members), the whole and a stage of at most the whole. From sizes every member
 * knows, so every member decides alike whether the rooms hold it. */
static size_t room_need(const nc_comm_t *s, size_t total)
{
    const size_t P = (size_t)s->size, K = (size_t)s->nnodes;
    return round16((K + 1 + P) * sizeof(int)) + 2 * round16(2 * P * sizeof(size_t)) +
           round16(2 * P * sizeof(int)) + 2 * round16(total);
}

/* The start of a call of @p total bytes (hier_room_begin): its buffers from the room when
 * it holds them; 1 when the call must agree on memory */
static int room_begin(nc_comm_t *s, mv_call_t *c, size_t total)
{
    char *room;
    const int agree = hier_room_begin(s, room_need(s, total), &room);
    if (room) c->room = room, c->room_cap = s->mem_room_size, c->room_used = 0;
    return agree;
}

/* ---- the collectives ------------------------------------------------------------------ */

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
    if (!mv_side_init(&R, c->recvbuf, c->rtype)) /* hier_fits has queried it */
        return nc_error(NUMACOLL_ERR_ARG, "the receive type cannot be queried");
    size_t total = 0, b = 0;
    for (int r = 0; r < P; r++) /* checked by hier_fits */
        total += mv_bytes(blk_count(c, r), R.tsz, &b) ? b : 0;
    const int agree = room_begin(s, c, total);
    /* everything this member needs, before any step */
    int rc = node_order(s, c, &order, &first);
    /* off[r]: rank r's block in the whole (node order); bytes[r] its size */
    size_t *bytes = mv_stage(c, 2 * (size_t)P * sizeof *bytes), *off = bytes ? bytes + P : NULL;
    size_t *nb = mv_stage(c, 2 * (size_t)s->node_size * sizeof *nb);
    size_t *nd = nb ? nb + s->node_size : NULL;
    int *cnt = step_ints(s, c), *dsp = cnt ? cnt + K : NULL;
    char *whole = NULL, *sstage = NULL;
    if (!bytes || !nb || !cnt) rc = NUMACOLL_ERR_NOMEM;
    for (int j = 0, at = 0; rc == NUMACOLL_OK && j < P; j++) {
        int r = order[j];
        mv_bytes(blk_count(c, r), R.tsz, &bytes[r]);
        off[r] = (size_t)at;
        at += (int)bytes[r];
    }
    if (rc == NUMACOLL_OK && !(whole = mv_stage(c, total))) rc = NUMACOLL_ERR_NOMEM;
    const void *sendp = NUMACOLL_IN_PLACE;
    size_t sbytes = rc == NUMACOLL_OK ? bytes[me] : 0;
    if (rc == NUMACOLL_OK && !in_place) rc = mv_send_begin(c, &sbytes, &sendp, &sstage);
    int go = rc == NUMACOLL_OK;
    if (agree) rc = agree_memory(s, rc != NUMACOLL_OK, 1, &go);
    const size_t mine = go ? off[me] : 0;
    if (go) {
        if (in_place)
            mv_pack(c, &R, blk_displ(c, me), blk_count(c, me), whole + mine, sbytes);
        if (in_place && !leader) sendp = whole + mine;
        if (!in_place && leader) {
            memcpy(whole + mine, sendp, sbytes);
            sendp = NUMACOLL_IN_PLACE;
        }
    }
    /* the node's blocks, in node-rank order, into their place in the whole at the leader */
    const int k0 = s->my_node;
    const size_t node_off = go ? off[order[first[k0]]] : 0;
    for (int i = 0; go && i < s->node_size; i++) {
        int r = order[first[k0] + i];
        nb[i] = bytes[r];
        nd[i] = off[r] - node_off;
    }
    if (go) rc = mv_node_gatherv(s, sendp, sbytes, whole + node_off, nb, nd, cnt);
    if (go && rc == NUMACOLL_OK && leader && K > 1) {
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
    if (go && rc == NUMACOLL_OK) rc = node_bcast_bytes(s, whole, total, 0);
    for (int r = 0; go && rc == NUMACOLL_OK && r < P; r++)
        if (!(r == me && in_place))
            mv_unpack(c, &R, blk_displ(c, r), blk_count(c, r), whole + off[r], bytes[r]);
    free_unless_pending(s, c, whole, rc);
    mv_stage_free(c, sstage);
    mv_stage_free(c, bytes);
    mv_stage_free(c, nb);
    free_unless_pending(s, c, cnt, rc);
    mv_stage_free(c, first);
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
static char *leader_buffer(const nc_comm_t *s, mv_call_t *c, int root, const int *first, size_t b,
                           char **seg)
{
    const int root_node = s->node_of[root] == s->my_node;
    *seg = NULL;
    if (s->node_rank != 0 && s->rank != root) return NULL;
    size_t n = root_node ? (size_t)s->size * b : (size_t)s->node_size * b;
    char *p = mv_stage(c, n);
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
    const int is_root = me == root;
    int *order = NULL, *first = NULL, *cnt = NULL;
    size_t b = block_bytes(c, me);
    char *whole = NULL, *seg = NULL, *sstage = NULL;
    size_t *nb = NULL;
    mv_side_t R;
    hier_setups(s, HIER_SETUP_BCAST | HIER_SETUP_MOVE);
    if (is_root && !mv_side_init(&R, c->recvbuf, c->rtype)) /* hier_fits has queried it */
        return nc_error(NUMACOLL_ERR_ARG, "the receive type cannot be queried");
    const int agree = room_begin(s, c, (size_t)P * b);
    /* everything this member needs, before any step */
    int rc = node_order(s, c, &order, &first);
    if (rc == NUMACOLL_OK) whole = leader_buffer(s, c, root, first, b, &seg);
    if (rc == NUMACOLL_OK && (leader || is_root) && !whole) rc = NUMACOLL_ERR_NOMEM;
    nb = mv_stage(c, 2 * (size_t)s->node_size * sizeof *nb);
    cnt = step_ints(s, c);
    if (!nb || !cnt) rc = NUMACOLL_ERR_NOMEM;
    /* this member's block */
    const void *sendp = NUMACOLL_IN_PLACE;
    if (rc == NUMACOLL_OK && is_root && c->sendbuf == MPI_IN_PLACE) {
        if (!(sstage = mv_stage(c, b))) rc = NUMACOLL_ERR_NOMEM;
        else mv_pack(c, &R, (MPI_Aint)root * c->rcount, c->rcount, sstage, b);
        sendp = sstage;
    } else if (rc == NUMACOLL_OK) {
        rc = mv_send_begin(c, &b, &sendp, &sstage);
    }
    int go = rc == NUMACOLL_OK;
    if (agree) rc = agree_memory(s, rc != NUMACOLL_OK, is_root, &go);
    for (int i = 0; go && i < s->node_size; i++)
        nb[i] = b, nb[s->node_size + i] = (size_t)i * b;
    if (go) rc = mv_node_gatherv(s, sendp, b, seg, nb, nb + s->node_size, cnt);
    if (go && rc == NUMACOLL_OK && leader && K > 1) {
        node_parts(s, first, b, cnt, cnt + K);
        const void *send = root_node ? MPI_IN_PLACE : seg;
        const int n = (int)((size_t)s->node_size * b);
        rc = HIER_STEP(s, "MPI_Gatherv between the node leaders",
                       PMPI_Gatherv(send, n, MPI_BYTE, whole, cnt, cnt + K, MPI_BYTE,
                                    s->node_of[root], s->leaders),
                       PMPI_Igatherv(send, n, MPI_BYTE, whole, cnt, cnt + K, MPI_BYTE,
                                     s->node_of[root], s->leaders, HIER_REQ));
    }
    if (go && rc == NUMACOLL_OK && root_node) rc = root_hop(s, root, whole, (size_t)P * b, 1);
    if (go && rc == NUMACOLL_OK && is_root)
        for (int j = 0; j < P; j++)
            mv_unpack(c, &R, (MPI_Aint)order[j] * c->rcount, c->rcount, whole + (size_t)j * b, b);
    free_unless_pending(s, c, whole, rc);
    mv_stage_free(c, sstage);
    mv_stage_free(c, nb);
    free_unless_pending(s, c, cnt, rc);
    mv_stage_free(c, first);
    return rc;
}

int scatter_hier(nc_comm_t *s, mv_call_t *c)
{
    const int P = s->size, me = s->rank, root = c->root, K = s->nnodes;
    const int leader = s->node_rank == 0, root_node = s->node_of[root] == s->my_node;
    const int is_root = me == root, root_in_place = is_root && c->recvbuf == MPI_IN_PLACE;
    int *order = NULL, *first = NULL, *cnt = NULL;
    size_t b = block_bytes(c, me);
    char *whole = NULL, *seg = NULL, *scratch = NULL;
    size_t *nb = NULL;
    mv_recv_t r = {.stage = NULL};
    mv_side_t S;
    hier_setups(s, HIER_SETUP_BCAST | HIER_SETUP_MOVE);
    if (is_root && !mv_side_init(&S, c->sendbuf, c->stype)) /* hier_fits has queried it */
        return nc_error(NUMACOLL_ERR_ARG, "the send type cannot be queried");
    const int agree = room_begin(s, c, (size_t)P * b);
    /* everything this member needs, before any step */
    int rc = node_order(s, c, &order, &first);
    if (rc == NUMACOLL_OK) whole = leader_buffer(s, c, root, first, b, &seg);
    if (rc == NUMACOLL_OK && (leader || is_root) && !whole) rc = NUMACOLL_ERR_NOMEM;
    nb = mv_stage(c, 2 * (size_t)s->node_size * sizeof *nb);
    cnt = step_ints(s, c);
    if (!nb || !cnt) rc = NUMACOLL_ERR_NOMEM;
    /* this member's block: a root in place that is not its node's leader takes it into a
     * scratch buffer (in place means something to the node step's root only) */
    void *recvp = (void *)NUMACOLL_IN_PLACE;
    if (rc == NUMACOLL_OK && root_in_place && !leader) {
        if (!(recvp = scratch = mv_stage(c, b))) rc = NUMACOLL_ERR_NOMEM;
    } else if (rc == NUMACOLL_OK && !root_in_place) {
        rc = mv_recv_begin(c, &r, &b, &recvp);
    }
    int go = rc == NUMACOLL_OK;
    if (agree) rc = agree_memory(s, rc != NUMACOLL_OK, !root_in_place, &go);
    for (int j = 0; go && is_root && j < P; j++) /* the whole in node order */
        mv_pack(c, &S, (MPI_Aint)order[j] * c->scount, c->scount, whole + (size_t)j * b, b);
    if (go && root_node) rc = root_hop(s, root, whole, (size_t)P * b, 0);
    if (go && rc == NUMACOLL_OK && leader && K > 1) {
        node_parts(s, first, b, cnt, cnt + K);
        void *recv = root_node ? MPI_IN_PLACE : seg;
        const int n = (int)((size_t)s->node_size * b);
        rc = HIER_STEP(s, "MPI_Scatterv between the node leaders",
                       PMPI_Scatterv(whole, cnt, cnt + K, MPI_BYTE, recv, n, MPI_BYTE,
                                     s->node_of[root], s->leaders),
                       PMPI_Iscatterv(whole, cnt, cnt + K, MPI_BYTE, recv, n, MPI_BYTE,
                                      s->node_of[root], s->leaders, HIER_REQ));
    }
    for (int i = 0; go && i < s->node_size; i++)
        nb[i] = b, nb[s->node_size + i] = (size_t)i * b;
    if (go && rc == NUMACOLL_OK)
        rc = mv_node_scatterv(s, seg, nb, nb + s->node_size, recvp, b, cnt);
    /* a member that skipped the call (go 0) with NUMACOLL_OK has received nothing: the
     * stage is freed unread */
    mv_recv_end(c, &r, go ? rc : NUMACOLL_ERR_ARG);
    mv_stage_free(c, scratch);
    free_unless_pending(s, c, whole, rc);
    mv_stage_free(c, nb);
    free_unless_pending(s, c, cnt, rc);
    mv_stage_free(c, first);
    return rc;
}
