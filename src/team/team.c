/*
 * Teams: creation over an OOB allgather, the shared segment layout, and the collective
 * entry points (barrier, bcast) that wrap the algorithms.
 *
 * Segment layout (every size a multiple of the line size; blocks page-aligned):
 *
 *   global block (first-touched by rank 0):
 *       header line | barrier algorithm areas (registry order)
 *   rank block r = 0..P-1 (first-touched by rank r, NUMA-local to it):
 *       control line (nc_rank_ctl_t) | barrier algorithm areas (registry order)
 */
#include "team_internal.h"
#include "../topo/topo.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* the MPI layer's rows (config_rows.c): a program that creates teams validates them too */
NC_CFG_LINK(mpi);

/* The settings every member of a team must share: they choose its barrier, its groups
 * (topology) and how its shared lines are laid out, so a member with another value would
 * wait on flags the others never write. Compared as configured (their text); the line size
 * as used (last entry of member_info_t.shared). */
static const nc_cfg_id_t shared_cfg[] = {
    NC_CFG_OVERSUBSCRIBED,  NC_CFG_TOPO_SYNTHETIC, NC_CFG_TOPO_MAP_BY,
    NC_CFG_BARRIER_TOPO_LEVELS, NC_CFG_BARRIER,    NC_CFG_BARRIER_TREE_K,
    NC_CFG_BARRIER_LOGP_L,  NC_CFG_BARRIER_LOGP_OS, NC_CFG_BARRIER_LOGP_OR,
    NC_CFG_BARRIER_LOGP_G};
#define NSHARED (sizeof shared_cfg / sizeof shared_cfg[0])

typedef struct member_info {
    uint64_t autogroup; /* hash of /proc/self/autogroup, 0 = unknown */
    uint64_t id[2];     /* identity proposal; the team takes rank 0's (see team_identity) */
    int32_t pid;
    int32_t rank;
    int32_t size;
    int32_t config_ok;
    int32_t node_procs; /* the caller's params.node_procs (0 = unknown) */
    uint32_t shared[NSHARED + 1]; /* hashes of the shared_cfg values, then the line size */
    cpu_set_t cpus;
} member_info_t;

/* The CFS autogroup of this process ("/autogroup-N ..."), hashed; 0 if unknown. Processes
 * of different sessions (setsid; MPICH's Hydra starts every rank in its own) are in
 * different autogroups, and sched_yield never hands the CPU to a task of another group:
 * each group is its own entity on the CPU's run queue. */
static uint64_t autogroup_key(void)
{
    char buf[64] = {0};
    FILE *f = fopen("/proc/sys/kernel/sched_autogroup_enabled", "re");
    if (f) {
        int on = fgetc(f);
        fclose(f);
        if (on == '0') return 0; /* autogroups off: sched_yield works across sessions */
    }
    f = fopen("/proc/self/autogroup", "re");
    if (!f) return 0;
    if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
    fclose(f);
    /* FNV-1a of the "/autogroup-N" word */
    uint64_t h = nc_fnv1a(NC_FNV_BASIS, buf, strcspn(buf, " \n"));
    return buf[0] ? h : 0;
}

/* A team identity no other team of this node has or had (while the pids and the random
 * source last): 64 random bits, and this process's pid with its own count of proposals.
 * The second word alone is unique among the teams one process creates as rank 0 (the
 * count never repeats) and across the processes alive at once (pids differ); the random
 * word covers pid reuse over time. Segment names such as memfd:<pid>:<fd> are not
 * identities: the descriptor numbers of closed segments come back. */
static void team_identity(uint64_t id[2])
{
    static _Atomic uint32_t proposals; /* relaxed: only uniqueness matters, not order */
    uint32_t n = atomic_fetch_add_explicit(&proposals, 1, memory_order_relaxed);
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
        uint64_t now = nc_now_ns(); /* the kernel's pool is not ready yet: the clock */
        rnd = nc_fnv1a(NC_FNV_BASIS, &now, sizeof now);
    }
    id[0] = rnd;
    id[1] = (uint64_t)(uint32_t)getpid() << 32 | n;
}

/* NUMACOLL_ERR_CONFIG naming the first shared setting (shared_cfg) in which member @p r
 * differs from member 0, with the value of this member, @p me; every member sees the same
 * records, so all of them fail */
