/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The executor's planning (src/exec/plan.c) without StarPU: compiled without StarPU's flags and
 * linked without StarPU (Makefile.am), it gives the planner the facts submit.c would read from
 * StarPU - each device's memory node, each node's size, each caller's vector - and checks the pieces,
 * cuts, dependencies and the memory pre-flight it produces, with numbers worked out by hand:
 *
 *   hand-reduce on 2 memory nodes (the emulated box's devices 0 and 1, nodes 1 and 2), 10 float32:
 *
 *     n0: in0[0,5) + in1[0,5)  -> acc[0,5)     on device 0      acc: temporary on device 0
 *     n1: in0[5,10) + in1[5,10) -> acc[5,10)   on device 0
 *     n2: acc -> out0                          on device 0
 *     n3: acc -> out1                          on device 1 (reads acc across nodes)
 *
 *     in1 is read across nodes in two ranges and acc written in two: both cut at 5; the rest whole.
 *
 *   views: every replica's tensors in one vector, with guard elements around them (one-pass);
 *   ring: a compiled graph's invariants and piece counts; empty nodes skipped, their dependencies
 *   passed through; a temporary read before any write refused; memory nodes >= 64 counted.
 *
 * Set SF_TEST_PLAN_DUMP=1 to print each plan.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starfold/graph.h>
#include <starfold/topology.h>

#include "exec/plan.h"
#include "graph/graph.h"
#include "runner.h"

#define CHECK_OK(call)                                                                                       \
    do {                                                                                                     \
        starfold_status_t st_ = (call);                                                                      \
        if (st_ != STARFOLD_OK)                                                                              \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, starfold_status_string(st_), \
                    starfold_last_error());                                                                  \
        CU_ASSERT_EQUAL_FATAL(st_, STARFOLD_OK);                                                             \
    } while (0)

#define MAX_REFS 64

/* The facts of one planning, owned by the test. */
typedef struct fixture {
    int nodes[STARFOLD_MAX_DEVICES];
    int64_t node_bytes[128];
    starfold__plan_vector_t vectors[MAX_REFS];
    starfold__plan_ref_t refs[MAX_REFS];
    starfold__plan_facts_t facts;
} fixture_t;

/* Devices on memory nodes @first, @first + 1, ... (nodes below @first hold no device), no size known. */
static void fixture_init(fixture_t *fx, int num_devices, int first)
{
    memset(fx, 0, sizeof *fx);
    for (int d = 0; d < num_devices; d++) fx->nodes[d] = first + d;
    fx->facts.num_devices = num_devices;
    fx->facts.nodes = fx->nodes;
    fx->facts.num_nodes = (size_t)(first + num_devices);
    fx->facts.node_bytes = fx->node_bytes;
    fx->facts.vectors = fx->vectors;
    fx->facts.refs = fx->refs;
}

/* Every device on main memory (node 0), as CPU-only StarPU has them. */
static void fixture_host(fixture_t *fx, int num_devices)
{
    fixture_init(fx, num_devices, 0);
    for (int d = 0; d < num_devices; d++) fx->nodes[d] = 0;
    fx->facts.num_nodes = 1;
}

/* A new caller's vector of @count elements of @elemsize bytes; its number. */
static size_t add_vector(fixture_t *fx, size_t count, size_t elemsize)
{
    fx->vectors[fx->facts.nvectors] = (starfold__plan_vector_t){ count, elemsize, 1 };
    return fx->facts.nvectors++;
}

/* Buffer @buf is elements [lo, lo + its count) of vector @vec (refs must come grouped and sorted). */
static void add_view(fixture_t *fx, const struct starfold_graph *g, size_t vec, size_t lo, size_t buf)
{
    fx->refs[fx->facts.nrefs++] = (starfold__plan_ref_t){ vec, lo, lo + g->bufs[buf].count, buf };
}

