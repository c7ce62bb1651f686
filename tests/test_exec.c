/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The executor on real StarPU workers. One source, two programs (Makefile.am):
 *
 *   test_exec_host      -DSF_TEST_MODE_HOST      CPU-only StarPU (run-test.sh: STARPU_NCPU=2,
 *                                                STARPU_NOPENCL=0); 8 logical devices on 2 CPU workers,
 *                                                one memory node. The full matrix: N = 1..8, every
 *                                                dtype x op, both algorithms and hand-built graphs.
 *   test_exec_emulated  -DSF_TEST_MODE_EMULATED  the emulated 8-device box (8 POCL OpenCL devices,
 *                                                one memory node each: every cross-device read is a
 *                                                real transfer). About 10x slower per task, so a
 *                                                lighter matrix: N = 8 and 3, each dtype and each op
 *                                                once. Exits 77 (skipped) when StarPU has no OpenCL
 *                                                worker.
 *
 * Every collective is checked replica by replica against a float64 host reference (tests/util.h).
 *
 * Hand-built graphs (the internal builder, independent of the algorithms):
 *
 *   hand-reduce (root r):              hand-packed (root r):
 *     in0 --\                            in_p[t0..tk] --PACK--> pk_p          (every device p)
 *     in1 ---+--> REDUCE on r --> acc    [pk_0 .. pk_n-1] --REDUCE--> pk_r     (in place into source r)
 *     ...  -/     (SCALE acc for MEAN)   pk_r --SCALE--> pk_r                  (MEAN)
 *                  acc --COPY--> out_d   pk_r --COPY--> pk_p                   (p != r)
 *                                        pk_p --UNPACK--> out_p[t0..tk]
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <starpu.h>
#include <starfold.h>

#include "algorithms/algorithms.h"
#include "exec/exec.h"
#include "graph/graph.h"
#include "util.h"
#include "runner.h"

#if defined(SF_TEST_MODE_EMULATED)
#define EMULATED 1
static const int sizes_n[] = { 8, 3 };
#elif defined(SF_TEST_MODE_HOST)
#define EMULATED 0
static const int sizes_n[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
#else
#error "compile with -DSF_TEST_MODE_HOST or -DSF_TEST_MODE_EMULATED"
#endif
#define NUM_N ((int)(sizeof sizes_n / sizeof sizes_n[0]))

static const starfold_dtype_t all_dtypes[STARFOLD_DTYPE_COUNT] = {
    STARFOLD_FLOAT32, STARFOLD_FLOAT64, STARFOLD_INT32, STARFOLD_INT64,  STARFOLD_FLOAT16, STARFOLD_BFLOAT16,
    STARFOLD_INT8,    STARFOLD_UINT8,   STARFOLD_INT16, STARFOLD_UINT16, STARFOLD_UINT32,  STARFOLD_UINT64
};
static const starfold_op_t all_ops[STARFOLD_OP_COUNT] = { STARFOLD_OP_SUM, STARFOLD_OP_MEAN, STARFOLD_OP_MIN,
                                                          STARFOLD_OP_MAX, STARFOLD_OP_PROD };

/* (dtype, op) combinations a test runs: all 60 on the host; 12 covering each dtype and op at least once
 * emulated. */
typedef struct combo {
    starfold_dtype_t dtype;
    starfold_op_t op;
} combo_t;
static combo_t combos[STARFOLD_DTYPE_COUNT * STARFOLD_OP_COUNT];
static int num_combos;

static void init_combos(void)
{
    num_combos = 0;
    if (EMULATED) {
        for (int i = 0; i < STARFOLD_DTYPE_COUNT; i++)
            combos[num_combos++] = (combo_t){ all_dtypes[i], all_ops[i % STARFOLD_OP_COUNT] };
        return;
    }
    for (int d = 0; d < STARFOLD_DTYPE_COUNT; d++)
        for (int o = 0; o < STARFOLD_OP_COUNT; o++) combos[num_combos++] = (combo_t){ all_dtypes[d], all_ops[o] };
}

/* Sizes: empty, one element, 1000, and 1001 (not divisible by 2, 3 or 4 packs). */
static const size_t test_sizes[] = { 1000, 0, 1, 1001 };
#define NUM_SIZES 4

static starfold_context_t ctx;      /* the suite's context: 8 devices */
static starfold_topology_t topo8;   /* its topology */
static int devices[STARFOLD_MAX_DEVICES];

#define CHECK_OK(call)                                                                                 \
    do {                                                                                               \
        starfold_status_t st_ = (call);                                                                \
        if (st_ != STARFOLD_OK)                                                                        \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, starfold_status_string(st_), \
                    starfold_last_error());                                                            \
        CU_ASSERT_EQUAL_FATAL(st_, STARFOLD_OK);                                                       \
    } while (0)

static starfold_topology_t topo_of(int n)
{
    starfold_topology_t t = NULL;
    if (starfold_topology_subset(topo8, n, &t) != STARFOLD_OK) return NULL;
    return t;
}

/* ------------------------------------------------------------------------------------------------
 * Hand-built graphs
 */

/* Copies @desc with the destinations resolved (starfold__graph_create wants them explicit). */
static starfold_status_t hand_create(starfold_topology_t topo, const starfold_collective_desc_t *desc,
                                     const char *name, starfold_graph_t *g)
{
    starfold_collective_desc_t d = *desc;
    if (d.num_destinations == 0) {
        d.num_destinations = d.num_sources;
        d.destinations = d.sources;
    }
    return starfold__graph_create(topo, name, &d, g);
}

static starfold_status_t build_hand_reduce(starfold_topology_t topo, const starfold_collective_desc_t *desc, int root,
                                           starfold_graph_t *out)
{
    starfold_graph_t g;
    starfold_status_t st = hand_create(topo, desc, "hand-reduce", &g);
    if (st != STARFOLD_OK) return st;
    starfold__span_t src[STARFOLD_MAX_DEVICES];
    for (size_t t = 0; t < g->num_tensors && st == STARFOLD_OK; t++) {
        const size_t count = g->tensors[t].count;
        if (g->kind == STARFOLD_COLL_BROADCAST) {
            starfold__span_t s = starfold__whole(g, starfold__graph_input(g, 0, t));
            for (int d = 0; d < g->num_outputs && st == STARFOLD_OK; d++) {
                starfold__span_t o = starfold__whole(g, starfold__graph_output(g, d, t));
                st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &s, 1, &o, 1, (int)t, NULL);
            }
            continue;
        }
        size_t acc;
        if ((st = starfold__graph_add_temp(g, root, g->tensors[t].dtype, count, (int)t, &acc)) != STARFOLD_OK) break;
        for (int s = 0; s < g->num_inputs; s++) src[s] = starfold__whole(g, starfold__graph_input(g, s, t));
        starfold__span_t a = starfold__whole(g, acc);
        if ((st = starfold__graph_reduce(g, g->op, src, (size_t)g->num_inputs, a, (int)t, NULL)) != STARFOLD_OK) break;
        if (g->op == STARFOLD_OP_MEAN && (st = starfold__graph_scale(g, a, a, (uint32_t)g->num_inputs, (int)t, NULL)))
            break;
        for (int d = 0; d < g->num_outputs && st == STARFOLD_OK; d++) {
            starfold__span_t o = starfold__whole(g, starfold__graph_output(g, d, t));
            st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &a, 1, &o, 1, (int)t, NULL);
        }
    }
    if (st != STARFOLD_OK) {
        starfold_graph_destroy(g);
        return st;
    }
    starfold__graph_seal(g);
    *out = g;
    return STARFOLD_OK;
}

/* All-reduce of tensors of one dtype through one pack per device; @root in 0..n-1. */
static starfold_status_t build_hand_packed(starfold_topology_t topo, const starfold_collective_desc_t *desc, int root,
                                           starfold_graph_t *out)
{
    starfold_graph_t g;
    starfold_status_t st = hand_create(topo, desc, "hand-packed", &g);
    if (st != STARFOLD_OK) return st;
    const int n = g->num_inputs;
    const size_t nt = g->num_tensors;
    size_t total = 0, pk[STARFOLD_MAX_DEVICES];
    for (size_t t = 0; t < nt; t++) total += g->tensors[t].count;
    starfold__span_t *segs = malloc(sizeof *segs * nt);
    starfold__span_t src[STARFOLD_MAX_DEVICES];
    if (!segs) st = STARFOLD_ERR_OUT_OF_MEMORY;
    for (int p = 0; p < n && st == STARFOLD_OK; p++) {
        if ((st = starfold__graph_add_temp(g, g->input_devices[p], g->tensors[0].dtype, total, 0, &pk[p]))) break;
        for (size_t t = 0; t < nt; t++) segs[t] = starfold__whole(g, starfold__graph_input(g, p, t));
        starfold__span_t dst = starfold__whole(g, pk[p]);
        st = starfold__graph_copy(g, STARFOLD_TASK_PACK, segs, nt, &dst, 1, 0, NULL);
        src[p] = dst;
    }
    starfold__span_t r = st == STARFOLD_OK ? starfold__whole(g, pk[root]) : starfold__span(0, 0, 0);
    if (st == STARFOLD_OK) st = starfold__graph_reduce(g, g->op, src, (size_t)n, r, 0, NULL);
    if (st == STARFOLD_OK && g->op == STARFOLD_OP_MEAN) st = starfold__graph_scale(g, r, r, (uint32_t)n, 0, NULL);
    for (int p = 0; p < n && st == STARFOLD_OK; p++) {
        if (p != root) st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &r, 1, &src[p], 1, 0, NULL);
        if (st != STARFOLD_OK) break;
        for (size_t t = 0; t < nt; t++) segs[t] = starfold__whole(g, starfold__graph_output(g, p, t));
        st = starfold__graph_copy(g, STARFOLD_TASK_UNPACK, &src[p], 1, segs, nt, 0, NULL);
    }
    free(segs);
    if (st != STARFOLD_OK) {
        starfold_graph_destroy(g);
        return st;
    }
    starfold__graph_seal(g);
    *out = g;
    return STARFOLD_OK;
}

static int run_hand(int packed, int n, const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op, int root,
                    int in_place)
{
    starfold_topology_t topo = topo_of(n);
    if (!topo) return -1;
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = op, .num_sources = n,
                                              .sources = devices, .num_tensors = nt, .tensors = tensors };
    starfold_graph_t g = NULL;
    starfold_status_t st = packed ? build_hand_packed(topo, &desc, root, &g) : build_hand_reduce(topo, &desc, root, &g);
    starfold_topology_destroy(topo);
    if (st != STARFOLD_OK) {
        fprintf(stderr, "building the hand graph failed: %s (%s)\n", starfold_status_string(st), starfold_last_error());
        return -1;
    }
    int rc = 0;
    if ((st = starfold_graph_check(g)) != STARFOLD_OK) {
        fprintf(stderr, "hand graph invalid: %s\n", starfold_last_error());
        rc = -1;
    }
    char label[160];
    snprintf(label, sizeof label, "%s N=%d %s %s root %d%s", packed ? "hand-packed" : "hand-reduce", n,
             starfold_dtype_name(tensors[0].dtype), starfold_op_name(op), root, in_place ? " in place" : "");
    if (rc == 0) rc = starfold__tu_run_graph(ctx, g, in_place, label);
    starfold_graph_destroy(g);
    return rc;
}

static void fill_tensors(starfold_tensor_desc_t *t, starfold_dtype_t dtype)
{
    for (int i = 0; i < NUM_SIZES; i++) t[i] = (starfold_tensor_desc_t){ dtype, test_sizes[i] };
}

/*
 * Every replica of an all-reduce on N devices, every dtype x op, tensors of 1000, 0, 1 and 1001
 * elements, through hand-built graphs: reduce into a temporary on the last device; and one pack per
 * device reduced in place into the middle device's pack (source k >= 1 is the destination).
 */
static void test_hand_graphs(void)
{
    starfold_tensor_desc_t t[NUM_SIZES];
    for (int ni = 0; ni < NUM_N; ni++)
        for (int c = 0; c < num_combos; c++) {
            const int n = sizes_n[ni];
            fill_tensors(t, combos[c].dtype);
            /* Emulated: one of the two shapes per (N, combination), alternating, to keep the time down. */
            if (!EMULATED || (ni + c) % 2 == 0) CU_ASSERT_EQUAL(run_hand(0, n, t, NUM_SIZES, combos[c].op, n - 1, 0), 0);
            if (!EMULATED || (ni + c) % 2 == 1) CU_ASSERT_EQUAL(run_hand(1, n, t, NUM_SIZES, combos[c].op, n / 2, 0), 0);
        }
}

/* Zero-size everywhere: every node is empty, the request completes with no task. */
static void test_all_empty(void)
{
    const starfold_tensor_desc_t t[2] = { { STARFOLD_FLOAT32, 0 }, { STARFOLD_INT64, 0 } };
    CU_ASSERT_EQUAL(run_hand(0, 3, t, 2, STARFOLD_OP_SUM, 0, 0), 0);
    CU_ASSERT_EQUAL(run_hand(1, 3, t, 1, STARFOLD_OP_MEAN, 1, 0), 0);
}

/* Packs with more than STARPU_NMAXBUFS (8) handles per task: StarPU's dyn_handles path. */
static void test_many_handles(void)
{
    starfold_tensor_desc_t t[12];
    for (int i = 0; i < 12; i++) t[i] = (starfold_tensor_desc_t){ STARFOLD_FLOAT64, (size_t)(i * 37 % 11) };
    CU_ASSERT_EQUAL(run_hand(1, EMULATED ? 3 : 4, t, 12, STARFOLD_OP_SUM, 1, 0), 0);
    CU_ASSERT_EQUAL(run_hand(0, 8, t, 12, STARFOLD_OP_MAX, 3, 0), 0); /* REDUCE of 8 inputs + 1 temp = 9 */
}

/* In place: each device's output handle is its input handle. */
static void test_hand_in_place(void)
{
    starfold_tensor_desc_t t[NUM_SIZES];
    fill_tensors(t, STARFOLD_INT32);
    CU_ASSERT_EQUAL(run_hand(0, 3, t, NUM_SIZES, STARFOLD_OP_SUM, 2, 1), 0);
    CU_ASSERT_EQUAL(run_hand(1, 8, t, NUM_SIZES, STARFOLD_OP_PROD, 5, 1), 0);
    fill_tensors(t, STARFOLD_FLOAT32);
    CU_ASSERT_EQUAL(run_hand(1, 3, t, NUM_SIZES, STARFOLD_OP_MEAN, 1, 1), 0);
}

/* ------------------------------------------------------------------------------------------------
 * Compiled graphs
 */


/* Every registered algorithm runs on StarPU. */
#define NUM_ALGORITHMS starfold_algorithm_count()
#define algorithms_at(a) starfold_algorithm_name(a)

static int run_compiled_ex(const char *algo, starfold_collective_t kind, starfold_op_t op, int n, const int *dests,
                           int ndests, const starfold_tensor_desc_t *tensors, size_t nt, int num_packs, int in_place,
                           int promote)
{
    starfold_topology_t topo = topo_of(n);
    if (!topo) return -1;
    const starfold_collective_desc_t desc = { .kind = kind, .op = op,
                                              .num_sources = kind == STARFOLD_COLL_BROADCAST ? 1 : n,
                                              .sources = devices, .num_destinations = ndests, .destinations = dests,
                                              .num_tensors = nt, .tensors = tensors, .promote_integer_mean = promote };
    starfold_algo_options_t opt;
    starfold_algo_options_init(&opt);
    opt.num_packs = num_packs;
    int rc = starfold__tu_run_collective(ctx, topo, algo, &desc, &opt, in_place);
    starfold_topology_destroy(topo);
    return rc;
}

