/*
 * MPI-level test of MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Scan and MPI_Exscan
 * (and MPI-4's _c versions) under the preload.
 *
 *   mpi_scatter_scan_test          each function, in place and not, with 0 .. 96 Ki
 *                                  elements (one chunk and many), uneven reduce_scatter
 *                                  counts with a zero; MPI_DOUBLE sums bitwise against the
 *                                  rank-order fold (numacoll's documented order) on a flat
 *                                  communicator, within a few epsilons elsewhere (the MPI
 *                                  library's own order), MPI_INT max exactly; exscan leaves
 *                                  rank 0's recvbuf alone (numacoll; checked on a flat
 *                                  communicator); bytes after every output untouched; a
 *                                  user-defined op goes to the MPI library and is right
 *   mpi_scatter_scan_test mismatch rank 2 passes another count to MPI_Scan, then other
 *                                  recvcounts to MPI_Reduce_scatter: every rank gets
 *                                  MPI_ERR_ARG (flat communicator), the next calls work
 *   mpi_scatter_scan_test padding  MPI_DOUBLE_INT MAXLOC and MPI_SHORT_INT MINLOC through
 *                                  these four, MPI_Allreduce and MPI_Reduce, 3 and 2000
 *                                  elements, in place and not: right values, and the
 *                                  bytes of recvbuf outside the type map (the structs'
 *                                  padding, where a program may keep a field) untouched;
 *                                  exscan's rank 0 with a recvbuf of one element before
 *                                  a page without access (not significant there)
 *
 * Every rank computes every member's input itself. On a flat communicator
 * (numacoll_mpi_comm_mode 1) each call must raise its numacoll counter by one; the run
 * prints "scatter_scan: N calls checked, M of them numacoll's (flat|...)" and PASS.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpi_test_util.h"

enum { RSB, RS, SCAN, EXSCAN };
static const char *const names[] = {"MPI_Reduce_scatter_block", "MPI_Reduce_scatter",
                                    "MPI_Scan", "MPI_Exscan"};
enum { GUARD = 8 };

static int g_mode;

/* member r's input element k of a case: doubles of mixed magnitudes (the order shows) */
static double dval(int r, size_t k, int seed)
{
    uint64_t h = ((uint64_t)r * 0x9E3779B97F4A7C15ull) ^ (k * 0xBF58476D1CE4E5B9ull) ^
                 (uint64_t)seed;
    h ^= h >> 29;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    return ldexp((double)(h & 0xFFFFF) + 1, (int)(h % 40) - 20) * ((h >> 40) & 1 ? -1 : 1);
}
static int ival(int r, size_t k, int seed)
{
    return (int)((((uint64_t)r * 2654435761u) ^ (k * 40503u) ^ (uint64_t)seed) % 1000) - 500;
}

static size_t count_of(int kind, int m, size_t n)
{
    if (kind != RS) return n;
    return m == 1 ? 0 : n + (size_t)m * 3; /* uneven, member 1 none */
}

/* a user-defined op (MPI runs it): a plain sum */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((double *)inout)[i] += ((double *)in)[i];
}

static int call(int kind, int c_form, const void *send, void *recv, size_t n, const int *icounts,
                MPI_Datatype dt, MPI_Op op)
{
#if MPI_VERSION >= 4
    if (c_form) {
        MPI_Count cc[64];
        for (int m = 0; m < g_size; m++)
            cc[m] = icounts[m];
        switch (kind) {
        case RSB:
            return MPI_Reduce_scatter_block_c(send, recv, (MPI_Count)n, dt, op, MPI_COMM_WORLD);
        case RS: return MPI_Reduce_scatter_c(send, recv, cc, dt, op, MPI_COMM_WORLD);
        case SCAN: return MPI_Scan_c(send, recv, (MPI_Count)n, dt, op, MPI_COMM_WORLD);
        default: return MPI_Exscan_c(send, recv, (MPI_Count)n, dt, op, MPI_COMM_WORLD);
        }
    }
#else
    (void)c_form;
#endif
    switch (kind) {
    case RSB: return MPI_Reduce_scatter_block(send, recv, (int)n, dt, op, MPI_COMM_WORLD);
    case RS: return MPI_Reduce_scatter(send, recv, icounts, dt, op, MPI_COMM_WORLD);
    case SCAN: return MPI_Scan(send, recv, (int)n, dt, op, MPI_COMM_WORLD);
    default: return MPI_Exscan(send, recv, (int)n, dt, op, MPI_COMM_WORLD);
    }
}

