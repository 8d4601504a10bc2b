/*
 * numacoll key-value store: one writer (a PMIx-like server daemon) publishes job data in
 * shared memory; many reader processes of the node (the application processes) read it
 * without system calls.
 *
 * Keys are (namespace, rank, key string) as in PMIx; values are byte strings (may be
 * empty). The server stages puts and deletes and makes a batch visible atomically with
 * numacoll_kvdb_commit(). Readers see either the whole batch or none of it.
 *
 * Memory: the store lives in memfd segments (never a name in /dev/shm, so no file can be
 * left behind by a crash): a header segment (layout, current generation), a lock segment
 * (reader slots, lock words) and a data segment (open-addressing hash table + append-only
 * entry heap). When the data segment is full, the server builds a new generation (grown
 * or compacted) and publishes it; readers switch to it at their next access. Pages are
 * reserved with posix_fallocate, so a full memory filesystem is NUMACOLL_ERR_NOMEM, never
 * a SIGBUS.
 *
 * Readers attach with the handle string numacoll_kvdb_handle() returns on the server
 * ("/proc/<server pid>/fd/<n>"): pass it to them by any means (environment, argv, a
 * socket). Attaching needs the permission to open the server's /proc fd links, i.e. the
 * same user.
 *
 * Trust: a reader cannot crash the server or the other readers through the header and
 * data segments. Readers map them read-only; they are mode 0400 and sealed against writes
 * (F_SEAL_FUTURE_WRITE), so no process can make them writable again, and every segment is
 * sealed against truncation. The server keeps private copies of everything it decides on
 * and checks what it reads back from the table; readers check every offset and length
 * they read. A table found corrupt (possible only where the kernel lacks that seal, Linux
 * < 5.1, and another process of the user has chmod-ed a segment) gives
 * NUMACOLL_ERR_STATE naming what is out of range. The lock segment (reader slots, lock
 * words) is writable by every reader: one that overwrites lock words can stall the others
 * and the server (NUMACOLL_TIMEOUT bounds the waits: a commit then fails with
 * NUMACOLL_ERR_TIMEOUT) or let them copy a value while it changes (bounds checks keep
 * that from crashing them), but not crash the server: no scheme keeps a pointer there.
 * The mutexes of 1n-mutex, 2n-mutex and n-mutex-signal are words holding the holder's
 * pid; one holding a dead process's pid, or no valid pid, is taken over. The exception
 * to the bounded waits is rwlock: some values written over its POSIX rwlock make the
 * server spin inside glibc past NUMACOLL_TIMEOUT.
 *
 * Locking: NUMACOLL_KVDB_LOCK (or params.lock) selects the reader/writer scheme; see
 * numacoll_kvdb_locks(). Readers killed at any point (even holding their lock, or half
 * way into taking or dropping it) neither hang the server nor leak their reader slot. (The
 * rwlock scheme recovers a dead reader's hold from glibc's reader count; with another C
 * library its writer fails with NUMACOLL_ERR_TIMEOUT under NUMACOLL_TIMEOUT instead.)
 *
 * Threads: the server's calls must come from one thread at a time; a reader handle must
 * be used by one thread at a time (attach once per thread otherwise).
 *
 * All calls return NUMACOLL_OK or a negative numacoll_status_t with numacoll_last_error()
 * set (see numacoll.h). A NULL handle or a NULL required argument is NUMACOLL_ERR_ARG with
 * a message naming the argument ("numacoll_kvdb_put: db is NULL"); the calls that return a
 * pointer return NULL then, and numacoll_kvdb_discard only sets the message.
 */
#ifndef NUMACOLL_KVDB_H
#define NUMACOLL_KVDB_H

#include <numacoll/numacoll.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Longest namespace (bytes, without the terminating NUL), as PMIX_MAX_NSLEN. */
#define NUMACOLL_KVDB_MAX_NSLEN 255
/** Longest key string (bytes, without the terminating NUL), as PMIX_MAX_KEYLEN. */
#define NUMACOLL_KVDB_MAX_KEYLEN 511

typedef struct numacoll_kvdb numacoll_kvdb_t;

/** Values of numacoll_kvdb_params_t.grow. */
enum { NUMACOLL_KVDB_GROW_CONFIG = 0, NUMACOLL_KVDB_GROW_YES = 1, NUMACOLL_KVDB_GROW_NO = 2 };

/** Parameters of numacoll_kvdb_create(). Zero-initialise; zero fields take the config. */
typedef struct numacoll_kvdb_params {
    const char *lock;  /**< lock scheme name; NULL = NUMACOLL_KVDB_LOCK */
    int max_readers;   /**< reader slots; 0 = NUMACOLL_KVDB_MAX_READERS */
    size_t buckets;    /**< initial hash buckets (rounded up to a power of two);
                            0 = NUMACOLL_KVDB_BUCKETS */
    size_t heap_bytes; /**< initial entry heap; 0 = NUMACOLL_KVDB_HEAP */
    int grow;          /**< NUMACOLL_KVDB_GROW_* ; 0 = NUMACOLL_KVDB_GROW */
} numacoll_kvdb_params_t;

