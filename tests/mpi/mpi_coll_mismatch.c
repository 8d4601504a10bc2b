/*
 * mpi_coll_test, members that disagree and a lack of memory (modes truncate, check,
 * nospace): receivers expecting other sizes or roots than the root's, NUMACOLL_BCAST_CHECK,
 * a queue that cannot get memory.
 */
#define _GNU_SOURCE 1
#include <mpi.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "mpi_coll_test.h"
#include "../common/squeeze.h"

/* One broadcast of sizes[rank] bytes from rank 0 (the root sends sizes[0]) on @p c, then
 * two matching ones. A rank whose size differs from the root's must get MPI_ERR_TRUNCATE
 * and hold the root's first min(own, root's) bytes and its own bytes after them unchanged,
 * with nothing written past its size; the others succeed with the whole message; the
 * matching broadcasts after it must deliver their data (no member lost its step). */
static void truncate_case(MPI_Comm c, const size_t *sizes, const char *what)
{
    size_t mine = sizes[g_rank % 3], sent = sizes[0], got = mine < sent ? mine : sent;
    unsigned char *buf = malloc(mine + 64);
    if (!buf) {
        CHECK(0, "truncate %s: out of memory", what);
        return;
    }
    for (size_t i = 0; i < mine + 64; i++)
        buf[i] = g_rank == 0 && i < mine ? (unsigned char)(i * 7 + 1) : 0xC3;
    int rc = MPI_Bcast(buf, (int)mine, MPI_BYTE, 0, c);
    if (mine == sent) {
        CHECK(rc == MPI_SUCCESS, "truncate %s: rank %d (size matches) got class %d", what, g_rank,
              err_class(rc));
    } else {
        CHECK(rc != MPI_SUCCESS && err_class(rc) == MPI_ERR_TRUNCATE,
              "truncate %s: rank %d expecting %zu of %zu bytes got class %d, not "
              "MPI_ERR_TRUNCATE",
              what, g_rank, mine, sent, err_class(rc));
    }
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < mine + 64; i++) {
        unsigned char want = i < got ? (unsigned char)(i * 7 + 1) : 0xC3;
        if (buf[i] != want && bad++ == 0) first = i;
    }
    CHECK(bad == 0, "truncate %s: rank %d (%zu of %zu bytes): %zu wrong bytes, first at %zu", what,
          g_rank, mine, sent, bad, first);
    free(buf);
    size_t after[2] = {200, 256 * 1024};
    for (int k = 0; k < 2; k++) {
        unsigned char *p = malloc(after[k]);
        if (!p) return;
        for (size_t i = 0; i < after[k]; i++)
            p[i] = g_rank == 0 ? (unsigned char)(i + k + 5) : 0;
        rc = MPI_Bcast(p, (int)after[k], MPI_BYTE, 0, c);
        size_t wrong = 0;
        for (size_t i = 0; i < after[k]; i++)
            wrong += p[i] != (unsigned char)(i + k + 5);
        CHECK(rc == MPI_SUCCESS && wrong == 0,
              "truncate %s: the %zu-byte broadcast after it: rank %d class %d, %zu wrong bytes",
              what, after[k], g_rank, err_class(rc), wrong);
        free(p);
    }
}

/* Sizes whose paths differ (numacoll: inline up to 1 KiB, the queues above; a receiver
 * follows the root's path) for ranks 0, 1, 2 (rank r > 2 passes rank r % 3's size) */
static void truncate_paths(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    static const size_t cases[][3] = {
        {100, 64 * 1024, 100},     /* root inline, a receiver in the queue path */
        {64 * 1024, 100, 3 << 20}, /* root queue, receivers inline and many ops */
        {3 << 20, 64 * 1024, 3 << 20},
        {3000, 3000, 17},
        {1, 1024, 1025},
        {0, 100, 0},         /* root without payload: a receiver expecting some */
        {100000, 0, 100000}, /* a receiver passing 0 against a queue root */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "case %zu (%zu/%zu/%zu bytes)", i, cases[i][0], cases[i][1],
                 cases[i][2]);
        truncate_case(c, cases[i], what);
    }
    MPI_Comm_free(&c);
}

