/*
 * Correctness of numacoll_allreduce / numacoll_reduce on forked teams of P = 1, 2, 3, 5, 8:
 *  - every allowed (type, op) pair against a serial reference computed here in the order
 *    include/numacoll/numacoll.h documents (((x_0 op x_1) op x_2) ... in rank order):
 *    integers exact (signed SUM and PROD wrap), floating point bitwise (inputs of mixed
 *    magnitudes, signed zeros and NaNs, where the order shows), long double on its value
 *    bytes, MINLOC/MAXLOC with ties (the smaller index wins) for every pair type;
 *  - sizes 0, 1, odd, around and at multiples of NUMACOLL_REDUCE_FRAGMENT, up to 3 MiB, in
 *    place (both forms) and not, every root, flat, rsag and the automatic choice;
 *  - results identical on every member and from call to call (same inputs, same bytes);
 *  - bad arguments, members that disagree on the call or on NUMACOLL_REDUCE_FRAGMENT: the
 *    documented error on every member, a message that names the problem, no hang, and the
 *    team's next reductions work.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/nc_internal.h"
#include "forkrun.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- the element types, as the test reads them ------------------------------------- */

/* the C pair types of MINLOC/MAXLOC that numacoll.h names */
typedef struct { float v; int i; } float_int_t;
typedef struct { double v; int i; } double_int_t;
typedef struct { long v; int i; } long_int_t;
typedef struct { int v; int i; } two_int_t;
typedef struct { short v; int i; } short_int_t;
typedef struct { long double v; int i; } long_double_int_t;
typedef struct { float v; float i; } two_float_t;
typedef struct { double v; double i; } two_double_t;

/* one field of an element: 'i' signed integer, 'u' unsigned integer, 'f' floating */
typedef struct field {
    char kind;
    unsigned char off, size;
} field_t;

typedef struct type_info {
    numacoll_dtype_t dtype;
    size_t size;
    field_t value;
    field_t index; /* size 0: not a pair type */
} type_info_t;

#define SCALAR(dt, kind, T) {dt, sizeof(T), {kind, 0, sizeof(T)}, {0, 0, 0}}
#define PAIR(dt, T, vkind, ikind)                                                                 \
    {dt, sizeof(T), {vkind, offsetof(T, v), sizeof(((T *)0)->v)},                                 \
     {ikind, offsetof(T, i), sizeof(((T *)0)->i)}}

static const type_info_t types[] = {
    SCALAR(NUMACOLL_INT8, 'i', int8_t),
    SCALAR(NUMACOLL_UINT8, 'u', uint8_t),
    SCALAR(NUMACOLL_INT16, 'i', int16_t),
    SCALAR(NUMACOLL_UINT16, 'u', uint16_t),
    SCALAR(NUMACOLL_INT32, 'i', int32_t),
    SCALAR(NUMACOLL_UINT32, 'u', uint32_t),
    SCALAR(NUMACOLL_INT64, 'i', int64_t),
    SCALAR(NUMACOLL_UINT64, 'u', uint64_t),
    SCALAR(NUMACOLL_FLOAT, 'f', float),
    SCALAR(NUMACOLL_DOUBLE, 'f', double),
    SCALAR(NUMACOLL_LONG_DOUBLE, 'f', long double),
    PAIR(NUMACOLL_FLOAT_INT, float_int_t, 'f', 'i'),
    PAIR(NUMACOLL_DOUBLE_INT, double_int_t, 'f', 'i'),
    PAIR(NUMACOLL_LONG_INT, long_int_t, 'i', 'i'),
    PAIR(NUMACOLL_2INT, two_int_t, 'i', 'i'),
    PAIR(NUMACOLL_SHORT_INT, short_int_t, 'i', 'i'),
    PAIR(NUMACOLL_LONG_DOUBLE_INT, long_double_int_t, 'f', 'i'),
    PAIR(NUMACOLL_2FLOAT, two_float_t, 'f', 'f'),
    PAIR(NUMACOLL_2DOUBLE, two_double_t, 'f', 'f'),
};
enum { NTYPES = sizeof types / sizeof types[0], MAX_ELEM = 32 };

static const type_info_t *type_of(numacoll_dtype_t dt)
{
    for (int t = 0; t < NTYPES; t++)
        if (types[t].dtype == dt) return &types[t];
    return NULL;
}

/* the pairs numacoll.h allows: integers with every op but MINLOC/MAXLOC, floating types
 * with SUM, PROD, MIN, MAX, pair types with MINLOC/MAXLOC */
static int op_allowed(const type_info_t *ti, numacoll_op_t op)
{
    int loc = op == NUMACOLL_OP_MINLOC || op == NUMACOLL_OP_MAXLOC;
    if (ti->index.size) return loc;
    if (ti->value.kind == 'f') return op <= NUMACOLL_OP_MAX;
    return !loc;
}

