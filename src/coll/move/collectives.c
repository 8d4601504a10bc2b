/*
 * The public entry points: numacoll_allgather(v), numacoll_gather(v), numacoll_scatter(v),
 * numacoll_alltoall(v). Each checks its arguments, describes the blocks this member owns
 * (its stream's entries) and the blocks it reads (one mv_read_t per owner), copies its own
 * block locally, and runs the engine (engine.c).
 *
 * A member whose arguments are invalid (NULL buffers it needs, sizes that disagree with
 * its own other arguments, a message too large) still takes part: it posts MV_SIG_BAD and
 * no blocks, reads nothing, and returns NUMACOLL_ERR_ARG naming the argument; its readers
 * fail too. Only a root out of range (on which the members could not even agree who
 * reads whom) and a NULL team return at once.
 */
#include "move_internal.h"

#include <stdlib.h>
#include <string.h>

enum { K_ALLGATHER = 1, K_ALLGATHERV, K_GATHER, K_GATHERV, K_SCATTER, K_SCATTERV, K_ALLTOALL,
       K_ALLTOALLV };

/* The call's signature: what every member must pass alike (a few multiplies; never an
 * even marker: bit 0 set) */
static uint64_t signature(int kind, int root, uint64_t sizes)
{
    uint64_t x = sizes * 0x9e3779b97f4a7c15ull ^ ((uint64_t)kind << 40 | (uint32_t)(root + 1));
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return x | 1;
}

/* allgatherv's sizes as one word: a multiply and a rotation per size (a byte-wise hash
 * costs microseconds per call at a hundred members); equal arrays give equal words */
static uint64_t hash_sizes(const size_t *sizes, int n)
{
    uint64_t h = 0x243f6a8885a308d3ull;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)sizes[i] + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
        h = (h << 27 | h >> 37) * 0xbf58476d1ce4e5b9ull;
    }
    return h;
}

/* Start a call: NUMACOLL_OK and *c ready for the plan, or an error before taking part */
static int call_begin(numacoll_team_t *t, const char *who, nc_move_shape_t shape, int root,
                      int has_root, mv_call_t *c)
{
    if (!t) return nc_error(NUMACOLL_ERR_ARG, "%s: team is NULL", who);
    if (has_root && (root < 0 || root >= t->size))
        return nc_error(NUMACOLL_ERR_ARG, "%s: root=%d; allowed: 0..%d", who, root, t->size - 1);
    /* every field by name: a memset of the struct compiles to a rep stos, whose start-up
     * (and the loads of fields just stored by it) cost about a tenth of a tiny call */
    c->team = t, c->state = NULL, c->who = who;
    c->me = t->rank, c->P = t->size, c->root = has_root ? root : -1;
    c->k = 0, c->slot0 = 0, c->sig = 0, c->rc = NUMACOLL_OK;
    c->posts = 0, c->lo = 0, c->hi = 0, c->multi = 0, c->nent = 0;
    c->ent = NULL, c->src = NULL;
    c->head = (mv_head_t){0};
    c->len = 0, c->chunk = 0, c->nchunks = 0, c->next_chunk = 0;
    c->cma_blocks = 0, c->wpos = 0, c->own_bytes = 0;
    c->nreads = 0, c->cur_read = 0, c->reads = NULL, c->cma_reading = 0;
    c->nblocked = 0, c->blk_flag = NULL, c->blk_seen = 0, c->blk_member = -1;
    c->shape = shape;
    nc_team_op_enter(t, who);
    int rc = mv_state_get(t, &c->state);
    if (rc) return rc;
    nc_move_team_t *s = c->state;
    c->k = ++s->calls;
    s->call_slot = s->call_slot + 1 == s->slots ? 0 : s->call_slot + 1;
    c->slot0 = s->call_slot;
    c->ent = c->state->ent;
    c->src = c->state->src;
    c->reads = c->state->reads;
    c->head.pid = c->state->pid;
    return NUMACOLL_OK;
}

/* this member's arguments are invalid (message set): post the marker, read nothing */
static int bad(mv_call_t *c, int status)
{
    if (c->rc == NUMACOLL_OK) c->rc = status;
    return status;
}