/* Rank 2 passes rank 1 as the root while ranks 0 and 1 pass rank 0 (an erroneous program),
 * with sizes of each path (the fast path's first: the communicator is cached by then).
 * Rank 2 must get MPI_ERR_ROOT and the root's whole message (numacoll's notifications name
 * the root, and it follows the root's broadcast); ranks 0 and 1 succeed; a matching
 * broadcast after each must deliver its data. Ranks above 2 pass the right root. */
static void roots_paths(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int v = 0;
    MPI_Bcast(&v, 1, MPI_INT, 0, c);
    static const size_t sizes[] = {8, 100, 64 * 1024, 3 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        unsigned char *buf = malloc(n + 64);
        if (!buf) {
            CHECK(0, "roots: out of memory");
            break;
        }
        for (size_t i = 0; i < n + 64; i++)
            buf[i] = g_rank == 0 && i < n ? (unsigned char)(i * 5 + k) : 0xC3;
        int rc = MPI_Bcast(buf, (int)n, MPI_BYTE, g_rank == 2 ? 1 : 0, c);
        if (g_rank == 2)
            CHECK(rc != MPI_SUCCESS && err_class(rc) == MPI_ERR_ROOT,
                  "roots: rank 2 passing root 1 (root 0, %zu bytes) got class %d, not "
                  "MPI_ERR_ROOT",
                  n, err_class(rc));
        else
            CHECK(rc == MPI_SUCCESS, "roots: rank %d (%zu bytes) got class %d", g_rank, n,
                  err_class(rc));
        size_t bad = 0;
        for (size_t i = 0; i < n + 64; i++)
            bad += buf[i] != (i < n ? (unsigned char)(i * 5 + k) : 0xC3);
        CHECK(bad == 0, "roots: rank %d (%zu bytes): %zu wrong bytes", g_rank, n, bad);
        free(buf);
        int after = g_rank == 0 ? 4242 + (int)k : 0;
        rc = MPI_Bcast(&after, 1, MPI_INT, 0, c);
        CHECK(rc == MPI_SUCCESS && after == 4242 + (int)k,
              "roots: the broadcast after %zu bytes: rank %d class %d, value %d", n, g_rank,
              err_class(rc), after);
    }
    MPI_Comm_free(&c);
}

/* Mode "check", run with NUMACOLL_BCAST_CHECK=1: erroneous broadcasts fail on every rank
 * before any data moves. Case 0: the last rank passes itself as the root (the others root
 * 0; without the check nobody would notice): MPI_ERR_ROOT on every rank. Case 1: rank 1
 * passes twice the others' count, case 2 the last rank does (with NUMACOLL_FAKE_NODES, a
 * member of another node than the root's): MPI_ERR_TRUNCATE on every rank. Inline and
 * queue sizes, each on a fresh communicator whose first broadcast (correct) sets numacoll
 * up; every rank's buffer must stay as it was, and a correct broadcast must work
 * afterwards. */
