/*
 * mpi_coll_test, MPI_Bcast's data (modes bcast, bcastc, bcastbig): sizes, roots, derived
 * datatypes and type pairs, MPI_Bcast_c beside MPI_Bcast, broadcasts of more than 2 GiB;
 * the message patterns the other files check with.
 */
#define _GNU_SOURCE 1
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_coll_test.h"

/* ---- bcast --------------------------------------------------------------------------- */

unsigned char pattern(long i, int seed)
{
    return (unsigned char)((i * 131 + seed * 7) ^ (i >> 8));
}

/* the content of a test broadcast: pattern() of @p key */
void fill(unsigned char *b, size_t n, unsigned key)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pattern((long)i, (int)key);
}

size_t wrong_bytes(const unsigned char *b, size_t n, unsigned key)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += b[i] != pattern((long)i, (int)key);
    return bad;
}

/* before a test broadcast: the root's buffer filled, a receiver's 0xEE (never a pattern) */
void fill_for(unsigned char *b, size_t n, unsigned key, int is_root)
{
    if (is_root)
        fill(b, n, key);
    else
        memset(b, 0xEE, n);
}

void test_bcast_sizes(MPI_Comm comm, int iters)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    static const size_t sizes[] = {0, 1, 7, 64, 1000, 4096, 65536, 300000, 1 << 21};
    size_t maxb = 1 << 21;
    unsigned char *buf = malloc(maxb);
    for (int it = 0; it < iters; it++) {
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            int root = (int)((it + k) % (size_t)p);
            int seed = it * 17 + (int)k;
            fill_for(buf, n, (unsigned)seed, r == root);
            int rc = MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm);
            CHECK(rc == MPI_SUCCESS, "bcast rc %d", rc);
            size_t wrong = wrong_bytes(buf, n, (unsigned)seed);
            CHECK(wrong == 0, "bcast of %zu bytes from root %d: %zu wrong bytes", n, root, wrong);
        }
    }
    free(buf);
}

