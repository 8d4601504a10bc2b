/*
 * MPI-level tests of libnumacoll_mpi. Run under mpirun/mpiexec with the library preloaded
 * (numacoll-run); the program itself is a plain MPI program that does not link numacoll,
 * and finds the layer's counters with dlsym to prove that its calls were intercepted.
 *
 *   mpi_coll_test barrier [iters]   barrier property on WORLD, dup, odd sub-communicators
 *   mpi_coll_test noop [iters]      the same check with a no-op barrier: must detect it
 *   mpi_coll_test churn [n]         n x (dup, barrier, free), split churn; leak checks
 *   mpi_coll_test errors            MPI error semantics (root, count, communicator)
 *   mpi_coll_test threads           MPI_THREAD_MULTIPLE, one communicator per thread
 *   mpi_coll_test bcast [iters]     MPI_Bcast: sizes, roots, derived datatypes, type pairs
 *   mpi_coll_test truncate          MPI_Bcast with receivers expecting other sizes (and
 *                                   paths) than the root's, and a receiver passing
 *                                   another root
 *   mpi_coll_test bcastbig          broadcasts of more than 2 GiB: contiguous, rows against
 *                                   doubles, MPI_Bcast_c against MPI_Bcast, a short receiver,
 *                                   a receiver under 2 GiB against a root over it and back
 *   mpi_coll_test bcastc            MPI-4's MPI_Bcast_c on some ranks, MPI_Bcast on the
 *                                   others, in the same broadcasts (MPI-4 MPIs only)
 *   mpi_coll_test sessions          MPI-4 sessions only (no MPI_Init): a communicator from
 *                                   the session's mpi://WORLD, barriers, broadcasts, a
 *                                   long wait (progress hook), free, finalize
 *   mpi_coll_test soak [steps]      seeded random barriers, broadcasts (0 B - 4 MiB, type
 *                                   pairs), allreduces and reduces on six overlapping
 *                                   communicators, one re-created now and then; every byte
 *                                   and a canary checked
 *   mpi_coll_test nospace           a queue that cannot get memory: the native MPI_Bcast
 *                                   takes over (run by tests/mpi/small_shm.sh)
 *
 * Environment: NC_EXPECT=numacoll (default) | native: whether the counters must show
 * numacoll executing the calls (native: NUMACOLL_DISABLE=1 or no preload).
 * Exit status 0 iff every check passed on every rank.
 */
#define _GNU_SOURCE 1
#include <mpi.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <stddef.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test_util.h"
#include "soak_reduce.h"

static int expect_numacoll(void)
{
    const char *e = getenv("NC_EXPECT");
    return !e || strcmp(e, "native") != 0;
}


static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static double now(void)
{
    return MPI_Wtime();
}

/* ---- barrier property via a shared window ------------------------------------------- */

typedef int (*barrier_fn)(MPI_Comm);
static int noop_barrier(MPI_Comm c)
{
    (void)c;
    return MPI_SUCCESS;
}

/* Every rank writes epoch e into its slot, calls the barrier, then checks that every slot
 * is >= e. A barrier that lets a process out before all have arrived fails this, because
 * on every epoch one rank (rotating) delays before writing. Returns the violations seen. */
static long epoch_check(MPI_Comm comm, int iters, barrier_fn bar)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    MPI_Win win;
    long *mine = NULL, *slots = NULL;
    MPI_Aint sz;
    int du;
    if (MPI_Win_allocate_shared((MPI_Aint)sizeof(long), (int)sizeof(long), MPI_INFO_NULL, comm,
                                &mine, &win) != MPI_SUCCESS) {
        CHECK(0, "MPI_Win_allocate_shared failed");
        return 1;
    }
    MPI_Win_shared_query(win, 0, &sz, &du, &slots);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    __atomic_store_n(mine, 0, __ATOMIC_SEQ_CST);
    MPI_Win_sync(win);
    PMPI_Barrier(comm); /* native: make the zero-fill visible before the first epoch */
    long bad = 0;
    for (int e = 1; e <= iters; e++) {
        if (e % p == r) sleep_us(200 + (e % 3) * 300);
        __atomic_store_n(mine, (long)e, __ATOMIC_SEQ_CST);
        MPI_Win_sync(win);
        bar(comm);
        MPI_Win_sync(win);
        for (int q = 0; q < p; q++) {
            long v = __atomic_load_n(&slots[q], __ATOMIC_SEQ_CST);
            if (v < e) bad++;
        }
    }
    MPI_Win_unlock_all(win);
    PMPI_Barrier(comm);
    MPI_Win_free(&win);
    return bad;
}

static void test_barrier(int iters)
{
    stats_t s0 = get_stats();
    long calls = 0;
    /* MPI_COMM_WORLD */
    long bad = epoch_check(MPI_COMM_WORLD, iters, MPI_Barrier);
    calls += iters;
    CHECK(bad == 0, "%ld barrier violations on MPI_COMM_WORLD", bad);
    /* a duplicate */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    bad = epoch_check(dup, iters, MPI_Barrier);
    calls += iters;
    CHECK(bad == 0, "%ld barrier violations on a dup of MPI_COMM_WORLD", bad);
    MPI_Comm_free(&dup);
    /* odd-size sub-communicators: first 3 ranks; every other rank (reversed order) */
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, g_rank < 3 ? 0 : 1, g_rank, &sub);
    int ss;
    MPI_Comm_size(sub, &ss);
    bad = epoch_check(sub, iters, MPI_Barrier);
    CHECK(bad == 0, "%ld barrier violations on a sub-communicator of size %d", bad, ss);
    long sub_calls = ss > 1 ? iters : 0;
    MPI_Comm_free(&sub);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_size - g_rank, &sub);
    MPI_Comm_size(sub, &ss);
    bad = epoch_check(sub, iters, MPI_Barrier);
    CHECK(bad == 0, "%ld barrier violations on a reversed sub-communicator of size %d", bad, ss);
    sub_calls += ss > 1 ? iters : 0;
    MPI_Comm_free(&sub);

    /* a late rank: the others wait inside the barrier and poke MPI progress */
    if (g_rank == 0) sleep_us(30000);
    MPI_Barrier(MPI_COMM_WORLD);
    calls++;

    stats_t s1 = get_stats();
    long via = (long)(s1.barrier_numacoll - s0.barrier_numacoll);
    if (expect_numacoll()) {
        CHECK(g_stats_fn != NULL, "libnumacoll_mpi is not loaded (numacoll_mpi_stats missing)");
        if (g_size > 1) {
            CHECK(via >= calls + sub_calls, "only %ld of %ld barriers went through numacoll", via,
                  calls + sub_calls);
            int (*mode_fn)(MPI_Comm);
            *(void **)&mode_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_mode");
            /* flat mode: every rank waits inside numacoll (hierarchical: a rank alone on
             * its pseudo-node waits in the MPI library's own barrier instead) */
            if (g_rank != 0 && mode_fn && mode_fn(MPI_COMM_WORLD) == 1)
                CHECK(s1.progress_calls > s0.progress_calls,
                      "no MPI progress poke while waiting 30 ms for rank 0");
        }
    } else {
        CHECK(via == 0, "%ld barriers went through numacoll although it is disabled", via);
    }
    if (g_rank == 0)
        printf("barrier: %d processes, %d epochs per communicator, %ld via numacoll\n", g_size,
               iters, via);
}

static void test_noop(int iters)
{
    long bad = epoch_check(MPI_COMM_WORLD, iters, noop_barrier);
    long total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (g_size > 1) CHECK(total > 0, "the epoch check did not detect a no-op barrier");
    if (g_rank == 0) printf("noop: the check found %ld violations of a no-op barrier\n", total);
}

/* ---- churn and leaks ------------------------------------------------------------------ */

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* /dev/shm entries named after this process (numacoll-<pid>-...): other programs on
 * the machine may hold their own for a moment */
static int count_shm(void)
{
    int n = 0;
    char pre[64];
    snprintf(pre, sizeof pre, "numacoll-%d-", (int)getpid());
    DIR *d = opendir("/dev/shm");
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, pre, strlen(pre)) == 0) n++;
    closedir(d);
    return n;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

