/*
 * Reduce-scatter and the prefix reductions: their algorithms' table, the automatic choice,
 * and the public entry points numacoll_reduce_scatter_block, numacoll_reduce_scatter,
 * numacoll_scan and numacoll_exscan. They run on the reductions' buffers and chunk protocol
 * (reduce_internal.h), so a team's allreduces, reduces, reduce-scatters and scans share one
 * running chunk count, and a member of a mismatched call fails it after the first chunk
 * like the others. Order of the fold: rank order, ((x_0 op x_1) op x_2) ..., for every
 * algorithm here.
 */
#include "reduce_internal.h"

#include <stdlib.h>
#include <string.h>

/* not in rd_algorithms: NUMACOLL_ALLREDUCE / NUMACOLL_REDUCE cannot name these */
enum { SS_RSCATTER = 0, SS_SCAN_FLAT = 1, SS_SCAN_CHAIN = 2 };
static const rd_algorithm_t ss_algorithms[] = {
    {"rscatter", "each member folds its own slice from every member's input, in rank order",
     rd_post_rscatter, rd_step_rscatter},
    {"scan-flat", "member m folds the inputs of members 0..m (exscan: 0..m-1); one exchange",
     rd_post_scan_flat, rd_step_scan_flat},
    {"scan-chain", "member m folds member m-1's prefix with its input and passes it on",
     rd_post_scan_chain, rd_step_scan_chain},
};
enum { SS_KIND_BASE = 16 }; /* signature's algorithm field: above rd_algorithms' indices */
enum { SS_STACK_P = 64 };   /* slice offsets on the stack up to this many members */

/* The call's signature (compared by every member at the first chunk): the kind of call
 * (algorithm), type, op and a hash of the shape (the slices' offsets or the count); never
 * 0 or RD_SIG_NOMEM (bit 0 set). Equal arguments give equal signatures. */
static uint64_t ss_signature(uint64_t shape, numacoll_dtype_t dtype, numacoll_op_t op, int alg,
                             int exclusive)
{
    uint64_t kind = (uint64_t)dtype | (uint64_t)op << 8 |
                    (uint64_t)(SS_KIND_BASE + alg) << 16 | (uint64_t)exclusive << 24;
    uint64_t x = shape * 0x9e3779b97f4a7c15ull ^ kind;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return x | 1;
}

/* 1 if [a, a + na) and [b, b + nb) share a byte */
static int overlap(const void *a, size_t na, const void *b, size_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return na && nb && x < y + nb && y < x + na;
}

/* the common part of a call: kernel, sizes, state; NUMACOLL_OK or the error */
static int ss_call_init(rd_call_t *call, numacoll_team_t *t, numacoll_dtype_t dtype,
                        numacoll_op_t op, const char *who)
{
    /* every field by name: a memset of the struct compiles to a rep stos, whose start-up
     * is a tenth of a tiny scan's time */
    call->team = t, call->state = NULL, call->input = NULL, call->output = NULL;
    call->count = 0, call->esize = 0, call->kernel = NULL, call->root = -1;
    call->me = 0, call->nprocs = 0, call->sig = 0, call->who = who;
    call->stream = 0, call->timed = 0, call->kind = 0, call->cls = 0, call->t0 = 0;
    call->keep_sigs = 0, call->chunk_elems = 0, call->slot_bytes = 0, call->slice_off = NULL;
    call->exclusive = 0, call->post_own = 0;
    int rc = rd_kernel_get(who, dtype, op, &call->kernel);
    if (rc) return rc;
    call->esize = numacoll_dtype_size(dtype);
    call->me = t->rank;
    call->nprocs = t->size;
    return NUMACOLL_OK;
}

/* A member whose own arguments are invalid (its error @p rc, the message set) still takes
 * part in the call's first chunk, an empty one whose signature is RD_SIG_BADARG: every
 * member then fails the call there (protocol.c: the others with a message naming this
 * member) and all keep counting chunks alike, so the team's next calls work. @p call: set
 * up by ss_call_init, whose kernel may be missing. Returns @p rc with this member's own
 * message, or the team's failure (a dead member, a timeout) if the chunk found one. */
static int ss_fail_alike(rd_call_t *call, int rc)
{
    char own[1024];
    snprintf(own, sizeof own, "%s", numacoll_last_error());
    numacoll_team_t *t = call->team;
    call->me = t->rank, call->nprocs = t->size;
    call->count = 0, call->esize = 1, call->chunk_elems = 0, call->slot_bytes = 0;
    call->sig = RD_SIG_BADARG;
    if (rd_state_get(t, &call->state) == NUMACOLL_OK) {
        int prc = rd_run_chunks_of(call, &ss_algorithms[SS_SCAN_FLAT]);
        if (prc != NUMACOLL_OK && prc != NUMACOLL_ERR_ARG) return prc;
    }
    return nc_error(rc, "%s", own);
}

