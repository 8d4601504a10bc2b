/* Placeholder until the hwloc probe lands: every team is flat (no usable level). */
#include "topo.h"

#include <string.h>

const char *const nc_level_names[NC_NLEVELS] = {"l2", "l3", "numa", "socket"};

int nc_topo_team_init(numacoll_team_t *t)
{
    t->topo = NULL;
    t->numa_node = -1;
    return NUMACOLL_OK;
}
void nc_topo_team_fini(numacoll_team_t *t) { t->topo = NULL; }
const nc_hier_t *nc_topo_team_hier(numacoll_team_t *t, const char *levels)
{
    (void)t;
    (void)levels;
    return NULL;
}
int nc_topo_team_numa_count(const numacoll_team_t *t)
{
    (void)t;
    return 1;
}
int nc_topo_team_numa_of(const numacoll_team_t *t, int r)
{
    (void)t;
    (void)r;
    return -1;
}
int nc_topo_team_describe(const numacoll_team_t *t, char *out, size_t n)
{
    (void)t;
    snprintf(out, n, "topology: not probed (flat)");
    return NUMACOLL_OK;
}
