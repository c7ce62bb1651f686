/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Strategies, strategy.run, the replica context (all_reduce, merge_call) and the cross-replica
 * methods, with the examples of TensorFlow's documentation (the seeds) as tests:
 *
 *   ReplicaContext.all_reduce:  1.0 on 2 replicas -> 2.0 on both;  [1.0, 2.0] -> [2.0, 4.0]
 *   ReplicaContext:             replica_id_in_sync_group is 0 and 1
 *   batch_reduce_to + merge_call + update (value 1.0 per replica, variable 0.0):
 *       MirroredStrategy(["GPU:0", "GPU:1"])                              -> 2.0 on both copies
 *       CentralStorageStrategy(compute=["GPU:0", "GPU:1"], param="CPU:0")  -> 2.0
 *       OneDeviceStrategy("GPU:0")                                        -> 1.0
 *
 * and the errors that replace TensorFlow's hangs: a timeout when a replica does not join, mismatched
 * merge_call counts, a replica that fails while the others wait.
 *
 * CPU-only StarPU (STARPU_NCPU=2): one context of 8 logical devices; strategies over subsets of them,
 * planned on the "host" topology or on the built-in DGX-1 tables (the topology only plans the graph).
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>
#include <starfold.h>

#include "base/common.h"
#include "distribute/distribute.h"
#include "exec/exec.h"
#include "strategy_fixture.h"
#include "util.h"
#include "runner.h"


/* ------------------------------------------------------------------------------------------------
 * Seeds: ReplicaContext.all_reduce and replica_id_in_sync_group
 */

typedef struct seed_out {
    float got[NDEV][2];
    int ids[NDEV];
    int nreplicas[NDEV];
    int devices[NDEV];
    int ctx_ok[NDEV];
    starfold_status_t st[NDEV];
} seed_out_t;

/*
 *   def step_fn():
 *       ctx = tf.distribute.get_replica_context()
 *       value = tf.identity(1.)
 *       return ctx.all_reduce(tf.distribute.ReduceOp.SUM, value)
 */
static starfold_status_t step_all_reduce_one(starfold_replica_context_t rc, void *arg)
{
    seed_out_t *out = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    const float one = 1.0f;
    starfold_value_t value = NULL, sum = NULL;
    starfold_status_t st = local_value(rc, &one, 1, &value);
    if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &value, NULL, &sum);
    if (st == STARFOLD_OK) {
        out->devices[r] = starfold_value_device(sum, 0);
        st = starfold_value_read(sum, 0, &out->got[r][0], sizeof(float));
    }
    starfold_value_destroy(sum);
    starfold_value_destroy(value);
    return out->st[r] = st;
}

static void test_seed_all_reduce(void)
{
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    seed_out_t out;
    memset(&out, 0, sizeof out);
    starfold__trace_reset();
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_all_reduce_one, &out), STARFOLD_OK);
    for (int r = 0; r < 2; r++) {
        CU_ASSERT_EQUAL(out.got[r][0], 2.0f);
        CU_ASSERT_EQUAL(out.devices[r], r); /* each replica's result is on its own device */
    }
    CU_ASSERT_EQUAL(starfold__trace_count(), 1);
    starfold_strategy_destroy(s);
}

/* value1 = 1., value2 = 2.; ctx.all_reduce(SUM, [value1, value2]) -> [2., 4.] on both replicas. */
static starfold_status_t step_all_reduce_list(starfold_replica_context_t rc, void *arg)
{
    seed_out_t *out = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    const float one = 1.0f, two = 2.0f;
    starfold_value_t v[2] = { NULL, NULL }, res[2] = { NULL, NULL };
    starfold_status_t st = local_value(rc, &one, 1, &v[0]);
    if (st == STARFOLD_OK) st = local_value(rc, &two, 1, &v[1]);
    if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 2, v, NULL, res);
    for (int i = 0; i < 2 && st == STARFOLD_OK; i++) st = starfold_value_read(res[i], 0, &out->got[r][i], sizeof(float));
    for (int i = 0; i < 2; i++) {
        starfold_value_destroy(res[i]);
        starfold_value_destroy(v[i]);
    }
    return st;
}

static void test_seed_all_reduce_list(void)
{
    starfold_cross_device_ops_t hc = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_hierarchical_copy_all_reduce_create(1, &hc), STARFOLD_OK);
    starfold_strategy_t strategies[2] = { mirrored(2, dev01, NULL, NULL), mirrored(2, dev01, host8, hc) };
    for (int k = 0; k < 2; k++) {
        seed_out_t out;
        memset(&out, 0, sizeof out);
        starfold__trace_reset();
        CU_ASSERT_EQUAL(starfold_strategy_run(strategies[k], step_all_reduce_list, &out), STARFOLD_OK);
        for (int r = 0; r < 2; r++) {
            CU_ASSERT_EQUAL(out.got[r][0], 2.0f);
            CU_ASSERT_EQUAL(out.got[r][1], 4.0f);
        }
        /* Both values in ONE batched collective: one graph of two tensors. */
        CU_ASSERT_EQUAL(starfold__trace_count(), 1);
        starfold__trace_entry_t e;
        starfold__trace_get(0, &e);
        CU_ASSERT_EQUAL(e.num_tensors, 2);
        CU_ASSERT_EQUAL(e.path, SF_PATH_ALL_REDUCE); /* the default ("auto") and hierarchical copy alike */
        starfold_strategy_destroy(strategies[k]);
    }
    starfold_cross_device_ops_destroy(hc);
}

/*
 * A training loop's all_reduce: each replica's own three values, made once, written (one by one, or
 * with starfold_value_write_many() every other step) and all-reduced every step. From the second
 * step on the leader finds the batch plan of the step before (its values over the replicas' carry
 * the same stamps); once a replica's value moved out of the arena, it plans every step (a plan is
 * only kept over views of the arena). Every step's sums are checked.
 */
typedef struct loop_arg {
    starfold_value_t mine[2][3];
    starfold_value_t stray; /* not NULL: what replica 1 passes instead of its value 0 (not written) */
    int step;
    float got[2][3];
} loop_arg_t;

static starfold_status_t step_all_reduce_loop(starfold_replica_context_t rc, void *arg)
{
    loop_arg_t *a = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    starfold_status_t st = STARFOLD_OK;
    /* The replicas write at the same time: one value at a time on even steps, all three at once on odd ones. */
    float x[3][4];
    const void *srcs[3];
    static const int comps[3] = { 0, 0, 0 };
    static const size_t bytes[3] = { sizeof x[0], sizeof x[0], sizeof x[0] };
    for (int i = 0; i < 3; i++) {
        const float row[4] = { (float)(a->step * 10 + r * 3 + i), 1, 2, 3 };
        memcpy(x[i], row, sizeof row);
        srcs[i] = x[i];
    }
    if (a->step % 2) st = starfold_value_write_many(3, a->mine[r], comps, srcs, bytes);
    for (int i = 0; a->step % 2 == 0 && i < 3 && st == STARFOLD_OK; i++)
        st = starfold_value_write(a->mine[r][i], 0, x[i], sizeof x[i]);
    starfold_value_t res[3] = { NULL, NULL, NULL }, pass[3] = { a->mine[r][0], a->mine[r][1], a->mine[r][2] };
    if (r == 1 && a->stray) pass[0] = a->stray;
    if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 3, pass, NULL, res);
    for (int i = 0; i < 3 && st == STARFOLD_OK; i++) st = starfold_value_read(res[i], 0, &a->got[r][i], sizeof(float));
    for (int i = 0; i < 3; i++) starfold_value_destroy(res[i]);
    return st;
}

/* Each replica's three values of 4 float32, made once for a loop. */
static void loop_values_make(loop_arg_t *a)
{
    memset(a, 0, sizeof *a);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 3; i++)
            CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &dev01[r], STARFOLD_FLOAT32, 4,
                                                        NULL, &a->mine[r][i]), STARFOLD_OK);
}

static void loop_values_free(loop_arg_t *a)
{
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 3; i++) starfold_value_destroy(a->mine[r][i]);
}

/* One step of the loop; *@found: the batch plans the step found. */
static starfold_status_t run_loop_step(starfold_strategy_t s, loop_arg_t *a, unsigned long long *found)
{
    pthread_mutex_lock(&s->ops->cache_lock);
    const unsigned long long h = s->ops->plan_hits;
    pthread_mutex_unlock(&s->ops->cache_lock);
    const starfold_status_t st = starfold_strategy_run(s, step_all_reduce_loop, a);
    pthread_mutex_lock(&s->ops->cache_lock);
    *found = s->ops->plan_hits - h;
    pthread_mutex_unlock(&s->ops->cache_lock);
    return st;
}

static void test_all_reduce_loop_plans(void)
{
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    loop_arg_t a;
    loop_values_make(&a);
    for (a.step = 0; a.step < 6; a.step++) {
        if (a.step == 4) CU_ASSERT_PTR_NOT_NULL(starfold_value_handle(a.mine[1][1], 0)); /* moved out: new views */
        unsigned long long found = 0;
        CU_ASSERT_EQUAL(run_loop_step(s, &a, &found), STARFOLD_OK);
        CU_ASSERT_EQUAL(found, a.step == 0 || a.step >= 4 ? 0u : 1u); /* no plan over a value out of the arena */
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(a.got[r][i], (float)(2 * (a.step * 10 + i) + 3));
    }
    loop_values_free(&a);
    starfold_strategy_destroy(s);
}

/*
 * The leader takes the kept pairs' plan by its id and skips the shape check when every replica passes
 * what it passed the step before (replica_collectives.c); a value replaced is seen all the same:
 *   steps 0-2  the same values: planned, then found (by id) every step
 *   step 3     replica 1's value 2 destroyed and made again, same shape: new pairs, a new plan
 *   step 4     found again
 *   step 5     replica 1's value 2 replaced by one of 8 elements: INVALID_ARGUMENT, the shapes named
 *   step 6     a value of 4 elements again: right
 *   step 7     replica 1 passes replica 0's value 0, which has no component on its device: refused
 *              (a replica checks its values again whenever one is not what it passed last time)
 *   step 8     its own values again: the plan of step 6 found, right
 * Every step that runs is checked.
 */
static void test_all_reduce_loop_replaced(void)
{
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    loop_arg_t a;
    loop_values_make(&a);
    static const unsigned long long expect_found[9] = { 0, 1, 1, 0, 1, 0, 0, 0, 1 };
    for (a.step = 0; a.step < 9; a.step++) {
        a.stray = a.step == 7 ? a.mine[0][0] : NULL;
        if (a.step == 3 || a.step == 5 || a.step == 6) {
            starfold_value_destroy(a.mine[1][2]);
            CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &dev01[1], STARFOLD_FLOAT32,
                                                        a.step == 5 ? 8 : 4, NULL, &a.mine[1][2]), STARFOLD_OK);
        }
        unsigned long long found = 0;
        const starfold_status_t st = run_loop_step(s, &a, &found);
        CU_ASSERT_EQUAL(found, expect_found[a.step]);
        if (a.step == 5) {
            CU_ASSERT_EQUAL(st, STARFOLD_ERR_INVALID_ARGUMENT);
            CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "the shapes must be the same on every replica"));
            continue;
        }
        if (a.step == 7) {
            CU_ASSERT_EQUAL(st, STARFOLD_ERR_INVALID_ARGUMENT);
            CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "value 0 has no component on this replica's device"));
            continue;
        }
        CU_ASSERT_EQUAL(st, STARFOLD_OK);
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(a.got[r][i], (float)(2 * (a.step * 10 + i) + 3));
    }
    loop_values_free(&a);
    starfold_strategy_destroy(s);
}

/* Replicas run concurrently: each waits (bounded) until every replica has started. */
static pthread_mutex_t conc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conc_cond = PTHREAD_COND_INITIALIZER;
static int conc_started;

static starfold_status_t step_ids(starfold_replica_context_t rc, void *arg)
{
    seed_out_t *out = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    out->ids[r] = r;
    out->nreplicas[r] = starfold_replica_context_num_replicas_in_sync(rc);
    out->devices[r] = starfold_replica_context_device(rc);
    out->ctx_ok[r] = starfold_get_replica_context() == rc && starfold_replica_context_strategy(rc) != NULL;
    pthread_mutex_lock(&conc_lock);
    conc_started++;
    pthread_cond_broadcast(&conc_cond);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    while (conc_started < out->nreplicas[r])
        if (pthread_cond_timedwait(&conc_cond, &conc_lock, &deadline) != 0) break;
    const int all = conc_started >= out->nreplicas[r];
    pthread_mutex_unlock(&conc_lock);
    return all ? STARFOLD_OK : STARFOLD_ERR_TIMEOUT;
}

