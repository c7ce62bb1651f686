/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Fuzz harness for starfold_graph_compile(): the options and the collective description on arbitrary
 * bytes - the entry where "hostile sizes and options" found crashes (a division by zero), hangs
 * (millions of tasks) and a graph of no task returned as a success.
 *
 * Built two ways, like fuzz_topology.c: a libFuzzer target by `make fuzz`, a replayer of
 * tests/fuzz/corpus_compile/ by `make check`.
 *
 * Input layout (missing bytes read as 0):
 *
 *     byte 0     topology (host, dgx1-v100, pcie4, dgx1-p100) and collective kind
 *     byte 1     algorithm index (mod the registry) and op
 *     byte 2     sources (1 .. 8) and destinations (0 = the sources, else 1 .. 8, offset by byte 3)
 *     byte 3     first device and promote_integer_mean
 *     bytes 4..  options: num_packs, reduce_to_device, num_rings (4 bytes each, little-endian),
 *                bytes_per_pack, chunk_bytes (8 bytes each)
 *     then       tensors, 9 bytes each: a dtype byte and an 8-byte element count (at most 16)
 *     then       after 16 tensors, a 4-byte count N (at most 2^18): the list is N tensors long, the 16
 *                repeated in turn (a long list of small tensors made one task by one-pass: its
 *                checker once took minutes at 262144, pairing every destination with every other)
 *
 * Properties beyond "no crash, no sanitizer report, no hang": a success gives a graph with at least
 * one task (unless every tensor is empty) and at most STARFOLD_GRAPH_MAX_TASKS, which the invariant
 * checker passes (every graph: its ancestry is bounded at 64 MiB, a graph at the task limit checks
 * in well under a second); a failure gives an argument/support status with a detail, and leaves the
 * output untouched.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <starfold/graph.h>
#include <starfold/topology.h>

#define FUZZ_CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    const uint8_t *p;
    size_t left;
} reader_t;

static uint64_t take(reader_t *r, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++) {
        const uint64_t b = r->left ? (r->left--, *r->p++) : 0;
        v |= b << (8 * i);
    }
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const topologies[] = { "host", "dgx1-v100", "pcie4", "dgx1-p100" };
    if (size > 4096) return 0;
    reader_t r = { data, size };
    const unsigned b0 = (unsigned)take(&r, 1), b1 = (unsigned)take(&r, 1), b2 = (unsigned)take(&r, 1),
                   b3 = (unsigned)take(&r, 1);
    starfold_topology_t topo = NULL;
    if (starfold_topology_builtin(topologies[b0 % 4], &topo) != STARFOLD_OK) return 0;
    const int ndev = starfold_topology_num_devices(topo);

    int sources[8], dests[8];
    starfold_tensor_desc_t first16[16], *tensors = first16;
    starfold_collective_desc_t d;
    memset(&d, 0, sizeof d);
    d.kind = (b0 / 4) % 3 == 2 ? STARFOLD_COLL_BROADCAST : STARFOLD_COLL_REDUCE;
    d.op = (starfold_op_t)((b1 / 16) % (STARFOLD_OP_COUNT + 1)); /* one past the last op: an unknown op */
    const int first = (int)(b3 % 16);
    d.num_sources = 1 + (int)(b2 % 8);
    for (int i = 0; i < d.num_sources; i++) sources[i] = (first + i) % (ndev + 1); /* ndev: not a device */
    d.sources = sources;
    if (b2 / 8 % 9) {
        d.num_destinations = (int)(b2 / 8 % 9);
        for (int i = 0; i < d.num_destinations; i++) dests[i] = (first + 3 + i) % ndev;
        d.destinations = dests;
    }
    d.promote_integer_mean = (int)(b3 / 16) % 3;

    starfold_algo_options_t o;
    starfold_algo_options_init(&o);
    o.num_packs = (int)(int32_t)take(&r, 4);
    o.reduce_to_device = (int)(int32_t)take(&r, 4);
    o.num_rings = (int)(int32_t)take(&r, 4);
    o.bytes_per_pack = (size_t)take(&r, 8);
    o.chunk_bytes = (size_t)take(&r, 8);
    size_t nt = 0;
    while (r.left && nt < 16) {
        tensors[nt].dtype = (starfold_dtype_t)(take(&r, 1) % (STARFOLD_DTYPE_COUNT + 1));
        tensors[nt].count = (size_t)take(&r, 8);
        nt++;
    }
    if (nt == 0) tensors[nt++] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, 1 };
    if (nt == 16 && r.left) {
        const size_t total = (size_t)(take(&r, 4) % ((1u << 18) + 1));
        if (total > 16 && (tensors = malloc(sizeof *tensors * total)) != NULL) {
            for (size_t t = 0; t < total; t++) tensors[t] = first16[t % 16];
            nt = total;
        } else {
            tensors = first16;
        }
    }
    d.num_tensors = nt;
    d.tensors = tensors;

    const char *algorithm = starfold_algorithm_name((int)(b1 % 16) % starfold_algorithm_count());
    starfold_graph_t sentinel = (starfold_graph_t)(uintptr_t)0x1, g = sentinel;
    const starfold_status_t st = starfold_graph_compile(topo, algorithm, &d, &o, &g);
    if (st == STARFOLD_OK) {
        FUZZ_CHECK(g != sentinel && g != NULL);
        const size_t n = starfold_graph_num_tasks(g);
        size_t elements = 0;
        for (size_t t = 0; t < nt; t++) elements |= tensors[t].count;
        FUZZ_CHECK((n >= 1 || elements == 0) && n <= STARFOLD_GRAPH_MAX_TASKS); /* empty tensors: nothing to do */
        FUZZ_CHECK(starfold_graph_check(g) == STARFOLD_OK);
        starfold_graph_destroy(g);
    } else {
        FUZZ_CHECK(g == sentinel);
        FUZZ_CHECK(st == STARFOLD_ERR_INVALID_ARGUMENT || st == STARFOLD_ERR_NOT_SUPPORTED || st == STARFOLD_ERR_NOT_FOUND);
        FUZZ_CHECK(starfold_last_error()[0] != '\0');
    }
    starfold_topology_destroy(topo);
    if (tensors != first16) free(tensors);
    return 0;
}
