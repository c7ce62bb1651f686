/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The tf.distribute layer without strategies: reduce ops, communication options, values, and the
 * cross-device ops (reduce, batch_reduce, broadcast) with every dispatch path of TensorFlow's
 * CrossDeviceOps (doc/tensorflow-semantics.md sections 1-4).
 *
 * Runs on CPU-only StarPU (tests/run-test.sh: STARPU_NCPU=2): one context of 8 logical devices on
 * the CPU workers, reductions planned on the built-in "host" topology (subsets of it) or on the
 * context's own topology. The private trace of the layer (src/distribute/distribute.h) tells which path a
 * reduction took and how many graphs a batch became:
 *
 *     value devices vs destination          ops                 path
 *     {1} vs {1}                            any                 shortcut (a copy)
 *     {0,1,2,3} vs {3,2,1,0}                hierarchical-copy   all-reduce (order-insensitive match)
 *     {0,1,2,3} vs {2} or {0,1} or host     hierarchical-copy   fallback: reduce-to-one
 *     {0,1,2,3} vs anything                 reduce-to-one       reduce-to-one
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h> /* the tests look at where StarPU keeps a value's components */
#include <starfold.h>

#include "distribute/distribute.h"
#include "exec/vectors.h"
#include "util.h"
#include "runner.h"

#define NDEV 8

static starfold_context_t ctx;
static starfold_topology_t host4; /* "host" subset of 4 devices */

static int suite_init(void)
{
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = starfold__tu_device_mode(); /* CPU workers; CUDA ones on a GPU (tests/device/gpu.sh) */
    o.num_devices = NDEV;
    if (starfold_context_create(&o, &ctx) != STARFOLD_OK) return -1;
    starfold_topology_t host = NULL;
    if (starfold_topology_builtin("host", &host) != STARFOLD_OK) return -1;
    starfold_status_t st = starfold_topology_subset(host, 4, &host4);
    starfold_topology_destroy(host);
    return st == STARFOLD_OK ? 0 : -1;
}

static int suite_cleanup(void)
{
    starfold_topology_destroy(host4);
    starfold_context_destroy(ctx);
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Helpers: float32 values whose component c, element i holds base + 10 * c + i (exact in float32).
 */

static starfold_value_t make_f32(starfold_value_kind_t kind, int n, const int *devices, size_t count, float base)
{
    starfold_value_t v = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, kind, n, devices, STARFOLD_FLOAT32, count, NULL, &v), STARFOLD_OK);
    float *buf = malloc(sizeof(float) * (count ? count : 1));
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    for (int c = 0; c < n; c++) {
        for (size_t i = 0; i < count; i++) buf[i] = base + 10.0f * (float)c + (float)(i % 100);
        CU_ASSERT_EQUAL(starfold_value_write(v, c, buf, count * sizeof(float)), STARFOLD_OK);
    }
    free(buf);
    return v;
}

/* Expected element i of op over the n components of make_f32(.., base). */
static double expect_f32(starfold_op_t op, int n, size_t i, float base)
{
    double acc = 0;
    for (int c = 0; c < n; c++) {
        const double x = base + 10.0 * c + (double)(i % 100);
        if (c == 0) acc = x;
        else if (op == STARFOLD_OP_SUM || op == STARFOLD_OP_MEAN) acc += x;
        else if (op == STARFOLD_OP_MIN) acc = x < acc ? x : acc;
        else if (op == STARFOLD_OP_MAX) acc = x > acc ? x : acc;
        else acc *= x;
    }
    return op == STARFOLD_OP_MEAN ? acc / n : acc;
}

/* Every component of @v holds expect_f32(op, n, i, base) for every i. */
static int check_f32(starfold_value_t v, starfold_op_t op, int n, float base)
{
    const size_t count = starfold_value_count(v);
    float *buf = malloc(sizeof(float) * (count ? count : 1));
    int bad = 0;
    for (int c = 0; c < starfold_value_num_components(v) && buf; c++) {
        if (starfold_value_read(v, c, buf, count * sizeof(float)) != STARFOLD_OK) {
            bad++;
            continue;
        }
        for (size_t i = 0; i < count; i++) {
            const double e = expect_f32(op, n, i, base);
            if (fabs(buf[i] - e) > 1e-5 * fmax(1.0, fabs(e))) {
                if (bad++ < 3)
                    fprintf(stderr, "component %d element %zu: got %g expected %g (%s)\n", c, i, buf[i], e,
                            starfold_op_name(op));
            }
        }
    }
    free(buf);
    return bad == 0;
}

static float read_scalar_f32(starfold_value_t v, int c)
{
    float x = NAN;
    CU_ASSERT_EQUAL(starfold_value_read(v, c, &x, sizeof x), STARFOLD_OK);
    return x;
}

static starfold__trace_entry_t last_trace(void)
{
    starfold__trace_entry_t e;
    memset(&e, 0, sizeof e);
    e.path = SF_PATH_COUNT;
    const size_t n = starfold__trace_count();
    if (n > 0) starfold__trace_get((n < SF_TRACE_MAX ? n : SF_TRACE_MAX) - 1, &e);
    return e;
}

static const int dev0123[4] = { 0, 1, 2, 3 };

/* ------------------------------------------------------------------------------------------------
 * Reduce ops and options
 */

static void test_reduce_op_strings(void)
{
    static const struct {
        const char *s;
        starfold_op_t op;
    } ok[] = { { "sum", STARFOLD_OP_SUM },   { "SUM", STARFOLD_OP_SUM },   { "Sum", STARFOLD_OP_SUM },
               { "mean", STARFOLD_OP_MEAN }, { "MEAN", STARFOLD_OP_MEAN }, { "Mean", STARFOLD_OP_MEAN },
               { "min", STARFOLD_OP_MIN },   { "MAX", STARFOLD_OP_MAX },   { "prod", STARFOLD_OP_PROD } };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        starfold_op_t op = (starfold_op_t)-1;
        CU_ASSERT_EQUAL(starfold_op_from_string(ok[i].s, &op), STARFOLD_OK);
        CU_ASSERT_EQUAL(op, ok[i].op);
    }
    starfold_op_t op = STARFOLD_OP_MAX;
    CU_ASSERT_EQUAL(starfold_op_from_string("average", &op), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(op, STARFOLD_OP_MAX); /* untouched */
    CU_ASSERT_EQUAL(starfold_op_from_string(NULL, &op), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(starfold_op_name(STARFOLD_OP_MEAN), "mean");
}

static void test_options(void)
{
    starfold_communication_options_t o;
    memset(&o, 0x5a, sizeof o);
    starfold_communication_options_init(&o);
    CU_ASSERT_EQUAL(o.bytes_per_pack, 0);
    CU_ASSERT_EQUAL(o.timeout_seconds, 0.0);
    CU_ASSERT_EQUAL(o.implementation, STARFOLD_COMMUNICATION_AUTO);
    CU_ASSERT_EQUAL(o.promote_integer_mean, 0);

    /* TensorFlow's CommunicationOptions(bytes_per_pack=1024, timeout_seconds=5, implementation="ring"). */
    CU_ASSERT_EQUAL(starfold_communication_options_create(1024, 5.0, "ring", &o), STARFOLD_OK);
    CU_ASSERT_EQUAL(o.bytes_per_pack, 1024);
    CU_ASSERT_EQUAL(o.timeout_seconds, 5.0);
    CU_ASSERT_EQUAL(o.implementation, STARFOLD_COMMUNICATION_RING);
    starfold_communication_options_t keep = o;
    CU_ASSERT_EQUAL(starfold_communication_options_create(-1, 0, NULL, &o), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(starfold_last_error(), "Argument `bytes_per_pack` must be >=0, Received -1");
    CU_ASSERT_EQUAL(starfold_communication_options_create(0, -1.0, NULL, &o), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_communication_options_create(0, NAN, NULL, &o), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_communication_options_create(0, 0, "mpi", &o), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(memcmp(&o, &keep, sizeof o), 0); /* nothing changed on failure */

    starfold_communication_implementation_t impl;
    CU_ASSERT_EQUAL(starfold_communication_implementation_from_string("nccl", &impl), STARFOLD_OK);
    CU_ASSERT_EQUAL(impl, STARFOLD_COMMUNICATION_NCCL);
    CU_ASSERT_EQUAL(starfold_communication_implementation_from_string("Auto", &impl), STARFOLD_OK);
    CU_ASSERT_EQUAL(impl, STARFOLD_COMMUNICATION_AUTO);
    CU_ASSERT_STRING_EQUAL(starfold_communication_implementation_name(STARFOLD_COMMUNICATION_RING), "RING");

    /* Merge: other's non-default fields win. */
    starfold_communication_options_t a, b, m;
    CU_ASSERT_EQUAL(starfold_communication_options_create(1024, 5.0, "NCCL", &a), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_communication_options_create(0, 0, "RING", &b), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_communication_options_merge(&a, &b, &m), STARFOLD_OK);
    CU_ASSERT_EQUAL(m.bytes_per_pack, 1024);
    CU_ASSERT_EQUAL(m.timeout_seconds, 5.0);
    CU_ASSERT_EQUAL(m.implementation, STARFOLD_COMMUNICATION_RING);
    CU_ASSERT_EQUAL(starfold_communication_options_create(2048, 10.0, NULL, &b), STARFOLD_OK);
    b.promote_integer_mean = 1;
    CU_ASSERT_EQUAL(starfold_communication_options_merge(&a, &b, &m), STARFOLD_OK);
    CU_ASSERT_EQUAL(m.bytes_per_pack, 2048);
    CU_ASSERT_EQUAL(m.timeout_seconds, 10.0);
    CU_ASSERT_EQUAL(m.implementation, STARFOLD_COMMUNICATION_NCCL); /* AUTO in b: a's stays */
    CU_ASSERT_EQUAL(m.promote_integer_mean, 1);
    /* NULLs are the defaults; merging in place works. */
    CU_ASSERT_EQUAL(starfold_communication_options_merge(NULL, &a, &m), STARFOLD_OK);
    CU_ASSERT_EQUAL(memcmp(&m, &a, sizeof m), 0);
    CU_ASSERT_EQUAL(starfold_communication_options_merge(&a, NULL, &a), STARFOLD_OK);
    CU_ASSERT_EQUAL(a.bytes_per_pack, 1024);
    b.bytes_per_pack = -5;
    keep = m;
    CU_ASSERT_EQUAL(starfold_communication_options_merge(&a, &b, &m), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(memcmp(&m, &keep, sizeof m), 0);
}

/* ------------------------------------------------------------------------------------------------
 * Values
 */

static void test_values(void)
{
    const int d3[3] = { 0, 1, 2 };
    starfold_value_t v = make_f32(STARFOLD_VALUE_PER_REPLICA, 3, d3, 5, 1.0f);
    CU_ASSERT_EQUAL(starfold_value_kind(v), STARFOLD_VALUE_PER_REPLICA);
    CU_ASSERT_EQUAL(starfold_value_num_components(v), 3);
    CU_ASSERT_EQUAL(starfold_value_device(v, 2), 2);
    CU_ASSERT_EQUAL(starfold_value_device(v, 3), -2);
    CU_ASSERT_EQUAL(starfold_value_dtype(v), STARFOLD_FLOAT32);
    CU_ASSERT_EQUAL(starfold_value_count(v), 5);
    CU_ASSERT_PTR_EQUAL(starfold_value_context(v), ctx);
    CU_ASSERT_PTR_NOT_NULL(starfold_value_handle(v, 0));
    CU_ASSERT_PTR_NULL(starfold_value_handle(v, 3));
    float buf[5];
    CU_ASSERT_EQUAL(starfold_value_read(v, 1, buf, sizeof buf), STARFOLD_OK);
    CU_ASSERT_EQUAL(buf[0], 11.0f);
    CU_ASSERT_EQUAL(buf[4], 15.0f);
    CU_ASSERT_EQUAL(starfold_value_read(v, 1, buf, sizeof buf + 4), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_value_read(v, 2, buf, sizeof(float)), STARFOLD_OK); /* the first element */
    CU_ASSERT_EQUAL(buf[0], 21.0f);
    CU_ASSERT_EQUAL(starfold_value_read(v, 3, buf, sizeof buf), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_value_read(v, STARFOLD_ALL_COMPONENTS, buf, sizeof buf), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_value_wait(v), STARFOLD_OK);
    CU_ASSERT_PTR_EQUAL(starfold_value_retain(v), v);
    starfold_value_destroy(v); /* one reference left */
    CU_ASSERT_EQUAL(starfold_value_count(v), 5);
    starfold_value_destroy(v);

    /* init copied to every component; zeros without init; a mirrored value; write to all. */
    const double init[2] = { 3.5, -1.25 };
    CU_ASSERT_EQUAL(starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, 3, d3, STARFOLD_FLOAT64, 2, init, &v), STARFOLD_OK);
    double dbuf[2];
    for (int c = 0; c < 3; c++) {
        CU_ASSERT_EQUAL(starfold_value_read(v, c, dbuf, sizeof dbuf), STARFOLD_OK);
        CU_ASSERT_EQUAL(dbuf[0], 3.5);
        CU_ASSERT_EQUAL(dbuf[1], -1.25);
    }
    const double other[2] = { 7, 8 };
    CU_ASSERT_EQUAL(starfold_value_write(v, STARFOLD_ALL_COMPONENTS, other, sizeof other), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_read(v, 2, dbuf, sizeof dbuf), STARFOLD_OK);
    CU_ASSERT_EQUAL(dbuf[1], 8.0);
    starfold_value_destroy(v);
    CU_ASSERT_EQUAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 2, d3, STARFOLD_INT64, 2, NULL, &v), STARFOLD_OK);
    int64_t ibuf[2] = { 9, 9 };
    CU_ASSERT_EQUAL(starfold_value_read(v, 1, ibuf, sizeof ibuf), STARFOLD_OK);
    CU_ASSERT_EQUAL(ibuf[0], 0);
    CU_ASSERT_EQUAL(ibuf[1], 0);
    starfold_value_destroy(v);

    /* A host value. */
    const int host = STARFOLD_DEVICE_HOST;
    const float one = 1.0f;
    CU_ASSERT_EQUAL(starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, 1, &host, STARFOLD_FLOAT32, 1, &one, &v), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_device(v, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_EQUAL(starpu_data_get_home_node(starfold_value_handle(v, 0)), STARPU_MAIN_RAM);
    CU_ASSERT_EQUAL(read_scalar_f32(v, 0), 1.0f);
    starfold_value_destroy(v);

    /* Errors: nothing created. */
    starfold_value_t none = NULL;
    const int dup[2] = { 1, 1 }, hostmix[2] = { 0, STARFOLD_DEVICE_HOST }, far[1] = { NDEV };
    CU_ASSERT_EQUAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 2, dup, STARFOLD_FLOAT32, 4, NULL, &none),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "appears twice"));
    CU_ASSERT_EQUAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 2, hostmix, STARFOLD_FLOAT32, 4, NULL, &none),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, far, STARFOLD_FLOAT32, 4, NULL, &none),
                    STARFOLD_ERR_NO_DEVICE);
    CU_ASSERT_EQUAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 0, d3, STARFOLD_FLOAT32, 4, NULL, &none),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, d3, (starfold_dtype_t)19, 4, NULL, &none),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_value_create(ctx, (starfold_value_kind_t)7, 1, d3, STARFOLD_FLOAT32, 4, NULL, &none),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_value_create(NULL, STARFOLD_VALUE_PER_REPLICA, 1, d3, STARFOLD_FLOAT32, 4, NULL, &none),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(none);
    starfold_value_destroy(NULL);
}

