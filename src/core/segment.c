/*
 * Shared-memory segments created collectively by a set of processes.
 *
 * Life cycle (see nc_seg_create_collective in nc_internal.h):
 *   1. rank 0 creates the file: by default an anonymous memfd (peers open it through
 *      /proc/<pid>/fd/<n>, so no name exists at any moment), otherwise a random O_EXCL
 *      name in /dev/shm, mode 0600; it sizes it and reserves the global range with
 *      posix_fallocate (lack of memory is an error here, never a SIGBUS later);
 *   2. the handle goes to everyone through the OOB allgather; all open + mmap it;
 *   3. the outcome is agreed; a POSIX name is unlinked right then, so from this point no
 *      file is left behind whatever happens to any process;
 *   4. each rank sets MADV_RANDOM (no readahead that would allocate neighbours' pages on
 *      our node), optionally binds its own range to its NUMA node, reserves its own range
 *      (pages come from the allocating process's node) and touches it; the outcome is
 *      agreed again.
 *
 * Transparent huge pages (NUMACOLL_SHM_HUGEPAGES): Linux's readahead does not allocate
 * tmpfs pages, but a shmem THP policy does the harm the paper's readahead would: with
 * /sys/kernel/mm/transparent_hugepage/shmem_enabled = always, within_size or force, the
 * first process to touch a 2 MiB-aligned stretch of the file gets one 2 MiB page for all of
 * it, on its own node, whoever's blocks it holds (measured on kernel 6.18, memfd: a P = 4
 * broadcast's segments held 12 MiB of huge pages). By default ("off") every rank therefore
 * sets MADV_NOHUGEPAGE on its mapping before anything is touched, and reservations go
 * through that mapping (MADV_POPULATE_WRITE): posix_fallocate takes its page size from the
 * file's policy, not from any mapping, and still allocated a 2 MiB page for a 20 KiB range
 * under "always". A kernel without MADV_POPULATE_WRITE (before 5.14) reserves with
 * posix_fallocate, and only faults are kept to small pages.
 */
#include "nc_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

