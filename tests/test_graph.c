/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Graph compiler tests: every registered algorithm, compiled for 1..8 replicas on several topologies,
 * every dtype and op, sizes 0, 1, odd and not divisible by the pack count, mixed dtypes, then
 *   1. starfold_graph_check() (the invariant checker) on every graph, and
 *   2. a host interpreter that executes the graph's tasks in order on plain memory and compares every
 *      output with a float64 reference: the algorithms are verified without StarPU.
 * Plus TensorFlow-exact structure checks of hierarchical copy on a DGX-1 and bad-option cases.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <starfold/topology.h>
#include <starfold/graph.h>
#include <starfold/model.h>
#include "graph/graph.h"
#include "runner.h"

/* ---------------------------------------------------------------------------------------------- */
/* A host interpreter of the IR: buffers as byte arrays, tasks executed in node order.           */

typedef struct interp {
    starfold_graph_t g;
    unsigned char **mem; /* [nbufs] */
} interp_t;

static double load(const void *p, starfold_dtype_t dt, size_t i)
{
    return starfold_element_to_double(dt, p, i);
}

/* Integer ops are done in int64 then wrapped to the type's width, as the kernels wrap. */
static void store(void *p, starfold_dtype_t dt, size_t i, double v)
{
    if (!starfold_dtype_is_integer(dt)) {
        (void)starfold_element_from_double(dt, v, p, i);
        return;
    }
    const uint64_t bits = v >= 0x1p63 ? (uint64_t)v : (uint64_t)(int64_t)v;
    switch (starfold_dtype_size(dt)) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)bits; break;
    case 2: ((uint16_t *)p)[i] = (uint16_t)bits; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)bits; break;
    default: ((uint64_t *)p)[i] = bits; break;
    }
}

static double apply(starfold_op_t op, starfold_dtype_t dt, double a, double b)
{
    double r;
    switch (op) {
    case STARFOLD_OP_MIN: return a < b ? a : b;
    case STARFOLD_OP_MAX: return a > b ? a : b;
    case STARFOLD_OP_PROD: r = a * b; break;
    default: r = a + b; break;
    }
    /* float32 arithmetic rounds each step; float16 and bfloat16 compute in float32 too */
    return dt == STARFOLD_FLOAT32 || dt == STARFOLD_FLOAT16 || dt == STARFOLD_BFLOAT16 ? (double)(float)r : r;
}

static void interp_run(interp_t *in)
{
    starfold_graph_t g = in->g;
    for (size_t k = 0; k < g->nnodes; k++) {
        const starfold__node_t *n = &g->nodes[k];
        const size_t es = starfold_dtype_size(n->dtype);
        if (n->kind == STARFOLD_TASK_REDUCE) { /* every dst = op(src...) [/ divisor]; reads before writes */
            /* segment q: sources [q * ps, +ps), destinations [q * pd, +pd) */
            const size_t ps = n->nsrc / n->nseg, pd = n->ndst / n->nseg;
            for (size_t q = 0; q < n->nseg; q++) {
                const starfold__span_t *src = n->src + q * ps, *dst = n->dst + q * pd;
                for (size_t i = 0; i < dst[0].count; i++) {
                    double v = load(in->mem[src[0].buf], n->dtype, src[0].offset + i);
                    for (size_t s = 1; s < ps; s++)
                        v = apply(n->op, n->dtype, v, load(in->mem[src[s].buf], n->dtype, src[s].offset + i));
                    if (n->divisor > 1) {
                        if (starfold_dtype_is_integer(n->dtype)) v = trunc(v / n->divisor);
                        else if (n->dtype != STARFOLD_FLOAT64) v = (float)v / (float)n->divisor;
                        else v = v / n->divisor;
                    }
                    for (size_t d = 0; d < pd; d++) store(in->mem[dst[d].buf], n->dtype, dst[d].offset + i, v);
                }
            }
        } else if (n->kind == STARFOLD_TASK_SCALE) {
            for (size_t i = 0; i < n->dst[0].count; i++) {
                const starfold_dtype_t out = g->bufs[n->dst[0].buf].dtype; /* float64 when promoting */
                double v = load(in->mem[n->src[0].buf], n->dtype, n->src[0].offset + i);
                if (starfold_dtype_is_integer(out)) v = trunc(v / n->divisor);
                else if (out != STARFOLD_FLOAT64) v = (float)v / (float)n->divisor;
                else v = v / n->divisor;
                store(in->mem[n->dst[0].buf], out, n->dst[0].offset + i, v);
            }
        } else { /* segmented copy: concat(src) -> concat(dst) */
            size_t total = 0;
            for (size_t s = 0; s < n->nsrc; s++) total += n->src[s].count;
            unsigned char *tmp = malloc(total * es + 1), *w = tmp;
            for (size_t s = 0; s < n->nsrc; s++, w += n->src[s - 1].count * es)
                memcpy(w, in->mem[n->src[s].buf] + n->src[s].offset * es, n->src[s].count * es);
            w = tmp;
            for (size_t s = 0; s < n->ndst; s++, w += n->dst[s - 1].count * es)
                memcpy(in->mem[n->dst[s].buf] + n->dst[s].offset * es, w, n->dst[s].count * es);
            free(tmp);
        }
    }
}

/* Replica r, tensor t, element i: small values so PROD of 8 replicas stays exact and in range. */
static double input_raw(int r, size_t t, size_t i, starfold_op_t op)
{
    if (op == STARFOLD_OP_PROD) return (double)((r + (int)t + (int)i) % 3 - 1 + ((r + i) % 2 ? 2 : 0)); /* -1..3 */
    return (double)(((int)(r * 7 + t * 3 + i * 5)) % 23 - 11) + (i % 4) * 0.25 * (r % 2 ? 1 : -1);
}

/* @v as dtype @dt holds it: rounded (floats), wrapped to the type's width (integers). */
static double held(starfold_dtype_t dt, double v)
{
    unsigned char e[8];
    store(e, dt, 0, v);
    return load(e, dt, 0);
}

/*
 * The exact result over the inputs as their dtype holds them; integers wrap (before MEAN divides, as
 * the kernels do). *@mag: what a rounding of a partial result is relative to (sum |x|, or |product|).
 */
/* As input_raw(), without the signs for unsigned types (a uint64 holding -1 is beyond float64's
 * exact integers, where this interpreter computes). */
