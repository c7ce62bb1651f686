/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Cross-device ops: TensorFlow's CrossDeviceOps, ReductionToOneDevice and AllReduceCrossDeviceOps
 * (HierarchicalCopyAllReduce) over any registered algorithm (doc/tensorflow-semantics.md sections 1-4).
 *
 * Dispatch of one (value, destinations) pair, as TensorFlow's reduce / reduce_implementation:
 *
 *     one component, devices match ........................ SHORTCUT   copy on that device (identity)
 *     all-reduce algorithm, devices match, not the host ... ALL_REDUCE the algorithm, sources = value devices
 *     otherwise ........................................... REDUCE (ReductionToOneDevice's own path) or
 *                                                           FALLBACK (an all-reduce algorithm's fallback):
 *                                                           reduce-to-one on R, copies to the destinations
 *
 * "Devices match" is TensorFlow's _devices_match: the same set, order-insensitive. R is the ops'
 * reduce_to_device, else the first destination device, else (host destination) the value's first
 * device. The host is never a graph device: a host destination is written by the task on R, a host
 * source is read by the graph's source slot on R (or, for a copy, on the destination device).
 *
 * A batch is classified pair by pair, then the pairs are grouped: pairs whose graphs would have the
 * same sources and destinations become ONE graph whose tensors are all their tensors (the algorithm
 * packs them; members one after another in memory are one tensor of it, see "Runs" below). When
 * TensorFlow's _all_devices_match holds, the whole batch is one graph:
 *
 *     pairs:   (a, a)  (b, b)  (c, c)        a, b, c over devices {0, 1, 2, 3}
 *     graph:   sources 0 1 2 3, destinations 0 1 2 3, tensors [a, b, c]   -> one starfold_submit()
 *     results: [a', b', c'] in input order, each a new mirrored value
 *
 * Every graph of a batch is compiled and every result allocated before the first submission, so a
 * failure leaves nothing behind; inputs are never written (results are always new vectors).
 *
 * A variable's update (starfold__ops_update()) is the one graph here that writes a value it was not
 * given as a result: the same dispatch with the variable as destination, then every copy updated
 * (assign, assign_add, assign_sub) by the graph's last tasks, the copies bound in place.
 */
#include "config.h"

#include <stdio.h>

#include "algorithms/algorithms.h"
#include "base/common.h"
#include "distribute/batch_plan.h"
#include "distribute/distribute.h"

/* ------------------------------------------------------------------------------------------------
 * Test trace
 */

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static starfold__trace_entry_t trace_ring[SF_TRACE_MAX];
static size_t trace_total;

void starfold__trace_reset(void)
{
    pthread_mutex_lock(&trace_lock);
    trace_total = 0;
    pthread_mutex_unlock(&trace_lock);
}

size_t starfold__trace_count(void)
{
    pthread_mutex_lock(&trace_lock);
    const size_t n = trace_total;
    pthread_mutex_unlock(&trace_lock);
    return n;
}

int starfold__trace_get(size_t i, starfold__trace_entry_t *out)
{
    pthread_mutex_lock(&trace_lock);
    const size_t kept = trace_total < SF_TRACE_MAX ? trace_total : SF_TRACE_MAX;
    int ok = i < kept;
    if (ok) *out = trace_ring[(trace_total - kept + i) % SF_TRACE_MAX];
    pthread_mutex_unlock(&trace_lock);
    return ok ? 0 : -1;
}

void starfold__trace_add(const starfold__trace_entry_t *e)
{
    pthread_mutex_lock(&trace_lock);
    trace_ring[trace_total % SF_TRACE_MAX] = *e;
    trace_total++;
    pthread_mutex_unlock(&trace_lock);
}

const char *starfold__path_name(starfold__path_t p)
{
    static const char *const names[SF_PATH_COUNT] = { "shortcut", "all-reduce", "reduce-to-one", "fallback",
                                                      "broadcast", "gather", "update" };
    return (int)p >= 0 && p < SF_PATH_COUNT ? names[p] : "unknown";
}

/* ------------------------------------------------------------------------------------------------
 * Objects
 */

STARFOLD_API starfold_status_t starfold_cross_device_ops_create(const char *algorithm,
                                                                const starfold_algo_options_t *options,
                                                                starfold_topology_t topology,
                                                                starfold_cross_device_ops_t *ops)
{
    if (!algorithm || !ops)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_cross_device_ops_create: NULL %s",
                        !algorithm ? "algorithm" : "ops");
    const starfold__algorithm_t *algo = NULL;
    starfold_status_t st = starfold__algorithm_lookup(algorithm, &algo);
    if (st != STARFOLD_OK) return st;
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    if (options) o = *options;
    if (o.num_packs < 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s requires num_packs >= 0, but %d is specified", algo->name,
                        o.num_packs);
    if (o.reduce_to_device < -1)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "reduce_to_device %d is neither a device nor -1 (the first "
                        "destination)", o.reduce_to_device);
    if (topology && o.reduce_to_device >= starfold_topology_num_devices(topology))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "reduce_to_device %d is not in topology '%s' (devices 0..%d)",
                        o.reduce_to_device, starfold_topology_name(topology), starfold_topology_num_devices(topology) - 1);
    struct starfold_cross_device_ops *x = calloc(1, sizeof *x);
    if (!x) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_cross_device_ops_create: out of memory");
    if (pthread_mutex_init(&x->cache_lock, NULL) != 0) {
        free(x);
        return starfold__error(STARFOLD_ERR_RUNTIME, "starfold_cross_device_ops_create: cannot create a mutex");
    }
    x->refs = 1;
    x->algorithm = algo->name;
    x->all_reduce = (algo->supports & STARFOLD__SUPPORTS_ALL_REDUCE) != 0;
    x->options = o;
    x->topology = starfold_topology_retain(topology);
    *ops = x;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_reduction_to_one_device_create(int reduce_to_device,
                                                                       starfold_cross_device_ops_t *ops)
{
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    o.reduce_to_device = reduce_to_device;
    return starfold_cross_device_ops_create("reduce-to-one", &o, NULL, ops);
}

STARFOLD_API starfold_status_t starfold_hierarchical_copy_all_reduce_create(int num_packs,
                                                                            starfold_cross_device_ops_t *ops)
{
    /* TensorFlow's HierarchicalCopyAllReduce constructor, in its words. */
    if (num_packs < 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "HierarchicalCopy requires num_packs >= 0, but %d is specified",
                        num_packs);
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    o.num_packs = num_packs;
    return starfold_cross_device_ops_create("hierarchical-copy", &o, NULL, ops);
}

/*
 * TensorFlow 1.12-1.14's choose_the_best: the DGX-1's NVLink neighbours of each GPU, as its
 * _dgx1_links lists them. Device d's row of a link matrix must name exactly these devices (a link to
 * itself is ignored, as TensorFlow allowed it) for the matrix to be "DGX-1-like".
 *
 *        0 ---- 1          quads {0,1,2,3} and {4,5,6,7} fully connected,
 *        | \  / |          plus i -- i+4 across
 *        |  \/  |
 *        |  /\  |   x 2
 *        3 ---- 2
 */
static const unsigned char dgx1_links[8] = {
    /* bit j of row i: i and j share NVLink */
    0x1e, 0x2d, 0x4b, 0x87, 0xe1, 0xd2, 0xb4, 0x78,
};

static int dgx1_like(int n, const int *links)
{
    if (n != 8) return 0; /* TensorFlow compared the whole list of 8 rows */
    for (int i = 0; i < 8; i++) {
        unsigned row = 0;
        for (int j = 0; j < 8; j++)
            if (i != j && links[i * 8 + j]) row |= 1u << j;
        if (row != dgx1_links[i]) return 0;
    }
    return 1;
}

STARFOLD_API starfold_status_t starfold_cross_device_ops_choose_the_best(int num_devices, const int *link_matrix,
                                                                         int all_gpus, starfold_cross_device_ops_t *ops)
{
    static const char fn[] = "starfold_cross_device_ops_choose_the_best";
    if (!ops) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL ops", fn);
    if (num_devices < 1 || num_devices > STARFOLD_MAX_DEVICES)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: num_devices must be 1..%d, got %d", fn,
                               STARFOLD_MAX_DEVICES, num_devices);
    if (!link_matrix && all_gpus) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL link matrix", fn);
    /* Any device that is not a GPU: ReductionToOneDevice, as TensorFlow fell back to. */
    if (!all_gpus) return starfold_reduction_to_one_device_create(-1, ops);
    /* A DGX-1: hierarchical copy with one pack per device, so every pack has a root of its own. */
    if (dgx1_like(num_devices, link_matrix)) return starfold_hierarchical_copy_all_reduce_create(num_devices, ops);
    /* Anything else: TensorFlow's NCCL all-reduce with one pack; starfold's rings stand for NCCL's. */
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    return starfold_cross_device_ops_create("ring", &o, NULL, ops);
}