static uint64_t numacoll_count(const stats_t *s, int kind)
{
    return kind == RSB ? s->reduce_scatter_block_numacoll : kind == RS ? s->reduce_scatter_numacoll
           : kind == SCAN ? s->scan_numacoll : s->exscan_numacoll;
}

/* one call of @p kind with @p n elements (per member: reduce_scatter's base count); 1 if
 * numacoll ran it */
static int run(int kind, int c_form, size_t n, int in_place, int is_int, MPI_Op op, int seed)
{
    const int me = g_rank, P = g_size;
    int icounts[64];
    size_t off = 0, total = 0;
    for (int m = 0; m < P; m++) {
        icounts[m] = (int)count_of(kind, m, n);
        if (m < me) off += (size_t)icounts[m];
        total += (size_t)icounts[m];
    }
    if (kind >= SCAN) total = n, off = 0;
    const size_t mine = kind >= SCAN ? n : (size_t)icounts[me];
    const size_t es = is_int ? sizeof(int) : sizeof(double);
    const size_t out_n = in_place ? total : mine;
    char *in = malloc(total * es + 1), *out = malloc((out_n + GUARD) * es);
    char *before = malloc((out_n + GUARD) * es);
    for (size_t k = 0; k < total; k++) {
        if (is_int) ((int *)in)[k] = ival(me, k, seed);
        else ((double *)in)[k] = dval(me, k, seed);
    }
    memset(out, 0x5A, (out_n + GUARD) * es);
    if (in_place) memcpy(out, in, total * es);
    memcpy(before, out, (out_n + GUARD) * es);
    stats_t s0 = get_stats();
    MPI_Datatype dt = is_int ? MPI_INT : MPI_DOUBLE;
    int rc = call(kind, c_form, in_place ? MPI_IN_PLACE : in, out, n, icounts, dt, op);
    stats_t s1 = get_stats();
    int ours = numacoll_count(&s1, kind) - numacoll_count(&s0, kind) == 1;
    CHECK(rc == MPI_SUCCESS, "%s: rc %d", names[kind], rc);
    const int last = kind == EXSCAN ? me - 1 : kind == SCAN ? me : P - 1;
    if (kind == EXSCAN && me == 0) {
        if (ours)
            CHECK(memcmp(out, before, (out_n + GUARD) * es) == 0, "%s: rank 0's recvbuf written",
                  names[kind]);
    } else {
        for (size_t k = 0; k < mine; k++) {
            size_t e = off + k;
            if (is_int) {
                int acc = ival(0, e, seed);
                for (int r = 1; r <= last; r++) {
                    int x = ival(r, e, seed);
                    acc = x > acc ? x : acc;
                }
                if (((int *)out)[k] != acc) {
                    CHECK(0, "%s c=%d n=%zu in_place=%d: element %zu: %d, want %d", names[kind],
                          c_form, n, in_place, k, ((int *)out)[k], acc);
                    break;
                }
            } else {
                double acc = dval(0, e, seed), mag = fabs(acc);
                for (int r = 1; r <= last; r++) {
                    acc = acc + dval(r, e, seed);
                    mag += fabs(dval(r, e, seed));
                }
                double got = ((double *)out)[k];
                int ok = g_mode == 1 && op == MPI_SUM ? memcmp(&got, &acc, sizeof acc) == 0
                                                      : fabs(got - acc) <= 1e-13 * mag;
                if (!ok) {
                    CHECK(0, "%s c=%d n=%zu in_place=%d: element %zu: %.17g, want %.17g",
                          names[kind], c_form, n, in_place, k, got, acc);
                    break;
                }
            }
        }
        if (!in_place)
            CHECK(memcmp(out + mine * es, before + mine * es, GUARD * es) == 0,
                  "%s: bytes after the output written", names[kind]);
    }
    free(in);
    free(out);
    free(before);
    return ours;
}

