/*
 * The barrier layer's configuration rows (NUMACOLL_BARRIER_TOPO_LEVELS: src/topo/).
 * Help texts: one or two sentences that say what the allowed values mean (config.h);
 * the measurements behind the defaults are in docs/tuning-notes.md.
 */
#include "barrier.h"

static const nc_cfg_def_t rows[] = {
    {.id = NC_CFG_BARRIER,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "auto",
     .allowed_fn = nc_barrier_allowed_names,
     .doc = "barrier algorithm used by numacoll_barrier / MPI_Barrier; auto = the library's "
            "choice"},
    {.id = NC_CFG_BARRIER_TREE_K,
     .type = NC_CFG_TYPE_INT,
     .defval = "2",
     .allowed = "2..64",
     .doc = "fan-in of the combining-tree barrier"},
    {.id = NC_CFG_BARRIER_LOGP_L,
     .type = NC_CFG_TYPE_DOUBLE,
     .defval = "60",
     .allowed = "0..1000000000",
     .doc = "LogP latency L (ns) for adaptive-logp and auto: one cache-line transfer between "
            "cores (`numacoll-bench barrier --logp` measures it)"},
    {.id = NC_CFG_BARRIER_LOGP_OS,
     .type = NC_CFG_TYPE_DOUBLE,
     .defval = "1",
     .allowed = "0..1000000000",
     .doc = "LogP send overhead o_s (ns): one release store of a flag"},
    {.id = NC_CFG_BARRIER_LOGP_OR,
     .type = NC_CFG_TYPE_DOUBLE,
     .defval = "1",
     .allowed = "0..1000000000",
     .doc = "LogP receive overhead o_r (ns): acquire load and check of a flag that is there"},
    {.id = NC_CFG_BARRIER_LOGP_G,
     .type = NC_CFG_TYPE_DOUBLE,
     .defval = "5",
     .allowed = "0..1000000000",
     .doc = "LogP gap g (ns): spacing of back-to-back flag receives from other cores "
            "(overlapped misses)"},
};

NC_CFG_REGISTER(barrier, rows)
