/*
 * MPI-level test of MPI_Alltoall, MPI_Alltoallv and MPI_Alltoallw (and MPI-4's _c forms
 * where the MPI has them) under the preload.
 *
 *   mpi_alltoall_test matrix MAXBYTES
 *       block sizes 0 B .. MAXBYTES per pair including odd ones; alltoall and alltoallv,
 *       in place and not; alltoallv with uneven counts, empty blocks and displacements that
 *       leave gaps and run backwards; a vector type (2 ints of every 4: not contiguous) on
 *       the send or the receive side against MPI_INT on the other. Alltoallw (up to 256
 *       KiB a pair): uneven blocks with empty ones, byte displacements with odd gaps, and a
 *       datatype per block mixing MPI_INT, MPI_DOUBLE, a contiguous and a vector type on
 *       either side, in place and not, blocks in separate objects, and (np >= 3) on an
 *       intercommunicator (the MPI's)
 *   mpi_alltoall_test mismatch
 *       a rank whose alltoallv (then alltoallw) receive count differs from what its owner
 *       sends: that rank's call fails (an MPI error with numacoll's message, no hang) and the
 *       next calls work
 *   mpi_alltoall_test kill before|in
 *       the last rank dies (SIGKILL) before or inside a loop of alltoalls (blocks of 64 B and
 *       64 KiB a pair in turn: the slots and single copy); the others must return an error
 *       naming it (run by tests/mpi/reduce_kill.sh with KILL_COLL=alltoall)
 *
 * Every rank computes what every block must hold (a function of the seed, the sending and
 * the receiving rank and the byte's position), so results are checked exactly; every byte
 * of a receive buffer outside the received blocks (gaps, bytes a vector type skips, a tail)
 * must keep its canary value, and send buffers must be unchanged. Each call must be seen by
 * the layer (its calls counter + 1) and, on a flat communicator, be numacoll's (numacoll
 * counter + 1; the staged counter + 1 exactly when this rank had a vector type); on a
 * hierarchical one (NUMACOLL_FAKE_NODES) the MPI's own (numacoll counter unchanged).
 */
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test_util.h"

enum { CANARY = 0x5A, TAIL = 64 };
enum { T_BYTE, T_INT, T_VEC, T_COUNT };
static MPI_Datatype g_types[T_COUNT];
static const char *const t_names[T_COUNT] = {"MPI_BYTE", "MPI_INT", "vector(2 x int, stride 2)"};
static size_t t_size(int t) { return t == T_BYTE ? 1 : t == T_INT ? 4 : 8; }
static size_t t_ext(int t) { return t == T_VEC ? 16 : t_size(t); }
/* where packed byte @p i of a run of elements lies in the buffer */
static size_t t_at(int t, size_t i)
{
    if (t != T_VEC) return i;
    size_t j = i % 8;
    return i / 8 * 16 + (j < 4 ? j : 8 + j - 4);
}

static int g_mode; /* numacoll_mpi_comm_mode(MPI_COMM_WORLD): 0 native, 1 flat, 2 hier */
static uint64_t g_seed;

/* byte @p i of the block rank @p o sends rank @p d */
static inline unsigned char gen(int o, int d, size_t i)
{
    uint64_t x = g_seed + (uint64_t)o * 0x9E3779B97F4A7C15ull + (uint64_t)d * 0xBF58476D1CE4E5B9ull;
    return (unsigned char)(i ^ (i >> 8) * 31u ^ (i >> 16) * 17u ^ x ^ (x >> 29));
}

typedef struct {
    int v, use_c, in_place, stype, rtype;
    size_t n; /* alltoall: bytes a pair; alltoallv: the base of the uneven sizes */
} case_t;

/* the unit both sides' element sizes divide */
static size_t unit_of(const case_t *c) { return c->stype == T_BYTE && c->rtype == T_BYTE ? 1 : 8; }

/* bytes from rank o to rank d: alltoall c->n; alltoallv uneven, symmetric (in place needs
 * it), empty where o + d is a multiple of 4 */
static size_t pair_bytes(const case_t *c, int o, int d)
{
    const size_t u = unit_of(c);
    if (!c->v) return c->n / u * u;
    if ((o + d) % 4 == 0) return 0;
    size_t b = c->n * (size_t)((o * d + o + d) % 3 + 1) / 3 + u * (size_t)(o + d);
    return b / u * u;
}

