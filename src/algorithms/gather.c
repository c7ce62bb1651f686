/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Gather (STARFOLD_COLL_GATHER) by direct copies, TensorFlow's way: every destination reads every
 * source's tensor straight into its block, source order.
 *
 *   output(d, t) = [ input(0, t) | input(1, t) | ... | input(n-1, t) ]     for every destination d
 *                    ^ copy        ^ copy              ^ copy              (n copies per destination)
 *
 * Every copy is independent: they run in parallel, each over the link from its source to its
 * destination (or within the device for the destination's own block). The fallback of every
 * algorithm without a gather pattern of its own (compile.c); ring has one for all-gathers (ring.c).
 * Sources may hold different counts (source_counts): each block sits after the blocks before it.
 * MEAN divides as it copies: a SCALE task (divisor n) reads the source instead of a COPY.
 */
#include "config.h"

#include "algorithms/algorithms.h"
#include "base/common.h"

starfold_status_t starfold__gather_first_copy(starfold_graph_t g, starfold__span_t src, starfold__span_t dst, int tag)
{
    if (g->op == STARFOLD_OP_MEAN && g->num_inputs > 1)
        return starfold__graph_scale(g, src, dst, (uint32_t)g->num_inputs, tag, NULL);
    return starfold__graph_copy(g, STARFOLD_TASK_COPY, &src, 1, &dst, 1, tag, NULL);
}

int starfold__graph_is_all_gather(const struct starfold_graph *g)
{
    if (g->kind != STARFOLD_COLL_GATHER || g->num_outputs != g->num_inputs) return 0;
    for (int p = 0; p < g->num_inputs; p++)
        if (starfold__graph_output_slot_on(g, g->input_devices[p]) < 0) return 0;
    return 1;
}

starfold_status_t starfold__build_direct_gather(starfold_graph_t g)
{
    const int n = g->num_inputs;
    size_t nonempty = 0;
    for (size_t t = 0; t < g->num_tensors; t++)
        for (int s = 0; s < n; s++) nonempty += starfold__source_count(g, s, t) > 0;
    starfold_status_t st = starfold__graph_reserve(g, nonempty * (size_t)g->num_outputs);
    for (size_t t = 0; st == STARFOLD_OK && t < g->num_tensors; t++)
        for (int d = 0; st == STARFOLD_OK && d < g->num_outputs; d++)
            for (int s = 0; st == STARFOLD_OK && s < n; s++) {
                const size_t c = starfold__source_count(g, s, t);
                if (c == 0) continue;
                const starfold__span_t src = starfold__whole(g, starfold__graph_input(g, s, t));
                const starfold__span_t dst = starfold__span(starfold__graph_output(g, d, t), starfold__gather_offset(g, s, t), c);
                st = starfold__gather_first_copy(g, src, dst, (int)t);
            }
    return st;
}
