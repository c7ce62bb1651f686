/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * A property test over the option space: random algorithms x options at their edges x tensor lists x
 * topologies, where every compile must either
 *
 *     fail with a status and a detail        (never a crash, never success with nothing computed), or
 *     give a graph the invariant checker passes,   and, when it is small, run to the exact result
 *
 * on CPU-only StarPU (every output element checked against the float64 reference). The options are
 * drawn from their edges: 0, 1, 2, powers of two, INT_MAX, SIZE_MAX, negatives; the communication
 * options' doubles from 0, NaN, infinities, negative zero, DBL_MAX, denormals; tensor lists from
 * empty tensors, one element, odd counts and sizes past STARFOLD_COLLECTIVE_MAX_BYTES.
 *
 * Cases: SF_PROPERTY_CASES (default 300 in make check; `make soak` runs 20,000), seed SF_PROPERTY_SEED
 * (default fixed, printed). The slowest compile is printed, as a number to watch, not asserted: the
 * limits of graph.h keep each compile bounded by the tasks it may create.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starfold.h>

#include "util.h"
#include "runner.h"

static starfold_context_t ctx;
static starfold_topology_t topologies[4];
static int num_topologies;
static long num_cases = 300;
static uint64_t seed = 20261123;

/* splitmix64: a seeded, portable generator. */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static size_t pick(uint64_t *s, size_t n) { return (size_t)(next(s) % n); }

static int edge_int(uint64_t *s)
{
    static const int v[] = { 0, 1, 2, 3, 4, 5, 7, 8, 64, 1024, 1 << 20, INT_MAX, -1, -2, INT_MIN };
    return v[pick(s, sizeof v / sizeof v[0])];
}

static size_t edge_size(uint64_t *s)
{
    static const size_t v[] = { 0, 1, 2, 3, 4, 7, 64, 4096, 65536, (size_t)1 << 20, (size_t)1 << 31, (size_t)1 << 61,
                                (size_t)1 << 63, SIZE_MAX, SIZE_MAX - 1 };
    return v[pick(s, sizeof v / sizeof v[0])];
}

static double edge_double(uint64_t *s)
{
    const double v[] = { 0.0, -0.0, 1.0, 0.5, NAN, INFINITY, -INFINITY, DBL_MAX, -1.0, 4.9e-324, 1e-310, 1e308 };
    return v[pick(s, sizeof v / sizeof v[0])];
}

/* Element counts: mostly small (so the graph runs), sometimes at the edges of what a tensor may be. */
static size_t edge_count(uint64_t *s)
{
    switch (pick(s, 8)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return ((size_t)1 << 48) + pick(s, 2); /* the most a tensor may have, and one more */
    case 3: return (size_t)1 << 40;
    default: return 1 + pick(s, 300);
    }
}

typedef struct {
    starfold_topology_t topo;
    char algorithm[32];
    starfold_collective_desc_t desc;
    int devices[STARFOLD_MAX_DEVICES], dests[STARFOLD_MAX_DEVICES];
    starfold_tensor_desc_t tensors[12];
    starfold_algo_options_t options;
} case_t;

static void draw_case(uint64_t *s, case_t *c)
{
    memset(c, 0, sizeof *c);
    c->topo = topologies[pick(s, (size_t)num_topologies)];
    const int ndev = starfold_topology_num_devices(c->topo);
    const int nalg = starfold_algorithm_count();
    snprintf(c->algorithm, sizeof c->algorithm, "%s", starfold_algorithm_name((int)pick(s, (size_t)nalg)));
    const int n = 1 + (int)pick(s, (size_t)(ndev < 8 ? ndev : 8));
    const int start = (int)pick(s, (size_t)(ndev - n + 1));
    for (int i = 0; i < n; i++) c->devices[i] = start + i;
    c->desc.kind = pick(s, 5) == 0 ? STARFOLD_COLL_BROADCAST : STARFOLD_COLL_REDUCE;
    c->desc.op = (starfold_op_t)pick(s, STARFOLD_OP_COUNT);
    c->desc.num_sources = c->desc.kind == STARFOLD_COLL_BROADCAST ? 1 : n;
    c->desc.sources = c->devices;
    if (c->desc.kind == STARFOLD_COLL_BROADCAST || pick(s, 4) == 0) {
        const int m = 1 + (int)pick(s, (size_t)ndev);
        for (int i = 0; i < m; i++) c->dests[i] = (start + i) % ndev;
        c->desc.num_destinations = m;
        c->desc.destinations = c->dests;
    }
    const size_t nt = 1 + pick(s, 12);
    const starfold_dtype_t dt = (starfold_dtype_t)pick(s, STARFOLD_DTYPE_COUNT);
    for (size_t t = 0; t < nt; t++) {
        c->tensors[t].dtype = pick(s, 6) == 0 ? (starfold_dtype_t)pick(s, STARFOLD_DTYPE_COUNT) : dt;
        c->tensors[t].count = pick(s, 3) == 0 ? edge_count(s) : 1 + pick(s, 64);
    }
    c->desc.num_tensors = nt;
    c->desc.tensors = c->tensors;
    c->desc.promote_integer_mean = pick(s, 8) == 0 ? edge_int(s) : (int)pick(s, 2);
    starfold_algo_options_init(&c->options);
    if (pick(s, 2)) c->options.num_packs = edge_int(s);
    if (pick(s, 3) == 0) c->options.reduce_to_device = edge_int(s);
    if (pick(s, 3) == 0) c->options.bytes_per_pack = edge_size(s);
    if (pick(s, 2)) c->options.chunk_bytes = edge_size(s);
    if (pick(s, 3) == 0) c->options.num_rings = edge_int(s);
}

