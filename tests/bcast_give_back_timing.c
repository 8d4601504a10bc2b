/*
 * bcast_give_back_timing: the measurement behind NUMACOLL_BCAST_GIVE_BACK
 * (docs/tuning-notes.md). Not a test (no assertions; a loaded machine changes the numbers,
 * not the outcome). Public API only, so that it builds against any version of the library.
 *
 *   bcast_give_back_timing [P [bytes]]   (default 2 members, 1 MiB messages)
 *
 * P forked members (bound to CPU r mod ncpus) broadcast from rank 0. Tiny: 20000 calls of
 * 8 bytes per repetition, member 0's time per call (us), median of 7 repetitions. Large:
 * rounds of a warm broadcast of the message (the previous 16 calls were ones too), then
 * NUMACOLL_BCAST_GIVE_BACK small calls (the environment's value, 16 if unset), a barrier,
 * one small call more (every member is past the large one: the root may give its pages
 * back), then the first 6 large broadcasts after them, each timed (a set gets its pages
 * as far as the rotating offsets have reached, so more than the first call pays); every
 * timed call starts after a barrier and member 0 (the root) times it; medians over the
 * rounds, per call.
 */
#include "forkrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { TINY_REPS = 7, TINY_CALLS = 20000, ROUNDS = 41, AFTER = 6 };

typedef struct result {
    double tiny[TINY_REPS], warm[ROUNDS], cold[AFTER][ROUNDS];
} result_t;

static size_t bytes = 1 << 20;
static int small_calls = 16;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int worker(nc_forkctx_t *c)
{
    result_t *res = c->arg;
    const int me = c->rank;
    char *buf = malloc(bytes);
    if (!buf) return 1;
    memset(buf, me + 1, bytes);
    if (numacoll_bcast(c->team, buf, 8, 0) != NUMACOLL_OK) return 2; /* set-up */
    for (int r = 0; r < TINY_REPS; r++) {
        numacoll_barrier(c->team);
        double t0 = now_us();
        for (int i = 0; i < TINY_CALLS; i++)
            if (numacoll_bcast(c->team, buf, 8, 0) != NUMACOLL_OK) return 3;
        if (me == 0) res->tiny[r] = (now_us() - t0) / TINY_CALLS;
    }
    if (numacoll_bcast(c->team, buf, bytes, 0) != NUMACOLL_OK) return 4;
    for (int r = 0; r < ROUNDS; r++) {
        /* the sets' rotating offsets (NUMACOLL_BCAST_ROTATE) move a message through its set
         * from one use to the next, and a set gets its pages as far as the uses reach: 16
         * calls first, so that the timed one finds all of them */
        for (int i = 0; i < 16; i++)
            if (numacoll_bcast(c->team, buf, bytes, 0) != NUMACOLL_OK) return 5;
        numacoll_barrier(c->team);
        double t0 = now_us();
        if (numacoll_bcast(c->team, buf, bytes, 0) != NUMACOLL_OK) return 5;
        if (me == 0) res->warm[r] = now_us() - t0;
        for (int i = 0; i < small_calls; i++)
            if (numacoll_bcast(c->team, buf, 8, 0) != NUMACOLL_OK) return 6;
        numacoll_barrier(c->team);
        if (numacoll_bcast(c->team, buf, 8, 0) != NUMACOLL_OK) return 6;
        for (int k = 0; k < AFTER; k++) {
            numacoll_barrier(c->team);
            t0 = now_us();
            if (numacoll_bcast(c->team, buf, bytes, 0) != NUMACOLL_OK) return 7;
            if (me == 0) res->cold[k][r] = now_us() - t0;
        }
    }
    free(buf);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int P = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2) bytes = (size_t)atol(argv[2]);
    const char *gb = getenv("NUMACOLL_BCAST_GIVE_BACK");
    if (gb && atoi(gb) > 0) small_calls = atoi(gb);
    if (P < 2 || P > 64 || bytes < 64) return 2;
    result_t *res = mmap(NULL, sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                         -1, 0);
    if (res == MAP_FAILED) return 1;
    nc_forkresult_t fr;
    if (nc_forkrun(P, NC_FORK_BIND, worker, res, 0, 600, &fr)) return 1;
    printf("bcast, P=%d, NUMACOLL_BCAST_GIVE_BACK=%s: 8 B %.3f us/call (median of %d x %d); "
           "%zu B warm %.1f us; the calls after %d small ones (medians of %d):",
           P, gb ? gb : "(default)", median(res->tiny, TINY_REPS), TINY_REPS, TINY_CALLS, bytes,
           median(res->warm, ROUNDS), small_calls + 1, ROUNDS);
    for (int k = 0; k < AFTER; k++)
        printf(" %.1f", median(res->cold[k], ROUNDS));
    printf(" us\n");
    return 0;
}
