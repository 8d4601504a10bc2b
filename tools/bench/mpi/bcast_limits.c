/*
 * The broadcast's reference loops of the MPI benchmark: bare loops on shared windows
 * (MPI_Win_allocate_shared), with no queue, no tree and no checks, that bound what a
 * broadcast can cost on this machine. What each one measures is in mpibench.c's header.
 *
 * Their waits follow the library's policy for waits without a team: spin, then yield and
 * nap, NUMACOLL_TIMEOUT, and a look at every rank's process every 20 ms (bench_wait.h), so
 * a rank that died or hangs ends the run with a message instead of leaving the others
 * spinning. limit:signal, limit:inline and limit:pipe are only set up when the ranks do not
 * outnumber the CPUs (mpibench.c checks), since they spin.
 */
#include "bcast_limits.h"

#include <numacoll/numacoll.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MPI_Comm g_comm = MPI_COMM_NULL;
static int g_rank, g_size;
static bench_watch_t *g_watch;
static int g_root_shift;

/* limit:signal: one 64-bit flag per rank, each on its own 128-byte line of a window */
static MPI_Win g_sig_win = MPI_WIN_NULL;
static _Atomic uint64_t *g_sig_mine; /* this rank's flag */
static unsigned char **g_sig_all;    /* every rank's flag (the root writes them) */
static uint64_t g_sig_seq;
/* limit:inline: per rank an ack line and INLINE_BLOCKS blocks (stamp + payload) of a
 * window; the root keeps the last ack it saw of every rank */
#define INLINE_BLOCKS 8
#define INLINE_STRIDE 1152 /* 8-byte stamp + BCAST_LIMIT_INLINE_MAX, rounded up to 128 */
static MPI_Win g_inl_win = MPI_WIN_NULL;
static unsigned char **g_inl_all; /* every rank's region: ack line, then the blocks */
static uint64_t *g_inl_seen;      /* root side: last ack seen per rank */
static uint64_t g_inl_seq;
/* limit:xcore: the root's message, in a window only rank 0's region of which has bytes */
static MPI_Win g_xc_win = MPI_WIN_NULL;
static unsigned char **g_xc_all;
/* limit:pipe: rank 0's region of a window: a 128-byte line with the count of fragments
 * published so far (monotonic over all calls), then max-bytes of fragments */
#define PIPE_FRAGMENT ((size_t)64 << 10)
static MPI_Win g_pp_win = MPI_WIN_NULL;
static unsigned char **g_pp_all;
static uint64_t g_pp_base; /* fragments of all earlier calls (the same on every rank) */

