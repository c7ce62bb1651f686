/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/**
 * @file starfold/common.h
 * @brief Status codes, element types and reduce operations shared by every starfold layer.
 */
#ifndef STARFOLD_COMMON_H
#define STARFOLD_COMMON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Marks a declaration as part of the exported ABI (the library is built with -fvisibility=hidden). */
#if defined(__GNUC__) && !defined(STARFOLD_STATIC_NO_VISIBILITY)
#define STARFOLD_API __attribute__((visibility("default")))
#else
#define STARFOLD_API
#endif

/** @brief Version of the library these headers belong to: major number. */
#define STARFOLD_VERSION_MAJOR 0
/** @brief Version of the library these headers belong to: minor number. */
#define STARFOLD_VERSION_MINOR 1
/** @brief Version of the library these headers belong to: patch number. */
#define STARFOLD_VERSION_PATCH 0

/**
 * @brief Result of every starfold call that can fail.
 *
 * ::STARFOLD_OK is 0; every other value is an error whose general meaning is given by
 * starfold_status_string() and whose detail (which argument, which file and line) by starfold_last_error().
 */
typedef enum starfold_status {
    STARFOLD_OK = 0,                  /**< Success. */
    STARFOLD_ERR_INVALID_ARGUMENT,    /**< A NULL pointer, a value out of range, mismatched replicas. */
    STARFOLD_ERR_OUT_OF_MEMORY,       /**< A host or device allocation failed. */
    STARFOLD_ERR_NOT_SUPPORTED,       /**< Valid request that this build or algorithm cannot do (e.g. op for dtype). */
    STARFOLD_ERR_NOT_FOUND,           /**< Unknown name: algorithm, topology, device. */
    STARFOLD_ERR_IO,                  /**< A file could not be read or written. */
    STARFOLD_ERR_PARSE,               /**< Malformed text: a topology file, a tensor list, a number. */
    STARFOLD_ERR_TOPOLOGY,            /**< A topology that cannot be used: disconnected, bad bandwidth. */
    STARFOLD_ERR_GRAPH_INVALID,       /**< A compiled graph broke an invariant (a bug in an algorithm). */
    STARFOLD_ERR_NO_DEVICE,           /**< The runtime has fewer devices or workers than asked for. */
    STARFOLD_ERR_RUNTIME,             /**< StarPU refused or failed an operation. */
    STARFOLD_ERR_TASK_FAILED,         /**< A kernel of a submitted graph failed on its device. */
    STARFOLD_ERR_TIMEOUT,             /**< The operation did not complete within its time limit. */
    STARFOLD_ERR_IN_PROGRESS,         /**< Not an error: the request is still running (starfold_request_test()). */
    STARFOLD_ERR_INTERNAL             /**< An internal invariant failed: please report it. */
} starfold_status_t;

/** @brief Number of distinct ::starfold_status_t values. */
#define STARFOLD_STATUS_COUNT ((int)STARFOLD_ERR_INTERNAL + 1)

/**
 * @brief A short constant sentence for a status ("invalid argument", ...).
 * @return never NULL; unknown values give "unknown status".
 */
STARFOLD_API const char *starfold_status_string(starfold_status_t status);

/**
 * @brief The detail of the last error reported in the calling thread.
 *
 * Each failing call records one sentence naming what was wrong, for example
 * "hierarchical-copy requires num_packs >= 0, but -1 is specified". The text stays valid until the next
 * failing starfold call in the same thread.
 * @return "" when no error has been recorded in this thread.
 */
STARFOLD_API const char *starfold_last_error(void);

/**
 * @brief Element type of a tensor: TensorFlow's and NCCL's reducible types.
 *
 * **Integers** wrap around on SUM, PROD and overflow (two's complement, computed in unsigned
 * arithmetic); MEAN truncates toward zero unless promote_integer_mean asks for TensorFlow's true
 * division (float64 results, float32 for 8- and 16-bit integers).
 *
 * **Half precision** (float16, bfloat16) is stored in 2 bytes and computed in float32, as NCCL
 * does: a reduce task converts every source element to float32, combines them in float32 (left to
 * right), divides by the divisor for MEAN, and rounds the result to the stored type once, to
 * nearest even. A graph that reduces in several tasks (a ring's steps, a tree's levels, a
 * hierarchy's stages) stores its partial results in the tensor's type, so a result is rounded once
 * per task on its path: with k such steps, each element of a SUM of n values is within
 * k rounding errors of the exact float64 sum (float16: 2^-11 relative per rounding, bfloat16:
 * 2^-8), plus float32's own accumulation error. MPI's all-reduce across processes combines two
 * ranks at a time and rounds after each combination the same way. MIN and MAX are exact. NaN and
 * infinities go through; a float32 result beyond the stored type's range becomes infinity.
 *
 * Complex types and bool are not reducible here.
 */
