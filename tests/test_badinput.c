/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Bad input through the public API: every case asserts the exact status, a detail in
 * starfold_last_error() that names what was wrong (a fragment of it is checked), and that the call
 * changed nothing (outputs untouched, handles and data unchanged).
 *
 * CPU-only StarPU (run-test.sh): the executor cases run on a context of 2 logical devices.
 *
 * Layout: one CUnit test per area; inside, one BAD(...) per case. The number of distinct cases is
 * counted and printed at the end ("bad-input cases: N"), and must be >= 40.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <starfold.h>

#include "tools.h"
#include "util.h"
#include "runner.h"

static int num_cases;
static starfold_context_t ctx;

/*
 * One case: @call must return @want and leave a detail containing @needle (NULL: any non-empty
 * detail). The detail is reset first by a failing call of a known text, so a stale message from an
 * earlier case can never satisfy the check.
 */
static void reset_detail(void)
{
    starfold_dtype_t d;
    (void)starfold_dtype_from_string("<reset>", &d);
}

#define BAD(call, want, needle)                                                                                    \
    do {                                                                                                           \
        reset_detail();                                                                                            \
        starfold_status_t st_ = (call);                                                                            \
        num_cases++;                                                                                               \
        if (st_ != (want))                                                                                         \
            fprintf(stderr, "%s:%d: %s gave %s (%s), expected %s\n", __FILE__, __LINE__, #call,                    \
                    starfold_status_string(st_), starfold_last_error(), starfold_status_string(want));             \
        CU_ASSERT_EQUAL(st_, (want));                                                                              \
        const char *n_ = (needle);                                                                                 \
        const char *e_ = starfold_last_error();                                                                    \
        if (n_ && !strstr(e_, n_)) fprintf(stderr, "%s:%d: detail '%s' lacks '%s'\n", __FILE__, __LINE__, e_, n_); \
        CU_ASSERT(n_ ? strstr(e_, n_) != NULL : (e_[0] != '\0' && strstr(e_, "<reset>") == NULL));                \
    } while (0)

#define CHECK_OK(call)                                                                                             \
    do {                                                                                                           \
        starfold_status_t st_ = (call);                                                                            \
        if (st_ != STARFOLD_OK) fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, starfold_last_error()); \
        CU_ASSERT_FATAL(st_ == STARFOLD_OK);                                                                       \
    } while (0)

static starfold_topology_t const_topo = (starfold_topology_t)(uintptr_t)0x5eed;

/* ------------------------------------------------------------------------------------------------ */

