/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The graph invariant checker: every compiled graph must pass it, and tests run it after every
 * compile. It reports the first violation as one sentence naming node, kind, device, buffer and
 * element range, so an algorithm bug reads as "node 12 (reduce on device 3) reads elements
 * [0, 256) of temporary buffer 40 (on device 3) that no ancestor wrote".
 *
 * Checks, in the order they are reported:
 *   1. structure, node by node: deps name earlier nodes only (so the node order is a valid
 *      submission order and the graph is acyclic), spans in bounds and of the node's dtype, device
 *      in the topology, writes only into buffers of devices sharing the node's memory and never into
 *      an input, arity per kind, and a node's own writes neither overlap each other nor partially
 *      overlap its reads;
 *   2. no read before write: every range a node reads of a TEMP or OUTPUT buffer was written by an
 *      ancestor (transitive dependency); inputs count as written;
 *   3. no race: two nodes touching overlapping ranges of a buffer, one writing, are ordered;
 *   4. every OUTPUT element written exactly once;
 *   5. in-place safety: input (s, t) and output (d, t) on the same device may be one StarPU handle,
 *      so every node reading input range X is an ancestor of every node writing output over X (not for
 *      a gather, whose outputs the executor never lets be inputs).
 *
 * Cost. The checks ask "is node a an ancestor of node b?" (a < b) for pairs of overlapping accesses.
 * A full ancestry matrix would be n^2/16 bytes (4 GB at the 262,144-task limit), so the checker
 * answers those questions in blocks of K ancestor columns instead, in three passes:
 *
 *     collect   run checks 2, 3 and 5 walking every overlapping pair, and note each question
 *               (a, b) in check order; bucket the questions by a's column block
 *     resolve   for each block [c0, c0 + K) that has questions: fill, in node order, a K-bit row
 *               per node i >= c0 (which nodes of the block are ancestors of i: the OR of its deps'
 *               rows plus the deps themselves, deps < c0 contributing nothing), then answer the
 *               block's questions from row b, bit a - c0
 *     replay    run checks 2..5 as before, in the same order, taking the answers in the order
 *               they were noted (a walk that stops early reads a prefix of its questions)
 *
 *               ancestor a ->
 *             0          c0     c0+K           n
 *          0  +----------+-------+-------------+
 *             |\         :       :             |   the strictly lower triangle is the whole
 *    node b   |  \       :       :             |   ancestry; one block keeps only its K
 *      |      |    \     :       :             |   columns: rows c0 .. n-1 of them (#), at most
 *      v   c0 |......\...+-------+             |   n * K / 8 bytes, with K = 64 MiB * 8 / n bits
 *             |          |\######|             |   (a multiple of 64, at least 64, at most n):
 *             |          |##\####|             |   one block up to ~23,000 nodes, 128 blocks
 *             |          |######\|             |   of 2,048 columns at the task limit
 *             |          |#######|\            |
 *          n  +----------+-------+-------------+
 *
 * Why this way: answering each question by a search from b would need no matrix but cost O(edges)
 * per question; blocks keep the full matrix's O(edges * n / 64) with bounded memory. Collecting
 * every pair a walk could visit (not only the prefix the first run would) keeps the replay exact.
 *
 * Memory: at most 64 MiB of rows (or 8 bytes a node past 8 million nodes), 12 bytes and a bit per
 * question and 8 bytes per walk, plus the access indices. Time: filling rows costs ndeps * K / 64
 * word operations per node and block, O(edges * n / 64) in all as a full matrix would; the A
 * accesses are sorted per buffer, O(A log A), under an implicit interval tree, so a range query costs
 * O(log A) per access it reports, and each reported pair is walked twice (collect, replay); pairs of
 * reads are never enumerated. No per-element arrays.
 */
#include "config.h"

#include "base/common.h"
#include "graph/check.h"
#include "graph/graph.h"

#include <stdio.h>
#include <stdlib.h>

/* One span of one node, as the half-open element range [lo, hi) of a buffer. */
typedef struct ck_access {
    size_t node;
    size_t lo, hi;
    size_t span;   /* index in the node's src or dst array */
    int write;
} ck_access_t;

/*
 * Accesses grouped by buffer (group b is acc[start[b] .. start[b + 1])), sorted by lo within a group,
 * with an implicit interval tree per group: mx[4 * start[b] + v] is the largest hi under tree node v
 * (root 1, children 2v and 2v + 1, halving the group's index range). A range query prunes subtrees
 * that end before it or start after it, so it costs O(log A) per access it reports.
 */
typedef struct ck_index {
    ck_access_t *acc;
    size_t *start;   /* [nbufs + 1] */
    size_t *mx;      /* [4 * accesses] */
} ck_index_t;

/* A range query: calls fn on every access of group [gl, gr) overlapping [lo, hi), by ascending lo. */
typedef struct ck_query {
    size_t gl, gr, lo, hi;
    int (*fn)(void *ctx, const ck_access_t *a); /* nonzero stops the walk */
    void *ctx;
} ck_query_t;

/* A question "is node a an ancestor of node b?", a < b. */
typedef struct ck_question {
    uint32_t a, b;
} ck_question_t;

/*
 * The questions of checks 2, 3 and 5 in the order they are asked: noted while collecting, answered
 * block by block, read back in the same order while replaying. Each range query (a walk) starts
 * at its own first question, so a walk that stops early leaves the next one in step.
 */
typedef struct ck_answers {
    int collecting;
    int out_of_memory;        /* a note failed while collecting */
    ck_question_t *q;
    size_t nq, cap_q;
    uint64_t *bit;            /* answer k: bit k % 64 of bit[k / 64] */
    size_t *walks;            /* per walk: its first question << 1 | 1 when it fails whatever the answers */
    size_t nwalks, cap_walks;
    size_t walk, next;        /* replay position: walks begun, next answer */
} ck_answers_t;

typedef struct checker {
    const struct starfold_graph *g;
    ck_answers_t ans;
    ck_index_t all;  /* every non-empty span */
    ck_index_t wr;   /* the written ones only */
} checker_t;

/* ------------------------------------------------------------------------------------------------ */
/* Ancestry and access indices                                                                      */

/* Bytes of ancestry rows the resolve pass may hold at once (the block width K follows from it). */
#ifndef CK_ANCESTRY_BYTES /* a smaller one in a test build makes many blocks of small graphs */
#define CK_ANCESTRY_BYTES ((size_t)64 << 20)
#endif

static size_t row_words(size_t i) { return (i + 63) / 64; }

/* Room for item @count of a growing array of @size-byte items: the array, or NULL (it unchanged). */
static void *grow(void *items, size_t *cap, size_t count, size_t size)
{
    if (count < *cap) return items;
    const size_t cap2 = *cap ? 2 * *cap : 1024;
    void *p = cap2 <= (size_t)-1 / size ? realloc(items, cap2 * size) : NULL;
    if (p) *cap = cap2;
    return p;
}

/* Starts a range query: collecting, its questions begin here; replaying, read them from there. */
static void begin_walk(checker_t *ck)
{
    ck_answers_t *a = &ck->ans;
    if (!a->collecting) {
        a->next = a->walks[a->walk++] >> 1;
        return;
    }
    size_t *walks = a->out_of_memory ? NULL : grow(a->walks, &a->cap_walks, a->nwalks, sizeof *walks);
    if (!walks) {
        a->out_of_memory = 1;
        return;
    }
    a->walks = walks;
    a->walks[a->nwalks++] = a->nq << 1;
}

/* Collecting, the walk under way met a pair that fails whatever the answers. */
static void doom_walk(checker_t *ck)
{
    if (!ck->ans.out_of_memory) ck->ans.walks[ck->ans.nwalks - 1] |= 1;
}

/*
 * Replaying, whether the race or alias walk just begun passes without walking: nothing in it fails
 * whatever the answers, and every question was answered yes (ordered).
 */
static int walk_passes(const checker_t *ck)
{
    const ck_answers_t *a = &ck->ans;
    if (a->walks[a->walk - 1] & 1) return 0;
    size_t k = a->next;
    const size_t end = a->walk < a->nwalks ? a->walks[a->walk] >> 1 : a->nq;
    for (; k < end && k % 64; k++)
        if (!(a->bit[k / 64] >> (k % 64) & 1)) return 0;
    for (; k + 64 <= end; k += 64)
        if (a->bit[k / 64] != UINT64_MAX) return 0;
    for (; k < end; k++)
        if (!(a->bit[k / 64] >> (k % 64) & 1)) return 0;
    return 1;
}

/* Whether node @x is an ancestor of node @y: noted (and 0) while collecting, answered while replaying. */
static int is_ancestor(checker_t *ck, size_t x, size_t y)
{
    ck_answers_t *a = &ck->ans;
    if (x >= y) return 0;
    if (!a->collecting) {
        const size_t k = a->next++;
        return a->bit[k / 64] >> (k % 64) & 1;
    }
    ck_question_t *q = a->out_of_memory ? NULL : grow(a->q, &a->cap_q, a->nq, sizeof *q);
    if (!q) {
        a->out_of_memory = 1;
        return 0;
    }
    a->q = q;
    a->q[a->nq++] = (ck_question_t){ (uint32_t)x, (uint32_t)y };
    return 0;
}

/*
 * Answers every noted question, block of K ancestor columns by block: row i of a block says which
 * of its nodes are ancestors of node i, filled in node order from the deps' rows (deps are earlier).
 */
static starfold_status_t resolve_ancestry(checker_t *ck)
{
    const struct starfold_graph *g = ck->g;
    ck_answers_t *a = &ck->ans;
    const size_t n = g->nnodes, nq = a->nq;
    if (a->out_of_memory)
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory noting the ancestry questions of %zu nodes", n);
    a->bit = calloc(nq ? (nq + 63) / 64 : 1, sizeof *a->bit);
    if (!a->bit) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory answering %zu ancestry questions", nq);
    if (!nq) return STARFOLD_OK;
    if (nq > UINT32_MAX)
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: %zu ancestry questions are too many to check",
                               g->algorithm, nq);

    size_t words = CK_ANCESTRY_BYTES / sizeof(uint64_t) / n; /* per row: K = 64 * words columns */
    if (words < 1) words = 1;
    if (words > row_words(n)) words = row_words(n);
    const size_t width = 64 * words, nblocks = (n + width - 1) / width;

    /* The questions bucketed by block (counting sort), and the last node each block asks about. */
    size_t *bstart = calloc(nblocks + 1, sizeof *bstart), *last = calloc(nblocks, sizeof *last);
    uint32_t *order = malloc(nq * sizeof *order);
    uint64_t *rows = malloc(n * words * sizeof *rows);
    starfold_status_t st = STARFOLD_OK;
    if (!bstart || !last || !order || !rows) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory for %zu ancestry rows of %zu bytes", n,
                             words * sizeof *rows);
        goto out;
    }
    for (size_t k = 0; k < nq; k++) {
        const size_t blk = a->q[k].a / width;
        bstart[blk + 1]++;
        if (a->q[k].b > last[blk]) last[blk] = a->q[k].b;
    }
    for (size_t blk = 0; blk < nblocks; blk++) bstart[blk + 1] += bstart[blk];
    for (size_t k = 0; k < nq; k++) order[bstart[a->q[k].a / width]++] = (uint32_t)k;
    for (size_t blk = nblocks; blk > 0; blk--) bstart[blk] = bstart[blk - 1]; /* back to the starts */
    bstart[0] = 0;

    for (size_t blk = 0; blk < nblocks; blk++) {
        if (bstart[blk] == bstart[blk + 1]) continue;
        const size_t c0 = blk * width, c1 = c0 + width;
        for (size_t i = c0; i <= last[blk]; i++) {
            const starfold__node_t *nd = &g->nodes[i];
            uint64_t *r = rows + i * words;
            memset(r, 0, words * sizeof *r);
            for (size_t k = 0; k < nd->ndeps; k++) {
                const size_t d = nd->deps[k];
                if (d < c0) continue; /* its ancestors are earlier still: none in the block */
                const uint64_t *rd = rows + d * words;
                for (size_t w = 0; w < words; w++) r[w] |= rd[w];
                if (d < c1) r[(d - c0) / 64] |= (uint64_t)1 << ((d - c0) % 64);
            }
        }
        for (size_t p = bstart[blk]; p < bstart[blk + 1]; p++) {
            const size_t k = order[p], col = a->q[k].a - c0;
            if (rows[a->q[k].b * words + col / 64] >> (col % 64) & 1) a->bit[k / 64] |= (uint64_t)1 << (k % 64);
        }
    }
