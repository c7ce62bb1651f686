/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The traffic view of a graph (STARFOLD_DRAW_TRAFFIC): what the algorithm does to the machine, not
 * task by task but device by device, so the pattern shows at any size.
 *
 *              gpu0                      one node per device of the topology, in device order
 *          ↗        ↘                    clockwise from the top (the DGX-1 as its cube); its label
 *      gpu7          gpu1                counts the tasks it runs by kind;
 *       ↑              ↓                 one arrow per device pair that exchanges data, both heads
 *      gpu6          gpu2                when data moves both ways, labelled "a→b bytes", coloured by
 *          ↖        ↙                    the link it crosses (the shared palette), as wide as its
 *              ...                       share of the busiest pair.
 *
 * A ring is a cycle, trees are trees, hierarchical copy two stars joined at their roots, reduce-to-one
 * one star. Laid out by neato with the positions pinned (nop-like), so the picture is the same every
 * time and the device order is never Graphviz's choice. The bytes come from starfold_graph_link_bytes(),
 * the numbers `starfold graph` prints.
 */
#include "config.h"

#include "base/common.h"
#include "base/gv.h"
#include "topology/palette.h"
#include "graph/graph.h"
#include "topology/topology.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRAFFIC_PEN_MAX 7.0 /* points: the busiest pair's arrow */

/* Where device @d of @n goes: the topology's own drawing (DGX-1), else a circle, clockwise from 12. */
static void place(const struct starfold_graph *g, int n, int d, double *x, double *y)
{
    if (starfold__builtin_position(starfold_topology_name(g->topology), n, d, x, y)) return;
    /* inches: neighbours' centres 3.4 in apart (a node is about 2.2 in wide), so no two touch */
    const double r = n < 2 ? 0 : 1.7 / sin(M_PI / n);
    const double a = M_PI / 2 - 2 * M_PI * d / n;
    *x = r * cos(a);
    *y = r * sin(a);
}

/* "gpu0 (device 0)\ncopy 3, reduce 2": the tasks device @d runs, by kind. */
static void device_label(const struct starfold_graph *g, int d, char *s, size_t len)
{
    size_t count[STARFOLD_TASK_KIND_COUNT] = { 0 };
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].device == d) count[g->nodes[i].kind]++;
    size_t k = (size_t)snprintf(s, len, "%s (device %d)", starfold_topology_device_name(g->topology, d), d);
    const char *sep = "\\n";
    int none = 1;
    for (int kind = 0; kind < STARFOLD_TASK_KIND_COUNT && k < len; kind++) {
        if (!count[kind]) continue;
        k += (size_t)snprintf(s + k, len - k, "%s%s %zu", sep, starfold_task_kind_name((starfold_task_kind_t)kind),
                              count[kind]);
        sep = ", ";
        none = 0;
    }
    if (none && k < len) snprintf(s + k, len - k, "\\nno task");
}

/* The bytes @from -> @to in @pairs (sorted by (from, to)), 0 when none. */
static uint64_t pair_bytes(const starfold_link_bytes_t *pairs, size_t count, int from, int to)
{
    for (size_t i = 0; i < count; i++)
        if (pairs[i].from == from && pairs[i].to == to) return pairs[i].bytes;
    return 0;
}

/* One arrow for the pair {a, b} (a < b), carrying @ab bytes a -> b and @ba bytes b -> a. */
static starfold_status_t add_pair(Agraph_t *ag, Agnode_t *const *node, const struct starfold_graph *g, int a, int b,
                                  uint64_t ab, uint64_t ba, uint64_t busiest, unsigned *drawn)
{
    /* Drawn from the sender when one way only, so the single head points where the data goes. */
    const int from = ab ? a : b, to = ab ? b : a;
    Agedge_t *e = agedge(ag, node[from], node[to], NULL, 1);
    if (!e) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create an edge");
    starfold_link_t link;
    const int found = starfold_topology_best_link(g->topology, a, b, &link) == STARFOLD_OK;
    const char *colour = found ? starfold__link_colour(link.kind) : SF_NO_LINK_COLOUR;
    *drawn |= found ? 1u << link.kind : 1u << 8;
    char x[32], y[32];
    if (ab && ba) {
        starfold__human_bytes(ab, x, sizeof x);
        starfold__human_bytes(ba, y, sizeof y);
        if (!strcmp(x, y)) starfold__agset(e, "xlabel", "%s each way", x); /* equal as printed */
        else starfold__agset(e, "xlabel", "%d\xe2\x86\x92%d %s\\n%d\xe2\x86\x92%d %s", a, b, x, b, a, y);
        starfold__agset(e, "dir", "both");
    } else {
        starfold__human_bytes(ab ? ab : ba, x, sizeof x);
        starfold__agset(e, "xlabel", "%s", x);
    }
    const uint64_t most = ab > ba ? ab : ba;
    starfold__agset(e, "penwidth", "%.2f", 1.0 + (TRAFFIC_PEN_MAX - 1.0) * (double)most / (double)busiest);
    starfold__agset(e, "arrowsize", "0.7");
    starfold__agset(e, "color", "%s", colour);
    starfold__agset(e, "fontcolor", "%s", colour);
    return STARFOLD_OK;
}