/* starfold_submit()'s case: every input, then every output, its own vector holding exactly it. */
static void vector_per_buffer(fixture_t *fx, const struct starfold_graph *g)
{
    const size_t T = g->num_tensors;
    for (size_t i = 0; i < (size_t)g->num_inputs * T; i++) {
        const size_t b = g->input_buf[i];
        add_view(fx, g, add_vector(fx, g->bufs[b].count, starfold_dtype_size(g->bufs[b].dtype)), 0, b);
    }
    for (size_t i = 0; i < (size_t)g->num_outputs * T; i++) {
        const size_t b = g->output_buf[i];
        add_view(fx, g, add_vector(fx, g->bufs[b].count, starfold_dtype_size(g->bufs[b].dtype)), 0, b);
    }
}

static void dump(const starfold__plan_t *p, const char *label)
{
    if (!getenv("SF_TEST_PLAN_DUMP")) return;
    printf("\n  plan %s: %zu resources (%zu vectors), %zu pieces\n", label, p->nres, p->nvectors, p->nunits);
    for (size_t r = 0; r < p->nres; r++) {
        const starfold__resource_t *x = &p->res[r];
        printf("    res %zu (%s, %zu x %zu B, views %d):", r, x->temp_buf == SF_NONE ? "vector" : "temp", x->count,
               x->elemsize, x->views);
        for (size_t k = 0; k <= x->npieces; k++) printf(" %zu", x->cuts[k]);
        printf("  first writers:");
        for (size_t k = 0; k < x->npieces; k++) {
            const size_t f = p->units[x->unit0 + k].first_writer;
            if (f == SF_NONE) printf(" -");
            else printf(" %zu", f);
        }
        printf("\n");
    }
    for (size_t i = 0; i < p->g->nnodes; i++) {
        printf("    node %zu (%s on %d)%s deps:", i, starfold_task_kind_name(p->g->nodes[i].kind),
               p->g->nodes[i].device, p->skip[i] ? " skipped" : "");
        for (size_t e = 0; e < p->ndeps[i]; e++) printf(" %zu", p->deps[i][e]);
        printf("\n");
    }
}

/* Whether node @i names @d among its effective dependencies. */
static int has_dep(const starfold__plan_t *p, size_t i, size_t d)
{
    for (size_t e = 0; e < p->ndeps[i]; e++)
        if (p->deps[i][e] == d) return 1;
    return 0;
}

/*
 * What holds for every plan: each resource's cuts run strictly from 0 to its count (a vector of no
 * element is one empty piece), its pieces are numbered after the previous resource's; every dependency points back at an earlier task, once; a
 * node is skipped exactly when it moves nothing; the first writer of a piece is the earliest task
 * writing it, and every other task touching a temporary piece depends on it directly.
 */
static void check_invariants(const starfold__plan_t *p)
{
    const struct starfold_graph *g = p->g;
    size_t unit = 0;
    for (size_t r = 0; r < p->nres; r++) {
        const starfold__resource_t *x = &p->res[r];
        CU_ASSERT_EQUAL(x->unit0, unit);
        CU_ASSERT_EQUAL(x->cuts[0], 0);
        CU_ASSERT_EQUAL(x->cuts[x->npieces], x->count);
        CU_ASSERT(x->count > 0 || x->npieces == 1);
        for (size_t k = 0; k < x->npieces; k++) {
            CU_ASSERT(x->cuts[k] < x->cuts[k + 1] || x->count == 0);
            const starfold__unit_t *u = &p->units[x->unit0 + k];
            CU_ASSERT(u->res == r && u->lo == x->cuts[k] && u->hi == x->cuts[k + 1]);
        }
        unit += x->npieces;
    }
    CU_ASSERT_EQUAL(unit, p->nunits);
    for (size_t i = 0; i < g->nnodes; i++) {
        const starfold__node_t *n = &g->nodes[i];
        size_t total = 0;
        for (size_t k = 0; k < n->nsrc; k++) total += n->src[k].count;
        for (size_t k = 0; k < n->ndst; k++) total += n->dst[k].count;
        CU_ASSERT_EQUAL(p->skip[i], total == 0);
        for (size_t e = 0; e < p->ndeps[i]; e++) {
            const size_t d = p->deps[i][e];
            CU_ASSERT(d < i);
            CU_ASSERT(!p->skip[d]);
            for (size_t f = e + 1; f < p->ndeps[i]; f++) CU_ASSERT(p->deps[i][f] != d);
        }
        if (p->skip[i]) continue;
        for (size_t k = 0; k < n->nsrc + n->ndst; k++) {
            const int write = k >= n->nsrc;
            const starfold__span_t *s = write ? &n->dst[k - n->nsrc] : &n->src[k];
            if (s->count == 0) continue;
            size_t u;
            for (starfold__piece_iter_t it = starfold__pieces_of(p, s); starfold__piece_next(&it, &u);) {
                const size_t f = p->units[u].first_writer;
                if (write) CU_ASSERT(f != SF_NONE && f <= i);
                if (p->res[p->units[u].res].temp_buf != SF_NONE && f != i) CU_ASSERT(has_dep(p, i, f));
            }
        }
    }
}

