/*
 * numacoll: shared-memory collectives and synchronisation for the processes of one node.
 *
 * This header is the whole public C API of libnumacoll (no MPI dependency).
 *
 * A *team* is P processes of one node that cooperate through one shared-memory segment.
 * Every member knows its rank (0..P-1) and P, and supplies an out-of-band (OOB) allgather
 * callback that the library uses during creation (and at the first broadcast, to set up
 * the broadcast queues). The callback is the only thing the library needs from the
 * caller's runtime: MPI users plug PMPI_Allgather in, runtimes plug their own exchange.
 *
 * All calls return NUMACOLL_OK (0) or a negative numacoll_status_t. After an error,
 * numacoll_last_error() returns a human-readable message (thread-local) that names what
 * went wrong and, for bad input, what is allowed.
 *
 * Thread safety: different teams may be used concurrently from different threads; one
 * team must not be used by two threads of the same process at once (as with an MPI
 * communicator).
 */
#ifndef NUMACOLL_NUMACOLL_H
#define NUMACOLL_NUMACOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NUMACOLL_VERSION_MAJOR 0
#define NUMACOLL_VERSION_MINOR 1
#define NUMACOLL_VERSION_PATCH 0

/** Status codes. Every API call returns one of these. */
typedef enum numacoll_status {
    NUMACOLL_OK = 0,
    NUMACOLL_ERR_ARG = -1,         /**< invalid argument (message names it) */
    NUMACOLL_ERR_NOMEM = -2,       /**< out of memory, or /dev/shm too small */
    NUMACOLL_ERR_SYS = -3,         /**< a system call failed (message has errno text) */
    NUMACOLL_ERR_CONFIG = -4,      /**< a NUMACOLL_* environment variable is invalid */
    NUMACOLL_ERR_TIMEOUT = -5,     /**< NUMACOLL_TIMEOUT expired; message names missing ranks */
    NUMACOLL_ERR_PEER_DEAD = -6,   /**< a team member exited while others waited for it */
    NUMACOLL_ERR_OOB = -7,         /**< the caller's OOB allgather callback failed */
    NUMACOLL_ERR_UNSUPPORTED = -8, /**< operation or option not supported here */
    NUMACOLL_ERR_NOT_FOUND = -9,   /**< unknown name (algorithm, key, ...) */
    NUMACOLL_ERR_FULL = -10,       /**< a fixed-size structure is full */
    NUMACOLL_ERR_TOOBIG = -11,     /**< a key, value or message exceeds a documented limit */
    NUMACOLL_ERR_STATE = -12       /**< call not valid in the object's current state */
} numacoll_status_t;

/** Short name of a status code ("NUMACOLL_ERR_TIMEOUT"). Never NULL. */
const char *numacoll_status_name(int status);

/**
 * Detailed message of the last error raised on the calling thread, e.g.
 * "NUMACOLL_BARRIER='foo' is not valid; allowed: sense-reversing, ...". Empty string
 * if there was none. The pointer stays valid until the next failing call on this thread.
 */
const char *numacoll_last_error(void);

/**
 * Out-of-band allgather: every member contributes @p size bytes from @p sendbuf and
 * receives the P contributions, ordered by rank, in @p recvbuf (P * size bytes).
 * Must be collective over the team's members and return 0 on success.
 */
typedef int (*numacoll_oob_allgather_fn)(const void *sendbuf, void *recvbuf, size_t size,
                                         void *ctx);

/**
 * Optional progress hook, called now and then from long waits (about every
 * NUMACOLL_PROGRESS_US microseconds of waiting), e.g. to poke an MPI progress engine.
 */
typedef void (*numacoll_progress_fn)(void *ctx);

