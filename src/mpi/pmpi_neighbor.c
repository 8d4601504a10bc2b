/*
 * libnumacoll_mpi: the neighbourhood collectives (MPI_Neighbor_allgather,
 * MPI_Neighbor_allgatherv, MPI_Neighbor_alltoall, MPI_Neighbor_alltoallv,
 * MPI_Neighbor_alltoallw and their _c forms) on a flat communicator: the team's
 * numacoll_alltoallv, in bytes.
 *
 * A neighbour exchange is an alltoallv in which member r's j-th send block goes to its j-th
 * destination and the block from a source s lands in the receive slot of s's position in
 * r's source list; every other pair moves 0 bytes. That is exact when no rank appears twice
 * in any member's destination list or in any member's source list (MPI_PROC_NULL aside: it
 * gets no block, and its receive slot is left untouched). A communicator whose topology
 * repeats a neighbour (a multigraph, a periodic Cartesian dimension of size 1 or 2, where
 * the - and + neighbours are one rank) goes to the MPI library, and so does a general graph
 * that is not symmetric (erroneous for these calls: the MPI reports it).
 *
 * The verdict is taken once per communicator, at its first neighbourhood call in flat mode,
 * and kept in its state (nc_comm_t's nbr_*), alike on every member: a Cartesian topology's
 * dimensions and periods and a general graph's whole adjacency are known to every member;
 * a distributed graph's members know only their own edges. Each member judges what it
 * knows and one MPI_Allreduce of the MPI's agrees on the verdict, so that a member short of
 * memory for the check makes every member call the MPI (every member makes the same
 * neighbourhood calls, so all of them reach it at the same call).
 *
 * Which calls numacoll runs is otherwise decided as for MPI_Alltoallv (pmpi_alltoall.c):
 * from the communicator's agreed state (flat; not pass-through, deferred or given up by the
 * core: s->move_native) and NUMACOLL_MPI_GATHER. Datatypes play no part: a block whose
 * datatype is plain goes to the core where it lies, any other is packed into or unpacked
 * from a stage of this member's. The hierarchical mode (several nodes, NUMACOLL_FAKE_NODES)
 * calls the MPI's own neighbourhood collectives.
 */
#include "pmpi_move.h"

enum { NB_ALLGATHER, NB_ALLGATHERV, NB_ALLTOALL, NB_ALLTOALLV, NB_ALLTOALLW, NB_KINDS };
static const char *const g_nb_names[NB_KINDS] = {
    "MPI_Neighbor_allgather", "MPI_Neighbor_allgatherv", "MPI_Neighbor_alltoall",
    "MPI_Neighbor_alltoallv", "MPI_Neighbor_alltoallw"};

/* the communicator's verdict (nc_comm_t's nbr_verdict): not judged yet, numacoll's, the
 * MPI's */
enum { NBR_UNKNOWN = 0, NBR_NUMACOLL = 1, NBR_NATIVE = 2 };

/* One call as the application made it. Send side: allgather(v) and alltoall take scount
 * elements of stype (allgather(v): the same block to every destination; alltoall: block j at
 * element j * scount); alltoallv and alltoallw take the arrays (alltoallw's displacements in
 * bytes, one datatype a block). Receive side alike: allgather and alltoall slot i at element
 * i * rcount, allgatherv and alltoallv at rdispls[i] elements, alltoallw at rdispls[i]
 * bytes. Arrays come as int (MPI_X), or as MPI_Count / MPI_Aint (MPI_X_c; alltoallw's
 * displacements are MPI_Aint in both). */
typedef struct nb_call {
    int kind, is_c;
    const void *sendbuf;
    MPI_Count scount;
    MPI_Datatype stype;
    const int *scounts_i, *sdispls_i;
    const MPI_Count *scounts_c;
    const MPI_Aint *sdispls_c;
    const MPI_Datatype *stypes;
    void *recvbuf;
    MPI_Count rcount;
    MPI_Datatype rtype;
    const int *rcounts_i, *rdispls_i;
    const MPI_Count *rcounts_c;
    const MPI_Aint *rdispls_c;
    const MPI_Datatype *rtypes;
    MPI_Comm comm;
    mv_call_t mv; /* what the staging helpers keep: pack errors, staged (mv.comm) */
    int bad;      /* MPI error class of a block of this member's that took part empty */
    int rank;     /* this member's, for the messages */
} nb_call_t;

static int per_block_send(const nb_call_t *c)
{
    return c->kind == NB_ALLTOALLV || c->kind == NB_ALLTOALLW;
}
static int per_block_recv(const nb_call_t *c)
{
    return c->kind != NB_ALLGATHER && c->kind != NB_ALLTOALL;
}