static int shared_compare(const member_info_t *all, int r, int me, size_t line)
{
    for (size_t i = 0; i <= NSHARED; i++) {
        if (all[r].shared[i] == all[0].shared[i]) continue;
        char here[64];
        if (i == NSHARED)
            snprintf(here, sizeof here, "%zu bytes", line);
        else
            snprintf(here, sizeof here, "'%s'", nc_cfg_str(shared_cfg[i]));
        return nc_error(NUMACOLL_ERR_CONFIG,
                        "%s differs between members 0 and %d (member %d has %s); a team needs "
                        "the same value on every member",
                        nc_cfg_name(i == NSHARED ? NC_CFG_CACHELINE : shared_cfg[i]), r, me, here);
    }
    return NUMACOLL_OK;
}

/* Exchange pid, CPU affinity and scheduler group; derive the CPU count, whether pids are
 * visible and whether sched_yield can hand the CPU from one member to another. */
static int exchange_members(numacoll_team_t *t, int cfg_status)
{
    member_info_t me = {.autogroup = autogroup_key(),
                        .pid = (int32_t)getpid(),
                        .rank = t->rank,
                        .size = t->size,
                        .config_ok = cfg_status == NUMACOLL_OK,
                        .node_procs = t->node_procs};
    team_identity(me.id);
    for (size_t i = 0; i < NSHARED && cfg_status == NUMACOLL_OK; i++) {
        const char *v = nc_cfg_str(shared_cfg[i]);
        me.shared[i] = (uint32_t)nc_fnv1a(NC_FNV_BASIS, v, strlen(v));
    }
    me.shared[NSHARED] = (uint32_t)t->line;
    CPU_ZERO(&me.cpus);
    if (sched_getaffinity(0, sizeof me.cpus, &me.cpus) != 0) CPU_ZERO(&me.cpus);
    member_info_t *all = calloc((size_t)t->size, sizeof *all);
    if (!all) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory creating a team");
    int orc = nc_oob_allgather(t->allgather, &me, all, sizeof me, t->oob_ctx,
                               "exchanging the members' details at team creation");
    if (orc != NUMACOLL_OK) {
        free(all);
        return orc;
    }
    int rc = NUMACOLL_OK, node_procs = 0;
    cpu_set_t u;
    CPU_ZERO(&u);
    t->check_peers = 1;
    t->split_sched_groups = 0;
    for (int r = 0; r < t->size && rc == NUMACOLL_OK; r++) {
        if (all[r].autogroup && all[0].autogroup && all[r].autogroup != all[0].autogroup)
            t->split_sched_groups = 1;
        if (all[r].rank != r || all[r].size != t->size)
            rc = nc_error(NUMACOLL_ERR_ARG,
                          "inconsistent team parameters: member in slot %d says rank %d of %d, "
                          "expected rank %d of %d (ranks must be 0..size-1, size equal on all)",
                          r, all[r].rank, all[r].size, r, t->size);
        else if (!all[r].config_ok && r != t->rank)
            rc = nc_error(NUMACOLL_ERR_CONFIG,
                          "rank %d rejected its NUMACOLL_* environment (see its message)", r);
        else if (all[r].config_ok && all[0].config_ok && cfg_status == NUMACOLL_OK)
            rc = shared_compare(all, r, t->rank, t->line);
        CPU_OR(&u, &u, &all[r].cpus);
        if (all[r].node_procs > node_procs) node_procs = all[r].node_procs;
        if (r != t->rank && nc_pid_gone(all[r].pid))
            t->check_peers = 0; /* another pid namespace: cannot tell dead from invisible */
    }
    t->ncpus = CPU_COUNT(&u);
    t->node_procs = node_procs; /* the largest: the same on every member */
    t->id[0] = all[0].id[0];
    t->id[1] = all[0].id[1];
    free(all);
    if (cfg_status != NUMACOLL_OK) return cfg_status;
    return rc;
}

static void team_free(numacoll_team_t *t)
{
    if (!t) return;
    if (t->bcast) nc_bcast_team_fini(t);
    if (t->reduce) nc_reduce_team_fini(t);
    if (t->move) nc_move_team_fini(t);
    if (t->barrier_slots && t->seg.base) {
        for (int i = 0; i < nc_barrier_registry_count; i++)
            if (nc_barrier_registry[i]->fini) nc_barrier_registry[i]->fini(t, &t->barrier_slots[i]);
    }
    free(t->barrier_slots);
    nc_topo_team_fini(t);
    nc_seg_destroy(&t->seg);
    free(t);
}

