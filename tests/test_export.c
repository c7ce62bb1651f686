/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Graph export, statistics and invariant checker tests. No StarPU worker is needed.
 *
 *   export:  graphs built by hand with the internal builder, written as DOT and compared byte for
 *            byte with tests/golden/graph-*.dot; the DGX-1 V100 hierarchical copy (8 replicas, three
 *            float32 tensors, num_packs 1 and 2) compared with graphs/dgx1-v100-hierarchical-copy-p*.dot;
 *            the same graph twice gives the same bytes; SVG and PNG have their magic bytes; an unknown
 *            extension is NOT_SUPPORTED and an unwritable path IO.
 *   stats:   every field of starfold_graph_stats_t and the per-pair traffic of a hand-built graph.
 *   checker: the hand-built graphs pass; each corruption (made by editing the IR after building) is
 *            reported as GRAPH_INVALID with the right sentence.
 *
 * SF_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing (then review `git diff`).
 * Outputs go to $SF_TEST_OUT (tests/run-test.sh sets it), else the current directory.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starfold/topology.h>
#include <starfold/graph.h>
#include <starfold/model.h>
#include "graph/graph.h"
#include "topology/palette.h"
#include "runner.h"

/* ---------------------------------------------------------------------------------------------- */
/* Files                                                                                          */

static const char *out_dir(void)
{
    const char *d = getenv("SF_TEST_OUT");
    return d && *d ? d : ".";
}

static int update_golden(void)
{
    const char *u = getenv("SF_UPDATE_GOLDEN");
    return u && !strcmp(u, "1");
}

/* The whole file, or NULL; its size in *len. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        unsigned char *b = realloc(buf, cap *= 2);
        if (!b) free(buf);
        buf = b;
    }
    fclose(f);
    if (buf) buf[n] = 0; /* n < cap here: the text is also a C string */
    *len = n;
    return buf;
}

static int same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

/* Writes @g as DOT to $SF_TEST_OUT/@name and compares it with @golden (or rewrites @golden). */
static void check_golden(starfold_graph_t g, const char *golden, const char *name)
{
    char out[4096];
    snprintf(out, sizeof out, "%s/%s", out_dir(), name);
    CU_ASSERT_EQUAL_FATAL(starfold_graph_write_dot(g, out), STARFOLD_OK);
    if (update_golden()) {
        CU_ASSERT_EQUAL(starfold_graph_write_dot(g, golden), STARFOLD_OK);
        fprintf(stderr, "  rewrote %s\n", golden);
        return;
    }
    int same = same_file(out, golden);
    if (!same)
        fprintf(stderr, "\n  %s differs from %s: diff them, and rerun with SF_UPDATE_GOLDEN=1 if the change is "
                        "intended\n", out, golden);
    CU_ASSERT(same);
}

/* ---------------------------------------------------------------------------------------------- */
/* Hand-built graphs                                                                              */

/*
 * Three devices: gpu0 ==nvlink== gpu1 --pcie-- gpu2, and no direct link between gpu0 and gpu2, so
 * edges of all three styles appear.
 */
static starfold_topology_t tri_topology(void)
{
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_create("tri", 3, &t), STARFOLD_OK);
    const char *names[] = { "gpu0", "gpu1", "gpu2" };
    for (int d = 0; d < 3; d++)
        CU_ASSERT_EQUAL_FATAL(starfold_topology_set_device(t, d, names[d], STARFOLD_DEVICE_GPU, 0), STARFOLD_OK);
    const starfold_link_t nv = { 0, 1, STARFOLD_LINK_NVLINK, 2, 50.0, 0.3 };
    const starfold_link_t pci = { 1, 2, STARFOLD_LINK_PCIE, 1, 12.0, 1.0 };
    CU_ASSERT_EQUAL_FATAL(starfold_topology_add_link(t, &nv), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_add_link(t, &pci), STARFOLD_OK);
    return t;
}

static starfold_graph_t new_graph(starfold_topology_t tp, const char *algo, starfold_op_t op, int n,
                                  size_t nt, const starfold_tensor_desc_t *tensors)
{
    static const int devs[] = { 0, 1, 2 };
    const starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, op, n, devs, n, devs, nt, tensors };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold__graph_create(tp, algo, &d, &g), STARFOLD_OK);
    return g;
}

#define OK(expr) CU_ASSERT_EQUAL_FATAL((expr), STARFOLD_OK)

/*
 * "hand-reduce": mean all-reduce of one float32 tensor of 1000 elements over gpu0..gpu2, reduced on
 * gpu1 in place, scaled into gpu1's output, then copied along gpu1 -> gpu0 -> gpu2:
 *
 *   t0 copy    acc  = in1                  gpu1
 *   t1 reduce  acc += in0   (nvlink)       gpu1
 *   t2 reduce  acc += in2   (pcie)         gpu1
 *   t3 scale   out1 = acc / 3              gpu1
 *   t4 copy    out0 = out1  (nvlink)       gpu0
 *   t5 copy    out2 = out0  (no link)      gpu2
 */
static starfold_graph_t build_reduce(starfold_topology_t tp)
{
    static const starfold_tensor_desc_t t[] = { { STARFOLD_FLOAT32, 1000 } };
    starfold_graph_t g = new_graph(tp, "hand-reduce", STARFOLD_OP_MEAN, 3, 1, t);
    size_t acc;
    OK(starfold__graph_add_temp(g, 1, STARFOLD_FLOAT32, 1000, 0, &acc));
    const starfold__span_t A = starfold__whole(g, acc);
    const starfold__span_t in[3] = { starfold__whole(g, starfold__graph_input(g, 0, 0)), starfold__whole(g, starfold__graph_input(g, 1, 0)),
                              starfold__whole(g, starfold__graph_input(g, 2, 0)) };
    const starfold__span_t out[3] = { starfold__whole(g, starfold__graph_output(g, 0, 0)), starfold__whole(g, starfold__graph_output(g, 1, 0)),
                               starfold__whole(g, starfold__graph_output(g, 2, 0)) };
    OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &in[1], 1, &A, 1, 0, NULL));
    const starfold__span_t r1[2] = { A, in[0] }, r2[2] = { A, in[2] };
    OK(starfold__graph_reduce(g, STARFOLD_OP_MEAN, r1, 2, A, 0, NULL));
    OK(starfold__graph_reduce(g, STARFOLD_OP_MEAN, r2, 2, A, 0, NULL));
    OK(starfold__graph_scale(g, A, out[1], 3, -1, NULL));
    OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &out[1], 1, &out[0], 1, -1, NULL));
    OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &out[0], 1, &out[2], 1, -1, NULL));
    starfold__graph_seal(g);
    return g;
}

/*
 * "hand-packed": sum all-reduce over gpu0 and gpu1, every tensor concatenated into one pack per
 * device (4 KiB for the two float32 tensors of 256 and 768 elements):
 *
 *   t0 pack    p0 = in0.0 | in0.1 | ...    gpu0
 *   t1 pack    p1 = in1.0 | in1.1 | ...    gpu1
 *   t2 reduce  p0 += p1     (nvlink)       gpu0
 *   t3 copy    q1 = p0      (nvlink)       gpu1
 *   t4 unpack  out0.0 | out0.1 | ... = p0  gpu0
 *   t5 unpack  out1.0 | out1.1 | ... = q1  gpu1
 */
