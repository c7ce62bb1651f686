/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/* Status strings, element types and reduce operations: the vocabulary shared by every layer. */
#include "config.h"
#include "base/common.h"

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
    [STARFOLD_INT64] = { "int64", 8 },
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
    };
    if (!name || !dtype) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_dtype_from_string: NULL argument");
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (starfold__streq_nocase(name, aliases[i].alias)) {
            *dtype = aliases[i].dtype;
            return STARFOLD_OK;
        }
    return starfold__error(STARFOLD_ERR_NOT_FOUND, "unknown dtype '%s' (float32, float64, int32, int64)", name);
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
