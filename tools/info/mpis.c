/*
 * numacoll-info --mpis: the MPIs numacoll was built for, from the manifest the build writes
 * (share/numacoll/mpis.tsv beside bin/, in the build tree and installed; one tab-separated
 * line per MPI: family, version, MPI standard, C wrapper, launcher, Fortran wrapper,
 * preload relative to the prefix, preload name, MPI library SONAME, MPI library; two MPIs
 * of one family of other major versions have a line each, the default MPI's first), and
 * numacoll-info --mpi-identity LIB: what an MPI library says it is.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "info.h"

enum { MPI_COLS = 10, MPI_COLS_MIN = 7 }; /* columns 8-10 absent in an older manifest */

/* the prefix: the directory above the one of this executable */
static int prefix_dir(char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = '\0';
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash) return -1;
        *slash = '\0';
    }
    if (snprintf(out, cap, "%s", exe[0] ? exe : "/") >= (int)cap) return -1;
    return 0;
}

int info_default_mpi(char *family, size_t fcap, char *name, size_t ncap)
{
    char prefix[PATH_MAX], path[PATH_MAX + 32], line[4 * PATH_MAX];
    if (prefix_dir(prefix, sizeof prefix) != 0) return -1;
    snprintf(path, sizeof path, "%s/share/numacoll/mpis.tsv", prefix);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int rc = -1;
    while (rc != 0 && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = '\0';
        /* columns 1 (family) and 8 (preload name), tab-separated */
        char *col[8] = {0}, *p = line;
        for (int c = 0; c < 8 && p; c++) {
            col[c] = p;
            p = strchr(p, '\t');
            if (p) *p++ = '\0';
        }
        snprintf(family, fcap, "%s", col[0]);
        snprintf(name, ncap, "%s", col[7] ? col[7] : col[0]);
        rc = 0;
    }
    fclose(f);
    return rc;
}

int info_mpis(int json)
{
    char prefix[PATH_MAX], path[PATH_MAX + 32], line[4 * PATH_MAX];
    if (prefix_dir(prefix, sizeof prefix) != 0) {
        fprintf(stderr, "numacoll-info: --mpis: cannot find the directory of this program\n");
        return 1;
    }
    snprintf(path, sizeof path, "%s/share/numacoll/mpis.tsv", prefix);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr,
                "numacoll-info: --mpis: no manifest at %s: numacoll was built without MPI "
                "(libnumacoll_mpi); configure it with -DNUMACOLL_MPICC=/path/to/mpicc\n",
                path);
        return 1;
    }
    static const char *const names[MPI_COLS] = {"family",   "version", "standard", "mpicc",
                                                "launcher", "fortran", "preload",  "name",
                                                "soname",   "library"};
    int n = 0;
    if (json) printf("{\"manifest\": \"%s\", \"mpis\": [", path);
    else printf("numacoll's MPIs (%s):\n", path);
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = '\0';
        char *col[MPI_COLS] = {0}, *p = line;
        for (int c = 0; c < MPI_COLS; c++) {
            col[c] = p;
            p = p ? strchr(p, '\t') : NULL;
            if (p) *p++ = '\0';
        }
        if (!col[MPI_COLS_MIN - 1]) continue; /* not a whole line */
        for (int c = MPI_COLS_MIN; c < MPI_COLS; c++)
            if (!col[c]) col[c] = "";
        char preload[PATH_MAX + 8];
        snprintf(preload, sizeof preload, "%s/%s", prefix, col[6]);
        if (json) {
            printf("%s{", n ? ", " : "");
            for (int c = 0; c < MPI_COLS; c++) {
                printf("%s\"%s\": ", c ? ", " : "", names[c]);
                json_str(c == 6 ? preload : col[c]);
            }
            printf("}");
        } else {
            printf("%s %s (MPI %s%s%s)%s\n", col[0], col[1], col[2], col[7][0] ? ", preload " : "",
                   col[7], n ? "" : ", the default");
            if (col[8][0]) printf("  MPI library:     %s (%s)\n", col[9], col[8]);
            printf("  C wrapper:       %s\n", col[3]);
            printf("  launcher:        %s\n", col[4][0] ? col[4] : "(none found)");
            printf("  Fortran wrapper: %s\n", col[5][0] ? col[5] : "(none found)");
            printf("  preload:         %s\n", preload);
        }
        n++;
    }
    fclose(f);
    if (json) printf("]}\n");
    else if (!n) printf("(none)\n");
    return 0;
}

/* An MPI library's own identity: the first line of its MPI_Get_library_version (which MPI
 * allows before MPI_Init), e.g. "Open MPI v4.1.4, package: ..." or "MPICH Version: 4.2.1";
 * numacoll-run matches a program's MPI to a preload with it. Loaded with RTLD_LOCAL: its
 * symbols stay out of this process's global scope. */
int info_mpi_identity(const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "numacoll-info: --mpi-identity: cannot load '%s': %s\n", lib, dlerror());
        return 1;
    }
    int (*get)(char *, int *);
    *(void **)&get = dlsym(h, "MPI_Get_library_version");
    if (!get) {
        fprintf(stderr,
                "numacoll-info: --mpi-identity: '%s' has no MPI_Get_library_version: not an "
                "MPI library (MPI 3.0 or later)\n",
                lib);
        return 1;
    }
    /* larger than any MPI_MAX_LIBRARY_VERSION_STRING (Open MPI 256, MPICH 8192) */
    static char buf[65536];
    int len = 0;
    if (get(buf, &len) != 0 || len <= 0) {
        fprintf(stderr, "numacoll-info: --mpi-identity: MPI_Get_library_version of '%s' failed\n", lib);
        return 1;
    }
    buf[len < (int)sizeof buf ? len : (int)sizeof buf - 1] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    printf("%s\n", buf);
    return 0;
}
