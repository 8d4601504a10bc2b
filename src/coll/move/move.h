/*
 * The data-movement layer's interface to the layers above it (team facade, MPI layer):
 * gather, scatter, allgather, alltoall and their v-forms on a team, over the team's
 * data-movement state (created at its first such call). The public calls are declared in
 * include/numacoll/numacoll.h.
 */
#ifndef NC_MOVE_H
#define NC_MOVE_H

#include "../../core/nc_internal.h"

NC_CFG_LINK(move); /* config_rows.c: this layer's rows (config.h) */

/** Create the team's data-movement state if it has none: collective (every member calls it
 *  at the same point) with an agreed status, so that a caller taking a failure as "run it
 *  natively" decides alike on every member. The collectives set it up themselves
 *  otherwise. */
int nc_move_setup(numacoll_team_t *t);

/** The collectives' patterns of movement, for the choice of path: who reads and who
 *  writes how many blocks (the v-forms have their plain forms' patterns). */
typedef enum nc_move_shape {
    NC_MOVE_GATHER = 0, /* the root reads one block from every other member */
    NC_MOVE_SCATTER,    /* every other member reads one block from the root */
    NC_MOVE_ALLGATHER,  /* every member reads every other member's one block */
    NC_MOVE_ALLTOALL,   /* every member reads its own block from every other member */
    NC_MOVE_SHAPES
} nc_move_shape_t;

/** The collective of @p shape, for messages: "gather", "scatter", "allgather", "alltoall" */
const char *nc_move_shape_name(nc_move_shape_t shape);

/** 1 if blocks of @p bytes in collectives of @p shape go by single copy (process_vm_readv)
 *  on @p t, from the team's agreed parameters (0 before the state exists). */
int nc_move_uses_cma(const numacoll_team_t *t, nc_move_shape_t shape, size_t bytes);

/** numacoll-info --explain: the path ("copy" or "cma") that a block of @p bytes takes in
 *  collectives of @p shape on a team like @p t (its size and oversubscription; the configuration in effect) if single
 *  copy is permitted between its members (@p cma_ok, probed at set-up in a real team), the
 *  reason (*@p why, static text), and whether the owner writes it into its slots with
 *  non-temporal stores (*@p streamed, copy path only). The rule mv_path_of applies. */
const char *nc_move_path_explain(const numacoll_team_t *t, nc_move_shape_t shape, size_t bytes,
                                 int cma_ok, const char **why, int *streamed);

/** The data-movement calls this member has made on @p t so far (0 before its state
 *  exists): every call counts, failed ones too, the same on every member. A caller whose
 *  call failed and finds the count unchanged knows that the member never took part. */
uint64_t nc_move_calls(const numacoll_team_t *t);

/** Release the team's data-movement state (team destruction). */
void nc_move_team_fini(numacoll_team_t *t);

#endif