STARFOLD_API starfold_cross_device_ops_t starfold_cross_device_ops_retain(starfold_cross_device_ops_t ops)
{
    if (ops) __atomic_add_fetch(&ops->refs, 1, __ATOMIC_RELAXED);
    return ops;
}

STARFOLD_API void starfold_cross_device_ops_destroy(starfold_cross_device_ops_t ops)
{
    if (!ops || __atomic_sub_fetch(&ops->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    starfold__plans_destroy(ops); /* their graphs go back to the cache first */
    for (int k = 0; k < SF_OPS_CACHE; k++) {
        starfold_graph_destroy(ops->cache[k].graph);
        free(ops->cache[k].key);
    }
    pthread_mutex_destroy(&ops->cache_lock);
    starfold_topology_destroy(ops->topology);
    free(ops);
}

STARFOLD_API const char *starfold_cross_device_ops_algorithm(starfold_cross_device_ops_t ops)
{
    return ops ? ops->algorithm : "";
}

STARFOLD_API starfold_status_t starfold_cross_device_ops_options(starfold_cross_device_ops_t ops,
                                                                 starfold_algo_options_t *options)
{
    if (!ops || !options)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_cross_device_ops_options: NULL %s",
                        !ops ? "ops" : "options");
    *options = ops->options;
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Planning
 */

typedef starfold__item_t item_t;
typedef starfold__group_t group_t;

/* Serial numbers of cached graphs, process-wide so that no two graphs ever share one. */
static unsigned long long starfold__graph_serial;

static int map_host(int device, int host_as)
{
    return device == STARFOLD_DEVICE_HOST ? host_as : device;
}

static void classify(starfold_cross_device_ops_t ops, const starfold__pair_t *p, item_t *it)
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
    for (int s = 0; s < v->n; s++) it->src[s] = map_host(v->devices[s], r);
    it->ndst = d->n;
    for (int k = 0; k < d->n; k++) it->dst[k] = map_host(d->devices[k], r);
}

static int same_seq(int n, const int *a, int m, const int *b)
{
    return n == m && !memcmp(a, b, sizeof(int) * (size_t)n);
}

/* Whether items @a and @b can share a graph (see the header comment). */
static int same_graph(const item_t *a, const item_t *b)
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
static starfold_status_t check_item_devices(const char *fn, const item_t *it, int ntopo, int nctx, size_t pair)
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
static int component_for(const int *devices, int n, int gdev, int host_as)
{
    for (int c = 0; c < n; c++)
        if (map_host(devices[c], host_as) == gdev) return c;
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
static int may_coalesce(starfold_cross_device_ops_t ops, const starfold_communication_options_t *options)
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
        const int c = component_for(v->devices, v->n, it->src[s], mine->host_as);
        if (c < 0) return 0;
        views[s] = vv[c];
    }
    return 1;
}

/* Whether @b (views @vb) starts where @a (views @va) ends, on every one of @n sources. */
static int follows(starfold_value_t a, const starfold_view_t *va, starfold_value_t b, const starfold_view_t *vb, int n)
{
    if (a->dtype != b->dtype) return 0;
    for (int s = 0; s < n; s++)
        if (vb[s].handle != va[s].handle || vb[s].offset != va[s].offset + a->count) return 0;
    return 1;
}

/* Group @g's runs (g->run_first, g->nruns), before its graph is compiled. */
static starfold_status_t plan_runs(const starfold__pair_t *pairs, const item_t *items, group_t *g, int coalesce,
                                   const char *fn)
{
    free(g->run_first);
    g->run_first = NULL; /* every member its own run (runs_of()) unless some join below */
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
            !follows(pairs[g->members[t - 1]].value, views[prev], pairs[i].value, views[cur], it->nsrc))
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
static size_t runs_of(const group_t *g)
{
    return g->run_first ? g->nruns : g->nmembers;
}

static size_t run_begin(const group_t *g, size_t r)
{
    return g->run_first ? g->run_first[r] : r;
}

static size_t run_end(const group_t *g, size_t r)
{
    return g->run_first ? g->run_first[r + 1] : r + 1;
}

