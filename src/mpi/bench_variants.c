/*
 * libnumacoll_mpi: broadcast variants for the MPI benchmark (numacoll_mpi_bcast_with): a
 * forced tree, the CMA path, a forced copy mode or inline cache hint.
 */
#include "mpi_internal.h"

/* the copy modes of the queue path (nc_bcast_opts_t.copy_mode), forced for every queue message */
static const char *const copy_modes[] = {"copy:plain", "copy:stream-root", "copy:stream-recv",
                                         "copy:stream"};
enum { NCOPY = 4 };
/* the inline path's cache hint forced off / on (nc_bcast_opts_t.demote), after the copy modes */
static const char *const demote_modes[] = {"demote:off", "demote:on"};
enum { NDEMOTE = 2 };
/* the inline path's write prefetch forced off / on (nc_bcast_opts_t.prefetch), after those */
static const char *const prefetch_modes[] = {"prefetch:off", "prefetch:on"};
enum { NPREFETCH = 2 };

const char *numacoll_mpi_bcast_variant_name(int i)
{
    static char names[NC_BTREE_COUNT + 1][32];
    if (i < 0 || i > NC_BTREE_COUNT + NCOPY + NDEMOTE + NPREFETCH) return NULL;
    if (i > NC_BTREE_COUNT + NCOPY + NDEMOTE)
        return prefetch_modes[i - NC_BTREE_COUNT - NCOPY - NDEMOTE - 1];
    if (i > NC_BTREE_COUNT + NCOPY) return demote_modes[i - NC_BTREE_COUNT - NCOPY - 1];
    if (i > NC_BTREE_COUNT) return copy_modes[i - NC_BTREE_COUNT - 1];
    if (!names[i][0]) {
        if (i < NC_BTREE_COUNT)
            snprintf(names[i], sizeof names[i], "tree:%s", nc_bcast_tree_names[i]);
        else
            snprintf(names[i], sizeof names[i], "cma");
    }
    return names[i];
}

int numacoll_mpi_bcast_with(void *buf, size_t bytes, int root, MPI_Comm comm, const char *variant)
{
    if (bytes > (size_t)INT64_MAX) return MPI_ERR_COUNT; /* beyond any MPI_Count */
    if (comm == MPI_COMM_NULL)
        return native_bcast_count(buf, (MPI_Count)bytes, MPI_BYTE, root, comm);
    if (!variant)
        return bytes <= INT_MAX ? MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, comm)
                                : bcast_large_entry(buf, (MPI_Count)bytes, MPI_BYTE, 1, root, comm);
    ensure_init();
    nc_comm_t *s = comm_get(comm, 1, 1);
    if (!s || s->mode != MODE_FLAT || !s->team || root < 0 || root >= s->size)
        return numacoll_mpi_bcast_with(buf, bytes, root, comm, NULL);
    nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
    int i = 0;
    const char *vn;
    while ((vn = numacoll_mpi_bcast_variant_name(i)) && strcmp(vn, variant) != 0)
        i++;
    if (!vn) return MPI_ERR_ARG;
    if (i < NC_BTREE_COUNT)
        o.tree = i;
    else if (i == NC_BTREE_COUNT)
        o.cma_min = 1;
    else if (i <= NC_BTREE_COUNT + NCOPY)
        o.copy_mode = i - NC_BTREE_COUNT - 1; /* bit 0 root streams, bit 1 receivers stream */
    else if (i <= NC_BTREE_COUNT + NCOPY + NDEMOTE)
        o.demote = i - NC_BTREE_COUNT - NCOPY - 1; /* demote:off = 0, demote:on = 1 */
    else
        o.prefetch = i - NC_BTREE_COUNT - NCOPY - NDEMOTE - 1; /* prefetch:off 0, :on 1 */
    nc_team_op_enter(s->team, "bcast");
    int rc = nc_bcast_run_opts(s->team, buf, bytes, root, &o);
    if (rc != NUMACOLL_OK) {
        s->broken = 1;
        return raise_error(comm, "MPI_Bcast", rc);
    }
    nc_team_op_leave(s->team);
    return MPI_SUCCESS;
}
