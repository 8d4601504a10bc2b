/*
 * The team's data-movement buffers (layout: move_internal.h), created collectively at the
 * team's first gather, scatter, allgather or alltoall: every member's area is NUMA-local
 * to it (bound to its node and first-touched by it), the parameters that shape the buffers
 * or choose a block's path must be the same on every member, and whether single copy is
 * permitted is agreed (every member probes process_vm_readv on its successor; one failure
 * turns single copy off on all).
 *
 * Memory in two steps, as the reductions do: at set-up an area gets pages for its control
 * lines and the first NUMACOLL_MOVE_EAGER bytes of each slot (at least a stream's head and
 * entries); the first call whose stream needs more gives the slots all their pages
 * (mv_state_ready), and an owner that cannot get them streams that call in short chunks,
 * within the eager part (move_internal.h), and tries again at its next such call. After
 * NUMACOLL_MOVE_GIVE_BACK calls in a row within the eager part, a member returns those
 * pages (mv_state_give_back; when it is safe: move_internal.h).
 */
#include "move_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct mv_params {
    uint64_t fragment, cma_min, cma_read_oversub, eager;
    uint64_t cma_cost_milli; /* NUMACOLL_MOVE_CMA_COST x 1000, rounded (compared exactly) */
    int32_t slots, mode;
} mv_params_t;

typedef struct mv_init_msg {
    mv_params_t p;
    int32_t pid;
    int32_t pad;
    uint64_t probe_addr;
} mv_init_msg_t;

static int32_t mode_from_config(void)
{
    const char *v = nc_cfg_str(NC_CFG_MOVE);
    return strcmp(v, "copy") == 0 ? MV_MODE_COPY
           : strcmp(v, "cma") == 0 ? MV_MODE_CMA
                                   : MV_MODE_AUTO;
}

static uint64_t cost_milli(double cost)
{
    return (uint64_t)(cost * 1000.0 + 0.5);
}

static void params_from_config(mv_params_t *p)
{
    memset(p, 0, sizeof *p);
    p->fragment = nc_round_up(nc_cfg_size(NC_CFG_MOVE_FRAGMENT), 64);
    p->cma_min = nc_cfg_size(NC_CFG_MOVE_CMA_MIN);
    p->cma_read_oversub = nc_cfg_size(NC_CFG_MOVE_CMA_READ_OVERSUB);
    p->cma_cost_milli = cost_milli(nc_cfg_double(NC_CFG_MOVE_CMA_COST));
    p->eager = nc_cfg_size(NC_CFG_MOVE_EAGER);
    p->slots = (int32_t)nc_cfg_int(NC_CFG_MOVE_SLOTS);
    p->mode = mode_from_config();
}

/* NUMACOLL_ERR_CONFIG naming the first parameter in which @p mine differs from @p first's
 * (rank 0's) */
