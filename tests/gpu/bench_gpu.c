/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * bench_gpu: starfold's reductions through StarPU's CUDA workers, each beside the bound the GPU sets,
 * measured in the same process and run (tests/device/gpu.sh runs it on the lent GPU machine).
 *
 *   replicas   n = 2, 4, 8 replicas in one GPU's memory (STARPU_NWORKER_PER_CUDA=n workers, one
 *              memory node), the one-pass all-reduce against one cudaMemcpy device to device of
 *              n x bytes: the n reads and n writes no all-reduce can avoid. 4 KiB to --max-bytes.
 *   host       2 replicas, one in host memory (pinned) and one in GPU memory: every step the host
 *              input is new (its GPU copy invalidated) and the host output is read back, so its bytes
 *              cross PCIe both ways; against cudaMemcpy host to device plus device to host.
 *   tasks      StarPU's cost per task on a CUDA worker: an empty CUDA codelet, submitted in a batch
 *              and one at a time (and the same on a CPU worker where StarPU has one).
 *   memory     (--only memory) 8 replicas filling 3/4 of the GPU's memory and a graph whose temporaries
 *              do not fit beside them: refused, run, or stuck (printed after 60 s).
 *   step       a training step: every replica runs GEMM tasks on the GPU, one per layer from the last
 *              (tests/gpu/step_gemm.cu), and each bucket of gradients is all-reduced by a persistent
 *              one-pass graph started as soon as its layers' tasks are submitted, so StarPU reduces a
 *              bucket while the earlier layers compute. Compute alone, reduction alone, both.
 *
 * Every result is checked: each size's outputs, each step's gradients (exact integer arithmetic).
 * Without a CUDA worker (STARPU_NCUDA=0, the dry run) the same code runs on CPU workers with small
 * sizes and the GPU baselines print as '-'.
 *
 *   bench_gpu [--max-bytes SIZE] [--only replicas|host|tasks|step|memory] [--layers L] [--dim D] [--k K]
 *
 * Exit status: 0, 1 on a failure or a wrong element, 77 when StarPU has no worker at all.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <starfold.h>

#include "step_gemm.h"
#include "tools.h"

#define MAX_REPLICAS 8

static int failures;

#define FAIL(...)                                                                                      \
    do {                                                                                               \
        fprintf(stderr, "bench_gpu: " __VA_ARGS__);                                                    \
        fprintf(stderr, "\n");                                                                         \
        failures++;                                                                                    \
    } while (0)

