/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Strategies: TensorFlow's MirroredStrategy, OneDeviceStrategy and CentralStorageStrategy, and their
 * cross-replica methods (StrategyExtended.reduce_to, batch_reduce_to, update, broadcast_to and
 * Strategy.reduce), doc/tensorflow-semantics.md section 6. strategy.run and the replica context are
 * in replica_run.c and replica_context.c.
 *
 *                     replicas on           variables on        cross-device ops
 *   Mirrored          devices[0..n-1]       devices (mirrored)  the caller's, or "auto" (the cost model's
 *                                                               fastest algorithm for each collective)
 *   OneDevice         [device]              device              reduce-to-one(reduce_to_device = device)
 *   CentralStorage    compute devices       parameter device    reduce-to-one(reduce_to_device = parameter
 *                                           (or the host)       device; the first destination for the host)
 *
 * Communication options: the strategy's defaults merged with each call's (call wins where not default).
 * With default ops, implementation RING selects "ring" when the registry has it (else hierarchical-copy)
 * and NCCL selects hierarchical-copy (TensorFlow users' substitute where NCCL is missing).
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

#include "base/common.h"
#include "distribute/distribute.h"

STARFOLD_API const char *starfold_strategy_kind_name(starfold_strategy_kind_t kind)
{
    switch (kind) {
    case STARFOLD_STRATEGY_MIRRORED: return "MirroredStrategy";
    case STARFOLD_STRATEGY_MULTI_WORKER_MIRRORED: return "MultiWorkerMirroredStrategy";
    case STARFOLD_STRATEGY_ONE_DEVICE: return "OneDeviceStrategy";
    case STARFOLD_STRATEGY_CENTRAL_STORAGE: return "CentralStorageStrategy";
    }
    return "unknown";
}

/* ------------------------------------------------------------------------------------------------
 * Construction
 */

static void strategy_free(starfold_strategy_t s)
{
    if (!s) return;
    if (s->pool) s->pool_destroy(s->pool); /* joins the replica threads, idle between runs */
    starfold_cross_device_ops_destroy(s->ops);
    starfold_cross_device_ops_destroy(s->ring_ops);
    starfold_cross_device_ops_destroy(s->nccl_ops);
    starfold_topology_destroy(s->topology);
    pthread_mutex_destroy(&s->run_lock);
    free(s->devices);
    free(s->var_devices);
    free(s);
}

/*
 * A strategy of @kind over replica devices @devices (NULL with n = 0: every device of the context),
 * variables on @var_devices (NULL: the replica devices). Ops are set by the caller.
 */
static starfold_status_t strategy_new(const char *fn, starfold_context_t ctx, starfold_topology_t topology,
                                      starfold_strategy_kind_t kind, int n, const int *devices, int nvar,
                                      const int *var_devices, starfold_strategy_t *out)
{
    if (!ctx || !out) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !ctx ? "context" : "strategy");
    const int nctx = starfold_context_num_devices(ctx);
    if (n < 0 || (n > 0 && !devices) || (n == 0 && devices))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d devices and a %s list", fn, n, devices ? "non-NULL" : "NULL");
    if (n == 0) n = nctx;
    if (n > STARFOLD_MAX_DEVICES)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d replicas, at most %d", fn, n, STARFOLD_MAX_DEVICES);

    starfold_status_t st = STARFOLD_OK;
    struct starfold_strategy *s = calloc(1, sizeof *s);
    if (!s) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (pthread_mutex_init(&s->run_lock, NULL) != 0) {
        free(s);
        return starfold__error(STARFOLD_ERR_RUNTIME, "%s: cannot create a mutex", fn);
    }
    s->kind = kind;
    s->ctx = ctx;
    s->n = n;
    s->replica_mode = STARFOLD_REPLICAS_IN_TURN; /* TensorFlow's order, and a small step's speed (replica.h) */
    s->nvar = var_devices ? nvar : n;
    s->devices = malloc(sizeof(int) * (size_t)n);
    s->var_devices = malloc(sizeof(int) * (size_t)s->nvar);
    starfold_communication_options_init(&s->options);
    if (!s->devices || !s->var_devices) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto fail;
    }
    for (int i = 0; i < n; i++) s->devices[i] = devices ? devices[i] : i;
    for (int i = 0; i < s->nvar; i++) s->var_devices[i] = var_devices ? var_devices[i] : s->devices[i];
    if (topology) s->topology = starfold_topology_retain(topology);
    else SF_CHECK_GOTO(starfold_context_topology(ctx, &s->topology), st, fail);

    const int ntopo = starfold_topology_num_devices(s->topology);
    for (int i = 0; i < n; i++) {
        const int d = s->devices[i];
        if (d < 0 || d >= nctx) {
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: device %d is not a device of the context (0..%d)", fn, d,
                          nctx - 1);
            goto fail;
        }
        if (d >= ntopo) {
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: device %d is not in topology '%s' (devices 0..%d)", fn, d,
                          starfold_topology_name(s->topology), ntopo - 1);
            goto fail;
        }
        for (int j = 0; j < i; j++)
            if (s->devices[j] == d) {
                st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                              "%s: No duplicates allowed in `devices` argument: device %d at positions %d and %d", fn,
                              d, j, i);
                goto fail;
            }
    }
    *out = s;
    return STARFOLD_OK;