/* The legend: the link colours drawn, and how to read an arrow. */
static void add_legend(Agraph_t *ag, unsigned drawn)
{
    char html[2048];
    size_t n = (size_t)snprintf(html, sizeof html,
                                "<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"3\">"
                                "<tr><td colspan=\"2\"><b>legend</b></td></tr>");
    static const starfold_link_kind_t links[] = { STARFOLD_LINK_NVLINK, STARFOLD_LINK_PCIE, STARFOLD_LINK_INTER_SOCKET,
                                                  STARFOLD_LINK_HOST, STARFOLD_LINK_SHM, STARFOLD_LINK_NETWORK };
    for (size_t k = 0; k < sizeof links / sizeof links[0] && n < sizeof html; k++)
        if (drawn & (1u << links[k]))
            n += (size_t)snprintf(html + n, sizeof html - n,
                                  "<tr><td><font color=\"%s\"><b>&#8212;&#8212;&#8212;</b></font></td>"
                                  "<td align=\"left\">data over %s</td></tr>",
                                  starfold__link_colour(links[k]), starfold_link_kind_name(links[k]));
    if (n < sizeof html && (drawn & (1u << 8)))
        n += (size_t)snprintf(html + n, sizeof html - n,
                              "<tr><td><font color=\"%s\"><b>&#8212;&#8212;&#8212;</b></font></td>"
                              "<td align=\"left\">data between devices with no direct link</td></tr>",
                              SF_NO_LINK_COLOUR);
    if (n < sizeof html)
        snprintf(html + n, sizeof html - n,
                 "<tr><td colspan=\"2\" align=\"left\">arrow heads: where the data goes (both: both ways)</td></tr>"
                 "<tr><td colspan=\"2\" align=\"left\">width: bytes, against the busiest pair</td></tr>"
                 "<tr><td colspan=\"2\" align=\"left\">nodes: devices, with the tasks each runs</td></tr></table>");
    starfold__add_legend(ag, html);
}

/* Builds the picture into @ag (opened by the caller, under the cgraph lock). */
static starfold_status_t build(const struct starfold_graph *g, Agraph_t *ag, const starfold_link_bytes_t *pairs,
                               size_t count)
{
    const int n = starfold_topology_num_devices(g->topology);
    Agnode_t *node[STARFOLD_MAX_DEVICES];
    agattr(ag, AGNODE, "shape", "box");
    agattr(ag, AGNODE, "style", "rounded");
    agattr(ag, AGNODE, "fontname", "Helvetica");
    agattr(ag, AGEDGE, "fontname", "Helvetica");
    agattr(ag, AGEDGE, "fontsize", "11");
    for (int d = 0; d < n; d++) {
        char name[16], label[256];
        snprintf(name, sizeof name, "d%d", d);
        if (!(node[d] = agnode(ag, name, 1))) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create a node");
        device_label(g, d, label, sizeof label);
        starfold__agset(node[d], "label", "%s", label);
        double x, y;
        place(g, n, d, &x, &y);
        starfold__agset(node[d], "pos", "%.3f,%.3f!", x, y);
    }
    uint64_t busiest = 1;
    for (size_t i = 0; i < count; i++)
        if (pairs[i].bytes > busiest) busiest = pairs[i].bytes;
    unsigned drawn = 0;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            const uint64_t ab = pair_bytes(pairs, count, a, b), ba = pair_bytes(pairs, count, b, a);
            if (!ab && !ba) continue;
            const starfold_status_t st = add_pair(ag, node, g, a, b, ab, ba, busiest, &drawn);
            if (st != STARFOLD_OK) return st;
        }
    char coll[128], moved[32];
    uint64_t total = 0;
    for (size_t i = 0; i < count; i++) total += pairs[i].bytes;
    starfold__graph_describe(g, coll, sizeof coll);
    starfold__human_bytes(total, moved, sizeof moved);
    starfold__agset(ag, "label", "%s: %s, %zu tensor%s\\ntopology %s: %zu tasks, %s between devices (traffic view)%s",
                    g->algorithm, coll, g->num_tensors, g->num_tensors == 1 ? "" : "s",
                    starfold_topology_name(g->topology), g->nnodes, moved,
                    total ? "" : "\\nno data crosses devices: they share one memory, tasks read each other's buffers");
    starfold__agset(ag, "labelloc", "t");
    starfold__agset(ag, "fontname", "Helvetica");
    starfold__agset(ag, "fontsize", "16");
    starfold__agset(ag, "layout", "neato");
    starfold__agset(ag, "splines", "true");
    starfold__agset(ag, "overlap", "true");
    starfold__agset(ag, "forcelabels", "true"); /* edge labels (xlabel) beside the arrows, placed to avoid overlaps */
    add_legend(ag, drawn);
    /* The legend to the right of the devices (starfold__add_legend() made its node). */
    Agnode_t *legend = agnode(ag, "legend", 0);
    if (legend) {
        double right = 0;
        for (int d = 0; d < n; d++) {
            double x, y;
            place(g, n, d, &x, &y);
            if (x > right) right = x;
        }
        starfold__agset(legend, "pos", "%.3f,0!", right + 4.2); /* clear of the widest node and itself */
    }
    return STARFOLD_OK;
}

starfold_status_t starfold__graph_render_traffic(starfold_graph_t g, const char *path)
{
    starfold_link_bytes_t *pairs = NULL;
    size_t count = 0;
    starfold_status_t st = starfold_graph_link_bytes(g, &pairs, &count);
    if (st != STARFOLD_OK) return st;
    starfold__cgraph_lock();
    Agraph_t *ag = agopen("traffic", Agdirected, NULL);
    if (!ag) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create a graph");
    if (st == STARFOLD_OK) st = build(g, ag, pairs, count);
    if (st == STARFOLD_OK) st = starfold__agraph_save(ag, path);
    if (ag) agclose(ag);
    starfold__cgraph_unlock();
    free(pairs);
    return st;
}
