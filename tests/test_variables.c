/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Variables of the strategies: TensorFlow's synchronization (ON_WRITE: mirrored, ON_READ:
 * sync-on-read) and aggregation (NONE, SUM, MEAN, ONLY_FIRST_REPLICA), updated and read in the replica
 * and the cross-replica context, with the errors TensorFlow gives and none of its hangs.
 *
 * CPU-only StarPU (STARPU_NCPU=2): the context and helpers of strategy_fixture.h.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starfold.h>

#include "base/common.h"
#include "distribute/distribute.h"
#include "strategy_fixture.h"
#include "util.h"
#include "runner.h"

/* ------------------------------------------------------------------------------------------------
 * Variables: aggregation (tf.VariableAggregation) and synchronization (tf.VariableSynchronization)
 *
 * Three replicas on devices listed out of order, {4, 1, 6}; replica r's value is [r + 1, 10 (r + 1)]
 * (so [1, 10], [2, 20], [3, 30]) unless a test says otherwise; variables are float32 [1, 2]. The
 * expected values are TensorFlow's, worked out in each test's comment.
 */

static const int vdevs[3] = { 4, 1, 6 };

typedef enum var_call { VAR_ASSIGN = 0, VAR_ADD, VAR_SUB } var_call_t;

static starfold_status_t var_call(var_call_t c, starfold_value_t var, starfold_value_t value)
{
    return c == VAR_ADD   ? starfold_variable_assign_add(var, value)
           : c == VAR_SUB ? starfold_variable_assign_sub(var, value)
                          : starfold_variable_assign(var, value);
}

typedef struct var_arg {
    starfold_value_t var, other;   /* the variable; other: replica 2 updates this one instead (when set) */
    var_call_t call;
    float vals[NDEV][2];           /* replica r's value */
    starfold_value_t shared;       /* set: every replica passes this very value */
    int absent;                    /* 1 + a replica that returns without updating (0: every replica updates) */
    int late_ms;                   /* replica 1 sleeps this long first */
    int then_all_reduce;           /* after the update, an all_reduce of 1.0: is the run still usable? */
    int read_after;                /* after the update, read_value in the replica context */
    starfold_status_t st[NDEV];
    char msg[NDEV][640];
    double elapsed[NDEV];
    float sum_after[NDEV];         /* the all_reduce's result */
    float read[NDEV][2];           /* read_value's result */
    int read_device[NDEV];         /* ... and its device */
} var_arg_t;

static starfold_status_t step_var(starfold_replica_context_t rc, void *arg)
{
    var_arg_t *a = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    if (a->absent == r + 1) return STARFOLD_OK;
    if (r == 1 && a->late_ms) sleep_ms(a->late_ms);
    starfold_value_t v = NULL;
    starfold_status_t st = a->shared ? STARFOLD_OK : local_value(rc, a->vals[r], 2, &v);
    const double t0 = starfold_tools_now();
    if (st == STARFOLD_OK) st = var_call(a->call, r == 2 && a->other ? a->other : a->var, a->shared ? a->shared : v);
    a->elapsed[r] = starfold_tools_now() - t0;
    a->st[r] = st;
    snprintf(a->msg[r], sizeof a->msg[r], "%s", st == STARFOLD_OK ? "" : starfold_last_error());
    starfold_value_destroy(v);
    if (a->then_all_reduce) {
        const float one = 1.0f;
        starfold_value_t x = NULL, sum = NULL;
        starfold_status_t st2 = local_value(rc, &one, 1, &x);
        if (st2 == STARFOLD_OK) st2 = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &x, NULL, &sum);
        if (st2 == STARFOLD_OK) st2 = starfold_value_read(sum, 0, &a->sum_after[r], sizeof(float));
        starfold_value_destroy(sum);
        starfold_value_destroy(x);
        if (st2 != STARFOLD_OK) return st2;
    }
    if (a->read_after && st == STARFOLD_OK) {
        starfold_value_t snap = NULL;
        st = starfold_variable_read_value(a->var, &snap);
        if (st == STARFOLD_OK) {
            a->read_device[r] = starfold_value_device(snap, 0);
            st = starfold_value_read(snap, 0, a->read[r], sizeof a->read[r]);
        }
        starfold_value_destroy(snap);
    }
    return st;
}

/* A variable of @s, float32 [x0, x1], with @sync and @agg. */
static starfold_value_t make_var(starfold_strategy_t s, starfold_variable_synchronization_t sync,
                                 starfold_variable_aggregation_t agg, float x0, float x1)
{
    starfold_variable_options_t o;
    starfold_variable_options_init(&o);
    o.synchronization = sync;
    o.aggregation = agg;
    const float init[2] = { x0, x1 };
    starfold_value_t v = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable_with_options(s, STARFOLD_FLOAT32, 2, init, &o, &v), STARFOLD_OK);
    return v;
}

/* Whether copy @c of @v holds [x0, x1] (printing what it holds when not). */
static int copy_is(starfold_value_t v, int c, float x0, float x1)
{
    float got[2] = { NAN, NAN };
    if (starfold_value_read(v, c, got, sizeof got) != STARFOLD_OK) return 0;
    if (got[0] == x0 && got[1] == x1) return 1;
    fprintf(stderr, "copy %d holds [%g, %g], expected [%g, %g]\n", c, got[0], got[1], x0, x1);
    return 0;
}

static int every_copy_is(starfold_value_t v, float x0, float x1)
{
    int ok = 1;
    for (int c = 0; c < starfold_value_num_components(v); c++) ok &= copy_is(v, c, x0, x1);
    return ok;
}

/* Replica r's value [r + 1, 10 (r + 1)] for every replica. */
static void default_values(var_arg_t *a)
{
    for (int r = 0; r < NDEV; r++) {
        a->vals[r][0] = (float)(r + 1);
        a->vals[r][1] = 10.0f * (float)(r + 1);
    }
}

