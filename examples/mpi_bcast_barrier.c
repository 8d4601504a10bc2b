/*
 * Example: a plain MPI program (no numacoll header, no numacoll library at link time) whose
 * MPI_Bcast and MPI_Barrier go through numacoll when it runs under numacoll-run.
 *
 *     mpicc -O2 -o mpi_bcast_barrier mpi_bcast_barrier.c
 *     numacoll-run mpirun -np 4 ./mpi_bcast_barrier              # Open MPI
 *     numacoll-run mpiexec.mpich -n 4 ./mpi_bcast_barrier        # MPICH
 *     NUMACOLL_VERBOSE=1 numacoll-run mpirun -np 4 ./mpi_bcast_barrier
 *
 * numacoll-run preloads libnumacoll_mpi.so into every rank. With NUMACOLL_VERBOSE=1 each
 * rank prints "numacoll: ..." lines on stderr saying what it chose for each communicator
 * (the barrier algorithm, the broadcast's set-up); without numacoll-run there are none and
 * the program still runs, on the MPI's own collectives.
 *
 * numacoll sets a communicator up only once its calls add up to NUMACOLL_MPI_SETUP_AFTER
 * units (a call is one unit, a broadcast of n bytes 1 + n / 1024), so a short-lived
 * communicator never pays for it: the 1 MiB broadcasts below switch MPI_COMM_WORLD to
 * numacoll at the second call.
 *
 *     mpi_bcast_barrier [bytes] [iterations]      (defaults: 1 MiB, 200)
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long bytes = argc > 1 ? atol(argv[1]) : 1L << 20;
    long iters = argc > 2 ? atol(argv[2]) : 200;
    if (bytes < 1 || bytes > 1L << 30 || iters < 1) {
        if (rank == 0) fprintf(stderr, "usage: %s [bytes 1..2^30] [iterations >= 1]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    unsigned char *buf = malloc((size_t)bytes);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);

    /* broadcasts from rotating roots; every rank checks every byte it received */
    long bad = 0;
    for (long i = 0; i < iters; i++) {
        int root = (int)(i % size);
        unsigned char key = (unsigned char)(i * 7 + 1);
        memset(buf, rank == root ? key : 0, (size_t)bytes);
        MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
        for (long b = 0; b < bytes; b++)
            bad += buf[b] != key;
    }

    /* barriers, timed */
    enum { NBAR = 10000 };
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < NBAR; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    double us = (MPI_Wtime() - t0) / NBAR * 1e6;

    long bad_all = 0;
    MPI_Reduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (bad_all)
            printf("FAILED: %ld wrong bytes received\n", bad_all);
        else
            printf("%d ranks: %ld broadcasts of %ld bytes received intact; "
                   "MPI_Barrier %.3f us per call (rank 0's mean of %d)\n",
                   size, iters, bytes, us, NBAR);
    }
    free(buf);
    MPI_Finalize();
    return bad_all ? 1 : 0;
}
