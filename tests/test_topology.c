/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The topology layer: built-in tables, queries, bisection, DOT in and out, bad input, rendering and
 * hwloc detection. No worker and no GPU needed: topologies are data.
 *
 * The DGX-1 facts checked below (see src/topology/builtin.c for the picture):
 *   doubled NVLink pairs 0-3 0-4 1-2 1-5 2-3 4-7 5-6 6-7, single 0-1 0-2 1-3 2-6 3-7 4-5 4-6 5-7;
 *   {0,1,2,3} and {4,5,6,7} are the two 4-cliques, so they are the best halves.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* setenv */
#endif
#include "config.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <starfold/topology.h>
#include <starfold/graph.h>
#include <starfold/model.h>

#include "topology/topology.h" /* private layout: the reference count */
#include "runner.h"

/* ------------------------------------------------------------------------------------------------
 * Helpers
 */

static starfold_topology_t builtin(const char *name)
{
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_builtin(name, &t), STARFOLD_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    return t;
}

/* A path under $SF_TEST_OUT (or "."); the buffer is reused by the next call. */
static const char *out_path(const char *file)
{
    static char path[1024];
    const char *dir = getenv("SF_TEST_OUT");
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : ".", file);
    return path;
}

static int error_mentions(const char *needle) { return strstr(starfold_last_error(), needle) != NULL; }

static int count_kind(starfold_topology_t t, starfold_link_kind_t kind)
{
    int n = 0;
    starfold_link_t l;
    for (int i = 0; i < starfold_topology_num_links(t); i++)
        if (starfold_topology_link(t, i, &l) == STARFOLD_OK && l.kind == kind) n++;
    return n;
}

/* NVLink lanes ending at @device. */
static int nvlink_lanes(starfold_topology_t t, int device)
{
    int lanes = 0;
    starfold_link_t l;
    for (int i = 0; i < starfold_topology_num_links(t); i++)
        if (starfold_topology_link(t, i, &l) == STARFOLD_OK && l.kind == STARFOLD_LINK_NVLINK &&
            (l.a == device || l.b == device))
            lanes += l.lanes;
    return lanes;
}

/* Same name, devices and links (in the same order). */
static void assert_same(starfold_topology_t x, starfold_topology_t y)
{
    CU_ASSERT_STRING_EQUAL(starfold_topology_name(x), starfold_topology_name(y));
    CU_ASSERT_EQUAL_FATAL(starfold_topology_num_devices(x), starfold_topology_num_devices(y));
    for (int d = 0; d < starfold_topology_num_devices(x); d++) {
        CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(x, d), starfold_topology_device_name(y, d));
        CU_ASSERT_EQUAL(starfold_topology_device_kind(x, d), starfold_topology_device_kind(y, d));
        CU_ASSERT_EQUAL(starfold_topology_device_socket(x, d), starfold_topology_device_socket(y, d));
    }
    CU_ASSERT_EQUAL_FATAL(starfold_topology_num_links(x), starfold_topology_num_links(y));
    for (int i = 0; i < starfold_topology_num_links(x); i++) {
        starfold_link_t a, b;
        CU_ASSERT_EQUAL_FATAL(starfold_topology_link(x, i, &a), STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(starfold_topology_link(y, i, &b), STARFOLD_OK);
        CU_ASSERT(a.a == b.a && a.b == b.b && a.kind == b.kind && a.lanes == b.lanes);
        CU_ASSERT_DOUBLE_EQUAL(a.bandwidth_GBps, b.bandwidth_GBps, 0);
        CU_ASSERT_DOUBLE_EQUAL(a.latency_us, b.latency_us, 0);
    }
}

static void assert_groups(starfold_topology_t t, int n, const int *devices, const int *want)
{
    int group[64];
    memset(group, 0xff, sizeof group);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_bisect(t, n, devices, group), STARFOLD_OK);
    for (int i = 0; i < n; i++) CU_ASSERT_EQUAL(group[i], want[i]);
}

/* n devices, every pair one link of @GBps. */
static starfold_topology_t uniform(int n, double GBps)
{
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_create("uniform", n, &t), STARFOLD_OK);
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            starfold_link_t l = { .a = a, .b = b, .kind = STARFOLD_LINK_PCIE, .lanes = 1, .bandwidth_GBps = GBps };
            CU_ASSERT_EQUAL_FATAL(starfold_topology_add_link(t, &l), STARFOLD_OK);
        }
    return t;
}

/* ------------------------------------------------------------------------------------------------
 * Built-in tables
 */

static void test_builtin_names(void)
{
    const char *const *names = starfold_topology_builtin_names();
    const char *want[] = { "dgx1-v100", "dgx1-p100", "pcie4", "emulated", "host" };
    int n = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(names);
    for (; names[n]; n++) {
        CU_ASSERT_FATAL(n < 5);
        CU_ASSERT_STRING_EQUAL(names[n], want[n]);
        starfold_topology_t t = builtin(names[n]);
        CU_ASSERT_STRING_EQUAL(starfold_topology_name(t), names[n]);
        CU_ASSERT_EQUAL(starfold_topology_validate(t), STARFOLD_OK);
        starfold_topology_destroy(t);
    }
    CU_ASSERT_EQUAL(n, 5);

    starfold_topology_t t = (starfold_topology_t)&n; /* sentinel: must stay untouched on error */
    CU_ASSERT_EQUAL(starfold_topology_builtin("dgx2", &t), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_PTR_EQUAL(t, (starfold_topology_t)&n);
    CU_ASSERT(error_mentions("dgx2"));
    CU_ASSERT_EQUAL(starfold_topology_builtin(NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_builtin("host", NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    t = builtin("DGX1-V100"); /* names are case-insensitive */
    CU_ASSERT_STRING_EQUAL(starfold_topology_name(t), "dgx1-v100");
    starfold_topology_destroy(t);
}

static void test_dgx1_v100(void)
{
    starfold_topology_t t = builtin("dgx1-v100");
    CU_ASSERT_EQUAL(starfold_topology_num_devices(t), 8);
    CU_ASSERT_EQUAL(starfold_topology_num_links(t), 28); /* complete: 16 NVLink + 12 across the sockets */
    CU_ASSERT_EQUAL(count_kind(t, STARFOLD_LINK_NVLINK), 16);
    CU_ASSERT_EQUAL(count_kind(t, STARFOLD_LINK_INTER_SOCKET), 12);
    for (int d = 0; d < 8; d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%d", d);
        CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, d), name);
        CU_ASSERT_EQUAL(starfold_topology_device_kind(t, d), STARFOLD_DEVICE_GPU);
        CU_ASSERT_EQUAL(starfold_topology_device_socket(t, d), d / 4);
        CU_ASSERT_EQUAL(nvlink_lanes(t, d), 6);
    }
    static const int doubled[][2] = { { 0, 3 }, { 0, 4 }, { 1, 2 }, { 1, 5 }, { 2, 3 }, { 4, 7 }, { 5, 6 }, { 6, 7 } };
    static const int single[][2] = { { 0, 1 }, { 0, 2 }, { 1, 3 }, { 2, 6 }, { 3, 7 }, { 4, 5 }, { 4, 6 }, { 5, 7 } };
    for (int i = 0; i < 8; i++) {
        starfold_link_t l;
        CU_ASSERT_EQUAL(starfold_topology_best_link(t, doubled[i][1], doubled[i][0], &l), STARFOLD_OK);
        CU_ASSERT(l.kind == STARFOLD_LINK_NVLINK && l.lanes == 2 && l.a == doubled[i][0]);
        CU_ASSERT_DOUBLE_EQUAL(l.bandwidth_GBps, 50, 0);
        CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, single[i][0], single[i][1]), 25, 0);
    }
    starfold_link_t l;
    CU_ASSERT_EQUAL(starfold_topology_best_link(t, 0, 5, &l), STARFOLD_OK);
    CU_ASSERT_EQUAL(l.kind, STARFOLD_LINK_INTER_SOCKET);
    CU_ASSERT_DOUBLE_EQUAL(l.bandwidth_GBps, 6, 0);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 0, 5), 6, 0);
    starfold_topology_destroy(t);
}

