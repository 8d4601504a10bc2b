/*
 * libnumacoll_mpi: the PMPI adapter.
 *
 * MPI_Barrier and MPI_Bcast (and their Fortran entry points) are defined here and call
 * the MPI library through PMPI_*. Each communicator gets, at its first collective, a
 * small state record cached as an attribute (keyval with a delete callback, so
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
#include "numacoll_mpi.h"

#include "../core/nc_internal.h"
#include "../coll/bcast/bcast.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(OPEN_MPI) && OPEN_MPI
#define NC_FLAVOR "openmpi"
#elif defined(MPICH_VERSION) || defined(MPICH)
#define NC_FLAVOR "mpich"
#else
#define NC_FLAVOR "mpi"
#endif

/* MODE_DEFER: not set up yet (NUMACOLL_MPI_SETUP_AFTER); native calls, counted */
enum { MODE_PASS = 0, MODE_FLAT = 1, MODE_HIER = 2, MODE_DEFER = 3 };

typedef struct nc_comm {
    /* The fields of MPI_Barrier's and MPI_Bcast's fast paths, counters included, in the
     * struct's first cache line (comm_alloc aligns it). With the counters in a line of
     * their own, the default MPI_Bcast took 4-5 % longer at 1-64 B than numacoll_bcast on
     * the same team (Open MPI, np = 2, 14 interleaved launches each: 1.08-1.11x -> 1.02-1.07x). */
    int mode;
    int size;
    int bcast_native; /* core bcast unsupported: MPI_Bcast stays native */
    int rank;
    numacoll_team_t *team; /* flat: over comm; hier: over node (NULL: native on node) */
    /* barrier statistics of this communicator, counted without a read-modify-write (a
     * locked add on a shared global costs a measurable part of a 50 ns barrier): the
     * application may not run two collectives on one communicator at once (MPI), so the
     * calling thread is the only writer; relaxed atomics because numacoll_mpi_stats may
     * read them from another thread. Folded into g_st when the state is released. */
    _Atomic uint64_t st_barrier_calls, st_barrier_numacoll;
    _Atomic uint64_t st_bcast_calls, st_bcast_numacoll; /* MPI_Bcast's fast path (same rule) */

    /* the rest: set-up, hierarchical mode, the idle-team cache */
    MPI_Comm comm;    /* the user's communicator (not owned) */
    MPI_Comm node;    /* hier: this process's (pseudo-)node communicator (owned) */
    MPI_Comm leaders; /* hier: leaders' communicator on leaders, else MPI_COMM_NULL */
    int node_size, node_rank, my_node, nnodes;
    int *node_of;      /* hier: node index of every communicator rank */
    int *rank_in_node; /* hier: rank inside its node of every communicator rank */
    MPI_Comm oob_comm; /* communicator the team's allgather runs on */
    uint64_t sig;      /* flat: members signature for the idle-team cache */
    int broken;        /* a numacoll call failed here: never reuse the team */
    int check_err;     /* MPI error class of the last failed whole-communicator check */
    /* MODE_DEFER: barrier/bcast calls so far and their units (see defer_step); identical
     * on every member because every member makes the same collective calls in order */
    uint64_t defer_calls, defer_units;
    struct nc_comm *prev, *next;
} nc_comm_t;
_Static_assert(offsetof(nc_comm_t, st_bcast_numacoll) + sizeof(uint64_t) <= 64,
               "the fast paths' fields in the first line");

/* A zeroed state whose first line (the fast paths' fields) starts a cache line; NULL when
 * out of memory. Freed with free(). */
static nc_comm_t *comm_alloc(void)
{
    nc_comm_t *s = aligned_alloc(64, (sizeof *s + 63) / 64 * 64);
    if (s) memset(s, 0, sizeof *s);
    return s;
}

/* ---- process-wide state ----------------------------------------------------------- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic int g_inited; /* set (release) at the end of init_once */
/* 0: numacoll runs no collective here (NUMACOLL_DISABLE=1 or an invalid configuration).
 * Such a process still takes part in each communicator's set-up agreement, voting
 * "inactive", so that members that run numacoll learn it and stay native with it instead
 * of waiting in an allgather it never calls (see comm_setup). */
static int g_active;
static int g_bcast;       /* route MPI_Bcast through numacoll */
static int g_fake_nodes;  /* NUMACOLL_FAKE_NODES */
static int g_bcast_check; /* NUMACOLL_BCAST_CHECK: hierarchical mode checks at this level */
static int g_stats_print; /* NUMACOLL_MPI_STATS */
static int g_verbose;
static int g_cache_max;        /* NUMACOLL_MPI_TEAM_CACHE */
static uint64_t g_setup_after; /* NUMACOLL_MPI_SETUP_AFTER (units) */
static uint64_t g_node_key;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* keyvals + list */
static int g_keyval = MPI_KEYVAL_INVALID;
static int g_self_keyval = MPI_KEYVAL_INVALID;
static int g_finalizing;
/* the release hook on MPI_COMM_SELF is set: the world model is initialised (MPI_Init). A
 * process that uses only MPI-4 sessions has no MPI_COMM_SELF or MPI_COMM_WORLD to use */
static _Atomic int g_self_hooked;
static nc_comm_t *g_list;
static MPI_Group g_world_group = MPI_GROUP_NULL;

/* Idle teams of freed communicators, kept for a later communicator with the same members
 * in the same order (MPI_Comm_dup / free churn): reusing one needs a single agreement
 * allgather instead of a team creation. Bounded (NUMACOLL_MPI_TEAM_CACHE), released at
 * MPI_Finalize. Consecutive collectives on one team are legal whatever the communicator,
 * so a member that reuses a team while a slower one is still leaving the old
 * communicator's last collective is just the ordinary back-to-back case.
 *
 * Members free communicators in their own order (and, under MPI_THREAD_MULTIPLE, from
 * several threads at once), so their caches may list the same teams in different orders
 * or hold different ones. A set-up therefore proposes up to REUSE_CANDIDATES idle teams,
 * by identity (numacoll_team_id: unique on the node, equal on all members), and reuses the
 * first of rank 0's proposals that every member proposed; with none in common it creates
 * a new team. A proposed team is reserved (out of the cache) until the agreement ends, so
 * no concurrent set-up on another thread can propose it too. */
enum { REUSE_CANDIDATES = 4 };
typedef struct idle_team {
    numacoll_team_t *team;
    uint64_t sig;   /* members (MPI_COMM_WORLD ranks in order) */
    uint64_t id[2]; /* numacoll_team_id: equal on all members, unique on the node */
    size_t qbytes;  /* broadcast queue memory it kept (counted in g_idle_qbytes) */
    struct idle_team *next;
} idle_team_t;
static idle_team_t *g_idle;
static int g_nidle;
static size_t g_idle_qbytes; /* sum of the idle teams' qbytes */
static size_t g_idle_qmax;   /* NUMACOLL_MPI_TEAM_CACHE_QUEUE */
static _Atomic int g_warned;

/* A per-thread one-entry cache of the last communicator's state in front of the attribute
 * look-up (Open MPI's costs about 0.2 us, as much as a whole barrier). Every release of a
 * state bumps g_gen, which invalidates all cached entries (a freed communicator's handle
 * may come back for a new one). */
static _Atomic uint64_t g_gen = 1;
static __thread __attribute__((tls_model("initial-exec"))) struct {
    MPI_Comm comm;
    void *state;
    uint64_t gen;
} tl_last;

static struct {
    _Atomic uint64_t barrier_calls, barrier_numacoll, bcast_calls, bcast_numacoll, bcast_staged,
        fortran_calls, comms_set_up, comms_freed, teams_created, teams_destroyed, team_failures,
        progress_calls, teams_reused, bcast_states_kept, comms_deferred, comms_promoted;
} g_st;

