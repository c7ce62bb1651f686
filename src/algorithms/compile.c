/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The algorithm registry and the compile entry point.
 *
 * starfold_graph_compile() owns everything that is the same for every algorithm: validating the
 * collective (devices exist and are distinct, dtypes known, op known) and the options (one rule for
 * every algorithm, validate_options()), resolving "destinations = sources", creating the graph with
 * its input and output buffers, what the registry row says (shared memory, the fallbacks for the
 * collectives an algorithm has no pattern for, "auto"), and sealing the graph after the algorithm's
 * build() has appended its tasks. Algorithms validate nothing.
 */
#include "config.h"

#include "algorithms/algorithms.h"
#include "base/common.h"
#include "graph/graph.h"
#include "topology/topology.h"
#include <starfold/model.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "auto" builds nothing itself: starfold_graph_compile() compiles the others and keeps the fastest. */
static const starfold__algorithm_t starfold__algo_auto = {
    .name = "auto",
    .description = "the algorithm the cost model predicts fastest for this collective on this topology",
    .supports = STARFOLD__SUPPORTS_ALL_REDUCE | STARFOLD__SUPPORTS_REDUCE | STARFOLD__SUPPORTS_BROADCAST,
    .is_auto = 1,
    .build = NULL,
};

/* The registry: one entry per algorithm file, in the order `starfold` lists them. */
static const starfold__algorithm_t *const registry[] = {
    &starfold__algo_reduce_to_one,
    &starfold__algo_hierarchical_copy,
    &starfold__algo_ring,
    &starfold__algo_halving_doubling,
    &starfold__algo_trees,
    &starfold__algo_one_pass,
    &starfold__algo_hierarchical,
    &starfold__algo_leader,
    &starfold__algo_auto,
};
#define REGISTRY_SIZE ((int)(sizeof registry / sizeof registry[0]))

STARFOLD_API int starfold_algorithm_count(void)
{
    return REGISTRY_SIZE;
}

const starfold__algorithm_t *starfold__algorithm_at(int index)
{
    return index >= 0 && index < REGISTRY_SIZE ? registry[index] : NULL;
}

STARFOLD_API int starfold_algorithm_find(const char *name)
{
    for (int i = 0; name && i < REGISTRY_SIZE; i++)
        if (starfold__streq_nocase(registry[i]->name, name)) return i;
    return -1;
}

STARFOLD_API const char *starfold_algorithm_name(int index)
{
    return index >= 0 && index < REGISTRY_SIZE ? registry[index]->name : NULL;
}

STARFOLD_API const char *starfold_algorithm_description(int index)
{
    return index >= 0 && index < REGISTRY_SIZE ? registry[index]->description : NULL;
}

/* "auto" compiles every other algorithm with the caller's options, so it reads all of theirs. */
STARFOLD_API unsigned starfold_algorithm_options(int index)
{
    if (index < 0 || index >= REGISTRY_SIZE) return 0;
    if (!registry[index]->is_auto) return registry[index]->options;
    unsigned all = 0;
    for (int i = 0; i < REGISTRY_SIZE; i++) all |= registry[i]->options;
    return all;
}

starfold_status_t starfold__algorithm_lookup(const char *name, const starfold__algorithm_t **algorithm)
{
    const int i = starfold_algorithm_find(name);
    if (i >= 0) {
        *algorithm = registry[i];
        return STARFOLD_OK;
    }
    char names[256] = "";
    for (int k = 0; k < REGISTRY_SIZE; k++) {
        strncat(names, k ? ", " : "", sizeof names - strlen(names) - 1);
        strncat(names, registry[k]->name, sizeof names - strlen(names) - 1);
    }
    return starfold__error(STARFOLD_ERR_NOT_FOUND, "unknown algorithm '%s' (known: %s)", name ? name : "(null)", names);
}

STARFOLD_API void starfold_algo_options_init(starfold_algo_options_t *options)
{
    if (!options) return;
    memset(options, 0, sizeof *options);
    options->num_packs = 1;
    options->reduce_to_device = -1;
}

