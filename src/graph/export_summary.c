/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The summarised picture of a big graph (export.h).
 */
#include "config.h"

#include <stdio.h>

#include "base/common.h"
#include "base/palette.h"
#include "graph/export.h"
#include "topology/topology.h"

/* ------------------------------------------------------------------------------------------------
 * The summarised picture of a big graph (STARFOLD_DRAW_SUMMARY, and AUTO above the threshold):
 *
 *   cluster device 3:   [reduce x 8, round 2] ==== 4.0 MiB, nvlink ===> [copy x 8, round 3] ...
 *
 * Tasks of one kind on one device at one round (the length of the longest dependency chain before
 * them) are one node with their count; the edges between two groups are one edge with their bytes.
 * Graphviz lays out hundreds of groups in seconds where it took minutes for thousands of tasks.
 */
typedef struct sum_edge {
    size_t from, to; /* groups */
    uint64_t bytes;
} sum_edge_t;

static int cmp_sum_edge(const void *a, const void *b)
{
    const sum_edge_t *x = a, *y = b;
    if (x->from != y->from) return x->from < y->from ? -1 : 1;
    return x->to < y->to ? -1 : x->to > y->to;
}

typedef struct sum_key {
    int device, kind;
    size_t level, node; /* level: the round, 0 when rounds are folded; node: the first task, for a stable order */
    size_t lo, hi;      /* the rounds its tasks are in */
} sum_key_t;