static void test_seed_replica_ids(void)
{
    const int devs[4] = { 5, 2, 7, 0 };
    for (int n = 2; n <= 4; n += 2) {
        starfold_strategy_t s = mirrored(n, devs, NULL, NULL);
        CU_ASSERT_EQUAL(starfold_strategy_num_replicas_in_sync(s), n);
        seed_out_t out;
        memset(&out, 0, sizeof out);
        conc_started = 0;
        CU_ASSERT_EQUAL(starfold_strategy_run(s, step_ids, &out), STARFOLD_OK); /* concurrent, or it times out */
        for (int r = 0; r < n; r++) {
            CU_ASSERT_EQUAL(out.ids[r], r);
            CU_ASSERT_EQUAL(out.nreplicas[r], n);
            CU_ASSERT_EQUAL(out.devices[r], devs[r]);
            CU_ASSERT_EQUAL(starfold_strategy_worker_device(s, r), devs[r]);
            CU_ASSERT_TRUE(out.ctx_ok[r]);
        }
        starfold_strategy_destroy(s);
    }
    CU_ASSERT_PTR_NULL(starfold_get_replica_context()); /* cross-replica outside a run */
    CU_ASSERT_EQUAL(starfold_replica_context_replica_id_in_sync_group(NULL), -1);
}

/* ------------------------------------------------------------------------------------------------
 * Seed: batch_reduce_to + merge_call + update, under the three strategies
 *
 *   def step_fn(var):
 *     def merge_fn(strategy, value, var):
 *       reduced = strategy.extended.batch_reduce_to(SUM, [(value, var)])[0]
 *       strategy.extended.update(var, lambda var, value: var.assign(value), args=(reduced,))
 *     value = tf.identity(1.)
 *     tf.distribute.get_replica_context().merge_call(merge_fn, args=(value, var))
 */

typedef struct seed_arg {
    starfold_value_t value; /* this replica's 1.0 */
    starfold_value_t var;   /* the shared variable */
} seed_arg_t;

static starfold_status_t assign_fn(const starfold_update_call_t *call, void *user_data)
{
    (void)user_data;
    return starfold_update_assign(call, 0);
}

static starfold_status_t seed_merge_fn(starfold_strategy_t strategy, int n, void *const *args, void **results)
{
    (void)results;
    starfold_value_t values[NDEV], vars[NDEV], value = NULL, var = NULL, reduced = NULL;
    for (int r = 0; r < n; r++) {
        values[r] = ((seed_arg_t *)args[r])->value;
        vars[r] = ((seed_arg_t *)args[r])->var;
    }
    /* Per-thread arguments become a PerReplica; the identical variable collapses into itself. */
    starfold_status_t st = starfold_value_regroup(STARFOLD_VALUE_PER_REPLICA, n, values, &value);
    if (st == STARFOLD_OK) st = starfold_value_regroup(STARFOLD_VALUE_MIRRORED, n, vars, &var);
    if (st == STARFOLD_OK) {
        starfold_value_destination_pair_t pair = { value, starfold_destination_value(var) };
        st = starfold_strategy_batch_reduce_to(strategy, STARFOLD_OP_SUM, 1, &pair, NULL, &reduced);
    }
    if (st == STARFOLD_OK) st = starfold_strategy_update(strategy, var, assign_fn, 1, &reduced, NULL);
    starfold_value_destroy(reduced);
    starfold_value_destroy(var);
    starfold_value_destroy(value);
    return st;
}

typedef struct seed_run {
    starfold_value_t var;
    seed_arg_t args[NDEV];
} seed_run_t;

static starfold_status_t seed_step_fn(starfold_replica_context_t rc, void *arg)
{
    seed_run_t *sr = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    const float one = 1.0f;
    seed_arg_t *a = &sr->args[r];
    a->var = sr->var;
    starfold_status_t st = local_value(rc, &one, 1, &a->value);
    if (st == STARFOLD_OK) st = starfold_replica_context_merge_call(rc, seed_merge_fn, a, NULL);
    return st;
}

/* Runs the seed under @s; returns the variable (owned by the caller). */
static starfold_value_t run_seed(starfold_strategy_t s)
{
    seed_run_t sr;
    memset(&sr, 0, sizeof sr);
    const float zero = 0.0f;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable(s, STARFOLD_FLOAT32, 1, &zero, &sr.var), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, seed_step_fn, &sr), STARFOLD_OK);
    for (int r = 0; r < NDEV; r++) starfold_value_destroy(sr.args[r].value);
    return sr.var;
}

static void test_seed_batch_reduce_to(void)
{
    /* MirroredStrategy(["GPU:0", "GPU:1"]) -> MirroredVariable {0: 2.0, 1: 2.0} */
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    starfold_value_t var = run_seed(s);
    CU_ASSERT_EQUAL(starfold_value_num_components(var), 2);
    CU_ASSERT_EQUAL(read_f32(var, 0), 2.0f);
    CU_ASSERT_EQUAL(read_f32(var, 1), 2.0f);
    starfold_value_destroy(var);
    starfold_strategy_destroy(s);

    /* The same with hierarchical copy. */
    starfold_cross_device_ops_t hc = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_hierarchical_copy_all_reduce_create(1, &hc), STARFOLD_OK);
    s = mirrored(2, dev01, NULL, hc);
    var = run_seed(s);
    CU_ASSERT_EQUAL(read_f32(var, 0), 2.0f);
    CU_ASSERT_EQUAL(read_f32(var, 1), 2.0f);
    starfold_value_destroy(var);
    starfold_strategy_destroy(s);
    starfold_cross_device_ops_destroy(hc);

    /* CentralStorageStrategy(compute_devices=["GPU:0", "GPU:1"], parameter_device="CPU:0") -> 2.0 */
    CU_ASSERT_EQUAL_FATAL(starfold_central_storage_strategy_create(ctx, NULL, 2, dev01, STARFOLD_DEVICE_HOST, &s),
                          STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_strategy_kind(s), STARFOLD_STRATEGY_CENTRAL_STORAGE);
    var = run_seed(s);
    CU_ASSERT_EQUAL(starfold_value_num_components(var), 1);
    CU_ASSERT_EQUAL(starfold_value_device(var, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_EQUAL(read_f32(var, 0), 2.0f);
    starfold_value_destroy(var);
    starfold_strategy_destroy(s);
    /* ... with the parameters on a device, and with TensorFlow's default parameter device (the host). */
    CU_ASSERT_EQUAL_FATAL(starfold_central_storage_strategy_create(ctx, NULL, 2, dev01, 3, &s), STARFOLD_OK);
    var = run_seed(s);
    CU_ASSERT_EQUAL(starfold_value_device(var, 0), 3);
    CU_ASSERT_EQUAL(read_f32(var, 0), 2.0f);
    starfold_value_destroy(var);
    starfold_strategy_destroy(s);
    CU_ASSERT_EQUAL_FATAL(starfold_central_storage_strategy_create(ctx, NULL, 2, dev01, STARFOLD_PARAMETER_DEVICE_DEFAULT,
                                                                   &s),
                          STARFOLD_OK);
    var = run_seed(s);
    CU_ASSERT_EQUAL(starfold_value_device(var, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_EQUAL(read_f32(var, 0), 2.0f);
    starfold_value_destroy(var);
    starfold_strategy_destroy(s);

    /* OneDeviceStrategy("GPU:0") -> 1.0 */
    CU_ASSERT_EQUAL_FATAL(starfold_one_device_strategy_create(ctx, NULL, 0, &s), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_strategy_num_replicas_in_sync(s), 1);
    var = run_seed(s);
    CU_ASSERT_EQUAL(starfold_value_num_components(var), 1);
    CU_ASSERT_EQUAL(read_f32(var, 0), 1.0f);
    starfold_value_destroy(var);
    starfold_strategy_destroy(s);
}

/* ------------------------------------------------------------------------------------------------
 * Construction and the default cross-device ops
 */

static void test_construction(void)
{
    starfold_strategy_t s = NULL;
    /* Default devices: every device of the context. */
    CU_ASSERT_EQUAL_FATAL(starfold_mirrored_strategy_create(ctx, NULL, 0, NULL, NULL, &s), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_strategy_num_replicas_in_sync(s), NDEV);
    CU_ASSERT_EQUAL(starfold_strategy_kind(s), STARFOLD_STRATEGY_MIRRORED);
    CU_ASSERT_STRING_EQUAL(starfold_strategy_kind_name(starfold_strategy_kind(s)), "MirroredStrategy");
    CU_ASSERT_PTR_EQUAL(starfold_strategy_context(s), ctx);
    CU_ASSERT_PTR_NOT_NULL(starfold_strategy_topology(s));
    /* Default ops: the cost model's choice per collective, on any topology. */
    CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(starfold_strategy_cross_device_ops(s)), "auto");
    starfold_strategy_destroy(s);
    CU_ASSERT_EQUAL_FATAL(starfold_mirrored_strategy_create(ctx, dgx1, 0, NULL, NULL, &s), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(starfold_strategy_cross_device_ops(s)), "auto");
    starfold_strategy_destroy(s);
    const int four[4] = { 0, 1, 2, 3 };
    CU_ASSERT_EQUAL_FATAL(starfold_mirrored_strategy_create(ctx, dgx1, 4, four, NULL, &s), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(starfold_strategy_cross_device_ops(s)), "auto");
    starfold_strategy_destroy(s);
    /* TensorFlow 1.x's rule on a DGX-1 stays one call away: hierarchical copy, one pack per device. */
    starfold_cross_device_ops_t hc8 = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_hierarchical_copy_all_reduce_create(8, &hc8), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_mirrored_strategy_create(ctx, dgx1, 0, NULL, hc8, &s), STARFOLD_OK);
    starfold_cross_device_ops_t ops = starfold_strategy_cross_device_ops(s);
    CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(ops), "hierarchical-copy");
    starfold_algo_options_t ao;
    CU_ASSERT_EQUAL(starfold_cross_device_ops_options(ops, &ao), STARFOLD_OK);
    CU_ASSERT_EQUAL(ao.num_packs, 8);
    starfold_strategy_destroy(s);
    starfold_cross_device_ops_destroy(hc8);

    /* Errors. */
    s = NULL;
    const int dup[3] = { 0, 1, 0 }, far[2] = { 0, NDEV };
    CU_ASSERT_EQUAL(starfold_mirrored_strategy_create(ctx, NULL, 3, dup, NULL, &s), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "No duplicates allowed in `devices` argument"));
    CU_ASSERT_EQUAL(starfold_mirrored_strategy_create(ctx, NULL, 2, far, NULL, &s), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_topology_t small = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_subset(host8, 2, &small), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_mirrored_strategy_create(ctx, small, 3, four, NULL, &s), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_topology_destroy(small);
    CU_ASSERT_EQUAL(starfold_mirrored_strategy_create(NULL, NULL, 0, NULL, NULL, &s), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_one_device_strategy_create(ctx, NULL, NDEV, &s), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_central_storage_strategy_create(ctx, NULL, 2, dev01, 99, &s), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_EQUAL(starfold_strategy_run(NULL, step_ids, NULL), STARFOLD_ERR_INVALID_ARGUMENT);

    /* TensorFlow's default parameter device: the only compute device when there is one. */
    const int five = 5;
    CU_ASSERT_EQUAL_FATAL(starfold_central_storage_strategy_create(ctx, NULL, 1, &five, STARFOLD_PARAMETER_DEVICE_DEFAULT,
                                                                   &s),
                          STARFOLD_OK);
    starfold_value_t var = NULL;
    CU_ASSERT_EQUAL(starfold_strategy_create_variable(s, STARFOLD_INT32, 3, NULL, &var), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_device(var, 0), 5);
    starfold_value_destroy(var);
    starfold_strategy_destroy(s);
}

/* all_reduce over 8 replicas on the DGX-1 plan (default ops: hierarchical copy, 8 packs). */
typedef struct many_arg {
    size_t count;
    starfold_op_t op;
    int steps;
    double got[NDEV];
} many_arg_t;

static starfold_status_t step_many(starfold_replica_context_t rc, void *arg)
{
    many_arg_t *m = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    float *x = malloc(sizeof(float) * m->count);
    if (!x) return STARFOLD_ERR_OUT_OF_MEMORY;
    starfold_status_t st = STARFOLD_OK;
    double last = 0;
    for (int step = 0; step < m->steps && st == STARFOLD_OK; step++) {
        for (size_t i = 0; i < m->count; i++) x[i] = (float)(r + step + (int)(i % 7));
        starfold_value_t v = NULL, res = NULL;
        st = local_value(rc, x, m->count, &v);
        if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, m->op, 1, &v, NULL, &res);
        if (st == STARFOLD_OK) st = starfold_value_read(res, 0, x, sizeof(float) * m->count);
        last = x[m->count - 1];
        starfold_value_destroy(res);
        starfold_value_destroy(v);
    }
    m->got[r] = last;
    free(x);
    return st;
}

static void test_dgx1_all_reduce(void)
{
    starfold_strategy_t s = mirrored(0, NULL, dgx1, NULL);
    many_arg_t m = { .count = 1000, .op = STARFOLD_OP_MEAN, .steps = 3 };
    starfold__trace_reset();
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_many, &m), STARFOLD_OK);
    /* Last element (i = 999, i % 7 = 5), last step 2: mean over r of (r + 2 + 5) = 3.5 + 7. */
    for (int r = 0; r < NDEV; r++) CU_ASSERT_DOUBLE_EQUAL(m.got[r], 10.5, 1e-6);
    CU_ASSERT_EQUAL(starfold__trace_count(), 3);
    starfold__trace_entry_t e;
    starfold__trace_get(0, &e);
    CU_ASSERT_EQUAL(e.path, SF_PATH_ALL_REDUCE);
    CU_ASSERT_EQUAL(strncmp(e.algorithm, "auto:", 5), 0); /* the model's pick for this size on a DGX-1 */
    CU_ASSERT_EQUAL(e.num_sources, NDEV);
    starfold_strategy_destroy(s);
}

