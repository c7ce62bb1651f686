/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * A graph across ranks, run with StarPU-MPI (starfold__rank_graph_run()).
 *
 * The graph is compiled on the group's rank topology (starfold_topology_ranks(): device r is rank r)
 * by every rank alike, so every rank holds the same nodes in the same order. Each rank submits only
 * its own part:
 *
 *     node on rank d reads a span on rank s      rank s: starpu_mpi_isend_detached(piece)
 *                                                rank d: starpu_mpi_irecv_detached(piece or temporary)
 *     node on rank d (COPY)                      rank d: the receive lands in the destination itself
 *     node on rank d (REDUCE, SCALE)             rank d: one CPU task per aligned segment, reading
 *                                                        its own pieces and the received temporaries
 *     anything else                              nothing
 *
 * Pieces. A StarPU-MPI message carries one handle, so every span is cut into pieces that line up
 * across the spans a node pairs: a COPY pairs the concatenation of its sources with that of its
 * destinations, a REDUCE or SCALE pairs its spans element for element. A cut in one span of a
 * pairing is carried into every other span of it, until nothing changes (a fixpoint: cuts only ever
 * get added, and there are at most as many as elements). Then a pairing, cut where its first span's
 * buffer is cut, gives segments that are each one piece of every buffer they touch, on both sides of
 * every message (one message, one task per segment). Each rank computes every buffer's
 * cuts, its own and the others', in the same order: the message tags (a counter over the
 * cross-rank transfers in node order, the same on every rank) and the pieces agree.
 *
 * Ordering is StarPU's sequential consistency on the pieces: the nodes are in a valid submission
 * order (graph.h), StarPU-MPI's detached requests take part in the implicit dependencies like tasks,
 * so a piece is sent after its last writer and overwritten after its sends. The run ends when every
 * piece is free again (polled, settle()), every partitioned handle gathered (unpartition submitted) and every
 * temporary unregistered. Partitions are submitted (starpu_data_partition_plan/_submit), never
 * waited for on the calling thread, so a rank whose own earlier tasks hang still reaches its polled
 * wait and its timeout.
 *
 * Ownership: the caller's input and output handles are partitioned for the run and given back whole;
 * the graph's temporaries and the receive temporaries are StarPU's (registered with no home, so
 * StarPU allocates them) and unregistered here.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <starpu_mpi.h>

#include "base/common.h"
#include "mpi/group.h"
#include "exec/kernels.h"
#include "exec/vectors.h"
#include "graph/graph.h"

/* ------------------------------------------------------------------------------------------------
 * Cuts
 */

typedef struct cuts {
    size_t *at;       /* sorted, unique, 0 and count included */
    size_t n, cap;
} cuts_t;

