/*
 * move_timing: the measurement behind NUMACOLL_MOVE_CMA_MIN (docs/tuning-notes.md). Not a
 * test (no assertions; a loaded machine changes the numbers, not the outcome).
 *
 *   move_timing [P [kind]]     kind: allgather (default), gather, scatter, alltoall
 *
 * P forked members (bound to CPU r mod ncpus) run the collective at each block size with
 * the path forced per call (both members switch the team's agreed mode at the same call:
 * copy, then single copy), and the floor: every member memcpy's the bytes it would
 * receive from a buffer the others wrote (cross-core, in shared memory), in the same run.
 * The three are interleaved in rounds (their order rotates); every call starts after a
 * barrier and member 0 times it alone; each figure is the median of all such times (on a
 * loaded machine the median is the undisturbed call, the mean the scheduler's), in
 * microseconds per call.
 */
#include "coll/move/move_internal.h"
#include "forkrun.h"

#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

enum { ROUNDS = 5, ITERS = 20, MAXP = 16 };
static const size_t sizes[] = {1024, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 1 << 20,
                               4 << 20};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };
static const char *kind = "allgather";

typedef struct result {
    double us[NSIZES][3][ROUNDS * ITERS];
} result_t;

static int call(numacoll_team_t *t, const char *sb, char *rb, size_t b)
{
    if (strcmp(kind, "gather") == 0) return numacoll_gather(t, sb, rb, b, 0);
    if (strcmp(kind, "scatter") == 0) return numacoll_scatter(t, sb, rb, b, 0);
    if (strcmp(kind, "alltoall") == 0) return numacoll_alltoall(t, sb, rb, b);
    return numacoll_allgather(t, sb, rb, b);
}

/* bytes member @p me receives in one call */
static size_t received(int me, int P, size_t b)
{
    if (strcmp(kind, "gather") == 0) return me == 0 ? (size_t)(P - 1) * b : 0;
    if (strcmp(kind, "scatter") == 0) return me == 0 ? 0 : b;
    return (size_t)(P - 1) * b;
}

static int worker(nc_forkctx_t *c)
{
    result_t *res = c->arg;
    const int P = c->size, me = c->rank;
    size_t maxb = sizes[NSIZES - 1];
    char *sb = malloc((size_t)P * maxb), *rb = malloc((size_t)P * maxb);
    char *shared = c->shared; /* P x maxb x (P - 1): what each member reads for the floor */
    if (!sb || !rb) return 1;
    memset(sb, me + 1, (size_t)P * maxb);
    memset(rb, 0, (size_t)P * maxb);
    if (call(c->team, sb, rb, 64) != NUMACOLL_OK) return 2; /* set-up */
    nc_move_team_t *s = c->team->move;
    for (int i = 0; i < NSIZES; i++) {
        size_t b = sizes[i];
        size_t want = received(me, P, b);
        for (int r = 0; r < ROUNDS; r++)
            for (int q = 0; q < 3; q++) {
                int mode = (q + r) % 3; /* 0 floor, 1 copy, 2 cma */
                s->mode = mode == 2 ? MV_MODE_CMA : MV_MODE_COPY;
                for (int it = 0; it < ITERS; it++) {
                    /* floor: another core writes what we read, outside the time */
                    if (mode == 0) memset(shared + (size_t)me * maxb, it, b);
                    numacoll_barrier(c->team);
                    uint64_t t0 = nc_now_ns();
                    if (mode == 0) {
                        memcpy(rb, shared + (size_t)((me + 1) % P) * maxb, want);
                    } else if (call(c->team, sb, rb, b) != NUMACOLL_OK) {
                        fprintf(stderr, "rank %d: %s\n", me, numacoll_last_error());
                        return 3;
                    }
                    uint64_t ns = nc_now_ns() - t0;
                    if (me == 0) res->us[i][mode][r * ITERS + it] = (double)ns / 1e3;
                }
            }
    }
    free(sb), free(rb);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int P = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2) kind = argv[2];
    if (P < 2 || P > MAXP) return 2;
    result_t *res = mmap(NULL, sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                         -1, 0);
    if (res == MAP_FAILED) return 1;
    nc_forkresult_t fr;
    /* the floor's buffers: one block of the largest size per member (a member's floor reads
     * its successor's block (P - 1) times over: the bytes it would receive) */
    size_t maxb = sizes[NSIZES - 1];
    int failed = nc_forkrun(P, NC_FORK_BIND, worker, res, (size_t)P * maxb * (size_t)P, 600, &fr);
    if (failed) return 1;
    printf("%s, P=%d, us per call (median of %d calls in %d interleaved rounds; floor: the "
           "memcpy of the bytes a member receives from another core's writes)\n", kind, P,
           ROUNDS * ITERS, ROUNDS);
    printf("%10s %10s %10s %10s %10s %10s\n", "block", "floor", "copy", "cma", "copy/floor",
           "cma/floor");
    for (int i = 0; i < NSIZES; i++) {
        double m[3];
        for (int q = 0; q < 3; q++) {
            qsort(res->us[i][q], ROUNDS * ITERS, sizeof(double), cmp);
            m[q] = res->us[i][q][ROUNDS * ITERS / 2];
        }
        printf("%10zu %10.2f %10.2f %10.2f %10.2f %10.2f\n", sizes[i], m[0], m[1], m[2],
               m[1] / m[0], m[2] / m[0]);
    }
    return 0;
}
