/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * make bench-api: a training step's reduction through the TensorFlow-shaped API, beside the same
 * reduction through the executor, measured in one run (BENCHMARKS.md, "Lists of tensors through the
 * API").
 *
 *   bench_api [--tensors SPEC] [--devices N] [--emulated|--cuda] [-n ITERS] [-w WARMUP] [--rounds R]
 *             [--write many|each] [--only MODE]
 *
 * Each round times, in turn, the per-step cost (median over ITERS steps after WARMUP) of:
 *
 *   api batch_reduce_to   strategy.extended.batch_reduce_to(SUM, [(g_i, g_i) for each gradient]):
 *                         the list of per-replica values, each its own destination; results waited
 *                         for, then freed (a training loop's step)
 *   api run in turn + all_reduce
 *                         strategy.run(fn) with fn = replica_context.all_reduce(SUM, my gradients),
 *                         results waited for and freed inside fn, the replicas in turn on the
 *                         calling thread (the default, STARFOLD_REPLICAS_IN_TURN)
 *   api run threads + all_reduce
 *                         the same with a thread per replica
 *                         (starfold_strategy_set_replica_mode(STARFOLD_REPLICAS_THREADS))
 *   api fused tensor      batch_reduce_to of one per-replica value holding every gradient's elements
 *   exec persistent views the same graph bound once to the list laid out as views of one vector per
 *                         device (starfold_persistent_create_views()), started every step
 *   exec fused tensor     the one-tensor graph submitted every step (starfold_submit())
 *
 * and prints every round's values and the ratios to "exec fused tensor" in the same round. The
 * gradients are created once (starfold_value_create(), as a program does before its loop) and hold
 * values whose sums are exact in float32, which every step checks on one element of each result.
 *
 * --write: every step first writes its gradients from the host, as a loop whose gradients come from
 * host code does, the same bytes in every mode: the API's lists with starfold_value_write_many()
 * (many; run + all_reduce: each replica its own, in its function) or one starfold_value_write() per
 * gradient and replica (each), the fused value with one write per replica, the executor's modes
 * with one starfold_vector_write() per device.
 *
 * Exit status: 0, 1 on a failure or a wrong sum, 77 when StarPU has no worker for the mode.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starfold.h>

#include "tools.h"

typedef struct bench {
    starfold_context_t ctx;
    starfold_strategy_t strategy;
    int n;                       /* replicas = devices */
    int devices[STARFOLD_MAX_DEVICES];
    size_t nt;                   /* tensors */
    starfold_tensor_desc_t *tensors;
    size_t total;                /* elements of all tensors */
    starfold_value_t *grads;     /* [nt] per-replica values over every device */
    starfold_value_t fused;      /* one per-replica value of total elements */
    starfold_value_t *mine;      /* [n * nt] replica r's own one-component gradients (run + all_reduce) */
    int failed;
    /* --write: 0 none, 1 many, 2 each; replica r's data (total floats) and the writes made of it */
    int write;
    float *src[STARFOLD_MAX_DEVICES];
    int *comps;                  /* [n * nt] the component each write goes to */
    const void **srcs;           /* [n * nt] write r * nt + i: gradient i of replica r */
    size_t *bytes;               /* [n * nt] */
    starfold_value_t *list;      /* [n * nt] the list's writes: grads[i], component r */
    int *zeros;                  /* [nt] component 0 (a replica's writes into its own values) */
} bench_t;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define CHECK(call)                                                                                         \
    do {                                                                                                    \
        starfold_status_t st_ = (call);                                                                     \
        if (st_ != STARFOLD_OK) {                                                                           \
            fprintf(stderr, "bench_api: %s: %s (%s)\n", #call, starfold_status_string(st_), starfold_last_error()); \
            exit(1);                                                                                        \
        }                                                                                                   \
    } while (0)

/* Replica r's element value: small integers, so every sum is exact in float32. */
static float fill_of(int r)
{
    return (float)(r + 1);
}

/* The first element of @v's component 0 must be the sum over replicas of fill_of(). */
static void check_sum(bench_t *b, starfold_value_t v)
{
    float x = 0;
    CHECK(starfold_value_read(v, 0, &x, sizeof x));
    const float want = (float)(b->n * (b->n + 1) / 2);
    if (x != want && !b->failed) {
        fprintf(stderr, "bench_api: a result holds %g, the sum is %g\n", (double)x, (double)want);
        b->failed = 1;
    }
}

/* ------------------------------------------------------------------------------------------------
 * The API's steps
 */

/* The writes of --write: many at once, or one by one. */
static starfold_status_t write_values(const bench_t *b, size_t n, const starfold_value_t *values, const int *comps,
                                      const void *const *srcs, const size_t *bytes)
{
    if (b->write == 1) return starfold_value_write_many(n, values, comps, srcs, bytes);
    starfold_status_t st = STARFOLD_OK;
    for (size_t k = 0; k < n && st == STARFOLD_OK; k++) st = starfold_value_write(values[k], comps[k], srcs[k], bytes[k]);
    return st;
}

/* --write for the list modes' batch_reduce_to: every gradient of every replica. */
static void write_list(const bench_t *b)
{
    if (b->write) CHECK(write_values(b, b->nt * (size_t)b->n, b->list, b->comps, b->srcs, b->bytes));
}

/* --write for the fused value: one write per replica. */
static void write_fused(const bench_t *b)
{
    for (int r = 0; b->write && r < b->n; r++) CHECK(starfold_value_write(b->fused, r, b->src[r], sizeof(float) * b->total));
}

static void step_batch_reduce_to(bench_t *b, starfold_value_t *grads, size_t nt, int check)
{
    starfold_value_destination_pair_t *pairs = calloc(nt, sizeof *pairs);
    starfold_value_t *res = malloc(sizeof *res * nt);
    if (!pairs || !res) exit(1);
    for (size_t i = 0; i < nt; i++) pairs[i] = (starfold_value_destination_pair_t){ grads[i], starfold_destination_value(grads[i]) };
    CHECK(starfold_strategy_batch_reduce_to(b->strategy, STARFOLD_OP_SUM, nt, pairs, NULL, res));
    for (size_t i = 0; i < nt; i++) CHECK(starfold_value_wait(res[i]));
    if (check) check_sum(b, res[nt - 1]);
    for (size_t i = 0; i < nt; i++) starfold_value_destroy(res[i]);
    free(pairs);
    free(res);
}

static starfold_status_t replica_all_reduce(starfold_replica_context_t rc, void *arg)
{
    bench_t *b = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    starfold_value_t *res = malloc(sizeof *res * b->nt);
    if (!res) return STARFOLD_ERR_OUT_OF_MEMORY;
    const size_t at = (size_t)r * b->nt; /* this replica's writes: component 0 of its own values */
    starfold_status_t st = b->write ? write_values(b, b->nt, &b->mine[at], b->zeros, &b->srcs[at], &b->bytes[at]) : STARFOLD_OK;
    if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, b->nt, &b->mine[at], NULL, res);
    for (size_t i = 0; st == STARFOLD_OK && i < b->nt; i++) st = starfold_value_wait(res[i]);
    for (size_t i = 0; st == STARFOLD_OK && i < b->nt; i++) starfold_value_destroy(res[i]);
    free(res);
    return st;
}

static void step_run_all_reduce(bench_t *b)
{
    CHECK(starfold_strategy_run(b->strategy, replica_all_reduce, b));
}

/* ------------------------------------------------------------------------------------------------
 * The executor's steps
 */

typedef struct exec_side {
    starfold_graph_t list_graph, fused_graph;
    starpu_data_handle_t in[STARFOLD_MAX_DEVICES], out[STARFOLD_MAX_DEVICES];     /* the list's vectors */
    starpu_data_handle_t fin[STARFOLD_MAX_DEVICES], fout[STARFOLD_MAX_DEVICES];   /* the fused tensor's */
    starfold_persistent_t persistent;
} exec_side_t;

static void exec_setup(bench_t *b, exec_side_t *x)
{
    starfold_topology_t topo = NULL;
    CHECK(starfold_context_topology(b->ctx, &topo));
    starfold_collective_desc_t desc = {
        .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = b->n, .sources = b->devices,
        .num_destinations = b->n, .destinations = b->devices, .num_tensors = b->nt, .tensors = b->tensors,
    };
    CHECK(starfold_graph_compile(topo, "auto", &desc, NULL, &x->list_graph));
    starfold_tensor_desc_t one = { STARFOLD_FLOAT32, b->total };
    desc.num_tensors = 1;
    desc.tensors = &one;
    CHECK(starfold_graph_compile(topo, "auto", &desc, NULL, &x->fused_graph));
    starfold_topology_destroy(topo);

    float *init = malloc(sizeof *init * b->total);
    if (!init) exit(1);
    starfold_view_t *vin = malloc(sizeof *vin * b->nt * (size_t)b->n), *vout = malloc(sizeof *vout * b->nt * (size_t)b->n);
    if (!vin || !vout) exit(1);
    for (int d = 0; d < b->n; d++) {
        for (size_t k = 0; k < b->total; k++) init[k] = fill_of(d);
        CHECK(starfold_vector_create(b->ctx, b->devices[d], STARFOLD_FLOAT32, b->total, &x->in[d]));
        CHECK(starfold_vector_create(b->ctx, b->devices[d], STARFOLD_FLOAT32, b->total, &x->out[d]));
        CHECK(starfold_vector_create(b->ctx, b->devices[d], STARFOLD_FLOAT32, b->total, &x->fin[d]));
        CHECK(starfold_vector_create(b->ctx, b->devices[d], STARFOLD_FLOAT32, b->total, &x->fout[d]));
        CHECK(starfold_vector_write(x->in[d], init, sizeof *init * b->total));
        CHECK(starfold_vector_write(x->fin[d], init, sizeof *init * b->total));
        size_t at = 0;
        for (size_t i = 0; i < b->nt; i++) {
            vin[(size_t)d * b->nt + i] = (starfold_view_t){ x->in[d], at };
            vout[(size_t)d * b->nt + i] = (starfold_view_t){ x->out[d], at };
            at += b->tensors[i].count;
        }
    }
    CHECK(starfold_persistent_create_views(b->ctx, x->list_graph, vin, vout, &x->persistent));
    free(vin);
    free(vout);
    free(init);
}

static void exec_teardown(bench_t *b, exec_side_t *x)
{
    starfold_persistent_destroy(x->persistent);
    for (int d = 0; d < b->n; d++) {
        starfold_vector_destroy(b->ctx, x->in[d]);
        starfold_vector_destroy(b->ctx, x->out[d]);
        starfold_vector_destroy(b->ctx, x->fin[d]);
        starfold_vector_destroy(b->ctx, x->fout[d]);
    }
    starfold_graph_destroy(x->list_graph);
    starfold_graph_destroy(x->fused_graph);
}

/* --write for the executor's modes: one write of every element per device. */
static void exec_write(const bench_t *b, starpu_data_handle_t *vectors)
{
    for (int d = 0; b->write && d < b->n; d++) CHECK(starfold_vector_write(vectors[d], b->src[d], sizeof(float) * b->total));
}

static void step_exec_persistent(const bench_t *b, exec_side_t *x)
{
    exec_write(b, x->in);
    starfold_request_t req;
    CHECK(starfold_persistent_start(x->persistent, &req));
    CHECK(starfold_request_wait(req));
    starfold_request_destroy(req);
}

static void step_exec_fused(bench_t *b, exec_side_t *x)
{
    exec_write(b, x->fin);
    starfold_request_t req;
    CHECK(starfold_submit(b->ctx, x->fused_graph, x->fin, x->fout, &req));
    CHECK(starfold_request_wait(req));
    starfold_request_destroy(req);
}

/* ------------------------------------------------------------------------------------------------ */

enum { M_API_BATCH, M_API_RUN_TURN, M_API_RUN_THREADS, M_API_FUSED, M_EXEC_PERSISTENT, M_EXEC_FUSED, M_COUNT };
static const char *const mode_name[M_COUNT] = {
    "api batch_reduce_to", "api run in turn + all_reduce", "api run threads + all_reduce", "api fused tensor",
    "exec persistent views", "exec fused tensor",
};

/* The strategy's replica mode for @mode's steps: threads for their own mode, the default for the rest. */
static void replica_mode_for(bench_t *b, int mode)
{
    CHECK(starfold_strategy_set_replica_mode(b->strategy, mode == M_API_RUN_THREADS ? STARFOLD_REPLICAS_THREADS
                                                                                    : STARFOLD_REPLICAS_IN_TURN));
}

static void run_step(bench_t *b, exec_side_t *x, int mode, int check)
{
    switch (mode) {
    case M_API_BATCH:
        write_list(b);
        step_batch_reduce_to(b, b->grads, b->nt, check);
        break;
    case M_API_RUN_TURN:
    case M_API_RUN_THREADS: step_run_all_reduce(b); break;
    case M_API_FUSED:
        write_fused(b);
        step_batch_reduce_to(b, &b->fused, 1, check);
        break;
    case M_EXEC_PERSISTENT: step_exec_persistent(b, x); break;
    case M_EXEC_FUSED: step_exec_fused(b, x); break;
    }
}

/* --write: replica r's data, fill_of(r) everywhere, and the list's writes made of it (gradient i of
 * replica r at the elements where i starts). */
static void write_setup(bench_t *b)
{
    const size_t m = b->nt * (size_t)b->n;
    b->comps = malloc(sizeof *b->comps * m);
    b->srcs = malloc(sizeof *b->srcs * m);
    b->bytes = malloc(sizeof *b->bytes * m);
    b->list = malloc(sizeof *b->list * m);
    b->zeros = calloc(b->nt ? b->nt : 1, sizeof *b->zeros);
    if (!b->comps || !b->srcs || !b->bytes || !b->list || !b->zeros) exit(1);
    for (int r = 0; r < b->n; r++) {
        if (!(b->src[r] = malloc(sizeof(float) * (b->total ? b->total : 1)))) exit(1);
        for (size_t k = 0; k < b->total; k++) b->src[r][k] = fill_of(r);
        size_t at = 0;
        for (size_t i = 0; i < b->nt; i++) {
            const size_t w = (size_t)r * b->nt + i;
            b->list[w] = b->grads[i];
            b->comps[w] = r;
            b->srcs[w] = &b->src[r][at];
            b->bytes[w] = sizeof(float) * b->tensors[i].count;
            at += b->tensors[i].count;
        }
    }
}

static void write_teardown(bench_t *b)
{
    for (int r = 0; r < b->n; r++) free(b->src[r]);
    free(b->comps);
    free(b->srcs);
    free(b->bytes);
    free(b->list);
    free(b->zeros);
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_api [--tensors SPEC] [--devices N] [--emulated|--cuda] [-n ITERS] [-w WARMUP] [--rounds R]\n"
                    "                 [--write many|each] [--only MODE]   (MODE: the start of a mode's name, e.g. 'api batch'; the exec\n"
                    "                                  fused tensor is measured too, as the ratios' reference)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *spec = "1000x4KiB";
    int ndev = 8, iters = 30, warmup = 5, rounds = 3, emulated = 0, cuda = 0;
    const char *only = NULL; /* --only: one mode (and the reference), e.g. to profile it */
    int write = 0;           /* --write */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--emulated")) emulated = 1;
        else if (!strcmp(a, "--cuda")) cuda = 1; /* StarPU's CUDA workers (STARPU_NWORKER_PER_CUDA=8: 8 on one GPU) */
        else if (i + 1 >= argc) usage();
        else if (!strcmp(a, "--tensors")) spec = argv[++i];
        else if (!strcmp(a, "--devices")) ndev = atoi(argv[++i]);
        else if (!strcmp(a, "-n")) iters = atoi(argv[++i]);
        else if (!strcmp(a, "-w")) warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--rounds")) rounds = atoi(argv[++i]);
        else if (!strcmp(a, "--only")) only = argv[++i];
        else if (!strcmp(a, "--write")) {
            const char *w = argv[++i];
            if (!strcmp(w, "many")) write = 1;
            else if (!strcmp(w, "each")) write = 2;
            else usage();
        } else usage();
    }
    if (ndev < 1 || ndev > STARFOLD_MAX_DEVICES || iters < 1 || warmup < 0 || rounds < 1 || (emulated && cuda)) usage();

    bench_t b = { 0 };
    b.n = ndev;
    b.write = write;
    CHECK(starfold_tools_tensors_parse(spec, STARFOLD_FLOAT32, &b.tensors, &b.nt));
    for (size_t i = 0; i < b.nt; i++) b.total += b.tensors[i].count;

    starfold_context_options_t co;
    starfold_context_options_init(&co);
    co.mode = emulated ? STARFOLD_DEVICES_OPENCL : cuda ? STARFOLD_DEVICES_CUDA : STARFOLD_DEVICES_CPU;
    co.num_devices = ndev;
    starfold_status_t st = starfold_context_create(&co, &b.ctx);
    if (st == STARFOLD_ERR_NO_DEVICE) {
        fprintf(stderr, "bench_api: %s\n", starfold_last_error());
        return 77;
    }
    CHECK(st);
    for (int d = 0; d < ndev; d++) b.devices[d] = d;
    CHECK(starfold_mirrored_strategy_create(b.ctx, NULL, ndev, b.devices, NULL, &b.strategy));

    /* The gradients, created once: replica r's components hold r + 1. */
    b.grads = calloc(b.nt, sizeof *b.grads);
    b.mine = calloc(b.nt * (size_t)ndev, sizeof *b.mine);
    size_t maxc = b.total;
    float *ones = malloc(sizeof *ones * (maxc ? maxc : 1));
    if (!b.grads || !b.mine || !ones) return 1;
    for (size_t i = 0; i < b.nt; i++) {
        CHECK(starfold_value_create(b.ctx, STARFOLD_VALUE_PER_REPLICA, ndev, b.devices, STARFOLD_FLOAT32,
                                    b.tensors[i].count, NULL, &b.grads[i]));
        for (int r = 0; r < ndev; r++) {
            for (size_t k = 0; k < b.tensors[i].count; k++) ones[k] = fill_of(r);
            CHECK(starfold_value_write(b.grads[i], r, ones, sizeof *ones * b.tensors[i].count));
            CHECK(starfold_value_create(b.ctx, STARFOLD_VALUE_PER_REPLICA, 1, &b.devices[r], STARFOLD_FLOAT32,
                                        b.tensors[i].count, ones, &b.mine[(size_t)r * b.nt + i]));
        }
    }
    CHECK(starfold_value_create(b.ctx, STARFOLD_VALUE_PER_REPLICA, ndev, b.devices, STARFOLD_FLOAT32, b.total, NULL,
                                &b.fused));
    for (int r = 0; r < ndev; r++) {
        for (size_t k = 0; k < b.total; k++) ones[k] = fill_of(r);
        CHECK(starfold_value_write(b.fused, r, ones, sizeof *ones * b.total));
    }
    free(ones);
    if (write) write_setup(&b);

    exec_side_t x;
    memset(&x, 0, sizeof x);
    exec_setup(&b, &x);

    printf("# bench_api: %s, %zu tensors, %zu bytes per replica, %d replicas (%s), %d steps after %d warm-up, %d rounds%s\n",
           spec, b.nt, b.total * sizeof(float), ndev, emulated ? "OpenCL" : cuda ? "CUDA" : "CPU", iters, warmup, rounds,
           write == 1 ? ", gradients written every step (many at once)"
                      : write == 2 ? ", gradients written every step (one by one)" : "");
    printf("# per-step time (ms, median of the steps); ratio = mode / exec fused tensor of the same round\n");
    printf("# %-30s", "mode");
    for (int r = 0; r < rounds; r++) printf("  round %d        ", r + 1);
    printf("\n");

    double ms[M_COUNT][64], *t = malloc(sizeof *t * (size_t)iters);
    if (!t) return 1;
    if (rounds > 64) rounds = 64;
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < M_COUNT; m++) {
            ms[m][r] = -1;
            if (only && m != M_EXEC_FUSED && strncmp(mode_name[m], only, strlen(only)) != 0) continue;
            replica_mode_for(&b, m);
            for (int i = 0; i < warmup; i++) run_step(&b, &x, m, i == 0);
            for (int i = 0; i < iters; i++) {
                const double t0 = now();
                run_step(&b, &x, m, 0);
                t[i] = now() - t0;
            }
            ms[m][r] = 1e3 * starfold_tools_median(t, iters);
        }
    for (int m = 0; m < M_COUNT; m++) {
        if (ms[m][0] < 0) continue;
        printf("  %-30s", mode_name[m]);
        for (int r = 0; r < rounds; r++) printf("  %8.3f (%5.2fx)", ms[m][r], ms[m][r] / ms[M_EXEC_FUSED][r]);
        printf("\n");
    }
    free(t);

    exec_teardown(&b, &x);
    for (size_t i = 0; i < b.nt; i++) {
        starfold_value_destroy(b.grads[i]);
        for (int r = 0; r < ndev; r++) starfold_value_destroy(b.mine[(size_t)r * b.nt + i]);
    }
    starfold_value_destroy(b.fused);
    write_teardown(&b);
    free(b.grads);
    free(b.mine);
    starfold_strategy_destroy(b.strategy);
    starfold_context_destroy(b.ctx);
    starfold_tools_tensors_free(b.tensors);
    if (b.failed) return 1;
    return 0;
}
