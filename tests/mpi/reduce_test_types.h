/*
 * The predefined C datatypes of mpi_reduce_test and, for each, what the test needs without
 * numacoll's code: MPI's rule of which ops it takes, inputs drawn from a hash (per op, so
 * that every op's result varies), the serial combine of two elements (x op y, x the
 * earlier ranks' fold), and comparisons of results (bitwise on the value's bytes, padding
 * left out; within a tolerance for sums and products of floating types).
 */
#ifndef NC_REDUCE_TEST_TYPES_H
#define NC_REDUCE_TEST_TYPES_H

#include <math.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum {
    RT_SUM,
    RT_PROD,
    RT_MIN,
    RT_MAX,
    RT_LAND,
    RT_LOR,
    RT_LXOR,
    RT_BAND,
    RT_BOR,
    RT_BXOR,
    RT_MINLOC,
    RT_MAXLOC,
    RT_OP_COUNT
};

/* kinds of types: which ops they take and how their elements are made and combined */
enum { K_INT, K_FLOAT, K_PAIR, K_BYTE, K_BOOL };
/* the value member of a pair type (the index is an int) */
enum { V_FLOAT, V_DOUBLE, V_LONG_DOUBLE, V_LONG, V_INT, V_SHORT };

typedef struct rtype {
    MPI_Datatype mpi;
    const char *name;
    int kind;
    size_t size;   /* the C type's size (a pair's with its padding) */
    int is_signed; /* K_INT */
    int value;     /* K_FLOAT (V_FLOAT .. V_LONG_DOUBLE), K_PAIR: the value's type */
} rtype_t;

typedef struct {
    float v;
    int i;
} rt_float_int;
typedef struct {
    double v;
    int i;
} rt_double_int;
typedef struct {
    long double v;
    int i;
} rt_long_double_int;
typedef struct {
    long v;
    int i;
} rt_long_int;
typedef struct {
    int v;
    int i;
} rt_2int;
typedef struct {
    short v;
    int i;
} rt_short_int;

enum { RT_MAX_TYPES = 40 };
static rtype_t g_rt[RT_MAX_TYPES];
static int g_nrt;

static void rt_add(MPI_Datatype mpi, const char *name, int kind, size_t size, int is_signed,
                   int value)
{
    if (mpi == MPI_DATATYPE_NULL || g_nrt == RT_MAX_TYPES) return;
    g_rt[g_nrt++] = (rtype_t){mpi, name, kind, size, is_signed, value};
}

static void rt_init(void)
{
#define INT_T(m, T, s) rt_add(m, #T, K_INT, sizeof(T), s, 0)
    INT_T(MPI_SIGNED_CHAR, signed char, 1);
    INT_T(MPI_SHORT, short, 1);
    INT_T(MPI_INT, int, 1);
    INT_T(MPI_LONG, long, 1);
    INT_T(MPI_LONG_LONG, long long, 1);
    INT_T(MPI_INT8_T, int8_t, 1);
    INT_T(MPI_INT16_T, int16_t, 1);
    INT_T(MPI_INT32_T, int32_t, 1);
    INT_T(MPI_INT64_T, int64_t, 1);
    INT_T(MPI_UNSIGNED_CHAR, unsigned char, 0);
    INT_T(MPI_UNSIGNED_SHORT, unsigned short, 0);
    INT_T(MPI_UNSIGNED, unsigned, 0);
    INT_T(MPI_UNSIGNED_LONG, unsigned long, 0);
    INT_T(MPI_UNSIGNED_LONG_LONG, unsigned long long, 0);
    INT_T(MPI_UINT8_T, uint8_t, 0);
    INT_T(MPI_UINT16_T, uint16_t, 0);
    INT_T(MPI_UINT32_T, uint32_t, 0);
    INT_T(MPI_UINT64_T, uint64_t, 0);
#undef INT_T
    rt_add(MPI_FLOAT, "float", K_FLOAT, sizeof(float), 1, V_FLOAT);
    rt_add(MPI_DOUBLE, "double", K_FLOAT, sizeof(double), 1, V_DOUBLE);
    rt_add(MPI_LONG_DOUBLE, "long double", K_FLOAT, sizeof(long double), 1, V_LONG_DOUBLE);
    rt_add(MPI_FLOAT_INT, "MPI_FLOAT_INT", K_PAIR, sizeof(rt_float_int), 1, V_FLOAT);
    rt_add(MPI_DOUBLE_INT, "MPI_DOUBLE_INT", K_PAIR, sizeof(rt_double_int), 1, V_DOUBLE);
    rt_add(MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", K_PAIR, sizeof(rt_long_double_int), 1,
           V_LONG_DOUBLE);
    rt_add(MPI_LONG_INT, "MPI_LONG_INT", K_PAIR, sizeof(rt_long_int), 1, V_LONG);
    rt_add(MPI_2INT, "MPI_2INT", K_PAIR, sizeof(rt_2int), 1, V_INT);
    rt_add(MPI_SHORT_INT, "MPI_SHORT_INT", K_PAIR, sizeof(rt_short_int), 1, V_SHORT);
    rt_add(MPI_BYTE, "MPI_BYTE", K_BYTE, 1, 0, 0);
    rt_add(MPI_C_BOOL, "MPI_C_BOOL", K_BOOL, sizeof(_Bool), 0, 0);
}

