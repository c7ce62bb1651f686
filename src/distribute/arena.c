/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The arena of a context: buckets that values live in, and persistent submissions over them.
 *
 *   bucket (device 3, float32)   [ v0 | v1 | v2 | ... | v999 | results of step k |   free   ]
 *                                  ranges, by offset; a new one takes the first gap that fits
 *   bucket (device 3, float32)   [ ...                                          ]
 *   ...                          one list per context, any device, dtype and lane
 *                                (values of several components apart from one-component ones)
 *
 *   persistent submissions       key = (graph serial, every input view, every output view)
 *                                -> starfold_persistent_t bound to those views, started every step
 *
 * Why. A training loop reduces the same list of gradients every step. Given as one StarPU handle per
 * tensor per replica, 1,000 tensors on 8 replicas cost StarPU 16,000 handles per step, more than the
 * reduction itself, and results freshly allocated every step fault their pages in every step. Values
 * carved from buckets are views of a few vectors (starfold_submit_views()); a step's results come
 * from memory mapped by the previous step's; and a reduction over the same views as before starts
 * the persistent submission made the first time instead of planning again.
 *
 * Invariants.
 * - A bucket is registered once and unregistered only when its context is destroyed (after every
 *   persistent submission, which holds partition plans on it). It is kept partitioned between
 *   starts (exec/partitions.c): the next step's start finds its pieces in place, a read or write
 *   from the host goes through them, and another graph's shape switches it first. Reusing its
 *   front is safe at any time because every access to it goes through StarPU with sequential
 *   consistency: a new value's first write is ordered after the tasks still reading the range's
 *   previous owner.
 * - A range's refs count the value components in it (a group's results share one range per device);
 *   the last release removes it from its bucket's live list, under the arena's lock, and only then
 *   can an allocation hand its elements out again.
 * - Persistent submissions are only keyed by views of buckets, whose lifetime the arena controls: a
 *   caller's wrapped handle may be unregistered by its owner at any time, so it never gets one.
 *
 * Ownership: the arena is the context's (exec's ext slot), created on first use, finished first thing
 * in starfold_context_destroy(). Values must be destroyed before their context, as always.
 */
#include "config.h"

#include <stdint.h>

#include "base/common.h"
#include "distribute/arena.h"
#include "distribute/distribute.h"
#include "exec/vectors.h"

#define SF_BUCKET_MIN_BYTES ((size_t)4 << 20)
#define SF_BUCKET_MAX_GROWTH_BYTES ((size_t)64 << 20)
#define SF_PERSIST_MAX 32
#define SF_MEM_KEPT 16                          /* slab memories kept for the next step */
#define SF_MEM_KEPT_BYTES ((size_t)64 << 20)    /* ... and at most this much of it */

/* Tickets of bindings, process-wide so that a ticket kept past its context never names another's. */
static unsigned long long starfold__arena_tickets;

typedef struct persist_entry {
    unsigned long long graph_key;
    size_t nin, nout;
    starfold_view_t *views;          /* [nin + nout] */
    uint64_t hash;
    starfold_persistent_t persistent;
    unsigned long long used;         /* last start, for LRU eviction */
    unsigned long long ticket;       /* names this binding for starfold__arena_restart(), never reused */
} persist_entry_t;

typedef struct arena {
    starfold_context_t ctx;
    pthread_mutex_t lock;
    starfold__bucket_t *buckets;
    size_t nbuckets, bytes;
    persist_entry_t persist[SF_PERSIST_MAX];
    unsigned long long clock, starts, reuses;
    unsigned long long follows;      /* values made with @follow, their buckets' stamps */
    struct { void *mem; size_t bytes; } kept[SF_MEM_KEPT]; /* slab memory given back; under lock */
    int nkept;
    size_t kept_bytes;
} arena_t;

/* ------------------------------------------------------------------------------------------------
 * Lifetime
 */

static void bucket_destroy(starfold_context_t ctx, starfold__bucket_t *b)
{
    /* Ranges still live belong to values not destroyed before their context: left to them. */
    free(b->live);
    if (b->device == STARFOLD_DEVICE_HOST) {
        starfold__vector_unregister_discard(b->handle);
        free(b->host_mem);
    } else {
        starfold_vector_destroy(ctx, b->handle);
    }
    free(b);
}

static void persist_clear(persist_entry_t *e)
{
    starfold_persistent_destroy(e->persistent); /* waits for its starts' temporaries */
    free(e->views);
    memset(e, 0, sizeof *e);
}