/* Our stream: 1 entry (one block for readers lo..hi), or (@p multi) one per member but us,
 * entry mv_entry_of(me, d) for member d */
static void stream_init(mv_call_t *c, int multi, int lo, int hi)
{
    c->posts = 1, c->multi = multi, c->lo = lo, c->hi = hi;
    c->nent = multi ? (uint32_t)c->P - 1 : 1;
    memset(c->ent, 0, c->nent * sizeof *c->ent);
}
static void stream_block(mv_call_t *c, uint32_t d, const void *src, size_t size)
{
    c->src[d] = src;
    c->ent[d].size = size;
    c->ent[d].where = MV_IN_STREAM; /* its offset: call_run */
    if (mv_path_of(c->state, c->shape, size) == MV_PATH_CMA) {
        c->ent[d].where = (uint64_t)(uintptr_t)src;
        c->cma_blocks = 1;
    }
}
/* we read our entry in owner @p owner's list (one per member but the owner if @p multi,
 * else its only one) */
static void read_block(mv_call_t *c, int owner, int multi, size_t expect, char *dst)
{
    mv_read_t *rd = &c->reads[c->nreads++];
    rd->owner = owner, rd->expect = expect, rd->dst = dst;
    rd->entry = multi ? mv_entry_of(owner, c->me) : 0;
    rd->nent = multi ? (uint32_t)c->P - 1 : 1;
    rd->phase = MV_READ_HEAD;
    rd->path = MV_PATH_COPY;
    rd->chunk = 0, rd->off = 0, rd->len = 0, rd->got = 0, rd->into = NULL;
    rd->last_chunk = UINT64_MAX;
}

/* Finish the stream's description (length, chunks, pages) and run the call */
static int call_run(mv_call_t *c)
{
    nc_move_team_t *s = c->state;
    if (c->posts) {
        if (c->rc != NUMACOLL_OK) { /* post the marker and no blocks */
            memset(c->ent, 0, c->nent * sizeof *c->ent);
            c->cma_blocks = 0;
            c->head.sig = MV_SIG_BAD;
        } else {
            c->head.sig = c->sig;
        }
        c->head.entries = c->nent;
        size_t len = MV_HEAD_BYTES + (size_t)c->nent * MV_ENTRY_BYTES;
        for (uint32_t d = 0; d < c->nent; d++)
            if (mv_in_stream(&c->ent[d])) {
                c->ent[d].where = MV_IN_STREAM | len;
                len += (size_t)c->ent[d].size;
            }
        c->chunk = s->chunk;
        if (len + MV_SLOT_HEADER > s->eager && !s->ready && c->rc == NUMACOLL_OK &&
            mv_state_ready(s, c->me) != NUMACOLL_OK) {
            /* no pages beyond the eager part: short chunks, within it (move_internal.h) */
            c->chunk = s->eager - MV_SLOT_HEADER;
            if (!s->short_logged) {
                s->short_logged = 1;
                nc_log(1, c->me, c->P,
                       "move: no memory for the rest of this member's slots (%s); it streams "
                       "its blocks in chunks of %zu bytes instead of %zu until it gets it",
                       numacoll_last_error(), c->chunk, s->chunk);
            }
        }
        /* (a stream of one chunk, the small call's, divides nothing) */
        if (len > c->chunk && len / c->chunk >= MV_MAX_CHUNKS && c->rc == NUMACOLL_OK) {
            bad(c, nc_error(NUMACOLL_ERR_TOOBIG,
                            "%s: rank %d would stream %zu bytes through its slots, more than "
                            "%llu chunks of %zu bytes; use NUMACOLL_MOVE=auto or cma, or a "
                            "larger NUMACOLL_MOVE_FRAGMENT",
                            c->who, c->me, len, (unsigned long long)MV_MAX_CHUNKS, c->chunk));
            return call_run(c);
        }
        c->len = len;
        c->nchunks = len <= c->chunk ? 1 : (len + c->chunk - 1) / c->chunk;
    }
    /* calls in a row within the eager part: ours alone (move_internal.h), one compare */
    if (c->posts && c->len + MV_SLOT_HEADER > s->eager) s->small_run = 0;
    else s->small_run++;
    if (!c->cma_blocks) mv_own_copy(c);
    int rc = mv_run(c);
    mv_own_copy(c); /* if a failed wait ended the loop first */
    if (rc == NUMACOLL_OK) rc = c->rc;
    /* the protocol ran to its end (a failed wait leaves the team broken instead) */
    if (rc == NUMACOLL_OK || rc == c->rc) {
        if (NC_UNLIKELY(s->small_run >= s->give_back) && s->give_back && s->ready)
            mv_state_give_back(s, c->me);
        nc_team_op_leave(c->team);
    }
    return rc;
}

