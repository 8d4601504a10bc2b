/*
 * The wait policy shared by every wait loop (see nc_wait_t in nc_internal.h).
 *
 * The fast path (spinning with a pause instruction) is inline in nc_wait_step(); this
 * file is the slow path: yielding, sleeping in the kernel on the flag waited for (futex),
 * napping, calling the progress hook, and turning a wait that cannot end (timeout, dead
 * peer) into an error that says who is missing.
 */
#include "nc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#define PEER_CHECK_NS 20000000ull /* look for dead members every 20 ms of slow waiting */

static _Atomic uint64_t peer_check_pause_ns; /* tests: see nc_wait_debug_peer_check_pause */

void nc_wait_debug_peer_check_pause(uint64_t ns)
{
    atomic_store_explicit(&peer_check_pause_ns, ns, memory_order_relaxed);
}

/* Has member @p c exited before completing collective @p seq? Its done_seq is read twice:
 * before the liveness check (a member that completed needs no /proc look-up) and after
 * it: a member can complete the call and exit between the first read and the check, and
 * then its process is gone though its part is done. Its last store to done_seq precedes
 * its exit, so once the process is seen gone the second read (acquire, pairing with
 * nc_team_op_leave's release) shows whether it completed. */
static int exited_before_done(nc_rank_ctl_t *c, uint64_t seq)
{
    if (atomic_load_explicit(&c->done_seq, memory_order_acquire) >= seq) return 0;
    uint64_t pause = atomic_load_explicit(&peer_check_pause_ns, memory_order_relaxed);
    if (pause) {
        struct timespec ts = {(time_t)(pause / 1000000000ull), (long)(pause % 1000000000ull)};
        nanosleep(&ts, NULL);
    }
    if (!nc_pid_gone(atomic_load_explicit(&c->pid, memory_order_relaxed))) return 0;
    return atomic_load_explicit(&c->done_seq, memory_order_acquire) < seq;
}

/* 1 if /proc/<pid>/stat shows state Z (zombie: exited, not yet reaped by its parent) or X
 * (being reaped). The state is the field after the last ')': the command name before it is
 * in parentheses and may itself contain ')' and spaces. 0 when the file cannot be read or
 * parsed (the caller then goes by kill() alone). */
static int pid_exited_unreaped(pid_t pid)
{
    char path[32], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ') return 0;
    return p[2] == 'Z' || p[2] == 'X';
}

int nc_pid_gone(pid_t pid)
{
    if (pid <= 0) return 0;
    if (kill(pid, 0) != 0 && errno == ESRCH) return 1;
    /* It exists (kill() succeeded, or failed with EPERM: another user's process). kill()
     * succeeds on a zombie too: a member killed while its parent is busy (waiting in a
     * collective itself, or for another child) stays one until the parent reaps it, and an
     * orphan until PID 1 does. It runs no more code, so it counts as gone. (A process
     * reaped between the two calls reads as live here; the next call sees it gone.) */
    return pid_exited_unreaped(pid);
}

void nc_wait_init(nc_wait_t *w, numacoll_team_t *team, const char *op)
{
    w->team = team;
    w->op = op;
    w->iter = 0;
    w->spin_limit = team ? team->spin_limit : 4096;
    w->start_ns = 0; /* taken lazily: the fast path never reads the clock */
    w->next_ns = 0;
    w->last_progress_ns = 0;
    w->last_peer_check_ns = 0;
    w->naps = 0;
    w->timeout_ns = team ? team->timeout_ns : 0;
    w->waiting_for = -1;
}

void nc_wait_init_standalone(nc_wait_t *w, const char *op, uint64_t timeout_ns)
{
    nc_wait_init(w, NULL, op);
    long spin = nc_cfg_int(NC_CFG_WAIT_SPIN);
    w->spin_limit = spin >= 0 ? (uint32_t)spin : 4096;
    w->timeout_ns = timeout_ns; /* this wait's own: other threads' waits keep theirs */
}

/* Append ", r" (or "r" first) to @p list of @p cap bytes at *@p o, with " (exited)" for a
 * dead member; once full, end it with ", ..." once. */
static void list_add(char *list, size_t cap, size_t *o, int *n, int r, int dead)
{
    (*n)++;
    if (*o + 40 < cap)
        *o += (size_t)snprintf(list + *o, cap - *o, "%s%d%s", *n > 1 ? ", " : "", r,
                               dead ? " (exited)" : "");
    else if (*o + 5 < cap && list[*o - 1] != '.')
        *o += (size_t)snprintf(list + *o, cap - *o, ", ...");
}

/* Describe which members have not entered (or not completed) the current collective.
 * With @p dead_only, report only if some member's process is gone; the report then also
 * names the live members that have not arrived: when a member gives up on a hung one and
 * its process ends, the members waiting on it find it dead before their own timeout, and
 * the hung member is the one to look at. */