/* the mismatch mode (see the top); flat communicators only */
static void mismatch(void)
{
    double in[300], out[300];
    int counts[64], odd[64];
    for (int k = 0; k < 300; k++)
        in[k] = g_rank + k;
    for (int m = 0; m < g_size; m++)
        counts[m] = 10, odd[m] = m == 0 ? 11 : m == 1 ? 9 : 10; /* the same total */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Scan(in, out, g_rank == 2 ? 101 : 100, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_ARG, "MPI_Scan with rank 2's other count: rc %d", rc);
    rc = MPI_Reduce_scatter(in, out, g_rank == 2 ? odd : counts, MPI_DOUBLE, MPI_SUM,
                            MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_ARG, "MPI_Reduce_scatter with rank 2's other counts: rc %d", rc);
    rc = MPI_Scan(in, out, 100, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double want = 0;
    for (int r = 0; r <= g_rank; r++)
        want += r + 7;
    CHECK(rc == MPI_SUCCESS && out[7] == want, "MPI_Scan after the mismatches: rc %d, %g want %g",
          rc, out[7], want);
    int fails = total_failures(MPI_COMM_WORLD);
    if (g_rank == 0) printf("mismatch: %s\n", fails ? "FAIL" : "PASS");
}

/* the padding mode (see the top): a field in each pair type's padding */
typedef struct { double v; int i; int tag; } di_tagged;
typedef struct { short v; short tag; int i; } si_tagged;
enum { PAD_ALLREDUCE = EXSCAN + 1, PAD_REDUCE };

static int pad_call(int kind, const void *send, void *recv, int n, const int *icounts,
                    MPI_Datatype dt, MPI_Op op)
{
    if (kind == PAD_ALLREDUCE) return MPI_Allreduce(send, recv, n, dt, op, MPI_COMM_WORLD);
    if (kind == PAD_REDUCE) return MPI_Reduce(send, recv, n, dt, op, 1, MPI_COMM_WORLD);
    return call(kind, 0, send, recv, (size_t)n, icounts, dt, op);
}

static void padding(void)
{
    static const int sizes[] = {3, 2000};
    const int me = g_rank, P = g_size;
    int calls = 0;
    for (int kind = RSB; kind <= PAD_REDUCE; kind++)
        for (int s = 0; s < 2; s++)
            for (int in_place = 0; in_place <= 1; in_place++)
                for (int is_short = 0; is_short <= 1; is_short++) {
                    const int n = sizes[s], all = kind <= RS ? n * P : n;
                    const int gets = kind != PAD_REDUCE || me == 1;
                    const int ip = in_place && gets; /* MPI_Reduce's: the root's alone */
                    int icounts[64];
                    for (int m = 0; m < P; m++)
                        icounts[m] = n;
                    /* member r's element e: value (r * 7 + e) % 5, index r; the tag in the
                     * padding says whose buffer it is (inputs 77, recvbuf 1000 + e) */
                    di_tagged *din = malloc(sizeof *din * (size_t)all);
                    di_tagged *dout = malloc(sizeof *dout * (size_t)all);
                    si_tagged *sin = malloc(sizeof *sin * (size_t)all);
                    si_tagged *sout = malloc(sizeof *sout * (size_t)all);
                    for (int e = 0; e < all; e++) {
                        din[e] = (di_tagged){(me * 7 + e) % 5, me, 77};
                        sin[e] = (si_tagged){(short)((me * 7 + e) % 5), 77, me};
                        dout[e] = ip ? din[e] : (di_tagged){-1, -1, 0};
                        sout[e] = ip ? sin[e] : (si_tagged){-1, 0, -1};
                        dout[e].tag = 1000 + e, sout[e].tag = (short)(1000 + e);
                    }
                    int rc = is_short ? pad_call(kind, ip ? MPI_IN_PLACE : sin, sout, n,
                                                 icounts, MPI_SHORT_INT, MPI_MINLOC)
                                      : pad_call(kind, ip ? MPI_IN_PLACE : din, dout, n,
                                                 icounts, MPI_DOUBLE_INT, MPI_MAXLOC);
                    calls++;
                    CHECK(rc == MPI_SUCCESS, "padding kind %d: rc %d", kind, rc);
                    /* the members folded: 0..me (scan), 0..me-1 (exscan), all (others) */
                    const int last = kind == EXSCAN ? me - 1 : kind == SCAN ? me : P - 1;
                    const int first = kind <= RS ? me * n : 0; /* our slice of the vector */
                    for (int k = 0; k < (gets && last >= 0 ? n : 0); k++) {
                        const int e = first + k;
                        int best = 0, bestv = e % 5; /* MAXLOC / MINLOC, lowest index on ties */
                        for (int r = 1; r <= last; r++) {
                            int v = (r * 7 + e) % 5;
                            if (is_short ? v < bestv : v > bestv) best = r, bestv = v;
                        }
                        int v = is_short ? sout[k].v : (int)dout[k].v;
                        int i = is_short ? sout[k].i : dout[k].i;
                        int tag = is_short ? sout[k].tag : dout[k].tag;
                        if (v != bestv || i != best || tag != 1000 + k) {
                            CHECK(0, "padding kind %d n %d in place %d %s: element %d: "
                                     "(%d, %d) tag %d, want (%d, %d) tag %d", kind, n, ip,
                                  is_short ? "MPI_SHORT_INT" : "MPI_DOUBLE_INT", k, v, i, tag,
                                  bestv, best, 1000 + k);
                            break;
                        }
                    }
                    free(din), free(dout), free(sin), free(sout);
                }
    /* exscan's rank 0 has no result: its recvbuf is not significant, here one element
     * before a page without access (nothing may read or write it) */
    long page = sysconf(_SC_PAGESIZE);
    char *two = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(two != MAP_FAILED, "mmap");
    if (two != MAP_FAILED) {
        mprotect(two + page, (size_t)page, PROT_NONE);
        di_tagged *in = calloc(2000, sizeof *in), *out = calloc(2000, sizeof *out);
        di_tagged *edge = (di_tagged *)(two + page) - 1;
        int rc = MPI_Exscan(in, me == 0 ? (void *)edge : out, 2000, MPI_DOUBLE_INT, MPI_MAXLOC,
                            MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "exscan with rank 0's short recvbuf: rc %d", rc);
        calls++;
        free(in), free(out);
        munmap(two, 2 * (size_t)page);
    }
    int fails = total_failures(MPI_COMM_WORLD);
    if (g_rank == 0) printf("padding: %d calls, %s\n", calls, fails ? "FAIL" : "PASS");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    find_stats_fn();
    MPI_Barrier(MPI_COMM_WORLD); /* sets the communicator up */
    int (*mode_fn)(MPI_Comm) = (int (*)(MPI_Comm))dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_mode");
    g_mode = mode_fn ? mode_fn(MPI_COMM_WORLD) : 0;
    if (argc > 1 && !strcmp(argv[1], "padding")) {
        padding();
        MPI_Finalize();
        return g_fail ? 1 : 0;
    }
    if (argc > 1 && !strcmp(argv[1], "mismatch")) {
        mismatch();
        MPI_Finalize();
        return g_fail ? 1 : 0;
    }
    static const size_t sizes[] = {0, 1, 1000, 96 * 1024};
#if MPI_VERSION >= 4
    const int nforms = 2;
#else
    const int nforms = 1;
#endif
    int calls = 0, ours = 0, seed = 1;
    for (int kind = RSB; kind <= EXSCAN; kind++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int c_form = 0; c_form < nforms; c_form++)
                for (int ip = 0; ip <= 1; ip++) {
                    int is_int = (int)(s + (size_t)ip) % 2;
                    ours += run(kind, c_form, sizes[s], ip, is_int, is_int ? MPI_MAX : MPI_SUM,
                                seed++);
                    calls++;
                }
    /* a user-defined op: the MPI library's, right */
    MPI_Op user;
    MPI_Op_create(user_sum, 1, &user);
    for (int kind = RSB; kind <= EXSCAN; kind++) {
        int before = ours;
        ours += run(kind, 0, 100, 0, 0, user, seed++);
        CHECK(ours == before, "%s with a user op ran in numacoll", names[kind]);
    }
    MPI_Op_free(&user);
    int fails = total_failures(MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("scatter_scan: %d calls checked, %d of them numacoll's (%s)\n", calls, ours,
               g_mode == 1 ? "flat" : g_mode == 2 ? "hierarchical" : "the MPI library's");
        printf("scatter_scan: %s\n", fails ? "FAIL" : "PASS");
    }
    MPI_Finalize();
    return fails ? 1 : 0;
}
