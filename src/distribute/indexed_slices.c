/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * IndexedSlices: TensorFlow's sparse values (tf.IndexedSlices), and their reduction as TensorFlow
 * reduces them: the concatenation of every component's rows and indices in component order, MEAN
 * dividing the values (not the indices) by the number of components, the result sparse.
 *
 *   component 0 (device a):  values [[1 2] [3 4]]  indices [0 2]       dense shape [4, 2]
 *   component 1 (device b):  values [[5 6]]        indices [2]
 *   component 2 (device c):  (no rows)
 *
 *   SUM  -> values [[1 2] [3 4] [5 6]]  indices [0 2 2]   on every destination
 *   densify -> [[1 2] [0 0] [8 10] [0 0]]                 (duplicate rows added)
 *
 * Storage: each component is two one-component values of its own (the values, k_c x row_elements of
 * the dtype; the indices, k_c int64), since components differ in row count. A reduction is two
 * graphs of the graph layer's gather collective with per-source counts (values with the op, MEAN
 * dividing as it copies; indices with SUM, i.e. concatenated), submitted on the components' views;
 * the ops' algorithm plans them (ring's all-gather when the destinations are the components' devices,
 * direct copies otherwise). A destination on the host is written by a task on component 0's device.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "distribute/distribute.h"

struct starfold_indexed_slices {
    int refs; /* atomic */
    starfold_context_t ctx;
    starfold_value_kind_t kind;
    starfold_dtype_t dtype;
    size_t dense_rows, row_elements;
    int n;
    int devices[STARFOLD_MAX_DEVICES];
    size_t rows[STARFOLD_MAX_DEVICES];
    starfold_value_t values[STARFOLD_MAX_DEVICES];  /* one component each: rows[c] x row_elements */
    starfold_value_t indices[STARFOLD_MAX_DEVICES]; /* one component each: rows[c] int64 */
};

static void slices_free(struct starfold_indexed_slices *s)
{
    if (!s) return;
    for (int c = 0; c < s->n; c++) {
        starfold_value_destroy(s->values[c]);
        starfold_value_destroy(s->indices[c]);
    }
    free(s);
}

STARFOLD_API void starfold_indexed_slices_destroy(starfold_indexed_slices_t slices)
{
    if (slices && __atomic_sub_fetch(&slices->refs, 1, __ATOMIC_ACQ_REL) == 0) slices_free(slices);
}

STARFOLD_API starfold_indexed_slices_t starfold_indexed_slices_retain(starfold_indexed_slices_t slices)
{
    if (slices) __atomic_add_fetch(&slices->refs, 1, __ATOMIC_RELAXED);
    return slices;
}

