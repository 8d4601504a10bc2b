/* Placeholder: the barrier benchmark is being written. */
#include "bench.h"

#include <stdio.h>

int bench_barrier_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "numacoll-bench: the barrier benchmark is not implemented yet\n");
    return 1;
}
