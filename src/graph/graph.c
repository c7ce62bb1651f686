/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Graph IR: creation, the builder algorithms call, accessors, destruction.
 *
 * Ownership: a graph owns its buffers, nodes and copies of the collective's arrays; it holds one
 * reference on its topology. Builders validate every span they are given, so an algorithm bug is
 * reported as STARFOLD_ERR_INTERNAL at the faulty call rather than as a wrong result later.
 *
 * Dependency inference (see graph.h): each buffer keeps the history of its accesses. A new node
 * depends on every earlier node whose access overlaps one of its own with at least one side writing.
 * The history is kept by length class (accesses of 2^c to 2^(c+1) - 1 elements), each class sorted
 * by offset: finding the overlaps is, per class, a binary search and a scan over the accesses that
 * start less than the class's longest access earlier, so a buffer read chunk by chunk by 100,000
 * tasks costs O(log n) per access instead of O(n) (a scan of the whole history made a fine-chunked
 * collective quadratic), and one long access (a pack reading a whole tensor) does not widen the scan
 * of the short ones. An access in offset order is appended to its class; one out of order waits in a
 * short unsorted list, scanned in full, which is sorted and merged into the class once it holds more
 * than max(64, sqrt(n)) accesses (inserting each in place moved the whole class every time: quadratic
 * again). Empty accesses overlap nothing and are not kept. Dependencies are kept sorted and unique,
 * so the order in which the overlaps are found does not show. The history is dropped by starfold__graph_seal() once the algorithm has
 * finished.
 */
#include "config.h"

#include "base/common.h"
#include "graph/graph.h"
#include "topology/topology.h"

#include <stdio.h>

static void hist_free(starfold__buffer_t *b);

static void graph_free(starfold_graph_t g)
{
    if (!g) return;
    for (size_t i = 0; i < g->nbufs; i++) hist_free(&g->bufs[i]);
    for (size_t i = 0; i < g->nnodes; i++) {
        free(g->nodes[i].src);
        free(g->nodes[i].dst);
        free(g->nodes[i].deps);
    }
    free(g->bufs);
    free(g->nodes);
    free(g->input_devices);
    free(g->output_devices);
    free(g->tensors);
    free(g->input_buf);
    free(g->output_buf);
    free(g->source_counts);
    free(g->algorithm);
    starfold_topology_destroy(g->topology);
    free(g);
}

STARFOLD_API void starfold_graph_destroy(starfold_graph_t graph)
{
    graph_free(graph);
}

static starfold_status_t add_buffer(starfold_graph_t g, starfold__buf_kind_t kind, int device, starfold_dtype_t dtype,
                                    size_t count, int slot, size_t tensor, size_t *index)
{
    if (SF_GROW(g->bufs, g->nbufs, g->cap_bufs))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory adding buffer %zu", g->nbufs);
    starfold__buffer_t *b = &g->bufs[g->nbufs];
    memset(b, 0, sizeof *b);
    b->kind = kind;
    b->device = device;
    b->dtype = dtype;
    b->count = count;
    b->slot = slot;
    b->tensor = tensor;
    *index = g->nbufs++;
    return STARFOLD_OK;
}