/* run the call's chunks: pages for @p slot_bytes of each slot, the copy mode (stream.c:
 * NUMACOLL_REDUCE_STREAM, the automatic choice timing reduce-scatters and scans apart) */
static int ss_run(rd_call_t *call, int alg, size_t slot_bytes)
{
    rd_call_pages(call, slot_bytes);
    rd_stream_begin(call, alg == SS_RSCATTER ? RD_KIND_RSCATTER : RD_KIND_SCAN);
    call->slot_bytes = slot_bytes;
    int rc = rd_run_chunks_of(call, &ss_algorithms[alg]);
    if (rc == NUMACOLL_OK) rd_stream_end(call);
    return rc;
}

int nc_reduce_scatter_run(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                          const size_t *recvcounts, size_t block, numacoll_dtype_t dtype,
                          numacoll_op_t op, const char *who)
{
    rd_call_t call;
    int rc = ss_call_init(&call, t, dtype, op, who);
    if (rc) return ss_fail_alike(&call, rc);
    const int P = t->size, me = t->rank;
    const size_t es = call.esize;
    size_t stack_off[SS_STACK_P + 1], *off = stack_off;
    if (P > SS_STACK_P && !(off = malloc(((size_t)P + 1) * sizeof *off)))
        return ss_fail_alike(&call, nc_error(NUMACOLL_ERR_NOMEM, "%s: out of memory for %d "
                                             "slice offsets", who, P));
    /* the slices' offsets, the longest slice, and a hash of the shape */
    uint64_t shape = NC_FNV_BASIS;
    size_t longest = 0;
    int invalid = 1; /* an error before the set-up below is this member's own */
    off[0] = 0;
    for (int m = 0; m < P; m++) {
        size_t n = recvcounts ? recvcounts[m] : block;
        if (n > longest) longest = n;
        if (__builtin_add_overflow(off[m], n, &off[m + 1]) || off[m + 1] > SIZE_MAX / es) {
            rc = nc_error(NUMACOLL_ERR_TOOBIG, "%s: the counts add up to more elements of %s "
                          "than the address space holds", who, numacoll_dtype_name(dtype));
            goto out;
        }
        shape = nc_fnv1a(shape, &n, sizeof n);
    }
    const size_t total = off[P], mine = off[me + 1] - off[me];
    int in_place = sendbuf == NUMACOLL_IN_PLACE;
    call.input = in_place ? recvbuf : sendbuf;
    call.output = recvbuf;
    if (((in_place && total) || mine) && !recvbuf) {
        rc = nc_error(NUMACOLL_ERR_ARG,
                      "%s: recvbuf is NULL on rank %d, which receives %zu elements%s", who, me,
                      mine, in_place ? " (and holds the input: in place)" : "");
        goto out;
    }
    if (total && !call.input) {
        rc = nc_error(NUMACOLL_ERR_ARG, "%s: sendbuf is NULL for %zu elements (pass "
                      "NUMACOLL_IN_PLACE to take the input from recvbuf)", who, total);
        goto out;
    }
    invalid = 0; /* from here on every member decides alike */
    rc = rd_state_get(t, &call.state);
    if (rc) goto out;
    /* a piece of every member's slice per chunk, in 64-byte grains where they fit; no
     * longer than the longest slice, so that the pieces of a small call stay within the
     * slots' first (eager) pages: a chunk writes P q elements of a slot, no more */
    size_t q = call.state->fragment / (size_t)P / 64 * 64 / es;
    if (!q) q = call.state->fragment / ((size_t)P * es);
    if (!q) {
        rc = nc_error(NUMACOLL_ERR_UNSUPPORTED, "%s: %d members' elements of %s do not fit one "
                      "chunk of NUMACOLL_REDUCE_FRAGMENT=%zu bytes", who, P,
                      numacoll_dtype_name(dtype), call.state->fragment);
        goto out;
    }
    if (q > longest) q = longest ? longest : 1;
    call.count = longest;
    call.chunk_elems = q;
    call.slice_off = off;
    call.post_own = overlap(call.input, total * es, recvbuf, mine * es);
    call.sig = ss_signature(shape, dtype, op, SS_RSCATTER, 0);
    rc = ss_run(&call, SS_RSCATTER, longest ? (size_t)P * q * es : 0);
out:
    if (off != stack_off) free(off);
    return rc && invalid ? ss_fail_alike(&call, rc) : rc;
}

