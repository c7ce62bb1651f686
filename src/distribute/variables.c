/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Variables with TensorFlow's synchronization and aggregation (tf.VariableSynchronization,
 * tf.VariableAggregation): MirroredVariable and SyncOnReadVariable, their assign, assign_add,
 * assign_sub and read_value in the replica and the cross-replica context.
 *
 *                         replica context                          cross-replica context
 *   ON_WRITE   assign*    a collective (rendezvous.c): the replicas'   every copy = / += / -= the value
 *   (mirrored)            values aggregated (SUM, MEAN, replica     (one component, or mirrored)
 *                         0's), every copy updated, one graph;
 *                         NONE refused on every replica
 *              read       this replica's copy                       copy 0, on the host
 *
 *   ON_READ    assign*    this replica's copy only, no              assign: every copy = value (/ n for
 *   (sync-on-read)        communication                             SUM); assign_add / assign_sub: every
 *                                                                   copy, refused for SUM
 *              read       this replica's copy                       SUM / MEAN of the copies, copy 0 for
 *                                                                   ONLY_FIRST_REPLICA, on the host; NONE
 *                                                                   refused
 *
 * OneDeviceStrategy's variables are TensorFlow's ordinary variables: one copy, read and updated as is
 * in either context. A variable is made here from its strategy's layout; every update is one graph
 * of starfold__ops_update() (ops_update.c).
 */
#include "config.h"

#include <stdio.h>

#include "base/common.h"
#include "distribute/distribute.h"

STARFOLD_API const char *starfold_variable_synchronization_name(starfold_variable_synchronization_t synchronization)
{
    switch (synchronization) {
    case STARFOLD_SYNCHRONIZATION_AUTO: return "AUTO";
    case STARFOLD_SYNCHRONIZATION_NONE: return "NONE";
    case STARFOLD_SYNCHRONIZATION_ON_WRITE: return "ON_WRITE";
    case STARFOLD_SYNCHRONIZATION_ON_READ: return "ON_READ";
    }
    return "unknown";
}

STARFOLD_API const char *starfold_variable_aggregation_name(starfold_variable_aggregation_t aggregation)
{
    switch (aggregation) {
    case STARFOLD_AGGREGATION_NONE: return "NONE";
    case STARFOLD_AGGREGATION_SUM: return "SUM";
    case STARFOLD_AGGREGATION_MEAN: return "MEAN";
    case STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA: return "ONLY_FIRST_REPLICA";
    }
    return "unknown";
}

STARFOLD_API void starfold_variable_options_init(starfold_variable_options_t *options)
{
    if (!options) return;
    memset(options, 0, sizeof *options);
    options->synchronization = STARFOLD_SYNCHRONIZATION_AUTO;
    options->aggregation = STARFOLD_AGGREGATION_NONE;
}

STARFOLD_API int starfold_value_is_variable(starfold_value_t value)
{
    return value && value->var;
}

STARFOLD_API starfold_variable_synchronization_t starfold_variable_synchronization(starfold_value_t variable)
{
    return variable && variable->var ? variable->var->sync : STARFOLD_SYNCHRONIZATION_NONE;
}

STARFOLD_API starfold_variable_aggregation_t starfold_variable_aggregation(starfold_value_t variable)
{
    return variable && variable->var ? variable->var->agg : STARFOLD_AGGREGATION_NONE;
}

static starfold_status_t check_variable(const char *fn, starfold_value_t var)
{
    if (!var) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL variable", fn);
    if (!var->var)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: the value is not a variable (make one with starfold_strategy_create_variable() or "
                               "starfold_strategy_create_variable_with_options())",
                               fn);
    return STARFOLD_OK;
}

/* The value's checks shared by every path that does not go through the collective. */
static starfold_status_t check_value(const char *fn, starfold_value_t var, starfold_value_t value)
{
    if (!value) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL value", fn);
    if (value->ctx != var->ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context than the variable",
                               fn);
    if (value->dtype != var->dtype || value->count != var->count)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: cannot assign %zu x %s to a variable of %zu x %s", fn,
                               value->count, starfold_dtype_name(value->dtype), var->count, starfold_dtype_name(var->dtype));
    return STARFOLD_OK;
}

static const char *method_name(starfold__update_t update)
{
    return update == SF_UPDATE_ADD ? "assign_add" : update == SF_UPDATE_SUB ? "assign_sub" : "assign";
}

