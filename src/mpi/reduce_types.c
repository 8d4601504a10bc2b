/*
 * libnumacoll_mpi: which MPI datatypes and ops the shared-memory reductions take, and as
 * what. A datatype qualifies when it is a predefined type with a numacoll_dtype_t of the
 * same layout (C and Fortran names alike), or a contiguous run (MPI_Type_contiguous,
 * MPI_Type_dup, nested) of one; an op, when it is a predefined op the core defines on that
 * type. Everything else (user ops, other derived types, complex types, MPI_CHAR, an op MPI
 * does not define on the type) goes to the MPI library, which then reports its own errors.
 * The answer depends only on the arguments, so members that pass the same arguments (as
 * MPI requires) decide alike without communicating.
 */
#include "mpi_internal.h"

/* a predefined datatype and what it is; kind says which ops MPI allows on it */
enum { KIND_NUMBER = 0, KIND_BYTE = 1, KIND_LOGICAL = 2, KIND_PAIR = 3 };
typedef struct type_row {
    MPI_Datatype mpi;
    numacoll_dtype_t core;
    int kind;
} type_row_t;

static type_row_t g_types[64];
static int g_ntypes;
static pthread_once_t g_types_once = PTHREAD_ONCE_INIT;

static numacoll_dtype_t int_by_size(int bytes, int is_signed)
{
    switch (bytes) {
    case 1: return is_signed ? NUMACOLL_INT8 : NUMACOLL_UINT8;
    case 2: return is_signed ? NUMACOLL_INT16 : NUMACOLL_UINT16;
    case 4: return is_signed ? NUMACOLL_INT32 : NUMACOLL_UINT32;
    case 8: return is_signed ? NUMACOLL_INT64 : NUMACOLL_UINT64;
    default: return NUMACOLL_DTYPE_COUNT;
    }
}

/* add @p dt when the MPI has it and its extent is the core type's size */
static void add(MPI_Datatype dt, numacoll_dtype_t core, int kind)
{
    MPI_Aint lb = 0, extent = 0;
    if (dt == MPI_DATATYPE_NULL || core == NUMACOLL_DTYPE_COUNT || g_ntypes == 64) return;
    if (PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS || lb != 0 ||
        (size_t)extent != numacoll_dtype_size(core))
        return;
    g_types[g_ntypes++] = (type_row_t){dt, core, kind};
}

/* an integer type, signed or not, by its size */
static void add_int(MPI_Datatype dt, int is_signed, int kind)
{
    int size = 0;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &size) != MPI_SUCCESS) return;
    add(dt, int_by_size(size, is_signed), kind);
}

static void build_types(void)
{
    const MPI_Datatype signed_ints[] = {
        MPI_SIGNED_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG_INT, MPI_LONG_LONG,
        MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_AINT, MPI_OFFSET, MPI_COUNT,
        MPI_INTEGER, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8};
    const MPI_Datatype unsigned_ints[] = {
        MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG,
        MPI_UNSIGNED_LONG_LONG, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T};
    for (size_t i = 0; i < sizeof signed_ints / sizeof signed_ints[0]; i++)
        add_int(signed_ints[i], 1, KIND_NUMBER);
    for (size_t i = 0; i < sizeof unsigned_ints / sizeof unsigned_ints[0]; i++)
        add_int(unsigned_ints[i], 0, KIND_NUMBER);
    add_int(MPI_BYTE, 0, KIND_BYTE);
    add_int(MPI_C_BOOL, 0, KIND_LOGICAL);
    add_int(MPI_LOGICAL, 1, KIND_LOGICAL);
    add(MPI_FLOAT, NUMACOLL_FLOAT, KIND_NUMBER);
    add(MPI_REAL, NUMACOLL_FLOAT, KIND_NUMBER);
    add(MPI_REAL4, NUMACOLL_FLOAT, KIND_NUMBER);
    add(MPI_DOUBLE, NUMACOLL_DOUBLE, KIND_NUMBER);
    add(MPI_DOUBLE_PRECISION, NUMACOLL_DOUBLE, KIND_NUMBER);
    add(MPI_REAL8, NUMACOLL_DOUBLE, KIND_NUMBER);
    add(MPI_LONG_DOUBLE, NUMACOLL_LONG_DOUBLE, KIND_NUMBER);
    add(MPI_FLOAT_INT, NUMACOLL_FLOAT_INT, KIND_PAIR);
    add(MPI_DOUBLE_INT, NUMACOLL_DOUBLE_INT, KIND_PAIR);
    add(MPI_LONG_INT, NUMACOLL_LONG_INT, KIND_PAIR);
    add(MPI_2INT, NUMACOLL_2INT, KIND_PAIR);
    add(MPI_SHORT_INT, NUMACOLL_SHORT_INT, KIND_PAIR);
    add(MPI_LONG_DOUBLE_INT, NUMACOLL_LONG_DOUBLE_INT, KIND_PAIR);
    add(MPI_2REAL, NUMACOLL_2FLOAT, KIND_PAIR);
    add(MPI_2DOUBLE_PRECISION, NUMACOLL_2DOUBLE, KIND_PAIR);
    add(MPI_2INTEGER, NUMACOLL_2INT, KIND_PAIR);
}