static starfold_graph_t build_packed_of(starfold_topology_t tp, const char *algo, size_t nt,
                                        const starfold_tensor_desc_t *tensors)
{
    starfold_graph_t g = new_graph(tp, algo, STARFOLD_OP_SUM, 2, nt, tensors);
    size_t total = 0, p[2], q1;
    for (size_t i = 0; i < nt; i++) total += tensors[i].count;
    OK(starfold__graph_add_temp(g, 0, tensors[0].dtype, total, 0, &p[0]));
    OK(starfold__graph_add_temp(g, 1, tensors[0].dtype, total, 0, &p[1]));
    OK(starfold__graph_add_temp(g, 1, tensors[0].dtype, total, 0, &q1));
    starfold__span_t *spans = malloc(nt * sizeof *spans);
    CU_ASSERT_PTR_NOT_NULL_FATAL(spans);
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; i < nt; i++) spans[i] = starfold__whole(g, starfold__graph_input(g, s, i));
        const starfold__span_t P = starfold__whole(g, p[s]);
        OK(starfold__graph_copy(g, STARFOLD_TASK_PACK, spans, nt, &P, 1, 0, NULL));
    }
    const starfold__span_t r[2] = { starfold__whole(g, p[0]), starfold__whole(g, p[1]) }, Q = starfold__whole(g, q1);
    OK(starfold__graph_reduce(g, STARFOLD_OP_SUM, r, 2, r[0], 0, NULL));
    OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &r[0], 1, &Q, 1, 0, NULL));
    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < nt; i++) spans[i] = starfold__whole(g, starfold__graph_output(g, d, i));
        OK(starfold__graph_copy(g, STARFOLD_TASK_UNPACK, d ? &Q : &r[0], 1, spans, nt, 0, NULL));
    }
    free(spans);
    starfold__graph_seal(g);
    return g;
}

static starfold_graph_t build_packed(starfold_topology_t tp)
{
    static const starfold_tensor_desc_t t[] = { { STARFOLD_FLOAT32, 256 }, { STARFOLD_FLOAT32, 768 } };
    return build_packed_of(tp, "hand-packed", 2, t);
}

/* "hand-many": the same with 65 int32 tensors, more than the exporter draws one by one. */
#define MANY 65
static starfold_graph_t build_many(starfold_topology_t tp)
{
    starfold_tensor_desc_t t[MANY];
    for (int i = 0; i < MANY; i++) t[i] = (starfold_tensor_desc_t){ STARFOLD_INT32, 4 + (size_t)i };
    return build_packed_of(tp, "hand-many", MANY, t);
}

/*
 * "elementwise": max all-reduce of 3 int32 tensors over gpu0 and gpu1 where each reduce reads the
 * input that may share its output's handle, element by element (allowed), per tensor t:
 *   t(2t)    reduce  out0.t = max(in0.t, in1.t)   gpu0
 *   t(2t+1)  copy    out1.t = out0.t              gpu1
 */
static starfold_graph_t build_elementwise(starfold_topology_t tp)
{
    static const starfold_tensor_desc_t t[] = { { STARFOLD_INT32, 4 }, { STARFOLD_INT32, 5 }, { STARFOLD_INT32, 6 } };
    starfold_graph_t g = new_graph(tp, "elementwise", STARFOLD_OP_MAX, 2, 3, t);
    for (size_t i = 0; i < 3; i++) {
        const starfold__span_t in[2] = { starfold__whole(g, starfold__graph_input(g, 0, i)), starfold__whole(g, starfold__graph_input(g, 1, i)) };
        const starfold__span_t o0 = starfold__whole(g, starfold__graph_output(g, 0, i)), o1 = starfold__whole(g, starfold__graph_output(g, 1, i));
        OK(starfold__graph_reduce(g, STARFOLD_OP_MAX, in, 2, o0, (int)i, NULL));
        OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &o0, 1, &o1, 1, (int)i, NULL));
    }
    starfold__graph_seal(g);
    return g;
}

/* ---------------------------------------------------------------------------------------------- */
/* Export                                                                                         */

