/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * ring: chunked ring all-reduce (reduce-scatter, then all-gather) over several rings at once.
 *
 * Rings come from the topology's bandwidths (src/patterns/ring_search.c): Hamiltonian cycles of the
 * replicas' devices, found one after the other, each maximising its bottleneck bandwidth on what the
 * previous ones left of every link. Each
 * cycle is used in both directions (links are full duplex), so a cycle of bottleneck b gives two
 * logical rings of weight b, and every pack is split among the logical rings in proportion to their
 * weights. On a DGX-1 V100 that is the ring of doubled links 0-3-2-1-5-6-7-4 (50 GB/s) and the ring of
 * single links 0-1-3-7-5-4-6-2 (25 GB/s): 2 x 50 + 2 x 25 = 150 GB/s out of every GPU, its line rate.
 * On a DGX-1 P100 the cube-mesh splits into two rings of 20 GB/s: 80 GB/s, its line rate.
 *
 * One logical ring over ring positions 0..N-1, its share cut into N chunks; chunk j:
 *
 *   reduce-scatter: j -> j+1 -> ... -> j+N-1        (each hop: reduce(received, own) on the receiver;
 *                                                    the last one writes the owner's result, /N for MEAN)
 *   all-gather:     j+N-1 -> j -> ... -> j+N-2      (each hop copies the result on)
 *
 *      step 1          step 2                       step N-1       owner = j+N-1 (mod N)
 *   [j] ---> [j+1] reduce ---> [j+2] reduce ... ---> [j-1] reduce (/N) = out[j-1]
 *                                                        out[j-1] ---> out[j] ---> ... ---> out[j-2]
 *
 * Pipelining: a ring's share is moved in rounds, each an independent chunked ring over a slice, so the
 * additions of one round overlap the transfers of the next (chunk_bytes). Packing, the one-replica
 * copy and the results are the all-reduce driver's (allreduce_packs.c): this file reduces one pack.
 *
 * Every chunk's partial sums live in their own temporaries, so a transfer moves exactly one chunk.
 * Accumulation order: chunk j is summed in ring order starting at position j; every replica receives
 * the same bits (the all-gather copies one result). Not an all-reduce (destinations other than the
 * sources) -> reduce-to-one, broadcast -> the simple broadcast, as TensorFlow's all-reduce ops do
 * (compile.c, for every algorithm that supports only all-reduces). A gather collective's all-gather
 * runs around the same rings (build_all_gather()); a gather to other devices is the direct gather.
 */
#include "config.h"

#include <math.h>

#include "algorithms/algorithms.h"
#include "base/common.h"
#include "patterns/patterns.h"
#include "topology/topology.h"

#define RING_MAX_CYCLES 4
#define RING_AUTO_CHUNK ((size_t)5 << 19) /* 2.5 MiB */
#define RING_AUTO_MAX_ROUNDS 16

typedef struct ring_state {
    const starfold__ring_t *rings; /* the cycles; logical ring r runs cycle r / 2, odd ones backwards */
    int nlogical;
    size_t *chain;                 /* [n chunks x 2n hops] the previous round's task of each hop (wavefront) */
} ring_state_t;

/*
 * Rounds of one logical ring form a wavefront: hop h of chunk j in round k waits for hop h of chunk j
 * in round k-1 (@chain holds, per chunk and hop, the task of the previous round, or (size_t)-1). Each
 * link then carries one round after the other, and a round's transfers overlap the previous round's
 * additions instead of all rounds sharing the links and then all adding at once. No chain (NULL):
 * the data alone orders the hops.
 */
static starfold_status_t chain_after(starfold_graph_t g, size_t *chain, size_t node)
{
    starfold_status_t st = STARFOLD_OK;
    if (!chain) return st;
    if (*chain != (size_t)-1) st = starfold__graph_add_dep(g, *chain, node);
    *chain = node;
    return st;
}

/* Hop @s of chunk @j in the wavefront (reduce-scatter hops 1..n-1, all-gather hops n+1..2n-1). */
static size_t *chain_at(const starfold__ring_pass_t *rp, int j, int s)
{
    return rp->chain ? &rp->chain[(size_t)j * 2 * rp->n + s] : NULL;
}

/* One chunked ring over elements [lo, lo + count) of every position's operand (algorithms.h). */
starfold_status_t starfold__ring_pass(const starfold__ring_pass_t *rp, size_t lo, size_t count)
{
    starfold_status_t st;
    starfold_graph_t g = rp->g;
    const int n = rp->n, tag = rp->tag;
    const int *order = rp->order;
    const starfold_dtype_t dt = g->bufs[rp->have[order[0]].buf].dtype;
    size_t node;
    for (int j = 0; j < n; j++) {
        const size_t c0 = lo + starfold__part_start(count, (size_t)j, (size_t)n),
                     c1 = lo + starfold__part_start(count, (size_t)(j + 1), (size_t)n);
        if (c1 == c0) continue;
        const size_t len = c1 - c0;
        /*
         * reduce-scatter: hop s lands on ring position j+s; the last hop reduces straight into the
         * owner's result (MEAN divided in the same task, or through a SCALE for a promoted MEAN), so
         * no copy follows it.
         */
        const int owner = order[(j + n - 1) % n];
        const starfold__span_t mine = starfold__span(rp->result[owner].buf, rp->result[owner].offset + c0, len);
        starfold__span_t partial = starfold__span(rp->have[order[j]].buf, rp->have[order[j]].offset + c0, len);
        for (int s = 1; s < n; s++) {
            const int p = order[(j + s) % n];
            starfold__span_t srcs[2] = { partial, starfold__span(rp->have[p].buf, rp->have[p].offset + c0, len) };
            if (s == n - 1) {
                st = starfold__graph_reduce_final(g, rp->acc, rp->devices[p], srcs, 2, mine, rp->divisor, tag, &node);
            } else {
                size_t tbuf;
                if ((st = starfold__graph_add_temp(g, rp->devices[p], dt, len, tag, &tbuf)) != STARFOLD_OK) return st;
                partial = starfold__whole(g, tbuf);
                st = starfold__graph_reduce_n(g, rp->acc, srcs, 2, &partial, 1, 1, tag, &node);
            }
            if (st != STARFOLD_OK || (st = chain_after(g, chain_at(rp, j, s), node)) != STARFOLD_OK) return st;
        }
        const int at = (j + n - 1) % n;
        /* all-gather: each next position copies from the previous one's result */
        starfold__span_t from = mine;
        for (int s = 1; s < n; s++) {
            const int p = order[(at + s) % n];
            starfold__span_t to = starfold__span(rp->result[p].buf, rp->result[p].offset + c0, len);
            if ((st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &from, 1, &to, 1, tag, &node)) != STARFOLD_OK ||
                (st = chain_after(g, chain_at(rp, j, n + s), node)) != STARFOLD_OK)
                return st;
            from = to;
        }
    }
    return STARFOLD_OK;
}