/* Many steps over 4 replicas, then an odd replica count: no leak of results, no deadlock. */
static void test_many_steps(void)
{
    const int devs[5] = { 0, 1, 2, 3, 4 };
    for (int n = 3; n <= 4; n++) {
        starfold_strategy_t s = mirrored(n, devs, NULL, NULL);
        many_arg_t m = { .count = 16, .op = STARFOLD_OP_SUM, .steps = 40 };
        CU_ASSERT_EQUAL(starfold_strategy_run(s, step_many, &m), STARFOLD_OK);
        /* Sum over r of (r + 39 + 15 % 7 = 1). */
        double e = 0;
        for (int r = 0; r < n; r++) e += r + 39 + 1;
        for (int r = 0; r < n; r++) CU_ASSERT_DOUBLE_EQUAL(m.got[r], e, 1e-6);
        starfold_strategy_destroy(s);
    }
}

/* ------------------------------------------------------------------------------------------------
 * Implementation mapping: RING / NCCL select hierarchical-copy when the strategy chose its ops
 */

typedef struct impl_arg {
    starfold_communication_implementation_t impl;
} impl_arg_t;

static starfold_status_t step_impl(starfold_replica_context_t rc, void *arg)
{
    const impl_arg_t *ia = arg;
    const float x = 1.0f;
    starfold_value_t v = NULL, r = NULL;
    starfold_communication_options_t o;
    starfold_communication_options_init(&o);
    o.implementation = ia->impl;
    starfold_status_t st = local_value(rc, &x, 1, &v);
    if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, &o, &r);
    if (st == STARFOLD_OK && read_f32(r, 0) != 4.0f) st = STARFOLD_ERR_INTERNAL;
    starfold_value_destroy(r);
    starfold_value_destroy(v);
    return st;
}

static void test_implementation_mapping(void)
{
    const int devs[4] = { 0, 1, 2, 3 };
    starfold_strategy_t s = mirrored(4, devs, NULL, NULL);
    /* RING is the registry's ring algorithm, or hierarchical copy in a build without one. */
    const char *ring = "hierarchical-copy";
    for (int i = 0; i < starfold_algorithm_count(); i++)
        if (!strcmp(starfold_algorithm_name(i), "ring")) ring = "ring";
    const struct {
        starfold_communication_implementation_t impl;
        const char *algorithm;
    } cases[] = { { STARFOLD_COMMUNICATION_AUTO, "auto:" },
                  { STARFOLD_COMMUNICATION_RING, ring },
                  { STARFOLD_COMMUNICATION_NCCL, "hierarchical-copy" } };
    for (size_t k = 0; k < 3; k++) {
        impl_arg_t ia = { cases[k].impl };
        starfold__trace_reset();
        CU_ASSERT_EQUAL(starfold_strategy_run(s, step_impl, &ia), STARFOLD_OK);
        CU_ASSERT_EQUAL(strncmp(last_algorithm(), cases[k].algorithm, strlen(cases[k].algorithm)), 0);
    }
    /* The strategy's own options count too (merged under the call's). */
    starfold_communication_options_t o;
    starfold_communication_options_init(&o);
    o.implementation = STARFOLD_COMMUNICATION_NCCL;
    CU_ASSERT_EQUAL(starfold_strategy_set_communication_options(s, &o), STARFOLD_OK);
    impl_arg_t ia = { STARFOLD_COMMUNICATION_AUTO };
    starfold__trace_reset();
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_impl, &ia), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(last_algorithm(), "hierarchical-copy");
    o.bytes_per_pack = -1;
    CU_ASSERT_EQUAL(starfold_strategy_set_communication_options(s, &o), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_strategy_destroy(s);

    /* Explicit ops: the implementation is ignored. */
    starfold_cross_device_ops_t r2o = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_reduction_to_one_device_create(-1, &r2o), STARFOLD_OK);
    s = mirrored(4, devs, NULL, r2o);
    ia.impl = STARFOLD_COMMUNICATION_RING;
    starfold__trace_reset();
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_impl, &ia), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(last_algorithm(), "reduce-to-one");
    CU_ASSERT_PTR_EQUAL(starfold_strategy_cross_device_ops(s), r2o);
    starfold_strategy_destroy(s);
    starfold_cross_device_ops_destroy(r2o);
}

/* ------------------------------------------------------------------------------------------------
 * Errors instead of hangs
 */

typedef struct err_arg {
    double timeout;
    int late_ms;                  /* how long replica 1 sleeps before its collective */
    double elapsed[NDEV];         /* time each replica spent in its first collective */
    starfold_status_t st[NDEV];   /* what it returned */
    char msg[NDEV][512];
    float input_after[NDEV];      /* replica's input read back after the failed collective */
    int results_untouched[NDEV];
} err_arg_t;

/* Replica 1 arrives late (after @late_ms); replica 0 has a timeout. */
static starfold_status_t step_timeout(starfold_replica_context_t rc, void *arg)
{
    err_arg_t *ea = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    const float x = 3.0f + (float)r;
    starfold_value_t v = NULL, sentinel = (starfold_value_t)&ea, res = sentinel;
    starfold_status_t st = local_value(rc, &x, 1, &v);
    if (st != STARFOLD_OK) return st;
    if (r == 1) sleep_ms(ea->late_ms);
    starfold_communication_options_t o;
    starfold_communication_options_init(&o);
    o.timeout_seconds = ea->timeout;
    const double t0 = starfold_tools_now();
    st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, &o, &res);
    ea->elapsed[r] = starfold_tools_now() - t0;
    ea->st[r] = st;
    snprintf(ea->msg[r], sizeof ea->msg[r], "%s", starfold_last_error());
    ea->results_untouched[r] = res == sentinel;
    if (st == STARFOLD_OK) starfold_value_destroy(res);
    /* Every later collective of the run fails at once. */
    if (st != STARFOLD_OK) {
        const double t1 = starfold_tools_now();
        if (starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, &o, &res) == STARFOLD_OK) st = STARFOLD_ERR_INTERNAL;
        if (starfold_tools_now() - t1 > 0.5) st = STARFOLD_ERR_INTERNAL;
    }
    (void)starfold_value_read(v, 0, &ea->input_after[r], sizeof(float));
    starfold_value_destroy(v);
    return st;
}

static void test_timeout(void)
{
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    err_arg_t ea;
    memset(&ea, 0, sizeof ea);
    ea.timeout = 0.2;
    ea.late_ms = 1200;
    starfold__trace_reset();
    const double t0 = starfold_tools_now();
    starfold_status_t st = starfold_strategy_run(s, step_timeout, &ea);
    CU_ASSERT_EQUAL(st, STARFOLD_ERR_TIMEOUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "missing: replica 1"));
    /* Replica 0 gave up within its timeout (not after replica 1's 1.2 s); replica 1 failed at once. */
    CU_ASSERT_EQUAL(ea.st[0], STARFOLD_ERR_TIMEOUT);
    CU_ASSERT_TRUE(ea.elapsed[0] >= 0.19 && ea.elapsed[0] < 0.9);
    CU_ASSERT_EQUAL(ea.st[1], STARFOLD_ERR_TIMEOUT);
    CU_ASSERT_TRUE(ea.elapsed[1] < 0.5);
    CU_ASSERT_TRUE(starfold_tools_now() - t0 < 5.0);
    /* Nothing was submitted, the inputs are unchanged, the results untouched. */
    CU_ASSERT_EQUAL(starfold__trace_count(), 0);
    CU_ASSERT_EQUAL(ea.input_after[0], 3.0f);
    CU_ASSERT_EQUAL(ea.input_after[1], 4.0f);
    CU_ASSERT_TRUE(ea.results_untouched[0] && ea.results_untouched[1]);

    /* In time: the same run succeeds. */
    memset(&ea, 0, sizeof ea);
    ea.timeout = 5.0;
    ea.late_ms = 50;
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_timeout, &ea), STARFOLD_OK);
    CU_ASSERT_EQUAL(ea.st[0], STARFOLD_OK);
    CU_ASSERT_EQUAL(ea.st[1], STARFOLD_OK);

    /* An infinite timeout is no timeout (it once made the wait spin forever); DBL_MAX likewise. */
    const double forever[2] = { INFINITY, DBL_MAX };
    for (int k = 0; k < 2; k++) {
        memset(&ea, 0, sizeof ea);
        ea.timeout = forever[k];
        ea.late_ms = 300;
        CU_ASSERT_EQUAL(starfold_strategy_run(s, step_timeout, &ea), STARFOLD_OK);
        CU_ASSERT_EQUAL(ea.st[0], STARFOLD_OK);
        CU_ASSERT_EQUAL(ea.st[1], STARFOLD_OK);
        CU_ASSERT_TRUE(ea.elapsed[0] >= 0.25);
    }
    starfold_strategy_destroy(s);
}

/* Replica 0 makes two merge_calls, replica 1 one (and returns after a while). */
static starfold_status_t count_merge_fn(starfold_strategy_t strategy, int n, void *const *args, void **results)
{
    (void)strategy;
    for (int r = 0; r < n; r++) results[r] = args[r];
    return STARFOLD_OK;
}

static starfold_status_t step_mismatch(starfold_replica_context_t rc, void *arg)
{
    err_arg_t *ea = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    void *res = NULL;
    starfold_status_t st = starfold_replica_context_merge_call(rc, count_merge_fn, &ea->st[r], &res);
    if (st != STARFOLD_OK) return st;
    if (res != &ea->st[r]) return STARFOLD_ERR_INTERNAL; /* each replica gets its own result */
    if (r == 1) {
        sleep_ms(ea->late_ms); /* replica 0 is already waiting in its second merge_call */
        return STARFOLD_OK;
    }
    const double t0 = starfold_tools_now();
    st = starfold_replica_context_merge_call(rc, count_merge_fn, NULL, &res);
    ea->elapsed[r] = starfold_tools_now() - t0;
    ea->st[r] = st;
    snprintf(ea->msg[r], sizeof ea->msg[r], "%s", starfold_last_error());
    return st;
}

static void test_mismatched_merge_calls(void)
{
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    for (int late = 0; late < 2; late++) {
        err_arg_t ea;
        memset(&ea, 0, sizeof ea);
        ea.late_ms = late ? 300 : 0; /* returns while replica 0 waits / before replica 0 calls */
        const double t0 = starfold_tools_now();
        /* No timeout anywhere: still no deadlock. */
        starfold_status_t st = starfold_strategy_run(s, step_mismatch, &ea);
        CU_ASSERT_EQUAL(st, STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(
            strstr(starfold_last_error(), "Some replicas made a different number of replica_context().merge_call() calls."));
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "replica 0"));
        CU_ASSERT_EQUAL(ea.st[0], STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(ea.msg[0], "replica 1 returned from its function after 1 collective(s)"));
        CU_ASSERT_TRUE(starfold_tools_now() - t0 < 3.0);
        CU_ASSERT_TRUE(ea.elapsed[0] < ea.late_ms / 1000.0 + 1.0);
    }
    starfold_strategy_destroy(s);
}

/* Replica 0 calls all_reduce while replica 1 calls merge_call. */
static starfold_status_t step_kind_mismatch(starfold_replica_context_t rc, void *arg)
{
    err_arg_t *ea = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    const float x = 1.0f;
    starfold_value_t v = NULL, res = NULL;
    starfold_status_t st = local_value(rc, &x, 1, &v);
    if (st != STARFOLD_OK) return st;
    if (r == 0) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, NULL, &res);
    else st = starfold_replica_context_merge_call(rc, count_merge_fn, NULL, NULL);
    ea->st[r] = st;
    if (st == STARFOLD_OK) starfold_value_destroy(res);
    starfold_value_destroy(v);
    return st;
}

static void test_mismatched_kinds(void)
{
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    err_arg_t ea;
    memset(&ea, 0, sizeof ea);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_kind_mismatch, &ea), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "all_reduce"));
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "merge_call"));
    CU_ASSERT_EQUAL(ea.st[0], STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(ea.st[1], STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_strategy_destroy(s);
}

/* Replica 2 fails on its own while replicas 0 and 1 wait: the run reports replica 2's error. */
static starfold_status_t step_replica_fails(starfold_replica_context_t rc, void *arg)
{
    err_arg_t *ea = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    if (r == 2) {
        sleep_ms(100);
        return ea->st[r] = starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "boom: the model does not fit");
    }
    const float x = 1.0f;
    starfold_value_t v = NULL, res = NULL;
    starfold_status_t st = local_value(rc, &x, 1, &v);
    if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, NULL, &res);
    ea->st[r] = st;
    snprintf(ea->msg[r], sizeof ea->msg[r], "%s", starfold_last_error());
    if (st == STARFOLD_OK) starfold_value_destroy(res);
    starfold_value_destroy(v);
    return st;
}

