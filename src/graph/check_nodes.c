/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Check 1 of the graph invariant checker (check.c lists them all): the structure of every node on
 * its own, its spans in their buffers, its dependencies, its arity and its overlapping reads and
 * writes; and the descriptions of nodes and buffers that every check's message uses.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/common.h"
#include "graph/check.h"
#include "graph/graph.h"

/* ------------------------------------------------------------------------------------------------ */
/* Descriptions for messages                                                                        */

ck_text_t starfold__check_node_text(const struct starfold_graph *g, size_t i)
{
    ck_text_t t;
    snprintf(t.s, sizeof t.s, "node %zu (%s on device %d)", i, starfold_task_kind_name(g->nodes[i].kind),
             g->nodes[i].device);
    return t;
}

ck_text_t starfold__check_buf_text(const struct starfold_graph *g, size_t b)
{
    ck_text_t t;
    const starfold__buffer_t *x = &g->bufs[b];
    if (x->kind == SF_BUF_TEMP)
        snprintf(t.s, sizeof t.s, "temporary buffer %zu (on device %d)", b, x->device);
    else
        snprintf(t.s, sizeof t.s, "%s buffer %zu (slot %d, tensor %zu on device %d)",
                 x->kind == SF_BUF_INPUT ? "input" : "output", b, x->slot, x->tensor, x->device);
    return t;
}

static starfold_status_t invalid_node(const struct starfold_graph *g, size_t i, const char *what)
{
    return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "%s: %s: %s", g->algorithm, starfold__check_node_text(g, i).s, what);
}

/* ------------------------------------------------------------------------------------------------ */
/* 1. Structure                                                                                     */

static int spans_overlap(starfold__span_t a, starfold__span_t b)
{
    return a.buf == b.buf && a.count && b.count && a.offset < b.offset + b.count && b.offset < a.offset + a.count;
}

/* Position of span @k in the concatenation of @spans (the element order of a segmented copy). */
static size_t concat_pos(const starfold__span_t *spans, size_t k)
{
    size_t p = 0;
    for (size_t i = 0; i < k; i++) p += spans[i].count;
    return p;
}

/*
 * Whether node @n, where src span @s and dst span @d overlap (in one buffer, or in an input and an
 * output that may be one aliased handle), reads each element x of the overlap from exactly where it
 * writes x, so one task may do both: a segmented copy maps concatenation position p of its sources
 * to position p of its destinations, a REDUCE or SCALE maps every source position i to position i of
 * the destination. Identity holds when both spans put buffer offset 0 at the same position.
 */
static int maps_elementwise_at(const starfold__node_t *n, size_t s, size_t d, const size_t *srcpos,
                               const size_t *dstpos)
{
    const int elementwise = n->kind == STARFOLD_TASK_REDUCE || n->kind == STARFOLD_TASK_SCALE;
    /* A segmented REDUCE: only within one segment (another segment is another reduction). */
    if (elementwise && n->nseg > 1 && s / (n->nsrc / n->nseg) != d / (n->ndst / n->nseg)) return 0;
    const size_t ps = elementwise ? 0 : srcpos ? srcpos[s] : concat_pos(n->src, s);
    const size_t pd = elementwise ? 0 : dstpos ? dstpos[d] : concat_pos(n->dst, d);
    return ps + n->dst[d].offset == pd + n->src[s].offset;
}

/* maps_elementwise_at() with the concatenation positions worked out here (a pair at a time). */
int starfold__check_maps_elementwise(const starfold__node_t *n, size_t s, size_t d)
{
    return maps_elementwise_at(n, s, d, NULL, NULL);
}

static starfold_status_t check_span(const struct starfold_graph *g, size_t i, starfold__span_t s, const char *role)
{
    char what[160];
    if (s.buf >= g->nbufs) {
        snprintf(what, sizeof what, "%s span names buffer %zu of %zu", role, s.buf, g->nbufs);
        return invalid_node(g, i, what);
    }
    const starfold__buffer_t *b = &g->bufs[s.buf];
    if (s.offset > b->count || s.count > b->count - s.offset) {
        snprintf(what, sizeof what, "%s span [%zu, +%zu) is outside %s of %zu elements", role, s.offset, s.count,
                 starfold__check_buf_text(g, s.buf).s, b->count);
        return invalid_node(g, i, what);
    }
    const starfold__node_t *n = &g->nodes[i];
    const int converting = n->kind == STARFOLD_TASK_SCALE && !strcmp(role, "destination") &&
                           starfold__dtype_integer(n->dtype) && b->dtype == starfold__dtype_truediv(n->dtype);
    if (b->dtype != n->dtype && !converting) {
        snprintf(what, sizeof what, "%s span of %s is %s, the node is %s", role, starfold__check_buf_text(g, s.buf).s,
                 starfold_dtype_name(b->dtype), starfold_dtype_name(g->nodes[i].dtype));
        return invalid_node(g, i, what);
    }
    return STARFOLD_OK;
}

