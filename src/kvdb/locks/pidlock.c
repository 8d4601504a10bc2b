/*
 * Pid lock words: the mutexes of the 1n-mutex, 2n-mutex and n-mutex-signal schemes.
 *
 * A word (nc_pidlock_t, declared in lock.h) is 0 when free and holds its holder's pid
 * otherwise, plus NC_PIDLOCK_WAITERS once a process sleeps on it. Nothing else is kept in
 * shared memory: no pointer, no list, no count, so a reader that overwrites a word can
 * make the others wait (bounded) but can make nobody follow anything it wrote.
 *
 *   lock:    CAS 0 -> pid (acquire). Held: spin (the wait policy's spin phase,
 *            nc_kvwait_step: l->spin_limit pauses, few when oversubscribed), then set the
 *            waiters bit (CAS v -> v|W) and FUTEX_WAIT on v|W in slices of SLICE_NS, until
 *            NUMACOLL_TIMEOUT. After a slice that ended without a wake-up, and every
 *            CHECK_NS, the holder's pid is checked (nc_pid_gone: gone or a zombie); a dead
 *            holder's word is taken over by CAS from exactly the value that was checked
 *            (pid -> our pid, keeping W), so of two processes recovering the same word one
 *            wins and the other sees the new owner. There is no sched_yield phase: on an
 *            oversubscribed machine a waiter that yields still competes for the CPU its
 *            holder needs (with 8 yields before sleeping, test_kvdb_locks' 1n-mutex stress
 *            case ran 20 times longer: the writer holds N-1 words while it waits for one).
 *   unlock:  CAS pid -> 0, or pid|W -> 0 followed by FUTEX_WAKE of every sleeper (release).
 *            A word that no longer holds our pid (overwritten while we held it) is left as
 *            it is: it is not ours to free, and whoever locks it next recovers it.
 *
 * Futexes are the shared kind (FUTEX_WAIT, not FUTEX_WAIT_PRIVATE): the word lives in a
 * MAP_SHARED memfd mapping, so the kernel keys a wait by the file page, the same in every
 * process.
 *
 * Values that are not a lock's: a word with bit 31 set (negative as int32) or a pid above
 * Linux's PID_MAX_LIMIT was written by no holder and is recovered at once, like a dead
 * holder's; a free word that has the waiters bit set is free. A word holding the pid of a
 * live process that does not hold it (written by a hostile reader, or a pid reused after
 * its holder died) cannot be told from a holder: waiting for it ends with
 * NUMACOLL_ERR_TIMEOUT under NUMACOLL_TIMEOUT (without it, once that process exits).
 *
 * Wake-ups: every legitimate word has two users (reader x and the writer), but a slot
 * taken over from a dead reader or a scribbling process can add a third, so unlock wakes
 * all sleepers; each of them re-reads the word and either takes it or sets W again before
 * it sleeps. A lost wake-up (a word scribbled while somebody slept on it) costs that
 * sleeper one slice.
 */
#include "lock.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLICE_NS 10000000ull /* longest single futex sleep: 10 ms */
#define CHECK_NS 20000000ull /* check the holder at least this often while waiting */
#define UNLOCK_TRIES 64       /* CAS attempts of unlock on a word that keeps changing */

/* Sleep while *w == val, at most ns; 0 when woken (or a spurious return), else errno
 * (EAGAIN: the word had changed, ETIMEDOUT, EINTR). */
static int futex_wait(nc_pidlock_t *w, uint32_t val, uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    if (syscall(SYS_futex, &w->v, FUTEX_WAIT, val, &ts, NULL, 0) == 0) return 0;
    return errno;
}

