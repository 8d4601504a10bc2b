/*
 * libnumacoll_mpi: MPI_Bcast's general path (any datatype: contiguous in place, others
 * staged through a packed buffer) and broadcasts of more than INT_MAX bytes.
 */
#include "mpi_internal.h"

/* PMPI_Pack (@p unpack 0) of (buf, count, dt) into @p stage (@p cap bytes), or PMPI_Unpack
 * from it; MPI-4's PMPI_Pack_c / PMPI_Unpack_c where the MPI has them (counts beyond int).
 * buf == MPI_BOTTOM (a datatype of absolute addresses) goes through a one-block hindexed
 * copy of dt displaced by -tlb from the base address tlb (its lowest byte), the same
 * addresses: MPICH 4.0's MPI_Pack and MPI_Unpack reject a NULL buffer ("Null pointer in
 * parameter inbuf") although MPI_BOTTOM is NULL there. */
#if MPI_VERSION >= 4
static int pack_io_c(int unpack, void *buf, MPI_Count count, MPI_Datatype dt, MPI_Aint tlb,
                     char *stage, size_t cap, MPI_Comm comm)
{
    MPI_Datatype t = dt;
    MPI_Count n = count, pos = 0;
    int own = 0, rc;
    if (buf == MPI_BOTTOM && count > 0 && tlb != 0) {
        MPI_Count disp = -(MPI_Count)tlb;
        if (nc_mpi4.PMPI_Type_create_hindexed_c(1, &n, &disp, dt, &t) != MPI_SUCCESS) return MPI_ERR_TYPE;
        own = 1;
        if (PMPI_Type_commit(&t) != MPI_SUCCESS) {
            PMPI_Type_free(&t);
            return MPI_ERR_TYPE;
        }
        buf = (void *)tlb;
        n = 1;
    }
    rc = unpack ? nc_mpi4.PMPI_Unpack_c(stage, (MPI_Count)cap, &pos, buf, n, t, comm)
                : nc_mpi4.PMPI_Pack_c(buf, n, t, stage, (MPI_Count)cap, &pos, comm);
    if (own) PMPI_Type_free(&t);
    return rc;
}
#endif

int pack_io(int unpack, void *buf, MPI_Count count, MPI_Datatype dt, MPI_Aint tlb,
            char *stage, size_t cap, MPI_Comm comm)
{
#if MPI_VERSION >= 4
    if (NC_HAVE(PMPI_Pack_c) && NC_HAVE(PMPI_Unpack_c) && NC_HAVE(PMPI_Type_create_hindexed_c))
        return pack_io_c(unpack, buf, count, dt, tlb, stage, cap, comm);
#endif
    /* MPI-3's PMPI_Pack counts in int: only the large path (one element of a datatype of
     * more than INT_MAX bytes) comes here with more */
    if (count > INT_MAX || cap > INT_MAX) {
        mpi_say(
                "numacoll-mpi: MPI_Bcast: cannot %s %zu bytes of a non-contiguous datatype "
                "in one piece with this MPI library (its MPI_Pack counts in int, it has no "
                "MPI_Pack_c; allowed: datatypes of at most %d bytes per element)\n",
                unpack ? "unpack" : "pack", cap, INT_MAX);
        return MPI_ERR_COUNT;
    }
    MPI_Datatype t = dt;
    int n = (int)count, pos = 0;
    int own = 0, rc;
    if (buf == MPI_BOTTOM && count > 0 && tlb != 0) {
        MPI_Aint disp = -tlb;
        if (PMPI_Type_create_hindexed(1, &n, &disp, dt, &t) != MPI_SUCCESS) return MPI_ERR_TYPE;
        own = 1;
        if (PMPI_Type_commit(&t) != MPI_SUCCESS) {
            PMPI_Type_free(&t);
            return MPI_ERR_TYPE;
        }
        buf = (void *)tlb;
        n = 1;
    }
    rc = unpack ? PMPI_Unpack(stage, (int)cap, &pos, buf, n, t, comm)
                : PMPI_Pack(buf, n, t, stage, (int)cap, &pos, comm);
    if (own) PMPI_Type_free(&t);
    return rc;
}