/* one side's layout in elements of type t: block r at displs[r] (elements), counts[r] elements;
 * @p back: blocks in reverse rank order; gaps of 1 + r elements between them. Returns the
 * buffer's bytes (with the tail). */
static size_t layout(const case_t *c, int t, int me, int is_send, int back, MPI_Count *counts,
                     MPI_Aint *displs)
{
    MPI_Aint off = 1; /* a gap before the first block too */
    for (int k = 0; k < g_size; k++) {
        int r = back ? g_size - 1 - k : k;
        size_t b = is_send ? pair_bytes(c, me, r) : pair_bytes(c, r, me);
        counts[r] = (MPI_Count)(b / t_size(t));
        displs[r] = c->v ? off : (MPI_Aint)r * counts[r];
        off = displs[r] + counts[r] + (c->v ? 1 + r : 0);
    }
    return (size_t)off * t_ext(t) + TAIL;
}

static void put(unsigned char *buf, int t, MPI_Aint displ, int o, int d, size_t b)
{
    unsigned char *at = buf + (size_t)displ * t_ext(t);
    for (size_t i = 0; i < b; i++)
        at[t_at(t, i)] = gen(o, d, i);
}

static size_t g_calls, g_ran;

static void run_case(const case_t *c)
{
    const int P = g_size, me = g_rank;
    MPI_Count *sc = calloc((size_t)P * 4, sizeof *sc);
    MPI_Aint *sd = calloc((size_t)P * 2, sizeof *sd), *rd = sd + P;
    MPI_Count *rc = sc + P;
    int *isc = calloc((size_t)P * 4, sizeof *isc), *isd = isc + P, *irc = isc + 2 * P,
        *ird = isc + 3 * P;
    const int st = c->in_place ? c->rtype : c->stype;
    size_t sbytes = layout(c, st, me, 1, 0, sc, sd);
    size_t rbytes = layout(c, c->rtype, me, 0, c->v, rc, rd);
    if (c->in_place) sbytes = layout(c, c->rtype, me, 1, c->v, sc, sd); /* recvbuf's own */
    unsigned char *sbuf = malloc(sbytes), *scopy = malloc(sbytes), *rbuf = malloc(rbytes),
                  *want = malloc(rbytes);
    memset(sbuf, CANARY, sbytes);
    memset(rbuf, CANARY, rbytes);
    memset(want, CANARY, rbytes);
    for (int r = 0; r < P; r++) {
        if (c->in_place)
            put(rbuf, c->rtype, rd[r], me, r, pair_bytes(c, me, r));
        else
            put(sbuf, st, sd[r], me, r, pair_bytes(c, me, r));
        put(want, c->rtype, rd[r], r, me, pair_bytes(c, r, me));
        isc[r] = (int)sc[r], isd[r] = (int)sd[r], irc[r] = (int)rc[r], ird[r] = (int)rd[r];
    }
    memcpy(scopy, sbuf, sbytes);
    const void *send = c->in_place ? MPI_IN_PLACE : sbuf;
    MPI_Datatype S = g_types[st], R = g_types[c->rtype];
    stats_t s0 = get_stats();
    int err;
    if (!c->v && !c->use_c)
        err = MPI_Alltoall(send, isc[0], S, rbuf, irc[0], R, MPI_COMM_WORLD);
    else if (c->v && !c->use_c)
        err = MPI_Alltoallv(send, isc, isd, S, rbuf, irc, ird, R, MPI_COMM_WORLD);
#if MPI_VERSION >= 4
    else if (!c->v)
        err = MPI_Alltoall_c(send, sc[0], S, rbuf, rc[0], R, MPI_COMM_WORLD);
    else
        err = MPI_Alltoallv_c(send, sc, sd, S, rbuf, rc, rd, R, MPI_COMM_WORLD);
#else
    else
        err = MPI_ERR_OTHER;
#endif
    stats_t s1 = get_stats();
    const char *name = c->v ? "MPI_Alltoallv" : "MPI_Alltoall";
    char what[200];
    snprintf(what, sizeof what, "%s%s n %zu%s send %s recv %s", name, c->use_c ? "_c" : "",
             c->n, c->in_place ? " in place" : "", t_names[st], t_names[c->rtype]);
    CHECK(err == MPI_SUCCESS, "%s: rc %d", what, err);
    for (size_t i = 0; i < rbytes; i++)
        if (rbuf[i] != want[i]) {
            CHECK(0, "%s: received byte %zu is 0x%02x, want 0x%02x", what, i, rbuf[i], want[i]);
            break;
        }
    if (!c->in_place) CHECK(!memcmp(sbuf, scopy, sbytes), "%s: the send buffer changed", what);
    uint64_t calls = c->v ? s1.alltoallv_calls - s0.alltoallv_calls
                          : s1.alltoall_calls - s0.alltoall_calls;
    uint64_t ran = c->v ? s1.alltoallv_numacoll - s0.alltoallv_numacoll
                        : s1.alltoall_numacoll - s0.alltoall_numacoll;
    uint64_t staged = s1.alltoall_staged - s0.alltoall_staged;
    CHECK(calls == 1, "%s: the layer saw %llu calls", what, (unsigned long long)calls);
    CHECK(ran == (g_mode == 1), "%s: numacoll ran %llu of it (communicator mode %d)", what,
          (unsigned long long)ran, g_mode);
    size_t mine = 0; /* a rank with no bytes to send or receive packs nothing */
    for (int r = 0; r < P; r++)
        mine += pair_bytes(c, me, r) + pair_bytes(c, r, me);
    const int vec = (st == T_VEC || c->rtype == T_VEC) && mine;
    if (g_mode == 1) CHECK(staged == (uint64_t)vec, "%s: staged %llu", what, (unsigned long long)staged);
    g_calls++, g_ran += ran;
    free(sbuf), free(scopy), free(rbuf), free(want);
    free(sc), free(sd), free(isc);
}

