/* Helpers shared by the key-value store tests: fork a child running a function, reap it
 * with a deadline, shared scratch memory. */
#ifndef TEST_KVDB_COMMON_H
#define TEST_KVDB_COMMON_H

#include "kvdb/kvdb_internal.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int (*kvt_child_fn)(void *arg);

/* Fork a child running @p fn; its exit status is fn's result. A child that crashes dies
 * of the signal (kvt_reap: 128 + signal) instead of returning into cmocka's handler, which
 * would run the rest of the tests in the child. */
static inline pid_t kvt_spawn(kvt_child_fn fn, void *arg)
{
    fflush(stdout);
    fflush(stderr);
    pid_t p = fork();
    if (p == 0) {
        const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            signal(sigs[i], SIG_DFL);
        _exit(fn(arg));
    }
    return p;
}

/* Wait for @p pid up to @p timeout_s; returns its exit status, 128+signal, or -1 on timeout
 * (the child is then killed). */
static inline int kvt_reap(pid_t pid, double timeout_s)
{
    uint64_t end = nc_now_ns() + (uint64_t)(timeout_s * 1e9);
    int st;
    while (1) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0) return -2;
        if (nc_now_ns() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* Zeroed MAP_SHARED|MAP_ANONYMOUS memory (inherited by children; no file anywhere). */
static inline void *kvt_shared(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static inline void kvt_clear_env(void)
{
    nc_test_clear_env();
    numacoll_config_reload();
}

#endif