static void test_dgx1_p100(void)
{
    starfold_topology_t t = builtin("dgx1-p100");
    starfold_link_t l;
    CU_ASSERT_EQUAL(starfold_topology_num_devices(t), 8);
    CU_ASSERT_EQUAL(count_kind(t, STARFOLD_LINK_NVLINK), 16);
    for (int d = 0; d < 8; d++) CU_ASSERT_EQUAL(nvlink_lanes(t, d), 4);
    for (int i = 0; i < starfold_topology_num_links(t); i++) {
        CU_ASSERT_EQUAL(starfold_topology_link(t, i, &l), STARFOLD_OK);
        if (l.kind == STARFOLD_LINK_NVLINK) {
            CU_ASSERT_EQUAL(l.lanes, 1);
            CU_ASSERT_DOUBLE_EQUAL(l.bandwidth_GBps, 20, 0);
        }
    }
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 0, 3), 20, 0);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 3, 4), 6, 0);
    starfold_topology_destroy(t);
}

static void test_pcie4_emulated_host(void)
{
    starfold_topology_t t = builtin("pcie4");
    CU_ASSERT_EQUAL(starfold_topology_num_devices(t), 4);
    CU_ASSERT_EQUAL(starfold_topology_num_links(t), 6);
    CU_ASSERT_EQUAL(count_kind(t, STARFOLD_LINK_PCIE), 6);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 0, 1), 12, 0);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 3, 2), 12, 0);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 0, 2), 10, 0);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 1, 3), 10, 0);
    starfold_topology_destroy(t);

    t = builtin("emulated");
    CU_ASSERT_EQUAL(starfold_topology_num_devices(t), 8);
    CU_ASSERT_EQUAL(count_kind(t, STARFOLD_LINK_HOST), 28);
    CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, 7), "opencl7");
    CU_ASSERT_EQUAL(starfold_topology_device_kind(t, 7), STARFOLD_DEVICE_GPU);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 2, 6), 5, 0);
    starfold_topology_destroy(t);

    t = builtin("host");
    CU_ASSERT_EQUAL(starfold_topology_num_devices(t), 8);
    CU_ASSERT_EQUAL(count_kind(t, STARFOLD_LINK_HOST), 28);
    CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, 0), "cpu0");
    CU_ASSERT_EQUAL(starfold_topology_device_kind(t, 3), STARFOLD_DEVICE_CPU);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 1, 2), 10, 0);
    starfold_topology_destroy(t);
}

/* ------------------------------------------------------------------------------------------------
 * Building and querying by hand
 */

