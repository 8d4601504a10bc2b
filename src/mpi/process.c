/*
 * libnumacoll_mpi: process-wide state. The configuration (read once, at the first
 * intercepted call), the counters of numacoll_mpi_stats, the callbacks given to the core
 * (OOB allgather, MPI progress), the keyvals whose delete callbacks release a
 * communicator's state at MPI_Comm_free and everything left at MPI_Finalize, and the
 * messages of verbose mode.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* dl_iterate_phdr, RTLD_DEFAULT */
#endif
#include "mpi_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>

size_t g_idle_qmax;

pthread_once_t g_once = PTHREAD_ONCE_INIT;
_Atomic int g_inited; /* set (release) at the end of init_once */
/* 0: numacoll runs no collective here (NUMACOLL_DISABLE=1 or an invalid configuration).
 * Such a process still takes part in each communicator's set-up agreement, voting
 * "inactive", so that members that run numacoll learn it and stay native with it instead
 * of waiting in an allgather it never calls (see comm_setup). */
int g_active;
int g_bcast;       /* route MPI_Bcast through numacoll */
int g_reduce;      /* route MPI_Allreduce and MPI_Reduce through numacoll */
int g_gather;      /* route the gather family through numacoll */
int g_fake_nodes;  /* NUMACOLL_FAKE_NODES */
int g_bcast_check; /* NUMACOLL_BCAST_CHECK: hierarchical mode checks at this level */
int g_stats_print; /* NUMACOLL_MPI_STATS */
int g_verbose;
int g_cache_max;        /* NUMACOLL_MPI_TEAM_CACHE */
uint64_t g_setup_after; /* NUMACOLL_MPI_SETUP_AFTER (units) */
uint64_t g_setup_after_oversub; /* NUMACOLL_MPI_SETUP_AFTER_OVERSUB (units) */
static _Atomic uint64_t g_node_key; /* node_key(), once known; 0 = not yet */

pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* keyvals + list */
int g_keyval = MPI_KEYVAL_INVALID;
static int g_self_keyval = MPI_KEYVAL_INVALID;
int g_finalizing;
/* the release hook on MPI_COMM_SELF is set: the world model is initialised (MPI_Init). A
 * process that uses only MPI-4 sessions has no MPI_COMM_SELF or MPI_COMM_WORLD to use */
_Atomic int g_self_hooked;
nc_comm_t *g_list;
MPI_Group g_world_group; /* MPI_GROUP_NULL from mpi_bind on (a handle looked up there) */

static _Atomic int g_warned;

/* A per-thread one-entry cache of the last communicator's state in front of the attribute
 * look-up (Open MPI's costs about 0.2 us, as much as a whole barrier). Every release of a
 * state bumps g_gen, which invalidates all cached entries (a freed communicator's handle
 * may come back for a new one). */
_Atomic uint64_t g_gen = 1;
__thread __attribute__((tls_model("initial-exec"))) nc_last_comm_t tl_last;

nc_mpi_counters_t g_st;


/* A key that is equal for processes of one machine: host name and kernel boot id; 0 when
 * the boot id cannot be read (no descriptor left, /proc not mounted): without it two
 * machines of one host name would look like one. */
static uint64_t node_key(void)
{
    char buf[256] = {0};
    uint64_t h = NC_FNV_BASIS;
    if (gethostname(buf, sizeof buf - 1) == 0) h = nc_fnv1a(h, buf, strlen(buf));
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f) return 0;
    memset(buf, 0, sizeof buf);
    int ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!ok) return 0;
    h = nc_fnv1a(h, buf, strlen(buf));
    return h ? h : 1;
}

uint64_t node_key_now(void)
{
    /* relaxed: every thread computes the same value; a racing second store is harmless */
    uint64_t k = atomic_load_explicit(&g_node_key, memory_order_relaxed);
    if (k) return k;
    k = node_key();
    atomic_store_explicit(&g_node_key, k, memory_order_relaxed);
    return k;
}

#if MPI_VERSION >= 4
nc_mpi4_t nc_mpi4;
#endif
#ifdef NC_OMPI_LATE_BIND
nc_ompi_globals_t nc_ompi_globals;
#endif

/* the loaded objects' names (dl_iterate_phdr), at most 256 */
typedef struct {
    char *name[256];
    int n;
} loaded_t;