static void test_replica_failure(void)
{
    const int devs[3] = { 0, 1, 2 };
    starfold_strategy_t s = mirrored(3, devs, NULL, NULL);
    err_arg_t ea;
    memset(&ea, 0, sizeof ea);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_replica_fails, &ea), STARFOLD_ERR_NOT_SUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "replica 2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "boom"));
    CU_ASSERT_EQUAL(ea.st[0], STARFOLD_ERR_NOT_SUPPORTED); /* the waiters learn why */
    CU_ASSERT_PTR_NOT_NULL(strstr(ea.msg[0], "replica 2 failed"));
    starfold_strategy_destroy(s);
}

/* Replicas disagree on the structure: the collective fails for all, the run can go on. */
static starfold_status_t step_bad_structure(starfold_replica_context_t rc, void *arg)
{
    err_arg_t *ea = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    const float x[3] = { 1, 2, 3 };
    starfold_value_t v = NULL, res = NULL;
    starfold_status_t st = local_value(rc, x, r == 0 ? 3 : 2, &v); /* different counts */
    if (st != STARFOLD_OK) return st;
    ea->st[r] = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, NULL, &res);
    snprintf(ea->msg[r], sizeof ea->msg[r], "%s", starfold_last_error());
    starfold_value_destroy(v);
    /* NULL value on replica 1 only: everyone fails, nobody hangs. */
    const starfold_value_t vals[1] = { NULL };
    starfold_value_t ok = NULL;
    if ((st = local_value(rc, x, 2, &ok)) != STARFOLD_OK) return st;
    const starfold_value_t *use = r == 1 ? vals : &ok;
    starfold_status_t st2 = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, use, NULL, &res);
    /* Then a good one works. */
    starfold_status_t st3 = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &ok, NULL, &res);
    if (st3 == STARFOLD_OK) {
        float y[2];
        st3 = starfold_value_read(res, 0, y, sizeof y);
        if (st3 == STARFOLD_OK && (y[0] != 2.0f || y[1] != 4.0f)) st3 = STARFOLD_ERR_INTERNAL;
        starfold_value_destroy(res);
    }
    starfold_value_destroy(ok);
    return st2 == STARFOLD_ERR_INVALID_ARGUMENT && st3 == STARFOLD_OK ? STARFOLD_OK : STARFOLD_ERR_INTERNAL;
}

static void test_bad_structure(void)
{
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    err_arg_t ea;
    memset(&ea, 0, sizeof ea);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_bad_structure, &ea), STARFOLD_OK);
    for (int r = 0; r < 2; r++) {
        CU_ASSERT_EQUAL(ea.st[r], STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(ea.msg[r], "the shapes must be the same on every replica"));
    }
    starfold_strategy_destroy(s);
}

/*
 * A kernel of the collective's reduction fails. A small all_reduce (a few bytes) is settled by its
 * leader before the replicas leave it, so all_reduce itself reports the failure, on every replica; a
 * large one (256 KiB) returns as soon as it is submitted, and the wait on its result reports it.
 * Either way the run goes on: the next all_reduce sums. And the failed reduction only read its input:
 * the same value reads back intact and reduces again, through the plan that failed (2.0), as a value
 * of the replica's arena (starfold_replica_context_create_value()) and as one of its own
 * (starfold_value_create()).
 */
typedef struct fail_arg {
    size_t count;
    int arena; /* the input from the replica's arena */
    starfold_status_t all_reduce[NDEV], wait[NDEV], after[NDEV], read_input[NDEV], again[NDEV];
    float after_sum[NDEV], input0[NDEV], again_sum[NDEV];
} fail_arg_t;

static starfold_status_t step_failing_kernel(starfold_replica_context_t rc, void *arg)
{
    fail_arg_t *a = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    float *x = malloc(sizeof *x * a->count);
    if (!x) return STARFOLD_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < a->count; i++) x[i] = 1.0f;
    starfold_value_t v = NULL, res = NULL;
    starfold_status_t st = a->arena ? starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, a->count, x, &v)
                                    : local_value(rc, x, a->count, &v);
    free(x);
    if (st != STARFOLD_OK) return st;
    a->all_reduce[r] = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, NULL, &res);
    a->wait[r] = a->all_reduce[r] == STARFOLD_OK ? starfold_value_wait(res) : a->all_reduce[r];
    starfold_value_destroy(res);
    res = NULL;
    /* Every replica is past the failed collective once it joins this one: the hook goes off first. */
    if (r == 0) __atomic_store_n(&ctx->test_fail_task, -1, __ATOMIC_RELAXED);
    starfold_value_t v2 = NULL;
    const float one = 1.0f;
    starfold_status_t st2 = local_value(rc, &one, 1, &v2);
    if (st2 == STARFOLD_OK) st2 = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v2, NULL, &res);
    if (st2 == STARFOLD_OK) st2 = starfold_value_read(res, 0, &a->after_sum[r], sizeof(float));
    starfold_value_destroy(v2);
    a->after[r] = st2;
    starfold_value_destroy(res);
    res = NULL;
    /* The input of the failed reduction: intact, and usable. */
    a->read_input[r] = starfold_value_read(v, 0, &a->input0[r], sizeof(float));
    a->again[r] = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, NULL, &res);
    if (a->again[r] == STARFOLD_OK) a->again[r] = starfold_value_read(res, 0, &a->again_sum[r], sizeof(float));
    starfold_value_destroy(res);
    starfold_value_destroy(v);
    return STARFOLD_OK;
}

static void test_failing_kernel(void)
{
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    const size_t counts[2] = { 4, (size_t)64 << 10 }; /* 16 bytes, 256 KiB */
    for (int k = 0; k < 4; k++) {
        fail_arg_t a;
        memset(&a, 0, sizeof a);
        a.count = counts[k % 2];
        a.arena = k >= 2;
        __atomic_store_n(&ctx->test_fail_task, 0, __ATOMIC_RELAXED);
        CU_ASSERT_EQUAL(starfold_strategy_run(s, step_failing_kernel, &a), STARFOLD_OK);
        __atomic_store_n(&ctx->test_fail_task, -1, __ATOMIC_RELAXED);
        for (int r = 0; r < 2; r++) {
            CU_ASSERT_EQUAL(a.all_reduce[r], k % 2 == 0 ? STARFOLD_ERR_TASK_FAILED : STARFOLD_OK);
            CU_ASSERT_EQUAL(a.wait[r], STARFOLD_ERR_TASK_FAILED);
            CU_ASSERT_EQUAL(a.after[r], STARFOLD_OK);
            CU_ASSERT_EQUAL(a.after_sum[r], 2.0f);
            CU_ASSERT_EQUAL(a.read_input[r], STARFOLD_OK);
            CU_ASSERT_EQUAL(a.input0[r], 1.0f);
            CU_ASSERT_EQUAL(a.again[r], STARFOLD_OK);
            CU_ASSERT_EQUAL(a.again_sum[r], 2.0f);
            if (a.again[r] != STARFOLD_OK)
                fprintf(stderr, "\n  %zu floats%s, replica %d: the failed reduction's input: %s\n", a.count,
                        a.arena ? " (arena)" : "", r, starfold_status_string(a.again[r]));
        }
    }
    starfold_strategy_destroy(s);
}

/* ------------------------------------------------------------------------------------------------
 * Replica and cross-replica contexts
 */

typedef struct ctx_arg {
    starfold_strategy_t s;
    starfold_status_t reduce_to, run, batch, update, strategy_reduce, broadcast;
    starfold_status_t in_merge_all_reduce, in_merge_merge, in_merge_reduce_to;
    int merge_ctx_null;
    char msg[512];
} ctx_arg_t;

static ctx_arg_t *cur_ctx_arg;

static starfold_status_t nested_merge_fn(starfold_strategy_t strategy, int n, void *const *args, void **results)
{
    (void)n;
    (void)results;
    ctx_arg_t *ca = cur_ctx_arg;
    starfold_replica_context_t rc = args[0];
    ca->merge_ctx_null = starfold_get_replica_context() == NULL;
    const float x = 1.0f;
    const int dev = 0;
    starfold_value_t v = NULL, r = NULL;
    if (starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &dev, STARFOLD_FLOAT32, 1, &x, &v) != STARFOLD_OK)
        return STARFOLD_ERR_INTERNAL;
    ca->in_merge_all_reduce = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, NULL, &r);
    ca->in_merge_merge = starfold_replica_context_merge_call(rc, count_merge_fn, NULL, NULL);
    /* Cross-replica methods are fine here (MEAN: v is one component, whose SUM TensorFlow refuses). */
    const starfold_destination_t d = starfold_destination_device(1);
    ca->in_merge_reduce_to = starfold_strategy_reduce_to(strategy, STARFOLD_OP_MEAN, v, &d, NULL, &r);
    if (ca->in_merge_reduce_to == STARFOLD_OK) starfold_value_destroy(r);
    starfold_value_destroy(v);
    return STARFOLD_OK;
}

static starfold_status_t step_contexts(starfold_replica_context_t rc, void *arg)
{
    ctx_arg_t *ca = arg;
    if (starfold_replica_context_replica_id_in_sync_group(rc) != 0) {
        return starfold_replica_context_merge_call(rc, nested_merge_fn, rc, NULL);
    }
    const float x = 1.0f;
    const int dev = starfold_replica_context_device(rc);
    starfold_value_t v = NULL, r = NULL;
    starfold_status_t st = starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &dev, STARFOLD_FLOAT32, 1, &x, &v);
    if (st != STARFOLD_OK) return st;
    const starfold_destination_t d = starfold_destination_value(v);
    ca->reduce_to = starfold_strategy_reduce_to(ca->s, STARFOLD_OP_SUM, v, &d, NULL, &r);
    snprintf(ca->msg, sizeof ca->msg, "%s", starfold_last_error());
    starfold_value_destination_pair_t p = { v, d };
    ca->batch = starfold_strategy_batch_reduce_to(ca->s, STARFOLD_OP_SUM, 1, &p, NULL, &r);
    ca->update = starfold_strategy_update(ca->s, v, assign_fn, 1, &v, NULL);
    ca->strategy_reduce = starfold_strategy_reduce(ca->s, STARFOLD_OP_SUM, v, STARFOLD_AXIS_NONE, &r);
    ca->broadcast = starfold_strategy_broadcast_to(ca->s, v, &d, &r);
    ca->run = starfold_strategy_run(ca->s, step_ids, NULL);
    st = starfold_replica_context_merge_call(rc, nested_merge_fn, rc, NULL);
    starfold_value_destroy(v);
    return st;
}

static void test_contexts(void)
{
    ctx_arg_t ca;
    memset(&ca, 0, sizeof ca);
    ca.s = mirrored(2, dev01, NULL, NULL);
    cur_ctx_arg = &ca;
    CU_ASSERT_EQUAL(starfold_strategy_run(ca.s, step_contexts, &ca), STARFOLD_OK);
    CU_ASSERT_EQUAL(ca.reduce_to, STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(ca.msg, "Method requires being in cross-replica context, use get_replica_context().merge_call()"));
    CU_ASSERT_EQUAL(ca.batch, STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(ca.update, STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(ca.strategy_reduce, STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(ca.broadcast, STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(ca.run, STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_TRUE(ca.merge_ctx_null);
    CU_ASSERT_EQUAL(ca.in_merge_all_reduce, STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(ca.in_merge_merge, STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(ca.in_merge_reduce_to, STARFOLD_OK);
    starfold_strategy_destroy(ca.s);
}

/*
 * A replica context kept after starfold_strategy_run() returned: its run is freed, so every call that
 * takes it must refuse it without reading freed memory (ASan and valgrind watch this test).
 *
 *     run(step_keep)  -- replica r stores its context in kept[r] --> returns, run freed
 *     main thread:    all_reduce(kept[1]) -> INVALID_ARGUMENT;  id(kept[1]) -> -1, ...
 */
static starfold_replica_context_t kept[2];

static starfold_status_t step_keep(starfold_replica_context_t rc, void *arg)
{
    (void)arg;
    kept[starfold_replica_context_replica_id_in_sync_group(rc)] = rc;
    return STARFOLD_OK;
}

/* Replica 1 fails without recording a detail; @arg: NULL, or every replica succeeds. */
static starfold_status_t step_silent_failure(starfold_replica_context_t rc, void *arg)
{
    if (arg) return STARFOLD_OK;
    return starfold_replica_context_replica_id_in_sync_group(rc) == 1 ? STARFOLD_ERR_RUNTIME : STARFOLD_OK;
}

static void test_context_after_run(void)
{
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_run(s, step_keep, NULL), STARFOLD_OK);
    /* Another run may reuse the memory the first one freed. */
    int ok = 1;
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_silent_failure, &ok), STARFOLD_OK);
    const float x = 1.0f;
    const int dev = 1;
    starfold_value_t v = NULL, r = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &dev, STARFOLD_FLOAT32, 1, &x, &v),
                          STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_replica_context_all_reduce(kept[1], STARFOLD_OP_SUM, 1, &v, NULL, &r),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(),
                                  "starfold_replica_context_all_reduce: the replica context is no longer valid"));
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_EQUAL(starfold_replica_context_merge_call(kept[0], count_merge_fn, NULL, NULL),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "no longer valid"));
    starpu_data_handle_t h = NULL;
    CU_ASSERT_EQUAL(starfold_replica_context_select(kept[1], v, &h), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(h);
    CU_ASSERT_EQUAL(starfold_replica_context_replica_id_in_sync_group(kept[1]), -1);
    CU_ASSERT_EQUAL(starfold_replica_context_num_replicas_in_sync(kept[1]), 0);
    CU_ASSERT_EQUAL(starfold_replica_context_device(kept[1]), -2);
    CU_ASSERT_PTR_NULL(starfold_replica_context_strategy(kept[1]));
    starfold_value_destroy(v);

    /* A failure with no detail still says who failed and how. */
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_silent_failure, NULL), STARFOLD_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "replica 1 (device 1) returned"));
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "with no detail"));
    starfold_strategy_destroy(s);
}