static int run_compiled(const char *algo, starfold_collective_t kind, starfold_op_t op, int n, const int *dests,
                        int ndests, const starfold_tensor_desc_t *tensors, size_t nt, int num_packs, int in_place)
{
    return run_compiled_ex(algo, kind, op, n, dests, ndests, tensors, nt, num_packs, in_place, 0);
}

/* All-reduce with both algorithms: N devices x (dtype, op), tensors of 1000, 0, 1, 1001 elements. */
static void test_compiled_all_reduce(void)
{
    starfold_tensor_desc_t t[NUM_SIZES];
    for (int a = 0; a < NUM_ALGORITHMS; a++)
        for (int ni = 0; ni < NUM_N; ni++)
            for (int c = 0; c < num_combos; c++) {
                fill_tensors(t, combos[c].dtype);
                CU_ASSERT_EQUAL(run_compiled(algorithms_at(a), STARFOLD_COLL_REDUCE, combos[c].op, sizes_n[ni], NULL, 0, t,
                                             NUM_SIZES, 1, 0),
                                0);
            }
}

/*
 * The accuracy rule of <starfold/common.h> for float16 and bfloat16, measured against float64: every
 * algorithm on 8 devices, SUM and MEAN of values with full mantissas (sums round), a tensor large
 * enough to be cut into pieces and a small one. A result may be rounded once per task on its path,
 * at most once per device for these graphs, each rounding off by at most u times the partial result,
 * which is at most sum |x| (u = 2^-11 float16, 2^-8 bfloat16): the stated tolerance is
 * |got - exact| <= (n + 1) u sum_s |x_s|, MEAN's division one more rounding. The largest error seen is
 * printed against it.
 */
static void test_half_accuracy(void)
{
    const int n = 8;
    const size_t counts[2] = { 40009, 77 };
    for (int h = 0; h < 2; h++) {
        const starfold_dtype_t dt = h ? STARFOLD_BFLOAT16 : STARFOLD_FLOAT16;
        const double u = h ? 0x1p-8 : 0x1p-11;
        double worst = 0; /* largest error / tolerance over every algorithm, op, tensor, replica and element */
        for (int a = 0; a < NUM_ALGORITHMS; a++)
            for (int mean = 0; mean < 2; mean++) {
                const starfold_tensor_desc_t t[2] = { { dt, counts[0] }, { dt, counts[1] } };
                const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE,
                                                          .op = mean ? STARFOLD_OP_MEAN : STARFOLD_OP_SUM,
                                                          .num_sources = n, .sources = devices, .num_tensors = 2,
                                                          .tensors = t };
                starfold_graph_t g = NULL;
                const starfold_status_t cst = starfold_graph_compile(topo8, algorithms_at(a), &desc, NULL, &g);
                if (starfold__tu_refuses(topo8, algorithms_at(a))) {
                    CU_ASSERT_EQUAL(cst, STARFOLD_ERR_NOT_SUPPORTED);
                    continue;
                }
                CHECK_OK(cst);
                CHECK_OK(starfold_graph_check(g));
                starpu_data_handle_t in[16], out[16];
                uint16_t *host[16];
                double *exact[2], *mag[2];
                for (size_t k = 0; k < 2; k++) {
                    exact[k] = calloc(counts[k], sizeof(double));
                    mag[k] = calloc(counts[k], sizeof(double));
                    CU_ASSERT_PTR_NOT_NULL_FATAL(exact[k]);
                    CU_ASSERT_PTR_NOT_NULL_FATAL(mag[k]);
                }
                for (int r = 0; r < n; r++)
                    for (size_t k = 0; k < 2; k++) {
                        const size_t j = (size_t)r * 2 + k;
                        host[j] = malloc(counts[k] * 2);
                        CU_ASSERT_PTR_NOT_NULL_FATAL(host[j]);
                        for (size_t i = 0; i < counts[k]; i++) {
                            const uint64_t x = (uint64_t)rand() << 16 ^ (uint64_t)rand();
                            const double v = ldexp(1.0 + (double)(x & 0xffff) / 65536.0, (int)(x >> 16 & 7) - 4) *
                                             (x >> 20 & 1 ? -1.0 : 1.0);
                            (void)starfold_element_from_double(dt, v, host[j], i);
                            const double held = starfold_element_to_double(dt, host[j], i);
                            exact[k][i] += held; /* exact: a few dozen bits at most */
                            mag[k][i] += fabs(held);
                        }
                        CHECK_OK(starfold_vector_create(ctx, devices[r], dt, counts[k], &in[j]));
                        CHECK_OK(starfold_vector_write(in[j], host[j], counts[k] * 2));
                        CHECK_OK(starfold_vector_create(ctx, devices[r], dt, counts[k], &out[j]));
                    }
                starfold_request_t req = NULL;
                CHECK_OK(starfold_submit(ctx, g, in, out, &req));
                CHECK_OK(starfold_request_wait(req));
                starfold_request_destroy(req);
                size_t bad = 0;
                for (int r = 0; r < n; r++)
                    for (size_t k = 0; k < 2; k++) {
                        const size_t j = (size_t)r * 2 + k;
                        CHECK_OK(starfold_vector_read(out[j], host[j], counts[k] * 2));
                        for (size_t i = 0; i < counts[k]; i++) {
                            const double want = mean ? exact[k][i] / n : exact[k][i];
                            const double tol = (n + 1) * u * (mean ? mag[k][i] / n : mag[k][i]) + u * fabs(want);
                            const double err = fabs(starfold_element_to_double(dt, host[j], i) - want);
                            if (!(err <= tol) && bad++ == 0)
                                fprintf(stderr, "%s %s %s: replica %d tensor %zu element %zu: got %.9g, exact %.9g, "
                                        "tolerance %.3g\n", algorithms_at(a), starfold_dtype_name(dt),
                                        mean ? "mean" : "sum", r, k, i, starfold_element_to_double(dt, host[j], i),
                                        want, tol);
                            if (tol > 0 && err / tol > worst) worst = err / tol;
                        }
                        starfold_vector_destroy(ctx, in[j]);
                        starfold_vector_destroy(ctx, out[j]);
                        free(host[j]);
                    }
                CU_ASSERT_EQUAL(bad, 0);
                for (size_t k = 0; k < 2; k++) {
                    free(exact[k]);
                    free(mag[k]);
                }
                starfold_graph_destroy(g);
            }
        fprintf(stderr, "  %s: largest error %.2f of the tolerance (n + 1) u sum|x|\n", starfold_dtype_name(dt), worst);
    }
}

/*
 * Gather: every algorithm (ring's all-gather around its rings, the others' direct copies) on N
 * devices, tensors of 1000, 0, 1 and 1001 elements of each dtype; an all-gather (every device gets
 * every device's tensors, source order) and a gather to devices 2 and 0 (ring falls back to direct
 * copies). Every element of every output checked against the inputs concatenated.
 */
static void test_compiled_gather(void)
{
    starfold_tensor_desc_t t[NUM_SIZES];
    static const int to[2] = { 2, 0 };
    for (int a = 0; a < NUM_ALGORITHMS; a++)
        for (int ni = 0; ni < NUM_N; ni++) {
            fill_tensors(t, combos[(a + ni) % num_combos].dtype);
            CU_ASSERT_EQUAL(run_compiled(algorithms_at(a), STARFOLD_COLL_GATHER, STARFOLD_OP_SUM, sizes_n[ni], NULL, 0, t,
                                         NUM_SIZES, 1, 0),
                            0);
            if (sizes_n[ni] >= 3)
                CU_ASSERT_EQUAL(run_compiled(algorithms_at(a), STARFOLD_COLL_GATHER, STARFOLD_OP_SUM, sizes_n[ni], to, 2, t,
                                             NUM_SIZES, 1, 0),
                                0);
        }
    /* Sources of different counts (IndexedSlices' rows), MEAN dividing what is gathered. */
    for (int a = 0; a < NUM_ALGORITHMS; a++)
        for (int ni = 0; ni < NUM_N; ni++) {
            const int n = sizes_n[ni];
            starfold_topology_t topo = topo_of(n);
            CU_ASSERT_PTR_NOT_NULL_FATAL(topo);
            const starfold_tensor_desc_t two[2] = { { STARFOLD_FLOAT32, 0 }, { STARFOLD_INT64, 0 } };
            size_t counts[2 * STARFOLD_MAX_DEVICES];
            for (int s = 0; s < n; s++) counts[2 * s] = (size_t)(s * 300 % 7) * 100, counts[2 * s + 1] = (size_t)s;
            for (int mean = 0; mean < 2; mean++) {
                const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_GATHER,
                                                          .op = mean ? STARFOLD_OP_MEAN : STARFOLD_OP_SUM,
                                                          .num_sources = n, .sources = devices, .num_tensors = 2,
                                                          .tensors = two, .source_counts = counts };
                starfold_algo_options_t opt;
                starfold_algo_options_init(&opt);
                CU_ASSERT_EQUAL(starfold__tu_run_collective(ctx, topo, algorithms_at(a), &desc, &opt, 0), 0);
            }
            starfold_topology_destroy(topo);
        }
    /* Never in place: an output that is an input's handle is refused, even where the counts agree. */
    starfold_topology_t topo = topo_of(2);
    const starfold_tensor_desc_t one = { STARFOLD_FLOAT32, 0 };
    const size_t counts[2] = { 0, 4 };
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_GATHER, .op = STARFOLD_OP_SUM, .num_sources = 2,
                                              .sources = devices, .num_tensors = 1, .tensors = &one,
                                              .source_counts = counts };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(topo, "ring", &desc, NULL, &g), STARFOLD_OK);
    starpu_data_handle_t in[2] = { NULL, NULL }, out[2] = { NULL, NULL };
    CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, devices[1], STARFOLD_FLOAT32, 4, &in[1]), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, devices[0], STARFOLD_FLOAT32, 4, &out[0]), STARFOLD_OK);
    out[1] = in[1];
    starfold_request_t req = NULL;
    CU_ASSERT_EQUAL(starfold_submit(ctx, g, in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "cannot be computed in place"));
    CU_ASSERT_PTR_NULL(req);
    starfold_vector_destroy(ctx, in[1]);
    starfold_vector_destroy(ctx, out[0]);
    starfold_graph_destroy(g);
    starfold_topology_destroy(topo);
}

/* hierarchical-copy packing: no packing, and pack counts that do not divide the sizes; mixed dtypes. */
static void test_compiled_packs(void)
{
    const starfold_tensor_desc_t mixed[6] = { { STARFOLD_FLOAT32, 1001 }, { STARFOLD_INT64, 7 },
                                              { STARFOLD_FLOAT32, 0 },    { STARFOLD_FLOAT64, 1 },
                                              { STARFOLD_INT32, 1000 },   { STARFOLD_FLOAT32, 13 } };
    const int packs[] = { 0, 2, 3 };
    for (int ni = 0; ni < NUM_N; ni++)
        for (int p = 0; p < 3; p++) {
            if (EMULATED && p == 1) continue;
            const starfold_op_t op = all_ops[(ni + p) % STARFOLD_OP_COUNT];
            CU_ASSERT_EQUAL(run_compiled("hierarchical-copy", STARFOLD_COLL_REDUCE, op, sizes_n[ni], NULL, 0, mixed, 6,
                                         packs[p], 0),
                            0);
        }
}

/* Reduce to one destination (hierarchical-copy falls back to reduce-to-one) and broadcast. */
static void test_compiled_reduce_broadcast(void)
{
    starfold_tensor_desc_t t[NUM_SIZES];
    for (int ni = 0; ni < NUM_N; ni++) {
        const int n = sizes_n[ni];
        const int one[1] = { n - 1 }, mid[1] = { n / 2 };
        for (int c = 0; c < num_combos; c += EMULATED ? 2 : 3) {
            fill_tensors(t, combos[c].dtype);
            CU_ASSERT_EQUAL(run_compiled("reduce-to-one", STARFOLD_COLL_REDUCE, combos[c].op, n, one, 1, t, NUM_SIZES,
                                         1, 0),
                            0);
            CU_ASSERT_EQUAL(run_compiled("hierarchical-copy", STARFOLD_COLL_REDUCE, combos[c].op, n, mid, 1, t,
                                         NUM_SIZES, 1, 0),
                            0);
        }
        for (int a = 0; a < NUM_ALGORITHMS; a++) {
            fill_tensors(t, all_dtypes[(ni + a) % STARFOLD_DTYPE_COUNT]);
            /* From device 0 to every device (including itself) */
            CU_ASSERT_EQUAL(run_compiled(algorithms_at(a), STARFOLD_COLL_BROADCAST, STARFOLD_OP_SUM, n, devices, n, t,
                                         NUM_SIZES, 1, 0),
                            0);
        }
    }
}

/* In place through both algorithms: each output handle is the same device's input handle. */
static void test_compiled_in_place(void)
{
    starfold_tensor_desc_t t[NUM_SIZES];
    for (int ni = 0; ni < NUM_N; ni++)
        for (int a = 0; a < NUM_ALGORITHMS; a++) {
            const combo_t c = combos[(ni * 2 + a) % num_combos];
            fill_tensors(t, c.dtype);
            CU_ASSERT_EQUAL(run_compiled(algorithms_at(a), STARFOLD_COLL_REDUCE, c.op, sizes_n[ni], NULL, 0, t, NUM_SIZES,
                                         a ? 3 : 1, 1),
                            0);
        }
    /* Broadcast in place on the source; reduce-to-one in place on a root that is not replica 0. */
    fill_tensors(t, STARFOLD_FLOAT64);
    CU_ASSERT_EQUAL(run_compiled("reduce-to-one", STARFOLD_COLL_BROADCAST, STARFOLD_OP_SUM, 3, devices, 3, t, NUM_SIZES,
                                 1, 1),
                    0);
    const int dst2[3] = { 2, 0, 1 };
    CU_ASSERT_EQUAL(run_compiled("reduce-to-one", STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 3, dst2, 3, t, NUM_SIZES, 1, 1),
                    0);
}

/*
 * TensorFlow's promoting integer MEAN: int32/int64 tensors in, float64 outputs (the integer sum
 * divided as float64 by a converting SCALE), with both algorithms; float tensors in the same list
 * keep their dtype.
 */
