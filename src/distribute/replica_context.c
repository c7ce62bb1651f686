/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The replica context (replica.h has the whole picture): what a replica asks of its context, the
 * local checks of its collectives (a failed check still joins the rendezvous, so that every replica
 * fails together instead of waiting), and its own values and result. A context other than the
 * calling thread's own is only read once found among the live runs (replica_lookup.c).
 */
#include "config.h"

#include <stdio.h>

#include "base/common.h"
#include "distribute/replica.h"

/* ------------------------------------------------------------------------------------------------
 * Replica context accessors
 */

/* The accessors answer as for NULL when the context's run has ended. */
/* Ids and counts are global under MultiWorkerMirroredStrategy: this process's replicas start at its
 * offset, and every process's are in sync. */
STARFOLD_API int starfold_replica_context_replica_id_in_sync_group(starfold_replica_context_t context)
{
    rc_view_t v;
    return starfold__rc_lookup(context, &v) == 0 ? v.strategy->replica_offset + v.id : -1;
}

STARFOLD_API int starfold_replica_context_num_replicas_in_sync(starfold_replica_context_t context)
{
    rc_view_t v;
    if (starfold__rc_lookup(context, &v) != 0) return 0;
    return v.strategy->total_replicas ? v.strategy->total_replicas : v.n;
}

STARFOLD_API int starfold_replica_context_device(starfold_replica_context_t context)
{
    rc_view_t v;
    return starfold__rc_lookup(context, &v) == 0 ? v.device : -2;
}

STARFOLD_API starfold_strategy_t starfold_replica_context_strategy(starfold_replica_context_t context)
{
    rc_view_t v;
    return starfold__rc_lookup(context, &v) == 0 ? v.strategy : NULL;
}

/* select_replica: the component on this device, else the only one, else the one of this index. */
static int select_index(const rc_view_t *rc, starfold_value_t v)
{
    int c = starfold__value_component_on(v, rc->device);
    if (c < 0 && v->n == 1) c = 0;
    if (c < 0 && v->n == rc->n) c = rc->id;
    return c;
}

STARFOLD_API starfold_status_t starfold_replica_context_select(starfold_replica_context_t context,
                                                               starfold_value_t value, starpu_data_handle_t *handle)
{
    static const char fn[] = "starfold_replica_context_select";
    if (!context || !value || !handle)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                        !context ? "context" : !value ? "value" : "handle");
    rc_view_t rc;
    if (starfold__rc_lookup(context, &rc) != 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the replica context is no longer valid (its "
                               "starfold_strategy_run() has returned)", fn);
    const int c = select_index(&rc, value);
    if (c < 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                        "%s: the value (%d components) has no component for replica %d (device %d)", fn, value->n,
                        rc.id, rc.device);
    if (!(*handle = starfold__value_handle(value, c))) {
        char why[512];
        snprintf(why, sizeof why, "%s", starfold_last_error());
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: %s", fn, why);
    }
    return STARFOLD_OK;
}

/* The replica context must be the calling thread's own, in its replica function. */
static starfold_status_t check_own(starfold_replica_context_t rc, const char *fn)
{
    if (!rc) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL replica context", fn);
    if (starfold__tls_rc == rc) return STARFOLD_OK;
    rc_view_t v;
    if (starfold__rc_lookup(rc, &v) != 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: the replica context is no longer valid (its starfold_strategy_run() has returned)", fn);
    if (!starfold__tls_rc && starfold__tls_run == v.run)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: called in the cross-replica context (a merge function)",
                               fn);
    return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                           "%s: the replica context of replica %d is used outside that replica's function", fn, v.id);
}

/* Records a local error in the slot (the collective will fail for everyone with it). */
static void slot_fail(slot_t *sl, starfold_status_t st)
{
    sl->local_status = st;
    snprintf(sl->local_msg, sizeof sl->local_msg, "%s", starfold_last_error());
}