fail:
    strategy_free(s);
    return st;
}

STARFOLD_API starfold_status_t starfold_mirrored_strategy_create(starfold_context_t context,
                                                                 starfold_topology_t topology, int num_devices,
                                                                 const int *devices,
                                                                 starfold_cross_device_ops_t cross_device_ops,
                                                                 starfold_strategy_t *strategy)
{
    static const char fn[] = "starfold_mirrored_strategy_create";
    if (!strategy) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL strategy", fn);
    starfold_strategy_t s = NULL;
    starfold_status_t st = strategy_new(fn, context, topology, STARFOLD_STRATEGY_MIRRORED, num_devices, devices, 0,
                                        NULL, &s);
    if (st != STARFOLD_OK) return st;
    if (cross_device_ops) {
        s->ops = starfold_cross_device_ops_retain(cross_device_ops);
    } else {
        /*
         * The cost model's choice for each collective ("auto": every algorithm compiled, the fastest
         * kept; the ops keep the graphs, so a training loop compiles once). TensorFlow 1.x's rule
         * (hierarchical copy with one pack per device on a DGX-1, reduce-to-one elsewhere) remains a
         * caller's choice: pass those ops.
         */
        st = starfold_cross_device_ops_create("auto", NULL, NULL, &s->ops);
        /* CommunicationImplementation: RING is the ring algorithm, NCCL hierarchical copy,
         * TensorFlow's substitute where NCCL is missing. */
        if (st == STARFOLD_OK) st = starfold_hierarchical_copy_all_reduce_create(1, &s->nccl_ops);
        if (st == STARFOLD_OK) st = starfold_cross_device_ops_create("ring", NULL, NULL, &s->ring_ops);
        if (st != STARFOLD_OK) {
            strategy_free(s);
            return st;
        }
    }
    *strategy = s;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_one_device_strategy_create(starfold_context_t context,
                                                                   starfold_topology_t topology, int device,
                                                                   starfold_strategy_t *strategy)
{
    static const char fn[] = "starfold_one_device_strategy_create";
    if (!strategy) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL strategy", fn);
    starfold_strategy_t s = NULL;
    starfold_status_t st = strategy_new(fn, context, topology, STARFOLD_STRATEGY_ONE_DEVICE, 1, &device, 0, NULL, &s);
    if (st != STARFOLD_OK) return st;
    if ((st = starfold_reduction_to_one_device_create(device, &s->ops)) != STARFOLD_OK) {
        strategy_free(s);
        return st;
    }
    *strategy = s;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_central_storage_strategy_create(starfold_context_t context,
                                                                        starfold_topology_t topology,
                                                                        int num_compute_devices,
                                                                        const int *compute_devices,
                                                                        int parameter_device,
                                                                        starfold_strategy_t *strategy)
{
    static const char fn[] = "starfold_central_storage_strategy_create";
    if (!context || !strategy)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !context ? "context" : "strategy");
    if (num_compute_devices < 0 || (num_compute_devices > 0) != (compute_devices != NULL))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d devices and a %s list", fn, num_compute_devices,
                               compute_devices ? "non-NULL" : "NULL");
    const int n = num_compute_devices ? num_compute_devices : starfold_context_num_devices(context);
    /* TensorFlow: the only compute device when there is one, else "/device:CPU:0". */
    if (parameter_device == STARFOLD_PARAMETER_DEVICE_DEFAULT)
        parameter_device = n == 1 ? (compute_devices ? compute_devices[0] : 0) : STARFOLD_DEVICE_HOST;
    if (parameter_device != STARFOLD_DEVICE_HOST &&
        (parameter_device < 0 || parameter_device >= starfold_context_num_devices(context)))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: parameter device %d is neither a device of the context "
                        "(0..%d) nor the host", fn, parameter_device, starfold_context_num_devices(context) - 1);
    starfold_strategy_t s = NULL;
    starfold_status_t st = strategy_new(fn, context, topology, STARFOLD_STRATEGY_CENTRAL_STORAGE, num_compute_devices,
                                        compute_devices, 1, &parameter_device, &s);
    if (st != STARFOLD_OK) return st;
    if (parameter_device >= starfold_topology_num_devices(s->topology)) {
        st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: parameter device %d is not in the topology", fn,
                      parameter_device);
    } else {
        st = starfold_reduction_to_one_device_create(parameter_device >= 0 ? parameter_device : -1, &s->ops);
    }
    if (st != STARFOLD_OK) {
        strategy_free(s);
        return st;
    }
    *strategy = s;
    return STARFOLD_OK;
}

