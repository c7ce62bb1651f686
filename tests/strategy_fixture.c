/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/* The strategy tests' shared context and helpers (strategy_fixture.h). */
#include "config.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "strategy_fixture.h"
#include "util.h"

starfold_context_t ctx;
starfold_topology_t host8, dgx1;

int suite_init(void)
{
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = starfold__tu_device_mode(); /* CPU workers; CUDA ones on a GPU (tests/device/gpu.sh) */
    o.num_devices = NDEV;
    if (starfold_context_create(&o, &ctx) != STARFOLD_OK) return -1;
    if (starfold_topology_builtin("host", &host8) != STARFOLD_OK) return -1;
    if (starfold_topology_builtin("dgx1-v100", &dgx1) != STARFOLD_OK) return -1;
    return 0;
}

void suite_cleanup(void)
{
    starfold_topology_destroy(host8);
    starfold_topology_destroy(dgx1);
    starfold_context_destroy(ctx);
}

void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

float read_f32(starfold_value_t v, int c)
{
    float x = NAN;
    CU_ASSERT_EQUAL(starfold_value_read(v, c, &x, sizeof x), STARFOLD_OK);
    return x;
}

/* Algorithm of the last graph the layer compiled ("" when none). */
const char *last_algorithm(void)
{
    static starfold__trace_entry_t e;
    memset(&e, 0, sizeof e);
    const size_t n = starfold__trace_count();
    if (n > 0) starfold__trace_get((n < SF_TRACE_MAX ? n : SF_TRACE_MAX) - 1, &e);
    return e.algorithm;
}

/* Path of the last graph the layer compiled. */
starfold__path_t last_trace_path(void)
{
    starfold__trace_entry_t e;
    memset(&e, 0, sizeof e);
    e.path = SF_PATH_COUNT;
    const size_t n = starfold__trace_count();
    if (n > 0) starfold__trace_get((n < SF_TRACE_MAX ? n : SF_TRACE_MAX) - 1, &e);
    return e.path;
}

/* A one-component float32 value on the replica's device holding the @n elements @xs. */
starfold_status_t local_value(starfold_replica_context_t rc, const float *xs, size_t n, starfold_value_t *v)
{
    const int dev = starfold_replica_context_device(rc);
    return starfold_value_create(starfold_strategy_context(starfold_replica_context_strategy(rc)),
                                 STARFOLD_VALUE_PER_REPLICA, 1, &dev, STARFOLD_FLOAT32, n, xs, v);
}

/* The replica mode of the strategies mirrored() makes: threads in the first suite (whose timeouts and
 * concurrent replicas need them), in turn, the default, when the second suite runs the same tests again.
 * Strategies made otherwise (OneDevice, CentralStorage) run in turn. */
starfold_replica_mode_t tests_replica_mode = STARFOLD_REPLICAS_THREADS;

starfold_strategy_t mirrored(int n, const int *devices, starfold_topology_t topo, starfold_cross_device_ops_t ops)
{
    starfold_strategy_t s = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_mirrored_strategy_create(ctx, topo, n, devices, ops, &s), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_set_replica_mode(s, tests_replica_mode), STARFOLD_OK);
    return s;
}

const int dev01[2] = { 0, 1 };

int in_turn_suite_init(void)
{
    tests_replica_mode = STARFOLD_REPLICAS_IN_TURN;
    return 0;
}

int in_turn_suite_cleanup(void)
{
    tests_replica_mode = STARFOLD_REPLICAS_THREADS;
    return 0;
}
