/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Gather: TensorFlow's Strategy.gather(value, axis), CrossDeviceOps._gather and (with replica_collectives.c's
 * rendezvous) ReplicaContext.all_gather(value, axis), for values, which are 1-D tensors: the
 * components concatenated along axis 0 in component (replica) order.
 *
 *   value (per replica)        result (mirrored over the destinations, n x count elements each)
 *   [a0 a1]  on device 0   ->  [a0 a1 | b0 b1 | c0 c1]  on every destination device (or the host)
 *   [b0 b1]  on device 1
 *   [c0 c1]  on device 2
 *
 * One graph of the graph layer's gather collective (STARFOLD_COLL_GATHER), submitted on the values'
 * views: the ops' algorithm when it has a gather pattern of its own (ring, around the topology's rings,
 * when the destinations are the sources), direct copies otherwise, "auto" by the cost model; TensorFlow
 * concatenates on one device and then broadcasts. The host is no graph device: a host destination is
 * written by a task on the first component's device. A value of one component is copied (TensorFlow's
 * single-value shortcut).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "distribute/distribute.h"

starfold_status_t starfold__check_axis(const char *fn, int axis)
{
    if (axis == 0 || axis == -1) return STARFOLD_OK;
    return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: axis %d is out of bounds for a 1-D tensor (rank 1)", fn,
                           axis);
}

starfold_status_t starfold__gather_devices(starfold_context_t ctx, int n, const int *devices, const starfold__dest_t *dest,
                                           starfold_topology_t topo, const char *fn, int *dst)
{
    const int ntopo = starfold_topology_num_devices(topo), nctx = starfold_context_num_devices(ctx);
    for (int c = 0; c < n; c++) {
        const int d = devices[c];
        if (d == STARFOLD_DEVICE_HOST)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: component %d of the value is on the host; a gather takes values on devices", fn, c);
        if (d < 0 || d >= ntopo || d >= nctx)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: component %d is on device %d, not a device of the topology (0..%d) and the "
                                   "context (0..%d)",
                                   fn, c, d, ntopo - 1, nctx - 1);
    }
    for (int k = 0; k < dest->n; k++) {
        const int d = dest->devices[k] == STARFOLD_DEVICE_HOST ? devices[0] : dest->devices[k];
        /* As for dense values: a device the context lacks is NO_DEVICE, one the topology lacks a bad argument. */
        if (d >= nctx)
            return starfold__error(STARFOLD_ERR_NO_DEVICE, "%s: destination device %d, the context has devices 0..%d", fn,
                                   d, nctx - 1);
        if (d < 0 || d >= ntopo)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: destination device %d is not a device of the topology (0..%d)", fn, d, ntopo - 1);
        dst[k] = d;
    }
    return STARFOLD_OK;
}

starfold_status_t starfold__gather_submit(starfold_cross_device_ops_t ops, starfold_topology_t topo, starfold_context_t ctx,
                                          starfold_op_t op, starfold_dtype_t dtype, int n, const int *devices,
                                          const starfold_view_t *views, const size_t *counts, int ndst, const int *dst,
                                          const starfold_view_t *outs, int nowners, const starfold_value_t *owners,
                                          const char *fn)
{
    const char *algorithm = ops ? (ops->all_reduce ? ops->algorithm : "reduce-to-one") : "auto";
    const starfold_tensor_desc_t t = { dtype, 0 };
    const starfold_collective_desc_t desc = {
        .kind = STARFOLD_COLL_GATHER, .op = op, .num_sources = n, .sources = devices,
        .num_destinations = ndst, .destinations = dst, .num_tensors = 1, .tensors = &t, .source_counts = counts,
    };
    starfold_graph_t g = NULL;
    starfold_status_t st = starfold_graph_compile(topo, algorithm, &desc, ops ? &ops->options : NULL, &g);
    if (st != STARFOLD_OK) return st;
    starfold_request_t req = NULL;
    st = starfold_submit_views(ctx, g, views, outs, &req);
    if (st == STARFOLD_OK) {
        starfold__dist_req_t *rec = starfold__dist_req_new(req, 1);
        if (!rec) {
            starfold_request_wait(req); /* the outputs are written: never leave a submission running unowned */
            starfold_request_destroy(req);
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        } else {
            for (int k = 0; k < nowners && st == STARFOLD_OK; k++) st = starfold__value_add_writer(owners[k], rec);
            starfold__dist_req_release(rec);
            starfold__trace_entry_t e = { .path = SF_PATH_GATHER, .num_tensors = 1, .num_sources = n,
                                          .num_destinations = ndst, .reduce_device = -1 };
            snprintf(e.algorithm, sizeof e.algorithm, "%s", starfold_graph_algorithm(g));
            starfold__trace_add(&e);
        }
    }
    starfold_graph_destroy(g);
    return st;
}

starfold_status_t starfold__gather_parts(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                         starfold_context_t ctx, starfold_dtype_t dtype, int n, const int *devices,
                                         const starfold_view_t *views, const size_t *counts, const starfold__dest_t *dest,
                                         const char *fn, starfold_value_t *result)
{
    if (dest->ctx && dest->ctx != ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the destination belongs to another context", fn);
    size_t total = 0;
    for (int c = 0; c < n; c++) {
        if (counts[c] > ((size_t)1 << 48) - total)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d components are too many elements to gather", fn, n);
        total += counts[c];
    }
    starfold_status_t st;
    starfold_topology_t topo = NULL;
    int made = 0, dst[STARFOLD_MAX_DEVICES];
    if ((st = starfold__pick_topology(ops, topology, ctx, &topo, &made)) != STARFOLD_OK) return st;
    starfold_value_t r = NULL;
    SF_CHECK_GOTO(starfold__gather_devices(ctx, n, devices, dest, topo, fn, dst), st, out);
    SF_CHECK_GOTO(starfold__value_alloc(ctx, STARFOLD_VALUE_MIRRORED, dest->n, dest->devices, dtype, total, &r), st, out);
    starfold_view_t outs[STARFOLD_MAX_DEVICES];
    starfold__value_views(r, outs);
    if (total)
        SF_CHECK_GOTO(starfold__gather_submit(ops, topo, ctx, STARFOLD_OP_SUM, dtype, n, devices, views, counts, dest->n, dst,
                                              outs, 1, &r, fn),
                      st, out);
    *result = r;
    r = NULL;
out:
    starfold_value_destroy(r);
    if (made) starfold_topology_destroy(topo);
    return st;
}

starfold_status_t starfold__ops_gather(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                       starfold_value_t value, const starfold__dest_t *dest, const char *fn,
                                       starfold_value_t *result)
{
    if (value->n == 1) return starfold__ops_broadcast(ops, topology, value, dest, fn, result); /* checks dest->ctx too */
    starfold_view_t views[STARFOLD_MAX_DEVICES];
    size_t counts[STARFOLD_MAX_DEVICES];
    starfold__value_views(value, views);
    for (int c = 0; c < value->n; c++) counts[c] = value->count;
    return starfold__gather_parts(ops, topology, value->ctx, value->dtype, value->n, value->devices, views, counts, dest, fn,
                                  result);
}

STARFOLD_API starfold_status_t starfold_cross_device_ops_gather(starfold_cross_device_ops_t ops, starfold_value_t value,
                                                                int axis, const starfold_destination_t *destinations,
                                                                const starfold_communication_options_t *options,
                                                                starfold_value_t *result)
{
    static const char fn[] = "starfold_cross_device_ops_gather";
    starfold_status_t st;
    if (!ops || !value || !result)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                               !ops ? "ops" : !value ? "value" : "result");
    if ((st = starfold__check_axis(fn, axis)) != STARFOLD_OK) return st;
    starfold__dest_t dest;
    if ((st = starfold__dest_resolve(destinations, fn, &dest)) != STARFOLD_OK) return st;
    starfold_communication_options_t o; /* checked, as TensorFlow checks them; a gather has nothing to tune */
    if ((st = starfold_communication_options_merge(NULL, options, &o)) != STARFOLD_OK) return st;
    return starfold__ops_gather(ops, NULL, value, &dest, fn, result);
}

/*
 * MultiWorkerMirroredStrategy: the value's component on each of this process's replicas, then every
 * other process's, in global replica order (s->cross_gather). A value without a component on some
 * replica is this process's refusal, which the other processes get too.
 */
static starfold_status_t gather_across(starfold_strategy_t s, starfold_value_t value, const starfold__dest_t *dest,
                                       const char *fn, starfold_value_t *result)
{
    starfold_view_t views[STARFOLD_MAX_DEVICES];
    size_t counts[STARFOLD_MAX_DEVICES];
    starfold_status_t st = STARFOLD_OK;
    for (int d = 0; d < s->n && st == STARFOLD_OK; d++) {
        const int c = starfold__value_component_on(value, s->devices[d]);
        if (c < 0)
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value has no component on device %d: across "
                                 "processes every value holds one per replica of the process (%d)", fn, s->devices[d], s->n);
        else views[d] = starfold__value_view(value, c), counts[d] = value->count;
    }
    starfold_communication_options_t o;
    memset(&o, 0, sizeof o);
    const starfold_status_t opts = starfold__strategy_options(s, NULL, &o);
    if (st == STARFOLD_OK) st = opts;
    return s->cross_gather(s, st, value->dtype, 1, views, counts, 1, dest, &o, fn, result);
}

STARFOLD_API starfold_status_t starfold_strategy_gather(starfold_strategy_t strategy, starfold_value_t value, int axis,
                                                        starfold_value_t *result)
{
    static const char fn[] = "starfold_strategy_gather";
    starfold_status_t st;
    if (!strategy || !value || !result)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                               !strategy ? "strategy" : !value ? "value" : "result");
    if ((st = starfold__require_cross_replica(fn)) != STARFOLD_OK) return st;
    if ((st = starfold__check_axis(fn, axis)) != STARFOLD_OK) return st;
    if (value->ctx != strategy->ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context", fn);
    /* TensorFlow gathers "to the current device": in the cross-replica context, the host. */
    starfold__dest_t host;
    const starfold_destination_t h = starfold_destination_host();
    if ((st = starfold__dest_resolve(&h, fn, &host)) != STARFOLD_OK) return st;
    if (strategy->cross_gather) return gather_across(strategy, value, &host, fn, result);
    return starfold__ops_gather(strategy->ops, strategy->topology, value, &host, fn, result);
}