static void test_compiled_promoted_mean(void)
{
    /* int8 and uint16 come out as float32, the other integers as float64 (TensorFlow's truediv) */
    const starfold_tensor_desc_t t[7] = { { STARFOLD_INT32, 1001 }, { STARFOLD_INT64, 1000 }, { STARFOLD_INT32, 0 },
                                          { STARFOLD_FLOAT32, 13 }, { STARFOLD_INT64, 1 },   { STARFOLD_INT8, 77 },
                                          { STARFOLD_UINT16, 5 } };
    for (int ni = 0; ni < NUM_N; ni++)
        for (int a = 0; a < NUM_ALGORITHMS; a++) {
            if (EMULATED && a != ni) continue;
            CU_ASSERT_EQUAL(run_compiled_ex(algorithms_at(a), STARFOLD_COLL_REDUCE, STARFOLD_OP_MEAN, sizes_n[ni], NULL,
                                            0, t, 7, 2, 0, 1),
                            0);
        }
    /* to one destination */
    const int one[1] = { 1 };
    CU_ASSERT_EQUAL(run_compiled_ex("reduce-to-one", STARFOLD_COLL_REDUCE, STARFOLD_OP_MEAN, 3, one, 1, t, 7, 1, 0, 1),
                    0);
    starfold_topology_t topo3 = topo_of(3);
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_MEAN, .num_sources = 3,
                                              .sources = devices, .num_tensors = 7, .tensors = t,
                                              .promote_integer_mean = 1 };
    starfold_graph_t g = NULL;
    CHECK_OK(starfold_graph_compile(topo3, "ring", &desc, NULL, &g));
    CU_ASSERT_EQUAL(starfold_graph_output_dtype(g, 0), STARFOLD_FLOAT64);
    CU_ASSERT_EQUAL(starfold_graph_output_dtype(g, 3), STARFOLD_FLOAT32);
    CU_ASSERT_EQUAL(starfold_graph_output_dtype(g, 5), STARFOLD_FLOAT32);
    CU_ASSERT_EQUAL(starfold_graph_output_dtype(g, 6), STARFOLD_FLOAT32);
    starfold_graph_destroy(g);
    starfold_topology_destroy(topo3);
}

/*
 * The builders that follow nodes (hierarchical, leader) on devices split into sockets, run: the
 * host and emulated topologies have one socket, so without this their rings between nodes and their
 * leaders' exchange would run only across ranks. Sockets i % 3 (nodes of uneven sizes, members
 * interleaved) and i / 4 (two equal nodes), N = 2..8, every op x dtype, in place and not, and an
 * integer MEAN promoted to float64; every element of every output checked.
 */
static void test_compiled_by_node(void)
{
    static const char *const algos[] = { "hierarchical", "leader" };
    starfold_tensor_desc_t t[NUM_SIZES];
    const starfold_tensor_desc_t mean_t[3] = { { STARFOLD_INT32, 1001 }, { STARFOLD_FLOAT32, 13 }, { STARFOLD_INT64, 7 } };
    for (int split = 0; split < 2; split++)
        for (int n = 2; n <= 8; n++) {
            starfold_topology_t topo = topo_of(n);
            CU_ASSERT_PTR_NOT_NULL_FATAL(topo);
            for (int d = 0; d < n; d++)
                CU_ASSERT_EQUAL(starfold_topology_set_device(topo, d, NULL, starfold_topology_device_kind(topo, d),
                                                             split ? d / 4 : d % 3),
                                STARFOLD_OK);
            for (size_t a = 0; a < 2; a++) {
                for (int c = 0; c < num_combos; c++) {
                    if (EMULATED && (c + n) % 4) continue; /* transfers are slow there: a quarter of them */
                    fill_tensors(t, combos[c].dtype);
                    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = combos[c].op,
                                                              .num_sources = n, .sources = devices,
                                                              .num_tensors = NUM_SIZES, .tensors = t };
                    starfold_algo_options_t opt;
                    starfold_algo_options_init(&opt);
                    opt.num_packs = 1 + c % 3;
                    CU_ASSERT_EQUAL(starfold__tu_run_collective(ctx, topo, algos[a], &desc, &opt, (c + n) % 2), 0);
                }
                const starfold_collective_desc_t mean = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_MEAN,
                                                          .num_sources = n, .sources = devices, .num_tensors = 3,
                                                          .tensors = mean_t, .promote_integer_mean = 1 };
                CU_ASSERT_EQUAL(starfold__tu_run_collective(ctx, topo, algos[a], &mean, NULL, 0), 0);
            }
            starfold_topology_destroy(topo);
        }
}

/* 8 devices in 2 sockets of 4 (d / 4), each socket's devices also joined in a ring 0-1-2-3-0 by links
 * 20x the fastest @t had: the pairs across the ring (0-2, 1-3) are then slower than the ring. */
static void add_socket_rings(starfold_topology_t t)
{
    double fastest = 0;
    for (int i = 0; i < starfold_topology_num_links(t); i++) {
        starfold_link_t l;
        CU_ASSERT_EQUAL_FATAL(starfold_topology_link(t, i, &l), STARFOLD_OK);
        if (l.bandwidth_GBps > fastest) fastest = l.bandwidth_GBps;
    }
    for (int d = 0; d < 8; d++)
        CU_ASSERT_EQUAL(starfold_topology_set_device(t, d, NULL, starfold_topology_device_kind(t, d), d / 4), STARFOLD_OK);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 4; i++) {
            const int a = 4 * s + i, b = 4 * s + (i + 1) % 4;
            const starfold_link_t ring = { a < b ? a : b, a < b ? b : a, STARFOLD_LINK_NVLINK, 1, 20 * fastest, 0.5 };
            CU_ASSERT_EQUAL_FATAL(starfold_topology_add_link(t, &ring), STARFOLD_OK);
        }
}

/* hierarchical's graph of one float32 tensor of @count a device on @t. */
static starfold_graph_t hierarchical_of(starfold_topology_t t, size_t count)
{
    const starfold_tensor_desc_t one = { STARFOLD_FLOAT32, count };
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = 8,
                                              .sources = devices, .num_tensors = 1, .tensors = &one };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL(starfold_graph_compile(t, "hierarchical", &desc, NULL, &g), STARFOLD_OK);
    if (g) CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
    return g;
}

/*
 * hierarchical round each node's rings (add_socket_rings()): a shard of 1 MiB a member goes round
 * the socket's ring, a shard of 4 bytes takes the direct steps.
 *  - The pattern, on GPUs with memories of their own (the host's devices share one: no transfer to
 *    count): with the big shards only ring neighbours exchange bytes inside a socket, with the small
 *    ones the diagonals do too.
 *  - The run, on this context's devices: the big graph has the ring's extra tasks (3 hops a piece
 *    instead of one REDUCE), and every op on float32 and int64, MEAN included, in place and not,
 *    gives every element exactly.
 */
static void test_compiled_node_rings(void)
{
    starfold_topology_t gpus = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_create("two sockets", 8, &gpus), STARFOLD_OK);
    for (int a = 0; a < 8; a++)
        for (int b = a + 1; b < 8; b++) {
            const starfold_link_t l = { a, b, a / 4 == b / 4 ? STARFOLD_LINK_PCIE : STARFOLD_LINK_INTER_SOCKET, 1, 10, 1 };
            CU_ASSERT_EQUAL_FATAL(starfold_topology_add_link(gpus, &l), STARFOLD_OK);
        }
    for (int d = 0; d < 8; d++) CU_ASSERT_EQUAL(starfold_topology_set_device(gpus, d, NULL, STARFOLD_DEVICE_GPU, 0), STARFOLD_OK);
    add_socket_rings(gpus);
    for (int big = 0; big < 2; big++) {
        starfold_graph_t g = hierarchical_of(gpus, big ? (size_t)1 << 20 : 4);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        starfold_link_bytes_t *pairs = NULL;
        size_t np = 0, diagonal = 0, inside = 0;
        CU_ASSERT_EQUAL_FATAL(starfold_graph_link_bytes(g, &pairs, &np), STARFOLD_OK);
        for (size_t i = 0; i < np; i++) {
            inside += pairs[i].from / 4 == pairs[i].to / 4;
            diagonal += pairs[i].from / 4 == pairs[i].to / 4 && (pairs[i].from - pairs[i].to + 4) % 4 == 2;
        }
        CU_ASSERT(inside > 0);
        CU_ASSERT_EQUAL(diagonal == 0, big);
        free(pairs);
        starfold_graph_destroy(g);
    }
    starfold_topology_destroy(gpus);

    starfold_topology_t plain = topo_of(8), topo = topo_of(8);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
    CU_ASSERT_PTR_NOT_NULL_FATAL(topo);
    for (int d = 0; d < 8; d++)
        CU_ASSERT_EQUAL(starfold_topology_set_device(plain, d, NULL, starfold_topology_device_kind(plain, d), d / 4),
                        STARFOLD_OK);
    add_socket_rings(topo);
    starfold_graph_t direct = hierarchical_of(plain, (size_t)1 << 20), rings = hierarchical_of(topo, (size_t)1 << 20);
    CU_ASSERT_PTR_NOT_NULL_FATAL(direct);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rings);
    /* The host's links are a full mesh of one speed: direct steps without the added rings. (The
     * emulated box has pairs with no direct link, which node_rings() does not price: direct steps
     * there; its run below still checks the results.) */
    if (!EMULATED) CU_ASSERT(starfold_graph_num_tasks(rings) > starfold_graph_num_tasks(direct));
    starfold_graph_destroy(direct);
    starfold_graph_destroy(rings);
    static const starfold_op_t ops[] = { STARFOLD_OP_SUM, STARFOLD_OP_MEAN, STARFOLD_OP_MAX, STARFOLD_OP_PROD };
    static const starfold_dtype_t dts[] = { STARFOLD_FLOAT32, STARFOLD_INT64 };
    for (int big = 0; big < 2; big++)
        for (int o = 0; o < 4; o++)
            for (int t = 0; t < 2; t++) {
                if (EMULATED && big && (o + t) % 2) continue; /* transfers are slow there: half of them */
                const starfold_tensor_desc_t each = { dts[t], big ? (size_t)1 << 20 : 4 };
                const starfold_collective_desc_t run = { .kind = STARFOLD_COLL_REDUCE, .op = ops[o], .num_sources = 8,
                                                         .sources = devices, .num_tensors = 1, .tensors = &each };
                CU_ASSERT_EQUAL(starfold__tu_run_collective(ctx, topo, "hierarchical", &run, NULL, (o + t) % 2), 0);
            }
    starfold_topology_destroy(plain);
    starfold_topology_destroy(topo);
}

/* ------------------------------------------------------------------------------------------------
 * Views: every replica's tensors in one vector (starfold_submit_views()).
 *
 * Input vector of slot s: the tensors in reverse order, each behind a guard of VIEW_GUARD elements
 * (and one at the end); output vector of slot d: the tensors in order, guards likewise, or, in place,
 * the very input vector of its device with the same views. Guards hold values no reduction makes and
 * must come back unchanged, from every memory node: elements outside every view are never touched.
 */

#define VIEW_GUARD 3
#define VIEW_GUARD_VALUE 4242.0

typedef struct view_layout {
    size_t *off;  /* [nt] element offset of each tensor */
    size_t total; /* elements of the vector */
} view_layout_t;

static void view_layout(const starfold_tensor_desc_t *t, size_t nt, int reverse, view_layout_t *l)
{
    size_t at = VIEW_GUARD;
    for (size_t k = 0; k < nt; k++) {
        const size_t i = reverse ? nt - 1 - k : k;
        l->off[i] = at;
        at += t[i].count + VIEW_GUARD;
    }
    l->total = at;
}

/* How run_views() submits. */
typedef enum views_mode {
    VIEWS_SUBMIT,     /* starfold_submit_views() once */
    VIEWS_PERSISTENT, /* starfold_persistent_create_views(), then 3 starts, each waited for and checked */
    VIEWS_IN_FLIGHT,  /* 3 starts in flight at once, inputs rewritten between them, the last checked */
} views_mode_t;
#define VIEWS_ROUNDS 3

/* Round @round's inputs: guards, and each tensor's values from starfold_tools_fill() (replica s + 16 * round). */
static void views_inputs(const struct starfold_graph *g, void *const *host_in, const size_t *off_in, size_t total,
                         int round)
{
    const starfold_dtype_t dt = g->tensors[0].dtype;
    const size_t es = starfold_dtype_size(dt);
    for (int s = 0; s < g->num_inputs; s++) {
        for (size_t i = 0; i < total; i++) starfold_tools_set(host_in[s], dt, i, VIEW_GUARD_VALUE);
        for (size_t t = 0; t < g->num_tensors; t++)
            starfold_tools_fill((char *)host_in[s] + off_in[t] * es, dt, g->tensors[t].count, g->op, s + 16 * round, t);
    }
}

/*
 * Runs @g (tensors of one dtype, outputs of that dtype) through views, as @mode says; 0 when every
 * element is right after every checked round.
 */
