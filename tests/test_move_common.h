/*
 * One checked call of a data-movement collective (tests/test_move*.c): the blocks follow a
 * pattern of (owner, destination, position), receive buffers start as canaries, and after
 * the call every received byte must be its owner's and every other byte of the buffer (the
 * gaps between displacements, the tail, a non-root's buffer) its canary.
 */
#ifndef TEST_MOVE_COMMON_H
#define TEST_MOVE_COMMON_H

#include <numacoll/numacoll.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { ALLGATHER, ALLGATHERV, GATHER, GATHERV, SCATTER, SCATTERV, ALLTOALL, ALLTOALLV,
               NKINDS } kind_t;
static const char *const kind_names[NKINDS] = {"allgather", "allgatherv", "gather", "gatherv",
                                               "scatter", "scatterv", "alltoall", "alltoallv"};

typedef struct mcase {
    kind_t kind;
    size_t b;      /* block size (v-forms: the base of the uneven sizes) */
    int root;      /* -1 without */
    int in_place;
    unsigned seed;
    int pad;
} mcase_t;

enum { MC_MAXP = 64, MC_GAP = 7, MC_TAIL = 64 };
#define MC_CANARY 0xA5

static int mc_is_v(kind_t k)
{
    return k == ALLGATHERV || k == GATHERV || k == SCATTERV || k == ALLTOALLV;
}

/* size of the block owner @p o sends destination @p d: uneven with zeros for the v-forms
 * (symmetric in o and d for alltoallv in place, as MPI requires there) */
static size_t mc_blk(const mcase_t *c, int o, int d)
{
    if (!mc_is_v(c->kind)) return c->b;
    unsigned x;
    switch (c->kind) {
    case ALLGATHERV:
    case GATHERV: x = (unsigned)o; break;
    case SCATTERV: x = (unsigned)d; break;
    default: x = c->in_place ? (unsigned)(o + d) : (unsigned)(o * 3 + d); break;
    }
    if ((x * 3 + c->seed) % 4 == 1) return 0;
    return c->b + (x * 5 + c->seed) % 11;
}

static unsigned char mc_val(const mcase_t *c, int o, int d, size_t i)
{
    if (c->kind <= GATHERV) d = 0; /* one block for every reader */
    return (unsigned char)((unsigned)(o + 1) * 37u + (unsigned)(d + 1) * 11u + (unsigned)i * 7u +
                           (unsigned)(i >> 9) + c->seed);
}

/* a buffer of P blocks: v-forms in reverse order with MC_GAP bytes before each, others
 * back to back; @p size[j] given */
typedef struct mc_layout {
    size_t size[MC_MAXP], displ[MC_MAXP], total;
} mc_layout_t;

static void mc_place(const mcase_t *c, int P, mc_layout_t *L)
{
    if (!mc_is_v(c->kind)) {
        for (int j = 0; j < P; j++)
            L->displ[j] = (size_t)j * c->b;
        L->total = (size_t)P * c->b;
        return;
    }
    size_t pos = MC_GAP;
    for (int j = P - 1; j >= 0; j--) {
        L->displ[j] = pos;
        pos += L->size[j] + MC_GAP;
    }
    L->total = pos;
}

static void mc_fill(const mcase_t *c, char *buf, size_t n, int o, int d)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)mc_val(c, o, d, i);
}

/* every byte of @p buf (total + MC_TAIL) is its block's or the canary: 0 or 1 */
static int mc_check(const mcase_t *c, int me, int i, const char *buf, size_t total,
                    const mc_layout_t *L, int P, int have_blocks, int recv_dest_is_me)
{
    unsigned char *seen = calloc(total + MC_TAIL, 1);
    int bad = 0;
    for (int j = 0; have_blocks && j < P; j++) {
        for (size_t x = 0; x < L->size[j]; x++) {
            unsigned char want = recv_dest_is_me ? mc_val(c, j, me, x) : mc_val(c, me, j, x);
            unsigned char got = (unsigned char)buf[L->displ[j] + x];
            seen[L->displ[j] + x] = 1;
            if (got != want && !bad++)
                fprintf(stderr, "rank %d of %d, case %d (%s of %zu, root %d, in place %d): "
                        "block of rank %d, byte %zu: %#x, expected %#x\n", me, P, i,
                        kind_names[c->kind], c->b, c->root, c->in_place, j, x, got, want);
        }
    }
    for (size_t x = 0; x < total + MC_TAIL; x++)
        if (!seen[x] && (unsigned char)buf[x] != MC_CANARY && !bad++)
            fprintf(stderr, "rank %d of %d, case %d (%s of %zu, root %d, in place %d): byte %zu "
                    "outside the blocks changed to %#x\n", me, P, i, kind_names[c->kind], c->b,
                    c->root, c->in_place, x, (unsigned char)buf[x]);
    free(seen);
    return bad != 0;
}