#define CK(call)                                                                                       \
    do {                                                                                               \
        starfold_status_t st_ = (call);                                                                \
        if (st_ != STARFOLD_OK) {                                                                      \
            FAIL("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, starfold_status_string(st_),         \
                 starfold_last_error());                                                               \
            goto out;                                                                                  \
        }                                                                                              \
    } while (0)


static const char *human(size_t bytes, char *buf, size_t len)
{
    if (bytes >= (1u << 30) && bytes % (1u << 30) == 0) snprintf(buf, len, "%zu GiB", bytes >> 30);
    else if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) snprintf(buf, len, "%zu MiB", bytes >> 20);
    else snprintf(buf, len, "%zu KiB", bytes >> 10);
    return buf;
}

/* Whether the context's devices are CUDA workers (else the dry run: no GPU baselines). */
static int on_gpu(starfold_context_t ctx) { return starfold_context_mode(ctx) == STARFOLD_DEVICES_CUDA; }

/* ------------------------------------------------------------------------------------------------
 * GPU baselines, outside StarPU: plain cudaMalloc'ed buffers, timed with events (mean of iters).
 */

static double cuda_copy_us(size_t bytes, enum cudaMemcpyKind kind, int iters)
{
    void *a = NULL, *b = NULL;
    const int host_src = kind == cudaMemcpyHostToDevice, host_dst = kind == cudaMemcpyDeviceToHost;
    cudaEvent_t e0, e1;
    float ms = -1.0f;
    if ((host_src ? cudaMallocHost(&a, bytes) : cudaMalloc(&a, bytes)) != cudaSuccess) goto out;
    if ((host_dst ? cudaMallocHost(&b, bytes) : cudaMalloc(&b, bytes)) != cudaSuccess) goto out;
    if (host_src) memset(a, 1, bytes);
    else if (cudaMemset(a, 1, bytes) != cudaSuccess) goto out;
    if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) goto out;
    cudaMemcpy(b, a, bytes, kind); /* warm-up */
    cudaEventRecord(e0, 0);
    for (int i = 0; i < iters; i++) cudaMemcpyAsync(b, a, bytes, kind, 0);
    cudaEventRecord(e1, 0);
    if (cudaEventSynchronize(e1) == cudaSuccess) cudaEventElapsedTime(&ms, e0, e1);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
out:
    if (a) host_src ? cudaFreeHost(a) : cudaFree(a);
    if (b) host_dst ? cudaFreeHost(b) : cudaFree(b);
    return ms < 0 ? -1.0 : 1e3 * ms / iters;
}

static void print_us(double us)
{
    if (us < 0) printf(" %11s", "-");
    else printf(" %11.1f", us);
}

/* ------------------------------------------------------------------------------------------------
 * Replicas in the GPU's memory: one-pass against the copy bound.
 */

/* Replica r's element i: a small integer, so that sums over 8 replicas are exact in float32. It
 * depends on i only through i mod 29: filling and checking a GiB go through a table of 29. */
#define PERIOD 29
static float value_of(int r, size_t i) { return (float)((int)((i * 7 + (size_t)r * 13) % PERIOD) - 14); }

static int fill_replicas(starpu_data_handle_t *in, int n, size_t count, float *host)
{
    for (int r = 0; r < n; r++) {
        float pat[PERIOD];
        for (size_t i = 0; i < PERIOD; i++) pat[i] = value_of(r, i);
        for (size_t i = 0, k = 0; i < count; i++, k = k + 1 == PERIOD ? 0 : k + 1) host[i] = pat[k];
        if (starfold_vector_write(in[r], host, count * sizeof(float)) != STARFOLD_OK) return -1;
    }
    return 0;
}

/* Every element of the first and the last replica's output against the exact sum. */
static size_t check_outputs(starpu_data_handle_t *out, int n, size_t count, float *host)
{
    float want[PERIOD];
    for (size_t i = 0; i < PERIOD; i++) {
        want[i] = 0;
        for (int q = 0; q < n; q++) want[i] += value_of(q, i);
    }
    size_t wrong = 0;
    for (int k = 0; k < 2; k++) {
        const int r = k ? n - 1 : 0;
        if (starfold_vector_read(out[r], host, count * sizeof(float)) != STARFOLD_OK) return count;
        for (size_t i = 0, m = 0; i < count; i++, m = m + 1 == PERIOD ? 0 : m + 1) wrong += host[i] != want[m];
    }
    return wrong;
}

static int iterations_for(size_t traffic)
{
    const double it = (double)((size_t)4 << 30) / (double)traffic;
    return it > 200 ? 200 : it < 5 ? 5 : (int)it;
}

/* Compiles the one-pass all-reduce of one float32 tensor of @count elements over devices 0..n-1. */
static starfold_status_t compile_one_pass(starfold_topology_t topo, int n, const starfold_tensor_desc_t *tensors,
                                          size_t num_tensors, const char *algorithm, starfold_graph_t *graph)
{
    int devices[MAX_REPLICAS];
    for (int r = 0; r < n; r++) devices[r] = r;
    starfold_collective_desc_t d = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = n,
                                     .sources = devices, .num_tensors = num_tensors, .tensors = tensors };
    return starfold_graph_compile(topo, algorithm, &d, NULL, graph);
}

/* One size on n replicas: prints a row. */
static void replicas_row(starfold_context_t ctx, starfold_topology_t topo, int n, size_t bytes, float *host)
{
    const size_t count = bytes / sizeof(float);
    starpu_data_handle_t in[MAX_REPLICAS] = { 0 }, out[MAX_REPLICAS] = { 0 };
    starfold_graph_t graph = NULL;
    starfold_persistent_t p = NULL;
    const starfold_tensor_desc_t t = { STARFOLD_FLOAT32, count };
    const int iters = iterations_for(2 * (size_t)n * bytes);
    char hb[32];
    for (int r = 0; r < n; r++) {
        CK(starfold_vector_create(ctx, r, STARFOLD_FLOAT32, count, &in[r]));
        CK(starfold_vector_create(ctx, r, STARFOLD_FLOAT32, count, &out[r]));
    }
    if (fill_replicas(in, n, count, host) != 0) {
        FAIL("writing the replicas of %zu bytes failed: %s", bytes, starfold_last_error());
        goto out;
    }
    CK(compile_one_pass(topo, n, &t, 1, "one-pass", &graph));
    CK(starfold_persistent_create(ctx, graph, in, out, &p));
    double *us = malloc(sizeof *us * (size_t)iters);
    if (!us) goto out;
    for (int i = -2; i < iters; i++) { /* two warm-up steps */
        starfold_request_t req = NULL;
        const double t0 = starfold_tools_now();
        starfold_status_t st = starfold_persistent_start(p, &req);
        if (st == STARFOLD_OK) st = starfold_request_wait(req);
        starfold_request_destroy(req);
        if (st != STARFOLD_OK) {
            FAIL("one-pass on %d replicas of %zu bytes: %s", n, bytes, starfold_last_error());
            free(us);
            goto out;
        }
        if (i >= 0) us[i] = (starfold_tools_now() - t0) * 1e6;
    }
    double mean = 0;
    for (int i = 0; i < iters; i++) mean += us[i] / iters;
    const double med = starfold_tools_median(us, iters);
    free(us);
    const double copy = on_gpu(ctx) ? cuda_copy_us((size_t)n * bytes, cudaMemcpyDeviceToDevice, iters) : -1.0;
    const size_t wrong = check_outputs(out, n, count, host);
    printf("  %2d %10s %6d", n, human(bytes, hb, sizeof hb), iters);
    print_us(med);
    print_us(mean);
    print_us(copy);
    if (copy > 0) printf(" %8.3f %9.1f", copy / mean, 2.0 * n * bytes / (mean * 1e3));
    else printf(" %8s %9.1f", "-", 2.0 * n * bytes / (mean * 1e3));
    printf(" %6zu\n", wrong);
    if (wrong) FAIL("one-pass on %d replicas of %zu bytes: %zu wrong elements", n, bytes, wrong);
out:
    starfold_persistent_destroy(p);
    starfold_graph_destroy(graph);
    for (int r = 0; r < n; r++) {
        if (in[r]) starfold_vector_destroy(ctx, in[r]);
        if (out[r]) starfold_vector_destroy(ctx, out[r]);
    }
}