static void test_churn(int n)
{
    /* warm-up: the first communicators allocate MPI-internal pools */
    for (int i = 0; i < 50; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Barrier(c);
        MPI_Comm_free(&c);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    stats_t s0 = get_stats();
    int fd0 = count_fds();
    long rss0 = rss_kb();
    double t0 = now();
    for (int i = 0; i < n; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Barrier(c);
        MPI_Comm_free(&c);
    }
    double t1 = now();
    /* native reference for the same cycle */
    int nref = n / 10 > 0 ? n / 10 : 1;
    double t2 = now();
    for (int i = 0; i < nref; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        PMPI_Barrier(c);
        MPI_Comm_free(&c);
    }
    double t3 = now();
    /* split churn: odd-size pieces, a barrier and a bcast on each */
    for (int i = 0; i < 60; i++) {
        MPI_Comm c;
        int colors = 1 + i % 3;
        MPI_Comm_split(MPI_COMM_WORLD, (g_rank + i) % colors, g_size - g_rank, &c);
        MPI_Barrier(c);
        int v = i, cr;
        MPI_Comm_rank(c, &cr);
        if (cr != 0) v = -1;
        MPI_Bcast(&v, 1, MPI_INT, 0, c);
        CHECK(v == i, "split churn bcast got %d, expected %d", v, i);
        MPI_Comm_free(&c);
    }
    /* broadcast churn: a reused team keeps its broadcast set-up, with queue memory up to
     * NUMACOLL_MPI_TEAM_CACHE_QUEUE. Every 4th communicator also carries a queue message
     * from one root (only that member's queue gets memory); with a budget of 0 that member
     * alone drops its set-up, so at the next reuse the members disagree and must all drop
     * it (else the next broadcast's collective set-up would pair with a member that skips
     * it: a hang or wrong data) */
    stats_t sb0 = get_stats();
    int nb = n / 10 < 40 ? 40 : n / 10;
    size_t big = 65536 + 24;
    unsigned char *buf = malloc(big);
    for (int i = 0; i < nb; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        int root = i % g_size;
        long v[2] = {g_rank == root ? i : -1, g_rank == root ? -i : 1};
        MPI_Bcast(v, 2, MPI_LONG, root, c);
        CHECK(v[0] == i && v[1] == -i, "bcast churn %d got %ld %ld", i, v[0], v[1]);
        if (i % 4 == 3 && buf) {
            int broot = (i / 4) % g_size;
            for (size_t k = 0; k < big; k++)
                buf[k] = g_rank == broot ? (unsigned char)(k * 7 + i) : 0;
            MPI_Bcast(buf, (int)big, MPI_BYTE, broot, c);
            size_t bad = 0;
            for (size_t k = 0; k < big; k++)
                bad += buf[k] != (unsigned char)(k * 7 + i);
            CHECK(bad == 0, "bcast churn %d: %zu of %zu bytes wrong (root %d)", i, bad, big, broot);
        }
        MPI_Comm_free(&c);
    }
    free(buf);
    stats_t s1 = get_stats();
    if (expect_numacoll() && g_size > 1) {
        /* NUMACOLL_MPI_TEAM_CACHE_QUEUE=0: a team whose queue got memory drops its set-up
         * on the member that was the root, so the reuse after a queue message finds the
         * members in disagreement and none keeps it; the others keep it. Default (8 MiB):
         * at np=2 the whole queue (<= 4 MiB) fits, every reuse keeps the set-up but the
         * first (its team comes from the loop above, which never broadcast) */
        const char *qe = getenv("NUMACOLL_MPI_TEAM_CACHE_QUEUE");
        int no_queue = qe && strtoull(qe, NULL, 0) == 0;
        uint64_t kept = s1.bcast_states_kept - sb0.bcast_states_kept;
        uint64_t reused = s1.teams_reused - sb0.teams_reused;
        CHECK(kept >= (uint64_t)nb / 4 && reused >= (uint64_t)nb - 1,
              "broadcast set-ups kept at %llu of %llu team reuses (%d communicators): expected "
              "at least %d",
              (unsigned long long)kept, (unsigned long long)reused, nb, nb / 4);
        if (no_queue)
            CHECK(kept < reused,
                  "all %llu reuses kept their broadcast set-up with "
                  "NUMACOLL_MPI_TEAM_CACHE_QUEUE=0",
                  (unsigned long long)reused);
        else if (!qe && g_size == 2)
            CHECK(kept + 1 == reused,
                  "%llu of %llu reuses kept their broadcast set-up (np=2, "
                  "default queue budget: all but the first expected)",
                  (unsigned long long)kept, (unsigned long long)reused);
    }
    int fd1 = count_fds();
    long rss1 = rss_kb();
    int shm = count_shm();
    CHECK(fd1 <= fd0, "file descriptors grew from %d to %d", fd0, fd1);
    CHECK(shm == 0, "%d numacoll entries left in /dev/shm", shm);
#if defined(__SANITIZE_ADDRESS__)
    /* ASan keeps freed memory in quarantine (256 MB by default), so resident memory grows
     * by design there; its own checks stand in for this bound (make test-sanitize) */
#else
    CHECK(rss1 - rss0 < 8192, "resident memory grew by %ld KiB over %d cycles", rss1 - rss0, n);
#endif
    if (expect_numacoll() && g_size > 1) {
        uint64_t created = s1.teams_created - s0.teams_created;
        uint64_t destroyed = s1.teams_destroyed - s0.teams_destroyed;
        uint64_t reused = s1.teams_reused - s0.teams_reused;
        CHECK(created + reused >= (uint64_t)n, "teams created %llu + reused %llu < %d",
              (unsigned long long)created, (unsigned long long)reused, n);
        /* at most NUMACOLL_MPI_TEAM_CACHE (default 8) idle teams may stay for reuse */
        CHECK(created - destroyed <= 64, "teams created %llu, destroyed only %llu",
              (unsigned long long)created, (unsigned long long)destroyed);
        CHECK(s1.comms_set_up - s0.comms_set_up == s1.comms_freed - s0.comms_freed,
              "communicator states set up %llu != freed %llu",
              (unsigned long long)(s1.comms_set_up - s0.comms_set_up),
              (unsigned long long)(s1.comms_freed - s0.comms_freed));
    }
    if (g_rank == 0)
        printf("churn: %d x (dup + barrier + free): %.1f us per cycle (native barrier: %.1f us "
               "per cycle); fds %d -> %d, RSS %ld -> %ld KiB, /dev/shm entries %d\n",
               n, (t1 - t0) / n * 1e6, (t3 - t2) / nref * 1e6, fd0, fd1, rss0, rss1, shm);
}

/* ---- errors -------------------------------------------------------------------------- */

static int err_class(int rc)
{
    int c = rc;
    MPI_Error_class(rc, &c);
    return c;
}

static void test_errors(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int v = 0;
    int rc = MPI_Bcast(&v, 1, MPI_INT, g_size, c);
    CHECK(err_class(rc) == MPI_ERR_ROOT, "root=size gave class %d, expected MPI_ERR_ROOT",
          err_class(rc));
    rc = MPI_Bcast(&v, 1, MPI_INT, -5, c);
    CHECK(err_class(rc) == MPI_ERR_ROOT, "root=-5 gave class %d, expected MPI_ERR_ROOT",
          err_class(rc));
    rc = MPI_Bcast(&v, -1, MPI_INT, 0, c);
    CHECK(err_class(rc) == MPI_ERR_COUNT, "count=-1 gave class %d, expected MPI_ERR_COUNT",
          err_class(rc));
#if defined(OPEN_MPI) && OPEN_MPI
    /* MPI_IN_PLACE is not a bcast buffer: Open MPI reports MPI_ERR_ARG (MPICH crashes) */
    rc = MPI_Bcast(MPI_IN_PLACE, 1, MPI_INT, 0, c);
    CHECK(err_class(rc) == MPI_ERR_ARG, "MPI_Bcast(MPI_IN_PLACE) gave class %d, native MPI_ERR_ARG",
          err_class(rc));
#endif
    rc = MPI_Barrier(MPI_COMM_NULL);
    CHECK(rc != MPI_SUCCESS && err_class(rc) == MPI_ERR_COMM,
          "MPI_Barrier(MPI_COMM_NULL) gave class %d, expected MPI_ERR_COMM", err_class(rc));
    rc = MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_NULL);
    CHECK(rc != MPI_SUCCESS && err_class(rc) == MPI_ERR_COMM,
          "MPI_Bcast(MPI_COMM_NULL) gave class %d, expected MPI_ERR_COMM", err_class(rc));
    /* the communicator still works after the errors */
    rc = MPI_Barrier(c);
    CHECK(rc == MPI_SUCCESS, "barrier after errors failed: %d", rc);
    v = g_rank == 0 ? 77 : 0;
    rc = MPI_Bcast(&v, 1, MPI_INT, 0, c);
    CHECK(rc == MPI_SUCCESS && v == 77, "bcast after errors: rc %d v %d", rc, v);
    /* size-1 communicator and an intercommunicator pass through */
    rc = MPI_Barrier(MPI_COMM_SELF);
    CHECK(rc == MPI_SUCCESS, "barrier on MPI_COMM_SELF: %d", rc);
    if (g_size >= 2) {
        MPI_Comm half, inter;
        int color = g_rank < g_size / 2;
        MPI_Comm_split(MPI_COMM_WORLD, color, g_rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color ? g_size / 2 : 0, 7, &inter);
        rc = MPI_Barrier(inter);
        CHECK(rc == MPI_SUCCESS, "barrier on an intercommunicator: %d", rc);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    MPI_Comm_free(&c);
    if (g_rank == 0) printf("errors: MPI_ERR_ROOT, MPI_ERR_COUNT, MPI_ERR_COMM as native\n");
}

/* ---- threads ------------------------------------------------------------------------- */

typedef struct targ {
    MPI_Comm comm;
    int iters;
    long bad;
} targ_t;

static void *thread_main(void *p)
{
    targ_t *a = p;
    for (int i = 0; i < a->iters; i++) {
        MPI_Barrier(a->comm);
        int v = (g_rank == 0) ? i * 3 + 1 : -1;
        MPI_Bcast(&v, 1, MPI_INT, 0, a->comm);
        if (v != i * 3 + 1) a->bad++;
    }
    return NULL;
}

static void test_threads(int provided)
{
    if (provided < MPI_THREAD_MULTIPLE) {
        if (g_rank == 0) printf("threads: MPI_THREAD_MULTIPLE not provided; skipped\n");
        return;
    }
    enum { NT = 3 };
    targ_t a[NT];
    pthread_t th[NT];
    for (int t = 0; t < NT; t++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &a[t].comm);
        a[t].iters = 300;
        a[t].bad = 0;
    }
    for (int t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, thread_main, &a[t]);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < NT; t++) {
        CHECK(a[t].bad == 0, "thread %d: %ld wrong bcast values", t, a[t].bad);
        MPI_Comm_free(&a[t].comm);
    }
    if (g_rank == 0) printf("threads: %d threads x 300 barrier+bcast on own communicators\n", NT);
}

