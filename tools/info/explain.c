/*
 * numacoll-info --explain: what the library decides for a team, and why.
 */
#include "core/nc_internal.h" /* first: _GNU_SOURCE */
#include "coll/barrier/barrier.h"
#include "coll/bcast/plan.h"
#include "coll/reduce/reduce.h"
#include "topo/topo.h"
#include "../cli_parse.h"

#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "info.h"
#include "explain_internal.h"

/* ---- --explain ------------------------------------------------------------------------------
 * What the library decides for a team of N processes on this machine or on a synthetic
 * topology, computed by the library's own decision functions on a planned team (one that
 * never communicates): the barrier's auto choice (nc_barrier_auto_explain), the broadcast's
 * parameters (nc_bcast_plan_params, nc_bcast_model_plan), its tree (nc_bcast_tree_parents
 * over nc_bcast_tree_groups) and per message its path, fragment, copy mode and the copy-mode
 * selector's candidates (plan.h), the groups (nc_topo_team_hier). Each fact is recorded
 * once (fact()) for --parsable and --json; the human text is printed beside it. */


enum { OUT_HUMAN = 0, OUT_PARSABLE, OUT_JSON };
static int g_out;

typedef struct fact {
    char *key, *val;
    int raw; /* the value is a JSON number or JSON text */
} fact_t;
static fact_t *g_facts;
static int g_nfacts, g_capfacts;

void fact(const char *key, int raw, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *v = NULL;
    if (vasprintf(&v, fmt, ap) < 0) v = NULL;
    va_end(ap);
    if (g_nfacts == g_capfacts) {
        int cap = g_capfacts ? 2 * g_capfacts : 128;
        fact_t *nf = realloc(g_facts, (size_t)cap * sizeof *nf);
        if (!nf) {
            free(v);
            return;
        }
        g_facts = nf, g_capfacts = cap;
    }
    char *k = strdup(key);
    if (!k || !v) {
        free(k), free(v);
        return;
    }
    g_facts[g_nfacts++] = (fact_t){k, v, raw};
}