static starfold_status_t check_deps(const struct starfold_graph *g, size_t i)
{
    const starfold__node_t *n = &g->nodes[i];
    char what[128];
    for (size_t k = 0; k < n->ndeps; k++) {
        if (n->deps[k] >= i) {
            snprintf(what, sizeof what, "depends on node %zu, which is not an earlier node (cycle or bad order)",
                     n->deps[k]);
            return invalid_node(g, i, what);
        }
        if (k && n->deps[k] <= n->deps[k - 1]) {
            snprintf(what, sizeof what, "dependencies not ascending and unique (%zu after %zu)", n->deps[k],
                     n->deps[k - 1]);
            return invalid_node(g, i, what);
        }
    }
    return STARFOLD_OK;
}

static size_t span_total(const starfold__span_t *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += s[i].count;
    return c;
}

static starfold_status_t check_arity(const struct starfold_graph *g, size_t i)
{
    const starfold__node_t *n = &g->nodes[i];
    char what[128];
    switch (n->kind) {
    case STARFOLD_TASK_REDUCE:
        if (n->ndst < 1 || n->nsrc < 1) {
            snprintf(what, sizeof what, "a reduce needs >= 1 destination and >= 1 source, has %zu and %zu", n->ndst,
                     n->nsrc);
            return invalid_node(g, i, what);
        }
        /* The public ops, and the internal subtraction of a variable's update (base/common.h). */
        if ((int)n->op < 0 || ((int)n->op >= STARFOLD_OP_COUNT && n->op != STARFOLD__OP_SUB))
            return invalid_node(g, i, "unknown reduce op");
        if (n->divisor < 1 || (n->divisor > 1 && n->op != STARFOLD_OP_SUM && n->op != STARFOLD_OP_MEAN)) {
            snprintf(what, sizeof what, "a reduce (%s) divided by %u", starfold__op_name(n->op), n->divisor);
            return invalid_node(g, i, what);
        }
        if (n->nseg < 1 || n->nsrc % n->nseg || n->ndst % n->nseg) {
            snprintf(what, sizeof what, "%zu sources and %zu destinations in %zu segments", n->nsrc, n->ndst, n->nseg);
            return invalid_node(g, i, what);
        }
        /* Segment q: sources [q * ps, (q + 1) * ps), destinations [q * pd, (q + 1) * pd), one count. */
        const size_t ps = n->nsrc / n->nseg, pd = n->ndst / n->nseg;
        for (size_t k = 0; k < n->nsrc + n->ndst; k++) {
            const int src = k < n->nsrc;
            const size_t j = src ? k : k - n->nsrc, q = src ? j / ps : j / pd;
            const starfold__span_t *s = src ? &n->src[j] : &n->dst[j];
            if (s->count != n->dst[q * pd].count) {
                snprintf(what, sizeof what, "%s %zu has %zu elements, the destination%s %zu",
                         src ? "source" : "destination", j, s->count, n->nseg > 1 ? " of its segment" : "",
                         n->dst[q * pd].count);
                return invalid_node(g, i, what);
            }
        }
        return STARFOLD_OK;
    case STARFOLD_TASK_SCALE:
        if (n->nseg != 1 || n->ndst != 1 || n->nsrc != 1 || n->src[0].count != n->dst[0].count || n->divisor < 1) {
            snprintf(what, sizeof what, "a scale needs 1 source and 1 destination of one count and a divisor >= 1");
            return invalid_node(g, i, what);
        }
        return STARFOLD_OK;
    case STARFOLD_TASK_COPY:
    case STARFOLD_TASK_PACK:
    case STARFOLD_TASK_UNPACK:
        if (n->nseg != 1 || n->nsrc < 1 || span_total(n->src, n->nsrc) != span_total(n->dst, n->ndst)) {
            snprintf(what, sizeof what, "moves %zu elements into %zu", span_total(n->src, n->nsrc),
                     span_total(n->dst, n->ndst));
            return invalid_node(g, i, what);
        }
        return STARFOLD_OK;
    }
    return invalid_node(g, i, "unknown task kind");
}