/* Run case @p c as member @p me of @p P on @p t and check it: 0 if right */
static int mc_run(numacoll_team_t *t, int me, int P, const mcase_t *c, int i)
{
    mc_layout_t in, out; /* our send buffer's blocks (per destination), receive (per owner) */
    memset(&in, 0, sizeof in), memset(&out, 0, sizeof out);
    const kind_t k = c->kind;
    const int v = mc_is_v(k);
    const int gets = k == ALLGATHER || k == ALLGATHERV || k == ALLTOALL || k == ALLTOALLV ||
                     ((k == GATHER || k == GATHERV) && me == c->root) || k == SCATTER ||
                     k == SCATTERV;
    for (int j = 0; j < P; j++) {
        switch (k) {
        case ALLGATHER: case ALLGATHERV: case GATHER: case GATHERV:
            in.size[j] = j == 0 ? mc_blk(c, me, 0) : 0;
            out.size[j] = mc_blk(c, j, 0);
            break;
        case SCATTER: case SCATTERV:
            in.size[j] = mc_blk(c, c->root, j);
            out.size[j] = j == 0 ? mc_blk(c, c->root, me) : 0;
            break;
        default:
            in.size[j] = mc_blk(c, me, j);
            out.size[j] = mc_blk(c, j, me);
            break;
        }
    }
    int single_out = k == SCATTER || k == SCATTERV; /* one block received */
    int single_in = k <= GATHERV;                   /* one block sent */
    if (single_in) {
        in.displ[0] = 0, in.total = in.size[0];
        for (int j = 1; j < P; j++) in.size[j] = 0, in.displ[j] = 0;
    } else {
        mc_place(c, P, &in);
    }
    if (single_out) {
        out.displ[0] = 0, out.total = out.size[0];
    } else {
        mc_place(c, P, &out);
    }
    char *sb = malloc(in.total + 1), *rb = malloc(out.total + MC_TAIL);
    if (!sb || !rb) return 1;
    memset(sb, 0x5a, in.total + 1);
    memset(rb, MC_CANARY, out.total + MC_TAIL);
    if (single_in) mc_fill(c, sb, in.size[0], me, 0);
    else
        for (int j = 0; j < P; j++)
            mc_fill(c, sb + in.displ[j], in.size[j], k == SCATTER || k == SCATTERV ? c->root : me,
                    j);
    size_t counts[MC_MAXP], rcounts[MC_MAXP];
    for (int j = 0; j < P; j++)
        counts[j] = in.size[j], rcounts[j] = out.size[j];
    const void *send = sb;
    void *recv = rb;
    int rc = -100;
    const int root_here = me == c->root;
    /* in place: our own block already where it belongs */
    if (c->in_place) {
        switch (k) {
        case ALLGATHER: case ALLGATHERV:
            memcpy(rb + out.displ[me], sb, out.size[me]);
            send = NUMACOLL_IN_PLACE;
            break;
        case GATHER: case GATHERV:
            if (root_here) memcpy(rb + out.displ[me], sb, out.size[me]), send = NUMACOLL_IN_PLACE;
            break;
        case SCATTER: case SCATTERV:
            if (root_here) recv = (void *)NUMACOLL_IN_PLACE;
            break;
        default: /* alltoall(v): the send layout is the receive layout (symmetric sizes) */
            for (int j = 0; j < P; j++)
                memcpy(rb + in.displ[j], sb + in.displ[j], in.size[j]);
            send = NUMACOLL_IN_PLACE;
            break;
        }
    }
    switch (k) {
    case ALLGATHER: rc = numacoll_allgather(t, send, recv, c->b); break;
    case ALLGATHERV:
        rc = numacoll_allgatherv(t, send, in.size[0], recv, rcounts, out.displ);
        break;
    case GATHER: rc = numacoll_gather(t, send, root_here ? recv : (me & 1 ? NULL : recv), c->b,
                                      c->root);
        break;
    case GATHERV:
        rc = numacoll_gatherv(t, send, in.size[0], recv, root_here ? rcounts : NULL,
                              root_here ? out.displ : NULL, c->root);
        break;
    case SCATTER: rc = numacoll_scatter(t, root_here ? send : NULL, recv, c->b, c->root); break;
    case SCATTERV:
        rc = numacoll_scatterv(t, root_here ? send : NULL, root_here ? counts : NULL,
                               root_here ? in.displ : NULL, recv, out.size[0], c->root);
        break;
    case ALLTOALL: rc = numacoll_alltoall(t, send, recv, c->b); break;
    case ALLTOALLV:
        rc = numacoll_alltoallv(t, send, c->in_place ? NULL : counts,
                                c->in_place ? NULL : in.displ, recv, rcounts, out.displ);
        break;
    default: break;
    }
    (void)v;
    int bad = 0;
    if (rc != NUMACOLL_OK) {
        fprintf(stderr, "rank %d of %d, case %d (%s of %zu, root %d, in place %d): %s: %s\n", me,
                P, i, kind_names[k], c->b, c->root, c->in_place, numacoll_status_name(rc),
                numacoll_last_error());
        bad = 1;
    } else if ((k == SCATTER || k == SCATTERV) && root_here && c->in_place) {
        bad = mc_check(c, me, i, rb, 0, &out, 1, 0, 1); /* untouched */
    } else if (single_out) {
        /* the one block: destination me, owner root */
        mcase_t cc = *c;
        unsigned char *r = (unsigned char *)rb;
        for (size_t x = 0; x < out.size[0] && !bad; x++)
            if (r[x] != mc_val(&cc, c->root, me, x)) {
                fprintf(stderr, "rank %d of %d, case %d (%s of %zu, root %d): byte %zu: %#x, "
                        "expected %#x\n", me, P, i, kind_names[k], c->b, c->root, x, r[x],
                        mc_val(&cc, c->root, me, x));
                bad = 1;
            }
        for (size_t x = out.size[0]; x < out.size[0] + MC_TAIL && !bad; x++)
            if (r[x] != MC_CANARY) {
                fprintf(stderr, "rank %d of %d, case %d (%s): byte %zu past the block changed\n",
                        me, P, i, kind_names[k], x);
                bad = 1;
            }
    } else {
        bad = mc_check(c, me, i, rb, out.total, &out, P, gets, 1);
    }
    free(sb), free(rb);
    return bad;
}

#endif
