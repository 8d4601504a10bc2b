/*
 * The reduction algorithms' table, the automatic choice, and the public entry points
 * numacoll_allreduce, numacoll_reduce and numacoll_reduce_with.
 */
#include "reduce_internal.h"

#include "../../topo/topo.h"

#include <string.h>

const rd_algorithm_t rd_algorithms[] = {
    {"flat", "every member (a reduce: the root) folds all contributions; one flag exchange",
     rd_post_flat, rd_step_flat},
    {"rsag", "reduce-scatter (each member folds its slice) then allgather of the slices",
     rd_post_rsag, rd_step_rsag},
    {"hier", "leaders of the NUMA and socket groups fold their groups', level by level",
     rd_post_whole, rd_step_hier}, /* a group's leader reads its members' whole inputs */
    {"rbcast", "a flat reduce to member 0, then its broadcast of the result (a reduce: flat)",
     NULL, NULL}, /* rbcast.c */
};
const int rd_algorithm_count = (int)(sizeof rd_algorithms / sizeof rd_algorithms[0]);

const numacoll_algorithm_info_t *numacoll_reduce_algorithms(int *count)
{
    static numacoll_algorithm_info_t info[sizeof rd_algorithms / sizeof rd_algorithms[0]];
    for (int i = 0; i < rd_algorithm_count; i++)
        info[i] = (numacoll_algorithm_info_t){rd_algorithms[i].name, rd_algorithms[i].description};
    if (count) *count = rd_algorithm_count;
    return info;
}

int nc_reduce_alg_lookup(const char *name, int *alg)
{
    if (name && strcmp(name, "auto") == 0) {
        *alg = -1;
        return NUMACOLL_OK;
    }
    for (int i = 0; name && i < rd_algorithm_count; i++)
        if (strcmp(rd_algorithms[i].name, name) == 0) {
            *alg = i;
            return NUMACOLL_OK;
        }
    return nc_error(NUMACOLL_ERR_NOT_FOUND, "reduction algorithm '%s' unknown; allowed: auto, "
                    "flat, rsag, hier, rbcast", name ? name : "(null)");
}

/*
 * The automatic choice, the same on every member (it depends only on the message size and
 * parameters every member agreed on at set-up, and the exchanged topology): an allreduce on
 * an oversubscribed team of more than two members is rbcast at every size (a flat reduce to
 * member 0 and its broadcast: every other member waits on one flag per step, where flat has
 * it wait on all P - 1 inputs and rsag needs every member scheduled for every chunk); else up
 * to NUMACOLL_REDUCE_FLAT_MAX bytes hier when the team spans several NUMA nodes, else flat;
 * rsag above, but for a reduce over two members or on an oversubscribed team, which is flat
 * at every size (over two, the root reads the other's whole input either way and flat
 * spares rsag's copies and second exchange; oversubscribed, flat's non-roots leave after
 * posting instead of waiting for CPU time to fold their slices); a team of one process
 * folds alone (flat). The measurements behind these choices are in docs/tuning-notes.md.
 */
static int auto_choice(const nc_reduce_team_t *r, int nprocs, size_t bytes, int root)
{
    int configured = root < 0 ? r->alg_allreduce : r->alg_reduce;
    if (configured >= 0) return configured;
    if (nprocs == 1) return RD_ALG_FLAT;
    if (root < 0 && r->oversubscribed && nprocs > 2) return RD_ALG_RBCAST;
    if (bytes > r->flat_max)
        return root >= 0 && (nprocs == 2 || r->oversubscribed) ? RD_ALG_FLAT : RD_ALG_RSAG;
    return r->numa_nodes > 1 && r->hier ? RD_ALG_HIER : RD_ALG_FLAT;
}

const char *nc_reduce_choice(numacoll_team_t *t, size_t bytes, int root)
{
    nc_reduce_team_t probe = {.flat_max = nc_cfg_size(NC_CFG_REDUCE_FLAT_MAX),
                              .numa_nodes = t ? nc_topo_team_numa_count(t) : 1,
                              .oversubscribed = t ? t->oversubscribed : 0,
                              .hier = t ? nc_topo_team_hier(t, RD_HIER_LEVELS) : NULL};
    if (t && t->reduce) probe = *t->reduce;
    else if (nc_reduce_alg_lookup(nc_cfg_str(NC_CFG_ALLREDUCE), &probe.alg_allreduce) ||
             nc_reduce_alg_lookup(nc_cfg_str(NC_CFG_REDUCE), &probe.alg_reduce))
        return "?";
    return rd_algorithms[auto_choice(&probe, t ? t->size : 2, bytes, root)].name;
}

/* The call's signature, which every member compares with the others' at the first chunk: a
 * few multiplies (a byte-wise hash of the five words would cost tens of ns, a noticeable
 * part of a small reduction); never 0, the value of a slot not yet written. Equal
 * arguments give equal signatures; different ones differ but for a 2^-64 chance. */
