/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * TensorFlow's batch_reduce_to example (tf.distribute.StrategyExtended.batch_reduce_to), in C.
 *
 *   @tf.function
 *   def step_fn(var):
 *     def merge_fn(strategy, value, var):
 *       # All-reduce the value. Note that `value` here is a `tf.distribute.DistributedValues`.
 *       reduced = strategy.extended.batch_reduce_to(tf.distribute.ReduceOp.SUM, [(value, var)])[0]
 *       strategy.extended.update(var, lambda var, value: var.assign(value), args=(reduced,))
 *     value = tf.identity(1.)
 *     tf.distribute.get_replica_context().merge_call(merge_fn, args=(value, var))
 *
 *   def run(strategy):
 *     with strategy.scope():
 *       v = tf.Variable(0.)
 *       strategy.run(step_fn, args=(v,))
 *       return v
 *
 *   run(tf.distribute.MirroredStrategy(["GPU:0", "GPU:1"]))                     -> 2.0 on both copies
 *     (twice: replicas in turn on the calling thread, the default, then in threads of their own)
 *   run(tf.distribute.experimental.CentralStorageStrategy(
 *       compute_devices=["GPU:0", "GPU:1"], parameter_device="CPU:0"))         -> 2.0
 *   run(tf.distribute.OneDeviceStrategy("GPU:0"))                              -> 1.0
 *
 * Devices: StarPU's CUDA or OpenCL workers when there are two, else two logical devices on the CPU
 * workers. Exit status: 0 when the four results are TensorFlow's, 1 otherwise, 77 when StarPU has
 * no worker at all.
 */
#include <stdio.h>
#include <stdlib.h>

#include <starfold.h>

/* The per-replica arguments of merge_call: TensorFlow's args=(value, var). */
typedef struct step_args {
    starfold_value_t value; /* this replica's tf.identity(1.) */
    starfold_value_t var;   /* the variable, the same object for every replica */
} step_args_t;

typedef struct run_state {
    starfold_value_t var;
    step_args_t args[2];
} run_state_t;

/* lambda var, value: var.assign(value) */
static starfold_status_t assign(const starfold_update_call_t *call, void *user_data)
{
    (void)user_data;
    return starfold_update_assign(call, 0);
}

/* merge_fn(strategy, value, var): runs once, in the cross-replica context. */
static starfold_status_t merge_fn(starfold_strategy_t strategy, int num_replicas, void *const *args, void **results)
{
    (void)results;
    starfold_value_t values[2], vars[2], value = NULL, var = NULL, reduced = NULL;
    for (int r = 0; r < num_replicas; r++) {
        values[r] = ((step_args_t *)args[r])->value;
        vars[r] = ((step_args_t *)args[r])->var;
    }
    /* TensorFlow hands merge_fn the per-replica arguments as a PerReplica (identical objects collapse). */
    starfold_status_t st = starfold_value_regroup(STARFOLD_VALUE_PER_REPLICA, num_replicas, values, &value);
    if (st == STARFOLD_OK) st = starfold_value_regroup(STARFOLD_VALUE_MIRRORED, num_replicas, vars, &var);
    if (st == STARFOLD_OK) {
        starfold_value_destination_pair_t pair = { value, starfold_destination_value(var) };
        st = starfold_strategy_batch_reduce_to(strategy, STARFOLD_OP_SUM, 1, &pair, NULL, &reduced);
    }
    if (st == STARFOLD_OK) st = starfold_strategy_update(strategy, var, assign, 1, &reduced, NULL);
    starfold_value_destroy(reduced);
    starfold_value_destroy(var);
    starfold_value_destroy(value);
    return st;
}

/* step_fn(var): one call per replica, concurrently. */
static starfold_status_t step_fn(starfold_replica_context_t rc, void *arg)
{
    run_state_t *rs = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    const int device = starfold_replica_context_device(rc);
    const float one = 1.0f;
    step_args_t *a = &rs->args[r];
    a->var = rs->var;
    starfold_status_t st = starfold_value_create(starfold_strategy_context(starfold_replica_context_strategy(rc)),
                                                 STARFOLD_VALUE_PER_REPLICA, 1, &device, STARFOLD_FLOAT32, 1, &one,
                                                 &a->value);
    if (st != STARFOLD_OK) return st;
    return starfold_replica_context_merge_call(rc, merge_fn, a, NULL);
}

