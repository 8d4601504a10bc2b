/*
 * The soak's reduction steps (mpi_coll_test soak): an MPI_Allreduce or MPI_Reduce of
 * int64_t elements with MPI_SUM, MPI_MAX or MPI_BXOR on one of the soak's communicators,
 * in place or not, from a random root. Every member's input is a hash of (step, its
 * MPI_COMM_WORLD rank, element), so every rank that gets the result checks each element
 * exactly against the fold over the members, and the canary bytes past it. Signed: on a
 * hierarchical communicator the MPI library reduces the nodes' results, and MPICH 4.0
 * compares unsigned types as signed in MPI_MAX (pmodels/mpich #6083).
 */
#ifndef NC_SOAK_REDUCE_H
#define NC_SOAK_REDUCE_H

#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "mpi_test_util.h"

enum { SOAK_RED_CANARY = 64 };

static int64_t soak_red_value(int step, int world_rank, size_t i)
{
    uint64_t z = ((uint64_t)step << 40) ^ ((uint64_t)world_rank << 28) ^ (uint64_t)i;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (int64_t)(z ^ (z >> 31));
}

/*
 * One step on @p cm (rank @p r of @p p; @p members: their MPI_COMM_WORLD ranks in rank
 * order): @p bytes / 8 elements, op, in place and root from @p rnd; @p buf holds 2 * bytes
 * + SOAK_RED_CANARY. Returns 1 if this rank got the result (and checked it).
 */
static int soak_reduce_step(MPI_Comm cm, const int *members, int r, int p, int step, uint64_t rnd,
                            size_t bytes, unsigned char *buf)
{
    static const MPI_Op ops[3] = {MPI_SUM, MPI_MAX, MPI_BXOR};
    static const char *const op_names[3] = {"MPI_SUM", "MPI_MAX", "MPI_BXOR"};
    const size_t n = bytes / sizeof(int64_t);
    const int op = (int)(rnd % 3), all = (int)((rnd >> 8) & 1);
    const int root = (int)((rnd >> 16) % (uint64_t)p), gets = all || r == root;
    /* in place at any root: where numacoll leaves a call to MPICH 4.0.2's own MPI_Reduce (a
     * communicator it has not set up yet), it passes a copy, as that crashes on MPI_IN_PLACE
     * at a root other than 0 (pmpi_reduce.c) */
    const int in_place = (int)((rnd >> 9) & 1);
    int64_t *send = (int64_t *)buf, *recv = (int64_t *)(buf + n * sizeof(int64_t));
    int64_t *in = in_place && gets ? recv : send;
    for (size_t i = 0; i < n; i++)
        in[i] = soak_red_value(step, members[r], i);
    memset(recv + n, 0xEE, SOAK_RED_CANARY);
    const void *sb = in_place && gets ? MPI_IN_PLACE : send;
    int rc = all ? MPI_Allreduce(sb, recv, (int)n, MPI_INT64_T, ops[op], cm)
                 : MPI_Reduce(sb, recv, (int)n, MPI_INT64_T, ops[op], root, cm);
    CHECK(rc == MPI_SUCCESS, "step %d: %s rc %d", step, all ? "allreduce" : "reduce", rc);
    if (!gets) return 0;
    size_t bad = 0, over = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t want = soak_red_value(step, members[0], i);
        for (int m = 1; m < p; m++) { /* SUM wraps around, as the MPI libraries' do */
            int64_t v = soak_red_value(step, members[m], i);
            want = op == 0   ? (int64_t)((uint64_t)want + (uint64_t)v)
                   : op == 1 ? (v > want ? v : want)
                             : want ^ v;
        }
        bad += recv[i] != want;
    }
    for (size_t j = 0; j < SOAK_RED_CANARY; j++)
        over += ((unsigned char *)(recv + n))[j] != 0xEE;
    CHECK(bad == 0 && over == 0,
          "step %d: %s %s of %zu int64 on a communicator of %d (%s, root %d): %zu wrong, "
          "%zu canary bytes past the result overwritten",
          step, all ? "MPI_Allreduce" : "MPI_Reduce", op_names[op], n, p,
          in_place ? "in place" : "not in place", all ? -1 : root, bad, over);
    return 1;
}

#endif
