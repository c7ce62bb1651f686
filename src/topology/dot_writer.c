/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The topology's Graphviz form: the DOT that starfold_topology_load() reads back (dot_reader.c), plus
 * presentation attributes (shape, color, style, penwidth, edge label) that the loader accepts and
 * ignores; starfold_topology_render() draws the same graph as SVG or PNG.
 */
#include "config.h"

#include "base/common.h"
#include "base/gv.h"
#include "topology/palette.h"
#include "topology/topology.h"

#include <errno.h>
#include <stdio.h>

/* Shortest decimal form that reads back to the same double. */
static void format_double(char *buf, size_t size, double v)
{
    snprintf(buf, size, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, size, "%.17g", v);
}

/* A node name no other node has: the device name, else "dev<i>", else "dev<i>_<k>". */
static Agnode_t *add_device_node(Agraph_t *g, starfold_topology_t t, int i)
{
    char buf[64];
    const char *want = t->devices[i].name;
    for (int k = 0; agnode(g, (char *)want, 0); k++) {
        if (k == 0) snprintf(buf, sizeof buf, "dev%d", i);
        else snprintf(buf, sizeof buf, "dev%d_%d", i, k);
        want = buf;
    }
    Agnode_t *node = agnode(g, (char *)want, 1);
    if (!node) return NULL;
    starfold__agset(node, "id", "%d", i);
    if (strcmp(want, t->devices[i].name) != 0) agsafeset(node, "label", t->devices[i].name, "");
    starfold__agset(node, "kind", "%s", starfold__device_kind_name(t->devices[i].kind));
    if (t->devices[i].socket >= 0) starfold__agset(node, "socket", "%d", t->devices[i].socket);
    if (t->devices[i].rank > 0) starfold__agset(node, "rank", "%d", t->devices[i].rank);
    if (t->devices[i].memory >= 0) starfold__agset(node, "memory", "%d", t->devices[i].memory);
    return node;
}

static int add_link_edge(Agraph_t *g, Agnode_t *const *nodes, const starfold_link_t *l)
{
    char bw[40], lat[40];
    /* NULL name in a non-strict graph: a new edge even when the pair already has one (parallel links). */
    Agedge_t *e = agedge(g, nodes[l->a], nodes[l->b], NULL, 1);
    if (!e) return -1;
    format_double(bw, sizeof bw, l->bandwidth_GBps);
    format_double(lat, sizeof lat, l->latency_us);
    starfold__agset(e, "kind", "%s", starfold_link_kind_name(l->kind));
    starfold__agset(e, "lanes", "%d", l->lanes);
    starfold__agset(e, "bandwidth", "%s", bw);
    starfold__agset(e, "latency", "%s", lat);
    starfold__agset(e, "label", "%s GB/s", bw);
    starfold__agset(e, "color", "%s", starfold__link_colour(l->kind));
    starfold__agset(e, "penwidth", "%d", l->kind == STARFOLD_LINK_NVLINK ? 1 + l->lanes : 1);
    if (l->kind != STARFOLD_LINK_NVLINK) starfold__agset(e, "style", "dashed");
    return 0;
}

/* Builds the graph; the caller holds the cgraph lock and closes the result. */
static starfold_status_t topology_agraph(starfold_topology_t t, Agraph_t **out)
{
    Agnode_t *nodes[STARFOLD_MAX_DEVICES];
    Agraph_t *g = agopen(*t->name ? t->name : "topology", Agundirected, NULL);
    if (!g) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create a graph for topology '%s'", t->name);
    agattr(g, AGNODE, "shape", "box");
    for (int i = 0; i < t->num_devices; i++)
        if (!(nodes[i] = add_device_node(g, t, i))) goto oom;
    for (size_t i = 0; i < t->num_links; i++)
        if (add_link_edge(g, nodes, &t->links[i]) != 0) goto oom;
    *out = g;
    return STARFOLD_OK;

oom:
    agclose(g);
    return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: out of memory drawing topology '%s'", t->name);
}

