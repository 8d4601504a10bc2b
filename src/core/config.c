/*
 * The configuration table: every tunable of numacoll is one row here. Parsing,
 * validation, error messages, the getters and `numacoll-info` all read this table.
 *
 * Rows are grouped by layer. To add a tunable, add one row in its section.
 */
#include "nc_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../coll/barrier/barrier.h"
#include "../kvdb/locks/lock.h"

static const nc_cfg_def_t table[] = {
    /* ---- core ---- */
    {"NUMACOLL_VERBOSE", NC_CFG_INT, "0", "0..3",
     "diagnostics on stderr: 1 = team set-up, hierarchy and choices; 2 = placement checks and, "
     "at a team's end, the broadcast copy-mode selector's choice and samples per size class; "
     "3 = per-call tracing",
     NULL},
    {"NUMACOLL_TIMEOUT", NC_CFG_DOUBLE, "0", "0|1e-9..1000000",
     "seconds a process may wait inside one collective before it fails with an error naming "
     "the members that did not arrive; 0 = wait forever; otherwise at least 1e-9 (1 ns: "
     "waits are counted in whole nanoseconds, and a smaller value would be 0, i.e. forever)",
     NULL},
    {"NUMACOLL_CACHELINE", NC_CFG_ENUM, "auto", "auto|32|64|128|256",
     "padding unit (bytes) that keeps every flag/counter alone; auto = 128 on x86 (adjacent-line "
     "prefetcher), the detected line size elsewhere",
     NULL},
    {"NUMACOLL_WAIT_SPIN", NC_CFG_INT, "-1", "-1..1000000000",
     "pause-instruction spins before a waiting process starts to sched_yield; -1 = auto "
     "(4096, or 0 when the team is oversubscribed)",
     NULL},
    {"NUMACOLL_WAIT_SLEEP_AFTER_US", NC_CFG_INT, "100000", "0..1000000000",
     "after this many microseconds of waiting, nap (50 us growing to 1 ms) between checks "
     "instead of yielding; 0 = never nap",
     NULL},
    {"NUMACOLL_OVERSUBSCRIBED", NC_CFG_ENUM, "auto", "auto|yes|no",
     "treat the team as oversubscribed (more processes than CPUs: yield at once when waiting); "
     "auto = detect from the members' CPU affinity",
     NULL},
    {"NUMACOLL_PROGRESS_US", NC_CFG_INT, "100", "1..1000000",
     "while waiting, call the caller's progress hook (MPI progress) about this often (us)", NULL},
    {"NUMACOLL_NUMA_BIND", NC_CFG_BOOL, "1", "0|1",
     "bind each process's shared block to its NUMA node with libnuma (mbind) before first touch "
     "when the process is bound inside one node",
     NULL},
    {"NUMACOLL_SHM_BACKEND", NC_CFG_ENUM, "auto", "auto|memfd|posix",
     "shared segments: memfd = anonymous, peers open it through /proc/<pid>/fd, no name ever "
     "exists; posix = shm_open name in /dev/shm, unlinked once all attached; auto = memfd, "
     "then posix if peers cannot open /proc of rank 0",
     NULL},
    {"NUMACOLL_SHM_HUGEPAGES", NC_CFG_ENUM, "off", "off|system",
     "transparent huge pages in the shared segments of teams and broadcast queues: off = "
     "MADV_NOHUGEPAGE and pages reserved through that mapping, so each process's block gets "
     "base-size pages on its own node whatever the kernel's shmem_enabled; system = the "
     "kernel's policy (with shmem_enabled=always one 2 MiB page spans several processes' "
     "blocks and lands on the node of whoever touches it first)",
     NULL},
    /* ---- topology ---- */
    {"NUMACOLL_TOPO_SYNTHETIC", NC_CFG_STRING, "", "hwloc synthetic description",
     "plan on this hwloc synthetic topology (e.g. \"pack:2 numa:2 l3:1 core:4 pu:1\") with a "
     "simulated placement (NUMACOLL_TOPO_MAP_BY) instead of the real machine and binding",
     NULL},
    {"NUMACOLL_TOPO_MAP_BY", NC_CFG_ENUM, "core", "core|numa|socket",
     "simulated placement used with NUMACOLL_TOPO_SYNTHETIC: rank r on core r, on NUMA node "
     "r mod #nodes, or on package r mod #packages (next free core there)",
     NULL},
    /* ---- barrier ---- */
    {"NUMACOLL_BARRIER", NC_CFG_ENUM, "auto", NULL,
     "barrier algorithm used by numacoll_barrier / MPI_Barrier; auto = the library's choice",
     nc_barrier_allowed_names},
    {"NUMACOLL_BARRIER_TOPO_LEVELS", NC_CFG_LIST, "numa,socket", "l2|l3|numa|socket",
     "memory-hierarchy levels the topology barrier groups processes by (paper: numa = "
     "shm-topo-NUMA, socket, numa,socket)",
     NULL},
    {"NUMACOLL_BARRIER_TREE_K", NC_CFG_INT, "2", "2..64", "fan-in of the combining-tree barrier",
     NULL},
    {"NUMACOLL_BARRIER_LOGP_L", NC_CFG_DOUBLE, "60", "0..1000000000",
     "LogP latency L (ns) for adaptive-logp and auto: one cache-line transfer between cores "
     "(this VM: 27-190 ns by the moment, 60 typical; `numacoll-bench barrier --logp` measures)",
     NULL},
    {"NUMACOLL_BARRIER_LOGP_OS", NC_CFG_DOUBLE, "1", "0..1000000000",
     "LogP send overhead o_s (ns): one release store of a flag (measured 0.3-0.9 ns here)", NULL},
    {"NUMACOLL_BARRIER_LOGP_OR", NC_CFG_DOUBLE, "1", "0..1000000000",
     "LogP receive overhead o_r (ns): acquire load and check of a flag that is there "
     "(measured 0.5 ns here)",
     NULL},
    {"NUMACOLL_BARRIER_LOGP_G", NC_CFG_DOUBLE, "5", "0..1000000000",
     "LogP gap g (ns): spacing of back-to-back flag receives from other cores (overlapped "
     "misses; measured 5-5.3 ns here)",
     NULL},
    /* ---- broadcast ---- */
    {"NUMACOLL_BCAST_QUEUE_BYTES", NC_CFG_SIZE, "0", "0|65536..268435456",
     "queue budget b = s*f per process for the pipelined broadcast; 0 = auto: 4 MiB (the "
     "paper's), 8 MiB when the team is oversubscribed (np=8 on 2 CPUs, Open MPI, 3 runs: 4 MiB "
     "broadcasts 0.75-1.33x native with 4 MiB, 0.74-0.87x with 8 MiB); the slot count is cut "
     "so that all P queues take at most half of the free /dev/shm",
     NULL},
    {"NUMACOLL_BCAST_FRAGMENT", NC_CFG_SIZE, "0", "0..67108864",
     "fragment (slot) size f, rounded up to a page; 0 = the paper's model: f* = sqrt(b t_W / t) "
     "rounded up to a page, at most b / (2q) so that the model's s >= 2q buffers fit the "
     "budget, and a message m < b is cut into fragments of sqrt(m t_W / t), with t and t_W "
     "from NUMACOLL_BCAST_MODEL_T / _TW; a set f is used as is",
     NULL},
    {"NUMACOLL_BCAST_MODEL_T", NC_CFG_DOUBLE, "0", "0..1000",
     "the model's t in nanoseconds per byte copied; 0 = measured once per process at its first "
     "broadcast (best of 3 memcpy runs of 1 MiB, in cache like the queue's fragments); every "
     "member of a team uses rank 0's value; oversubscribed teams use 0.1 unless set",
     NULL},
    {"NUMACOLL_BCAST_MODEL_TW", NC_CFG_DOUBLE, "0", "0..100000000",
     "the model's t_W, nanoseconds a receiver waits for one notification; 0 = measured at each "
     "team's first broadcast: the median of 5 batches of 4 team barriers, per barrier, divided "
     "by ceil(log2 P), the notification rounds of a barrier (a mean of all of them carried the "
     "members' arrival skew and preemption: once 12.9 us instead of ~0.24 us); a median above "
     "100 us is taken as disturbed (once 5.5 ms here) and measured again, at most 3 times, "
     "then 200 is used; every member uses rank 0's value. Oversubscribed "
     "teams use 200 unless set (a barrier there measures the scheduler: t_W = 2.2 us at P = 8 "
     "on 2 CPUs, whose fragments of 644 KiB made 64-128 KiB broadcasts 2x slower). t_WO = "
     "2 t_W and t_A = 0.2 t_W (the paper's ratios)",
     NULL},
    {"NUMACOLL_BCAST_SLOTS", NC_CFG_INT, "0", "0..65536",
     "buffers s per process queue; 0 = model: s* = b / f (at least 2*q)", NULL},
    {"NUMACOLL_BCAST_SETS", NC_CFG_INT, "2", "1..64",
     "sets q the queue is split into (q > 1 overlaps waiting for a set's readers with filling "
     "the next set); must not exceed s",
     NULL},
    {"NUMACOLL_BCAST_TREE", NC_CFG_ENUM, "auto", "auto|kary|knomial|flat|chain|topo",
     "notification tree; topo = root -> NUMA/socket leaders -> members (k-ary inside each "
     "group); auto = topo when the team spans several NUMA nodes, flat when it is "
     "oversubscribed, else kary (with k = 2: binary)",
     NULL},
    {"NUMACOLL_BCAST_K", NC_CFG_INT, "2", "1..64",
     "fan-out of the k-ary tree, radix of the k-nomial tree (at least 2) and fan-out inside the "
     "groups of the topo tree",
     NULL},
    {"NUMACOLL_BCAST_INLINE_MAX", NC_CFG_SIZE, "4096", "0..4096",
     "messages up to this size travel inline in the receivers' control lines (one copy in, one "
     "out, no buffer slot); 0 = never. Measured at np = 2 (Open MPI, against its best native "
     "broadcast in the same runs, 3 launches each): 2 KiB inline 0.76-0.81x, through the "
     "queue 0.94-1.03x (0.69x against 1.47-1.59x when the VM's two vCPUs share a core's "
     "caches); 4 KiB inline 0.73-0.76x, queue 0.92-1.02x; 8 KiB inline 0.79-0.81x, queue "
     "0.65-0.72x (hence at most 4 KiB); P = 8 on 2 CPUs, 2-4 KiB: 0.26-0.36x either way. "
     "(An earlier VM measured 2 KiB inline 0.80x, queue 0.71x, and the default was 1 KiB)",
     NULL},
    {"NUMACOLL_BCAST_DEMOTE", NC_CFG_BOOL, "0", "0|1",
     "1: after writing an inline message's payload lines beyond the stamp's line, the root "
     "(and each forwarding tree node) hints with CLDEMOTE (x86; a NOP on CPUs without it, "
     "nothing elsewhere) that they may move from its core's caches to the shared L3. Off by "
     "default because it depends on where the receiver runs. Measured at np = 2 (Open MPI, "
     "variants demote:on / demote:off and limit:inline with and without it, same runs): with "
     "the two vCPUs on different cores, receivers 10-15 % faster at 64 B - 1 KiB; with them "
     "sharing a core's caches (the VM's other regime), 1.6-1.9x slower at 128 B - 1 KiB, "
     "because the lines leave the cache both use; in one make bench run (the regimes mixed) "
     "demote:on was 1.5 % faster at 1 KiB and 3-13 % slower at 64-512 B. No change up to "
     "48 B (the payload fits the "
     "stamp's line, which the receiver polls and is not demoted). Inline messages only: on "
     "the queue path it doubled the root's time at 2-64 KiB without speeding the receivers",
     NULL},
    {"NUMACOLL_BCAST_PREFETCH", NC_CFG_BOOL, "1", "0|1",
     "1: before writing an inline message's payload lines beyond the stamp's line, the root "
     "(and each forwarding tree node) prefetches them for writing (x86 PREFETCHW), so that "
     "the receivers' shared copies of them are invalidated together rather than one store "
     "at a time, before the stamp can be published. Measured at np = 2 (Open MPI, 8 interleaved "
     "launches each way, default call, against the best native of the same launch): 512 B "
     "0.68 -> 0.64x, 1 KiB 0.76 -> 0.70x, 2 KiB 0.83 -> 0.80x, 4 KiB 0.77 -> 0.73x (the "
     "receivers' time 1 KiB 680 -> 581 ns, 4 KiB 1322 -> 1199 ns), unchanged up to 256 B; in "
     "another series of 8, 1 KiB 0.79 -> 0.67x. On the queue path it cost the root time and "
     "gained the receivers 3-10 % at 4-16 KiB, so it applies to inline messages only",
     NULL},
    {"NUMACOLL_BCAST_CMA_MIN", NC_CFG_SIZE, "0", "0..1073741824",
     "messages of at least this size are read by every receiver straight from the root's buffer "
     "with process_vm_readv (CMA) when the kernel allows it; 0 = never (the default: on the "
     "reference VM CMA was slower than the queues below 256 KiB and, under load, above; only "
     "in quiet best cases was it ~15 % faster at 1-4 MiB)",
     NULL},
    {"NUMACOLL_BCAST_STREAM_MIN", NC_CFG_SIZE, "16K", "0..1073741824",
     "queue messages of at least this size are written into the root's queue with "
     "non-temporal stores (receivers then read them from L3/memory instead of snooping dirty "
     "lines out of the root's cache); 0 = never. Measured at np=2 on the reference VM, plain vs "
     "streamed root copy (receiver plain): 16 KiB 6.9 vs 2.1 us, 64 KiB 10.3 vs 5.9, 256 KiB "
     "35 vs 18, 1 MiB 70 vs 72, 2 MiB 3286 vs 101 (dirty-line pathology); 8 KiB and below "
     "plain wins (0.7 vs 1.7 us). Unset and the team oversubscribed, STREAM_OUT_MIN applies "
     "instead (the root streams only where its receivers stream too): at P = 8 on 2 CPUs "
     "(Open MPI, 3 launches, against its native) 32-128 KiB plain 0.58-0.77x, streamed root "
     "0.78-1.07x; 256-512 KiB both sides streamed 0.54-0.65x, plain 0.69-0.83x",
     NULL},
    {"NUMACOLL_BCAST_STREAM_OUT_MIN", NC_CFG_SIZE, "256K", "0..1073741824",
     "queue messages of at least this size are also copied out by the receivers with "
     "non-temporal stores; 0 = never. Measured at np=2 (interleaved, median of 9, us), both "
     "sides / root only / receivers only / neither: 128 KiB 26 / 24 / 31 / 27, 256 KiB "
     "41 / 52 / 57 / 42, 1 MiB 150 / 258 / 738 / 306, 4 MiB 269 / 468 / 1361 / 653 (receivers "
     "alone are bad: pair it with STREAM_MIN <= this)",
     NULL},
    {"NUMACOLL_BCAST_ROTATE", NC_CFG_BOOL, "1", "0|1",
     "successive uses of a queue set put their fragments at rotating offsets inside the set, so "
     "a message smaller than the set does not rewrite lines the receivers still cache (the "
     "root would invalidate them on every write); all members must agree. np=2, median of 9, "
     "us, plain copies rotating vs not: 32 KiB 8.0 vs 10.7, 64 KiB 15.6 vs 22.9, 128 KiB 30 vs "
     "41, 256 KiB 42 vs 60; with the default streamed root copy equal or better. Not used when "
     "the team is oversubscribed (P = 8 on 2 CPUs: 2-10 % slower at 64-256 KiB). Up to 16 KiB "
     "NUMACOLL_BCAST_ADAPT may turn it off per size class (the AMD VM, Open MPI np = 2: 8 and "
     "16 KiB 10-13 % faster without in one of its two regimes, 5-8 % slower in the other)",
     NULL},
    {"NUMACOLL_BCAST_CHECK", NC_CFG_BOOL, "0", "0|1",
     "compare every broadcast's root, size and per-call options across the members before any "
     "data moves (one extra barrier per broadcast; a debugging aid): a mismatch fails on every "
     "member with NUMACOLL_ERR_ARG (MPI: MPI_ERR_ROOT or MPI_ERR_TRUNCATE) naming the member "
     "that differs, and nobody's buffer changes. Off, a receiver with another size or root "
     "still fails, but a member that passes itself as the root is not detected; all members "
     "must agree (MPI: members that differ keep the communicator native). MPI hierarchical "
     "mode: plus one native reduction over the whole communicator per broadcast, so that "
     "members of different nodes are compared too",
     NULL},
    {"NUMACOLL_BCAST_ADAPT", NC_CFG_BOOL, "1", "0|1",
     "from STREAM_MIN on, the root picks the copy mode per log2 size class (plain or streamed "
     "root stores; from STREAM_OUT_MIN on, also streamed receiver stores) from the members' "
     "mean time in runs of its broadcasts, each member reporting its own time without making "
     "the root wait: a run is one pass of the class's messages through the whole queue in its "
     "mode, unmeasured, then 256 KiB / size calls (1..16) measured as one sample; each mode "
     "twice, those within 2x of the best once more, then one run in 256 of another mode (one "
     "more than 2x slower every 4th time) and one of the best; the best changes to a mode whose "
     "median of its last 4 samples is 10 % lower (until every mode has had its first runs, "
     "the lowest estimate wins outright); the thresholds give the first choice and decide "
     "alone when this is off or the team is oversubscribed. Chosen the same way: a message of "
     "2 KiB + 1 .. 8 KiB in two halves or in the model's one fragment (not with "
     "NUMACOLL_BCAST_FRAGMENT set), and up to 16 KiB, each mode also without rotating offsets "
     "(with NUMACOLL_BCAST_ROTATE on)",
     NULL},
    {"NUMACOLL_BCAST_ADAPT_OVERSUB", NC_CFG_BOOL, "0", "0|1",
     "NUMACOLL_BCAST_ADAPT also when the team has more processes than CPUs (off by default: "
     "there the times measure the scheduler more than the copies)",
     NULL},
    {"NUMACOLL_BCAST_RELAY", NC_CFG_ENUM, "auto", "auto|0|1",
     "NUMA relay: the first receiver of each NUMA node copies fragments into its own queue and "
     "its node reads from there; auto = on when the team spans several NUMA nodes",
     NULL},
    {"NUMACOLL_BCAST_POPULATE", NC_CFG_ENUM, "first-use", "first-use|creation",
     "when a member's broadcast queue gets its memory: first-use = each set of slots as far as "
     "the member's messages reach into it, at least 256 KiB more at a time (a communicator "
     "that broadcasts only small messages never pays for its queue; measured np=2, 4 MiB "
     "queue: a new communicator's "
     "first small broadcast took 3.4-4.3 ms with creation, see README), creation = all of it "
     "when the queues are set up (the first broadcast). first-use needs Linux >= 5.14 "
     "(MADV_POPULATE_WRITE), else creation applies; with the NUMA relay it is creation too. "
     "A queue that cannot get its memory makes that broadcast return "
     "NUMACOLL_ERR_UNSUPPORTED on every member (the MPI layer then uses the MPI's own "
     "broadcast for the communicator)",
     NULL},
    /* ---- key-value store ---- */
    {"NUMACOLL_KVDB_LOCK", NC_CFG_ENUM, "seqlock", NULL,
     "reader/writer lock scheme of the key-value store (paper 4): rwlock, 1n-mutex, 2n-mutex "
     "(OpenPMIx ds21), n-mutex-signal (the paper's), seqlock or reader-flags (ours)",
     nc_kvlock_allowed_names},
    {"NUMACOLL_KVDB_MAX_READERS", NC_CFG_INT, "64", "1..4096",
     "reader slots of a key-value store (mutex schemes: the writer locks one mutex per slot)",
     NULL},
    {"NUMACOLL_KVDB_BUCKETS", NC_CFG_INT, "1024", "8..1073741824",
     "initial hash buckets of a key-value store (rounded up to a power of two)", NULL},
    {"NUMACOLL_KVDB_HEAP", NC_CFG_SIZE, "1M", "1K..64G",
     "initial entry heap of a key-value store (keys + values + 24 bytes per entry)", NULL},
    {"NUMACOLL_KVDB_GROW", NC_CFG_BOOL, "1", "0|1",
     "grow a full key-value store into a new, larger segment generation (0 = fail with "
     "NUMACOLL_ERR_FULL)",
     NULL},
    {"NUMACOLL_KVDB_MAX_SIZE", NC_CFG_SIZE, "4G", "4K..1024G",
     "largest data segment a key-value store may grow to", NULL},
    {"NUMACOLL_KVDB_MAX_VALUE", NC_CFG_SIZE, "16M", "0..1G",
     "longest value numacoll_kvdb_put accepts (NUMACOLL_ERR_TOOBIG above)", NULL},
    /* ---- MPI layer (libnumacoll_mpi) ---- */
    {"NUMACOLL_DISABLE", NC_CFG_BOOL, "0", "0|1",
     "libnumacoll_mpi: 1 = every collective of this process goes to the MPI library's own; "
     "it still takes part in each communicator's one set-up allgather, so that a "
     "communicator with such a member stays native on all members (verbose: a warning "
     "naming this variable) instead of hanging",
     NULL},
    {"NUMACOLL_FAKE_NODES", NC_CFG_INT, "0", "0..4096",
     "libnumacoll_mpi: split every node into this many pseudo-nodes (contiguous rank blocks) "
     "to exercise the multi-node path on one machine; 0 or 1 = real nodes only",
     NULL},
    {"NUMACOLL_MPI_BCAST", NC_CFG_BOOL, "1", "0|1",
     "libnumacoll_mpi: route MPI_Bcast through numacoll (0 = MPI_Bcast always native)", NULL},
    {"NUMACOLL_MPI_STATS", NC_CFG_BOOL, "0", "0|1",
     "libnumacoll_mpi: print per-process counters of intercepted calls at MPI_Finalize (a "
     "process that uses only MPI-4 sessions: at MPI_Session_finalize)",
     NULL},
    {"NUMACOLL_MPI_SETUP_AFTER", NC_CFG_INT, "2048", "0..1000000000",
     "libnumacoll_mpi: a communicator with no reusable idle team runs the native MPI_Barrier "
     "and MPI_Bcast until its calls add up to this many units, then numacoll sets it up (at "
     "the same call on every member); a call is 1 unit, a broadcast of n bytes 1 + n/1024 "
     "(about 0.1 us of what numacoll saves each, np=2 here), so 2048 is about the 0.2-0.3 ms "
     "a new team costs: a short-lived communicator never pays for one; 0 = at the first call",
     NULL},
    {"NUMACOLL_MPI_TEAM_CACHE", NC_CFG_INT, "8", "0..64",
     "libnumacoll_mpi: idle teams of freed communicators kept per process for reuse by a later "
     "communicator with the same members (dup/free churn); 0 = destroy at MPI_Comm_free",
     NULL},
    {"NUMACOLL_MPI_TEAM_CACHE_QUEUE", NC_CFG_SIZE, "8M", "0..64G",
     "libnumacoll_mpi: broadcast queue memory the idle teams of a process may keep, so that a "
     "later communicator with the same members finds its queues ready (np=2, dup + 1 MiB bcast "
     "+ free: 2.9-3.2 ms per communicator when the queue set was populated and unmapped each "
     "time, native 73-86 us); beyond it an idle team drops its broadcast state with its "
     "memory (control blocks alone are always kept); 0 = keep no queue memory",
     NULL},
};