/* ---- bcast --------------------------------------------------------------------------- */

static unsigned char pattern(long i, int seed)
{
    return (unsigned char)((i * 131 + seed * 7) ^ (i >> 8));
}

/* the content of a test broadcast: pattern() of @p key */
static void fill(unsigned char *b, size_t n, unsigned key)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pattern((long)i, (int)key);
}

static size_t wrong_bytes(const unsigned char *b, size_t n, unsigned key)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += b[i] != pattern((long)i, (int)key);
    return bad;
}

/* before a test broadcast: the root's buffer filled, a receiver's 0xEE (never a pattern) */
static void fill_for(unsigned char *b, size_t n, unsigned key, int is_root)
{
    if (is_root)
        fill(b, n, key);
    else
        memset(b, 0xEE, n);
}

static void test_bcast_sizes(MPI_Comm comm, int iters)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    static const size_t sizes[] = {0, 1, 7, 64, 1000, 4096, 65536, 300000, 1 << 21};
    size_t maxb = 1 << 21;
    unsigned char *buf = malloc(maxb);
    for (int it = 0; it < iters; it++) {
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            int root = (int)((it + k) % (size_t)p);
            int seed = it * 17 + (int)k;
            fill_for(buf, n, (unsigned)seed, r == root);
            int rc = MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm);
            CHECK(rc == MPI_SUCCESS, "bcast rc %d", rc);
            size_t wrong = wrong_bytes(buf, n, (unsigned)seed);
            CHECK(wrong == 0, "bcast of %zu bytes from root %d: %zu wrong bytes", n, root, wrong);
        }
    }
    free(buf);
}

static void test_bcast_types(MPI_Comm comm)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    int root = p - 1;
    /* a row of a 16x16 matrix sent, a column received (vector type), and back */
    enum { N = 16 };
    double m[N][N];
    MPI_Datatype col;
    MPI_Type_vector(N, 1, N, MPI_DOUBLE, &col);
    MPI_Type_commit(&col);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            m[i][j] = r == root ? i * 100 + j : -1;
    if (r == root)
        MPI_Bcast(&m[3][0], N, MPI_DOUBLE, root, comm); /* row 3 */
    else
        MPI_Bcast(&m[0][5], 1, col, root, comm); /* into column 5 */
    if (r != root) {
        int wrong = 0;
        for (int i = 0; i < N; i++)
            wrong += m[i][5] != 300 + i;
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                if (j != 5) wrong += m[i][j] != -1;
        CHECK(wrong == 0, "row -> column bcast: %d wrong elements", wrong);
    }
    /* indexed on root, contiguous ints on receivers */
    int blens[3] = {2, 1, 3}, displs[3] = {0, 5, 9};
    MPI_Datatype idx;
    MPI_Type_indexed(3, blens, displs, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    int src[12], dst[6];
    for (int i = 0; i < 12; i++)
        src[i] = 1000 + i;
    memset(dst, 0, sizeof dst);
    if (r == root)
        MPI_Bcast(src, 1, idx, root, comm);
    else
        MPI_Bcast(dst, 6, MPI_INT, root, comm);
    if (r != root) {
        int expect[6] = {1000, 1001, 1005, 1009, 1010, 1011};
        CHECK(memcmp(dst, expect, sizeof dst) == 0, "indexed -> contiguous bcast wrong");
    }
    /* struct {int; double; char} x3, same type everywhere, with holes */
    struct rec {
        int a;
        double b;
        char c;
    } recs[3];
    int bl[3] = {1, 1, 1};
    MPI_Aint dp[3] = {offsetof(struct rec, a), offsetof(struct rec, b), offsetof(struct rec, c)};
    MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, st, st2;
    MPI_Type_create_struct(3, bl, dp, ty, &st);
    MPI_Type_create_resized(st, 0, sizeof(struct rec), &st2);
    MPI_Type_commit(&st2);
    for (int i = 0; i < 3; i++) {
        recs[i].a = r == root ? 10 * i : 0;
        recs[i].b = r == root ? 0.5 * i : 0;
        recs[i].c = r == root ? (char)('x' + i) : 0;
    }
    MPI_Bcast(recs, 3, st2, root, comm);
    int wrong = 0;
    for (int i = 0; i < 3; i++)
        wrong += recs[i].a != 10 * i || recs[i].b != 0.5 * i || recs[i].c != (char)('x' + i);
    CHECK(wrong == 0, "struct bcast: %d wrong records", wrong);
    /* a contiguous derived type vs. predefined elements */
    MPI_Datatype c4;
    MPI_Type_contiguous(4, MPI_INT, &c4);
    MPI_Type_commit(&c4);
    int a8[8];
    for (int i = 0; i < 8; i++)
        a8[i] = r == 0 ? i * i : -1;
    if (r == 0)
        MPI_Bcast(a8, 2, c4, 0, comm);
    else
        MPI_Bcast(a8, 8, MPI_INT, 0, comm);
    wrong = 0;
    for (int i = 0; i < 8; i++)
        wrong += a8[i] != i * i;
    CHECK(wrong == 0, "contiguous(4) x2 -> int x8: %d wrong", wrong);
    /* MPI_BOTTOM with a struct of absolute addresses (two separate objects) on one side,
     * a plain int[5] buffer on the other, both directions: the staging must pack and
     * unpack at those addresses (MPICH 4.0's MPI_Pack rejects its NULL MPI_BOTTOM) */
    for (int dir = 0; dir < 2; dir++) {
        int head[2], tail[3], flat[5];
        MPI_Aint ab[2];
        MPI_Get_address(head, &ab[0]);
        MPI_Get_address(tail, &ab[1]);
        int abl[2] = {2, 3};
        MPI_Datatype aty[2] = {MPI_INT, MPI_INT}, abs_t;
        MPI_Type_create_struct(2, abl, ab, aty, &abs_t);
        MPI_Type_commit(&abs_t);
        int bottom_side = dir == 0 ? r == root : r != root; /* who passes MPI_BOTTOM */
        for (int i = 0; i < 5; i++) {
            int v = r == root ? 7000 + 10 * dir + i : -1;
            flat[i] = v;
            if (i < 2)
                head[i] = v;
            else
                tail[i - 2] = v;
        }
        if (bottom_side)
            MPI_Bcast(MPI_BOTTOM, 1, abs_t, root, comm);
        else
            MPI_Bcast(flat, 5, MPI_INT, root, comm);
        wrong = 0;
        for (int i = 0; i < 5; i++)
            wrong +=
                (bottom_side ? (i < 2 ? head[i] : tail[i - 2]) : flat[i]) != 7000 + 10 * dir + i;
        CHECK(wrong == 0, "MPI_BOTTOM struct bcast (%s on the root): %d wrong",
              dir == 0 ? "MPI_BOTTOM" : "plain buffer", wrong);
        MPI_Type_free(&abs_t);
    }
    MPI_Type_free(&col);
    MPI_Type_free(&idx);
    MPI_Type_free(&st);
    MPI_Type_free(&st2);
    MPI_Type_free(&c4);
}

/* Every predefined type of MPI_Bcast's fast path (and a type-size mismatch inside it):
 * values checked element by element, each call counted as a numacoll broadcast. */
