/*
 * numacoll-info's parts: the configuration table's output (numacoll-info.c) and --explain
 * (info/explain.c), which share the line wrapping and the key:value and JSON writers.
 */
#ifndef NC_INFO_H
#define NC_INFO_H

#include <stdio.h>

#define INFO_WIDTH 100 /* columns of the human output */

/* Print @p text wrapped at INFO_WIDTH columns (see numacoll-info.c). */
void wrap_out(const char *text, int indent, int hang);
/* One --parsable line: key:value, the value on one line. */
void parsable_line(const char *key, const char *val);
/* @p s as a JSON string. */
void json_str(const char *s);

typedef struct explain_args {
    int on;
    long np; /* 0: one per core */
    int bytes_set;
    unsigned long long bytes;
    const char *synthetic, *map_by;
} explain_args_t;

/* One --explain option at argv[*i] into @p ex: 1 if taken (*i past its value), 0 if not one
 * of them, -1 after an error message on stderr. */
int explain_arg(int argc, char **argv, int *i, explain_args_t *ex);
/* After the options: -1 when --explain is not asked for, else its exit status. */
int explain_dispatch(const explain_args_t *ex, int mode, int json, int parsable);

/* --mpis: the MPIs of the build's manifest (info/mpis.c); the exit status */
int info_mpis(int json);
/* the default MPI (the manifest's first line): its family and preload name; -1 without a
 * manifest */
int info_default_mpi(char *family, size_t fcap, char *name, size_t ncap);
/* --mpi-identity LIB: the first line of LIB's MPI_Get_library_version; the exit status */
int info_mpi_identity(const char *lib);

#endif
