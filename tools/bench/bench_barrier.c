/*
 * numacoll-bench barrier: fork-based barrier latency benchmark, OSU-style.
 *
 *   numacoll-bench barrier --procs P [--iters N] [--reps R] [--warmup W] [--csv FILE]
 *                          [--algorithms a,b,...] [--synthetic STR --map-by core|numa|socket]
 *   numacoll-bench barrier --logp [--reps R]
 *
 * P processes are forked and bound to the allowed CPUs round-robin (rank r -> r-th allowed
 * CPU mod their number); they form one team. For each repetition, every algorithm runs in
 * turn (A B C C B A ...: interleaved, because the VM's speed drifts over tens of seconds,
 * the order reversed every other repetition so that no row always follows the same one):
 * W warm-up barriers, then N timed barriers; each rank's mean is recorded. Per repetition
 * the figure is the max over ranks of the per-rank mean; reported are the median, min and
 * max over the R repetitions.
 *
 * Every row is timed through numacoll_barrier, with the team's default algorithm set to the
 * row's for its run (the name resolved once, outside the timing): what an application
 * running with NUMACOLL_BARRIER=<name> calls, and one code path for all rows, so that
 * "default (=dissemination)" and "dissemination" run the same instructions
 * (numacoll_barrier_with resolves the name at every call, a cost that shows against a
 * barrier of 50-60 ns at P = 2).
 *
 * Rows: every registered algorithm (or the --algorithms list), "default" (what
 * numacoll_barrier gives with the current environment), and "limit:cacheline-roundtrip":
 * ranks 0 and 1 ping-pong one cache line (spinning as the library's waits do, with their
 * timeout and dead-member checks: bench_wait.h), reported as the round-trip
 * time, the physical reference measured in the same run. When oversubscribed (P > CPUs)
 * and --iters is not given, N is scaled down to keep the run short (R * N >= 10^4 still).
 */
#define _GNU_SOURCE 1
#include "bench.h"
#include "bench_wait.h"
#include "../cli_parse.h"

#include "coll/barrier/barrier.h"
#include "topo/topo.h"

#include <numacoll/fork_oob.h>
#include <numacoll/numacoll.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ALGS 64
#define ROUNDTRIP "limit:cacheline-roundtrip"

enum { K_REGISTRY = 0, K_DEFAULT, K_ROUNDTRIP };

typedef struct balg {
    char name[64];
    int kind;
} balg_t;

typedef struct shared_hdr {
    _Atomic uint64_t pingpong __attribute__((aligned(256))); /* the ping-pong line */
    char pad[256 - sizeof(uint64_t)];
    _Atomic int failed;
    char default_name[64];
    char errmsg[1024];
} shared_hdr_t;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Say how a member process ended when it did not exit with status 0. */
static void report_status(FILE *f, const char *who, int rank, pid_t pid, int st)
{
    if (WIFSIGNALED(st))
        fprintf(f, "%s: rank %d (pid %d) was killed by signal %d (%s)\n", who, rank, (int)pid,
                WTERMSIG(st), strsignal(WTERMSIG(st)));
    else if (WIFEXITED(st))
        fprintf(f, "%s: rank %d (pid %d) exited with status %d\n", who, rank, (int)pid,
                WEXITSTATUS(st));
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: numacoll-bench barrier --procs P [--iters N] [--reps R] [--warmup W]\n"
            "                              [--csv FILE] [--algorithms a,b,...]\n"
            "                              [--synthetic STR --map-by core|numa|socket]\n"
            "  --procs P        processes (1..4096), bound to the allowed CPUs round-robin\n"
            "  --iters N        timed barriers per repetition (default 10000; scaled down\n"
            "                   when oversubscribed, keeping reps * iters >= 10000)\n"
            "  --reps R         repetitions (default 5); median/min/max are over these\n"
            "  --warmup W       untimed barriers before each timed run (default iters/10, at\n"
            "                   least 10)\n"
            "  --csv FILE       also write CSV: collective,algorithm,procs,bytes,\n"
            "                   latency_us_median,latency_us_min,latency_us_max (us)\n"
            "  --algorithms L   comma-separated subset of: registered names, default, %s\n"
            "  --synthetic STR  plan the topology on an hwloc synthetic description\n"
            "  --map-by M       simulated placement with --synthetic: core, numa or socket\n"
            "  --logp           instead: measure the LogP parameters of paper 2 between two\n"
            "                   CPUs (NUMACOLL_BARRIER_LOGP_*, ns) and print the model's\n"
            "                   estimates (ns) and choices\n"
            "  --version        print the version and exit\n"
            "  -h, --help       print this help and exit\n"
            "Table: median_us, min_us, max_us over the repetitions of the slowest rank's mean\n"
            "time per barrier (us); x_roundtrip: median / the cache-line round trip's. Every\n"
            "row runs through numacoll_barrier with the team's default set to its algorithm.\n",
            ROUNDTRIP);
}