/* Every device of @list exists in a topology of @ndev devices and appears once. */
static starfold_status_t check_devices(const char *what, const int *list, int n, int ndev)
{
    if (n < 1 || !list) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: need at least one device", what);
    if (n > ndev)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d devices but the topology has %d", what, n, ndev);
    for (int i = 0; i < n; i++) {
        if (list[i] < 0 || list[i] >= ndev)
            return starfold__error(STARFOLD_ERR_NOT_FOUND, "%s[%d]: device %d is not in the topology (0..%d)", what, i,
                            list[i], ndev - 1);
        for (int j = 0; j < i; j++)
            if (list[j] == list[i])
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: device %d appears twice (positions %d and %d)",
                                what, list[i], j, i);
    }
    return STARFOLD_OK;
}

/*
 * Bytes of one replica's tensors, summed until they pass STARFOLD_COLLECTIVE_MAX_BYTES (each tensor is
 * below 2^51 bytes once its count is checked, so the running sum never wraps); @past, when not NULL,
 * gets the tensor at which it passed. After validate(), the exact total.
 */
static uint64_t collective_bytes(const starfold_collective_desc_t *desc, size_t *past)
{
    uint64_t total = 0;
    for (size_t t = 0; t < desc->num_tensors && total <= STARFOLD_COLLECTIVE_MAX_BYTES; t++) {
        total += (uint64_t)desc->tensors[t].count * starfold_dtype_size(desc->tensors[t].dtype);
        if (past) *past = t;
    }
    return total;
}

static starfold_status_t validate(starfold_topology_t topology, const starfold_collective_desc_t *desc)
{
    starfold_status_t st;
    const int ndev = starfold_topology_num_devices(topology);
    if ((int)desc->kind < 0 || desc->kind > STARFOLD_COLL_GATHER)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "unknown collective kind %d", (int)desc->kind);
    if ((int)desc->op < 0 || (int)desc->op >= STARFOLD_OP_COUNT)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "unknown reduce op %d", (int)desc->op);
    if ((st = check_devices("sources", desc->sources, desc->num_sources, ndev)) != STARFOLD_OK) return st;
    if (desc->kind == STARFOLD_COLL_BROADCAST && desc->num_sources != 1)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "broadcast needs exactly one source, got %d",
                        desc->num_sources);
    if (desc->num_destinations != 0 || desc->destinations != NULL) {
        if ((st = check_devices("destinations", desc->destinations, desc->num_destinations, ndev)) != STARFOLD_OK)
            return st;
    }
    if (desc->num_tensors == 0 || !desc->tensors)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "a collective needs at least one tensor");
    for (size_t t = 0; t < desc->num_tensors; t++) {
        if ((int)desc->tensors[t].dtype < 0 || (int)desc->tensors[t].dtype >= STARFOLD_DTYPE_COUNT)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "tensor %zu: unknown dtype %d", t,
                            (int)desc->tensors[t].dtype);
        if (desc->tensors[t].count > ((size_t)1 << 48))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "tensor %zu: %zu elements is beyond any device", t,
                            desc->tensors[t].count);
    }
    size_t past = 0;
    if (desc->source_counts && desc->kind != STARFOLD_COLL_GATHER)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "source_counts are for a gather only (NULL for this collective)");
    /* A gather's outputs hold every source's tensors: the limits apply to them. */
    if (desc->kind == STARFOLD_COLL_GATHER) {
        uint64_t out = 0;
        for (size_t t = 0; t < desc->num_tensors; t++) {
            uint64_t elems = 0;
            for (int s = 0; s < desc->num_sources; s++) {
                const size_t c = desc->source_counts ? desc->source_counts[(size_t)s * desc->num_tensors + t]
                                                     : desc->tensors[t].count;
                if (c > ((size_t)1 << 48))
                    return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                           "gather: source %d's tensor %zu of %zu elements is beyond any device", s, t, c);
                elems += c;
            }
            if (elems > ((uint64_t)1 << 48))
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "gather: tensor %zu gathered from %d sources is beyond any device", t,
                                       desc->num_sources);
            out += elems * starfold_dtype_size(desc->tensors[t].dtype);
        }
        if (out > STARFOLD_COLLECTIVE_MAX_BYTES)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "gather: the outputs would hold %llu bytes per destination, more than %llu "
                                   "(STARFOLD_COLLECTIVE_MAX_BYTES)",
                                   (unsigned long long)out, (unsigned long long)STARFOLD_COLLECTIVE_MAX_BYTES);
    }
    if (collective_bytes(desc, &past) > STARFOLD_COLLECTIVE_MAX_BYTES)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "the tensors add up to more than %llu bytes per replica (STARFOLD_COLLECTIVE_MAX_BYTES) "
                               "by tensor %zu of %zu",
                               (unsigned long long)STARFOLD_COLLECTIVE_MAX_BYTES, past, desc->num_tensors);
    return STARFOLD_OK;
}

