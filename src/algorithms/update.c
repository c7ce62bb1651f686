/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * A variable's update after a first collective, as one graph: what the distribute layer submits for
 * assign, assign_add and assign_sub of a variable (TensorFlow's MirroredVariable in the replica
 * context: the replicas' values aggregated, then every copy of the variable updated the same way).
 *
 *   first (one tensor)    in(s) ----- its tasks -----> out(d)
 *
 *   composed              in(s)    s < S              ----- the same tasks -----> tmp(d)
 *                         in(S + d)  copy d of the variable, bound as out(d) too (in place)
 *
 *                         assign_add   out(d) = in(S + d) + tmp(d)       one REDUCE task on d's device
 *                         assign_sub   out(d) = in(S + d) - tmp(d)       REDUCE, the internal op SUB
 *                         assign       out(d) = tmp(d) / divisor          REDUCE of one source (no in(S + d))
 *
 * Without a first graph the values are on the variable's devices already (a sync-on-read variable's
 * own copy, a mirrored value over the variable's devices): in(d) is value d, read where tmp(d) is.
 *
 * The first graph's outputs become temporaries on the same devices; its tasks are replayed in order
 * (so task i stays task i and its explicit dependencies keep their meaning), every other dependency
 * inferred again from the data. The variable's input and output are two buffers of the graph bound to
 * one handle: the update task is the only one that touches either, reading before it writes, so the
 * checker's in-place rule holds, and the executor accepts an output that is its own device's input of
 * the same tensor.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "algorithms/algorithms.h"

static const char *update_name(starfold__update_t update)
{
    return update == SF_UPDATE_ADD ? "assign_add" : update == SF_UPDATE_SUB ? "assign_sub" : "assign";
}

/* Replays task @i of @first into @g, its buffers through @map. */
static starfold_status_t replay(starfold_graph_t g, const struct starfold_graph *first, size_t i, const size_t *map)
{
    const starfold__node_t *n = &first->nodes[i];
    starfold__span_t *src = malloc(sizeof *src * (n->nsrc ? n->nsrc : 1)), *dst = malloc(sizeof *dst * n->ndst);
    starfold_status_t st = STARFOLD_OK;
    size_t self = SIZE_MAX;
    if (!src || !dst) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory composing a variable's update");
        goto out;
    }
    for (size_t k = 0; k < n->nsrc; k++) src[k] = starfold__span(map[n->src[k].buf], n->src[k].offset, n->src[k].count);
    for (size_t k = 0; k < n->ndst; k++) dst[k] = starfold__span(map[n->dst[k].buf], n->dst[k].offset, n->dst[k].count);
    switch (n->kind) {
    case STARFOLD_TASK_COPY:
    case STARFOLD_TASK_PACK:
    case STARFOLD_TASK_UNPACK:
        st = starfold__graph_copy(g, n->kind, src, n->nsrc, dst, n->ndst, n->tag, &self);
        break;
    case STARFOLD_TASK_REDUCE:
        st = starfold__graph_reduce_segments(g, n->device, n->op, src, n->nsrc / n->nseg, dst, n->ndst / n->nseg, n->nseg,
                                             n->divisor, n->tag, &self);
        break;
    case STARFOLD_TASK_SCALE:
        st = starfold__graph_scale(g, src[0], dst[0], n->divisor, n->tag, &self);
        break;
    default:
        st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: task %zu of unknown kind %d", first->algorithm, i, (int)n->kind);
    }
    if (st == STARFOLD_OK && self != i)
        st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: task %zu replayed as task %zu", first->algorithm, i, self);
    /* Orderings the data does not imply (the inferred ones come back as they were; duplicates are ignored). */
    for (size_t k = 0; k < n->ndeps && st == STARFOLD_OK; k++) st = starfold__graph_add_dep(g, n->deps[k], i);
out:
    free(src);
    free(dst);
    return st;
}

