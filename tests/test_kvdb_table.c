/* Key-value store: hash table, limits, growth, visibility, iteration, configuration and
 * handle errors, no leftovers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "forkrun.h"
#include "test_kvdb_common.h"

#include <dirent.h>
#include <sys/stat.h>
#include <stdio.h>

static numacoll_kvdb_t *mk(const char *lock, size_t buckets, size_t heap, int grow)
{
    numacoll_kvdb_params_t p = {
        .lock = lock, .max_readers = 4, .buckets = buckets, .heap_bytes = heap, .grow = grow};
    numacoll_kvdb_t *db = NULL;
    int rc = numacoll_kvdb_create(&p, &db);
    if (rc) print_error("create: %s\n", numacoll_last_error());
    assert_int_equal(rc, NUMACOLL_OK);
    return db;
}

static void put_str(numacoll_kvdb_t *db, const char *ns, uint32_t rank, const char *k,
                    const char *v)
{
    assert_int_equal(numacoll_kvdb_put(db, ns, rank, k, v, strlen(v)), NUMACOLL_OK);
}

static void expect_str(numacoll_kvdb_t *db, const char *ns, uint32_t rank, const char *k,
                       const char *v)
{
    char buf[256];
    size_t len = 0;
    int rc = numacoll_kvdb_get(db, ns, rank, k, buf, sizeof buf, &len);
    if (rc) print_error("get %s/%u/%s: %s\n", ns, rank, k, numacoll_last_error());
    assert_int_equal(rc, NUMACOLL_OK);
    assert_int_equal(len, strlen(v));
    assert_memory_equal(buf, v, len);
}

static void test_basic_commit_replace_delete(void **state)
{
    (void)state;
    kvt_clear_env();
    numacoll_kvdb_t *db = mk(NULL, 0, 0, 0);
    assert_string_equal(numacoll_kvdb_lock_name(db), "seqlock"); /* the default */
    char buf[16];
    size_t len;
    put_str(db, "job1", 0, "hostname", "node01");
    /* staged, not yet visible */
    assert_int_equal(numacoll_kvdb_get(db, "job1", 0, "hostname", buf, sizeof buf, &len),
                     NUMACOLL_ERR_NOT_FOUND);
    assert_non_null(strstr(numacoll_last_error(), "hostname"));
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
    expect_str(db, "job1", 0, "hostname", "node01");
    /* same key, other rank / namespace are different keys */
    assert_int_equal(numacoll_kvdb_get(db, "job1", 1, "hostname", buf, sizeof buf, &len),
                     NUMACOLL_ERR_NOT_FOUND);
    assert_int_equal(numacoll_kvdb_get(db, "job2", 0, "hostname", buf, sizeof buf, &len),
                     NUMACOLL_ERR_NOT_FOUND);
    /* replace */
    put_str(db, "job1", 0, "hostname", "node02-longer");
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
    expect_str(db, "job1", 0, "hostname", "node02-longer");
    /* small buffer */
    assert_int_equal(numacoll_kvdb_get(db, "job1", 0, "hostname", buf, 4, &len),
                     NUMACOLL_ERR_TOOBIG);
    assert_int_equal(len, 13);
    /* delete */
    assert_int_equal(numacoll_kvdb_delete(db, "job1", 0, "nokey"), NUMACOLL_ERR_NOT_FOUND);
    assert_int_equal(numacoll_kvdb_delete(db, "job1", 0, "hostname"), NUMACOLL_OK);
    expect_str(db, "job1", 0, "hostname", "node02-longer"); /* until commit */
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
    assert_int_equal(numacoll_kvdb_get(db, "job1", 0, "hostname", buf, sizeof buf, &len),
                     NUMACOLL_ERR_NOT_FOUND);
    /* staged put then delete in one batch */
    put_str(db, "job1", 0, "tmp", "x");
    assert_int_equal(numacoll_kvdb_delete(db, "job1", 0, "tmp"), NUMACOLL_OK);
    assert_int_equal(numacoll_kvdb_delete(db, "job1", 0, "tmp"), NUMACOLL_ERR_NOT_FOUND);
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
    assert_int_equal(numacoll_kvdb_get(db, "job1", 0, "tmp", buf, sizeof buf, &len),
                     NUMACOLL_ERR_NOT_FOUND);
    numacoll_kvdb_stats_t st;
    assert_int_equal(numacoll_kvdb_stats(db, &st), NUMACOLL_OK);
    assert_int_equal(st.entries, 0);
    numacoll_kvdb_close(db);
}