/* Gives back a graph borrowed from the ops' cache. */
static void cache_release(starfold_cross_device_ops_t ops, starfold_graph_t graph)
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
static starfold_status_t compile_group(starfold_cross_device_ops_t ops, starfold_topology_t topo, starfold_op_t op,
                                       const starfold__pair_t *pairs, const item_t *items, group_t *g,
                                       const starfold_communication_options_t *options, const char *fn)
{
    const item_t *it = &items[g->first];
    const size_t nruns = runs_of(g);
    starfold_tensor_desc_t *tensors = malloc(sizeof *tensors * nruns);
    if (!tensors) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t r = 0; r < nruns; r++) { /* a run of members: one tensor of their dtype, all their elements */
        tensors[r].dtype = pairs[g->members[run_begin(g, r)]].value->dtype;
        tensors[r].count = 0;
        for (size_t m = run_begin(g, r); m < run_end(g, r); m++) tensors[r].count += pairs[g->members[m]].value->count;
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
static starfold_status_t record_group(const item_t *items, group_t *g, starfold_request_t req, starfold_value_t *results,
                                      size_t npairs, int split_n, int persistent, int reused, const char *fn)
{
    const item_t *it = &items[g->first];
    if (!(g->req = starfold__dist_req_new(req, 1))) {
        starfold_request_destroy(req);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    for (size_t t = 0; t < g->nmembers; t++) {
        const size_t i = g->members[t];
        if (!split_n) starfold__value_set_first_writer(results[i], g->req);
        for (int c = 0; c < split_n; c++) starfold__value_set_first_writer(results[(size_t)c * npairs + i], g->req);
    }
    starfold__trace_entry_t e = { .path = it->path, .num_tensors = g->nmembers, .num_graph_tensors = runs_of(g),
                                  .num_sources = it->nsrc,
                                  .num_destinations = it->ndst, .reduce_device = it->reduce_device,
                                  .persistent = persistent, .reused = reused };
    snprintf(e.algorithm, sizeof e.algorithm, "%s", starfold_graph_algorithm(g->graph));
    starfold__trace_add(&e);
    return STARFOLD_OK;
}

/*
 * Submits group @g: inputs and outputs mapped by device, as views (a component in the arena is its
 * range of a bucket, a wrapped handle is itself whole), a view per run: its first member's, the
 * others checked to follow it. When every view lies in the arena and the graph is a cached one, the
 * submission is the arena's persistent one for exactly these views, made the first time and started
 * every step after (g->ticket names it). Records the submission on the results.
 */
static starfold_status_t submit_group(starfold_context_t ctx, const starfold__pair_t *pairs, const item_t *items, group_t *g,
                                      starfold_value_t *results, size_t npairs, int split_n, const char *fn)
{
    const item_t *it = &items[g->first];
    const size_t nr = runs_of(g);
    starfold_status_t st = STARFOLD_OK;
    starfold_view_t *in = malloc(sizeof *in * nr * (size_t)it->nsrc);
    starfold_view_t *out = malloc(sizeof *out * nr * (size_t)it->ndst);
    int in_arena = g->serial != 0;
    g->ticket = 0;
    if (!in || !out) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto out;
    }
    for (size_t r = 0; r < nr; r++) {
        size_t at = 0; /* elements of the run before member t */
        for (size_t t = run_begin(g, r); t < run_end(g, r); at += pairs[g->members[t]].value->count, t++) {
            const size_t i = g->members[t];
            const starfold_value_t v = pairs[i].value;
            const starfold__dest_t *d = &pairs[i].dest;
            starfold_view_t vv[STARFOLD_MAX_DEVICES], rv[STARFOLD_MAX_DEVICES];
            in_arena &= starfold__value_views(v, vv);
            if (split_n) /* one one-component result per destination device */
                for (int c = 0; c < split_n; c++) in_arena &= starfold__value_views(results[(size_t)c * npairs + i], &rv[c]);
            else
                in_arena &= starfold__value_views(results[i], rv);
            for (int s = 0; s < it->nsrc + it->ndst; s++) {
                const int src = s < it->nsrc, k = src ? s : s - it->nsrc;
                const int c = src ? component_for(v->devices, v->n, it->src[k], items[i].host_as)
                                  : component_for(d->devices, d->n, it->dst[k], items[i].host_as);
                if (c < 0) {
                    st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: pair %zu has no %s for graph %s %d", fn, i,
                                  src ? "component" : "result", src ? "source" : "destination", k);
                    goto out;
                }
                const starfold_view_t view = src ? vv[c] : rv[c];
                starfold_view_t *slot = src ? &in[(size_t)k * nr + r] : &out[(size_t)k * nr + r];
                if (at == 0) {
                    *slot = view;
                } else if (view.handle != slot->handle || view.offset != slot->offset + at) {
                    /* Planned as one run: a component moved since (starfold_value_handle() from another thread). */
                    st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: pair %zu no longer follows pair %zu in memory (a "
                                         "component moved while the batch was planned)", fn, i, g->members[t - 1]);
                    goto out;
                }
            }
        }
    }
    starfold_request_t req;
    int reused = 0;
    st = in_arena ? starfold__arena_start(ctx, g->graph, g->serial, nr * (size_t)it->nsrc, in, nr * (size_t)it->ndst, out,
                                          &req, &reused, &g->ticket)
                  : starfold_submit_views(ctx, g->graph, in, out, &req);
    if (st != STARFOLD_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", starfold_last_error());
        st = starfold__error(st, "%s: %s", fn, why);
        goto out;
    }
    st = record_group(items, g, req, results, npairs, split_n, in_arena, reused, fn);
out:
    free(in);
    free(out);
    return st;
}

/*
 * Group @g of a plan, before its results' values exist: when this call's result blocks are those of
 * a binding an earlier call started, and the arena still has it, that binding is started again (the
 * inputs are the same views: the plan's key says so), *@req its submission (recorded on the results
 * once they are made, record_group()); else *@req NULL.
 */
static starfold_status_t restart_planned_group(starfold_context_t ctx, group_t *g, const char *fn, starfold_request_t *req)
{
    *req = NULL;
    for (int b = 0; b < SF_PLAN_BINDINGS; b++) {
        const starfold__binding_t *bd = &g->where->bind[b];
        if (!bd->ticket || memcmp(bd->blocks, g->where->blocks, sizeof bd->blocks) != 0) continue;
        int found = 0;
        starfold_status_t st = starfold__arena_restart(ctx, bd->ticket, req, &found);
        if (st != STARFOLD_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", starfold_last_error());
            return starfold__error(st, "%s: %s", fn, why);
        }
        if (found) {
            g->ticket = bd->ticket;
            return STARFOLD_OK;
        }
        *req = NULL;
    }
    return STARFOLD_OK;
}

/* Group @g of a plan that restarted no binding: as submit_group(), the new binding remembered. */
static starfold_status_t submit_planned_group(starfold_context_t ctx, const starfold__pair_t *pairs, const item_t *items,
                                              group_t *g, starfold_value_t *results, size_t npairs, int split_n,
                                              const char *fn)
{
    starfold_status_t st = submit_group(ctx, pairs, items, g, results, npairs, split_n, fn);
    if (st == STARFOLD_OK && g->ticket) {
        starfold__group_blocks_t *w = g->where;
        starfold__binding_t *bd = &w->bind[w->next_bind];
        w->next_bind = (w->next_bind + 1) % SF_PLAN_BINDINGS;
        bd->ticket = g->ticket;
        memcpy(bd->blocks, w->blocks, sizeof bd->blocks);
    }
    return st;
}