/* bytes of a field that carry its value: the 80-bit long double leaves 6 padding bytes */
static size_t value_bytes(field_t f)
{
    if (f.kind == 'f' && f.size == sizeof(long double) && LDBL_MANT_DIG == 64) return 10;
    return f.size;
}

static uint64_t load_bits(const unsigned char *e, field_t f)
{
    switch (f.size) {
    case 1: return *(const uint8_t *)(e + f.off);
    case 2: { uint16_t v; memcpy(&v, e + f.off, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, e + f.off, 4); return v; }
    default: { uint64_t v; memcpy(&v, e + f.off, 8); return v; }
    }
}

static int64_t load_signed(const unsigned char *e, field_t f)
{
    switch (f.size) {
    case 1: return *(const int8_t *)(e + f.off);
    case 2: { int16_t v; memcpy(&v, e + f.off, 2); return v; }
    case 4: { int32_t v; memcpy(&v, e + f.off, 4); return v; }
    default: { int64_t v; memcpy(&v, e + f.off, 8); return v; }
    }
}

/* truncating store of the low f.size bytes of v */
static void store_bits(unsigned char *e, field_t f, uint64_t v)
{
    uint8_t b1 = (uint8_t)v;
    uint16_t b2 = (uint16_t)v;
    uint32_t b4 = (uint32_t)v;
    memcpy(e + f.off, f.size == 1 ? (void *)&b1 : f.size == 2 ? (void *)&b2
                      : f.size == 4 ? (void *)&b4 : (void *)&v, f.size);
}

/* a field's value as a long double: exact for every field of every type here */
static long double load_number(const unsigned char *e, field_t f)
{
    if (f.kind == 'i') return (long double)load_signed(e, f);
    if (f.kind == 'u') return (long double)load_bits(e, f);
    if (f.size == sizeof(float)) { float v; memcpy(&v, e + f.off, sizeof v); return v; }
    if (f.size == sizeof(double)) { double v; memcpy(&v, e + f.off, sizeof v); return v; }
    long double v;
    memcpy(&v, e + f.off, sizeof v);
    return v;
}

static void store_number(unsigned char *e, field_t f, long double x)
{
    if (f.kind != 'f') {
        store_bits(e, f, (uint64_t)(int64_t)x);
    } else if (f.size == sizeof(float)) {
        float v = (float)x;
        memcpy(e + f.off, &v, sizeof v);
    } else if (f.size == sizeof(double)) {
        double v = (double)x;
        memcpy(e + f.off, &v, sizeof v);
    } else {
        memcpy(e + f.off, &x, value_bytes(f)); /* the padding keeps what the caller put */
    }
}

/* ---- the serial reference ----------------------------------------------------------- */

/* acc = acc op x in the floating type T, rounded to T at each step */
#define FLOAT_STEP(T)                                                                              \
    do {                                                                                           \
        T a, b;                                                                                    \
        memcpy(&a, acc, sizeof a);                                                                 \
        memcpy(&b, x, sizeof b);                                                                   \
        if (op == NUMACOLL_OP_SUM) a = a + b;                                                      \
        else if (op == NUMACOLL_OP_PROD) a = a * b;                                                \
        else if (op == NUMACOLL_OP_MIN ? b < a : b > a) a = b; /* keeps a NaN in a */           \
        memcpy(acc, &a, sizeof a);                                                                 \
    } while (0)

