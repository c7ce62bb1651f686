/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * reduce-to-one: TensorFlow's ReductionToOneDevice (doc/tensorflow-semantics.md section 3).
 *
 * Every tensor is reduced on one device R (the reduce_to_device option, else the first destination),
 * reading each replica's tensor over the link to R, in replica order; MEAN divides by the number of
 * replicas there, before copying; then R's result is copied to every other destination.
 *
 *      replica 0 ----\
 *      replica 1 -----+--> [reduce on R] --> [scale /n] --+--> out on R (when R is a destination)
 *      replica 2 ----/                                   +--> copy --> out on dst 1
 *                                                          +--> copy --> out on dst 2
 *
 * No batching, as in TensorFlow: tensors are reduced one by one, so the task count grows with the
 * number of tensors. Broadcast is TensorFlow's simple_broadcast: one copy per destination.
 */
#include "config.h"

#include "algorithms/algorithms.h"
#include "base/common.h"

/*
 * Copies the source straight to every destination. When a destination is on the source's own device
 * its copy comes last, after every other copy has read the source: the caller may pass the same
 * handle as input and output there (in place).
 */
starfold_status_t starfold__build_simple_broadcast(starfold_graph_t g)
{
    starfold_status_t st;
    const int own = starfold__graph_output_slot_on(g, g->input_devices[0]);
    for (size_t t = 0; t < g->num_tensors; t++) {
        if (g->tensors[t].count == 0) continue;
        starfold__span_t src = starfold__whole(g, starfold__graph_input(g, 0, t));
        size_t first = g->nnodes, node;
        for (int d = 0; d < g->num_outputs; d++) {
            if (d == own) continue;
            starfold__span_t dst = starfold__whole(g, starfold__graph_output(g, d, t));
            if ((st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &src, 1, &dst, 1, (int)t, NULL)) != STARFOLD_OK) return st;
        }
        if (own < 0) continue;
        starfold__span_t dst = starfold__whole(g, starfold__graph_output(g, own, t));
        if ((st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &src, 1, &dst, 1, (int)t, &node)) != STARFOLD_OK) return st;
        for (size_t k = first; k < node; k++)
            if ((st = starfold__graph_add_dep(g, k, node)) != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

starfold_status_t starfold__build_reduce_to_one(starfold_graph_t g, int reduce_device)
{
    starfold_status_t st = STARFOLD_OK;
    const int n = g->num_inputs;
    const int home = starfold__graph_output_slot_on(g, reduce_device);
    /* MEAN accumulates a SUM, then divides: the division is its own task, as TensorFlow's `/ n`. */
    const starfold_op_t acc = starfold__op_accumulation(g->op);
    starfold__span_t *src = malloc(sizeof *src * (size_t)n);
    if (!src) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "reduce-to-one: out of memory");

    for (size_t t = 0; t < g->num_tensors; t++) {
        const size_t count = g->tensors[t].count;
        if (count == 0) continue;
        for (int s = 0; s < n; s++) src[s] = starfold__whole(g, starfold__graph_input(g, s, t));
        /*
         * The result lands in R's output when R is a destination, else in a temporary on R. MEAN
         * reduces into a temporary first and divides into the result, so no output is written twice;
         * a promoted integer MEAN divides the integer sum into a float64 result (TensorFlow's truediv).
         */
        const starfold_dtype_t dt = g->tensors[t].dtype, out_dt = starfold__graph_out_dtype(g, dt);
        const int scale = g->op == STARFOLD_OP_MEAN && (n > 1 || out_dt != dt);
        size_t res_buf, acc_buf;
        if (home >= 0) res_buf = starfold__graph_output(g, home, t);
        else SF_CHECK_GOTO(starfold__graph_add_temp(g, reduce_device, out_dt, count, (int)t, &res_buf), st, out);
        if (scale && (home >= 0 || out_dt != dt))
            SF_CHECK_GOTO(starfold__graph_add_temp(g, reduce_device, g->tensors[t].dtype, count, (int)t, &acc_buf), st, out);
        else acc_buf = res_buf;
        starfold__span_t res = starfold__whole(g, res_buf), accs = starfold__whole(g, acc_buf);
        SF_CHECK_GOTO(starfold__graph_reduce(g, acc, src, (size_t)n, accs, (int)t, NULL), st, out);
        if (scale) SF_CHECK_GOTO(starfold__graph_scale(g, accs, res, (uint32_t)n, (int)t, NULL), st, out);
        for (int d = 0; d < g->num_outputs; d++) {
            if (d == home) continue;
            starfold__span_t dst = starfold__whole(g, starfold__graph_output(g, d, t));
            SF_CHECK_GOTO(starfold__graph_copy(g, STARFOLD_TASK_COPY, &res, 1, &dst, 1, (int)t, NULL), st, out);
        }
    }
out:
    free(src);
    return st;
}

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    const int r = options->reduce_to_device;
    return starfold__build_reduce_to_one(g, r >= 0 ? r : g->output_devices[0]);
}

const starfold__algorithm_t starfold__algo_reduce_to_one = {
    .name = "reduce-to-one",
    .description = "TensorFlow's ReductionToOneDevice: reduce each tensor on one device, then copy it out",
    .supports = STARFOLD__SUPPORTS_REDUCE, /* an all-reduce too, as a reduce on one device */
    .options = STARFOLD_ALGO_OPTION_REDUCE_TO_DEVICE,
    .build = build,
};
