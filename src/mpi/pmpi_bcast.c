/*
 * libnumacoll_mpi: MPI_Bcast and MPI-4's MPI_Bcast_c. The fast path (a flat team, a
 * predefined contiguous datatype), the node part and the hierarchical steps, and how a
 * core status becomes an MPI error.
 */
#include "mpi_internal.h"

/* The team's first broadcast: its broadcast state is set up (collective over the node team,
 * agreed). A failure of any resource on any member (memory, descriptors, /dev/shm, a
 * setting) gives every member the same status, so all switch the communicator's node part
 * to the native MPI_Bcast for good, this call included; 1 then, else 0. */
static __attribute__((noinline)) int bcast_setup_failed(nc_comm_t *s)
{
    int rc = nc_bcast_setup(s->team);
    if (rc == NUMACOLL_OK) return 0;
    s->bcast_native = 1;
    warn_setup(s, "the shared-memory broadcast's set-up", rc);
    return 1;
}

void bcast_ready(nc_comm_t *s)
{
    if (s->team && !s->bcast_native && s->team->bcast == NULL && s->team->size > 1)
        (void)bcast_setup_failed(s);
}

/* Broadcast on the node part: the team's core broadcast (arguments already validated by
 * the callers, so straight into the core's default call; @p mark: a marked one, the large
 * path's header), or PMPI_Bcast in bytes when the node has no team or the core cannot
 * broadcast on it. Inlined: MPI_Bcast's fast path makes no call before the core's. */
__attribute__((always_inline)) static inline int node_bcast(nc_comm_t *s, void *p, size_t bytes,
                                                             int root, int mark)
{
    if (s->team && !s->bcast_native &&
        (NC_LIKELY(s->team->bcast != NULL) || s->team->size == 1 || !bcast_setup_failed(s))) {
        numacoll_team_t *t = s->team;
        if (NC_UNLIKELY(!p && bytes)) return numacoll_bcast(t, p, bytes, root); /* its error */
        nc_team_op_enter(t, "bcast");
        int rc;
        if (NC_LIKELY(!mark)) {
            rc = nc_bcast_run(t, p, bytes, root);
        } else {
            nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
            o.mark = 1;
            rc = nc_bcast_run_opts(t, p, bytes, root, &o);
        }
        if (NC_LIKELY(rc == NUMACOLL_OK)) {
            nc_team_op_leave(t);
            return rc;
        }
        if (rc != NUMACOLL_ERR_UNSUPPORTED) return rc;
        s->bcast_native = 1; /* every member gets the same answer from the core */
        warn_fallback(s, "the shared-memory broadcast", numacoll_last_error());
    }
    if (s->node_size > 1)
        return PMPI_Bcast(p, (int)bytes, MPI_BYTE, root, NODE_COMM(s)) == MPI_SUCCESS
                   ? NUMACOLL_OK
                   : NUMACOLL_ERR_OOB;
    return NUMACOLL_OK;
}

/* node_bcast for the other collectives' node steps (the reductions' result) */
int node_bcast_bytes(nc_comm_t *s, void *p, size_t bytes, int root)
{
    return node_bcast(s, p, bytes, root, 0);
}

/* The root, in the node team's ranks, of a broadcast from communicator rank @p root: itself
 * (flat), its rank in the node when it is on ours, else our node leader (team rank 0), who
 * takes the message from the leaders' broadcast and broadcasts it on the node. */
static inline int team_root(const nc_comm_t *s, int root)
{
    if (s->mode != MODE_HIER) return root;
    return s->node_of[root] == s->my_node ? s->rank_in_node[root] : 0;
}

/* NUMACOLL_BCAST_CHECK in hierarchical mode, before any data moves. The core's check
 * compares the members of one node team, and the leaders' MPI_Bcast behaves as the MPI
 * does, so alone it would let members of different nodes pass different arguments: some
 * nodes would fail and others broadcast. Here one native reduction over the whole
 * communicator finds the extremes of (root, bytes, mark) and who passed them; every member
 * gets the same result, so either all broadcast or all fail (s->check_err: MPI_ERR_ROOT
 * when the roots differ, else MPI_ERR_TRUNCATE) with a message naming two members that
 * differ. Every member takes part: the set-up agreement made the setting the same on all. */
