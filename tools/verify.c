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
    switch (dtype) {
    case STARFOLD_FLOAT32: return ((const float *)data)[i];
    case STARFOLD_FLOAT64: return ((const double *)data)[i];
    case STARFOLD_INT32: return ((const int32_t *)data)[i];
    case STARFOLD_INT64: return (double)((const int64_t *)data)[i];
    }
    return NAN;
}

void starfold_tools_set(void *data, starfold_dtype_t dtype, size_t i, double value)
{
    switch (dtype) {
    case STARFOLD_FLOAT32: ((float *)data)[i] = (float)value; break;
    case STARFOLD_FLOAT64: ((double *)data)[i] = value; break;
    case STARFOLD_INT32: ((int32_t *)data)[i] = (int32_t)value; break;
    case STARFOLD_INT64: ((int64_t *)data)[i] = (int64_t)value; break;
    }
}

void *starfold_tools_alloc(starfold_dtype_t dtype, size_t count)
{
    size_t bytes = count * starfold_dtype_size(dtype);
    return malloc(bytes ? bytes : 1);
}

static uint32_t mix(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return h;
}

double starfold_tools_value(starfold_op_t op, starfold_dtype_t dtype, int replica, size_t tensor, size_t i)
{
    const uint32_t h = mix((uint32_t)replica * 0x9e3779b9U ^ mix((uint32_t)tensor * 0x85ebca6bU ^ mix((uint32_t)i)));
    const int is_int = dtype == STARFOLD_INT32 || dtype == STARFOLD_INT64;
    if (op == STARFOLD_OP_PROD) {
        static const double ints[4] = { -2, -1, 1, 2 };
        static const double floats[6] = { -2, -1, -0.5, 0.5, 1, 2 };
        return is_int ? ints[h % 4] : floats[h % 6];
    }
    if (is_int) return (double)((int)(h % 201) - 100);
    return ((int)(h % 401) - 200) / 4.0;
}

void starfold_tools_fill(void *data, starfold_dtype_t dtype, size_t count, starfold_op_t op, int replica, size_t tensor)
{
    for (size_t i = 0; i < count; i++) starfold_tools_set(data, dtype, i, starfold_tools_value(op, dtype, replica, tensor, i));
}

void starfold_tools_fill_sentinel(void *data, starfold_dtype_t dtype, size_t count)
{
    for (size_t i = 0; i < count; i++) starfold_tools_set(data, dtype, i, STARFOLD_TOOLS_SENTINEL);
}

void starfold_tools_reference(starfold_op_t op, starfold_dtype_t dtype, const void *const *srcs, int nsrc, size_t count,
                     double *out)
{
    starfold_tools_reference_ex(op, dtype, 0, srcs, nsrc, count, out);
}

void starfold_tools_reference_ex(starfold_op_t op, starfold_dtype_t dtype, int promote, const void *const *srcs, int nsrc,
                        size_t count, double *out)
{
    const int is_int = (dtype == STARFOLD_INT32 || dtype == STARFOLD_INT64) && !promote;
    for (size_t i = 0; i < count; i++) {
        double acc = starfold_tools_get(srcs[0], dtype, i);
        for (int s = 1; s < nsrc; s++) {
            const double v = starfold_tools_get(srcs[s], dtype, i);
            switch (op) {
            case STARFOLD_OP_SUM:
            case STARFOLD_OP_MEAN: acc += v; break;
            case STARFOLD_OP_PROD: acc *= v; break;
            case STARFOLD_OP_MIN: acc = v < acc ? v : acc; break;
            case STARFOLD_OP_MAX: acc = v > acc ? v : acc; break;
            }
        }
        if (op == STARFOLD_OP_MEAN) acc = is_int ? (double)((int64_t)acc / (int64_t)nsrc) : acc / nsrc;
        out[i] = acc;
    }
}

int starfold_tools_compare(const void *got, starfold_dtype_t dtype, const double *expected, size_t count, char *why,
                  size_t whylen)
{
    const double tol = dtype == STARFOLD_FLOAT32 ? 1e-5 : dtype == STARFOLD_FLOAT64 ? 1e-12 : 0.0;
    for (size_t i = 0; i < count; i++) {
        const double g = starfold_tools_get(got, dtype, i), e = expected[i];
        const int ok = tol == 0.0 ? g == e : fabs(g - e) <= tol * fmax(1.0, fabs(e));
        if (!ok) {
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
