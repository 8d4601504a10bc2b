/*
 * move_give_back_timing: the measurement behind NUMACOLL_MOVE_GIVE_BACK
 * (docs/tuning-notes.md). Not a test (no assertions; a loaded machine changes the numbers,
 * not the outcome). Public API only, so that it builds against any version of the library.
 *
 *   move_give_back_timing [P [block]]   (default 2 members, 256 KiB blocks)
 *
 * P forked members (bound to CPU r mod ncpus) run allgathers. Tiny: 20000 calls of 8 bytes
 * per repetition, member 0's time per call (us), median of 7 repetitions. Large: rounds of
 * a warm call of the block (the previous call was one too), then NUMACOLL_MOVE_GIVE_BACK
 * small calls (the environment's value; set it to the slots, 16 by default), then the
 * first large call after them (the slots' pages given back, if the library does); every
 * timed call starts after a barrier and member 0 times it; medians over the rounds.
 */
#include "forkrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { TINY_REPS = 7, TINY_CALLS = 20000, ROUNDS = 41 };

typedef struct result {
    double tiny[TINY_REPS], warm[ROUNDS], cold[ROUNDS];
} result_t;

static size_t block = 256 << 10;
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
    const int P = c->size, me = c->rank;
    char *sb = malloc(block), *rb = malloc((size_t)P * block);
    if (!sb || !rb) return 1;
    memset(sb, me + 1, block);
    memset(rb, 0, (size_t)P * block);
    if (numacoll_allgather(c->team, sb, rb, 8) != NUMACOLL_OK) return 2; /* set-up */
    for (int r = 0; r < TINY_REPS; r++) {
        numacoll_barrier(c->team);
        double t0 = now_us();
        for (int i = 0; i < TINY_CALLS; i++)
            if (numacoll_allgather(c->team, sb, rb, 8) != NUMACOLL_OK) return 3;
        if (me == 0) res->tiny[r] = (now_us() - t0) / TINY_CALLS;
    }
    if (numacoll_allgather(c->team, sb, rb, block) != NUMACOLL_OK) return 4;
    for (int r = 0; r < ROUNDS; r++) {
        numacoll_barrier(c->team);
        double t0 = now_us();
        if (numacoll_allgather(c->team, sb, rb, block) != NUMACOLL_OK) return 5;
        if (me == 0) res->warm[r] = now_us() - t0;
        for (int i = 0; i < small_calls; i++)
            if (numacoll_allgather(c->team, sb, rb, 8) != NUMACOLL_OK) return 6;
        numacoll_barrier(c->team);
        t0 = now_us();
        if (numacoll_allgather(c->team, sb, rb, block) != NUMACOLL_OK) return 7;
        if (me == 0) res->cold[r] = now_us() - t0;
    }
    free(sb), free(rb);
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
    if (argc > 2) block = (size_t)atol(argv[2]);
    const char *gb = getenv("NUMACOLL_MOVE_GIVE_BACK");
    if (gb && atoi(gb) > 0) small_calls = atoi(gb);
    if (P < 2 || P > 64 || block < 64) return 2;
    result_t *res = mmap(NULL, sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                         -1, 0);
    if (res == MAP_FAILED) return 1;
    nc_forkresult_t fr;
    if (nc_forkrun(P, NC_FORK_BIND, worker, res, 0, 600, &fr)) return 1;
    printf("allgather, P=%d, NUMACOLL_MOVE_GIVE_BACK=%s: 8 B %.3f us/call (median of %d x %d); "
           "%zu B warm %.1f us, after %d small calls %.1f us (medians of %d)\n",
           P, gb ? gb : "(default)", median(res->tiny, TINY_REPS), TINY_REPS, TINY_CALLS, block,
           median(res->warm, ROUNDS), small_calls, median(res->cold, ROUNDS), ROUNDS);
    return 0;
}
