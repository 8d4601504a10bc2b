/*
 * The soak's reduce-scatter and scan steps (mpi_coll_test soak): MPI_Reduce_scatter_block,
 * MPI_Reduce_scatter (uneven counts, every third member's zero), MPI_Scan or MPI_Exscan on
 * one of the soak's communicators, in place or not, vectors of up to 192 KiB (as the
 * reduction steps, soak_reduce.h). The datatype is any predefined C type of
 * reduce_test_types.h with any op MPI allows on it (numacoll takes them all; a quarter of
 * the steps a floating sum or product, whose bits show the order of the fold), or, one step
 * in 8, a user-defined op that numacoll leaves to the MPI library (decided from the
 * arguments, so alike on every rank): the composition of affine maps x -> a x + b modulo
 * 2^64 on pairs of uint64_t, associative and not commutative, so the library must fold in
 * rank order and any grouping gives the same bits.
 *
 * Every member's input element is a hash of (step, its MPI_COMM_WORLD rank, the element's
 * index in the vector), so each rank folds every member's elements of its own output in
 * rank order (reduce-scatter: all members; scan: members 0 .. r; exscan: 0 .. r - 1) and
 * compares bitwise, except floating sums and products that numacoll did not run on a flat
 * communicator (the MPI library's order, or the hierarchical one grouped by node): there
 * within a few epsilons. Where the MPI library ran a call, the (type, op) pairs whose
 * predefined ops the libraries get wrong (docs/mpi.md: 8- and 16-bit sums saturated by Open
 * MPI 4.1, unsigned MIN/MAX compared as signed by MPICH 4.0 and wrong for unsigned long in
 * Open MPI 4.1) are left unchecked and counted. Canary bytes past the output (in place:
 * past the input vector in recvbuf) must keep their value; MPI_Exscan on rank 0 must leave
 * recvbuf as it was where numacoll ran it (MPI leaves it undefined).
 */
#ifndef NC_SOAK_SCATTER_SCAN_H
#define NC_SOAK_SCATTER_SCAN_H

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test_util.h"
#include "reduce_test_types.h"

enum { SOAK_SS_CANARY = 64, SOAK_SS_USER_OP = -1 };
enum { SOAK_SS_RSB, SOAK_SS_RS, SOAK_SS_SCAN, SOAK_SS_EXSCAN, SOAK_SS_KINDS };
static const char *const soak_ss_names[SOAK_SS_KINDS] = {
    "MPI_Reduce_scatter_block", "MPI_Reduce_scatter", "MPI_Scan", "MPI_Exscan"};

/* what the steps did on this rank (test_soak sums them over the ranks) */
typedef struct {
    long calls[SOAK_SS_KINDS], ours[SOAK_SS_KINDS]; /* made; run by numacoll (counters) */
    long user[SOAK_SS_KINDS]; /* with the user-defined op (the MPI library's) */
    long alone[SOAK_SS_KINDS]; /* ... the others on a communicator of one (the MPI's too) */
    long exact, near, unchecked; /* results: bitwise, within epsilons, a known MPI fault */
    long rank0_kept;                /* exscans whose rank 0 recvbuf was checked untouched */
} soak_ss_tally_t;

static MPI_Datatype soak_ss_affine_t = MPI_DATATYPE_NULL; /* 2 x uint64_t: a, b */
static MPI_Op soak_ss_affine_op = MPI_OP_NULL;

/* y after x: x -> a1 x + b1, then a2 x + b2 = (a1 a2) x + (a2 b1 + b2) (mod 2^64) */
static void soak_ss_affine_then(const uint64_t *x, uint64_t *y)
{
    uint64_t a = x[0] * y[0], b = y[0] * x[1] + y[1];
    y[0] = a, y[1] = b;
}

/* MPI user function: inout = in op inout, in holding the earlier ranks' part */
static void soak_ss_affine_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        soak_ss_affine_then((const uint64_t *)in + 2 * i, (uint64_t *)inout + 2 * i);
}

static uint64_t soak_ss_hash(int step, int world_rank, size_t i)
{
    uint64_t z = ((uint64_t)step << 40) ^ ((uint64_t)world_rank << 28) ^ (uint64_t)i;
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* element @p i of world rank @p w's input in step @p step, of type @p t (NULL: the affine
 * pair: an odd factor, so that products never vanish) */
static void soak_ss_gen(const rtype_t *t, int op, int step, int w, size_t i, void *out)
{
    uint64_t h = soak_ss_hash(step, w, i);
    if (!t) {
        uint64_t v[2] = {h | 1, h * 0x9E3779B97F4A7C15ull + (uint64_t)w};
        memcpy(out, v, sizeof v);
        return;
    }
    rt_gen(t, op, h, out);
}

