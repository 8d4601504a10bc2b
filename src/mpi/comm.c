/*
 * libnumacoll_mpi: a communicator's state. MPI_Barrier and MPI_Bcast (and their Fortran
 * entry points) call the MPI library through PMPI_*. Each communicator gets, at its first
 * collective, a small state record cached as an attribute (keyval with a delete callback, so
 * MPI_Comm_free releases it; an attribute on MPI_COMM_SELF releases whatever is left at
 * MPI_Finalize, before the MPI library tears itself down):
 *
 *   pass-through  intercommunicators, size 1, a member with NUMACOLL_DISABLE=1 or an
 *                 invalid configuration, failed team creation: the native collective.
 *   flat          all members on one node: one numacoll team over the communicator, its
 *                 OOB allgather is PMPI_Allgather on the communicator itself.
 *   hierarchical  several nodes (or NUMACOLL_FAKE_NODES pseudo-nodes): a team per node
 *                 (PMPI_Comm_split_type SHARED, then split into pseudo-nodes), one leader
 *                 per node, and the MPI library's own collective on the leaders'
 *                 communicator for the inter-node step.
 *
 * Whether a communicator is flat or hierarchical, and whether anything at all is done,
 * is agreed by one PMPI_Allgather of a small record (node key, configuration state) so
 * that all members always take the same path. A process where numacoll is off (disabled
 * or misconfigured) takes part in that allgather too: were it to skip it, the others
 * would wait for it there forever.
 */
#include "mpi_internal.h"

void comm_state_free(nc_comm_t *s)
{
    if (!s) return;
    if (s->team && !idle_put(s)) {
        numacoll_team_destroy(s->team);
        COUNT(teams_destroyed);
    }
    if (s->leaders != MPI_COMM_NULL) PMPI_Comm_free(&s->leaders);
    if (s->node != MPI_COMM_NULL) PMPI_Comm_free(&s->node);
    free(s->node_of);
    free(s->mem_room);
    free(s->rank_in_node);
    free(s->nbr_sources);
    free(s->nbr_destinations);
    free(s);
}

/* move a communicator's single-writer counter into a process total (under g_lock) */
static void fold(_Atomic uint64_t *total, _Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(total, atomic_load_explicit(c, memory_order_relaxed),
                              memory_order_relaxed);
    atomic_store_explicit(c, 0, memory_order_relaxed);
}

