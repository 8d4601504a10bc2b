/*
 * The key-value store's shared-memory segments (layout and trust: store.h).
 *
 * All are memfd files (memfd_create), never names in /dev/shm: a crash of any process
 * cannot leave a file behind, because the memory lives exactly as long as some process
 * maps it or holds its fd. Readers reach the server's memfds through
 * /proc/<server pid>/fd/<n> (the handle names the header segment; the header names the
 * lock segment's fd and the current data generation's); opening such a link needs the
 * same rights as reading the server's fds (same user), and the files' modes limit it
 * further (0400 for the segments readers only read, 0600 for the lock segment). We chose
 * this over shm_open + immediate unlink because a reader may attach at any time (a named
 * file would have to stay until the last reader came, i.e. forever) and over passing fds
 * on a Unix socket because a string handle fits PMIx-style environment hand-over. Pages
 * are reserved with posix_fallocate: a full memory filesystem is NUMACOLL_ERR_NOMEM, not
 * a SIGBUS at first touch.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Tests only: 0 creates header and data segments that readers can make writable (mode
 * 0600, no F_SEAL_FUTURE_WRITE), as on a kernel without that seal after another process
 * of the user has chmod-ed them. */
static int write_protect = 1;

void nc_kvdb_test_write_protect(int on)
{
    write_protect = on;
}

#define SEALS_SIZE (F_SEAL_SHRINK | F_SEAL_GROW)

static int reserve(int fd, size_t len, const char *what)
{
    int err;
    do {
        err = posix_fallocate(fd, 0, (off_t)len);
    } while (err == EINTR);
    if (!err) return NUMACOLL_OK;
    if (err == ENOSPC || err == ENOMEM)
        return nc_error(NUMACOLL_ERR_NOMEM,
                        "kvdb: cannot reserve %zu bytes of shared memory for the %s: %s", len, what,
                        strerror(err));
    return nc_error(NUMACOLL_ERR_SYS, "kvdb: posix_fallocate of %zu bytes for the %s: %s", len,
                    what, strerror(err));
}

/* Seal @p fd: its size always; with @p ro also against writes through any mapping or fd
 * made from now on (our own read-write mapping, made before, keeps working). */
static int seal(int fd, int ro, const char *what)
{
    static _Atomic int logged; /* the missing seal is logged once per process */
    int seals = SEALS_SIZE | F_SEAL_SEAL;
    if (ro && write_protect) {
        if (fcntl(fd, F_ADD_SEALS, seals | F_SEAL_FUTURE_WRITE) == 0) return NUMACOLL_OK;
        if (errno != EINVAL)
            return nc_error(NUMACOLL_ERR_SYS, "kvdb: sealing the %s failed: %s", what,
                            strerror(errno));
        if (!atomic_exchange_explicit(&logged, 1, memory_order_relaxed))
            nc_log(1, -1, 0,
                   "kvdb: this kernel has no F_SEAL_FUTURE_WRITE (Linux < 5.1): only mode 0400 "
                   "keeps readers from writing the store's header and data segments");
    }
    if (fcntl(fd, F_ADD_SEALS, seals) != 0)
        return nc_error(NUMACOLL_ERR_SYS, "kvdb: sealing the %s failed: %s", what,
                        strerror(errno));
    return NUMACOLL_OK;
}

/* Create a memfd of @p size bytes (pages reserved) mapped read-write and sealed: @p ro for
 * a segment other processes only read (mode 0400, write-sealed), else mode 0600. */
