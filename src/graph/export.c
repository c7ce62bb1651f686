/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Graph export through cgraph: the graph is built as an Agraph_t and written by agwrite() (DOT) or
 * laid out and rendered by starfold__agraph_save() (SVG, PNG). No DOT text is printed by hand.
 *
 * Picture (the DOT files committed under graphs/ are the long form):
 *
 *   cluster_dev0 "gpu0 (device 0)"          cluster_dev1 "gpu1 (device 1)"
 *     (in_0_0)                                (in_1_0)
 *        |  4.0 MiB                              |
 *     [t0 reduce (sum)] <====== 4.0 MiB, nvlink =+      <- bold, coloured: crosses devices
 *        |                 \
 *     [t1 copy]             \===== 4.0 MiB, nvlink ===> [t2 copy]
 *        |                                               |
 *     <out_0_0>                                       <out_1_0>
 *
 * Nodes: tN for task N (box, filled by kind), in_S_T / out_D_T for the buffers of slot S/D and tensor
 * T (ellipse / note), or one in_S / out_D per slot when there are more than 64 tensors. Edges: every
 * dependency, labelled with the bytes the consumer reads from the producer's writes (dashed, no label
 * when it only orders), plus input -> reader and writer -> output.
 *
 * Determinism: cgraph writes nodes and edges in creation order, and nodes, clusters and edges are
 * created in a fixed order (devices, slots, tensors, tasks by index). Subgraphs, though, are written
 * in the order of their IDs, which cgraph's default ID discipline takes from the address of the
 * interned name: see ag_ids_t. Nothing else that varies (pointers, times) reaches the output.
 */
#include "config.h"

#include "base/common.h"
#include "base/gv.h"
#include "graph/palette.h"
#include "graph/export.h"
#include "graph/graph.h"
#include "topology/topology.h"

#include <errno.h>
#include <stdio.h>

/* More tensors than this and buffers are drawn one node per slot. */
#define AGGREGATE_TENSORS 64

/* ------------------------------------------------------------------------------------------------ */
/* The cgraph graph                                                                                 */

/* Opens the root graph with @ids as its ID discipline; @ids must outlive it. */
static Agraph_t *ag_open(ag_ids_t *ids)
{
    starfold__ag_ids_init(ids);
    ids->disc.mem = AgDefaultDisc.mem;
    ids->disc.id = &ids->id;
    ids->disc.io = AgDefaultDisc.io;
    Agraph_t *ag = agopen("starfold", Agdirected, &ids->disc);
    if (!ag) return NULL;
    /*
     * Defaults, written once as node [...] and edge [...]. The node label default is declared even
     * though it is Graphviz's own: gvContext() sets it on cgraph's prototype graph for every graph
     * opened afterwards, so DOT written after a render would otherwise differ from DOT written before.
     */
    agattr(ag, AGNODE, "label", "\\N");
    agattr(ag, AGNODE, "shape", "box");
    agattr(ag, AGNODE, "style", "filled");
    agattr(ag, AGNODE, "fillcolor", "white");
    agattr(ag, AGNODE, "fontname", "Helvetica");
    agattr(ag, AGNODE, "fontsize", "10");
    agattr(ag, AGEDGE, "fontname", "Helvetica");
    agattr(ag, AGEDGE, "fontsize", "9");
    return ag;
}

starfold_status_t starfold__export_label(exporter_t *x)
{
    const struct starfold_graph *g = x->g;
    starfold_graph_stats_t st;
    starfold_status_t rc = starfold_graph_stats((starfold_graph_t)g, &st);
    if (rc != STARFOLD_OK) return rc;
    char coll[128], moved[32];
    starfold__graph_describe(g, coll, sizeof coll);
    starfold__human_bytes(st.bytes_moved, moved, sizeof moved);
    starfold__agset(x->ag, "label", "%s: %s, %zu tensor%s\\ntopology %s: %zu tasks, %s across devices", g->algorithm, coll,
             g->num_tensors, (g->num_tensors == 1 ? "" : "s"), starfold_topology_name(g->topology), g->nnodes, moved);
    starfold__agset(x->ag, "labelloc", "t");
    starfold__agset(x->ag, "rankdir", "TB");
    /* Graphviz's classic ranking fails ("trouble in init_rank") and then crashes on some graphs whose
     * edges cross many clusters; the newer global ranking lays them all out. */
    starfold__agset(x->ag, "newrank", "true");
    starfold__agset(x->ag, "fontname", "Helvetica");
    return STARFOLD_OK;
}