static void test_limits(void **state)
{
    (void)state;
    kvt_clear_env();
    setenv("NUMACOLL_KVDB_MAX_VALUE", "64K", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    numacoll_kvdb_t *db = mk("2n-mutex", 0, 0, 0);
    char ns[NUMACOLL_KVDB_MAX_NSLEN + 2], key[NUMACOLL_KVDB_MAX_KEYLEN + 2];
    memset(ns, 'n', sizeof ns);
    memset(key, 'k', sizeof key);
    ns[NUMACOLL_KVDB_MAX_NSLEN + 1] = key[NUMACOLL_KVDB_MAX_KEYLEN + 1] = 0;
    char *val = malloc(64 * 1024 + 1);
    for (int i = 0; i < 64 * 1024 + 1; i++)
        val[i] = (char)(i * 7);
    /* one byte too long: TOOBIG with the limit named */
    assert_int_equal(numacoll_kvdb_put(db, ns, 0, "k", "v", 1), NUMACOLL_ERR_TOOBIG);
    assert_non_null(strstr(numacoll_last_error(), "NUMACOLL_KVDB_MAX_NSLEN"));
    assert_int_equal(numacoll_kvdb_put(db, "ns", 0, key, "v", 1), NUMACOLL_ERR_TOOBIG);
    assert_non_null(strstr(numacoll_last_error(), "NUMACOLL_KVDB_MAX_KEYLEN"));
    assert_int_equal(numacoll_kvdb_put(db, "ns", 0, "k", val, 64 * 1024 + 1), NUMACOLL_ERR_TOOBIG);
    assert_non_null(strstr(numacoll_last_error(), "NUMACOLL_KVDB_MAX_VALUE"));
    assert_int_equal(numacoll_kvdb_put(db, "ns", 0, "", "v", 1), NUMACOLL_ERR_ARG);
    assert_int_equal(numacoll_kvdb_put(db, NULL, 0, "k", "v", 1), NUMACOLL_ERR_ARG);
    /* exactly maximal: accepted */
    ns[NUMACOLL_KVDB_MAX_NSLEN] = key[NUMACOLL_KVDB_MAX_KEYLEN] = 0;
    assert_int_equal(numacoll_kvdb_put(db, ns, 7, key, val, 64 * 1024), NUMACOLL_OK);
    assert_int_equal(numacoll_kvdb_put(db, ns, 8, key, "", 0), NUMACOLL_OK); /* empty value */
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
    char *out = malloc(64 * 1024);
    size_t len = 1;
    assert_int_equal(numacoll_kvdb_get(db, ns, 7, key, out, 64 * 1024, &len), NUMACOLL_OK);
    assert_int_equal(len, 64 * 1024);
    assert_memory_equal(out, val, len);
    assert_int_equal(numacoll_kvdb_get(db, ns, 8, key, NULL, 0, &len), NUMACOLL_OK);
    assert_int_equal(len, 0);
    free(out);
    free(val);
    numacoll_kvdb_close(db);
    kvt_clear_env();
}

static void test_collisions_and_tombstones(void **state)
{
    (void)state;
    kvt_clear_env();
    /* 8 buckets, no growth: at most 6 keys (3/4 load), every insertion collides */
    numacoll_kvdb_t *db = mk("1n-mutex", 8, 4096, NUMACOLL_KVDB_GROW_NO);
    char k[16], v[16];
    for (int i = 0; i < 6; i++) {
        snprintf(k, sizeof k, "key%d", i);
        snprintf(v, sizeof v, "val%d", i);
        put_str(db, "ns", 1, k, v);
    }
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
    for (int i = 0; i < 6; i++) {
        snprintf(k, sizeof k, "key%d", i);
        snprintf(v, sizeof v, "val%d", i);
        expect_str(db, "ns", 1, k, v);
    }
    /* full: a 7th key fails, nothing of the batch applied, the batch stays staged */
    put_str(db, "ns", 1, "key0", "changed");
    put_str(db, "ns", 1, "key6", "val6");
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_ERR_FULL);
    assert_non_null(strstr(numacoll_last_error(), "NUMACOLL_KVDB_GROW=0"));
    expect_str(db, "ns", 1, "key0", "val0");
    numacoll_kvdb_discard(db);
    /* delete from the middle of probe chains: later keys stay reachable; the tombstones
     * are reused by new keys without exceeding the load limit */
    for (int i = 0; i < 6; i += 2) {
        snprintf(k, sizeof k, "key%d", i);
        assert_int_equal(numacoll_kvdb_delete(db, "ns", 1, k), NUMACOLL_OK);
    }
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
    for (int i = 1; i < 6; i += 2) {
        snprintf(k, sizeof k, "key%d", i);
        snprintf(v, sizeof v, "val%d", i);
        expect_str(db, "ns", 1, k, v);
    }
    /* reinsert the deleted keys: they land in (their own) tombstones */
    for (int i = 0; i < 6; i += 2) {
        snprintf(k, sizeof k, "key%d", i);
        put_str(db, "ns", 1, k, "again");
    }
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
    for (int i = 0; i < 6; i++) {
        snprintf(k, sizeof k, "key%d", i);
        snprintf(v, sizeof v, "val%d", i);
        expect_str(db, "ns", 1, k, i % 2 ? v : "again");
    }
    /* heap full without growth */
    char big[4096] = {0};
    put_str(db, "ns", 2, "x", "y");
    assert_int_equal(numacoll_kvdb_put(db, "ns", 2, "big", big, sizeof big), NUMACOLL_OK);
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_ERR_FULL);
    numacoll_kvdb_close(db);
}