static double input_value(starfold_dtype_t dt, int r, size_t t, size_t i, starfold_op_t op)
{
    const double v = input_raw(r, t, i, op);
    return dt == STARFOLD_UINT8 || dt == STARFOLD_UINT16 || dt == STARFOLD_UINT32 || dt == STARFOLD_UINT64 ? fabs(v) : v;
}

static double reference(starfold_op_t op, starfold_dtype_t dt, int promote, int n, size_t t, size_t i, double *mag)
{
    const int is_int = starfold_dtype_is_integer(dt);
    double acc = 0, m = 0;
    for (int r = 0; r < n; r++) {
        const double v = held(dt, input_value(dt, r, t, i, op));
        m += fabs(v);
        if (r == 0) acc = v;
        else if (op == STARFOLD_OP_MIN) acc = acc < v ? acc : v;
        else if (op == STARFOLD_OP_MAX) acc = acc > v ? acc : v;
        else if (op == STARFOLD_OP_PROD) acc *= v;
        else acc += v;
    }
    if (is_int) acc = held(dt, acc);
    *mag = op == STARFOLD_OP_PROD ? fabs(acc) : op == STARFOLD_OP_MEAN ? m / n : m;
    if (op == STARFOLD_OP_MEAN) acc = is_int && !promote ? trunc(acc / n) : acc / n;
    return acc;
}

/*
 * How far a result of @dt may be from the exact one: float32 and float64 as close as their
 * arithmetic; integers exactly; float16 and bfloat16 one rounding (u) of @mag per task on the path,
 * at most n + 1 of them (the accuracy rule of <starfold/common.h>).
 */
static double tolerance(starfold_dtype_t dt, int n, double want, double mag)
{
    switch (dt) {
    case STARFOLD_FLOAT32: return 1e-5 * (1 + fabs(want));
    case STARFOLD_FLOAT16: return (n + 1) * 0x1p-11 * (1 + mag);
    case STARFOLD_BFLOAT16: return (n + 1) * 0x1p-8 * (1 + mag);
    default: return 1e-12 * (1 + fabs(want));
    }
}

/* Runs @g on the host and compares every output; returns the number of wrong elements. */
static size_t interp_verify(starfold_graph_t g, int broadcast)
{
    interp_t in = { g, calloc(g->nbufs, sizeof(unsigned char *)) };
    for (size_t b = 0; b < g->nbufs; b++) {
        const starfold__buffer_t *buf = &g->bufs[b];
        in.mem[b] = calloc(buf->count + 1, starfold_dtype_size(buf->dtype));
        if (buf->kind == SF_BUF_INPUT)
            for (size_t i = 0; i < buf->count; i++)
                store(in.mem[b], buf->dtype, i, input_value(buf->dtype, buf->slot, buf->tensor, i, g->op));
        else /* poison: a missed write shows up */
            for (size_t i = 0; i < buf->count; i++) store(in.mem[b], buf->dtype, i, -12345);
    }
    interp_run(&in);
    size_t wrong = 0;
    for (int d = 0; d < g->num_outputs; d++)
        for (size_t t = 0; t < g->num_tensors; t++) {
            size_t b = starfold__graph_output(g, d, t);
            const int gather = g->kind == STARFOLD_COLL_GATHER;
            int src = 0;       /* a gather: the source whose block element i is in, from @from on */
            size_t from = 0;
            for (size_t i = 0; i < g->bufs[b].count; i++) {
                while (gather && i >= from + starfold_graph_input_count(g, src, t)) from += starfold_graph_input_count(g, src++, t);
                /* a gather: the source's element, stored as the input is; MEAN divides it by n */
                const starfold_dtype_t odt = g->bufs[b].dtype, idt = g->tensors[t].dtype;
                double mag = 0;
                double want = gather      ? held(idt, input_value(idt, src, t, i - from, g->op))
                              : broadcast ? held(idt, input_value(idt, 0, t, i, g->op))
                                          : reference(g->op, idt, g->promote_integer_mean, g->num_inputs, t, i, &mag);
                if (gather && g->op == STARFOLD_OP_MEAN) {
                    mag = fabs(want) / g->num_inputs;
                    want /= g->num_inputs;
                    if (starfold_dtype_is_integer(odt)) want = trunc(want); /* truncated towards zero, as the kernels divide */
                }
                if ((broadcast || gather) && odt == STARFOLD_FLOAT32) want = (float)want;
                double got = load(in.mem[b], odt, i);
                double tol = tolerance(odt, g->num_inputs, want, mag);
                if (fabs(got - want) > tol) {
                    if (wrong < 3)
                        fprintf(stderr, "  %s: out %d tensor %zu [%zu] = %g, want %g\n", g->algorithm, d, t, i, got,
                                want);
                    wrong++;
                }
            }
        }
    for (size_t b = 0; b < g->nbufs; b++) free(in.mem[b]);
    free(in.mem);
    return wrong;
}

/* ---------------------------------------------------------------------------------------------- */

static starfold_topology_t topo(const char *name)
{
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_builtin(name, &t), STARFOLD_OK);
    return t;
}

/*
 * Whether @algo may refuse this topology: one-pass needs every device in one memory (CPU devices); on
 * a machine of separate memories it must answer STARFOLD_ERR_NOT_SUPPORTED, nothing else.
 */
static int refused_here(starfold_topology_t tp, const char *algo, starfold_status_t st, int n, const int *src, int ndst,
                        const int *dst)
{
    if (strcmp(algo, "one-pass") != 0) return 0;
    int shared = 1;
    for (int k = 0; k < n; k++) shared &= starfold_topology_same_memory(tp, src[0], src[k]);
    for (int k = 0; k < ndst; k++) shared &= starfold_topology_same_memory(tp, src[0], dst[k]);
    if (shared) return 0;
    CU_ASSERT_EQUAL(st, STARFOLD_ERR_NOT_SUPPORTED);
    return 1;
}

/* Compiles, checks and interprets one collective; counts failures into the CUnit run. */
static void compile_verify(starfold_topology_t tp, const char *algo, starfold_collective_t kind, starfold_op_t op,
                           int n, const int *src, int ndst, const int *dst, size_t nt,
                           const starfold_tensor_desc_t *tensors, int num_packs)
{
    starfold_collective_desc_t d = { kind, op, n, src, ndst, dst, nt, tensors };
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    o.num_packs = num_packs;
    starfold_graph_t g = NULL;
    starfold_status_t st = starfold_graph_compile(tp, algo, &d, &o, &g);
    if (refused_here(tp, algo, st, n, src, ndst, dst)) return;
    if (st != STARFOLD_OK) fprintf(stderr, "compile %s n=%d: %s\n", algo, n, starfold_last_error());
    CU_ASSERT_EQUAL_FATAL(st, STARFOLD_OK);
    st = starfold_graph_check(g);
    if (st != STARFOLD_OK)
        fprintf(stderr, "check %s n=%d op=%s packs=%d: %s\n", algo, n, starfold_op_name(op), num_packs,
                starfold_last_error());
    CU_ASSERT_EQUAL(st, STARFOLD_OK);
    size_t wrong = interp_verify(g, kind == STARFOLD_COLL_BROADCAST);
    if (wrong)
        fprintf(stderr, "%s n=%d op=%s packs=%d: %zu wrong\n", algo, n, starfold_op_name(op), num_packs, wrong);
    CU_ASSERT_EQUAL(wrong, 0);
    starfold_graph_destroy(g);
}

