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
 * Inside a node whose links are not a full mesh of one speed (a DGX-1 of 8 GPUs, whose pairs without
 * NVLink would carry the direct steps at PCIe speed), steps 1 and 3 go round the node's rings instead,
 * once a shard is large enough for their bandwidth to repay their hops (node_rings()): both
 * directions of up to two cycles of ring_search(), each carrying its weight's share of every shard,
 * as ring.c does on one machine. For the shard of owner o, each ring's piece starts at the member
 * after o and is summed hop by hop round the ring into o; step 3 copies it on round the same ring:
 *
 *   ring a0 -> a1 -> a2 -> a3 -> a0, owner a0:   1  a1 --> a2 (+) --> a3 (+) --> a0 (+)
 *                                                3  a0 --> a1 --> a2 --> a3
 *
 * so every byte inside the node moves over a ring link and each link carries (m-1)/m of its ring's
 * share, the reduce-scatter's bound on those links.
 *
 * Only L shards' worth of a pack crosses between nodes per member, so the network carries 2(N-1)/N of
 * S/L from each member (N nodes): every member's link out of the node is used, as with the flat ring,
 * but with 2(N-1) hops instead of 2(n-1). One node (N = 1): the reduce-scatter writes the results
 * (divided for MEAN) and the all-gather follows. Accumulation order: the node's members in position
 * order (round a ring: from the owner's successor round to the owner), then the ring's order over
 * nodes; every replica receives the same bits (copies of one result). Not an all-reduce ->
 * reduce-to-one, broadcast -> the simple broadcast (compile.c).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "algorithms/algorithms.h"
#include "base/common.h"
#include "patterns/patterns.h"
#include "topology/topology.h"

#define HIER_MAX_CYCLES 2 /* inside a node: both directions of up to 2 cycles, as ring.c */

/*
 * The nodes (members in position order), and for each node whose links are not a full mesh of one
 * speed (a DGX-1 of 8 GPUs: pairs without NVLink) the logical rings its steps 1 and 3 go round:
 * cycle c = l / 2 of ring_search(), backwards for odd l, each carrying its weight's share of every
 * shard. A full mesh (a DGX-1 quad, the ranks of one machine) keeps the direct steps, one hop each.
 */
typedef struct hier {
    starfold__nodes_t nd;
    int nlogical[STARFOLD_MAX_DEVICES];                      /* node k: 0 = direct steps */
    int pos[2 * HIER_MAX_CYCLES][STARFOLD_MAX_DEVICES];      /* [l][first[k] + i]: member index at position i */
    int at[2 * HIER_MAX_CYCLES][STARFOLD_MAX_DEVICES];       /* [l][first[k] + j]: position of member index j */
    double share[STARFOLD_MAX_DEVICES][2 * HIER_MAX_CYCLES]; /* node k: cumulative weight after ring l, of 1 */
    double ring_bytes[STARFOLD_MAX_DEVICES];                 /* node k: the rings from shards of this size up */
} hier_t;

/* Whether node @k's steps go round its rings for a shard of @bytes (else direct). */
static int rings_for(const hier_t *h, int k, size_t bytes)
{
    return h->nlogical[k] && (double)bytes >= h->ring_bytes[k];
}

static starfold__span_t sub(starfold__span_t s, size_t off, size_t len)
{
    return starfold__span(s.buf, s.offset + off, len);
}

/* Node @k's ring @l carries elements [*lo, *hi) of a shard of @len (cumulative weights). */
static void ring_piece(const hier_t *h, int k, int l, size_t len, size_t *lo, size_t *hi)
{
    *lo = l ? (size_t)((double)len * h->share[k][l - 1]) : 0;
    *hi = l == h->nlogical[k] - 1 ? len : (size_t)((double)len * h->share[k][l]);
    if (*hi < *lo) *hi = *lo;
}

/*
 * Step 1 round node @k's logical ring @l for elements [s0, s0 + len) of the shard whose owner is
 * member index @oi: the part of the member after the owner goes to the next, which adds its own, and
 * so on round the ring to the owner, every hop over a ring link; the last hop reduces into @dst (the
 * owner's temporary, or on one node the result itself, @divisor for MEAN).
 *
 *   ring a0 -> a1 -> a2 -> a3 -> a0, owner a0:   a1 --> a2 (+) --> a3 (+) --> a0 (+) = dst
 */
static starfold_status_t ring_reduce(starfold__allreduce_t *ar, const hier_t *h, int k, int l, int oi, size_t s0,
                                     size_t len, starfold__span_t dst, uint32_t divisor)
{
    starfold_graph_t g = ar->g;
    const starfold__nodes_t *nd = &h->nd;
    const int f = nd->first[k], m = nd->first[k + 1] - f, p0 = h->at[l][f + oi];
    const int *pos = &h->pos[l][f];
    starfold__span_t partial = sub(ar->have[nd->member[f + pos[(p0 + 1) % m]]], s0, len);
    starfold_status_t st = STARFOLD_OK;
    for (int s = 2; s <= m && st == STARFOLD_OK; s++) {
        const int p = nd->member[f + pos[(p0 + s) % m]];
        const starfold__span_t srcs[2] = { partial, sub(ar->have[p], s0, len) };
        if (s == m) return starfold__graph_reduce_final(g, ar->acc, g->input_devices[p], srcs, 2, dst, divisor, ar->tag, NULL);
        size_t t;
        if ((st = starfold__graph_add_temp(g, g->input_devices[p], ar->pack->dtype, len, ar->tag, &t)) != STARFOLD_OK) break;
        partial = starfold__whole(g, t);
        st = starfold__graph_reduce_n(g, ar->acc, srcs, 2, &partial, 1, 1, ar->tag, NULL);
    }
    return st;
}

/* Step 1 of node @k by its rings: every ring's piece of the shard into its piece of @dst. */
static starfold_status_t rings_reduce(starfold__allreduce_t *ar, const hier_t *h, int k, int oi, size_t s0, size_t len,
                                      starfold__span_t dst, uint32_t divisor)
{
    starfold_status_t st = STARFOLD_OK;
    for (int l = 0; l < h->nlogical[k] && st == STARFOLD_OK; l++) {
        size_t lo, hi;
        ring_piece(h, k, l, len, &lo, &hi);
        if (hi > lo) st = ring_reduce(ar, h, k, l, oi, s0 + lo, hi - lo, sub(dst, lo, hi - lo), divisor);
    }
    return st;
}

/* Step 1 for shard [s0, s0 + len) of node @k: its members' parts reduced on @owner (member index
 * @oi), into a temporary (several members) or read in place (one). */
static starfold_status_t node_reduce(starfold__allreduce_t *ar, const hier_t *h, int k, int oi, int owner, size_t s0,
                                     size_t len, starfold__span_t *part)
{
    starfold_graph_t g = ar->g;
    const starfold__nodes_t *nd = &h->nd;
    const int m = nd->first[k + 1] - nd->first[k];
    if (m == 1) {
        *part = sub(ar->have[owner], s0, len);
        return STARFOLD_OK;
    }
    if (rings_for(h, k, len * starfold_dtype_size(ar->pack->dtype))) {
        size_t t;
        starfold_status_t st = starfold__graph_add_temp(g, g->input_devices[owner], ar->pack->dtype, len, ar->tag, &t);
        if (st != STARFOLD_OK) return st;
        *part = starfold__whole(g, t);
        return rings_reduce(ar, h, k, oi, s0, len, *part, 1);
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
static starfold_status_t node_reduce_final(starfold__allreduce_t *ar, const hier_t *h, int oi, int owner, size_t s0,
                                           size_t len, uint32_t divisor)
{
    const starfold__nodes_t *nd = &h->nd;
    if (rings_for(h, 0, len * starfold_dtype_size(ar->pack->dtype)))
        return rings_reduce(ar, h, 0, oi, s0, len, sub(ar->result[owner], s0, len), divisor);
    starfold__span_t src[STARFOLD_MAX_DEVICES];
    const int m = nd->first[1];
    for (int i = 0; i < m; i++) src[i] = sub(ar->have[nd->member[i]], s0, len);
    return starfold__graph_reduce_final(ar->g, ar->acc, ar->g->input_devices[owner], src, (size_t)m,
                                        sub(ar->result[owner], s0, len), divisor, ar->tag, NULL);
}

/* Step 3 round node @k's rings: each ring's piece of the owner's result copied on from member to
 * member, starting after the owner (member index @oi). */
static starfold_status_t rings_gather(starfold__allreduce_t *ar, const hier_t *h, int k, int oi, int owner, size_t s0,
                                      size_t len)
{
    const starfold__nodes_t *nd = &h->nd;
    const int f = nd->first[k], m = nd->first[k + 1] - f;
    starfold_status_t st = STARFOLD_OK;
    for (int l = 0; l < h->nlogical[k] && st == STARFOLD_OK; l++) {
        size_t lo, hi;
        ring_piece(h, k, l, len, &lo, &hi);
        if (hi == lo) continue;
        const int p0 = h->at[l][f + oi];
        starfold__span_t from = sub(ar->result[owner], s0 + lo, hi - lo);
        for (int s = 1; s < m && st == STARFOLD_OK; s++) {
            const starfold__span_t to = sub(ar->result[nd->member[f + h->pos[l][f + (p0 + s) % m]]], s0 + lo, hi - lo);
            st = starfold__graph_copy(ar->g, STARFOLD_TASK_COPY, &from, 1, &to, 1, ar->tag, NULL);
            from = to;
        }
    }
    return st;
}

/* Step 3 for node @k: the owner's (member index @oi) result of the shard copied to every other member. */
static starfold_status_t node_gather(starfold__allreduce_t *ar, const hier_t *h, int k, int oi, int owner, size_t s0,
                                     size_t len)
{
    const starfold__nodes_t *nd = &h->nd;
    if (rings_for(h, k, len * starfold_dtype_size(ar->pack->dtype))) return rings_gather(ar, h, k, oi, owner, s0, len);
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
    const hier_t *h = self;
    const starfold__nodes_t *nd = &h->nd;
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
        int owner[STARFOLD_MAX_DEVICES], oi[STARFOLD_MAX_DEVICES], order[STARFOLD_MAX_DEVICES], dev[STARFOLD_MAX_DEVICES];
        starfold__span_t part[STARFOLD_MAX_DEVICES], res[STARFOLD_MAX_DEVICES];
        for (int k = 0; k < nn; k++) {
            const int m = nd->first[k + 1] - nd->first[k];
            oi[k] = j % m;
            owner[k] = nd->member[nd->first[k] + oi[k]];
            order[k] = k;
            dev[k] = g->input_devices[owner[k]];
            res[k] = sub(ar->result[owner[k]], s0, len);
        }
        if (nn == 1) {
            st = node_reduce_final(ar, h, oi[0], owner[0], s0, len, divisor);
        } else {
            for (int k = 0; k < nn && st == STARFOLD_OK; k++) st = node_reduce(ar, h, k, oi[k], owner[k], s0, len, &part[k]);
            const starfold__ring_pass_t rp = { .g = g, .acc = ar->acc, .n = nn, .order = order, .devices = dev,
                                               .have = part, .result = res, .divisor = divisor, .tag = ar->tag };
            if (st == STARFOLD_OK) st = starfold__ring_pass(&rp, 0, len);
        }
        for (int k = 0; k < nn && st == STARFOLD_OK; k++) st = node_gather(ar, h, k, oi[k], owner[k], s0, len);
    }
    return st;
}

/*
 * Node @k's logical rings (hier_t), when some pair of its members is slower than its best cycle; a
 * node of 2 (one link), a full mesh of one speed, or one past ring_search()'s size keeps the direct
 * steps.
 */
static starfold_status_t node_rings(starfold_graph_t g, hier_t *h, int k)
{
    const int f = h->nd.first[k], m = h->nd.first[k + 1] - f;
    if (m < 3 || m > STARFOLD__RING_SEARCH_MAX) return STARFOLD_OK;
    int devs[STARFOLD__RING_SEARCH_MAX];
    for (int i = 0; i < m; i++) devs[i] = g->input_devices[h->nd.member[f + i]];
    double *bw = NULL;
    starfold_status_t st = starfold__topology_bandwidths(g->topology, m, devs, &bw);
    if (st != STARFOLD_OK) return st;
    double slowest = INFINITY;
    for (int a = 0; a < m; a++)
        for (int b = 0; b < m; b++)
            if (a != b && bw[a * m + b] < slowest) slowest = bw[a * m + b];
    starfold__ring_t rings[HIER_MAX_CYCLES];
    const int nc = starfold__ring_search(m, bw, HIER_MAX_CYCLES, rings);
    free(bw);
    if (!(rings[0].weight > slowest)) return STARFOLD_OK;
    double total = 0, acc = 0;
    for (int c = 0; c < nc; c++) total += 2 * rings[c].weight;
    /*
     * From which shard size the rings win. A hop costs h (a task's overhead and the slowest latency
     * among the node's links); a shard of B bytes takes about h + B / slowest directly (the owner
     * reads every part at once, the slowest link last) and (m - 1)(h + B / total) round the rings
     * (m - 1 dependent hops, each ring carrying its share): rings from B = (m - 2) h / (1 / slowest -
     * (m - 1) / total) up, never when the rings' bandwidth cannot make up for their hops.
     */
    starfold_cost_params_t cp;
    starfold_topology_cost_params(g->topology, &cp);
    double lat = 0;
    for (int i = 0; i < starfold_topology_num_links(g->topology); i++) {
        starfold_link_t ln;
        if (starfold_topology_link(g->topology, i, &ln) != STARFOLD_OK) continue;
        int in_a = 0, in_b = 0;
        for (int x = 0; x < m; x++) in_a |= ln.a == devs[x], in_b |= ln.b == devs[x];
        if (in_a && in_b && ln.latency_us > lat) lat = ln.latency_us;
    }
    const double gain_us_per_byte = 1.0 / (slowest * 1e3) - (double)(m - 1) / (total * 1e3);
    if (!(slowest > 0) || !(gain_us_per_byte > 0)) return STARFOLD_OK;
    h->ring_bytes[k] = (double)(m - 2) * (cp.task_overhead_us + lat) / gain_us_per_byte;
    h->nlogical[k] = 2 * nc;
    for (int l = 0; l < 2 * nc; l++) {
        for (int i = 0; i < m; i++) {
            const int j = rings[l / 2].order[l % 2 ? (m - i) % m : i];
            h->pos[l][f + i] = j;
            h->at[l][f + j] = i;
        }
        acc += rings[l / 2].weight;
        h->share[k][l] = acc / total;
    }
    return STARFOLD_OK;
}

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    static const starfold__allreduce_pattern_t pattern = { .reduce_pack = reduce_pack };
    hier_t *h = calloc(1, sizeof *h);
    if (!h) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "hierarchical: out of memory");
    starfold__graph_nodes(g, &h->nd);
    starfold_status_t st = STARFOLD_OK;
    for (int k = 0; k < h->nd.count && st == STARFOLD_OK; k++) st = node_rings(g, h, k);
    if (st == STARFOLD_OK) st = starfold__allreduce_packs(g, options, &pattern, h);
    free(h);
    return st;
}

const starfold__algorithm_t starfold__algo_hierarchical = {
    .name = "hierarchical",
    .description = "reduce-scatter inside each node (socket), a ring of each shard between nodes, all-gather inside",
    .supports = STARFOLD__SUPPORTS_ALL_REDUCE,
    .options = STARFOLD_ALGO_OPTION_NUM_PACKS | STARFOLD_ALGO_OPTION_BYTES_PER_PACK,
    .build = build,
};
