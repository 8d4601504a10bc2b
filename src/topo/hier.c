/*
 * The pure group builder of paper 1, section 2.1, steps 1-3 (no hwloc, no I/O).
 *
 * Starting from the lowest level, the processes still "in play" (at first: all) are
 * grouped by the unit they share at that level; each group's leader is its lowest rank
 * and only the leaders stay in play for the next level. A level whose groups all have a
 * single member adds nothing and is skipped. After the last level, the remaining leaders
 * form one "top" group if there is more than one of them.
 */
#include "topo.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void nc_hier_free(nc_hier_t *h)
{
    if (!h) return;
    for (int l = 0; l < h->nlevels; l++) {
        for (int g = 0; g < h->levels[l].ngroups; g++)
            free(h->levels[l].groups[g].members);
        free(h->levels[l].groups);
    }
    free(h->levels);
    free(h->group_of);
    free(h);
}

typedef struct pair {
    int unit, rank;
} pair_t;

static int cmp_pair(const void *a, const void *b)
{
    const pair_t *x = a, *y = b;
    if (x->unit != y->unit) return x->unit < y->unit ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_group_leader(const void *a, const void *b)
{
    const nc_group_t *x = a, *y = b;
    return (x->members[0] > y->members[0]) - (x->members[0] < y->members[0]);
}

/* Append one level made of the groups given as (unit, rank) pairs sorted by unit then
 * rank. Group order in the level: by leader. */
static int add_level(nc_hier_t *h, const char *name, const pair_t *pr, int n)
{
    int ngroups = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || pr[i].unit != pr[i - 1].unit) ngroups++;
    nc_hier_level_t *lv = &h->levels[h->nlevels];
    memset(lv, 0, sizeof *lv);
    snprintf(lv->name, sizeof lv->name, "%s", name);
    lv->groups = calloc((size_t)ngroups, sizeof *lv->groups);
    if (!lv->groups) return NUMACOLL_ERR_NOMEM;
    h->nlevels++; /* from here on nc_hier_free releases this level too */
    for (int i = 0, g = -1; i < n; i++) {
        if (i == 0 || pr[i].unit != pr[i - 1].unit) {
            int j = i;
            while (j < n && pr[j].unit == pr[i].unit)
                j++;
            g++;
            lv->groups[g].members = malloc((size_t)(j - i) * sizeof(int));
            if (!lv->groups[g].members) return NUMACOLL_ERR_NOMEM;
            lv->ngroups = g + 1;
        }
        lv->groups[g].members[lv->groups[g].size++] = pr[i].rank;
    }
    qsort(lv->groups, (size_t)ngroups, sizeof *lv->groups, cmp_group_leader);
    int l = h->nlevels - 1;
    for (int g = 0; g < ngroups; g++)
        for (int k = 0; k < lv->groups[g].size; k++)
            h->group_of[(size_t)l * (size_t)h->nprocs + (size_t)lv->groups[g].members[k]] = g;
    return NUMACOLL_OK;
}

int nc_hier_build(int nprocs, int nlevels, const int *unit, const char *const *names,
                  nc_hier_t **out)
{
    if (!out) return nc_error(NUMACOLL_ERR_ARG, "nc_hier_build: out is NULL");
    *out = NULL;
    if (nprocs < 1)
        return nc_error(NUMACOLL_ERR_ARG, "nc_hier_build: nprocs=%d; allowed: >= 1", nprocs);
    if (nlevels < 0 || nlevels > 64)
        return nc_error(NUMACOLL_ERR_ARG, "nc_hier_build: nlevels=%d; allowed: 0..64", nlevels);
    if (nlevels > 0 && (!unit || !names))
        return nc_error(NUMACOLL_ERR_ARG, "nc_hier_build: unit table or level names missing");
    for (int l = 0; l < nlevels; l++) {
        if (!names[l] || !names[l][0] || strlen(names[l]) >= sizeof(((nc_hier_level_t *)0)->name))
            return nc_error(NUMACOLL_ERR_ARG,
                            "nc_hier_build: name of level %d is empty or longer than 15 "
                            "characters",
                            l);
        for (int r = 0; r < nprocs; r++)
            if (unit[(size_t)l * (size_t)nprocs + (size_t)r] < 0)
                return nc_error(NUMACOLL_ERR_ARG,
                                "nc_hier_build: rank %d has unit %d at level '%s'; allowed: "
                                ">= 0 (drop levels a process is not inside before building)",
                                r, unit[(size_t)l * (size_t)nprocs + (size_t)r], names[l]);
    }

    int rc = NUMACOLL_ERR_NOMEM;
    nc_hier_t *h = calloc(1, sizeof *h);
    int *active = malloc((size_t)nprocs * sizeof *active);
    pair_t *pr = malloc((size_t)nprocs * sizeof *pr);
    if (!h || !active || !pr) goto fail;
    h->nprocs = nprocs;
    /* at most nlevels group levels plus the top one */
    h->levels = calloc((size_t)nlevels + 1, sizeof *h->levels);
    h->group_of = malloc(((size_t)nlevels + 1) * (size_t)nprocs * sizeof *h->group_of);
    if (!h->levels || !h->group_of) goto fail;
    for (size_t i = 0; i < ((size_t)nlevels + 1) * (size_t)nprocs; i++)
        h->group_of[i] = -1;

    int nactive = nprocs;
    for (int r = 0; r < nprocs; r++)
        active[r] = r;

    for (int l = 0; l < nlevels && nactive > 1; l++) {
        for (int i = 0; i < nactive; i++) {
            pr[i].unit = unit[(size_t)l * (size_t)nprocs + (size_t)active[i]];
            pr[i].rank = active[i];
        }
        qsort(pr, (size_t)nactive, sizeof *pr, cmp_pair);
        int ngroups = 0;
        for (int i = 0; i < nactive; i++)
            if (i == 0 || pr[i].unit != pr[i - 1].unit) ngroups++;
        if (ngroups == nactive) continue; /* all singletons: the level adds nothing */
        rc = add_level(h, names[l], pr, nactive);
        if (rc != NUMACOLL_OK) goto fail;
        const nc_hier_level_t *lv = &h->levels[h->nlevels - 1];
        for (int g = 0; g < lv->ngroups; g++)
            active[g] = lv->groups[g].members[0];
        nactive = lv->ngroups; /* leaders, ascending (groups are sorted by leader) */
    }
    if (nactive > 1) {
        for (int i = 0; i < nactive; i++) {
            pr[i].unit = 0;
            pr[i].rank = active[i];
        }
        rc = add_level(h, "top", pr, nactive);
        if (rc != NUMACOLL_OK) goto fail;
    }
    free(active);
    free(pr);
    *out = h;
    return NUMACOLL_OK;
fail:
    free(active);
    free(pr);
    nc_hier_free(h);
    return nc_error(NUMACOLL_ERR_NOMEM,
                    "out of memory building the group hierarchy of %d "
                    "processes",
                    nprocs);
}