static void test_wrap(void)
{
    /* The application's own handles: wrapped without copy, never unregistered by starfold. */
    starpu_data_handle_t h[3], h64, hshort;
    for (int c = 0; c < 3; c++) CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, c, STARFOLD_FLOAT32, 4, &h[c]), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, 2, STARFOLD_FLOAT64, 4, &h64), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, 2, STARFOLD_FLOAT32, 3, &hshort), STARFOLD_OK);
    const int d3[3] = { 0, 1, 2 };
    starfold_value_t v = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_wrap(ctx, STARFOLD_VALUE_PER_REPLICA, 3, d3, h, STARFOLD_FLOAT32, &v), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_count(v), 4);
    CU_ASSERT_PTR_EQUAL(starfold_value_handle(v, 1), h[1]);
    const float x[4] = { 1, 2, 3, 4 };
    CU_ASSERT_EQUAL(starfold_vector_write(h[1], x, sizeof x), STARFOLD_OK); /* written through the handle... */
    float y[4] = { 0 };
    CU_ASSERT_EQUAL(starfold_value_read(v, 1, y, sizeof y), STARFOLD_OK); /* ...seen through the value */
    CU_ASSERT_EQUAL(memcmp(x, y, sizeof x), 0);
    starfold_value_destroy(v);
    memset(y, 0, sizeof y);
    CU_ASSERT_EQUAL(starfold_vector_read(h[1], y, sizeof y), STARFOLD_OK); /* still registered */
    CU_ASSERT_EQUAL(memcmp(x, y, sizeof x), 0);

    starfold_value_t none = NULL;
    starpu_data_handle_t bad[3] = { h[0], h[1], h64 };
    CU_ASSERT_EQUAL(starfold_value_wrap(ctx, STARFOLD_VALUE_PER_REPLICA, 3, d3, bad, STARFOLD_FLOAT32, &none),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "bytes"));
    bad[2] = hshort;
    CU_ASSERT_EQUAL(starfold_value_wrap(ctx, STARFOLD_VALUE_PER_REPLICA, 3, d3, bad, STARFOLD_FLOAT32, &none),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "same count"));
    bad[2] = NULL;
    CU_ASSERT_EQUAL(starfold_value_wrap(ctx, STARFOLD_VALUE_PER_REPLICA, 3, d3, bad, STARFOLD_FLOAT32, &none),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(none);
    for (int c = 0; c < 3; c++) starfold_vector_destroy(ctx, h[c]);
    starfold_vector_destroy(ctx, h64);
    starfold_vector_destroy(ctx, hshort);
}

static void test_regroup(void)
{
    const int d[3] = { 0, 1, 2 };
    starfold_value_t parts[3];
    for (int i = 0; i < 3; i++) parts[i] = make_f32(STARFOLD_VALUE_PER_REPLICA, 1, &d[i], 2, (float)(100 * i));
    starfold_value_t same[3] = { parts[1], parts[1], parts[1] }, g = NULL;
    CU_ASSERT_EQUAL(starfold_value_regroup(STARFOLD_VALUE_PER_REPLICA, 3, same, &g), STARFOLD_OK);
    CU_ASSERT_PTR_EQUAL(g, parts[1]); /* identical objects collapse, as TensorFlow's regroup */
    starfold_value_destroy(g);
    CU_ASSERT_EQUAL(starfold_value_regroup(STARFOLD_VALUE_PER_REPLICA, 3, parts, &g), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_num_components(g), 3);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(starfold_value_device(g, i), i);
        CU_ASSERT_PTR_EQUAL(starfold_value_handle(g, i), starfold_value_handle(parts[i], 0)); /* no copy */
    }
    /* The group keeps its parts alive. */
    for (int i = 0; i < 3; i++) starfold_value_destroy(parts[i]);
    CU_ASSERT_EQUAL(read_scalar_f32(g, 2), 200.0f);
    starfold_value_t none = NULL;
    starfold_value_t a = make_f32(STARFOLD_VALUE_PER_REPLICA, 1, &d[0], 2, 0), b = make_f32(STARFOLD_VALUE_PER_REPLICA, 1, &d[0], 2, 0);
    starfold_value_t clash[2] = { a, b }, multi[2] = { g, a };
    CU_ASSERT_EQUAL(starfold_value_regroup(STARFOLD_VALUE_PER_REPLICA, 2, clash, &none), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_value_regroup(STARFOLD_VALUE_PER_REPLICA, 2, multi, &none), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(none);
    starfold_value_destroy(a);
    starfold_value_destroy(b);
    starfold_value_destroy(g);
}

/* ------------------------------------------------------------------------------------------------
 * Cross-device ops objects
 */

static void test_ops_objects(void)
{
    for (int i = 0; i < starfold_algorithm_count(); i++) {
        starfold_cross_device_ops_t ops = NULL;
        CU_ASSERT_EQUAL(starfold_cross_device_ops_create(starfold_algorithm_name(i), NULL, NULL, &ops), STARFOLD_OK);
        CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(ops), starfold_algorithm_name(i));
        starfold_cross_device_ops_destroy(ops);
    }
    starfold_cross_device_ops_t ops = NULL;
    CU_ASSERT_EQUAL(starfold_cross_device_ops_create("nccl", NULL, NULL, &ops), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(starfold_hierarchical_copy_all_reduce_create(-1, &ops), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(starfold_last_error(), "HierarchicalCopy requires num_packs >= 0, but -1 is specified");
    CU_ASSERT_EQUAL(starfold_reduction_to_one_device_create(-2, &ops), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(ops);

    CU_ASSERT_EQUAL(starfold_hierarchical_copy_all_reduce_create(0, &ops), STARFOLD_OK);
    starfold_algo_options_t ao;
    CU_ASSERT_EQUAL(starfold_cross_device_ops_options(ops, &ao), STARFOLD_OK);
    CU_ASSERT_EQUAL(ao.num_packs, 0);
    CU_ASSERT_PTR_EQUAL(starfold_cross_device_ops_retain(ops), ops);
    starfold_cross_device_ops_destroy(ops);
    starfold_cross_device_ops_destroy(ops);
    CU_ASSERT_EQUAL(starfold_reduction_to_one_device_create(3, &ops), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_options(ops, &ao), STARFOLD_OK);
    CU_ASSERT_EQUAL(ao.reduce_to_device, 3);
    CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(ops), "reduce-to-one");
    starfold_cross_device_ops_destroy(ops);
    /* reduce_to_device beyond the topology it plans on. */
    starfold_algo_options_init(&ao);
    ao.reduce_to_device = 4;
    CU_ASSERT_EQUAL(starfold_cross_device_ops_create("reduce-to-one", &ao, host4, &ops), STARFOLD_ERR_INVALID_ARGUMENT);
}

/* ------------------------------------------------------------------------------------------------
 * reduce
 */

/* All-reduce of a 4-component value with every op, through every algorithm. */
static void test_all_reduce_every_op(void)
{
    for (int a = 0; a < starfold_algorithm_count(); a++) {
        starfold_cross_device_ops_t ops = NULL;
        CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create(starfold_algorithm_name(a), NULL, host4, &ops), STARFOLD_OK);
        const int all_reduce = strcmp(starfold_algorithm_name(a), "reduce-to-one") != 0;
        for (int o = 0; o < STARFOLD_OP_COUNT; o++) {
            const starfold_op_t op = (starfold_op_t)o;
            /* PROD stays exact (and in float32's 24 bits) with 7 elements of base 0.5. */
            const size_t count = op == STARFOLD_OP_PROD ? 7 : 1001;
            const float base = op == STARFOLD_OP_PROD ? 0.5f : -20.0f;
            starfold_value_t v = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, count, base), r = NULL;
            const starfold_destination_t dst = starfold_destination_value(v);
            starfold__trace_reset();
            CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(ops, op, v, &dst, NULL, &r), STARFOLD_OK);
            /* One graph (asking for handles below moves components out of the arena: more copies). */
            CU_ASSERT_EQUAL(starfold__trace_count(), 1);
            CU_ASSERT_EQUAL(last_trace().path, all_reduce ? SF_PATH_ALL_REDUCE : SF_PATH_REDUCE);
            CU_ASSERT_EQUAL(starfold_value_kind(r), STARFOLD_VALUE_MIRRORED);
            CU_ASSERT_EQUAL(starfold_value_num_components(r), 4);
            for (int c = 0; c < 4; c++) CU_ASSERT_EQUAL(starfold_value_device(r, c), c);
            CU_ASSERT_NOT_EQUAL(starfold_value_handle(r, 0), starfold_value_handle(v, 0));
            CU_ASSERT_TRUE(check_f32(r, op, 4, base));
            float first;
            CU_ASSERT_EQUAL(starfold_value_read(v, 3, &first, sizeof first), STARFOLD_OK);
            CU_ASSERT_EQUAL(first, base + 30.0f); /* input unchanged */
            starfold_value_destroy(r);
            starfold_value_destroy(v);
        }
        starfold_cross_device_ops_destroy(ops);
    }
}

