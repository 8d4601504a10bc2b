/*
 * The soak's gather-family steps (mpi_coll_test soak): one of MPI_Allgather,
 * MPI_Allgatherv, MPI_Gather, MPI_Gatherv, MPI_Scatter, MPI_Scatterv in bytes on one of the
 * soak's communicators, in place or not, from a random root, blocks of up to 64 KiB (the
 * v-forms: uneven, every third one empty, gaps of 5 bytes between them). Member m's block
 * is a hash of (step, its MPI_COMM_WORLD rank, byte), so every rank that receives checks
 * every byte exactly, and that the gaps and the canary bytes past the blocks kept their
 * value.
 */
#ifndef NC_SOAK_MOVE_H
#define NC_SOAK_MOVE_H

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test_util.h"

enum { SOAK_MOVE_GAP = 5, SOAK_MOVE_CANARY = 64 };

static unsigned char soak_move_byte(int step, int world_rank, size_t i)
{
    uint64_t z = ((uint64_t)step << 40) ^ ((uint64_t)world_rank << 28) ^ (uint64_t)i;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    return (unsigned char)(z ^ (z >> 29));
}

/*
 * One step on @p cm (rank @p r of @p p; @p members: their MPI_COMM_WORLD ranks in rank
 * order), the collective, root and in place from @p rnd, blocks from @p bytes (under 64 KiB);
 * @p buf holds at least 8 MiB. Returns 1 if this rank received (and checked) something.
 */
static int soak_move_step(MPI_Comm cm, const int *members, int r, int p, int step, uint64_t rnd,
                          size_t bytes, unsigned char *buf)
{
    static const char *const names[6] = {"MPI_Allgather", "MPI_Allgatherv", "MPI_Gather",
                                         "MPI_Gatherv",   "MPI_Scatter",    "MPI_Scatterv"};
    const int coll = (int)(rnd % 6), root = (int)((rnd >> 8) % (uint64_t)p);
    const int in_place = (int)((rnd >> 16) & 1), is_v = coll % 2 == 1;
    const int gathers = coll <= 3, all = coll <= 1, is_root = all || r == root;
    int *cnt = malloc(2 * (size_t)p * sizeof *cnt), *dsp = cnt + p;
    size_t span = 0;
    for (int m = 0; m < p; m++) {
        cnt[m] = is_v ? (m % 3 == 1 ? 0 : (int)((bytes + 977 * (size_t)m) % 65536)) : (int)bytes;
        dsp[m] = (int)span;
        span += (size_t)cnt[m] + (is_v ? SOAK_MOVE_GAP : 0);
    }
    /* many: the P blocks (the receive side of the gathers, the root's send side of the
     * scatters); one: this rank's block, 4 MiB further */
    unsigned char *many = buf, *one = buf + ((size_t)4 << 20);
    const size_t mine = (size_t)cnt[r];
    memset(many, 0xEE, span + SOAK_MOVE_CANARY);
    memset(one, 0xEE, mine + SOAK_MOVE_CANARY);
    if (gathers) {
        unsigned char *own = in_place && is_root ? many + dsp[r] : one;
        for (size_t i = 0; i < mine; i++)
            own[i] = soak_move_byte(step, members[r], i);
    } else if (is_root) {
        for (int m = 0; m < p; m++)
            for (int i = 0; i < cnt[m]; i++)
                many[dsp[m] + i] = soak_move_byte(step, members[m], (size_t)i);
    }
    const void *sb = gathers ? (in_place && is_root ? MPI_IN_PLACE : (void *)one) : many;
    void *rb = gathers ? (void *)many : (in_place && is_root ? MPI_IN_PLACE : (void *)one);
    int n = (int)mine, rc;
    switch (coll) {
    case 0: rc = MPI_Allgather(sb, n, MPI_BYTE, rb, (int)bytes, MPI_BYTE, cm); break;
    case 1: rc = MPI_Allgatherv(sb, n, MPI_BYTE, rb, cnt, dsp, MPI_BYTE, cm); break;
    case 2: rc = MPI_Gather(sb, n, MPI_BYTE, rb, (int)bytes, MPI_BYTE, root, cm); break;
    case 3: rc = MPI_Gatherv(sb, n, MPI_BYTE, rb, cnt, dsp, MPI_BYTE, root, cm); break;
    case 4: rc = MPI_Scatter(sb, (int)bytes, MPI_BYTE, rb, n, MPI_BYTE, root, cm); break;
    default: rc = MPI_Scatterv(sb, cnt, dsp, MPI_BYTE, rb, n, MPI_BYTE, root, cm);
    }
    CHECK(rc == MPI_SUCCESS, "step %d: %s rc %d", step, names[coll], rc);
    size_t bad = 0, outside = 0;
    int got = 0;
    if (gathers && is_root) { /* every block in its place, the gaps and canaries kept */
        got = 1;
        for (int m = 0; m < p; m++) {
            for (int i = 0; i < cnt[m]; i++)
                bad += many[dsp[m] + i] != soak_move_byte(step, members[m], (size_t)i);
            for (int j = 0; is_v && j < SOAK_MOVE_GAP; j++)
                outside += many[dsp[m] + cnt[m] + j] != 0xEE;
        }
        for (size_t j = 0; j < SOAK_MOVE_CANARY; j++)
            outside += many[span + j] != 0xEE;
    } else if (!gathers && !(in_place && is_root)) {
        got = 1;
        for (size_t i = 0; i < mine; i++)
            bad += one[i] != soak_move_byte(step, members[r], i);
        for (size_t j = 0; j < SOAK_MOVE_CANARY; j++)
            outside += one[mine + j] != 0xEE;
    }
    CHECK(bad == 0 && outside == 0,
          "step %d: %s of %zu-byte blocks on a communicator of %d (%s, root %d): %zu wrong "
          "bytes, %zu bytes written outside the blocks",
          step, names[coll], bytes, p, in_place ? "in place" : "not in place", all ? -1 : root,
          bad, outside);
    free(cnt);
    return got;
}

#endif
