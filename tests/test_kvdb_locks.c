/* Key-value store lock schemes: mutual exclusion under stress (1..8 reader processes,
 * oversubscribed), torn-read checks, recovery after kill -9 of a reader holding its lock
 * or waiting for it, or exiting while holding it (a zombie until reaped), a server dying
 * inside a write, slot reuse across many attach/detach. Every scheme. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "forkrun.h"
#include "test_kvdb_common.h"

#include <stdio.h>

typedef struct shared {
    _Atomic int stop;
    _Atomic int ready;
    _Atomic int inside; /* readers inside a (non-optimistic) read section */
    _Atomic int holding;
    _Atomic int go; /* test_reader_dies_waiting: the server holds the write lock */
    _Atomic long torn;
    _Atomic long reads;
    char handle[64];
} shared_t;

typedef struct stress_arg {
    shared_t *sh;
    int optimistic;
} stress_arg_t;

static void spin_ns(unsigned *seed, unsigned max_ns)
{
    nc_random_delay(seed, max_ns);
}

static int stress_reader(void *argp)
{
    stress_arg_t *a = argp;
    shared_t *sh = a->sh;
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(sh->handle, &db)) {
        fprintf(stderr, "attach: %s\n", numacoll_last_error());
        return 10;
    }
    atomic_fetch_add(&sh->ready, 1);
    _Atomic uint64_t *f0 = nc_kvdb_scratch(db, 0), *f1 = nc_kvdb_scratch(db, 1);
    unsigned seed = (unsigned)getpid();
    long torn = 0, reads = 0;
    while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
        uint64_t tok;
        if (nc_kvdb_rdlock(db, &tok)) {
            fprintf(stderr, "rdlock: %s\n", numacoll_last_error());
            return 11;
        }
        if (!a->optimistic) atomic_fetch_add(&sh->inside, 1);
        uint64_t x = atomic_load_explicit(f0, memory_order_relaxed);
        spin_ns(&seed, 1500);
        uint64_t y = atomic_load_explicit(f1, memory_order_relaxed);
        if (!a->optimistic) atomic_fetch_sub(&sh->inside, 1);
        int v = nc_kvdb_rdunlock(db, tok);
        if (v == NC_KVLOCK_RETRY) continue;
        if (v) return 12;
        torn += x != y;
        reads++;
        atomic_fetch_add_explicit(&sh->reads, 1, memory_order_relaxed);
    }
    atomic_fetch_add(&sh->torn, torn);
    numacoll_kvdb_close(db);
    return 0;
}

/* A server for @p lock with @p max_readers slots, its handle in a new shared area (*sh),
 * and, unless @p value is NULL, key "k" of namespace "ns" set to @p value and committed. */
static numacoll_kvdb_t *start_server(const char *lock, int max_readers, const char *value,
                                     shared_t **sh)
{
    numacoll_kvdb_params_t p = {.lock = lock, .max_readers = max_readers};
    numacoll_kvdb_t *srv;
    assert_int_equal(numacoll_kvdb_create(&p, &srv), NUMACOLL_OK);
    if (value) {
        assert_int_equal(numacoll_kvdb_put(srv, "ns", 0, "k", value, strlen(value)), NUMACOLL_OK);
        assert_int_equal(numacoll_kvdb_commit(srv), NUMACOLL_OK);
    }
    *sh = kvt_shared(sizeof **sh);
    snprintf((*sh)->handle, sizeof(*sh)->handle, "%s", numacoll_kvdb_handle(srv));
    return srv;
}

