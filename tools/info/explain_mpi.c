/*
 * numacoll-info --explain, its MPI part: the preload libraries numacoll-run would find next
 * to this program, and the MPI library each of them needs.
 */
#include "core/nc_internal.h" /* first: _GNU_SOURCE */

#include <elf.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "explain_internal.h"
#include "info.h"

/* ---- the MPI preload: the libraries numacoll-run would find next to this program ------------ */

/* The DT_NEEDED entries of a 64-bit ELF shared object that match "libmpi" (its MPI library),
 * comma-separated into @p out; "" if none or unreadable. */
static void elf_mpi_needed(const char *path, char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char *img = NULL;
    long size = 0;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > (long)sizeof(Elf64_Ehdr) &&
        fseek(f, 0, SEEK_SET) == 0 && (img = malloc((size_t)size)) &&
        fread(img, 1, (size_t)size, f) == (size_t)size) {
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
        size_t o = 0;
        if (!memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
            eh->e_shoff && eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) <= (size_t)size) {
            const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
            for (int i = 0; i < eh->e_shnum; i++) {
                if (sh[i].sh_type != SHT_DYNAMIC || sh[i].sh_link >= eh->e_shnum) continue;
                const Elf64_Shdr *str = &sh[sh[i].sh_link];
                if (sh[i].sh_offset + sh[i].sh_size > (size_t)size ||
                    str->sh_offset + str->sh_size > (size_t)size)
                    continue;
                const Elf64_Dyn *d = (const Elf64_Dyn *)(img + sh[i].sh_offset);
                for (size_t k = 0; k < sh[i].sh_size / sizeof *d && d[k].d_tag != DT_NULL; k++) {
                    if (d[k].d_tag != DT_NEEDED || d[k].d_un.d_val >= str->sh_size) continue;
                    const char *name = img + str->sh_offset + d[k].d_un.d_val;
                    if (!memchr(name, 0, str->sh_size - d[k].d_un.d_val) ||
                        strncmp(name, "libmpi", 6))
                        continue;
                    if (o < n) o += (size_t)snprintf(out + o, n - o, "%s%s", o ? "," : "", name);
                }
            }
        }
    }
    free(img);
    fclose(f);
}

/* The first library that numacoll-run (tools/scripts/numacoll-run) would preload from the
 * directory @p dir of this program, searched as it searches (the patterns below): for
 * @p flavor in the build tree's lib/<flavor>, then in an install's numacoll/<flavor> under
 * lib, lib64 or lib/<multiarch>; for the default (NULL) in lib, lib64 or lib/<multiarch>.
 * Resolved into @p out; 0 if none. */
static int find_preload(const char *dir, const char *flavor, char *out, size_t n)
{
    char pat[3][PATH_MAX + 64];
    if (flavor) {
        snprintf(pat[0], sizeof pat[0], "%s/../lib/%s/libnumacoll_mpi.so", dir, flavor);
        snprintf(pat[1], sizeof pat[1], "%s/../lib*/numacoll/%s/libnumacoll_mpi.so", dir, flavor);
        snprintf(pat[2], sizeof pat[2], "%s/../lib/*/numacoll/%s/libnumacoll_mpi.so", dir, flavor);
    } else {
        snprintf(pat[0], sizeof pat[0], "%s/../lib/libnumacoll_mpi.so", dir);
        snprintf(pat[1], sizeof pat[1], "%s/../lib*/libnumacoll_mpi.so", dir);
        snprintf(pat[2], sizeof pat[2], "%s/../lib/*/libnumacoll_mpi.so", dir);
    }
    for (int i = 0; i < 3; i++) {
        glob_t g;
        int found = 0;
        if (glob(pat[i], 0, NULL, &g) == 0)
            for (size_t k = 0; k < g.gl_pathc && !found; k++) {
                char real[PATH_MAX];
                if (access(g.gl_pathv[k], R_OK) == 0 && realpath(g.gl_pathv[k], real)) {
                    snprintf(out, n, "%s", real);
                    found = 1;
                }
            }
        globfree(&g);
        if (found) return 1;
    }
    return 0;
}

void explain_mpi(void)
{
    static const char *const flavors[] = {"openmpi", "mpich"};
    char exe[PATH_MAX], lib[PATH_MAX], needs[2][256], seen[64] = "", def_needs[256] = "";
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) return;
    exe[k] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0; /* the program's directory */
    hp(0, 2, "\nMPI preload libnumacoll_mpi.so (the one numacoll-run preloads for each MPI, "
             "found next to this program)");
    for (int i = 0; i < 2; i++) {
        const char *f = flavors[i];
        needs[i][0] = 0;
        if (!find_preload(exe, f, lib, sizeof lib)) {
            fact(kf("mpi.%s.library", f), 0, "not found");
            hp(2, 4, "%-8s not built here", f);
            continue;
        }
        elf_mpi_needed(lib, needs[i], sizeof needs[i]);
        snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s%s", seen[0] ? "," : "", f);
        fact(kf("mpi.%s.library", f), 0, "%s", lib);
        fact(kf("mpi.%s.needs", f), 0, "%s", needs[i]);
        hp(2, 4, "%-8s %s (needs %s)", f, lib, needs[i][0] ? needs[i] : "no libmpi*");
    }
    fact("mpi.flavors", 0, "%s", seen);
    if (find_preload(exe, NULL, lib, sizeof lib)) {
        elf_mpi_needed(lib, def_needs, sizeof def_needs);
        /* the default MPI is the manifest's first (numacoll-info --mpis) */
        char family[64] = "unknown", name[64] = "unknown";
        info_default_mpi(family, sizeof family, name, sizeof name);
        fact("mpi.default.library", 0, "%s", lib);
        fact("mpi.default.needs", 0, "%s", def_needs);
        fact("mpi.default.flavor", 0, "%s", family);
        fact("mpi.default.name", 0, "%s", name);
        hp(2, 4, "%-8s %s (%s, preload %s: the first MPI of the manifest, numacoll-info "
                 "--mpis; numacoll-run preloads each program the one of its own MPI)",
           "default", lib, family, name);
    } else {
        fact("mpi.default.library", 0, "not found");
    }
    if (!seen[0])
        hp(2, 4, "(none: numacoll was built with NUMACOLL_MPI=off or found no MPI)");
}