static int memfd_segment(size_t size, int ro, const char *what, int *fdp, char **basep)
{
    int fd = memfd_create("numacoll-kvdb", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return nc_error(NUMACOLL_ERR_SYS, "kvdb: memfd_create for the %s failed: %s", what,
                        strerror(errno));
    int rc = NUMACOLL_OK;
    if (ftruncate(fd, (off_t)size) != 0)
        rc = nc_error(NUMACOLL_ERR_NOMEM, "kvdb: cannot size the %s to %zu bytes: %s", what, size,
                      strerror(errno));
    else
        rc = reserve(fd, size, what);
    /* the mode limits who can open the /proc link later; our fd is read-write already */
    if (!rc && fchmod(fd, ro && write_protect ? 0400 : 0600) != 0)
        rc = nc_error(NUMACOLL_ERR_SYS, "kvdb: fchmod of the %s failed: %s", what, strerror(errno));
    void *p = MAP_FAILED;
    if (!rc) {
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            rc = nc_error(NUMACOLL_ERR_NOMEM, "kvdb: mmap of %zu bytes for the %s failed: %s",
                          size, what, strerror(errno));
    }
    if (!rc) rc = seal(fd, ro, what);
    if (rc) {
        if (p != MAP_FAILED) munmap(p, size);
        close(fd);
        return rc;
    }
    *fdp = fd;
    *basep = p;
    return NUMACOLL_OK;
}

/* Open one of the server's fds through /proc and check that it is a segment whose size
 * nobody can change (a truncation under our mapping would be a SIGBUS). */
static int open_proc_fd(pid_t pid, int fd, int flags, const char *what, int *out, size_t *size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
    int f = open(path, flags | O_CLOEXEC | O_NONBLOCK);
    if (f < 0)
        return nc_error(errno == ENOENT || errno == ESRCH ? NUMACOLL_ERR_NOT_FOUND
                                                          : NUMACOLL_ERR_SYS,
                        "kvdb: cannot open the %s at %s: %s (is the server alive, and are we "
                        "the same user?)",
                        what, path, strerror(errno));
    struct stat st;
    int seals = fcntl(f, F_GET_SEALS);
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || seals < 0 ||
        (seals & SEALS_SIZE) != SEALS_SIZE) {
        close(f);
        return nc_error(NUMACOLL_ERR_ARG,
                        "kvdb: %s is not a key-value store segment (the %s: a sealed memfd)",
                        path, what);
    }
    *out = f;
    *size = (size_t)st.st_size;
    return NUMACOLL_OK;
}

/* ---- header and lock segments ---------------------------------------------------------- */

int kv_ctl_create(numacoll_kvdb_t *db, int nslots)
{
    size_t line = nc_line_size(), page = nc_page_size();
    size_t cur_off = nc_round_up(sizeof(kv_ctl_t), line), scratch_off = cur_off + line;
    size_t hdr_size = nc_round_up(scratch_off + 2 * line, page);
    size_t slots_off = line; /* line 0: the magic */
    size_t lock_off = slots_off + (size_t)nslots * line;
    size_t lck_size = nc_round_up(lock_off + db->ops->area_bytes(nslots, line), page);
    int rc = memfd_segment(lck_size, 0, "key-value lock segment", &db->lck_fd, &db->lck);
    if (rc) return rc;
    db->lck_size = lck_size;
    *(uint64_t *)(void *)db->lck = LCK_MAGIC;
    rc = memfd_segment(hdr_size, 1, "key-value header segment", &db->hdr_fd, &db->hdr);
    if (rc) return rc;
    db->hdr_size = hdr_size;
    kv_ctl_t *c = (kv_ctl_t *)(void *)db->hdr;
    *c = (kv_ctl_t){.magic = CTL_MAGIC,
                    .version = KV_VERSION,
                    .nslots = (uint32_t)nslots,
                    .server_pid = (int32_t)db->server_pid,
                    .line = (uint32_t)line,
                    .size = hdr_size,
                    .cur_off = cur_off,
                    .scratch_off = scratch_off,
                    .lock_fd = db->lck_fd,
                    .lock_size = lck_size,
                    .slots_off = slots_off,
                    .lock_off = lock_off};
    snprintf(c->lock_name, sizeof c->lock_name, "%s", db->ops->name);
    db->cur = (_Atomic uint64_t *)(void *)(db->hdr + cur_off);
    db->scratch = db->hdr + scratch_off;
    db->lk.area = db->lck + lock_off;
    db->lk.nslots = nslots;
    db->lk.line = line;
    db->lk.slots = db->lck + slots_off;
    db->lk.slot = -1;
    db->lk.server_pid = db->server_pid;
    snprintf(db->handle, sizeof db->handle, "/proc/%d/fd/%d", (int)db->server_pid, db->hdr_fd);
    return NUMACOLL_OK;
}