static int run_views(starfold_graph_t graph, int in_place, views_mode_t mode, const char *label)
{
    const struct starfold_graph *g = graph;
    const size_t nt = g->num_tensors;
    const starfold_dtype_t dt = g->tensors[0].dtype;
    const size_t es = starfold_dtype_size(dt);
    const int nin = g->num_inputs, nout = g->num_outputs;
    int rc = -1;
    starfold_status_t st;
    starpu_data_handle_t vin[STARFOLD_MAX_DEVICES] = { 0 }, vout[STARFOLD_MAX_DEVICES] = { 0 };
    int shared[STARFOLD_MAX_DEVICES] = { 0 }; /* output slot d uses input slot shared[d] - 1 */
    void *host_in[STARFOLD_MAX_DEVICES] = { 0 };
    size_t off_in[64], off_out[64];
    view_layout_t lin = { off_in, 0 }, lout = { off_out, 0 };
    starfold_view_t *vi = calloc((size_t)nin * nt + 1, sizeof *vi), *vo = calloc((size_t)nout * nt + 1, sizeof *vo);
    void *buf = NULL;
    double *expect = NULL;
    const void **srcs = calloc((size_t)nin + 1, sizeof *srcs);
    starfold_persistent_t persistent = NULL;
    starfold_request_t reqs[VIEWS_ROUNDS] = { 0 };
    if (nt > 64 || !vi || !vo || !srcs) goto out;
    view_layout(g->tensors, nt, 1, &lin);
    view_layout(g->tensors, nt, 0, &lout);

    for (int s = 0; s < nin; s++)
        if (!(host_in[s] = starfold_tools_alloc(dt, lin.total))) goto out;
    views_inputs(g, host_in, off_in, lin.total, 0);
    for (int s = 0; s < nin; s++) {
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, g->input_devices[s], dt, lin.total, &vin[s]), STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(starfold_vector_write(vin[s], host_in[s], lin.total * es), STARFOLD_OK);
        for (size_t t = 0; t < nt; t++) vi[(size_t)s * nt + t] = (starfold_view_t){ vin[s], off_in[t] };
    }
    if (!(buf = starfold_tools_alloc(dt, lout.total > lin.total ? lout.total : lin.total))) goto out;
    for (int d = 0; d < nout; d++) {
        for (int s = 0; in_place && s < nin; s++)
            if (g->input_devices[s] == g->output_devices[d]) shared[d] = s + 1;
        if (shared[d]) {
            for (size_t t = 0; t < nt; t++) vo[(size_t)d * nt + t] = vi[(size_t)(shared[d] - 1) * nt + t];
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, g->output_devices[d], dt, lout.total, &vout[d]), STARFOLD_OK);
        for (size_t t = 0; t < nt; t++) vo[(size_t)d * nt + t] = (starfold_view_t){ vout[d], off_out[t] };
    }
    if (mode != VIEWS_SUBMIT && (st = starfold_persistent_create_views(ctx, graph, vi, vo, &persistent)) != STARFOLD_OK) {
        fprintf(stderr, "%s: persistent_create_views: %s (%s)\n", label, starfold_status_string(st),
                starfold_last_error());
        goto out;
    }

    const int rounds = mode == VIEWS_SUBMIT ? 1 : VIEWS_ROUNDS;
    rc = 0;
    for (int round = 0; round < rounds && rc == 0; round++) {
        if (round > 0) { /* new inputs (in flight: ordered after the previous start's reads by StarPU) */
            views_inputs(g, host_in, off_in, lin.total, round);
            for (int s = 0; s < nin; s++)
                CU_ASSERT_EQUAL_FATAL(starfold_vector_write(vin[s], host_in[s], lin.total * es), STARFOLD_OK);
        }
        if (round == 0 || mode == VIEWS_PERSISTENT) /* outputs: guards, and a sentinel in the views */
            for (int d = 0; d < nout; d++) {
                if (shared[d]) continue;
                for (size_t i = 0; i < lout.total; i++) starfold_tools_set(buf, dt, i, VIEW_GUARD_VALUE);
                for (size_t t = 0; t < nt; t++) starfold_tools_fill_sentinel((char *)buf + off_out[t] * es, dt, g->tensors[t].count);
                CU_ASSERT_EQUAL_FATAL(starfold_vector_write(vout[d], buf, lout.total * es), STARFOLD_OK);
            }
        st = persistent ? starfold_persistent_start(persistent, &reqs[round])
                        : starfold_submit_views(ctx, graph, vi, vo, &reqs[round]);
        if (st != STARFOLD_OK) {
            fprintf(stderr, "%s: round %d: %s (%s)\n", label, round, starfold_status_string(st), starfold_last_error());
            rc = -1;
            break;
        }
        if (mode == VIEWS_IN_FLIGHT && round + 1 < rounds) continue;
        if (mode == VIEWS_IN_FLIGHT) { /* destroyed before the waits: it waits for its starts itself */
            starfold_persistent_destroy(persistent);
            persistent = NULL;
        }
        for (int r = 0; r <= round; r++) {
            if (!reqs[r]) continue;
            if ((st = starfold_request_wait(reqs[r])) != STARFOLD_OK) rc = -1;
            starfold_request_destroy(reqs[r]);
            reqs[r] = NULL;
        }

        for (int d = 0; d < nout && rc == 0; d++) {
            const starpu_data_handle_t h = shared[d] ? vin[shared[d] - 1] : vout[d];
            const size_t *off = shared[d] ? off_in : off_out;
            const size_t total = shared[d] ? lin.total : lout.total;
            CU_ASSERT_EQUAL_FATAL(starfold_vector_read(h, buf, total * es), STARFOLD_OK);
            for (size_t t = 0; t < nt && rc == 0; t++) {
                char why[160];
                free(expect);
                expect = malloc(sizeof(double) * (g->tensors[t].count + 1));
                if (!expect) {
                    rc = -1;
                    break;
                }
                if (g->kind == STARFOLD_COLL_BROADCAST) {
                    for (size_t i = 0; i < g->tensors[t].count; i++)
                        expect[i] = starfold_tools_get((char *)host_in[0] + off_in[t] * es, dt, i);
                } else {
                    for (int s = 0; s < nin; s++) srcs[s] = (char *)host_in[s] + off_in[t] * es;
                    starfold_tools_reference(g->op, dt, srcs, nin, g->tensors[t].count, expect);
                }
                if (starfold_tools_compare((char *)buf + off[t] * es, dt, expect, g->tensors[t].count, why, sizeof why)) {
                    fprintf(stderr, "%s: round %d: output slot %d tensor %zu: %s\n", label, round, d, t, why);
                    rc = -1;
                }
            }
            /* guards: everything outside the views */
            for (size_t i = 0, t = 0; i < total && rc == 0; i++) {
                int in_view = 0;
                for (t = 0; t < nt && !in_view; t++) in_view = i >= off[t] && i < off[t] + g->tensors[t].count;
                if (!in_view && starfold_tools_get(buf, dt, i) != VIEW_GUARD_VALUE) {
                    fprintf(stderr, "%s: round %d: output slot %d: element %zu outside every view was written\n",
                            label, round, d, i);
                    rc = -1;
                }
            }
        }
        /* inputs not shared with an output: unchanged, guards included */
        for (int s = 0; s < nin && rc == 0; s++) {
            int used = 0;
            for (int d = 0; d < nout; d++) used |= shared[d] == s + 1;
            if (used) continue;
            CU_ASSERT_EQUAL_FATAL(starfold_vector_read(vin[s], buf, lin.total * es), STARFOLD_OK);
            if (memcmp(buf, host_in[s], lin.total * es)) {
                fprintf(stderr, "%s: round %d: input slot %d was modified\n", label, round, s);
                rc = -1;
            }
        }
    }
out:
    for (int r = 0; r < VIEWS_ROUNDS; r++) starfold_request_destroy(reqs[r]);
    starfold_persistent_destroy(persistent);
    for (int s = 0; s < nin; s++) {
        if (vin[s]) starfold_vector_destroy(ctx, vin[s]);
        free(host_in[s]);
    }
    for (int d = 0; d < nout; d++)
        if (vout[d]) starfold_vector_destroy(ctx, vout[d]);
    free(vi);
    free(vo);
    free(buf);
    free(expect);
    free(srcs);
    return rc;
}

static int run_views_compiled(const char *algo, starfold_collective_t kind, starfold_op_t op, int n,
                              const starfold_tensor_desc_t *tensors, size_t nt, int in_place, views_mode_t mode)
{
    starfold_topology_t topo = topo_of(n);
    if (!topo) return -1;
    const starfold_collective_desc_t desc = { .kind = kind, .op = op,
                                              .num_sources = kind == STARFOLD_COLL_BROADCAST ? 1 : n,
                                              .sources = devices, .num_destinations = kind == STARFOLD_COLL_BROADCAST ? n : 0,
                                              .destinations = kind == STARFOLD_COLL_BROADCAST ? devices : NULL,
                                              .num_tensors = nt, .tensors = tensors };
    starfold_graph_t g = NULL;
    starfold_status_t st = starfold_graph_compile(topo, algo, &desc, NULL, &g);
    const int refuses = starfold__tu_refuses(topo, algo);
    starfold_topology_destroy(topo);
    if (refuses) {
        CU_ASSERT_EQUAL(st, STARFOLD_ERR_NOT_SUPPORTED);
        starfold_graph_destroy(g);
        return 0;
    }
    if (st != STARFOLD_OK) {
        fprintf(stderr, "%s: compile: %s\n", algo, starfold_last_error());
        return -1;
    }
    char label[160];
    static const char *const mode_name[] = { "", " persistent", " persistent in flight" };
    snprintf(label, sizeof label, "views %s %s N=%d %s%s%s", algo,
             kind == STARFOLD_COLL_BROADCAST ? "broadcast" : "reduce", n, starfold_op_name(op),
             in_place ? " in place" : "", mode_name[mode]);
    const int rc = run_views(g, in_place, mode, label);
    starfold_graph_destroy(g);
    return rc;
}

/*
 * Every algorithm through views, out of place and in place, with small tensors (one-pass's segmented
 * batches, hierarchical copy's packs) and tensors big enough to be cut into pieces: on the emulated
 * box each piece of a view moves between memory nodes, and nothing outside the views may.
 */
static void test_views(void)
{
    const starfold_tensor_desc_t small[5] = { { STARFOLD_FLOAT32, 1000 }, { STARFOLD_FLOAT32, 1 },
                                              { STARFOLD_FLOAT32, 0 },    { STARFOLD_FLOAT32, 1001 },
                                              { STARFOLD_FLOAT32, 37 } };
    const starfold_tensor_desc_t big[3] = { { STARFOLD_FLOAT64, 70001 }, { STARFOLD_FLOAT64, 3 },
                                            { STARFOLD_FLOAT64, 40000 } };
    const int n = EMULATED ? 8 : 5;
    for (int a = 0; a < NUM_ALGORITHMS; a++) {
        const char *algo = algorithms_at(a);
        CU_ASSERT_EQUAL(run_views_compiled(algo, STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, n, small, 5, 0, VIEWS_SUBMIT), 0);
        CU_ASSERT_EQUAL(run_views_compiled(algo, STARFOLD_COLL_REDUCE, STARFOLD_OP_MEAN, n, big, 3, 1, VIEWS_SUBMIT), 0);
        CU_ASSERT_EQUAL(run_views_compiled(algo, STARFOLD_COLL_REDUCE, STARFOLD_OP_MAX, 3, small, 5, 1, VIEWS_SUBMIT), 0);
        CU_ASSERT_EQUAL(run_views_compiled(algo, STARFOLD_COLL_BROADCAST, STARFOLD_OP_SUM, 3, big, 3, 0, VIEWS_SUBMIT),
                        0);
    }
}

/*
 * Persistent submissions of every algorithm: started three times with new inputs each round, each
 * start waited for and checked (outputs reset to a sentinel, so a start that wrote nothing is seen);
 * and three starts in flight at once, the inputs rewritten between them (StarPU orders the writes
 * after the previous start's reads), the persistent submission destroyed before its requests are
 * waited for, the last round's result checked. Small tensors out of place (one-pass's segmented
 * tasks, hierarchical copy's packs: temporaries kept from start to start) and pieces of big ones in place.
 */
static void test_persistent(void)
{
    const starfold_tensor_desc_t small[5] = { { STARFOLD_FLOAT32, 1000 }, { STARFOLD_FLOAT32, 1 },
                                              { STARFOLD_FLOAT32, 0 },    { STARFOLD_FLOAT32, 1001 },
                                              { STARFOLD_FLOAT32, 37 } };
    const starfold_tensor_desc_t big[2] = { { STARFOLD_FLOAT64, 70001 }, { STARFOLD_FLOAT64, 3 } };
    const int n = EMULATED ? 8 : 5;
    for (int a = 0; a < NUM_ALGORITHMS; a++) {
        const char *algo = algorithms_at(a);
        CU_ASSERT_EQUAL(run_views_compiled(algo, STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, n, small, 5, 0, VIEWS_PERSISTENT),
                        0);
        CU_ASSERT_EQUAL(run_views_compiled(algo, STARFOLD_COLL_REDUCE, STARFOLD_OP_MEAN, n, big, 2, 1, VIEWS_IN_FLIGHT),
                        0);
        CU_ASSERT_EQUAL(run_views_compiled(algo, STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 3, small, 5, 0, VIEWS_IN_FLIGHT),
                        0);
    }
}

/* @algo's all-reduce (SUM) of @t on the first @n devices, compiled and checked fatal. */
static starfold_graph_t compile_all_reduce(const char *algo, int n, const starfold_tensor_desc_t *t, size_t nt)
{
    starfold_topology_t topo = topo_of(n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(topo);
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = n,
                                              .sources = devices, .num_tensors = nt, .tensors = t };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(topo, algo, &desc, NULL, &g), STARFOLD_OK);
    starfold_topology_destroy(topo);
    return g;
}

/*
 * A variable's update after a collective, as one graph (src/algorithms/update.c): 3 replicas on
 * devices listed out of order {2, 0, 1}, value of replica r = (r + 1) * 10 + i % 7 at element i,
 * every copy of the variable 1000 + i before each case; float32 and int64.
 *
 *   ring all-reduce SUM, then assign_add:           copy = 1000 + i + (60 + 3 * (i % 7))
 *   reduce-to-one SUM, then assign_sub:             copy = 1000 + i - (60 + 3 * (i % 7))
 *   broadcast of replica 0, then assign / 3
 *   (a sync-on-read SUM variable's assign):         copy = (10 + i % 7) / 3 (int64 truncates)
 *   no first graph, each copy its own value, sub:   copy d = 1000 + i - ((d + 1) * 10 + i % 7)
 *
 * Every copy is an input and the output of its device (in place). On the emulated box the update
 * tasks run the OpenCL kernel's SUB.
 */
static int check_copies(starpu_data_handle_t *var, int n, starfold_dtype_t dt, size_t count, const double *want)
{
    int wrong = 0;
    void *raw = malloc(count * 8);
    for (int d = 0; d < n; d++) {
        if (!raw || starfold_vector_read(var[d], raw, count * starfold_dtype_size(dt)) != STARFOLD_OK) return 1;
        for (size_t i = 0; i < count; i++) {
            const double x = dt == STARFOLD_FLOAT32 ? (double)((float *)raw)[i] : (double)((int64_t *)raw)[i];
            if (x != want[(size_t)d * count + i] && wrong++ < 3)
                fprintf(stderr, "update: copy %d element %zu is %g, expected %g\n", d, i, x, want[(size_t)d * count + i]);
        }
    }
    free(raw);
    return wrong;
}

static void test_update_after_collective(void)
{
    const int n = 3, order[3] = { 2, 0, 1 };
    const size_t count = 1001;
    const starfold_dtype_t dts[2] = { STARFOLD_FLOAT32, STARFOLD_INT64 };
    double *want = malloc(sizeof *want * (size_t)n * count);
    char *buf = malloc(count * 8);
    CU_ASSERT_FATAL(want && buf);
    for (int k = 0; k < 2; k++) {
        const starfold_dtype_t dt = dts[k];
        const size_t es = starfold_dtype_size(dt);
        starpu_data_handle_t val[3], var[3];
        for (int r = 0; r < n; r++) {
            CHECK_OK(starfold_vector_create(ctx, order[r], dt, count, &val[r]));
            CHECK_OK(starfold_vector_create(ctx, order[r], dt, count, &var[r]));
            for (size_t i = 0; i < count; i++) {
                if (dt == STARFOLD_FLOAT32) ((float *)buf)[i] = (float)((r + 1) * 10 + (int)(i % 7));
                else ((int64_t *)buf)[i] = (r + 1) * 10 + (int64_t)(i % 7);
            }
            CHECK_OK(starfold_vector_write(val[r], buf, count * es));
        }
        const starfold_tensor_desc_t t = { dt, count };
        for (int c = 0; c < 4; c++) {
            for (size_t i = 0; i < count; i++) {
                if (dt == STARFOLD_FLOAT32) ((float *)buf)[i] = (float)(1000 + i);
                else ((int64_t *)buf)[i] = 1000 + (int64_t)i;
            }
            for (int d = 0; d < n; d++) CHECK_OK(starfold_vector_write(var[d], buf, count * es));
            for (int d = 0; d < n; d++)
                for (size_t i = 0; i < count; i++) {
                    const double base = 1000.0 + (double)i, sum = 60.0 + 3.0 * (double)(i % 7);
                    const double v0 = 10.0 + (double)(i % 7), vd = (d + 1) * 10.0 + (double)(i % 7);
                    want[(size_t)d * count + i] = c == 0   ? base + sum
                                                  : c == 1 ? base - sum
                                                  : c == 3 ? base - vd
                                                  : dt == STARFOLD_FLOAT32 ? (double)((float)v0 / 3.0f)
                                                                           : (double)((int64_t)v0 / 3);
                }
            const starfold__update_t update = c == 0 ? SF_UPDATE_ADD : c == 2 ? SF_UPDATE_ASSIGN : SF_UPDATE_SUB;
            const starfold_collective_desc_t desc = {
                .kind = c == 2 ? STARFOLD_COLL_BROADCAST : STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM,
                .num_sources = c == 2 ? 1 : n, .sources = order, .num_destinations = n, .destinations = order,
                .num_tensors = 1, .tensors = &t,
            };
            starfold_graph_t first = NULL, g = NULL;
            if (c < 3) CHECK_OK(starfold_graph_compile(topo8, c == 1 ? "reduce-to-one" : "ring", &desc, NULL, &first));
            CHECK_OK(starfold__graph_then_update(topo8, first, n, order, t, update, c == 2 ? 3 : 1, &g));
            CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
            CU_ASSERT_EQUAL(starfold_graph_num_inputs(g), (c == 2 ? 1 : n) + (update == SF_UPDATE_ASSIGN ? 0 : n));
            starfold_graph_destroy(first);
            /* Inputs: the value's sources, then (assign_add, assign_sub) each copy; outputs: each copy. */
            starpu_data_handle_t in[6];
            const int nval = c == 2 ? 1 : n;
            for (int s = 0; s < nval; s++) in[s] = val[s];
            for (int d = 0; d < n && update != SF_UPDATE_ASSIGN; d++) in[nval + d] = var[d];
            starfold_request_t req = NULL;
            CHECK_OK(starfold_submit(ctx, g, in, var, &req));
            CHECK_OK(starfold_request_wait(req));
            starfold_request_destroy(req);
            starfold_graph_destroy(g);
            CU_ASSERT_EQUAL(check_copies(var, n, dt, count, want), 0);
        }
        for (int r = 0; r < n; r++) {
            starfold_vector_destroy(ctx, val[r]);
            starfold_vector_destroy(ctx, var[r]);
        }
    }
    free(want);
    free(buf);
}