/* Builds the graph and hands it to @save (under the cgraph lock). */
static starfold_status_t with_agraph(starfold_topology_t t, const char *path,
                                     starfold_status_t (*save)(Agraph_t *, const char *))
{
    Agraph_t *g = NULL;
    starfold__cgraph_lock();
    starfold_status_t st = topology_agraph(t, &g);
    if (st == STARFOLD_OK) {
        st = save(g, path);
        agclose(g);
    }
    starfold__cgraph_unlock();
    return st;
}

/*
 * The DGX-1 drawn as the hybrid cube-mesh it is, not as a hairball (starfold__builtin_position()).
 * The inter-socket paths (every pair without an NVLink, all at one bandwidth) are thin, pale and
 * unlabelled: the legend gives their bandwidth once.
 */
static void place_dgx1(Agraph_t *g)
{
    const char *name = agnameof(g);
    double x, y;
    if (!starfold__builtin_position(name, agnnodes(g) - 1, 0, &x, &y)) return; /* 8 GPUs and the legend */
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
        const char *id = agget(n, "id");
        if (!id || !*id) continue;
        if (!starfold__builtin_position(name, 8, atoi(id), &x, &y)) return;
        starfold__agset(n, "pos", "%g,%g!", x, y);
    }
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
        const char *id = agget(n, "id"), *sock = agget(n, "socket");
        if (id && *id && sock && *sock) starfold__agset(n, "label", "%s\\nsocket %s", agnameof(n), sock);
        for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e)) {
            const char *k = agget(e, "kind");
            starfold_link_kind_t kind;
            if (!k || starfold_link_kind_from_string(k, &kind) != STARFOLD_OK || kind == STARFOLD_LINK_NVLINK) continue;
            starfold__agset(e, "label", "%s", "");
            starfold__agset(e, "penwidth", "0.6");
            starfold__agset(e, "color", "%s80", starfold__link_colour(kind)); /* the palette's colour, half opaque */
        }
    }
    Agnode_t *legend = agnode(g, "legend", 0);
    if (legend) starfold__agset(legend, "pos", "%g,%g!", 1.1 * 11, 1.1 * 2.3);
    starfold__agset(g, "layout", "neato");
    starfold__agset(g, "splines", "true");
    starfold__agset(g, "fontsize", "18");
}

/*
 * Ranks across nodes (a graph with shm or network links: starfold_topology_ranks(), a cluster
 * topology): each node's devices in a box of their own, "node N", as their socket numbers them.
 */
static void box_nodes(Agraph_t *g)
{
    int across = 0;
    for (Agnode_t *n = agfstnode(g); n && !across; n = agnxtnode(g, n))
        for (Agedge_t *e = agfstout(g, n); e && !across; e = agnxtout(g, e)) {
            const char *k = agget(e, "kind");
            starfold_link_kind_t kind;
            across = k && starfold_link_kind_from_string(k, &kind) == STARFOLD_OK &&
                     (kind == STARFOLD_LINK_SHM || kind == STARFOLD_LINK_NETWORK);
        }
    if (!across) return;
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
        /* Every pair of ranks is linked: the legend gives the bandwidths once, the edges stay thin. */
        for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e)) {
            const char *k = agget(e, "kind");
            starfold_link_kind_t kind;
            if (!k || starfold_link_kind_from_string(k, &kind) != STARFOLD_OK ||
                (kind != STARFOLD_LINK_SHM && kind != STARFOLD_LINK_NETWORK))
                continue;
            starfold__agset(e, "label", "%s", "");
            starfold__agset(e, "penwidth", "%s", kind == STARFOLD_LINK_NETWORK ? "0.6" : "1.2");
            if (kind == STARFOLD_LINK_NETWORK) starfold__agset(e, "color", "%s80", starfold__link_colour(kind));
        }
        const char *sock = agget(n, "socket");
        if (!sock || !*sock) continue;
        char name[48];
        snprintf(name, sizeof name, "cluster_node%s", sock);
        Agraph_t *box = agsubg(g, name, 1);
        if (!box) continue;
        agsubnode(box, n, 1);
        starfold__agset(box, "label", "node %s", sock);
        starfold__agset(box, "style", "rounded");
        starfold__agset(box, "color", "#999999");
    }
}

