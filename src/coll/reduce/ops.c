/*
 * Element types and reduction operations: the kernels that combine two vectors,
 * out[k] = a[k] op b[k], one per allowed (type, op) pair, generated below.
 *
 * Signed integer SUM and PROD wrap around (two's complement), as the MPI libraries' do:
 * they are computed in the unsigned type of the same width, where overflow is defined.
 * MIN and MAX of floating types keep a unless b compares below (above) it, so a NaN in b is
 * never taken and a NaN in a is kept; the result depends only on the operands' order, which
 * the algorithms fix (reduce_internal.h). MINLOC and MAXLOC take the pair with the smaller
 * index when the values are equal.
 */
#include "reduce_internal.h"

#include <string.h>

/* the C pair types of MPI's MINLOC/MAXLOC types */
typedef struct { float v; int i; } pair_float_int;
typedef struct { double v; int i; } pair_double_int;
typedef struct { long v; int i; } pair_long_int;
typedef struct { int v; int i; } pair_2int;
typedef struct { short v; int i; } pair_short_int;
typedef struct { long double v; int i; } pair_long_double_int;
typedef struct { float v; float i; } pair_2float;
typedef struct { double v; double i; } pair_2double;

/* One kernel: out[k] = a[k] OP b[k] for k < n. @p out may be @p a (the fold's accumulator)
 * or @p b (nc_reduce_local), else it overlaps neither. Each case has its own loop whose
 * pointers are restrict, so that the compiler vectorizes it without run-time overlap
 * checks (which would send the accumulator case to the scalar loop); every element is still
 * computed alone, in the same order of operands, so the results do not change. On x86-64
 * an AVX2 clone is chosen at load time where the CPU has it. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define KERNEL_CLONES
#endif
#define KERNEL(fname, T, EXPR)                                                                     \
    static inline void fname##_3(T *restrict o, const T *restrict a, const T *restrict b,          \
                                 size_t n)                                                         \
    {                                                                                              \
        for (size_t k = 0; k < n; k++) {                                                           \
            T x = a[k], y = b[k];                                                                  \
            o[k] = (EXPR);                                                                         \
        }                                                                                          \
    }                                                                                              \
    static inline void fname##_a(T *restrict o, const T *restrict b, size_t n)                     \
    {                                                                                              \
        for (size_t k = 0; k < n; k++) {                                                           \
            T x = o[k], y = b[k];                                                                  \
            o[k] = (EXPR);                                                                         \
        }                                                                                          \
    }                                                                                              \
    static inline void fname##_b(T *restrict o, const T *restrict a, size_t n)                     \
    {                                                                                              \
        for (size_t k = 0; k < n; k++) {                                                           \
            T x = a[k], y = o[k];                                                                  \
            o[k] = (EXPR);                                                                         \
        }                                                                                          \
    }                                                                                              \
    KERNEL_CLONES static void fname(void *out, const void *a, const void *b, size_t n)             \
    {                                                                                              \
        if (out == a)                                                                              \
            fname##_a(out, b, n);                                                                  \
        else if (out == b)                                                                         \
            fname##_b(out, a, n);                                                                  \
        else                                                                                       \
            fname##_3(out, a, b, n);                                                               \
    }

/* every op of an integer type T (U: its unsigned type) */
#define INT_KERNELS(tag, T, U)                                                                     \
    KERNEL(tag##_sum, T, (T)((U)x + (U)y))                                                         \
    KERNEL(tag##_prod, T, (T)((U)x * (U)y))                                                        \
    KERNEL(tag##_min, T, y < x ? y : x)                                                            \
    KERNEL(tag##_max, T, y > x ? y : x)                                                            \
    KERNEL(tag##_land, T, (T)(x && y))                                                             \
    KERNEL(tag##_lor, T, (T)(x || y))                                                              \
    KERNEL(tag##_lxor, T, (T)(!x != !y))                                                           \
    KERNEL(tag##_band, T, (T)(x & y))                                                              \
    KERNEL(tag##_bor, T, (T)(x | y))                                                               \
    KERNEL(tag##_bxor, T, (T)(x ^ y))

#define FLOAT_KERNELS(tag, T)                                                                      \
    KERNEL(tag##_sum, T, x + y)                                                                    \
    KERNEL(tag##_prod, T, x * y)                                                                   \
    KERNEL(tag##_min, T, y < x ? y : x)                                                            \
    KERNEL(tag##_max, T, y > x ? y : x)

#define PAIR_KERNELS(tag, T)                                                                       \
    KERNEL(tag##_minloc, T, (y.v < x.v || (y.v == x.v && y.i < x.i)) ? y : x)                      \
    KERNEL(tag##_maxloc, T, (y.v > x.v || (y.v == x.v && y.i < x.i)) ? y : x)

INT_KERNELS(i8, int8_t, uint8_t)
INT_KERNELS(u8, uint8_t, uint8_t)
INT_KERNELS(i16, int16_t, uint16_t)
INT_KERNELS(u16, uint16_t, uint16_t)
INT_KERNELS(i32, int32_t, uint32_t)
INT_KERNELS(u32, uint32_t, uint32_t)
INT_KERNELS(i64, int64_t, uint64_t)
INT_KERNELS(u64, uint64_t, uint64_t)
FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f64, double)
FLOAT_KERNELS(f80, long double)
PAIR_KERNELS(fi, pair_float_int)
PAIR_KERNELS(di, pair_double_int)
PAIR_KERNELS(li, pair_long_int)
PAIR_KERNELS(ii, pair_2int)
PAIR_KERNELS(si, pair_short_int)
PAIR_KERNELS(ldi, pair_long_double_int)
PAIR_KERNELS(ff, pair_2float)
PAIR_KERNELS(dd, pair_2double)

#define INT_ROW(tag)                                                                               \
    {[NUMACOLL_OP_SUM] = tag##_sum,   [NUMACOLL_OP_PROD] = tag##_prod,                             \
     [NUMACOLL_OP_MIN] = tag##_min,   [NUMACOLL_OP_MAX] = tag##_max,                               \
     [NUMACOLL_OP_LAND] = tag##_land, [NUMACOLL_OP_LOR] = tag##_lor,                               \
     [NUMACOLL_OP_LXOR] = tag##_lxor, [NUMACOLL_OP_BAND] = tag##_band,                             \
     [NUMACOLL_OP_BOR] = tag##_bor,   [NUMACOLL_OP_BXOR] = tag##_bxor}
#define FLOAT_ROW(tag)                                                                             \
    {[NUMACOLL_OP_SUM] = tag##_sum, [NUMACOLL_OP_PROD] = tag##_prod,                               \
     [NUMACOLL_OP_MIN] = tag##_min, [NUMACOLL_OP_MAX] = tag##_max}
#define PAIR_ROW(tag) {[NUMACOLL_OP_MINLOC] = tag##_minloc, [NUMACOLL_OP_MAXLOC] = tag##_maxloc}

/* the kernel of each (type, op) pair; NULL: the pair is not allowed */
static const rd_kernel_fn kernels[NUMACOLL_DTYPE_COUNT][NUMACOLL_OP_COUNT] = {
    [NUMACOLL_INT8] = INT_ROW(i8),
    [NUMACOLL_UINT8] = INT_ROW(u8),
    [NUMACOLL_INT16] = INT_ROW(i16),
    [NUMACOLL_UINT16] = INT_ROW(u16),
    [NUMACOLL_INT32] = INT_ROW(i32),
    [NUMACOLL_UINT32] = INT_ROW(u32),
    [NUMACOLL_INT64] = INT_ROW(i64),
    [NUMACOLL_UINT64] = INT_ROW(u64),
    [NUMACOLL_FLOAT] = FLOAT_ROW(f32),
    [NUMACOLL_DOUBLE] = FLOAT_ROW(f64),
    [NUMACOLL_LONG_DOUBLE] = FLOAT_ROW(f80),
    [NUMACOLL_FLOAT_INT] = PAIR_ROW(fi),
    [NUMACOLL_DOUBLE_INT] = PAIR_ROW(di),
    [NUMACOLL_LONG_INT] = PAIR_ROW(li),
    [NUMACOLL_2INT] = PAIR_ROW(ii),
    [NUMACOLL_SHORT_INT] = PAIR_ROW(si),
    [NUMACOLL_LONG_DOUBLE_INT] = PAIR_ROW(ldi),
    [NUMACOLL_2FLOAT] = PAIR_ROW(ff),
    [NUMACOLL_2DOUBLE] = PAIR_ROW(dd),
};

static const struct {
    const char *name;
    size_t size;
} dtypes[NUMACOLL_DTYPE_COUNT] = {
    [NUMACOLL_INT8] = {"int8", 1},
    [NUMACOLL_UINT8] = {"uint8", 1},
    [NUMACOLL_INT16] = {"int16", 2},
    [NUMACOLL_UINT16] = {"uint16", 2},
    [NUMACOLL_INT32] = {"int32", 4},
    [NUMACOLL_UINT32] = {"uint32", 4},
    [NUMACOLL_INT64] = {"int64", 8},
    [NUMACOLL_UINT64] = {"uint64", 8},
    [NUMACOLL_FLOAT] = {"float", sizeof(float)},
    [NUMACOLL_DOUBLE] = {"double", sizeof(double)},
    [NUMACOLL_LONG_DOUBLE] = {"long_double", sizeof(long double)},
    [NUMACOLL_FLOAT_INT] = {"float_int", sizeof(pair_float_int)},
    [NUMACOLL_DOUBLE_INT] = {"double_int", sizeof(pair_double_int)},
    [NUMACOLL_LONG_INT] = {"long_int", sizeof(pair_long_int)},
    [NUMACOLL_2INT] = {"2int", sizeof(pair_2int)},
    [NUMACOLL_SHORT_INT] = {"short_int", sizeof(pair_short_int)},
    [NUMACOLL_LONG_DOUBLE_INT] = {"long_double_int", sizeof(pair_long_double_int)},
    [NUMACOLL_2FLOAT] = {"2float", sizeof(pair_2float)},
    [NUMACOLL_2DOUBLE] = {"2double", sizeof(pair_2double)},
};

static const char *const op_names[NUMACOLL_OP_COUNT] = {
    [NUMACOLL_OP_SUM] = "sum",   [NUMACOLL_OP_PROD] = "prod",     [NUMACOLL_OP_MIN] = "min",
    [NUMACOLL_OP_MAX] = "max",   [NUMACOLL_OP_LAND] = "land",     [NUMACOLL_OP_LOR] = "lor",
    [NUMACOLL_OP_LXOR] = "lxor", [NUMACOLL_OP_BAND] = "band",     [NUMACOLL_OP_BOR] = "bor",
    [NUMACOLL_OP_BXOR] = "bxor", [NUMACOLL_OP_MINLOC] = "minloc", [NUMACOLL_OP_MAXLOC] = "maxloc",
};

/* 64 bytes hold a whole number of elements of every type: slices and fragments are cut
 * at multiples of 64 bytes (rsag.c) */
_Static_assert(64 % sizeof(pair_long_double_int) == 0 && 64 % sizeof(long double) == 0,
               "element sizes divide 64");

size_t numacoll_dtype_size(numacoll_dtype_t dtype)
{
    return (unsigned)dtype < NUMACOLL_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

const char *numacoll_dtype_name(numacoll_dtype_t dtype)
{
    return (unsigned)dtype < NUMACOLL_DTYPE_COUNT ? dtypes[dtype].name : "?";
}

const char *numacoll_op_name(numacoll_op_t op)
{
    return (unsigned)op < NUMACOLL_OP_COUNT ? op_names[op] : "?";
}

int rd_kernel_get(const char *who, numacoll_dtype_t dtype, numacoll_op_t op, rd_kernel_fn *fn)
{
    if ((unsigned)dtype >= NUMACOLL_DTYPE_COUNT)
        return nc_error(NUMACOLL_ERR_ARG,
                        "%s: datatype %d unknown; allowed: 0..%d (numacoll_dtype_t)", who,
                        (int)dtype, NUMACOLL_DTYPE_COUNT - 1);
    if ((unsigned)op >= NUMACOLL_OP_COUNT)
        return nc_error(NUMACOLL_ERR_ARG, "%s: op %d unknown; allowed: 0..%d (numacoll_op_t)", who,
                        (int)op, NUMACOLL_OP_COUNT - 1);
    *fn = kernels[dtype][op];
    if (!*fn) {
        const char *allowed = dtype <= NUMACOLL_UINT64        ? "every op but minloc and maxloc"
                              : dtype <= NUMACOLL_LONG_DOUBLE ? "sum, prod, min, max"
                                                              : "minloc, maxloc";
        return nc_error(NUMACOLL_ERR_ARG, "%s: op %s is not defined on %s; allowed: %s", who,
                        op_names[op], dtypes[dtype].name, allowed);
    }
    return NUMACOLL_OK;
}