static void stress_one(const char *lock, int N, int writes)
{
    shared_t *sh;
    numacoll_kvdb_t *srv = start_server(lock, N, NULL, &sh);
    stress_arg_t a = {sh, nc_kvdb_lock_ops(srv)->optimistic};
    pid_t pids[8];
    for (int i = 0; i < N; i++)
        pids[i] = kvt_spawn(stress_reader, &a);
    while (atomic_load(&sh->ready) < N)
        sched_yield();
    _Atomic uint64_t *f0 = nc_kvdb_scratch(srv, 0), *f1 = nc_kvdb_scratch(srv, 1);
    unsigned seed = 12345;
    int violations = 0;
    for (int i = 1; i <= writes || atomic_load(&sh->reads) < N; i++) {
        assert_int_equal(nc_kvdb_wrlock(srv), NUMACOLL_OK);
        if (!a.optimistic && atomic_load(&sh->inside) != 0) violations++;
        atomic_store_explicit(f0, (uint64_t)i, memory_order_relaxed);
        spin_ns(&seed, 1500);
        if (!a.optimistic && atomic_load(&sh->inside) != 0) violations++;
        atomic_store_explicit(f1, (uint64_t)i, memory_order_relaxed);
        assert_int_equal(nc_kvdb_wrunlock(srv), NUMACOLL_OK);
        if (i % 16 == 0) sched_yield();
        if (i > 100 * writes) break; /* readers that never get in: fail below */
    }
    atomic_store(&sh->stop, 1);
    for (int i = 0; i < N; i++)
        assert_int_equal(kvt_reap(pids[i], 30), 0);
    if (violations || sh->torn)
        print_error("%s N=%d: %d exclusion violations, %ld torn reads of %ld\n", lock, N,
                    violations, (long)sh->torn, (long)sh->reads);
    assert_int_equal(violations, 0);
    assert_int_equal(sh->torn, 0);
    assert_true(sh->reads >= N);
    munmap(sh, sizeof *sh);
    numacoll_kvdb_close(srv);
}

static void test_stress(void **state)
{
    const char *lock = *state;
    for (int N = 1; N <= 8; N++)
        stress_one(lock, N, N <= 2 ? 400 : 120);
}

/* ---- kill -9 of a reader holding its lock -------------------------------------------- */

typedef struct hold_arg {
    shared_t *sh;
    int expect_recovered; /* reader taking over a dead slot must have recovered its lock */
} hold_arg_t;

static int holder(void *argp)
{
    hold_arg_t *a = argp;
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(a->sh->handle, &db)) return 10;
    uint64_t tok;
    if (nc_kvdb_rdlock(db, &tok)) return 11;
    atomic_store(&a->sh->holding, 1);
    while (1)
        pause(); /* killed here, holding the read lock */
}

static int taker(void *argp)
{
    hold_arg_t *a = argp;
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(a->sh->handle, &db)) {
        fprintf(stderr, "taker attach: %s\n", numacoll_last_error());
        return 10;
    }
    if (nc_kvdb_slot(db) != 0) return 11;
    char buf[16];
    size_t len;
    if (numacoll_kvdb_get(db, "ns", 0, "k", buf, sizeof buf, &len) || len != 2 ||
        memcmp(buf, "v1", 2)) {
        fprintf(stderr, "taker get: %s\n", numacoll_last_error());
        return 12;
    }
    numacoll_kvdb_stats_t st;
    numacoll_kvdb_stats(db, &st);
    if (a->expect_recovered && st.recovered < 1) return 13;
    numacoll_kvdb_close(db);
    return 0;
}

static void kill_holder(shared_t *sh, hold_arg_t *a)
{
    atomic_store(&sh->holding, 0);
    pid_t p = kvt_spawn(holder, a);
    while (!atomic_load(&sh->holding)) {
        assert_int_equal(waitpid(p, NULL, WNOHANG), 0);
        sched_yield();
    }
    kill(p, SIGKILL);
    assert_int_equal(kvt_reap(p, 10), 128 + SIGKILL);
}

static void test_robust(void **state)
{
    const char *lock = *state;
    shared_t *sh;
    numacoll_kvdb_t *srv = start_server(lock, 1, "v0", &sh);
    int optimistic = nc_kvdb_lock_ops(srv)->optimistic;
    hold_arg_t a = {sh, 0};
    alarm(60); /* a hang is a failure, not a stuck test run */

    /* 1. the writer proceeds after a reader died holding the lock */
    kill_holder(sh, &a);
    assert_int_equal(numacoll_kvdb_put(srv, "ns", 0, "k", "v1", 2), NUMACOLL_OK);
    assert_int_equal(numacoll_kvdb_commit(srv), NUMACOLL_OK); /* takes the write lock */
    numacoll_kvdb_stats_t st;
    numacoll_kvdb_stats(srv, &st);
    if (!optimistic) assert_true(st.recovered >= 1);
    /* the dead reader's (only) slot is taken over by a new reader */
    assert_int_equal(kvt_reap(kvt_spawn(taker, &a), 20), 0);
    assert_int_equal(nc_kvdb_slot_attaches(srv, 0), 2);

    /* 2. a new reader takes over the slot (and the lock) before the writer comes */
    kill_holder(sh, &a);
    /* (rwlock: the new reader clears the dead one's IN; the writer releases its hold) */
    int rw = strcmp(lock, "rwlock") == 0;
    a.expect_recovered = strstr(lock, "mutex") != NULL;
    assert_int_equal(kvt_reap(kvt_spawn(taker, &a), 20), 0);
    uint64_t rec = st.recovered;
    assert_int_equal(nc_kvdb_wrlock(srv), NUMACOLL_OK);
    assert_int_equal(nc_kvdb_wrunlock(srv), NUMACOLL_OK);
    numacoll_kvdb_stats(srv, &st);
    assert_int_equal(st.recovered, rec + (rw ? 1 : 0)); /* else repaired by the reader */
    assert_int_equal(nc_kvdb_slot_attaches(srv, 0), 4);
    assert_int_equal(nc_kvdb_slot_pid(srv, 0), 0);
    alarm(0);
    munmap(sh, sizeof *sh);
    numacoll_kvdb_close(srv);
}