/* Pieces of resource @r as "lo-hi lo-hi ...", for one assertion with a readable failure. */
static const char *pieces(const starfold__plan_t *p, size_t r)
{
    static char text[512];
    size_t at = 0;
    text[0] = '\0';
    for (size_t k = 0; k < p->res[r].npieces && at < sizeof text - 32; k++)
        at += (size_t)snprintf(text + at, sizeof text - at, "%s%zu-%zu", k ? " " : "", p->res[r].cuts[k],
                               p->res[r].cuts[k + 1]);
    return text;
}

/* ------------------------------------------------------------------------------------------------
 * Hand-built reduce on two memory nodes
 */

typedef struct hand {
    starfold_topology_t topo;
    starfold_graph_t g;
    size_t in0, in1, out0, out1, acc;
} hand_t;

/* The graph of the file's head on @topology's devices 0 and 1 (n_a = 5 elements first, then the rest). */
static void hand_build(hand_t *h, const char *topology)
{
    static const int devs[2] = { 0, 1 };
    const starfold_tensor_desc_t t = { STARFOLD_FLOAT32, 10 };
    const starfold_collective_desc_t desc = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 2, devs, 2, devs, 1, &t, 0 };
    CHECK_OK(starfold_topology_builtin(topology, &h->topo));
    CHECK_OK(starfold__graph_create(h->topo, "hand", &desc, &h->g));
    starfold_graph_t g = h->g;
    h->in0 = starfold__graph_input(g, 0, 0);
    h->in1 = starfold__graph_input(g, 1, 0);
    h->out0 = starfold__graph_output(g, 0, 0);
    h->out1 = starfold__graph_output(g, 1, 0);
    CHECK_OK(starfold__graph_add_temp(g, 0, STARFOLD_FLOAT32, 10, 0, &h->acc));
    for (size_t half = 0; half < 2; half++) {
        const starfold__span_t src[2] = { starfold__span(h->in0, 5 * half, 5), starfold__span(h->in1, 5 * half, 5) };
        CHECK_OK(starfold__graph_reduce(g, STARFOLD_OP_SUM, src, 2, starfold__span(h->acc, 5 * half, 5), 0, NULL));
    }
    const starfold__span_t acc = starfold__whole(g, h->acc);
    const starfold__span_t out0 = starfold__whole(g, h->out0), out1 = starfold__whole(g, h->out1);
    CHECK_OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &acc, 1, &out0, 1, 0, NULL));
    CHECK_OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &acc, 1, &out1, 1, 0, NULL));
    starfold__graph_seal(g);
}

static void hand_free(hand_t *h)
{
    starfold_graph_destroy(h->g);
    starfold_topology_destroy(h->topo);
}