STARFOLD_API void starfold_strategy_destroy(starfold_strategy_t strategy)
{
    strategy_free(strategy);
}

STARFOLD_API starfold_strategy_kind_t starfold_strategy_kind(starfold_strategy_t strategy)
{
    return strategy ? strategy->kind : STARFOLD_STRATEGY_MIRRORED;
}

STARFOLD_API int starfold_strategy_num_replicas_in_sync(starfold_strategy_t strategy)
{
    if (!strategy) return 0;
    return strategy->total_replicas ? strategy->total_replicas : strategy->n; /* every process's, under MWMS */
}

STARFOLD_API int starfold_strategy_worker_device(starfold_strategy_t strategy, int replica)
{
    return strategy && replica >= 0 && replica < strategy->n ? strategy->devices[replica] : -2;
}

STARFOLD_API starfold_context_t starfold_strategy_context(starfold_strategy_t strategy)
{
    return strategy ? strategy->ctx : NULL;
}

STARFOLD_API starfold_topology_t starfold_strategy_topology(starfold_strategy_t strategy)
{
    return strategy ? strategy->topology : NULL;
}

STARFOLD_API starfold_cross_device_ops_t starfold_strategy_cross_device_ops(starfold_strategy_t strategy)
{
    return strategy ? strategy->ops : NULL;
}

STARFOLD_API starfold_status_t starfold_strategy_set_communication_options(
    starfold_strategy_t strategy, const starfold_communication_options_t *options)
{
    if (!strategy)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_strategy_set_communication_options: NULL strategy");
    starfold_status_t st = starfold_communication_options_validate(options);
    if (st != STARFOLD_OK) return st;
    if (options) strategy->options = *options;
    else starfold_communication_options_init(&strategy->options);
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Cross-replica methods
 */

starfold_status_t starfold__strategy_options(starfold_strategy_t s, const starfold_communication_options_t *call,
                                      starfold_communication_options_t *merged)
{
    return starfold_communication_options_merge(&s->options, call, merged);
}

/* The ops for a call: the implementation chooses only when the strategy chose its ops itself. */
static starfold_cross_device_ops_t ops_for(starfold_strategy_t s, const starfold_communication_options_t *o)
{
    if (s->ring_ops && o->implementation == STARFOLD_COMMUNICATION_RING) return s->ring_ops;
    if (s->nccl_ops && o->implementation == STARFOLD_COMMUNICATION_NCCL) return s->nccl_ops;
    return s->ops;
}

starfold_status_t starfold__strategy_batch_reduce(starfold_strategy_t s, starfold_op_t op, size_t n, const starfold__pair_t *pairs,
                                           const starfold_communication_options_t *options, const char *fn,
                                           starfold_value_t *results)
{
    starfold_communication_options_t o;
    starfold_status_t st = starfold__strategy_options(s, options, &o);
    if (st != STARFOLD_OK) return st;
    for (size_t i = 0; i < n; i++)
        if (pairs[i].value->ctx != s->ctx)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: pair %zu: a value of another context than the "
                            "strategy's", fn, i);
    if (s->cross_process) return s->cross_process(s, op, n, pairs, &o, fn, results);
    return starfold__ops_batch_reduce(ops_for(s, &o), s->topology, op, n, pairs, &o, fn, results);
}