/* ---- MPI_Alltoallw ---------------------------------------------------------------------- */

enum { W_INT, W_DBL, W_CONT, W_VEC, W_TYPES };
static MPI_Datatype g_wtypes[W_TYPES];
static const char *const w_names[W_TYPES] = {"MPI_INT", "MPI_DOUBLE", "contiguous(3 x int)",
                                             "vector(2 x int, stride 2)"};
static size_t w_size(int t) { return t == W_INT ? 4 : t == W_CONT ? 12 : 8; }
static size_t w_ext(int t) { return t == W_VEC ? 16 : w_size(t); }

typedef struct {
    int use_c, in_place, mix;
    size_t n; /* the base of the uneven sizes */
} wcase_t;

/* bytes from rank o to rank d: a multiple of 24 (every type's size divides it), uneven,
 * symmetric (in place needs it), empty where o + d is 1 mod 3 */
static size_t w_bytes(const wcase_t *c, int o, int d)
{
    if ((o + d) % 3 == 1) return 0;
    size_t b = c->n * (size_t)((o * d + o + d) % 3 + 1) / 3 + 24 * (size_t)(o + d);
    return b / 24 * 24;
}
/* the datatype of rank @p me's block for / from rank @p r: the send or the receive side */
static int w_type(const wcase_t *c, int send, int me, int r)
{
    return send ? (me + 2 * r + c->mix) % W_TYPES : (3 * r + me + c->mix + 1) % W_TYPES;
}

/* one side's layout: block r at byte displacement displs[r]; in reverse rank order when
 * @p back; odd gaps between blocks (and before the first, but for one rank: Open MPI 4.1's
 * own alltoallw on a communicator of one, coll/self, multiplies the displacement by the
 * datatype's extent). Returns the buffer's bytes. */
static size_t w_layout(const wcase_t *c, int me, int send, int back, const int *types,
                       MPI_Count *counts, MPI_Aint *displs)
{
    MPI_Aint off = g_size > 1 ? 3 : 0;
    for (int k = 0; k < g_size; k++) {
        int r = back ? g_size - 1 - k : k;
        size_t b = send ? w_bytes(c, me, r) : w_bytes(c, r, me);
        counts[r] = (MPI_Count)(b / w_size(types[r]));
        displs[r] = off;
        off += (MPI_Aint)((size_t)counts[r] * w_ext(types[r])) + 1 + 2 * (r % 3);
    }
    return (size_t)off + TAIL;
}

static void w_put(unsigned char *buf, int t, MPI_Aint displ, int o, int d, size_t b)
{
    for (size_t i = 0; i < b; i++)
        buf[(size_t)displ + (t == W_VEC ? t_at(T_VEC, i) : i)] = gen(o, d, i);
}

static size_t g_wcalls, g_wran;

