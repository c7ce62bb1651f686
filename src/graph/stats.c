/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Summary numbers of a graph and its traffic per device pair. A task "reads" its src spans; a read of
 * a buffer placed on a device of another memory than the task's is a transfer over the link between
 * the two (the runtime moves the data), so it counts as bytes moved from the buffer's device to the
 * task's. Reads between devices sharing one memory (CPU devices in host memory) move nothing.
 * Like the exporter, these functions trust that spans name existing buffers (the builder checks it).
 */
#include "config.h"

#include "base/common.h"
#include "graph/graph.h"

/* Bytes node @n reads, all of them (@remote_only = 0) or only from other devices' buffers. */
static uint64_t node_read_bytes(const struct starfold_graph *g, const starfold__node_t *n, int remote_only)
{
    uint64_t bytes = 0;
    for (size_t k = 0; k < n->nsrc; k++)
        if (!remote_only || !starfold_topology_same_memory(g->topology, g->bufs[n->src[k].buf].device, n->device))
            bytes += starfold__span_bytes(g, n->src[k]);
    return bytes;
}

/*
 * Longest chain by task count and heaviest chain by bytes read, in one pass in node order: deps are
 * earlier nodes, so each node's best predecessor is final when the node is reached.
 */
static starfold_status_t critical_paths(const struct starfold_graph *g, size_t *tasks, uint64_t *bytes)
{
    const size_t n = g->nnodes;
    size_t *len = malloc((n ? n : 1) * sizeof *len);
    uint64_t *heavy = malloc((n ? n : 1) * sizeof *heavy);
    if (!len || !heavy) {
        free(len);
        free(heavy);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory measuring %zu tasks", n);
    }
    *tasks = 0;
    *bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const starfold__node_t *nd = &g->nodes[i];
        size_t l = 0;
        uint64_t h = 0;
        for (size_t k = 0; k < nd->ndeps; k++) {
            const size_t d = nd->deps[k];
            if (d >= i) continue; /* not a valid dep: starfold_graph_check() reports it */
            if (len[d] > l) l = len[d];
            if (heavy[d] > h) h = heavy[d];
        }
        len[i] = l + 1;
        heavy[i] = h + node_read_bytes(g, nd, 0);
        if (len[i] > *tasks) *tasks = len[i];
        if (heavy[i] > *bytes) *bytes = heavy[i];
    }
    free(len);
    free(heavy);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_graph_stats(starfold_graph_t g, starfold_graph_stats_t *stats)
{
    if (!g || !stats) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_graph_stats: NULL argument");
    starfold_graph_stats_t s;
    memset(&s, 0, sizeof s);
    s.num_tasks = g->nnodes;
    s.num_buffers = g->nbufs;
    for (size_t i = 0; i < g->nnodes; i++) {
        const starfold__node_t *n = &g->nodes[i];
        if ((int)n->kind >= 0 && (int)n->kind < STARFOLD_TASK_KIND_COUNT) s.tasks_by_kind[n->kind]++;
        s.num_edges += n->ndeps;
        s.bytes_moved += node_read_bytes(g, n, 1);
    }
    for (size_t b = 0; b < g->nbufs; b++)
        if (g->bufs[b].kind == SF_BUF_TEMP)
            s.temp_bytes += (uint64_t)g->bufs[b].count * starfold_dtype_size(g->bufs[b].dtype);
    starfold_status_t st = critical_paths(g, &s.critical_path_tasks, &s.critical_path_bytes);
    if (st != STARFOLD_OK) return st;
    *stats = s;
    return STARFOLD_OK;
}

static int device_ok(int d) { return d >= 0 && d < STARFOLD_MAX_DEVICES; }

/* Largest device number any buffer or task names, or -1 when one is outside 0 .. MAX_DEVICES-1. */
static int max_device(const struct starfold_graph *g)
{
    int m = 0;
    for (size_t b = 0; b < g->nbufs; b++) {
        if (!device_ok(g->bufs[b].device)) return -1;
        if (g->bufs[b].device > m) m = g->bufs[b].device;
    }
    for (size_t i = 0; i < g->nnodes; i++) {
        if (!device_ok(g->nodes[i].device)) return -1;
        if (g->nodes[i].device > m) m = g->nodes[i].device;
    }
    return m;
}

STARFOLD_API starfold_status_t starfold_graph_link_bytes(starfold_graph_t g, starfold_link_bytes_t **pairs,
                                                         size_t *count)
{
    if (!g || !pairs || !count)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_graph_link_bytes: NULL argument");
    *pairs = NULL;
    *count = 0;
    const int top = max_device(g);
    if (top < 0)
        return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "%s: a buffer or task has a device outside 0..%d", g->algorithm,
                        STARFOLD_MAX_DEVICES - 1);
    /* A dense from-by-to matrix: devices are few (a topology has at most STARFOLD_MAX_DEVICES). */
    const size_t nd = (size_t)top + 1;
    uint64_t *m = calloc(nd * nd, sizeof *m);
    if (!m) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory counting traffic of %zu devices", nd);
    for (size_t i = 0; i < g->nnodes; i++) {
        const starfold__node_t *n = &g->nodes[i];
        for (size_t k = 0; k < n->nsrc; k++) {
            const int from = g->bufs[n->src[k].buf].device;
            if (!starfold_topology_same_memory(g->topology, from, n->device))
                m[(size_t)from * nd + (size_t)n->device] += starfold__span_bytes(g, n->src[k]);
        }
    }
    size_t used = 0;
    for (size_t k = 0; k < nd * nd; k++) used += m[k] != 0;
    starfold_link_bytes_t *out = used ? malloc(used * sizeof *out) : NULL;
    if (used && !out) {
        free(m);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory listing %zu device pairs", used);
    }
    size_t j = 0;
    for (size_t k = 0; k < nd * nd; k++)
        if (m[k]) out[j++] = (starfold_link_bytes_t){ (int)(k / nd), (int)(k % nd), m[k] };
    free(m);
    *pairs = out; /* ownership moves to the caller */
    *count = used;
    return STARFOLD_OK;
}