static int op_of(MPI_Op op, numacoll_op_t *out)
{
    /* in numacoll_op_t's order; not static: the handles need not be constant expressions */
    const MPI_Op ops[NUMACOLL_OP_COUNT] = {MPI_SUM,  MPI_PROD, MPI_MIN,  MPI_MAX,
                                           MPI_LAND, MPI_LOR,  MPI_LXOR, MPI_BAND,
                                           MPI_BOR,  MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    for (int i = 0; i < NUMACOLL_OP_COUNT; i++)
        if (ops[i] == op) {
            *out = (numacoll_op_t)i;
            return 1;
        }
    return 0;
}

/* MPI's rule of which ops a kind of type takes (the core knows the rest) */
static int op_allowed(int kind, numacoll_op_t op)
{
    switch (kind) {
    case KIND_BYTE: return op == NUMACOLL_OP_BAND || op == NUMACOLL_OP_BOR || op == NUMACOLL_OP_BXOR;
    case KIND_LOGICAL:
        return op == NUMACOLL_OP_LAND || op == NUMACOLL_OP_LOR || op == NUMACOLL_OP_LXOR;
    case KIND_PAIR: return op == NUMACOLL_OP_MINLOC || op == NUMACOLL_OP_MAXLOC;
    default: return op != NUMACOLL_OP_MINLOC && op != NUMACOLL_OP_MAXLOC;
    }
}

/* the row of the predefined datatype @p dt, NULL if the table has none */
static const type_row_t *row_of(MPI_Datatype dt)
{
    for (int i = 0; i < g_ntypes; i++)
        if (g_types[i].mpi == dt) return &g_types[i];
    return NULL;
}

/* the predefined type @p dt stands for, times *mult for contiguous runs of it (depth-limited) */
static const type_row_t *type_of(MPI_Datatype dt, MPI_Count *mult, int depth)
{
    const type_row_t *predefined = row_of(dt);
    if (predefined) return predefined;
    int ni = 0, na = 0, nd = 0, combiner = 0;
    if (depth > 8 || dt == MPI_DATATYPE_NULL ||
        PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
        return NULL;
    if (!((combiner == MPI_COMBINER_CONTIGUOUS && ni == 1) || combiner == MPI_COMBINER_DUP) ||
        na != 0 || nd != 1)
        return NULL;
    int ints[1] = {1};
    MPI_Aint addrs[1];
    MPI_Datatype inner;
    if (PMPI_Type_get_contents(dt, ni, 0, 1, ints, addrs, &inner) != MPI_SUCCESS) return NULL;
    MPI_Count n = combiner == MPI_COMBINER_DUP ? 1 : ints[0];
    const type_row_t *row = n >= 0 ? type_of(inner, mult, depth + 1) : NULL;
    /* get_contents returns a new handle for a derived inner type; predefined ones are not
     * to be freed */
    int ci = 0, ca = 0, cd = 0, cc = 0;
    if (PMPI_Type_get_envelope(inner, &ci, &ca, &cd, &cc) == MPI_SUCCESS &&
        cc != MPI_COMBINER_NAMED)
        PMPI_Type_free(&inner);
    if (row) *mult *= n;
    return row;
}

/* *base: the predefined type of the run (dt itself when predefined), for the MPI library's
 * own reductions of numacoll's calls (Open MPI 4.1's reject predefined ops on derived types) */
int reduce_map(MPI_Datatype dt, MPI_Op op, numacoll_dtype_t *core_type, numacoll_op_t *core_op,
               MPI_Count *mult, MPI_Datatype *base)
{
    /* a one-entry cache per thread of a predefined type's answer (a program reduces with one
     * or two pairs; a derived type's handle may be freed and come back as another type, so
     * those are not cached); initial-exec, as tl_last: no __tls_get_addr call per lookup */
    static __thread __attribute__((tls_model("initial-exec"))) struct {
        MPI_Datatype dt;
        MPI_Op op;
        numacoll_dtype_t core_type;
        numacoll_op_t core_op;
        int valid;
    } last;
    if (last.valid && dt == last.dt && op == last.op) {
        *core_type = last.core_type, *core_op = last.core_op, *mult = 1, *base = dt;
        return 1;
    }
    pthread_once(&g_types_once, build_types);
    numacoll_op_t cop;
    if (!op_of(op, &cop)) return 0;
    MPI_Count n = 1;
    const type_row_t *row = type_of(dt, &n, 0);
    if (!row || !op_allowed(row->kind, cop)) return 0;
    *core_type = row->core, *core_op = cop, *mult = n, *base = row->mpi;
    if (row->mpi == dt) { /* predefined */
        last.dt = dt, last.op = op, last.core_type = row->core, last.core_op = cop;
        last.valid = 1;
    }
    return 1;
}

/* ---- padding of the pair types (mpi_internal.h: pad_keep) ----
 * An element of such a type is the C struct { value; int; } of the core (ops.c), of the
 * MPI type's extent (add() checks it); MPI's type map holds the value's bytes from offset
 * 0 (MPI_Type_size minus the int's) and the int at its C offset. The rest are holes: at
 * most one between the two fields (MPI_SHORT_INT) and one after the int. */
typedef struct { short v; int i; } c_short_int;
typedef struct { double v; int i; } c_double_int;
typedef struct { long v; int i; } c_long_int;
typedef struct { long double v; int i; } c_long_double_int;

void pad_keep(pad_keep_t *k, numacoll_dtype_t ct, MPI_Datatype base, void *buf, size_t n)
{
    size_t int_off;
    k->saved = NULL;
    switch (ct) {
    case NUMACOLL_SHORT_INT: int_off = offsetof(c_short_int, i); break;
    case NUMACOLL_DOUBLE_INT: int_off = offsetof(c_double_int, i); break;
    case NUMACOLL_LONG_INT: int_off = offsetof(c_long_int, i); break;
    case NUMACOLL_LONG_DOUBLE_INT: int_off = offsetof(c_long_double_int, i); break;
    default: return; /* no holes */
    }
    int size = 0;
    const size_t esize = numacoll_dtype_size(ct);
    if (!buf || n == 0 || PMPI_Type_size(base, &size) != MPI_SUCCESS ||
        (size_t)size >= esize || (size_t)size < sizeof(int) ||
        (size_t)size - sizeof(int) > int_off)
        return;
    k->off[0] = (size_t)size - sizeof(int), k->len[0] = int_off - k->off[0];
    k->off[1] = int_off + sizeof(int), k->len[1] = esize - k->off[1];
    const size_t per = k->len[0] + k->len[1];
    if (per == 0 || n > SIZE_MAX / per) return;
    k->saved = n * per <= sizeof k->local ? k->local : malloc(n * per);
    if (!k->saved) { /* the call goes on alike on every member; say what it costs */
        if (g_verbose >= 1)
            mpi_say("numacoll-mpi: no memory (%zu bytes) to keep the padding bytes of %zu "
                    "pair-type elements of a reduction's result: this call may write them\n",
                    n * per, n);
        return;
    }
    k->buf = buf, k->n = n, k->esize = esize;
    unsigned char *to = k->saved;
    for (size_t e = 0; e < n; e++)
        for (int h = 0; h < 2; h++) {
            memcpy(to, k->buf + e * esize + k->off[h], k->len[h]);
            to += k->len[h];
        }
}

void pad_restore(pad_keep_t *k)
{
    if (!k->saved) return;
    const unsigned char *from = k->saved;
    for (size_t e = 0; e < k->n; e++)
        for (int h = 0; h < 2; h++) {
            memcpy(k->buf + e * k->esize + k->off[h], from, k->len[h]);
            from += k->len[h];
        }
    if (k->saved != k->local) free(k->saved);
    k->saved = NULL;
}

/* ---- MPI ops that run numacoll's kernels (the hierarchical mode's step between nodes) ----
 * The leaders' reduction goes through the MPI library, but with these ops instead of the
 * predefined ones: the arithmetic is then numacoll's on every node count (the predefined
 * ops of Debian's Open MPI 4.1 saturate 8- and 16-bit sums and MPICH 4.0's compare
 * unsigned types as signed in MIN/MAX), and the ops are created non-commutative, so the
 * library combines the nodes' results in node order. */

static MPI_Op g_kernel_ops[NUMACOLL_OP_COUNT];
static pthread_once_t g_kernel_ops_once = PTHREAD_ONCE_INIT;

/* the core type of a predefined datatype of the table (the leaders' step passes only those) */
static int core_of(MPI_Datatype dt, numacoll_dtype_t *core)
{
    pthread_once(&g_types_once, build_types);
    const type_row_t *row = row_of(dt);
    if (row) *core = row->core;
    return row != NULL;
}

static void run_kernel(numacoll_op_t op, void *in, void *inout, int *len, MPI_Datatype *dt)
{
    numacoll_dtype_t core;
    if (!core_of(*dt, &core) || nc_reduce_local(core, op, in, inout, (size_t)*len) != NUMACOLL_OK) {
        /* cannot happen: the leaders' step passes a type of the table with its op */
        mpi_say("numacoll-mpi: internal error: the step between nodes got a datatype "
                        "numacoll's kernels do not take\n");
        abort();
    }
}

#define KERNEL_OP_FN(name, op)                                                                     \
    static void kernel_op_##name(void *in, void *inout, int *len, MPI_Datatype *dt)                \
    {                                                                                              \
        run_kernel(op, in, inout, len, dt);                                                        \
    }
KERNEL_OP_FN(sum, NUMACOLL_OP_SUM)
KERNEL_OP_FN(prod, NUMACOLL_OP_PROD)
KERNEL_OP_FN(min, NUMACOLL_OP_MIN)
KERNEL_OP_FN(max, NUMACOLL_OP_MAX)
KERNEL_OP_FN(land, NUMACOLL_OP_LAND)
KERNEL_OP_FN(lor, NUMACOLL_OP_LOR)
KERNEL_OP_FN(lxor, NUMACOLL_OP_LXOR)
KERNEL_OP_FN(band, NUMACOLL_OP_BAND)
KERNEL_OP_FN(bor, NUMACOLL_OP_BOR)
KERNEL_OP_FN(bxor, NUMACOLL_OP_BXOR)
KERNEL_OP_FN(minloc, NUMACOLL_OP_MINLOC)
KERNEL_OP_FN(maxloc, NUMACOLL_OP_MAXLOC)

static void create_kernel_ops(void)
{
    MPI_User_function *const fns[NUMACOLL_OP_COUNT] = {
        kernel_op_sum,  kernel_op_prod, kernel_op_min,  kernel_op_max,
        kernel_op_land, kernel_op_lor,  kernel_op_lxor, kernel_op_band,
        kernel_op_bor,  kernel_op_bxor, kernel_op_minloc, kernel_op_maxloc};
    for (int i = 0; i < NUMACOLL_OP_COUNT; i++)
        if (PMPI_Op_create(fns[i], 0, &g_kernel_ops[i]) != MPI_SUCCESS)
            g_kernel_ops[i] = MPI_OP_NULL;
}

MPI_Op reduce_kernel_op(numacoll_op_t op)
{
    pthread_once(&g_kernel_ops_once, create_kernel_ops);
    return (unsigned)op < NUMACOLL_OP_COUNT ? g_kernel_ops[op] : MPI_OP_NULL;
}