/* merge_fn's error reaches every replica; merge results go to each replica. */
static starfold_status_t failing_merge_fn(starfold_strategy_t strategy, int n, void *const *args, void **results)
{
    (void)strategy;
    (void)n;
    (void)args;
    (void)results;
    return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "the merge function refuses");
}

static starfold_status_t sum_merge_fn(starfold_strategy_t strategy, int n, void *const *args, void **results)
{
    (void)strategy;
    static long total;
    total = 0;
    for (int r = 0; r < n; r++) total += *(const long *)args[r];
    for (int r = 0; r < n; r++) results[r] = &total; /* a shared result */
    return STARFOLD_OK;
}

static starfold_status_t step_merge(starfold_replica_context_t rc, void *arg)
{
    err_arg_t *ea = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    ea->st[r] = starfold_replica_context_merge_call(rc, failing_merge_fn, NULL, NULL);
    snprintf(ea->msg[r], sizeof ea->msg[r], "%s", starfold_last_error());
    long mine = 10 * (r + 1);
    void *res = NULL;
    starfold_status_t st = starfold_replica_context_merge_call(rc, sum_merge_fn, &mine, &res);
    if (st == STARFOLD_OK) ea->input_after[r] = (float)*(const long *)res;
    return st;
}

static void test_merge_call(void)
{
    const int devs[3] = { 4, 5, 6 };
    starfold_strategy_t s = mirrored(3, devs, NULL, NULL);
    err_arg_t ea;
    memset(&ea, 0, sizeof ea);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_merge, &ea), STARFOLD_OK);
    for (int r = 0; r < 3; r++) {
        CU_ASSERT_EQUAL(ea.st[r], STARFOLD_ERR_NOT_SUPPORTED);
        CU_ASSERT_PTR_NOT_NULL(strstr(ea.msg[r], "the merge function refuses"));
        CU_ASSERT_EQUAL(ea.input_after[r], 60.0f);
    }
    starfold_strategy_destroy(s);
}

/* ------------------------------------------------------------------------------------------------
 * Cross-replica methods
 */

static void test_strategy_reduce_axis(void)
{
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    starfold_value_t v = NULL, r = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 2, dev01, STARFOLD_FLOAT32, 3, NULL, &v),
                          STARFOLD_OK);
    const float a[3] = { 1, 2, 3 }, b[3] = { 4, 5, 6 };
    CU_ASSERT_EQUAL(starfold_value_write(v, 0, a, sizeof a), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_write(v, 1, b, sizeof b), STARFOLD_OK);
    float y[3];
    /* axis None: across replicas only, on the host. */
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce(s, STARFOLD_OP_SUM, v, STARFOLD_AXIS_NONE, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_EQUAL(starfold_value_read(r, 0, y, sizeof y), STARFOLD_OK);
    CU_ASSERT_EQUAL(y[0], 5.0f);
    CU_ASSERT_EQUAL(y[2], 9.0f);
    starfold_value_destroy(r);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce(s, STARFOLD_OP_MEAN, v, STARFOLD_AXIS_NONE, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_read(r, 0, y, sizeof y), STARFOLD_OK);
    CU_ASSERT_EQUAL(y[0], 2.5f);
    CU_ASSERT_EQUAL(y[1], 3.5f);
    starfold_value_destroy(r);
    /* axis 0: the elements too; MEAN by the global element count (6). */
    static const struct {
        starfold_op_t op;
        int axis;
        float expect;
    } cases[] = { { STARFOLD_OP_SUM, 0, 21.0f },
                  { STARFOLD_OP_MEAN, 0, 3.5f },
                  { STARFOLD_OP_MEAN, -1, 3.5f },
                  { STARFOLD_OP_MAX, 0, 6.0f },
                  { STARFOLD_OP_MIN, 0, 1.0f },
                  { STARFOLD_OP_PROD, 0, 720.0f } };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce(s, cases[k].op, v, cases[k].axis, &r), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_value_count(r), 1);
        CU_ASSERT_EQUAL(starfold_value_device(r, 0), STARFOLD_DEVICE_HOST);
        CU_ASSERT_EQUAL(read_f32(r, 0), cases[k].expect);
        starfold_value_destroy(r);
    }
    r = NULL;
    CU_ASSERT_EQUAL(starfold_strategy_reduce(s, STARFOLD_OP_SUM, v, 1, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "out of bounds"));
    CU_ASSERT_EQUAL(starfold_strategy_reduce(s, (starfold_op_t)17, v, 0, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(r);
    starfold_value_destroy(v);

    /* int32 MEAN with an axis: {1, 2} and {2, 2}: 7 / 4 -> 1 truncated, 1.75 promoted. */
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 2, dev01, STARFOLD_INT32, 2, NULL, &v),
                          STARFOLD_OK);
    const int32_t ia[2] = { 1, 2 }, ib[2] = { 2, 2 };
    CU_ASSERT_EQUAL(starfold_value_write(v, 0, ia, sizeof ia), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_write(v, 1, ib, sizeof ib), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce(s, STARFOLD_OP_MEAN, v, 0, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_dtype(r), STARFOLD_INT32);
    int32_t i = 0;
    CU_ASSERT_EQUAL(starfold_value_read(r, 0, &i, sizeof i), STARFOLD_OK);
    CU_ASSERT_EQUAL(i, 1);
    starfold_value_destroy(r);
    starfold_communication_options_t o;
    starfold_communication_options_init(&o);
    o.promote_integer_mean = 1;
    CU_ASSERT_EQUAL(starfold_strategy_set_communication_options(s, &o), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce(s, STARFOLD_OP_MEAN, v, 0, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_dtype(r), STARFOLD_FLOAT64);
    double f = 0;
    CU_ASSERT_EQUAL(starfold_value_read(r, 0, &f, sizeof f), STARFOLD_OK);
    CU_ASSERT_EQUAL(f, 1.75);
    starfold_value_destroy(r);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce(s, STARFOLD_OP_MEAN, v, STARFOLD_AXIS_NONE, &r), STARFOLD_OK);
    double g[2];
    CU_ASSERT_EQUAL(starfold_value_read(r, 0, g, sizeof g), STARFOLD_OK);
    CU_ASSERT_EQUAL(g[0], 1.5);
    CU_ASSERT_EQUAL(g[1], 2.0);
    starfold_value_destroy(r);
    starfold_value_destroy(v);
    starfold_strategy_destroy(s);
}

static starfold_status_t record_update(const starfold_update_call_t *call, void *user_data)
{
    int *seen = user_data;
    seen[call->component] = 1 + call->device;
    return starfold_update_assign(call, 0);
}

static void test_cross_replica_methods(void)
{
    const int devs[3] = { 0, 1, 2 };
    starfold_strategy_t s = mirrored(3, devs, NULL, NULL);
    /* A mirrored variable's MEAN is itself, copied exactly (TensorFlow returns it unchanged). */
    const float third = 0.1f;
    starfold_value_t var = NULL, r = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable(s, STARFOLD_FLOAT32, 1, &third, &var), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_kind(var), STARFOLD_VALUE_MIRRORED);
    starfold_destination_t d = starfold_destination_value(var);
    starfold__trace_reset();
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to(s, STARFOLD_OP_MEAN, var, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace_path(), SF_PATH_BROADCAST);
    for (int c = 0; c < 3; c++) CU_ASSERT_EQUAL(read_f32(r, c), 0.1f);
    starfold_value_destroy(r);
    /* Its SUM would count one value three times: TensorFlow asserts, starfold refuses and writes nothing. */
    starfold_value_t untouched = (starfold_value_t)(uintptr_t)0x5eed;
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, var, &d, NULL, &untouched),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "same on every replica"));
    CU_ASSERT_PTR_EQUAL(untouched, (starfold_value_t)(uintptr_t)0x5eed);

    /* broadcast_to: empty destinations = the strategy's devices. */
    const int five = 5;
    const float seven = 7.0f;
    starfold_value_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &five, STARFOLD_FLOAT32, 1, &seven, &t),
                          STARFOLD_OK);
    starfold_destination_t none;
    memset(&none, 0, sizeof none);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_broadcast_to(s, t, &none, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_num_components(r), 3);
    for (int c = 0; c < 3; c++) {
        CU_ASSERT_EQUAL(starfold_value_device(r, c), devs[c]);
        CU_ASSERT_EQUAL(read_f32(r, c), 7.0f);
    }

    /* update: fn once per component, in order, on its device, with the selected argument components. */
    int seen[3] = { 0, 0, 0 };
    CU_ASSERT_EQUAL(starfold_strategy_update(s, var, record_update, 1, &r, seen), STARFOLD_OK);
    for (int c = 0; c < 3; c++) {
        CU_ASSERT_EQUAL(seen[c], 1 + devs[c]);
        CU_ASSERT_EQUAL(read_f32(var, c), 7.0f);
    }
    /* A one-component argument serves every component. */
    CU_ASSERT_EQUAL(starfold_strategy_update(s, var, record_update, 1, &t, seen), STARFOLD_OK);
    for (int c = 0; c < 3; c++) CU_ASSERT_EQUAL(read_f32(var, c), 7.0f);
    starfold_value_destroy(r);
    /* An argument whose components fit none: nothing runs. */
    const int d2[2] = { 6, 7 };
    starfold_value_t two = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 2, d2, STARFOLD_FLOAT32, 1, NULL, &two),
                          STARFOLD_OK);
    memset(seen, 0, sizeof seen);
    CU_ASSERT_EQUAL(starfold_strategy_update(s, var, record_update, 1, &two, seen), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(seen[0], 0);
    starfold_strategy_destroy(s);

    /* CentralStorageStrategy refuses multi-component arguments. */
    CU_ASSERT_EQUAL_FATAL(starfold_central_storage_strategy_create(ctx, NULL, 2, dev01, STARFOLD_DEVICE_HOST, &s),
                          STARFOLD_OK);
    starfold_value_t cvar = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable(s, STARFOLD_FLOAT32, 1, NULL, &cvar), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_strategy_update(s, cvar, record_update, 1, &two, seen), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "CentralStorageStrategy"));
    CU_ASSERT_EQUAL(starfold_strategy_update(s, cvar, record_update, 1, &t, seen), STARFOLD_OK);
    CU_ASSERT_EQUAL(read_f32(cvar, 0), 7.0f);
    /* reduce_to under CentralStorage: reduce-to-one (on the first destination when the parameters are on the host). */
    d = starfold_destination_value(cvar);
    starfold__trace_reset();
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, var, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace_path(), SF_PATH_REDUCE);
    CU_ASSERT_EQUAL(read_f32(r, 0), 21.0f);
    starfold_value_destroy(r);
    starfold_value_destroy(cvar);
    starfold_strategy_destroy(s);

    /* OneDeviceStrategy: reduce_to gives the value (a copy), wherever asked. */
    CU_ASSERT_EQUAL_FATAL(starfold_one_device_strategy_create(ctx, NULL, 5, &s), STARFOLD_OK);
    d = starfold_destination_device(5);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, t, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(read_f32(r, 0), 7.0f);
    CU_ASSERT_PTR_NOT_EQUAL(starfold_value_handle(r, 0), starfold_value_handle(t, 0));
    starfold_value_destroy(r);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce(s, STARFOLD_OP_MEAN, t, STARFOLD_AXIS_NONE, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_EQUAL(read_f32(r, 0), 7.0f);
    starfold_value_destroy(r);
    starfold_strategy_destroy(s);

    starfold_value_destroy(two);
    starfold_value_destroy(t);
    starfold_value_destroy(var);
}

/* all_reduce of a mirrored variable sums every replica's copy (TensorFlow returns 1 instead of N, #45026). */
static starfold_status_t step_mirrored_var(starfold_replica_context_t rc, void *arg)
{
    starfold_value_t var = arg, res = NULL;
    starpu_data_handle_t h = NULL;
    starfold_status_t st = starfold_replica_context_select(rc, var, &h);
    if (st == STARFOLD_OK && h != starfold_value_handle(var, starfold_replica_context_replica_id_in_sync_group(rc)))
        st = STARFOLD_ERR_INTERNAL;
    if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &var, NULL, &res);
    if (st == STARFOLD_OK && read_f32(res, 0) != 4.0f) st = STARFOLD_ERR_INTERNAL;
    starfold_value_destroy(res);
    return st;
}

