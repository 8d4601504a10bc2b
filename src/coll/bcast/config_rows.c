/*
 * The broadcast layer's configuration rows.
 */
#include "../../core/nc_internal.h"

static const nc_cfg_def_t rows[] = {
    {.id = NC_CFG_BCAST_QUEUE_BYTES,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "0",
     .allowed = "0|65536..268435456",
     .doc = "queue budget b = s*f per process for the pipelined broadcast; 0 = auto: 4 MiB (the "
            "paper's), 8 MiB when the team is oversubscribed (np=8 on 2 CPUs, Open MPI, 3 runs: "
            "4 MiB broadcasts 0.75-1.33x native with 4 MiB, 0.74-0.87x with 8 MiB); the slot "
            "count is cut so that all P queues take at most half of the free /dev/shm"},
    {.id = NC_CFG_BCAST_FRAGMENT,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "0",
     .allowed = "0..67108864",
     .doc = "fragment (slot) size f, rounded up to a page; 0 = the paper's model: f* = sqrt(b "
            "t_W / t) rounded up to a page, at most b / (2q) so that the model's s >= 2q "
            "buffers fit the budget, and a message m < b is cut into fragments of sqrt(m t_W / "
            "t), with t and t_W from NUMACOLL_BCAST_MODEL_T / _TW; a set f is used as is"},
    {.id = NC_CFG_BCAST_MODEL_T,
     .type = NC_CFG_TYPE_DOUBLE,
     .defval = "0",
     .allowed = "0..1000",
     .doc = "the model's t in nanoseconds per byte copied; 0 = measured once per process at its "
            "first broadcast (best of 3 memcpy runs of 1 MiB, in cache like the queue's "
            "fragments); every member of a team uses rank 0's value; oversubscribed teams use "
            "0.1 unless set"},
    {.id = NC_CFG_BCAST_MODEL_TW,
     .type = NC_CFG_TYPE_DOUBLE,
     .defval = "0",
     .allowed = "0..100000000",
     .doc = "the model's t_W, nanoseconds a receiver waits for one notification; 0 = measured "
            "at each team's first broadcast: the median of 5 batches of 4 team barriers, per "
            "barrier, divided by ceil(log2 P), the notification rounds of a barrier (a mean of "
            "all of them carried the members' arrival skew and preemption: once 12.9 us instead "
            "of ~0.24 us); a median above 100 us is taken as disturbed (once 5.5 ms here) and "
            "measured again, at most 3 times, then 200 is used; every member uses rank 0's "
            "value. Oversubscribed teams use 200 unless set (a barrier there measures the "
            "scheduler: t_W = 2.2 us at P = 8 on 2 CPUs, whose fragments of 644 KiB made 64-128 "
            "KiB broadcasts 2x slower). t_WO = 2 t_W and t_A = 0.2 t_W (the paper's ratios)"},
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
     .defval = "4096",
     .allowed = "0..4096",
     .doc = "messages up to this size travel inline in the receivers' control lines (one copy "
            "in, one out, no buffer slot); 0 = never. Measured at np = 2 (Open MPI, against its "
            "best native broadcast in the same runs, 3 launches each): 2 KiB inline 0.76-0.81x, "
            "through the queue 0.94-1.03x (0.69x against 1.47-1.59x when the VM's two vCPUs "
            "share a core's caches); 4 KiB inline 0.73-0.76x, queue 0.92-1.02x; 8 KiB inline "
            "0.79-0.81x, queue 0.65-0.72x (hence at most 4 KiB); P = 8 on 2 CPUs, 2-4 KiB: "
            "0.26-0.36x either way. (An earlier VM measured 2 KiB inline 0.80x, queue 0.71x, "
            "and the default was 1 KiB)"},
    {.id = NC_CFG_BCAST_DEMOTE,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "0",
     .allowed = "0|1",
     .doc = "1: after writing an inline message's payload lines beyond the stamp's line, the "
            "root (and each forwarding tree node) hints with CLDEMOTE (x86; a NOP on CPUs "
            "without it, nothing elsewhere) that they may move from its core's caches to the "
            "shared L3. Off by default because it depends on where the receiver runs. Measured "
            "at np = 2 (Open MPI, variants demote:on / demote:off and limit:inline with and "
            "without it, same runs): with the two vCPUs on different cores, receivers 10-15 % "
            "faster at 64 B - 1 KiB; with them sharing a core's caches (the VM's other regime), "
            "1.6-1.9x slower at 128 B - 1 KiB, because the lines leave the cache both use; in "
            "one make bench run (the regimes mixed) demote:on was 1.5 % faster at 1 KiB and "
            "3-13 % slower at 64-512 B. No change up to 48 B (the payload fits the stamp's "
            "line, which the receiver polls and is not demoted). Inline messages only: on the "
            "queue path it doubled the root's time at 2-64 KiB without speeding the receivers"},
    {.id = NC_CFG_BCAST_PREFETCH,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "1",
     .allowed = "0|1",
     .doc = "1: before writing an inline message's payload lines beyond the stamp's line, the "
            "root (and each forwarding tree node) prefetches them for writing (x86 PREFETCHW), "
            "so that the receivers' shared copies of them are invalidated together rather than "
            "one store at a time, before the stamp can be published. Measured at np = 2 (Open "
            "MPI, 8 interleaved launches each way, default call, against the best native of the "
            "same launch): 512 B 0.68 -> 0.64x, 1 KiB 0.76 -> 0.70x, 2 KiB 0.83 -> 0.80x, 4 KiB "
            "0.77 -> 0.73x (the receivers' time 1 KiB 680 -> 581 ns, 4 KiB 1322 -> 1199 ns), "
            "unchanged up to 256 B; in another series of 8, 1 KiB 0.79 -> 0.67x. On the queue "
            "path it cost the root time and gained the receivers 3-10 % at 4-16 KiB, so it "
            "applies to inline messages only"},
    {.id = NC_CFG_BCAST_CMA_MIN,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "0",
     .allowed = "0..1073741824",
     .doc = "messages of at least this size are read by every receiver straight from the root's "
            "buffer with process_vm_readv (CMA) when the kernel allows it; 0 = never (the "
            "default: on the reference VM CMA was slower than the queues below 256 KiB and, "
            "under load, above; only in quiet best cases was it ~15 % faster at 1-4 MiB)"},
    {.id = NC_CFG_BCAST_STREAM_MIN,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "16K",
     .allowed = "0..1073741824",
     .doc = "queue messages of at least this size are written into the root's queue with "
            "non-temporal stores (receivers then read them from L3/memory instead of snooping "
            "dirty lines out of the root's cache); 0 = never. Measured at np=2 on the reference "
            "VM, plain vs streamed root copy (receiver plain): 16 KiB 6.9 vs 2.1 us, 64 KiB "
            "10.3 vs 5.9, 256 KiB 35 vs 18, 1 MiB 70 vs 72, 2 MiB 3286 vs 101 (dirty-line "
            "pathology); 8 KiB and below plain wins (0.7 vs 1.7 us). Unset and the team "
            "oversubscribed, STREAM_OUT_MIN applies instead (the root streams only where its "
            "receivers stream too): at P = 8 on 2 CPUs (Open MPI, 3 launches, against its "
            "native) 32-128 KiB plain 0.58-0.77x, streamed root 0.78-1.07x; 256-512 KiB both "
            "sides streamed 0.54-0.65x, plain 0.69-0.83x"},
    {.id = NC_CFG_BCAST_STREAM_OUT_MIN,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "256K",
     .allowed = "0..1073741824",
     .doc = "queue messages of at least this size are also copied out by the receivers with "
            "non-temporal stores; 0 = never. Measured at np=2 (interleaved, median of 9, us), "
            "both sides / root only / receivers only / neither: 128 KiB 26 / 24 / 31 / 27, 256 "
            "KiB 41 / 52 / 57 / 42, 1 MiB 150 / 258 / 738 / 306, 4 MiB 269 / 468 / 1361 / 653 "
            "(receivers alone are bad: pair it with STREAM_MIN <= this)"},
    {.id = NC_CFG_BCAST_ROTATE,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "1",
     .allowed = "0|1",
     .doc = "successive uses of a queue set put their fragments at rotating offsets inside the "
            "set, so a message smaller than the set does not rewrite lines the receivers still "
            "cache (the root would invalidate them on every write); all members must agree. "
            "np=2, median of 9, us, plain copies rotating vs not: 32 KiB 8.0 vs 10.7, 64 KiB "
            "15.6 vs 22.9, 128 KiB 30 vs 41, 256 KiB 42 vs 60; with the default streamed root "
            "copy equal or better. Not used when the team is oversubscribed (P = 8 on 2 CPUs: "
            "2-10 % slower at 64-256 KiB). Up to 16 KiB NUMACOLL_BCAST_ADAPT may turn it off "
            "per size class (the AMD VM, Open MPI np = 2: 8 and 16 KiB 10-13 % faster without "
            "in one of its two regimes, 5-8 % slower in the other)"},
    {.id = NC_CFG_BCAST_CHECK,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "0",
     .allowed = "0|1",
     .doc = "compare every broadcast's root, size and per-call options across the members "
            "before any data moves (one extra barrier per broadcast; a debugging aid): a "
            "mismatch fails on every member with NUMACOLL_ERR_ARG (MPI: MPI_ERR_ROOT or "
            "MPI_ERR_TRUNCATE) naming the member that differs, and nobody's buffer changes. "
            "Off, a receiver with another size or root still fails, but a member that passes "
            "itself as the root is not detected; all members must agree (MPI: members that "
            "differ keep the communicator native). MPI hierarchical mode: plus one native "
            "reduction over the whole communicator per broadcast, so that members of different "
            "nodes are compared too"},
    {.id = NC_CFG_BCAST_ADAPT,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "1",
     .allowed = "0|1",
     .doc = "from STREAM_MIN on, the root picks the copy mode per log2 size class (plain or "
            "streamed root stores; from STREAM_OUT_MIN on, also streamed receiver stores) from "
            "the members' mean time in runs of its broadcasts, each member reporting its own "
            "time without making the root wait: a run is one pass of the class's messages "
            "through the whole queue in its mode, unmeasured, then 256 KiB / size calls (1..16) "
            "measured as one sample; each mode twice, those within 2x of the best once more, "
            "then one run in 256 of another mode (one more than 2x slower every 4th time) and "
            "one of the best; the best changes to a mode whose median of its last 4 samples is "
            "10 % lower (until every mode has had its first runs, the lowest estimate wins "
            "outright); the thresholds give the first choice and decide alone when this is off "
            "or the team is oversubscribed. Chosen the same way: a message of 2 KiB + 1 .. 8 "
            "KiB in two halves or in the model's one fragment (not with NUMACOLL_BCAST_FRAGMENT "
            "set), and up to 16 KiB, each mode also without rotating offsets (with "
            "NUMACOLL_BCAST_ROTATE on)"},
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
            "far as the member's messages reach into it, at least 256 KiB more at a time (a "
            "communicator that broadcasts only small messages never pays for its queue; "
            "measured np=2, 4 MiB queue: a new communicator's first small broadcast took "
            "3.4-4.3 ms with creation, see README), creation = all of it when the queues are "
            "set up (the first broadcast). first-use needs Linux >= 5.14 (MADV_POPULATE_WRITE), "
            "else creation applies; with the NUMA relay it is creation too. A queue that cannot "
            "get its memory makes that broadcast return NUMACOLL_ERR_UNSUPPORTED on every "
            "member (the MPI layer then uses the MPI's own broadcast for the communicator)"},
};

NC_CFG_REGISTER(bcast, rows)
