/*
 * libnumacoll_mpi: a PMPI layer that gives any MPI program numacoll's MPI_Barrier and
 * MPI_Bcast (LD_PRELOAD it, or link it before the MPI library; `numacoll-run` does the
 * preload for you). This header declares the few extras the library exports for tools,
 * tests and benchmarks; an application needs none of them.
 */
#ifndef NUMACOLL_MPI_H
#define NUMACOLL_MPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Per-process counters of the layer (monotonic since MPI_Init). */
typedef struct numacoll_mpi_stats {
    uint64_t barrier_calls;     /**< MPI_Barrier calls seen (C and Fortran) */
    uint64_t barrier_numacoll;  /**< ... of which numacoll executed */
    uint64_t bcast_calls;       /**< MPI_Bcast calls seen */
    uint64_t bcast_numacoll;    /**< ... of which numacoll executed (node part) */
    uint64_t bcast_staged;      /**< ... of which were packed/unpacked (non-contiguous) */
    uint64_t fortran_calls;     /**< calls that came through a Fortran entry point */
    uint64_t comms_set_up;      /**< communicators given numacoll state */
    uint64_t comms_freed;       /**< ... and released again (MPI_Comm_free, finalize) */
    uint64_t teams_created;     /**< numacoll teams created */
    uint64_t teams_destroyed;   /**< numacoll teams destroyed */
    uint64_t team_failures;     /**< team creations that failed (native fallback) */
    uint64_t progress_calls;    /**< MPI progress pokes from long waits */
    uint64_t teams_reused;      /**< idle teams of freed communicators reused (same members) */
    uint64_t bcast_states_kept; /**< ... of which kept their broadcast set-up (every member
                                     had kept it: no segment set-up, queues ready) */
    uint64_t comms_deferred;    /**< communicators that began with native calls
                                     (NUMACOLL_MPI_SETUP_AFTER) */
    uint64_t comms_promoted;    /**< ... of which numacoll set up later (their calls reached
                                     the threshold, or an explicit numacoll call) */
    uint64_t allreduce_calls;    /**< MPI_Allreduce calls seen (C, _c and Fortran) */
    uint64_t allreduce_numacoll; /**< ... of which numacoll executed (node part) */
    uint64_t reduce_calls;       /**< MPI_Reduce calls seen */
    uint64_t reduce_numacoll;    /**< ... of which numacoll executed (node part) */
    uint64_t reduce_scatter_block_calls;    /**< MPI_Reduce_scatter_block calls seen */
    uint64_t reduce_scatter_block_numacoll; /**< ... of which numacoll executed */
    uint64_t reduce_scatter_calls;          /**< MPI_Reduce_scatter calls seen */
    uint64_t reduce_scatter_numacoll;       /**< ... of which numacoll executed */
    uint64_t scan_calls;                    /**< MPI_Scan calls seen */
    uint64_t scan_numacoll;                 /**< ... of which numacoll executed */
    uint64_t exscan_calls;                  /**< MPI_Exscan calls seen */
    uint64_t exscan_numacoll;               /**< ... of which numacoll executed */
    uint64_t allgather_calls;     /**< MPI_Allgather calls seen (C, _c and Fortran) */
    uint64_t allgather_numacoll;  /**< ... of which numacoll executed (node part) */
    uint64_t allgatherv_calls;    /**< MPI_Allgatherv calls seen */
    uint64_t allgatherv_numacoll; /**< ... of which numacoll executed (node part) */
    uint64_t gather_calls;        /**< MPI_Gather calls seen */
    uint64_t gather_numacoll;     /**< ... of which numacoll executed (node part) */
    uint64_t gatherv_calls;       /**< MPI_Gatherv calls seen */
    uint64_t gatherv_numacoll;    /**< ... of which numacoll executed (node part) */
    uint64_t scatter_calls;       /**< MPI_Scatter calls seen */
    uint64_t scatter_numacoll;    /**< ... of which numacoll executed (node part) */
    uint64_t scatterv_calls;      /**< MPI_Scatterv calls seen */
    uint64_t scatterv_numacoll;   /**< ... of which numacoll executed (node part) */
    uint64_t move_staged; /**< gather-family calls of numacoll's in which this process packed
                               or unpacked a non-contiguous datatype */
    uint64_t alltoall_calls;     /**< MPI_Alltoall calls seen (C, _c and Fortran) */
    uint64_t alltoall_numacoll;  /**< ... of which numacoll executed */
    uint64_t alltoallv_calls;    /**< MPI_Alltoallv calls seen */
    uint64_t alltoallv_numacoll; /**< ... of which numacoll executed */
    uint64_t alltoall_staged; /**< alltoall(v,w) calls of numacoll's in which this process
                                   packed or unpacked a non-contiguous datatype */
    uint64_t alltoallw_calls;    /**< MPI_Alltoallw calls seen (C, _c and Fortran) */
    uint64_t alltoallw_numacoll; /**< ... of which numacoll executed */
    uint64_t neighbor_allgather_calls;    /**< MPI_Neighbor_allgather calls seen (C, _c) */
    uint64_t neighbor_allgather_numacoll; /**< ... of which numacoll executed */
    uint64_t neighbor_allgatherv_calls;    /**< MPI_Neighbor_allgatherv calls seen */
    uint64_t neighbor_allgatherv_numacoll; /**< ... of which numacoll executed */
    uint64_t neighbor_alltoall_calls;     /**< MPI_Neighbor_alltoall calls seen */
    uint64_t neighbor_alltoall_numacoll;  /**< ... of which numacoll executed */
    uint64_t neighbor_alltoallv_calls;    /**< MPI_Neighbor_alltoallv calls seen */
    uint64_t neighbor_alltoallv_numacoll; /**< ... of which numacoll executed */
    uint64_t neighbor_alltoallw_calls;    /**< MPI_Neighbor_alltoallw calls seen */
    uint64_t neighbor_alltoallw_numacoll; /**< ... of which numacoll executed */
    uint64_t neighbor_staged; /**< neighbourhood calls of numacoll's in which this process
                                   packed or unpacked a non-contiguous datatype */
} numacoll_mpi_stats_t;

