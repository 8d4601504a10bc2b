/*
 * The soak's alltoall steps (mpi_coll_test soak): MPI_Alltoall or MPI_Alltoallv in bytes on
 * one of the soak's communicators, in place or not, blocks of up to 64 KiB a pair (the
 * v-form: uneven and symmetric, empty where the two ranks' sum is a multiple of 3, gaps of
 * 5 bytes between the blocks, which are laid out in reverse rank order). The block from
 * member o to member d is a hash of (step, o's and d's MPI_COMM_WORLD ranks, byte), so
 * every rank checks every byte it receives exactly, and that the gaps and the canary bytes
 * past the blocks kept their value.
 */
#ifndef NC_SOAK_ALLTOALL_H
#define NC_SOAK_ALLTOALL_H

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test_util.h"

enum { SOAK_A2A_GAP = 5, SOAK_A2A_CANARY = 64 };

static unsigned char soak_a2a_byte(int step, int from, int to, size_t i)
{
    uint64_t z = ((uint64_t)step << 40) ^ ((uint64_t)from << 28) ^ ((uint64_t)to << 20) ^ i;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    return (unsigned char)(z ^ (z >> 29));
}

/* bytes between members a and b (symmetric: an in-place alltoallv needs it) */
static int soak_a2a_count(int is_v, size_t bytes, int a, int b)
{
    if (!is_v) return (int)bytes;
    if ((a + b) % 3 == 0) return 0;
    return (int)((bytes + 977 * (size_t)(a + b)) % 65536);
}

/*
 * One step on @p cm (rank @p r of @p p; @p members: their MPI_COMM_WORLD ranks in rank
 * order), alltoall or alltoallv and in place from @p rnd, blocks from @p bytes (under
 * 64 KiB); @p buf holds at least 8 MiB (p <= 32). Returns 1 if this rank received
 * something.
 */
static int soak_alltoall_step(MPI_Comm cm, const int *members, int r, int p, int step,
                              uint64_t rnd, size_t bytes, unsigned char *buf)
{
    const int is_v = (int)((rnd >> 26) & 1), in_place = (int)((rnd >> 27) & 1);
    int *sc = malloc(4 * (size_t)p * sizeof *sc), *sd = sc + p, *rc = sc + 2 * p, *rd = sc + 3 * p;
    size_t sspan = 0, rspan = 0;
    for (int k = 0; k < p; k++) {
        sc[k] = soak_a2a_count(is_v, bytes, r, k);
        sd[k] = (int)sspan;
        sspan += (size_t)sc[k];
        int m = is_v ? p - 1 - k : k; /* the v-form's receive blocks in reverse rank order */
        rc[m] = soak_a2a_count(is_v, bytes, m, r);
        rd[m] = (int)rspan;
        rspan += (size_t)rc[m] + (is_v ? SOAK_A2A_GAP : 0);
    }
    unsigned char *rb = buf, *sb = buf + ((size_t)4 << 20);
    memset(rb, 0xEE, rspan + SOAK_A2A_CANARY);
    for (int d = 0; d < p; d++) { /* in place: the input in recvbuf's blocks */
        unsigned char *at = in_place ? rb + rd[d] : sb + sd[d];
        for (int i = 0; i < sc[d]; i++)
            at[i] = soak_a2a_byte(step, members[r], members[d], (size_t)i);
    }
    const void *send = in_place ? MPI_IN_PLACE : (const void *)sb;
    int err = is_v ? MPI_Alltoallv(send, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE, cm)
                   : MPI_Alltoall(send, (int)bytes, MPI_BYTE, rb, (int)bytes, MPI_BYTE, cm);
    CHECK(err == MPI_SUCCESS, "step %d: %s rc %d", step, is_v ? "MPI_Alltoallv" : "MPI_Alltoall",
          err);
    size_t bad = 0, outside = 0, got = 0;
    for (int o = 0; o < p; o++) {
        for (int i = 0; i < rc[o]; i++)
            bad += rb[rd[o] + i] != soak_a2a_byte(step, members[o], members[r], (size_t)i);
        for (int j = 0; is_v && j < SOAK_A2A_GAP; j++)
            outside += rb[rd[o] + rc[o] + j] != 0xEE;
        got += (size_t)rc[o];
    }
    for (size_t j = 0; j < SOAK_A2A_CANARY; j++)
        outside += rb[rspan + j] != 0xEE;
    CHECK(bad == 0 && outside == 0,
          "step %d: %s of %zu-byte blocks on a communicator of %d (%s): %zu wrong bytes, %zu "
          "bytes written outside the blocks",
          step, is_v ? "MPI_Alltoallv" : "MPI_Alltoall", bytes, p,
          in_place ? "in place" : "not in place", bad, outside);
    free(sc);
    return got > 0;
}

#endif