static int hier_check(nc_comm_t *s, size_t bytes, int root, int mark)
{
    struct {
        long v;
        int rank;
    } in[6], out[6];
    long val[3] = {root, (long)bytes, mark != 0}; /* bytes (size_t)-1: unknown, erroneous */
    for (int i = 0; i < 3; i++) {
        in[2 * i].v = val[i], in[2 * i + 1].v = -val[i];
        in[2 * i].rank = in[2 * i + 1].rank = s->rank;
    }
    if (PMPI_Allreduce(in, out, 6, MPI_LONG_INT, MPI_MAXLOC, s->comm) != MPI_SUCCESS)
        return nc_error(NUMACOLL_ERR_OOB, "bcast (NUMACOLL_BCAST_CHECK): the reduction over "
                                          "the communicator failed");
    static const char *const what[3] = {"roots", "sizes", "kinds of broadcast"};
    /* roots first, then the kind (a large path's header is 8 bytes: its size says little) */
    static const int order[3] = {0, 2, 1};
    for (int j = 0; j < 3; j++) {
        int i = order[j];
        if (out[2 * i].v == -out[2 * i + 1].v) continue;
        int hi = out[2 * i].rank, lo = out[2 * i + 1].rank;
        long vh = out[2 * i].v, vl = -out[2 * i + 1].v;
        char a[64], b[64];
        if (i == 0)
            snprintf(a, sizeof a, "root %ld", vh), snprintf(b, sizeof b, "root %ld", vl);
        else if (i == 1)
            snprintf(a, sizeof a, "%ld bytes", vh), snprintf(b, sizeof b, "%ld bytes", vl);
        else
            snprintf(a, sizeof a, "the header of a broadcast of more than 2 GiB"),
                snprintf(b, sizeof b, "a broadcast of at most 2 GiB");
        s->check_err = i == 0 ? MPI_ERR_ROOT : MPI_ERR_TRUNCATE;
        return nc_error(NUMACOLL_ERR_ARG,
                        "bcast (NUMACOLL_BCAST_CHECK, all %d members of a hierarchical "
                        "communicator): members passed different %s: rank %d passed %s, but "
                        "rank %d passed %s; every member must pass the same root and size; "
                        "nobody broadcast anything",
                        s->size, what[i], hi, a, lo, b);
    }
    return NUMACOLL_OK;
}

/* the leaders' broadcast from the leader of node @p rnode (hier_step.c) */
static int leaders_bcast(nc_comm_t *s, void *p, size_t bytes, int rnode)
{
    return HIER_STEP(s, "MPI_Bcast between the node leaders",
                     PMPI_Bcast(p, (int)bytes, MPI_BYTE, rnode, s->leaders),
                     PMPI_Ibcast(p, (int)bytes, MPI_BYTE, rnode, s->leaders, HIER_REQ));
}

void bcast_join_setup(nc_comm_t *s, int root, long bytes, int mark)
{
    if (!g_active || !g_bcast || !s) return;
    if (s->mode == MODE_FLAT) bcast_ready(s);
    if (s->mode != MODE_HIER) return;
    /* NUMACOLL_BCAST_CHECK: the others' first step is hier_check's reduction over the
     * communicator; this member joins it with its own root and size (which differ from
     * theirs), so that every member fails it with a message naming this one, and nobody
     * sets anything up (the same result on every member) */
    if (g_bcast_check) {
        int rc = hier_check(s, (size_t)bytes, root, mark);
        s->check_err = 0; /* this member reports the MPI's error, not the check's */
        if (rc != NUMACOLL_OK) {
            mpi_say("numacoll-mpi: MPI_Bcast: %s\n", numacoll_last_error());
            return;
        }
    }
    hier_setups(s, HIER_SETUP_BCAST);
}

/* Broadcast @p bytes contiguous bytes at @p p (byte counts already validated); @p mark:
 * the node part marked (node_bcast). */
int bcast_bytes(nc_comm_t *s, void *p, size_t bytes, int root, int mark)
{
    if (s->mode == MODE_FLAT) return node_bcast(s, p, bytes, root, mark);
    if (g_bcast_check) {
        int rc = hier_check(s, bytes, root, mark);
        if (rc != NUMACOLL_OK) return rc;
    }
    hier_setups(s, HIER_SETUP_BCAST);
    int rnode = s->node_of[root];
    int rc = NUMACOLL_OK;
    if (s->my_node == rnode) {
        rc = node_bcast(s, p, bytes, team_root(s, root), mark);
        if (rc == NUMACOLL_OK && s->leaders != MPI_COMM_NULL && s->nnodes > 1)
            rc = leaders_bcast(s, p, bytes, rnode);
    } else {
        if (s->leaders != MPI_COMM_NULL) rc = leaders_bcast(s, p, bytes, rnode);
        if (rc == NUMACOLL_OK) rc = node_bcast(s, p, bytes, team_root(s, root), mark);
    }
    return rc;
}


/* The status of a core broadcast from @p root as MPI_Bcast returns it. ERR_UNSUPPORTED (the
 * core cannot broadcast on this team; every member gets the same answer) switches the
 * communicator to the native MPI_Bcast for good, starting with this call. */
