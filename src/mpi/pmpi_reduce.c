/*
 * libnumacoll_mpi: MPI_Allreduce and MPI_Reduce (and MPI-4's _c versions).
 *
 * A call that numacoll takes (reduce_types.c: a predefined op on a predefined type or a
 * contiguous run of one; an intra-communicator set up for numacoll) runs
 *   flat:         the team's numacoll_allreduce / numacoll_reduce;
 *   hierarchical: a reduce on every node team to its leader (node rank 0), the MPI's own
 *                 allreduce (reduce) over the leaders' communicator, then, for an allreduce,
 *                 the node broadcast of the result; for a reduce whose root is not its
 *                 node's leader, the leader sends the result to the root.
 * Everything else goes to the MPI library, decided alike on every member from the arguments
 * and the communicator's agreed state.
 *
 * Order of the fold: flat, the core's (rank order, the same bits on every member and at
 * every call); hierarchical, rank order inside each node, then the nodes' results in node
 * order (the leaders' step runs numacoll's kernels as a non-commutative MPI op).
 */
#include "mpi_internal.h"

enum { TAG_REDUCE_RESULT = 0x4e43 }; /* leader -> root on the private node communicator */

static _Atomic int g_said_native;

/* NUMACOLL_VERBOSE=1: say once per process that a reduction went to the MPI library */
static void say_native(const char *name, const char *why)
{
    if (g_verbose < 1) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&g_said_native, &expected, 1,
                                                 memory_order_relaxed, memory_order_relaxed))
        return;
    mpi_say("numacoll-mpi: %s: %s; the MPI library's own runs it (said once)\n", name,
            why);
}

/* the MPI library's own reduction of the arguments as they are */
static int mpi_own(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype dt,
                   MPI_Op op, int root, MPI_Comm comm)
{
#if MPI_VERSION >= 4
    if (count > INT_MAX && (root < 0 ? !NC_HAVE(PMPI_Allreduce_c) : !NC_HAVE(PMPI_Reduce_c)))
        return MPI_ERR_COUNT;
    if (count > INT_MAX)
        return root < 0 ? nc_mpi4.PMPI_Allreduce_c(sendbuf, recvbuf, count, dt, op, comm)
                        : nc_mpi4.PMPI_Reduce_c(sendbuf, recvbuf, count, dt, op, root, comm);
#endif
    return root < 0 ? PMPI_Allreduce(sendbuf, recvbuf, (int)count, dt, op, comm)
                    : PMPI_Reduce(sendbuf, recvbuf, (int)count, dt, op, root, comm);
}

#if defined(MPICH_VERSION) || defined(MPICH)
/* MPICH 4.0's MPI_Reduce with MPI_IN_PLACE at a root other than 0 crashes above a few KiB
 * (reproduced without numacoll). Its root passes a copy of its input instead: the same
 * reduction. The copy spans the buffer's true extent, so derived types work too. NULL (and
 * the call goes as it came) where this rank is not the root or there is no memory; the
 * caller frees *@p copy. */
static const void *in_place_copy(void *recvbuf, MPI_Count count, MPI_Datatype dt, int root,
                                 MPI_Comm comm, void **copy)
{
    int rank = -1;
    MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
    *copy = NULL;
    if (count <= 0 || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || rank != root ||
        PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dt, &true_lb, &true_extent) != MPI_SUCCESS || extent < 0)
        return NULL;
    size_t span = (size_t)(count - 1) * (size_t)extent + (size_t)true_extent;
    if (!(*copy = malloc(span ? span : 1))) return NULL;
    memcpy(*copy, (char *)recvbuf + true_lb, span);
    return (char *)*copy - true_lb;
}
#endif

/* The MPI library's reduction of a call numacoll does not take (or of its steps between
 * nodes) */
static int native(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype dt,
                  MPI_Op op, int root, MPI_Comm comm)
{
#if defined(MPICH_VERSION) || defined(MPICH)
    if (sendbuf == MPI_IN_PLACE && root > 0) {
        void *copy;
        const void *send = in_place_copy(recvbuf, count, dt, root, comm, &copy);
        int rc = mpi_own(send ? send : sendbuf, recvbuf, count, dt, op, root, comm);
        free(copy);
        return rc;
    }
#endif
    return mpi_own(sendbuf, recvbuf, count, dt, op, root, comm);
}