static void test_bcast_predefined(MPI_Comm comm)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    const struct {
        MPI_Datatype t;
        size_t size;
    } types[] = {{MPI_BYTE, 1},
                 {MPI_CHAR, 1},
                 {MPI_SIGNED_CHAR, 1},
                 {MPI_UNSIGNED_CHAR, 1},
                 {MPI_SHORT, sizeof(short)},
                 {MPI_UNSIGNED_SHORT, sizeof(short)},
                 {MPI_INT, sizeof(int)},
                 {MPI_UNSIGNED, sizeof(int)},
                 {MPI_LONG, sizeof(long)},
                 {MPI_UNSIGNED_LONG, sizeof(long)},
                 {MPI_LONG_LONG, sizeof(long long)},
                 {MPI_UNSIGNED_LONG_LONG, sizeof(long long)},
                 {MPI_FLOAT, sizeof(float)},
                 {MPI_DOUBLE, sizeof(double)},
                 {MPI_INT8_T, 1},
                 {MPI_UINT8_T, 1},
                 {MPI_INT16_T, 2},
                 {MPI_UINT16_T, 2},
                 {MPI_INT32_T, 4},
                 {MPI_UINT32_T, 4},
                 {MPI_INT64_T, 8},
                 {MPI_UINT64_T, 8}};
    const int nt = (int)(sizeof types / sizeof types[0]);
    const int counts[] = {1, 3, 7, 64, 129, 1000, 70000};
    const int nc = (int)(sizeof counts / sizeof counts[0]);
    unsigned char *buf = malloc(70000 * 8 + 64);
    int v = 0;
    MPI_Bcast(&v, 1, MPI_INT, 0, comm); /* sets the communicator up: later calls are cached */
    stats_t s0 = get_stats();
    long calls = 0;
    for (int ti = 0; ti < nt; ti++)
        for (int ci = 0; ci < nc; ci++) {
            size_t n = (size_t)counts[ci] * types[ti].size;
            int root = (ti + ci) % p;
            for (size_t i = 0; i < n; i++)
                buf[i] = r == root ? (unsigned char)(i * 7 + ti * 13 + ci) : 0xEE;
            buf[n] = 0x77; /* guard */
            int rc = MPI_Bcast(buf, counts[ci], types[ti].t, root, comm);
            calls++;
            size_t wrong = 0;
            for (size_t i = 0; i < n; i++)
                wrong += buf[i] != (unsigned char)(i * 7 + ti * 13 + ci);
            CHECK(rc == MPI_SUCCESS && wrong == 0 && buf[n] == 0x77,
                  "predefined type #%d x %d from root %d: rc %d, %zu wrong bytes, guard %s", ti,
                  counts[ci], root, rc, wrong, buf[n] == 0x77 ? "intact" : "overwritten");
        }
    stats_t s1 = get_stats();
    /* with a flat team on this communicator (not FAKE_NODES' hierarchy, where a member
     * alone on its pseudo-node has no team) every call must have been numacoll's */
    void *(*team_fn)(MPI_Comm) = NULL;
    *(void **)&team_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_team");
    if (expect_numacoll() && g_stats_fn && team_fn && team_fn(comm) && p > 1)
        CHECK(s1.bcast_numacoll - s0.bcast_numacoll == (unsigned long long)calls,
              "%llu of %ld predefined-type broadcasts went through numacoll",
              (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll), calls);
    /* the same byte count from different predefined types: int x 4 on the root, double x 2
     * elsewhere (same size, not the same signature: MPI leaves it undefined; numacoll moves
     * the bytes) */
    int32_t ia[4] = {1, 2, 3, 4};
    double da[2] = {0, 0};
    if (r == 0)
        MPI_Bcast(ia, 4, MPI_INT32_T, 0, comm);
    else
        MPI_Bcast(da, 2, MPI_DOUBLE, 0, comm);
    if (r != 0) CHECK(memcmp(da, ia, sizeof da) == 0, "int32 x4 -> double x2: bytes differ");
    free(buf);
}

static void test_bcast(int iters)
{
    test_bcast_predefined(MPI_COMM_WORLD);
    stats_t s0 = get_stats();
    test_bcast_sizes(MPI_COMM_WORLD, iters);
    test_bcast_types(MPI_COMM_WORLD);
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_size - g_rank, &sub);
    test_bcast_sizes(sub, 1);
    test_bcast_types(sub);
    MPI_Comm_free(&sub);
    stats_t s1 = get_stats();
    if (g_rank == 0)
        printf("bcast: %llu calls, %llu through numacoll (%llu staged)\n",
               (unsigned long long)(s1.bcast_calls - s0.bcast_calls),
               (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll),
               (unsigned long long)(s1.bcast_staged - s0.bcast_staged));
    if (!expect_numacoll())
        CHECK(s1.bcast_numacoll == s0.bcast_numacoll,
              "bcast went through numacoll although disabled");
    else if (g_stats_fn)
        CHECK(s1.bcast_calls > s0.bcast_calls, "MPI_Bcast calls were not intercepted");
}

/* MPI-4's large-count MPI_Bcast_c: a process may call it where another calls MPI_Bcast
 * in the same broadcast (the two are one operation). Even ranks call MPI_Bcast_c, odd ranks
 * MPI_Bcast, with roots of both kinds; numacoll must carry all of them (a layer that left
 * MPI_Bcast_c to the MPI would wait in its own broadcast for a root that never comes). Then
 * a zero-size datatype with a count beyond INT_MAX on the MPI_Bcast_c side. */
static void test_bcastc(void)
{
#if MPI_VERSION >= 4
    static const size_t sizes[] = {0, 1, 8, 200, 1000, 4096, 65536, 300000, 1 << 21};
    const size_t nsz = sizeof sizes / sizeof sizes[0];
    unsigned char *buf = malloc(1 << 21);
    stats_t s0 = get_stats();
    int calls = 0;
    for (int it = 0; it < 2; it++) {
        for (size_t k = 0; k < nsz; k++, calls++) {
            size_t n = sizes[k];
            int root = (int)((it * nsz + k) % (size_t)g_size);
            int seed = 31 * it + (int)k;
            fill_for(buf, n, (unsigned)seed, g_rank == root);
            int rc = g_rank % 2 == 0
                         ? MPI_Bcast_c(buf, (MPI_Count)n, MPI_BYTE, root, MPI_COMM_WORLD)
                         : MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
            CHECK(rc == MPI_SUCCESS, "bcast rc %d", rc);
            size_t wrong = wrong_bytes(buf, n, (unsigned)seed);
            CHECK(wrong == 0, "mixed MPI_Bcast_c/MPI_Bcast of %zu bytes from root %d: %zu wrong", n,
                  root, wrong);
        }
    }
    /* a datatype of size 0: MPI_Bcast_c with 3e9 of them is a broadcast of 0 bytes, as the
     * odd ranks' MPI_Bcast of 5 */
    MPI_Datatype empty;
    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    for (int root = 0; root < g_size && root < 2; root++, calls++) {
        int rc = g_rank % 2 == 0
                     ? MPI_Bcast_c(buf, (MPI_Count)3000000000LL, empty, root, MPI_COMM_WORLD)
                     : MPI_Bcast(buf, 5, empty, root, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "zero-size bcast rc %d", rc);
    }
    MPI_Type_free(&empty);
    /* a negative count is the MPI's error, as for MPI_Bcast */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Bcast_c(buf, (MPI_Count)-1, MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK(rc != MPI_SUCCESS, "MPI_Bcast_c with count -1 returned MPI_SUCCESS");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    stats_t s1 = get_stats();
    if (g_rank == 0)
        printf("bcastc: %d mixed broadcasts, %llu through numacoll on rank 0\n", calls,
               (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll));
    const char *after = getenv("NUMACOLL_MPI_SETUP_AFTER");
    if (expect_numacoll() && g_stats_fn && after && !strcmp(after, "0"))
        CHECK(s1.bcast_numacoll - s0.bcast_numacoll == (uint64_t)calls,
              "%llu of %d broadcasts went through numacoll",
              (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll), calls);
    free(buf);
#else
    if (g_rank == 0) printf("bcastc: this MPI has no MPI_Bcast_c (MPI_VERSION %d)\n", MPI_VERSION);
#endif
}

/* ---- broadcasts of more than INT_MAX bytes ------------------------------------------ */

/* value of double i of a big broadcast with key @p key (never the receivers' fill) */
static double big_val(size_t i, unsigned key)
{
    return (double)(i % 1000003u) * 0.5 + (double)key * 1e7 + 1.0;
}

/* MemAvailable of /proc/meminfo in bytes (0 if unknown) */
static size_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kb = 0;
    char line[256];
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (size_t)kb * 1024;
}

/* Broadcasts of more than INT_MAX bytes through numacoll (np = 2 or 3):
 * 1. MPI_Bcast of 2^28 + 3 doubles, contiguous, from every root;
 * 2. the same doubles as rows on the odd ranks: a row is 1023 doubles in a stride of 1024
 *    (non-contiguous), the even ranks use plain doubles; roots of both kinds, so the
 *    windows cut rows on the packing root and on the unpacking receivers;
 * 3. (MPI-4) MPI_Bcast_c of 2^31 + 7 bytes on the even ranks, MPI_Bcast of the same bytes
 *    as 5-byte elements on the odd ranks... (2147483655 = 5 x 429496731);
 * 4. a receiver (the last rank) whose count is 8 doubles short of the root's: it gets
 *    MPI_ERR_TRUNCATE, the others succeed, nobody hangs;
 * 5. (flat) a receiver of 100 doubles against a root over 2 GiB, and the other way round.
 * Every byte of every receiver is checked; numacoll's counters must show every broadcast
 * (NUMACOLL_MPI_SETUP_AFTER=0). Prints "SKIP: ..." (run_mpi.sh: skipped) without the
 * memory for it. */
