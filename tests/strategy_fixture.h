/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * What the strategy tests share (test_strategy.c, test_variables.c): one CPU-only context of 8
 * logical devices (CUDA workers on a GPU), the host and DGX-1 topologies to plan on, and small
 * helpers. The replica mode of the strategies mirrored() makes is threads in each program's first
 * suite (whose timeouts and concurrent replicas need them), in turn, the default, when a second suite
 * runs the same tests again (in_turn_suite_init()). Strategies made otherwise run in turn.
 */
#ifndef SF_TEST_STRATEGY_FIXTURE_H
#define SF_TEST_STRATEGY_FIXTURE_H

#include <starfold.h>

#include "distribute/distribute.h"

#define NDEV 8

extern starfold_context_t ctx;
extern starfold_topology_t host8, dgx1;
extern starfold_replica_mode_t tests_replica_mode;
extern const int dev01[2];

int suite_init(void);
void suite_cleanup(void);
int in_turn_suite_init(void);
int in_turn_suite_cleanup(void);
void sleep_ms(int ms);
/* Component @c of @v, read as one float32 (asserting the read). */
float read_f32(starfold_value_t v, int c);
/* Algorithm of the last graph the layer compiled ("" when none). */
const char *last_algorithm(void);
/* Path of the last graph the layer compiled. */
starfold__path_t last_trace_path(void);
/* A one-component float32 value on the replica's device holding the @n elements @xs. */
starfold_status_t local_value(starfold_replica_context_t rc, const float *xs, size_t n, starfold_value_t *v);
/* A MirroredStrategy over @devices in tests_replica_mode (asserting it was made). */
starfold_strategy_t mirrored(int n, const int *devices, starfold_topology_t topo, starfold_cross_device_ops_t ops);

#endif /* SF_TEST_STRATEGY_FIXTURE_H */
