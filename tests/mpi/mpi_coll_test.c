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
 *   mpi_coll_test commcost [n] [kib] memory and set-up time per communicator (n dups used
 *                                   for small, then 256 KiB messages); small-message
 *                                   communicators must cost at most kib shared per member
 *   mpi_coll_test shmmax [n]        n communicators under a small NUMACOLL_SHM_MAX: set-ups
 *                                   past it run natively, freed ones give memory back
 *   mpi_coll_test exhaust           a rank out of descriptors or address space after
 *                                   MPI_Init: every call succeeds, natively where a
 *                                   set-up failed
 *   mpi_coll_test nospace           a queue that cannot get memory: the native MPI_Bcast
 *                                   takes over (run by tests/mpi/small_shm.sh)
 *
 * One program of six files (mpi_coll_test.h says which mode lives where).
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

#include "mpi_coll_test.h"

int expect_numacoll(void)
{
    const char *e = getenv("NC_EXPECT");
    return !e || strcmp(e, "native") != 0;
}


void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

double now(void)
{
    return MPI_Wtime();
}

/* ---- barrier property via a shared window ------------------------------------------- */

static int noop_barrier(MPI_Comm c)
{
    (void)c;
    return MPI_SUCCESS;
}

/* Every rank writes epoch e into its slot, calls the barrier, then checks that every slot
 * is >= e. A barrier that lets a process out before all have arrived fails this, because
 * on every epoch one rank (rotating) delays before writing. Returns the violations seen. */
long epoch_check(MPI_Comm comm, int iters, barrier_fn bar)
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

/* numacoll_mpi_stats_sized writes no byte past the size it is given (a caller built
 * against an older, shorter struct) and zeroes what lies past its own struct (a newer one) */
static void check_stats_sizes(const stats_t *earlier)
{
    union {
        stats_t st;
        unsigned char bytes[sizeof(stats_t) + 64];
    } out;
    const size_t older = offsetof(stats_t, bcast_calls);
    memset(&out, 0xAB, sizeof out);
    size_t lib = g_stats_fn(&out.st, older);
    size_t past = 0;
    for (size_t i = older; i < sizeof out; i++)
        past += out.bytes[i] != 0xAB;
    CHECK(lib == sizeof(stats_t) && past == 0 && out.st.barrier_calls >= earlier->barrier_calls,
          "stats into %zu bytes: returned %zu (want %zu), %zu bytes past them written, "
          "barrier_calls %llu (earlier %llu)",
          older, lib, sizeof(stats_t), past, (unsigned long long)out.st.barrier_calls,
          (unsigned long long)earlier->barrier_calls);
    memset(&out, 0xAB, sizeof out);
    lib = g_stats_fn(&out.st, sizeof out);
    size_t nonzero = 0;
    for (size_t i = sizeof(stats_t); i < sizeof out; i++)
        nonzero += out.bytes[i] != 0;
    CHECK(lib == sizeof(stats_t) && nonzero == 0 &&
              out.st.barrier_calls >= earlier->barrier_calls,
          "stats into %zu bytes: returned %zu, %zu of the bytes past the library's struct "
          "not zeroed", sizeof out, lib, nonzero);
}