/* starfold_topology_ranks(): one device per rank, shm inside a node, network between nodes. */
static void test_ranks(void)
{
    const int node_of[5] = { 0, 0, 1, 1, 2 };
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_ranks(5, node_of, NULL, NULL, &t), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_num_devices(t), 5);
    CU_ASSERT_EQUAL(starfold_topology_num_links(t), 10);
    CU_ASSERT_STRING_EQUAL(starfold_topology_name(t), "5 ranks on 3 nodes");
    for (int r = 0; r < 5; r++) {
        char name[16];
        snprintf(name, sizeof name, "rank %d", r);
        CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, r), name);
        CU_ASSERT_EQUAL(starfold_topology_device_socket(t, r), node_of[r]);
        CU_ASSERT_EQUAL(starfold_topology_device_kind(t, r), STARFOLD_DEVICE_GPU);
        CU_ASSERT_EQUAL(starfold_topology_device_rank(t, r), 0);
    }
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++) {
            if (a == b) continue;
            starfold_link_t l;
            CU_ASSERT_EQUAL_FATAL(starfold_topology_best_link(t, a, b, &l), STARFOLD_OK);
            const int same = node_of[a] == node_of[b];
            CU_ASSERT_EQUAL(l.kind, same ? STARFOLD_LINK_SHM : STARFOLD_LINK_NETWORK);
            CU_ASSERT_DOUBLE_EQUAL(l.bandwidth_GBps, same ? 25.0 : 12.5, 1e-12);
            CU_ASSERT_DOUBLE_EQUAL(l.latency_us, same ? 0.5 : 2.0, 1e-12);
            CU_ASSERT(!starfold_topology_same_memory(t, a, b));
        }
    CU_ASSERT_EQUAL(starfold_topology_validate(t), STARFOLD_OK);
    starfold_topology_destroy(t);

    /* NULL node_of: one rank per node; given links kept, their a, b and kind ignored. */
    const starfold_link_t shm = { 7, 9, STARFOLD_LINK_NVLINK, 0, 30.0, 0.5 }, net = { 0, 0, STARFOLD_LINK_PCIE, 2, 3.0, 5.0 };
    CU_ASSERT_EQUAL_FATAL(starfold_topology_ranks(3, NULL, &shm, &net, &t), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_topology_name(t), "3 ranks on 3 nodes");
    for (int k = 0; k < starfold_topology_num_links(t); k++) {
        starfold_link_t l;
        CU_ASSERT_EQUAL_FATAL(starfold_topology_link(t, k, &l), STARFOLD_OK);
        CU_ASSERT_EQUAL(l.kind, STARFOLD_LINK_NETWORK);
        CU_ASSERT_EQUAL(l.lanes, 2);
        CU_ASSERT_DOUBLE_EQUAL(l.bandwidth_GBps, 3.0, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(l.latency_us, 5.0, 1e-12);
    }
    starfold_topology_destroy(t);
    const int one_node[2] = { 0, 0 };
    CU_ASSERT_EQUAL_FATAL(starfold_topology_ranks(2, one_node, &shm, &net, &t), STARFOLD_OK);
    starfold_link_t l;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_link(t, 0, &l), STARFOLD_OK);
    CU_ASSERT(l.kind == STARFOLD_LINK_SHM && l.lanes == 1 && l.a == 0 && l.b == 1);
    CU_ASSERT_DOUBLE_EQUAL(l.bandwidth_GBps, 30.0, 1e-12);
    starfold_topology_destroy(t);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_ranks(1, NULL, NULL, NULL, &t), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_num_links(t), 0);
    starfold_topology_destroy(t);

    /* Bad arguments: nothing made. */
    t = NULL;
    const int out_of_range[2] = { 0, 2 }, negative[2] = { -1, 0 };
    starfold_link_t bad = net;
    CU_ASSERT_EQUAL(starfold_topology_ranks(0, NULL, NULL, NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_ranks(-1, NULL, NULL, NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_ranks(STARFOLD_MAX_DEVICES + 1, NULL, NULL, NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_ranks(2, out_of_range, NULL, NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "rank 1: node 2"));
    CU_ASSERT_EQUAL(starfold_topology_ranks(2, negative, NULL, NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    bad.bandwidth_GBps = -1;
    CU_ASSERT_EQUAL(starfold_topology_ranks(2, NULL, NULL, &bad, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "network bandwidth"));
    bad.bandwidth_GBps = 0;
    CU_ASSERT_EQUAL(starfold_topology_ranks(2, NULL, &bad, NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    bad = net;
    bad.latency_us = -0.5;
    CU_ASSERT_EQUAL(starfold_topology_ranks(2, NULL, &bad, NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "shm latency"));
    CU_ASSERT_EQUAL(starfold_topology_ranks(2, NULL, NULL, NULL, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(t);
}

/* A device's rank: CPU devices of different ranks share no memory; the DOT text keeps it. */
static void test_device_rank(void)
{
    const char *dot = "graph c { a [kind=cpu, rank=0]; b [kind=cpu]; c [kind=cpu, rank=1]; a -- b [kind=host, bandwidth=20]; "
                      "b -- c [kind=network, bandwidth=5]; }";
    starfold_topology_t t = NULL, back = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_load_string(dot, "ranks.dot", &t), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_device_rank(t, 0), 0);
    CU_ASSERT_EQUAL(starfold_topology_device_rank(t, 2), 1);
    CU_ASSERT_EQUAL(starfold_topology_device_rank(t, 3), -1);
    CU_ASSERT_EQUAL(starfold_topology_device_rank(NULL, 0), -1);
    CU_ASSERT(starfold_topology_same_memory(t, 0, 1));
    CU_ASSERT(!starfold_topology_same_memory(t, 1, 2));
    char path[] = "/tmp/starfold-rank-XXXXXX";
    const int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    CU_ASSERT_EQUAL(starfold_topology_write_dot(t, path), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_load(path, &back), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_device_rank(back, 2), 1);
    CU_ASSERT(!starfold_topology_same_memory(back, 1, 2));
    unlink(path);
    starfold_topology_destroy(back);
    starfold_topology_destroy(t);
    CU_ASSERT_EQUAL(starfold_topology_load_string("graph c { a [rank=-1]; }", "bad.dot", &t), STARFOLD_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "rank must be"));
}

/*
 * A device's memory: GPU devices given one memory share it (the StarPU workers of one GPU), of one
 * rank only; CPU devices share the host memory whatever it says; the DOT text keeps it.
 *
 *     g0, g1: gpu, memory 1      g2: gpu, memory 2      g3: gpu (its own)      g4: gpu, memory 1, rank 1
 */
static void test_device_memory(void)
{
    const char *dot = "graph m { g0 [memory=1]; g1 [memory=1]; g2 [memory=2]; g3; g4 [memory=1, rank=1]; "
                      "g0 -- g1 [kind=host, bandwidth=800]; g1 -- g2 [bandwidth=50]; g2 -- g3 [bandwidth=50]; "
                      "g3 -- g4 [kind=network, bandwidth=5]; }";
    starfold_topology_t t = NULL, back = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_load_string(dot, "memory.dot", &t), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_device_memory(t, 0), 1);
    CU_ASSERT_EQUAL(starfold_topology_device_memory(t, 3), -1);
    CU_ASSERT_EQUAL(starfold_topology_device_memory(t, 5), -1);
    CU_ASSERT_EQUAL(starfold_topology_device_memory(NULL, 0), -1);
    CU_ASSERT(starfold_topology_same_memory(t, 0, 1));
    CU_ASSERT(!starfold_topology_same_memory(t, 1, 2));
    CU_ASSERT(!starfold_topology_same_memory(t, 2, 3));
    CU_ASSERT(!starfold_topology_same_memory(t, 0, 4)); /* same memory number, another rank */
    CU_ASSERT(starfold_topology_same_memory(t, 3, 3));
    char path[] = "/tmp/starfold-memory-XXXXXX";
    const int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    CU_ASSERT_EQUAL(starfold_topology_write_dot(t, path), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_load(path, &back), STARFOLD_OK);
    for (int d = 0; d < 5; d++) CU_ASSERT_EQUAL(starfold_topology_device_memory(back, d), starfold_topology_device_memory(t, d));
    CU_ASSERT(starfold_topology_same_memory(back, 0, 1));
    unlink(path);
    starfold_topology_destroy(back);
    /* A subset keeps it; setting it checks its arguments and changes nothing on a refusal. */
    CU_ASSERT_EQUAL_FATAL(starfold_topology_subset(t, 2, &back), STARFOLD_OK);
    CU_ASSERT(starfold_topology_same_memory(back, 0, 1));
    starfold_topology_destroy(back);
    CU_ASSERT_EQUAL(starfold_topology_set_device_memory(t, 2, -2), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_set_device_memory(t, 5, 1), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_set_device_memory(NULL, 0, 1), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_device_memory(t, 2), 2);
    CU_ASSERT_EQUAL(starfold_topology_set_device_memory(t, 2, 1), STARFOLD_OK);
    CU_ASSERT(starfold_topology_same_memory(t, 1, 2));
    starfold_topology_destroy(t);
    CU_ASSERT_EQUAL(starfold_topology_load_string("graph c { a [memory=-2]; }", "bad.dot", &t), STARFOLD_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "memory must be"));
    CU_ASSERT_EQUAL(starfold_topology_load_string("graph c { a [memory=x]; }", "bad.dot", &t), STARFOLD_ERR_PARSE);
}

static void test_build_and_query(void)
{
    starfold_topology_t t = NULL, keep;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_create("hand", 3, &t), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, 2), "dev2");
    CU_ASSERT_EQUAL(starfold_topology_device_socket(t, 2), -1);
    CU_ASSERT_EQUAL(starfold_topology_set_device(t, 1, "left", STARFOLD_DEVICE_CPU, 1), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_set_device(t, 1, NULL, STARFOLD_DEVICE_CPU, 0), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, 1), "left"); /* NULL keeps the name */
    CU_ASSERT_EQUAL(starfold_topology_device_socket(t, 1), 0);

    /* b < a is normalised; two parallel links: the faster one is the best */
    starfold_link_t slow = { .a = 2, .b = 0, .kind = STARFOLD_LINK_PCIE, .lanes = 1, .bandwidth_GBps = 10,
                             .latency_us = 1 };
    starfold_link_t fast = { .a = 0, .b = 2, .kind = STARFOLD_LINK_NVLINK, .lanes = 2, .bandwidth_GBps = 40 };
    CU_ASSERT_EQUAL(starfold_topology_add_link(t, &slow), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_add_link(t, &fast), STARFOLD_OK);
    starfold_link_t l;
    CU_ASSERT_EQUAL(starfold_topology_link(t, 0, &l), STARFOLD_OK);
    CU_ASSERT(l.a == 0 && l.b == 2 && l.kind == STARFOLD_LINK_PCIE);
    CU_ASSERT_EQUAL(starfold_topology_best_link(t, 2, 0, &l), STARFOLD_OK);
    CU_ASSERT(l.kind == STARFOLD_LINK_NVLINK && l.lanes == 2);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 0, 2), 40, 0);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 0, 1), 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 0, 0), 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 0, 9), 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(NULL, 0, 1), 0, 0);
    l.a = 77;
    CU_ASSERT_EQUAL(starfold_topology_best_link(t, 0, 1, &l), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(l.a, 77);
    CU_ASSERT_EQUAL(starfold_topology_best_link(t, 0, 3, &l), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_link(t, 2, &l), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_link(t, -1, &l), STARFOLD_ERR_INVALID_ARGUMENT);

    /* rejected links change nothing */
    const starfold_link_t bad[] = {
        { .a = 0, .b = 0, .lanes = 1, .bandwidth_GBps = 1 },                  /* same device */
        { .a = 0, .b = 3, .lanes = 1, .bandwidth_GBps = 1 },                  /* no device 3 */
        { .a = -1, .b = 1, .lanes = 1, .bandwidth_GBps = 1 },
        { .a = 0, .b = 1, .lanes = 0, .bandwidth_GBps = 1 },                  /* lanes >= 1 */
        { .a = 0, .b = 1, .lanes = 1, .bandwidth_GBps = 0 },                  /* bandwidth > 0 */
        { .a = 0, .b = 1, .lanes = 1, .bandwidth_GBps = -5 },
        { .a = 0, .b = 1, .lanes = 1, .bandwidth_GBps = INFINITY },           /* finite */
        { .a = 0, .b = 1, .lanes = 1, .bandwidth_GBps = 1, .latency_us = -1 }, /* latency >= 0 */
        { .a = 0, .b = 1, .kind = (starfold_link_kind_t)9, .lanes = 1, .bandwidth_GBps = 1 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CU_ASSERT_EQUAL(starfold_topology_add_link(t, &bad[i]), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_num_links(t), 2);
    CU_ASSERT_EQUAL(starfold_topology_add_link(t, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_set_device(t, 3, "x", STARFOLD_DEVICE_GPU, 0), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_set_device(t, 0, "", STARFOLD_DEVICE_GPU, 0), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_set_device(t, 0, "x", STARFOLD_DEVICE_GPU, -2), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_set_device(t, 0, "x", (starfold_device_kind_t)5, 0),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, 0), "dev0");

    /* device 1 has no link: disconnected, and the detail names it */
    CU_ASSERT_EQUAL(starfold_topology_validate(t), STARFOLD_ERR_TOPOLOGY);
    CU_ASSERT(error_mentions("device 1 (left)"));
    CU_ASSERT_EQUAL(starfold_topology_validate(NULL), STARFOLD_ERR_INVALID_ARGUMENT);

    /* accessors on NULL or out of range */
    CU_ASSERT_STRING_EQUAL(starfold_topology_name(NULL), "");
    CU_ASSERT_EQUAL(starfold_topology_num_devices(NULL), 0);
    CU_ASSERT_EQUAL(starfold_topology_num_links(NULL), 0);
    CU_ASSERT_PTR_NULL(starfold_topology_device_name(t, 3));
    CU_ASSERT_EQUAL(starfold_topology_device_kind(t, -1), STARFOLD_DEVICE_GPU);
    CU_ASSERT_EQUAL(starfold_topology_device_socket(t, 5), -1);

    keep = t;
    CU_ASSERT_EQUAL(starfold_topology_create("x", 0, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_create("x", STARFOLD_MAX_DEVICES + 1, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_create(NULL, 2, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_create("x", 2, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_EQUAL(t, keep);
    starfold_topology_destroy(t);
}

static void test_link_kinds(void)
{
    starfold_link_kind_t k = STARFOLD_LINK_HOST;
    for (int i = 0; i <= (int)STARFOLD_LINK_HOST; i++) {
        CU_ASSERT_EQUAL(starfold_link_kind_from_string(starfold_link_kind_name((starfold_link_kind_t)i), &k),
                        STARFOLD_OK);
        CU_ASSERT_EQUAL(k, i);
    }
    CU_ASSERT_STRING_EQUAL(starfold_link_kind_name(STARFOLD_LINK_INTER_SOCKET), "inter-socket");
    CU_ASSERT_STRING_EQUAL(starfold_link_kind_name((starfold_link_kind_t)42), "unknown");
    const char *aliases[] = { "qpi", "UPI", "Sys" };
    for (int i = 0; i < 3; i++) {
        k = STARFOLD_LINK_HOST;
        CU_ASSERT_EQUAL(starfold_link_kind_from_string(aliases[i], &k), STARFOLD_OK);
        CU_ASSERT_EQUAL(k, STARFOLD_LINK_INTER_SOCKET);
    }
    CU_ASSERT_EQUAL(starfold_link_kind_from_string("NVLink", &k), STARFOLD_OK);
    CU_ASSERT_EQUAL(k, STARFOLD_LINK_NVLINK);
    CU_ASSERT_EQUAL(starfold_link_kind_from_string("infiniband", &k), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(k, STARFOLD_LINK_NVLINK);
    CU_ASSERT_EQUAL(starfold_link_kind_from_string(NULL, &k), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_link_kind_from_string("pcie", NULL), STARFOLD_ERR_INVALID_ARGUMENT);
}

static void test_subset(void)
{
    starfold_topology_t t = builtin("dgx1-v100"), s = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_subset(t, 4, &s), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_num_devices(s), 4);
    CU_ASSERT_EQUAL(starfold_topology_num_links(s), 6); /* the socket-0 clique */
    CU_ASSERT_EQUAL(count_kind(s, STARFOLD_LINK_NVLINK), 6);
    CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(s, 3), "gpu3");
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(s, 0, 3), 50, 0);
    CU_ASSERT_EQUAL(starfold_topology_validate(s), STARFOLD_OK);
    starfold_topology_destroy(s);

    CU_ASSERT_EQUAL_FATAL(starfold_topology_subset(t, 8, &s), STARFOLD_OK);
    assert_same(t, s);
    starfold_topology_destroy(s);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_subset(t, 1, &s), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_num_links(s), 0);
    CU_ASSERT_EQUAL(starfold_topology_validate(s), STARFOLD_OK); /* one device is connected */
    starfold_topology_destroy(s);

    s = t;
    CU_ASSERT_EQUAL(starfold_topology_subset(t, 0, &s), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_subset(t, 9, &s), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_subset(NULL, 2, &s), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_subset(t, 2, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_EQUAL(s, t);
    starfold_topology_destroy(t);
}

static void test_refcount(void)
{
    starfold_topology_t t = builtin("pcie4");
    CU_ASSERT_EQUAL(t->refcount, 1);
    CU_ASSERT_PTR_EQUAL(starfold_topology_retain(t), t);
    CU_ASSERT_PTR_EQUAL(starfold_topology_retain(t), t);
    CU_ASSERT_EQUAL(t->refcount, 3);
    starfold_topology_destroy(t);
    starfold_topology_destroy(t);
    CU_ASSERT_EQUAL(t->refcount, 1);
    CU_ASSERT_EQUAL(starfold_topology_num_devices(t), 4); /* still alive */
    starfold_topology_destroy(t);                          /* freed (ASan/valgrind would see a leak or reuse) */
    CU_ASSERT_PTR_NULL(starfold_topology_retain(NULL));
    starfold_topology_destroy(NULL);
}

/* ------------------------------------------------------------------------------------------------
 * Bisection
 */

static void test_bisect_dgx1(void)
{
    const int all[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, halves[8] = { 0, 0, 0, 0, 1, 1, 1, 1 };
    starfold_topology_t t = builtin("dgx1-v100");
    assert_groups(t, 8, all, halves);
    /* positions, not device numbers: {4, 0} are joined by a doubled link, so are {5, 1} */
    const int some[4] = { 4, 0, 5, 1 }, pairs[4] = { 0, 0, 1, 1 };
    assert_groups(t, 4, some, pairs);
    starfold_topology_destroy(t);
    t = builtin("dgx1-p100");
    assert_groups(t, 8, all, halves);
    starfold_topology_destroy(t);
}

static void test_bisect_uniform_and_small(void)
{
    const int all[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    starfold_topology_t t = builtin("host");
    assert_groups(t, 8, all, (const int[]){ 0, 0, 0, 0, 1, 1, 1, 1 });
    assert_groups(t, 6, all, (const int[]){ 0, 0, 0, 1, 1, 1 });
    assert_groups(t, 5, all, (const int[]){ 0, 0, 1, 1, 1 }); /* odd: floor(n/2) in group 0 */
    assert_groups(t, 3, all, (const int[]){ 0, 1, 1 });
    assert_groups(t, 2, all, (const int[]){ 0, 1 });
    assert_groups(t, 1, all, (const int[]){ 0 });
    const int reversed[4] = { 7, 6, 5, 4 };
    assert_groups(t, 4, reversed, (const int[]){ 0, 0, 1, 1 });
    starfold_topology_destroy(t);

    t = builtin("pcie4");
    assert_groups(t, 4, all, (const int[]){ 0, 0, 1, 1 });
    assert_groups(t, 4, (const int[]){ 0, 2, 1, 3 }, (const int[]){ 0, 1, 0, 1 });
    starfold_topology_destroy(t);
}

/*
 * A ring 0 - 2 - 1 - 3 - 0 where 0=2 and 1=3 are fat: the best halves {0,2} {1,3} interleave.
 *
 *     0 ===== 2
 *     |       |
 *     3 ===== 1
 */
static void test_bisect_not_contiguous(void)
{
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_create("interleaved", 4, &t), STARFOLD_OK);
    const int ring[][3] = { { 0, 2, 100 }, { 2, 1, 10 }, { 1, 3, 100 }, { 3, 0, 10 } };
    for (int i = 0; i < 4; i++) {
        starfold_link_t l = { .a = ring[i][0], .b = ring[i][1], .lanes = 1, .bandwidth_GBps = ring[i][2] };
        CU_ASSERT_EQUAL_FATAL(starfold_topology_add_link(t, &l), STARFOLD_OK);
    }
    assert_groups(t, 4, (const int[]){ 0, 1, 2, 3 }, (const int[]){ 0, 1, 0, 1 });
    /* device 3 first: position 0 is always in group 0, so {3, 1} is group 0 */
    assert_groups(t, 4, (const int[]){ 3, 0, 1, 2 }, (const int[]){ 0, 1, 0, 1 });
    starfold_topology_destroy(t);
}

static void test_bisect_large_and_errors(void)
{
    /* 24 devices: beyond the exhaustive search, contiguous halves */
    starfold_topology_t t = uniform(24, 1);
    int devices[24], group[24], want[24];
    for (int i = 0; i < 24; i++) devices[i] = i, want[i] = i >= 12;
    assert_groups(t, 24, devices, want);
    /* 20 devices: still exhaustive, uniform gives contiguous halves */
    for (int i = 0; i < 20; i++) want[i] = i >= 10;
    assert_groups(t, 20, devices, want);

    group[0] = 42;
    CU_ASSERT_EQUAL(starfold_topology_bisect(t, 0, devices, group), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_bisect(t, 25, devices, group), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_bisect(t, 2, (const int[]){ 3, 3 }, group), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_bisect(t, 2, (const int[]){ 0, 24 }, group), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_bisect(NULL, 2, devices, group), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_bisect(t, 2, NULL, group), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_bisect(t, 2, devices, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(group[0], 42);
    starfold_topology_destroy(t);
}

/* ------------------------------------------------------------------------------------------------
 * DOT
 */

static void test_dot_round_trip(void)
{
    for (const char *const *n = starfold_topology_builtin_names(); *n; n++) {
        char file[64];
        starfold_topology_t t = builtin(*n), u = NULL;
        snprintf(file, sizeof file, "topology-%s.dot", *n);
        CU_ASSERT_EQUAL_FATAL(starfold_topology_write_dot(t, out_path(file)), STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(starfold_topology_load(out_path(file), &u), STARFOLD_OK);
        assert_same(t, u);
        starfold_topology_destroy(u);
        starfold_topology_destroy(t);
    }
}

/* Odd names, parallel links, an unnamed device and a fractional bandwidth survive the trip. */
static void test_dot_round_trip_hand_made(void)
{
    starfold_topology_t t = NULL, u = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_create("my \"box\", 3 devices", 3, &t), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_set_device(t, 0, "gpu 0", STARFOLD_DEVICE_GPU, 1), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_set_device(t, 1, "gpu 0", STARFOLD_DEVICE_CPU, -1), STARFOLD_OK);
    const starfold_link_t links[] = {
        { .a = 0, .b = 1, .kind = STARFOLD_LINK_NVLINK, .lanes = 3, .bandwidth_GBps = 0.1, .latency_us = 0.3 },
        { .a = 1, .b = 0, .kind = STARFOLD_LINK_PCIE, .lanes = 1, .bandwidth_GBps = 1.0 / 3.0, .latency_us = 0 },
        { .a = 2, .b = 1, .kind = STARFOLD_LINK_HOST, .lanes = 1, .bandwidth_GBps = 1e-3, .latency_us = 12.5 },
    };
    for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(starfold_topology_add_link(t, &links[i]), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_write_dot(t, out_path("topology-hand.dot")), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_load(out_path("topology-hand.dot"), &u), STARFOLD_OK);
    assert_same(t, u);
    starfold_topology_destroy(u);
    starfold_topology_destroy(t);
}

static void test_dot_graph_files(void)
{
    for (const char *const *n = starfold_topology_builtin_names(); *n; n++) {
        char path[1024];
        starfold_topology_t t = builtin(*n), u = NULL, v = NULL;
        snprintf(path, sizeof path, "%s/graphs/%s.dot", SF_SRCDIR, *n);
        CU_ASSERT_EQUAL_FATAL(starfold_topology_load(path, &u), STARFOLD_OK);
        assert_same(t, u);
        CU_ASSERT_EQUAL_FATAL(starfold_topology_open(path, &v), STARFOLD_OK);
        assert_same(t, v);
        starfold_topology_destroy(v);
        starfold_topology_destroy(u);
        starfold_topology_destroy(t);
    }
}

static void test_dot_format(void)
{
    /* defaults, ids that reorder the nodes, name/label, aliases, a digraph, comments */
    const char *dot = "/* two sockets */\n"
                      "digraph box {\n"
                      "  name = \"test box\"\n"
                      "  edge [kind=qpi, bandwidth=6]\n"
                      "  b [id=1, label=\"second\", kind=cpu, socket=1]\n"
                      "  a [id=0, name=first, label=ignored]   // name wins over label\n"
                      "  c [id=2]\n"
                      "  a -> b [kind=nvlink, bandwidth=20, lanes=2, latency=0.5]\n"
                      "  b -> c\n"
                      "  a -> b [kind=PCIe, bandwidth=12]   # a parallel link\n"
                      "}\n";
    starfold_topology_t t = NULL;
    starfold_link_t l;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_load_string(dot, "box.dot", &t), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_topology_name(t), "test box");
    CU_ASSERT_EQUAL(starfold_topology_num_devices(t), 3);
    CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, 0), "first");
    CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, 1), "second");
    CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, 2), "c");
    CU_ASSERT_EQUAL(starfold_topology_device_kind(t, 1), STARFOLD_DEVICE_CPU);
    CU_ASSERT_EQUAL(starfold_topology_device_kind(t, 2), STARFOLD_DEVICE_GPU);
    CU_ASSERT_EQUAL(starfold_topology_device_socket(t, 1), 1);
    CU_ASSERT_EQUAL(starfold_topology_device_socket(t, 0), -1);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_num_links(t), 3);
    CU_ASSERT_EQUAL(starfold_topology_link(t, 0, &l), STARFOLD_OK);
    CU_ASSERT(l.a == 0 && l.b == 1 && l.kind == STARFOLD_LINK_NVLINK && l.lanes == 2);
    CU_ASSERT_DOUBLE_EQUAL(l.latency_us, 0.5, 0);
    CU_ASSERT_EQUAL(starfold_topology_link(t, 1, &l), STARFOLD_OK);
    CU_ASSERT(l.a == 1 && l.b == 2 && l.kind == STARFOLD_LINK_INTER_SOCKET && l.lanes == 1);
    CU_ASSERT_DOUBLE_EQUAL(l.bandwidth_GBps, 6, 0);
    CU_ASSERT_DOUBLE_EQUAL(l.latency_us, 1, 0); /* default latency */
    CU_ASSERT_EQUAL(starfold_topology_link(t, 2, &l), STARFOLD_OK);
    CU_ASSERT_EQUAL(l.kind, STARFOLD_LINK_PCIE);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 1, 0), 20, 0);
    starfold_topology_destroy(t);

    /* no ids: order of appearance; anonymous graph: named after the file; kind defaults to nvlink */
    CU_ASSERT_EQUAL_FATAL(starfold_topology_load_string("graph { z -- y [bandwidth=1] }", "dir/two.dot", &t),
                          STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_topology_name(t), "two");
    CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, 0), "z");
    CU_ASSERT_EQUAL(starfold_topology_link(t, 0, &l), STARFOLD_OK);
    CU_ASSERT(l.kind == STARFOLD_LINK_NVLINK && l.lanes == 1);
    starfold_topology_destroy(t);

    /* a single device needs no link */
    CU_ASSERT_EQUAL_FATAL(starfold_topology_load_string("graph one { solo }", NULL, &t), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_num_devices(t), 1);
    starfold_topology_destroy(t);
}