/* exec's ext_fini: the context is being destroyed, StarPU still runs. */
static void arena_fini(void *p)
{
    arena_t *a = p;
    for (int k = 0; k < SF_PERSIST_MAX; k++)
        if (a->persist[k].persistent) persist_clear(&a->persist[k]);
    for (starfold__bucket_t *b = a->buckets, *next; b; b = next) {
        next = b->next;
        bucket_destroy(a->ctx, b);
    }
    for (int k = 0; k < a->nkept; k++) free(a->kept[k].mem);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

/* The context's arena, made on first use (two first users race through the slot's compare-and-swap). */
static arena_t *arena_of(starfold_context_t ctx)
{
    arena_t *a = starfold__context_ext(ctx);
    if (a) return a;
    if (!(a = calloc(1, sizeof *a))) return NULL;
    if (pthread_mutex_init(&a->lock, NULL) != 0) {
        free(a);
        return NULL;
    }
    a->ctx = ctx;
    if (!starfold__context_ext_set(ctx, a, arena_fini)) {
        pthread_mutex_destroy(&a->lock);
        free(a);
        a = starfold__context_ext(ctx);
    }
    return a;
}

/* ------------------------------------------------------------------------------------------------
 * Buckets
 */

void starfold__range_retain(starfold__range_t *r)
{
    __atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

/* Index in @b's live list of the first range at or after element @offset. Lock held. */
static size_t live_lower_bound(const starfold__bucket_t *b, size_t offset)
{
    size_t lo = 0, hi = b->nlive;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (b->live[mid]->offset < offset) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

void starfold__range_release(starfold__range_t *r)
{
    if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    starfold__bucket_t *b = r->bucket;
    arena_t *a = b->arena;
    pthread_mutex_lock(&a->lock);
    const size_t k = live_lower_bound(b, r->offset);
    if (k < b->nlive && b->live[k] == r) {
        memmove(&b->live[k], &b->live[k + 1], sizeof *b->live * (b->nlive - k - 1));
        b->nlive--;
        b->used -= r->count;
    }
    pthread_mutex_unlock(&a->lock);
    free(r);
}

/* The first gap of @count elements in @b, or (size_t)-1. Lock held. */
static size_t first_gap(const starfold__bucket_t *b, size_t count, size_t *pos)
{
    size_t at = 0;
    for (size_t k = 0; k <= b->nlive; k++) {
        const size_t end = k < b->nlive ? b->live[k]->offset : b->capacity;
        if (end - at >= count) {
            *pos = k;
            return at;
        }
        if (k < b->nlive) at = b->live[k]->offset + b->live[k]->count;
    }
    return (size_t)-1;
}

/* A new bucket for @count elements: at least 256 KiB, twice the largest of its kind up to 64 MiB. */
static starfold_status_t bucket_new(arena_t *a, int device, starfold_dtype_t dtype, int lane, size_t count,
                                    starfold__bucket_t **out)
{
    const size_t elem = starfold_dtype_size(dtype);
    size_t cap_bytes = SF_BUCKET_MIN_BYTES;
    for (starfold__bucket_t *b = a->buckets; b; b = b->next)
        if (b->device == device && b->dtype == dtype && b->lane == lane && b->capacity * elem * 2 > cap_bytes)
            cap_bytes = b->capacity * elem * 2 < SF_BUCKET_MAX_GROWTH_BYTES ? b->capacity * elem * 2
                                                                             : SF_BUCKET_MAX_GROWTH_BYTES;
    size_t capacity = cap_bytes / elem;
    if (capacity < count) capacity = count;
    if (capacity > UINT32_MAX) capacity = UINT32_MAX > count ? UINT32_MAX : count;

    starfold__bucket_t *b = calloc(1, sizeof *b);
    if (!b) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating a bucket");
    starfold_status_t st = STARFOLD_OK;
    if (device == STARFOLD_DEVICE_HOST) {
        if (!(b->host_mem = malloc(capacity * elem)))
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of host memory", capacity * elem);
        else if ((st = starfold__host_vector_register(b->host_mem, capacity, elem, &b->handle)) != STARFOLD_OK)
            free(b->host_mem);
    } else {
        st = starfold_vector_create(a->ctx, device, dtype, capacity, &b->handle);
    }
    if (st != STARFOLD_OK) {
        free(b);
        return st;
    }
    b->device = device;
    if ((st = starfold__vector_keep_partitions(b->handle)) != STARFOLD_OK) {
        bucket_destroy(a->ctx, b);
        return st;
    }
    b->arena = a;
    b->dtype = dtype;
    b->lane = lane;
    b->capacity = capacity;
    b->next = a->buckets;
    a->buckets = b;
    a->nbuckets++;
    a->bytes += capacity * elem;
    *out = b;
    return STARFOLD_OK;
}

/*
 * The bucket of @device, @dtype and @lane that the last value made with @follow went into, if that
 * value still lives there and @count elements are free right after it: *@at and *@pos (its index in
 * the live list) say where. Lock held. A value made after one that is gone goes by first fit: a loop
 * that makes and destroys the same values every step gets the same ranges every step (and its
 * persistent bindings), instead of marching through the bucket.
 */
static starfold__bucket_t *follow_fit(const arena_t *a, int device, starfold_dtype_t dtype, int lane, size_t count,
                                      size_t *at, size_t *pos)
{
    starfold__bucket_t *last = NULL;
    for (starfold__bucket_t *b = a->buckets; b; b = b->next)
        if (b->device == device && b->dtype == dtype && b->lane == lane && b->follow_stamp &&
            (!last || b->follow_stamp > last->follow_stamp))
            last = b;
    if (!last || last->capacity - last->follow_end < count) return NULL;
    const size_t from = last->follow_end, k = live_lower_bound(last, from);
    if (k == 0 || last->live[k - 1]->offset + last->live[k - 1]->count != from) return NULL;
    if (k < last->nlive && last->live[k]->offset < from + count) return NULL;
    *at = from;
    *pos = k;
    return last;
}

starfold_status_t starfold__arena_alloc(starfold_context_t ctx, int device, starfold_dtype_t dtype, int lane, size_t count,
                                        int follow, starfold__range_t **range, size_t *offset)
{
    arena_t *a = arena_of(ctx);
    if (!a) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating the context's arena");
    starfold__range_t *r = calloc(1, sizeof *r);
    if (!r) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory allocating a value");
    pthread_mutex_lock(&a->lock);
    size_t at = 0, pos = 0;
    starfold__bucket_t *fit = follow ? follow_fit(a, device, dtype, lane, count, &at, &pos) : NULL;
    /* Else first fit, oldest bucket first (the list is newest first: the last match wins). */
    for (starfold__bucket_t *b = fit ? NULL : a->buckets; b; b = b->next) {
        if (b->device != device || b->dtype != dtype || b->lane != lane) continue;
        if (b->capacity - b->used < count) continue; /* no gap can fit: skip its live list */
        size_t p;
        const size_t o = first_gap(b, count, &p);
        if (o != (size_t)-1) {
            fit = b;
            at = o;
            pos = p;
        }
    }
    starfold_status_t st = STARFOLD_OK;
    if (!fit && (st = bucket_new(a, device, dtype, lane, count, &fit)) == STARFOLD_OK) at = pos = 0;
    if (st == STARFOLD_OK && SF_GROW(fit->live, fit->nlive, fit->caplive) != 0)
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory allocating a value");
    if (st == STARFOLD_OK) {
        memmove(&fit->live[pos + 1], &fit->live[pos], sizeof *fit->live * (fit->nlive - pos));
        fit->live[pos] = r;
        fit->nlive++;
        fit->used += count;
        *r = (starfold__range_t){ .refs = 1, .bucket = fit, .offset = at, .count = count };
        if (follow) {
            fit->follow_end = at + count;
            fit->follow_stamp = ++a->follows;
        }
        *range = r;
        *offset = at;
        r = NULL;
    }
    pthread_mutex_unlock(&a->lock);
    free(r);
    return st;
}

/* ------------------------------------------------------------------------------------------------
 * Slab memory
 */

void *starfold__arena_mem_take(starfold_context_t ctx, size_t bytes, size_t *got)
{
    arena_t *a = arena_of(ctx);
    void *mem = NULL;
    if (a) {
        /* The smallest kept that fits, if it is not more than twice too big. */
        pthread_mutex_lock(&a->lock);
        int best = -1;
        for (int k = 0; k < a->nkept; k++)
            if (a->kept[k].bytes >= bytes && a->kept[k].bytes / 2 <= bytes &&
                (best < 0 || a->kept[k].bytes < a->kept[best].bytes))
                best = k;
        if (best >= 0) {
            mem = a->kept[best].mem;
            *got = a->kept[best].bytes;
            a->kept_bytes -= *got;
            a->kept[best] = a->kept[--a->nkept];
        }
        pthread_mutex_unlock(&a->lock);
    }
    if (!mem && (mem = malloc(bytes))) *got = bytes;
    return mem;
}

void starfold__arena_mem_give(starfold_context_t ctx, void *mem, size_t bytes)
{
    arena_t *a = starfold__context_ext(ctx);
    if (a) {
        pthread_mutex_lock(&a->lock);
        const int keep = a->nkept < SF_MEM_KEPT && a->kept_bytes + bytes <= SF_MEM_KEPT_BYTES;
        if (keep) {
            a->kept[a->nkept].mem = mem;
            a->kept[a->nkept++].bytes = bytes;
            a->kept_bytes += bytes;
            mem = NULL;
        }
        pthread_mutex_unlock(&a->lock);
    }
    free(mem);
}

/* ------------------------------------------------------------------------------------------------
 * Persistent submissions
 */

static uint64_t views_hash(unsigned long long graph_key, size_t n, const starfold_view_t *views)
{
    uint64_t h = STARFOLD__FNV_OFFSET ^ graph_key; /* FNV-1a over the fields */
    for (size_t i = 0; i < n; i++) {
        h = starfold__fnv1a(h, (uint64_t)(uintptr_t)views[i].handle);
        h = starfold__fnv1a(h, (uint64_t)views[i].offset);
    }
    return h;
}

static int views_equal(size_t n, const starfold_view_t *a, const starfold_view_t *b)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].handle != b[i].handle || a[i].offset != b[i].offset) return 0;
    return 1;
}