starfold_status_t starfold__graph_create(starfold_topology_t topology, const char *algorithm,
                                  const starfold_collective_desc_t *desc, starfold_graph_t *out)
{
    starfold_status_t st = STARFOLD_OK;
    starfold_graph_t g = calloc(1, sizeof *g);
    if (!g) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating a graph");
    g->topology = starfold_topology_retain(topology);
    g->kind = desc->kind;
    g->op = desc->op;
    g->promote_integer_mean = desc->promote_integer_mean != 0;
    g->num_inputs = desc->num_sources;
    g->num_outputs = desc->num_destinations;
    g->num_tensors = desc->num_tensors;
    g->algorithm = starfold__strdup(algorithm);
    g->input_devices = malloc(sizeof(int) * (size_t)g->num_inputs);
    g->output_devices = malloc(sizeof(int) * (size_t)g->num_outputs);
    g->tensors = malloc(sizeof(starfold_tensor_desc_t) * g->num_tensors);
    g->input_buf = malloc(sizeof(size_t) * (size_t)g->num_inputs * g->num_tensors);
    g->output_buf = malloc(sizeof(size_t) * (size_t)g->num_outputs * g->num_tensors);
    if (!g->algorithm || !g->input_devices || !g->output_devices || !g->tensors || !g->input_buf ||
        !g->output_buf) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating a graph of %zu tensors", g->num_tensors);
        goto fail;
    }
    memcpy(g->input_devices, desc->sources, sizeof(int) * (size_t)g->num_inputs);
    memcpy(g->output_devices, desc->destinations, sizeof(int) * (size_t)g->num_outputs);
    memcpy(g->tensors, desc->tensors, sizeof(starfold_tensor_desc_t) * g->num_tensors);
    if (desc->kind == STARFOLD_COLL_GATHER && desc->source_counts) {
        const size_t nc = (size_t)g->num_inputs * g->num_tensors;
        if (!(g->source_counts = malloc(sizeof(size_t) * nc))) {
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating a graph");
            goto fail;
        }
        memcpy(g->source_counts, desc->source_counts, sizeof(size_t) * nc);
    }
    for (int s = 0; s < g->num_inputs; s++)
        for (size_t t = 0; t < g->num_tensors; t++)
            SF_CHECK_GOTO(add_buffer(g, SF_BUF_INPUT, g->input_devices[s], g->tensors[t].dtype, starfold__source_count(g, s, t),
                                     s, t, &g->input_buf[(size_t)s * g->num_tensors + t]),
                          st, fail);
    for (int d = 0; d < g->num_outputs; d++)
        for (size_t t = 0; t < g->num_tensors; t++)
            SF_CHECK_GOTO(add_buffer(g, SF_BUF_OUTPUT, g->output_devices[d], starfold__graph_out_dtype(g, g->tensors[t].dtype),
                                     g->kind == STARFOLD_COLL_GATHER ? starfold__gather_offset(g, g->num_inputs, t)
                                                                     : g->tensors[t].count,
                                     d, t, &g->output_buf[(size_t)d * g->num_tensors + t]),
                          st, fail);
    *out = g;
    return STARFOLD_OK;
fail:
    graph_free(g);
    return st;
}

starfold_dtype_t starfold__graph_out_dtype(const struct starfold_graph *g, starfold_dtype_t dt)
{
    const int integer = starfold__dtype_integer(dt);
    return g->promote_integer_mean && g->op == STARFOLD_OP_MEAN && g->kind == STARFOLD_COLL_REDUCE && integer
               ? starfold__dtype_truediv(dt)
               : dt;
}

starfold_status_t starfold__graph_add_temp(starfold_graph_t g, int device, starfold_dtype_t dtype, size_t count, int tag,
                                    size_t *buf)
{
    if (device < 0 || device >= starfold_topology_num_devices(g->topology))
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: temporary on device %d outside the topology", g->algorithm, device);
    return add_buffer(g, SF_BUF_TEMP, device, dtype, count, -1, tag < 0 ? 0 : (size_t)tag, buf);
}

/* Adds @before to @n's deps, keeping them sorted and unique. */
static starfold_status_t node_add_dep(starfold__node_t *n, size_t before)
{
    size_t lo = 0, hi = n->ndeps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (n->deps[mid] < before) lo = mid + 1;
        else hi = mid;
    }
    if (lo < n->ndeps && n->deps[lo] == before) return STARFOLD_OK;
    if (SF_GROW(n->deps, n->ndeps, n->cap_deps))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory adding a dependency");
    memmove(&n->deps[lo + 1], &n->deps[lo], (n->ndeps - lo) * sizeof(size_t));
    n->deps[lo] = before;
    n->ndeps++;
    return STARFOLD_OK;
}

/*
 * While add_node infers a new node's dependencies they are appended as found (out of order, maybe
 * repeated), then sorted and made unique once: a node that depends on d others costs O(d log d), where
 * a sorted insertion per dependency cost O(d^2) (a pack's scatter depending on 190,000 writers took
 * seconds in memmove).
 */