/* Runs @call of @var on every replica of @s with the default values; the run's status. */
static starfold_status_t run_update(starfold_strategy_t s, starfold_value_t var, var_call_t call, var_arg_t *a)
{
    memset(a, 0, sizeof *a);
    a->var = var;
    a->call = call;
    default_values(a);
    return starfold_strategy_run(s, step_var, a);
}

/* The trace holds exactly one graph, a variable's update whose algorithm ends with @suffix. */
static int one_update_graph(const char *suffix)
{
    starfold__trace_entry_t e;
    memset(&e, 0, sizeof e);
    if (starfold__trace_count() != 1 || starfold__trace_get(0, &e) != 0) {
        fprintf(stderr, "%zu graphs traced, one expected\n", starfold__trace_count());
        return 0;
    }
    const size_t n = strlen(e.algorithm), k = strlen(suffix);
    return e.path == SF_PATH_UPDATE && n >= k && !strcmp(e.algorithm + n - k, suffix);
}

/*
 * tf.Variable(..., synchronization=, aggregation=) under a strategy: the defaults (AUTO -> ON_WRITE,
 * NONE), the layout of each kind, TensorFlow's refusals of synchronization NONE and of values outside
 * the enums, and the names.
 */
static void test_variable_options(void)
{
    starfold_variable_options_t o;
    memset(&o, 0xff, sizeof o);
    starfold_variable_options_init(&o);
    CU_ASSERT_EQUAL(o.synchronization, STARFOLD_SYNCHRONIZATION_AUTO);
    CU_ASSERT_EQUAL(o.aggregation, STARFOLD_AGGREGATION_NONE);
    starfold_variable_options_init(NULL);
    CU_ASSERT_STRING_EQUAL(starfold_variable_synchronization_name(STARFOLD_SYNCHRONIZATION_ON_READ), "ON_READ");
    CU_ASSERT_STRING_EQUAL(starfold_variable_synchronization_name(STARFOLD_SYNCHRONIZATION_AUTO), "AUTO");
    CU_ASSERT_STRING_EQUAL(starfold_variable_aggregation_name(STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA),
                           "ONLY_FIRST_REPLICA");
    CU_ASSERT_STRING_EQUAL(starfold_variable_aggregation_name((starfold_variable_aggregation_t)9), "unknown");

    starfold_strategy_t s = mirrored(3, vdevs, NULL, NULL);
    /* starfold_strategy_create_variable: TensorFlow's defaults, a MirroredVariable with no aggregation. */
    starfold_value_t v = NULL;
    const float init[2] = { 1, 2 };
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable(s, STARFOLD_FLOAT32, 2, init, &v), STARFOLD_OK);
    CU_ASSERT_TRUE(starfold_value_is_variable(v));
    CU_ASSERT_EQUAL(starfold_variable_synchronization(v), STARFOLD_SYNCHRONIZATION_ON_WRITE);
    CU_ASSERT_EQUAL(starfold_variable_aggregation(v), STARFOLD_AGGREGATION_NONE);
    CU_ASSERT_EQUAL(starfold_value_kind(v), STARFOLD_VALUE_MIRRORED);
    starfold_value_destroy(v);
    /* AUTO is ON_WRITE; ON_READ is one copy per replica, each its own (per-replica), init in each. */
    v = make_var(s, STARFOLD_SYNCHRONIZATION_AUTO, STARFOLD_AGGREGATION_MEAN, 1, 2);
    CU_ASSERT_EQUAL(starfold_variable_synchronization(v), STARFOLD_SYNCHRONIZATION_ON_WRITE);
    CU_ASSERT_EQUAL(starfold_variable_aggregation(v), STARFOLD_AGGREGATION_MEAN);
    starfold_value_destroy(v);
    v = make_var(s, STARFOLD_SYNCHRONIZATION_ON_READ, STARFOLD_AGGREGATION_SUM, 1, 2);
    CU_ASSERT_EQUAL(starfold_variable_synchronization(v), STARFOLD_SYNCHRONIZATION_ON_READ);
    CU_ASSERT_EQUAL(starfold_value_kind(v), STARFOLD_VALUE_PER_REPLICA);
    CU_ASSERT_EQUAL_FATAL(starfold_value_num_components(v), 3);
    for (int c = 0; c < 3; c++) CU_ASSERT_EQUAL(starfold_value_device(v, c), vdevs[c]);
    CU_ASSERT_TRUE(every_copy_is(v, 1, 2));
    starfold_value_destroy(v);

    /* TensorFlow's refusals; nothing is created. */
    starfold_value_t untouched = (starfold_value_t)(uintptr_t)0x5eed;
    o.synchronization = STARFOLD_SYNCHRONIZATION_NONE;
    CU_ASSERT_EQUAL(starfold_strategy_create_variable_with_options(s, STARFOLD_FLOAT32, 2, init, &o, &untouched),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(starfold_last_error(), "`NONE` variable synchronization mode is not supported with `tf.distribute` strategy."));
    o.synchronization = (starfold_variable_synchronization_t)9;
    CU_ASSERT_EQUAL(starfold_strategy_create_variable_with_options(s, STARFOLD_FLOAT32, 2, init, &o, &untouched),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "Invalid variable synchronization mode: 9"));
    o.synchronization = STARFOLD_SYNCHRONIZATION_ON_WRITE;
    o.aggregation = (starfold_variable_aggregation_t)7;
    CU_ASSERT_EQUAL(starfold_strategy_create_variable_with_options(s, STARFOLD_FLOAT32, 2, init, &o, &untouched),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "Invalid variable aggregation mode: 7"));
    CU_ASSERT_PTR_EQUAL(untouched, (starfold_value_t)(uintptr_t)0x5eed);
    CU_ASSERT_EQUAL(starfold_strategy_create_variable_with_options(NULL, STARFOLD_FLOAT32, 2, init, NULL, &v),
                    STARFOLD_ERR_INVALID_ARGUMENT);

    /* A value that is no variable has none of this; updating it is refused. */
    starfold_value_t plain = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, 3, vdevs, STARFOLD_FLOAT32, 2, init, &plain),
                          STARFOLD_OK);
    CU_ASSERT_FALSE(starfold_value_is_variable(plain));
    CU_ASSERT_EQUAL(starfold_variable_synchronization(plain), STARFOLD_SYNCHRONIZATION_NONE);
    CU_ASSERT_EQUAL(starfold_variable_assign(plain, plain), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "the value is not a variable"));
    CU_ASSERT_EQUAL(starfold_variable_read_value(plain, &untouched), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_variable_assign(NULL, plain), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_value_destroy(plain);
    starfold_strategy_destroy(s);

    /* CentralStorageStrategy: a mirrored variable is its one copy on the parameter device (the host),
     * a sync-on-read one has a copy per compute device. */
    CU_ASSERT_EQUAL_FATAL(starfold_central_storage_strategy_create(ctx, NULL, 3, vdevs, STARFOLD_DEVICE_HOST, &s),
                          STARFOLD_OK);
    v = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_SUM, 1, 2);
    CU_ASSERT_EQUAL(starfold_value_num_components(v), 1);
    CU_ASSERT_EQUAL(starfold_value_device(v, 0), STARFOLD_DEVICE_HOST);
    starfold_value_destroy(v);
    v = make_var(s, STARFOLD_SYNCHRONIZATION_ON_READ, STARFOLD_AGGREGATION_SUM, 1, 2);
    CU_ASSERT_EQUAL_FATAL(starfold_value_num_components(v), 3);
    for (int c = 0; c < 3; c++) CU_ASSERT_EQUAL(starfold_value_device(v, c), vdevs[c]);
    starfold_value_destroy(v);
    starfold_strategy_destroy(s);
}