static void bench_replicas(starfold_context_t ctx, starfold_topology_t topo, size_t max_bytes)
{
    printf("\n## replicas in one memory: one-pass all-reduce (float32 SUM) against cudaMemcpy device to device of n x bytes\n");
    printf("#  n      bytes  iters   median_us     mean_us     copy_us  copy/sf  sf_GB/s  wrong\n");
    printf("#  (copy/sf: the share of the copy bound starfold reaches, on means; sf_GB/s: 2 n bytes / mean time)\n");
    float *host = malloc(max_bytes);
    if (!host) {
        FAIL("out of host memory");
        return;
    }
    const int have = starfold_context_num_devices(ctx);
    for (int n = 2; n <= MAX_REPLICAS && n <= have; n *= 2)
        for (size_t b = 4096; b <= max_bytes; b *= 4) {
            replicas_row(ctx, topo, n, b, host);
            fflush(stdout);
        }
    free(host);
}

/* ------------------------------------------------------------------------------------------------
 * One replica in host memory, one in the GPU's.
 */

static void host_row(starfold_context_t ctx, starfold_topology_t topo, size_t bytes, float *host)
{
    const size_t count = bytes / sizeof(float);
    starpu_data_handle_t in[2] = { 0 }, out[2] = { 0 };
    void *hin = NULL, *hout = NULL;
    starfold_graph_t graph = NULL;
    starfold_persistent_t p = NULL;
    const starfold_tensor_desc_t t = { STARFOLD_FLOAT32, count };
    const int iters = iterations_for(8 * bytes) > 30 ? 30 : iterations_for(8 * bytes);
    char hb[32];
    /* Replica 0 in main memory, pinned (as StarPU allocates its own host buffers for transfers). */
    if (starpu_malloc(&hin, bytes) != 0 || starpu_malloc(&hout, bytes) != 0) {
        FAIL("starpu_malloc of %zu bytes failed", bytes);
        goto out;
    }
    starpu_vector_data_register(&in[0], STARPU_MAIN_RAM, (uintptr_t)hin, (uint32_t)count, sizeof(float));
    starpu_vector_data_register(&out[0], STARPU_MAIN_RAM, (uintptr_t)hout, (uint32_t)count, sizeof(float));
    CK(starfold_vector_create(ctx, 1, STARFOLD_FLOAT32, count, &in[1]));
    CK(starfold_vector_create(ctx, 1, STARFOLD_FLOAT32, count, &out[1]));
    if (fill_replicas(in, 2, count, host) != 0) {
        FAIL("writing the replicas failed: %s", starfold_last_error());
        goto out;
    }
    CK(compile_one_pass(topo, 2, &t, 1, "one-pass", &graph));
    CK(starfold_persistent_create(ctx, graph, in, out, &p));
    double sum = 0;
    for (int i = -2; i < iters; i++) {
        const double t0 = starfold_tools_now();
        /* A new host input: write access on the host leaves the host copy the only valid one. */
        if (starpu_data_acquire(in[0], STARPU_RW) != 0) {
            FAIL("acquiring the host input failed");
            goto out;
        }
        starpu_data_release(in[0]);
        starfold_request_t req = NULL;
        starfold_status_t st = starfold_persistent_start(p, &req);
        if (st == STARFOLD_OK) st = starfold_request_wait(req);
        starfold_request_destroy(req);
        if (st != STARFOLD_OK) {
            FAIL("host + GPU replicas of %zu bytes: %s", bytes, starfold_last_error());
            goto out;
        }
        /* The host output, read where the program would read it: brought back from the GPU. */
        if (starpu_data_acquire(out[0], STARPU_R) != 0) {
            FAIL("acquiring the host output failed");
            goto out;
        }
        starpu_data_release(out[0]);
        if (i >= 0) sum += starfold_tools_now() - t0;
    }
    const double mean = sum / iters * 1e6;
    double h2d = -1, d2h = -1;
    if (on_gpu(ctx)) {
        h2d = cuda_copy_us(bytes, cudaMemcpyHostToDevice, iters);
        d2h = cuda_copy_us(bytes, cudaMemcpyDeviceToHost, iters);
    }
    const size_t wrong = check_outputs(out, 2, count, host);
    printf("  %10s %6d", human(bytes, hb, sizeof hb), iters);
    print_us(mean);
    print_us(h2d);
    print_us(d2h);
    if (h2d > 0 && d2h > 0) printf(" %8.3f %9.1f", (h2d + d2h) / mean, bytes / (h2d * 1e3));
    else printf(" %8s %9s", "-", "-");
    printf(" %6zu\n", wrong);
    if (wrong) FAIL("host + GPU replicas of %zu bytes: %zu wrong elements", bytes, wrong);
out:
    starfold_persistent_destroy(p);
    starfold_graph_destroy(graph);
    for (int r = 0; r < 2; r++) {
        if (in[r]) r == 0 ? starpu_data_unregister(in[r]) : starfold_vector_destroy(ctx, in[r]);
        if (out[r]) r == 0 ? starpu_data_unregister(out[r]) : starfold_vector_destroy(ctx, out[r]);
    }
    if (hin) starpu_free(hin);
    if (hout) starpu_free(hout);
}