/* ---- a reader that exits holding its lock, left a zombie ------------------------------ */

static int zombie_holder(void *argp)
{
    shared_t *sh = argp;
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(sh->handle, &db)) return 10;
    uint64_t tok;
    if (nc_kvdb_rdlock(db, &tok)) return 11;
    atomic_store(&sh->holding, 1);
    _exit(0); /* holding the read lock: its pid stays in the lock word */
}

/* The holder has exited but is not reaped (its parent, the test, is busy): a zombie, whose
 * pid kill(pid, 0) still finds. The writer must take the lock over (the zombie runs no
 * more code) without NUMACOLL_TIMEOUT, and a new reader takes over the slot. */
static void test_zombie_holder(void **state)
{
    const char *lock = *state;
    shared_t *sh;
    numacoll_kvdb_t *srv = start_server(lock, 1, "v0", &sh);
    int optimistic = nc_kvdb_lock_ops(srv)->optimistic;
    alarm(60); /* a hang is a failure */
    pid_t p = kvt_spawn(zombie_holder, sh);
    while (!atomic_load(&sh->holding))
        sched_yield();
    while (!nc_pid_gone(p)) /* exited; not reaped until below */
        sched_yield();
    numacoll_kvdb_stats_t st;
    numacoll_kvdb_stats(srv, &st);
    uint64_t before = st.recovered;
    assert_int_equal(numacoll_kvdb_put(srv, "ns", 0, "k", "v1", 2), NUMACOLL_OK);
    assert_int_equal(numacoll_kvdb_commit(srv), NUMACOLL_OK); /* takes the write lock */
    numacoll_kvdb_stats(srv, &st);
    if (!optimistic) assert_int_equal(st.recovered, before + 1);
    assert_int_equal(kvt_reap(p, 10), 0);
    hold_arg_t a = {sh, 0};
    assert_int_equal(kvt_reap(kvt_spawn(taker, &a), 20), 0);
    alarm(0);
    munmap(sh, sizeof *sh);
    numacoll_kvdb_close(srv);
}

/* ---- rwlock: kill -9 of a reader inside its lock or unlock -------------------------- */

typedef struct gap_arg {
    shared_t *sh;
    int point; /* the rwlock test hook's point to die at (nc_kvlock_rw_set_test_hook) */
} gap_arg_t;

static _Atomic int *g_gap_flag;
static int g_gap_point;

static void gap_hook(int point)
{
    if (point != g_gap_point) return;
    atomic_store(g_gap_flag, 1);
    while (1)
        pause(); /* killed here */
}

static int gap_holder(void *argp)
{
    gap_arg_t *a = argp;
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(a->sh->handle, &db)) return 10;
    g_gap_flag = &a->sh->holding, g_gap_point = a->point;
    nc_kvlock_rw_set_test_hook(gap_hook);
    uint64_t tok;
    if (nc_kvdb_rdlock(db, &tok)) return 11; /* points 0 and 1 stop in here */
    nc_kvdb_rdunlock(db, tok);               /* point 2 stops in here */
    return 12;
}

/* A live reader that holds the read lock for about 100 ms (sh->inside = 1 meanwhile). */
static int slow_reader(void *argp)
{
    shared_t *sh = argp;
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(sh->handle, &db)) return 20;
    uint64_t tok;
    if (nc_kvdb_rdlock(db, &tok)) return 21;
    atomic_store(&sh->inside, 1);
    atomic_store(&sh->ready, 1);
    usleep(100000);
    atomic_store(&sh->inside, 0);
    if (nc_kvdb_rdunlock(db, tok)) return 22;
    numacoll_kvdb_close(db);
    return 0;
}