/* A span of a node with its index, for the sorted overlap checks of nodes with many spans. */
typedef struct indexed_span {
    size_t buf, offset, count, k;
} indexed_span_t;

static int by_place(const void *pa, const void *pb)
{
    const indexed_span_t *a = pa, *b = pb;
    if (a->buf != b->buf) return a->buf < b->buf ? -1 : 1;
    if (a->offset != b->offset) return a->offset < b->offset ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k;
}

/* Where each span starts in the concatenation of @spans (concat_pos() of every k at once), for
 * maps_elementwise_at(). */
static size_t *concat_positions(const starfold__span_t *spans, size_t n)
{
    size_t *p = malloc(sizeof *p * (n ? n : 1));
    for (size_t i = 0, at = 0; p && i < n; i++) {
        p[i] = at;
        at += spans[i].count;
    }
    return p;
}

/*
 * check_writes()'s overlap checks for a node of many spans (one-pass groups tens of thousands of
 * small tensors into one task): the destinations sorted by place, overlaps found by a sweep, and each
 * source meets only the destinations its range reaches (binary search), so the check is
 * O((nsrc + ndst) log ndst) instead of O(ndst (nsrc + ndst)). The same verdicts; a pair named may
 * differ from the pairwise loop's first.
 */
static starfold_status_t check_overlaps_sorted(const struct starfold_graph *g, size_t i)
{
    const starfold__node_t *n = &g->nodes[i];
    const int elementwise = n->kind == STARFOLD_TASK_REDUCE || n->kind == STARFOLD_TASK_SCALE;
    indexed_span_t *d = malloc(sizeof *d * n->ndst);
    size_t *ps = elementwise ? NULL : concat_positions(n->src, n->nsrc);
    size_t *pd = elementwise ? NULL : concat_positions(n->dst, n->ndst);
    if (!d || (!elementwise && (!ps || !pd))) {
        free(d);
        free(ps);
        free(pd);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory checking %s", g->algorithm,
                               starfold__check_node_text(g, i).s);
    }
    size_t m = 0;
    for (size_t k = 0; k < n->ndst; k++)
        if (n->dst[k].count) d[m++] = (indexed_span_t){ n->dst[k].buf, n->dst[k].offset, n->dst[k].count, k };
    qsort(d, m, sizeof *d, by_place);
    char what[200];
    starfold_status_t st = STARFOLD_OK;
    /* Destinations: sorted by start, one overlaps an earlier one iff it starts before the furthest end. */
    for (size_t t = 1, far = 0; t < m && st == STARFOLD_OK; t++) {
        if (d[t].buf != d[t - 1].buf) {
            far = t;
            continue;
        }
        if (d[t].offset < d[far].offset + d[far].count) {
            const size_t j = d[far].k < d[t].k ? d[far].k : d[t].k, k = d[far].k < d[t].k ? d[t].k : d[far].k;
            snprintf(what, sizeof what, "destination spans %zu and %zu overlap in %s", j, k, starfold__check_buf_text(g, d[t].buf).s);
            st = invalid_node(g, i, what);
        } else if (d[t].offset + d[t].count > d[far].offset + d[far].count) {
            far = t;
        }
    }
    /* Sources: the destinations of the same buffer that the source's range reaches (disjoint and
     * sorted now, so their ends are sorted too). */
    for (size_t s = 0; s < n->nsrc && st == STARFOLD_OK; s++) {
        const starfold__span_t a = n->src[s];
        if (!a.count) continue;
        size_t lo = 0, hi = m; /* the first destination not before a: (buf, end) > (a.buf, a.offset) */
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (d[mid].buf < a.buf || (d[mid].buf == a.buf && d[mid].offset + d[mid].count <= a.offset)) lo = mid + 1;
            else hi = mid;
        }
        for (size_t t = lo; t < m && d[t].buf == a.buf && d[t].offset < a.offset + a.count && st == STARFOLD_OK; t++) {
            const size_t k = d[t].k;
            if (!maps_elementwise_at(n, s, k, ps, pd)) {
                snprintf(what, sizeof what, "source span %zu overlaps destination span %zu in %s, shifted", s, k,
                         starfold__check_buf_text(g, a.buf).s);
                st = invalid_node(g, i, what);
            }
        }
    }
    free(d);
    free(ps);
    free(pd);
    return st;
}

