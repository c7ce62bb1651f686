/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/**
 * @file starfold.h
 * @brief Umbrella header of starfold: cross-device reductions compiled into task graphs and run by StarPU.
 *
 * starfold mirrors TensorFlow's tf.distribute cross-device operations for C programs built on StarPU.
 * A reduction is described once (which devices hold the replicas, which tensors, which operation),
 * compiled by a named algorithm into a graph of copy, reduce, scale, pack and unpack tasks whose
 * transfers follow a machine topology, checked, optionally exported, and submitted to StarPU, which
 * runs it asynchronously next to the program's own tasks.
 *
 * Layers, each usable without the ones after it:
 *  - starfold/common.h   status codes, element types, reduce operations;
 *  - starfold/topology.h devices and links (built-in DGX-1 tables, DOT files, hwloc);
 *  - starfold/graph.h    compiling a collective into a graph, checking and exporting it
 *                        (needs no StarPU worker and no GPU);
 *  - starfold/model.h    the cost model: predicted time, algbw, busbw and bottleneck of a graph;
 *  - starfold/exec.h     running graphs on StarPU;
 *  - starfold/distribute.h  tf.distribute in C: values, cross-device ops, strategies, replica context.
 *
 * Error rule, stated once: every function that can fail returns a ::starfold_status_t;
 * ::STARFOLD_OK (0) is success. On failure nothing the caller owns is changed, output
 * parameters are left untouched, and starfold_last_error() gives a sentence saying what was wrong.
 * The library never aborts or exits because of a caller's mistake.
 */
#ifndef STARFOLD_H
#define STARFOLD_H

#include <starfold/common.h>
#include <starfold/topology.h>
#include <starfold/graph.h>
#include <starfold/model.h>
#include <starfold/exec.h>
#include <starfold/distribute.h>

#endif /* STARFOLD_H */
