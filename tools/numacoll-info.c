/*
 * numacoll-info: the configuration table with current values, and the registered
 * algorithms. Exit status 1 if the environment holds an invalid NUMACOLL_* value.
 *
 *   numacoll-info [--config | --algorithms | --check] [--json | --parsable] | --version | --help
 *   numacoll-info --markdown
 *   numacoll-info --explain [--np N] [--bytes M] [--synthetic DESC] [--map-by M]
 *                 [--json | --parsable]
 */
#include "core/nc_internal.h" /* first: _GNU_SOURCE */
#include "coll/barrier/barrier.h"
#include "coll/bcast/plan.h"
#include "topo/topo.h"
#include "cli_parse.h"
#include "info/info.h"

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <glob.h>
#include <hwloc.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NC_VERSION
#define NC_VERSION "unknown"
#endif

extern char **environ;

/* every layer's configuration rows (topo.h, barrier.h and bcast.h link their own), so that
 * the table is whole even in this program, linked with libnumacoll.a */
NC_CFG_LINK(kvdb);
NC_CFG_LINK(mpi);
NC_CFG_LINK(reduce);
NC_CFG_LINK(move);

void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

static void usage_explain(FILE *f)
{
    fprintf(f,
            "\n"
            "       numacoll-info --explain [--np N] [--bytes M] [--synthetic DESC]\n"
            "                     [--map-by core|numa|socket] [--json | --parsable]\n"
            "Explain what numacoll decides for a team of N processes, computed by the library's\n"
            "own decision code: the barrier 'auto' picks and why (with the LogP estimates), the\n"
            "topology groups, the broadcast's tree, queue parameters and, for M bytes (or a\n"
            "table of sizes), its path, fragments and copy mode, and the MPI preload libraries.\n"
            "Choices made at run time from measurements are named as such, with the static\n"
            "default shown. The current NUMACOLL_* environment applies.\n"
            "  --explain         this report (implied by the options below)\n"
            "  --np N            team size, 1..1048576 (default: one per core)\n"
            "  --bytes M         one message size in detail, 0..2^62, K/M/G suffixes allowed\n"
            "  --synthetic DESC  an hwloc synthetic machine instead of this one, e.g.\n"
            "                    \"pack:2 numa:2 l3:1 core:8 pu:1\" (default:\n"
            "                    NUMACOLL_TOPO_SYNTHETIC)\n"
            "  --map-by M        planned placement: core, numa or socket (default:\n"
            "                    NUMACOLL_TOPO_MAP_BY), as numacoll-topo plans it\n"
            "  --parsable        key:value lines, one fact each (also for the table above)\n"
            "  --json            the same facts as one JSON object\n");
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: numacoll-info [--config | --algorithms | --check] [--json]\n"
            "       numacoll-info --markdown\n"
            "       numacoll-info --mpis [--json]\n"
            "       numacoll-info --mpi-identity MPI-LIBRARY\n"
            "       numacoll-info --explain ... | --version | --help\n"
            "Print numacoll's configuration table (every NUMACOLL_* environment variable with\n"
            "its current value, default, allowed values and meaning) and the registered\n"
            "barrier algorithms; without an option, both.\n"
            "  --config      only the NUMACOLL_* variables\n"
            "  --algorithms  only the registered barrier algorithms (names for NUMACOLL_BARRIER)\n"
            "  --check       only validate the environment: one line 'configuration OK: ...'\n"
            "                on stdout, or the error on stderr and exit status 1\n"
            "  --json        the same as one JSON object on stdout\n"
            "  --markdown    the table without values (name, type, default, allowed, meaning)\n"
            "                as Markdown, whatever the environment holds: docs/tuning.md\n"
            "  --mpis        the MPIs numacoll was built for (family, version, C wrapper,\n"
            "                launcher, Fortran wrapper, preload), from share/numacoll/mpis.tsv\n"
            "  --mpi-identity MPI-LIBRARY\n"
            "                what an MPI library says it is: the first line of its\n"
            "                MPI_Get_library_version (numacoll-run matches preloads with it)\n"
            "  --version     print the version and exit\n"
            "  -h, --help    print this help and exit\n"
            "Each variable's meaning line names its unit (NUMACOLL_TIMEOUT: seconds).\n"
            "Exit status: 0 valid, 1 an invalid or unknown NUMACOLL_* variable is set, 2 bad\n"
            "usage.\n");
    usage_explain(f);
}

