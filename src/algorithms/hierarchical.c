/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * hierarchical: Horovod's hierarchical all-reduce and UCC's split-rail - reduce-scatter inside each
 * node, a ring all-reduce of each shard between the nodes, all-gather inside each node. Nodes are the
 * topology's sockets (nodes.c): the machines of a cluster or rank topology, a DGX-1's quads.
 *
 * A pack is cut into L shards, L = the most replicas any node has. Shard j of node k belongs to its
 * member j % m_k (m_k = the node's replicas; nodes of L replicas give every member one shard):
 *
 *      node 0: a0 a1 a2          node 1: b0 b1 b2            (L = 3, shard j on a_j and b_j)
 *   1  a0 <-- shard 0 of a1, a2   b0 <-- shard 0 of b1, b2    one REDUCE per shard and node (direct
 *      a1 <-- shard 1 of a0, a2   b1 <-- shard 1 of b0, b2    reduce-scatter: each member sends
 *      ...                                                    (m-1)/m of the pack, like a ring)
 *   2  a0 <--ring over nodes--> b0      (shard 0)             every shard's owners run one chunked
 *      a1 <--ring over nodes--> b1      (shard 1) ...         ring (starfold__ring_pass), in parallel
 *   3  a0 --shard 0--> a1, a2    b0 --shard 0--> b1, b2       each owner copies its shard's result
 *                                                             to the other members of its node
 *
 * Only L shards' worth of a pack crosses between nodes per member, so the network carries 2(N-1)/N of
 * S/L from each member (N nodes): every member's link out of the node is used, as with the flat ring,
 * but with 2(N-1) hops instead of 2(n-1). One node (N = 1): the reduce-scatter writes the results
 * (divided for MEAN) and the all-gather follows. Accumulation order: the node's members in position
 * order, then the ring's order over nodes; every replica receives the same bits (copies of one
 * result). Not an all-reduce -> reduce-to-one, broadcast -> the simple broadcast (compile.c).
 */
#include "config.h"

#include "algorithms/algorithms.h"
#include "base/common.h"

static starfold__span_t sub(starfold__span_t s, size_t off, size_t len)
{
    return starfold__span(s.buf, s.offset + off, len);
}

/* Step 1 for shard [s0, s0 + len) of node @k: its members' parts reduced on @owner, into a temporary
 * (several members) or read in place (one). */
static starfold_status_t node_reduce(starfold__allreduce_t *ar, const starfold__nodes_t *nd, int k, int owner,
                                     size_t s0, size_t len, starfold__span_t *part)
{
    starfold_graph_t g = ar->g;
    const int m = nd->first[k + 1] - nd->first[k];
    if (m == 1) {
        *part = sub(ar->have[owner], s0, len);
        return STARFOLD_OK;
    }
    starfold__span_t src[STARFOLD_MAX_DEVICES];
    for (int i = 0; i < m; i++) src[i] = sub(ar->have[nd->member[nd->first[k] + i]], s0, len);
    size_t t;
    starfold_status_t st = starfold__graph_add_temp(g, g->input_devices[owner], ar->pack->dtype, len, ar->tag, &t);
    if (st != STARFOLD_OK) return st;
    *part = starfold__whole(g, t);
    return starfold__graph_reduce(g, ar->acc, src, (size_t)m, *part, ar->tag, NULL);
}

/* Step 1 on one node: the reduction of every member's part is the result itself. */
static starfold_status_t node_reduce_final(starfold__allreduce_t *ar, const starfold__nodes_t *nd, int owner, size_t s0,
                                           size_t len, uint32_t divisor)
{
    starfold__span_t src[STARFOLD_MAX_DEVICES];
    const int m = nd->first[1];
    for (int i = 0; i < m; i++) src[i] = sub(ar->have[nd->member[i]], s0, len);
    return starfold__graph_reduce_final(ar->g, ar->acc, ar->g->input_devices[owner], src, (size_t)m,
                                        sub(ar->result[owner], s0, len), divisor, ar->tag, NULL);
}

/* Step 3 for node @k: the owner's result of the shard copied to every other member. */
static starfold_status_t node_gather(starfold__allreduce_t *ar, const starfold__nodes_t *nd, int k, int owner, size_t s0,
                                     size_t len)
{
    starfold_status_t st = STARFOLD_OK;
    const starfold__span_t from = sub(ar->result[owner], s0, len);
    for (int i = nd->first[k]; i < nd->first[k + 1] && st == STARFOLD_OK; i++) {
        const int p = nd->member[i];
        if (p == owner) continue;
        const starfold__span_t to = sub(ar->result[p], s0, len);
        st = starfold__graph_copy(ar->g, STARFOLD_TASK_COPY, &from, 1, &to, 1, ar->tag, NULL);
    }
    return st;
}

static starfold_status_t reduce_pack(starfold__allreduce_t *ar, void *self)
{
    starfold_status_t st = STARFOLD_OK;
    const starfold__nodes_t *nd = self;
    starfold_graph_t g = ar->g;
    const int nn = nd->count;
    const uint32_t divisor = g->op == STARFOLD_OP_MEAN ? (uint32_t)ar->n : 1;
    int shards = 0;
    for (int k = 0; k < nn; k++)
        if (nd->first[k + 1] - nd->first[k] > shards) shards = nd->first[k + 1] - nd->first[k];
    for (int j = 0; j < shards && st == STARFOLD_OK; j++) {
        const size_t s0 = starfold__part_start(ar->pack->count, (size_t)j, (size_t)shards),
                     len = starfold__part_start(ar->pack->count, (size_t)j + 1, (size_t)shards) - s0;
        if (!len) continue;
        int owner[STARFOLD_MAX_DEVICES], order[STARFOLD_MAX_DEVICES], dev[STARFOLD_MAX_DEVICES];
        starfold__span_t part[STARFOLD_MAX_DEVICES], res[STARFOLD_MAX_DEVICES];
        for (int k = 0; k < nn; k++) {
            const int m = nd->first[k + 1] - nd->first[k];
            owner[k] = nd->member[nd->first[k] + j % m];
            order[k] = k;
            dev[k] = g->input_devices[owner[k]];
            res[k] = sub(ar->result[owner[k]], s0, len);
        }
        if (nn == 1) {
            st = node_reduce_final(ar, nd, owner[0], s0, len, divisor);
        } else {
            for (int k = 0; k < nn && st == STARFOLD_OK; k++) st = node_reduce(ar, nd, k, owner[k], s0, len, &part[k]);
            const starfold__ring_pass_t rp = { .g = g, .acc = ar->acc, .n = nn, .order = order, .devices = dev,
                                               .have = part, .result = res, .divisor = divisor, .tag = ar->tag };
            if (st == STARFOLD_OK) st = starfold__ring_pass(&rp, 0, len);
        }
        for (int k = 0; k < nn && st == STARFOLD_OK; k++) st = node_gather(ar, nd, k, owner[k], s0, len);
    }
    return st;
}

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    static const starfold__allreduce_pattern_t pattern = { .reduce_pack = reduce_pack };
    return starfold__allreduce_by_nodes(g, options, &pattern);
}

const starfold__algorithm_t starfold__algo_hierarchical = {
    .name = "hierarchical",
    .description = "reduce-scatter inside each node (socket), a ring of each shard between nodes, all-gather inside",
    .supports = STARFOLD__SUPPORTS_ALL_REDUCE,
    .options = STARFOLD_ALGO_OPTION_NUM_PACKS | STARFOLD_ALGO_OPTION_BYTES_PER_PACK,
    .build = build,
};
