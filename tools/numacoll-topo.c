/*
 * numacoll-topo: the group hierarchy (paper 1, section 2.1) of the current placement, or
 * of a planned one on the real machine or on an hwloc synthetic topology.
 *
 *   numacoll-topo                                  this process: binding, levels, units
 *   numacoll-topo --procs 8 --map-by numa          8 ranks placed on this machine
 *   numacoll-topo --synthetic "pack:2 numa:2 l3:1 core:32 pu:1" --procs 14 --map-by numa --json
 */
#include "core/nc_internal.h"
#include "topo/topo.h"

#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#ifndef NC_VERSION
#define NC_VERSION "unknown"
#endif

static void usage(FILE *f)
{
    fprintf(f, "usage: numacoll-topo [--synthetic DESC] [--procs P] [--map-by core|numa|socket]\n"
               "                     [--levels LIST] [--json]\n"
               "Print the group hierarchy (L2/L3 cache, NUMA node, socket) that numacoll's\n"
               "topology-aware barriers use, for this process or for a planned placement of P\n"
               "ranks on this machine or on an hwloc synthetic topology.\n"
               "  (no option)       levels of this machine and where this process is bound\n"
               "  --synthetic DESC  plan on an hwloc synthetic topology, e.g.\n"
               "                    \"pack:2 numa:2 l3:1 core:32 pu:1\" (default: "
               "NUMACOLL_TOPO_SYNTHETIC)\n"
               "  --procs P         plan P ranks (1..1048576; default with --synthetic: one per "
               "core)\n"
               "  --map-by M        core: rank r on core r; numa: node r mod #nodes; socket: "
               "package\n"
               "                    r mod #packages, next free core there (default: "
               "NUMACOLL_TOPO_MAP_BY)\n"
               "  --levels LIST     comma-separated subset of l2,l3,numa,socket (default: "
               "NUMACOLL_BARRIER_TOPO_LEVELS)\n"
               "  --json            print {\"levels\": [{\"name\": .., \"groups\": [[..], ..]}, "
               "..]} only\n"
               "                    (groups list ranks)\n"
               "  --version         print the version and exit\n"
               "  -h, --help        print this help and exit\n"
               "Exit status: 0 done, 1 the topology could not be read, 2 bad usage or an invalid\n"
               "NUMACOLL_* variable.\n");
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "numacoll-topo: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fprintf(stderr, "numacoll-topo: see numacoll-topo --help\n");
    return 2;
}