/* ------------------------------------------------------------------------------------------------
 * Bad input: the exact status, the file and line in the detail, the output untouched
 */

static const struct {
    const char *what, *dot;
    starfold_status_t status;
    const char *detail;   /* must appear in starfold_last_error() */
} bad_dot[] = {
    { "syntax error", "graph g {\n  a -- b [bandwidth=1]\n  b -- ;\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:3: syntax error near ';'" },
    { "unterminated", "graph g {\n  a -- b [bandwidth=1\n", STARFOLD_ERR_PARSE, "bad.dot:" },
    { "empty text", "  \n", STARFOLD_ERR_PARSE, "bad.dot: no graph" },
    { "two graphs", "graph a { x }\ngraph b { y }\n", STARFOLD_ERR_PARSE, "more than one graph" },
    { "three graphs", "graph a { x }\ngraph b { y }\ngraph c { z }\n", STARFOLD_ERR_PARSE, "more than one graph" },
    { "text after the graph", "graph a { x }\n}\n", STARFOLD_ERR_PARSE, "bad.dot: text after the end of the graph" },
    { "unknown node attribute", "graph g {\n  a [colour=red]\n  a -- b [bandwidth=1]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:2: unknown node attribute 'colour'" },
    { "unknown edge attribute", "graph g {\n  a -- b\n    [bandwidth=1, speed=3]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:3: unknown edge attribute 'speed'" },
    { "unknown declared attribute", "graph g {\n node [colour=red]\n a -- b [bandwidth=1]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:2: unknown node attribute 'colour'" },
    { "unknown graph attribute", "graph g {\n  rank=same\n  a -- b [bandwidth=1]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:2: unknown graph attribute 'rank'" },
    { "zero bandwidth", "graph g {\n  a -- b [bandwidth=1]\n  b -- c [bandwidth=0]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:3: link b -- c: bandwidth must be a number in [1e-06, 1e+06] (GB/s), got '0'" },
    { "denormal bandwidth", "graph g {\n  a -- b [bandwidth=\"1e-310\"]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:2: link a -- b: bandwidth must be a number in [1e-06, 1e+06] (GB/s), got '1e-310'" },
    { "bandwidth too large", "graph g {\n  a -- b [bandwidth=10000000]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:2: link a -- b: bandwidth must be a number in [1e-06, 1e+06] (GB/s), got '10000000'" },
    { "bandwidth DBL_MAX", "graph g {\n  a -- b [bandwidth=\"1.7976931348623157e308\"]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:2: link a -- b: bandwidth must be a number in" },
    { "latency too large", "graph g {\n  a -- b [bandwidth=1, latency=10000000]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:2: link a -- b: latency must be a number in [0, 1e+06] (us), got '10000000'" },
    { "negative bandwidth", "graph g {\n  a -- b [bandwidth=-2.5]\n}\n", STARFOLD_ERR_PARSE, "bad.dot:2:" },
    { "non-numeric bandwidth", "graph g {\n  a -- b [bandwidth=fast]\n}\n", STARFOLD_ERR_PARSE, "'fast'" },
    { "infinite bandwidth", "graph g {\n  a -- b [bandwidth=inf]\n}\n", STARFOLD_ERR_PARSE, "bad.dot:2:" },
    { "missing bandwidth", "graph g {\n  a -- b [bandwidth=1]\n  a -- b\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:3: link a -- b: bandwidth (GB/s) is required" },
    { "negative latency", "graph g {\n  a -- b [bandwidth=1, latency=-1]\n}\n", STARFOLD_ERR_PARSE, "latency" },
    { "fractional lanes", "graph g {\n  a -- b [bandwidth=1, lanes=1.5]\n}\n", STARFOLD_ERR_PARSE, "lanes" },
    { "zero lanes", "graph g {\n  a -- b [bandwidth=1, lanes=0]\n}\n", STARFOLD_ERR_PARSE, "lanes" },
    { "bad link kind", "graph g {\n  a -- b [bandwidth=1, kind=ethernet]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:2: link a -- b: unknown kind 'ethernet'" },
    { "bad device kind", "graph g {\n  a [kind=tpu]\n  a -- b [bandwidth=1]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:2: node 'a': kind must be gpu or cpu" },
    { "bad socket", "graph g {\n  a [socket=x]\n  a -- b [bandwidth=1]\n}\n", STARFOLD_ERR_PARSE, "socket" },
    { "self loop", "graph g {\n  a -- b [bandwidth=1]\n  b -- b [bandwidth=1]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:3: link b -- b joins a device to itself" },
    { "disconnected", "graph g {\n  a -- b [bandwidth=1]\n  c -- d [bandwidth=1]\n  e\n}\n", STARFOLD_ERR_TOPOLOGY,
      "bad.dot:3: disconnected: device 2 (node 'c')" },
    { "no node", "graph g { }\n", STARFOLD_ERR_TOPOLOGY, "no node" },
    { "duplicate ids", "graph g {\n  a [id=0]\n  b [id=1]\n  c [id=1]\n  a -- b -- c [bandwidth=1]\n}\n",
      STARFOLD_ERR_PARSE, "bad.dot:4: node 'c' has id 1, like node 'b'" },
    { "some ids missing", "graph g {\n  a [id=0]\n  b\n  a -- b [bandwidth=1]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:3: node 'b' has no id" },
    { "id out of range", "graph g {\n  a [id=0]\n  b [id=2]\n  a -- b [bandwidth=1]\n}\n", STARFOLD_ERR_PARSE,
      "bad.dot:3: node 'b': id must be an integer in 0..1" },
};