static void golden_hand(const char *name, starfold_graph_t (*build)(starfold_topology_t))
{
    starfold_topology_t tp = tri_topology();
    starfold_graph_t g = build(tp);
    CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
    char golden[4096];
    snprintf(golden, sizeof golden, "%s/tests/golden/%s", SF_SRCDIR, name);
    check_golden(g, golden, name);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

static void test_golden_reduce(void) { golden_hand("graph-hand-reduce.dot", build_reduce); }
static void test_golden_packed(void) { golden_hand("graph-hand-packed.dot", build_packed); }
static void test_golden_many(void) { golden_hand("graph-hand-many.dot", build_many); }

/* What the DOT says, independent of the golden file. */
static void test_dot_content(void)
{
    starfold_topology_t tp = tri_topology();
    starfold_graph_t g = build_reduce(tp);
    char path[4096];
    snprintf(path, sizeof path, "%s/graph-content.dot", out_dir());
    OK(starfold_graph_write_dot(g, path));
    size_t n = 0;
    char *dot = (char *)slurp(path, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dot);
    dot = realloc(dot, n + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dot);
    dot[n] = '\0';
    const char *want[] = {
        "subgraph cluster_dev0", "subgraph cluster_dev1", "subgraph cluster_dev2", "label=\"gpu1 (device 1)\"",
        "rankdir=TB", "hand-reduce: all-reduce (mean) of 3 replicas, 1 tensor",
        "t1\t[fillcolor=\"#ffbb78\"", "label=\"reduce (sum)\\ntensor 0\\n3.9 KiB\"", "label=\"scale /3\\n3.9 KiB\"",
        "in_0_0", "out_2_0", "shape=note", "shape=ellipse",
        "in_0_0 -> t1\t[color=\"#2ca02c\"", "3.9 KiB\\nnvlink", "3.9 KiB\\npcie",
        "t4 -> t5\t[color=\"#d62728\"", /* gpu0 -> gpu2: no direct link */
        "t0 -> t2\t[color=gray50", "t1 -> t2\t[label=\"3.9 KiB\"]", /* in-place chain: only t1 supplies t2 */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const int found = strstr(dot, want[i]) != NULL;
        if (!found) fprintf(stderr, "\n  %s lacks '%s'", path, want[i]);
        CU_ASSERT(found);
    }
    /* Clusters in device order and tasks in node order. */
    CU_ASSERT(strstr(dot, "cluster_dev0") < strstr(dot, "cluster_dev1"));
    CU_ASSERT(strstr(dot, "cluster_dev1") < strstr(dot, "cluster_dev2"));
    CU_ASSERT(strstr(dot, "\tt0\t") < strstr(dot, "\tt1\t"));
    free(dot);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

/*
 * Same graph, same bytes, even rebuilt after the heap has been churned (cgraph's default IDs follow
 * heap addresses; the exporter must not let them order anything).
 */
static void test_deterministic(void)
{
    starfold_topology_t tp = tri_topology();
    char a[4096], b[4096], c[4096];
    snprintf(a, sizeof a, "%s/graph-det-a.dot", out_dir());
    snprintf(b, sizeof b, "%s/graph-det-b.dot", out_dir());
    snprintf(c, sizeof c, "%s/graph-det-c.dot", out_dir());
    starfold_graph_t g = build_packed(tp);
    OK(starfold_graph_write_dot(g, a));
    OK(starfold_graph_write_dot(g, b));
    CU_ASSERT(same_file(a, b));
    starfold_graph_destroy(g);

    void *churn[64][8];
    for (int s = 0; s < 64; s++)
        for (int i = 0; i < 8; i++) churn[s][i] = malloc((size_t)s + 8);
    for (int s = 0; s < 64; s++)
        for (int i = 0; i < 8; i++) free(churn[s][i]);
    g = build_packed(tp);
    OK(starfold_graph_write_dot(g, c));
    CU_ASSERT(same_file(a, c));

    /* A render in between changes nothing (Graphviz sets global defaults when it renders). */
    char svg[4096];
    snprintf(svg, sizeof svg, "%s/graph-det.svg", out_dir());
    OK(starfold_graph_render(g, svg));
    OK(starfold_graph_write_dot(g, c));
    CU_ASSERT(same_file(a, c));
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

static int has_magic(const char *path, const void *magic, size_t n, size_t *size)
{
    size_t len = 0;
    unsigned char *data = slurp(path, &len);
    int ok = data && len > n && !memcmp(data, magic, n);
    free(data);
    *size = len;
    return ok;
}

static void test_render(void)
{
    starfold_topology_t tp = tri_topology();
    starfold_graph_t g = build_reduce(tp);
    char path[4096];
    size_t size = 0;

    snprintf(path, sizeof path, "%s/graph-hand-reduce.svg", out_dir());
    remove(path);
    OK(starfold_graph_render(g, path));
    CU_ASSERT(has_magic(path, "<?xml", 5, &size));
    CU_ASSERT(size > 1000);

    snprintf(path, sizeof path, "%s/graph-hand-reduce.png", out_dir());
    remove(path);
    OK(starfold_graph_render(g, path));
    CU_ASSERT(has_magic(path, "\x89PNG\r\n\x1a\n", 8, &size));

    /* .dot through render is the same DOT as write_dot */
    char dot[4096];
    snprintf(path, sizeof path, "%s/graph-render.dot", out_dir());
    snprintf(dot, sizeof dot, "%s/graph-write.dot", out_dir());
    OK(starfold_graph_render(g, path));
    OK(starfold_graph_write_dot(g, dot));
    CU_ASSERT(same_file(path, dot));

    snprintf(path, sizeof path, "%s/graph-hand-reduce.jpg", out_dir());
    CU_ASSERT_EQUAL(starfold_graph_render(g, path), STARFOLD_ERR_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(starfold_graph_render(g, "/nonexistent-starfold-dir/graph.dot"), STARFOLD_ERR_IO);
    CU_ASSERT_EQUAL(starfold_graph_render(g, "/nonexistent-starfold-dir/graph.svg"), STARFOLD_ERR_IO);
    CU_ASSERT_EQUAL(starfold_graph_write_dot(g, "/nonexistent-starfold-dir/graph.dot"), STARFOLD_ERR_IO);
    CU_ASSERT(strstr(starfold_last_error(), "/nonexistent-starfold-dir/graph.dot") != NULL);
    CU_ASSERT_EQUAL(starfold_graph_write_dot(NULL, path), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_graph_write_dot(g, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_graph_render(NULL, path), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}



/* ---------------------------------------------------------------------------------------------- */
/* Pictures: legend, title, palette, device order, summaries                                      */

/* A compiled all-reduce over dgx1-v100's 8 GPUs; the caller destroys graph and topology. */
static starfold_graph_t dgx1_graph(const char *algorithm, size_t ntensors, size_t count, int num_packs,
                                   starfold_topology_t *tp)
{
    static const int devs[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    starfold_tensor_desc_t *t = calloc(ntensors, sizeof *t);
    for (size_t i = 0; t && i < ntensors; i++) t[i] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, count };
    const starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, devs, 0, NULL, ntensors, t };
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    o.num_packs = num_packs;
    starfold_graph_t g = NULL;
    *tp = NULL;
    if (starfold_topology_builtin("dgx1-v100", tp) != STARFOLD_OK ||
        starfold_graph_compile(*tp, algorithm, &d, &o, &g) != STARFOLD_OK)
        g = NULL;
    free(t);
    return g;
}

/* Renders @g as SVG (mode @mode) and returns its text, or NULL. */
static char *render_svg(starfold_graph_t g, const char *name, starfold_draw_mode_t mode)
{
    char path[4096];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", out_dir(), name);
    remove(path);
    if (!g || starfold_graph_render_mode(g, path, mode) != STARFOLD_OK) return NULL;
    return (char *)slurp(path, &len);
}

/* Left edge of the cluster titled @title in an SVG (its rounded outline starts "M<x>,"), huge when absent. */
static double cluster_left(const char *svg, const char *title)
{
    char want[64];
    snprintf(want, sizeof want, "<title>%s</title>", title);
    const char *p = strstr(svg, want);
    if (!p || !(p = strstr(p, " d=\"M"))) return 1e300;
    return strtod(p + 5, NULL);
}

/* Sum of the counts of summary nodes ("copy x N", "reduce x N", ...) in an SVG. */
static size_t summary_total(const char *svg)
{
    size_t total = 0;
    for (const char *p = svg; (p = strstr(p, " x ")); p += 3) {
        const char *k = p;
        while (k > svg && k[-1] != '>') k--;
        for (int kind = 0; kind < STARFOLD_TASK_KIND_COUNT; kind++) {
            const char *name = starfold_task_kind_name((starfold_task_kind_t)kind);
            if (!strncmp(k, name, strlen(name)) && k + strlen(name) == p) total += strtoul(p + 3, NULL, 10);
        }
    }
    return total;
}

/*
 * A rendered graph has a title (algorithm, collective, sizes) and a legend (the task kinds drawn, the
 * link colours, what a dashed edge means); its device boxes are left to right in device order (dot
 * reordered them, 0,1,4,2,3,...) and say hierarchical copy's group.
 */
static void test_picture_legend_order(void)
{
    starfold_topology_t tp;
    starfold_graph_t g = dgx1_graph("hierarchical-copy", 4, 1 << 18, 2, &tp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    char *svg = render_svg(g, "picture-hc.svg", STARFOLD_DRAW_AUTO);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "hierarchical&#45;copy: all&#45;reduce (sum) of 8 replicas, 4 tensors"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "topology dgx1&#45;v100: 40 tasks"));
    CU_ASSERT_PTR_NULL(strstr(svg, "summary:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">legend<"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "task: reduces ranges with the op"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "bytes to another device over nvlink"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "order only"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "group A (hierarchical copy)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "group B (hierarchical copy)"));
    double prev = -1e300;
    for (int d = 0; d < 8; d++) {
        char title[32];
        snprintf(title, sizeof title, "cluster_dev%d", d);
        const double x = cluster_left(svg, title);
        CU_ASSERT(x < 1e300);
        CU_ASSERT(x > prev);
        prev = x;
    }
    free(svg);
    /* The .dot file stays the data: no legend, no layout aids, links named on the edges. */
    char path[4096];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/picture-hc.dot", out_dir());
    OK(starfold_graph_render(g, path));
    char *dot = (char *)slurp(path, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dot);
    CU_ASSERT_PTR_NULL(strstr(dot, "legend"));
    CU_ASSERT_PTR_NULL(strstr(dot, "order_dev"));
    CU_ASSERT_PTR_NOT_NULL(strstr(dot, "nvlink"));
    free(dot);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

/* One palette: an NVLink is the same colour in the topology's picture and on a graph's edges. */
static void test_picture_palette(void)
{
    starfold_topology_t tp;
    starfold_graph_t g = dgx1_graph("ring", 1, 1 << 16, 1, &tp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    char *gsvg = render_svg(g, "picture-ring.svg", STARFOLD_DRAW_AUTO);
    char path[4096];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/picture-topo.svg", out_dir());
    OK(starfold_topology_render(tp, path));
    char *tsvg = (char *)slurp(path, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gsvg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tsvg);
    char stroke[64];
    snprintf(stroke, sizeof stroke, "stroke=\"%s\"", starfold__link_colour(STARFOLD_LINK_NVLINK));
    CU_ASSERT_PTR_NOT_NULL(strstr(gsvg, stroke));
    CU_ASSERT_PTR_NOT_NULL(strstr(tsvg, stroke));
    snprintf(stroke, sizeof stroke, "stroke=\"%s\"", starfold__link_colour(STARFOLD_LINK_INTER_SOCKET));
    CU_ASSERT_PTR_NOT_NULL(strstr(tsvg, stroke)); /* the inter-socket paths, paler but the same colour */
    /* The topology's picture: a title and a legend giving each kind's bandwidth. */
    CU_ASSERT_PTR_NOT_NULL(strstr(tsvg, "dgx1&#45;v100: 8 devices, 28 links"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tsvg, "nvlink, 25&#45;50 GB/s"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tsvg, "inter&#45;socket, 6 GB/s"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tsvg, "socket 1"));
    free(gsvg);
    free(tsvg);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

/*
 * The summary is chosen for a wide picture too (16 unpacked tensors: 128 input buffers in a row, a
 * picture 22,404 pixels wide), its counts add up to the graph's tasks, and FULL still draws every
 * task. Past 64 groups the rounds fold: the 1 MiB ring is one node per kind and device.
 */
static void test_picture_summaries(void)
{
    starfold_topology_t tp;
    starfold_graph_t g = dgx1_graph("hierarchical-copy", 16, 1024, 0, &tp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_TRUE(starfold_graph_num_tasks(g) <= STARFOLD_DRAW_SUMMARY_TASKS);
    char *svg = render_svg(g, "picture-wide.svg", STARFOLD_DRAW_AUTO);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "summary:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "in one round"));
    CU_ASSERT_EQUAL(summary_total(svg), starfold_graph_num_tasks(g));
    free(svg);
    svg = render_svg(g, "picture-wide-full.svg", STARFOLD_DRAW_FULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NULL(strstr(svg, "summary:"));
    CU_ASSERT_EQUAL(summary_total(svg), 0);
    free(svg);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);

    g = dgx1_graph("ring", 1, 1 << 18, 1, &tp); /* 1 MiB */
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    svg = render_svg(g, "picture-ring-summary.svg", STARFOLD_DRAW_AUTO);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    char want[128];
    snprintf(want, sizeof want, "summary: %zu tasks as 16 groups (tasks of one kind on one device, rounds folded)",
             starfold_graph_num_tasks(g));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, want));
    CU_ASSERT_EQUAL(summary_total(svg), starfold_graph_num_tasks(g));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "socket 0")); /* not hierarchical copy: the sockets are the groups */
    free(svg);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

/*
 * Big graphs: a picture of more than STARFOLD_DRAW_SUMMARY_TASKS tasks is summarised (tasks of one
 * kind on one device in one round as one node with their count) and laid out in seconds; --full
 * beyond STARFOLD_DRAW_MAX_TASKS is refused with the numbers; a .dot file keeps every task.
 */
static void test_render_summary(void)
{
    static const int devs[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    starfold_tensor_desc_t t[1000];
    for (int i = 0; i < 1000; i++) t[i] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, 1024 };
    const starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, devs, 0, NULL, 1000, t };
    starfold_topology_t tp = NULL;
    OK(starfold_topology_builtin("dgx1-v100", &tp));
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    o.num_packs = 0; /* every tensor its own: 12,000 tasks */
    starfold_graph_t g = NULL;
    OK(starfold_graph_compile(tp, "hierarchical-copy", &d, &o, &g));
    CU_ASSERT_TRUE(starfold_graph_num_tasks(g) > STARFOLD_DRAW_MAX_TASKS);
    char path[4096];
    snprintf(path, sizeof path, "%s/graph-summary.svg", out_dir());
    remove(path);
    OK(starfold_graph_render(g, path)); /* AUTO: the summary */
    size_t len = 0;
    char *svg = (char *)slurp(path, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "summary: 12000 tasks as 32 groups"));
    /* The counts add up to the graph's tasks: "copy x N" and "reduce x N" nodes. */
    size_t total = 0;
    for (const char *p = svg; (p = strstr(p, " x ")); p += 3) {
        const char *k = p;
        while (k > svg && k[-1] != '>') k--;
        if (!strncmp(k, "copy", 4) || !strncmp(k, "reduce", 6)) total += strtoul(p + 3, NULL, 10);
    }
    CU_ASSERT_EQUAL(total, starfold_graph_num_tasks(g));
    free(svg);
    CU_ASSERT_EQUAL(starfold_graph_render_mode(g, path, STARFOLD_DRAW_FULL), STARFOLD_ERR_NOT_SUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "12000 tasks"));
    CU_ASSERT_EQUAL(starfold_graph_render_mode(g, path, (starfold_draw_mode_t)7), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_graph_destroy(g);

    /* A small graph is drawn task by task unless the summary is asked for. */
    g = build_reduce(tp);
    snprintf(path, sizeof path, "%s/graph-small.svg", out_dir());
    OK(starfold_graph_render(g, path));
    svg = (char *)slurp(path, &len);
    CU_ASSERT_PTR_NULL(svg ? strstr(svg, "summary:") : "missing");
    free(svg);
    OK(starfold_graph_render_mode(g, path, STARFOLD_DRAW_SUMMARY));
    svg = (char *)slurp(path, &len);
    CU_ASSERT_PTR_NOT_NULL(svg ? strstr(svg, "summary:") : NULL);
    free(svg);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

/* Occurrences of @needle in @hay. */
static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Centre of the SVG node titled @title (its first text element's x, y); 0 when absent. */
static int node_centre(const char *svg, const char *title, double *x, double *y)
{
    char want[64];
    snprintf(want, sizeof want, "<title>%s</title>", title);
    const char *p = strstr(svg, want);
    if (!p || !(p = strstr(p, "<text")) || !(p = strstr(p, " x=\""))) return 0;
    *x = strtod(p + 4, NULL);
    if (!(p = strstr(p, " y=\""))) return 0;
    *y = strtod(p + 4, NULL);
    return 1;
}

/*
 * The traffic view: one node per device (its tasks counted by kind), one arrow per device pair that
 * exchanges data, as many as starfold_graph_link_bytes() has unordered pairs, at any size; the
 * DGX-1 in its cube (device 4 above and right of device 0), the host's devices on a circle in order.
 * Hierarchical copy: two stars joined at their roots (7 pairs). The ring: the pairs of its rings.
 */
static void test_picture_traffic(void)
{
    starfold_topology_t tp = NULL;
    static const char *const algos[] = { "hierarchical-copy", "ring", "trees" };
    for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++) {
        starfold_graph_t g = dgx1_graph(algos[a], 1, (size_t)1 << 18, 1, &tp);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        starfold_link_bytes_t *pairs = NULL;
        size_t npairs = 0, unordered = 0;
        OK(starfold_graph_link_bytes(g, &pairs, &npairs));
        for (size_t i = 0; i < npairs; i++) {
            int reverse_seen = 0;
            for (size_t j = 0; j < i; j++) reverse_seen |= pairs[j].from == pairs[i].to && pairs[j].to == pairs[i].from;
            unordered += !reverse_seen;
        }
        free(pairs);
        char name[64];
        snprintf(name, sizeof name, "traffic-%s.svg", algos[a]);
        char *svg = render_svg(g, name, STARFOLD_DRAW_TRAFFIC);
        CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
        CU_ASSERT_EQUAL(count_of(svg, "class=\"edge\""), unordered);
        if (!strcmp(algos[a], "hierarchical-copy")) CU_ASSERT_EQUAL(unordered, 7);
        CU_ASSERT_EQUAL(count_of(svg, "class=\"node\""), 8 + 1); /* the devices and the legend */
        CU_ASSERT_PTR_NOT_NULL(strstr(svg, "(traffic view)"));
        CU_ASSERT_PTR_NOT_NULL(strstr(svg, "gpu0 (device 0)"));
        CU_ASSERT_PTR_NOT_NULL(strstr(svg, "each way"));
        CU_ASSERT_PTR_NOT_NULL(strstr(svg, "data over nvlink"));
        CU_ASSERT_PTR_NOT_NULL(strstr(svg, "#2ca02c")); /* NVLink's green, the shared palette */
        double x0, y0, x4, y4;
        CU_ASSERT_FATAL(node_centre(svg, "d0", &x0, &y0) && node_centre(svg, "d4", &x4, &y4));
        CU_ASSERT(x4 > x0 && y4 < y0); /* SVG y grows downwards: the back face is above and to the right */
        free(svg);
        starfold_graph_destroy(g);
        starfold_topology_destroy(tp);
    }
    /* Reduce-to-one's counts: every task is on some device, so the labels add up to the graph. */
    starfold_graph_t g = dgx1_graph("reduce-to-one", 3, 1000, 1, &tp);
    char *svg = render_svg(g, "traffic-r1.svg", STARFOLD_DRAW_TRAFFIC);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    size_t total = 0;
    for (const char *p = svg; (p = strstr(p, "copy ")); p += 5) total += strtoul(p + 5, NULL, 10);
    for (const char *p = svg; (p = strstr(p, "reduce ")); p += 7) total += strtoul(p + 7, NULL, 10);
    CU_ASSERT_EQUAL(total, starfold_graph_num_tasks(g));
    free(svg);
    /* PNG too; a .dot path gives the view's DOT. */
    char path[4096];
    snprintf(path, sizeof path, "%s/traffic.png", out_dir());
    OK(starfold_graph_render_mode(g, path, STARFOLD_DRAW_TRAFFIC));
    size_t len = 0;
    unsigned char *png = slurp(path, &len);
    CU_ASSERT(png && len > 1000 && !memcmp(png, "\x89PNG", 4));
    free(png);
    CU_ASSERT_EQUAL(starfold_graph_render_mode(g, path, (starfold_draw_mode_t)(STARFOLD_DRAW_TRAFFIC + 1)),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);

    /* The host: one memory, no traffic, said in the title; the devices on a circle, 0 at the top. */
    starfold_topology_t host = NULL;
    OK(starfold_topology_builtin("host", &host));
    static const int devs[] = { 0, 1, 2, 3 };
    starfold_tensor_desc_t t = { STARFOLD_FLOAT32, 1 << 16 };
    const starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 4, devs, 0, NULL, 1, &t };
    starfold_topology_t sub = NULL;
    OK(starfold_topology_subset(host, 4, &sub));
    g = NULL;
    OK(starfold_graph_compile(sub, "ring", &d, NULL, &g));
    svg = render_svg(g, "traffic-host.svg", STARFOLD_DRAW_TRAFFIC);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "no data crosses devices"));
    CU_ASSERT_EQUAL(count_of(svg, "class=\"edge\""), 0);
    double x[4], y[4];
    for (int i = 0; i < 4; i++) {
        char title[8];
        snprintf(title, sizeof title, "d%d", i);
        CU_ASSERT_FATAL(node_centre(svg, title, &x[i], &y[i]));
    }
    CU_ASSERT(y[0] < y[1] && y[0] < y[3] && y[2] > y[1]); /* 0 at 12 o'clock, 2 at 6 */
    CU_ASSERT(x[1] > x[0] && x[3] < x[0]);                /* clockwise: 1 at 3 o'clock, 3 at 9 */
    free(svg);
    starfold_graph_destroy(g);
    starfold_topology_destroy(sub);
    starfold_topology_destroy(host);
}

/*
 * The DGX-1 hierarchical copy, the golden graphs the issue asks for: 8-replica sum all-reduce of
 * three float32 tensors (1000, 4096 and 257 elements) on dgx1-v100.
 */
static void golden_dgx1(int num_packs)
{
    static const int devs[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    static const starfold_tensor_desc_t t[] = { { STARFOLD_FLOAT32, 1000 },
                                                { STARFOLD_FLOAT32, 4096 },
                                                { STARFOLD_FLOAT32, 257 } };
    const starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, 8, devs, 0, NULL, 3, t };
    starfold_topology_t tp = NULL;
    OK(starfold_topology_builtin("dgx1-v100", &tp));
    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    o.num_packs = num_packs;
    starfold_graph_t g = NULL;
    starfold_status_t st = starfold_graph_compile(tp, "hierarchical-copy", &d, &o, &g);
    if (st != STARFOLD_OK) fprintf(stderr, "\n  compile: %s\n", starfold_last_error());
    CU_ASSERT_EQUAL_FATAL(st, STARFOLD_OK);
    st = starfold_graph_check(g);
    if (st != STARFOLD_OK) fprintf(stderr, "\n  check: %s\n", starfold_last_error());
    CU_ASSERT_EQUAL(st, STARFOLD_OK);
    char golden[4096], name[64];
    snprintf(name, sizeof name, "dgx1-v100-hierarchical-copy-p%d.dot", num_packs);
    snprintf(golden, sizeof golden, "%s/graphs/%s", SF_SRCDIR, name);
    check_golden(g, golden, name);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

static void test_golden_dgx1_p1(void) { golden_dgx1(1); }
static void test_golden_dgx1_p2(void) { golden_dgx1(2); }

/* ---------------------------------------------------------------------------------------------- */
/* Statistics                                                                                     */

static void test_stats(void)
{
    starfold_topology_t tp = tri_topology();
    starfold_graph_t g = build_reduce(tp);
    starfold_graph_stats_t s;
    OK(starfold_graph_stats(g, &s));
    CU_ASSERT_EQUAL(s.num_tasks, 6);
    CU_ASSERT_EQUAL(s.tasks_by_kind[STARFOLD_TASK_COPY], 3);
    CU_ASSERT_EQUAL(s.tasks_by_kind[STARFOLD_TASK_REDUCE], 2);
    CU_ASSERT_EQUAL(s.tasks_by_kind[STARFOLD_TASK_SCALE], 1);
    CU_ASSERT_EQUAL(s.tasks_by_kind[STARFOLD_TASK_PACK], 0);
    CU_ASSERT_EQUAL(s.tasks_by_kind[STARFOLD_TASK_UNPACK], 0);
    CU_ASSERT_EQUAL(s.num_edges, 0 + 1 + 2 + 3 + 1 + 1); /* the in-place chain depends on every earlier write */
    CU_ASSERT_EQUAL(s.num_buffers, 3 + 3 + 1);
    CU_ASSERT_EQUAL(s.temp_bytes, 4000);
    CU_ASSERT_EQUAL(s.bytes_moved, 4 * 4000);         /* t1, t2, t4, t5 read another device */
    CU_ASSERT_EQUAL(s.critical_path_tasks, 6);
    CU_ASSERT_EQUAL(s.critical_path_bytes, 4000 + 8000 + 8000 + 4000 + 4000 + 4000);

    starfold_link_bytes_t *p = NULL;
    size_t n = 0;
    OK(starfold_graph_link_bytes(g, &p, &n));
    CU_ASSERT_EQUAL_FATAL(n, 4);
    const starfold_link_bytes_t want[4] = { { 0, 1, 4000 }, { 0, 2, 4000 }, { 1, 0, 4000 }, { 2, 1, 4000 } };
    for (size_t i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(p[i].from, want[i].from);
        CU_ASSERT_EQUAL(p[i].to, want[i].to);
        CU_ASSERT_EQUAL(p[i].bytes, want[i].bytes);
    }
    free(p);
    starfold_graph_destroy(g);

    g = build_packed(tp); /* 4 KiB packs: t2 reads p1 over nvlink, t3 reads p0 */
    OK(starfold_graph_stats(g, &s));
    CU_ASSERT_EQUAL(s.tasks_by_kind[STARFOLD_TASK_PACK], 2);
    CU_ASSERT_EQUAL(s.tasks_by_kind[STARFOLD_TASK_UNPACK], 2);
    CU_ASSERT_EQUAL(s.temp_bytes, 3 * 4096);
    CU_ASSERT_EQUAL(s.bytes_moved, 2 * 4096);
    CU_ASSERT_EQUAL(s.critical_path_tasks, 4);                        /* pack, reduce, copy, unpack */
    CU_ASSERT_EQUAL(s.critical_path_bytes, 4096 + 8192 + 4096 + 4096);
    OK(starfold_graph_link_bytes(g, &p, &n));
    CU_ASSERT_EQUAL(n, 2);
    if (n == 2) {
        CU_ASSERT(p[0].from == 0 && p[0].to == 1 && p[0].bytes == 4096);
        CU_ASSERT(p[1].from == 1 && p[1].to == 0 && p[1].bytes == 4096);
    }
    free(p);
    starfold_graph_destroy(g);

    /* An empty graph: nothing moves, no pairs, no array. */
    static const starfold_tensor_desc_t none[] = { { STARFOLD_FLOAT32, 0 } };
    g = new_graph(tp, "empty", STARFOLD_OP_SUM, 2, 1, none);
    OK(starfold_graph_stats(g, &s));
    CU_ASSERT_EQUAL(s.num_tasks, 0);
    CU_ASSERT_EQUAL(s.critical_path_tasks, 0);
    CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK); /* zero-element outputs need no writer */
    p = (starfold_link_bytes_t *)&s;
    OK(starfold_graph_link_bytes(g, &p, &n));
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_PTR_NULL(p);

    CU_ASSERT_EQUAL(starfold_graph_stats(NULL, &s), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_graph_stats(g, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_graph_link_bytes(NULL, &p, &n), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_graph_link_bytes(g, NULL, &n), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_graph_link_bytes(g, &p, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_graph_destroy(g);
    starfold_topology_destroy(tp);
}

/* ---------------------------------------------------------------------------------------------- */
/* Checker                                                                                        */

/* Asserts that @g fails the check with a detail containing @words, then frees it. */
static void expect_invalid(starfold_graph_t g, const char *words, const char *case_name)
{
    starfold_status_t st = starfold_graph_check(g);
    const char *why = starfold_last_error();
    const int named = st == STARFOLD_ERR_GRAPH_INVALID && strstr(why, words) != NULL;
    if (!named) fprintf(stderr, "\n  %s: got %s '%s', want '%s'", case_name, starfold_status_string(st), why, words);
    CU_ASSERT_EQUAL(st, STARFOLD_ERR_GRAPH_INVALID);
    CU_ASSERT(named);
    starfold_graph_destroy(g);
}

static void test_check_valid(void)
{
    starfold_topology_t tp = tri_topology();
    starfold_graph_t (*builds[])(starfold_topology_t) = { build_reduce, build_packed, build_many,
                                                          build_elementwise };
    for (size_t i = 0; i < 4; i++) {
        starfold_graph_t g = builds[i](tp);
        starfold_status_t st = starfold_graph_check(g);
        if (st != STARFOLD_OK) fprintf(stderr, "\n  %s: %s", g->algorithm, starfold_last_error());
        CU_ASSERT_EQUAL(st, STARFOLD_OK);
        starfold_graph_destroy(g);
    }
    CU_ASSERT_EQUAL(starfold_graph_check(NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_topology_destroy(tp);
}

/* Data-flow corruptions of hand-reduce (see build_reduce for its tasks). */
static void test_check_dataflow(void)
{
    starfold_topology_t tp = tri_topology();
    starfold_graph_t g;
    size_t extra;

    /* t0 now fills a temporary nobody reads: t1 reads acc, which no ancestor wrote. */
    g = build_reduce(tp);
    OK(starfold__graph_add_temp(g, 1, STARFOLD_FLOAT32, 1000, 0, &extra));
    g->nodes[0].dst[0].buf = extra;
    expect_invalid(g, "node 1 (reduce on device 1) reads elements [0, 1000) of temporary buffer 6", "read before write");

    /* A read covered only in part: t3 reads acc[0, 1000), and t2 now depends on nobody writing [600, 1000). */
    g = build_reduce(tp);
    g->nodes[0].src[0].count = g->nodes[0].dst[0].count = 600;
    g->nodes[1].src[0].count = g->nodes[1].src[1].count = g->nodes[1].dst[0].count = 600;
    g->nodes[2].src[0].count = g->nodes[2].src[1].count = g->nodes[2].dst[0].count = 600;
    expect_invalid(g, "reads elements [600, 1000) of temporary buffer 6", "partial read before write");

    /* A second writer of out0, ordered after the first. (Sealed graphs infer no deps: added by hand.) */
    g = build_reduce(tp);
    const starfold__span_t in0 = starfold__whole(g, starfold__graph_input(g, 0, 0)), out0 = starfold__whole(g, starfold__graph_output(g, 0, 0));
    OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &in0, 1, &out0, 1, -1, NULL));
    OK(starfold__graph_add_dep(g, 4, 6));
    OK(starfold__graph_add_dep(g, 5, 6));
    expect_invalid(g, "elements [0, 1000) of output buffer 3 (slot 0, tensor 0 on device 0) are written twice",
                   "output written twice");

    /* out2 only half written. */
    g = build_reduce(tp);
    g->nodes[5].src[0].count = g->nodes[5].dst[0].count = 500;
    expect_invalid(g, "elements [500, 1000) of output buffer 5 (slot 2, tensor 0 on device 2) are never written",
                   "output never written");

    /* Two unordered writers of one range: t6, appended after sealing, has no dependency. */
    g = build_reduce(tp);
    OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &(starfold__span_t){ starfold__graph_input(g, 1, 0), 0, 600 }, 1,
                     &(starfold__span_t){ 6, 0, 600 }, 1, -1, NULL));
    CU_ASSERT_EQUAL(g->nodes[6].ndeps, 0);
    expect_invalid(g, "race: node 0 (copy on device 1) and node 6 (copy on device 1) are unordered", "write race");

    /* A write after a read, unordered: t6 overwrites acc after its writers, but t3 may still read it. */
    g = build_reduce(tp);
    OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &(starfold__span_t){ starfold__graph_input(g, 1, 0), 0, 1000 }, 1,
                     &(starfold__span_t){ 6, 0, 1000 }, 1, -1, NULL));
    for (size_t d = 0; d < 3; d++) OK(starfold__graph_add_dep(g, d, 6));
    expect_invalid(g, "race: node 3 (scale on device 1) and node 6 (copy on device 1)", "read/write race");

    starfold_topology_destroy(tp);
}