typedef struct grow_arg {
    const char *handle;
    _Atomic int *phase; /* server: number of committed rounds; reader: rounds checked */
    int rounds, per_round;
} grow_arg_t;

/* Reader: after each round the server commits, every key so far must be readable. */
static int grow_reader(void *argp)
{
    grow_arg_t *a = argp;
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(a->handle, &db)) return 10;
    for (int r = 1; r <= a->rounds; r++) {
        while (atomic_load(&a->phase[0]) < r)
            sched_yield();
        for (int i = 0; i < r * a->per_round; i++) {
            char k[32], v[32], buf[32];
            size_t len;
            snprintf(k, sizeof k, "key-%05d", i);
            snprintf(v, sizeof v, "value-%d", i * 3);
            if (numacoll_kvdb_get(db, "grow", (uint32_t)(i % 5), k, buf, sizeof buf, &len) ||
                len != strlen(v) || memcmp(buf, v, len)) {
                fprintf(stderr, "reader: round %d key %s: %s\n", r, k, numacoll_last_error());
                return 11;
            }
        }
        atomic_store(&a->phase[1], r);
    }
    numacoll_kvdb_stats_t st;
    numacoll_kvdb_stats(db, &st);
    numacoll_kvdb_close(db);
    return st.generation > 1 ? 0 : 12;
}

static void test_growth_seen_by_reader(void **state)
{
    (void)state;
    kvt_clear_env();
    const char *locks[] = {"seqlock", "n-mutex-signal"};
    for (int li = 0; li < 2; li++) {
        numacoll_kvdb_t *db = mk(locks[li], 8, 1024, NUMACOLL_KVDB_GROW_YES);
        _Atomic int *phase = kvt_shared(4096);
        grow_arg_t a = {numacoll_kvdb_handle(db), phase, 20, 50};
        pid_t p = kvt_spawn(grow_reader, &a);
        for (int r = 1; r <= a.rounds; r++) {
            for (int i = (r - 1) * a.per_round; i < r * a.per_round; i++) {
                char k[32], v[32];
                snprintf(k, sizeof k, "key-%05d", i);
                snprintf(v, sizeof v, "value-%d", i * 3);
                put_str(db, "grow", (uint32_t)(i % 5), k, v);
            }
            assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
            atomic_store(&phase[0], r);
            while (atomic_load(&phase[1]) < r && kill(p, 0) == 0)
                sched_yield();
        }
        assert_int_equal(kvt_reap(p, 30), 0);
        numacoll_kvdb_stats_t st;
        numacoll_kvdb_stats(db, &st);
        assert_true(st.generation > 3);
        assert_int_equal(st.entries, 1000);
        assert_true(st.buckets >= 2000);
        numacoll_kvdb_close(db);
        munmap((void *)phase, 4096);
    }
}

