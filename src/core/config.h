/*
 * The configuration table (config.c): every NUMACOLL_* environment variable is one row,
 * and every layer defines the rows of its own variables in its config_rows.c:
 *
 *     src/core/config_rows.c           core (waits, segments, diagnostics)
 *     src/topo/config_rows.c           topology (and NUMACOLL_BARRIER_TOPO_LEVELS, which
 *                                      the topology layer reads to build the groups)
 *     src/coll/barrier/config_rows.c   barrier
 *     src/coll/bcast/config_rows.c     broadcast
 *     src/coll/reduce/config_rows.c    allreduce and reduce
 *     src/coll/move/config_rows.c      gather, scatter, alltoall (data movement)
 *     src/kvdb/config_rows.c           key-value store
 *     src/team/config_rows.c           the MPI layer (libnumacoll_mpi), kept in libnumacoll
 *                                      so that every process validates them
 *
 * A rows file registers its rows with the table when the library is loaded
 * (NC_CFG_REGISTER: a constructor), so this base layer knows no upper layer's code. The
 * names below are the only list of all variables: they give each one its id (checked at
 * compile time: nc_cfg_int(NC_CFG_TIMEOUT)), the order in which numacoll-info lists them,
 * and the set of names the environment check accepts.
 *
 * To add a tunable: its name in NC_CFG_VARIABLES (in its layer's group), its row in its
 * layer's config_rows.c, and `numacoll-info --markdown > docs/tuning.md`.
 */
#ifndef NC_CONFIG_H
#define NC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* Every variable, NUMACOLL_ + the name, in the order numacoll-info lists them. */
#define NC_CFG_VARIABLES(X)                                                                        \
    /* core: src/core/config_rows.c */                                                             \
    X(VERBOSE)                                                                                     \
    X(TIMEOUT)                                                                                     \
    X(CACHELINE)                                                                                   \
    X(WAIT_SPIN)                                                                                   \
    X(WAIT_SLEEP_AFTER_US)                                                                         \
    X(WAIT_FUTEX_AFTER_US)                                                                         \
    X(OVERSUBSCRIBED)                                                                              \
    X(PROGRESS_US)                                                                                 \
    X(NUMA_BIND)                                                                                   \
    X(SHM_BACKEND)                                                                                 \
    X(SHM_HUGEPAGES)                                                                               \
    X(SHM_MAX)                                                                                     \
    /* topology: src/topo/config_rows.c */                                                         \
    X(TOPO_SYNTHETIC)                                                                              \
    X(TOPO_MAP_BY)                                                                                 \
    /* barrier: src/coll/barrier/config_rows.c (TOPO_LEVELS: src/topo/config_rows.c) */            \
    X(BARRIER)                                                                                     \
    X(BARRIER_TOPO_LEVELS)                                                                         \
    X(BARRIER_TREE_K)                                                                              \
    X(BARRIER_LOGP_L)                                                                              \
    X(BARRIER_LOGP_OS)                                                                             \
    X(BARRIER_LOGP_OR)                                                                             \
    X(BARRIER_LOGP_G)                                                                              \
    /* broadcast: src/coll/bcast/config_rows.c */                                                  \
    X(BCAST_QUEUE_BYTES)                                                                           \
    X(BCAST_FRAGMENT)                                                                              \
    X(BCAST_MODEL_T)                                                                               \
    X(BCAST_MODEL_TW)                                                                              \
    X(BCAST_SLOTS)                                                                                 \
    X(BCAST_SETS)                                                                                  \
    X(BCAST_TREE)                                                                                  \
    X(BCAST_K)                                                                                     \
    X(BCAST_INLINE_MAX)                                                                            \
    X(BCAST_DEMOTE)                                                                                \
    X(BCAST_PREFETCH)                                                                              \
    X(BCAST_CMA_MIN)                                                                               \
    X(BCAST_STREAM_MIN)                                                                            \
    X(BCAST_STREAM_OUT_MIN)                                                                        \
    X(BCAST_ROTATE)                                                                                \
    X(BCAST_CHECK)                                                                                 \
    X(BCAST_ADAPT)                                                                                 \
    X(BCAST_ADAPT_OVERSUB)                                                                         \
    X(BCAST_RELAY)                                                                                 \
    X(BCAST_POPULATE)                                                                              \
    X(BCAST_GIVE_BACK)                                                                             \
    /* reductions: src/coll/reduce/config_rows.c */                                                \
    X(ALLREDUCE)                                                                                   \
    X(REDUCE)                                                                                      \
    X(REDUCE_FLAT_MAX)                                                                             \
    X(REDUCE_FRAGMENT)                                                                             \
    X(REDUCE_SLOTS)                                                                                \
    X(REDUCE_STREAM)                                                                               \
    X(REDUCE_STREAM_MIN)                                                                           \
    X(REDUCE_EAGER)                                                                                \
    X(REDUCE_GIVE_BACK)                                                                            \
    /* data movement (gather, scatter, alltoall): src/coll/move/config_rows.c */                   \
    X(MOVE)                                                                                        \
    X(MOVE_CMA_MIN)                                                                                \
    X(MOVE_CMA_READ_OVERSUB)                                                                       \
    X(MOVE_CMA_COST)                                                                               \
    X(MOVE_FRAGMENT)                                                                               \
    X(MOVE_SLOTS)                                                                                  \
    X(MOVE_EAGER)                                                                                  \
    X(MOVE_GIVE_BACK)                                                                              \
    X(MOVE_STREAM_MIN)                                                                             \
    /* key-value store: src/kvdb/config_rows.c */                                                  \
    X(KVDB_LOCK)                                                                                   \
    X(KVDB_MAX_READERS)                                                                            \
    X(KVDB_BUCKETS)                                                                                \
    X(KVDB_HEAP)                                                                                   \
    X(KVDB_GROW)                                                                                   \
    X(KVDB_MAX_SIZE)                                                                               \
    X(KVDB_MAX_VALUE)                                                                              \
    /* MPI layer (libnumacoll_mpi): src/team/config_rows.c */                                      \
    X(DISABLE)                                                                                     \
    X(FAKE_NODES)                                                                                  \
    X(MPI_BCAST)                                                                                   \
    X(MPI_REDUCE)                                                                                  \
    X(MPI_GATHER)                                                                                  \
    X(MPI_STATS)                                                                                   \
    X(MPI_SETUP_AFTER)                                                                             \
    X(MPI_SETUP_AFTER_OVERSUB)                                                                     \
    X(MPI_TEAM_CACHE)                                                                              \
    X(MPI_TEAM_CACHE_QUEUE)

