/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The caller's side of a submission, checked before anything is planned or created in StarPU: the
 * arguments of the public calls, each view against its graph buffer, and the views grouped by vector
 * with no output overlapping another view (but its in-place input).
 *
 * Grouping. Planning works on vectors, not views: starfold__views_group() numbers the distinct
 * handles in order of first appearance (vector 0, 1, ...) and lists every view as a ref (vector,
 * range, buffer), grouped by vector in that order and, within a vector, sorted by range then buffer:
 *
 *     views  in0.t0 in0.t1 in1.t0 out0.t0 ...       refs  vec 0: [0,4) b0  [4,10) b1
 *            (h0,0) (h0,4) (h1,0) (h0,0)                        [0,4) b6   <- in place: same range
 *                                                         vec 1: [0,4) b2 ...
 *
 * The handles stay the caller's (borrowed: the caller keeps them registered until the graph's tasks
 * are done); the grouping owns its arrays (starfold__views_free()). Views without a handle (allowed
 * for buffers of no element) are not listed.
 */
#include "config.h"

#include "base/common.h"
#include "exec/submit.h"

/* The shape of the handle last looked at: views of one vector come one after another. */
typedef struct shape_cache {
    starpu_data_handle_t handle;
    int vector;
    size_t nx, elemsize;
} shape_cache_t;

/*
 * @v: the view given for graph buffer @b (its element count and dtype); @exact: the vector must be
 * exactly the tensor (starfold_submit), else the range must lie within it (starfold_submit_views).
 */
static starfold_status_t check_view(const starfold_view_t *v, const starfold__buffer_t *b, const char *what, int slot,
                                    size_t tensor, int exact, shape_cache_t *sc, const char *fn)
{
    starpu_data_handle_t h = v->handle;
    if (!h) {
        if (b->count == 0) return STARFOLD_OK; /* nothing to move: no handle needed */
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s slot %d tensor %zu: NULL handle", fn, what, slot,
                        tensor);
    }
    if (sc->handle != h) {
        sc->handle = h;
        sc->vector = starfold__is_vector(h);
        if (sc->vector) sc->nx = starpu_vector_get_nx(h), sc->elemsize = starpu_vector_get_elemsize(h);
    }
    if (!sc->vector)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s slot %d tensor %zu: not a StarPU vector",
                        fn, what, slot, tensor);
    const size_t nx = sc->nx, elem = sc->elemsize;
    if (!exact) {
        if (elem != starfold_dtype_size(b->dtype))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                            "%s: %s slot %d tensor %zu: vector of %zu-byte elements, the tensor is "
                            "%s",
                            fn, what, slot, tensor, elem, starfold_dtype_name(b->dtype));
        if (v->offset > nx || b->count > nx - v->offset)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                            "%s: %s slot %d tensor %zu: elements [%zu, %zu + %zu) lie outside its "
                            "vector of %zu",
                            fn, what, slot, tensor, v->offset, v->offset, b->count, nx);
        return STARFOLD_OK;
    }
    if (nx != b->count || elem != starfold_dtype_size(b->dtype))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                        "%s: %s slot %d tensor %zu: vector of %zu elements of %zu bytes, the graph wants "
                        "%zu elements of %zu bytes (%s)",
                        fn, what, slot, tensor, nx, elem, b->count, starfold_dtype_size(b->dtype),
                        starfold_dtype_name(b->dtype));
    return STARFOLD_OK;
}

/* By range, then buffer (within one vector). */
static int ref_range_cmp(const void *pa, const void *pb)
{
    const starfold__plan_ref_t *a = pa, *b = pb;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
    return a->buf < b->buf ? -1 : a->buf > b->buf;
}

