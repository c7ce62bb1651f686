/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/* Status strings, element types and reduce operations: the vocabulary shared by every layer. */
#include "config.h"
#include "base/common.h"
#include "base/half.h"

#include <math.h>

static const char *const status_strings[STARFOLD_STATUS_COUNT] = {
    [STARFOLD_OK] = "success",
    [STARFOLD_ERR_INVALID_ARGUMENT] = "invalid argument",
    [STARFOLD_ERR_OUT_OF_MEMORY] = "out of memory",
    [STARFOLD_ERR_NOT_SUPPORTED] = "not supported",
    [STARFOLD_ERR_NOT_FOUND] = "not found",
    [STARFOLD_ERR_IO] = "input/output error",
    [STARFOLD_ERR_PARSE] = "parse error",
    [STARFOLD_ERR_TOPOLOGY] = "unusable topology",
    [STARFOLD_ERR_GRAPH_INVALID] = "graph breaks an invariant",
    [STARFOLD_ERR_NO_DEVICE] = "no such device or worker",
    [STARFOLD_ERR_RUNTIME] = "task runtime error",
    [STARFOLD_ERR_TASK_FAILED] = "a task failed",
    [STARFOLD_ERR_TIMEOUT] = "timed out",
    [STARFOLD_ERR_IN_PROGRESS] = "in progress",
    [STARFOLD_ERR_INTERNAL] = "internal error",
};

STARFOLD_API const char *starfold_status_string(starfold_status_t status)
{
    if ((int)status < 0 || (int)status >= STARFOLD_STATUS_COUNT) return "unknown status";
    return status_strings[status];
}

static const struct {
    const char *name;
    size_t size;
} dtypes[STARFOLD_DTYPE_COUNT] = {
    [STARFOLD_FLOAT32] = { "float32", 4 },
    [STARFOLD_FLOAT64] = { "float64", 8 },
    [STARFOLD_INT32] = { "int32", 4 },
    [STARFOLD_INT64] = { "int64", 8 },     [STARFOLD_FLOAT16] = { "float16", 2 }, [STARFOLD_BFLOAT16] = { "bfloat16", 2 },
    [STARFOLD_INT8] = { "int8", 1 },       [STARFOLD_UINT8] = { "uint8", 1 },     [STARFOLD_INT16] = { "int16", 2 },
    [STARFOLD_UINT16] = { "uint16", 2 },   [STARFOLD_UINT32] = { "uint32", 4 },   [STARFOLD_UINT64] = { "uint64", 8 },
};

STARFOLD_API size_t starfold_dtype_size(starfold_dtype_t dtype)
{
    if ((int)dtype < 0 || (int)dtype >= STARFOLD_DTYPE_COUNT) return 0;
    return dtypes[dtype].size;
}

STARFOLD_API const char *starfold_dtype_name(starfold_dtype_t dtype)
{
    if ((int)dtype < 0 || (int)dtype >= STARFOLD_DTYPE_COUNT) return "unknown";
    return dtypes[dtype].name;
}

STARFOLD_API starfold_status_t starfold_dtype_from_string(const char *name, starfold_dtype_t *dtype)
{
    static const struct {
        const char *alias;
        starfold_dtype_t dtype;
    } aliases[] = {
        { "float32", STARFOLD_FLOAT32 }, { "f32", STARFOLD_FLOAT32 }, { "float", STARFOLD_FLOAT32 },
        { "float64", STARFOLD_FLOAT64 }, { "f64", STARFOLD_FLOAT64 }, { "double", STARFOLD_FLOAT64 },
        { "int32", STARFOLD_INT32 },     { "i32", STARFOLD_INT32 },   { "int", STARFOLD_INT32 },
        { "int64", STARFOLD_INT64 },     { "i64", STARFOLD_INT64 },
        { "float16", STARFOLD_FLOAT16 }, { "f16", STARFOLD_FLOAT16 }, { "half", STARFOLD_FLOAT16 },
        { "bfloat16", STARFOLD_BFLOAT16 }, { "bf16", STARFOLD_BFLOAT16 },
        { "int8", STARFOLD_INT8 },       { "i8", STARFOLD_INT8 },     { "uint8", STARFOLD_UINT8 },
        { "u8", STARFOLD_UINT8 },        { "int16", STARFOLD_INT16 }, { "i16", STARFOLD_INT16 },
        { "uint16", STARFOLD_UINT16 },   { "u16", STARFOLD_UINT16 },  { "uint32", STARFOLD_UINT32 },
        { "u32", STARFOLD_UINT32 },      { "uint64", STARFOLD_UINT64 }, { "u64", STARFOLD_UINT64 },
    };
    if (!name || !dtype) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_dtype_from_string: NULL argument");
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (starfold__streq_nocase(name, aliases[i].alias)) {
            *dtype = aliases[i].dtype;
            return STARFOLD_OK;
        }
    return starfold__error(STARFOLD_ERR_NOT_FOUND, "unknown dtype '%s' (float16, bfloat16, float32, float64, int8, int16, int32, "
                           "int64, uint8, uint16, uint32, uint64)", name);
}