STARFOLD_API starfold_status_t starfold_replica_context_all_reduce(starfold_replica_context_t context,
                                                                   starfold_op_t op, size_t num_values,
                                                                   const starfold_value_t *values,
                                                                   const starfold_communication_options_t *options,
                                                                   starfold_value_t *results)
{
    static const char fn[] = "starfold_replica_context_all_reduce";
    starfold_status_t st;
    if ((st = check_own(context, fn)) != STARFOLD_OK) return st;
    slot_t sl;
    memset(&sl, 0, sizeof sl);
    sl.op = op;
    sl.nvalues = num_values;
    sl.values = values;
    sl.results = results;
    double timeout = 0;
    int few[16]; /* the components of a short list: no allocation in a small step */
    /* Local checks: a failure still joins, so that every replica fails together instead of waiting. */
    if (!results || !values || num_values == 0)
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                                num_values == 0 ? "all_reduce needs at least one value" : "NULL values or results"));
    else if ((int)op < 0 || (int)op >= STARFOLD_OP_COUNT)
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown reduce op %d", fn, (int)op));
    else if ((st = starfold__strategy_options(context->strategy, options, &sl.options)) != STARFOLD_OK)
        slot_fail(&sl, st);
    else if (!(sl.comps = num_values <= sizeof few / sizeof *few ? few : malloc(sizeof *sl.comps * num_values)))
        slot_fail(&sl, starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn));
    else {
        timeout = sl.options.timeout_seconds;
        sl.same_as_last = starfold__ar_inputs_row_same(starfold__pool_ar_inputs(context->strategy), context->id, context->strategy->n,
                                             num_values, values, sl.comps);
        for (size_t i = 0; !sl.same_as_last && i < num_values && sl.local_status == STARFOLD_OK; i++) {
            const starfold_value_t v = values[i];
            const int c = v ? starfold__value_component_on(v, context->device) : -1;
            if (!v)
                slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: value %zu is NULL", fn, i));
            else if (v->ctx != context->strategy->ctx)
                slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: value %zu belongs to another context", fn, i));
            else if (c < 0)
                slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                        "%s: value %zu has no component on this replica's device %d", fn, i,
                                        context->device));
            else
                sl.comps[i] = c;
        }
    }
    st = starfold__rendezvous(context, COLL_ALL_REDUCE, &sl, timeout, fn);
    if (sl.comps != few) free(sl.comps);
    return st;
}

STARFOLD_API starfold_status_t starfold_replica_context_all_gather(starfold_replica_context_t context,
                                                                   starfold_value_t value, int axis,
                                                                   const starfold_communication_options_t *options,
                                                                   starfold_value_t *result)
{
    static const char fn[] = "starfold_replica_context_all_gather";
    starfold_status_t st;
    if ((st = check_own(context, fn)) != STARFOLD_OK) return st;
    slot_t sl;
    memset(&sl, 0, sizeof sl);
    int comp = -1;
    starfold_value_t results[1] = { NULL };
    sl.nvalues = 1;
    sl.values = &value;
    sl.comps = &comp;
    sl.results = results;
    double timeout = 0;
    /* Local checks: a failure still joins, so that every replica fails together instead of waiting. */
    if (!result || !value)
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !value ? "value" : "result"));
    else if ((st = starfold__check_axis(fn, axis)) != STARFOLD_OK)
        slot_fail(&sl, st);
    else if ((st = starfold__strategy_options(context->strategy, options, &sl.options)) != STARFOLD_OK)
        slot_fail(&sl, st);
    else if (value->ctx != context->strategy->ctx)
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context", fn));
    else if ((comp = starfold__value_component_on(value, context->device)) < 0)
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "%s: the value has no component on this replica's device %d", fn, context->device));
    if (sl.local_status == STARFOLD_OK) timeout = sl.options.timeout_seconds;
    st = starfold__rendezvous(context, COLL_ALL_GATHER, &sl, timeout, fn);
    if (st == STARFOLD_OK) *result = results[0];
    else starfold_value_destroy(results[0]);
    return st;
}