/*
 * The same reduction twice (a training step after another): the second borrows the graph the first
 * compiled; a different size compiles anew; results right every time.
 */
static void test_graph_cache(void)
{
    starfold_cross_device_ops_t ops = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("ring", NULL, host4, &ops), STARFOLD_OK);
    const size_t counts[3] = { 1001, 1001, 77 };
    for (int k = 0; k < 3; k++) {
        starfold_value_t v = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, counts[k], -20.0f), r = NULL;
        const starfold_destination_t dst = starfold_destination_value(v);
        CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(ops, STARFOLD_OP_SUM, v, &dst, NULL, &r), STARFOLD_OK);
        CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_SUM, 4, -20.0f));
        CU_ASSERT_EQUAL(ops->cache_hits, k == 0 ? 0u : 1u);
        starfold_value_destroy(r);
        starfold_value_destroy(v);
    }
    starfold_cross_device_ops_destroy(ops);
}

static void test_destinations(void)
{
    starfold_cross_device_ops_t hc = NULL, r2o = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_hierarchical_copy_all_reduce_create(1, &hc), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_reduction_to_one_device_create(3, &r2o), STARFOLD_OK);
    starfold_value_t v = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, 33, 1.0f), r = NULL;

    /* Empty destinations, as TensorFlow's check_destinations. */
    starfold_destination_t empty;
    memset(&empty, 0, sizeof empty);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &empty, NULL, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "destinations can not be empty"));
    const starfold_destination_t nullv = starfold_destination_value(NULL);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &nullv, NULL, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "destinations can not be empty"));
    starfold_destination_t weird = { (starfold_destination_kind_t)42, 0, NULL };
    CU_ASSERT_EQUAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &weird, NULL, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    const starfold_destination_t far = starfold_destination_device(NDEV);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &far, NULL, &r), STARFOLD_ERR_NO_DEVICE);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, NULL, NULL, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(r);

    /* Same devices in another order: still an all-reduce; components in the destination's order. */
    const int rev[4] = { 3, 2, 1, 0 };
    starfold_value_t w = make_f32(STARFOLD_VALUE_MIRRORED, 4, rev, 33, 0.0f);
    starfold_destination_t d = starfold_destination_value(w);
    starfold__trace_reset();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_ALL_REDUCE);
    CU_ASSERT_STRING_EQUAL(last_trace().algorithm, "hierarchical-copy");
    for (int c = 0; c < 4; c++) CU_ASSERT_EQUAL(starfold_value_device(r, c), rev[c]);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_SUM, 4, 1.0f));
    starfold_value_destroy(r);

    /* The same devices named as a list: no value to allocate, the same all-reduce. */
    d = starfold_destination_devices(4, rev);
    starfold__trace_reset();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_ALL_REDUCE);
    for (int c = 0; c < 4; c++) CU_ASSERT_EQUAL(starfold_value_device(r, c), rev[c]);
    CU_ASSERT_EQUAL(starfold_value_kind(r), STARFOLD_VALUE_MIRRORED);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_SUM, 4, 1.0f));
    starfold_value_destroy(r);
    /* A list of other devices: the fallback, reduced on the first of them. */
    const int d51[2] = { 5, 1 };
    d = starfold_destination_devices(2, d51);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_MAX, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_FALLBACK);
    CU_ASSERT_EQUAL(last_trace().reduce_device, 5);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), 5);
    CU_ASSERT_EQUAL(starfold_value_device(r, 1), 1);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_MAX, 4, 1.0f));
    starfold_value_destroy(r);
    /* Bad lists: a status and its reason, no result. */
    r = NULL;
    const int twice[2] = { 1, 1 }, neg[2] = { 1, -5 }, host[1] = { STARFOLD_DEVICE_HOST };
    d = starfold_destination_devices(0, rev);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "destinations can not be empty"));
    d = starfold_destination_devices(2, twice);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "destination device 1 is listed twice"));
    d = starfold_destination_devices(2, neg);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "destination device -5 is not a device"));
    d = starfold_destination_devices(1, host);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "starfold_destination_host()"));
    d = starfold_destination_devices(STARFOLD_MAX_DEVICES + 1, rev);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(r);

    /* One device that is a source: the fallback (reduce-to-one on that device). */
    d = starfold_destination_device(2);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_FALLBACK);
    CU_ASSERT_EQUAL(last_trace().reduce_device, 2);
    CU_ASSERT_EQUAL(starfold_value_num_components(r), 1);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), 2);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_SUM, 4, 1.0f));
    starfold_value_destroy(r);

    /* A subset of the devices: fallback, reduced on the first destination device. */
    const int d56[2] = { 5, 1 };
    starfold_value_t sub = make_f32(STARFOLD_VALUE_MIRRORED, 2, d56, 33, 0.0f);
    d = starfold_destination_value(sub);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_MAX, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_FALLBACK);
    CU_ASSERT_EQUAL(last_trace().reduce_device, 5);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), 5);
    CU_ASSERT_EQUAL(starfold_value_device(r, 1), 1);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_MAX, 4, 1.0f));
    starfold_value_destroy(r);
    starfold_value_destroy(sub);

    /* The host: fallback on the value's first device, result one host component. */
    d = starfold_destination_host();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_FALLBACK);
    CU_ASSERT_EQUAL(last_trace().reduce_device, 0);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_EQUAL(starpu_data_get_home_node(starfold_value_handle(r, 0)), STARPU_MAIN_RAM);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_SUM, 4, 1.0f));
    /* A host value as a destination is the host too. */
    starfold_value_t onhost = r;
    d = starfold_destination_value(onhost);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_MIN, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_MIN, 4, 1.0f));
    starfold_value_destroy(r);
    starfold_value_destroy(onhost);

    /* ReductionToOneDevice(reduce_to_device=3): always reduced on 3, whatever the destination. */
    d = starfold_destination_device(1);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(r2o, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_REDUCE);
    CU_ASSERT_EQUAL(last_trace().reduce_device, 3);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), 1);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_SUM, 4, 1.0f));
    starfold_value_destroy(r);
    d = starfold_destination_value(v); /* an all-reduce request: ReductionToOneDevice still reduces on 3 */
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(r2o, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_REDUCE);
    CU_ASSERT_EQUAL(last_trace().reduce_device, 3);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_SUM, 4, 1.0f));
    starfold_value_destroy(r);

    starfold_value_destroy(w);
    starfold_value_destroy(v);
    starfold_cross_device_ops_destroy(hc);
    starfold_cross_device_ops_destroy(r2o);
}

static void test_one_value_shortcut(void)
{
    starfold_cross_device_ops_t hc = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_hierarchical_copy_all_reduce_create(1, &hc), STARFOLD_OK);
    const int one = 1;
    starfold_value_t v = make_f32(STARFOLD_VALUE_PER_REPLICA, 1, &one, 10, 4.0f), r = NULL;
    for (int o = 0; o < STARFOLD_OP_COUNT; o++) {
        starfold_destination_t d = starfold_destination_device(1);
        starfold__trace_reset();
        CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, (starfold_op_t)o, v, &d, NULL, &r), STARFOLD_OK);
        CU_ASSERT_EQUAL(last_trace().path, SF_PATH_SHORTCUT);
        CU_ASSERT_EQUAL(starfold_value_device(r, 0), 1);
        CU_ASSERT_PTR_NOT_EQUAL(starfold_value_handle(r, 0), starfold_value_handle(v, 0)); /* a copy, not an alias */
        CU_ASSERT_TRUE(check_f32(r, (starfold_op_t)o, 1, 4.0f));
        starfold_value_destroy(r);
    }
    /* The value itself as destination: also the shortcut. */
    starfold_destination_t d = starfold_destination_value(v);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_MEAN, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_SHORTCUT);
    starfold_value_destroy(r);
    /* Another device: not the shortcut (a reduce of one component then a copy). */
    d = starfold_destination_device(2);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_FALLBACK);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), 2);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_SUM, 1, 4.0f));
    starfold_value_destroy(r);
    /* Host to host. */
    const int host = STARFOLD_DEVICE_HOST;
    const float x = 2.5f;
    starfold_value_t hv = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, 1, &host, STARFOLD_FLOAT32, 1, &x, &hv),
                          STARFOLD_OK);
    d = starfold_destination_host();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, hv, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_SHORTCUT);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_EQUAL(read_scalar_f32(r, 0), 2.5f);
    starfold_value_destroy(r);
    /* Host to devices. */
    d = starfold_destination_device(3);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, hv, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), 3);
    CU_ASSERT_EQUAL(read_scalar_f32(r, 0), 2.5f);
    starfold_value_destroy(r);
    starfold_value_destroy(hv);
    starfold_value_destroy(v);
    starfold_cross_device_ops_destroy(hc);
}

/* ------------------------------------------------------------------------------------------------
 * batch_reduce
 */

