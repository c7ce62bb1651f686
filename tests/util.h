/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Test helpers that run graphs (linked into the test programs that use an executor; names carry the
 * starfold__tu_ prefix so they never meet a test's own static helpers). Data, references and
 * tolerances come from the tools library (tools/verify.h).
 *
 * Running. starfold__tu_run_graph() executes a compiled (or hand-built) graph on a context: one input vector
 * per source and tensor on the source's device filled by starfold_tools_fill(), one output vector per
 * destination and tensor on its device filled with a sentinel (or, in place, the very input handle
 * of the same device), submit, wait, then every element of every output is checked against the
 * reference (the source's data for a broadcast), and the inputs that are not outputs are checked
 * unchanged. It prints what failed to stderr and returns -1, or 0.
 */
#ifndef SF_TEST_UTIL_H
#define SF_TEST_UTIL_H

#include <starfold.h>

#include "verify.h"

/* Runs @graph on @ctx and verifies every output; @in_place gives outputs the inputs' handles where a
 * destination is also a source. @label prefixes failure messages. */
int starfold__tu_run_graph(starfold_context_t ctx, starfold_graph_t graph, int in_place, const char *label);

/* 1 when @algorithm must refuse @topology (one-pass on devices with memories of their own). */
int starfold__tu_refuses(starfold_topology_t topology, const char *algorithm);

/* Compiles @desc with @algorithm on @topology (checking the graph), then starfold__tu_run_graph(); an
 * algorithm that must refuse the topology has to say STARFOLD_ERR_NOT_SUPPORTED (then 0). */
int starfold__tu_run_collective(starfold_context_t ctx, starfold_topology_t topology, const char *algorithm,
                         const starfold_collective_desc_t *desc, const starfold_algo_options_t *options, int in_place);

/*
 * The kind of devices a test's own context is made of: CPU workers, or StarPU's CUDA workers when
 * SF_TEST_DEVICES=cuda (tests/device/gpu.sh runs test_strategy, test_distribute, test_soak and
 * test_properties that way on a GPU, STARPU_NWORKER_PER_CUDA=8 giving 8 devices in its memory).
 */
starfold_device_mode_t starfold__tu_device_mode(void);

#endif /* SF_TEST_UTIL_H */
