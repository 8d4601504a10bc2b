/* Placeholder: the bcast benchmark is being written. */
#include "bench.h"

#include <stdio.h>

int bench_bcast_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "numacoll-bench: the bcast benchmark is not implemented yet\n");
    return 1;
}