static void test_bcast_types(MPI_Comm comm)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    int root = p - 1;
    /* a row of a 16x16 matrix sent, a column received (vector type), and back */
    enum { N = 16 };
    double m[N][N];
    MPI_Datatype col;
    MPI_Type_vector(N, 1, N, MPI_DOUBLE, &col);
    MPI_Type_commit(&col);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            m[i][j] = r == root ? i * 100 + j : -1;
    if (r == root)
        MPI_Bcast(&m[3][0], N, MPI_DOUBLE, root, comm); /* row 3 */
    else
        MPI_Bcast(&m[0][5], 1, col, root, comm); /* into column 5 */
    if (r != root) {
        int wrong = 0;
        for (int i = 0; i < N; i++)
            wrong += m[i][5] != 300 + i;
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                if (j != 5) wrong += m[i][j] != -1;
        CHECK(wrong == 0, "row -> column bcast: %d wrong elements", wrong);
    }
    /* indexed on root, contiguous ints on receivers */
    int blens[3] = {2, 1, 3}, displs[3] = {0, 5, 9};
    MPI_Datatype idx;
    MPI_Type_indexed(3, blens, displs, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    int src[12], dst[6];
    for (int i = 0; i < 12; i++)
        src[i] = 1000 + i;
    memset(dst, 0, sizeof dst);
    if (r == root)
        MPI_Bcast(src, 1, idx, root, comm);
    else
        MPI_Bcast(dst, 6, MPI_INT, root, comm);
    if (r != root) {
        int expect[6] = {1000, 1001, 1005, 1009, 1010, 1011};
        CHECK(memcmp(dst, expect, sizeof dst) == 0, "indexed -> contiguous bcast wrong");
    }
    /* struct {int; double; char} x3, same type everywhere, with holes */
    struct rec {
        int a;
        double b;
        char c;
    } recs[3];
    int bl[3] = {1, 1, 1};
    MPI_Aint dp[3] = {offsetof(struct rec, a), offsetof(struct rec, b), offsetof(struct rec, c)};
    MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, st, st2;
    MPI_Type_create_struct(3, bl, dp, ty, &st);
    MPI_Type_create_resized(st, 0, sizeof(struct rec), &st2);
    MPI_Type_commit(&st2);
    for (int i = 0; i < 3; i++) {
        recs[i].a = r == root ? 10 * i : 0;
        recs[i].b = r == root ? 0.5 * i : 0;
        recs[i].c = r == root ? (char)('x' + i) : 0;
    }
    MPI_Bcast(recs, 3, st2, root, comm);
    int wrong = 0;
    for (int i = 0; i < 3; i++)
        wrong += recs[i].a != 10 * i || recs[i].b != 0.5 * i || recs[i].c != (char)('x' + i);
    CHECK(wrong == 0, "struct bcast: %d wrong records", wrong);
    /* a contiguous derived type vs. predefined elements */
    MPI_Datatype c4;
    MPI_Type_contiguous(4, MPI_INT, &c4);
    MPI_Type_commit(&c4);
    int a8[8];
    for (int i = 0; i < 8; i++)
        a8[i] = r == 0 ? i * i : -1;
    if (r == 0)
        MPI_Bcast(a8, 2, c4, 0, comm);
    else
        MPI_Bcast(a8, 8, MPI_INT, 0, comm);
    wrong = 0;
    for (int i = 0; i < 8; i++)
        wrong += a8[i] != i * i;
    CHECK(wrong == 0, "contiguous(4) x2 -> int x8: %d wrong", wrong);
    /* MPI_BOTTOM with a struct of absolute addresses (two separate objects) on one side,
     * a plain int[5] buffer on the other, both directions: the staging must pack and
     * unpack at those addresses (MPICH 4.0's MPI_Pack rejects its NULL MPI_BOTTOM) */
    for (int dir = 0; dir < 2; dir++) {
        int head[2], tail[3], flat[5];
        MPI_Aint ab[2];
        MPI_Get_address(head, &ab[0]);
        MPI_Get_address(tail, &ab[1]);
        int abl[2] = {2, 3};
        MPI_Datatype aty[2] = {MPI_INT, MPI_INT}, abs_t;
        MPI_Type_create_struct(2, abl, ab, aty, &abs_t);
        MPI_Type_commit(&abs_t);
        int bottom_side = dir == 0 ? r == root : r != root; /* who passes MPI_BOTTOM */
        for (int i = 0; i < 5; i++) {
            int v = r == root ? 7000 + 10 * dir + i : -1;
            flat[i] = v;
            if (i < 2)
                head[i] = v;
            else
                tail[i - 2] = v;
        }
        if (bottom_side)
            MPI_Bcast(MPI_BOTTOM, 1, abs_t, root, comm);
        else
            MPI_Bcast(flat, 5, MPI_INT, root, comm);
        wrong = 0;
        for (int i = 0; i < 5; i++)
            wrong +=
                (bottom_side ? (i < 2 ? head[i] : tail[i - 2]) : flat[i]) != 7000 + 10 * dir + i;
        CHECK(wrong == 0, "MPI_BOTTOM struct bcast (%s on the root): %d wrong",
              dir == 0 ? "MPI_BOTTOM" : "plain buffer", wrong);
        MPI_Type_free(&abs_t);
    }
    MPI_Type_free(&col);
    MPI_Type_free(&idx);
    MPI_Type_free(&st);
    MPI_Type_free(&st2);
    MPI_Type_free(&c4);
}

/* Every predefined type of MPI_Bcast's fast path (and a type-size mismatch inside it):
 * values checked element by element, each call counted as a numacoll broadcast. */