static void ref_step(const type_info_t *ti, numacoll_op_t op, unsigned char *acc,
                     const unsigned char *x)
{
    const field_t f = ti->value;
    if (ti->index.size) {
        long double va = load_number(acc, f), vx = load_number(x, f);
        long double ia = load_number(acc, ti->index), ix = load_number(x, ti->index);
        int better = op == NUMACOLL_OP_MINLOC ? vx < va : vx > va;
        if (better || (vx == va && ix < ia)) memcpy(acc, x, ti->size);
        return;
    }
    if (f.kind == 'f') {
        if (f.size == sizeof(float)) FLOAT_STEP(float);
        else if (f.size == sizeof(double)) FLOAT_STEP(double);
        else FLOAT_STEP(long double);
        return;
    }
    /* integers: SUM and PROD modulo 2^bits (the low bits are the same for both signs) */
    uint64_t a = load_bits(acc, f), b = load_bits(x, f), r = 0;
    int64_t sa = load_signed(acc, f), sb = load_signed(x, f);
    int b_less = f.kind == 'i' ? sb < sa : b < a, b_more = f.kind == 'i' ? sb > sa : b > a;
    switch (op) {
    case NUMACOLL_OP_SUM: r = a + b; break;
    case NUMACOLL_OP_PROD: r = a * b; break;
    case NUMACOLL_OP_MIN: r = b_less ? b : a; break;
    case NUMACOLL_OP_MAX: r = b_more ? b : a; break;
    case NUMACOLL_OP_LAND: r = a != 0 && b != 0; break;
    case NUMACOLL_OP_LOR: r = a != 0 || b != 0; break;
    case NUMACOLL_OP_LXOR: r = (a != 0) != (b != 0); break;
    case NUMACOLL_OP_BAND: r = a & b; break;
    case NUMACOLL_OP_BOR: r = a | b; break;
    default: r = a ^ b; break; /* BXOR */
    }
    store_bits(acc, f, r);
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* element k of rank r's input of a call seeded @p seed; padding bytes hold junk */
static void gen(const type_info_t *ti, numacoll_op_t op, uint64_t seed, int r, size_t k,
                unsigned char *e)
{
    uint64_t h = mix64(seed * 0x100000001B3ull ^ mix64(((uint64_t)r << 48) ^ k));
    memset(e, (int)(0xA0 | (h >> 60)), ti->size);
    const field_t f = ti->value;
    if (ti->index.size) { /* few values and indices: many ties */
        long double v = (long double)((int)(h % 5) - 2);
        store_number(e, f, f.kind == 'f' ? v * 0.75L : v);
        store_number(e, ti->index, (long double)((h >> 8) % 6));
    } else if (f.kind != 'f') { /* zeros and small values for the logical ops, else bits */
        unsigned cls = (unsigned)(h >> 61);
        store_bits(e, f, cls < 2 ? 0 : cls < 4 ? (uint64_t)(int64_t)((int)(h % 5) - 2) : h);
    } else if (op == NUMACOLL_OP_MIN || op == NUMACOLL_OP_MAX) {
        /* signed zeros (equal, told apart by bits), a NaN, ties */
        static const long double set[] = {0.0L, -0.0L, 1.5L, -1.5L, NAN, 2.0L, -2.0L, 0.0L};
        store_number(e, f, set[h % 8]);
    } else { /* mixed magnitudes (SUM) or factors near 1 (PROD): the order shows in the bits */
        long double m = 1.0L + (long double)(h >> 2) * 0x1p-62L;
        int ex = op == NUMACOLL_OP_SUM ? (int)(h % 41) - 20 : (int)(h % 4) - 2;
        store_number(e, f, ((h >> 1) & 1 ? -1 : 1) * ldexpl(m, ex));
    }
}

static int elem_equal(const type_info_t *ti, const unsigned char *a, const unsigned char *b)
{
    if (memcmp(a + ti->value.off, b + ti->value.off, value_bytes(ti->value))) return 0;
    return memcmp(a + ti->index.off, b + ti->index.off, ti->index.size) == 0;
}

static uint64_t hash_result(const type_info_t *ti, const unsigned char *p, size_t n)
{
    uint64_t h = NC_FNV_BASIS;
    for (size_t k = 0; k < n; k++, p += ti->size) {
        h = nc_fnv1a(h, p + ti->value.off, value_bytes(ti->value));
        h = nc_fnv1a(h, p + ti->index.off, ti->index.size);
    }
    return h;
}

/* "value V index I bytes .." of element @p e into @p buf */
static const char *format_elem(char *buf, size_t cap, const type_info_t *ti,
                               const unsigned char *e)
{
    int o = snprintf(buf, cap, "value %.21Lg index %.21Lg bytes", load_number(e, ti->value),
                     ti->index.size ? load_number(e, ti->index) : 0.0L);
    for (size_t b = 0; b < ti->size && o > 0 && (size_t)o < cap; b++)
        o += snprintf(buf + o, cap - (size_t)o, " %02x", e[b]);
    return buf;
}

/* ---- one call, checked ----------------------------------------------------------------- */

typedef struct rcase {
    const type_info_t *ti;
    numacoll_op_t op;
    size_t count;
    int root;          /* -1: allreduce */
    const char *alg;   /* NULL: numacoll_allreduce / numacoll_reduce; else reduce_with */
    int in_place;      /* 0: no; 1: NUMACOLL_IN_PLACE; 2: sendbuf == recvbuf */
    uint64_t seed;
    int same_as;       /* an earlier case with the same inputs, root and count, or -1 */
} rcase_t;

enum { GUARD = 3, MAX_CASES = 400, MAX_P = 8 };

/* one line on stderr: the member, case @p i and what went wrong */
static void report(const nc_forkctx_t *c, int i, const rcase_t *cs, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rank %d of %d, case %d: %s %s of %zu %s, root %d, alg %s, %s: %s\n",
            c->rank, c->size, i, cs->root < 0 ? "allreduce" : "reduce", numacoll_op_name(cs->op),
            cs->count, numacoll_dtype_name(cs->ti->dtype), cs->root,
            cs->alg ? cs->alg : "(default)",
            cs->in_place == 1 ? "NUMACOLL_IN_PLACE" : cs->in_place ? "sendbuf == recvbuf"
                                                                   : "out of place", what);
}

/* Run case @p i on this member and check its result against the reference; *hash: the
 * result's hash (0 without a result). Returns 0 or a failure code (printed). */
