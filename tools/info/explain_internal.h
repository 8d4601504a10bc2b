/*
 * What the parts of numacoll-info --explain share (explain.c: the team's decisions and the
 * writers; explain_mpi.c: the MPI preloads).
 */
#ifndef NC_EXPLAIN_INTERNAL_H
#define NC_EXPLAIN_INTERNAL_H

/* Record the fact @p key (raw: its value is a JSON number or JSON text) for --parsable and
 * --json */
void fact(const char *key, int raw, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A fact key from a format (the buffer is reused by the next call) */
const char *kf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Human output only: a line wrapped at INFO_WIDTH (@p indent, then @p hang) */
void hp(int indent, int hang, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Data movement on the planned team @p t: by block size, or the block of @p bytes
 * (@p bytes_set) in detail (explain_move.c) */
struct numacoll_team;
void explain_move(const struct numacoll_team *t, int bytes_set, unsigned long long bytes);
/* The MPI preloads next to this program (explain_mpi.c) */
void explain_mpi(void);

#endif
