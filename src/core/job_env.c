/* How many processes of the job run on this node, as the launcher that started this
 * process says in its environment (nc_job_node_procs), and the parser of Slurm's
 * compressed per-node task list. No MPI here: the MPI layer passes the count on to the
 * teams (numacoll_team_params_t.node_procs); the unit tests call these directly. */
#include "nc_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NC_JOB_PROCS_MAX (1L << 24) /* the largest count believed */
#define NC_SLURM_NODES_MAX (1L << 30) /* the most nodes a list may cover */

/* The decimal number at *p (digits only: no sign, no blanks) into *v, *p moved past it.
 * 0 if there is none or it exceeds @p max. */
static int parse_digits(const char **p, long max, long *v)
{
    const char *s = *p;
    long n = 0;
    if (*s < '0' || *s > '9') return 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        n = n * 10 + (*s - '0');
        if (n > max) return 0;
    }
    *p = s;
    *v = n;
    return 1;
}

int nc_slurm_tasks_on_node(const char *list, long node, int *tasks, long *nodes)
{
    if (!list || !*list) return -EINVAL;
    const char *p = list;
    long covered = 0, found = 0;
    for (;;) {
        long count, reps = 1;
        if (!parse_digits(&p, NC_JOB_PROCS_MAX, &count) || count < 1) return -EINVAL;
        if (p[0] == '(') {
            if (p[1] != 'x') return -EINVAL;
            p += 2;
            if (!parse_digits(&p, NC_SLURM_NODES_MAX, &reps) || reps < 1 || *p != ')')
                return -EINVAL;
            p++;
        }
        if (reps > NC_SLURM_NODES_MAX - covered) return -EINVAL;
        if (node >= covered && node < covered + reps) found = count;
        covered += reps;
        if (*p == 0) break;
        if (*p != ',') return -EINVAL;
        p++;
    }
    if (nodes) *nodes = covered;
    if (node < 0 || node >= covered) return -ERANGE;
    *tasks = (int)found;
    return 0;
}

/* @p v for a message: at most 48 characters, anything but printable ASCII as '?' */
static void quote_value(const char *v, char *out, size_t n)
{
    size_t i = 0, len = strlen(v);
    for (; i < len && i < 48 && i + 4 < n; i++)
        out[i] = (v[i] >= 0x20 && v[i] < 0x7f) ? v[i] : '?';
    if (i < len && i + 4 <= n) {
        memcpy(out + i, "...", 3);
        i += 3;
    }
    out[i] = 0;
}

/* The value of @p name, NULL when it is unset or empty (an empty value says nothing) */
static const char *env_value(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* The launchers that give the count as one number, in the order they are believed: each
 * sets its variable in the environment of the processes it starts, and only there. */
static const char *const k_count_vars[] = {
    "OMPI_COMM_WORLD_LOCAL_SIZE", /* Open MPI's mpirun / prterun */
    "MPI_LOCALNRANKS",            /* Hydra: mpiexec of MPICH, Intel MPI, MVAPICH */
    "MV2_COMM_WORLD_LOCAL_SIZE",  /* MVAPICH's mpirun_rsh */
    "PALS_LOCAL_SIZE",            /* HPE PALS: aprun / mpiexec on HPE Cray EX */
    "PMI_LOCAL_SIZE",             /* Cray PMI (Cray MPICH) */
};

void nc_job_node_procs(nc_job_node_procs_t *out)
{
    memset(out, 0, sizeof *out);
    char q[64], q2[64];
    for (size_t i = 0; i < sizeof k_count_vars / sizeof k_count_vars[0]; i++) {
        const char *v = env_value(k_count_vars[i]);
        if (!v) continue;
        const char *p = v;
        long n = 0;
        if (parse_digits(&p, NC_JOB_PROCS_MAX, &n) && *p == 0 && n >= 1) {
            out->count = (int)n;
            out->source = k_count_vars[i];
            return;
        }
        /* the launcher in use set it: a later launcher's variable would describe another
         * job (or the launcher's daemons), so the count stays unknown */
        quote_value(v, q, sizeof q);
        snprintf(out->problem, sizeof out->problem,
                 "%s=%s is not a process count from 1 to %ld: ignored, the job's count of "
                 "processes on this node is unknown",
                 k_count_vars[i], q, NC_JOB_PROCS_MAX);
        return;
    }
    /* Slurm's srun: the step's tasks per node, in the order of the step's nodes, and this
     * node's index among them. Last, as every launcher started inside a Slurm allocation
     * inherits Slurm's variables (and mpirun or Hydra starting their daemons with srun
     * pass on those of the daemons' step). */
    const char *list = env_value("SLURM_STEP_TASKS_PER_NODE");
    if (!list) return;
    const char *id = env_value("SLURM_NODEID");
    quote_value(list, q, sizeof q);
    if (!id) {
        snprintf(out->problem, sizeof out->problem,
                 "SLURM_STEP_TASKS_PER_NODE=%s without SLURM_NODEID: ignored, the job's "
                 "count of processes on this node is unknown",
                 q);
        return;
    }
    const char *p = id;
    long node = 0;
    if (!parse_digits(&p, NC_SLURM_NODES_MAX, &node) || *p != 0) {
        quote_value(id, q2, sizeof q2);
        snprintf(out->problem, sizeof out->problem,
                 "SLURM_NODEID=%s is not a node number: ignored, the job's count of processes "
                 "on this node is unknown",
                 q2);
        return;
    }
    int tasks = 0;
    long nodes = 0;
    int rc = nc_slurm_tasks_on_node(list, node, &tasks, &nodes);
    if (rc == -ERANGE) {
        snprintf(out->problem, sizeof out->problem,
                 "SLURM_NODEID=%ld is past the %ld node(s) of SLURM_STEP_TASKS_PER_NODE=%s: "
                 "ignored, the job's count of processes on this node is unknown",
                 node, nodes, q);
        return;
    }
    if (rc != 0) {
        snprintf(out->problem, sizeof out->problem,
                 "SLURM_STEP_TASKS_PER_NODE=%s is not a list of task counts such as "
                 "2(x3),1: ignored, the job's count of processes on this node is unknown",
                 q);
        return;
    }
    out->count = tasks;
    out->source = "SLURM_STEP_TASKS_PER_NODE";
}