/* Devices that draw something: a buffer (not a temporary) or a task. */
static void used_devices(const struct starfold_graph *g, int *used)
{
    for (size_t b = 0; b < g->nbufs; b++)
        if (g->bufs[b].kind != SF_BUF_TEMP) used[g->bufs[b].device] = 1;
    for (size_t i = 0; i < g->nnodes; i++) used[g->nodes[i].device] = 1;
}

/*
 * The topology's groups that a picture draws around the device boxes, group[d] for device d (-1: in
 * none); returns how many. Hierarchical copy: its two halves (starfold_topology_bisect() of the
 * replicas, the DGX-1's quads); any other algorithm: the CPU sockets. Fewer than two groups among the
 * devices drawn: none (a box around everything says nothing).
 */
static int device_groups(const struct starfold_graph *g, const int *used, int *group, char (*label)[64])
{
    for (int d = 0; d < STARFOLD_MAX_DEVICES; d++) group[d] = -1;
    const starfold_topology_t t = g->topology;
    int ng = 0;
    /* Hierarchical copy's halves exist in its all-reduce only (a reduce elsewhere, a broadcast: the fallbacks). */
    if (!strcmp(g->algorithm, "hierarchical-copy") && g->kind == STARFOLD_COLL_REDUCE && g->num_inputs >= 2 &&
        g->num_outputs == g->num_inputs) {
        int half[STARFOLD_MAX_DEVICES];
        if (starfold_topology_bisect(t, g->num_inputs, g->input_devices, half) != STARFOLD_OK) return 0;
        for (int s = 0; s < g->num_inputs; s++) group[g->input_devices[s]] = half[s];
        ng = 2;
        snprintf(label[0], sizeof label[0], "group A (hierarchical copy)");
        snprintf(label[1], sizeof label[1], "group B (hierarchical copy)");
    } else {
        for (int d = 0; d < STARFOLD_MAX_DEVICES && d < t->num_devices; d++)
            if (used[d] && t->devices[d].socket >= 0 && t->devices[d].socket < STARFOLD_MAX_DEVICES)
                group[d] = t->devices[d].socket;
        for (int d = 0; d < STARFOLD_MAX_DEVICES; d++) /* sockets renumbered in order of first device */
            if (group[d] >= ng) {
                const int sock = group[d];
                for (int e = d; e < STARFOLD_MAX_DEVICES; e++)
                    if (group[e] == sock) group[e] = -2 - ng;
                snprintf(label[ng], sizeof label[ng], "socket %d", sock);
                ng++;
            }
        for (int d = 0; d < STARFOLD_MAX_DEVICES; d++)
            if (group[d] <= -2) group[d] = -2 - group[d];
    }
    int seen[STARFOLD_MAX_DEVICES] = { 0 }, distinct = 0;
    for (int d = 0; d < STARFOLD_MAX_DEVICES; d++)
        if (used[d] && group[d] >= 0 && !seen[group[d]]++) distinct++;
    if (distinct < 2) {
        for (int d = 0; d < STARFOLD_MAX_DEVICES; d++) group[d] = -1;
        return 0;
    }
    return ng;
}

/* The order the device boxes are drawn left to right: by group (in order of its first device), then device. */
static int device_order(const int *used, const int *group, int *order)
{
    int n = 0;
    for (int d = 0; d < STARFOLD_MAX_DEVICES; d++)
        if (used[d] && group[d] < 0) order[n++] = d;
    int done[STARFOLD_MAX_DEVICES] = { 0 };
    for (int d = 0; d < STARFOLD_MAX_DEVICES; d++) {
        if (!used[d] || group[d] < 0 || done[group[d]]) continue;
        done[group[d]] = 1;
        for (int e = d; e < STARFOLD_MAX_DEVICES; e++)
            if (used[e] && group[e] == group[d]) order[n++] = e;
    }
    return n;
}