static void wait_failed(void)
{
    fprintf(stderr, "numacoll-bench --mpi (rank %d): %s\n", g_rank, numacoll_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* wait until @p cond holds (see g_watch); the comment at each use says who writes it */
#define REF_WAIT(cond)                                                                             \
    do {                                                                                           \
        bench_wait_begin(g_watch);                                                                 \
        while (!(cond))                                                                            \
            if (bench_wait_step(g_watch)) wait_failed();                                          \
    } while (0)

void bcast_limits_init(MPI_Comm comm, bench_watch_t *watch, int root_shift)
{
    g_comm = comm;
    PMPI_Comm_rank(comm, &g_rank);
    PMPI_Comm_size(comm, &g_size);
    g_watch = watch;
    g_root_shift = root_shift;
}

/* A window of @p bytes on this rank (ranks may ask for different sizes): every rank's
 * region (a calloc'd array, indexed by rank). Collective; every region is zeroed (its
 * pages faulted in) before any rank returns. */
static unsigned char **shared_regions(size_t bytes, MPI_Win *win)
{
    void *base = NULL;
    if (PMPI_Win_allocate_shared((MPI_Aint)bytes, 128, MPI_INFO_NULL, g_comm, &base, win) !=
        MPI_SUCCESS) {
        fprintf(stderr, "numacoll-bench --mpi: MPI_Win_allocate_shared of %zu bytes failed\n",
                bytes);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (bytes) memset(base, 0, bytes); /* a 0-byte region may have no base (MPICH: NULL) */
    unsigned char **all = calloc((size_t)g_size, sizeof *all);
    if (!all) {
        fprintf(stderr, "numacoll-bench --mpi: out of memory setting up a shared window\n");
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int r = 0; r < g_size; r++) {
        MPI_Aint sz;
        int du;
        PMPI_Win_shared_query(*win, r, &sz, &du, &base);
        all[r] = base;
    }
    PMPI_Barrier(g_comm); /* zeroed everywhere before anyone's first store */
    return all;
}

void bcast_limits_add(bcast_limit_t which, size_t max_bytes)
{
    size_t most = max_bytes ? max_bytes : 1;
    switch (which) {
    case BCAST_LIMIT_SIGNAL:
        g_sig_all = shared_regions(128, &g_sig_win);
        g_sig_mine = (_Atomic uint64_t *)g_sig_all[g_rank];
        break;
    case BCAST_LIMIT_INLINE:
        g_inl_all = shared_regions(128 + (size_t)INLINE_BLOCKS * INLINE_STRIDE, &g_inl_win);
        g_inl_seen = calloc((size_t)g_size, sizeof *g_inl_seen);
        if (!g_inl_seen) {
            fprintf(stderr, "numacoll-bench --mpi: out of memory setting up limit:inline\n");
            PMPI_Abort(MPI_COMM_WORLD, 2);
        }
        break;
    case BCAST_LIMIT_XCORE: /* only the root's region has bytes (the others ask for 0) */
        g_xc_all = shared_regions(g_rank == 0 ? most : 0, &g_xc_win);
        break;
    case BCAST_LIMIT_PIPE:
        g_pp_all = shared_regions(g_rank == 0 ? 128 + most : 0, &g_pp_win);
        break;
    }
}

unsigned char *bcast_limits_xcore_source(void)
{
    return g_xc_all ? g_xc_all[0] : NULL;
}

/* the least any broadcast can cost here: the root stores a sequence number into each
 * receiver's flag line, a receiver waits for it; no payload, no acks */
static void run_signal(int root)
{
    uint64_t seq = ++g_sig_seq;
    if (g_rank == root) {
        for (int r = 0; r < g_size; r++)
            if (r != root)
                atomic_store_explicit((_Atomic uint64_t *)g_sig_all[r], seq, memory_order_release);
        return;
    }
    /* Wait loop: only the root writes this flag (seq of its latest call); after seeing seq
     * the receiver may assume the root has entered this call. */
    REF_WAIT(atomic_load_explicit(g_sig_mine, memory_order_acquire) >= seq);
}

static void run_inline(int root, unsigned char *buf, size_t bytes)
{
    uint64_t seq = ++g_inl_seq;
    size_t off = 128 + (size_t)(seq % INLINE_BLOCKS) * INLINE_STRIDE;
    if (g_rank == root) {
        for (int r = 0; r < g_size; r++) {
            if (r == root) continue;
            /* Wait loop: only rank r writes its ack line (the seq of the last call it copied
             * out, or was the root of with --root-shift); after seeing ack >= seq - BLOCKS
             * the root may assume r has read this block's previous content and may
             * overwrite it. */
            if (seq > INLINE_BLOCKS && g_inl_seen[r] < seq - INLINE_BLOCKS)
                REF_WAIT((g_inl_seen[r] = atomic_load_explicit((_Atomic uint64_t *)g_inl_all[r],
                                                               memory_order_acquire)) >=
                         seq - INLINE_BLOCKS);
            unsigned char *blk = g_inl_all[r] + off;
            memcpy(blk + 8, buf, bytes);
            /* release: the payload before the stamp the receiver waits for */
            atomic_store_explicit((_Atomic uint64_t *)blk, seq, memory_order_release);
        }
        /* with --root-shift the next roots wait for this rank's ack of seq too (it has no
         * block to read in this call); release, as a receiver's ack: a root that sees it
         * must also see this rank's reads of its earlier blocks as done */
        if (g_root_shift)
            atomic_store_explicit((_Atomic uint64_t *)g_inl_all[g_rank], seq,
                                  memory_order_release);
        return;
    }
    unsigned char *blk = g_inl_all[g_rank] + off;
    /* Wait loop: only the root writes this stamp (after the payload, release); after seeing
     * seq the receiver may read the payload of this call. */
    REF_WAIT(atomic_load_explicit((_Atomic uint64_t *)blk, memory_order_acquire) >= seq);
    memcpy(buf, blk + 8, bytes);
    /* release: the block read before the root may reuse it */
    atomic_store_explicit((_Atomic uint64_t *)g_inl_all[g_rank], seq, memory_order_release);
}

static void run_pipe(int root, unsigned char *buf, size_t bytes)
{
    size_t nfrag = (bytes + PIPE_FRAGMENT - 1) / PIPE_FRAGMENT;
    _Atomic uint64_t *done = (_Atomic uint64_t *)g_pp_all[0];
    unsigned char *win = g_pp_all[0] + 128;
    for (size_t i = 0; i < nfrag; i++) {
        size_t off = i * PIPE_FRAGMENT;
        size_t n = bytes - off < PIPE_FRAGMENT ? bytes - off : PIPE_FRAGMENT;
        if (g_rank == root) {
            /* the window's previous content was copied out before the barrier that
             * precedes this call */
            memcpy(win + off, buf + off, n);
            /* release: the fragment before the count that announces it */
            atomic_store_explicit(done, g_pp_base + i + 1, memory_order_release);
        } else {
            /* Wait loop: only rank 0 writes the count (fragments published, over all
             * calls); after seeing base + i + 1 the receiver may read fragment i of this
             * call. */
            REF_WAIT(atomic_load_explicit(done, memory_order_acquire) >= g_pp_base + i + 1);
            memcpy(buf + off, win + off, n);
        }
    }
    g_pp_base += nfrag;
}

void bcast_limits_run(bcast_limit_t which, int root, unsigned char *buf, size_t bytes)
{
    switch (which) {
    case BCAST_LIMIT_SIGNAL:
        run_signal(root);
        break;
    case BCAST_LIMIT_INLINE:
        run_inline(root, buf, bytes);
        break;
    case BCAST_LIMIT_XCORE:
        /* the root has written the source before the barrier that precedes this call (the
         * barrier orders that write before this read); only the receivers copy */
        if (g_rank != root) {
            memcpy(buf, g_xc_all[0], bytes);
            __asm__ __volatile__("" ::"r"(buf) : "memory"); /* the copy is not dead */
        }
        break;
    case BCAST_LIMIT_PIPE:
        run_pipe(root, buf, bytes);
        break;
    }
}

void bcast_limits_free(void)
{
    if (g_sig_win != MPI_WIN_NULL) PMPI_Win_free(&g_sig_win);
    if (g_inl_win != MPI_WIN_NULL) PMPI_Win_free(&g_inl_win);
    if (g_xc_win != MPI_WIN_NULL) PMPI_Win_free(&g_xc_win);
    if (g_pp_win != MPI_WIN_NULL) PMPI_Win_free(&g_pp_win);
    free(g_sig_all);
    free(g_inl_all);
    free(g_inl_seen);
    free(g_xc_all);
    free(g_pp_all);
    g_sig_all = g_inl_all = g_xc_all = g_pp_all = NULL;
    g_inl_seen = NULL;
}
