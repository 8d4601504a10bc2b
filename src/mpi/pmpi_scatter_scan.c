/*
 * libnumacoll_mpi: MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Scan and MPI_Exscan
 * (and MPI-4's _c versions).
 *
 * A call numacoll takes (the types and ops of MPI_Allreduce: reduce_types.c; a flat
 * communicator whose team can reduce) runs the team's numacoll_reduce_scatter(_block),
 * numacoll_scan or numacoll_exscan: rank order, the same bits at every call. The rest goes
 * to the MPI library, decided alike on every member from the arguments and the
 * communicator's agreed state, as for MPI_Allreduce: user-defined ops and other types, a
 * team whose reduction buffers could not be set up, or whose larger chunks found no
 * memory (every member fails that call before any data moved; the team's reductions then
 * stay native). On a hierarchical communicator (several nodes, NUMACOLL_FAKE_NODES) a
 * reduce-scatter is MPI_Allreduce's hierarchical reduction of the whole vector into a
 * scratch buffer (node teams, leaders' MPI step with numacoll's kernels in node order, node
 * broadcast), of which each member keeps its slice: the order of that reduction, the same
 * bits on every member. A scan there, when every node holds consecutive ranks and the
 * nodes follow each other in rank order (pseudo-nodes always; agreed: the node map is the
 * same on every member), is the node team's scan (exscan) L_m, the nodes' totals
 * T_k = x_a op ... op x_b (the node's last member has it) sent to their leaders, the
 * leaders' MPI_Exscan of the totals with numacoll's kernels as a non-commutative op (node
 * order) E_k = T_0 op ... op T_{k-1}, broadcast on node k, and E_k op L_m on the nodes after
 * the first: each prefix in rank order, grouped by node ((T_0 op T_1) op L_m), the same bits
 * at every call. Interleaved nodes, or messages over INT_MAX bytes, call the MPI library.
 */
#include "mpi_internal.h"

#include <dlfcn.h>

typedef enum { SS_RSB = 0, SS_RS = 1, SS_SCAN = 2, SS_EXSCAN = 3 } ss_kind_t;
static const char *const ss_names[] = {"MPI_Reduce_scatter_block", "MPI_Reduce_scatter",
                                       "MPI_Scan", "MPI_Exscan"};

/* one call's arguments as the application passed them */
typedef struct ss_args {
    ss_kind_t kind;
    const void *sendbuf;
    void *recvbuf;
    MPI_Count count;          /* recvcount (block), count (scans) */
    const int *icounts;       /* MPI_Reduce_scatter's recvcounts */
    const MPI_Count *ccounts; /* ... of its _c form */
    MPI_Datatype dt;
    MPI_Op op;
    MPI_Comm comm;
    int c_form; /* came through an _c entry point */
} ss_args_t;

#if MPI_VERSION >= 4
/* the MPI's _c entry points, looked up once (an MPICH 3.x-based MPI has none: NULL) */
static struct {
    __typeof__(PMPI_Reduce_scatter_block_c) *rsb;
    __typeof__(PMPI_Reduce_scatter_c) *rs;
    __typeof__(PMPI_Scan_c) *scan;
    __typeof__(PMPI_Exscan_c) *exscan;
} g_c;
static pthread_once_t g_c_once = PTHREAD_ONCE_INIT;
static void find_c(void)
{
    *(void **)&g_c.rsb = dlsym(RTLD_DEFAULT, "PMPI_Reduce_scatter_block_c");
    *(void **)&g_c.rs = dlsym(RTLD_DEFAULT, "PMPI_Reduce_scatter_c");
    *(void **)&g_c.scan = dlsym(RTLD_DEFAULT, "PMPI_Scan_c");
    *(void **)&g_c.exscan = dlsym(RTLD_DEFAULT, "PMPI_Exscan_c");
}