static int bad(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "numacoll-bench barrier: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(see numacoll-bench barrier --help)\n");
    return 2;
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    return nc_cli_long("numacoll-bench barrier", opt, s, lo, hi, out);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One round-trip ping-pong of the shared line between ranks 0 and 1: *ns gets the time
 * per round trip (0 on other ranks). The waits follow the library's policy for waits
 * without a team (bench_wait.h): NUMACOLL_WAIT_SPIN spins (oversubscribed too), then yield
 * and naps, NUMACOLL_TIMEOUT per wait, and every 20 ms a look at every member's process,
 * so that a dead member ends the loop. Returns NUMACOLL_OK or the error (message set). */
static int pingpong(shared_hdr_t *h, numacoll_team_t *t, long iters, long warm, uint64_t *base,
                    double *ns)
{
    *ns = 0.0;
    int rank = t->rank;
    if (rank > 1) return NUMACOLL_OK;
    char what[96];
    snprintf(what, sizeof what, "cache-line ping-pong: rank %d waiting for rank %d", rank,
             1 - rank);
    bench_watch_t bw;
    bench_watch_team(&bw, t, what);
    uint64_t b = *base;
    uint64_t t0 = 0;
    for (long i = 0; i < warm + iters; i++) {
        if (i == warm) t0 = now_ns();
        int rc = bench_watch_round(&bw);
        if (rc) return rc;
        uint64_t ping = b + 2 * (uint64_t)i + 1, pong = ping + 1;
        uint64_t want = rank == 0 ? pong : ping;
        if (rank == 0) atomic_store_explicit(&h->pingpong, ping, memory_order_release);
        /* the line is written alternately by rank 0 (ping, odd values) and rank 1 (pong, even
         * values), each store of a round after the load that saw the other's value of the
         * round before; a value >= want means the partner has answered this round (nothing
         * else is published through the line) */
        bench_wait_begin(&bw);
        while (atomic_load_explicit(&h->pingpong, memory_order_acquire) < want)
            if ((rc = bench_wait_step(&bw))) return rc;
        if (rank == 1) atomic_store_explicit(&h->pingpong, pong, memory_order_release);
    }
    uint64_t t1 = now_ns();
    *base = b + 2 * (uint64_t)(warm + iters);
    *ns = (double)(t1 - t0) / (double)iters;
    return NUMACOLL_OK;
}