/* The pool of main-memory blocks for temporaries (src/exec/pool.c), alone and under submissions. */
static void test_temp_pool(void)
{
    starfold__pool_t *p = starfold__pool_create();
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    size_t got = 0, got2 = 0;
    void *a = starfold__pool_get(p, 100, &got);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT(got >= 100);
    CU_ASSERT_EQUAL((uintptr_t)a % 64, 0);
    memset(a, 1, got);
    starfold__pool_put(p, a, got);
    void *b = starfold__pool_get(p, 50, &got2); /* the free block is large enough: the same one */
    CU_ASSERT_PTR_EQUAL(b, a);
    CU_ASSERT_EQUAL(got2, got);
    void *c = starfold__pool_get(p, (size_t)3 << 20, &got); /* none free: a new one, 2 MiB-aligned */
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT(c != b);
    CU_ASSERT_EQUAL((uintptr_t)c % ((size_t)2 << 20), 0);
    starfold__pool_put(p, b, got2);
    starfold__pool_put(p, c, got);
    void *d = starfold__pool_get(p, 1000, &got2); /* the smallest that fits: b's, not c's */
    CU_ASSERT_PTR_EQUAL(d, b);
    /* more blocks given back than the pool keeps: the smallest go */
    void *blk[12];
    size_t sz[12];
    for (int i = 0; i < 12; i++) blk[i] = starfold__pool_get(p, (size_t)(i + 1) << 16, &sz[i]);
    for (int i = 0; i < 12; i++) starfold__pool_put(p, blk[i], sz[i]);
    void *e = starfold__pool_get(p, (size_t)12 << 16, &got);
    CU_ASSERT_PTR_EQUAL(e, blk[11]);
    /* closed with blocks still out: they are freed when given back, the pool with the last one */
    starfold__pool_close(p);
    starfold__pool_put(p, e, got);
    starfold__pool_put(p, d, got2);

    /* A graph with temporaries submitted twice: the second submission gets the first one's block. */
    if (EMULATED) return; /* temporaries live in the devices' memories there */
    const starfold_tensor_desc_t t[1] = { { STARFOLD_FLOAT32, 100000 } };
    starfold_graph_t g = compile_all_reduce("hierarchical-copy", 4, t, 1);
    starpu_data_handle_t h[4];
    float *host = calloc(100000, sizeof(float));
    CU_ASSERT_PTR_NOT_NULL_FATAL(host);
    for (int s = 0; s < 4; s++) {
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, s, STARFOLD_FLOAT32, 100000, &h[s]), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_vector_write(h[s], host, 100000 * sizeof(float)), STARFOLD_OK);
    }
    void *first = NULL;
    for (int round = 0; round < 2; round++) {
        starfold_request_t req = NULL;
        CU_ASSERT_EQUAL_FATAL(starfold_submit(ctx, g, h, h, &req), STARFOLD_OK);
        CU_ASSERT_PTR_NOT_NULL(req->temp_block);
        if (round == 0) first = req->temp_block;
        else CU_ASSERT_PTR_EQUAL(req->temp_block, first);
        CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_OK);
        CU_ASSERT_PTR_NULL(req->temp_block); /* given back once the temporaries are released */
        starfold_request_destroy(req);
    }
    /* A persistent submission keeps its temporaries: its starts' requests hold none, two may be in flight. */
    starfold_persistent_t per = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_persistent_create(ctx, g, h, h, &per), STARFOLD_OK);
    starfold_request_t r2[2] = { NULL, NULL };
    for (int round = 0; round < 2; round++) {
        CU_ASSERT_EQUAL_FATAL(starfold_persistent_start(per, &r2[round]), STARFOLD_OK);
        CU_ASSERT_PTR_NULL(r2[round]->temp_block);
        CU_ASSERT_EQUAL(r2[round]->ntemps, 0);
    }
    for (int round = 0; round < 2; round++) {
        CU_ASSERT_EQUAL(starfold_request_wait(r2[round]), STARFOLD_OK);
        starfold_request_destroy(r2[round]);
    }
    starfold_persistent_destroy(per);
    for (int s = 0; s < 4; s++) starfold_vector_destroy(ctx, h[s]);
    free(host);
    starfold_graph_destroy(g);
}

/* Views the executor must refuse, with nothing submitted: the same call with good views then works. */
static void test_views_errors(void)
{
    const starfold_tensor_desc_t t[2] = { { STARFOLD_FLOAT32, 10 }, { STARFOLD_FLOAT32, 20 } };
    starfold_graph_t g = compile_all_reduce("reduce-to-one", 2, t, 2);
    starpu_data_handle_t in[2], out[2], f64 = NULL;
    float zero[64] = { 0 };
    for (int s = 0; s < 2; s++) {
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, s, STARFOLD_FLOAT32, 30, &in[s]), STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, s, STARFOLD_FLOAT32, 64, &out[s]), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_vector_write(in[s], zero, 30 * sizeof(float)), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_vector_write(out[s], zero, 64 * sizeof(float)), STARFOLD_OK);
    }
    CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, 0, STARFOLD_FLOAT64, 30, &f64), STARFOLD_OK);
    starfold_view_t vi[4] = { { in[0], 0 }, { in[0], 10 }, { in[1], 0 }, { in[1], 10 } };
    starfold_view_t vo[4] = { { out[0], 0 }, { out[0], 10 }, { out[1], 0 }, { out[1], 30 } };
    starfold_request_t req = NULL;
    struct {
        starfold_view_t *v;
        size_t at;
        starfold_view_t bad;
        const char *words;
    } cases[] = {
        { vi, 1, { in[0], 11 }, "lie outside its vector of 30" },          /* [11, 31) */
        { vo, 3, { out[1], 50 }, "lie outside its vector of 64" },
        { vi, 0, { f64, 0 }, "vector of 8-byte elements, the tensor is float32" },
        { vo, 1, { out[0], 5 }, "overlaps" },                               /* two outputs overlap */
        { vo, 2, { in[1], 5 }, "overlaps" },                                /* an output over another input */
        { vo, 1, { in[0], 10 }, "overlaps" },                               /* in place on reduce-to-one's inputs: fine */
        { vo, 3, { in[0], 10 }, "only be its own device's input" },         /* another device's input range */
        { vo, 0, { NULL, 0 }, "NULL handle" },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const starfold_view_t keep = cases[c].v[cases[c].at];
        cases[c].v[cases[c].at] = cases[c].bad;
        const starfold_status_t st = starfold_submit_views(ctx, g, vi, vo, &req);
        if (c == 5) { /* output 1 of slot 0 = the same range of slot 0's input of tensor 1: in place, accepted */
            CU_ASSERT_EQUAL(st, STARFOLD_OK);
            if (st == STARFOLD_OK) CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_OK);
            starfold_request_destroy(req);
        } else {
            CU_ASSERT_EQUAL(st, STARFOLD_ERR_INVALID_ARGUMENT);
            if (!strstr(starfold_last_error(), cases[c].words))
                fprintf(stderr, "views case %zu: '%s' does not say '%s'\n", c, starfold_last_error(), cases[c].words);
            CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), cases[c].words));
        }
        cases[c].v[cases[c].at] = keep;
    }
    CU_ASSERT_EQUAL(starfold_submit_views(ctx, g, vi, vo, &req), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_OK);
    starfold_request_destroy(req);
    CU_ASSERT_EQUAL(starfold_submit_views(ctx, g, NULL, vo, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_submit_views(ctx, NULL, vi, vo, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    for (int s = 0; s < 2; s++) {
        starfold_vector_destroy(ctx, in[s]);
        starfold_vector_destroy(ctx, out[s]);
    }
    starfold_vector_destroy(ctx, f64);
    starfold_graph_destroy(g);
}

/* ------------------------------------------------------------------------------------------------
 * Caller tasks: a writer of an input before starfold_submit(), a reader of an output after it.
 */

typedef struct caller_arg {
    void *host;        /* written from (writer) or read into (reader) */
    size_t bytes;
    int block;         /* writer: wait until `release` is set */
    int delay_ms;      /* writer: sleep first */
} caller_arg_t;

static int release;

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static void writer_wait(const caller_arg_t *a)
{
    if (a->delay_ms) sleep_ms(a->delay_ms);
    for (int waited = 0; a->block && !__atomic_load_n(&release, __ATOMIC_ACQUIRE) && waited < 20000; waited++)
        sleep_ms(1);
}

static void writer_cpu(void *buffers[], void *cl_arg)
{
    const caller_arg_t *a = cl_arg;
    writer_wait(a);
    memcpy((void *)((struct starpu_vector_interface *)buffers[0])->ptr, a->host, a->bytes);
}

static void reader_cpu(void *buffers[], void *cl_arg)
{
    const caller_arg_t *a = cl_arg;
    memcpy(a->host, (void *)((struct starpu_vector_interface *)buffers[0])->ptr, a->bytes);
}

#ifdef STARFOLD_HAVE_OPENCL
static void writer_opencl(void *buffers[], void *cl_arg)
{
    const caller_arg_t *a = cl_arg;
    writer_wait(a);
    struct starpu_vector_interface *v = buffers[0];
    cl_command_queue q;
    starpu_opencl_get_queue(starpu_worker_get_devid(starpu_worker_get_id()), &q);
    cl_int err = clEnqueueWriteBuffer(q, (cl_mem)v->dev_handle, CL_TRUE, v->offset, a->bytes, a->host, 0, NULL, NULL);
    if (err != CL_SUCCESS) fprintf(stderr, "writer_opencl: error %d\n", err);
}

static void reader_opencl(void *buffers[], void *cl_arg)
{
    const caller_arg_t *a = cl_arg;
    struct starpu_vector_interface *v = buffers[0];
    cl_command_queue q;
    starpu_opencl_get_queue(starpu_worker_get_devid(starpu_worker_get_id()), &q);
    cl_int err = clEnqueueReadBuffer(q, (cl_mem)v->dev_handle, CL_TRUE, v->offset, a->bytes, a->host, 0, NULL, NULL);
    if (err != CL_SUCCESS) fprintf(stderr, "reader_opencl: error %d\n", err);
}
#endif

static struct starpu_codelet writer_cl = {
    .cpu_funcs = { writer_cpu },
#ifdef STARFOLD_HAVE_OPENCL
    .opencl_funcs = { writer_opencl },
#endif
    .nbuffers = 1,
    .modes = { STARPU_W },
    .name = "test-writer",
};

static struct starpu_codelet reader_cl = {
    .cpu_funcs = { reader_cpu },
#ifdef STARFOLD_HAVE_OPENCL
    .opencl_funcs = { reader_opencl },
#endif
    .nbuffers = 1,
    .modes = { STARPU_R },
    .name = "test-reader",
};

static struct starpu_task *caller_task(struct starpu_codelet *cl, starpu_data_handle_t h, caller_arg_t *arg, int device)
{
    struct starpu_task *t = starpu_task_create();
    t->cl = cl;
    t->handles[0] = h;
    t->cl_arg = arg;
    t->execute_on_a_specific_worker = 1;
    t->workerid = (unsigned)starfold_context_device_worker(ctx, device);
    return t;
}

/* N inputs (float32, 1000 elements, op SUM) filled for replica s, N sentinel outputs: a fixture. */
typedef struct fixture {
    int n;
    size_t count;
    starfold_graph_t graph;
    starpu_data_handle_t in[STARFOLD_MAX_DEVICES], out[STARFOLD_MAX_DEVICES];
    float *host[STARFOLD_MAX_DEVICES];
} fixture_t;

static void fixture_init(fixture_t *f, int n, size_t count)
{
    memset(f, 0, sizeof *f);
    f->n = n;
    f->count = count;
    starfold_tensor_desc_t t = { STARFOLD_FLOAT32, count };
    starfold_topology_t topo = topo_of(n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(topo);
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = n,
                                              .sources = devices, .num_tensors = 1, .tensors = &t };
    CHECK_OK(build_hand_reduce(topo, &desc, n - 1, &f->graph));
    starfold_topology_destroy(topo);
    float *sentinel = starfold_tools_alloc(STARFOLD_FLOAT32, count);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sentinel);
    starfold_tools_fill_sentinel(sentinel, STARFOLD_FLOAT32, count);
    for (int s = 0; s < n; s++) {
        f->host[s] = starfold_tools_alloc(STARFOLD_FLOAT32, count);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f->host[s]);
        starfold_tools_fill(f->host[s], STARFOLD_FLOAT32, count, STARFOLD_OP_SUM, s, 0);
        CHECK_OK(starfold_vector_create(ctx, s, STARFOLD_FLOAT32, count, &f->in[s]));
        CHECK_OK(starfold_vector_write(f->in[s], f->host[s], count * sizeof(float)));
        CHECK_OK(starfold_vector_create(ctx, s, STARFOLD_FLOAT32, count, &f->out[s]));
        CHECK_OK(starfold_vector_write(f->out[s], sentinel, count * sizeof(float)));
    }
    free(sentinel);
}

/* Checks output @d (read back with starfold_vector_read unless @got is given) against the reference. */
static int fixture_check(const fixture_t *f, int d, const float *got)
{
    double *expect = malloc(sizeof(double) * f->count);
    float *buf = starfold_tools_alloc(STARFOLD_FLOAT32, f->count);
    int rc = -1;
    if (expect && buf) {
        starfold_tools_reference(STARFOLD_OP_SUM, STARFOLD_FLOAT32, (const void *const *)f->host, f->n, f->count, expect);
        if (!got && starfold_vector_read(f->out[d], buf, f->count * sizeof(float)) == STARFOLD_OK) got = buf;
        char why[160] = "";
        rc = got ? starfold_tools_compare(got, STARFOLD_FLOAT32, expect, f->count, why, sizeof why) : -1;
        if (rc) fprintf(stderr, "output %d: %s\n", d, why);
    }
    free(expect);
    free(buf);
    return rc;
}

/* Whether output @d still holds the sentinel everywhere. */
static int fixture_untouched(const fixture_t *f, int d)
{
    float *buf = starfold_tools_alloc(STARFOLD_FLOAT32, f->count);
    int ok = buf && starfold_vector_read(f->out[d], buf, f->count * sizeof(float)) == STARFOLD_OK;
    for (size_t i = 0; ok && i < f->count; i++) ok = buf[i] == (float)STARFOLD_TOOLS_SENTINEL;
    free(buf);
    return ok;
}

static void fixture_free(fixture_t *f)
{
    for (int s = 0; s < f->n; s++) {
        starfold_vector_destroy(ctx, f->in[s]);
        starfold_vector_destroy(ctx, f->out[s]);
        free(f->host[s]);
    }
    starfold_graph_destroy(f->graph);
}