/* The most rings num_rings may ask for: the largest max_rings of the algorithms that read it. */
static int max_rings(void)
{
    int m = 0;
    for (int i = 0; i < REGISTRY_SIZE; i++)
        if ((registry[i]->options & STARFOLD_ALGO_OPTION_NUM_RINGS) && registry[i]->max_rings > m) m = registry[i]->max_rings;
    return m;
}

/*
 * The options rule, the same for every algorithm and checked here only (builders never re-check):
 *  - a value out of an option's range is refused whichever algorithm is named, even one that does not
 *    read the option: a negative num_packs given to reduce-to-one is as much a caller's mistake as one
 *    given to hierarchical-copy, and "auto" must not depend on which algorithm it happens to pick;
 *  - a value in range is ignored by the algorithms that do not read the option (the registry's
 *    .options), so "auto" can hand one set of options to every algorithm.
 * The ranges: num_packs 0 .. STARFOLD_GRAPH_MAX_TASKS; num_rings 0 (automatic) up to the largest .max_rings of the algorithms
 * that read it; reduce_to_device -1 (the first destination) or a device; bytes_per_pack and
 * chunk_bytes anything (0 = automatic), a value above the collective's bytes meaning all of them at
 * once (effective_options() says so to the builders, whose arithmetic then never wraps).
 */
static starfold_status_t validate_options(starfold_topology_t topology, const char *algorithm,
                                          const starfold_collective_desc_t *desc, const starfold_algo_options_t *o)
{
    const int ndev = starfold_topology_num_devices(topology), rings = max_rings();
    if (o->num_packs < 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s requires num_packs >= 0, but %d is specified", algorithm,
                        o->num_packs);
    /* A pack costs at least one task: more packs than the task budget can never compile. */
    if (o->num_packs > STARFOLD_GRAPH_MAX_TASKS)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: num_packs must be at most %d (STARFOLD_GRAPH_MAX_TASKS: a pack costs a task), got %d",
                               algorithm, STARFOLD_GRAPH_MAX_TASKS, o->num_packs);
    if (o->num_rings < 0 || o->num_rings > rings)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: num_rings must be 0 (automatic) to %d, got %d", algorithm,
                        rings, o->num_rings);
    if (o->reduce_to_device < -1 || o->reduce_to_device >= ndev)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: reduce_to_device %d is not a device (0..%d) or -1",
                        algorithm, o->reduce_to_device, ndev - 1);
    if (desc->promote_integer_mean != 0 && desc->promote_integer_mean != 1)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "promote_integer_mean must be 0 or 1, got %d",
                        desc->promote_integer_mean);
    return STARFOLD_OK;
}

/*
 * The options the builders see: a chunk or a pack larger than the whole collective is the whole
 * collective (the same graph), so every size a builder computes with stays below
 * STARFOLD_COLLECTIVE_MAX_BYTES and `bytes + chunk - 1` cannot wrap (chunk_bytes = SIZE_MAX once gave a
 * graph of 0 tasks, and 2^63 a division by zero).
 */
static starfold_algo_options_t effective_options(const starfold_collective_desc_t *desc, const starfold_algo_options_t *o)
{
    starfold_algo_options_t e = *o;
    const uint64_t total = collective_bytes(desc, NULL), whole = total ? total : 1;
    if (e.chunk_bytes > whole) e.chunk_bytes = (size_t)whole;
    if (e.bytes_per_pack > whole) e.bytes_per_pack = (size_t)whole;
    return e;
}

/* The detail of a collective refused for its size: what it asked for, and the limits. */
static starfold_status_t over_budget(const char *algorithm, const starfold_collective_desc_t *desc,
                                     const starfold_algo_options_t *o)
{
    return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                           "%s: %zu tensors of %llu bytes in all with chunk_bytes %zu, num_packs %d, bytes_per_pack %zu "
                           "need more than %d tasks or %d task arguments (STARFOLD_GRAPH_MAX_TASKS, "
                           "STARFOLD_GRAPH_MAX_SPANS): use larger chunks, fewer packs or fewer tensors",
                           algorithm, desc->num_tensors, (unsigned long long)collective_bytes(desc, NULL), o->chunk_bytes,
                           o->num_packs, o->bytes_per_pack, STARFOLD_GRAPH_MAX_TASKS, STARFOLD_GRAPH_MAX_SPANS);
}