#define NROWS ((int)(sizeof table / sizeof table[0]))

typedef struct cfg_val {
    int set;   /* present in the environment */
    int valid; /* parsed and within range */
    const char *text;
    long i;
    double d;
    size_t sz;
} cfg_val_t;

static cfg_val_t values[NROWS];
static numacoll_config_row_t public_rows[NROWS];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char first_error[1024];
static int load_status;

static const char *type_name(nc_cfg_type_t t)
{
    switch (t) {
    case NC_CFG_BOOL:
        return "bool";
    case NC_CFG_INT:
        return "int";
    case NC_CFG_SIZE:
        return "size";
    case NC_CFG_DOUBLE:
        return "double";
    case NC_CFG_ENUM:
        return "enum";
    case NC_CFG_LIST:
        return "list";
    default:
        return "string";
    }
}

static const char *allowed_of(const nc_cfg_def_t *d)
{
    if (d->allowed_fn) return d->allowed_fn();
    return d->allowed ? d->allowed : "";
}

/* Is @p item (len bytes) one of the '|'-separated words of @p allowed? */
static int word_in(const char *allowed, const char *item, size_t len)
{
    const char *p = allowed;
    while (*p) {
        const char *e = strchr(p, '|');
        size_t wl = e ? (size_t)(e - p) : strlen(p);
        if (wl == len && strncmp(p, item, len) == 0) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static void allowed_pretty(const char *allowed, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = allowed; *p && o + 3 < n; p++) {
        if (*p == '|') {
            out[o++] = ',';
            out[o++] = ' ';
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

static int parse_range(const char *allowed, double *lo, double *hi)
{
    const char *dots = strstr(allowed, "..");
    if (!dots) return 0;
    char *end;
    *lo = strtod(allowed, &end);
    if (*end == 'K' || *end == 'M' || *end == 'G') /* SIZE ranges such as "64K..256M" */
        *lo *= *end == 'K' ? 1024.0 : *end == 'M' ? 1048576.0 : 1073741824.0;
    *hi = strtod(dots + 2, &end);
    if (*end == 'K' || *end == 'M' || *end == 'G')
        *hi *= *end == 'K' ? 1024.0 : *end == 'M' ? 1048576.0 : 1073741824.0;
    return 1;
}

/* The lower bound of a range "A..B" as written (A), in @p out. */
static const char *range_lo(const char *range, char *out, size_t n)
{
    const char *dots = strstr(range, "..");
    size_t len = dots ? (size_t)(dots - range) : strlen(range);
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), range);
    return out;
}

static int parse_bool(const char *v, long *out)
{
    static const char *t[] = {"1", "yes", "true", "on"};
    static const char *f[] = {"0", "no", "false", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, t[i]) == 0) return *out = 1, 1;
        if (strcasecmp(v, f[i]) == 0) return *out = 0, 1;
    }
    return 0;
}