/*
 * In-place hazard, two devices, one tensor:
 *   t0 copy    out0 = in1          gpu0   <- overwrites out0 (maybe in0's handle) before t1 reads in0
 *   t1 reduce  tmp  = in0 + in1    gpu1
 *   t2 copy    out1 = tmp          gpu1
 */
static void test_check_in_place(void)
{
    static const starfold_tensor_desc_t t[] = { { STARFOLD_FLOAT32, 64 } };
    starfold_topology_t tp = tri_topology();
    starfold_graph_t g = new_graph(tp, "hand-alias", STARFOLD_OP_SUM, 2, 1, t);
    size_t tmp;
    OK(starfold__graph_add_temp(g, 1, STARFOLD_FLOAT32, 64, 0, &tmp));
    const starfold__span_t in[2] = { starfold__whole(g, starfold__graph_input(g, 0, 0)), starfold__whole(g, starfold__graph_input(g, 1, 0)) };
    const starfold__span_t o0 = starfold__whole(g, starfold__graph_output(g, 0, 0)), o1 = starfold__whole(g, starfold__graph_output(g, 1, 0));
    const starfold__span_t T = starfold__whole(g, tmp);
    OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &in[1], 1, &o0, 1, -1, NULL));
    OK(starfold__graph_reduce(g, STARFOLD_OP_SUM, in, 2, T, -1, NULL));
    OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &T, 1, &o1, 1, -1, NULL));
    expect_invalid(g,
                   "in-place hazard: node 0 (copy on device 0) writes elements [0, 64) of output buffer 2 (slot 0, "
                   "tensor 0 on device 0), which may be the same handle as input buffer 0",
                   "in-place hazard");

    /* Ordered (both readers of in1 before out1 is written, the reader of in0 before out0) it is fine. */
    g = new_graph(tp, "hand-alias", STARFOLD_OP_SUM, 2, 1, t);
    OK(starfold__graph_add_temp(g, 1, STARFOLD_FLOAT32, 64, 0, &tmp));
    OK(starfold__graph_reduce(g, STARFOLD_OP_SUM, in, 2, T, -1, NULL));
    OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &in[1], 1, &o0, 1, -1, NULL));
    OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &T, 1, &o1, 1, -1, NULL));
    OK(starfold__graph_add_dep(g, 0, 1));
    OK(starfold__graph_add_dep(g, 1, 2));
    CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
    starfold_graph_destroy(g);

    /*
     * One task reading in0 and writing out0 of the aliased handle: fine elementwise (concatenation
     * positions line up), a hazard when it rotates the halves.
     */
    for (int rotate = 0; rotate < 2; rotate++) {
        g = new_graph(tp, "hand-alias", STARFOLD_OP_SUM, 2, 1, t);
        OK(starfold__graph_add_temp(g, 1, STARFOLD_FLOAT32, 64, 0, &tmp));
        OK(starfold__graph_reduce(g, STARFOLD_OP_SUM, in, 2, T, -1, NULL));
        OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &T, 1, &o1, 1, -1, NULL));
        const starfold__span_t halves[2] = { { in[0].buf, rotate ? 32 : 0, 32 }, { in[0].buf, rotate ? 0 : 32, 32 } };
        OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, halves, 2, &o0, 1, -1, NULL));
        OK(starfold__graph_add_dep(g, 0, 2));
        if (rotate)
            expect_invalid(g, "in-place hazard: node 2 (copy on device 0) writes elements [0, 32) of output buffer 2",
                           "rotating in-place copy");
        else {
            CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
            starfold_graph_destroy(g);
        }
    }
    starfold_topology_destroy(tp);
}