static int run_case(nc_forkctx_t *c, int i, const rcase_t *cs, uint64_t *hash)
{
    const type_info_t *ti = cs->ti;
    const size_t es = ti->size, n = cs->count;
    const int me = c->rank, gets = cs->root < 0 || cs->root == me;
    unsigned char *in = malloc(n * es + 1), *out = malloc((n + GUARD) * es);
    unsigned char acc[MAX_ELEM], x[MAX_ELEM];
    int fail = 0;
    if (!in || !out) return 40;
    for (size_t k = 0; k < n; k++)
        gen(ti, cs->op, cs->seed, me, k, in + k * es);
    int in_place = gets ? cs->in_place : 0;
    if (in_place) memcpy(out, in, n * es);
    else memset(out, 0x5C, n * es);
    memset(out + n * es, 0x5C, GUARD * es);
    const void *send = in_place == 1 ? NUMACOLL_IN_PLACE : in_place == 2 ? out : in;
    void *recv = gets || i % 2 ? out : NULL; /* a reduce's non-root may pass NULL */
    int rc = cs->alg ? numacoll_reduce_with(c->team, send, recv, n, ti->dtype, cs->op, cs->root,
                                            cs->alg)
             : cs->root < 0 ? numacoll_allreduce(c->team, send, recv, n, ti->dtype, cs->op)
                            : numacoll_reduce(c->team, send, recv, n, ti->dtype, cs->op, cs->root);
    *hash = 0;
    if (rc != NUMACOLL_OK) {
        report(c, i, cs, "returned %s: %s", numacoll_status_name(rc), numacoll_last_error());
        fail = 10;
    }
    for (size_t k = 0; !fail && gets && k < n; k++) {
        gen(ti, cs->op, cs->seed, 0, k, acc);
        for (int r = 1; r < c->size; r++) {
            gen(ti, cs->op, cs->seed, r, k, x);
            ref_step(ti, cs->op, acc, x);
        }
        if (!elem_equal(ti, acc, out + k * es)) {
            char want[200], got[200];
            report(c, i, cs, "element %zu differs from the rank-order fold: want %s, got %s", k,
                   format_elem(want, sizeof want, ti, acc),
                   format_elem(got, sizeof got, ti, out + k * es));
            fail = 11;
        }
    }
    if (!fail && gets) *hash = hash_result(ti, out, n);
    for (size_t b = gets ? n * es : 0; !fail && recv && b < (n + GUARD) * es; b++)
        if (out[b] != 0x5C) {
            report(c, i, cs, "byte %zu of recvbuf changed (%zu bytes of result)", b,
                   gets ? n * es : 0);
            fail = 12;
        }
    for (size_t k = 0; !fail && !in_place && k < n; k++) {
        gen(ti, cs->op, cs->seed, me, k, acc);
        if (memcmp(acc, in + k * es, es)) {
            report(c, i, cs, "sendbuf element %zu changed", k);
            fail = 13;
        }
    }
    free(in);
    free(out);
    return fail;
}

typedef struct launch {
    rcase_t cases[MAX_CASES];
    int n;
    uint64_t *hashes; /* shared with the members: [case * MAX_P + rank] */
} launch_t;

/* every member runs every case in order and leaves each result's hash */
static int cases_worker(nc_forkctx_t *c)
{
    const launch_t *l = c->arg;
    for (int i = 0; i < l->n; i++) {
        int fail = run_case(c, i, &l->cases[i], &l->hashes[i * MAX_P + c->rank]);
        if (fail) return fail;
    }
    return 0;
}

static void add(launch_t *l, rcase_t cs)
{
    assert_true(l->n < MAX_CASES);
    if (!cs.seed) cs.seed = (uint64_t)l->n * 7919u + 17u;
    l->cases[l->n++] = cs;
}

static const char *const algs[] = {NULL, "flat", "rsag", "auto"};

/* every allowed (type, op) pair once, rotating counts, roots, algorithms and in-place
 * forms; then floating-point sums three times with the same inputs (three algorithms) */
static void add_every_pair(launch_t *l, int P)
{
    static const size_t counts[] = {1, 5, 37, 130, 67, 3};
    int j = 0;
    for (int t = 0; t < NTYPES; t++)
        for (int op = 0; op < NUMACOLL_OP_COUNT; op++) {
            if (!op_allowed(&types[t], (numacoll_op_t)op)) continue;
            add(l, (rcase_t){.ti = &types[t], .op = (numacoll_op_t)op, .count = counts[j % 6],
                             .root = j % (P + 1) - 1, .alg = algs[j % 4], .in_place = j % 3,
                             .same_as = -1});
            j++;
        }
    for (int t = 0; t < NTYPES; t++) {
        if (types[t].value.kind != 'f' || types[t].index.size) continue;
        int first = l->n;
        for (int rep = 0; rep < 3; rep++)
            add(l, (rcase_t){.ti = &types[t], .op = NUMACOLL_OP_SUM, .count = 501, .root = -1,
                             .alg = algs[rep], .in_place = rep, .seed = 4242u + (uint64_t)t,
                             .same_as = rep ? first : -1});
    }
}