/* the predefined op of (t, op) is wrong in one of the MPI libraries (see the top) */
static int soak_ss_native_fault(const rtype_t *t, int op)
{
    return t->kind == K_INT &&
           ((t->size <= 2 && op == RT_SUM) || (!t->is_signed && (op == RT_MIN || op == RT_MAX)));
}

static void soak_ss_fini(void)
{
    if (soak_ss_affine_op != MPI_OP_NULL) MPI_Op_free(&soak_ss_affine_op);
    if (soak_ss_affine_t != MPI_DATATYPE_NULL) MPI_Type_free(&soak_ss_affine_t);
}

static uint64_t soak_ss_numacoll(const stats_t *s, int kind)
{
    return kind == SOAK_SS_RSB    ? s->reduce_scatter_block_numacoll
           : kind == SOAK_SS_RS   ? s->reduce_scatter_numacoll
           : kind == SOAK_SS_SCAN ? s->scan_numacoll
                                  : s->exscan_numacoll;
}

/*
 * One step on @p cm (rank @p r of @p p; @p members: their MPI_COMM_WORLD ranks in rank
 * order): kind, type, op and in place from @p rnd, a vector of @p bytes (under 192 KiB) at
 * most; @p buf holds at least 8 MiB.
 * Returns 1 if this rank checked a result.
 */