static void test_dot_bad_input(void)
{
    for (size_t i = 0; i < sizeof bad_dot / sizeof bad_dot[0]; i++) {
        starfold_topology_t t = (starfold_topology_t)&bad_dot[i];
        starfold_status_t st = starfold_topology_load_string(bad_dot[i].dot, "bad.dot", &t);
        if (getenv("SF_TEST_VERBOSE") || st != bad_dot[i].status || !error_mentions(bad_dot[i].detail))
            fprintf(stderr, "\n  %s: status %d, detail \"%s\"\n", bad_dot[i].what, (int)st, starfold_last_error());
        CU_ASSERT_EQUAL(st, bad_dot[i].status);
        CU_ASSERT(error_mentions(bad_dot[i].detail));
        CU_ASSERT_PTR_EQUAL(t, (starfold_topology_t)&bad_dot[i]);
    }
    /* cgraph's parser state does not leak from a failed read into the next one */
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL(starfold_topology_load_string("graph ok {\n a -- b [bandwidth=1] }", "ok.dot", &t), STARFOLD_OK);
    starfold_topology_destroy(t);
    CU_ASSERT_EQUAL(starfold_topology_load_string("graph g {\n\n a -- ;\n}", "again.dot", &t), STARFOLD_ERR_PARSE);
    CU_ASSERT(error_mentions("again.dot:3:"));
}