static void test_batch_reduce(void)
{
    starfold_cross_device_ops_t hc = NULL, r2o = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("hierarchical-copy", NULL, host4, &hc), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_reduction_to_one_device_create(-1, &r2o), STARFOLD_OK);
    const int shuffled[4] = { 3, 1, 0, 2 };
    starfold_value_t a = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, 100, 0.0f);
    starfold_value_t b = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, shuffled, 7, 1000.0f);
    starfold_value_t c = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, 1, -500.0f);
    /* A float64 value in the same batch: mixed dtypes in one graph. */
    starfold_value_t e = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 4, dev0123, STARFOLD_FLOAT64, 3, NULL, &e),
                          STARFOLD_OK);
    for (int k = 0; k < 4; k++) {
        const double x[3] = { k, 2.0 * k, 0.25 };
        CU_ASSERT_EQUAL(starfold_value_write(e, k, x, sizeof x), STARFOLD_OK);
    }

    /* All matching (b lists the devices in another order): ONE graph with every tensor. */
    starfold_value_destination_pair_t pairs[4] = {
        { a, starfold_destination_value(a) },
        { b, starfold_destination_value(b) },
        { e, starfold_destination_value(e) },
        { c, starfold_destination_value(c) },
    };
    starfold_value_t res[4] = { NULL };
    starfold__trace_reset();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_batch_reduce(hc, STARFOLD_OP_SUM, 4, pairs, NULL, res), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold__trace_count(), 1);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_ALL_REDUCE);
    CU_ASSERT_EQUAL(last_trace().num_tensors, 4);
    /* a and b were made one after another (b's run follows a's on each device, whatever b's device
     * order): one graph tensor; e (float64) breaks the run before c. */
    CU_ASSERT_EQUAL(last_trace().num_graph_tensors, 3);
    /* One result per pair, in input order, each over its pair's destination devices in their order. */
    CU_ASSERT_TRUE(check_f32(res[0], STARFOLD_OP_SUM, 4, 0.0f));
    CU_ASSERT_EQUAL(starfold_value_count(res[1]), 7);
    for (int k = 0; k < 4; k++) CU_ASSERT_EQUAL(starfold_value_device(res[1], k), shuffled[k]);
    CU_ASSERT_TRUE(check_f32(res[1], STARFOLD_OP_SUM, 4, 1000.0f));
    CU_ASSERT_EQUAL(starfold_value_dtype(res[2]), STARFOLD_FLOAT64);
    double de[3];
    CU_ASSERT_EQUAL(starfold_value_read(res[2], 3, de, sizeof de), STARFOLD_OK);
    CU_ASSERT_EQUAL(de[0], 6.0);
    CU_ASSERT_EQUAL(de[1], 12.0);
    CU_ASSERT_EQUAL(de[2], 1.0);
    CU_ASSERT_TRUE(check_f32(res[3], STARFOLD_OP_SUM, 4, -500.0f));
    for (int i = 0; i < 4; i++) starfold_value_destroy(res[i]);

    /* One pair mismatching: the matching pairs still share one all-reduce graph, the other falls back. */
    pairs[1].destinations = starfold_destination_device(2);
    starfold__trace_reset();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_batch_reduce(hc, STARFOLD_OP_MEAN, 4, pairs, NULL, res), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold__trace_count(), 2);
    starfold__trace_entry_t t0, t1;
    starfold__trace_get(0, &t0);
    starfold__trace_get(1, &t1);
    CU_ASSERT_EQUAL(t0.path, SF_PATH_ALL_REDUCE);
    CU_ASSERT_EQUAL(t0.num_tensors, 3);
    CU_ASSERT_EQUAL(t1.path, SF_PATH_FALLBACK);
    CU_ASSERT_EQUAL(t1.num_tensors, 1);
    CU_ASSERT_TRUE(check_f32(res[0], STARFOLD_OP_MEAN, 4, 0.0f));
    CU_ASSERT_EQUAL(starfold_value_num_components(res[1]), 1);
    CU_ASSERT_EQUAL(starfold_value_device(res[1], 0), 2);
    CU_ASSERT_TRUE(check_f32(res[1], STARFOLD_OP_MEAN, 4, 1000.0f));
    CU_ASSERT_TRUE(check_f32(res[3], STARFOLD_OP_MEAN, 4, -500.0f));
    for (int i = 0; i < 4; i++) starfold_value_destroy(res[i]);

    /* ReductionToOneDevice: TensorFlow reduces pair by pair; starfold packs the same-device pairs into one graph. */
    pairs[1].destinations = starfold_destination_value(a);
    starfold__trace_reset();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_batch_reduce(r2o, STARFOLD_OP_SUM, 4, pairs, NULL, res), STARFOLD_OK);
    /* b's sources are in another order (its reduction order): its own graph. */
    CU_ASSERT_EQUAL(starfold__trace_count(), 2);
    starfold__trace_get(0, &t0);
    CU_ASSERT_EQUAL(t0.path, SF_PATH_REDUCE);
    CU_ASSERT_EQUAL(t0.num_tensors, 3);
    for (int k = 0; k < 4; k++) CU_ASSERT_EQUAL(starfold_value_device(res[1], k), k);
    CU_ASSERT_TRUE(check_f32(res[1], STARFOLD_OP_SUM, 4, 1000.0f));
    CU_ASSERT_TRUE(check_f32(res[3], STARFOLD_OP_SUM, 4, -500.0f));
    for (int i = 0; i < 4; i++) starfold_value_destroy(res[i]);

    /* Errors: empty batch, a bad pair; results untouched. */
    starfold_value_t sentinel = (starfold_value_t)&sentinel;
    res[0] = sentinel;
    CU_ASSERT_EQUAL(starfold_cross_device_ops_batch_reduce(hc, STARFOLD_OP_SUM, 0, pairs, NULL, res),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "at least one"));
    memset(&pairs[2].destinations, 0, sizeof pairs[2].destinations);
    starfold__trace_reset();
    CU_ASSERT_EQUAL(starfold_cross_device_ops_batch_reduce(hc, STARFOLD_OP_SUM, 4, pairs, NULL, res),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "destinations can not be empty"));
    CU_ASSERT_EQUAL(starfold__trace_count(), 0); /* nothing submitted */
    CU_ASSERT_PTR_EQUAL(res[0], sentinel);

    starfold_value_destroy(a);
    starfold_value_destroy(b);
    starfold_value_destroy(c);
    starfold_value_destroy(e);
    starfold_cross_device_ops_destroy(hc);
    starfold_cross_device_ops_destroy(r2o);
}

/* Packing options reach the algorithm and keep the results right. */
static void test_packing(void)
{
    const int packs[] = { 0, 1, 3 };
    const int64_t bpp[] = { 0, 64, 100000 };
    starfold_value_t v[3];
    for (int i = 0; i < 3; i++) v[i] = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, (size_t)(17 * (i + 1)), (float)i);
    for (size_t p = 0; p < 3; p++)
        for (size_t b = 0; b < 3; b++) {
            starfold_cross_device_ops_t hc = NULL;
            CU_ASSERT_EQUAL_FATAL(starfold_hierarchical_copy_all_reduce_create(packs[p], &hc), STARFOLD_OK);
            starfold_communication_options_t o;
            CU_ASSERT_EQUAL(starfold_communication_options_create(bpp[b], 0, NULL, &o), STARFOLD_OK);
            starfold_value_destination_pair_t pairs[3];
            for (int i = 0; i < 3; i++) pairs[i] = (starfold_value_destination_pair_t){ v[i], starfold_destination_value(v[i]) };
            starfold_value_t res[3];
            CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_batch_reduce(hc, STARFOLD_OP_SUM, 3, pairs, &o, res), STARFOLD_OK);
            for (int i = 0; i < 3; i++) {
                CU_ASSERT_TRUE(check_f32(res[i], STARFOLD_OP_SUM, 4, (float)i));
                starfold_value_destroy(res[i]);
            }
            starfold_cross_device_ops_destroy(hc);
        }
    for (int i = 0; i < 3; i++) starfold_value_destroy(v[i]);
}

/* ------------------------------------------------------------------------------------------------
 * Runs: values made one after another reduce as one tensor
 */

static const int dev4567[4] = { 4, 5, 6, 7 };

/* An int64 value over devices 4..7 whose component c, element i holds base + 1000 * c + i % 1000. */
static starfold_value_t make_i64(size_t count, int64_t base)
{
    starfold_value_t v = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 4, dev4567, STARFOLD_INT64, count, NULL, &v),
                          STARFOLD_OK);
    int64_t *buf = malloc(sizeof *buf * count);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    for (int c = 0; c < 4; c++) {
        for (size_t i = 0; i < count; i++) buf[i] = base + 1000 * c + (int64_t)(i % 1000);
        CU_ASSERT_EQUAL(starfold_value_write(v, c, buf, sizeof *buf * count), STARFOLD_OK);
    }
    free(buf);
    return v;
}

/* Every component of @r holds the SUM (or, @mean, TensorFlow's float64 MEAN) of make_i64(count, base)'s four. */
static int check_i64(starfold_value_t r, size_t count, int64_t base, int mean)
{
    int bad = 0;
    void *buf = malloc(8 * count);
    for (int c = 0; buf && c < starfold_value_num_components(r); c++) {
        if (starfold_value_read(r, c, buf, 8 * count) != STARFOLD_OK) return 0;
        for (size_t i = 0; i < count; i++) {
            const int64_t sum = 4 * base + 1000 * (0 + 1 + 2 + 3) + 4 * (int64_t)(i % 1000);
            const int ok = mean ? ((double *)buf)[i] == (double)sum / 4.0 : ((int64_t *)buf)[i] == sum;
            if (!ok && bad++ < 3) fprintf(stderr, "check_i64: component %d element %zu wrong\n", c, i);
        }
    }
    free(buf);
    return buf && bad == 0;
}

/* The graph tensors of a batch reduce of @vs (each its own destination) by @ops, results checked. */
static size_t reduce_runs(starfold_cross_device_ops_t ops, const starfold_communication_options_t *o, starfold_op_t op,
                          size_t n, const starfold_value_t *vs, const size_t *counts, const int64_t *bases)
{
    starfold_value_destination_pair_t pairs[8];
    starfold_value_t res[8] = { NULL };
    for (size_t i = 0; i < n; i++) pairs[i] = (starfold_value_destination_pair_t){ vs[i], starfold_destination_value(vs[i]) };
    starfold__trace_reset();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_batch_reduce(ops, op, n, pairs, o, res), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold__trace_count(), 1);
    CU_ASSERT_EQUAL(last_trace().num_tensors, n);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_TRUE(check_i64(res[i], counts[i], bases[i], op == STARFOLD_OP_MEAN));
        starfold_value_destroy(res[i]);
    }
    return last_trace().num_graph_tensors;
}

/* Component @c of @v holds exactly @n floats @want. */
static int holds_f32(starfold_value_t v, int c, size_t n, const float *want)
{
    float got[8] = { 0 };
    if (n > 8 || starfold_value_read(v, c, got, n * sizeof(float)) != STARFOLD_OK) return 0;
    return memcmp(got, want, n * sizeof(float)) == 0;
}

/*
 * starfold_value_write_many(): every write lands where starfold_value_write() would put it (values
 * sharing buckets, a component moved out to its own handle, all components, a partial write, an
 * overlap the later write wins, another dtype); a bad write anywhere changes nothing; a write after
 * a reduction reading the value does not change what the reduction read.
 */