/*
 * MirroredVariable with aggregation SUM in the replica context:
 *
 *   strategy = tf.distribute.MirroredStrategy(["GPU:4", "GPU:1", "GPU:6"])
 *   with strategy.scope():
 *       v = tf.Variable([1., 2.], aggregation=tf.VariableAggregation.SUM)
 *   def step():
 *       r = tf.distribute.get_replica_context().replica_id_in_sync_group
 *       v.assign_add([r + 1., 10. * (r + 1.)])     # [1, 10] + [2, 20] + [3, 30] = [6, 60]
 *   strategy.run(step)    ->  every copy [1 + 6, 2 + 60]  = [7, 62]
 *   ... v.assign_sub(...) ->  every copy [7 - 6, 62 - 60] = [1, 2]
 *   ... v.assign(...)     ->  every copy [6, 60]
 *
 * Each update is one graph: the all-reduce, then the copies' update. read_value in the replica
 * context gives the replica's own copy, on its device.
 */
static void test_mirrored_sum_in_replica_context(void)
{
    starfold_strategy_t s = mirrored(3, vdevs, NULL, NULL);
    starfold_value_t v = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_SUM, 1, 2);
    var_arg_t a;
    const var_call_t calls[3] = { VAR_ADD, VAR_SUB, VAR_ASSIGN };
    const char *const names[3] = { "+assign_add", "+assign_sub", "" };
    const float want[3][2] = { { 7, 62 }, { 1, 2 }, { 6, 60 } };
    for (int k = 0; k < 3; k++) {
        starfold__trace_reset();
        CU_ASSERT_EQUAL(run_update(s, v, calls[k], &a), STARFOLD_OK);
        for (int r = 0; r < 3; r++) CU_ASSERT_EQUAL(a.st[r], STARFOLD_OK);
        CU_ASSERT_TRUE(every_copy_is(v, want[k][0], want[k][1]));
        /* One graph; assign writes the all-reduce straight into the copies (no update task needed). */
        CU_ASSERT_TRUE(one_update_graph(names[k]));
    }
    /* read_value inside the run: each replica's copy on its own device. */
    memset(&a, 0, sizeof a);
    a.var = v;
    a.call = VAR_ADD;
    a.read_after = 1;
    default_values(&a);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_OK);
    for (int r = 0; r < 3; r++) {
        CU_ASSERT_EQUAL(a.read_device[r], vdevs[r]);
        CU_ASSERT(a.read[r][0] == 12.0f && a.read[r][1] == 120.0f); /* [6, 60] + [6, 60] */
    }
    /* With another cross-device ops (ReductionToOneDevice), the same answer. */
    starfold_cross_device_ops_t r2o = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_reduction_to_one_device_create(-1, &r2o), STARFOLD_OK);
    starfold_strategy_t s2 = mirrored(3, vdevs, NULL, r2o);
    starfold_value_t v2 = make_var(s2, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_SUM, 1, 2);
    CU_ASSERT_EQUAL(run_update(s2, v2, VAR_ADD, &a), STARFOLD_OK);
    CU_ASSERT_TRUE(every_copy_is(v2, 7, 62));
    starfold_value_destroy(v2);
    starfold_strategy_destroy(s2);
    starfold_cross_device_ops_destroy(r2o);
    starfold_value_destroy(v);
    starfold_strategy_destroy(s);
}

/*
 * MirroredVariable with aggregation MEAN in the replica context:
 *   v = [1, 2]; the replicas' values [1, 10], [2, 20], [3, 30] have the mean [2, 20]
 *   assign_add -> [3, 22];  assign_sub -> [1, 2];  assign -> [2, 20]
 * An integer variable with MEAN: TensorFlow refuses ("Cannot update non-float variables with
 * tf.VariableAggregation.MEAN aggregation in replica context. ..."), on every replica, none waiting.
 */
