/*
 * numacoll-info --explain, its data-movement part: the path a block of a given size takes
 * in gather, scatter, allgather, alltoall and their v-forms on the planned team, and why,
 * from the library's own rule (nc_move_path_explain).
 */
#include "core/nc_internal.h" /* first: _GNU_SOURCE */
#include "coll/move/move.h"

#include <stdio.h>
#include <string.h>
#include "explain_internal.h"

/* the rule's figures for one block of @p m bytes in collectives of @p shape: facts, and a
 * table cell (@p table: the path, with @p *stores set) or a paragraph */
static const char *explain_block(const numacoll_team_t *t, nc_move_shape_t shape,
                                 unsigned long long m, int table, const char **stores)
{
    const char *why, *why_no_cma;
    int streamed, streamed_no_cma;
    const char *name = nc_move_shape_name(shape);
    const char *path = nc_move_path_explain(t, shape, (size_t)m, 1, &why, &streamed);
    const char *path_no_cma = nc_move_path_explain(t, shape, (size_t)m, 0, &why_no_cma,
                                                   &streamed_no_cma);
    const char *st = m == 0 || strcmp(path, "copy") != 0 ? "-" : streamed ? "nt" : "plain";
    fact(kf("move.%s.%llu.path", name, m), 0, "%s", path);
    fact(kf("move.%s.%llu.path_if_no_cma", name, m), 0, "%s", path_no_cma);
    fact(kf("move.%s.%llu.owner_stores", name, m), 0, "%s", st);
    if (stores) *stores = st;
    if (table) return path;
    hp(0, 2, "\na block of %llu bytes in %s (and its v-form)", m, name);
    hp(2, 4, "path: %s: %s%s", path, why,
       path == path_no_cma ? "" : "; copy where single copy is not permitted (probed at set-up)");
    if (m && path != path_no_cma)
        hp(2, 4, "without single copy its owner would write it into its slots with %s stores",
           streamed_no_cma ? "non-temporal" : "plain");
    else if (m && streamed)
        hp(2, 4, "its owner writes it into its slots with non-temporal stores (at least "
                 "NUMACOLL_MOVE_STREAM_MIN): they replace the lines its readers cached from the "
                 "slot's previous chunk without taking them back one at a time");
    else if (m)
        hp(2, 4, "its owner writes it into its slots with plain stores (under "
                 "NUMACOLL_MOVE_STREAM_MIN)");
    return path;
}

void explain_move(const numacoll_team_t *t, int bytes_set, unsigned long long bytes)
{
    size_t fragment = nc_round_up(nc_cfg_size(NC_CFG_MOVE_FRAGMENT), 64);
    long slots = nc_cfg_int(NC_CFG_MOVE_SLOTS);
    fact("move.mode", 0, "%s", nc_cfg_str(NC_CFG_MOVE));
    fact("move.cma_min", 1, "%zu", nc_cfg_size(NC_CFG_MOVE_CMA_MIN));
    fact("move.cma_read_oversub", 1, "%zu", nc_cfg_size(NC_CFG_MOVE_CMA_READ_OVERSUB));
    fact("move.stream_min", 1, "%zu", nc_cfg_size(NC_CFG_MOVE_STREAM_MIN));
    fact("move.fragment", 1, "%zu", fragment);
    fact("move.slots", 1, "%ld", slots);
    hp(0, 2, "\ndata movement (gather, scatter, allgather, alltoall and their v-forms; "
             "NUMACOLL_MOVE=%s): every block has one owner; path copy: the owner streams it "
             "through %ld slots of %zu bytes in its NUMA-local memory and its readers copy it "
             "out (two copies, pipelined); path cma: the readers copy it straight from the "
             "owner's buffer with process_vm_readv if the members may (probed at set-up; else "
             "copy), and the owner returns once they are done; NUMACOLL_MOVE_CMA_MIN %zu, "
             "NUMACOLL_MOVE_CMA_READ_OVERSUB %zu (%s), NUMACOLL_MOVE_STREAM_MIN %zu bytes",
       nc_cfg_str(NC_CFG_MOVE), slots, fragment, nc_cfg_size(NC_CFG_MOVE_CMA_MIN),
       nc_cfg_size(NC_CFG_MOVE_CMA_READ_OVERSUB),
       t->oversubscribed ? "this team is oversubscribed: it applies" : "oversubscribed teams",
       nc_cfg_size(NC_CFG_MOVE_STREAM_MIN));
    if (bytes_set) {
        for (int sh = 0; sh < NC_MOVE_SHAPES; sh++)
            explain_block(t, (nc_move_shape_t)sh, bytes, 0, NULL);
        return;
    }
    static const unsigned long long sizes[] = {0,     1024,   8192,    16384,
                                               65536, 262144, 1048576, 16777216};
    hp(0, 2, "\ndata movement by block size (--bytes M for one size in detail)");
    hp(2, 4, "%-11s %-9s %-9s %-9s %-9s %s", "bytes", "gather", "scatter", "allgather",
       "alltoall", "owner");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const char *path[NC_MOVE_SHAPES], *stores = "-";
        for (int sh = 0; sh < NC_MOVE_SHAPES; sh++) {
            const char *st;
            path[sh] = explain_block(t, (nc_move_shape_t)sh, sizes[i], 1, &st);
            if (strcmp(st, "-") != 0) stores = st;
        }
        hp(2, 4, "%-11llu %-9s %-9s %-9s %-9s %s", sizes[i], path[0], path[1], path[2], path[3],
           stores);
    }
    hp(2, 4, "owner: how an owner writes a block of that size into its slots (copy path): plain "
             "stores, or nt (non-temporal) from NUMACOLL_MOVE_STREAM_MIN; NUMACOLL_MOVE=auto "
             "takes single copy from NUMACOLL_MOVE_CMA_MIN where NUMACOLL_MOVE_CMA_COST (%.2f) "
             "says the busiest member is done sooner, on an oversubscribed team where the bytes "
             "it saves that member pay for its reads at NUMACOLL_MOVE_CMA_READ_OVERSUB each "
             "(--bytes M gives the reason per collective)",
       nc_cfg_double(NC_CFG_MOVE_CMA_COST));
}