static void describe(const case_t *c, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "%s on %s, kind %d op %d, %d sources, %d destinations, tensors", c->algorithm,
                                   starfold_topology_name(c->topo), (int)c->desc.kind, (int)c->desc.op, c->desc.num_sources,
                                   c->desc.num_destinations);
    for (size_t t = 0; t < c->desc.num_tensors && used < len; t++)
        used += (size_t)snprintf(buf + used, len - used, " %zux%s", c->tensors[t].count,
                                 starfold_dtype_name(c->tensors[t].dtype));
    if (used < len)
        snprintf(buf + used, len - used, "; num_packs %d bytes_per_pack %zu chunk_bytes %zu num_rings %d rtd %d promote %d",
                 c->options.num_packs, c->options.bytes_per_pack, c->options.chunk_bytes, c->options.num_rings,
                 c->options.reduce_to_device, c->desc.promote_integer_mean);
}

/* The statuses a compile may refuse a drawn case with. */
static int refusal(starfold_status_t st)
{
    return st == STARFOLD_ERR_INVALID_ARGUMENT || st == STARFOLD_ERR_NOT_SUPPORTED || st == STARFOLD_ERR_NOT_FOUND;
}

static size_t total_elements(const case_t *c)
{
    size_t e = 0;
    for (size_t t = 0; t < c->desc.num_tensors; t++) e += c->tensors[t].count;
    return e;
}

static void test_compile_properties(void)
{
    uint64_t s = seed;
    long compiled = 0, refused = 0, ran = 0, bad = 0;
    double slowest = 0;
    char what[1024], slowest_case[1024] = "";
    for (long k = 0; k < num_cases; k++) {
        case_t c;
        draw_case(&s, &c);
        if (getenv("SF_PROPERTY_VERBOSE")) {
            describe(&c, what, sizeof what);
            fprintf(stderr, "case %ld: %s\n", k, what);
        }
        starfold_graph_t sentinel = (starfold_graph_t)&c, g = sentinel;
        const double t0 = starfold_tools_now();
        const starfold_status_t st = starfold_graph_compile(c.topo, c.algorithm, &c.desc, &c.options, &g);
        const double dt = starfold_tools_now() - t0;
        if (dt > slowest) {
            slowest = dt;
            describe(&c, slowest_case, sizeof slowest_case);
        }
        int ok;
        if (st != STARFOLD_OK) {
            /* A refusal: a known status, a detail, the output untouched. */
            ok = refusal(st) && starfold_last_error()[0] != '\0' && g == sentinel;
            refused++;
        } else {
            compiled++;
            ok = g != sentinel && starfold_graph_check(g) == STARFOLD_OK;
            /* Small enough to run: every element against the reference. */
            if (ok && total_elements(&c) <= 4096 && starfold_graph_num_tasks(g) <= 4000 &&
                starfold_topology_num_devices(c.topo) <= starfold_context_num_devices(ctx)) {
                char label[64];
                snprintf(label, sizeof label, "property case %ld", k);
                ok = starfold__tu_run_graph(ctx, g, (int)(k % 2), label) == 0;
                ran++;
            }
            starfold_graph_destroy(g);
        }
        if (!ok) {
            describe(&c, what, sizeof what);
            fprintf(stderr, "\n  case %ld (seed %llu): %s\n    -> %s: %s\n", k, (unsigned long long)seed, what,
                    starfold_status_string(st), starfold_last_error());
            bad++;
        }
    }
    printf("\n  %ld cases (seed %llu): %ld compiled (%ld run and verified), %ld refused, %ld broken; slowest compile "
           "%.3f s\n",
           num_cases, (unsigned long long)seed, compiled, ran, refused, bad, slowest);
    printf("  slowest: %s\n", slowest_case);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(compiled > 0 && refused > 0);
}

