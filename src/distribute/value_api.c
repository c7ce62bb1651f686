/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The public face of values (values.c has their layout and lifetime): creating and wrapping them,
 * references, regrouping, what a value says of itself, and reading and writing its components.
 * Every argument is checked before anything is made or written.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>

#include "base/common.h"
#include "distribute/distribute.h"
#include "distribute/value_shell.h"
#include "exec/vectors.h"

/* Common checks of create and wrap: context, kind, component count, dtype, devices. */
static starfold_status_t check_layout(const char *fn, starfold_context_t ctx, starfold_value_kind_t kind, int n,
                                      const int *devices, starfold_dtype_t dtype)
{
    if (!ctx) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL context", fn);
    if ((int)kind != STARFOLD_VALUE_PER_REPLICA && kind != STARFOLD_VALUE_MIRRORED)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown value kind %d", fn, (int)kind);
    if (n < 1 || n > STARFOLD_MAX_DEVICES)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d components, a value has 1 to %d", fn, n,
                        STARFOLD_MAX_DEVICES);
    if (!devices) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL devices", fn);
    if (starfold_dtype_size(dtype) == 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d", fn, (int)dtype);
    const int ndev = starfold_context_num_devices(ctx);
    for (int c = 0; c < n; c++) {
        if (devices[c] == STARFOLD_DEVICE_HOST) {
            if (n != 1)
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                "%s: component %d is on the host; a host value has exactly one component", fn, c);
            continue;
        }
        if (devices[c] < 0 || devices[c] >= ndev)
            return starfold__error(STARFOLD_ERR_NO_DEVICE, "%s: component %d: device %d, the context has devices 0..%d", fn,
                            c, devices[c], ndev - 1);
        for (int j = 0; j < c; j++)
            if (devices[j] == devices[c])
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                "%s: device %d appears twice (components %d and %d); a value has one component per "
                                "device",
                                fn, devices[c], j, c);
    }
    return STARFOLD_OK;
}

/* starfold_value_create(), in the arena (@own = 0) or over handles of its own. */
static starfold_status_t value_create(const char *fn, starfold_context_t context, starfold_value_kind_t kind,
                                      int num_components, const int *devices, starfold_dtype_t dtype, size_t count,
                                      const void *init, int own, starfold_value_t *value)
{
    starfold_status_t st;
    if (!value) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL value", fn);
    if ((st = check_layout(fn, context, kind, num_components, devices, dtype)) != STARFOLD_OK) return st;
    if (count > UINT32_MAX)
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "%s: %zu elements, StarPU vectors hold at most %u", fn, count,
                        (unsigned)UINT32_MAX);
    const size_t elem = starfold_dtype_size(dtype), bytes = count * elem;
    void *zeros = NULL;
    if (!init && bytes > 0) {
        if (!(zeros = calloc(1, bytes)))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", fn, bytes);
        init = zeros;
    }
    starfold_value_t v = NULL;
    st = own ? starfold__value_alloc_own(context, kind, num_components, devices, dtype, count, &v)
             : starfold__value_alloc_at(context, kind, num_components, devices, dtype, count, 1, &v);
    for (int c = 0; st == STARFOLD_OK && c < num_components && bytes > 0; c++)
        st = starfold__vector_write_range(handles_of(v)[c], offset_of(v)[c] * elem, init, bytes);
    free(zeros);
    if (st != STARFOLD_OK) {
        if (v) starfold__value_free(v);
        return st;
    }
    *value = v;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_value_create(starfold_context_t context, starfold_value_kind_t kind,
                                                     int num_components, const int *devices, starfold_dtype_t dtype,
                                                     size_t count, const void *init, starfold_value_t *value)
{
    return value_create("starfold_value_create", context, kind, num_components, devices, dtype, count, init, 0, value);
}

starfold_status_t starfold__value_create_own(const char *fn, starfold_context_t ctx, starfold_value_kind_t kind, int n,
                                             const int *devices, starfold_dtype_t dtype, size_t count, const void *init,
                                             starfold_value_t *value)
{
    return value_create(fn, ctx, kind, n, devices, dtype, count, init, 1, value);
}