static void run_wcase(const wcase_t *c)
{
    const int P = g_size, me = g_rank;
    MPI_Count *sc = calloc((size_t)P * 2, sizeof *sc), *rc = sc + P;
    MPI_Aint *sd = calloc((size_t)P * 2, sizeof *sd), *rd = sd + P;
    int *ia = calloc((size_t)P * 6, sizeof *ia), *isc = ia, *isd = ia + P, *irc = ia + 2 * P,
        *ird = ia + 3 * P, *st = ia + 4 * P, *rt = ia + 5 * P;
    MPI_Datatype *S = malloc(2 * (size_t)P * sizeof *S), *R = S + P;
    for (int r = 0; r < P; r++) {
        rt[r] = w_type(c, 0, me, r);
        st[r] = c->in_place ? rt[r] : w_type(c, 1, me, r);
        S[r] = g_wtypes[st[r]], R[r] = g_wtypes[rt[r]];
    }
    size_t sbytes = w_layout(c, me, 1, 0, st, sc, sd);
    size_t rbytes = w_layout(c, me, 0, c->mix, rt, rc, rd);
    unsigned char *sbuf = malloc(sbytes), *scopy = malloc(sbytes), *rbuf = malloc(rbytes),
                  *want = malloc(rbytes);
    memset(sbuf, CANARY, sbytes);
    memset(rbuf, CANARY, rbytes);
    memset(want, CANARY, rbytes);
    int vec = 0; /* this rank packs or unpacks a vector block */
    for (int r = 0; r < P; r++) {
        if (c->in_place)
            w_put(rbuf, rt[r], rd[r], me, r, w_bytes(c, me, r));
        else
            w_put(sbuf, st[r], sd[r], me, r, w_bytes(c, me, r));
        w_put(want, rt[r], rd[r], r, me, w_bytes(c, r, me));
        vec |= (st[r] == W_VEC && w_bytes(c, me, r)) || (rt[r] == W_VEC && w_bytes(c, r, me));
        isc[r] = (int)sc[r], isd[r] = (int)sd[r], irc[r] = (int)rc[r], ird[r] = (int)rd[r];
    }
    memcpy(scopy, sbuf, sbytes);
    const void *send = c->in_place ? MPI_IN_PLACE : sbuf;
    stats_t s0 = get_stats();
    int err;
#if MPI_VERSION >= 4
    if (c->use_c)
        err = MPI_Alltoallw_c(send, sc, sd, S, rbuf, rc, rd, R, MPI_COMM_WORLD);
    else
#endif
        err = MPI_Alltoallw(send, isc, isd, S, rbuf, irc, ird, R, MPI_COMM_WORLD);
    stats_t s1 = get_stats();
    char what[200];
    snprintf(what, sizeof what,
             "MPI_Alltoallw%s n %zu%s mix %d (block to rank 0: %s, from it: %s)",
             c->use_c ? "_c" : "", c->n, c->in_place ? " in place" : "", c->mix, w_names[st[0]],
             w_names[rt[0]]);
    CHECK(err == MPI_SUCCESS, "%s: rc %d", what, err);
    for (size_t i = 0; i < rbytes; i++)
        if (rbuf[i] != want[i]) {
            CHECK(0, "%s: received byte %zu is 0x%02x, want 0x%02x", what, i, rbuf[i], want[i]);
            break;
        }
    if (!c->in_place) CHECK(!memcmp(sbuf, scopy, sbytes), "%s: the send buffer changed", what);
    uint64_t calls = s1.alltoallw_calls - s0.alltoallw_calls;
    uint64_t ran = s1.alltoallw_numacoll - s0.alltoallw_numacoll;
    uint64_t staged = s1.alltoall_staged - s0.alltoall_staged;
    CHECK(calls == 1, "%s: the layer saw %llu calls", what, (unsigned long long)calls);
    CHECK(ran == (g_mode == 1), "%s: numacoll ran %llu of it (communicator mode %d)", what,
          (unsigned long long)ran, g_mode);
    if (g_mode == 1)
        CHECK(staged == (uint64_t)vec, "%s: staged %llu", what, (unsigned long long)staged);
    g_wcalls++, g_wran += ran;
    free(sbuf), free(scopy), free(rbuf), free(want);
    free(sc), free(sd), free(ia), free(S);
}