/* Output @h against the float32 SUM of replicas 0..n-1 filled by starfold_tools_fill; 0 when right. */
static int check_output_sum(starpu_data_handle_t h, int n, size_t count)
{
    void *src[STARFOLD_MAX_DEVICES] = { 0 };
    double *expect = malloc(sizeof(double) * count);
    float *got = starfold_tools_alloc(STARFOLD_FLOAT32, count);
    int rc = -1;
    for (int s = 0; s < n; s++)
        if ((src[s] = starfold_tools_alloc(STARFOLD_FLOAT32, count))) starfold_tools_fill(src[s], STARFOLD_FLOAT32, count, STARFOLD_OP_SUM, s, 0);
    if (expect && got && src[n - 1] && starfold_vector_read(h, got, count * sizeof(float)) == STARFOLD_OK) {
        char why[160] = "";
        starfold_tools_reference(STARFOLD_OP_SUM, STARFOLD_FLOAT32, (const void *const *)src, n, count, expect);
        rc = starfold_tools_compare(got, STARFOLD_FLOAT32, expect, count, why, sizeof why);
        if (rc) fprintf(stderr, "%s\n", why);
    }
    for (int s = 0; s < n; s++) free(src[s]);
    free(expect);
    free(got);
    return rc;
}

/* Bytes StarPU moved since the last call, into device memory nodes and out of them (resets counters). */
static void bus_bytes(long long *to_devices, long long *from_devices)
{
    *to_devices = *from_devices = 0;
    for (int b = 0; b < starpu_bus_get_count(); b++) {
        struct starpu_profiling_bus_info info;
        if (starpu_bus_get_profiling_info(b, &info) != 0) continue;
        if (starpu_node_get_kind((unsigned)starpu_bus_get_dst(b)) != STARPU_CPU_RAM) *to_devices += info.transferred_bytes;
        if (starpu_node_get_kind((unsigned)starpu_bus_get_src(b)) != STARPU_CPU_RAM) *from_devices += info.transferred_bytes;
    }
}

/*
 * Transfers follow the graph (emulated box): with every replica's input and output on its device, an
 * all-reduce makes StarPU move no more bytes into devices, and none more out of them, than the graph's
 * edges carry (bytes_moved; StarPU 1.3 stages device-to-device copies through main memory, so each edge
 * is one transfer out and one in, and a piece read by several devices leaves its device once). Before
 * the executor cut vectors into pieces, a ring moved whole vectors for every chunk: 17x the graph.
 *
 *     in_p (on p) --[graph]--> out_p (on p)         bytes into devices <= bytes_moved
 *                                                   bytes out of devices <= bytes_moved
 */
static void test_transfers_follow_graph(void)
{
    if (!EMULATED) return;
    const int n = 8;
    const size_t count = 48 * 1024 + 5; /* 192 KiB + 20 B: chunks that do not divide evenly */
    starfold_tensor_desc_t t = { STARFOLD_FLOAT32, count };
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = n,
                                              .sources = devices, .num_tensors = 1, .tensors = &t };
    float *host = starfold_tools_alloc(STARFOLD_FLOAT32, count);
    CU_ASSERT_PTR_NOT_NULL_FATAL(host);
    starpu_data_handle_t in[8], out[8];
    for (int s = 0; s < n; s++) {
        starfold_tools_fill(host, STARFOLD_FLOAT32, count, STARFOLD_OP_SUM, s, 0);
        CHECK_OK(starfold_vector_create(ctx, s, STARFOLD_FLOAT32, count, &in[s]));
        CHECK_OK(starfold_vector_write(in[s], host, count * sizeof(float)));
        CHECK_OK(starfold_vector_create(ctx, s, STARFOLD_FLOAT32, count, &out[s]));
    }
    starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
    for (int a = 0; a < starfold_algorithm_count(); a++) {
        const char *name = starfold_algorithm_name(a);
        if (starfold__tu_refuses(topo8, name)) continue;
        starfold_algo_options_t opt;
        starfold_algo_options_init(&opt);
        opt.chunk_bytes = 16 * 1024; /* several ring rounds */
        starfold_graph_t g;
        CHECK_OK(starfold_graph_compile(topo8, name, &desc, &opt, &g));
        CHECK_OK(starfold_graph_check(g));
        starfold_graph_stats_t stats;
        CHECK_OK(starfold_graph_stats(g, &stats));
        /* Inputs valid on their devices (written from the host), outputs nowhere yet. */
        for (int s = 0; s < n; s++) starpu_data_fetch_on_node(in[s], starpu_data_get_home_node(in[s]), 0);
        long long to_dev, from_dev;
        bus_bytes(&to_dev, &from_dev);
        starfold_request_t req;
        CHECK_OK(starfold_submit(ctx, g, in, out, &req));
        CHECK_OK(starfold_request_wait(req));
        starfold_request_destroy(req);
        starpu_task_wait_for_all();
        bus_bytes(&to_dev, &from_dev);
        printf("\n    %-18s graph %8llu B, StarPU moved %8lld B in, %8lld B out", name,
               (unsigned long long)stats.bytes_moved, to_dev, from_dev);
        CU_ASSERT(to_dev <= (long long)stats.bytes_moved);
        CU_ASSERT(from_dev <= (long long)stats.bytes_moved);
        CU_ASSERT(to_dev > 0);
        for (int d = 0; d < n; d++) CU_ASSERT_EQUAL(check_output_sum(out[d], n, count), 0);
        starfold_graph_destroy(g);
    }
    starpu_profiling_status_set(STARPU_PROFILING_DISABLE);
    for (int s = 0; s < n; s++) {
        starfold_vector_destroy(ctx, in[s]);
        starfold_vector_destroy(ctx, out[s]);
    }
    free(host);
}


/*
 * The timeline of a finished request (starfold_request_timeline(), starfold_request_trace_svg()): one
 * entry per task that ran, on its device's worker, start before end, kinds of the graph's; with
 * StarPU's profiling on, the emulated box's transfers show as waits for data. The SVG has a bar with
 * a tooltip per task and a legend.
 */
static void test_timeline(void)
{
    const int n = 8;
    const size_t count = 16 * 1024;
    starfold_tensor_desc_t t = { STARFOLD_FLOAT32, count };
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = n,
                                              .sources = devices, .num_tensors = 1, .tensors = &t };
    starpu_data_handle_t in[8], out[8];
    for (int s = 0; s < n; s++) {
        CHECK_OK(starfold_vector_create(ctx, s, STARFOLD_FLOAT32, count, &in[s]));
        CHECK_OK(starfold_vector_create(ctx, s, STARFOLD_FLOAT32, count, &out[s]));
        float *host = starfold_tools_alloc(STARFOLD_FLOAT32, count);
        CU_ASSERT_PTR_NOT_NULL_FATAL(host);
        starfold_tools_fill(host, STARFOLD_FLOAT32, count, STARFOLD_OP_SUM, s, 0);
        CHECK_OK(starfold_vector_write(in[s], host, count * sizeof(float)));
        free(host);
    }
    starfold_graph_t g;
    CHECK_OK(starfold_graph_compile(topo8, "hierarchical-copy", &desc, NULL, &g));
    starfold_context_set_profiling(ctx, 1);
    starfold_request_t req;
    CHECK_OK(starfold_submit(ctx, g, in, out, &req));
    CHECK_OK(starfold_request_wait(req));
    starfold_context_set_profiling(ctx, 0);

    size_t nt = 0;
    CU_ASSERT_EQUAL(starfold_request_timeline(NULL, NULL, 0, &nt), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_request_timeline(req, NULL, 4, &nt), STARFOLD_ERR_INVALID_ARGUMENT);
    CHECK_OK(starfold_request_timeline(req, NULL, 0, &nt));
    CU_ASSERT_TRUE(nt >= 1 && nt <= starfold_graph_num_tasks(g));
    starfold_task_timing_t *tm = calloc(nt, sizeof *tm);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tm);
    size_t again = 0;
    CHECK_OK(starfold_request_timeline(req, tm, nt, &again));
    CU_ASSERT_EQUAL(again, nt);
    int fetched = 0;
    for (size_t k = 0; k < nt; k++) {
        CU_ASSERT_TRUE(tm[k].start_us >= 0 && tm[k].end_us >= tm[k].start_us);
        CU_ASSERT_TRUE(tm[k].device >= 0 && tm[k].device < n);
        CU_ASSERT_EQUAL(tm[k].worker, starfold_context_device_worker(ctx, tm[k].device));
        CU_ASSERT_TRUE((int)tm[k].kind >= 0 && tm[k].kind < STARFOLD_TASK_KIND_COUNT);
        CU_ASSERT_TRUE(tm[k].node < starfold_graph_num_tasks(g));
        fetched += tm[k].fetch_us > 0;
    }
    if (EMULATED) CU_ASSERT_TRUE(fetched > 0); /* data moved between memory nodes before some tasks */

    char path[] = "/tmp/starfold-trace-XXXXXX.svg";
    const int fd = mkstemps(path, 4);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    close(fd);
    CHECK_OK(starfold_request_trace_svg(req, ctx, "a <title> & more", path));
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char *text = calloc(1, 1 << 20);
    const size_t len = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    CU_ASSERT_TRUE(len > 0 && strncmp(text, "<?xml", 5) == 0 && strstr(text, "</svg>") != NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "a &lt;title&gt; &amp; more"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "waiting for data (transfers)"));
    size_t bars = 0;
    for (const char *p = text; (p = strstr(p, "<title>node ")); p++) bars++;
    CU_ASSERT_EQUAL(bars, nt);
    free(text);
    CU_ASSERT_EQUAL(starfold_request_trace_svg(req, ctx, NULL, "/nonexistent-dir/x.svg"), STARFOLD_ERR_IO);
    unlink(path);
    free(tm);
    starfold_request_destroy(req);
    starfold_graph_destroy(g);
    for (int s = 0; s < n; s++) {
        starfold_vector_destroy(ctx, in[s]);
        starfold_vector_destroy(ctx, out[s]);
    }
}

/*
 * Overlap: the caller submits a (slow) task writing input 0, then the reduction, then a task reading
 * output 1, and only then waits: StarPU's data dependencies put the three in order.
 */
static void test_caller_overlap(void)
{
    fixture_t f;
    fixture_init(&f, 4, 1000);
    /* The writer replaces replica 0's data: the reduction must see the new values. */
    float *fresh = starfold_tools_alloc(STARFOLD_FLOAT32, f.count), *seen = starfold_tools_alloc(STARFOLD_FLOAT32, f.count);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fresh);
    CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
    starfold_tools_fill(fresh, STARFOLD_FLOAT32, f.count, STARFOLD_OP_SUM, 42, 0);
    caller_arg_t wa = { fresh, f.count * sizeof(float), 0, 50 }, ra = { seen, f.count * sizeof(float), 0, 0 };

    struct starpu_task *w = caller_task(&writer_cl, f.in[0], &wa, 0);
    CU_ASSERT_EQUAL_FATAL(starpu_task_submit(w), 0);
    starfold_request_t req;
    CHECK_OK(starfold_submit(ctx, f.graph, f.in, f.out, &req));
    struct starpu_task *r = caller_task(&reader_cl, f.out[1], &ra, 1);
    r->detach = 0;
    CU_ASSERT_EQUAL_FATAL(starpu_task_submit(r), 0);
    CU_ASSERT_EQUAL(starpu_task_wait(r), 0); /* destroys r */
    CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_OK);
    starfold_request_destroy(req);

    memcpy(f.host[0], fresh, f.count * sizeof(float));
    CU_ASSERT_EQUAL(fixture_check(&f, 1, seen), 0); /* what the reader saw */
    for (int d = 0; d < f.n; d++) CU_ASSERT_EQUAL(fixture_check(&f, d, NULL), 0);
    free(fresh);
    free(seen);
    fixture_free(&f);
}

/* Two submissions of one graph on the same handles, in flight together: StarPU orders them. */
static void test_back_to_back(void)
{
    fixture_t f;
    fixture_init(&f, 3, 1000);
    starfold_request_t r1, r2;
    CHECK_OK(starfold_submit(ctx, f.graph, f.in, f.out, &r1));
    CHECK_OK(starfold_submit(ctx, f.graph, f.in, f.out, &r2));
    CU_ASSERT_EQUAL(starfold_request_wait(r2), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_request_wait(r1), STARFOLD_OK);
    starfold_request_destroy(r1);
    starfold_request_destroy(r2);
    for (int d = 0; d < f.n; d++) CU_ASSERT_EQUAL(fixture_check(&f, d, NULL), 0);
    fixture_free(&f);
}

