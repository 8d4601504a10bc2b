/*
 * The broadcast's team parameters from the configuration and the team (see plan.h): what
 * bc_state_create (state.c) decides before the members agree, and what numacoll-info --explain
 * reports.
 */
#include "plan.h"
#include "../../topo/topo.h"

#include <string.h>

const char *const nc_bcast_path_names[3] = {"inline", "cma", "queue"};

void nc_bcast_model_plan(const numacoll_team_t *t, nc_bcast_model_t *md, int *t_src, int *tw_src)
{
    double t_cfg = nc_cfg_double(NC_CFG_BCAST_MODEL_T) * 1e-9;
    double tw_cfg = nc_cfg_double(NC_CFG_BCAST_MODEL_TW) * 1e-9;
    nc_bcast_model_t fb = nc_bcast_model_default();
    /* the paper's model assumes a core per process; an oversubscribed team takes the
     * fallback constants unless configured (see bc_model_init, calibrate.c) */
    int unset = t->oversubscribed ? NC_BMODEL_FALLBACK : NC_BMODEL_MEASURED;
    *t_src = t_cfg > 0 ? NC_BMODEL_CONFIGURED : unset;
    *tw_src = tw_cfg > 0 ? NC_BMODEL_CONFIGURED : unset;
    *md = nc_bcast_model_from(t_cfg > 0 ? t_cfg : fb.t, tw_cfg > 0 ? tw_cfg : fb.t_w);
}

int nc_bcast_tree_groups(numacoll_team_t *t, const int **groups)
{
    const nc_hier_t *h = nc_topo_team_hier(t, NC_BCAST_TREE_LEVELS);
    *groups = NULL;
    if (!h || h->nlevels <= 0 || h->nprocs != t->size) return 0;
    *groups = h->group_of;
    return h->nlevels;
}

