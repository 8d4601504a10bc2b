/*
 * The launcher's count of the job's processes on this node (core/job_env.c): Slurm's
 * compressed per-node task list (well-formed, compressed, malformed, a node past its end)
 * and which launcher's variable nc_job_node_procs believes when several are set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/nc_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_vars[] = {
        "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE",
        "PALS_LOCAL_SIZE",            "PMI_LOCAL_SIZE",  "SLURM_STEP_TASKS_PER_NODE",
        "SLURM_NODEID"};

/* the test's own launcher variables only (ctest may run inside an srun or an mpirun) */
static int clear_launcher_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof k_vars / sizeof k_vars[0]; i++) unsetenv(k_vars[i]);
    return 0;
}

/* nc_slurm_tasks_on_node's count for @p node, or its error (negative) */
static int tasks_of(const char *list, long node)
{
    int tasks = -1;
    int rc = nc_slurm_tasks_on_node(list, node, &tasks, NULL);
    return rc ? rc : tasks;
}

static void test_slurm_list_plain(void **state)
{
    (void)state;
    assert_int_equal(tasks_of("4", 0), 4);
    assert_int_equal(tasks_of("3,1,2", 0), 3);
    assert_int_equal(tasks_of("3,1,2", 1), 1);
    assert_int_equal(tasks_of("3,1,2", 2), 2);
    assert_int_equal(tasks_of("16777216", 0), 16777216); /* the largest count */
    long nodes = 0;
    int tasks = 0;
    assert_int_equal(nc_slurm_tasks_on_node("3,1,2", 1, &tasks, &nodes), 0);
    assert_int_equal(nodes, 3);
}

static void test_slurm_list_compressed(void **state)
{
    (void)state;
    /* srun(1)'s example: 2 tasks on each of the first three nodes, 1 on the fourth */
    for (long n = 0; n < 3; n++) assert_int_equal(tasks_of("2(x3),1", n), 2);
    assert_int_equal(tasks_of("2(x3),1", 3), 1);
    assert_int_equal(tasks_of("5,4(x3)", 0), 5);
    assert_int_equal(tasks_of("5,4(x3)", 3), 4);
    assert_int_equal(tasks_of("1(x1)", 0), 1);
    assert_int_equal(tasks_of("8(x1000000),3(x2)", 999999), 8);
    assert_int_equal(tasks_of("8(x1000000),3(x2)", 1000001), 3);
    long nodes = 0;
    int tasks = 0;
    assert_int_equal(nc_slurm_tasks_on_node("2(x3),1", 0, &tasks, &nodes), 0);
    assert_int_equal(nodes, 4);
}

static void test_slurm_list_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",         ",",         "2,",        ",2",        "2,,1",      "2(x3",
        "2(3)",     "2(x)",      "2(x0)",     "2(x-1)",    "(x2)",      "0",
        "2,0,1",    "-2",        "+2",        " 2",        "2 ",        "2(x3) ",
        "2(X3)",    "2(x3)1",    "2(x3)(x2)", "2x3",       "abc",       "2;1",
        "16777217", "99999999999999999999",   "2(x1073741824),1(x1)",     "1(x99999999999)",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int tasks = 12345;
        long nodes = 12345;
        int rc = nc_slurm_tasks_on_node(bad[i], 0, &tasks, &nodes);
        if (rc != -EINVAL) fail_msg("\"%s\": %d, expected -EINVAL", bad[i], rc);
        assert_int_equal(tasks, 12345); /* nothing stored */
        assert_int_equal(nodes, 12345);
    }
    assert_int_equal(nc_slurm_tasks_on_node(NULL, 0, &(int){0}, NULL), -EINVAL);
}

static void test_slurm_list_node_out_of_range(void **state)
{
    (void)state;
    int tasks = 12345;
    long nodes = 0;
    assert_int_equal(nc_slurm_tasks_on_node("2(x3),1", 4, &tasks, &nodes), -ERANGE);
    assert_int_equal(nodes, 4); /* said, for the message */
    assert_int_equal(tasks, 12345);
    assert_int_equal(tasks_of("4", 1), -ERANGE);
    assert_int_equal(tasks_of("4", -1), -ERANGE);
    /* a malformed list is malformed whatever the node */
    assert_int_equal(tasks_of("2(x3,1", 9), -EINVAL);
}