static starfold_status_t node_append_dep(starfold__node_t *n, size_t before)
{
    if (n->ndeps && n->deps[n->ndeps - 1] == before) return STARFOLD_OK;
    if (SF_GROW(n->deps, n->ndeps, n->cap_deps))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory adding a dependency");
    n->deps[n->ndeps++] = before;
    return STARFOLD_OK;
}

static int size_cmp(const void *pa, const void *pb)
{
    const size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return (a > b) - (a < b);
}

static void node_normalize_deps(starfold__node_t *n)
{
    int sorted = 1;
    for (size_t i = 1; i < n->ndeps && sorted; i++) sorted = n->deps[i - 1] < n->deps[i];
    if (sorted) return;
    qsort(n->deps, n->ndeps, sizeof *n->deps, size_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n->ndeps; i++)
        if (k == 0 || n->deps[k - 1] != n->deps[i]) n->deps[k++] = n->deps[i];
    n->ndeps = k;
}

static int overlap(size_t a_off, size_t a_cnt, size_t b_off, size_t b_cnt)
{
    return a_cnt && b_cnt && a_off < b_off + b_cnt && b_off < a_off + a_cnt;
}

/* The accesses of one length class: sorted[] by offset, then recent[] out of order. */
struct starfold__hist {
    starfold__access_t *sorted, *recent;
    size_t nsorted, cap_sorted, nrecent, cap_recent;
    size_t max_count; /* the longest access of the class: how far left an overlap can start */
};

static void hist_free(starfold__buffer_t *b)
{
    for (int c = 0; c < b->nhist; c++) {
        free(b->hist[c].sorted);
        free(b->hist[c].recent);
    }
    free(b->hist);
    b->hist = NULL;
    b->nhist = 0;
}

/* The length class of a non-empty access: floor(log2(count)). */
static int length_class(size_t count)
{
    int c = 0;
    while (count >>= 1) c++;
    return c;
}

