/* The help of numacoll-bench --mpi: printed by the front end (tools/bench/bench_mpi.c) and by
 * the MPI binaries it runs (numacoll-bench-mpi-<mpi>, tools/bench/mpi/mpibench.c), from this
 * one text. Header-only: they are separate programs. */
#ifndef NC_BENCH_MPI_HELP_H
#define NC_BENCH_MPI_HELP_H

#include <stdio.h>

static inline void nc_bench_mpi_help(FILE *f)
{
    fprintf(f,
            "usage: numacoll-bench --mpi [--impl openmpi|mpich] barrier|bcast|allreduce|reduce|\n"
            "         reduce_scatter_block|scan\n"
            "         [--csv FILE] [--csv-slowest FILE] [--iters N] [--reps R]\n"
            "         [--target-ms MS] [--min-bytes B] [--max-bytes B] [--variants A,B,...]\n"
            "         [--native-label NAME] [--root-shift] [--root R] [--quiet]\n"
            "MPI_Barrier / MPI_Bcast / MPI_Allreduce / MPI_Reduce / MPI_Reduce_scatter_block /\n"
            "MPI_Scan (MPI_DOUBLE, MPI_SUM; reduce_scatter_block's size: each rank's block) under\n"
            "numacoll against the MPI's own collectives, the variants interleaved in every\n"
            "repetition. Run it under a launcher, e.g.\n"
            "  mpirun -np 2 numacoll-bench --mpi bcast      (or mpiexec.mpich -n 2 ...)\n"
            "(numacoll-bench-mpi-<mpi>, linked with libnumacoll_mpi, does the work; no\n"
            "numacoll-run needed). Times in microseconds (us), sizes in bytes.\n"
            "  --impl M          the MPI binary to run: openmpi or mpich (default: recognised\n"
            "                    from the launcher's environment); must come first\n"
            "  --csv FILE        append rows collective,algorithm,procs,bytes,\n"
            "                    latency_us_median,latency_us_min,latency_us_max,mpi (barrier:\n"
            "                    the slowest rank's mean per call; bcast: the mean over the\n"
            "                    ranks, OSU's Avg Latency)\n"
            "  --csv-slowest FILE  (bcast) the same rows from the slowest rank's mean\n"
            "  --iters N         at most N calls per run, 1..1000000000 (default 2000)\n"
            "  --reps R          runs per variant and size, interleaved, 1..1000 (default 11);\n"
            "                    median, min and max are over these\n"
            "  --target-ms MS    calls per run scaled so that a run lasts about MS\n"
            "                    milliseconds, 0 < MS <= 60000 (default 20)\n"
            "  --min-bytes B     smallest message, a size like 64, 4K, 16M (bcast: default 1;\n"
            "                    allreduce, reduce: a multiple of 8, default 8)\n"
            "  --max-bytes B     largest message, at most 1G (default 4M); sizes double\n"
            "  --variants L      only the comma-separated variants L; an unknown name is an\n"
            "                    error listing the allowed ones. Both: native (the MPI's own\n"
            "                    call), default (numacoll's MPI call), native-sm (Open MPI's\n"
            "                    coll/sm), core (numacoll on the communicator's team, without\n"
            "                    the MPI wrapper). barrier: every registered algorithm\n"
            "                    (numacoll-info --algorithms). bcast: tree:kary, tree:knomial,\n"
            "                    tree:flat, tree:chain, tree:topo, cma, copy:plain,\n"
            "                    copy:stream-root, copy:stream-recv, copy:stream (the names of\n"
            "                    numacoll-bench bcast), demote:on|off, prefetch:on|off, and the\n"
            "                    references limit:memcpy, limit:signal, limit:inline (up to\n"
            "                    1 KiB), limit:xcore, limit:pipe (np >= 2)\n"
            "                    allreduce, reduce: every reduction algorithm (flat, rsag,\n"
            "                    hier: numacoll-info --algorithms), core, limit:inline (up to\n"
            "                    1 KiB, np <= CPUs), limit:fold\n"
            "                    reduce_scatter_block, scan: core, limit:fold (np blocks, or\n"
            "                    2 messages, folded out of memory)\n"
            "                    Default: native, default, native-sm, limit:memcpy, and with\n"
            "                    np <= CPUs limit:signal and limit:inline (bcast); native,\n"
            "                    default, native-sm and every algorithm (barrier); native,\n"
            "                    native-sm, default, every algorithm, limit:inline, limit:fold\n"
            "                    (allreduce, reduce)\n"
            "                    The algorithms, core and the bcast variants run on the\n"
            "                    communicator's flat team; a hierarchical communicator (several\n"
            "                    nodes, NUMACOLL_FAKE_NODES) skips them and says why\n"
            "  --native-label NAME  the name of the native rows (default native)\n"
            "  --root R          (reduce) the root, 0..np-1 (default 0)\n"
            "  --root-shift      (bcast) the root of timed call i is i mod np, as IMB's\n"
            "                    -root_shift on (limit:memcpy, limit:xcore, limit:pipe stay on\n"
            "                    rank 0)\n"
            "  --quiet           no table on stdout (CSV only)\n"
            "  --version         print the version and exit\n"
            "  -h, --help        print this help and exit\n"
            "Table columns: coll, algorithm, procs, bytes, then mean_med_us (bcast; barrier:\n"
            "median_us), min_us, max_us, slowest_med_us (the slowest rank's median), iters\n"
            "(calls per run), mpi.\n");
}

#endif