/*
 * MultiWorkerMirroredStrategy's value for a variable's update, over this process's copies: @value's
 * components all-reduced with @op over every replica of every process (@reduce), or global replica
 * 0's value (@first: process 0 gives its replica 0's component to an all-gather, the others nothing,
 * so that the gather is a broadcast from it). A mirrored value over the variable's devices.
 */
static starfold_status_t update_value_across(starfold_strategy_t s, starfold_value_t var, starfold_value_t value,
                                             int reduce, starfold_op_t op, const starfold_communication_options_t *o,
                                             const char *fn, starfold_value_t *across)
{
    starfold__pair_t p = { .value = value, .dest = { .n = var->n, .ctx = var->ctx } };
    memcpy(p.dest.devices, var->devices, sizeof(int) * (size_t)var->n);
    if (reduce) return s->cross_process(s, op, 1, &p, o, fn, across);
    starfold_view_t views[STARFOLD_MAX_DEVICES];
    size_t counts[STARFOLD_MAX_DEVICES] = { 0 };
    for (int d = 0; d < s->n; d++) views[d] = (starfold_view_t){ NULL, 0 };
    if (s->replica_offset == 0) {
        views[0] = starfold__value_view(value, 0);
        counts[0] = value->count;
    }
    return s->cross_gather(s, STARFOLD_OK, value->dtype, value->count, views, counts, 1, &p.dest, o, fn, across);
}

starfold_status_t starfold__strategy_update_variable(starfold_strategy_t s, starfold_value_t var, starfold__update_t update,
                                                     starfold_value_t value, int reduce, int first, starfold_op_t op,
                                                     int comp, const starfold_communication_options_t *options,
                                                     const char *fn)
{
    starfold_communication_options_t o;
    starfold_status_t st = starfold__strategy_options(s, options, &o);
    if (st != STARFOLD_OK) return st;
    if (!s->cross_process || (!reduce && !first))
        return starfold__ops_update(ops_for(s, &o), s->topology, var, -1, update, value, reduce, op, comp, 1, &o, fn);
    starfold_value_t across = NULL;
    st = update_value_across(s, var, value, reduce, op, &o, fn, &across);
    if (st == STARFOLD_OK) st = starfold__ops_update(ops_for(s, &o), s->topology, var, -1, update, across, 0, op, -1, 1, &o, fn);
    /* The update reads @across: done before it goes (it holds no reference to it). */
    if (st == STARFOLD_OK) st = starfold_value_wait(var);
    starfold_value_destroy(across);
    return st;
}

starfold_status_t starfold__strategy_all_reduce_split(starfold_strategy_t s, starfold_op_t op, size_t n,
                                                      const starfold__pair_t *pairs,
                                                      const starfold_communication_options_t *options, const char *fn,
                                                      starfold_value_t *results, unsigned long long *plan_id)
{
    if (s->cross_process) return STARFOLD_ERR_NOT_SUPPORTED; /* the caller splits mirrored results itself */
    starfold_communication_options_t o;
    starfold_status_t st = starfold__strategy_options(s, options, &o);
    if (st != STARFOLD_OK) return st;
    return starfold__ops_batch_reduce_split(ops_for(s, &o), s->topology, op, n, pairs, &o, fn, results, plan_id);
}

static starfold_status_t check_op(const char *fn, starfold_op_t op)
{
    if ((int)op < 0 || (int)op >= STARFOLD_OP_COUNT)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown reduce op %d", fn, (int)op);
    return STARFOLD_OK;
}

static int is_integer(starfold_dtype_t dt)
{
    return starfold__dtype_integer(dt);
}