/* The first access of @h's sorted part whose offset is > @offset. */
static size_t sorted_after(const struct starfold__hist *h, size_t offset)
{
    size_t lo = 0, hi = h->nsorted;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (h->sorted[mid].offset <= offset) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Adds a dependency of @self on @a when the two accesses conflict. */
static starfold_status_t depend_on(starfold_graph_t g, size_t self, const starfold__access_t *a, starfold__span_t s,
                                   int write)
{
    if (a->node == self || !(a->write || write) || !overlap(a->offset, a->count, s.offset, s.count)) return STARFOLD_OK;
    return node_append_dep(&g->nodes[self], a->node);
}

static int access_cmp(const void *pa, const void *pb)
{
    const starfold__access_t *a = pa, *b = pb;
    return a->offset != b->offset ? (a->offset > b->offset) - (a->offset < b->offset)
                                  : (a->node > b->node) - (a->node < b->node);
}

/* Sorts the out-of-order accesses and merges them into the sorted part (O(n), every sqrt(n) accesses). */
static starfold_status_t merge_recent(struct starfold__hist *h)
{
    const size_t n = h->nsorted + h->nrecent;
    starfold__access_t *merged = malloc(n * sizeof *merged);
    if (!merged) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory tracking buffer accesses");
    qsort(h->recent, h->nrecent, sizeof *h->recent, access_cmp);
    size_t i = 0, j = 0, k = 0;
    while (i < h->nsorted || j < h->nrecent)
        merged[k++] = j == h->nrecent || (i < h->nsorted && access_cmp(&h->sorted[i], &h->recent[j]) <= 0)
                          ? h->sorted[i++]
                          : h->recent[j++];
    free(h->sorted);
    h->sorted = merged;
    h->nsorted = h->cap_sorted = n;
    h->nrecent = 0;
    return STARFOLD_OK;
}

/* Records an access in its class. */
static starfold_status_t hist_add(starfold__buffer_t *b, starfold__access_t rec)
{
    const int c = length_class(rec.count);
    if (c >= b->nhist) {
        struct starfold__hist *more = realloc(b->hist, (size_t)(c + 1) * sizeof *more);
        if (!more) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory tracking buffer accesses");
        memset(more + b->nhist, 0, (size_t)(c + 1 - b->nhist) * sizeof *more);
        b->hist = more;
        b->nhist = c + 1;
    }
    struct starfold__hist *h = &b->hist[c];
    if (rec.count > h->max_count) h->max_count = rec.count;
    if (h->nsorted == 0 || h->sorted[h->nsorted - 1].offset <= rec.offset) { /* in order: appended */
        if (SF_GROW(h->sorted, h->nsorted, h->cap_sorted))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory tracking buffer accesses");
        h->sorted[h->nsorted++] = rec;
        return STARFOLD_OK;
    }
    if (SF_GROW(h->recent, h->nrecent, h->cap_recent))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory tracking buffer accesses");
    h->recent[h->nrecent++] = rec;
    size_t limit = 64;
    while (limit * limit < h->nsorted) limit *= 2;
    return h->nrecent > limit ? merge_recent(h) : STARFOLD_OK;
}

/* Infers deps for one access of node @self and records the access in the buffer's history. */
static starfold_status_t track_access(starfold_graph_t g, size_t self, starfold__span_t s, int write)
{
    if (s.count == 0) return STARFOLD_OK; /* overlaps nothing */
    starfold__buffer_t *b = &g->bufs[s.buf];
    starfold_status_t st;
    const size_t end = s.offset + s.count - 1;
    for (int c = 0; c < b->nhist; c++) {
        const struct starfold__hist *h = &b->hist[c];
        /* Candidates start before the access ends, and no more than the class's longest access before
         * it starts. */
        for (size_t i = sorted_after(h, end); i-- > 0;) {
            if (h->sorted[i].offset + h->max_count <= s.offset) break;
            if ((st = depend_on(g, self, &h->sorted[i], s, write)) != STARFOLD_OK) return st;
        }
        for (size_t i = 0; i < h->nrecent; i++)
            if ((st = depend_on(g, self, &h->recent[i], s, write)) != STARFOLD_OK) return st;
    }
    return hist_add(b, (starfold__access_t){ self, s.offset, s.count, write });
}

static starfold_status_t check_span(starfold_graph_t g, starfold__span_t s, const char *what)
{
    if (s.buf >= g->nbufs)
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: %s span names buffer %zu of %zu", g->algorithm, what, s.buf,
                        g->nbufs);
    const starfold__buffer_t *b = &g->bufs[s.buf];
    if (s.offset > b->count || s.count > b->count - s.offset)
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: %s span [%zu, +%zu) outside buffer %zu of %zu elements",
                        g->algorithm, what, s.offset, s.count, s.buf, b->count);
    return STARFOLD_OK;
}

/*
 * Appends a node after validating its spans (bounds, one dtype, writes on one device, never into an
 * input), copies the span arrays and infers its dependencies.
 */