/** Create a store (the calling process becomes its server/writer). */
int numacoll_kvdb_create(const numacoll_kvdb_params_t *params, numacoll_kvdb_t **db);

/** Handle string readers pass to numacoll_kvdb_attach() (server only; NULL for a reader's
 *  handle or NULL, with numacoll_last_error() saying which). */
const char *numacoll_kvdb_handle(const numacoll_kvdb_t *db);

/** Attach as a reader; takes a reader slot (NUMACOLL_ERR_FULL if all are taken by live
 *  readers; slots of readers that died are taken over). */
int numacoll_kvdb_attach(const char *handle, numacoll_kvdb_t **db);

/** Detach a reader (releases its slot) or destroy the server's store (readers that are
 *  still attached keep their mappings until they detach). NULL is accepted. */
int numacoll_kvdb_close(numacoll_kvdb_t *db);

/** Name of the lock scheme the store uses (NULL for NULL). */
const char *numacoll_kvdb_lock_name(const numacoll_kvdb_t *db);

/**
 * Stage a put (server). The value (@p len bytes, may be 0) is copied now; it becomes
 * visible at the next commit. A later put of the same key replaces the value.
 * NUMACOLL_ERR_TOOBIG: namespace, key or value longer than the limits (message says which).
 */
int numacoll_kvdb_put(numacoll_kvdb_t *db, const char *nspace, uint32_t rank, const char *key,
                      const void *value, size_t len);

/** Stage a delete (server). NUMACOLL_ERR_NOT_FOUND if the key is neither committed nor
 *  staged. */
int numacoll_kvdb_delete(numacoll_kvdb_t *db, const char *nspace, uint32_t rank, const char *key);

/**
 * Make every staged operation visible at once (server). All or nothing: on
 * NUMACOLL_ERR_FULL (table full and growth disabled or NUMACOLL_KVDB_MAX_SIZE reached),
 * NUMACOLL_ERR_NOMEM or NUMACOLL_ERR_STATE (the table was found corrupt; message names
 * the bucket) nothing of the batch is applied and the batch stays staged.
 */
int numacoll_kvdb_commit(numacoll_kvdb_t *db);

/** Drop the staged operations (server; NULL only sets numacoll_last_error()). */
void numacoll_kvdb_discard(numacoll_kvdb_t *db);

/**
 * Read a value (reader or server). Copies it to @p buf and stores its length in @p len.
 * NUMACOLL_ERR_NOT_FOUND: no such key. NUMACOLL_ERR_TOOBIG: @p buflen is smaller than
 * the value; *len receives the needed size (the contents of @p buf are then unspecified).
 * @p buf may be NULL when @p buflen is 0. NUMACOLL_ERR_STATE: the table is corrupt where
 * the key's lookup went (message names the bucket and what is out of range).
 */
int numacoll_kvdb_get(numacoll_kvdb_t *db, const char *nspace, uint32_t rank, const char *key,
                      void *buf, size_t buflen, size_t *len);

/** Callback of numacoll_kvdb_iterate; return non-zero to stop. */
typedef int (*numacoll_kvdb_iter_fn)(const char *key, const void *value, size_t len, void *ctx);

/**
 * Call @p fn for every key of (@p nspace, @p rank), from a consistent snapshot taken under
 * the read lock (the callback runs outside the lock, on private copies). Order unspecified.
 * *count (optional) receives the number of keys of the snapshot; @p fn may be NULL to
 * count only.
 */
int numacoll_kvdb_iterate(numacoll_kvdb_t *db, const char *nspace, uint32_t rank,
                          numacoll_kvdb_iter_fn fn, void *ctx, size_t *count);

/** Statistics of a store handle. */
typedef struct numacoll_kvdb_stats {
    uint64_t generation; /**< data segment generation (1 = first; +1 per grow/compact) */
    uint64_t entries;    /**< live keys */
    uint64_t buckets;    /**< hash buckets of the current generation */
    uint64_t heap_bytes; /**< entry heap of the current generation */
    uint64_t heap_used;  /**< bytes of the heap in use (live + garbage) */
    uint64_t retries;    /**< optimistic reads retried by this handle */
    uint64_t recovered;  /**< locks recovered from dead owners by this handle */
    int slot;            /**< reader slot (-1 on the server) */
} numacoll_kvdb_stats_t;

int numacoll_kvdb_stats(numacoll_kvdb_t *db, numacoll_kvdb_stats_t *st);

/** Registered lock schemes (name + description); *count receives their number. */
const numacoll_algorithm_info_t *numacoll_kvdb_locks(int *count);

#ifdef __cplusplus
}
#endif
#endif
