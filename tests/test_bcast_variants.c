/*
 * Tests of the broadcast's named variants (numacoll_bcast_with,
 * numacoll_bcast_variant_name): the list and what each name forces, the errors for an
 * unknown name and bad arguments, and every variant delivering every byte in forked teams.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/bcast/bcast.h"
#include "core/nc_internal.h"
#include "forkrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void clear_env(void)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "60", 1); /* a hang becomes an error naming the culprit */
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* The fields of @p o that differ from the defaults */
static int forced_fields(const nc_bcast_opts_t *o)
{
    const nc_bcast_opts_t d = NC_BCAST_OPTS_DEFAULT;
    return (o->tree != d.tree) + (o->k != d.k) + (o->inline_max != d.inline_max) +
           (o->cma_min != d.cma_min) + (o->relay != d.relay) + (o->copy_mode != d.copy_mode) +
           (o->rotate != d.rotate) + (o->demote != d.demote) + (o->prefetch != d.prefetch) +
           (o->mark != d.mark);
}

/* The list: every tree first, as "tree:<its name>", then the other variants; each name
 * once, each forcing exactly one option, which for a tree is that tree. */
static void test_variant_names(void **state)
{
    (void)state;
    int n = 0;
    while (numacoll_bcast_variant_name(n))
        n++;
    assert_int_equal(n, NC_BTREE_COUNT + 1 + 4 + 2 + 2); /* trees, cma, copy, demote, prefetch */
    assert_null(numacoll_bcast_variant_name(-1));
    for (int i = 0; i < n; i++) {
        const char *name = numacoll_bcast_variant_name(i);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(name, numacoll_bcast_variant_name(j));
        nc_bcast_opts_t o;
        assert_int_equal(nc_bcast_variant_opts(name, &o), NUMACOLL_OK);
        assert_int_equal(forced_fields(&o), 1);
        if (i < NC_BTREE_COUNT) {
            char want[32];
            snprintf(want, sizeof want, "tree:%s", nc_bcast_tree_names[i]);
            assert_string_equal(name, want);
            assert_int_equal(o.tree, i);
        }
    }
    nc_bcast_opts_t o;
    assert_int_equal(nc_bcast_variant_opts("copy:stream", &o), NUMACOLL_OK);
    assert_int_equal(o.copy_mode, 3); /* both sides stream */
    assert_int_equal(nc_bcast_variant_opts("cma", &o), NUMACOLL_OK);
    assert_int_equal(o.cma_min, 1);
}

/* the messages of every variant: sizes from empty through inline and queue to several
 * fragments, roots in turn */
static const size_t sizes[] = {0, 1, 100, 3000, 9000, 70000, 1u << 20};
enum { NSIZES = sizeof sizes / sizeof *sizes };

static int variants_worker(nc_forkctx_t *ctx)
{
    numacoll_team_t *t = ctx->team;
    int P = ctx->size, me = ctx->rank;
    unsigned char *buf = malloc(sizes[NSIZES - 1]);
    if (!buf) return 90;
    const char *name;
    for (int v = 0; (name = numacoll_bcast_variant_name(v)); v++) {
        for (int i = 0; i < NSIZES; i++) {
            int root = (v + i) % P;
            size_t n = sizes[i];
            for (size_t j = 0; j < n; j++)
                buf[j] = me == root ? (unsigned char)(j * 7 + (size_t)v + i) : 0xA5;
            int rc = numacoll_bcast_with(t, buf, n, root, name);
            if (rc != NUMACOLL_OK) {
                fprintf(stderr, "rank %d: %s, %zu bytes from %d: %s: %s\n", me, name, n, root,
                        numacoll_status_name(rc), numacoll_last_error());
                return 91;
            }
            for (size_t j = 0; j < n; j++)
                if (buf[j] != (unsigned char)(j * 7 + (size_t)v + i)) {
                    fprintf(stderr, "rank %d: %s, %zu bytes from %d: wrong byte %zu\n", me, name, n,
                            root, j);
                    return 92;
                }
        }
    }
    free(buf);
    return 0;
}

static void test_every_variant(void **state)
{
    (void)state;
    clear_env();
    for (int P = 2; P <= 3; P++) {
        nc_forkresult_t res;
        assert_int_equal(nc_forkrun(P, NC_FORK_BIND, variants_worker, NULL, 0, 120, &res), 0);
        assert_int_equal(res.timed_out, 0);
    }
}

/* An unknown or NULL name: NUMACOLL_ERR_NOT_FOUND naming it and the allowed ones, on every
 * member before any broadcast, so the team's next broadcast works; bad arguments:
 * NUMACOLL_ERR_ARG naming numacoll_bcast_with and the argument. */
static int errors_worker(nc_forkctx_t *ctx)
{
    numacoll_team_t *t = ctx->team;
    char buf[64] = {0};
    if (numacoll_bcast_with(t, buf, sizeof buf, 0, "tree:oak") != NUMACOLL_ERR_NOT_FOUND) return 80;
    const char *msg = numacoll_last_error();
    if (!strstr(msg, "'tree:oak'") || !strstr(msg, "allowed: tree:kary, ") ||
        !strstr(msg, "prefetch:on")) {
        fprintf(stderr, "unclear message: %s\n", msg);
        return 81;
    }
    if (numacoll_bcast_with(t, buf, sizeof buf, 0, NULL) != NUMACOLL_ERR_NOT_FOUND) return 82;
    if (numacoll_bcast_with(t, buf, sizeof buf, ctx->size, "cma") != NUMACOLL_ERR_ARG ||
        !strstr(numacoll_last_error(), "numacoll_bcast_with: root=")) {
        fprintf(stderr, "bad root: %s\n", numacoll_last_error());
        return 83;
    }
    if (numacoll_bcast_with(NULL, buf, sizeof buf, 0, "cma") != NUMACOLL_ERR_ARG) return 84;
    if (numacoll_bcast_with(t, NULL, 8, 0, "cma") != NUMACOLL_ERR_ARG) return 85;
    if (ctx->rank == 0) memcpy(buf, "after the errors", 17);
    if (numacoll_bcast_with(t, buf, sizeof buf, 0, "tree:chain") != NUMACOLL_OK) return 86;
    return strcmp(buf, "after the errors") ? 87 : 0;
}

static void test_errors(void **state)
{
    (void)state;
    clear_env();
    nc_forkresult_t res;
    assert_int_equal(nc_forkrun(2, NC_FORK_BIND, errors_worker, NULL, 0, 60, &res), 0);
    assert_int_equal(res.timed_out, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variant_names),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_every_variant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