static void test_types(void)
{
    starfold_dtype_t d = STARFOLD_INT64;
    starfold_op_t op = STARFOLD_OP_PROD;
    BAD(starfold_dtype_from_string(NULL, &d), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    BAD(starfold_dtype_from_string("complex64", &d), STARFOLD_ERR_NOT_FOUND, "complex64");
    BAD(starfold_op_from_string("avg", &op), STARFOLD_ERR_NOT_FOUND, "avg");
    BAD(starfold_op_from_string("sum", NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    CU_ASSERT_EQUAL(d, STARFOLD_INT64);
    CU_ASSERT_EQUAL(op, STARFOLD_OP_PROD);
    CU_ASSERT_STRING_EQUAL(starfold_status_string((starfold_status_t)999), "unknown status");
}

/* ------------------------------------------------------------------------------------------------ */

static void test_topology_api(void)
{
    starfold_topology_t t = const_topo, two;
    BAD(starfold_topology_create(NULL, 2, &t), STARFOLD_ERR_INVALID_ARGUMENT, "NULL name");
    BAD(starfold_topology_create("x", 0, &t), STARFOLD_ERR_INVALID_ARGUMENT, "got 0");
    BAD(starfold_topology_create("x", -3, &t), STARFOLD_ERR_INVALID_ARGUMENT, "got -3");
    BAD(starfold_topology_create("x", STARFOLD_MAX_DEVICES + 1, &t), STARFOLD_ERR_INVALID_ARGUMENT, "257");
    CU_ASSERT_PTR_EQUAL(t, const_topo);

    CHECK_OK(starfold_topology_create("two", 2, &two));
    BAD(starfold_topology_set_device(two, 2, "d", STARFOLD_DEVICE_GPU, 0), STARFOLD_ERR_INVALID_ARGUMENT, "device 2");
    BAD(starfold_topology_set_device(two, 0, "d", (starfold_device_kind_t)7, 0), STARFOLD_ERR_INVALID_ARGUMENT,
        "kind 7");
    BAD(starfold_topology_set_device(two, 0, "d", STARFOLD_DEVICE_GPU, -2), STARFOLD_ERR_INVALID_ARGUMENT, "socket");
    BAD(starfold_topology_set_device(two, 0, "", STARFOLD_DEVICE_GPU, 0), STARFOLD_ERR_INVALID_ARGUMENT, "empty name");
    CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(two, 0), "dev0");

    const starfold_link_t good = { 0, 1, STARFOLD_LINK_NVLINK, 1, 25.0, 1.0 };
    starfold_link_t l = good;
    l.b = 0;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "two different devices");
    l = good, l.b = 5;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "device 5");
    l = good, l.bandwidth_GBps = 0;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "bandwidth");
    l = good, l.bandwidth_GBps = -4;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "bandwidth");
    l = good, l.bandwidth_GBps = NAN;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "bandwidth");
    l = good, l.bandwidth_GBps = INFINITY;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "bandwidth");
    l = good, l.latency_us = -1;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "latency");
    /* Values outside the links' ranges, which kept the cost model from returning. */
    l = good, l.bandwidth_GBps = 1e7;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "bandwidth must be in [1e-06, 1e+06] GB/s, got 1e+07");
    l = good, l.bandwidth_GBps = DBL_MAX;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "bandwidth must be in [1e-06, 1e+06] GB/s");
    l = good, l.bandwidth_GBps = 1e-310;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "bandwidth must be in [1e-06, 1e+06] GB/s");
    l = good, l.latency_us = 1e7;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "latency must be in [0, 1e+06] us, got 1e+07");
    l = good, l.latency_us = 1e308;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "latency must be in [0, 1e+06] us");
    l = good, l.lanes = 0;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "lanes");
    l = good, l.kind = (starfold_link_kind_t)42;
    BAD(starfold_topology_add_link(two, &l), STARFOLD_ERR_INVALID_ARGUMENT, "kind 42");
    BAD(starfold_topology_add_link(two, NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    CU_ASSERT_EQUAL(starfold_topology_num_links(two), 0);

    /* Two devices and no link: disconnected. */
    BAD(starfold_topology_validate(two), STARFOLD_ERR_TOPOLOGY, "device 1");
    BAD(starfold_topology_subset(two, 0, &t), STARFOLD_ERR_INVALID_ARGUMENT, "got 0");
    BAD(starfold_topology_subset(two, 3, &t), STARFOLD_ERR_INVALID_ARGUMENT, "got 3");
    int group[2] = { 9, 9 };
    const int dup[2] = { 1, 1 };
    BAD(starfold_topology_bisect(two, 2, dup, group), STARFOLD_ERR_INVALID_ARGUMENT, "twice");
    CU_ASSERT(group[0] == 9 && group[1] == 9);
    starfold_link_t got = { .a = -9 };
    BAD(starfold_topology_best_link(two, 0, 1, &got), STARFOLD_ERR_NOT_FOUND, "no link");
    BAD(starfold_topology_link(two, 0, &got), STARFOLD_ERR_INVALID_ARGUMENT, "link index 0");
    CU_ASSERT_EQUAL(got.a, -9);
    starfold_link_kind_t kind = STARFOLD_LINK_HOST;
    BAD(starfold_link_kind_from_string("ethernet", &kind), STARFOLD_ERR_NOT_FOUND, "ethernet");
    CU_ASSERT_EQUAL(kind, STARFOLD_LINK_HOST);

    BAD(starfold_topology_builtin("dgx2", &t), STARFOLD_ERR_NOT_FOUND, "dgx2");
    BAD(starfold_topology_open("", &t), STARFOLD_ERR_INVALID_ARGUMENT, "empty");
    BAD(starfold_topology_open("no-such-machine", &t), STARFOLD_ERR_NOT_FOUND, "no-such-machine");
    BAD(starfold_topology_open("/nonexistent/dir/t.dot", &t), STARFOLD_ERR_IO, "/nonexistent/dir/t.dot");
    BAD(starfold_topology_load(NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT, "NULL path");
    BAD(starfold_topology_write_dot(two, ""), STARFOLD_ERR_INVALID_ARGUMENT, "empty path");
    char path[4096];
    snprintf(path, sizeof path, "%s/badinput-topology.gif", getenv("SF_TEST_OUT") ? getenv("SF_TEST_OUT") : ".");
    BAD(starfold_topology_render(two, path), STARFOLD_ERR_NOT_SUPPORTED, ".gif");
    BAD(starfold_topology_write_dot(two, "/nonexistent/dir/t.dot"), STARFOLD_ERR_IO, "cannot open");
    CU_ASSERT_PTR_EQUAL(t, const_topo);
    starfold_topology_destroy(two);
}

/* ------------------------------------------------------------------------------------------------
 * Topology files: the detail is "ORIGIN:LINE: message".
 */

static void test_topology_files(void)
{
    starfold_topology_t t = const_topo;
    BAD(starfold_topology_load_string("graph g {\n a -- b [bandwidth=10\n}\n", "syntax.dot", &t), STARFOLD_ERR_PARSE,
        "syntax.dot:3: syntax error");
    BAD(starfold_topology_load_string("graph g {\n a -- b [bandwidth=10];\n a -- c [bandwidth=10, colour=red];\n}\n",
                                      "attr.dot", &t),
        STARFOLD_ERR_PARSE, "attr.dot:3: unknown edge attribute 'colour'");
    BAD(starfold_topology_load_string("graph g {\n a [flavour=x];\n a -- b [bandwidth=1]\n}\n", "nattr.dot", &t),
        STARFOLD_ERR_PARSE, "nattr.dot:2: unknown node attribute 'flavour'");
    BAD(starfold_topology_load_string("graph g {\n a -- b [bandwidth=10];\n b -- c [bandwidth=0];\n}\n", "zero.dot", &t),
        STARFOLD_ERR_PARSE, "zero.dot:3: link b -- c: bandwidth must be a number in [1e-06, 1e+06] (GB/s)");
    BAD(starfold_topology_load_string("graph g {\n\n a -- b [bandwidth=-25]\n}\n", "neg.dot", &t), STARFOLD_ERR_PARSE,
        "neg.dot:3: link a -- b: bandwidth must be a number in [1e-06, 1e+06] (GB/s)");
    BAD(starfold_topology_load_string("graph g {\n a -- b [bandwidth=nan]\n}\n", "nan.dot", &t), STARFOLD_ERR_PARSE,
        "nan.dot:2:");
    BAD(starfold_topology_load_string("graph g {\n a -- b [kind=nvlink]\n}\n", "nobw.dot", &t), STARFOLD_ERR_PARSE,
        "nobw.dot:2: link a -- b: bandwidth (GB/s) is required");
    BAD(starfold_topology_load_string("graph g {\n a -- b [bandwidth=10, latency=-1]\n}\n", "lat.dot", &t),
        STARFOLD_ERR_PARSE, "lat.dot:2: link a -- b: latency");
    BAD(starfold_topology_load_string("graph g {\n a -- b [bandwidth=10, lanes=1.5]\n}\n", "lanes.dot", &t),
        STARFOLD_ERR_PARSE, "lanes.dot:2: link a -- b: lanes");
    BAD(starfold_topology_load_string("graph g {\n a -- b [bandwidth=10, kind=ethernet]\n}\n", "kind.dot", &t),
        STARFOLD_ERR_PARSE, "kind.dot:2: link a -- b: unknown kind 'ethernet'");
    BAD(starfold_topology_load_string("graph g {\n a -- b [bandwidth=10];\n c -- d [bandwidth=10];\n}\n", "disc.dot",
                                      &t),
        STARFOLD_ERR_TOPOLOGY, "disc.dot:3: disconnected: device 2 (node 'c')");
    BAD(starfold_topology_load_string("graph g {\n}\n", "empty.dot", &t), STARFOLD_ERR_TOPOLOGY, "no node");
    BAD(starfold_topology_load_string("graph g {\n a -- a [bandwidth=1]\n}\n", "loop.dot", &t), STARFOLD_ERR_PARSE,
        "loop.dot:2: link a -- a joins a device to itself");
    BAD(starfold_topology_load_string("graph g {\n a [id=0];\n b [id=0];\n a -- b [bandwidth=1]\n}\n", "ids.dot", &t),
        STARFOLD_ERR_PARSE, "ids.dot:3: node 'b' has id 0");
    BAD(starfold_topology_load_string("graph g { a -- b [bandwidth=1] }\ngraph h { c }\n", "two.dot", &t),
        STARFOLD_ERR_PARSE, "more than one graph");
    BAD(starfold_topology_load_string("", "nothing.dot", &t), STARFOLD_ERR_PARSE, "nothing.dot");
    {
        /* STARFOLD_MAX_DEVICES + 1 devices in a chain: more than a topology may have. */
        char big[16384] = "graph g {\n", want[32];
        for (int i = 0; i < STARFOLD_MAX_DEVICES; i++)
            snprintf(big + strlen(big), sizeof big - strlen(big), " n%d -- n%d [bandwidth=1];\n", i, i + 1);
        strcat(big, "}\n");
        snprintf(want, sizeof want, "%d nodes", STARFOLD_MAX_DEVICES + 1);
        BAD(starfold_topology_load_string(big, "big.dot", &t), STARFOLD_ERR_PARSE, want);
    }
    /* Regression (found by fuzzing): a node named "" gave INVALID_ARGUMENT from the device setter. */
    BAD(starfold_topology_load_string("graph g {\n a -- b [bandwidth=10];\n b -- \"\" [bandwidth=1]\n}\n", "noname.dot",
                                      &t),
        STARFOLD_ERR_PARSE, "noname.dot:3: a node with an empty name");
    BAD(starfold_topology_load_string(NULL, "x", &t), STARFOLD_ERR_INVALID_ARGUMENT, "NULL dot");
    CU_ASSERT_PTR_EQUAL(t, const_topo);

    /*
     * Regression (found by fuzzing): text that ends inside a quoted string, an HTML string or a
     * comment left cgraph's lexer in that state, and the next, valid, text was then misread (once
     * with a 2 GiB allocation). Each bad text is followed by a good one that must load.
     */
    static const char *const unterminated[] = { "graph g { a [label=\"abc", "graph g { a [label=<abc",
                                                "graph g { a /* abc", "graph g { a -- b [bandwidth=\"1" };
    for (size_t i = 0; i < sizeof unterminated / sizeof unterminated[0]; i++) {
        BAD(starfold_topology_load_string(unterminated[i], "cut.dot", &t), STARFOLD_ERR_PARSE, "cut.dot");
        starfold_topology_t ok = NULL;
        CHECK_OK(starfold_topology_load_string("graph g { a -- b [bandwidth=10, label=\"x y\"] }", "next.dot", &ok));
        CU_ASSERT_EQUAL(starfold_topology_num_devices(ok), 2);
        starfold_topology_destroy(ok);
    }
}

/* ------------------------------------------------------------------------------------------------ */

typedef struct {
    starfold_topology_t topo;
    int devices[8];
    starfold_tensor_desc_t tensors[3];
    starfold_collective_desc_t desc;
    starfold_algo_options_t opt;
} compile_fixture_t;

static void cf_init(compile_fixture_t *f)
{
    CU_ASSERT_FATAL(starfold_topology_builtin("dgx1-v100", &f->topo) == STARFOLD_OK);
    for (int i = 0; i < 8; i++) f->devices[i] = i;
    f->tensors[0] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, 1000 };
    f->tensors[1] = (starfold_tensor_desc_t){ STARFOLD_INT32, 10 };
    f->tensors[2] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, 0 };
    f->desc = (starfold_collective_desc_t){ .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = 4,
                                            .sources = f->devices, .num_tensors = 3, .tensors = f->tensors };
    starfold_algo_options_init(&f->opt);
}