static void bench_host(starfold_context_t ctx, starfold_topology_t topo, size_t max_bytes)
{
    printf("\n## one replica in host memory, one in the GPU's: one-pass all-reduce with the host input new every step and\n"
           "## the host output read back, against cudaMemcpy host to device + device to host (pinned) of the same bytes\n");
    printf("#       bytes  iters     step_us      h2d_us      d2h_us pcie/sf  h2d_GB/s  wrong\n");
    float *host = malloc(max_bytes);
    if (!host) {
        FAIL("out of host memory");
        return;
    }
    for (size_t b = (size_t)1 << 20; b <= max_bytes && b <= ((size_t)256 << 20); b *= 4) {
        host_row(ctx, topo, b, host);
        fflush(stdout);
    }
    free(host);
}

/* ------------------------------------------------------------------------------------------------
 * StarPU's cost per task.
 */

static void empty_func(void *buffers[], void *arg)
{
    (void)buffers;
    (void)arg;
}

static struct starpu_codelet empty_cl = {
    .cpu_funcs = { empty_func },
    .cuda_funcs = { empty_func },
    .cuda_flags = { STARPU_CUDA_ASYNC },
    .nbuffers = 0,
    .name = "sf_empty",
};

/* Microseconds per task on @worker: @batch tasks submitted then waited for, or each waited for. */
static double task_us(int worker, int count, int one_at_a_time)
{
    const double t0 = starfold_tools_now();
    for (int i = 0; i < count; i++) {
        struct starpu_task *t = starpu_task_create();
        t->cl = &empty_cl;
        t->execute_on_a_specific_worker = 1;
        t->workerid = (unsigned)worker;
        t->synchronous = one_at_a_time;
        if (starpu_task_submit(t) != 0) return -1;
    }
    starpu_task_wait_for_all();
    return (starfold_tools_now() - t0) * 1e6 / count;
}

static void bench_tasks(void)
{
    printf("\n## StarPU's cost per task (an empty codelet), in microseconds\n");
    printf("#  worker                  batch_us   one_at_a_time_us   (median of 5 runs of 2000 and 500 tasks)\n");
    const enum starpu_worker_archtype kinds[2] = { STARPU_CUDA_WORKER, STARPU_CPU_WORKER };
    for (int k = 0; k < 2; k++) {
        int w = -1;
        if (starpu_worker_get_ids_by_type(kinds[k], &w, 1) < 1) continue;
        char name[64];
        starpu_worker_get_name(w, name, sizeof name);
        double b[5], o[5];
        task_us(w, 200, 0); /* warm-up */
        for (int r = 0; r < 5; r++) {
            b[r] = task_us(w, 2000, 0);
            o[r] = task_us(w, 500, 1);
        }
        printf("   %-22s %9.2f %18.2f   (batch runs:", name, starfold_tools_median(b, 5), starfold_tools_median(o, 5));
        for (int r = 0; r < 5; r++) printf(" %.2f", b[r]);
        printf("; one at a time:");
        for (int r = 0; r < 5; r++) printf(" %.2f", o[r]);
        printf(")\n");
    }
}