size_t nc_page_size(void)
{
    static size_t ps;
    if (!ps) ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

size_t nc_line_size(void)
{
    const char *v = nc_cfg_str(NC_CFG_CACHELINE);
    if (strcmp(v, "auto") != 0) return (size_t)atoi(v);
#if defined(__x86_64__) || defined(__i386__)
    return 128; /* two 64-byte lines: the adjacent-line prefetcher pairs them */
#else
    long l = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
    if (l < 32 || l > NC_MAX_LINE) l = 128;
    return (size_t)l;
#endif
}

typedef struct agree_msg {
    int32_t status;
    char msg[252];
} agree_msg_t;

int nc_agree(int rank, int nprocs, numacoll_oob_allgather_fn allgather, void *ctx, int status)
{
    agree_msg_t mine = {.status = status};
    if (status != NUMACOLL_OK) snprintf(mine.msg, sizeof mine.msg, "%s", numacoll_last_error());
    agree_msg_t *all = calloc((size_t)nprocs, sizeof *all);
    if (!all) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory agreeing on a status");
    int orc = nc_oob_allgather(allgather, &mine, all, sizeof mine, ctx, "agreeing on a status");
    if (orc != NUMACOLL_OK) {
        free(all);
        return orc;
    }
    int rc = NUMACOLL_OK;
    for (int r = 0; r < nprocs; r++) {
        if (all[r].status != NUMACOLL_OK) {
            rc = all[r].status;
            if (r != rank)
                nc_error(rc, "rank %d failed: %.*s", r, (int)sizeof all[r].msg, all[r].msg);
            break;
        }
    }
    free(all);
    return rc;
}

static void random_name(char *out, size_t n)
{
    unsigned char rnd[8];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        uint64_t x = nc_now_ns() ^ ((uint64_t)getpid() << 32);
        memcpy(rnd, &x, sizeof rnd);
    }
    snprintf(out, n, "/numacoll-%d-%02x%02x%02x%02x%02x%02x%02x%02x", (int)getpid(), rnd[0], rnd[1],
             rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
}

size_t nc_shm_free_bytes(void)
{
    struct statvfs sv;
    if (statvfs("/dev/shm", &sv) != 0) return SIZE_MAX;
    return (size_t)sv.f_bavail * sv.f_frsize;
}

static int populate(void *addr, size_t len, const char *what, int test_hook);

/* Bytes this process holds in live segments: the sum of their shares (size / members).
 * Relaxed: a budget, read and updated by threads creating or destroying different teams;
 * two concurrent creations may both pass a check that only one of them would have. */
static _Atomic size_t g_seg_held;

size_t nc_seg_held(void)
{
    return atomic_load_explicit(&g_seg_held, memory_order_relaxed);
}

size_t nc_seg_allowance(void)
{
    size_t max = nc_cfg_size(NC_CFG_SHM_MAX);
    if (max) return max;
    long pages = sysconf(_SC_PHYS_PAGES), cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (pages <= 0 || cpus <= 0) return SIZE_MAX;
    return (size_t)pages / 4 * nc_page_size() / (size_t)cpus;
}

/* NUMACOLL_ERR_NOMEM when a share of @p share more bytes would pass NUMACOLL_SHM_MAX */
static int check_allowance(size_t share, const char *what)
{
    size_t held = nc_seg_held(), max = nc_seg_allowance();
    if (share <= max && held <= max - share) return NUMACOLL_OK;
    return nc_error(NUMACOLL_ERR_NOMEM,
                    "%s would take this process's shared memory in numacoll segments to %zu "
                    "bytes, past NUMACOLL_SHM_MAX (%zu bytes%s); set it higher, or use fewer "
                    "communicators/teams at a time",
                    what, held + share, max,
                    nc_cfg_size(NC_CFG_SHM_MAX) ? "" : ": a quarter of memory per CPU");
}

static int reserve(int fd, size_t off, size_t len, const char *what)
{
    if (len == 0) return NUMACOLL_OK;
    int err;
    do {
        err = posix_fallocate(fd, (off_t)off, (off_t)len);
    } while (err == EINTR);
    if (err == 0) return NUMACOLL_OK;
    size_t free_now = nc_shm_free_bytes();
    unsigned long long avail = free_now == SIZE_MAX ? 0 : (unsigned long long)free_now;
    if (err == ENOSPC || err == ENOMEM)
        return nc_error(NUMACOLL_ERR_NOMEM,
                        "cannot reserve %zu bytes of shared memory for %s in /dev/shm (%llu "
                        "bytes free): %s; enlarge /dev/shm (e.g. docker --shm-size) or use "
                        "fewer/smaller buffers",
                        len, what, avail, strerror(err));
    return nc_error(NUMACOLL_ERR_SYS, "posix_fallocate of %zu bytes for %s failed: %s", len, what,
                    strerror(err));
}

/* Open the segment rank 0 published: "memfd:<pid>:<fd>" or a POSIX shm name. */
static int attach_fd(const char *name, const char *what)
{
    int fd;
    int pid, num;
    if (sscanf(name, "memfd:%d:%d", &pid, &num) == 2) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, num);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            return nc_error(NUMACOLL_ERR_SYS, "open(%s) to attach %s failed: %s", path, what,
                            strerror(errno));
        return fd;
    }
    fd = shm_open(name, O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return nc_error(NUMACOLL_ERR_SYS, "shm_open(%s) to attach %s failed: %s", name, what,
                        strerror(errno));
    return fd;
}

/* Rank 0: create the file of one attempt (memfd or named POSIX shm). */
static int create_fd(int use_memfd, char *name, size_t namelen, const char *what)
{
    int fd = -1;
    if (use_memfd) {
        fd = memfd_create("numacoll", MFD_CLOEXEC);
        if (fd < 0)
            return nc_error(NUMACOLL_ERR_SYS, "memfd_create for %s failed: %s", what,
                            strerror(errno));
        /* memfd_create makes the file 0777; peers of the same user open it through
         * /proc/<pid>/fd, which needs no more than the owner's bits */
        if (fchmod(fd, 0600) != 0) {
            int e = errno;
            close(fd);
            return nc_error(NUMACOLL_ERR_SYS, "fchmod(0600) of the memfd for %s failed: %s",
                            what, strerror(e));
        }
        snprintf(name, namelen, "memfd:%d:%d", (int)getpid(), fd);
        return fd;
    }
    for (int tries = 0; tries < 8; tries++) {
        random_name(name, namelen);
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        name[0] = 0;
        return nc_error(NUMACOLL_ERR_SYS, "shm_open for %s failed: %s", what, strerror(e));
    }
    return fd;
}

