/*
 * Internal interfaces shared by the layers of libnumacoll (core, topo, coll, kvdb).
 * Not installed.
 */
#ifndef NC_INTERNAL_H
#define NC_INTERNAL_H

#define _GNU_SOURCE 1
#include <numacoll/numacoll.h>

#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define nc_cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define nc_cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define nc_cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

/* CLDEMOTE (x86: 0F 1C /0) hints that the line holding @p p may leave this core's private
 * caches for the shared L3, so that the next reader on another core finds it there instead
 * of snooping it out of ours. A hint: no effect on what any core reads; CPUs without it run
 * the encoding as a NOP (it sits in the reserved-NOP space), so it is safe everywhere, but
 * callers skip it where nc_cpu_has_demote() is 0 to save the instructions. Emitted as bytes
 * with the address in rax ((%rax) is ModRM 0x00), so that no assembler support is needed. */
#if defined(__x86_64__)
#define nc_cache_demote(p) __asm__ __volatile__(".byte 0x0f, 0x1c, 0x00" ::"a"(p) : "memory")
#else
#define nc_cache_demote(p) ((void)(p))
#endif
/* Prefetch the line holding @p p for writing: its owner gives it up now, in parallel with
 * the other lines so requested, instead of when a store reaches the head of the store
 * buffer (stores leave it in program order, one ownership request after another). A hint:
 * no effect on what any core reads. x86: PREFETCHW (0F 0D /1; CPUs without it, Intel's
 * before Broadwell, run the encoding as a NOP); elsewhere the compiler's write prefetch. */
#if defined(__x86_64__) || defined(__i386__)
#define nc_prefetch_w(p) __asm__ __volatile__("prefetchw %0" ::"m"(*(const char *)(p)))
#else
#define nc_prefetch_w(p) __builtin_prefetch((p), 1, 3)
#endif
/** 1 if the CPU implements CLDEMOTE (CPUID leaf 7, ECX bit 25), else 0 (wait.c). */
int nc_cpu_has_demote(void);

#define NC_LIKELY(x) __builtin_expect(!!(x), 1)
#define NC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NC_MAX_LINE 256 /* largest supported padding unit */

/* ---- errors and logging (error.c) ------------------------------------------------ */

