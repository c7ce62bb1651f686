/*
 * Distributed values (TensorFlow's PerReplica and Mirrored), the submission records they keep, the
 * host-memory vectors of host components, and destinations resolved to device lists.
 *
 * A value is a small table, one row per component:
 *
 *      component:   0            1            ...   n-1
 *      device:      d0           d1                 dn-1      (or one STARFOLD_DEVICE_HOST)
 *      handle:      h0           h1                 hn-1      StarPU vectors, count x dtype each
 *      own:         DEVICE|HOST|NONE                          who unregisters the handle
 *
 *      + parts:   values whose handles it borrows (regroup), one reference each
 *      + writers: the starfold submissions writing it, shared records (a batch reduce writes several)
 *
 * Lifetime. References are atomic; the last starfold_value_destroy() drops the writer records (the
 * last reference to a record waits for its submission and frees the executor's request), unregisters
 * the owned handles (which waits for the StarPU tasks still using them), then drops the parts.
 *
 * StarPU calls made here (the layer's only ones, see distribute.h): validating wrapped handles, and
 * registering / unregistering host vectors.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

#include "base/common.h"
#include "distribute/distribute.h"
#include "exec/vectors.h"

/* ------------------------------------------------------------------------------------------------
 * Submission records
 */

starfold__dist_req_t *starfold__dist_req_new(starfold_request_t req, int refs)
{
    starfold__dist_req_t *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return NULL;
    }
    r->req = req;
    r->refs = refs;
    r->status = STARFOLD_OK;
    return r;
}