void test_check(void)
{
    static const size_t sizes[] = {8, 100000};
    for (int c = 0; c < 3; c++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            MPI_Comm m;
            MPI_Comm_dup(MPI_COMM_WORLD, &m);
            MPI_Comm_set_errhandler(m, MPI_ERRORS_RETURN);
            int v = g_rank == 0 ? 77 : 0;
            int rc = MPI_Bcast(&v, 1, MPI_INT, 0, m);
            CHECK(rc == MPI_SUCCESS && v == 77, "check: warm-up got class %d, value %d",
                  err_class(rc), v);
            unsigned char *buf = malloc(2 * n);
            if (!buf) {
                CHECK(0, "check: out of memory");
                MPI_Comm_free(&m);
                return;
            }
            for (size_t i = 0; i < 2 * n; i++)
                buf[i] = (unsigned char)(g_rank == 0 ? i * 3 + (size_t)c : (size_t)(0xC3 + g_rank));
            int root = c == 0 && g_rank == g_size - 1 ? g_rank : 0;
            int odd = c == 1 ? 1 : g_size - 1; /* the rank with the other count */
            int count = c > 0 && g_rank == odd ? (int)(2 * n) : (int)n;
            rc = MPI_Bcast(buf, count, MPI_BYTE, root, m);
            int want = c == 0 ? MPI_ERR_ROOT : MPI_ERR_TRUNCATE;
            CHECK(rc != MPI_SUCCESS && err_class(rc) == want,
                  "check: case %d (%zu bytes): class %d, expected %d", c, n, err_class(rc), want);
            size_t changed = 0;
            for (size_t i = 0; i < 2 * n; i++)
                changed += buf[i] != (unsigned char)(g_rank == 0 ? i * 3 + (size_t)c
                                                                 : (size_t)(0xC3 + g_rank));
            CHECK(changed == 0, "check: case %d (%zu bytes): %zu bytes changed", c, n, changed);
            free(buf);
            MPI_Comm_free(&m);
        }
    MPI_Comm m;
    MPI_Comm_dup(MPI_COMM_WORLD, &m);
    int v[2] = {g_rank == 1 ? 5 : 0, g_rank == 1 ? 6 : 0};
    int rc = MPI_Bcast(v, 2, MPI_INT, 1, m);
    CHECK(rc == MPI_SUCCESS && v[0] == 5 && v[1] == 6, "check: the correct broadcast after");
    MPI_Comm_free(&m);
}

void test_truncate(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    char buf[64] = {0};
    /* rank 0 sends 16 bytes, the others expect 8: the native MPIs report MPI_ERR_TRUNCATE
     * (a receiver expecting more than is sent is not an error for them) */
    memset(buf + 8, 0x5A, 56);
    int rc = MPI_Bcast(buf, g_rank == 0 ? 16 : 8, MPI_BYTE, 0, c);
    if (g_rank != 0) {
        CHECK(rc != MPI_SUCCESS && err_class(rc) == MPI_ERR_TRUNCATE,
              "a receiver expecting 8 bytes of a 16-byte bcast got rc %d (class %d), expected "
              "MPI_ERR_TRUNCATE",
              rc, err_class(rc));
        int over = 0;
        for (int i = 8; i < 64; i++)
            over += buf[i] != 0x5A;
        CHECK(over == 0, "%d bytes written beyond the receive buffer", over);
    }
    /* a size mismatch inside the fast path: root 4 ints, receivers 2 */
    MPI_Comm c2;
    int v2 = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    MPI_Comm_set_errhandler(c2, MPI_ERRORS_RETURN);
    MPI_Bcast(&v2, 1, MPI_INT, 0, c2); /* cached from here on */
    int big[4] = {9, 9, 9, 9}, small[4] = {0, 0, 0x5A5A, 0x5A5A};
    rc = g_rank == 0 ? MPI_Bcast(big, 4, MPI_INT, 0, c2) : MPI_Bcast(small, 2, MPI_INT, 0, c2);
    if (g_rank != 0)
        CHECK(rc != MPI_SUCCESS && err_class(rc) == MPI_ERR_TRUNCATE && small[2] == 0x5A5A &&
                  small[3] == 0x5A5A,
              "int x2 receiving int x4 (cached communicator): rc class %d, guard %x %x",
              err_class(rc), small[2], small[3]);
    MPI_Comm_free(&c2);
    truncate_paths();
    if (g_size >= 3) roots_paths();
    if (g_rank == 0) printf("truncate: rank 0 rc %d\n", rc);
    if (g_rank != 0)
        printf("truncate: rank %d error class %d (MPI_ERR_TRUNCATE=%d)\n", g_rank, err_class(rc),
               MPI_ERR_TRUNCATE);
    MPI_Comm_free(&c);
}

