/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * A batch's pairs grouped into graphs (cross_device_ops.c has the dispatch and its picture): each
 * pair classified (shortcut, all-reduce, reduce-to-one, fallback) onto graph devices, pairs whose
 * graphs would have the same sources and destinations grouped, members laid out one after another
 * in memory coalesced into runs, and each group's graph compiled or taken from the ops' cache.
 * No submission here (batch_reduce.c).
 */
#include "config.h"

#include <stdio.h>

#include "algorithms/algorithms.h"
#include "base/common.h"
#include "distribute/batch_plan.h"
#include "distribute/distribute.h"

typedef starfold__item_t item_t;
typedef starfold__group_t group_t;

/* Serial numbers of cached graphs, process-wide so that no two graphs ever share one. */
static unsigned long long starfold__graph_serial;

int starfold__map_host(int device, int host_as)
{
    return device == STARFOLD_DEVICE_HOST ? host_as : device;
}

void starfold__ops_classify(starfold_cross_device_ops_t ops, const starfold__pair_t *p, item_t *it)
{
    const starfold_value_t v = p->value;
    const starfold__dest_t *d = &p->dest;
    const int vhost = v->devices[0] == STARFOLD_DEVICE_HOST;
    const int match = (vhost && d->host) || (!vhost && !d->host && starfold__devices_match(v->n, v->devices, d->n, d->devices));
    const int r2o = ops->options.reduce_to_device;
    memset(it, 0, sizeof *it);
    it->host_as = -1;
    if (v->n == 1 && match) {
        /* TensorFlow's one-value shortcut: identity on that device. */
        const int x = vhost ? (r2o >= 0 ? r2o : 0) : v->devices[0];
        it->path = SF_PATH_SHORTCUT;
        it->nsrc = it->ndst = 1;
        it->src[0] = it->dst[0] = it->reduce_device = x;
        if (vhost) it->host_as = x;
        return;
    }
    if (ops->all_reduce && match && !d->host) {
        it->path = SF_PATH_ALL_REDUCE;
        it->nsrc = it->ndst = v->n;
        memcpy(it->src, v->devices, sizeof(int) * (size_t)v->n);
        memcpy(it->dst, v->devices, sizeof(int) * (size_t)v->n);
        it->reduce_device = -1;
        return;
    }
    /* ReductionToOneDevice: R = reduce_to_device, else the first destination (the value's first device
     * when the destination is the host). An all-reduce algorithm's fallback has no reduce_to_device. */
    int r = ops->all_reduce ? -1 : r2o;
    if (r < 0) r = d->host ? v->devices[0] : d->devices[0];
    it->path = ops->all_reduce ? SF_PATH_FALLBACK : SF_PATH_REDUCE;
    it->reduce_device = r;
    if (vhost || d->host) it->host_as = r;
    it->nsrc = v->n;
    for (int s = 0; s < v->n; s++) it->src[s] = starfold__map_host(v->devices[s], r);
    it->ndst = d->n;
    for (int k = 0; k < d->n; k++) it->dst[k] = starfold__map_host(d->devices[k], r);
}

static int same_seq(int n, const int *a, int m, const int *b)
{
    return n == m && !memcmp(a, b, sizeof(int) * (size_t)n);
}

/* Whether items @a and @b can share a graph (see the header comment). */
int starfold__items_same_graph(const item_t *a, const item_t *b)
{
    if (a->path != b->path || a->reduce_device != b->reduce_device) return 0;
    switch (a->path) {
    case SF_PATH_SHORTCUT: return a->src[0] == b->src[0];
    case SF_PATH_ALL_REDUCE: return starfold__devices_match(a->nsrc, a->src, b->nsrc, b->src);
    default:
        /* The reduction order is the value's component order: sources must be the same sequence. */
        return same_seq(a->nsrc, a->src, b->nsrc, b->src) && starfold__devices_match(a->ndst, a->dst, b->ndst, b->dst);
    }
}

starfold_status_t starfold__pick_topology(starfold_cross_device_ops_t ops, starfold_topology_t hint,
                                          starfold_context_t ctx, starfold_topology_t *topo, int *made)
{
    *made = 0;
    if (ops && ops->topology) *topo = ops->topology;
    else if (hint) *topo = hint;
    else {
        starfold_status_t st = starfold_context_topology(ctx, topo);
        if (st != STARFOLD_OK) return st;
        *made = 1;
    }
    return STARFOLD_OK;
}