/* Structural corruptions: each names the node and what is wrong with it. */
static void test_check_structure(void)
{
    starfold_topology_t tp = tri_topology();
    starfold_graph_t g;

    g = build_reduce(tp);
    g->nodes[1].deps[0] = 3;
    expect_invalid(g, "node 1 (reduce on device 1): depends on node 3, which is not an earlier node", "forward dep");

    g = build_reduce(tp);
    g->nodes[2].deps[0] = 1; /* deps {1, 1} */
    expect_invalid(g, "not ascending", "duplicate dep");

    g = build_reduce(tp);
    g->nodes[3].device = 0;
    expect_invalid(g, "node 3 (scale on device 0): writes output buffer 4 (slot 1, tensor 0 on device 1) of another "
                      "device", "write on another device");

    g = build_reduce(tp);
    g->nodes[3].device = 7;
    expect_invalid(g, "device outside the topology's 3 devices", "device outside the topology");

    g = build_reduce(tp);
    g->nodes[4].dst[0].buf = starfold__graph_input(g, 0, 0);
    expect_invalid(g, "node 4 (copy on device 0): writes input buffer 0", "write into an input");

    g = build_reduce(tp);
    g->nodes[4].src[0].offset = 1;
    expect_invalid(g, "source span [1, +1000) is outside output buffer 4", "span out of bounds");

    g = build_reduce(tp);
    g->nodes[4].dst[0].buf = 99;
    expect_invalid(g, "destination span names buffer 99 of 7", "no such buffer");

    g = build_reduce(tp);
    g->nodes[5].dtype = STARFOLD_FLOAT64;
    expect_invalid(g, "node 5 (copy on device 2): source span of output buffer 3", "dtype mismatch");

    g = build_reduce(tp);
    g->nodes[1].src[1].count = 999;
    expect_invalid(g, "source 1 has 999 elements, the destination 1000", "reduce arity");

    g = build_reduce(tp);
    g->nodes[3].divisor = 0;
    expect_invalid(g, "divisor >= 1", "scale by zero");

    g = build_reduce(tp);
    g->nodes[4].dst[0].count = 999;
    expect_invalid(g, "moves 1000 elements into 999", "copy totals");

    g = build_reduce(tp);
    g->nodes[1].src[0].offset = 1; /* acc[1, 1000) += in0, written into acc[0, 999) */
    g->nodes[1].src[0].count = 999;
    g->nodes[1].src[1].count = 999;
    g->nodes[1].dst[0].count = 999;
    expect_invalid(g, "source span 0 overlaps destination span 0 in temporary buffer 6 (on device 1), shifted",
                   "shifted in-place reduce");

    g = build_reduce(tp);
    g->nodes[0].kind = (starfold_task_kind_t)42;
    expect_invalid(g, "unknown task kind", "unknown kind");
    starfold_topology_destroy(tp);
}