int nc_bcast_plan_params(const numacoll_team_t *t, const nc_bcast_model_t *md, nc_bcast_plan_t *p)
{
    int rc = NUMACOLL_OK;
    size_t ps = nc_page_size(), line = t->line;
    memset(p, 0, sizeof *p);
    p->nt_min = nc_cfg_size(NC_CFG_BCAST_STREAM_MIN);
    p->nt_out_min = nc_cfg_size(NC_CFG_BCAST_STREAM_OUT_MIN);
    /* oversubscribed, unless STREAM_MIN is set: the root streams only where the receivers
     * stream too. The receivers run on the root's CPUs and find its plainly written
     * fragments in their caches; streamed, they would fetch them from memory */
    if (t->oversubscribed && !nc_cfg_is_set(NC_CFG_BCAST_STREAM_MIN)) {
        p->nt_min = p->nt_out_min;
        p->nt_min_from_out = 1;
    }
    /* off when oversubscribed: receivers on the root's CPUs find the same lines in their
     * caches again without it */
    p->rotate = nc_cfg_bool(NC_CFG_BCAST_ROTATE) && !t->oversubscribed;
    p->adapt = nc_cfg_bool(NC_CFG_BCAST_ADAPT) &&
               (!t->oversubscribed || nc_cfg_bool(NC_CFG_BCAST_ADAPT_OVERSUB));
    p->check = nc_cfg_bool(NC_CFG_BCAST_CHECK);
    if (p->check && line < 8 * sizeof(uint64_t)) /* bc_check_call's words 2-7 of the ack line */
        rc = nc_error(NUMACOLL_ERR_CONFIG,
                      "NUMACOLL_BCAST_CHECK=1 needs cache lines of at least 64 bytes; this "
                      "team's are %zu (allowed here: NUMACOLL_BCAST_CHECK=0)",
                      line);

    /* parameters from the configuration */
    size_t budget = nc_cfg_size(NC_CFG_BCAST_QUEUE_BYTES);
    /* auto: oversubscribed receivers fall a scheduling quantum behind, and with a 4 MiB
     * queue a 4 MiB message fills both sets, so the root's next call waits on every reader
     * of the last one (see the row) */
    p->budget_auto = budget == 0;
    if (budget == 0) budget = (t->oversubscribed ? 8u : 4u) << 20;
    size_t f = nc_cfg_size(NC_CFG_BCAST_FRAGMENT);
    p->fixed_f = f != 0;
    size_t q = (size_t)nc_cfg_int(NC_CFG_BCAST_SETS);
    if (f == 0) {
        f = nc_bcast_model_fragment(md, budget, ps);
        p->f_model = f;
        /* at most b / (2q): the model's s >= 2q buffers must fit the budget (with a large
         * t_W, f = sqrt(b t_W / t) alone would make a queue many times the budget) */
        size_t f_max = budget / (2 * q) / ps * ps;
        if (f_max < ps) f_max = ps;
        p->f_max = f_max;
        if (f > f_max) f = f_max;
    }
    f = nc_round_up(f, ps);
    size_t s = (size_t)nc_cfg_int(NC_CFG_BCAST_SLOTS);
    p->s_auto = s == 0;
    if (p->s_auto) s = nc_bcast_model_slots(budget, f, 2 * q);
    if (q > s)
        rc = nc_error(NUMACOLL_ERR_CONFIG,
                      "NUMACOLL_BCAST_SETS=%zu exceeds NUMACOLL_BCAST_SLOTS=%zu; allowed: "
                      "1 <= sets <= slots",
                      q, s);
    p->budget = budget, p->f = f, p->s = s, p->q = q;

    const char *tree = nc_cfg_str(NC_CFG_BCAST_TREE);
    int numa_count = nc_topo_team_numa_count(t);
    p->numa_count = numa_count;
    p->tree_auto = strcmp(tree, "auto") == 0;
    /* auto: the topology tree across NUMA nodes; when oversubscribed the flat tree (every
     * receiver needs only the root to have run, not a chain of parents, each of which may
     * wait to be scheduled); else the binary tree (the paper's best) */
    if (!p->tree_auto) {
        p->tree = nc_bcast_tree_find(tree);
        p->tree_why = "set by NUMACOLL_BCAST_TREE";
    } else if (numa_count > 1) {
        p->tree = NC_BTREE_TOPO;
        p->tree_why = "auto: the team spans several NUMA nodes";
    } else if (t->oversubscribed) {
        p->tree = NC_BTREE_FLAT;
        p->tree_why = "auto: oversubscribed, every receiver waits only for the root to run";
    } else {
        p->tree = NC_BTREE_KARY;
        p->tree_why = "auto: one NUMA node, a CPU per process: the paper's best, binary at k = 2";
    }
    if (p->tree < 0) p->tree = NC_BTREE_KARY; /* cannot happen: the row validates */
    p->k = (int)nc_cfg_int(NC_CFG_BCAST_K);
    const char *relay = nc_cfg_str(NC_CFG_BCAST_RELAY);
    p->relay_auto = strcmp(relay, "auto") == 0;
    p->relay = p->relay_auto ? numa_count > 1 : strcmp(relay, "1") == 0;
    p->relay_why = !p->relay_auto ? "set by NUMACOLL_BCAST_RELAY"
                   : p->relay     ? "auto: the team spans several NUMA nodes"
                                  : "auto: the team lies on one NUMA node";
    p->inline_max = nc_cfg_size(NC_CFG_BCAST_INLINE_MAX);
    p->cma_min = nc_cfg_size(NC_CFG_BCAST_CMA_MIN);
    size_t payload = p->inline_max > sizeof(cma_desc_t) ? p->inline_max : sizeof(cma_desc_t);
    p->inl_block = nc_round_up(INL_HDR + payload, line);
    p->room = p->inl_block - INL_HDR;
    p->inl_fast = p->inline_max < p->room ? p->inline_max : p->room;
    return rc;
}