void list_remove_locked(nc_comm_t *s)
{
    /* keep the communicator's counts in the process totals */
    fold(&g_st.barrier_calls, &s->st_barrier_calls);
    fold(&g_st.barrier_numacoll, &s->st_barrier_numacoll);
    fold(&g_st.bcast_calls, &s->st_bcast_calls);
    fold(&g_st.bcast_numacoll, &s->st_bcast_numacoll);
    fold(&g_st.allreduce_calls, &s->st_allreduce_calls);
    fold(&g_st.allreduce_numacoll, &s->st_allreduce_numacoll);
    fold(&g_st.reduce_calls, &s->st_reduce_calls);
    fold(&g_st.reduce_numacoll, &s->st_reduce_numacoll);
    for (int k = 0; k < 6; k++) {
        fold(&g_st.move_calls[k], &s->st_move_calls[k]);
        fold(&g_st.move_numacoll[k], &s->st_move_numacoll[k]);
    }
    fold(&g_st.move_staged, &s->st_move_staged);
    fold(&g_st.alltoall_calls, &s->st_alltoall_calls);
    fold(&g_st.alltoall_numacoll, &s->st_alltoall_numacoll);
    fold(&g_st.alltoallv_calls, &s->st_alltoallv_calls);
    fold(&g_st.alltoallv_numacoll, &s->st_alltoallv_numacoll);
    fold(&g_st.alltoall_staged, &s->st_alltoall_staged);
    fold(&g_st.alltoallw_calls, &s->st_alltoallw_calls);
    fold(&g_st.alltoallw_numacoll, &s->st_alltoallw_numacoll);
    fold(&g_st.scan_calls, &s->st_scan_calls);
    fold(&g_st.scan_numacoll, &s->st_scan_numacoll);
    if (s->prev)
        s->prev->next = s->next;
    else if (g_list == s)
        g_list = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

int comm_delete_cb(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    nc_comm_t *s = attr;
    if (!s) return MPI_SUCCESS;
    /* release: a thread that sees the new generation no longer trusts its cached entry */
    atomic_fetch_add_explicit(&g_gen, 1, memory_order_acq_rel);
    pthread_mutex_lock(&g_lock);
    list_remove_locked(s);
    pthread_mutex_unlock(&g_lock);
    if (s->mode == MODE_FLAT || s->mode == MODE_HIER) COUNT(comms_freed);
    comm_state_free(s);
    return MPI_SUCCESS;
}

/* How many processes of this job the launcher started on this node (nc_job_node_procs:
 * the variable of the launcher in use, Open MPI's, Hydra's, MVAPICH's mpirun_rsh's or
 * Slurm's srun's); 0 when none says. A team counts as oversubscribed when the job has more
 * processes on the node than the node has CPUs, even if the team's own members would fit
 * (numacoll_team_params_t.node_procs). With NUMACOLL_VERBOSE=1 the first call of each
 * process says where the count came from, or why there is none. */
static int job_node_procs(void)
{
    static atomic_int said; /* relaxed: it guards the message only, no data */
    nc_job_node_procs_t j;
    nc_job_node_procs(&j);
    if (g_verbose >= 1 && !atomic_exchange_explicit(&said, 1, memory_order_relaxed)) {
        if (j.problem[0]) mpi_say("numacoll-mpi[%s]: %s\n", NC_FLAVOR, j.problem);
        else if (j.count > 0)
            mpi_say("numacoll-mpi[%s]: the job has %d processes on this node (%s)\n",
                    NC_FLAVOR, j.count, j.source);
        else
            mpi_say("numacoll-mpi[%s]: no launcher variable gives the job's processes on "
                    "this node (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS, "
                    "MV2_COMM_WORLD_LOCAL_SIZE, PALS_LOCAL_SIZE, PMI_LOCAL_SIZE, "
                    "SLURM_STEP_TASKS_PER_NODE): a team counts as "
                    "oversubscribed by its own members only\n",
                    NC_FLAVOR);
    }
    return j.count;
}

/* this node's online CPUs (0 = unknown), as the core's teams count them */
static int node_cpus_online(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 && online < (1L << 24) ? (int)online : 0;
}

/* NUMACOLL_OVERSUBSCRIBED as a number: 1 yes, -1 no, 0 auto */
static int oversub_mode(void)
{
    const char *mode = nc_cfg_str(NC_CFG_OVERSUBSCRIBED);
    return strcmp(mode, "yes") == 0 ? 1 : strcmp(mode, "no") == 0 ? -1 : 0;
}

static numacoll_team_t *make_team(nc_comm_t *s, MPI_Comm over, const char *label)
{
    numacoll_team_params_t p;
    memset(&p, 0, sizeof p);
    s->oob_comm = over;
    PMPI_Comm_rank(over, &p.rank);
    PMPI_Comm_size(over, &p.size);
    p.allgather = oob_allgather;
    p.oob_ctx = &s->oob_comm;
    p.progress = mpi_progress;
    p.progress_ctx = &s->oob_comm;
    p.name = label;
    p.node_procs = job_node_procs();
    numacoll_team_t *t = NULL;
    int rc = numacoll_team_create(&p, &t);
    if (rc != NUMACOLL_OK) {
        COUNT(team_failures);
        warn_setup(s, "numacoll team creation", rc); /* a setting that differs: always said */
        return NULL;
    }
    COUNT(teams_created);
    return t;
}

typedef struct agree_rec {
    uint64_t key;
    uint64_t cand_id[REUSE_CANDIDATES][2]; /* identities of the reserved idle teams */
    int32_t ncand;                         /* ... how many */
    uint32_t cand_bcast; /* bit i: candidate i still has its broadcast state */
    int32_t active;
    int32_t fake;
    int32_t force;    /* this member asks for the set-up now (an explicit numacoll call) */
    uint64_t units;   /* this call's units (see defer_step) */
    int32_t bcast_on; /* NUMACOLL_MPI_BCAST */
    int32_t reduce_on; /* NUMACOLL_MPI_REDUCE */
    int32_t check;    /* NUMACOLL_BCAST_CHECK (hierarchical mode: a collective per broadcast) */
    int32_t gather_on; /* NUMACOLL_MPI_GATHER */
    int32_t timed;     /* NUMACOLL_TIMEOUT set (hierarchical mode: the MPI steps' form) */
    uint64_t setup_after; /* NUMACOLL_MPI_SETUP_AFTER: the members' largest applies */
    uint64_t setup_after_oversub; /* NUMACOLL_MPI_SETUP_AFTER_OVERSUB: ... on a crowded node */
    int32_t node_cpus;  /* this node's online CPUs */
    int32_t node_procs; /* the job's processes on this node (job_node_procs; 0 = unknown) */
    int32_t oversub_mode; /* NUMACOLL_OVERSUBSCRIBED: 0 auto, 1 yes, -1 no */
} agree_rec_t;

/* Whether a member of the agreement @p all (@p size records) sits on a crowded node: its
 * node has more of the communicator's members, or of the job's processes, than online
 * CPUs (or the member's NUMACOLL_OVERSUBSCRIBED says so). The native calls are slow there
 * (MPICH: about 10 ms per small allreduce at np 4 on 2 CPUs), so a team pays for itself
 * after fewer calls. The same result on every member: it rests on @p all only. */
static int crowded_node(const agree_rec_t *all, int size)
{
    for (int r = 0; r < size; r++) {
        if (all[r].oversub_mode != 0) {
            if (all[r].oversub_mode > 0) return 1;
            continue;
        }
        if (all[r].node_cpus <= 0) continue;
        /* the launcher's count holds every member on the node; without it, count them
         * (stopping once they outnumber the CPUs) */
        int procs = all[r].node_procs;
        if (procs == 0)
            for (int q = 0; q < size && procs <= all[r].node_cpus; q++)
                procs += all[q].key == all[r].key;
        if (procs > all[r].node_cpus) return 1;
    }
    return 0;
}

/* The idle team every member of the agreement @p all (@p size records) proposed: the first
 * of rank 0's candidates that each member's list holds. Sets *@p mine to its index in the
 * list of member @p rank (-1: none in common) and *@p bcast_all to whether every member
 * kept its broadcast state. The same result on every member: it rests on @p all only. */
static void reuse_choice(const agree_rec_t *all, int size, int rank, int *mine, int *bcast_all)
{
    *mine = -1;
    *bcast_all = 0;
    for (int c = 0; c < all[0].ncand && c < REUSE_CANDIDATES; c++) {
        const uint64_t *id = all[0].cand_id[c];
        int everyone = 1, bcast = 1, at_me = -1;
        for (int r = 0; r < size && everyone; r++) {
            int at = -1;
            for (int i = 0; i < all[r].ncand && i < REUSE_CANDIDATES && at < 0; i++)
                if (all[r].cand_id[i][0] == id[0] && all[r].cand_id[i][1] == id[1]) at = i;
            everyone = at >= 0;
            if (at >= 0 && !(all[r].cand_bcast >> at & 1u)) bcast = 0;
            if (r == rank) at_me = at;
        }
        if (everyone) {
            *mine = at_me;
            *bcast_all = bcast;
            return;
        }
    }
}

/* Collective over comm (its first numacoll collective, or the call that ends its deferral
 * with @p force set): build the state. Unless a member forces it or an idle team with the
 * same members is there to reuse, a first call whose @p units stay below
 * NUMACOLL_MPI_SETUP_AFTER on every member only defers (MODE_DEFER, see defer_step). */
static nc_comm_t *comm_setup(MPI_Comm comm, uint64_t units, int force)
{
    nc_comm_t *s = comm_alloc();
    if (!s) return NULL;
    s->comm = comm;
    s->node = s->leaders = s->oob_comm = MPI_COMM_NULL;
    s->mode = MODE_PASS;
    PMPI_Comm_rank(comm, &s->rank);
    PMPI_Comm_size(comm, &s->size);
    char label[MPI_MAX_OBJECT_NAME];
    comm_label(comm, label, sizeof label);

    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter || s->size == 1) return s; /* local decisions, identical on every member */

    uint64_t sig = members_sig(comm, s->size);
    agree_rec_t *all = malloc((size_t)s->size * sizeof *all);
    if (!all) return s; /* cannot happen in practice; the others would hang: abort-free */
    numacoll_team_t *cand[REUSE_CANDIDATES];
    int ncand = sig && g_active ? idle_reserve(sig, cand) : 0;
    agree_rec_t me = {.key = node_key_now(),
                      .ncand = ncand,
                      .active = g_active,
                      .fake = g_fake_nodes,
                      .force = force,
                      .units = units,
                      .bcast_on = g_bcast,
                      .reduce_on = g_reduce,
                      .check = g_bcast_check,
                      .gather_on = g_gather,
                      .timed = nc_cfg_double(NC_CFG_TIMEOUT) > 0,
                      .setup_after = g_setup_after,
                      .setup_after_oversub = g_setup_after_oversub,
                      .node_cpus = node_cpus_online(),
                      .node_procs = job_node_procs(),
                      .oversub_mode = oversub_mode()};
    for (int i = 0; i < ncand; i++) {
        numacoll_team_id(cand[i], me.cand_id[i]);
        if (cand[i]->bcast) me.cand_bcast |= 1u << i;
    }
    if (PMPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, comm) !=
        MPI_SUCCESS) {
        free(all);
        idle_release(cand, ncand, -1, sig);
        return s;
    }
    int bcast_all = 0, mine = -1; /* the shared candidate: its index in this member's list */
    reuse_choice(all, s->size, s->rank, &mine, &bcast_all);
    int distinct = 1, fake = all[0].fake, forced = 0;
    int unknown_node = 0, inactive = 0, differ_fake = 0, differ_bcast = 0, differ_check = 0, differ_reduce = 0;
    int differ_gather = 0, first_active = -1, all_timed = 1;
    uint64_t most = 0, after = 0, after_crowded = 0;
    for (int r = 0; r < s->size; r++) {
        inactive += !all[r].active;
        if (all[r].active && first_active < 0) first_active = r;
        unknown_node += all[r].key == 0;
        differ_fake |= all[r].fake != fake;
        differ_bcast |= all[r].bcast_on != all[0].bcast_on;
        differ_reduce |= all[r].reduce_on != all[0].reduce_on;
        differ_check |= all[r].check != all[0].check;
        differ_gather |= all[r].gather_on != all[0].gather_on;
        all_timed &= all[r].timed != 0;
        if (all[r].force) forced = 1;
        if (all[r].units > most) most = all[r].units;
        if (all[r].setup_after > after) after = all[r].setup_after;
        if (all[r].setup_after_oversub > after_crowded) after_crowded = all[r].setup_after_oversub;
        int seen = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = all[q].key == all[r].key;
        if (!seen && r > 0) distinct++;
    }
    const int crowded = crowded_node(all, s->size);
    if (crowded && after_crowded < after) after = after_crowded;
    free(all);
    int agreed = !unknown_node && !inactive && !differ_fake && !differ_bcast && !differ_check &&
                 !differ_reduce && !differ_gather;
    /* reuse a reserved team only if every member reserved that very team */
    int reuse = mine >= 0 && agreed && distinct == 1 && fake <= 1;
    idle_release(cand, ncand, reuse ? mine : -1, sig);
    if (!agreed) {
        /* pass-through on every member (the same records everywhere); a warning from the
         * members that run numacoll, unless every member is inactive (numacoll off) */
        if (g_active) {
            char why[200];
            if (unknown_node)
                snprintf(why, sizeof why,
                         "%d of %d members could not tell their node (the kernel's boot id "
                         "unreadable: out of file descriptors?)",
                         unknown_node, s->size);
            else if (inactive)
                snprintf(why, sizeof why,
                         "%d of %d members run with NUMACOLL_DISABLE=1 or an invalid numacoll "
                         "setting",
                         inactive, s->size);
            else {
                /* the settings that differ, joined by " and " */
                const struct {
                    int differ;
                    const char *name;
                } set[] = {{differ_fake, "NUMACOLL_FAKE_NODES"},
                           {differ_bcast, "NUMACOLL_MPI_BCAST"},
                           {differ_reduce, "NUMACOLL_MPI_REDUCE"},
                           {differ_check, "NUMACOLL_BCAST_CHECK"},
                           {differ_gather, "NUMACOLL_MPI_GATHER"}};
                size_t o = (size_t)snprintf(why, sizeof why, "members differ in");
                const char *sep = " ";
                for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
                    if (set[i].differ && o < sizeof why) {
                        o += (size_t)snprintf(why + o, sizeof why - o, "%s%s", sep, set[i].name);
                        sep = " and ";
                    }
            }
            if (unknown_node)
                warn_fallback(s, "agreement on the numacoll configuration", why);
            else if (s->rank == first_active) /* the members' settings: always said, once */
                warn_config(s, why);
        }
        return s;
    }
    if (!reuse && !forced && most < after) {
        /* the same decision on every member: it rests on the allgather's records only,
         * the threshold too (members may differ in it: each deciding by its own, one would
         * set up, a collective, while another went on natively) */
        s->mode = MODE_DEFER;
        s->defer_calls = 1;
        s->defer_units = most;
        s->defer_after = after;
        COUNT(comms_deferred);
        static _Atomic int said_once;
        if (g_verbose == 1 && s->rank == 0 &&
            !atomic_exchange_explicit(&said_once, 1, memory_order_relaxed))
            mpi_say("numacoll-mpi[%s]: %s (size %d) and later communicators run their first "
                    "calls through the MPI library until their calls add up to "
                    "NUMACOLL_MPI_SETUP_AFTER%s (here %llu units); NUMACOLL_MPI_SETUP_AFTER=0 "
                    "sets them up at once (said once; NUMACOLL_VERBOSE=2 says it for each)\n",
                    NC_FLAVOR, label, s->size, crowded ? "_OVERSUB" : "",
                    (unsigned long long)after);
        if (g_verbose >= 2 && s->rank == 0)
            mpi_say(
                    "numacoll-mpi[%s]: %s (size %d): native calls until they add up to %llu "
                    "units (the members' largest NUMACOLL_MPI_SETUP_AFTER%s), then numacoll "
                    "sets it up\n",
                    NC_FLAVOR, label, s->size, (unsigned long long)after,
                    crowded ? "_OVERSUB: a node has more processes than CPUs" : "");
        return s;
    }

    if (distinct == 1 && fake <= 1) {
        s->sig = sig;
        s->oob_comm = comm;
        if (reuse) s->team = cand[mine]; /* every member reserved this very team */
        if (s->team) {
            /* a kept broadcast state only if every member kept its own (see idle_insert) */
            if (!bcast_all)
                nc_bcast_team_fini(s->team);
            else
                COUNT(bcast_states_kept);
            /* the team's OOB callbacks now use this communicator */
            s->team->oob_ctx = &s->oob_comm;
            s->team->progress_ctx = &s->oob_comm;
            snprintf(s->team->name, sizeof s->team->name, "%s", label);
            COUNT(teams_reused);
        } else {
            s->team = make_team(s, comm, label);
        }
        if (!s->team) return s;
        s->mode = MODE_FLAT;
        s->node_size = s->size;
        s->node_rank = s->rank;
        s->nnodes = 1;
    } else {
        /* every member the same form of the MPI steps (hier_step.c): nonblocking and
         * timed only where every member runs with NUMACOLL_TIMEOUT */
        if (all_timed) s->step_timeout_ns = (uint64_t)(nc_cfg_double(NC_CFG_TIMEOUT) * 1e9);
        MPI_Comm shm = MPI_COMM_NULL;
        if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, s->rank, MPI_INFO_NULL, &shm) !=
            MPI_SUCCESS)
            return s;
        if (fake > 1) {
            int sr, ss;
            PMPI_Comm_rank(shm, &sr);
            PMPI_Comm_size(shm, &ss);
            int k = fake < ss ? fake : ss;
            int color = (int)((long)sr * k / ss);
            int rc = PMPI_Comm_split(shm, color, sr, &s->node);
            PMPI_Comm_free(&shm);
            if (rc != MPI_SUCCESS) return s;
        } else {
            s->node = shm;
        }
        PMPI_Comm_rank(s->node, &s->node_rank);
        PMPI_Comm_size(s->node, &s->node_size);
        if (PMPI_Comm_split(comm, s->node_rank == 0 ? 0 : MPI_UNDEFINED, s->rank, &s->leaders) !=
            MPI_SUCCESS)
            return s;
        /* my node leader's rank in comm */
        MPI_Group gn, gc;
        int zero = 0, lead = 0;
        PMPI_Comm_group(s->node, &gn);
        PMPI_Comm_group(comm, &gc);
        PMPI_Group_translate_ranks(gn, 1, &zero, gc, &lead);
        PMPI_Group_free(&gn);
        PMPI_Group_free(&gc);
        int pair[2] = {lead, s->node_rank};
        int *pairs = malloc((size_t)s->size * 2 * sizeof(int));
        char *is_leader = calloc((size_t)s->size, 1);
        int *leader_index = malloc((size_t)s->size * sizeof(int));
        s->node_of = malloc((size_t)s->size * sizeof(int));
        s->rank_in_node = malloc((size_t)s->size * sizeof(int));
        int ok = pairs && is_leader && leader_index && s->node_of && s->rank_in_node;
        /* every member allocates before the allgather; a failed malloc still joins it */
        int dummy[2];
        int rc = PMPI_Allgather(pair, 2, MPI_INT, ok ? pairs : dummy, ok ? 2 : 0, MPI_INT, comm);
        if (ok && rc == MPI_SUCCESS) {
            for (int r = 0; r < s->size; r++)
                is_leader[pairs[2 * r]] = 1;
            int n = 0;
            for (int r = 0; r < s->size; r++)
                leader_index[r] = is_leader[r] ? n++ : -1;
            s->nnodes = n;
            for (int r = 0; r < s->size; r++) {
                s->node_of[r] = leader_index[pairs[2 * r]];
                s->rank_in_node[r] = pairs[2 * r + 1];
            }
            s->my_node = s->node_of[s->rank];
        }
        free(pairs);
        free(is_leader);
        free(leader_index);
        if (!ok || rc != MPI_SUCCESS) return s; /* freed by the caller as pass-through */
        char nl[96];
        snprintf(nl, sizeof nl, "%s/node%d", label, s->my_node);
        if (s->node_size > 1) s->team = make_team(s, s->node, nl);
        s->mode = MODE_HIER;
    }
    COUNT(comms_set_up);

    if (g_verbose >= 1) {
        char desc[4096] = "";
        if (s->team) numacoll_team_describe(s->team, desc, sizeof desc);
        if (s->mode == MODE_FLAT && s->rank == 0)
            mpi_say(
                    "numacoll-mpi[%s]: %s (size %d): one node team; barrier %s; bcast %s; %s\n",
                    NC_FLAVOR, label, s->size, numacoll_team_barrier_name(s->team),
                    g_bcast ? "numacoll" : "native", desc);
        else if (s->mode == MODE_HIER && s->node_rank == 0)
            mpi_say(
                    "numacoll-mpi[%s]: %s (size %d): hierarchical, %d %snodes; node %d has %d "
                    "members, node barrier %s, inter-node step: the MPI library's own "
                    "collective on the leaders' communicator; %s\n",
                    NC_FLAVOR, label, s->size, s->nnodes, fake > 1 ? "pseudo-" : "", s->my_node,
                    s->node_size, s->team ? numacoll_team_barrier_name(s->team) : "native", desc);
    }
    return s;
}