void test_barrier(int iters)
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
        CHECK(g_stats_fn != NULL,
              "libnumacoll_mpi is not loaded (numacoll_mpi_stats_sized missing)");
        if (g_stats_fn) check_stats_sizes(&s1);
        if (g_size > 1) {
            CHECK(via >= calls + sub_calls, "only %ld of %ld barriers went through numacoll", via,
                  calls + sub_calls);
            int (*mode_fn)(MPI_Comm);
            *(void **)&mode_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_mode");
            /* collective on a communicator still deferred: every rank asks */
            const int mode = mode_fn ? mode_fn(MPI_COMM_WORLD) : -1;
            /* flat mode: every rank waits inside numacoll (hierarchical: a rank alone on
             * its pseudo-node waits in the MPI library's own barrier instead) */
            if (g_rank != 0 && mode == 1)
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

void test_noop(int iters)
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
int count_shm(void)
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

void test_churn(int n)
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

int err_class(int rc)
{
    int c = rc;
    MPI_Error_class(rc, &c);
    return c;
}

void test_errors(void)
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
        /* a reduce into the first rank of the low half (MPI_ROOT there, MPI_PROC_NULL at the
         * rest of its group; the high half names its remote rank 0): the MPI's, whole */
        int hr = 0, in = g_rank + 1, sum = -1, want = 0;
        MPI_Comm_rank(half, &hr);
        for (int r = g_size / 2; r < g_size; r++)
            want += r + 1;
        int root = !color ? 0 : hr == 0 ? MPI_ROOT : MPI_PROC_NULL;
        rc = MPI_Reduce(&in, &sum, 1, MPI_INT, MPI_SUM, root, inter);
        CHECK(rc == MPI_SUCCESS && (root != MPI_ROOT || sum == want),
              "reduce on an intercommunicator: rc %d, sum %d, expected %d", rc, sum, want);
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

void test_threads(int provided)
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


/* A process that never calls MPI_Init has no MPI_COMM_WORLD or MPI_COMM_SELF (MPICH aborts
 * on them); the layer must work on a communicator made from a session's group. Returns the
 * failed checks summed over the ranks. */
int test_sessions(void)
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
        if (!strcmp(mode, "reduceenv")) setenv("NUMACOLL_MPI_REDUCE", "0", 1);
        if (!strcmp(mode, "gatherenv")) setenv("NUMACOLL_MPI_GATHER", "0", 1);
        if (!strcmp(mode, "moveenv")) setenv("NUMACOLL_MOVE_CMA_MIN", "4K", 1);
        if (!strcmp(mode, "lazyenv")) setenv("NUMACOLL_MPI_SETUP_AFTER", "4", 1);
        if (!strcmp(mode, "barrierenv")) setenv("NUMACOLL_BARRIER", "dissemination", 1);
    }
    /* slurmenv LIST NODEID: the environment srun gives its tasks (SLURM_STEP_TASKS_PER_NODE,
     * SLURM_NODEID; "-" leaves one unset) instead of the variables of the launcher that
     * started the job, then barrier's communicators */
    if (!strcmp(mode, "slurmenv")) {
        unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        unsetenv("MPI_LOCALNRANKS");
        unsetenv("MV2_COMM_WORLD_LOCAL_SIZE");
        unsetenv("PALS_LOCAL_SIZE");
        unsetenv("PMI_LOCAL_SIZE");
        const char *names[2] = {"SLURM_STEP_TASKS_PER_NODE", "SLURM_NODEID"};
        for (int i = 0; i < 2; i++) {
            if (argc > 2 + i && strcmp(argv[2 + i], "-"))
                setenv(names[i], argv[2 + i], 1);
            else
                unsetenv(names[i]);
        }
    }

    if (!strcmp(mode, "barrier"))
        test_barrier(arg > 0 ? arg : 200);
    else if (!strcmp(mode, "slurmenv"))
        test_barrier(10);
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
    else if (!strcmp(mode, "shmmax"))
        test_shmmax(arg);
    else if (!strcmp(mode, "commcost"))
        test_commcost(arg, argc > 3 ? atoi(argv[3]) : 0);
    else if (!strcmp(mode, "exhaust"))
        test_exhaust();
    else if (!strcmp(mode, "nospace"))
        test_nospace();
    else if (!strcmp(mode, "lazy") || !strcmp(mode, "lazyenv"))
        test_lazy();
    else if (!strcmp(mode, "moveenv"))
        test_move_env();
    else if (!strcmp(mode, "soak"))
        test_soak(arg > 0 ? arg : 2000);
    else if (!strcmp(mode, "bcastenv") || !strcmp(mode, "disableenv") || !strcmp(mode, "badenv") ||
             !strcmp(mode, "checkenv") || !strcmp(mode, "reduceenv") ||
             !strcmp(mode, "gatherenv") || !strcmp(mode, "barrierenv"))
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
