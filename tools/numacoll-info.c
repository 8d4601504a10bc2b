/*
 * numacoll-info: the configuration table with current values, and the registered
 * algorithms. Exit status 1 if the environment holds an invalid NUMACOLL_* value.
 *
 *   numacoll-info [--config | --algorithms | --check] [--json] | --version | --help
 */
#include <numacoll/numacoll.h>

#include <stdio.h>
#include <string.h>

#ifndef NC_VERSION
#define NC_VERSION "unknown"
#endif

extern char **environ;

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: numacoll-info [--config | --algorithms | --check] [--json]\n"
            "Print numacoll's configuration table (every NUMACOLL_* environment variable with\n"
            "its current value, default, allowed values and meaning) and the registered\n"
            "barrier algorithms; without an option, both.\n"
            "  --config      only the NUMACOLL_* variables\n"
            "  --algorithms  only the registered barrier algorithms (names for NUMACOLL_BARRIER)\n"
            "  --check       only validate the environment: one line 'configuration OK: ...'\n"
            "                on stdout, or the error on stderr and exit status 1\n"
            "  --json        the same as one JSON object on stdout\n"
            "  --version     print the version and exit\n"
            "  -h, --help    print this help and exit\n"
            "Each variable's meaning line names its unit (NUMACOLL_TIMEOUT: seconds).\n"
            "Exit status: 0 valid, 1 an invalid or unknown NUMACOLL_* variable is set, 2 bad\n"
            "usage.\n");
}

/* NUMACOLL_* variables set in the environment */
static int count_set(void)
{
    int n = 0;
    for (char **e = environ; e && *e; e++)
        n += strncmp(*e, "NUMACOLL_", 9) == 0;
    return n;
}

int main(int argc, char **argv)
{
    int json = 0, mode = 0; /* 0 all, 1 config, 2 algorithms, 3 check */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--config"))
            mode = 1;
        else if (!strcmp(argv[i], "--algorithms"))
            mode = 2;
        else if (!strcmp(argv[i], "--check"))
            mode = 3;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("numacoll-info (numacoll) %s\n", NC_VERSION);
            return 0;
        } else {
            fprintf(stderr, "numacoll-info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    int bad = numacoll_config_check();
    if (bad) fprintf(stderr, "numacoll-info: invalid configuration: %s\n", numacoll_last_error());
    if (mode == 3) {
        int n = count_set();
        if (json)
            printf("{\"version\": \"%s\", \"valid\": %s, \"variables_set\": %d}\n", NC_VERSION,
                   bad ? "false" : "true", n);
        else if (!bad)
            printf("numacoll-info: configuration OK: %d NUMACOLL_* variable%s set, all valid\n", n,
                   n == 1 ? "" : "s");
        return bad ? 1 : 0;
    }

    int n, na;
    const numacoll_config_row_t *rows = numacoll_config_table(&n);
    const numacoll_algorithm_info_t *algs = numacoll_barrier_algorithms(&na);
    if (json) {
        printf("{\"version\": \"%d.%d.%d\", \"config\": [", NUMACOLL_VERSION_MAJOR,
               NUMACOLL_VERSION_MINOR, NUMACOLL_VERSION_PATCH);
        for (int i = 0; i < n && mode != 2; i++) {
            printf("%s{\"name\": ", i ? ", " : "");
            json_str(rows[i].name);
            printf(", \"type\": ");
            json_str(rows[i].type);
            printf(", \"value\": ");
            json_str(numacoll_config_value(rows[i].name));
            printf(", \"default\": ");
            json_str(rows[i].defval);
            printf(", \"allowed\": ");
            json_str(rows[i].allowed);
            printf(", \"doc\": ");
            json_str(rows[i].doc);
            printf("}");
        }
        printf("], \"barrier_algorithms\": [");
        for (int i = 0; i < na && mode != 1; i++) {
            printf("%s{\"name\": ", i ? ", " : "");
            json_str(algs[i].name);
            printf(", \"description\": ");
            json_str(algs[i].description);
            printf("}");
        }
        printf("]}\n");
        return bad ? 1 : 0;
    }
    if (mode != 2) {
        printf("numacoll %d.%d.%d configuration (environment variables)\n\n",
               NUMACOLL_VERSION_MAJOR, NUMACOLL_VERSION_MINOR, NUMACOLL_VERSION_PATCH);
        printf("%-32s %-7s %-14s %-14s %s\n", "VARIABLE", "TYPE", "VALUE", "DEFAULT", "ALLOWED");
        for (int i = 0; i < n; i++) {
            const char *v = numacoll_config_value(rows[i].name);
            printf("%-32s %-7s %-14s %-14s %s\n", rows[i].name, rows[i].type, *v ? v : "\"\"",
                   *rows[i].defval ? rows[i].defval : "\"\"", rows[i].allowed);
            printf("    %s\n", rows[i].doc);
        }
    }
    if (mode != 1) {
        printf("\nbarrier algorithms (NUMACOLL_BARRIER)\n");
        for (int i = 0; i < na; i++)
            printf("  %-28s %s\n", algs[i].name, algs[i].description);
    }
    return bad ? 1 : 0;
}