/* Append to out[0..n) at *o; *o keeps counting past n so the caller can tell how many
 * bytes the whole text needs (the output is truncated, never overrun). */
__attribute__((format(printf, 4, 5))) static void put(char *out, size_t n, size_t *o,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(out + (*o < n ? *o : n - 1), *o < n ? n - *o : 1, fmt, ap);
    va_end(ap);
    if (k > 0) *o += (size_t)k;
}

int nc_hier_to_json(const nc_hier_t *h, char *out, size_t n)
{
    if (!out || n == 0) return nc_error(NUMACOLL_ERR_ARG, "nc_hier_to_json: no output buffer");
    size_t o = 0;
    put(out, n, &o, "{\"levels\": [");
    for (int l = 0; h && l < h->nlevels; l++) {
        const nc_hier_level_t *lv = &h->levels[l];
        put(out, n, &o, "%s{\"name\": \"%s\", \"groups\": [", l ? ", " : "", lv->name);
        for (int g = 0; g < lv->ngroups; g++) {
            put(out, n, &o, "%s[", g ? ", " : "");
            for (int k = 0; k < lv->groups[g].size; k++)
                put(out, n, &o, "%s%d", k ? "," : "", lv->groups[g].members[k]);
            put(out, n, &o, "]");
        }
        put(out, n, &o, "]}");
    }
    put(out, n, &o, "]}");
    if (o >= n)
        return nc_error(NUMACOLL_ERR_TOOBIG,
                        "nc_hier_to_json: the JSON needs %zu bytes; the buffer has %zu", o + 1, n);
    return NUMACOLL_OK;
}

int nc_hier_to_text(const nc_hier_t *h, char *out, size_t n)
{
    if (!out || n == 0) return nc_error(NUMACOLL_ERR_ARG, "nc_hier_to_text: no output buffer");
    size_t o = 0;
    if (!h || h->nlevels == 0) put(out, n, &o, "flat (no groups)\n");
    for (int l = 0; h && l < h->nlevels; l++) {
        const nc_hier_level_t *lv = &h->levels[l];
        put(out, n, &o, "G%d %-6s %d group%s:", l + 1, lv->name, lv->ngroups,
            lv->ngroups == 1 ? "" : "s");
        for (int g = 0; g < lv->ngroups; g++) {
            const nc_group_t *gr = &lv->groups[g];
            put(out, n, &o, " {");
            /* compress runs of consecutive ranks: 0..31 */
            for (int k = 0; k < gr->size;) {
                int j = k;
                while (j + 1 < gr->size && gr->members[j + 1] == gr->members[j] + 1)
                    j++;
                if (j - k >= 2)
                    put(out, n, &o, "%s%d..%d", k ? "," : "", gr->members[k], gr->members[j]);
                else
                    for (int i = k; i <= j; i++)
                        put(out, n, &o, "%s%d", i ? "," : "", gr->members[i]);
                k = j + 1;
            }
            put(out, n, &o, "}");
        }
        put(out, n, &o, "\n");
    }
    if (o >= n)
        return nc_error(NUMACOLL_ERR_TOOBIG,
                        "nc_hier_to_text: the text needs %zu bytes; the buffer has %zu", o + 1, n);
    return NUMACOLL_OK;
}