static starfold_status_t add_node(starfold_graph_t g, int device, starfold_task_kind_t kind, starfold_op_t op,
                                  uint32_t divisor, const starfold__span_t *src, size_t nsrc, const starfold__span_t *dst,
                                  size_t ndst, int tag, size_t *node_out)
{
    starfold_status_t st;
    if (ndst == 0) return starfold__error(STARFOLD_ERR_INTERNAL, "%s: node without destination", g->algorithm);
    for (size_t i = 0; i < nsrc; i++)
        if ((st = check_span(g, src[i], "source")) != STARFOLD_OK) return st;
    for (size_t i = 0; i < ndst; i++)
        if ((st = check_span(g, dst[i], "destination")) != STARFOLD_OK) return st;
    if (device < 0) device = g->bufs[dst[0].buf].device; /* by default the task runs where it writes */
    if (device >= starfold_topology_num_devices(g->topology))
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: a task on device %d", g->algorithm, device);
    const starfold_dtype_t dtype = g->bufs[(nsrc ? src : dst)[0].buf].dtype;
    /* A SCALE reading integers may write float32 or float64 (promoting integer MEAN: TensorFlow's truediv). */
    const starfold_dtype_t dst_dtype = kind == STARFOLD_TASK_SCALE ? g->bufs[dst[0].buf].dtype : dtype;
    if (dst_dtype != dtype &&
        !(starfold__dtype_integer(dtype) && dst_dtype == starfold__dtype_truediv(dtype)))
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: a scale converts %s to %s", g->algorithm,
                        starfold_dtype_name(dtype), starfold_dtype_name(dst_dtype));
    for (size_t i = 0; i < ndst; i++) {
        const starfold__buffer_t *b = &g->bufs[dst[i].buf];
        if (b->kind == SF_BUF_INPUT)
            return starfold__error(STARFOLD_ERR_INTERNAL, "%s: a %s task writes input buffer %zu", g->algorithm,
                            starfold_task_kind_name(kind), dst[i].buf);
        if (!starfold_topology_same_memory(g->topology, b->device, device))
            return starfold__error(STARFOLD_ERR_INTERNAL, "%s: a %s task writes on devices %d and %d", g->algorithm,
                            starfold_task_kind_name(kind), device, b->device);
    }
    for (size_t i = 0; i < nsrc + ndst; i++) {
        const starfold__span_t *s = i < nsrc ? &src[i] : &dst[i - nsrc];
        if (g->bufs[s->buf].dtype != (i < nsrc ? dtype : dst_dtype))
            return starfold__error(STARFOLD_ERR_INTERNAL, "%s: a %s task mixes %s and %s", g->algorithm,
                            starfold_task_kind_name(kind), starfold_dtype_name(dtype),
                            starfold_dtype_name(g->bufs[s->buf].dtype));
    }

    /* The task budget (graph.h): checked before anything is allocated, so a collective that would
     * need millions of tasks is refused after at most STARFOLD_GRAPH_MAX_TASKS of them. */
    if (g->nnodes >= STARFOLD_GRAPH_MAX_TASKS || nsrc + ndst > STARFOLD_GRAPH_MAX_SPANS - g->nspans) {
        g->over_budget = 1;
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: more than %d tasks or %d task arguments",
                               g->algorithm, STARFOLD_GRAPH_MAX_TASKS, STARFOLD_GRAPH_MAX_SPANS);
    }
    if (SF_GROW(g->nodes, g->nnodes, g->cap_nodes))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory adding task %zu", g->nnodes);
    const size_t self = g->nnodes;
    starfold__node_t *n = &g->nodes[self];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->device = device;
    n->dtype = dtype;
    n->op = op;
    n->divisor = divisor;
    n->tag = tag;
    n->src = nsrc ? malloc(nsrc * sizeof *src) : NULL;
    n->dst = malloc(ndst * sizeof *dst);
    if ((nsrc && !n->src) || !n->dst) {
        free(n->src);
        free(n->dst);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory adding task %zu", self);
    }
    if (nsrc) memcpy(n->src, src, nsrc * sizeof *src);
    memcpy(n->dst, dst, ndst * sizeof *dst);
    n->nsrc = nsrc;
    n->ndst = ndst;
    n->nseg = 1;
    g->nnodes++; /* from here on graph_free owns the node */
    g->nspans += nsrc + ndst;

    for (size_t i = 0; i < nsrc; i++)
        if ((st = track_access(g, self, src[i], 0)) != STARFOLD_OK) return st;
    for (size_t i = 0; i < ndst; i++)
        if ((st = track_access(g, self, dst[i], 1)) != STARFOLD_OK) return st;
    node_normalize_deps(&g->nodes[self]);
    if (node_out) *node_out = self;
    return STARFOLD_OK;
}

starfold_status_t starfold__graph_reserve(starfold_graph_t g, size_t tasks)
{
    if (tasks <= (size_t)STARFOLD_GRAPH_MAX_TASKS - g->nnodes) return STARFOLD_OK;
    g->over_budget = 1;
    return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: at least %zu more tasks, past %d", g->algorithm, tasks,
                           STARFOLD_GRAPH_MAX_TASKS);
}

static size_t total_count(const starfold__span_t *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += s[i].count;
    return c;
}