/* Devices 0 and 1 of the emulated box on memory nodes 1 and 2 (node 0: main memory). */
static void test_hand_two_nodes(void)
{
    hand_t h;
    hand_build(&h, "emulated");
    fixture_t fx;
    fixture_init(&fx, 8, 1);
    vector_per_buffer(&fx, h.g); /* vectors: in0 0, in1 1, out0 2, out1 3; then the temporary, resource 4 */
    starfold__plan_t p;
    CHECK_OK(starfold__plan_build(&p, h.g, &fx.facts));
    dump(&p, "hand, two nodes");
    check_invariants(&p);

    CU_ASSERT_EQUAL(p.nres, 5);
    CU_ASSERT_EQUAL(p.nvectors, 4);
    CU_ASSERT_EQUAL(p.buf_res[h.acc], 4);
    CU_ASSERT_EQUAL(p.res[4].temp_buf, h.acc);
    CU_ASSERT_EQUAL(p.res[4].node, 1);
    CU_ASSERT_STRING_EQUAL(pieces(&p, 0), "0-10");  /* in0: read on its own node only */
    CU_ASSERT_STRING_EQUAL(pieces(&p, 1), "0-5 5-10"); /* in1: read from node 1 in two ranges */
    CU_ASSERT_STRING_EQUAL(pieces(&p, 2), "0-10");  /* out0, out1: written whole */
    CU_ASSERT_STRING_EQUAL(pieces(&p, 3), "0-10");
    CU_ASSERT_STRING_EQUAL(pieces(&p, 4), "0-5 5-10"); /* acc: written in two ranges; read whole remotely */
    CU_ASSERT_EQUAL(p.nunits, 7);

    /* First writers, and which pieces hold an input that is read. */
    CU_ASSERT_EQUAL(p.units[p.res[4].unit0].first_writer, 0);
    CU_ASSERT_EQUAL(p.units[p.res[4].unit0 + 1].first_writer, 1);
    CU_ASSERT_EQUAL(p.units[p.res[2].unit0].first_writer, 2);
    CU_ASSERT_EQUAL(p.units[p.res[3].unit0].first_writer, 3);
    CU_ASSERT_EQUAL(p.units[p.res[1].unit0].first_writer, SF_NONE);
    CU_ASSERT(p.units[p.res[0].unit0].input_read && p.units[p.res[1].unit0 + 1].input_read);
    CU_ASSERT(!p.units[p.res[2].unit0].input_read && !p.units[p.res[4].unit0].input_read);

    /* Dependencies: both copies after both reductions; nothing before the reductions. */
    CU_ASSERT_EQUAL(p.ndeps[0], 0);
    CU_ASSERT_EQUAL(p.ndeps[1], 0);
    CU_ASSERT(p.ndeps[2] == 2 && has_dep(&p, 2, 0) && has_dep(&p, 2, 1));
    CU_ASSERT(p.ndeps[3] == 2 && has_dep(&p, 3, 0) && has_dep(&p, 3, 1));

    /* A piece of a caller's vector: element 7 of in1 is in its second piece. */
    CU_ASSERT_EQUAL(starfold__piece_of(&p.res[1], 7), 1);
    CU_ASSERT_EQUAL(starfold__piece_of(&p.res[1], 4), 0);
    starfold__plan_free(&p);
    hand_free(&h);
}

/* A caller's vector StarPU cannot partition stays one piece; the temporary is still cut. */
static void test_hand_not_partitionable(void)
{
    hand_t h;
    hand_build(&h, "emulated");
    fixture_t fx;
    fixture_init(&fx, 8, 1);
    vector_per_buffer(&fx, h.g);
    fx.vectors[1].partitionable = 0;
    starfold__plan_t p;
    CHECK_OK(starfold__plan_build(&p, h.g, &fx.facts));
    check_invariants(&p);
    CU_ASSERT_STRING_EQUAL(pieces(&p, 1), "0-10");
    CU_ASSERT_STRING_EQUAL(pieces(&p, 4), "0-5 5-10");
    CU_ASSERT_EQUAL(p.nunits, 6);
    starfold__plan_free(&p);
    hand_free(&h);
}

/* On one memory node nothing is read remotely: only the temporary's writes cut. */
static void test_hand_one_node(void)
{
    hand_t h;
    hand_build(&h, "host");
    fixture_t fx;
    fixture_host(&fx, 8);
    vector_per_buffer(&fx, h.g);
    starfold__plan_t p;
    CHECK_OK(starfold__plan_build(&p, h.g, &fx.facts));
    check_invariants(&p);
    for (size_t r = 0; r < 4; r++) CU_ASSERT_EQUAL(p.res[r].npieces, 1);
    CU_ASSERT_STRING_EQUAL(pieces(&p, 4), "0-5 5-10");
    CU_ASSERT(starfold__resource_in_main_memory(&p.res[4]));
    starfold__plan_free(&p);
    hand_free(&h);
}