/* ------------------------------------------------------------------------------------------------
 * A training step: GEMM tasks on the GPU, gradients all-reduced in buckets as they become ready.
 *
 *   replica r, layer l:  grad[r][l] = (r + 1 + l) * A x B           (one task per replica and layer)
 *   layers L-1 .. 0 in that order; bucket b = layers [first_b .. first_b - len_b + 1]
 *   after the last layer of bucket b is submitted: persistent one-pass start (grad -> out)
 */

typedef struct step_model {
    starfold_context_t ctx;
    int n, layers, dim, k, per_bucket;
    starpu_data_handle_t a[MAX_REPLICAS], b[MAX_REPLICAS];
    starpu_data_handle_t *grad, *out;      /* [r * layers + l] */
    sf_step_gemm_arg_t *args;              /* [r * layers + l] */
    int nbuckets;
    starfold_graph_t graph;                /* one bucket's graph: per_bucket tensors (every bucket alike) */
    starfold_persistent_t *bound;          /* [bucket] */
} step_model_t;

static void gemm_cpu(void *buffers[], void *cl_arg)
{
    const sf_step_gemm_arg_t *g = cl_arg;
    const float *A = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const float *B = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
    float *C = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
    for (int i = 0; i < g->m; i++)
        for (int j = 0; j < g->n; j++) {
            float acc = 0;
            for (int q = 0; q < g->k; q++) acc += A[(size_t)i * g->k + q] * B[(size_t)q * g->n + j];
            C[(size_t)i * g->n + j] = g->alpha * acc;
        }
}

static struct starpu_codelet gemm_cl = {
    .cpu_funcs = { gemm_cpu },
    .cuda_funcs = { sf_step_gemm_cuda },
    .cuda_flags = { STARPU_CUDA_ASYNC },
    .nbuffers = 3,
    .modes = { STARPU_R, STARPU_R, STARPU_W },
    .name = "sf_step_gemm",
};

static float a_of(size_t i, size_t q) { return (float)((int)((i + 2 * q) % 5) - 2); }
static float b_of(size_t q, size_t j) { return (float)((int)((3 * q + j) % 7) - 3); }

static int submit_layer(step_model_t *m, int l)
{
    for (int r = 0; r < m->n; r++) {
        struct starpu_task *t = starpu_task_create();
        t->cl = &gemm_cl;
        t->handles[0] = m->a[r];
        t->handles[1] = m->b[r];
        t->handles[2] = m->grad[r * m->layers + l];
        t->cl_arg = &m->args[r * m->layers + l];
        t->execute_on_a_specific_worker = 1;
        t->workerid = (unsigned)starfold_context_device_worker(m->ctx, r);
        if (starpu_task_submit(t) != 0) return -1;
    }
    return 0;
}

/* One step; returns seconds, < 0 on a failure. */
static double run_step(step_model_t *m, int compute, int reduce)
{
    starfold_request_t req[64] = { 0 };
    int ok = 1;
    const double t0 = starfold_tools_now();
    for (int l = m->layers - 1, b = 0; l >= 0 && ok; l--) {
        if (compute && submit_layer(m, l) != 0) ok = 0;
        if (reduce && ok && (m->layers - 1 - l) % m->per_bucket == m->per_bucket - 1) {
            if (starfold_persistent_start(m->bound[b], &req[b]) != STARFOLD_OK) ok = 0;
            b++;
        }
    }
    for (int b = 0; b < m->nbuckets; b++)
        if (req[b]) {
            if (starfold_request_wait(req[b]) != STARFOLD_OK) ok = 0;
            starfold_request_destroy(req[b]);
        }
    starpu_task_wait_for_all();
    const double t = starfold_tools_now() - t0;
    if (!ok) FAIL("a step failed: %s", starfold_last_error());
    return ok ? t : -1;
}

/* Every replica's reduced gradients of every layer, on a sample of elements, against the exact sum. */
static size_t check_step(step_model_t *m)
{
    const size_t count = (size_t)m->dim * m->dim;
    float *host = malloc(count * sizeof *host);
    if (!host) return 1;
    size_t wrong = 0;
    for (int l = 0; l < m->layers; l++)
        for (int r = 0; r < m->n; r++) {
            if (starfold_vector_read(m->out[r * m->layers + l], host, count * sizeof *host) != STARFOLD_OK) {
                free(host);
                return count;
            }
            float scale = 0;
            for (int q = 0; q < m->n; q++) scale += (float)(q + 1 + l);
            for (size_t s = 0; s < 4096; s++) {
                const size_t e = (s * 2654435761u) % count, i = e / (size_t)m->dim, j = e % (size_t)m->dim;
                float dot = 0;
                for (int q = 0; q < m->k; q++) dot += a_of(i, (size_t)q) * b_of((size_t)q, j);
                wrong += host[e] != scale * dot;
            }
        }
    free(host);
    return wrong;
}