static void test_mirrored_mean_in_replica_context(void)
{
    starfold_strategy_t s = mirrored(3, vdevs, NULL, NULL);
    starfold_value_t v = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_MEAN, 1, 2);
    var_arg_t a;
    CU_ASSERT_EQUAL(run_update(s, v, VAR_ADD, &a), STARFOLD_OK);
    CU_ASSERT_TRUE(every_copy_is(v, 3, 22));
    CU_ASSERT_EQUAL(run_update(s, v, VAR_SUB, &a), STARFOLD_OK);
    CU_ASSERT_TRUE(every_copy_is(v, 1, 2));
    CU_ASSERT_EQUAL(run_update(s, v, VAR_ASSIGN, &a), STARFOLD_OK);
    CU_ASSERT_TRUE(every_copy_is(v, 2, 20));
    starfold_value_destroy(v);

    starfold_variable_options_t o;
    starfold_variable_options_init(&o);
    o.aggregation = STARFOLD_AGGREGATION_MEAN;
    const int32_t init[2] = { 1, 2 };
    starfold_value_t iv = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable_with_options(s, STARFOLD_INT32, 2, init, &o, &iv), STARFOLD_OK);
    memset(&a, 0, sizeof a);
    a.var = iv;
    a.call = VAR_ADD;
    starfold_value_t shared = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &vdevs[0], STARFOLD_INT32, 2, init,
                                                &shared),
                          STARFOLD_OK);
    a.shared = shared;
    starfold__trace_reset();
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_ERR_INVALID_ARGUMENT);
    for (int r = 0; r < 3; r++) {
        CU_ASSERT_EQUAL(a.st[r], STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(a.msg[r], "Cannot update non-float variables with tf.VariableAggregation.MEAN "
                                                "aggregation in replica context."));
    }
    CU_ASSERT_EQUAL(starfold__trace_count(), 0);
    int32_t got[2] = { 0, 0 };
    for (int c = 0; c < 3; c++) {
        CU_ASSERT_EQUAL(starfold_value_read(iv, c, got, sizeof got), STARFOLD_OK);
        CU_ASSERT(got[0] == 1 && got[1] == 2);
    }
    starfold_value_destroy(shared);
    starfold_value_destroy(iv);
    starfold_strategy_destroy(s);
}

/*
 * MirroredVariable with aggregation ONLY_FIRST_REPLICA: replica 0's value alone, the others ignored.
 *   values [1, 10], [200, 2000], [300, 3000]; v = [1, 2]
 *   assign_add -> [2, 12];  assign_sub -> [1, 2];  assign -> [1, 10]
 */
static void test_mirrored_only_first_replica(void)
{
    starfold_strategy_t s = mirrored(3, vdevs, NULL, NULL);
    starfold_value_t v = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA, 1, 2);
    const var_call_t calls[3] = { VAR_ADD, VAR_SUB, VAR_ASSIGN };
    const float want[3][2] = { { 2, 12 }, { 1, 2 }, { 1, 10 } };
    for (int k = 0; k < 3; k++) {
        var_arg_t a;
        memset(&a, 0, sizeof a);
        a.var = v;
        a.call = calls[k];
        default_values(&a);
        for (int r = 1; r < 3; r++) a.vals[r][0] *= 100.0f, a.vals[r][1] *= 100.0f;
        starfold__trace_reset();
        CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_OK);
        CU_ASSERT_TRUE(every_copy_is(v, want[k][0], want[k][1]));
        CU_ASSERT_TRUE(one_update_graph(k == 0 ? "+assign_add" : k == 1 ? "+assign_sub" : ""));
    }
    starfold_value_destroy(v);
    starfold_strategy_destroy(s);
}

/*
 * A MirroredVariable without aggregation (starfold_strategy_create_variable()) updated in the replica
 * context: TensorFlow's refusal, "You must specify an aggregation method to update a MirroredVariable
 * in Replica Context. ...", on every replica, none waiting for the others, nothing submitted, the
 * copies unchanged ([1, 2]), and the run still usable (an all_reduce of 1.0 afterwards gives 3.0).
 * Then what would hang in TensorFlow: a replica that never updates (the others fail at once), a
 * replica that is late past the timeout (every replica fails with STARFOLD_ERR_TIMEOUT, nothing
 * submitted), replicas updating different variables.
 */
static void test_mirrored_update_refusals_and_no_hang(void)
{
    starfold_strategy_t s = mirrored(3, vdevs, NULL, NULL);
    const float init[2] = { 1, 2 };
    starfold_value_t v = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable(s, STARFOLD_FLOAT32, 2, init, &v), STARFOLD_OK);
    var_arg_t a;
    const var_call_t calls[3] = { VAR_ASSIGN, VAR_ADD, VAR_SUB };
    for (int k = 0; k < 3; k++) {
        memset(&a, 0, sizeof a);
        a.var = v;
        a.call = calls[k];
        a.then_all_reduce = 1;
        default_values(&a);
        starfold__trace_reset();
        const double t0 = starfold_tools_now();
        CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_TRUE(starfold_tools_now() - t0 < 5.0);
        for (int r = 0; r < 3; r++) {
            CU_ASSERT_EQUAL(a.st[r], STARFOLD_ERR_INVALID_ARGUMENT);
            CU_ASSERT_PTR_NOT_NULL(strstr(a.msg[r], "You must specify an aggregation method to update a MirroredVariable "
                                                    "in Replica Context. You can do so by passing an explicit value for "
                                                    "argument `aggregation` to tf.Variable(..)."));
            CU_ASSERT_EQUAL(a.sum_after[r], 3.0f); /* the refusal did not break the run */
        }
        CU_ASSERT_EQUAL(starfold__trace_count(), 1); /* the all_reduce only */
        CU_ASSERT_TRUE(every_copy_is(v, 1, 2));
    }

    /* With an aggregation: replica 2 never updates; replicas 0 and 1 fail at once, no timeout set. */
    starfold_value_t sv = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_SUM, 1, 2);
    memset(&a, 0, sizeof a);
    a.var = sv;
    a.call = VAR_ADD;
    a.absent = 3;
    default_values(&a);
    const double t0 = starfold_tools_now();
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_TRUE(starfold_tools_now() - t0 < 5.0);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "Some replicas made a different number of"));
    CU_ASSERT_EQUAL(a.st[0], STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(a.st[1], STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_TRUE(every_copy_is(sv, 1, 2));

    /* Replica 1 joins 1.2 s late; the others give up after the strategy's timeout (0.2 s), every replica
     * fails with STARFOLD_ERR_TIMEOUT and nothing was submitted. */
    starfold_communication_options_t o;
    starfold_communication_options_init(&o);
    o.timeout_seconds = 0.2;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_set_communication_options(s, &o), STARFOLD_OK);
    memset(&a, 0, sizeof a);
    a.var = sv;
    a.call = VAR_ADD;
    a.late_ms = 1200;
    default_values(&a);
    starfold__trace_reset();
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_ERR_TIMEOUT);
    for (int r = 0; r < 3; r++) CU_ASSERT_EQUAL(a.st[r], STARFOLD_ERR_TIMEOUT);
    CU_ASSERT_TRUE(a.elapsed[0] < 0.9 && a.elapsed[1] < 0.5);
    CU_ASSERT_EQUAL(starfold__trace_count(), 0);
    CU_ASSERT_TRUE(every_copy_is(sv, 1, 2));
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_set_communication_options(s, NULL), STARFOLD_OK);

    /* Replica 2 updates another variable: every replica fails, none hangs. */
    starfold_value_t other = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_SUM, 1, 2);
    memset(&a, 0, sizeof a);
    a.var = sv;
    a.other = other;
    a.call = VAR_ADD;
    default_values(&a);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_ERR_INVALID_ARGUMENT);
    for (int r = 0; r < 3; r++) CU_ASSERT_EQUAL(a.st[r], STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(a.msg[0], "replica 2 updates another variable than replica 0"));
    CU_ASSERT_TRUE(every_copy_is(sv, 1, 2) && every_copy_is(other, 1, 2));
    starfold_value_destroy(other);
    starfold_value_destroy(sv);
    starfold_value_destroy(v);
    starfold_strategy_destroy(s);
}