static void test_growth_max_size(void **state)
{
    (void)state;
    kvt_clear_env();
    setenv("NUMACOLL_KVDB_MAX_SIZE", "64K", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    numacoll_kvdb_t *db = mk("rwlock", 8, 4096, NUMACOLL_KVDB_GROW_YES);
    char v[1000] = {1};
    int rc = NUMACOLL_OK, i;
    for (i = 0; i < 1000 && rc == NUMACOLL_OK; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(numacoll_kvdb_put(db, "ns", 0, k, v, sizeof v), NUMACOLL_OK);
        rc = numacoll_kvdb_commit(db);
    }
    assert_int_equal(rc, NUMACOLL_ERR_FULL);
    assert_non_null(strstr(numacoll_last_error(), "NUMACOLL_KVDB_MAX_SIZE"));
    assert_true(i > 30); /* it did grow before hitting the cap */
    numacoll_kvdb_close(db);
    kvt_clear_env();
}

typedef struct iter_ctx {
    int n;
    int bad;
} iter_ctx_t;

static int iter_cb(const char *key, const void *value, size_t len, void *ctx)
{
    iter_ctx_t *c = ctx;
    c->n++;
    char expect[32];
    snprintf(expect, sizeof expect, "v-%s", key);
    if (len != strlen(expect) || memcmp(value, expect, len)) c->bad++;
    return 0;
}

static int iter_reader(void *arg)
{
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(arg, &db)) return 10;
    iter_ctx_t c = {0};
    size_t n = 0;
    if (numacoll_kvdb_iterate(db, "it", 3, iter_cb, &c, &n)) return 11;
    numacoll_kvdb_close(db);
    return (n == 20 && c.n == 20 && c.bad == 0) ? 0 : 12;
}

static void test_iterate(void **state)
{
    (void)state;
    kvt_clear_env();
    numacoll_kvdb_t *db = mk("reader-flags", 0, 0, 0);
    for (int r = 0; r < 5; r++)
        for (int i = 0; i < 17 + r; i++) {
            char k[16], v[32];
            snprintf(k, sizeof k, "k%d", i);
            snprintf(v, sizeof v, "v-%s", k);
            put_str(db, "it", (uint32_t)r, k, v);
            put_str(db, "other", 3, k, v);
        }
    /* a key of rank 3 deleted again must not show */
    put_str(db, "it", 3, "gone", "v-gone");
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
    assert_int_equal(numacoll_kvdb_delete(db, "it", 3, "gone"), NUMACOLL_OK);
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
    iter_ctx_t c = {0};
    size_t n = 0;
    assert_int_equal(numacoll_kvdb_iterate(db, "it", 2, iter_cb, &c, &n), NUMACOLL_OK);
    assert_int_equal(n, 19);
    assert_int_equal(c.n, 19);
    assert_int_equal(c.bad, 0);
    assert_int_equal(kvt_reap(kvt_spawn(iter_reader, (void *)numacoll_kvdb_handle(db)), 20), 0);
    numacoll_kvdb_close(db);
}

