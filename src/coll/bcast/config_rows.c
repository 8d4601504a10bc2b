/*
 * The broadcast layer's configuration rows.
 * Help texts: one or two sentences that say what the allowed values mean (config.h);
 * the measurements behind the defaults are in docs/tuning-notes.md.
 */
#include "../../core/nc_internal.h"

static const nc_cfg_def_t rows[] = {
    {.id = NC_CFG_BCAST_QUEUE_BYTES,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "0",
     .allowed = "0|64K..256M",
     .doc = "queue budget b = s*f per process for the pipelined broadcast; 0 = auto: 4 MiB (the "
            "paper's), 8 MiB when the team is oversubscribed; the slot count is cut so that all "
            "P queues take at most half of the free /dev/shm"},
    {.id = NC_CFG_BCAST_FRAGMENT,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "0",
     .allowed = "0..64M",
     .doc = "fragment (slot) size f, rounded up to a page; 0 = the paper's model: f* = sqrt(b "
            "t_W / t), at most b / (2q), and a message m < b in fragments of sqrt(m t_W / t), "
            "with t and t_W from NUMACOLL_BCAST_MODEL_T / _TW"},
    {.id = NC_CFG_BCAST_MODEL_T,
     .type = NC_CFG_TYPE_DOUBLE,
     .defval = "0",
     .allowed = "0..1000",
     .doc = "the model's t in nanoseconds per byte copied; 0 = measured once per process at its "
            "first broadcast (best of 3 memcpy runs of 1 MiB); every member of a team uses rank "
            "0's value; oversubscribed teams use 0.1 unless set"},
    {.id = NC_CFG_BCAST_MODEL_TW,
     .type = NC_CFG_TYPE_DOUBLE,
     .defval = "0",
     .allowed = "0..100000000",
     .doc = "the model's t_W, nanoseconds a receiver waits for one notification; 0 = measured "
            "with team barriers at each team's first broadcast (rank 0's value for all), or 200 "
            "when the measurement stays disturbed or the team is oversubscribed"},
    {.id = NC_CFG_BCAST_SLOTS,
     .type = NC_CFG_TYPE_INT,
     .defval = "0",
     .allowed = "0..65536",
     .doc = "buffers s per process queue; 0 = model: s* = b / f (at least 2*q)"},
    {.id = NC_CFG_BCAST_SETS,
     .type = NC_CFG_TYPE_INT,
     .defval = "2",
     .allowed = "1..64",
     .doc = "sets q the queue is split into (q > 1 overlaps waiting for a set's readers with "
            "filling the next set); must not exceed s"},
    {.id = NC_CFG_BCAST_TREE,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "auto",
     .allowed = "auto|kary|knomial|flat|chain|topo",
     .doc = "notification tree; topo = root -> NUMA/socket leaders -> members (k-ary inside "
            "each group); auto = topo when the team spans several NUMA nodes, flat when it is "
            "oversubscribed, else kary (with k = 2: binary)"},
    {.id = NC_CFG_BCAST_K,
     .type = NC_CFG_TYPE_INT,
     .defval = "2",
     .allowed = "1..64",
     .doc = "fan-out of the k-ary tree, radix of the k-nomial tree (at least 2) and fan-out "
            "inside the groups of the topo tree"},
    {.id = NC_CFG_BCAST_INLINE_MAX,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "4K",
     .allowed = "0..4K",
     .doc = "messages up to this size travel inline in the receivers' control lines (one copy "
            "in, one out, no buffer slot); 0 = never; at most 4 KiB (at 8 KiB the queue is "
            "faster)"},
    {.id = NC_CFG_BCAST_DEMOTE,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "0",
     .allowed = "0|1",
     .doc = "1 = after writing an inline message's payload lines beyond the stamp's line, the "
            "root and each forwarding tree node hint with CLDEMOTE (x86) that they may move to "
            "the shared L3; 0 = no hint (the default: whether it helps depends on where the "
            "receivers run)"},
    {.id = NC_CFG_BCAST_PREFETCH,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "1",
     .allowed = "0|1",
     .doc = "1 = before writing an inline message's payload lines beyond the stamp's line, the "
            "root and each forwarding tree node prefetch them for writing (x86 PREFETCHW), so "
            "that the receivers' copies are invalidated together; 0 = plain stores"},
    {.id = NC_CFG_BCAST_CMA_MIN,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "0",
     .allowed = "0..1G",
     .doc = "messages of at least this size are read by every receiver straight from the root's "
            "buffer with process_vm_readv (CMA) when the kernel allows it; 0 = never (the "
            "default: on the reference VM CMA was mostly slower than the queues)"},
    {.id = NC_CFG_BCAST_STREAM_MIN,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "16K",
     .allowed = "0..1G",
     .doc = "queue messages of at least this size are written into the root's queue with "
            "non-temporal stores, so that receivers read them from L3/memory, not out of the "
            "root's cache; 0 = never; unset on an oversubscribed team, STREAM_OUT_MIN applies "
            "instead"},
    {.id = NC_CFG_BCAST_STREAM_OUT_MIN,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "256K",
     .allowed = "0..1G",
     .doc = "queue messages of at least this size are also copied out by the receivers with "
            "non-temporal stores; 0 = never; keep NUMACOLL_BCAST_STREAM_MIN at most this "
            "(receivers that stream alone are slow)"},
    {.id = NC_CFG_BCAST_ROTATE,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "1",
     .allowed = "0|1",
     .doc = "1 = successive uses of a queue set put their fragments at rotating offsets, so "
            "that a message smaller than the set does not rewrite lines the receivers still "
            "cache; 0 = each use starts at the set's first slot; all members must agree (not "
            "used on oversubscribed teams)"},
    {.id = NC_CFG_BCAST_CHECK,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "0",
     .allowed = "0|1",
     .doc = "1 = before any data moves, every broadcast compares root, size and per-call "
            "options across the members (one extra barrier; a debugging aid), and a mismatch "
            "fails on every member naming the one that differs; all members must agree"},
    {.id = NC_CFG_BCAST_ADAPT,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "1",
     .allowed = "0|1",
     .doc = "1 = the root picks each size class's copy mode from the members' measured times, "
            "starting from the thresholds' choice (from STREAM_MIN on: plain or streamed "
            "stores; 2 KiB + 1 .. 8 KiB: one fragment or two; up to 16 KiB: with or without "
            "rotation); 0 = the thresholds alone"},
    {.id = NC_CFG_BCAST_ADAPT_OVERSUB,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "0",
     .allowed = "0|1",
     .doc = "NUMACOLL_BCAST_ADAPT also when the team has more processes than CPUs (off by "
            "default: there the times measure the scheduler more than the copies)"},
    {.id = NC_CFG_BCAST_RELAY,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "auto",
     .allowed = "auto|0|1",
     .doc = "NUMA relay: the first receiver of each NUMA node copies fragments into its own "
            "queue and its node reads from there; auto = on when the team spans several NUMA "
            "nodes"},
    {.id = NC_CFG_BCAST_POPULATE,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "first-use",
     .allowed = "first-use|creation",
     .doc = "when a member's broadcast queue gets its memory: first-use = each set of slots as "
            "far as the member's messages reach into it; creation = all of it when the queues "
            "are set up; first-use needs Linux >= 5.14 and no NUMA relay, else creation applies"},
    {.id = NC_CFG_BCAST_GIVE_BACK,
     .type = NC_CFG_TYPE_INT,
     .defval = "1048576",
     .allowed = "0..1073741824",
     .doc = "after this many broadcasts in a row that did not write into its queue, a member "
            "returns the queue's memory once every member has finished the last broadcast that "
            "did (its next queue broadcast gets it again); 0 = never; only with "
            "NUMACOLL_BCAST_POPULATE=first-use in effect"},
};

NC_CFG_REGISTER(bcast, rows)
