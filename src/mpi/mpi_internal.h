/*
 * libnumacoll_mpi's private header: the communicator state, the process-wide state and the
 * functions the layer's files share. Everything declared here has hidden visibility: the
 * preload exports only the MPI entry points and numacoll_mpi.h.
 *
 * Files (src/mpi/):
 *   process.c         configuration, counters, callbacks given to the core, keyvals and
 *                     the release at MPI_Finalize, messages
 *   comm.c            a communicator's state: set-up agreement, flat or hierarchical
 *                     mode, deferral (NUMACOLL_MPI_SETUP_AFTER), release
 *   team_cache.c      idle teams of freed communicators, reused by identity
 *   pmpi_barrier.c    MPI_Barrier
 *   pmpi_bcast.c      MPI_Bcast, MPI_Bcast_c: the fast path, node and hierarchical parts
 *   pmpi_bcast_large.c the general path (datatypes, staging) and messages over 2 GiB
 *   pmpi_reduce.c     MPI_Allreduce, MPI_Reduce (and _c): flat and hierarchical
 *   pmpi_scatter_scan.c  MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan (and _c)
 *   reduce_types.c    which datatypes and ops the reductions take, as which core types
 *   pmpi_fortran.c    the Fortran entry points
 *   pmpi_move.c       what the gather family shares: datatype layouts and staging, native
 *                     calls, errors, counters
 *   pmpi_move_hier.c  the gather family's hierarchical mode (node steps and leaders' step)
 *   pmpi_allgather.c  MPI_Allgather, MPI_Allgatherv (and _c)
 *   pmpi_gather.c     MPI_Gather, MPI_Gatherv (and _c)
 *   pmpi_scatter.c    MPI_Scatter, MPI_Scatterv (and _c)
 *   pmpi_alltoall.c   MPI_Alltoall, MPI_Alltoallv (and _c): flat mode, staging, counters
 */
#ifndef NC_MPI_INTERNAL_H
#define NC_MPI_INTERNAL_H

#include "numacoll_mpi.h"

#include "../team/team_internal.h" /* what this layer may use of libnumacoll's internals */

NC_CFG_LINK(mpi); /* src/team/config_rows.c: the MPI layer's rows, in libnumacoll */

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

/* MPI-4 entry points that an MPI of the same family and ABI may lack (an MPICH 3.x-based
 * vendor MPI under the MPICH-family preload, which names no MPI library): not referenced
 * by name, so the preload loads without them, but looked up in the running MPI when this
 * layer starts (ensure_init: mpi_bind in process.c); NULL where it has none, and the
 * callers take the MPI-3 path or return an error there. */
#if MPI_VERSION >= 4
typedef struct nc_mpi4 {
    __typeof__(PMPI_Bcast_c) *PMPI_Bcast_c;
    __typeof__(PMPI_Allreduce_c) *PMPI_Allreduce_c;
    __typeof__(PMPI_Reduce_c) *PMPI_Reduce_c;
    __typeof__(PMPI_Pack_c) *PMPI_Pack_c;
    __typeof__(PMPI_Unpack_c) *PMPI_Unpack_c;
    __typeof__(PMPI_Type_size_c) *PMPI_Type_size_c;
    __typeof__(PMPI_Type_create_hindexed_c) *PMPI_Type_create_hindexed_c;
    __typeof__(PMPI_Session_finalize) *PMPI_Session_finalize;
    __typeof__(PMPI_Allgather_c) *PMPI_Allgather_c;
    __typeof__(PMPI_Allgatherv_c) *PMPI_Allgatherv_c;
    __typeof__(PMPI_Gather_c) *PMPI_Gather_c;
    __typeof__(PMPI_Gatherv_c) *PMPI_Gatherv_c;
    __typeof__(PMPI_Scatter_c) *PMPI_Scatter_c;
    __typeof__(PMPI_Scatterv_c) *PMPI_Scatterv_c;
    __typeof__(PMPI_Alltoall_c) *PMPI_Alltoall_c;
    __typeof__(PMPI_Alltoallv_c) *PMPI_Alltoallv_c;
} nc_mpi4_t;
extern nc_mpi4_t nc_mpi4;
#define NC_HAVE(fn) (nc_mpi4.fn != NULL)
#endif

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
     * struct's first cache line (comm_alloc aligns it): one line to load per call. */
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

    /* the reductions' counters (the same single-writer rule; not on the fast paths' line) */
    _Atomic uint64_t st_allreduce_calls, st_allreduce_numacoll, st_reduce_calls,
        st_reduce_numacoll;

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
    int reduce_native; /* the core cannot reduce on this team: reductions stay native */
    int check_err;     /* MPI error class of the last failed whole-communicator check */
    /* MODE_DEFER: barrier/bcast calls so far and their units (see defer_step); identical
     * on every member because every member makes the same collective calls in order */
    uint64_t defer_calls, defer_units;
    struct nc_comm *prev, *next;
    int move_native; /* the core cannot run the gather family on this team: native for good */
} nc_comm_t;
_Static_assert(offsetof(nc_comm_t, st_bcast_numacoll) + sizeof(uint64_t) <= 64,
               "the fast paths' fields in the first line");