STARFOLD_API starfold_status_t starfold_value_wrap(starfold_context_t context, starfold_value_kind_t kind,
                                                   int num_components, const int *devices,
                                                   const starpu_data_handle_t *handles, starfold_dtype_t dtype,
                                                   starfold_value_t *value)
{
    static const char fn[] = "starfold_value_wrap";
    starfold_status_t st;
    if (!value || !handles) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !value ? "value" : "handles");
    if ((st = check_layout(fn, context, kind, num_components, devices, dtype)) != STARFOLD_OK) return st;
    const size_t elem = starfold_dtype_size(dtype);
    size_t count = 0;
    for (int c = 0; c < num_components; c++) {
        starpu_data_handle_t h = handles[c];
        if (!h) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: component %d: NULL handle", fn, c);
        if (!starfold__is_vector(h))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: component %d: the handle is not a StarPU vector", fn, c);
        size_t nx, es;
        starfold__vector_shape(h, &nx, &es);
        if (es != elem)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                            "%s: component %d: elements of %zu bytes, %s has %zu-byte elements", fn, c, es,
                            starfold_dtype_name(dtype), elem);
        if (c == 0) count = nx;
        else if (nx != count)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                            "%s: component %d has %zu elements, component 0 has %zu; every component of a value has "
                            "the same count",
                            fn, c, nx, count);
    }
    return starfold__value_borrow(context, kind, num_components, devices, handles, dtype, count, value);
}

STARFOLD_API starfold_status_t starfold_value_regroup(starfold_value_kind_t kind, int num_values,
                                                      const starfold_value_t *values, starfold_value_t *value)
{
    static const char fn[] = "starfold_value_regroup";
    if (!values || !value) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !values ? "values" : "value");
    if ((int)kind != STARFOLD_VALUE_PER_REPLICA && kind != STARFOLD_VALUE_MIRRORED)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown value kind %d", fn, (int)kind);
    if (num_values < 1 || num_values > STARFOLD_MAX_DEVICES)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d values, 1 to %d can be grouped", fn, num_values,
                        STARFOLD_MAX_DEVICES);
    for (int i = 0; i < num_values; i++)
        if (!values[i]) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: value %d is NULL", fn, i);
    int same = 1;
    for (int i = 1; i < num_values; i++) same &= values[i] == values[0];
    if (same) { /* TensorFlow's regroup: identical objects collapse into the object */
        *value = starfold_value_retain(values[0]);
        return STARFOLD_OK;
    }
    const starfold_value_t v0 = values[0];
    int devices[STARFOLD_MAX_DEVICES], comps[STARFOLD_MAX_DEVICES] = { 0 };
    for (int i = 0; i < num_values; i++) {
        const starfold_value_t vi = values[i];
        if (vi->n != 1)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                            "%s: value %d has %d components; only one-component values can be grouped", fn, i, vi->n);
        if (vi->ctx != v0->ctx)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: value %d belongs to another context than value 0", fn, i);
        if (vi->dtype != v0->dtype || vi->count != v0->count)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: value %d is %zu x %s, value 0 is %zu x %s", fn, i,
                            vi->count, starfold_dtype_name(vi->dtype), v0->count, starfold_dtype_name(v0->dtype));
        devices[i] = vi->devices[0];
        if (devices[i] == STARFOLD_DEVICE_HOST)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: value %d is on the host; a host value stays alone", fn, i);
        for (int j = 0; j < i; j++)
            if (devices[j] == devices[i])
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: values %d and %d are both on device %d", fn, j, i,
                                devices[i]);
    }
    starfold_value_t v = NULL;
    starfold_status_t st = starfold__value_borrow_components(v0->ctx, kind, num_values, devices, values, comps, &v);
    if (st != STARFOLD_OK) return st;
    starfold__value_group_t *g = group_of(v);
    if (!g || !(g->origin = malloc(sizeof *g->origin * (size_t)num_values)) ||
        !(g->origin_comp = calloc((size_t)num_values, sizeof *g->origin_comp)) ||
        !(g->parts = malloc(sizeof *g->parts * (size_t)num_values))) {
        starfold__value_free(v);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    /* The group waits for what writes its parts: share their writer records. */
    for (int i = 0; i < num_values; i++) {
        g->origin[i] = values[i];
        g->parts[g->nparts++] = starfold_value_retain(values[i]);
        pthread_mutex_lock(values[i]->lock);
        for (size_t w = 0; w < values[i]->nwriters && st == STARFOLD_OK; w++)
            st = starfold__value_add_writer(v, values[i]->writers[w]);
        pthread_mutex_unlock(values[i]->lock);
        if (st != STARFOLD_OK) {
            starfold__value_free(v);
            return st;
        }
    }
    *value = v;
    return STARFOLD_OK;
}