static void test_bad_config_and_args(void **state)
{
    (void)state;
    kvt_clear_env();
    numacoll_kvdb_t *db = NULL;
    setenv("NUMACOLL_KVDB_LOCK", "3n-mutex", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_ERR_CONFIG);
    const char *m = numacoll_last_error();
    assert_non_null(strstr(m, "NUMACOLL_KVDB_LOCK"));
    assert_non_null(strstr(m, "n-mutex-signal"));
    assert_non_null(strstr(m, "2n-mutex"));
    assert_int_equal(numacoll_kvdb_create(NULL, &db), NUMACOLL_ERR_CONFIG);
    assert_null(db);
    kvt_clear_env();
    const char *bad[][2] = {{"NUMACOLL_KVDB_BUCKETS", "4"},     {"NUMACOLL_KVDB_BUCKETS", "x"},
                            {"NUMACOLL_KVDB_MAX_READERS", "0"}, {"NUMACOLL_KVDB_HEAP", "12Q"},
                            {"NUMACOLL_KVDB_GROW", "maybe"},    {"NUMACOLL_KVDB_MAX_VALUE", "2G"},
                            {"NUMACOLL_KVDB_MAX_SIZE", "1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv(bad[i][0], bad[i][1], 1);
        assert_int_equal(numacoll_config_reload(), NUMACOLL_ERR_CONFIG);
        assert_non_null(strstr(numacoll_last_error(), bad[i][0]));
        assert_non_null(strstr(numacoll_last_error(), "allowed"));
        unsetenv(bad[i][0]);
    }
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    numacoll_kvdb_params_t p = {.lock = "nolock"};
    assert_int_equal(numacoll_kvdb_create(&p, &db), NUMACOLL_ERR_NOT_FOUND);
    assert_non_null(strstr(numacoll_last_error(), "seqlock"));
    p = (numacoll_kvdb_params_t){.max_readers = -3};
    assert_int_equal(numacoll_kvdb_create(&p, &db), NUMACOLL_ERR_ARG);
    p = (numacoll_kvdb_params_t){.grow = 7};
    assert_int_equal(numacoll_kvdb_create(&p, &db), NUMACOLL_ERR_ARG);
    /* handles */
    assert_int_equal(numacoll_kvdb_attach("job-42", &db), NUMACOLL_ERR_ARG);
    assert_non_null(strstr(numacoll_last_error(), "/proc/<pid>/fd/<n>"));
    assert_int_equal(numacoll_kvdb_attach("/proc/1/fd/3x", &db), NUMACOLL_ERR_ARG);
    assert_int_equal(numacoll_kvdb_attach(NULL, &db), NUMACOLL_ERR_ARG);
    assert_int_equal(numacoll_kvdb_attach("/proc/999999999/fd/3", &db), NUMACOLL_ERR_NOT_FOUND);
    /* a regular fd that is not a store */
    char h[64];
    snprintf(h, sizeof h, "/proc/%d/fd/%d", (int)getpid(), 1);
    int rc = numacoll_kvdb_attach(h, &db);
    assert_true(rc == NUMACOLL_ERR_ARG || rc == NUMACOLL_ERR_SYS);
    /* readers may not write; the server's handle is not a reader's */
    numacoll_kvdb_t *srv = mk("seqlock", 0, 0, 0);
    assert_int_equal(numacoll_kvdb_attach(numacoll_kvdb_handle(srv), &db), NUMACOLL_OK);
    assert_null(numacoll_kvdb_handle(db));
    assert_int_equal(numacoll_kvdb_put(db, "a", 0, "b", "c", 1), NUMACOLL_ERR_STATE);
    assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_ERR_STATE);
    numacoll_kvdb_close(db);
    numacoll_kvdb_close(srv);
}

/* Every public call names the NULL argument it was given (and its own name). */
#define EXPECT_NULL_ARG(call, fname, arg)                                                       \
    do {                                                                                        \
        assert_int_equal((call), NUMACOLL_ERR_ARG);                                             \
        const char *m_ = numacoll_last_error();                                                 \
        if (!strstr(m_, fname ": " arg " is NULL")) print_error("message: %s\n", m_);           \
        assert_non_null(strstr(m_, fname ": " arg " is NULL"));                                 \
    } while (0)