static int missing_report(nc_wait_t *w, int status, int dead_only)
{
    numacoll_team_t *t = w->team;
    char list[512], late[256];
    size_t o = 0, lo = 0;
    int nmissing = 0, ndead = 0, nlate = 0;
    list[0] = late[0] = 0;
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank) continue;
        nc_rank_ctl_t *c = nc_team_ctl(t, r);
        uint64_t arrived = atomic_load_explicit(&c->arrive_seq, memory_order_relaxed);
        int dead = t->check_peers && exited_before_done(c, t->seq);
        if (dead_only ? !dead : (arrived >= t->seq && !dead)) continue;
        ndead += dead;
        list_add(list, sizeof list, &o, &nmissing, r, dead);
    }
    if (dead_only && ndead == 0) return NUMACOLL_OK; /* the usual case, every 20 ms */
    for (int r = 0; dead_only && r < t->size; r++) {
        /* with a dead member: the live members that have not arrived either */
        nc_rank_ctl_t *c = nc_team_ctl(t, r);
        if (r == t->rank || atomic_load_explicit(&c->arrive_seq, memory_order_relaxed) >= t->seq)
            continue;
        if (!nc_pid_gone(atomic_load_explicit(&c->pid, memory_order_relaxed)))
            list_add(late, sizeof late, &lo, &nlate, r, 0);
    }
    double waited = (double)(nc_now_ns() - w->start_ns) / 1e9;
    double limit = (double)t->timeout_ns / 1e9;
    if (dead_only)
        return nc_error(NUMACOLL_ERR_PEER_DEAD,
                        "%s #%llu on team '%s' (rank %d of %d): member(s) %s exited before "
                        "completing it (waited %.3f s)%s%s",
                        w->op, (unsigned long long)t->seq, t->name, t->rank, t->size, list, waited,
                        nlate ? "; live member(s) that did not arrive: " : "", late);
    /* the member this wait polls, when the caller said (a member stopped inside the call
     * has arrived, so only this names it) */
    char hint[64] = "";
    if (w->waiting_for >= 0)
        snprintf(hint, sizeof hint, "; this wait was for member(s) %d", w->waiting_for);
    if (nmissing == 0)
        return nc_error(status,
                        "%s #%llu on team '%s' (rank %d of %d) timed out: NUMACOLL_TIMEOUT=%.9g "
                        "s expired after %.6f s of waiting; every member entered the call but "
                        "the wait did not end%s",
                        w->op, (unsigned long long)t->seq, t->name, t->rank, t->size, limit,
                        waited, hint);
    return nc_error(status,
                    "%s #%llu on team '%s' (rank %d of %d) timed out: NUMACOLL_TIMEOUT=%.9g s "
                    "expired after %.6f s of waiting; member(s) that did not arrive: %s%s",
                    w->op, (unsigned long long)t->seq, t->name, t->rank, t->size, limit, waited,
                    list, hint);
}

/* kernel sleeps of this process (nc_wait_futex_counts; relaxed: statistics) */
static _Atomic uint64_t futex_sleeps, futex_woken;

void nc_wait_futex_counts(uint64_t *sleeps, uint64_t *woken)
{
    *sleeps = atomic_load_explicit(&futex_sleeps, memory_order_relaxed);
    *woken = atomic_load_explicit(&futex_woken, memory_order_relaxed);
}

/* The 32-bit half of a 64-bit flag that every change of it changes: the low half. The
 * flags are counters that writers raise by less than 2^32 at a time, so any new value
 * differs from the old in its low half. (The kernel reads it as a 32-bit word; the writer
 * stores all 64 bits at once.) */
static uint32_t *low_half(_Atomic uint64_t *flag)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint32_t *)flag + 1;
#else
    return (uint32_t *)flag;
#endif
}

/* The sleeper count of @p flag: hashed from its offset in its page, which is the same in
 * every process that maps the segment (segments are mapped page-aligned); flags sit on
 * lines of at least 64 bytes. */
static _Atomic uint32_t *sleeper_bucket(const numacoll_team_t *t, const _Atomic uint64_t *flag)
{
    return &t->sleepers[((uintptr_t)flag >> 6) % NC_SLEEP_BUCKETS];
}