static int child(int rank, int P, numacoll_fork_oob_t *oob, shared_hdr_t *h, double *res,
                 const balg_t *algs, int nalg, long iters, long reps, long warm)
{
    numacoll_fork_oob_set_rank(oob, rank);
    numacoll_team_params_t p = {.rank = rank,
                                .size = P,
                                .allgather = numacoll_fork_oob_allgather,
                                .oob_ctx = oob,
                                .name = "bench"};
    numacoll_team_t *t;
    int rc = numacoll_team_create(&p, &t);
    if (rc) {
        if (atomic_fetch_add(&h->failed, 1) == 0)
            snprintf(h->errmsg, sizeof h->errmsg, "rank %d: team creation failed: %s", rank,
                     numacoll_last_error());
        return 1;
    }
    if (rank == 0)
        snprintf(h->default_name, sizeof h->default_name, "%s", numacoll_team_barrier_name(t));
    const int def = t->barrier_default; /* the team's own choice (same on every member) */
    uint64_t pp_base = 0;
    for (long r = 0; r < reps; r++) {
        for (int k = 0; k < nalg; k++) {
            int a = r % 2 ? nalg - 1 - k : k; /* every other repetition in reverse */
            double mean;
            if (algs[a].kind == K_ROUNDTRIP) {
                mean = 0.0;
                rc = P < 2 ? NUMACOLL_OK : pingpong(h, t, iters, warm, &pp_base, &mean);
                /* keep the others out of the timed section of the next algorithm */
                if (rc == NUMACOLL_OK) rc = numacoll_barrier_with(t, "sense-reversing-counter");
            } else {
                /* numacoll_barrier with the row's algorithm as the team's default, set on
                 * every member between the same two barriers (a member still leaving the
                 * previous row's last barrier runs that row's algorithm, with its own state):
                 * one path for every row, the name looked up here and not per call */
                int idx = algs[a].kind == K_DEFAULT ? def : nc_barrier_find(algs[a].name);
                if (idx < 0) /* add_alg checked the name against the registry */
                    rc = nc_error(NUMACOLL_ERR_NOT_FOUND, "barrier algorithm '%s' is unknown",
                                  algs[a].name);
                else
                    t->barrier_default = idx, rc = 0;
                for (long i = 0; i < warm && !rc; i++)
                    rc = numacoll_barrier(t);
                uint64_t t0 = now_ns();
                for (long i = 0; i < iters && !rc; i++)
                    rc = numacoll_barrier(t);
                mean = (double)(now_ns() - t0) / (double)iters;
                t->barrier_default = def;
            }
            if (rc) {
                if (atomic_fetch_add(&h->failed, 1) == 0)
                    snprintf(h->errmsg, sizeof h->errmsg, "rank %d, %s: %s", rank, algs[a].name,
                             numacoll_last_error());
                return 1;
            }
            res[((size_t)r * (size_t)nalg + (size_t)a) * (size_t)P + (size_t)rank] = mean;
        }
    }
    numacoll_team_destroy(t);
    return 0;
}

/*
 * --logp: measure the LogP parameters of paper 2 between the first two allowed CPUs and
 * print them with the model's estimates (the NUMACOLL_BARRIER_LOGP_* defaults come from
 * such runs). Two processes; each figure is the median over reps:
 *   o_s  cost of one release store of a flag into a line the sender owns
 *   o_r  cost of one acquire load + check of a flag that is already there
 *   L    one-way latency: half the ping-pong round trip of one line, minus o_s and o_r
 *   g    gap: time per line when a process reads 32 lines just written by the other,
 *        one per page in a scrambled order like the flags of per-rank blocks (no
 *        prefetching; the misses overlap, so this is the spacing of back-to-back receives)
 */
