/*
 * Algorithm "rbcast" of an allreduce: a flat reduce to member 0, then member 0's broadcast
 * of the result (coll/bcast/). Every member but 0 waits on one flag per step: it posts its
 * input and leaves the reduce (one chunk), then waits in the broadcast for the line member 0
 * writes. A flat allreduce instead makes every member wait for every other member's input,
 * P - 1 flags each: on an oversubscribed team each of those waits may need the writer to be
 * scheduled first, and with kernel sleeps each costs a wake-up (docs/tuning-notes.md).
 *
 * Member 0 alone compares the members' signatures (the call's arguments). Its verdict travels
 * in a 16-byte header before the result: one broadcast up to RB_ONE_BCAST bytes, a broadcast
 * of the header and one of the result above. A member whose own size differs from member
 * 0's (a mismatched count) still gets the header: the broadcast delivers the first bytes of
 * the root's message and keeps every member's broadcast count in step. On a mismatch member
 * 0 then broadcasts every member's signature, so that each member names the first member
 * whose arguments differ from its own, as the other algorithms do. Every member takes part
 * in these broadcasts whatever its reduce returned (but for a broken team: a dead member or
 * a timeout).
 */
#include "reduce_internal.h"

#include "../bcast/bcast.h"

#include <string.h>

enum { RB_HEADER = 16, RB_ONE_BCAST = 4096 };

/* member 0's broadcast: NUMACOLL_OK, NUMACOLL_ERR_ARG when the sizes differed (the first
 * bytes arrived), or the error of a broken team (a dead member, a timeout), its message
 * prefixed with the call's entry point @p who */
static int from_member0(numacoll_team_t *t, void *buf, size_t bytes, const char *who)
{
    int rc = nc_bcast_run(t, buf, bytes, 0);
    if (rc == NUMACOLL_OK || rc == NUMACOLL_ERR_ARG) return rc;
    return nc_error_wrap(rc, "%s (the broadcast of its result)", who);
}

/* The result's broadcast when member 0's queue could not get its memory (every member got
 * NUMACOLL_ERR_UNSUPPORTED from it, and nothing of it arrived): in pieces of RB_ONE_BCAST
 * bytes, which travel inline in memory every member has had since set-up. The reduce has
 * happened (an in-place member 0 holds the result, not its input), so this call cannot be
 * run again another way: a failure here is NUMACOLL_ERR_NOMEM, never UNSUPPORTED. */
static int from_member0_in_pieces(numacoll_team_t *t, char *buf, size_t bytes, const char *who)
{
    for (size_t off = 0; off < bytes; off += RB_ONE_BCAST) {
        size_t n = bytes - off < RB_ONE_BCAST ? bytes - off : RB_ONE_BCAST;
        int rc = from_member0(t, buf + off, n, who);
        if (rc == NUMACOLL_ERR_UNSUPPORTED)
            return nc_error(NUMACOLL_ERR_NOMEM,
                            "%s: the broadcast of the reduced result could not get memory, not "
                            "even in %d-byte pieces (NUMACOLL_BCAST_INLINE_MAX lower?); member "
                            "0 holds the result",
                            who, RB_ONE_BCAST);
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

int rd_rbcast_fail_alike(numacoll_team_t *t, const char *who)
{
    /* the reduce to member 0 (its check keeps the signatures there), member 0's verdict
     * (a header alone: this member does not know the others' size; a receiver keeps the
     * root's first bytes, and member 0's shorter header fails the receivers' broadcast
     * with NUMACOLL_ERR_ARG, which the others accept), then member 0's table of the
     * signatures, as rd_allreduce_rbcast does after a mismatch */
    const int me0 = t->rank == 0;
    int rc = rd_badarg_chunk(t, 0, RD_ALG_FLAT, me0, who);
    if (rc != NUMACOLL_OK && rc != NUMACOLL_ERR_ARG) return rc;
    int64_t verdict = NUMACOLL_ERR_ARG;
    _Alignas(64) char buf[RB_HEADER];
    memset(buf, 0, sizeof buf);
    memcpy(buf, &verdict, sizeof verdict);
    rc = from_member0(t, buf, RB_HEADER, who);
    if (rc != NUMACOLL_OK && rc != NUMACOLL_ERR_ARG) return rc;
    rc = from_member0(t, t->reduce->sigs, (size_t)t->size * sizeof *t->reduce->sigs, who);
    return rc == NUMACOLL_OK ? NUMACOLL_ERR_ARG : rc;
}

int rd_allreduce_rbcast(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                        numacoll_dtype_t dtype, numacoll_op_t op, const char *who)
{
    const int me0 = t->rank == 0;
    /* a reduce's non-root may not reduce in place: its input is in recvbuf, which it copies
     * into its in slot (flat's post) before the broadcast overwrites it */
    const void *input = !me0 && sendbuf == NUMACOLL_IN_PLACE ? recvbuf : sendbuf;
    int rc = rd_reduce_run(t, input, recvbuf, count, dtype, op, 0, RD_ALG_FLAT, who, me0);
    if (rc != NUMACOLL_OK && rc != NUMACOLL_ERR_ARG) return rc; /* the team is broken */
    size_t es = numacoll_dtype_size(dtype);
    size_t bytes = es && count <= SIZE_MAX / es ? count * es : 0;
    int64_t verdict = rc;
    int brc;
    _Alignas(64) char buf[RB_ONE_BCAST];
    memcpy(buf, &verdict, sizeof verdict);
    if (bytes <= RB_ONE_BCAST - RB_HEADER) {
        if (me0 && rc == NUMACOLL_OK && bytes) memcpy(buf + RB_HEADER, recvbuf, bytes);
        brc = from_member0(t, buf, RB_HEADER + bytes, who);
    } else {
        brc = from_member0(t, buf, RB_HEADER, who);
    }
    if (brc != NUMACOLL_OK && brc != NUMACOLL_ERR_ARG) return brc;
    memcpy(&verdict, buf, sizeof verdict);
    if (verdict == NUMACOLL_OK) { /* every member passed member 0's arguments */
        if (bytes > RB_ONE_BCAST - RB_HEADER) {
            brc = from_member0(t, recvbuf, bytes, who);
            if (brc == NUMACOLL_ERR_UNSUPPORTED)
                brc = from_member0_in_pieces(t, recvbuf, bytes, who);
        }
        else if (!me0 && bytes && rc == NUMACOLL_OK) memcpy(recvbuf, buf + RB_HEADER, bytes);
        return rc != NUMACOLL_OK ? rc : brc;
    }
    /* a mismatch: member 0's table of the signatures, for every member's message */
    nc_reduce_team_t *r = t->reduce;
    brc = from_member0(t, r->sigs, (size_t)t->size * sizeof *r->sigs, who);
    if (brc != NUMACOLL_OK) return brc; /* the same size on every member: a broken team */
    /* (a size mismatch of the first broadcast replaced the message of our own reduce's
     * check, where it saw one: the table names the same member) */
    return rd_mismatch_error(who, r->sigs, t->size, t->rank, -1);
}