static void test_bcast_predefined(MPI_Comm comm)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    const struct {
        MPI_Datatype t;
        size_t size;
    } types[] = {{MPI_BYTE, 1},
                 {MPI_CHAR, 1},
                 {MPI_SIGNED_CHAR, 1},
                 {MPI_UNSIGNED_CHAR, 1},
                 {MPI_SHORT, sizeof(short)},
                 {MPI_UNSIGNED_SHORT, sizeof(short)},
                 {MPI_INT, sizeof(int)},
                 {MPI_UNSIGNED, sizeof(int)},
                 {MPI_LONG, sizeof(long)},
                 {MPI_UNSIGNED_LONG, sizeof(long)},
                 {MPI_LONG_LONG, sizeof(long long)},
                 {MPI_UNSIGNED_LONG_LONG, sizeof(long long)},
                 {MPI_FLOAT, sizeof(float)},
                 {MPI_DOUBLE, sizeof(double)},
                 {MPI_INT8_T, 1},
                 {MPI_UINT8_T, 1},
                 {MPI_INT16_T, 2},
                 {MPI_UINT16_T, 2},
                 {MPI_INT32_T, 4},
                 {MPI_UINT32_T, 4},
                 {MPI_INT64_T, 8},
                 {MPI_UINT64_T, 8}};
    const int nt = (int)(sizeof types / sizeof types[0]);
    const int counts[] = {1, 3, 7, 64, 129, 1000, 70000};
    const int nc = (int)(sizeof counts / sizeof counts[0]);
    unsigned char *buf = malloc(70000 * 8 + 64);
    int v = 0;
    MPI_Bcast(&v, 1, MPI_INT, 0, comm); /* sets the communicator up: later calls are cached */
    stats_t s0 = get_stats();
    long calls = 0;
    for (int ti = 0; ti < nt; ti++)
        for (int ci = 0; ci < nc; ci++) {
            size_t n = (size_t)counts[ci] * types[ti].size;
            int root = (ti + ci) % p;
            for (size_t i = 0; i < n; i++)
                buf[i] = r == root ? (unsigned char)(i * 7 + ti * 13 + ci) : 0xEE;
            buf[n] = 0x77; /* guard */
            int rc = MPI_Bcast(buf, counts[ci], types[ti].t, root, comm);
            calls++;
            size_t wrong = 0;
            for (size_t i = 0; i < n; i++)
                wrong += buf[i] != (unsigned char)(i * 7 + ti * 13 + ci);
            CHECK(rc == MPI_SUCCESS && wrong == 0 && buf[n] == 0x77,
                  "predefined type #%d x %d from root %d: rc %d, %zu wrong bytes, guard %s", ti,
                  counts[ci], root, rc, wrong, buf[n] == 0x77 ? "intact" : "overwritten");
        }
    stats_t s1 = get_stats();
    /* with a flat team on this communicator (not FAKE_NODES' hierarchy, where a member
     * alone on its pseudo-node has no team) every call must have been numacoll's */
    void *(*team_fn)(MPI_Comm) = NULL;
    *(void **)&team_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_team");
    if (expect_numacoll() && g_stats_fn && team_fn && team_fn(comm) && p > 1)
        CHECK(s1.bcast_numacoll - s0.bcast_numacoll == (unsigned long long)calls,
              "%llu of %ld predefined-type broadcasts went through numacoll",
              (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll), calls);
    /* the same byte count from different predefined types: int x 4 on the root, double x 2
     * elsewhere (same size, not the same signature: MPI leaves it undefined; numacoll moves
     * the bytes) */
    int32_t ia[4] = {1, 2, 3, 4};
    double da[2] = {0, 0};
    if (r == 0)
        MPI_Bcast(ia, 4, MPI_INT32_T, 0, comm);
    else
        MPI_Bcast(da, 2, MPI_DOUBLE, 0, comm);
    if (r != 0) CHECK(memcmp(da, ia, sizeof da) == 0, "int32 x4 -> double x2: bytes differ");
    free(buf);
}

void test_bcast(int iters)
{
    test_bcast_predefined(MPI_COMM_WORLD);
    stats_t s0 = get_stats();
    test_bcast_sizes(MPI_COMM_WORLD, iters);
    test_bcast_types(MPI_COMM_WORLD);
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_size - g_rank, &sub);
    test_bcast_sizes(sub, 1);
    test_bcast_types(sub);
    MPI_Comm_free(&sub);
    stats_t s1 = get_stats();
    if (g_rank == 0)
        printf("bcast: %llu calls, %llu through numacoll (%llu staged)\n",
               (unsigned long long)(s1.bcast_calls - s0.bcast_calls),
               (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll),
               (unsigned long long)(s1.bcast_staged - s0.bcast_staged));
    if (!expect_numacoll())
        CHECK(s1.bcast_numacoll == s0.bcast_numacoll,
              "bcast went through numacoll although disabled");
    else if (g_stats_fn)
        CHECK(s1.bcast_calls > s0.bcast_calls, "MPI_Bcast calls were not intercepted");
}

/* MPI-4's large-count MPI_Bcast_c: a process may call it where another calls MPI_Bcast
 * in the same broadcast (the two are one operation). Even ranks call MPI_Bcast_c, odd ranks
 * MPI_Bcast, with roots of both kinds; numacoll must carry all of them (a layer that left
 * MPI_Bcast_c to the MPI would wait in its own broadcast for a root that never comes). Then
 * a zero-size datatype with a count beyond INT_MAX on the MPI_Bcast_c side. */