static void req_retain(starfold__dist_req_t *r)
{
    __atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

void starfold__dist_req_release(starfold__dist_req_t *r)
{
    if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    starfold_request_destroy(r->req); /* waits if still running */
    pthread_mutex_destroy(&r->lock);
    free(r);
}

starfold_status_t starfold__dist_req_wait(starfold__dist_req_t *r, double seconds)
{
    pthread_mutex_lock(&r->lock);
    if (!r->finished) {
        starfold_status_t st = seconds < 0 ? starfold_request_wait(r->req) : starfold_request_wait_timeout(r->req, seconds);
        if (st == STARFOLD_ERR_TIMEOUT) {
            pthread_mutex_unlock(&r->lock);
            return STARFOLD_ERR_TIMEOUT; /* detail recorded by the executor */
        }
        r->finished = 1;
        r->status = st;
    }
    const starfold_status_t st = r->status;
    pthread_mutex_unlock(&r->lock);
    if (st != STARFOLD_OK) starfold__error(st, "a task of a reduction writing this value failed on its device");
    return st;
}

/* Finished with success, without blocking (a busy record or one still running counts as not). */
static int req_finished_ok(starfold__dist_req_t *r)
{
    if (pthread_mutex_trylock(&r->lock) != 0) return 0;
    if (!r->finished && starfold_request_test(r->req) != STARFOLD_ERR_IN_PROGRESS) {
        r->status = starfold_request_wait(r->req); /* done: returns at once, releases temporaries */
        r->finished = 1;
    }
    const int ok = r->finished && r->status == STARFOLD_OK;
    pthread_mutex_unlock(&r->lock);
    return ok;
}

/* ------------------------------------------------------------------------------------------------
 * Host vectors: a malloc'ed buffer registered with StarPU, home node main memory.
 */

static starfold_status_t host_vector_create(starfold_dtype_t dtype, size_t count, starpu_data_handle_t *handle,
                                            void **mem)
{
    const size_t elem = starfold_dtype_size(dtype);
    void *p = NULL;
    if (count > 0 && !(p = calloc(count, elem)))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of host memory", count * elem);
    const starfold_status_t st = starfold__host_vector_register(p, count, elem, handle);
    if (st != STARFOLD_OK) {
        free(p);
        return st;
    }
    *mem = p;
    return STARFOLD_OK;
}

static void host_vector_destroy(starpu_data_handle_t handle, void *mem)
{
    /* Waits for the tasks using it; no write-back into a buffer freed next. */
    if (handle) starfold__vector_unregister_discard(handle);
    free(mem);
}

/* ------------------------------------------------------------------------------------------------
 * Values
 */

STARFOLD_API const char *starfold_value_kind_name(starfold_value_kind_t kind)
{
    switch (kind) {
    case STARFOLD_VALUE_PER_REPLICA: return "per-replica";
    case STARFOLD_VALUE_MIRRORED: return "mirrored";
    }
    return "unknown";
}

/* An empty shell of @n components (handles NULL, nothing owned). */
static starfold_value_t value_shell(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                    starfold_dtype_t dtype, size_t count)
{
    struct starfold_value *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->devices = malloc(sizeof *v->devices * (size_t)n);
    v->handles = calloc((size_t)n, sizeof *v->handles);
    v->own = calloc((size_t)n, sizeof *v->own);
    v->host_mem = calloc((size_t)n, sizeof *v->host_mem);
    if (!v->devices || !v->handles || !v->own || !v->host_mem || pthread_mutex_init(&v->lock, NULL) != 0) {
        free(v->devices);
        free(v->handles);
        free(v->own);
        free(v->host_mem);
        free(v);
        return NULL;
    }
    memcpy(v->devices, devices, sizeof *v->devices * (size_t)n);
    v->refs = 1;
    v->ctx = ctx;
    v->kind = kind;
    v->dtype = dtype;
    v->count = count;
    v->n = n;
    return v;
}

/*
 * Frees everything: drops the writer records (the last reference to a record waits for its
 * submission), releases owned handles (unregistering waits for StarPU's tasks on them), drops parts.
 * A shell whose handles moved to other values (starfold__value_take_component) does not wait here.
 */
static void value_free(starfold_value_t v)
{
    for (size_t i = 0; i < v->nwriters; i++) starfold__dist_req_release(v->writers[i]);
    for (int c = 0; c < v->n; c++) {
        if (v->own[c] == SF_OWN_DEVICE) starfold_vector_destroy(v->ctx, v->handles[c]);
        else if (v->own[c] == SF_OWN_HOST) host_vector_destroy(v->handles[c], v->host_mem[c]);
    }
    for (int p = 0; p < v->nparts; p++) starfold_value_destroy(v->parts[p]);
    free(v->parts);
    free(v->writers);
    free(v->devices);
    free(v->handles);
    free(v->own);
    free(v->host_mem);
    pthread_mutex_destroy(&v->lock);
    free(v);
}

starfold_status_t starfold__value_alloc(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                 starfold_dtype_t dtype, size_t count, starfold_value_t *value)
{
    starfold_status_t st = STARFOLD_OK;
    starfold_value_t v = value_shell(ctx, kind, n, devices, dtype, count);
    if (!v) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating a value of %d components", n);
    for (int c = 0; c < n; c++) {
        if (devices[c] == STARFOLD_DEVICE_HOST) {
            SF_CHECK_GOTO(host_vector_create(dtype, count, &v->handles[c], &v->host_mem[c]), st, fail);
            v->own[c] = SF_OWN_HOST;
        } else {
            SF_CHECK_GOTO(starfold_vector_create(ctx, devices[c], dtype, count, &v->handles[c]), st, fail);
            v->own[c] = SF_OWN_DEVICE;
        }
    }
    *value = v;
    return STARFOLD_OK;
fail:
    value_free(v);
    return st;
}

starfold_status_t starfold__value_borrow(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                  const starpu_data_handle_t *handles, starfold_dtype_t dtype, size_t count,
                                  starfold_value_t *value)
{
    starfold_value_t v = value_shell(ctx, kind, n, devices, dtype, count);
    if (!v) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating a value of %d components", n);
    memcpy(v->handles, handles, sizeof *handles * (size_t)n);
    *value = v;
    return STARFOLD_OK;
}

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

STARFOLD_API starfold_status_t starfold_value_create(starfold_context_t context, starfold_value_kind_t kind,
                                                     int num_components, const int *devices, starfold_dtype_t dtype,
                                                     size_t count, const void *init, starfold_value_t *value)
{
    static const char fn[] = "starfold_value_create";
    starfold_status_t st;
    if (!value) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL value", fn);
    if ((st = check_layout(fn, context, kind, num_components, devices, dtype)) != STARFOLD_OK) return st;
    if (count > UINT32_MAX)
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "%s: %zu elements, StarPU vectors hold at most %u", fn, count,
                        (unsigned)UINT32_MAX);
    const size_t bytes = count * starfold_dtype_size(dtype);
    void *zeros = NULL;
    if (!init && bytes > 0) {
        if (!(zeros = calloc(1, bytes)))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", fn, bytes);
        init = zeros;
    }
    starfold_value_t v = NULL;
    st = starfold__value_alloc(context, kind, num_components, devices, dtype, count, &v);
    for (int c = 0; st == STARFOLD_OK && c < num_components && bytes > 0; c++)
        st = starfold_vector_write(v->handles[c], init, bytes);
    free(zeros);
    if (st != STARFOLD_OK) {
        if (v) value_free(v);
        return st;
    }
    *value = v;
    return STARFOLD_OK;
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

STARFOLD_API starfold_value_t starfold_value_retain(starfold_value_t value)
{
    if (value) __atomic_add_fetch(&value->refs, 1, __ATOMIC_RELAXED);
    return value;
}

STARFOLD_API void starfold_value_destroy(starfold_value_t value)
{
    if (value && __atomic_sub_fetch(&value->refs, 1, __ATOMIC_ACQ_REL) == 0) value_free(value);
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
    int devices[STARFOLD_MAX_DEVICES];
    starpu_data_handle_t handles[STARFOLD_MAX_DEVICES];
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
        handles[i] = vi->handles[0];
        if (devices[i] == STARFOLD_DEVICE_HOST)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: value %d is on the host; a host value stays alone", fn, i);
        for (int j = 0; j < i; j++)
            if (devices[j] == devices[i])
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: values %d and %d are both on device %d", fn, j, i,
                                devices[i]);
    }
    starfold_value_t v = NULL;
    starfold_status_t st = starfold__value_borrow(v0->ctx, kind, num_values, devices, handles, v0->dtype, v0->count, &v);
    if (st != STARFOLD_OK) return st;
    if (!(v->parts = malloc(sizeof *v->parts * (size_t)num_values))) {
        value_free(v);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    /* The group waits for what writes its parts: share their writer records. */
    for (int i = 0; i < num_values; i++) {
        v->parts[v->nparts++] = starfold_value_retain(values[i]);
        pthread_mutex_lock(&values[i]->lock);
        for (size_t w = 0; w < values[i]->nwriters && st == STARFOLD_OK; w++)
            st = starfold__value_add_writer(v, values[i]->writers[w]);
        pthread_mutex_unlock(&values[i]->lock);
        if (st != STARFOLD_OK) {
            value_free(v);
            return st;
        }
    }
    *value = v;
    return STARFOLD_OK;
}