static int soak_scatter_scan_step(MPI_Comm cm, const int *members, int r, int p, int step,
                                  uint64_t rnd, size_t bytes, unsigned char *buf,
                                  soak_ss_tally_t *tally)
{
    if (rt_count() == 0) rt_init();
    if (soak_ss_affine_op == MPI_OP_NULL) {
        MPI_Type_contiguous(2, MPI_UINT64_T, &soak_ss_affine_t);
        MPI_Type_commit(&soak_ss_affine_t);
        MPI_Op_create(soak_ss_affine_fn, 0, &soak_ss_affine_op);
    }
    const int kind = (int)(rnd % SOAK_SS_KINDS), in_place = (int)((rnd >> 2) & 1);
    const int user = (rnd >> 3) % 8 == 0;
    const rtype_t *t = NULL;
    int op = SOAK_SS_USER_OP;
    if (!user && (rnd >> 6) % 4 == 0) { /* a floating sum or product: the order shows */
        int fl[RT_MAX_TYPES], nf = 0;
        for (int i = 0; i < rt_count(); i++)
            if (rt_get(i)->kind == K_FLOAT) fl[nf++] = i;
        t = rt_get(fl[(rnd >> 8) % (uint64_t)nf]);
        op = (rnd >> 12) & 1 ? RT_PROD : RT_SUM;
    } else if (!user) { /* any type, then one of the ops MPI allows on it */
        t = rt_get((int)((rnd >> 8) % (uint64_t)rt_count()));
        int allowed[RT_OP_COUNT], na = 0;
        for (int o = 0; o < RT_OP_COUNT; o++)
            if (rt_allows(t, o)) allowed[na++] = o;
        op = allowed[(rnd >> 16) % (uint64_t)na];
    }
    const size_t es = t ? t->size : 2 * sizeof(uint64_t);
    const MPI_Datatype dt = t ? t->mpi : soak_ss_affine_t;
    const MPI_Op mop = t ? rt_mpi_op(op) : soak_ss_affine_op;
    const size_t n = bytes / es; /* scan: count; reduce-scatter: the base of the counts */
    int *counts = malloc((size_t)p * sizeof *counts);
    size_t total = 0, off = 0;
    for (int m = 0; m < p; m++) {
        size_t c = n / (size_t)p; /* block */
        if (kind == SOAK_SS_RS)
            c = m % 3 == 1 ? 0 : c / 2 + ((size_t)m * 977 + (rnd >> 32)) % (c - c / 2 + 1);
        else if (kind >= SOAK_SS_SCAN)
            c = n;
        counts[m] = (int)c;
        if (m < r) off += c;
        if (kind < SOAK_SS_SCAN || m == 0) total += c;
    }
    if (kind >= SOAK_SS_SCAN) off = 0;
    const size_t mine = (size_t)counts[r];
    /* send: the input vector; recv: the output (in place: the input vector first) */
    unsigned char *send = buf, *recv = buf + ((size_t)4 << 20);
    unsigned char *in = in_place ? recv : send;
    const size_t rbytes = (in_place ? total : mine) * es;
    memset(recv, 0xEE, rbytes + SOAK_SS_CANARY);
    for (size_t i = 0; i < total; i++)
        soak_ss_gen(t, op, step, members[r], i, in + i * es);
    unsigned char *before = malloc(rbytes + 1);
    memcpy(before, recv, rbytes);
    const void *sb = in_place ? MPI_IN_PLACE : send;
    stats_t s0 = get_stats();
    int rc;
    switch (kind) {
    case SOAK_SS_RSB: rc = MPI_Reduce_scatter_block(sb, recv, counts[0], dt, mop, cm); break;
    case SOAK_SS_RS: rc = MPI_Reduce_scatter(sb, recv, counts, dt, mop, cm); break;
    case SOAK_SS_SCAN: rc = MPI_Scan(sb, recv, (int)n, dt, mop, cm); break;
    default: rc = MPI_Exscan(sb, recv, (int)n, dt, mop, cm);
    }
    stats_t s1 = get_stats();
    const int ours = soak_ss_numacoll(&s1, kind) - soak_ss_numacoll(&s0, kind) == 1;
    tally->calls[kind]++;
    tally->ours[kind] += ours;
    tally->user[kind] += user;
    tally->alone[kind] += p == 1 && !user;
    char what[200];
    snprintf(what, sizeof what, "step %d: %s of %zu %s (%s), %s on a communicator of %d (rank %d)",
             step, soak_ss_names[kind], kind >= SOAK_SS_SCAN ? n : mine,
             t ? t->name : "affine pairs", t ? rt_op_name(op) : "a user-defined op",
             in_place ? "in place" : "not in place", p, r);
    CHECK(rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    size_t over = 0;
    for (size_t j = 0; j < SOAK_SS_CANARY; j++)
        over += recv[rbytes + j] != 0xEE;
    CHECK(over == 0, "%s: %zu canary bytes past the %s overwritten", what, over,
          in_place ? "input vector" : "output");
    const int last = kind == SOAK_SS_EXSCAN ? r - 1 : kind == SOAK_SS_SCAN ? r : p - 1;
    if (last < 0) { /* exscan's rank 0: nothing to receive */
        if (ours) {
            CHECK(memcmp(recv, before, rbytes) == 0, "%s: rank 0's recvbuf written", what);
            tally->rank0_kept++;
        }
        free(before), free(counts);
        return 0;
    }
    free(before);
    free(counts);
    /* bitwise, but floating sums and products only where numacoll's rank-order fold ran */
    const int hier = getenv("NUMACOLL_FAKE_NODES") && atoi(getenv("NUMACOLL_FAKE_NODES")) > 0;
    const int near = t && rt_order_matters(t, op) && !(ours && !hier);
    if (!ours && t && soak_ss_native_fault(t, op)) {
        tally->unchecked++;
        return 0;
    }
    size_t bad = 0, first = 0;
    unsigned char acc[32], y[32];
    for (size_t k = 0; k < mine; k++) {
        const size_t e = off + k; /* the element's index in the vector */
        soak_ss_gen(t, op, step, members[0], e, acc);
        for (int m = 1; m <= last; m++) {
            soak_ss_gen(t, op, step, members[m], e, y);
            if (t) {
                rt_combine(t, op, acc, y);
            } else { /* acc then y, into acc */
                soak_ss_affine_then((const uint64_t *)(const void *)acc, (uint64_t *)(void *)y);
                memcpy(acc, y, 2 * sizeof(uint64_t));
            }
        }
        const unsigned char *got = recv + k * es;
        int ok = !t     ? !memcmp(got, acc, es)
                 : near ? rt_close(t, got, acc, p)
                        : rt_same(t, got, acc);
        if (!ok && bad++ == 0) first = k;
    }
    if (bad && t) {
        char g[64], w[64];
        soak_ss_gen(t, op, step, members[0], off + first, acc);
        for (int m = 1; m <= last; m++) {
            soak_ss_gen(t, op, step, members[m], off + first, y);
            rt_combine(t, op, acc, y);
        }
        rt_format(t, recv + first * es, g, sizeof g);
        rt_format(t, acc, w, sizeof w);
        CHECK(0, "%s: %zu wrong elements (%s), the first %zu: %s, expected %s", what, bad,
              near ? "within epsilons" : "bitwise", first, g, w);
    } else {
        CHECK(bad == 0, "%s: %zu wrong elements, the first %zu", what, bad, first);
    }
    if (near)
        tally->near++;
    else
        tally->exact++;
    return 1;
}

#endif
