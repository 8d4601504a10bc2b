/* Error messages (thread-local) and verbose logging. */
#include "nc_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Thread_local char last_error[1024];

const char *numacoll_last_error(void)
{
    return last_error;
}

const char *numacoll_status_name(int status)
{
    switch (status) {
    case NUMACOLL_OK:
        return "NUMACOLL_OK";
    case NUMACOLL_ERR_ARG:
        return "NUMACOLL_ERR_ARG";
    case NUMACOLL_ERR_NOMEM:
        return "NUMACOLL_ERR_NOMEM";
    case NUMACOLL_ERR_SYS:
        return "NUMACOLL_ERR_SYS";
    case NUMACOLL_ERR_CONFIG:
        return "NUMACOLL_ERR_CONFIG";
    case NUMACOLL_ERR_TIMEOUT:
        return "NUMACOLL_ERR_TIMEOUT";
    case NUMACOLL_ERR_PEER_DEAD:
        return "NUMACOLL_ERR_PEER_DEAD";
    case NUMACOLL_ERR_OOB:
        return "NUMACOLL_ERR_OOB";
    case NUMACOLL_ERR_UNSUPPORTED:
        return "NUMACOLL_ERR_UNSUPPORTED";
    case NUMACOLL_ERR_NOT_FOUND:
        return "NUMACOLL_ERR_NOT_FOUND";
    case NUMACOLL_ERR_FULL:
        return "NUMACOLL_ERR_FULL";
    case NUMACOLL_ERR_TOOBIG:
        return "NUMACOLL_ERR_TOOBIG";
    case NUMACOLL_ERR_STATE:
        return "NUMACOLL_ERR_STATE";
    default:
        return "NUMACOLL_ERR_UNKNOWN";
    }
}

int nc_error(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

int nc_error_wrap(int status, const char *fmt, ...)
{
    char prefix[512], old[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, last_error, sizeof old);
    snprintf(last_error, sizeof last_error, "%s: %s", prefix, old);
    return status;
}

int nc_oob_allgather(numacoll_oob_allgather_fn allgather, const void *sendbuf, void *recvbuf,
                     size_t size, void *ctx, const char *what)
{
    char before[sizeof last_error];
    memcpy(before, last_error, sizeof before);
    last_error[0] = 0; /* so that a message the callback records can be told apart */
    if (allgather(sendbuf, recvbuf, size, ctx) == 0) {
        memcpy(last_error, before, sizeof last_error);
        return NUMACOLL_OK;
    }
    if (last_error[0]) /* the callback's own reason, e.g. the fork bootstrap's timeout */
        return nc_error_wrap(NUMACOLL_ERR_OOB, "the OOB allgather failed %s", what);
    return nc_error(NUMACOLL_ERR_OOB, "the OOB allgather callback failed %s (it gave no reason)",
                    what);
}

int nc_verbose(void)
{
    return (int)nc_cfg_int(NC_CFG_VERBOSE);
}

void nc_log(int level, int rank, int size, const char *fmt, ...)
{
    if (nc_verbose() < level) return;
    char buf[2048];
    int n;
    if (rank >= 0)
        n = snprintf(buf, sizeof buf, "numacoll[%d/%d pid %d]: ", rank, size, (int)getpid());
    else
        n = snprintf(buf, sizeof buf, "numacoll[pid %d]: ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = strlen(buf);
    if (len + 1 < sizeof buf && (len == 0 || buf[len - 1] != '\n')) {
        buf[len++] = '\n';
        buf[len] = 0;
    }
    /* one write() per line so that lines of different processes do not interleave */
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
}