static int rt_count(void)
{
    return g_nrt;
}
static const rtype_t *rt_get(int i)
{
    return &g_rt[i];
}

static inline const rtype_t *rt_by_name(const char *name)
{
    for (int i = 0; i < g_nrt; i++)
        if (!strcmp(g_rt[i].name, name)) return &g_rt[i];
    return NULL;
}

static MPI_Op rt_mpi_op(int op)
{
    const MPI_Op ops[RT_OP_COUNT] = {MPI_SUM,  MPI_PROD, MPI_MIN, MPI_MAX,  MPI_LAND,   MPI_LOR,
                                     MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    return ops[op];
}

static const char *rt_op_name(int op)
{
    static const char *const names[RT_OP_COUNT] = {
        "MPI_SUM",  "MPI_PROD", "MPI_MIN", "MPI_MAX",  "MPI_LAND",   "MPI_LOR",
        "MPI_LXOR", "MPI_BAND", "MPI_BOR", "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC"};
    return names[op];
}

/* MPI's rule (MPI-4.1 section 6.9.2) */
static int rt_allows(const rtype_t *t, int op)
{
    switch (t->kind) {
    case K_INT:
        return op <= RT_BXOR;
    case K_FLOAT:
        return op <= RT_MAX;
    case K_PAIR:
        return op == RT_MINLOC || op == RT_MAXLOC;
    case K_BYTE:
        return op == RT_BAND || op == RT_BOR || op == RT_BXOR;
    default:
        return op == RT_LAND || op == RT_LOR || op == RT_LXOR;
    }
}

/* the result depends on the order of the fold (floating-point sums and products) */
static int rt_order_matters(const rtype_t *t, int op)
{
    return t->kind == K_FLOAT && (op == RT_SUM || op == RT_PROD);
}

/* ---- elements as numbers ------------------------------------------------------------ */

static uint64_t rt_mask(const rtype_t *t)
{
    return t->size >= 8 ? ~0ull : (1ull << (8 * t->size)) - 1;
}

static uint64_t rt_load_u(const rtype_t *t, const void *p)
{
    uint64_t v = 0;
    memcpy(&v, p, t->size); /* little-endian: the low bytes */
    return v;
}

static int64_t rt_signed(const rtype_t *t, uint64_t v)
{
    unsigned shift = (unsigned)(64 - 8 * t->size);
    return (int64_t)(v << shift) >> shift;
}

/* an element's value member as a long double (exact for every value type here), and back */
#define RT_VALUE_CASES(X)                                                                          \
    X(V_FLOAT, float)                                                                              \
    X(V_DOUBLE, double) X(V_LONG_DOUBLE, long double) X(V_LONG, long) X(V_INT, int)                \
        X(V_SHORT, short)
#define RT_LOAD(tag, T)                                                                            \
    case tag: {                                                                                    \
        T x_;                                                                                      \
        memcpy(&x_, p, sizeof x_);                                                                 \
        return (long double)x_;                                                                    \
    }
#define RT_STORE(tag, T)                                                                           \
    case tag: {                                                                                    \
        T x_ = (T)v;                                                                               \
        memcpy(p, &x_, sizeof x_);                                                                 \
        return;                                                                                    \
    }

static long double rt_load_f(int value, const void *p)
{
    switch (value) {
        RT_VALUE_CASES(RT_LOAD)
    }
    return 0;
}

static void rt_store_f(int value, void *p, long double v)
{
    switch (value) {
        RT_VALUE_CASES(RT_STORE)
    }
}
#undef RT_LOAD
#undef RT_STORE
#undef RT_VALUE_CASES

/* bytes of a value that carry it (x86 long double: 10 of its 16) */
static size_t rt_value_bytes(int value)
{
    static const size_t n[] = {[V_FLOAT] = 4,           [V_DOUBLE] = 8, [V_LONG_DOUBLE] = 10,
                               [V_LONG] = sizeof(long), [V_INT] = 4,    [V_SHORT] = 2};
    return n[value];
}

/* offset of a pair's index (the C struct's) */
static size_t rt_index_offset(int value)
{
    switch (value) {
    case V_FLOAT:
        return offsetof(rt_float_int, i);
    case V_DOUBLE:
        return offsetof(rt_double_int, i);
    case V_LONG_DOUBLE:
        return offsetof(rt_long_double_int, i);
    case V_LONG:
        return offsetof(rt_long_int, i);
    case V_INT:
        return offsetof(rt_2int, i);
    default:
        return offsetof(rt_short_int, i);
    }
}

/* ---- inputs ------------------------------------------------------------------------- */

/* a floating value: a full mantissa at a random scale below 1 (sums round differently in
 * another order), or near 1 for products; never zero */
static long double rt_gen_float(int value, int op, uint64_t rnd)
{
    /* 2^-k, k = 0 .. 23 (exact: powers of two) */
    static const long double scale[24] = {
        0x1p-0L,  0x1p-1L,  0x1p-2L,  0x1p-3L,  0x1p-4L,  0x1p-5L,  0x1p-6L,  0x1p-7L,
        0x1p-8L,  0x1p-9L,  0x1p-10L, 0x1p-11L, 0x1p-12L, 0x1p-13L, 0x1p-14L, 0x1p-15L,
        0x1p-16L, 0x1p-17L, 0x1p-18L, 0x1p-19L, 0x1p-20L, 0x1p-21L, 0x1p-22L, 0x1p-23L};
    int bits = value == V_FLOAT ? 24 : value == V_DOUBLE ? 53 : 63;
    uint64_t m = (rnd & ((1ull << bits) - 1)) | 1;
    long double frac = (long double)m * (value == V_FLOAT    ? 0x1p-24L
                                         : value == V_DOUBLE ? 0x1p-53L
                                                             : 0x1p-63L); /* in (0, 1) */
    if (op == RT_PROD) return 1.0L + (frac - 0.5L) * 0x1p-6L;
    long double v = frac * scale[(rnd >> 58) % 24];
    return (rnd >> 57) & 1 ? -v : v;
}

static void rt_gen(const rtype_t *t, int op, uint64_t rnd, void *out)
{
    uint64_t r2 = rnd * 0x9E3779B97F4A7C15ull + 7;
    /* logical ops: a zero with probability 1/8 (LAND), 7/8 (LOR), 1/2 (LXOR) */
    int zero = op == RT_LAND ? (r2 >> 61) == 0 : op == RT_LOR ? (r2 >> 61) != 0 : (r2 >> 63);
    switch (t->kind) {
    case K_INT: {
        uint64_t v = rnd;
        if (op == RT_PROD) { /* 1 .. 3, negative half of the time: products wrap late */
            int64_t s = 1 + (int64_t)(rnd % 3);
            v = (uint64_t)(t->is_signed && (rnd >> 62) ? -s : s);
        } else if (op >= RT_LAND && op <= RT_LXOR) { /* nonzero: one bit high in the type */
            v = zero ? 0 : 1ull << ((rnd >> 16) % (8 * t->size));
        }
        v &= rt_mask(t);
        memcpy(out, &v, t->size);
        break;
    }
    case K_FLOAT:
        rt_store_f(t->value, out, rt_gen_float(t->value, op, rnd));
        break;
    case K_PAIR: { /* values from a small set and indices 0 .. 3: ties are frequent */
        memset(out, 0, t->size);
        long double v = (long double)((int)(rnd % 3) - 1);
        if (t->value <= V_LONG_DOUBLE) v *= 1.5L;
        rt_store_f(t->value, out, v);
        int idx = (int)((rnd >> 8) % 4);
        memcpy((char *)out + rt_index_offset(t->value), &idx, sizeof idx);
        break;
    }
    case K_BYTE:
        *(unsigned char *)out = (unsigned char)rnd;
        break;
    default: {
        _Bool b = !zero;
        memcpy(out, &b, sizeof b);
        break;
    }
    }
}

/* ---- the serial fold: acc = acc op y ------------------------------------------------- */

/* a floating type's SUM, PROD, MIN, MAX (MIN and MAX keep acc unless y is below / above) */
#define RT_FOLD_FN(name, T)                                                                        \
    static void name(int op, void *acc, const void *y)                                             \
    {                                                                                              \
        T a, b, r;                                                                                 \
        memcpy(&a, acc, sizeof a);                                                                 \
        memcpy(&b, y, sizeof b);                                                                   \
        switch (op) {                                                                              \
        case RT_SUM:                                                                               \
            r = a + b;                                                                             \
            break;                                                                                 \
        case RT_PROD:                                                                              \
            r = a * b;                                                                             \
            break;                                                                                 \
        case RT_MIN:                                                                               \
            r = b < a ? b : a;                                                                     \
            break;                                                                                 \
        default:                                                                                   \
            r = b > a ? b : a;                                                                     \
            break;                                                                                 \
        }                                                                                          \
        memcpy(acc, &r, sizeof r);                                                                 \
    }
RT_FOLD_FN(rt_fold_float, float)
RT_FOLD_FN(rt_fold_double, double)
RT_FOLD_FN(rt_fold_long_double, long double)
#undef RT_FOLD_FN

static void rt_combine(const rtype_t *t, int op, void *acc, const void *y)
{
    if (t->kind == K_FLOAT) { /* in the C type itself: the bits of its own arithmetic */
        if (t->value == V_FLOAT)
            rt_fold_float(op, acc, y);
        else if (t->value == V_DOUBLE)
            rt_fold_double(op, acc, y);
        else
            rt_fold_long_double(op, acc, y);
        return;
    }
    if (t->kind == K_PAIR) {
        size_t io = rt_index_offset(t->value);
        long double xv = rt_load_f(t->value, acc), yv = rt_load_f(t->value, y);
        int xi, yi;
        memcpy(&xi, (const char *)acc + io, sizeof xi);
        memcpy(&yi, (const char *)y + io, sizeof yi);
        /* MPI: the smaller index when the values tie */
        int take = op == RT_MINLOC ? (yv < xv || (yv == xv && yi < xi))
                                   : (yv > xv || (yv == xv && yi < xi));
        if (take) memcpy(acc, y, t->size);
        return;
    }
    /* integers, bytes and bools: as 64-bit words, cut to the type's width */
    uint64_t a = rt_load_u(t, acc), b = rt_load_u(t, y), r;
    int64_t sa = rt_signed(t, a), sb = rt_signed(t, b);
    int less = t->is_signed ? sb < sa : b < a, more = t->is_signed ? sb > sa : b > a;
    switch (op) {
    case RT_SUM:
        r = a + b;
        break;
    case RT_PROD:
        r = a * b;
        break;
    case RT_MIN:
        r = less ? b : a;
        break;
    case RT_MAX:
        r = more ? b : a;
        break;
    case RT_LAND:
        r = a && b;
        break;
    case RT_LOR:
        r = a || b;
        break;
    case RT_LXOR:
        r = !a != !b;
        break;
    case RT_BAND:
        r = a & b;
        break;
    case RT_BOR:
        r = a | b;
        break;
    default:
        r = a ^ b;
        break;
    }
    r &= rt_mask(t);
    memcpy(acc, &r, t->size);
}

/* ---- comparing results -------------------------------------------------------------- */

/* the bytes that carry an element's value (padding left out), into @p out; returns how many */
static size_t rt_value_of(const rtype_t *t, const void *p, unsigned char *out)
{
    if (t->kind == K_FLOAT) {
        size_t n = rt_value_bytes(t->value);
        memcpy(out, p, n);
        return n;
    }
    if (t->kind == K_PAIR) {
        size_t n = rt_value_bytes(t->value);
        memcpy(out, p, n);
        memcpy(out + n, (const char *)p + rt_index_offset(t->value), sizeof(int));
        return n + sizeof(int);
    }
    memcpy(out, p, t->size);
    return t->size;
}

static int rt_same(const rtype_t *t, const void *a, const void *b)
{
    unsigned char x[32], y[32];
    size_t n = rt_value_of(t, a, x);
    return rt_value_of(t, b, y) == n && !memcmp(x, y, n);
}

/* floating sums and products of @p nprocs inputs each below 1 in magnitude (or near 1): in
 * any order within a few units of the type's epsilon per member */
static int rt_close(const rtype_t *t, const void *a, const void *b, int nprocs)
{
    long double eps = t->value == V_FLOAT ? 0x1p-23L : t->value == V_DOUBLE ? 0x1p-52L : 0x1p-63L;
    long double d = fabsl(rt_load_f(t->value, a) - rt_load_f(t->value, b));
    return d <= 4 * nprocs * eps;
}

static inline uint64_t rt_hash(const rtype_t *t, const void *p, uint64_t h)
{
    unsigned char v[32];
    size_t n = rt_value_of(t, p, v);
    for (size_t i = 0; i < n; i++)
        h = (h ^ v[i]) * 1099511628211ull;
    return h;
}

static void rt_format(const rtype_t *t, const void *p, char *out, size_t len)
{
    if (t->kind == K_FLOAT)
        snprintf(out, len, "%.21Lg", rt_load_f(t->value, p));
    else if (t->kind == K_PAIR) {
        int i;
        memcpy(&i, (const char *)p + rt_index_offset(t->value), sizeof i);
        snprintf(out, len, "(%Lg, %d)", rt_load_f(t->value, p), i);
    } else
        snprintf(out, len, "%llu", (unsigned long long)rt_load_u(t, p));
}

#endif
