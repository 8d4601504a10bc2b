/*
 * MPI-level test of the gather family under the preload: MPI_Allgather, MPI_Allgatherv,
 * MPI_Gather, MPI_Gatherv, MPI_Scatter, MPI_Scatterv (and MPI-4's _c forms where the MPI
 * has them).
 *
 *   mpi_move_test matrix tiny|small|full
 *       every collective, block sizes 0 B .. 3 MiB (full; small up to 256 KiB, tiny up to
 *       64 KiB) including odd ones, every root at the small sizes (seeded random roots
 *       above), in place and not, v-forms with zero and uneven counts and displacements
 *       that leave gaps and run backwards, datatype pairs with the same signature on both
 *       sides: MPI_BYTE / MPI_BYTE, MPI_INT / a contiguous type of 4 ints, and a vector
 *       type (2 ints of every 4: not contiguous) on the send or the receive side
 *   mpi_move_test mismatch
 *       a member whose count differs from its own receive side (allgather), and a sender
 *       whose count differs from what the root of a gatherv expects of it: the call fails
 *       (an MPI error, no hang) and the next calls work
 *   mpi_move_test hierbad first|later [root]
 *       hierarchical mode (NUMACOLL_FAKE_NODES=2): the last rank passes an erroneous argument
 *       to each collective with a hierarchical path, at a fresh communicator's first call or
 *       after a correct one (the others' root: 0 or the one given, not the last rank); every
 *       rank must return, the last one with the MPI's error
 *   mpi_move_test kill allgather|gather|scatter before|in
 *       the last rank dies (SIGKILL) before or inside a loop of MPI_Allgather, MPI_Gather or
 *       MPI_Scatter calls (root 0), blocks of 64 B and of 16 MiB (gather, allgather: 96 KiB,
 *       three chunks) in turn; the others must return an error naming it (run by
 *       tests/mpi/reduce_kill.sh with KILL_COLL=allgather|gather|scatter; scatter with
 *       NUMACOLL_MOVE=cma, so that the root waits for the dying reader of its buffer)
 *
 * Every rank computes what every block must hold (a function of the case, the sending
 * rank and the byte's position), so results are checked exactly; every byte of a receive
 * buffer outside the received blocks (gaps, the bytes a vector type skips, canaries after
 * the end) must keep its canary value, and send buffers must be unchanged. Each call must
 * be seen by the layer (its calls counter + 1) and, where numacoll runs it, be numacoll's
 * (its numacoll counter + 1: a flat communicator always; a hierarchical one except
 * gatherv and scatterv, which go native there), with the staged counter + 1 exactly when
 * this rank had a vector type on a side it uses. The seed comes from NC_MOVE_SEED, else
 * rank 0's clock, and is printed; NC_MOVE_TRACE=1 prints each call before it is made.
 */
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test_util.h"

enum { CANARY = 0xA5, TAIL = 64 };
enum { C_ALLGATHER, C_ALLGATHERV, C_GATHER, C_GATHERV, C_SCATTER, C_SCATTERV, C_COUNT };
static const char *const c_names[C_COUNT] = {"MPI_Allgather", "MPI_Allgatherv", "MPI_Gather",
                                             "MPI_Gatherv",   "MPI_Scatter",    "MPI_Scatterv"};

static int g_mode; /* numacoll_mpi_comm_mode(MPI_COMM_WORLD): 0 native, 1 flat, 2 hier */
static uint64_t g_seed;
static int g_trace;

/* the datatypes of a side: T_VEC is 2 ints of every 4 (8 bytes of data, extent 16) */
enum { T_BYTE, T_INT, T_CONTIG4, T_VEC, T_COUNT };
static const char *const t_names[T_COUNT] = {"MPI_BYTE", "MPI_INT", "contiguous(4 x int)",
                                             "vector(2 x int, stride 2)"};
static MPI_Datatype g_types[T_COUNT];
static size_t t_size(int t) { return t == T_BYTE ? 1 : t == T_INT ? 4 : t == T_CONTIG4 ? 16 : 8; }
static size_t t_ext(int t) { return t == T_VEC ? 16 : t_size(t); }
/* where packed byte @p i of a run of elements lies in the buffer */
static size_t t_at(int t, size_t i)
{
    if (t != T_VEC) return i;
    size_t j = i % 8;
    return i / 8 * 16 + (j < 4 ? j : 8 + j - 4);
}

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* byte @p i of rank @p r's block in the case @p key */
static inline unsigned char gen(uint64_t key, int r, size_t i)
{
    uint64_t x = key + (uint64_t)r * 0x9E3779B97F4A7C15ull;
    return (unsigned char)(i ^ (i >> 8) * 31u ^ (i >> 16) * 17u ^ x ^ (x >> 13));
}