static const int iota[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };

/* All-reduce: every algorithm x N = 1..8 x op x dtype, sizes 0, 1, 7, 1000 in one batch. */
static void test_allreduce_matrix(void)
{
    const char *topos[] = { "dgx1-v100", "host" };
    for (int tpi = 0; tpi < 2; tpi++) {
        starfold_topology_t full = topo(topos[tpi]);
        for (int n = 1; n <= 8; n++) {
            starfold_topology_t tp = NULL;
            CU_ASSERT_EQUAL_FATAL(starfold_topology_subset(full, n, &tp), STARFOLD_OK);
            for (int a = 0; a < starfold_algorithm_count(); a++)
                for (int op = 0; op < STARFOLD_OP_COUNT; op++)
                    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) {
                        starfold_tensor_desc_t t[4] = { { (starfold_dtype_t)dt, 0 }, { (starfold_dtype_t)dt, 1 },
                                                        { (starfold_dtype_t)dt, 7 }, { (starfold_dtype_t)dt, 1000 } };
                        for (int packs = 0; packs <= 3; packs++)
                            compile_verify(tp, starfold_algorithm_name(a), STARFOLD_COLL_REDUCE, (starfold_op_t)op, n,
                                           iota, 0, NULL, 4, t, packs);
                    }
            starfold_topology_destroy(tp);
        }
        starfold_topology_destroy(full);
    }
}

/* Mixed dtypes in one batch, packs more than elements, replicas in a shuffled device order. */
static void test_mixed_and_odd(void)
{
  for (int host = 0; host < 2; host++) {
    starfold_topology_t tp = topo(host ? "host" : "dgx1-v100");
    starfold_tensor_desc_t t[5] = {
        { STARFOLD_FLOAT32, 33 }, { STARFOLD_INT64, 5 }, { STARFOLD_FLOAT32, 2 }, { STARFOLD_FLOAT64, 17 },
        { STARFOLD_INT32, 3 },
    };
    const int shuffled[7] = { 6, 2, 7, 0, 5, 3, 1 };
    for (int a = 0; a < starfold_algorithm_count(); a++)
        for (int packs = 0; packs <= 9; packs++) {
            compile_verify(tp, starfold_algorithm_name(a), STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, iota, 0, NULL, 5,
                           t, packs);
            compile_verify(tp, starfold_algorithm_name(a), STARFOLD_COLL_REDUCE, STARFOLD_OP_MEAN, 7, shuffled, 0,
                           NULL, 5, t, packs);
        }
    starfold_topology_destroy(tp);
  }
}

/* Reduce to one destination, to destinations that are not the sources, and broadcast. */
static void test_reduce_and_broadcast(void)
{
  for (int host = 0; host < 2; host++) {
    starfold_topology_t tp = topo(host ? "host" : "dgx1-p100");
    starfold_tensor_desc_t t[2] = { { STARFOLD_FLOAT64, 10 }, { STARFOLD_INT32, 3 } };
    const int one[1] = { 5 }, some[3] = { 7, 1, 2 }, srcs[4] = { 0, 1, 2, 3 };
    for (int a = 0; a < starfold_algorithm_count(); a++) {
        const char *al = starfold_algorithm_name(a);
        compile_verify(tp, al, STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, iota, 1, one, 2, t, 1);
        compile_verify(tp, al, STARFOLD_COLL_REDUCE, STARFOLD_OP_MEAN, 4, srcs, 3, some, 2, t, 1);
        compile_verify(tp, al, STARFOLD_COLL_BROADCAST, STARFOLD_OP_SUM, 1, one, 3, some, 2, t, 1);
        compile_verify(tp, al, STARFOLD_COLL_BROADCAST, STARFOLD_OP_SUM, 1, one, 8, iota, 2, t, 1);
    }
    starfold_topology_destroy(tp);
  }
}

/*
 * Gather: every algorithm, all-gathers over 1..8 devices of the DGX-1 and the host and gathers to a
 * few devices, interpreted and compared with the inputs concatenated in source order. Ring's
 * all-gather moves each block around its rings over NVLink only, (n - 1) / n of the gathered bytes
 * into every device; the others copy directly (n x destinations copies a tensor). The model counts
 * all_gather_perf's size (every source's bytes) and busbw = algbw (n - 1) / n.
 */
