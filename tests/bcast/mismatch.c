/*
 * test_bcast, members that disagree: receivers passing other sizes, roots or marks than the
 * root's, and NUMACOLL_BCAST_CHECK comparing every member's arguments before a broadcast.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bcast/bcast_test.h"
#include "coll/bcast/bcast.h"
#include "core/nc_internal.h"
#include "forkrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- members that pass different sizes ------------------------------------------------ */

typedef struct mm_args {
    int iters;
    unsigned seed;
    int vary_tree; /* random trees, relay and copy modes (nc_bcast_run_opts) */
    int roots;     /* also every third call (P >= 3): one receiver passes another receiver
                    * as the root */
} mm_args_t;

/* a size from 0 (1 in 16) to 4 MiB: inline, queue of one op, queue of many ops (and CMA where
 * it is on), each class about as likely */
static size_t mm_size(uint32_t *x)
{
    if (rnd(x) % 16 == 0) return 0; /* an op without payload (buffer NULL) */
    switch (rnd(x) % 4) {
    case 0: return 1 + rnd(x) % 1024;
    case 1: return 1 + rnd(x) % 8192;
    case 2: return 1 + rnd(x) % (300 * 1024);
    default: return 1 + rnd(x) % (4 * MiB);
    }
}

/* Every third call, each receiver passes a size of its own (any path's), the others the
 * root's. The root must succeed; a receiver whose size differs must fail with ERR_ARG and
 * hold the root's first min(own, root's) bytes, its own bytes after those untouched, and
 * nothing written past its size; every later call must work as usual (the members' op
 * counts stayed equal). With `roots`, in another third of the calls one receiver passes
 * a wrong root (another receiver) and the root's size: it must fail with ERR_ARG naming
 * both roots, hold the whole message (it followed the true root), and
 * nc_bcast_last_mismatch must give it the true root; the others succeed. */
static int mm_worker(nc_forkctx_t *ctx)
{
    const mm_args_t *a = ctx->arg;
    numacoll_team_t *t = ctx->team;
    int P = ctx->size, me = ctx->rank;
    size_t cap = 4 * MiB + 64;
    unsigned char *mem = malloc(cap + 128), *want = malloc(cap);
    if (!mem || !want) return 90;
    uint32_t x = a->seed | 1;
    if (a->vary_tree) {
        int numa[64];
        for (int r = 0; r < P; r++)
            numa[r] = r % 2;
        if (nc_bcast_debug_set_numa(t, numa) != NUMACOLL_OK) return 91;
    }
    int mismatched = 0;
    for (int i = 0; i < a->iters; i++) {
        /* identical draws on every member, one size per rank */
        int root = (int)(rnd(&x) % (uint32_t)P);
        size_t sizes[64], n = mm_size(&x);
        int mis = i % 3 == 1;
        for (int r = 0; r < P; r++)
            sizes[r] = mis && r != root ? mm_size(&x) : n;
        /* the receiver that passes another receiver as the root, if any this call */
        int liar = -1, told = root;
        if (a->roots && P >= 3 && i % 3 == 2) {
            liar = (root + 1 + (int)(rnd(&x) % (uint32_t)(P - 1))) % P;
            told = (root + 1 + (int)(rnd(&x) % (uint32_t)(P - 1))) % P;
            if (told == liar) told = (told + 1) % P == root ? (told + 2) % P : (told + 1) % P;
        }
        nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
        if (a->vary_tree) {
            o.tree = (int)(rnd(&x) % NC_BTREE_COUNT);
            o.k = 1 + (int)(rnd(&x) % 4);
            o.relay = (int)(rnd(&x) % 2);
            o.copy_mode = (int)(rnd(&x) % 4);
            o.demote = (int)(rnd(&x) % 3) - 1;   /* team default, off, on */
            o.prefetch = (int)(rnd(&x) % 3) - 1; /* the same */
        }
        size_t mine = sizes[me], got = mine < n ? mine : n;
        unsigned char *buf = mem + (rnd(&x) % 64);
        uint64_t key = ((uint64_t)a->seed << 32) ^ (uint64_t)i;
        fill(want, n, key);
        unsigned char old = (unsigned char)(0xA5 ^ (i & 0xff));
        if (me == root)
            memcpy(buf, want, n);
        else
            memset(buf, old, mine);
        memset(buf + mine, 0x5C, 16);
        int rc;
        int my_root = me == liar ? told : root;
        void *arg = mine ? buf : NULL;
        if (a->vary_tree) {
            nc_team_op_enter(t, "bcast");
            rc = nc_bcast_run_opts(t, arg, mine, my_root, &o);
            if (rc == NUMACOLL_OK) nc_team_op_leave(t);
        } else {
            rc = numacoll_bcast(t, arg, mine, my_root);
        }
        int expect = mine == n && me != liar ? NUMACOLL_OK : NUMACOLL_ERR_ARG;
        if (rc != expect) {
            fprintf(stderr, "rank %d: call %d (root %d sent %zu, mine %zu): expected %s, got %s: %s\n",
                    me, i, root, n, mine, numacoll_status_name(expect),
                    numacoll_status_name(rc), numacoll_last_error());
            return 92;
        }
        if (rc != NUMACOLL_OK) {
            mismatched++;
            nc_team_op_leave(t); /* the call completed on every member (the error is ours) */
            if (me == liar) {
                char want_msg[96];
                snprintf(want_msg, sizeof want_msg, "rank %d passed root %d and the root is rank %d",
                         me, told, root);
                size_t sent = 0;
                int mark = 0, true_root = -1;
                uint64_t head = 0;
                if (!strstr(numacoll_last_error(), want_msg) ||
                    !nc_bcast_last_mismatch(t, &sent, &mark, &head, &true_root) ||
                    true_root != root || sent != n) {
                    fprintf(stderr, "rank %d: call %d: root %d, told %d: %s (mismatch root %d)\n",
                            me, i, root, told, numacoll_last_error(), true_root);
                    return 99;
                }
            } else if (!strstr(numacoll_last_error(), "different sizes")) {
                fprintf(stderr, "rank %d: unexpected message: %s\n", me, numacoll_last_error());
                return 96;
            }
        }
        if (memcmp(buf, want, got) != 0) {
            size_t j = 0;
            while (buf[j] == want[j])
                j++;
            fprintf(stderr, "rank %d: call %d (root %d sent %zu, mine %zu) wrong at byte %zu\n",
                    me, i, root, n, mine, j);
            return 94;
        }
        for (size_t j = got; j < mine; j++)
            if (buf[j] != old) {
                fprintf(stderr, "rank %d: call %d (root sent %zu, mine %zu) wrote byte %zu\n", me,
                        i, n, mine, j);
                return 97;
            }
        for (int c = 0; c < 16; c++)
            if (buf[mine + c] != 0x5C) {
                fprintf(stderr, "rank %d: call %d wrote past its %zu bytes\n", me, i, mine);
                return 95;
            }
    }
    if (mismatched == 0 && a->iters > 10) return 98; /* the draws must have hit this rank */
    free(mem);
    free(want);
    return 0;
}

