/*
 * The team's reduction buffers (layout: reduce_internal.h), created collectively at the
 * team's first reduction: every member's area is NUMA-local to it (bound to its node and
 * first-touched by it), and the parameters that shape the buffers or the choice of
 * algorithm must be the same on every member.
 *
 * Memory in two steps. At set-up a member's area gets pages for its control lines and for
 * the first NUMACOLL_REDUCE_EAGER bytes of each slot (a chunk of at most that many bytes
 * stays inside them), agreed like the segment itself. The first call whose chunks are
 * larger gives the member's whole area its pages (rd_state_ready); a member that cannot
 * get them says so in that call's first chunk (protocol.c), so that every member of the
 * call fails alike and nothing is written where no page could be had (no SIGBUS).
 */
#include "reduce_internal.h"

#include "../../topo/topo.h"
#include "../bcast/bcast.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* what every member must agree on */
typedef struct rd_params {
    uint64_t fragment, flat_max, stream_min, eager, give_back;
    int32_t slots, alg_allreduce, alg_reduce, stream;
} rd_params_t;

/* NUMACOLL_REDUCE_STREAM's value as RD_STREAM_* */
static int32_t stream_from_config(void)
{
    const char *v = nc_cfg_str(NC_CFG_REDUCE_STREAM);
    return strcmp(v, "on") == 0 ? RD_STREAM_ON : strcmp(v, "off") == 0 ? RD_STREAM_OFF
                                                                        : RD_STREAM_AUTO;
}

static int params_from_config(rd_params_t *p)
{
    memset(p, 0, sizeof *p);
    p->fragment = nc_round_up(nc_cfg_size(NC_CFG_REDUCE_FRAGMENT), 64);
    p->flat_max = nc_cfg_size(NC_CFG_REDUCE_FLAT_MAX);
    p->slots = (int32_t)nc_cfg_int(NC_CFG_REDUCE_SLOTS);
    p->stream = stream_from_config();
    p->stream_min = nc_cfg_size(NC_CFG_REDUCE_STREAM_MIN);
    p->eager = nc_cfg_size(NC_CFG_REDUCE_EAGER);
    p->give_back = (uint64_t)nc_cfg_int(NC_CFG_REDUCE_GIVE_BACK);
    int a = -1, b = -1;
    int rc = nc_reduce_alg_lookup(nc_cfg_str(NC_CFG_ALLREDUCE), &a);
    if (rc == NUMACOLL_OK) rc = nc_reduce_alg_lookup(nc_cfg_str(NC_CFG_REDUCE), &b);
    p->alg_allreduce = a, p->alg_reduce = b;
    return rc;
}

