/*
 * What the files of the mpi_coll_test program share. mpi_coll_test.c holds main (one mode
 * per launch), the helpers below and the modes barrier, noop, churn, errors, threads and
 * sessions; mpi_coll_bcast.c the broadcasts' data and the message patterns;
 * mpi_coll_mismatch.c members that disagree and a lack of memory; mpi_coll_lazy.c the
 * deferred set-up and per-process settings; mpi_coll_cost.c the memory and time a
 * communicator costs; mpi_coll_soak.c the soak.
 */
#ifndef NC_MPI_COLL_TEST_H
#define NC_MPI_COLL_TEST_H

#include <mpi.h>

#include <stddef.h>

#include "mpi_test_util.h"

/* ---- mpi_coll_test.c ---- */

/* whether the counters must show numacoll executing the calls (NC_EXPECT) */
int expect_numacoll(void);
void sleep_us(long us);
double now(void); /* MPI_Wtime */
typedef int (*barrier_fn)(MPI_Comm);
/* violations of the barrier property over @p iters epochs of @p bar on @p comm */
long epoch_check(MPI_Comm comm, int iters, barrier_fn bar);
/* numacoll's entries in /dev/shm */
int count_shm(void);
/* the MPI error class of @p rc */
int err_class(int rc);
void test_barrier(int iters);
void test_noop(int iters);
void test_churn(int n);
void test_errors(void);
void test_threads(int provided);
int test_sessions(void);

/* ---- mpi_coll_bcast.c ---- */

/* byte @p i of the pattern of @p seed */
unsigned char pattern(long i, int seed);
/* @p n bytes of the pattern of @p key */
void fill(unsigned char *b, size_t n, unsigned key);
/* bytes of @p b that differ from the pattern of @p key */
size_t wrong_bytes(const unsigned char *b, size_t n, unsigned key);
/* the pattern on the root, a different filler elsewhere */
void fill_for(unsigned char *b, size_t n, unsigned key, int is_root);
void test_bcast_sizes(MPI_Comm comm, int iters);
void test_bcast(int iters);
void test_bcastc(void);
void test_bcastbig(void);

/* ---- mpi_coll_mismatch.c ---- */

void test_truncate(void);
void test_check(void);
void test_nospace(void);
void test_exhaust(void);

/* ---- mpi_coll_lazy.c ---- */

void test_lazy(void);
void test_bcast_env(const char *mode);
void test_move_env(void);

/* ---- mpi_coll_cost.c ---- */

void test_commcost(int n, int limit_kib);
void test_shmmax(int n);

/* ---- mpi_coll_soak.c ---- */

void test_soak(int steps);

#endif
