#ifndef NC_BENCH_H
#define NC_BENCH_H

/* Each returns the process exit status. argv[0] is the command name. */
int bench_barrier_main(int argc, char **argv);
int bench_bcast_main(int argc, char **argv);
int bench_mpi_main(int argc, char **argv);

/* Parse option @p opt's value @p s as a whole decimal integer in lo..hi into *out; 0, or
 * -1 after an error on stderr that names the option, the value and the allowed range
 * ("numacoll-bench @p tool: ..."). (main.c) */
int bench_parse_long(const char *tool, const char *opt, const char *s, long lo, long hi, long *out);

#endif