/* reduce_to without the context check: Strategy.reduce uses it too. */
static starfold_status_t reduce_to(starfold_strategy_t s, const char *fn, starfold_op_t op, starfold_value_t value,
                                   const starfold__dest_t *dest, const starfold_communication_options_t *options,
                                   starfold_value_t *result)
{
    starfold_status_t st;
    starfold_communication_options_t o;
    if ((st = check_op(fn, op)) != STARFOLD_OK) return st;
    if ((st = starfold__strategy_options(s, options, &o)) != STARFOLD_OK) return st;
    if (value->ctx != s->ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context than the strategy", fn);
    /*
     * MirroredStrategy: a mirrored value's components are equal, so its MEAN (and MIN, MAX) is the value
     * itself; TensorFlow returns it unchanged, starfold copies it to the destinations (exactly: no
     * sum-then-divide rounding). A promoted integer MEAN still converts, through the reduction.
     */
    /*
     * TensorFlow's reduce_non_distributed_value: a value of one component, reduced by a strategy of
     * several replicas, stands for the same tensor on every replica. Its MEAN (and MIN, MAX) is itself;
     * its SUM would be n times it, which TensorFlow refuses rather than guess; starfold refuses PROD
     * (its n-th power) for the same reason. With one replica in sync every op gives the value.
     */
    /* (Across processes the same refusal is the group's, so that every process gets it: there a
     * one-component value is this process's replicas' value, and all_reduce_across() in mwms.c
     * refuses its SUM and PROD over several replicas of the process.) */
    const int in_sync = s->n;
    if (!s->cross_process && value->n == 1 && in_sync > 1 && (op == STARFOLD_OP_SUM || op == STARFOLD_OP_PROD))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                        "%s: A non-DistributedValues value (one component, on %s) cannot be reduced with the given "
                        "reduce op ReduceOp.%s: %d replicas are in sync (TensorFlow refuses too); reduce a "
                        "per-replica value of the %d replicas, or use MEAN",
                        fn, value->devices[0] == STARFOLD_DEVICE_HOST ? "the host" : "one device",
                        op == STARFOLD_OP_SUM ? "SUM" : "PROD", in_sync, in_sync);
    /* TensorFlow asserts on a mirrored value summed across replicas: it is one value, not n. */
    if (s->kind == STARFOLD_STRATEGY_MIRRORED && value->kind == STARFOLD_VALUE_MIRRORED && op == STARFOLD_OP_SUM &&
        value->n > 1)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                        "%s: a mirrored value is the same on every replica; summing it across replicas would count it "
                        "%d times (TensorFlow refuses too): reduce a per-replica value, or use MEAN",
                        fn, value->n);
    if (s->kind == STARFOLD_STRATEGY_MIRRORED && value->kind == STARFOLD_VALUE_MIRRORED &&
        (op == STARFOLD_OP_MEAN || op == STARFOLD_OP_MIN || op == STARFOLD_OP_MAX) &&
        !(op == STARFOLD_OP_MEAN && o.promote_integer_mean && is_integer(value->dtype)))
        return starfold__ops_broadcast(s->ops, s->topology, value, dest, fn, result);
    starfold__pair_t p = { .value = value, .dest = *dest };
    if (s->cross_process) return s->cross_process(s, op, 1, &p, &o, fn, result);
    return starfold__ops_batch_reduce(ops_for(s, &o), s->topology, op, 1, &p, &o, fn, result);
}

STARFOLD_API starfold_status_t starfold_strategy_reduce_to(starfold_strategy_t strategy, starfold_op_t op,
                                                           starfold_value_t value,
                                                           const starfold_destination_t *destinations,
                                                           const starfold_communication_options_t *options,
                                                           starfold_value_t *result)
{
    static const char fn[] = "starfold_strategy_reduce_to";
    starfold_status_t st;
    if (!strategy || !value || !result)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                        !strategy ? "strategy" : !value ? "value" : "result");
    if ((st = starfold__require_cross_replica(fn)) != STARFOLD_OK) return st;
    starfold__dest_t d;
    if ((st = starfold__dest_resolve(destinations, fn, &d)) != STARFOLD_OK) return st;
    return reduce_to(strategy, fn, op, value, &d, options, result);
}

