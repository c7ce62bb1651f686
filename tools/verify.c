/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/* Verification of results: see verify.h. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verify.h"

double starfold_tools_get(const void *data, starfold_dtype_t dtype, size_t i)
{
    if ((int)dtype < 0 || (int)dtype >= STARFOLD_DTYPE_COUNT) return NAN;
    return starfold_element_to_double(dtype, data, i);
}

void starfold_tools_set(void *data, starfold_dtype_t dtype, size_t i, double value)
{
    (void)starfold_element_from_double(dtype, value, data, i);
}

void *starfold_tools_alloc(starfold_dtype_t dtype, size_t count)
{
    size_t bytes = count * starfold_dtype_size(dtype);
    return malloc(bytes ? bytes : 1);
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 31;
    h *= 0x7fb5d329728ea185ULL;
    h ^= h >> 27;
    h *= 0x81dadef4bc2dd44dULL;
    h ^= h >> 33;
    return h;
}

static int is_integer(starfold_dtype_t dtype)
{
    return starfold_dtype_is_integer(dtype);
}

static int is_unsigned(starfold_dtype_t dtype)
{
    return dtype == STARFOLD_UINT8 || dtype == STARFOLD_UINT16 || dtype == STARFOLD_UINT32 || dtype == STARFOLD_UINT64;
}

double starfold_tools_value(starfold_op_t op, starfold_dtype_t dtype, int replica, size_t tensor, size_t i)
{
    const uint64_t h =
        mix((uint64_t)replica * 0x9e3779b97f4a7c15ULL ^ mix((uint64_t)tensor + 0x632be59bd9b4e019ULL) ^ (uint64_t)i);
    if (op == STARFOLD_OP_PROD) {
        /* At most ceil(n / 8) replicas get a 2 (or 0.5) for any element: products stay within 2^8. */
        const size_t phase = ((size_t)replica + tensor + i) % 8;
        const double mag = phase == 0 ? 2.0 : (phase == 4 && !is_integer(dtype)) ? 0.5 : 1.0;
        return (h & 1) && !is_unsigned(dtype) ? -mag : mag;
    }
    if (is_unsigned(dtype)) return (double)(h % 201);
    if (is_integer(dtype)) return (double)((int)(h % 201) - 100);
    if (dtype == STARFOLD_BFLOAT16) return (double)((int)(h % 5) - 2);           /* exact sums to 128 replicas */
    if (dtype == STARFOLD_FLOAT16) return (double)((int)(h % 33) - 16) * 0.25;  /* exact sums to 128 replicas */
    return (double)((int)(h % 401) - 200) * 0.25;
}

void starfold_tools_fill(void *data, starfold_dtype_t dtype, size_t count, starfold_op_t op, int replica, size_t tensor)
{
    for (size_t i = 0; i < count; i++) starfold_tools_set(data, dtype, i, starfold_tools_value(op, dtype, replica, tensor, i));
}

double starfold_tools_sentinel(starfold_dtype_t dtype)
{
    switch (dtype) {
    case STARFOLD_INT8: return -111.0;
    case STARFOLD_UINT8: return 222.0;
    case STARFOLD_UINT16: case STARFOLD_UINT32: case STARFOLD_UINT64: return -STARFOLD_TOOLS_SENTINEL;
    case STARFOLD_FLOAT16: case STARFOLD_BFLOAT16: return STARFOLD_TOOLS_SENTINEL + 1.0; /* -7776: exact in both */
    default: return STARFOLD_TOOLS_SENTINEL;
    }
}

void starfold_tools_fill_sentinel(void *data, starfold_dtype_t dtype, size_t count)
{
    for (size_t i = 0; i < count; i++) starfold_tools_set(data, dtype, i, starfold_tools_sentinel(dtype));
}

void starfold_tools_reference(starfold_op_t op, starfold_dtype_t dtype, const void *const *srcs, int nsrc, size_t count,
                     double *out)
{
    starfold_tools_reference_ex(op, dtype, 0, srcs, nsrc, count, out);
}