/* An empty object with @n components of @rows[c] rows on @devices, storage allocated (content undefined). */
static starfold_status_t slices_alloc(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                      starfold_dtype_t dtype, size_t dense_rows, size_t row_elements, const size_t *rows,
                                      struct starfold_indexed_slices **out)
{
    struct starfold_indexed_slices *s = calloc(1, sizeof *s);
    if (!s) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "IndexedSlices: out of memory");
    s->refs = 1;
    s->ctx = ctx;
    s->kind = kind;
    s->dtype = dtype;
    s->dense_rows = dense_rows;
    s->row_elements = row_elements;
    s->n = n;
    starfold_status_t st = STARFOLD_OK;
    for (int c = 0; c < n && st == STARFOLD_OK; c++) {
        s->devices[c] = devices[c];
        s->rows[c] = rows[c];
        st = starfold__value_alloc(ctx, kind, 1, &devices[c], dtype, rows[c] * row_elements, &s->values[c]);
        if (st == STARFOLD_OK)
            st = starfold__value_alloc(ctx, kind, 1, &devices[c], STARFOLD_INT64, rows[c], &s->indices[c]);
    }
    if (st != STARFOLD_OK) {
        slices_free(s);
        return st;
    }
    *out = s;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_indexed_slices_create(starfold_context_t context, starfold_value_kind_t kind,
                                                              int num_components, const int *devices,
                                                              starfold_dtype_t dtype, size_t dense_rows,
                                                              size_t row_elements, const size_t *rows,
                                                              const void *const *values, const int64_t *const *indices,
                                                              starfold_indexed_slices_t *slices)
{
    static const char fn[] = "starfold_indexed_slices_create";
    if (!context || !devices || !rows || !slices)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                               !context ? "context" : !devices ? "devices" : !rows ? "rows" : "slices");
    if (num_components < 1 || num_components > STARFOLD_MAX_DEVICES)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: num_components must be 1..%d, got %d", fn,
                               STARFOLD_MAX_DEVICES, num_components);
    if (kind != STARFOLD_VALUE_PER_REPLICA && kind != STARFOLD_VALUE_MIRRORED)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown value kind %d", fn, (int)kind);
    if ((int)dtype < 0 || (int)dtype >= STARFOLD_DTYPE_COUNT)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d", fn, (int)dtype);
    if (row_elements == 0 || row_elements > ((size_t)1 << 40) || dense_rows > ((size_t)1 << 48))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: dense shape [%zu, %zu]: a row needs 1 to 2^40 elements and at most 2^48 rows", fn,
                               dense_rows, row_elements);
    for (int c = 0; c < num_components; c++) {
        if (rows[c] > ((size_t)1 << 48) / row_elements)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: component %d: %zu rows of %zu elements are too many",
                                   fn, c, rows[c], row_elements);
        if (rows[c] && ((values && !values[c]) || (indices && !indices[c])))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: component %d: NULL %s for %zu rows", fn, c,
                                   values && !values[c] ? "values" : "indices", rows[c]);
        for (size_t i = 0; indices && i < rows[c]; i++)
            if (indices[c][i] < 0 || (uint64_t)indices[c][i] >= dense_rows)
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "%s: component %d: index %lld of row %zu is outside the dense shape's %zu rows", fn,
                                       c, (long long)indices[c][i], i, dense_rows);
    }
    /* Devices: as for a value (distinct, of the context), checked by creating an empty one. */
    starfold_value_t probe = NULL;
    starfold_status_t st = starfold_value_create(context, kind, num_components, devices, dtype, 0, NULL, &probe);
    starfold_value_destroy(probe);
    if (st != STARFOLD_OK) return st;
    struct starfold_indexed_slices *s = NULL;
    if ((st = slices_alloc(context, kind, num_components, devices, dtype, dense_rows, row_elements, rows, &s)) != STARFOLD_OK)
        return st;
    for (int c = 0; c < num_components && st == STARFOLD_OK; c++) {
        if (!rows[c]) continue;
        if (values) st = starfold_value_write(s->values[c], 0, values[c], rows[c] * row_elements * starfold_dtype_size(dtype));
        if (st == STARFOLD_OK && indices) st = starfold_value_write(s->indices[c], 0, indices[c], rows[c] * sizeof(int64_t));
    }
    if (st != STARFOLD_OK) {
        slices_free(s);
        return st;
    }
    *slices = s;
    return STARFOLD_OK;
}

STARFOLD_API int starfold_indexed_slices_num_components(starfold_indexed_slices_t s) { return s ? s->n : 0; }
STARFOLD_API int starfold_indexed_slices_device(starfold_indexed_slices_t s, int c)
{
    return s && c >= 0 && c < s->n ? s->devices[c] : -1;
}
STARFOLD_API size_t starfold_indexed_slices_rows(starfold_indexed_slices_t s, int c)
{
    return s && c >= 0 && c < s->n ? s->rows[c] : 0;
}
STARFOLD_API size_t starfold_indexed_slices_dense_rows(starfold_indexed_slices_t s) { return s ? s->dense_rows : 0; }
STARFOLD_API size_t starfold_indexed_slices_row_elements(starfold_indexed_slices_t s) { return s ? s->row_elements : 0; }
STARFOLD_API starfold_dtype_t starfold_indexed_slices_dtype(starfold_indexed_slices_t s)
{
    return s ? s->dtype : STARFOLD_FLOAT32;
}
STARFOLD_API starfold_value_kind_t starfold_indexed_slices_kind(starfold_indexed_slices_t s)
{
    return s ? s->kind : STARFOLD_VALUE_PER_REPLICA;
}

