/*
 * MPI-level test of MPI_Allreduce / MPI_Reduce (and MPI-4's _c versions) under the preload.
 *
 *   mpi_reduce_test matrix tiny|small|full|huge
 *                                  every predefined C type numacoll maps x every op MPI
 *                                  allows on it, sizes 0 .. 1 MiB (around the reduction
 *                                  fragment), in place and not, seeded random roots; tiny
 *                                  and small draw fewer sizes, full adds 3 MiB, huge also
 *                                  one 64 MiB allreduce
 *   mpi_reduce_test edges          a user-defined op and a vector type go to the MPI
 *                                  library (right results, or its own error), numacoll's
 *                                  calls after them still work; members that pass
 *                                  different counts get MPI_ERR_ARG
 *   mpi_reduce_test kill before|in the last rank dies (SIGKILL) before or inside a loop of
 *                                  allreduces; the others must fail with an error, not hang
 *
 * Every rank computes every member's input itself (a seeded hash of rank, element and
 * case), so integer results are checked exactly against a serial reference. Floating point:
 * on a flat communicator (numacoll_mpi_comm_mode 1) bitwise against the left-to-right fold
 * in rank order, which numacoll documents; everywhere bitwise across ranks (an allgather of
 * every allreduce result's hash). On a hierarchical communicator (mode 2) the MPI library
 * reduces the nodes' results with numacoll's kernels as its op: floating sums and products
 * within a few epsilons of the fold, integers exact (judge_hier). Each call numacoll can take must
 * raise its counter (allreduce_numacoll / reduce_numacoll) by one. The seed comes from
 * NC_REDUCE_SEED, else rank 0's clock, and is printed; NC_REDUCE_TRACE=1 prints each call
 * before it is made.
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test_util.h"
#include "reduce_test_types.h"

static int g_mode;                /* numacoll_mpi_comm_mode of the communicator: 1 flat */
static size_t g_fragment = 65536; /* NUMACOLL_REDUCE_FRAGMENT */
static uint64_t g_seed;
static int g_trace; /* NC_REDUCE_TRACE=1: each rank says each case before its call */
/* hierarchical mode: wrong elements per (type, op) here, judged at the end (judge_hier) */
static int g_hier_bad[RT_MAX_TYPES][RT_OP_COUNT];

/* which MPI entry point a case calls */
enum { FN_ALLREDUCE, FN_REDUCE, FN_ALLREDUCE_C, FN_REDUCE_C, FN_COUNT };
static const char *const fn_names[FN_COUNT] = {"MPI_Allreduce", "MPI_Reduce", "MPI_Allreduce_c",
                                               "MPI_Reduce_c"};
#if MPI_VERSION >= 4
enum { NFN = 4 };
#else
enum { NFN = 2 }; /* no _c versions before MPI-4 */
#endif

enum { CANARY = 64, CANARY_BYTE = 0xA5 };

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* one case's outcome for the cross-rank comparison */
typedef struct {
    uint64_t hash;
    int valid; /* an allreduce (every rank has the result) */
} case_hash_t;

typedef struct {
    case_hash_t *v;
    int n, cap;
} hashes_t;

static void hashes_add(hashes_t *h, uint64_t hash, int valid)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 256;
        h->v = realloc(h->v, (size_t)h->cap * sizeof *h->v);
        if (!h->v) MPI_Abort(MPI_COMM_WORLD, 2);
    }
    h->v[h->n++] = (case_hash_t){hash, valid};
}

/* rank @p r's input of case @p key into @p buf (@p n elements) */
static void fill_input(const rtype_t *t, int op, uint64_t key, int r, void *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rt_gen(t, op, mix(key ^ ((uint64_t)r << 40) ^ (uint64_t)i), (char *)buf + i * t->size);
}

/* the serial left-to-right fold of every member's input, in rank order */
static void reference(const rtype_t *t, int op, uint64_t key, int nprocs, void *out, size_t n,
                      void *tmp)
{
    fill_input(t, op, key, 0, out, n);
    for (int r = 1; r < nprocs; r++) {
        fill_input(t, op, key, r, tmp, n);
        for (size_t i = 0; i < n; i++)
            rt_combine(t, op, (char *)out + i * t->size, (char *)tmp + i * t->size);
    }
}

static size_t count_bad(const unsigned char *p, size_t n)
{
    size_t bad = 0;
    for (size_t j = 0; j < n; j++)
        bad += p[j] != CANARY_BYTE;
    return bad;
}