static int step_setup(step_model_t *m, starfold_topology_t topo)
{
    const size_t count = (size_t)m->dim * m->dim;
    const size_t na = (size_t)m->dim * m->k;
    float *A = malloc(na * sizeof *A), *B = malloc(na * sizeof *B);
    starfold_tensor_desc_t *t = calloc((size_t)m->per_bucket, sizeof *t);
    m->grad = calloc((size_t)(m->n * m->layers), sizeof *m->grad);
    m->out = calloc((size_t)(m->n * m->layers), sizeof *m->out);
    m->args = calloc((size_t)(m->n * m->layers), sizeof *m->args);
    m->nbuckets = m->layers / m->per_bucket;
    m->bound = calloc((size_t)m->nbuckets, sizeof *m->bound);
    starpu_data_handle_t *in = calloc((size_t)(m->n * m->per_bucket), sizeof *in);
    starpu_data_handle_t *out = calloc((size_t)(m->n * m->per_bucket), sizeof *out);
    int rc = -1;
    if (!A || !B || !t || !m->grad || !m->out || !m->args || !m->bound || !in || !out) goto out;
    for (size_t i = 0; i < (size_t)m->dim; i++)
        for (size_t q = 0; q < (size_t)m->k; q++) A[i * m->k + q] = a_of(i, q);
    for (size_t q = 0; q < (size_t)m->k; q++)
        for (size_t j = 0; j < (size_t)m->dim; j++) B[q * m->dim + j] = b_of(q, j);
    for (int r = 0; r < m->n; r++) {
        CK(starfold_vector_create(m->ctx, r, STARFOLD_FLOAT32, na, &m->a[r]));
        CK(starfold_vector_create(m->ctx, r, STARFOLD_FLOAT32, na, &m->b[r]));
        CK(starfold_vector_write(m->a[r], A, na * sizeof *A));
        CK(starfold_vector_write(m->b[r], B, na * sizeof *B));
        for (int l = 0; l < m->layers; l++) {
            CK(starfold_vector_create(m->ctx, r, STARFOLD_FLOAT32, count, &m->grad[r * m->layers + l]));
            CK(starfold_vector_create(m->ctx, r, STARFOLD_FLOAT32, count, &m->out[r * m->layers + l]));
            m->args[r * m->layers + l] = (sf_step_gemm_arg_t){ m->dim, m->dim, m->k, (float)(r + 1 + l) };
        }
    }
    for (int k = 0; k < m->per_bucket; k++) t[k] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, count };
    CK(compile_one_pass(topo, m->n, t, (size_t)m->per_bucket, "one-pass", &m->graph));
    /* Bucket b: layers in production order, starfold_submit's layout (replica-major). */
    for (int b = 0; b < m->nbuckets; b++) {
        for (int r = 0; r < m->n; r++)
            for (int k = 0; k < m->per_bucket; k++) {
                const int l = m->layers - 1 - (b * m->per_bucket + k);
                in[r * m->per_bucket + k] = m->grad[r * m->layers + l];
                out[r * m->per_bucket + k] = m->out[r * m->layers + l];
            }
        CK(starfold_persistent_create(m->ctx, m->graph, in, out, &m->bound[b]));
    }
    rc = 0;
out:
    free(A), free(B), free(t), free(in), free(out);
    return rc;
}

static void step_teardown(step_model_t *m)
{
    for (int b = 0; b < m->nbuckets && m->bound; b++) starfold_persistent_destroy(m->bound[b]);
    starfold_graph_destroy(m->graph);
    for (int i = 0; i < m->n * m->layers && m->grad; i++) {
        if (m->grad[i]) starfold_vector_destroy(m->ctx, m->grad[i]);
        if (m->out[i]) starfold_vector_destroy(m->ctx, m->out[i]);
    }
    for (int r = 0; r < m->n; r++) {
        if (m->a[r]) starfold_vector_destroy(m->ctx, m->a[r]);
        if (m->b[r]) starfold_vector_destroy(m->ctx, m->b[r]);
    }
    free(m->grad), free(m->out), free(m->args), free(m->bound);
}