/* The broadcast's queue memory comes at first use (NUMACOLL_BCAST_POPULATE=first-use). Run
 * with NUMACOLL_SHM_BACKEND=posix in a private mount namespace whose /dev/shm is a small
 * tmpfs (small_shm.sh): after the communicator's first broadcast (control blocks only),
 * rank 0 fills /dev/shm, so the root's queue cannot get memory for a 1 MiB broadcast. The
 * call must still succeed with the right data, through the MPI's own broadcast, and so
 * must the communicator's later ones; nothing of numacoll may stay in /dev/shm. */
void test_nospace(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int v = g_rank == 0 ? 42 : 0;
    MPI_Bcast(&v, 1, MPI_INT, 0, c); /* the team and its broadcast control blocks */
    CHECK(v == 42, "first broadcast got %d", v);
    char fill[64];
    snprintf(fill, sizeof fill, "/dev/shm/nc-test-fill-%d", (int)getpid());
    long long left = -1;
    int fd = -1;
    if (g_rank == 0) {
        fd = open(fill, O_RDWR | O_CREAT | O_EXCL, 0600);
        CHECK(fd >= 0, "cannot create %s: %s", fill, strerror(errno));
        /* take every free block: big steps first, then 64 KiB ones until ENOSPC */
        off_t at = 0;
        for (off_t step = 1 << 26; fd >= 0 && step >= 65536; step /= 2)
            while (posix_fallocate(fd, at, step) == 0)
                at += step;
        struct statvfs sv;
        if (statvfs("/dev/shm", &sv) == 0) left = (long long)sv.f_bavail * (long long)sv.f_frsize;
        CHECK(left >= 0 && left < (1 << 20), "%lld bytes still free in /dev/shm after filling it",
              left);
    }
    MPI_Barrier(c);
    stats_t s0 = get_stats();
    size_t n = (1 << 20) + 3;
    unsigned char *buf = malloc(n);
    for (int root = 0; root < 2 && root < g_size && buf; root++) {
        for (size_t k = 0; k < n; k++)
            buf[k] = g_rank == root ? (unsigned char)(k * 13 + root) : 0xEE;
        int rc = MPI_Bcast(buf, (int)n, MPI_BYTE, root, c);
        CHECK(rc == MPI_SUCCESS, "1 MiB broadcast from root %d with /dev/shm full: rc %d", root,
              rc);
        size_t bad = 0;
        for (size_t k = 0; k < n; k++)
            bad += buf[k] != (unsigned char)(k * 13 + root);
        CHECK(bad == 0, "root %d: %zu of %zu bytes wrong", root, bad, n);
    }
    v = g_rank == 0 ? 7 : 0; /* a small one on the same communicator: native from now on */
    MPI_Bcast(&v, 1, MPI_INT, 0, c);
    CHECK(v == 7, "small broadcast after the fallback got %d", v);
    stats_t s1 = get_stats();
    if (expect_numacoll() && g_size > 1)
        CHECK(s1.bcast_numacoll == s0.bcast_numacoll && s1.bcast_calls == s0.bcast_calls + 3,
              "numacoll executed %llu of the %llu broadcasts after /dev/shm was filled, "
              "expected 0 of 3",
              (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll),
              (unsigned long long)(s1.bcast_calls - s0.bcast_calls));
    MPI_Comm_free(&c);
    /* a new communicator of the same members reuses the team (and its broadcast set-up,
     * which the failure left consistent): with /dev/shm still full it falls back again;
     * once the space is back, numacoll broadcasts on the next one */
    for (int round = 0; round < 2 && buf; round++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        stats_t r0 = get_stats();
        for (size_t k = 0; k < n; k++)
            buf[k] = g_rank == 1 % g_size ? (unsigned char)(k * 5 + round) : 0xEE;
        int rc = MPI_Bcast(buf, (int)n, MPI_BYTE, 1 % g_size, c);
        size_t bad = 0;
        for (size_t k = 0; k < n; k++)
            bad += buf[k] != (unsigned char)(k * 5 + round);
        stats_t r1 = get_stats();
        CHECK(rc == MPI_SUCCESS && bad == 0, "%s: rc %d, %zu of %zu bytes wrong",
              round ? "space back" : "still full", rc, bad, n);
        if (expect_numacoll() && g_size > 1)
            CHECK((r1.bcast_numacoll - r0.bcast_numacoll) == (uint64_t)round,
                  "%s: numacoll executed %llu broadcasts, expected %d",
                  round ? "space back" : "still full",
                  (unsigned long long)(r1.bcast_numacoll - r0.bcast_numacoll), round);
        MPI_Barrier(c);
        if (round == 0 && fd >= 0) close(fd), unlink(fill), fd = -1;
        MPI_Barrier(c);
        MPI_Comm_free(&c);
    }
    if (fd >= 0) close(fd), unlink(fill);
    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    int shm = 0;
    DIR *d = g_rank == 0 ? opendir("/dev/shm") : NULL;
    for (struct dirent *e; d && (e = readdir(d));)
        shm += strncmp(e->d_name, "numacoll", 8) == 0;
    if (d) closedir(d);
    CHECK(shm == 0, "%d numacoll entries in /dev/shm", shm);
    if (g_rank == 0) printf("nospace: %lld bytes were left free; the broadcasts fell back\n", left);
}


