/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Overlap of gradient all-reduce with the backward pass, measured.
 *
 * A backward pass is emulated by StarPU compute tasks: layer L-1 down to 0, one task per replica and
 * layer, each writing that layer's gradient on its replica's device (and doing arithmetic for a time
 * proportional to the layer's size). Gradients are packed into buckets in the order they are produced
 * (as PyTorch DDP fills its buckets in reverse layer order); each bucket's all-reduce graph is bound
 * to the bucket's gradients once (a persistent submission) and started the moment its last
 * gradient's tasks are submitted, so StarPU starts reducing a bucket while the earlier layers are
 * still computing:
 *
 *   replica r:  [grad L-1][grad L-2][grad L-3][grad L-4] ... [grad 0]
 *   buckets:    \___ bucket 0 ___/ \___ bucket 1 ___/ ...
 *   reduce:                    [all-reduce b0]       [all-reduce b1] ...   (overlapping compute)
 *
 * Three runs of the same step: compute only, reduce only (gradients already there), and both
 * overlapped. Printed: the three times, overlapped / (compute + reduce) and overlapped /
 * max(compute, reduce). Every reduced gradient is verified. Usage: overlap_backward [DEVICES [LAYERS]]
 * (CPU workers; 4 devices, 16 layers by default). Exit 0 when every element is right.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* clock_gettime; StarPU's headers need POSIX declarations */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>
#include <starfold.h>

#define BUCKET_BYTES ((size_t)512 << 10)
#define WORK_PER_ELEMENT 24 /* arithmetic per gradient element: the "backward" cost */

/* Layer l's gradient on replica r, element i: small integers-as-floats, exact when summed. */
static float grad_value(int l, int r, size_t i)
{
    return (float)((l * 7 + r * 3 + (int)(i % 11)) % 17) - 8.0f;
}

struct layer_arg {
    int layer, replica;
};

static void backward_cpu(void *buffers[], void *cl_arg)
{
    const struct layer_arg *a = cl_arg;
    float *g = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    volatile float sink = 0;
    for (size_t i = 0; i < n; i++) {
        float x = (float)i;
        for (int k = 0; k < WORK_PER_ELEMENT; k++) x = x * 0.999f + 0.5f; /* the layer's arithmetic */
        sink += x;
        g[i] = grad_value(a->layer, a->replica, i);
    }
    (void)sink;
}

static struct starpu_codelet backward_cl = {
    .cpu_funcs = { backward_cpu },
    .nbuffers = 1,
    .modes = { STARPU_W },
    .name = "backward_layer",
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct model {
    starfold_context_t ctx;
    int n, layers, nbuckets;
    size_t *count;                   /* [layers] gradient elements */
    starpu_data_handle_t *grad, *out; /* [replica * layers + layer] */
    int *bucket_first, *bucket_len;  /* buckets over layers in production order (L-1 down to 0) */
    starfold_graph_t *graph;         /* [bucket] */
    starfold_persistent_t *allreduce; /* [bucket] its graph bound to its gradients, started every step */
    struct layer_arg *args;          /* [replica * layers + layer] */
} model_t;

static int submit_backward(model_t *m, int layer)
{
    for (int r = 0; r < m->n; r++) {
        struct starpu_task *t = starpu_task_create();
        t->cl = &backward_cl;
        t->handles[0] = m->grad[r * m->layers + layer];
        t->cl_arg = &m->args[r * m->layers + layer];
        t->execute_on_a_specific_worker = 1;
        t->workerid = (unsigned)starfold_context_device_worker(m->ctx, r);
        if (starpu_task_submit(t) != 0) return -1;
    }
    return 0;
}

/* Binds bucket b's graph to its handles in starfold_submit's layout (replica-major), inputs and outputs. */
static starfold_status_t bind_bucket(model_t *m, int b)
{
    const int len = m->bucket_len[b];
    starpu_data_handle_t *in = malloc(sizeof *in * (size_t)(m->n * len)), *out = malloc(sizeof *out * (size_t)(m->n * len));
    if (!in || !out) {
        free(in);
        free(out);
        return STARFOLD_ERR_OUT_OF_MEMORY;
    }
    for (int r = 0; r < m->n; r++)
        for (int k = 0; k < len; k++) {
            const int layer = m->bucket_first[b] - k; /* production order */
            in[r * len + k] = m->grad[r * m->layers + layer];
            out[r * len + k] = m->out[r * m->layers + layer];
        }
    starfold_status_t st = starfold_persistent_create(m->ctx, m->graph[b], in, out, &m->allreduce[b]);
    free(in);
    free(out);
    return st;
}

/* One step; @compute, @reduce say which parts run. Returns seconds, < 0 on error. */
static double step(model_t *m, int compute, int reduce)
{
    starfold_request_t *req = calloc((size_t)m->nbuckets, sizeof *req);
    if (!req) return -1;
    double t0 = now();
    int b = 0, ok = 1;
    for (int layer = m->layers - 1; layer >= 0 && ok; layer--) {
        if (compute && submit_backward(m, layer) != 0) ok = 0;
        /* a bucket is complete once its last (lowest) layer's tasks are submitted */
        if (reduce && ok && layer == m->bucket_first[b] - m->bucket_len[b] + 1) {
            if (starfold_persistent_start(m->allreduce[b], &req[b]) != STARFOLD_OK) ok = 0;
            b++;
        }
    }
    for (int k = 0; k < m->nbuckets; k++)
        if (req[k]) {
            if (starfold_request_wait(req[k]) != STARFOLD_OK) ok = 0;
            starfold_request_destroy(req[k]);
        }
    starpu_task_wait_for_all();
    double t = now() - t0;
    free(req);
    return ok ? t : -1;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 4, layers = argc > 2 ? atoi(argv[2]) : 16;
    if (n < 1 || n > STARFOLD_MAX_DEVICES || layers < 1 || layers > 1000) {
        fprintf(stderr, "usage: overlap_backward [DEVICES (1..%d) [LAYERS (1..1000)]]\n", STARFOLD_MAX_DEVICES);
        return 1;
    }
    starfold_context_options_t co;
    starfold_context_options_init(&co);
    co.mode = STARFOLD_DEVICES_CPU;
    co.num_devices = n;
    model_t m;
    memset(&m, 0, sizeof m);
    m.n = n;
    m.layers = layers;
    if (starfold_context_create(&co, &m.ctx) != STARFOLD_OK) {
        fprintf(stderr, "overlap_backward: skipped, no CPU worker: %s\n", starfold_last_error());
        return 77;
    }
    starfold_topology_t topo = NULL;
    int rc = 1;
    starfold_status_t st = starfold_context_topology(m.ctx, &topo);
    m.count = calloc((size_t)layers, sizeof *m.count);
    m.grad = calloc((size_t)(n * layers), sizeof *m.grad);
    m.out = calloc((size_t)(n * layers), sizeof *m.out);
    m.args = calloc((size_t)(n * layers), sizeof *m.args);
    m.bucket_first = calloc((size_t)layers, sizeof(int));
    m.bucket_len = calloc((size_t)layers, sizeof(int));
    m.graph = calloc((size_t)layers, sizeof *m.graph);
    m.allreduce = calloc((size_t)layers, sizeof *m.allreduce);
    if (st != STARFOLD_OK || !m.count || !m.grad || !m.out || !m.args || !m.bucket_first || !m.bucket_len || !m.graph ||
        !m.allreduce)
        goto out;

    /* Layers of 16K to 128K floats; buckets of about BUCKET_BYTES in reverse layer order. */
    size_t total = 0;
    for (int l = 0; l < layers; l++) {
        m.count[l] = (size_t)(16384 << (l % 4));
        total += m.count[l] * sizeof(float);
        for (int r = 0; r < n; r++) {
            m.args[r * layers + l] = (struct layer_arg){ l, r };
            if ((st = starfold_vector_create(m.ctx, r, STARFOLD_FLOAT32, m.count[l], &m.grad[r * layers + l])) != STARFOLD_OK ||
                (st = starfold_vector_create(m.ctx, r, STARFOLD_FLOAT32, m.count[l], &m.out[r * layers + l])) != STARFOLD_OK)
                goto out;
        }
    }
    size_t fill = 0;
    for (int l = layers - 1; l >= 0; l--) {
        if (fill == 0) m.bucket_first[m.nbuckets] = l;
        m.bucket_len[m.nbuckets]++;
        fill += m.count[l] * sizeof(float);
        if (fill >= BUCKET_BYTES || l == 0) {
            m.nbuckets++;
            fill = 0;
        }
    }
    int devices[STARFOLD_MAX_DEVICES];
    for (int r = 0; r < n; r++) devices[r] = r;
    for (int b = 0; b < m.nbuckets; b++) {
        starfold_tensor_desc_t t[1000];
        for (int k = 0; k < m.bucket_len[b]; k++) t[k] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, m.count[m.bucket_first[b] - k] };
        starfold_collective_desc_t d = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = n,
                                         .sources = devices, .num_tensors = (size_t)m.bucket_len[b], .tensors = t };
        if ((st = starfold_graph_compile(topo, "hierarchical-copy", &d, NULL, &m.graph[b])) != STARFOLD_OK) goto out;
        if ((st = bind_bucket(&m, b)) != STARFOLD_OK) goto out;
    }

    printf("Backward pass of %d layers (%.2f MiB of gradients per replica) on %d devices, %d buckets of ~%zu KiB\n",
           layers, total / 1048576.0, n, m.nbuckets, BUCKET_BYTES >> 10);
    step(&m, 1, 1); /* warm-up: StarPU's first tasks allocate and calibrate */
    const double tc = step(&m, 1, 0), tr = step(&m, 0, 1), to = step(&m, 1, 1);
    if (tc < 0 || tr < 0 || to < 0) {
        fprintf(stderr, "overlap_backward: a step failed: %s\n", starfold_last_error());
        goto out;
    }
    const double mx = tc > tr ? tc : tr;
    printf("compute only  %9.3f ms\nreduce only   %9.3f ms\noverlapped    %9.3f ms\n", tc * 1e3, tr * 1e3, to * 1e3);
    printf("overlapped / (compute + reduce) = %.3f   overlapped / max(compute, reduce) = %.3f\n", to / (tc + tr), to / mx);

    /* Every replica's reduced gradients against the exact sums. */
    size_t wrong = 0;
    float *host = malloc(sizeof(float) * ((size_t)16384 << 3));
    for (int l = 0; l < layers && host; l++)
        for (int r = 0; r < n; r++) {
            if ((st = starfold_vector_read(m.out[r * layers + l], host, m.count[l] * sizeof(float))) != STARFOLD_OK) goto out;
            for (size_t i = 0; i < m.count[l]; i++) {
                float want = 0;
                for (int q = 0; q < n; q++) want += grad_value(l, q, i);
                wrong += host[i] != want;
            }
        }
    free(host);
    printf("verified: %zu wrong elements\n", wrong);
    rc = wrong == 0 ? 0 : 1;
out:
    if (rc && st != STARFOLD_OK) fprintf(stderr, "overlap_backward: %s (%s)\n", starfold_status_string(st), starfold_last_error());
    for (int b = 0; b < layers && m.allreduce; b++) starfold_persistent_destroy(m.allreduce[b]);
    for (int b = 0; b < layers && m.graph; b++) starfold_graph_destroy(m.graph[b]);
    for (int i = 0; i < n * layers && m.grad; i++) {
        if (m.grad[i]) starfold_vector_destroy(m.ctx, m.grad[i]);
        if (m.out[i]) starfold_vector_destroy(m.ctx, m.out[i]);
    }
    free(m.count), free(m.grad), free(m.out), free(m.args), free(m.bucket_first), free(m.bucket_len), free(m.graph);
    free(m.allreduce);
    starfold_topology_destroy(topo);
    starfold_context_destroy(m.ctx);
    return rc;
}
