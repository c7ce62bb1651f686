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
 * The tasks are StarPU tasks pinned to each replica's device; starfold's all-reduce is submitted
 * between them and StarPU orders everything through the handles: no replica waits for its own tasks.
 * The loss (the mean squared error over all samples, MEAN of the shards' means) is printed per step
 * and must go down; at the end every replica's copy of theta must be bit-identical.
 *
 * Devices: logical devices on StarPU's CPU workers (the codelets here are CPU code), 4 by default
 * (argument 1 changes it). Exit status 0 when the loss went down and the copies agree, 1 otherwise,
 * 77 when StarPU has no CPU worker.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <starfold.h>

#define D 4          /* features */
#define P (D + 1)    /* parameters: weights and bias */
#define N 4096       /* samples */
#define STEPS 40
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

static struct starpu_codelet grad_cl = {
    .cpu_funcs = { grad_cpu },
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
    starfold_value_t theta;          /* mirrored over the replica devices */
    starpu_data_handle_t *x, *y;     /* [replica] this program's data shards */
    starfold_value_t *grad, *loss;   /* [replica] local gradient and loss, reused every step */
    starfold_value_t step_loss;      /* replica 0's all-reduced loss of the step */
} trainer_t;

static starfold_status_t train_step(starfold_replica_context_t rc, void *arg)
{
    trainer_t *tr = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    const int dev = starfold_replica_context_device(rc);
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

int main(int argc, char **argv)
{
    const int ndev = argc > 1 ? atoi(argv[1]) : 4;
    if (ndev < 1 || ndev > 64) {
        fprintf(stderr, "usage: train_linear_regression [DEVICES (1..64)]\n");
        return 1;
    }
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = STARFOLD_DEVICES_CPU;
    o.num_devices = ndev;
    trainer_t tr;
    memset(&tr, 0, sizeof tr);
    starfold_status_t st = starfold_context_create(&o, &tr.ctx);
    if (st != STARFOLD_OK) {
        fprintf(stderr, "train_linear_regression: skipped, no CPU worker: %s\n", starfold_last_error());
        return 77;
    }

    /* MirroredStrategy over every device, default cross-device ops. */
    starfold_strategy_t strategy = NULL;
    if ((st = starfold_mirrored_strategy_create(tr.ctx, NULL, 0, NULL, NULL, &strategy)) != STARFOLD_OK) goto fail;
    const int R = starfold_strategy_num_replicas_in_sync(strategy);
    printf("MirroredStrategy over %d devices, cross-device ops %s; %d samples, %d per replica\n", R,
           starfold_cross_device_ops_algorithm(starfold_strategy_cross_device_ops(strategy)), N, N / R);

    /* Synthetic data (a fixed LCG: same run, same numbers), sharded: replica r gets rows [r*N/R, (r+1)*N/R). */
    float *X = malloc(sizeof(float) * N * D), *Y = malloc(sizeof(float) * N);
    tr.x = calloc((size_t)R, sizeof *tr.x);
    tr.y = calloc((size_t)R, sizeof *tr.y);
    tr.grad = calloc((size_t)R, sizeof *tr.grad);
    tr.loss = calloc((size_t)R, sizeof *tr.loss);
    if (!X || !Y || !tr.x || !tr.y || !tr.grad || !tr.loss) {
        st = STARFOLD_ERR_OUT_OF_MEMORY;
        goto fail;
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
    for (int r = 0; r < R; r++) {
        const int lo = r * N / R, hi = (r + 1) * N / R, dev = starfold_strategy_worker_device(strategy, r);
        starpu_vector_data_register(&tr.x[r], STARPU_MAIN_RAM, (uintptr_t)&X[lo * D], (uint32_t)((hi - lo) * D), sizeof(float));
        starpu_vector_data_register(&tr.y[r], STARPU_MAIN_RAM, (uintptr_t)&Y[lo], (uint32_t)(hi - lo), sizeof(float));
        if ((st = starfold_value_create(tr.ctx, STARFOLD_VALUE_PER_REPLICA, 1, &dev, STARFOLD_FLOAT32, P, NULL,
                                        &tr.grad[r])) != STARFOLD_OK ||
            (st = starfold_value_create(tr.ctx, STARFOLD_VALUE_PER_REPLICA, 1, &dev, STARFOLD_FLOAT32, 1, NULL,
                                        &tr.loss[r])) != STARFOLD_OK)
            goto fail;
    }
    /* theta = tf.Variable(zeros) in the strategy's scope: one copy per replica. */
    if ((st = starfold_strategy_create_variable(strategy, STARFOLD_FLOAT32, P, NULL, &tr.theta)) != STARFOLD_OK) goto fail;

    float first = 0, last = 0;
    for (int step = 0; step < STEPS; step++) {
        if ((st = starfold_strategy_run(strategy, train_step, &tr)) != STARFOLD_OK) goto fail;
        st = starfold_value_read(tr.step_loss, 0, &last, sizeof last);
        starfold_value_destroy(tr.step_loss);
        tr.step_loss = NULL;
        if (st != STARFOLD_OK) goto fail;
        if (step == 0) first = last;
        if (step < 5 || step % 5 == 4) printf("step %2d  loss %.6f\n", step, last);
    }

    /* Every replica holds the same parameters, bit for bit. */
    float theta[64][P];
    int same = 1;
    for (int r = 0; r < R && r < 64; r++) {
        if ((st = starfold_value_read(tr.theta, r, theta[r], sizeof theta[r])) != STARFOLD_OK) goto fail;
        same &= memcmp(theta[r], theta[0], sizeof theta[0]) == 0;
    }
    printf("learned w = [%.3f %.3f %.3f %.3f], b = %.3f (true [%.3f %.3f %.3f %.3f], %.3f)\n", theta[0][0],
           theta[0][1], theta[0][2], theta[0][3], theta[0][D], w_true[0], w_true[1], w_true[2], w_true[3], b_true);
    const int down = isfinite(last) && last < first / 100.0f;
    printf("loss %.6f -> %.6f: %s; parameters identical on all %d replicas: %s\n", first, last,
           down ? "went down" : "DID NOT GO DOWN", R, same ? "yes" : "NO");

    starfold_value_destroy(tr.theta);
    for (int r = 0; r < R; r++) {
        starfold_value_destroy(tr.grad[r]);
        starfold_value_destroy(tr.loss[r]);
        starpu_data_unregister(tr.x[r]);
        starpu_data_unregister(tr.y[r]);
    }
    free(tr.x);
    free(tr.y);
    free(tr.grad);
    free(tr.loss);
    free(X);
    free(Y);
    starfold_strategy_destroy(strategy);
    starfold_context_destroy(tr.ctx);
    return down && same ? 0 : 1;

fail:
    fprintf(stderr, "train_linear_regression: %s (%s)\n", starfold_status_string(st), starfold_last_error());
    return 1;
}
