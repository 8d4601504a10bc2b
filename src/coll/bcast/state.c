/*
 * The team's broadcast state: its parameters agreed by the members, the segment laid out
 * and created (see bcast_internal.h for the layout), and its end.
 */
#include "bcast_internal.h"
#include "../../topo/topo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What each member tells the others at the state's creation (one allgather): its
 * parameters, which must be the same everywhere, the free /dev/shm space it sees (the
 * queue's cut) and where its CMA probe word lies. */
typedef struct init_msg {
    uint64_t fragment_bytes, slots, sets, inline_room, inline_max, cma_min; /* f, s, q, ... */
    uint64_t shm_free;
    int32_t tree_kind, fanout, relay, pid, rotate, check;
    uint64_t probe_addr;
} init_msg_t;

int bc_state_create(numacoll_team_t *t)
{
    int P = t->size, rc = NUMACOLL_OK;
    size_t ps = nc_page_size(), line = t->line;
    bcast_t *b = aligned_alloc(64, nc_round_up(sizeof(bcast_t), 64)); /* hot line aligned */
    if (b) memset(b, 0, sizeof *b);
    init_msg_t *all = calloc((size_t)P, sizeof *all);
    if (!b || !all) {
        free(b), free(all);
        rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory creating the broadcast state");
        return nc_agree(t->rank, P, t->allgather, t->oob_ctx, rc);
    }
    rc = bc_model_init(t, &b->model, &b->t_measured, &b->tw_measured);
    if (rc) {
        free(b), free(all);
        return rc;
    }
    /* the parameters from the configuration and the team (plan.c) */
    nc_bcast_plan_t pl;
    rc = nc_bcast_plan_params(t, &b->model, &pl);
    b->stream_root_min = pl.nt_min, b->stream_recv_min = pl.nt_out_min;
    b->rotate = pl.rotate, b->adapt = pl.adapt, b->check = pl.check;
    b->open_run_class = -1;       /* no measured run open */
    b->trace = nc_verbose() >= 3; /* read once: the config lookup is too slow per call */
    b->fragment_fixed = pl.fixed_f;
    size_t f = pl.f, s = pl.s, q = pl.q; /* the paper's f, s, q: fragment, slots, sets */
    int s_auto = pl.s_auto;
    b->tree_kind = pl.tree, b->fanout = pl.k, b->relay = pl.relay;
    b->inline_max = pl.inline_max;
    b->demote = nc_cfg_bool(NC_CFG_BCAST_DEMOTE);
    if (b->demote && !nc_cpu_has_demote()) {
        b->demote = 0; /* the hint would run as a NOP: save the instructions */
        if (t->rank == 0)
            nc_log(1, t->rank, P,
                   "bcast: NUMACOLL_BCAST_DEMOTE=1 has no effect: this CPU has no CLDEMOTE");
    }
    b->prefetch = nc_cfg_bool(NC_CFG_BCAST_PREFETCH);
    b->cma_min = pl.cma_min;
    b->inline_block_bytes = pl.inl_block, b->inline_room = pl.room, b->inline_limit = pl.inl_fast;

    init_msg_t me = {.fragment_bytes = f,
                     .slots = s,
                     .sets = q,
                     .inline_room = b->inline_room,
                     .inline_max = b->inline_max,
                     .cma_min = b->cma_min,
                     .shm_free = nc_shm_free_bytes(),
                     .tree_kind = b->tree_kind,
                     .fanout = b->fanout,
                     .relay = b->relay,
                     .rotate = b->rotate,
                     .check = b->check,
                     .pid = (int32_t)getpid(),
                     .probe_addr = bc_cma_probe_addr()};
    int orc = nc_oob_allgather(t->allgather, &me, all, sizeof me, t->oob_ctx,
                               "setting up the broadcast");
    if (orc != NUMACOLL_OK) { /* rc may hold nc_bcast_plan_params' status: kept apart */
        free(b), free(all);
        return orc;
    }
    size_t shm_free = me.shm_free;
    for (int r = 0; r < P && rc == NUMACOLL_OK; r++) {
        const init_msg_t *o = &all[r];
        if (o->fragment_bytes != f || o->slots != s || o->sets != q ||
            o->inline_room != b->inline_room || o->inline_max != b->inline_max ||
            o->cma_min != b->cma_min || o->tree_kind != b->tree_kind || o->fanout != b->fanout ||
            o->relay != b->relay || o->rotate != b->rotate || o->check != b->check)
            rc = nc_error(NUMACOLL_ERR_CONFIG,
                          "broadcast parameters differ between ranks %d and %d (f %zu/%llu, s "
                          "%zu/%llu, q %zu/%llu, tree %d/%d, check %d/%d, ...); every member "
                          "must see the same NUMACOLL_BCAST_* settings",
                          t->rank, r, f, (unsigned long long)o->fragment_bytes, s,
                          (unsigned long long)o->slots, q, (unsigned long long)o->sets,
                          b->tree_kind, o->tree_kind, b->check, o->check);
        if (o->shm_free < shm_free) shm_free = o->shm_free;
    }
    int cma_mine = rc == NUMACOLL_OK &&
                   bc_cma_probe(all[(t->rank + 1) % P].pid, all[(t->rank + 1) % P].probe_addr);
    if (!cma_mine && b->cma_min)
        nc_log(1, t->rank, P,
               "bcast: process_vm_readv from rank %d failed (%s); the CMA path "
               "is off, large messages use the queues",
               (t->rank + 1) % P, strerror(errno));

    /* geometry, capped so that the P queues take at most half of the free /dev/shm */
    size_t rep_bytes = nc_round_up((size_t)P * sizeof(uint64_t), line); /* report_word */
    b->ctl_area_bytes =
        nc_round_up((1 + s) * line + INLINE_BLOCKS * b->inline_block_bytes + rep_bytes, ps);
    b->proc_area_bytes = b->ctl_area_bytes + s * f;
    if (rc == NUMACOLL_OK && s_auto && (double)P * b->proc_area_bytes > shm_free / 2.0) {
        size_t per = shm_free / 2 / (size_t)P;
        size_t s2 = per > b->ctl_area_bytes ? (per - b->ctl_area_bytes) / f : 0;
        if (s2 < q) s2 = q;
        nc_log(1, t->rank, P,
               "bcast: /dev/shm has %zu bytes free: queue cut from %zu to %zu "
               "slots",
               shm_free, s, s2);
        s = s2;
        b->ctl_area_bytes =
            nc_round_up((1 + s) * line + INLINE_BLOCKS * b->inline_block_bytes + rep_bytes, ps);
        b->proc_area_bytes = b->ctl_area_bytes + s * f;
    }
    b->fragment_bytes = f, b->slots = s, b->sets = q, b->slots_per_set = s / q,
    b->queue_bytes = s * f;
    b->report_off =
        (1 + s) * line + INLINE_BLOCKS * b->inline_block_bytes; /* line-aligned: both terms are */
    b->set_words_off = nc_round_up((size_t)P * sizeof(int32_t), ps);
    b->global_area_bytes = b->set_words_off + q * ps;
    size_t total = b->global_area_bytes + (size_t)P * b->proc_area_bytes;
    b->paper_seg_bytes = ps + ps * q + (size_t)P * s * (ps + f);

    /* NUMA nodes and the hierarchy for the topology tree */
    b->numa_of = malloc((size_t)P * sizeof *b->numa_of);
    b->acks_seen = calloc((size_t)P, sizeof *b->acks_seen);
    b->recv_runs = calloc((size_t)P, sizeof *b->recv_runs);
    if ((!b->numa_of || !b->acks_seen || !b->recv_runs) && rc == NUMACOLL_OK)
        rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    if (b->numa_of)
        for (int r = 0; r < P; r++)
            b->numa_of[r] = nc_topo_team_numa_of(t, r);
    const int *groups;
    int group_levels = nc_bcast_tree_groups(t, &groups); /* plan.c */
    if (group_levels > 0 && rc == NUMACOLL_OK) {
        b->group_of = malloc((size_t)group_levels * P * sizeof *b->group_of);
        if (b->group_of) {
            memcpy(b->group_of, groups, (size_t)group_levels * P * sizeof *b->group_of);
            b->group_levels = group_levels;
        }
    }

    /* agree on the parameters and on CMA (AND over the members) */
    rc = nc_agree(t->rank, P, t->allgather, t->oob_ctx, rc);
    if (rc == NUMACOLL_OK) {
        int32_t mine = cma_mine, *cmas = (int32_t *)all; /* reuse: P * 4 <= P * sizeof */
        rc = nc_oob_allgather(t->allgather, &mine, cmas, sizeof mine, t->oob_ctx,
                              "setting up the broadcast");
        b->cma_permitted = 1;
        for (int r = 0; r < P && rc == NUMACOLL_OK; r++)
            b->cma_permitted &= cmas[r] != 0;
    }
    free(all);
    /* a queue's memory at its owner's first write into each set (first-use), unless
     * configured otherwise, the kernel cannot populate without the risk of SIGBUS, or
     * relays write into their queues for other roots (a relay that failed would leave its
     * node without the data while the rest of the team returns success) */
    int lazy = strcmp(nc_cfg_str(NC_CFG_BCAST_POPULATE), "first-use") == 0 && !b->relay &&
               nc_seg_populate_supported();
    b->populated = malloc(q * sizeof *b->populated);
    if (!b->populated && rc == NUMACOLL_OK) rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    for (size_t i = 0; b->populated && i < q; i++)
        b->populated[i] = lazy ? 0 : b->slots_per_set * b->fragment_bytes;
    if (rc == NUMACOLL_OK)
        rc = nc_seg_create_collective(
            t->rank, P, t->allgather, t->oob_ctx, total, b->global_area_bytes,
            b->global_area_bytes + (size_t)t->rank * b->proc_area_bytes, b->proc_area_bytes,
            lazy ? b->ctl_area_bytes : b->proc_area_bytes, t->numa_node, "the broadcast queues",
            &b->seg);
    if (rc != NUMACOLL_OK) {
        free(b->numa_of), free(b->acks_seen), free(b->recv_runs), free(b->group_of),
            free(b->populated), free(b);
        return rc;
    }
    b->global_area = b->seg.base;
    b->proc_areas = b->global_area + b->global_area_bytes;
    b->hot = (hot_line_t){
        .my_area = proc_area(b, t->rank),
        .blocks_off = (uint32_t)((1 + b->slots) * line),
        .block_bytes = (uint32_t)b->inline_block_bytes,
        /* off when tracing or checking: the general path does both */
        .fast_limit = b->trace || b->check || P > INT16_MAX ? 0 : (uint32_t)b->inline_limit + 1,
        .kids_root = -1,
        .head_bytes = (uint16_t)(line - INL_HDR),
        .hints = (uint8_t)hints_of(b->demote, b->prefetch),
        .give_due32 = (uint32_t)UINT64_MAX};
    /* each member's own (only it writes its queue, give_back.c), so not compared; a queue
     * that got its memory at creation keeps it */
    b->give_back = lazy ? (uint64_t)nc_cfg_int(NC_CFG_BCAST_GIVE_BACK) : 0;
    b->give_due = UINT64_MAX;
    b->numa_leaders = (int32_t *)b->global_area;
    if (t->rank == 0) /* informational: the NUMA leader (lowest rank of its node) */
        for (int r = 0; r < P; r++) {
            int l = r;
            for (int x = 0; x < r; x++)
                if (b->numa_of[x] == b->numa_of[r]) {
                    l = x;
                    break;
                }
            b->numa_leaders[r] = l;
        }
    t->bcast = b;

    if (t->rank == 0 || nc_verbose() >= 3)
        nc_log(1, t->rank, P,
               "bcast: segment %zu bytes (paper's w + wq + ps(w+f) = %zu), f = %zu%s, s = %zu, "
               "q = %zu, queue b = %zu per process (model: t = %.4f ns/byte %s, t_W = %.1f ns "
               "%s), inline <= %zu (room %zu, cache hint %s, write prefetch %s), tree %s (k %d), "
               "relay %s, CMA %s, streamed copies from %zu (root) / %zu (receivers) bytes "
               "(0 = never), queue memory at %s",
               total, b->paper_seg_bytes, f, b->fragment_fixed ? "" : " (model)", s, q,
               b->queue_bytes, b->model.t * 1e9, bc_model_src[b->t_measured], b->model.t_w * 1e9,
               bc_model_src[b->tw_measured], b->inline_max, b->inline_room,
               b->demote ? "on" : "off", b->prefetch ? "on" : "off",
               nc_bcast_tree_names[b->tree_kind], b->fanout, b->relay ? "on" : "off",
               !b->cma_permitted ? "not permitted"
               : b->cma_min      ? "on"
                                 : "off",
               b->stream_root_min, b->stream_recv_min, lazy ? "first use" : "creation");
    if (nc_verbose() >= 2) {
        size_t on = 0, off = 0;
        size_t n = lazy ? b->ctl_area_bytes : b->proc_area_bytes;
        int node = nc_seg_check_placement(proc_area(b, t->rank), n, t->numa_node, &on, &off);
        nc_log(2, t->rank, P,
               "bcast: my %s (%zu bytes) lies on NUMA node %d (expected %d: %zu pages "
               "there, %zu elsewhere)%s",
               lazy ? "control block" : "queue", n, node, t->numa_node, on, off,
               lazy ? "; the queue's sets get their memory at first use" : "");
    }
    return NUMACOLL_OK;
}

int nc_bcast_setup(numacoll_team_t *t)
{
    if (t->size == 1 || t->bcast) return NUMACOLL_OK;
    return bc_state_create(t);
}

void nc_bcast_team_fini(numacoll_team_t *t)
{
    bcast_t *b = t ? t->bcast : NULL;
    if (!b) return;
    if (b->adapt && nc_verbose() >= 2) bc_sel_log(t, b);
    for (int i = 0; i < NC_BTREE_COUNT; i++)
        bc_tree_free(&b->trees[i]);
    nc_seg_destroy(&b->seg);
    free(b->numa_of), free(b->acks_seen), free(b->recv_runs), free(b->group_of), free(b->populated),
        free(b->sel_classes), free(b);
    t->bcast = NULL;
}

size_t nc_bcast_team_queue_bytes(const numacoll_team_t *t)
{
    const bcast_t *b = t ? t->bcast : NULL;
    size_t n = 0;
    for (size_t i = 0; b && i < b->sets; i++)
        n += b->populated[i];
    return n;
}

int nc_bcast_info(numacoll_team_t *t, nc_bcast_info_t *info)
{
    if (!t->bcast) {
        int rc = bc_state_create(t);
        if (rc) return rc;
    }
    bcast_t *b = t->bcast;
    *info = (nc_bcast_info_t){.fragment_bytes = b->fragment_bytes,
                              .slots = b->slots,
                              .sets = b->sets,
                              .queue_bytes = b->queue_bytes,
                              .inline_room = b->inline_room,
                              .seg_size = b->seg.size,
                              .paper_size = b->paper_seg_bytes,
                              .tree = b->tree_kind,
                              .k = b->fanout,
                              .relay = b->relay,
                              .cma_ok = b->cma_permitted,
                              .cma_min = b->cma_min,
                              .model = b->model,
                              .t_measured = b->t_measured,
                              .tw_measured = b->tw_measured};
    return NUMACOLL_OK;
}

int nc_bcast_debug_set_numa(numacoll_team_t *t, const int *numa)
{
    if (!t->bcast) {
        int rc = bc_state_create(t);
        if (rc) return rc;
    }
    bcast_t *b = t->bcast;
    memcpy(b->numa_of, numa, (size_t)t->size * sizeof *numa);
    for (int i = 0; i < NC_BTREE_COUNT; i++)
        bc_tree_free(&b->trees[i]);
    return NUMACOLL_OK;
}