static int loaded_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    loaded_t *l = arg;
    (void)size;
    if (info->dlpi_name && info->dlpi_name[0] && l->n < 256) l->name[l->n++] = strdup(info->dlpi_name);
    return 0;
}

/* The preload names no MPI library: its PMPI_* calls bind to the MPI in the process's
 * global scope. A program that loads its MPI with dlopen(RTLD_LOCAL) (python importing an
 * mpi4py) leaves it out of that scope: the loaded object that defines PMPI_Initialized is
 * made global (with its dependencies) before this layer's first PMPI call. */
static void mpi_global_scope(void)
{
    if (dlsym(RTLD_DEFAULT, "PMPI_Initialized")) return;
    loaded_t l = {.n = 0};
    dl_iterate_phdr(loaded_cb, &l);
    int done = 0;
    for (int i = 0; i < l.n; i++) {
        void *h = done || !l.name[i] ? NULL : dlopen(l.name[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h && dlsym(h, "PMPI_Initialized")) {
            void *g = dlopen(l.name[i], RTLD_LAZY | RTLD_NOLOAD | RTLD_GLOBAL);
            if (g) {
                done = 1;
                dlclose(g);
            }
        }
        if (h) dlclose(h);
        free(l.name[i]);
    }
}

/* The MPI this process runs: in the global scope, (Open MPI) its predefined objects and its
 * MPI-4 entry points looked up. */
static void mpi_bind(void)
{
    mpi_global_scope();
#ifdef NC_OMPI_LATE_BIND
#define NC_OMPI_GLOBAL(name) nc_ompi_globals.name = dlsym(RTLD_DEFAULT, #name);
#include "nc_ompi_globals.h"
#undef NC_OMPI_GLOBAL
    if (!nc_ompi_globals.ompi_mpi_comm_world) {
        /* no handle of this MPI could be used: say why instead of failing in its calls */
        fprintf(stderr, "numacoll: libnumacoll_mpi for Open MPI is loaded into a "
                        "process whose MPI is not Open MPI (no ompi_mpi_comm_world); preload "
                        "the library of the program's MPI (numacoll-run picks it; "
                        "numacoll-info --mpis lists them)\n");
        abort();
    }
#endif
#if MPI_VERSION >= 4
#define NC_FIND(fn) (*(void **)&nc_mpi4.fn = dlsym(RTLD_DEFAULT, #fn))
    NC_FIND(PMPI_Bcast_c);
    NC_FIND(PMPI_Allreduce_c);
    NC_FIND(PMPI_Reduce_c);
    NC_FIND(PMPI_Pack_c);
    NC_FIND(PMPI_Unpack_c);
    NC_FIND(PMPI_Type_size_c);
    NC_FIND(PMPI_Type_create_hindexed_c);
    NC_FIND(PMPI_Session_finalize);
    NC_FIND(PMPI_Allgather_c);
    NC_FIND(PMPI_Allgatherv_c);
    NC_FIND(PMPI_Gather_c);
    NC_FIND(PMPI_Gatherv_c);
    NC_FIND(PMPI_Scatter_c);
    NC_FIND(PMPI_Scatterv_c);
    NC_FIND(PMPI_Alltoall_c);
    NC_FIND(PMPI_Alltoallv_c);
    NC_FIND(PMPI_Alltoallw_c);
    NC_FIND(PMPI_Neighbor_allgather_c);
    NC_FIND(PMPI_Neighbor_allgatherv_c);
    NC_FIND(PMPI_Neighbor_alltoall_c);
    NC_FIND(PMPI_Neighbor_alltoallv_c);
    NC_FIND(PMPI_Neighbor_alltoallw_c);
#undef NC_FIND
#endif
    g_world_group = MPI_GROUP_NULL;
}

void init_once(void)
{
    mpi_bind();
    if (numacoll_config_check() != NUMACOLL_OK) {
        mpi_say("numacoll: %s; libnumacoll_mpi falls back to the native MPI collectives\n",
                numacoll_last_error());
        g_active = 0;
        /* the rows that are valid still hold: the user who asked for the counts gets them,
         * and they show that every call went to the MPI */
        g_verbose = nc_verbose();
        g_stats_print = nc_cfg_bool(NC_CFG_MPI_STATS);
        atomic_store_explicit(&g_inited, 1, memory_order_release);
        return;
    }
    g_verbose = nc_verbose();
    g_active = !nc_cfg_bool(NC_CFG_DISABLE);
    g_bcast = nc_cfg_bool(NC_CFG_MPI_BCAST);
    g_reduce = nc_cfg_bool(NC_CFG_MPI_REDUCE);
    g_gather = nc_cfg_bool(NC_CFG_MPI_GATHER);
    g_fake_nodes = (int)nc_cfg_int(NC_CFG_FAKE_NODES);
    g_bcast_check = nc_cfg_bool(NC_CFG_BCAST_CHECK);
    g_stats_print = nc_cfg_bool(NC_CFG_MPI_STATS);
    g_cache_max = (int)nc_cfg_int(NC_CFG_MPI_TEAM_CACHE);
    g_idle_qmax = nc_cfg_size(NC_CFG_MPI_TEAM_CACHE_QUEUE);
    g_setup_after = (uint64_t)nc_cfg_int(NC_CFG_MPI_SETUP_AFTER);
    g_setup_after_oversub = (uint64_t)nc_cfg_int(NC_CFG_MPI_SETUP_AFTER_OVERSUB);
    node_key_now();
    /* release: pairs with the acquire in ensure_init(); a thread that sees 1 sees the above */
    atomic_store_explicit(&g_inited, 1, memory_order_release);
}

/* every counter into *o (the library's whole struct) */
static void stats_fill(numacoll_mpi_stats_t *o)
{
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
    o->allreduce_calls = READ(allreduce_calls);
    o->allreduce_numacoll = READ(allreduce_numacoll);
    o->reduce_calls = READ(reduce_calls);
    o->reduce_numacoll = READ(reduce_numacoll);
    for (nc_comm_t *s = g_list; s; s = s->next) {
#define LIVE(x) atomic_load_explicit(&s->st_##x, memory_order_relaxed)
        o->allreduce_calls += LIVE(allreduce_calls);
        o->allreduce_numacoll += LIVE(allreduce_numacoll);
        o->reduce_calls += LIVE(reduce_calls);
        o->reduce_numacoll += LIVE(reduce_numacoll);
#undef LIVE
    }
    pthread_mutex_unlock(&g_lock);
    o->reduce_scatter_block_calls = READ(reduce_scatter_block_calls);
    o->reduce_scatter_block_numacoll = READ(reduce_scatter_block_numacoll);
    o->reduce_scatter_calls = READ(reduce_scatter_calls);
    o->reduce_scatter_numacoll = READ(reduce_scatter_numacoll);
    pthread_mutex_lock(&g_lock); /* g_st's scan counts with the live ones (as above) */
    o->scan_calls = READ(scan_calls);
    o->scan_numacoll = READ(scan_numacoll);
    for (nc_comm_t *s = g_list; s; s = s->next) {
        o->scan_calls += atomic_load_explicit(&s->st_scan_calls, memory_order_relaxed);
        o->scan_numacoll += atomic_load_explicit(&s->st_scan_numacoll, memory_order_relaxed);
    }
    pthread_mutex_unlock(&g_lock);
    o->exscan_calls = READ(exscan_calls);
    o->exscan_numacoll = READ(exscan_numacoll);
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
    move_stats_fill(o);
    alltoall_stats_fill(o);
    neighbor_stats_fill(o);
}

size_t numacoll_mpi_stats_sized(numacoll_mpi_stats_t *out, size_t size)
{
    if (out && size > 0) {
        numacoll_mpi_stats_t all;
        memset(&all, 0, sizeof all);
        stats_fill(&all);
        /* the caller's struct may be older (shorter) or newer (longer) than this one */
        const size_t have = size < sizeof all ? size : sizeof all;
        memcpy(out, &all, have);
        if (size > have) memset((unsigned char *)out + have, 0, size - have);
    }
    return sizeof(numacoll_mpi_stats_t);
}

int numacoll_mpi_stats(numacoll_mpi_stats_t *o)
{
    if (!o) return -1;
    stats_fill(o);
    return 0;
}

const char *numacoll_mpi_flavor(void)
{
    return NC_FLAVOR;
}

/* the family this preload serves, readable without loading it (numacoll-run --lib reads
 * it with grep: the MPICH-family preload names no MPI library to tell it by) */
__attribute__((used)) static const char nc_family_tag[] = "numacoll-mpi-family=" NC_FLAVOR;

/* ---- callbacks given to the core ---------------------------------------------------- */

int oob_allgather(const void *sendbuf, void *recvbuf, size_t size, void *ctx)
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
void mpi_progress(void *ctx)
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
int world_active(void)
{
    int init = 0, fini = 0;
    PMPI_Initialized(&init);
    PMPI_Finalized(&fini);
    return init && !fini;
}

void print_stats(void)
{
    /* the MPI_COMM_WORLD rank; a sessions-only process has none: its pid */
    int r = -1, world = world_active();
    if (world) PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    char more[400];
    stats_scatter_scan(more, sizeof more);
    char move[512];
    move_stats_text(move, sizeof move);
    char a2a[256];
    alltoall_stats_text(a2a, sizeof a2a);
    char nbr[400];
    neighbor_stats_text(nbr, sizeof nbr);
    mpi_say(
            "numacoll-mpi stats [%s %s %d]: MPI_Barrier %llu (numacoll %llu), MPI_Bcast %llu "
            "(numacoll %llu, staged %llu), MPI_Allreduce %llu (numacoll %llu), MPI_Reduce %llu "
            "(numacoll %llu), fortran %llu, comms %llu set up / %llu freed, teams "
            "%llu created / %llu destroyed / %llu failed / %llu reused (%llu with their broadcast "
            "state), %llu deferred / %llu of them set up later, progress %llu%s%s%s%s\n",
            NC_FLAVOR, world ? "rank" : "pid", world ? r : (int)getpid(),
            (unsigned long long)READ(barrier_calls), (unsigned long long)READ(barrier_numacoll),
            (unsigned long long)READ(bcast_calls), (unsigned long long)READ(bcast_numacoll),
            (unsigned long long)READ(bcast_staged), (unsigned long long)READ(allreduce_calls),
            (unsigned long long)READ(allreduce_numacoll), (unsigned long long)READ(reduce_calls),
            (unsigned long long)READ(reduce_numacoll), (unsigned long long)READ(fortran_calls),
            (unsigned long long)READ(comms_set_up), (unsigned long long)READ(comms_freed),
            (unsigned long long)READ(teams_created), (unsigned long long)READ(teams_destroyed),
            (unsigned long long)READ(team_failures), (unsigned long long)READ(teams_reused),
            (unsigned long long)READ(bcast_states_kept), (unsigned long long)READ(comms_deferred),
            (unsigned long long)READ(comms_promoted), (unsigned long long)READ(progress_calls),
            more, move, a2a, nbr);
    const uint64_t deferred = READ(comms_deferred), promoted = READ(comms_promoted);
    if (deferred > promoted)
        mpi_say("numacoll-mpi[%s %s %d]: %llu of the %llu deferred communicators stayed with "
                "the MPI library's collectives: their calls never added up to "
                "NUMACOLL_MPI_SETUP_AFTER (0 sets a communicator up at its first call)\n",
                NC_FLAVOR, world ? "rank" : "pid", world ? r : (int)getpid(),
                (unsigned long long)(deferred - promoted), (unsigned long long)deferred);
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
    mpi_say(
            "numacoll-mpi[%s]: thread level %s: supported%s\n", NC_FLAVOR, name,
            level == MPI_THREAD_MULTIPLE
                ? " (collectives on different communicators may run at once from different "
                  "threads, communicator creation and freeing included)"
                : "");
}

/* The keyvals' copy callback: the attribute is not copied to a duplicate (what
 * MPI_COMM_NULL_COPY_FN does; ours because Open MPI's is a libmpi function whose address
 * would bind when the preload loads, see nc_ompi_globals). */
static int no_copy_cb(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra, (void)in, (void)out;
    *flag = 0;
    return MPI_SUCCESS;
}

int ensure_keyvals(void)
{
    int ok = 1;
    pthread_mutex_lock(&g_lock);
    if (g_finalizing) {
        ok = 0;
    } else if (g_keyval == MPI_KEYVAL_INVALID &&
               PMPI_Comm_create_keyval(no_copy_cb, comm_delete_cb, &g_keyval, NULL) !=
                   MPI_SUCCESS) {
        g_keyval = MPI_KEYVAL_INVALID;
        ok = 0;
    } else if (!atomic_load_explicit(&g_self_hooked, memory_order_relaxed) && world_active()) {
        /* the release at MPI_Finalize; set once the world model is up (it may come after
         * communicators of sessions). A sessions-only process has no MPI_COMM_SELF (MPICH
         * aborts on it): its states are released by MPI_Comm_free */
        if ((g_self_keyval == MPI_KEYVAL_INVALID &&
             PMPI_Comm_create_keyval(no_copy_cb, self_delete_cb, &g_self_keyval, NULL) !=
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

void comm_label(MPI_Comm comm, char *name, size_t n)
{
    char buf[MPI_MAX_OBJECT_NAME] = {0};
    int len = 0;
    if (PMPI_Comm_get_name(comm, buf, &len) != MPI_SUCCESS || len == 0)
        snprintf(buf, sizeof buf, "communicator");
    snprintf(name, n, "%s", buf);
}

void mpi_say(const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = (size_t)n < sizeof buf - 1 ? (size_t)n : sizeof buf - 2;
    if (len == 0 || buf[len - 1] != '\n') buf[len++] = '\n';
    /* one write: stdio may cut an unbuffered stream's line into several */
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
}

void warn_fallback(const nc_comm_t *s, const char *what, const char *msg)
{
    if (g_verbose < 1) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&g_warned, &expected, 1, memory_order_relaxed,
                                                 memory_order_relaxed))
        return;
    mpi_say(
            "numacoll-mpi[%d/%d]: warning: %s failed (%s); using the native MPI collectives "
            "there (reported once)\n",
            s->rank, s->size, what, msg);
}

void warn_config(const nc_comm_t *s, const char *why)
{
    static _Atomic int warned;
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&warned, &expected, 1, memory_order_relaxed,
                                                 memory_order_relaxed))
        return;
    mpi_say("numacoll-mpi[%d/%d]: warning: agreement on the numacoll configuration failed "
            "(%s); using the native MPI collectives on communicators whose members differ "
            "(reported once)\n",
            s->rank, s->size, why);
}

void warn_setup(const nc_comm_t *s, const char *what, int rc)
{
    if (rc != NUMACOLL_ERR_CONFIG) {
        warn_fallback(s, what, numacoll_last_error());
        return;
    }
    char why[600];
    snprintf(why, sizeof why, "%s: %s", what, numacoll_last_error());
    warn_config(s, why);
}

/* Report a numacoll failure (timeout, dead peer) like the native call would report an
 * internal error: through the communicator's error handler. */
static inline int error_class(int rc)
{
    return rc == NUMACOLL_ERR_NOMEM ? MPI_ERR_NO_MEM : MPI_ERR_OTHER;
}

int raise_error(MPI_Comm comm, const char *op, int rc)
{
    mpi_say("numacoll-mpi: %s failed: %s (%s)\n", op, numacoll_status_name(rc),
            numacoll_last_error());
    PMPI_Comm_call_errhandler(comm, error_class(rc));
    return error_class(rc);
}

int raise_error_on(nc_comm_t *s, MPI_Comm comm, const char *op, int rc)
{
    if (!s || s->mode != MODE_HIER || !s->team || !s->node_of || !s->rank_in_node)
        return raise_error(comm, op, rc);
    char map[256];
    size_t o = 0;
    map[0] = '\0';
    for (int r = 0; r < s->size && o + 24 < sizeof map; r++)
        if (s->node_of[r] == s->my_node)
            o += (size_t)snprintf(map + o, sizeof map - o, "%s%d = rank %d", o ? ", " : "",
                                  s->rank_in_node[r], r);
    mpi_say("numacoll-mpi: %s failed: %s (%s; team '%s' members: %s%s)\n", op,
            numacoll_status_name(rc), numacoll_last_error(), s->team->name, map,
            o + 24 < sizeof map ? "" : ", ...");
    PMPI_Comm_call_errhandler(comm, error_class(rc));
    return error_class(rc);
}

#if MPI_VERSION >= 4
/* A process that uses only sessions never reaches the MPI_Finalize hook on MPI_COMM_SELF:
 * NUMACOLL_MPI_STATS prints at its MPI_Session_finalize instead. (Communicator states are
 * released by MPI_Comm_free, as in the world model.) */
int MPI_Session_finalize(MPI_Session *session)
{
    ensure_init();
    if (g_stats_print && !atomic_load_explicit(&g_self_hooked, memory_order_relaxed)) print_stats();
    return NC_HAVE(PMPI_Session_finalize) ? nc_mpi4.PMPI_Session_finalize(session) : MPI_ERR_SESSION;
}
#endif