typedef enum starfold_dtype {
    STARFOLD_FLOAT32 = 0,  /**< IEEE-754 binary32, "float32". */
    STARFOLD_FLOAT64,      /**< IEEE-754 binary64, "float64". */
    STARFOLD_INT32,        /**< two's complement 32-bit, "int32"; sums and products wrap around. */
    STARFOLD_INT64,        /**< two's complement 64-bit, "int64"; sums and products wrap around. */
    STARFOLD_FLOAT16,      /**< IEEE-754 binary16, "float16" (half): computed in float32, rounded once per task. */
    STARFOLD_BFLOAT16,     /**< bfloat16 (float32's upper 16 bits), "bfloat16": computed in float32, rounded once per task. */
    STARFOLD_INT8,         /**< two's complement 8-bit, "int8"; wraps around. */
    STARFOLD_UINT8,        /**< unsigned 8-bit, "uint8"; wraps around. */
    STARFOLD_INT16,        /**< two's complement 16-bit, "int16"; wraps around. */
    STARFOLD_UINT16,       /**< unsigned 16-bit, "uint16"; wraps around. */
    STARFOLD_UINT32,       /**< unsigned 32-bit, "uint32"; wraps around. */
    STARFOLD_UINT64        /**< unsigned 64-bit, "uint64"; wraps around. */
} starfold_dtype_t;

/** @brief Number of element types. */
#define STARFOLD_DTYPE_COUNT 12

/**
 * @brief Reduce operation, as tf.distribute.ReduceOp plus MIN, MAX and PROD.
 *
 * MEAN is the SUM divided by the number of contributing replicas. For integer types the division
 * truncates towards zero (the integer-preserving mode); TensorFlow's promotion to floating point is
 * offered by the strategy layer.
 */
typedef enum starfold_op {
    STARFOLD_OP_SUM = 0,   /**< "sum" */
    STARFOLD_OP_MEAN,      /**< "mean" */
    STARFOLD_OP_MIN,       /**< "min" */
    STARFOLD_OP_MAX,       /**< "max" */
    STARFOLD_OP_PROD       /**< "prod" */
} starfold_op_t;

/** @brief Number of reduce operations. */
#define STARFOLD_OP_COUNT 5

/** @brief Bytes of one element of @p dtype; 0 for an unknown value. */
STARFOLD_API size_t starfold_dtype_size(starfold_dtype_t dtype);

/** @brief Lower-case name ("float32", ...); "unknown" for an unknown value. */
STARFOLD_API const char *starfold_dtype_name(starfold_dtype_t dtype);

/**
 * @brief Parses a dtype name, case-insensitively: the names above, and the aliases "f32", "float",
 *        "f64", "double", "i32", "int", "i64", "f16", "half", "bf16", "i8", "u8", "i16", "u16", "u32",
 *        "u64".
 * @param [in]  name text to parse
 * @param [out] dtype the type; untouched on error
 * @return ::STARFOLD_OK, ::STARFOLD_ERR_INVALID_ARGUMENT for NULL, ::STARFOLD_ERR_NOT_FOUND for an unknown name.
 */
STARFOLD_API starfold_status_t starfold_dtype_from_string(const char *name, starfold_dtype_t *dtype);

/** @brief 1 for the integer types (signed or not), 0 for the floating-point ones and unknown values. */
STARFOLD_API int starfold_dtype_is_integer(starfold_dtype_t dtype);

/**
 * @brief Element @p index of @p data, an array of @p dtype, as a double.
 *
 * The way to read float16 and bfloat16 from C, which has no such types; exact for every type but
 * 64-bit integers beyond 2^53. 0 for an unknown dtype or NULL @p data.
 */
STARFOLD_API double starfold_element_to_double(starfold_dtype_t dtype, const void *data, size_t index);

/**
 * @brief Stores @p value into element @p index of @p data, an array of @p dtype.
 *
 * Floating-point types round to nearest even (float16 and bfloat16 too: out of range becomes
 * infinity, NaN stays NaN); integer types truncate toward zero and saturate at their range, NaN
 * becoming 0.
 * @return ::STARFOLD_OK, ::STARFOLD_ERR_INVALID_ARGUMENT for NULL @p data or an unknown dtype
 *         (nothing written).
 */
STARFOLD_API starfold_status_t starfold_element_from_double(starfold_dtype_t dtype, double value, void *data,
                                                            size_t index);

/** @brief Lower-case name ("sum", "mean", ...); "unknown" for an unknown value. */
STARFOLD_API const char *starfold_op_name(starfold_op_t op);

/**
 * @brief Parses a reduce operation name case-insensitively, as TensorFlow accepts "sum" or "MEAN".
 * @return ::STARFOLD_OK, ::STARFOLD_ERR_INVALID_ARGUMENT for NULL, ::STARFOLD_ERR_NOT_FOUND for an unknown name.
 */
STARFOLD_API starfold_status_t starfold_op_from_string(const char *name, starfold_op_t *op);

/** @brief Library version as "MAJOR.MINOR.PATCH". */
STARFOLD_API const char *starfold_version(void);

#ifdef __cplusplus
}
#endif

#endif /* STARFOLD_COMMON_H */
