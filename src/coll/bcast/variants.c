/*
 * The broadcast's named variants (numacoll_bcast_with): each forces one per-call option of
 * nc_bcast_opts_t and leaves the others at the team's choice, so that a benchmark or a test
 * can measure one tree, the CMA path, one copy mode or one inline hint against the default.
 * Every variant runs nc_bcast_run_opts, the general path of a call, not the default call's
 * shortcut (nc_bcast_run).
 */
#include "bcast.h"

#include <stdio.h>
#include <string.h>

/* the per-call option a variant forces */
typedef enum variant_field {
    FORCE_TREE,      /* nc_bcast_opts_t.tree = value (nc_bcast_tree_kind_t) */
    FORCE_CMA,       /* .cma_min = value: the CMA path from that many bytes on */
    FORCE_COPY_MODE, /* .copy_mode = value: bit 0 root streams, bit 1 receivers stream */
    FORCE_DEMOTE,    /* .demote = value: the inline path's cache hint off (0) or on (1) */
    FORCE_PREFETCH   /* .prefetch = value: the inline path's write prefetch off or on */
} variant_field_t;

typedef struct bcast_variant {
    const char *name;
    variant_field_t field;
    int value;
} bcast_variant_t;

/* The trees come first, at their nc_bcast_tree_kind_t index, each named "tree:" and its
 * name in nc_bcast_tree_names (test_bcast_variants checks that the two lists agree). */
static const bcast_variant_t variants[] = {
    [NC_BTREE_KARY] = {"tree:kary", FORCE_TREE, NC_BTREE_KARY},
    [NC_BTREE_KNOMIAL] = {"tree:knomial", FORCE_TREE, NC_BTREE_KNOMIAL},
    [NC_BTREE_FLAT] = {"tree:flat", FORCE_TREE, NC_BTREE_FLAT},
    [NC_BTREE_CHAIN] = {"tree:chain", FORCE_TREE, NC_BTREE_CHAIN},
    [NC_BTREE_TOPO] = {"tree:topo", FORCE_TREE, NC_BTREE_TOPO},
    /* receivers read the root's buffer with process_vm_readv whatever the size */
    [NC_BTREE_COUNT] = {"cma", FORCE_CMA, 1},
    /* the queue path's copy mode for every message above the inline limit */
    {"copy:plain", FORCE_COPY_MODE, 0},
    {"copy:stream-root", FORCE_COPY_MODE, 1},
    {"copy:stream-recv", FORCE_COPY_MODE, 2},
    {"copy:stream", FORCE_COPY_MODE, 3},
    /* the inline path's hints (NUMACOLL_BCAST_DEMOTE, NUMACOLL_BCAST_PREFETCH) */
    {"demote:off", FORCE_DEMOTE, 0},
    {"demote:on", FORCE_DEMOTE, 1},
    {"prefetch:off", FORCE_PREFETCH, 0},
    {"prefetch:on", FORCE_PREFETCH, 1},
};
enum { NVARIANTS = sizeof variants / sizeof *variants };

const char *numacoll_bcast_variant_name(int i)
{
    return i >= 0 && i < NVARIANTS ? variants[i].name : NULL;
}

/* "tree:kary, tree:knomial, ..." */
static const char *allowed_names(void)
{
    static char buf[512];
    if (!buf[0]) {
        size_t o = 0;
        for (int i = 0; i < NVARIANTS && o < sizeof buf; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? ", " : "", variants[i].name);
    }
    return buf;
}

int nc_bcast_variant_opts(const char *name, nc_bcast_opts_t *o)
{
    const bcast_variant_t *v = NULL;
    for (int i = 0; i < NVARIANTS && !v; i++)
        if (name && !strcmp(name, variants[i].name)) v = &variants[i];
    if (!v)
        return nc_error(NUMACOLL_ERR_NOT_FOUND, "broadcast variant '%s' is unknown; allowed: %s",
                        name ? name : "(null)", allowed_names());
    *o = (nc_bcast_opts_t)NC_BCAST_OPTS_DEFAULT;
    switch (v->field) {
    case FORCE_TREE:
        o->tree = v->value;
        break;
    case FORCE_CMA:
        o->cma_min = v->value;
        break;
    case FORCE_COPY_MODE:
        o->copy_mode = v->value;
        break;
    case FORCE_DEMOTE:
        o->demote = v->value;
        break;
    case FORCE_PREFETCH:
        o->prefetch = v->value;
        break;
    }
    return NUMACOLL_OK;
}