#define COUNT(x) atomic_fetch_add_explicit(&g_st.x, 1, memory_order_relaxed)
#define READ(x) atomic_load_explicit(&g_st.x, memory_order_relaxed)
/* one more in a single-writer counter (see nc_comm_t): a plain load and store */
#define BUMP(c)                                                                                    \
    atomic_store_explicit(&(c), atomic_load_explicit(&(c), memory_order_relaxed) + 1,              \
                          memory_order_relaxed)

/* A key that is equal for processes of one machine: host name and kernel boot id. */
static uint64_t node_key(void)
{
    char buf[256] = {0};
    uint64_t h = NC_FNV_BASIS;
    if (gethostname(buf, sizeof buf - 1) == 0) h = nc_fnv1a(h, buf, strlen(buf));
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        memset(buf, 0, sizeof buf);
        if (fgets(buf, sizeof buf, f)) h = nc_fnv1a(h, buf, strlen(buf));
        fclose(f);
    }
    return h;
}

static void init_once(void)
{
    if (numacoll_config_check() != NUMACOLL_OK) {
        fprintf(stderr, "numacoll: %s; libnumacoll_mpi falls back to the native MPI collectives\n",
                numacoll_last_error());
        g_active = 0;
        atomic_store_explicit(&g_inited, 1, memory_order_release);
        return;
    }
    g_verbose = nc_verbose();
    g_active = !nc_cfg_bool("NUMACOLL_DISABLE");
    g_bcast = nc_cfg_bool("NUMACOLL_MPI_BCAST");
    g_fake_nodes = (int)nc_cfg_int("NUMACOLL_FAKE_NODES");
    g_bcast_check = nc_cfg_bool("NUMACOLL_BCAST_CHECK");
    g_stats_print = nc_cfg_bool("NUMACOLL_MPI_STATS");
    g_cache_max = (int)nc_cfg_int("NUMACOLL_MPI_TEAM_CACHE");
    g_idle_qmax = nc_cfg_size("NUMACOLL_MPI_TEAM_CACHE_QUEUE");
    g_setup_after = (uint64_t)nc_cfg_int("NUMACOLL_MPI_SETUP_AFTER");
    g_node_key = node_key();
    /* release: pairs with the acquire in ensure_init(); a thread that sees 1 sees the above */
    atomic_store_explicit(&g_inited, 1, memory_order_release);
}

/* Read the configuration once (every intercepted call starts here). The fast path skips
 * the call into pthread_once once initialisation is complete. */
static void ensure_init(void)
{
    if (!atomic_load_explicit(&g_inited, memory_order_acquire)) pthread_once(&g_once, init_once);
}

int numacoll_mpi_stats(numacoll_mpi_stats_t *o)
{
    if (!o) return -1;
    /* the released communicators' counts (g_st) plus the live ones', under the list lock
     * (a state is folded into g_st and unlinked in one critical section) */
    pthread_mutex_lock(&g_lock);
    o->barrier_calls = READ(barrier_calls);
    o->barrier_numacoll = READ(barrier_numacoll);
    for (nc_comm_t *s = g_list; s; s = s->next) {
        o->barrier_calls += atomic_load_explicit(&s->st_barrier_calls, memory_order_relaxed);
        o->barrier_numacoll += atomic_load_explicit(&s->st_barrier_numacoll, memory_order_relaxed);
    }
    o->bcast_calls = READ(bcast_calls);
    o->bcast_numacoll = READ(bcast_numacoll);
    for (nc_comm_t *s = g_list; s; s = s->next) {
        o->bcast_calls += atomic_load_explicit(&s->st_bcast_calls, memory_order_relaxed);
        o->bcast_numacoll += atomic_load_explicit(&s->st_bcast_numacoll, memory_order_relaxed);
    }
    pthread_mutex_unlock(&g_lock);
    o->bcast_staged = READ(bcast_staged);
    o->fortran_calls = READ(fortran_calls);
    o->comms_set_up = READ(comms_set_up);
    o->comms_freed = READ(comms_freed);
    o->teams_created = READ(teams_created);
    o->teams_destroyed = READ(teams_destroyed);
    o->team_failures = READ(team_failures);
    o->progress_calls = READ(progress_calls);
    o->teams_reused = READ(teams_reused);
    o->bcast_states_kept = READ(bcast_states_kept);
    o->comms_deferred = READ(comms_deferred);
    o->comms_promoted = READ(comms_promoted);
    return 0;
}

const char *numacoll_mpi_flavor(void)
{
    return NC_FLAVOR;
}

/* ---- callbacks given to the core ---------------------------------------------------- */

static int oob_allgather(const void *sendbuf, void *recvbuf, size_t size, void *ctx)
{
    MPI_Comm c = *(MPI_Comm *)ctx;
    if (size > INT_MAX) return -1;
    return PMPI_Allgather(sendbuf, (int)size, MPI_BYTE, recvbuf, (int)size, MPI_BYTE, c) ==
                   MPI_SUCCESS
               ? 0
               : -1;
}

/* Poke the MPI progress engine so that this process's pending nonblocking operations
 * keep moving while it waits inside a numacoll collective. */
static void mpi_progress(void *ctx)
{
    int flag = 0;
    COUNT(progress_calls);
    /* MPI_COMM_SELF in the world model; without it (sessions only) the communicator the
     * team runs on (@p ctx: its nc_comm_t's oob_comm; a probe consumes nothing) */
    MPI_Comm c = atomic_load_explicit(&g_self_hooked, memory_order_relaxed) ? MPI_COMM_SELF
                                                                            : *(MPI_Comm *)ctx;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &flag, MPI_STATUS_IGNORE);
}

/* The world model (MPI_Init) is initialised and not finalised. */
static int world_active(void)
{
    int init = 0, fini = 0;
    PMPI_Initialized(&init);
    PMPI_Finalized(&fini);
    return init && !fini;
}

/* ---- communicator state ------------------------------------------------------------- */

static void idle_destroy_all(void)
{
    pthread_mutex_lock(&g_lock);
    idle_team_t *l = g_idle;
    g_idle = NULL;
    g_nidle = 0;
    g_idle_qbytes = 0;
    pthread_mutex_unlock(&g_lock);
    while (l) {
        idle_team_t *n = l->next;
        numacoll_team_destroy(l->team);
        COUNT(teams_destroyed);
        free(l);
        l = n;
    }
}

/* Put @p t (members @p sig) into the idle cache; returns 1 if it was kept. */
static int idle_insert(numacoll_team_t *t, uint64_t sig)
{
    /* An idle team keeps its barrier segment, and its broadcast state too: always when that
     * holds no queue memory (only small messages went through it: the control blocks,
     * 28 KiB at np=2), and with queue memory while all idle teams of this process together
     * keep at most NUMACOLL_MPI_TEAM_CACHE_QUEUE bytes of it. A dup/free loop then sets
     * nothing up again: np=2, dup + barrier + bcast + free took 77-89 us per communicator
     * for 8 bytes and 2.9-3.2 ms for 1 MiB (its queue set populated again each time, then
     * unmapped) when every idle team dropped its broadcast state. Members decide alone
     * (each on its own memory); comm_setup agrees at reuse: the state's set-up at the next
     * broadcast is collective, so either all members have it or none. */
    size_t qb = nc_bcast_team_queue_bytes(t);
    int keep = 1;
    if (qb) {
        pthread_mutex_lock(&g_lock);
        keep = g_idle_qbytes + qb <= g_idle_qmax;
        if (keep) g_idle_qbytes += qb; /* reserved before the team becomes visible */
        pthread_mutex_unlock(&g_lock);
    }
    if (!keep) {
        nc_bcast_team_fini(t);
        qb = 0;
    }
    idle_team_t *e = malloc(sizeof *e), *drop = NULL;
    pthread_mutex_lock(&g_lock);
    if (!e || g_finalizing) {
        g_idle_qbytes -= qb;
        pthread_mutex_unlock(&g_lock);
        free(e);
        return 0;
    }
    e->team = t;
    e->sig = sig;
    numacoll_team_id(t, e->id);
    e->qbytes = qb;
    e->next = g_idle;
    g_idle = e;
    if (++g_nidle > g_cache_max) { /* drop the oldest */
        idle_team_t **pp = &g_idle;
        while ((*pp)->next)
            pp = &(*pp)->next;
        drop = *pp;
        *pp = NULL;
        g_nidle--;
        g_idle_qbytes -= drop->qbytes;
    }
    pthread_mutex_unlock(&g_lock);
    if (drop) {
        numacoll_team_destroy(drop->team);
        COUNT(teams_destroyed);
        free(drop);
    }
    return 1;
}