int nc_seg_create_collective(int rank, int nprocs, numacoll_oob_allgather_fn allgather, void *ctx,
                             size_t size, size_t reserve0, size_t own_off, size_t own_len,
                             size_t own_now, int numa_node, const char *what, nc_seg_t *seg)
{
    memset(seg, 0, sizeof *seg);
    int fd = -1, rc = NUMACOLL_OK;
    char name[64] = {0};
    void *base = MAP_FAILED;

    if (size == 0 || own_off + own_len > size || reserve0 > size || own_now > own_len)
        return nc_error(NUMACOLL_ERR_ARG, "invalid segment geometry for %s", what);
    /* NUMACOLL_SHM_HUGEPAGES=off (see the top of this file): no THP on our mappings, and
     * reservations through them where the kernel can (vma_reserve) */
    int no_thp = strcmp(nc_cfg_str(NC_CFG_SHM_HUGEPAGES), "off") == 0;
    int vma_reserve = no_thp && nc_seg_populate_supported();

    /* Backends, in order: an anonymous memfd that peers open through /proc/<pid>/fd (no
     * name ever exists, so nothing can be left behind even if rank 0 dies during
     * creation), then a named POSIX segment unlinked once everyone has attached (the
     * fallback when /proc of rank 0 cannot be opened, e.g. another pid namespace). */
    const char *backend = nc_cfg_str(NC_CFG_SHM_BACKEND);
    int first = strcmp(backend, "posix") == 0 ? 1 : 0;
    int last = strcmp(backend, "memfd") == 0 ? 0 : 1;
    const size_t share = (size + (size_t)nprocs - 1) / (size_t)nprocs;
    for (int attempt = first; attempt <= last; attempt++) {
        int use_memfd = attempt == 0;
        /* any member past NUMACOLL_SHM_MAX: it creates or attaches nothing, and the
         * agreement below fails the segment on every member */
        rc = check_allowance(share, what);
        name[0] = 0;
        fd = -1;
        base = MAP_FAILED;

        /* 1. rank 0 creates and reserves the global part */
        if (rank == 0 && rc == NUMACOLL_OK) {
            fd = create_fd(use_memfd, name, sizeof name, what);
            if (fd < 0)
                rc = fd;
            else if (ftruncate(fd, (off_t)size) != 0)
                rc = nc_error(NUMACOLL_ERR_SYS, "ftruncate(%s, %zu) for %s failed: %s", name, size,
                              what, strerror(errno));
            else if (!vma_reserve)
                rc = reserve(fd, 0, reserve0, what);
        }

        /* 2. share the name (and rank 0's status) */
        struct {
            int32_t status;
            char name[60];
        } msg = {0}, *all = calloc((size_t)nprocs, sizeof msg);
        if (!all) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory"); /* cannot agree */
        msg.status = rc;
        memcpy(msg.name, name, sizeof msg.name - 1);
        char doing[96];
        snprintf(doing, sizeof doing, "creating %s", what);
        /* the exchange's own status apart from rank 0's creation status (msg.status):
         * rank 0 must not take a successful exchange for a successful creation */
        int orc = nc_oob_allgather(allgather, &msg, all, sizeof msg, ctx, doing);
        if (orc != NUMACOLL_OK) {
            free(all);
            rc = orc;
            goto out_unlink;
        }
        int st0 = all[0].status;
        memcpy(name, all[0].name, sizeof all[0].name);
        name[sizeof all[0].name - 1] = 0;
        free(all);
        if (st0 != NUMACOLL_OK) {
            /* every member leaves this attempt here alike; rank 0 keeps its own error */
            rc = rank == 0 ? st0
                           : nc_error(st0, "rank 0 could not create the shared segment for %s",
                                      what);
            /* the other backend cannot help a lack of memory */
            if (attempt < last && use_memfd && st0 != NUMACOLL_ERR_NOMEM) goto retry;
            goto out_unlink;
        }

        if (rank != 0 && rc == NUMACOLL_OK) {
            fd = attach_fd(name, what);
            if (fd < 0) rc = fd;
        }
        if (rc == NUMACOLL_OK) {
            base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (base == MAP_FAILED)
                rc = nc_error(NUMACOLL_ERR_SYS, "mmap of %zu bytes for %s failed: %s", size, what,
                              strerror(errno));
        }
        /* before this process touches any page of it; EINVAL: a kernel without THP */
        if (rc == NUMACOLL_OK && no_thp && madvise(base, size, MADV_NOHUGEPAGE) != 0 &&
            errno != EINVAL)
            nc_log(2, rank, nprocs, "MADV_NOHUGEPAGE on %s failed: %s", what, strerror(errno));
        if (rc == NUMACOLL_OK && rank == 0 && vma_reserve) rc = populate(base, reserve0, what, 0);

        /* 3. agree, then unlink: nothing can be left in /dev/shm after this */
        rc = nc_agree(rank, nprocs, allgather, ctx, rc);
        if (rank == 0 && !use_memfd) shm_unlink(name);
        if (rc == NUMACOLL_OK) break;
        if (attempt < last && rc != NUMACOLL_ERR_NOMEM) {
            nc_log(1, rank, nprocs, "memfd segment for %s not usable (%s); using POSIX shm", what,
                   numacoll_last_error());
            goto retry;
        }
        goto out;
    retry:
        if (base != MAP_FAILED) munmap(base, size);
        if (fd >= 0) close(fd);
    }

    /* 4. own range: no readahead, optional NUMA bind, reserve, first touch */
    madvise(base, size, MADV_RANDOM);
    if (own_len) {
        char *own = (char *)base + own_off;
        if (numa_node >= 0 && nc_cfg_bool(NC_CFG_NUMA_BIND) && numa_available() >= 0 &&
            numa_max_node() > 0) {
            unsigned long mask[16] = {0};
            if (numa_node < (int)(sizeof mask * 8)) {
                mask[numa_node / (8 * sizeof(long))] |= 1ul << (numa_node % (8 * sizeof(long)));
                if (mbind(own, own_len, MPOL_PREFERRED, mask, sizeof mask * 8, 0) != 0)
                    nc_log(2, rank, nprocs, "mbind of my block to node %d failed: %s", numa_node,
                           strerror(errno));
            }
        }
        /* populate maps the pages it allocates; posix_fallocate does not, so then touch */
        rc = vma_reserve ? populate(own, own_now, what, 0) : reserve(fd, own_off, own_now, what);
        if (rc == NUMACOLL_OK && !vma_reserve) {
            size_t ps = nc_page_size();
            for (size_t o = 0; o < own_now; o += ps)
                ((volatile char *)own)[o] = 0;
        }
    }
    rc = nc_agree(rank, nprocs, allgather, ctx, rc);
    if (rc != NUMACOLL_OK) goto out;

    close(fd);
    seg->base = base;
    seg->size = size;
    seg->share = share;
    atomic_fetch_add_explicit(&g_seg_held, share, memory_order_relaxed);
    snprintf(seg->name, sizeof seg->name, "%s", name);
    return NUMACOLL_OK;

out_unlink:
    if (rank == 0 && name[0] == '/') shm_unlink(name);
out:
    if (base != MAP_FAILED) munmap(base, size);
    if (fd >= 0) close(fd);
    return rc;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux >= 5.14 */
#endif

static _Atomic int populate_fail_next; /* tests: the call that fails, counting down */

void nc_seg_debug_fail_populate(int n)
{
    atomic_store_explicit(&populate_fail_next, n, memory_order_relaxed);
}

int nc_seg_populate_supported(void)
{
    static _Atomic int known; /* 0 unknown, 1 yes, 2 no */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (k) return k == 1;
    size_t ps = nc_page_size();
    void *p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    k = 2;
    if (p != MAP_FAILED) {
        if (madvise(p, ps, MADV_POPULATE_WRITE) == 0) k = 1;
        munmap(p, ps);
    }
    atomic_store_explicit(&known, k, memory_order_relaxed);
    return k == 1;
}

int nc_seg_populate(void *addr, size_t len, const char *what)
{
    return populate(addr, len, what, 1);
}

/* nc_seg_populate; @p test_hook: the call counts for nc_seg_debug_fail_populate (the
 * segment's own reservations do not, so a test's count starts at the queues) */
static int populate(void *addr, size_t len, const char *what, int test_hook)
{
    if (len == 0) return NUMACOLL_OK;
    size_t ps = nc_page_size();
    char *a = (char *)((uintptr_t)addr & ~(uintptr_t)(ps - 1));
    len = nc_round_up(len + (size_t)((char *)addr - a), ps);
    int err = 0;
    if (test_hook && atomic_load_explicit(&populate_fail_next, memory_order_relaxed) > 0 &&
        atomic_fetch_sub_explicit(&populate_fail_next, 1, memory_order_relaxed) == 1) {
        err = EFAULT; /* as the kernel reports a page it could not allocate */
    } else {
        while (madvise(a, len, MADV_POPULATE_WRITE) != 0) {
            err = errno;
            if (err != EINTR && err != EAGAIN) break;
            err = 0;
        }
    }
    if (err == 0) return NUMACOLL_OK;
    size_t free_now = nc_shm_free_bytes();
    unsigned long long avail = free_now == SIZE_MAX ? 0 : (unsigned long long)free_now;
    /* MADV_POPULATE_WRITE says EFAULT where a plain store would have raised SIGBUS (no
     * page to be had: a full tmpfs or the memory cgroup's limit); "Bad address" would
     * mislead, so name the cause */
    return nc_error(NUMACOLL_ERR_NOMEM,
                    "cannot allocate %zu bytes of shared memory for %s: %s (/dev/shm has %llu "
                    "bytes free; a full /dev/shm or a memory limit): enlarge /dev/shm (e.g. "
                    "docker --shm-size) or use fewer/smaller buffers",
                    len, what, err == EFAULT ? "the kernel has no pages for it (EFAULT)"
                                             : strerror(err),
                    avail);
}

void nc_seg_destroy(nc_seg_t *seg)
{
    if (seg && seg->base) {
        munmap(seg->base, seg->size);
        atomic_fetch_sub_explicit(&g_seg_held, seg->share, memory_order_relaxed);
        seg->base = NULL;
    }
}

int nc_seg_check_placement(const void *addr, size_t len, int expect, size_t *on_node,
                           size_t *elsewhere)
{
    size_t ps = nc_page_size();
    size_t n = (len + ps - 1) / ps;
    *on_node = *elsewhere = 0;
    if (n == 0 || numa_available() < 0) return -1;
    void **pages = malloc(n * sizeof *pages);
    int *status = malloc(n * sizeof *status);
    if (!pages || !status) {
        free(pages);
        free(status);
        return -1;
    }
    const char *a = (const char *)((uintptr_t)addr & ~(uintptr_t)(ps - 1));
    for (size_t i = 0; i < n; i++)
        pages[i] = (void *)(a + i * ps);
    int best = -1;
    if (move_pages(0, (unsigned long)n, pages, NULL, status, 0) == 0) {
        int counts[64] = {0};
        for (size_t i = 0; i < n; i++) {
            if (status[i] < 0) continue;
            if (status[i] < 64) counts[status[i]]++;
            if (status[i] == expect)
                (*on_node)++;
            else
                (*elsewhere)++;
        }
        for (int k = 0; k < 64; k++)
            if (counts[k] && (best < 0 || counts[k] > counts[best])) best = k;
    }
    free(pages);
    free(status);
    return best;
}