/*
 * The layout of group @g's results (see reserve_results()): for each output dtype of its graph, the
 * members of that dtype, their counts and their destinations' device orders.
 */
static starfold_status_t layout_results(const starfold__pair_t *pairs, group_t *g)
{
    const starfold__dest_t *first = &pairs[g->members[0]].dest;
    size_t counts[STARFOLD_DTYPE_COUNT] = { 0 };
    for (size_t r = 0; r < runs_of(g); r++) counts[starfold_graph_output_dtype(g->graph, r)] += run_end(g, r) - run_begin(g, r);
    g->nlayouts = 0;
    if (!(g->where = calloc(1, sizeof *g->where))) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < STARFOLD_DTYPE_COUNT; k++) {
        if (!counts[k]) continue;
        starfold__result_layout_t *l = &g->layouts[g->nlayouts++];
        l->dtype = (starfold_dtype_t)k;
        l->same_order = 1;
        l->idx = malloc(sizeof *l->idx * counts[k]);
        l->cnt = malloc(sizeof *l->cnt * counts[k]);
        l->devs = malloc(sizeof *l->devs * counts[k]);
        if (!l->idx || !l->cnt || !l->devs) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t r = 0; r < runs_of(g); r++) {
            if (starfold_graph_output_dtype(g->graph, r) != l->dtype) continue;
            for (size_t t = run_begin(g, r); t < run_end(g, r); t++) {
                const size_t i = g->members[t];
                l->idx[l->nk] = i;
                l->devs[l->nk] = pairs[i].dest.devices; /* the same set, in the pair's order */
                l->same_order &= !memcmp(pairs[i].dest.devices, first->devices, sizeof(int) * (size_t)first->n);
                l->cnt[l->nk++] = pairs[i].value->count;
            }
        }
    }
    return STARFOLD_OK;
}

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
    if (g->cached) cache_release(ops, g->graph);
    else starfold_graph_destroy(g->graph);
    g->graph = NULL;
}

/*
 * The results of group @g in the arena, as its layouts say: one block per destination device and
 * output dtype, the results one after another in it, so the group's outputs are views of as few
 * vectors as possible (and the same ones every step of a loop that frees its results before the
 * next). Every pair of a group has the same destination devices (maybe in another order).
 * Made in two steps (starfold__values_block_reserve() / _fill()): the blocks first, where they are
 * going to g->where->blocks and their reservations to @resv (group_blocks(@g) of them), then the
 * values, which a restarted binding need not wait for.
 *   split_n == 0: res[i] = pair i's result, mirrored over its destination's devices;
 *   split_n  > 0: res[c * npairs + i] = a one-component result on pair i's destination device c.
 */
static size_t group_blocks(const group_t *g, int split_n)
{
    return (size_t)g->nlayouts * (size_t)(split_n ? split_n : 1);
}

static starfold_status_t reserve_results(starfold_context_t ctx, const starfold__pair_t *pairs, group_t *g, int split_n,
                                         starfold__values_block_t **resv)
{
    const starfold__dest_t *d = &pairs[g->members[0]].dest;
    memset(g->where->blocks, 0, sizeof g->where->blocks);
    starfold_status_t st = STARFOLD_OK;
    for (int k = 0; k < g->nlayouts && st == STARFOLD_OK; k++) {
        const starfold__result_layout_t *l = &g->layouts[k];
        if (!split_n)
            st = starfold__values_block_reserve(ctx, d->n, d->devices, l->dtype, l->nk, l->cnt, g->where->blocks[k], &resv[k]);
        for (int b = 0; st == STARFOLD_OK && split_n && b < d->n; b++) /* split: a block per device */
            st = starfold__values_block_reserve(ctx, 1, &d->devices[b], l->dtype, l->nk, l->cnt, &g->where->blocks[k][b],
                                                &resv[(size_t)k * (size_t)split_n + (size_t)b]);
    }
    return st;
}

static starfold_status_t fill_results(starfold_context_t ctx, const starfold__pair_t *pairs, group_t *g,
                                      starfold_value_t *res, size_t npairs, int split_n, starfold__values_block_t **resv)
{
    const starfold__dest_t *d = &pairs[g->members[0]].dest;
    starfold_value_t few[64], *out = few;
    size_t maxk = 0;
    for (int k = 0; k < g->nlayouts; k++) maxk = g->layouts[k].nk > maxk ? g->layouts[k].nk : maxk;
    if (maxk > 64 && !(out = malloc(sizeof *out * maxk))) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
    starfold_status_t st = STARFOLD_OK;
    for (int k = 0; k < g->nlayouts && st == STARFOLD_OK; k++) {
        const starfold__result_layout_t *l = &g->layouts[k];
        if (!split_n) {
            starfold__values_block_t *blk = resv[k];
            resv[k] = NULL; /* taken by the fill, failing or not */
            st = starfold__values_block_fill(blk, ctx, STARFOLD_VALUE_MIRRORED, d->n, d->devices, l->dtype, l->nk, l->cnt,
                                             l->devs, out);
            for (size_t j = 0; st == STARFOLD_OK && j < l->nk; j++) res[l->idx[j]] = out[j];
        }
        /* Split: pair i's result on device D goes where D is in its destination. */
        for (int b = 0; st == STARFOLD_OK && split_n && b < d->n; b++) {
            const size_t r = (size_t)k * (size_t)split_n + (size_t)b;
            starfold__values_block_t *blk = resv[r];
            resv[r] = NULL;
            st = starfold__values_block_fill(blk, ctx, STARFOLD_VALUE_MIRRORED, 1, &d->devices[b], l->dtype, l->nk, l->cnt,
                                             NULL, out);
            for (size_t j = 0; st == STARFOLD_OK && j < l->nk; j++) {
                int c = l->same_order ? b : 0;
                while (c < split_n - 1 && l->devs[j][c] != d->devices[b]) c++;
                res[(size_t)c * npairs + l->idx[j]] = out[j];
            }
        }
    }
    if (out != few) free(out);
    return st;
}

/*
 * Every group's results, and its submission:
 *   1. every group's result blocks reserved      (a failure here: nothing submitted, nothing made)
 *   2. a plan's group whose blocks are those of a binding an earlier call started restarts it now,
 *      and its work runs while 3 makes the values (a replica context's all_reduce of 1,000 gradients
 *      on 8 replicas makes 8,000 one-component results: a third of a millisecond, no longer spent
 *      before the reduction starts)
 *   3. the results' values, in their blocks
 *   4. every other group submitted over them; every submission recorded on its results
 * On failure after 2 the restarted work is waited for before its blocks are given back (@res, the
 * values made, are the caller's to destroy, after this returns).
 */