static void test_null_arguments(void **state)
{
    (void)state;
    kvt_clear_env();
    numacoll_kvdb_t *srv = mk("seqlock", 0, 0, 0), *rd = NULL;
    const char *h = numacoll_kvdb_handle(srv);
    char buf[8];
    size_t len = 0, n = 0;
    numacoll_kvdb_stats_t st;
    EXPECT_NULL_ARG(numacoll_kvdb_create(NULL, NULL), "numacoll_kvdb_create", "db");
    EXPECT_NULL_ARG(numacoll_kvdb_attach(NULL, &rd), "numacoll_kvdb_attach", "handle");
    assert_null(rd);
    EXPECT_NULL_ARG(numacoll_kvdb_attach(h, NULL), "numacoll_kvdb_attach", "db");
    assert_null(numacoll_kvdb_handle(NULL));
    assert_non_null(strstr(numacoll_last_error(), "numacoll_kvdb_handle: db is NULL"));
    assert_null(numacoll_kvdb_lock_name(NULL));
    assert_non_null(strstr(numacoll_last_error(), "numacoll_kvdb_lock_name: db is NULL"));
    EXPECT_NULL_ARG(numacoll_kvdb_put(NULL, "ns", 0, "k", "v", 1), "numacoll_kvdb_put", "db");
    EXPECT_NULL_ARG(numacoll_kvdb_put(srv, NULL, 0, "k", "v", 1), "numacoll_kvdb_put", "nspace");
    EXPECT_NULL_ARG(numacoll_kvdb_put(srv, "ns", 0, NULL, "v", 1), "numacoll_kvdb_put", "key");
    EXPECT_NULL_ARG(numacoll_kvdb_put(srv, "ns", 0, "k", NULL, 1), "numacoll_kvdb_put", "value");
    assert_int_equal(numacoll_kvdb_put(srv, "ns", 0, "k", NULL, 0), NUMACOLL_OK); /* empty */
    EXPECT_NULL_ARG(numacoll_kvdb_delete(NULL, "ns", 0, "k"), "numacoll_kvdb_delete", "db");
    EXPECT_NULL_ARG(numacoll_kvdb_delete(srv, NULL, 0, "k"), "numacoll_kvdb_delete", "nspace");
    EXPECT_NULL_ARG(numacoll_kvdb_delete(srv, "ns", 0, NULL), "numacoll_kvdb_delete", "key");
    EXPECT_NULL_ARG(numacoll_kvdb_commit(NULL), "numacoll_kvdb_commit", "db");
    numacoll_kvdb_discard(NULL);
    assert_non_null(strstr(numacoll_last_error(), "numacoll_kvdb_discard: db is NULL"));
    assert_int_equal(numacoll_kvdb_commit(srv), NUMACOLL_OK); /* the staged put survived */
    EXPECT_NULL_ARG(numacoll_kvdb_get(NULL, "ns", 0, "k", buf, sizeof buf, &len),
                    "numacoll_kvdb_get", "db");
    EXPECT_NULL_ARG(numacoll_kvdb_get(srv, NULL, 0, "k", buf, sizeof buf, &len),
                    "numacoll_kvdb_get", "nspace");
    EXPECT_NULL_ARG(numacoll_kvdb_get(srv, "ns", 0, NULL, buf, sizeof buf, &len),
                    "numacoll_kvdb_get", "key");
    EXPECT_NULL_ARG(numacoll_kvdb_get(srv, "ns", 0, "k", NULL, sizeof buf, &len),
                    "numacoll_kvdb_get", "buf");
    EXPECT_NULL_ARG(numacoll_kvdb_get(srv, "ns", 0, "k", buf, sizeof buf, NULL),
                    "numacoll_kvdb_get", "len");
    assert_int_equal(numacoll_kvdb_get(srv, "ns", 0, "k", NULL, 0, &len), NUMACOLL_OK);
    assert_int_equal(len, 0);
    EXPECT_NULL_ARG(numacoll_kvdb_iterate(NULL, "ns", 0, NULL, NULL, &n),
                    "numacoll_kvdb_iterate", "db");
    EXPECT_NULL_ARG(numacoll_kvdb_iterate(srv, NULL, 0, NULL, NULL, &n),
                    "numacoll_kvdb_iterate", "nspace");
    assert_int_equal(numacoll_kvdb_iterate(srv, "ns", 0, NULL, NULL, &n), NUMACOLL_OK);
    assert_int_equal(n, 1); /* fn may be NULL: count only */
    EXPECT_NULL_ARG(numacoll_kvdb_stats(NULL, &st), "numacoll_kvdb_stats", "db");
    EXPECT_NULL_ARG(numacoll_kvdb_stats(srv, NULL), "numacoll_kvdb_stats", "st");
    assert_int_equal(numacoll_kvdb_close(NULL), NUMACOLL_OK);
    int count = 0;
    assert_non_null(numacoll_kvdb_locks(NULL));
    assert_non_null(numacoll_kvdb_locks(&count));
    assert_int_equal(count, nc_kvlock_registry_count);
    /* a reader's handle: the same names, and the write calls say what is wrong */
    assert_int_equal(numacoll_kvdb_attach(h, &rd), NUMACOLL_OK);
    assert_null(numacoll_kvdb_handle(rd));
    assert_non_null(strstr(numacoll_last_error(), "reader"));
    assert_int_equal(numacoll_kvdb_put(rd, "ns", 0, "k", "v", 1), NUMACOLL_ERR_STATE);
    assert_non_null(strstr(numacoll_last_error(), "only the server"));
    EXPECT_NULL_ARG(numacoll_kvdb_get(rd, "ns", 0, "k", buf, sizeof buf, NULL),
                    "numacoll_kvdb_get", "len");
    numacoll_kvdb_close(rd);
    numacoll_kvdb_close(srv);
}