static void test_bcastbig(void)
{
    const size_t rows = 262402, rowlen = 1023, n1 = ((size_t)1 << 28) + 3;
    const size_t n2 = rows * rowlen;           /* 2147497968 bytes */
    size_t cap = rows * 1024 * sizeof(double); /* the largest buffer: rows with their gaps */
    int skip = 0;
    if (g_rank == 0) {
        size_t avail = mem_available(), need = (size_t)g_size * (cap + ((size_t)300 << 20));
        if (avail < need) {
            printf("SKIP: bcastbig needs about %zu MiB of available memory, MemAvailable is "
                   "%zu MiB\n",
                   need >> 20, avail >> 20);
            skip = 1;
        }
    }
    PMPI_Bcast(&skip, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (skip) return;
    double *d = malloc(cap);
    CHECK(d != NULL, "no memory for %zu bytes", cap);
    if (!d) return;
    stats_t s0 = get_stats();
    int calls = 0, staged = 0;
    /* 1. contiguous */
    for (int root = 0; root < g_size; root++, calls++) {
        unsigned key = 10u + (unsigned)root;
        for (size_t i = 0; i < n1; i++)
            d[i] = g_rank == root ? big_val(i, key) : -1.0;
        int rc = MPI_Bcast(d, (int)n1, MPI_DOUBLE, root, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "contiguous big bcast rc %d", rc);
        size_t bad = 0;
        for (size_t i = 0; i < n1; i++)
            bad += d[i] != big_val(i, key);
        CHECK(bad == 0, "%zu of %zu doubles wrong (contiguous, root %d)", bad, n1, root);
    }
    /* 2. rows (odd ranks) and doubles (even ranks) */
    MPI_Datatype row0, row;
    MPI_Type_contiguous((int)rowlen, MPI_DOUBLE, &row0);
    MPI_Type_create_resized(row0, 0, 1024 * (MPI_Aint)sizeof(double), &row);
    MPI_Type_commit(&row);
    int odd = g_rank % 2;
    for (int root = 0; root < g_size && root < 2; root++, calls++) {
        unsigned key = 20u + (unsigned)root;
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < 1024; j++) {
                size_t at = odd ? r * 1024 + j : r * rowlen + j; /* where it lives here */
                size_t seq = r * rowlen + j;                     /* its place in the message */
                if (j < rowlen)
                    d[at] = g_rank == root ? big_val(seq, key) : -1.0;
                else if (odd)
                    d[at] = -2.0; /* a gap: must stay */
            }
        int rc = odd ? MPI_Bcast(d, (int)rows, row, root, MPI_COMM_WORLD)
                     : MPI_Bcast(d, (int)n2, MPI_DOUBLE, root, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "mixed-type big bcast rc %d", rc);
        size_t bad = 0, gaps = 0;
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < rowlen; j++)
                bad += d[odd ? r * 1024 + j : r * rowlen + j] != big_val(r * rowlen + j, key);
        if (odd)
            for (size_t r = 0; r < rows; r++)
                gaps += d[r * 1024 + 1023] != -2.0;
        CHECK(bad == 0 && gaps == 0,
              "rows/doubles from root %d: %zu of %zu doubles wrong, %zu gaps written", root, bad,
              n2, gaps);
        staged += odd;
    }
    MPI_Type_free(&row0);
    MPI_Type_free(&row);
#if MPI_VERSION >= 4
    /* 3. MPI_Bcast_c of bytes against MPI_Bcast of 5-byte elements */
    {
        const size_t nb = (size_t)5 * 429496731u;
        unsigned char *b = (unsigned char *)d;
        MPI_Datatype five;
        MPI_Type_contiguous(5, MPI_BYTE, &five);
        MPI_Type_commit(&five);
        for (int root = 0; root < g_size && root < 2; root++, calls++) {
            unsigned key = 30u + (unsigned)root;
            fill_for(b, nb, key, g_rank == root);
            int rc = odd ? MPI_Bcast(b, 429496731, five, root, MPI_COMM_WORLD)
                         : MPI_Bcast_c(b, (MPI_Count)nb, MPI_BYTE, root, MPI_COMM_WORLD);
            CHECK(rc == MPI_SUCCESS, "MPI_Bcast_c/MPI_Bcast of %zu bytes rc %d", nb, rc);
            size_t wrong = wrong_bytes(b, nb, key);
            CHECK(wrong == 0, "MPI_Bcast_c/MPI_Bcast of %zu bytes from root %d: %zu wrong", nb,
                  root, wrong);
        }
        MPI_Type_free(&five);
    }
#endif
    /* 4. the last rank expects 8 doubles fewer than the root's 2^28 + 19 (both more than
     * INT_MAX bytes; case 5 crosses the line) */
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    {
        int last = g_rank == g_size - 1;
        for (size_t i = 0; i < n1 + 16; i++)
            d[i] = g_rank == 0 ? big_val(i, 40) : -1.0;
        int rc = MPI_Bcast(d, (int)(last ? n1 + 8 : n1 + 16), MPI_DOUBLE, 0, c);
        calls++;
        if (last)
            CHECK(err_class(rc) == MPI_ERR_TRUNCATE,
                  "a receiver 64 bytes short got rc %d (class %d), not MPI_ERR_TRUNCATE", rc,
                  err_class(rc));
        else
            CHECK(rc == MPI_SUCCESS, "rank %d (count right) got rc %d beside a short receiver",
                  g_rank, rc);
        if (!last && g_rank != 0) {
            size_t bad = 0;
            for (size_t i = 0; i < n1 + 16; i++)
                bad += d[i] != big_val(i, 40);
            CHECK(bad == 0, "%zu doubles wrong beside a short receiver", bad);
        }
    }
    MPI_Comm_free(&c);
    stats_t s1 = get_stats();
    int (*mode_fn)(MPI_Comm) = NULL;
    *(void **)&mode_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_mode");
    /* counted where a node team broadcasts (flat; hierarchical with NUMACOLL_FAKE_NODES
     * and one rank per node: the leaders' MPI_Bcast of each window, nothing counted) */
    if (expect_numacoll() && g_stats_fn && mode_fn && mode_fn(MPI_COMM_WORLD) == 1) {
        /* all but the short receiver's failed one */
        int want = calls - (g_rank == g_size - 1);
        CHECK(s1.bcast_numacoll - s0.bcast_numacoll == (uint64_t)want,
              "%llu big broadcasts went through numacoll, expected %d",
              (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll), want);
        CHECK(s1.bcast_staged - s0.bcast_staged == (uint64_t)staged,
              "%llu big broadcasts staged here, expected %d (non-contiguous rows)",
              (unsigned long long)(s1.bcast_staged - s0.bcast_staged), staged);
    }
    /* 5. (flat: numacoll on the whole communicator; across nodes the leaders' MPI_Bcast
     * decides) a root over 2 GiB against a receiver under it, and the other way round: the
     * receiver whose size differs gets MPI_ERR_TRUNCATE, the root and the others succeed,
     * nobody waits (the small receiver takes the root's windows into a stage and drops
     * them), and a matching broadcast after each works */
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (expect_numacoll() && mode_fn && mode_fn(c) == 1) {
        int last = g_rank == g_size - 1;
        const size_t small = 100, large = n1 + 16;
        for (int way = 0; way < 2; way++) {
            size_t sent = way == 0 ? large : small, mine = last ? (way == 0 ? small : large) : sent;
            for (size_t i = 0; i < mine + 4; i++)
                d[i] = g_rank == 0 ? big_val(i, 50u + (unsigned)way) : -1.0;
            int rc = MPI_Bcast(d, (int)mine, MPI_DOUBLE, 0, c);
            if (last)
                CHECK(err_class(rc) == MPI_ERR_TRUNCATE,
                      "%s receiver of a %zu-double broadcast got class %d, not MPI_ERR_TRUNCATE",
                      way == 0 ? "a 100-double" : "an over-2-GiB", sent, err_class(rc));
            else
                CHECK(rc == MPI_SUCCESS,
                      "rank %d (count right) of a %zu-double broadcast got "
                      "class %d beside a receiver of another path",
                      g_rank, sent, err_class(rc));
            size_t over = 0;
            for (size_t i = mine; i < mine + 4; i++)
                over += d[i] != (g_rank == 0 ? big_val(i, 50u + (unsigned)way) : -1.0);
            CHECK(over == 0, "rank %d: %zu doubles written past its %zu", g_rank, over, mine);
            double v[1000];
            for (int i = 0; i < 1000; i++)
                v[i] = g_rank == 0 ? i * 0.5 : -1.0;
            rc = MPI_Bcast(v, 1000, MPI_DOUBLE, 0, c);
            size_t bad = 0;
            for (int i = 0; i < 1000; i++)
                bad += v[i] != i * 0.5;
            CHECK(rc == MPI_SUCCESS && bad == 0,
                  "the broadcast after the %zu-double one: rank %d class %d, %zu wrong", sent,
                  g_rank, err_class(rc), bad);
        }
    }
    MPI_Comm_free(&c);
    if (g_rank == 0)
        printf("bcastbig: %d broadcasts of more than 2 GiB, %llu through numacoll on rank 0\n",
               calls, (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll));
    free(d);
}

/* A process that never calls MPI_Init has no MPI_COMM_WORLD or MPI_COMM_SELF (MPICH aborts
 * on them); the layer must work on a communicator made from a session's group. Returns the
 * failed checks summed over the ranks. */
