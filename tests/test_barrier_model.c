/*
 * The LogP model of paper 2 (adaptive-logp and the auto choice), against values computed
 * by hand from the formulas:
 *   f_r = max(o_r, g), f_s = max(o_s, g), t_s = max(g, o_s + L + o_r)
 *   central      2(o_s + L + o_r) + (P-2) f_r + (P-2) f_s
 *   combining    (o_s + L + f_r (n-2) + o_r) ceil(log_n P) + o_s + (ceil(log2 P) - 1) t_s
 *                + L + o_r
 *   dissemination t_s ceil(log2 P)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/barrier/barrier.h"
#include "core/nc_internal.h"

#include <stdlib.h>
#include <string.h>

#define NEAR(a, b) assert_true((a) > (b)-1e-6 && (a) < (b) + 1e-6)

/* the paper's parameters: L = 125.6, o_r = 123.8, o_s = 0.43, g = 0.22
 * f_r = 123.8, f_s = 0.43, t_s = 0.43 + 125.6 + 123.8 = 249.83 */
static void test_paper_parameters(void **state)
{
    (void)state;
    nc_logp_t m = {.L = 125.6, .o_s = 0.43, .o_r = 123.8, .g = 0.22};
    /* P = 2 */
    NEAR(nc_logp_central(&m, 2), 499.66);
    NEAR(nc_logp_combining(&m, 2, 2), 249.83 + 0.43 + 0 + 249.4); /* 499.66 */
    NEAR(nc_logp_dissemination(&m, 2), 249.83);
    /* P = 8: central 499.66 + 6 * 123.8 + 6 * 0.43 = 1245.04 */
    NEAR(nc_logp_central(&m, 8), 1245.04);
    /* combining n = 2: 249.83 * 3 + 0.43 + 2 * 249.83 + 249.4 = 1498.98 */
    NEAR(nc_logp_combining(&m, 8, 2), 1498.98);
    NEAR(nc_logp_dissemination(&m, 8), 749.49);
    /* P = 16, n = 4: (0.43 + 125.6 + 2 * 123.8 + 123.8) * 2 + 0.43 + 3 * 249.83 + 249.4 */
    NEAR(nc_logp_combining(&m, 16, 4), 1994.18);
    /* P = 5 is not a power of two: 3 rounds */
    NEAR(nc_logp_dissemination(&m, 5), 749.49);
    /* the paper's note: with these parameters dissemination wins for every P in 2..100 */
    for (int P = 2; P <= 100; P++)
        assert_int_equal(nc_logp_choose(&m, P, 2, NULL), NC_LOGP_DISSEMINATION);
}

/* zero overheads and gap, L = 100: central costs 200 for any P, dissemination 100 per round */
static void test_crossover(void **state)
{
    (void)state;
    nc_logp_t m = {.L = 100, .o_s = 0, .o_r = 0, .g = 0};
    double est[NC_LOGP_NALG];
    assert_int_equal(nc_logp_choose(&m, 2, 2, est), NC_LOGP_DISSEMINATION);
    NEAR(est[NC_LOGP_CENTRAL], 200);
    NEAR(est[NC_LOGP_DISSEMINATION], 100);
    /* P = 4: 200 vs 200, tie goes to the central counter (listed first) */
    assert_int_equal(nc_logp_choose(&m, 4, 2, est), NC_LOGP_CENTRAL);
    /* P = 8: combining n = 2: 100 * 3 + 0 + 2 * 100 + 100 = 600 */
    assert_int_equal(nc_logp_choose(&m, 8, 2, est), NC_LOGP_CENTRAL);
    NEAR(est[NC_LOGP_COMBINING], 600);
    NEAR(est[NC_LOGP_DISSEMINATION], 300);
    /* P = 1: nothing to do */
    assert_int_equal(nc_logp_choose(&m, 1, 2, est), NC_LOGP_CENTRAL);
    NEAR(est[0] + est[1] + est[2], 0);
    /* expensive sends make the combining tree (fewest messages per process) win */
    nc_logp_t c = {.L = 10, .o_s = 0, .o_r = 0, .g = 1000};
    /* central: 2 * 10 + 6 * 1000 + 6 * 1000 = 12020; dissemination: 1000 * 3 = 3000;
     * combining n = 2: 10 * 3 + 0 + 2 * 1000 + 10 = 2040 */
    assert_int_equal(nc_logp_choose(&c, 8, 2, est), NC_LOGP_COMBINING);
    NEAR(est[NC_LOGP_CENTRAL], 12020);
    NEAR(est[NC_LOGP_DISSEMINATION], 3000);
    NEAR(est[NC_LOGP_COMBINING], 2040);
    /* every choice maps to a registered algorithm */
    for (int i = 0; i < NC_LOGP_NALG; i++)
        assert_true(nc_barrier_find(nc_logp_algorithm(i)) >= 0);
}

static void test_parameters_from_config(void **state)
{
    (void)state;
    setenv("NUMACOLL_BARRIER_LOGP_L", "125.6", 1);
    setenv("NUMACOLL_BARRIER_LOGP_OR", "123.8", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    nc_logp_t m = nc_logp_from_config();
    NEAR(m.L, 125.6);
    NEAR(m.o_r, 123.8);
    setenv("NUMACOLL_BARRIER_LOGP_G", "-1", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_ERR_CONFIG);
    assert_non_null(strstr(numacoll_last_error(), "NUMACOLL_BARRIER_LOGP_G"));
    unsetenv("NUMACOLL_BARRIER_LOGP_G");
    unsetenv("NUMACOLL_BARRIER_LOGP_L");
    unsetenv("NUMACOLL_BARRIER_LOGP_OR");
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paper_parameters),
        cmocka_unit_test(test_crossover),
        cmocka_unit_test(test_parameters_from_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