/* the MPI's _c call of @p a; MPI_ERR_COUNT where the MPI has none */
static int native_c(const ss_args_t *a)
{
    pthread_once(&g_c_once, find_c);
    switch (a->kind) {
    case SS_RSB:
        return g_c.rsb ? g_c.rsb(a->sendbuf, a->recvbuf, a->count, a->dt, a->op, a->comm)
                       : MPI_ERR_COUNT;
    case SS_RS:
        return g_c.rs ? g_c.rs(a->sendbuf, a->recvbuf, a->ccounts, a->dt, a->op, a->comm)
                      : MPI_ERR_COUNT;
    case SS_SCAN:
        return g_c.scan ? g_c.scan(a->sendbuf, a->recvbuf, a->count, a->dt, a->op, a->comm)
                        : MPI_ERR_COUNT;
    default:
        return g_c.exscan ? g_c.exscan(a->sendbuf, a->recvbuf, a->count, a->dt, a->op, a->comm)
                          : MPI_ERR_COUNT;
    }
}
#endif

/* the MPI library's own call of @p a */
static int native_call(const ss_args_t *a)
{
#if MPI_VERSION >= 4
    if (a->c_form) return native_c(a);
#endif
    switch (a->kind) {
    case SS_RSB:
        return PMPI_Reduce_scatter_block(a->sendbuf, a->recvbuf, (int)a->count, a->dt, a->op,
                                         a->comm);
    case SS_RS:
        return PMPI_Reduce_scatter(a->sendbuf, a->recvbuf, a->icounts, a->dt, a->op, a->comm);
    case SS_SCAN:
        return PMPI_Scan(a->sendbuf, a->recvbuf, (int)a->count, a->dt, a->op, a->comm);
    default:
        return PMPI_Exscan(a->sendbuf, a->recvbuf, (int)a->count, a->dt, a->op, a->comm);
    }
}

#if defined(MPICH_VERSION) || defined(MPICH)
/* MPICH 4.0's in-place MPI_Reduce_scatter(_block) moves a member's result to the start of
 * recvbuf with a copy that aborts when the two overlap (reproduced without numacoll). The
 * member passes a copy of its input instead: the same reduction. The copy spans the
 * input's true extent, so derived types work too. NULL (the call goes as it came) where
 * there is no memory; the caller frees *@p copy. */