/* Index of @h in the open-addressing table @slots (@cap a power of two): where it is, or the empty slot. */
static size_t handle_slot(const starpu_data_handle_t *slots, size_t cap, starpu_data_handle_t h)
{
    size_t i = (size_t)(((uintptr_t)h >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1);
    while (slots[i] && slots[i] != h) i = (i + 1) & (cap - 1);
    return i;
}

int starfold__handle_table_init(starfold__handle_table_t *t)
{
    *t = (starfold__handle_table_t){ calloc(64, sizeof(starpu_data_handle_t)), malloc(sizeof(size_t) * 64), 64, 0 };
    if (t->slots && t->vec) return 0;
    starfold__handle_table_free(t);
    return -1;
}

void starfold__handle_table_free(starfold__handle_table_t *t)
{
    free(t->slots);
    free(t->vec);
    t->slots = NULL;
    t->vec = NULL;
}

size_t starfold__handle_number(starfold__handle_table_t *t, starpu_data_handle_t h)
{
    size_t k = handle_slot(t->slots, t->cap, h);
    if (t->slots[k]) return t->vec[k];
    if (2 * (t->n + 1) > t->cap) { /* grow: rehash every handle seen */
        const size_t ncap = t->cap * 2;
        starpu_data_handle_t *ns = calloc(ncap, sizeof *ns);
        size_t *nv = malloc(sizeof *nv * ncap);
        if (!ns || !nv) {
            free(ns);
            free(nv);
            return SF_NONE;
        }
        for (size_t j = 0; j < t->cap; j++)
            if (t->slots[j]) {
                const size_t m = handle_slot(ns, ncap, t->slots[j]);
                ns[m] = t->slots[j];
                nv[m] = t->vec[j];
            }
        free(t->slots);
        free(t->vec);
        t->slots = ns;
        t->vec = nv;
        t->cap = ncap;
        k = handle_slot(t->slots, t->cap, h);
    }
    t->slots[k] = h;
    return t->vec[k] = t->n++;
}

/*
 * Groups the views of the graph's inputs and outputs that name a handle (see the file's head); -1 on
 * OOM, with nothing left to free. Grouping goes through a hash table of the distinct handles and one
 * counting pass, and a group that arrives sorted (a bucket's tensors, one after another) is not sorted
 * again: a general sort of the 16,000 views of 1,000 tensors on 8 replicas took a third of
 * starfold_submit_views().
 */
int starfold__views_group(const struct starfold_graph *g, const starfold_view_t *inputs,
                          const starfold_view_t *outputs, starfold__views_t *views)
{
    const size_t nin = (size_t)g->num_inputs * g->num_tensors, nout = (size_t)g->num_outputs * g->num_tensors;
    const size_t nall = nin + nout;
    starfold__plan_ref_t *refs = malloc(sizeof *refs * (nall + 1)), *out = NULL;
    size_t *start = NULL, *group_of = NULL, n = 0;
    starpu_data_handle_t *handles = NULL, prev = NULL;
    starfold__handle_table_t t;
    const int table = starfold__handle_table_init(&t);
    if (!refs || table != 0) goto fail;
    for (size_t i = 0; i < nall; i++) {
        const starfold_view_t *v = i < nin ? &inputs[i] : &outputs[i - nin];
        const size_t b = i < nin ? g->input_buf[i] : g->output_buf[i - nin];
        if (!v->handle) continue;
        /* consecutive views usually share their handle */
        const size_t vec = n > 0 && v->handle == prev ? refs[n - 1].vec : starfold__handle_number(&t, v->handle);
        if (vec == SF_NONE) goto fail;
        prev = v->handle;
        refs[n++] = (starfold__plan_ref_t){ vec, v->offset, v->offset + g->bufs[b].count, b };
    }
    /*
     * Each vector's views in one run already (a bucket per replica gives that): nothing to move, and
     * the runs come in vector order. Otherwise a counting pass puts vector k's views at
     * out[start[k] .. start[k + 1]), in their order.
     */
    const size_t nvec = t.n;
    size_t runs = n > 0;
    for (size_t i = 1; i < n; i++) runs += refs[i].vec != refs[i - 1].vec;
    if (runs != nvec) {
        out = malloc(sizeof *out * (n + 1));
        start = calloc(nvec + 1, sizeof *start);
        group_of = malloc(sizeof *group_of * (nvec + 1));
        if (!out || !start || !group_of) goto fail;
        for (size_t i = 0; i < n; i++) start[refs[i].vec + 1]++;
        for (size_t k = 0; k < nvec; k++) start[k + 1] += start[k];
        memcpy(group_of, start, sizeof *start * nvec);
        for (size_t i = 0; i < n; i++) out[group_of[refs[i].vec]++] = refs[i];
        free(refs);
        refs = out;
        out = NULL;
    }
    /* Each vector's views by range: sorted only when they do not come sorted. */
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && refs[j].vec == refs[i].vec; j++) {}
        size_t k = i + 1;
        while (k < j && ref_range_cmp(&refs[k - 1], &refs[k]) <= 0) k++;
        if (k < j) qsort(refs + i, j - i, sizeof *refs, ref_range_cmp);
    }
    handles = malloc(sizeof *handles * (nvec + 1));
    if (!handles) goto fail;
    for (size_t j = 0; j < t.cap; j++)
        if (t.slots[j]) handles[t.vec[j]] = t.slots[j];
    free(start);
    free(group_of);
    starfold__handle_table_free(&t);
    *views = (starfold__views_t){ refs, n, handles, nvec };
    return 0;
fail:
    free(refs);
    free(out);
    free(start);
    free(group_of);
    starfold__handle_table_free(&t);
    return -1;
}

void starfold__views_free(starfold__views_t *views)
{
    free(views->refs);
    free(views->handles);
    views->refs = NULL;
    views->handles = NULL;
}

/*
 * The caller's views, checked: each within its vector and of its tensor's element size (@exact: the
 * vector is the tensor, as starfold_submit() wants); and no output overlapping another view but its
 * in-place input. Views come grouped by vector and sorted by range (starfold__views_group()), so
 * each group of identical ranges may hold inputs only, or one output with at most its own device's
 * input of the same tensor; a group with an output must then overlap no other group: swept in
 * order, with the farthest end reached by any group and by any group holding an output.
 */