static starfold_status_t make_and_submit(starfold_context_t ctx, const starfold__pair_t *pairs, const item_t *items,
                                         group_t *groups, size_t ngroups, int planned, starfold_value_t *res,
                                         size_t npairs, int split_n, const char *fn)
{
    size_t nresv = 0, at = 0;
    for (size_t gi = 0; gi < ngroups; gi++) nresv += group_blocks(&groups[gi], split_n);
    starfold__values_block_t **resv = calloc(nresv ? nresv : 1, sizeof *resv);
    starfold_request_t *early = calloc(ngroups ? ngroups : 1, sizeof *early);
    starfold_status_t st = STARFOLD_OK;
    if (!resv || !early) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto out;
    }
    for (size_t gi = 0; gi < ngroups; at += group_blocks(&groups[gi], split_n), gi++)
        SF_CHECK_GOTO(reserve_results(ctx, pairs, &groups[gi], split_n, &resv[at]), st, out);
    for (size_t gi = 0; planned && gi < ngroups; gi++)
        SF_CHECK_GOTO(restart_planned_group(ctx, &groups[gi], fn, &early[gi]), st, out);
    at = 0;
    for (size_t gi = 0; gi < ngroups; at += group_blocks(&groups[gi], split_n), gi++)
        SF_CHECK_GOTO(fill_results(ctx, pairs, &groups[gi], res, npairs, split_n, &resv[at]), st, out);
    for (size_t gi = 0; gi < ngroups; gi++) {
        const starfold_request_t req = early[gi];
        early[gi] = NULL; /* record_group() takes it */
        st = req ? record_group(items, &groups[gi], req, res, npairs, split_n, 1, 1, fn)
                 : planned ? submit_planned_group(ctx, pairs, items, &groups[gi], res, npairs, split_n, fn)
                           : submit_group(ctx, pairs, items, &groups[gi], res, npairs, split_n, fn);
        if (st != STARFOLD_OK) goto out;
    }
out:
    /* Restarted work not recorded on its results writes their blocks: finished before they go back. */
    for (size_t gi = 0; early && gi < ngroups; gi++) starfold_request_destroy(early[gi]);
    for (size_t r = 0; resv && r < nresv; r++) starfold__values_block_cancel(resv[r]);
    free(resv);
    free(early);
    return st;
}