static int print_hier(const nc_hier_t *h, int json, const char *why)
{
    size_t n = 1 << 16;
    char *buf = NULL;
    for (;;) {
        buf = malloc(n);
        if (!buf) return 1;
        int rc = json ? nc_hier_to_json(h, buf, n) : nc_hier_to_text(h, buf, n);
        if (rc == NUMACOLL_OK) break;
        free(buf);
        if (rc != NUMACOLL_ERR_TOOBIG || n > (1u << 30)) return 1;
        n *= 4;
    }
    if (json)
        printf("%s\n", buf);
    else {
        fputs(buf, stdout);
        if (!h && why && why[0]) printf("  (%s)\n", why);
    }
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"synthetic", required_argument, 0, 's'},
                                         {"procs", required_argument, 0, 'p'},
                                         {"map-by", required_argument, 0, 'm'},
                                         {"levels", required_argument, 0, 'l'},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {"version", no_argument, 0, 'V'},
                                         {0, 0, 0, 0}};
    /* --help and --version work whatever the environment holds */
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("numacoll-topo (numacoll) %s\n", NC_VERSION);
            return 0;
        }
    }
    if (numacoll_config_check() != NUMACOLL_OK) {
        fprintf(stderr, "numacoll-topo: %s\n", numacoll_last_error());
        return 2;
    }
    const char *syn = nc_cfg_str(NC_CFG_TOPO_SYNTHETIC);
    const char *map_by = nc_cfg_str(NC_CFG_TOPO_MAP_BY);
    const char *levels = nc_cfg_str(NC_CFG_BARRIER_TOPO_LEVELS);
    long procs = 0;
    int json = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "s:p:m:l:jh", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            syn = optarg;
            break;
        case 'p': {
            char *end;
            errno = 0;
            procs = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || procs < 1 || procs > 1 << 20)
                return bad("--procs '%s' is not valid; allowed: an integer in 1..1048576", optarg);
            break;
        }
        case 'm':
            if (strcmp(optarg, "core") && strcmp(optarg, "numa") && strcmp(optarg, "socket"))
                return bad("--map-by '%s' is not valid; allowed: core, numa, socket", optarg);
            map_by = optarg;
            break;
        case 'l': {
            unsigned mask;
            if (nc_topo_parse_levels(optarg, &mask) != NUMACOLL_OK)
                return bad("--levels: %s", numacoll_last_error());
            levels = optarg;
            break;
        }
        case 'j':
            json = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("numacoll-topo (numacoll) %s\n", NC_VERSION);
            return 0;
        default:
            return bad("unknown option or missing value in '%s'; allowed: --synthetic DESC, "
                       "--procs P, --map-by core|numa|socket, --levels LIST, --json, --version, "
                       "--help",
                       argv[optind - 1]);
        }
    }
    if (optind < argc)
        return bad("unexpected argument '%s'; options are --synthetic, --procs, --map-by, "
                   "--levels, --json",
                   argv[optind]);

    int planned = (syn && syn[0]) || procs > 0;
    nc_hier_t *h = NULL;
    char why[512] = "", lvdesc[1024];
    if (!planned) {
        /* this process on the real machine */
        nc_topo_machine_t *m;
        if (nc_topo_machine_load(NULL, &m) != NUMACOLL_OK) {
            fprintf(stderr, "numacoll-topo: %s\n", numacoll_last_error());
            return 1;
        }
        nc_topo_loc_t loc;
        char bind[256] = "";
        nc_topo_locality_self(m, &loc, bind, sizeof bind);
        const nc_topo_levels_t *lv = nc_topo_machine_levels(m);
        unsigned usable = nc_topo_usable(1, &loc, lv);
        if (nc_topo_build(1, &loc, lv, levels, &h, why, sizeof why) != NUMACOLL_OK) {
            fprintf(stderr, "numacoll-topo: %s\n", numacoll_last_error());
            nc_topo_machine_free(m);
            return 2;
        }
        if (json) {
            int rc = print_hier(h, 1, why);
            nc_topo_machine_free(m);
            return rc;
        }
        nc_topo_levels_describe(lv, usable, lvdesc, sizeof lvdesc);
        printf("machine: this machine (%d cores)\nlevels: %s\n", lv->ncores, lvdesc);
        printf("this process: bound to PUs %s;", bind);
        for (int l = 0; l < NC_NLEVELS; l++)
            if (lv->base[l] >= 0) printf(" %s %d", nc_level_names[l], loc.unit[l]);
        printf(" (unit index, -1 = binding spans several units); NUMA node %d\n", loc.numa_os);
        printf("(a team is grouped by a level only when every member's binding lies inside one "
               "unit of it;\n use --procs P [--map-by M] to plan a placement)\n");
        nc_topo_machine_free(m);
        return 0;
    }

    if (procs == 0) {
        /* --synthetic without --procs: one rank per core */
        nc_topo_machine_t *m;
        if (nc_topo_machine_load(syn, &m) != NUMACOLL_OK) {
            fprintf(stderr, "numacoll-topo: %s\n", numacoll_last_error());
            return 2;
        }
        procs = nc_topo_machine_levels(m)->ncores;
        nc_topo_machine_free(m);
    }
    nc_topo_plan_t *p;
    int rc = nc_topo_plan_create(syn, (int)procs, map_by, &p);
    if (rc != NUMACOLL_OK) {
        fprintf(stderr, "numacoll-topo: %s\n", numacoll_last_error());
        return rc == NUMACOLL_ERR_CONFIG || rc == NUMACOLL_ERR_ARG ? 2 : 1;
    }
    if (nc_topo_build(p->nprocs, p->loc, &p->lv, levels, &h, why, sizeof why) != NUMACOLL_OK) {
        fprintf(stderr, "numacoll-topo: %s\n", numacoll_last_error());
        nc_topo_plan_free(p);
        return 2;
    }
    if (!json) {
        nc_topo_levels_describe(&p->lv, nc_topo_usable(p->nprocs, p->loc, &p->lv), lvdesc,
                                sizeof lvdesc);
        if (syn && syn[0])
            printf("machine: synthetic '%s' (%d cores)\n", syn, p->lv.ncores);
        else
            printf("machine: this machine (%d cores)\n", p->lv.ncores);
        printf("levels: %s\n", lvdesc);
        printf("placement: %d processes, map-by %s%s\n", p->nprocs, map_by,
               p->wrapped ? " (more processes than cores: wrapped around)" : "");
        printf("hierarchy over %s:\n", levels);
    }
    rc = print_hier(h, json, why);
    nc_hier_free(h);
    nc_topo_plan_free(p);
    return rc;
}