starfold_status_t starfold__graph_copy(starfold_graph_t g, starfold_task_kind_t kind, const starfold__span_t *src, size_t nsrc,
                                const starfold__span_t *dst, size_t ndst, int tag, size_t *node)
{
    if (kind != STARFOLD_TASK_COPY && kind != STARFOLD_TASK_PACK && kind != STARFOLD_TASK_UNPACK)
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: starfold__graph_copy given a %s task", g->algorithm,
                        starfold_task_kind_name(kind));
    if (nsrc == 0 || total_count(src, nsrc) != total_count(dst, ndst))
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: %s moves %zu elements into %zu", g->algorithm,
                        starfold_task_kind_name(kind), total_count(src, nsrc), total_count(dst, ndst));
    return add_node(g, -1, kind, STARFOLD_OP_SUM, 1, src, nsrc, dst, ndst, tag, node);
}

starfold_status_t starfold__graph_reduce_n(starfold_graph_t g, starfold_op_t op, const starfold__span_t *src, size_t nsrc,
                                    const starfold__span_t *dst, size_t ndst, uint32_t divisor, int tag, size_t *node)
{
    return starfold__graph_reduce_on(g, -1, op, src, nsrc, dst, ndst, divisor, tag, node);
}

starfold_status_t starfold__graph_reduce_on(starfold_graph_t g, int device, starfold_op_t op, const starfold__span_t *src,
                                     size_t nsrc, const starfold__span_t *dst, size_t ndst, uint32_t divisor, int tag,
                                     size_t *node)
{
    return starfold__graph_reduce_segments(g, device, op, src, nsrc, dst, ndst, 1, divisor, tag, node);
}

starfold_status_t starfold__graph_reduce_segments(starfold_graph_t g, int device, starfold_op_t op, const starfold__span_t *src,
                                           size_t nsrc, const starfold__span_t *dst, size_t ndst, size_t nseg,
                                           uint32_t divisor, int tag, size_t *node)
{
    if (nsrc == 0 || ndst == 0 || nseg == 0)
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: reduce of no source, into nothing or of no segment", g->algorithm);
    if (divisor == 0 || (divisor > 1 && op != STARFOLD_OP_SUM && op != STARFOLD_OP_MEAN))
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: reduce (%s) divided by %u", g->algorithm, starfold__op_name(op),
                        divisor);
    for (size_t q = 0; q < nseg; q++) {
        const size_t c = dst[q * ndst].count;
        for (size_t i = 0; i < nsrc + ndst; i++) {
            const int is_src = i < nsrc;
            const size_t k = is_src ? i : i - nsrc;
            const size_t got = is_src ? src[q * nsrc + k].count : dst[q * ndst + k].count;
            if (got != c)
                return starfold__error(STARFOLD_ERR_INTERNAL,
                                "%s: reduce segment %zu: %s %zu has %zu elements, destination 0 %zu", g->algorithm, q,
                                is_src ? "source" : "destination", k, got, c);
        }
    }
    size_t self;
    starfold_status_t st =
        add_node(g, device, STARFOLD_TASK_REDUCE, op, divisor, src, nsrc * nseg, dst, ndst * nseg, tag, &self);
    if (st != STARFOLD_OK) return st;
    g->nodes[self].nseg = nseg;
    if (node) *node = self;
    return STARFOLD_OK;
}

starfold_status_t starfold__graph_reduce(starfold_graph_t g, starfold_op_t op, const starfold__span_t *src, size_t nsrc,
                                  starfold__span_t dst, int tag, size_t *node)
{
    return starfold__graph_reduce_n(g, op, src, nsrc, &dst, 1, 1, tag, node);
}

starfold_status_t starfold__graph_scale(starfold_graph_t g, starfold__span_t src, starfold__span_t dst, uint32_t divisor, int tag,
                                 size_t *node)
{
    if (divisor == 0 || src.count != dst.count)
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: scale by %u of %zu elements into %zu", g->algorithm, divisor,
                        src.count, dst.count);
    return add_node(g, -1, STARFOLD_TASK_SCALE, STARFOLD_OP_MEAN, divisor, &src, 1, &dst, 1, tag, node);
}