/* Classifies, checks and groups the pairs (first appearance order), and compiles each group's graph. */
static starfold_status_t plan_groups(starfold_cross_device_ops_t ops, starfold_topology_t topo, starfold_op_t op, size_t n,
                                     const starfold__pair_t *pairs, const starfold_communication_options_t *options,
                                     const char *fn, item_t *items, group_t *groups, size_t *member_store,
                                     size_t *ngroups)
{
    const int ntopo = starfold_topology_num_devices(topo), nctx = starfold_context_num_devices(pairs[0].value->ctx);
    starfold_status_t st;
    for (size_t i = 0; i < n; i++) {
        classify(ops, &pairs[i], &items[i]);
        if ((st = check_item_devices(fn, &items[i], ntopo, nctx, i)) != STARFOLD_OK) return st;
        size_t gi = 0;
        while (gi < *ngroups && !same_graph(&items[groups[gi].first], &items[i])) gi++;
        if (gi == *ngroups) groups[(*ngroups)++].first = i;
        items[i].group = (int)gi;
    }
    /* Members of each group, in input order, in one shared array. */
    for (size_t gi = 0, pos = 0; gi < *ngroups; gi++) {
        groups[gi].members = &member_store[pos];
        for (size_t i = 0; i < n; i++)
            if (items[i].group == (int)gi) groups[gi].members[groups[gi].nmembers++] = i;
        pos += groups[gi].nmembers;
    }
    for (size_t gi = 0; gi < *ngroups; gi++) {
        if ((st = plan_runs(pairs, items, &groups[gi], may_coalesce(ops, options), fn)) != STARFOLD_OK) return st;
        if ((st = compile_group(ops, topo, op, pairs, items, &groups[gi], options, fn)) != STARFOLD_OK) return st;
        if ((st = layout_results(pairs, &groups[gi])) != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

/* Every pair of one context; for split results (@split_n > 0) every destination of @split_n devices, no host. */
static starfold_status_t check_pairs(const char *fn, size_t n, const starfold__pair_t *pairs, starfold_context_t ctx,
                                     int split_n)
{
    for (size_t i = 0; i < n; i++) {
        if (pairs[i].value->ctx != ctx || (pairs[i].dest.ctx && pairs[i].dest.ctx != ctx))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: pair %zu: values and destinations of another context "
                                   "than pair 0's", fn, i);
        if (split_n && (pairs[i].dest.n != split_n || pairs[i].dest.host))
            return starfold__error(STARFOLD_ERR_INTERNAL, "%s: split results need one destination device list", fn);
    }
    return STARFOLD_OK;
}

/*
 * The batch reduce: results mirrored (@split 0), or split per destination device (see reserve_results()).
 * @plan_id (NULL, or in and out): in, the id of the plan a call over this very array of pairs used,
 * the caller vouching for them (starfold__plan_find_id()); out, the plan this call used or
 * kept, 0 for none.
 *
 *   plan kept for exactly this call? --yes--> its groups, graphs and layouts
 *                                    --no---> classify, group, compile, lay out (plan_groups())
 *   every group's results and submission (make_and_submit(): a plan's group restarts its binding when
 *   the results landed where an earlier call's did); a new plan is kept when every group went
 *   through the arena.
 */
static starfold_status_t batch_reduce(starfold_cross_device_ops_t ops, starfold_topology_t topology, starfold_op_t op,
                                      size_t n, const starfold__pair_t *pairs,
                                      const starfold_communication_options_t *options, const char *fn,
                                      starfold_value_t *results, int split, unsigned long long *plan_id)
{
    const unsigned long long known = plan_id ? *plan_id : 0;
    if (plan_id) *plan_id = 0;
    if (n == 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: batch_reduce needs at least one (value, destinations) pair",
                        fn);
    if ((int)op < 0 || (int)op >= STARFOLD_OP_COUNT)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown reduce op %d", fn, (int)op);
    const starfold_context_t ctx = pairs[0].value->ctx;
    const int split_n = split ? pairs[0].dest.n : 0;
    starfold_status_t st = STARFOLD_OK;
    starfold_topology_t topo = NULL;
    int made_topo = 0, keyable = 0;
    item_t *items = NULL;
    group_t *groups = NULL;
    size_t *member_store = NULL, ngroups = 0;
    const size_t nres = split ? n * (size_t)split_n : n;
    starfold_value_t *res = calloc(nres ? nres : 1, sizeof *res);
    starfold__batch_plan_t *plan = NULL;
    if (!res) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto out;
    }
    SF_CHECK_GOTO(starfold__pick_topology(ops, topology, ctx, &topo, &made_topo), st, out);
    /* Pairs their caller vouches for (the very ones a call that used plan @known had) passed the
     * checks then: 3 x n reads saved on a replica context's leader, while the others wait. */
    if (!(plan = starfold__plan_find_id(ops, ctx, topo, op, split, options, n, known))) {
        SF_CHECK_GOTO(check_pairs(fn, n, pairs, ctx, split_n), st, out);
        if ((keyable = starfold__plan_keyable(n, pairs))) plan = starfold__plan_find(ops, ctx, topo, op, split, options, n, pairs);
    }
    if (plan) {
        items = plan->items;
        groups = plan->groups;
        ngroups = plan->ngroups;
    } else {
        items = calloc(n, sizeof *items);
        groups = calloc(n, sizeof *groups);
        member_store = calloc(n, sizeof *member_store);
        if (!items || !groups || !member_store) {
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
            goto out;
        }
        SF_CHECK_GOTO(plan_groups(ops, topo, op, n, pairs, options, fn, items, groups, member_store, &ngroups), st, out);
    }
    SF_CHECK_GOTO(make_and_submit(ctx, pairs, items, groups, ngroups, plan != NULL, res, n, split_n, fn), st, out);

    memcpy(results, res, sizeof *res * nres);
    memset(res, 0, sizeof *res * nres); /* ownership moved to the caller */
out:
    /* On failure the results already submitted are destroyed: their records wait for the graphs. */
    for (size_t i = 0; res && i < nres; i++) starfold_value_destroy(res[i]);
    for (size_t gi = 0; groups && gi < ngroups; gi++) {
        starfold__dist_req_release(groups[gi].req);
        groups[gi].req = NULL;
    }
    if (plan) {
        if (plan_id && st == STARFOLD_OK) *plan_id = plan->id;
        starfold__plan_return(ops, plan);
    } else if (st == STARFOLD_OK && keyable) {
        /* Kept when every group is a cached graph started through the arena: the next call restarts it. */
        int all_bound = 1;
        for (size_t gi = 0; gi < ngroups; gi++) {
            group_t *g = &groups[gi];
            all_bound &= g->cached && g->ticket != 0;
            g->where->bind[0].ticket = g->ticket;
            memcpy(g->where->bind[0].blocks, g->where->blocks, sizeof g->where->blocks);
            g->where->next_bind = 1 % SF_PLAN_BINDINGS;
        }
        if (all_bound)
            starfold__plan_keep(ops, ctx, topo, op, split, options, n, pairs, &items, &groups, ngroups, &member_store,
                                plan_id);
    }
    if (!plan) {
        for (size_t gi = 0; groups && gi < ngroups; gi++) starfold__group_fini(ops, &groups[gi]);
        free(items);
        free(groups);
        free(member_store);
    }
    if (made_topo) starfold_topology_destroy(topo);
    free(res);
    return st;
}

starfold_status_t starfold__ops_batch_reduce(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                      starfold_op_t op, size_t n, const starfold__pair_t *pairs,
                                      const starfold_communication_options_t *options, const char *fn,
                                      starfold_value_t *results)
{
    return batch_reduce(ops, topology, op, n, pairs, options, fn, results, 0, NULL);
}

starfold_status_t starfold__ops_batch_reduce_split(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                                   starfold_op_t op, size_t n, const starfold__pair_t *pairs,
                                                   const starfold_communication_options_t *options, const char *fn,
                                                   starfold_value_t *results, unsigned long long *plan_id)
{
    return batch_reduce(ops, topology, op, n, pairs, options, fn, results, 1, plan_id);
}

/* ------------------------------------------------------------------------------------------------
 * A variable's update
 *
 *   replica values  --reduce (the ops' dispatch) or copy of one component-->  tmp on each copy's device
 *   copy d  =  tmp / divisor   |   copy d + tmp   |   copy d - tmp            (starfold__graph_then_update)
 *
 * The first part is the graph reduce_to would compile with the variable as destination (from the ops'
 * cache), or a broadcast; a plain assign submits that graph straight into the copies. With every copy
 * having a component of the value on its own device there is no first part (a sync-on-read
 * variable's local update, a mirrored value over the variable's devices).
 */

starfold_status_t starfold__ops_update(starfold_cross_device_ops_t ops, starfold_topology_t topology, starfold_value_t var,
                                       int copy, starfold__update_t update, starfold_value_t value, int reduce,
                                       starfold_op_t op, int comp, uint32_t divisor,
                                       const starfold_communication_options_t *options, const char *fn)
{
    const starfold_context_t ctx = var->ctx;
    if (value->ctx != ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context than the variable",
                               fn);
    if (value->dtype != var->dtype || value->count != var->count)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: cannot assign %zu x %s to a variable of %zu x %s", fn,
                               value->count, starfold_dtype_name(value->dtype), var->count, starfold_dtype_name(var->dtype));
    if (var->count == 0) return STARFOLD_OK; /* nothing to write */
    starfold_status_t st;
    starfold_topology_t topo = NULL;
    int made_topo = 0;
    if ((st = starfold__pick_topology(ops, topology, ctx, &topo, &made_topo)) != STARFOLD_OK) return st;
    const int ntopo = starfold_topology_num_devices(topo), nctx = starfold_context_num_devices(ctx);
    /* The copies written: all of them, or copy @copy alone. */
    const int n = copy < 0 ? var->n : 1, *vdevs = copy < 0 ? var->devices : &var->devices[copy];
    starfold_communication_options_t o = *options;
    o.promote_integer_mean = 0; /* the copies keep their dtype */

    group_t grp;
    size_t member = 0;
    memset(&grp, 0, sizeof grp);
    item_t it;
    memset(&it, 0, sizeof it);
    it.host_as = -1;
    it.reduce_device = -1;
    starfold_graph_t first = NULL, composed = NULL;
    starfold_view_t in[2 * STARFOLD_MAX_DEVICES], out[STARFOLD_MAX_DEVICES];
    int nin = 0, gdev[STARFOLD_MAX_DEVICES];
    const starfold_tensor_desc_t t = { var->dtype, var->count };

    if (reduce) {
        /* reduce_to(op, value, destinations = the variable): its classification, its graph. */
        starfold__pair_t p = { .value = value };
        p.dest.ctx = ctx;
        p.dest.n = n;
        memcpy(p.dest.devices, vdevs, sizeof(int) * (size_t)n);
        p.dest.host = vdevs[0] == STARFOLD_DEVICE_HOST;
        classify(ops, &p, &it);
        SF_CHECK_GOTO(check_item_devices(fn, &it, ntopo, nctx, 0), st, out);
        grp.members = &member;
        grp.nmembers = 1;
        SF_CHECK_GOTO(compile_group(ops, topo, op, &p, &it, &grp, &o, fn), st, out);
        first = grp.graph;
        for (int s = 0; s < it.nsrc; s++) {
            const int c = component_for(value->devices, value->n, it.src[s], it.host_as);
            if (c < 0) {
                st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: the value has no component for graph source %d", fn, s);
                goto out;
            }
            in[nin++] = starfold__value_view(value, c);
        }
    } else {
        int local = 1;
        for (int d = 0; d < n && local; d++) local = starfold__value_component_on(value, vdevs[d]) >= 0;
        if (local) {
            /* Each copy from the value's component beside it: no first graph. The host stands for device 0. */
            it.host_as = 0;
            for (int d = 0; d < n; d++) {
                gdev[d] = map_host(vdevs[d], it.host_as);
                if (gdev[d] >= ntopo || gdev[d] >= nctx) {
                    st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: device %d is not a device of the topology "
                                         "(0..%d) and the context (0..%d)", fn, gdev[d], ntopo - 1, nctx - 1);
                    goto out;
                }
                in[nin++] = starfold__value_view(value, starfold__value_component_on(value, vdevs[d]));
            }
        } else {
            /* A copy of one component to every copy's device, as broadcast_graph() places it. */
            const int c = comp >= 0 && comp < value->n ? comp : 0;
            int x = value->devices[c];
            if (x == STARFOLD_DEVICE_HOST) x = vdevs[0] != STARFOLD_DEVICE_HOST ? vdevs[0] : 0;
            it.host_as = x;
            for (int d = 0; d < n; d++) gdev[d] = map_host(vdevs[d], x);
            const starfold_collective_desc_t desc = {
                .kind = STARFOLD_COLL_BROADCAST, .op = STARFOLD_OP_SUM, .num_sources = 1, .sources = &x,
                .num_destinations = n, .destinations = gdev, .num_tensors = 1, .tensors = &t,
            };
            for (int k = -1; k < n; k++) {
                const int d = k < 0 ? x : gdev[k];
                if (d < 0 || d >= ntopo || d >= nctx) {
                    st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: device %d is not a device of the topology "
                                         "(0..%d) and the context (0..%d)", fn, d, ntopo - 1, nctx - 1);
                    goto out;
                }
            }
            SF_CHECK_GOTO(starfold_graph_compile(topo, "reduce-to-one", &desc, NULL, &first), st, out);
            in[nin++] = starfold__value_view(value, c);
        }
    }

    starfold_graph_t g = first;
    if (!(update == SF_UPDATE_ASSIGN && divisor <= 1 && first)) {
        SF_CHECK_GOTO(starfold__graph_then_update(topo, first, n, gdev, t, update, divisor < 1 ? 1 : divisor, &composed),
                      st, out);
        g = composed;
    }
    /* Output d: the copy on the graph's destination d; assign_add and assign_sub read it as input S + d too. */
    const int nout = starfold_graph_num_outputs(g);
    for (int d = 0; d < nout; d++) {
        const int k = component_for(vdevs, n, starfold_graph_output_device(g, d), it.host_as);
        const int c = k < 0 ? -1 : copy < 0 ? k : copy;
        if (c < 0) {
            st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: the variable has no copy for graph destination %d", fn, d);
            goto out;
        }
        out[d] = starfold__value_view(var, c);
        if (update != SF_UPDATE_ASSIGN) in[nin + d] = out[d];
    }
    starfold_request_t req = NULL;
    if ((st = starfold_submit_views(ctx, g, in, out, &req)) != STARFOLD_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", starfold_last_error());
        st = starfold__error(st, "%s: %s", fn, why);
        goto out;
    }
    starfold__dist_req_t *rec = starfold__dist_req_new(req, 1);
    if (!rec) {
        starfold_request_wait(req); /* the copies are written: never leave a submission running unowned */
        starfold_request_destroy(req);
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto out;
    }
    st = starfold__value_add_writer(var, rec);
    starfold__dist_req_release(rec);
    starfold__trace_entry_t e = { .path = SF_PATH_UPDATE, .num_tensors = 1, .num_sources = starfold_graph_num_inputs(g),
                                  .num_destinations = nout, .reduce_device = it.reduce_device };
    snprintf(e.algorithm, sizeof e.algorithm, "%s", starfold_graph_algorithm(g));
    starfold__trace_add(&e);