/* The first field of header @p c that is out of range for a header segment of @p size
 * bytes, or NULL. Every sum is formed only after its terms were checked, so none wraps. */
static const char *ctl_bad(const kv_ctl_t *c, uint64_t size, pid_t pid)
{
    if (c->magic != CTL_MAGIC) return "magic";
    if (c->version != KV_VERSION) return "version";
    if (c->size != size) return "size";
    if (c->server_pid != pid) return "server_pid";
    if (c->line < 32 || c->line > NC_MAX_LINE || (c->line & (c->line - 1))) return "line";
    if (c->nslots < 1 || c->nslots > 4096) return "nslots";
    if (c->cur_off < sizeof *c || (c->cur_off & 7) || c->cur_off > size - 8) return "cur_off";
    if (c->scratch_off < sizeof *c || (c->scratch_off & 7) || c->scratch_off > size ||
        2 * (uint64_t)c->line > size - c->scratch_off)
        return "scratch_off";
    if (c->lock_fd < 0) return "lock_fd";
    if (memchr(c->lock_name, 0, sizeof c->lock_name) == NULL || !nc_kvlock_find(c->lock_name))
        return "lock_name";
    return NULL;
}

/* The same for the lock segment's offsets (@p lsize: its size). */
static const char *lck_bad(const kv_ctl_t *c, const nc_kvlock_ops_t *ops, uint64_t lsize)
{
    if (c->lock_size != lsize) return "lock_size";
    if (c->slots_off < 8 || (c->slots_off & 7) || c->slots_off > lsize ||
        (uint64_t)c->nslots * c->line > lsize - c->slots_off)
        return "slots_off";
    if (c->lock_off < c->slots_off + (uint64_t)c->nslots * c->line || (c->lock_off & 7) ||
        c->lock_off > lsize || ops->area_bytes((int)c->nslots, c->line) > lsize - c->lock_off)
        return "lock_off";
    return NULL;
}

int kv_ctl_attach(numacoll_kvdb_t *db, const char *handle, pid_t pid, int sfd)
{
    int fd;
    size_t size;
    int rc = open_proc_fd(pid, sfd, O_RDONLY, "key-value header segment", &fd, &size);
    if (rc) return rc;
    void *p = size >= sizeof(kv_ctl_t) ? mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0)
                                       : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED)
        return nc_error(NUMACOLL_ERR_ARG, "kvdb: %s is not a key-value store (cannot map it)",
                        handle);
    db->hdr = p;
    db->hdr_size = size;
    kv_ctl_t c; /* one copy, checked, then used: the shared header is not read again */
    memcpy(&c, p, sizeof c);
    const char *bad = ctl_bad(&c, size, pid);
    if (bad)
        return nc_error(NUMACOLL_ERR_ARG,
                        "kvdb: %s is not a key-value store of this numacoll version (its "
                        "header's %s is out of range)",
                        handle, bad);
    const nc_kvlock_ops_t *ops = nc_kvlock_find(c.lock_name);
    rc = open_proc_fd(pid, c.lock_fd, O_RDWR, "key-value lock segment", &fd, &size);
    if (rc) return nc_error_wrap(rc, "kvdb: attaching to %s", handle);
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return nc_error(NUMACOLL_ERR_SYS, "kvdb: cannot map the lock segment of %s: %s", handle,
                        strerror(errno));
    db->lck = p;
    db->lck_size = size;
    bad = lck_bad(&c, ops, size);
    if (!bad && *(const uint64_t *)p != LCK_MAGIC) bad = "lock segment's magic";
    if (bad)
        return nc_error(NUMACOLL_ERR_ARG,
                        "kvdb: %s is not a key-value store of this numacoll version (its %s is "
                        "out of range)",
                        handle, bad);
    db->ops = ops;
    db->cur = (_Atomic uint64_t *)(void *)(db->hdr + c.cur_off);
    db->scratch = db->hdr + c.scratch_off;
    db->lk.area = db->lck + c.lock_off;
    db->lk.nslots = (int)c.nslots;
    db->lk.line = c.line;
    db->lk.slots = db->lck + c.slots_off;
    db->lk.slot = -1;
    db->lk.server_pid = pid;
    return NUMACOLL_OK;
}