/* native() of a call numacoll does not take, counted: in the communicator's single-writer
 * counters when it has a state (@p s), else in the process totals */
static int counted_native(nc_comm_t *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    if (s && root < 0) BUMP(s->st_allreduce_calls);
    else if (s) BUMP(s->st_reduce_calls);
    else if (root < 0) COUNT(allreduce_calls);
    else COUNT(reduce_calls);
    return native(sendbuf, recvbuf, count, dt, op, root, comm);
}

/* MPI error of a failed numacoll reduction: a mismatch of arguments between members is the
 * caller's (MPI_ERR_ARG, the team stays usable); the rest (a dead member, a timeout) breaks
 * the team */
static int result(nc_comm_t *s, MPI_Comm comm, const char *name, int rc)
{
    if (rc == NUMACOLL_OK) return MPI_SUCCESS;
    if (rc == NUMACOLL_ERR_ARG) {
        mpi_say("numacoll-mpi: %s: %s\n", name, numacoll_last_error());
        PMPI_Comm_call_errhandler(comm, MPI_ERR_ARG);
        return MPI_ERR_ARG;
    }
    s->broken = 1;
    return raise_error_on(s, comm, name, rc);
}

/* the node step of a reduce to the node's rank 0 (hierarchical mode): numacoll's, or the
 * MPI's on the node communicator when the node has no team (@p n elements of the
 * predefined type @p base) */
static int node_reduce(nc_comm_t *s, const void *input, void *out, size_t n,
                       numacoll_dtype_t ct, numacoll_op_t co, MPI_Datatype base, MPI_Op op)
{
    if (s->team && reduce_ready(s)) {
        nc_team_op_enter(s->team, "reduce");
        int rc = nc_reduce_run(s->team, s->node_rank == 0 && input == out ? NUMACOLL_IN_PLACE
                                                                          : input,
                               out, n, ct, co, 0, -1, "MPI_Allreduce/MPI_Reduce (node step)");
        if (rc == NUMACOLL_OK) nc_team_op_leave(s->team);
        if (rc != NUMACOLL_ERR_UNSUPPORTED) return rc;
        nc_team_op_leave(s->team); /* nothing moved: the node's MPI takes the step */
        reduce_gave_up(s);
    }
    if (s->node_size == 1) {
        if (out != input) memcpy(out, input, n * numacoll_dtype_size(ct));
        return NUMACOLL_OK;
    }
    const void *send = s->node_rank == 0 && input == out ? MPI_IN_PLACE : input;
    return native(send, out, (MPI_Count)n, base, op, 0, s->node) == MPI_SUCCESS
               ? NUMACOLL_OK
               : NUMACOLL_ERR_OOB;
}

/* The leaders' step of reduce_hier (@p acc: this node's result, in place), timed where
 * the communicator's members all run with NUMACOLL_TIMEOUT (hier_step.c). The timed form
 * gives the root's leader's input as a copy in @p copy (reduce_hier's buffer), never
 * MPI_IN_PLACE (MPICH 4.0's in-place reduce at a root other than 0: see in_place_copy).
 * Counts over INT_MAX take the blocking form (MPI-3 has no large-count nonblocking
 * reductions). */
static int leaders_reduce(nc_comm_t *s, void *acc, size_t n, size_t bytes, MPI_Datatype base,
                          MPI_Op op, int root, void *copy)
{
    const MPI_Count cnt = (MPI_Count)n;
    const int lroot = root < 0 ? -1 : s->node_of[root]; /* leaders are ranked by node */
    if (!s->step_timeout_ns || n > INT_MAX) {
        /* native() passes MPICH a copy at an in-place root */
        int mrc = root < 0 ? native(MPI_IN_PLACE, acc, cnt, base, op, -1, s->leaders)
                  : lroot != s->my_node
                          ? native(acc, NULL, cnt, base, op, lroot, s->leaders)
                          : native(MPI_IN_PLACE, acc, cnt, base, op, lroot, s->leaders);
        return hier_step_status(mrc, "reduction between the node leaders");
    }
    MPI_Request rq = MPI_REQUEST_NULL;
    if (root < 0)
        return hier_step_wait(
                s, PMPI_Iallreduce(MPI_IN_PLACE, acc, (int)n, base, op, s->leaders, &rq), &rq,
                "MPI_Allreduce between the node leaders", -1);
    if (lroot != s->my_node)
        return hier_step_wait(s, PMPI_Ireduce(acc, NULL, (int)n, base, op, lroot, s->leaders, &rq),
                              &rq, "MPI_Reduce between the node leaders", -1);
    memcpy(copy, acc, bytes);
    return hier_step_wait(s, PMPI_Ireduce(copy, acc, (int)n, base, op, lroot, s->leaders, &rq),
                          &rq, "MPI_Reduce between the node leaders", -1);
}