/*
 * Every destination written: a graph that leaves an output untouched would hand the caller whatever
 * was there as the result, so it is never returned, checker or not (O(task arguments)).
 */
static starfold_status_t check_outputs_written(const struct starfold_graph *g)
{
    unsigned char *written = calloc(g->nbufs ? g->nbufs : 1, 1);
    if (!written) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", g->algorithm);
    for (size_t i = 0; i < g->nnodes; i++)
        for (size_t k = 0; k < g->nodes[i].ndst; k++) written[g->nodes[i].dst[k].buf] = 1;
    starfold_status_t st = STARFOLD_OK;
    for (int o = 0; o < g->num_outputs && st == STARFOLD_OK; o++)
        for (size_t t = 0; t < g->num_tensors && st == STARFOLD_OK; t++) {
            const size_t b = starfold__graph_output(g, o, t);
            if (g->bufs[b].count && !written[b])
                st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: the graph writes no part of tensor %zu on destination %d",
                                     g->algorithm, t, g->output_devices[o]);
        }
    free(written);
    return st;
}

/* An algorithm with .shared_memory needs every source and destination in the first source's memory. */
static starfold_status_t check_shared_memory(const starfold__algorithm_t *algo, const struct starfold_graph *g)
{
    const int home = g->input_devices[0];
    for (int i = 0; i < g->num_inputs + g->num_outputs; i++) {
        const int dev = i < g->num_inputs ? g->input_devices[i] : g->output_devices[i - g->num_inputs];
        if (!starfold_topology_same_memory(g->topology, home, dev))
            return starfold__error(STARFOLD_ERR_NOT_SUPPORTED,
                            "%s needs every replica in one memory (CPU devices in host memory); devices %d and "
                            "%d of topology '%s' have memories of their own",
                            algo->name, home, dev, starfold_topology_name(g->topology));
    }
    return STARFOLD_OK;
}

/*
 * The algorithm's pattern for the collectives it supports, TensorFlow's fallbacks for the others: a
 * broadcast is the simple broadcast, a reduce to other devices than the sources is reduce-to-one on
 * the first destination.
 */
static starfold_status_t build_graph(const starfold__algorithm_t *algo, starfold_graph_t g, const starfold_algo_options_t *o)
{
    if (g->kind == STARFOLD_COLL_GATHER)
        return (algo->supports & STARFOLD__SUPPORTS_ALL_GATHER) && starfold__graph_is_all_gather(g)
                   ? algo->build(g, o)
                   : starfold__build_direct_gather(g);
    if (g->kind == STARFOLD_COLL_BROADCAST)
        return algo->supports & STARFOLD__SUPPORTS_BROADCAST ? algo->build(g, o) : starfold__build_simple_broadcast(g);
    if (algo->supports & STARFOLD__SUPPORTS_REDUCE) return algo->build(g, o);
    if ((algo->supports & STARFOLD__SUPPORTS_ALL_REDUCE) && starfold__graph_is_all_reduce(g)) return algo->build(g, o);
    return starfold__build_reduce_to_one(g, g->output_devices[0]);
}