/*
 * Graphviz orders clusters to cut edge crossings, not by name (device boxes came out 0,1,4,2,3,...).
 * A picture pins the order: an invisible point at the top of each device box, all on one rank, chained
 * left to right by invisible edges in device order (flat edges keep their direction).
 */
static starfold_status_t order_clusters(exporter_t *x, const int *order, int n)
{
    if (n < 2) return STARFOLD_OK;
    Agraph_t *row = agsubg(x->ag, "device_order", 1);
    if (!row) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create a subgraph");
    starfold__agset(row, "rank", "min");
    Agnode_t *prev = NULL;
    for (int k = 0; k < n; k++) {
        char name[32];
        snprintf(name, sizeof name, "order_dev%d", order[k]);
        Agnode_t *a = agnode(x->cluster[order[k]], name, 1);
        if (!a || !agsubnode(row, a, 1))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create node %s", name);
        starfold__agset(a, "shape", "point");
        starfold__agset(a, "style", "invis");
        starfold__agset(a, "width", "0.01");
        starfold__agset(a, "label", "%s", "");
        if (prev) {
            Agedge_t *e = agedge(x->ag, prev, a, NULL, 1);
            if (!e) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create an edge");
            starfold__agset(e, "style", "invis");
            starfold__agset(e, "weight", "10");
        }
        prev = a;
    }
    return STARFOLD_OK;
}

/* Light backgrounds of the device boxes of the topology's groups, in group order. */
static const char *const group_fill[] = { "#f0f4ff", "#fff6e8", "#eefaee", "#fbeefa" };

/*
 * One cluster per device that draws something, in device order. A picture also shows the topology's
 * groups (a shared background and the group's name in each device box's label) and pins the boxes'
 * left-to-right order; a .dot file has the device clusters only. The groups are not clusters around
 * the device boxes: dot reorders clusters nested in clusters whatever the edges say.
 */
starfold_status_t starfold__export_clusters(exporter_t *x)
{
    const struct starfold_graph *g = x->g;
    int used[STARFOLD_MAX_DEVICES] = { 0 }, group[STARFOLD_MAX_DEVICES], order[STARFOLD_MAX_DEVICES];
    char glabel[STARFOLD_MAX_DEVICES][64];
    used_devices(g, used);
    if (!x->picture || !device_groups(g, used, group, glabel))
        for (int d = 0; d < STARFOLD_MAX_DEVICES; d++) group[d] = -1;
    const int n = device_order(used, group, order);
    for (int k = 0; k < n; k++) { /* device boxes, created left to right */
        const int d = order[k];
        char name[32], what[96] = "";
        snprintf(name, sizeof name, "cluster_dev%d", d);
        if (!(x->cluster[d] = agsubg(x->ag, name, 1)))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create cluster %s", name);
        const char *dn = starfold_topology_device_name(g->topology, d);
        if (dn) snprintf(what, sizeof what, "%s (device %d)", dn, d);
        else snprintf(what, sizeof what, "device %d", d);
        if (group[d] >= 0) starfold__agset(x->cluster[d], "label", "%s\\n%s", what, glabel[group[d]]);
        else starfold__agset(x->cluster[d], "label", "%s", what);
        starfold__agset(x->cluster[d], "style", group[d] >= 0 ? "rounded,filled" : "rounded");
        if (group[d] >= 0)
            starfold__agset(x->cluster[d], "fillcolor", "%s",
                            group_fill[group[d] % (int)(sizeof group_fill / sizeof group_fill[0])]);
        starfold__agset(x->cluster[d], "color", "gray60");
        if (x->picture) starfold__agset(x->cluster[d], "fontname", "Helvetica");
    }
    return x->picture ? order_clusters(x, order, n) : STARFOLD_OK;
}