static void test_gather(void)
{
    const char *topos[] = { "dgx1-v100", "host" };
    starfold_tensor_desc_t t[4] = { { STARFOLD_FLOAT32, 1000 }, { STARFOLD_INT64, 0 }, { STARFOLD_FLOAT64, 7 },
                                    { STARFOLD_INT32, 1 } };
    const int some[3] = { 6, 1, 3 }, one[1] = { 2 };
    for (int tpi = 0; tpi < 2; tpi++) {
        starfold_topology_t full = topo(topos[tpi]);
        for (int n = 1; n <= 8; n++) {
            starfold_topology_t tp = NULL;
            CU_ASSERT_EQUAL_FATAL(starfold_topology_subset(full, n, &tp), STARFOLD_OK);
            for (int a = 0; a < starfold_algorithm_count(); a++)
                compile_verify(tp, starfold_algorithm_name(a), STARFOLD_COLL_GATHER, STARFOLD_OP_SUM, n, iota, 0, NULL, 4, t,
                               1);
            starfold_topology_destroy(tp);
        }
        for (int a = 0; a < starfold_algorithm_count(); a++) {
            compile_verify(full, starfold_algorithm_name(a), STARFOLD_COLL_GATHER, STARFOLD_OP_SUM, 8, iota, 3, some, 4, t, 1);
            compile_verify(full, starfold_algorithm_name(a), STARFOLD_COLL_GATHER, STARFOLD_OP_MAX, 5, iota, 1, one, 4, t, 1);
        }
        starfold_topology_destroy(full);
    }

    /*
     * Sources of different counts (IndexedSlices' rows, an all_gather along a ragged axis), MEAN dividing
     * every gathered element by n: every algorithm, 1..8 sources, all-gather and a gather to two devices.
     */
    starfold_topology_t dg = topo("dgx1-v100");
    for (int n = 1; n <= 8; n++) {
        starfold_topology_t tp = NULL;
        CU_ASSERT_EQUAL_FATAL(starfold_topology_subset(dg, n, &tp), STARFOLD_OK);
        size_t counts[8 * 4];
        for (int s = 0; s < n; s++)
            for (size_t k = 0; k < 4; k++) counts[(size_t)s * 4 + k] = (size_t)((s * 37 + (int)k * 11) % 9) * (k + 1); /* zeros too */
        const int two[2] = { n - 1, 0 };
        for (int a = 0; a < starfold_algorithm_count(); a++)
            for (int mean = 0; mean < 2; mean++)
                for (int all = 0; all < 2; all++) {
                    if (!all && n < 2) continue;
                    starfold_collective_desc_t d = { STARFOLD_COLL_GATHER, mean ? STARFOLD_OP_MEAN : STARFOLD_OP_SUM, n, iota,
                                                     all ? 0 : 2, all ? NULL : two, 4, t, 0, counts };
                    starfold_graph_t g = NULL;
                    starfold_status_t st = starfold_graph_compile(tp, starfold_algorithm_name(a), &d, NULL, &g);
                    if (refused_here(tp, starfold_algorithm_name(a), st, n, iota, all ? n : 2, all ? iota : two)) continue;
                    if (st != STARFOLD_OK) fprintf(stderr, "%s n=%d: %s\n", starfold_algorithm_name(a), n, starfold_last_error());
                    CU_ASSERT_EQUAL_FATAL(st, STARFOLD_OK);
                    CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
                    size_t sum = 0;
                    for (int s = 0; s < n; s++) {
                        sum += counts[(size_t)s * 4 + 2];
                        CU_ASSERT_EQUAL(starfold_graph_input_count(g, s, 2), counts[(size_t)s * 4 + 2]);
                    }
                    CU_ASSERT_EQUAL(starfold_graph_output_count(g, 2), sum);
                    size_t wrong = interp_verify(g, 0);
                    if (wrong) fprintf(stderr, "%s n=%d mean=%d all=%d: %zu wrong\n", starfold_algorithm_name(a), n, mean, all, wrong);
                    CU_ASSERT_EQUAL(wrong, 0);
                    starfold_graph_destroy(g);
                }
        starfold_topology_destroy(tp);
    }
    starfold_topology_destroy(dg);
    {   /* source_counts belong to a gather */
        starfold_topology_t tp = topo("dgx1-v100");
        size_t counts[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
        starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, iota, 0, NULL, 1, t, 0, counts };
        starfold_graph_t g = NULL;
        CU_ASSERT_EQUAL(starfold_graph_compile(tp, "ring", &d, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "source_counts are for a gather only"));
        starfold_topology_destroy(tp);
    }

    starfold_topology_t tp = topo("dgx1-v100");
    starfold_tensor_desc_t big = { STARFOLD_FLOAT32, 1 << 20 };
    starfold_collective_desc_t d = { STARFOLD_COLL_GATHER, STARFOLD_OP_SUM, 8, iota, 0, NULL, 1, &big };
    starfold_graph_t ring = NULL, direct = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "ring", &d, NULL, &ring), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "reduce-to-one", &d, NULL, &direct), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_graph_output_count(ring, 0), 8u << 20);
    CU_ASSERT_EQUAL(starfold_graph_output_count(ring, 1), 0);
    CU_ASSERT_EQUAL(starfold_graph_num_tasks(direct), 64);
    starfold_link_bytes_t *pairs = NULL;
    size_t np = 0;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_link_bytes(ring, &pairs, &np), STARFOLD_OK);
    uint64_t into[8] = { 0 };
    for (size_t i = 0; i < np; i++) {
        starfold_link_t l;
        CU_ASSERT_EQUAL(starfold_topology_best_link(tp, pairs[i].from, pairs[i].to, &l), STARFOLD_OK);
        CU_ASSERT_EQUAL(l.kind, STARFOLD_LINK_NVLINK);
        into[pairs[i].to] += pairs[i].bytes;
    }
    for (int dev = 0; dev < 8; dev++) CU_ASSERT_EQUAL(into[dev], 7u * (4u << 20)); /* every other block, once */
    free(pairs);
    starfold_prediction_t pr, pd;
    CU_ASSERT_EQUAL(starfold_graph_simulate(ring, NULL, &pr), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_graph_simulate(direct, NULL, &pd), STARFOLD_OK);
    CU_ASSERT_EQUAL(pr.bytes, 8u * (4u << 20));
    CU_ASSERT(fabs(pr.busbw_GBps - pr.algbw_GBps * 7 / 8) < 1e-9 * pr.busbw_GBps);
    CU_ASSERT(pr.time_us < pd.time_us); /* the rings use every NVLink; direct copies cross the sockets */
    starfold_graph_t au = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "auto", &d, NULL, &au), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_graph_algorithm(au), "auto:ring");
    starfold_graph_destroy(au);
    starfold_graph_destroy(ring);
    starfold_graph_destroy(direct);

    /* The gathered output must fit: 2^48 elements per tensor, STARFOLD_COLLECTIVE_MAX_BYTES in all. */
    starfold_tensor_desc_t huge = { STARFOLD_FLOAT32, ((size_t)1 << 46) };
    d.tensors = &huge;
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "ring", &d, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "gather"));
    CU_ASSERT_PTR_NULL(g);
    starfold_topology_destroy(tp);
}

