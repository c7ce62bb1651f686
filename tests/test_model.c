/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The cost model against answers worked out by hand, then its verdicts on whole algorithms.
 *
 *   one transfer:   alpha + bytes / bandwidth, then overhead + kernel bytes / memory bandwidth
 *   two transfers on one directed link share it; on opposite directions they do not
 *   a task waits for its dependencies; a device runs one kernel at a time
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <starfold/topology.h>
#include <starfold/graph.h>
#include <starfold/model.h>
#include "graph/graph.h"
#include "runner.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-6 * (1 + fabs(b)))

/* Two devices joined by a 10 GB/s link with 2 us latency. */
static starfold_topology_t pair_topology(void)
{
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_create("pair", 2, &t), STARFOLD_OK);
    starfold_link_t l = { 0, 1, STARFOLD_LINK_PCIE, 1, 10.0, 2.0 };
    CU_ASSERT_EQUAL_FATAL(starfold_topology_add_link(t, &l), STARFOLD_OK);
    return t;
}

static starfold_cost_params_t params(void)
{
    starfold_cost_params_t p;
    starfold_cost_params_init(&p);
    p.task_overhead_us = 1.0;
    p.gpu_memory_GBps = 100.0;
    return p;
}

/* A broadcast 0 -> 1 of 1 MB: one copy on device 1 reading device 0. */
static void test_one_transfer(void)
{
    starfold_topology_t t = pair_topology();
    const int src[1] = { 0 }, dst[1] = { 1 };
    starfold_tensor_desc_t td = { STARFOLD_FLOAT32, 250000 }; /* 1e6 bytes */
    starfold_collective_desc_t d = { STARFOLD_COLL_BROADCAST, STARFOLD_OP_SUM, 1, src, 1, dst, 1, &td };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, "reduce-to-one", &d, NULL, &g), STARFOLD_OK);
    starfold_cost_params_t p = params();
    starfold_prediction_t r;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_simulate(g, &p, &r), STARFOLD_OK);
    /* 2 us + 1e6 B / 1e4 B/us = 102 us, then 1 us + 2e6 B / 1e5 B/us = 21 us */
    CU_ASSERT(NEAR(r.time_us, 123.0));
    CU_ASSERT_EQUAL(r.bytes, 1000000);
    CU_ASSERT(NEAR(r.algbw_GBps, 1e6 / 123.0 / 1e3));
    CU_ASSERT(NEAR(r.busbw_GBps, r.algbw_GBps)); /* broadcast: factor 1 */
    CU_ASSERT_EQUAL(r.bottleneck_from, 0);
    CU_ASSERT_EQUAL(r.bottleneck_to, 1);
    CU_ASSERT_EQUAL(r.bottleneck_kind, STARFOLD_LINK_PCIE);
    CU_ASSERT(NEAR(r.bottleneck_busy_us, 100.0));
    CU_ASSERT_EQUAL(r.bottleneck_bytes, 1000000);
    starfold_graph_destroy(g);
    starfold_topology_destroy(t);
}

/*
 * A topology may carry its machine's parameters: simulate with NULL uses them (the same 123 us as
 * test_one_transfer's explicit ones), subsets keep them, bad ones are refused and change nothing.
 */