/* One round of logical ring @order over elements [lo, lo + count) of the pack: the replicas' ring. */
static starfold_status_t ring_round(starfold__allreduce_t *ar, const int *order, size_t lo, size_t count, size_t *chain)
{
    const starfold__ring_pass_t rp = { .g = ar->g, .acc = ar->acc, .n = ar->n, .order = order,
                                       .devices = ar->g->input_devices, .have = ar->have, .result = ar->result,
                                       .divisor = ar->g->op == STARFOLD_OP_MEAN ? (uint32_t)ar->n : 1,
                                       .tag = ar->tag, .chain = chain };
    return starfold__ring_pass(&rp, lo, count);
}

/* The pattern: the pack's share of each logical ring, in rounds of bounded chunks. */
static starfold_status_t reduce_pack(starfold__allreduce_t *ar, void *self)
{
    starfold_status_t st;
    const ring_state_t *rs = self;
    const starfold__ring_t *rings = rs->rings;
    const starfold__pack_t *pk = ar->pack;
    const int n = ar->n, nlogical = rs->nlogical;
    double total_w = 0;
    for (int r = 0; r < nlogical; r++) total_w += rings[r / 2].weight;
    const size_t es = starfold_dtype_size(pk->dtype);
    const size_t chunk = ar->options->chunk_bytes ? ar->options->chunk_bytes : RING_AUTO_CHUNK;
    /*
     * Rounds: as many as the largest share needs for chunks of at most `chunk` bytes, the same for
     * every logical ring, so the rings advance in step (each moves its share in equal slices; a ring
     * of half the bandwidth moves half the bytes per round). Measured in the model on the DGX-1 V100 at
     * 256 MiB: equal rounds 144.6 GB/s busbw, rounds per ring 139.7.
     */
    size_t max_share = 0;
    for (int r = 0; r < nlogical; r++) {
        const double w = rings[r / 2].weight / total_w;
        const size_t share = (size_t)llround((double)pk->count * w) + 1;
        if (share > max_share) max_share = share;
    }
    size_t rounds = (max_share * es + (size_t)n * chunk - 1) / ((size_t)n * chunk);
    if (rounds < 1) rounds = 1;
    if (!ar->options->chunk_bytes && rounds > RING_AUTO_MAX_ROUNDS) rounds = RING_AUTO_MAX_ROUNDS;
    /*
     * A lower bound of the tasks below, so a hopeless chunk size fails before anything is built: a
     * round of len elements has min(len, n) chunks that move, each in n - 1 hops of a task each.
     */
    size_t at_least = 0;
    for (int r = 0; r < nlogical; r++) {
        size_t share = (size_t)((double)pk->count * rings[r / 2].weight / total_w);
        share = share ? share - 1 : 0; /* below the share the loop below gives this ring, whatever the rounding */
        const size_t moving = share < rounds ? share : rounds, len = share / rounds;
        at_least += moving * (len < (size_t)n ? (len ? len : 1) : (size_t)n) * (size_t)(n - 1);
    }
    if ((st = starfold__graph_reserve(ar->g, at_least)) != STARFOLD_OK) return st;
    size_t lo = 0;
    double acc_w = 0;
    for (int r = 0; r < nlogical; r++) {
        acc_w += rings[r / 2].weight;
        const size_t hi = r == nlogical - 1 ? pk->count : (size_t)llround((double)pk->count * acc_w / total_w);
        const size_t share = hi - lo;
        /* odd logical rings run the cycle backwards */
        int order[STARFOLD_MAX_DEVICES];
        for (int i = 0; i < n; i++) order[i] = r % 2 ? rings[r / 2].order[(n - i) % n] : rings[r / 2].order[i];
        for (size_t c = 0; c < (size_t)(2 * n * n); c++) rs->chain[c] = (size_t)-1;
        for (size_t k = 0; k < rounds; k++) {
            const size_t a = lo + starfold__part_start(share, k, rounds), b = lo + starfold__part_start(share, k + 1, rounds);
            if (b > a && (st = ring_round(ar, order, a, b - a, rs->chain)) != STARFOLD_OK) return st;
        }
        lo = hi;
    }
    return STARFOLD_OK;
}