static int choose_barrier(numacoll_team_t *t)
{
    const char *want = nc_cfg_str(NC_CFG_BARRIER);
    if (strcmp(want, "auto") == 0) {
        t->barrier_default = nc_barrier_auto(t);
        return NUMACOLL_OK;
    }
    int i = nc_barrier_find(want);
    if (i < 0) /* cannot happen: the config row validates against the registry */
        return nc_error(NUMACOLL_ERR_CONFIG, "NUMACOLL_BARRIER='%s' is not registered", want);
    t->barrier_default = i;
    return NUMACOLL_OK;
}

int numacoll_team_create(const numacoll_team_params_t *p, numacoll_team_t **out)
{
    if (!out) return nc_error(NUMACOLL_ERR_ARG, "numacoll_team_create: team pointer is NULL");
    *out = NULL;
    if (!p) return nc_error(NUMACOLL_ERR_ARG, "numacoll_team_create: params is NULL");
    if (p->size < 1)
        return nc_error(NUMACOLL_ERR_ARG, "numacoll_team_create: size=%d; allowed: size >= 1",
                        p->size);
    if (p->rank < 0 || p->rank >= p->size)
        return nc_error(NUMACOLL_ERR_ARG, "numacoll_team_create: rank=%d; allowed: 0..%d (size-1)",
                        p->rank, p->size - 1);
    if (!p->allgather)
        return nc_error(NUMACOLL_ERR_ARG,
                        "numacoll_team_create: no allgather callback; one is required");

    /* Config errors are reported, but the member still takes part in the exchanges so
     * that every member fails in the same way instead of hanging. */
    int cfg = numacoll_config_check();
    char cfg_msg[1024];
    snprintf(cfg_msg, sizeof cfg_msg, "%s", numacoll_last_error());

    numacoll_team_t *t = calloc(1, sizeof *t);
    if (!t) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory creating a team");
    t->rank = p->rank;
    t->size = p->size;
    t->allgather = p->allgather;
    t->oob_ctx = p->oob_ctx;
    t->progress = p->progress;
    t->progress_ctx = p->progress_ctx;
    snprintf(t->name, sizeof t->name, "%s", p->name ? p->name : "team");
    t->line = nc_line_size();
    t->numa_node = -1;
    t->node_procs = p->node_procs > 0 ? p->node_procs : 0;

    int rc = exchange_members(t, cfg);
    if (cfg != NUMACOLL_OK) nc_error(cfg, "%s", cfg_msg);
    rc = nc_agree(t->rank, t->size, t->allgather, t->oob_ctx, rc);
    if (rc != NUMACOLL_OK) goto fail;

    /* wait policy. The members alone may fit their CPUs while the job's other processes
     * on the node compete for them (a 2 x 2 grid's row communicators in 4 processes on 2
     * CPUs): a member that spins then burns the time slice its partner needs. The job's
     * count comes from the caller (the same on every member: the largest), the CPU count
     * from the node, so every member decides alike. */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    t->node_cpus = online > 0 ? (int)online : 0;
    t->oversubscribed = nc_detect_oversubscribed(t->size, t->ncpus);
    if (!t->oversubscribed && nc_detect_oversubscribed(t->node_procs, t->node_cpus))
        t->oversubscribed = t->job_oversubscribed = 1;
    long spin = nc_cfg_int(NC_CFG_WAIT_SPIN);
    t->spin_limit = spin >= 0 ? (uint32_t)spin : (t->oversubscribed ? 0 : 4096);
    t->timeout_ns = (uint64_t)(nc_cfg_double(NC_CFG_TIMEOUT) * 1e9);
    t->sleep_after_ns = (uint64_t)nc_cfg_int(NC_CFG_WAIT_SLEEP_AFTER_US) * 1000ull;
    t->progress_ns = (uint64_t)nc_cfg_int(NC_CFG_PROGRESS_US) * 1000ull;
    long futex_after = nc_futex_after_us(t->oversubscribed);
    t->futex_after_ns = futex_after < 0 ? UINT64_MAX : (uint64_t)futex_after * 1000ull;
    t->futex = futex_after >= 0;
    if (t->oversubscribed && t->split_sched_groups &&
        !nc_cfg_is_set(NC_CFG_WAIT_SLEEP_AFTER_US)) {
        /* sched_yield cannot pass the CPU to a member in another autogroup: a yielding
         * waiter would keep it for its whole time slice (ms per barrier with MPICH's
         * Hydra, which starts every rank in its own session), so nap almost at once */
        t->sleep_after_ns = 1000;
        if (t->rank == 0)
            nc_log(1, t->rank, t->size,
                   "team '%s': members are in different scheduler autogroups (separate "
                   "sessions) and oversubscribed: sched_yield cannot hand the CPU over, so "
                   "waits nap after 1 us (NUMACOLL_WAIT_SLEEP_AFTER_US overrides)",
                   t->name);
    }

    /* topology (collective) */
    rc = nc_topo_team_init(t);
    rc = nc_agree(t->rank, t->size, t->allgather, t->oob_ctx, rc);
    if (rc != NUMACOLL_OK) goto fail;

    /* layout */
    t->barrier_slots = calloc((size_t)nc_barrier_registry_count, sizeof *t->barrier_slots);
    if (!t->barrier_slots) {
        rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory creating a team");
        goto fail_agree;
    }
    size_t ps = nc_page_size();
    size_t rank_bytes = nc_round_up(sizeof(nc_rank_ctl_t), t->line);
    /* the global block: a line left free, the sleeper counters of kernel waits (wait.c),
     * then the barriers' */
    size_t sleepers_off = t->line;
    size_t sleepers_bytes = nc_round_up(NC_SLEEP_BUCKETS * sizeof(uint32_t), t->line);
    size_t global_bytes = nc_barrier_layout(t, sleepers_off + sleepers_bytes, &rank_bytes);
    t->global_size = nc_round_up(global_bytes, ps);
    t->rank_stride = nc_round_up(rank_bytes, ps);
    size_t total = t->global_size + (size_t)t->size * t->rank_stride;

    rc = nc_seg_create_collective(t->rank, t->size, t->allgather, t->oob_ctx, total, t->global_size,
                                  t->global_size + (size_t)t->rank * t->rank_stride, t->rank_stride,
                                  t->rank_stride, t->numa_node, "a team", &t->seg);
    if (rc != NUMACOLL_OK) goto fail; /* already agreed */
    t->global = t->seg.base;
    t->sleepers = (_Atomic uint32_t *)(t->global + sleepers_off);
    t->ranks = (char *)t->seg.base + t->global_size;
    for (int i = 0; i < nc_barrier_registry_count; i++)
        t->barrier_slots[i].global = t->global + (size_t)(uintptr_t)t->barrier_slots[i].global;

    atomic_store_explicit(&nc_team_ctl(t, t->rank)->pid, (int32_t)getpid(), memory_order_relaxed);

    for (int i = 0; i < nc_barrier_registry_count && rc == NUMACOLL_OK; i++)
        if (nc_barrier_registry[i]->init)
            rc = nc_barrier_registry[i]->init(t, &t->barrier_slots[i]);
    if (rc == NUMACOLL_OK) rc = choose_barrier(t);
    rc = nc_agree(t->rank, t->size, t->allgather, t->oob_ctx, rc);
    if (rc != NUMACOLL_OK) goto fail;

    if (nc_verbose() >= 1) {
        char desc[4096];
        numacoll_team_describe(t, desc, sizeof desc);
        if (t->rank == 0 || nc_verbose() >= 2) nc_log(1, t->rank, t->size, "%s", desc);
    }
    if (nc_verbose() >= 2) {
        size_t on = 0, off = 0;
        int node = nc_seg_check_placement(nc_team_rank_block(t, t->rank), t->rank_stride,
                                          t->numa_node, &on, &off);
        nc_log(2, t->rank, t->size,
               "my block (%zu bytes) lies on NUMA node %d (expected %d: %zu pages there, %zu "
               "elsewhere)",
               t->rank_stride, node, t->numa_node, on, off);
    }
    *out = t;
    return NUMACOLL_OK;

fail_agree:
    rc = nc_agree(t->rank, t->size, t->allgather, t->oob_ctx, rc);
fail : {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", numacoll_last_error());
    team_free(t);
    return nc_error(rc, "%s", msg);
}
}

