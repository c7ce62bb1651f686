/*
 * Shared test helpers (linked into every test program; names carry the sf_tu_ prefix so they never
 * meet a test's own static helpers).
 *
 * Data. sf_tu_fill() gives element i of tensor t on replica r a deterministic value chosen so that
 * the reductions stay exact and in range for up to 8 replicas:
 *   SUM, MEAN, MIN, MAX: integers in [-100, 100] for int32/int64, quarter-integers in [-50, 50] for
 *                        float32/float64 (exactly representable; their sums too);
 *   PROD:                {-2, -1, 1, 2} for integers, {-2, -1, -0.5, 0.5, 1, 2} for floats (products of
 *                        8 stay powers of two: exact, no overflow).
 *
 * Reference. sf_tu_reference() computes the op in float64 over the sources in replica order; MEAN is
 * sum / n, truncated toward zero for integer dtypes (C division of the exact integer sum), or the
 * true quotient for a promoted integer MEAN (outputs in float64, see starfold_graph_output_dtype()).
 *
 * Comparison. Integers must match exactly. Floats: |got - expected| <= tol * max(1, |expected|) with
 * tol = 1e-5 for float32 and 1e-12 for float64 (a relative tolerance with an absolute floor near 0).
 *
 * Running. sf_tu_run_graph() executes a compiled (or hand-built) graph on a context: one input vector
 * per source and tensor on the source's device filled by sf_tu_fill(), one output vector per
 * destination and tensor on its device filled with a sentinel (or, in place, the very input handle
 * of the same device), submit, wait, then every element of every output is checked against the
 * reference (the source's data for a broadcast), and the inputs that are not outputs are checked
 * unchanged. It prints what failed to stderr and returns -1, or 0.
 */
#ifndef SF_TEST_UTIL_H
#define SF_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <starfold.h>

/* Element access as double (values used in tests are exactly representable). */
double sf_tu_get(const void *data, starfold_dtype_t dtype, size_t i);
void sf_tu_set(void *data, starfold_dtype_t dtype, size_t i, double value);

/* malloc of @count elements (at least one byte, so zero counts give a usable pointer); NULL on failure. */
void *sf_tu_alloc(starfold_dtype_t dtype, size_t count);

/* The deterministic value of element @i of tensor @tensor on replica @replica for @op. */
double sf_tu_value(starfold_op_t op, starfold_dtype_t dtype, int replica, size_t tensor, size_t i);
void sf_tu_fill(void *data, starfold_dtype_t dtype, size_t count, starfold_op_t op, int replica, size_t tensor);
/* Sentinel content for outputs, distinguishable from every value sf_tu_fill() produces. */
#define SF_TU_SENTINEL (-7777.0)
void sf_tu_fill_sentinel(void *data, starfold_dtype_t dtype, size_t count);

/* out[i] = op over srcs[0..nsrc-1][i], in float64 (MEAN: sum / nsrc, integers truncated). */
void sf_tu_reference(starfold_op_t op, starfold_dtype_t dtype, const void *const *srcs, int nsrc, size_t count,
                     double *out);
/* As sf_tu_reference(); @promote: an integer MEAN is the true quotient (TensorFlow's promoting MEAN). */
void sf_tu_reference_ex(starfold_op_t op, starfold_dtype_t dtype, int promote, const void *const *srcs, int nsrc,
                        size_t count, double *out);

/* 0 when @got matches @expected (see the tolerance above); else -1 and a description in @why. */
int sf_tu_compare(const void *got, starfold_dtype_t dtype, const double *expected, size_t count, char *why,
                  size_t whylen);

/* Runs @graph on @ctx and verifies every output; @in_place gives outputs the inputs' handles where a
 * destination is also a source. @label prefixes failure messages. */
int sf_tu_run_graph(starfold_context_t ctx, starfold_graph_t graph, int in_place, const char *label);

/* 1 when @algorithm must refuse @topology (one-pass on devices with memories of their own). */
int sf_tu_refuses(starfold_topology_t topology, const char *algorithm);

/* Compiles @desc with @algorithm on @topology (checking the graph), then sf_tu_run_graph(); an
 * algorithm that must refuse the topology has to say STARFOLD_ERR_NOT_SUPPORTED (then 0). */
int sf_tu_run_collective(starfold_context_t ctx, starfold_topology_t topology, const char *algorithm,
                         const starfold_collective_desc_t *desc, const starfold_algo_options_t *options, int in_place);

/* Monotonic seconds, for timing test sections. */
double sf_tu_now(void);

#endif /* SF_TEST_UTIL_H */