void nc_flag_wake_slow(numacoll_team_t *t, _Atomic uint64_t *flag)
{
    /* Dekker (nc_internal.h): the caller's store of the flag, then this fence, then the
     * load of the bucket; a sleeper adds itself to the bucket, fences, then loads the
     * flag. With seq_cst fences on both sides one of the two loads sees the other's
     * store: we see the sleeper (and wake it), or it sees the new value (and does not
     * sleep). */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(sleeper_bucket(t, flag), memory_order_relaxed) == 0) return;
    /* shared (not FUTEX_PRIVATE): the sleepers are other processes */
    syscall(SYS_futex, low_half(flag), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Sleep in the kernel on @p flag while it holds @p seen, at most @p max_ns (> 0). */
static void futex_sleep(numacoll_team_t *t, _Atomic uint64_t *flag, uint64_t seen,
                        uint64_t max_ns)
{
    _Atomic uint32_t *bucket = sleeper_bucket(t, flag);
    atomic_fetch_add_explicit(bucket, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst); /* Dekker: see nc_flag_wake_slow */
    if (atomic_load_explicit(flag, memory_order_relaxed) == seen) {
        struct timespec ts = {(time_t)(max_ns / 1000000000ull), (long)(max_ns % 1000000000ull)};
        atomic_fetch_add_explicit(&futex_sleeps, 1, memory_order_relaxed);
        /* returns 0 when woken, or fails with EAGAIN (the low half no longer holds the
         * value: changed since our load), ETIMEDOUT or EINTR; the caller reloads the flag
         * in every case */
        long rc = syscall(SYS_futex, low_half(flag), FUTEX_WAIT, (uint32_t)seen, &ts, NULL, 0);
        if (rc == 0) atomic_fetch_add_explicit(&futex_woken, 1, memory_order_relaxed);
    }
    atomic_fetch_sub_explicit(bucket, 1, memory_order_relaxed);
}

int nc_wait_slow_on(nc_wait_t *w, _Atomic uint64_t *flag, uint64_t seen)
{
    uint64_t now = nc_now_ns();
    numacoll_team_t *t = w->team;
    if (w->start_ns == 0) {
        w->start_ns = now;
        w->last_progress_ns = now;
        w->last_peer_check_ns = now;
    }
    uint64_t waited = now - w->start_ns;

    uint64_t timeout = w->timeout_ns;
    if (timeout && waited > timeout) {
        if (t) return missing_report(w, NUMACOLL_ERR_TIMEOUT, 0);
        return nc_error(NUMACOLL_ERR_TIMEOUT,
                        "%s timed out: NUMACOLL_TIMEOUT=%.9g s expired after %.6f s of waiting",
                        w->op, (double)timeout / 1e9, (double)waited / 1e9);
    }
    if (t && t->progress && now - w->last_progress_ns >= t->progress_ns) {
        w->last_progress_ns = now;
        t->progress(t->progress_ctx);
    }
    if (t && t->check_peers && now - w->last_peer_check_ns >= PEER_CHECK_NS) {
        w->last_peer_check_ns = now;
        int rc = missing_report(w, NUMACOLL_ERR_PEER_DEAD, 1);
        if (rc) return rc;
    }
    if (flag && t && t->futex && waited >= t->futex_after_ns) {
        /* sleep until the writer wakes us, or the timeout, or the next peer check is due,
         * or NC_FUTEX_SLEEP_MAX_NS (what bounds the latency of a writer that does not
         * wake and the delay of the progress hook) */
        uint64_t max = NC_FUTEX_SLEEP_MAX_NS;
        if (timeout && timeout - waited + 1 < max) max = timeout - waited + 1;
        if (t->check_peers && w->last_peer_check_ns + PEER_CHECK_NS - now < max)
            max = w->last_peer_check_ns + PEER_CHECK_NS - now;
        futex_sleep(t, flag, seen, max ? max : 1);
        return NUMACOLL_OK;
    }
    uint64_t sleep_after = t ? t->sleep_after_ns : 100000000ull;
    if (sleep_after && waited > sleep_after) {
        /* nap 50 us, doubling up to 1 ms: a long wait costs no CPU, and the wake-up delay
         * stays below 1 % of the time already waited */
        uint64_t nap = 50000ull << (w->naps < 5 ? w->naps : 5);
        if (nap > 1000000ull) nap = 1000000ull;
        w->naps++;
        struct timespec ts = {0, (long)nap};
        nanosleep(&ts, NULL);
    } else {
        sched_yield();
    }
    return NUMACOLL_OK;
}

long nc_futex_after_us(int oversubscribed)
{
    long us = nc_cfg_int(NC_CFG_WAIT_FUTEX_AFTER_US);
    if (us >= 0) return us;
    return oversubscribed ? NC_FUTEX_AFTER_AUTO_US : -1;
}

int nc_detect_oversubscribed(int nprocs, int ncpus)
{
    const char *mode = nc_cfg_str(NC_CFG_OVERSUBSCRIBED);
    if (strcmp(mode, "yes") == 0) return 1;
    if (strcmp(mode, "no") == 0) return 0;
    return ncpus > 0 && nprocs > ncpus;
}

int nc_cpu_has_demote(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    /* CPUID leaf 7 subleaf 0: ECX bit 25 = CLDEMOTE (the leaf exists when the max leaf >= 7) */
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    (void)a, (void)b, (void)d;
    return (c >> 25) & 1;
#else
    return 0;
#endif
}
