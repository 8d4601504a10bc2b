/*
 * The physical references of numacoll-bench --mpi allreduce|reduce (reduce_bench.h).
 *
 * limit:inline (up to RB_INLINE_MAX bytes): the least a small reduction can cost. Every
 * member owns a region of a shared window: one ack line, then RB_INLINE_BLKS blocks of an
 * 8-byte stamp and RB_INLINE_MAX bytes of payload. In call seq every contributor (all
 * members for allreduce; the non-roots for reduce) stores its input into its block
 * seq % RB_INLINE_BLKS and then the stamp seq; every reader (all members for allreduce; the
 * root for reduce) waits for each other member's stamp, folds the inputs in rank order
 * into its result, and stores seq into its ack line. A contributor reuses a block only when
 * every reader's ack shows it has read the block's previous content (RB_INLINE_BLKS calls
 * ago), so in the steady state nobody waits for acks. No signatures, no checks, no
 * topology: the cache-line transfers and the additions and nothing else.
 *
 * limit:fold: the memory-bandwidth floor of a reduce-scatter: one member folds its share
 * of every input, size slices of ceil(count / size) doubles, into its result slice. The
 * caller gives it inputs that no call has touched for 64 MiB of other traffic (out of
 * memory, not cache: reduce_bench.c).
 */
#include "reduce_bench.h"

#include <numacoll/numacoll.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RB_INLINE_BLKS 8
#define RB_INLINE_LINE 128                                      /* the ack line */
#define RB_INLINE_STRIDE (((8 + RB_INLINE_MAX) + 127) / 128 * 128) /* stamp + payload */

static MPI_Win g_win = MPI_WIN_NULL;
static unsigned char **g_region; /* every member's region: ack line, then the blocks */
static uint64_t *g_acks_seen;    /* the last ack seen of every member (contributor side) */
static uint64_t g_seq;           /* calls so far: the same on every member */

int rb_inline_setup(const rb_call_t *c)
{
    size_t bytes = RB_INLINE_LINE + (size_t)RB_INLINE_BLKS * RB_INLINE_STRIDE;
    void *base = NULL;
    if (PMPI_Win_allocate_shared((MPI_Aint)bytes, RB_INLINE_LINE, MPI_INFO_NULL, c->comm, &base,
                                 &g_win) != MPI_SUCCESS) {
        fprintf(stderr, "numacoll-bench --mpi: limit:inline: MPI_Win_allocate_shared of %zu "
                        "bytes failed\n",
                bytes);
        return -1;
    }
    memset(base, 0, bytes); /* stamps and acks start at 0, below the first call's 1 */
    g_region = calloc((size_t)c->size, sizeof *g_region);
    g_acks_seen = calloc((size_t)c->size, sizeof *g_acks_seen);
    if (!g_region || !g_acks_seen) {
        fprintf(stderr, "numacoll-bench --mpi: limit:inline: out of memory\n");
        return -1;
    }
    for (int r = 0; r < c->size; r++) {
        MPI_Aint sz;
        int disp;
        PMPI_Win_shared_query(g_win, r, &sz, &disp, &base);
        g_region[r] = base;
    }
    PMPI_Barrier(c->comm); /* every region zeroed before anyone's first store */
    return 0;
}

void rb_inline_free(void)
{
    if (g_win != MPI_WIN_NULL) PMPI_Win_free(&g_win);
    free(g_region);
    free(g_acks_seen);
    g_region = NULL;
    g_acks_seen = NULL;
}

static void wait_failed(const rb_call_t *c)
{
    fprintf(stderr, "numacoll-bench --mpi (rank %d): %s\n", c->rank, numacoll_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static _Atomic uint64_t *ack_of(int r)
{
    return (_Atomic uint64_t *)g_region[r];
}

static unsigned char *block_of(int r, uint64_t seq)
{
    return g_region[r] + RB_INLINE_LINE + (size_t)(seq % RB_INLINE_BLKS) * RB_INLINE_STRIDE;
}

static int is_reader(const rb_call_t *c, int r)
{
    return c->root < 0 || r == c->root;
}

void rb_inline_run(const rb_call_t *c)
{
    uint64_t seq = ++g_seq;
    size_t bytes = c->count * sizeof(double);
    if (c->root < 0 || c->rank != c->root) { /* a contributor: publish the input */
        for (int r = 0; r < c->size; r++) {
            if (r == c->rank || !is_reader(c, r) || seq <= RB_INLINE_BLKS) continue;
            /* Wait loop: only reader r writes its ack line (the seq of the last call whose
             * blocks it has read); after seeing ack >= seq - BLKS this member may overwrite
             * the block that held call seq - BLKS. */
            if (g_acks_seen[r] < seq - RB_INLINE_BLKS) {
                bench_wait_begin(c->watch);
                while ((g_acks_seen[r] = atomic_load_explicit(ack_of(r), memory_order_acquire)) <
                       seq - RB_INLINE_BLKS)
                    if (bench_wait_step(c->watch)) wait_failed(c);
            }
        }
        unsigned char *blk = block_of(c->rank, seq);
        memcpy(blk + 8, c->send, bytes);
        /* release: the payload before the stamp the readers wait for */
        atomic_store_explicit((_Atomic uint64_t *)blk, seq, memory_order_release);
    }
    if (!is_reader(c, c->rank)) return;
    for (int r = 0; r < c->size; r++) {
        const double *x = c->send;
        if (r != c->rank) {
            unsigned char *blk = block_of(r, seq);
            /* Wait loop: only member r writes this stamp (after its payload, release); after
             * seeing seq this reader may read r's input of this call. Members <= CPUs
             * (reduce_bench.c adds the variant only then): it spins. */
            bench_wait_begin(c->watch);
            while (atomic_load_explicit((_Atomic uint64_t *)blk, memory_order_acquire) < seq)
                if (bench_wait_step(c->watch)) wait_failed(c);
            x = (const double *)(blk + 8);
        }
        if (r == 0) {
            memcpy(c->recv, x, bytes);
        } else {
            for (size_t k = 0; k < c->count; k++)
                c->recv[k] += x[k];
        }
    }
    /* release: all reads of this call's blocks before the contributors may reuse them */
    atomic_store_explicit(ack_of(c->rank), seq, memory_order_release);
}

size_t rb_fold_share(size_t count, int size)
{
    return (count + (size_t)size - 1) / (size_t)size;
}

/* vectorized like numacoll's kernels (src/coll/reduce/ops.c: restrict loops, the dynamic
 * cost model of src/mpi/CMakeLists.txt, an AVX2 clone where the CPU has it), so that the
 * floor is not a scalar loop's */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
__attribute__((target_clones("avx2", "default")))
#endif
void rb_fold_run(const double *restrict in, double *restrict out, size_t share, int size)
{
    memcpy(out, in, share * sizeof(double));
    for (int j = 1; j < size; j++) {
        const double *slice = in + (size_t)j * share;
        for (size_t k = 0; k < share; k++)
            out[k] += slice[k];
    }
}