static void test_count_from_each_launcher(void **state)
{
    (void)state;
    nc_job_node_procs_t j;
    nc_job_node_procs(&j);
    assert_int_equal(j.count, 0); /* none set: unknown, and nothing to complain about */
    assert_null(j.source);
    assert_string_equal(j.problem, "");

    setenv("SLURM_STEP_TASKS_PER_NODE", "2(x3),1", 1);
    setenv("SLURM_NODEID", "3", 1);
    nc_job_node_procs(&j);
    assert_int_equal(j.count, 1);
    assert_string_equal(j.source, "SLURM_STEP_TASKS_PER_NODE");
    setenv("SLURM_NODEID", "1", 1);
    nc_job_node_procs(&j);
    assert_int_equal(j.count, 2);

    /* an MPI launcher's own variable wins over Slurm's, which it may have inherited from
     * the allocation or from its daemons' step */
    setenv("PMI_LOCAL_SIZE", "3", 1);
    nc_job_node_procs(&j);
    assert_int_equal(j.count, 3);
    assert_string_equal(j.source, "PMI_LOCAL_SIZE");
    setenv("PALS_LOCAL_SIZE", "4", 1);
    nc_job_node_procs(&j);
    assert_int_equal(j.count, 4);
    assert_string_equal(j.source, "PALS_LOCAL_SIZE");
    setenv("MV2_COMM_WORLD_LOCAL_SIZE", "5", 1);
    nc_job_node_procs(&j);
    assert_int_equal(j.count, 5);
    assert_string_equal(j.source, "MV2_COMM_WORLD_LOCAL_SIZE");
    setenv("MPI_LOCALNRANKS", "6", 1);
    nc_job_node_procs(&j);
    assert_int_equal(j.count, 6);
    assert_string_equal(j.source, "MPI_LOCALNRANKS");
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "7", 1);
    nc_job_node_procs(&j);
    assert_int_equal(j.count, 7);
    assert_string_equal(j.source, "OMPI_COMM_WORLD_LOCAL_SIZE");
    assert_string_equal(j.problem, "");
    /* an empty value is no value */
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "", 1);
    nc_job_node_procs(&j);
    assert_string_equal(j.source, "MPI_LOCALNRANKS");
}

/* a problem names the variable and its value, and leaves the count unknown */
static void expect_problem(const char *var, const char *value_shown)
{
    nc_job_node_procs_t j;
    nc_job_node_procs(&j);
    assert_int_equal(j.count, 0);
    assert_null(j.source);
    char want[128];
    snprintf(want, sizeof want, "%s=%s ", var, value_shown);
    if (!strstr(j.problem, want)) fail_msg("problem \"%s\" lacks \"%s\"", j.problem, want);
    if (!strstr(j.problem, "ignored")) fail_msg("problem \"%s\" lacks \"ignored\"", j.problem);
}

static void test_malformed_values_ignored(void **state)
{
    (void)state;
    setenv("SLURM_STEP_TASKS_PER_NODE", "2(x3,1", 1);
    setenv("SLURM_NODEID", "0", 1);
    expect_problem("SLURM_STEP_TASKS_PER_NODE", "2(x3,1");
    setenv("SLURM_STEP_TASKS_PER_NODE", "2(x3),1", 1);
    setenv("SLURM_NODEID", "4", 1);
    expect_problem("SLURM_NODEID", "4 is past the 4 node(s) of SLURM_STEP_TASKS_PER_NODE=2(x3),1:");
    setenv("SLURM_NODEID", "x1", 1);
    expect_problem("SLURM_NODEID", "x1");
    unsetenv("SLURM_NODEID");
    expect_problem("SLURM_STEP_TASKS_PER_NODE", "2(x3),1 without SLURM_NODEID:");

    /* the first launcher variable set decides, even when its value is garbage: the next
     * one in the order (here Slurm's, well-formed again) describes another job */
    setenv("SLURM_NODEID", "0", 1);
    setenv("MPI_LOCALNRANKS", "3x", 1);
    expect_problem("MPI_LOCALNRANKS", "3x");
    setenv("MPI_LOCALNRANKS", "0", 1);
    expect_problem("MPI_LOCALNRANKS", "0");
    setenv("MPI_LOCALNRANKS", "16777217", 1);
    expect_problem("MPI_LOCALNRANKS", "16777217");
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "-4", 1);
    expect_problem("OMPI_COMM_WORLD_LOCAL_SIZE", "-4");
    /* a long value or one with control characters is shown cut and made printable */
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE",
           "1\n2\x1b[31m3456789012345678901234567890123456789012345678901234567890", 1);
    expect_problem("OMPI_COMM_WORLD_LOCAL_SIZE",
                   "1?2?[31m3456789012345678901234567890123456789012...");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slurm_list_plain),
        cmocka_unit_test(test_slurm_list_compressed),
        cmocka_unit_test(test_slurm_list_malformed),
        cmocka_unit_test(test_slurm_list_node_out_of_range),
        cmocka_unit_test_setup_teardown(test_count_from_each_launcher, clear_launcher_env,
                                        clear_launcher_env),
        cmocka_unit_test_setup_teardown(test_malformed_values_ignored, clear_launcher_env,
                                        clear_launcher_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