out:
    free(bstart);
    free(last);
    free(order);
    free(rows);
    return st;
}

static int access_cmp(const void *pa, const void *pb)
{
    const ck_access_t *a = pa, *b = pb;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    if (a->node != b->node) return a->node < b->node ? -1 : 1;
    if (a->write != b->write) return a->write - b->write;
    return a->span < b->span ? -1 : a->span > b->span;
}

/* Adds every non-empty span (only dst spans when @writes_only) to group-by-buffer order. */
static void index_fill(const struct starfold_graph *g, ck_index_t *ix, int writes_only, size_t *fill)
{
    for (size_t i = 0; i < g->nnodes; i++) {
        const starfold__node_t *n = &g->nodes[i];
        for (int w = writes_only; w < 2; w++) {
            const starfold__span_t *sp = w ? n->dst : n->src;
            const size_t ns = w ? n->ndst : n->nsrc;
            for (size_t k = 0; k < ns; k++) {
                if (!sp[k].count) continue;
                ix->acc[fill[sp[k].buf]++] = (ck_access_t){ i, sp[k].offset, sp[k].offset + sp[k].count, k, w };
            }
        }
    }
}

/* Fills the interval tree of acc[l, r), node v at mx[v] (mx already offset to the group). */
static size_t tree_build(const ck_access_t *acc, size_t *mx, size_t v, size_t l, size_t r)
{
    if (r - l == 1) return mx[v] = acc[l].hi;
    const size_t m = l + (r - l) / 2;
    const size_t a = tree_build(acc, mx, 2 * v, l, m), b = tree_build(acc, mx, 2 * v + 1, m, r);
    return mx[v] = a > b ? a : b;
}

