/*
 * What the files of the test_bcast program share (test_bcast.c defines the helpers and
 * runs every case; bcast/mismatch.c and bcast/state.c hold cases of their concern).
 */
#ifndef NC_BCAST_TEST_H
#define NC_BCAST_TEST_H

#include "forkrun.h"

#include <stddef.h>
#include <stdint.h>

#define MiB (1024u * 1024u)

/* NUMACOLL_* unset, NUMACOLL_TIMEOUT=60, the program's NUMACOLL_BCAST_CMA_MIN kept */
void clear_env(void);
/* numacoll_config_reload, which must succeed */
void env_reload(void);
/* the next of xorshift32 state @p x (not 0) */
uint32_t rnd(uint32_t *x);
/* @p n bytes of a pattern of @p key */
void fill(unsigned char *p, size_t n, uint64_t key);
/* @p worker on P forked members: every member must pass, none may time out, and no
 * segment may be left behind */
void run_members(int P, int (*worker)(nc_forkctx_t *), void *arg, double timeout);

/* bcast/mismatch.c */
void test_size_mismatch(void **state);
void test_root_mismatch(void **state);
void test_check(void **state);
void test_marked(void **state);

/* bcast/state.c */
void test_copy_mode_selection(void **state);
void test_copy_mode_selection_runs(void **state);
void test_copy_mode_selection_split(void **state);
void test_copy_mode_selection_roots(void **state);
void test_model_constants(void **state);
void test_populate_first_use(void **state);

#endif