static starfold_status_t check_component(const char *fn, starfold_indexed_slices_t s, int c)
{
    if (!s) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL IndexedSlices", fn);
    if (c < 0 || c >= s->n)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: component %d, the IndexedSlices has 0..%d", fn, c, s->n - 1);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_indexed_slices_read(starfold_indexed_slices_t slices, int component, void *values,
                                                            size_t values_bytes, int64_t *indices, size_t indices_bytes)
{
    static const char fn[] = "starfold_indexed_slices_read";
    starfold_status_t st;
    if ((st = check_component(fn, slices, component)) != STARFOLD_OK) return st;
    const size_t vb = slices->rows[component] * slices->row_elements * starfold_dtype_size(slices->dtype),
                 ib = slices->rows[component] * sizeof(int64_t);
    if ((values && values_bytes != vb) || (indices && indices_bytes != ib))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: component %d holds %zu bytes of values and %zu of indices, buffers of %zu and %zu "
                               "were given",
                               fn, component, vb, ib, values_bytes, indices_bytes);
    if (values && vb && (st = starfold_value_read(slices->values[component], 0, values, vb)) != STARFOLD_OK) return st;
    if (indices && ib && (st = starfold_value_read(slices->indices[component], 0, indices, ib)) != STARFOLD_OK) return st;
    return STARFOLD_OK;
}

/*
 * dense[row] += values[k] for every row k of component @c: element type @dt, @w elements a row.
 * Integers wrap around; float16 and bfloat16 add in float32 and round after each addition, as a
 * pairwise reduce task does.
 */
static void scatter_add(starfold_dtype_t dt, void *dense, const void *values, const int64_t *idx, size_t k, size_t w)
{
    const int integer = starfold__dtype_integer(dt);
    for (size_t r = 0; r < k; r++)
        for (size_t e = 0; e < w; e++) {
            const size_t to = (size_t)idx[r] * w + e, from = r * w + e;
            switch (dt) {
            case STARFOLD_FLOAT32: ((float *)dense)[to] += ((const float *)values)[from]; break;
            case STARFOLD_FLOAT64: ((double *)dense)[to] += ((const double *)values)[from]; break;
            default:
                if (integer)
                    starfold__element_set_bits(dt, dense, to, starfold__element_bits(dt, dense, to) +
                                                                  starfold__element_bits(dt, values, from));
                else
                    (void)starfold_element_from_double(dt, (double)(float)(starfold_element_to_double(dt, dense, to) +
                                                                         starfold_element_to_double(dt, values, from)),
                                                       dense, to);
                break;
            }
        }
}

STARFOLD_API starfold_status_t starfold_indexed_slices_densify(starfold_indexed_slices_t slices, int component,
                                                               starfold_value_t *dense)
{
    static const char fn[] = "starfold_indexed_slices_densify";
    starfold_status_t st;
    if ((st = check_component(fn, slices, component)) != STARFOLD_OK) return st;
    if (!dense) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL dense", fn);
    const size_t k = slices->rows[component], w = slices->row_elements, es = starfold_dtype_size(slices->dtype);
    void *vals = malloc(k * w * es + 1), *out = calloc(slices->dense_rows * w + 1, es);
    int64_t *idx = malloc(k * sizeof *idx + 1);
    if (!vals || !out || !idx) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for a dense [%zu, %zu]", fn, slices->dense_rows, w);
        goto out;
    }
    SF_CHECK_GOTO(starfold_indexed_slices_read(slices, component, vals, k * w * es, idx, k * sizeof *idx), st, out);
    for (size_t r = 0; r < k; r++)
        if (idx[r] < 0 || (uint64_t)idx[r] >= slices->dense_rows) {
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: row %zu's index %lld is outside the dense shape's %zu rows",
                                 fn, r, (long long)idx[r], slices->dense_rows);
            goto out;
        }
    scatter_add(slices->dtype, out, vals, idx, k, w);
    st = starfold_value_create(slices->ctx, STARFOLD_VALUE_MIRRORED, 1, &slices->devices[component], slices->dtype,
                               slices->dense_rows * w, out, dense);
out:
    free(vals);
    free(out);
    free(idx);
    return st;
}

