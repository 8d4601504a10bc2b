/*
 * move_rsag_timing P: would the reductions' large-message algorithm (rsag, two copies of
 * every byte through shared slots) gain from single copy? It times, interleaved, median of
 * 50 calls each started after a barrier (member 0's time), an allreduce (sum of doubles)
 * with "rsag" against the same allreduce composed of single copies: an alltoall of the n/P
 * slices (NUMACOLL_MOVE=cma), the fold of each member's slice in rank order, an allgather
 * of the folded slices (cma). The composition pays two calls' synchronisation and no
 * pipelining, so it bounds what a single-copy rsag could gain from below only roughly.
 * Not a test (docs/tuning-notes.md has the numbers).
 */
#include "coll/move/move_internal.h"
#include "forkrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { ROUNDS = 5, ITERS = 10, NS = 5 };
static const size_t sizes[NS] = {65536, 262144, 1 << 20, 4 << 20, 16 << 20};

typedef struct result {
    double us[NS][2][ROUNDS * ITERS];
} result_t;

/* one allreduce of @p n doubles: rsag (@p mode 0) or composed of single copies (1) */
static int one(nc_forkctx_t *c, int mode, size_t n, double *in, double *out, double *tmp,
               double *slice)
{
    const int P = c->size;
    const size_t per = n / (size_t)P;
    if (mode == 0)
        return numacoll_reduce_with(c->team, in, out, n, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, -1,
                                    "rsag");
    /* member m gets every member's slice m (alltoall), folds them in rank order, and
     * everybody gets every folded slice (allgather) */
    int rc = numacoll_alltoall(c->team, in, tmp, per * sizeof(double));
    for (size_t i = 0; rc == NUMACOLL_OK && i < per; i++) {
        double a = tmp[i];
        for (int m = 1; m < P; m++)
            a += tmp[(size_t)m * per + i];
        slice[i] = a;
    }
    return rc ? rc : numacoll_allgather(c->team, slice, out, per * sizeof(double));
}

static int worker(nc_forkctx_t *c)
{
    result_t *res = c->arg;
    const size_t maxn = sizes[NS - 1] / sizeof(double);
    double *in = malloc(maxn * sizeof *in), *out = malloc(maxn * sizeof *out);
    double *tmp = malloc(maxn * sizeof *tmp), *slice = malloc(maxn * sizeof *slice);
    if (!in || !out || !tmp || !slice) return 1;
    for (size_t i = 0; i < maxn; i++)
        in[i] = c->rank + (double)i * 0.5, out[i] = tmp[i] = slice[i] = 0;
    /* set-up of both states; then single copy for every block */
    if (numacoll_allgather(c->team, in, out, 64) ||
        numacoll_allreduce(c->team, in, out, 1024, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM))
        return 2;
    c->team->move->mode = MV_MODE_CMA;
    for (int z = 0; z < NS; z++)
        for (int r = 0; r < ROUNDS; r++)
            for (int q = 0; q < 2; q++) {
                int mode = (q + r) % 2;
                for (int it = 0; it < ITERS; it++) {
                    numacoll_barrier(c->team);
                    uint64_t t0 = nc_now_ns();
                    if (one(c, mode, sizes[z] / sizeof(double), in, out, tmp, slice)) {
                        fprintf(stderr, "rank %d: %s\n", c->rank, numacoll_last_error());
                        return 3;
                    }
                    double us = (double)(nc_now_ns() - t0) / 1e3;
                    if (c->rank == 0) res->us[z][mode][r * ITERS + it] = us;
                }
            }
    free(in), free(out), free(tmp), free(slice);
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
    if (P < 2 || P > 16) return 2;
    result_t *res = mmap(NULL, sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                         -1, 0);
    if (res == MAP_FAILED) return 1;
    nc_forkresult_t fr;
    if (nc_forkrun(P, NC_FORK_BIND, worker, res, 0, 600, &fr)) return 1;
    printf("allreduce of doubles, P=%d, median us of %d calls: rsag, composed of single "
           "copies, ratio\n", P, ROUNDS * ITERS);
    for (int z = 0; z < NS; z++) {
        double m[2];
        for (int q = 0; q < 2; q++) {
            qsort(res->us[z][q], ROUNDS * ITERS, sizeof(double), cmp);
            m[q] = res->us[z][q][ROUNDS * ITERS / 2];
        }
        printf("%10zu %10.1f %10.1f  %.2f\n", sizes[z], m[0], m[1], m[1] / m[0]);
    }
    return 0;
}
