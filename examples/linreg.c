/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Data-parallel training with MirroredStrategy: linear regression by stochastic gradient descent.
 *
 *   model     y = w . x + b  (w: D weights, b: the bias), parameters theta = [w, b], a mirrored variable
 *   data      N samples y = w_true . x + b_true + noise, split into one shard per replica
 *   one step  strategy.run(train_step):
 *
 *     replica r (device d_r)                                   every replica at once
 *     ----------------------                                   ---------------------
 *     [grad task on d_r]  theta_r, X_r, Y_r -> g_r, loss_r      (this program's StarPU codelet)
 *     all_reduce(MEAN, [g_r, loss_r])  -> g, loss               (one batched collective, one graph)
 *     [sgd task on d_r]   theta_r -= lr * g                     (this program's StarPU codelet)
 *
 * The tasks are StarPU tasks pinned to each replica's device (CPU workers, or OpenCL devices such as
 * the emulated box); starfold's all-reduce is submitted between them and StarPU orders everything
 * through the handles: no replica waits for its own tasks. The loss (the mean squared error over all
 * samples, MEAN of the shards' means) must go down, and every replica's copy of theta must end
 * bit-identical.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* StarPU's headers need POSIX declarations */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <starfold.h>

#include "linreg.h"

#define D 4          /* features */
#define P (D + 1)    /* parameters: weights and bias */
#define LINREG_D_STR "4"
#define LINREG_P_STR "5"
#define N 4096       /* samples */
#define LR 0.3f

static const float w_true[D] = { 2.0f, -1.0f, 0.5f, 3.0f };
static const float b_true = 0.25f;

/* ------------------------------------------------------------------------------------------------
 * This program's own codelets
 */

/* buffers: theta (R, P), X (R, n x D), Y (R, n), grad (W, P), loss (W, 1) */
static void grad_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    const float *theta = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const float *x = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const float *y = (const float *)STARPU_VECTOR_GET_PTR(buffers[2]);
    float *g = (float *)STARPU_VECTOR_GET_PTR(buffers[3]);
    float *loss = (float *)STARPU_VECTOR_GET_PTR(buffers[4]);
    const unsigned n = STARPU_VECTOR_GET_NX(buffers[2]);
    double acc[P] = { 0 }, l = 0;
    for (unsigned i = 0; i < n; i++) {
        double e = theta[D] - y[i];
        for (int j = 0; j < D; j++) e += (double)theta[j] * x[i * D + j];
        for (int j = 0; j < D; j++) acc[j] += 2.0 * e * x[i * D + j];
        acc[D] += 2.0 * e;
        l += e * e;
    }
    for (int j = 0; j < P; j++) g[j] = (float)(acc[j] / n);
    loss[0] = (float)(l / n);
}

#ifdef STARPU_USE_OPENCL
/*
 * The same two steps on OpenCL devices (the emulated box): one work-item each, the data is small.
 * Offsets come from StarPU's vector interface, in elements.
 */
static const char *const linreg_cl_source =
    "__kernel void linreg_grad(__global const float *theta, unsigned ot, __global const float *x, unsigned ox,\n"
    "                          __global const float *y, unsigned oy, __global float *g, unsigned og,\n"
    "                          __global float *loss, unsigned ol, unsigned n)\n"
    "{\n"
    "    theta += ot; x += ox; y += oy; g += og; loss += ol;\n"
    "    float acc[" LINREG_P_STR "] = { 0 }, l = 0;\n"
    "    for (unsigned i = 0; i < n; i++) {\n"
    "        float e = theta[" LINREG_D_STR "] - y[i];\n"
    "        for (int j = 0; j < " LINREG_D_STR "; j++) e += theta[j] * x[i * " LINREG_D_STR " + j];\n"
    "        for (int j = 0; j < " LINREG_D_STR "; j++) acc[j] += 2.0f * e * x[i * " LINREG_D_STR " + j];\n"
    "        acc[" LINREG_D_STR "] += 2.0f * e;\n"
    "        l += e * e;\n"
    "    }\n"
    "    for (int j = 0; j < " LINREG_P_STR "; j++) g[j] = acc[j] / n;\n"
    "    loss[0] = l / n;\n"
    "}\n"
    "__kernel void linreg_sgd(__global float *theta, unsigned ot, __global const float *g, unsigned og, float lr)\n"
    "{\n"
    "    for (int j = 0; j < " LINREG_P_STR "; j++) theta[ot + j] -= lr * g[og + j];\n"
    "}\n";

static struct starpu_opencl_program linreg_program;
static int linreg_program_loaded;

/* Runs kernel @name with (cl_mem, offset) pairs for @nbuf buffers, then @extra scalar args. */
static void run_opencl(const char *name, void *buffers[], int nbuf, const void *extra, size_t extra_size)
{
    const int devid = starpu_worker_get_devid(starpu_worker_get_id());
    cl_kernel k;
    cl_command_queue q;
    if (starpu_opencl_load_kernel(&k, &q, &linreg_program, name, devid) != CL_SUCCESS) {
        fprintf(stderr, "linreg: cannot load OpenCL kernel %s\n", name);
        return;
    }
    cl_uint a = 0;
    for (int b = 0; b < nbuf; b++) {
        cl_mem m = (cl_mem)STARPU_VECTOR_GET_DEV_HANDLE(buffers[b]);
        cl_uint off = (cl_uint)(STARPU_VECTOR_GET_OFFSET(buffers[b]) / sizeof(float));
        clSetKernelArg(k, a++, sizeof m, &m);
        clSetKernelArg(k, a++, sizeof off, &off);
    }
    clSetKernelArg(k, a, extra_size, extra);
    size_t one = 1;
    if (clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL) != CL_SUCCESS || clFinish(q) != CL_SUCCESS)
        fprintf(stderr, "linreg: OpenCL kernel %s failed\n", name);
    starpu_opencl_release_kernel(k);
}