/* Blocks in separate objects: every block of either side in a malloc of its own (8 canary
 * bytes on either side), addressed from MPI_BOTTOM by absolute addresses (@p use_c:
 * MPI_Alltoallw_c) or from the first receive block by MPI_Aint_diff (MPI_Alltoallw, where
 * every rank's distances fit an int: else skipped on every rank) */
static void run_wobjects(int in_place, int use_c)
{
    const int P = g_size, me = g_rank;
    const wcase_t c = {use_c, in_place, 0, 4099};
    unsigned char **sb = calloc(4 * (size_t)P, sizeof *sb), **rb = sb + P, **want = sb + 2 * P,
                  **scopy = sb + 3 * P;
    size_t *len = calloc(2 * (size_t)P, sizeof *len), *slen = len, *rlen = len + P;
    MPI_Count *sc = calloc(2 * (size_t)P, sizeof *sc), *rc = sc + P;
    MPI_Aint *sd = calloc(2 * (size_t)P, sizeof *sd), *rd = sd + P;
    int *ia = calloc(4 * (size_t)P, sizeof *ia);
    MPI_Datatype *S = malloc(2 * (size_t)P * sizeof *S), *R = S + P;
    int fits = 1, all_fit = 0;
    for (int r = 0; r < P; r++) {
        int rt = w_type(&c, 0, me, r), st = in_place ? rt : w_type(&c, 1, me, r);
        S[r] = g_wtypes[st], R[r] = g_wtypes[rt];
        sc[r] = (MPI_Count)(w_bytes(&c, me, r) / w_size(st));
        rc[r] = (MPI_Count)(w_bytes(&c, r, me) / w_size(rt));
        slen[r] = 16 + (size_t)sc[r] * w_ext(st), rlen[r] = 16 + (size_t)rc[r] * w_ext(rt);
        sb[r] = malloc(slen[r]), rb[r] = malloc(rlen[r]), want[r] = malloc(rlen[r]);
        scopy[r] = malloc(slen[r]);
        memset(sb[r], CANARY, slen[r]);
        memset(rb[r], CANARY, rlen[r]);
        memset(want[r], CANARY, rlen[r]);
        w_put(in_place ? rb[r] : sb[r], in_place ? rt : st, 8, me, r, w_bytes(&c, me, r));
        w_put(want[r], rt, 8, r, me, w_bytes(&c, r, me));
        memcpy(scopy[r], sb[r], slen[r]);
        MPI_Get_address(sb[r] + 8, &sd[r]);
        MPI_Get_address(rb[r] + 8, &rd[r]);
    }
    for (int r = 0; r < P; r++) { /* from the first receive block, for the int form */
        MPI_Aint s = MPI_Aint_diff(sd[r], rd[0]), d = MPI_Aint_diff(rd[r], rd[0]);
        fits &= s >= INT_MIN && s <= INT_MAX && d >= INT_MIN && d <= INT_MAX;
        ia[r] = (int)sc[r], ia[P + r] = (int)s, ia[2 * P + r] = (int)rc[r], ia[3 * P + r] = (int)d;
    }
    PMPI_Allreduce(&fits, &all_fit, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    char what[120];
    snprintf(what, sizeof what, "MPI_Alltoallw%s, blocks in separate objects%s",
             use_c ? "_c from MPI_BOTTOM" : "", in_place ? ", in place" : "");
    const int runs = use_c || all_fit;
    int err = MPI_SUCCESS;
    stats_t s0 = get_stats();
#if MPI_VERSION >= 4
    if (use_c)
        err = MPI_Alltoallw_c(in_place ? MPI_IN_PLACE : MPI_BOTTOM, sc, sd, S, MPI_BOTTOM, rc,
                              rd, R, MPI_COMM_WORLD);
#endif
    if (!use_c && all_fit)
        err = MPI_Alltoallw(in_place ? MPI_IN_PLACE : (void *)(rb[0] + 8), ia, ia + P, S,
                            rb[0] + 8, ia + 2 * P, ia + 3 * P, R, MPI_COMM_WORLD);
    stats_t s1 = get_stats();
    if (runs) {
        CHECK(err == MPI_SUCCESS, "%s: rc %d", what, err);
        for (int r = 0; r < P; r++) {
            if (memcmp(rb[r], want[r], rlen[r]))
                CHECK(0, "%s: the block from rank %d is not what it sent", what, r);
            if (!in_place && memcmp(sb[r], scopy[r], slen[r]))
                CHECK(0, "%s: the send block to rank %d changed", what, r);
        }
        uint64_t calls = s1.alltoallw_calls - s0.alltoallw_calls;
        uint64_t ran = s1.alltoallw_numacoll - s0.alltoallw_numacoll;
        CHECK(calls == 1, "%s: the layer saw %llu calls", what, (unsigned long long)calls);
        CHECK(ran == (g_mode == 1), "%s: numacoll ran %llu of it (communicator mode %d)", what,
              (unsigned long long)ran, g_mode);
        g_wcalls++, g_wran += ran;
    } else if (g_rank == 0) {
        printf("matrix: %s skipped (distances over INT_MAX)\n", what);
    }
    for (int r = 0; r < P; r++)
        free(sb[r]), free(rb[r]), free(want[r]), free(scopy[r]);
    free(sb), free(len), free(sc), free(sd), free(ia), free(S);
}

/* An intercommunicator (ranks 0 .. P-2 and rank P-1): the MPI's own alltoallw and alltoallv,
 * whose arrays have the remote group's size (1 on the larger group: the layer must not read
 * them by the local size; ASan builds tell), counted and never numacoll's */
static void run_winter(void)
{
    const int top = g_rank == g_size - 1;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, top, g_rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, top ? 0 : g_size - 1, 77, &inter);
    int rsize = 0, lrank = 0;
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(inter, &lrank);
    int *cnt = malloc((size_t)rsize * sizeof *cnt), *dsp = malloc((size_t)rsize * sizeof *dsp);
    int *in = malloc((size_t)rsize * sizeof *in), *out = malloc((size_t)rsize * sizeof *out);
    MPI_Datatype *types = malloc((size_t)rsize * sizeof *types);
    for (int r = 0; r < rsize; r++)
        cnt[r] = 1, dsp[r] = 4 * r, types[r] = MPI_INT, in[r] = 100 * g_rank + r, out[r] = -1;
    stats_t s0 = get_stats();
    int err = MPI_Alltoallw(in, cnt, dsp, types, out, cnt, dsp, types, inter);
    stats_t s1 = get_stats();
    CHECK(err == MPI_SUCCESS, "MPI_Alltoallw on an intercommunicator: rc %d", err);
    for (int r = 0; r < rsize; r++) {
        int from = top ? r : g_size - 1; /* the remote group's rank r in MPI_COMM_WORLD */
        if (out[r] != 100 * from + lrank)
            CHECK(0, "MPI_Alltoallw on an intercommunicator: got %d from rank %d", out[r], from);
    }
    CHECK(s1.alltoallw_calls - s0.alltoallw_calls == 1 &&
              s1.alltoallw_numacoll == s0.alltoallw_numacoll,
          "MPI_Alltoallw on an intercommunicator: not one call, the MPI's");
    /* the same with MPI_Alltoallv (displacements in ints) */
    for (int r = 0; r < rsize; r++)
        dsp[r] = r, out[r] = -1;
    s0 = get_stats();
    err = MPI_Alltoallv(in, cnt, dsp, MPI_INT, out, cnt, dsp, MPI_INT, inter);
    s1 = get_stats();
    CHECK(err == MPI_SUCCESS, "MPI_Alltoallv on an intercommunicator: rc %d", err);
    for (int r = 0; r < rsize; r++) {
        int from = top ? r : g_size - 1;
        if (out[r] != 100 * from + lrank)
            CHECK(0, "MPI_Alltoallv on an intercommunicator: got %d from rank %d", out[r], from);
    }
    CHECK(s1.alltoallv_calls - s0.alltoallv_calls == 1 &&
              s1.alltoallv_numacoll == s0.alltoallv_numacoll,
          "MPI_Alltoallv on an intercommunicator: not one call, the MPI's");
    free(cnt), free(dsp), free(in), free(out), free(types);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

static void test_wmatrix(size_t max)
{
    static const size_t sizes[] = {0, 1, 100, 4099, 65536, 262147};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes && sizes[k] <= max; k++)
        for (int ip = 0; ip < 2; ip++)
            for (int mix = 0; mix < 2; mix++) {
                /* MPI-4's _c form on every other case where the MPI has it */
                wcase_t c = {MPI_VERSION >= 4 && (k + (size_t)mix + (size_t)ip) % 2, ip, mix,
                             sizes[k]};
                run_wcase(&c);
            }
    /* not on one rank: Open MPI 4.1's coll/self scales the displacements (see w_layout) */
    for (int ip = 0; ip < 2 && g_size > 1; ip++) {
        run_wobjects(ip, 0);
        if (MPI_VERSION >= 4) run_wobjects(ip, 1);
    }
    if (g_size >= 3) run_winter();
    if (g_rank == 0)
        printf("matrix: MPI_Alltoallw: %zu calls checked, %zu of them numacoll's\n", g_wcalls,
               g_wran);
}