static void test_write_many(void)
{
    const int d01[2] = { 0, 1 };
    starfold_value_t a = make_f32(STARFOLD_VALUE_PER_REPLICA, 2, d01, 4, 0.0f);
    starfold_value_t b = make_f32(STARFOLD_VALUE_PER_REPLICA, 2, d01, 4, 100.0f);
    starfold_value_t c = make_f32(STARFOLD_VALUE_PER_REPLICA, 2, d01, 4, 200.0f);
    starfold_value_t e = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, d01, STARFOLD_INT64, 2, NULL, &e),
                          STARFOLD_OK);
    CU_ASSERT_PTR_NOT_NULL(starfold_value_handle(b, 1)); /* b's component 1 moved out of the arena */
    const float fa[4] = { 1, 2, 3, 4 }, fb[4] = { 5, 6, 7, 8 }, fc[2] = { 9, 10 }, fa0[4] = { 10, 20, 30, 40 };
    const int64_t ie[2] = { 1ll << 40, -3 };
    const starfold_value_t vals[5] = { a, b, c, a, e };
    const int comps[5] = { STARFOLD_ALL_COMPONENTS, 1, 0, 0, 0 };
    const void *const srcs[5] = { fa, fb, fc, fa0, ie };
    const size_t bytes[5] = { sizeof fa, sizeof fb, sizeof fc, sizeof fa0, sizeof ie };
    CU_ASSERT_EQUAL(starfold_value_write_many(5, vals, comps, srcs, bytes), STARFOLD_OK);
    const float c_old1[4] = { 210, 211, 212, 213 }, b_old0[4] = { 100, 101, 102, 103 }, c_new0[4] = { 9, 10, 202, 203 };
    CU_ASSERT_TRUE(holds_f32(a, 0, 4, fa0)); /* the later write wins */
    CU_ASSERT_TRUE(holds_f32(a, 1, 4, fa));
    CU_ASSERT_TRUE(holds_f32(b, 0, 4, b_old0));
    CU_ASSERT_TRUE(holds_f32(b, 1, 4, fb));
    CU_ASSERT_TRUE(holds_f32(c, 0, 4, c_new0)); /* a partial write keeps the rest */
    CU_ASSERT_TRUE(holds_f32(c, 1, 4, c_old1));
    int64_t got[2] = { 0, 0 };
    CU_ASSERT_EQUAL(starfold_value_read(e, 0, got, sizeof got), STARFOLD_OK);
    CU_ASSERT_TRUE(got[0] == ie[0] && got[1] == ie[1]);

    /* A bad write (component 2 of a two-component value, or too many bytes) changes nothing. */
    const float z[8] = { 0 };
    const void *const zs[3] = { z, z, z };
    const starfold_value_t bad_vals[3] = { a, c, b };
    const int bad_comps[3] = { 0, 2, 0 };
    const size_t bad_bytes[3] = { 16, 16, 16 }, big_bytes[3] = { 16, 16, 32 };
    const int ok_comps[3] = { 0, 0, 0 };
    CU_ASSERT_EQUAL(starfold_value_write_many(3, bad_vals, bad_comps, zs, bad_bytes), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "write 1"));
    CU_ASSERT_EQUAL(starfold_value_write_many(3, bad_vals, ok_comps, zs, big_bytes), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "write 2"));
    CU_ASSERT_EQUAL(starfold_value_write_many(1, NULL, ok_comps, zs, bad_bytes), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_value_write_many(0, NULL, NULL, NULL, NULL), STARFOLD_OK);
    CU_ASSERT_TRUE(holds_f32(a, 0, 4, fa0));
    CU_ASSERT_TRUE(holds_f32(c, 0, 4, c_new0));
    CU_ASSERT_TRUE(holds_f32(b, 0, 4, b_old0));

    /* Written right after a reduction that reads a and c was submitted: the reduction read the old content. */
    starfold_cross_device_ops_t ops = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("one-pass", NULL, NULL, &ops), STARFOLD_OK);
    starfold_value_destination_pair_t pairs[2] = { { a, starfold_destination_value(a) }, { c, starfold_destination_value(c) } };
    starfold_value_t res[2] = { NULL, NULL };
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_batch_reduce(ops, STARFOLD_OP_SUM, 2, pairs, NULL, res), STARFOLD_OK);
    const starfold_value_t ac[4] = { a, a, c, c };
    const int ac_comps[4] = { 0, 1, 0, 1 };
    const void *const zz[4] = { z, z, z, z };
    const size_t zb[4] = { 16, 16, 16, 16 };
    CU_ASSERT_EQUAL(starfold_value_write_many(4, ac, ac_comps, zz, zb), STARFOLD_OK);
    const float sum_a[4] = { 11, 22, 33, 44 }, sum_c[4] = { 219, 221, 414, 416 };
    for (int k = 0; k < 2; k++) {
        CU_ASSERT_TRUE(holds_f32(res[0], k, 4, sum_a));
        CU_ASSERT_TRUE(holds_f32(res[1], k, 4, sum_c));
    }
    CU_ASSERT_TRUE(holds_f32(a, 1, 4, z));
    CU_ASSERT_TRUE(holds_f32(c, 0, 4, z));
    for (int i = 0; i < 2; i++) starfold_value_destroy(res[i]);
    starfold_cross_device_ops_destroy(ops);
    starfold_value_destroy(a);
    starfold_value_destroy(b);
    starfold_value_destroy(c);
    starfold_value_destroy(e);
}

/*
 * Buckets stay partitioned between starts (exec/partitions.c): the same batch started again
 * switches nothing, and whatever needs a bucket whole or cut otherwise switches it back first and
 * still sees every value right - a read, a write from the host, a batch of another shape. Sums from
 * make_f32(): element i of a four-replica SUM over base b is 4b + 60 + 4i.
 */
static void kept_step(starfold_cross_device_ops_t ops, size_t n, starfold_value_t *in, starfold_value_t *res)
{
    starfold_value_destination_pair_t pairs[3];
    for (size_t i = 0; i < n; i++) pairs[i] = (starfold_value_destination_pair_t){ in[i], starfold_destination_value(in[i]) };
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_batch_reduce(ops, STARFOLD_OP_SUM, n, pairs, NULL, res), STARFOLD_OK);
}

static void test_kept_partitions(void)
{
    starfold_value_t in[3], res[3];
    for (int i = 0; i < 3; i++) in[i] = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, 4, 100.0f * (float)i);
    const float sum[3][4] = { { 60, 64, 68, 72 }, { 460, 464, 468, 472 }, { 860, 864, 868, 872 } };
    starfold_cross_device_ops_t ops = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("one-pass", NULL, host4, &ops), STARFOLD_OK);

    /* Steps without a read: from the third on, the persistent submission is found again and its
     * buckets are still cut its way. */
    for (int k = 0; k < 4; k++) {
        const unsigned long long before = starfold__kept_switches();
        starfold__trace_reset();
        kept_step(ops, 3, in, res);
        if (k >= 2) {
            CU_ASSERT_TRUE(last_trace().reused);
            CU_ASSERT_EQUAL(starfold__kept_switches(), before);
        }
        if (k < 3)
            for (int i = 0; i < 3; i++) starfold_value_destroy(res[i]);
    }
    /* Reads between starts go through the pieces in place: nothing switches, the sums are right. */
    unsigned long long before = starfold__kept_switches();
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 4; c++) CU_ASSERT_TRUE(holds_f32(res[i], c, 4, sum[i]));
    CU_ASSERT_EQUAL(starfold__kept_switches(), before);
    for (int i = 0; i < 3; i++) starfold_value_destroy(res[i]);
    starfold__trace_reset();
    kept_step(ops, 3, in, res);
    CU_ASSERT_TRUE(last_trace().reused);
    CU_ASSERT_EQUAL(starfold__kept_switches(), before);
    for (int i = 0; i < 3; i++) starfold_value_destroy(res[i]);

    /* A batch of another shape (one value) cuts the buckets its way, and the list's next start back. */
    kept_step(ops, 1, &in[1], res);
    CU_ASSERT_TRUE(starfold__kept_switches() > before);
    for (int c = 0; c < 4; c++) CU_ASSERT_TRUE(holds_f32(res[0], c, 4, sum[1]));
    starfold_value_destroy(res[0]);
    before = starfold__kept_switches();
    kept_step(ops, 3, in, res);
    CU_ASSERT_TRUE(starfold__kept_switches() > before);
    for (int i = 0; i < 3; i++) starfold_value_destroy(res[i]);

    /* Host writes between starts go through the pieces too: the next start, switching nothing,
     * reduces what was written. in[2]'s components 0 and 1 written; 2 and 3 keep 220 + i, 230 + i. */
    const float w0[4] = { 1, 2, 3, 4 }, w1[4] = { 1000, 2000, 3000, 4000 }, want[4] = { 1451, 2454, 3457, 4460 };
    const starfold_value_t wv[2] = { in[2], in[2] };
    const int wc[2] = { 0, 1 };
    const void *const ws[2] = { w0, w1 };
    const size_t wb[2] = { sizeof w0, sizeof w1 };
    before = starfold__kept_switches();
    CU_ASSERT_EQUAL(starfold_value_write_many(2, wv, wc, ws, wb), STARFOLD_OK);
    kept_step(ops, 3, in, res);
    CU_ASSERT_EQUAL(starfold__kept_switches(), before);
    for (int c = 0; c < 4; c++) {
        CU_ASSERT_TRUE(holds_f32(res[0], c, 4, sum[0]));
        CU_ASSERT_TRUE(holds_f32(res[1], c, 4, sum[1]));
        CU_ASSERT_TRUE(holds_f32(res[2], c, 4, want));
    }
    CU_ASSERT_TRUE(holds_f32(in[2], 0, 4, w0));
    CU_ASSERT_TRUE(holds_f32(in[2], 2, 4, (const float[4]){ 220, 221, 222, 223 }));
    CU_ASSERT_EQUAL(starfold__kept_switches(), before);
    for (int i = 0; i < 3; i++) starfold_value_destroy(res[i]);

    /* The ops' persistent submissions go (their partitions with them) while the buckets live on. */
    starfold_cross_device_ops_destroy(ops);
    CU_ASSERT_TRUE(holds_f32(in[2], 1, 4, w1));
    for (int i = 0; i < 3; i++) starfold_value_destroy(in[i]);
}

/*
 * A list whose values are not one stretch (made between other values) cuts each bucket into a piece
 * per value and per gap: reads and writes between starts of the values in the list and of those
 * between them go through the right pieces, and switch nothing.
 */