static void test_compile(void)
{
    compile_fixture_t f;
    cf_init(&f);
    starfold_graph_t g = (starfold_graph_t)(uintptr_t)0x5eed;
    const starfold_graph_t sentinel = g;
    const int nalg = starfold_algorithm_count();

    BAD(starfold_graph_compile(f.topo, "ring", NULL, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT, "NULL description");
    BAD(starfold_graph_compile(NULL, "ring", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT, "NULL topology");
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL graph");
    BAD(starfold_graph_compile(f.topo, "no-such-algorithm", &f.desc, NULL, &g), STARFOLD_ERR_NOT_FOUND,
        "unknown algorithm 'no-such-algorithm'");

    /*
     * Options out of range: rejected by every algorithm, whether it uses the option or not, with the
     * same message; in range, ignored by those that do not read it.
     */
    for (int a = 0; a < nalg; a++) {
        const char *name = starfold_algorithm_name(a);
        char want[128];
        f.opt.num_packs = -1;
        BAD(starfold_graph_compile(f.topo, name, &f.desc, &f.opt, &g), STARFOLD_ERR_INVALID_ARGUMENT,
            "num_packs >= 0, but -1 is specified");
        starfold_algo_options_init(&f.opt);
        f.opt.num_rings = -2;
        BAD(starfold_graph_compile(f.topo, name, &f.desc, &f.opt, &g), STARFOLD_ERR_INVALID_ARGUMENT, "num_rings");
        f.opt.num_rings = 5;
        snprintf(want, sizeof want, "%s: num_rings must be 0 (automatic) to 4, got 5", name);
        BAD(starfold_graph_compile(f.topo, name, &f.desc, &f.opt, &g), STARFOLD_ERR_INVALID_ARGUMENT, want);
        f.opt.num_rings = 4; /* in range: compiles (one-pass: not on a DGX-1, whatever the options) */
        {
            starfold_graph_t ok = NULL;
            const starfold_status_t st = starfold_graph_compile(f.topo, name, &f.desc, &f.opt, &ok);
            CU_ASSERT(st == STARFOLD_OK || (st == STARFOLD_ERR_NOT_SUPPORTED && strstr(starfold_last_error(), "one memory")));
            starfold_graph_destroy(ok);
        }
        starfold_algo_options_init(&f.opt);
        f.opt.reduce_to_device = 8;
        BAD(starfold_graph_compile(f.topo, name, &f.desc, &f.opt, &g), STARFOLD_ERR_INVALID_ARGUMENT,
            "reduce_to_device 8");
        f.opt.reduce_to_device = -2;
        BAD(starfold_graph_compile(f.topo, name, &f.desc, &f.opt, &g), STARFOLD_ERR_INVALID_ARGUMENT,
            "reduce_to_device -2");
        starfold_algo_options_init(&f.opt);
        f.desc.promote_integer_mean = 2;
        BAD(starfold_graph_compile(f.topo, name, &f.desc, &f.opt, &g), STARFOLD_ERR_INVALID_ARGUMENT,
            "promote_integer_mean");
        f.desc.promote_integer_mean = 0;
    }

    /* Replicas and devices. */
    const int dup_src[3] = { 0, 1, 1 }, bad_src[2] = { 0, 8 }, neg_src[2] = { -1, 0 };
    f.desc.sources = dup_src, f.desc.num_sources = 3;
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT,
        "device 1 appears twice");
    f.desc.sources = bad_src, f.desc.num_sources = 2;
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_NOT_FOUND, "device 8 is not in");
    f.desc.sources = neg_src;
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_NOT_FOUND, "device -1 is not in");
    f.desc.sources = f.devices, f.desc.num_sources = 0;
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT, "sources");
    f.desc.num_sources = -4;
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT, "sources");
    {
        int nine[9] = { 0, 1, 2, 3, 4, 5, 6, 7, 0 };
        f.desc.sources = nine, f.desc.num_sources = 9;
        BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT,
            "9 devices but the topology has 8");
    }
    f.desc.sources = f.devices, f.desc.num_sources = 4;

    /* Destinations: empty, duplicated, unknown. */
    const int dst_dup[2] = { 2, 2 }, dst_bad[1] = { 12 };
    f.desc.destinations = f.devices, f.desc.num_destinations = 0;
    BAD(starfold_graph_compile(f.topo, "reduce-to-one", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT,
        "destinations: need at least one device");
    f.desc.destinations = NULL, f.desc.num_destinations = 2;
    BAD(starfold_graph_compile(f.topo, "reduce-to-one", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT,
        "destinations");
    f.desc.destinations = dst_dup, f.desc.num_destinations = 2;
    BAD(starfold_graph_compile(f.topo, "reduce-to-one", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT,
        "device 2 appears twice");
    f.desc.destinations = dst_bad, f.desc.num_destinations = 1;
    BAD(starfold_graph_compile(f.topo, "reduce-to-one", &f.desc, NULL, &g), STARFOLD_ERR_NOT_FOUND, "device 12");
    f.desc.destinations = NULL, f.desc.num_destinations = 0;

    /* Tensors, dtypes, ops, kinds. */
    f.desc.num_tensors = 0;
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT, "at least one tensor");
    f.desc.num_tensors = 3;
    f.tensors[1].dtype = (starfold_dtype_t)19;
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT,
        "tensor 1: unknown dtype 19");
    f.tensors[1].dtype = STARFOLD_INT32;
    f.tensors[1].count = (size_t)1 << 50;
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT, "beyond any device");
    f.tensors[1].count = 10;
    f.desc.op = (starfold_op_t)5;
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT, "unknown reduce op 5");
    f.desc.op = STARFOLD_OP_SUM;
    f.desc.kind = (starfold_collective_t)3;
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT,
        "unknown collective kind 3");
    f.desc.kind = STARFOLD_COLL_BROADCAST;
    BAD(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &g), STARFOLD_ERR_INVALID_ARGUMENT,
        "broadcast needs exactly one source, got 4");
    f.desc.kind = STARFOLD_COLL_REDUCE;
    /* A floating-point tensor with the promoting integer MEAN: TensorFlow promotes integers only. */
    f.desc.op = STARFOLD_OP_MEAN;
    f.desc.promote_integer_mean = 1;
    starfold_graph_t promoted = NULL;
    CHECK_OK(starfold_graph_compile(f.topo, "ring", &f.desc, NULL, &promoted));
    CU_ASSERT_EQUAL(starfold_graph_output_dtype(promoted, 0), STARFOLD_FLOAT32);
    CU_ASSERT_EQUAL(starfold_graph_output_dtype(promoted, 1), STARFOLD_FLOAT64);
    starfold_graph_destroy(promoted);
    f.desc.op = STARFOLD_OP_SUM;
    f.desc.promote_integer_mean = 0;

    /* A disconnected topology. */
    starfold_topology_t two;
    CHECK_OK(starfold_topology_create("two", 2, &two));
    f.desc.num_sources = 2;
    BAD(starfold_graph_compile(two, "ring", &f.desc, NULL, &g), STARFOLD_ERR_TOPOLOGY, "cannot be reached");
    starfold_topology_destroy(two);
    f.desc.num_sources = 4;

    CU_ASSERT_PTR_EQUAL(g, sentinel);

    /* Zero-size tensors are valid: every algorithm compiles a list of only empty tensors. */
    const starfold_tensor_desc_t empty[2] = { { STARFOLD_FLOAT64, 0 }, { STARFOLD_INT64, 0 } };
    starfold_collective_desc_t e = f.desc;
    e.tensors = empty, e.num_tensors = 2;
    for (int a = 0; a < nalg; a++) {
        starfold_graph_t eg = NULL;
        if (!strcmp(starfold_algorithm_name(a), "one-pass")) {
            /* On a DGX-1 every GPU has its own memory: one-pass says so and leaves the graph alone. */
            BAD(starfold_graph_compile(f.topo, "one-pass", &e, NULL, &g), STARFOLD_ERR_NOT_SUPPORTED,
                "one-pass needs every replica in one memory");
            continue;
        }
        CHECK_OK(starfold_graph_compile(f.topo, starfold_algorithm_name(a), &e, NULL, &eg));
        CU_ASSERT_EQUAL(starfold_graph_check(eg), STARFOLD_OK);
        starfold_graph_destroy(eg);
    }

    /* Inspecting and exporting. */
    starfold_graph_t ok = NULL;
    CHECK_OK(starfold_graph_compile(f.topo, "hierarchical-copy", &f.desc, NULL, &ok));
    starfold_graph_stats_t stats;
    BAD(starfold_graph_stats(ok, NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    BAD(starfold_graph_stats(NULL, &stats), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    starfold_link_bytes_t *pairs = (starfold_link_bytes_t *)(uintptr_t)0x5eed;
    BAD(starfold_graph_link_bytes(ok, &pairs, NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    CU_ASSERT_PTR_EQUAL(pairs, (starfold_link_bytes_t *)(uintptr_t)0x5eed);
    BAD(starfold_graph_check(NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    BAD(starfold_graph_write_dot(ok, NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    BAD(starfold_graph_render(ok, "graph.jpeg"), STARFOLD_ERR_NOT_SUPPORTED, ".jpeg");
    BAD(starfold_graph_write_dot(ok, "/nonexistent/dir/g.dot"), STARFOLD_ERR_IO, "/nonexistent/dir/g.dot");

    /* The cost model. */
    starfold_prediction_t p;
    starfold_cost_params_t cp;
    BAD(starfold_graph_simulate(NULL, NULL, &p), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    starfold_cost_params_init(&cp);
    cp.task_overhead_us = -1;
    BAD(starfold_graph_simulate(ok, &cp, &p), STARFOLD_ERR_INVALID_ARGUMENT, "overhead");
    starfold_cost_params_init(&cp);
    cp.gpu_memory_GBps = 0;
    BAD(starfold_graph_simulate(ok, &cp, &p), STARFOLD_ERR_INVALID_ARGUMENT, "bandwidths");
    starfold_cost_params_init(&cp);
    cp.cpu_memory_GBps = NAN;
    BAD(starfold_graph_simulate(ok, &cp, &p), STARFOLD_ERR_INVALID_ARGUMENT, "finite");
    starfold_cost_params_init(&cp);
    cp.task_overhead_us = INFINITY;
    BAD(starfold_graph_simulate(ok, &cp, &p), STARFOLD_ERR_INVALID_ARGUMENT, "finite");
    starfold_graph_destroy(ok);
    starfold_topology_destroy(f.topo);
}

/* ------------------------------------------------------------------------------------------------ */

static void test_spec(void)
{
    starfold_tensor_desc_t *const sentinel = (starfold_tensor_desc_t *)(uintptr_t)0x5eed;
    starfold_tensor_desc_t *t = sentinel;
    size_t n = 77;
    uint64_t bytes = 77;
    BAD(starfold_tools_tensors_parse(NULL, STARFOLD_FLOAT32, &t, &n), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    BAD(starfold_tools_tensors_parse("4", (starfold_dtype_t)-1, &t, &n), STARFOLD_ERR_INVALID_ARGUMENT, "dtype");
    BAD(starfold_tools_tensors_parse("", STARFOLD_FLOAT32, &t, &n), STARFOLD_ERR_PARSE, NULL);
    BAD(starfold_tools_tensors_parse("4x1MiB,,8", STARFOLD_FLOAT32, &t, &n), STARFOLD_ERR_PARSE, "item 2");
    BAD(starfold_tools_tensors_parse("1KB", STARFOLD_FLOAT32, &t, &n), STARFOLD_ERR_PARSE, "ambiguous");
    BAD(starfold_tools_tensors_parse("6", STARFOLD_FLOAT32, &t, &n), STARFOLD_ERR_PARSE, "multiple");
    BAD(starfold_tools_tensors_parse("0x4", STARFOLD_FLOAT32, &t, &n), STARFOLD_ERR_PARSE, NULL);
    BAD(starfold_tools_tensors_parse("1048577x4", STARFOLD_FLOAT32, &t, &n), STARFOLD_ERR_PARSE, NULL);
    BAD(starfold_tools_tensors_parse("99999999999999999999", STARFOLD_INT64, &t, &n), STARFOLD_ERR_PARSE, "too large");
    BAD(starfold_tools_tensors_parse("1048576x16TiB", STARFOLD_INT64, &t, &n), STARFOLD_ERR_PARSE, NULL);
    BAD(starfold_tools_tensors_parse("resnet51", STARFOLD_FLOAT32, &t, &n), STARFOLD_ERR_PARSE, "resnet51");
    CU_ASSERT_PTR_EQUAL(t, sentinel);
    CU_ASSERT_EQUAL(n, 77);
    BAD(starfold_tools_size_parse("1Q", &bytes), STARFOLD_ERR_PARSE, "unit 'Q'");
    BAD(starfold_tools_size_parse("-5", &bytes), STARFOLD_ERR_PARSE, NULL);
    BAD(starfold_tools_size_parse(NULL, &bytes), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    BAD(starfold_tools_size_parse("16777216T", &bytes), STARFOLD_ERR_PARSE, "too large");
    CU_ASSERT_EQUAL(bytes, 77);
}

/* ------------------------------------------------------------------------------------------------
 * The executor: context, vectors, submission, requests.
 */

static void test_context_and_vectors(void)
{
    starfold_context_options_t o;
    starfold_context_t c = (starfold_context_t)(uintptr_t)0x5eed;
    starfold_context_options_init(&o);
    o.mode = (starfold_device_mode_t)9;
    BAD(starfold_context_create(&o, &c), STARFOLD_ERR_INVALID_ARGUMENT, "mode 9");
    starfold_context_options_init(&o);
    o.num_devices = -1;
    BAD(starfold_context_create(&o, &c), STARFOLD_ERR_INVALID_ARGUMENT, "num_devices");
    starfold_context_options_init(&o);
    o.mode = STARFOLD_DEVICES_OPENCL;   /* CPU-only StarPU */
    BAD(starfold_context_create(&o, &c), STARFOLD_ERR_NO_DEVICE, "OpenCL");
    BAD(starfold_context_create(NULL, NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    CU_ASSERT_PTR_EQUAL(c, (starfold_context_t)(uintptr_t)0x5eed);
    starfold_topology_t t = const_topo;
    BAD(starfold_context_topology(NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT, "NULL");
    CU_ASSERT_PTR_EQUAL(t, const_topo);

    starpu_data_handle_t h = NULL;
    BAD(starfold_vector_create(ctx, 0, (starfold_dtype_t)14, 10, &h), STARFOLD_ERR_INVALID_ARGUMENT, "dtype 14");
    BAD(starfold_vector_create(ctx, 2, STARFOLD_FLOAT32, 10, &h), STARFOLD_ERR_NO_DEVICE, "device 2");
    BAD(starfold_vector_create(ctx, -1, STARFOLD_FLOAT32, 10, &h), STARFOLD_ERR_NO_DEVICE, "device -1");
    BAD(starfold_vector_create(ctx, 0, STARFOLD_FLOAT32, (size_t)UINT32_MAX + 1, &h), STARFOLD_ERR_NOT_SUPPORTED,
        "at most");
    CU_ASSERT_PTR_NULL(h);

    /*
     * An allocation the device cannot satisfy: run-test.sh does not limit memory, so this test set
     * STARPU_LIMIT_CPU_MEM (MiB) before StarPU started: 1.5 GiB is beyond it.
     */
    BAD(starfold_vector_create(ctx, 0, STARFOLD_FLOAT64, (size_t)3 << 27, &h), STARFOLD_ERR_OUT_OF_MEMORY,
        "cannot allocate");
    CU_ASSERT_PTR_NULL(h);

    CHECK_OK(starfold_vector_create(ctx, 0, STARFOLD_INT32, 4, &h));
    const int32_t data[4] = { 1, 2, 3, 4 };
    int32_t back[5] = { 0 };
    CHECK_OK(starfold_vector_write(h, data, sizeof data));
    BAD(starfold_vector_write(h, data, sizeof data + 4), STARFOLD_ERR_INVALID_ARGUMENT, "20 bytes, the vector holds 16");
    BAD(starfold_vector_read(h, NULL, 16), STARFOLD_ERR_INVALID_ARGUMENT, "NULL host buffer");
    BAD(starfold_vector_read(NULL, back, 16), STARFOLD_ERR_INVALID_ARGUMENT, "NULL handle");
    BAD(starfold_vector_read(h, back, 20), STARFOLD_ERR_INVALID_ARGUMENT, "20 bytes");
    CHECK_OK(starfold_vector_read(h, back, 16));
    CU_ASSERT(memcmp(back, data, sizeof data) == 0);
    starfold_vector_destroy(ctx, h);
}

/* Two replicas on devices 0 and 1 of a 2-device topology, one float32 tensor of 100 elements and one
 * int64 tensor of 7. */
typedef struct {
    starfold_topology_t topo;
    starfold_graph_t graph;
    starpu_data_handle_t in[4], out[4];
} submit_fixture_t;

static void starfold__init(submit_fixture_t *f, const char *algorithm)
{
    static const int devs[2] = { 0, 1 };
    static const starfold_tensor_desc_t tensors[2] = { { STARFOLD_FLOAT32, 100 }, { STARFOLD_INT64, 7 } };
    CHECK_OK(starfold_topology_open("host", &f->topo));
    starfold_topology_t two;
    CHECK_OK(starfold_topology_subset(f->topo, 2, &two));
    starfold_topology_destroy(f->topo);
    f->topo = two;
    starfold_collective_desc_t d = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = 2,
                                     .sources = devs, .num_tensors = 2, .tensors = tensors };
    CHECK_OK(starfold_graph_compile(f->topo, algorithm, &d, NULL, &f->graph));
    for (int s = 0; s < 2; s++)
        for (int t = 0; t < 2; t++) {
            CHECK_OK(starfold_vector_create(ctx, s, tensors[t].dtype, tensors[t].count, &f->in[s * 2 + t]));
            CHECK_OK(starfold_vector_create(ctx, s, tensors[t].dtype, tensors[t].count, &f->out[s * 2 + t]));
            void *buf = starfold_tools_alloc(tensors[t].dtype, tensors[t].count);
            starfold_tools_fill(buf, tensors[t].dtype, tensors[t].count, STARFOLD_OP_SUM, s, (size_t)t);
            CHECK_OK(starfold_vector_write(f->in[s * 2 + t], buf, tensors[t].count * starfold_dtype_size(tensors[t].dtype)));
            starfold_tools_fill_sentinel(buf, tensors[t].dtype, tensors[t].count);
            CHECK_OK(starfold_vector_write(f->out[s * 2 + t], buf, tensors[t].count * starfold_dtype_size(tensors[t].dtype)));
            free(buf);
        }
}

/* 0 when every output still holds the sentinel and every input its data. */
static int starfold__untouched(submit_fixture_t *f)
{
    static const starfold_tensor_desc_t tensors[2] = { { STARFOLD_FLOAT32, 100 }, { STARFOLD_INT64, 7 } };
    int bad = 0;
    for (int s = 0; s < 2; s++)
        for (int t = 0; t < 2; t++) {
            const size_t c = tensors[t].count, bytes = c * starfold_dtype_size(tensors[t].dtype);
            void *got = starfold_tools_alloc(tensors[t].dtype, c), *want = starfold_tools_alloc(tensors[t].dtype, c);
            starfold_vector_read(f->in[s * 2 + t], got, bytes);
            starfold_tools_fill(want, tensors[t].dtype, c, STARFOLD_OP_SUM, s, (size_t)t);
            bad |= memcmp(got, want, bytes) != 0;
            starfold_vector_read(f->out[s * 2 + t], got, bytes);
            starfold_tools_fill_sentinel(want, tensors[t].dtype, c);
            bad |= memcmp(got, want, bytes) != 0;
            free(got);
            free(want);
        }
    return bad ? -1 : 0;
}

static void starfold__free(submit_fixture_t *f)
{
    for (int i = 0; i < 4; i++) {
        starfold_vector_destroy(ctx, f->in[i]);
        starfold_vector_destroy(ctx, f->out[i]);
    }
    starfold_graph_destroy(f->graph);
    starfold_topology_destroy(f->topo);
}

/*
 * Hostile sizes and options (no runtime): each case once crashed, hung for minutes or returned a graph
 * that computed nothing. Now each either fails at once with the limit in the detail, or compiles to a
 * graph the checker passes.
 */
static starfold_graph_t compile_or_null(starfold_topology_t t, const char *algorithm, int n, const starfold_tensor_desc_t *td,
                                        size_t nt, const starfold_algo_options_t *o, starfold_status_t *st)
{
    static const int devs[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    const starfold_collective_desc_t d = { STARFOLD_COLL_REDUCE, STARFOLD_OP_SUM, n, devs, 0, NULL, nt, td };
    starfold_graph_t g = NULL;
    *st = starfold_graph_compile(t, algorithm, &d, o, &g);
    return g;
}

static void expect_graph(starfold_topology_t t, const char *algorithm, int n, const starfold_tensor_desc_t *td, size_t nt,
                         const starfold_algo_options_t *o)
{
    starfold_status_t st;
    starfold_graph_t g = compile_or_null(t, algorithm, n, td, nt, o, &st);
    num_cases++;
    if (st != STARFOLD_OK) fprintf(stderr, "\n  %s: %s\n", algorithm, starfold_last_error());
    CU_ASSERT_EQUAL_FATAL(st, STARFOLD_OK);
    CU_ASSERT(starfold_graph_num_tasks(g) > 0);
    CU_ASSERT_EQUAL(starfold_graph_check(g), STARFOLD_OK);
    starfold_graph_destroy(g);
}

static void test_hostile_sizes(void)
{
    starfold_topology_t host = NULL, dgx = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_builtin("host", &host), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_builtin("dgx1-v100", &dgx), STARFOLD_OK);
    starfold_algo_options_t o;
    starfold_status_t st;
    const starfold_tensor_desc_t mib = { STARFOLD_FLOAT32, 262144 }, k1 = { STARFOLD_FLOAT32, 1024 };

    /* Chunks larger than everything: one chunk, never a division by zero or a graph of no task. */
    starfold_algo_options_init(&o);
    o.chunk_bytes = (size_t)1 << 63;
    expect_graph(host, "ring", 2, &mib, 1, &o);
    o.chunk_bytes = (size_t)1 << 61;
    expect_graph(host, "ring", 8, &mib, 1, &o);
    expect_graph(host, "trees", 8, &mib, 1, &o);
    o.chunk_bytes = SIZE_MAX;
    expect_graph(host, "one-pass", 2, &k1, 1, &o);
    expect_graph(host, "ring", 8, &k1, 1, &o);
    o.bytes_per_pack = SIZE_MAX;
    expect_graph(dgx, "hierarchical-copy", 8, &k1, 1, &o);

    /* Tensors adding up past STARFOLD_COLLECTIVE_MAX_BYTES (65,536 x 2^48 float64 wrapped 2^64). */
    starfold_tensor_desc_t *huge = malloc(65536 * sizeof *huge);
    CU_ASSERT_PTR_NOT_NULL_FATAL(huge);
    for (size_t t = 0; t < 65536; t++) huge[t] = (starfold_tensor_desc_t){ STARFOLD_FLOAT64, (size_t)1 << 48 };
    starfold_algo_options_init(&o);
    for (int a = 0; a < starfold_algorithm_count(); a++) {
        starfold_graph_t g = compile_or_null(host, starfold_algorithm_name(a), 8, huge, 65536, &o, &st);
        num_cases++;
        CU_ASSERT_EQUAL(st, STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "the tensors add up to more than 4503599627370496 bytes per replica"));
        CU_ASSERT_PTR_NULL(g);
    }
    free(huge);

    /* Options that would need millions of tasks: refused with the options and the limits named. */
    starfold_algo_options_init(&o);
    o.chunk_bytes = 4;
    const starfold_tensor_desc_t m4 = { STARFOLD_FLOAT32, 1 << 20 };
    static const char *const chunked[] = { "ring", "trees" };
    for (size_t a = 0; a < sizeof chunked / sizeof chunked[0]; a++) {
        BAD((compile_or_null(host, chunked[a], 8, &mib, 1, &o, &st), st), STARFOLD_ERR_INVALID_ARGUMENT,
            "1 tensors of 1048576 bytes in all with chunk_bytes 4, num_packs 1, bytes_per_pack 0 need more than 262144 "
            "tasks or 4194304 task arguments (STARFOLD_GRAPH_MAX_TASKS, STARFOLD_GRAPH_MAX_SPANS)");
    }
    /* one-pass: a task per 4-byte chunk fits 1 MiB exactly (262,144 tasks); 4 MiB does not. */
    BAD((compile_or_null(host, "one-pass", 8, &m4, 1, &o, &st), st), STARFOLD_ERR_INVALID_ARGUMENT,
        "one-pass: 1 tensors of 4194304 bytes in all with chunk_bytes 4");
    expect_graph(host, "auto", 8, &mib, 1, &o); /* auto leaves those out and picks among the others */
    starfold_algo_options_init(&o);
    o.num_packs = 1 << 20;
    BAD((compile_or_null(dgx, "hierarchical-copy", 8, &m4, 1, &o, &st), st), STARFOLD_ERR_INVALID_ARGUMENT,
        "hierarchical-copy: num_packs must be at most 262144 (STARFOLD_GRAPH_MAX_TASKS: a pack costs a task), got 1048576");
    o.num_packs = 200000; /* in range, but more packs than the budget allows tasks for */
    BAD((compile_or_null(dgx, "hierarchical-copy", 8, &m4, 1, &o, &st), st), STARFOLD_ERR_INVALID_ARGUMENT,
        "num_packs 200000, bytes_per_pack 0 need more than 262144 tasks");
    starfold_tensor_desc_t *tiny = malloc(1048576 * sizeof *tiny);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tiny);
    for (size_t t = 0; t < 1048576; t++) tiny[t] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, 1 };
    starfold_algo_options_init(&o);
    BAD((compile_or_null(host, "reduce-to-one", 8, tiny, 1048576, &o, &st), st), STARFOLD_ERR_INVALID_ARGUMENT,
        "reduce-to-one: 1048576 tensors of 4194304 bytes in all");
    BAD((compile_or_null(host, "one-pass", 8, tiny, 1048576, &o, &st), st), STARFOLD_ERR_INVALID_ARGUMENT,
        "one-pass: 1048576 tensors of 4194304 bytes in all");
    free(tiny);

    /* Large collectives compile as fast as small ones: auto over 1 GiB and 4 x 1 GiB on the host's 8. */
    const starfold_tensor_desc_t gib = { STARFOLD_FLOAT32, (size_t)1 << 28 };
    const starfold_tensor_desc_t four[4] = { gib, gib, gib, gib };
    expect_graph(host, "auto", 8, &gib, 1, NULL);
    expect_graph(host, "auto", 8, four, 4, NULL);
    expect_graph(dgx, "auto", 8, four, 4, NULL);
    starfold_topology_destroy(host);
    starfold_topology_destroy(dgx);
}

/* starfold_vector_destroy() of a handle that is no vector: left alone, not an abort inside StarPU. */
static void test_vector_destroy_other_handle(void)
{
    static float x = 42.0f;
    starpu_data_handle_t var = NULL;
    starpu_variable_data_register(&var, STARPU_MAIN_RAM, (uintptr_t)&x, sizeof x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(var);
    starfold_vector_destroy(ctx, var);
    num_cases++;
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "starfold_vector_destroy: the handle is not a StarPU vector"));
    starpu_data_unregister(var); /* still registered: the caller's to unregister */
    CU_ASSERT_EQUAL(x, 42.0f);
}

/* Strategy constructors given NULLs: a status, never a crash (three of them once dereferenced them). */
static void test_strategies(void)
{
    starfold_strategy_t sentinel = (starfold_strategy_t)(uintptr_t)0x5eed, s = sentinel;
    const int two[2] = { 0, 1 };
    BAD(starfold_mirrored_strategy_create(NULL, NULL, 2, two, NULL, &s), STARFOLD_ERR_INVALID_ARGUMENT, "NULL context");
    BAD(starfold_mirrored_strategy_create(ctx, NULL, 2, NULL, NULL, &s), STARFOLD_ERR_INVALID_ARGUMENT,
        "2 devices and a NULL list");
    BAD(starfold_mirrored_strategy_create(ctx, NULL, 0, two, NULL, &s), STARFOLD_ERR_INVALID_ARGUMENT,
        "0 devices and a non-NULL list");
    BAD(starfold_mirrored_strategy_create(ctx, NULL, 2, two, NULL, NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL strategy");
    BAD(starfold_one_device_strategy_create(NULL, NULL, 0, &s), STARFOLD_ERR_INVALID_ARGUMENT, "NULL context");
    BAD(starfold_one_device_strategy_create(ctx, NULL, 0, NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL strategy");
    BAD(starfold_one_device_strategy_create(ctx, NULL, -3, &s), STARFOLD_ERR_INVALID_ARGUMENT, "device -3");
    BAD(starfold_central_storage_strategy_create(NULL, NULL, 2, two, STARFOLD_PARAMETER_DEVICE_DEFAULT, &s),
        STARFOLD_ERR_INVALID_ARGUMENT, "NULL context");
    BAD(starfold_central_storage_strategy_create(ctx, NULL, 1, NULL, STARFOLD_PARAMETER_DEVICE_DEFAULT, &s),
        STARFOLD_ERR_INVALID_ARGUMENT, "1 devices and a NULL list");
    BAD(starfold_central_storage_strategy_create(ctx, NULL, 2, NULL, STARFOLD_PARAMETER_DEVICE_DEFAULT, &s),
        STARFOLD_ERR_INVALID_ARGUMENT, "2 devices and a NULL list");
    BAD(starfold_central_storage_strategy_create(ctx, NULL, 2, two, STARFOLD_PARAMETER_DEVICE_DEFAULT, NULL),
        STARFOLD_ERR_INVALID_ARGUMENT, "NULL strategy");
    CU_ASSERT_PTR_EQUAL(s, sentinel);
    /* A NULL topology is the context's: these work. */
    CU_ASSERT_EQUAL(starfold_mirrored_strategy_create(ctx, NULL, 0, NULL, NULL, &s), STARFOLD_OK);
    starfold_strategy_destroy(s);
    CU_ASSERT_EQUAL(starfold_one_device_strategy_create(ctx, NULL, 1, &s), STARFOLD_OK);
    starfold_strategy_destroy(s);
    CU_ASSERT_EQUAL(starfold_central_storage_strategy_create(ctx, NULL, 0, NULL, STARFOLD_PARAMETER_DEVICE_DEFAULT, &s),
                    STARFOLD_OK);
    starfold_strategy_destroy(s);
}

static void test_submit(void)
{
    submit_fixture_t f;
    starfold__init(&f, "reduce-to-one");
    starfold_request_t req = (starfold_request_t)(uintptr_t)0x5eed;
    const starfold_request_t sentinel = req;
    starpu_data_handle_t in[4], out[4];

    BAD(starfold_submit(ctx, f.graph, f.in, f.out, NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL request");
    BAD(starfold_submit(NULL, f.graph, f.in, f.out, &req), STARFOLD_ERR_INVALID_ARGUMENT, "NULL context");
    BAD(starfold_submit(ctx, f.graph, NULL, f.out, &req), STARFOLD_ERR_INVALID_ARGUMENT, "NULL inputs");

    /* A handle of the wrong element count (replica shapes differ). */
    memcpy(in, f.in, sizeof in);
    in[2] = f.in[3];
    BAD(starfold_submit(ctx, f.graph, in, f.out, &req), STARFOLD_ERR_INVALID_ARGUMENT, "input slot 1 tensor 0");
    /* Wrong element size (replica dtypes differ): a float64 vector of 100 elements where float32 is wanted. */
    starpu_data_handle_t wide;
    CHECK_OK(starfold_vector_create(ctx, 0, STARFOLD_FLOAT64, 100, &wide));
    memcpy(in, f.in, sizeof in);
    in[0] = wide;
    BAD(starfold_submit(ctx, f.graph, in, f.out, &req), STARFOLD_ERR_INVALID_ARGUMENT, "100 elements of 4 bytes");
    /* Not a vector. */
    float scalar = 0;
    starpu_data_handle_t var;
    starpu_variable_data_register(&var, STARPU_MAIN_RAM, (uintptr_t)&scalar, sizeof scalar);
    memcpy(out, f.out, sizeof out);
    out[0] = var;
    BAD(starfold_submit(ctx, f.graph, f.in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT, "not a StarPU vector");
    /* A NULL handle for a non-empty tensor. */
    out[0] = NULL;
    BAD(starfold_submit(ctx, f.graph, f.in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT, "NULL handle");
    /* One handle for two outputs. */
    memcpy(out, f.out, sizeof out);
    starpu_data_handle_t shared;
    CHECK_OK(starfold_vector_create(ctx, 0, STARFOLD_FLOAT32, 100, &shared));
    out[0] = shared, out[2] = shared;
    BAD(starfold_submit(ctx, f.graph, f.in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT, "several outputs");
    /* An output that is another device's input. */
    memcpy(out, f.out, sizeof out);
    out[0] = f.in[2];
    BAD(starfold_submit(ctx, f.graph, f.in, out, &req), STARFOLD_ERR_INVALID_ARGUMENT, "its own device's input");

    /* A graph compiled for a topology with more devices than the context has, even if it uses few. */
    {
        starfold_topology_t host8;
        CHECK_OK(starfold_topology_open("host", &host8));
        static const int devs[2] = { 0, 1 };
        static const starfold_tensor_desc_t tensors[2] = { { STARFOLD_FLOAT32, 100 }, { STARFOLD_INT64, 7 } };
        starfold_collective_desc_t d = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = 2,
                                         .sources = devs, .num_tensors = 2, .tensors = tensors };
        starfold_graph_t g8;
        CHECK_OK(starfold_graph_compile(host8, "reduce-to-one", &d, NULL, &g8));
        BAD(starfold_submit(ctx, g8, f.in, f.out, &req), STARFOLD_ERR_NO_DEVICE, "of 8 devices, the context has 2");
        starfold_graph_destroy(g8);
        starfold_topology_destroy(host8);
        /* The same from a topology file: the message names the file and the line of the first device too many. */
        char path[512];
        snprintf(path, sizeof path, "%s/badinput-three.dot", getenv("SF_TEST_OUT") ? getenv("SF_TEST_OUT") : ".");
        FILE *fp = fopen(path, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
        fputs("graph three {\n  a [id=0];\n  b [id=1];\n\n  c [id=2];\n  a -- b [bandwidth=10];\n"
              "  b -- c [bandwidth=10];\n}\n", fp);
        fclose(fp);
        starfold_topology_t three;
        CHECK_OK(starfold_topology_load(path, &three));
        CU_ASSERT_STRING_EQUAL(starfold_topology_origin(three), path);
        CU_ASSERT_EQUAL(starfold_topology_device_line(three, 2), 5);
        starfold_graph_t g3;
        CHECK_OK(starfold_graph_compile(three, "reduce-to-one", &d, NULL, &g3));
        char want[600];
        snprintf(want, sizeof want, "%s:5: device 2 ('c')", path);
        BAD(starfold_submit(ctx, g3, f.in, f.out, &req), STARFOLD_ERR_NO_DEVICE, want);
        starfold_graph_destroy(g3);
        starfold_topology_destroy(three);
    }
    /* Persistent submissions: the same checks, named after the call made; nothing created. */
    {
        starfold_persistent_t per = (starfold_persistent_t)(uintptr_t)0x5eed;
        const starfold_persistent_t per_sentinel = per;
        BAD(starfold_persistent_create(ctx, f.graph, f.in, f.out, NULL), STARFOLD_ERR_INVALID_ARGUMENT,
            "starfold_persistent_create: NULL persistent");
        BAD(starfold_persistent_create(ctx, NULL, f.in, f.out, &per), STARFOLD_ERR_INVALID_ARGUMENT, "NULL graph");
        memcpy(in, f.in, sizeof in);
        in[2] = f.in[3];
        BAD(starfold_persistent_create(ctx, f.graph, in, f.out, &per), STARFOLD_ERR_INVALID_ARGUMENT,
            "starfold_persistent_create: input slot 1 tensor 0");
        memcpy(out, f.out, sizeof out);
        out[0] = f.in[2];
        BAD(starfold_persistent_create(ctx, f.graph, f.in, out, &per), STARFOLD_ERR_INVALID_ARGUMENT,
            "its own device's input");
        starfold_view_t vin[4], vout[4];
        for (int i = 0; i < 4; i++) vin[i] = (starfold_view_t){ f.in[i], 0 }, vout[i] = (starfold_view_t){ f.out[i], 0 };
        vout[3].offset = 1000;
        BAD(starfold_persistent_create_views(ctx, f.graph, vin, vout, &per), STARFOLD_ERR_INVALID_ARGUMENT,
            "starfold_persistent_create_views: output slot 1 tensor 1: elements [1000, 1000 + 7)");
        BAD(starfold_persistent_start(NULL, &req), STARFOLD_ERR_INVALID_ARGUMENT, "NULL persistent");
        CU_ASSERT_PTR_EQUAL(per, per_sentinel);
        CHECK_OK(starfold_persistent_create(ctx, f.graph, f.in, f.out, &per));
        BAD(starfold_persistent_start(per, NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL request");
        starfold_persistent_destroy(per);
        starfold_persistent_destroy(NULL);
    }
    CU_ASSERT_PTR_EQUAL(req, sentinel);
    CU_ASSERT_EQUAL(starfold__untouched(&f), 0);

    /* Requests. */
    BAD(starfold_request_wait(NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL request");
    BAD(starfold_request_test(NULL), STARFOLD_ERR_INVALID_ARGUMENT, "NULL request");
    CHECK_OK(starfold_submit(ctx, f.graph, f.in, f.out, &req));
    BAD(starfold_request_wait_timeout(req, -1.0), STARFOLD_ERR_INVALID_ARGUMENT, "-1 seconds");
    BAD(starfold_request_wait_timeout(req, NAN), STARFOLD_ERR_INVALID_ARGUMENT, "seconds");
    CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_OK);
    starfold_request_destroy(req);

    /* The baseline. */
    const starpu_data_handle_t bin[2] = { f.in[0], f.in[2] }, bout[2] = { f.out[0], f.out[2] };
    BAD(starfold_tools_baseline_starpu_redux(ctx, STARFOLD_FLOAT32, STARFOLD_OP_SUM, 0, bin, bout, NULL),
        STARFOLD_ERR_INVALID_ARGUMENT, "0 replicas");
    BAD(starfold_tools_baseline_starpu_redux(ctx, STARFOLD_FLOAT32, STARFOLD_OP_SUM, 3, bin, bout, NULL),
        STARFOLD_ERR_INVALID_ARGUMENT, "3 replicas");
    BAD(starfold_tools_baseline_starpu_redux(ctx, STARFOLD_FLOAT32, (starfold_op_t)11, 2, bin, bout, NULL),
        STARFOLD_ERR_INVALID_ARGUMENT, "unknown op 11");
    BAD(starfold_tools_baseline_starpu_redux(ctx, STARFOLD_INT64, STARFOLD_OP_SUM, 2, bin, bout, NULL),
        STARFOLD_ERR_INVALID_ARGUMENT, NULL);

    starpu_data_unregister(var);
    starfold_vector_destroy(ctx, wide);
    starfold_vector_destroy(ctx, shared);
    starfold__free(&f);
}

/* ------------------------------------------------------------------------------------------------
 * The header's rule on failure: "nothing the caller owns is changed, output parameters are left
 * untouched". One failing call of every public function with an output parameter that BAD() does not
 * cover above (tests/check-failure-paths.sh keeps that list complete; the group's functions are in
 * tests/mpi/test_group.c), each output a sentinel that must come back as it went in.
 */
#define SENTINEL(type) ((type)(uintptr_t)0x5eed)

static starfold_status_t noop_replica(starfold_replica_context_t rc, void *arg)
{
    (void)rc;
    (void)arg;
    return STARFOLD_OK;
}

/* Replica 0 returns a one-component value, replica 1 none: run_results cannot regroup that. */
static starfold_status_t uneven_replica(starfold_replica_context_t rc, void *arg)
{
    (void)arg;
    if (starfold_replica_context_replica_id_in_sync_group(rc) != 0) return STARFOLD_OK;
    const float x = 1.0f;
    starfold_value_t v = NULL;
    starfold_status_t st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 1, &x, &v);
    if (st == STARFOLD_OK) st = starfold_replica_context_set_result(rc, v);
    starfold_value_destroy(v);
    return st;
}

/* In a replica function: each replica-context call with a bad argument, outputs sentinels. */
typedef struct {
    int bad[6];
} rc_fail_t;

/* One replica-context case @k: @call returns @want and @untouched holds, else counted in a->bad[k]
 * (CUnit's asserts are not for replica threads; the test checks the counts after the run). */
#define RC_FAILS(k, call, want, untouched) (a->bad[k] += (call) != (want) || !(untouched))

static starfold_status_t failing_replica(starfold_replica_context_t rc, void *arg)
{
    rc_fail_t *a = arg;
    const float x = 1.0f;
    starfold_value_t v = SENTINEL(starfold_value_t), res = SENTINEL(starfold_value_t), mine = NULL;
    starpu_data_handle_t h = SENTINEL(starpu_data_handle_t);
    void *merged = SENTINEL(void *);
    RC_FAILS(0, starfold_replica_context_create_value(rc, (starfold_dtype_t)99, 1, &x, &v), STARFOLD_ERR_INVALID_ARGUMENT,
             v == SENTINEL(starfold_value_t));
    if (starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 1, &x, &mine) != STARFOLD_OK) return STARFOLD_ERR_INTERNAL;
    RC_FAILS(1, starfold_replica_context_select(rc, NULL, &h), STARFOLD_ERR_INVALID_ARGUMENT,
             h == SENTINEL(starpu_data_handle_t));
    RC_FAILS(2, starfold_replica_context_all_reduce(rc, (starfold_op_t)99, 1, &mine, NULL, &res),
             STARFOLD_ERR_INVALID_ARGUMENT, res == SENTINEL(starfold_value_t));
    RC_FAILS(3, starfold_replica_context_all_gather(rc, mine, 3, NULL, &res), STARFOLD_ERR_INVALID_ARGUMENT,
             res == SENTINEL(starfold_value_t));
    RC_FAILS(4, starfold_replica_context_merge_call(rc, NULL, NULL, &merged), STARFOLD_ERR_INVALID_ARGUMENT,
             merged == SENTINEL(void *));
    float y = -1; /* the input of the failed collectives: intact */
    a->bad[5] += starfold_value_read(mine, 0, &y, sizeof y) != STARFOLD_OK || y != x;
    starfold_value_destroy(mine);
    return STARFOLD_OK;
}

static void test_out_params(void)
{
    const int two[2] = { 0, 1 };
    const float xs[4] = { 1, 2, 3, 4 };
    starfold_value_t v = SENTINEL(starfold_value_t), good = NULL, res[2];
    starfold_topology_t t = SENTINEL(starfold_topology_t);
    starfold_cross_device_ops_t ops = SENTINEL(starfold_cross_device_ops_t), hc = NULL;
    starfold_strategy_t s = NULL;
    starfold_indexed_slices_t sl = SENTINEL(starfold_indexed_slices_t), good_sl = NULL;
    CHECK_OK(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 2, two, STARFOLD_FLOAT32, 4, xs, &good));
    CHECK_OK(starfold_mirrored_strategy_create(ctx, NULL, 2, two, NULL, &s));
    CHECK_OK(starfold_hierarchical_copy_all_reduce_create(1, &hc));
    const starfold_destination_t d0 = starfold_destination_device(0), d9 = starfold_destination_device(9);

    /* Topology and values. */
    const int nodes[2] = { 0, 0 };
    BAD(starfold_topology_ranks(0, nodes, NULL, NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_PTR_EQUAL(t, SENTINEL(starfold_topology_t));
    BAD(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 2, two, (starfold_dtype_t)99, 4, xs, &v),
        STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    const int same[2] = { 1, 1 };
    BAD(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 2, same, STARFOLD_FLOAT32, 4, xs, &v),
        STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    starpu_data_handle_t hs[2] = { NULL, NULL };
    BAD(starfold_value_wrap(ctx, STARFOLD_VALUE_PER_REPLICA, 2, two, hs, STARFOLD_FLOAT32, &v), STARFOLD_ERR_INVALID_ARGUMENT,
        NULL);
    const starfold_value_t with_null[2] = { good, NULL };
    BAD(starfold_value_regroup(STARFOLD_VALUE_PER_REPLICA, 2, with_null, &v), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_PTR_EQUAL(v, SENTINEL(starfold_value_t));
    float back[4] = { -1, -1, -1, -1 };
    BAD(starfold_value_read(good, 0, back, sizeof back + 4), STARFOLD_ERR_INVALID_ARGUMENT, NULL); /* past its end */
    BAD(starfold_value_read(good, 2, back, sizeof back), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT(back[0] == -1 && back[3] == -1);

    /* IndexedSlices. */
    const size_t rows[2] = { 1, 1 };
    const float row[2] = { 1, 2 };
    const int64_t at0[1] = { 0 }, at9[1] = { 9 };
    const void *vals[2] = { row, row };
    const int64_t *idx[2] = { at0, at9 };
    BAD(starfold_indexed_slices_create(ctx, STARFOLD_VALUE_PER_REPLICA, 2, two, STARFOLD_FLOAT32, 4, 2, rows, vals, idx, &sl),
        STARFOLD_ERR_INVALID_ARGUMENT, "9");
    CU_ASSERT_PTR_EQUAL(sl, SENTINEL(starfold_indexed_slices_t));
    idx[1] = at0;
    CHECK_OK(starfold_indexed_slices_create(ctx, STARFOLD_VALUE_PER_REPLICA, 2, two, STARFOLD_FLOAT32, 4, 2, rows, vals, idx,
                                            &good_sl));
    float got_row[2] = { -1, -1 };
    int64_t got_idx[1] = { -1 };
    BAD(starfold_indexed_slices_read(good_sl, 5, got_row, sizeof got_row, got_idx, sizeof got_idx),
        STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT(got_row[0] == -1 && got_idx[0] == -1);
    BAD(starfold_indexed_slices_densify(good_sl, 5, &v), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_PTR_EQUAL(v, SENTINEL(starfold_value_t));

    /* Communication options. */
    starfold_communication_options_t co, co_before;
    memset(&co, 0x5e, sizeof co);
    co_before = co;
    BAD(starfold_communication_options_create(-1, 0, NULL, &co), STARFOLD_ERR_INVALID_ARGUMENT, "bytes_per_pack");
    BAD(starfold_communication_options_create(0, NAN, NULL, &co), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    starfold_communication_options_t bad_o;
    starfold_communication_options_init(&bad_o);
    bad_o.bytes_per_pack = -5;
    BAD(starfold_communication_options_merge(&bad_o, NULL, &co), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT(memcmp(&co, &co_before, sizeof co) == 0);
    starfold_communication_implementation_t impl = STARFOLD_COMMUNICATION_RING;
    BAD(starfold_communication_implementation_from_string("gloo", &impl), STARFOLD_ERR_NOT_FOUND, "gloo");
    CU_ASSERT_EQUAL(impl, STARFOLD_COMMUNICATION_RING);

    /* CrossDeviceOps. */
    BAD(starfold_cross_device_ops_create("no-such-algorithm", NULL, NULL, &ops), STARFOLD_ERR_NOT_FOUND, NULL);
    BAD(starfold_reduction_to_one_device_create(-7, &ops), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    BAD(starfold_hierarchical_copy_all_reduce_create(-1, &ops), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    BAD(starfold_cross_device_ops_choose_the_best(0, NULL, 1, &ops), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_PTR_EQUAL(ops, SENTINEL(starfold_cross_device_ops_t));
    starfold_algo_options_t ao;
    memset(&ao, 0x5e, sizeof ao);
    const starfold_algo_options_t ao_before = ao;
    BAD(starfold_cross_device_ops_options(NULL, &ao), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT(memcmp(&ao, &ao_before, sizeof ao) == 0);
    BAD(starfold_cross_device_ops_reduce(hc, STARFOLD_OP_SUM, good, &d9, NULL, &v), STARFOLD_ERR_NO_DEVICE, NULL);
    res[0] = res[1] = SENTINEL(starfold_value_t);
    const starfold_value_destination_pair_t pairs[2] = { { good, d0 }, { good, d9 } };
    BAD(starfold_cross_device_ops_batch_reduce(hc, STARFOLD_OP_SUM, 2, pairs, NULL, res), STARFOLD_ERR_NO_DEVICE, NULL);
    CU_ASSERT(res[0] == SENTINEL(starfold_value_t) && res[1] == SENTINEL(starfold_value_t));
    BAD(starfold_cross_device_ops_broadcast(hc, good, &d0, &v), STARFOLD_ERR_INVALID_ARGUMENT, "one tensor");
    BAD(starfold_cross_device_ops_gather(hc, good, 2, &d0, NULL, &v), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_PTR_EQUAL(v, SENTINEL(starfold_value_t));
    BAD(starfold_cross_device_ops_reduce_indexed_slices(hc, (starfold_op_t)99, good_sl, &d0, NULL, &sl),
        STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_PTR_EQUAL(sl, SENTINEL(starfold_indexed_slices_t));

    /* Strategies. */
    BAD(starfold_strategy_create_variable(s, (starfold_dtype_t)99, 4, xs, &v), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    starfold_variable_options_t vo;
    starfold_variable_options_init(&vo);
    vo.aggregation = (starfold_variable_aggregation_t)99;
    BAD(starfold_strategy_create_variable_with_options(s, STARFOLD_FLOAT32, 4, xs, &vo, &v), STARFOLD_ERR_INVALID_ARGUMENT,
        NULL);
    BAD(starfold_variable_read_value(good, &v), STARFOLD_ERR_INVALID_ARGUMENT, NULL); /* not a variable */
    BAD(starfold_strategy_reduce_to(s, (starfold_op_t)99, good, &d0, NULL, &v), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    BAD(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, good, &d9, NULL, &v), STARFOLD_ERR_NO_DEVICE, NULL);
    BAD(starfold_strategy_batch_reduce_to(s, STARFOLD_OP_SUM, 2, pairs, NULL, res), STARFOLD_ERR_NO_DEVICE, NULL);
    CU_ASSERT(res[0] == SENTINEL(starfold_value_t) && res[1] == SENTINEL(starfold_value_t));
    BAD(starfold_strategy_broadcast_to(s, good, &d0, &v), STARFOLD_ERR_INVALID_ARGUMENT, "one tensor");
    BAD(starfold_strategy_reduce(s, STARFOLD_OP_SUM, good, 1, &v), STARFOLD_ERR_INVALID_ARGUMENT, "axis 1");
    BAD(starfold_strategy_gather(s, good, 1, &v), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_PTR_EQUAL(v, SENTINEL(starfold_value_t));
    BAD(starfold_strategy_reduce_to_indexed_slices(s, (starfold_op_t)99, good_sl, &d0, NULL, &sl),
        STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_PTR_EQUAL(sl, SENTINEL(starfold_indexed_slices_t));
    starfold_indexed_slices_t sparse[2] = { SENTINEL(starfold_indexed_slices_t), SENTINEL(starfold_indexed_slices_t) };
    const starfold_mixed_pair_t mixed[2] = { { good, NULL, d0 }, { NULL, good_sl, d9 } };
    BAD(starfold_strategy_batch_reduce_to_mixed(s, STARFOLD_OP_SUM, 2, mixed, NULL, res, sparse), STARFOLD_ERR_NO_DEVICE,
        NULL);
    CU_ASSERT(res[0] == SENTINEL(starfold_value_t) && res[1] == SENTINEL(starfold_value_t));
    CU_ASSERT(sparse[0] == SENTINEL(starfold_indexed_slices_t) && sparse[1] == SENTINEL(starfold_indexed_slices_t));
    BAD(starfold_strategy_run_results(s, uneven_replica, NULL, &v), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_PTR_EQUAL(v, SENTINEL(starfold_value_t));
    /* The replica context's calls, from a replica function (outside one they refuse their NULL context). */
    BAD(starfold_replica_context_create_value(NULL, STARFOLD_FLOAT32, 1, xs, &v), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_PTR_EQUAL(v, SENTINEL(starfold_value_t));
    rc_fail_t rf;
    memset(&rf, 0, sizeof rf);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, failing_replica, &rf), STARFOLD_OK);
    for (int k = 0; k < 6; k++) {
        if (rf.bad[k]) fprintf(stderr, "replica-context case %d: status or output wrong on %d replicas\n", k, rf.bad[k]);
        CU_ASSERT_EQUAL(rf.bad[k], 0);
    }
    CU_ASSERT_EQUAL(starfold_strategy_run(s, noop_replica, NULL), STARFOLD_OK); /* the strategy goes on */

    /* Executor. */
    starfold_calibration_t cal;
    memset(&cal, 0x5e, sizeof cal);
    const starfold_calibration_t cal_before = cal;
    BAD(starfold_context_calibrate(NULL, 0, &cal), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT(memcmp(&cal, &cal_before, sizeof cal) == 0);
    submit_fixture_t f;
    starfold__init(&f, "reduce-to-one");
    starfold_view_t vin[4], vout[4];
    for (int i = 0; i < 4; i++) vin[i] = (starfold_view_t){ f.in[i], 0 }, vout[i] = (starfold_view_t){ f.out[i], 0 };
    vout[1].offset = 1u << 30;
    starfold_request_t req = SENTINEL(starfold_request_t);
    BAD(starfold_submit_views(ctx, f.graph, vin, vout, &req), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_PTR_EQUAL(req, SENTINEL(starfold_request_t));
    CU_ASSERT_EQUAL(starfold__untouched(&f), 0);
    CHECK_OK(starfold_submit(ctx, f.graph, f.in, f.out, &req));
    CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_OK);
    size_t count = 777;
    starfold_task_timing_t tim[1];
    memset(tim, 0x5e, sizeof tim);
    const starfold_task_timing_t tim_before = tim[0];
    BAD(starfold_request_timeline(NULL, tim, 1, &count), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    BAD(starfold_request_timeline(req, NULL, 1, &count), STARFOLD_ERR_INVALID_ARGUMENT, NULL);
    CU_ASSERT_EQUAL(count, 777);
    CU_ASSERT(memcmp(&tim[0], &tim_before, sizeof tim[0]) == 0);
    starfold_request_destroy(req);
    starfold__free(&f);

    starfold_indexed_slices_destroy(good_sl);
    starfold_cross_device_ops_destroy(hc);
    starfold_strategy_destroy(s);
    starfold_value_destroy(good);
}

/* ------------------------------------------------------------------------------------------------ */

static int suite_init(void)
{
    /* An honest device allocation failure needs a bounded memory node: 1 GiB of "device" memory. */
    setenv("STARPU_LIMIT_CPU_MEM", "1024", 0);
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = STARFOLD_DEVICES_CPU;
    o.num_devices = 2;
    return starfold_context_create(&o, &ctx) == STARFOLD_OK ? 0 : -1;
}

static int suite_cleanup(void)
{
    starfold_context_destroy(ctx);
    return 0;
}

int main(void)
{
    if (starfold__tu_begin() != 0) return 1;
    CU_pSuite s = CU_add_suite("bad input (no runtime)", NULL, NULL);
    CU_pSuite x = CU_add_suite("bad input (executor, CPU-only StarPU)", suite_init, suite_cleanup);
    if (!s || !x) return 1;
    if (!CU_add_test(s, "dtypes and ops", test_types) || !CU_add_test(s, "topology API", test_topology_api) ||
        !CU_add_test(s, "topology files", test_topology_files) || !CU_add_test(s, "compile", test_compile) ||
        !CU_add_test(s, "tensor specs", test_spec) || !CU_add_test(s, "hostile sizes and options", test_hostile_sizes) ||
        !CU_add_test(x, "context and vectors", test_context_and_vectors) || !CU_add_test(x, "submit", test_submit) ||
        !CU_add_test(x, "strategies", test_strategies) ||
        !CU_add_test(x, "output parameters on failure, every public function", test_out_params) ||
        !CU_add_test(x, "vector_destroy of another kind of handle", test_vector_destroy_other_handle))
        return 1;
    const unsigned failed = starfold__tu_run();
    printf("bad-input cases: %d\n", num_cases);
    if (num_cases < 40) {
        fprintf(stderr, "fewer than 40 bad-input cases\n");
        return 1;
    }
    return failed ? 1 : 0;
}
