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
 *
 * This file holds the ops objects, the test trace and the public methods, which check their
 * arguments and dispatch: the grouping of a batch is batch_groups.c, its submission batch_reduce.c
 * (with the kept plans of batch_plan.c), updates, broadcasts and copies ops_update.c.
 */
#include "config.h"

#include <stdio.h>

#include "algorithms/algorithms.h"
#include "base/common.h"
#include "distribute/batch_plan.h"
#include "distribute/distribute.h"

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