STARFOLD_API starfold_status_t starfold_strategy_batch_reduce_to(starfold_strategy_t strategy, starfold_op_t op,
                                                                 size_t num_pairs,
                                                                 const starfold_value_destination_pair_t *pairs,
                                                                 const starfold_communication_options_t *options,
                                                                 starfold_value_t *results)
{
    static const char fn[] = "starfold_strategy_batch_reduce_to";
    starfold_status_t st;
    if (!strategy || !results)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !strategy ? "strategy" : "results");
    if ((st = starfold__require_cross_replica(fn)) != STARFOLD_OK) return st;
    if ((st = check_op(fn, op)) != STARFOLD_OK) return st;
    if (num_pairs == 0 || !pairs)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: batch_reduce needs at least one (value, destinations) pair",
                        fn);
    starfold__pair_t *p = malloc(sizeof *p * num_pairs);
    if (!p) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t i = 0; i < num_pairs && st == STARFOLD_OK; i++) {
        p[i].value = pairs[i].value;
        if (!pairs[i].value) st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: pair %zu: NULL value", fn, i);
        else st = starfold__dest_resolve(&pairs[i].destinations, fn, &p[i].dest);
    }
    if (st == STARFOLD_OK) st = starfold__strategy_batch_reduce(strategy, op, num_pairs, p, options, fn, results);
    free(p);
    return st;
}

STARFOLD_API starfold_status_t starfold_strategy_broadcast_to(starfold_strategy_t strategy, starfold_value_t value,
                                                              const starfold_destination_t *destinations,
                                                              starfold_value_t *result)
{
    static const char fn[] = "starfold_strategy_broadcast_to";
    starfold_status_t st;
    if (!strategy || !value || !result || !destinations)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                        !strategy ? "strategy" : !value ? "value" : !result ? "result" : "destinations");
    if ((st = starfold__require_cross_replica(fn)) != STARFOLD_OK) return st;
    if (value->ctx != strategy->ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context than the strategy", fn);
    starfold__dest_t d;
    if (destinations->kind == STARFOLD_DESTINATION_NONE) {
        /* TensorFlow's _broadcast_to: empty destinations mean the strategy's devices. */
        memset(&d, 0, sizeof d);
        d.n = strategy->n;
        memcpy(d.devices, strategy->devices, sizeof(int) * (size_t)strategy->n);
    } else if ((st = starfold__dest_resolve(destinations, fn, &d)) != STARFOLD_OK) {
        return st;
    }
    return starfold__ops_broadcast(strategy->ops, strategy->topology, value, &d, fn, result);
}

/* ------------------------------------------------------------------------------------------------
 * update
 */

/* TensorFlow's select_replica for component @i of a variable on @device: the argument's component on
 * the same device, else its only one, else the one of the same index. -1 when none fits. */
static int select_component(starfold_value_t arg, int i, int device, int nvar)
{
    int c = starfold__value_component_on(arg, device);
    if (c >= 0) return c;
    if (arg->n == 1) return 0;
    if (arg->n == nvar) return i;
    return -1;
}