/* NUMACOLL_* variables set in the environment */
static int count_set(void)
{
    int n = 0;
    for (char **e = environ; e && *e; e++)
        n += strncmp(*e, "NUMACOLL_", 9) == 0;
    return n;
}

/* ---- human output: lines of at most INFO_WIDTH columns ------------------------------------ */

/* Print @p text wrapped at INFO_WIDTH columns, the first line indented by @p indent spaces
 * and the others by @p hang: each line ends at the last break that fits (before a space,
 * after a '|' or ','), else is cut at the width; a newline in the text starts a new (hanging)
 * line, a newline at a line's start prints an empty one. */
void wrap_out(const char *text, int indent, int hang)
{
    const char *p = text;
    int first = 1;
    while (*p) {
        if (*p == '\n') { /* an empty line (a leading or doubled newline) */
            putchar('\n');
            p++;
            continue;
        }
        int ind = first ? indent : hang;
        size_t room = INFO_WIDTH > ind + 20 ? (size_t)(INFO_WIDTH - ind) : 20;
        if (!first)
            while (*p == ' ')
                p++;
        const char *nl = strchr(p, '\n');
        size_t lim = nl ? (size_t)(nl - p) : strlen(p), take = lim;
        if (lim > room) { /* the last break that fits: before a space, after '|' or ',' */
            take = 0;
            for (size_t i = room; i > 0 && !take; i--)
                if (p[i] == ' ' || p[i - 1] == '|' || p[i - 1] == ',') take = i;
            if (!take) take = room;
        }
        size_t show = take;
        while (show > 0 && p[show - 1] == ' ')
            show--;
        printf("%*s%.*s\n", ind, "", (int)show, p);
        p += take;
        if (take == lim && *p == '\n') p++;
        first = 0;
    }
}

/* The configuration table, each row's help text wrapped (up to NC_CFG_DOC_MAX characters) */
static void print_config_human(const numacoll_config_row_t *rows, int n)
{
    char line[1024];
    printf("%-32s %-7s %-14s %-14s %s\n", "VARIABLE", "TYPE", "VALUE", "DEFAULT", "ALLOWED");
    for (int i = 0; i < n; i++) {
        const char *v = numacoll_config_value(rows[i].name);
        snprintf(line, sizeof line, "%-32s %-7s %-14s %-14s %s", rows[i].name, rows[i].type,
                 *v ? v : "\"\"", *rows[i].defval ? rows[i].defval : "\"\"", rows[i].allowed);
        if (strlen(line) <= INFO_WIDTH) {
            printf("%s\n", line);
        } else { /* the allowed values on lines of their own */
            snprintf(line, sizeof line, "%-32s %-7s %-14s %s", rows[i].name, rows[i].type,
                     *v ? v : "\"\"", *rows[i].defval ? rows[i].defval : "\"\"");
            wrap_out(line, 0, 4);
            snprintf(line, sizeof line, "allowed: %s", rows[i].allowed);
            wrap_out(line, 4, 13);
        }
        wrap_out(rows[i].doc, 4, 4);
    }
}

static void print_algorithms_human(const numacoll_algorithm_info_t *algs, int na)
{
    char line[1024];
    printf("\nbarrier algorithms (NUMACOLL_BARRIER)\n");
    for (int i = 0; i < na; i++) {
        snprintf(line, sizeof line, "%-28s %s", algs[i].name, algs[i].description);
        wrap_out(line, 2, 31);
    }
}

/* ---- --markdown: the table as docs/tuning.md ---------------------------------------------- */

/* @p s as the text of a Markdown table cell: the help text's `code` spans kept (their '|'
 * escaped), NUMACOLL_* names made code spans, and elsewhere the characters Markdown would
 * take as markup escaped ('*', '|', '\', '_' at a word's edge, '<', '>'). */
