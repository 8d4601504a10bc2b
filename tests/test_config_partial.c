/*
 * A program that uses one part of libnumacoll.a, the key-value store, through the public
 * API only (like any user of the archive), so that the linker takes the core and the store
 * and nothing of the teams: the rows of those two layers must still be registered and
 * validated (each layer registers its own rows; config.h), and the variables of the layers
 * this program lacks are still known names, not typos.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <numacoll/kvdb.h>
#include <numacoll/numacoll.h>

#include "forkrun.h" /* nc_test_clear_env only (common/clear_env.c): no fork harness */

#include <stdlib.h>
#include <string.h>

static int has_row(const char *name)
{
    int n;
    const numacoll_config_row_t *rows = numacoll_config_table(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0) return 1;
    return 0;
}

static void test_rows_of_the_parts_used(void **state)
{
    (void)state;
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    assert_true(has_row("NUMACOLL_TIMEOUT"));   /* core */
    assert_true(has_row("NUMACOLL_KVDB_LOCK")); /* key-value store */
    assert_string_equal(numacoll_config_value("NUMACOLL_KVDB_LOCK"), "seqlock");
    /* the premise: this program contains no team, barrier, broadcast or MPI rows (if the
     * store ever needs those layers, pick another part for this test) */
    assert_false(has_row("NUMACOLL_BARRIER"));
    assert_false(has_row("NUMACOLL_BCAST_QUEUE_BYTES"));
    assert_false(has_row("NUMACOLL_MPI_STATS"));
    assert_null(numacoll_config_value("NUMACOLL_BARRIER"));
}

/* @p name=@p value makes the configuration and the store's creation fail, naming both */
static void expect_rejected(const char *name, const char *value, const char *must_mention)
{
    nc_test_clear_env();
    setenv(name, value, 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_ERR_CONFIG);
    numacoll_kvdb_t *db = NULL;
    assert_int_equal(numacoll_kvdb_create(NULL, &db), NUMACOLL_ERR_CONFIG);
    assert_null(db);
    const char *msg = numacoll_last_error();
    if (!strstr(msg, name) || !strstr(msg, must_mention)) fail_msg("message was: %s", msg);
    nc_test_clear_env();
}

static void test_invalid_values_rejected(void **state)
{
    (void)state;
    expect_rejected("NUMACOLL_KVDB_LOCK", "no-such-lock", "seqlock");
    expect_rejected("NUMACOLL_KVDB_HEAP", "12", "1K..64G");
    expect_rejected("NUMACOLL_KVDB_GROW", "maybe", "allowed");
    expect_rejected("NUMACOLL_TIMEOUT", "soon", "allowed");
    expect_rejected("NUMACOLL_WAIT_SPIN", "lots", "integer");
    /* a typo is still an unknown variable */
    expect_rejected("NUMACOLL_KVDB_LOKC", "seqlock", "unknown variable");
    expect_rejected("NUMACOLL_BARIER", "mcs", "unknown variable");
}

static void test_other_layers_names_known(void **state)
{
    (void)state;
    /* variables of layers this program does not contain are known names (no error), and
     * not validated here: the programs that use those layers validate them */
    nc_test_clear_env();
    setenv("NUMACOLL_BARRIER", "mcs", 1);
    setenv("NUMACOLL_MPI_STATS", "1", 1);
    setenv("NUMACOLL_BCAST_K", "1000", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    setenv("NUMACOLL_KVDB_LOCK", "rwlock", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    numacoll_kvdb_t *db = NULL;
    int rc = numacoll_kvdb_create(NULL, &db);
    if (rc != NUMACOLL_OK) fail_msg("numacoll_kvdb_create: %s", numacoll_last_error());
    assert_string_equal(numacoll_kvdb_lock_name(db), "rwlock");
    assert_int_equal(numacoll_kvdb_close(db), NUMACOLL_OK);
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_of_the_parts_used),
        cmocka_unit_test(test_invalid_values_rejected),
        cmocka_unit_test(test_other_layers_names_known),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