static int parse_size(const char *v, size_t *out)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)v[0])) return 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno) return 0;
    unsigned long long mul = 1;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K':
            mul = 1ull << 10;
            break;
        case 'M':
            mul = 1ull << 20;
            break;
        case 'G':
            mul = 1ull << 30;
            break;
        default:
            return 0;
        }
        end++;
        if (toupper((unsigned char)*end) == 'I') end++;
        if (toupper((unsigned char)*end) == 'B') end++;
        if (*end) return 0;
    }
    if (x > (~0ull) / mul) return 0;
    *out = (size_t)(x * mul);
    return 1;
}

/* Validate @p v for row @p d; fill @p val; on error write a message to @p err. */
static int parse_value(const nc_cfg_def_t *d, const char *v, cfg_val_t *val, char *err,
                       size_t errlen)
{
    char pretty[512];
    const char *allowed = allowed_of(d);
    allowed_pretty(allowed, pretty, sizeof pretty);
    val->text = v;
    switch (d->type) {
    case NC_CFG_BOOL:
        if (!parse_bool(v, &val->i)) {
            snprintf(err, errlen,
                     "%s='%s' is not valid; allowed: 0, 1 (or no/yes, false/true, off/on)", d->name,
                     v);
            return NUMACOLL_ERR_CONFIG;
        }
        return NUMACOLL_OK;
    case NC_CFG_INT: {
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        double lo, hi;
        if (errno || end == v || *end || (parse_range(allowed, &lo, &hi) && (x < lo || x > hi))) {
            snprintf(err, errlen, "%s='%s' is not valid; allowed: an integer in %s", d->name, v,
                     allowed);
            return NUMACOLL_ERR_CONFIG;
        }
        val->i = x;
        return NUMACOLL_OK;
    }
    case NC_CFG_SIZE: {
        double lo, hi;
        size_t x;
        /* "0|A..B": 0 (auto) or a size in A..B */
        int zero_ok = strncmp(allowed, "0|", 2) == 0;
        if (!parse_size(v, &x) ||
            (!(zero_ok && x == 0) && parse_range(allowed + (zero_ok ? 2 : 0), &lo, &hi) &&
             ((double)x < lo || (double)x > hi))) {
            snprintf(err, errlen,
                     "%s='%s' is not valid; allowed: a byte count in %s (suffixes K, M, G)",
                     d->name, v, allowed);
            return NUMACOLL_ERR_CONFIG;
        }
        val->sz = x;
        return NUMACOLL_OK;
    }
    case NC_CFG_DOUBLE: {
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        double lo, hi;
        /* "0|A..B": 0 (off) or a number in A..B, nothing in between (NUMACOLL_TIMEOUT: a
         * value below 1 ns would round to 0 ns, which means no timeout) */
        int zero_ok = strncmp(allowed, "0|", 2) == 0;
        const char *range = allowed + (zero_ok ? 2 : 0);
        int parsed = !errno && end != v && !*end && isfinite(x);
        if (parsed && zero_ok && x != 0 && parse_range(range, &lo, &hi) && x > 0 && x < lo) {
            snprintf(err, errlen,
                     "%s='%s' is not valid: it would round to 0, which turns %s off; allowed: "
                     "0, or a number in %s (the smallest non-zero value is %s)",
                     d->name, v, d->name, range, range_lo(range, pretty, sizeof pretty));
            return NUMACOLL_ERR_CONFIG;
        }
        if (!parsed || (!(zero_ok && x == 0) && parse_range(range, &lo, &hi) &&
                        (x < lo || x > hi))) {
            if (zero_ok)
                snprintf(err, errlen, "%s='%s' is not valid; allowed: 0, or a number in %s",
                         d->name, v, range);
            else
                snprintf(err, errlen, "%s='%s' is not valid; allowed: a number in %s", d->name,
                         v, allowed);
            return NUMACOLL_ERR_CONFIG;
        }
        val->d = x;
        return NUMACOLL_OK;
    }
    case NC_CFG_ENUM:
        if (!word_in(allowed, v, strlen(v))) {
            snprintf(err, errlen, "%s='%s' is not valid; allowed: %s", d->name, v, pretty);
            return NUMACOLL_ERR_CONFIG;
        }
        return NUMACOLL_OK;
    case NC_CFG_LIST: {
        const char *p = v;
        if (!*p) {
            snprintf(err, errlen, "%s is empty; allowed: a comma-separated list of %s", d->name,
                     pretty);
            return NUMACOLL_ERR_CONFIG;
        }
        while (1) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            if (!word_in(allowed, p, len)) {
                snprintf(err, errlen,
                         "%s='%s' is not valid: item '%.*s' unknown; allowed: a comma-separated "
                         "list of %s",
                         d->name, v, (int)len, p, pretty);
                return NUMACOLL_ERR_CONFIG;
            }
            /* no repeats */
            for (const char *q = v; q < p;) {
                const char *qe = strchr(q, ',');
                size_t ql = (size_t)(qe - q);
                if (ql == len && strncmp(q, p, len) == 0) {
                    snprintf(err, errlen, "%s='%s' is not valid: item '%.*s' repeated", d->name, v,
                             (int)len, p);
                    return NUMACOLL_ERR_CONFIG;
                }
                q = qe + 1;
            }
            if (!e) break;
            p = e + 1;
        }
        return NUMACOLL_OK;
    }
    default:
        return NUMACOLL_OK;
    }
}