static void md_text(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (*p == '`') { /* a code span, up to its closing backtick */
            const char *e = strchr(p + 1, '`');
            if (!e) e = p + strlen(p) - 1;
            for (; p <= e; p++)
                printf("%s%c", *p == '|' ? "\\" : "", *p);
            p--;
            continue;
        }
        if (!strncmp(p, "NUMACOLL_", 9) && (p == s || !isalnum((unsigned char)p[-1]))) {
            size_t len = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
            printf("`%.*s`", (int)len, p);
            p += len - 1;
            continue;
        }
        int word_edge = *p == '_' && (p == s || !isalnum((unsigned char)p[-1]) ||
                                      !isalnum((unsigned char)p[1]));
        if (*p == '<')
            fputs("&lt;", stdout);
        else if (*p == '>')
            fputs("&gt;", stdout);
        else if (*p == '*' || *p == '|' || *p == '\\' || word_edge)
            printf("\\%c", *p);
        else
            putchar(*p);
    }
}

/* The allowed values: each word or range of "a|b..c" as code; a string's description as text */
static void md_allowed(const numacoll_config_row_t *r)
{
    if (!strcmp(r->type, "string")) {
        md_text(r->allowed);
        return;
    }
    for (const char *p = r->allowed; *p;) {
        size_t len = strcspn(p, "|");
        printf("%s`%.*s`", p == r->allowed ? "" : ", ", (int)len, p);
        p += len;
        if (*p) p++;
    }
}

/* numacoll-info --markdown: docs/tuning.md, the table without values (they are this
 * environment's), so that the committed file can be compared with it */
static void print_config_markdown(const numacoll_config_row_t *rows, int n)
{
    printf("# The NUMACOLL_* variables\n\n"
           "<!-- Generated by `numacoll-info --markdown` from the configuration rows "
           "(src/*/config_rows.c); do not edit. After changing a row, run "
           "`build/bin/numacoll-info --markdown > docs/tuning.md` (the test "
           "info_markdown_docs compares the two). -->\n\n"
           "Every tunable of numacoll is a `NUMACOLL_*` environment variable, listed here in "
           "the order\n`numacoll-info` prints them. A value that is not allowed, or an unknown "
           "`NUMACOLL_*` name, is an\nerror that names the variable and the allowed values. "
           "A `bool` takes 0 or 1 (also no/yes,\nfalse/true, off/on); a `size` a byte count, "
           "optionally with K, M or G (powers of 1024);\na `list` a comma-separated subset of "
           "the allowed values, without repeats. Allowed `0`, `a..b`: 0\nor a value from a to b. "
           "The measurements behind the defaults: [tuning-notes.md](tuning-notes.md).\n\n"
           "| variable | type | default | allowed | meaning |\n"
           "|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        printf("| `%s` | %s | ", rows[i].name, rows[i].type);
        if (rows[i].defval[0])
            printf("`%s`", rows[i].defval);
        else
            printf("(empty)");
        printf(" | ");
        md_allowed(&rows[i]);
        printf(" | ");
        md_text(rows[i].doc);
        printf(" |\n");
    }
}

/* ---- --parsable: one fact a line, key:value ----------------------------------------------- */

void parsable_line(const char *key, const char *val)
{
    printf("%s:", key);
    for (const char *s = val; *s; s++) /* one line per fact */
        putchar(*s == '\n' ? ' ' : *s);
    putchar('\n');
}

