#define _GNU_SOURCE 1
#include "forkrun.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int nc_forkrun(int P, int flags, nc_forkrun_fn fn, void *arg, size_t shared_bytes, double timeout_s,
               nc_forkresult_t *res)
{
    nc_forkresult_t local;
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    numacoll_fork_oob_t *oob = numacoll_fork_oob_create(P);
    if (!oob) {
        fprintf(stderr, "forkrun: %s\n", numacoll_last_error());
        return P;
    }
    void *shared = NULL;
    if (shared_bytes) {
        shared =
            mmap(NULL, shared_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shared == MAP_FAILED) return P;
    }
    pid_t *pids = calloc((size_t)P, sizeof *pids);
    long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < P; r++) {
        pid_t pid = fork();
        if (pid == 0) {
            if (flags & NC_FORK_BIND) {
                cpu_set_t s;
                CPU_ZERO(&s);
                CPU_SET((int)(r % ncpus), &s);
                sched_setaffinity(0, sizeof s, &s);
            }
            numacoll_fork_oob_set_rank(oob, r);
            nc_forkctx_t ctx = {.rank = r, .size = P, .oob = oob, .shared = shared, .arg = arg};
            if (!(flags & NC_FORK_NO_TEAM)) {
                numacoll_team_params_t p = {.rank = r,
                                            .size = P,
                                            .allgather = numacoll_fork_oob_allgather,
                                            .oob_ctx = oob,
                                            .name = "forkrun"};
                int rc = numacoll_team_create(&p, &ctx.team);
                if (rc) {
                    fprintf(stderr, "rank %d: team creation failed: %s (%s)\n", r,
                            numacoll_status_name(rc), numacoll_last_error());
                    _exit(3);
                }
            }
            int rc = fn(&ctx);
            if (rc) fprintf(stderr, "rank %d of %d failed with %d\n", r, P, rc);
            numacoll_team_destroy(ctx.team);
            fflush(stdout);
            fflush(stderr);
            _exit(rc ? (rc > 0 && rc < 100 ? rc : 1) : 0);
        }
        pids[r] = pid;
    }
    double deadline = now_s() + timeout_s;
    int left = P;
    while (left > 0) {
        int status;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p > 0) {
            for (int r = 0; r < P; r++) {
                if (pids[r] != p) continue;
                int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                if (r < 64) res->exit_code[r] = code;
                if (code) res->failed++;
                pids[r] = 0;
                left--;
            }
            continue;
        }
        if (now_s() > deadline) {
            res->timed_out = 1;
            for (int r = 0; r < P; r++)
                if (pids[r]) {
                    kill(pids[r], SIGKILL);
                    waitpid(pids[r], NULL, 0);
                    fprintf(stderr, "forkrun: rank %d did not finish within %.0f s, killed\n", r,
                            timeout_s);
                    if (r < 64) res->exit_code[r] = 128 + SIGKILL;
                    res->failed++;
                    pids[r] = 0;
                    left--;
                }
            break;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    free(pids);
    if (shared) munmap(shared, shared_bytes);
    numacoll_fork_oob_destroy(oob);
    return res->failed;
}

int nc_count_shm_files(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, "numacoll", 8) == 0) n++;
    closedir(d);
    return n;
}

int nc_shm_baseline(void)
{
    int best = nc_count_shm_files();
    for (int i = 0; i < 5 && best > 0; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        int n = nc_count_shm_files();
        if (n < best) best = n;
    }
    return best;
}

int nc_shm_settle(int baseline)
{
    int n = nc_count_shm_files();
    for (int i = 0; i < 100 && n > baseline; i++) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        n = nc_count_shm_files();
    }
    return n;
}

/* the rank list that follows @p prefix in @p msg ("a, b (exited), c"): does it hold r? */
/* does the list of ranks after @p prefix at @p p have @p r? */
static int list_at_has(const char *p, int r)
{
    for (;;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) return 0;
        if (v == r) return 1;
        p = end;
        if (strncmp(p, " (exited)", 9) == 0) p += 9;
        if (strncmp(p, ", ", 2) != 0) return 0;
        p += 2;
    }
}

/* does any list of ranks after an occurrence of @p prefix in @p msg have @p r? */
static int list_has(const char *msg, const char *prefix, int r)
{
    for (const char *p = strstr(msg, prefix); p; p = strstr(p + 1, prefix))
        if (list_at_has(p + strlen(prefix), r)) return 1;
    return 0;
}

int nc_msg_names_rank(const char *msg, int r)
{
    return list_has(msg, "member(s) ", r) || list_has(msg, "did not arrive: ", r);
}

size_t nc_pages_in_memory(const void *addr, size_t bytes)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE), n = (bytes + ps - 1) / ps, in = 0;
    unsigned char *vec = malloc(n ? n : 1);
    if (!vec || mincore((void *)addr, bytes, vec) != 0) {
        free(vec);
        return (size_t)-1;
    }
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    free(vec);
    return in;
}

int nc_msg_names_late(const char *msg, int r)
{
    return list_has(msg, "did not arrive: ", r);
}

void nc_random_delay(unsigned *seed, unsigned max_ns)
{
    unsigned x = *seed;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *seed = x;
    if (!max_ns) return;
    unsigned ns = x % max_ns;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((unsigned)((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec)) < ns);
}

long nc_meminfo_kb(const char *name)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(name);
    while (v < 0 && fgets(line, sizeof line, f))
        if (!strncmp(line, name, n) && line[n] == ':') v = atol(line + n + 1);
    fclose(f);
    return v;
}