static void futex_wake_all(nc_pidlock_t *w)
{
    syscall(SYS_futex, &w->v, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* A word that no holder writes: bit 31 set, or a pid no process can have. */
static int word_garbage(uint32_t v)
{
    return (v & 0x80000000u) || (v & NC_PIDLOCK_PID) > NC_PIDLOCK_PID_MAX;
}

/* Take over word @p w from the dead holder (or garbage) @p v, which we saw there. A reader
 * whose server is gone takes nothing: the server may have died inside a write, and nobody
 * will ever finish it. */
static int recover(nc_kvlock_t *l, nc_pidlock_t *w, uint32_t v, int *took, const char *what)
{
    *took = 0;
    if (l->slot >= 0 && nc_pid_gone(l->server_pid))
        return nc_error(NUMACOLL_ERR_PEER_DEAD, "kvdb: the server (pid %d) died while holding %s",
                        (int)l->server_pid, what);
    /* acquire, from exactly the value we judged: a holder that died inside its section
     * wrote nothing we need (readers do not write the store; a dead writer is the case
     * above), but another recoverer that won publishes its section with its release */
    if (!atomic_compare_exchange_strong_explicit(&w->v, &v,
                                                 l->self | (v & NC_PIDLOCK_WAITERS),
                                                 memory_order_acquire, memory_order_relaxed))
        return NUMACOLL_OK; /* somebody else changed it first: look again */
    *took = 1;
    l->recovered++;
    if (word_garbage(v))
        nc_log(1, l->slot, l->nslots, "kvdb: recovered %s from a word holding 0x%08x", what,
               (unsigned)v);
    else
        nc_log(1, l->slot, l->nslots, "kvdb: recovered %s from its dead holder (pid %u)", what,
               (unsigned)(v & NC_PIDLOCK_PID));
    return NUMACOLL_OK;
}

int nc_pidlock_lock_slow(nc_kvlock_t *l, nc_pidlock_t *w, const char *what)
{
    const uint32_t me = l->self;
    nc_kvwait_t kw;
    /* readers: the server's death ends the wait (checked with each holder check below) */
    nc_kvwait_init(&kw, l, l->slot >= 0 ? l->server_pid : 0, what);
    uint64_t last_check = 0;
    int slept_out = 0; /* the last futex sleep ran its whole slice */
    /*
     * Wait loop. The word is written by its holder (unlock: pid -> 0), by processes taking
     * it (0 -> pid, dead pid -> pid), by waiters (v -> v|W), and possibly by a reader
     * scribbling anything. We only leave with the lock through one of our own CASes with
     * acquire order; it reads the value the last holder's unlock CAS (release) wrote or a
     * later one, so that holder's section (for a reader: a whole write) happens before
     * ours. Any other value we read is just a hint about whom to wait for.
     */
    for (;;) {
        uint32_t v = atomic_load_explicit(&w->v, memory_order_relaxed);
        uint32_t owner = v & NC_PIDLOCK_PID;
        int rc, took, lost = 0;
        if (word_garbage(v)) {
            rc = recover(l, w, v, &took, what);
            if (rc || took) return rc;
            lost = 1; /* it changed under us */
        } else if (owner == 0) { /* free (W alone: nobody sleeps on a free word) */
            if (atomic_compare_exchange_strong_explicit(&w->v, &v, me, memory_order_acquire,
                                                        memory_order_relaxed))
                return NUMACOLL_OK;
            lost = 1;
        }
        /* held, or a race for it lost: every round past the spin phase checks the time, so
         * a word that keeps changing under us cannot keep us here past NUMACOLL_TIMEOUT */
        if (kw.w.iter < kw.w.spin_limit) { /* the policy's spin phase */
            rc = nc_kvwait_step(&kw);
            if (rc) return rc;
            continue;
        }
        uint64_t now = nc_now_ns();
        if (kw.w.start_ns == 0) kw.w.start_ns = now;
        if (last_check == 0) last_check = now;
        if (l->timeout_ns && now - kw.w.start_ns > l->timeout_ns)
            return nc_error(NUMACOLL_ERR_TIMEOUT,
                            "kvdb: %s still held after %.3f s (NUMACOLL_TIMEOUT) by pid %u, a "
                            "live process",
                            what, (double)(now - kw.w.start_ns) / 1e9, (unsigned)owner);
        if (lost) continue; /* look again */
        if (slept_out || now - last_check >= CHECK_NS) {
            /* nobody unlocked it for a whole slice: a dead holder (or a zombie) never will */
            slept_out = 0;
            last_check = now;
            if (nc_pid_gone((pid_t)owner)) {
                rc = recover(l, w, v, &took, what);
                if (rc || took) return rc;
                continue;
            }
            if (kw.peer > 0 && nc_pid_gone(kw.peer))
                return nc_error(NUMACOLL_ERR_PEER_DEAD,
                                "kvdb: %s: the server (pid %d) has exited", what, (int)kw.peer);
        }
        if (!(v & NC_PIDLOCK_WAITERS)) {
            /* relaxed: W carries no data, it only asks the holder's unlock to wake us */
            if (!atomic_compare_exchange_strong_explicit(&w->v, &v, v | NC_PIDLOCK_WAITERS,
                                                         memory_order_relaxed,
                                                         memory_order_relaxed))
                continue;
            v |= NC_PIDLOCK_WAITERS;
        }
        uint64_t slice = SLICE_NS;
        if (l->timeout_ns) {
            uint64_t left = kw.w.start_ns + l->timeout_ns + 1 - now;
            if (left < slice) slice = left;
        }
        rc = futex_wait(w, v, slice);
        if (rc == ETIMEDOUT) {
            slept_out = 1;
        } else if (rc != 0 && rc != EAGAIN && rc != EINTR) {
            /* no futexes (seccomp, an emulator): fall back to the policy's naps */
            rc = nc_kvwait_slow(&kw);
            if (rc) return rc;
        }
    }
}

void nc_pidlock_unlock_slow(nc_kvlock_t *l, nc_pidlock_t *w, uint32_t v, const char *what)
{
    /* v: what the fast path's CAS found instead of our bare pid. Ours with W: clear it and
     * wake the sleepers. Anything else was written over our hold: leave it. */
    for (int i = 0; i < UNLOCK_TRIES && (v & ~NC_PIDLOCK_WAITERS) == l->self; i++) {
        /* release: our section happens before the next holder's acquire CAS */
        if (atomic_compare_exchange_strong_explicit(&w->v, &v, 0, memory_order_release,
                                                    memory_order_relaxed)) {
            if (v & NC_PIDLOCK_WAITERS) futex_wake_all(w);
            return;
        }
    }
    nc_log(1, l->slot, l->nslots,
           "kvdb: %s was overwritten while this process held it (0x%08x); left to the next "
           "holder to recover",
           what, (unsigned)v);
}
