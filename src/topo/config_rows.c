/*
 * The topology layer's configuration rows, with NUMACOLL_BARRIER_TOPO_LEVELS: the topology
 * layer reads it to build the groups (the barrier only picks "topo" from it).
 * Help texts: one or two sentences that say what the allowed values mean (config.h);
 * the measurements behind the defaults are in docs/tuning-notes.md.
 */
#include "../core/nc_internal.h"

static const nc_cfg_def_t rows[] = {
    {.id = NC_CFG_TOPO_SYNTHETIC,
     .type = NC_CFG_TYPE_STRING,
     .defval = "",
     .allowed = "hwloc synthetic description",
     .doc = "plan on this hwloc synthetic topology (e.g. \"pack:2 numa:2 l3:1 core:4 pu:1\") "
            "with a simulated placement (NUMACOLL_TOPO_MAP_BY) instead of the real machine and "
            "binding; empty = the real machine"},
    {.id = NC_CFG_TOPO_MAP_BY,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "core",
     .allowed = "core|numa|socket",
     .doc = "simulated placement used with NUMACOLL_TOPO_SYNTHETIC: rank r on core r, on NUMA "
            "node r mod #nodes, or on package r mod #packages (next free core there)"},
    {.id = NC_CFG_BARRIER_TOPO_LEVELS,
     .type = NC_CFG_TYPE_LIST,
     .defval = "numa,socket",
     .allowed = "l2|l3|numa|socket",
     .doc = "memory-hierarchy levels the topology barrier groups processes by (paper: numa = "
            "shm-topo-NUMA, socket, numa,socket)"},
};

NC_CFG_REGISTER(topo, rows)