/* One gather graph (values or indices): component c's counts[c] elements of @in[c] to every @out[d]. */
static starfold_status_t gather_part(starfold_cross_device_ops_t ops, starfold_topology_t topo,
                                     starfold_indexed_slices_t s, starfold_op_t op, starfold_dtype_t dt,
                                     const size_t *counts, const starfold_value_t *in, int ndst, const int *dst,
                                     const starfold_value_t *out, const char *fn)
{
    starfold_view_t vin[STARFOLD_MAX_DEVICES], vout[STARFOLD_MAX_DEVICES];
    for (int c = 0; c < s->n; c++) vin[c] = starfold__value_view(in[c], 0);
    for (int d = 0; d < ndst; d++) vout[d] = starfold__value_view(out[d], 0);
    return starfold__gather_submit(ops, topo, s->ctx, op, dt, s->n, s->devices, vin, counts, ndst, dst, vout, ndst, out, fn);
}

/* TensorFlow's reduce of IndexedSlices onto @dest: both gathers, the result a new mirrored object. */
static starfold_status_t reduce_indexed_slices(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                               starfold_op_t op, starfold_indexed_slices_t s, const starfold__dest_t *dest,
                                               const char *fn, starfold_indexed_slices_t *result)
{
    if (op != STARFOLD_OP_SUM && op != STARFOLD_OP_MEAN)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: IndexedSlices reduce with SUM or MEAN (TensorFlow's ReduceOp), not %s", fn,
                               starfold_op_name(op));
    if (dest->ctx && dest->ctx != s->ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the destination belongs to another context", fn);
    starfold_status_t st;
    starfold_topology_t topo = NULL;
    int made = 0;
    if ((st = starfold__pick_topology(ops, topology, s->ctx, &topo, &made)) != STARFOLD_OK) return st;
    int dst[STARFOLD_MAX_DEVICES];
    size_t total = 0, vcounts[STARFOLD_MAX_DEVICES], rows_out[STARFOLD_MAX_DEVICES];
    struct starfold_indexed_slices *r = NULL;
    SF_CHECK_GOTO(starfold__gather_devices(s->ctx, s->n, s->devices, dest, topo, fn, dst), st, out);
    for (int c = 0; c < s->n; c++) {
        total += s->rows[c];
        vcounts[c] = s->rows[c] * s->row_elements;
    }
    for (int d = 0; d < dest->n; d++) rows_out[d] = total;
    SF_CHECK_GOTO(slices_alloc(s->ctx, STARFOLD_VALUE_MIRRORED, dest->n, dest->devices, s->dtype, s->dense_rows,
                               s->row_elements, rows_out, &r),
                  st, out);
    if (total) { /* values with the op (MEAN divides them by the number of components), indices concatenated */
        SF_CHECK_GOTO(gather_part(ops, topo, s, op, s->dtype, vcounts, s->values, dest->n, dst, r->values, fn), st, out);
        SF_CHECK_GOTO(gather_part(ops, topo, s, STARFOLD_OP_SUM, STARFOLD_INT64, s->rows, s->indices, dest->n, dst, r->indices, fn),
                      st, out);
    }
    *result = r;
    r = NULL;
out:
    slices_free(r);
    if (made) starfold_topology_destroy(topo);
    return st;
}

/*
 * MultiWorkerMirroredStrategy's reduce of IndexedSlices: TensorFlow's CollectiveAllReduce gathers the
 * values and the indices of every replica of every worker (all_gather, global replica order). Here
 * two gathers across processes (s->cross_gather), values divided by every replica for MEAN, each onto
 * the destinations; the result's component d is the two gathers' components d. This process's
 * replicas are the slices' components on its devices, in device order. @st: this process's verdict
 * so far (a refusal joins both gathers, so that no process waits for this one).
 */
static starfold_status_t reduce_slices_across(starfold_strategy_t strategy, starfold_status_t st, starfold_op_t op,
                                              starfold_indexed_slices_t s, const starfold__dest_t *dest,
                                              const starfold_communication_options_t *o, const char *fn,
                                              starfold_indexed_slices_t *result)
{
    const int n = strategy->n;
    starfold_view_t vv[STARFOLD_MAX_DEVICES], iv[STARFOLD_MAX_DEVICES];
    size_t vcounts[STARFOLD_MAX_DEVICES], rows[STARFOLD_MAX_DEVICES];
    if (st == STARFOLD_OK && op != STARFOLD_OP_SUM && op != STARFOLD_OP_MEAN)
        st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                             "%s: IndexedSlices reduce with SUM or MEAN (TensorFlow's ReduceOp), not %s", fn, starfold_op_name(op));
    if (st == STARFOLD_OK && dest->ctx && dest->ctx != s->ctx)
        st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the destination belongs to another context", fn);
    for (int d = 0; d < n && st == STARFOLD_OK; d++) {
        int c = 0;
        while (c < s->n && s->devices[c] != strategy->devices[d]) c++;
        if (c == s->n) {
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the IndexedSlices have no component on device %d: "
                                 "across processes they hold one per replica of the process (%d)", fn,
                                 strategy->devices[d], n);
            break;
        }
        vv[d] = starfold__value_view(s->values[c], 0);
        iv[d] = starfold__value_view(s->indices[c], 0);
        vcounts[d] = s->rows[c] * s->row_elements;
        rows[d] = s->rows[c];
    }
    if (st != STARFOLD_OK) memset(vcounts, 0, sizeof vcounts), memset(rows, 0, sizeof rows);
    const int divisor = op == STARFOLD_OP_MEAN ? strategy->total_replicas : 1;
    starfold_value_t values = NULL, indices = NULL;
    starfold_status_t sv = strategy->cross_gather(strategy, st, s->dtype, s->row_elements, vv, vcounts, divisor, dest, o,
                                                  fn, &values);
    if (st == STARFOLD_OK && sv != STARFOLD_OK) st = sv;
    const starfold_status_t si = strategy->cross_gather(strategy, st, STARFOLD_INT64, s->dense_rows, iv, rows, 1, dest, o,
                                                        fn, &indices);
    if (st == STARFOLD_OK) st = si;
    struct starfold_indexed_slices *r = st == STARFOLD_OK ? calloc(1, sizeof *r) : NULL;
    if (st == STARFOLD_OK && !r) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (r) {
        *r = (struct starfold_indexed_slices){ .refs = 1, .ctx = s->ctx, .kind = STARFOLD_VALUE_MIRRORED, .dtype = s->dtype,
                                               .dense_rows = s->dense_rows, .row_elements = s->row_elements };
        for (int d = 0; d < dest->n && st == STARFOLD_OK; d++) {
            r->devices[d] = dest->devices[d];
            r->rows[d] = indices->count;
            st = starfold__value_take_component(values, d, &r->values[d]);
            if (st == STARFOLD_OK) st = starfold__value_take_component(indices, d, &r->indices[d]);
            r->n = d + 1;
        }
    }
    starfold_value_destroy(values);
    starfold_value_destroy(indices);
    if (st != STARFOLD_OK) {
        slices_free(r);
        return st;
    }
    *result = r;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_cross_device_ops_reduce_indexed_slices(
    starfold_cross_device_ops_t ops, starfold_op_t op, starfold_indexed_slices_t slices,
    const starfold_destination_t *destinations, const starfold_communication_options_t *options,
    starfold_indexed_slices_t *result)
{
    static const char fn[] = "starfold_cross_device_ops_reduce_indexed_slices";
    starfold_status_t st;
    if (!ops || !slices || !result)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                               !ops ? "ops" : !slices ? "slices" : "result");
    starfold__dest_t dest;
    if ((st = starfold__dest_resolve(destinations, fn, &dest)) != STARFOLD_OK) return st;
    starfold_communication_options_t o;
    if ((st = starfold_communication_options_merge(NULL, options, &o)) != STARFOLD_OK) return st;
    return reduce_indexed_slices(ops, NULL, op, slices, &dest, fn, result);
}

