/*
 * The data-movement layer's configuration rows (gather, scatter, allgather, alltoall).
 * Help texts: one or two sentences that say what the allowed values mean (config.h);
 * the measurements behind the defaults are in docs/tuning-notes.md.
 */
#include "move.h"

static const nc_cfg_def_t rows[] = {
    {.id = NC_CFG_MOVE,
     .type = NC_CFG_TYPE_ENUM,
     .defval = "auto",
     .allowed = "auto|copy|cma",
     .doc = "how gather, scatter, allgather and alltoall move a block: copy = through the "
            "owner's shared slots, cma = single copy from its buffer (process_vm_readv, needs "
            "ptrace permission), auto = cma where NUMACOLL_MOVE_CMA_MIN and _CMA_COST (on an "
            "oversubscribed team _CMA_READ_OVERSUB and _CMA_COST) say so"},
    {.id = NC_CFG_MOVE_CMA_MIN,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "1M",
     .allowed = "0..1G",
     .doc = "smallest block (bytes) that NUMACOLL_MOVE=auto moves by single copy; smaller "
            "blocks go through the shared slots"},
    {.id = NC_CFG_MOVE_CMA_READ_OVERSUB,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "80K",
     .allowed = "0..1G",
     .doc = "on a team with more processes than CPUs: what one single-copy read costs besides "
            "its bytes, in bytes of memcpy; auto takes single copy there (in place of "
            "NUMACOLL_MOVE_CMA_MIN) where the bytes it saves the busiest member pay for its "
            "reads"},
    {.id = NC_CFG_MOVE_CMA_COST,
     .type = NC_CFG_TYPE_DOUBLE,
     .defval = "1.5",
     .allowed = "0.01..100",
     .doc = "time process_vm_readv takes to move a byte, as a multiple of memcpy's; "
            "NUMACOLL_MOVE=auto uses single copy in a collective when its busiest member moves "
            "its bytes sooner that way (docs/library.md gives the rule per collective)"},
    {.id = NC_CFG_MOVE_FRAGMENT,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "32K",
     .allowed = "4K..16M",
     .doc = "bytes of one chunk (rounded up to 64) in which an owner streams its blocks "
            "through its slots"},
    {.id = NC_CFG_MOVE_SLOTS,
     .type = NC_CFG_TYPE_INT,
     .defval = "16",
     .allowed = "2..256",
     .doc = "chunk slots per member: an owner may write this many chunks before its readers "
            "have read the first"},
    {.id = NC_CFG_MOVE_EAGER,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "4K",
     .allowed = "0..16M",
     .doc = "bytes of each slot a member's buffers get at set-up; the rest gets memory at the "
            "first call that streams more (teams that move only small blocks keep little "
            "memory)"},
    {.id = NC_CFG_MOVE_GIVE_BACK,
     .type = NC_CFG_TYPE_INT,
     .defval = "65536",
     .allowed = "0..1073741824",
     .doc = "after this many gather, scatter, allgather or alltoall calls in a row in which its "
            "own stream fit NUMACOLL_MOVE_EAGER, a member returns the memory of its slots beyond "
            "it (its next larger stream gets it again); 0 = never; values below "
            "NUMACOLL_MOVE_SLOTS count as that"},
    {.id = NC_CFG_MOVE_STREAM_MIN,
     .type = NC_CFG_TYPE_SIZE,
     .defval = "8K",
     .allowed = "0..1G",
     .doc = "blocks of at least this size are written into the owner's slots with "
            "non-temporal stores, so that the owner does not have to take back the lines its "
            "readers cached from the slot's previous chunk; 0 = every block"},
};

NC_CFG_REGISTER(move, rows)