static void grad_opencl(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    cl_uint n = STARPU_VECTOR_GET_NX(buffers[2]);
    run_opencl("linreg_grad", buffers, 5, &n, sizeof n);
}

static void sgd_opencl(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    float lr = LR;
    run_opencl("linreg_sgd", buffers, 2, &lr, sizeof lr);
}
#endif

static struct starpu_codelet grad_cl = {
    .cpu_funcs = { grad_cpu },
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = { grad_opencl },
#endif
    .nbuffers = 5,
    .modes = { STARPU_R, STARPU_R, STARPU_R, STARPU_W, STARPU_W },
    .name = "linreg_grad",
};

/* buffers: theta (RW, P), grad (R, P) */
static void sgd_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    float *theta = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const float *g = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
    for (int j = 0; j < P; j++) theta[j] -= LR * g[j];
}

static struct starpu_codelet sgd_cl = {
    .cpu_funcs = { sgd_cpu },
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = { sgd_opencl },
#endif
    .nbuffers = 2,
    .modes = { STARPU_RW, STARPU_R },
    .name = "linreg_sgd",
};

/* Submits @cl on @device's worker over @handles. */
static int submit_on(starfold_context_t ctx, int device, struct starpu_codelet *cl, starpu_data_handle_t *handles)
{
    struct starpu_task *t = starpu_task_create();
    t->cl = cl;
    for (unsigned i = 0; i < (unsigned)cl->nbuffers; i++) t->handles[i] = handles[i];
    t->execute_on_a_specific_worker = 1;
    t->workerid = (unsigned)starfold_context_device_worker(ctx, device);
    return starpu_task_submit(t);
}

/* ------------------------------------------------------------------------------------------------
 * The replica step
 */

typedef struct trainer {
    starfold_context_t ctx;
    starfold_value_t theta;          /* mirrored over this process's replica devices */
    int n;                           /* this process's replicas (all of them but under MultiWorkerMirrored) */
    int devices[STARFOLD_MAX_DEVICES]; /* [local replica] its device */
    starpu_data_handle_t *x, *y;     /* [local replica] this program's data shards */
    starfold_value_t *grad, *loss;   /* [local replica] local gradient and loss, reused every step */
    starfold_value_t step_loss;      /* local replica 0's all-reduced loss of the step */
} trainer_t;

/* The local index of the replica on @device (replica ids are global across processes). */
static int local_replica(const trainer_t *tr, int device)
{
    for (int r = 0; r < tr->n; r++)
        if (tr->devices[r] == device) return r;
    return -1;
}