/*
 * Memory pre-flight of the two-node graph, in bytes: node 1 (device 0) holds acc (40) and a copy of
 * both pieces of in1 (40) = 80; node 2 (device 1) a copy of both pieces of acc = 40.
 */
static starfold_status_t preflight(int first_node, int64_t bytes_a, int64_t bytes_b, int partition_in1)
{
    hand_t h;
    hand_build(&h, "emulated");
    fixture_t fx;
    fixture_init(&fx, 2, first_node);
    vector_per_buffer(&fx, h.g);
    fx.vectors[1].partitionable = partition_in1;
    fx.node_bytes[first_node] = bytes_a;
    fx.node_bytes[first_node + 1] = bytes_b;
    starfold__plan_t p;
    starfold_status_t st = starfold__plan_build(&p, h.g, &fx.facts);
    CU_ASSERT_EQUAL(st, STARFOLD_OK);
    if (st == STARFOLD_OK) st = starfold__plan_check_memory(&p);
    starfold__plan_free(&p);
    hand_free(&h);
    return st;
}

static void test_memory_preflight(void)
{
    CU_ASSERT_EQUAL(preflight(1, 0, 0, 1), STARFOLD_OK); /* sizes unknown: nothing checked */
    CU_ASSERT_EQUAL(preflight(1, 80, 40, 1), STARFOLD_OK);
    CU_ASSERT_EQUAL(preflight(1, 79, 40, 1), STARFOLD_ERR_OUT_OF_MEMORY);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "device 0 (memory node 1) would need"));
    CU_ASSERT_EQUAL(preflight(1, 80, 39, 1), STARFOLD_ERR_OUT_OF_MEMORY);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "device 1 (memory node 2) would need"));
    /* in1 whole: read twice from node 1, copied there once - still 80. */
    CU_ASSERT_EQUAL(preflight(1, 80, 40, 0), STARFOLD_OK);
    CU_ASSERT_EQUAL(preflight(1, 79, 40, 0), STARFOLD_ERR_OUT_OF_MEMORY);
}

/* Memory nodes past 63 (a machine of many memory nodes) are counted like the others. */
static void test_memory_preflight_high_nodes(void)
{
    CU_ASSERT_EQUAL(preflight(70, 80, 40, 1), STARFOLD_OK);
    CU_ASSERT_EQUAL(preflight(70, 79, 40, 1), STARFOLD_ERR_OUT_OF_MEMORY); /* the copies of in1 count */
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "device 0 (memory node 70) would need"));
    CU_ASSERT_EQUAL(preflight(70, 80, 39, 1), STARFOLD_ERR_OUT_OF_MEMORY);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "device 1 (memory node 71) would need"));
}

/* ------------------------------------------------------------------------------------------------
 * Views
 */

/*
 * one-pass on the host topology, 2 replicas, tensors of 4 and 6 float32 as views of one vector per
 * replica: the inputs packed ([0,4) [4,10) of 10), the outputs with guards around them ([1,5) [6,12)
 * of 13). One segmented REDUCE reads and writes them all; adjacent writes do not cut, gaps do.
 */
