/*
 * NUMACOLL_BCAST_CHECK: compare every broadcast's arguments across the members before any
 * data moves.
 *
 * Without it, a receiver whose size or root differs from the root's is detected inside the
 * broadcast (bcast.c, recv_first: the notifications carry the root's size and rank), but a member
 * that wrongly passes itself as the root is not: it sends its own buffer, its children may take
 * that message or a mix of both, and its subtree of the true root's tree waits. Members
 * that pass different per-call options (nc_bcast_run_opts) are not detected either.
 *
 * With the check on, every member publishes (root, bytes, mark, options) in its own slot,
 * the team's default barrier follows, and every member reads every slot. All of them read
 * the same values, so all reach the same verdict: either the broadcast runs, or nobody
 * moves a byte and every member returns NUMACOLL_ERR_ARG with the same message naming a
 * member whose arguments differ from those most members passed, and those. The team's op
 * counts stay untouched, so its next broadcasts work. The price is one barrier per
 * broadcast (a debugging aid).
 *
 * Slots: member r's check words live in its own ack line (bc_check_call passes their address),
 * two sets of three words used alternately (call n uses set n % 2). A set is rewritten at
 * call n + 2, after the barrier of call n + 1, which every member reaches only after its
 * reads of call n: no member overwrites a set another may still read.
 */
#include "bcast_internal.h"

#include <stdio.h>

#define CHECK_WORDS 3 /* per set: sequence, root|opts|mark, bytes */

static uint64_t pack_meta(const nc_bcast_args_t *a)
{
    return (uint64_t)(uint32_t)a->root | (uint64_t)(a->opts & 0x7fffffffu) << 32 |
           (uint64_t)(a->mark != 0) << 63;
}

static void unpack(uint64_t meta, uint64_t bytes, nc_bcast_args_t *a)
{
    a->root = (int)(int32_t)(uint32_t)meta;
    a->opts = (uint32_t)(meta >> 32) & 0x7fffffffu;
    a->mark = (int)(meta >> 63);
    a->bytes = (size_t)bytes;
}

static int same(const nc_bcast_args_t *x, const nc_bcast_args_t *y)
{
    return x->root == y->root && x->bytes == y->bytes && x->mark == y->mark && x->opts == y->opts;
}

/* "root R, N bytes" plus the mark and options where they differ from @p other */
static void describe(const nc_bcast_args_t *x, const nc_bcast_args_t *other, char *out, size_t n)
{
    int o = snprintf(out, n, "root %d, %zu bytes", x->root, x->bytes);
    if (x->mark != other->mark && o > 0 && (size_t)o < n)
        o += snprintf(out + o, n - (size_t)o, ", %s", x->mark ? "marked" : "unmarked");
    if (x->opts != other->opts && o > 0 && (size_t)o < n)
        snprintf(out + o, n - (size_t)o, ", per-call options %08x", (unsigned)x->opts);
}

/* Member @p r's arguments of check set @p set into *@p a; returns its sequence word.
 * Relaxed loads: the barrier before them orders them after every member's stores, and
 * nobody rewrites the set before the next call's barrier (see the file comment). */
static uint64_t load(char *words0, size_t stride, size_t set, int r, nc_bcast_args_t *a)
{
    _Atomic uint64_t *o = (_Atomic uint64_t *)(words0 + (size_t)r * stride) + set;
    unpack(atomic_load_explicit(&o[1], memory_order_relaxed),
           atomic_load_explicit(&o[2], memory_order_relaxed), a);
    return atomic_load_explicit(&o[0], memory_order_relaxed);
}

uint32_t nc_bcast_opts_sig(int tree, int k, long inline_max, long long cma_min, int relay,
                           int copy_mode, int rotate)
{
    const long long v[7] = {tree, k, inline_max, cma_min, relay, copy_mode, rotate};
    uint64_t h = nc_fnv1a(NC_FNV_BASIS, v, sizeof v); /* (members share a byte order) */
    return (uint32_t)(h ^ (h >> 32)) & 0x7fffffffu;
}