/* A zeroed state whose first line (the fast paths' fields) starts a cache line; NULL when
 * out of memory. Freed with free(). */
static inline nc_comm_t *comm_alloc(void)
{
    nc_comm_t *s = aligned_alloc(64, (sizeof *s + 63) / 64 * 64);
    if (s) memset(s, 0, sizeof *s);
    return s;
}

/* ---- process-wide state (process.c) --------------------------------------------------- */

extern pthread_once_t g_once;
extern _Atomic int g_inited; /* set (release) at the end of init_once */
/* 0: numacoll runs no collective here (NUMACOLL_DISABLE=1 or an invalid configuration).
 * Such a process still takes part in each communicator's set-up agreement, voting
 * "inactive", so that members that run numacoll learn it and stay native with it instead
 * of waiting in an allgather it never calls (see comm_setup). */
extern int g_active;
extern int g_bcast;       /* route MPI_Bcast through numacoll */
extern int g_reduce;      /* route MPI_Allreduce and MPI_Reduce through numacoll */
extern int g_gather;      /* route the gather family through numacoll (NUMACOLL_MPI_GATHER) */
extern int g_fake_nodes;  /* NUMACOLL_FAKE_NODES */
extern int g_bcast_check; /* NUMACOLL_BCAST_CHECK: hierarchical mode checks at this level */
extern int g_stats_print; /* NUMACOLL_MPI_STATS */
extern int g_verbose;
extern int g_cache_max;        /* NUMACOLL_MPI_TEAM_CACHE */
extern size_t g_idle_qmax;     /* NUMACOLL_MPI_TEAM_CACHE_QUEUE */
extern uint64_t g_setup_after; /* NUMACOLL_MPI_SETUP_AFTER (units) */
/* equal for the processes of one machine (host name, boot id); 0 while the boot id cannot be
 * read (retried at each call) */
uint64_t node_key_now(void);

extern pthread_mutex_t g_lock; /* keyvals, the list of states, the idle-team cache */
extern int g_keyval;
extern int g_finalizing;
/* the release hook on MPI_COMM_SELF is set: the world model is initialised (MPI_Init). A
 * process that uses only MPI-4 sessions has no MPI_COMM_SELF or MPI_COMM_WORLD to use */
extern _Atomic int g_self_hooked;
extern nc_comm_t *g_list;
extern MPI_Group g_world_group;

/* A per-thread one-entry cache of the last communicator's state in front of the attribute
 * look-up (Open MPI's costs about 0.2 us, as much as a whole barrier). Every release of a
 * state bumps g_gen, which invalidates all cached entries (a freed communicator's handle
 * may come back for a new one). */