void test_bcastc(void)
{
#if MPI_VERSION >= 4
    static const size_t sizes[] = {0, 1, 8, 200, 1000, 4096, 65536, 300000, 1 << 21};
    const size_t nsz = sizeof sizes / sizeof sizes[0];
    unsigned char *buf = malloc(1 << 21);
    stats_t s0 = get_stats();
    int calls = 0;
    for (int it = 0; it < 2; it++) {
        for (size_t k = 0; k < nsz; k++, calls++) {
            size_t n = sizes[k];
            int root = (int)((it * nsz + k) % (size_t)g_size);
            int seed = 31 * it + (int)k;
            fill_for(buf, n, (unsigned)seed, g_rank == root);
            int rc = g_rank % 2 == 0
                         ? MPI_Bcast_c(buf, (MPI_Count)n, MPI_BYTE, root, MPI_COMM_WORLD)
                         : MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
            CHECK(rc == MPI_SUCCESS, "bcast rc %d", rc);
            size_t wrong = wrong_bytes(buf, n, (unsigned)seed);
            CHECK(wrong == 0, "mixed MPI_Bcast_c/MPI_Bcast of %zu bytes from root %d: %zu wrong", n,
                  root, wrong);
        }
    }
    /* a datatype of size 0: MPI_Bcast_c with 3e9 of them is a broadcast of 0 bytes, as the
     * odd ranks' MPI_Bcast of 5 */
    MPI_Datatype empty;
    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    for (int root = 0; root < g_size && root < 2; root++, calls++) {
        int rc = g_rank % 2 == 0
                     ? MPI_Bcast_c(buf, (MPI_Count)3000000000LL, empty, root, MPI_COMM_WORLD)
                     : MPI_Bcast(buf, 5, empty, root, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "zero-size bcast rc %d", rc);
    }
    MPI_Type_free(&empty);
    /* a negative count is the MPI's error, as for MPI_Bcast */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Bcast_c(buf, (MPI_Count)-1, MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK(rc != MPI_SUCCESS, "MPI_Bcast_c with count -1 returned MPI_SUCCESS");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    stats_t s1 = get_stats();
    if (g_rank == 0)
        printf("bcastc: %d mixed broadcasts, %llu through numacoll on rank 0\n", calls,
               (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll));
    const char *after = getenv("NUMACOLL_MPI_SETUP_AFTER");
    if (expect_numacoll() && g_stats_fn && after && !strcmp(after, "0"))
        CHECK(s1.bcast_numacoll - s0.bcast_numacoll == (uint64_t)calls,
              "%llu of %d broadcasts went through numacoll",
              (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll), calls);
    free(buf);
#else
    if (g_rank == 0) printf("bcastc: this MPI has no MPI_Bcast_c (MPI_VERSION %d)\n", MPI_VERSION);
#endif
}

/* ---- broadcasts of more than INT_MAX bytes ------------------------------------------ */

/* value of double i of a big broadcast with key @p key (never the receivers' fill) */
static double big_val(size_t i, unsigned key)
{
    return (double)(i % 1000003u) * 0.5 + (double)key * 1e7 + 1.0;
}

/* MemAvailable of /proc/meminfo in bytes (0 if unknown) */
static size_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kb = 0;
    char line[256];
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (size_t)kb * 1024;
}

/* Broadcasts of more than INT_MAX bytes through numacoll (np = 2 or 3):
 * 1. MPI_Bcast of 2^28 + 3 doubles, contiguous, from every root;
 * 2. the same doubles as rows on the odd ranks: a row is 1023 doubles in a stride of 1024
 *    (non-contiguous), the even ranks use plain doubles; roots of both kinds, so the
 *    windows cut rows on the packing root and on the unpacking receivers;
 * 3. (MPI-4) MPI_Bcast_c of 2^31 + 7 bytes on the even ranks, MPI_Bcast of the same bytes
 *    as 5-byte elements on the odd ranks... (2147483655 = 5 x 429496731);
 * 4. a receiver (the last rank) whose count is 8 doubles short of the root's: it gets
 *    MPI_ERR_TRUNCATE, the others succeed, nobody hangs;
 * 5. (flat) a receiver of 100 doubles against a root over 2 GiB, and the other way round.
 * Every byte of every receiver is checked; numacoll's counters must show every broadcast
 * (NUMACOLL_MPI_SETUP_AFTER=0). Prints "SKIP: ..." (run_mpi.sh: skipped) without the
 * memory for it. */
