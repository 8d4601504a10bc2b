/*
 * The configuration table's machinery: parsing, validation, error messages, the getters
 * and the public table that `numacoll-info` prints. The rows are not here: each layer
 * defines its own in its config_rows.c and registers them at load time (config.h says
 * which file holds which rows); this file knows the variables' names only (config.h's
 * NC_CFG_VARIABLES), none of the layers above.
 */
#include "nc_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

NC_CFG_LINK(core); /* the core rows: in every program that has this file */

static const char *const names[NC_CFG_COUNT] = {
#define NC_CFG_NAME_(name) "NUMACOLL_" #name,
    NC_CFG_VARIABLES(NC_CFG_NAME_)
#undef NC_CFG_NAME_
};

static const nc_cfg_def_t *table[NC_CFG_COUNT]; /* by id; NULL: not linked in */
static const char *table_layer[NC_CFG_COUNT];   /* the rows file that registered it */

typedef struct cfg_val {
    int set;   /* present in the environment */
    int valid; /* parsed and within range */
    const char *text;
    long i;
    double d;
    size_t sz;
} cfg_val_t;

static cfg_val_t values[NC_CFG_COUNT];
static numacoll_config_row_t public_rows[NC_CFG_COUNT]; /* the linked rows, in id order */
static int public_count;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded; /* under lock: the environment has been read */
static char first_error[2048]; /* every problem found, "; "-separated */
static int load_status;

static const char *type_name(nc_cfg_type_t t)
{
    switch (t) {
    case NC_CFG_TYPE_BOOL:
        return "bool";
    case NC_CFG_TYPE_INT:
        return "int";
    case NC_CFG_TYPE_SIZE:
        return "size";
    case NC_CFG_TYPE_DOUBLE:
        return "double";
    case NC_CFG_TYPE_ENUM:
        return "enum";
    case NC_CFG_TYPE_LIST:
        return "list";
    default:
        return "string";
    }
}

static const char *allowed_of(const nc_cfg_def_t *d)
{
    if (d->allowed_fn) return d->allowed_fn();
    return d->allowed ? d->allowed : "";
}

/* Is @p item (len bytes) one of the '|'-separated words of @p allowed? */
static int word_in(const char *allowed, const char *item, size_t len)
{
    const char *p = allowed;
    while (*p) {
        const char *e = strchr(p, '|');
        size_t wl = e ? (size_t)(e - p) : strlen(p);
        if (wl == len && strncmp(p, item, len) == 0) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static void allowed_pretty(const char *allowed, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = allowed; *p && o + 3 < n; p++) {
        if (*p == '|') {
            out[o++] = ',';
            out[o++] = ' ';
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

static int parse_range(const char *allowed, double *lo, double *hi)
{
    const char *dots = strstr(allowed, "..");
    if (!dots) return 0;
    char *end;
    *lo = strtod(allowed, &end);
    if (*end == 'K' || *end == 'M' || *end == 'G') /* SIZE ranges such as "64K..256M" */
        *lo *= *end == 'K' ? 1024.0 : *end == 'M' ? 1048576.0 : 1073741824.0;
    *hi = strtod(dots + 2, &end);
    if (*end == 'K' || *end == 'M' || *end == 'G')
        *hi *= *end == 'K' ? 1024.0 : *end == 'M' ? 1048576.0 : 1073741824.0;
    return 1;
}

/* The lower bound of a range "A..B" as written (A), in @p out. */
static const char *range_lo(const char *range, char *out, size_t n)
{
    const char *dots = strstr(range, "..");
    size_t len = dots ? (size_t)(dots - range) : strlen(range);
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), range);
    return out;
}

static int parse_bool(const char *v, long *out)
{
    static const char *t[] = {"1", "yes", "true", "on"};
    static const char *f[] = {"0", "no", "false", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, t[i]) == 0) return *out = 1, 1;
        if (strcasecmp(v, f[i]) == 0) return *out = 0, 1;
    }
    return 0;
}

static int parse_size(const char *v, size_t *out)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)v[0])) return 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno) return 0;
    unsigned long long mul = 1;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K':
            mul = 1ull << 10;
            break;
        case 'M':
            mul = 1ull << 20;
            break;
        case 'G':
            mul = 1ull << 30;
            break;
        default:
            return 0;
        }
        end++;
        if (toupper((unsigned char)*end) == 'I') end++;
        if (toupper((unsigned char)*end) == 'B') end++;
        if (*end) return 0;
    }
    if (x > (~0ull) / mul) return 0;
    *out = (size_t)(x * mul);
    return 1;
}

