/*
 * libnumacoll_mpi: the memory of a call on a hierarchical communicator (several nodes, or
 * NUMACOLL_FAKE_NODES pseudo-nodes), shared by the gather family (pmpi_move_hier.c) and the
 * reductions (pmpi_reduce.c, pmpi_scatter_scan.c).
 *
 * A member short of memory cannot take part in such a call: its steps include MPI
 * collectives between the node leaders, which need receive buffers of the agreed size, and
 * node steps whose partners would wait for it. So every member takes all the memory of the
 * call before any step:
 *   - a call that needs at most as many bytes on any member (by a rule on sizes every
 *     member knows) as every member's room is known to hold takes it from the
 *     communicator's room, kept from call to call: nothing can fail and nothing is agreed;
 *   - any other call takes it from the heap, or from its room grown for it (to the power
 *     of two that holds it, HIER_ROOM_MIN to HIER_ROOM_MAX bytes), and the members then
 *     agree whether all of them got theirs (hier_agree_memory: the node's records combined
 *     at its leader, the leaders' MPI_Allreduce of them, a node broadcast of the result);
 *     the records also carry each member's room, so the smallest of them becomes what
 *     every member's room is known to hold.
 * So a communicator's calls agree once per size class up to HIER_ROOM_MAX, and always
 * above it, where the agreement's three short steps weigh little against the data; the
 * room holds at most HIER_ROOM_MAX bytes a communicator, as long as it lives.
 * When a member is short, no data moves on any member: the short ones fail with
 * NUMACOLL_ERR_NOMEM, every member that receives data in the call with NUMACOLL_ERR_ARG
 * naming them, the others return NUMACOLL_OK, and the next call finds every member at the
 * same step.
 *
 * The bounds are constants, not settings: whether a call must agree is decided alike on
 * every member without a step.
 */
#include "mpi_internal.h"

/* this member's record: {its rank, minus its rank} when it is short of memory, else
 * {INT_MAX, INT_MAX}, and its room's size in KiB; the minimum of the records gives the
 * lowest and the highest short rank and what every member's room holds */
void hier_short_record(int *rec, const nc_comm_t *s, int short_here)
{
    rec[0] = short_here ? s->rank : INT_MAX;
    rec[1] = short_here ? -s->rank : INT_MAX;
    rec[2] = s->mem_room ? (int)(s->mem_room_size >> 10) : 0;
}

int hier_room_begin(nc_comm_t *s, size_t most, char **room)
{
    *room = NULL;
    if (most <= s->mem_room_agreed) { /* every member's room holds it: no agreement */
        *room = s->mem_room;           /* NULL only after a timeout: the heap then */
        return 0;
    }
    if (most <= HIER_ROOM_MAX && s->mem_room_size < most) {
        size_t size = HIER_ROOM_MIN;
        while (size < most)
            size *= 2;
        char *grown = malloc(size); /* the old room stays where there is no memory */
        if (grown) {
            free(s->mem_room);
            s->mem_room = grown, s->mem_room_size = size;
        }
    }
    if (s->mem_room && most <= s->mem_room_size) *room = s->mem_room;
    return 1;
}

void hier_release(nc_comm_t *s, void *p, int rc)
{
    if (!p) return;
    const int in_room = s->mem_room && (uintptr_t)p >= (uintptr_t)s->mem_room &&
                        (uintptr_t)p < (uintptr_t)s->mem_room + s->mem_room_size;
    if (rc == NUMACOLL_ERR_TIMEOUT) { /* a pending step may still write it: keep it */
        if (in_room) s->mem_room = NULL, s->mem_room_size = 0;
    } else if (!in_room) {
        free(p);
    }
}

int hier_agree_memory(nc_comm_t *s, int short_here, int receives, hier_node_min_fn node_min,
                      int *go)
{
    char msg[512];
    int *rec = s->mem_short; /* the leaders' step may write it after a timeout */
    *go = 0;
    if (short_here) snprintf(msg, sizeof msg, "%s", numacoll_last_error());
    hier_short_record(rec, s, short_here);
    const int was_short = short_here;
    int rc = s->node_size > 1 ? node_min(s, rec, &short_here) : NUMACOLL_OK;
    if (short_here && !was_short) snprintf(msg, sizeof msg, "%s", numacoll_last_error());
    if (rc == NUMACOLL_OK && s->node_rank == 0 && s->nnodes > 1)
        rc = HIER_STEP(s, "MPI_Allreduce of the memory status between the node leaders",
                       PMPI_Allreduce(MPI_IN_PLACE, rec, 3, MPI_INT, MPI_MIN, s->leaders),
                       PMPI_Iallreduce(MPI_IN_PLACE, rec, 3, MPI_INT, MPI_MIN, s->leaders,
                                       HIER_REQ));
    if (rc == NUMACOLL_OK) rc = node_bcast_bytes(s, rec, 3 * sizeof *rec, 0);
    if (rc != NUMACOLL_OK) return rc;
    s->mem_room_agreed = (size_t)rec[2] << 10; /* every member's room holds it: alike on all */
    if (rec[0] == INT_MAX) {
        *go = 1;
        return NUMACOLL_OK;
    }
    if (short_here) return nc_error(NUMACOLL_ERR_NOMEM, "%s", msg);
    if (!receives) return NUMACOLL_OK;
    const int lo = rec[0], hi = -rec[1];
    if (lo == hi)
        return nc_error(NUMACOLL_ERR_ARG,
                        "rank %d had no memory for its buffers of this call (its own error "
                        "says which); no data moved (hierarchical mode)",
                        lo);
    return nc_error(NUMACOLL_ERR_ARG,
                    "ranks %d to %d (the lowest and the highest of the ranks without memory for "
                    "their buffers of this call; their own errors say which) had none; no data "
                    "moved (hierarchical mode)",
                    lo, hi);
}
