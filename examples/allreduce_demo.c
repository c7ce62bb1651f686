/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The main job of `./quickstart demo`: an all-reduce of a small batch of tensors across every device
 * StarPU has, compiled by hierarchical copy into a task graph, run by StarPU, verified element by
 * element on every replica against a float64 host reference, and drawn as DOT and SVG.
 *
 * Without an accelerator (this build's StarPU has no CUDA, or none is present) it runs on the
 * emulated 8-device box: eight OpenCL devices on the CPU (POCL), each with its own memory node, so
 * every transfer of the graph is a real copy between separate memories. It says so when it does.
 *
 * Usage: allreduce_demo [--out DIR] [--op sum|mean|min|max|prod] [--packs K]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* setenv, clock_gettime; StarPU's headers need POSIX declarations too */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <starfold.h>

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        starfold_status_t st_ = (call);                                                               \
        if (st_ != STARFOLD_OK) {                                                                     \
            fprintf(stderr, "allreduce_demo: %s: %s (%s)\n", #call, starfold_status_string(st_),      \
                    starfold_last_error());                                                           \
            return 1;                                                                                 \
        }                                                                                             \
    } while (0)

/* Chooses the emulated box unless the user already configured StarPU's devices. */
static int use_emulated_box(const char *out)
{
    if (getenv("STARPU_NCUDA") || getenv("STARPU_NOPENCL") || getenv("STARPU_NCPU")) return 0;
    static char home[4096], cache[4096];
    snprintf(home, sizeof home, "%s/.starpu-emulated", out);
    snprintf(cache, sizeof cache, "%s/.pocl-cache", out);
    mkdir(home, 0755);
    mkdir(cache, 0755);
    setenv("POCL_DEVICES", "pthread pthread pthread pthread pthread pthread pthread pthread", 0);
    setenv("STARPU_OPENCL_ON_CPUS", "1", 0);
    setenv("STARPU_NOPENCL", "8", 0);
    setenv("STARPU_NCPU", "0", 0);
    setenv("STARPU_SCHED", "eager", 0);
    setenv("STARPU_SILENT", "1", 0);
    setenv("STARPU_DISABLE_ASYNCHRONOUS_OPENCL_COPY", "1", 0);
    setenv("STARPU_HOME", home, 0);
    setenv("POCL_CACHE_DIR", cache, 0);
    return 1;
}