/* write block @p r's @p n bytes (packed) as elements of type @p t from @p at on */
static void put_block(unsigned char *at, int t, uint64_t key, int r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        at[t_at(t, i)] = gen(key, r, i);
}


typedef struct {
    int coll, use_c, in_place, root, stype, rtype;
    size_t n; /* block bytes (v-forms: the base of each rank's size) */
    int backwards; /* v-forms: blocks laid out in reverse rank order */
} case_t;

/* rank @p r's block bytes in case @p c (v-forms: uneven, every third one empty) */
static size_t block_bytes(const case_t *c, int r)
{
    if (c->coll != C_ALLGATHERV && c->coll != C_GATHERV && c->coll != C_SCATTERV) return c->n;
    if (r % 3 == 1) return 0;
    const size_t step = c->stype == T_BYTE && c->rtype == T_BYTE ? 1 : 16;
    return c->n + step * (size_t)r;
}

typedef struct {
    unsigned char *p, *want;
    size_t cap;
} buf_t;

static void buf_fit(buf_t *b, size_t bytes)
{
    if (bytes <= b->cap) return;
    free(b->p), free(b->want);
    b->cap = bytes;
    b->p = malloc(bytes), b->want = malloc(bytes);
    if (!b->p || !b->want) {
        fprintf(stderr, "[rank %d] out of memory for %zu bytes\n", g_rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static uint64_t *stat_calls(stats_t *s, int coll)
{
    uint64_t *v[C_COUNT] = {&s->allgather_calls, &s->allgatherv_calls, &s->gather_calls,
                            &s->gatherv_calls,   &s->scatter_calls,    &s->scatterv_calls};
    return v[coll];
}
static uint64_t *stat_ran(stats_t *s, int coll)
{
    uint64_t *v[C_COUNT] = {&s->allgather_numacoll, &s->allgatherv_numacoll,
                            &s->gather_numacoll,    &s->gatherv_numacoll,
                            &s->scatter_numacoll,   &s->scatterv_numacoll};
    return v[coll];
}

/* the first differing byte of @p n, or -1 */
static long first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return (long)i;
    return -1;
}

static int g_cases, g_numacoll;

/* One call of case @p c (@p k: its number, the key's part). The "many" side (the P blocks:
 * the receive side of the gathers, the send side of the scatters) uses element
 * displacements disp[r]; the "one" side is this rank's block. */
static void run_case(const case_t *c, int k, buf_t *many, buf_t *one)
{
    const int P = g_size, me = g_rank;
    const int gathers = c->coll <= C_GATHERV, all = c->coll <= C_ALLGATHERV;
    const int is_v = c->coll == C_ALLGATHERV || c->coll == C_GATHERV || c->coll == C_SCATTERV;
    const int is_root = all || me == c->root;
    const int mt = gathers ? c->rtype : c->stype, ot = gathers ? c->stype : c->rtype;
    const uint64_t key = mix(g_seed ^ (uint64_t)k << 24);
    char what[200];
    snprintf(what, sizeof what, "case %d: %s%s %zu bytes, %s -> %s, %s, root %d%s", k,
             c_names[c->coll], c->use_c ? "_c" : "", c->n, t_names[c->stype], t_names[c->rtype],
             c->in_place ? "in place" : "not in place", all ? -1 : c->root,
             c->backwards ? ", blocks backwards" : "");
    if (g_trace) fprintf(stderr, "[rank %d] %s\n", me, what);

    /* the many side: counts (elements of mt) and displacements, gaps between the blocks */
    int *cnt = malloc((size_t)P * sizeof *cnt), *dsp = malloc((size_t)P * sizeof *dsp);
    MPI_Count *cnt_c = malloc((size_t)P * sizeof *cnt_c);
    MPI_Aint *dsp_c = malloc((size_t)P * sizeof *dsp_c);
    size_t mext = t_ext(mt), elems = 0;
    for (int j = 0; j < P; j++) {
        int r = c->backwards ? P - 1 - j : j;
        cnt[r] = (int)(block_bytes(c, r) / t_size(mt));
        dsp[r] = (int)elems;
        elems += (size_t)cnt[r] + (is_v ? (size_t)(1 + r % 2) : 0); /* gaps in the v-forms */
    }
    for (int r = 0; r < P; r++)
        cnt_c[r] = cnt[r], dsp_c[r] = dsp[r];
    const size_t mbytes = elems * mext + TAIL;
    buf_fit(many, mbytes);
    const size_t mine = block_bytes(c, me), ocount = mine / t_size(ot);
    const size_t obytes = ocount * t_ext(ot) + TAIL;
    buf_fit(one, obytes);
    memset(many->p, CANARY, mbytes);
    memset(one->p, CANARY, obytes);
    memset(many->want, CANARY, mbytes);
    memset(one->want, CANARY, obytes);
    /* inputs, and what the outputs must hold */
    if (gathers) {
        if (!(c->in_place && is_root)) put_block(one->p, ot, key, me, mine);
        memcpy(one->want, one->p, obytes); /* the send buffer stays as it is */
        if (c->in_place && is_root) put_block(many->p + (size_t)dsp[me] * mext, mt, key, me, mine);
        if (is_root)
            for (int r = 0; r < P; r++)
                put_block(many->want + (size_t)dsp[r] * mext, mt, key, r, block_bytes(c, r));
        else
            memcpy(many->want, many->p, mbytes); /* a non-root's receive buffer: untouched */
    } else {
        if (is_root)
            for (int r = 0; r < P; r++)
                put_block(many->p + (size_t)dsp[r] * mext, mt, key, r, block_bytes(c, r));
        memcpy(many->want, many->p, mbytes);
        if (!(c->in_place && is_root)) put_block(one->want, ot, key, me, mine);
    }
    int onecount = (int)ocount, mcount = cnt[0]; /* the uniform forms' block */
    MPI_Datatype mdt = g_types[mt], odt = g_types[ot];
    void *ip = MPI_IN_PLACE;
    const void *sb = gathers ? (c->in_place && is_root ? ip : one->p) : many->p;
    void *rb = gathers ? many->p : (c->in_place && is_root ? ip : one->p);
    stats_t s0 = get_stats();
    int rc = MPI_ERR_OTHER;
#if MPI_VERSION >= 4
    if (c->use_c) switch (c->coll) {
        case C_ALLGATHER: rc = MPI_Allgather_c(sb, onecount, odt, rb, mcount, mdt, MPI_COMM_WORLD); break;
        case C_ALLGATHERV: rc = MPI_Allgatherv_c(sb, onecount, odt, rb, cnt_c, dsp_c, mdt, MPI_COMM_WORLD); break;
        case C_GATHER: rc = MPI_Gather_c(sb, onecount, odt, rb, mcount, mdt, c->root, MPI_COMM_WORLD); break;
        case C_GATHERV: rc = MPI_Gatherv_c(sb, onecount, odt, rb, cnt_c, dsp_c, mdt, c->root, MPI_COMM_WORLD); break;
        case C_SCATTER: rc = MPI_Scatter_c(sb, mcount, mdt, rb, onecount, odt, c->root, MPI_COMM_WORLD); break;
        default: rc = MPI_Scatterv_c(sb, cnt_c, dsp_c, mdt, rb, onecount, odt, c->root, MPI_COMM_WORLD);
        }
    else
#endif
        switch (c->coll) {
        case C_ALLGATHER: rc = MPI_Allgather(sb, onecount, odt, rb, mcount, mdt, MPI_COMM_WORLD); break;
        case C_ALLGATHERV: rc = MPI_Allgatherv(sb, onecount, odt, rb, cnt, dsp, mdt, MPI_COMM_WORLD); break;
        case C_GATHER: rc = MPI_Gather(sb, onecount, odt, rb, mcount, mdt, c->root, MPI_COMM_WORLD); break;
        case C_GATHERV: rc = MPI_Gatherv(sb, onecount, odt, rb, cnt, dsp, mdt, c->root, MPI_COMM_WORLD); break;
        case C_SCATTER: rc = MPI_Scatter(sb, mcount, mdt, rb, onecount, odt, c->root, MPI_COMM_WORLD); break;
        default: rc = MPI_Scatterv(sb, cnt, dsp, mdt, rb, onecount, odt, c->root, MPI_COMM_WORLD);
        }
    stats_t s1 = get_stats();
    CHECK(rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    long d = first_diff(many->p, many->want, mbytes);
    CHECK(d < 0, "%s: the %s buffer differs at byte %ld (of %zu, the blocks' %zu): %#x, expected %#x",
          what, gathers ? "receive" : "send", d, mbytes, mbytes - TAIL, d >= 0 ? many->p[d] : 0,
          d >= 0 ? many->want[d] : 0);
    d = first_diff(one->p, one->want, obytes);
    CHECK(d < 0, "%s: the %s buffer differs at byte %ld (of %zu): %#x, expected %#x", what,
          gathers ? "send" : "receive", d, obytes, d >= 0 ? one->p[d] : 0,
          d >= 0 ? one->want[d] : 0);
    /* the counters: numacoll's where the communicator runs it; staged where this rank had
     * a vector type on a side it uses */
    int want_ran = g_mode == 1 || (g_mode == 2 && c->coll != C_GATHERV && c->coll != C_SCATTERV);
    size_t total = 0;
    for (int r = 0; r < P; r++)
        total += block_bytes(c, r);
    /* the many side is the root's (all: everyone's); a side of no bytes packs nothing */
    int uses_one = !(c->in_place && is_root) && mine > 0;
    int staged = want_ran && ((is_root && mt == T_VEC && total > 0) || (uses_one && ot == T_VEC));
    uint64_t seen = *stat_calls(&s1, c->coll) - *stat_calls(&s0, c->coll);
    uint64_t ran = *stat_ran(&s1, c->coll) - *stat_ran(&s0, c->coll);
    CHECK(seen == 1, "%s: the layer saw %llu calls, not 1", what, (unsigned long long)seen);
    CHECK(ran == (uint64_t)want_ran, "%s: numacoll ran %llu, expected %d", what,
          (unsigned long long)ran, want_ran);
    CHECK(s1.move_staged - s0.move_staged == (uint64_t)staged, "%s: staged %llu, expected %d",
          what, (unsigned long long)(s1.move_staged - s0.move_staged), staged);
    g_cases++;
    g_numacoll += (int)ran;
    free(cnt), free(dsp), free(cnt_c), free(dsp_c);
}

enum { LEVEL_TINY, LEVEL_SMALL, LEVEL_FULL };
static const char *const level_names[] = {"tiny", "small", "full"};

/* An intercommunicator (ranks 0 .. P-2 and rank P-1): the MPI's own allgatherv, whose
 * recvcounts and displs have the remote group's size (1 on the larger group: the layer
 * must not read them by the local size; ASan builds tell), counted and never numacoll's */
static void test_inter_allgatherv(void)
{
    const int top = g_rank == g_size - 1;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, top, g_rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, top ? 0 : g_size - 1, 78, &inter);
    int rsize = 0;
    MPI_Comm_remote_size(inter, &rsize);
    int *cnt = malloc((size_t)rsize * sizeof *cnt), *dsp = malloc((size_t)rsize * sizeof *dsp);
    int *out = malloc((size_t)rsize * sizeof *out), in = 10 * g_rank + 1;
    for (int r = 0; r < rsize; r++)
        cnt[r] = 1, dsp[r] = r, out[r] = -1;
    stats_t s0 = get_stats();
    int err = MPI_Allgatherv(&in, 1, MPI_INT, out, cnt, dsp, MPI_INT, inter);
    stats_t s1 = get_stats();
    CHECK(err == MPI_SUCCESS, "MPI_Allgatherv on an intercommunicator: rc %d", err);
    for (int r = 0; r < rsize; r++) {
        int from = top ? r : g_size - 1; /* the remote group's rank r in MPI_COMM_WORLD */
        if (out[r] != 10 * from + 1)
            CHECK(0, "MPI_Allgatherv on an intercommunicator: got %d from rank %d", out[r], from);
    }
    CHECK(s1.allgatherv_calls - s0.allgatherv_calls == 1 &&
              s1.allgatherv_numacoll == s0.allgatherv_numacoll,
          "MPI_Allgatherv on an intercommunicator: not one call, the MPI's");
    free(cnt), free(dsp), free(out);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

static void test_matrix(int level)
{
    static const size_t sizes[] = {0, 1, 13, 4096, 65536 + 16, /* tiny */
                                   7, 1000, 65536, 262144 + 48, /* small */
                                   (size_t)1 << 20, ((size_t)3 << 20) + 16 /* full */};
    const int nsizes = level == LEVEL_TINY ? 5 : level == LEVEL_SMALL ? 9 : 11;
    /* (send type, receive type): the same signature on both sides */
    static const int pairs[][2] = {
        {T_BYTE, T_BYTE}, {T_INT, T_CONTIG4}, {T_VEC, T_INT}, {T_INT, T_VEC}, {T_CONTIG4, T_VEC}};
    const int npairs = (int)(sizeof pairs / sizeof pairs[0]);
    buf_t many = {0}, one = {0};
    uint64_t x = g_seed;
    int k = 0;
    double t0 = MPI_Wtime();
    for (int coll = 0; coll < C_COUNT; coll++)
        for (int si = 0; si < nsizes; si++) {
            /* every root at small sizes and small P; a seeded one otherwise */
            const int rooted = coll >= C_GATHER;
            const int nroots = rooted && sizes[si] <= 4096 && g_size <= 5 ? g_size : 1;
            for (int ri = 0; ri < nroots; ri++, k++) {
                case_t c = {.coll = coll, .n = sizes[si]};
                const int *pr = pairs[(coll + si + ri) % npairs];
                c.stype = pr[0], c.rtype = pr[1];
                if (c.stype != T_BYTE || c.rtype != T_BYTE) /* whole elements: 16 bytes */
                    c.n = (c.n + 15) / 16 * 16;
                c.in_place = (k / 2) % 2;
                c.backwards = (coll == C_ALLGATHERV || coll == C_GATHERV || coll == C_SCATTERV) &&
                              k % 3 == 0; /* the uniform forms' blocks are in rank order */
                c.root = nroots > 1 ? ri : (int)((x = mix(x)) % (uint64_t)g_size);
#if MPI_VERSION >= 4
                c.use_c = k % 2;
#endif
                run_case(&c, k, &many, &one);
            }
        }
    free(many.p), free(many.want), free(one.p), free(one.want);
    if (g_size >= 3) test_inter_allgatherv();
    if (g_rank == 0)
        printf("matrix: %d calls checked, %d of them numacoll's (%s), %.1f s\n", g_cases,
               g_numacoll, g_mode == 1 ? "flat" : g_mode == 2 ? "hierarchical" : "the MPI library's",
               MPI_Wtime() - t0);
}

/* a member passes another count than the others expect of it: an MPI error where numacoll
 * runs the call (the native MPIs may not detect it), no hang; later calls work */
static void test_mismatch(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int in[64], out[64 * 64];
    for (int i = 0; i < 64; i++)
        in[i] = g_rank * 1000 + i;
    int n = g_rank == g_size - 1 ? 9 : 8; /* the last rank sends one int more */
    int rc = MPI_Allgather(in, n, MPI_INT, out, 8, MPI_INT, MPI_COMM_WORLD);
    int failed = rc != MPI_SUCCESS, any = 0;
    PMPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (g_mode > 0) CHECK(any, "an allgather with a member's count off by one succeeded everywhere");
    /* the next calls work */
    for (int it = 0; it < 3; it++) {
        rc = MPI_Allgather(in, 8, MPI_INT, out, 8, MPI_INT, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "allgather after the mismatch: rc %d", rc);
        for (int r = 0; r < g_size && rc == MPI_SUCCESS; r++)
            for (int i = 0; i < 8; i++)
                if (out[r * 8 + i] != r * 1000 + i) {
                    CHECK(0, "allgather after the mismatch: rank %d's element %d is %d", r, i,
                          out[r * 8 + i]);
                    r = g_size;
                    break;
                }
    }
    if (g_rank == 0) printf("mismatch: the bad call %s, the next 3 right\n", any ? "failed" : "passed");
    /* the same between members: the root of a gatherv expects 8 ints of every rank, the
     * last one sends 9 (its own arguments agree with themselves): the core sees it */
    int cnt[64], dsp[64];
    for (int r = 0; r < g_size && r < 64; r++)
        cnt[r] = 8, dsp[r] = 9 * r;
    rc = MPI_Gatherv(in, n, MPI_INT, out, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD);
    failed = rc != MPI_SUCCESS;
    PMPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (g_mode > 0) CHECK(any, "a gatherv with a sender's count off by one succeeded everywhere");
    rc = MPI_Gatherv(in, 8, MPI_INT, out, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "gatherv after the mismatch: rc %d", rc);
    for (int r = 0; g_rank == 0 && rc == MPI_SUCCESS && r < g_size; r++)
        CHECK(out[9 * r] == r * 1000 && out[9 * r + 7] == r * 1000 + 7,
              "gatherv after the mismatch: rank %d's block is wrong", r);
    if (g_rank == 0)
        printf("mismatch: the gatherv between members %s, the next one right\n",
               any ? "failed" : "passed");
}

/* the victim's receive buffer of the scatter kill: its first and last byte */
static unsigned char *g_kill_first, *g_kill_last;

/* 0.3 s in, SIGKILL to this process; for the scatter (g_kill_first set), once this rank is
 * in the middle of a single copy from the root's buffer: the first byte of the large
 * block has arrived (0 from the root, 0xFF before the call), the last not yet; after 3 s
 * without seeing that, anyway */
static void *kill_self_later(void *arg)
{
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    for (int i = 0; g_kill_first && i < 3000000; i++) {
        /* relaxed: the main thread's call writes the block with process_vm_readv */
        if (__atomic_load_n(g_kill_first, __ATOMIC_RELAXED) == 0 &&
            __atomic_load_n(g_kill_last, __ATOMIC_RELAXED) == 0xFF) {
            static const char say[] = "kill: the victim dies while it reads the root's buffer\n";
            ssize_t said = write(2, say, sizeof say - 1); /* before it happens: a syscall */
            (void)said;
            break;
        }
        sched_yield();
    }
    kill(getpid(), SIGKILL);
    return arg;
}

/* The last rank dies (SIGKILL) before a loop of calls of @p coll (allgather, gather or
 * scatter; root 0), or inside it; the others must return an error instead of waiting for
 * it. Gather: the root waits for a dead owner's blocks (and rank 1, an owner, for the root
 * that reads its slots); allgather: every member reads every other's blocks (0.3 s in);
 * scatter (NUMACOLL_MOVE=cma): the dying rank reads the root's buffer, and inside the loop
 * it dies in the middle of that single copy, so the root, which waits for its readers at
 * the end of the call, must give up on a reader that has begun and will never end. */
static void test_kill(const char *coll, const char *when)
{
    /* MPICH's hydra (-disable-auto-cleanup) tells the survivors of a failure with SIGUSR1,
     * whose default action ends them: ignored, so that numacoll's detection is tested */
    signal(SIGUSR1, SIG_IGN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int c = !strcmp(coll, "allgather") ? C_ALLGATHER
                  : !strcmp(coll, "gather") ? C_GATHER : C_SCATTER;
    /* bytes of a block: small ones in the slots' first chunk, large ones in several chunks
     * (copy) or one long single copy from the root's buffer (scatter) */
    const size_t small = 64, large = c == C_SCATTER ? (size_t)16 << 20 : (size_t)96 << 10;
    unsigned char *one = malloc(large), *many = malloc(large * (size_t)g_size);
    if (!one || !many) {
        fprintf(stderr, "[rank %d] out of memory\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(one, g_rank, large);
    memset(many, g_rank, large * (size_t)g_size);
    const int victim = g_size - 1, inside = !strcmp(when, "in");
    if (c == C_SCATTER && g_rank == victim) g_kill_first = one, g_kill_last = one + large - 1;
    for (long it = -1;; it++) { /* -1: the set-up call, every rank alive */
        int n = (int)(it % 2 ? large : small), rc;
        if (g_kill_first) {
            __atomic_store_n(g_kill_first, 0xFF, __ATOMIC_RELAXED);
            __atomic_store_n(g_kill_last, 0xFF, __ATOMIC_RELAXED);
        }
        if (c == C_ALLGATHER)
            rc = MPI_Allgather(one, n, MPI_BYTE, many, n, MPI_BYTE, MPI_COMM_WORLD);
        else if (c == C_GATHER)
            rc = MPI_Gather(one, n, MPI_BYTE, many, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        else
            rc = MPI_Scatter(many, n, MPI_BYTE, one, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            printf("kill: rank %d: %s %ld failed: %s\n", g_rank, coll, it, msg);
            fflush(stdout);
            _exit(3); /* MPI_Finalize would wait for the dead member */
        }
        if (it >= 0) continue;
        printf("kill: rank %d pid %d ready\n", g_rank, (int)getpid());
        fflush(stdout);
        PMPI_Barrier(MPI_COMM_WORLD); /* every rank has said it before one dies */
        if (g_rank == victim && !inside) raise(SIGKILL);
        pthread_t killer;
        if (g_rank == victim) pthread_create(&killer, NULL, kill_self_later, NULL);
    }
}

/* A member whose first call on a fresh communicator has an erroneous argument it can see
 * alone (a negative count: the MPI returns MPI_ERR_COUNT at once) still joins the
 * communicator's set-up before the MPI reports it, so the others, whose arguments are right,
 * wait inside numacoll's call (and fail there under NUMACOLL_TIMEOUT, naming it) instead of
 * in a set-up collective it never joins, which no timeout ends. Then the members meet by
 * point-to-point messages (no collective: the bad member must not wait in one past the
 * timeout). With MPI_Allgather, MPI_Alltoall, MPI_Reduce_scatter (a negative entry of
 * recvcounts: MPICH 4.0's own MPI_Scan, MPI_Reduce_scatter_block and MPI_Allreduce crash on
 * a negative count), MPI_Reduce and MPI_Bcast (a root out of range: MPI_ERR_ROOT) and
 * MPI_Alltoallw (a negative entry of sendcounts), each on a communicator of its own. */
static int bcast_c_huge(void *buf, int root, MPI_Comm c)
{
#if MPI_VERSION >= 4
    return MPI_Bcast_c(buf, (MPI_Count)INT_MAX + 1, MPI_BYTE, root, c);
#else
    (void)buf, (void)root, (void)c;
    return MPI_ERR_OTHER;
#endif
}

static void test_firstbad(void)
{
    const int bad = g_size - 1;
    int in[64] = {0}, out[64] = {0};
    static const char *const names[] = {"MPI_Allgather", "MPI_Alltoall", "MPI_Reduce_scatter",
                                        "MPI_Reduce",    "MPI_Bcast",    "MPI_Reduce (root -5)",
                                        "MPI_Bcast_c (count > INT_MAX)", "MPI_Alltoallw"};
    /* MPI-4's MPI_Bcast_c (k = 6): the bad member's count over INT_MAX (its large entry; the
     * MPI reports the root before it touches the buffer, so one of 64 ints does) */
    const int kinds = 8;
    int counts[64], ones[64], displs[64];
    MPI_Datatype types[64];
    for (int r = 0; r < g_size && r < 64; r++) {
        counts[r] = g_rank == bad && r == 0 ? -1 : 1;
        ones[r] = 1, displs[r] = 4 * r, types[r] = MPI_INT;
    }
    for (int k = 0; k < kinds; k++) {
        if (k == 6 && MPI_VERSION < 4) continue;
        const char *name = names[k];
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        const int n = g_rank == bad ? -1 : 1;
        /* out of range above, and (k = 5) below: a negative root on an intracommunicator */
        const int root = g_rank != bad ? 0 : k == 5 ? -5 : g_size;
        int rc = k == 7 ? MPI_Alltoallw(in, counts, displs, types, out, ones, displs, types, c)
                 : k == 6 && g_rank == bad
                     ? bcast_c_huge(in, root, c)
                 : k == 4 || k == 6 ? MPI_Bcast(in, 1, MPI_INT, root, c)
                 : k >= 3 ? MPI_Reduce(in, out, 1, MPI_INT, MPI_SUM, root, c)
                 : k == 2 ? MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, c)
                 : k == 1 ? MPI_Alltoall(in, n, MPI_INT, out, 1, MPI_INT, c)
                          : MPI_Allgather(in, n, MPI_INT, out, 1, MPI_INT, c);
        int cls = MPI_SUCCESS;
        MPI_Error_class(rc, &cls);
        if (g_rank == bad) {
            CHECK(cls == (k >= 3 && k != 7 ? MPI_ERR_ROOT : MPI_ERR_COUNT),
                  "rank %d: %s with a negative count or a root out of range gave class %d",
                  g_rank, name, cls);
            for (int r = 0; r < bad; r++)
                PMPI_Recv(&cls, 1, MPI_INT, r, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            /* a reduce's non-root may be done before the bad member is missed, and every
             * member of a broadcast whose root is not the bad member */
            CHECK(rc != MPI_SUCCESS || ((k == 3 || k == 5) && g_rank != 0) || k == 4 || k == 6,
                  "rank %d: %s succeeded without the bad member", g_rank, name);
            PMPI_Send(&cls, 1, MPI_INT, bad, 77, MPI_COMM_WORLD);
        }
        if (g_rank == 0) printf("firstbad: %s: every member returned\n", name);
        fflush(stdout);
    }
}

/* Hierarchical mode (NUMACOLL_FAKE_NODES=2 at np 5: pseudo-nodes {0, 1, 2} and {3, 4}): the
 * last rank, not its node's leader, passes an erroneous argument it can see alone (a
 * negative count or recvcounts entry, a root out of range) to each collective that has a
 * hierarchical path, on a communicator of its own: at the communicator's first call
 * (@p later 0) or after a correct one (@p later 1). It must get the MPI's error; every
 * other member must return (complete, or fail under NUMACOLL_TIMEOUT), never wait in a
 * node set-up step it does not join or in the MPI's step between the node leaders after its
 * node's leader gave up; one whose result needs the bad rank's input (every member of an
 * allgather(v), allreduce or reduce-scatter, the root of a reduce or gather) must fail, not
 * return something. The members then meet by point-to-point messages. @p root0: the
 * others' root (rooted collectives). */
static void test_hierbad(int later, int root0)
{
    enum { K_BCAST, K_REDUCE, K_ALLGATHER, K_ALLGATHERV, K_GATHER, K_SCATTER,
           K_REDUCE_SCATTER, K_ALLREDUCE, K_SCAN, K_KINDS };
    static const char *const names[K_KINDS] = {
            "MPI_Bcast",          "MPI_Reduce",    "MPI_Allgather", "MPI_Allgatherv", "MPI_Gather",
            "MPI_Scatter", "MPI_Reduce_scatter", "MPI_Allreduce", "MPI_Scan"};
    /* MPI_Allreduce and MPI_Scan with Open MPI only: MPICH 4.0's own crash on a negative
     * count (MPI_Reduce's root out of range takes the same way in) */
#if defined(OPEN_MPI)
    const int kinds = K_KINDS;
#else
    const int kinds = K_ALLREDUCE;
#endif
    const int bad = g_size - 1;
    int in[64], out[64], counts[64], displs[64];
    for (int r = 0; r < 64; r++)
        in[r] = r, counts[r] = 1, displs[r] = r;
    CHECK(g_mode == 2, "the communicator is not hierarchical (mode %d)", g_mode);
    const char *what = later ? "later" : "first";
    for (int k = 0; k < kinds; k++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        int rc = MPI_SUCCESS;
        for (int step = later ? 0 : 1; step < 2; step++) {
            const int wrong = step == 1 && g_rank == bad;
            const int n = wrong ? -1 : 1, root = wrong ? g_size : root0;
            counts[0] = wrong ? -1 : 1;
            switch (k) {
            case K_BCAST: rc = MPI_Bcast(in, 1, MPI_INT, root, c); break;
            case K_REDUCE: rc = MPI_Reduce(in, out, 1, MPI_INT, MPI_SUM, root, c); break;
            case K_ALLGATHER: rc = MPI_Allgather(in, n, MPI_INT, out, 1, MPI_INT, c); break;
            case K_ALLGATHERV:
                rc = MPI_Allgatherv(in, n, MPI_INT, out, counts + 32, displs, MPI_INT, c);
                break;
            case K_GATHER: rc = MPI_Gather(in, n, MPI_INT, out, 1, MPI_INT, root0, c); break;
            case K_SCATTER: rc = MPI_Scatter(in, 1, MPI_INT, out, n, MPI_INT, root0, c); break;
            case K_REDUCE_SCATTER:
                rc = MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, c);
                break;
            case K_ALLREDUCE: rc = MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, c); break;
            default: rc = MPI_Scan(in, out, n, MPI_INT, MPI_SUM, c); break;
            }
            CHECK(step == 1 || rc == MPI_SUCCESS, "rank %d: %s: the correct call failed (%d)",
                  g_rank, names[k], rc);
        }
        int cls = MPI_SUCCESS;
        MPI_Error_class(rc, &cls);
        if (g_rank == bad) {
            const int want = k == K_BCAST || k == K_REDUCE ? MPI_ERR_ROOT : MPI_ERR_COUNT;
            CHECK(cls == want || (k == K_REDUCE_SCATTER && cls == MPI_ERR_ARG),
                  "rank %d: %s (%s call) with an erroneous argument gave class %d", g_rank,
                  names[k], what, cls);
            for (int r = 0; r < bad; r++)
                PMPI_Recv(&cls, 1, MPI_INT, r, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            const int needs_bad = k == K_ALLGATHER || k == K_ALLGATHERV || k == K_ALLREDUCE ||
                                  k == K_REDUCE_SCATTER ||
                                  ((k == K_REDUCE || k == K_GATHER) && g_rank == root0);
            CHECK(!needs_bad || rc != MPI_SUCCESS,
                  "rank %d: %s (%s call) succeeded without the bad rank's input", g_rank,
                  names[k], what);
            PMPI_Send(&cls, 1, MPI_INT, bad, 78, MPI_COMM_WORLD);
        }
        if (g_rank == 0) printf("hierbad: %s (%s call): every member returned\n", names[k], what);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "matrix";
    find_stats_fn();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_trace = getenv("NC_MOVE_TRACE") && atoi(getenv("NC_MOVE_TRACE")) == 1;
    const char *se = getenv("NC_MOVE_SEED");
    if (g_rank == 0) g_seed = se ? strtoull(se, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    PMPI_Bcast(&g_seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int (*mode_fn)(MPI_Comm);
    *(void **)&mode_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_mode");
    g_mode = mode_fn ? mode_fn(MPI_COMM_WORLD) : 0;
    if (g_rank == 0)
        printf("%s: seed %llu (NC_MOVE_SEED to rerun), %d ranks, communicator mode %d\n", mode,
               (unsigned long long)g_seed, g_size, g_mode);
    CHECK(g_stats_fn && (g_mode > 0 || g_size == 1),
          "numacoll does not handle MPI_COMM_WORLD (mode %d)", g_mode);
    g_types[T_BYTE] = MPI_BYTE;
    g_types[T_INT] = MPI_INT;
    MPI_Type_contiguous(4, MPI_INT, &g_types[T_CONTIG4]);
    MPI_Type_commit(&g_types[T_CONTIG4]);
    MPI_Datatype v;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 16, &g_types[T_VEC]);
    MPI_Type_commit(&g_types[T_VEC]);
    MPI_Type_free(&v);
    int level = -1;
    for (int l = LEVEL_TINY; l <= LEVEL_FULL && argc > 2; l++)
        if (!strcmp(argv[2], level_names[l])) level = l;
    if (!strcmp(mode, "matrix") && level >= 0)
        test_matrix(level);
    else if (!strcmp(mode, "mismatch"))
        test_mismatch();
    else if (!strcmp(mode, "firstbad"))
        test_firstbad();
    else if (!strcmp(mode, "hierbad") && argc > 2 &&
             (!strcmp(argv[2], "first") || !strcmp(argv[2], "later")))
        test_hierbad(!strcmp(argv[2], "later"), argc > 3 ? atoi(argv[3]) : 0);
    else if (!strcmp(mode, "kill") && argc > 3 &&
             (!strcmp(argv[2], "allgather") || !strcmp(argv[2], "gather") ||
              !strcmp(argv[2], "scatter")) &&
             (!strcmp(argv[3], "before") || !strcmp(argv[3], "in")))
        test_kill(argv[2], argv[3]);
    else {
        if (g_rank == 0)
            fprintf(stderr, "unknown mode or level '%s %s'; allowed: matrix tiny|small|full, "
                            "mismatch, firstbad, hierbad first|later [root], "
                            "kill allgather|gather|scatter before|in\n",
                    mode, argc > 2 ? argv[2] : "");
        g_fail++;
    }
    MPI_Type_free(&g_types[T_CONTIG4]);
    MPI_Type_free(&g_types[T_VEC]);
    int total = total_failures(MPI_COMM_WORLD);
    if (g_rank == 0) printf("%s: %s (%d failed checks)\n", mode, total ? "FAIL" : "PASS", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