/** Parameters of numacoll_team_create(). Zero-initialise, then fill in. */
typedef struct numacoll_team_params {
    int rank;                            /**< this process's rank, 0..size-1 */
    int size;                            /**< number of processes P >= 1 */
    numacoll_oob_allgather_fn allgather; /**< required */
    void *oob_ctx;                       /**< passed to allgather */
    numacoll_progress_fn progress;       /**< optional */
    void *progress_ctx;                  /**< passed to progress */
    const char *name; /**< optional label used in messages (e.g. "MPI_COMM_WORLD") */
    /** optional: how many processes of the caller's job run on this node (0 = unknown). A
     * team whose own members fit its CPUs still counts as oversubscribed when the job has
     * more processes on the node than the node has CPUs: they compete with its members. */
    int node_procs;
} numacoll_team_params_t;

typedef struct numacoll_team numacoll_team_t;

/**
 * Collectively create a team. Rank 0 creates a shared-memory segment (mode 0600, pages
 * reserved so that a lack of shared memory is an error rather than a later SIGBUS); all
 * members attach through a handle exchanged with the OOB allgather. By default the
 * segment is an anonymous memfd that the others open through /proc/<pid>/fd, so no name
 * exists at any moment and a crash or kill -9 at any point leaves nothing in /dev/shm;
 * with NUMACOLL_SHM_BACKEND=posix (or when /proc of rank 0 cannot be opened) it is a
 * random O_EXCL name in /dev/shm, unlinked as soon as every member has attached. Also probes the
 * topology (hwloc) and builds the group hierarchy used by the topology-aware algorithms.
 *
 * If creation fails on one member it fails on all (the outcome is agreed through the OOB
 * allgather), so the caller can fall back consistently.
 */
int numacoll_team_create(const numacoll_team_params_t *params, numacoll_team_t **team);

/** Release the team's resources (local; no synchronisation). NULL is accepted. */
int numacoll_team_destroy(numacoll_team_t *team);

int numacoll_team_rank(const numacoll_team_t *team);
int numacoll_team_size(const numacoll_team_t *team);

/**
 * The team's identity: two words, equal on every member, that no other team created on
 * this node has (a random word, and the creating rank 0's pid with a count of its teams).
 * Use it to tell teams apart across processes, e.g. to check that every member picked the
 * same team out of a cache. NUMACOLL_ERR_ARG if @p team or @p id is NULL.
 */
int numacoll_team_id(const numacoll_team_t *team, uint64_t id[2]);

/** Barrier with the team's selected algorithm (NUMACOLL_BARRIER). */
int numacoll_barrier(numacoll_team_t *team);

/**
 * Barrier with a named algorithm (see numacoll_barrier_algorithms()). All members must
 * use the same algorithm for the same call. Used by benchmarks and tests.
 */
int numacoll_barrier_with(numacoll_team_t *team, const char *algorithm);

/** Name of the barrier algorithm numacoll_barrier() uses on this team. */
const char *numacoll_team_barrier_name(const numacoll_team_t *team);

/** Description of one registered algorithm. */
typedef struct numacoll_algorithm_info {
    const char *name;
    const char *description;
} numacoll_algorithm_info_t;

/** Registered barrier algorithms; *count receives their number. */
const numacoll_algorithm_info_t *numacoll_barrier_algorithms(int *count);

/**
 * Broadcast @p bytes bytes from @p root's @p buf to every member's @p buf.
 * Any root, any size including 0, buffers anywhere in memory. All members must pass the
 * same @p bytes and @p root. A receiver whose @p bytes differ from the root's (0 included:
 * a broadcast of 0 bytes is a broadcast too, without payload; @p buf may be NULL)
 * still takes part in the root's broadcast, keeps the root's first bytes up to its own
 * size and returns NUMACOLL_ERR_ARG naming both sizes; the team's next broadcasts work.
 * Likewise a receiver that passes another receiver as the root: it takes part in the true
 * root's broadcast (and gets its data) and returns NUMACOLL_ERR_ARG naming both roots.
 * Not detected by default: a member that wrongly passes itself as the root broadcasts its
 * own buffer (its children may take that or a mix of both messages; the true root's
 * notification to it is lost and its subtree waits). With NUMACOLL_BCAST_CHECK=1 (on every
 * member) each broadcast first compares all members' roots and sizes (one extra barrier):
 * on a mismatch every member returns NUMACOLL_ERR_ARG naming the member that differs, no
 * buffer changes, and the team's next broadcasts work. The broadcast queues are created
 * at a team's first broadcast.
 */
