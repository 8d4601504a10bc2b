/*
 * Test harness: run a function in P forked processes that form a numacoll team.
 */
#ifndef NC_FORKRUN_H
#define NC_FORKRUN_H

#include <numacoll/fork_oob.h>
#include <numacoll/numacoll.h>
#include <stddef.h>

typedef struct nc_forkctx {
    int rank, size;
    numacoll_team_t *team;    /* NULL with NC_FORK_NO_TEAM */
    numacoll_fork_oob_t *oob; /* bootstrap allgather/barrier, usable by the function */
    void *shared;             /* zeroed anonymous shared memory of the requested size */
    void *arg;
} nc_forkctx_t;

/* return 0 for success; anything else fails the child (printed with the rank) */
typedef int (*nc_forkrun_fn)(nc_forkctx_t *ctx);

enum { NC_FORK_NO_TEAM = 1, NC_FORK_BIND = 2 /* bind rank r to CPU r mod ncpus */ };

typedef struct nc_forkresult {
    int failed;        /* children that exited non-zero or by a signal */
    int timed_out;     /* 1 if the harness had to kill the children */
    int exit_code[64]; /* per rank (first 64): exit status, or 128+signal */
} nc_forkresult_t;

/**
 * Fork @p P children; each optionally creates a team (fork OOB), runs @p fn, destroys the
 * team and exits with fn's result. The parent waits up to @p timeout_s seconds, then kills
 * everyone (SIGKILL) and reports a timeout. Returns the number of failed children
 * (timeouts count all unfinished ones).
 */
int nc_forkrun(int P, int flags, nc_forkrun_fn fn, void *arg, size_t shared_bytes, double timeout_s,
               nc_forkresult_t *res);

/** Unset every NUMACOLL_* variable of the environment (does not reload the config). */
void nc_test_clear_env(void);

/** Entries in /dev/shm whose name starts with "numacoll" (leak check). */
int nc_count_shm_files(void);

/** The quiet minimum of the numacoll entries in /dev/shm over a few 10 ms polls (other
 *  programs' segments exist only between their creation and attach): a leak check's base. */
int nc_shm_baseline(void);

/** Wait up to 2 s for the numacoll entries in /dev/shm to drop to @p baseline; the count. */
int nc_shm_settle(int baseline);

/** Does a wait's error message name rank @p r among the members it blames (any list after
 *  "member(s) " or "did not arrive: ", as "a, b (exited), c")? */
int nc_msg_names_rank(const char *msg, int r);

/** Does @p msg name rank @p r as a live member that did not arrive (the list after "did
 *  not arrive: ")? A timeout says so of the members it waited for; a dead-member report
 *  says so of the live members missing beside the dead one. */
int nc_msg_names_late(const char *msg, int r);

/** Pages of the page-aligned range [@p addr, @p addr + @p bytes) that are in memory
 *  (mincore(2); a shared file's pages count as in memory while the file holds them), or
 *  (size_t)-1 if mincore fails. */
size_t nc_pages_in_memory(const void *addr, size_t bytes);

/** Field @p name of /proc/meminfo (e.g. "MemAvailable", "ShmemHugePages") in kB; -1 if
 *  the file or the field is missing. */
long nc_meminfo_kb(const char *name);

/** Spin for a random time of up to @p max_ns nanoseconds (xorshift state per process). */
void nc_random_delay(unsigned *seed, unsigned max_ns);

#endif
