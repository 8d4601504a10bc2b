#ifndef NC_BENCH_H
#define NC_BENCH_H

/* Each returns the process exit status. argv[0] is the command name. */
int bench_barrier_main(int argc, char **argv);
int bench_bcast_main(int argc, char **argv);
int bench_mpi_main(int argc, char **argv);

#endif
