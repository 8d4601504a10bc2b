/*
 * numacoll-clean: list and remove the calling user's leftover numacoll shared-memory
 * segments in /dev/shm (as Open MPI's orte-clean does for its session files).
 *
 *   numacoll-clean              remove the stale ones, one line per segment found
 *   numacoll-clean --dry-run    only list them (what would be removed, what is kept, why)
 *
 * A team's segment with NUMACOLL_SHM_BACKEND=posix (or auto, falling back to it) is a name
 * numacoll-<creator pid>-<16 hex digits> in /dev/shm, made by the team's rank 0 and
 * unlinked as soon as every member has attached (src/core/segment.c). A name that stays
 * behind comes from a job killed during its set-up. Such a file still holds its memory.
 */
#define _GNU_SOURCE 1
#include "core/nc_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef NC_VERSION
#define NC_VERSION "unknown"
#endif

#define MAX_SEGS 4096

typedef struct seg {
    char name[256];
    pid_t creator;
    dev_t dev;
    ino_t ino;
    off_t size;
    pid_t user;   /* a process that maps it or holds it open (0: none found) */
    int user_maps; /* 1: user maps it, 0: user has it open */
    int creator_alive;
} seg_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: numacoll-clean [--dry-run] [--dir DIR] [--help] [--version]\n"
            "List and remove the calling user's leftover numacoll shared-memory segments:\n"
            "files numacoll-<pid>-<16 hex digits> in /dev/shm (NUMACOLL_SHM_BACKEND=posix).\n"
            "A job unlinks such a name once all its members have attached; one left behind\n"
            "comes from a job killed while it set up a team, and it keeps its memory.\n"
            "\n"
            "A segment is removed only if all of these hold:\n"
            "  - it is a regular file owned by the calling user (other users' files are\n"
            "    never touched, nor listed);\n"
            "  - the process that created it (the pid in its name) is gone: no such\n"
            "    process, or one that has exited and awaits reaping (a zombie);\n"
            "  - no process maps it or has it open: /proc/<pid>/maps and /proc/<pid>/fd of\n"
            "    every process whose entries the caller can read, which are all of the\n"
            "    caller's own (a job that attached to it is live, whoever created it).\n"
            "Anything else is kept and the reason printed. Names of other forms are ignored.\n"
            "\n"
            "  --dry-run   list what would be removed and what is kept; remove nothing\n"
            "  --dir DIR   look in DIR instead of /dev/shm (a container's shm mount, tests)\n"
            "  --help      print this help and exit\n"
            "  --version   print the version and exit\n"
            "Exit status: 0 when every stale segment was removed (or none was found), 1 if DIR\n"
            "cannot be read or a removal failed, 2 on a usage error.\n");
}

/* numacoll-<pid>-<16 hex>: the creator's pid, or 0 if @p name has another form. */
static pid_t creator_of(const char *name)
{
    if (strncmp(name, "numacoll-", 9) != 0) return 0;
    const char *p = name + 9;
    char *end;
    if (!isdigit((unsigned char)*p)) return 0;
    errno = 0;
    long pid = strtol(p, &end, 10);
    if (errno || pid <= 0 || pid > 0x7fffffff || *end != '-') return 0;
    p = end + 1;
    for (int i = 0; i < 16; i++)
        if (!isxdigit((unsigned char)p[i])) return 0;
    return p[16] == 0 ? (pid_t)pid : 0;
}

/* Mark the segments that process @p pid maps (its maps lines carry the file's device and
 * inode) or holds open (its fds, stat'ed through /proc, are the open files). Processes
 * whose entries cannot be read (other users') are skipped. */
static void scan_process(pid_t pid, seg_t *segs, int n)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            unsigned maj, min;
            unsigned long long ino;
            /* start-end perms offset major:minor inode [path] */
            if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &ino) != 3 || ino == 0)
                continue;
            for (int i = 0; i < n; i++)
                if (!segs[i].user && segs[i].ino == (ino_t)ino &&
                    major(segs[i].dev) == maj && minor(segs[i].dev) == min) {
                    segs[i].user = pid;
                    segs[i].user_maps = 1;
                }
        }
        fclose(f);
    }
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d) return;
    int dfd = dirfd(d);
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        if (e->d_name[0] == '.' || fstatat(dfd, e->d_name, &st, 0) != 0) continue;
        for (int i = 0; i < n; i++)
            if (!segs[i].user && segs[i].ino == st.st_ino && segs[i].dev == st.st_dev)
                segs[i].user = pid;
    }
    closedir(d);
}