/* ---- broadcasts of more than INT_MAX bytes ------------------------------------------
 * One such broadcast is a sequence of core broadcasts, the same on every member whatever
 * its (count, datatype): 8 bytes (the root's byte count), then the message in windows of
 * LARGE_WINDOW bytes (the last one shorter). A contiguous buffer takes part in place. A
 * non-contiguous one goes through a stage of one window plus one element, packed (root)
 * or unpacked (receivers) in whole elements: an element cut by a window's end waits in the
 * stage for the next window. So a member never stages the whole message (as the path for
 * smaller ones does), and root and receivers may still use different datatypes. A receiver
 * whose byte count differs from the root's takes the root's windows into its stage, so that
 * nobody waits for it, and fails with MPI_ERR_TRUNCATE. 128 MiB: a window's start costs one
 * fragment's latency (microseconds) against tens of milliseconds of copying. */
#define LARGE_WINDOW ((size_t)128 << 20)

/* A receiver whose byte count differs from the root's @p total (over 2 GiB: the large
 * path's marked header told it): take the root's windows into a stage and drop them, so
 * that the root is not left waiting for us; the callers fail with MPI_ERR_TRUNCATE. A
 * large-path receiver with another count over 2 GiB (bcast_large), or an ordinary one
 * (bcast_result). */
int large_drain(nc_comm_t *s, uint64_t total, int root)
{
    char *stage = malloc(LARGE_WINDOW);
    if (!stage) {
        /* the others go on without us: their timeout (NUMACOLL_TIMEOUT) names us */
        mpi_say(
                "numacoll-mpi: MPI_Bcast: no memory for a %zu-byte stage to take the root's %llu "
                "bytes\n",
                LARGE_WINDOW, (unsigned long long)total);
        return NUMACOLL_ERR_NOMEM;
    }
    int rc = NUMACOLL_OK;
    for (uint64_t off = 0, len; off < total && rc == NUMACOLL_OK; off += len) {
        len = total - off < LARGE_WINDOW ? total - off : LARGE_WINDOW;
        rc = bcast_bytes(s, stage, (size_t)len, root, 0);
    }
    free(stage);
    return rc;
}

/* Element @p i of a buffer of elements @p ext bytes apart (in integers: @p buf may be
 * MPI_BOTTOM, a null pointer) */
static inline void *elem_at(void *buf, MPI_Count i, MPI_Aint ext)
{
    return (void *)((intptr_t)buf + (intptr_t)(i * ext));
}

/* The large path on communicator state @p s (numacoll's broadcast on, valid root):
 * (@p count, @p dt) of @p tsz bytes each, more than INT_MAX bytes in all. */