/* Tensors of zero elements need no handle: NULL is accepted for them (and only for them). */
static void test_null_handles_for_empty(void)
{
    const starfold_tensor_desc_t t[2] = { { STARFOLD_INT32, 0 }, { STARFOLD_INT32, 5 } };
    starfold_topology_t topo = topo_of(2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(topo);
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_MAX, .num_sources = 2,
                                              .sources = devices, .num_tensors = 2, .tensors = t };
    starfold_graph_t g;
    CHECK_OK(starfold_graph_compile(topo, "reduce-to-one", &desc, NULL, &g));
    starfold_topology_destroy(topo);
    starpu_data_handle_t in[4] = { NULL }, out[4] = { NULL };
    int32_t host[2][5], got[5];
    for (int s = 0; s < 2; s++) {
        starfold_tools_fill(host[s], STARFOLD_INT32, 5, STARFOLD_OP_MAX, s, 1);
        CHECK_OK(starfold_vector_create(ctx, s, STARFOLD_INT32, 5, &in[s * 2 + 1]));
        CHECK_OK(starfold_vector_write(in[s * 2 + 1], host[s], sizeof host[s]));
        CHECK_OK(starfold_vector_create(ctx, s, STARFOLD_INT32, 5, &out[s * 2 + 1]));
    }
    starfold_request_t req;
    CHECK_OK(starfold_submit(ctx, g, in, out, &req));
    CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_OK);
    starfold_request_destroy(req);
    for (int d = 0; d < 2; d++) {
        CHECK_OK(starfold_vector_read(out[d * 2 + 1], got, sizeof got));
        for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(got[i], host[0][i] > host[1][i] ? host[0][i] : host[1][i]);
    }
    /* ...but not for a tensor with elements */
    starpu_data_handle_t keep = in[3];
    in[3] = NULL;
    CU_ASSERT_EQUAL(starfold_submit(ctx, g, in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    in[3] = keep;
    for (int k = 0; k < 4; k++) {
        starfold_vector_destroy(ctx, in[k]);
        starfold_vector_destroy(ctx, out[k]);
    }
    starfold_graph_destroy(g);
}

/* Promoted integer MEAN: an int64 input handle cannot also be its float64 output, though both are 8 bytes. */
static void test_promoted_not_in_place(void)
{
    const starfold_tensor_desc_t t = { STARFOLD_INT64, 10 };
    starfold_topology_t topo = topo_of(2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(topo);
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_MEAN, .num_sources = 2,
                                              .sources = devices, .num_tensors = 1, .tensors = &t,
                                              .promote_integer_mean = 1 };
    starfold_graph_t g;
    CHECK_OK(starfold_graph_compile(topo, "reduce-to-one", &desc, NULL, &g));
    starfold_topology_destroy(topo);
    CU_ASSERT_EQUAL(starfold_graph_output_dtype(g, 0), STARFOLD_FLOAT64);
    starpu_data_handle_t in[2], out[2];
    for (int s = 0; s < 2; s++) {
        CHECK_OK(starfold_vector_create(ctx, s, STARFOLD_INT64, 10, &in[s]));
        CHECK_OK(starfold_vector_create(ctx, s, STARFOLD_FLOAT64, 10, &out[s]));
    }
    starfold_request_t req;
    starpu_data_handle_t alias[2] = { in[0], out[1] };
    CU_ASSERT_EQUAL(starfold_submit(ctx, g, in, alias, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    for (int s = 0; s < 2; s++) {
        starfold_vector_destroy(ctx, in[s]);
        starfold_vector_destroy(ctx, out[s]);
    }
    starfold_graph_destroy(g);
}

/* request_test / wait_timeout while a caller task holds the graph back, then after it completes. */
static void test_request_progress(void)
{
    fixture_t f;
    fixture_init(&f, 3, 1000);
    caller_arg_t wa = { f.host[0], f.count * sizeof(float), 1, 0 };
    __atomic_store_n(&release, 0, __ATOMIC_RELEASE);
    struct starpu_task *w = caller_task(&writer_cl, f.in[0], &wa, 0);
    CU_ASSERT_EQUAL_FATAL(starpu_task_submit(w), 0);
    starfold_request_t req;
    CHECK_OK(starfold_submit(ctx, f.graph, f.in, f.out, &req));

    CU_ASSERT_EQUAL(starfold_request_test(req), STARFOLD_ERR_IN_PROGRESS);
    const double t0 = starfold_tools_now();
    CU_ASSERT_EQUAL(starfold_request_wait_timeout(req, 0.05), STARFOLD_ERR_TIMEOUT);
    CU_ASSERT(starfold_tools_now() - t0 >= 0.045);
    CU_ASSERT_EQUAL(starfold_request_wait_timeout(req, 0.0), STARFOLD_ERR_TIMEOUT);
    CU_ASSERT_EQUAL(starfold_request_wait_timeout(req, -1.0), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_request_test(req), STARFOLD_ERR_IN_PROGRESS);

    __atomic_store_n(&release, 1, __ATOMIC_RELEASE);
    CU_ASSERT_EQUAL(starfold_request_wait_timeout(req, 60.0), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_request_test(req), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_OK); /* waiting again is fine */
    starfold_request_destroy(req);
    for (int d = 0; d < f.n; d++) CU_ASSERT_EQUAL(fixture_check(&f, d, NULL), 0);

    /* Polling with test() alone until done, then destroy without a wait. */
    CHECK_OK(starfold_submit(ctx, f.graph, f.in, f.out, &req));
    starfold_status_t st;
    while ((st = starfold_request_test(req)) == STARFOLD_ERR_IN_PROGRESS) sleep_ms(1);
    CU_ASSERT_EQUAL(st, STARFOLD_OK);
    starfold_request_destroy(req);
    /* destroy of a running request waits for it */
    CHECK_OK(starfold_submit(ctx, f.graph, f.in, f.out, &req));
    starfold_request_destroy(req);
    starfold_request_destroy(NULL);
    CU_ASSERT_EQUAL(starfold_request_wait(NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_request_test(NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_request_wait_timeout(NULL, 1.0), STARFOLD_ERR_INVALID_ARGUMENT);
    fixture_free(&f);
}

/* ------------------------------------------------------------------------------------------------
 * Failures
 */

static void test_submit_errors(void)
{
    fixture_t f;
    fixture_init(&f, 3, 1000);
    starfold_request_t req = NULL;
    CU_ASSERT_EQUAL(starfold_submit(NULL, f.graph, f.in, f.out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_submit(ctx, NULL, f.in, f.out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, NULL, f.out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, f.in, NULL, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, f.in, f.out, NULL), STARFOLD_ERR_INVALID_ARGUMENT);

    starpu_data_handle_t in[3], out[3];
    memcpy(in, f.in, sizeof in);
    memcpy(out, f.out, sizeof out);
    /* NULL handle for a non-empty tensor */
    in[1] = NULL;
    CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    in[1] = f.in[1];
    out[2] = NULL;
    CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    out[2] = f.out[2];
    /* wrong element count, wrong element size, not a vector */
    starpu_data_handle_t shorter, wider, var;
    CHECK_OK(starfold_vector_create(ctx, 1, STARFOLD_FLOAT32, f.count - 1, &shorter));
    CHECK_OK(starfold_vector_create(ctx, 1, STARFOLD_FLOAT64, f.count, &wider));
    static float scalar;
    starpu_variable_data_register(&var, STARPU_MAIN_RAM, (uintptr_t)&scalar, sizeof scalar);
    in[1] = shorter;
    CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    in[1] = wider;
    CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    in[1] = var;
    CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    in[1] = f.in[1];
    out[0] = wider;
    CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    /* an output aliasing another device's input, two outputs sharing a handle */
    out[0] = f.in[1];
    CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    out[0] = f.out[1];
    CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    out[0] = f.out[0];
    CU_ASSERT_PTR_NULL(req); /* never set on failure */
    starfold_vector_destroy(ctx, shorter);
    starfold_vector_destroy(ctx, wider);
    starpu_data_unregister(var);
    for (int d = 0; d < f.n; d++) CU_ASSERT(fixture_untouched(&f, d));

    /* A graph for more devices than the context has. */
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = starfold_context_mode(ctx);
    o.num_devices = 2;
    starfold_context_t small;
    CHECK_OK(starfold_context_create(&o, &small));
    CU_ASSERT_EQUAL(starfold_context_num_devices(small), 2);
    CU_ASSERT_EQUAL(starfold_submit(small, f.graph, f.in, f.out, &req), STARFOLD_ERR_NO_DEVICE);
    starfold_context_destroy(small);
    fixture_free(&f);
}

/*
 * StarPU refusing a task halfway through the submission (simulated with the context's testing hook):
 * the tasks already queued turn into no-ops, nothing is written, starfold_submit() says RUNTIME.
 */
static void test_refused_submission(void)
{
    fixture_t f;
    fixture_init(&f, 4, 1000); /* tasks: 0 reduce, 1..4 copies */
    starfold_request_t req = NULL;
    for (long k = 0; k < 5; k += 2) {
        ctx->test_refuse_task = k;
        CU_ASSERT_EQUAL(starfold_submit(ctx, f.graph, f.in, f.out, &req), STARFOLD_ERR_RUNTIME);
        CU_ASSERT_PTR_NULL(req);
        for (int d = 0; d < f.n; d++) CU_ASSERT(fixture_untouched(&f, d));
    }
    ctx->test_refuse_task = -1;
    /* The context still works. */
    CHECK_OK(starfold_submit(ctx, f.graph, f.in, f.out, &req));
    CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_OK);
    starfold_request_destroy(req);
    for (int d = 0; d < f.n; d++) CU_ASSERT_EQUAL(fixture_check(&f, d, NULL), 0);
    fixture_free(&f);
}

/*
 * Persistent submissions of handles: bad arguments refused as starfold_submit() refuses them, nothing
 * created; the graph destroyed right after the create (the persistent submission needs none of it);
 * a start refused halfway (testing hook) writes nothing and leaves the persistent submission usable.
 */
static void test_persistent_errors(void)
{
    fixture_t f;
    fixture_init(&f, 4, 1000); /* tasks: 0 reduce, 1..4 copies */
    starfold_persistent_t p = NULL;
    starfold_request_t req = NULL;
    CU_ASSERT_EQUAL(starfold_persistent_create(NULL, f.graph, f.in, f.out, &p), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_persistent_create(ctx, NULL, f.in, f.out, &p), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_persistent_create(ctx, f.graph, NULL, f.out, &p), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_persistent_create(ctx, f.graph, f.in, f.out, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_persistent_create_views(ctx, f.graph, NULL, NULL, &p), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_persistent_start(NULL, &req), STARFOLD_ERR_INVALID_ARGUMENT);
    starpu_data_handle_t in[4], shorter;
    memcpy(in, f.in, sizeof in);
    CHECK_OK(starfold_vector_create(ctx, 1, STARFOLD_FLOAT32, f.count - 1, &shorter));
    in[1] = shorter;
    CU_ASSERT_EQUAL(starfold_persistent_create(ctx, f.graph, in, f.out, &p), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "starfold_persistent_create: input slot 1 tensor 0"));
    starfold_view_t vi[4], vo[4];
    for (int d = 0; d < 4; d++) vi[d] = (starfold_view_t){ f.in[d], 0 }, vo[d] = (starfold_view_t){ f.out[d], 1 };
    CU_ASSERT_EQUAL(starfold_persistent_create_views(ctx, f.graph, vi, vo, &p), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "starfold_persistent_create_views: output slot 0"));
    CU_ASSERT_PTR_NULL(p); /* never set on failure */
    starfold_vector_destroy(ctx, shorter);
    starfold_persistent_destroy(NULL);

    CHECK_OK(starfold_persistent_create(ctx, f.graph, f.in, f.out, &p));
    starfold_graph_destroy(f.graph);
    f.graph = NULL;
    ctx->test_refuse_task = 2;
    CU_ASSERT_EQUAL(starfold_persistent_start(p, &req), STARFOLD_ERR_RUNTIME);
    CU_ASSERT_PTR_NULL(req);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "starfold_persistent_start: StarPU refused task 2"));
    ctx->test_refuse_task = -1;
    for (int d = 0; d < f.n; d++) CU_ASSERT(fixture_untouched(&f, d));
    for (int round = 0; round < 2; round++) {
        CHECK_OK(starfold_persistent_start(p, &req));
        CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_OK);
        starfold_request_destroy(req);
        for (int d = 0; d < f.n; d++) CU_ASSERT_EQUAL(fixture_check(&f, d, NULL), 0);
    }
    starfold_persistent_destroy(p);
    fixture_free(&f);
}

/* A kernel that fails (testing hook): the request reports TASK_FAILED. */
static void test_kernel_failure(void)
{
    fixture_t f;
    fixture_init(&f, 3, 100);
    starfold_request_t req;
    __atomic_store_n(&ctx->test_fail_task, 0, __ATOMIC_RELAXED);
    CHECK_OK(starfold_submit(ctx, f.graph, f.in, f.out, &req));
    CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_ERR_TASK_FAILED);
    __atomic_store_n(&ctx->test_fail_task, -1, __ATOMIC_RELAXED);
    CU_ASSERT_EQUAL(starfold_request_test(req), STARFOLD_ERR_TASK_FAILED);
    starfold_request_destroy(req);
    fixture_free(&f);
}

/* ------------------------------------------------------------------------------------------------
 * Context and vectors
 */

/* Whether StarPU has a CUDA worker that this build has kernels for (auto mode then picks CUDA). */
static int have_cuda_worker(void)
{
#ifdef STARFOLD_HAVE_CUDA
    return starpu_worker_get_count_by_type(STARPU_CUDA_WORKER) > 0;
#else
    return 0;
#endif
}

