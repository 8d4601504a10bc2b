/* Team identity (numacoll_team_id) and the access mode of a team's memfd segment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/nc_internal.h"
#include "forkrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { TEAMS = 6, MAX_P = 4, RUNS = 2 };

/* written by the children (MAP_SHARED, inherited), read by the parent */
typedef struct ids {
    uint64_t id[RUNS][MAX_P][TEAMS][2];
    int run;
} ids_t;

/* Create TEAMS - 2 teams one after the other, each destroyed before the next (their
 * segments get the same descriptor numbers), then two alive at once; record every
 * identity. */
static int record_ids(nc_forkctx_t *c)
{
    ids_t *ids = c->arg;
    uint64_t(*mine)[2] = ids->id[ids->run][c->rank];
    numacoll_team_params_t p = {.rank = c->rank,
                                .size = c->size,
                                .allgather = numacoll_fork_oob_allgather,
                                .oob_ctx = c->oob};
    for (int k = 0; k < TEAMS - 2; k++) {
        numacoll_team_t *t;
        if (numacoll_team_create(&p, &t) != NUMACOLL_OK) return 10;
        if (numacoll_team_id(t, mine[k]) != NUMACOLL_OK) return 11;
        if (numacoll_team_destroy(t) != NUMACOLL_OK) return 12;
    }
    numacoll_team_t *a, *b;
    if (numacoll_team_create(&p, &a) != NUMACOLL_OK) return 13;
    if (numacoll_team_create(&p, &b) != NUMACOLL_OK) return 14;
    if (numacoll_team_id(a, mine[TEAMS - 2]) || numacoll_team_id(b, mine[TEAMS - 1])) return 15;
    numacoll_team_destroy(b);
    numacoll_team_destroy(a);
    return 0;
}

static void test_ids_equal_on_members_unique_across_teams(void **state)
{
    (void)state;
    ids_t *ids = mmap(NULL, sizeof *ids, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(ids != MAP_FAILED);
    for (int P = 1; P <= MAX_P; P += MAX_P - 1) {
        memset(ids, 0, sizeof *ids);
        nc_forkresult_t res;
        for (ids->run = 0; ids->run < RUNS; ids->run++)
            assert_int_equal(nc_forkrun(P, NC_FORK_NO_TEAM, record_ids, ids, 0, 60, &res), 0);
        for (int run = 0; run < RUNS; run++)
            for (int k = 0; k < TEAMS; k++) {
                const uint64_t *id = ids->id[run][0][k];
                assert_true(id[0] != 0 || id[1] != 0);
                for (int r = 1; r < P; r++) { /* equal on every member */
                    assert_true(ids->id[run][r][k][0] == id[0]);
                    assert_true(ids->id[run][r][k][1] == id[1]);
                }
                /* different from every other team of both runs */
                for (int run2 = 0; run2 < RUNS; run2++)
                    for (int k2 = 0; k2 < TEAMS; k2++) {
                        if (run2 == run && k2 == k) continue;
                        const uint64_t *o = ids->id[run2][0][k2];
                        if (o[0] == id[0] && o[1] == id[1])
                            fail_msg("P=%d: team %d of run %d and team %d of run %d share the "
                                     "identity %016llx:%016llx",
                                     P, k, run, k2, run2, (unsigned long long)id[0],
                                     (unsigned long long)id[1]);
                    }
            }
    }
    munmap(ids, sizeof *ids);
}

static void test_id_bad_arguments(void **state)
{
    (void)state;
    uint64_t id[2];
    assert_int_equal(numacoll_team_id(NULL, id), NUMACOLL_ERR_ARG);
    assert_non_null(strstr(numacoll_last_error(), "team"));
}

/* The team's memfd, seen through this process's mapping of it, is readable and writable by
 * its owner only. */
static int segment_mode(nc_forkctx_t *c)
{
    numacoll_team_t *t = c->team;
    if (strncmp(t->seg.name, "memfd:", 6) != 0) return 0; /* the POSIX fallback: O_EXCL 0600 */
    char path[128];
    snprintf(path, sizeof path, "/proc/self/map_files/%lx-%lx", (unsigned long)t->seg.base,
             (unsigned long)t->seg.base + t->seg.size);
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "stat(%s) failed\n", path);
        return 20;
    }
    if ((st.st_mode & 07777) != 0600) {
        fprintf(stderr, "rank %d: segment %s has mode %o, expected 600\n", c->rank, t->seg.name,
                (unsigned)(st.st_mode & 07777));
        return 21;
    }
    return 0;
}

static void test_memfd_mode_0600(void **state)
{
    (void)state;
    nc_forkresult_t res;
    assert_int_equal(nc_forkrun(2, 0, segment_mode, NULL, 0, 60, &res), 0);
}

int main(void)
{
    nc_test_clear_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_equal_on_members_unique_across_teams),
        cmocka_unit_test(test_id_bad_arguments),
        cmocka_unit_test(test_memfd_mode_0600),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