/* Every graph device of @it exists in the topology and the context. */
starfold_status_t starfold__check_item_devices(const char *fn, const item_t *it, int ntopo, int nctx, size_t pair)
{
    for (int k = 0; k < it->nsrc + it->ndst; k++) {
        const int d = k < it->nsrc ? it->src[k] : it->dst[k - it->nsrc];
        if (d < 0 || d >= nctx)
            return starfold__error(STARFOLD_ERR_NO_DEVICE, "%s: pair %zu: device %d, the context has devices 0..%d", fn, pair, d,
                            nctx - 1);
        if (d >= ntopo)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                            "%s: pair %zu: device %d is not in the topology (devices 0..%d)", fn, pair, d, ntopo - 1);
    }
    if (it->reduce_device >= ntopo || it->reduce_device >= nctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: reduce_to_device %d is not a device of the topology and "
                        "the context", fn, it->reduce_device);
    return STARFOLD_OK;
}

/* Component of a value (or result) that stands on graph device @gdev, the host counting as @host_as. */
int starfold__component_for(const int *devices, int n, int gdev, int host_as)
{
    for (int c = 0; c < n; c++)
        if (starfold__map_host(devices[c], host_as) == gdev) return c;
    return -1;
}

/* ------------------------------------------------------------------------------------------------
 * Runs: a list laid out in one buffer reduces as one tensor
 *
 * A training loop's gradients live in the arena's buckets, made one after another, so on every
 * replica a list of them is a stretch of one bucket vector:
 *
 *     each replica's bucket   [ g0 | g1 | g2 | ... | g160 ]
 *     members                   g0   g1   g2   ...   g160
 *     graph tensors           [---------- run 0 ----------]   a run breaks where any source's next
 *                                                             member starts elsewhere, or the dtype changes
 *
 * The group's graph then has a tensor per run, not per member: ResNet-50's 161 gradients become the
 * few tensors of their buckets and are compiled and scheduled as one fused tensor is (Horovod's
 * fusion buffer, DDP's buckets, without the copy into them). Element-wise ops give the same values
 * either way. The results follow: a group's results of one dtype are one block per device in member
 * order (reserve_results()), which submit_group() checks run by run.
 * Not done where the caller asked for packs by tensor (bytes_per_pack, or num_packs 0: every tensor
 * on its own), nor over regrouped values, whose parts may move between calls.
 */

/* Whether the ops' and the call's options let runs stand for their members (see above). */
int starfold__ops_may_coalesce(starfold_cross_device_ops_t ops, const starfold_communication_options_t *options)
{
    return options->bytes_per_pack <= 0 && ops->options.bytes_per_pack == 0 && ops->options.num_packs != 0;
}

/* Pair @p's views on the graph's sources of item @it, in @views; 0 when it may not join a run. */
static int source_views(const starfold__pair_t *p, const item_t *mine, const item_t *it, starfold_view_t *views)
{
    const starfold_value_t v = p->value;
    starfold_view_t vv[STARFOLD_MAX_DEVICES];
    if (starfold__value_regrouped(v) || v->count == 0 || !starfold__value_views(v, vv)) return 0;
    for (int s = 0; s < it->nsrc; s++) {
        const int c = starfold__component_for(v->devices, v->n, it->src[s], mine->host_as);
        if (c < 0) return 0;
        views[s] = vv[c];
    }
    return 1;
}

/* Whether @b (views @vb) starts where @a (views @va) ends, on every one of @n sources. */
int starfold__views_follow(starfold_value_t a, const starfold_view_t *va, starfold_value_t b, const starfold_view_t *vb, int n)
{
    if (a->dtype != b->dtype) return 0;
    for (int s = 0; s < n; s++)
        if (vb[s].handle != va[s].handle || vb[s].offset != va[s].offset + a->count) return 0;
    return 1;
}

