/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * trees: reduce up and broadcast down several spanning trees at once, each carrying a share of the data.
 *
 * Trees come from the topology's bandwidths (src/patterns/tree_search.c): a maximum spanning tree
 * (Kruskal on link bandwidth) maximises the tree's bottleneck; its bottleneck b is taken off every one
 * of its links, and the next tree is built on what is left, while b stays at least half the first
 * tree's; without any spanning tree over direct links, a star on replica 0. Links are full duplex:
 * the reduce uses child -> parent, the broadcast parent -> child, so one tree uses b of each
 * direction. Each tree is rooted at its centre (the device of least height) and gets a share of every
 * pack in proportion to b, moved in rounds of bounded chunks so the broadcast of one round overlaps
 * the reduce of the next.
 *
 *          root                     reduce (post-order): a node adds its own data and its children's
 *         /    \                    partial sums, then sends up; the root scales for MEAN and writes
 *       v1      v2                  its result;
 *      /  \       \                 broadcast (pre-order): each node copies its parent's result.
 *    v3    v4      v5
 *
 * On a DGX-1 the minimum cut around a GPU is its degree, so such trees reach the reduce and broadcast
 * bounds in principle; with log-depth trees they also cut latency against a ring's 2(n-1) hops.
 * Packing is the all-reduce driver's (allreduce_packs.c), the fallbacks compile.c's, as for the other
 * all-reduce algorithms: this file reduces one pack.
 */
#include "config.h"

#include <math.h>

#include "algorithms/algorithms.h"
#include "base/common.h"
#include "patterns/patterns.h"
#include "topology/topology.h"

#define TREES_MAX 4
#define TREES_AUTO_CHUNK ((size_t)4 << 20)
#define TREES_AUTO_MAX_ROUNDS 8

typedef struct trees_state {
    const starfold__tree_t *trees;
    int ntrees;
} trees_state_t;

/* One reduce-then-broadcast of elements [lo, lo + len) of the pack over tree @t. */
static starfold_status_t tree_round(starfold__allreduce_t *ar, const starfold__tree_t *t, size_t lo, size_t len)
{
    starfold_status_t st;
    starfold_graph_t g = ar->g;
    const int n = ar->n, tag = ar->tag;
    const starfold_dtype_t dt = ar->pack->dtype;
    starfold__span_t partial[STARFOLD_MAX_DEVICES], srcs[STARFOLD_MAX_DEVICES];
    for (int k = n - 1; k >= 0; k--) { /* post-order: children first */
        const int v = t->order[k];
        int ns = 0;
        srcs[ns++] = starfold__span(ar->have[v].buf, ar->have[v].offset + lo, len);
        for (int u = 0; u < n; u++)
            if (t->parent[u] == v) srcs[ns++] = partial[u];
        const int root = t->parent[v] < 0;
        if (ns == 1 && !root) { /* a leaf sends its own data */
            partial[v] = srcs[0];
            continue;
        }
        starfold__span_t mine = starfold__span(ar->result[v].buf, ar->result[v].offset + lo, len);
        if (root && g->op != STARFOLD_OP_MEAN) { /* the root's sum is its result */
            if ((st = starfold__graph_reduce(g, ar->acc, srcs, (size_t)ns, mine, tag, NULL)) != STARFOLD_OK) return st;
            continue;
        }
        size_t buf;
        if ((st = starfold__graph_add_temp(g, g->input_devices[v], dt, len, tag, &buf)) != STARFOLD_OK) return st;
        partial[v] = starfold__whole(g, buf);
        if ((st = starfold__graph_reduce(g, ar->acc, srcs, (size_t)ns, partial[v], tag, NULL)) != STARFOLD_OK) return st;
        if (root && (st = starfold__graph_scale(g, partial[v], mine, (uint32_t)n, tag, NULL)) != STARFOLD_OK) return st;
    }
    for (int k = 1; k < n; k++) { /* pre-order: every node copies its parent's result */
        const int v = t->order[k], p = t->parent[v];
        starfold__span_t from = starfold__span(ar->result[p].buf, ar->result[p].offset + lo, len);
        starfold__span_t to = starfold__span(ar->result[v].buf, ar->result[v].offset + lo, len);
        if ((st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &from, 1, &to, 1, tag, NULL)) != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

/* The pattern: the pack's share of each tree, in rounds of bounded chunks. */
static starfold_status_t reduce_pack(starfold__allreduce_t *ar, void *self)
{
    starfold_status_t st;
    const trees_state_t *ts = self;
    const starfold__pack_t *pk = ar->pack;
    const size_t chunk_bytes = ar->options->chunk_bytes;
    double total_w = 0, acc_w = 0;
    for (int t = 0; t < ts->ntrees; t++) total_w += ts->trees[t].weight;
    const size_t es = starfold_dtype_size(pk->dtype);
    const size_t chunk = chunk_bytes ? chunk_bytes : TREES_AUTO_CHUNK;
    size_t lo = 0;
    for (int t = 0; t < ts->ntrees; t++) {
        acc_w += ts->trees[t].weight;
        const size_t hi = t == ts->ntrees - 1 ? pk->count : (size_t)llround((double)pk->count * acc_w / total_w);
        const size_t share = hi - lo;
        size_t rounds = (share * es + chunk - 1) / chunk;
        if (rounds < 1) rounds = 1;
        if (!chunk_bytes && rounds > TREES_AUTO_MAX_ROUNDS) rounds = TREES_AUTO_MAX_ROUNDS;
        /* Every round that moves anything reduces up the tree: at least n - 1 tasks (one alone). */
        const size_t per_round = ar->n > 1 ? (size_t)(ar->n - 1) : 1;
        if ((st = starfold__graph_reserve(ar->g, (share < rounds ? share : rounds) * per_round)) != STARFOLD_OK) return st;
        for (size_t k = 0; k < rounds; k++) {
            const size_t a = lo + starfold__part_start(share, k, rounds), b = lo + starfold__part_start(share, k + 1, rounds);
            if (b > a && (st = tree_round(ar, &ts->trees[t], a, b - a)) != STARFOLD_OK) return st;
        }
        lo = hi;
    }
    return STARFOLD_OK;
}

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    /* One replica is a tree too: its root reduces its own data into its result. */
    static const starfold__allreduce_pattern_t pattern = { .reduce_pack = reduce_pack, .reduces_single = 1 };
    starfold_status_t st = STARFOLD_OK;
    const int n = g->num_inputs;
    starfold__tree_t *trees = calloc(TREES_MAX, sizeof *trees);
    trees_state_t ts = { trees, 0 };
    double *bw = NULL;
    if (!trees) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "trees: out of memory");
        goto out;
    }
    SF_CHECK_GOTO(starfold__topology_bandwidths(g->topology, n, g->input_devices, &bw), st, out);
    if ((ts.ntrees = starfold__tree_search(n, bw, TREES_MAX, trees)) < 0) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "trees: out of memory");
        goto out;
    }
    st = starfold__allreduce_packs(g, options, &pattern, &ts);
out:
    free(trees);
    free(bw);
    return st;
}

const starfold__algorithm_t starfold__algo_trees = {
    .name = "trees",
    .description = "reduce up and broadcast down edge-disjoint maximum-bottleneck spanning trees, pipelined",
    .supports = STARFOLD__SUPPORTS_ALL_REDUCE,
    .options = STARFOLD_ALGO_OPTION_NUM_PACKS | STARFOLD_ALGO_OPTION_BYTES_PER_PACK | STARFOLD_ALGO_OPTION_CHUNK_BYTES,
    .build = build,
};