static void test_topology_cost_params(void)
{
    starfold_topology_t t = pair_topology();
    starfold_cost_params_t p = params(), got;
    CU_ASSERT_EQUAL(starfold_topology_cost_params(t, &got), 0); /* the defaults */
    CU_ASSERT_EQUAL(got.task_overhead_us, 5.0);
    CU_ASSERT_EQUAL(starfold_topology_set_cost_params(t, &p), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_cost_params(t, &got), 1);
    CU_ASSERT_EQUAL(got.gpu_memory_GBps, 100.0);
    starfold_cost_params_t bad = p;
    bad.gpu_memory_GBps = 0;
    CU_ASSERT_EQUAL(starfold_topology_set_cost_params(t, &bad), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "bandwidths > 0"));
    bad = p;
    bad.task_overhead_us = NAN;
    CU_ASSERT_EQUAL(starfold_topology_set_cost_params(t, &bad), STARFOLD_ERR_INVALID_ARGUMENT);
    bad = p;
    bad.cpu_workers = -1;
    CU_ASSERT_EQUAL(starfold_topology_set_cost_params(t, &bad), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_set_cost_params(NULL, &p), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_cost_params(t, &got), 1); /* unchanged by the refusals */
    CU_ASSERT_EQUAL(got.gpu_memory_GBps, 100.0);
    CU_ASSERT_EQUAL(got.task_overhead_us, 1.0);

    const int src[1] = { 0 }, dst[1] = { 1 };
    starfold_tensor_desc_t td = { STARFOLD_FLOAT32, 250000 };
    starfold_collective_desc_t d = { STARFOLD_COLL_BROADCAST, STARFOLD_OP_SUM, 1, src, 1, dst, 1, &td };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, "reduce-to-one", &d, NULL, &g), STARFOLD_OK);
    starfold_prediction_t r;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_simulate(g, NULL, &r), STARFOLD_OK);
    CU_ASSERT(NEAR(r.time_us, 123.0));
    starfold_graph_destroy(g);

    starfold_topology_t sub = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_subset(t, 2, &sub), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_cost_params(sub, &got), 1);
    CU_ASSERT_EQUAL(got.task_overhead_us, 1.0);
    starfold_topology_destroy(sub);
    CU_ASSERT_EQUAL(starfold_topology_set_cost_params(t, NULL), STARFOLD_OK); /* back to the defaults */
    CU_ASSERT_EQUAL(starfold_topology_cost_params(t, &got), 0);
    CU_ASSERT_EQUAL(got.gpu_memory_GBps, 800.0);
    starfold_topology_destroy(t);
}

/* auto's choice for an all-reduce (or, with @root >= 0, a reduce to @root) of @bytes over the DGX-1. */
static const char *auto_choice(starfold_topology_t t, size_t bytes, int root, char *buf, size_t len)
{
    int dev[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    starfold_tensor_desc_t td = { STARFOLD_FLOAT32, bytes / 4 };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, dev, root >= 0 ? 1 : 0,
                                     root >= 0 ? &dev[root] : NULL, 1, &td };
    starfold_graph_t g = NULL;
    buf[0] = '\0';
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, "auto", &d, NULL, &g), STARFOLD_OK);
    snprintf(buf, len, "%s", starfold_graph_algorithm(g));
    starfold_graph_destroy(g);
    return buf;
}

static starfold_measurement_t measurement(const char *algorithm, int n, size_t bytes, double measured, double predicted)
{
    starfold_measurement_t m;
    memset(&m, 0, sizeof m);
    snprintf(m.algorithm, sizeof m.algorithm, "%s", algorithm);
    m.num_devices = n;
    m.bytes = bytes;
    m.measured_us = measured;
    m.predicted_us = predicted;
    return m;
}

/*
 * Measurements: "auto" scales each algorithm's prediction by measured / predicted, interpolated in
 * log(size) and held at the ends; only all-reduces over the measured device count. On the DGX-1 the
 * model picks the ring at 64 MiB; measurements saying the ring ran 100x slower than predicted at
 * 16 MiB move the choice away from it there and beyond (held), and back at sizes where a second
 * measurement says the ring was as predicted (interpolated: halfway in log size the factor is 10).
 */