out:
    starfold_graph_destroy(composed);
    if (grp.cached) cache_release(ops, grp.graph);
    else starfold_graph_destroy(first);
    if (made_topo) starfold_topology_destroy(topo);
    return st;
}

/* One graph: broadcast of view @src (device @sdev, host allowed) to @ndst devices; output views given. */
static starfold_status_t broadcast_graph(const char *algorithm, starfold_topology_t topology, starfold_context_t ctx,
                                         starfold_dtype_t dtype, size_t count, starfold_view_t src, int sdev,
                                         int ndst, const int *dst_devices, const starfold_view_t *outs,
                                         const char *fn, starfold__dist_req_t **req_out)
{
    /* The host is no graph device: a host source is read on the first destination device, a host
     * destination written on the source's device (device 0 when both are the host). */
    int x = sdev;
    if (x == STARFOLD_DEVICE_HOST) x = dst_devices[0] != STARFOLD_DEVICE_HOST ? dst_devices[0] : 0;
    int dst[STARFOLD_MAX_DEVICES];
    for (int k = 0; k < ndst; k++) dst[k] = map_host(dst_devices[k], x);

    starfold_status_t st;
    starfold_topology_t topo = NULL;
    int made = 0;
    if ((st = starfold__pick_topology(NULL, topology, ctx, &topo, &made)) != STARFOLD_OK) return st;
    const int ntopo = starfold_topology_num_devices(topo), nctx = starfold_context_num_devices(ctx);
    for (int k = -1; k < ndst; k++) {
        const int d = k < 0 ? x : dst[k];
        if (d < 0 || d >= ntopo || d >= nctx) {
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: device %d is not a device of the topology (0..%d) and the "
                          "context (0..%d)", fn, d, ntopo - 1, nctx - 1);
            goto out;
        }
    }
    starfold_tensor_desc_t t = { dtype, count };
    starfold_collective_desc_t desc = {
        .kind = STARFOLD_COLL_BROADCAST, .op = STARFOLD_OP_SUM, .num_sources = 1, .sources = &x,
        .num_destinations = ndst, .destinations = dst, .num_tensors = 1, .tensors = &t,
    };
    starfold_graph_t g = NULL;
    if ((st = starfold_graph_compile(topo, algorithm, &desc, NULL, &g)) != STARFOLD_OK) goto out;
    starfold_request_t req;
    st = starfold_submit_views(ctx, g, &src, outs, &req);
    if (st == STARFOLD_OK) {
        if (!(*req_out = starfold__dist_req_new(req, 1))) {
            starfold_request_destroy(req);
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        } else {
            starfold__trace_entry_t e = { .path = SF_PATH_BROADCAST, .num_tensors = 1, .num_sources = 1,
                                   .num_destinations = ndst, .reduce_device = -1 };
            snprintf(e.algorithm, sizeof e.algorithm, "%s", algorithm);
            starfold__trace_add(&e);
        }
    }
    starfold_graph_destroy(g);