static const void *in_place_copy(const ss_args_t *a, void **copy)
{
    int size = 0;
    MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
    *copy = NULL;
    if (PMPI_Comm_size(a->comm, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(a->dt, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(a->dt, &true_lb, &true_extent) != MPI_SUCCESS || extent < 0)
        return NULL;
    MPI_Count total = 0;
    for (int m = 0; m < size; m++)
        total += a->kind == SS_RSB ? a->count : a->c_form ? a->ccounts[m] : a->icounts[m];
    if (total <= 0) return NULL;
    size_t span = (size_t)(total - 1) * (size_t)extent + (size_t)true_extent;
    if (!(*copy = malloc(span ? span : 1))) return NULL;
    memcpy(*copy, (char *)a->recvbuf + true_lb, span);
    return (char *)*copy - true_lb;
}
#endif

static int native(const ss_args_t *a)
{
#if defined(MPICH_VERSION) || defined(MPICH)
    if (a->sendbuf == MPI_IN_PLACE && a->kind <= SS_RS) {
        void *copy;
        ss_args_t b = *a;
        const void *send = in_place_copy(a, &copy);
        if (send) b.sendbuf = send;
        int rc = native_call(&b);
        free(copy);
        return rc;
    }
#endif
    return native_call(a);
}

/* one more call of @p kind seen (@p numacoll 0) or run by numacoll (1); process totals:
 * these calls are not on a fast path that a shared counter would slow down */
static void count_call(ss_kind_t kind, int numacoll)
{
    _Atomic uint64_t *const c[4][2] = {
        {&g_st.reduce_scatter_block_calls, &g_st.reduce_scatter_block_numacoll},
        {&g_st.reduce_scatter_calls, &g_st.reduce_scatter_numacoll},
        {&g_st.scan_calls, &g_st.scan_numacoll},
        {&g_st.exscan_calls, &g_st.exscan_numacoll}};
    atomic_fetch_add_explicit(c[kind][numacoll], 1, memory_order_relaxed);
}

/* NUMACOLL_VERBOSE=1: say once per process that such a call went to the MPI library */
static void say_native(const char *name, const char *why)
{
    static _Atomic int said;
    int expected = 0;
    if (g_verbose < 1 || !atomic_compare_exchange_strong_explicit(&said, &expected, 1,
                                                                  memory_order_relaxed,
                                                                  memory_order_relaxed))
        return;
    mpi_say("numacoll-mpi: %s: %s; the MPI library's own runs it (said once)\n", name, why);
}

/* the recvcounts of @p a as elements of the core type (@p mult per MPI element) in @p out
 * (@p size entries) and their sum; 0 when one does not fit */
static int counts_of(const ss_args_t *a, int size, MPI_Count mult, size_t esize, size_t *out,
                     size_t *total)
{
    *total = 0;
    for (int m = 0; m < size; m++) {
        MPI_Count c = a->kind == SS_RSB ? a->count : a->c_form ? a->ccounts[m] : a->icounts[m];
        if (c < 0 || __builtin_mul_overflow((size_t)c, (size_t)mult, &out[m]) ||
            __builtin_add_overflow(*total, out[m], total) || *total > SIZE_MAX / esize)
            return 0;
    }
    return 1;
}

/* A reduce-scatter on a hierarchical communicator (see the top); a numacoll status. Every
 * member takes its scratch vector before any step (reduce_hier_memory: no data moves on
 * any member when one is short) */
static int hier_reduce_scatter(nc_comm_t *s, const ss_args_t *a, const size_t *counts,
                               size_t total, numacoll_dtype_t ct, numacoll_op_t co,
                               MPI_Datatype base)
{
    const size_t es = numacoll_dtype_size(ct), need = total ? total * es : 1;
    size_t off = 0;
    for (int m = 0; m < s->rank; m++)
        off += counts[m];
    hier_setups(s, HIER_SETUP_BCAST | HIER_SETUP_REDUCE);
    char *all = NULL;
    int go = 1;
    int rc = reduce_hier_memory(s, need, need, 1, &all, &go);
    if (!go) return rc;
    const void *input = a->sendbuf == MPI_IN_PLACE ? a->recvbuf : a->sendbuf;
    rc = reduce_hier(s, input, all, total, ct, co, base, a->op, -1);
    if (rc == NUMACOLL_OK) memcpy(a->recvbuf, all + off * es, counts[s->rank] * es);
    hier_release(s, all, rc);
    return rc;
}

enum { TAG_SCAN_TOTAL = 0x4e44 }; /* last member -> leader on the private node communicator */

/* 1 if every node holds consecutive ranks and node k's follow node k-1's */
static int nodes_in_rank_order(const nc_comm_t *s)
{
    if (!s->node_of || s->node_of[0] != 0) return 0;
    for (int r = 1; r < s->size; r++) {
        int d = s->node_of[r] - s->node_of[r - 1];
        if (d != 0 && d != 1) return 0;
    }
    return 1;
}

/* The node step of a hierarchical scan: the node's inclusive scan (@p exclusive 0) or exscan
 * of @p n elements of @p input into @p out (the node's first member's out untouched by an
 * exscan): the node team's, or the MPI's on the node communicator (with the kernel op
 * @p kop) when the node has no team or the team cannot reduce */
static int node_scan(nc_comm_t *s, const void *input, void *out, size_t n, numacoll_dtype_t ct,
                     numacoll_op_t co, MPI_Datatype base, MPI_Op kop, int exclusive)
{
    if (s->team && reduce_ready(s)) {
        nc_team_op_enter(s->team, exclusive ? "exscan" : "scan");
        int rc = nc_scan_run(s->team, input == out ? NUMACOLL_IN_PLACE : input, out, n, ct, co,
                             exclusive, "MPI_Scan/MPI_Exscan (node step)");
        if (rc == NUMACOLL_OK || rc == NUMACOLL_ERR_UNSUPPORTED) nc_team_op_leave(s->team);
        if (rc != NUMACOLL_ERR_UNSUPPORTED) return rc;
        reduce_gave_up(s); /* every member of the node alike: its MPI takes the step */
    }
    if (s->node_size == 1) {
        if (!exclusive && out != input) memcpy(out, input, n * numacoll_dtype_size(ct));
        return NUMACOLL_OK;
    }
    const void *send = input == out ? MPI_IN_PLACE : input;
    int mrc = exclusive ? PMPI_Exscan(send, out, (int)n, base, kop, s->node)
                        : PMPI_Scan(send, out, (int)n, base, kop, s->node);
    return mrc == MPI_SUCCESS ? NUMACOLL_OK : NUMACOLL_ERR_OOB;
}

/* A scan or exscan on a hierarchical communicator whose nodes are in rank order (see the
 * top); a numacoll status */
static int hier_scan(nc_comm_t *s, const ss_args_t *a, size_t n, numacoll_dtype_t ct,
                     numacoll_op_t co, MPI_Datatype base)
{
    const int exclusive = a->kind == SS_EXSCAN, leader = s->node_rank == 0;
    const int last = s->node_rank == s->node_size - 1;
    const size_t bytes = n * numacoll_dtype_size(ct);
    MPI_Op kop = reduce_kernel_op(co);
    if (kop == MPI_OP_NULL) kop = a->op;
    const void *input = a->sendbuf == MPI_IN_PLACE ? a->recvbuf : a->sendbuf;
    /* every member's scratch, before any step (reduce_hier_memory); an exscan's rank 0
     * receives nothing */
    hier_setups(s, HIER_SETUP_BCAST | HIER_SETUP_REDUCE);
    char *scratch = NULL;
    int go = 1;
    int rc = reduce_hier_memory(s, 3 * bytes + 1, 3 * bytes + 1, !(exclusive && s->rank == 0),
                                &scratch, &go);
    if (!go) return rc;
    char *total = scratch, *front = scratch + bytes, *own = scratch + 2 * bytes;
    if (exclusive && last && input == a->recvbuf) { /* the node step overwrites it */
        memcpy(own, input, bytes);
        input = own;
    }
    rc = node_scan(s, input, a->recvbuf, n, ct, co, base, kop, exclusive);
    if (rc == NUMACOLL_OK && last && s->nnodes > 1) {
        /* the node's total: our inclusive prefix (exscan: our exclusive one op our input) */
        if (exclusive && s->node_size > 1) {
            memcpy(total, input, bytes);
            rc = nc_reduce_local(ct, co, a->recvbuf, total, n);
        } else {
            memcpy(total, exclusive ? input : a->recvbuf, bytes);
        }
    }
    /* the MPI's steps, timed where every member runs with NUMACOLL_TIMEOUT (hier_step.c) */
    const int nb = (int)bytes, lastr = s->node_size - 1;
    if (rc == NUMACOLL_OK && s->nnodes > 1 && s->node_size > 1 && last)
        rc = HIER_HOP(s, "send of the node's total to its leader", 0,
                       PMPI_Send(total, nb, MPI_BYTE, 0, TAG_SCAN_TOTAL, s->node),
                       PMPI_Isend(total, nb, MPI_BYTE, 0, TAG_SCAN_TOTAL, s->node, HIER_REQ));
    else if (rc == NUMACOLL_OK && s->nnodes > 1 && s->node_size > 1 && leader)
        rc = HIER_HOP(s, "receive of the node's total at its leader", lastr,
                       PMPI_Recv(total, nb, MPI_BYTE, lastr, TAG_SCAN_TOTAL, s->node,
                                 MPI_STATUS_IGNORE),
                       PMPI_Irecv(total, nb, MPI_BYTE, lastr, TAG_SCAN_TOTAL, s->node, HIER_REQ));
    /* the leaders (ranked by node index) combine the totals in node order */
    if (rc == NUMACOLL_OK && s->nnodes > 1 && leader)
        rc = HIER_STEP(s, "MPI_Exscan between the node leaders",
                       PMPI_Exscan(total, front, (int)n, base, kop, s->leaders),
                       PMPI_Iexscan(total, front, (int)n, base, kop, s->leaders, HIER_REQ));
    if (rc == NUMACOLL_OK && s->my_node > 0) {
        rc = node_bcast_bytes(s, front, bytes, 0);
        /* the nodes' prefix in front of the node's: recvbuf = front op recvbuf */
        if (rc == NUMACOLL_OK && exclusive && leader) memcpy(a->recvbuf, front, bytes);
        else if (rc == NUMACOLL_OK) rc = nc_reduce_local(ct, co, front, a->recvbuf, n);
    }
    hier_release(s, scratch, rc); /* kept for a pending step after a timeout (hier_step.c) */
    return rc;
}

/* Erroneous counts this member sees alone (a negative count or recvcounts entry): the MPI
 * reports them, after this member has joined what the others wait in at a communicator's
 * first calls (its set-up, the deferral's count, the team's reduction set-up: flat, the
 * communicator's; hierarchical, the node team's, where the node step starts; as mv_entry
 * does), so that they wait in numacoll's call, where NUMACOLL_TIMEOUT names it, never in a
 * set-up collective it does not join. A hierarchical scan over nodes that interleave in
 * rank order goes to the MPI on every member: nothing to join. The caller has checked the
 * datatype and op (reduce_map: else every member goes to the MPI at once). */
static int native_erroneous(const ss_args_t *a, nc_comm_t *flat)
{
    nc_comm_t *s = flat ? flat : comm_get(a->comm, 1, 0);
    if (!(s && s->mode == MODE_HIER && a->kind >= SS_SCAN && !nodes_in_rank_order(s)))
        reduce_join_setup(s);
    return native(a);
}

static int ss_entry(const ss_args_t *a)
{
    const char *name = ss_names[a->kind];
    /* MPI_Scan's fast path: this thread's cached state of the communicator is one flat team
     * (its size known, no deferral, counted without a locked add on a process-wide counter) */
    nc_comm_t *flat = a->kind == SS_SCAN && g_reduce ? comm_cached_flat(a->comm) : NULL;
    int size = 0;
    if (flat) {
        BUMP(flat->st_scan_calls);
        size = flat->size;
    } else {
        ensure_init();
        count_call(a->kind, 0);
    }
    numacoll_dtype_t ct;
    numacoll_op_t co;
    MPI_Count mult = 1;
    MPI_Datatype base = MPI_DATATYPE_NULL;
    if (!flat && (a->comm == MPI_COMM_NULL ||
                  PMPI_Comm_size(a->comm, &size) != MPI_SUCCESS || size < 1))
        return native(a);
    if ((a->kind == SS_RS && !(a->c_form ? (void *)a->ccounts : (void *)a->icounts)) ||
        !reduce_map(a->dt, a->op, &ct, &co, &mult, &base)) {
        say_native(name, "a user-defined op, or a datatype or op numacoll does not reduce");
        return native(a);
    }
    if (a->count < 0) return native_erroneous(a, flat);
    const size_t esize = numacoll_dtype_size(ct);
    size_t stack_counts[64], *counts = stack_counts, total = 0, n = 0;
    int scan = a->kind >= SS_SCAN;
    if (scan) {
        if (__builtin_mul_overflow((size_t)a->count, (size_t)mult, &n) || n > SIZE_MAX / esize)
            return native(a);
        total = n;
    } else {
        if (size > 64 && !(counts = malloc((size_t)size * sizeof *counts))) return native(a);
        if (!counts_of(a, size, mult, esize, counts, &total)) {
            if (counts != stack_counts) free(counts);
            return native_erroneous(a, flat);
        }
        n = counts[0];
    }
    /* the same units on every member (the same counts and type): see defer_step. With
     * NUMACOLL_MPI_REDUCE=0 or numacoll off here too: every member joins the communicator's
     * set-up, and one that differs from the others is found in the agreement */
    nc_comm_t *s = flat ? flat
                        : comm_get(a->comm, bcast_units((MPI_Count)total, (MPI_Count)esize), 0);
    if (!g_active || !g_reduce) s = NULL;
    int rc = NUMACOLL_ERR_UNSUPPORTED;
    /* the holes of a pair type's result elements, kept as they are (exscan's rank 0 has no
     * result: its recvbuf is not significant, it may be NULL or short) */
    pad_keep_t pads;
    pad_keep(&pads, ct, base, s && !(a->kind == SS_EXSCAN && s->rank == 0) ? a->recvbuf : NULL,
             scan ? n : s ? counts[s->rank] : 0);
    if (s && s->mode == MODE_HIER && !scan) {
        rc = hier_reduce_scatter(s, a, counts, total, ct, co, base);
    } else if (s && s->mode == MODE_HIER && total * esize <= INT_MAX && nodes_in_rank_order(s)) {
        rc = hier_scan(s, a, n, ct, co, base);
    } else if (s && s->mode == MODE_FLAT && s->team && reduce_ready(s)) {
        const void *send = a->sendbuf == MPI_IN_PLACE ? NUMACOLL_IN_PLACE : a->sendbuf;
        static const char *const ops[] = {"reduce_scatter_block", "reduce_scatter", "scan",
                                          "exscan"};
        nc_team_op_enter(s->team, ops[a->kind]);
        if (scan)
            rc = nc_scan_run(s->team, send, a->recvbuf, n, ct, co, a->kind == SS_EXSCAN, name);
        else
            rc = nc_reduce_scatter_run(s->team, send, a->recvbuf,
                                       a->kind == SS_RS ? counts : NULL, n, ct, co, name);
        /* done, or nothing moved for want of memory (every member alike) */
        if (rc == NUMACOLL_OK || rc == NUMACOLL_ERR_UNSUPPORTED) nc_team_op_leave(s->team);
        if (rc == NUMACOLL_ERR_UNSUPPORTED) reduce_gave_up(s);
    }
    pad_restore(&pads);
    if (counts != stack_counts) free(counts);
    if (rc == NUMACOLL_ERR_UNSUPPORTED) return native(a); /* every member alike */
    if (rc == NUMACOLL_OK) {
        /* numacoll's when it ran the node part (as MPI_Allreduce counts) */
        if (flat)
            BUMP(flat->st_scan_numacoll);
        else if (s->mode == MODE_FLAT || s->node_size == 1 || (s->team && !s->reduce_native))
            count_call(a->kind, 1);
        return MPI_SUCCESS;
    }
    if (rc == NUMACOLL_ERR_ARG) { /* members passed different arguments: the team stays usable */
        const char *msg = numacoll_last_error(); /* the core's begins with the name */
        if (!strncmp(msg, name, strlen(name))) mpi_say("numacoll-mpi: %s\n", msg);
        else mpi_say("numacoll-mpi: %s: %s\n", name, msg);
        PMPI_Comm_call_errhandler(a->comm, MPI_ERR_ARG);
        return MPI_ERR_ARG;
    }
    s->broken = 1; /* a dead member, a timeout */
    return raise_error_on(s, a->comm, name, rc);
}

void stats_scatter_scan(char *buf, size_t n)
{
    snprintf(buf, n,
             ", MPI_Reduce_scatter_block %llu (numacoll %llu), MPI_Reduce_scatter %llu "
             "(numacoll %llu), MPI_Scan %llu (numacoll %llu), MPI_Exscan %llu (numacoll %llu)",
             (unsigned long long)READ(reduce_scatter_block_calls),
             (unsigned long long)READ(reduce_scatter_block_numacoll),
             (unsigned long long)READ(reduce_scatter_calls),
             (unsigned long long)READ(reduce_scatter_numacoll),
             (unsigned long long)READ(scan_calls), (unsigned long long)READ(scan_numacoll),
             (unsigned long long)READ(exscan_calls), (unsigned long long)READ(exscan_numacoll));
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    ss_args_t a = {SS_RSB, sendbuf, recvbuf, recvcount, NULL, NULL, dt, op, comm, 0};
    return ss_entry(&a);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    ss_args_t a = {SS_RS, sendbuf, recvbuf, 0, recvcounts, NULL, dt, op, comm, 0};
    return ss_entry(&a);
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
             MPI_Comm comm)
{
    ss_args_t a = {SS_SCAN, sendbuf, recvbuf, count, NULL, NULL, dt, op, comm, 0};
    return ss_entry(&a);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
               MPI_Comm comm)
{
    ss_args_t a = {SS_EXSCAN, sendbuf, recvbuf, count, NULL, NULL, dt, op, comm, 0};
    return ss_entry(&a);
}

#if MPI_VERSION >= 4
int MPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                               MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    ss_args_t a = {SS_RSB, sendbuf, recvbuf, recvcount, NULL, NULL, dt, op, comm, 1};
    return ss_entry(&a);
}

int MPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                         MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    ss_args_t a = {SS_RS, sendbuf, recvbuf, 0, NULL, recvcounts, dt, op, comm, 1};
    return ss_entry(&a);
}

int MPI_Scan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
               MPI_Comm comm)
{
    ss_args_t a = {SS_SCAN, sendbuf, recvbuf, count, NULL, NULL, dt, op, comm, 1};
    return ss_entry(&a);
}

int MPI_Exscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype dt,
                 MPI_Op op, MPI_Comm comm)
{
    ss_args_t a = {SS_EXSCAN, sendbuf, recvbuf, count, NULL, NULL, dt, op, comm, 1};
    return ss_entry(&a);
}
#endif
