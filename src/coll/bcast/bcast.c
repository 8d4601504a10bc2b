/* Placeholder until the pipelined broadcast lands. */
#include "bcast.h"

int nc_bcast_run(numacoll_team_t *t, void *buf, size_t bytes, int root)
{
    (void)t;
    (void)buf;
    (void)bytes;
    (void)root;
    return nc_error(NUMACOLL_ERR_UNSUPPORTED, "numacoll_bcast is not implemented yet");
}
void nc_bcast_team_fini(numacoll_team_t *t) { (void)t; }
