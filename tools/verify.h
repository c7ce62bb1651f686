/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Verification of results, shared by the command (`starfold run`, `bench`), the tests and the examples.
 * Uses the public types only; names carry the starfold_tools_ prefix (tools.h).
 *
 * Data. starfold_tools_fill() gives element i of tensor t on replica r a deterministic value chosen so that
 * the reductions stay exact and in range for any replica count:
 *   SUM, MEAN, MIN, MAX: integers in [-100, 100] for signed integers, [0, 200] for unsigned ones,
 *                        quarter-integers in [-50, 50] for float32/float64 and in [-4, 4] for float16,
 *                        integers in [-2, 2] for bfloat16 (exactly representable; their sums too, for
 *                        float16 and bfloat16 up to 128 replicas);
 *   PROD:                +-1 mostly, +-2 (and +-0.5 for floats) for at most one replica in 8 per element,
 *                        so products stay powers of two within 2^8: exact (unsigned types: no signs).
 *
 * Reference. starfold_tools_reference() computes the op in float64 over the sources in replica order;
 * integer results wrap around to the type's width as the kernels' do (8- and 16-bit sums of many
 * replicas overflow); MEAN is that sum / n, truncated toward zero for integer dtypes, or the true
 * quotient for a promoted integer MEAN (outputs in float64, see starfold_graph_output_dtype()).
 *
 * Comparison. Integers must match exactly. Floats: |got - expected| <= tol * max(1, |expected|) with
 * tol = 1e-5 for float32, 1e-12 for float64, 2^-10 for float16 and 2^-7 for bfloat16 (twice one
 * rounding: the values above make every sum exact, so only MEAN's division rounds).
 */
#ifndef STARFOLD_TOOLS_VERIFY_H
#define STARFOLD_TOOLS_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include <starfold/common.h>

/* Element access as double (values used in tests are exactly representable). */
double starfold_tools_get(const void *data, starfold_dtype_t dtype, size_t i);
void starfold_tools_set(void *data, starfold_dtype_t dtype, size_t i, double value);

/* malloc of @count elements (at least one byte, so zero counts give a usable pointer); NULL on failure. */
void *starfold_tools_alloc(starfold_dtype_t dtype, size_t count);

/* The deterministic value of element @i of tensor @tensor on replica @replica for @op. */
double starfold_tools_value(starfold_op_t op, starfold_dtype_t dtype, int replica, size_t tensor, size_t i);
void starfold_tools_fill(void *data, starfold_dtype_t dtype, size_t count, starfold_op_t op, int replica, size_t tensor);
/* Sentinel content for outputs, distinguishable from every value starfold_tools_fill() produces:
 * STARFOLD_TOOLS_SENTINEL where the type holds it, else starfold_tools_sentinel(dtype) (8-bit and
 * unsigned types, and -7776 for float16 and bfloat16, which hold that exactly). */
#define STARFOLD_TOOLS_SENTINEL (-7777.0)
double starfold_tools_sentinel(starfold_dtype_t dtype);
void starfold_tools_fill_sentinel(void *data, starfold_dtype_t dtype, size_t count);

/* out[i] = op over srcs[0..nsrc-1][i], in float64 (MEAN: sum / nsrc, integers truncated). */
void starfold_tools_reference(starfold_op_t op, starfold_dtype_t dtype, const void *const *srcs, int nsrc, size_t count,
                     double *out);
/* As starfold_tools_reference(); @promote: an integer MEAN is the true quotient (TensorFlow's promoting MEAN). */
void starfold_tools_reference_ex(starfold_op_t op, starfold_dtype_t dtype, int promote, const void *const *srcs, int nsrc,
                        size_t count, double *out);

/* The reference of element @i of tensor @tensor over replicas 0..n-1 filled by starfold_tools_fill(),
 * computed from the generator alone (no host copies of the inputs needed). */
double starfold_tools_reference_at(starfold_op_t op, starfold_dtype_t dtype, int n, size_t tensor, size_t i);

/* 1 when @got is within the tolerance above of @want (a NaN never is). */
int starfold_tools_close_enough(starfold_dtype_t dtype, double got, double want);

/* 0 when @got matches @expected (see the tolerance above); else -1 and a description in @why. */
int starfold_tools_compare(const void *got, starfold_dtype_t dtype, const double *expected, size_t count, char *why,
                  size_t whylen);

/* Monotonic seconds, for timing test sections. */
double starfold_tools_now(void);

/* The median of @n >= 1 values (sorted in place), for the benchmarks' per-step times. */
double starfold_tools_median(double *values, int n);

#endif /* STARFOLD_TOOLS_VERIFY_H */
