/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The edges of an exported graph (export.h): every dependency labelled with the bytes the consumer
 * reads from the producer's writes, input -> reader and writer -> output, coloured by the link they
 * cross.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/common.h"
#include "topology/palette.h"
#include "graph/export.h"
#include "topology/topology.h"

/* Colour of an edge crossing devices: the direct link's kind (the shared palette), red when none. */
static const char *link_colour(int found, starfold_link_kind_t kind)
{
    return found ? starfold__link_colour(kind) : SF_NO_LINK_COLOUR;
}

/* Label and style of an edge carrying @bytes from a buffer of device @from to a task of @to. */
starfold_status_t starfold__export_edge(exporter_t *x, Agnode_t *tail, Agnode_t *head, uint64_t bytes, int from, int to)
{
    starfold_link_t link;
    const int found = from != to && starfold_topology_best_link(x->g->topology, from, to, &link) == STARFOLD_OK;
    x->drawn |= !bytes ? DRAWN_ORDER : from == to ? DRAWN_LOCAL : found ? DRAWN_LINK << link.kind : DRAWN_NO_LINK;
    if (x->picture && from != to && !x->adding_late) {
        if (SF_GROW(x->late, x->nlate, x->caplate) != 0)
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory exporting a graph");
        x->late[x->nlate++] = (struct late_edge){ tail, head, bytes, from, to };
        return STARFOLD_OK;
    }
    Agedge_t *e = agedge(x->ag, tail, head, NULL, 1);
    if (!e) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create an edge");
    if (!bytes) { /* ordering only, no data */
        starfold__agset(e, "style", "dashed");
        starfold__agset(e, "color", "gray50");
        return STARFOLD_OK;
    }
    char size[32];
    starfold__human_bytes(bytes, size, sizeof size);
    if (from == to) {
        starfold__agset(e, "label", "%s", size);
        return STARFOLD_OK;
    }
    const char *colour = link_colour(found, found ? link.kind : STARFOLD_LINK_HOST);
    /* A picture says the link by the colour (and the legend); the .dot file names it. */
    if (found && !x->picture) starfold__agset(e, "label", "%s\\n%s", size, starfold_link_kind_name(link.kind));
    else starfold__agset(e, "label", "%s", size);
    starfold__agset(e, "style", "bold");
    starfold__agset(e, "color", "%s", colour);
    starfold__agset(e, "fontcolor", "%s", colour);
    return STARFOLD_OK;
}


/* Adds [lo, hi) to @c and returns how many of its elements were not in it yet; -1 out of memory. */
long long starfold__ranges_add(ranges_t *c, size_t lo, size_t hi)
{
    size_t fresh = hi - lo, i = 0;
    while (i < c->n && c->r[i][1] < lo) i++;
    size_t j = i, nlo = lo, nhi = hi;
    for (; j < c->n && c->r[j][0] <= hi; j++) { /* merge every range touching [lo, hi) */
        const size_t a = c->r[j][0] > lo ? c->r[j][0] : lo, b = c->r[j][1] < hi ? c->r[j][1] : hi;
        if (b > a) fresh -= b - a;
        if (c->r[j][0] < nlo) nlo = c->r[j][0];
        if (c->r[j][1] > nhi) nhi = c->r[j][1];
    }
    if (j == i) { /* nothing merged: insert */
        if (SF_GROW(c->r, c->n, c->cap)) return -1;
        memmove(&c->r[i + 1], &c->r[i], (c->n - i) * sizeof *c->r);
        c->n++;
    } else {
        memmove(&c->r[i + 1], &c->r[j], (c->n - j) * sizeof *c->r);
        c->n -= j - i - 1;
    }
    c->r[i][0] = nlo;
    c->r[i][1] = nhi;
    return (long long)fresh;
}

/*
 * Bytes node @i reads from each dependency's writes, into out[k] for deps[k]. An element read is
 * attributed to the latest dependency that wrote it: an in-place accumulation depends on every
 * earlier write of its buffer, but reads only the last.
 */