/* Validate @p v for row @p d; fill @p val; on error write a message to @p err. */
static int parse_value(const nc_cfg_def_t *d, const char *v, cfg_val_t *val, char *err,
                       size_t errlen)
{
    char pretty[512];
    const char *name = names[d->id];
    const char *allowed = allowed_of(d);
    allowed_pretty(allowed, pretty, sizeof pretty);
    val->text = v;
    switch (d->type) {
    case NC_CFG_TYPE_BOOL:
        if (!parse_bool(v, &val->i)) {
            snprintf(err, errlen,
                     "%s='%s' is not valid; allowed: 0, 1 (or no/yes, false/true, off/on)", name,
                     v);
            return NUMACOLL_ERR_CONFIG;
        }
        return NUMACOLL_OK;
    case NC_CFG_TYPE_INT: {
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        double lo, hi;
        /* strtol also skips leading blanks and takes a '+', which no other type accepts */
        if (errno || end == v || *end || isspace((unsigned char)v[0]) || v[0] == '+' ||
            (parse_range(allowed, &lo, &hi) && (x < lo || x > hi))) {
            snprintf(err, errlen, "%s='%s' is not valid; allowed: an integer in %s", name, v,
                     allowed);
            return NUMACOLL_ERR_CONFIG;
        }
        val->i = x;
        return NUMACOLL_OK;
    }
    case NC_CFG_TYPE_SIZE: {
        double lo, hi;
        size_t x;
        /* "0|A..B": 0 (auto) or a size in A..B */
        int zero_ok = strncmp(allowed, "0|", 2) == 0;
        if (!parse_size(v, &x) ||
            (!(zero_ok && x == 0) && parse_range(allowed + (zero_ok ? 2 : 0), &lo, &hi) &&
             ((double)x < lo || (double)x > hi))) {
            snprintf(err, errlen,
                     "%s='%s' is not valid; allowed: a byte count in %s (suffixes K, M, G)", name,
                     v, allowed);
            return NUMACOLL_ERR_CONFIG;
        }
        val->sz = x;
        return NUMACOLL_OK;
    }
    case NC_CFG_TYPE_DOUBLE: {
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        double lo, hi;
        /* "0|A..B": 0 (off) or a number in A..B, nothing in between (NUMACOLL_TIMEOUT: a
         * value below 1 ns would round to 0 ns, which means no timeout) */
        int zero_ok = strncmp(allowed, "0|", 2) == 0;
        const char *range = allowed + (zero_ok ? 2 : 0);
        /* decimal only: strtod also reads hexadecimal ("0x10"), which no help text offers */
        int parsed = !errno && end != v && !*end && isfinite(x) && !strpbrk(v, "xX") &&
                     !isspace((unsigned char)v[0]) && v[0] != '+'; /* as for the integers */
        if (parsed && zero_ok && x != 0 && parse_range(range, &lo, &hi) && x > 0 && x < lo) {
            snprintf(err, errlen,
                     "%s='%s' is not valid: it would round to 0, which turns %s off; allowed: "
                     "0, or a number in %s (the smallest non-zero value is %s)",
                     name, v, name, range, range_lo(range, pretty, sizeof pretty));
            return NUMACOLL_ERR_CONFIG;
        }
        if (!parsed ||
            (!(zero_ok && x == 0) && parse_range(range, &lo, &hi) && (x < lo || x > hi))) {
            if (zero_ok)
                snprintf(err, errlen, "%s='%s' is not valid; allowed: 0, or a number in %s", name,
                         v, range);
            else
                snprintf(err, errlen, "%s='%s' is not valid; allowed: a number in %s", name, v,
                         allowed);
            return NUMACOLL_ERR_CONFIG;
        }
        val->d = x;
        return NUMACOLL_OK;
    }
    case NC_CFG_TYPE_ENUM:
        if (!word_in(allowed, v, strlen(v))) {
            snprintf(err, errlen, "%s='%s' is not valid; allowed: %s", name, v, pretty);
            return NUMACOLL_ERR_CONFIG;
        }
        return NUMACOLL_OK;
    case NC_CFG_TYPE_LIST: {
        const char *p = v;
        if (!*p) {
            snprintf(err, errlen, "%s is empty; allowed: a comma-separated list of %s", name,
                     pretty);
            return NUMACOLL_ERR_CONFIG;
        }
        while (1) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            if (!word_in(allowed, p, len)) {
                snprintf(err, errlen,
                         "%s='%s' is not valid: item '%.*s' unknown; allowed: a comma-separated "
                         "list of %s",
                         name, v, (int)len, p, pretty);
                return NUMACOLL_ERR_CONFIG;
            }
            /* no repeats */
            for (const char *q = v; q < p;) {
                const char *qe = strchr(q, ',');
                size_t ql = (size_t)(qe - q);
                if (ql == len && strncmp(q, p, len) == 0) {
                    snprintf(err, errlen, "%s='%s' is not valid: item '%.*s' repeated", name, v,
                             (int)len, p);
                    return NUMACOLL_ERR_CONFIG;
                }
                q = qe + 1;
            }
            if (!e) break;
            p = e + 1;
        }
        return NUMACOLL_OK;
    }
    default:
        return NUMACOLL_OK;
    }
}