STARFOLD_API starfold_status_t starfold_strategy_update(starfold_strategy_t strategy, starfold_value_t variable,
                                                        starfold_update_fn_t fn, size_t num_args,
                                                        const starfold_value_t *args, void *user_data)
{
    static const char name[] = "starfold_strategy_update";
    starfold_status_t st;
    if (!strategy || !variable || !fn || (num_args && !args))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", name,
                        !strategy ? "strategy" : !variable ? "variable" : !fn ? "fn" : "args");
    if ((st = starfold__require_cross_replica(name)) != STARFOLD_OK) return st;
    if (variable->ctx != strategy->ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the variable belongs to another context", name);
    const int n = variable->n;
    starpu_data_handle_t *sel = num_args ? malloc(sizeof *sel * num_args * (size_t)n) : NULL;
    if (num_args && !sel) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);

    /* Every argument is matched to every component before anything runs. */
    for (size_t a = 0; a < num_args; a++) {
        const starfold_value_t v = args[a];
        if (!v) {
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: argument %zu is NULL", name, a);
            goto out;
        }
        if (v->ctx != strategy->ctx) {
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: argument %zu belongs to another context", name, a);
            goto out;
        }
        if (strategy->kind == STARFOLD_STRATEGY_CENTRAL_STORAGE && v->n > 1) {
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                          "%s: argument %zu is a %s value of %d components; CentralStorageStrategy updates its "
                          "variables only from values with one component (reduce it to the variable first)",
                          name, a, starfold_value_kind_name(v->kind), v->n);
            goto out;
        }
        for (int i = 0; i < n; i++) {
            const int c = select_component(v, i, variable->devices[i], n);
            if (c < 0) {
                st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                              "%s: argument %zu (%d components) has no component for component %d of the variable "
                              "(device %d)", name, a, v->n, i, variable->devices[i]);
                goto out;
            }
            if (!(sel[(size_t)i * num_args + a] = starfold__value_handle(v, c))) {
                st = starfold_last_error()[0] ? STARFOLD_ERR_OUT_OF_MEMORY : STARFOLD_ERR_INTERNAL;
                goto out;
            }
        }
    }
    for (int i = 0; i < n && st == STARFOLD_OK; i++) {
        const starfold_update_call_t call = {
            .strategy = strategy,
            .variable = variable,
            .component = i,
            .device = variable->devices[i],
            .target = starfold__value_handle(variable, i),
            .num_args = num_args,
            .args = sel ? &sel[(size_t)i * num_args] : NULL,
            .arg_values = args,
        };
        st = fn(&call, user_data);
    }
out:
    free(sel);
    return st;
}

STARFOLD_API starfold_status_t starfold_update_assign(const starfold_update_call_t *call, size_t arg)
{
    static const char fn[] = "starfold_update_assign";
    if (!call || !call->strategy || !call->variable)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL or incomplete call", fn);
    if (arg >= call->num_args)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: argument %zu, the update has %zu", fn, arg, call->num_args);
    const starfold_value_t v = call->arg_values[arg], var = call->variable;
    if (v->dtype != var->dtype || v->count != var->count)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: cannot assign %zu x %s to a variable of %zu x %s", fn,
                        v->count, starfold_dtype_name(v->dtype), var->count, starfold_dtype_name(var->dtype));
    if (call->args[arg] == call->target || v->count == 0) return STARFOLD_OK;
    int c = -1;
    for (int k = 0; k < v->n && c < 0; k++)
        if (starfold__value_handle(v, k) == call->args[arg]) c = k;
    if (c < 0) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the argument handle is not one of its value's", fn);
    return starfold__copy_component(call->strategy->topology, v, c, call->target, call->device, var);
}

/* ------------------------------------------------------------------------------------------------
 * Strategy.reduce(op, value, axis)
 */

/*
 * Reduces the @count elements of @data (dtype @dt) with @op (SUM, MIN, MAX, PROD) into *@f (floating
 * types, in float64, rounded once when stored) or *@i (integers: the result's bits, wrapped to the
 * type's width and sign- or zero-extended as starfold__element_bits reads them).
 */
static void fold(starfold_op_t op, starfold_dtype_t dt, const void *data, size_t count, double *f, uint64_t *i)
{
    if (!is_integer(dt)) {
        double acc = op == STARFOLD_OP_SUM ? 0.0 : op == STARFOLD_OP_PROD ? 1.0 : op == STARFOLD_OP_MIN ? INFINITY : -INFINITY;
        for (size_t k = 0; k < count; k++) {
            const double x = starfold_element_to_double(dt, data, k);
            if (op == STARFOLD_OP_SUM) acc += x;
            else if (op == STARFOLD_OP_PROD) acc *= x;
            else if (op == STARFOLD_OP_MIN) acc = x < acc ? x : acc;
            else acc = x > acc ? x : acc;
        }
        *f = acc;
        return;
    }
    /* Integers wrap around as the device kernels do: unsigned arithmetic, truncated to the width at the
     * end (stored and read back). MIN and MAX compare as the type does, signed or not; their identity
     * is the type's largest (smallest) value, which an empty count returns. */
    const int sgn = starfold__dtype_signed(dt), bits = (int)starfold_dtype_size(dt) * 8;
    const uint64_t top = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1; /* unsigned maximum */
    const int64_t smax = (int64_t)(top >> 1), smin = -smax - 1;
    uint64_t acc = op == STARFOLD_OP_PROD ? 1u : 0u;
    uint64_t best = op == STARFOLD_OP_MIN ? (sgn ? (uint64_t)smax : top) : (sgn ? (uint64_t)smin : 0u);
    for (size_t k = 0; k < count; k++) {
        const uint64_t x = starfold__element_bits(dt, data, k);
        const int less = sgn ? (int64_t)x < (int64_t)best : x < best;
        if (op == STARFOLD_OP_SUM) acc += x;
        else if (op == STARFOLD_OP_PROD) acc *= x;
        else if (op == STARFOLD_OP_MIN) best = less ? x : best;
        else best = !less && x != best ? x : best;
    }
    if (op == STARFOLD_OP_SUM || op == STARFOLD_OP_PROD) {
        uint64_t wrapped = 0;
        starfold__element_set_bits(dt, &wrapped, 0, acc);
        *i = starfold__element_bits(dt, &wrapped, 0);
    } else {
        *i = best;
    }
}

