/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * halving-doubling: recursive halving reduce-scatter, then recursive doubling all-gather
 * (Thakur, Rabenseifner and Gropp 2005), log2(P) rounds each way.
 *
 * P = the largest power of two <= N. Replicas P..N-1 first fold into replicas 0..N-P-1 (a reduce on
 * the partner), and get the result copied back at the end; TensorFlow's version refuses N not a power
 * of two. Then, for distance d = P/2, P/4, ..., 1, each replica p and its partner p ^ d split the range
 * they share: the lower one keeps the lower half, reducing its partial with the partner's partial of
 * that half, the upper one the upper half:
 *
 *   P = 4, vector [ a | b | c | d ]
 *   d = 2:  0,2 exchange halves -> 0: [a b] of 0+2     2: [c d] of 0+2     (1,3 likewise)
 *   d = 1:  0,1 exchange        -> 0: [a] of all       1: [b] of all       2: [c]  3: [d]
 *   all-gather, d = 1 then 2: each copies the partner's finished range into its own output
 *
 * Each partial half is its own temporary, so every transfer moves exactly the half it needs.
 * Packing and the one-replica copy are the all-reduce driver's (allreduce_packs.c): this file reduces
 * one pack.
 */
#include "config.h"

#include "algorithms/algorithms.h"
#include "base/common.h"

typedef struct hd {
    int p2;                  /* the largest power of two <= n */
    starfold__span_t *part;  /* [n] current partial (range [lo, lo+count) of the pack) */
    size_t *lo;              /* [n] */
} hd_t;

/* A new temporary on replica @p's device holding the reduction of @a and @b. */
static starfold_status_t reduce_into_temp(const starfold__allreduce_t *ar, int p, starfold__span_t a, starfold__span_t b,
                                          starfold__span_t *out)
{
    size_t buf;
    starfold_status_t st = starfold__graph_add_temp(ar->g, ar->g->input_devices[p], ar->pack->dtype, a.count, ar->tag, &buf);
    if (st != STARFOLD_OK) return st;
    starfold__span_t srcs[2] = { a, b };
    *out = starfold__whole(ar->g, buf);
    return starfold__graph_reduce(ar->g, ar->acc, srcs, 2, *out, ar->tag, NULL);
}

/* The pattern: fold, halve, write the finished range, double, unfold. */
static starfold_status_t reduce_pack(starfold__allreduce_t *ar, void *self)
{
    starfold_status_t st = STARFOLD_OK;
    hd_t *h = self;
    starfold_graph_t g = ar->g;
    const int n = ar->n, p2 = h->p2, tag = ar->tag;
    for (int p = 0; p < n; p++) {
        h->part[p] = ar->have[p];
        h->lo[p] = 0;
    }
    /* Fold the replicas beyond the power of two into their partners. */
    for (int e = p2; e < n; e++)
        if ((st = reduce_into_temp(ar, e - p2, h->part[e - p2], ar->have[e], &h->part[e - p2])) != STARFOLD_OK)
            return st;

    /* Recursive halving: partials shrink to one P-th of the pack, each in its own temporary. */
    for (int d = p2 / 2; d >= 1; d /= 2) {
        starfold__span_t next[STARFOLD_MAX_DEVICES];
        size_t next_lo[STARFOLD_MAX_DEVICES];
        for (int p = 0; p < p2; p++) {
            const int q = p ^ d;
            const size_t len = h->part[p].count, half = len / 2;
            const int lower = (p & d) == 0;
            const size_t keep_off = lower ? 0 : half, keep_len = lower ? half : len - half;
            starfold__span_t mine = starfold__span(h->part[p].buf, h->part[p].offset + keep_off, keep_len);
            starfold__span_t theirs = starfold__span(h->part[q].buf, h->part[q].offset + keep_off, keep_len);
            next_lo[p] = h->lo[p] + keep_off;
            if (keep_len == 0) {
                next[p] = starfold__span(h->part[p].buf, h->part[p].offset + keep_off, 0);
                continue;
            }
            if ((st = reduce_into_temp(ar, p, mine, theirs, &next[p])) != STARFOLD_OK) return st;
        }
        for (int p = 0; p < p2; p++) {
            h->part[p] = next[p];
            h->lo[p] = next_lo[p];
        }
    }
    /* Each replica writes its finished range (scaled for MEAN). */
    for (int p = 0; p < p2; p++) {
        if (h->part[p].count == 0) continue;
        starfold__span_t to = starfold__span(ar->result[p].buf, ar->result[p].offset + h->lo[p], h->part[p].count);
        st = g->op == STARFOLD_OP_MEAN ? starfold__graph_scale(g, h->part[p], to, (uint32_t)n, tag, NULL)
                                       : starfold__graph_copy(g, STARFOLD_TASK_COPY, &h->part[p], 1, &to, 1, tag, NULL);
        if (st != STARFOLD_OK) return st;
    }
    /* Recursive doubling: copy the partner's finished ranges, which double every round. */
    size_t own_lo[STARFOLD_MAX_DEVICES], own_len[STARFOLD_MAX_DEVICES];
    for (int p = 0; p < p2; p++) {
        own_lo[p] = h->lo[p];
        own_len[p] = h->part[p].count;
    }
    for (int d = 1; d < p2; d *= 2) {
        for (int p = 0; p < p2; p++) {
            const int q = p ^ d;
            if (own_len[q] == 0) continue;
            starfold__span_t from = starfold__span(ar->result[q].buf, ar->result[q].offset + own_lo[q], own_len[q]);
            starfold__span_t to = starfold__span(ar->result[p].buf, ar->result[p].offset + own_lo[q], own_len[q]);
            if ((st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &from, 1, &to, 1, tag, NULL)) != STARFOLD_OK) return st;
        }
        for (int p = 0; p < p2; p++) { /* the pair's ranges are adjacent: merge them */
            const int q = p ^ d;
            if (p > q) continue;
            const size_t lo = own_lo[p] < own_lo[q] ? own_lo[p] : own_lo[q], len = own_len[p] + own_len[q];
            own_lo[p] = own_lo[q] = lo;
            own_len[p] = own_len[q] = len;
        }
    }
    /* The folded replicas get the whole result from their partners. */
    for (int e = p2; e < n; e++)
        if ((st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &ar->result[e - p2], 1, &ar->result[e], 1, tag, NULL)) != STARFOLD_OK)
            return st;
    return STARFOLD_OK;
}

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    static const starfold__allreduce_pattern_t pattern = { .reduce_pack = reduce_pack };
    starfold_status_t st;
    const int n = g->num_inputs;
    hd_t h = { 1, calloc((size_t)n, sizeof(starfold__span_t)), calloc((size_t)n, sizeof(size_t)) };
    while (h.p2 * 2 <= n) h.p2 *= 2;
    if (!h.part || !h.lo) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "halving-doubling: out of memory");
    else st = starfold__allreduce_packs(g, options, &pattern, &h);
    free(h.part);
    free(h.lo);
    return st;
}

const starfold__algorithm_t starfold__algo_halving_doubling = {
    .name = "halving-doubling",
    .description = "recursive halving reduce-scatter and doubling all-gather; other counts folded onto a power of two",
    .supports = STARFOLD__SUPPORTS_ALL_REDUCE,
    .options = STARFOLD_ALGO_OPTION_NUM_PACKS | STARFOLD_ALGO_OPTION_BYTES_PER_PACK,
    .build = build,
};