void test_bcastbig(void)
{
    const size_t rows = 262402, rowlen = 1023, n1 = ((size_t)1 << 28) + 3;
    const size_t n2 = rows * rowlen;           /* 2147497968 bytes */
    size_t cap = rows * 1024 * sizeof(double); /* the largest buffer: rows with their gaps */
    int skip = 0;
    if (g_rank == 0) {
        size_t avail = mem_available(), need = (size_t)g_size * (cap + ((size_t)300 << 20));
        if (avail < need) {
            printf("SKIP: bcastbig needs about %zu MiB of available memory, MemAvailable is "
                   "%zu MiB\n",
                   need >> 20, avail >> 20);
            skip = 1;
        }
    }
    PMPI_Bcast(&skip, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (skip) return;
    double *d = malloc(cap);
    CHECK(d != NULL, "no memory for %zu bytes", cap);
    if (!d) return;
    stats_t s0 = get_stats();
    int calls = 0, staged = 0;
    /* 1. contiguous */
    for (int root = 0; root < g_size; root++, calls++) {
        unsigned key = 10u + (unsigned)root;
        for (size_t i = 0; i < n1; i++)
            d[i] = g_rank == root ? big_val(i, key) : -1.0;
        int rc = MPI_Bcast(d, (int)n1, MPI_DOUBLE, root, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "contiguous big bcast rc %d", rc);
        size_t bad = 0;
        for (size_t i = 0; i < n1; i++)
            bad += d[i] != big_val(i, key);
        CHECK(bad == 0, "%zu of %zu doubles wrong (contiguous, root %d)", bad, n1, root);
    }
    /* 2. rows (odd ranks) and doubles (even ranks) */
    MPI_Datatype row0, row;
    MPI_Type_contiguous((int)rowlen, MPI_DOUBLE, &row0);
    MPI_Type_create_resized(row0, 0, 1024 * (MPI_Aint)sizeof(double), &row);
    MPI_Type_commit(&row);
    int odd = g_rank % 2;
    for (int root = 0; root < g_size && root < 2; root++, calls++) {
        unsigned key = 20u + (unsigned)root;
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < 1024; j++) {
                size_t at = odd ? r * 1024 + j : r * rowlen + j; /* where it lives here */
                size_t seq = r * rowlen + j;                     /* its place in the message */
                if (j < rowlen)
                    d[at] = g_rank == root ? big_val(seq, key) : -1.0;
                else if (odd)
                    d[at] = -2.0; /* a gap: must stay */
            }
        int rc = odd ? MPI_Bcast(d, (int)rows, row, root, MPI_COMM_WORLD)
                     : MPI_Bcast(d, (int)n2, MPI_DOUBLE, root, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "mixed-type big bcast rc %d", rc);
        size_t bad = 0, gaps = 0;
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < rowlen; j++)
                bad += d[odd ? r * 1024 + j : r * rowlen + j] != big_val(r * rowlen + j, key);
        if (odd)
            for (size_t r = 0; r < rows; r++)
                gaps += d[r * 1024 + 1023] != -2.0;
        CHECK(bad == 0 && gaps == 0,
              "rows/doubles from root %d: %zu of %zu doubles wrong, %zu gaps written", root, bad,
              n2, gaps);
        staged += odd;
    }
    MPI_Type_free(&row0);
    MPI_Type_free(&row);
#if MPI_VERSION >= 4
    /* 3. MPI_Bcast_c of bytes against MPI_Bcast of 5-byte elements */
    {
        const size_t nb = (size_t)5 * 429496731u;
        unsigned char *b = (unsigned char *)d;
        MPI_Datatype five;
        MPI_Type_contiguous(5, MPI_BYTE, &five);
        MPI_Type_commit(&five);
        for (int root = 0; root < g_size && root < 2; root++, calls++) {
            unsigned key = 30u + (unsigned)root;
            fill_for(b, nb, key, g_rank == root);
            int rc = odd ? MPI_Bcast(b, 429496731, five, root, MPI_COMM_WORLD)
                         : MPI_Bcast_c(b, (MPI_Count)nb, MPI_BYTE, root, MPI_COMM_WORLD);
            CHECK(rc == MPI_SUCCESS, "MPI_Bcast_c/MPI_Bcast of %zu bytes rc %d", nb, rc);
            size_t wrong = wrong_bytes(b, nb, key);
            CHECK(wrong == 0, "MPI_Bcast_c/MPI_Bcast of %zu bytes from root %d: %zu wrong", nb,
                  root, wrong);
        }
        MPI_Type_free(&five);
    }