STARFOLD_API starfold_value_kind_t starfold_value_kind(starfold_value_t value)
{
    return value ? value->kind : STARFOLD_VALUE_PER_REPLICA;
}

STARFOLD_API int starfold_value_num_components(starfold_value_t value)
{
    return value ? value->n : 0;
}

STARFOLD_API int starfold_value_device(starfold_value_t value, int component)
{
    return value && component >= 0 && component < value->n ? value->devices[component] : -2;
}

STARFOLD_API starpu_data_handle_t starfold_value_handle(starfold_value_t value, int component)
{
    return value && component >= 0 && component < value->n ? starfold__value_handle(value, component) : NULL;
}

STARFOLD_API starfold_dtype_t starfold_value_dtype(starfold_value_t value)
{
    return value ? value->dtype : STARFOLD_FLOAT32;
}

STARFOLD_API size_t starfold_value_count(starfold_value_t value)
{
    return value ? value->count : 0;
}

STARFOLD_API starfold_context_t starfold_value_context(starfold_value_t value)
{
    return value ? value->ctx : NULL;
}

static starfold_status_t check_io(const char *fn, starfold_value_t v, int component, const void *buf, size_t bytes,
                                  int allow_all)
{
    if (!v) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL value", fn);
    if (!(allow_all && component == STARFOLD_ALL_COMPONENTS) && (component < 0 || component >= v->n))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: component %d, the value has components 0..%d", fn,
                        component, v->n - 1);
    const size_t size = v->count * starfold_dtype_size(v->dtype);
    if (bytes > size)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %zu bytes, a component holds %zu (%zu x %s)", fn, bytes,
                        size, v->count, starfold_dtype_name(v->dtype));
    if (!buf && bytes > 0) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL buffer", fn);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_value_write(starfold_value_t value, int component, const void *src,
                                                    size_t bytes)
{
    starfold_status_t st = check_io("starfold_value_write", value, component, src, bytes, 1);
    if (st != STARFOLD_OK || bytes == 0) return st;
    const size_t elem = starfold_dtype_size(value->dtype);
    for (int c = 0; c < value->n; c++)
        if (component == STARFOLD_ALL_COMPONENTS || c == component) {
            const starfold_view_t view = starfold__value_view(value, c);
            if ((st = starfold__vector_write_range(view.handle, view.offset * elem, src, bytes)) != STARFOLD_OK) return st;
        }
    return STARFOLD_OK;
}

/* A piece of one write of starfold_value_write_many(), and where it goes. */
typedef struct write_piece {
    starpu_data_handle_t handle;
    size_t order; /* its place among the writes: the later of two overlapping pieces wins */
    starfold__host_piece_t piece;
} write_piece_t;

