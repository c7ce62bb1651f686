/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Embedding starfold in an existing StarPU program.
 *
 * The program below is an ordinary StarPU application: it calls starpu_init() itself, registers its
 * own buffers as StarPU vectors and runs its own codelets. It adds starfold for one thing, the
 * all-reduce of its per-device gradients, without copying its data and without waiting:
 *
 *     [app: compute task on device d] ---> grad_d          (the app's handles, wrapped: no copy)
 *                                            |
 *                     starfold all-reduce (SUM) of {grad_0 .. grad_n-1}   -> sum_0 .. sum_n-1
 *                                            |
 *     [app: apply task on device d]   <--- sum_d  ---> weights_d   (the app's handle)
 *
 * Every task is submitted up front, in that order; StarPU runs the reduction after the compute
 * tasks and the apply tasks after the reduction through its data dependencies. To prove that nobody
 * waits in between, the compute tasks are held at a gate that the program opens only after it has
 * submitted everything (the reduction included): a starfold call that waited for the gradients
 * would never return, and the compute tasks would report the gate as timed out.
 *
 * Exit status 0 when every device's weights hold the expected sums, 1 otherwise, 77 when StarPU
 * cannot start.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>
#include <starfold.h>

#define NDEV 4
#define COUNT 1000

/* ------------------------------------------------------------------------------------------------
 * The application's own codelets
 */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_timeouts;

/* Gradient of device d: grad[i] = d + 1 + i % 10 (after the gate opens). cl_arg: the device. */
static void compute_cpu(void *buffers[], void *cl_arg)
{
    const int d = (int)(intptr_t)cl_arg;
    pthread_mutex_lock(&gate_lock);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    while (!gate_open)
        if (pthread_cond_timedwait(&gate_cond, &gate_lock, &deadline) != 0) {
            gate_timeouts++;
            break;
        }
    pthread_mutex_unlock(&gate_lock);
    float *g = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const unsigned n = STARPU_VECTOR_GET_NX(buffers[0]);
    for (unsigned i = 0; i < n; i++) g[i] = (float)(d + 1 + (int)(i % 10));
}

static struct starpu_codelet compute_cl = {
    .cpu_funcs = { compute_cpu },
    .nbuffers = 1,
    .modes = { STARPU_W },
    .name = "app_compute",
};

/* weights -= 0.5 * summed gradient */
static void apply_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    float *w = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const float *g = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const unsigned n = STARPU_VECTOR_GET_NX(buffers[0]);
    for (unsigned i = 0; i < n; i++) w[i] -= 0.5f * g[i];
}

static struct starpu_codelet apply_cl = {
    .cpu_funcs = { apply_cpu },
    .nbuffers = 2,
    .modes = { STARPU_RW, STARPU_R },
    .name = "app_apply",
};

static int submit_on(unsigned worker, struct starpu_codelet *cl, starpu_data_handle_t *h, void *arg)
{
    struct starpu_task *t = starpu_task_create();
    t->cl = cl;
    t->cl_arg = arg;
    for (unsigned i = 0; i < (unsigned)cl->nbuffers; i++) t->handles[i] = h[i];
    t->execute_on_a_specific_worker = 1;
    t->workerid = worker;
    return starpu_task_submit(t);
}

int main(void)
{
    /* The application starts StarPU itself (starfold keeps it running and never shuts it down). */
    if (starpu_init(NULL) != 0) {
        fprintf(stderr, "embed_existing_app: skipped, StarPU cannot start\n");
        return 77;
    }
    int ok = 0;
    starfold_context_t ctx = NULL;
    starfold_cross_device_ops_t ops = NULL;
    starfold_value_t grads = NULL, sums = NULL;
    float *grad_mem[NDEV] = { NULL }, *w_mem[NDEV] = { NULL };
    starpu_data_handle_t grad_h[NDEV] = { NULL }, w_h[NDEV] = { NULL };

    /* Logical devices on the CPU workers (the app's codelets are CPU code). */
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = STARFOLD_DEVICES_CPU;
    o.num_devices = NDEV;
    starfold_status_t st = starfold_context_create(&o, &ctx);
    if (st != STARFOLD_OK) {
        fprintf(stderr, "embed_existing_app: skipped: %s\n", starfold_last_error());
        starpu_shutdown();
        return 77;
    }

    /* The application's buffers, registered by the application. */
    const int devices[NDEV] = { 0, 1, 2, 3 };
    for (int d = 0; d < NDEV; d++) {
        grad_mem[d] = calloc(COUNT, sizeof(float));
        w_mem[d] = malloc(COUNT * sizeof(float));
        if (!grad_mem[d] || !w_mem[d]) goto out;
        for (int i = 0; i < COUNT; i++) w_mem[d][i] = 100.0f;
        starpu_vector_data_register(&grad_h[d], STARPU_MAIN_RAM, (uintptr_t)grad_mem[d], COUNT, sizeof(float));
        starpu_vector_data_register(&w_h[d], STARPU_MAIN_RAM, (uintptr_t)w_mem[d], COUNT, sizeof(float));
    }

    /* 1. The app's compute tasks, one per device (held at the gate). */
    for (int d = 0; d < NDEV; d++)
        if (submit_on((unsigned)starfold_context_device_worker(ctx, d), &compute_cl, &grad_h[d], (void *)(intptr_t)d) != 0)
            goto out;

    /* 2. starfold: the app's gradient handles as one per-replica value (no copy), all-reduced. */
    if ((st = starfold_value_wrap(ctx, STARFOLD_VALUE_PER_REPLICA, NDEV, devices, grad_h, STARFOLD_FLOAT32, &grads)) !=
        STARFOLD_OK)
        goto out;
    if ((st = starfold_hierarchical_copy_all_reduce_create(1, &ops)) != STARFOLD_OK) goto out;
    const starfold_destination_t all = starfold_destination_value(grads);
    if ((st = starfold_cross_device_ops_reduce(ops, STARFOLD_OP_SUM, grads, &all, NULL, &sums)) != STARFOLD_OK) goto out;

    /* 3. The app's own tasks consume the result on each device, through StarPU's dependencies. */
    for (int d = 0; d < NDEV; d++) {
        starpu_data_handle_t h[2] = { w_h[d], starfold_value_handle(sums, d) };
        if (submit_on((unsigned)starfold_context_device_worker(ctx, d), &apply_cl, h, NULL) != 0) goto out;
    }
    printf("compute, all-reduce and apply tasks submitted without waiting; opening the gate\n");
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);

    starpu_task_wait_for_all();
    if ((st = starfold_value_wait(sums)) != STARFOLD_OK) goto out;

    /* Expected: sum over d of (d + 1 + i % 10) = 10 + 4 (i % 10); weights 100 - 0.5 * that. */
    ok = gate_timeouts == 0;
    for (int d = 0; d < NDEV && ok; d++) {
        starpu_data_acquire(w_h[d], STARPU_R);
        for (int i = 0; i < COUNT; i++) {
            const float expect = 100.0f - 0.5f * (float)(10 + 4 * (i % 10));
            if (w_mem[d][i] != expect) {
                fprintf(stderr, "device %d element %d: %g, expected %g\n", d, i, w_mem[d][i], expect);
                ok = 0;
                break;
            }
        }
        starpu_data_release(w_h[d]);
    }
    printf("weights on %d devices: %s (first element %.1f); gate timeouts: %d\n", NDEV, ok ? "correct" : "WRONG",
           w_mem[0][0], gate_timeouts);

out:
    if (st != STARFOLD_OK) fprintf(stderr, "embed_existing_app: %s (%s)\n", starfold_status_string(st), starfold_last_error());
    if (!ok && gate_timeouts == 0) { /* never leave tasks stuck at the gate */
        pthread_mutex_lock(&gate_lock);
        gate_open = 1;
        pthread_cond_broadcast(&gate_cond);
        pthread_mutex_unlock(&gate_lock);
    }
    starpu_task_wait_for_all();
    starfold_value_destroy(sums);
    starfold_value_destroy(grads); /* the app's handles stay registered */
    starfold_cross_device_ops_destroy(ops);
    starfold_context_destroy(ctx);
    for (int d = 0; d < NDEV; d++) {
        if (grad_h[d]) starpu_data_unregister(grad_h[d]);
        if (w_h[d]) starpu_data_unregister(w_h[d]);
        free(grad_mem[d]);
        free(w_mem[d]);
    }
    starpu_shutdown();
    return ok ? 0 : 1;
}