extern char **environ;

/* a problem of the environment, added to first_error (the status is the same for all) */
static void add_problem(const char *text)
{
    load_status = NUMACOLL_ERR_CONFIG;
    size_t used = strlen(first_error);
    if (used + 8 >= sizeof first_error) return; /* full: the first ones say enough */
    snprintf(first_error + used, sizeof first_error - used, "%s%s", used ? "; " : "", text);
}

/* edit distance between @p a (@p alen bytes) and @p b, capped at 3 (enough to tell a typo) */
static int distance(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    if (alen > 64 || blen > 64) return 3;
    int row[65];
    for (size_t j = 0; j <= blen; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= alen; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= blen; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[blen] < 3 ? row[blen] : 3;
}

static void load_locked(void)
{
    first_error[0] = 0;
    load_status = NUMACOLL_OK;
    public_count = 0;
    for (int i = 0; i < NC_CFG_COUNT; i++) {
        const nc_cfg_def_t *d = table[i];
        values[i] = (cfg_val_t){0};
        if (!d) continue; /* a layer this program does not contain (libnumacoll.a) */
        char err[1024];
        cfg_val_t def = {0};
        if (parse_value(d, d->defval, &def, err, sizeof err) != NUMACOLL_OK) {
            fprintf(stderr, "numacoll: internal error: the default of a row of %s: %s\n",
                    table_layer[i], err);
            abort();
        }
        def.valid = 1;
        const char *env = getenv(names[i]);
        values[i] = def;
        if (env) {
            cfg_val_t v = {0};
            if (parse_value(d, env, &v, err, sizeof err) == NUMACOLL_OK) {
                v.set = v.valid = 1;
                values[i] = v;
            } else {
                add_problem(err);
            }
        }
        numacoll_config_row_t *pub = &public_rows[public_count++];
        pub->name = names[i];
        pub->type = type_name(d->type);
        pub->defval = d->defval;
        pub->allowed = allowed_of(d);
        pub->doc = d->doc;
    }
    /* unknown NUMACOLL_* variables are mistakes (typos); reject them. Known are all the
     * names of config.h, also those whose layer this program does not contain. */
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "NUMACOLL_", 9) != 0) continue;
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        int known = 0, nearest = -1, best = 3;
        for (int i = 0; i < NC_CFG_COUNT && !known; i++) {
            known = strlen(names[i]) == len && strncmp(names[i], *e, len) == 0;
            int d = known ? 0 : distance(*e, len, names[i]);
            if (d < best) best = d, nearest = i;
        }
        if (known) continue;
        char text[256], hint[96] = "";
        if (nearest >= 0) snprintf(hint, sizeof hint, " (did you mean %s?)", names[nearest]);
        snprintf(text, sizeof text,
                 "unknown variable %.*s in the environment%s; `numacoll-info` lists the "
                 "NUMACOLL_* variables",
                 (int)(len < 96 ? len : 96), *e, hint);
        add_problem(text);
    }
    loaded = 1;
}

static void load_once(void)
{
    pthread_mutex_lock(&lock);
    load_locked();
    pthread_mutex_unlock(&lock);
}