static int tree_walk(const ck_index_t *ix, const ck_query_t *q, size_t v, size_t l, size_t r)
{
    if (ix->mx[4 * q->gl + v] <= q->lo || ix->acc[l].lo >= q->hi) return 0;
    if (r - l == 1) return q->fn(q->ctx, &ix->acc[l]);
    const size_t m = l + (r - l) / 2;
    return tree_walk(ix, q, 2 * v, l, m) || tree_walk(ix, q, 2 * v + 1, m, r);
}

/* Visits the accesses of buffer @b overlapping [lo, hi) in ascending lo order until fn says stop. */
static void index_query(const ck_index_t *ix, size_t b, size_t lo, size_t hi, int (*fn)(void *, const ck_access_t *),
                        void *ctx)
{
    const ck_query_t q = { ix->start[b], ix->start[b + 1], lo, hi, fn, ctx };
    if (q.gl < q.gr && lo < hi) tree_walk(ix, &q, 1, q.gl, q.gr);
}

static starfold_status_t build_index(const struct starfold_graph *g, ck_index_t *ix, int writes_only)
{
    const size_t nb = g->nbufs;
    ix->start = calloc(nb + 1, sizeof *ix->start);
    if (!ix->start) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory indexing %zu buffers", nb);
    for (size_t i = 0; i < g->nnodes; i++) {
        const starfold__node_t *n = &g->nodes[i];
        for (size_t k = 0; !writes_only && k < n->nsrc; k++)
            if (n->src[k].count) ix->start[n->src[k].buf + 1]++;
        for (size_t k = 0; k < n->ndst; k++)
            if (n->dst[k].count) ix->start[n->dst[k].buf + 1]++;
    }
    for (size_t b = 0; b < nb; b++) ix->start[b + 1] += ix->start[b];
    const size_t total = ix->start[nb];
    size_t *fill = malloc((nb ? nb : 1) * sizeof *fill);
    ix->acc = malloc((total ? total : 1) * sizeof *ix->acc);
    ix->mx = total <= (size_t)-1 / (4 * sizeof *ix->mx) ? malloc((total ? 4 * total : 1) * sizeof *ix->mx) : NULL;
    if (!fill || !ix->acc || !ix->mx) {
        free(fill);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory indexing %zu accesses", total);
    }
    if (nb) memcpy(fill, ix->start, nb * sizeof *fill);
    index_fill(g, ix, writes_only, fill);
    free(fill);
    for (size_t b = 0; b < nb; b++) {
        const size_t lo = ix->start[b], hi = ix->start[b + 1];
        if (lo == hi) continue;
        qsort(ix->acc + lo, hi - lo, sizeof *ix->acc, access_cmp);
        tree_build(ix->acc, ix->mx + 4 * lo, 1, lo, hi);
    }
    return STARFOLD_OK;
}