/* sizes around the chunk size (@p fragment bytes) for element sizes 1, 8 and 32, each as
 * an allreduce and a reduce; @p big adds 3 MiB + 24 bytes of doubles */
static void add_sizes(launch_t *l, int P, size_t fragment, int big)
{
    const type_info_t *szt[] = {type_of(NUMACOLL_INT8), type_of(NUMACOLL_DOUBLE),
                                type_of(NUMACOLL_LONG_DOUBLE_INT)};
    const numacoll_op_t szop[] = {NUMACOLL_OP_SUM, NUMACOLL_OP_SUM, NUMACOLL_OP_MAXLOC};
    int j = 0;
    for (int t = 0; t < 3; t++) {
        size_t per = fragment / szt[t]->size;
        const size_t counts[] = {0,   1,       2,           63,          per - 1,
                                 per, per + 1, 2 * per,     3 * per + 5, 9 * per + 3};
        for (size_t s = 0; s < sizeof counts / sizeof counts[0]; s++, j++) {
            add(l, (rcase_t){.ti = szt[t], .op = szop[t], .count = counts[s], .root = -1,
                             .alg = algs[1 + j % 3], .in_place = j % 3, .same_as = -1});
            add(l, (rcase_t){.ti = szt[t], .op = szop[t], .count = counts[s], .root = j % P,
                             .alg = algs[1 + (j + 1) % 3], .in_place = (j + 1) % 3,
                             .same_as = -1});
        }
    }
    for (int a = 0; big && a < 3; a++)
        add(l, (rcase_t){.ti = szt[1], .op = NUMACOLL_OP_SUM, .count = (3u << 20) / 8 + 3,
                         .root = a == 1 ? P - 1 : -1, .alg = algs[1 + a], .in_place = a,
                         .same_as = -1});
}

static void set_env(const char *fragment, const char *slots)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "30", 1); /* a hang becomes an error naming the culprit */
    if (fragment) setenv("NUMACOLL_REDUCE_FRAGMENT", fragment, 1);
    if (slots) setenv("NUMACOLL_REDUCE_SLOTS", slots, 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* @p worker on P members: none may fail or time out, and no segment may be left */
static void run_members(int P, nc_forkrun_fn worker, void *arg)
{
    int baseline = nc_shm_baseline();
    nc_forkresult_t res;
    int failed = nc_forkrun(P, NC_FORK_BIND, worker, arg, 0, 60, &res);
    assert_int_equal(res.timed_out, 0);
    assert_int_equal(failed, 0);
    assert_true(nc_shm_settle(baseline) <= baseline);
}

/* the cases of @p l on P members; then every member's result of an allreduce is the same,
 * and a case that repeats another's inputs has the same result */
static void run_launch(int P, launch_t *l)
{
    size_t bytes = (size_t)l->n * MAX_P * sizeof(uint64_t);
    l->hashes = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(l->hashes != MAP_FAILED);
    run_members(P, cases_worker, l);
    int allreduces = 0, repeats = 0;
    for (int i = 0; i < l->n; i++) {
        const rcase_t *cs = &l->cases[i];
        const uint64_t *h = &l->hashes[i * MAX_P];
        int at = cs->root < 0 ? 0 : cs->root;
        assert_true(h[at] != 0);
        for (int r = 1; cs->root < 0 && r < P; r++)
            assert_true(h[r] == h[0]);
        allreduces += cs->root < 0;
        if (cs->same_as < 0) continue;
        assert_true(h[at] == l->hashes[cs->same_as * MAX_P + at]);
        repeats++;
    }
    printf("P=%d: %d calls checked (%d allreduces identical on every member, %d repeats "
           "identical to their first call)\n", P, l->n, allreduces, repeats);
    munmap(l->hashes, bytes);
}

static launch_t the_launch;

static void run_pairs_and_sizes(int P, const char *fragment, const char *slots, int big)
{
    set_env(fragment, slots);
    memset(&the_launch, 0, sizeof the_launch);
    add_every_pair(&the_launch, P);
    /* the chunk size: the setting rounded up to 64 bytes (numacoll-info) */
    add_sizes(&the_launch, P, nc_round_up(nc_cfg_size(NC_CFG_REDUCE_FRAGMENT), 64), big);
    run_launch(P, &the_launch);
    set_env(NULL, NULL);
}

static void test_p1(void **state)
{
    (void)state;
    run_pairs_and_sizes(1, "4K", NULL, 0);
}

/* the default chunk size (64 KiB), 3 MiB messages */
static void test_p2(void **state)
{
    (void)state;
    run_pairs_and_sizes(2, NULL, NULL, 1);
}

/* 4 KiB chunks: the 3 MiB messages run 769 chunks through 4 slots */
static void test_p3(void **state)
{
    (void)state;
    run_pairs_and_sizes(3, "4K", NULL, 1);
}

/* chunks of 4160 bytes (4100 rounded up), not a power of two, through 2 slots */
static void test_p5(void **state)
{
    (void)state;
    run_pairs_and_sizes(5, "4100", "2", 0);
}

/* oversubscribed on a small machine */
static void test_p8(void **state)
{
    (void)state;
    run_pairs_and_sizes(8, "4K", NULL, 0);
}

/* NUMACOLL_REDUCE_SLOTS from 2 to 16 with the smallest and the default padding unit
 * (NUMACOLL_CACHELINE): the reductions work, 20 chunks of 4 KiB through the slots. The
 * signatures fit in the posted line up to 3 slots (32 bytes) or 15 (auto on x86: 128). */
static void test_slots_and_lines(void **state)
{
    (void)state;
    static const struct {
        const char *line, *slots;
    } settings[] = {{"32", "2"}, {"32", "4"}, {"32", "16"}, {NULL, "7"}, {NULL, "8"},
                    {NULL, "16"}};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        set_env("4K", settings[i].slots);
        if (settings[i].line) setenv("NUMACOLL_CACHELINE", settings[i].line, 1);
        assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
        memset(&the_launch, 0, sizeof the_launch);
        for (int a = 0; a < 3; a++)
            add(&the_launch, (rcase_t){.ti = type_of(NUMACOLL_DOUBLE), .op = NUMACOLL_OP_SUM,
                                       .count = 20 * 512 + 7, .root = a - 1, .alg = algs[1 + a],
                                       .same_as = -1});
        printf("NUMACOLL_CACHELINE=%s NUMACOLL_REDUCE_SLOTS=%s: ",
               settings[i].line ? settings[i].line : "auto", settings[i].slots);
        run_launch(2, &the_launch);
    }
    set_env(NULL, NULL);
}