/* elements of block @p j of side @p send */
static MPI_Count count_of(const nb_call_t *c, int send, int j)
{
    if (send && !per_block_send(c)) return c->scount;
    if (!send && !per_block_recv(c)) return c->rcount;
    if (send) return c->scounts_c ? c->scounts_c[j] : (MPI_Count)c->scounts_i[j];
    return c->rcounts_c ? c->rcounts_c[j] : (MPI_Count)c->rcounts_i[j];
}
/* block @p j's displacement from its side's buffer: in elements, alltoallw's in bytes */
static MPI_Aint displ_of(const nb_call_t *c, int send, int j)
{
    if (send && c->kind == NB_ALLGATHER) return 0;
    if (send && c->kind == NB_ALLGATHERV) return 0;
    if (send && c->kind == NB_ALLTOALL) return (MPI_Aint)j * (MPI_Aint)c->scount;
    if (!send && (c->kind == NB_ALLGATHER || c->kind == NB_ALLTOALL))
        return (MPI_Aint)j * (MPI_Aint)c->rcount;
    if (send) return c->sdispls_c ? c->sdispls_c[j] : (MPI_Aint)c->sdispls_i[j];
    return c->rdispls_c ? c->rdispls_c[j] : (MPI_Aint)c->rdispls_i[j];
}
static MPI_Datatype type_of(const nb_call_t *c, int send, int j)
{
    if (c->kind == NB_ALLTOALLW) return send ? c->stypes[j] : c->rtypes[j];
    return send ? c->stype : c->rtype;
}

static int native(const nb_call_t *c)
{
    const int *sc = c->scounts_i, *sd = c->sdispls_i, *rc = c->rcounts_i, *rd = c->rdispls_i;
#if MPI_VERSION >= 4
    if (c->is_c) {
        const MPI_Count *scc = c->scounts_c, *rcc = c->rcounts_c;
        const MPI_Aint *sdc = c->sdispls_c, *rdc = c->rdispls_c;
        switch (c->kind) {
        case NB_ALLGATHER:
            return NC_HAVE(PMPI_Neighbor_allgather_c)
                       ? nc_mpi4.PMPI_Neighbor_allgather_c(c->sendbuf, c->scount, c->stype,
                                                           c->recvbuf, c->rcount, c->rtype, c->comm)
                       : MPI_ERR_COUNT;
        case NB_ALLGATHERV:
            return NC_HAVE(PMPI_Neighbor_allgatherv_c)
                       ? nc_mpi4.PMPI_Neighbor_allgatherv_c(c->sendbuf, c->scount, c->stype,
                                                            c->recvbuf, rcc, rdc, c->rtype, c->comm)
                       : MPI_ERR_COUNT;
        case NB_ALLTOALL:
            return NC_HAVE(PMPI_Neighbor_alltoall_c)
                       ? nc_mpi4.PMPI_Neighbor_alltoall_c(c->sendbuf, c->scount, c->stype,
                                                          c->recvbuf, c->rcount, c->rtype, c->comm)
                       : MPI_ERR_COUNT;
        case NB_ALLTOALLV:
            return NC_HAVE(PMPI_Neighbor_alltoallv_c)
                       ? nc_mpi4.PMPI_Neighbor_alltoallv_c(c->sendbuf, scc, sdc, c->stype,
                                                           c->recvbuf, rcc, rdc, c->rtype, c->comm)
                       : MPI_ERR_COUNT;
        default:
            return NC_HAVE(PMPI_Neighbor_alltoallw_c)
                       ? nc_mpi4.PMPI_Neighbor_alltoallw_c(c->sendbuf, scc, sdc, c->stypes,
                                                           c->recvbuf, rcc, rdc, c->rtypes, c->comm)
                       : MPI_ERR_COUNT;
        }
    }
#endif
    switch (c->kind) {
    case NB_ALLGATHER:
        return PMPI_Neighbor_allgather(c->sendbuf, (int)c->scount, c->stype, c->recvbuf,
                                       (int)c->rcount, c->rtype, c->comm);
    case NB_ALLGATHERV:
        return PMPI_Neighbor_allgatherv(c->sendbuf, (int)c->scount, c->stype, c->recvbuf, rc, rd,
                                        c->rtype, c->comm);
    case NB_ALLTOALL:
        return PMPI_Neighbor_alltoall(c->sendbuf, (int)c->scount, c->stype, c->recvbuf,
                                      (int)c->rcount, c->rtype, c->comm);
    case NB_ALLTOALLV:
        return PMPI_Neighbor_alltoallv(c->sendbuf, sc, sd, c->stype, c->recvbuf, rc, rd, c->rtype,
                                       c->comm);
    default:
        return PMPI_Neighbor_alltoallw(c->sendbuf, sc, c->sdispls_c, c->stypes, c->recvbuf, rc,
                                       c->rdispls_c, c->rtypes, c->comm);
    }
}