int numacoll_bcast(numacoll_team_t *team, void *buf, size_t bytes, int root);

/**
 * Broadcast like numacoll_bcast() with a named variant of the algorithm (see
 * numacoll_bcast_variant_name()). All members must name the same variant for the same
 * call. An unknown name gives NUMACOLL_ERR_NOT_FOUND, its message listing the allowed
 * ones. Used by benchmarks and tests.
 */
int numacoll_bcast_with(numacoll_team_t *team, void *buf, size_t bytes, int root,
                        const char *variant);

/**
 * Name of broadcast variant @p i, i = 0, 1, ... until NULL: "tree:<name>" for every
 * notification tree, "cma" (receivers read the root's buffer with process_vm_readv
 * whatever the size), the queue path's copy modes forced for every message above the
 * inline limit ("copy:plain", "copy:stream-root": the root writes its queue with
 * non-temporal stores, "copy:stream-recv": the receivers copy out with them, "copy:stream":
 * both), the inline path's cache hint ("demote:off", "demote:on") and its write prefetch
 * ("prefetch:off", "prefetch:on") forced. Each forces that one choice; the team decides the
 * rest.
 */
const char *numacoll_bcast_variant_name(int i);

/* ---- Reductions ------------------------------------------------------------------ */

/** Element types of numacoll_allreduce / numacoll_reduce (the MPI predefined types they
 *  stand for in brackets). The pair types are the C structs of MPI's MINLOC/MAXLOC types:
 *  a value followed by an int index, padded as the C compiler pads them. */
typedef enum numacoll_dtype {
    NUMACOLL_INT8,             /**< int8_t (MPI_INT8_T, MPI_SIGNED_CHAR) */
    NUMACOLL_UINT8,            /**< uint8_t (MPI_UINT8_T, MPI_UNSIGNED_CHAR, MPI_BYTE) */
    NUMACOLL_INT16,            /**< int16_t (MPI_SHORT) */
    NUMACOLL_UINT16,           /**< uint16_t */
    NUMACOLL_INT32,            /**< int32_t (MPI_INT, MPI_INTEGER) */
    NUMACOLL_UINT32,           /**< uint32_t */
    NUMACOLL_INT64,            /**< int64_t (MPI_LONG on LP64, MPI_LONG_LONG) */
    NUMACOLL_UINT64,           /**< uint64_t */
    NUMACOLL_FLOAT,            /**< float (MPI_FLOAT, MPI_REAL) */
    NUMACOLL_DOUBLE,           /**< double (MPI_DOUBLE, MPI_DOUBLE_PRECISION) */
    NUMACOLL_LONG_DOUBLE,      /**< long double (MPI_LONG_DOUBLE) */
    NUMACOLL_FLOAT_INT,        /**< struct { float; int; } (MPI_FLOAT_INT) */
    NUMACOLL_DOUBLE_INT,       /**< struct { double; int; } (MPI_DOUBLE_INT) */
    NUMACOLL_LONG_INT,         /**< struct { long; int; } (MPI_LONG_INT) */
    NUMACOLL_2INT,             /**< struct { int; int; } (MPI_2INT, MPI_2INTEGER) */
    NUMACOLL_SHORT_INT,        /**< struct { short; int; } (MPI_SHORT_INT) */
    NUMACOLL_LONG_DOUBLE_INT,  /**< struct { long double; int; } (MPI_LONG_DOUBLE_INT) */
    NUMACOLL_2FLOAT,           /**< struct { float; float; } (MPI_2REAL) */
    NUMACOLL_2DOUBLE,          /**< struct { double; double; } (MPI_2DOUBLE_PRECISION) */
    NUMACOLL_DTYPE_COUNT
} numacoll_dtype_t;

