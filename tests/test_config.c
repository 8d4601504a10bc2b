/* Unit tests of the configuration table: parsing, defaults and rejection of bad values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/nc_internal.h"
#include "forkrun.h"

/* the rows of the layers this program does not otherwise use (the others: team.c) */
NC_CFG_LINK(kvdb);

#include <stdlib.h>
#include <string.h>

static void clear_env(void)
{
    nc_test_clear_env();
}

/* A size row writes its default and bounds as people read them: a number of whole KiB
 * (1024 and more) carries a suffix (64K, 1G), never 65536 or 1073741824. */
static void expect_size_written_short(const char *name, const char *text)
{
    for (const char *p = text; *p;) {
        if (*p < '0' || *p > '9') {
            p++;
            continue;
        }
        char *end;
        unsigned long long x = strtoull(p, &end, 10);
        if (*end != 'K' && *end != 'M' && *end != 'G' && x >= 1024 && x % 1024 == 0)
            fail_msg("%s: '%s' writes %llu without a suffix (K, M, G)", name, text, x);
        p = end;
    }
}

static void test_defaults(void **state)
{
    (void)state;
    clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    assert_int_equal(nc_cfg_int(NC_CFG_VERBOSE), 0);
    assert_true(nc_cfg_double(NC_CFG_TIMEOUT) == 0.0);
    assert_string_equal(nc_cfg_str(NC_CFG_BARRIER), "auto");
    assert_false(nc_cfg_is_set(NC_CFG_BARRIER));
    int n;
    const numacoll_config_row_t *rows = numacoll_config_table(&n);
    /* every layer's rows are here (this program links them all), in the order of the ids */
    assert_int_equal(n, NC_CFG_COUNT);
    for (int i = 0; i < n; i++) {
        const nc_cfg_def_t *d = nc_cfg_row((nc_cfg_id_t)i);
        assert_non_null(d);
        assert_int_equal(d->id, i);
        assert_string_equal(rows[i].name, nc_cfg_name((nc_cfg_id_t)i));
        assert_true(strncmp(rows[i].name, "NUMACOLL_", 9) == 0);
        assert_non_null(rows[i].doc);
        if (strlen(rows[i].doc) > NC_CFG_DOC_MAX) /* detail goes to docs/tuning-notes.md */
            fail_msg("%s: help text of %zu characters", rows[i].name, strlen(rows[i].doc));
        /* every default passes its own validation */
        assert_int_equal(nc_cfg_validate((nc_cfg_id_t)i, rows[i].defval), NUMACOLL_OK);
        assert_string_equal(numacoll_config_value(rows[i].name), rows[i].defval);
        if (strcmp(rows[i].type, "size") == 0) {
            expect_size_written_short(rows[i].name, rows[i].defval);
            expect_size_written_short(rows[i].name, rows[i].allowed);
        }
    }
}