static void test_kept_fragmented(void)
{
    starfold_value_t v[6], res[3];
    for (int i = 0; i < 6; i++) v[i] = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, 4, 100.0f * (float)i);
    starfold_value_t list[3] = { v[0], v[2], v[4] }; /* v[1], v[3] and v[5] lie between them */
    starfold_cross_device_ops_t ops = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("one-pass", NULL, host4, &ops), STARFOLD_OK);
    for (int k = 0; k < 3; k++) {
        kept_step(ops, 3, list, res);
        if (k < 2)
            for (int i = 0; i < 3; i++) starfold_value_destroy(res[i]);
    }
    const unsigned long long before = starfold__kept_switches();
    for (int i = 0; i < 3; i++) {
        const float base = 200.0f * (float)i, want[4] = { 4 * base + 60, 4 * base + 64, 4 * base + 68, 4 * base + 72 };
        for (int c = 0; c < 4; c++) CU_ASSERT_TRUE(holds_f32(res[i], c, 4, want));
        starfold_value_destroy(res[i]);
    }
    /* Each value between the list's is written whole on one replica, and v[2] in part. */
    const float w[4] = { -1, -2, -3, -4 }, half[2] = { 7, 8 };
    const starfold_value_t wv[4] = { v[1], v[3], v[5], v[2] };
    const int wc[4] = { 3, 0, 2, 1 };
    const void *const ws[4] = { w, w, w, half };
    const size_t wb[4] = { sizeof w, sizeof w, sizeof w, sizeof half };
    CU_ASSERT_EQUAL(starfold_value_write_many(4, wv, wc, ws, wb), STARFOLD_OK);
    const float v1c2[4] = { 120, 121, 122, 123 }, v2c1[4] = { 7, 8, 212, 213 };
    CU_ASSERT_TRUE(holds_f32(v[1], 3, 4, w));
    CU_ASSERT_TRUE(holds_f32(v[1], 2, 4, v1c2));
    CU_ASSERT_TRUE(holds_f32(v[3], 0, 4, w));
    CU_ASSERT_TRUE(holds_f32(v[5], 2, 4, w));
    CU_ASSERT_TRUE(holds_f32(v[2], 1, 4, v2c1));
    kept_step(ops, 3, list, res);
    /* v[2]: 200 + 210 + 220 + 230 in full, but component 1 now starts 7, 8. */
    const float sum0[4] = { 60, 64, 68, 72 }, sum2[4] = { 657, 661, 868, 872 }, sum4[4] = { 1660, 1664, 1668, 1672 };
    for (int c = 0; c < 4; c++) {
        CU_ASSERT_TRUE(holds_f32(res[0], c, 4, sum0));
        CU_ASSERT_TRUE(holds_f32(res[1], c, 4, sum2));
        CU_ASSERT_TRUE(holds_f32(res[2], c, 4, sum4));
    }
    CU_ASSERT_EQUAL(starfold__kept_switches(), before);
    for (int i = 0; i < 3; i++) starfold_value_destroy(res[i]);
    starfold_cross_device_ops_destroy(ops);
    for (int i = 0; i < 6; i++) starfold_value_destroy(v[i]);
}

/*
 * One thread reduces again and again, two values and one of them in turn, while another writes and
 * reads a third lying in the same buckets: the writer acquires the pieces of whichever partition is
 * active (under the windows' lock, so none switches under it), the reducer's starts switch the
 * buckets between its two shapes, and neither ever sees the other's bytes (TSan runs this in
 * check-tsan).
 */
typedef struct kept_writer {
    starfold_value_t v;
    int steps, bad;
} kept_writer_t;

static void *kept_writer_main(void *arg)
{
    kept_writer_t *w = arg;
    for (int k = 0; k < w->steps; k++) {
        float buf[4][4], got[4];
        const void *srcs[4];
        const starfold_value_t vals[4] = { w->v, w->v, w->v, w->v };
        const int comps[4] = { 0, 1, 2, 3 };
        const size_t bytes[4] = { sizeof buf[0], sizeof buf[0], sizeof buf[0], sizeof buf[0] };
        for (int c = 0; c < 4; c++) {
            for (int i = 0; i < 4; i++) buf[c][i] = (float)(1000 * k + 10 * c + i);
            srcs[c] = buf[c];
        }
        if (starfold_value_write_many(4, vals, comps, srcs, bytes) != STARFOLD_OK) w->bad++;
        for (int c = 0; c < 4; c++)
            if (starfold_value_read(w->v, c, got, sizeof got) != STARFOLD_OK || memcmp(got, buf[c], sizeof got)) w->bad++;
    }
    return NULL;
}

static void test_kept_concurrent(void)
{
    starfold_value_t in[3], res[2];
    for (int i = 0; i < 3; i++) in[i] = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, 4, 100.0f * (float)i);
    const float sum[2][4] = { { 60, 64, 68, 72 }, { 460, 464, 468, 472 } };
    starfold_cross_device_ops_t ops = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("one-pass", NULL, host4, &ops), STARFOLD_OK);
    kept_writer_t w = { in[2], 40, 0 };
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, kept_writer_main, &w), 0);
    int bad = 0;
    for (int k = 0; k < 40; k++) {
        const size_t n = k % 3 == 2 ? 1 : 2; /* [in0, in1], [in0, in1], [in1], ... */
        kept_step(ops, n, n == 2 ? in : &in[1], res);
        if (k % 2 == 0)
            for (size_t i = 0; i < n; i++)
                for (int c = 0; c < 4; c++) bad += !holds_f32(res[i], c, 4, sum[n == 2 ? i : 1]);
        for (size_t i = 0; i < n; i++) starfold_value_destroy(res[i]);
    }
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(w.bad, 0);
    starfold_cross_device_ops_destroy(ops);
    for (int i = 0; i < 3; i++) starfold_value_destroy(in[i]);
}

/*
 * A list made one after another lies as one stretch of every replica's bucket, and a batch reduces
 * each stretch (run) as one tensor, with the same results. A value made after one that is gone goes
 * by first fit, so a loop remaking its values keeps their places. The values are the first int64 ones on
 * devices 4..7, so where they land is known: x fills most of a first 4 MiB bucket, y does not fit
 * after it and opens an 8 MiB one, z goes right after y (first fit would have put it after x).
 */
static void test_runs(void)
{
    const size_t counts[3] = { 300000, 300000, 100 };
    const int64_t bases[3] = { 1, -7000, 123456789012 };
    starfold_value_t v[3];
    for (int i = 0; i < 3; i++) v[i] = make_i64(counts[i], bases[i]);
    const starfold_value_t x = v[0], y = v[1], z = v[2];
    starfold_cross_device_ops_t hc = NULL, one = NULL, unpacked = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("hierarchical-copy", NULL, NULL, &hc), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("one-pass", NULL, NULL, &one), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_hierarchical_copy_all_reduce_create(0, &unpacked), STARFOLD_OK);

    /* [x y z]: x alone, y and z one run; [y z]: one run; [z y]: z does not follow y's end. */
    starfold_value_t xyz[3] = { x, y, z }, yz[2] = { y, z }, zy[2] = { z, y };
    const size_t c_yz[2] = { counts[1], counts[2] }, c_zy[2] = { counts[2], counts[1] };
    const int64_t b_yz[2] = { bases[1], bases[2] }, b_zy[2] = { bases[2], bases[1] };
    CU_ASSERT_EQUAL(reduce_runs(hc, NULL, STARFOLD_OP_SUM, 3, xyz, counts, bases), 2);
    CU_ASSERT_EQUAL(reduce_runs(one, NULL, STARFOLD_OP_SUM, 3, xyz, counts, bases), 2);
    CU_ASSERT_EQUAL(reduce_runs(one, NULL, STARFOLD_OP_SUM, 2, yz, c_yz, b_yz), 1);
    CU_ASSERT_EQUAL(reduce_runs(one, NULL, STARFOLD_OP_SUM, 2, zy, c_zy, b_zy), 2);
    /* TensorFlow's MEAN of integers (promote_integer_mean): float64 results, the run divided as one. */
    starfold_communication_options_t o;
    CU_ASSERT_EQUAL(starfold_communication_options_create(0, 0, NULL, &o), STARFOLD_OK);
    o.promote_integer_mean = 1;
    CU_ASSERT_EQUAL(reduce_runs(one, &o, STARFOLD_OP_MEAN, 2, yz, c_yz, b_yz), 1);
    /* The caller's packs by tensor are kept: bytes_per_pack, or num_packs 0 (every tensor on its own). */
    CU_ASSERT_EQUAL(starfold_communication_options_create(4096, 0, NULL, &o), STARFOLD_OK);
    CU_ASSERT_EQUAL(reduce_runs(hc, &o, STARFOLD_OP_SUM, 2, yz, c_yz, b_yz), 2);
    CU_ASSERT_EQUAL(reduce_runs(unpacked, NULL, STARFOLD_OP_SUM, 2, yz, c_yz, b_yz), 2);

    /* The same list as a kept plan, steps after the first: the run's binding restarted, results right. */
    for (int k = 0; k < 3; k++) CU_ASSERT_EQUAL(reduce_runs(one, NULL, STARFOLD_OP_SUM, 2, yz, c_yz, b_yz), 1);

    /* A value made after a living one follows it. Made after one that is gone it goes by first fit
     * (right after x, in the first bucket), and a value remade every step gets that place every time. */
    starfold_view_t vx[4], vz[4], vw[4];
    CU_ASSERT_TRUE(starfold__value_views(x, vx));
    CU_ASSERT_TRUE(starfold__value_views(z, vz));
    starfold_value_t w = make_i64(100, 5);
    CU_ASSERT_TRUE(starfold__value_views(w, vw));
    for (int c = 0; c < 4; c++)
        CU_ASSERT_TRUE(vw[c].handle == vz[c].handle && vw[c].offset == vz[c].offset + counts[2]);
    for (int k = 0; k < 3; k++) {
        starfold_value_destroy(w);
        w = make_i64(100, 5);
        CU_ASSERT_TRUE(starfold__value_views(w, vw));
        for (int c = 0; c < 4; c++)
            CU_ASSERT_TRUE(vw[c].handle == vx[c].handle && vw[c].offset == vx[c].offset + counts[0]);
    }
    starfold_value_destroy(w);
    starfold_cross_device_ops_destroy(hc);
    starfold_cross_device_ops_destroy(one);
    starfold_cross_device_ops_destroy(unpacked);
    for (int i = 0; i < 3; i++) starfold_value_destroy(v[i]);
}

/* ------------------------------------------------------------------------------------------------
 * MEAN divisors and integer MEAN
 */