starfold_status_t starfold__graph_reduce_final(starfold_graph_t g, starfold_op_t op, int device, const starfold__span_t *src,
                                        size_t nsrc, starfold__span_t dst, uint32_t divisor, int tag, size_t *node)
{
    const starfold_dtype_t dt = g->bufs[src[0].buf].dtype;
    if (g->bufs[dst.buf].dtype == dt) return starfold__graph_reduce_n(g, op, src, nsrc, &dst, 1, divisor, tag, node);
    size_t t;
    starfold_status_t st = starfold__graph_add_temp(g, device, dt, dst.count, tag, &t);
    if (st == STARFOLD_OK) st = starfold__graph_reduce(g, op, src, nsrc, starfold__whole(g, t), tag, node);
    if (st == STARFOLD_OK) st = starfold__graph_scale(g, starfold__whole(g, t), dst, divisor, tag, NULL);
    return st;
}

starfold_status_t starfold__graph_add_dep(starfold_graph_t g, size_t before, size_t after)
{
    if (before >= after || after >= g->nnodes)
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: dependency %zu -> %zu is not forward", g->algorithm, before, after);
    return node_add_dep(&g->nodes[after], before);
}

void starfold__graph_seal(starfold_graph_t g)
{
    for (size_t i = 0; i < g->nbufs; i++) {
        hist_free(&g->bufs[i]);
    }
}

/* ------------------------------------------------------------------------------------------------ */
/* Accessors                                                                                         */

STARFOLD_API const char *starfold_task_kind_name(starfold_task_kind_t kind)
{
    static const char *const names[STARFOLD_TASK_KIND_COUNT] = { "copy", "reduce", "scale", "pack", "unpack" };
    if ((int)kind < 0 || (int)kind >= STARFOLD_TASK_KIND_COUNT) return "unknown";
    return names[kind];
}

STARFOLD_API size_t starfold_graph_num_tasks(starfold_graph_t g) { return g ? g->nnodes : 0; }
STARFOLD_API size_t starfold_graph_input_count(starfold_graph_t g, int slot, size_t t)
{
    if (!g || t >= g->num_tensors || slot < 0 || slot >= g->num_inputs) return 0;
    return starfold__source_count(g, slot, t);
}

STARFOLD_API size_t starfold_graph_output_count(starfold_graph_t g, size_t t)
{
    if (!g || t >= g->num_tensors || g->num_outputs < 1) return 0;
    return g->bufs[starfold__graph_output(g, 0, t)].count;
}
STARFOLD_API int starfold_graph_num_inputs(starfold_graph_t g) { return g ? g->num_inputs : 0; }
STARFOLD_API int starfold_graph_num_outputs(starfold_graph_t g) { return g ? g->num_outputs : 0; }
STARFOLD_API size_t starfold_graph_num_tensors(starfold_graph_t g) { return g ? g->num_tensors : 0; }
STARFOLD_API starfold_dtype_t starfold_graph_output_dtype(starfold_graph_t g, size_t t)
{
    return g && t < g->num_tensors ? starfold__graph_out_dtype(g, g->tensors[t].dtype) : STARFOLD_FLOAT32;
}

STARFOLD_API starfold_op_t starfold_graph_op(starfold_graph_t g) { return g ? g->op : STARFOLD_OP_SUM; }
STARFOLD_API const char *starfold_graph_algorithm(starfold_graph_t g) { return g ? g->algorithm : ""; }
STARFOLD_API starfold_topology_t starfold_graph_topology(starfold_graph_t g) { return g ? g->topology : NULL; }

STARFOLD_API int starfold_graph_input_device(starfold_graph_t g, int slot)
{
    return g && slot >= 0 && slot < g->num_inputs ? g->input_devices[slot] : -1;
}

STARFOLD_API int starfold_graph_output_device(starfold_graph_t g, int slot)
{
    return g && slot >= 0 && slot < g->num_outputs ? g->output_devices[slot] : -1;
}

STARFOLD_API const starfold_tensor_desc_t *starfold_graph_tensor(starfold_graph_t g, size_t t)
{
    return g && t < g->num_tensors ? &g->tensors[t] : NULL;
}