/* run(strategy): creates the variable in the strategy's scope, runs step_fn, prints the variable. */
static int run(starfold_strategy_t strategy, const char *label, float expected)
{
    run_state_t rs = { NULL, { { NULL, NULL }, { NULL, NULL } } };
    const float zero = 0.0f;
    int ok = 0;
    starfold_status_t st = starfold_strategy_create_variable(strategy, STARFOLD_FLOAT32, 1, &zero, &rs.var);
    if (st == STARFOLD_OK) st = starfold_strategy_run(strategy, step_fn, &rs);
    if (st == STARFOLD_OK) {
        ok = 1;
        printf("%-58s {", label);
        for (int c = 0; c < starfold_value_num_components(rs.var); c++) {
            float x = -1.0f;
            if ((st = starfold_value_read(rs.var, c, &x, sizeof x)) != STARFOLD_OK) break;
            const int dev = starfold_value_device(rs.var, c);
            if (dev == STARFOLD_DEVICE_HOST) printf("%s host: %.1f", c ? "," : "", x);
            else printf("%s device %d: %.1f", c ? "," : "", dev, x);
            ok &= x == expected;
        }
        printf(" }  expected %.1f: %s\n", expected, ok && st == STARFOLD_OK ? "ok" : "WRONG");
    }
    if (st != STARFOLD_OK) {
        fprintf(stderr, "%s: %s (%s)\n", label, starfold_status_string(st), starfold_last_error());
        ok = 0;
    }
    for (int r = 0; r < 2; r++) starfold_value_destroy(rs.args[r].value);
    starfold_value_destroy(rs.var);
    return ok;
}

int main(void)
{
    /* Two devices: the first two accelerators, else two logical devices on the CPU workers. */
    starfold_context_t ctx = NULL;
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    if (starfold_context_create(&o, &ctx) == STARFOLD_OK && starfold_context_num_devices(ctx) < 2) {
        starfold_context_destroy(ctx);
        ctx = NULL;
    }
    if (!ctx) {
        o.mode = STARFOLD_DEVICES_CPU;
        o.num_devices = 2;
        starfold_status_t st = starfold_context_create(&o, &ctx);
        if (st != STARFOLD_OK) {
            fprintf(stderr, "batch_reduce_to: skipped, no StarPU worker: %s\n", starfold_last_error());
            return 77;
        }
    }
    const int gpus[2] = { 0, 1 };
    int ok = 1;
    starfold_strategy_t s = NULL;

    if (starfold_mirrored_strategy_create(ctx, NULL, 2, gpus, NULL, &s) == STARFOLD_OK) {
        /* The replicas one at a time on this thread, switching at merge_call: TensorFlow's eager order. */
        ok &= run(s, "MirroredStrategy([0, 1])", 2.0f);
        /* A thread per replica, all at once. */
        ok &= starfold_strategy_set_replica_mode(s, STARFOLD_REPLICAS_THREADS) == STARFOLD_OK;
        ok &= run(s, "MirroredStrategy([0, 1]), replicas in threads", 2.0f);
        starfold_strategy_destroy(s);
    } else ok = 0;
    if (starfold_central_storage_strategy_create(ctx, NULL, 2, gpus, STARFOLD_DEVICE_HOST, &s) == STARFOLD_OK) {
        ok &= run(s, "CentralStorageStrategy(compute=[0, 1], parameter=host)", 2.0f);
        starfold_strategy_destroy(s);
    } else ok = 0;
    if (starfold_one_device_strategy_create(ctx, NULL, 0, &s) == STARFOLD_OK) {
        ok &= run(s, "OneDeviceStrategy(0)", 1.0f);
        starfold_strategy_destroy(s);
    } else ok = 0;

    starfold_context_destroy(ctx);
    if (!ok) fprintf(stderr, "batch_reduce_to: FAILED (%s)\n", starfold_last_error());
    return ok ? 0 : 1;
}