static void test_matrix(size_t max)
{
    static const size_t sizes[] = {0, 1, 7, 64, 1000, 4099, 65536, 262147, 1u << 20};
    static const int tp[][2] = {{T_BYTE, T_BYTE}, {T_VEC, T_INT}, {T_INT, T_VEC}};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes && sizes[k] <= max; k++) {
        for (int v = 0; v < 2; v++)
            for (int ip = 0; ip < 2; ip++)
                for (int t = 0; t < 3; t++) {
                    if (ip && t == 1) continue; /* in place: the receive side's type only */
                    /* MPI-4's _c forms on every other case where the MPI has them */
                    int use_c = MPI_VERSION >= 4 && (k + (size_t)t + (size_t)ip) % 2;
                    case_t c = {v, use_c, ip, tp[t][0], tp[t][1], sizes[k]};
                    run_case(&c);
                }
    }
    test_wmatrix(max);
    g_calls += g_wcalls, g_ran += g_wran;
    if (g_rank == 0)
        printf("matrix: %zu calls checked, %zu of them numacoll's (mode %d)\n", g_calls, g_ran,
               g_mode);
}

/* rank 1 (of >= 3) expects one int more from rank 0 than rank 0 sends it */
static void test_mismatch(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int P = g_size, in[64], out[64 * 16];
    int *cnt = malloc(4 * (size_t)P * sizeof *cnt), *sdsp = cnt + P, *rcnt = cnt + 2 * P,
        *rdsp = cnt + 3 * P;
    for (int i = 0; i < 64; i++)
        in[i] = g_rank * 1000 + i;
    for (int r = 0; r < P; r++)
        cnt[r] = 3, sdsp[r] = 3 * r, rcnt[r] = 3, rdsp[r] = 4 * r;
    if (g_rank == 1) rcnt[0] = 4;
    int rc = MPI_Alltoallv(in, cnt, sdsp, MPI_INT, out, rcnt, rdsp, MPI_INT, MPI_COMM_WORLD);
    int failed = rc != MPI_SUCCESS, any = 0;
    PMPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (g_mode == 1) CHECK(any, "an alltoallv with a receive count off by one succeeded everywhere");
    if (g_mode == 1 && g_rank == 1) CHECK(failed, "rank 1's mismatched alltoallv succeeded");
    for (int it = 0; it < 3; it++) {
        rc = MPI_Alltoall(in, 5, MPI_INT, out, 5, MPI_INT, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "alltoall after the mismatch: rc %d", rc);
        for (int r = 0; r < P && rc == MPI_SUCCESS; r++)
            for (int i = 0; i < 5; i++)
                if (out[r * 5 + i] != r * 1000 + g_rank * 5 + i) {
                    CHECK(0, "alltoall after the mismatch: rank %d's element %d is %d", r, i,
                          out[r * 5 + i]);
                    r = P;
                    break;
                }
    }
    if (g_rank == 0)
        printf("mismatch: the bad call %s, the next 3 right\n", any ? "failed" : "passed");
    /* the same with MPI_Alltoallw (MPI_INT blocks, byte displacements), then one right */
    MPI_Datatype *types = malloc((size_t)P * sizeof *types);
    for (int r = 0; r < P; r++)
        types[r] = MPI_INT, sdsp[r] = 12 * r, rdsp[r] = 16 * r;
    rc = MPI_Alltoallw(in, cnt, sdsp, types, out, rcnt, rdsp, types, MPI_COMM_WORLD);
    failed = rc != MPI_SUCCESS, any = 0;
    PMPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (g_mode == 1)
        CHECK(any, "an alltoallw with a receive count off by one succeeded everywhere");
    if (g_mode == 1 && g_rank == 1) CHECK(failed, "rank 1's mismatched alltoallw succeeded");
    rcnt[0] = 3;
    rc = MPI_Alltoallw(in, cnt, sdsp, types, out, rcnt, rdsp, types, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "alltoallw after the mismatch: rc %d", rc);
    for (int r = 0; r < P && rc == MPI_SUCCESS; r++)
        for (int i = 0; i < 3; i++)
            if (out[r * 4 + i] != r * 1000 + g_rank * 3 + i) {
                CHECK(0, "alltoallw after the mismatch: rank %d's element %d is %d", r, i,
                      out[r * 4 + i]);
                r = P;
                break;
            }
    if (g_rank == 0)
        printf("mismatch: the bad alltoallw %s, the next one right\n", any ? "failed" : "passed");
    free(types);
    free(cnt);
}