starfold_status_t starfold__value_add_writer(starfold_value_t v, starfold__dist_req_t *r)
{
    pthread_mutex_lock(&v->lock);
    /* Forget the submissions that finished well, so a value updated every step keeps a short list. */
    size_t k = 0;
    for (size_t i = 0; i < v->nwriters; i++) {
        if (v->writers[i] != r && req_finished_ok(v->writers[i])) starfold__dist_req_release(v->writers[i]);
        else v->writers[k++] = v->writers[i];
    }
    v->nwriters = k;
    for (size_t i = 0; i < v->nwriters; i++)
        if (v->writers[i] == r) {
            pthread_mutex_unlock(&v->lock);
            return STARFOLD_OK;
        }
    if (SF_GROW(v->writers, v->nwriters, v->capwriters) != 0) {
        pthread_mutex_unlock(&v->lock);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory recording a submission");
    }
    req_retain(r);
    v->writers[v->nwriters++] = r;
    pthread_mutex_unlock(&v->lock);
    return STARFOLD_OK;
}

starfold_status_t starfold__value_take_component(starfold_value_t v, int c, starfold_value_t *out)
{
    starfold_value_t o = value_shell(v->ctx, v->kind, 1, &v->devices[c], v->dtype, v->count);
    if (!o) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory splitting a value");
    starfold_status_t st = STARFOLD_OK;
    if (v->nparts > 0) {
        if (!(o->parts = malloc(sizeof *o->parts * (size_t)v->nparts))) {
            value_free(o);
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory splitting a value");
        }
        for (int p = 0; p < v->nparts; p++) o->parts[o->nparts++] = starfold_value_retain(v->parts[p]);
    }
    pthread_mutex_lock(&v->lock);
    for (size_t w = 0; w < v->nwriters && st == STARFOLD_OK; w++) st = starfold__value_add_writer(o, v->writers[w]);
    pthread_mutex_unlock(&v->lock);
    if (st != STARFOLD_OK) {
        value_free(o);
        return st;
    }
    /* Ownership of the handle moves last: nothing can fail after it. */
    o->handles[0] = v->handles[c];
    o->own[0] = v->own[c];
    o->host_mem[0] = v->host_mem[c];
    v->own[c] = SF_OWN_NONE;
    v->host_mem[c] = NULL;
    *out = o;
    return STARFOLD_OK;
}