/*
 * Hostile files: what cgraph would choke on, and what is no file at all, is refused before cgraph
 * sees it, with the limit in the message; nothing blocks (a FIFO with no writer), nothing reads
 * forever (/dev/zero).
 */
static void expect_file_refused(const char *path, starfold_status_t status, const char *detail)
{
    starfold_topology_t t = (starfold_topology_t)&t;
    const starfold_status_t st = starfold_topology_load(path, &t);
    if (st != status || !error_mentions(detail))
        fprintf(stderr, "\n  %s: status %d, detail \"%s\"\n", path, (int)st, starfold_last_error());
    CU_ASSERT_EQUAL(st, status);
    CU_ASSERT(error_mentions(detail));
    CU_ASSERT_PTR_EQUAL(t, (starfold_topology_t)&t);
}

static void expect_text_refused(const char *text, starfold_status_t status, const char *detail)
{
    starfold_topology_t t = NULL;
    const starfold_status_t st = starfold_topology_load_string(text, "big.dot", &t);
    if (st != status || !error_mentions(detail))
        fprintf(stderr, "\n  status %d, detail \"%s\"\n", (int)st, starfold_last_error());
    CU_ASSERT_EQUAL(st, status);
    CU_ASSERT(error_mentions(detail));
    CU_ASSERT_PTR_NULL(t);
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(text, 1, len, f), len);
    fclose(f);
}

static void test_dot_hostile_files(void)
{
    /* Not regular files. */
    const char *dir = out_path("");
    expect_file_refused(dir, STARFOLD_ERR_IO, "a directory, not a topology file (only regular files are read)");
    const char *fifo = out_path("topology.fifo");
    remove(fifo);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    expect_file_refused(fifo, STARFOLD_ERR_IO, "a FIFO, not a topology file");
    /* Opened by name (no '/' or '.'): looking for the file must not open it, or the FIFO blocks. */
    char cwd[4096];
    CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof cwd));
    CU_ASSERT_EQUAL_FATAL(chdir(out_path("")), 0);
    rename("topology.fifo", "topologyfifo");
    starfold_topology_t t_open = NULL;
    CU_ASSERT_EQUAL(starfold_topology_open("topologyfifo", &t_open), STARFOLD_ERR_IO);
    CU_ASSERT(error_mentions("topologyfifo: a FIFO, not a topology file"));
    CU_ASSERT_PTR_NULL(t_open);
    remove("topologyfifo");
    CU_ASSERT_EQUAL_FATAL(chdir(cwd), 0);
    remove(fifo);
    expect_file_refused("/dev/zero", STARFOLD_ERR_IO, "/dev/zero: a character device, not a topology file");
    expect_file_refused("/dev/urandom", STARFOLD_ERR_IO, "/dev/urandom: a character device");

    /* A NUL byte, and text after it. */
    static const char nul[] = "graph g {\n  a -- b [bandwidth=1]\n}\n\0garbage";
    const char *path = out_path("topology-nul.dot");
    write_file(path, nul, sizeof nul - 1);
    expect_file_refused(path, STARFOLD_ERR_PARSE, ":4: a NUL byte at offset 35: a topology file is text");

    /* Larger than the limit (sparse: nothing is written). */
    path = out_path("topology-huge.dot");
    write_file(path, "graph g { a -- b [bandwidth=1] }\n", 34);
    CU_ASSERT_EQUAL_FATAL(truncate(path, (off_t)STARFOLD_TOPOLOGY_FILE_MAX + 1), 0);
    expect_file_refused(path, STARFOLD_ERR_IO, "8388609 bytes, more than the 8388608 bytes a topology file may have");
    remove(path);

    /* One token longer than the limit: a comment, a quoted label, a name. */
    char *text = malloc(65010 + 128);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    const char *forms[3][2] = { { "graph g {\n a -- b [bandwidth=1]\n # ", "\n}\n" },
                                { "graph g {\n a -- b [bandwidth=1, label=\"", "\"]\n}\n" },
                                { "graph g {\n a -- ", " [bandwidth=1]\n}\n" } };
    for (int k = 0; k < 3; k++) {
        char *p = text;
        p += sprintf(p, "%s", forms[k][0]);
        memset(p, 'x', 65000);
        p += 65000;
        p += sprintf(p, "%s", "xxxxxxxxxx");
        sprintf(p, "%s", forms[k][1]);
        /* 65,010 bytes is within the limit: the token is read. */
        starfold_topology_t t = NULL;
        CU_ASSERT_EQUAL(starfold_topology_load_string(text, "long.dot", &t), STARFOLD_OK);
        starfold_topology_destroy(t);
    }
    free(text);
    text = malloc((size_t)STARFOLD_TOPOLOGY_TOKEN_MAX + 128);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char *p = text + sprintf(text, "graph g {\n a -- b [bandwidth=1]\n # ");
    memset(p, 'x', STARFOLD_TOPOLOGY_TOKEN_MAX);
    sprintf(p + STARFOLD_TOPOLOGY_TOKEN_MAX, "\n}\n");
    expect_text_refused(text, STARFOLD_ERR_PARSE, "big.dot:3: a comment of 65538 bytes, longer than the 65536 bytes");
    p = text + sprintf(text, "graph g {\n a -- \"");
    memset(p, 'y', STARFOLD_TOPOLOGY_TOKEN_MAX);
    sprintf(p + STARFOLD_TOPOLOGY_TOKEN_MAX, "\" [bandwidth=1]\n}\n");
    expect_text_refused(text, STARFOLD_ERR_PARSE, "big.dot:2: a quoted string of 65538 bytes");
    free(text);

    /* Too many edges (parallel ones: cgraph recurses once per edge), too deep a nesting. */
    const size_t edge_len = sizeof "  a -- b [bandwidth=1]\n" - 1;
    text = malloc(32 + (size_t)(STARFOLD_TOPOLOGY_EDGES_MAX + 1) * edge_len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    p = text + sprintf(text, "graph g {\n");
    for (int i = 0; i <= STARFOLD_TOPOLOGY_EDGES_MAX; i++) p += sprintf(p, "  a -- b [bandwidth=1]\n");
    sprintf(p, "}\n");
    expect_text_refused(text, STARFOLD_ERR_PARSE, "big.dot:16386: more than 16384 edges, the most a topology file");
    free(text);
    text = malloc(2 * 1001 + 64);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    p = text + sprintf(text, "graph g ");
    memset(p, '{', 1001);
    p += 1001;
    p += sprintf(p, " a -- b [bandwidth=1] ");
    memset(p, '}', 1001);
    p[1001] = '\0';
    expect_text_refused(text, STARFOLD_ERR_PARSE, "big.dot:1: braces nested more than 1000 deep");
    text[8] = ' '; /* 1000 deep: read */
    text[strlen(text) - 1] = '\0';
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL(starfold_topology_load_string(text, "deep.dot", &t), STARFOLD_OK);
    starfold_topology_destroy(t);
    free(text);
}