static void test_measurements(void)
{
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_builtin("dgx1-v100", &t), STARFOLD_OK);
    char a[64], b[64];
    const size_t MiB = (size_t)1 << 20;
    CU_ASSERT_STRING_EQUAL(auto_choice(t, 64 * MiB, -1, a, sizeof a), "auto:ring");
    CU_ASSERT_EQUAL(starfold_topology_measurements(t, NULL, 0), 0);

    /* Refused, nothing changes. */
    starfold_measurement_t bad[2] = { measurement("ring", 8, 16 * MiB, 100, 1), measurement("", 8, MiB, 1, 1) };
    CU_ASSERT_EQUAL(starfold_topology_set_measurements(t, 2, bad), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "measurement 1: the algorithm name is empty"));
    bad[1] = measurement("ring", 9, MiB, 1, 1);
    CU_ASSERT_EQUAL(starfold_topology_set_measurements(t, 2, bad), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "num_devices must be 1..8, got 9"));
    bad[1] = measurement("ring", 8, 0, 1, 1);
    CU_ASSERT_EQUAL(starfold_topology_set_measurements(t, 2, bad), STARFOLD_ERR_INVALID_ARGUMENT);
    bad[1] = measurement("ring", 8, MiB, NAN, 1);
    CU_ASSERT_EQUAL(starfold_topology_set_measurements(t, 2, bad), STARFOLD_ERR_INVALID_ARGUMENT);
    bad[1] = measurement("ring", 8, MiB, 1, -1);
    CU_ASSERT_EQUAL(starfold_topology_set_measurements(t, 2, bad), STARFOLD_ERR_INVALID_ARGUMENT);
    memset(bad[1].algorithm, 'x', sizeof bad[1].algorithm); /* unterminated */
    bad[1].predicted_us = 1;
    CU_ASSERT_EQUAL(starfold_topology_set_measurements(t, 2, bad), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_set_measurements(t, 1, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_set_measurements(NULL, 0, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_measurements(t, NULL, 0), 0);

    /* The ring measured 100x its prediction at 16 MiB: not chosen there or above (held at the end). */
    starfold_measurement_t m[3] = { measurement("ring", 8, 16 * MiB, 100, 1) };
    CU_ASSERT_EQUAL_FATAL(starfold_topology_set_measurements(t, 1, m), STARFOLD_OK);
    starfold_measurement_t got[3];
    CU_ASSERT_EQUAL(starfold_topology_measurements(t, got, 3), 1);
    CU_ASSERT_STRING_EQUAL(got[0].algorithm, "ring");
    CU_ASSERT_EQUAL(got[0].bytes, 16 * MiB);
    CU_ASSERT_STRING_NOT_EQUAL(auto_choice(t, 64 * MiB, -1, a, sizeof a), "auto:ring");
    CU_ASSERT_STRING_NOT_EQUAL(auto_choice(t, 16 * MiB, -1, a, sizeof a), "auto:ring");
    /* A reduce to one device is not an all-reduce: the model alone, as before. */
    starfold_topology_t bare = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_builtin("dgx1-v100", &bare), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(auto_choice(t, 64 * MiB, 3, a, sizeof a), auto_choice(bare, 64 * MiB, 3, b, sizeof b));

    /* A second point: the ring as predicted at 1 GiB. At 64 MiB (a third of the way in log size from
     * 16 MiB to 1 GiB) the factor is 100^(2/3) = 21.5: still not the ring; at 1 GiB, the ring again. */
    m[1] = measurement("ring", 8, 1024 * MiB, 5, 5);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_set_measurements(t, 2, m), STARFOLD_OK);
    CU_ASSERT_STRING_NOT_EQUAL(auto_choice(t, 64 * MiB, -1, a, sizeof a), "auto:ring");
    CU_ASSERT_STRING_EQUAL(auto_choice(t, 1024 * MiB, -1, a, sizeof a), auto_choice(bare, 1024 * MiB, -1, b, sizeof b));

    /* Measurements of another device count say nothing of 8 devices; a subset of 4 keeps only those of
     * at most 4. */
    m[0].num_devices = m[1].num_devices = 4;
    m[2] = measurement("ring", 8, 16 * MiB, 100, 1);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_set_measurements(t, 2, m), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(auto_choice(t, 64 * MiB, -1, a, sizeof a), "auto:ring");
    CU_ASSERT_EQUAL_FATAL(starfold_topology_set_measurements(t, 3, m), STARFOLD_OK);
    starfold_topology_t sub = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_subset(t, 4, &sub), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_measurements(sub, got, 3), 2);
    CU_ASSERT_EQUAL(got[0].num_devices, 4);
    starfold_topology_destroy(sub);
    CU_ASSERT_EQUAL(starfold_topology_set_measurements(t, 0, NULL), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_measurements(t, NULL, 0), 0);
    CU_ASSERT_STRING_EQUAL(auto_choice(t, 64 * MiB, -1, a, sizeof a), "auto:ring");
    starfold_topology_destroy(bare);
    starfold_topology_destroy(t);
}