static void test_reader_slots_full(void **state)
{
    (void)state;
    kvt_clear_env();
    numacoll_kvdb_params_t p = {.lock = "1n-mutex", .max_readers = 2};
    numacoll_kvdb_t *srv, *r[3];
    assert_int_equal(numacoll_kvdb_create(&p, &srv), NUMACOLL_OK);
    const char *h = numacoll_kvdb_handle(srv);
    assert_int_equal(numacoll_kvdb_attach(h, &r[0]), NUMACOLL_OK);
    assert_int_equal(numacoll_kvdb_attach(h, &r[1]), NUMACOLL_OK);
    assert_int_equal(numacoll_kvdb_attach(h, &r[2]), NUMACOLL_ERR_FULL);
    assert_non_null(strstr(numacoll_last_error(), "max_readers"));
    numacoll_kvdb_close(r[0]);
    assert_int_equal(numacoll_kvdb_attach(h, &r[2]), NUMACOLL_OK); /* released slot reused */
    assert_int_equal(nc_kvdb_slot(r[2]), 0);
    assert_int_equal(nc_kvdb_slot_attaches(srv, 0), 2);
    numacoll_kvdb_close(r[1]);
    numacoll_kvdb_close(r[2]);
    numacoll_kvdb_close(srv);
}

static int count_memfd_in_shm(void)
{
    DIR *d = opendir("/dev/shm");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, "kvdb")) n++;
    if (d) closedir(d);
    return n;
}

static void test_no_shm_files(void **state)
{
    (void)state;
    kvt_clear_env();
    int before = nc_count_shm_files() + count_memfd_in_shm();
    numacoll_kvdb_t *db = mk("seqlock", 8, 1024, NUMACOLL_KVDB_GROW_YES);
    for (int i = 0; i < 50; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        put_str(db, "ns", 0, k, "some value");
        assert_int_equal(numacoll_kvdb_commit(db), NUMACOLL_OK);
    }
    /* while the store is alive nothing is in /dev/shm either */
    assert_int_equal(nc_count_shm_files() + count_memfd_in_shm(), before);
    /* the header segment the handle names, which readers only read, is mode 0400 (the
     * lock segment, which they write, 0600) */
    struct stat st;
    assert_int_equal(stat(numacoll_kvdb_handle(db), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0400);
    numacoll_kvdb_close(db);
    assert_int_equal(nc_count_shm_files() + count_memfd_in_shm(), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_commit_replace_delete),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_collisions_and_tombstones),
        cmocka_unit_test(test_growth_seen_by_reader),
        cmocka_unit_test(test_growth_max_size),
        cmocka_unit_test(test_iterate),
        cmocka_unit_test(test_bad_config_and_args),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_reader_slots_full),
        cmocka_unit_test(test_no_shm_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