static void test_context(void)
{
    const int n = starfold_context_num_devices(ctx);
    CU_ASSERT_EQUAL(n, 8);
    CU_ASSERT_EQUAL(starfold_context_mode(ctx), EMULATED ? STARFOLD_DEVICES_OPENCL : STARFOLD_DEVICES_CPU);
    for (int d = 0; d < n; d++) {
        const int w = starfold_context_device_worker(ctx, d);
        CU_ASSERT(w >= 0);
        CU_ASSERT_EQUAL(starfold_context_device_node(ctx, d), (int)starpu_worker_get_memory_node((unsigned)w));
        CU_ASSERT_EQUAL(starpu_worker_get_type(w), EMULATED ? STARPU_OPENCL_WORKER : STARPU_CPU_WORKER);
    }
    if (EMULATED) /* one memory node per device */
        for (int d = 1; d < n; d++) CU_ASSERT_NOT_EQUAL(starfold_context_device_node(ctx, d), starfold_context_device_node(ctx, 0));
    CU_ASSERT_EQUAL(starfold_context_device_worker(ctx, -1), -1);
    CU_ASSERT_EQUAL(starfold_context_device_worker(ctx, n), -1);
    CU_ASSERT_EQUAL(starfold_context_device_node(ctx, n), -1);
    CU_ASSERT_EQUAL(starfold_context_num_devices(NULL), 0);

    /* Topology: all pairs linked, host links within one memory node. */
    CU_ASSERT_EQUAL(starfold_topology_num_devices(topo8), n);
    CU_ASSERT_EQUAL(starfold_topology_num_links(topo8), n * (n - 1) / 2);
    CU_ASSERT_EQUAL(starfold_topology_validate(topo8), STARFOLD_OK);
    starfold_link_t l;
    CHECK_OK(starfold_topology_link(topo8, 0, &l));
    CU_ASSERT(l.bandwidth_GBps > 0.0);
    CU_ASSERT(l.latency_us >= 0.0);
    if (!EMULATED) CU_ASSERT_EQUAL(l.kind, STARFOLD_LINK_HOST);
    CU_ASSERT_EQUAL(starfold_context_topology(NULL, &topo8), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_context_topology(ctx, NULL), STARFOLD_ERR_INVALID_ARGUMENT);

    /* Defaults: one device per worker of the kind, a CUDA worker first where StarPU has one and this
     * build has CUDA kernels (tests/device/gpu.sh runs this program with a GPU beside the CPU workers). */
    starfold_context_t c2;
    starfold_context_options_t o;
    const int cuda = have_cuda_worker();
    CHECK_OK(starfold_context_create(NULL, &c2));
    CU_ASSERT_EQUAL(starfold_context_mode(c2), cuda ? STARFOLD_DEVICES_CUDA : EMULATED ? STARFOLD_DEVICES_OPENCL : STARFOLD_DEVICES_CPU);
    CU_ASSERT_EQUAL(starfold_context_num_devices(c2),
                    starpu_worker_get_count_by_type(cuda ? STARPU_CUDA_WORKER : EMULATED ? STARPU_OPENCL_WORKER : STARPU_CPU_WORKER));
    starfold_context_destroy(c2);
    CU_ASSERT(starpu_is_initialized());

    starfold_context_options_init(&o);
    CU_ASSERT_EQUAL(o.mode, STARFOLD_DEVICES_AUTO);
    CU_ASSERT_EQUAL(o.num_devices, 0);
    o.num_devices = -1;
    CU_ASSERT_EQUAL(starfold_context_create(&o, &c2), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_context_create(NULL, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    o.num_devices = 0;
    o.mode = STARFOLD_DEVICES_CUDA;
    if (cuda) {
        CHECK_OK(starfold_context_create(&o, &c2));
        CU_ASSERT_EQUAL(starfold_context_mode(c2), STARFOLD_DEVICES_CUDA);
        starfold_context_destroy(c2);
    } else {
        CU_ASSERT_EQUAL(starfold_context_create(&o, &c2), STARFOLD_ERR_NO_DEVICE);
    }
    if (EMULATED) {
        o.mode = STARFOLD_DEVICES_OPENCL;
        o.num_devices = 9;
        CU_ASSERT_EQUAL(starfold_context_create(&o, &c2), STARFOLD_ERR_NO_DEVICE);
        o.mode = STARFOLD_DEVICES_CPU;
        o.num_devices = 0;
        CU_ASSERT_EQUAL(starfold_context_create(&o, &c2), STARFOLD_ERR_NO_DEVICE);
    } else {
        o.mode = STARFOLD_DEVICES_OPENCL;
        CU_ASSERT_EQUAL(starfold_context_create(&o, &c2), STARFOLD_ERR_NO_DEVICE);
        /* CPU devices share workers round-robin: any count. */
        o.mode = STARFOLD_DEVICES_CPU;
        o.num_devices = 64;
        CHECK_OK(starfold_context_create(&o, &c2));
        CU_ASSERT_EQUAL(starfold_context_num_devices(c2), 64);
        CU_ASSERT_EQUAL(starfold_context_device_worker(c2, 63), starfold_context_device_worker(c2, 63 % 2));
        starfold_context_destroy(c2);
    }
    starfold_context_destroy(NULL);
}

static void test_vectors(void)
{
    const size_t count = 1001;
    for (int di = 0; di < STARFOLD_DTYPE_COUNT; di++) {
        const starfold_dtype_t dt = all_dtypes[di];
        const size_t es = starfold_dtype_size(dt);
        void *a = starfold_tools_alloc(dt, count), *b = starfold_tools_alloc(dt, count);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        const int dev = (di * 3) % starfold_context_num_devices(ctx);
        starpu_data_handle_t h;
        CHECK_OK(starfold_vector_create(ctx, dev, dt, count, &h));
        CU_ASSERT_EQUAL(starpu_vector_get_nx(h), count);
        CU_ASSERT_EQUAL(starpu_vector_get_elemsize(h), es);
        CU_ASSERT_EQUAL(starpu_data_get_home_node(h), starfold_context_device_node(ctx, dev));
        starfold_tools_fill(a, dt, count, STARFOLD_OP_SUM, di, 1);
        CHECK_OK(starfold_vector_write(h, a, count * es));
        memset(b, 0, count * es);
        CHECK_OK(starfold_vector_read(h, b, count * es));
        CU_ASSERT_EQUAL(memcmp(a, b, count * es), 0);
        /* a partial write keeps the rest; a partial read reads the beginning */
        starfold_tools_fill_sentinel(b, dt, 10);
        CHECK_OK(starfold_vector_write(h, b, 10 * es));
        CHECK_OK(starfold_vector_read(h, b, count * es));
        CU_ASSERT_EQUAL(starfold_tools_get(b, dt, 9), starfold_tools_sentinel(dt));
        CU_ASSERT_EQUAL(memcmp((char *)a + 10 * es, (char *)b + 10 * es, (count - 10) * es), 0);
        CHECK_OK(starfold_vector_read(h, b, 5 * es));
        /* errors */
        CU_ASSERT_EQUAL(starfold_vector_write(h, a, count * es + 1), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_EQUAL(starfold_vector_read(h, b, count * es + 1), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_EQUAL(starfold_vector_write(h, NULL, 4), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_EQUAL(starfold_vector_read(h, NULL, 4), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_EQUAL(starfold_vector_write(NULL, a, 4), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_EQUAL(starfold_vector_read(NULL, b, 4), STARFOLD_ERR_INVALID_ARGUMENT);
        CHECK_OK(starfold_vector_write(h, NULL, 0));
        starfold_vector_destroy(ctx, h);
        free(a);
        free(b);
    }
    /* zero elements */
    starpu_data_handle_t z;
    CHECK_OK(starfold_vector_create(ctx, 1, STARFOLD_INT64, 0, &z));
    CU_ASSERT_EQUAL(starpu_vector_get_nx(z), 0);
    CHECK_OK(starfold_vector_write(z, NULL, 0));
    CHECK_OK(starfold_vector_read(z, NULL, 0));
    int64_t x = 0;
    CU_ASSERT_EQUAL(starfold_vector_read(z, &x, sizeof x), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_vector_destroy(ctx, z);
    /* argument errors */
    starpu_data_handle_t h;
    CU_ASSERT_EQUAL(starfold_vector_create(NULL, 0, STARFOLD_FLOAT32, 4, &h), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_vector_create(ctx, 0, STARFOLD_FLOAT32, 4, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_vector_create(ctx, 0, (starfold_dtype_t)42, 4, &h), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_vector_create(ctx, 8, STARFOLD_FLOAT32, 4, &h), STARFOLD_ERR_NO_DEVICE);
    CU_ASSERT_EQUAL(starfold_vector_create(ctx, -1, STARFOLD_FLOAT32, 4, &h), STARFOLD_ERR_NO_DEVICE);
    starfold_vector_destroy(ctx, NULL);
}

/*
 * StarPU's life cycle (its own suite, run after the main context is gone): starfold starts StarPU for
 * its first context and stops it with its last; an application's own StarPU is left running.
 */
static void test_lifecycle(void)
{
    CU_ASSERT_FALSE(starpu_is_initialized());
    starfold_context_t a, b;
    CHECK_OK(starfold_context_create(NULL, &a));
    CU_ASSERT_TRUE(starpu_is_initialized());
    CHECK_OK(starfold_context_create(NULL, &b));
    starfold_context_destroy(a);
    CU_ASSERT_TRUE(starpu_is_initialized());
    starfold_context_destroy(b);
    CU_ASSERT_FALSE(starpu_is_initialized());
    if (EMULATED) return; /* another StarPU start costs seconds with 8 OpenCL devices */

    CU_ASSERT_EQUAL_FATAL(starpu_init(NULL), 0);
    CHECK_OK(starfold_context_create(NULL, &a));
    starfold_context_destroy(a);
    CU_ASSERT_TRUE(starpu_is_initialized());
    starpu_shutdown();
}

/* ------------------------------------------------------------------------------------------------ */

static int suite_init(void)
{
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = EMULATED ? STARFOLD_DEVICES_OPENCL : STARFOLD_DEVICES_CPU;
    o.num_devices = 8;
    if (starfold_context_create(&o, &ctx) != STARFOLD_OK) return -1;
    if (starfold_context_topology(ctx, &topo8) != STARFOLD_OK) return -1;
    for (int i = 0; i < STARFOLD_MAX_DEVICES; i++) devices[i] = i;
    init_combos();
    return 0;
}

static int suite_cleanup(void)
{
    starfold_topology_destroy(topo8);
    starfold_context_destroy(ctx);
    ctx = NULL;
    return 0;
}

/*
 * Calibration: measured (forced), kept in $STARPU_HOME/.starpu/starfold/, read back by the next call;
 * the context's topology then carries the figures, and the model uses them when given no parameters.
 */
static void test_calibrate(void)
{
    starfold_calibration_t c, again;
    CU_ASSERT_EQUAL(starfold_context_calibrate(NULL, 0, &c), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_context_calibrate(ctx, 0, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL_FATAL(starfold_context_calibrate(ctx, 1, &c), STARFOLD_OK);
    CU_ASSERT_EQUAL(c.from_file, 0);
    CU_ASSERT_EQUAL(c.points, 6);
    CU_ASSERT(c.fit_error >= 0 && isfinite(c.fit_error));
    CU_ASSERT(c.params.task_overhead_us >= 0 && isfinite(c.params.task_overhead_us));
    CU_ASSERT(c.params.submit_overhead_us >= 0 && isfinite(c.params.submit_overhead_us));
    /* The memory bandwidth of the devices' kind is fitted (within the bisection's range), the other kept. */
    const double fitted = EMULATED ? c.params.gpu_memory_GBps : c.params.cpu_memory_GBps;
    const double kept = EMULATED ? c.params.cpu_memory_GBps : c.params.gpu_memory_GBps;
    CU_ASSERT(fitted >= 0.05 && fitted <= 1e5);
    CU_ASSERT_EQUAL(kept, EMULATED ? 20.0 : 800.0);
    const char *home = getenv("STARPU_HOME");
    CU_ASSERT_PTR_NOT_NULL_FATAL(home);
    CU_ASSERT_EQUAL(strncmp(c.path, home, strlen(home)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.path, "/.starpu/starfold/calibration."));
    CU_ASSERT_PTR_NOT_NULL(strstr(c.path, EMULATED ? ".opencl.8" : ".cpu.8"));
    FILE *f = fopen(c.path, "r");
    CU_ASSERT_PTR_NOT_NULL(f);
    if (f) fclose(f);

    /* Read back, not measured: the very same figures. */
    CU_ASSERT_EQUAL_FATAL(starfold_context_calibrate(ctx, 0, &again), STARFOLD_OK);
    CU_ASSERT_EQUAL(again.from_file, 1);
    CU_ASSERT_STRING_EQUAL(again.path, c.path);
    CU_ASSERT_EQUAL(again.params.task_overhead_us, c.params.task_overhead_us);
    CU_ASSERT_EQUAL(again.params.submit_overhead_us, c.params.submit_overhead_us);
    CU_ASSERT_EQUAL(again.params.cpu_memory_GBps, c.params.cpu_memory_GBps);
    CU_ASSERT_EQUAL(again.params.gpu_memory_GBps, c.params.gpu_memory_GBps);
    CU_ASSERT_EQUAL(again.params.cpu_workers, c.params.cpu_workers);

    /* The context's topology carries them; simulate with NULL uses them. */
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_context_topology(ctx, &t), STARFOLD_OK);
    starfold_cost_params_t p;
    CU_ASSERT_EQUAL(starfold_topology_cost_params(t, &p), 1);
    CU_ASSERT_EQUAL(p.task_overhead_us, c.params.task_overhead_us);
    int all8[8];
    for (int d = 0; d < 8; d++) all8[d] = d;
    const starfold_tensor_desc_t one = { STARFOLD_FLOAT32, 1 << 16 };
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = 8,
                                              .sources = all8, .num_tensors = 1, .tensors = &one };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_compile(t, "trees", &desc, NULL, &g), STARFOLD_OK);
    starfold_prediction_t implicit, explicit_, defaults;
    CU_ASSERT_EQUAL(starfold_graph_simulate(g, NULL, &implicit), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_graph_simulate(g, &c.params, &explicit_), STARFOLD_OK);
    CU_ASSERT_EQUAL(implicit.time_us, explicit_.time_us);
    starfold_cost_params_t dp;
    starfold_cost_params_init(&dp);
    CU_ASSERT_EQUAL(starfold_graph_simulate(g, &dp, &defaults), STARFOLD_OK);
    CU_ASSERT_NOT_EQUAL(implicit.time_us, defaults.time_us);
    starfold_graph_destroy(g);

    /*
     * Step 3: every algorithm that runs here timed at 32 KiB and up (x2), beside the model's time of
     * the same graph; the first size at least, for every algorithm but auto. The file gives them back
     * exactly and the context's topology carries them.
     */
    CU_ASSERT(c.num_measurements >= 5 && c.num_measurements <= STARFOLD_CALIBRATION_MAX_MEASUREMENTS);
    size_t first = 0;
    for (size_t i = 0; i < c.num_measurements; i++) {
        const starfold_measurement_t *m = &c.measurements[i];
        CU_ASSERT(starfold_algorithm_find(m->algorithm) >= 0);
        CU_ASSERT_STRING_NOT_EQUAL(m->algorithm, "auto");
        CU_ASSERT_EQUAL(m->num_devices, 8);
        CU_ASSERT(m->bytes >= 32768 && (m->bytes & (m->bytes - 1)) == 0);
        CU_ASSERT(m->measured_us > 0 && isfinite(m->measured_us));
        CU_ASSERT(m->predicted_us > 0 && isfinite(m->predicted_us));
        first += m->bytes == 32768;
    }
    /* one-pass needs shared memory: not on the emulated box's separate memories */
    CU_ASSERT_EQUAL(first, (size_t)starfold_algorithm_count() - (EMULATED ? 2 : 1));
    CU_ASSERT_EQUAL(again.num_measurements, c.num_measurements);
    for (size_t i = 0; i < c.num_measurements && i < again.num_measurements; i++) {
        CU_ASSERT_STRING_EQUAL(again.measurements[i].algorithm, c.measurements[i].algorithm);
        CU_ASSERT_EQUAL(again.measurements[i].bytes, c.measurements[i].bytes);
        CU_ASSERT_EQUAL(again.measurements[i].measured_us, c.measurements[i].measured_us);
        CU_ASSERT_EQUAL(again.measurements[i].predicted_us, c.measurements[i].predicted_us);
    }
    CU_ASSERT_EQUAL(starfold_topology_measurements(t, NULL, 0), c.num_measurements);
    starfold_topology_destroy(t);
}

/* Usage: test_exec_* [SUBSTRING]: only the tests whose name contains SUBSTRING (debugging aid). */
int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (EMULATED) {
        /* The emulated box needs OpenCL workers: skip (77) where StarPU has none. */
        starfold_context_options_t o;
        starfold_context_options_init(&o);
        o.mode = STARFOLD_DEVICES_OPENCL;
        starfold_context_t probe;
        starfold_status_t st = starfold_context_create(&o, &probe);
        if (st != STARFOLD_OK) {
            fprintf(stderr, "test_exec_emulated: skipped, no OpenCL worker: %s (%s)\n", starfold_status_string(st),
                    starfold_last_error());
            return 77;
        }
        /* Kept open until the suite's context exists, so StarPU is started once. */
        if (suite_init() != 0) {
            fprintf(stderr, "test_exec_emulated: cannot create the 8-device context: %s\n", starfold_last_error());
            starfold_context_destroy(probe);
            return 1;
        }
        starfold_context_destroy(probe);
    } else if (suite_init() != 0) {
        fprintf(stderr, "test_exec_host: cannot create the context: %s\n", starfold_last_error());
        return 1;
    }

    static const starfold__tu_test_t tests[] = {
        { "context", test_context },
        { "cost-model calibration, kept and read back", test_calibrate },
        { "vectors", test_vectors },
        { "hand-built graphs, N x dtype x op", test_hand_graphs },
        { "all tensors empty", test_all_empty },
        { "more than 8 handles per task", test_many_handles },
        { "hand-built graphs in place", test_hand_in_place },
        { "compiled all-reduce, both algorithms", test_compiled_all_reduce },
        { "float16 and bfloat16 against float64, every algorithm", test_half_accuracy },
        { "compiled hierarchical packing", test_compiled_packs },
        { "compiled reduce to one and broadcast", test_compiled_reduce_broadcast },
        { "compiled gather and all-gather", test_compiled_gather },
        { "compiled in place", test_compiled_in_place },
        { "compiled promoted integer mean", test_compiled_promoted_mean },
        { "hierarchical and leader across sockets", test_compiled_by_node },
        { "hierarchical round the rings inside each node", test_compiled_node_rings },
        { "a variable's update after a collective, in one graph", test_update_after_collective },
        { "views of shared vectors", test_views },
        { "views refused", test_views_errors },
        { "persistent submissions", test_persistent },
        { "persistent submissions: errors and a refused start", test_persistent_errors },
        { "pool of temporaries", test_temp_pool },
        { "transfers follow the graph", test_transfers_follow_graph },
        { "timeline of a request, drawn", test_timeline },
        { "caller tasks overlap", test_caller_overlap },
        { "request test and wait_timeout", test_request_progress },
        { "two submissions in flight", test_back_to_back },
        { "NULL handles for empty tensors", test_null_handles_for_empty },
        { "promoted mean is not in place", test_promoted_not_in_place },
        { "submit errors", test_submit_errors },
        { "refused submission", test_refused_submission },
        { "kernel failure", test_kernel_failure },
    };
    if (starfold__tu_begin() != 0) return 1;
    static const starfold__tu_test_t life[] = { { "init and shutdown", test_lifecycle } };
    if (starfold__tu_add(EMULATED ? "exec (emulated 8-device OpenCL box)" : "exec (CPU-only)", NULL, suite_cleanup, tests,
                         SF_TU_COUNT(tests), only) != 0 ||
        starfold__tu_add("StarPU life cycle", NULL, NULL, life, SF_TU_COUNT(life), NULL) != 0)
        return 1;
    const unsigned failed = starfold__tu_run();
    return failed ? 1 : 0;
}