extern char **environ;

static void load_locked(void)
{
    first_error[0] = 0;
    load_status = NUMACOLL_OK;
    for (int i = 0; i < NROWS; i++) {
        const nc_cfg_def_t *d = &table[i];
        char err[1024];
        cfg_val_t def = {0};
        if (parse_value(d, d->defval, &def, err, sizeof err) != NUMACOLL_OK) abort(); /* bug */
        def.valid = 1;
        const char *env = getenv(d->name);
        values[i] = def;
        if (env) {
            cfg_val_t v = {0};
            if (parse_value(d, env, &v, err, sizeof err) == NUMACOLL_OK) {
                v.set = v.valid = 1;
                values[i] = v;
            } else if (load_status == NUMACOLL_OK) {
                load_status = NUMACOLL_ERR_CONFIG;
                snprintf(first_error, sizeof first_error, "%s", err);
            }
        }
        public_rows[i].name = d->name;
        public_rows[i].type = type_name(d->type);
        public_rows[i].defval = d->defval;
        public_rows[i].allowed = allowed_of(d);
        public_rows[i].doc = d->doc;
    }
    /* unknown NUMACOLL_* variables are mistakes (typos); reject them */
    for (char **e = environ; e && *e && load_status == NUMACOLL_OK; e++) {
        if (strncmp(*e, "NUMACOLL_", 9) != 0) continue;
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        int known = 0;
        for (int i = 0; i < NROWS && !known; i++)
            known = strlen(table[i].name) == len && strncmp(table[i].name, *e, len) == 0;
        if (!known) {
            load_status = NUMACOLL_ERR_CONFIG;
            snprintf(first_error, sizeof first_error,
                     "unknown variable %.*s in the environment; `numacoll-info` lists the "
                     "NUMACOLL_* variables",
                     (int)len, *e);
        }
    }
}

