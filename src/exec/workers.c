/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * StarPU's workers and the machine's CPUs: where the workers go when several processes of one machine
 * start StarPU through starfold, and how they step aside (starfold_context_pause()).
 *
 * StarPU binds its workers to the machine's first cores, counting from core 0 in every process: two
 * ranks on one node each put their first CPU worker on core 0, and a CPU worker spins while it has
 * no task. Measured on a 2-core machine, 4 ranks x 1 worker under `mpirun --bind-to none`: the four
 * workers shared core 0 and a rank's MPI task, polling on that core, waited for a time slice behind
 * three idle spinners: test_group's graph lowerings took over 400 s (seconds per dependent hop)
 * instead of 23 s with the workers spread, and a 4 KiB all-gather 3-4 ms on 2 ranks.
 *
 * So, when starfold starts StarPU itself, the process was started by an MPI launcher with several
 * ranks on this node, the launcher did not bind it (its CPU set is the whole machine) and the user
 * chose no binding (none of STARPU_WORKERS_CPUID, _COREID, _NOBIND, _GETBIND), each local rank gets
 * its own slice of the logical CPUs, its workers bound inside it in turn:
 *
 *     8 CPUs, 2 local ranks:   rank 0 -> CPUs 0 1 2 3 (a fifth worker: 0 again)   rank 1 -> CPUs 4 5 6 7
 *     2 CPUs, 4 local ranks:   rank 0 -> CPU 0   rank 1 -> CPU 1   rank 2 -> CPU 0   rank 3 -> CPU 1
 *
 * (STARPU_WORKERS_CPUID's logical CPUs, what starpu_conf.workers_bindid holds.) Anything the user or
 * the launcher decided wins: this only replaces StarPU's default, which is wrong for every rank but
 * the first.
 */
#include "config.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/common.h"
#include "exec/exec.h"

/* The launcher's local rank and rank count on this node (Open MPI, MPICH/Hydra); 0 when unknown. */
static int local_ranks(int *rank)
{
    static const char *const pairs[][2] = { { "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE" },
                                            { "MPI_LOCALRANKID", "MPI_LOCALNRANKS" } };
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        const char *r = getenv(pairs[k][0]), *n = getenv(pairs[k][1]);
        if (r && n && *r && *n) {
            *rank = atoi(r);
            return atoi(n);
        }
    }
    return 0;
}

static int user_chose_binding(void)
{
    static const char *const vars[] = { "STARPU_WORKERS_CPUID", "STARPU_WORKERS_COREID", "STARPU_WORKERS_NOBIND",
                                        "STARPU_WORKERS_GETBIND" };
    for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++)
        if (starfold__env_set(vars[k])) return 1;
    return 0;
}

int starfold__spread_workers(struct starpu_conf *conf)
{
    int rank = 0;
    const int ranks = local_ranks(&rank);
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (ranks < 2 || rank < 0 || rank >= ranks || cpus < 1 || user_chose_binding()) return 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < cpus) return 0; /* the launcher bound it */
    const long slice = cpus / ranks > 0 ? cpus / ranks : 1; /* CPUs of each local rank */
    const long first = ((long)rank * slice) % cpus;
    conf->use_explicit_workers_bindid = 1;
    for (unsigned k = 0; k < STARPU_NMAXWORKERS; k++) conf->workers_bindid[k] = (unsigned)(first + (long)k % slice);
    return 1;
}

/*
 * Paused workers finish their task and block on a condition (starpu_pause()), so they neither take
 * tasks nor spin: the CPUs are another library's until the resume. StarPU counts the pauses.
 */
STARFOLD_API starfold_status_t starfold_context_pause(starfold_context_t context)
{
    if (!context) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_context_pause: NULL context");
    starpu_pause();
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_context_resume(starfold_context_t context)
{
    if (!context) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_context_resume: NULL context");
    starpu_resume();
    return STARFOLD_OK;
}
