/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Device memory limits: a graph that needs more memory than StarPU gives a device is refused before
 * anything runs, with STARFOLD_ERR_OUT_OF_MEMORY, and changes nothing; the library stays usable.
 *
 * CPU-only StarPU with STARPU_LIMIT_CPU_MEM=32 (MiB), set before StarPU starts. The replicas live in
 * the test's own memory (registered, not allocated by StarPU, so they do not count):
 *
 *     8 replicas x 24 MiB, hierarchical-copy: the two group sums on the roots are temporaries of
 *         24 MiB each -> 48 MiB on the one memory node -> OUT_OF_MEMORY, outputs still the sentinel
 *     the same graph at 256 KiB -> runs, every element right
 *
 * Then replicas StarPU allocated (starfold_vector_create(), counted under the limit), in place:
 *
 *     8 x 3 MiB = 24 MiB of replicas, halving-doubling's 7 x 3 MiB = 21 MiB of temporaries: under the
 *         32 MiB alone, past the 8 MiB the replicas leave -> OUT_OF_MEMORY, replicas unchanged
 *         (on a GPU the same graph, checked against the whole memory, waited forever in StarPU)
 *     the same graph at 256 KiB -> runs, every element right
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <starfold.h>

#include "util.h"
#include "runner.h"

static starfold_context_t ctx;
static starfold_topology_t topo;

/* The 8-replica SUM all-reduce of one tensor of @count float32, compiled with @algorithm on "host". */
static starfold_graph_t compile8(const char *algorithm, size_t count)
{
    static const int devices[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    const starfold_tensor_desc_t t = { STARFOLD_FLOAT32, count };
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = 8,
                                              .sources = devices, .num_tensors = 1, .tensors = &t };
    starfold_graph_t g = NULL;
    CU_ASSERT_EQUAL(starfold_graph_compile(topo, algorithm, &desc, NULL, &g), STARFOLD_OK);
    return g;
}

/* Runs an 8-replica SUM all-reduce of @count float32 with hierarchical-copy; returns its status. */
static starfold_status_t run(size_t count, int *right)
{
    const int n = 8;
    starfold_graph_t g = compile8("hierarchical-copy", count);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    starfold_status_t st;
    float *in[8], *out[8];
    starpu_data_handle_t hin[8], hout[8];
    for (int s = 0; s < n; s++) {
        in[s] = starfold_tools_alloc(STARFOLD_FLOAT32, count);
        out[s] = starfold_tools_alloc(STARFOLD_FLOAT32, count);
        CU_ASSERT_PTR_NOT_NULL_FATAL(in[s]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(out[s]);
        starfold_tools_fill(in[s], STARFOLD_FLOAT32, count, STARFOLD_OP_SUM, s, 0);
        starfold_tools_fill_sentinel(out[s], STARFOLD_FLOAT32, count);
        starpu_vector_data_register(&hin[s], STARPU_MAIN_RAM, (uintptr_t)in[s], (uint32_t)count, sizeof(float));
        starpu_vector_data_register(&hout[s], STARPU_MAIN_RAM, (uintptr_t)out[s], (uint32_t)count, sizeof(float));
    }
    starfold_request_t req = NULL;
    st = starfold_submit(ctx, g, hin, hout, &req);
    if (st == STARFOLD_OK) {
        st = starfold_request_wait(req);
        starfold_request_destroy(req);
    } else {
        CU_ASSERT_PTR_NULL(req);
    }
    for (int s = 0; s < n; s++) {
        starpu_data_unregister(hin[s]);
        starpu_data_unregister(hout[s]);
    }
    /* Right results, or (refused) the outputs untouched. */
    double *expect = malloc(sizeof(double) * count);
    CU_ASSERT_PTR_NOT_NULL_FATAL(expect);
    starfold_tools_reference(STARFOLD_OP_SUM, STARFOLD_FLOAT32, (const void *const *)in, n, count, expect);
    *right = 1;
    for (int s = 0; s < n; s++) {
        for (size_t i = 0; i < count; i++) {
            const double want = st == STARFOLD_OK ? expect[i] : (double)(float)STARFOLD_TOOLS_SENTINEL;
            if ((double)out[s][i] != want) {
                *right = 0;
                break;
            }
        }
        free(in[s]);
        free(out[s]);
    }
    free(expect);
    starfold_graph_destroy(g);
    return st;
}

static void test_refused_then_usable(void)
{
    int right = 0;
    starfold_status_t st = run((size_t)6 << 20, &right); /* 24 MiB per replica: 48 MiB of temporaries */
    CU_ASSERT_EQUAL(st, STARFOLD_ERR_OUT_OF_MEMORY);
    if (st == STARFOLD_ERR_OUT_OF_MEMORY) printf("\n    refused: %s\n", starfold_last_error());
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "nothing was submitted"));
    CU_ASSERT(right); /* outputs untouched */
    st = run((size_t)64 << 10, &right); /* 256 KiB per replica: fits */
    CU_ASSERT_EQUAL(st, STARFOLD_OK);
    CU_ASSERT(right);
}