#define LOGP_LINES 32
typedef struct logp_shared {
    _Atomic uint64_t line[4][32]; /* 256-byte lines: 0 ping-pong, 1 done, 2 ack, 3 private */
    double out[4][64];
    _Atomic int32_t pid[2]; /* the two processes (stored by the parent after each fork) */
    char err[2][512];       /* a process's error message, if it failed */
    _Atomic uint64_t data[LOGP_LINES][512] __attribute__((aligned(4096))); /* a page each */
} logp_shared_t;

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Wait until *@p flag >= @p want under the library's wait policy (bench_wait.h). */
static int logp_wait(bench_watch_t *bw, _Atomic uint64_t *flag, uint64_t want)
{
    bench_wait_begin(bw);
    while (atomic_load_explicit(flag, memory_order_acquire) < want) {
        int rc = bench_wait_step(bw);
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

static int logp_child(int rank, logp_shared_t *sh, int reps)
{
    enum { N = 100000 };
    _Atomic uint64_t *pp = &sh->line[0][0], *done = &sh->line[1][0], *ack = &sh->line[2][0];
    uint64_t base = 0, seq = 0;
    char what[64];
    snprintf(what, sizeof what, "LogP probe: rank %d waiting for rank %d", rank, 1 - rank);
    bench_watch_t bw;
    bench_watch_pids(&bw, sh->pid, 2, rank, what);
    int rc = NUMACOLL_OK;
    for (int r = 0; r < reps; r++) {
        if (rank == 0) { /* o_s and o_r on a private line */
            _Atomic uint64_t *mine = &sh->line[3][0];
            uint64_t t0 = now_ns();
            for (int i = 0; i < N; i++)
                atomic_store_explicit(mine, (uint64_t)i, memory_order_release);
            sh->out[0][r] = (double)(now_ns() - t0) / N;
            uint64_t sum = 0;
            t0 = now_ns();
            for (int i = 0; i < N; i++)
                sum += atomic_load_explicit(mine, memory_order_acquire) >= (uint64_t)i;
            sh->out[1][r] = (double)(now_ns() - t0) / N + (double)(sum == 0);
        }
        /* round trip */
        uint64_t t0 = now_ns();
        for (int i = 0; i < N; i++) {
            uint64_t ping = base + 2 * (uint64_t)i + 1, pong = ping + 1;
            if ((rc = bench_watch_round(&bw))) return rc;
            if (rank == 0) atomic_store_explicit(pp, ping, memory_order_release);
            /* written alternately by rank 0 (ping, odd) and rank 1 (pong, even), each after
             * it saw the other's value of the round before: >= the value awaited means the
             * other has answered this round */
            if ((rc = logp_wait(&bw, pp, rank == 0 ? pong : ping))) return rc;
            if (rank == 1) atomic_store_explicit(pp, pong, memory_order_release);
        }
        base += 2 * N;
        if (rank == 0) sh->out[2][r] = (double)(now_ns() - t0) / N;
        /* gap: rank 1 writes the data lines, rank 0 times reading them */
        double best = 1e30;
        for (int k = 0; k < 200; k++) {
            seq++;
            if ((rc = bench_watch_round(&bw))) return rc;
            if (rank == 1) {
                for (int j = 0; j < LOGP_LINES; j++)
                    atomic_store_explicit(&sh->data[j][0], seq, memory_order_relaxed);
                atomic_store_explicit(done, seq, memory_order_release);
                /* ack is written by rank 0 only, once it has read the lines of round seq:
                 * after it, rank 1 may overwrite them */
                if ((rc = logp_wait(&bw, ack, seq))) return rc;
            } else {
                /* done is written by rank 1 only, after it wrote the data lines of round
                 * seq (release): after it, those lines hold seq */
                if ((rc = logp_wait(&bw, done, seq))) return rc;
                uint64_t t1 = now_ns(), ok = 0;
                for (int j = 0; j < LOGP_LINES; j++) /* 7 is odd: a permutation of 0..31 */
                    ok += atomic_load_explicit(&sh->data[(j * 7) % LOGP_LINES][0],
                                               memory_order_relaxed) == seq;
                double per = (double)(now_ns() - t1) / LOGP_LINES;
                if (ok == LOGP_LINES && per < best) best = per;
                atomic_store_explicit(ack, seq, memory_order_release);
            }
        }
        if (rank == 0) sh->out[3][r] = best;
    }
    return NUMACOLL_OK;
}

static int measure_logp(const int *cpus, int ncpu, long reps)
{
    if (ncpu < 2) {
        fprintf(stderr, "numacoll-bench barrier --logp: needs 2 allowed CPUs, have %d\n", ncpu);
        return 2;
    }
    if (reps > 64) reps = 64;
    logp_shared_t *sh =
        mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) return 1;
    memset(sh, 0, sizeof *sh);
    pid_t pid[2];
    for (int r = 0; r < 2; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            cpu_set_t s;
            CPU_ZERO(&s);
            CPU_SET(cpus[r], &s);
            sched_setaffinity(0, sizeof s, &s);
            if (logp_child(r, sh, (int)reps) == NUMACOLL_OK) _exit(0);
            snprintf(sh->err[r], sizeof sh->err[r], "%s", numacoll_last_error());
            _exit(1);
        }
        if (pid[r] < 0) {
            perror("numacoll-bench barrier --logp: fork");
            if (r) kill(pid[0], SIGKILL), waitpid(pid[0], NULL, 0);
            return 1;
        }
        atomic_store_explicit(&sh->pid[r], (int32_t)pid[r], memory_order_relaxed);
    }
    int failed = 0;
    for (int r = 0; r < 2; r++) {
        int st;
        waitpid(pid[r], &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) continue;
        failed = 1;
        if (sh->err[r][0])
            fprintf(stderr, "numacoll-bench barrier --logp: rank %d: %s\n", r, sh->err[r]);
        else
            report_status(stderr, "numacoll-bench barrier --logp", r, pid[r], st);
    }
    if (failed) return 1;
    double o_s = median_of(sh->out[0], (int)reps), o_r = median_of(sh->out[1], (int)reps);
    double rtt = median_of(sh->out[2], (int)reps), g = median_of(sh->out[3], (int)reps);
    nc_logp_t m = {.L = rtt / 2 - o_s - o_r, .o_s = o_s, .o_r = o_r, .g = g};
    if (m.L < 0) m.L = 0;
    printf("# LogP parameters between CPU %d and CPU %d in ns (median of %ld reps)\n", cpus[0],
           cpus[1], reps);
    printf("round trip %.1f ns\nNUMACOLL_BARRIER_LOGP_L=%.1f\nNUMACOLL_BARRIER_LOGP_OS=%.1f\n"
           "NUMACOLL_BARRIER_LOGP_OR=%.1f\nNUMACOLL_BARRIER_LOGP_G=%.1f\n",
           rtt, m.L, m.o_s, m.o_r, m.g);
    int n = (int)nc_cfg_int(NC_CFG_BARRIER_TREE_K);
    printf("%6s %12s %12s %16s  %s\n", "P", "central_ns", "combining_ns", "dissemination_ns",
           "choice");
    for (int P = 2; P <= 128; P *= 2) {
        double est[NC_LOGP_NALG];
        int c = nc_logp_choose(&m, P, n, est);
        printf("%6d %12.0f %12.0f %16.0f  %s\n", P, est[0], est[1], est[2], nc_logp_algorithm(c));
    }
    munmap(sh, sizeof *sh);
    return 0;
}