#endif
    /* 4. the last rank expects 8 doubles fewer than the root's 2^28 + 19 (both more than
     * INT_MAX bytes; case 5 crosses the line) */
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    {
        int last = g_rank == g_size - 1;
        for (size_t i = 0; i < n1 + 16; i++)
            d[i] = g_rank == 0 ? big_val(i, 40) : -1.0;
        int rc = MPI_Bcast(d, (int)(last ? n1 + 8 : n1 + 16), MPI_DOUBLE, 0, c);
        calls++;
        if (last)
            CHECK(err_class(rc) == MPI_ERR_TRUNCATE,
                  "a receiver 64 bytes short got rc %d (class %d), not MPI_ERR_TRUNCATE", rc,
                  err_class(rc));
        else
            CHECK(rc == MPI_SUCCESS, "rank %d (count right) got rc %d beside a short receiver",
                  g_rank, rc);
        if (!last && g_rank != 0) {
            size_t bad = 0;
            for (size_t i = 0; i < n1 + 16; i++)
                bad += d[i] != big_val(i, 40);
            CHECK(bad == 0, "%zu doubles wrong beside a short receiver", bad);
        }
    }
    MPI_Comm_free(&c);
    stats_t s1 = get_stats();
    int (*mode_fn)(MPI_Comm) = NULL;
    *(void **)&mode_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_mode");
    /* counted where a node team broadcasts (flat; hierarchical with NUMACOLL_FAKE_NODES
     * and one rank per node: the leaders' MPI_Bcast of each window, nothing counted) */
    if (expect_numacoll() && g_stats_fn && mode_fn && mode_fn(MPI_COMM_WORLD) == 1) {
        /* all but the short receiver's failed one */
        int want = calls - (g_rank == g_size - 1);
        CHECK(s1.bcast_numacoll - s0.bcast_numacoll == (uint64_t)want,
              "%llu big broadcasts went through numacoll, expected %d",
              (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll), want);
        CHECK(s1.bcast_staged - s0.bcast_staged == (uint64_t)staged,
              "%llu big broadcasts staged here, expected %d (non-contiguous rows)",
              (unsigned long long)(s1.bcast_staged - s0.bcast_staged), staged);
    }
    /* 5. (flat: numacoll on the whole communicator; across nodes the leaders' MPI_Bcast
     * decides) a root over 2 GiB against a receiver under it, and the other way round: the
     * receiver whose size differs gets MPI_ERR_TRUNCATE, the root and the others succeed,
     * nobody waits (the small receiver takes the root's windows into a stage and drops
     * them), and a matching broadcast after each works */
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (expect_numacoll() && mode_fn && mode_fn(c) == 1) {
        int last = g_rank == g_size - 1;
        const size_t small = 100, large = n1 + 16;
        for (int way = 0; way < 2; way++) {
            size_t sent = way == 0 ? large : small, mine = last ? (way == 0 ? small : large) : sent;
            for (size_t i = 0; i < mine + 4; i++)
                d[i] = g_rank == 0 ? big_val(i, 50u + (unsigned)way) : -1.0;
            int rc = MPI_Bcast(d, (int)mine, MPI_DOUBLE, 0, c);
            if (last)
                CHECK(err_class(rc) == MPI_ERR_TRUNCATE,
                      "%s receiver of a %zu-double broadcast got class %d, not MPI_ERR_TRUNCATE",
                      way == 0 ? "a 100-double" : "an over-2-GiB", sent, err_class(rc));
            else
                CHECK(rc == MPI_SUCCESS,
                      "rank %d (count right) of a %zu-double broadcast got "
                      "class %d beside a receiver of another path",
                      g_rank, sent, err_class(rc));
            size_t over = 0;
            for (size_t i = mine; i < mine + 4; i++)
                over += d[i] != (g_rank == 0 ? big_val(i, 50u + (unsigned)way) : -1.0);
            CHECK(over == 0, "rank %d: %zu doubles written past its %zu", g_rank, over, mine);
            double v[1000];
            for (int i = 0; i < 1000; i++)
                v[i] = g_rank == 0 ? i * 0.5 : -1.0;
            rc = MPI_Bcast(v, 1000, MPI_DOUBLE, 0, c);
            size_t bad = 0;
            for (int i = 0; i < 1000; i++)
                bad += v[i] != i * 0.5;
            CHECK(rc == MPI_SUCCESS && bad == 0,
                  "the broadcast after the %zu-double one: rank %d class %d, %zu wrong", sent,
                  g_rank, err_class(rc), bad);
        }
    }
    MPI_Comm_free(&c);
    if (g_rank == 0)
        printf("bcastbig: %d broadcasts of more than 2 GiB, %llu through numacoll on rank 0\n",
               calls, (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll));
    free(d);
}
