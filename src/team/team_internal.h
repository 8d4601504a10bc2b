/*
 * The internal interface of libnumacoll for the layers above the collectives: the team
 * facade (src/team/) and the MPI layer (src/mpi/, libnumacoll_mpi), which includes only
 * this header and the public ones. Not installed. What such a layer may use, besides
 * numacoll.h:
 *
 *   base (core/nc_internal.h, config.h)
 *     struct numacoll_team: name, oob_ctx, progress_ctx (the MPI layer points its
 *       callbacks' context at the communicator state after creation), bcast (non-NULL once
 *       the team has its broadcast state); nc_team_op_enter / nc_team_op_leave around a
 *       collective called below the public entry points
 *     nc_error, nc_verbose, nc_log; nc_cfg_bool / nc_cfg_int / nc_cfg_size with the
 *       NC_CFG_* ids, NC_CFG_LINK; NC_LIKELY / NC_UNLIKELY; nc_fnv1a, NC_FNV_BASIS;
 *       nc_job_node_procs (the launcher's count of the job's processes on this node)
 *   barrier (coll/barrier/barrier.h)
 *     nc_team_barrier_default: numacoll_barrier of a valid team without a call through
 *       the PLT (MPI_Barrier's fast path)
 *   broadcast (coll/bcast/bcast.h)
 *     nc_bcast_run: numacoll_bcast with validated arguments (MPI_Bcast's fast path);
 *     nc_bcast_run_opts with nc_bcast_opts_t and NC_BCAST_OPTS_DEFAULT (the large path's
 *     marked header: .mark = 1); nc_bcast_last_mismatch (a receiver's view of the root's
 *     message after a size or root mismatch); nc_bcast_team_fini and
 *     nc_bcast_team_queue_bytes (the idle-team cache keeps or frees a team's broadcast
 *     state)
 *   reductions (coll/reduce/reduce.h)
 *     nc_reduce_run: numacoll_allreduce / numacoll_reduce with a registry index and the
 *       caller's name for messages, between nc_team_op_enter and nc_team_op_leave
 *     nc_reduce_local: one element-wise fold of two local buffers (the MPI layer's step
 *       between nodes)
 *   data movement (coll/move/move.h)
 *     nc_move_setup: create the team's data-movement state collectively (agreed status);
 *     nc_move_team_fini
 *
 * Everything else in those headers (segments, waits, trees, the model, the protocol) is
 * private to libnumacoll's lower layers; the include graph runs core <- topo <- coll <-
 * team <- mpi, never upward.
 */
#ifndef NC_TEAM_INTERNAL_H
#define NC_TEAM_INTERNAL_H

#include "../core/nc_internal.h"
#include "../coll/barrier/barrier.h"
#include "../coll/bcast/bcast.h"
#include "../coll/reduce/reduce.h"
#include "../coll/move/move.h"

#endif
