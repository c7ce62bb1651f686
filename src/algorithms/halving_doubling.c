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
 * Packing as hierarchical copy (num_packs / bytes_per_pack; single-tensor packs in place).
 */
#include "config.h"

#include "algorithms/algorithms.h"
#include "base/common.h"

typedef struct hd {
    starfold_graph_t g;
    int n, p2;
    int *out_slot;    /* [n] */
    starfold__span_t *have;  /* [n] pack data of each replica */
    starfold__span_t *dest;  /* [n] result of each replica */
    starfold__span_t *part;  /* [n] current partial (range [lo, lo+count) of the pack) */
    size_t *lo;       /* [n] */
    starfold_op_t acc;
} hd_t;

/* A new temporary on replica @p's device holding the reduction of @a and @b. */
static starfold_status_t reduce_into_temp(hd_t *h, int p, starfold__span_t a, starfold__span_t b, starfold_dtype_t dt, int tag,
                                          starfold__span_t *out)
{
    size_t buf;
    starfold_status_t st = starfold__graph_add_temp(h->g, h->g->input_devices[p], dt, a.count, tag, &buf);
    if (st != STARFOLD_OK) return st;
    starfold__span_t srcs[2] = { a, b };
    *out = starfold__whole(h->g, buf);
    return starfold__graph_reduce(h->g, h->acc, srcs, 2, *out, tag, NULL);
}

static starfold_status_t build_pack(hd_t *h, const starfold__pack_plan_t *plan, const starfold__pack_t *pk)
{
    starfold_status_t st = STARFOLD_OK;
    starfold_graph_t g = h->g;
    const int n = h->n, p2 = h->p2, tag = (int)pk->index;
    for (int p = 0; p < n; p++) {
        if ((st = starfold__pack_gather(g, pk, p, &h->have[p])) != STARFOLD_OK ||
            (st = starfold__pack_result(g, pk, p, h->out_slot[p], &h->dest[p])) != STARFOLD_OK)
            return st;
        h->part[p] = h->have[p];
        h->lo[p] = 0;
    }
    /* Fold the replicas beyond the power of two into their partners. */
    for (int e = p2; e < n; e++)
        if ((st = reduce_into_temp(h, e - p2, h->part[e - p2], h->have[e], pk->dtype, tag, &h->part[e - p2])) != STARFOLD_OK)
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
            if ((st = reduce_into_temp(h, p, mine, theirs, pk->dtype, tag, &next[p])) != STARFOLD_OK) return st;
        }
        for (int p = 0; p < p2; p++) {
            h->part[p] = next[p];
            h->lo[p] = next_lo[p];
        }
    }
    /* Each replica writes its finished range (scaled for MEAN). */
    for (int p = 0; p < p2; p++) {
        if (h->part[p].count == 0) continue;
        starfold__span_t to = starfold__span(h->dest[p].buf, h->dest[p].offset + h->lo[p], h->part[p].count);
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
            starfold__span_t from = starfold__span(h->dest[q].buf, h->dest[q].offset + own_lo[q], own_len[q]);
            starfold__span_t to = starfold__span(h->dest[p].buf, h->dest[p].offset + own_lo[q], own_len[q]);
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
        if ((st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &h->dest[e - p2], 1, &h->dest[e], 1, tag, NULL)) != STARFOLD_OK)
            return st;

    for (int p = 0; p < n; p++)
        if ((st = starfold__pack_scatter(g, pk, h->out_slot[p], h->dest[p])) != STARFOLD_OK) return st;
    return STARFOLD_OK;
}

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    starfold_status_t st = STARFOLD_OK;
    const int n = g->num_inputs;
    int p2 = 1;
    while (p2 * 2 <= n) p2 *= 2;
    hd_t h = { g, n, p2, calloc((size_t)n, sizeof(int)), calloc((size_t)n, sizeof(starfold__span_t)),
               calloc((size_t)n, sizeof(starfold__span_t)), calloc((size_t)n, sizeof(starfold__span_t)), calloc((size_t)n, sizeof(size_t)),
               starfold__op_accumulation(g->op) };
    starfold__pack_plan_t plan = { 0 };
    if (!h.out_slot || !h.have || !h.dest || !h.part || !h.lo) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "halving-doubling: out of memory");
        goto out;
    }
    SF_CHECK_GOTO(starfold__allreduce_prepare(g, options, h.out_slot, &plan), st, out);
    for (size_t i = 0; i < plan.npacks; i++) SF_CHECK_GOTO(build_pack(&h, &plan, &plan.packs[i]), st, out);
out:
    starfold__pack_plan_free(&plan);
    free(h.out_slot);
    free(h.have);
    free(h.dest);
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