starfold_status_t starfold__graph_then_update(starfold_topology_t topology, starfold_graph_t first, int n,
                                              const int *devices, starfold_tensor_desc_t tensor,
                                              starfold__update_t update, uint32_t divisor, starfold_graph_t *out)
{
    if (first) {
        if (first->num_tensors != 1 || first->kind == STARFOLD_COLL_GATHER ||
            starfold__graph_out_dtype(first, first->tensors[0].dtype) != first->tensors[0].dtype)
            return starfold__error(STARFOLD_ERR_INTERNAL, "%s: a variable's update follows a reduce or broadcast of one "
                                   "tensor of the variable's dtype", first->algorithm);
        topology = first->topology;
        n = first->num_outputs;
        devices = first->output_devices;
        tensor = first->tensors[0];
    }
    if (n < 1 || n > STARFOLD_MAX_DEVICES || divisor < 1 || (divisor > 1 && update != SF_UPDATE_ASSIGN))
        return starfold__error(STARFOLD_ERR_INTERNAL, "update of %d copies divided by %u (%s)", n, divisor,
                               update_name(update));
    const int nvalue = first ? first->num_inputs : n;     /* S: the value's sources */
    const int nvar = update == SF_UPDATE_ASSIGN ? 0 : n;  /* the variable's copies, read by the update */
    int *sources = malloc(sizeof *sources * (size_t)(nvalue + nvar));
    size_t *map = first ? malloc(sizeof *map * (first->nbufs ? first->nbufs : 1)) : NULL;
    size_t *tmp = malloc(sizeof *tmp * (size_t)n);
    starfold_graph_t g = NULL;
    starfold_status_t st = STARFOLD_OK;
    if (!sources || (first && !map) || !tmp) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory composing a variable's update");
        goto out;
    }
    memcpy(sources, first ? first->input_devices : devices, sizeof *sources * (size_t)nvalue);
    if (nvar) memcpy(sources + nvalue, devices, sizeof *sources * (size_t)nvar);

    char name[96];
    snprintf(name, sizeof name, "%s%s%s", first ? first->algorithm : "", first ? "+" : "", update_name(update));
    const starfold_collective_desc_t desc = {
        .kind = STARFOLD_COLL_REDUCE, .op = first ? first->op : STARFOLD_OP_SUM, .num_sources = nvalue + nvar,
        .sources = sources, .num_destinations = n, .destinations = devices, .num_tensors = 1, .tensors = &tensor,
    };
    SF_CHECK_GOTO(starfold__graph_create(topology, name, &desc, &g), st, out);

    /* The first graph's buffers: its inputs are the value's sources, its outputs temporaries, its temporaries kept. */
    for (size_t b = 0; first && b < first->nbufs; b++) {
        const starfold__buffer_t *x = &first->bufs[b];
        if (x->kind == SF_BUF_INPUT) map[b] = starfold__graph_input(g, x->slot, 0);
        else
            SF_CHECK_GOTO(starfold__graph_add_temp(g, x->device, x->dtype, x->count,
                                                   x->kind == SF_BUF_OUTPUT ? x->slot : (int)x->tensor, &map[b]),
                          st, out);
        if (x->kind == SF_BUF_OUTPUT) tmp[x->slot] = map[b];
    }
    for (size_t i = 0; first && i < first->nnodes; i++) SF_CHECK_GOTO(replay(g, first, i, map), st, out);

    /* The update: one task per copy, on its device. */
    for (int d = 0; d < n; d++) {
        const starfold__span_t value = starfold__whole(g, first ? tmp[d] : starfold__graph_input(g, d, 0));
        const starfold__span_t to = starfold__whole(g, starfold__graph_output(g, d, 0));
        if (update == SF_UPDATE_ASSIGN) {
            SF_CHECK_GOTO(starfold__graph_reduce_on(g, devices[d], STARFOLD_OP_SUM, &value, 1, &to, 1, divisor, -1, NULL),
                          st, out);
        } else {
            const starfold__span_t src[2] = { starfold__whole(g, starfold__graph_input(g, nvalue + d, 0)), value };
            SF_CHECK_GOTO(starfold__graph_reduce_on(g, devices[d], update == SF_UPDATE_SUB ? STARFOLD__OP_SUB : STARFOLD_OP_SUM,
                                                    src, 2, &to, 1, 1, -1, NULL),
                          st, out);
        }
    }
    starfold__graph_seal(g);
    if (starfold__check_graphs_wanted()) SF_CHECK_GOTO(starfold_graph_check(g), st, out);
    *out = g;
    g = NULL;
out:
    starfold_graph_destroy(g);
    free(sources);
    free(map);
    free(tmp);
    return st;
}
