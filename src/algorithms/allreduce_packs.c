/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The all-reduce driver (algorithms.h): what hierarchical-copy, ring, halving-doubling and trees share
 * around their patterns - the pack plan, packing each replica's tensors into a pack, placing the
 * results, the one-replica case, and scattering each reduced pack back into the outputs. Pure graph
 * building, like the algorithms.
 */
#include "config.h"

#include "algorithms/algorithms.h"
#include "base/common.h"

int starfold__graph_output_slot_on(const struct starfold_graph *g, int device)
{
    for (int d = 0; d < g->num_outputs; d++)
        if (g->output_devices[d] == device) return d;
    return -1;
}

/* A pack that is exactly one whole tensor is reduced in place of that tensor: no pack/unpack copies. */
static int pack_is_tensor(const struct starfold_graph *g, const starfold__pack_t *pk)
{
    return pk->nsegs == 1 && pk->segs[0].offset == 0 && pk->segs[0].count == g->tensors[pk->segs[0].tensor].count;
}

/* The pack's segments as spans of slot @slot's input (out = 0) or output (out = 1) tensors; malloc'd. */
static starfold__span_t *pack_spans(const struct starfold_graph *g, const starfold__pack_t *pk, int slot, int out)
{
    starfold__span_t *s = malloc(sizeof *s * pk->nsegs);
    if (!s) return NULL;
    for (size_t i = 0; i < pk->nsegs; i++)
        s[i] = starfold__span(out ? starfold__graph_output(g, slot, pk->segs[i].tensor) : starfold__graph_input(g, slot, pk->segs[i].tensor),
                       pk->segs[i].offset, pk->segs[i].count);
    return s;
}

/* Replica p's data of pack @pk: its input tensor, or a temporary on its device filled by a PACK task. */
static starfold_status_t pack_gather(starfold_graph_t g, const starfold__pack_t *pk, int p, starfold__span_t *have)
{
    if (pack_is_tensor(g, pk)) {
        *have = starfold__whole(g, starfold__graph_input(g, p, pk->segs[0].tensor));
        return STARFOLD_OK;
    }
    size_t buf;
    starfold_status_t st = starfold__graph_add_temp(g, g->input_devices[p], pk->dtype, pk->count, (int)pk->index, &buf);
    if (st != STARFOLD_OK) return st;
    starfold__span_t *segs = pack_spans(g, pk, p, 0);
    if (!segs) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", g->algorithm);
    *have = starfold__whole(g, buf);
    st = starfold__graph_copy(g, STARFOLD_TASK_PACK, segs, pk->nsegs, have, 1, (int)pk->index, NULL);
    free(segs);
    return st;
}

/* Where replica p's result of pack @pk is built: its output tensor, or a temporary (output dtype). */
static starfold_status_t pack_result(starfold_graph_t g, const starfold__pack_t *pk, int p, int out_slot,
                                     starfold__span_t *dest)
{
    if (pack_is_tensor(g, pk)) {
        *dest = starfold__whole(g, starfold__graph_output(g, out_slot, pk->segs[0].tensor));
        return STARFOLD_OK;
    }
    size_t buf;
    starfold_status_t st = starfold__graph_add_temp(g, g->input_devices[p], starfold__graph_out_dtype(g, pk->dtype), pk->count,
                                             (int)pk->index, &buf);
    if (st == STARFOLD_OK) *dest = starfold__whole(g, buf);
    return st;
}

/* Writes the reduced pack @from into output slot @out_slot: a COPY, an UNPACK, or nothing when @from
 * already is that output. */
static starfold_status_t pack_scatter(starfold_graph_t g, const starfold__pack_t *pk, int out_slot, starfold__span_t from)
{
    if (pack_is_tensor(g, pk)) {
        starfold__span_t dst = starfold__whole(g, starfold__graph_output(g, out_slot, pk->segs[0].tensor));
        if (dst.buf == from.buf) return STARFOLD_OK; /* the result was built in place */
        return starfold__graph_copy(g, STARFOLD_TASK_COPY, &from, 1, &dst, 1, (int)pk->index, NULL);
    }
    starfold__span_t *segs = pack_spans(g, pk, out_slot, 1);
    if (!segs) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", g->algorithm);
    starfold_status_t st = starfold__graph_copy(g, STARFOLD_TASK_UNPACK, &from, 1, segs, pk->nsegs, (int)pk->index, NULL);
    free(segs);
    return st;
}