/* assign, assign_add, assign_sub: the dispatch of the table above. */
static starfold_status_t update_variable(const char *fn, starfold__update_t update, starfold_value_t var,
                                         starfold_value_t value)
{
    starfold_status_t st;
    if ((st = check_variable(fn, var)) != STARFOLD_OK) return st;
    const starfold__variable_t *info = var->var;
    const starfold_replica_context_t rc = starfold__current_replica();
    /* TensorFlow's MirroredVariable in a replica function: a collective (its checks join it, see replica_context.c). */
    if (rc && info->sync == STARFOLD_SYNCHRONIZATION_ON_WRITE && !info->plain)
        return starfold__replica_update_variable(rc, var, value, update, fn);
    if ((st = check_value(fn, var, value)) != STARFOLD_OK) return st;

    if (rc) {
        /* A sync-on-read (or OneDeviceStrategy) variable in a replica function: this replica's copy alone. */
        const int device = starfold_replica_context_device(rc), r = starfold_replica_context_replica_id_in_sync_group(rc);
        int c = starfold__value_component_on(var, device);
        if (c < 0 && var->n == 1) c = 0;
        if (c < 0)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: the variable has no copy on replica %d's device %d (its copies are on %d devices "
                                   "of another strategy)",
                                   fn, r, device, var->n);
        int vc = starfold__value_component_on(value, device);
        if (vc < 0 && value->n == 1) vc = 0;
        if (vc < 0)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: the value (%d components) has no component for replica %d (device %d)", fn,
                                   value->n, r, device);
        return starfold__ops_update(info->ops, info->topology, var, c, update, value, 0, STARFOLD_OP_SUM, vc, 1,
                                    &info->options, fn);
    }

    /* The cross-replica context: every copy gets the same value. */
    if (value->n > 1 && value->kind == STARFOLD_VALUE_PER_REPLICA)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: a per-replica value of %d components would leave the variable's copies different; "
                               "in the cross-replica context every copy is given the same value (one component, or "
                               "mirrored): reduce it first (starfold_strategy_reduce_to())",
                               fn, value->n);
    uint32_t divisor = 1;
    if (info->sync == STARFOLD_SYNCHRONIZATION_ON_READ && !info->plain && info->agg == STARFOLD_AGGREGATION_SUM) {
        if (update != SF_UPDATE_ASSIGN)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: SyncOnReadVariable does not support `%s` in cross-replica context when "
                                   "aggregation is set to `tf.VariableAggregation.SUM`.",
                                   fn, method_name(update));
        /* TensorFlow divides, so that reading the SUM back gives the value (integers truncate). */
        divisor = (uint32_t)info->num_replicas;
    }
    return starfold__ops_update(info->ops, info->topology, var, -1, update, value, 0, STARFOLD_OP_SUM, -1, divisor,
                                &info->options, fn);
}

STARFOLD_API starfold_status_t starfold_variable_assign(starfold_value_t variable, starfold_value_t value)
{
    return update_variable("starfold_variable_assign", SF_UPDATE_ASSIGN, variable, value);
}

STARFOLD_API starfold_status_t starfold_variable_assign_add(starfold_value_t variable, starfold_value_t value)
{
    return update_variable("starfold_variable_assign_add", SF_UPDATE_ADD, variable, value);
}

STARFOLD_API starfold_status_t starfold_variable_assign_sub(starfold_value_t variable, starfold_value_t value)
{
    return update_variable("starfold_variable_assign_sub", SF_UPDATE_SUB, variable, value);
}

/* A copy of component @c of @var on @dest (a device, or the host), through the variable's ops. */
static starfold_status_t copy_of(const char *fn, starfold_value_t var, int c, const starfold__dest_t *dest,
                                 starfold_value_t *result)
{
    starfold_value_t one = NULL;
    starfold_status_t st =
        starfold__value_borrow_components(var->ctx, STARFOLD_VALUE_PER_REPLICA, 1, &var->devices[c], &var, &c, &one);
    if (st == STARFOLD_OK) st = starfold__ops_broadcast(var->var->ops, var->var->topology, one, dest, fn, result);
    starfold_value_destroy(one);
    return st;
}

STARFOLD_API starfold_status_t starfold_variable_read_value(starfold_value_t variable, starfold_value_t *result)
{
    static const char fn[] = "starfold_variable_read_value";
    starfold_status_t st;
    if ((st = check_variable(fn, variable)) != STARFOLD_OK) return st;
    if (!result) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL result", fn);
    const starfold__variable_t *info = variable->var;
    const starfold_replica_context_t rc = starfold__current_replica();
    starfold__dest_t dest;
    memset(&dest, 0, sizeof dest);
    dest.n = 1;
    if (rc) {
        /* The replica's own copy (a mirrored variable's copies are equal), onto its device. */
        const int device = starfold_replica_context_device(rc);
        int c = starfold__value_component_on(variable, device);
        if (c < 0 && variable->n == 1) c = 0; /* a CentralStorageStrategy variable: its one copy */
        if (c < 0)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the variable has no copy on replica %d's device %d",
                                   fn, starfold_replica_context_replica_id_in_sync_group(rc), device);
        dest.devices[0] = device;
        return copy_of(fn, variable, c, &dest, result);
    }
    /* The cross-replica context: on the host, TensorFlow's current device there. */
    dest.devices[0] = STARFOLD_DEVICE_HOST;
    dest.host = 1;
    if (info->sync == STARFOLD_SYNCHRONIZATION_ON_WRITE || info->plain ||
        info->agg == STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA)
        return copy_of(fn, variable, 0, &dest, result);
    if (info->agg == STARFOLD_AGGREGATION_NONE)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: Could not convert from `tf.VariableAggregation` VariableAggregation.NONE to"
                               "`tf.distribute.ReduceOp` type (a sync-on-read variable read in the cross-replica "
                               "context needs an aggregation: SUM, MEAN or ONLY_FIRST_REPLICA)",
                               fn);
    /* TensorFlow's strategy.reduce(aggregation, var, axis=None): the copies reduced to the host; under
     * MultiWorkerMirroredStrategy every process's copies (a collective: every process reads). */
    if (info->cross_reduce)
        return info->cross_reduce(info, variable, info->agg == STARFOLD_AGGREGATION_SUM ? STARFOLD_OP_SUM : STARFOLD_OP_MEAN,
                                  &dest, fn, result);
    const starfold__pair_t p = { .value = variable, .dest = dest };
    return starfold__ops_batch_reduce(info->ops, info->topology,
                                      info->agg == STARFOLD_AGGREGATION_SUM ? STARFOLD_OP_SUM : STARFOLD_OP_MEAN, 1, &p,
                                      &info->options, fn, result);
}