int nc_scan_run(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                numacoll_dtype_t dtype, numacoll_op_t op, int exclusive, const char *who)
{
    rd_call_t call;
    int rc = ss_call_init(&call, t, dtype, op, who);
    if (rc) return ss_fail_alike(&call, rc);
    const size_t es = call.esize;
    if (count > SIZE_MAX / es)
        return ss_fail_alike(&call, nc_error(NUMACOLL_ERR_TOOBIG, "%s: %zu elements of %s "
                                             "exceed the address space", who, count,
                                             numacoll_dtype_name(dtype)));
    const size_t bytes = count * es;
    const int in_place = sendbuf == NUMACOLL_IN_PLACE, gets = !exclusive || t->rank > 0;
    call.input = in_place ? recvbuf : sendbuf;
    call.output = gets ? recvbuf : NULL;
    if (count && (gets || in_place) && !recvbuf)
        return ss_fail_alike(&call, nc_error(NUMACOLL_ERR_ARG, "%s: recvbuf is NULL for %zu "
                                             "elements%s", who, count, in_place ? " (it holds "
                                             "the input: NUMACOLL_IN_PLACE)" : ""));
    if (count && !call.input)
        return ss_fail_alike(&call, nc_error(NUMACOLL_ERR_ARG, "%s: sendbuf is NULL for %zu "
                                             "elements (pass NUMACOLL_IN_PLACE to take the "
                                             "input from recvbuf)", who, count));
    rc = rd_state_get(t, &call.state);
    if (rc) return rc;
    /* the same on every member: the size and the agreed NUMACOLL_REDUCE_FLAT_MAX */
    int alg = t->size > 1 && bytes > call.state->flat_max ? SS_SCAN_CHAIN : SS_SCAN_FLAT;
    call.count = count;
    call.exclusive = exclusive;
    /* our own input from our slot where the fold might overwrite it first (scan_flat.c):
     * output and input overlap, unless they are one buffer at member 0 or 1 */
    call.post_own = call.output && overlap(call.input, bytes, call.output, bytes) &&
                    !(call.input == call.output && t->rank <= 1);
    call.sig = ss_signature(count, dtype, op, alg, exclusive);
    return ss_run(&call, alg, bytes < call.state->fragment ? bytes : call.state->fragment);
}

int numacoll_reduce_scatter_block(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                                  size_t recvcount, numacoll_dtype_t dtype, numacoll_op_t op)
{
    const char *who = "numacoll_reduce_scatter_block";
    if (!t) return nc_error(NUMACOLL_ERR_ARG, "%s: team is NULL", who);
    nc_team_op_enter(t, "reduce_scatter_block");
    int rc = nc_reduce_scatter_run(t, sendbuf, recvbuf, NULL, recvcount, dtype, op, who);
    if (rc == NUMACOLL_OK) nc_team_op_leave(t);
    return rc;
}

int numacoll_reduce_scatter(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                            const size_t *recvcounts, numacoll_dtype_t dtype, numacoll_op_t op)
{
    const char *who = "numacoll_reduce_scatter";
    if (!t) return nc_error(NUMACOLL_ERR_ARG, "%s: team is NULL", who);
    nc_team_op_enter(t, "reduce_scatter");
    int rc;
    if (!recvcounts) {
        rd_call_t call;
        (void)ss_call_init(&call, t, dtype, op, who);
        rc = ss_fail_alike(&call, nc_error(NUMACOLL_ERR_ARG, "%s: recvcounts is NULL; it must "
                                           "hold the team's %d counts", who, t->size));
    } else {
        rc = nc_reduce_scatter_run(t, sendbuf, recvbuf, recvcounts, 0, dtype, op, who);
    }
    if (rc == NUMACOLL_OK) nc_team_op_leave(t);
    return rc;
}

static int scan_entry(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                      numacoll_dtype_t dtype, numacoll_op_t op, int exclusive)
{
    const char *who = exclusive ? "numacoll_exscan" : "numacoll_scan";
    if (!t) return nc_error(NUMACOLL_ERR_ARG, "%s: team is NULL", who);
    nc_team_op_enter(t, exclusive ? "exscan" : "scan");
    int rc = nc_scan_run(t, sendbuf, recvbuf, count, dtype, op, exclusive, who);
    if (rc == NUMACOLL_OK) nc_team_op_leave(t);
    return rc;
}

int numacoll_scan(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                  numacoll_dtype_t dtype, numacoll_op_t op)
{
    return scan_entry(t, sendbuf, recvbuf, count, dtype, op, 0);
}

int numacoll_exscan(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                    numacoll_dtype_t dtype, numacoll_op_t op)
{
    return scan_entry(t, sendbuf, recvbuf, count, dtype, op, 1);
}