/* TensorFlow's structure on a DGX-1: groups {0..3} and {4..7}, root i % 8 and its partner i + 4. */
static void test_hierarchical_copy_is_tensorflows(void)
{
    starfold_topology_t tp = topo("dgx1-v100");
    starfold_tensor_desc_t t[1] = { { STARFOLD_FLOAT32, 8 * 1024 } };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, iota, 0, NULL, 1, t };
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    o.num_packs = 8;
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "hierarchical-copy", &d, &o, &g), STARFOLD_OK);
    /* Per pack: 8 packs, reduce A, reduce B, cross add, copy to r1, 8 unpacks = 20 tasks. */
    CU_ASSERT_EQUAL(g->nnodes, 8 * 20);
    int reduces_seen = 0;
    for (size_t k = 0; k < g->nnodes; k++) {
        const starfold__node_t *n = &g->nodes[k];
        if (n->kind != STARFOLD_TASK_REDUCE || n->nsrc != 4) continue;
        /* A group reduce: its sources are one quad, and it runs on a member of that quad. */
        int quad = g->bufs[n->src[0].buf].device / 4;
        for (size_t s = 0; s < 4; s++) CU_ASSERT_EQUAL(g->bufs[n->src[s].buf].device / 4, quad);
        CU_ASSERT_EQUAL(n->device / 4, quad);
        int pack = n->tag, r0 = pack % 8;
        CU_ASSERT(n->device == r0 || n->device == (r0 + 4) % 8);
        reduces_seen++;
    }
    CU_ASSERT_EQUAL(reduces_seen, 16);
    starfold_graph_destroy(g);

    /* num_packs = 1: every reduction through GPU 0 and GPU 4. */
    o.num_packs = 1;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "hierarchical-copy", &d, &o, &g), STARFOLD_OK);
    for (size_t k = 0; k < g->nnodes; k++)
        if (g->nodes[k].kind == STARFOLD_TASK_REDUCE) CU_ASSERT(g->nodes[k].device == 0 || g->nodes[k].device == 4);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

/* The pack plan: contiguous, remainder to the last pack, per dtype, empty packs dropped. */
static void test_pack_counts(void)
{
    starfold_topology_t tp = topo("host");
    starfold_tensor_desc_t t[3] = { { STARFOLD_FLOAT32, 10 }, { STARFOLD_FLOAT32, 3 }, { STARFOLD_FLOAT64, 2 } };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 2, iota, 0, NULL, 3, t };
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    o.num_packs = 4; /* float32: 13 -> 3,3,3,4; float64: 2 -> 0,0,0,2 (one whole tensor: no pack task) */
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "hierarchical-copy", &d, &o, &g), STARFOLD_OK);
    starfold_graph_stats_t s;
    CU_ASSERT_EQUAL(starfold_graph_stats(g, &s), STARFOLD_OK);
    CU_ASSERT_EQUAL(s.tasks_by_kind[STARFOLD_TASK_PACK], 4 * 2);
    CU_ASSERT_EQUAL(s.tasks_by_kind[STARFOLD_TASK_UNPACK], 4 * 2);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

/* Task count grows with packs, not tensors. */
static void test_task_count_follows_packs(void)
{
    starfold_topology_t tp = topo("host");
    starfold_tensor_desc_t *t = malloc(1000 * sizeof *t);
    for (int i = 0; i < 1000; i++) t[i] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, 1024 };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, iota, 0, NULL, 1000, t };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "hierarchical-copy", &d, NULL, &g), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_graph_num_tasks(g), 20);
    CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
    starfold_graph_destroy(g);
    free(t);
    starfold_topology_destroy(tp);
}

/*
 * one-pass cuts tensors for the workers only where the graph has too few tasks of its own: one 1 MiB
 * tensor over 8 replicas gives 8 tasks (128 KiB each); 4 x 1 MiB, whose 4 natural tasks are too
 * few, 32; 16 x 2 MiB (16 natural tasks, as a model's gradients) stays 16; a batch of small
 * tensors (1,000 x 4 KiB: one natural chunk) is split into 8 groups. Every graph checked and run by
 * the interpreter.
 */
static void test_one_pass_cuts(void)
{
    starfold_topology_t tp = topo("host");
    static const struct { size_t n, count, tasks; } cases[] = {
        { 1, 262144, 8 }, { 4, 262144, 32 }, { 16, 524288, 16 }, { 1000, 1024, 8 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        starfold_tensor_desc_t *t = malloc(cases[c].n * sizeof *t);
        for (size_t i = 0; i < cases[c].n; i++) t[i] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, cases[c].count };
        const starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, iota, 8, iota, cases[c].n, t };
        starfold_graph_t g = NULL;
        CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "one-pass", &d, NULL, &g), STARFOLD_OK);
        if (starfold_graph_num_tasks(g) != cases[c].tasks)
            fprintf(stderr, "one-pass %zu x %zu floats: %zu tasks, want %zu\n", cases[c].n, cases[c].count,
                    starfold_graph_num_tasks(g), cases[c].tasks);
        CU_ASSERT_EQUAL(starfold_graph_num_tasks(g), cases[c].tasks);
        CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
        if (cases[c].n * cases[c].count <= 262144 * 4) CU_ASSERT_EQUAL(interp_verify(g, 0), 0);
        starfold_graph_destroy(g);
        free(t);
    }
    starfold_topology_destroy(tp);
}

/*
 * On GPU devices sharing one memory (StarPU's workers of one GPU: starfold_topology_set_device_memory())
 * one-pass compiles, moves nothing between them, and gives a tensor of its own one task: one 1 MiB
 * tensor is one task on 8 replicas, 4 x 1 MiB four, 16 x 2 MiB sixteen (a kernel already fills the
 * GPU, and StarPU runs a GPU's tasks one at a time); 3 GiB, past ONE_PASS_GPU_CHUNK, is 3. Small
 * tensors are grouped as on CPU devices (1,000 x 4 KiB: 8 groups). "auto" leaves one-pass out there.
 * GPUs of memories of their own refuse it.
 */
static void test_one_pass_shared_gpu(void)
{
    starfold_topology_t tp = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_create("one-gpu", 8, &tp), STARFOLD_OK);
    for (int a = 0; a < 8; a++)
        for (int b = a + 1; b < 8; b++) {
            const starfold_link_t l = { .a = a, .b = b, .kind = STARFOLD_LINK_HOST, .lanes = 1, .bandwidth_GBps = 800.0 };
            CU_ASSERT_EQUAL_FATAL(starfold_topology_add_link(tp, &l), STARFOLD_OK);
        }
    starfold_tensor_desc_t one = { STARFOLD_FLOAT32, 262144 };
    const starfold_collective_desc_t d1 = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, iota, 8, iota, 1, &one };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "one-pass", &d1, NULL, &g), STARFOLD_ERR_NOT_SUPPORTED);
    for (int dev = 0; dev < 8; dev++) CU_ASSERT_EQUAL_FATAL(starfold_topology_set_device_memory(tp, dev, 1), STARFOLD_OK);
    static const struct { size_t n, count, tasks; } cases[] = {
        { 1, 262144, 1 }, { 4, 262144, 4 }, { 16, 524288, 16 }, { 1000, 1024, 8 }, { 1, (size_t)3 << 28, 3 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        starfold_tensor_desc_t *t = malloc(cases[c].n * sizeof *t);
        for (size_t i = 0; i < cases[c].n; i++) t[i] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, cases[c].count };
        const starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, iota, 8, iota, cases[c].n, t };
        CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "one-pass", &d, NULL, &g), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_graph_num_tasks(g), cases[c].tasks);
        CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
        starfold_graph_stats_t st;
        CU_ASSERT_EQUAL(starfold_graph_stats(g, &st), STARFOLD_OK);
        CU_ASSERT_EQUAL(st.bytes_moved, 0);
        if (cases[c].n * cases[c].count <= 262144 * 4) CU_ASSERT_EQUAL(interp_verify(g, 0), 0);
        starfold_graph_destroy(g);
        if (c == 0) {
            CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "auto", &d, NULL, &g), STARFOLD_OK);
            CU_ASSERT_PTR_NULL(strstr(starfold_graph_algorithm(g), "one-pass"));
            starfold_graph_destroy(g);
        }
        free(t);
    }
    starfold_topology_destroy(tp);
}