/** Reduction operations, as MPI's predefined ones. Allowed pairs: integers with every op
 *  but MINLOC/MAXLOC; floating types with SUM, PROD, MIN, MAX; pair types with MINLOC and
 *  MAXLOC (the smaller index wins a tie). Anything else is NUMACOLL_ERR_ARG. */
typedef enum numacoll_op {
    NUMACOLL_OP_SUM,
    NUMACOLL_OP_PROD,
    NUMACOLL_OP_MIN,
    NUMACOLL_OP_MAX,
    NUMACOLL_OP_LAND,
    NUMACOLL_OP_LOR,
    NUMACOLL_OP_LXOR,
    NUMACOLL_OP_BAND,
    NUMACOLL_OP_BOR,
    NUMACOLL_OP_BXOR,
    NUMACOLL_OP_MINLOC,
    NUMACOLL_OP_MAXLOC,
    NUMACOLL_OP_COUNT
} numacoll_op_t;

/** Pass as sendbuf to reduce in place: the input is taken from recvbuf. */
#define NUMACOLL_IN_PLACE ((const void *)1)

/** Bytes of one element of @p dtype (0 for an unknown type). */
size_t numacoll_dtype_size(numacoll_dtype_t dtype);
/** "int32", "double_int", ...; "?" for an unknown type. */
const char *numacoll_dtype_name(numacoll_dtype_t dtype);
/** "sum", "minloc", ...; "?" for an unknown op. */
const char *numacoll_op_name(numacoll_op_t op);

/**
 * Combine @p count elements of @p dtype from every member with @p op; every member gets
 * the result in @p recvbuf. @p sendbuf may be NUMACOLL_IN_PLACE (or equal @p recvbuf).
 * All members must pass the same count, dtype and op; a member whose arguments differ
 * from another's makes every member return NUMACOLL_ERR_ARG naming both (recvbuf then
 * undefined), and the team's next reductions work. A member whose own arguments are
 * invalid (NULL buffers, an unknown type or op, a root out of range, ...) returns its own
 * error, the others NUMACOLL_ERR_ARG naming it; the team's next reductions work too.
 *
 * Reproducible: the order of the fold is fixed by the algorithm (see
 * numacoll_reduce_algorithms; the automatic choice depends only on the message size, the
 * team's size and placement and the configuration): "flat", "rsag" and "rbcast" compute
 * ((x_0 op x_1) op x_2) ... op x_{P-1} in rank order, element by element, "hier" folds
 * each topology group in rank order, then the groups' results. So floating-point results
 * are bitwise identical on all members and from call to call and run to run.
 */
int numacoll_allreduce(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                       numacoll_dtype_t dtype, numacoll_op_t op);

/**
 * As numacoll_allreduce, but only @p root gets the result (in its @p recvbuf; the others'
 * recvbuf is not touched and may be NULL). NUMACOLL_IN_PLACE is for the root only (the
 * others' sendbuf holds their input). All members must pass the same root too. A non-root
 * whose call is one chunk of the "flat" algorithm (small messages) returns right after
 * posting its input and checks nothing: a mismatch is then reported by the root.
 */
int numacoll_reduce(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                    numacoll_dtype_t dtype, numacoll_op_t op, int root);

/**
 * numacoll_allreduce (@p root < 0) or numacoll_reduce (@p root >= 0) with a named algorithm
 * (see numacoll_reduce_algorithms(); "auto" = the library's choice). All members must name
 * the same algorithm for the same call. Used by benchmarks and tests.
 */
int numacoll_reduce_with(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                         numacoll_dtype_t dtype, numacoll_op_t op, int root,
                         const char *algorithm);

/** Registered reduction algorithms (shared by allreduce and reduce); *count their number. */
const numacoll_algorithm_info_t *numacoll_reduce_algorithms(int *count);

/* ---- Data movement: gather, scatter, all-to-all ------------------------------------ */