STARFOLD_API int starfold_dtype_is_integer(starfold_dtype_t dtype)
{
    return starfold__dtype_integer(dtype);
}

int starfold__dtype_integer(starfold_dtype_t dt)
{
    switch (dt) {
    case STARFOLD_INT8: case STARFOLD_UINT8: case STARFOLD_INT16: case STARFOLD_UINT16:
    case STARFOLD_INT32: case STARFOLD_UINT32: case STARFOLD_INT64: case STARFOLD_UINT64: return 1;
    default: return 0;
    }
}

int starfold__dtype_signed(starfold_dtype_t dt)
{
    return dt == STARFOLD_INT8 || dt == STARFOLD_INT16 || dt == STARFOLD_INT32 || dt == STARFOLD_INT64;
}

starfold_dtype_t starfold__dtype_truediv(starfold_dtype_t dt)
{
    if (!starfold__dtype_integer(dt)) return dt;
    return starfold_dtype_size(dt) <= 2 ? STARFOLD_FLOAT32 : STARFOLD_FLOAT64;
}

int starfold__dtype_half(starfold_dtype_t dt)
{
    return dt == STARFOLD_FLOAT16 || dt == STARFOLD_BFLOAT16;
}

uint64_t starfold__element_bits(starfold_dtype_t dt, const void *data, size_t i)
{
    switch (dt) {
    case STARFOLD_INT8: return (uint64_t)(int64_t)((const int8_t *)data)[i];
    case STARFOLD_UINT8: return ((const uint8_t *)data)[i];
    case STARFOLD_INT16: return (uint64_t)(int64_t)((const int16_t *)data)[i];
    case STARFOLD_UINT16: case STARFOLD_FLOAT16: case STARFOLD_BFLOAT16: return ((const uint16_t *)data)[i];
    case STARFOLD_INT32: return (uint64_t)(int64_t)((const int32_t *)data)[i];
    case STARFOLD_UINT32: return ((const uint32_t *)data)[i];
    case STARFOLD_INT64: return (uint64_t)((const int64_t *)data)[i];
    case STARFOLD_UINT64: return ((const uint64_t *)data)[i];
    default: return 0;
    }
}

void starfold__element_set_bits(starfold_dtype_t dt, void *data, size_t i, uint64_t v)
{
    switch (dt) {
    case STARFOLD_INT8: case STARFOLD_UINT8: ((uint8_t *)data)[i] = (uint8_t)v; break;
    case STARFOLD_INT16: case STARFOLD_UINT16: case STARFOLD_FLOAT16: case STARFOLD_BFLOAT16:
        ((uint16_t *)data)[i] = (uint16_t)v;
        break;
    case STARFOLD_INT32: case STARFOLD_UINT32: ((uint32_t *)data)[i] = (uint32_t)v; break;
    case STARFOLD_INT64: case STARFOLD_UINT64: ((uint64_t *)data)[i] = v; break;
    default: break;
    }
}

STARFOLD_API double starfold_element_to_double(starfold_dtype_t dtype, const void *data, size_t index)
{
    if (!data) return 0;
    switch (dtype) {
    case STARFOLD_FLOAT32: return ((const float *)data)[index];
    case STARFOLD_FLOAT64: return ((const double *)data)[index];
    case STARFOLD_FLOAT16: return starfold__f16_to_f32(((const uint16_t *)data)[index]);
    case STARFOLD_BFLOAT16: return starfold__bf16_to_f32(((const uint16_t *)data)[index]);
    default: break;
    }
    if (!starfold__dtype_integer(dtype)) return 0;
    const uint64_t b = starfold__element_bits(dtype, data, index);
    return starfold__dtype_signed(dtype) ? (double)(int64_t)b : (double)b;
}