/* a + b, or SIZE_MAX (sizes only name a count in messages) */
static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static int need(mv_call_t *c, int ok, const char *what, size_t bytes)
{
    if (ok || c->rc != NUMACOLL_OK) return ok;
    bad(c, nc_error(NUMACOLL_ERR_ARG, "%s: %s is NULL for %zu bytes (rank %d)", c->who, what,
                    bytes, c->me));
    return 0;
}

/* our own block: copied by call_run or mv_run (own_dst in move_internal.h) */
static void local_copy(mv_call_t *c, void *dst, const void *src, size_t n)
{
    if (!n || dst == src) return;
    c->own_dst = dst, c->own_src = src, c->own_bytes = n;
}

/* ---- allgather(v) ------------------------------------------------------------------ */

static int allgather_any(numacoll_team_t *t, const char *who, int kind, const void *sendbuf,
                         size_t sendbytes, void *recvbuf, const size_t *recvbytes,
                         const size_t *displs, size_t bytes)
{
    mv_call_t c;
    int rc = call_begin(t, who, NC_MOVE_ALLGATHER, 0, 0, &c);
    if (rc) return rc;
    const int P = c.P, me = c.me;
    const int in_place = sendbuf == NUMACOLL_IN_PLACE;
    char *rb = recvbuf;
    if (kind == K_ALLGATHERV) {
        if (!recvbytes)
            bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: recvbytes is NULL (rank %d)", who, me));
        else if (!displs)
            bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: displs is NULL (rank %d)", who, me));
    } else if (bytes > SIZE_MAX / (size_t)P) {
        bad(&c, nc_error(NUMACOLL_ERR_TOOBIG, "%s: %d blocks of %zu bytes exceed the address "
                         "space", who, P, bytes));
    }
    size_t total = 0;
    for (int m = 0; c.rc == NUMACOLL_OK && m < P; m++)
        total = add_sat(total, kind == K_ALLGATHERV ? recvbytes[m] : bytes);
    need(&c, !total || recvbuf, "recvbuf", total);
    size_t mine = kind == K_ALLGATHERV ? (c.rc ? 0 : recvbytes[me]) : bytes;
    if (kind == K_ALLGATHERV && c.rc == NUMACOLL_OK && !in_place && sendbytes != mine)
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: sendbytes=%zu on rank %d, but its recvbytes[%d]"
                         "=%zu; they must be equal", who, sendbytes, me, me, mine));
    need(&c, !mine || in_place || sendbuf, "sendbuf", mine);
    c.sig = signature(kind, -1,
                      kind == K_ALLGATHERV ? (c.rc ? 0 : hash_sizes(recvbytes, P)) : bytes);
#define DISPL(m) (kind == K_ALLGATHERV ? displs[m] : (size_t)(m) * bytes)
#define SIZE(m) (kind == K_ALLGATHERV ? recvbytes[m] : bytes)
    if (P > 1) stream_init(&c, 0, 0, P - 1);
    if (c.rc == NUMACOLL_OK) {
        const char *src = in_place ? rb + DISPL(me) : sendbuf;
        if (!in_place) local_copy(&c, rb + DISPL(me), src, mine);
        if (P > 1) stream_block(&c, 0, src, mine);
        for (int j = 1; j < P; j++) {
            int o = (me + j) % P;
            read_block(&c, o, 0, SIZE(o), rb + DISPL(o));
        }
    } else {
        for (int j = 1; j < P; j++)
            read_block(&c, (me + j) % P, 0, 0, NULL);
    }