/**
 * Copy the counters into @p out, which holds @p size bytes: pass sizeof *out. The struct
 * grows at its end when counters are added, so a caller built against an older header
 * gets the fields it knows, and one built against a newer header gets zeros in the fields
 * this library lacks. Returns the size of this library's struct (nothing is written when
 * @p out is NULL or @p size is 0). Tools that look the library up at run time use
 * dlsym(RTLD_DEFAULT, "numacoll_mpi_stats_sized"); the library is "libnumacoll_mpi".
 */
size_t numacoll_mpi_stats_sized(numacoll_mpi_stats_t *out, size_t size);

/** numacoll_mpi_stats_sized(out, the size of this library's struct): writes the whole
 *  struct, so it suits only callers built against the same header; returns 0, or -1 when
 *  @p out is NULL. */
int numacoll_mpi_stats(numacoll_mpi_stats_t *out);

/** Which MPI the library was built for: "openmpi" or "mpich". */
const char *numacoll_mpi_flavor(void);

/**
 * How numacoll handles @p comm: 0 = native pass-through, 1 = one node-level team over the
 * whole communicator, 2 = hierarchical (node teams + leaders' communicator). Sets the
 * communicator up now if it is not yet (its first collective, or a communicator still
 * making native calls under NUMACOLL_MPI_SETUP_AFTER), so the call is collective then.
 * numacoll_mpi_comm_team does the same: an explicit numacoll call means "set it up now".
 */
int numacoll_mpi_comm_mode(MPI_Comm comm);

/**
 * The numacoll team behind @p comm when it is one flat team (mode 1), else NULL. For
 * measurements: numacoll_barrier() on it is MPI_Barrier without the interposition layer,
 * and numacoll_barrier_with() / numacoll_bcast_with() run a named algorithm or variant on
 * it (a hierarchical communicator has no such team: a node team alone is not the
 * communicator's collective). The team belongs to the communicator (valid until it is
 * freed; do not destroy it).
 */
struct numacoll_team *numacoll_mpi_comm_team(MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif
