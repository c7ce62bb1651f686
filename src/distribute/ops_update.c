/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The graphs of cross-device ops that write what they were not given as results: a variable's update
 * (the ops' dispatch with the variable as destination, then every copy updated), broadcasts, and the
 * copies of one component or view that values and variables make.
 */
#include "config.h"

#include <stdio.h>

#include "algorithms/algorithms.h"
#include "base/common.h"
#include "distribute/batch_plan.h"
#include "distribute/distribute.h"

typedef starfold__item_t item_t;
typedef starfold__group_t group_t;

/* ------------------------------------------------------------------------------------------------
 * A variable's update
 *
 *   replica values  --reduce (the ops' dispatch) or copy of one component-->  tmp on each copy's device
 *   copy d  =  tmp / divisor   |   copy d + tmp   |   copy d - tmp            (starfold__graph_then_update)
 *
 * The first part is the graph reduce_to would compile with the variable as destination (from the ops'
 * cache), or a broadcast; a plain assign submits that graph straight into the copies. With every copy
 * having a component of the value on its own device there is no first part (a sync-on-read
 * variable's local update, a mirrored value over the variable's devices).
 */

starfold_status_t starfold__ops_update(starfold_cross_device_ops_t ops, starfold_topology_t topology, starfold_value_t var,
                                       int copy, starfold__update_t update, starfold_value_t value, int reduce,
                                       starfold_op_t op, int comp, uint32_t divisor,
                                       const starfold_communication_options_t *options, const char *fn)
{
    const starfold_context_t ctx = var->ctx;
    if (value->ctx != ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context than the variable",
                               fn);
    if (value->dtype != var->dtype || value->count != var->count)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: cannot assign %zu x %s to a variable of %zu x %s", fn,
                               value->count, starfold_dtype_name(value->dtype), var->count, starfold_dtype_name(var->dtype));
    if (var->count == 0) return STARFOLD_OK; /* nothing to write */
    starfold_status_t st;
    starfold_topology_t topo = NULL;
    int made_topo = 0;
    if ((st = starfold__pick_topology(ops, topology, ctx, &topo, &made_topo)) != STARFOLD_OK) return st;
    const int ntopo = starfold_topology_num_devices(topo), nctx = starfold_context_num_devices(ctx);
    /* The copies written: all of them, or copy @copy alone. */
    const int n = copy < 0 ? var->n : 1, *vdevs = copy < 0 ? var->devices : &var->devices[copy];
    starfold_communication_options_t o = *options;
    o.promote_integer_mean = 0; /* the copies keep their dtype */

    group_t grp;
    size_t member = 0;
    memset(&grp, 0, sizeof grp);
    item_t it;
    memset(&it, 0, sizeof it);
    it.host_as = -1;
    it.reduce_device = -1;
    starfold_graph_t first = NULL, composed = NULL;
    starfold_view_t in[2 * STARFOLD_MAX_DEVICES], out[STARFOLD_MAX_DEVICES];
    int nin = 0, gdev[STARFOLD_MAX_DEVICES];
    const starfold_tensor_desc_t t = { var->dtype, var->count };

    if (reduce) {
        /* reduce_to(op, value, destinations = the variable): its classification, its graph. */
        starfold__pair_t p = { .value = value };
        p.dest.ctx = ctx;
        p.dest.n = n;
        memcpy(p.dest.devices, vdevs, sizeof(int) * (size_t)n);
        p.dest.host = vdevs[0] == STARFOLD_DEVICE_HOST;
        starfold__ops_classify(ops, &p, &it);
        SF_CHECK_GOTO(starfold__check_item_devices(fn, &it, ntopo, nctx, 0), st, out);
        grp.members = &member;
        grp.nmembers = 1;
        SF_CHECK_GOTO(starfold__ops_compile_group(ops, topo, op, &p, &it, &grp, &o, fn), st, out);
        first = grp.graph;
        for (int s = 0; s < it.nsrc; s++) {
            const int c = starfold__component_for(value->devices, value->n, it.src[s], it.host_as);
            if (c < 0) {
                st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: the value has no component for graph source %d", fn, s);
                goto out;
            }
            in[nin++] = starfold__value_view(value, c);
        }
    } else {
        int local = 1;
        for (int d = 0; d < n && local; d++) local = starfold__value_component_on(value, vdevs[d]) >= 0;
        if (local) {
            /* Each copy from the value's component beside it: no first graph. The host stands for device 0. */
            it.host_as = 0;
            for (int d = 0; d < n; d++) {
                gdev[d] = starfold__map_host(vdevs[d], it.host_as);
                if (gdev[d] >= ntopo || gdev[d] >= nctx) {
                    st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: device %d is not a device of the topology "
                                         "(0..%d) and the context (0..%d)", fn, gdev[d], ntopo - 1, nctx - 1);
                    goto out;
                }
                in[nin++] = starfold__value_view(value, starfold__value_component_on(value, vdevs[d]));
            }
        } else {
            /* A copy of one component to every copy's device, as broadcast_graph() places it. */
            const int c = comp >= 0 && comp < value->n ? comp : 0;
            int x = value->devices[c];
            if (x == STARFOLD_DEVICE_HOST) x = vdevs[0] != STARFOLD_DEVICE_HOST ? vdevs[0] : 0;
            it.host_as = x;
            for (int d = 0; d < n; d++) gdev[d] = starfold__map_host(vdevs[d], x);
            const starfold_collective_desc_t desc = {
                .kind = STARFOLD_COLL_BROADCAST, .op = STARFOLD_OP_SUM, .num_sources = 1, .sources = &x,
                .num_destinations = n, .destinations = gdev, .num_tensors = 1, .tensors = &t,
            };
            for (int k = -1; k < n; k++) {
                const int d = k < 0 ? x : gdev[k];
                if (d < 0 || d >= ntopo || d >= nctx) {
                    st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: device %d is not a device of the topology "
                                         "(0..%d) and the context (0..%d)", fn, d, ntopo - 1, nctx - 1);
                    goto out;
                }
            }
            SF_CHECK_GOTO(starfold_graph_compile(topo, "reduce-to-one", &desc, NULL, &first), st, out);
            in[nin++] = starfold__value_view(value, c);
        }
    }

    starfold_graph_t g = first;
    if (!(update == SF_UPDATE_ASSIGN && divisor <= 1 && first)) {
        SF_CHECK_GOTO(starfold__graph_then_update(topo, first, n, gdev, t, update, divisor < 1 ? 1 : divisor, &composed),
                      st, out);
        g = composed;
    }
    /* Output d: the copy on the graph's destination d; assign_add and assign_sub read it as input S + d too. */
    const int nout = starfold_graph_num_outputs(g);
    for (int d = 0; d < nout; d++) {
        const int k = starfold__component_for(vdevs, n, starfold_graph_output_device(g, d), it.host_as);
        const int c = k < 0 ? -1 : copy < 0 ? k : copy;
        if (c < 0) {
            st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: the variable has no copy for graph destination %d", fn, d);
            goto out;
        }
        out[d] = starfold__value_view(var, c);
        if (update != SF_UPDATE_ASSIGN) in[nin + d] = out[d];
    }
    starfold_request_t req = NULL;
    if ((st = starfold_submit_views(ctx, g, in, out, &req)) != STARFOLD_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", starfold_last_error());
        st = starfold__error(st, "%s: %s", fn, why);
        goto out;
    }
    starfold__dist_req_t *rec = starfold__dist_req_new(req, 1);
    if (!rec) {
        starfold_request_wait(req); /* the copies are written: never leave a submission running unowned */
        starfold_request_destroy(req);
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto out;
    }
    st = starfold__value_add_writer(var, rec);
    starfold__dist_req_release(rec);
    starfold__trace_entry_t e = { .path = SF_PATH_UPDATE, .num_tensors = 1, .num_sources = starfold_graph_num_inputs(g),
                                  .num_destinations = nout, .reduce_device = it.reduce_device };
    snprintf(e.algorithm, sizeof e.algorithm, "%s", starfold_graph_algorithm(g));
    starfold__trace_add(&e);
out:
    starfold_graph_destroy(composed);
    if (grp.cached) starfold__ops_cache_release(ops, grp.graph);
    else starfold_graph_destroy(first);
    if (made_topo) starfold_topology_destroy(topo);
    return st;
}

/* One graph: broadcast of view @src (device @sdev, host allowed) to @ndst devices; output views given. */
static starfold_status_t broadcast_graph(const char *algorithm, starfold_topology_t topology, starfold_context_t ctx,
                                         starfold_dtype_t dtype, size_t count, starfold_view_t src, int sdev,
                                         int ndst, const int *dst_devices, const starfold_view_t *outs,
                                         const char *fn, starfold__dist_req_t **req_out)
{
    /* The host is no graph device: a host source is read on the first destination device, a host
     * destination written on the source's device (device 0 when both are the host). */
    int x = sdev;
    if (x == STARFOLD_DEVICE_HOST) x = dst_devices[0] != STARFOLD_DEVICE_HOST ? dst_devices[0] : 0;
    int dst[STARFOLD_MAX_DEVICES];
    for (int k = 0; k < ndst; k++) dst[k] = starfold__map_host(dst_devices[k], x);

    starfold_status_t st;
    starfold_topology_t topo = NULL;
    int made = 0;
    if ((st = starfold__pick_topology(NULL, topology, ctx, &topo, &made)) != STARFOLD_OK) return st;
    const int ntopo = starfold_topology_num_devices(topo), nctx = starfold_context_num_devices(ctx);
    for (int k = -1; k < ndst; k++) {
        const int d = k < 0 ? x : dst[k];
        if (d < 0 || d >= ntopo || d >= nctx) {
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: device %d is not a device of the topology (0..%d) and the "
                          "context (0..%d)", fn, d, ntopo - 1, nctx - 1);
            goto out;
        }
    }
    starfold_tensor_desc_t t = { dtype, count };
    starfold_collective_desc_t desc = {
        .kind = STARFOLD_COLL_BROADCAST, .op = STARFOLD_OP_SUM, .num_sources = 1, .sources = &x,
        .num_destinations = ndst, .destinations = dst, .num_tensors = 1, .tensors = &t,
    };
    starfold_graph_t g = NULL;
    if ((st = starfold_graph_compile(topo, algorithm, &desc, NULL, &g)) != STARFOLD_OK) goto out;
    starfold_request_t req;
    st = starfold_submit_views(ctx, g, &src, outs, &req);
    if (st == STARFOLD_OK) {
        if (!(*req_out = starfold__dist_req_new(req, 1))) {
            starfold_request_destroy(req);
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        } else {
            starfold__trace_entry_t e = { .path = SF_PATH_BROADCAST, .num_tensors = 1, .num_sources = 1,
                                   .num_destinations = ndst, .reduce_device = -1 };
            snprintf(e.algorithm, sizeof e.algorithm, "%s", algorithm);
            starfold__trace_add(&e);
        }
    }
    starfold_graph_destroy(g);
out:
    if (made) starfold_topology_destroy(topo);
    return st;
}

starfold_status_t starfold__ops_broadcast(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                   starfold_value_t value, const starfold__dest_t *dest, const char *fn,
                                   starfold_value_t *result)
{
    if (value->n != 1 && value->kind != STARFOLD_VALUE_MIRRORED)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                        "%s: broadcast takes one tensor: a one-component or mirrored value, not a per-replica value "
                        "of %d components", fn, value->n);
    if (dest->ctx && dest->ctx != value->ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the destination belongs to another context", fn);
    starfold_status_t st;
    starfold_value_t r = NULL;
    if ((st = starfold__value_alloc(value->ctx, STARFOLD_VALUE_MIRRORED, dest->n, dest->devices, value->dtype, value->count,
                             &r)) != STARFOLD_OK)
        return st;
    starfold__dist_req_t *req = NULL;
    starfold_view_t outs[STARFOLD_MAX_DEVICES];
    for (int k = 0; k < dest->n; k++) outs[k] = starfold__value_view(r, k);
    /* TensorFlow's broadcast is simple_broadcast whatever the ops: one copy per destination. */
    st = broadcast_graph("reduce-to-one", ops && ops->topology ? ops->topology : topology,
                         value->ctx, value->dtype, value->count, starfold__value_view(value, 0), value->devices[0],
                         dest->n, dest->devices, outs, fn, &req);
    if (st == STARFOLD_OK) st = starfold__value_add_writer(r, req);
    starfold__dist_req_release(req);
    if (st != STARFOLD_OK) {
        starfold_value_destroy(r);
        return st;
    }
    *result = r;
    return STARFOLD_OK;
}

starfold_status_t starfold__copy_component(starfold_topology_t topology, starfold_value_t src, int sc,
                                    starpu_data_handle_t dst, int dst_device, starfold_value_t owner)
{
    static const char fn[] = "starfold_update_assign";
    starfold__dist_req_t *req = NULL;
    const starfold_view_t out = { dst, 0 };
    starfold_status_t st = broadcast_graph("reduce-to-one", topology, src->ctx, src->dtype, src->count,
                                           starfold__value_view(src, sc), src->devices[sc], 1, &dst_device, &out, fn,
                                           &req);
    if (st == STARFOLD_OK) st = starfold__value_add_writer(owner, req);
    starfold__dist_req_release(req);
    return st;
}

starfold_status_t starfold__copy_view(starfold_context_t ctx, starfold_dtype_t dtype, size_t count, starfold_view_t src,
                                      int src_device, starfold_view_t dst, int dst_device, starfold__dist_req_t **req)
{
    return broadcast_graph("reduce-to-one", NULL, ctx, dtype, count, src, src_device, 1, &dst_device, &dst,
                           "moving a value out of the arena", req);
}