static int bcast_large(nc_comm_t *s, void *buf, MPI_Count count, MPI_Datatype dt, MPI_Count tsz,
                       int root, MPI_Comm comm)
{
    MPI_Aint lb = 0, ext = 0, tlb = 0, text = 0;
    size_t bytes = (size_t)count * (size_t)tsz; /* no overflow: checked by the callers */
    /* the datatype is valid (the callers have its size), so these succeed */
    PMPI_Type_get_extent(dt, &lb, &ext);
    PMPI_Type_get_true_extent(dt, &tlb, &text);
    int contiguous = (size_t)text == (size_t)tsz && (count == 1 || ext == tsz);
    int me = s->rank;
    uint64_t total = bytes;                                 /* the root's count, for everyone */
    int rc = bcast_bytes(s, &total, sizeof total, root, 1); /* marked: see large_drain */
    if (rc != NUMACOLL_OK) return bcast_result(s, comm, rc, root);
    if (total != (uint64_t)bytes) {
        rc = large_drain(s, total, root);
        if (rc == NUMACOLL_ERR_NOMEM) return raise_error(comm, "MPI_Bcast", rc);
        if (rc != NUMACOLL_OK) return bcast_result(s, comm, rc, root);
        s->broken = 1;
        mpi_say(
                "numacoll-mpi: MPI_Bcast: the root (rank %d) sent %llu bytes, rank %d expected "
                "%zu (count and datatype must give the same type signature on every rank)\n",
                root, (unsigned long long)total, me, bytes);
        PMPI_Comm_call_errhandler(comm, MPI_ERR_TRUNCATE);
        return MPI_ERR_TRUNCATE;
    }
    char *stage = NULL;
    if (!contiguous) {
        size_t cap = LARGE_WINDOW + (size_t)tsz;
        stage = malloc(cap);
        if (!stage) {
            /* the others go on without us: their timeout (NUMACOLL_TIMEOUT) names us */
            mpi_say("numacoll-mpi: MPI_Bcast: no memory for a %zu-byte stage\n", cap);
            return raise_error(comm, "MPI_Bcast", NUMACOLL_ERR_NOMEM);
        }
    }
    size_t have = 0;       /* staged bytes: root, packed but not sent; receiver, not unpacked */
    MPI_Count next = 0;    /* next element to pack or unpack */
    int prc = MPI_SUCCESS; /* the first pack or unpack error */
    for (size_t off = 0, len; off < total && rc == NUMACOLL_OK; off += len) {
        len = total - off < LARGE_WINDOW ? (size_t)(total - off) : LARGE_WINDOW;
        char *p;
        if (contiguous) {
            p = (char *)(intptr_t)((intptr_t)buf + tlb + (intptr_t)off);
        } else if (me == root) {
            /* whole elements until the window is full: have < len <= LARGE_WINDOW before,
             * so have + k tsz < len + tsz, the stage's size */
            while (have < len && next < count) {
                MPI_Count k = (MPI_Count)((len - have + (size_t)tsz - 1) / (size_t)tsz);
                if (k > count - next) k = count - next;
                size_t kb = (size_t)k * (size_t)tsz;
                if (prc == MPI_SUCCESS)
                    prc = pack_io(0, elem_at(buf, next, ext), k, dt, tlb, stage + have, kb, comm);
                /* a root whose pack failed still sends (zeros): nobody waits for it */
                if (prc != MPI_SUCCESS) memset(stage + have, 0, kb);
                have += kb;
                next += k;
            }
            p = stage;
        } else {
            p = stage + have; /* after the part of an element left by the last window */
        }
        rc = bcast_bytes(s, p, len, root, 0);
        if (rc != NUMACOLL_OK || contiguous) continue;
        if (me == root) {
            have -= len;
            memmove(stage, stage + len, have); /* the rest of a cut element first */
        } else {
            have += len;
            MPI_Count k = (MPI_Count)(have / (size_t)tsz); /* the whole elements staged */
            size_t kb = (size_t)k * (size_t)tsz;
            if (k && prc == MPI_SUCCESS)
                prc = pack_io(1, elem_at(buf, next, ext), k, dt, tlb, stage, kb, comm);
            next += k;
            have -= kb;
            memmove(stage, stage + kb, have); /* a cut element's first part */
        }
    }
    free(stage);
    if (rc != NUMACOLL_OK) return bcast_result(s, comm, rc, root);
    if (!contiguous) COUNT(bcast_staged);
    if (s->team && !s->bcast_native) COUNT(bcast_numacoll);
    return prc;
}

#if MPI_VERSION >= 4
/* The native broadcast of a count that may exceed INT_MAX (MPI-4's PMPI_Bcast_c). */
int native_bcast_count(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (count <= INT_MAX) return PMPI_Bcast(buf, (int)count, dt, root, comm);
    if (!NC_HAVE(PMPI_Bcast_c)) return MPI_ERR_COUNT;
    return nc_mpi4.PMPI_Bcast_c(buf, count, dt, root, comm);
}

/* A broadcast of @p count > INT_MAX elements of @p tsz > 0 bytes (MPI_Bcast_c): the
 * communicator step as MPI_Bcast's general path, then the large path, or the native call
 * where numacoll does not broadcast. A root out of range (the MPI's error) first joins the
 * team's broadcast set-up, as bcast_general's does, so that the others wait in numacoll's
 * broadcast (NUMACOLL_TIMEOUT names this member), never in a set-up it skips. */
int bcast_large_entry(void *buf, MPI_Count count, MPI_Datatype dt, MPI_Count tsz, int root,
                             MPI_Comm comm)
{
    COUNT(bcast_calls);
    ensure_init();
    nc_comm_t *s = comm_get(comm, bcast_units(count, tsz), 0);
    uint64_t bytes;
    if (!g_bcast || !s || s->mode == MODE_PASS || s->mode == MODE_DEFER)
        return native_bcast_count(buf, count, dt, root, comm);
    if (root < 0 || root >= s->size) {
        bcast_join_setup(s, root, 8, 1); /* as the large path's marked 8-byte header */
        return native_bcast_count(buf, count, dt, root, comm); /* the MPI's error */
    }
    if ((s->mode == MODE_FLAT && (!s->team || s->bcast_native)) ||
        __builtin_mul_overflow((uint64_t)count, (uint64_t)tsz, &bytes))
        return native_bcast_count(buf, count, dt, root, comm);
    return bcast_large(s, buf, count, dt, tsz, root, comm);
}
#endif