static uint64_t call_signature(size_t count, numacoll_dtype_t dtype, numacoll_op_t op, int root,
                               int alg)
{
    uint64_t kind = (uint64_t)dtype | (uint64_t)op << 8 | (uint64_t)alg << 16 |
                    (uint64_t)(uint32_t)(root + 1) << 32;
    uint64_t x = (uint64_t)count * 0x9e3779b97f4a7c15ull ^ kind;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return x | 1;
}

int nc_reduce_local(numacoll_dtype_t dtype, numacoll_op_t op, const void *in, void *inout,
                    size_t n)
{
    rd_kernel_fn kernel;
    int rc = rd_kernel_get("nc_reduce_local", dtype, op, &kernel);
    if (rc == NUMACOLL_OK) kernel(inout, in, inout, n); /* element-wise: out may be b too */
    return rc;
}

int rd_mismatch_error(const char *who, const uint64_t *sigs, int nprocs, int me, int root)
{
    int m = 0;
    while (m < nprocs && sigs[m] == sigs[me])
        m++;
    if (m < nprocs && sigs[m] == RD_SIG_BADARG)
        return nc_error(NUMACOLL_ERR_ARG,
                        "%s: rank %d could not take part: invalid arguments or no memory there "
                        "(its own error says which); this call did not happen on any member",
                        who, m);
    return nc_error(NUMACOLL_ERR_ARG,
                    "%s: rank %d passed other arguments than rank %d (count, datatype, op%s or "
                    "algorithm differ); every member must pass the same",
                    who, m < nprocs ? m : me, me, root >= 0 ? ", root" : "");
}

int nc_reduce_run(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                  numacoll_dtype_t dtype, numacoll_op_t op, int root, int alg, const char *who)
{
    return rd_reduce_run(t, sendbuf, recvbuf, count, dtype, op, root, alg, who, 0);
}

void rd_call_pages(rd_call_t *call, size_t slot_bytes)
{
    /* calls within the set-up pages: after give_back of them in a row, the rest of the
     * pages go back (state.c) */
    nc_reduce_team_t *r = call->state;
    if (slot_bytes <= r->eager) {
        if (NC_UNLIKELY(r->ready > r->eager) && r->give_back && ++r->small_run > r->give_back)
            rd_state_give_back(r, call->me);
    } else {
        r->small_run = 0;
    }
    /* chunks beyond the pages the slots got at set-up: the rest of them now, or tell the
     * others in the first chunk (protocol.c) */
    if (NC_UNLIKELY(slot_bytes > r->ready) && r->ready < r->fragment &&
        rd_state_ready(r, call->me) != NUMACOLL_OK)
        call->sig = RD_SIG_NOMEM;
}

int rd_badarg_chunk(numacoll_team_t *t, int root, int alg, int keep_sigs, const char *who)
{
    rd_call_t call;
    call.team = t, call.count = 0, call.esize = 1, call.root = root, call.who = who;
    call.keep_sigs = keep_sigs, call.input = NULL, call.output = NULL, call.kernel = NULL;
    call.me = t->rank, call.nprocs = t->size, call.sig = RD_SIG_BADARG;
    call.stream = 0, call.timed = 0, call.kind = 0, call.cls = 0, call.t0 = 0;
    call.slot_bytes = 0, call.slice_off = NULL, call.exclusive = 0, call.post_own = 0;
    int rc = rd_state_get(t, &call.state);
    if (rc) return rc;
    /* 0 elements: no post, no step; the algorithm decides only whether a non-root of a
     * reduce leaves right after posting (flat), as the others' non-roots do */
    return rd_run_chunks(&call, alg);
}

int rd_fail_alike(numacoll_team_t *t, int rc, int root, int alg, const char *who)
{
    char own[1024];
    snprintf(own, sizeof own, "%s", numacoll_last_error());
    const int reduce = root >= 0 || root < -1; /* out of range: a reduce's */
    if (root >= t->size || root < -1) root = -1; /* unknown: wait like a root */
    nc_reduce_team_t *r;
    int prc = rd_state_get(t, &r);
    if (prc == NUMACOLL_OK) {
        if (alg < 0 || alg >= rd_algorithm_count) alg = auto_choice(r, t->size, 0, root);
        if (alg == RD_ALG_RBCAST && !reduce) prc = rd_rbcast_fail_alike(t, who);
        else prc = rd_badarg_chunk(t, root, alg == RD_ALG_RBCAST ? RD_ALG_FLAT : alg, 0, who);
        if (prc != NUMACOLL_OK && prc != NUMACOLL_ERR_ARG) return prc;
    }
    return nc_error(rc, "%s", own);
}