#undef DISPL
#undef SIZE
    return call_run(&c);
}

int numacoll_allgather(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes)
{
    return allgather_any(team, "numacoll_allgather", K_ALLGATHER, sendbuf, bytes, recvbuf, NULL,
                         NULL, bytes);
}

int numacoll_allgatherv(numacoll_team_t *team, const void *sendbuf, size_t sendbytes,
                        void *recvbuf, const size_t *recvbytes, const size_t *displs)
{
    return allgather_any(team, "numacoll_allgatherv", K_ALLGATHERV, sendbuf, sendbytes, recvbuf,
                         recvbytes, displs, 0);
}

/* ---- gather(v) --------------------------------------------------------------------- */

static int gather_any(numacoll_team_t *t, const char *who, int kind, const void *sendbuf,
                      size_t sendbytes, void *recvbuf, const size_t *recvbytes,
                      const size_t *displs, int root)
{
    mv_call_t c;
    int rc = call_begin(t, who, NC_MOVE_GATHER, root, 1, &c);
    if (rc) return rc;
    const int P = c.P, me = c.me;
    const int in_place = sendbuf == NUMACOLL_IN_PLACE;
    const int v = kind == K_GATHERV;
    char *rb = recvbuf;
    c.sig = signature(kind, root, v ? 0 : sendbytes);
    if (me != root) {
        if (in_place)
            bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: sendbuf is NUMACOLL_IN_PLACE on rank %d, "
                             "which is not the root (%d); only the root may gather in place",
                             who, me, root));
        need(&c, !sendbytes || sendbuf, "sendbuf", sendbytes);
        stream_init(&c, 0, root, root);
        if (c.rc == NUMACOLL_OK) stream_block(&c, 0, sendbuf, sendbytes);
        return call_run(&c);
    }
    if (v && !recvbytes)
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: recvbytes is NULL at the root (rank %d)", who,
                         me));
    else if (v && !displs)
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: displs is NULL at the root (rank %d)", who, me));
    else if (!v && sendbytes > SIZE_MAX / (size_t)P)
        bad(&c, nc_error(NUMACOLL_ERR_TOOBIG, "%s: %d blocks of %zu bytes exceed the address "
                         "space", who, P, sendbytes));
#define DISPL(m) (v ? displs[m] : (size_t)(m) * sendbytes)
#define SIZE(m) (v ? recvbytes[m] : sendbytes)
    size_t any = 0;
    for (int m = 0; c.rc == NUMACOLL_OK && m < P; m++)
        any = add_sat(any, SIZE(m));
    need(&c, !any || recvbuf, "recvbuf", any);
    if (c.rc == NUMACOLL_OK && v && !in_place && sendbytes != recvbytes[me])
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: sendbytes=%zu at the root (rank %d), but its "
                         "recvbytes[%d]=%zu; they must be equal", who, sendbytes, me, me,
                         recvbytes[me]));
    need(&c, in_place || !sendbytes || sendbuf, "sendbuf", sendbytes);
    for (int j = 1; j < P; j++) {
        int o = (me + j) % P;
        if (c.rc == NUMACOLL_OK) read_block(&c, o, 0, SIZE(o), rb + DISPL(o));
        else read_block(&c, o, 0, 0, NULL);
    }
    if (c.rc == NUMACOLL_OK && !in_place) local_copy(&c, rb + DISPL(me), sendbuf, SIZE(me));
#undef DISPL
#undef SIZE
    return call_run(&c);
}

int numacoll_gather(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes,
                    int root)
{
    return gather_any(team, "numacoll_gather", K_GATHER, sendbuf, bytes, recvbuf, NULL, NULL,
                      root);
}

int numacoll_gatherv(numacoll_team_t *team, const void *sendbuf, size_t sendbytes, void *recvbuf,
                     const size_t *recvbytes, const size_t *displs, int root)
{
    return gather_any(team, "numacoll_gatherv", K_GATHERV, sendbuf, sendbytes, recvbuf, recvbytes,
                      displs, root);
}