/*
 * @v rounded to float32 toward zero, its last bit set when that was inexact ("round to odd"): a
 * float32 with 24 bits then rounds to float16 (11) or bfloat16 (8) to nearest even exactly as @v
 * itself would, where plain (float)v would round twice.
 */
static float f32_round_odd(double v)
{
    float f = (float)v;
    if ((double)f == v || v != v) return f;
    if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f);
    return starfold__f32_from_bits(starfold__f32_bits(f) | 1u);
}

static uint16_t f16_from_f64(double v)
{
    return starfold__f32_to_f16(f32_round_odd(v));
}

static uint16_t bf16_from_f64(double v)
{
    return starfold__f32_to_bf16(f32_round_odd(v));
}

/* @v truncated toward zero and held to [lo, hi] (NaN: 0), for an integer type's range. */
static uint64_t saturate(double v, int is_signed, int bits)
{
    if (v != v) return 0;
    if (is_signed) {
        const double hi = ldexp(1.0, bits - 1); /* 2^(bits-1): the first value out of range */
        if (v >= hi) return bits == 64 ? (uint64_t)INT64_MAX : ((uint64_t)1 << (bits - 1)) - 1;
        if (v <= -hi) return (uint64_t)(bits == 64 ? INT64_MIN : -(int64_t)((uint64_t)1 << (bits - 1)));
        return (uint64_t)(int64_t)v;
    }
    const double hi = ldexp(1.0, bits);
    if (v >= hi) return bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    if (v <= 0) return 0;
    return (uint64_t)v;
}

STARFOLD_API starfold_status_t starfold_element_from_double(starfold_dtype_t dtype, double value, void *data,
                                                            size_t index)
{
    if (!data || (int)dtype < 0 || (int)dtype >= STARFOLD_DTYPE_COUNT)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_element_from_double: %s",
                               !data ? "NULL data" : "unknown dtype");
    switch (dtype) {
    case STARFOLD_FLOAT32: ((float *)data)[index] = (float)value; return STARFOLD_OK;
    case STARFOLD_FLOAT64: ((double *)data)[index] = value; return STARFOLD_OK;
    /* Through float32: a double rounded twice differs from once only where float32 sits on a tie,
     * so the exact double is rounded to float16/bfloat16's precision here directly instead. */
    case STARFOLD_FLOAT16: ((uint16_t *)data)[index] = f16_from_f64(value); return STARFOLD_OK;
    case STARFOLD_BFLOAT16: ((uint16_t *)data)[index] = bf16_from_f64(value); return STARFOLD_OK;
    default: break;
    }
    const int bits = (int)starfold_dtype_size(dtype) * 8;
    starfold__element_set_bits(dtype, data, index, saturate(value, starfold__dtype_signed(dtype), bits));
    return STARFOLD_OK;
}

static const char *const op_names[STARFOLD_OP_COUNT] = {
    [STARFOLD_OP_SUM] = "sum", [STARFOLD_OP_MEAN] = "mean", [STARFOLD_OP_MIN] = "min",
    [STARFOLD_OP_MAX] = "max", [STARFOLD_OP_PROD] = "prod",
};

STARFOLD_API const char *starfold_op_name(starfold_op_t op)
{
    if ((int)op < 0 || (int)op >= STARFOLD_OP_COUNT) return "unknown";
    return op_names[op];
}

const char *starfold__op_name(starfold_op_t op)
{
    return op == STARFOLD__OP_SUB ? "sub" : starfold_op_name(op);
}

starfold_op_t starfold__op_accumulation(starfold_op_t op)
{
    return op == STARFOLD_OP_MEAN ? STARFOLD_OP_SUM : op;
}

STARFOLD_API starfold_status_t starfold_op_from_string(const char *name, starfold_op_t *op)
{
    if (!name || !op) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_op_from_string: NULL argument");
    for (int i = 0; i < STARFOLD_OP_COUNT; i++)
        if (starfold__streq_nocase(name, op_names[i])) {
            *op = (starfold_op_t)i;
            return STARFOLD_OK;
        }
    return starfold__error(STARFOLD_ERR_NOT_FOUND, "unknown reduce op '%s' (sum, mean, min, max, prod)", name);
}

STARFOLD_API const char *starfold_version(void)
{
    return PACKAGE_VERSION;
}
