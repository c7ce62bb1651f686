/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Private layout of the executor's objects: the context (logical device -> StarPU worker and memory
 * node) and the request (one submitted graph: its tasks' shared flags, the completion counter and the
 * temporaries to release).
 *
 * Among the library's sources only src/exec includes <starpu.h> (through this header), and there
 * neither plan.c nor pool.c: the planning and the pool know no StarPU (plan.h, pool.h).
 */
#ifndef STARFOLD_SRC_EXEC_H
#define STARFOLD_SRC_EXEC_H

#include <pthread.h>

#include <starpu.h>
#include <starfold/exec.h>

#include "base/event.h"

#include "exec/pool.h"
#include "exec/kernels.h"
#include "exec/vectors.h"

struct starfold_context {
    starfold_device_mode_t mode;  /* never AUTO */
    int num_devices;
    int *workers;                 /* [num_devices] StarPU worker id of each logical device */
    int *nodes;                   /* [num_devices] its memory node */
    starfold__pool_t *pool;              /* main-memory blocks for temporaries, kept across submissions */
    /*
     * Testing hooks, set by tests through this private header; -1 (the default) = off.
     * test_refuse_task: the submission of graph node i is handled as if StarPU had refused it (-ENODEV),
     *                   which exercises the cancellation path of starfold_submit().
     * test_fail_task:   the kernel of graph node i reports a failure instead of running. Read by the
     *                   kernel as it runs (atomically: set it with __atomic_store_n while tasks run),
     *                   so clear it only once the submission it should fail has finished.
     */
    long test_refuse_task;
    long test_fail_task;
    /* starfold_context_calibrate()'s result, which starfold_context_topology() attaches (calibrate.c) */
    int calibrated;
    starfold_cost_params_t calibration;
    size_t num_measurements;
    starfold_measurement_t measurements[STARFOLD_CALIBRATION_MAX_MEASUREMENTS];
    /*
     * The distribute layer's state for this context (its arena of values, distribute/arena.c), set
     * once with a compare-and-swap and finished by ext_fini first thing in starfold_context_destroy(),
     * while StarPU still runs. The executor never looks inside.
     */
    void *ext;
    void (*ext_fini)(void *ext);
};

struct starfold_request {
    pthread_mutex_t lock;
    starfold__event_t done;       /* posted when pending reaches 0: every waiter wakes at once */
    size_t pending;               /* atomic, decremented under lock: tasks not yet completed (callbacks
                                     not yet run), gate included */
    int cancelled;                /* __atomic: kernels do nothing when set (a refused submission) */
    int status;                   /* __atomic: first kernel failure, STARFOLD_OK while none */
    starpu_data_handle_t *temps;  /* registered temporaries, released without write-back */
    size_t ntemps;
    int temps_released;
    void *temp_block;             /* the main-memory temporaries' block from the context's pool, or NULL */
    size_t temp_block_bytes;
    starfold__pool_t *pool;              /* where it goes back (a reference held while temp_block is set) */
    starfold__kernel_args_t **args;      /* [nargs] one per task, owned; their timing says when each ran */
    size_t nargs;
    double submitted;             /* CLOCK_MONOTONIC seconds at creation: the timeline's origin */
};


/* workers.c: when this process is one of several ranks of a node that the launcher did not bind and
 * the user chose no binding, gives @conf each local rank's own CPUs for StarPU's workers; 1 if it
 * did (starpu_init(conf) then), 0 to keep StarPU's default (starpu_init(NULL)). */
int starfold__spread_workers(struct starpu_conf *conf);

/*
 * Whether StarPU counts the vectors it allocates on memory node @node against that node's size: a
 * device's memory always, main memory only where the user set STARPU_LIMIT_CPU_MEM or
 * STARPU_LIMIT_CPU_NUMA_MEM (context.c, "Vectors").
 */
int starfold__node_counts_vectors(unsigned node);

#endif /* STARFOLD_SRC_EXEC_H */