void nc_cfg_register(const char *layer, const nc_cfg_def_t *rows, int n)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n; i++) {
        int id = (int)rows[i].id;
        if (id < 0 || id >= NC_CFG_COUNT) {
            fprintf(stderr,
                    "numacoll: internal error: %s registers a row with id %d (no such "
                    "variable in config.h)\n",
                    layer, id);
            abort();
        }
        if (table[id]) {
            fprintf(stderr,
                    "numacoll: internal error: %s registers the row of %s, which %s "
                    "registered already\n",
                    layer, names[id], table_layer[id]);
            abort();
        }
        table[id] = &rows[i];
        table_layer[id] = layer;
    }
    if (loaded) load_locked(); /* registered after the first read: read again */
    pthread_mutex_unlock(&lock);
}

static int find(const char *name)
{
    pthread_once(&once, load_once);
    for (int i = 0; name && i < NC_CFG_COUNT; i++)
        if (strcmp(names[i], name) == 0) return table[i] ? i : -1;
    return -1;
}

/* The value of row @p id, which must be linked in and (want >= 0) of type @p want. */
static const cfg_val_t *value_of(nc_cfg_id_t id, int want, const char *getter)
{
    pthread_once(&once, load_once);
    if ((unsigned)id >= NC_CFG_COUNT || !table[id]) {
        fprintf(stderr,
                "numacoll: internal error: %s(%s): the row is not linked in (its layer's "
                "config_rows.c; NC_CFG_LINK)\n",
                getter, (unsigned)id < NC_CFG_COUNT ? names[id] : "no such id");
        abort();
    }
    if (want >= 0 && (int)table[id]->type != want) {
        fprintf(stderr, "numacoll: internal error: %s(%s): the row is of type %s\n", getter,
                names[id], type_name(table[id]->type));
        abort();
    }
    return &values[id];
}

long nc_cfg_int(nc_cfg_id_t id)
{
    return value_of(id, NC_CFG_TYPE_INT, "nc_cfg_int")->i;
}
size_t nc_cfg_size(nc_cfg_id_t id)
{
    return value_of(id, NC_CFG_TYPE_SIZE, "nc_cfg_size")->sz;
}
double nc_cfg_double(nc_cfg_id_t id)
{
    return value_of(id, NC_CFG_TYPE_DOUBLE, "nc_cfg_double")->d;
}
bool nc_cfg_bool(nc_cfg_id_t id)
{
    return value_of(id, NC_CFG_TYPE_BOOL, "nc_cfg_bool")->i != 0;
}
const char *nc_cfg_str(nc_cfg_id_t id)
{
    return value_of(id, -1, "nc_cfg_str")->text;
}
bool nc_cfg_is_set(nc_cfg_id_t id)
{
    return value_of(id, -1, "nc_cfg_is_set")->set;
}

const char *nc_cfg_name(nc_cfg_id_t id)
{
    return (unsigned)id < NC_CFG_COUNT ? names[id] : NULL;
}

const nc_cfg_def_t *nc_cfg_row(nc_cfg_id_t id)
{
    pthread_once(&once, load_once);
    return (unsigned)id < NC_CFG_COUNT ? table[id] : NULL;
}

int nc_cfg_validate(nc_cfg_id_t id, const char *value)
{
    const nc_cfg_def_t *d = nc_cfg_row(id);
    if (!d)
        return nc_error(NUMACOLL_ERR_CONFIG, "%s: no such row in this program",
                        nc_cfg_name(id) ? nc_cfg_name(id) : "no such variable");
    char err[1024];
    cfg_val_t v;
    if (parse_value(d, value, &v, err, sizeof err) != NUMACOLL_OK)
        return nc_error(NUMACOLL_ERR_CONFIG, "%s", err);
    return NUMACOLL_OK;
}

bool nc_cfg_list_has(const char *list, const char *item)
{
    size_t il = strlen(item);
    const char *p = list;
    while (p && *p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == il && strncmp(p, item, il) == 0) return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

const numacoll_config_row_t *numacoll_config_table(int *count)
{
    pthread_once(&once, load_once);
    if (count) *count = public_count;
    return public_rows;
}

const char *numacoll_config_value(const char *name)
{
    int i = find(name);
    return i < 0 ? NULL : values[i].text;
}

int numacoll_config_check(void)
{
    pthread_once(&once, load_once);
    if (load_status != NUMACOLL_OK) return nc_error(load_status, "%s", first_error);
    return NUMACOLL_OK;
}

int numacoll_config_reload(void)
{
    pthread_once(&once, load_once);
    pthread_mutex_lock(&lock);
    load_locked();
    pthread_mutex_unlock(&lock);
    return numacoll_config_check();
}