int rd_reduce_run(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                  numacoll_dtype_t dtype, numacoll_op_t op, int root, int alg, const char *who,
                  int keep_sigs)
{
    /* every field is set below or by rd_stream_begin: no zeroing of the whole struct (its
     * rep stos is a noticeable part of a small reduction) */
    rd_call_t call;
    call.team = t, call.count = count, call.root = root, call.who = who;
    call.keep_sigs = keep_sigs;
    /* this member's own errors: it still takes its part in the others' call */
    int rc = rd_kernel_get(who, dtype, op, &call.kernel);
    if (rc) return rd_fail_alike(t, rc, root, alg, who);
    call.esize = numacoll_dtype_size(dtype);
    call.me = t->rank;
    call.nprocs = t->size;
    if (root >= t->size)
        return rd_fail_alike(t, nc_error(NUMACOLL_ERR_ARG, "%s: root=%d; allowed: 0..%d", who,
                                         root, t->size - 1),
                             root, alg, who);
    if (count > SIZE_MAX / call.esize)
        return rd_fail_alike(t, nc_error(NUMACOLL_ERR_TOOBIG, "%s: %zu elements of %s exceed "
                                         "the address space", who, count,
                                         numacoll_dtype_name(dtype)),
                             root, alg, who);
    int gets_result = root < 0 || root == t->rank;
    int in_place = sendbuf == NUMACOLL_IN_PLACE || (gets_result && sendbuf == recvbuf);
    if (sendbuf == NUMACOLL_IN_PLACE && !gets_result)
        return rd_fail_alike(t, nc_error(NUMACOLL_ERR_ARG, "%s: NUMACOLL_IN_PLACE on rank %d, "
                                         "which is not the root (%d); only the root may "
                                         "reduce in place", who, t->rank, root),
                             root, alg, who);
    if (count && gets_result && !recvbuf)
        return rd_fail_alike(t, nc_error(NUMACOLL_ERR_ARG, "%s: recvbuf is NULL for %zu "
                                         "elements", who, count),
                             root, alg, who);
    if (count && !in_place && !sendbuf)
        return rd_fail_alike(t, nc_error(NUMACOLL_ERR_ARG, "%s: sendbuf is NULL for %zu "
                                         "elements", who, count),
                             root, alg, who);
    if (alg >= rd_algorithm_count)
        return rd_fail_alike(t, nc_error(NUMACOLL_ERR_ARG, "%s: algorithm index %d; allowed: "
                                         "-1..%d", who, alg, rd_algorithm_count - 1),
                             root, -1, who);
    call.input = in_place ? recvbuf : sendbuf;
    call.output = gets_result ? recvbuf : NULL;
    rc = rd_state_get(t, &call.state);
    if (rc) return rc;
    if (alg < 0) alg = auto_choice(call.state, t->size, count * call.esize, root);
    if (alg == RD_ALG_RBCAST) {
        if (root < 0) return rd_allreduce_rbcast(t, sendbuf, recvbuf, count, dtype, op, who);
        alg = RD_ALG_FLAT; /* a reduce's rbcast is its first half */
    }
    call.sig = call_signature(count, dtype, op, root, alg);
    rd_call_pages(&call, count * call.esize);
    rd_stream_begin(&call, root >= 0 ? RD_KIND_REDUCE : RD_KIND_ALLREDUCE);
    rc = rd_run_chunks(&call, alg);
    if (rc == NUMACOLL_OK) rd_stream_end(&call);
    return rc;
}

int numacoll_reduce_with(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                         numacoll_dtype_t dtype, numacoll_op_t op, int root,
                         const char *algorithm)
{
    const char *who = root < 0 ? "numacoll_allreduce" : "numacoll_reduce";
    if (!t) return nc_error(NUMACOLL_ERR_ARG, "%s: team is NULL", who);
    int alg = -1;
    nc_team_op_enter(t, root < 0 ? "allreduce" : "reduce");
    int rc;
    if (algorithm && nc_reduce_alg_lookup(algorithm, &alg) != NUMACOLL_OK)
        rc = rd_fail_alike(t, nc_error_wrap(NUMACOLL_ERR_ARG, "%s", who), root, -1, who);
    else
        rc = nc_reduce_run(t, sendbuf, recvbuf, count, dtype, op, root, alg, who);
    if (rc == NUMACOLL_OK) nc_team_op_leave(t);
    return rc;
}

int numacoll_allreduce(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                       numacoll_dtype_t dtype, numacoll_op_t op)
{
    return numacoll_reduce_with(t, sendbuf, recvbuf, count, dtype, op, -1, NULL);
}

int numacoll_reduce(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                    numacoll_dtype_t dtype, numacoll_op_t op, int root)
{
    if (root < 0) {
        int rc = nc_error(NUMACOLL_ERR_ARG, "numacoll_reduce: root=%d; allowed: 0..%d", root,
                          t ? t->size - 1 : 0);
        /* a reduce whose root this member does not know: its part in the others' call */
        return t ? rd_fail_alike(t, rc, -2, -1, "numacoll_reduce") : rc;
    }
    return numacoll_reduce_with(t, sendbuf, recvbuf, count, dtype, op, root, NULL);
}