static void test_all_reduce_mirrored_variable(void)
{
    const int devs[4] = { 0, 1, 2, 3 };
    starfold_strategy_t s = mirrored(4, devs, NULL, NULL);
    const float one = 1.0f;
    starfold_value_t var = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable(s, STARFOLD_FLOAT32, 1, &one, &var), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_mirrored_var, var), STARFOLD_OK);
    starfold_value_destroy(var);
    starfold_strategy_destroy(s);
}

/*
 * TensorFlow's reduce_non_distributed_value (doc/tensorflow-semantics.md, section 1): with
 * num_replicas_in_sync != 1, SUM of a value that is not a DistributedValues raises "A
 * non-DistributedValues value %s cannot be reduced with the given reduce op ReduceOp.SUM.", MEAN
 * returns the value; with one replica SUM broadcasts it. Expected values: 7.0 for MEAN (the value),
 * 7.0 for SUM with one replica; nothing written on a refusal.
 */
static void test_non_distributed_values(void)
{
    const int devs[3] = { 0, 1, 2 }, five = 5;
    const float seven = 7.0f;
    starfold_strategy_t s = mirrored(3, devs, NULL, NULL);
    starfold_value_t t = NULL, r = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &five, STARFOLD_FLOAT32, 1, &seven, &t),
                          STARFOLD_OK);
    starfold_destination_t d = starfold_destination_device(0);
    starfold_value_t untouched = (starfold_value_t)(uintptr_t)0x5eed;
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, t, &d, NULL, &untouched), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(),
                                  "A non-DistributedValues value (one component, on one device) cannot be reduced with "
                                  "the given reduce op ReduceOp.SUM"));
    CU_ASSERT_PTR_EQUAL(untouched, (starfold_value_t)(uintptr_t)0x5eed);
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to(s, STARFOLD_OP_PROD, t, &d, NULL, &untouched), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "ReduceOp.PROD"));
    CU_ASSERT_PTR_EQUAL(untouched, (starfold_value_t)(uintptr_t)0x5eed);
    CU_ASSERT_EQUAL(read_f32(t, 0), 7.0f);
    /* MEAN, MIN, MAX: the value itself, on the destination. */
    const starfold_op_t same[3] = { STARFOLD_OP_MEAN, STARFOLD_OP_MIN, STARFOLD_OP_MAX };
    for (int k = 0; k < 3; k++) {
        CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to(s, same[k], t, &d, NULL, &r), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_value_device(r, 0), 0);
        CU_ASSERT_EQUAL(read_f32(r, 0), 7.0f);
        starfold_value_destroy(r);
    }
    /* Destinations: a device the context lacks is NO_DEVICE (as for values), below -1 INVALID_ARGUMENT. */
    const int n = starfold_context_num_devices(ctx);
    starfold_value_t pr = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 3, devs, STARFOLD_FLOAT32, 1, NULL, &pr),
                          STARFOLD_OK);
    d = starfold_destination_device(n + 90);
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, pr, &d, NULL, &untouched), STARFOLD_ERR_NO_DEVICE);
    char want[64];
    snprintf(want, sizeof want, "device %d, the context has devices 0..%d", n + 90, n - 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), want));
    d = starfold_destination_device(-5);
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, pr, &d, NULL, &untouched), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "destination device -5 is not a device"));
    CU_ASSERT_PTR_EQUAL(untouched, (starfold_value_t)(uintptr_t)0x5eed);
    starfold_value_destroy(pr);
    starfold_strategy_destroy(s);

    /* One replica in sync: SUM of the value is the value (TensorFlow broadcasts it). */
    s = mirrored(1, &five, NULL, NULL);
    d = starfold_destination_device(5);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, t, &d, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(read_f32(r, 0), 7.0f);
    starfold_value_destroy(r);
    starfold_strategy_destroy(s);
    starfold_value_destroy(t);
}

/*
 * TensorFlow 1.x's choose_the_best (doc/tensorflow-semantics.md, section 4.5): the DGX-1's _dgx1_links
 * give HierarchicalCopyAllReduce(num_packs = 8); the same machine numbered otherwise (TensorFlow
 * compared the lists), fewer GPUs or other links give NCCL (starfold: ring, one pack); a non-GPU
 * device gives ReductionToOneDevice.
 */
static void test_choose_the_best(void)
{
    static const int tf_dgx1_links[8][4] = { { 1, 2, 3, 4 }, { 0, 2, 3, 5 }, { 0, 1, 3, 6 }, { 0, 1, 2, 7 },
                                    { 0, 5, 6, 7 }, { 1, 4, 6, 7 }, { 2, 4, 5, 7 }, { 3, 4, 5, 6 } };
    int m[64] = { 0 }, rotated[64] = { 0 };
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 4; k++) {
            m[i * 8 + tf_dgx1_links[i][k]] = 1;
            rotated[((i + 1) % 8) * 8 + (tf_dgx1_links[i][k] + 1) % 8] = 1; /* device d renamed d + 1 mod 8 */
        }
    starfold_cross_device_ops_t ops = NULL;
    starfold_algo_options_t o;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_choose_the_best(8, m, 1, &ops), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(ops), "hierarchical-copy");
    CU_ASSERT_EQUAL(starfold_cross_device_ops_options(ops, &o), STARFOLD_OK);
    CU_ASSERT_EQUAL(o.num_packs, 8);
    starfold_cross_device_ops_destroy(ops);
    /* Self-links are allowed, as TensorFlow allowed them. */
    for (int i = 0; i < 8; i++) m[i * 8 + i] = 1;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_choose_the_best(8, m, 1, &ops), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(ops), "hierarchical-copy");
    starfold_cross_device_ops_destroy(ops);
    /* The same machine numbered otherwise: not TensorFlow's list, so NCCL's choice (ring, one pack). */
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_choose_the_best(8, rotated, 1, &ops), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(ops), "ring");
    starfold_cross_device_ops_destroy(ops);
    /* One link missing. */
    m[0 * 8 + 4] = m[4 * 8 + 0] = 0;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_choose_the_best(8, m, 1, &ops), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(ops), "ring");
    starfold_cross_device_ops_destroy(ops);
    /* Four GPUs, fully connected. */
    int four[16];
    for (int i = 0; i < 16; i++) four[i] = 1;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_choose_the_best(4, four, 1, &ops), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(ops), "ring");
    starfold_cross_device_ops_destroy(ops);
    /* A CPU among the devices: ReductionToOneDevice; no matrix needed. */
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_choose_the_best(8, NULL, 0, &ops), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_cross_device_ops_algorithm(ops), "reduce-to-one");
    starfold_cross_device_ops_destroy(ops);
    /* Bad input: a status, nothing created. */
    ops = (starfold_cross_device_ops_t)(uintptr_t)0x5eed;
    CU_ASSERT_EQUAL(starfold_cross_device_ops_choose_the_best(0, m, 1, &ops), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_choose_the_best(8, NULL, 1, &ops), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_choose_the_best(STARFOLD_MAX_DEVICES + 1, m, 1, &ops),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_EQUAL(ops, (starfold_cross_device_ops_t)(uintptr_t)0x5eed);
    CU_ASSERT_EQUAL(starfold_cross_device_ops_choose_the_best(8, m, 1, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
}

/*
 * strategy.run returning per-replica results (TensorFlow):
 *
 *   def step_fn():
 *       ctx = tf.distribute.get_replica_context()
 *       x = tf.constant(float(ctx.replica_id_in_sync_group + 1))
 *       return ctx.all_reduce(SUM, x) if all_reduce else x
 *   per_replica = strategy.run(step_fn)
 *
 * Expected with 3 replicas: a PerReplica with components 1, 2, 3 on the replicas' devices; with the
 * all_reduce, 6 on each. Mode "odd": only odd replicas return something (refused); "same": every
 * replica returns the same mirrored variable (regroup gives that object); "none": no result (NULL).
 */
typedef struct results_arg {
    const char *mode;
    starfold_value_t shared;
    starfold_status_t outside;
} results_arg_t;

static starfold_status_t step_results(starfold_replica_context_t rc, void *arg)
{
    results_arg_t *a = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    if (!strcmp(a->mode, "none")) return STARFOLD_OK;
    if (!strcmp(a->mode, "same")) return starfold_replica_context_set_result(rc, a->shared);
    if (!strcmp(a->mode, "odd") && r % 2 == 0) return STARFOLD_OK;
    const float x = (float)(r + 1);
    starfold_value_t v = NULL, sum = NULL;
    starfold_status_t st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 1, &x, &v);
    if (st == STARFOLD_OK && !strcmp(a->mode, "all_reduce")) {
        st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, NULL, &sum);
        if (st == STARFOLD_OK) st = starfold_replica_context_set_result(rc, sum);
    } else if (st == STARFOLD_OK) {
        st = starfold_replica_context_set_result(rc, v);
    }
    starfold_value_destroy(sum);
    starfold_value_destroy(v); /* the result keeps its own reference */
    return st;
}

static void test_run_results(void)
{
    const int devs[3] = { 2, 0, 5 };
    starfold_strategy_t s = mirrored(3, devs, NULL, NULL);
    results_arg_t a = { "plain", NULL, STARFOLD_OK };
    starfold_value_t r = (starfold_value_t)(uintptr_t)0x5eed;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_run_results(s, step_results, &a, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_kind(r), STARFOLD_VALUE_PER_REPLICA);
    CU_ASSERT_EQUAL_FATAL(starfold_value_num_components(r), 3);
    for (int c = 0; c < 3; c++) {
        CU_ASSERT_EQUAL(starfold_value_device(r, c), devs[c]);
        CU_ASSERT_EQUAL(read_f32(r, c), (float)(c + 1));
    }
    starfold_value_destroy(r);

    a.mode = "all_reduce";
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_run_results(s, step_results, &a, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_value_num_components(r), 3);
    for (int c = 0; c < 3; c++) {
        CU_ASSERT_EQUAL(starfold_value_device(r, c), devs[c]);
        CU_ASSERT_EQUAL(read_f32(r, c), 6.0f);
    }
    starfold_value_destroy(r);

    a.mode = "none";
    CU_ASSERT_EQUAL(starfold_strategy_run_results(s, step_results, &a, &r), STARFOLD_OK);
    CU_ASSERT_PTR_NULL(r);

    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable(s, STARFOLD_FLOAT32, 1, NULL, &a.shared), STARFOLD_OK);
    a.mode = "same";
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_run_results(s, step_results, &a, &r), STARFOLD_OK);
    CU_ASSERT_PTR_EQUAL(r, a.shared);
    starfold_value_destroy(r);

    a.mode = "odd";
    r = (starfold_value_t)(uintptr_t)0x5eed;
    CU_ASSERT_EQUAL(starfold_strategy_run_results(s, step_results, &a, &r), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "replica 1 returned a result and replica 0 none"));
    CU_ASSERT_PTR_EQUAL(r, (starfold_value_t)(uintptr_t)0x5eed);

    /* Outside a replica function: refused. */
    CU_ASSERT_EQUAL(starfold_replica_context_set_result(NULL, a.shared), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_strategy_run_results(s, step_results, &a, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    /* starfold_strategy_run drops results. */
    a.mode = "plain";
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_results, &a), STARFOLD_OK);
    starfold_value_destroy(a.shared);
    starfold_strategy_destroy(s);
}

/*
 * Strategy.gather and ReplicaContext.all_gather (TensorFlow's expected values, worked out by hand):
 *
 *   strategy = MirroredStrategy(3 devices)
 *   def step():                     # replica r holds [10r, 10r + 1]
 *       v = tf.constant([10. * r, 10. * r + 1])
 *       g = ctx.all_gather(v, axis=0)             -> [0, 1, 10, 11, 20, 21] on every replica
 *       return v
 *   per_replica = strategy.run(step)
 *   strategy.gather(per_replica, axis=0)          -> [0, 1, 10, 11, 20, 21] on the host
 *
 * Odd replica count, devices out of order; axis -1 is axis 0; axis 1 is refused as TensorFlow's
 * "axis 1 is out of bounds for a 1-D tensor"; a mirrored variable gathers every copy; values may
 * differ along the gathered axis (TensorFlow: shapes equal except along axis), replica 2 passing
 * [20, 21, 99] gives [0, 1, 10, 11, 20, 21, 99]; replicas whose dtypes differ fail together.
 */
typedef struct gather_arg {
    float got[NDEV][7];
    size_t count[NDEV];
    starfold_status_t st[NDEV];
    int axis;
    int uneven;   /* replica 2 passes 3 elements */
    int mixed;    /* replica 1 passes int32: a dtype mismatch */
} gather_arg_t;

