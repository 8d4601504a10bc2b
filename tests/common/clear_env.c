/* nc_test_clear_env (forkrun.h), alone in its object file: a test that uses no team
 * (test_config_partial) calls it without linking the fork harness, and with it the teams. */
#define _GNU_SOURCE 1
#include "forkrun.h"

#include <stdlib.h>
#include <string.h>

void nc_test_clear_env(void)
{
    extern char **environ;
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++)
            if (strncmp(*e, "NUMACOLL_", 9) == 0) {
                char name[128];
                size_t n = (size_t)(strchr(*e, '=') - *e);
                memcpy(name, *e, n);
                name[n] = 0;
                unsetenv(name);
                again = 1;
                break;
            }
    }
}