/* A new entry: a free slot, else the least recently started one (its persistent destroyed first). */
static persist_entry_t *persist_slot(arena_t *a)
{
    persist_entry_t *slot = NULL;
    for (int k = 0; k < SF_PERSIST_MAX; k++) {
        persist_entry_t *e = &a->persist[k];
        if (!e->persistent) return e;
        if (!slot || e->used < slot->used) slot = e;
    }
    persist_clear(slot);
    return slot;
}

starfold_status_t starfold__arena_start(starfold_context_t ctx, starfold_graph_t graph, unsigned long long graph_key,
                                        size_t num_inputs, const starfold_view_t *inputs, size_t num_outputs,
                                        const starfold_view_t *outputs, starfold_request_t *request, int *reused,
                                        unsigned long long *ticket)
{
    arena_t *a = arena_of(ctx);
    if (!a) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating the context's arena");
    const size_t n = num_inputs + num_outputs;
    starfold_view_t *views = malloc(sizeof *views * (n ? n : 1));
    if (!views) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory keying a persistent submission");
    memcpy(views, inputs, sizeof *views * num_inputs);
    memcpy(views + num_inputs, outputs, sizeof *views * num_outputs);
    const uint64_t hash = views_hash(graph_key, n, views);

    /*
     * Starts run under the lock: an entry is never evicted (destroyed) while a start is inside it. A
     * start only creates and submits tasks, so contention is short.
     */
    pthread_mutex_lock(&a->lock);
    a->starts++;
    persist_entry_t *e = NULL;
    for (int k = 0; k < SF_PERSIST_MAX && !e; k++) {
        persist_entry_t *x = &a->persist[k];
        if (x->persistent && x->hash == hash && x->graph_key == graph_key && x->nin == num_inputs &&
            x->nout == num_outputs && views_equal(n, x->views, views))
            e = x;
    }
    starfold_status_t st = STARFOLD_OK;
    *reused = e != NULL;
    if (e) {
        a->reuses++;
        free(views);
    } else {
        starfold_persistent_t p = NULL;
        st = starfold_persistent_create_views(ctx, graph, inputs, outputs, &p);
        if (st == STARFOLD_OK) {
            e = persist_slot(a);
            *e = (persist_entry_t){ .graph_key = graph_key, .nin = num_inputs, .nout = num_outputs, .views = views,
                                    .hash = hash, .persistent = p, .ticket = __atomic_add_fetch(&starfold__arena_tickets, 1, __ATOMIC_RELAXED) };
        } else {
            free(views);
        }
    }
    if (e) {
        e->used = ++a->clock;
        *ticket = e->ticket;
        st = starfold_persistent_start(e->persistent, request);
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

starfold_status_t starfold__arena_restart(starfold_context_t ctx, unsigned long long ticket, starfold_request_t *request,
                                          int *found)
{
    arena_t *a = starfold__context_ext(ctx);
    *found = 0;
    if (!a || !ticket) return STARFOLD_OK;
    starfold_status_t st = STARFOLD_OK;
    pthread_mutex_lock(&a->lock); /* as in starfold__arena_start: no eviction while a start is inside an entry */
    for (int k = 0; k < SF_PERSIST_MAX; k++) {
        persist_entry_t *e = &a->persist[k];
        if (!e->persistent || e->ticket != ticket) continue;
        *found = 1;
        a->starts++;
        a->reuses++;
        e->used = ++a->clock;
        st = starfold_persistent_start(e->persistent, request);
        break;
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

void starfold__arena_stats(starfold_context_t ctx, starfold__arena_stats_t *out)
{
    memset(out, 0, sizeof *out);
    arena_t *a = starfold__context_ext(ctx);
    if (!a) return;
    pthread_mutex_lock(&a->lock);
    out->buckets = a->nbuckets;
    out->bytes = a->bytes;
    for (int k = 0; k < SF_PERSIST_MAX; k++) out->persistents += a->persist[k].persistent != NULL;
    out->starts = a->starts;
    out->reuses = a->reuses;
    pthread_mutex_unlock(&a->lock);
}