/*
 * The very same value on every replica is one value, not a per-replica one (TensorFlow's regroup
 * collapses it): SUM would count it 3 times and is refused, as TensorFlow's reduce_non_distributed_value
 * refuses it; MEAN gives the value itself: v = [1, 2], value [5, 6] -> assign_add gives [6, 8].
 */
static void test_mirrored_same_value_on_every_replica(void)
{
    starfold_strategy_t s = mirrored(3, vdevs, NULL, NULL);
    const float x[2] = { 5, 6 };
    starfold_value_t shared = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &vdevs[1], STARFOLD_FLOAT32, 2, x,
                                                &shared),
                          STARFOLD_OK);
    starfold_value_t sum = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_SUM, 1, 2);
    starfold_value_t mean = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_MEAN, 1, 2);
    var_arg_t a;
    memset(&a, 0, sizeof a);
    a.var = sum;
    a.call = VAR_ADD;
    a.shared = shared;
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_ERR_INVALID_ARGUMENT);
    for (int r = 0; r < 3; r++)
        CU_ASSERT_PTR_NOT_NULL(strstr(a.msg[r], "A non-DistributedValues value (the same one-component value on every "
                                                "replica) cannot be reduced with the given reduce op ReduceOp.SUM"));
    CU_ASSERT_TRUE(every_copy_is(sum, 1, 2));
    memset(&a, 0, sizeof a);
    a.var = mean;
    a.call = VAR_ADD;
    a.shared = shared;
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_OK);
    CU_ASSERT_TRUE(every_copy_is(mean, 6, 8));
    starfold_value_destroy(mean);
    starfold_value_destroy(sum);
    starfold_value_destroy(shared);
    starfold_strategy_destroy(s);
}

/*
 * A mirrored variable in the cross-replica context: every copy is given the same value, whatever the
 * aggregation (TensorFlow's strategy.extended.update of each copy):
 *   v = [1, 2];  assign_add([5, 5]) on device 7 -> [6, 7];  assign_sub([1, 1]) on the host -> [5, 6];
 *   assign(mirrored [9, 8]) -> [9, 8]; from a merge function (the cross-replica context inside a run),
 *   assign_add([1, 1]) -> [10, 9]. A per-replica value of several components is refused (it would
 *   leave the copies different); read_value gives copy 0 on the host.
 */
/* merge_fn: every replica passed {variable, value}; the update runs once, in the cross-replica context. */
static starfold_status_t add_one_merge_fn(starfold_strategy_t strategy, int n, void *const *args, void **results)
{
    (void)strategy;
    (void)results;
    (void)n;
    starfold_value_t *const pair = args[0];
    return starfold_variable_assign_add(pair[0], pair[1]);
}

static starfold_status_t step_merge_add(starfold_replica_context_t rc, void *arg)
{
    return starfold_replica_context_merge_call(rc, add_one_merge_fn, arg, NULL);
}