int numacoll_team_destroy(numacoll_team_t *t)
{
    team_free(t);
    return NUMACOLL_OK;
}

int numacoll_team_rank(const numacoll_team_t *t)
{
    return t ? t->rank : -1;
}
int numacoll_team_size(const numacoll_team_t *t)
{
    return t ? t->size : -1;
}

int numacoll_team_id(const numacoll_team_t *t, uint64_t id[2])
{
    if (!t || !id)
        return nc_error(NUMACOLL_ERR_ARG, "numacoll_team_id: %s is NULL", t ? "id" : "team");
    id[0] = t->id[0];
    id[1] = t->id[1];
    return NUMACOLL_OK;
}

int numacoll_barrier(numacoll_team_t *t)
{
    if (!t) return nc_error(NUMACOLL_ERR_ARG, "numacoll_barrier: team is NULL");
    return nc_barrier_run(t, t->barrier_default);
}

int numacoll_barrier_with(numacoll_team_t *t, const char *algorithm)
{
    if (!t) return nc_error(NUMACOLL_ERR_ARG, "numacoll_barrier_with: team is NULL");
    int i = algorithm ? nc_barrier_find(algorithm) : -1;
    if (i < 0) {
        const char *names = nc_barrier_allowed_names();
        return nc_error(NUMACOLL_ERR_NOT_FOUND, "barrier algorithm '%s' is unknown; registered: %s",
                        algorithm ? algorithm : "(null)", strchr(names, '|') + 1);
    }
    return nc_barrier_run(t, i);
}