int nc_bcast_check_args(numacoll_team_t *t, char *words0, size_t stride, uint64_t n,
                        const nc_bcast_args_t *mine, int *other_root)
{
    size_t set = (size_t)(n % 2) * CHECK_WORDS;
    _Atomic uint64_t *w = (_Atomic uint64_t *)(words0 + (size_t)t->rank * stride) + set;
    /* relaxed: the barrier below publishes them (its arrival releases, its departure
     * acquires, so every member's stores here happen before every member's loads below) */
    atomic_store_explicit(&w[1], pack_meta(mine), memory_order_relaxed);
    atomic_store_explicit(&w[2], (uint64_t)mine->bytes, memory_order_relaxed);
    atomic_store_explicit(&w[0], n + 1, memory_order_relaxed);
    int rc = nc_team_barrier_default(t);
    if (rc) return rc;
    nc_bcast_args_t first, a;
    int differ = 0;
    *other_root = -1;
    for (int r = 0; r < t->size; r++) {
        uint64_t seq = load(words0, stride, set, r, &a);
        if (seq != n + 1) /* cannot happen while every member checks every broadcast */
            return nc_error(NUMACOLL_ERR_STATE,
                            "bcast check: rank %d's arguments are from its check %llu, not "
                            "%llu: the members do not check the same broadcasts",
                            r, (unsigned long long)seq, (unsigned long long)(n + 1));
        if (r == 0) first = a;
        if (*other_root < 0 && a.root != mine->root) *other_root = a.root;
        differ |= !same(&a, &first);
    }
    if (!differ) return NUMACOLL_OK;
    /* name the arguments most members passed (ties: the lowest rank's) and the first
     * member that passed others; every member computes the same from the same slots
     * (quadratic in the team size, only for a failing call) */
    int ref = 0, best = 0, bad = 0;
    nc_bcast_args_t x, y;
    for (int r = 0; r < t->size; r++) {
        int cnt = 0;
        load(words0, stride, set, r, &x);
        for (int u = 0; u < t->size; u++) {
            load(words0, stride, set, u, &y);
            cnt += same(&x, &y);
        }
        if (cnt > best) best = cnt, ref = r;
    }
    load(words0, stride, set, ref, &x);
    do
        load(words0, stride, set, bad++, &y);
    while (same(&x, &y));
    bad--;
    char sa[96], sb[96];
    describe(&y, &x, sa, sizeof sa);
    describe(&x, &y, sb, sizeof sb);
    return nc_error(NUMACOLL_ERR_ARG,
                    "bcast (NUMACOLL_BCAST_CHECK): members passed different arguments: rank %d "
                    "passed %s, but rank %d passed %s (as %d of the %d members did); every "
                    "member must pass the same root, size and options; nobody broadcast anything",
                    bad, sa, ref, sb, best, t->size);
}

/* NUMACOLL_BCAST_CHECK: this call's arguments against every member's (check.c), with
 * the per-call options resolved against the team's defaults. On a mismatch nothing has
 * moved and the op counts are untouched; the mismatch record tells the MPI layer whether
 * the roots differ (MPI_ERR_ROOT) or only sizes, marks or options (MPI_ERR_TRUNCATE). */
__attribute__((noinline)) int bc_check_call(numacoll_team_t *t, bcast_t *b, size_t bytes, int root,
                                            const nc_bcast_opts_t *o)
{
    nc_bcast_args_t a = {.root = root, .mark = o && o->mark > 0, .bytes = bytes};
    a.opts = nc_bcast_opts_sig(
        o && o->tree >= 0 && o->tree < NC_BTREE_COUNT ? o->tree : b->tree_kind,
        o && o->k > 0 ? o->k : b->fanout,
        o && o->inline_max >= 0 ? o->inline_max : (long)b->inline_max,
        o && o->cma_min >= 0 ? o->cma_min : (long long)b->cma_min,
        o && o->relay >= 0 ? o->relay : b->relay, o && o->copy_mode >= 0 ? o->copy_mode : -1,
        o && o->rotate >= 0 ? o->rotate : b->rotate);
    int other = -1;
    /* the six check words: words 2-7 of each member's ack line (single writer: its owner) */
    int rc = nc_bcast_check_args(t, (char *)(ack_word(b, 0) + 2), b->proc_area_bytes,
                                 b->checks_done++, &a, &other);
    if (rc == NUMACOLL_ERR_ARG)
        b->mismatch.valid = 1, b->mismatch.mark = 0, b->mismatch.sent = bytes, b->mismatch.head = 0,
        b->mismatch.root = other >= 0 ? other : root;
    return rc;
}