/* NUMACOLL_ERR_CONFIG naming the first parameter in which @p mine differs from rank 0's */
static int params_compare(const rd_params_t *mine, const rd_params_t *first)
{
    static const struct {
        nc_cfg_id_t id;
        size_t off, size;
    } fields[] = {
        {NC_CFG_REDUCE_FRAGMENT, offsetof(rd_params_t, fragment), sizeof(uint64_t)},
        {NC_CFG_REDUCE_FLAT_MAX, offsetof(rd_params_t, flat_max), sizeof(uint64_t)},
        {NC_CFG_REDUCE_SLOTS, offsetof(rd_params_t, slots), sizeof(int32_t)},
        {NC_CFG_ALLREDUCE, offsetof(rd_params_t, alg_allreduce), sizeof(int32_t)},
        {NC_CFG_REDUCE, offsetof(rd_params_t, alg_reduce), sizeof(int32_t)},
        {NC_CFG_REDUCE_STREAM, offsetof(rd_params_t, stream), sizeof(int32_t)},
        {NC_CFG_REDUCE_STREAM_MIN, offsetof(rd_params_t, stream_min), sizeof(uint64_t)},
        {NC_CFG_REDUCE_EAGER, offsetof(rd_params_t, eager), sizeof(uint64_t)},
        {NC_CFG_REDUCE_GIVE_BACK, offsetof(rd_params_t, give_back), sizeof(uint64_t)},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (memcmp((const char *)mine + fields[i].off, (const char *)first + fields[i].off,
                   fields[i].size) != 0)
            return nc_error(NUMACOLL_ERR_CONFIG,
                            "%s=%s here differs from rank 0's setting; the reductions need the "
                            "same value on every member of a team",
                            nc_cfg_name(fields[i].id), nc_cfg_str(fields[i].id));
    return NUMACOLL_OK;
}

/* Pages for member @p me's control lines and the first r->eager bytes of each of its in
 * and result slots (set-up) */
static int populate_eager(nc_reduce_team_t *r, int me)
{
    const char *what = "the reduction buffers (control lines and small chunks)";
    int rc = nc_seg_populate(rd_area(r, me), r->in_off, what);
    for (unsigned s = 0; s < r->slots && rc == NUMACOLL_OK; s++) {
        rc = nc_seg_populate(rd_slot(r, me, s), RD_SLOT_HEADER + r->eager, what);
        if (rc == NUMACOLL_OK && r->eager) rc = nc_seg_populate(rd_result(r, me, s), r->eager, what);
    }
    if (rc == NUMACOLL_OK) r->ready = r->eager;
    return rc;
}

int rd_state_ready(nc_reduce_team_t *r, int me)
{
    if (r->ready >= r->fragment) return NUMACOLL_OK;
    size_t from = r->in_off; /* everything after the control lines: the slots */
    int rc = nc_seg_populate(rd_area(r, me) + from, r->area_stride - from,
                             "the reduction buffers (large chunks)");
    if (rc == NUMACOLL_OK) r->ready = r->fragment;
    return rc;
}

/* Punch out of the file the whole pages of [@p from, @p to): their memory goes back to the
 * system (a shared mapping of tmpfs); nothing if the range holds no whole page */
static void punch(char *from, char *to)
{
    size_t ps = nc_page_size();
    uintptr_t a = nc_round_up((uintptr_t)from, ps), b = (uintptr_t)to / ps * ps;
    if (a < b) (void)madvise((void *)a, b - a, MADV_REMOVE); /* EINVAL: kept, harmless */
}

void rd_state_give_back(nc_reduce_team_t *r, int me)
{
    for (unsigned s = 0; s < r->slots; s++) {
        /* an in slot past its eager bytes up to the next slot's first page (kept: it holds
         * that slot's header), or up to the result slots */
        char *next = s + 1 < r->slots ? rd_slot(r, me, s + 1) : rd_area(r, me) + r->result_off;
        punch(rd_in(r, me, s) + r->eager, next);
        punch(rd_result(r, me, s) + r->eager, rd_result(r, me, s) + r->fragment);
    }
    r->ready = r->eager;
    r->all_ready = 0;
    r->small_run = 0;
}

int rd_state_get(numacoll_team_t *t, nc_reduce_team_t **state)
{
    if (NC_LIKELY(t->reduce != NULL)) {
        *state = t->reduce;
        return NUMACOLL_OK;
    }
    const int P = t->size;
    rd_params_t mine, *all = calloc((size_t)P, sizeof *all);
    int rc = params_from_config(&mine);
    /* the only exit before the exchange: without @p all this member cannot take part (a
     * few bytes per member; the others then wait in the exchange, or for NUMACOLL_TIMEOUT
     * where the allgather has one) */
    if (!all) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    /* allocated before the agreement, so that its failure is agreed too */
    nc_reduce_team_t *r = calloc(1, sizeof *r);
    uint64_t *sigs = calloc((size_t)P, sizeof *sigs);
    if ((!r || !sigs) && rc == NUMACOLL_OK) rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    if (r) r->sigs = sigs;
    else free(sigs);
    /* everyone takes part in the exchange, even with a bad value, so nobody waits alone */
    int rc_oob = nc_oob_allgather(t->allgather, &mine, all, sizeof mine, t->oob_ctx,
                                  "setting up the reductions");
    if (rc_oob != NUMACOLL_OK) {
        if (r) free(r->sigs);
        free(all), free(r);
        return rc_oob;
    }
    if (rc == NUMACOLL_OK) rc = params_compare(&mine, &all[0]);
    free(all);
    rc = nc_agree(t->rank, P, t->allgather, t->oob_ctx, rc);
    if (rc != NUMACOLL_OK) {
        if (r) free(r->sigs);
        free(r);
        return rc;
    }
    r->line = t->line;
    r->fragment = mine.fragment;
    r->slots = (unsigned)mine.slots;
    r->flat_max = mine.flat_max;
    r->alg_allreduce = mine.alg_allreduce;
    r->alg_reduce = mine.alg_reduce;
    r->stream = mine.stream;
    r->stream_min = mine.stream_min;
    r->modes_off = RD_CTL_LINES * r->line;
    r->in_off = r->modes_off + nc_round_up(RD_STREAM_KINDS * RD_STREAM_CLASSES, r->line);
    r->in_stride = nc_round_up(RD_SLOT_HEADER + r->fragment, 64);
    /* page-aligned result slots: a slot's first NUMACOLL_REDUCE_EAGER bytes take as few
     * pages as they can */
    r->result_off = nc_round_up(r->in_off + r->slots * r->in_stride, nc_page_size());
    r->area_stride = nc_round_up(r->result_off + r->slots * r->fragment, nc_page_size());
    r->eager = mine.eager < r->fragment ? mine.eager : r->fragment;
    r->give_back = mine.give_back && mine.give_back < r->slots ? r->slots : mine.give_back;
    r->next_chunk = 1;
    r->next_slot = 1 % r->slots;
    r->hier = nc_topo_team_hier(t, RD_HIER_LEVELS);
    r->numa_nodes = nc_topo_team_numa_count(t);
    r->oversubscribed = t->oversubscribed;
    size_t total = r->area_stride * (size_t)P;
    /* the segment reserves nothing of our area: populate_eager gives it its first pages;
     * a kernel that cannot populate a range (before 5.14) gets the whole area at set-up */
    int lazy = nc_seg_populate_supported();
    rc = nc_seg_create_collective(t->rank, P, t->allgather, t->oob_ctx, total, 0,
                                  (size_t)t->rank * r->area_stride, r->area_stride,
                                  lazy ? 0 : r->area_stride, t->numa_node,
                                  "the reduction buffers", &r->seg);
    if (rc != NUMACOLL_OK) {
        free(r->sigs);
        free(r);
        return rc;
    }
    r->areas = r->seg.base;
    t->reduce_needs_bcast = t->size > 2 && (r->alg_allreduce == RD_ALG_RBCAST ||
                                            (r->alg_allreduce < 0 && r->oversubscribed));
    if (!lazy) r->ready = r->fragment;
    rc = nc_agree(t->rank, P, t->allgather, t->oob_ctx,
                  lazy ? populate_eager(r, t->rank) : NUMACOLL_OK);
    if (rc != NUMACOLL_OK) {
        nc_seg_destroy(&r->seg);
        free(r);
        return rc;
    }
    t->reduce = r;
    *state = r;
    if (t->rank == 0 || nc_verbose() >= 3)
        nc_log(1, t->rank, P,
               "reduce: buffers %zu bytes (%u slots of %zu bytes in and out per member; %zu "
               "bytes of each at set-up, the rest at the first larger chunk), "
               "allreduce %s, reduce %s, flat up to %zu bytes, streamed copies %s from %zu "
               "bytes, %d NUMA node(s), %d group level(s) for hier",
               total, r->slots, r->fragment, r->eager,
               r->alg_allreduce < 0 ? "auto" : rd_algorithms[r->alg_allreduce].name,
               r->alg_reduce < 0 ? "auto" : rd_algorithms[r->alg_reduce].name, r->flat_max,
               nc_cfg_str(NC_CFG_REDUCE_STREAM), r->stream_min,
               r->numa_nodes, r->hier ? r->hier->nlevels : 0);
    return NUMACOLL_OK;
}

int nc_reduce_setup(numacoll_team_t *t)
{
    nc_reduce_team_t *r = NULL;
    int rc = rd_state_get(t, &r);
    /* rbcast broadcasts the result with the team's broadcast: its state too, so that a
     * failure of either is this set-up's (agreed: t->reduce_needs_bcast comes from agreed
     * parameters) */
    if (rc == NUMACOLL_OK && t->reduce_needs_bcast) rc = nc_bcast_setup(t);
    return rc;
}

void nc_reduce_team_fini(numacoll_team_t *t)
{
    nc_reduce_team_t *r = t ? t->reduce : NULL;
    if (!r) return;
    nc_seg_destroy(&r->seg);
    free(r->sigs);
    free(r);
    t->reduce = NULL;
}