STARFOLD_API starfold_status_t starfold_strategy_reduce(starfold_strategy_t strategy, starfold_op_t op,
                                                        starfold_value_t value, int axis, starfold_value_t *result)
{
    static const char fn[] = "starfold_strategy_reduce";
    starfold_status_t st;
    if (!strategy || !value || !result)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                        !strategy ? "strategy" : !value ? "value" : "result");
    if ((st = starfold__require_cross_replica(fn)) != STARFOLD_OK) return st;
    if ((st = check_op(fn, op)) != STARFOLD_OK) return st;
    starfold__dest_t host;
    const starfold_destination_t h = starfold_destination_host();
    (void)starfold__dest_resolve(&h, fn, &host);
    if (axis == STARFOLD_AXIS_NONE) return reduce_to(strategy, fn, op, value, &host, NULL, result);
    if (axis != 0 && axis != -1)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: axis %d is out of bounds for a 1-D tensor (rank 1)", fn, axis);

    /* Across replicas first (MEAN as a SUM: the division is by the global element count), then the
     * elements on the host: the two reductions commute. */
    const int promote = strategy->options.promote_integer_mean;
    const starfold_dtype_t dt = value->dtype;
    const starfold_op_t across = starfold__op_accumulation(op);
    const size_t total = (size_t)value->n * value->count; /* TensorFlow's summed dimension sizes */
    if (op == STARFOLD_OP_MEAN && total == 0 && is_integer(dt) && !promote)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: integer MEAN over zero elements", fn);
    starfold_value_t partial = NULL, r = NULL;
    void *buf = NULL;
    const size_t bytes = value->count * starfold_dtype_size(dt);
    if ((st = reduce_to(strategy, fn, across, value, &host, NULL, &partial)) != STARFOLD_OK) return st;
    if (bytes && !(buf = malloc(bytes))) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto out;
    }
    SF_CHECK_GOTO(starfold_value_read(partial, 0, buf, bytes), st, out);
    double f = 0;
    uint64_t i = 0;
    fold(across, dt, buf, value->count, &f, &i);
    const starfold_dtype_t out_dt = op == STARFOLD_OP_MEAN && promote && is_integer(dt) ? starfold__dtype_truediv(dt) : dt;
    const int sgn = starfold__dtype_signed(dt);
    if (op == STARFOLD_OP_MEAN) {
        if (out_dt != dt) /* TensorFlow's truediv */
            f = (sgn ? (double)(int64_t)i : (double)i) / (double)total;
        else if (is_integer(dt)) /* truncating */
            i = sgn ? (uint64_t)((int64_t)i / (int64_t)total) : i / (uint64_t)total;
        else f = f / (double)total;
    }
    uint64_t x = 0; /* one element of out_dt, 8 bytes at most */
    if (is_integer(out_dt)) starfold__element_set_bits(out_dt, &x, 0, i);
    else (void)starfold_element_from_double(out_dt, f, &x, 0);
    const int hd = STARFOLD_DEVICE_HOST;
    SF_CHECK_GOTO(starfold_value_create(strategy->ctx, STARFOLD_VALUE_MIRRORED, 1, &hd, out_dt, 1, &x, &r), st, out);
    *result = r;
out:
    free(buf);
    starfold_value_destroy(partial);
    return st;
}