/*
 * Block sizes and displacements are in bytes. allgather: member m's @p bytes from sendbuf go
 * to recvbuf + m * bytes on every member; allgatherv: member m's sendbytes go to recvbuf +
 * displs[m] (recvbytes[m] bytes) on every member; gather(v): the same, at the root only;
 * scatter: the root's sendbuf + m * bytes goes to member m's recvbuf; scatterv: the root's
 * sendbuf + displs[m] (sendbytes[m] bytes) to member m; alltoall: member o's sendbuf + d *
 * bytes goes to member d's recvbuf + o * bytes; alltoallv: member o's sendbuf + sdispls[d]
 * (sendbytes[d]) to member d's recvbuf + rdispls[o] (recvbytes[o]).
 *
 * NUMACOLL_IN_PLACE has the MPI meanings: allgather(v): sendbuf = IN_PLACE, the member's
 * own block is already in its place in recvbuf; gather(v): sendbuf = IN_PLACE at the root
 * only; scatter(v): recvbuf = (void *)NUMACOLL_IN_PLACE at the root only (its block stays
 * in sendbuf); alltoall(v): sendbuf = IN_PLACE, the input is taken from recvbuf (with
 * alltoallv's recvbytes and rdispls, which must then be symmetric: what m sends d equals
 * what d sends m) and replaced by the result. Bytes of recvbuf outside the received blocks
 * (gaps between displacements) are never written. Buffers a member does not use (a
 * non-root's recvbuf of gather, sendbuf of scatter, counts and displacements that are
 * significant at the root only) may be NULL; so may any buffer of 0 bytes.
 *
 * All members must call the same collective with the same root, and the sizes of a block
 * must agree between its owner and its readers. What is detected (NUMACOLL_ERR_ARG naming
 * a rank; recvbuf is then undefined, the team's next calls work): allgather: any member
 * whose bytes differ, found by every member; allgatherv: any member whose recvbytes array
 * differs from another's, or whose sendbytes differs from its recvbytes[rank], found by
 * every member; gather(v): a sender whose size differs from the root's expectation, found
 * by the root only (the other senders return NUMACOLL_OK, as an MPI sender does);
 * scatter(v) and alltoallv: a receiver whose size differs from what its owner sends, found
 * by that receiver only; alltoall: bytes that differ, found by every member. A member whose
 * own arguments are invalid (a NULL buffer it needs, sendbytes that contradict its own
 * recvbytes) returns NUMACOLL_ERR_ARG naming the argument and makes the members that read
 * from it fail too. Undetected, as in MPI: members that pass different roots or call
 * different collectives (they may hang until NUMACOLL_TIMEOUT or fail with a message
 * saying they disagree). A root out of range returns NUMACOLL_ERR_ARG at once. A member
 * that cannot get the memory of its slots at its first large call returns
 * NUMACOLL_ERR_NOMEM's message with NUMACOLL_ERR_UNSUPPORTED, and so do the members that
 * read from it (the others may return NUMACOLL_OK); the team's set-up (the first call)
 * fails alike on every member.
 *
 * Each block moves by copy-in/copy-out through its owner's shared slots, or by single copy
 * from the owner's buffer (process_vm_readv), chosen by the block's size, NUMACOLL_MOVE and
 * NUMACOLL_MOVE_CMA_MIN, identically on every member; an owner of single-copy blocks
 * returns only after every reader is done with its buffer. A member that dies in a call
 * makes the others return NUMACOLL_ERR_PEER_DEAD naming it.
 */
int numacoll_allgather(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes);
int numacoll_allgatherv(numacoll_team_t *team, const void *sendbuf, size_t sendbytes,
                        void *recvbuf, const size_t *recvbytes, const size_t *displs);
int numacoll_gather(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes,
                    int root);
int numacoll_gatherv(numacoll_team_t *team, const void *sendbuf, size_t sendbytes, void *recvbuf,
                     const size_t *recvbytes, const size_t *displs, int root);
int numacoll_scatter(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes,
                     int root);
int numacoll_scatterv(numacoll_team_t *team, const void *sendbuf, const size_t *sendbytes,
                      const size_t *displs, void *recvbuf, size_t recvbytes, int root);