/*
 * All-gather (a gather whose destinations are its sources): each block travels around every logical
 * ring, each ring carrying its share of every block (shares in proportion to the rings' weights).
 * On one logical ring of positions order[0..n-1], the block of the source at ring index i:
 *
 *   its own output        input(i) ---copy---> out(i)[block i]
 *   step 1                input(i) ---> out(i+1)[block i]          (over the link i -> i+1)
 *   step k = 2 .. n-1     out(i+k-1)[block i] ---> out(i+k)[block i]
 *
 * Blocks may differ in size (source_counts): each is shared among the rings by its own count. For
 * MEAN the own copy divides (a SCALE) and step 1 forwards that result instead of the input.
 *
 * so every link of the ring carries one share of one block per step, n - 1 steps in all, and the
 * steps of different blocks run at once. Dependencies follow from the data (each step reads what the
 * previous one wrote).
 */
static starfold_status_t gather_share(starfold_graph_t g, const int *order, int backwards, size_t t, int p, size_t lo,
                                      size_t hi)
{
    const int n = g->num_inputs;
    int i = 0; /* p's index on the ring */
    while (i < n - 1 && order[i] != p) i++;
    const size_t block = starfold__gather_offset(g, p, t) + lo;
    const starfold__span_t in = starfold__span(starfold__graph_input(g, p, t), lo, hi - lo);
    const int own = starfold__graph_output_slot_on(g, g->input_devices[p]);
    /* Out of the source: divided there for MEAN, so every later hop copies the final values. */
    starfold_status_t st = starfold__gather_first_copy(g, in, starfold__span(starfold__graph_output(g, own, t), block, hi - lo),
                                                       (int)t);
    int prev = own;
    for (int k = 1; k < n && st == STARFOLD_OK; k++) {
        const int q = order[((backwards ? i - k : i + k) % n + n) % n];
        const int slot = starfold__graph_output_slot_on(g, g->input_devices[q]);
        const starfold__span_t dst = starfold__span(starfold__graph_output(g, slot, t), block, hi - lo);
        if (k == 1 && g->op != STARFOLD_OP_MEAN) /* step 1 reads the input: no wait for the own copy */
            st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &in, 1, &dst, 1, (int)t, NULL);
        else {
            const starfold__span_t src = starfold__span(starfold__graph_output(g, prev, t), block, hi - lo);
            st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &src, 1, &dst, 1, (int)t, NULL);
        }
        prev = slot;
    }
    return st;
}