int starfold__value_component_on(starfold_value_t v, int device)
{
    for (int c = 0; c < v->n; c++)
        if (v->devices[c] == device) return c;
    return -1;
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
    return value && component >= 0 && component < value->n ? value->handles[component] : NULL;
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
    for (int c = 0; c < value->n; c++)
        if (component == STARFOLD_ALL_COMPONENTS || c == component)
            if ((st = starfold_vector_write(value->handles[c], src, bytes)) != STARFOLD_OK) return st;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_value_read(starfold_value_t value, int component, void *dst, size_t bytes)
{
    starfold_status_t st = check_io("starfold_value_read", value, component, dst, bytes, 0);
    if (st != STARFOLD_OK) return st;
    if ((st = starfold_value_wait(value)) != STARFOLD_OK) return st;
    if (bytes == 0) return STARFOLD_OK;
    return starfold_vector_read(value->handles[component], dst, bytes);
}

/* Waits for every writer, each for what is left of @seconds (< 0: no limit). */
static starfold_status_t value_wait(starfold_value_t v, double seconds)
{
    /* Snapshot under the lock (records may be added meanwhile); wait without holding it. */
    pthread_mutex_lock(&v->lock);
    const size_t n = v->nwriters;
    starfold__dist_req_t **w = n ? malloc(sizeof *w * n) : NULL;
    if (n && !w) {
        pthread_mutex_unlock(&v->lock);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_value_wait: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        w[i] = v->writers[i];
        req_retain(w[i]);
    }
    pthread_mutex_unlock(&v->lock);

    starfold_status_t first = STARFOLD_OK;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < n; i++) {
        double left = -1.0;
        if (seconds >= 0) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            left = seconds - ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec));
            if (left < 0) left = 0;
        }
        starfold_status_t st = starfold__dist_req_wait(w[i], left);
        if (st == STARFOLD_ERR_TIMEOUT) {
            first = starfold__error(STARFOLD_ERR_TIMEOUT, "starfold_value_wait_timeout: still being written after %g s", seconds);
            break;
        }
        if (st != STARFOLD_OK && first == STARFOLD_OK) first = st;
    }
    for (size_t i = 0; i < n; i++) starfold__dist_req_release(w[i]);
    free(w);
    if (first != STARFOLD_OK && first != STARFOLD_ERR_TIMEOUT)
        starfold__error(first, "a reduction writing this value failed: %s", starfold_status_string(first));
    return first;
}

STARFOLD_API starfold_status_t starfold_value_wait(starfold_value_t value)
{
    if (!value) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_value_wait: NULL value");
    return value_wait(value, -1.0);
}

STARFOLD_API starfold_status_t starfold_value_wait_timeout(starfold_value_t value, double seconds)
{
    if (!value) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_value_wait_timeout: NULL value");
    if (isnan(seconds) || seconds < 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_value_wait_timeout: %g seconds", seconds);
    return value_wait(value, isinf(seconds) ? -1.0 : seconds);
}

/* ------------------------------------------------------------------------------------------------
 * Destinations
 */

starfold_status_t starfold__dest_resolve(const starfold_destination_t *d, const char *fn, starfold__dest_t *out)
{
    if (!d) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL destinations", fn);
    memset(out, 0, sizeof *out);
    switch (d->kind) {
    case STARFOLD_DESTINATION_NONE:
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destinations can not be empty", fn);
    case STARFOLD_DESTINATION_HOST:
        break;
    case STARFOLD_DESTINATION_DEVICE:
        if (d->device == STARFOLD_DEVICE_HOST) break;
        if (d->device < 0)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destination device %d is not a device", fn, d->device);
        out->n = 1;
        out->devices[0] = d->device;
        return STARFOLD_OK;
    case STARFOLD_DESTINATION_VALUE:
        if (!d->value) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destinations can not be empty", fn);
        out->ctx = d->value->ctx;
        if (d->value->devices[0] == STARFOLD_DEVICE_HOST) break;
        out->n = d->value->n;
        memcpy(out->devices, d->value->devices, sizeof(int) * (size_t)d->value->n);
        return STARFOLD_OK;
    case STARFOLD_DESTINATION_DEVICES:
        if (d->num_devices < 1 || !d->devices)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destinations can not be empty", fn);
        if (d->num_devices > STARFOLD_MAX_DEVICES)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d destination devices, at most %d", fn,
                                   d->num_devices, STARFOLD_MAX_DEVICES);
        for (int i = 0; i < d->num_devices; i++) {
            if (d->devices[i] < 0)
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destination device %d is not a device%s", fn,
                                       d->devices[i], d->devices[i] == STARFOLD_DEVICE_HOST
                                                          ? " (the host is a destination of its own: starfold_destination_host())"
                                                          : "");
            for (int j = 0; j < i; j++)
                if (d->devices[j] == d->devices[i])
                    return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destination device %d is listed twice", fn,
                                           d->devices[i]);
        }
        out->n = d->num_devices;
        memcpy(out->devices, d->devices, sizeof(int) * (size_t)d->num_devices);
        return STARFOLD_OK;
    default:
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                        "%s: destinations must be one of a device, devices, a value or the host (kind %d)", fn,
                        (int)d->kind);
    }
    out->n = 1;
    out->devices[0] = STARFOLD_DEVICE_HOST;
    out->host = 1;
    return STARFOLD_OK;
}

int starfold__devices_match(int na, const int *a, int nb, const int *b)
{
    /* Devices within a list are distinct, so equal sets <=> equal sizes and a subset of b. */
    if (na != nb) return 0;
    for (int i = 0; i < na; i++) {
        int found = 0;
        for (int j = 0; j < nb && !found; j++) found = a[i] == b[j];
        if (!found) return 0;
    }
    return 1;
}