Agnode_t *starfold__export_node(exporter_t *x, int device, const char *name)
{
    Agnode_t *n = agnode(x->cluster[device], (char *)name, 1);
    if (!n) starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create node %s", name);
    return n;
}

/*
 * Rows of a picture. Edges between devices are not there when dot lays the picture out (see
 * add_late_edges()), so the rows come from the graph: a task is drawn on the row of its round (the
 * longest dependency chain before it), inputs on the top row, outputs on the bottom one.
 */
starfold_status_t starfold__export_pin_row(exporter_t *x, Agnode_t *n, size_t round)
{
    if (!x->picture) return STARFOLD_OK;
    if (round >= x->nrank) {
        Agraph_t **r = realloc(x->rank, (round + 1) * sizeof *r);
        if (!r) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory exporting a graph");
        memset(r + x->nrank, 0, (round + 1 - x->nrank) * sizeof *r);
        x->rank = r;
        x->nrank = round + 1;
    }
    if (!x->rank[round]) {
        char name[48];
        snprintf(name, sizeof name, "round%zu", round);
        if (!(x->rank[round] = agsubg(x->ag, name, 1)))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create a subgraph");
        starfold__agset(x->rank[round], "rank", "same");
    }
    return agsubnode(x->rank[round], n, 1) ? STARFOLD_OK
                                            : starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory exporting a graph");
}

/* Puts a buffer node of a picture on the top (inputs) or bottom (outputs) row. */
static starfold_status_t pin_side(exporter_t *x, Agnode_t *n, int output)
{
    if (!x->picture) return STARFOLD_OK;
    if (!x->side[output]) {
        if (!(x->side[output] = agsubg(x->ag, output ? "outputs" : "inputs", 1)))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create a subgraph");
        starfold__agset(x->side[output], "rank", "%s", output ? "max" : "min");
    }
    return agsubnode(x->side[output], n, 1) ? STARFOLD_OK
                                             : starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory exporting a graph");
}

/*
 * The rows in round order: an invisible point on each row, chained top to bottom. Without it a row
 * whose tasks only depend on other devices' (edges dot does not see, add_late_edges()) could float up.
 */
static starfold_status_t chain_rows(exporter_t *x)
{
    Agnode_t *prev = NULL;
    for (size_t r = 0; r < x->nrank; r++) {
        if (!x->rank[r]) continue;
        char name[48];
        snprintf(name, sizeof name, "row%zu", r);
        Agnode_t *n = agnode(x->ag, name, 1);
        if (!n || !agsubnode(x->rank[r], n, 1))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create node %s", name);
        starfold__agset(n, "shape", "point");
        starfold__agset(n, "style", "invis");
        starfold__agset(n, "width", "0.01");
        starfold__agset(n, "label", "%s", "");
        if (prev) {
            Agedge_t *e = agedge(x->ag, prev, n, NULL, 1);
            if (!e) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create an edge");
            starfold__agset(e, "style", "invis");
        }
        prev = n;
    }
    return STARFOLD_OK;
}

/* Round of each task: 0 without dependencies, else one more than its latest dependency's. */
void starfold__graph_task_rounds(const struct starfold_graph *g, size_t *round)
{
    for (size_t i = 0; i < g->nnodes; i++) { /* deps name earlier tasks: one pass in order */
        round[i] = 0;
        for (size_t k = 0; k < g->nodes[i].ndeps; k++)
            if (round[g->nodes[i].deps[k]] + 1 > round[i]) round[i] = round[g->nodes[i].deps[k]] + 1;
    }
}