/* A picture: a title and the legend of the link kinds drawn (with their bandwidths), then Graphviz. */
static starfold_status_t save_picture(Agraph_t *g, const char *path)
{
    int kinds[STARFOLD_LINK_KIND_COUNT] = { 0 }, nlinks = 0;
    double lo[STARFOLD_LINK_KIND_COUNT] = { 0 }, hi[STARFOLD_LINK_KIND_COUNT] = { 0 };
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n))
        for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e)) {
            const char *k = agget(e, "kind"), *bw = agget(e, "bandwidth");
            starfold_link_kind_t kind;
            if (!k || starfold_link_kind_from_string(k, &kind) != STARFOLD_OK || (int)kind < 0 ||
                (int)kind >= STARFOLD_LINK_KIND_COUNT)
                continue;
            const double b = bw ? strtod(bw, NULL) : 0;
            if (!kinds[kind]++ || b < lo[kind]) lo[kind] = b;
            if (b > hi[kind]) hi[kind] = b;
            nlinks++;
        }
    starfold__agset(g, "label", "%s: %d devices, %d links", agnameof(g), agnnodes(g), nlinks);
    starfold__agset(g, "labelloc", "t");
    starfold__agset(g, "fontname", "Helvetica");
    agattr(g, AGNODE, "fontname", "Helvetica");
    agattr(g, AGEDGE, "fontname", "Helvetica");
    char html[2048];
    size_t len = (size_t)snprintf(html, sizeof html,
                                  "<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"3\">"
                                  "<tr><td colspan=\"2\"><b>links</b></td></tr>");
    for (int k = 0; k < STARFOLD_LINK_KIND_COUNT && len < sizeof html; k++) {
        if (!kinds[k]) continue;
        char range[64];
        if (lo[k] == hi[k]) snprintf(range, sizeof range, "%g GB/s", lo[k]);
        else snprintf(range, sizeof range, "%g-%g GB/s", lo[k], hi[k]);
        len += (size_t)snprintf(html + len, sizeof html - len,
                                "<tr><td><font color=\"%s\"><b>&#8212;&#8212;&#8212;</b></font></td><td align=\"left\">%s, %s%s</td></tr>",
                                starfold__link_colour((starfold_link_kind_t)k), starfold_link_kind_name((starfold_link_kind_t)k),
                                range, k == STARFOLD_LINK_NVLINK ? " (thicker: more lanes)" : " (dashed)");
    }
    if (len < sizeof html)
        snprintf(html + len, sizeof html - len, "<tr><td colspan=\"2\" align=\"left\">labels: GB/s per direction</td></tr></table>");
    starfold__add_legend(g, html);
    place_dgx1(g);
    box_nodes(g);
    return starfold__agraph_save(g, path);
}

/* DOT whatever the extension. */
static starfold_status_t save_dot(Agraph_t *g, const char *path)
{
    const int to_stdout = strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "w");
    if (!f) return starfold__error(STARFOLD_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
    int rc = agwrite(g, f);
    int rc2 = to_stdout ? fflush(f) : fclose(f);
    if (rc != 0 || rc2 != 0) return starfold__error(STARFOLD_ERR_IO, "%s: write failed", path);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_topology_write_dot(starfold_topology_t topology, const char *path)
{
    if (!topology || !path)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_write_dot: NULL %s",
                        !topology ? "topology" : "path");
    if (!*path) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_write_dot: empty path");
    return with_agraph(topology, path, save_dot);
}

STARFOLD_API starfold_status_t starfold_topology_render(starfold_topology_t topology, const char *path)
{
    if (!topology || !path)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_render: NULL %s",
                        !topology ? "topology" : "path");
    starfold__format_t format;
    starfold_status_t st = starfold__format_from_path(path, &format);   /* reject a bad extension before drawing */
    if (st != STARFOLD_OK) return st;
    /* A .dot file stays loadable (a legend node would read as a device): only pictures get one. */
    return with_agraph(topology, path, format == SF_FORMAT_DOT ? starfold__agraph_save : save_picture);
}