/* ---- exhaust: a resource runs out at one rank after MPI_Init ---------------------------- */

/* One round of calls on @p c while @p victim is squeezed (see test_exhaust): a broadcast
 * of @p bytes from root 1, an allreduce and a reduce of @p count doubles; every call must
 * succeed with the right result. */
static void exhaust_round(MPI_Comm c, const char *what, size_t bytes, int count)
{
    unsigned char *b = malloc(bytes);
    double *x = malloc((size_t)count * sizeof *x), *y = malloc((size_t)count * sizeof *y);
    CHECK(b && x && y, "%s: no memory for the buffers", what);
    if (!b || !x || !y) goto out;
    int me, size;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &size);
    int root = 1 % size;
    fill_for(b, bytes, 0x77, me == root);
    int rc = MPI_Bcast(b, (int)bytes, MPI_BYTE, root, c);
    CHECK(rc == MPI_SUCCESS && wrong_bytes(b, bytes, 0x77) == 0,
          "%s: MPI_Bcast of %zu bytes: rc %d, %zu bytes wrong", what, bytes, rc,
          wrong_bytes(b, bytes, 0x77));
    for (int i = 0; i < count; i++)
        x[i] = me + i;
    rc = MPI_Allreduce(x, y, count, MPI_DOUBLE, MPI_SUM, c);
    int bad = 0;
    for (int i = 0; i < count; i++)
        bad += y[i] != (double)size * i + (double)size * (size - 1) / 2;
    CHECK(rc == MPI_SUCCESS && bad == 0, "%s: MPI_Allreduce of %d doubles: rc %d, %d wrong",
          what, count, rc, bad);
    rc = MPI_Reduce(x, y, count, MPI_DOUBLE, MPI_SUM, root, c);
    bad = 0;
    for (int i = 0; me == root && i < count; i++)
        bad += y[i] != (double)size * i + (double)size * (size - 1) / 2;
    CHECK(rc == MPI_SUCCESS && bad == 0, "%s: MPI_Reduce of %d doubles: rc %d, %d wrong", what,
          count, rc, bad);
out:
    free(b), free(x), free(y);
}