/* Attach (taking over slot 0 of a dead reader), read-lock and unlock once, detach. */
static int slot_taker(void *argp)
{
    shared_t *sh = argp;
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(sh->handle, &db)) return 30;
    if (nc_kvdb_slot(db) != 0) return 31;
    uint64_t tok;
    if (nc_kvdb_rdlock(db, &tok) || nc_kvdb_rdunlock(db, tok)) return 32;
    numacoll_kvdb_close(db);
    return 0;
}

/* The writer must wait for a live reader (never release its hold on its behalf) and then
 * get the lock: checks that recovery left glibc's reader count right. */
static void writer_waits_for_live_reader(numacoll_kvdb_t *srv, shared_t *sh)
{
    atomic_store(&sh->ready, 0);
    pid_t p = kvt_spawn(slow_reader, sh);
    while (!atomic_load(&sh->ready))
        sched_yield();
    assert_int_equal(nc_kvdb_wrlock(srv), NUMACOLL_OK);
    int inside = atomic_load(&sh->inside);
    assert_int_equal(nc_kvdb_wrunlock(srv), NUMACOLL_OK);
    if (inside) print_error("the writer got the lock while a live reader held it\n");
    assert_int_equal(inside, 0);
    assert_int_equal(kvt_reap(p, 20), 0);
}

/* rwlock only: a reader killed (0) after its slot shows IN, before it locks (it holds
 * nothing), (1) holding the lock, (2) after it unlocked, before its slot shows OUT (it
 * holds nothing). The writer must get the lock without NUMACOLL_TIMEOUT, release exactly
 * the holds of dead readers (recovered count: 0, 1, 0) and still wait for a live reader
 * afterwards. Case 1 again with the dead slot taken over by a new reader first (its IN is
 * gone then; the writer finds the hold by count alone). Before, a reader killed between
 * getting the lock and marking its slot, or between unmarking and unlocking, left the
 * writer waiting forever. */
static void test_reader_dies_in_gap(void **state)
{
    (void)state;
    for (int c = 0; c < 4; c++) {
        int point = c == 3 ? 1 : c;
        shared_t *sh;
        numacoll_kvdb_t *srv = start_server("rwlock", c == 3 ? 1 : 2, "v0", &sh);
        alarm(60); /* a hang is a failure */
        gap_arg_t a = {sh, point};
        atomic_store(&sh->holding, 0);
        pid_t p = kvt_spawn(gap_holder, &a);
        while (!atomic_load(&sh->holding)) {
            assert_int_equal(waitpid(p, NULL, WNOHANG), 0);
            sched_yield();
        }
        kill(p, SIGKILL);
        assert_int_equal(kvt_reap(p, 10), 128 + SIGKILL);
        if (c == 3) /* a new reader takes over the dead one's (only) slot */
            assert_int_equal(kvt_reap(kvt_spawn(slot_taker, sh), 20), 0);
        numacoll_kvdb_stats_t st;
        numacoll_kvdb_stats(srv, &st);
        uint64_t before = st.recovered;
        if (point != 1) /* the dead reader holds nothing: a live one must still be waited for */
            writer_waits_for_live_reader(srv, sh);
        assert_int_equal(numacoll_kvdb_put(srv, "ns", 0, "k", "v1", 2), NUMACOLL_OK);
        assert_int_equal(numacoll_kvdb_commit(srv), NUMACOLL_OK); /* takes the write lock */
        numacoll_kvdb_stats(srv, &st);
        uint64_t want = point == 1 ? 1 : 0;
        if (st.recovered - before != want)
            print_error("case %d: %llu holds recovered\n", c,
                        (unsigned long long)(st.recovered - before));
        assert_int_equal(st.recovered - before, want);
        writer_waits_for_live_reader(srv, sh);
        alarm(0);
        munmap(sh, sizeof *sh);
        numacoll_kvdb_close(srv);
    }
}

/* ---- the server dies inside a write: readers get an error, not a hang ------------------ */

typedef struct srv_arg {
    shared_t *sh;
    const char *lock;
} srv_arg_t;