starfold_status_t starfold__graph_dep_bytes(const struct starfold_graph *g, size_t i, uint64_t *out, ranges_t *seen)
{
    const starfold__node_t *n = &g->nodes[i];
    for (size_t k = 0; k < n->ndeps; k++) out[k] = 0;
    for (size_t s = 0; s < n->nsrc; s++) {
        const starfold__span_t src = n->src[s];
        if (!src.count || g->bufs[src.buf].kind == SF_BUF_INPUT) continue;
        const uint64_t esize = starfold_dtype_size(g->bufs[src.buf].dtype);
        seen->n = 0;
        for (size_t k = n->ndeps; k-- > 0;) {
            const starfold__node_t *d = &g->nodes[n->deps[k]];
            for (size_t w = 0; w < d->ndst; w++) {
                const starfold__span_t dst = d->dst[w];
                const size_t lo = dst.offset > src.offset ? dst.offset : src.offset;
                const size_t hi = dst.offset + dst.count < src.offset + src.count ? dst.offset + dst.count
                                                                                  : src.offset + src.count;
                if (dst.buf != src.buf || hi <= lo) continue;
                const long long fresh = starfold__ranges_add(seen, lo, hi);
                if (fresh < 0) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory labelling edges");
                out[k] += (uint64_t)fresh * esize;
            }
        }
    }
    return STARFOLD_OK;
}

/*
 * Adds one edge per distinct buffer node among @spans (inputs read or outputs written), summing the
 * bytes of the spans it stands for, in the order the spans first name it.
 */
static starfold_status_t add_buffer_edges(exporter_t *x, size_t i, int output)
{
    const struct starfold_graph *g = x->g;
    const starfold__node_t *n = &g->nodes[i];
    const starfold__span_t *sp = output ? n->dst : n->src;
    const size_t ns = output ? n->ndst : n->nsrc;
    for (size_t k = 0; k < ns; k++) {
        Agnode_t *bn = x->bufnode[sp[k].buf];
        if (!bn || g->bufs[sp[k].buf].kind != (output ? SF_BUF_OUTPUT : SF_BUF_INPUT)) continue;
        int first = 1;
        for (size_t j = 0; j < k && first; j++) first = x->bufnode[sp[j].buf] != bn;
        if (!first) continue;
        uint64_t bytes = 0;
        for (size_t j = k; j < ns; j++)
            if (x->bufnode[sp[j].buf] == bn) bytes += starfold__span_bytes(g, sp[j]);
        const int dev = g->bufs[sp[k].buf].device;
        starfold_status_t st = output ? starfold__export_edge(x, x->task[i], bn, bytes, n->device, dev)
                                      : starfold__export_edge(x, bn, x->task[i], bytes, dev, n->device);
        if (st != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

/* Per task in order: inputs it reads, its dependencies, outputs it writes. */
starfold_status_t starfold__export_edges(exporter_t *x)
{
    const struct starfold_graph *g = x->g;
    starfold_status_t st = STARFOLD_OK;
    size_t maxdeps = 1;
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].ndeps > maxdeps) maxdeps = g->nodes[i].ndeps;
    ranges_t seen = { NULL, 0, 0 };
    uint64_t *bytes = malloc(maxdeps * sizeof *bytes);
    if (!bytes) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory labelling edges");
    for (size_t i = 0; i < g->nnodes; i++) {
        const starfold__node_t *n = &g->nodes[i];
        SF_CHECK_GOTO(add_buffer_edges(x, i, 0), st, out);
        SF_CHECK_GOTO(starfold__graph_dep_bytes(g, i, bytes, &seen), st, out);
        for (size_t k = 0; k < n->ndeps; k++)
            SF_CHECK_GOTO(starfold__export_edge(x, x->task[n->deps[k]], x->task[i], bytes[k], g->nodes[n->deps[k]].device,
                                   n->device),
                          st, out);
        SF_CHECK_GOTO(add_buffer_edges(x, i, 1), st, out);
    }
out:
    free(bytes);
    free(seen.r);
    return st;
}
