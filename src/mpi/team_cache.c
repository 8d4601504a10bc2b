/*
 * libnumacoll_mpi: the cache of idle teams (see the comment at idle_team_t).
 */
#include "mpi_internal.h"

/* Idle teams of freed communicators, kept for a later communicator with the same members
 * in the same order (MPI_Comm_dup / free churn): reusing one needs a single agreement
 * allgather instead of a team creation. Bounded (NUMACOLL_MPI_TEAM_CACHE), released at
 * MPI_Finalize. Consecutive collectives on one team are legal whatever the communicator,
 * so a member that reuses a team while a slower one is still leaving the old
 * communicator's last collective is just the ordinary back-to-back case.
 *
 * Members free communicators in their own order (and, under MPI_THREAD_MULTIPLE, from
 * several threads at once), so their caches may list the same teams in different orders
 * or hold different ones. A set-up therefore proposes up to REUSE_CANDIDATES idle teams,
 * by identity (numacoll_team_id: unique on the node, equal on all members), and reuses the
 * first of rank 0's proposals that every member proposed; with none in common it creates
 * a new team. A proposed team is reserved (out of the cache) until the agreement ends, so
 * no concurrent set-up on another thread can propose it too. */
typedef struct idle_team {
    numacoll_team_t *team;
    uint64_t sig;   /* members (MPI_COMM_WORLD ranks in order) */
    uint64_t id[2]; /* numacoll_team_id: equal on all members, unique on the node */
    size_t qbytes;  /* broadcast queue memory it kept (counted in g_idle_qbytes) */
    struct idle_team *next;
} idle_team_t;
static idle_team_t *g_idle;
static int g_nidle;
static size_t g_idle_qbytes; /* sum of the idle teams' qbytes */
void idle_destroy_all(void)
{
    pthread_mutex_lock(&g_lock);
    idle_team_t *l = g_idle;
    g_idle = NULL;
    g_nidle = 0;
    g_idle_qbytes = 0;
    pthread_mutex_unlock(&g_lock);
    while (l) {
        idle_team_t *n = l->next;
        numacoll_team_destroy(l->team);
        COUNT(teams_destroyed);
        free(l);
        l = n;
    }
}

/* Put @p t (members @p sig) into the idle cache; returns 1 if it was kept. */
int idle_insert(numacoll_team_t *t, uint64_t sig)
{
    /* An idle team keeps its barrier segment, and its broadcast state too: always when that
     * holds no queue memory (only small messages went through it: the control blocks,
     * 28 KiB at np=2), and with queue memory while all idle teams of this process together
     * keep at most NUMACOLL_MPI_TEAM_CACHE_QUEUE bytes of it. A dup/free loop then sets
     * nothing up again: np=2, dup + barrier + bcast + free took 77-89 us per communicator
     * for 8 bytes and 2.9-3.2 ms for 1 MiB (its queue set populated again each time, then
     * unmapped) when every idle team dropped its broadcast state. Members decide alone
     * (each on its own memory); comm_setup agrees at reuse: the state's set-up at the next
     * broadcast is collective, so either all members have it or none. */
    size_t qb = nc_bcast_team_queue_bytes(t);
    int keep = 1;
    if (qb) {
        pthread_mutex_lock(&g_lock);
        keep = g_idle_qbytes + qb <= g_idle_qmax;
        if (keep) g_idle_qbytes += qb; /* reserved before the team becomes visible */
        pthread_mutex_unlock(&g_lock);
    }
    if (!keep) {
        nc_bcast_team_fini(t);
        qb = 0;
    }
    idle_team_t *e = malloc(sizeof *e), *drop = NULL;
    pthread_mutex_lock(&g_lock);
    if (!e || g_finalizing) {
        g_idle_qbytes -= qb;
        pthread_mutex_unlock(&g_lock);
        free(e);
        return 0;
    }
    e->team = t;
    e->sig = sig;
    numacoll_team_id(t, e->id);
    e->qbytes = qb;
    e->next = g_idle;
    g_idle = e;
    if (++g_nidle > g_cache_max) { /* drop the oldest */
        idle_team_t **pp = &g_idle;
        while ((*pp)->next)
            pp = &(*pp)->next;
        drop = *pp;
        *pp = NULL;
        g_nidle--;
        g_idle_qbytes -= drop->qbytes;
    }
    pthread_mutex_unlock(&g_lock);
    if (drop) {
        numacoll_team_destroy(drop->team);
        COUNT(teams_destroyed);
        free(drop);
    }
    return 1;
}

/* Keep a flat communicator's team for reuse; returns 1 if it was kept. */
int idle_put(nc_comm_t *s)
{
    if (g_cache_max <= 0 || s->mode != MODE_FLAT || !s->team || !s->sig || s->broken) return 0;
    if (!idle_insert(s->team, s->sig)) return 0;
    s->team = NULL;
    return 1;
}

/* Take up to REUSE_CANDIDATES idle teams for members @p sig out of the cache, the most
 * recent first, into @p cand; returns how many. They are reserved: a concurrent set-up of
 * another communicator with the same members (another thread) cannot propose them too.
 * idle_release puts back the ones not reused. */
int idle_reserve(uint64_t sig, numacoll_team_t *cand[REUSE_CANDIDATES])
{
    int n = 0;
    pthread_mutex_lock(&g_lock);
    for (idle_team_t **pp = &g_idle; *pp && n < REUSE_CANDIDATES;) {
        idle_team_t *e = *pp;
        if (e->sig != sig) {
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        g_nidle--;
        g_idle_qbytes -= e->qbytes;
        cand[n++] = e->team;
        free(e);
    }
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* Put the reserved candidates other than @p keep back into the cache, the least recent
 * first so that the cache keeps their order (destroyed if the cache refuses them). */
void idle_release(numacoll_team_t *cand[REUSE_CANDIDATES], int n, int keep, uint64_t sig)
{
    for (int i = n - 1; i >= 0; i--)
        if (i != keep && !idle_insert(cand[i], sig)) {
            numacoll_team_destroy(cand[i]);
            COUNT(teams_destroyed);
        }
}

/* Signature of the members of @p comm: their MPI_COMM_WORLD ranks in order (0 if some
 * member is not in MPI_COMM_WORLD, e.g. after MPI_Comm_spawn: no reuse then). */
uint64_t members_sig(MPI_Comm comm, int size)
{
    if (g_cache_max <= 0 || size > 65536 || !world_active()) return 0;
    MPI_Group g;
    if (PMPI_Comm_group(comm, &g) != MPI_SUCCESS) return 0;
    pthread_mutex_lock(&g_lock);
    if (g_world_group == MPI_GROUP_NULL) PMPI_Comm_group(MPI_COMM_WORLD, &g_world_group);
    pthread_mutex_unlock(&g_lock);
    int *in = malloc((size_t)size * 2 * sizeof(int));
    uint64_t h = 0;
    if (in) {
        for (int i = 0; i < size; i++)
            in[i] = i;
        if (PMPI_Group_translate_ranks(g, size, in, g_world_group, in + size) == MPI_SUCCESS) {
            h = nc_fnv1a(NC_FNV_BASIS, &size, sizeof size);
            for (int i = 0; i < size && h; i++)
                h = in[size + i] == MPI_UNDEFINED ? 0 : nc_fnv1a(h, &in[size + i], sizeof(int));
        }
        free(in);
    }
    PMPI_Group_free(&g);
    return h ? h : 0;
}