STARFOLD_API starfold_status_t starfold_strategy_reduce_to_indexed_slices(
    starfold_strategy_t strategy, starfold_op_t op, starfold_indexed_slices_t slices,
    const starfold_destination_t *destinations, const starfold_communication_options_t *options,
    starfold_indexed_slices_t *result)
{
    static const char fn[] = "starfold_strategy_reduce_to_indexed_slices";
    starfold_status_t st;
    if (!strategy || !slices || !result)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                               !strategy ? "strategy" : !slices ? "slices" : "result");
    if ((st = starfold__require_cross_replica(fn)) != STARFOLD_OK) return st;
    if (slices->ctx != strategy->ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the IndexedSlices belong to another context", fn);
    starfold__dest_t dest;
    starfold_communication_options_t o;
    memset(&o, 0, sizeof o);
    st = starfold__dest_resolve(destinations, fn, &dest);
    if (st == STARFOLD_OK) st = starfold__strategy_options(strategy, options, &o);
    /* Across processes a refusal here must still join the others' gathers. */
    if (strategy->cross_gather) return reduce_slices_across(strategy, st, op, slices, &dest, &o, fn, result);
    if (st != STARFOLD_OK) return st;
    return reduce_indexed_slices(strategy->ops, strategy->topology, op, slices, &dest, fn, result);
}

