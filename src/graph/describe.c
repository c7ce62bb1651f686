/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Words for graphs and sizes, shared by the exported pictures and the traffic tables.
 */
#include "config.h"

#include <stdio.h>

#include "base/common.h"
#include "graph/graph.h"

static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

/* "512 B", "4.0 KiB", "1.5 MiB", "2.0 GiB". */
void starfold__human_bytes(uint64_t bytes, char *s, size_t n)
{
    static const char *const unit[] = { "KiB", "MiB", "GiB" };
    if (bytes < 1024) {
        snprintf(s, n, "%llu B", (unsigned long long)bytes);
        return;
    }
    double v = (double)bytes / 1024;
    int k = 0;
    while (v >= 1024 && k < 2) {
        v /= 1024;
        k++;
    }
    snprintf(s, n, "%.1f %s", v, unit[k]);
}

/* "all-reduce (sum) of 8 replicas", "reduce (mean) of 4 replicas to 2 devices", "broadcast ...". */
void starfold__graph_describe(const struct starfold_graph *g, char *s, size_t n)
{
    if (g->kind == STARFOLD_COLL_BROADCAST) {
        snprintf(s, n, "broadcast from device %d to %d device%s", g->num_inputs ? g->input_devices[0] : -1,
                 g->num_outputs, plural((size_t)g->num_outputs));
        return;
    }
    int all = g->num_outputs == g->num_inputs;
    for (int d = 0; all && d < g->num_outputs; d++) {
        int found = 0;
        for (int s2 = 0; s2 < g->num_inputs; s2++) found |= g->input_devices[s2] == g->output_devices[d];
        all = found;
    }
    if (g->kind == STARFOLD_COLL_GATHER) {
        if (all) snprintf(s, n, "all-gather of %d replica%s", g->num_inputs, plural((size_t)g->num_inputs));
        else
            snprintf(s, n, "gather of %d replica%s to %d device%s", g->num_inputs, plural((size_t)g->num_inputs),
                     g->num_outputs, plural((size_t)g->num_outputs));
        return;
    }
    if (all)
        snprintf(s, n, "all-reduce (%s) of %d replica%s", starfold_op_name(g->op), g->num_inputs,
                 plural((size_t)g->num_inputs));
    else
        snprintf(s, n, "reduce (%s) of %d replica%s to %d device%s", starfold_op_name(g->op), g->num_inputs,
                 plural((size_t)g->num_inputs), g->num_outputs, plural((size_t)g->num_outputs));
}