/* a key from a format (one per call: the buffer is reused) */
const char *kf(const char *fmt, ...)
{
    static char buf[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

/* human text, wrapped (nothing in --parsable / --json) */
void hp(int indent, int hang, const char *fmt, ...)
{
    if (g_out != OUT_HUMAN) return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    if (s) wrap_out(s, indent, hang);
    free(s);
}

static void facts_out(void)
{
    if (g_out == OUT_PARSABLE)
        for (int i = 0; i < g_nfacts; i++)
            parsable_line(g_facts[i].key, g_facts[i].val);
    if (g_out == OUT_JSON) {
        printf("{\"version\": \"%d.%d.%d\", \"explain\": {", NUMACOLL_VERSION_MAJOR,
               NUMACOLL_VERSION_MINOR, NUMACOLL_VERSION_PATCH);
        for (int i = 0; i < g_nfacts; i++) {
            printf("%s", i ? ", " : "");
            json_str(g_facts[i].key);
            printf(": ");
            if (g_facts[i].raw)
                printf("%s", g_facts[i].val);
            else
                json_str(g_facts[i].val);
        }
        printf("}}\n");
    }
    for (int i = 0; i < g_nfacts; i++)
        free(g_facts[i].key), free(g_facts[i].val);
    free(g_facts);
    g_facts = NULL, g_nfacts = g_capfacts = 0;
}

static int explain_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int explain_bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "numacoll-info: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return -1;
}

#define EXPLAIN_BYTES_MAX (1ull << 62)

/* a byte count: digits with an optional K, M or G (powers of 1024), 0..EXPLAIN_BYTES_MAX */
static int parse_bytes(const char *s, unsigned long long *out)
{
    if (!s || !(*s >= '0' && *s <= '9')) return -1; /* no sign, no space */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return -1;
    int shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10, end++;
    else if (*end == 'M' || *end == 'm') shift = 20, end++;
    else if (*end == 'G' || *end == 'g') shift = 30, end++;
    if (*end || v > (EXPLAIN_BYTES_MAX >> shift)) return -1;
    *out = v << shift;
    return 0;
}

/* One option of --explain at argv[*i]: 1 if taken (and its value), 0 if not ours, -1 after an
 * error message on stderr. Options take "--opt VALUE" or "--opt=VALUE". */
int explain_arg(int argc, char **argv, int *i, explain_args_t *ex)
{
    static const char *const names[] = {"--np", "--bytes", "--synthetic", "--map-by"};
    const char *a = argv[*i], *val = NULL;
    if (!strcmp(a, "--explain")) {
        ex->on = 1;
        return 1;
    }
    int which = -1;
    for (int k = 0; k < 4 && which < 0; k++) {
        size_t n = strlen(names[k]);
        if (!strncmp(a, names[k], n) && (a[n] == 0 || a[n] == '=')) {
            which = k;
            if (a[n] == '=')
                val = a + n + 1;
            else if (*i + 1 < argc)
                val = argv[++*i];
        }
    }
    if (which < 0) return 0;
    ex->on = 1; /* each of them implies --explain */
    switch (which) {
    case 0: {
        long v;
        if (nc_cli_long("numacoll-info", "--np", val, 1, 1 << 20, &v)) return -1;
        ex->np = v;
        return 1;
    }
    case 1:
        if (parse_bytes(val, &ex->bytes))
            return explain_bad("--bytes '%s' is not valid; allowed: a byte count 0..2^62, "
                               "digits with an optional K, M or G (powers of 1024)",
                               val ? val : "(missing)");
        ex->bytes_set = 1;
        return 1;
    case 2:
        if (!val) return explain_bad("--synthetic needs a value; allowed: an hwloc synthetic "
                                     "description, e.g. \"pack:2 numa:2 l3:1 core:8 pu:1\"");
        ex->synthetic = val;
        return 1;
    default:
        if (!val || (strcmp(val, "core") && strcmp(val, "numa") && strcmp(val, "socket")))
            return explain_bad("--map-by '%s' is not valid; allowed: core, numa, socket",
                               val ? val : "(missing)");
        ex->map_by = val;
        return 1;
    }
}

/* PUs of an hwloc synthetic topology (0 if it cannot be loaded) */
static int synthetic_pus(const char *syn)
{
    hwloc_topology_t topo;
    int n = 0;
    if (hwloc_topology_init(&topo) != 0) return 0;
    if (hwloc_topology_set_synthetic(topo, syn) == 0 && hwloc_topology_load(topo) == 0)
        n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    hwloc_topology_destroy(topo);
    return n;
}

/* "1 KiB"-style size for the human text (exact: falls back to bytes) */
static const char *human_size(unsigned long long v, char *buf, size_t n)
{
    if (v >= 1024 && v % (1ull << 30) == 0)
        snprintf(buf, n, "%llu GiB", v >> 30);
    else if (v >= 1024 && v % (1ull << 20) == 0)
        snprintf(buf, n, "%llu MiB", v >> 20);
    else if (v >= 1024 && v % 1024 == 0)
        snprintf(buf, n, "%llu KiB", v >> 10);
    else
        snprintf(buf, n, "%llu B", v);
    return buf;
}

/* A copy mode of the selector (bits: 1 streamed root, 2 streamed receivers, 4 one fragment,
 * 8 no rotating offset) as "nt-root+whole" etc. */
static const char *mode_name(int m, char *buf, size_t n)
{
    static const char *const base[4] = {"plain", "nt-root", "nt-recv", "nt-both"};
    snprintf(buf, n, "%s%s%s", base[m & 3], m & 4 ? "+whole" : "", m & 8 ? "+norot" : "");
    return buf;
}

static const char *const model_src_name[3] = {"configured", "measured at run time",
                                              "the fallback: oversubscribed"};

typedef struct explain_ctx {
    int P;
    numacoll_team_t *t;
    nc_topo_plan_t *plan;
    nc_bcast_model_t md;
    nc_bcast_plan_t pl;
    int bcast_ok; /* 1: pl holds valid parameters (P > 1 and accepted) */
} explain_ctx_t;

/* the machine, the placement and the planned team */
static int explain_machine(const explain_args_t *ex, explain_ctx_t *c)
{
    const char *syn = ex->synthetic ? ex->synthetic : nc_cfg_str(NC_CFG_TOPO_SYNTHETIC);
    int simulated = syn && syn[0];
    const char *map_by = ex->map_by ? ex->map_by : nc_cfg_str(NC_CFG_TOPO_MAP_BY);
    nc_topo_machine_t *m;
    if (nc_topo_machine_load(simulated ? syn : NULL, &m) != NUMACOLL_OK) {
        fprintf(stderr, "numacoll-info: %s\n", numacoll_last_error());
        return simulated ? 2 : 1;
    }
    int ncores = nc_topo_machine_levels(m)->ncores;
    nc_topo_machine_free(m);
    int P = ex->np > 0 ? (int)ex->np : ncores;
    int ncpus, here = 0;
    cpu_set_t cs;
    CPU_ZERO(&cs);
    if (sched_getaffinity(0, sizeof cs, &cs) == 0) here = CPU_COUNT(&cs);
    ncpus = simulated ? synthetic_pus(syn) : here;
    if (nc_topo_plan_create(simulated ? syn : NULL, P, map_by, &c->plan) != NUMACOLL_OK) {
        fprintf(stderr, "numacoll-info: %s\n", numacoll_last_error());
        return 2;
    }
    numacoll_team_t *t = calloc(1, sizeof *t);
    if (!t) {
        nc_topo_plan_free(c->plan);
        return 1;
    }
    t->rank = 0, t->size = P, t->line = nc_line_size(), t->ncpus = ncpus;
    t->oversubscribed = nc_detect_oversubscribed(P, ncpus);
    t->numa_node = -1;
    snprintf(t->name, sizeof t->name, "explain");
    char src[160];
    snprintf(src, sizeof src, "%s '%s', map-by %s (planned)", simulated ? "synthetic" : "machine",
             simulated ? syn : "this machine", map_by);
    if (nc_topo_team_init_planned(t, c->plan, src) != NUMACOLL_OK) {
        fprintf(stderr, "numacoll-info: %s\n", numacoll_last_error());
        free(t);
        nc_topo_plan_free(c->plan);
        return 1;
    }
    c->t = t, c->P = P;

    fact("explain.np", 1, "%d", P);
    fact("explain.np_source", 0, "%s", ex->np > 0 ? "--np" : "one per core");
    if (ex->bytes_set) fact("explain.bytes", 1, "%llu", ex->bytes);
    fact("machine.source", 0, "%s", simulated ? "synthetic" : "this machine");
    if (simulated) fact("machine.synthetic", 0, "%s", syn);
    fact("machine.cores", 1, "%d", ncores);
    fact("machine.cpus", 1, "%d", ncpus);
    fact("machine.cpus_source", 0, "%s",
         simulated ? "the synthetic machine's PUs" : "this process's CPU affinity");
    fact("placement.map_by", 0, "%s", map_by);
    fact("placement.wrapped", 1, "%d", c->plan->wrapped);
    fact("team.oversubscribed", 1, "%d", t->oversubscribed);
    fact("team.oversubscribed_setting", 0, "%s", nc_cfg_str(NC_CFG_OVERSUBSCRIBED));
    fact("team.line_bytes", 1, "%zu", t->line);
    fact("team.page_bytes", 1, "%zu", nc_page_size());

    hp(0, 2, "numacoll %d.%d.%d explained: a team of %d process%s%s", NUMACOLL_VERSION_MAJOR,
       NUMACOLL_VERSION_MINOR, NUMACOLL_VERSION_PATCH, P, P == 1 ? "" : "es",
       ex->np > 0 ? "" : " (one per core; --np N for another count)");
    if (simulated)
        hp(0, 2, "machine: synthetic '%s': %d cores, %d CPUs", syn, ncores, ncpus);
    else
        hp(0, 2, "machine: this machine: %d cores, %d CPUs in this process's affinity", ncores,
           ncpus);
    hp(0, 2, "placement: planned, map-by %s (NUMACOLL_TOPO_MAP_BY, --map-by)%s; a real job's "
             "groups follow its ranks' bindings (unbound ranks form no groups)",
       map_by, c->plan->wrapped ? ", more processes than cores: wrapped around" : "");
    hp(0, 2, "oversubscribed: %s (%d process%s, %d CPUs; NUMACOLL_OVERSUBSCRIBED=%s)%s",
       t->oversubscribed ? "yes" : "no", P, P == 1 ? "" : "es", ncpus,
       nc_cfg_str(NC_CFG_OVERSUBSCRIBED),
       simulated && nc_detect_oversubscribed(P, here) != t->oversubscribed
           ? (t->oversubscribed ? "; a run under NUMACOLL_TOPO_SYNTHETIC on this machine counts "
                                  "this machine's CPUs: not oversubscribed there"
                                : "; a run under NUMACOLL_TOPO_SYNTHETIC on this machine counts "
                                  "this machine's CPUs: oversubscribed there")
           : "");
    hp(0, 2, "cache line (padding unit): %zu bytes (NUMACOLL_CACHELINE=%s), page %zu bytes",
       t->line, nc_cfg_str(NC_CFG_CACHELINE), nc_page_size());
    long futex_after = nc_futex_after_us(t->oversubscribed);
    fact("wait.futex_after_us", 1, "%ld", futex_after);
    if (futex_after < 0)
        hp(0, 2, "waits: spin, then sched_yield, then nap; no kernel sleep on a flag "
                 "(NUMACOLL_WAIT_FUTEX_AFTER_US=%s: not oversubscribed)",
           nc_cfg_str(NC_CFG_WAIT_FUTEX_AFTER_US));
    else
        hp(0, 2, "waits: %s, then sleep in the kernel on the flag (futex) after %ld us, "
                 "woken by its writer (NUMACOLL_WAIT_FUTEX_AFTER_US=%s)",
           t->oversubscribed ? "sched_yield" : "spin, then sched_yield", futex_after,
           nc_cfg_str(NC_CFG_WAIT_FUTEX_AFTER_US));
    return 0;
}

/* a hierarchy as JSON or text (the library's nc_hier_to_json / _text), malloc'd; NULL on error */
static char *hier_string(const nc_hier_t *h, int json)
{
    for (size_t n = 1 << 16; n <= ((size_t)1 << 30); n *= 4) {
        char *buf = malloc(n);
        if (!buf) return NULL;
        int rc = json ? nc_hier_to_json(h, buf, n) : nc_hier_to_text(h, buf, n);
        if (rc == NUMACOLL_OK) return buf;
        free(buf);
        if (rc != NUMACOLL_ERR_TOOBIG) return NULL;
    }
    return NULL;
}

/* the groups (NUMACOLL_BARRIER_TOPO_LEVELS), as numacoll-topo prints them */
static void explain_topology(explain_ctx_t *c)
{
    const char *levels = nc_cfg_str(NC_CFG_BARRIER_TOPO_LEVELS);
    const nc_hier_t *h = nc_topo_team_hier(c->t, levels);
    char lv[1024], why[512] = "";
    nc_topo_levels_describe(&c->plan->lv, nc_topo_usable(c->P, c->plan->loc, &c->plan->lv), lv,
                            sizeof lv);
    if (!h) { /* the reason it is flat, from the builder nc_topo_team_hier uses */
        nc_hier_t *h2 = NULL;
        nc_topo_build(c->P, c->plan->loc, &c->plan->lv, levels, &h2, why, sizeof why);
        nc_hier_free(h2);
    }
    char *buf = hier_string(h, 1);
    fact("topo.levels", 0, "%s", levels);
    fact("topo.machine_levels", 0, "%s", lv);
    fact("topo.group_levels", 1, "%d", h ? h->nlevels : 0);
    if (!h) fact("topo.flat_reason", 0, "%s", why);
    if (buf) fact("topo.hierarchy", 1, "%s", buf);
    free(buf);
    for (int l = 0; h && l < h->nlevels; l++) {
        fact(kf("topo.level.%d.name", l), 0, "%s", h->levels[l].name);
        fact(kf("topo.level.%d.groups", l), 1, "%d", h->levels[l].ngroups);
    }
    hp(0, 2, "\ntopology groups over %s (NUMACOLL_BARRIER_TOPO_LEVELS)", levels);
    hp(2, 4, "machine levels: %s", lv);
    buf = g_out == OUT_HUMAN ? hier_string(h, 0) : NULL;
    for (char *line = buf ? strtok(buf, "\n") : NULL; line; line = strtok(NULL, "\n"))
        wrap_out(line, 2, 6);
    if (!h) hp(2, 4, "(%s)", why);
    free(buf);
}

static const char *const bauto_rule_name[] = {"one process", "two processes", "oversubscribed",
                                              "hierarchy", "logp"};

static void explain_barrier(explain_ctx_t *c)
{
    nc_barrier_auto_t a;
    nc_barrier_auto_explain(c->t, &a);
    const char *setting = nc_cfg_str(NC_CFG_BARRIER);
    int is_auto = !strcmp(setting, "auto");
    fact("barrier.setting", 0, "%s", setting);
    fact("barrier.default", 0, "%s", is_auto ? a.pick : setting);
    fact("barrier.auto.choice", 0, "%s", a.pick);
    fact("barrier.auto.rule", 0, "%s", bauto_rule_name[a.rule]);
    fact("barrier.auto.reason", 0, "%s", a.why);
    fact("barrier.logp.consulted", 1, "%d", a.rule == NC_BAUTO_LOGP);
    fact("barrier.logp.L_ns", 1, "%g", a.logp.L);
    fact("barrier.logp.o_s_ns", 1, "%g", a.logp.o_s);
    fact("barrier.logp.o_r_ns", 1, "%g", a.logp.o_r);
    fact("barrier.logp.g_ns", 1, "%g", a.logp.g);
    fact("barrier.logp.fan_in", 1, "%d", a.logp_n);
    static const char *const est_key[NC_LOGP_NALG] = {"central", "combining", "dissemination"};
    for (int i = 0; i < NC_LOGP_NALG; i++) {
        fact(kf("barrier.logp.%s.algorithm", est_key[i]), 0, "%s", nc_logp_algorithm(i));
        fact(kf("barrier.logp.%s.estimate_ns", est_key[i]), 1, "%.1f", a.est[i]);
    }
    fact("barrier.logp.argmin", 0, "%s", nc_logp_algorithm(a.logp_pick));

    hp(0, 2, "\nbarrier");
    if (is_auto)
        hp(2, 4, "NUMACOLL_BARRIER=auto picks %s: %s", a.pick, a.why);
    else
        hp(2, 4, "NUMACOLL_BARRIER=%s: the team runs %s (auto would pick %s: %s)", setting,
           setting, a.pick, a.why);
    hp(2, 4, "rules in order: one process, two processes, oversubscribed, a hierarchy of 2 or "
             "more group levels, else paper 2's LogP argmin; decided here by: %s",
       bauto_rule_name[a.rule]);
    hp(2, 4, "LogP model (NUMACOLL_BARRIER_LOGP_*: L %g, o_s %g, o_r %g, g %g ns; fan-in %d, "
             "NUMACOLL_BARRIER_TREE_K) for P = %d:",
       a.logp.L, a.logp.o_s, a.logp.o_r, a.logp.g, a.logp_n, c->P);
    for (int i = 0; i < NC_LOGP_NALG; i++)
        hp(4, 6, "%-14s %-24s %10.1f ns%s", est_key[i], nc_logp_algorithm(i), a.est[i],
           i == a.logp_pick ? "  <- argmin" : "");
    hp(4, 6, "%s", a.rule == NC_BAUTO_LOGP
                       ? "auto compared these estimates and runs the argmin"
                       : "auto did not consult them here (an earlier rule decided); "
                         "NUMACOLL_BARRIER=adaptive-logp runs their argmin");
}

/* the broadcast's team parameters and its tree for root 0 */
static void explain_bcast_team(explain_ctx_t *c)
{
    char b1[64], b2[64];
    hp(0, 2, "\nbroadcast");
    if (c->P == 1) {
        fact("bcast.single_process", 1, "1");
        hp(2, 4, "a team of one process: a broadcast returns at once");
        return;
    }
    int ts, tws;
    nc_bcast_model_plan(c->t, &c->md, &ts, &tws);
    nc_bcast_plan_t *p = &c->pl;
    int rc = nc_bcast_plan_params(c->t, &c->md, p);
    fact("bcast.model.t_ns_per_byte", 1, "%g", c->md.t * 1e9);
    fact("bcast.model.t_source", 0, "%s", model_src_name[ts]);
    fact("bcast.model.tw_ns", 1, "%g", c->md.t_w * 1e9);
    fact("bcast.model.tw_source", 0, "%s", model_src_name[tws]);
    hp(2, 4, "model (paper 3): t = %.4f ns/byte (%s), t_W = %.1f ns (%s)", c->md.t * 1e9,
       model_src_name[ts], c->md.t_w * 1e9, model_src_name[tws]);
    if (ts == NC_BMODEL_MEASURED || tws == NC_BMODEL_MEASURED)
        hp(4, 6, "measured at a team's first broadcast (t: best of 3 memcpy of 1 MiB; t_W: the "
                 "median of 5 batches of barriers), so the values here are the static fallback "
                 "and f, s below follow from them; a run logs the measured ones under "
                 "NUMACOLL_VERBOSE=1, and NUMACOLL_BCAST_MODEL_T / _TW set them");
    if (rc != NUMACOLL_OK) {
        fact("bcast.error", 0, "%s", numacoll_last_error());
        hp(2, 4, "the team's first broadcast fails: %s", numacoll_last_error());
        return;
    }
    c->bcast_ok = 1;
    fact("bcast.tree", 0, "%s", nc_bcast_tree_names[p->tree]);
    fact("bcast.tree.k", 1, "%d", p->k);
    fact("bcast.tree.reason", 0, "%s", p->tree_why);
    fact("bcast.tree.numa_nodes", 1, "%d", p->numa_count);
    fact("bcast.tree.levels", 0, "%s", NC_BCAST_TREE_LEVELS);
    fact("bcast.relay", 1, "%d", p->relay);
    fact("bcast.relay.reason", 0, "%s", p->relay_why);
    hp(2, 4, "tree: %s, k %d; %s (NUMA nodes: %d)", nc_bcast_tree_names[p->tree], p->k,
       p->tree_why, p->numa_count);

    /* root 0's tree, by the library's function over the groups the broadcast uses */
    int P = c->P;
    const int *groups;
    int nlev = nc_bcast_tree_groups(c->t, &groups);
    int *par = malloc((size_t)P * sizeof *par), *depth = malloc((size_t)P * sizeof *depth);
    if (par && depth) {
        nc_bcast_tree_parents(p->tree, P, 0, p->k, nlev, groups, par);
        int maxd = 0, maxkids = 0;
        for (int r = 0; r < P; r++) /* children per rank (in depth[] for now) */
            depth[r] = 0;
        for (int r = 0; r < P; r++)
            if (par[r] >= 0 && ++depth[par[r]] > maxkids) maxkids = depth[par[r]];
        for (int r = 0; r < P; r++) /* depths: -1 unknown; each path resolved once, O(P) */
            depth[r] = par[r] < 0 ? 0 : -1;
        for (int r = 0; r < P; r++) {
            int y = r, d;
            while (depth[y] < 0) /* up to a known rank (the root is known) */
                y = par[y];
            d = depth[y];
            int n = 0;
            for (int z = r; depth[z] < 0; z = par[z]) /* the path's length */
                n++;
            for (int z = r; depth[z] < 0; z = par[z]) /* and its depths, top = d + 1 */
                depth[z] = d + n--;
            if (depth[r] > maxd) maxd = depth[r];
        }
        fact("bcast.tree.root0.depth", 1, "%d", maxd);
        fact("bcast.tree.root0.max_children", 1, "%d", maxkids);
        if (P <= 4096) {
            size_t n = (size_t)P * 9 + 8, o = 0;
            char *s = malloc(n);
            for (int r = 0; s && r < P; r++)
                o += (size_t)snprintf(s + o, n - o, "%s%d", r ? "," : "", par[r]);
            if (s) fact("bcast.tree.root0.parents", 0, "%s", s);
            free(s);
        }
        hp(2, 4, "root 0's tree: depth %d, at most %d child%s per rank%s", maxd, maxkids,
           maxkids == 1 ? "" : "ren", P <= 64 ? ":" : " (--parsable lists every rank's parent)");
        if (P <= 64 && g_out == OUT_HUMAN) { /* "parent->children" of every inner rank */
            size_t n = (size_t)P * 16 + 16, o = 0;
            char *s = malloc(n);
            for (int r = 0; s && r < P; r++)
                for (int i = 1, nk = 0; i < P; i++) { /* root 0: rotated order = ascending */
                    if (par[i] != r) continue;
                    if (nk++ == 0) o += (size_t)snprintf(s + o, n - o, "%s%d->", o ? "  " : "", r);
                    else o += (size_t)snprintf(s + o, n - o, ",");
                    o += (size_t)snprintf(s + o, n - o, "%d", i);
                }
            if (s) wrap_out(s, 4, 4);
            free(s);
        }
    }
    free(par), free(depth);
    hp(2, 4, "relay: %s (%s)", p->relay ? "on" : "off", p->relay_why);

    fact("bcast.queue.budget", 1, "%zu", p->budget);
    fact("bcast.queue.budget_source", 0, "%s",
         p->budget_auto ? (c->t->oversubscribed ? "auto (oversubscribed)" : "auto")
                        : "NUMACOLL_BCAST_QUEUE_BYTES");
    fact("bcast.queue.fragment", 1, "%zu", p->f);
    fact("bcast.queue.fragment_source", 0, "%s",
         p->fixed_f ? "NUMACOLL_BCAST_FRAGMENT"
         : p->f_model > p->f_max ? "model, cut to b/(2q)"
                                 : "model");
    fact("bcast.queue.slots", 1, "%zu", p->s);
    fact("bcast.queue.slots_source", 0, "%s", p->s_auto ? "model" : "NUMACOLL_BCAST_SLOTS");
    fact("bcast.queue.sets", 1, "%zu", p->q);
    fact("bcast.queue.bytes_per_process", 1, "%zu", p->s * p->f);
    hp(2, 4, "queue per process: budget b = %s (%s), %zu slots of f = %zu bytes in %zu sets",
       human_size(p->budget, b1, sizeof b1),
       p->budget_auto ? "NUMACOLL_BCAST_QUEUE_BYTES=0: auto" : "NUMACOLL_BCAST_QUEUE_BYTES",
       p->s, p->f, p->q);
    if (p->fixed_f)
        hp(4, 6, "f: NUMACOLL_BCAST_FRAGMENT, used as is for every message");
    else
        hp(4, 6, "f: the model's f* = sqrt(b t_W / t) = %zu rounded up to a page%s; a message m "
                 "is cut into fragments of sqrt(m t_W / t) at most f",
           p->f_model,
           p->f_model > p->f_max ? ", cut to b / (2q) so that 2q slots fit the budget" : "");
    hp(4, 6, "s: %s%s", p->s_auto ? "b / f, at least 2q" : "NUMACOLL_BCAST_SLOTS",
       p->s_auto ? "; at run time cut if the P queues would take over half of the free /dev/shm"
                 : "");

    fact("bcast.inline.max", 1, "%zu", p->inline_max);
    fact("bcast.inline.room", 1, "%zu", p->room);
    fact("bcast.inline.limit", 1, "%zu", p->inl_fast);
    hp(2, 4, "inline: messages of up to %zu bytes (NUMACOLL_BCAST_INLINE_MAX %zu; an inline "
             "block carries %zu bytes with %zu-byte lines)",
       p->inl_fast, p->inline_max, p->room, c->t->line);
    fact("bcast.cma.min", 1, "%zu", p->cma_min);
    fact("bcast.cma", 0, "%s", p->cma_min ? "on if permitted (probed at run time)" : "off");
    if (p->cma_min)
        hp(2, 4, "CMA: from %s if process_vm_readv is permitted between the members (probed at "
                 "the team's first broadcast; else the queues)",
           human_size(p->cma_min, b1, sizeof b1));
    else
        hp(2, 4, "CMA: off (NUMACOLL_BCAST_CMA_MIN=0)");

    fact("bcast.stream.root_from", 1, "%zu", p->nt_min);
    fact("bcast.stream.receivers_from", 1, "%zu", p->nt_out_min);
    fact("bcast.rotate", 1, "%d", p->rotate);
    fact("bcast.adapt", 1, "%d", p->adapt);
    hp(2, 4, "copy modes (static): the root streams into its queue from %s%s, the receivers "
             "stream out from %s (0 = never); rotating offsets %s",
       p->nt_min ? human_size(p->nt_min, b1, sizeof b1) : "0",
       p->nt_min_from_out ? " (oversubscribed: STREAM_OUT_MIN's)" : "",
       p->nt_out_min ? human_size(p->nt_out_min, b2, sizeof b2) : "0",
       p->rotate ? "on" : c->t->oversubscribed ? "off (oversubscribed)" : "off");
    hp(2, 4, "copy-mode selector (NUMACOLL_BCAST_ADAPT): %s",
       p->adapt ? "on: at run time the root times runs of its broadcasts and picks the mode per "
                  "size class among the candidates below, the static mode first"
       : c->t->oversubscribed && nc_cfg_bool(NC_CFG_BCAST_ADAPT)
           ? "off (oversubscribed; NUMACOLL_BCAST_ADAPT_OVERSUB=1 turns it on): the static "
             "modes apply"
           : "off: the static modes apply");
}

/* one message of @p m bytes: its facts, and its human line (a table row or a paragraph) */
static void explain_message(explain_ctx_t *c, unsigned long long m, int table)
{
    const nc_bcast_plan_t *p = &c->pl;
    char b1[64], cands[160] = "", name[32];
    int path = nc_bcast_msg_path((size_t)m, p->inl_fast, 1, p->cma_min);
    size_t fe = 0, fe_whole = 0, nfrag = 0, ops = 0;
    int nt = 0, nc = 0, cand[4];
    if (path != NC_BPATH_INLINE) { /* the queue's figures (CMA: when it is not permitted) */
        fe = nc_bcast_msg_fragment(p->f, p->fixed_f, &c->md, (size_t)m, 0);
        fe_whole = nc_bcast_msg_fragment(p->f, p->fixed_f, &c->md, (size_t)m, 1);
        size_t per_op = (p->s / p->q) * fe;
        nfrag = (size_t)((m + fe - 1) / fe);
        ops = (size_t)((m + per_op - 1) / per_op);
        nt = nc_bcast_msg_nt(p->nt_min, p->nt_out_min, (size_t)m);
        nc = p->adapt ? nc_bcast_sel_cands(p->nt_min, p->nt_out_min, p->fixed_f, p->rotate,
                                           (size_t)m, cand)
                      : 0;
        for (int i = 0, o = 0; i < nc; i++)
            o += snprintf(cands + o, sizeof cands - (size_t)o, "%s%s", i ? "," : "",
                          mode_name(cand[i], name, sizeof name));
    }
    fact(kf("bcast.msg.%llu.path", m), 0, "%s", nc_bcast_path_names[path]);
    if (path == NC_BPATH_CMA) fact(kf("bcast.msg.%llu.path_if_no_cma", m), 0, "queue");
    if (path != NC_BPATH_INLINE) {
        fact(kf("bcast.msg.%llu.fragment", m), 1, "%zu", fe);
        fact(kf("bcast.msg.%llu.fragments", m), 1, "%zu", nfrag);
        fact(kf("bcast.msg.%llu.ops", m), 1, "%zu", ops);
        fact(kf("bcast.msg.%llu.copy_mode", m), 0, "%s", mode_name(nt, name, sizeof name));
        fact(kf("bcast.msg.%llu.rotate", m), 1, "%d", p->rotate);
        fact(kf("bcast.msg.%llu.selector", m), 0, "%s", nc ? "run time" : "off");
        if (nc) fact(kf("bcast.msg.%llu.selector_candidates", m), 0, "%s", cands);
    }
    if (table) {
        if (path == NC_BPATH_INLINE)
            hp(2, 4, "%-11llu %-6s %-9s %-6s %-4s %-8s %s", m, "inline", "-", "-", "-", "-", "-");
        else
            hp(2, 4, "%-11llu %-6s %-9zu %-6zu %-4zu %-8s %s", m, nc_bcast_path_names[path], fe,
               nfrag, ops, mode_name(nt, name, sizeof name), nc ? cands : "-");
        return;
    }
    human_size(m, b1, sizeof b1);
    int kib = m >= 1024 && m % 1024 == 0; /* "4 MiB" beside the bytes */
    hp(0, 2, "\nbroadcast of %llu bytes%s%s%s, from root 0", m, kib ? " (" : "", kib ? b1 : "",
       kib ? ")" : "");
    if (path == NC_BPATH_INLINE) {
        hp(2, 4, "path: inline: %llu <= %zu bytes, the inline limit; one copy into each "
                 "receiver's control block and one out",
           m, p->inl_fast);
        return;
    }
    if (path == NC_BPATH_CMA)
        hp(2, 4, "path: cma: %llu >= NUMACOLL_BCAST_CMA_MIN %zu: every receiver reads the "
                 "root's buffer with process_vm_readv if the members may (probed at run time); "
                 "else the queue, as below",
           m, p->cma_min);
    else
        hp(2, 4, "path: queue: over the %zu-byte inline limit; %s", p->inl_fast,
           p->cma_min ? "under NUMACOLL_BCAST_CMA_MIN" : "CMA off (NUMACOLL_BCAST_CMA_MIN=0)");
    hp(2, 4, "fragments: %zu of %zu bytes (%s), in %zu op%s of up to %zu slots (a set)", nfrag,
       fe, p->fixed_f      ? "NUMACOLL_BCAST_FRAGMENT"
           : fe == p->f    ? "the team's f"
           : fe != fe_whole ? "two halves, the rule for 2 KiB + 1 .. 8 KiB"
                           : "sqrt(m t_W / t) rounded up to a page, under the team's f",
       ops, ops == 1 ? "" : "s", p->s / p->q);
    hp(2, 4, "copy mode (static): %s%s", mode_name(nt, name, sizeof name),
       p->rotate ? ", rotating offsets" : ", no rotating offsets");
    if (nc) {
        hp(2, 4, "at run time the copy-mode selector picks among %s from timed runs, starting "
                 "with the static mode",
           cands);
        if (fe_whole != fe)
            hp(4, 6, "+whole sends the message as one fragment of %zu bytes", fe_whole);
    } else {
        hp(2, 4, "copy mode at run time: the static one (%s)",
           p->adapt ? "the selector has a single candidate at this size"
                    : "the copy-mode selector is off");
    }
    hp(2, 4, "modes: plain stores; nt-root: the root streams (non-temporal stores) into its "
             "queue; nt-recv: the receivers stream out; nt-both; +whole: one fragment, not two "
             "halves; +norot: no rotating offset");
}

static void explain_messages(explain_ctx_t *c, const explain_args_t *ex)
{
    if (!c->bcast_ok) return;
    if (ex->bytes_set) {
        explain_message(c, ex->bytes, 0);
        return;
    }
    static const unsigned long long sizes[] = {
        0, 8, 64, 1024, 4096, 6144, 16384, 65536, 262144, 1048576, 4194304, 16777216};
    hp(0, 2, "\nbroadcast by message size (root 0; --bytes M for one size in detail)");
    hp(2, 4, "%-11s %-6s %-9s %-6s %-4s %-8s %s", "bytes", "path", "fragment", "frags", "ops",
       "static", "selector's candidates at run time");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        explain_message(c, sizes[i], 1);
    hp(2, 4, "modes: plain stores; nt-root: the root streams (non-temporal stores) into its "
             "queue; nt-recv: the receivers stream out; nt-both; +whole: one fragment, not two "
             "halves; +norot: no rotating offset");
}

/* the reductions' automatic choice by size (nc_reduce_choice: the library's rule) */
static void explain_reduce(explain_ctx_t *c, const explain_args_t *ex)
{
    static const unsigned long long sizes[] = {8, 1024, 4096, 65536, 1048576, 16777216};
    const unsigned long long *list = ex->bytes_set ? &ex->bytes : sizes;
    size_t n = ex->bytes_set ? 1 : sizeof sizes / sizeof sizes[0];
    fact("reduce.flat_max", 1, "%zu", nc_cfg_size(NC_CFG_REDUCE_FLAT_MAX));
    fact("reduce.fragment", 1, "%zu", nc_cfg_size(NC_CFG_REDUCE_FRAGMENT));
    fact("reduce.slots", 1, "%ld", nc_cfg_int(NC_CFG_REDUCE_SLOTS));
    fact("reduce.numa_nodes", 1, "%d", nc_topo_team_numa_count(c->t));
    fact("reduce.stream", 0, "%s", nc_cfg_str(NC_CFG_REDUCE_STREAM));
    fact("reduce.stream_min", 1, "%zu", nc_cfg_size(NC_CFG_REDUCE_STREAM_MIN));
    hp(0, 2, "\nallreduce and reduce by message size (NUMACOLL_ALLREDUCE=%s, NUMACOLL_REDUCE=%s; "
             "flat or hier up to %zu bytes, hier when the team spans NUMA nodes: %d here; rsag "
             "above, but a reduce over 2 processes or more processes than CPUs stays flat; "
             "copies others read: NUMACOLL_REDUCE_STREAM=%s from %zu bytes)",
       nc_cfg_str(NC_CFG_ALLREDUCE), nc_cfg_str(NC_CFG_REDUCE), nc_cfg_size(NC_CFG_REDUCE_FLAT_MAX),
       nc_topo_team_numa_count(c->t), nc_cfg_str(NC_CFG_REDUCE_STREAM),
       nc_cfg_size(NC_CFG_REDUCE_STREAM_MIN));
    for (size_t i = 0; i < n; i++) {
        const char *all = nc_reduce_choice(c->t, (size_t)list[i], -1);
        const char *one = nc_reduce_choice(c->t, (size_t)list[i], 0);
        fact(kf("reduce.%llu.allreduce", list[i]), 0, "%s", all);
        fact(kf("reduce.%llu.reduce", list[i]), 0, "%s", one);
        hp(2, 4, "%-11llu allreduce %-6s reduce %s", list[i], all, one);
    }
    if (c->t->oversubscribed && c->t->size > 2 && strcmp(nc_cfg_str(NC_CFG_ALLREDUCE), "auto") == 0)
        hp(2, 4, "allreduce rbcast: oversubscribed, so a flat reduce to member 0 and its "
                 "broadcast; the other members wait on one flag per step, not on every member");
}

/* numacoll-info --explain: 0, 1 (invalid configuration, unreadable machine) or 2 (bad usage) */
static int explain_main(const explain_args_t *ex, int out)
{
    g_out = out;
    if (numacoll_config_check() != NUMACOLL_OK) {
        fprintf(stderr, "numacoll-info: invalid configuration: %s (the library refuses it, so "
                        "there is nothing to explain)\n",
                numacoll_last_error());
        return 1;
    }
    explain_ctx_t c;
    memset(&c, 0, sizeof c);
    int rc = explain_machine(ex, &c);
    if (rc) return rc;
    explain_topology(&c);
    explain_barrier(&c);
    explain_bcast_team(&c);
    explain_messages(&c, ex);
    explain_reduce(&c, ex);
    explain_move(c.t, ex->bytes_set, ex->bytes);
    explain_mpi();
    facts_out();
    nc_topo_team_fini(c.t);
    free(c.t);
    nc_topo_plan_free(c.plan);
    return 0;
}

/* After the options: -1 when --explain is not asked for, else its exit status (2 for options
 * that do not go together) */
int explain_dispatch(const explain_args_t *ex, int mode, int json, int parsable)
{
    if (json && parsable) {
        fprintf(stderr, "numacoll-info: --json and --parsable exclude each other; allowed: one "
                        "of them\n");
        return 2;
    }
    if (!ex->on) return -1;
    if (mode) {
        fprintf(stderr, "numacoll-info: --explain (or --np, --bytes, --synthetic, --map-by) "
                        "goes alone; allowed with it: --json or --parsable\n");
        return 2;
    }
    return explain_main(ex, json ? OUT_JSON : parsable ? OUT_PARSABLE : OUT_HUMAN);
}
