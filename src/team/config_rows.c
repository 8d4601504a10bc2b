/*
 * The MPI layer's configuration rows (libnumacoll_mpi, src/mpi/). They live in the C library
 * (no dependency on mpi.h), next to the team layer that the MPI layer builds on, so that the
 * library validates them in every process: the preload rejects an invalid value, and
 * numacoll-info lists them. Every object file of the team layer links them (team.c).
 * Help texts: one or two sentences that say what the allowed values mean (config.h);
 * the measurements behind the defaults are in docs/tuning-notes.md.
 */
#include "../core/nc_internal.h"

static const nc_cfg_def_t rows[] = {
    {.id = NC_CFG_DISABLE,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "0",
     .allowed = "0|1",
     .doc = "libnumacoll_mpi: 1 = every collective of this process goes to the MPI library's "
            "own; it still takes part in each communicator's one set-up allgather, so that a "
            "communicator with such a member stays native on all members instead of hanging"},
    {.id = NC_CFG_FAKE_NODES,
     .type = NC_CFG_TYPE_INT,
     .defval = "0",
     .allowed = "0..4096",
     .doc = "libnumacoll_mpi: split every node into this many pseudo-nodes (contiguous rank "
            "blocks) to exercise the multi-node path on one machine; 0 or 1 = real nodes only"},
    {.id = NC_CFG_MPI_BCAST,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "1",
     .allowed = "0|1",
     .doc = "libnumacoll_mpi: route MPI_Bcast through numacoll (0 = MPI_Bcast always native)"},
    {.id = NC_CFG_MPI_REDUCE,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "1",
     .allowed = "0|1",
     .doc = "libnumacoll_mpi: route MPI_Allreduce and MPI_Reduce through numacoll (0 = always "
            "native); user-defined ops and datatypes other than contiguous runs of one "
            "predefined type always go to the MPI library"},
    {.id = NC_CFG_MPI_GATHER,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "1",
     .allowed = "0|1",
     .doc = "libnumacoll_mpi: route MPI_Allgather, MPI_Allgatherv, MPI_Gather, MPI_Gatherv, "
            "MPI_Scatter, MPI_Scatterv, MPI_Alltoall, MPI_Alltoallv and MPI_Alltoallw through "
            "numacoll (0 = always native); members of a communicator that differ in it keep it "
            "native"},
    {.id = NC_CFG_MPI_STATS,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "0",
     .allowed = "0|1",
     .doc = "libnumacoll_mpi: print per-process counters of intercepted calls at MPI_Finalize "
            "(a process that uses only MPI-4 sessions: at MPI_Session_finalize)"},
    {.id = NC_CFG_MPI_SETUP_AFTER,
     .type = NC_CFG_TYPE_INT,
     .defval = "2048",
     .allowed = "0..1000000000",
     .doc = "libnumacoll_mpi: a communicator with no reusable idle team runs the native "
            "MPI_Barrier and MPI_Bcast until its calls add up to this many units (a call 1, a "
            "broadcast of n bytes 1 + n/1024), then numacoll sets it up, at the same call on "
            "every member; 0 = at the first call"},
    {.id = NC_CFG_MPI_SETUP_AFTER_OVERSUB,
     .type = NC_CFG_TYPE_INT,
     .defval = "32",
     .allowed = "0..1000000000",
     .doc = "libnumacoll_mpi: NUMACOLL_MPI_SETUP_AFTER for a communicator on an oversubscribed "
            "node (its members there, or the job's processes there as the launcher tells, "
            "outnumber the CPUs), where the native calls are slow; the smaller of the two "
            "applies"},
    {.id = NC_CFG_MPI_TEAM_CACHE,
     .type = NC_CFG_TYPE_INT,
     .defval = "8",
     .allowed = "0..64",
     .doc = "libnumacoll_mpi: idle teams of freed communicators kept per process for reuse by a "
            "later communicator with the same members (dup/free churn); 0 = destroy at "
            "MPI_Comm_free"},
    {.id = NC_CFG_MPI_TEAM_CACHE_QUEUE,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "8M",
     .allowed = "0..64G",
     .doc = "libnumacoll_mpi: broadcast queue memory the idle teams of a process may keep, so "
            "that a later communicator with the same members finds its queues ready; beyond it "
            "an idle team drops its broadcast state (control blocks are always kept); 0 = keep "
            "none"},
};

NC_CFG_REGISTER(mpi, rows)