static void test_valid_values(void **state)
{
    (void)state;
    clear_env();
    setenv("NUMACOLL_TIMEOUT", "2.5", 1);
    setenv("NUMACOLL_VERBOSE", "2", 1);
    setenv("NUMACOLL_NUMA_BIND", "no", 1);
    setenv("NUMACOLL_BARRIER_TOPO_LEVELS", "l3,numa", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    assert_true(nc_cfg_double(NC_CFG_TIMEOUT) == 2.5);
    assert_int_equal(nc_cfg_int(NC_CFG_VERBOSE), 2);
    assert_false(nc_cfg_bool(NC_CFG_NUMA_BIND));
    assert_true(nc_cfg_list_has(nc_cfg_str(NC_CFG_BARRIER_TOPO_LEVELS), "l3"));
    assert_false(nc_cfg_list_has(nc_cfg_str(NC_CFG_BARRIER_TOPO_LEVELS), "socket"));
    assert_string_equal(numacoll_config_value("NUMACOLL_TIMEOUT"), "2.5");
    clear_env();
}

static void expect_rejected(const char *name, const char *value, const char *must_mention)
{
    clear_env();
    setenv(name, value, 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_ERR_CONFIG);
    const char *msg = numacoll_last_error();
    if (!strstr(msg, name) || !strstr(msg, must_mention)) fail_msg("message was: %s", msg);
    /* the default stays in force for a rejected value */
    unsetenv(name);
}

static void test_rejections(void **state)
{
    (void)state;
    expect_rejected("NUMACOLL_TIMEOUT", "soon", "allowed");
    /* below 1 ns a timeout would round to 0 ns, i.e. none: rejected, the limit named */
    expect_rejected("NUMACOLL_TIMEOUT", "1e-12", "the smallest non-zero value is 1e-9");
    expect_rejected("NUMACOLL_TIMEOUT", "9.9e-10", "would round to 0");
    expect_rejected("NUMACOLL_TIMEOUT", "-1", "allowed: 0, or a number in 1e-9..1000000");
    /* decimal numbers only (strtod would read these as 16 and 0.125) */
    expect_rejected("NUMACOLL_MOVE_CMA_COST", "0x10", "allowed: a number in 0.01..100");
    expect_rejected("NUMACOLL_TIMEOUT", "0x1p-3", "allowed");
    clear_env();
    setenv("NUMACOLL_TIMEOUT", "1e-9", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    assert_true((uint64_t)(nc_cfg_double(NC_CFG_TIMEOUT) * 1e9) == 1);
    setenv("NUMACOLL_TIMEOUT", "0", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    unsetenv("NUMACOLL_TIMEOUT");
    expect_rejected("NUMACOLL_VERBOSE", "7", "0..3");
    expect_rejected("NUMACOLL_VERBOSE", "1x", "integer");
    /* no leading blank or '+' (strtol/strtod would skip them; sizes, bools, enums refuse) */
    expect_rejected("NUMACOLL_VERBOSE", " 1", "integer");
    expect_rejected("NUMACOLL_MOVE_SLOTS", "+4", "integer");
    expect_rejected("NUMACOLL_TIMEOUT", " 5", "allowed");
    expect_rejected("NUMACOLL_MOVE_CMA_COST", "+1.5", "allowed");
    expect_rejected("NUMACOLL_BARRIER", "no-such-barrier", "sense-reversing");
    expect_rejected("NUMACOLL_OVERSUBSCRIBED", "maybe", "auto, yes, no");
    expect_rejected("NUMACOLL_NUMA_BIND", "2", "allowed");
    /* "0|64K..256M": 0 (auto) or a size in the range, nothing in between */
    expect_rejected("NUMACOLL_BCAST_QUEUE_BYTES", "4K", "0|64K..256M");
    expect_rejected("NUMACOLL_BCAST_QUEUE_BYTES", "512M", "allowed");
    clear_env();
    setenv("NUMACOLL_BCAST_QUEUE_BYTES", "0", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    setenv("NUMACOLL_BCAST_QUEUE_BYTES", "64K", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    unsetenv("NUMACOLL_BCAST_QUEUE_BYTES");
    expect_rejected("NUMACOLL_BARRIER_TOPO_LEVELS", "numa,l4", "'l4'");
    expect_rejected("NUMACOLL_BARRIER_TOPO_LEVELS", "numa,numa", "repeated");
    expect_rejected("NUMACOLL_BARRIER_TOPO_LEVELS", "", "empty");
    expect_rejected("NUMACOLL_NO_SUCH_THING", "1", "unknown variable");
    /* a typo of a known name: the name suggested */
    expect_rejected("NUMACOLL_TIMOUT", "5", "did you mean NUMACOLL_TIMEOUT?");
    clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* every problem of the environment in one message, not the first alone */
static void test_every_problem_named(void **state)
{
    (void)state;
    clear_env();
    setenv("NUMACOLL_TIMEOUT", "abc", 1);
    setenv("NUMACOLL_MOVE", "fast", 1);
    setenv("NUMACOLL_BARIER", "mcs", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_ERR_CONFIG);
    const char *msg = numacoll_last_error();
    if (!strstr(msg, "NUMACOLL_TIMEOUT='abc' is not valid") ||
        !strstr(msg, "NUMACOLL_MOVE='fast' is not valid; allowed: auto, copy, cma") ||
        !strstr(msg, "unknown variable NUMACOLL_BARIER in the environment (did you mean "
                     "NUMACOLL_BARRIER?)"))
        fail_msg("message was: %s", msg);
    clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

static int fork_team_ok(nc_forkctx_t *c)
{
    return numacoll_barrier(c->team);
}

static void test_team_rejects_bad_env(void **state)
{
    (void)state;
    /* an invalid value makes team creation fail on every member, without a hang */
    clear_env();
    setenv("NUMACOLL_WAIT_SPIN", "lots", 1);
    numacoll_config_reload(); /* the table is read once per process; children inherit it */
    nc_forkresult_t res;
    int failed = nc_forkrun(3, 0, fork_team_ok, NULL, 0, 60, &res);
    assert_int_equal(failed, 3);
    assert_false(res.timed_out);
    for (int r = 0; r < 3; r++)
        assert_int_equal(res.exit_code[r], 3);
    unsetenv("NUMACOLL_WAIT_SPIN");
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    assert_int_equal(nc_forkrun(3, 0, fork_team_ok, NULL, 0, 60, &res), 0);
}

static void test_team_bad_params(void **state)
{
    (void)state;
    numacoll_team_t *t = (numacoll_team_t *)0x1;
    numacoll_team_params_t p = {.rank = 2, .size = 2, .allgather = numacoll_fork_oob_allgather};
    assert_int_equal(numacoll_team_create(&p, &t), NUMACOLL_ERR_ARG);
    assert_null(t);
    assert_non_null(strstr(numacoll_last_error(), "rank=2"));
    p.rank = 0;
    p.size = 0;
    assert_int_equal(numacoll_team_create(&p, &t), NUMACOLL_ERR_ARG);
    assert_non_null(strstr(numacoll_last_error(), "size=0"));
    p.size = 1;
    p.allgather = NULL;
    assert_int_equal(numacoll_team_create(&p, &t), NUMACOLL_ERR_ARG);
    assert_non_null(strstr(numacoll_last_error(), "allgather"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),        cmocka_unit_test(test_valid_values),
        cmocka_unit_test(test_rejections),      cmocka_unit_test(test_team_rejects_bad_env),
        cmocka_unit_test(test_every_problem_named),
        cmocka_unit_test(test_team_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