/* Attach a new state @p s to @p comm (replacing a deferred one: MPI calls the delete
 * callback on the old value). Returns @p s, or NULL (freed) if MPI refuses the attribute. */
static nc_comm_t *comm_install(MPI_Comm comm, nc_comm_t *s)
{
    if (s->mode == MODE_PASS && (s->team || s->node != MPI_COMM_NULL)) {
        comm_state_free(s); /* half-built: keep nothing */
        s = comm_alloc();
        if (!s) return NULL;
        s->comm = comm;
        s->node = s->leaders = s->oob_comm = MPI_COMM_NULL;
    }
    pthread_mutex_lock(&g_lock);
    s->next = g_list;
    if (g_list) g_list->prev = s;
    g_list = s;
    pthread_mutex_unlock(&g_lock);
    if (PMPI_Comm_set_attr(comm, g_keyval, s) != MPI_SUCCESS) {
        pthread_mutex_lock(&g_lock);
        list_remove_locked(s);
        pthread_mutex_unlock(&g_lock);
        comm_state_free(s);
        return NULL;
    }
    return s;
}

/* A call on a deferred communicator: count it (@p units), and at the calls numbered 2, 4,
 * 8, ... agree (MPI_MAX over the members' unit totals) whether the total has reached
 * NUMACOLL_MPI_SETUP_AFTER; if so, or if @p force (an explicit numacoll call, which every
 * member makes at the same point), set the communicator up now. Rent or buy: numacoll
 * saves about 0.1 us per unit, so a communicator pays for its team only once the native
 * calls it has made would have paid for it, and one freed before that never does.
 * Returns the state to use (still deferred: native call). Collective at those calls. */