static void index_free(ck_index_t *ix)
{
    free(ix->acc);
    free(ix->start);
    free(ix->mx);
}

/* ------------------------------------------------------------------------------------------------ */
/* 2. No read before write                                                                          */

/* Greedy cover of a read [cursor, hi) by its reader's ancestors' writes, visited by ascending lo. */
typedef struct ck_cover {
    checker_t *ck;
    size_t reader, cursor, hi, gap_end;
} ck_cover_t;

static int cover_visit(void *ctx, const ck_access_t *w)
{
    ck_cover_t *c = ctx;
    if (!is_ancestor(c->ck, w->node, c->reader)) return 0;
    if (w->lo > c->cursor) {
        c->gap_end = w->lo < c->hi ? w->lo : c->hi;
        return 1;
    }
    if (w->hi > c->cursor) c->cursor = w->hi;
    return c->cursor >= c->hi;
}

static starfold_status_t check_reads(checker_t *ck)
{
    const struct starfold_graph *g = ck->g;
    for (size_t i = 0; i < g->nnodes; i++) {
        const starfold__node_t *n = &g->nodes[i];
        for (size_t k = 0; k < n->nsrc; k++) {
            const starfold__span_t s = n->src[k];
            if (!s.count || g->bufs[s.buf].kind == SF_BUF_INPUT) continue;
            ck_cover_t c = { ck, i, s.offset, s.offset + s.count, s.offset + s.count };
            begin_walk(ck);
            index_query(&ck->wr, s.buf, s.offset, s.offset + s.count, cover_visit, &c);
            if (!ck->ans.collecting && c.cursor < c.hi)
                return starfold__error(STARFOLD_ERR_GRAPH_INVALID,
                                "%s: %s reads elements [%zu, %zu) of %s that no ancestor wrote", g->algorithm,
                                starfold__check_node_text(g, i).s, c.cursor, c.gap_end, starfold__check_buf_text(g, s.buf).s);
        }
    }
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* 3. No race                                                                                       */

/* Finds an access unordered with the write @w, overlapping it. */
typedef struct ck_pair {
    checker_t *ck;
    const ck_access_t *w;
    const ck_access_t *other;
} ck_pair_t;

static int race_visit(void *ctx, const ck_access_t *o)
{
    ck_pair_t *p = ctx;
    const size_t a = p->w->node, b = o->node;
    if (a == b || is_ancestor(p->ck, a < b ? a : b, a < b ? b : a) || p->ck->ans.collecting) return 0;
    p->other = o;
    return 1;
}

static starfold_status_t check_races(checker_t *ck)
{
    const struct starfold_graph *g = ck->g;
    for (size_t b = 0; b < g->nbufs; b++)
        for (size_t k = ck->wr.start[b]; k < ck->wr.start[b + 1]; k++) {
            ck_pair_t p = { ck, &ck->wr.acc[k], NULL };
            begin_walk(ck);
            if (!ck->ans.collecting && walk_passes(ck)) continue;
            index_query(&ck->all, b, p.w->lo, p.w->hi, race_visit, &p);
            if (!p.other) continue;
            const ck_access_t *x = p.w->node < p.other->node ? p.w : p.other, *y = x == p.w ? p.other : p.w;
            return starfold__error(STARFOLD_ERR_GRAPH_INVALID,
                            "%s: race: %s and %s are unordered but both touch elements [%zu, %zu) of %s, and "
                            "node %zu writes them",
                            g->algorithm, starfold__check_node_text(g, x->node).s, starfold__check_node_text(g, y->node).s,
                            x->lo > y->lo ? x->lo : y->lo, x->hi < y->hi ? x->hi : y->hi, starfold__check_buf_text(g, b).s,
                            p.w->node);
        }
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* 4. Every output element written exactly once                                                     */

static starfold_status_t check_output(const checker_t *ck, size_t b)
{
    const struct starfold_graph *g = ck->g;
    const ck_index_t *ix = &ck->wr;
    size_t cursor = 0, last = 0;
    for (size_t k = ix->start[b]; k < ix->start[b + 1]; k++) {
        const ck_access_t *w = &ix->acc[k];
        if (w->lo > cursor)
            return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "%s: elements [%zu, %zu) of %s are never written",
                            g->algorithm, cursor, w->lo, starfold__check_buf_text(g, b).s);
        if (w->lo < cursor)
            return starfold__error(STARFOLD_ERR_GRAPH_INVALID,
                            "%s: elements [%zu, %zu) of %s are written twice, by node %zu and by %s", g->algorithm,
                            w->lo, cursor < w->hi ? cursor : w->hi, starfold__check_buf_text(g, b).s, last, starfold__check_node_text(g, w->node).s);
        cursor = w->hi;
        last = w->node;
    }
    if (cursor < g->bufs[b].count)
        return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "%s: elements [%zu, %zu) of %s are never written", g->algorithm,
                        cursor, g->bufs[b].count, starfold__check_buf_text(g, b).s);
    return STARFOLD_OK;
}