/* Input or output nodes of one side, in slot then tensor order; aggregated per slot when many. */
static starfold_status_t add_buffer_nodes(exporter_t *x, int output)
{
    const struct starfold_graph *g = x->g;
    const int nslots = output ? g->num_outputs : g->num_inputs;
    const char *side = output ? "out" : "in";
    starfold_status_t st;
    for (int s = 0; s < nslots; s++) {
        const int dev = output ? g->output_devices[s] : g->input_devices[s];
        char name[64], size[32];
        Agnode_t *slot_node = NULL;
        if (x->aggregate) {
            uint64_t bytes = 0;
            for (size_t t = 0; t < g->num_tensors; t++) {
                const size_t b = output ? starfold__graph_output(g, s, t) : starfold__graph_input(g, s, t);
                bytes += (uint64_t)g->bufs[b].count * starfold_dtype_size(g->tensors[t].dtype);
            }
            starfold__human_bytes(bytes, size, sizeof size);
            snprintf(name, sizeof name, "%s_%d", side, s);
            if (!(slot_node = starfold__export_node(x, dev, name))) return STARFOLD_ERR_OUT_OF_MEMORY;
            if ((st = pin_side(x, slot_node, output)) != STARFOLD_OK) return st;
            starfold__agset(slot_node, "label", "%s slot %d: %zu tensors, %s", output ? "outputs" : "inputs", s,
                     g->num_tensors, size);
            starfold__agset(slot_node, "shape", output ? "note" : "ellipse");
            starfold__agset(slot_node, "fontsize", "8");
        }
        for (size_t t = 0; t < g->num_tensors; t++) {
            const size_t b = output ? starfold__graph_output(g, s, t) : starfold__graph_input(g, s, t);
            if (slot_node) {
                x->bufnode[b] = slot_node;
                continue;
            }
            snprintf(name, sizeof name, "%s_%d_%zu", side, s, t);
            Agnode_t *n = starfold__export_node(x, dev, name);
            if (!n) return STARFOLD_ERR_OUT_OF_MEMORY;
            starfold__human_bytes((uint64_t)g->bufs[b].count * starfold_dtype_size(g->bufs[b].dtype), size, sizeof size);
            starfold__agset(n, "label", "%s %d.%zu\\n%s", side, s, t, size);
            starfold__agset(n, "shape", output ? "note" : "ellipse");
            starfold__agset(n, "fontsize", "8");
            x->bufnode[b] = n;
            if ((st = pin_side(x, n, output)) != STARFOLD_OK) return st;
        }
    }
    return STARFOLD_OK;
}

/* "reduce (sum)\npack 3\n4.0 MiB": what the task does, which pack or tensor(s), bytes it writes. */
static void task_label(const exporter_t *x, const starfold__node_t *n, Agnode_t *an)
{
    char what[48], tag[64] = "", size[32];
    uint64_t bytes = 0;
    for (size_t k = 0; k < n->ndst; k++) bytes += starfold__span_bytes(x->g, n->dst[k]);
    starfold__human_bytes(bytes, size, sizeof size);
    if (n->kind == STARFOLD_TASK_REDUCE) /* MEAN reduces with a sum, a scale task divides */
        snprintf(what, sizeof what, "reduce (%s)", starfold__op_name(starfold__op_accumulation(n->op)));
    else if (n->kind == STARFOLD_TASK_SCALE)
        snprintf(what, sizeof what, "scale /%u", (unsigned)n->divisor);
    else
        snprintf(what, sizeof what, "%s", starfold_task_kind_name(n->kind));
    if (n->kind == STARFOLD_TASK_REDUCE && n->nseg > 1) /* a segmented reduce: its tensors from the first */
        snprintf(tag, sizeof tag, "\\ntensors %d+%zu", n->tag, n->nseg);
    else if (n->tag >= 0)
        snprintf(tag, sizeof tag, "\\n%s %d", x->tags_are_packs ? "pack" : "tensor", n->tag);
    starfold__agset(an, "label", "%s%s\\n%s", what, tag, size);
}

static starfold_status_t add_task_nodes(exporter_t *x)
{
    size_t *round = x->picture ? malloc((x->g->nnodes ? x->g->nnodes : 1) * sizeof *round) : NULL;
    if (x->picture && !round) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory exporting a graph");
    if (round) starfold__graph_task_rounds(x->g, round);
    starfold_status_t st = STARFOLD_OK;
    for (size_t i = 0; i < x->g->nnodes && st == STARFOLD_OK; i++) {
        const starfold__node_t *n = &x->g->nodes[i];
        char name[32];
        snprintf(name, sizeof name, "t%zu", i);
        if (!(x->task[i] = starfold__export_node(x, n->device, name))) {
            st = STARFOLD_ERR_OUT_OF_MEMORY;
            break;
        }
        task_label(x, n, x->task[i]);
        starfold__agset(x->task[i], "fillcolor", "%s", starfold__kind_fill(n->kind));
        if (round) st = starfold__export_pin_row(x, x->task[i], round[i]);
    }
    free(round);
    return st;
}

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