static void test_mirrored_cross_replica_updates(void)
{
    starfold_strategy_t s = mirrored(3, vdevs, NULL, NULL);
    for (int agg = 0; agg < 2; agg++) {
        starfold_value_t v = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE,
                                      agg ? STARFOLD_AGGREGATION_SUM : STARFOLD_AGGREGATION_NONE, 1, 2);
        const int d7 = 7, host = STARFOLD_DEVICE_HOST;
        const float five[2] = { 5, 5 }, one[2] = { 1, 1 }, nine[2] = { 9, 8 };
        starfold_value_t x = NULL, y = NULL, m = NULL, pr = NULL, snap = NULL;
        CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &d7, STARFOLD_FLOAT32, 2, five, &x),
                              STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, 1, &host, STARFOLD_FLOAT32, 2, one, &y),
                              STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, 3, vdevs, STARFOLD_FLOAT32, 2, nine, &m),
                              STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 3, vdevs, STARFOLD_FLOAT32, 2, nine,
                                                    &pr),
                              STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_variable_assign_add(v, x), STARFOLD_OK);
        CU_ASSERT_TRUE(every_copy_is(v, 6, 7));
        CU_ASSERT_EQUAL(starfold_variable_assign_sub(v, y), STARFOLD_OK);
        CU_ASSERT_TRUE(every_copy_is(v, 5, 6));
        starfold__trace_reset();
        CU_ASSERT_EQUAL(starfold_variable_assign(v, m), STARFOLD_OK);
        CU_ASSERT_TRUE(every_copy_is(v, 9, 8));
        CU_ASSERT_TRUE(one_update_graph("assign")); /* each copy from the mirrored value's copy beside it */
        CU_ASSERT_EQUAL(starfold_variable_assign(v, pr), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "would leave the variable's copies different"));
        CU_ASSERT_EQUAL(starfold_variable_assign(v, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
        starfold_value_t wrong = NULL;
        CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &d7, STARFOLD_FLOAT32, 1, five,
                                                    &wrong),
                              STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_variable_assign(v, wrong), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "cannot assign 1 x float32 to a variable of 2 x float32"));
        starfold_value_destroy(wrong);
        CU_ASSERT_TRUE(every_copy_is(v, 9, 8));
        /* In a merge function: the cross-replica context, whatever the aggregation. */
        starfold_value_t pair[2] = { v, y };
        CU_ASSERT_EQUAL(starfold_strategy_run(s, step_merge_add, pair), STARFOLD_OK);
        CU_ASSERT_TRUE(every_copy_is(v, 10, 9));
        CU_ASSERT_EQUAL_FATAL(starfold_variable_read_value(v, &snap), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_value_device(snap, 0), STARFOLD_DEVICE_HOST);
        CU_ASSERT_TRUE(copy_is(snap, 0, 10, 9));
        starfold_value_destroy(snap);
        starfold_value_destroy(pr);
        starfold_value_destroy(m);
        starfold_value_destroy(y);
        starfold_value_destroy(x);
        starfold_value_destroy(v);
    }
    starfold_strategy_destroy(s);
}

/*
 * SyncOnReadVariable in the replica context: each replica updates its own copy, no communication (no
 * collective: a replica that does not update leaves the others unaffected).
 *
 *   with strategy.scope():
 *       m = tf.Variable([0., 0.], synchronization=ON_READ, aggregation=SUM)
 *   strategy.run(lambda: m.assign_add([r + 1., 10. * (r + 1.)]))
 *       -> copies [1, 10], [2, 20], [3, 30]; read_value in each replica gives its own copy
 *   strategy.run(lambda: m.assign_sub([1., 1.]))   -> copies [0, 9], [1, 19], [2, 29]
 *   only replica 1: m.assign([7., 7.])              -> copies [0, 9], [7, 7], [2, 29]
 */
static void test_sync_on_read_replica_context(void)
{
    starfold_strategy_t s = mirrored(3, vdevs, NULL, NULL);
    starfold_value_t m = make_var(s, STARFOLD_SYNCHRONIZATION_ON_READ, STARFOLD_AGGREGATION_SUM, 0, 0);
    var_arg_t a;
    memset(&a, 0, sizeof a);
    a.var = m;
    a.call = VAR_ADD;
    a.read_after = 1;
    default_values(&a);
    starfold__trace_reset();
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_OK);
    for (int r = 0; r < 3; r++) {
        CU_ASSERT_TRUE(copy_is(m, r, (float)(r + 1), 10.0f * (float)(r + 1)));
        CU_ASSERT_EQUAL(a.read_device[r], vdevs[r]);
        CU_ASSERT(a.read[r][0] == (float)(r + 1) && a.read[r][1] == 10.0f * (float)(r + 1));
    }
    /* No communication: every graph ran on one device (an update of one copy, a copy of one copy). */
    for (size_t i = 0; i < starfold__trace_count() && i < SF_TRACE_MAX; i++) {
        starfold__trace_entry_t e;
        starfold__trace_get(i, &e);
        CU_ASSERT_EQUAL(e.num_destinations, 1);
        CU_ASSERT_NOT_EQUAL(e.path, SF_PATH_ALL_REDUCE);
    }
    memset(&a, 0, sizeof a);
    a.var = m;
    a.call = VAR_SUB;
    for (int r = 0; r < 3; r++) a.vals[r][0] = a.vals[r][1] = 1.0f;
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_OK);
    for (int r = 0; r < 3; r++) CU_ASSERT_TRUE(copy_is(m, r, (float)r, 10.0f * (float)(r + 1) - 1.0f));
    /* Not a collective: replicas 0 and 2 do nothing, replica 1 assigns its copy (absent = 1 + replica). */
    for (int skip = 0; skip < 3; skip += 2) {
        memset(&a, 0, sizeof a);
        a.var = m;
        a.call = VAR_ASSIGN;
        for (int r = 0; r < 3; r++) a.vals[r][0] = a.vals[r][1] = 7.0f;
        a.absent = skip + 1;
        CU_ASSERT_EQUAL(starfold_strategy_run(s, step_var, &a), STARFOLD_OK);
    }
    CU_ASSERT_TRUE(copy_is(m, 0, 7, 7) && copy_is(m, 1, 7, 7) && copy_is(m, 2, 7, 7));
    starfold_value_destroy(m);
    starfold_strategy_destroy(s);
}

/*
 * SyncOnReadVariable read in the cross-replica context: TensorFlow's
 * strategy.reduce(aggregation, var, axis=None), on the host. Copies [1, 10], [2, 20], [3, 30]:
 *   SUM -> [6, 60];  MEAN -> [2, 20];  ONLY_FIRST_REPLICA -> copy 0, [1, 10];
 *   NONE -> "Could not convert from `tf.VariableAggregation` VariableAggregation.NONE to`tf.distribute.ReduceOp` type"
 */