/* Two tensors broadcast 0 -> 1 at once share the link: both transfers end at 2 + 2e6/1e4 = 202 us. */
static void test_shared_link(void)
{
    starfold_topology_t t = pair_topology();
    const int src[1] = { 0 }, dst[1] = { 1 };
    starfold_tensor_desc_t td[2] = { { STARFOLD_FLOAT32, 250000 }, { STARFOLD_FLOAT32, 250000 } };
    starfold_collective_desc_t d = { STARFOLD_COLL_BROADCAST, STARFOLD_OP_SUM, 1, src, 1, dst, 2, td };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, "reduce-to-one", &d, NULL, &g), STARFOLD_OK);
    starfold_cost_params_t p = params();
    starfold_prediction_t r;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_simulate(g, &p, &r), STARFOLD_OK);
    /* transfers end together at 202 us; device 1 then runs the two 21 us kernels one after the other */
    CU_ASSERT(NEAR(r.time_us, 202.0 + 21.0 + 21.0));
    CU_ASSERT(NEAR(r.bottleneck_busy_us, 200.0));
    starfold_graph_destroy(g);
    starfold_topology_destroy(t);
}

/* An all-reduce of 2 replicas, reduce-to-one on device 0: reduce (one transfer in), copy back out. */
static void test_dependency_chain(void)
{
    starfold_topology_t t = pair_topology();
    const int src[2] = { 0, 1 };
    starfold_tensor_desc_t td = { STARFOLD_FLOAT64, 125000 }; /* 1e6 bytes */
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 2, src, 0, NULL, 1, &td };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, "reduce-to-one", &d, NULL, &g), STARFOLD_OK);
    starfold_cost_params_t p = params();
    starfold_prediction_t r;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_simulate(g, &p, &r), STARFOLD_OK);
    /* reduce on 0: 102 us in + 1 + 3e6/1e5 = 31 us; copy on 1: 102 us in + 21 us */
    CU_ASSERT(NEAR(r.time_us, 102.0 + 31.0 + 102.0 + 21.0));
    CU_ASSERT(NEAR(r.busbw_GBps, r.algbw_GBps * 1.0)); /* all-reduce of 2: 2(n-1)/n = 1 */
    starfold_graph_destroy(g);
    starfold_topology_destroy(t);
}

static double busbw(const char *topo, const char *algo, size_t bytes, int n)
{
    starfold_topology_t full = NULL, t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_builtin(topo, &full), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_subset(full, n, &t), STARFOLD_OK);
    int dev[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    starfold_tensor_desc_t td = { STARFOLD_FLOAT32, bytes / 4 };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, n, dev, 0, NULL, 1, &td };
    starfold_graph_t g = NULL;
    starfold_prediction_t r = { 0 };
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, algo, &d, NULL, &g), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_graph_simulate(g, NULL, &r), STARFOLD_OK);
    starfold_graph_destroy(g);
    starfold_topology_destroy(t);
    starfold_topology_destroy(full);
    return r.busbw_GBps;
}

/*
 * Verdicts that follow from the topology, not from tuning: TensorFlow's hierarchical copy is bound by
 * its root links, far under the line rate; the ring over the DGX-1's rings uses every NVLink and
 * cannot beat the line rate (150 GB/s on a V100, 80 on a P100).
 */