static int call_fn(int fn, const void *sb, void *rb, size_t n, MPI_Datatype dt, MPI_Op op, int root,
                   MPI_Comm comm)
{
    switch (fn) {
    case FN_ALLREDUCE:
        return MPI_Allreduce(sb, rb, (int)n, dt, op, comm);
    case FN_REDUCE:
        return MPI_Reduce(sb, rb, (int)n, dt, op, root, comm);
#if MPI_VERSION >= 4
    case FN_ALLREDUCE_C:
        return MPI_Allreduce_c(sb, rb, (MPI_Count)n, dt, op, comm);
    case FN_REDUCE_C:
        return MPI_Reduce_c(sb, rb, (MPI_Count)n, dt, op, root, comm);
#endif
    default:
        return MPI_ERR_OTHER;
    }
}

/* buffers of one case, reused (grown) from case to case */
typedef struct {
    unsigned char *send, *recv, *ref, *tmp;
    size_t cap;
} bufs_t;

static void bufs_fit(bufs_t *b, size_t bytes)
{
    if (bytes + CANARY <= b->cap) return;
    free(b->send), free(b->recv), free(b->ref), free(b->tmp);
    b->cap = bytes + CANARY;
    b->send = malloc(b->cap), b->recv = malloc(b->cap), b->ref = malloc(b->cap);
    b->tmp = malloc(b->cap);
    if (!b->send || !b->recv || !b->ref || !b->tmp) {
        fprintf(stderr, "[rank %d] out of memory for %zu bytes\n", g_rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/*
 * One call: @p fn with type @p t, op @p op, @p n elements (as @p units of @p dt, a derived
 * type of @p n / units elements each when units > 1), in place or not, root @p root
 * (reductions). Checks the result, the canaries and numacoll's counter.
 */
static void run_case(bufs_t *b, hashes_t *h, const rtype_t *t, int op, size_t n, int fn,
                     int in_place, int root, MPI_Datatype dt, size_t units, int want_numacoll)
{
    const int is_all = fn == FN_ALLREDUCE || fn == FN_ALLREDUCE_C;
    const int gets = is_all || g_rank == root;
    const size_t bytes = n * t->size;
    const uint64_t key = mix(g_seed ^ ((uint64_t)h->n << 20));
    bufs_fit(b, bytes);
    fill_input(t, op, key, g_rank, in_place && gets ? b->recv : b->send, n);
    if (!(in_place && gets)) memset(b->recv, CANARY_BYTE, bytes);
    memset(b->recv + bytes, CANARY_BYTE, CANARY);
    char what[160];
    snprintf(what, sizeof what, "case %d: %s %s %s, %zu elements, %s, root %d", h->n, fn_names[fn],
             t->name, rt_op_name(op), n, in_place ? "in place" : "not in place",
             is_all ? -1 : root);
    if (g_trace) fprintf(stderr, "[rank %d] %s\n", g_rank, what);
    stats_t s0 = get_stats();
    const void *sb = in_place && gets ? MPI_IN_PLACE : b->send;
    int rc = call_fn(fn, sb, b->recv, units, dt, rt_mpi_op(op), root, MPI_COMM_WORLD);
    stats_t s1 = get_stats();
    CHECK(rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    uint64_t ran = is_all ? s1.allreduce_numacoll - s0.allreduce_numacoll
                          : s1.reduce_numacoll - s0.reduce_numacoll;
    uint64_t seen =
        is_all ? s1.allreduce_calls - s0.allreduce_calls : s1.reduce_calls - s0.reduce_calls;
    CHECK(seen == 1, "%s: the layer saw %llu calls, not 1", what, (unsigned long long)seen);
    CHECK(ran == (want_numacoll ? 1u : 0u), "%s: numacoll ran %llu calls, expected %d", what,
          (unsigned long long)ran, want_numacoll);
    CHECK(count_bad(b->recv + bytes, CANARY) == 0, "%s: bytes past the result overwritten", what);
    if (!gets) {
        CHECK(count_bad(b->recv, bytes) == 0, "%s: a non-root's recvbuf was written", what);
        hashes_add(h, 0, 0);
        return;
    }
    reference(t, op, key, g_size, b->ref, n, b->tmp);
    /* floating-point sums and products in the fold's order only on a flat communicator */
    const int exact = g_mode == 1 || !rt_order_matters(t, op);
    size_t bad = 0, first = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        const char *got = (const char *)b->recv + i * t->size, *want = (char *)b->ref + i * t->size;
        int ok = exact ? rt_same(t, got, want) : rt_close(t, got, want, g_size);
        if (!ok && bad++ == 0) first = i;
    }
    if (bad && g_mode == 2) {
        g_hier_bad[t - rt_get(0)][op] += (int)bad;
    } else if (bad) {
        char gs[64], ws[64];
        rt_format(t, (char *)b->recv + first * t->size, gs, sizeof gs);
        rt_format(t, (char *)b->ref + first * t->size, ws, sizeof ws);
        CHECK(0, "%s: %zu wrong elements (%s), the first [%zu] = %s, expected %s", what, bad,
              exact ? "bitwise against the serial rank-order fold" : "beyond the tolerance", first,
              gs, ws);
    }
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        hash = rt_hash(t, (char *)b->recv + i * t->size, hash);
    hashes_add(h, hash, is_all);
}

/* every allreduce result must be the same bits on every rank */
static void check_hashes(const hashes_t *h)
{
    uint64_t *mine = malloc((size_t)(h->n ? h->n : 1) * sizeof *mine);
    uint64_t *all = malloc((size_t)(h->n ? h->n : 1) * (size_t)g_size * sizeof *all);
    for (int i = 0; i < h->n; i++)
        mine[i] = h->v[i].hash;
    PMPI_Allgather(mine, h->n, MPI_UINT64_T, all, h->n, MPI_UINT64_T, MPI_COMM_WORLD);
    int differ = 0;
    for (int i = 0; i < h->n; i++) {
        if (!h->v[i].valid) continue;
        for (int r = 0; r < g_size; r++)
            if (all[(size_t)r * (size_t)h->n + (size_t)i] != mine[i]) {
                if (differ++ < 5) CHECK(0, "case %d: rank %d's result differs from ours", i, r);
                break;
            }
    }
    CHECK(differ == 0, "%d allreduce results differ between ranks", differ);
    free(mine);
    free(all);
}

/* hierarchical mode: every (type, op) pair with wrong results on some rank fails (the
 * leaders' step runs numacoll's kernels, so the MPI library's own faults in its predefined
 * ops do not apply) */
static void judge_hier(bufs_t *b)
{
    (void)b;
    PMPI_Allreduce(MPI_IN_PLACE, g_hier_bad, (int)(sizeof g_hier_bad / sizeof(int)), MPI_INT,
                   MPI_MAX, MPI_COMM_WORLD);
    for (int ti = 0; ti < rt_count(); ti++)
        for (int op = 0; op < RT_OP_COUNT; op++)
            CHECK(!g_hier_bad[ti][op], "hierarchical %s %s: %d wrong elements", rt_get(ti)->name,
                  rt_op_name(op), g_hier_bad[ti][op]);
}

/* a case's element count from a byte size: at least one element, odd where it can be */
static size_t elems_of(size_t bytes, size_t esize)
{
    size_t n = bytes / esize;
    if (n < 1) n = 1;
    return n | 1;
}

enum { LEVEL_TINY, LEVEL_SMALL, LEVEL_FULL, LEVEL_HUGE };
static const char *const level_names[] = {"tiny", "small", "full", "huge"};

static void test_matrix(int level)
{
    const int ntypes = rt_count();
    bufs_t b = {0};
    hashes_t h = {0};
    uint64_t x = g_seed;
    int k = 0;
    double t0 = MPI_Wtime();
    stats_t s0 = get_stats();
    /* every type x every op it takes: small sizes, each entry point, in place and not */
    const size_t small[] = {0, 1, 3, 17};
    const int nsmall = level == LEVEL_TINY ? 1 : level == LEVEL_SMALL ? 3 : 4;
    for (int ti = 0; ti < ntypes; ti++) {
        const rtype_t *t = rt_get(ti);
        for (int op = 0; op < RT_OP_COUNT; op++) {
            if (!rt_allows(t, op)) continue;
            for (int si = 0; si <= nsmall; si++, k++) {
                /* tiny: one of the small sizes in turn, and 4093 bytes */
                size_t n = si == nsmall          ? elems_of(4093, t->size)
                           : level == LEVEL_TINY ? small[k % 4]
                                                 : small[si];
                int fn = k % NFN, in_place = (k / NFN) % 2;
                int root = (int)((x = mix(x)) % (uint64_t)g_size);
                run_case(&b, &h, t, op, n, fn, in_place, root, t->mpi, n, g_mode > 0);
            }
        }
    }
    /* sizes around and across the fragment, a type of each kind (tiny: one size each, in
     * turn); full: 3 MiB of int and double sums too */
    const size_t frag = g_fragment;
    const size_t big[] = {frag - 1, frag + 1, 3 * frag + 40, ((size_t)1 << 20) + 24};
    const int nbig = level == LEVEL_TINY ? 1 : level == LEVEL_SMALL ? 2 : 4;
    static const struct {
        const char *type;
        int op;
    } large[] = {{"int", RT_SUM},
                 {"double", RT_SUM},
                 {"float", RT_PROD},
                 {"uint8_t", RT_BXOR},
                 {"long long", RT_MAX},
                 {"long double", RT_SUM},
                 {"MPI_DOUBLE_INT", RT_MINLOC},
                 {"MPI_SHORT_INT", RT_MAXLOC},
                 {"MPI_C_BOOL", RT_LXOR},
                 {"MPI_BYTE", RT_BOR},
                 {"int16_t", RT_PROD},
                 {"double", RT_MIN}};
    for (int li = 0; li < (int)(sizeof large / sizeof large[0]); li++) {
        const rtype_t *t = rt_by_name(large[li].type);
        for (int si = 0; si < nbig + (level >= LEVEL_FULL && li < 2); si++, k++) {
            size_t bytes = si == 4 ? ((size_t)3 << 20) + 8 : big[nbig == 1 ? li % 4 : si];
            size_t n = elems_of(bytes, t->size);
            int fn = k % NFN, in_place = (k / NFN) % 2;
            int root = (int)((x = mix(x)) % (uint64_t)g_size);
            run_case(&b, &h, t, large[li].op, n, fn, in_place, root, t->mpi, n, g_mode > 0);
        }
    }
    /* a contiguous derived type (3 doubles): numacoll's (not at np = 1: Open MPI 4.1's own
     * reductions reject predefined ops on derived types) */
    MPI_Datatype d3;
    MPI_Type_contiguous(3, MPI_DOUBLE, &d3);
    MPI_Type_commit(&d3);
    const rtype_t *dbl = rt_by_name("double");
    for (int fn = 0; fn < NFN && g_mode > 0; fn++, k++) {
        int root = (int)((x = mix(x)) % (uint64_t)g_size);
        size_t units = fn % 2 ? 7 : elems_of(frag + 100, 3 * sizeof(double));
        run_case(&b, &h, dbl, RT_SUM, 3 * units, fn, k % 2, root, d3, units, 1);
    }
    MPI_Type_free(&d3);
    if (level == LEVEL_HUGE) { /* 64 MiB, once (5-10 s on a loaded 2-CPU machine: by hand only) */
        size_t n = ((size_t)64 << 20) / sizeof(double) + 1;
        double t1 = MPI_Wtime();
        run_case(&b, &h, dbl, RT_SUM, n, FN_ALLREDUCE, 0, 0, MPI_DOUBLE, n, 1);
        if (g_rank == 0) printf("matrix: 64 MiB of doubles in %.1f s\n", MPI_Wtime() - t1);
    }
    check_hashes(&h);
    if (g_mode == 2) judge_hier(&b);
    free(b.send), free(b.recv), free(b.ref), free(b.tmp), free(h.v);
    stats_t s1 = get_stats();
    unsigned long long ran = (unsigned long long)(s1.allreduce_numacoll - s0.allreduce_numacoll +
                                                  s1.reduce_numacoll - s0.reduce_numacoll);
    if (g_rank == 0)
        printf("matrix: %d types, %d calls checked, %llu of them numacoll's (%s), %.1f s\n", ntypes,
               h.n, ran,
               g_mode == 1   ? "flat: floating point bitwise against the rank-order fold"
               : g_mode == 2 ? "hierarchical: floating point bitwise across ranks"
                             : "the MPI library's",
               MPI_Wtime() - t0);
}

/* ---- the MPI library's own reductions next to numacoll's -------------------------------- */

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const long long *a = in;
    long long *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

static void test_native(void)
{
    enum { N = 1001 };
    long long in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (long long)(g_rank + 1) * (i + 1);
    const long long tri = (long long)g_size * (g_size + 1) / 2;
    MPI_Op mysum;
    MPI_Op_create(user_sum, 1, &mysum);
    stats_t s0 = get_stats();
    int rc = MPI_Allreduce(in, out, N, MPI_LONG_LONG, mysum, MPI_COMM_WORLD);
    stats_t s1 = get_stats();
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += out[i] != tri * (i + 1);
    CHECK(rc == MPI_SUCCESS && bad == 0, "user op: rc %d, %d wrong elements", rc, bad);
    CHECK(s1.allreduce_calls == s0.allreduce_calls + 1 &&
              s1.allreduce_numacoll == s0.allreduce_numacoll,
          "user op: calls %llu -> %llu, numacoll's %llu -> %llu (the MPI's own expected)",
          (unsigned long long)s0.allreduce_calls, (unsigned long long)s1.allreduce_calls,
          (unsigned long long)s0.allreduce_numacoll, (unsigned long long)s1.allreduce_numacoll);
    /* in place at the last rank, 64 KiB: the MPI library's own MPI_Reduce (a user op);
     * MPICH 4.0.2's crashes on MPI_IN_PLACE at a root other than 0 unless numacoll passes
     * it a copy (pmpi_reduce.c) */
    enum { NBIG = 8192 };
    long long *big = malloc(NBIG * sizeof *big), *bigout = malloc(NBIG * sizeof *bigout);
    CHECK(big && bigout, "out of memory");
    const int last = g_size - 1;
    for (int i = 0; i < NBIG; i++)
        big[i] = bigout[i] = (long long)(g_rank + 1) * (i + 1);
    s0 = get_stats();
    rc = MPI_Reduce(g_rank == last ? MPI_IN_PLACE : big, g_rank == last ? bigout : NULL, NBIG,
                    MPI_LONG_LONG, mysum, last, MPI_COMM_WORLD);
    s1 = get_stats();
    bad = 0;
    for (int i = 0; g_rank == last && i < NBIG; i++)
        bad += bigout[i] != tri * (i + 1);
    CHECK(rc == MPI_SUCCESS && bad == 0, "user op in place at root %d: rc %d, %d wrong", last,
          rc, bad);
    CHECK(s1.reduce_numacoll == s0.reduce_numacoll, "user op in place: numacoll ran it");
    free(big);
    free(bigout);
    MPI_Op_free(&mysum);

    /* every other double: a vector type. The MPI library's own reduction: Open MPI 4.1 and
     * MPICH 4.0 refuse predefined ops on derived types (MPI_ERR_OP), others compute it */
    double vin[2 * N], vout[2 * N];
    for (int i = 0; i < 2 * N; i++)
        vin[i] = i % 2 ? -7.0 : (double)(g_rank + 1) * i, vout[i] = -1.0;
    MPI_Datatype vec;
    MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int root = g_size - 1, cls = MPI_SUCCESS;
    s0 = get_stats();
    rc = MPI_Reduce(vin, vout, 1, vec, MPI_SUM, root, c);
    s1 = get_stats();
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    bad = 0;
    if (g_rank == root && rc == MPI_SUCCESS)
        for (int i = 0; i < 2 * N; i += 2)
            bad += vout[i] != (double)tri * i;
    CHECK((rc == MPI_SUCCESS && bad == 0) || cls == MPI_ERR_OP,
          "vector type: rc %d (class %d), %d wrong elements", rc, cls, bad);
    CHECK(s1.reduce_calls == s0.reduce_calls + 1 && s1.reduce_numacoll == s0.reduce_numacoll,
          "vector type: numacoll ran %llu calls (the MPI's own expected)",
          (unsigned long long)(s1.reduce_numacoll - s0.reduce_numacoll));
    MPI_Comm_free(&c);
    MPI_Type_free(&vec);
    if (g_rank == 0)
        printf("native: vector type: %s\n",
               rc == MPI_SUCCESS ? "right" : "the MPI library's own error MPI_ERR_OP");

    /* and numacoll's again after them */
    s0 = get_stats();
    rc = MPI_Allreduce(MPI_IN_PLACE, in, N, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    s1 = get_stats();
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += in[i] != tri * (i + 1);
    CHECK(rc == MPI_SUCCESS && bad == 0, "MPI_SUM after them: rc %d, %d wrong", rc, bad);
    CHECK(s1.allreduce_numacoll == s0.allreduce_numacoll + 1, "MPI_SUM after them: not numacoll's");
    if (g_rank == 0)
        printf("native: a user op (also in place at the last rank) and a vector type right, "
               "not numacoll's\n");
}

/* members that pass different counts: every member gets MPI_ERR_ARG (flat), the next call works */
static void test_mismatch(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = g_rank;
    int n = g_rank == g_size - 1 ? 32 : 64;
    int rc = MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, c);
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "counts 64 and 32: error class %d, expected MPI_ERR_ARG", cls);
    rc = MPI_Allreduce(in, out, 64, MPI_INT, MPI_SUM, c);
    CHECK(rc == MPI_SUCCESS && out[63] == g_size * (g_size - 1) / 2,
          "the next allreduce: rc %d, %d", rc, out[63]);
    MPI_Comm_free(&c);
    if (g_rank == 0) printf("mismatch: every member got MPI_ERR_ARG\n");
}

static void *kill_self_later(void *arg)
{
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kill(getpid(), SIGKILL);
    return arg;
}

/* the last rank dies (SIGKILL) before a loop of allreduces, or 0.3 s into it (the loop
 * spends nearly all its time inside the calls); the others must return an error instead of
 * waiting for it */
static void test_kill(const char *when)
{
    /* MPICH's hydra (-disable-auto-cleanup) tells the survivors of a failure with SIGUSR1,
     * whose default action ends them: ignored, so that numacoll's detection is tested */
    signal(SIGUSR1, SIG_IGN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    double in[4096], out[4096];
    for (int i = 0; i < 4096; i++)
        in[i] = g_rank + i;
    MPI_Allreduce(in, out, 4096, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* set up */
    printf("kill: rank %d pid %d ready\n", g_rank, (int)getpid());
    fflush(stdout);
    PMPI_Barrier(MPI_COMM_WORLD); /* every rank has said it before one dies */
    const int victim = g_size - 1, inside = !strcmp(when, "in");
    if (g_rank == victim && !inside) raise(SIGKILL);
    pthread_t killer;
    if (g_rank == victim) pthread_create(&killer, NULL, kill_self_later, NULL);
    for (long it = 0;; it++) {
        int rc = MPI_Allreduce(in, out, 4096, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            printf("kill: rank %d: allreduce %ld failed: %s\n", g_rank, it, msg);
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
    g_trace = getenv("NC_REDUCE_TRACE") && atoi(getenv("NC_REDUCE_TRACE")) == 1;
    const char *fe = getenv("NUMACOLL_REDUCE_FRAGMENT");
    if (fe && atol(fe) > 0) g_fragment = (size_t)atol(fe);
    const char *se = getenv("NC_REDUCE_SEED");
    if (g_rank == 0) g_seed = se ? strtoull(se, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    PMPI_Bcast(&g_seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int (*mode_fn)(MPI_Comm);
    *(void **)&mode_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_mode");
    g_mode = mode_fn ? mode_fn(MPI_COMM_WORLD) : 0;
    if (g_rank == 0)
        printf("%s: seed %llu (NC_REDUCE_SEED to rerun), %d ranks, communicator mode %d\n", mode,
               (unsigned long long)g_seed, g_size, g_mode);
    /* one process: nothing to share, the MPI library's own reductions (mode 0) */
    CHECK(g_stats_fn && (g_mode > 0 || g_size == 1),
          "numacoll does not handle MPI_COMM_WORLD (mode %d)", g_mode);
    rt_init();
    int level = -1;
    for (int l = LEVEL_TINY; l <= LEVEL_HUGE && argc > 2; l++)
        if (!strcmp(argv[2], level_names[l])) level = l;
    if (!strcmp(mode, "matrix") && level >= 0)
        test_matrix(level);
    else if (!strcmp(mode, "edges"))
        test_native(), test_mismatch();
    else if (!strcmp(mode, "kill") && argc > 2 &&
             (!strcmp(argv[2], "before") || !strcmp(argv[2], "in")))
        test_kill(argv[2]);
    else {
        if (g_rank == 0)
            fprintf(stderr,
                    "unknown mode or level '%s %s'; allowed: matrix tiny|small|full|huge, "
                    "edges, kill before|in\n",
                    mode, argc > 2 ? argv[2] : "");
        g_fail++;
    }
    int total = total_failures(MPI_COMM_WORLD);
    if (g_rank == 0) printf("%s: %s (%d failed checks)\n", mode, total ? "FAIL" : "PASS", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