/* A one-pass batch of small tensors on the host: segmented REDUCE tasks, a segment per tensor. */
static starfold_graph_t build_segmented(starfold_topology_t tp)
{
    static const starfold_tensor_desc_t t[] = { { STARFOLD_FLOAT32, 100 }, { STARFOLD_FLOAT32, 50 },
                                                { STARFOLD_FLOAT32, 0 }, { STARFOLD_FLOAT32, 70 } };
    static const int dev[] = { 0, 1, 2 };
    const starfold_collective_desc_t d = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_MEAN, .num_sources = 3,
                                           .sources = dev, .num_tensors = 4, .tensors = t };
    starfold_graph_t g = NULL;
    OK(starfold_graph_compile(tp, "one-pass", &d, NULL, &g));
    return g;
}

/* The checker on segmented REDUCE nodes: valid as compiled; each corruption named. */
static void test_check_segments(void)
{
    starfold_topology_t full = NULL, tp = NULL;
    OK(starfold_topology_builtin("host", &full));
    OK(starfold_topology_subset(full, 3, &tp));
    starfold_graph_t g = build_segmented(tp);
    CU_ASSERT_EQUAL_FATAL(g->nnodes, 1); /* 220 elements: one task, three segments (the empty tensor none) */
    CU_ASSERT_EQUAL(g->nodes[0].nseg, 3);
    CU_ASSERT_EQUAL(g->nodes[0].nsrc, 9);
    CU_ASSERT_EQUAL(g->nodes[0].ndst, 9);
    CU_ASSERT_EQUAL(g->nodes[0].divisor, 3);
    CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
    starfold_graph_destroy(g);

    g = build_segmented(tp);
    g->nodes[0].nseg = 2; /* 9 spans do not split in 2 */
    expect_invalid(g, "9 sources and 9 destinations in 2 segments", "segments that do not divide");

    g = build_segmented(tp);
    g->nodes[0].src[4].count = 49; /* segment 1 (tensor 1, 50 elements): source 1 */
    expect_invalid(g, "source 4 has 49 elements, the destination of its segment 50", "segment arity");

    g = build_segmented(tp);
    g->nodes[0].nseg = 1; /* one segment of spans of 100, 50 and 70 elements */
    expect_invalid(g, "source 3 has 50 elements, the destination 100", "segments taken as one");

    g = build_segmented(tp);
    /* segment 1's first destination made segment 0's source 0 buffer: another reduction's input */
    g->nodes[0].dst[3] = g->nodes[0].src[0];
    g->nodes[0].dst[3].count = 50;
    expect_invalid(g, "writes input buffer", "segment writing another segment's source");
    starfold_topology_destroy(tp);
    starfold_topology_destroy(full);
}

