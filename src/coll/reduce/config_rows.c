/*
 * The reduction layer's configuration rows.
 * Help texts: one or two sentences that say what the allowed values mean (config.h);
 * the measurements behind the defaults are in docs/tuning-notes.md.
 */
#include "reduce.h"

static const nc_cfg_def_t rows[] = {
    {.id = NC_CFG_ALLREDUCE,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "auto",
     .allowed = "auto|flat|rsag|hier",
     .doc = "allreduce algorithm (numacoll_allreduce, MPI_Allreduce): flat = every member folds "
            "all inputs, rsag = reduce-scatter then allgather, hier = NUMA/socket group leaders "
            "fold; auto = up to NUMACOLL_REDUCE_FLAT_MAX bytes hier across NUMA nodes, else "
            "flat; rsag above"},
    {.id = NC_CFG_REDUCE,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "auto",
     .allowed = "auto|flat|rsag|hier",
     .doc = "reduce algorithm (numacoll_reduce, MPI_Reduce): flat = the root folds all inputs, "
            "rsag = every member folds a slice and the root gathers them, hier = group leaders "
            "fold; auto as for NUMACOLL_ALLREDUCE"},
    {.id = NC_CFG_REDUCE_FLAT_MAX,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "4K",
     .allowed = "0..1G",
     .doc = "largest message (bytes) the automatic choice reduces with flat (or hier); larger "
            "ones use rsag"},
    {.id = NC_CFG_REDUCE_FRAGMENT,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "64K",
     .allowed = "4K..16M",
     .doc = "chunk size (bytes, rounded up to 64) in which reductions pipeline a message; "
            "each member keeps NUMACOLL_REDUCE_SLOTS chunks of input and of result"},
    {.id = NC_CFG_REDUCE_SLOTS,
     .type = NC_CFG_TYPE_INT,
     .defval = "4",
     .allowed = "2..16",
     .doc = "chunks in flight per member: a member may post its input of up to this many "
            "chunks before the others have read the first"},
};

NC_CFG_REGISTER(reduce, rows)