static void test_sync_on_read_cross_replica_read(void)
{
    starfold_strategy_t s = mirrored(3, vdevs, NULL, NULL);
    const starfold_variable_aggregation_t aggs[4] = { STARFOLD_AGGREGATION_SUM, STARFOLD_AGGREGATION_MEAN,
                                                      STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA, STARFOLD_AGGREGATION_NONE };
    const float want[3][2] = { { 6, 60 }, { 2, 20 }, { 1, 10 } };
    for (int k = 0; k < 4; k++) {
        starfold_value_t m = make_var(s, STARFOLD_SYNCHRONIZATION_ON_READ, aggs[k], 0, 0);
        var_arg_t a;
        CU_ASSERT_EQUAL(run_update(s, m, VAR_ADD, &a), STARFOLD_OK); /* each replica its own copy */
        starfold_value_t snap = (starfold_value_t)(uintptr_t)0x5eed;
        if (k < 3) {
            CU_ASSERT_EQUAL_FATAL(starfold_variable_read_value(m, &snap), STARFOLD_OK);
            CU_ASSERT_EQUAL(starfold_value_device(snap, 0), STARFOLD_DEVICE_HOST);
            CU_ASSERT_TRUE(copy_is(snap, 0, want[k][0], want[k][1]));
            starfold_value_destroy(snap);
        } else {
            CU_ASSERT_EQUAL(starfold_variable_read_value(m, &snap), STARFOLD_ERR_INVALID_ARGUMENT);
            CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "Could not convert from `tf.VariableAggregation` "
                                                                 "VariableAggregation.NONE to`tf.distribute.ReduceOp` type"));
            CU_ASSERT_PTR_EQUAL(snap, (starfold_value_t)(uintptr_t)0x5eed);
        }
        for (int r = 0; r < 3; r++) CU_ASSERT_TRUE(copy_is(m, r, (float)(r + 1), 10.0f * (float)(r + 1))); /* read only */
        starfold_value_destroy(m);
    }
    starfold_strategy_destroy(s);
}

/*
 * SyncOnReadVariable assigned in the cross-replica context (TensorFlow's on_read_assign_cross_replica):
 *   SUM:  assign([9, 3]) -> each copy [3, 1] (value / num_replicas), so that reading gives [9, 3] back;
 *         assign_add and assign_sub are refused ("SyncOnReadVariable does not support `assign_add` in
 *         cross-replica context when aggregation is set to `tf.VariableAggregation.SUM`.");
 *         int32 assign(10) -> each copy 3 (10 / 3 truncated), read 9.
 *   MEAN: assign([9, 3]) -> each copy [9, 3]; assign_add([1, 1]) -> [10, 4]; read -> [10, 4].
 *   ONLY_FIRST_REPLICA: assign([9, 3]) -> each copy [9, 3]; assign_sub([1, 1]) -> [8, 2]; read -> [8, 2].
 */
static void test_sync_on_read_cross_replica_assign(void)
{
    starfold_strategy_t s = mirrored(3, vdevs, NULL, NULL);
    const int host = STARFOLD_DEVICE_HOST;
    const float nine[2] = { 9, 3 }, one[2] = { 1, 1 };
    starfold_value_t x = NULL, y = NULL, snap = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, 1, &host, STARFOLD_FLOAT32, 2, nine, &x),
                          STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, 1, &vdevs[2], STARFOLD_FLOAT32, 2, one, &y),
                          STARFOLD_OK);

    starfold_value_t m = make_var(s, STARFOLD_SYNCHRONIZATION_ON_READ, STARFOLD_AGGREGATION_SUM, 0, 0);
    CU_ASSERT_EQUAL(starfold_variable_assign(m, x), STARFOLD_OK);
    CU_ASSERT_TRUE(every_copy_is(m, 3, 1));
    CU_ASSERT_EQUAL_FATAL(starfold_variable_read_value(m, &snap), STARFOLD_OK);
    CU_ASSERT_TRUE(copy_is(snap, 0, 9, 3));
    starfold_value_destroy(snap);
    CU_ASSERT_EQUAL(starfold_variable_assign_add(m, y), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "SyncOnReadVariable does not support `assign_add` in "
                                                         "cross-replica context when aggregation is set to "
                                                         "`tf.VariableAggregation.SUM`."));
    CU_ASSERT_EQUAL(starfold_variable_assign_sub(m, y), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "does not support `assign_sub`"));
    CU_ASSERT_TRUE(every_copy_is(m, 3, 1));
    starfold_value_destroy(m);

    starfold_variable_options_t o;
    starfold_variable_options_init(&o);
    o.synchronization = STARFOLD_SYNCHRONIZATION_ON_READ;
    o.aggregation = STARFOLD_AGGREGATION_SUM;
    const int32_t ten = 10;
    starfold_value_t im = NULL, iten = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable_with_options(s, STARFOLD_INT32, 1, NULL, &o, &im), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, 1, &host, STARFOLD_INT32, 1, &ten, &iten),
                          STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_variable_assign(im, iten), STARFOLD_OK);
    int32_t got = 0;
    for (int c = 0; c < 3; c++) {
        CU_ASSERT_EQUAL(starfold_value_read(im, c, &got, sizeof got), STARFOLD_OK);
        CU_ASSERT_EQUAL(got, 3);
    }
    CU_ASSERT_EQUAL_FATAL(starfold_variable_read_value(im, &snap), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_read(snap, 0, &got, sizeof got), STARFOLD_OK);
    CU_ASSERT_EQUAL(got, 9);
    starfold_value_destroy(snap);
    starfold_value_destroy(iten);
    starfold_value_destroy(im);

    m = make_var(s, STARFOLD_SYNCHRONIZATION_ON_READ, STARFOLD_AGGREGATION_MEAN, 0, 0);
    CU_ASSERT_EQUAL(starfold_variable_assign(m, x), STARFOLD_OK);
    CU_ASSERT_TRUE(every_copy_is(m, 9, 3));
    CU_ASSERT_EQUAL(starfold_variable_assign_add(m, y), STARFOLD_OK);
    CU_ASSERT_TRUE(every_copy_is(m, 10, 4));
    CU_ASSERT_EQUAL_FATAL(starfold_variable_read_value(m, &snap), STARFOLD_OK);
    CU_ASSERT_TRUE(copy_is(snap, 0, 10, 4));
    starfold_value_destroy(snap);
    starfold_value_destroy(m);

    m = make_var(s, STARFOLD_SYNCHRONIZATION_ON_READ, STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA, 0, 0);
    CU_ASSERT_EQUAL(starfold_variable_assign(m, x), STARFOLD_OK);
    CU_ASSERT_TRUE(every_copy_is(m, 9, 3));
    CU_ASSERT_EQUAL(starfold_variable_assign_sub(m, y), STARFOLD_OK);
    CU_ASSERT_TRUE(every_copy_is(m, 8, 2));
    CU_ASSERT_EQUAL_FATAL(starfold_variable_read_value(m, &snap), STARFOLD_OK);
    CU_ASSERT_TRUE(copy_is(snap, 0, 8, 2));
    starfold_value_destroy(snap);
    starfold_value_destroy(m);
    starfold_value_destroy(y);
    starfold_value_destroy(x);
    starfold_strategy_destroy(s);
}