static void print_config_parsable(const numacoll_config_row_t *rows, int n,
                                  const numacoll_algorithm_info_t *algs, int na, int mode)
{
    char key[160];
    printf("version:%d.%d.%d\n", NUMACOLL_VERSION_MAJOR, NUMACOLL_VERSION_MINOR,
           NUMACOLL_VERSION_PATCH);
    for (int i = 0; i < n && mode != 2; i++) {
        snprintf(key, sizeof key, "config.%s.type", rows[i].name);
        parsable_line(key, rows[i].type);
        snprintf(key, sizeof key, "config.%s.value", rows[i].name);
        parsable_line(key, numacoll_config_value(rows[i].name));
        snprintf(key, sizeof key, "config.%s.default", rows[i].name);
        parsable_line(key, rows[i].defval);
        snprintf(key, sizeof key, "config.%s.allowed", rows[i].name);
        parsable_line(key, rows[i].allowed);
        snprintf(key, sizeof key, "config.%s.doc", rows[i].name);
        parsable_line(key, rows[i].doc);
    }
    for (int i = 0; i < na && mode != 1; i++) {
        snprintf(key, sizeof key, "barrier_algorithm.%s.description", algs[i].name);
        parsable_line(key, algs[i].description);
    }
}

int main(int argc, char **argv)
{
    int json = 0, mode = 0; /* 0 all, 1 config, 2 algorithms, 3 check, 4 markdown */
    int parsable = 0, mpis = 0, r;
    explain_args_t ex = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--config"))
            mode = 1;
        else if (!strcmp(argv[i], "--algorithms"))
            mode = 2;
        else if (!strcmp(argv[i], "--check"))
            mode = 3;
        else if (!strcmp(argv[i], "--markdown"))
            mode = 4;
        else if (!strcmp(argv[i], "--mpis"))
            mpis = 1;
        else if (!strcmp(argv[i], "--mpi-identity")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "numacoll-info: --mpi-identity needs the path of an MPI library\n");
                return 2;
            }
            return info_mpi_identity(argv[i + 1]);
        }
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("numacoll-info (numacoll) %s\n", NC_VERSION);
            return 0;
        } else if (!strcmp(argv[i], "--parsable")) {
            parsable = 1;
        } else if ((r = explain_arg(argc, argv, &i, &ex)) != 0) {
            if (r < 0) return 2;
        } else {
            fprintf(stderr,
                    "numacoll-info: unknown argument '%s'; allowed: --config, --algorithms, "
                    "--check, --json, --markdown, --mpis, --mpi-identity, --explain, "
                    "--version, --help (numacoll-info --help explains them)\n",
                    argv[i]);
            return 2;
        }
    }
    if (mpis) return info_mpis(json);
    if ((r = explain_dispatch(&ex, mode, json, parsable)) >= 0) return r;
    int n, na;
    const numacoll_config_row_t *rows = numacoll_config_table(&n);
    if (n != NC_CFG_COUNT) { /* a layer's rows not linked in: see NC_CFG_LINK above */
        fprintf(stderr, "numacoll-info: internal error: the table has %d of the %d rows\n", n,
                NC_CFG_COUNT);
        return 1;
    }
    if (mode == 4) { /* the table alone, the same whatever the environment holds */
        if (json || parsable) {
            fprintf(stderr, "numacoll-info: --markdown goes alone; allowed with it: nothing\n");
            return 2;
        }
        print_config_markdown(rows, n);
        return 0;
    }
    int bad = numacoll_config_check();
    if (bad) fprintf(stderr, "numacoll-info: invalid configuration: %s\n", numacoll_last_error());
    if (mode == 3) {
        int nset = count_set();
        if (json)
            printf("{\"version\": \"%s\", \"valid\": %s, \"variables_set\": %d}\n", NC_VERSION,
                   bad ? "false" : "true", nset);
        else if (!bad)
            printf("numacoll-info: configuration OK: %d NUMACOLL_* variable%s set, all valid\n",
                   nset, nset == 1 ? "" : "s");
        return bad ? 1 : 0;
    }

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
    if (parsable) {
        print_config_parsable(rows, n, algs, na, mode);
        return bad ? 1 : 0;
    }
    if (mode != 2) {
        printf("numacoll %d.%d.%d configuration (environment variables)\n\n",
               NUMACOLL_VERSION_MAJOR, NUMACOLL_VERSION_MINOR, NUMACOLL_VERSION_PATCH);
        print_config_human(rows, n);
    }
    if (mode != 1) print_algorithms_human(algs, na);
    return bad ? 1 : 0;
}