/* ---- scatter(v) -------------------------------------------------------------------- */

static int scatter_any(numacoll_team_t *t, const char *who, int kind, const void *sendbuf,
                       const size_t *sendbytes, const size_t *displs, void *recvbuf,
                       size_t recvbytes, int root)
{
    mv_call_t c;
    int rc = call_begin(t, who, NC_MOVE_SCATTER, root, 1, &c);
    if (rc) return rc;
    const int P = c.P, me = c.me;
    const int in_place = recvbuf == (void *)NUMACOLL_IN_PLACE;
    const int v = kind == K_SCATTERV;
    const char *sb = sendbuf;
    c.sig = signature(kind, root, v ? 0 : recvbytes);
    if (me != root) {
        if (in_place)
            bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: recvbuf is NUMACOLL_IN_PLACE on rank %d, "
                             "which is not the root (%d); only the root may scatter in place",
                             who, me, root));
        need(&c, !recvbytes || recvbuf, "recvbuf", recvbytes);
        read_block(&c, root, 1, c.rc ? 0 : recvbytes, recvbuf);
        return call_run(&c);
    }
    if (v && !sendbytes)
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: sendbytes is NULL at the root (rank %d)", who,
                         me));
    else if (v && !displs)
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: displs is NULL at the root (rank %d)", who, me));
    else if (!v && recvbytes > SIZE_MAX / (size_t)P)
        bad(&c, nc_error(NUMACOLL_ERR_TOOBIG, "%s: %d blocks of %zu bytes exceed the address "
                         "space", who, P, recvbytes));
#define DISPL(m) (v ? displs[m] : (size_t)(m) * recvbytes)
#define SIZE(m) (v ? sendbytes[m] : recvbytes)
    size_t any = 0;
    for (int m = 0; c.rc == NUMACOLL_OK && m < P; m++)
        any = add_sat(any, SIZE(m));
    need(&c, !any || sendbuf, "sendbuf", any);
    if (c.rc == NUMACOLL_OK && v && !in_place && recvbytes != sendbytes[me])
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: recvbytes=%zu at the root (rank %d), but its "
                         "sendbytes[%d]=%zu; they must be equal", who, recvbytes, me, me,
                         sendbytes[me]));
    need(&c, in_place || !recvbytes || recvbuf, "recvbuf", recvbytes);
    if (P > 1) stream_init(&c, 1, 0, P - 1);
    for (int d = 0; c.rc == NUMACOLL_OK && P > 1 && d < P; d++)
        if (d != me) stream_block(&c, mv_entry_of(me, d), sb + DISPL(d), SIZE(d));
    if (c.rc == NUMACOLL_OK && !in_place) local_copy(&c, recvbuf, sb + DISPL(me), SIZE(me));
#undef DISPL
#undef SIZE
    return call_run(&c);
}

int numacoll_scatter(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes,
                     int root)
{
    return scatter_any(team, "numacoll_scatter", K_SCATTER, sendbuf, NULL, NULL, recvbuf, bytes,
                       root);
}

int numacoll_scatterv(numacoll_team_t *team, const void *sendbuf, const size_t *sendbytes,
                      const size_t *displs, void *recvbuf, size_t recvbytes, int root)
{
    return scatter_any(team, "numacoll_scatterv", K_SCATTERV, sendbuf, sendbytes, displs, recvbuf,
                       recvbytes, root);
}

/* ---- alltoall(v) ------------------------------------------------------------------- */

