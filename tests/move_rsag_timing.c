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
enum { ROUNDS = 5, ITERS = 10 };
static const size_t sizes[] = {65536, 262144, 1 << 20, 4 << 20, 16 << 20};
enum { NS = 5 };
typedef struct { double us[NS][3][ROUNDS * ITERS]; } res_t;
static int worker(nc_forkctx_t *c) {
  res_t *res = c->arg; const int P = c->size;
  size_t maxn = sizes[NS-1] / 8;
  double *in = malloc(maxn * 8), *out = malloc(maxn * 8), *tmp = malloc(maxn * 8), *sl = malloc(maxn * 8);
  for (size_t i = 0; i < maxn; i++) in[i] = c->rank + i * 0.5, out[i] = 0, tmp[i] = 0, sl[i] = 0;
  numacoll_allgather(c->team, in, out, 64);
  numacoll_allreduce(c->team, in, out, 1024, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM);
  nc_move_team_t *s = c->team->move; s->mode = MV_MODE_CMA;
  for (int z = 0; z < NS; z++) {
    size_t n = sizes[z] / 8, per = n / P;
    for (int r = 0; r < ROUNDS; r++) for (int q = 0; q < 2; q++) {
      int mode = (q + r) % 2;
      for (int it = 0; it < ITERS; it++) {
        numacoll_barrier(c->team);
        uint64_t t0 = nc_now_ns();
        if (mode == 0) {
          if (numacoll_reduce_with(c->team, in, out, n, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, -1, "rsag")) return 2;
        } else {
          /* member m gets every member's slice m (alltoall), folds in rank order, allgathers */
          if (numacoll_alltoall(c->team, in, tmp, per * 8)) return 3;
          for (size_t i = 0; i < per; i++) { double a = tmp[i]; for (int m = 1; m < P; m++) a += tmp[m * per + i]; sl[i] = a; }
          if (numacoll_allgather(c->team, sl, out, per * 8)) return 4;
        }
        uint64_t ns = nc_now_ns() - t0;
        if (c->rank == 0) res->us[z][mode][r * ITERS + it] = ns / 1e3;
      }
    }
  }
  return 0;
}
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
  int P = atoi(argv[1]);
  res_t *res = mmap(NULL, sizeof *res, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0);
  nc_forkresult_t fr;
  if (nc_forkrun(P, NC_FORK_BIND, worker, res, 0, 600, &fr)) return 1;
  printf("allreduce of doubles, P=%d, median us: rsag / alltoall(cma)+fold+allgather(cma)\n", P);
  for (int z = 0; z < NS; z++) {
    double m[2];
    for (int q = 0; q < 2; q++) { qsort(res->us[z][q], ROUNDS*ITERS, sizeof(double), cmp); m[q] = res->us[z][q][ROUNDS*ITERS/2]; }
    printf("%10zu %10.1f %10.1f  %.2f\n", sizes[z], m[0], m[1], m[1] / m[0]);
  }
  return 0;
}
