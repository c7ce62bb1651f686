/*
 * Steps the all-reduce algorithms share (hierarchical-copy, ring, halving-doubling, trees): packing a
 * replica's tensors into a pack and scattering a reduced pack back into its outputs. Pure graph
 * building, like the algorithms.
 *
 *   inputs of replica p ---pack (or nothing: a pack that is one whole tensor)---> have[p]
 *   ... the algorithm reduces the have[p] into results ...
 *   result of replica p ---unpack (or copy)---> outputs of replica p
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

int starfold__pack_is_tensor(const struct starfold_graph *g, const starfold__pack_t *pk)
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

starfold_status_t starfold__pack_gather(starfold_graph_t g, const starfold__pack_t *pk, int p,
                                 starfold__span_t *have)
{
    if (starfold__pack_is_tensor(g, pk)) {
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

starfold_status_t starfold__pack_result(starfold_graph_t g, const starfold__pack_t *pk, int p,
                                 int out_slot, starfold__span_t *dest)
{
    if (starfold__pack_is_tensor(g, pk)) {
        *dest = starfold__whole(g, starfold__graph_output(g, out_slot, pk->segs[0].tensor));
        return STARFOLD_OK;
    }
    size_t buf;
    starfold_status_t st = starfold__graph_add_temp(g, g->input_devices[p], starfold__graph_out_dtype(g, pk->dtype), pk->count,
                                             (int)pk->index, &buf);
    if (st == STARFOLD_OK) *dest = starfold__whole(g, buf);
    return st;
}

starfold_status_t starfold__pack_scatter(starfold_graph_t g, const starfold__pack_t *pk, int out_slot,
                                  starfold__span_t from)
{
    if (starfold__pack_is_tensor(g, pk)) {
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

starfold_status_t starfold__allreduce_prepare(starfold_graph_t g, const starfold_algo_options_t *options, int *out_slot,
                                       starfold__pack_plan_t *plan)
{
    memset(plan, 0, sizeof *plan);
    for (int p = 0; p < g->num_inputs; p++) out_slot[p] = starfold__graph_output_slot_on(g, g->input_devices[p]);
    return options->bytes_per_pack > 0 ? starfold__pack_plan_by_size(g->tensors, g->num_tensors, options->bytes_per_pack, plan)
                                       : starfold__pack_plan_concat_split(g->tensors, g->num_tensors, options->num_packs, plan);
}
