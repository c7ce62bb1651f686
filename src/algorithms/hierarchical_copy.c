/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * hierarchical-copy: TensorFlow's HierarchicalCopyAllReduce (doc/tensorflow-semantics.md 4.4-4.5),
 * with its defects fixed.
 *
 * The replicas are split into two groups - on a DGX-1 the two quads {0,1,2,3} and {4,5,6,7}; on any
 * other topology the two best-connected halves (starfold_topology_bisect). For pack i of N replicas:
 *
 *        group A (holds replica i % N)           group B
 *      a1   a2   a3                             b1   b2   b3
 *        \   |   /                               \   |   /
 *         v  v  v                                 v  v  v
 *        [reduce on r0 = i % N]    <---------   [reduce on r1 = partner of r0]
 *        [total = A + B on r0, scale for MEAN]
 *              |  copy to r1  ----------------------->  |
 *        / |   |   \                               / |   |  \
 *     unpack to every member of A             unpack to every member of B
 *
 * The root r0 rotates with the pack index (TensorFlow's i % N over the replica positions); r1 is the
 * member of the other group with the fastest link to r0, ties broken towards TensorFlow's choice
 * (r0 + N/2) % N. On a DGX-1 that is always r0 +- 4, so the graph is TensorFlow's exactly.
 *
 * Packing: concat-and-split into num_packs contiguous packs per dtype (pack.h); num_packs = 0 reduces
 * every tensor on its own, rotating the root by tensor index. With bytes_per_pack > 0, packs are
 * TensorFlow's size-based groups of whole tensors instead (pack.h, starfold__pack_plan_by_size); the
 * all-reduce driver (allreduce_packs.c) packs and unpacks, this file reduces one pack. Each reduction
 * order is TensorFlow's: (group A in replica order) + (group B in replica order).
 *
 * Fixed defects: odd N (TensorFlow drops replica N-1), N = 1 (TensorFlow calls add_n([])), groups from
 * the topology instead of hard-coded halves, mixed dtypes (TensorFlow's concat fails). As in
 * TensorFlow, a reduce whose destinations are not the sources falls back to reduce-to-one (on the
 * first destination), and broadcast is the simple broadcast.
 */
#include "config.h"

#include "algorithms/algorithms.h"
#include "base/common.h"

/* Per-build scratch: replica positions split into groups. */
typedef struct hc_state {
    int n;
    int *group;            /* [n] 0 or 1 per replica position */
    starfold__span_t *src; /* [n] scratch for reduce sources */
} hc_state_t;

/* Member of the group other than @r0's with the fastest link to it; ties go to (r0 + N/2) % N, then on. */
static int pick_partner(starfold_graph_t g, const hc_state_t *hs, int r0)
{
    const int n = hs->n, half = n / 2;
    int best = -1;
    double best_bw = -1.0;
    for (int k = 0; k < n; k++) {
        int p = (r0 + half + k) % n;
        if (hs->group[p] == hs->group[r0]) continue;
        double bw = starfold_topology_bandwidth(g->topology, g->input_devices[r0], g->input_devices[p]);
        if (bw > best_bw) {
            best_bw = bw;
            best = p;
        }
    }
    return best;
}

/* Reduces the members of @grp (replica order) into @dst on the root; one member needs no task. */
static starfold_status_t reduce_group(starfold_graph_t g, hc_state_t *hs, const starfold__span_t *have, int grp,
                                      starfold__span_t dst, starfold_op_t acc, int tag)
{
    size_t k = 0;
    for (int p = 0; p < hs->n; p++)
        if (hs->group[p] == grp) hs->src[k++] = have[p];
    return starfold__graph_reduce(g, acc, hs->src, k, dst, tag, NULL);
}

/* The pattern: both groups reduced on their roots, the total on r0, back to r1; every member of a
 * group reads its result from its root. */
static starfold_status_t reduce_pack(starfold__allreduce_t *ar, void *self)
{
    starfold_status_t st;
    hc_state_t *hs = self;
    starfold_graph_t g = ar->g;
    const starfold__pack_t *pk = ar->pack;
    const starfold__span_t *have = ar->have;
    const int n = hs->n;
    const starfold_op_t acc = ar->acc;
    const int tag = ar->tag;
    const int r0 = (int)(pk->index % (size_t)n);

    /* total on r0 = (group of r0) + (other group, reduced on r1). */
    size_t tbuf;
    if ((st = starfold__graph_add_temp(g, g->input_devices[r0], pk->dtype, pk->count, tag, &tbuf)) != STARFOLD_OK) return st;
    starfold__span_t total = starfold__whole(g, tbuf);
    if ((st = reduce_group(g, hs, have, hs->group[r0], total, acc, tag)) != STARFOLD_OK) return st;

    const int r1 = n > 1 ? pick_partner(g, hs, r0) : -1;
    starfold__span_t other = total;
    if (r1 >= 0) {
        size_t b1;
        if ((st = starfold__graph_add_temp(g, g->input_devices[r1], pk->dtype, pk->count, tag, &b1)) != STARFOLD_OK) return st;
        other = starfold__whole(g, b1);
        if ((st = reduce_group(g, hs, have, hs->group[r1], other, acc, tag)) != STARFOLD_OK) return st;
        starfold__span_t both[2] = { total, other };
        if ((st = starfold__graph_reduce(g, acc, both, 2, total, tag, NULL)) != STARFOLD_OK) return st;
    }
    /* MEAN: divide on r0, in place, or into a float64 buffer for a promoted integer MEAN. */
    const starfold_dtype_t out_dt = starfold__graph_out_dtype(g, pk->dtype);
    if (g->op == STARFOLD_OP_MEAN && (n > 1 || out_dt != pk->dtype)) {
        starfold__span_t mean = total;
        if (out_dt != pk->dtype) {
            size_t mbuf;
            if ((st = starfold__graph_add_temp(g, g->input_devices[r0], out_dt, pk->count, tag, &mbuf)) != STARFOLD_OK)
                return st;
            mean = starfold__whole(g, mbuf);
        }
        if ((st = starfold__graph_scale(g, total, mean, (uint32_t)n, tag, NULL)) != STARFOLD_OK) return st;
        total = mean;
    }
    /* The other group's root gets the total back (into its partial-sum buffer when the types agree). */
    starfold__span_t bcast1 = total;
    if (r1 >= 0) {
        if (out_dt != pk->dtype) {
            size_t b2;
            if ((st = starfold__graph_add_temp(g, g->input_devices[r1], out_dt, pk->count, tag, &b2)) != STARFOLD_OK) return st;
            other = starfold__whole(g, b2);
        }
        if ((st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &total, 1, &other, 1, tag, NULL)) != STARFOLD_OK) return st;
        bcast1 = other;
    }

    for (int p = 0; p < n; p++) ar->result[p] = (r1 >= 0 && hs->group[p] == hs->group[r1]) ? bcast1 : total;
    return STARFOLD_OK;
}

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    /* Results stay on the two roots, which scatter them; one replica is a group of one. */
    static const starfold__allreduce_pattern_t pattern = { .reduce_pack = reduce_pack, .places_results = 1,
                                                           .reduces_single = 1 };
    starfold_status_t st = STARFOLD_OK;
    const int n = g->num_inputs;
    hc_state_t hs = { n, calloc((size_t)n, sizeof(int)), calloc((size_t)n, sizeof(starfold__span_t)) };
    if (!hs.group || !hs.src) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "hierarchical-copy: out of memory");
        goto out;
    }
    SF_CHECK_GOTO(starfold_topology_bisect(g->topology, n, g->input_devices, hs.group), st, out);
    st = starfold__allreduce_packs(g, options, &pattern, &hs);
out:
    free(hs.group);
    free(hs.src);
    return st;
}

const starfold__algorithm_t starfold__algo_hierarchical_copy = {
    .name = "hierarchical-copy",
    .description = "TensorFlow's HierarchicalCopyAllReduce: two groups, rotating roots, concat-and-split packs",
    .supports = STARFOLD__SUPPORTS_ALL_REDUCE,
    .options = STARFOLD_ALGO_OPTION_NUM_PACKS | STARFOLD_ALGO_OPTION_BYTES_PER_PACK,
    .build = build,
};