/*
 * 20,000 tasks: 16 chunks, each reduced through 1,248 rounds of fresh temporaries, every round also
 * reading the next chunk's previous round, so late tasks have nearly every task as an ancestor. The
 * checker's bitsets (25 MB) and interval queries keep this around a second even unoptimised.
 *
 *   round 0:  T[0][c] = copy in0[c]
 *   round r:  T[r][c] = T[r-1][c] + T[r-1][c+1 mod 16]
 *   last:     out0[c] = T[R-1][c];  out1[c] = T[R-1][c] (gpu1 reads gpu0)
 */
static void test_check_large(void)
{
    enum { CHUNKS = 16, PER = 256, ROUNDS = 1248 };
    static const starfold_tensor_desc_t t[] = { { STARFOLD_FLOAT32, CHUNKS * PER } };
    starfold_topology_t tp = tri_topology();
    starfold_graph_t g = new_graph(tp, "chain", STARFOLD_OP_SUM, 2, 1, t);
    size_t prev[CHUNKS], cur[CHUNKS];
    for (size_t c = 0; c < CHUNKS; c++) {
        OK(starfold__graph_add_temp(g, 0, STARFOLD_FLOAT32, PER, -1, &prev[c]));
        const starfold__span_t x = { starfold__graph_input(g, 0, 0), c * PER, PER }, a = starfold__whole(g, prev[c]);
        OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &x, 1, &a, 1, -1, NULL));
    }
    for (size_t r = 1; r < ROUNDS; r++) {
        for (size_t c = 0; c < CHUNKS; c++) {
            OK(starfold__graph_add_temp(g, 0, STARFOLD_FLOAT32, PER, -1, &cur[c]));
            const starfold__span_t x[2] = { starfold__whole(g, prev[c]), starfold__whole(g, prev[(c + 1) % CHUNKS]) };
            OK(starfold__graph_reduce(g, STARFOLD_OP_SUM, x, 2, starfold__whole(g, cur[c]), -1, NULL));
        }
        memcpy(prev, cur, sizeof prev);
    }
    for (int d = 0; d < 2; d++)
        for (size_t c = 0; c < CHUNKS; c++) {
            const starfold__span_t a = starfold__whole(g, prev[c]), o = { starfold__graph_output(g, d, 0), c * PER, PER };
            OK(starfold__graph_copy(g, STARFOLD_TASK_COPY, &a, 1, &o, 1, -1, NULL));
        }
    starfold__graph_seal(g);
    CU_ASSERT_EQUAL(g->nnodes, (size_t)CHUNKS * ROUNDS + 2 * CHUNKS);
    starfold_status_t st = starfold_graph_check(g);
    if (st != STARFOLD_OK) fprintf(stderr, "\n  chain: %s", starfold_last_error());
    CU_ASSERT_EQUAL(st, STARFOLD_OK);
    starfold_graph_stats_t s;
    OK(starfold_graph_stats(g, &s));
    CU_ASSERT_EQUAL(s.critical_path_tasks, ROUNDS + 1);

    /* The same graph with one edge removed from the middle: t(last round, chunk 0) misses a writer. */
    starfold__node_t *n = &g->nodes[CHUNKS * (ROUNDS - 1)];
    CU_ASSERT_EQUAL_FATAL(n->ndeps, 2);
    n->deps[0] = n->deps[1];
    n->ndeps = 1;
    expect_invalid(g, "reads elements [0, 256) of temporary buffer", "large graph, missing edge");
    starfold_topology_destroy(tp);
}