static starfold_status_t step_gather(starfold_replica_context_t rc, void *arg)
{
    gather_arg_t *a = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    const float x[3] = { 10.0f * r, 10.0f * r + 1, 99 };
    const int32_t xi[2] = { 1, 2 };
    starfold_value_t v = NULL, g = NULL;
    starfold_status_t st = a->mixed && r == 1
                               ? starfold_replica_context_create_value(rc, STARFOLD_INT32, 2, xi, &v)
                               : starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, a->uneven && r == 2 ? 3 : 2, x, &v);
    if (st == STARFOLD_OK) st = starfold_replica_context_all_gather(rc, v, a->axis, NULL, &g);
    if (st == STARFOLD_OK) {
        a->count[r] = starfold_value_count(g);
        CU_ASSERT_EQUAL(starfold_value_device(g, 0), starfold_replica_context_device(rc));
        if (a->count[r] <= 7) st = starfold_value_read(g, 0, a->got[r], sizeof(float) * a->count[r]);
    }
    if (st == STARFOLD_OK) st = starfold_replica_context_set_result(rc, v);
    a->st[r] = st;
    starfold_value_destroy(g);
    starfold_value_destroy(v);
    return st;
}

/*
 * IndexedSlices, with TensorFlow's values worked out by hand (dense shape [4, 2]):
 *
 *   replica 0: values [[1 2] [3 4]] indices [0 2];  replica 1: [[5 6]] [2];  replica 2: no rows
 *   reduce_to(SUM)  -> values [[1 2] [3 4] [5 6]], indices [0 2 2]   (concatenated, replica order)
 *   reduce_to(MEAN) -> values / 3, the same indices
 *   convert_to_tensor(SUM result) -> [[1 2] [0 0] [8 10] [0 0]]      (duplicate rows added)
 */
static void test_indexed_slices(void)
{
    const int devs[3] = { 3, 0, 6 };
    const size_t rows[3] = { 2, 1, 0 };
    const float v0[4] = { 1, 2, 3, 4 }, v1[2] = { 5, 6 };
    const int64_t i0[2] = { 0, 2 }, i1[1] = { 2 };
    const void *vals[3] = { v0, v1, NULL };
    const int64_t *idx[3] = { i0, i1, NULL };
    starfold_indexed_slices_t sl = NULL, sum = NULL, mean = NULL, host = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_indexed_slices_create(ctx, STARFOLD_VALUE_PER_REPLICA, 3, devs, STARFOLD_FLOAT32, 4, 2, rows,
                                                         vals, idx, &sl),
                          STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_indexed_slices_num_components(sl), 3);
    CU_ASSERT_EQUAL(starfold_indexed_slices_rows(sl, 1), 1);
    starfold_strategy_t s = mirrored(3, devs, NULL, NULL);

    const int d0 = 0;
    const starfold_destination_t one = starfold_destination_devices(1, &d0);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to_indexed_slices(s, STARFOLD_OP_SUM, sl, &one, NULL, &sum), STARFOLD_OK);
    CU_ASSERT_EQUAL(last_trace_path(), SF_PATH_GATHER);
    CU_ASSERT_EQUAL(starfold_indexed_slices_kind(sum), STARFOLD_VALUE_MIRRORED);
    CU_ASSERT_EQUAL_FATAL(starfold_indexed_slices_num_components(sum), 1);
    CU_ASSERT_EQUAL(starfold_indexed_slices_device(sum, 0), 0);
    CU_ASSERT_EQUAL_FATAL(starfold_indexed_slices_rows(sum, 0), 3);
    float got[6];
    int64_t gi[3];
    CU_ASSERT_EQUAL_FATAL(starfold_indexed_slices_read(sum, 0, got, sizeof got, gi, sizeof gi), STARFOLD_OK);
    for (int k = 0; k < 6; k++) CU_ASSERT_EQUAL(got[k], (float)(k + 1));
    CU_ASSERT(gi[0] == 0 && gi[1] == 2 && gi[2] == 2);
    starfold_value_t dense = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_indexed_slices_densify(sum, 0, &dense), STARFOLD_OK);
    float dv[8];
    CU_ASSERT_EQUAL_FATAL(starfold_value_count(dense), 8);
    CU_ASSERT_EQUAL(starfold_value_read(dense, 0, dv, sizeof dv), STARFOLD_OK);
    static const float want_dense[8] = { 1, 2, 0, 0, 8, 10, 0, 0 };
    for (int k = 0; k < 8; k++) CU_ASSERT_EQUAL(dv[k], want_dense[k]);
    starfold_value_destroy(dense);

    /* MEAN onto every replica's device (the ring's all-gather here), and onto the host. */
    const starfold_destination_t all = starfold_destination_devices(3, devs);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to_indexed_slices(s, STARFOLD_OP_MEAN, sl, &all, NULL, &mean), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_indexed_slices_num_components(mean), 3);
    for (int c = 0; c < 3; c++) {
        CU_ASSERT_EQUAL(starfold_indexed_slices_device(mean, c), devs[c]);
        CU_ASSERT_EQUAL_FATAL(starfold_indexed_slices_read(mean, c, got, sizeof got, gi, sizeof gi), STARFOLD_OK);
        for (int k = 0; k < 6; k++) CU_ASSERT(fabsf(got[k] - (float)(k + 1) / 3) < 1e-6f);
        CU_ASSERT(gi[0] == 0 && gi[1] == 2 && gi[2] == 2); /* indices are not divided */
    }
    const starfold_destination_t h = starfold_destination_host();
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to_indexed_slices(s, STARFOLD_OP_SUM, sl, &h, NULL, &host), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_indexed_slices_device(host, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_EQUAL_FATAL(starfold_indexed_slices_read(host, 0, got, sizeof got, NULL, 0), STARFOLD_OK);
    for (int k = 0; k < 6; k++) CU_ASSERT_EQUAL(got[k], (float)(k + 1));

    /* The ops' reduce, ring: the gathers around its rings. */
    starfold_cross_device_ops_t ring = NULL;
    starfold_indexed_slices_t r2 = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("ring", NULL, NULL, &ring), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_reduce_indexed_slices(ring, STARFOLD_OP_SUM, sl, &all, NULL, &r2),
                          STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(last_algorithm(), "ring");
    CU_ASSERT_EQUAL_FATAL(starfold_indexed_slices_read(r2, 2, got, sizeof got, gi, sizeof gi), STARFOLD_OK);
    for (int k = 0; k < 6; k++) CU_ASSERT_EQUAL(got[k], (float)(k + 1));

    /* Refusals: other ops, wrong sizes, indices outside the dense shape, a replica function's call. */
    starfold_indexed_slices_t bad = NULL;
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to_indexed_slices(s, STARFOLD_OP_MAX, sl, &one, NULL, &bad),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "SUM or MEAN"));
    CU_ASSERT_EQUAL(starfold_indexed_slices_read(sum, 0, got, 8, NULL, 0), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_indexed_slices_read(sum, 1, got, sizeof got, NULL, 0), STARFOLD_ERR_INVALID_ARGUMENT);
    const int64_t out_of_range[2] = { 0, 4 };
    const int64_t *idx_bad[3] = { out_of_range, i1, NULL };
    CU_ASSERT_EQUAL(starfold_indexed_slices_create(ctx, STARFOLD_VALUE_PER_REPLICA, 3, devs, STARFOLD_FLOAT32, 4, 2, rows, vals,
                                                   idx_bad, &bad),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "index 4 of row 1 is outside the dense shape's 4 rows"));
    CU_ASSERT_EQUAL(starfold_indexed_slices_create(ctx, STARFOLD_VALUE_PER_REPLICA, 3, devs, STARFOLD_FLOAT32, 4, 0, rows, vals,
                                                   idx, &bad),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(bad);
    CU_ASSERT_EQUAL(starfold_indexed_slices_densify(sum, 3, &dense), STARFOLD_ERR_INVALID_ARGUMENT);

    /* batch_reduce_to with dense and sparse pairs mixed: results in input order. */
    const float dx[2] = { 1, 10 };
    starfold_value_t dense_in = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 3, devs, STARFOLD_FLOAT32, 1, NULL, &dense_in),
                          STARFOLD_OK);
    for (int c = 0; c < 3; c++) CU_ASSERT_EQUAL(starfold_value_write(dense_in, c, &dx[c % 2], sizeof(float)), STARFOLD_OK);
    const starfold_mixed_pair_t mix[3] = { { NULL, sl, one }, { dense_in, NULL, one }, { NULL, sl, h } };
    starfold_value_t dres[3];
    starfold_indexed_slices_t sres[3];
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_batch_reduce_to_mixed(s, STARFOLD_OP_SUM, 3, mix, NULL, dres, sres), STARFOLD_OK);
    CU_ASSERT(dres[0] == NULL && sres[0] != NULL && dres[1] != NULL && sres[1] == NULL && dres[2] == NULL && sres[2] != NULL);
    CU_ASSERT_EQUAL(read_f32(dres[1], 0), 12.0f); /* 1 + 10 + 1 */
    CU_ASSERT_EQUAL(starfold_indexed_slices_rows(sres[0], 0), 3);
    CU_ASSERT_EQUAL(starfold_indexed_slices_device(sres[2], 0), STARFOLD_DEVICE_HOST);
    starfold_value_destroy(dres[1]);
    starfold_indexed_slices_destroy(sres[0]);
    starfold_indexed_slices_destroy(sres[2]);
    const starfold_mixed_pair_t both[1] = { { dense_in, sl, one } };
    CU_ASSERT_EQUAL(starfold_strategy_batch_reduce_to_mixed(s, STARFOLD_OP_SUM, 1, both, NULL, dres, sres),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "exactly one"));
    starfold_value_destroy(dense_in);

    starfold_indexed_slices_destroy(r2);
    starfold_cross_device_ops_destroy(ring);
    starfold_indexed_slices_destroy(host);
    starfold_indexed_slices_destroy(mean);
    starfold_indexed_slices_destroy(sum);
    starfold_indexed_slices_destroy(sl);
    starfold_strategy_destroy(s);
}

static void test_gather(void)
{
    static const float want[6] = { 0, 1, 10, 11, 20, 21 };
    const int devs[3] = { 4, 1, 6 };
    starfold_strategy_t s = mirrored(3, devs, NULL, NULL);
    gather_arg_t a;
    memset(&a, 0, sizeof a);
    starfold_value_t pr = NULL, host = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_run_results(s, step_gather, &a, &pr), STARFOLD_OK);
    for (int r = 0; r < 3; r++) {
        CU_ASSERT_EQUAL(a.st[r], STARFOLD_OK);
        CU_ASSERT_EQUAL(a.count[r], 6);
        for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(a.got[r][i], want[i]);
    }
    CU_ASSERT_EQUAL(last_trace_path(), SF_PATH_GATHER);

    for (int axis = 0; axis >= -1; axis--) {
        CU_ASSERT_EQUAL_FATAL(starfold_strategy_gather(s, pr, axis, &host), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_value_device(host, 0), STARFOLD_DEVICE_HOST);
        float got[6] = { 0 };
        CU_ASSERT_EQUAL_FATAL(starfold_value_count(host), 6);
        CU_ASSERT_EQUAL(starfold_value_read(host, 0, got, sizeof got), STARFOLD_OK);
        for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(got[i], want[i]);
        starfold_value_destroy(host);
        host = NULL;
    }
    CU_ASSERT_EQUAL(starfold_strategy_gather(s, pr, 1, &host), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "axis 1 is out of bounds for a 1-D tensor"));
    CU_ASSERT_PTR_NULL(host);
    CU_ASSERT_EQUAL(starfold_strategy_gather(s, NULL, 0, &host), STARFOLD_ERR_INVALID_ARGUMENT);

    /* The ops' gather onto the components' own devices: an all-gather, by the ring around the host's devices. */
    starfold_cross_device_ops_t ring = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_create("ring", NULL, NULL, &ring), STARFOLD_OK);
    const starfold_destination_t to = starfold_destination_value(pr);
    starfold_value_t m = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_cross_device_ops_gather(ring, pr, 0, &to, NULL, &m), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(last_algorithm(), "ring");
    CU_ASSERT_EQUAL(starfold_value_kind(m), STARFOLD_VALUE_MIRRORED);
    CU_ASSERT_EQUAL_FATAL(starfold_value_num_components(m), 3);
    for (int c = 0; c < 3; c++) {
        float got[6] = { 0 };
        CU_ASSERT_EQUAL(starfold_value_device(m, c), devs[c]);
        CU_ASSERT_EQUAL(starfold_value_read(m, c, got, sizeof got), STARFOLD_OK);
        for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(got[i], want[i]);
    }
    /* A mirrored value gathers every copy: 3 x 6 elements. */
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_gather(s, m, 0, &host), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_count(host), 18);
    float all[18];
    CU_ASSERT_EQUAL(starfold_value_read(host, 0, all, sizeof all), STARFOLD_OK);
    for (int i = 0; i < 18; i++) CU_ASSERT_EQUAL(all[i], want[i % 6]);
    starfold_value_destroy(host);
    host = NULL;
    starfold_value_destroy(m);
    starfold_cross_device_ops_destroy(ring);

    /* A value of one component: a copy (TensorFlow's single-value shortcut). */
    const int d5 = 5;
    const float one[2] = { 7, 8 };
    starfold_value_t v = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &d5, STARFOLD_FLOAT32, 2, one, &v),
                          STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_gather(s, v, 0, &host), STARFOLD_OK);
    float got2[2] = { 0 };
    CU_ASSERT_EQUAL(starfold_value_read(host, 0, got2, sizeof got2), STARFOLD_OK);
    CU_ASSERT(got2[0] == 7 && got2[1] == 8);
    starfold_value_destroy(host);
    starfold_value_destroy(v);
    starfold_value_destroy(pr);

    /* Along the gathered axis the sizes may differ: 2 + 2 + 3 elements. */
    memset(&a, 0, sizeof a);
    a.uneven = 1;
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_gather, &a), STARFOLD_OK);
    static const float want7[7] = { 0, 1, 10, 11, 20, 21, 99 };
    for (int r = 0; r < 3; r++) {
        CU_ASSERT_EQUAL(a.st[r], STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(a.count[r], 7);
        for (int i = 0; i < 7; i++) CU_ASSERT_EQUAL(a.got[r][i], want7[i]);
    }
    /* Replicas that disagree on the dtype, or an axis out of range: every replica fails, none hangs. */
    memset(&a, 0, sizeof a);
    a.mixed = 1;
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_gather, &a), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "all_gather #0: the value is int32 on replica 1 but float32"));
    for (int r = 0; r < 3; r++) CU_ASSERT_EQUAL(a.st[r], STARFOLD_ERR_INVALID_ARGUMENT);
    memset(&a, 0, sizeof a);
    a.axis = 2;
    CU_ASSERT_EQUAL(starfold_strategy_run(s, step_gather, &a), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "axis 2 is out of bounds"));
    /* Outside a replica function, all_gather is refused. */
    CU_ASSERT_EQUAL(starfold_replica_context_all_gather(NULL, NULL, 0, NULL, &v), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_strategy_destroy(s);
}