/* NUMACOLL_BCAST_CHECK=1: the members' arguments are compared before any data moves. In
 * one call of three (after two good ones) one member (any, the root included) passes
 * something else: itself as the root (the mistake the unchecked broadcast cannot see),
 * another rank as the root, another size, or other per-call options (a tree). Every
 * member must then fail with ERR_ARG and a message naming that member, and nobody's
 * buffer may change (receivers keep their old bytes, the root its message); every good
 * call must deliver the whole message, the hot path's sizes and the queue's, so the
 * team's state survives the refusals. */
typedef struct ck_args {
    int iters;
    unsigned seed;
} ck_args_t;

static int check_worker(nc_forkctx_t *ctx)
{
    const ck_args_t *a = ctx->arg;
    numacoll_team_t *t = ctx->team;
    int P = ctx->size, me = ctx->rank;
    size_t cap = 1 * MiB;
    unsigned char *buf = malloc(cap + 16), *want = malloc(cap);
    if (!buf || !want) return 70;
    uint32_t x = a->seed | 1;
    int refused = 0;
    for (int i = 0; i < a->iters; i++) {
        int root = (int)(rnd(&x) % (uint32_t)P);
        size_t n = rnd(&x) % 2 ? rnd(&x) % 2048 : rnd(&x) % cap;
        int bad = i % 3 == 2;
        int culprit = bad ? (int)(rnd(&x) % (uint32_t)P) : -1;
        int kind = (int)(rnd(&x) % 4); /* 0 self-root, 1 other root, 2 size, 3 options */
        if (kind == 0 && culprit == root) kind = 2;
        int my_root = root, other = (root + 1 + (int)(rnd(&x) % (uint32_t)(P - 1))) % P;
        size_t mine = n, extra = 1 + rnd(&x) % 64; /* drawn on every member alike */
        nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
        if (me == culprit) {
            if (kind == 0) my_root = me;
            if (kind == 1) my_root = other;
            if (kind == 2) mine = n + extra;
            if (kind == 3) o.tree = NC_BTREE_CHAIN;
        }
        uint64_t key = ((uint64_t)a->seed << 32) ^ (uint64_t)i;
        fill(want, n, key);
        unsigned char old = (unsigned char)(0x3C ^ (i & 0xff));
        memset(buf, old, mine);
        if (me == root) memcpy(buf, want, n); /* (a root that passed more: old bytes after) */
        memset(buf + mine, 0x5C, 16);
        int rc;
        if (kind == 3 && bad) { /* everyone through the options call, one with a tree */
            nc_team_op_enter(t, "bcast");
            rc = nc_bcast_run_opts(t, buf, mine, my_root, &o);
            if (rc == NUMACOLL_OK) nc_team_op_leave(t);
        } else {
            rc = numacoll_bcast(t, buf, mine, my_root);
        }
        if (!bad) {
            if (rc != NUMACOLL_OK) {
                fprintf(stderr, "rank %d: good call %d (root %d, %zu bytes) failed: %s\n", me, i,
                        root, n, numacoll_last_error());
                return 71;
            }
            if (memcmp(buf, want, n) != 0) {
                fprintf(stderr, "rank %d: good call %d: wrong data\n", me, i);
                return 72;
            }
        } else {
            char name[64];
            snprintf(name, sizeof name, "rank %d passed", culprit);
            if (rc != NUMACOLL_ERR_ARG || !strstr(numacoll_last_error(), name) ||
                !strstr(numacoll_last_error(), "NUMACOLL_BCAST_CHECK")) {
                fprintf(stderr, "rank %d: bad call %d (kind %d by rank %d): %s: %s\n", me, i,
                        kind, culprit, numacoll_status_name(rc), numacoll_last_error());
                return 73;
            }
            nc_team_op_leave(t);
            refused++;
            size_t sent = 0;
            int mark = 0, mroot = -1;
            uint64_t head = 0;
            /* the mismatch record: another root iff roots differed (the MPI error class) */
            if (!nc_bcast_last_mismatch(t, &sent, &mark, &head, &mroot) || mark ||
                (kind <= 1) != (mroot != my_root)) {
                fprintf(stderr, "rank %d: bad call %d (kind %d): record root %d, mine %d\n", me,
                        i, kind, mroot, my_root);
                return 74;
            }
            for (size_t j = 0; j < mine; j++)
                if (buf[j] != (me == root && j < n ? want[j] : old)) {
                    fprintf(stderr, "rank %d: refused call %d changed byte %zu\n", me, i, j);
                    return 75;
                }
        }
        for (int c = 0; c < 16; c++)
            if (buf[mine + c] != 0x5C) return 76;
    }
    free(buf);
    free(want);
    return refused == a->iters / 3 ? 0 : 77;
}

