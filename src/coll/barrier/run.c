/*
 * Running a team's barrier: the registered algorithm at a registry index, with the
 * team's collective bookkeeping around it, and the layout of every algorithm's areas in
 * the team segment.
 */
#include "barrier.h"

size_t nc_barrier_layout(numacoll_team_t *t, size_t global_off, size_t *rank_bytes_total)
{
    size_t g = global_off, rk = *rank_bytes_total;
    for (int i = 0; i < nc_barrier_registry_count; i++) {
        const nc_barrier_algo_t *a = nc_barrier_registry[i];
        nc_barrier_slot_t *s = &t->barrier_slots[i];
        size_t gb = nc_round_up(a->global_bytes(t), t->line);
        size_t rb = nc_round_up(a->rank_bytes(t), t->line);
        s->global = (char *)(uintptr_t)g; /* offset for now; rebased after mapping */
        s->rank_off = rk;
        g += gb;
        rk += rb;
    }
    *rank_bytes_total = rk;
    return g;
}

int nc_barrier_run(numacoll_team_t *t, int idx)
{
    nc_barrier_slot_t *s = &t->barrier_slots[idx];
    nc_team_op_enter(t, "barrier");
    int rc = nc_barrier_registry[idx]->run(t, s);
    if (rc == NUMACOLL_OK) nc_team_op_leave(t);
    return rc;
}

int nc_team_barrier_default(numacoll_team_t *t)
{
    return nc_barrier_run(t, t->barrier_default);
}