/* Size-based packs: whole tensors, a pack closed once over bytes_per_pack, per dtype. */
static void test_bytes_per_pack(void)
{
    starfold_topology_t tp = topo("dgx1-v100");
    starfold_tensor_desc_t t[6] = { { STARFOLD_FLOAT32, 10 }, { STARFOLD_FLOAT32, 10 }, { STARFOLD_FLOAT64, 3 },
                                    { STARFOLD_FLOAT32, 10 }, { STARFOLD_FLOAT32, 10 }, { STARFOLD_FLOAT32, 0 } };
    const size_t limits[5] = { 1, 50, 100, 4000, (size_t)1 << 30 };
    /* float32: 4 x 40 bytes; a pack closes once over the limit (50: after 2 tensors, 100: after 3);
       float64 is its own pack. */
    const size_t packs[5] = { 4 + 1, 2 + 1, 2 + 1, 1 + 1, 1 + 1 };
    for (int i = 0; i < 5; i++) {
        starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 5, iota, 0, NULL, 6, t };
        starfold_algo_options_t o;
        starfold_algo_options_init(&o);
        o.num_packs = 3; /* ignored when bytes_per_pack > 0 */
        o.bytes_per_pack = limits[i];
        starfold_graph_t g = NULL;
        CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "hierarchical-copy", &d, &o, &g), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
        CU_ASSERT_EQUAL(interp_verify(g, 0), 0);
        /* One copy of the total to the second root per pack: the only copy into a temporary. */
        size_t cross = 0;
        for (size_t k = 0; k < g->nnodes; k++)
            cross += g->nodes[k].kind == STARFOLD_TASK_COPY && g->bufs[g->nodes[k].dst[0].buf].kind == SF_BUF_TEMP;
        if (cross != packs[i]) fprintf(stderr, "bytes_per_pack %zu: %zu packs, want %zu\n", limits[i], cross, packs[i]);
        CU_ASSERT_EQUAL(cross, packs[i]);
        /* Packs of one whole tensor need no pack or unpack task. */
        if (i == 0) {
            starfold_graph_stats_t s;
            CU_ASSERT_EQUAL(starfold_graph_stats(g, &s), STARFOLD_OK);
            CU_ASSERT_EQUAL(s.tasks_by_kind[STARFOLD_TASK_PACK], 0);
        }
        starfold_graph_destroy(g);
    }
    starfold_topology_destroy(tp);
}

/* TensorFlow's integer MEAN: the integer sum divided in float64, float64 outputs. */
static void test_promote_integer_mean(void)
{
  for (int host = 0; host < 2; host++) {
    starfold_topology_t full = topo(host ? "host" : "dgx1-v100");
    starfold_tensor_desc_t t[3] = { { STARFOLD_INT32, 37 }, { STARFOLD_FLOAT32, 5 }, { STARFOLD_INT64, 9 } };
    for (int n = 1; n <= 8; n++)
        for (int a = 0; a < starfold_algorithm_count(); a++)
            for (int packs = 0; packs <= 2; packs++) {
                starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_MEAN, n, iota, 0, NULL, 3, t, 1 };
                starfold_algo_options_t o;
                starfold_algo_options_init(&o);
                o.num_packs = packs;
                starfold_graph_t g = NULL;
                const starfold_status_t cst = starfold_graph_compile(full, starfold_algorithm_name(a), &d, &o, &g);
                if (refused_here(full, starfold_algorithm_name(a), cst, n, iota, 0, NULL)) continue;
                CU_ASSERT_EQUAL_FATAL(cst, STARFOLD_OK);
                CU_ASSERT_EQUAL(starfold_graph_output_dtype(g, 0), STARFOLD_FLOAT64);
                CU_ASSERT_EQUAL(starfold_graph_output_dtype(g, 1), STARFOLD_FLOAT32);
                CU_ASSERT_EQUAL(starfold_graph_output_dtype(g, 2), STARFOLD_FLOAT64);
                starfold_status_t st = starfold_graph_check(g);
                if (st != STARFOLD_OK) fprintf(stderr, "promote n=%d: %s\n", n, starfold_last_error());
                CU_ASSERT_EQUAL(st, STARFOLD_OK);
                CU_ASSERT_EQUAL(interp_verify(g, 0), 0);
                starfold_graph_destroy(g);
            }
    starfold_topology_destroy(full);
  }
}