/* Keep a flat communicator's team for reuse; returns 1 if it was kept. */
static int idle_put(nc_comm_t *s)
{
    if (g_cache_max <= 0 || s->mode != MODE_FLAT || !s->team || !s->sig || s->broken) return 0;
    if (!idle_insert(s->team, s->sig)) return 0;
    s->team = NULL;
    return 1;
}

/* Take up to REUSE_CANDIDATES idle teams for members @p sig out of the cache, the most
 * recent first, into @p cand; returns how many. They are reserved: a concurrent set-up of
 * another communicator with the same members (another thread) cannot propose them too.
 * idle_release puts back the ones not reused. */
static int idle_reserve(uint64_t sig, numacoll_team_t *cand[REUSE_CANDIDATES])
{
    int n = 0;
    pthread_mutex_lock(&g_lock);
    for (idle_team_t **pp = &g_idle; *pp && n < REUSE_CANDIDATES;) {
        idle_team_t *e = *pp;
        if (e->sig != sig) {
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        g_nidle--;
        g_idle_qbytes -= e->qbytes;
        cand[n++] = e->team;
        free(e);
    }
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* Put the reserved candidates other than @p keep back into the cache, the least recent
 * first so that the cache keeps their order (destroyed if the cache refuses them). */
static void idle_release(numacoll_team_t *cand[REUSE_CANDIDATES], int n, int keep, uint64_t sig)
{
    for (int i = n - 1; i >= 0; i--)
        if (i != keep && !idle_insert(cand[i], sig)) {
            numacoll_team_destroy(cand[i]);
            COUNT(teams_destroyed);
        }
}

/* Signature of the members of @p comm: their MPI_COMM_WORLD ranks in order (0 if some
 * member is not in MPI_COMM_WORLD, e.g. after MPI_Comm_spawn: no reuse then). */
static uint64_t members_sig(MPI_Comm comm, int size)
{
    if (g_cache_max <= 0 || size > 65536 || !world_active()) return 0;
    MPI_Group g;
    if (PMPI_Comm_group(comm, &g) != MPI_SUCCESS) return 0;
    pthread_mutex_lock(&g_lock);
    if (g_world_group == MPI_GROUP_NULL) PMPI_Comm_group(MPI_COMM_WORLD, &g_world_group);
    pthread_mutex_unlock(&g_lock);
    int *in = malloc((size_t)size * 2 * sizeof(int));
    uint64_t h = 0;
    if (in) {
        for (int i = 0; i < size; i++)
            in[i] = i;
        if (PMPI_Group_translate_ranks(g, size, in, g_world_group, in + size) == MPI_SUCCESS) {
            h = nc_fnv1a(NC_FNV_BASIS, &size, sizeof size);
            for (int i = 0; i < size && h; i++)
                h = in[size + i] == MPI_UNDEFINED ? 0 : nc_fnv1a(h, &in[size + i], sizeof(int));
        }
        free(in);
    }
    PMPI_Group_free(&g);
    return h ? h : 0;
}

static void comm_state_free(nc_comm_t *s)
{
    if (!s) return;
    if (s->team && !idle_put(s)) {
        numacoll_team_destroy(s->team);
        COUNT(teams_destroyed);
    }
    if (s->leaders != MPI_COMM_NULL) PMPI_Comm_free(&s->leaders);
    if (s->node != MPI_COMM_NULL) PMPI_Comm_free(&s->node);
    free(s->node_of);
    free(s->rank_in_node);
    free(s);
}

/* move a communicator's single-writer counter into a process total (under g_lock) */
static void fold(_Atomic uint64_t *total, _Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(total, atomic_load_explicit(c, memory_order_relaxed),
                              memory_order_relaxed);
    atomic_store_explicit(c, 0, memory_order_relaxed);
}

static void list_remove_locked(nc_comm_t *s)
{
    /* keep the communicator's counts in the process totals */
    fold(&g_st.barrier_calls, &s->st_barrier_calls);
    fold(&g_st.barrier_numacoll, &s->st_barrier_numacoll);
    fold(&g_st.bcast_calls, &s->st_bcast_calls);
    fold(&g_st.bcast_numacoll, &s->st_bcast_numacoll);
    if (s->prev)
        s->prev->next = s->next;
    else if (g_list == s)
        g_list = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

static int comm_delete_cb(MPI_Comm comm, int keyval, void *attr, void *extra)
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

static void print_stats(void)
{
    /* the MPI_COMM_WORLD rank; a sessions-only process has none: its pid */
    int r = -1, world = world_active();
    if (world) PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    fprintf(stderr,
            "numacoll-mpi stats [%s %s %d]: MPI_Barrier %llu (numacoll %llu), MPI_Bcast %llu "
            "(numacoll %llu, staged %llu), fortran %llu, comms %llu set up / %llu freed, teams "
            "%llu created / %llu destroyed / %llu failed / %llu reused (%llu with their broadcast "
            "state), %llu deferred / %llu of them set up later, progress %llu\n",
            NC_FLAVOR, world ? "rank" : "pid", world ? r : (int)getpid(),
            (unsigned long long)READ(barrier_calls), (unsigned long long)READ(barrier_numacoll),
            (unsigned long long)READ(bcast_calls), (unsigned long long)READ(bcast_numacoll),
            (unsigned long long)READ(bcast_staged), (unsigned long long)READ(fortran_calls),
            (unsigned long long)READ(comms_set_up), (unsigned long long)READ(comms_freed),
            (unsigned long long)READ(teams_created), (unsigned long long)READ(teams_destroyed),
            (unsigned long long)READ(team_failures), (unsigned long long)READ(teams_reused),
            (unsigned long long)READ(bcast_states_kept), (unsigned long long)READ(comms_deferred),
            (unsigned long long)READ(comms_promoted), (unsigned long long)READ(progress_calls));
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: release every communicator
 * state still alive (MPI_COMM_WORLD's, and those the application never freed). */
static int self_delete_cb(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)attr;
    (void)extra;
    pthread_mutex_lock(&g_lock);
    g_finalizing = 1;
    pthread_mutex_unlock(&g_lock);
    for (;;) {
        pthread_mutex_lock(&g_lock);
        nc_comm_t *s = g_list;
        MPI_Comm c = s ? s->comm : MPI_COMM_NULL;
        pthread_mutex_unlock(&g_lock);
        if (!s) break;
        /* runs comm_delete_cb, which unlinks and frees s */
        if (PMPI_Comm_delete_attr(c, g_keyval) != MPI_SUCCESS) {
            pthread_mutex_lock(&g_lock);
            list_remove_locked(s);
            pthread_mutex_unlock(&g_lock);
            comm_state_free(s);
        }
    }
    idle_destroy_all();
    if (g_world_group != MPI_GROUP_NULL) PMPI_Group_free(&g_world_group);
    if (g_stats_print) print_stats();
    pthread_mutex_lock(&g_lock);
    if (g_keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&g_keyval);
    g_keyval = MPI_KEYVAL_INVALID;
    pthread_mutex_unlock(&g_lock);
    return MPI_SUCCESS;
}

/* Under NUMACOLL_VERBOSE=1, MPI_COMM_WORLD's rank 0 says once which thread level the MPI
 * provides and what numacoll does at it. numacoll runs at every level and needs nothing
 * from MPI_Init_thread: all process-wide state of this layer (the communicator list, the
 * idle-team cache, the keyvals, the counters) is under g_lock or atomic, a communicator's
 * state is used by the threads that call collectives on it (which MPI orders), and the
 * core library keeps no unguarded global state. The level is read with MPI_Query_thread,
 * so an MPI_Init_thread called from Fortran (which reaches PMPI directly) counts too. */
static void report_thread_level(void)
{
    int level = -1, rank = -1;
    if (g_verbose < 1 || PMPI_Query_thread(&level) != MPI_SUCCESS ||
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS || rank != 0)
        return;
    const char *name = level == MPI_THREAD_SINGLE       ? "MPI_THREAD_SINGLE"
                       : level == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                       : level == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                       : level == MPI_THREAD_MULTIPLE   ? "MPI_THREAD_MULTIPLE"
                                                        : "unknown";
    fprintf(stderr,
            "numacoll-mpi[%s]: thread level %s: supported%s\n", NC_FLAVOR, name,
            level == MPI_THREAD_MULTIPLE
                ? " (collectives on different communicators may run at once from different "
                  "threads, communicator creation and freeing included)"
                : "");
}

static int ensure_keyvals(void)
{
    int ok = 1;
    pthread_mutex_lock(&g_lock);
    if (g_finalizing) {
        ok = 0;
    } else if (g_keyval == MPI_KEYVAL_INVALID &&
               PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_delete_cb, &g_keyval, NULL) !=
                   MPI_SUCCESS) {
        g_keyval = MPI_KEYVAL_INVALID;
        ok = 0;
    } else if (!atomic_load_explicit(&g_self_hooked, memory_order_relaxed) && world_active()) {
        /* the release at MPI_Finalize; set once the world model is up (it may come after
         * communicators of sessions). A sessions-only process has no MPI_COMM_SELF (MPICH
         * aborts on it): its states are released by MPI_Comm_free */
        if ((g_self_keyval == MPI_KEYVAL_INVALID &&
             PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_cb, &g_self_keyval, NULL) !=
                 MPI_SUCCESS) ||
            PMPI_Comm_set_attr(MPI_COMM_SELF, g_self_keyval, NULL) != MPI_SUCCESS)
            ok = 0;
        else {
            atomic_store_explicit(&g_self_hooked, 1, memory_order_relaxed);
            report_thread_level();
        }
    }
    pthread_mutex_unlock(&g_lock);
    return ok;
}

static void comm_label(MPI_Comm comm, char *name, size_t n)
{
    char buf[MPI_MAX_OBJECT_NAME] = {0};
    int len = 0;
    if (PMPI_Comm_get_name(comm, buf, &len) != MPI_SUCCESS || len == 0)
        snprintf(buf, sizeof buf, "communicator");
    snprintf(name, n, "%s", buf);
}

static void warn_fallback(const nc_comm_t *s, const char *what, const char *msg)
{
    if (g_verbose < 1) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&g_warned, &expected, 1, memory_order_relaxed,
                                                 memory_order_relaxed))
        return;
    fprintf(stderr,
            "numacoll-mpi[%d/%d]: warning: %s failed (%s); using the native MPI collectives "
            "there (reported once)\n",
            s->rank, s->size, what, msg);
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
    numacoll_team_t *t = NULL;
    int rc = numacoll_team_create(&p, &t);
    if (rc != NUMACOLL_OK) {
        COUNT(team_failures);
        warn_fallback(s, "numacoll team creation", numacoll_last_error());
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
    int32_t check;    /* NUMACOLL_BCAST_CHECK (hierarchical mode: a collective per broadcast) */
} agree_rec_t;

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
    agree_rec_t me = {.key = g_node_key,
                      .ncand = ncand,
                      .active = g_active,
                      .fake = g_fake_nodes,
                      .force = force,
                      .units = units,
                      .bcast_on = g_bcast,
                      .check = g_bcast_check};
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
    int inactive = 0, differ_fake = 0, differ_bcast = 0, differ_check = 0;
    uint64_t most = 0;
    for (int r = 0; r < s->size; r++) {
        inactive += !all[r].active;
        differ_fake |= all[r].fake != fake;
        differ_bcast |= all[r].bcast_on != all[0].bcast_on;
        differ_check |= all[r].check != all[0].check;
        if (all[r].force) forced = 1;
        if (all[r].units > most) most = all[r].units;
        int seen = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = all[q].key == all[r].key;
        if (!seen && r > 0) distinct++;
    }
    free(all);
    int agreed = !inactive && !differ_fake && !differ_bcast && !differ_check;
    /* reuse a reserved team only if every member reserved that very team */
    int reuse = mine >= 0 && agreed && distinct == 1 && fake <= 1;
    idle_release(cand, ncand, reuse ? mine : -1, sig);
    if (!agreed) {
        /* pass-through on every member (the same records everywhere); a warning from the
         * members that run numacoll, unless every member is inactive (numacoll off) */
        if (g_active) {
            char why[200];
            if (inactive)
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
                           {differ_check, "NUMACOLL_BCAST_CHECK"}};
                size_t o = (size_t)snprintf(why, sizeof why, "members differ in");
                const char *sep = " ";
                for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
                    if (set[i].differ && o < sizeof why) {
                        o += (size_t)snprintf(why + o, sizeof why - o, "%s%s", sep, set[i].name);
                        sep = " and ";
                    }
            }
            warn_fallback(s, "agreement on the numacoll configuration", why);
        }
        return s;
    }
    if (!reuse && !forced && most < g_setup_after) {
        /* the same decision on every member: it rests on the allgather's records only */
        s->mode = MODE_DEFER;
        s->defer_calls = 1;
        s->defer_units = most;
        COUNT(comms_deferred);
        if (g_verbose >= 2 && s->rank == 0)
            fprintf(stderr,
                    "numacoll-mpi[%s]: %s (size %d): native calls until they add up to %llu "
                    "units (NUMACOLL_MPI_SETUP_AFTER), then numacoll sets it up\n",
                    NC_FLAVOR, label, s->size, (unsigned long long)g_setup_after);
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
            fprintf(stderr,
                    "numacoll-mpi[%s]: %s (size %d): one node team; barrier %s; bcast %s; %s\n",
                    NC_FLAVOR, label, s->size, numacoll_team_barrier_name(s->team),
                    g_bcast ? "numacoll" : "native", desc);
        else if (s->mode == MODE_HIER && s->node_rank == 0)
            fprintf(stderr,
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
        if (most < g_setup_after) return s;
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
static nc_comm_t *comm_get(MPI_Comm comm, uint64_t units, int force)
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

/* Report a numacoll failure (timeout, dead peer) like the native call would report an
 * internal error: through the communicator's error handler. */
static int raise_error(MPI_Comm comm, const char *op, int rc)
{
    fprintf(stderr, "numacoll-mpi: %s failed: %s (%s)\n", op, numacoll_status_name(rc),
            numacoll_last_error());
    PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

/* the communicator of the node part: the whole communicator when flat */
#define NODE_COMM(s) ((s)->mode == MODE_FLAT ? (s)->comm : (s)->node)

/* ---- barrier ------------------------------------------------------------------------ */

static int node_barrier(nc_comm_t *s, const char *alg)
{
    if (s->team) return alg ? numacoll_barrier_with(s->team, alg) : numacoll_barrier(s->team);
    if (s->node_size > 1)
        return PMPI_Barrier(NODE_COMM(s)) == MPI_SUCCESS ? NUMACOLL_OK : NUMACOLL_ERR_OOB;
    return NUMACOLL_OK;
}

/* @p user: 1 for MPI_Barrier (C or Fortran), counted in barrier_calls */
static int barrier_impl(MPI_Comm comm, const char *alg, int user)
{
    ensure_init();
    if (comm == MPI_COMM_NULL) {
        if (user) COUNT(barrier_calls);
        return PMPI_Barrier(comm);
    }
    nc_comm_t *s = comm_get(comm, 1, !user);
    if (!s || s->mode == MODE_PASS || s->mode == MODE_DEFER) {
        if (user) COUNT(barrier_calls);
        return PMPI_Barrier(comm);
    }
    if (user) BUMP(s->st_barrier_calls);
    int rc;
    if (s->mode == MODE_FLAT) {
        rc = node_barrier(s, alg);
    } else {
        /* node gather, leaders' barrier, node release: nobody leaves the second node
         * barrier before its leader has left the leaders' barrier, which no leader leaves
         * before every node's members have entered the first one */
        rc = node_barrier(s, alg);
        if (rc == NUMACOLL_OK && s->leaders != MPI_COMM_NULL && s->nnodes > 1)
            rc = PMPI_Barrier(s->leaders) == MPI_SUCCESS ? NUMACOLL_OK : NUMACOLL_ERR_OOB;
        if (rc == NUMACOLL_OK) rc = node_barrier(s, alg);
    }
    if (rc != NUMACOLL_OK) {
        s->broken = 1;
        return raise_error(comm, "MPI_Barrier", rc);
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
    return barrier_impl(comm, NULL, 1);
}

int numacoll_mpi_barrier_with(MPI_Comm comm, const char *algorithm)
{
    return barrier_impl(comm, algorithm, 0);
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

/* ---- broadcast ---------------------------------------------------------------------- */

/* Broadcast on the node part: the team's core broadcast (arguments already validated by
 * the callers, so straight into the core's default call; @p mark: a marked one, the large
 * path's header), or PMPI_Bcast in bytes when the node has no team or the core cannot
 * broadcast on it. */
static inline int node_bcast(nc_comm_t *s, void *p, size_t bytes, int root, int mark)
{
    if (s->team && !s->bcast_native) {
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
    long val[3] = {root, (long)bytes, mark != 0};
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

/* Broadcast @p bytes contiguous bytes at @p p (byte counts already validated); @p mark:
 * the node part marked (node_bcast). */
static int bcast_bytes(nc_comm_t *s, void *p, size_t bytes, int root, int mark)
{
    if (s->mode == MODE_FLAT) return node_bcast(s, p, bytes, root, mark);
    if (g_bcast_check) {
        int rc = hier_check(s, bytes, root, mark);
        if (rc != NUMACOLL_OK) return rc;
    }
    int rnode = s->node_of[root];
    int rc = NUMACOLL_OK;
    if (s->my_node == rnode) {
        rc = node_bcast(s, p, bytes, team_root(s, root), mark);
        if (rc == NUMACOLL_OK && s->leaders != MPI_COMM_NULL && s->nnodes > 1)
            rc = PMPI_Bcast(p, (int)bytes, MPI_BYTE, rnode, s->leaders) == MPI_SUCCESS
                     ? NUMACOLL_OK
                     : NUMACOLL_ERR_OOB;
    } else {
        if (s->leaders != MPI_COMM_NULL)
            rc = PMPI_Bcast(p, (int)bytes, MPI_BYTE, rnode, s->leaders) == MPI_SUCCESS
                     ? NUMACOLL_OK
                     : NUMACOLL_ERR_OOB;
        if (rc == NUMACOLL_OK) rc = node_bcast(s, p, bytes, team_root(s, root), mark);
    }
    return rc;
}

static int large_drain(nc_comm_t *s, uint64_t total, int root);

/* The status of a core broadcast from @p root as MPI_Bcast returns it. ERR_UNSUPPORTED (the
 * core cannot broadcast on this team; every member gets the same answer) switches the
 * communicator to the native MPI_Bcast for good, starting with this call. */
static int bcast_result(nc_comm_t *s, MPI_Comm comm, int rc, int root)
{
    if (rc == NUMACOLL_OK) return MPI_SUCCESS;
    s->broken = 1;
    if (rc == NUMACOLL_ERR_ARG) {
        /* the core detected members with different byte counts or roots */
        fprintf(stderr, "numacoll-mpi: MPI_Bcast: %s\n", numacoll_last_error());
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
                fprintf(stderr,
                        "numacoll-mpi: MPI_Bcast: the root (rank %d) sends %llu bytes (over "
                        "2 GiB); rank %d takes them into a stage and drops them\n",
                        from, (unsigned long long)head, s->rank);
                large_drain(s, head, from);
            }
        }
        PMPI_Comm_call_errhandler(comm, err);
        return err;
    }
    return raise_error(comm, "MPI_Bcast", rc);
}

/* Size of one element of a predefined contiguous C datatype (lower bound 0, extent =
 * size), 0 for any other handle. Compile-time constants (MPI_INT is a C int, ...), so the
 * common call needs none of the three datatype queries of the general path. */
static inline size_t predef_size(MPI_Datatype dt)
{
    if (dt == MPI_BYTE || dt == MPI_CHAR || dt == MPI_UNSIGNED_CHAR || dt == MPI_SIGNED_CHAR ||
        dt == MPI_INT8_T || dt == MPI_UINT8_T)
        return 1;
    if (dt == MPI_INT || dt == MPI_UNSIGNED || dt == MPI_INT32_T || dt == MPI_UINT32_T)
        return sizeof(int32_t);
    if (dt == MPI_DOUBLE || dt == MPI_INT64_T || dt == MPI_UINT64_T) return 8;
    if (dt == MPI_FLOAT) return sizeof(float);
    if (dt == MPI_LONG || dt == MPI_UNSIGNED_LONG) return sizeof(long);
    if (dt == MPI_LONG_LONG || dt == MPI_UNSIGNED_LONG_LONG) return sizeof(long long);
    if (dt == MPI_SHORT || dt == MPI_UNSIGNED_SHORT || dt == MPI_INT16_T || dt == MPI_UINT16_T)
        return sizeof(short);
    return 0;
}

static int bcast_general(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);
static int bcast_large_entry(void *buf, MPI_Count count, MPI_Datatype dt, MPI_Count tsz, int root,
                             MPI_Comm comm);

/* The deferral's units of a broadcast of @p count elements of @p tsz bytes: 1 + bytes /
 * 1024 (see defer_step); 1 when the size is unknown (< 0) or absurd. From MPI_Count sizes,
 * so that MPI_Bcast and MPI_Bcast_c count a broadcast alike on every member (types over
 * 2 GiB included, whose int size is MPI_UNDEFINED). */
static uint64_t bcast_units(MPI_Count count, MPI_Count tsz)
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
                  (esz = predef_size(dt)) != 0 && (size_t)count * esz <= INT_MAX)) {
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
    MPI_Count tsz = -1;
    if (count < 0 || comm == MPI_COMM_NULL || dt == MPI_DATATYPE_NULL || buf == MPI_IN_PLACE ||
        PMPI_Type_size_c(dt, &tsz) != MPI_SUCCESS || tsz < 0)
        return PMPI_Bcast_c(buf, count, dt, root, comm); /* native semantics and errors */
    if (tsz == 0) return MPI_Bcast(buf, 0, dt, root, comm);
    return bcast_large_entry(buf, count, dt, tsz, root, comm);
}

/* A process that uses only sessions never reaches the MPI_Finalize hook on MPI_COMM_SELF:
 * NUMACOLL_MPI_STATS prints at its MPI_Session_finalize instead. (Communicator states are
 * released by MPI_Comm_free, as in the world model.) */
int MPI_Session_finalize(MPI_Session *session)
{
    ensure_init();
    if (g_stats_print && !atomic_load_explicit(&g_self_hooked, memory_order_relaxed)) print_stats();
    return PMPI_Session_finalize(session);
}
#endif

/* PMPI_Pack (@p unpack 0) of (buf, count, dt) into @p stage (@p cap bytes), or PMPI_Unpack
 * from it; MPI-4's PMPI_Pack_c / PMPI_Unpack_c where the MPI has them (counts beyond int).
 * buf == MPI_BOTTOM (a datatype of absolute addresses) goes through a one-block hindexed
 * copy of dt displaced by -tlb from the base address tlb (its lowest byte), the same
 * addresses: MPICH 4.0's MPI_Pack and MPI_Unpack reject a NULL buffer ("Null pointer in
 * parameter inbuf") although MPI_BOTTOM is NULL there. */
#if MPI_VERSION >= 4
typedef MPI_Count pack_count_t, pack_disp_t;
#define NC_TYPE_HINDEXED PMPI_Type_create_hindexed_c
#define NC_PACK PMPI_Pack_c
#define NC_UNPACK PMPI_Unpack_c
#else
typedef int pack_count_t;
typedef MPI_Aint pack_disp_t;
#define NC_TYPE_HINDEXED PMPI_Type_create_hindexed
#define NC_PACK PMPI_Pack
#define NC_UNPACK PMPI_Unpack
#endif
static int pack_io(int unpack, void *buf, MPI_Count count, MPI_Datatype dt, MPI_Aint tlb,
                   char *stage, size_t cap, MPI_Comm comm)
{
#if MPI_VERSION < 4
    /* MPI-3's PMPI_Pack counts in int: only the large path (one element of a datatype of
     * more than INT_MAX bytes) comes here with more */
    if (count > INT_MAX || cap > INT_MAX) {
        fprintf(stderr,
                "numacoll-mpi: MPI_Bcast: cannot %s %zu bytes of a non-contiguous datatype "
                "in one piece with this MPI-%d library (its MPI_Pack counts in int; allowed: "
                "datatypes of at most %d bytes per element)\n",
                unpack ? "unpack" : "pack", cap, MPI_VERSION, INT_MAX);
        return MPI_ERR_COUNT;
    }
#endif
    MPI_Datatype t = dt;
    pack_count_t n = (pack_count_t)count, pos = 0;
    int own = 0, rc;
    if (buf == MPI_BOTTOM && count > 0 && tlb != 0) {
        pack_disp_t disp = -(pack_disp_t)tlb;
        if (NC_TYPE_HINDEXED(1, &n, &disp, dt, &t) != MPI_SUCCESS) return MPI_ERR_TYPE;
        own = 1;
        if (PMPI_Type_commit(&t) != MPI_SUCCESS) {
            PMPI_Type_free(&t);
            return MPI_ERR_TYPE;
        }
        buf = (void *)tlb;
        n = 1;
    }
    rc = unpack ? NC_UNPACK(stage, (pack_count_t)cap, &pos, buf, n, t, comm)
                : NC_PACK(buf, n, t, stage, (pack_count_t)cap, &pos, comm);
    if (own) PMPI_Type_free(&t);
    return rc;
}

/* ---- broadcasts of more than INT_MAX bytes ------------------------------------------
 * One such broadcast is a sequence of core broadcasts, the same on every member whatever
 * its (count, datatype): 8 bytes (the root's byte count), then the message in windows of
 * LARGE_WINDOW bytes (the last one shorter). A contiguous buffer takes part in place. A
 * non-contiguous one goes through a stage of one window plus one element, packed (root)
 * or unpacked (receivers) in whole elements: an element cut by a window's end waits in the
 * stage for the next window. So a member never stages the whole message (as the path for
 * smaller ones does), and root and receivers may still use different datatypes. A receiver
 * whose byte count differs from the root's takes the root's windows into its stage, so that
 * nobody waits for it, and fails with MPI_ERR_TRUNCATE. 128 MiB: a window's start costs one
 * fragment's latency (microseconds) against tens of milliseconds of copying. */
#define LARGE_WINDOW ((size_t)128 << 20)

/* A receiver whose byte count differs from the root's @p total (over 2 GiB: the large
 * path's marked header told it): take the root's windows into a stage and drop them, so
 * that the root is not left waiting for us; the callers fail with MPI_ERR_TRUNCATE. A
 * large-path receiver with another count over 2 GiB (bcast_large), or an ordinary one
 * (bcast_result). */
static int large_drain(nc_comm_t *s, uint64_t total, int root)
{
    char *stage = malloc(LARGE_WINDOW);
    if (!stage) {
        /* the others go on without us: their timeout (NUMACOLL_TIMEOUT) names us */
        fprintf(stderr,
                "numacoll-mpi: MPI_Bcast: no memory for a %zu-byte stage to take the root's %llu "
                "bytes\n",
                LARGE_WINDOW, (unsigned long long)total);
        return NUMACOLL_ERR_NOMEM;
    }
    int rc = NUMACOLL_OK;
    for (uint64_t off = 0, len; off < total && rc == NUMACOLL_OK; off += len) {
        len = total - off < LARGE_WINDOW ? total - off : LARGE_WINDOW;
        rc = bcast_bytes(s, stage, (size_t)len, root, 0);
    }
    free(stage);
    return rc;
}

/* Element @p i of a buffer of elements @p ext bytes apart (in integers: @p buf may be
 * MPI_BOTTOM, a null pointer) */
static inline void *elem_at(void *buf, MPI_Count i, MPI_Aint ext)
{
    return (void *)((intptr_t)buf + (intptr_t)(i * ext));
}

/* The large path on communicator state @p s (numacoll's broadcast on, valid root):
 * (@p count, @p dt) of @p tsz bytes each, more than INT_MAX bytes in all. */
static int bcast_large(nc_comm_t *s, void *buf, MPI_Count count, MPI_Datatype dt, MPI_Count tsz,
                       int root, MPI_Comm comm)
{
    MPI_Aint lb = 0, ext = 0, tlb = 0, text = 0;
    size_t bytes = (size_t)count * (size_t)tsz; /* no overflow: checked by the callers */
    /* the datatype is valid (the callers have its size), so these succeed */
    PMPI_Type_get_extent(dt, &lb, &ext);
    PMPI_Type_get_true_extent(dt, &tlb, &text);
    int contiguous = (size_t)text == (size_t)tsz && (count == 1 || ext == tsz);
    int me = s->rank;
    uint64_t total = bytes;                                 /* the root's count, for everyone */
    int rc = bcast_bytes(s, &total, sizeof total, root, 1); /* marked: see large_drain */
    if (rc != NUMACOLL_OK) return bcast_result(s, comm, rc, root);
    if (total != (uint64_t)bytes) {
        rc = large_drain(s, total, root);
        if (rc == NUMACOLL_ERR_NOMEM) return raise_error(comm, "MPI_Bcast", rc);
        if (rc != NUMACOLL_OK) return bcast_result(s, comm, rc, root);
        s->broken = 1;
        fprintf(stderr,
                "numacoll-mpi: MPI_Bcast: the root (rank %d) sent %llu bytes, rank %d expected "
                "%zu (count and datatype must give the same type signature on every rank)\n",
                root, (unsigned long long)total, me, bytes);
        PMPI_Comm_call_errhandler(comm, MPI_ERR_TRUNCATE);
        return MPI_ERR_TRUNCATE;
    }
    char *stage = NULL;
    if (!contiguous) {
        size_t cap = LARGE_WINDOW + (size_t)tsz;
        stage = malloc(cap);
        if (!stage) {
            /* the others go on without us: their timeout (NUMACOLL_TIMEOUT) names us */
            fprintf(stderr, "numacoll-mpi: MPI_Bcast: no memory for a %zu-byte stage\n", cap);
            return raise_error(comm, "MPI_Bcast", NUMACOLL_ERR_NOMEM);
        }
    }
    size_t have = 0;       /* staged bytes: root, packed but not sent; receiver, not unpacked */
    MPI_Count next = 0;    /* next element to pack or unpack */
    int prc = MPI_SUCCESS; /* the first pack or unpack error */
    for (size_t off = 0, len; off < total && rc == NUMACOLL_OK; off += len) {
        len = total - off < LARGE_WINDOW ? (size_t)(total - off) : LARGE_WINDOW;
        char *p;
        if (contiguous) {
            p = (char *)(intptr_t)((intptr_t)buf + tlb + (intptr_t)off);
        } else if (me == root) {
            /* whole elements until the window is full: have < len <= LARGE_WINDOW before,
             * so have + k tsz < len + tsz, the stage's size */
            while (have < len && next < count) {
                MPI_Count k = (MPI_Count)((len - have + (size_t)tsz - 1) / (size_t)tsz);
                if (k > count - next) k = count - next;
                size_t kb = (size_t)k * (size_t)tsz;
                if (prc == MPI_SUCCESS)
                    prc = pack_io(0, elem_at(buf, next, ext), k, dt, tlb, stage + have, kb, comm);
                /* a root whose pack failed still sends (zeros): nobody waits for it */
                if (prc != MPI_SUCCESS) memset(stage + have, 0, kb);
                have += kb;
                next += k;
            }
            p = stage;
        } else {
            p = stage + have; /* after the part of an element left by the last window */
        }
        rc = bcast_bytes(s, p, len, root, 0);
        if (rc != NUMACOLL_OK || contiguous) continue;
        if (me == root) {
            have -= len;
            memmove(stage, stage + len, have); /* the rest of a cut element first */
        } else {
            have += len;
            MPI_Count k = (MPI_Count)(have / (size_t)tsz); /* the whole elements staged */
            size_t kb = (size_t)k * (size_t)tsz;
            if (k && prc == MPI_SUCCESS)
                prc = pack_io(1, elem_at(buf, next, ext), k, dt, tlb, stage, kb, comm);
            next += k;
            have -= kb;
            memmove(stage, stage + kb, have); /* a cut element's first part */
        }
    }
    free(stage);
    if (rc != NUMACOLL_OK) return bcast_result(s, comm, rc, root);
    if (!contiguous) COUNT(bcast_staged);
    if (s->team && !s->bcast_native) COUNT(bcast_numacoll);
    return prc;
}

/* The native broadcast of a count that may exceed INT_MAX: MPI-4's PMPI_Bcast_c; with an
 * MPI-3 library only bytes can come this far (numacoll_mpi_bcast_with), in int pieces. */
static int native_bcast_count(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (count <= INT_MAX) return PMPI_Bcast(buf, (int)count, dt, root, comm);
#if MPI_VERSION >= 4
    return PMPI_Bcast_c(buf, count, dt, root, comm);
#else
    if (dt != MPI_BYTE) return MPI_ERR_COUNT;
    for (MPI_Count off = 0; off < count; off += INT_MAX) {
        int n = count - off < INT_MAX ? (int)(count - off) : INT_MAX;
        int rc = PMPI_Bcast((char *)buf + off, n, MPI_BYTE, root, comm);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
#endif
}

/* A broadcast of @p count > INT_MAX elements of @p tsz > 0 bytes (MPI_Bcast_c, bytes from
 * numacoll_mpi_bcast_with): the communicator step as MPI_Bcast's general path, then the
 * large path, or the native call where numacoll does not broadcast. */
static int bcast_large_entry(void *buf, MPI_Count count, MPI_Datatype dt, MPI_Count tsz, int root,
                             MPI_Comm comm)
{
    COUNT(bcast_calls);
    ensure_init();
    nc_comm_t *s = comm_get(comm, bcast_units(count, tsz), 0);
    uint64_t bytes;
    if (!g_bcast || !s || s->mode == MODE_PASS || s->mode == MODE_DEFER || root < 0 ||
        root >= s->size || (s->mode == MODE_FLAT && (!s->team || s->bcast_native)) ||
        __builtin_mul_overflow((uint64_t)count, (uint64_t)tsz, &bytes))
        return native_bcast_count(buf, count, dt, root, comm);
    return bcast_large(s, buf, count, dt, tsz, root, comm);
}

static int bcast_general(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    COUNT(bcast_calls);
    ensure_init();
    if (comm == MPI_COMM_NULL || count < 0 || dt == MPI_DATATYPE_NULL || buf == MPI_IN_PLACE)
        return PMPI_Bcast(buf, count, dt, root, comm); /* native semantics and errors */
    MPI_Count tsz = -1;
    int tsz_ok = PMPI_Type_size_x(dt, &tsz) == MPI_SUCCESS && tsz >= 0;
    uint64_t units = bcast_units(count, tsz);
    /* with NUMACOLL_MPI_BCAST=0 too: every member then counts the same calls toward the
     * deferral, and one that differs from the others in it is found in the agreement */
    nc_comm_t *s = comm_get(comm, units, 0);
    if (!g_bcast || !s || s->mode == MODE_PASS || s->mode == MODE_DEFER || root < 0 ||
        root >= s->size)
        return PMPI_Bcast(buf, count, dt, root, comm);
    if (s->mode == MODE_FLAT && (!s->team || s->bcast_native))
        return PMPI_Bcast(buf, count, dt, root, comm);

    MPI_Aint lb = 0, ext = 0, tlb = 0, text = 0;
    if (!tsz_ok || PMPI_Type_get_extent(dt, &lb, &ext) ||
        PMPI_Type_get_true_extent(dt, &tlb, &text))
        return PMPI_Bcast(buf, count, dt, root, comm); /* let the MPI report it */
    size_t bytes;
    if (__builtin_mul_overflow((size_t)count, (size_t)tsz, &bytes))
        return PMPI_Bcast(buf, count, dt, root, comm);
    if (bytes > INT_MAX) return bcast_large(s, buf, count, dt, tsz, root, comm);
    int contiguous = count == 0 || ((size_t)text == (size_t)tsz && (count == 1 || ext == tsz));
    int rc;
    if (contiguous) {
        rc = bcast_bytes(s, (char *)buf + tlb, bytes, root, 0);
    } else {
        /* stage through a packed buffer: root and receivers may use different (count,
         * datatype) pairs with the same type signature; sizes compare in bytes */
        int cap = 0;
        if (PMPI_Pack_size(count, dt, comm, &cap) != MPI_SUCCESS || cap < (int)bytes)
            cap = (int)bytes;
        char *stage = malloc(cap ? (size_t)cap : 1);
        if (!stage) return raise_error(comm, "MPI_Bcast", NUMACOLL_ERR_NOMEM);
        int prc = MPI_SUCCESS;
        if (s->rank == root) {
            prc = pack_io(0, buf, count, dt, tlb, stage, cap, comm);
            /* a root whose pack failed (its MPI has called the error handler) still takes
             * part, with zeros, so that the others do not wait for it forever */
            if (prc != MPI_SUCCESS) memset(stage, 0, (size_t)cap);
        }
        rc = bcast_bytes(s, stage, bytes, root, 0);
        if (rc == NUMACOLL_OK && s->rank != root)
            prc = pack_io(1, buf, count, dt, tlb, stage, bytes, comm);
        free(stage);
        COUNT(bcast_staged);
        if (rc == NUMACOLL_OK && prc != MPI_SUCCESS) return prc;
    }
    if (rc == NUMACOLL_OK && s->team && !s->bcast_native) COUNT(bcast_numacoll);
    return bcast_result(s, comm, rc, root);
}

/* ---- broadcast variants (benchmarks) ------------------------------------------------ */

/* the copy modes of the queue path (nc_bcast_opts_t.nt), forced for every queue message */
static const char *const copy_modes[] = {"copy:plain", "copy:stream-root", "copy:stream-recv",
                                         "copy:stream"};
enum { NCOPY = 4 };
/* the inline path's cache hint forced off / on (nc_bcast_opts_t.demote), after the copy modes */
static const char *const demote_modes[] = {"demote:off", "demote:on"};
enum { NDEMOTE = 2 };
/* the inline path's write prefetch forced off / on (nc_bcast_opts_t.prefetch), after those */
static const char *const prefetch_modes[] = {"prefetch:off", "prefetch:on"};
enum { NPREFETCH = 2 };

const char *numacoll_mpi_bcast_variant_name(int i)
{
    static char names[NC_BTREE_COUNT + 1][32];
    if (i < 0 || i > NC_BTREE_COUNT + NCOPY + NDEMOTE + NPREFETCH) return NULL;
    if (i > NC_BTREE_COUNT + NCOPY + NDEMOTE)
        return prefetch_modes[i - NC_BTREE_COUNT - NCOPY - NDEMOTE - 1];
    if (i > NC_BTREE_COUNT + NCOPY) return demote_modes[i - NC_BTREE_COUNT - NCOPY - 1];
    if (i > NC_BTREE_COUNT) return copy_modes[i - NC_BTREE_COUNT - 1];
    if (!names[i][0]) {
        if (i < NC_BTREE_COUNT)
            snprintf(names[i], sizeof names[i], "tree:%s", nc_bcast_tree_names[i]);
        else
            snprintf(names[i], sizeof names[i], "cma");
    }
    return names[i];
}

int numacoll_mpi_bcast_with(void *buf, size_t bytes, int root, MPI_Comm comm, const char *variant)
{
    if (bytes > (size_t)INT64_MAX) return MPI_ERR_COUNT; /* beyond any MPI_Count */
    if (comm == MPI_COMM_NULL)
        return native_bcast_count(buf, (MPI_Count)bytes, MPI_BYTE, root, comm);
    if (!variant)
        return bytes <= INT_MAX ? MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, comm)
                                : bcast_large_entry(buf, (MPI_Count)bytes, MPI_BYTE, 1, root, comm);
    ensure_init();
    nc_comm_t *s = comm_get(comm, 1, 1);
    if (!s || s->mode != MODE_FLAT || !s->team || root < 0 || root >= s->size)
        return numacoll_mpi_bcast_with(buf, bytes, root, comm, NULL);
    nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
    int i = 0;
    const char *vn;
    while ((vn = numacoll_mpi_bcast_variant_name(i)) && strcmp(vn, variant) != 0)
        i++;
    if (!vn) return MPI_ERR_ARG;
    if (i < NC_BTREE_COUNT)
        o.tree = i;
    else if (i == NC_BTREE_COUNT)
        o.cma_min = 1;
    else if (i <= NC_BTREE_COUNT + NCOPY)
        o.nt = i - NC_BTREE_COUNT - 1; /* bit 0 root streams, bit 1 receivers stream */
    else if (i <= NC_BTREE_COUNT + NCOPY + NDEMOTE)
        o.demote = i - NC_BTREE_COUNT - NCOPY - 1; /* demote:off = 0, demote:on = 1 */
    else
        o.prefetch = i - NC_BTREE_COUNT - NCOPY - NDEMOTE - 1; /* prefetch:off 0, :on 1 */
    nc_team_op_enter(s->team, "bcast");
    int rc = nc_bcast_run_opts(s->team, buf, bytes, root, &o);
    if (rc != NUMACOLL_OK) {
        s->broken = 1;
        return raise_error(comm, "MPI_Bcast", rc);
    }
    nc_team_op_leave(s->team);
    return MPI_SUCCESS;
}

/* ---- Fortran entry points ------------------------------------------------------------
 * mpif.h / `use mpi` call these names directly; Open MPI's own versions call PMPI_* and
 * would bypass the C wrappers, so they are interposed themselves (MPICH 4.0's call the C
 * MPI_Bcast, but that is not a documented promise, so its names are interposed too). Open MPI's
 * mpi_f08 module goes through ompi_barrier_f / ompi_bcast_f; MPICH's mpi_f08 barrier is
 * mpi_barrier_f08_. */

static void f_barrier(MPI_Fint *comm, MPI_Fint *ierr)
{
    COUNT(fortran_calls);
    int rc = barrier_impl(PMPI_Comm_f2c(*comm), NULL, 1);
    if (ierr) *ierr = (MPI_Fint)rc;
}

/* Fortran's MPI_BOTTOM and MPI_IN_PLACE arrive as the addresses of variables in the MPI's
 * Fortran library; the C call needs C's constants (an MPI_BOTTOM left as an address makes
 * every absolute displacement of the datatype point elsewhere: a crash or silent
 * corruption). The symbols are weak: a C program has no Fortran library loaded. */
#if defined(OPEN_MPI) && OPEN_MPI
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_in_place_ __attribute__((weak));
static void *f_buf(void *b)
{
    if (&mpi_fortran_bottom_ && b == (void *)&mpi_fortran_bottom_) return MPI_BOTTOM;
    if (&mpi_fortran_in_place_ && b == (void *)&mpi_fortran_in_place_) return MPI_IN_PLACE;
    return b;
}
static int f_delegate_bcast(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root,
                            MPI_Fint *comm, MPI_Fint *ierr)
{
    (void)buf, (void)count, (void)dt, (void)root, (void)comm, (void)ierr;
    return 0;
}
#else
/* MPICH: pointers to the Fortran constants, filled by its Fortran runtime on first use
 * (MPIR_F_NeedInit != 0 until then). Before that, the call goes to MPICH's own binding,
 * which initialises them, maps the constants and calls MPI_Bcast (so ours) itself. */
extern void *MPIR_F_MPI_BOTTOM __attribute__((weak));
extern void *MPIR_F_MPI_IN_PLACE __attribute__((weak));
extern int MPIR_F_NeedInit __attribute__((weak));
extern void pmpi_bcast_(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
    __attribute__((weak));
static void *f_buf(void *b)
{
    if (&MPIR_F_MPI_BOTTOM && MPIR_F_MPI_BOTTOM && b == MPIR_F_MPI_BOTTOM) return MPI_BOTTOM;
    if (&MPIR_F_MPI_IN_PLACE && MPIR_F_MPI_IN_PLACE && b == MPIR_F_MPI_IN_PLACE)
        return MPI_IN_PLACE;
    return b;
}
static int f_delegate_bcast(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root,
                            MPI_Fint *comm, MPI_Fint *ierr)
{
    if (!(&MPIR_F_NeedInit && MPIR_F_NeedInit && pmpi_bcast_)) return 0;
    MPI_Fint rc = MPI_SUCCESS;
    pmpi_bcast_(buf, count, dt, root, comm, &rc);
    if (ierr) *ierr = rc;
    return 1;
}
#endif

static void f_bcast(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,
                    MPI_Fint *ierr)
{
    COUNT(fortran_calls);
    if (f_delegate_bcast(buf, count, dt, root, comm, ierr)) return;
    int rc =
        MPI_Bcast(f_buf(buf), (int)*count, PMPI_Type_f2c(*dt), (int)*root, PMPI_Comm_f2c(*comm));
    if (ierr) *ierr = (MPI_Fint)rc;
}

#define NC_F_BARRIER(name)                                                                         \
    void name(MPI_Fint *comm, MPI_Fint *ierr);                                                     \
    void name(MPI_Fint *comm, MPI_Fint *ierr)                                                      \
    {                                                                                              \
        f_barrier(comm, ierr);                                                                     \
    }
#define NC_F_BCAST(name)                                                                           \
    void name(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,            \
              MPI_Fint *ierr);                                                                     \
    void name(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,            \
              MPI_Fint *ierr)                                                                      \
    {                                                                                              \
        f_bcast(buf, count, dt, root, comm, ierr);                                                 \
    }

NC_F_BARRIER(mpi_barrier_)
NC_F_BARRIER(mpi_barrier__)
NC_F_BARRIER(mpi_barrier)
NC_F_BARRIER(MPI_BARRIER)
NC_F_BCAST(mpi_bcast_)
NC_F_BCAST(mpi_bcast__)
NC_F_BCAST(mpi_bcast)
NC_F_BCAST(MPI_BCAST)
#if defined(OPEN_MPI) && OPEN_MPI
NC_F_BARRIER(ompi_barrier_f)
NC_F_BARRIER(mpi_barrier_f08_)
NC_F_BCAST(ompi_bcast_f)
#else
NC_F_BARRIER(mpi_barrier_f08_)
#endif