void kv_segments_release(numacoll_kvdb_t *db)
{
    if (db->t.base) munmap(db->t.base, db->t.g.size);
    if (db->hdr) munmap(db->hdr, db->hdr_size);
    if (db->lck) munmap(db->lck, db->lck_size);
    if (db->data_fd >= 0) close(db->data_fd);
    if (db->hdr_fd >= 0) close(db->hdr_fd);
    if (db->lck_fd >= 0) close(db->lck_fd);
    db->t.base = db->hdr = db->lck = NULL;
    db->data_fd = db->hdr_fd = db->lck_fd = -1;
}

/* ---- data segments ---------------------------------------------------------------------- */

size_t kv_data_size_for(size_t nb, size_t heap, size_t *boff, size_t *hoff)
{
    *boff = nc_round_up(sizeof(kv_data_t), 64);
    *hoff = nc_round_up(*boff + nb * sizeof(kv_bucket_t), 64);
    return nc_round_up(*hoff + heap, nc_page_size());
}

int kv_data_create(size_t nb, size_t heap, uint64_t gen, int *fd, kv_tab_t *t)
{
    size_t boff, hoff;
    size_t sz = kv_data_size_for(nb, heap, &boff, &hoff);
    char *base;
    int rc = memfd_segment(sz, 1, "key-value data segment", fd, &base);
    if (rc) return rc;
    *t = (kv_tab_t){.base = base,
                    .g = {.size = sz, .nb = nb, .mask = nb - 1, .boff = boff, .hoff = hoff},
                    .c = {.heap_used = hoff},
                    .gen = gen};
    kv_data_t *d = kv_dhdr(t);
    d->magic = DATA_MAGIC;
    d->gen = gen;
    d->size = sz;
    d->nbuckets = nb;
    d->buckets_off = boff;
    d->heap_off = hoff;
    atomic_store_explicit(&d->heap_used, hoff, memory_order_relaxed);
    return NUMACOLL_OK;
}

/* The geometry of a mapped data segment of @p size bytes, checked, into *g; the name of the
 * first field out of range, or NULL. */
static const char *data_geo(const char *base, uint64_t size, uint64_t gen, kv_geo_t *g)
{
    kv_data_t d; /* one copy, checked, then used */
    memcpy(&d, base, sizeof d);
    if (d.magic != DATA_MAGIC) return "magic";
    if (d.gen != gen) return "generation";
    if (d.size != size) return "size";
    uint64_t nb = d.nbuckets;
    if (nb == 0 || (nb & (nb - 1))) return "bucket count";
    if (d.buckets_off < sizeof d || (d.buckets_off & 15) || d.buckets_off > size ||
        nb > (size - d.buckets_off) / sizeof(kv_bucket_t))
        return "bucket offset";
    if (d.heap_off < d.buckets_off + nb * sizeof(kv_bucket_t) || (d.heap_off & 7) ||
        d.heap_off > size)
        return "heap offset";
    *g = (kv_geo_t){.size = size, .nb = nb, .mask = nb - 1, .boff = d.buckets_off,
                    .hoff = d.heap_off};
    return NULL;
}

int kv_reader_remap(numacoll_kvdb_t *db, uint64_t cur)
{
    uint64_t gen = cur >> 32;
    int sfd = (int)(cur & 0xffffffffu), fd;
    size_t size;
    int rc = open_proc_fd(db->server_pid, sfd, O_RDONLY, "key-value data segment", &fd, &size);
    if (rc) return rc;
    void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return nc_error(NUMACOLL_ERR_SYS, "kvdb: cannot map the data segment (generation %llu)",
                        (unsigned long long)gen);
    kv_geo_t g;
    const char *bad = data_geo(p, size, gen, &g);
    if (bad) {
        munmap(p, size);
        return nc_error(NUMACOLL_ERR_STATE,
                        "kvdb: the server's fd %d is not data generation %llu (its %s does not "
                        "match: stale, or not a data segment)",
                        sfd, (unsigned long long)gen, bad);
    }
    if (db->t.base) munmap(db->t.base, db->t.g.size);
    db->t = (kv_tab_t){.base = p, .g = g, .gen = gen};
    return NUMACOLL_OK;
}