static int test_sessions(void)
{
#if MPI_VERSION >= 4
    MPI_Session ses;
    MPI_Group grp;
    MPI_Comm c;
    if (MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &ses) != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Session_init failed\n");
        return 1;
    }
    MPI_Group_from_session_pset(ses, "mpi://WORLD", &grp);
    MPI_Comm_create_from_group(grp, "numacoll.sessions", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    MPI_Group_free(&grp);
    MPI_Comm_rank(c, &g_rank);
    MPI_Comm_size(c, &g_size);
    stats_t s0 = get_stats();
    MPI_Barrier(c);
    test_bcast_sizes(c, 2);
    /* a long wait: the receivers' waits run the MPI progress hook */
    unsigned char b[64] = {0};
    if (g_rank == 0) {
        sleep_us(300000);
        memset(b, 0x5a, sizeof b);
    }
    MPI_Bcast(b, (int)sizeof b, MPI_BYTE, 0, c);
    CHECK(b[0] == 0x5a && b[63] == 0x5a, "late root's bytes wrong: %#x %#x", b[0], b[63]);
    MPI_Barrier(c);
    stats_t s1 = get_stats();
    if (g_stats_fn && expect_numacoll()) {
        CHECK(s1.barrier_numacoll - s0.barrier_numacoll == 2, "%llu of 2 barriers numacoll's",
              (unsigned long long)(s1.barrier_numacoll - s0.barrier_numacoll));
        CHECK(s1.bcast_numacoll - s0.bcast_numacoll == 19, "%llu of 19 broadcasts numacoll's",
              (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll));
        if (g_rank != 0)
            CHECK(s1.progress_calls > s0.progress_calls, "a 0.3 s wait made no progress call");
    }
    int total = 0;
    total = total_failures(c);
    if (g_rank == 0)
        printf("sessions: %d ranks, %llu barriers and %llu broadcasts numacoll's\n", g_size,
               (unsigned long long)(s1.barrier_numacoll - s0.barrier_numacoll),
               (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll));
    MPI_Comm_free(&c);
    MPI_Session_finalize(&ses);
    stats_t s2 = get_stats();
    if (g_stats_fn && expect_numacoll() && s2.comms_freed == s1.comms_freed) {
        fprintf(stderr, "[rank %d] the freed communicator's state was not released\n", g_rank);
        total++; /* this rank's own verdict: the ranks cannot talk any more */
    }
    if (count_shm() != 0) {
        fprintf(stderr, "[rank %d] /dev/shm entries left: %d\n", g_rank, count_shm());
        total++;
    }
    return total;
#else
    printf("sessions: this MPI has no sessions (MPI_VERSION %d)\n", MPI_VERSION);
    return 0;
#endif
}

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
static void test_check(void)
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

static void test_truncate(void)
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
static void test_nospace(void)
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

/* ---- deferred set-up (NUMACOLL_MPI_SETUP_AFTER) ----------------------------------------- */

/* The documented rule: a communicator with no reusable idle team whose every call weighs
 * @p units is set up at its first call if that reaches the threshold @p T, otherwise at the
 * first call numbered c = 2, 4, 8, ... with c * units >= T. Returns that call number. */
static long setup_call(uint64_t T, uint64_t units)
{
    if (units >= T) return 1;
    long c = 2;
    while ((uint64_t)c * units < T)
        c *= 2;
    return c;
}

/* the bcast tests' pattern() over a whole buffer, and the bytes that differ from it */
static void test_lazy(void)
{
    const char *e = getenv("NUMACOLL_MPI_SETUP_AFTER");
    uint64_t T = e ? strtoull(e, NULL, 10) : 2048;
    CHECK(g_size >= 2 && T >= 2, "lazy needs >= 2 processes and NUMACOLL_MPI_SETUP_AFTER >= 2");
    if (g_size < 2 || T < 2 || !g_stats_fn || !expect_numacoll()) return;
    int (*mode_fn)(MPI_Comm) = NULL;
    *(void **)&mode_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_mode");
    unsigned char small[8];
    size_t big_n = 256 * 1024;
    unsigned char *big = malloc(big_n);
    CHECK(big != NULL, "out of memory");
    if (!big) return;

    /* 1. a communicator freed before its calls reach T: every call native, no team */
    stats_t s0 = get_stats();
    MPI_Comm a;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    long n1 = (long)T - 1;
    size_t bad = 0;
    for (long i = 0; i < n1; i++) {
        if (i % 2) {
            MPI_Barrier(a);
            continue;
        }
        int root = (int)(i / 2 % g_size);
        if (g_rank == root)
            fill(small, sizeof small, (unsigned)i);
        else
            memset(small, 0, sizeof small);
        MPI_Bcast(small, (int)sizeof small, MPI_BYTE, root, a); /* 1 + 8/1024 = 1 unit */
        bad += wrong_bytes(small, sizeof small, (unsigned)i);
    }
    MPI_Comm_free(&a);
    stats_t s1 = get_stats();
    CHECK(bad == 0, "%zu wrong bytes in the deferred broadcasts", bad);
    CHECK(s1.barrier_numacoll == s0.barrier_numacoll && s1.bcast_numacoll == s0.bcast_numacoll,
          "numacoll ran %llu barriers and %llu broadcasts of a communicator below the threshold",
          (unsigned long long)(s1.barrier_numacoll - s0.barrier_numacoll),
          (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll));
    CHECK(s1.teams_created == s0.teams_created && s1.comms_set_up == s0.comms_set_up,
          "a communicator below the threshold got %llu teams",
          (unsigned long long)(s1.teams_created - s0.teams_created));
    CHECK(s1.comms_deferred == s0.comms_deferred + 1 && s1.comms_promoted == s0.comms_promoted,
          "deferred %llu, promoted %llu (expected 1, 0)",
          (unsigned long long)(s1.comms_deferred - s0.comms_deferred),
          (unsigned long long)(s1.comms_promoted - s0.comms_promoted));

    /* 2. barriers only (1 unit each): numacoll from call setup_call(T, 1) on, and the
     * barrier still holds afterwards (epoch check through the promoted communicator) */
    MPI_Comm b;
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    long c2 = setup_call(T, 1), n2 = c2 + 9;
    for (long i = 0; i < n2; i++)
        MPI_Barrier(b);
    stats_t s2 = get_stats();
    CHECK((long)(s2.barrier_numacoll - s1.barrier_numacoll) == n2 - c2 + 1,
          "%llu of %ld barriers went through numacoll; expected those from call %ld on",
          (unsigned long long)(s2.barrier_numacoll - s1.barrier_numacoll), n2, c2);
    CHECK(s2.comms_deferred == s1.comms_deferred + 1 && s2.comms_promoted == s1.comms_promoted + 1,
          "deferred %llu, promoted %llu (expected 1, 1)",
          (unsigned long long)(s2.comms_deferred - s1.comms_deferred),
          (unsigned long long)(s2.comms_promoted - s1.comms_promoted));
    CHECK(epoch_check(b, 30, MPI_Barrier) == 0, "the promoted communicator's barrier is broken");
    int flat = mode_fn ? mode_fn(b) == 1 : 0;

    /* 3. 256 KiB broadcasts (1 + 256 = 257 units each) from changing roots */
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    long c3 = setup_call(T, 1 + big_n / 1024), n3 = c3 + 2;
    bad = 0;
    for (long i = 0; i < n3; i++) {
        int root = (int)(i % g_size);
        if (g_rank == root)
            fill(big, big_n, (unsigned)(i + 1000));
        else
            memset(big, 0, big_n);
        MPI_Bcast(big, (int)big_n, MPI_BYTE, root, c);
        bad += wrong_bytes(big, big_n, (unsigned)(i + 1000));
    }
    stats_t s3 = get_stats();
    CHECK(bad == 0, "%zu wrong bytes in the 256 KiB broadcasts", bad);
    CHECK((long)(s3.bcast_numacoll - s2.bcast_numacoll) == n3 - c3 + 1,
          "%llu of %ld 256 KiB broadcasts went through numacoll; expected those from call %ld on",
          (unsigned long long)(s3.bcast_numacoll - s2.bcast_numacoll), n3, c3);

    /* 4. an explicit numacoll call sets a communicator up at once */
    stats_t s4 = get_stats();
    MPI_Comm f;
    MPI_Comm_dup(MPI_COMM_WORLD, &f);
    MPI_Barrier(f); /* deferred: b and c hold the teams with these members, none is idle */
    int m = mode_fn ? mode_fn(f) : -1;
    stats_t s7 = get_stats();
    CHECK(m == 1 || m == 2, "numacoll_mpi_comm_mode gave %d for a deferred communicator", m);
    CHECK(s7.comms_deferred == s4.comms_deferred + 1 && s7.comms_promoted == s4.comms_promoted + 1,
          "explicit set-up: deferred %llu, promoted %llu (expected 1, 1)",
          (unsigned long long)(s7.comms_deferred - s4.comms_deferred),
          (unsigned long long)(s7.comms_promoted - s4.comms_promoted));
    MPI_Barrier(f);
    stats_t s8 = get_stats();
    CHECK(s8.barrier_numacoll == s7.barrier_numacoll + 1,
          "the barrier after it was not numacoll's");
    MPI_Comm_free(&f);
    MPI_Comm_free(&c);

    /* 5. flat teams: a communicator with the members of an idle team takes it at once */
    if (flat) {
        MPI_Comm_free(&b); /* its team goes idle (NUMACOLL_MPI_TEAM_CACHE) */
        MPI_Comm d;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        stats_t s5 = get_stats();
        MPI_Barrier(d);
        stats_t s6 = get_stats();
        CHECK(s6.teams_reused >= s5.teams_reused + 1 &&
                  s6.barrier_numacoll == s5.barrier_numacoll + 1 &&
                  s6.comms_deferred == s5.comms_deferred,
              "a communicator with an idle team's members was not set up at its first call "
              "(reused %llu, numacoll barriers %llu, deferred %llu)",
              (unsigned long long)(s6.teams_reused - s5.teams_reused),
              (unsigned long long)(s6.barrier_numacoll - s5.barrier_numacoll),
              (unsigned long long)(s6.comms_deferred - s5.comms_deferred));
        b = d;
    }
    MPI_Comm_free(&b);
    free(big);
    if (g_rank == 0)
        printf("lazy: threshold %llu; barriers from call %ld, 256 KiB broadcasts from call %ld; "
               "%s team\n",
               (unsigned long long)T, c2, c3, flat ? "flat" : "hierarchical");
}

