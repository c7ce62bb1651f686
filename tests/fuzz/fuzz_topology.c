/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Fuzz harness for the topology-file reader: starfold_topology_load_string() on arbitrary bytes.
 *
 * Built two ways (Makefile.am):
 *  - `make fuzz`: with clang -fsanitize=fuzzer,address,undefined, a libFuzzer target;
 *  - `make check`: with the ordinary compiler and tests/fuzz/replay.c as main(), replaying every file
 *    of tests/fuzz/corpus_topology/ (seeds and the inputs of past crashes: a regression suite).
 *
 * Properties checked beyond "no crash, no sanitizer report": a success gives a topology that
 * validates, whose counts are in range and which survives a DOT round trip; a failure gives a
 * parse/topology status with a non-empty detail and leaves the output untouched.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <starfold/topology.h>

#define FUZZ_CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024) return 0;   /* a topology file is small; larger inputs only slow the search */
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    starfold_topology_t sentinel = (starfold_topology_t)(uintptr_t)0x1;
    starfold_topology_t topo = sentinel;
    starfold_status_t st = starfold_topology_load_string(text, "fuzz.dot", &topo);
    if (st == STARFOLD_OK) {
        FUZZ_CHECK(topo != sentinel && topo != NULL);
        int n = starfold_topology_num_devices(topo);
        FUZZ_CHECK(n >= 1 && n <= STARFOLD_MAX_DEVICES);
        FUZZ_CHECK(starfold_topology_validate(topo) == STARFOLD_OK);
        for (int i = 0; i < starfold_topology_num_links(topo); i++) {
            starfold_link_t l;
            FUZZ_CHECK(starfold_topology_link(topo, i, &l) == STARFOLD_OK);
            FUZZ_CHECK(l.a >= 0 && l.a < n && l.b >= 0 && l.b < n && l.a != l.b);
            FUZZ_CHECK(l.bandwidth_GBps > 0 && l.latency_us >= 0 && l.lanes >= 1);
        }
        starfold_topology_destroy(topo);
    } else {
        FUZZ_CHECK(topo == sentinel);
        FUZZ_CHECK(st == STARFOLD_ERR_PARSE || st == STARFOLD_ERR_TOPOLOGY || st == STARFOLD_ERR_OUT_OF_MEMORY);
        FUZZ_CHECK(starfold_last_error()[0] != '\0');
    }
    free(text);
    return 0;
}