/* In-place halving-doubling over 8 replicas of @count float32 made by starfold_vector_create(). */
static starfold_status_t run_homed(size_t count, int *right)
{
    const int n = 8;
    starfold_graph_t g = compile8("halving-doubling", count);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    starpu_data_handle_t h[8];
    float *host = starfold_tools_alloc(STARFOLD_FLOAT32, count);
    CU_ASSERT_PTR_NOT_NULL_FATAL(host);
    for (int s = 0; s < n; s++) {
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, s, STARFOLD_FLOAT32, count, &h[s]), STARFOLD_OK);
        for (size_t i = 0; i < count; i++) host[i] = (float)(s + 1);
        CU_ASSERT_EQUAL_FATAL(starfold_vector_write(h[s], host, count * sizeof(float)), STARFOLD_OK);
    }
    starfold_request_t req = NULL;
    starfold_status_t st = starfold_submit(ctx, g, h, h, &req);
    if (st == STARFOLD_OK) {
        st = starfold_request_wait(req);
        starfold_request_destroy(req);
    } else {
        CU_ASSERT_PTR_NULL(req);
    }
    /* The sum 36 everywhere, or (refused) each replica its own value still. */
    *right = 1;
    for (int s = 0; s < n; s++) {
        CU_ASSERT_EQUAL(starfold_vector_read(h[s], host, count * sizeof(float)), STARFOLD_OK);
        for (size_t i = 0; i < count && *right; i++) *right = host[i] == (st == STARFOLD_OK ? 36.0f : (float)(s + 1));
        starfold_vector_destroy(ctx, h[s]);
    }
    free(host);
    starfold_graph_destroy(g);
    return st;
}

static void test_homed_vectors_leave_too_little(void)
{
    int right = 0;
    starfold_status_t st = run_homed((size_t)3 << 18, &right); /* 3 MiB per replica */
    CU_ASSERT_EQUAL(st, STARFOLD_ERR_OUT_OF_MEMORY);
    if (st == STARFOLD_ERR_OUT_OF_MEMORY) printf("\n    refused: %s\n", starfold_last_error());
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "beside the graph's own vectors"));
    CU_ASSERT(right);
    st = run_homed((size_t)64 << 10, &right);
    CU_ASSERT_EQUAL(st, STARFOLD_OK);
    CU_ASSERT(right);
}

int main(void)
{
    setenv("STARPU_LIMIT_CPU_MEM", "32", 1); /* MiB, read when StarPU starts */
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = STARFOLD_DEVICES_CPU;
    o.num_devices = 8;
    if (starfold_context_create(&o, &ctx) != STARFOLD_OK) {
        fprintf(stderr, "test_limits: cannot create a CPU context: %s\n", starfold_last_error());
        return 1;
    }
    if (starfold_topology_open("host", &topo) != STARFOLD_OK) return 1;
    if (starfold__tu_begin() != 0) return 1;
    CU_pSuite s = CU_add_suite("memory limits (CPU-only, STARPU_LIMIT_CPU_MEM=32)", NULL, NULL);
    CU_add_test(s, "a graph over the limit is refused, then a smaller one runs", test_refused_then_usable);
    CU_add_test(s, "replicas StarPU holds leave too little: refused, then a smaller one runs",
                test_homed_vectors_leave_too_little);
    const unsigned failed = starfold__tu_run();
    starfold_topology_destroy(topo);
    starfold_context_destroy(ctx);
    return failed ? 1 : 0;
}