static void test_bad_input(void)
{
    starfold_topology_t tp = topo("dgx1-v100");
    starfold_tensor_desc_t t[1] = { { STARFOLD_FLOAT32, 4 } };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, iota, 0, NULL, 1, t };
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    starfold_graph_t g = (starfold_graph_t)0x1; /* must stay untouched on failure */

    o.num_packs = -1;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "hierarchical-copy", &d, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "num_packs >= 0"));
    CU_ASSERT_PTR_EQUAL(g, (starfold_graph_t)0x1);
    o.num_packs = 1;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "no-such-algorithm", &d, &o, &g), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(starfold_graph_compile(NULL, "reduce-to-one", &d, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, NULL, &d, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "reduce-to-one", NULL, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "reduce-to-one", &d, &o, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    const int dup[2] = { 1, 1 }, out_of_range[2] = { 1, 9 };
    starfold_collective_desc_t b = d;
    b.num_sources = 2;
    b.sources = dup;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "reduce-to-one", &b, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    b.sources = out_of_range;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "reduce-to-one", &b, &o, &g), STARFOLD_ERR_NOT_FOUND);
    b = d;
    b.num_sources = 0;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "reduce-to-one", &b, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    b = d;
    b.num_tensors = 0;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "reduce-to-one", &b, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    b = d;
    b.op = (starfold_op_t)42;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "reduce-to-one", &b, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    b = d;
    b.kind = STARFOLD_COLL_BROADCAST; /* 8 sources */
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "reduce-to-one", &b, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_tensor_desc_t bad_t[1] = { { (starfold_dtype_t)19, 4 } };
    b = d;
    b.tensors = bad_t;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "reduce-to-one", &b, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    o.reduce_to_device = 8;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "reduce-to-one", &d, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    b = d;
    b.num_destinations = 1;
    b.destinations = NULL;
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "reduce-to-one", &b, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_EQUAL(g, (starfold_graph_t)0x1);
    CU_ASSERT_EQUAL(starfold_graph_check(NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_topology_destroy(tp);
}

/* One lookup, case-insensitive; the options each algorithm reads ("auto": every one another reads). */
static void test_registry(void)
{
    for (int a = 0; a < starfold_algorithm_count(); a++) CU_ASSERT_EQUAL(starfold_algorithm_find(starfold_algorithm_name(a)), a);
    const int ring = starfold_algorithm_find("ring");
    CU_ASSERT(ring >= 0);
    CU_ASSERT_EQUAL(starfold_algorithm_find("RING"), ring);
    CU_ASSERT_EQUAL(starfold_algorithm_find("Ring"), ring);
    CU_ASSERT_EQUAL(starfold_algorithm_find("rin"), -1);
    CU_ASSERT_EQUAL(starfold_algorithm_find("ring "), -1);
    CU_ASSERT_EQUAL(starfold_algorithm_find(""), -1);
    CU_ASSERT_EQUAL(starfold_algorithm_find(NULL), -1);
    CU_ASSERT_EQUAL(starfold_algorithm_find("all"), -1);

    CU_ASSERT_EQUAL(starfold_algorithm_options(-1), 0u);
    CU_ASSERT_EQUAL(starfold_algorithm_options(starfold_algorithm_count()), 0u);
    CU_ASSERT_EQUAL(starfold_algorithm_options(starfold_algorithm_find("reduce-to-one")), STARFOLD_ALGO_OPTION_REDUCE_TO_DEVICE);
    CU_ASSERT_EQUAL(starfold_algorithm_options(starfold_algorithm_find("one-pass")), STARFOLD_ALGO_OPTION_CHUNK_BYTES);
    CU_ASSERT(starfold_algorithm_options(ring) & STARFOLD_ALGO_OPTION_NUM_RINGS);
    unsigned all = 0;
    for (int a = 0; a < starfold_algorithm_count(); a++)
        if (a != starfold_algorithm_find("auto")) all |= starfold_algorithm_options(a);
    CU_ASSERT_EQUAL(starfold_algorithm_options(starfold_algorithm_find("auto")), all);

    /* compile takes any case and names the graph as the registry does */
    starfold_topology_t tp = topo("dgx1-v100");
    starfold_tensor_desc_t t[1] = { { STARFOLD_FLOAT32, 1000 } };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 4, iota, 0, NULL, 1, t };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "Halving-Doubling", &d, NULL, &g), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_graph_algorithm(g), "halving-doubling");
    starfold_graph_destroy(g);
    CU_ASSERT_EQUAL(starfold_graph_compile(tp, "no-such-algorithm", &d, NULL, &g), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_STRING_EQUAL(starfold_last_error(), "unknown algorithm 'no-such-algorithm' (known: reduce-to-one, "
                                                  "hierarchical-copy, ring, halving-doubling, trees, one-pass, hierarchical, "
                                                  "leader, auto)");
    starfold_topology_destroy(tp);
}

/*
 * hierarchical and leader on 6 ranks in 2 nodes of 3 (starfold_topology_ranks()), one float32
 * tensor of S = 24,000 bytes, worked out from the patterns (hierarchical.c, leader.c):
 *  - hierarchical: 3 shards of S/3; only shard j's owners, rank j and rank j + 3, talk across the
 *    network, a ring of 2 moving half a shard each way twice (reduce-scatter, all-gather): S/3 =
 *    8,000 bytes per direction, 2(N-1) x S = 48,000 across the network in all (a flat ring: 2(n-1)/n
 *    x S per rank, 40,000 per rank); inside a node each rank reads each other's shard twice (its
 *    reduce-scatter, then the owner's result): 16,000 per direction;
 *  - leader (pack 0: leaders ranks 0 and 3): the leaders read each other's node sum, S each way, and
 *    nothing else crosses the network; the critical path is 3 tasks (sum, total, copy out).
 */
static void test_follow_nodes(void)
{
    static const int node_of[6] = { 0, 0, 0, 1, 1, 1 };
    starfold_topology_t tp = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_ranks(6, node_of, NULL, NULL, &tp), STARFOLD_OK);
    starfold_tensor_desc_t t = { STARFOLD_FLOAT32, 6000 };
    const starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 6, iota, 0, NULL, 1, &t, 0 };
    for (int a = 0; a < 2; a++) {
        starfold_graph_t g = NULL;
        CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, a ? "leader" : "hierarchical", &d, NULL, &g), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
        starfold_link_bytes_t *pairs = NULL;
        size_t np = 0;
        CU_ASSERT_EQUAL_FATAL(starfold_graph_link_bytes(g, &pairs, &np), STARFOLD_OK);
        uint64_t network = 0;
        for (size_t i = 0; i < np; i++) {
            const int across = node_of[pairs[i].from] != node_of[pairs[i].to];
            network += across ? pairs[i].bytes : 0;
            if (!a) {
                if (across) CU_ASSERT_EQUAL(pairs[i].to, (pairs[i].from + 3) % 6);
                CU_ASSERT_EQUAL(pairs[i].bytes, across ? 8000u : 16000u);
            } else if (across) {
                CU_ASSERT((pairs[i].from == 0 && pairs[i].to == 3) || (pairs[i].from == 3 && pairs[i].to == 0));
                CU_ASSERT_EQUAL(pairs[i].bytes, 24000u);
            }
        }
        CU_ASSERT_EQUAL(np, a ? 2u + 8u : 6u + 12u); /* leader: 2 across, 2 x 2 reads of each leader's members + 2 x 2 copies */
        CU_ASSERT_EQUAL(network, 48000u); /* 2(N-1) x S either way: the leaders move it in one hop */
        starfold_graph_stats_t st;
        CU_ASSERT_EQUAL(starfold_graph_stats(g, &st), STARFOLD_OK);
        if (a) CU_ASSERT_EQUAL(st.critical_path_tasks, 3u);
        free(pairs);
        starfold_graph_destroy(g);
    }
    starfold_topology_destroy(tp);
}