starfold_status_t starfold__check_views(const struct starfold_graph *g, const starfold_view_t *inputs,
                                       const starfold_view_t *outputs, int exact, const starfold__views_t *views,
                                       const char *fn)
{
    const starfold__plan_ref_t *refs = views->refs;
    const size_t nrefs = views->nrefs;
    const size_t T = g->num_tensors;
    starfold_status_t st = STARFOLD_OK;
    shape_cache_t sc = { NULL, 0, 0, 0 };
    for (int s = 0; s < g->num_inputs; s++)
        for (size_t t = 0; t < T; t++)
            if ((st = check_view(&inputs[(size_t)s * T + t], &g->bufs[starfold__graph_input(g, s, t)], "input", s, t,
                                 exact, &sc, fn)) != STARFOLD_OK)
                return st;
    /* Outputs have the graph's output dtype (float64 for a promoted integer MEAN). */
    for (int d = 0; d < g->num_outputs; d++)
        for (size_t t = 0; t < T; t++)
            if ((st = check_view(&outputs[(size_t)d * T + t], &g->bufs[starfold__graph_output(g, d, t)], "output", d, t,
                                 exact, &sc, fn)) != STARFOLD_OK)
                return st;
    size_t reach = 0, reach_out = 0;
    for (size_t i = 0; i < nrefs && st == STARFOLD_OK; i++) {
        if (i == 0 || refs[i].vec != refs[i - 1].vec) reach = reach_out = 0;
        size_t j = i;
        while (j + 1 < nrefs && refs[j + 1].vec == refs[i].vec && refs[j + 1].lo == refs[i].lo &&
               refs[j + 1].hi == refs[i].hi)
            j++;
        /* Group refs[i..j]: one range of one vector. */
        size_t nouts = 0, out_buf = SF_NONE;
        for (size_t k = i; k <= j; k++)
            if (g->bufs[refs[k].buf].kind == SF_BUF_OUTPUT) nouts++, out_buf = refs[k].buf;
        const int empty = refs[i].lo == refs[i].hi;
        if (nouts > 1 && !empty) {
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: one %s given for several outputs", fn,
                          exact ? "handle" : "range of a vector");
        } else if (nouts == 1 && !empty) {
            const starfold__buffer_t *o = &g->bufs[out_buf];
            for (size_t k = i; k <= j && st == STARFOLD_OK; k++) {
                const starfold__buffer_t *b = &g->bufs[refs[k].buf];
                if (b->kind == SF_BUF_INPUT && g->kind == STARFOLD_COLL_GATHER)
                    st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                  "%s: output slot %d tensor %zu is the %s of input slot %d tensor %zu; a gather's output "
                                  "holds every source's block and cannot be computed in place",
                                  fn, o->slot, o->tensor, exact ? "handle" : "range", b->slot, b->tensor);
                else if (b->kind == SF_BUF_INPUT && (b->tensor != o->tensor || b->device != o->device))
                    st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                  "%s: output slot %d tensor %zu is the %s of input slot %d tensor %zu; an output may "
                                  "only be its own device's input of the same tensor",
                                  fn, o->slot, o->tensor, exact ? "handle" : "range", b->slot, b->tensor);
                else if (b->kind == SF_BUF_INPUT && b->dtype != o->dtype)
                    st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                  "%s: output slot %d tensor %zu is %s, its input %s: it cannot be computed in place",
                                  fn, o->slot, o->tensor, starfold_dtype_name(o->dtype), starfold_dtype_name(b->dtype));
            }
            if (st == STARFOLD_OK && refs[i].lo < reach)
                st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                              "%s: output slot %d tensor %zu (elements [%zu, %zu) of its vector) overlaps another view",
                              fn, o->slot, o->tensor, refs[i].lo, refs[i].hi);
        }
        if (st == STARFOLD_OK && !empty && refs[i].lo < reach_out) {
            const starfold__buffer_t *b = &g->bufs[refs[i].buf];
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                          "%s: %s slot %d tensor %zu (elements [%zu, %zu) of its vector) overlaps an output", fn,
                          b->kind == SF_BUF_OUTPUT ? "output" : "input", b->slot, b->tensor, refs[i].lo, refs[i].hi);
        }
        if (refs[i].hi > reach) reach = refs[i].hi;
        if (nouts && refs[i].hi > reach_out) reach_out = refs[i].hi;
        i = j;
    }
    return st;
}

/* The arguments of the public entry points: non-NULL where needed. */
starfold_status_t starfold__check_args(starfold_context_t context, starfold_graph_t graph, const void *inputs,
                                      const void *outputs, const void *out, const char *fn, const char *out_name)
{
    if (!context || !graph || !out)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                        !context ? "context" : !graph ? "graph" : out_name);
    const size_t T = graph->num_tensors;
    if ((graph->num_inputs && T && !inputs) || (graph->num_outputs && T && !outputs))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s array", fn, !inputs ? "inputs" : "outputs");
    return STARFOLD_OK;
}