static void *kill_self_later(void *arg)
{
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kill(getpid(), SIGKILL);
    return arg;
}

/* the last rank dies (SIGKILL) before a loop of alltoalls, or 0.3 s into it; the others
 * must return an error instead of waiting for it */
static void test_kill(const char *when)
{
    /* MPICH's hydra (-disable-auto-cleanup) tells the survivors of a failure with SIGUSR1,
     * whose default action ends them: ignored, so that numacoll's detection is tested */
    signal(SIGUSR1, SIG_IGN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int n = 16384; /* ints a pair at most: 64 KiB */
    int *in = malloc((size_t)g_size * n * sizeof *in);
    int *out = malloc((size_t)g_size * n * sizeof *out);
    for (int i = 0; i < g_size * n; i++)
        in[i] = g_rank + i;
    MPI_Alltoall(in, n, MPI_INT, out, n, MPI_INT, MPI_COMM_WORLD); /* set up */
    printf("kill: rank %d pid %d ready\n", g_rank, (int)getpid());
    fflush(stdout);
    PMPI_Barrier(MPI_COMM_WORLD); /* every rank has said it before one dies */
    const int victim = g_size - 1, inside = !strcmp(when, "in");
    if (g_rank == victim && !inside) raise(SIGKILL);
    pthread_t killer;
    if (g_rank == victim) pthread_create(&killer, NULL, kill_self_later, NULL);
    for (long it = 0;; it++) {
        int cnt = it % 2 ? n : 16;
        int rc = MPI_Alltoall(in, cnt, MPI_INT, out, cnt, MPI_INT, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            printf("kill: rank %d: alltoall %ld failed: %s\n", g_rank, it, msg);
            fflush(stdout);
            _exit(3); /* MPI_Finalize would wait for the dead member */
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "matrix";
    find_stats_fn();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (g_rank == 0) g_seed = (uint64_t)time(NULL) * 2654435761u;
    PMPI_Bcast(&g_seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int (*mode_fn)(MPI_Comm);
    *(void **)&mode_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_mode");
    g_mode = mode_fn ? mode_fn(MPI_COMM_WORLD) : 0;
    if (g_rank == 0)
        printf("%s: seed %llu, %d ranks, communicator mode %d\n", mode,
               (unsigned long long)g_seed, g_size, g_mode);
    CHECK(g_stats_fn, "the preload is not loaded (no numacoll_mpi_stats)");
    g_types[T_BYTE] = MPI_BYTE;
    g_types[T_INT] = MPI_INT;
    MPI_Datatype v;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 16, &g_types[T_VEC]);
    MPI_Type_commit(&g_types[T_VEC]);
    MPI_Type_free(&v);
    g_wtypes[W_INT] = MPI_INT;
    g_wtypes[W_DBL] = MPI_DOUBLE;
    g_wtypes[W_VEC] = g_types[T_VEC];
    MPI_Type_contiguous(3, MPI_INT, &g_wtypes[W_CONT]);
    MPI_Type_commit(&g_wtypes[W_CONT]);
    if (!strcmp(mode, "matrix") && argc > 2)
        test_matrix(strtoull(argv[2], NULL, 0));
    else if (!strcmp(mode, "mismatch"))
        test_mismatch();
    else if (!strcmp(mode, "kill") && argc > 2 &&
             (!strcmp(argv[2], "before") || !strcmp(argv[2], "in")))
        test_kill(argv[2]);
    else {
        if (g_rank == 0) fprintf(stderr, "usage: matrix MAXBYTES | mismatch | kill before|in\n");
        g_fail++;
    }
    MPI_Type_free(&g_types[T_VEC]);
    MPI_Type_free(&g_wtypes[W_CONT]);
    int total = total_failures(MPI_COMM_WORLD);
    if (g_rank == 0) printf("%s: %s (%d failed checks)\n", mode, total ? "FAIL" : "PASS", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