/* ---- the topology's verdict ------------------------------------------------------------ */

/* 1 when @p n ranks of @p list (MPI_PROC_NULL aside) name some rank twice */
static int repeats(const int *list, int n, int size, unsigned char *seen)
{
    int rep = 0;
    memset(seen, 0, (size_t)size);
    for (int i = 0; i < n; i++) {
        if (list[i] == MPI_PROC_NULL || list[i] < 0 || list[i] >= size) continue;
        rep |= seen[list[i]];
        seen[list[i]] = 1;
    }
    return rep;
}

/* A general graph (MPI_Graph_create): numacoll's when no node lists a neighbour twice and
 * the adjacency is symmetric (j in i's list exactly when i in j's), judged from the whole
 * graph, which every member has. @p seen: a scratch of @p size bytes. */
static int graph_simple(MPI_Comm comm, int size, unsigned char *seen)
{
    int nnodes = 0, nedges = 0, ok = 0;
    if (PMPI_Graphdims_get(comm, &nnodes, &nedges) != MPI_SUCCESS || nnodes != size ||
        nedges < 0)
        return 0;
    int *index = malloc(((size_t)nnodes + (size_t)nedges + 1) * sizeof *index);
    if (!index) return 0;
    int *edges = index + nnodes;
    if (PMPI_Graph_get(comm, nnodes, nedges, index, edges) != MPI_SUCCESS) goto out;
    ok = 1;
    for (int i = 0; ok && i < nnodes; i++) {
        int from = i ? index[i - 1] : 0;
        if (index[i] < from || index[i] > nedges) ok = 0;
        else ok = !repeats(edges + from, index[i] - from, size, seen);
    }
    /* symmetric: every edge i -> j has its reverse j -> i in j's list (with no repeats, that
     * is a symmetric adjacency) */
    for (int i = 0; ok && i < nnodes; i++) {
        int from = i ? index[i - 1] : 0;
        for (int e = from; ok && e < index[i]; e++) {
            int j = edges[e], jf = j ? index[j - 1] : 0, back = 0;
            if (j < 0 || j >= nnodes) ok = 0;
            for (int k = jf; ok && k < index[j] && !back; k++)
                back = edges[k] == i;
            ok = ok && back;
        }
    }
out:
    free(index);
    return ok;
}

/* this member's neighbour lists of @p comm (allocated into s->nbr_*); 0 when they cannot be
 * had. @p kind: MPI_CART, MPI_GRAPH or MPI_DIST_GRAPH. */
static int own_lists(nc_comm_t *s, MPI_Comm comm, int kind)
{
    int in = 0, out = 0, weighted = 0, rank = s->rank, nd = 0;
    if (kind == MPI_CART) {
        if (PMPI_Cartdim_get(comm, &nd) != MPI_SUCCESS || nd < 0) return 0;
        in = out = 2 * nd;
    } else if (kind == MPI_GRAPH) {
        if (PMPI_Graph_neighbors_count(comm, rank, &in) != MPI_SUCCESS || in < 0) return 0;
        out = in;
    } else if (PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted) != MPI_SUCCESS ||
               in < 0 || out < 0) {
        return 0;
    }
    int *src = malloc(((size_t)in + 1) * sizeof *src);
    int *dst = malloc(((size_t)out + 1) * sizeof *dst);
    /* room for the weights whether the graph has them or not: MPICH's MPI_UNWEIGHTED is
     * a variable of libmpi, which the preload must not bind (it loads into processes
     * without MPI: test mpi_preload_links), and the MPIs leave the arrays alone for an
     * unweighted graph */
    int *w = kind == MPI_DIST_GRAPH ? malloc(((size_t)in + (size_t)out + 2) * sizeof *w) : NULL;
    int ok = src && dst && (kind != MPI_DIST_GRAPH || w);
    if (ok && kind == MPI_CART) {
        for (int d = 0; ok && d < nd; d++) /* MPI's order: the - then the + neighbour */
            ok = PMPI_Cart_shift(comm, d, 1, &src[2 * d], &src[2 * d + 1]) == MPI_SUCCESS;
        if (ok) memcpy(dst, src, (size_t)in * sizeof *src);
    } else if (ok && kind == MPI_GRAPH) {
        ok = PMPI_Graph_neighbors(comm, rank, in, src) == MPI_SUCCESS;
        if (ok) memcpy(dst, src, (size_t)in * sizeof *src);
    } else if (ok) {
        ok = PMPI_Dist_graph_neighbors(comm, in, src, w, out, dst, w + in + 1) == MPI_SUCCESS;
    }
    free(w);
    if (!ok) {
        free(src);
        free(dst);
        return 0;
    }
    s->nbr_sources = src, s->nbr_destinations = dst;
    s->nbr_indegree = in, s->nbr_outdegree = out;
    return 1;
}