/* ---- the types' sizes and names ------------------------------------------------------- */

static void test_types(void **state)
{
    (void)state;
    assert_int_equal(NTYPES, NUMACOLL_DTYPE_COUNT);
    for (int t = 0; t < NTYPES; t++) {
        assert_int_equal(numacoll_dtype_size(types[t].dtype), types[t].size);
        assert_string_not_equal(numacoll_dtype_name(types[t].dtype), "?");
    }
    assert_int_equal(numacoll_dtype_size(NUMACOLL_DTYPE_COUNT), 0);
    assert_string_equal(numacoll_dtype_name((numacoll_dtype_t)-1), "?");
    assert_string_equal(numacoll_op_name(NUMACOLL_OP_MAXLOC), "maxloc");
    assert_string_equal(numacoll_op_name(NUMACOLL_OP_COUNT), "?");
    int n = 0, found = 0;
    const numacoll_algorithm_info_t *info = numacoll_reduce_algorithms(&n);
    for (int i = 0; i < n; i++)
        found += !strcmp(info[i].name, "flat") || !strcmp(info[i].name, "rsag");
    assert_int_equal(found, 2);
}

/* ---- bad arguments ------------------------------------------------------------------ */

/* a small allreduce, checked: the team works after a failed call */
static int team_works(nc_forkctx_t *c, int after)
{
    rcase_t ok = {.ti = type_of(NUMACOLL_DOUBLE), .op = NUMACOLL_OP_SUM, .count = 700,
                  .root = -1, .seed = 99u + (uint64_t)after, .same_as = -1};
    uint64_t hash;
    return run_case(c, 1000 + after, &ok, &hash) ? 30 + after : 0;
}

/* rc is @p want and the message holds @p n1 and @p n2 (if not NULL) */
static int check_error(const nc_forkctx_t *c, const char *what, int rc, int want, const char *n1,
                       const char *n2)
{
    const char *msg = rc ? numacoll_last_error() : "";
    if (rc == want && (!n1 || strstr(msg, n1)) && (!n2 || strstr(msg, n2))) return 0;
    fprintf(stderr, "rank %d of %d, %s: %s (wanted %s naming '%s' and '%s'): %s\n", c->rank,
            c->size, what, numacoll_status_name(rc), numacoll_status_name(want), n1 ? n1 : "",
            n2 ? n2 : "", msg);
    return 1;
}