static void test_mean_divisors(void)
{
    starfold_cross_device_ops_t hc = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_hierarchical_copy_all_reduce_create(1, &hc), STARFOLD_OK);
    const int d3[3] = { 0, 1, 2 };
    /* Components 3, 4, 8: sum 15. */
    starfold_value_t v = NULL, r = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 3, d3, STARFOLD_FLOAT32, 1, NULL, &v),
                          STARFOLD_OK);
    const float xs[3] = { 3, 4, 8 };
    for (int c = 0; c < 3; c++) CU_ASSERT_EQUAL(starfold_value_write(v, c, &xs[c], sizeof(float)), STARFOLD_OK);
    /* Reduce to ONE device: divided by the 3 components, not by the 1 destination. */
    starfold_destination_t d = starfold_destination_device(0);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_MEAN, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(read_scalar_f32(r, 0), 5.0f);
    starfold_value_destroy(r);
    /* All-reduce: by the destination count, which is the same 3. */
    d = starfold_destination_value(v);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_MEAN, v, &d, NULL, &r), STARFOLD_OK);
    for (int c = 0; c < 3; c++) CU_ASSERT_EQUAL(read_scalar_f32(r, c), 5.0f);
    starfold_value_destroy(r);
    /* To the host: by the components. */
    d = starfold_destination_host();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_MEAN, v, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(read_scalar_f32(r, 0), 5.0f);
    starfold_value_destroy(r);
    /* To more devices than components (a superset): still by the 3 components. */
    const int d5[5] = { 0, 1, 2, 3, 4 };
    starfold_value_t wide = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, 5, d5, STARFOLD_FLOAT32, 1, NULL, &wide),
                          STARFOLD_OK);
    d = starfold_destination_value(wide);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_MEAN, v, &d, NULL, &r), STARFOLD_OK);
    for (int c = 0; c < 5; c++) CU_ASSERT_EQUAL(read_scalar_f32(r, c), 5.0f);
    starfold_value_destroy(r);
    starfold_value_destroy(wide);
    starfold_value_destroy(v);

    /* Integer MEAN: truncating by default, TensorFlow's float64 promotion on request. */
    const starfold_dtype_t idt[2] = { STARFOLD_INT32, STARFOLD_INT64 };
    for (int k = 0; k < 2; k++) {
        CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 3, d3, idt[k], 2, NULL, &v), STARFOLD_OK);
        const long long vals[3][2] = { { 1, -1 }, { 2, -2 }, { 2, -2 } }; /* sums 5 and -5 */
        for (int c = 0; c < 3; c++) {
            int32_t i32[2] = { (int32_t)vals[c][0], (int32_t)vals[c][1] };
            int64_t i64[2] = { vals[c][0], vals[c][1] };
            CU_ASSERT_EQUAL(starfold_value_write(v, c, k ? (void *)i64 : (void *)i32, k ? sizeof i64 : sizeof i32), STARFOLD_OK);
        }
        for (int a = 0; a < 2; a++) { /* all-reduce (hierarchical-copy), then to one device (fallback) */
            d = a ? starfold_destination_device(1) : starfold_destination_value(v);
            CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_MEAN, v, &d, NULL, &r), STARFOLD_OK);
            CU_ASSERT_EQUAL(starfold_value_dtype(r), idt[k]);
            int64_t got[2] = { 0, 0 };
            int32_t got32[2] = { 0, 0 };
            CU_ASSERT_EQUAL(starfold_value_read(r, 0, k ? (void *)got : (void *)got32, k ? sizeof got : sizeof got32),
                            STARFOLD_OK);
            if (!k) {
                got[0] = got32[0];
                got[1] = got32[1];
            }
            CU_ASSERT_EQUAL(got[0], 1);  /* 5 / 3 truncated */
            CU_ASSERT_EQUAL(got[1], -1); /* -5 / 3 truncated towards zero */
            starfold_value_destroy(r);

            starfold_communication_options_t o;
            starfold_communication_options_init(&o);
            o.promote_integer_mean = 1;
            CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_MEAN, v, &d, &o, &r), STARFOLD_OK);
            CU_ASSERT_EQUAL(starfold_value_dtype(r), STARFOLD_FLOAT64);
            double f[2];
            CU_ASSERT_EQUAL(starfold_value_read(r, 0, f, sizeof f), STARFOLD_OK);
            CU_ASSERT_DOUBLE_EQUAL(f[0], 5.0 / 3.0, 1e-12);
            CU_ASSERT_DOUBLE_EQUAL(f[1], -5.0 / 3.0, 1e-12);
            starfold_value_destroy(r);
            /* SUM is not affected by the promotion. */
            CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, v, &d, &o, &r), STARFOLD_OK);
            CU_ASSERT_EQUAL(starfold_value_dtype(r), idt[k]);
            starfold_value_destroy(r);
        }
        starfold_value_destroy(v);
    }
    starfold_cross_device_ops_destroy(hc);
}

/* ------------------------------------------------------------------------------------------------
 * broadcast
 */

static void test_broadcast(void)
{
    starfold_cross_device_ops_t ops = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_reduction_to_one_device_create(-1, &ops), STARFOLD_OK);
    const int two = 2, d3[3] = { 0, 1, 3 };
    starfold_value_t v = make_f32(STARFOLD_VALUE_PER_REPLICA, 1, &two, 20, 6.0f), dst = NULL, r = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, 3, d3, STARFOLD_FLOAT32, 1, NULL, &dst),
                          STARFOLD_OK);
    starfold_destination_t d = starfold_destination_value(dst);
    starfold__trace_reset();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_broadcast(ops, v, &d, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace().path, SF_PATH_BROADCAST);
    CU_ASSERT_EQUAL(starfold_value_kind(r), STARFOLD_VALUE_MIRRORED);
    CU_ASSERT_EQUAL(starfold_value_num_components(r), 3);
    CU_ASSERT_EQUAL(starfold_value_count(r), 20); /* the tensor's count, not the destination value's */
    for (int c = 0; c < 3; c++) CU_ASSERT_EQUAL(starfold_value_device(r, c), d3[c]);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_SUM, 1, 6.0f));
    /* A mirrored value broadcasts its first component. */
    starfold_value_t r2 = NULL;
    d = starfold_destination_host();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_broadcast(ops, r, &d, &r2), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_device(r2, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_TRUE(check_f32(r2, STARFOLD_OP_SUM, 1, 6.0f));
    /* From the host to devices. */
    starfold_value_t r3 = NULL;
    d = starfold_destination_value(dst);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_broadcast(ops, r2, &d, &r3), STARFOLD_OK);
    CU_ASSERT_TRUE(check_f32(r3, STARFOLD_OP_SUM, 1, 6.0f));
    starfold_value_destroy(r3);
    starfold_value_destroy(r2);
    starfold_value_destroy(r);
    /* A per-replica value of several components is not one tensor. */
    starfold_value_t pr = make_f32(STARFOLD_VALUE_PER_REPLICA, 3, d3, 2, 0.0f);
    r = NULL;
    CU_ASSERT_EQUAL(starfold_cross_device_ops_broadcast(ops, pr, &d, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    memset(&d, 0, sizeof d);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_broadcast(ops, v, &d, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(r);
    starfold_value_destroy(pr);
    starfold_value_destroy(dst);
    starfold_value_destroy(v);
    starfold_cross_device_ops_destroy(ops);
}

/* Results can be consumed without waiting: the next reduction reads the previous one's result. */
static void test_chained(void)
{
    starfold_cross_device_ops_t hc = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_hierarchical_copy_all_reduce_create(1, &hc), STARFOLD_OK);
    starfold_value_t v = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, 50, 1.0f), cur = starfold_value_retain(v);
    for (int step = 0; step < 5; step++) {
        starfold_value_t next = NULL;
        starfold_destination_t d = starfold_destination_value(cur);
        CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_MAX, cur, &d, NULL, &next), STARFOLD_OK);
        starfold_value_destroy(cur); /* destroying an input right after the submission is safe */
        cur = next;
    }
    CU_ASSERT_EQUAL(starfold_value_wait(cur), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_wait_timeout(cur, 10.0), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_wait_timeout(cur, -1.0), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_TRUE(check_f32(cur, STARFOLD_OP_MAX, 4, 1.0f));
    starfold_value_destroy(cur);
    starfold_value_destroy(v);
    starfold_cross_device_ops_destroy(hc);
}

/* Usage: test_distribute [SUBSTRING]: only the tests whose name contains SUBSTRING. */
/* ------------------------------------------------------------------------------------------------
 * The arena: values as ranges of buckets, persistent submissions reused across steps
 */

/* Input i of step k, component c, element e: small integers, exact in float32 sums. */
static float step_input(int k, size_t i, int c, size_t e)
{
    return (float)((k * 7 + (int)i * 3 + c * 11 + (int)(e % 13)) % 50);
}

/* A training loop's step: write new inputs, batch-reduce (SUM, each its own destination), check all. */
static int arena_step(starfold_cross_device_ops_t ops, int k, size_t nv, starfold_value_t *in, const size_t *counts,
                      starfold_value_t *res)
{
    float *buf = malloc(sizeof(float) * 4000);
    int bad = 0;
    for (size_t i = 0; i < nv; i++)
        for (int c = 0; c < 4; c++) {
            for (size_t e = 0; e < counts[i]; e++) buf[e] = step_input(k, i, c, e);
            CU_ASSERT_EQUAL(starfold_value_write(in[i], c, buf, counts[i] * sizeof(float)), STARFOLD_OK);
        }
    starfold_value_destination_pair_t *pairs = calloc(nv, sizeof *pairs);
    for (size_t i = 0; i < nv; i++) pairs[i] = (starfold_value_destination_pair_t){ in[i], starfold_destination_value(in[i]) };
    CU_ASSERT_EQUAL(starfold_cross_device_ops_batch_reduce(ops, STARFOLD_OP_SUM, nv, pairs, NULL, res), STARFOLD_OK);
    for (size_t i = 0; i < nv; i++)
        for (int c = 0; c < 4; c++) {
            CU_ASSERT_EQUAL(starfold_value_read(res[i], c, buf, counts[i] * sizeof(float)), STARFOLD_OK);
            for (size_t e = 0; e < counts[i]; e++) {
                float want = 0;
                for (int r = 0; r < 4; r++) want += step_input(k, i, r, e);
                if (buf[e] != want && bad++ < 3)
                    fprintf(stderr, "step %d value %zu component %d element %zu: %g, expected %g\n", k, i, c, e,
                            (double)buf[e], (double)want);
            }
        }
    free(pairs);
    free(buf);
    return bad;
}

/*
 * Twenty steps over the same 40 values: each step writes new inputs, so a persistent submission that
 * kept stale data (or stale partitions) shows; from the third step on, every step starts the
 * persistent submission made before. Then the same with each step's results kept until after the
 * next step (double buffering): the arena alternates between ranges, each with its own persistent.
 */
static void test_arena_steps(void)
{
    const size_t nv = 40;
    size_t counts[40];
    starfold_value_t in[40], res[40], prev[40];
    for (size_t i = 0; i < nv; i++) {
        counts[i] = 1 + (i * 97) % 3000;
        CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 4, dev0123, STARFOLD_FLOAT32, counts[i],
                                                    NULL, &in[i]), STARFOLD_OK);
    }
    starfold_cross_device_ops_t ops = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("one-pass", NULL, host4, &ops), STARFOLD_OK);
    starfold__arena_stats_t a0, a1;
    starfold__arena_stats(ctx, &a0);
    for (int k = 0; k < 20; k++) {
        starfold__trace_reset();
        CU_ASSERT_EQUAL(arena_step(ops, k, nv, in, counts, res), 0);
        CU_ASSERT_EQUAL(starfold__trace_count(), 1);
        CU_ASSERT_TRUE(last_trace().persistent);
        if (k >= 2) CU_ASSERT_TRUE(last_trace().reused);
        for (size_t i = 0; i < nv; i++) starfold_value_destroy(res[i]);
    }
    starfold__arena_stats(ctx, &a1);
    CU_ASSERT_TRUE(a1.reuses - a0.reuses >= 18);
    CU_ASSERT_TRUE(a1.persistents >= 1);

    /* Double buffering: step k's results live until step k + 1's are checked. */
    CU_ASSERT_EQUAL(arena_step(ops, 100, nv, in, counts, prev), 0);
    for (int k = 101; k < 113; k++) {
        starfold__trace_reset();
        CU_ASSERT_EQUAL(arena_step(ops, k, nv, in, counts, res), 0);
        if (k >= 105) CU_ASSERT_TRUE(last_trace().reused);
        for (size_t i = 0; i < nv; i++) {
            starfold_value_destroy(prev[i]);
            prev[i] = res[i];
        }
    }
    for (size_t i = 0; i < nv; i++) starfold_value_destroy(prev[i]);
    starfold_cross_device_ops_destroy(ops);
    for (size_t i = 0; i < nv; i++) starfold_value_destroy(in[i]);
}