/* Judge @p s's topology once (see the file's head): NBR_NUMACOLL or NBR_NATIVE, alike on
 * every member; collective: one MPI_Allreduce agrees on the members' verdicts (a
 * distributed graph's members judge their own lists only; a member without memory for
 * the few arrays of a check votes for the MPI, and so the others follow it) */
static int verdict(nc_comm_t *s, MPI_Comm comm)
{
    if (s->nbr_verdict != NBR_UNKNOWN) return s->nbr_verdict;
    int kind = MPI_UNDEFINED, simple = 0;
    unsigned char *seen = malloc((size_t)s->size);
    if (PMPI_Topo_test(comm, &kind) != MPI_SUCCESS) kind = MPI_UNDEFINED;
    if (kind == MPI_CART) {
        int nd = 0;
        simple = seen && PMPI_Cartdim_get(comm, &nd) == MPI_SUCCESS && nd >= 0;
        int *v = simple ? malloc(3 * ((size_t)nd + 1) * sizeof *v) : NULL;
        simple = v && PMPI_Cart_get(comm, nd, v, v + nd, v + 2 * nd) == MPI_SUCCESS;
        for (int d = 0; simple && d < nd; d++) /* - and + are one rank (or this one) */
            simple = !(v[nd + d] && v[d] <= 2);
        free(v);
    } else if (kind == MPI_GRAPH) {
        simple = seen && graph_simple(comm, s->size, seen);
    }
    /* this member's lists: on a Cartesian grid or a general graph they play no part in the
     * verdict (without them, for want of memory, this member's calls fail and take part
     * empty: mv_take_part) */
    if (simple && kind != MPI_DIST_GRAPH && !own_lists(s, comm, kind))
        s->nbr_indegree = s->nbr_outdegree = -1;
    if (kind == MPI_DIST_GRAPH) /* this member's lists */
        simple = own_lists(s, comm, kind) && seen &&
                 !repeats(s->nbr_sources, s->nbr_indegree, s->size, seen) &&
                 !repeats(s->nbr_destinations, s->nbr_outdegree, s->size, seen);
    if (kind == MPI_CART || kind == MPI_GRAPH || kind == MPI_DIST_GRAPH) {
        /* every member's verdict, by the MPI: numacoll's only if it is each member's */
        int mine = simple;
        if (PMPI_Allreduce(&mine, &simple, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) simple = 0;
    }
    free(seen);
    s->nbr_verdict = simple ? NBR_NUMACOLL : NBR_NATIVE;
    if (!simple && s->nbr_sources) {
        free(s->nbr_sources), free(s->nbr_destinations);
        s->nbr_sources = s->nbr_destinations = NULL;
    }
    return s->nbr_verdict;
}

/* ---- one side's blocks ---------------------------------------------------------------- */

/* a block of one side: its datatype's description (sd.buf: the block's address), its
 * elements and bytes, and where the core finds its bytes */
typedef struct nblock {
    mv_side_t sd;
    MPI_Count n;
    size_t bytes;
    int staged; /* its bytes go through the side's stage */
    char *at;   /* a plain block's first byte, else its place in the side's stage */
} nblock_t;

/* Describe side @p send's @p k blocks into @p b: plain blocks at their first byte, the
 * others' bytes counted in *@p stage_bytes. An allgather's send side is one block for
 * every destination (@p k 1 here; the caller copies it). A block whose datatype cannot be
 * queried or whose bytes overflow takes part empty (its peer then fails naming this member)
 * and this member fails with the MPI's class for it (c->bad). */
static void describe(nb_call_t *c, int send, int k, nblock_t *b, size_t *stage_bytes)
{
    const void *buf = send ? c->sendbuf : c->recvbuf;
    mv_side_t proto;
    int proto_ok = 0;
    if (c->kind != NB_ALLTOALLW && k > 0)
        proto_ok = mv_side_init(&proto, buf, send ? c->stype : c->rtype);
    *stage_bytes = 0;
    for (int j = 0; j < k; j++) {
        nblock_t *w = &b[j];
        w->n = count_of(c, send, j), w->bytes = 0, w->at = NULL, w->staged = 0;
        if (w->n == 0) continue; /* its datatype is not significant */
        int ok;
        if (c->kind == NB_ALLTOALLW) {
            /* in integers: buf may be MPI_BOTTOM and the displacement an absolute address */
            const intptr_t at = (intptr_t)buf + (intptr_t)displ_of(c, send, j);
            ok = mv_side_init(&w->sd, (const void *)at, type_of(c, send, j));
        } else {
            ok = proto_ok;
            w->sd = proto;
            w->sd.buf =
                (void *)((intptr_t)buf + (intptr_t)displ_of(c, send, j) * (intptr_t)proto.ext);
        }
        if (!ok || !mv_bytes(w->n, w->sd.tsz, &w->bytes) ||
            (!w->sd.plain && __builtin_add_overflow(*stage_bytes, w->bytes, stage_bytes))) {
            mpi_say("numacoll-mpi: %s: rank %d's %s block %d (%lld elements) %s; it takes part "
                    "with 0 bytes and fails\n",
                    g_nb_names[c->kind], c->rank, send ? "send" : "receive", j, (long long)w->n,
                    ok ? "is too large" : "has a datatype that cannot be queried");
            if (!c->bad) c->bad = ok ? MPI_ERR_COUNT : MPI_ERR_TYPE;
            w->bytes = 0, w->n = 0;
            continue;
        }
        w->staged = !w->sd.plain;
        if (w->sd.plain) w->at = mv_at(&w->sd, 0);
    }
}

/* Place side's staged blocks in @p stage (block order) and give the core the side in rank
 * terms: block j goes to / comes from peers[j] (MPI_PROC_NULL: nowhere); bytes[r] and
 * displs[r] from the returned base (the lowest non-empty block's first byte; NULL when the
 * side has no bytes). Every other rank's entry is 0. */
static char *place(int P, int k, nblock_t *b, const int *peers, char *stage, size_t *bytes,
                   size_t *displs)
{
    uintptr_t lo = UINTPTR_MAX;
    size_t off = 0;
    memset(bytes, 0, (size_t)P * sizeof *bytes);
    memset(displs, 0, (size_t)P * sizeof *displs);
    for (int j = 0; j < k; j++) {
        if (b[j].staged) b[j].at = stage + off, off += b[j].bytes;
        if (peers[j] != MPI_PROC_NULL && b[j].bytes && (uintptr_t)b[j].at < lo)
            lo = (uintptr_t)b[j].at;
    }
    for (int j = 0; j < k; j++) {
        if (peers[j] == MPI_PROC_NULL || !b[j].bytes) continue;
        bytes[peers[j]] = b[j].bytes;
        displs[peers[j]] = (size_t)((uintptr_t)b[j].at - lo);
    }
    return lo == UINTPTR_MAX ? NULL : (char *)lo;
}

static int neighbor_flat(nc_comm_t *s, nb_call_t *c)
{
    const int P = s->size, in = s->nbr_indegree, out = s->nbr_outdegree;
    if (in < 0)
        return nc_error(NUMACOLL_ERR_NOMEM, "%s: rank %d could not keep its neighbour lists",
                        g_nb_names[c->kind], c->rank);
    const int *src = s->nbr_sources, *dst = s->nbr_destinations;
    /* an allgather sends one block, described once: every destination gets it */
    const int shared = c->kind == NB_ALLGATHER || c->kind == NB_ALLGATHERV;
    nblock_t *blk = malloc(((size_t)in + (size_t)out + 1) * sizeof *blk);
    size_t *arr = malloc(4 * (size_t)P * sizeof *arr);
    if (!blk || !arr) {
        free(blk);
        free(arr);
        return nc_error(NUMACOLL_ERR_NOMEM, "out of memory for %d neighbours' blocks", in + out);
    }
    nblock_t *R = blk, *S = blk + in;
    size_t *rb = arr, *rd = arr + P, *sb = arr + 2 * P, *sd = arr + 3 * P;
    size_t rstage_bytes = 0, sstage_bytes = 0;
    char *rstage = NULL, *sstage = NULL;
    int rc = NUMACOLL_OK;
    describe(c, 0, in, R, &rstage_bytes);
    describe(c, 1, shared ? (out > 0) : out, S, &sstage_bytes);
    if (rstage_bytes && !(rstage = mv_alloc(rstage_bytes))) rc = NUMACOLL_ERR_NOMEM;
    if (rc == NUMACOLL_OK && sstage_bytes && !(sstage = mv_alloc(sstage_bytes)))
        rc = NUMACOLL_ERR_NOMEM;
    if (rc == NUMACOLL_OK) {
        char *rbase = place(P, in, R, src, rstage, rb, rd);
        /* the send side's non-contiguous blocks packed into its stage; the core then takes
         * every send block where it lies */
        const int ns = shared ? (out > 0) : out;
        size_t off = 0;
        for (int j = 0; j < ns; j++)
            if (S[j].staged) {
                S[j].at = sstage + off, off += S[j].bytes;
                mv_pack(&c->mv, &S[j].sd, 0, S[j].n, S[j].at, S[j].bytes);
                S[j].staged = 0;
            }
        for (int j = 1; shared && j < out; j++)
            S[j] = S[0];
        const char *sbase = place(P, out, S, dst, NULL, sb, sd);
        rc = numacoll_alltoallv(s->team, sbase, sb, sd, rbase, rb, rd);
    }
    if (rc == NUMACOLL_OK)
        for (int i = 0; i < in; i++)
            if (R[i].staged && src[i] != MPI_PROC_NULL)
                mv_unpack(&c->mv, &R[i].sd, 0, R[i].n, R[i].at, R[i].bytes);
    mv_free(rstage);
    mv_free(sstage);
    free(blk);
    free(arr);
    return rc;
}

/* ---- the decision --------------------------------------------------------------------- */

/* Arguments this member can check alone that make the call erroneous (the MPI's own call
 * then reports them): MPI_IN_PLACE (not allowed here), missing arrays, negative counts, a
 * null datatype for a block that has elements. @p in, @p out: the degrees (-1: unknown yet,
 * the arrays not read). */
static int args_valid(const nb_call_t *c, int in, int out)
{
    if (c->sendbuf == MPI_IN_PLACE || c->recvbuf == MPI_IN_PLACE) return 0;
    if (c->kind != NB_ALLTOALLW &&
        (c->stype == MPI_DATATYPE_NULL || c->rtype == MPI_DATATYPE_NULL))
        return 0;
    if (!per_block_send(c) && c->scount < 0) return 0;
    if (!per_block_recv(c) && c->rcount < 0) return 0;
    if (per_block_send(c) && out > 0 &&
        (!(c->scounts_i || c->scounts_c) || !(c->sdispls_i || c->sdispls_c) ||
         (c->kind == NB_ALLTOALLW && !c->stypes)))
        return 0;
    if (per_block_recv(c) && in > 0 &&
        (!(c->rcounts_i || c->rcounts_c) || !(c->rdispls_i || c->rdispls_c) ||
         (c->kind == NB_ALLTOALLW && !c->rtypes)))
        return 0;
    for (int j = 0; per_block_send(c) && j < out; j++) {
        MPI_Count n = count_of(c, 1, j);
        if (n < 0 || (n && type_of(c, 1, j) == MPI_DATATYPE_NULL)) return 0;
    }
    for (int i = 0; per_block_recv(c) && i < in; i++) {
        MPI_Count n = count_of(c, 0, i);
        if (n < 0 || (n && type_of(c, 0, i) == MPI_DATATYPE_NULL)) return 0;
    }
    return 1;
}

int neighbor_degrees(MPI_Comm comm, int *in, int *out)
{
    int kind = MPI_UNDEFINED, weighted = 0, r = 0;
    *in = *out = 0;
    if (PMPI_Topo_test(comm, &kind) != MPI_SUCCESS) return 0;
    if (kind == MPI_CART) {
        if (PMPI_Cartdim_get(comm, in) != MPI_SUCCESS) return 0;
        *in *= 2, *out = *in;
    } else if (kind == MPI_GRAPH) {
        if (PMPI_Comm_rank(comm, &r) != MPI_SUCCESS ||
            PMPI_Graph_neighbors_count(comm, r, in) != MPI_SUCCESS)
            return 0;
        *out = *in;
    } else if (kind != MPI_DIST_GRAPH ||
               PMPI_Dist_graph_neighbors_count(comm, in, out, &weighted) != MPI_SUCCESS) {
        return 0;
    }
    return *in >= 0 && *out >= 0;
}

/* this member's bytes received, for the deferral's units (the degree from the MPI: the
 * state may not know it yet). They need not be the same on every member: see defer_step. */
static uint64_t units_of(const nb_call_t *c)
{
    int in = 0, out = 0;
    if (!neighbor_degrees(c->comm, &in, &out)) return 1;
    if (in < 0 || !args_valid(c, in, 0)) return 1;
    MPI_Count n = 0, b = 0;
    for (int i = 0; i < in; i++) {
        MPI_Count k = count_of(c, 0, i);
        int sz = 0;
        if (!k) continue;
        MPI_Datatype t = type_of(c, 0, i);
        sz = (int)predefined_size(t);
        if (!sz && (PMPI_Type_size(t, &sz) != MPI_SUCCESS || sz < 0)) return 1;
        if (__builtin_mul_overflow(k, (MPI_Count)sz, &b) || __builtin_add_overflow(n, b, &n))
            return bcast_units(LLONG_MAX, 1); /* as many as there can be */
    }
    return bcast_units(n, 1);
}

/* The MPI result of a call that numacoll ran (its core result @p rc): a mismatch of sizes
 * between members is the caller's (MPI_ERR_ARG, the team stays usable); a dead member or a
 * timeout breaks the team */
static int nb_result(nc_comm_t *s, nb_call_t *c, int rc)
{
    const char *name = g_nb_names[c->kind];
    if (rc == NUMACOLL_OK && c->bad) {
        PMPI_Comm_call_errhandler(c->comm, c->bad);
        return c->bad;
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

static int nb_entry(nb_call_t *c)
{
    ensure_init();
    COUNT(neighbor_calls[c->kind]);
    /* what the staging helpers keep (mv_args: no zero fill of the struct) */
    mv_args(&c->mv, MV_ALLGATHER, 0, NULL, 0, MPI_DATATYPE_NULL, NULL, 0, MPI_DATATYPE_NULL, -1,
            c->comm);
    c->bad = 0;
    /* fast path: a cached flat state whose topology and data movement are judged and set up
     * (the same decision as below, without the MPI's queries) */
    nc_comm_t *s = comm_cached_flat(c->comm);
    if (s && s->nbr_verdict == NBR_NATIVE) return native(c); /* judged: the MPI's for good */
    if (!(s && g_gather && !s->move_native && s->team->move && s->nbr_verdict == NBR_NUMACOLL)) {
        if (c->comm == MPI_COMM_NULL || !mv_intra_size(c->comm)) return native(c);
        /* every member joins the communicator's set-up and counts the same calls toward the
         * deferral, then (flat) the topology's verdict and the team's data-movement set-up,
         * whatever its own arguments: nobody waits in a collective another skips */
        s = comm_get(c->comm, units_of(c), 0);
        if (!g_active || !g_gather || !s || s->mode != MODE_FLAT) return native(c);
        if (verdict(s, c->comm) != NBR_NUMACOLL || !move_ready(s)) return native(c);
    }
    if (!args_valid(c, s->nbr_indegree, s->nbr_outdegree)) return native(c);
    c->rank = s->rank;
    const uint64_t calls = nc_move_calls(s->team);
    int rc = neighbor_flat(s, c);
    if (NC_UNLIKELY(rc != NUMACOLL_OK)) rc = mv_take_part(s, MV_PART_ALLTOALLV, -1, calls, rc);
    if (rc == NUMACOLL_OK) {
        COUNT(neighbor_numacoll[c->kind]);
        if (c->mv.staged) COUNT(neighbor_staged);
    }
    return nb_result(s, c, rc);
}

/* ---- entry points ------------------------------------------------------------------- */

/* a call with one count and datatype a side (allgather, alltoall) */
static int nb_uniform(int kind, int is_c, const void *sendbuf, MPI_Count scount,
                      MPI_Datatype stype, void *recvbuf, MPI_Count rcount, MPI_Datatype rtype,
                      MPI_Comm comm)
{
    nb_call_t c = {.kind = kind,       .is_c = is_c,       .sendbuf = sendbuf,
                   .scount = scount,   .stype = stype,     .recvbuf = recvbuf,
                   .rcount = rcount,   .rtype = rtype,     .comm = comm};
    return nb_entry(&c);
}

int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return nb_uniform(NB_ALLGATHER, 0, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                      recvtype, comm);
}

int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return nb_uniform(NB_ALLTOALL, 0, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                      recvtype, comm);
}

int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, MPI_Comm comm)
{
    nb_call_t c = {.kind = NB_ALLGATHERV,  .sendbuf = sendbuf,     .scount = sendcount,
                   .stype = sendtype,      .recvbuf = recvbuf,     .rcounts_i = recvcounts,
                   .rdispls_i = displs,    .rtype = recvtype,      .comm = comm};
    return nb_entry(&c);
}