/* Whether STARFOLD_CHECK_GRAPHS asks for the invariant checker after every compile (read once). */
int starfold__check_graphs_wanted(void)
{
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("STARFOLD_CHECK_GRAPHS");
        v = e && *e && strcmp(e, "0") != 0;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

/*
 * One named algorithm on a validated collective (@d: destinations resolved). *over_budget says a
 * failure came from the limits of graph.h, which "auto" treats as "not this algorithm".
 */
static starfold_status_t compile_named(const starfold__algorithm_t *algo, starfold_topology_t topology,
                                       const starfold_collective_desc_t *d, const starfold_algo_options_t *options,
                                       starfold_graph_t *graph, int *over)
{
    starfold_status_t st = STARFOLD_OK;
    *over = 0;
    const starfold_algo_options_t eff = effective_options(d, options);
    /* Each destination's tensors are written by at least one task argument each: a collective past
     * the budget on that count alone is refused before its buffers are even allocated. */
    size_t nonempty = 0;
    for (size_t t = 0; t < d->num_tensors; t++) nonempty += d->tensors[t].count > 0;
    if (nonempty > (size_t)STARFOLD_GRAPH_MAX_SPANS / (size_t)d->num_destinations) {
        *over = 1;
        return over_budget(algo->name, d, options);
    }
    starfold_graph_t g = NULL;
    if ((st = starfold__graph_create(topology, algo->name, d, &g)) != STARFOLD_OK) return st;
    if (algo->shared_memory) st = check_shared_memory(algo, g);
    if (st == STARFOLD_OK) st = build_graph(algo, g, &eff);
    if (st != STARFOLD_OK && g->over_budget) {
        *over = 1;
        st = over_budget(algo->name, d, options);
    }
    if (st == STARFOLD_OK) st = check_outputs_written(g);
    if (st != STARFOLD_OK) {
        starfold_graph_destroy(g);
        return st;
    }
    starfold__graph_seal(g);
    /* STARFOLD_CHECK_GRAPHS=1 (the test suite sets it): every graph compiled, here or through the
     * distribute layer, passes the invariant checker before it is handed out. */
    if (starfold__check_graphs_wanted() && (st = starfold_graph_check(g)) != STARFOLD_OK) {
        starfold_graph_destroy(g);
        return st;
    }
    *graph = g;
    return STARFOLD_OK;
}

/*
 * What the topology's measurements say of @algorithm for an all-reduce of @bytes per device over @n
 * devices: the factor measured / predicted, interpolated linearly in log(bytes) between the two
 * measured sizes around @bytes and held beyond the smallest and largest; 1 when nothing was measured.
 *
 *   log(factor) |      x
 *               |  ___/ \_____x______     held at the ends
 *               |_x________________ log(bytes)
 */
static double measured_factor(starfold_topology_t t, const char *algorithm, int n, double bytes)
{
    const starfold_measurement_t *below = NULL, *above = NULL;
    for (size_t i = 0; i < t->num_measurements; i++) {
        const starfold_measurement_t *m = &t->measurements[i];
        if (m->num_devices != n || strcmp(m->algorithm, algorithm) != 0) continue;
        if ((double)m->bytes <= bytes && (!below || m->bytes > below->bytes)) below = m;
        if ((double)m->bytes >= bytes && (!above || m->bytes < above->bytes)) above = m;
    }
    if (!below && !above) return 1.0;
    if (!below) below = above;
    if (!above) above = below;
    const double lb = log(below->measured_us / below->predicted_us);
    const double la = log(above->measured_us / above->predicted_us);
    if (above->bytes == below->bytes) return exp(lb);
    const double w = (log(bytes) - log((double)below->bytes)) / (log((double)above->bytes) - log((double)below->bytes));
    return exp(lb + w * (la - lb));
}

/* STARFOLD_AUTO_MEASUREMENTS=0: "auto" ranks by the model alone (to compare the two choices). */
static int use_measurements(void)
{
    const char *e = getenv("STARFOLD_AUTO_MEASUREMENTS");
    return !(e && !strcmp(e, "0"));
}

/* Bytes per device of an all-reduce over every source, or 0 for any other collective. */
static double all_reduce_bytes(const starfold_collective_desc_t *d)
{
    if (d->kind != STARFOLD_COLL_REDUCE || d->num_destinations != d->num_sources) return 0;
    for (int i = 0; i < d->num_sources; i++) {
        int found = 0;
        for (int j = 0; j < d->num_destinations && !found; j++) found = d->destinations[j] == d->sources[i];
        if (!found) return 0;
    }
    double bytes = 0;
    for (size_t t = 0; t < d->num_tensors; t++)
        bytes += (double)d->tensors[t].count * (double)starfold_dtype_size(d->tensors[t].dtype);
    return bytes;
}

/*
 * "auto": every other algorithm is compiled with the caller's options and replayed by the cost model;
 * the fastest graph is returned, named "auto:<algorithm>". Where the topology carries measurements
 * of all-reduces (a calibrated context's topology), each prediction is scaled by measured_factor()
 * first, so the ranking follows what this machine did at that size, not only what the model
 * describes. Ties go to the earlier registry entry. An
 * algorithm that cannot do the collective here (one-pass without shared memory) or would pass the
 * limits of graph.h (a ring of many unpacked tensors) is left out, and so is one-pass on GPU devices
 * (below); when every one is, the last reason is returned.
 */
static starfold_status_t compile_auto(starfold_topology_t topology, const starfold_collective_desc_t *d,
                                      const starfold_algo_options_t *options, starfold_graph_t *graph)
{
    starfold_graph_t best = NULL;
    double best_time = 0;
    starfold_status_t st = STARFOLD_OK, skipped = STARFOLD_OK;
    const double bytes = topology->num_measurements && use_measurements() ? all_reduce_bytes(d) : 0;
    /* one-pass on GPU devices sharing one memory (the StarPU workers of one GPU) is priced as if each
     * were a GPU of its own, where StarPU runs them a task at a time. On 8 workers of an H200 it was
     * faster for one large tensor (0.32 ms against auto's 1.12 for 64 MiB) and, compiled then as one
     * task, slower for ResNet-50's list (6.3 ms against 3.6). Until the model knows a GPU's workers,
     * auto leaves it out there; naming it still compiles it. */
    const int gpu = starfold_topology_device_kind(topology, d->sources[0]) == STARFOLD_DEVICE_GPU;
    for (int i = 0; i < REGISTRY_SIZE; i++) {
        if (registry[i]->is_auto || (gpu && registry[i]->shared_memory)) continue;
        starfold_graph_t g = NULL;
        starfold_prediction_t p;
        int over = 0;
        if ((st = compile_named(registry[i], topology, d, options, &g, &over)) != STARFOLD_OK) {
            if (st != STARFOLD_ERR_NOT_SUPPORTED && !over) break;
            skipped = st;
            st = STARFOLD_OK;
            continue;
        }
        if ((st = starfold_graph_simulate(g, NULL, &p)) != STARFOLD_OK) {
            starfold_graph_destroy(g);
            break;
        }
        if (bytes > 0) p.time_us *= measured_factor(topology, registry[i]->name, d->num_sources, bytes);
        if (!best || p.time_us < best_time) {
            starfold_graph_destroy(best);
            best = g;
            best_time = p.time_us;
        } else {
            starfold_graph_destroy(g);
        }
    }
    if (st == STARFOLD_OK && !best) st = skipped; /* the last algorithm's reason is in starfold_last_error() */
    if (st != STARFOLD_OK) {
        starfold_graph_destroy(best);
        return st;
    }
    char name[64];
    snprintf(name, sizeof name, "auto:%s", best->algorithm);
    char *copy = starfold__strdup(name);
    if (!copy) {
        starfold_graph_destroy(best);
        return STARFOLD_ERR_OUT_OF_MEMORY;
    }
    free(best->algorithm);
    best->algorithm = copy;
    *graph = best;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_graph_compile(starfold_topology_t topology, const char *algorithm,
                                                      const starfold_collective_desc_t *desc,
                                                      const starfold_algo_options_t *options,
                                                      starfold_graph_t *graph)
{
    starfold_status_t st;
    if (!topology || !algorithm || !desc || !graph)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_graph_compile: NULL %s",
                        !topology ? "topology" : !algorithm ? "algorithm" : !desc ? "description" : "graph");
    const starfold__algorithm_t *algo = NULL;
    if ((st = starfold__algorithm_lookup(algorithm, &algo)) != STARFOLD_OK) return st;
    if ((st = starfold_topology_validate(topology)) != STARFOLD_OK) return st;
    if ((st = validate(topology, desc)) != STARFOLD_OK) return st;

    starfold_algo_options_t defaults;
    starfold_algo_options_init(&defaults);
    if (!options) options = &defaults;
    if ((st = validate_options(topology, algo->name, desc, options)) != STARFOLD_OK) return st;

    /* "No destinations" means the sources: an all-reduce. */
    starfold_collective_desc_t d = *desc;
    if (d.num_destinations == 0 && d.destinations == NULL) {
        d.num_destinations = d.num_sources;
        d.destinations = d.sources;
    }
    if (algo->is_auto) return compile_auto(topology, &d, options, graph);
    int over = 0;
    return compile_named(algo, topology, &d, options, graph, &over);
}
