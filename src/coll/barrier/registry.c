/* The barrier algorithm registry: one row per algorithm (each in its own file). */
#include "barrier.h"

#include <string.h>

extern const nc_barrier_algo_t nc_barrier_sense_reversing;

const nc_barrier_algo_t *const nc_barrier_registry[] = {
    &nc_barrier_sense_reversing,
};
const int nc_barrier_registry_count =
    (int)(sizeof nc_barrier_registry / sizeof nc_barrier_registry[0]);

int nc_barrier_find(const char *name)
{
    for (int i = 0; i < nc_barrier_registry_count; i++)
        if (strcmp(nc_barrier_registry[i]->name, name) == 0) return i;
    return -1;
}

int nc_barrier_auto(const numacoll_team_t *t)
{
    (void)t;
    return 0;
}

/* "auto|name1|name2|..." for the NUMACOLL_BARRIER row of the config table */
const char *nc_barrier_allowed_names(void)
{
    static char buf[1024];
    if (!buf[0]) {
        size_t o = (size_t)snprintf(buf, sizeof buf, "auto");
        for (int i = 0; i < nc_barrier_registry_count && o < sizeof buf; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "|%s", nc_barrier_registry[i]->name);
    }
    return buf;
}

const numacoll_algorithm_info_t *numacoll_barrier_algorithms(int *count)
{
    static numacoll_algorithm_info_t info[64];
    for (int i = 0; i < nc_barrier_registry_count && i < 64; i++) {
        info[i].name = nc_barrier_registry[i]->name;
        info[i].description = nc_barrier_registry[i]->description;
    }
    if (count) *count = nc_barrier_registry_count;
    return info;
}
