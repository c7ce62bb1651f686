/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * leader: for small messages across nodes - each node reduces onto one leader, the leaders exchange
 * their node sums directly, each leader reduces them all, and broadcasts inside its node. Three
 * dependent hops whatever the count of nodes or replicas (a ring takes 2(N-1), halving-doubling
 * 2 log2 N), at the price of every leader sending the whole pack to every other: the latency-bound
 * end of UCC's CL/HIER (node, node-leaders) and of Horovod's hierarchical path for small tensors.
 * Nodes are the topology's sockets (nodes.c).
 *
 *      node 0: a0 a1 a2            node 1: b0 b1               leader of pack i = member i % m
 *   1  a1, a2 --reduce--> a0       b1 --reduce--> b0           S_0 on a0, S_1 on b0
 *   2  a0: S_0 + S_1 (/n)          b0: S_0 + S_1 (/n)          each leader reads every node sum
 *   3  a0 --copy--> a1, a2         b0 --copy--> b1             in node order: the same bits
 *
 * The leader rotates with the pack index, so packs spread their reductions over a node's devices. A
 * node of one replica has no sum to send but its input, which its output may alias: its total is
 * built in a temporary and copied out after every leader has read the input (total_into_output).
 * Accumulation order: the node's members in position order, then the nodes in order. One node: the
 * leader's reduction is the result (reduce-to-one, then broadcast). Not an all-reduce ->
 * reduce-to-one, broadcast -> the simple broadcast (compile.c).
 */
#include "config.h"

#include "algorithms/algorithms.h"
#include "base/common.h"

/* Step 1: node @k's sum on @leader, into a temporary (several members) or read in place (one). */
static starfold_status_t node_sum(starfold__allreduce_t *ar, const starfold__nodes_t *nd, int k, int leader,
                                  starfold__span_t *sum)
{
    starfold_graph_t g = ar->g;
    const int m = nd->first[k + 1] - nd->first[k];
    if (m == 1) {
        *sum = ar->have[leader];
        return STARFOLD_OK;
    }
    starfold__span_t src[STARFOLD_MAX_DEVICES];
    for (int i = 0; i < m; i++) src[i] = ar->have[nd->member[nd->first[k] + i]];
    size_t t;
    starfold_status_t st = starfold__graph_add_temp(g, g->input_devices[leader], ar->pack->dtype, ar->pack->count, ar->tag, &t);
    if (st != STARFOLD_OK) return st;
    *sum = starfold__whole(g, t);
    return starfold__graph_reduce(g, ar->acc, src, (size_t)m, *sum, ar->tag, NULL);
}

/* Step 2 on @leader: every node sum reduced into @dst (divided for MEAN). *node = the REDUCE, the task
 * that reads the other nodes' sums. */
static starfold_status_t leader_total(starfold__allreduce_t *ar, const starfold__span_t *sums, int nn, int leader,
                                      starfold__span_t dst, size_t *node)
{
    starfold_graph_t g = ar->g;
    const uint32_t divisor = g->op == STARFOLD_OP_MEAN ? (uint32_t)ar->n : 1;
    return starfold__graph_reduce_final(g, ar->acc, g->input_devices[leader], sums, (size_t)nn, dst, divisor, ar->tag, node);
}

/*
 * A node of one replica has no sum of its own: the other leaders read its input. Its output may be
 * that same handle (an in-place all-reduce), so its total goes to a temporary and is copied into the
 * output once every leader has read the input (the copy waits for each one's REDUCE).
 */
static starfold_status_t total_into_output(starfold__allreduce_t *ar, int k, int nn, const int *leader,
                                           const size_t *reads, starfold__span_t total)
{
    size_t node;
    starfold_status_t st = starfold__graph_copy(ar->g, STARFOLD_TASK_COPY, &total, 1, &ar->result[leader[k]], 1, ar->tag, &node);
    for (int j = 0; j < nn && st == STARFOLD_OK; j++)
        if (j != k) st = starfold__graph_add_dep(ar->g, reads[j], node);
    return st;
}

/* Step 3: the leader's result copied to every other member of node @k. */
static starfold_status_t node_broadcast(starfold__allreduce_t *ar, const starfold__nodes_t *nd, int k, int leader)
{
    starfold_status_t st = STARFOLD_OK;
    for (int i = nd->first[k]; i < nd->first[k + 1] && st == STARFOLD_OK; i++) {
        const int p = nd->member[i];
        if (p != leader)
            st = starfold__graph_copy(ar->g, STARFOLD_TASK_COPY, &ar->result[leader], 1, &ar->result[p], 1, ar->tag, NULL);
    }
    return st;
}

static starfold_status_t reduce_pack(starfold__allreduce_t *ar, void *self)
{
    starfold_status_t st = STARFOLD_OK;
    starfold_graph_t g = ar->g;
    const starfold__nodes_t *nd = self;
    const int nn = nd->count;
    int leader[STARFOLD_MAX_DEVICES], alone[STARFOLD_MAX_DEVICES];
    size_t reads[STARFOLD_MAX_DEVICES];
    starfold__span_t sums[STARFOLD_MAX_DEVICES], total[STARFOLD_MAX_DEVICES];
    for (int k = 0; k < nn && st == STARFOLD_OK; k++) {
        const int m = nd->first[k + 1] - nd->first[k];
        leader[k] = nd->member[nd->first[k] + (int)(ar->pack->index % (size_t)m)];
        alone[k] = m == 1 && nn > 1;
        st = node_sum(ar, nd, k, leader[k], &sums[k]);
    }
    for (int k = 0; k < nn && st == STARFOLD_OK; k++) {
        total[k] = ar->result[leader[k]];
        size_t t;
        if (alone[k] && (st = starfold__graph_add_temp(g, g->input_devices[leader[k]], g->bufs[total[k].buf].dtype,
                                                        total[k].count, ar->tag, &t)) == STARFOLD_OK)
            total[k] = starfold__whole(g, t);
        if (st == STARFOLD_OK) st = leader_total(ar, sums, nn, leader[k], total[k], &reads[k]);
    }
    for (int k = 0; k < nn && st == STARFOLD_OK; k++)
        if (alone[k]) st = total_into_output(ar, k, nn, leader, reads, total[k]);
    for (int k = 0; k < nn && st == STARFOLD_OK; k++) st = node_broadcast(ar, nd, k, leader[k]);
    return st;
}

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    static const starfold__allreduce_pattern_t pattern = { .reduce_pack = reduce_pack };
    return starfold__allreduce_by_nodes(g, options, &pattern);
}

const starfold__algorithm_t starfold__algo_leader = {
    .name = "leader",
    .description = "reduce onto one leader per node (socket), leaders exchange node sums directly, broadcast inside",
    .supports = STARFOLD__SUPPORTS_ALL_REDUCE,
    .options = STARFOLD_ALGO_OPTION_NUM_PACKS | STARFOLD_ALGO_OPTION_BYTES_PER_PACK,
    .build = build,
};