static void scan_all_processes(seg_t *segs, int n)
{
    DIR *d = opendir("/proc");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (end != e->d_name && !*end && pid > 0) scan_process((pid_t)pid, segs, n);
    }
    closedir(d);
}

int main(int argc, char **argv)
{
    int dry = 0;
    const char *dir = "/dev/shm";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("numacoll-clean (numacoll) %s\n", NC_VERSION);
            return 0;
        }
        if (!strcmp(argv[i], "--dry-run")) {
            dry = 1;
        } else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
            dir = argv[++i];
        } else {
            fprintf(stderr,
                    "numacoll-clean: %s '%s'; allowed: --dry-run, --dir DIR, --help, "
                    "--version\n",
                    strcmp(argv[i], "--dir") ? "unknown option" : "option needs a value:",
                    argv[i]);
            return 2;
        }
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "numacoll-clean: cannot read %s: %s\n", dir, strerror(errno));
        return 1;
    }
    int dfd = dirfd(d);
    uid_t me = getuid();
    seg_t *segs = calloc(MAX_SEGS, sizeof *segs);
    if (!segs) {
        fprintf(stderr, "numacoll-clean: out of memory\n");
        return 1;
    }
    int n = 0, skipped = 0;
    for (struct dirent *e; (e = readdir(d));) {
        pid_t creator = creator_of(e->d_name);
        struct stat st;
        if (!creator || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (!S_ISREG(st.st_mode) || st.st_uid != me) continue; /* not ours: not listed */
        if (n == MAX_SEGS) {
            skipped++;
            continue;
        }
        seg_t *s = &segs[n++];
        snprintf(s->name, sizeof s->name, "%s", e->d_name);
        s->creator = creator;
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        s->size = st.st_size;
    }
    /* creators first, then the users: a job that starts now has a live creator; one whose
     * creator died has members that map the file */
    for (int i = 0; i < n; i++)
        segs[i].creator_alive = !nc_pid_gone(segs[i].creator);
    scan_all_processes(segs, n);
    int removed = 0, kept = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        seg_t *s = &segs[i];
        if (s->creator_alive || s->user) {
            kept++;
            if (s->creator_alive)
                printf("kept       %s/%s  %lld bytes: its creator, pid %d, is running\n", dir,
                       s->name, (long long)s->size, (int)s->creator);
            else
                printf("kept       %s/%s  %lld bytes: pid %d %s\n", dir, s->name,
                       (long long)s->size, (int)s->user, s->user_maps ? "maps it" : "has it open");
            continue;
        }
        if (dry) {
            printf("would remove %s/%s  %lld bytes: creator pid %d gone, no process uses it\n",
                   dir, s->name, (long long)s->size, (int)s->creator);
            removed++;
            continue;
        }
        struct stat st; /* the same file still (not replaced since the scan) */
        if (fstatat(dfd, s->name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_ino != s->ino ||
            st.st_dev != s->dev || st.st_uid != me) {
            printf("skipped    %s/%s: changed or removed during the scan\n", dir, s->name);
            continue;
        }
        if (unlinkat(dfd, s->name, 0) != 0) {
            fprintf(stderr, "numacoll-clean: cannot remove %s/%s: %s\n", dir, s->name,
                    strerror(errno));
            failed++;
            continue;
        }
        printf("removed    %s/%s  %lld bytes: creator pid %d gone, no process used it\n", dir,
               s->name, (long long)s->size, (int)s->creator);
        removed++;
    }
    closedir(d);
    free(segs);
    printf("numacoll-clean: %d segment(s) of user %d in %s: %d %s, %d kept (in use)%s%s\n",
           n + skipped, (int)me, dir, removed, dry ? "would be removed" : "removed", kept,
           failed ? ", removal failed for some (see above)" : "",
           skipped ? "; more than 4096: run again for the rest" : "");
    return failed ? 1 : 0;
}