/* the reductions' node step of the memory agreement (hier_memory.c): the minimum of the
 * node's records at its leader, by the node's reduce (numacoll's or the MPI's) */
static int reduce_node_min(nc_comm_t *s, int *rec, int *short_here)
{
    (void)short_here; /* the step needs no memory */
    return node_reduce(s, rec, s->node_rank == 0 ? rec : NULL, 3, NUMACOLL_INT32,
                       NUMACOLL_OP_MIN, MPI_INT, MPI_MIN);
}

int reduce_hier_memory(nc_comm_t *s, size_t mine, size_t most, int receives, char **buf,
                       int *go)
{
    *buf = NULL;
    *go = 1;
    if (most == 0) return NUMACOLL_OK;
    char *room;
    const int agree = hier_room_begin(s, most, &room);
    int short_here = 0;
    if (mine && !(*buf = room ? room : malloc(mine)))
        short_here = 1, nc_error(NUMACOLL_ERR_NOMEM,
                                 "out of memory for the %zu bytes of this call's scratch "
                                 "buffers (hierarchical mode)",
                                 mine);
    if (!agree) return short_here ? NUMACOLL_ERR_NOMEM : NUMACOLL_OK;
    int rc = hier_agree_memory(s, short_here, receives, reduce_node_min, go);
    if (!*go) {
        hier_release(s, *buf, rc);
        *buf = NULL;
    }
    return rc;
}

/* The MPI library's steps take @p n elements of the predefined type @p base, not the
 * caller's count and datatype: Open MPI 4.1 rejects predefined ops on a derived type.
 * Memory: a rooted reduce's leaders need the node's result where it is not their output
 * (every leader but the root) and, when the leaders' step is timed, the root's node's
 * leader a copy of it (leaders_reduce); both come from one buffer taken before any step
 * (reduce_hier_memory). An allreduce needs none. */
int reduce_hier(nc_comm_t *s, const void *input, void *recvbuf, size_t n, numacoll_dtype_t ct,
                numacoll_op_t co, MPI_Datatype base, MPI_Op op, int root)
{
    const size_t bytes = n * numacoll_dtype_size(ct);
    const size_t slot = ((bytes ? bytes : 1) + 15) & ~(size_t)15; /* aligned for any type */
    const int leader = s->node_rank == 0;
    const int timed = s->step_timeout_ns && n <= INT_MAX && s->nnodes > 1;
    const int needs_acc = leader && root >= 0 && root != s->rank;
    const int needs_copy = leader && root >= 0 && timed && s->node_of[root] == s->my_node;
    hier_setups(s, HIER_SETUP_BCAST | HIER_SETUP_REDUCE);
    char *buf = NULL;
    int go = 1;
    int rc = reduce_hier_memory(s, (size_t)(needs_acc + needs_copy) * slot,
                                root < 0 ? 0 : (timed ? 2 : 1) * slot,
                                root < 0 || root == s->rank, &buf, &go);
    if (!go) return rc;
    /* where the node's leader collects its node's result: the output when it gets the
     * result anyway, else the buffer */
    void *acc = !leader ? NULL : needs_acc ? buf : recvbuf;
    void *copy = needs_copy ? buf + (needs_acc ? slot : 0) : NULL;
    /* the MPI library's steps run numacoll's kernels as a non-commutative op
     * (reduce_types.c): numacoll's arithmetic, and the nodes' results in node order */
    MPI_Op kernel_op = reduce_kernel_op(co);
    if (kernel_op != MPI_OP_NULL) op = kernel_op;
    rc = node_reduce(s, input, acc, n, ct, co, base, op);
    if (rc == NUMACOLL_OK && leader && s->nnodes > 1)
        rc = leaders_reduce(s, acc, n, bytes, base, op, root, copy);
    if (root < 0) {
        if (rc == NUMACOLL_OK) rc = node_bcast_bytes(s, recvbuf, bytes, 0);
    } else if (rc == NUMACOLL_OK && s->node_of[root] == s->my_node && s->rank_in_node[root] != 0) {
        /* the root is on our node but not its leader: the leader sends it the result */
        int dest = s->rank_in_node[root];
        if (leader)
            rc = HIER_HOP(s, "send of the result from the node leader to the root", dest,
                           PMPI_Send(acc, (int)bytes, MPI_BYTE, dest, TAG_REDUCE_RESULT, s->node),
                           PMPI_Isend(acc, (int)bytes, MPI_BYTE, dest, TAG_REDUCE_RESULT,
                                      s->node, HIER_REQ));
        else if (s->rank == root)
            rc = HIER_HOP(s, "receive of the result from the node leader at the root", 0,
                           PMPI_Recv(recvbuf, (int)bytes, MPI_BYTE, 0, TAG_REDUCE_RESULT,
                                     s->node, MPI_STATUS_IGNORE),
                           PMPI_Irecv(recvbuf, (int)bytes, MPI_BYTE, 0, TAG_REDUCE_RESULT,
                                      s->node, HIER_REQ));
    }
    hier_release(s, buf, rc); /* kept for a pending step after a timeout (hier_step.c) */
    return rc;
}