/* Rank 1 alone turns the check on: the broadcast state is refused on every member with
 * ERR_CONFIG naming the setting (nobody waits in a barrier the others never enter). */
static int check_disagree_worker(nc_forkctx_t *ctx)
{
    if (ctx->rank == 1) {
        setenv("NUMACOLL_BCAST_CHECK", "1", 1);
        if (numacoll_config_reload() != NUMACOLL_OK) return 60;
    }
    char c = 7;
    int rc = numacoll_bcast(ctx->team, &c, 1, 0);
    const char *e = numacoll_last_error();
    if (rc != NUMACOLL_ERR_CONFIG || (!strstr(e, "check 0/1") && !strstr(e, "check 1/0"))) {
        fprintf(stderr, "rank %d: %s: %s\n", ctx->rank, numacoll_status_name(rc),
                numacoll_last_error());
        return 61;
    }
    return 0;
}

void test_check(void **state)
{
    (void)state;
    clear_env();
    setenv("NUMACOLL_BCAST_CHECK", "1", 1);
    env_reload();
    ck_args_t a = {.iters = 120, .seed = 931};
    run_members(2, check_worker, &a, 120);
    a.seed = 932;
    run_members(3, check_worker, &a, 120);
    a.seed = 933, a.iters = 60;
    run_members(6, check_worker, &a, 120);
    /* every member must agree on the check: a team where one member checks is refused */
    clear_env();
    env_reload();
    run_members(3, check_disagree_worker, NULL, 60);
}

/* Marked messages (nc_bcast_opts_t.mark, the MPI layer's header of a broadcast over
 * 2 GiB): a marked 8-byte message against unmarked receivers of 8, 100 and 100000 bytes
 * (the hot inline path, the general one, the queue path), then an unmarked one of 8 bytes
 * against marked receivers. A receiver whose mark differs fails with ERR_ARG and
 * nc_bcast_last_mismatch tells it the root's size, mark and first 8 bytes (once); those
 * whose mark matches succeed; a matching broadcast follows each. */