static void test_views(void)
{
    static const int devs[2] = { 0, 1 };
    const starfold_tensor_desc_t t[2] = { { STARFOLD_FLOAT32, 4 }, { STARFOLD_FLOAT32, 6 } };
    const starfold_collective_desc_t desc = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 2, devs, 0, NULL, 2, t, 0 };
    starfold_topology_t topo;
    starfold_graph_t g;
    CHECK_OK(starfold_topology_builtin("host", &topo));
    CHECK_OK(starfold_graph_compile(topo, "one-pass", &desc, NULL, &g));
    CU_ASSERT_EQUAL_FATAL(g->nnodes, 1);
    CU_ASSERT_EQUAL(g->nodes[0].nseg, 2);

    fixture_t fx;
    fixture_host(&fx, 8);
    for (int s = 0; s < 2; s++) {
        const size_t v = add_vector(&fx, 10, 4);
        add_view(&fx, g, v, 0, starfold__graph_input(g, s, 0));
        add_view(&fx, g, v, 4, starfold__graph_input(g, s, 1));
    }
    for (int d = 0; d < 2; d++) {
        const size_t v = add_vector(&fx, 13, 4);
        add_view(&fx, g, v, 1, starfold__graph_output(g, d, 0));
        add_view(&fx, g, v, 6, starfold__graph_output(g, d, 1));
    }
    starfold__plan_t p;
    CHECK_OK(starfold__plan_build(&p, g, &fx.facts));
    dump(&p, "views");
    check_invariants(&p);
    CU_ASSERT_EQUAL(p.nres, 4);
    CU_ASSERT_STRING_EQUAL(pieces(&p, 0), "0-10"); /* read locally: one piece */
    CU_ASSERT_STRING_EQUAL(pieces(&p, 1), "0-10");
    CU_ASSERT_STRING_EQUAL(pieces(&p, 2), "0-1 1-5 5-6 6-12 12-13"); /* written: cut at each gap */
    CU_ASSERT_STRING_EQUAL(pieces(&p, 3), "0-1 1-5 5-6 6-12 12-13");
    for (size_t r = 0; r < 4; r++) CU_ASSERT(p.res[r].views);
    CU_ASSERT_EQUAL(p.buf_base[starfold__graph_output(g, 1, 1)], 6);
    CU_ASSERT_EQUAL(p.units[p.res[2].unit0 + 1].first_writer, 0);
    CU_ASSERT_EQUAL(p.units[p.res[2].unit0].first_writer, SF_NONE); /* the guards: never written */
    CU_ASSERT_EQUAL(p.units[p.res[2].unit0 + 2].first_writer, SF_NONE);
    starfold__plan_free(&p);

    /* The outputs packed too: the adjacent writes of one task merge, no cut at all. */
    fixture_host(&fx, 8);
    for (int s = 0; s < 4; s++) {
        const size_t v = add_vector(&fx, 10, 4);
        add_view(&fx, g, v, 0, s < 2 ? starfold__graph_input(g, s, 0) : starfold__graph_output(g, s - 2, 0));
        add_view(&fx, g, v, 4, s < 2 ? starfold__graph_input(g, s, 1) : starfold__graph_output(g, s - 2, 1));
    }
    CHECK_OK(starfold__plan_build(&p, g, &fx.facts));
    check_invariants(&p);
    CU_ASSERT_EQUAL(p.nunits, 4);
    starfold__plan_free(&p);
    starfold_graph_destroy(g);
    starfold_topology_destroy(topo);
}

/* ------------------------------------------------------------------------------------------------
 * A compiled ring
 */

/*
 * ring on 3 devices, one tensor of 12 float32, each replica's input and output its own vector. One
 * cycle (0-1-2) used both ways is two logical rings, each moving its half of 6 elements in 3 chunks
 * of 2: 6 chunks of 4 tasks each (reduce, reduce into the owner's output, copy, copy), one partial-sum
 * temporary per chunk:
 *
 *     ring 0-1-2 on [0,6):   chunk j = [2j, 2j+2) starts at device j (its input read by device j+1)
 *     ring 0-2-1 on [6,12):  [6,8) starts at device 0, [8,10) at device 2, [10,12) at device 1
 *
 * On the host (one memory node) only the writes cut: every output in the 6 chunks. On the emulated
 * box (a memory node per device) each input is also cut at the two chunks read from another node.
 */