static void load_once(void)
{
    pthread_mutex_lock(&lock);
    load_locked();
    pthread_mutex_unlock(&lock);
}

static int find(const char *name)
{
    pthread_once(&once, load_once);
    for (int i = 0; i < NROWS; i++)
        if (strcmp(table[i].name, name) == 0) return i;
    return -1;
}

static int must_find(const char *name)
{
    int i = find(name);
    if (i < 0) {
        fprintf(stderr, "numacoll: internal error: unknown configuration row %s\n", name);
        abort();
    }
    return i;
}

long nc_cfg_int(const char *name)
{
    int i = must_find(name);
    return values[i].i;
}
size_t nc_cfg_size(const char *name)
{
    return values[must_find(name)].sz;
}
double nc_cfg_double(const char *name)
{
    return values[must_find(name)].d;
}
bool nc_cfg_bool(const char *name)
{
    return values[must_find(name)].i != 0;
}
const char *nc_cfg_str(const char *name)
{
    return values[must_find(name)].text;
}
bool nc_cfg_is_set(const char *name)
{
    return values[must_find(name)].set;
}

int nc_cfg_validate(const char *name, const char *value)
{
    int i = find(name);
    if (i < 0) return nc_error(NUMACOLL_ERR_CONFIG, "unknown configuration variable %s", name);
    char err[1024];
    cfg_val_t v;
    if (parse_value(&table[i], value, &v, err, sizeof err) != NUMACOLL_OK)
        return nc_error(NUMACOLL_ERR_CONFIG, "%s", err);
    return NUMACOLL_OK;
}

bool nc_cfg_list_has(const char *list, const char *item)
{
    size_t il = strlen(item);
    const char *p = list;
    while (p && *p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == il && strncmp(p, item, il) == 0) return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

const numacoll_config_row_t *numacoll_config_table(int *count)
{
    pthread_once(&once, load_once);
    if (count) *count = NROWS;
    return public_rows;
}

const char *numacoll_config_value(const char *name)
{
    int i = find(name);
    return i < 0 ? NULL : values[i].text;
}

int numacoll_config_check(void)
{
    pthread_once(&once, load_once);
    if (load_status != NUMACOLL_OK) return nc_error(load_status, "%s", first_error);
    return NUMACOLL_OK;
}

int numacoll_config_reload(void)
{
    pthread_once(&once, load_once);
    pthread_mutex_lock(&lock);
    load_locked();
    pthread_mutex_unlock(&lock);
    return numacoll_config_check();
}