typedef struct nc_last_comm {
    MPI_Comm comm;
    void *state;
    uint64_t gen;
} nc_last_comm_t;
extern _Atomic uint64_t g_gen;
extern __thread __attribute__((tls_model("initial-exec"))) nc_last_comm_t tl_last;

/* the process totals of numacoll_mpi_stats_t */
typedef struct nc_mpi_counters {
    _Atomic uint64_t barrier_calls, barrier_numacoll, bcast_calls, bcast_numacoll, bcast_staged,
        fortran_calls, comms_set_up, comms_freed, teams_created, teams_destroyed, team_failures,
        progress_calls, teams_reused, bcast_states_kept, comms_deferred, comms_promoted,
        allreduce_calls, allreduce_numacoll, reduce_calls, reduce_numacoll,
        reduce_scatter_block_calls, reduce_scatter_block_numacoll, reduce_scatter_calls,
        reduce_scatter_numacoll, scan_calls, scan_numacoll, exscan_calls, exscan_numacoll;
    /* the gather family, indexed by MV_* (pmpi_move.c) */
    _Atomic uint64_t move_calls[6], move_numacoll[6], move_staged;
    /* pmpi_alltoall.c */
    _Atomic uint64_t alltoall_calls, alltoall_numacoll, alltoallv_calls, alltoallv_numacoll,
        alltoall_staged;
} nc_mpi_counters_t;
extern nc_mpi_counters_t g_st;

#define COUNT(x) atomic_fetch_add_explicit(&g_st.x, 1, memory_order_relaxed)
#define READ(x) atomic_load_explicit(&g_st.x, memory_order_relaxed)
/* one more in a single-writer counter (see nc_comm_t): a plain load and store */
#define BUMP(c)                                                                                    \
    atomic_store_explicit(&(c), atomic_load_explicit(&(c), memory_order_relaxed) + 1,              \
                          memory_order_relaxed)

void init_once(void);
/* Read the configuration once (every intercepted call starts here). The fast path skips
 * the call into pthread_once once initialisation is complete. */
static inline void ensure_init(void)
{
    /* acquire: pairs with init_once's release; a thread that sees 1 sees the settings */
    if (!atomic_load_explicit(&g_inited, memory_order_acquire)) pthread_once(&g_once, init_once);
}

int oob_allgather(const void *sendbuf, void *recvbuf, size_t size, void *ctx);
void mpi_progress(void *ctx);
int world_active(void);
void print_stats(void);
int ensure_keyvals(void);
void comm_label(MPI_Comm comm, char *name, size_t n);
void warn_fallback(const nc_comm_t *s, const char *what, const char *msg);
/* fprintf(stderr, ...) in one write(2) (at most 8 KiB), so that lines of different ranks
 * never interleave; a missing final newline is added */
void mpi_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int raise_error(MPI_Comm comm, const char *op, int rc);

/* ---- communicator state (comm.c) ------------------------------------------------------ */

nc_comm_t *comm_get(MPI_Comm comm, uint64_t units, int force);
void comm_state_free(nc_comm_t *s);
void list_remove_locked(nc_comm_t *s);
int comm_delete_cb(MPI_Comm comm, int keyval, void *attr, void *extra);

/* ---- idle teams (team_cache.c) -------------------------------------------------------- */

enum { REUSE_CANDIDATES = 4 };
void idle_destroy_all(void);
int idle_insert(numacoll_team_t *t, uint64_t sig);
int idle_put(nc_comm_t *s);
int idle_reserve(uint64_t sig, numacoll_team_t *cand[REUSE_CANDIDATES]);
void idle_release(numacoll_team_t *cand[REUSE_CANDIDATES], int n, int keep, uint64_t sig);
uint64_t members_sig(MPI_Comm comm, int size);

/* ---- collectives (pmpi_*.c) ----------------------------------------------------------- */

