/*
 * numacoll-info: the configuration table with current values, and the registered
 * algorithms. Exit status 1 if the environment holds an invalid NUMACOLL_* value.
 *
 *   numacoll-info [--config | --algorithms | --check] [--json]
 */
#include <numacoll/numacoll.h>

#include <stdio.h>
#include <string.h>

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
            "  --config      the NUMACOLL_* variables: value, default, allowed, meaning (default)\n"
            "  --algorithms  registered barrier algorithms\n"
            "  --check       validate the environment only (exit 1 if invalid)\n"
            "  --json        machine-readable output\n");
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
        } else {
            fprintf(stderr, "numacoll-info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    int bad = numacoll_config_check();
    if (bad) fprintf(stderr, "numacoll-info: invalid configuration: %s\n", numacoll_last_error());
    if (mode == 3) return bad ? 1 : 0;

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