int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                           MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                           const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    nb_call_t c = {.kind = NB_ALLTOALLV,      .sendbuf = sendbuf,     .scounts_i = sendcounts,
                   .sdispls_i = sdispls,      .stype = sendtype,      .recvbuf = recvbuf,
                   .rcounts_i = recvcounts,   .rdispls_i = rdispls,   .rtype = recvtype,
                   .comm = comm};
    return nb_entry(&c);
}

int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                           const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                           const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                           MPI_Comm comm)
{
    nb_call_t c = {.kind = NB_ALLTOALLW,      .sendbuf = sendbuf,     .scounts_i = sendcounts,
                   .sdispls_c = sdispls,      .stypes = sendtypes,    .recvbuf = recvbuf,
                   .rcounts_i = recvcounts,   .rdispls_c = rdispls,   .rtypes = recvtypes,
                   .comm = comm};
    return nb_entry(&c);
}

#if MPI_VERSION >= 4
int MPI_Neighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm)
{
    return nb_uniform(NB_ALLGATHER, 1, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                      recvtype, comm);
}

int MPI_Neighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                            MPI_Comm comm)
{
    return nb_uniform(NB_ALLTOALL, 1, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                      recvtype, comm);
}

int MPI_Neighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                              MPI_Datatype recvtype, MPI_Comm comm)
{
    nb_call_t c = {.kind = NB_ALLGATHERV,  .is_c = 1,             .sendbuf = sendbuf,
                   .scount = sendcount,    .stype = sendtype,     .recvbuf = recvbuf,
                   .rcounts_c = recvcounts, .rdispls_c = displs,  .rtype = recvtype,
                   .comm = comm};
    return nb_entry(&c);
}