starfold_status_t starfold__replica_update_variable(starfold_replica_context_t rc, starfold_value_t var,
                                                    starfold_value_t value, starfold__update_t update, const char *fn)
{
    starfold_status_t st;
    if ((st = check_own(rc, fn)) != STARFOLD_OK) return st;
    const coll_kind_t kind = update == SF_UPDATE_ADD ? COLL_ASSIGN_ADD : update == SF_UPDATE_SUB ? COLL_ASSIGN_SUB : COLL_ASSIGN;
    const starfold__variable_t *info = var->var;
    slot_t sl;
    memset(&sl, 0, sizeof sl);
    int comp = -1;
    sl.nvalues = 1;
    sl.values = &value;
    sl.comps = &comp;
    sl.variable = var;
    double timeout = 0;
    /* Local checks: a failure still joins, so that every replica fails together instead of waiting. */
    if ((st = starfold__strategy_options(rc->strategy, NULL, &sl.options)) != STARFOLD_OK) slot_fail(&sl, st);
    else timeout = sl.options.timeout_seconds;
    const int integer = starfold__dtype_integer(var->dtype);
    if (sl.local_status != STARFOLD_OK) {
        /* recorded */
    } else if (info->agg == STARFOLD_AGGREGATION_NONE) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "%s: You must specify an aggregation method to update a %s in Replica Context. "
                                       "You can do so by passing an explicit value for argument `aggregation` to "
                                       "tf.Variable(..). (starfold: starfold_variable_options_t::aggregation, or update "
                                       "it in the cross-replica context, in a merge function)",
                                       fn, info->strategy_kind == STARFOLD_STRATEGY_CENTRAL_STORAGE ? "AggregatingVariable"
                                                                                                     : "MirroredVariable"));
    } else if (info->agg == STARFOLD_AGGREGATION_MEAN && integer) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "%s: Cannot update non-float variables with tf.VariableAggregation.MEAN aggregation "
                                       "in replica context. Either change the variable dtype to float or update it in "
                                       "cross-replica context. (the variable is %s)",
                                       fn, starfold_dtype_name(var->dtype)));
    } else if (var->ctx != rc->strategy->ctx) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the variable belongs to another context than "
                                       "the strategy", fn));
    } else if (!value) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL value", fn));
    } else if (value->ctx != var->ctx) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context", fn));
    } else if (value->dtype != var->dtype || value->count != var->count) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: cannot assign %zu x %s to a variable of %zu x %s",
                                       fn, value->count, starfold_dtype_name(value->dtype), var->count,
                                       starfold_dtype_name(var->dtype)));
    } else if ((comp = starfold__value_component_on(value, rc->device)) < 0 && value->n != 1) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "%s: the value (%d components) has no component on this replica's device %d", fn,
                                       value->n, rc->device));
    } else if (comp < 0) {
        comp = 0; /* a one-component value elsewhere: the leader decides (the same value everywhere, replica 0's) */
    }
    return starfold__rendezvous(rc, kind, &sl, timeout, fn);
}

STARFOLD_API starfold_status_t starfold_replica_context_merge_call(starfold_replica_context_t context,
                                                                   starfold_merge_fn_t merge_fn, void *arg,
                                                                   void **result)
{
    static const char fn[] = "starfold_replica_context_merge_call";
    starfold_status_t st;
    if ((st = check_own(context, fn)) != STARFOLD_OK) return st;
    slot_t sl;
    memset(&sl, 0, sizeof sl);
    sl.fn = merge_fn;
    sl.arg = arg;
    if (!merge_fn) slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL merge_fn", fn));
    st = starfold__rendezvous(context, COLL_MERGE_CALL, &sl, context->strategy->options.timeout_seconds, fn);
    if (st == STARFOLD_OK && result) {
        pthread_mutex_lock(&context->run->lock);
        *result = context->run->slots[context->id].result;
        pthread_mutex_unlock(&context->run->lock);
    }
    return st;
}

/* ------------------------------------------------------------------------------------------------
 * A replica's own values and result
 */

/* The calling thread's replica context, checked to be @context (a replica's calls are its own). */
static starfold_status_t own_context(const char *fn, starfold_replica_context_t context)
{
    if (!context) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL context", fn);
    if (context != starfold__tls_rc)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: called outside the replica function of this replica context (its own thread, "
                               "during starfold_strategy_run())",
                               fn);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_replica_context_create_value(starfold_replica_context_t context,
                                                                     starfold_dtype_t dtype, size_t count,
                                                                     const void *init, starfold_value_t *value)
{
    static const char fn[] = "starfold_replica_context_create_value";
    starfold_status_t st = own_context(fn, context);
    if (st != STARFOLD_OK) return st;
    if (!value) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL value", fn);
    return starfold_value_create(context->strategy->ctx, STARFOLD_VALUE_PER_REPLICA, 1, &context->device, dtype, count,
                                 init, value);
}

STARFOLD_API starfold_status_t starfold_replica_context_set_result(starfold_replica_context_t context,
                                                                   starfold_value_t value)
{
    static const char fn[] = "starfold_replica_context_set_result";
    starfold_status_t st = own_context(fn, context);
    if (st != STARFOLD_OK) return st;
    if (value && value->ctx != context->strategy->ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context than the strategy",
                               fn);
    starfold_value_retain(value);
    starfold_value_destroy(context->result);
    context->result = value;
    return STARFOLD_OK;
}

