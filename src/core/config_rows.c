/*
 * The core layer's configuration rows (waits, shared segments, diagnostics).
 * Help texts: one or two sentences that say what the allowed values mean (config.h);
 * the measurements behind the defaults are in docs/tuning-notes.md.
 */
#include "nc_internal.h"

static const nc_cfg_def_t rows[] = {
    {.id = NC_CFG_VERBOSE,
     .type = NC_CFG_TYPE_INT,
     .defval = "0",
     .allowed = "0..3",
     .doc = "diagnostics on stderr: 0 = none; 1 = team set-up, hierarchy and choices; 2 = also "
            "placement checks and, at a team's end, the broadcast copy-mode selector's choice "
            "and samples per size class; 3 = also every member's set-up lines and a line per "
            "broadcast call (no other collective prints per call)"},
    {.id = NC_CFG_TIMEOUT,
     .type = NC_CFG_TYPE_DOUBLE,
     .defval = "0",
     .allowed = "0|1e-9..1000000",
     .doc = "seconds a process may wait inside one collective (MPI: on hierarchical "
            "communicators set on every rank, the MPI's steps between nodes too) before it "
            "fails with an error naming what it waited for; 0 = wait forever; otherwise at "
            "least 1e-9 (waits count whole nanoseconds)"},
    {.id = NC_CFG_CACHELINE,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "auto",
     .allowed = "auto|32|64|128|256",
     .doc = "padding unit (bytes) that keeps every flag/counter alone; auto = 128 on x86 "
            "(adjacent-line prefetcher), the detected line size elsewhere"},
    {.id = NC_CFG_WAIT_SPIN,
     .type = NC_CFG_TYPE_INT,
     .defval = "-1",
     .allowed = "-1..1000000000",
     .doc = "pause-instruction spins before a waiting process starts to sched_yield; -1 = auto "
            "(4096, or 0 when the team is oversubscribed)"},
    {.id = NC_CFG_WAIT_SLEEP_AFTER_US,
     .type = NC_CFG_TYPE_INT,
     .defval = "100000",
     .allowed = "0..1000000000",
     .doc = "after this many microseconds of waiting, nap (50 us growing to 1 ms) between "
            "checks instead of yielding; 0 = never nap"},
    {.id = NC_CFG_WAIT_FUTEX_AFTER_US,
     .type = NC_CFG_TYPE_INT,
     .defval = "-1",
     .allowed = "-1..1000000000",
     .doc = "after this many microseconds of waiting for a flag, sleep in the kernel (futex) "
            "until its writer wakes the process; -1 = auto ("
            NC_STR(NC_FUTEX_AFTER_AUTO_US) " on an oversubscribed team, never on others), 0 = at "
            "once"},
    {.id = NC_CFG_OVERSUBSCRIBED,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "auto",
     .allowed = "auto|yes|no",
     .doc = "treat the team as oversubscribed (more processes than CPUs: yield at once when "
            "waiting); auto = detect from the members' CPU affinity, and (MPI) from the job's "
            "processes on the node against its CPUs"},
    {.id = NC_CFG_PROGRESS_US,
     .type = NC_CFG_TYPE_INT,
     .defval = "100",
     .allowed = "1..1000000",
     .doc = "while waiting, call the caller's progress hook (MPI progress) about this often (us)"},
    {.id = NC_CFG_NUMA_BIND,
     .type = NC_CFG_TYPE_BOOL,
     .defval = "1",
     .allowed = "0|1",
     .doc = "1 = bind each process's shared block to its NUMA node with libnuma (mbind) before "
            "first touch when the process is bound inside one node; 0 = no binding (first touch "
            "alone places the pages)"},
    {.id = NC_CFG_SHM_BACKEND,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "auto",
     .allowed = "auto|memfd|posix",
     .doc = "shared segments: memfd = anonymous, peers open it through /proc/<pid>/fd, no name "
            "ever exists; posix = shm_open name in /dev/shm, unlinked once all attached; auto = "
            "memfd, then posix if peers cannot open /proc of rank 0"},
    {.id = NC_CFG_SHM_HUGEPAGES,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "off",
     .allowed = "off|system",
     .doc = "transparent huge pages in the shared segments of teams and broadcast queues: off = "
            "none (MADV_NOHUGEPAGE), so each process's block gets base-size pages on its own "
            "node whatever the kernel's shmem_enabled; system = the kernel's policy"},
    {.id = NC_CFG_SHM_MAX,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "0",
     .allowed = "0..1024G",
     .doc = "most shared memory one process may hold in numacoll's segments (its share of each: "
            "size / members); a set-up past it fails on every member (MPI: native collectives "
            "there); 0 = a quarter of the machine's memory divided by its CPUs"},
};

NC_CFG_REGISTER(core, rows)
