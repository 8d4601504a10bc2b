/*
 * The element model of the reduction tests (test_reduce*.c): the types of numacoll_dtype_t
 * as the tests read them, the (type, op) pairs numacoll.h allows, inputs generated from a
 * seed, rank and index, and the serial reference step acc = acc op x.
 */
#ifndef NC_TEST_REDUCE_ELEMENTS_H
#define NC_TEST_REDUCE_ELEMENTS_H

#include <numacoll/numacoll.h>

#include "core/nc_internal.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

static inline const type_info_t *type_of(numacoll_dtype_t dt)
{
    for (int t = 0; t < NTYPES; t++)
        if (types[t].dtype == dt) return &types[t];
    return NULL;
}

/* the pairs numacoll.h allows: integers with every op but MINLOC/MAXLOC, floating types
 * with SUM, PROD, MIN, MAX, pair types with MINLOC/MAXLOC */
static inline int op_allowed(const type_info_t *ti, numacoll_op_t op)
{
    int loc = op == NUMACOLL_OP_MINLOC || op == NUMACOLL_OP_MAXLOC;
    if (ti->index.size) return loc;
    if (ti->value.kind == 'f') return op <= NUMACOLL_OP_MAX;
    return !loc;
}

/* bytes of a field that carry its value: the 80-bit long double leaves 6 padding bytes */
static inline size_t value_bytes(field_t f)
{
    if (f.kind == 'f' && f.size == sizeof(long double) && LDBL_MANT_DIG == 64) return 10;
    return f.size;
}

static inline uint64_t load_bits(const unsigned char *e, field_t f)
{
    switch (f.size) {
    case 1: return *(const uint8_t *)(e + f.off);
    case 2: { uint16_t v; memcpy(&v, e + f.off, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, e + f.off, 4); return v; }
    default: { uint64_t v; memcpy(&v, e + f.off, 8); return v; }
    }
}

static inline int64_t load_signed(const unsigned char *e, field_t f)
{
    /* the field's bits, sign-extended from its top bit */
    uint64_t sign = 1ull << (8 * f.size - 1);
    return (int64_t)((load_bits(e, f) ^ sign) - sign);
}

/* truncating store of the low f.size bytes of v */
static inline void store_bits(unsigned char *e, field_t f, uint64_t v)
{
    uint8_t b1 = (uint8_t)v;
    uint16_t b2 = (uint16_t)v;
    uint32_t b4 = (uint32_t)v;
    memcpy(e + f.off, f.size == 1 ? (void *)&b1 : f.size == 2 ? (void *)&b2
                      : f.size == 4 ? (void *)&b4 : (void *)&v, f.size);
}

/* a field's value as a long double: exact for every field of every type here */
static inline long double load_number(const unsigned char *e, field_t f)
{
    if (f.kind == 'i') return (long double)load_signed(e, f);
    if (f.kind == 'u') return (long double)load_bits(e, f);
    if (f.size == sizeof(float)) { float v; memcpy(&v, e + f.off, sizeof v); return v; }
    if (f.size == sizeof(double)) { double v; memcpy(&v, e + f.off, sizeof v); return v; }
    long double v;
    memcpy(&v, e + f.off, sizeof v);
    return v;
}

static inline void store_number(unsigned char *e, field_t f, long double x)
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

static inline void ref_step(const type_info_t *ti, numacoll_op_t op, unsigned char *acc,
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

static inline uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* element k of rank r's input of a call seeded @p seed; padding bytes hold junk */
static inline void gen(const type_info_t *ti, numacoll_op_t op, uint64_t seed, int r,
                       size_t k, unsigned char *e)
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

static inline int elem_equal(const type_info_t *ti, const unsigned char *a,
                             const unsigned char *b)
{
    if (memcmp(a + ti->value.off, b + ti->value.off, value_bytes(ti->value))) return 0;
    return memcmp(a + ti->index.off, b + ti->index.off, ti->index.size) == 0;
}

static inline uint64_t hash_result(const type_info_t *ti, const unsigned char *p, size_t n)
{
    uint64_t h = NC_FNV_BASIS;
    for (size_t k = 0; k < n; k++, p += ti->size) {
        h = nc_fnv1a(h, p + ti->value.off, value_bytes(ti->value));
        h = nc_fnv1a(h, p + ti->index.off, ti->index.size);
    }
    return h;
}

/* "value V index I bytes .." of element @p e into @p buf */
static inline const char *format_elem(char *buf, size_t cap, const type_info_t *ti,
                                      const unsigned char *e)
{
    int o = snprintf(buf, cap, "value %.21Lg index %.21Lg bytes", load_number(e, ti->value),
                     ti->index.size ? load_number(e, ti->index) : 0.0L);
    for (size_t b = 0; b < ti->size && o > 0 && (size_t)o < cap; b++)
        o += snprintf(buf + o, cap - (size_t)o, " %02x", e[b]);
    return buf;
}

#endif