static starfold_status_t train_step(starfold_replica_context_t rc, void *arg)
{
    trainer_t *tr = arg;
    const int dev = starfold_replica_context_device(rc);
    const int r = local_replica(tr, dev);
    if (r < 0) return STARFOLD_ERR_INTERNAL;
    starpu_data_handle_t theta;
    starfold_status_t st = starfold_replica_context_select(rc, tr->theta, &theta);
    if (st != STARFOLD_OK) return st;

    starpu_data_handle_t h[5] = { theta, tr->x[r], tr->y[r], starfold_value_handle(tr->grad[r], 0),
                                  starfold_value_handle(tr->loss[r], 0) };
    if (submit_on(tr->ctx, dev, &grad_cl, h) != 0) return STARFOLD_ERR_RUNTIME;

    /* TensorFlow: ctx.all_reduce(MEAN, [grads, loss]) - one collective for both. */
    const starfold_value_t local[2] = { tr->grad[r], tr->loss[r] };
    starfold_value_t mean[2] = { NULL, NULL };
    if ((st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_MEAN, 2, local, NULL, mean)) != STARFOLD_OK) return st;

    starpu_data_handle_t u[2] = { theta, starfold_value_handle(mean[0], 0) };
    if (submit_on(tr->ctx, dev, &sgd_cl, u) != 0) st = STARFOLD_ERR_RUNTIME;
    if (r == 0) tr->step_loss = starfold_value_retain(mean[1]);
    starfold_value_destroy(mean[0]); /* waits for the sgd task reading it */
    starfold_value_destroy(mean[1]);
    return st;
}

/* ------------------------------------------------------------------------------------------------
 * The training loop
 */

starfold_status_t linreg_train_strategy(starfold_strategy_t strategy, int steps, FILE *info, linreg_result_t *result)
{
    trainer_t tr;
    memset(&tr, 0, sizeof tr);
    const int first = result->first_replica; /* an input; the rest is output */
    memset(result, 0, sizeof *result);
    result->first_replica = first;
    starfold_context_t ctx = tr.ctx = starfold_strategy_context(strategy);
    starfold_status_t st = STARFOLD_OK;
    float *X = NULL, *Y = NULL;
#ifdef STARPU_USE_OPENCL
    if (starpu_opencl_worker_get_count() > 0 && !linreg_program_loaded) {
        if (starpu_opencl_load_opencl_from_string(linreg_cl_source, &linreg_program, NULL) != 0)
            return STARFOLD_ERR_RUNTIME;
        linreg_program_loaded = 1;
    }
#endif
    /* R: every replica in sync (of every process); tr.n: this process's, from global id `first` on. */
    const int R = starfold_strategy_num_replicas_in_sync(strategy);
    while (tr.n < STARFOLD_MAX_DEVICES && starfold_strategy_worker_device(strategy, tr.n) >= 0) {
        tr.devices[tr.n] = starfold_strategy_worker_device(strategy, tr.n);
        tr.n++;
    }
    const int n = tr.n;
    result->replicas = R;
    snprintf(result->algorithm, sizeof result->algorithm, "%s",
             starfold_cross_device_ops_algorithm(starfold_strategy_cross_device_ops(strategy)));
    fprintf(info, "%s over %d devices%s, cross-device ops %s; linear regression, %d samples, %d per replica\n",
            starfold_strategy_kind_name(starfold_strategy_kind(strategy)), R, n < R ? " (of all processes)" : "",
            result->algorithm, N, N / R);

    /* Synthetic data (a fixed LCG: same run, same numbers), sharded: replica r gets rows [r*N/R, (r+1)*N/R). */
    X = malloc(sizeof(float) * N * D);
    Y = malloc(sizeof(float) * N);
    tr.x = calloc((size_t)n, sizeof *tr.x);
    tr.y = calloc((size_t)n, sizeof *tr.y);
    tr.grad = calloc((size_t)n, sizeof *tr.grad);
    tr.loss = calloc((size_t)n, sizeof *tr.loss);
    if (!X || !Y || !tr.x || !tr.y || !tr.grad || !tr.loss) {
        st = STARFOLD_ERR_OUT_OF_MEMORY;
        goto out;
    }
    unsigned long long seed = 42;
    for (int i = 0; i < N; i++) {
        double y = b_true;
        for (int j = 0; j < D; j++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            X[i * D + j] = (float)((double)(seed >> 11) / (double)(1ULL << 53) * 2.0 - 1.0);
            y += w_true[j] * X[i * D + j];
        }
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        Y[i] = (float)(y + 0.01 * ((double)(seed >> 11) / (double)(1ULL << 53) - 0.5));
    }
    for (int r = 0; r < n; r++) { /* local replica r is global replica first + r: its shard */
        const int g = first + r, lo = g * N / R, hi = (g + 1) * N / R, dev = tr.devices[r];
        starpu_vector_data_register(&tr.x[r], STARPU_MAIN_RAM, (uintptr_t)&X[lo * D], (uint32_t)((hi - lo) * D), sizeof(float));
        starpu_vector_data_register(&tr.y[r], STARPU_MAIN_RAM, (uintptr_t)&Y[lo], (uint32_t)(hi - lo), sizeof(float));
        if ((st = starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &dev, STARFOLD_FLOAT32, P, NULL,
                                        &tr.grad[r])) != STARFOLD_OK ||
            (st = starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &dev, STARFOLD_FLOAT32, 1, NULL,
                                        &tr.loss[r])) != STARFOLD_OK)
            goto out;
    }
    /* theta = tf.Variable(zeros) in the strategy's scope: one copy per replica. */
    if ((st = starfold_strategy_create_variable(strategy, STARFOLD_FLOAT32, P, NULL, &tr.theta)) != STARFOLD_OK) goto out;

    float last = 0;
    for (int step = 0; step < steps; step++) {
        if ((st = starfold_strategy_run(strategy, train_step, &tr)) != STARFOLD_OK) goto out;
        st = starfold_value_read(tr.step_loss, 0, &last, sizeof last);
        starfold_value_destroy(tr.step_loss);
        tr.step_loss = NULL;
        if (st != STARFOLD_OK) goto out;
        if (step == 0) result->first_loss = last;
        if (step < 5 || step % 5 == 4) fprintf(info, "step %2d  loss %.6f\n", step, last);
    }
    result->last_loss = last;

    /* Every replica holds the same parameters, bit for bit. */
    float theta[STARFOLD_MAX_DEVICES][P];
    result->identical = 1;
    for (int r = 0; r < n && r < STARFOLD_MAX_DEVICES; r++) {
        if ((st = starfold_value_read(tr.theta, r, theta[r], sizeof theta[r])) != STARFOLD_OK) goto out;
        result->identical &= memcmp(theta[r], theta[0], sizeof theta[0]) == 0;
    }
    memcpy(result->theta, theta[0], sizeof result->theta);
    fprintf(info, "learned w = [%.3f %.3f %.3f %.3f], b = %.3f (true [%.3f %.3f %.3f %.3f], %.3f)\n", theta[0][0],
            theta[0][1], theta[0][2], theta[0][3], theta[0][D], w_true[0], w_true[1], w_true[2], w_true[3], b_true);
    result->loss_went_down = isfinite(last) && last < result->first_loss / 100.0f;
    fprintf(info, "loss %.6f -> %.6f: %s; parameters identical on all %d replicas%s: %s\n", result->first_loss, last,
            result->loss_went_down ? "went down" : "DID NOT GO DOWN", n, n < R ? " of this process" : "",
            result->identical ? "yes" : "NO");