/* the communicator of the node part: the whole communicator when flat */
#define NODE_COMM(s) ((s)->mode == MODE_FLAT ? (s)->comm : (s)->node)
int barrier_impl(MPI_Comm comm);
int bcast_bytes(nc_comm_t *s, void *p, size_t bytes, int root, int mark);
int bcast_result(nc_comm_t *s, MPI_Comm comm, int rc, int root);
uint64_t bcast_units(MPI_Count count, MPI_Count tsz);
int bcast_general(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);
#if MPI_VERSION >= 4
int bcast_large_entry(void *buf, MPI_Count count, MPI_Datatype dt, MPI_Count tsz, int root,
                      MPI_Comm comm);
int native_bcast_count(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm);
#endif
int large_drain(nc_comm_t *s, uint64_t total, int root);
int node_bcast_bytes(nc_comm_t *s, void *p, size_t bytes, int root);
int reduce_map(MPI_Datatype dt, MPI_Op op, numacoll_dtype_t *core_type, numacoll_op_t *core_op,
               MPI_Count *mult, MPI_Datatype *base);
/* the MPI op that runs numacoll's kernel of @p op (non-commutative), MPI_OP_NULL if the MPI
 * refused to create it */
MPI_Op reduce_kernel_op(numacoll_op_t op);
int reduce_entry(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                 int root, MPI_Comm comm);
/* pmpi_reduce.c: the hierarchical mode's allreduce (@p root -1) or reduce of @p n elements
 * of core type @p ct (the MPI's steps as n elements of the predefined @p base): the node
 * teams' reduce, the leaders' MPI step, the node broadcast; a numacoll status */
int reduce_hier(nc_comm_t *s, const void *input, void *recvbuf, size_t n, numacoll_dtype_t ct,
                numacoll_op_t co, MPI_Datatype base, MPI_Op op, int root);
/* pmpi_scatter_scan.c: the stats line's part of those four calls (", MPI_Scan N ...") */
void stats_scatter_scan(char *buf, size_t n);

/* The team's first reduction: its reduction buffers are set up (collective over the team,
 * agreed). Any member's failure (memory, descriptors, /dev/shm, a setting) gives every
 * member the same status: all then reduce natively on the team's communicator (flat: the
 * whole communicator; hierarchical: the node step) for good, this call included. 1 when
 * the team can reduce. */
static inline int reduce_ready(nc_comm_t *s)
{
    if (s->reduce_native) return 0;
    if (NC_LIKELY(nc_reduce_is_set_up(s->team))) return 1;
    if (nc_reduce_setup(s->team) == NUMACOLL_OK) return 1;
    s->reduce_native = 1;
    warn_fallback(s, "the shared-memory reductions' set-up", numacoll_last_error());
    return 0;
}

/* A reduction the core could not run for want of memory for larger chunks (every member
 * got NUMACOLL_ERR_UNSUPPORTED in the same call, before any data moved): the team's
 * reductions go to the MPI library for good, this call included */
static inline void reduce_gave_up(nc_comm_t *s)
{
    s->reduce_native = 1;
    warn_fallback(s, "the shared-memory reductions' buffers", numacoll_last_error());
}
/* PMPI_Pack (@p unpack 0) of (buf, count, dt) into @p stage (@p cap bytes) or PMPI_Unpack
 * from it (pmpi_bcast_large.c; @p tlb: dt's true lower bound, for buf = MPI_BOTTOM) */
int pack_io(int unpack, void *buf, MPI_Count count, MPI_Datatype dt, MPI_Aint tlb, char *stage,
            size_t cap, MPI_Comm comm);
/* the gather family's part of NUMACOLL_MPI_STATS's line (", MPI_Allgather N (numacoll M),
 * ...") and its fields of numacoll_mpi_stats_t */
void move_stats_text(char *out, size_t n);
void move_stats_fill(numacoll_mpi_stats_t *o);
/* the same for MPI_Alltoall(v) (pmpi_alltoall.c) */
void alltoall_stats_text(char *out, size_t n);
void alltoall_stats_fill(numacoll_mpi_stats_t *o);

#pragma GCC visibility pop

#endif