static int params_compare(const mv_params_t *mine, const mv_params_t *first)
{
    static const struct {
        nc_cfg_id_t id;
        size_t off, size;
    } fields[] = {
        {NC_CFG_MOVE_FRAGMENT, offsetof(mv_params_t, fragment), sizeof(uint64_t)},
        {NC_CFG_MOVE_CMA_MIN, offsetof(mv_params_t, cma_min), sizeof(uint64_t)},
        {NC_CFG_MOVE_CMA_READ_OVERSUB, offsetof(mv_params_t, cma_read_oversub), sizeof(uint64_t)},
        {NC_CFG_MOVE_CMA_COST, offsetof(mv_params_t, cma_cost_milli), sizeof(uint64_t)},
        {NC_CFG_MOVE_EAGER, offsetof(mv_params_t, eager), sizeof(uint64_t)},
        {NC_CFG_MOVE_SLOTS, offsetof(mv_params_t, slots), sizeof(int32_t)},
        {NC_CFG_MOVE, offsetof(mv_params_t, mode), sizeof(int32_t)},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (memcmp((const char *)mine + fields[i].off, (const char *)first + fields[i].off,
                   fields[i].size) != 0)
            return nc_error(NUMACOLL_ERR_CONFIG,
                            "%s=%s here differs from rank 0's setting; gather, scatter, "
                            "allgather and alltoall need the same value on every member",
                            nc_cfg_name(fields[i].id), nc_cfg_str(fields[i].id));
    return NUMACOLL_OK;
}

int mv_state_ready(nc_move_team_t *s, int me)
{
    if (s->ready) return NUMACOLL_OK;
    int rc = nc_seg_populate(mv_area(s, me) + s->slots_off, s->area_stride - s->slots_off,
                             "the data-movement slots (large blocks)");
    if (rc == NUMACOLL_OK) s->ready = 1;
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

int mv_state_give_back(nc_move_team_t *s, int me)
{
    /* every reader of a chunk that went beyond a slot's eager part is done with it */
    for (unsigned i = 0; i < s->slots; i++) {
        mv_slot_rec_t *rec = &s->rec[i];
        if (!rec->big) continue;
        for (int m = rec->lo; m <= rec->hi; m++) {
            if (m == me || s->seen[m] >= rec->stamp) continue; /* known to be past it */
            /* no wait, a look: m publishes consumed[me] (release) after its last read of
             * our chunks up to that stamp; acquire, so those reads happened before the
             * punch below */
            uint64_t v = atomic_load_explicit(mv_consumed(s, m, me), memory_order_acquire);
            s->seen[m] = v;
            if (v < rec->stamp) return 0; /* m still reads it: the next call tries again */
            rec->lo = m + 1;
        }
    }
    /* a slot past its eager bytes up to the next slot's first page (kept: it holds that
     * slot's stamp and eager part), the last one up to the end of the area */
    for (unsigned i = 0; i < s->slots; i++) {
        char *next = i + 1 < s->slots ? mv_slot(s, me, i + 1) : mv_area(s, me) + s->area_stride;
        punch(mv_slot(s, me, i) + s->eager, next);
        s->rec[i].big = 0;
    }
    s->ready = 0;
    s->small_run = 0;
    return 1;
}

static int populate_eager(nc_move_team_t *s, int me)
{
    const char *what = "the data-movement buffers (control lines and small blocks)";
    int rc = nc_seg_populate(mv_area(s, me), s->slots_off, what);
    for (unsigned i = 0; i < s->slots && rc == NUMACOLL_OK; i++)
        rc = nc_seg_populate(mv_slot(s, me, i), s->eager, what);
    return rc;
}

static void state_free(nc_move_team_t *s)
{
    if (!s) return;
    free(s->rec), free(s->seen), free(s->ent), free(s->src), free(s->reads), free(s->heads);
    free(s);
}

int mv_state_get(numacoll_team_t *t, nc_move_team_t **state)
{
    if (NC_LIKELY(t->move != NULL)) {
        *state = t->move;
        return NUMACOLL_OK;
    }
    const int P = t->size;
    mv_init_msg_t mine, *all = calloc((size_t)P, sizeof *all);
    int32_t *oks = calloc((size_t)P, sizeof *oks);
    /* the only exit before the exchanges: without these this member cannot take part (a
     * few bytes per member; the others then wait in the exchange, or for NUMACOLL_TIMEOUT
     * where the allgather has one) */
    if (!all || !oks) {
        free(all), free(oks);
        return nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    }
    memset(&mine, 0, sizeof mine);
    params_from_config(&mine.p);
    mine.pid = (int32_t)getpid();
    mine.probe_addr = mv_cma_probe_addr();
    int rc = NUMACOLL_OK;
    nc_move_team_t *s = calloc(1, sizeof *s);
    if (s) {
        s->slots = (unsigned)mine.p.slots;
        s->rec = calloc(s->slots, sizeof *s->rec);
        s->seen = calloc((size_t)P, sizeof *s->seen);
        s->ent = calloc((size_t)P, sizeof *s->ent);
        s->src = calloc((size_t)P, sizeof *s->src);
        s->reads = calloc((size_t)P, sizeof *s->reads);
        s->heads = calloc((size_t)P, MV_HEAD_BYTES + MV_ENTRY_BYTES);
    }
    if (!s || !s->rec || !s->seen || !s->ent || !s->src || !s->reads || !s->heads)
        rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory");
    /* everyone takes part in the exchange, even after a failure, so nobody waits alone */
    int orc = nc_oob_allgather(t->allgather, &mine, all, sizeof mine, t->oob_ctx,
                               "setting up gather/scatter/alltoall");
    if (orc != NUMACOLL_OK) {
        state_free(s), free(all), free(oks);
        return orc;
    }
    if (rc == NUMACOLL_OK) rc = params_compare(&mine.p, &all[0].p);
    /* single copy: can we read our successor's memory? (agreed below) */
    int32_t cma_mine = 1;
    if (P > 1 && mine.p.mode != MV_MODE_COPY) {
        const mv_init_msg_t *next = &all[(t->rank + 1) % P];
        cma_mine = mv_cma_probe(next->pid, next->probe_addr);
        if (!cma_mine)
            nc_log(1, t->rank, P,
                   "move: process_vm_readv from rank %d failed (%s); single copy is off on "
                   "this team, every block goes through the shared slots",
                   (t->rank + 1) % P, strerror(errno));
    }
    free(all);
    orc = nc_oob_allgather(t->allgather, &cma_mine, oks, sizeof cma_mine, t->oob_ctx,
                           "setting up gather/scatter/alltoall");
    int cma_ok = 1;
    for (int r = 0; r < P; r++)
        cma_ok &= oks[r] != 0;
    free(oks);
    if (orc != NUMACOLL_OK) {
        state_free(s);
        return orc;
    }
    rc = nc_agree(t->rank, P, t->allgather, t->oob_ctx, rc);
    if (rc != NUMACOLL_OK) {
        state_free(s);
        return rc;
    }
    s->line = t->line;
    s->fragment = mine.p.fragment;
    s->slot_stride = s->fragment + 64;
    s->chunk = s->slot_stride - MV_SLOT_HEADER;
    s->cma_min = mine.p.cma_min;
    s->cma_read_oversub = mine.p.cma_read_oversub;
    s->oversubscribed = t->oversubscribed;
    s->cma_cost_milli = mine.p.cma_cost_milli;
    s->members = P;
    /* the owner's choice alone (readers cannot tell how a chunk was written) */
    s->stream_min = nc_cfg_size(NC_CFG_MOVE_STREAM_MIN);
    s->cma_ok = cma_ok;
    s->pid = mine.pid;
    s->mode = mine.p.mode;
    if (s->mode == MV_MODE_CMA && !cma_ok) {
        if (t->rank == 0)
            nc_log(1, t->rank, P,
                   "move: NUMACOLL_MOVE=cma, but single copy is not permitted between the "
                   "members (ptrace scope, container); every block goes through the slots");
        s->mode = MV_MODE_COPY;
    }
    s->slots_off = nc_round_up((MV_CTL_LINES + (size_t)P) * s->line, nc_page_size());
    s->area_stride = nc_round_up(s->slots_off + s->slots * s->slot_stride, nc_page_size());
    /* the eager bytes hold at least a slot's header, a stream's head and P entries */
    size_t need = MV_SLOT_HEADER + MV_HEAD_BYTES + (size_t)P * MV_ENTRY_BYTES;
    size_t eager = mine.p.eager > need ? mine.p.eager : need;
    s->eager = nc_round_up(eager, 64) < s->slot_stride ? nc_round_up(eager, 64) : s->slot_stride;
    size_t total = s->area_stride * (size_t)P;
    int lazy = nc_seg_populate_supported();
    rc = nc_seg_create_collective(t->rank, P, t->allgather, t->oob_ctx, total, 0,
                                  (size_t)t->rank * s->area_stride, s->area_stride,
                                  lazy ? 0 : s->area_stride, t->numa_node,
                                  "the data-movement buffers", &s->seg);
    if (rc != NUMACOLL_OK) {
        state_free(s);
        return rc;
    }
    s->areas = s->seg.base;
    if (!lazy) s->ready = 1;
    /* each member's own policy (its pages and its C are its own: move_internal.h), so not
     * compared. At least slots calls: a member that wrote a stream in each of them has
     * rewritten every slot with a small chunk, so its check finds nothing to wait for.
     * Without populate (before Linux 5.14) the area got all its pages at set-up and
     * mv_state_ready could not get them back: they stay. */
    uint64_t give_back = (uint64_t)nc_cfg_int(NC_CFG_MOVE_GIVE_BACK);
    s->give_back = !lazy ? 0 : give_back && give_back < s->slots ? s->slots : give_back;
    rc = nc_agree(t->rank, P, t->allgather, t->oob_ctx,
                  lazy ? populate_eager(s, t->rank) : NUMACOLL_OK);
    if (rc != NUMACOLL_OK) {
        nc_seg_destroy(&s->seg);
        state_free(s);
        return rc;
    }
    t->move = s;
    *state = s;
    if (t->rank == 0 || nc_verbose() >= 3)
        nc_log(1, t->rank, P,
               "move: buffers %zu bytes (%u slots of %zu bytes per member, %zu of each at "
               "set-up), NUMACOLL_MOVE=%s, single copy %s%s%zu bytes%s",
               total, s->slots, s->chunk, s->eager, nc_cfg_str(NC_CFG_MOVE),
               cma_ok ? "permitted" : "not permitted",
               s->oversubscribed ? ", oversubscribed: used where it saves per read "
               : s->mode == MV_MODE_AUTO ? ", used from " : ", threshold ",
               s->oversubscribed ? s->cma_read_oversub : s->cma_min,
               s->oversubscribed ? " (NUMACOLL_MOVE_CMA_READ_OVERSUB)" : "");
    return NUMACOLL_OK;
}

int nc_move_setup(numacoll_team_t *t)
{
    nc_move_team_t *s = NULL;
    return mv_state_get(t, &s);
}

const char *nc_move_shape_name(nc_move_shape_t shape)
{
    static const char *const names[NC_MOVE_SHAPES] = {"gather", "scatter", "allgather",
                                                      "alltoall"};
    return (unsigned)shape < NC_MOVE_SHAPES ? names[shape] : "?";
}

/* The automatic choice (docs/library.md states it, docs/tuning-notes.md has the
 * measurements), from the bytes each path makes the busiest member of a call with P members
 * and blocks of B bytes move, counting a byte of memcpy as 1 and a byte of process_vm_readv
 * as NUMACOLL_MOVE_CMA_COST (c). Through the slots an owner copies its blocks in and their
 * readers copy them out, the two pipelined on different cores; by single copy the readers
 * alone copy. The busiest member's bytes (copy_units and cma_units below, in B):
 *   gather     slots: the root copies out (P-1)B          single: the root reads (P-1)B
 *   scatter    slots: the root copies in (P-1)B           single: each member reads B
 *   allgather  slots: each copies in B and out (P-1)B     single: each reads (P-1)B
 *   alltoall   slots: each copies in and out (P-1)B each  single: each reads (P-1)B
 * so single copy saves it bytes when c (P-1) < P-1, c < P-1, c (P-1) < P and c < 2
 * respectively. A team that is not oversubscribed takes single copy then for blocks of at
 * least NUMACOLL_MOVE_CMA_MIN. On an oversubscribed team every process_vm_readv costs more
 * than its bytes (the system call, the pinning of the owner's pages, the owner's wait for
 * its readers: a context switch each), and the slots cost their readers time too, as they
 * wait while their owner copies every block in; so there single copy when the bytes it
 * saves the busiest member pay for its reads, one a block (cma_units of them), at
 * NUMACOLL_MOVE_CMA_READ_OVERSUB (R) bytes each:
 *   (copy_units - c cma_units) B >= cma_units R
 * (at P = 8, c = 1.5: scatter from R / 5.5, alltoall from 2R; gather and allgather never).
 * In integers of c x 1000, so that every member decides alike. Depends only on agreed
 * parameters, the call's shape and the block's size. */
static int path_rule(int mode, int cma_ok, size_t cma_min, size_t read_oversub,
                     uint64_t cost_milli, int oversubscribed, nc_move_shape_t shape, int P,
                     size_t bytes, const char **why)
{
    uint64_t members = P > 1 ? (uint64_t)P - 1 : 1;
    uint64_t copy_units = shape == NC_MOVE_ALLGATHER  ? members + 1
                          : shape == NC_MOVE_ALLTOALL ? 2 * members
                                                      : members;
    uint64_t cma_units = shape == NC_MOVE_SCATTER ? 1 : members;
    const char *w;
    int path = MV_PATH_COPY;
    if (bytes == 0)
        w = "an empty block moves nothing (its size goes in the owner's entry)";
    else if (!cma_ok)
        w = "single copy is not permitted between the members (process_vm_readv failed)";
    else if (mode == MV_MODE_CMA)
        w = "NUMACOLL_MOVE=cma", path = MV_PATH_CMA;
    else if (mode == MV_MODE_COPY)
        w = "NUMACOLL_MOVE=copy";
    else if (oversubscribed) {
        if (cost_milli * cma_units >= 1000 * copy_units) {
            w = "the team is oversubscribed, and by NUMACOLL_MOVE_CMA_COST the busiest member is "
                "done sooner through the slots";
        } else {
            /* saved x B >= reads, as B >= the smallest such size (reads below 2^64 for
             * teams of up to 2^20 members at R <= 1 GiB) */
            uint64_t saved = 1000 * copy_units - cost_milli * cma_units;
            uint64_t reads = 1000 * cma_units * (uint64_t)read_oversub;
            if ((uint64_t)bytes < (reads + saved - 1) / saved)
                w = "the team is oversubscribed: by NUMACOLL_MOVE_CMA_COST single copy saves the "
                    "busiest member bytes, but fewer than NUMACOLL_MOVE_CMA_READ_OVERSUB per read";
            else
                w = "the team is oversubscribed: by NUMACOLL_MOVE_CMA_COST single copy saves the "
                    "busiest member at least NUMACOLL_MOVE_CMA_READ_OVERSUB bytes per read",
                path = MV_PATH_CMA;
        }
    } else if (bytes < cma_min)
        w = "under NUMACOLL_MOVE_CMA_MIN";
    else if (cost_milli * cma_units >= 1000 * copy_units)
        w = "at least NUMACOLL_MOVE_CMA_MIN, but by NUMACOLL_MOVE_CMA_COST the busiest member "
            "is done sooner through the slots";
    else
        w = "at least NUMACOLL_MOVE_CMA_MIN, and by NUMACOLL_MOVE_CMA_COST the busiest member "
            "is done sooner by single copy",
        path = MV_PATH_CMA;
    if (why) *why = w;
    return path;
}

int mv_path_of(const nc_move_team_t *s, nc_move_shape_t shape, size_t bytes)
{
    return path_rule(s->mode, s->cma_ok, s->cma_min, s->cma_read_oversub, s->cma_cost_milli,
                     s->oversubscribed, shape, s->members, bytes, NULL);
}

const char *nc_move_path_explain(const numacoll_team_t *t, nc_move_shape_t shape, size_t bytes,
                                 int cma_ok, const char **why, int *streamed)
{
    int path = path_rule(mode_from_config(), cma_ok, nc_cfg_size(NC_CFG_MOVE_CMA_MIN),
                         nc_cfg_size(NC_CFG_MOVE_CMA_READ_OVERSUB),
                         cost_milli(nc_cfg_double(NC_CFG_MOVE_CMA_COST)), t->oversubscribed,
                         shape, t->size, bytes, why);
    if (streamed)
        *streamed = path == MV_PATH_COPY && bytes && bytes >= nc_cfg_size(NC_CFG_MOVE_STREAM_MIN);
    return mv_paths[path].name;
}

uint64_t nc_move_calls(const numacoll_team_t *t)
{
    return t && t->move ? t->move->calls : 0;
}

int nc_move_uses_cma(const numacoll_team_t *t, nc_move_shape_t shape, size_t bytes)
{
    return t && t->move && t->size > 1 && mv_path_of(t->move, shape, bytes) == MV_PATH_CMA;
}

void nc_move_team_fini(numacoll_team_t *t)
{
    nc_move_team_t *s = t ? t->move : NULL;
    if (!s) return;
    nc_seg_destroy(&s->seg);
    state_free(s);
    t->move = NULL;
}