/* ------------------------------------------------------------------------------------------------ */

/* What the exporter relies on: devices in range and deps naming tasks (builders guarantee both). */
static starfold_status_t check_drawable(const struct starfold_graph *g)
{
    for (size_t b = 0; b < g->nbufs; b++)
        if (g->bufs[b].device < 0 || g->bufs[b].device >= STARFOLD_MAX_DEVICES)
            return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "%s: buffer %zu is on device %d", g->algorithm, b,
                            g->bufs[b].device);
    for (size_t i = 0; i < g->nnodes; i++) {
        const starfold__node_t *n = &g->nodes[i];
        if (n->device < 0 || n->device >= STARFOLD_MAX_DEVICES || (int)n->kind < 0 ||
            (int)n->kind >= STARFOLD_TASK_KIND_COUNT)
            return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "%s: task %zu has kind %d on device %d", g->algorithm, i,
                            (int)n->kind, n->device);
        for (size_t k = 0; k < n->ndeps; k++)
            if (n->deps[k] >= g->nnodes)
                return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "%s: task %zu depends on task %zu of %zu", g->algorithm,
                                i, n->deps[k], g->nnodes);
    }
    return STARFOLD_OK;
}

/*
 * The legend of a rendered picture (not of a .dot file, which stays the data): the task kinds drawn,
 * what an edge's style says, and the link colours of the edges that cross devices.
 */
static void add_legend(exporter_t *x)
{
    const struct starfold_graph *g = x->g;
    int kinds[STARFOLD_TASK_KIND_COUNT] = { 0 };
    for (size_t i = 0; i < g->nnodes; i++) kinds[g->nodes[i].kind] = 1;
    char html[4096];
    size_t n = (size_t)snprintf(html, sizeof html,
                                "<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"3\">"
                                "<tr><td colspan=\"2\"><b>legend</b></td></tr>");
    static const char *const what[STARFOLD_TASK_KIND_COUNT] = {
        [STARFOLD_TASK_COPY] = "task: copies a range",
        [STARFOLD_TASK_REDUCE] = "task: reduces ranges with the op",
        [STARFOLD_TASK_SCALE] = "task: divides by the replica count (MEAN)",
        [STARFOLD_TASK_PACK] = "task: tensors into one pack buffer",
        [STARFOLD_TASK_UNPACK] = "task: a pack buffer back into tensors",
    };
    for (int k = 0; k < STARFOLD_TASK_KIND_COUNT && n < sizeof html; k++)
        if (kinds[k])
            n += (size_t)snprintf(html + n, sizeof html - n, "<tr><td bgcolor=\"%s\">%s</td><td align=\"left\">%s</td></tr>",
                                  starfold__kind_fill(k), starfold_task_kind_name((starfold_task_kind_t)k), what[k]);
    static const starfold_link_kind_t links[] = { STARFOLD_LINK_NVLINK, STARFOLD_LINK_PCIE, STARFOLD_LINK_INTER_SOCKET,
                                                  STARFOLD_LINK_HOST, STARFOLD_LINK_SHM, STARFOLD_LINK_NETWORK };
    for (size_t k = 0; k < sizeof links / sizeof links[0] && n < sizeof html; k++)
        if (x->drawn & (DRAWN_LINK << links[k]))
            n += (size_t)snprintf(html + n, sizeof html - n,
                              "<tr><td><font color=\"%s\"><b>&#8212;&#8212;&#8212;</b></font></td>"
                              "<td align=\"left\">bytes to another device over %s</td></tr>",
                              starfold__link_colour(links[k]), starfold_link_kind_name(links[k]));
    if (n < sizeof html && (x->drawn & DRAWN_NO_LINK))
        n += (size_t)snprintf(html + n, sizeof html - n,
                              "<tr><td><font color=\"%s\"><b>&#8212;&#8212;&#8212;</b></font></td><td align=\"left\">"
                              "bytes to another device with no direct link</td></tr>", SF_NO_LINK_COLOUR);
    if (n < sizeof html && (x->drawn & DRAWN_LOCAL))
        n += (size_t)snprintf(html + n, sizeof html - n,
                              "<tr><td>&#8212;&#8212;&#8212;</td><td align=\"left\">bytes within a device</td></tr>");
    if (n < sizeof html && (x->drawn & DRAWN_ORDER))
        n += (size_t)snprintf(html + n, sizeof html - n,
                              "<tr><td><font color=\"gray50\">- - - -</font></td><td align=\"left\">order only: the "
                              "task waits for the other, no data read</td></tr>");
    if (n < sizeof html)
        snprintf(html + n, sizeof html - n,
                 "<tr><td colspan=\"2\" align=\"left\">edge labels: bytes the task reads; boxes: devices</td></tr></table>");
    starfold__add_legend(x->ag, html);
}