static int errors_worker(nc_forkctx_t *c)
{
    numacoll_team_t *t = c->team;
    const int me = c->rank, P = c->size;
    double in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    const numacoll_dtype_t D = NUMACOLL_DOUBLE;
    const numacoll_op_t SUM = NUMACOLL_OP_SUM;
    char n1[96], n2[96];
    int bad = 0, step = 0;
#define EXPECT(what, call, want, a, b)                                                             \
    do {                                                                                           \
        bad += check_error(c, what, call, want, a, b);                                             \
        if (want != NUMACOLL_OK || step % 4 == 0) bad += team_works(c, step);                      \
        step++;                                                                                    \
    } while (0)
    EXPECT("BAND on double", numacoll_allreduce(t, in, out, 8, D, NUMACOLL_OP_BAND),
           NUMACOLL_ERR_ARG, "op band is not defined on double", "allowed: sum, prod, min, max");
    EXPECT("MINLOC on int32", numacoll_allreduce(t, in, out, 8, NUMACOLL_INT32,
                                                  NUMACOLL_OP_MINLOC),
           NUMACOLL_ERR_ARG, "op minloc is not defined on int32", "allowed: every op but minloc");
    EXPECT("SUM on double_int", numacoll_reduce(t, in, out, 4, NUMACOLL_DOUBLE_INT, SUM, 0),
           NUMACOLL_ERR_ARG, "op sum is not defined on double_int", "allowed: minloc, maxloc");
    snprintf(n1, sizeof n1, "datatype %d unknown", NUMACOLL_DTYPE_COUNT);
    snprintf(n2, sizeof n2, "allowed: 0..%d", NUMACOLL_DTYPE_COUNT - 1);
    EXPECT("datatype past the enum",
           numacoll_allreduce(t, in, out, 8, NUMACOLL_DTYPE_COUNT, SUM), NUMACOLL_ERR_ARG, n1,
           n2);
    EXPECT("datatype -1", numacoll_allreduce(t, in, out, 8, (numacoll_dtype_t)-1, SUM),
           NUMACOLL_ERR_ARG, "datatype -1 unknown", n2);
    snprintf(n1, sizeof n1, "op %d unknown", NUMACOLL_OP_COUNT);
    EXPECT("op past the enum", numacoll_allreduce(t, in, out, 8, D, NUMACOLL_OP_COUNT),
           NUMACOLL_ERR_ARG, n1, "numacoll_op_t");
    snprintf(n1, sizeof n1, "root=%d", P);
    snprintf(n2, sizeof n2, "allowed: 0..%d", P - 1);
    EXPECT("root = P", numacoll_reduce(t, in, out, 8, D, SUM, P), NUMACOLL_ERR_ARG, n1, n2);
    EXPECT("root -1", numacoll_reduce(t, in, out, 8, D, SUM, -1), NUMACOLL_ERR_ARG, "root=-1",
           n2);
    EXPECT("NULL recvbuf", numacoll_allreduce(t, in, NULL, 8, D, SUM), NUMACOLL_ERR_ARG,
           "recvbuf is NULL", "numacoll_allreduce");
    EXPECT("NULL sendbuf", numacoll_allreduce(t, NULL, out, 8, D, SUM), NUMACOLL_ERR_ARG,
           "sendbuf is NULL", "numacoll_allreduce");
    /* the root fails too (NULL recvbuf), so nobody waits for a member that left */
    EXPECT("NULL sendbuf of a reduce's non-root",
           numacoll_reduce(t, me ? NULL : in, me ? out : NULL, 8, D, SUM, 0), NUMACOLL_ERR_ARG,
           me ? "sendbuf is NULL" : "recvbuf is NULL", "numacoll_reduce");
    /* IN_PLACE on the non-roots (the root's NULL recvbuf fails it too) */
    snprintf(n1, sizeof n1, "NUMACOLL_IN_PLACE on rank %d", me);
    EXPECT("NUMACOLL_IN_PLACE on a non-root",
           numacoll_reduce(t, NUMACOLL_IN_PLACE, me ? out : NULL, 8, D, SUM, 0),
           NUMACOLL_ERR_ARG, me ? n1 : "recvbuf is NULL", me ? "only the root" : NULL);
    EXPECT("unknown algorithm", numacoll_reduce_with(t, in, out, 8, D, SUM, -1, "ring"),
           NUMACOLL_ERR_ARG, "'ring' unknown", "allowed: auto, flat, rsag");
    EXPECT("count beyond the address space",
           numacoll_allreduce(t, in, out, SIZE_MAX / 4, D, SUM), NUMACOLL_ERR_TOOBIG,
           "exceed the address space", "double");
    /* allowed: nothing to read or write */
    EXPECT("count 0, NULL buffers", numacoll_allreduce(t, NULL, NULL, 0, D, SUM), NUMACOLL_OK,
           NULL, NULL);
    EXPECT("reduce of count 0, NULL buffers",
           numacoll_reduce_with(t, NULL, NULL, 0, D, SUM, P - 1, "rsag"), NUMACOLL_OK, NULL,
           NULL);
#undef EXPECT
    bad += check_error(c, "NULL team", numacoll_allreduce(NULL, in, out, 8, D, SUM),
                       NUMACOLL_ERR_ARG, "team is NULL", NULL);
    return bad ? 20 : 0;
}

static void test_bad_arguments(void **state)
{
    (void)state;
    set_env(NULL, NULL);
    for (int P = 1; P <= 3; P++)
        run_members(P, errors_worker, NULL);
}

/* ---- members that disagree --------------------------------------------------------- */

typedef struct call_args {
    numacoll_dtype_t dtype;
    numacoll_op_t op;
    size_t count;
    int root;
    const char *alg;
} call_args_t;

typedef struct mismatch {
    const char *what;
    call_args_t base, odd; /* the odd member's arguments and everybody else's */
} mismatch_t;