int numacoll_alltoall(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes);
int numacoll_alltoallv(numacoll_team_t *team, const void *sendbuf, const size_t *sendbytes,
                       const size_t *sdispls, void *recvbuf, const size_t *recvbytes,
                       const size_t *rdispls);

/* ---- Reduce-scatter and prefix reductions ---------------------------------------- */

/*
 * Element types, ops and reproducibility as numacoll_allreduce: each result element is
 * ((x_0 op x_1) op x_2) ... in rank order. reduce_scatter_block: member m gets elements
 * [m * recvcount, (m + 1) * recvcount) of the reduction of every member's P * recvcount
 * elements; reduce_scatter: member m gets recvcounts[m] elements, starting at the sum of
 * recvcounts[0..m-1]; recvcounts may differ from member to member and hold zeros. Every
 * member must pass the same counts, type and op (else NUMACOLL_ERR_ARG on every member,
 * naming a member whose arguments differ). A member whose own arguments are invalid (NULL
 * buffers or recvcounts, an unknown type or op, counts past the address space) returns its
 * own error, and the others NUMACOLL_ERR_ARG naming it; the team's next calls work.
 * sendbuf = NUMACOLL_IN_PLACE: the input is taken
 * from recvbuf (which then holds the whole input vector) and the member's result is written
 * to the start of recvbuf. scan: member m gets x_0 op ... op x_m; exscan: member m > 0 gets
 * x_0 op ... op x_{m-1}, member 0's recvbuf is not touched (it may be NULL there unless in
 * place); in place, the input is taken from recvbuf and replaced by the result. Large
 * messages are pipelined in chunks of NUMACOLL_REDUCE_FRAGMENT bytes: reduce_scatter
 * folds every member's slice at once (each member its own), scan passes the prefixes from
 * member to member (each member reads and writes the message about twice).
 */
int numacoll_reduce_scatter_block(numacoll_team_t *team, const void *sendbuf, void *recvbuf,
                                  size_t recvcount, numacoll_dtype_t dtype, numacoll_op_t op);
int numacoll_reduce_scatter(numacoll_team_t *team, const void *sendbuf, void *recvbuf,
                            const size_t *recvcounts, numacoll_dtype_t dtype, numacoll_op_t op);
int numacoll_scan(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                  numacoll_dtype_t dtype, numacoll_op_t op);
int numacoll_exscan(numacoll_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                    numacoll_dtype_t dtype, numacoll_op_t op);

/** Print the team's hierarchy and choices to a stream-like callback (verbose helpers). */
int numacoll_team_describe(const numacoll_team_t *team, char *out, size_t outlen);

/* ---- Configuration (the NUMACOLL_* table) ---------------------------------------- */

/** One row of the configuration table. */
typedef struct numacoll_config_row {
    const char *name;    /**< environment variable, e.g. "NUMACOLL_TIMEOUT" */
    const char *type;    /**< "bool", "int", "size", "double", "enum", "list", "string" */
    const char *defval;  /**< default value as text */
    const char *allowed; /**< allowed values or range, as text */
    const char *doc;     /**< one-line description */
} numacoll_config_row_t;

/** The configuration table; *count receives the number of rows. */
const numacoll_config_row_t *numacoll_config_table(int *count);

/**
 * Current value (as text) of one variable: the environment value if set and valid,
 * otherwise the default. NULL for an unknown name.
 */
const char *numacoll_config_value(const char *name);

/**
 * Validate every NUMACOLL_* variable of the environment (rows of the table, and unknown
 * NUMACOLL_* names, which are rejected too). Returns NUMACOLL_OK or
 * NUMACOLL_ERR_CONFIG with numacoll_last_error() naming the variable and allowed values.
 */
int numacoll_config_check(void);

/** Re-read the environment (tests and tools; not thread-safe against running teams). */
int numacoll_config_reload(void);

#ifdef __cplusplus
}
#endif
#endif