/* Members that differ in their configuration (the last rank, before its first collective,
 * turns NUMACOLL_MPI_BCAST off, or sets NUMACOLL_DISABLE=1, or an invalid value): the
 * agreement must notice and leave the communicator native on every member, with the right
 * bytes and no hang, whether its first call is a barrier or a broadcast and across the
 * deferral's checkpoints. */
static void test_bcast_env(const char *mode)
{
    unsigned char buf[300];
    stats_t s0 = get_stats();
    for (int first = 0; first < 2; first++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        size_t bad = 0;
        for (int i = 0; i < 40; i++) {
            if ((i + first) % 3 == 0) {
                MPI_Barrier(c);
                continue;
            }
            int root = i % g_size;
            if (g_rank == root)
                fill(buf, sizeof buf, (unsigned)i);
            else
                memset(buf, 0, sizeof buf);
            MPI_Bcast(buf, (int)sizeof buf, MPI_BYTE, root, c);
            bad += wrong_bytes(buf, sizeof buf, (unsigned)i);
        }
        CHECK(bad == 0, "%zu wrong bytes (first call a %s)", bad, first ? "broadcast" : "barrier");
        MPI_Comm_free(&c);
    }
    stats_t s1 = get_stats();
    CHECK(s1.barrier_numacoll == s0.barrier_numacoll && s1.bcast_numacoll == s0.bcast_numacoll,
          "numacoll ran %llu barriers and %llu broadcasts on communicators whose members "
          "differ in their configuration",
          (unsigned long long)(s1.barrier_numacoll - s0.barrier_numacoll),
          (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll));
    if (g_rank == 0) printf("%s: 2 communicators, 80 calls, bytes right, native\n", mode);
}

/* ---- soak: random calls on overlapping communicators ---------------------------------- */

static uint64_t soak_next(uint64_t *x) /* splitmix64: the same stream on every rank */
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* a message size from size class @p cls (0-15) and random bits @p v: 0 B (1 in 16), up to
 * 1 KiB (inline, 8 in 16), up to 256 KiB (queue, 5 in 16), up to 4 MiB (1 in 16), under
 * 64 B (1 in 16) */
static size_t soak_size(int cls, uint64_t v)
{
    if (cls == 0) return 0;
    if (cls < 9) return 1 + (size_t)(v % 1024);
    if (cls < 14) return 1024 + (size_t)(v % (255 * 1024));
    if (cls == 14) return ((size_t)256 << 10) + (size_t)(v % ((size_t)15 << 18));
    return (size_t)(v % 64);
}

/* the MPI_COMM_WORLD ranks of @p comm's members, in its rank order; returns the size */
static int soak_members(MPI_Comm comm, int *out)
{
    if (comm == MPI_COMM_NULL) return 0;
    MPI_Group g, w;
    int p;
    MPI_Comm_size(comm, &p);
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    int *in = malloc((size_t)p * sizeof *in);
    for (int i = 0; i < p; i++)
        in[i] = i;
    MPI_Group_translate_ranks(g, p, in, w, out);
    free(in);
    MPI_Group_free(&g);
    MPI_Group_free(&w);
    return p;
}

/* @p steps calls drawn from one seeded stream (NC_SOAK_SEED, else rank 0's clock, printed
 * for a rerun): barriers, allreduces and reduces (soak_reduce.h: 1 in 8 calls, up to
 * 192 KiB) and broadcasts of 0 B to 4 MiB from random roots, some with a
 * type pair (contiguous doubles at the root, every other double on the receivers), on six
 * communicators whose member sets and rank orders differ (world, a dup, parity halves,
 * reversed ranks, all but the last rank, and one freed and duplicated again now and
 * then). The calls on one communicator
 * interleave with the others' in each process, and the deferred set-up
 * (NUMACOLL_MPI_SETUP_AFTER) ends at a different step for each. Every receiver checks
 * every byte and the canary bytes past its message. Barriers: before each, a rank stores
 * the step number into its slot for that communicator (a shared window on the node), and
 * after it every member's slot must hold at least that step (a member cannot store a
 * later one before this barrier has let it out). NC_SOAK_NOOP=1 replaces the barriers
 * by no-ops; then the check must find members left behind (proof that it can fail). */
