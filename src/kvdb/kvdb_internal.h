/*
 * Internals of the key-value store shared by store.c, the benchmark and the tests.
 */
#ifndef NC_KVDB_INTERNAL_H
#define NC_KVDB_INTERNAL_H

#include "../core/nc_internal.h"
#include "locks/lock.h"

#include <numacoll/kvdb.h>

NC_CFG_LINK(kvdb); /* config_rows.c: this layer's rows (config.h) */

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif
#include <time.h>

/* ---- direct lock access (benchmark, tests) ---------------------------------------- */

/** Read section on a reader handle; *token for rd_unlock. */
int nc_kvdb_rdlock(numacoll_kvdb_t *db, uint64_t *token);
/** NUMACOLL_OK, NC_KVLOCK_RETRY (optimistic scheme: redo the read) or an error. */
int nc_kvdb_rdunlock(numacoll_kvdb_t *db, uint64_t token);
int nc_kvdb_wrlock(numacoll_kvdb_t *db);   /* server */
int nc_kvdb_wrunlock(numacoll_kvdb_t *db); /* server */
/** Two scratch words, each on its own line of the header segment, for the benchmark's
 *  and the tests' correctness checks (written by the server under the write lock; readers
 *  map them read-only). */
_Atomic uint64_t *nc_kvdb_scratch(numacoll_kvdb_t *db, int i);
/** Tests: the lock scheme's area in the lock segment (*@p bytes long), writable in every
 *  process attached to the store. */
char *nc_kvdb_lock_area(numacoll_kvdb_t *db, size_t *bytes);
const nc_kvlock_ops_t *nc_kvdb_lock_ops(const numacoll_kvdb_t *db);
/** Reader slot of this handle (-1 on the server). */
int nc_kvdb_slot(const numacoll_kvdb_t *db);
/** Attaches counted on slot @p i (monotonic). */
uint32_t nc_kvdb_slot_attaches(numacoll_kvdb_t *db, int i);
/** pid owning slot @p i (0 = free). */
int nc_kvdb_slot_pid(numacoll_kvdb_t *db, int i);
/** Tests only: @p on = 0 makes the stores created from now on in this process leave their
 *  header and data segments open to writes by other processes (mode 0600, no
 *  F_SEAL_FUTURE_WRITE), as a kernel without that seal does once another process of the
 *  user has chmod-ed them; 1 (the default) protects them. */
void nc_kvdb_test_write_protect(int on);

/* ---- Get profiler ------------------------------------------------------------------ */

/* Points: P1 entry, P2 before lock, P3 after lock, P4 key found, P5 value copied,
 * P6 after unlock, P7 exit (stamps[0..6]). */
#define NC_KV_PROF_POINTS 7

enum { NC_KV_CLOCK_CPUID = 0, NC_KV_CLOCK_LFENCE = 1, NC_KV_CLOCK_GETTIME = 2 };
/** Clock used by the profiled get (set once by the benchmark before it measures). */
extern int nc_kv_prof_clock;

/* The profiler's portable clock (NC_KV_CLOCK_GETTIME, and any clock off x86): ns. */
static inline uint64_t nc_kv_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Start-of-interval stamp: serialise (cpuid) so earlier instructions are done, then read. */
static inline uint64_t nc_kv_stamp_start(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (nc_kv_prof_clock == NC_KV_CLOCK_CPUID) {
        unsigned a, b, c, d;
        __cpuid(0, a, b, c, d);
        __asm__ __volatile__("" ::"r"(a), "r"(b), "r"(c), "r"(d) : "memory");
        return __rdtsc();
    }
    if (nc_kv_prof_clock == NC_KV_CLOCK_LFENCE) {
        _mm_lfence();
        uint64_t t = __rdtsc();
        _mm_lfence();
        return t;
    }
#endif
    return nc_kv_mono_ns();
}

/* End-of-interval (and intermediate) stamp: rdtscp waits for earlier instructions, cpuid
 * keeps later ones from starting before the read. */
static inline uint64_t nc_kv_stamp_end(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (nc_kv_prof_clock == NC_KV_CLOCK_CPUID) {
        unsigned aux, a, b, c, d;
        uint64_t t = __rdtscp(&aux);
        __cpuid(0, a, b, c, d);
        __asm__ __volatile__("" ::"r"(a), "r"(b), "r"(c), "r"(d) : "memory");
        return t;
    }
    if (nc_kv_prof_clock == NC_KV_CLOCK_LFENCE) {
        unsigned aux;
        uint64_t t = __rdtscp(&aux);
        _mm_lfence();
        return t;
    }
#endif
    return nc_kv_mono_ns();
}

/** Same as numacoll_kvdb_get, recording the 7 profile points in @p stamps. The plain get
 *  is a separate instantiation without any stamp code, so profiling costs nothing off. */
int nc_kvdb_get_profiled(numacoll_kvdb_t *db, const char *nspace, uint32_t rank, const char *key,
                         void *buf, size_t buflen, size_t *len, uint64_t stamps[NC_KV_PROF_POINTS]);

#endif
