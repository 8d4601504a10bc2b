/*
 * Example: fork P processes, build a numacoll team through the ready-made fork OOB
 * allgather, run barriers and check that none of them lets a process through early.
 *
 *     barrier_fork [P] [iterations]
 */
#define _GNU_SOURCE 1
#include <numacoll/fork_oob.h>
#include <numacoll/numacoll.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int worker(int rank, int P, int iters, numacoll_fork_oob_t *oob, _Atomic long *epoch)
{
    numacoll_fork_oob_set_rank(oob, rank);
    numacoll_team_params_t params = {.rank = rank,
                                     .size = P,
                                     .allgather = numacoll_fork_oob_allgather,
                                     .oob_ctx = oob,
                                     .name = "example"};
    numacoll_team_t *team;
    int rc = numacoll_team_create(&params, &team);
    if (rc != NUMACOLL_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, numacoll_last_error());
        return 1;
    }
    for (long i = 1; i <= iters; i++) {
        atomic_store(&epoch[rank], i); /* "I reached barrier i" */
        if ((rc = numacoll_barrier(team)) != NUMACOLL_OK) {
            fprintf(stderr, "rank %d: %s\n", rank, numacoll_last_error());
            return 1;
        }
        /* after barrier i every process must have reached it */
        for (int r = 0; r < P; r++)
            if (atomic_load(&epoch[r]) < i) {
                fprintf(stderr, "rank %d left barrier %ld before rank %d arrived\n", rank, i, r);
                return 1;
            }
    }
    if (rank == 0) {
        printf("barrier algorithm: %s\n", numacoll_team_barrier_name(team));
        fflush(stdout);
    }
    numacoll_team_destroy(team);
    return 0;
}

int main(int argc, char **argv)
{
    int P = argc > 1 ? atoi(argv[1]) : 4;
    int iters = argc > 2 ? atoi(argv[2]) : 1000;
    if (P < 1 || iters < 1) {
        fprintf(stderr, "usage: %s [P >= 1] [iterations >= 1]\n", argv[0]);
        return 2;
    }
    numacoll_fork_oob_t *oob = numacoll_fork_oob_create(P);
    _Atomic long *epoch = mmap(NULL, sizeof(long) * (size_t)P, PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!oob || epoch == MAP_FAILED) return 1;
    for (int r = 0; r < P; r++)
        if (fork() == 0) _exit(worker(r, P, iters, oob, epoch));
    int failed = 0, status;
    while (wait(&status) > 0)
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
    if (failed) {
        printf("%d of %d processes failed\n", failed, P);
        return 1;
    }
    printf("all %d processes passed %d barriers\n", P, iters);
    return 0;
}