/*
 * Each device knows the line of its first mention, found in one pass over the text: here 64 devices
 * first named after 100,000 lines of comments (a pass per device took 20 times longer).
 */
static void test_dot_device_lines(void)
{
    const int comments = 100000;
    char *text = malloc((size_t)comments * 8 + 64 * 40 + 64);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char *p = text + sprintf(text, "graph g {\n");
    for (int i = 0; i < comments; i++) p += sprintf(p, " # d%d\n", i % 64);
    for (int i = 1; i < 64; i++) p += sprintf(p, " d%d -- d%d [bandwidth=1]\n", i - 1, i);
    sprintf(p, "}\n");
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_load_string(text, "lines.dot", &t), STARFOLD_OK);
    CU_ASSERT_EQUAL(t->devices[0].line, comments + 2);
    for (int i = 1; i < 64; i++) CU_ASSERT_EQUAL(t->devices[i].line, comments + 1 + i);
    starfold_topology_destroy(t);
    free(text);
}

static void test_dot_too_many_devices(void)
{
    char dot[16384] = "graph big {\n";
    for (int i = 0; i < STARFOLD_MAX_DEVICES; i++) {
        char line[64];
        snprintf(line, sizeof line, "  n%d -- n%d [bandwidth=1]\n", i, i + 1);
        strcat(dot, line);
    }
    strcat(dot, "}\n");
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL(starfold_topology_load_string(dot, "big.dot", &t), STARFOLD_ERR_PARSE);
    char want[32];
    snprintf(want, sizeof want, "%d nodes", STARFOLD_MAX_DEVICES + 1);
    CU_ASSERT(error_mentions(want));
    CU_ASSERT_PTR_NULL(t);
}