/* The ops' batch plans found so far. */
static unsigned long long plan_hits(starfold_cross_device_ops_t ops)
{
    pthread_mutex_lock(&ops->cache_lock);
    const unsigned long long n = ops->plan_hits;
    pthread_mutex_unlock(&ops->cache_lock);
    return n;
}

/*
 * A batch's plan (batch_plan.c): the first call keeps it, the next ones over the same values find it
 * (and restart the arena's binding); a value destroyed and made again, or moved out of the arena,
 * is never taken for the one the plan saw: those steps plan again and are right every time.
 */
static void test_batch_plan(void)
{
    const size_t nv = 30;
    size_t counts[30];
    starfold_value_t in[30], res[30];
    for (size_t i = 0; i < nv; i++) {
        counts[i] = 1 + (i * 53) % 2000;
        CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 4, dev0123, STARFOLD_FLOAT32, counts[i],
                                                    NULL, &in[i]), STARFOLD_OK);
    }
    starfold_cross_device_ops_t ops = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("one-pass", NULL, host4, &ops), STARFOLD_OK);
    /* Kept by step 0, found by every step after. */
    for (int k = 0; k < 5; k++) {
        const unsigned long long h = plan_hits(ops);
        starfold__trace_reset();
        CU_ASSERT_EQUAL(arena_step(ops, k, nv, in, counts, res), 0);
        CU_ASSERT_EQUAL(plan_hits(ops) - h, k == 0 ? 0u : 1u);
        if (k > 0) CU_ASSERT_TRUE(last_trace().persistent && last_trace().reused);
        for (size_t i = 0; i < nv; i++) starfold_value_destroy(res[i]);
    }
    /* A value destroyed and another made in its place (maybe at its address, in its range): a new plan. */
    starfold_value_destroy(in[3]);
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 4, dev0123, STARFOLD_FLOAT32, counts[3],
                                                NULL, &in[3]), STARFOLD_OK);
    for (int k = 5; k < 7; k++) {
        const unsigned long long h = plan_hits(ops);
        CU_ASSERT_EQUAL(arena_step(ops, k, nv, in, counts, res), 0);
        CU_ASSERT_EQUAL(plan_hits(ops) - h, k == 5 ? 0u : 1u);
        for (size_t i = 0; i < nv; i++) starfold_value_destroy(res[i]);
    }
    /* A component moved out of the arena: the value's views changed, no plan is found (nor kept: not all in the arena). */
    CU_ASSERT_PTR_NOT_NULL(starfold_value_handle(in[7], 2));
    for (int k = 7; k < 9; k++) {
        const unsigned long long h = plan_hits(ops);
        starfold__trace_reset();
        CU_ASSERT_EQUAL(arena_step(ops, k, nv, in, counts, res), 0);
        CU_ASSERT_EQUAL(plan_hits(ops), h);
        CU_ASSERT_FALSE(last_trace().persistent);
        for (size_t i = 0; i < nv; i++) starfold_value_destroy(res[i]);
    }
    /* Another op is another plan; the first one is still there. */
    starfold_value_destination_pair_t pairs[2] = { { in[0], starfold_destination_value(in[0]) },
                                                   { in[1], starfold_destination_value(in[1]) } };
    for (int k = 0; k < 2; k++) {
        const unsigned long long h = plan_hits(ops);
        CU_ASSERT_EQUAL(starfold_cross_device_ops_batch_reduce(ops, STARFOLD_OP_MAX, 2, pairs, NULL, res), STARFOLD_OK);
        CU_ASSERT_EQUAL(plan_hits(ops) - h, k == 0 ? 0u : 1u);
        for (int i = 0; i < 2; i++) {
            float x = -1;
            CU_ASSERT_EQUAL(starfold_value_read(res[i], 1, &x, sizeof x), STARFOLD_OK);
            float want = step_input(8, (size_t)i, 0, 0);
            for (int r = 1; r < 4; r++) want = step_input(8, (size_t)i, r, 0) > want ? step_input(8, (size_t)i, r, 0) : want;
            CU_ASSERT_EQUAL(x, want);
            starfold_value_destroy(res[i]);
        }
    }
    starfold_cross_device_ops_destroy(ops);
    for (size_t i = 0; i < nv; i++) starfold_value_destroy(in[i]);
}

/*
 * Asking for a component's handle moves it out of the arena (a copy, ordered after the reduction
 * writing it): the handle then holds the value, later reductions read it from there, and a regrouped
 * value follows its part.
 */
static void test_arena_move_out(void)
{
    starfold_value_t v = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, 1500, 1.0f), r = NULL, r2 = NULL;
    starfold_cross_device_ops_t ops = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("one-pass", NULL, host4, &ops), STARFOLD_OK);
    const starfold_destination_t dst = starfold_destination_value(v);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(ops, STARFOLD_OP_SUM, v, &dst, NULL, &r), STARFOLD_OK);
    /* Not waited for: the move is ordered after the reduction by StarPU. */
    starpu_data_handle_t h = starfold_value_handle(r, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    CU_ASSERT_PTR_EQUAL(starfold_value_handle(r, 2), h); /* it stays there */
    CU_ASSERT_EQUAL(starpu_vector_get_nx(h), 1500);
    CU_ASSERT_TRUE(check_f32(r, STARFOLD_OP_SUM, 4, 1.0f));
    float x[1500];
    CU_ASSERT_EQUAL(starfold_vector_read(h, x, sizeof x), STARFOLD_OK);
    CU_ASSERT_EQUAL(x[7], (float)expect_f32(STARFOLD_OP_SUM, 4, 7, 1.0f));
    /* A mix of a component with a handle of its own and components in the arena, as an input. */
    CU_ASSERT_PTR_NOT_NULL(starfold_value_handle(v, 1));
    starfold__trace_reset();
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce(ops, STARFOLD_OP_MAX, v, &dst, NULL, &r2), STARFOLD_OK);
    CU_ASSERT_FALSE(last_trace().persistent);
    CU_ASSERT_TRUE(check_f32(r2, STARFOLD_OP_MAX, 4, 1.0f));
    starfold_value_destroy(r2);

    /* A regrouped value reads its parts where they are, before and after a part moves out. */
    starfold_value_t parts[2], g = NULL;
    for (int i = 0; i < 2; i++) parts[i] = make_f32(STARFOLD_VALUE_PER_REPLICA, 1, &dev0123[i], 50, (float)(100 * i));
    CU_ASSERT_EQUAL_FATAL(starfold_value_regroup(STARFOLD_VALUE_PER_REPLICA, 2, parts, &g), STARFOLD_OK);
    CU_ASSERT_EQUAL(read_scalar_f32(g, 1), 100.0f);
    starpu_data_handle_t ph = starfold_value_handle(parts[1], 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ph);
    const float nine = 9.0f;
    CU_ASSERT_EQUAL(starfold_vector_write(ph, &nine, sizeof nine), STARFOLD_OK);
    CU_ASSERT_EQUAL(read_scalar_f32(g, 1), 9.0f); /* the group follows its part */
    CU_ASSERT_PTR_EQUAL(starfold_value_handle(g, 1), ph);
    starfold_value_destroy(g);
    for (int i = 0; i < 2; i++) starfold_value_destroy(parts[i]);
    starfold_value_destroy(r);
    starfold_value_destroy(v);
    starfold_cross_device_ops_destroy(ops);
}

/*
 * The results of one batch share a slab whose one writer settles them all: a wait on any of them
 * looks at that writer alone. A writer recorded on one of them later (the copy of a component
 * moved out of the arena) makes the wait on it wait for that writer too: after the wait, every
 * writer it records finished well.
 */
static void test_arena_wait_later_writer(void)
{
    starfold_value_t v = make_f32(STARFOLD_VALUE_PER_REPLICA, 4, dev0123, 1500, 1.0f), res[3] = { NULL };
    starfold_cross_device_ops_t ops = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("one-pass", NULL, host4, &ops), STARFOLD_OK);
    const starfold_destination_t dst = starfold_destination_value(v);
    const starfold_value_destination_pair_t pairs[3] = { { v, dst }, { v, dst }, { v, dst } };
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_batch_reduce(ops, STARFOLD_OP_SUM, 3, pairs, NULL, res), STARFOLD_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(res[0]->slab);
    CU_ASSERT_PTR_EQUAL(res[1]->slab, res[0]->slab);
    CU_ASSERT_EQUAL(starfold_value_wait(res[0]), STARFOLD_OK); /* the slab's writer done */
    CU_ASSERT_PTR_NOT_NULL(starfold_value_handle(res[1], 2)); /* one more writer: the copy out of the arena */
    CU_ASSERT_EQUAL(starfold_value_wait(res[1]), STARFOLD_OK);
    pthread_mutex_lock(res[1]->lock);
    CU_ASSERT_TRUE(res[1]->nwriters >= 1);
    for (size_t w = 0; w < res[1]->nwriters; w++) CU_ASSERT_TRUE(__atomic_load_n(&res[1]->writers[w]->done_ok, __ATOMIC_ACQUIRE));
    pthread_mutex_unlock(res[1]->lock);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(starfold_value_wait(res[i]), STARFOLD_OK);
        CU_ASSERT_TRUE(check_f32(res[i], STARFOLD_OP_SUM, 4, 1.0f));
        starfold_value_destroy(res[i]);
    }
    starfold_value_destroy(v);
    starfold_cross_device_ops_destroy(ops);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    static const starfold__tu_test_t tests[] = {
        { "reduce op strings", test_reduce_op_strings },
        { "communication options and merge", test_options },
        { "values", test_values },
        { "values written many at once", test_write_many },
        { "buckets kept partitioned between starts", test_kept_partitions },
        { "buckets kept partitioned: a list in pieces, and the values between", test_kept_fragmented },
        { "buckets kept partitioned: a writer beside a reducer", test_kept_concurrent },
        { "wrapped handles", test_wrap },
        { "regroup", test_regroup },
        { "cross-device ops objects", test_ops_objects },
        { "all-reduce, every op, every algorithm", test_all_reduce_every_op },
        { "graphs reused across calls", test_graph_cache },
        { "destinations and fallbacks", test_destinations },
        { "one-value shortcut", test_one_value_shortcut },
        { "batch_reduce: one graph, input order", test_batch_reduce },
        { "packing options", test_packing },
        { "runs: a list made one after another is one tensor", test_runs },
        { "MEAN divisors and integer MEAN", test_mean_divisors },
        { "broadcast", test_broadcast },
        { "chained reductions", test_chained },
        { "arena: twenty steps, persistent reused, double buffering", test_arena_steps },
        { "batch plans: found again, never over a remade or moved value", test_batch_plan },
        { "arena: handles move components out", test_arena_move_out },
        { "arena: a wait covers a writer recorded after the batch's", test_arena_wait_later_writer },
    };
    if (suite_init() != 0) {
        fprintf(stderr, "test_distribute: cannot create the context: %s\n", starfold_last_error());
        return 77;
    }
    if (starfold__tu_begin() != 0) return 1;
    if (starfold__tu_add("distribute: values, options, cross-device ops (CPU-only)", NULL, NULL, tests, SF_TU_COUNT(tests), only) != 0) return 1;
    const unsigned failed = starfold__tu_run();
    suite_cleanup();
    return failed ? 1 : 0;
}