/* Group @g's runs (g->run_first, g->nruns), before its graph is compiled. */
starfold_status_t starfold__plan_runs(const starfold__pair_t *pairs, const item_t *items, group_t *g, int coalesce,
                                   const char *fn)
{
    free(g->run_first);
    g->run_first = NULL; /* every member its own run (starfold__group_runs()) unless some join below */
    if (!coalesce || g->nmembers < 2) return STARFOLD_OK;
    size_t *first = malloc(sizeof *first * (g->nmembers + 1)), nruns = 0;
    if (!first) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    const item_t *it = &items[g->first];
    starfold_view_t views[2][STARFOLD_MAX_DEVICES];
    int joinable[2] = { 0, 0 };
    for (size_t t = 0; t < g->nmembers; t++) {
        const size_t i = g->members[t], cur = t & 1, prev = cur ^ 1;
        joinable[cur] = source_views(&pairs[i], &items[i], it, views[cur]);
        if (t == 0 || !joinable[cur] || !joinable[prev] ||
            !starfold__views_follow(pairs[g->members[t - 1]].value, views[prev], pairs[i].value, views[cur], it->nsrc))
            first[nruns++] = t;
    }
    first[nruns] = g->nmembers;
    if (nruns == g->nmembers) {
        free(first);
        return STARFOLD_OK;
    }
    g->run_first = first;
    g->nruns = nruns;
    return STARFOLD_OK;
}

/* Number of runs of @g (its graph's tensors); run @r's first member, and one past its last. */
size_t starfold__group_runs(const group_t *g)
{
    return g->run_first ? g->nruns : g->nmembers;
}

size_t starfold__group_run_begin(const group_t *g, size_t r)
{
    return g->run_first ? g->run_first[r] : r;
}

size_t starfold__group_run_end(const group_t *g, size_t r)
{
    return g->run_first ? g->run_first[r + 1] : r + 1;
}

/* Gives back a graph borrowed from the ops' cache. */
void starfold__ops_cache_release(starfold_cross_device_ops_t ops, starfold_graph_t graph)
{
    pthread_mutex_lock(&ops->cache_lock);
    for (int k = 0; k < SF_OPS_CACHE; k++)
        if (ops->cache[k].graph == graph && ops->cache[k].borrowed > 0) {
            ops->cache[k].borrowed--;
            break;
        }
    pthread_mutex_unlock(&ops->cache_lock);
}

