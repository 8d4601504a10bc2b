/* Command-line numbers for the numacoll tools (numacoll-bench, numacoll-bench-mpi-*,
 * numacoll-kvbench): a value is taken whole or refused with a message that names the tool,
 * the option, the value and what is allowed. Header-only: the tools are separate programs. */
#ifndef NC_CLI_PARSE_H
#define NC_CLI_PARSE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* @p s (option @p opt of @p tool, e.g. "numacoll-bench bcast") as a whole decimal integer
 * in lo..hi into *out: 0, or -1 after the error on stderr. */
static inline int nc_cli_long(const char *tool, const char *opt, const char *s, long lo, long hi,
                              long *out)
{
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "%s: %s '%s' is not valid; allowed: an integer in %ld..%ld\n", tool, opt,
                s ? s : "(missing)", lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

#endif