static int by_handle_then_order(const void *a, const void *b)
{
    const write_piece_t *x = a, *y = b;
    if (x->handle != y->handle) return (uintptr_t)x->handle < (uintptr_t)y->handle ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Every write checked first (a bad one changes nothing), then cut into pieces of the StarPU vectors
 * the components lie in, sorted by vector, and each vector written under one acquire: the values of
 * a list share a few buckets (starfold_value_create()).
 */
STARFOLD_API starfold_status_t starfold_value_write_many(size_t num_writes, const starfold_value_t *values,
                                                         const int *components, const void *const *srcs,
                                                         const size_t *bytes)
{
    static const char fn[] = "starfold_value_write_many";
    if (num_writes == 0) return STARFOLD_OK;
    if (!values || !components || !srcs || !bytes)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                               !values ? "values" : !components ? "components" : !srcs ? "srcs" : "bytes");
    size_t npieces = 0;
    for (size_t k = 0; k < num_writes; k++) {
        const starfold_status_t st = check_io(fn, values[k], components[k], srcs[k], bytes[k], 1);
        if (st != STARFOLD_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", starfold_last_error());
            return starfold__error(st, "%s (write %zu)", why, k);
        }
        if (bytes[k]) npieces += components[k] == STARFOLD_ALL_COMPONENTS ? (size_t)values[k]->n : 1;
    }
    if (npieces == 0) return STARFOLD_OK;
    write_piece_t *w = malloc(sizeof *w * npieces);
    if (!w) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu writes", fn, num_writes);
    size_t m = 0;
    for (size_t k = 0; k < num_writes; k++) {
        const starfold_value_t v = values[k];
        const size_t elem = starfold_dtype_size(v->dtype);
        for (int c = 0; bytes[k] && c < v->n; c++) {
            if (components[k] != STARFOLD_ALL_COMPONENTS && c != components[k]) continue;
            const starfold_view_t view = starfold__value_view(v, c);
            w[m] = (write_piece_t){ view.handle, m, { view.offset * elem, srcs[k], bytes[k] } };
            m++;
        }
    }
    qsort(w, m, sizeof *w, by_handle_then_order);
    starfold_status_t st = STARFOLD_OK;
    starfold__host_piece_t *pieces = malloc(sizeof *pieces * m);
    if (!pieces) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu writes", fn, num_writes);
    for (size_t i = 0; st == STARFOLD_OK && i < m;) {
        size_t j = i;
        for (; j < m && w[j].handle == w[i].handle; j++) pieces[j - i] = w[j].piece;
        st = starfold__vector_write_pieces(w[i].handle, j - i, pieces);
        i = j;
    }
    free(pieces);
    free(w);
    return st;
}

STARFOLD_API starfold_status_t starfold_value_read(starfold_value_t value, int component, void *dst, size_t bytes)
{
    starfold_status_t st = check_io("starfold_value_read", value, component, dst, bytes, 0);
    if (st != STARFOLD_OK) return st;
    if ((st = starfold_value_wait(value)) != STARFOLD_OK) return st;
    if (bytes == 0) return STARFOLD_OK;
    const starfold_view_t view = starfold__value_view(value, component);
    return starfold__vector_read_range(view.handle, view.offset * starfold_dtype_size(value->dtype), dst, bytes);
}

/*
 * Moves component @c out of the arena: a new handle of its own on the same device, filled by a copy
 * task from the range. Nothing waits: StarPU orders the copy after the tasks already submitted that
 * write the range, and the caller's next tasks on the new handle after the copy; the copy is one more
 * writer of the value. Lock held (no other thread moves it at the same time).
 */
static starfold_status_t move_out_of_arena(starfold_value_t v, int c)
{
    starpu_data_handle_t h = NULL;
    void *host_mem = NULL;
    starfold_status_t st = v->devices[c] == STARFOLD_DEVICE_HOST
                               ? starfold__host_vector_create(v->dtype, v->count, &h, &host_mem)
                               : starfold_vector_create(v->ctx, v->devices[c], v->dtype, v->count, &h);
    if (st != STARFOLD_OK) return st;
    starfold__dist_req_t *req = NULL;
    const starfold_view_t from = { handles_of(v)[c], offset_of(v)[c] }, to = { h, 0 };
    if ((st = starfold__copy_view(v->ctx, v->dtype, v->count, from, v->devices[c], to, v->devices[c], &req)) == STARFOLD_OK)
        st = starfold__value_add_writer_locked(v, req);
    starfold__dist_req_release(req);
    if (st != STARFOLD_OK) {
        /* Unregistering waits for a copy already submitted. */
        if (host_mem) starfold__host_vector_destroy(h, host_mem);
        else starfold_vector_destroy(v->ctx, h);
        return st;
    }
    starfold__value_drop_range(v, c);
    offset_of(v)[c] = 0;
    handles_of(v)[c] = h;
    own_of(v)[c] = host_mem ? SF_OWN_HOST : SF_OWN_DEVICE;
    host_mem_of(v)[c] = host_mem;
    __atomic_store_n(&v->stamp, starfold__value_new_stamp(), __ATOMIC_RELAXED);
    return STARFOLD_OK;
}

starpu_data_handle_t starfold__value_handle(starfold_value_t v, int c)
{
    v = starfold__value_root(v, &c);
    pthread_mutex_lock(v->lock);
    const starfold_status_t st = range_of(v)[c] ? move_out_of_arena(v, c) : STARFOLD_OK;
    starpu_data_handle_t h = st == STARFOLD_OK ? handles_of(v)[c] : NULL;
    pthread_mutex_unlock(v->lock);
    return h;
}