static float value(int replica, size_t t, size_t i)
{
    return (float)((int)((replica * 31 + t * 7 + i * 13) % 101) - 50) * 0.5f;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *out = getenv("SF_TEST_OUT") ? getenv("SF_TEST_OUT") : "starfold-demo";
    starfold_op_t op = STARFOLD_OP_SUM;
    int packs = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--packs") && i + 1 < argc) packs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--op") && i + 1 < argc) CHECK(starfold_op_from_string(argv[++i], &op));
        else {
            fprintf(stderr, "usage: %s [--out DIR] [--op sum|mean|min|max|prod] [--packs K]\n", argv[0]);
            return 2;
        }
    }
    mkdir(out, 0755);
    if (use_emulated_box(out))
        printf("No StarPU device configuration given: using the emulated 8-device box "
               "(8 OpenCL devices on the CPU, each with its own memory node).\n");

    starfold_context_options_t copt;
    starfold_context_options_init(&copt);
    starfold_context_t ctx;
    CHECK(starfold_context_create(&copt, &ctx));
    const int n = starfold_context_num_devices(ctx);
    const starfold_device_mode_t mode = starfold_context_mode(ctx);

    /* The topology the graph follows: the emulated box's, or the StarPU workers' own. */
    starfold_topology_t full, topo;
    if (mode == STARFOLD_DEVICES_OPENCL) CHECK(starfold_topology_builtin("emulated", &full));
    else CHECK(starfold_context_topology(ctx, &full));
    CHECK(starfold_topology_subset(full, n < starfold_topology_num_devices(full) ? n : starfold_topology_num_devices(full), &topo));
    starfold_topology_destroy(full);
    printf("Devices: %d (%s), topology '%s'\n", n,
           mode == STARFOLD_DEVICES_OPENCL ? "OpenCL" : mode == STARFOLD_DEVICES_CUDA ? "CUDA" : "CPU workers",
           starfold_topology_name(topo));

    /* A gradient-like batch: sizes that do not divide evenly into packs. */
    const starfold_tensor_desc_t tensors[4] = {
        { STARFOLD_FLOAT32, 262144 }, { STARFOLD_FLOAT32, 65536 + 3 }, { STARFOLD_FLOAT32, 1000 }, { STARFOLD_FLOAT32, 13 },
    };
    const size_t nt = 4;
    int devices[STARFOLD_MAX_DEVICES];
    for (int d = 0; d < n; d++) devices[d] = d;
    starfold_collective_desc_t desc = { STARFOLD_COLL_REDUCE, op, n, devices, 0, NULL, nt, tensors };
    starfold_algo_options_t aopt;
    starfold_algo_options_init(&aopt);
    aopt.num_packs = packs;
    starfold_graph_t graph;
    CHECK(starfold_graph_compile(topo, "hierarchical-copy", &desc, &aopt, &graph));
    CHECK(starfold_graph_check(graph));
    starfold_graph_stats_t stats;
    CHECK(starfold_graph_stats(graph, &stats));

    /* Replicas: one input and one output vector per device and tensor, allocated on that device. */
    starpu_data_handle_t *in = calloc((size_t)n * nt, sizeof *in), *res = calloc((size_t)n * nt, sizeof *res);
    float *host = malloc(tensors[0].count * sizeof(float));
    if (!in || !res || !host) return 1;
    for (int d = 0; d < n; d++)
        for (size_t t = 0; t < nt; t++) {
            CHECK(starfold_vector_create(ctx, d, STARFOLD_FLOAT32, tensors[t].count, &in[d * nt + t]));
            CHECK(starfold_vector_create(ctx, d, STARFOLD_FLOAT32, tensors[t].count, &res[d * nt + t]));
            for (size_t i = 0; i < tensors[t].count; i++) host[i] = value(d, t, i);
            CHECK(starfold_vector_write(in[d * nt + t], host, tensors[t].count * sizeof(float)));
        }

    double t0 = now();
    starfold_request_t req;
    CHECK(starfold_submit(ctx, graph, in, res, &req));
    CHECK(starfold_request_wait(req));
    double elapsed = now() - t0;
    starfold_request_destroy(req);

    /* Verify every element of every replica against a float64 reference. */
    size_t wrong = 0, total = 0;
    for (int d = 0; d < n; d++)
        for (size_t t = 0; t < nt; t++) {
            CHECK(starfold_vector_read(res[d * nt + t], host, tensors[t].count * sizeof(float)));
            for (size_t i = 0; i < tensors[t].count; i++, total++) {
                double want = value(0, t, i);
                for (int r = 1; r < n; r++) {
                    double v = value(r, t, i);
                    want = op == STARFOLD_OP_MIN ? fmin(want, v) : op == STARFOLD_OP_MAX ? fmax(want, v)
                         : op == STARFOLD_OP_PROD ? want * v : want + v;
                }
                if (op == STARFOLD_OP_MEAN) want /= n;
                if (fabs(host[i] - want) > 1e-5 * (1 + fabs(want))) wrong++;
            }
        }

    char dot[4200], svg[4200];
    snprintf(dot, sizeof dot, "%s/allreduce.dot", out);
    snprintf(svg, sizeof svg, "%s/allreduce.svg", out);
    CHECK(starfold_graph_write_dot(graph, dot));
    CHECK(starfold_graph_render(graph, svg));

    size_t bytes = 0;
    for (size_t t = 0; t < nt; t++) bytes += tensors[t].count * sizeof(float);
    printf("All-reduce (%s) of %zu tensors, %.2f MiB per replica, over %d devices with hierarchical-copy, %d packs\n",
           starfold_op_name(op), nt, bytes / 1048576.0, n, packs);
    printf("Graph: %zu tasks (%zu pack, %zu reduce, %zu scale, %zu copy, %zu unpack), %.2f MiB moved between devices, "
           "critical path %zu tasks\n",
           stats.num_tasks, stats.tasks_by_kind[STARFOLD_TASK_PACK], stats.tasks_by_kind[STARFOLD_TASK_REDUCE],
           stats.tasks_by_kind[STARFOLD_TASK_SCALE], stats.tasks_by_kind[STARFOLD_TASK_COPY],
           stats.tasks_by_kind[STARFOLD_TASK_UNPACK], stats.bytes_moved / 1048576.0, stats.critical_path_tasks);
    printf("Time: %.3f ms (emulated devices measure correctness, not speed)\n", elapsed * 1e3);
    printf("Verified: %zu of %zu elements right on all %d replicas%s\n", total - wrong, total, n,
           wrong ? " -- WRONG RESULTS" : "");
    printf("Graph written to %s and %s\n", dot, svg);

    for (size_t i = 0; i < (size_t)n * nt; i++) {
        starfold_vector_destroy(ctx, in[i]);
        starfold_vector_destroy(ctx, res[i]);
    }
    free(in);
    free(res);
    free(host);
    starfold_graph_destroy(graph);
    starfold_topology_destroy(topo);
    starfold_context_destroy(ctx);
    return wrong ? 1 : 0;
}