static int alltoall_any(numacoll_team_t *t, const char *who, int kind, const void *sendbuf,
                        const size_t *sendbytes, const size_t *sdispls, void *recvbuf,
                        const size_t *recvbytes, const size_t *rdispls, size_t bytes)
{
    mv_call_t c;
    int rc = call_begin(t, who, NC_MOVE_ALLTOALL, 0, 0, &c);
    if (rc) return rc;
    const int P = c.P, me = c.me;
    const int in_place = sendbuf == NUMACOLL_IN_PLACE;
    const int v = kind == K_ALLTOALLV;
    char *rb = recvbuf, *copy = NULL;
    c.sig = signature(kind, -1, v ? 0 : bytes);
    if (v && !recvbytes)
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: recvbytes is NULL (rank %d)", who, me));
    else if (v && !rdispls)
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: rdispls is NULL (rank %d)", who, me));
    else if (v && !in_place && !sendbytes)
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: sendbytes is NULL (rank %d)", who, me));
    else if (v && !in_place && !sdispls)
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: sdispls is NULL (rank %d)", who, me));
    else if (!v && bytes > SIZE_MAX / (size_t)P)
        bad(&c, nc_error(NUMACOLL_ERR_TOOBIG, "%s: %d blocks of %zu bytes exceed the address "
                         "space", who, P, bytes));
    /* in place: the blocks to send are where the received ones go (MPI: sizes and
     * displacements of the receive side) */
    const size_t *ss = in_place ? recvbytes : sendbytes, *sd = in_place ? rdispls : sdispls;
#define RDISPL(m) (v ? rdispls[m] : (size_t)(m) * bytes)
#define RSIZE(m) (v ? recvbytes[m] : bytes)
#define SDISPL(m) (v ? sd[m] : (size_t)(m) * bytes)
#define SSIZE(m) (v ? ss[m] : bytes)
    size_t rany = 0, sany = 0, extent = 0;
    for (int m = 0; c.rc == NUMACOLL_OK && m < P; m++) {
        rany = add_sat(rany, RSIZE(m)), sany = add_sat(sany, SSIZE(m));
        if (RSIZE(m) && RDISPL(m) + RSIZE(m) > extent) extent = RDISPL(m) + RSIZE(m);
    }
    need(&c, !rany || recvbuf, "recvbuf", rany);
    need(&c, in_place || !sany || sendbuf, "sendbuf", sany);
    if (c.rc == NUMACOLL_OK && SSIZE(me) != RSIZE(me))
        bad(&c, nc_error(NUMACOLL_ERR_ARG, "%s: rank %d sends itself %zu bytes but expects %zu; "
                         "they must be equal", who, me, SSIZE(me), RSIZE(me)));
    const char *src = sendbuf;
    if (c.rc == NUMACOLL_OK && in_place && P > 1 && extent) {
        /* our input, before the blocks we receive overwrite it */
        copy = malloc(extent);
        if (!copy) bad(&c, nc_error(NUMACOLL_ERR_NOMEM, "%s: out of memory for a copy of %zu "
                                    "bytes (in place)", who, extent));
        else memcpy(copy, rb, extent);
        src = copy;
    }
    if (P > 1) stream_init(&c, 1, 0, P - 1);
    for (int d = 0; c.rc == NUMACOLL_OK && P > 1 && d < P; d++)
        if (d != me) stream_block(&c, mv_entry_of(me, d), src + SDISPL(d), SSIZE(d));
    if (c.rc == NUMACOLL_OK && !in_place) local_copy(&c, rb + RDISPL(me), src + SDISPL(me), RSIZE(me));
    /* rotated: member m starts with m + 1, so that the owners' first readers differ */
    for (int j = 1; j < P; j++) {
        int o = (me + j) % P;
        if (c.rc == NUMACOLL_OK) read_block(&c, o, 1, RSIZE(o), rb + RDISPL(o));
        else read_block(&c, o, 1, 0, NULL);
    }
#undef RDISPL
#undef RSIZE
#undef SDISPL
#undef SSIZE
    rc = call_run(&c);
    free(copy); /* after the call: single-copy readers are done with it */
    return rc;
}

int numacoll_alltoall(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes)
{
    return alltoall_any(team, "numacoll_alltoall", K_ALLTOALL, sendbuf, NULL, NULL, recvbuf, NULL,
                        NULL, bytes);
}

int numacoll_alltoallv(numacoll_team_t *team, const void *sendbuf, const size_t *sendbytes,
                       const size_t *sdispls, void *recvbuf, const size_t *recvbytes,
                       const size_t *rdispls)
{
    return alltoall_any(team, "numacoll_alltoallv", K_ALLTOALLV, sendbuf, sendbytes, sdispls,
                        recvbuf, recvbytes, rdispls, 0);
}