/*
 * The other strategies' variables in the replica context:
 *   CentralStorageStrategy(compute [4, 1, 6], parameters on the host), an AggregatingVariable with SUM:
 *       [1, 2] + ([1, 10] + [2, 20] + [3, 30]) = [7, 62] in its one copy on the host; without an
 *       aggregation TensorFlow's refusal names an AggregatingVariable.
 *   OneDeviceStrategy("GPU:5"): an ordinary variable, no aggregation needed: [1, 2] + [1, 10] = [2, 12].
 */
static void test_variables_of_other_strategies(void)
{
    starfold_strategy_t s = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_central_storage_strategy_create(ctx, NULL, 3, vdevs, STARFOLD_DEVICE_HOST, &s),
                          STARFOLD_OK);
    starfold_value_t v = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_SUM, 1, 2);
    var_arg_t a;
    starfold__trace_reset();
    CU_ASSERT_EQUAL(run_update(s, v, VAR_ADD, &a), STARFOLD_OK);
    CU_ASSERT_TRUE(copy_is(v, 0, 7, 62));
    CU_ASSERT_TRUE(one_update_graph("+assign_add"));
    starfold_value_destroy(v);
    v = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_NONE, 1, 2);
    CU_ASSERT_EQUAL(run_update(s, v, VAR_ADD, &a), STARFOLD_ERR_INVALID_ARGUMENT);
    for (int r = 0; r < 3; r++)
        CU_ASSERT_PTR_NOT_NULL(strstr(a.msg[r], "You must specify an aggregation method to update a AggregatingVariable"));
    CU_ASSERT_TRUE(copy_is(v, 0, 1, 2));
    starfold_value_destroy(v);
    starfold_strategy_destroy(s);

    CU_ASSERT_EQUAL_FATAL(starfold_one_device_strategy_create(ctx, NULL, 5, &s), STARFOLD_OK);
    v = make_var(s, STARFOLD_SYNCHRONIZATION_ON_WRITE, STARFOLD_AGGREGATION_NONE, 1, 2);
    CU_ASSERT_EQUAL(run_update(s, v, VAR_ADD, &a), STARFOLD_OK);
    CU_ASSERT_TRUE(copy_is(v, 0, 2, 12));
    starfold_value_destroy(v);
    starfold_strategy_destroy(s);
}

/* Usage: test_variables [SUBSTRING]: only the tests whose name contains SUBSTRING. */
int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    static const starfold__tu_test_t tests[] = {
        { "variables: synchronization and aggregation options", test_variable_options },
        { "mirrored variable, SUM, replica context", test_mirrored_sum_in_replica_context },
        { "mirrored variable, MEAN, replica context", test_mirrored_mean_in_replica_context },
        { "mirrored variable, ONLY_FIRST_REPLICA, replica context", test_mirrored_only_first_replica },
        { "mirrored variable, NONE refused, no replica hangs", test_mirrored_update_refusals_and_no_hang },
        { "mirrored variable, the same value on every replica", test_mirrored_same_value_on_every_replica },
        { "mirrored variable, cross-replica context", test_mirrored_cross_replica_updates },
        { "sync-on-read variable, replica context", test_sync_on_read_replica_context },
        { "sync-on-read variable, cross-replica read", test_sync_on_read_cross_replica_read },
        { "sync-on-read variable, cross-replica assign", test_sync_on_read_cross_replica_assign },
        { "variables of CentralStorage and OneDevice strategies", test_variables_of_other_strategies },
    };
    static const starfold__tu_test_t in_turn_tests[] = {
        { "in turn: mirrored variable, SUM, replica context", test_mirrored_sum_in_replica_context },
        { "in turn: mirrored variable, MEAN, replica context", test_mirrored_mean_in_replica_context },
        { "in turn: mirrored variable, ONLY_FIRST_REPLICA", test_mirrored_only_first_replica },
        { "in turn: mirrored variable, the same value on every replica", test_mirrored_same_value_on_every_replica },
        { "in turn: sync-on-read variable, replica context", test_sync_on_read_replica_context },
    };
    if (suite_init() != 0) {
        fprintf(stderr, "test_variables: cannot create the context: %s\n", starfold_last_error());
        return 77;
    }
    if (starfold__tu_begin() != 0) return 1;
    if (starfold__tu_add("distribute: variables (CPU-only)", NULL, NULL, tests, SF_TU_COUNT(tests), only) != 0) return 1;
    if (starfold__tu_add("distribute: variables, replicas in turn (CPU-only)", in_turn_suite_init, in_turn_suite_cleanup,
                         in_turn_tests, SF_TU_COUNT(in_turn_tests), only) != 0)
        return 1;
    const unsigned failed = starfold__tu_run();
    suite_cleanup();
    return failed ? 1 : 0;
}