/* A rank runs out of file descriptors (before its communicator's team exists) or of
 * address space (before the broadcast queues and reduction buffers exist): every call
 * still succeeds with the right data on every rank, through the native collectives where
 * a set-up failed; with the limit lifted, a new communicator gets numacoll's again.
 * NUMACOLL_MPI_SETUP_AFTER=0 (run_mpi.sh): the team is made at a communicator's first
 * call. Errors return (MPI_ERRORS_RETURN), so a failure is a CHECK, not an abort. */
void test_exhaust(void)
{
    const struct {
        int resource, victim;
        const char *what;
    } cases[] = {{RLIMIT_NOFILE, 0, "rank 0 out of descriptors"},
                 {RLIMIT_NOFILE, 1, "rank 1 out of descriptors"},
                 {RLIMIT_AS, 0, "rank 0 out of address space"},
                 {RLIMIT_AS, 1, "rank 1 out of address space"}};
    /* AddressSanitizer (the preload of make test-sanitize) maps shadow memory as it goes:
     * with the address space squeezed, the sanitizer itself fails, not numacoll */
    int asan = dlsym(RTLD_DEFAULT, "__asan_init") != NULL, rounds = 0;
    if (asan && g_rank == 0)
        printf("exhaust: the address-space cases are left out under AddressSanitizer\n");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (asan && cases[k].resource == RLIMIT_AS) continue;
        rounds++;
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        int victim = cases[k].victim % g_size;
        if (cases[k].resource == RLIMIT_AS) MPI_Barrier(c); /* the team, not its buffers */
        stats_t s0 = get_stats();
        struct rlimit saved;
        /* address space: 1.5 MiB more than mapped, enough for the native calls' own
         * buffers, not for the queues or the reduction buffers of any team size */
        if (g_rank == victim)
            CHECK(nc_test_squeeze(cases[k].resource, 3u << 19, &saved) == 0,
                  "%s: cannot lower the limit: %s", cases[k].what, strerror(errno));
        exhaust_round(c, cases[k].what, 300000, 4000);
        exhaust_round(c, cases[k].what, 8, 1);
        if (g_rank == victim) setrlimit(cases[k].resource, &saved);
        stats_t s1 = get_stats();
        if (expect_numacoll() && g_size > 1) {
            uint64_t nc = (s1.bcast_numacoll - s0.bcast_numacoll) +
                          (s1.allreduce_numacoll - s0.allreduce_numacoll) +
                          (s1.reduce_numacoll - s0.reduce_numacoll);
            CHECK(nc == 0,
                  "%s: numacoll ran %llu/%llu/%llu of the 2 bcasts/allreduces/reduces; none "
                  "could have its resources",
                  cases[k].what, (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll),
                  (unsigned long long)(s1.allreduce_numacoll - s0.allreduce_numacoll),
                  (unsigned long long)(s1.reduce_numacoll - s0.reduce_numacoll));
        }
        MPI_Comm_free(&c);
    }
    /* the limits lifted: a new communicator of other members runs numacoll's collectives */
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - g_rank, &c);
    stats_t s0 = get_stats();
    exhaust_round(c, "after the limits", 300000, 4000);
    stats_t s1 = get_stats();
    if (expect_numacoll() && g_size > 1)
        CHECK(s1.bcast_numacoll - s0.bcast_numacoll == 1 &&
                  s1.allreduce_numacoll - s0.allreduce_numacoll == 1 &&
                  s1.reduce_numacoll - s0.reduce_numacoll == 1,
              "after the limits: numacoll ran %llu/%llu/%llu of the bcast/allreduce/reduce",
              (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll),
              (unsigned long long)(s1.allreduce_numacoll - s0.allreduce_numacoll),
              (unsigned long long)(s1.reduce_numacoll - s0.reduce_numacoll));
    MPI_Comm_free(&c);
    int fails = total_failures(MPI_COMM_WORLD);
    if (g_rank == 0 && fails == 0)
        printf("exhaust: %d squeezed rounds passed, the native collectives took over\n",
               rounds);
}