/* Reduce-to-one honours reduce_to_device and MEAN divides on it before the copies. */
static void test_reduce_to_device(void)
{
    starfold_topology_t tp = topo("dgx1-v100");
    starfold_tensor_desc_t t[1] = { { STARFOLD_FLOAT32, 16 } };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_MEAN, 8, iota, 0, NULL, 1, t };
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    o.reduce_to_device = 6;
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(tp, "reduce-to-one", &d, &o, &g), STARFOLD_OK);
    for (size_t k = 0; k < g->nnodes; k++) {
        if (g->nodes[k].kind == STARFOLD_TASK_REDUCE) CU_ASSERT_EQUAL(g->nodes[k].device, 6);
        if (g->nodes[k].kind == STARFOLD_TASK_SCALE) CU_ASSERT_EQUAL(g->nodes[k].device, 6);
    }
    CU_ASSERT_EQUAL(interp_verify(g, 0), 0);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

/*
 * A graph near the task limit checked within 1.5 GiB of address space, in a child process that
 * setrlimit() binds: hierarchical-copy of 21,845 tensors unpacked on a DGX-1, 262,140 tasks. The old
 * checker's ancestry bitset alone was n^2/16 = 4.3 GB there (it answered STARFOLD_ERR_OUT_OF_MEMORY
 * under this limit); the blocked one holds at most 64 MiB of it. Then the last task (a copy of the
 * broadcast) loses its deps: the verdict must name it. Not under the sanitizers' address space
 * (their shadow reserves terabytes: no limit then) and not under valgrind (minutes; smaller graphs
 * cover the code there).
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LIMIT_ADDRESS_SPACE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LIMIT_ADDRESS_SPACE 0
#endif
#endif
#ifndef LIMIT_ADDRESS_SPACE
#define LIMIT_ADDRESS_SPACE 1
#endif

static int check_near_limit_child(void)
{
    if (LIMIT_ADDRESS_SPACE) {
        const struct rlimit lim = { (rlim_t)3 << 29, (rlim_t)3 << 29 }; /* 1.5 GiB */
        if (setrlimit(RLIMIT_AS, &lim) != 0) return 20;
    }
    starfold_topology_t tp = NULL;
    if (starfold_topology_builtin("dgx1-v100", &tp) != STARFOLD_OK) return 21;
    const size_t nt = 21845;
    starfold_tensor_desc_t *t = malloc(nt * sizeof *t);
    if (!t) return 22;
    for (size_t k = 0; k < nt; k++) t[k] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, 256 };
    starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, iota, 0, NULL, nt, t };
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    o.num_packs = 0;
    starfold_graph_t g = NULL;
    int rc = 0;
    if (starfold_graph_compile(tp, "hierarchical-copy", &d, &o, &g) != STARFOLD_OK) {
        fprintf(stderr, "\n  compile: %s", starfold_last_error());
        rc = 23;
    } else if (g->nnodes < 200000 || g->nnodes > STARFOLD_GRAPH_MAX_TASKS) {
        fprintf(stderr, "\n  %zu tasks", g->nnodes);
        rc = 24;
    } else if (starfold_graph_check(g) != STARFOLD_OK) {
        fprintf(stderr, "\n  check: %s", starfold_last_error());
        rc = 25;
    } else {
        const size_t last = g->nnodes - 1;
        char want[128];
        snprintf(want, sizeof want, "node %zu (copy on device 7) reads elements [0, 256) of temporary buffer", last);
        g->nodes[last].ndeps = 0;
        const starfold_status_t st = starfold_graph_check(g);
        if (st != STARFOLD_ERR_GRAPH_INVALID || !strstr(starfold_last_error(), want) ||
            !strstr(starfold_last_error(), "that no ancestor wrote")) {
            fprintf(stderr, "\n  corrupted: %s '%s', want '%s'", starfold_status_string(st), starfold_last_error(), want);
            rc = 26;
        }
    }
    starfold_graph_destroy(g);
    free(t);
    starfold_topology_destroy(tp);
    return rc;
}

static void test_check_near_task_limit(void)
{
    const char *wrapper = getenv("SF_TEST_WRAPPER");
    if (wrapper && *wrapper) {
        fprintf(stderr, "\n  not under %s: a 262,140-task graph would take minutes", wrapper);
        return;
    }
    fflush(NULL);
    const pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) _exit(check_near_limit_child());
    int status = 0;
    CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT(WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status)) fprintf(stderr, "\n  child exited %d", WEXITSTATUS(status));
    CU_ASSERT_EQUAL(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

int main(void)
{
    if (starfold__tu_begin() != 0) return 1;
    CU_pSuite s = CU_add_suite("graph", NULL, NULL);
    CU_add_test(s, "all-reduce: algorithms x N=1..8 x ops x dtypes x packs", test_allreduce_matrix);
    CU_add_test(s, "mixed dtypes, odd N, shuffled devices", test_mixed_and_odd);
    CU_add_test(s, "reduce to destinations, broadcast", test_reduce_and_broadcast);
    CU_add_test(s, "gather and all-gather", test_gather);
    CU_add_test(s, "hierarchical copy is TensorFlow's on a DGX-1", test_hierarchical_copy_is_tensorflows);
    CU_add_test(s, "concat-and-split pack counts", test_pack_counts);
    CU_add_test(s, "task count follows packs, not tensors", test_task_count_follows_packs);
    CU_add_test(s, "one-pass cuts for the workers only where tasks are too few", test_one_pass_cuts);
    CU_add_test(s, "one-pass on the workers of one GPU: a task per run of tensors", test_one_pass_shared_gpu);
    CU_add_test(s, "reduce_to_device", test_reduce_to_device);
    CU_add_test(s, "bytes_per_pack", test_bytes_per_pack);
    CU_add_test(s, "promoting integer MEAN", test_promote_integer_mean);
    CU_add_test(s, "hierarchical and leader follow the nodes", test_follow_nodes);
    CU_add_test(s, "bad input", test_bad_input);
    CU_add_test(s, "registry: find, options", test_registry);
    CU_add_test(s, "a graph near the task limit checked in 1.5 GiB", test_check_near_task_limit);
    const unsigned failed = starfold__tu_run();
    return failed ? 1 : 0;
}