static void test_soak(int steps)
{
    enum { NCOMM = 6, CANARY = 64 };
    const size_t maxb = (size_t)4 << 20;
    uint64_t seed = 0;
    const char *e = getenv("NC_SOAK_SEED");
    if (g_rank == 0) seed = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    PMPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (g_rank == 0) printf("soak: seed %llu (NC_SOAK_SEED to rerun)\n", (unsigned long long)seed);
    fflush(stdout);
    MPI_Comm comms[NCOMM];
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &comms[2]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - g_rank, &comms[3]);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank == g_size - 1 ? MPI_UNDEFINED : 0, g_rank, &comms[4]);
    MPI_Comm_dup(comms[3], &comms[5]);
    unsigned char *buf = malloc(2 * maxb + CANARY); /* room for a strided receive */
    if (!buf) { /* a rank that left the loop would leave the others waiting */
        fprintf(stderr, "[rank %d] soak: out of memory\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Datatype dbl2r; /* a double followed by a gap of one: every other double */
    MPI_Type_create_resized(MPI_DOUBLE, 0, 2 * (MPI_Aint)sizeof(double), &dbl2r);
    MPI_Type_commit(&dbl2r);
    int *wr[NCOMM], np[NCOMM];
    for (int k = 0; k < NCOMM; k++) {
        wr[k] = malloc((size_t)g_size * sizeof(int));
        np[k] = soak_members(comms[k], wr[k]);
    }
    const int noop = getenv("NC_SOAK_NOOP") && atoi(getenv("NC_SOAK_NOOP")) == 1;
    MPI_Win bwin = MPI_WIN_NULL;
    long *bmine = NULL, **bslot = calloc((size_t)g_size, sizeof *bslot);
    if (MPI_Win_allocate_shared(NCOMM * (MPI_Aint)sizeof(long), (int)sizeof(long), MPI_INFO_NULL,
                                MPI_COMM_WORLD, &bmine, &bwin) == MPI_SUCCESS) {
        for (int q = 0; q < g_size; q++) {
            MPI_Aint sz;
            int du;
            MPI_Win_shared_query(bwin, q, &sz, &du, &bslot[q]);
        }
        MPI_Win_lock_all(MPI_MODE_NOCHECK, bwin);
        for (int k = 0; k < NCOMM; k++)
            __atomic_store_n(&bmine[k], -1L, __ATOMIC_SEQ_CST);
        MPI_Win_sync(bwin);
        PMPI_Barrier(MPI_COMM_WORLD); /* native: every slot initialised before the first use */
    } else {
        CHECK(0, "MPI_Win_allocate_shared failed: no barrier check");
    }
    long early = 0;
    FILE *trace = NULL; /* NC_SOAK_TRACE=PREFIX: each rank logs its steps to PREFIX.<rank> */
    if (getenv("NC_SOAK_TRACE")) {
        char tn[512];
        snprintf(tn, sizeof tn, "%s.%d", getenv("NC_SOAK_TRACE"), g_rank);
        trace = fopen(tn, "w");
    }
    stats_t s0 = get_stats();
    uint64_t x = seed;
    long nbar = 0, nbc = 0, npair = 0, nchurn = 0, nred = 0, nred_got = 0;
    double mib = 0;
    for (int st = 0; st < steps; st++) {
        /* every draw happens on every rank, members of the chosen communicator or not */
        uint64_t a = soak_next(&x), b = soak_next(&x), c = soak_next(&x);
        int k = (int)(a % NCOMM), op = (int)((a >> 8) % 16), cls = (int)(b % 16);
        size_t n = soak_size(cls, b >> 8);
        if (op == 15) { /* churn: comms[5] freed and duplicated from another communicator */
            int from = (int)(c % 4);
            if (comms[5] != MPI_COMM_NULL) MPI_Comm_free(&comms[5]);
            MPI_Comm_dup(comms[from], &comms[5]);
            np[5] = soak_members(comms[5], wr[5]);
            nchurn++;
            continue;
        }
        MPI_Comm cm = comms[k];
        if (cm == MPI_COMM_NULL) continue;
        int r, p;
        MPI_Comm_rank(cm, &r);
        MPI_Comm_size(cm, &p);
        if (trace) {
            fprintf(trace, "step %d comm %d (rank %d of %d) op %d n %zu root %d t %.3f\n", st, k, r,
                    p, op, n, (int)(c % (uint64_t)p), MPI_Wtime());
            fflush(trace);
        }
        if (op < 4) {
            if (bwin != MPI_WIN_NULL) {
                __atomic_store_n(&bmine[k], (long)st, __ATOMIC_SEQ_CST);
                MPI_Win_sync(bwin);
            }
            int rc = noop ? MPI_SUCCESS : MPI_Barrier(cm);
            CHECK(rc == MPI_SUCCESS, "step %d: barrier on communicator %d: rc %d", st, k, rc);
            if (bwin != MPI_WIN_NULL) {
                MPI_Win_sync(bwin);
                for (int m = 0; m < np[k]; m++) {
                    long v = __atomic_load_n(&bslot[wr[k][m]][k], __ATOMIC_SEQ_CST);
                    if (v < st) {
                        early++;
                        if (!noop)
                            CHECK(0,
                                  "step %d: left the barrier on communicator %d while "
                                  "world rank %d had not entered it (its last: step %ld)",
                                  st, k, wr[k][m], v);
                    }
                }
            }
            nbar++;
            continue;
        }
        if (op == 11 || op == 12) { /* a reduction of up to 3 fragments (192 KiB) */
            nred++;
            nred_got += soak_reduce_step(cm, wr[k], r, p, st, c, n % (192 << 10), buf);
            continue;
        }
        int root = (int)(c % (uint64_t)p);
        unsigned key = (unsigned)(st * 31 + k);
        if (op >= 13 && n >= sizeof(double)) {
            /* n / 8 doubles: contiguous at the root, every other double on the receivers */
            int cnt = (int)(n / sizeof(double));
            size_t span = 2 * (size_t)cnt * sizeof(double);
            if (r == root) {
                fill(buf, (size_t)cnt * sizeof(double), key);
            } else {
                memset(buf, 0xEE, span + CANARY);
            }
            int rc = r == root ? MPI_Bcast(buf, cnt, MPI_DOUBLE, root, cm)
                               : MPI_Bcast(buf, cnt, dbl2r, root, cm);
            CHECK(rc == MPI_SUCCESS, "step %d: pair broadcast rc %d", st, rc);
            if (r != root) {
                size_t bad = 0, gap = 0;
                unsigned char tmp[sizeof(double)];
                for (int i = 0; i < cnt; i++) {
                    memcpy(tmp, buf + 2 * (size_t)i * sizeof(double), sizeof tmp);
                    for (size_t j = 0; j < sizeof tmp; j++)
                        bad += tmp[j] != pattern((long)((size_t)i * sizeof tmp + j), (int)key);
                    for (size_t j = 0; j < sizeof(double); j++)
                        gap += buf[(2 * (size_t)i + 1) * sizeof(double) + j] != 0xEE;
                }
                for (size_t j = 0; j < CANARY; j++)
                    gap += buf[span + j] != 0xEE;
                CHECK(bad == 0 && gap == 0,
                      "step %d: %d doubles from root %d on communicator %d into a strided "
                      "type: %zu wrong bytes, %zu bytes written outside the elements",
                      st, cnt, root, k, bad, gap);
            }
            npair++;
        } else {
            fill_for(buf, n, key, r == root);
            memset(buf + n, 0xEE, CANARY);
            int rc = MPI_Bcast(buf, (int)n, MPI_BYTE, root, cm);
            CHECK(rc == MPI_SUCCESS, "step %d: broadcast rc %d", st, rc);
            size_t bad = r == root ? 0 : wrong_bytes(buf, n, key), over = 0;
            for (size_t j = 0; j < CANARY; j++)
                over += buf[n + j] != 0xEE;
            CHECK(bad == 0 && over == 0,
                  "step %d: %zu bytes from root %d on communicator %d (size %d): %zu wrong, "
                  "%zu canary bytes past the message overwritten",
                  st, n, root, k, p, bad, over);
        }
        nbc++;
        mib += (double)n / (1 << 20);
    }
    stats_t s1 = get_stats();
    if (bwin != MPI_WIN_NULL) {
        MPI_Win_unlock_all(bwin);
        MPI_Win_free(&bwin);
    }
    free(bslot);
    for (int k = 0; k < NCOMM; k++)
        free(wr[k]);
    for (int k = 1; k < NCOMM; k++)
        if (comms[k] != MPI_COMM_NULL) MPI_Comm_free(&comms[k]);
    MPI_Type_free(&dbl2r);
    free(buf);
    if (trace) fclose(trace);
    long nb = (long)(s1.bcast_numacoll - s0.bcast_numacoll);
    long nr = (long)(s1.barrier_numacoll - s0.barrier_numacoll);
    long nrd = (long)(s1.allreduce_numacoll - s0.allreduce_numacoll + s1.reduce_numacoll -
                      s0.reduce_numacoll);
    if (expect_numacoll() && g_stats_fn && !g_fail)
        CHECK(nb > nbc / 2 && (noop || nr > nbar / 2) && (nred == 0 || nrd > nred / 2),
              "numacoll ran only %ld of %ld broadcasts, %ld of %ld barriers and %ld of %ld "
              "reductions",
              nb, nbc, nr, nbar, nrd, nred);
    long tot[8] = {nbc, nb, nbar, nr, early, nred, nrd, nred_got}, all[8];
    PMPI_Allreduce(tot, all, 8, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (noop) {
        CHECK(all[4] > 0, "no-op barriers: the check found no member left behind");
        if (g_rank == 0)
            printf("soak: no-op barriers: %ld exits before a member had entered\n", all[4]);
    }
    if (g_rank == 0)
        printf("soak: %d steps, %ld communicator re-creations; over the ranks %ld broadcast "
               "calls (%ld numacoll's, %ld type pairs here), %ld barrier calls (%ld "
               "numacoll's), %ld allreduce/reduce calls (%ld numacoll's, %ld results "
               "checked), %.0f MiB of broadcasts here\n",
               steps, nchurn, all[0], all[1], npair, all[2], all[3], all[5], all[6], all[7],
               mib);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "barrier";
    int arg = argc > 2 ? atoi(argv[2]) : 0;
    int provided = MPI_THREAD_SINGLE;
    find_stats_fn();
    if (!strcmp(mode, "sessions")) { /* no MPI_Init: its own set-up, checks and verdict */
        int total = test_sessions();
        if (g_rank == 0 || total)
            printf("%s: %s (%d failed checks)\n", mode, total ? "FAIL" : "PASS", total);
        return total ? 1 : 0;
    }
    if (!strcmp(mode, "threads"))
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    /* before the first intercepted call, which reads the configuration */
    if (g_rank == g_size - 1) {
        if (!strcmp(mode, "bcastenv")) setenv("NUMACOLL_MPI_BCAST", "0", 1);
        if (!strcmp(mode, "disableenv")) setenv("NUMACOLL_DISABLE", "1", 1);
        if (!strcmp(mode, "badenv")) setenv("NUMACOLL_BCAST_TREE", "no-such-tree", 1);
        if (!strcmp(mode, "checkenv")) setenv("NUMACOLL_BCAST_CHECK", "1", 1);
    }

    if (!strcmp(mode, "barrier"))
        test_barrier(arg > 0 ? arg : 200);
    else if (!strcmp(mode, "noop"))
        test_noop(arg > 0 ? arg : 50);
    else if (!strcmp(mode, "churn"))
        test_churn(arg > 0 ? arg : 10000);
    else if (!strcmp(mode, "errors"))
        test_errors();
    else if (!strcmp(mode, "threads"))
        test_threads(provided);
    else if (!strcmp(mode, "bcast"))
        test_bcast(arg > 0 ? arg : 3);
    else if (!strcmp(mode, "truncate"))
        test_truncate();
    else if (!strcmp(mode, "check"))
        test_check();
    else if (!strcmp(mode, "bcastc"))
        test_bcastc();
    else if (!strcmp(mode, "bcastbig"))
        test_bcastbig();
    else if (!strcmp(mode, "nospace"))
        test_nospace();
    else if (!strcmp(mode, "lazy"))
        test_lazy();
    else if (!strcmp(mode, "soak"))
        test_soak(arg > 0 ? arg : 2000);
    else if (!strcmp(mode, "bcastenv") || !strcmp(mode, "disableenv") || !strcmp(mode, "badenv") ||
             !strcmp(mode, "checkenv"))
        test_bcast_env(mode);
    else {
        if (g_rank == 0) fprintf(stderr, "unknown mode '%s'\n", mode);
        g_fail++;
    }
    int total = 0;
    total = total_failures(MPI_COMM_WORLD);
    if (g_rank == 0) printf("%s: %s (%d failed checks)\n", mode, total ? "FAIL" : "PASS", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