/* ------------------------------------------------------------------------------------------------
 * Replicas in turn (STARFOLD_REPLICAS_IN_TURN)
 */

typedef struct turn_arg {
    pthread_t caller;
    int on_caller[NDEV];
    int inside, most_inside;   /* replicas between their entry and their collective, or after it */
    char order[4 * NDEV + 1];  /* ids as the replicas start, then as they leave the collective */
    int len;
    float sum[NDEV];
    starfold_status_t set_mode;
    starfold_replica_mode_t mode_seen;
    int own_error_kept;        /* replica 0's starfold_last_error() after its collective is its own */
    int threads;               /* the replicas run at once: no bookkeeping of turns */
} turn_arg_t;

static void turn_enter(turn_arg_t *a, int r)
{
    if (a->threads) return;
    if (++a->inside > a->most_inside) a->most_inside = a->inside;
    a->order[a->len++] = (char)('0' + r);
}

static starfold_status_t step_in_turn(starfold_replica_context_t rc, void *arg)
{
    turn_arg_t *a = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    a->on_caller[r] = pthread_equal(pthread_self(), a->caller);
    turn_enter(a, r);
    /* Asked from a replica: refused, nothing changed (its run holds the strategy). */
    if (r == 0) {
        a->set_mode = starfold_strategy_set_replica_mode(starfold_replica_context_strategy(rc), STARFOLD_REPLICAS_THREADS);
        a->mode_seen = starfold_strategy_replica_mode(starfold_replica_context_strategy(rc));
    }
    /* Another error text on replica 1 meanwhile: each replica keeps its own, as a thread would. */
    if (r == 1) starfold_strategy_set_replica_mode(starfold_replica_context_strategy(rc), (starfold_replica_mode_t)7);
    const float x = (float)(r + 1);
    starfold_value_t v = NULL, res = NULL;
    starfold_status_t st = local_value(rc, &x, 1, &v);
    if (!a->threads) a->inside--;
    if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, NULL, &res);
    turn_enter(a, r);
    if (r == 0) a->own_error_kept = strstr(starfold_last_error(), "called from a replica function") != NULL;
    if (!a->threads) a->inside--;
    if (st == STARFOLD_OK) st = starfold_value_read(res, 0, &a->sum[r], sizeof(float));
    starfold_value_destroy(res);
    starfold_value_destroy(v);
    return st;
}

/* A run in turn from another thread than the last one's: the replicas go to that thread. */
typedef struct turn_thread {
    starfold_strategy_t s;
    turn_arg_t a;
    starfold_status_t st;
} turn_thread_t;

static void *run_in_turn_elsewhere(void *p)
{
    turn_thread_t *t = p;
    t->a.caller = pthread_self();
    t->st = starfold_strategy_run(t->s, step_in_turn, &t->a);
    return NULL;
}

/* One replica at a time, on the calling thread, in replica order; the last to arrive runs the
 * collective and goes on first. 3 replicas (odd), then 8. */
static void test_in_turn_order(void)
{
    const int devs[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    const int counts[2] = { 3, 8 };
    for (int k = 0; k < 2; k++) {
        const int n = counts[k];
        starfold_strategy_t s = NULL;
        CU_ASSERT_EQUAL_FATAL(starfold_mirrored_strategy_create(ctx, NULL, n, devs, NULL, &s), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_strategy_replica_mode(s), STARFOLD_REPLICAS_IN_TURN); /* the default */
        CU_ASSERT_EQUAL(starfold_strategy_set_replica_mode(s, STARFOLD_REPLICAS_THREADS), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_strategy_replica_mode(s), STARFOLD_REPLICAS_THREADS);
        CU_ASSERT_EQUAL(starfold_strategy_set_replica_mode(s, STARFOLD_REPLICAS_IN_TURN), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_strategy_replica_mode(s), STARFOLD_REPLICAS_IN_TURN);
        for (int step = 0; step < 3; step++) {
            turn_arg_t a;
            memset(&a, 0, sizeof a);
            a.caller = pthread_self();
            CU_ASSERT_EQUAL(starfold_strategy_run(s, step_in_turn, &a), STARFOLD_OK);
            char want[4 * NDEV + 1] = "";
            for (int r = 0; r < n; r++) want[r] = (char)('0' + r);       /* in order to the collective */
            want[n] = (char)('0' + n - 1);                               /* the leader goes on */
            for (int r = 0; r < n - 1; r++) want[n + 1 + r] = (char)('0' + r); /* then the others */
            a.order[a.len] = 0;
            CU_ASSERT_STRING_EQUAL(a.order, want);
            CU_ASSERT_EQUAL(a.most_inside, 1);
            CU_ASSERT_EQUAL(a.set_mode, STARFOLD_ERR_INVALID_ARGUMENT);
            CU_ASSERT_EQUAL(a.mode_seen, STARFOLD_REPLICAS_IN_TURN);
            CU_ASSERT_TRUE(a.own_error_kept);
            for (int r = 0; r < n; r++) {
                CU_ASSERT_TRUE(a.on_caller[r]);
                CU_ASSERT_EQUAL(a.sum[r], (float)(n * (n + 1) / 2));
            }
        }
        CU_ASSERT_PTR_NULL(starfold_get_replica_context()); /* the caller's own context is back */
        static turn_thread_t elsewhere;
        memset(&elsewhere, 0, sizeof elsewhere);
        elsewhere.s = s;
        pthread_t t;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, run_in_turn_elsewhere, &elsewhere), 0);
        pthread_join(t, NULL);
        CU_ASSERT_EQUAL(elsewhere.st, STARFOLD_OK);
        for (int r = 0; r < n; r++) {
            CU_ASSERT_TRUE(elsewhere.a.on_caller[r]);
            CU_ASSERT_EQUAL(elsewhere.a.sum[r], (float)(n * (n + 1) / 2));
        }
        /* Back to threads: the same step on the pool's threads, not the caller. */
        CU_ASSERT_EQUAL(starfold_strategy_set_replica_mode(s, STARFOLD_REPLICAS_THREADS), STARFOLD_OK);
        turn_arg_t a;
        memset(&a, 0, sizeof a);
        a.caller = pthread_self();
        a.threads = 1;
        CU_ASSERT_EQUAL(starfold_strategy_run(s, step_in_turn, &a), STARFOLD_OK);
        for (int r = 0; r < n; r++) {
            CU_ASSERT_FALSE(a.on_caller[r]);
            CU_ASSERT_EQUAL(a.sum[r], (float)(n * (n + 1) / 2));
        }
        starfold_strategy_destroy(s);
    }
    CU_ASSERT_EQUAL(starfold_strategy_set_replica_mode(NULL, STARFOLD_REPLICAS_IN_TURN), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_strategy_replica_mode(NULL), STARFOLD_REPLICAS_IN_TURN); /* the default */
    starfold_strategy_t s = mirrored(2, dev01, NULL, NULL);
    CU_ASSERT_EQUAL(starfold_strategy_set_replica_mode(s, (starfold_replica_mode_t)7), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "unknown replica mode 7"));
    CU_ASSERT_EQUAL(starfold_strategy_replica_mode(s), tests_replica_mode); /* unchanged */
    starfold_strategy_destroy(s);
}


/* Usage: test_strategy [SUBSTRING]: only the tests whose name contains SUBSTRING. */
int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    static const starfold__tu_test_t tests[] = {
        { "seed: all_reduce of 1.0 over 2 replicas", test_seed_all_reduce },
        { "seed: all_reduce of [1, 2] in one collective", test_seed_all_reduce_list },
        { "all_reduce in a loop: the step's plan found again", test_all_reduce_loop_plans },
        { "all_reduce in a loop: a replaced value replans, a reshaped one is refused", test_all_reduce_loop_replaced },
        { "seed: replica_id_in_sync_group, concurrent replicas", test_seed_replica_ids },
        { "seed: batch_reduce_to + merge_call + update, 3 strategies", test_seed_batch_reduce_to },
        { "construction and default ops by topology", test_construction },
        { "all_reduce on the DGX-1 plan, 8 replicas", test_dgx1_all_reduce },
        { "many steps, 3 and 4 replicas", test_many_steps },
        { "implementation mapping", test_implementation_mapping },
        { "timeout: a replica does not join", test_timeout },
        { "mismatched merge_call counts", test_mismatched_merge_calls },
        { "mismatched collective kinds", test_mismatched_kinds },
        { "a replica fails while others wait", test_replica_failure },
        { "replicas disagree on the values", test_bad_structure },
        { "a failing kernel: a small all_reduce reports it, a large one its wait", test_failing_kernel },
        { "replica and cross-replica contexts", test_contexts },
        { "a replica context used after its run", test_context_after_run },
        { "merge_call results and errors", test_merge_call },
        { "Strategy.reduce with and without axis", test_strategy_reduce_axis },
        { "reduce_to, broadcast_to, update", test_cross_replica_methods },
        { "all_reduce of a mirrored variable", test_all_reduce_mirrored_variable },
        { "reduce_to of a non-distributed value; destinations outside the context", test_non_distributed_values },
        { "TensorFlow 1.x choose_the_best from a link matrix", test_choose_the_best },
        { "strategy.run returns per-replica results", test_run_results },
        { "Strategy.gather and ReplicaContext.all_gather", test_gather },
        { "IndexedSlices reduced as TensorFlow does", test_indexed_slices },
    };
    if (suite_init() != 0) {
        fprintf(stderr, "test_strategy: cannot create the context: %s\n", starfold_last_error());
        return 77;
    }
    if (starfold__tu_begin() != 0) return 1;
    if (starfold__tu_add("distribute: strategies, run, replica context (CPU-only)", NULL, NULL, tests, SF_TU_COUNT(tests), only) != 0) return 1;
    /* Replicas in turn: their own test, then every test above whose replicas need not run at once
     * (not the concurrency one, not timeouts: a replica in turn cannot wait for one that is running). */
    static const starfold__tu_test_t in_turn_tests[] = {
        { "in turn: one replica at a time on the caller, in order", test_in_turn_order },
        { "in turn: seed: all_reduce of 1.0 over 2 replicas", test_seed_all_reduce },
        { "in turn: seed: all_reduce of [1, 2] in one collective", test_seed_all_reduce_list },
        { "in turn: all_reduce in a loop: the step's plan found again", test_all_reduce_loop_plans },
        { "in turn: all_reduce in a loop: a replaced value replans", test_all_reduce_loop_replaced },
        { "in turn: seed: batch_reduce_to + merge_call + update", test_seed_batch_reduce_to },
        { "in turn: all_reduce on the DGX-1 plan, 8 replicas", test_dgx1_all_reduce },
        { "in turn: many steps, 3 and 4 replicas", test_many_steps },
        { "in turn: mismatched merge_call counts", test_mismatched_merge_calls },
        { "in turn: mismatched collective kinds", test_mismatched_kinds },
        { "in turn: a replica fails while others wait", test_replica_failure },
        { "in turn: replicas disagree on the values", test_bad_structure },
        { "in turn: a failing kernel", test_failing_kernel },
        { "in turn: replica and cross-replica contexts", test_contexts },
        { "in turn: a replica context used after its run", test_context_after_run },
        { "in turn: merge_call results and errors", test_merge_call },
        { "in turn: all_reduce of a mirrored variable", test_all_reduce_mirrored_variable },
        { "in turn: strategy.run returns per-replica results", test_run_results },
        { "in turn: Strategy.gather and ReplicaContext.all_gather", test_gather },
    };
    if (starfold__tu_add("distribute: replicas in turn (CPU-only)", in_turn_suite_init, in_turn_suite_cleanup, in_turn_tests, SF_TU_COUNT(in_turn_tests), only) != 0) return 1;
    const unsigned failed = starfold__tu_run();
    suite_cleanup();
    return failed ? 1 : 0;
}