/* Nodes with more span pairs than this take the sorted overlap checks. */
#define SF_PAIRWISE_OVERLAP_CHECKS 4096

/* Writes in the node's memory only, never into an input, never twice within the node. */
static starfold_status_t check_writes(const struct starfold_graph *g, size_t i)
{
    const starfold__node_t *n = &g->nodes[i];
    char what[200];
    const int pairwise = (double)n->ndst * (double)(n->ndst + n->nsrc) <= SF_PAIRWISE_OVERLAP_CHECKS;
    for (size_t k = 0; k < n->ndst; k++) {
        const starfold__buffer_t *b = &g->bufs[n->dst[k].buf];
        if (b->kind == SF_BUF_INPUT) {
            snprintf(what, sizeof what, "writes %s", starfold__check_buf_text(g, n->dst[k].buf).s);
            return invalid_node(g, i, what);
        }
        if (!starfold_topology_same_memory(g->topology, b->device, n->device)) {
            snprintf(what, sizeof what, "writes %s of another device", starfold__check_buf_text(g, n->dst[k].buf).s);
            return invalid_node(g, i, what);
        }
        if (!pairwise) continue;
        for (size_t j = 0; j < k; j++)
            if (spans_overlap(n->dst[j], n->dst[k])) {
                snprintf(what, sizeof what, "destination spans %zu and %zu overlap in %s", j, k,
                         starfold__check_buf_text(g, n->dst[k].buf).s);
                return invalid_node(g, i, what);
            }
        for (size_t s = 0; s < n->nsrc; s++)
            if (spans_overlap(n->src[s], n->dst[k]) && !starfold__check_maps_elementwise(n, s, k)) {
                snprintf(what, sizeof what, "source span %zu overlaps destination span %zu in %s, shifted",
                         s, k, starfold__check_buf_text(g, n->dst[k].buf).s);
                return invalid_node(g, i, what);
            }
    }
    return pairwise ? STARFOLD_OK : check_overlaps_sorted(g, i);
}

static starfold_status_t check_node(const struct starfold_graph *g, size_t i, int ndev)
{
    const starfold__node_t *n = &g->nodes[i];
    starfold_status_t st;
    if ((int)n->kind < 0 || (int)n->kind >= STARFOLD_TASK_KIND_COUNT) return invalid_node(g, i, "unknown task kind");
    if (n->device < 0 || n->device >= ndev) {
        char what[96];
        snprintf(what, sizeof what, "device outside the topology's %d devices", ndev);
        return invalid_node(g, i, what);
    }
    if (n->ndst == 0) return invalid_node(g, i, "no destination");
    if ((n->nsrc && !n->src) || !n->dst) return invalid_node(g, i, "span array missing");
    if ((st = check_deps(g, i)) != STARFOLD_OK) return st;
    for (size_t k = 0; k < n->nsrc; k++)
        if ((st = check_span(g, i, n->src[k], "source")) != STARFOLD_OK) return st;
    for (size_t k = 0; k < n->ndst; k++)
        if ((st = check_span(g, i, n->dst[k], "destination")) != STARFOLD_OK) return st;
    if ((st = check_arity(g, i)) != STARFOLD_OK) return st;
    return check_writes(g, i);
}

starfold_status_t starfold__check_structure(const struct starfold_graph *g)
{
    const int ndev = starfold_topology_num_devices(g->topology);
    for (size_t b = 0; b < g->nbufs; b++) {
        const starfold__buffer_t *x = &g->bufs[b];
        if (x->device < 0 || x->device >= ndev || starfold_dtype_size(x->dtype) == 0)
            return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "%s: buffer %zu has device %d (of %d) and dtype %d",
                            g->algorithm, b, x->device, ndev, (int)x->dtype);
    }
    for (size_t i = 0; i < g->nnodes; i++) {
        starfold_status_t st = check_node(g, i, ndev);
        if (st != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}