out:
    if (tr.step_loss) starfold_value_destroy(tr.step_loss);
    starfold_value_destroy(tr.theta);
    for (int r = 0; r < n; r++) {
        if (tr.grad && tr.grad[r]) starfold_value_destroy(tr.grad[r]);
        if (tr.loss && tr.loss[r]) starfold_value_destroy(tr.loss[r]);
        if (tr.x && tr.x[r]) starpu_data_unregister(tr.x[r]);
        if (tr.y && tr.y[r]) starpu_data_unregister(tr.y[r]);
    }
    free(tr.x);
    free(tr.y);
    free(tr.grad);
    free(tr.loss);
    free(X);
    free(Y);
    return st;
}

starfold_status_t linreg_train(starfold_context_t ctx, starfold_topology_t topo, int steps, FILE *info,
                               linreg_result_t *result, starfold_graph_t *grad_graph)
{
    /* MirroredStrategy over every device, default cross-device ops. */
    starfold_strategy_t strategy = NULL;
    starfold_status_t st = starfold_mirrored_strategy_create(ctx, topo, 0, NULL, NULL, &strategy);
    if (st != STARFOLD_OK) return st;
    result->first_replica = 0; /* one process: every replica is local */
    st = linreg_train_strategy(strategy, steps, info, result);
    const int R = result->replicas;

    if (st == STARFOLD_OK && grad_graph) { /* the collective of one step: MEAN of [gradient (P floats), loss (1 float)] */
        const starfold_tensor_desc_t t[2] = { { STARFOLD_FLOAT32, P }, { STARFOLD_FLOAT32, 1 } };
        int devices[STARFOLD_MAX_DEVICES];
        for (int r = 0; r < R; r++) devices[r] = starfold_strategy_worker_device(strategy, r);
        const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_MEAN,
                                                  .num_sources = R, .sources = devices, .num_tensors = 2, .tensors = t };
        starfold_algo_options_t opt;
        starfold_cross_device_ops_t ops = starfold_strategy_cross_device_ops(strategy);
        if ((st = starfold_cross_device_ops_options(ops, &opt)) != STARFOLD_OK ||
            (st = starfold_graph_compile(starfold_strategy_topology(strategy), starfold_cross_device_ops_algorithm(ops),
                                         &desc, &opt, grad_graph)) != STARFOLD_OK)
            goto out;
    }

out:
    starfold_strategy_destroy(strategy);
    return st;
}