/* Erroneous arguments this member sees alone (a negative count, a root out of range): the
 * MPI reports them, after this member has joined what the others wait in at a
 * communicator's first calls (its set-up and the deferral's count, the team's reduction
 * set-up: flat, the communicator's; hierarchical, the node team's), so that they wait in
 * numacoll's call, where NUMACOLL_TIMEOUT names it, never in a set-up collective it does
 * not join (as the gather family's mv_entry). The caller has checked that the others take
 * numacoll's way (reduce_map: a datatype and op numacoll reduces, alike on every member;
 * else nobody joins anything). @p s: the communicator's state when known. */
static int erroneous_native(nc_comm_t *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    if (!s) s = comm_get(comm, 1, 0);
    reduce_join_setup(s);
    return counted_native(s, sendbuf, recvbuf, count, dt, op, root, comm);
}

int reduce_entry(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                 int root, MPI_Comm comm)
{
    ensure_init();
    const char *name = root < 0 ? "MPI_Allreduce" : "MPI_Reduce";
    numacoll_dtype_t ct;
    numacoll_op_t co;
    MPI_Count mult = 1;
    MPI_Datatype base = MPI_DATATYPE_NULL;
    if (comm == MPI_COMM_NULL)
        return counted_native(NULL, sendbuf, recvbuf, count, dt, op, root, comm);
    /* the datatype and op first: where numacoll does not reduce them, every member goes to
     * the MPI without a communicator step, so one with erroneous arguments must too */
    if (!reduce_map(dt, op, &ct, &co, &mult, &base)) {
        say_native(name, "a user-defined op, or a datatype or op numacoll does not reduce");
        return counted_native(NULL, sendbuf, recvbuf, count, dt, op, root, comm);
    }
    if (count < 0 || root < -1) /* MPI_ROOT, MPI_PROC_NULL (intercommunicators) too */
        return erroneous_native(NULL, sendbuf, recvbuf, count, dt, op, root, comm);
    size_t esize = numacoll_dtype_size(ct), n;
    if (__builtin_mul_overflow((size_t)count, (size_t)mult, &n) || n > SIZE_MAX / esize)
        return counted_native(NULL, sendbuf, recvbuf, count, dt, op, root, comm);
    /* the same units on every member (the same count and type): see defer_step. With
     * NUMACOLL_MPI_REDUCE=0 or numacoll off here too: every member joins the communicator's
     * set-up, and one that differs from the others is found in the agreement */
    nc_comm_t *s = comm_get(comm, bcast_units((MPI_Count)n, (MPI_Count)esize), 0);
    if (!g_active || !g_reduce || !s || s->mode == MODE_PASS || s->mode == MODE_DEFER ||
        (s->mode == MODE_FLAT && (!s->team || s->reduce_native)))
        return counted_native(s, sendbuf, recvbuf, count, dt, op, root, comm);
    if (root >= s->size) return erroneous_native(s, sendbuf, recvbuf, count, dt, op, root, comm);
    if (root < 0) BUMP(s->st_allreduce_calls);
    else BUMP(s->st_reduce_calls);
    int gets_result = root < 0 || root == s->rank;
    const void *input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    int rc;
    if (s->mode == MODE_FLAT && !reduce_ready(s)) /* counted above, not as numacoll's */
        return native(sendbuf, recvbuf, count, dt, op, root, comm);
    /* erroneous: the MPI's error, after the set-up (as erroneous_native) */
    if (sendbuf == MPI_IN_PLACE && !gets_result)
        return native(sendbuf, recvbuf, count, dt, op, root, comm); /* counted above */
    pad_keep_t pads; /* the holes of a pair type's result elements, kept as they are */
    pad_keep(&pads, ct, base, gets_result ? recvbuf : NULL, n);
    if (s->mode == MODE_FLAT) {
        nc_team_op_enter(s->team, root < 0 ? "allreduce" : "reduce");
        rc = nc_reduce_run(s->team, sendbuf == MPI_IN_PLACE ? NUMACOLL_IN_PLACE : sendbuf,
                           gets_result ? recvbuf : NULL, n, ct, co, root, -1, name);
        if (rc == NUMACOLL_OK) nc_team_op_leave(s->team);
        if (rc == NUMACOLL_ERR_UNSUPPORTED) { /* every member alike, nothing moved */
            nc_team_op_leave(s->team);
            reduce_gave_up(s);
            pad_restore(&pads);
            return native(sendbuf, recvbuf, count, dt, op, root, comm);
        }
    } else {
        rc = reduce_hier(s, input, recvbuf, n, ct, co, base, op, root);
    }
    pad_restore(&pads);
    /* numacoll's when it ran the node part (hierarchical: a node of one member has none) */
    if (rc == NUMACOLL_OK &&
        (s->mode == MODE_FLAT || s->node_size == 1 || (s->team && !s->reduce_native))) {
        if (root < 0) BUMP(s->st_allreduce_numacoll);
        else BUMP(s->st_reduce_numacoll);
    }
    return result(s, comm, name, rc);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm)
{
    return reduce_entry(sendbuf, recvbuf, count, dt, op, -1, comm);
}