static void test_ring(void)
{
    static const int devs[3] = { 0, 1, 2 };
    const starfold_tensor_desc_t t = { STARFOLD_FLOAT32, 12 };
    const starfold_collective_desc_t desc = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 3, devs, 0, NULL, 1, &t, 0 };
    starfold_algo_options_t opts;
    starfold_algo_options_init(&opts);
    opts.num_rings = 1;
    starfold_topology_t topo;
    starfold_graph_t g;
    CHECK_OK(starfold_topology_builtin("host", &topo));
    CHECK_OK(starfold_graph_compile(topo, "ring", &desc, &opts, &g));
    fixture_t fx;
    fixture_host(&fx, 8);
    vector_per_buffer(&fx, g);
    starfold__plan_t p;
    CHECK_OK(starfold__plan_build(&p, g, &fx.facts));
    dump(&p, "ring");
    check_invariants(&p);
    CU_ASSERT_EQUAL_FATAL(g->nnodes, 24);
    CU_ASSERT_EQUAL(p.nvectors, 6);
    CU_ASSERT_EQUAL(p.nres, 12);
    for (size_t r = 0; r < 3; r++) CU_ASSERT_STRING_EQUAL(pieces(&p, r), "0-12"); /* inputs: only read */
    for (size_t r = 3; r < 6; r++) CU_ASSERT_STRING_EQUAL(pieces(&p, r), "0-2 2-4 4-6 6-8 8-10 10-12");
    for (size_t r = 6; r < 12; r++) CU_ASSERT_STRING_EQUAL(pieces(&p, r), "0-2"); /* the partial sums */
    CU_ASSERT_EQUAL(p.nunits, 3 + 18 + 6);
    for (size_t i = 0; i < 24; i++) { /* each chunk a chain of 4 tasks, chunks independent */
        CU_ASSERT(!p.skip[i]);
        if (i % 4 == 0) CU_ASSERT_EQUAL(p.ndeps[i], 0);
        if (i % 4 != 0) CU_ASSERT(p.ndeps[i] == 1 && has_dep(&p, i, i - 1));
    }
    starfold__plan_free(&p);

    /* The same on the emulated box, each device its own memory node: reads across nodes cut too. */
    starfold_graph_destroy(g);
    starfold_topology_destroy(topo);
    CHECK_OK(starfold_topology_builtin("emulated", &topo));
    CHECK_OK(starfold_graph_compile(topo, "ring", &desc, &opts, &g));
    fixture_init(&fx, 8, 1);
    vector_per_buffer(&fx, g);
    CHECK_OK(starfold__plan_build(&p, g, &fx.facts));
    dump(&p, "ring, emulated");
    check_invariants(&p);
    CU_ASSERT_STRING_EQUAL(pieces(&p, 0), "0-2 2-6 6-8 8-12"); /* read remotely: [0,2) and [6,8) */
    CU_ASSERT_STRING_EQUAL(pieces(&p, 1), "0-2 2-4 4-10 10-12"); /* [2,4) and [10,12) */
    CU_ASSERT_STRING_EQUAL(pieces(&p, 2), "0-4 4-6 6-8 8-10 10-12"); /* [4,6) and [8,10) */
    for (size_t r = 3; r < 6; r++) CU_ASSERT_STRING_EQUAL(pieces(&p, r), "0-2 2-4 4-6 6-8 8-10 10-12");
    CU_ASSERT_EQUAL(p.nunits, 4 + 4 + 5 + 18 + 6);
    starfold__plan_free(&p);
    starfold_graph_destroy(g);
    starfold_topology_destroy(topo);
}

/* ------------------------------------------------------------------------------------------------
 * Skipped nodes and bad graphs
 */

/*
 * A chain through an empty node: n0 copies in0 -> out0, n1 copies nothing, n2 copies in1 -> out1,
 * ordered n0 -> n1 -> n2 by hand. n1 is no task, and n2 depends on n0 through it.
 */