static void test_algorithm_verdicts(void)
{
    const size_t big = (size_t)256 << 20;
    double hc = busbw("dgx1-v100", "hierarchical-copy", big, 8), ring = busbw("dgx1-v100", "ring", big, 8);
    printf("\n    dgx1-v100 256 MiB: hierarchical-copy %.1f GB/s, ring %.1f GB/s busbw\n", hc, ring);
    CU_ASSERT(hc < 25.0);
    CU_ASSERT(ring > 4 * hc);
    CU_ASSERT(ring <= 150.0);
    double p_ring = busbw("dgx1-p100", "ring", big, 8);
    printf("    dgx1-p100 256 MiB: ring %.1f GB/s busbw\n", p_ring);
    CU_ASSERT(p_ring <= 80.0 && p_ring > 60.0);
}

/*
 * A backward pass of two layers of 100 us on both devices of the pair, one bucket (an all-reduce of
 * 64 KB). The bucket's kernels run beside the compute, so:
 *
 *     ready after layer 0:  layer0 | layer1          step = max(200, 100 + R) = 200 (R < 100)
 *                                  | bucket (R)
 *     ready after layer 1:  layer0 | layer1 | bucket step = 200 + R
 */
static void test_backward_pass(void)
{
    starfold_topology_t t = pair_topology();
    const int src[2] = { 0, 1 };
    starfold_tensor_desc_t td = { STARFOLD_FLOAT32, 16000 };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 2, src, 0, NULL, 1, &td };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, "reduce-to-one", &d, NULL, &g), STARFOLD_OK);
    starfold_cost_params_t p = params();
    starfold_prediction_t alone;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_simulate(g, &p, &alone), STARFOLD_OK);
    CU_ASSERT(alone.time_us > 0 && alone.time_us < 100);
    const double layers[2] = { 100.0, 100.0 };
    int ready = 0;
    starfold_backward_pass_t bp = { 2, layers, 1, &g, &ready };
    starfold_overlap_prediction_t r;
    CU_ASSERT_EQUAL_FATAL(starfold_simulate_backward_pass(&bp, &p, &r), STARFOLD_OK);
    CU_ASSERT(NEAR(r.compute_us, 200.0));
    CU_ASSERT(NEAR(r.reduce_us, alone.time_us));
    CU_ASSERT(NEAR(r.step_us, 200.0));
    CU_ASSERT(NEAR(r.vs_max, 1.0));
    CU_ASSERT(NEAR(r.vs_sum, 200.0 / (200.0 + alone.time_us)));
    ready = 1;
    CU_ASSERT_EQUAL_FATAL(starfold_simulate_backward_pass(&bp, &p, &r), STARFOLD_OK);
    CU_ASSERT(NEAR(r.step_us, 200.0 + alone.time_us));
    CU_ASSERT(NEAR(r.vs_sum, 1.0));

    /* Bad input: nothing computed, a clear status. */
    ready = 2;
    CU_ASSERT_EQUAL(starfold_simulate_backward_pass(&bp, &p, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    ready = 0;
    const double negative[2] = { 100.0, -1.0 };
    bp.layer_us = negative;
    CU_ASSERT_EQUAL(starfold_simulate_backward_pass(&bp, &p, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    bp.layer_us = layers;
    bp.num_buckets = 0;
    CU_ASSERT_EQUAL(starfold_simulate_backward_pass(&bp, &p, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    bp.num_buckets = 1;
    CU_ASSERT_EQUAL(starfold_simulate_backward_pass(NULL, &p, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_simulate_backward_pass(&bp, &p, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    /* A bucket over other devices than the first. */
    const int other[1] = { 1 };
    starfold_collective_desc_t d1 = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 1, other, 0, NULL, 1, &td };
    starfold_graph_t g1 = NULL, two[2];
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, "reduce-to-one", &d1, NULL, &g1), STARFOLD_OK);
    two[0] = g, two[1] = g1;
    const int readies[2] = { 0, 1 };
    starfold_backward_pass_t mixed = { 2, layers, 2, two, readies };
    CU_ASSERT_EQUAL(starfold_simulate_backward_pass(&mixed, &p, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_graph_destroy(g1);
    starfold_graph_destroy(g);
    starfold_topology_destroy(t);
}

/*
 * Long simulated times: the event loop must end whatever the bytes or the clock reach. At 1e6 us and
 * beyond, a flow's last bytes can take less than one ulp of the clock; such a flow once never ended
 * (8 GiB hierarchical copy, a task overhead of 10 s, a backward pass of 10 s). Each case returns, and
 * the model stays linear: twice the bytes, about twice the time.
 */
static double predict(starfold_topology_t t, const char *algorithm, uint64_t count, const starfold_cost_params_t *p)
{
    const int devs[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    const int n = starfold_topology_num_devices(t);
    starfold_tensor_desc_t td = { STARFOLD_FLOAT32, count };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, n, devs, n, devs, 1, &td };
    starfold_graph_t g = NULL;
    starfold_prediction_t r;
    r.time_us = -1;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, algorithm, &d, NULL, &g), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_graph_simulate(g, p, &r), STARFOLD_OK);
    starfold_graph_destroy(g);
    return r.time_us;
}

static void test_long_simulated_times(void)
{
    starfold_topology_t dgx = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_builtin("dgx1-v100", &dgx), STARFOLD_OK);
    const double four = predict(dgx, "hierarchical-copy", 1ull << 30, NULL);  /* 4 GiB of float32 */
    const double eight = predict(dgx, "hierarchical-copy", 1ull << 31, NULL); /* 8 GiB */
    CU_ASSERT(four > 1e5 && isfinite(eight));
    CU_ASSERT(eight / four > 1.99 && eight / four < 2.01);
    starfold_topology_destroy(dgx);

    /* A task overhead of 10 s. */
    starfold_topology_t t = pair_topology();
    starfold_cost_params_t p = params();
    p.task_overhead_us = 1e7;
    const double slow = predict(t, "reduce-to-one", 1000, &p);
    CU_ASSERT(slow >= 2e7 && slow < 1e8);

    /* A backward pass of 100 layers of 0.1 s. */
    const int src[2] = { 0, 1 };
    starfold_tensor_desc_t td = { STARFOLD_FLOAT32, 16000 };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 2, src, 2, src, 1, &td };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, "ring", &d, NULL, &g), STARFOLD_OK);
    double layers[100];
    for (int l = 0; l < 100; l++) layers[l] = 1e5;
    const int ready = 99;
    starfold_backward_pass_t bp = { 100, layers, 1, &g, &ready };
    starfold_overlap_prediction_t r;
    p = params();
    CU_ASSERT_EQUAL(starfold_simulate_backward_pass(&bp, &p, &r), STARFOLD_OK);
    CU_ASSERT(NEAR(r.compute_us, 1e7));
    CU_ASSERT(r.step_us >= 1e7 && r.step_us < 1e7 + 1e4);
    starfold_graph_destroy(g);
    starfold_topology_destroy(t);
}

/*
 * Host memory: two CPU devices, each copying 1e6 bytes into its own output at the same time. The
 * kernels share the host memory (each kernel's 2e6 bytes read + written drain at half the bandwidth
 * while both run); with one worker for both devices they run one after the other.
 *
 *     cpu_workers 0 (a worker each):  overhead + (2e6 + 2e6) / bw           (both flows share bw)
 *     cpu_workers 1:                  2 x (overhead + 2e6 / bw)            (one at a time, full bw)
 */
static void test_host_memory(void)
{
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_create("host2", 2, &t), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_set_device(t, 0, "cpu0", STARFOLD_DEVICE_CPU, 0), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_set_device(t, 1, "cpu1", STARFOLD_DEVICE_CPU, 0), STARFOLD_OK);
    starfold_link_t l = { 0, 1, STARFOLD_LINK_HOST, 1, 10.0, 1.0 };
    CU_ASSERT_EQUAL_FATAL(starfold_topology_add_link(t, &l), STARFOLD_OK);
    const int dev[2] = { 0, 1 };
    starfold_tensor_desc_t td = { STARFOLD_FLOAT32, 250000 }; /* 1e6 bytes */
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 2, dev, 2, dev, 1, &td };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold__graph_create(t, "hand", &d, &g), STARFOLD_OK);
    for (int s = 0; s < 2; s++) { /* out_s = in_s: two independent kernels, one per device */
        starfold__span_t in = starfold__whole(g, starfold__graph_input(g, s, 0)), out = starfold__whole(g, starfold__graph_output(g, s, 0));
        CU_ASSERT_EQUAL_FATAL(starfold__graph_copy(g, STARFOLD_TASK_COPY, &in, 1, &out, 1, 0, NULL), STARFOLD_OK);
    }
    starfold__graph_seal(g);
    starfold_cost_params_t p = params();
    p.cpu_memory_GBps = 10.0; /* 1e4 B/us */
    starfold_prediction_t r;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_simulate(g, &p, &r), STARFOLD_OK);
    CU_ASSERT(NEAR(r.time_us, 1.0 + 4e6 / 1e4));
    CU_ASSERT_EQUAL(r.bottleneck_from, -1); /* nothing crossed a link */
    p.cpu_workers = 1;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_simulate(g, &p, &r), STARFOLD_OK);
    CU_ASSERT(NEAR(r.time_us, 2 * (1.0 + 2e6 / 1e4)));
    /* a fixed cost per submission comes before the first task */
    p.submit_overhead_us = 50.0;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_simulate(g, &p, &r), STARFOLD_OK);
    CU_ASSERT(NEAR(r.time_us, 50.0 + 2 * (1.0 + 2e6 / 1e4)));
    CU_ASSERT(NEAR(r.algbw_GBps, (double)r.bytes / r.time_us / 1e3));
    p.submit_overhead_us = -1.0;
    CU_ASSERT_EQUAL(starfold_graph_simulate(g, &p, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    p.submit_overhead_us = 0.0;
    p.cpu_workers = -1;
    CU_ASSERT_EQUAL(starfold_graph_simulate(g, &p, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_graph_destroy(g);
    starfold_topology_destroy(t);
}

static void test_bad_input(void)
{
    starfold_prediction_t r;
    starfold_cost_params_t p = params();
    CU_ASSERT_EQUAL(starfold_graph_simulate(NULL, &p, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_topology_t t = pair_topology();
    const int src[2] = { 0, 1 };
    starfold_tensor_desc_t td = { STARFOLD_FLOAT32, 10 };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 2, src, 0, NULL, 1, &td };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, "ring", &d, NULL, &g), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_graph_simulate(g, &p, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    p.gpu_memory_GBps = 0;
    CU_ASSERT_EQUAL(starfold_graph_simulate(g, &p, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    p = params();
    p.task_overhead_us = NAN;
    CU_ASSERT_EQUAL(starfold_graph_simulate(g, &p, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_graph_destroy(g);
    starfold_topology_destroy(t);
}

int main(void)
{
    if (starfold__tu_begin() != 0) return 1;
    CU_pSuite s = CU_add_suite("model", NULL, NULL);
    CU_add_test(s, "one transfer: alpha + beta + kernel", test_one_transfer);
    CU_add_test(s, "a topology's own cost parameters", test_topology_cost_params);
    CU_add_test(s, "measurements scale auto's predictions", test_measurements);
    CU_add_test(s, "transfers share a directed link", test_shared_link);
    CU_add_test(s, "dependencies chain", test_dependency_chain);
    CU_add_test(s, "algorithm verdicts on the DGX-1", test_algorithm_verdicts);
    CU_add_test(s, "backward pass overlapped with its buckets", test_backward_pass);
    CU_add_test(s, "long simulated times end, and stay linear", test_long_simulated_times);
    CU_add_test(s, "host memory shared, CPU workers shared", test_host_memory);
    CU_add_test(s, "bad input", test_bad_input);
    const unsigned failed = starfold__tu_run();
    return failed ? 1 : 0;
}