/* acc op v, in float64. */
static double accumulate(starfold_op_t op, double acc, double v)
{
    switch (op) {
    case STARFOLD_OP_MIN: return v < acc ? v : acc;
    case STARFOLD_OP_MAX: return v > acc ? v : acc;
    case STARFOLD_OP_PROD: return acc * v;
    default: return acc + v; /* SUM, MEAN */
    }
}

/*
 * The exact result @acc as the type holds it: integers wrap around to their width (the kernels add
 * and multiply in unsigned arithmetic), then MEAN divides the wrapped sum: truncating toward zero for
 * an integer MEAN, the true quotient when promoted (@integer_mean 0).
 */
static double finish(starfold_op_t op, starfold_dtype_t dtype, int integer_mean, double acc, int n)
{
    if (is_integer(dtype)) {
        const uint64_t bits = acc >= 9223372036854775808.0 ? (uint64_t)acc : (uint64_t)(int64_t)acc;
        switch (starfold_dtype_size(dtype)) {
        case 1: acc = is_unsigned(dtype) ? (double)(uint8_t)bits : (double)(int8_t)(uint8_t)bits; break;
        case 2: acc = is_unsigned(dtype) ? (double)(uint16_t)bits : (double)(int16_t)(uint16_t)bits; break;
        case 4: acc = is_unsigned(dtype) ? (double)(uint32_t)bits : (double)(int32_t)(uint32_t)bits; break;
        default: break;
        }
    }
    if (op != STARFOLD_OP_MEAN) return acc;
    if (!integer_mean) return acc / n;
    return is_unsigned(dtype) ? (double)((uint64_t)acc / (uint64_t)n) : (double)((int64_t)acc / (int64_t)n);
}

void starfold_tools_reference_ex(starfold_op_t op, starfold_dtype_t dtype, int promote, const void *const *srcs, int nsrc,
                                 size_t count, double *out)
{
    const int integer_mean = is_integer(dtype) && !promote;
    for (size_t i = 0; i < count; i++) {
        double acc = starfold_tools_get(srcs[0], dtype, i);
        for (int s = 1; s < nsrc; s++) acc = accumulate(op, acc, starfold_tools_get(srcs[s], dtype, i));
        out[i] = finish(op, dtype, integer_mean, acc, nsrc);
    }
}

double starfold_tools_reference_at(starfold_op_t op, starfold_dtype_t dtype, int n, size_t tensor, size_t i)
{
    double acc = starfold_tools_value(op, dtype, 0, tensor, i);
    for (int r = 1; r < n; r++) acc = accumulate(op, acc, starfold_tools_value(op, dtype, r, tensor, i));
    return finish(op, dtype, is_integer(dtype), acc, n);
}

int starfold_tools_close_enough(starfold_dtype_t dtype, double got, double want)
{
    if (is_integer(dtype)) return got == want;
    const double tol = dtype == STARFOLD_FLOAT32    ? 1e-5
                       : dtype == STARFOLD_FLOAT16  ? 0x1p-10 /* one rounding: 2^-11; twice that */
                       : dtype == STARFOLD_BFLOAT16 ? 0x1p-7  /* one rounding: 2^-8 */
                                                    : 1e-12;
    return fabs(got - want) <= tol * fmax(1.0, fabs(want)); /* a NaN is never close */
}

int starfold_tools_compare(const void *got, starfold_dtype_t dtype, const double *expected, size_t count, char *why,
                           size_t whylen)
{
    for (size_t i = 0; i < count; i++) {
        const double g = starfold_tools_get(got, dtype, i), e = expected[i];
        if (!starfold_tools_close_enough(dtype, g, e)) {
            if (why) snprintf(why, whylen, "element %zu of %zu: got %.17g, expected %.17g", i, count, g, e);
            return -1;
        }
    }
    return 0;
}

double starfold_tools_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double starfold_tools_median(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, cmp_double);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}