static void test_empty_node_passes_deps(void)
{
    static const int devs[2] = { 0, 1 };
    const starfold_tensor_desc_t t[2] = { { STARFOLD_FLOAT32, 8 }, { STARFOLD_FLOAT32, 0 } };
    const starfold_collective_desc_t desc = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 2, devs, 2, devs, 2, t, 0 };
    starfold_topology_t topo;
    starfold_graph_t g;
    CHECK_OK(starfold_topology_builtin("host", &topo));
    CHECK_OK(starfold__graph_create(topo, "chain", &desc, &g));
    const starfold__span_t a = starfold__whole(g, starfold__graph_input(g, 0, 0));
    const starfold__span_t b = starfold__whole(g, starfold__graph_output(g, 0, 0));
    const starfold__span_t c = starfold__whole(g, starfold__graph_input(g, 0, 1)); /* 0 elements */
    const starfold__span_t d = starfold__whole(g, starfold__graph_output(g, 0, 1));
    const starfold__span_t e = starfold__whole(g, starfold__graph_input(g, 1, 0));
    const starfold__span_t f = starfold__whole(g, starfold__graph_output(g, 1, 0));
    CHECK_OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &a, 1, &b, 1, 0, NULL));
    CHECK_OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &c, 1, &d, 1, 1, NULL));
    CHECK_OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &e, 1, &f, 1, 0, NULL));
    CHECK_OK(starfold__graph_add_dep(g, 0, 1));
    CHECK_OK(starfold__graph_add_dep(g, 1, 2));
    starfold__graph_seal(g);
    fixture_t fx;
    fixture_host(&fx, 8);
    vector_per_buffer(&fx, g);
    starfold__plan_t p;
    CHECK_OK(starfold__plan_build(&p, g, &fx.facts));
    dump(&p, "chain");
    check_invariants(&p);
    CU_ASSERT(!p.skip[0] && p.skip[1] && !p.skip[2]);
    CU_ASSERT(p.ndeps[2] == 1 && has_dep(&p, 2, 0));
    starfold__plan_free(&p);
    starfold_graph_destroy(g);
    starfold_topology_destroy(topo);
}

/* A task reading a temporary no task wrote before it: refused, with the task and the buffer named. */
static void test_temp_read_before_write(void)
{
    static const int devs[1] = { 0 };
    const starfold_tensor_desc_t t = { STARFOLD_FLOAT32, 4 };
    const starfold_collective_desc_t desc = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 1, devs, 1, devs, 1, &t, 0 };
    starfold_topology_t topo;
    starfold_graph_t g;
    size_t tmp;
    CHECK_OK(starfold_topology_builtin("host", &topo));
    CHECK_OK(starfold__graph_create(topo, "unwritten", &desc, &g));
    CHECK_OK(starfold__graph_add_temp(g, 0, STARFOLD_FLOAT32, 4, 0, &tmp));
    const starfold__span_t s = starfold__whole(g, tmp), o = starfold__whole(g, starfold__graph_output(g, 0, 0));
    CHECK_OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &s, 1, &o, 1, 0, NULL));
    starfold__graph_seal(g);
    fixture_t fx;
    fixture_host(&fx, 8);
    vector_per_buffer(&fx, g);
    starfold__plan_t p;
    CU_ASSERT_EQUAL(starfold__plan_build(&p, g, &fx.facts), STARFOLD_ERR_GRAPH_INVALID);
    char want[96];
    snprintf(want, sizeof want, "task 0 reads temporary buffer %zu before any task writes it", tmp);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), want));
    starfold__plan_free(&p);
    starfold_graph_destroy(g);
    starfold_topology_destroy(topo);
}

int main(void)
{
    if (starfold__tu_begin() != 0) return 1;
    CU_pSuite s = CU_add_suite("plan (no StarPU)", NULL, NULL);
    CU_add_test(s, "hand-built reduce on two memory nodes", test_hand_two_nodes);
    CU_add_test(s, "a vector StarPU cannot partition stays whole", test_hand_not_partitionable);
    CU_add_test(s, "one memory node: only writes cut", test_hand_one_node);
    CU_add_test(s, "memory pre-flight", test_memory_preflight);
    CU_add_test(s, "memory pre-flight on memory nodes past 63", test_memory_preflight_high_nodes);
    CU_add_test(s, "views of one vector per replica", test_views);
    CU_add_test(s, "ring", test_ring);
    CU_add_test(s, "an empty node passes its dependencies on", test_empty_node_passes_deps);
    CU_add_test(s, "a temporary read before any write", test_temp_read_before_write);
    const unsigned failed = starfold__tu_run();
    return failed ? 1 : 0;
}
