/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Distributed values (TensorFlow's PerReplica and Mirrored), the submission records they keep, the
 * host-memory vectors of host components: how values are made, shared, waited for and freed. The
 * public functions that create, wrap, regroup, read and write values are value_api.c; destinations
 * resolved to device lists are destinations.c.
 *
 * A value is a small table, one row per component:
 *
 *      component:   0            1            ...   n-1
 *      device:      d0           d1                 dn-1      (or one STARFOLD_DEVICE_HOST)
 *      handle:      h0           h1                 hn-1      StarPU vectors, count x dtype each
 *      own:         DEVICE|HOST|NONE                          who unregisters the handle
 *   or, for a component in the context's arena (arena.c):
 *      handle:      the bucket's vector, the tensor at [offset, offset + count) of it
 *      bucket:      one reference on it                       released with the value
 *
 *      + parts:   values whose handles it borrows (regroup), one reference each
 *      + writers: the starfold submissions writing it, shared records (a batch reduce writes several)
 *
 * Values made by starfold_value_create() and the results of reductions live in the arena, so that
 * a list of them is views of a few vectors; a component moves out to a handle of its own (a copy)
 * the first time somebody needs its handle (starfold_value_handle(), an update function).
 *
 * Lifetime. References are atomic; the last starfold_value_destroy() drops the writer records (the
 * last reference to a record waits for its submission and frees the executor's request), unregisters
 * the owned handles (which waits for the StarPU tasks still using them), releases its buckets'
 * ranges, then drops the parts.
 *
 * StarPU calls made here (the layer's only ones, see distribute.h): validating wrapped handles, and
 * registering / unregistering host vectors.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "base/common.h"
#include "distribute/distribute.h"
#include "distribute/value_shell.h"
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
    /* Waited beside the others, not behind them on the record's lock: the replicas of a run all wait
     * for the one submission writing their results, and each would otherwise wake only when the one
     * before it let go. */
    starfold_status_t st = STARFOLD_OK;
    if (!__atomic_load_n(&r->done_ok, __ATOMIC_ACQUIRE)) {
        st = seconds < 0 ? starfold_request_wait(r->req) : starfold_request_wait_timeout(r->req, seconds);
        if (st == STARFOLD_ERR_TIMEOUT) return STARFOLD_ERR_TIMEOUT; /* detail recorded by the executor */
        pthread_mutex_lock(&r->lock);
        if (!r->finished) {
            r->finished = 1;
            r->status = st;
            if (st == STARFOLD_OK) __atomic_store_n(&r->done_ok, 1, __ATOMIC_RELEASE);
        }
        st = r->status;
        pthread_mutex_unlock(&r->lock);
    }
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
        if (r->status == STARFOLD_OK) __atomic_store_n(&r->done_ok, 1, __ATOMIC_RELEASE);
    }
    const int ok = r->finished && r->status == STARFOLD_OK;
    pthread_mutex_unlock(&r->lock);
    return ok;
}

static void writer_drop(starfold_value_t v, starfold__dist_req_t *r);
static void slab_mark_mixed(struct starfold__value_slab *s);

/* Records that @r writes @v (lock held), forgetting the submissions that finished well. */
starfold_status_t starfold__value_add_writer_locked(starfold_value_t v, starfold__dist_req_t *r)
{
    if (v->slab) slab_mark_mixed(v->slab); /* before the list changes: value_settled() */
    /* Forget the submissions that finished well, so a value updated every step keeps a short list. */
    size_t k = 0;
    for (size_t i = 0; i < v->nwriters; i++) {
        if (v->writers[i] != r && req_finished_ok(v->writers[i])) writer_drop(v, v->writers[i]);
        else v->writers[k++] = v->writers[i];
    }
    v->nwriters = k;
    for (size_t i = 0; i < v->nwriters; i++)
        if (v->writers[i] == r) return STARFOLD_OK;
    if (v->writers == &v->writer0 && v->nwriters == v->capwriters) { /* out of the inline slot */
        starfold__dist_req_t **w = malloc(sizeof *w * 8);
        if (!w) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory recording a submission");
        memcpy(w, v->writers, sizeof *w * v->nwriters);
        v->writers = w;
        v->capwriters = 8;
    }
    if (SF_GROW(v->writers, v->nwriters, v->capwriters) != 0)
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory recording a submission");
    req_retain(r);
    v->writers[v->nwriters++] = r;
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Host vectors: a malloc'ed buffer registered with StarPU, home node main memory.
 */

starfold_status_t starfold__host_vector_create(starfold_dtype_t dtype, size_t count, starpu_data_handle_t *handle,
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

void starfold__host_vector_destroy(starpu_data_handle_t handle, void *mem)
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

/* Stamps of values' storage (see struct starfold_value), process-wide. */
static unsigned long long stamps;

unsigned long long starfold__value_new_stamp(void)
{
    return __atomic_add_fetch(&stamps, 1, __ATOMIC_RELAXED);
}

/*
 * A slab: the memory of a block's values (starfold__values_alloc_block()), one allocation for all of
 * them, and the block's ranges, one reference each held for all of them. The values are freed one by
 * one as usual; the last one frees the slab and releases the ranges. A training step makes and frees
 * a result per gradient, so this replaces a malloc, a free and n range references per result.
 */
typedef struct starfold__value_slab {
    int refs;                                    /* atomic: values of the slab not freed */
    int n;
    /*
     * The submission that writes the slab's values, their first writer record: one reference for
     * all of them (starfold__value_set_first_writer()), released with the slab. A replica's results
     * then free without touching the count that every replica's results share. NULL: none.
     */
    starfold__dist_req_t *writer;
    /*
     * atomic: set once any value of the slab is recorded with a writer other than @writer (a first
     * writer of its own, or one more: starfold__value_add_writer_locked()); never cleared. While it is 0, every
     * value of the slab is written by @writer alone, so a wait on one of them is a look at @writer
     * (value_settled()), without the value's lock: a replica waits for its 1,000 results of a step
     * that way.
     */
    int mixed;
    pthread_mutex_t lock;                        /* its values' (struct starfold_value::lock) */
    starfold__range_t *ranges[STARFOLD_MAX_DEVICES]; /* one reference each */
    size_t base[STARFOLD_MAX_DEVICES];           /* where the block starts in each range's bucket */
    size_t nonempty;                             /* values of elements the slab has room for */
    starfold_context_t ctx;                      /* whose arena the memory goes back to */
    size_t bytes;                                /* the memory's size, this header included */
} value_slab_t;

#define SLAB_HEAD ((sizeof(value_slab_t) + 15) & ~(size_t)15)

/*
 * A zeroed slab for @nvalues values of shell_size() @each, from @ctx's arena's memory kept for
 * slabs; @ctx NULL: memory of its own (values that may outlive their context).
 */
static value_slab_t *slab_new(starfold_context_t ctx, size_t nvalues, size_t each)
{
    size_t got = 0;
    const size_t bytes = SLAB_HEAD + each * nvalues;
    value_slab_t *s = ctx ? starfold__arena_mem_take(ctx, bytes, &got) : malloc(got = bytes);
    if (!s) return NULL;
    memset(s, 0, SLAB_HEAD); /* each shell is zeroed by shell_init(), while it is in the cache */
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        if (ctx) starfold__arena_mem_give(ctx, s, got);
        else free(s);
        return NULL;
    }
    s->ctx = ctx;
    s->bytes = got;
    return s;
}

static void slab_release(value_slab_t *s)
{
    if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    starfold__dist_req_release(s->writer); /* first: the last reference waits for what writes the ranges */
    for (int c = 0; c < s->n; c++) starfold__range_release(s->ranges[c]);
    pthread_mutex_destroy(&s->lock);
    if (s->ctx) starfold__arena_mem_give(s->ctx, s, s->bytes);
    else free(s);
}

/* Whether @v's record of @r is its slab's reference (value_slab_t::writer) rather than its own. */
static int slab_holds(starfold_value_t v, const starfold__dist_req_t *r)
{
    return v->slab && v->slab->writer == r;
}

static void slab_mark_mixed(struct starfold__value_slab *s)
{
    __atomic_store_n(&s->mixed, 1, __ATOMIC_SEQ_CST);
}

/*
 * Whether every writer of @v finished well, known without its lock: @v is in a slab whose values
 * have its one writer alone (value_slab_t::mixed), and that writer is done. The slab and its
 * writer are fixed before the values are handed out; a writer recorded on a value later marks the
 * slab first. 0 says nothing: value_wait() then looks under the lock.
 */
static int value_settled(starfold_value_t v)
{
    const value_slab_t *s = v->slab;
    return s && s->writer && !__atomic_load_n(&s->mixed, __ATOMIC_SEQ_CST) &&
           __atomic_load_n(&s->writer->done_ok, __ATOMIC_ACQUIRE);
}

/* Drops @v's record of @r: its own reference, or nothing when the slab holds it. */
static void writer_drop(starfold_value_t v, starfold__dist_req_t *r)
{
    if (!slab_holds(v, r)) starfold__dist_req_release(r);
}

/*
 * Lays an empty shell (handles NULL, nothing owned) out in @mem, its struct and rows
 * (rows_end(@n) bytes), guarded by @lock: its slab's, or the one after its rows (value_shell()).
 */
static starfold_value_t shell_init(void *mem, pthread_mutex_t *lock, unsigned long long stamp, starfold_context_t ctx,
                                   starfold_value_kind_t kind, int n, const int *devices, starfold_dtype_t dtype,
                                   size_t count)
{
    struct starfold_value *v = mem;
    memset(mem, 0, rows_end(n));
    v->lock = lock;
    v->n = n;
    v->devices = (int *)(offset_of(v) + n);
    memcpy(v->devices, devices, sizeof *v->devices * (size_t)n);
    v->writers = &v->writer0;
    v->capwriters = 1;
    v->stamp = stamp;
    v->refs = 1;
    v->ctx = ctx;
    v->kind = kind;
    v->dtype = dtype;
    v->count = count;
    return v;
}

/* An empty shell of @n components of its own allocation. */
static starfold_value_t value_shell(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                    starfold_dtype_t dtype, size_t count)
{
    void *mem = malloc(shell_size(n, 1));
    if (!mem) return NULL;
    pthread_mutex_t *lock = (pthread_mutex_t *)((unsigned char *)mem + own_lock_at(n));
    if (pthread_mutex_init(lock, NULL) != 0) {
        free(mem);
        return NULL;
    }
    return shell_init(mem, lock, starfold__value_new_stamp(), ctx, kind, n, devices, dtype, count);
}

/* Gives up the range of component @c: its own reference, or (a slab's value) the slab's. Lock held or no sharing. */
void starfold__value_drop_range(starfold_value_t v, int c)
{
    if (!v->slab) starfold__range_release(range_of(v)[c]);
    range_of(v)[c] = NULL;
}

/* Drops @g's parts (one reference each) and frees it. */
static void group_free(starfold__value_group_t *g)
{
    if (!g) return;
    for (int p = 0; p < g->nparts; p++) starfold_value_destroy(g->parts[p]);
    free(g->parts);
    free(g->origin);
    free(g->origin_comp);
    free(g);
}

/*
 * Frees everything: drops the writer records (the last reference to a record waits for its
 * submission), releases owned handles (unregistering waits for StarPU's tasks on them), drops parts.
 * A shell whose handles moved to other values (starfold__value_take_component) does not wait here.
 */
void starfold__value_free(starfold_value_t v)
{
    for (size_t i = 0; i < v->nwriters; i++) writer_drop(v, v->writers[i]);
    if (v->var) v->var->release(v->var);
    for (int c = 0; c < v->n; c++) {
        if (own_of(v)[c] == SF_OWN_DEVICE) starfold_vector_destroy(v->ctx, handles_of(v)[c]);
        else if (own_of(v)[c] == SF_OWN_HOST) starfold__host_vector_destroy(handles_of(v)[c], host_mem_of(v)[c]);
        if (range_of(v)[c]) starfold__value_drop_range(v, c);
    }
    group_free(v->group);
    if (v->writers != &v->writer0) free(v->writers);
    if (v->slab) {
        slab_release(v->slab);
    } else {
        pthread_mutex_destroy(v->lock);
        free(v);
    }
}

/* As starfold__value_alloc(); @follow: the caller's value goes after the last one it made (arena.h). */
starfold_status_t starfold__value_alloc_at(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                     starfold_dtype_t dtype, size_t count, int follow, starfold_value_t *value)
{
    /* An empty tensor has no range to live in: a handle of its own (of no element). */
    if (count == 0) return starfold__value_alloc_own(ctx, kind, n, devices, dtype, count, value);
    starfold_status_t st = STARFOLD_OK;
    starfold_value_t v = value_shell(ctx, kind, n, devices, dtype, count);
    if (!v) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating a value of %d components", n);
    for (int c = 0; c < n && st == STARFOLD_OK; c++) {
        st = starfold__arena_alloc(ctx, devices[c], dtype, n > 1 ? SF_LANE_MULTI : SF_LANE_SINGLE, count, follow, &range_of(v)[c],
                                   &offset_of(v)[c]);
        if (st == STARFOLD_OK) handles_of(v)[c] = range_of(v)[c]->bucket->handle;
    }
    if (st != STARFOLD_OK) {
        starfold__value_free(v);
        return st;
    }
    *value = v;
    return STARFOLD_OK;
}

starfold_status_t starfold__value_alloc(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                 starfold_dtype_t dtype, size_t count, starfold_value_t *value)
{
    return starfold__value_alloc_at(ctx, kind, n, devices, dtype, count, 0, value);
}

/*
 * A block in two steps, so that a caller can start the work that writes the block before its values
 * exist (batch_reduce.c: a kept binding restarted, the results' values made while it runs):
 *
 *   reserve:  the slab (one allocation for every value of elements) and one arena range per device,
 *             the whole block's; blocks[c] says where each lies            -> nothing made yet
 *   fill:     the values laid out in the slab over those ranges (or cancel: ranges and slab back)
 */
starfold_status_t starfold__values_block_reserve(starfold_context_t ctx, int n, const int *devices, starfold_dtype_t dtype,
                                                 size_t num_values, const size_t *counts, starfold_view_t *blocks,
                                                 starfold__values_block_t **block)
{
    size_t total = 0, nonempty = 0;
    for (size_t i = 0; i < num_values; i++) {
        total += counts[i];
        nonempty += counts[i] > 0;
    }
    *block = NULL;
    if (blocks) memset(blocks, 0, sizeof *blocks * (size_t)n);
    if (nonempty == 0) return STARFOLD_OK; /* values of no element: handles of their own, made by fill */
    /* The values of elements in one slab, which takes the blocks' references. */
    value_slab_t *slab = slab_new(ctx, nonempty, shell_size(n, 0));
    if (!slab) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating %zu values", nonempty);
    slab->n = n;
    slab->nonempty = nonempty;
    starfold_status_t st = STARFOLD_OK;
    for (int c = 0; c < n && st == STARFOLD_OK; c++)
        st = starfold__arena_alloc(ctx, devices[c], dtype, n > 1 ? SF_LANE_MULTI : SF_LANE_SINGLE, total, 0, &slab->ranges[c],
                                   &slab->base[c]);
    if (st != STARFOLD_OK) {
        starfold__values_block_cancel(slab);
        return st;
    }
    if (blocks)
        for (int c = 0; c < n; c++) blocks[c] = (starfold_view_t){ slab->ranges[c]->bucket->handle, slab->base[c] };
    *block = slab;
    return STARFOLD_OK;
}

void starfold__values_block_cancel(starfold__values_block_t *block)
{
    if (!block) return;
    for (int c = 0; c < block->n; c++) starfold__range_release(block->ranges[c]);
    if (block->ctx) starfold__arena_mem_give(block->ctx, block, block->bytes);
    else free(block);
}

starfold_status_t starfold__values_block_fill(starfold__values_block_t *block, starfold_context_t ctx,
                                              starfold_value_kind_t kind, int n, const int *devices, starfold_dtype_t dtype,
                                              size_t num_values, const size_t *counts, const int *const *value_devices,
                                              starfold_value_t *values)
{
    value_slab_t *slab = block;
    starfold_status_t st = STARFOLD_OK;
    const size_t each = shell_size(n, 0);
    unsigned char *mem = slab ? (unsigned char *)slab + SLAB_HEAD : NULL;
    memset(values, 0, sizeof *values * num_values);
    const size_t nonempty = slab ? slab->nonempty : 0;
    unsigned long long stamp = nonempty ? __atomic_add_fetch(&stamps, nonempty, __ATOMIC_RELAXED) - nonempty : 0;
    size_t made = 0, at = 0;
    for (size_t i = 0; i < num_values && st == STARFOLD_OK; i++) {
        const int *vdev = value_devices && value_devices[i] ? value_devices[i] : devices;
        if (counts[i] == 0) {
            st = starfold__value_alloc_own(ctx, kind, n, vdev, dtype, 0, &values[i]);
            continue;
        }
        starfold_value_t v = shell_init(mem + each * made, &slab->lock, ++stamp, ctx, kind, n, vdev, dtype, counts[i]);
        made++;
        v->slab = slab;
        const int same_order = vdev == devices || !memcmp(vdev, devices, sizeof *vdev * (size_t)n);
        for (int c = 0; c < n; c++) {
            int b = c;
            if (!same_order) {
                b = 0;
                while (b < n - 1 && devices[b] != vdev[c]) b++; /* the block on this component's device */
            }
            range_of(v)[c] = slab->ranges[b];
            handles_of(v)[c] = slab->ranges[b]->bucket->handle;
            offset_of(v)[c] = slab->base[b] + at;
        }
        at += counts[i];
        values[i] = v;
    }
    if (slab) {
        /* One reference per value made, plus one for the values not made, given back now. */
        slab->refs = (int)made + 1;
        if (st != STARFOLD_OK)
            for (size_t i = 0; i < num_values; i++)
                if (values[i]) starfold__value_free(values[i]);
        slab_release(slab);
    } else if (st != STARFOLD_OK) {
        for (size_t i = 0; i < num_values; i++)
            if (values[i]) starfold__value_free(values[i]);
    }
    if (st != STARFOLD_OK) {
        memset(values, 0, sizeof *values * num_values);
        return st;
    }
    return STARFOLD_OK;
}

starfold_status_t starfold__values_alloc_block(starfold_context_t ctx, starfold_value_kind_t kind, int n,
                                               const int *devices, starfold_dtype_t dtype, size_t num_values,
                                               const size_t *counts, const int *const *value_devices,
                                               starfold_value_t *values, starfold_view_t *blocks)
{
    starfold__values_block_t *block = NULL;
    memset(values, 0, sizeof *values * num_values);
    const starfold_status_t st = starfold__values_block_reserve(ctx, n, devices, dtype, num_values, counts, blocks, &block);
    if (st != STARFOLD_OK) return st;
    return starfold__values_block_fill(block, ctx, kind, n, devices, dtype, num_values, counts, value_devices, values);
}

starfold_status_t starfold__value_alloc_own(starfold_context_t ctx, starfold_value_kind_t kind, int n,
                                            const int *devices, starfold_dtype_t dtype, size_t count,
                                            starfold_value_t *value)
{
    starfold_status_t st = STARFOLD_OK;
    starfold_value_t v = value_shell(ctx, kind, n, devices, dtype, count);
    if (!v) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating a value of %d components", n);
    for (int c = 0; c < n; c++) {
        if (devices[c] == STARFOLD_DEVICE_HOST) {
            SF_CHECK_GOTO(starfold__host_vector_create(dtype, count, &handles_of(v)[c], &host_mem_of(v)[c]), st, fail);
            own_of(v)[c] = SF_OWN_HOST;
        } else {
            SF_CHECK_GOTO(starfold_vector_create(ctx, devices[c], dtype, count, &handles_of(v)[c]), st, fail);
            own_of(v)[c] = SF_OWN_DEVICE;
        }
    }
    *value = v;
    return STARFOLD_OK;
fail:
    starfold__value_free(v);
    return st;
}

starfold_status_t starfold__value_borrow(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                  const starpu_data_handle_t *handles, starfold_dtype_t dtype, size_t count,
                                  starfold_value_t *value)
{
    starfold_value_t v = value_shell(ctx, kind, n, devices, dtype, count);
    if (!v) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating a value of %d components", n);
    memcpy(handles_of(v), handles, sizeof *handles * (size_t)n);
    *value = v;
    return STARFOLD_OK;
}

/* The value that holds component @c of @v (@v itself unless regrouped); *c becomes its index there. */
starfold_value_t starfold__value_root(starfold_value_t v, int *c)
{
    while (starfold__value_regrouped(v) && v->group->origin[*c]) {
        const int k = v->group->origin_comp[*c];
        v = v->group->origin[*c];
        *c = k;
    }
    return v;
}

starfold_status_t starfold__value_borrow_components(starfold_context_t ctx, starfold_value_kind_t kind, int n,
                                                    const int *devices, const starfold_value_t *srcs, const int *comps,
                                                    starfold_value_t *value)
{
    starfold_value_t v = value_shell(ctx, kind, n, devices, srcs[0]->dtype, srcs[0]->count);
    if (!v) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating a value of %d components", n);
    for (int i = 0; i < n; i++) {
        int c = comps[i];
        const starfold_value_t s = starfold__value_root(srcs[i], &c);
        pthread_mutex_lock(s->lock); /* a concurrent move out of the arena (value_handle) changes the row */
        handles_of(v)[i] = handles_of(s)[c];
        offset_of(v)[i] = offset_of(s)[c];
        if ((range_of(v)[i] = range_of(s)[c])) starfold__range_retain(range_of(v)[i]);
        pthread_mutex_unlock(s->lock);
    }
    *value = v;
    return STARFOLD_OK;
}

starfold_status_t starfold__values_borrow_block(starfold_value_kind_t kind, int n, const int *devices, size_t nv,
                                                const starfold_value_t *srcs, const int *comps, starfold_value_t *values)
{
    const size_t each = shell_size(n, 0);
    value_slab_t *slab = slab_new(NULL, nv, each);
    if (!slab) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating %zu values", nv);
    slab->n = 0; /* no reference on the sources' ranges: they outlive the values */
    unsigned char *mem = (unsigned char *)slab + SLAB_HEAD;
    unsigned long long stamp = __atomic_add_fetch(&stamps, nv, __ATOMIC_RELAXED) - nv;
    size_t made = 0;
    for (; made < nv; made++) {
        const starfold_value_t s0 = srcs[made];
        starfold_value_t v = shell_init(mem + each * made, &slab->lock, ++stamp, s0->ctx, kind, n, devices, s0->dtype, s0->count);
        v->slab = slab;
        for (int i = 0; i < n; i++) {
            int c = comps[(size_t)i * nv + made];
            const starfold_value_t s = starfold__value_root(srcs[(size_t)i * nv + made], &c);
            pthread_mutex_lock(s->lock); /* a concurrent move out of the arena (value_handle) changes the row */
            handles_of(v)[i] = handles_of(s)[c];
            offset_of(v)[i] = offset_of(s)[c];
            range_of(v)[i] = range_of(s)[c];
            pthread_mutex_unlock(s->lock);
        }
        values[made] = v;
    }
    slab->refs = (int)nv + 1; /* one per value, and one given back now */
    slab_release(slab);
    return STARFOLD_OK;
}

starfold_view_t starfold__value_view(starfold_value_t v, int c)
{
    v = starfold__value_root(v, &c);
    pthread_mutex_lock(v->lock);
    const starfold_view_t view = { handles_of(v)[c], offset_of(v)[c] };
    pthread_mutex_unlock(v->lock);
    return view;
}

int starfold__value_views(starfold_value_t v, starfold_view_t *views)
{
    int in_arena = 1;
    if (starfold__value_regrouped(v)) { /* each component where its part keeps it */
        for (int c = 0; c < v->n; c++) {
            views[c] = starfold__value_view(v, c);
            in_arena &= starfold__value_in_arena(v, c);
        }
        return in_arena;
    }
    pthread_mutex_lock(v->lock);
    for (int c = 0; c < v->n; c++) {
        views[c] = (starfold_view_t){ handles_of(v)[c], offset_of(v)[c] };
        in_arena &= range_of(v)[c] != NULL;
    }
    pthread_mutex_unlock(v->lock);
    return in_arena;
}

int starfold__value_in_arena(starfold_value_t v, int c)
{
    v = starfold__value_root(v, &c);
    pthread_mutex_lock(v->lock);
    const int in = range_of(v)[c] != NULL;
    pthread_mutex_unlock(v->lock);
    return in;
}

STARFOLD_API starfold_value_t starfold_value_retain(starfold_value_t value)
{
    if (value) __atomic_add_fetch(&value->refs, 1, __ATOMIC_RELAXED);
    return value;
}

STARFOLD_API void starfold_value_destroy(starfold_value_t value)
{
    if (value && __atomic_sub_fetch(&value->refs, 1, __ATOMIC_ACQ_REL) == 0) starfold__value_free(value);
}

starfold_status_t starfold__value_add_writer(starfold_value_t v, starfold__dist_req_t *r)
{
    pthread_mutex_lock(v->lock);
    const starfold_status_t st = starfold__value_add_writer_locked(v, r);
    pthread_mutex_unlock(v->lock);
    return st;
}

void starfold__value_set_first_writer(starfold_value_t v, starfold__dist_req_t *r)
{
    /* A slab's values share one reference, taken by the first of them (no other thread sees them). */
    if (!slab_holds(v, r)) {
        if (v->slab && !v->slab->writer) v->slab->writer = r;
        else if (v->slab) slab_mark_mixed(v->slab);
        req_retain(r);
    }
    v->writer0 = r;
    v->writers = &v->writer0;
    v->nwriters = 1;
}

starfold_status_t starfold__value_take_component(starfold_value_t v, int c, starfold_value_t *out)
{
    starfold_value_t o = value_shell(v->ctx, v->kind, 1, &v->devices[c], v->dtype, v->count);
    if (!o) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory splitting a value");
    starfold_status_t st = STARFOLD_OK;
    if (v->group && v->group->nparts > 0) {
        const starfold__value_group_t *from = v->group;
        starfold__value_group_t *g = group_of(o);
        if (!g || !(g->parts = malloc(sizeof *g->parts * (size_t)from->nparts))) {
            starfold__value_free(o);
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory splitting a value");
        }
        for (int p = 0; p < from->nparts; p++) g->parts[g->nparts++] = starfold_value_retain(from->parts[p]);
    }
    pthread_mutex_lock(v->lock);
    for (size_t w = 0; w < v->nwriters && st == STARFOLD_OK; w++) st = starfold__value_add_writer(o, v->writers[w]);
    pthread_mutex_unlock(v->lock);
    if (st != STARFOLD_OK) {
        starfold__value_free(o);
        return st;
    }
    /* Ownership of the handle moves last: nothing can fail after it. */
    pthread_mutex_lock(v->lock);
    handles_of(o)[0] = handles_of(v)[c];
    own_of(o)[0] = own_of(v)[c];
    host_mem_of(o)[0] = host_mem_of(v)[c];
    range_of(o)[0] = range_of(v)[c];
    if (v->slab && range_of(o)[0]) starfold__range_retain(range_of(o)[0]); /* o's own: the slab keeps v's */
    offset_of(o)[0] = offset_of(v)[c];
    own_of(v)[c] = SF_OWN_NONE;
    host_mem_of(v)[c] = NULL;
    range_of(v)[c] = NULL;
    __atomic_store_n(&v->stamp, starfold__value_new_stamp(), __ATOMIC_RELAXED);
    pthread_mutex_unlock(v->lock);
    *out = o;
    return STARFOLD_OK;
}

int starfold__value_component_on(starfold_value_t v, int device)
{
    for (int c = 0; c < v->n; c++)
        if (v->devices[c] == device) return c;
    return -1;
}


/* Waits for every writer, each for what is left of @seconds (< 0: no limit). */
static starfold_status_t value_wait(starfold_value_t v, double seconds)
{
    /* Snapshot under the lock (records may be added meanwhile); wait without holding it. */
    starfold__dist_req_t *few[4];
    if (value_settled(v)) return STARFOLD_OK;
    pthread_mutex_lock(v->lock);
    /* Every writer already waited for with success (the results of one submission after the first): done. */
    size_t ok = 0;
    while (ok < v->nwriters && __atomic_load_n(&v->writers[ok]->done_ok, __ATOMIC_ACQUIRE)) ok++;
    if (ok == v->nwriters) {
        pthread_mutex_unlock(v->lock);
        return STARFOLD_OK;
    }
    const size_t n = v->nwriters;
    starfold__dist_req_t **w = n > 4 ? malloc(sizeof *w * n) : few;
    if (n && !w) {
        pthread_mutex_unlock(v->lock);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_value_wait: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        w[i] = v->writers[i];
        req_retain(w[i]);
    }
    pthread_mutex_unlock(v->lock);

    starfold_status_t first = STARFOLD_OK;
    const double t0 = seconds >= 0 ? starfold__now_s() : 0.0;
    for (size_t i = 0; i < n; i++) {
        double left = -1.0;
        if (seconds >= 0) {
            left = seconds - (starfold__now_s() - t0);
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
    if (w != few) free(w);
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