const char *numacoll_team_barrier_name(const numacoll_team_t *t)
{
    return t ? nc_barrier_registry[t->barrier_default]->name : NULL;
}

/* The arguments of a broadcast call @p fn: NUMACOLL_OK or NUMACOLL_ERR_ARG naming the bad one */
static int bcast_args_check(const char *fn, const numacoll_team_t *t, const void *buf, size_t bytes,
                            int root)
{
    if (!t) return nc_error(NUMACOLL_ERR_ARG, "%s: team is NULL", fn);
    if (root < 0 || root >= t->size)
        return nc_error(NUMACOLL_ERR_ARG, "%s: root=%d; allowed: 0..%d", fn, root, t->size - 1);
    if (!buf && bytes)
        return nc_error(NUMACOLL_ERR_ARG, "%s: buffer is NULL for %zu bytes", fn, bytes);
    return NUMACOLL_OK;
}

int numacoll_bcast(numacoll_team_t *t, void *buf, size_t bytes, int root)
{
    int rc = bcast_args_check("numacoll_bcast", t, buf, bytes, root);
    if (rc != NUMACOLL_OK) return rc;
    if (t->size == 1) return NUMACOLL_OK;
    nc_team_op_enter(t, "bcast");
    rc = nc_bcast_run(t, buf, bytes, root);
    if (rc == NUMACOLL_OK) nc_team_op_leave(t);
    return rc;
}

int numacoll_bcast_with(numacoll_team_t *t, void *buf, size_t bytes, int root, const char *variant)
{
    nc_bcast_opts_t o;
    int rc = bcast_args_check("numacoll_bcast_with", t, buf, bytes, root);
    if (rc == NUMACOLL_OK) rc = nc_bcast_variant_opts(variant, &o);
    if (rc != NUMACOLL_OK || t->size == 1) return rc;
    nc_team_op_enter(t, "bcast");
    rc = nc_bcast_run_opts(t, buf, bytes, root, &o);
    if (rc == NUMACOLL_OK) nc_team_op_leave(t);
    return rc;
}

int numacoll_team_describe(const numacoll_team_t *t, char *out, size_t n)
{
    if (!t || !out || !n)
        return nc_error(NUMACOLL_ERR_ARG, "numacoll_team_describe: NULL argument");
    char futex_after[24] = "", over[128] = "";
    if (t->job_oversubscribed)
        snprintf(over, sizeof over,
                 " (oversubscribed: the job has %d processes on this node's %d CPUs; waits "
                 "yield at once)",
                 t->node_procs, t->node_cpus);
    else if (t->oversubscribed)
        snprintf(over, sizeof over, " (oversubscribed: waits yield at once)");
    else if (t->node_procs > 0)
        snprintf(over, sizeof over, " (the job has %d processes on this node's %d CPUs)",
                 t->node_procs, t->node_cpus);
    if (t->futex)
        snprintf(futex_after, sizeof futex_after, "%llu",
                 (unsigned long long)(t->futex_after_ns / 1000));
    size_t o = (size_t)snprintf(
        out, n,
        "team '%s': %d processes on %d CPU(s)%s; segment %zu bytes "
        "(global %zu, %zu per rank, line %zu); barrier %s; wait spin %u%s%s%s%s%s; ",
        t->name, t->size, t->ncpus, over, t->seg.size,
        t->global_size, t->rank_stride, t->line, nc_barrier_registry[t->barrier_default]->name,
        t->spin_limit, t->futex ? ", kernel sleep after " : "", futex_after,
        t->futex ? " us" : "", t->timeout_ns ? ", timeout set" : "",
        t->check_peers ? "" : ", dead-peer check off");
    if (o < n) nc_topo_team_describe(t, out + o, n - o);
    return NUMACOLL_OK;
}