/* MPI_Reduce with a negative root (reduce_entry's root -1 means an allreduce): MPI_ROOT and
 * MPI_PROC_NULL of an intercommunicator go to the MPI at once; on an intracommunicator the
 * root is erroneous, and this member first joins what the others wait in
 * (erroneous_native's reason), then the MPI reports it. */
static int reduce_negative_root(const void *sendbuf, void *recvbuf, MPI_Count count,
                                MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    ensure_init();
    int inter = 1;
    numacoll_dtype_t ct;
    numacoll_op_t co;
    MPI_Count mult = 1;
    MPI_Datatype base = MPI_DATATYPE_NULL;
    /* the others take numacoll's way only with a datatype and op it reduces (reduce_entry) */
    if (comm != MPI_COMM_NULL && PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && !inter &&
        reduce_map(dt, op, &ct, &co, &mult, &base)) {
        nc_comm_t *s = comm_get(comm, 1, 0);
        reduce_join_setup(s);
        if (s) BUMP(s->st_reduce_calls);
        else COUNT(reduce_calls);
    } else {
        COUNT(reduce_calls);
    }
#if MPI_VERSION >= 4
    if (count > INT_MAX)
        return NC_HAVE(PMPI_Reduce_c)
                   ? nc_mpi4.PMPI_Reduce_c(sendbuf, recvbuf, count, dt, op, root, comm)
                   : MPI_ERR_COUNT;
#endif
    return PMPI_Reduce(sendbuf, recvbuf, (int)count, dt, op, root, comm);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm)
{
    if (root < 0) return reduce_negative_root(sendbuf, recvbuf, count, dt, op, root, comm);
    return reduce_entry(sendbuf, recvbuf, count, dt, op, root, comm);
}

#if MPI_VERSION >= 4
int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype dt,
                    MPI_Op op, MPI_Comm comm)
{
    return reduce_entry(sendbuf, recvbuf, count, dt, op, -1, comm);
}

int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                 int root, MPI_Comm comm)
{
    if (root < 0) return reduce_negative_root(sendbuf, recvbuf, count, dt, op, root, comm);
    return reduce_entry(sendbuf, recvbuf, count, dt, op, root, comm);
}
#endif