static int mark_worker(nc_forkctx_t *ctx)
{
    numacoll_team_t *t = ctx->team;
    int me = ctx->rank;
    static char buf[100000];
    const size_t mine_sizes[] = {8, 100, 100000};
    for (int warm = 0; warm < 2; warm++) /* cache the hot path's root */
        if (numacoll_bcast(t, buf, 8, 0) != NUMACOLL_OK) return 80;
    for (int c = 0; c < 4; c++) {
        int root_mark = c < 3; /* cases 0-2: a marked root; 3: marked receivers */
        size_t mine = me == 0 || c == 3 ? 8 : mine_sizes[c];
        int my_mark = me == 0 ? root_mark : c == 3;
        uint64_t val = 0x1122334455667788ull + (uint64_t)c;
        memset(buf, 0, sizeof buf);
        if (me == 0) memcpy(buf, &val, 8);
        nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
        o.mark = my_mark;
        nc_team_op_enter(t, "bcast");
        int rc = nc_bcast_run_opts(t, buf, mine, 0, &o);
        nc_team_op_leave(t);
        size_t sent = 0;
        int mark = -1;
        uint64_t head = 0;
        int mm = nc_bcast_last_mismatch(t, &sent, &mark, &head, NULL);
        int differ = me != 0 && my_mark != root_mark;
        if (differ) {
            if (rc != NUMACOLL_ERR_ARG || !mm || sent != 8 || mark != root_mark || head != val) {
                fprintf(stderr, "rank %d case %d: rc %s, mismatch %d (sent %zu, mark %d, head %llx)\n",
                        me, c, numacoll_status_name(rc), mm, sent, mark, (unsigned long long)head);
                return 81;
            }
            if (nc_bcast_last_mismatch(t, &sent, &mark, &head, NULL)) return 82; /* once */
        } else if (rc != NUMACOLL_OK || mm) {
            fprintf(stderr, "rank %d case %d: rc %s, mismatch %d\n", me, c,
                    numacoll_status_name(rc), mm);
            return 83;
        }
        if (me != 0 && memcmp(buf, &val, 8) != 0) return 84; /* min(8, mine) bytes */
        uint32_t after = me == 0 ? 0xC0FFEEu + (uint32_t)c : 0;
        if (numacoll_bcast(t, &after, sizeof after, 0) != NUMACOLL_OK ||
            after != 0xC0FFEEu + (uint32_t)c)
            return 85;
    }
    nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
    o.mark = 1;
    /* a marked message must be inline: an error on every member, before any op */
    if (nc_bcast_run_opts(t, buf, sizeof buf, 0, &o) != NUMACOLL_ERR_ARG) return 86;
    return 0;
}

void test_marked(void **state)
{
    (void)state;
    clear_env();
    env_reload();
    run_members(2, mark_worker, NULL, 60);
    run_members(3, mark_worker, NULL, 60);
}

/* Members that pass different sizes (an erroneous program) get an error, not a hang or a
 * later message: a receiver follows the root's path and ops whatever its own size chose
 * (inline, queue, CMA under test_bcast_cma), keeps what fits its buffer, and the next
 * broadcasts work. The default call (with its hot path) at P = 2, 3 and oversubscribed 5;
 * every tree, the relay (a fake NUMA split) and the copy modes at P = 4. */
void test_size_mismatch(void **state)
{
    (void)state;
    clear_env();
    env_reload();
    mm_args_t a = {.iters = 300, .seed = 901};
    run_members(2, mm_worker, &a, 120);
    a.seed = 902, a.iters = 150;
    run_members(3, mm_worker, &a, 120);
    a.seed = 903, a.iters = 60;
    run_members(5, mm_worker, &a, 120);
    a.seed = 904, a.iters = 150, a.vary_tree = 1;
    run_members(4, mm_worker, &a, 120);
}

/* A receiver that passes another receiver as the root (an erroneous program) gets an
 * error naming both, not a hang or another rank's data: the root's notifications carry
 * the root, so it follows the true root's tree and data. Sizes differ in other calls. */
void test_root_mismatch(void **state)
{
    (void)state;
    clear_env();
    env_reload();
    mm_args_t a = {.iters = 150, .seed = 911, .roots = 1};
    run_members(3, mm_worker, &a, 120);
    a.seed = 912, a.iters = 60;
    run_members(5, mm_worker, &a, 120);
    a.seed = 913, a.iters = 150, a.vary_tree = 1;
    run_members(4, mm_worker, &a, 120);
}