/*
 * TensorFlow's batch_reduce_to over a list mixing dense values and IndexedSlices: the dense pairs go
 * together through starfold_strategy_batch_reduce_to() (one graph per group, the fast path), each
 * IndexedSlices pair through its gathers, and every result lands at its pair's index, as TensorFlow's
 * split_by_sparsity / stitch_values do. All or nothing: on failure no result is left.
 */
STARFOLD_API starfold_status_t starfold_strategy_batch_reduce_to_mixed(starfold_strategy_t strategy, starfold_op_t op,
                                                                       size_t num_pairs, const starfold_mixed_pair_t *pairs,
                                                                       const starfold_communication_options_t *options,
                                                                       starfold_value_t *dense_results,
                                                                       starfold_indexed_slices_t *sparse_results)
{
    static const char fn[] = "starfold_strategy_batch_reduce_to_mixed";
    if (!strategy || !pairs || !dense_results || !sparse_results || num_pairs == 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                               num_pairs == 0 ? "batch_reduce needs at least one pair" : "NULL argument");
    size_t ndense = 0;
    for (size_t i = 0; i < num_pairs; i++) {
        if (!pairs[i].value == !pairs[i].slices)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: pair %zu: give a value or IndexedSlices, exactly one",
                                   fn, i);
        ndense += pairs[i].value != NULL;
    }
    starfold_status_t st = STARFOLD_OK;
    starfold_value_destination_pair_t *dp = malloc(sizeof *dp * (ndense ? ndense : 1));
    starfold_value_t *dr = calloc(ndense ? ndense : 1, sizeof *dr);
    starfold_indexed_slices_t *sr = calloc(num_pairs, sizeof *sr);
    if (!dp || !dr || !sr) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto out;
    }
    for (size_t i = 0, k = 0; i < num_pairs; i++)
        if (pairs[i].value) dp[k++] = (starfold_value_destination_pair_t){ pairs[i].value, pairs[i].destinations };
    if (ndense) SF_CHECK_GOTO(starfold_strategy_batch_reduce_to(strategy, op, ndense, dp, options, dr), st, out);
    for (size_t i = 0; i < num_pairs && st == STARFOLD_OK; i++)
        if (pairs[i].slices)
            st = starfold_strategy_reduce_to_indexed_slices(strategy, op, pairs[i].slices, &pairs[i].destinations, options,
                                                            &sr[i]);
    if (st != STARFOLD_OK) goto out;
    for (size_t i = 0, k = 0; i < num_pairs; i++) {
        dense_results[i] = pairs[i].value ? dr[k++] : NULL;
        sparse_results[i] = sr[i];
    }
    ndense = 0; /* handed over */
    memset(sr, 0, sizeof *sr * num_pairs);
out:
    for (size_t k = 0; dr && k < ndense; k++) starfold_value_destroy(dr[k]);
    for (size_t i = 0; sr && i < num_pairs; i++) starfold_indexed_slices_destroy(sr[i]);
    free(dp);
    free(dr);
    free(sr);
    return st;
}