int starfold__graph_is_all_reduce(const struct starfold_graph *g)
{
    if (g->kind != STARFOLD_COLL_REDUCE || g->num_outputs != g->num_inputs) return 0;
    for (int p = 0; p < g->num_inputs; p++)
        if (starfold__graph_output_slot_on(g, g->input_devices[p]) < 0) return 0;
    return 1;
}

/* One replica: nothing to exchange, the result is the input (divided by 1 for MEAN). */
static starfold_status_t reduce_single(starfold__allreduce_t *ar)
{
    starfold_graph_t g = ar->g;
    if (g->op == STARFOLD_OP_MEAN) return starfold__graph_scale(g, ar->have[0], ar->result[0], 1, ar->tag, NULL);
    return starfold__graph_copy(g, STARFOLD_TASK_COPY, &ar->have[0], 1, &ar->result[0], 1, ar->tag, NULL);
}

static starfold_status_t one_pack(starfold__allreduce_t *ar, const starfold__allreduce_pattern_t *pattern, void *self,
                                  const int *out_slot)
{
    starfold_status_t st;
    starfold_graph_t g = ar->g;
    const starfold__pack_t *pk = ar->pack;
    for (int p = 0; p < ar->n; p++)
        if ((st = pack_gather(g, pk, p, &ar->have[p])) != STARFOLD_OK ||
            (!pattern->places_results && (st = pack_result(g, pk, p, out_slot[p], &ar->result[p])) != STARFOLD_OK))
            return st;
    st = ar->n == 1 && !pattern->reduces_single ? reduce_single(ar) : pattern->reduce_pack(ar, self);
    if (st != STARFOLD_OK) return st;
    for (int p = 0; p < ar->n; p++)
        if ((st = pack_scatter(g, pk, out_slot[p], ar->result[p])) != STARFOLD_OK) return st;
    return STARFOLD_OK;
}

starfold_status_t starfold__allreduce_packs(starfold_graph_t g, const starfold_algo_options_t *options,
                                     const starfold__allreduce_pattern_t *pattern, void *self)
{
    starfold_status_t st = STARFOLD_OK;
    const int n = g->num_inputs;
    int *out_slot = calloc((size_t)n, sizeof *out_slot); /* output slot on replica p's device */
    starfold__allreduce_t ar = {
        .g = g, .options = options, .n = n, .acc = starfold__op_accumulation(g->op),
        .have = calloc((size_t)n, sizeof *ar.have), .result = calloc((size_t)n, sizeof *ar.result),
    };
    starfold__pack_plan_t plan = { 0 };
    if (!out_slot || !ar.have || !ar.result) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", g->algorithm);
        goto out;
    }
    for (int p = 0; p < n; p++) out_slot[p] = starfold__graph_output_slot_on(g, g->input_devices[p]);
    SF_CHECK_GOTO(options->bytes_per_pack > 0
                      ? starfold__pack_plan_by_size(g->tensors, g->num_tensors, options->bytes_per_pack, &plan)
                      : starfold__pack_plan_concat_split(g->tensors, g->num_tensors, options->num_packs, &plan),
                  st, out);
    /* Every pack that holds anything costs at least one task. */
    size_t nonempty = 0;
    for (size_t i = 0; i < plan.npacks; i++) nonempty += plan.packs[i].count > 0;
    if (st == STARFOLD_OK) st = starfold__graph_reserve(g, nonempty);
    for (size_t i = 0; st == STARFOLD_OK && i < plan.npacks; i++) {
        ar.pack = &plan.packs[i];
        ar.tag = (int)plan.packs[i].index;
        SF_CHECK_GOTO(one_pack(&ar, pattern, self, out_slot), st, out);
    }
out:
    starfold__pack_plan_free(&plan);
    free(out_slot);
    free(ar.have);
    free(ar.result);
    return st;
}