out:
    if (made) starfold_topology_destroy(topo);
    return st;
}

starfold_status_t starfold__ops_broadcast(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                   starfold_value_t value, const starfold__dest_t *dest, const char *fn,
                                   starfold_value_t *result)
{
    if (value->n != 1 && value->kind != STARFOLD_VALUE_MIRRORED)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                        "%s: broadcast takes one tensor: a one-component or mirrored value, not a per-replica value "
                        "of %d components", fn, value->n);
    if (dest->ctx && dest->ctx != value->ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the destination belongs to another context", fn);
    starfold_status_t st;
    starfold_value_t r = NULL;
    if ((st = starfold__value_alloc(value->ctx, STARFOLD_VALUE_MIRRORED, dest->n, dest->devices, value->dtype, value->count,
                             &r)) != STARFOLD_OK)
        return st;
    starfold__dist_req_t *req = NULL;
    starfold_view_t outs[STARFOLD_MAX_DEVICES];
    for (int k = 0; k < dest->n; k++) outs[k] = starfold__value_view(r, k);
    /* TensorFlow's broadcast is simple_broadcast whatever the ops: one copy per destination. */
    st = broadcast_graph("reduce-to-one", ops && ops->topology ? ops->topology : topology,
                         value->ctx, value->dtype, value->count, starfold__value_view(value, 0), value->devices[0],
                         dest->n, dest->devices, outs, fn, &req);
    if (st == STARFOLD_OK) st = starfold__value_add_writer(r, req);
    starfold__dist_req_release(req);
    if (st != STARFOLD_OK) {
        starfold_value_destroy(r);
        return st;
    }
    *result = r;
    return STARFOLD_OK;
}

starfold_status_t starfold__copy_component(starfold_topology_t topology, starfold_value_t src, int sc,
                                    starpu_data_handle_t dst, int dst_device, starfold_value_t owner)
{
    static const char fn[] = "starfold_update_assign";
    starfold__dist_req_t *req = NULL;
    const starfold_view_t out = { dst, 0 };
    starfold_status_t st = broadcast_graph("reduce-to-one", topology, src->ctx, src->dtype, src->count,
                                           starfold__value_view(src, sc), src->devices[sc], 1, &dst_device, &out, fn,
                                           &req);
    if (st == STARFOLD_OK) st = starfold__value_add_writer(owner, req);
    starfold__dist_req_release(req);
    return st;
}

starfold_status_t starfold__copy_view(starfold_context_t ctx, starfold_dtype_t dtype, size_t count, starfold_view_t src,
                                      int src_device, starfold_view_t dst, int dst_device, starfold__dist_req_t **req)
{
    return broadcast_graph("reduce-to-one", NULL, ctx, dtype, count, src, src_device, 1, &dst_device, &dst,
                           "moving a value out of the arena", req);
}

/* ------------------------------------------------------------------------------------------------
 * Public methods
 */

static starfold_status_t check_value(const char *fn, starfold_value_t v, const char *what)
{
    if (!v) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, what);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_cross_device_ops_reduce(starfold_cross_device_ops_t ops, starfold_op_t op,
                                                                starfold_value_t value,
                                                                const starfold_destination_t *destinations,
                                                                const starfold_communication_options_t *options,
                                                                starfold_value_t *result)
{
    static const char fn[] = "starfold_cross_device_ops_reduce";
    starfold_status_t st;
    if (!ops || !result) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !ops ? "ops" : "result");
    if ((st = check_value(fn, value, "value")) != STARFOLD_OK) return st;
    starfold__pair_t p = { .value = value };
    if ((st = starfold__dest_resolve(destinations, fn, &p.dest)) != STARFOLD_OK) return st;
    starfold_communication_options_t o;
    if ((st = starfold_communication_options_merge(NULL, options, &o)) != STARFOLD_OK) return st;
    return starfold__ops_batch_reduce(ops, NULL, op, 1, &p, &o, fn, result);
}

STARFOLD_API starfold_status_t starfold_cross_device_ops_batch_reduce(
    starfold_cross_device_ops_t ops, starfold_op_t op, size_t num_pairs, const starfold_value_destination_pair_t *pairs,
    const starfold_communication_options_t *options, starfold_value_t *results)
{
    static const char fn[] = "starfold_cross_device_ops_batch_reduce";
    starfold_status_t st;
    if (!ops || !results) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !ops ? "ops" : "results");
    if (num_pairs == 0 || !pairs)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: batch_reduce needs at least one (value, destinations) pair",
                        fn);
    starfold_communication_options_t o;
    if ((st = starfold_communication_options_merge(NULL, options, &o)) != STARFOLD_OK) return st;
    starfold__pair_t *p = malloc(sizeof *p * num_pairs);
    if (!p) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t i = 0; i < num_pairs && st == STARFOLD_OK; i++) {
        char what[48];
        snprintf(what, sizeof what, "value in pair %zu", i);
        p[i].value = pairs[i].value;
        if ((st = check_value(fn, pairs[i].value, what)) == STARFOLD_OK)
            st = starfold__dest_resolve(&pairs[i].destinations, fn, &p[i].dest);
    }
    if (st == STARFOLD_OK) st = starfold__ops_batch_reduce(ops, NULL, op, num_pairs, p, &o, fn, results);
    free(p);
    return st;
}

STARFOLD_API starfold_status_t starfold_cross_device_ops_broadcast(starfold_cross_device_ops_t ops,
                                                                   starfold_value_t value,
                                                                   const starfold_destination_t *destinations,
                                                                   starfold_value_t *result)
{
    static const char fn[] = "starfold_cross_device_ops_broadcast";
    starfold_status_t st;
    if (!ops || !result) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !ops ? "ops" : "result");
    if ((st = check_value(fn, value, "value")) != STARFOLD_OK) return st;
    starfold__dest_t d;
    if ((st = starfold__dest_resolve(destinations, fn, &d)) != STARFOLD_OK) return st;
    return starfold__ops_broadcast(ops, NULL, value, &d, fn, result);
}