int MPI_Neighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                             const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                             const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                             MPI_Datatype recvtype, MPI_Comm comm)
{
    nb_call_t c = {.kind = NB_ALLTOALLV,      .is_c = 1,              .sendbuf = sendbuf,
                   .scounts_c = sendcounts,   .sdispls_c = sdispls,   .stype = sendtype,
                   .recvbuf = recvbuf,        .rcounts_c = recvcounts, .rdispls_c = rdispls,
                   .rtype = recvtype,         .comm = comm};
    return nb_entry(&c);
}

int MPI_Neighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[],
                             const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                             void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                             const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    nb_call_t c = {.kind = NB_ALLTOALLW,      .is_c = 1,              .sendbuf = sendbuf,
                   .scounts_c = sendcounts,   .sdispls_c = sdispls,   .stypes = sendtypes,
                   .recvbuf = recvbuf,        .rcounts_c = recvcounts, .rdispls_c = rdispls,
                   .rtypes = recvtypes,       .comm = comm};
    return nb_entry(&c);
}
#endif

/* ---- counters ------------------------------------------------------------------------- */

void neighbor_stats_text(char *out, size_t n)
{
    size_t used = 0;
    out[0] = 0;
    for (int k = 0; k < NB_KINDS && used < n; k++) {
        int w = snprintf(out + used, n - used, ", %s %llu (numacoll %llu)", g_nb_names[k],
                         (unsigned long long)READ(neighbor_calls[k]),
                         (unsigned long long)READ(neighbor_numacoll[k]));
        if (w < 0) return;
        used += (size_t)w;
    }
    if (used < n)
        snprintf(out + used, n - used, ", neighbor staged %llu",
                 (unsigned long long)READ(neighbor_staged));
}

void neighbor_stats_fill(numacoll_mpi_stats_t *o)
{
    o->neighbor_allgather_calls = READ(neighbor_calls[NB_ALLGATHER]);
    o->neighbor_allgather_numacoll = READ(neighbor_numacoll[NB_ALLGATHER]);
    o->neighbor_allgatherv_calls = READ(neighbor_calls[NB_ALLGATHERV]);
    o->neighbor_allgatherv_numacoll = READ(neighbor_numacoll[NB_ALLGATHERV]);
    o->neighbor_alltoall_calls = READ(neighbor_calls[NB_ALLTOALL]);
    o->neighbor_alltoall_numacoll = READ(neighbor_numacoll[NB_ALLTOALL]);
    o->neighbor_alltoallv_calls = READ(neighbor_calls[NB_ALLTOALLV]);
    o->neighbor_alltoallv_numacoll = READ(neighbor_numacoll[NB_ALLTOALLV]);
    o->neighbor_alltoallw_calls = READ(neighbor_calls[NB_ALLTOALLW]);
    o->neighbor_alltoallw_numacoll = READ(neighbor_numacoll[NB_ALLTOALLW]);
    o->neighbor_staged = READ(neighbor_staged);
}