static int dying_server(void *argp)
{
    srv_arg_t *a = argp;
    numacoll_kvdb_params_t p = {.lock = a->lock, .max_readers = 2};
    numacoll_kvdb_t *srv;
    if (numacoll_kvdb_create(&p, &srv)) return 10;
    numacoll_kvdb_put(srv, "ns", 0, "k", "v", 1);
    if (numacoll_kvdb_commit(srv)) return 11;
    snprintf(a->sh->handle, sizeof a->sh->handle, "%s", numacoll_kvdb_handle(srv));
    atomic_store(&a->sh->ready, 1);
    while (atomic_load(&a->sh->ready) != 2)
        sched_yield(); /* the reader attached */
    if (nc_kvdb_wrlock(srv)) return 12;
    atomic_store(&a->sh->holding, 1);
    while (1)
        pause();
}

static void test_server_dies_in_write(void **state)
{
    const char *lock = *state;
    shared_t *sh = kvt_shared(sizeof *sh);
    srv_arg_t a = {sh, lock};
    pid_t p = kvt_spawn(dying_server, &a);
    while (!atomic_load(&sh->ready))
        sched_yield();
    numacoll_kvdb_t *db;
    assert_int_equal(numacoll_kvdb_attach(sh->handle, &db), NUMACOLL_OK);
    atomic_store(&sh->ready, 2);
    while (!atomic_load(&sh->holding))
        sched_yield();
    kill(p, SIGKILL);
    assert_int_equal(kvt_reap(p, 10), 128 + SIGKILL);
    alarm(30);
    char buf[8];
    size_t len;
    int rc = numacoll_kvdb_get(db, "ns", 0, "k", buf, sizeof buf, &len);
    alarm(0);
    if (rc != NUMACOLL_ERR_PEER_DEAD)
        print_error("%s: rc %d %s\n", lock, rc, numacoll_last_error());
    assert_int_equal(rc, NUMACOLL_ERR_PEER_DEAD);
    numacoll_kvdb_close(db);
    munmap(sh, sizeof *sh);
}

/* ---- kill -9 of a reader waiting for the lock that a writer holds ---------------------- */

static int waiter(void *argp)
{
    shared_t *sh = argp;
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(sh->handle, &db)) return 10;
    atomic_store(&sh->ready, 1);
    while (!atomic_load(&sh->go))
        sched_yield(); /* until the server holds the write lock */
    uint64_t tok;
    atomic_store(&sh->holding, 1);
    /* the server holds the write lock: this waits until it is killed */
    if (nc_kvdb_rdlock(db, &tok)) return 11;
    return 12; /* got the lock while the writer held it */
}

static void test_reader_dies_waiting(void **state)
{
    const char *lock = *state;
    shared_t *sh;
    numacoll_kvdb_t *srv = start_server(lock, 2, "v0", &sh);
    alarm(60); /* a hang is a failure, not a stuck test run */
    for (int round = 0; round < 3; round++) {
        atomic_store(&sh->holding, 0);
        atomic_store(&sh->ready, 0);
        atomic_store(&sh->go, 0);
        pid_t w = kvt_spawn(waiter, sh);
        while (!atomic_load(&sh->ready)) { /* attached (attaching may take the lock) */
            assert_int_equal(waitpid(w, NULL, WNOHANG), 0);
            sched_yield();
        }
        assert_int_equal(nc_kvdb_wrlock(srv), NUMACOLL_OK);
        atomic_store(&sh->go, 1); /* the waiter's read lock comes now */
        while (!atomic_load(&sh->holding)) {
            assert_int_equal(waitpid(w, NULL, WNOHANG), 0);
            sched_yield();
        }
        /* well inside its wait (spin, yields and naps) when the signal comes */
        struct timespec ts = {0, 50000000L};
        nanosleep(&ts, NULL);
        kill(w, SIGKILL);
        assert_int_equal(kvt_reap(w, 10), 128 + SIGKILL);
        assert_int_equal(nc_kvdb_wrunlock(srv), NUMACOLL_OK);
        /* the dead waiter must hold nothing: the next write and a live reader go through */
        char v[2] = {'w', (char)('0' + round)};
        assert_int_equal(numacoll_kvdb_put(srv, "ns", 0, "k", v, 2), NUMACOLL_OK);
        assert_int_equal(numacoll_kvdb_commit(srv), NUMACOLL_OK); /* takes the write lock */
    }
    numacoll_kvdb_t *db;
    assert_int_equal(numacoll_kvdb_attach(sh->handle, &db), NUMACOLL_OK);
    char buf[8];
    size_t len = 0;
    assert_int_equal(numacoll_kvdb_get(db, "ns", 0, "k", buf, sizeof buf, &len), NUMACOLL_OK);
    assert_int_equal(len, 2);
    assert_memory_equal(buf, "w2", 2);
    numacoll_kvdb_close(db);
    alarm(0);
    munmap(sh, sizeof *sh);
    numacoll_kvdb_close(srv);
}