/** Record a formatted message as the thread's last error and return @p status. */
int nc_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Prefix the current last-error message with more context; returns @p status. */
int nc_error_wrap(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Call the caller-supplied OOB allgather. On failure return NUMACOLL_ERR_OOB with a
 *  message naming @p what (e.g. "creating a team") and, when the callback recorded one
 *  through nc_error (the fork bootstrap does: a timeout, a dead member), its reason. */
int nc_oob_allgather(numacoll_oob_allgather_fn allgather, const void *sendbuf, void *recvbuf,
                     size_t size, void *ctx, const char *what);

/** NUMACOLL_VERBOSE level (0 = quiet). */
int nc_verbose(void);
/** Log a line to stderr when NUMACOLL_VERBOSE >= level ("numacoll[rank/size]: ..."). */
void nc_log(int level, int rank, int size, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- clock (clock.c) ------------------------------------------------------------- */

uint64_t nc_now_ns(void); /* CLOCK_MONOTONIC */
/** True if process @p pid (> 0) has exited: it no longer exists (kill(pid, 0) fails with
 *  ESRCH) or it is a zombie not yet reaped by its parent (state Z or X in
 *  /proc/<pid>/stat; another user's too, unless /proc hides it: hidepid). False for 0 and
 *  negative pids. Costs a read of /proc/<pid>/stat for a live process (10-30 us on the
 *  2-CPU VM). */
int nc_pid_gone(pid_t pid);

/* ---- the launcher's count of the job's processes on this node (job_env.c) ----------- */

/** The task count of node @p node (0-based) in Slurm's compressed per-node task list
 *  @p list (SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE): counts separated by commas
 *  in the order of the nodes, a count followed by "(xN)" standing for N consecutive nodes
 *  ("2(x3),1": 2 tasks on each of nodes 0-2, 1 on node 3). Counts are 1 to 2^24, digits
 *  only. Returns 0 with *tasks set; -EINVAL if @p list is not of that form; -ERANGE if it
 *  is but covers no node @p node. *nodes (if not NULL) gets the number of nodes the list
 *  covers whenever it is well-formed. */
int nc_slurm_tasks_on_node(const char *list, long node, int *tasks, long *nodes);

typedef struct nc_job_node_procs {
    int count;          /* processes of the job on this node; 0 = unknown */
    const char *source; /* the variable count came from (a static string), NULL if none */
    char problem[256];  /* "" or why the variable of the launcher in use was ignored,
                         * naming it and its value */
} nc_job_node_procs_t;

/** How many processes of the job the launcher that started this process put on this node,
 *  from its environment: OMPI_COMM_WORLD_LOCAL_SIZE (Open MPI's mpirun), MPI_LOCALNRANKS
 *  (Hydra), MV2_COMM_WORLD_LOCAL_SIZE (MVAPICH's mpirun_rsh), PALS_LOCAL_SIZE (HPE PALS),
 *  PMI_LOCAL_SIZE (Cray PMI), in that order, else Slurm's
 *  SLURM_STEP_TASKS_PER_NODE at SLURM_NODEID (srun), which every launcher run inside a
 *  Slurm allocation inherits and so comes last. The first variable set decides: a
 *  malformed value leaves the count unknown (0) and says why in out->problem. */
void nc_job_node_procs(nc_job_node_procs_t *out);

/* ---- copies (copy.c) ---------------------------------------------------------------- */

/** memcpy with non-temporal stores where the CPU has them (x86-64): the lines go to memory
 *  instead of staying dirty in this core's cache, where a reader on another core would
 *  have to fetch them from this core (slow when the two cores share no cache) and this
 *  core would have to invalidate the reader's copies at its next write. Ends with a store
 *  fence, so a release store after it publishes the data. Elsewhere: memcpy. */
void nc_copy_stream(void *dst, const void *src, size_t n);

/* ---- configuration table (config.c; config.h: the variables, rows, getters) ------- */

#include "config.h"

/* ---- shared-memory segments (segment.c) ------------------------------------------ */

typedef struct nc_seg {
    void *base;
    size_t size;
    size_t share; /* this process's share of it (size / members), in nc_seg_held() */
    char name[64];
} nc_seg_t;

/** This process's share of its live segments (bytes; bounded by NUMACOLL_SHM_MAX). */
size_t nc_seg_held(void);
/** NUMACOLL_SHM_MAX in bytes, its "0" resolved. */
size_t nc_seg_allowance(void);

/**
 * Collective creation of a segment of @p size bytes over the members described by
 * (rank, nprocs, allgather, ctx). Rank 0 creates the file (random name, O_EXCL, 0600),
 * reserves [0, reserve0) itself; everyone attaches; the name is unlinked once all have
 * attached; then each rank binds its own range [own_off, own_off + own_len) (pass
 * own_len = 0 for none) to @p numa_node if that is >= 0 and NUMACOLL_NUMA_BIND allows, and
 * reserves and first-touches its first @p own_now bytes (<= own_len; the rest is for the
 * owner to populate later with nc_seg_populate), with MADV_RANDOM set and, unless
 * NUMACOLL_SHM_HUGEPAGES=system, MADV_NOHUGEPAGE (see segment.c). The outcome is
 * agreed: if any member fails, all return the same error and nothing is left behind.
 */
int nc_seg_create_collective(int rank, int nprocs, numacoll_oob_allgather_fn allgather, void *ctx,
                             size_t size, size_t reserve0, size_t own_off, size_t own_len,
                             size_t own_now, int numa_node, const char *what, nc_seg_t *seg);
void nc_seg_destroy(nc_seg_t *seg);
/** Bytes free in /dev/shm for an unprivileged writer, SIZE_MAX if that cannot be read. */
size_t nc_shm_free_bytes(void);
/** 1 if nc_seg_populate works on this kernel (MADV_POPULATE_WRITE, Linux >= 5.14). */
int nc_seg_populate_supported(void);
/**
 * Allocate and map the pages of [addr, addr + len) inside a segment now (the range's
 * NUMA binding applies): NUMACOLL_OK, or NUMACOLL_ERR_NOMEM with a message naming @p what
 * when the memory cannot be had (a full /dev/shm, a memory limit), where a plain first
 * touch would have raised SIGBUS.
 */
int nc_seg_populate(void *addr, size_t len, const char *what);
/** Tests only: make the @p n-th call of nc_seg_populate from now in this process fail
 *  (once; 0 = none). */
__attribute__((visibility("hidden"))) void nc_seg_debug_fail_populate(int n);
/** Tests only: the dead-member check pauses @p ns between its first look at a member's
 *  completion count and the look at its process (0: no pause), so that a member can
 *  complete and exit in between. */
__attribute__((visibility("hidden"))) void nc_wait_debug_peer_check_pause(uint64_t ns);

/**
 * Check with move_pages() on which NUMA node the pages of [addr, addr+len) are.
 * Returns the node holding most pages (-1 if unknown) and counts of pages on @p expect
 * and elsewhere.
 */
int nc_seg_check_placement(const void *addr, size_t len, int expect, size_t *on_node,
                           size_t *elsewhere);

/** Page size and the configured cache-line padding unit (NUMACOLL_CACHELINE). */
size_t nc_page_size(void);
size_t nc_line_size(void);
/* FNV-1a of @p n bytes at @p p, continuing from @p h (start: NC_FNV_BASIS) */
#define NC_FNV_BASIS 1469598103934665603ull
static inline uint64_t nc_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

static inline size_t nc_round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/** Agree on a status across members through the allgather: returns the first non-OK
 *  status of any member (lowest rank), or NUMACOLL_OK; OOB failure -> NUMACOLL_ERR_OOB.
 *  When another member failed, the local last-error message says which rank. */
int nc_agree(int rank, int nprocs, numacoll_oob_allgather_fn allgather, void *ctx, int status);

/* ---- team ------------------------------------------------------------------------- */

/* Per-rank control line: written only by its owner (single writer), read by everybody. */
typedef struct nc_rank_ctl {
    _Atomic uint64_t arrive_seq; /* number of collectives this rank has entered */
    _Atomic uint64_t done_seq;   /* number of collectives this rank has completed */
    _Atomic int32_t pid;         /* owner's pid (set at creation) */
} nc_rank_ctl_t;

struct nc_topo_team;  /* topo/topo.h */
struct nc_bcast_team; /* coll/bcast/bcast.h */
struct nc_reduce_team; /* coll/reduce/reduce_internal.h */
struct nc_move_team;   /* coll/move/move_internal.h */
struct nc_barrier_slot;

struct numacoll_team {
    int rank, size;
    numacoll_oob_allgather_fn allgather;
    void *oob_ctx;
    numacoll_progress_fn progress;
    void *progress_ctx;
    char name[64];
    uint64_t id[2]; /* identity, equal on every member, unique on the node (team_identity) */

    nc_seg_t seg;
    size_t line;  /* padding unit for flags (bytes) */
    char *global; /* global block (first-touched by rank 0) */
    size_t global_size;
    char *ranks;        /* first rank block */
    size_t rank_stride; /* bytes between rank blocks (page multiple) */

    /* wait policy (copied from the config at creation) */
    int oversubscribed;
    uint32_t spin_limit;     /* pause iterations before yielding */
    uint64_t timeout_ns;     /* 0 = never */
    uint64_t sleep_after_ns; /* 0 = never sleep */
    uint64_t progress_ns;    /* call progress every so often while waiting */
    uint64_t futex_after_ns; /* sleep in the kernel (futex) after this much waiting on one
                                flag; UINT64_MAX = never (NUMACOLL_WAIT_FUTEX_AFTER_US) */
    int futex;               /* futex_after_ns != UINT64_MAX: posts look for sleepers */
    _Atomic uint32_t *sleepers; /* NC_SLEEP_BUCKETS counters in the global block (wait.c) */
    int check_peers;         /* can we see other members' pids? */
    int split_sched_groups;  /* members in different CFS autogroups (yield cannot help) */
    int ncpus;               /* distinct CPUs available to the team */
    int node_procs;          /* the members' largest node_procs (params), 0 = unknown */
    int node_cpus;           /* CPUs online on this node */
    int job_oversubscribed;  /* node_procs > node_cpus made the team oversubscribed */

    /* topology hierarchy (topo/) */
    struct nc_topo_team *topo;
    int numa_node; /* this process's NUMA node, -1 if not bound inside one */

    /* barrier algorithms: one slot per registry entry */
    struct nc_barrier_slot *barrier_slots;
    int barrier_default; /* index into the registry */

    /* broadcast state (coll/bcast/), created at the first bcast */
    struct nc_bcast_team *bcast;
    /* reduction buffers (coll/reduce/), created at the first allreduce or reduce */
    struct nc_reduce_team *reduce;
    int reduce_needs_bcast; /* the reductions broadcast with the team's bcast (rbcast) */
    /* data-movement state (coll/move/), created at the first gather, scatter, alltoall */
    struct nc_move_team *move;

    uint64_t seq; /* collectives entered by this process (mirrors ctl->arrive_seq) */
};

static inline nc_rank_ctl_t *nc_team_ctl(const numacoll_team_t *t, int r)
{
    return (nc_rank_ctl_t *)(t->ranks + (size_t)r * t->rank_stride);
}
static inline char *nc_team_rank_block(const numacoll_team_t *t, int r)
{
    return t->ranks + (size_t)r * t->rank_stride;
}

/** Mark entry into / completion of a collective on this rank (for timeout diagnostics). */
static inline void nc_team_op_enter(numacoll_team_t *t, const char *op)
{
    nc_rank_ctl_t *c = nc_team_ctl(t, t->rank);
    (void)op;
    t->seq++;
    /* relaxed: diagnostic only; the owner is the single writer of its line */
    atomic_store_explicit(&c->arrive_seq, t->seq, memory_order_relaxed);
}
static inline void nc_team_op_leave(numacoll_team_t *t)
{
    nc_rank_ctl_t *c = nc_team_ctl(t, t->rank);
    /* release: a reader that sees done_seq == n may assume our writes of op n are done */
    atomic_store_explicit(&c->done_seq, t->seq, memory_order_release);
}

/* ---- wait policy (wait.c) ---------------------------------------------------------- */

/*
 * Every wait loop of the library goes through nc_wait_t:
 *
 *     nc_wait_t w;
 *     nc_wait_init(&w, team, "barrier");
 *     uint64_t v;
 *     while ((v = atomic_load_explicit(flag, memory_order_acquire)) < k) {
 *         int rc = nc_wait_step_on(&w, flag, v);  // or nc_wait_step(&w): no kernel sleep
 *         if (rc) return rc;              // timeout or dead peer (message set)
 *     }
 *
 * Phase 1 spins with a pause instruction (team->spin_limit iterations, 0 when the team
 * is oversubscribed), phase 2 calls sched_yield; phase 3, after the team's futex_after_ns
 * of waiting (NUMACOLL_WAIT_FUTEX_AFTER_US) and for a wait on one flag (nc_wait_step_on),
 * sleeps in the kernel on the flag's changing 32-bit half (FUTEX_WAIT, at most
 * NC_FUTEX_SLEEP_MAX_NS at a time) until the flag's writer wakes it (nc_flag_wake);
 * otherwise, after NUMACOLL_WAIT_SLEEP_AFTER of waiting, it naps. The progress hook runs
 * every NUMACOLL_PROGRESS_US (or after a kernel sleep, when that was longer).
 * NUMACOLL_TIMEOUT turns an endless wait into NUMACOLL_ERR_TIMEOUT naming the members
 * that have not entered the collective; a member whose process is gone before completing
 * it gives NUMACOLL_ERR_PEER_DEAD (checked every 20 ms, also between kernel sleeps).
 *
 * Kernel sleeps and wake-ups (Dekker's pattern on two words, both sides with a seq_cst
 * fence between their store and their load):
 *   sleeper: add 1 to the flag's sleeper bucket (team->sleepers, hashed from the flag's
 *            offset in its page, which is the same in every process); fence; load the
 *            flag: if it still holds the value the caller saw, FUTEX_WAIT on its low half
 *            with that value (the kernel returns at once if it changed meanwhile); then
 *            subtract 1.
 *   writer:  store the flag (release, as before); nc_flag_wake: fence; load the bucket;
 *            FUTEX_WAKE the flag's address if it is not 0.
 * Either the writer's load sees the sleeper's count or the sleeper's load sees the new
 * flag value, so no wake-up is lost. A bucket shared by several flags only costs a
 * wake-up call nobody needed. A missed wake-up (a writer that does not call nc_flag_wake)
 * costs latency, never correctness: every kernel sleep ends after NC_FUTEX_SLEEP_MAX_NS.
 */
#define NC_SLEEP_BUCKETS 32              /* sleeper counters per team, 4 bytes each */
#define NC_FUTEX_SLEEP_MAX_NS 4000000ull /* one kernel sleep: at most 4 ms */
/* NUMACOLL_WAIT_FUTEX_AFTER_US=-1 on an oversubscribed team (docs/tuning-notes.md) */
#define NC_FUTEX_AFTER_AUTO_US 200
#define NC_STR_(x) #x
#define NC_STR(x) NC_STR_(x)

typedef struct nc_wait {
    numacoll_team_t *team; /* may be NULL (then only the global config applies) */
    const char *op;
    uint32_t iter;
    uint32_t spin_limit;
    uint64_t start_ns;
    uint64_t next_ns; /* next time something periodic is due */
    uint64_t last_progress_ns;
    uint64_t last_peer_check_ns;
    uint64_t naps;
    uint64_t timeout_ns; /* 0 = never: the team's, or a standalone wait's own */
    int waiting_for;     /* the member whose flag this wait polls, -1 = not one (set by the
                            caller after nc_wait_init; named when the wait times out) */
} nc_wait_t;

void nc_wait_init(nc_wait_t *w, numacoll_team_t *team, const char *op);
/* the slow step: @p flag NULL (no kernel sleep) or the flag waited on, @p seen the value
 * the caller last loaded from it (the wait goes on while it holds that value) */
int nc_wait_slow_on(nc_wait_t *w, _Atomic uint64_t *flag, uint64_t seen);
static inline int nc_wait_slow(nc_wait_t *w)
{
    return nc_wait_slow_on(w, NULL, 0);
}
static inline int nc_wait_step(nc_wait_t *w)
{
    if (NC_LIKELY(w->iter < w->spin_limit)) {
        w->iter++;
        nc_cpu_relax();
        return 0;
    }
    return nc_wait_slow(w);
}
/* nc_wait_step for a wait on one 64-bit flag whose writer calls nc_flag_wake after
 * changing it: may sleep in the kernel. @p seen is the value the caller just loaded. */
static inline int nc_wait_step_on(nc_wait_t *w, _Atomic uint64_t *flag, uint64_t seen)
{
    if (NC_LIKELY(w->iter < w->spin_limit)) {
        w->iter++;
        nc_cpu_relax();
        return 0;
    }
    return nc_wait_slow_on(w, flag, seen);
}

/* The slow half of nc_flag_wake (a team whose waits may sleep in the kernel). */
void nc_flag_wake_slow(numacoll_team_t *t, _Atomic uint64_t *flag);
/* After a store to @p flag that may end another member's wait: wake the members sleeping
 * on it in the kernel, if any. Costs a branch on a process-local field when the team's
 * waits never sleep in the kernel (not oversubscribed, by default); otherwise a fence and
 * a load of a line that only sleepers write. */
static inline void nc_flag_wake(numacoll_team_t *t, _Atomic uint64_t *flag)
{
    if (NC_UNLIKELY(t->futex)) nc_flag_wake_slow(t, flag);
}
/* Publish @p value in @p flag (release: what this process wrote before is visible to a
 * reader that acquires the value) and wake its sleepers. */
static inline void nc_flag_post(numacoll_team_t *t, _Atomic uint64_t *flag, uint64_t value)
{
    atomic_store_explicit(flag, value, memory_order_release);
    nc_flag_wake(t, flag);
}

/** Tests only: this process's kernel sleeps so far, and how many of them a wake-up
 *  (not a timeout or a changed value) ended. */
void nc_wait_futex_counts(uint64_t *sleeps, uint64_t *woken);

/** Global wait settings for waits without a team (kvdb, bootstrap). */
void nc_wait_init_standalone(nc_wait_t *w, const char *op, uint64_t timeout_ns);

/** NUMACOLL_WAIT_FUTEX_AFTER_US in effect on a team that is @p oversubscribed or not:
 *  microseconds, or -1 for never (auto on a team that is not oversubscribed). */
long nc_futex_after_us(int oversubscribed);

/** True if more processes share the CPUs than there are CPUs (ncpus available). */
int nc_detect_oversubscribed(int nprocs, int ncpus);

#endif