static nc_comm_t *defer_step(MPI_Comm comm, nc_comm_t *s, uint64_t units, int force)
{
    if (!force) {
        s->defer_calls++;
        s->defer_units =
            s->defer_units + units < s->defer_units ? UINT64_MAX : s->defer_units + units;
        uint64_t c = s->defer_calls;
        if (c & (c - 1)) return s; /* not a power of two: no check, no communication */
        uint64_t most = 0;
        if (PMPI_Allreduce(&s->defer_units, &most, 1, MPI_UINT64_T, MPI_MAX, comm) != MPI_SUCCESS)
            return s; /* the MPI has reported it; the communicator is unusable anyway */
        if (most < s->defer_after) return s; /* the agreed threshold: alike everywhere */
    }
    nc_comm_t *n = comm_setup(comm, 0, 1);
    if (!n) return s;
    n = comm_install(comm, n); /* the deferred state is freed by the delete callback */
    if (!n) return NULL;
    COUNT(comms_promoted);
    return n;
}

/* The state of @p comm, set up at its first collective (collective then). @p units: this
 * call's weight for the deferral (defer_step); @p force: set the communicator up now even
 * if it would defer (every member passes the same). NULL: native. */
nc_comm_t *comm_get(MPI_Comm comm, uint64_t units, int force)
{
    uint64_t gen = atomic_load_explicit(&g_gen, memory_order_acquire);
    nc_comm_t *s = NULL;
    if (tl_last.gen == gen && tl_last.comm == comm && tl_last.state) {
        s = tl_last.state;
    } else {
        if (!ensure_keyvals()) return NULL;
        void *val = NULL;
        int flag = 0;
        if (PMPI_Comm_get_attr(comm, g_keyval, &val, &flag) != MPI_SUCCESS) return NULL;
        if (flag) {
            tl_last.comm = comm;
            tl_last.state = val;
            tl_last.gen = gen;
            s = val;
        }
    }
    if (s) return s->mode == MODE_DEFER ? defer_step(comm, s, units, force) : s;
    s = comm_setup(comm, units, force);
    return s ? comm_install(comm, s) : NULL;
}
