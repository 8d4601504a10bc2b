/*
 * Broadcast (paper 3): pipelined through per-process queues in shared memory.
 * The team-level entry point; state is created at a team's first broadcast.
 */
#ifndef NC_BCAST_H
#define NC_BCAST_H

#include "../../core/nc_internal.h"

/** Collective broadcast of @p bytes from @p root (arguments already validated). */
int nc_bcast_run(numacoll_team_t *t, void *buf, size_t bytes, int root);
/** Free the team's broadcast state (local). */
void nc_bcast_team_fini(numacoll_team_t *t);

#endif