int bcast_general(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    COUNT(bcast_calls);
    ensure_init();
    if (comm == MPI_COMM_NULL) return PMPI_Bcast(buf, count, dt, root, comm);
    if (count < 0 || dt == MPI_DATATYPE_NULL || buf == MPI_IN_PLACE) {
        bcast_join_setup(comm_get(comm, 1, 0), root, -1, 0);
        return PMPI_Bcast(buf, count, dt, root, comm); /* native semantics and errors */
    }
    MPI_Count tsz = -1;
    int tsz_ok = PMPI_Type_size_x(dt, &tsz) == MPI_SUCCESS && tsz >= 0;
    uint64_t units = bcast_units(count, tsz);
    /* with NUMACOLL_MPI_BCAST=0 too: every member then counts the same calls toward the
     * deferral, and one that differs from the others in it is found in the agreement */
    nc_comm_t *s = comm_get(comm, units, 0);
    if (!g_bcast || !s || s->mode == MODE_PASS || s->mode == MODE_DEFER)
        return PMPI_Bcast(buf, count, dt, root, comm);
    if (root < 0 || root >= s->size) {
        /* its size as bcast_bytes would see it (the large path: its marked header) */
        long b = tsz_ok ? (long)count * (long)tsz : -1;
        bcast_join_setup(s, root, b > INT_MAX ? 8 : b, b > INT_MAX);
        return PMPI_Bcast(buf, count, dt, root, comm); /* the MPI's error */
    }
    if (s->mode == MODE_FLAT && (!s->team || s->bcast_native))
        return PMPI_Bcast(buf, count, dt, root, comm);

    MPI_Aint lb = 0, ext = 0, tlb = 0, text = 0;
    if (!tsz_ok || PMPI_Type_get_extent(dt, &lb, &ext) ||
        PMPI_Type_get_true_extent(dt, &tlb, &text))
        return PMPI_Bcast(buf, count, dt, root, comm); /* let the MPI report it */
    size_t bytes;
    if (__builtin_mul_overflow((size_t)count, (size_t)tsz, &bytes))
        return PMPI_Bcast(buf, count, dt, root, comm);
    if (bytes > INT_MAX) return bcast_large(s, buf, count, dt, tsz, root, comm);
    int contiguous = count == 0 || ((size_t)text == (size_t)tsz && (count == 1 || ext == tsz));
    int rc;
    if (contiguous) {
        rc = bcast_bytes(s, (char *)buf + tlb, bytes, root, 0);
    } else {
        /* stage through a packed buffer: root and receivers may use different (count,
         * datatype) pairs with the same type signature; sizes compare in bytes */
        int cap = 0;
        if (PMPI_Pack_size(count, dt, comm, &cap) != MPI_SUCCESS || cap < (int)bytes)
            cap = (int)bytes;
        char *stage = malloc(cap ? (size_t)cap : 1);
        if (!stage) return raise_error(comm, "MPI_Bcast", NUMACOLL_ERR_NOMEM);
        int prc = MPI_SUCCESS;
        if (s->rank == root) {
            prc = pack_io(0, buf, count, dt, tlb, stage, cap, comm);
            /* a root whose pack failed (its MPI has called the error handler) still takes
             * part, with zeros, so that the others do not wait for it forever */
            if (prc != MPI_SUCCESS) memset(stage, 0, (size_t)cap);
        }
        rc = bcast_bytes(s, stage, bytes, root, 0);
        if (rc == NUMACOLL_OK && s->rank != root)
            prc = pack_io(1, buf, count, dt, tlb, stage, bytes, comm);
        free(stage);
        COUNT(bcast_staged);
        if (rc == NUMACOLL_OK && prc != MPI_SUCCESS) return prc;
    }
    if (rc == NUMACOLL_OK && s->team && !s->bcast_native) COUNT(bcast_numacoll);
    return bcast_result(s, comm, rc, root);
}