static void bench_step(starfold_context_t ctx, starfold_topology_t topo, int n, int layers, int dim, int k)
{
    step_model_t m;
    memset(&m, 0, sizeof m);
    m.ctx = ctx;
    m.n = n;
    m.layers = layers;
    m.dim = dim;
    m.k = k;
    m.per_bucket = 2;
    if (m.layers % m.per_bucket) m.layers++;
    const double mib = (double)dim * dim * 4 / (1 << 20);
    printf("\n## training step: %d replicas, %d layers of a %dx%d gradient (%.1f MiB) from a GEMM with k = %d\n"
           "## (%.2f GFLOP per replica and layer), buckets of %d layers all-reduced by one-pass as they become ready\n",
           n, m.layers, dim, dim, mib, k, 2.0 * dim * dim * k / 1e9, m.per_bucket);
    if (step_setup(&m, topo) != 0) {
        FAIL("training step set-up failed");
        step_teardown(&m);
        return;
    }
    if (run_step(&m, 1, 1) < 0 || run_step(&m, 1, 1) < 0) { /* warm-up: allocation, StarPU's calibration */
        step_teardown(&m);
        return;
    }
    enum { RUNS = 7 };
    double c[RUNS], r[RUNS], o[RUNS];
    for (int i = 0; i < RUNS; i++) {
        c[i] = run_step(&m, 1, 0) * 1e3;
        r[i] = run_step(&m, 0, 1) * 1e3;
        o[i] = run_step(&m, 1, 1) * 1e3;
    }
    const size_t wrong = check_step(&m);
    printf("#  run   compute_ms   reduce_ms   step_ms   step/max   step/sum\n");
    for (int i = 0; i < RUNS; i++) {
        const double mx = c[i] > r[i] ? c[i] : r[i];
        printf("   %3d %12.3f %11.3f %9.3f %10.3f %10.3f\n", i, c[i], r[i], o[i], o[i] / mx, o[i] / (c[i] + r[i]));
    }
    const double mc = starfold_tools_median(c, RUNS), mr = starfold_tools_median(r, RUNS);
    const double mo = starfold_tools_median(o, RUNS);
    printf("   med %12.3f %11.3f %9.3f %10.3f %10.3f   (medians; ratios of the medians)\n", mc, mr, mo,
           mo / (mc > mr ? mc : mr), mo / (mc + mr));
    printf("   compute: %.1f TFLOP/s on medians; gradients verified: %zu wrong of %d sampled elements\n",
           2.0 * dim * dim * k * n * m.layers / (mc * 1e-3) / 1e12, wrong, 4096 * n * m.layers);
    if (wrong) FAIL("training step: %zu wrong gradient elements", wrong);
    step_teardown(&m);
}

/* ------------------------------------------------------------------------------------------------
 * The GPU's memory, nearly full: a graph whose temporaries do not fit beside the replicas.
 *
 * 8 replicas in place take 3/4 of what StarPU gives the GPU's memory node; halving-doubling on 8 needs
 * temporaries of 7 replicas more. The pre-flight (starfold_submit) counts the temporaries against the
 * node's memory; what happens is printed: refused, run, or still waiting after 60 s (then the program
 * is left to the caller's time limit, as StarPU cannot cancel a task waiting for memory).
 */

static void bench_memory(starfold_context_t ctx, starfold_topology_t topo)
{
    const int n = 8;
    const unsigned node = (unsigned)starfold_context_device_node(ctx, 0);
    const starpu_ssize_t total = starpu_memory_get_total(node);
    printf("\n## memory: 8 replicas in place filling 3/4 of memory node %u (%.1f GiB), halving-doubling's temporaries past the rest\n",
           node, total / 1073741824.0);
    if (!on_gpu(ctx) || total <= 0 || starfold_context_num_devices(ctx) < n) {
        printf("   skipped: no GPU, StarPU gives the node no size, or fewer than 8 devices\n");
        return;
    }
    size_t count = (size_t)(total / 4 * 3 / n / (starpu_ssize_t)sizeof(float));
    if (count > UINT32_MAX) count = UINT32_MAX;
    starpu_data_handle_t h[8] = { 0 };
    starfold_graph_t graph = NULL;
    const starfold_tensor_desc_t t = { STARFOLD_FLOAT32, count };
    for (int r = 0; r < n; r++) CK(starfold_vector_create(ctx, r, STARFOLD_FLOAT32, count, &h[r]));
    CK(compile_one_pass(topo, n, &t, 1, "halving-doubling", &graph));
    starfold_graph_stats_t gs;
    CK(starfold_graph_stats(graph, &gs));
    printf("   replicas %.1f GiB, temporaries %.1f GiB, StarPU's available memory before the submit %.1f GiB\n",
           n * (double)count * sizeof(float) / 1073741824.0, gs.temp_bytes / 1073741824.0,
           starpu_memory_get_available(node) / 1073741824.0);
    fflush(stdout);
    starfold_request_t req = NULL;
    const double t0 = starfold_tools_now();
    starfold_status_t st = starfold_submit(ctx, graph, h, h, &req);
    if (st != STARFOLD_OK) {
        printf("   submit refused after %.3f s: %s (%s)\n", starfold_tools_now() - t0, starfold_status_string(st), starfold_last_error());
        goto out;
    }
    st = starfold_request_wait_timeout(req, 60.0);
    printf("   submitted; wait: %s after %.3f s%s%s\n", starfold_status_string(st), starfold_tools_now() - t0, st ? ": " : "",
           st ? starfold_last_error() : "");
    fflush(stdout);
    if (st == STARFOLD_ERR_TIMEOUT) {
        FAIL("a graph past the GPU's memory neither ran nor failed in 60 s");
        return; /* its tasks still hold the handles: nothing can be freed */
    }
    starfold_request_destroy(req);
out:
    starfold_graph_destroy(graph);
    for (int r = 0; r < n; r++)
        if (h[r]) starfold_vector_destroy(ctx, h[r]);
}