/* Inserts @c; 1 if it was new, 0 if present, -1 when out of memory. */
static int cut_add(cuts_t *c, size_t x)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (c->at[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    if (lo < c->n && c->at[lo] == x) return 0;
    if (c->n == c->cap) {
        const size_t cap = c->cap ? 2 * c->cap : 8;
        size_t *p = realloc(c->at, cap * sizeof *p);
        if (!p) return -1;
        c->at = p, c->cap = cap;
    }
    memmove(c->at + lo + 1, c->at + lo, (c->n - lo) * sizeof *c->at);
    c->at[lo] = x;
    c->n++;
    return 1;
}

/* Index of the first cut >= x. */
static size_t cut_find(const cuts_t *c, size_t x)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (c->at[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/*
 * A pairing: spans that move or combine element for element, @len elements from each (buf, off).
 * COPY nodes give one pairing per (source span, destination span) overlap of their concatenations;
 * REDUCE and SCALE one per segment, all their spans.
 */
typedef struct pairing {
    size_t node;
    size_t nspans;
    size_t first;     /* into the run's span list */
    size_t len;
} pairing_t;

/* The kernels' request-wide flags, shared with the tasks. */
typedef struct flags {
    int cancelled, status;
} flags_t;

typedef struct run {
    starfold_group_t g;
    const struct starfold_graph *graph;
    cuts_t *cuts;                 /* [nbufs] */
    pairing_t *pairs;
    size_t npairs, cap_pairs;
    starfold__span_t *spans;      /* pairings' spans */
    size_t nspans, cap_spans;
    starpu_data_handle_t *whole;  /* [nbufs] this rank's handle of each of its buffers, NULL elsewhere */
    starpu_data_handle_t **piece; /* [nbufs] its pieces ([cuts.n - 1]), or NULL when one piece (= whole) */
    unsigned char *partitioned;   /* [nbufs] */
    unsigned char *temporary;     /* [nbufs] registered here */
    struct flags *flags;          /* shared with the tasks and the messages' callbacks */
} run_t;

static starfold_status_t oom(void)
{
    return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory");
}

static starfold_status_t add_pairing(run_t *R, size_t node, const starfold__span_t *spans, size_t n, size_t len)
{
    if (!len) return STARFOLD_OK; /* nothing moves: no piece, no message */
    if (R->npairs == R->cap_pairs) {
        const size_t cap = R->cap_pairs ? 2 * R->cap_pairs : 64;
        pairing_t *p = realloc(R->pairs, cap * sizeof *p);
        if (!p) return oom();
        R->pairs = p, R->cap_pairs = cap;
    }
    while (R->nspans + n > R->cap_spans) {
        const size_t cap = R->cap_spans ? 2 * R->cap_spans : 256;
        starfold__span_t *p = realloc(R->spans, cap * sizeof *p);
        if (!p) return oom();
        R->spans = p, R->cap_spans = cap;
    }
    R->pairs[R->npairs++] = (pairing_t){ node, n, R->nspans, len };
    memcpy(R->spans + R->nspans, spans, n * sizeof *spans);
    R->nspans += n;
    return STARFOLD_OK;
}

/* The pairings of every node, in node order. */
static starfold_status_t make_pairings(run_t *R)
{
    const struct starfold_graph *G = R->graph;
    for (size_t i = 0; i < G->nnodes; i++) {
        const starfold__node_t *n = &G->nodes[i];
        starfold_status_t st = STARFOLD_OK;
        if (n->kind == STARFOLD_TASK_REDUCE || n->kind == STARFOLD_TASK_SCALE) {
            const size_t ns = n->nsrc / n->nseg, nd = n->ndst / n->nseg;
            starfold__span_t seg[STARFOLD_MAX_DEVICES + 1]; /* every rank's operand and one result */
            if (ns + nd > sizeof seg / sizeof seg[0])
                return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "starfold_group_all_reduce: node %zu reduces %zu spans "
                                       "at once across ranks (at most %d)", i, ns + nd, STARFOLD_MAX_DEVICES + 1);
            for (size_t q = 0; q < n->nseg && st == STARFOLD_OK; q++) {
                for (size_t k = 0; k < ns; k++) seg[k] = n->src[q * ns + k];
                for (size_t k = 0; k < nd; k++) seg[ns + k] = n->dst[q * nd + k];
                st = add_pairing(R, i, seg, ns + nd, seg[0].count);
            }
        } else { /* COPY, PACK, UNPACK: walk both concatenations */
            size_t a = 0, b = 0, ua = 0, ub = 0;
            while (a < n->nsrc && b < n->ndst && st == STARFOLD_OK) {
                const size_t la = n->src[a].count - ua, lb = n->dst[b].count - ub, len = la < lb ? la : lb;
                const starfold__span_t two[2] = { { n->src[a].buf, n->src[a].offset + ua, len },
                                                  { n->dst[b].buf, n->dst[b].offset + ub, len } };
                st = add_pairing(R, i, two, 2, len);
                ua += len, ub += len;
                if (ua == n->src[a].count) a++, ua = 0;
                if (ub == n->dst[b].count) b++, ub = 0;
            }
        }
        if (st != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

/* Carries every cut inside one span of a pairing into its other spans, until nothing changes. */
static starfold_status_t align_cuts(run_t *R)
{
    const struct starfold_graph *G = R->graph;
    for (size_t b = 0; b < G->nbufs; b++)
        if (cut_add(&R->cuts[b], 0) < 0 || cut_add(&R->cuts[b], G->bufs[b].count) < 0) return oom();
    for (size_t p = 0; p < R->npairs; p++)
        for (size_t k = 0; k < R->pairs[p].nspans; k++) {
            const starfold__span_t *s = &R->spans[R->pairs[p].first + k];
            if (cut_add(&R->cuts[s->buf], s->offset) < 0 || cut_add(&R->cuts[s->buf], s->offset + R->pairs[p].len) < 0)
                return oom();
        }
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t p = 0; p < R->npairs; p++) {
            const pairing_t *P = &R->pairs[p];
            for (size_t k = 0; k < P->nspans; k++) {
                const starfold__span_t *s = &R->spans[P->first + k];
                const cuts_t *c = &R->cuts[s->buf];
                for (size_t j = cut_find(c, s->offset + 1); j < c->n && c->at[j] < s->offset + P->len; j++) {
                    const size_t rel = c->at[j] - s->offset;
                    for (size_t o = 0; o < P->nspans; o++) {
                        if (o == k) continue;
                        const starfold__span_t *t = &R->spans[P->first + o];
                        const int added = cut_add(&R->cuts[t->buf], t->offset + rel);
                        if (added < 0) return oom();
                        changed |= added;
                    }
                    c = &R->cuts[s->buf]; /* (another span of the pairing may share the buffer) */
                }
            }
        }
    }
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Handles
 */

/* Registers this rank's temporaries and cuts each of its buffers into its pieces. */
static starfold_status_t make_handles(run_t *R, const starpu_data_handle_t *inputs, const starpu_data_handle_t *outputs)
{
    const struct starfold_graph *G = R->graph;
    const int me = R->g->rank;
    for (size_t b = 0; b < G->nbufs; b++) {
        const starfold__buffer_t *B = &G->bufs[b];
        if (B->device != me || !B->count) continue;
        if (B->kind == SF_BUF_INPUT || B->kind == SF_BUF_OUTPUT) {
            R->whole[b] = B->kind == SF_BUF_INPUT ? inputs[B->tensor] : outputs[B->tensor];
            starfold__vector_whole(R->whole[b]); /* a bucket left partitioned by its last graph */
        } else {
            starpu_vector_data_register(&R->whole[b], -1, 0, (uint32_t)B->count, starfold_dtype_size(B->dtype));
            R->temporary[b] = 1;
        }
        const cuts_t *c = &R->cuts[b];
        if (c->n <= 2) continue;
        long *lengths = malloc((c->n - 1) * sizeof *lengths);
        R->piece[b] = calloc(c->n - 1, sizeof *R->piece[b]);
        if (!lengths || !R->piece[b]) {
            free(lengths);
            return oom();
        }
        for (size_t k = 0; k + 1 < c->n; k++) lengths[k] = (long)(c->at[k + 1] - c->at[k]);
        struct starpu_data_filter f = { .filter_func = starpu_vector_filter_list_long,
                                        .nchildren = (unsigned)(c->n - 1),
                                        .filter_arg_ptr = lengths };
        /* Asynchronous: the caller's leader vectors may still be written by tasks that are late (a
         * hung kernel), and a synchronous starpu_data_partition() would wait for them here, past
         * any timeout; submitted, the partition waits in StarPU's queue like a task. */
        starpu_data_partition_plan(R->whole[b], &f, R->piece[b]);
        free(lengths);
        starpu_data_partition_submit(R->whole[b], (unsigned)(c->n - 1), R->piece[b]);
        R->partitioned[b] = 1;
    }
    return STARFOLD_OK;
}

/*
 * Waits until every handle this rank used is free (each piece, or the whole buffer in one piece,
 * acquirable in STARPU_RW: its tasks, sends and receives are over), without blocking: polled, so that
 * a rank lost after the agreement costs the group's timeout instead of a hang. Acquiring without a
 * node moves no data. STARFOLD_ERR_TIMEOUT after timeout_seconds (0 or infinity: none).
 */
static int settled(starpu_data_handle_t h)
{
    if (starpu_data_acquire_on_node_try(h, STARPU_ACQUIRE_NO_NODE, STARPU_RW) != 0) return 0;
    starpu_data_release_on_node(h, STARPU_ACQUIRE_NO_NODE);
    return 1;
}

int starfold__handles_free_by(const starpu_data_handle_t *h, size_t n, double t0, double limit,
                              starfold_group_t g, const char *what)
{
    starfold__stall_t stall;
    starfold__group_stall_begin(g, &stall, what);
    /* Polled (starfold__nap(): at most 100 us). Waking on a condition the tasks' callbacks signal
     * was tried: the woken caller then often waited a whole time slice behind the spinning worker
     * that woke it (a collective of 4 KiB on 2 ranks: 5 ms in half the runs, against 0.15-0.75 ms
     * polled). */
    long nap = 10000; /* ns */
    for (size_t k = 0; k < n;) {
        if (!h[k] || settled(h[k])) {
            k++;
            continue;
        }
        if (limit > 0 && isfinite(limit) && starfold__now_s() - t0 > limit) return -1;
        if (g) starfold__group_stall_poll(g, &stall);
        starfold__nap(&nap, 100000);
    }
    return 0;
}

static starfold_status_t settle(run_t *R)
{
    const struct starfold_graph *G = R->graph;
    const double t0 = starfold__now_s(), limit = R->g->timeout_seconds;
    for (size_t b = 0; b < G->nbufs; b++) {
        const size_t n = R->piece[b] ? R->cuts[b].n - 1 : 1;
        if (R->whole[b] && starfold__handles_free_by(R->piece[b] ? R->piece[b] : &R->whole[b], n, t0, limit, R->g,
                                                     "its sends and receives across ranks") != 0) {
            char why[320];
            return starfold__error(STARFOLD_ERR_TIMEOUT, "starfold_group_all_reduce: rank %d's sends and receives "
                                   "across ranks did not complete within timeout_seconds (%g s): a rank is gone%s; "
                                   "the group is broken", R->g->rank, limit,
                                   starfold__group_stall_suffix(R->g, why, sizeof why));
        }
    }
    return STARFOLD_OK;
}

/* The handle of the piece of @s (which is exactly one piece, the cuts made sure). */
static starpu_data_handle_t piece_of(const run_t *R, const starfold__span_t *s)
{
    if (!R->piece[s->buf]) return R->whole[s->buf];
    return R->piece[s->buf][cut_find(&R->cuts[s->buf], s->offset)];
}

/* Gives every buffer back whole, frees the temporaries; once settle() saw every handle free. */
static void release_handles(run_t *R)
{
    const struct starfold_graph *G = R->graph;
    for (size_t b = 0; b < G->nbufs; b++) {
        if (R->partitioned[b]) {
            const unsigned n = (unsigned)(R->cuts[b].n - 1);
            starpu_data_unpartition_submit(R->whole[b], n, R->piece[b], -1); /* gathered where it is valid: a temporary has no home */
            starpu_data_partition_clean(R->whole[b], n, R->piece[b]);
        }
        if (R->temporary[b]) starpu_data_unregister(R->whole[b]); /* waits for its last access */
        free(R->piece[b]);
    }
}

/* ------------------------------------------------------------------------------------------------
 * Submission
 */

static void kernel_cpu(void *buffers[], void *cl_arg)
{
    starfold__kernel_cpu(buffers, cl_arg);
}

static struct starpu_codelet rank_cl = {
    .where = STARPU_CPU,
    .cpu_funcs = { kernel_cpu },
    .cpu_funcs_name = { "starfold_rank_kernel_cpu" },
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .name = "starfold_rank",
};

/* One CPU task for @len elements of a pairing of a node on this rank: @h[k] holds them for span k (a piece
 * or a received temporary). */
static starfold_status_t submit_kernel(run_t *R, const starfold__node_t *n, const pairing_t *P, size_t len,
                                       const starpu_data_handle_t *h)
{
    const struct starfold_graph *G = R->graph;
    const size_t ns = n->kind == STARFOLD_TASK_REDUCE || n->kind == STARFOLD_TASK_SCALE ? n->nsrc / n->nseg : 1;
    const size_t nspans = P->nspans;
    const size_t size = sizeof(starfold__kernel_args_t) + nspans * sizeof(starfold__kspan_t);
    starfold__kernel_args_t *a = calloc(1, size);
    struct starpu_data_descr *d = calloc(nspans, sizeof *d);
    if (!a || !d) {
        free(a), free(d);
        return oom();
    }
    a->spans = (starfold__kspan_t *)(void *)(a + 1);
    a->cancelled = &R->flags->cancelled;
    a->status = &R->flags->status;
    a->kind = n->kind == STARFOLD_TASK_REDUCE ? SF_KERNEL_REDUCE : n->kind == STARFOLD_TASK_SCALE ? SF_KERNEL_SCALE
                                                                                                  : SF_KERNEL_COPY;
    a->dtype = (int)n->dtype;
    a->dst_dtype = (int)G->bufs[n->dst[0].buf].dtype;
    a->op = (int)n->op;
    a->divisor = n->divisor ? n->divisor : 1;
    a->elemsize = starfold_dtype_size(n->dtype);
    a->dst_elemsize = starfold_dtype_size((starfold_dtype_t)a->dst_dtype);
    a->node = P->node;
    a->nseg = 1;
    a->nsrc = ns;
    a->ndst = nspans - ns;
    /* One buffer per distinct handle: a destination that is also a source (accumulate in place) is
     * one buffer in STARPU_RW, as StarPU wants each handle once per task. */
    unsigned nbuf = 0;
    for (size_t k = 0; k < nspans; k++) {
        const int write = k >= ns;
        unsigned idx = nbuf;
        for (unsigned j = 0; j < nbuf; j++)
            if (d[j].handle == h[k]) idx = j;
        if (idx == nbuf) d[nbuf++] = (struct starpu_data_descr){ h[k], write ? STARPU_W : STARPU_R };
        else if (write) d[idx].mode = STARPU_RW;
        else if (d[idx].mode == STARPU_W) d[idx].mode = STARPU_RW;
        a->spans[k] = (starfold__kspan_t){ idx, 0, len };
    }
    const int err = starpu_task_insert(&rank_cl, STARPU_DATA_MODE_ARRAY, d, (int)nbuf, STARPU_CL_ARGS, a, size, 0);
    free(d);
    if (err != 0) {
        free(a);
        return starfold__error(STARFOLD_ERR_RUNTIME, "starfold_group_all_reduce: StarPU refused a task across ranks (%d)",
                               err);
    }
    return STARFOLD_OK;
}

/*
 * One segment of a pairing (elements [rel, rel + len) of each of its spans, one piece of each: the
 * transfers it needs (every source on another rank than the node's) and, on the node's rank, its
 * task (a COPY whose source is remote needs none: the receive is the copy).
 */
static starfold_status_t submit_segment(run_t *R, const pairing_t *P, size_t rel, size_t len, int64_t *tag)
{
    const struct starfold_graph *G = R->graph;
    const starfold__node_t *n = &G->nodes[P->node];
    const int me = R->g->rank, at = n->device;
    const int copy = !(n->kind == STARFOLD_TASK_REDUCE || n->kind == STARFOLD_TASK_SCALE);
    const size_t ns = copy ? 1 : n->nsrc / n->nseg;
    starpu_data_handle_t h[64];
    starfold__span_t seg[64];
    for (size_t k = 0; k < P->nspans; k++) {
        seg[k] = R->spans[P->first + k];
        seg[k].offset += rel, seg[k].count = len;
    }
    int local_task = at == me;
    for (size_t k = 0; k < P->nspans; k++) {
        const int owner = G->bufs[seg[k].buf].device;
        h[k] = owner == me ? piece_of(R, &seg[k]) : NULL;
        if (k >= ns || owner == at) continue; /* destinations are on the node's rank (graph.h) */
        const int64_t t = (*tag)++;
        if (owner == me) {
            if (starpu_mpi_isend_detached(h[k], at, t, R->g->data_comm, NULL, NULL) != 0)
                return starfold__error(STARFOLD_ERR_RUNTIME, "starfold_group_all_reduce: StarPU-MPI refused a send to "
                                       "rank %d", at);
        } else if (at == me) {
            starpu_data_handle_t into;
            if (copy) {
                into = piece_of(R, &seg[1]);
                local_task = 0;
            } else {
                starpu_vector_data_register(&into, -1, 0, (uint32_t)len, starfold_dtype_size(n->dtype));
            }
            if (starpu_mpi_irecv_detached(into, owner, t, R->g->data_comm, NULL, NULL) != 0)
                return starfold__error(STARFOLD_ERR_RUNTIME, "starfold_group_all_reduce: StarPU-MPI refused a receive "
                                       "from rank %d", owner);
            h[k] = into;
        }
    }
    starfold_status_t st = local_task ? submit_kernel(R, n, P, len, h) : STARFOLD_OK;
    /* The received temporaries go once their task has read them. */
    for (size_t k = 0; !copy && at == me && k < ns; k++)
        if (G->bufs[seg[k].buf].device != me) starpu_data_unregister_submit(h[k]);
    return st;
}

/* A pairing, piece by piece: the cuts inside its first span are those of every other (align_cuts()). */
static starfold_status_t submit_pairing(run_t *R, const pairing_t *P, int64_t *tag)
{
    const starfold__span_t *s = &R->spans[P->first];
    const cuts_t *c = &R->cuts[s->buf];
    size_t at = 0;
    starfold_status_t st = STARFOLD_OK;
    for (size_t j = cut_find(c, s->offset + 1); st == STARFOLD_OK && at < P->len; j++) {
        const size_t end = j < c->n && c->at[j] < s->offset + P->len ? c->at[j] - s->offset : P->len;
        st = submit_segment(R, P, at, end - at, tag);
        at = end;
    }
    return st;
}

starfold_status_t starfold__rank_graph_run(starfold_group_t g, starfold_graph_t graph, const starpu_data_handle_t *inputs,
                                           const starpu_data_handle_t *outputs, int64_t tag_base)
{
    run_t R;
    memset(&R, 0, sizeof R);
    R.g = g;
    R.graph = graph;
    const size_t nb = graph->nbufs;
    R.cuts = calloc(nb ? nb : 1, sizeof *R.cuts);
    R.whole = calloc(nb ? nb : 1, sizeof *R.whole);
    R.piece = calloc(nb ? nb : 1, sizeof *R.piece);
    R.partitioned = calloc(nb ? nb : 1, 1);
    R.temporary = calloc(nb ? nb : 1, 1);
    R.flags = calloc(1, sizeof *R.flags);
    starfold_status_t st = R.cuts && R.whole && R.piece && R.partitioned && R.temporary && R.flags ? STARFOLD_OK : oom();
    if (st == STARFOLD_OK) st = make_pairings(&R);
    if (st == STARFOLD_OK) st = align_cuts(&R);
    /* Nothing was submitted yet: a failure above leaves every rank free to fail alike (the caller's
     * agreement). Below, a failure half-way cannot be undone across ranks. */
    if (st == STARFOLD_OK && R.whole) st = make_handles(&R, inputs, outputs);
    int64_t tag = tag_base;
    for (size_t p = 0; st == STARFOLD_OK && p < R.npairs; p++) st = submit_pairing(&R, &R.pairs[p], &tag);
    if (st != STARFOLD_OK && R.flags) __atomic_store_n(&R.flags->cancelled, 1, __ATOMIC_RELEASE);
    /* Everything submitted must finish before the handles are given back, failure or not (the other
     * ranks' messages are on their way); after a timeout they are left as they are (the group is
     * broken, the caller must not free them: starfold__rank_graph_run() says so). */
    const starfold_status_t waited = R.whole && R.piece ? settle(&R) : STARFOLD_OK;
    if (waited != STARFOLD_OK) {
        if (st == STARFOLD_OK) st = waited;
        R.flags = NULL; /* still shared with tasks that may run */
        for (size_t b = 0; b < nb; b++) R.piece[b] = NULL;
    } else if (R.whole && R.piece && R.partitioned && R.temporary) {
        release_handles(&R);
    }
    if (st == STARFOLD_OK && R.flags && __atomic_load_n(&R.flags->status, __ATOMIC_ACQUIRE) != 0)
        st = starfold__error(STARFOLD_ERR_TASK_FAILED, "starfold_group_all_reduce: a task across ranks failed");
    free(R.flags);
    for (size_t b = 0; R.cuts && b < nb; b++) free(R.cuts[b].at);
    free(R.cuts), free(R.whole), free(R.piece), free(R.partitioned), free(R.temporary);
    free(R.pairs), free(R.spans);
    return st;
}