/* Builds the cgraph picture of @g into @x->ag (opened by the caller). */
static starfold_status_t build(exporter_t *x)
{
    const struct starfold_graph *g = x->g;
    starfold_status_t st;
    x->aggregate = g->num_tensors > AGGREGATE_TENSORS;
    for (size_t i = 0; i < g->nnodes; i++)
        x->tags_are_packs |= g->nodes[i].kind == STARFOLD_TASK_PACK || g->nodes[i].kind == STARFOLD_TASK_UNPACK;
    x->task = calloc(g->nnodes ? g->nnodes : 1, sizeof *x->task);
    x->bufnode = calloc(g->nbufs ? g->nbufs : 1, sizeof *x->bufnode);
    if (!x->task || !x->bufnode) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory exporting a graph");
    if ((st = starfold__export_label(x)) != STARFOLD_OK) return st;
    if ((st = starfold__export_clusters(x)) != STARFOLD_OK) return st;
    if ((st = add_buffer_nodes(x, 0)) != STARFOLD_OK) return st;
    if ((st = add_task_nodes(x)) != STARFOLD_OK) return st;
    if ((st = add_buffer_nodes(x, 1)) != STARFOLD_OK) return st;
    return starfold__export_edges(x);
}

/*
 * The edges between device boxes, once dot has placed the boxes. Laid out with them, dot reorders
 * whole clusters to cut crossings (device boxes came out 0,1,4,2,3,...) and no flat edge, ordering
 * attribute or constraint=false holds them; added afterwards they are routed where the boxes are.
 */