int bcast_result(nc_comm_t *s, MPI_Comm comm, int rc, int root)
{
    if (rc == NUMACOLL_OK) return MPI_SUCCESS;
    s->broken = 1;
    if (rc == NUMACOLL_ERR_ARG) {
        /* the core detected members with different byte counts or roots */
        mpi_say("numacoll-mpi: MPI_Bcast: %s\n", numacoll_last_error());
        size_t sent = 0;
        int mark = 0, troot = -1, err = MPI_ERR_TRUNCATE;
        uint64_t head = 0;
        if (s->check_err) { /* hier_check: nothing moved, every member fails alike */
            err = s->check_err;
            s->check_err = 0;
        } else if (s->team && nc_bcast_last_mismatch(s->team, &sent, &mark, &head, &troot)) {
            /* the root the core followed (a rank of the team: of the node in hier mode) */
            int from = troot;
            if (s->mode == MODE_HIER)
                for (int r = 0; r < s->size; r++)
                    if (s->node_of[r] == s->my_node && s->rank_in_node[r] == troot) from = r;
            /* we passed another team root (as bcast_bytes chose it) than the core followed */
            if (troot != team_root(s, root)) err = MPI_ERR_ROOT;
            /* the root's message was the marked header of the large path: take its windows */
            if (mark && sent == sizeof head && head > INT_MAX) {
                mpi_say(
                        "numacoll-mpi: MPI_Bcast: the root (rank %d) sends %llu bytes (over "
                        "2 GiB); rank %d takes them into a stage and drops them\n",
                        from, (unsigned long long)head, s->rank);
                large_drain(s, head, from);
            }
        }
        PMPI_Comm_call_errhandler(comm, err);
        return err;
    }
    return raise_error_on(s, comm, "MPI_Bcast", rc);
}

/* The deferral's units of a broadcast of @p count elements of @p tsz bytes: 1 + bytes /
 * 1024 (see defer_step); 1 when the size is unknown (< 0) or absurd. From MPI_Count sizes,
 * so that MPI_Bcast and MPI_Bcast_c count a broadcast alike on every member (types over
 * 2 GiB included, whose int size is MPI_UNDEFINED). */
uint64_t bcast_units(MPI_Count count, MPI_Count tsz)
{
    uint64_t bytes;
    if (count <= 0 || tsz <= 0 || __builtin_mul_overflow((uint64_t)count, (uint64_t)tsz, &bytes))
        return 1;
    return 1 + bytes / 1024;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    /* fast path, as MPI_Barrier's: this thread's cached state of @p comm is one flat team
     * broadcasting through numacoll, the datatype a predefined contiguous one: no datatype
     * queries, straight to node_bcast (as the general path, so members may take different
     * paths in one broadcast), counters without a locked add */
    nc_comm_t *s = tl_last.state;
    size_t esz;
    if (NC_LIKELY(s && tl_last.comm == comm &&
                  tl_last.gen == atomic_load_explicit(&g_gen, memory_order_acquire) &&
                  s->mode == MODE_FLAT && s->team && !s->bcast_native && g_bcast && count >= 0 &&
                  (unsigned)root < (unsigned)s->size && buf != MPI_IN_PLACE &&
                  (esz = predefined_size(dt)) != 0 && (size_t)count * esz <= INT_MAX)) {
        BUMP(s->st_bcast_calls);
        int rc = node_bcast(s, buf, (size_t)count * esz, root, 0);
        if (NC_LIKELY(rc == NUMACOLL_OK)) {
            if (NC_LIKELY(!s->bcast_native)) BUMP(s->st_bcast_numacoll);
            return MPI_SUCCESS;
        }
        return bcast_result(s, comm, rc, root);
    }
    return bcast_general(buf, count, dt, root, comm);
}

#if MPI_VERSION >= 4
/* MPI-4's large-count broadcast. It is the same operation as MPI_Bcast, and members may
 * call either one in the same broadcast (the count type differs, the type signature is what
 * must match), so both must reach the same decision: a count that fits an int goes through
 * MPI_Bcast; a larger one is either a message of 0 bytes (a datatype of size 0: the same
 * 0-byte broadcast as any int count of it) or one of more than INT_MAX bytes, which takes
 * the large path as MPI_Bcast's messages of more than INT_MAX bytes do, after the same
 * communicator step (set-up or deferral, with the same units). Erroneous arguments get the
 * MPI's own errors. */
int MPI_Bcast_c(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (count >= 0 && count <= INT_MAX) return MPI_Bcast(buf, (int)count, dt, root, comm);
    ensure_init();
    if (!NC_HAVE(PMPI_Bcast_c) || !NC_HAVE(PMPI_Type_size_c)) return MPI_ERR_COUNT;
    MPI_Count tsz = -1;
    if (count < 0 || comm == MPI_COMM_NULL || dt == MPI_DATATYPE_NULL || buf == MPI_IN_PLACE ||
        nc_mpi4.PMPI_Type_size_c(dt, &tsz) != MPI_SUCCESS || tsz < 0)
        return nc_mpi4.PMPI_Bcast_c(buf, count, dt, root, comm); /* native semantics and errors */
    if (tsz == 0) return MPI_Bcast(buf, 0, dt, root, comm);
    return bcast_large_entry(buf, count, dt, tsz, root, comm);
}
#endif