int main(void)
{
    if (starfold__tu_begin() != 0) return 1;
    CU_pSuite ex = CU_add_suite("export", NULL, NULL);
    CU_add_test(ex, "golden: hand-built reduce", test_golden_reduce);
    CU_add_test(ex, "golden: hand-built packed", test_golden_packed);
    CU_add_test(ex, "golden: 65 tensors drawn per slot", test_golden_many);
    CU_add_test(ex, "DOT content: clusters, labels, link kinds", test_dot_content);
    CU_add_test(ex, "same graph, same bytes", test_deterministic);
    CU_add_test(ex, "render SVG and PNG, bad paths", test_render);
    CU_add_test(ex, "big graphs drawn summarised, --full refused", test_render_summary);
    CU_add_test(ex, "pictures: title, legend, device order, groups", test_picture_legend_order);
    CU_add_test(ex, "pictures: one palette for topologies and graphs", test_picture_palette);
    CU_add_test(ex, "pictures: wide graphs summarised, rounds folded, FULL honoured", test_picture_summaries);
    CU_add_test(ex, "pictures: the traffic view", test_picture_traffic);
    CU_add_test(ex, "golden: dgx1-v100 hierarchical copy, 1 pack", test_golden_dgx1_p1);
    CU_add_test(ex, "golden: dgx1-v100 hierarchical copy, 2 packs", test_golden_dgx1_p2);
    CU_pSuite st = CU_add_suite("stats", NULL, NULL);
    CU_add_test(st, "stats and link bytes", test_stats);
    CU_pSuite ck = CU_add_suite("checker", NULL, NULL);
    CU_add_test(ck, "valid hand-built graphs", test_check_valid);
    CU_add_test(ck, "read before write, outputs, races", test_check_dataflow);
    CU_add_test(ck, "in-place safety", test_check_in_place);
    CU_add_test(ck, "structure", test_check_structure);
    CU_add_test(ck, "segmented reduce", test_check_segments);
    CU_add_test(ck, "20,000 tasks", test_check_large);
    const unsigned failed = starfold__tu_run();
    return failed ? 1 : 0;
}