/* ------------------------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    size_t max_bytes = 0;
    const char *only = NULL;
    int layers = 8, dim = 0, k = 0, step_n = 4;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) goto usage;
        if (!strcmp(argv[i], "--max-bytes")) {
            uint64_t b = 0;
            if (starfold_tools_size_parse(argv[++i], &b) != STARFOLD_OK || b < 4096) goto usage;
            max_bytes = (size_t)b;
        }
        else if (!strcmp(argv[i], "--only")) only = argv[++i];
        else if (!strcmp(argv[i], "--layers")) layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dim")) dim = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--k")) k = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--step-replicas")) step_n = atoi(argv[++i]);
        else goto usage;
    }
    if (layers < 2 || layers > 64 || dim < 0 || k < 0 || step_n < 1 || step_n > MAX_REPLICAS) goto usage;

    starfold_context_options_t co;
    starfold_context_options_init(&co);
    starfold_context_t ctx = NULL;
    if (starfold_context_create(&co, &ctx) != STARFOLD_OK) {
        fprintf(stderr, "bench_gpu: skipped: %s\n", starfold_last_error());
        return 77;
    }
    const int gpu = on_gpu(ctx);
    starfold_context_destroy(ctx);
    /* Up to MAX_REPLICAS devices of the kind found (STARPU_NWORKER_PER_CUDA=8: 8 on one GPU). */
    co.mode = gpu ? STARFOLD_DEVICES_CUDA : STARFOLD_DEVICES_CPU;
    if (starfold_context_create(&co, &ctx) != STARFOLD_OK) return 77;
    int ndev = starfold_context_num_devices(ctx);
    if (!gpu || ndev > MAX_REPLICAS) {
        starfold_context_destroy(ctx);
        co.num_devices = MAX_REPLICAS;
        if (starfold_context_create(&co, &ctx) != STARFOLD_OK) return 77;
        ndev = MAX_REPLICAS;
    }
    if (!max_bytes) max_bytes = gpu ? (size_t)1 << 30 : (size_t)4 << 20;
    if (!dim) dim = gpu ? 4096 : 128;
    if (!k) k = gpu ? 256 : 32;

    starfold_topology_t topo = NULL;
    if (starfold_context_topology(ctx, &topo) != STARFOLD_OK) {
        fprintf(stderr, "bench_gpu: %s\n", starfold_last_error());
        starfold_context_destroy(ctx);
        return 1;
    }
    printf("# bench_gpu: %d %s devices (StarPU workers", ndev, gpu ? "CUDA" : "CPU (dry run: no CUDA worker)");
    for (int d = 0; d < ndev; d++) {
        char name[64];
        starpu_worker_get_name(starfold_context_device_worker(ctx, d), name, sizeof name);
        printf("%s%s [node %d]", d ? ", " : " ", name, starfold_context_device_node(ctx, d));
    }
    printf(")\n");
    if (gpu) {
        struct cudaDeviceProp prop;
        int rt = 0, drv = 0;
        cudaGetDeviceProperties(&prop, 0);
        cudaRuntimeGetVersion(&rt);
        cudaDriverGetVersion(&drv);
        printf("# GPU 0: %s, %.1f GiB, %d SMs, sm_%d%d; CUDA runtime %d.%d, driver API %d.%d\n", prop.name,
               prop.totalGlobalMem / 1073741824.0, prop.multiProcessorCount, prop.major, prop.minor, rt / 1000,
               rt % 1000 / 10, drv / 1000, drv % 1000 / 10);
    }
    if (!only || !strcmp(only, "replicas")) bench_replicas(ctx, topo, max_bytes);
    if (!only || !strcmp(only, "host")) bench_host(ctx, topo, max_bytes);
    if (!only || !strcmp(only, "tasks")) bench_tasks();
    if (!only || !strcmp(only, "step")) bench_step(ctx, topo, step_n < ndev ? step_n : ndev, layers, dim, k);
    if (only && !strcmp(only, "memory")) bench_memory(ctx, topo); /* last, alone: it may leave StarPU stuck */
    starfold_topology_destroy(topo);
    starfold_context_destroy(ctx);
    printf("\n# bench_gpu: %s\n", failures ? "FAILED" : "every result verified");
    return failures ? 1 : 0;
usage:
    fprintf(stderr, "usage: bench_gpu [--max-bytes SIZE] [--only replicas|host|tasks|step|memory] [--layers L] [--dim D] [--k K]\n"
                    "                 [--step-replicas N]\n");
    return 2;
}