static int add_alg(balg_t *algs, int *n, const char *name)
{
    int kind;
    if (strcmp(name, "default") == 0)
        kind = K_DEFAULT;
    else if (strcmp(name, ROUNDTRIP) == 0)
        kind = K_ROUNDTRIP;
    else {
        int cnt, ok = 0;
        const numacoll_algorithm_info_t *info = numacoll_barrier_algorithms(&cnt);
        for (int i = 0; i < cnt; i++)
            ok |= strcmp(info[i].name, name) == 0;
        if (!ok) return -1;
        kind = K_REGISTRY;
    }
    for (int i = 0; i < *n; i++)
        if (strcmp(algs[i].name, name) == 0) return 0; /* repeated: once */
    if (*n >= MAX_ALGS) return -2;
    snprintf(algs[*n].name, sizeof algs[*n].name, "%s", name);
    algs[*n].kind = kind;
    (*n)++;
    return 0;
}

int bench_barrier_main(int argc, char **argv)
{
    long P = -1, iters = -1, reps = 5, warm = -1;
    const char *csv = NULL, *list = NULL, *synthetic = NULL, *mapby = NULL;
    int logp = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(o, "--logp")) {
            logp = 1;
            continue;
        }
        int takes = !strcmp(o, "--procs") || !strcmp(o, "--iters") || !strcmp(o, "--reps") ||
                    !strcmp(o, "--warmup") || !strcmp(o, "--csv") || !strcmp(o, "--algorithms") ||
                    !strcmp(o, "--synthetic") || !strcmp(o, "--map-by");
        if (!takes)
            return bad("unknown option '%s'%s; allowed: --procs --iters --reps --warmup --csv "
                       "--algorithms --synthetic --map-by --logp --help",
                       o, "");
        if (!v) return bad("option %s needs a value%s", o, "");
        i++;
        if (!strcmp(o, "--procs")) {
            if (parse_long(o, v, 1, 4096, &P)) return 2;
        } else if (!strcmp(o, "--iters")) {
            if (parse_long(o, v, 1, 1000000000, &iters)) return 2;
        } else if (!strcmp(o, "--reps")) {
            if (parse_long(o, v, 1, 1000, &reps)) return 2;
        } else if (!strcmp(o, "--warmup")) {
            if (parse_long(o, v, 0, 1000000000, &warm)) return 2;
        } else if (!strcmp(o, "--csv"))
            csv = v;
        else if (!strcmp(o, "--algorithms"))
            list = v;
        else if (!strcmp(o, "--synthetic"))
            synthetic = v;
        else
            mapby = v;
    }
    if (P < 0 && !logp) return bad("--procs is required%s%s", "", "");
    if (mapby && strcmp(mapby, "core") && strcmp(mapby, "numa") && strcmp(mapby, "socket"))
        return bad("--map-by '%s' is not valid; allowed: core, numa, socket%s", mapby, "");
    if (mapby && !synthetic) return bad("--map-by needs --synthetic%s%s", "", "");
    if (synthetic) {
        nc_topo_machine_t *mach = NULL;
        if (nc_topo_machine_load(synthetic, &mach) != NUMACOLL_OK)
            return bad("--synthetic: %s%s", numacoll_last_error(), "");
        nc_topo_machine_free(mach);
        setenv("NUMACOLL_TOPO_SYNTHETIC", synthetic, 1);
        if (mapby) setenv("NUMACOLL_TOPO_MAP_BY", mapby, 1);
    }
    if (numacoll_config_reload() != NUMACOLL_OK) {
        fprintf(stderr, "numacoll-bench barrier: %s\n", numacoll_last_error());
        return 2;
    }

    balg_t algs[MAX_ALGS];
    int nalg = 0;
    if (list) {
        char buf[2048];
        snprintf(buf, sizeof buf, "%s", list);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            int rc = add_alg(algs, &nalg, tok);
            if (rc == -1) {
                char allowed[1536] = "";
                int cnt;
                const numacoll_algorithm_info_t *info = numacoll_barrier_algorithms(&cnt);
                for (int i = 0; i < cnt; i++) {
                    strncat(allowed, info[i].name, sizeof allowed - strlen(allowed) - 1);
                    strncat(allowed, ", ", sizeof allowed - strlen(allowed) - 1);
                }
                strncat(allowed, "default, " ROUNDTRIP, sizeof allowed - strlen(allowed) - 1);
                return bad("--algorithms: '%s' is not an algorithm; allowed: %s", tok, allowed);
            }
            if (rc == -2) return bad("--algorithms: too many entries%s%s", "", "");
        }
        if (nalg == 0) return bad("--algorithms: empty list%s%s", "", "");
    } else {
        int cnt;
        const numacoll_algorithm_info_t *info = numacoll_barrier_algorithms(&cnt);
        add_alg(algs, &nalg, ROUNDTRIP);
        for (int i = 0; i < cnt; i++)
            add_alg(algs, &nalg, info[i].name);
        add_alg(algs, &nalg, "default");
    }

    /* CPUs allowed to us, for round-robin binding */
    cpu_set_t allowed;
    int cpus[CPU_SETSIZE], ncpu = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &allowed)) cpus[ncpu++] = c;
    if (ncpu == 0) cpus[ncpu++] = 0;
    if (logp) return measure_logp(cpus, ncpu, reps);
    int oversub = P > ncpu;
    if (iters < 0) {
        iters = 10000;
        if (oversub) { /* keep reps * iters >= 10^4 but the run short */
            iters = 10000L * ncpu / P;
            long min = (10000 + reps - 1) / reps;
            if (iters < min) iters = min;
            if (iters < 100) iters = 100;
        }
    }
    if (warm < 0) warm = iters / 10 > 10 ? iters / 10 : 10;

    size_t nres = (size_t)reps * (size_t)nalg * (size_t)P;
    size_t bytes = sizeof(shared_hdr_t) + nres * sizeof(double);
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        perror("numacoll-bench barrier: mmap");
        return 1;
    }
    shared_hdr_t *h = mem;
    double *res = (double *)((char *)mem + sizeof(shared_hdr_t));
    numacoll_fork_oob_t *oob = numacoll_fork_oob_create((int)P);
    if (!oob) {
        fprintf(stderr, "numacoll-bench barrier: %s\n", numacoll_last_error());
        return 1;
    }

    printf("# numacoll-bench barrier: %ld process(es) on %d CPU(s)%s, %ld reps x %ld iters "
           "(warm-up %ld), %d algorithms interleaved%s%s%s%s\n",
           P, ncpu, oversub ? " (oversubscribed)" : "", reps, iters, warm, nalg,
           synthetic ? ", synthetic \"" : "", synthetic ? synthetic : "",
           synthetic ? "\" map-by " : "", synthetic ? (mapby ? mapby : "core") : "");
    fflush(stdout);
    pid_t *pids = calloc((size_t)P, sizeof *pids);
    for (int r = 0; r < P; r++) {
        pid_t pid = fork();
        if (pid == 0) {
            cpu_set_t s;
            CPU_ZERO(&s);
            CPU_SET(cpus[r % ncpu], &s);
            sched_setaffinity(0, sizeof s, &s);
            _exit(child(r, (int)P, oob, h, res, algs, nalg, iters, reps, warm));
        }
        if (pid < 0) {
            perror("numacoll-bench barrier: fork");
            for (int q = 0; q < r; q++)
                kill(pids[q], SIGKILL);
            return 1;
        }
        pids[r] = pid;
    }
    int bad_exit = 0;
    int *status = calloc((size_t)P, sizeof *status);
    for (int r = 0; r < P; r++) {
        waitpid(pids[r], &status[r], 0);
        /* one failed member makes the others fail too (timeout / dead peer) */
        if (!WIFEXITED(status[r]) || WEXITSTATUS(status[r])) bad_exit++;
    }
    numacoll_fork_oob_destroy(oob);
    if (bad_exit) {
        fprintf(stderr, "numacoll-bench barrier: %d process(es) failed: %s\n", bad_exit,
                h->errmsg[0] ? h->errmsg : "(killed)");
        for (int r = 0; r < P; r++)
            if (WIFSIGNALED(status[r]))
                report_status(stderr, "numacoll-bench barrier", r, pids[r], status[r]);
        free(pids);
        free(status);
        return 1;
    }
    free(pids);
    free(status);

    /* statistics: per rep, max over ranks of the per-rank mean; then median/min/max */
    double med[MAX_ALGS], mn[MAX_ALGS], mx[MAX_ALGS];
    double *v = malloc((size_t)reps * sizeof *v);
    double rt = 0;
    for (int a = 0; a < nalg; a++) {
        for (long r = 0; r < reps; r++) {
            double m = 0;
            for (int k = 0; k < P; k++) {
                double x = res[((size_t)r * (size_t)nalg + (size_t)a) * (size_t)P + (size_t)k];
                if (x > m) m = x;
            }
            v[r] = m / 1000.0; /* us */
        }
        qsort(v, (size_t)reps, sizeof *v, cmp_double);
        med[a] = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
        mn[a] = v[0];
        mx[a] = v[reps - 1];
        if (algs[a].kind == K_ROUNDTRIP) rt = med[a];
    }
    free(v);

    printf("# every row: numacoll_barrier with the team's default set to that algorithm (the name "
           "resolved once, outside the timing); default: the team's own choice; time per barrier "
           "in us, the slowest rank's mean\n");
    printf("%-36s %12s %12s %12s %10s\n", "algorithm", "median_us", "min_us", "max_us",
           "x_roundtrip");
    for (int a = 0; a < nalg; a++) {
        char label[128];
        if (algs[a].kind == K_DEFAULT)
            snprintf(label, sizeof label, "default (=%s)", h->default_name);
        else
            snprintf(label, sizeof label, "%s", algs[a].name);
        if (algs[a].kind == K_ROUNDTRIP && P < 2) {
            printf("%-36s %12s %12s %12s %10s\n", label, "n/a", "n/a", "n/a", "(P<2)");
            continue;
        }
        char ratio[32] = "-";
        if (rt > 0) snprintf(ratio, sizeof ratio, "%.2f", med[a] / rt);
        printf("%-36s %12.3f %12.3f %12.3f %10s\n", label, med[a], mn[a], mx[a], ratio);
    }
    if (csv) {
        FILE *f = fopen(csv, "w");
        if (!f) {
            fprintf(stderr, "numacoll-bench barrier: cannot write --csv '%s': %s\n", csv,
                    strerror(errno));
            return 1;
        }
        fprintf(f, "collective,algorithm,procs,bytes,latency_us_median,latency_us_min,"
                   "latency_us_max\n");
        for (int a = 0; a < nalg; a++) {
            if (algs[a].kind == K_ROUNDTRIP && P < 2) continue;
            fprintf(f, "barrier,%s,%ld,0,%.4f,%.4f,%.4f\n", algs[a].name, P, med[a], mn[a], mx[a]);
        }
        fclose(f);
        printf("# CSV written to %s\n", csv);
    }
    munmap(mem, bytes);
    return 0;
}
