/*
 * Example of the C API (no MPI): fork P processes, make them a numacoll team through the
 * ready-made fork OOB allgather, broadcast messages of several sizes from every root in
 * turn, check every byte, and show how an error reads.
 *
 *     cc -o bcast_fork bcast_fork.c $(pkg-config --cflags --libs numacoll)
 *     ./bcast_fork [P] [rounds]            (defaults: 4 processes, 20 rounds)
 *
 * or, in a CMake project: find_package(numacoll) and link numacoll::numacoll.
 */
#define _GNU_SOURCE 1
#include <numacoll/fork_oob.h>
#include <numacoll/numacoll.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const size_t sizes[] = {1, 100, 4096, 65536, 1 << 20}; /* bytes */
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static int fail(numacoll_team_t *team, int rank, const char *what, int rc)
{
    fprintf(stderr, "rank %d: %s: %s: %s\n", rank, what, numacoll_status_name(rc),
            numacoll_last_error());
    if (team) numacoll_team_destroy(team);
    return 1;
}

static int worker(int rank, int P, int rounds, numacoll_fork_oob_t *oob)
{
    numacoll_fork_oob_set_rank(oob, rank);
    numacoll_team_params_t params = {.rank = rank,
                                     .size = P,
                                     .allgather = numacoll_fork_oob_allgather,
                                     .oob_ctx = oob,
                                     .name = "bcast-example"};
    numacoll_team_t *team;
    int rc = numacoll_team_create(&params, &team); /* collective */
    if (rc != NUMACOLL_OK) return fail(NULL, rank, "numacoll_team_create", rc);
    unsigned char *buf = malloc(sizes[NSIZES - 1]);
    if (!buf) return fail(team, rank, "malloc", NUMACOLL_ERR_NOMEM);
    long calls = 0;
    for (int r = 0; r < rounds; r++)
        for (int s = 0; s < NSIZES; s++) {
            int root = (int)(calls % P);
            unsigned char key = (unsigned char)(calls * 13 + 5);
            memset(buf, rank == root ? key : 0, sizes[s]);
            if ((rc = numacoll_bcast(team, buf, sizes[s], root)) != NUMACOLL_OK)
                return fail(team, rank, "numacoll_bcast", rc);
            for (size_t b = 0; b < sizes[s]; b++)
                if (buf[b] != key) {
                    fprintf(stderr, "rank %d: byte %zu of %zu from root %d is wrong\n", rank, b,
                            sizes[s], root);
                    return 1;
                }
            calls++;
        }
    if ((rc = numacoll_barrier(team)) != NUMACOLL_OK)
        return fail(team, rank, "numacoll_barrier", rc);
    if (rank == 0) {
        /* an invalid call fails at once, with a status and a message saying what is allowed */
        rc = numacoll_bcast(team, buf, 8, P);
        printf("a broadcast from root %d returns %s: %s\n", P, numacoll_status_name(rc),
               numacoll_last_error());
        char desc[1024];
        numacoll_team_describe(team, desc, sizeof desc);
        printf("%s\n", desc);
        fflush(stdout);
    }
    free(buf);
    numacoll_team_destroy(team);
    return 0;
}

int main(int argc, char **argv)
{
    int P = argc > 1 ? atoi(argv[1]) : 4;
    int rounds = argc > 2 ? atoi(argv[2]) : 20;
    if (P < 1 || P > 256 || rounds < 1) {
        fprintf(stderr, "usage: %s [P 1..256] [rounds >= 1]\n", argv[0]);
        return 2;
    }
    numacoll_fork_oob_t *oob = numacoll_fork_oob_create(P);
    if (!oob) {
        fprintf(stderr, "numacoll_fork_oob_create: %s\n", numacoll_last_error());
        return 1;
    }
    fflush(stdout);
    for (int r = 0; r < P; r++)
        if (fork() == 0) _exit(worker(r, P, rounds, oob));
    int failed = 0, status;
    while (wait(&status) > 0)
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
    numacoll_fork_oob_destroy(oob);
    if (failed) {
        printf("%d of %d processes failed\n", failed, P);
        return 1;
    }
    printf("all %d processes received %d broadcasts intact (%d rounds of %d sizes, "
           "1 B - 1 MiB, every root in turn)\n",
           P, rounds * NSIZES, rounds, NSIZES);
    return 0;
}