static const mismatch_t mismatches[] = {
    {"count (1 and 6 chunks)", {NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 10, -1, NULL},
     {NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 3000, -1, NULL}},
    {"count (6 chunks and 0)", {NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 3000, -1, "rsag"},
     {NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 0, -1, "rsag"}},
    {"op", {NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 700, -1, "flat"},
     {NUMACOLL_DOUBLE, NUMACOLL_OP_PROD, 700, -1, "flat"}},
    {"datatype of the same size", {NUMACOLL_INT32, NUMACOLL_OP_SUM, 33, 0, NULL},
     {NUMACOLL_FLOAT, NUMACOLL_OP_SUM, 33, 0, NULL}},
    {"root", {NUMACOLL_DOUBLE, NUMACOLL_OP_MAX, 5000, 0, "rsag"},
     {NUMACOLL_DOUBLE, NUMACOLL_OP_MAX, 5000, 2, "rsag"}},
    {"algorithm", {NUMACOLL_UINT16, NUMACOLL_OP_BOR, 600, -1, "flat"},
     {NUMACOLL_UINT16, NUMACOLL_OP_BOR, 600, -1, "rsag"}},
    {"allreduce and reduce", {NUMACOLL_INT64, NUMACOLL_OP_SUM, 9, -1, "flat"},
     {NUMACOLL_INT64, NUMACOLL_OP_SUM, 9, 1, "flat"}},
};
enum { NMISMATCH = sizeof mismatches / sizeof mismatches[0] };

/* Each mismatch with each member as the odd one: every member returns NUMACOLL_ERR_ARG
 * naming the first member (in rank order) whose arguments differ from its own, and a
 * checked allreduce follows. */
static int mismatch_worker(nc_forkctx_t *c)
{
    static unsigned char in[5000 * 8], out[5000 * 8];
    const int me = c->rank;
    int bad = 0, step = 0;
    for (int m = 0; m < NMISMATCH; m++)
        for (int odd = 0; odd < c->size; odd++, step++) {
            const mismatch_t *mm = &mismatches[m];
            const call_args_t *a = me == odd ? &mm->odd : &mm->base;
            int named = me != odd ? odd : odd == 0 ? 1 : 0;
            char want[96], what[96];
            snprintf(want, sizeof want, "rank %d passed other arguments than rank %d", named, me);
            snprintf(what, sizeof what, "%s differs on rank %d", mm->what, odd);
            int rc = numacoll_reduce_with(c->team, in, out, a->count, a->dtype, a->op, a->root,
                                          a->alg);
            bad += check_error(c, what, rc, NUMACOLL_ERR_ARG, want, "every member must pass");
            bad += team_works(c, step);
        }
    return bad ? 20 : 0;
}

static void test_mismatch(void **state)
{
    (void)state;
    set_env("4K", NULL);
    run_members(3, mismatch_worker, NULL);
    set_env(NULL, NULL);
}

/* Rank 1 sets another NUMACOLL_REDUCE_FRAGMENT: the team's first reduction fails on every
 * member with NUMACOLL_ERR_CONFIG naming the setting, and again at the next try; once rank
 * 1 spells the same size otherwise (4096 for 4K), the reductions work. */
static int fragment_worker(nc_forkctx_t *c)
{
    int bad = 0;
    if (c->rank == 1) {
        setenv("NUMACOLL_REDUCE_FRAGMENT", "8K", 1);
        if (numacoll_config_reload() != NUMACOLL_OK) return 21;
    }
    double in[100] = {0}, out[100];
    const char *blame = c->rank == 1 ? "differs from rank 0's setting" : "rank 1 failed";
    for (int attempt = 0; attempt < 2; attempt++) {
        int rc = numacoll_allreduce(c->team, in, out, 100, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM);
        bad += check_error(c, "NUMACOLL_REDUCE_FRAGMENT=8K on rank 1", rc, NUMACOLL_ERR_CONFIG,
                           "NUMACOLL_REDUCE_FRAGMENT=8K", blame);
    }
    if (c->rank == 1) {
        setenv("NUMACOLL_REDUCE_FRAGMENT", "4096", 1);
        if (numacoll_config_reload() != NUMACOLL_OK) return 22;
    }
    bad += team_works(c, 0);
    return bad ? 20 : 0;
}

static void test_fragment_mismatch(void **state)
{
    (void)state;
    set_env("4K", NULL);
    run_members(3, fragment_worker, NULL);
    set_env(NULL, NULL);
}

int main(void)
{
    /* NC_TEST_FILTER=test_name (cmocka's wildcards) runs only the matching tests */
    if (getenv("NC_TEST_FILTER")) cmocka_set_test_filter(getenv("NC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_p1),
        cmocka_unit_test(test_p2),
        cmocka_unit_test(test_p3),
        cmocka_unit_test(test_p5),
        cmocka_unit_test(test_p8),
        cmocka_unit_test(test_slots_and_lines),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_fragment_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