/* NC_CFG_VERBOSE, NC_CFG_TIMEOUT, ...: the ids of the variables */
typedef enum nc_cfg_id {
#define NC_CFG_ID_(name) NC_CFG_##name,
    NC_CFG_VARIABLES(NC_CFG_ID_)
#undef NC_CFG_ID_
        NC_CFG_COUNT
} nc_cfg_id_t;

typedef enum nc_cfg_type {
    NC_CFG_TYPE_BOOL,
    NC_CFG_TYPE_INT,
    NC_CFG_TYPE_SIZE, /* bytes; accepts K, M, G suffixes (powers of 1024) */
    NC_CFG_TYPE_DOUBLE,
    NC_CFG_TYPE_ENUM, /* one of allowed ("a|b|c") */
    NC_CFG_TYPE_LIST, /* comma-separated subset of allowed ("a|b|c"), no repeats */
    NC_CFG_TYPE_STRING
} nc_cfg_type_t;

/* One row: what a variable is. Its name is NUMACOLL_ + its id's name. */
typedef struct nc_cfg_def {
    nc_cfg_id_t id;
    nc_cfg_type_t type;
    const char *defval;
    /* ENUM/LIST: "a|b|c"; INT/SIZE/DOUBLE: "min..max" (or "0|min..max"); STRING: free
     * text for the documentation */
    const char *allowed;
    /* instead of allowed: the allowed values computed at run time ("a|b|c"), e.g. the
     * names of a registry */
    const char *(*allowed_fn)(void);
    /* help: one or two sentences that say what the allowed values mean (at most
     * NC_CFG_DOC_MAX characters; the measurements behind a default go to
     * docs/tuning-notes.md) */
    const char *doc;
} nc_cfg_def_t;

#define NC_CFG_DOC_MAX 300

/** Add rows to the table (NC_CFG_REGISTER does it at load time). @p layer names the rows
 *  file in messages. A row whose id another rows file registered already is a
 *  programming error and aborts. */
void nc_cfg_register(const char *layer, const nc_cfg_def_t *rows, int n);

/*
 * In a layer's config_rows.c, after its rows: register them when the library is loaded,
 * and define the symbol nc_cfg_rows_<layer> that NC_CFG_LINK refers to.
 */
#define NC_CFG_REGISTER(layer, rows)                                                               \
    extern const char nc_cfg_rows_##layer __attribute__((visibility("hidden")));                   \
    const char nc_cfg_rows_##layer = 1;                                                            \
    __attribute__((constructor)) static void nc_cfg_register_##layer(void)                         \
    {                                                                                              \
        nc_cfg_register(#layer, rows, (int)(sizeof(rows) / sizeof((rows)[0])));                    \
    }

/*
 * In the header of a layer (and wherever a program reads a layer's variables without
 * including it): every object file that includes it refers to the layer's rows file, so
 * that a program linked with libnumacoll.a gets (and validates) the rows of each layer it
 * uses. The shared libraries contain every rows file anyway.
 */
#define NC_CFG_LINK(layer)                                                                         \
    extern const char nc_cfg_rows_##layer __attribute__((visibility("hidden")));                   \
    __attribute__((used)) static const char *const nc_cfg_link_##layer = &nc_cfg_rows_##layer

/* Getters: the validated environment value, or the row's default. Each takes the id of a
 * row of its type (nc_cfg_str: of any type, as text); a row that is not linked in, or of
 * another type, is a programming error and aborts. */
long nc_cfg_int(nc_cfg_id_t id);
size_t nc_cfg_size(nc_cfg_id_t id);
double nc_cfg_double(nc_cfg_id_t id);
bool nc_cfg_bool(nc_cfg_id_t id);
const char *nc_cfg_str(nc_cfg_id_t id); /* ENUM, LIST, STRING (and others as text) */
/** True if the variable is set in the environment (and valid). */
bool nc_cfg_is_set(nc_cfg_id_t id);
/** "NUMACOLL_<name>" of an id. */
const char *nc_cfg_name(nc_cfg_id_t id);
/** The row of an id, NULL if this program does not contain it (libnumacoll.a: a layer
 *  the program does not use). */
const nc_cfg_def_t *nc_cfg_row(nc_cfg_id_t id);
/** Validate one value for one row; on failure returns NUMACOLL_ERR_CONFIG with a message. */
int nc_cfg_validate(nc_cfg_id_t id, const char *value);
/** Test whether a comma-separated LIST value contains @p item. */
bool nc_cfg_list_has(const char *list, const char *item);

#endif