/* ---- slots released on detach and reused ----------------------------------------------- */

static int churn(void *argp)
{
    shared_t *sh = argp;
    for (int i = 0; i < 150; i++) {
        numacoll_kvdb_t *db;
        int rc;
        /* the other churner may hold the second slot only: never FULL with 2 slots */
        if ((rc = numacoll_kvdb_attach(sh->handle, &db))) {
            fprintf(stderr, "attach %d: %s\n", i, numacoll_last_error());
            return 10;
        }
        char buf[8];
        size_t len;
        if (numacoll_kvdb_get(db, "ns", 0, "k", buf, sizeof buf, &len)) return 11;
        numacoll_kvdb_close(db);
    }
    return 0;
}

static void test_slot_reuse(void **state)
{
    const char *lock = *state;
    shared_t *sh;
    numacoll_kvdb_t *srv = start_server(lock, 2, "v", &sh);
    pid_t a = kvt_spawn(churn, sh), b = kvt_spawn(churn, sh);
    /* the writer keeps writing meanwhile */
    for (int i = 0; i < 50; i++) {
        assert_int_equal(numacoll_kvdb_put(srv, "ns", 0, "k", "v", 1), NUMACOLL_OK);
        assert_int_equal(numacoll_kvdb_commit(srv), NUMACOLL_OK);
        sched_yield();
    }
    assert_int_equal(kvt_reap(a, 30), 0);
    assert_int_equal(kvt_reap(b, 30), 0);
    assert_int_equal(nc_kvdb_slot_attaches(srv, 0) + nc_kvdb_slot_attaches(srv, 1), 300);
    assert_int_equal(nc_kvdb_slot_pid(srv, 0), 0);
    assert_int_equal(nc_kvdb_slot_pid(srv, 1), 0);
    munmap(sh, sizeof *sh);
    numacoll_kvdb_close(srv);
}

static int setup(void **state)
{
    (void)state;
    kvt_clear_env();
    return 0;
}

#define SCHEME_TESTS(name)                                                                         \
    cmocka_unit_test_prestate_setup_teardown(test_stress, setup, NULL, (void *)name),              \
        cmocka_unit_test_prestate_setup_teardown(test_robust, setup, NULL, (void *)name),          \
        cmocka_unit_test_prestate_setup_teardown(test_server_dies_in_write, setup, NULL,           \
                                                 (void *)name),                                    \
        cmocka_unit_test_prestate_setup_teardown(test_reader_dies_waiting, setup, NULL,            \
                                                 (void *)name),                                    \
        cmocka_unit_test_prestate_setup_teardown(test_slot_reuse, setup, NULL, (void *)name),      \
        cmocka_unit_test_prestate_setup_teardown(test_zombie_holder, setup, NULL, (void *)name)

int main(int argc, char **argv)
{
    /* optional argument: run one scheme only (ctest registers one run per scheme) */
    const char *only = argc > 1 ? argv[1] : NULL;
    const struct CMUnitTest all[][6] = {
        {SCHEME_TESTS("rwlock")},   {SCHEME_TESTS("1n-mutex")},
        {SCHEME_TESTS("2n-mutex")}, {SCHEME_TESTS("n-mutex-signal")},
        {SCHEME_TESTS("seqlock")},  {SCHEME_TESTS("reader-flags")},
    };
    int n;
    numacoll_kvdb_locks(&n);
    assert_true(n == 6);
    int fails = 0, ran = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        const char *name = all[i][0].initial_state;
        if (only && strcmp(only, name) != 0) continue;
        char group[64];
        snprintf(group, sizeof group, "kvdb locks: %s", name);
        fails += _cmocka_run_group_tests(group, all[i], 6, NULL, NULL);
        ran++;
    }
    if (!only || strcmp(only, "rwlock") == 0) {
        const struct CMUnitTest gap[] = {cmocka_unit_test_setup(test_reader_dies_in_gap, setup)};
        fails += cmocka_run_group_tests_name("kvdb locks: rwlock gaps", gap, NULL, NULL);
    }
    if (!ran) {
        fprintf(stderr, "unknown scheme '%s'\n", only);
        return 2;
    }
    int shm = nc_count_shm_files();
    (void)shm;
    return fails;
}