static starfold_status_t build_all_gather(starfold_graph_t g, const ring_state_t *rs)
{
    const int n = g->num_inputs;
    double total = 0;
    for (int r = 0; r < rs->nlogical; r++) total += rs->rings[r / 2].weight;
    starfold_status_t st = STARFOLD_OK;
    for (size_t t = 0; t < g->num_tensors && st == STARFOLD_OK; t++)
        for (int p = 0; p < n && st == STARFOLD_OK; p++) {
            const size_t c = starfold__source_count(g, p, t);
            if (c == 0) continue;
            if (n == 1) { /* nothing to exchange: the input is the output */
                st = starfold__gather_first_copy(g, starfold__whole(g, starfold__graph_input(g, 0, t)),
                                                 starfold__whole(g, starfold__graph_output(g, 0, t)), (int)t);
                continue;
            }
            /* Ring r carries [lo, hi) of the block: cumulative weights, the last ring up to c. */
            double acc = 0;
            size_t lo = 0;
            for (int r = 0; r < rs->nlogical && st == STARFOLD_OK; r++) {
                acc += rs->rings[r / 2].weight;
                const size_t hi = r == rs->nlogical - 1 ? c : (size_t)((double)c * (acc / total));
                if (hi > lo) st = gather_share(g, rs->rings[r / 2].order, r % 2, t, p, lo, hi);
                lo = hi > lo ? hi : lo;
            }
        }
    return st;
}

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    static const starfold__allreduce_pattern_t pattern = { .reduce_pack = reduce_pack };
    starfold_status_t st = STARFOLD_OK;
    const int n = g->num_inputs, max = options->num_rings ? options->num_rings : 2;
    starfold__ring_t *rings = calloc((size_t)max, sizeof *rings);
    ring_state_t rs = { rings, 0, calloc((size_t)(2 * n * n), sizeof(size_t)) };
    double *bw = NULL;
    if (!rings || !rs.chain) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "ring: out of memory");
        goto out;
    }
    if (n > 1) { /* one replica: the driver's copy, no ring */
        SF_CHECK_GOTO(starfold__topology_bandwidths(g->topology, n, g->input_devices, &bw), st, out);
        rs.nlogical = 2 * starfold__ring_search(n, bw, max, rings);
    }
    st = g->kind == STARFOLD_COLL_GATHER ? build_all_gather(g, &rs) : starfold__allreduce_packs(g, options, &pattern, &rs);
out:
    free(rings);
    free(rs.chain);
    free(bw);
    return st;
}

const starfold__algorithm_t starfold__algo_ring = {
    .name = "ring",
    .description = "chunked ring all-reduce over the topology's edge-disjoint rings, both directions, pipelined",
    .supports = STARFOLD__SUPPORTS_ALL_REDUCE | STARFOLD__SUPPORTS_ALL_GATHER,
    .options = STARFOLD_ALGO_OPTION_NUM_PACKS | STARFOLD_ALGO_OPTION_BYTES_PER_PACK | STARFOLD_ALGO_OPTION_CHUNK_BYTES |
               STARFOLD_ALGO_OPTION_NUM_RINGS,
    .max_rings = RING_MAX_CYCLES,
    .build = build,
};