/* Compiles group @g over @pairs/@items (or borrows the same graph compiled before from the ops' cache). */
starfold_status_t starfold__ops_compile_group(starfold_cross_device_ops_t ops, starfold_topology_t topo, starfold_op_t op,
                                       const starfold__pair_t *pairs, const item_t *items, group_t *g,
                                       const starfold_communication_options_t *options, const char *fn)
{
    const item_t *it = &items[g->first];
    const size_t nruns = starfold__group_runs(g);
    starfold_tensor_desc_t *tensors = malloc(sizeof *tensors * nruns);
    if (!tensors) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t r = 0; r < nruns; r++) { /* a run of members: one tensor of their dtype, all their elements */
        tensors[r].dtype = pairs[g->members[starfold__group_run_begin(g, r)]].value->dtype;
        tensors[r].count = 0;
        for (size_t m = starfold__group_run_begin(g, r); m < starfold__group_run_end(g, r); m++) tensors[r].count += pairs[g->members[m]].value->count;
    }
    starfold_collective_desc_t desc = {
        .kind = STARFOLD_COLL_REDUCE,
        .op = op,
        .num_sources = it->nsrc,
        .sources = it->src,
        .num_destinations = it->ndst,
        .destinations = it->dst,
        .num_tensors = nruns,
        .tensors = tensors,
        .promote_integer_mean = options->promote_integer_mean,
    };
    starfold_algo_options_t ao = ops->options;
    if (options->bytes_per_pack > 0) ao.bytes_per_pack = (size_t)options->bytes_per_pack;
    const char *algorithm = ops->algorithm;
    if (it->path != SF_PATH_ALL_REDUCE) {
        algorithm = "reduce-to-one";
        ao.reduce_to_device = it->reduce_device;
    }
    /* The cache's key: everything the compile reads. */
    unsigned char *key = NULL;
    size_t keylen = 0;
    {
        const size_t alen = strlen(algorithm) + 1;
        /* Field by field: a struct's padding bytes are not copied by assignment, so never compared. */
        const size_t len = sizeof topo + alen + sizeof desc.kind + sizeof desc.op + sizeof desc.promote_integer_mean +
                           3 * sizeof(int) + 2 * sizeof(size_t) + 2 * sizeof(int) +
                           sizeof(int) * (size_t)(desc.num_sources + desc.num_destinations) +
                           (sizeof(starfold_dtype_t) + sizeof(size_t)) * desc.num_tensors;
        key = calloc(1, len);
        if (key) {
            unsigned char *w = key;
#define SF_PUT(ptr, n) (memcpy(w, (ptr), (n)), w += (n))
            SF_PUT(&topo, sizeof topo);
            SF_PUT(algorithm, alen);
            SF_PUT(&desc.kind, sizeof desc.kind);
            SF_PUT(&desc.op, sizeof desc.op);
            SF_PUT(&desc.promote_integer_mean, sizeof desc.promote_integer_mean);
            SF_PUT(&ao.num_packs, sizeof(int));
            SF_PUT(&ao.reduce_to_device, sizeof(int));
            SF_PUT(&ao.num_rings, sizeof(int));
            SF_PUT(&ao.bytes_per_pack, sizeof(size_t));
            SF_PUT(&ao.chunk_bytes, sizeof(size_t));
            SF_PUT(&desc.num_sources, sizeof(int));
            SF_PUT(desc.sources, sizeof(int) * (size_t)desc.num_sources);
            SF_PUT(&desc.num_destinations, sizeof(int));
            SF_PUT(desc.destinations, sizeof(int) * (size_t)desc.num_destinations);
            for (size_t t = 0; t < desc.num_tensors; t++) {
                SF_PUT(&tensors[t].dtype, sizeof(starfold_dtype_t));
                SF_PUT(&tensors[t].count, sizeof(size_t));
            }
#undef SF_PUT
            keylen = (size_t)(w - key);
        }
    }
    if (key) {
        pthread_mutex_lock(&ops->cache_lock);
        for (int k = 0; k < SF_OPS_CACHE; k++) {
            starfold__graph_cache_entry_t *e = &ops->cache[k];
            if (e->graph && e->keylen == keylen && memcmp(e->key, key, keylen) == 0) {
                e->used = ++ops->clock;
                e->borrowed++;
                ops->cache_hits++;
                g->graph = e->graph;
                g->cached = 1;
                g->serial = e->serial;
                break;
            }
        }
        pthread_mutex_unlock(&ops->cache_lock);
        if (g->cached) {
            free(key);
            free(tensors);
            return STARFOLD_OK;
        }
    }
    starfold_status_t st = starfold_graph_compile(topo, algorithm, &desc, &ao, &g->graph);
    free(tensors);
    if (st == STARFOLD_OK && key) { /* keep it: into a free entry, else in place of the least recently used idle one */
        pthread_mutex_lock(&ops->cache_lock);
        starfold__graph_cache_entry_t *slot = NULL;
        for (int k = 0; k < SF_OPS_CACHE; k++) {
            starfold__graph_cache_entry_t *e = &ops->cache[k];
            if (e->borrowed) continue;
            if (!e->graph) {
                slot = e;
                break;
            }
            if (!slot || e->used < slot->used) slot = e;
        }
        if (slot) {
            starfold_graph_destroy(slot->graph);
            free(slot->key);
            slot->key = key;
            slot->keylen = keylen;
            slot->graph = g->graph;
            slot->used = ++ops->clock;
            slot->borrowed = 1;
            slot->serial = g->serial = __atomic_add_fetch(&starfold__graph_serial, 1, __ATOMIC_RELAXED);
            g->cached = 1;
            key = NULL;
        }
        pthread_mutex_unlock(&ops->cache_lock);
    }
    free(key);
    if (st != STARFOLD_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", starfold_last_error());
        return starfold__error(st, "%s: %s", fn, why);
    }
    return STARFOLD_OK;
}

/* Records group @g's submission @req on its results (fresh values: their first writer) and in the trace. */

void starfold__group_fini(starfold_cross_device_ops_t ops, starfold__group_t *g)
{
    free(g->run_first);
    g->run_first = NULL;
    for (int k = 0; k < g->nlayouts; k++) {
        free(g->layouts[k].idx);
        free(g->layouts[k].cnt);
        free(g->layouts[k].devs);
    }
    g->nlayouts = 0;
    free(g->where);
    g->where = NULL;
    if (g->cached) starfold__ops_cache_release(ops, g->graph);
    else starfold_graph_destroy(g->graph);
    g->graph = NULL;
}