static void test_bad_arguments_and_files(void)
{
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL(starfold_topology_load(NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_load("x.dot", NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_load_string(NULL, "x", &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_load_string("graph { a }", "x", NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_load("/nonexistent/topology.dot", &t), STARFOLD_ERR_IO);
    CU_ASSERT(error_mentions("/nonexistent/topology.dot"));
    CU_ASSERT_EQUAL(starfold_topology_open("/nonexistent/topology.dot", &t), STARFOLD_ERR_IO);
    CU_ASSERT_EQUAL(starfold_topology_open("no-such-machine", &t), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(starfold_topology_open("", &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_open(NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_detect(NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(t);

    /* a file with an error names itself and the line */
    const char *path = out_path("topology-bad.dot");
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("graph g {\n  a -- b [bandwidth=1]\n  b -- c [bandwidth=1, color=red, foo=3]\n}\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(starfold_topology_load(path, &t), STARFOLD_ERR_PARSE);
    char want[1100];
    snprintf(want, sizeof want, "%s:3: unknown edge attribute 'foo'", path);
    CU_ASSERT(error_mentions(want));
    CU_ASSERT_PTR_NULL(t);

    t = builtin("host");
    CU_ASSERT_EQUAL(starfold_topology_write_dot(t, "/nonexistent/dir/t.dot"), STARFOLD_ERR_IO);
    CU_ASSERT_EQUAL(starfold_topology_write_dot(NULL, "t.dot"), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_write_dot(t, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_topology_render(t, out_path("topology.bmp")), STARFOLD_ERR_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(starfold_topology_render(NULL, out_path("topology.svg")), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_topology_destroy(t);
}

/* ------------------------------------------------------------------------------------------------
 * Rendering, open(), detect()
 */

static long file_head(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fclose(f);
    return len;
}

static void test_render(void)
{
    char head[256];
    starfold_topology_t t = builtin("dgx1-v100");
    CU_ASSERT_EQUAL_FATAL(starfold_topology_render(t, out_path("topology-dgx1-v100.svg")), STARFOLD_OK);
    CU_ASSERT(file_head(out_path("topology-dgx1-v100.svg"), head, sizeof head) > 1000);
    CU_ASSERT(strstr(head, "<?xml") != NULL || strstr(head, "<svg") != NULL);
    CU_ASSERT_EQUAL_FATAL(starfold_topology_render(t, out_path("topology-dgx1-v100.png")), STARFOLD_OK);
    CU_ASSERT(file_head(out_path("topology-dgx1-v100.png"), head, sizeof head) > 1000);
    CU_ASSERT_EQUAL(memcmp(head, "\x89PNG", 4), 0);
    CU_ASSERT_EQUAL(starfold_topology_render(t, out_path("topology-rendered.dot")), STARFOLD_OK);
    starfold_topology_t u = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_load(out_path("topology-rendered.dot"), &u), STARFOLD_OK);
    assert_same(t, u);
    starfold_topology_destroy(u);
    starfold_topology_destroy(t);
}

static void test_open_and_detect(void)
{
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_open("pcie4", &t), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_topology_name(t), "pcie4");
    starfold_topology_destroy(t);

    t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_detect(&t), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_validate(t), STARFOLD_OK);
    const int n = starfold_topology_num_devices(t);
    CU_ASSERT(n >= 1 && n <= STARFOLD_MAX_DEVICES);
    if (!strncmp(starfold_topology_name(t), "host (detected, ", 16)) { /* no accelerator here */
        CU_ASSERT(n >= 2 && n <= 8);
        CU_ASSERT_EQUAL(starfold_topology_device_kind(t, 0), STARFOLD_DEVICE_CPU);
        CU_ASSERT_EQUAL(count_kind(t, STARFOLD_LINK_HOST), n * (n - 1) / 2);
    }
    starfold_topology_destroy(t);

    t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_open("Detect", &t), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_num_devices(t), n);
    starfold_topology_destroy(t);
}

/*
 * detect() on a described machine: hwloc reads this XML instead of probing (HWLOC_XMLFILE).
 *
 *   socket 0: host bridge - PCIe switch - 03:00.0 (seen as cuda1, nvml1 and opencl0d1)
 *                                       - 04:00.0 (cuda0, nvml0, opencl0d0)
 *             host bridge - 00:1f.0 an ASPEED BMC display with a "card0" OS device: no accelerator
 *   socket 1: host bridge - 80:00.0 (cuda2)
 *                         - 81:00.0 an NVIDIA device no backend reported
 *   NVLinkBandwidth (when @nvlink): nvml1 <-> nvml0 at 50000 MB/s
 */
#define SETS(c, n) "cpuset=\"" c "\" complete_cpuset=\"" c "\" nodeset=\"" n "\" complete_nodeset=\"" n "\""
#define PKG(i, c, n)                                                                                                  \
    "<object type=\"Package\" os_index=\"" i "\" " SETS(c, n) " gp_index=\"1" i "0\">"                                \
    "<object type=\"NUMANode\" os_index=\"" i "\" " SETS(c, n) " gp_index=\"1" i "1\" local_memory=\"1073741824\"/>"  \
    "<object type=\"Core\" os_index=\"" i "\" " SETS(c, n) " gp_index=\"1" i "2\">"                                   \
    "<object type=\"PU\" os_index=\"" i "\" " SETS(c, n) " gp_index=\"1" i "3\"/></object>\n"
#define NVIDIA "pci_type=\"0302 [10de:1db1] [10de:1212] a1\""
#define OSDEV(gp, name, sub, type)                                                                                    \
    "<object type=\"OSDev\" gp_index=\"" gp "\" name=\"" name "\" subtype=\"" sub "\" osdev_type=\"" type "\""

static const char *fake_machine(int nvlink)
{
    static char xml[8192];
    snprintf(xml, sizeof xml, "%s%s</topology>\n",
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
             "<topology version=\"2.0\">\n"
             "<object type=\"Machine\" os_index=\"0\" " SETS("0x3", "0x3")
             " allowed_cpuset=\"0x3\" allowed_nodeset=\"0x3\" gp_index=\"1\">\n"
             PKG("0", "0x1", "0x1")
             "<object type=\"Bridge\" gp_index=\"100\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[00-04]\">\n"
             "<object type=\"Bridge\" gp_index=\"101\" bridge_type=\"1-1\" depth=\"1\" bridge_pci=\"0000:[02-04]\""
             " pci_busid=\"0000:00:01.0\" pci_type=\"0604 [10b5:8747] [0000:0000] ca\">\n"
             "<object type=\"PCIDev\" gp_index=\"200\" pci_busid=\"0000:03:00.0\" " NVIDIA ">"
             OSDEV("201", "cuda1", "CUDA", "5") "/>" OSDEV("202", "nvml1", "NVML", "1") "/>"
             OSDEV("203", "opencl0d1", "OpenCL", "5") "><info name=\"OpenCLDeviceType\" value=\"GPU\"/></object>"
             "</object>\n"
             "<object type=\"PCIDev\" gp_index=\"210\" pci_busid=\"0000:04:00.0\" " NVIDIA ">"
             OSDEV("211", "cuda0", "CUDA", "5") "/>" OSDEV("212", "nvml0", "NVML", "1") "/>"
             OSDEV("213", "opencl0d0", "OpenCL", "5") "><info name=\"OpenCLDeviceType\" value=\"GPU\"/></object>"
             "</object>\n"
             "</object>\n"
             "<object type=\"PCIDev\" gp_index=\"102\" pci_busid=\"0000:00:1f.0\""
             " pci_type=\"0300 [1a03:2000] [1a03:2000] 41\">"
             "<object type=\"OSDev\" gp_index=\"103\" name=\"card0\" osdev_type=\"1\"/></object>\n"
             "</object></object>\n"
             PKG("1", "0x2", "0x2")
             "<object type=\"Bridge\" gp_index=\"110\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[80-81]\">\n"
             "<object type=\"PCIDev\" gp_index=\"220\" pci_busid=\"0000:80:00.0\" " NVIDIA ">"
             OSDEV("221", "cuda2", "CUDA", "5") "/></object>\n"
             "<object type=\"PCIDev\" gp_index=\"230\" pci_busid=\"0000:81:00.0\" " NVIDIA "/>\n"
             "</object></object></object>\n",
             nvlink ? "<distances2 type=\"OSDev\" nbobjs=\"2\" kind=\"9\" name=\"NVLinkBandwidth\" indexing=\"gp\">"
                      "<indexes length=\"8\">202 212 </indexes><u64values length=\"16\">0 50000 50000 0 </u64values>"
                      "</distances2>\n"
                    : "");
    return xml;
}

static starfold_topology_t detect_from(const char *xml, const char *file)
{
    starfold_topology_t t = NULL;
    FILE *f = fopen(out_path(file), "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(xml, f);
    fclose(f);
    setenv("HWLOC_XMLFILE", out_path(file), 1);
    starfold_status_t st = starfold_topology_detect(&t);
    unsetenv("HWLOC_XMLFILE");
    CU_ASSERT_EQUAL_FATAL(st, STARFOLD_OK);
    return t;
}

static void assert_link(starfold_topology_t t, int a, int b, starfold_link_kind_t kind, int lanes, double GBps)
{
    starfold_link_t l;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_best_link(t, a, b, &l), STARFOLD_OK);
    CU_ASSERT_EQUAL(l.kind, kind);
    CU_ASSERT_EQUAL(l.lanes, lanes);
    CU_ASSERT_DOUBLE_EQUAL(l.bandwidth_GBps, GBps, 0);
}

static void test_detect_described_machine(void)
{
    starfold_topology_t t = detect_from(fake_machine(1), "topology-fake-nvlink.xml");
    CU_ASSERT_STRING_EQUAL(starfold_topology_name(t), "detected (4 GPUs)");
    CU_ASSERT_EQUAL_FATAL(starfold_topology_num_devices(t), 4);
    /* PCI bus order; one device per PCI function, named after its CUDA view */
    const char *names[] = { "cuda1", "cuda0", "cuda2", "pci0000:81:00.0" };
    for (int d = 0; d < 4; d++) {
        CU_ASSERT_STRING_EQUAL(starfold_topology_device_name(t, d), names[d]);
        CU_ASSERT_EQUAL(starfold_topology_device_socket(t, d), d / 2);
        CU_ASSERT_EQUAL(starfold_topology_device_kind(t, d), STARFOLD_DEVICE_GPU);
    }
    CU_ASSERT_EQUAL(starfold_topology_num_links(t), 6);
    assert_link(t, 0, 1, STARFOLD_LINK_NVLINK, 2, 50);
    assert_link(t, 0, 2, STARFOLD_LINK_INTER_SOCKET, 1, 6);
    assert_link(t, 1, 3, STARFOLD_LINK_INTER_SOCKET, 1, 6);
    assert_link(t, 2, 3, STARFOLD_LINK_PCIE, 1, 10); /* same socket, no common switch */
    CU_ASSERT_EQUAL(starfold_topology_validate(t), STARFOLD_OK);
    starfold_topology_destroy(t);

    t = detect_from(fake_machine(0), "topology-fake-pcie.xml");
    assert_link(t, 0, 1, STARFOLD_LINK_PCIE, 1, 12); /* no NVLink: the shared switch */
    starfold_topology_destroy(t);
}

/* ------------------------------------------------------------------------------------------------ */

int main(void)
{
    static const starfold__tu_entry_t tests[] = {
        { "builtin", "names", test_builtin_names },
        { "builtin", "dgx1-v100", test_dgx1_v100 },
        { "builtin", "dgx1-p100", test_dgx1_p100 },
        { "builtin", "pcie4, emulated, host", test_pcie4_emulated_host },
        { "model", "build and query", test_build_and_query },
        { "model", "link kinds", test_link_kinds },
        { "model", "subset", test_subset },
        { "model", "ranks: one device per rank", test_ranks },
        { "model", "device ranks: memory, DOT", test_device_rank },
        { "model", "device memories: GPUs sharing one, DOT", test_device_memory },
        { "model", "retain/destroy", test_refcount },
        { "bisect", "dgx1", test_bisect_dgx1 },
        { "bisect", "uniform, odd, n=1, pcie4", test_bisect_uniform_and_small },
        { "bisect", "best halves not contiguous", test_bisect_not_contiguous },
        { "bisect", "beyond 20 devices, errors", test_bisect_large_and_errors },
        { "dot", "round trip of every built-in", test_dot_round_trip },
        { "dot", "round trip of odd names and parallel links", test_dot_round_trip_hand_made },
        { "dot", "graphs/*.dot equal the built-ins", test_dot_graph_files },
        { "dot", "format: ids, defaults, aliases", test_dot_format },
        { "errors", "bad DOT input", test_dot_bad_input },
        { "errors", "more than STARFOLD_MAX_DEVICES devices", test_dot_too_many_devices },
        { "errors", "hostile files: not regular, NUL, limits", test_dot_hostile_files },
        { "dot", "device lines in one pass", test_dot_device_lines },
        { "errors", "bad arguments and files", test_bad_arguments_and_files },
        { "output", "render svg and png", test_render },
        { "output", "open and detect", test_open_and_detect },
        { "output", "detect a described machine", test_detect_described_machine },
    };
    return starfold__tu_main_grouped(tests, SF_TU_COUNT(tests));
}