static starfold_status_t add_late_edges(void *arg)
{
    exporter_t *x = arg;
    x->adding_late = 1;
    for (size_t k = 0; k < x->nlate; k++) {
        const struct late_edge *l = &x->late[k];
        starfold_status_t st = starfold__export_edge(x, l->tail, l->head, l->bytes, l->from, l->to);
        if (st != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

/*
 * Nodes on the widest row of @g's full picture: the tasks of its busiest round, or the input or output
 * buffers drawn (one per tensor and slot, or one per slot past AGGREGATE_TENSORS). Graphviz draws a
 * row of 128 boxes 22,000 pixels wide: past STARFOLD_DRAW_SUMMARY_ROW the picture is the summary.
 * SIZE_MAX when out of memory (the summary then, which needs less).
 */
static size_t widest_row(const struct starfold_graph *g)
{
    const size_t per_slot = g->num_tensors > AGGREGATE_TENSORS ? 1 : g->num_tensors;
    size_t widest = per_slot * (size_t)(g->num_inputs > g->num_outputs ? g->num_inputs : g->num_outputs);
    size_t *round = malloc((g->nnodes ? g->nnodes : 1) * sizeof *round);
    size_t *count = calloc(g->nnodes ? g->nnodes : 1, sizeof *count);
    if (!round || !count) {
        free(round);
        free(count);
        return SIZE_MAX;
    }
    starfold__graph_task_rounds(g, round);
    for (size_t i = 0; i < g->nnodes; i++)
        if (++count[round[i]] > widest) widest = count[round[i]];
    free(round);
    free(count);
    return widest;
}

/* Draws @g and writes it to @path: as DOT whatever the extension (@dot_only), or per the extension. */
static starfold_status_t export_graph(starfold_graph_t g, const char *path, int dot_only, starfold_draw_mode_t mode)
{
    if (!g || !path) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "graph export: NULL argument");
    starfold__format_t format; /* checked before anything is drawn */
    starfold_status_t st = dot_only ? STARFOLD_OK : starfold__format_from_path(path, &format);
    if (st != STARFOLD_OK) return st;
    if ((st = check_drawable(g)) != STARFOLD_OK) return st;
    if ((int)mode < STARFOLD_DRAW_AUTO || mode > STARFOLD_DRAW_TRAFFIC)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "graph export: unknown draw mode %d", (int)mode);
    if (mode == STARFOLD_DRAW_TRAFFIC && !dot_only) return starfold__graph_render_traffic(g, path);
    /* A picture is laid out by Graphviz: past a few hundred tasks, the summary (or a refusal). */
    const int summarise = !dot_only && (mode == STARFOLD_DRAW_SUMMARY ||
                                        (mode == STARFOLD_DRAW_AUTO && (g->nnodes > STARFOLD_DRAW_SUMMARY_TASKS ||
                                                                        widest_row(g) > STARFOLD_DRAW_SUMMARY_ROW)));
    if (!dot_only && !summarise && g->nnodes > STARFOLD_DRAW_MAX_TASKS)
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED,
                               "%s: %zu tasks, more than Graphviz lays out in reasonable time (%d); draw the summary "
                               "(the default), or write the graph as .dot",
                               g->algorithm, g->nnodes, STARFOLD_DRAW_MAX_TASKS);

    ag_ids_t ids;
    exporter_t x = { .g = g, .picture = !dot_only && format != SF_FORMAT_DOT };
    starfold__cgraph_lock(); /* cgraph keeps global state (its anonymous ID counter, error hooks) */
    x.ag = ag_open(&ids);
    if (!x.ag) {
        starfold__cgraph_unlock();
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create a graph");
    }
    SF_CHECK_GOTO(summarise ? starfold__export_summary(&x, STARFOLD_DRAW_MAX_GROUPS) : build(&x), st, out);
    if (x.picture) {
        add_legend(&x);
        SF_CHECK_GOTO(chain_rows(&x), st, out);
    }
    if (x.picture) {
        st = starfold__agraph_save_late(x.ag, path, add_late_edges, &x);
        goto out;
    }
    if (!dot_only) {
        st = starfold__agraph_save(x.ag, path);
        goto out;
    }
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!f) {
        st = starfold__error(STARFOLD_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
        goto out;
    }
    const int rc = agwrite(x.ag, f);
    const int rc2 = f == stdout ? fflush(f) : fclose(f);
    if (rc != 0 || rc2 != 0) st = starfold__error(STARFOLD_ERR_IO, "%s: write failed", path);
out:
    agclose(x.ag);
    /* After a layout, cgraph 2.42 closes the graph without calling the ID discipline's close: free
     * what the map still holds (NULL when ids_close ran). */
    free(ids.names);
    starfold__cgraph_unlock();
    free(x.task);
    free(x.bufnode);
    free(x.rank);
    free(x.late);
    return st;
}

STARFOLD_API starfold_status_t starfold_graph_write_dot(starfold_graph_t graph, const char *path)
{
    return export_graph(graph, path, 1, STARFOLD_DRAW_FULL);
}

STARFOLD_API starfold_status_t starfold_graph_render(starfold_graph_t graph, const char *path)
{
    return export_graph(graph, path, 0, STARFOLD_DRAW_AUTO);
}

STARFOLD_API starfold_status_t starfold_graph_render_mode(starfold_graph_t graph, const char *path,
                                                          starfold_draw_mode_t mode)
{
    return export_graph(graph, path, 0, mode);
}