/*
 * Long lists of tiny tensors, which one-pass makes one task of tens of thousands of spans: 262,144
 * tensors of 4 elements (SF_PROPERTY_LONG_LIST) on 2 devices of the host (the checker paired every destination span with every
 * other there, minutes of work; it now sorts them). Each algorithm either refuses the list or gives a
 * graph the checker passes; the time is printed, not asserted.
 */
static void test_long_lists(void)
{
    /* SF_PROPERTY_LONG_LIST: fewer under valgrind (make check-valgrind), where one takes minutes. */
    const char *env = getenv("SF_PROPERTY_LONG_LIST");
    const size_t n = env && *env ? (size_t)strtoull(env, NULL, 10) : 262144;
    starfold_tensor_desc_t *t = malloc(sizeof *t * n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (size_t i = 0; i < n; i++) t[i] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, 4 };
    const int devices[2] = { 0, 1 };
    starfold_collective_desc_t d;
    memset(&d, 0, sizeof d);
    d.kind = STARFOLD_COLL_REDUCE;
    d.op = STARFOLD_OP_SUM;
    d.num_sources = 2;
    d.sources = devices;
    d.num_tensors = n;
    d.tensors = t;
    static const char *const algorithms[] = { "one-pass", "auto" };
    for (size_t a = 0; a < sizeof algorithms / sizeof algorithms[0]; a++) {
        starfold_graph_t g = NULL;
        const double t0 = starfold_tools_now();
        const starfold_status_t st = starfold_graph_compile(topologies[0], algorithms[a], &d, NULL, &g);
        const starfold_status_t checked = st == STARFOLD_OK ? starfold_graph_check(g) : st;
        printf("\n  %s, %zu x 4 floats on 2 devices: %s in %.2f s (compile and check)", algorithms[a], n,
               st == STARFOLD_OK ? "compiled" : "refused", starfold_tools_now() - t0);
        if (st == STARFOLD_OK) {
            CU_ASSERT_EQUAL(checked, STARFOLD_OK);
        } else {
            CU_ASSERT(refusal(st));
        }
        starfold_graph_destroy(g);
    }
    free(t);
}

/* The communication options' doubles: a status for every edge, infinity included (no timeout). */
static void test_communication_option_edges(void)
{
    uint64_t s = seed ^ 0x5eed;
    for (int k = 0; k < 200; k++) {
        const double timeout = edge_double(&s);
        const int64_t bytes = pick(&s, 2) ? (int64_t)edge_size(&s) : -(int64_t)pick(&s, 3);
        starfold_communication_options_t o;
        const starfold_status_t st =
            starfold_communication_options_create(bytes, timeout, STARFOLD_COMMUNICATION_AUTO, &o);
        const int valid = !isnan(timeout) && timeout >= 0 && bytes >= 0;
        CU_ASSERT_EQUAL(st, valid ? STARFOLD_OK : STARFOLD_ERR_INVALID_ARGUMENT);
    }
}

static int suite_init(void)
{
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = starfold__tu_device_mode(); /* CPU workers; CUDA ones on a GPU (tests/device/gpu.sh) */
    o.num_devices = 8;
    if (starfold_context_create(&o, &ctx) != STARFOLD_OK) return -1;
    static const char *const names[] = { "host", "dgx1-v100", "pcie4" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (starfold_topology_builtin(names[i], &topologies[num_topologies]) == STARFOLD_OK) num_topologies++;
    return num_topologies == 3 ? 0 : -1;
}

static int suite_cleanup(void)
{
    for (int i = 0; i < num_topologies; i++) starfold_topology_destroy(topologies[i]);
    starfold_context_destroy(ctx);
    return 0;
}

int main(void)
{
    const char *n = getenv("SF_PROPERTY_CASES");
    if (n && *n) num_cases = strtol(n, NULL, 10);
    const char *sd = getenv("SF_PROPERTY_SEED");
    if (sd && *sd) seed = strtoull(sd, NULL, 10);
    if (starfold__tu_begin() != 0) return 1;
    CU_pSuite suite = CU_add_suite("properties over the option space (CPU-only StarPU)", suite_init, suite_cleanup);
    if (!suite || !CU_add_test(suite, "compile: a status, or a checked graph with exact results", test_compile_properties) ||
        !CU_add_test(suite, "communication options at their edges", test_communication_option_edges) ||
        !CU_add_test(suite, "long lists of tiny tensors (262,144) on 2 devices", test_long_lists))
        return 1;
    const unsigned failed = starfold__tu_run();
    return failed ? 1 : 0;
}