static int cmp_sum_key(const void *a, const void *b)
{
    const sum_key_t *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    if (x->level != y->level) return x->level < y->level ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/*
 * Groups of @g's tasks: group[i] for task i; returns the group count (0 on out of memory). Tasks of one
 * kind on one device in one round; with @fold, in any round (the rounds a group spans in lo..hi).
 */
static size_t summary_groups(const struct starfold_graph *g, int fold, size_t *group, sum_key_t **keys_out)
{
    size_t *level = malloc(sizeof *level * (g->nnodes ? g->nnodes : 1));
    sum_key_t *keys = malloc(sizeof *keys * (g->nnodes ? g->nnodes : 1));
    if (!level || !keys) {
        free(level);
        free(keys);
        return 0;
    }
    starfold__graph_task_rounds(g, level);
    for (size_t i = 0; i < g->nnodes; i++)
        keys[i] = (sum_key_t){ g->nodes[i].device, (int)g->nodes[i].kind, fold ? 0 : level[i], i, level[i], level[i] };
    qsort(keys, g->nnodes, sizeof *keys, cmp_sum_key);
    size_t ng = 0;
    for (size_t j = 0; j < g->nnodes; j++) {
        const size_t r = level[keys[j].node];
        if (j == 0 || keys[j].device != keys[ng - 1].device || keys[j].kind != keys[ng - 1].kind ||
            keys[j].level != keys[ng - 1].level)
            keys[ng++] = keys[j];
        if (r < keys[ng - 1].lo) keys[ng - 1].lo = r;
        if (r > keys[ng - 1].hi) keys[ng - 1].hi = r;
        group[keys[j].node] = ng - 1;
    }
    free(level);
    *keys_out = keys;
    return ng;
}

starfold_status_t starfold__export_summary(exporter_t *x, size_t max_groups)
{
    const struct starfold_graph *g = x->g;
    starfold_status_t st = STARFOLD_OK;
    size_t *group = malloc(sizeof *group * (g->nnodes ? g->nnodes : 1)), *count = NULL;
    sum_key_t *keys = NULL;
    sum_edge_t *edges = NULL;
    Agnode_t **gnode = NULL;
    ranges_t seen = { NULL, 0, 0 };
    uint64_t *bytes = NULL;
    size_t ng = group ? summary_groups(g, 0, group, &keys) : 0, ne = 0, cap = 0;
    const int fold = ng > SUMMARY_FOLD_GROUPS; /* too many rounds to read: one node per kind and device */
    if (fold) {
        free(keys);
        keys = NULL;
        ng = summary_groups(g, 1, group, &keys);
    }
    if (!ng && g->nnodes) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory summarising a graph");
        goto out;
    }
    if (ng > max_groups) {
        st = starfold__error(STARFOLD_ERR_NOT_SUPPORTED,
                             "%s: %zu tasks summarise to %zu groups, more than Graphviz lays out in reasonable time "
                             "(%zu); write the graph as .dot, or read its tables (starfold graph without -o)",
                             g->algorithm, g->nnodes, ng, max_groups);
        goto out;
    }
    count = calloc(ng ? ng : 1, sizeof *count);
    gnode = calloc(ng ? ng : 1, sizeof *gnode);
    if (!count || !gnode) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory summarising a graph");
        goto out;
    }
    for (size_t i = 0; i < g->nnodes; i++) count[group[i]]++;
    SF_CHECK_GOTO(starfold__export_label(x), st, out);
    {
        const char *label = agget(x->ag, "label");
        starfold__agset(x->ag, "label", "%s\\nsummary: %zu tasks as %zu groups (tasks of one kind on one device%s); "
                        "starfold graph --full draws every task", label ? label : "", g->nnodes, ng,
                        fold ? ", rounds folded" : " in one round");
    }
    SF_CHECK_GOTO(starfold__export_clusters(x), st, out);
    if (x->picture) starfold__agset(x->ag, "ranksep", "1.2"); /* room for the edges between the rounds */
    for (size_t k = 0; k < ng; k++) {
        char name[48];
        snprintf(name, sizeof name, "g%zu", k);
        if (!(gnode[k] = starfold__export_node(x, keys[k].device, name))) {
            st = STARFOLD_ERR_OUT_OF_MEMORY;
            goto out;
        }
        starfold__agset(gnode[k], "shape", "box");
        starfold__agset(gnode[k], "style", "filled,rounded");
        starfold__agset(gnode[k], "fillcolor", "%s", starfold__kind_fill(keys[k].kind));
        const char *kind = starfold_task_kind_name((starfold_task_kind_t)keys[k].kind);
        if (keys[k].lo == keys[k].hi)
            starfold__agset(gnode[k], "label", "%s x %zu\\nround %zu", kind, count[k], keys[k].lo);
        else
            starfold__agset(gnode[k], "label", "%s x %zu\\nrounds %zu-%zu", kind, count[k], keys[k].lo, keys[k].hi);
        SF_CHECK_GOTO(starfold__export_pin_row(x, gnode[k], keys[k].lo), st, out);
    }
    size_t maxdeps = 1;
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].ndeps > maxdeps) maxdeps = g->nodes[i].ndeps;
    if (!(bytes = malloc(maxdeps * sizeof *bytes))) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory summarising a graph");
        goto out;
    }
    for (size_t i = 0; i < g->nnodes; i++) {
        const starfold__node_t *n = &g->nodes[i];
        SF_CHECK_GOTO(starfold__graph_dep_bytes(g, i, bytes, &seen), st, out);
        for (size_t k = 0; k < n->ndeps; k++) {
            if (SF_GROW(edges, ne, cap) != 0) {
                st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory summarising a graph");
                goto out;
            }
            edges[ne++] = (sum_edge_t){ group[n->deps[k]], group[i], bytes[k] };
        }
    }
    qsort(edges, ne, sizeof *edges, cmp_sum_edge);
    for (size_t j = 0; j < ne;) {
        size_t e = j;
        uint64_t b = 0;
        for (; e < ne && edges[e].from == edges[j].from && edges[e].to == edges[j].to; e++) b += edges[e].bytes;
        SF_CHECK_GOTO(starfold__export_edge(x, gnode[edges[j].from], gnode[edges[j].to], b, keys[edges[j].from].device,
                               keys[edges[j].to].device),
                      st, out);
        j = e;
    }
out:
    free(group);
    free(count);
    free(keys);
    free(edges);
    free(gnode);
    free(bytes);
    free(seen.r);
    return st;
}