/* ------------------------------------------------------------------------------------------------
 * Creation
 */

/* What a variable's value holds of its strategy (values.c calls it when the value is freed). */
static void variable_info_release(starfold__variable_t *info)
{
    starfold_cross_device_ops_destroy(info->ops);
    starfold_topology_destroy(info->topology);
    free(info);
}

/* A variable of the strategy (the rules above): @fn names the public call in messages. */
static starfold_status_t create_variable(const char *fn, starfold_strategy_t strategy, starfold_dtype_t dtype,
                                         size_t count, const void *init, const starfold_variable_options_t *options,
                                         starfold_value_t *variable)
{
    if (!strategy || !variable)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !strategy ? "strategy" : "variable");
    starfold_variable_options_t o;
    starfold_variable_options_init(&o);
    if (options) o = *options;
    starfold_status_t st;
    if ((int)o.aggregation < 0 || (int)o.aggregation > STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: Invalid variable aggregation mode: %d (NONE, SUM, MEAN or ONLY_FIRST_REPLICA)", fn,
                               (int)o.aggregation);
    if ((int)o.synchronization < 0 || (int)o.synchronization > STARFOLD_SYNCHRONIZATION_ON_READ)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: Invalid variable synchronization mode: %d (AUTO, ON_WRITE or ON_READ)", fn,
                               (int)o.synchronization);
    if (o.synchronization == STARFOLD_SYNCHRONIZATION_NONE)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: `NONE` variable synchronization mode is not supported with `tf.distribute` strategy. "
                               "Please change the `synchronization` for variable (starfold_variable_options_t): AUTO, "
                               "ON_WRITE or ON_READ",
                               fn);
    const int on_read = o.synchronization == STARFOLD_SYNCHRONIZATION_ON_READ;
    starfold__variable_t *info = calloc(1, sizeof *info);
    if (!info) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    /* Handles of their own: update functions are handed the variable's handles every step. A sync-on-read
     * variable has a copy per replica device, whatever the strategy. */
    starfold_value_t v = NULL;
    st = starfold__value_create_own(fn, strategy->ctx, on_read ? STARFOLD_VALUE_PER_REPLICA : STARFOLD_VALUE_MIRRORED,
                                    on_read ? strategy->n : strategy->nvar,
                                    on_read ? strategy->devices : strategy->var_devices, dtype, count, init, &v);
    if (st == STARFOLD_OK && strategy->cross_init && (st = strategy->cross_init(strategy, v, fn)) != STARFOLD_OK)
        starfold_value_destroy(v);
    if (st != STARFOLD_OK) {
        free(info);
        return st;
    }
    info->sync = on_read ? STARFOLD_SYNCHRONIZATION_ON_READ : STARFOLD_SYNCHRONIZATION_ON_WRITE;
    info->agg = o.aggregation;
    info->strategy_kind = strategy->kind;
    info->plain = strategy->kind == STARFOLD_STRATEGY_ONE_DEVICE;
    info->num_replicas = starfold_strategy_num_replicas_in_sync(strategy);
    info->cross_process = strategy->cross_process != NULL;
    info->group = strategy->group;
    info->cross_reduce = strategy->cross_reduce;
    info->ops = starfold_cross_device_ops_retain(strategy->ops);
    info->topology = starfold_topology_retain(strategy->topology);
    info->options = strategy->options;
    info->release = variable_info_release;
    v->var = info;
    *variable = v;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_strategy_create_variable(starfold_strategy_t strategy, starfold_dtype_t dtype,
                                                                 size_t count, const void *init,
                                                                 starfold_value_t *variable)
{
    /* TensorFlow's defaults: synchronization AUTO (ON_WRITE), aggregation NONE. */
    return create_variable("starfold_strategy_create_variable", strategy, dtype, count, init, NULL, variable);
}

STARFOLD_API starfold_status_t starfold_strategy_create_variable_with_options(
    starfold_strategy_t strategy, starfold_dtype_t dtype, size_t count, const void *init,
    const starfold_variable_options_t *options, starfold_value_t *variable)
{
    return create_variable("starfold_strategy_create_variable_with_options", strategy, dtype, count, init, options,
                           variable);
}