static starfold_status_t check_outputs(const checker_t *ck)
{
    for (size_t b = 0; b < ck->g->nbufs; b++) {
        if (ck->g->bufs[b].kind != SF_BUF_OUTPUT) continue;
        starfold_status_t st = check_output(ck, b);
        if (st != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* 5. In-place safety                                                                               */

/* Finds a write of the output not preceded by the read @r of the aliased input. */
static int alias_visit(void *ctx, const ck_access_t *w)
{
    ck_pair_t *p = ctx;
    const ck_access_t *r = p->w; /* here the read */
    if (is_ancestor(p->ck, r->node, w->node)) return 0;
    if (w->node == r->node && starfold__check_maps_elementwise(&p->ck->g->nodes[r->node], r->span, w->span)) return 0;
    if (p->ck->ans.collecting) {
        if (r->node >= w->node) doom_walk(p->ck); /* no question asked: fails as it is */
        return 0;
    }
    p->other = w;
    return 1;
}

/* Reads of input buffer @bin all happen before the writes of output buffer @bout over them. */
static starfold_status_t check_alias(checker_t *ck, size_t bin, size_t bout)
{
    const struct starfold_graph *g = ck->g;
    for (size_t k = ck->all.start[bin]; k < ck->all.start[bin + 1]; k++) {
        const ck_access_t *r = &ck->all.acc[k];
        ck_pair_t p = { ck, r, NULL };
        begin_walk(ck);
        if (!ck->ans.collecting && walk_passes(ck)) continue;
        index_query(&ck->wr, bout, r->lo, r->hi, alias_visit, &p);
        if (!p.other) continue;
        const ck_access_t *w = p.other;
        return starfold__error(STARFOLD_ERR_GRAPH_INVALID,
                        "%s: in-place hazard: %s writes elements [%zu, %zu) of %s, which may be the same handle "
                        "as %s, without %s having read them first",
                        g->algorithm, starfold__check_node_text(g, w->node).s, r->lo > w->lo ? r->lo : w->lo,
                        r->hi < w->hi ? r->hi : w->hi, starfold__check_buf_text(g, bout).s, starfold__check_buf_text(g, bin).s,
                        starfold__check_node_text(g, r->node).s);
    }
    return STARFOLD_OK;
}

static starfold_status_t check_in_place(checker_t *ck)
{
    const struct starfold_graph *g = ck->g;
    if (g->kind == STARFOLD_COLL_GATHER) return STARFOLD_OK; /* never in place: the executor refuses it */
    for (int s = 0; s < g->num_inputs; s++)
        for (int d = 0; d < g->num_outputs; d++) {
            if (g->input_devices[s] != g->output_devices[d]) continue;
            for (size_t t = 0; t < g->num_tensors; t++) {
                starfold_status_t st = check_alias(ck, starfold__graph_input(g, s, t), starfold__graph_output(g, d, t));
                if (st != STARFOLD_OK) return st;
            }
        }
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------ */

STARFOLD_API starfold_status_t starfold_graph_check(starfold_graph_t g)
{
    if (!g) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_graph_check: NULL graph");
    starfold_status_t st = starfold__check_structure(g);
    if (st != STARFOLD_OK) return st;

    if (g->nnodes > UINT32_MAX)
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: %zu nodes are too many to check", g->algorithm,
                               g->nnodes);
    checker_t ck = { .g = g, .ans = { .collecting = 1 } };
    SF_CHECK_GOTO(build_index(g, &ck.all, 0), st, out);
    SF_CHECK_GOTO(build_index(g, &ck.wr, 1), st, out);
    /* Collecting: the same walks note their questions and report nothing. */
    SF_CHECK_GOTO(check_reads(&ck), st, out);
    SF_CHECK_GOTO(check_races(&ck), st, out);
    SF_CHECK_GOTO(check_in_place(&ck), st, out);
    SF_CHECK_GOTO(resolve_ancestry(&ck), st, out);
    ck.ans.collecting = 0;
    SF_CHECK_GOTO(check_reads(&ck), st, out);
    SF_CHECK_GOTO(check_races(&ck), st, out);
    SF_CHECK_GOTO(check_outputs(&ck), st, out);
    SF_CHECK_GOTO(check_in_place(&ck), st, out);
out:
    index_free(&ck.all);
    index_free(&ck.wr);
    free(ck.ans.q);
    free(ck.ans.bit);
    free(ck.ans.walks);
    return st;
}
