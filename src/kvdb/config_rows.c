/*
 * The key-value store's configuration rows.
 * Help texts: one or two sentences that say what the allowed values mean (config.h);
 * the measurements behind the defaults are in docs/tuning-notes.md.
 */
#include "locks/lock.h"

static const nc_cfg_def_t rows[] = {
    {.id = NC_CFG_KVDB_LOCK,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "seqlock",
     .allowed_fn = nc_kvlock_allowed_names,
     .doc = "reader/writer lock scheme of the key-value store (paper 4): rwlock, 1n-mutex, "
            "2n-mutex (OpenPMIx ds21), n-mutex-signal (the paper's), seqlock or reader-flags "
            "(ours)"},
    {.id = NC_CFG_KVDB_MAX_READERS,
     .type = NC_CFG_TYPE_INT,
     .defval = "64",
     .allowed = "1..4096",
     .doc = "reader slots of a key-value store (mutex schemes: the writer locks one mutex per "
            "slot)"},
    {.id = NC_CFG_KVDB_BUCKETS,
     .type = NC_CFG_TYPE_INT,
     .defval = "1024",
     .allowed = "8..1073741824",
     .doc = "initial hash buckets of a key-value store (rounded up to a power of two)"},
    {.id = NC_CFG_KVDB_HEAP,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "1M",
     .allowed = "1K..64G",
     .doc = "initial entry heap of a key-value store (keys + values + 24 bytes per entry)"},
    {.id = NC_CFG_KVDB_GROW,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "1",
     .allowed = "0|1",
     .doc = "grow a full key-value store into a new, larger segment generation (0 = fail with "
            "NUMACOLL_ERR_FULL)"},
    {.id = NC_CFG_KVDB_MAX_SIZE,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "4G",
     .allowed = "4K..1024G",
     .doc = "largest data segment a key-value store may grow to"},
    {.id = NC_CFG_KVDB_MAX_VALUE,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "16M",
     .allowed = "0..1G",
     .doc = "longest value numacoll_kvdb_put accepts (NUMACOLL_ERR_TOOBIG above)"},
};

NC_CFG_REGISTER(kvdb, rows)
