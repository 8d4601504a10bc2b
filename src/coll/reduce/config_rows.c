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
     .allowed = "auto|flat|rsag|hier|rbcast",
     .doc = "allreduce algorithm: flat = all fold all inputs, rsag = reduce-scatter, allgather, "
            "hier = NUMA/socket leaders fold, rbcast = flat reduce to member 0, its broadcast; "
            "auto = rbcast with over 2 members and more than the CPUs, else hier or flat up to "
            "NUMACOLL_REDUCE_FLAT_MAX bytes, rsag above"},
    {.id = NC_CFG_REDUCE,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "auto",
     .allowed = "auto|flat|rsag|hier|rbcast",
     .doc = "reduce algorithm (numacoll_reduce, MPI_Reduce): flat = the root folds all inputs, "
            "rsag = every member folds a slice and the root gathers them, hier = group leaders "
            "fold; auto as for NUMACOLL_ALLREDUCE, but flat at every size with two members or "
            "more members than CPUs"},
    {.id = NC_CFG_REDUCE_FLAT_MAX,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "4K",
     .allowed = "0..1G",
     .doc = "largest message (bytes) the automatic choice reduces with flat (or hier); larger "
            "ones use rsag (a reduce over two members or more than the CPUs: flat)"},
    {.id = NC_CFG_REDUCE_FRAGMENT,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "32K",
     .allowed = "4K..16M",
     .doc = "chunk size (bytes, rounded up to 64) in which reductions pipeline a message; "
            "each member keeps NUMACOLL_REDUCE_SLOTS chunks of input and of result"},
    {.id = NC_CFG_REDUCE_SLOTS,
     .type = NC_CFG_TYPE_INT,
     .defval = "16",
     .allowed = "2..64",
     .doc = "chunks in flight per member: a member may post its input of up to this many "
            "chunks before the others have read the first"},
    {.id = NC_CFG_REDUCE_STREAM,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "auto",
     .allowed = "auto|on|off",
     .doc = "how members of a reduction of at least NUMACOLL_REDUCE_STREAM_MIN bytes write what "
            "others read: on = non-temporal (streamed) stores, off = plain stores, auto = the "
            "faster of the two per size class, from the measured call times"},
    {.id = NC_CFG_REDUCE_STREAM_MIN,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "16K",
     .allowed = "0..1G",
     .doc = "smallest reduction (bytes) NUMACOLL_REDUCE_STREAM applies to; smaller ones use "
            "plain stores (0 = every size)"},
    {.id = NC_CFG_REDUCE_EAGER,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "4K",
     .allowed = "0..16M",
     .doc = "bytes of each chunk slot a member's reduction buffers get at set-up; the rest of "
            "the slots gets memory at the first reduction of a larger message (a team that "
            "reduces only small messages keeps little memory)"},
    {.id = NC_CFG_REDUCE_GIVE_BACK,
     .type = NC_CFG_TYPE_INT,
     .defval = "65536",
     .allowed = "0..1073741824",
     .doc = "after this many reductions in a row that fit NUMACOLL_REDUCE_EAGER, each member "
            "returns the memory of its slots beyond it (the next larger one gets it again); 0 "
            "= never; values below NUMACOLL_REDUCE_SLOTS count as that"},
};

NC_CFG_REGISTER(reduce, rows)
