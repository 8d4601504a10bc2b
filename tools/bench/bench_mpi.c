/* Placeholder: the mpi benchmark is being written. */
#include "bench.h"

#include <stdio.h>

int bench_mpi_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "numacoll-bench: the mpi benchmark is not implemented yet\n");
    return 1;
}
