/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Element types and reduce ops for MPI (mpi_types.h). MPI 3.1 has no half-precision type, so float16
 * and bfloat16 travel as MPI_UINT16_T and reduce through user ops: inout[i] = in[i] op inout[i],
 * computed in float32 and rounded once to nearest even. A reduction over p ranks therefore rounds
 * up to p - 1 times on an element's path (MPI combines two ranks' values at a time), which
 * <starfold/common.h> states as the accuracy rule.
 *
 * 8- and 16-bit integers: MPI leaves overflow undefined, and Open MPI 4.1's vectorised MPI_SUM of
 * MPI_INT8_T saturates (found by `starfold run --mpi -d int8`: 28 % of the sums of two values in
 * [-100, 100] came back as 127 or -128), where starfold's integers wrap around. Their SUM and PROD
 * are user ops too, wrapping through 32-bit unsigned arithmetic as the kernels do; MIN and MAX stay
 * MPI's.
 */
#include "config.h"

#include <pthread.h>

#include "base/common.h"
#include "base/half.h"
#include "mpi/mpi_types.h"

MPI_Datatype starfold__mpi_datatype(starfold_dtype_t dt)
{
    switch (dt) {
    case STARFOLD_FLOAT32: return MPI_FLOAT;
    case STARFOLD_FLOAT64: return MPI_DOUBLE;
    case STARFOLD_INT32: return MPI_INT32_T;
    case STARFOLD_INT64: return MPI_INT64_T;
    case STARFOLD_INT8: return MPI_INT8_T;
    case STARFOLD_UINT8: return MPI_UINT8_T;
    case STARFOLD_INT16: return MPI_INT16_T;
    case STARFOLD_UINT32: return MPI_UINT32_T;
    case STARFOLD_UINT64: return MPI_UINT64_T;
    default: return MPI_UINT16_T; /* uint16, float16, bfloat16 */
    }
}

/* The four user ops of one half type H (f16, bf16): SUM, PROD, MIN, MAX in float32. */
#define SF_HALF_USER_OP(H, NAME, EXPR)                                                               \
    static void user_##H##_##NAME(void *in, void *inout, int *len, MPI_Datatype *type)               \
    {                                                                                                \
        (void)type;                                                                                  \
        const uint16_t *a = in;                                                                      \
        uint16_t *b = inout;                                                                         \
        for (int i = 0; i < *len; i++) {                                                             \
            const float x = starfold__##H##_to_f32(a[i]), y = starfold__##H##_to_f32(b[i]);          \
            b[i] = starfold__f32_to_##H(EXPR);                                                       \
        }                                                                                            \
    }
#define SF_HALF_USER_OPS(H)                                                                          \
    SF_HALF_USER_OP(H, sum, x + y)                                                                   \
    SF_HALF_USER_OP(H, prod, x * y)                                                                  \
    SF_HALF_USER_OP(H, min, y < x ? y : x)                                                           \
    SF_HALF_USER_OP(H, max, y > x ? y : x)
SF_HALF_USER_OPS(f16)
SF_HALF_USER_OPS(bf16)

/* SUM and PROD of a small integer type T, wrapping. */
#define SF_WRAP_USER_OPS(T)                                                                          \
    static void user_##T##_sum(void *in, void *inout, int *len, MPI_Datatype *type)                  \
    {                                                                                                \
        (void)type;                                                                                  \
        const T *a = in;                                                                             \
        T *b = inout;                                                                                \
        for (int i = 0; i < *len; i++) b[i] = (T)((uint32_t)a[i] + (uint32_t)b[i]);                  \
    }                                                                                                \
    static void user_##T##_prod(void *in, void *inout, int *len, MPI_Datatype *type)                 \
    {                                                                                                \
        (void)type;                                                                                  \
        const T *a = in;                                                                             \
        T *b = inout;                                                                                \
        for (int i = 0; i < *len; i++) b[i] = (T)((uint32_t)a[i] * (uint32_t)b[i]);                  \
    }
SF_WRAP_USER_OPS(int8_t)
SF_WRAP_USER_OPS(uint8_t)
SF_WRAP_USER_OPS(int16_t)
SF_WRAP_USER_OPS(uint16_t)

enum { SF_USER_SUM, SF_USER_PROD, SF_USER_MIN, SF_USER_MAX, SF_USER_OPS };
enum { SF_U_F16, SF_U_BF16, SF_U_I8, SF_U_U8, SF_U_I16, SF_U_U16, SF_U_TYPES };
static MPI_User_function *const user_fns[SF_U_TYPES][SF_USER_OPS] = {
    [SF_U_F16] = { user_f16_sum, user_f16_prod, user_f16_min, user_f16_max },
    [SF_U_BF16] = { user_bf16_sum, user_bf16_prod, user_bf16_min, user_bf16_max },
    [SF_U_I8] = { user_int8_t_sum, user_int8_t_prod, NULL, NULL },
    [SF_U_U8] = { user_uint8_t_sum, user_uint8_t_prod, NULL, NULL },
    [SF_U_I16] = { user_int16_t_sum, user_int16_t_prod, NULL, NULL },
    [SF_U_U16] = { user_uint16_t_sum, user_uint16_t_prod, NULL, NULL },
};
/* Created on first use, under the lock (any thread may ask first); never freed: MPI_Finalize does. */
static MPI_Op user_ops[SF_U_TYPES][SF_USER_OPS];
static int user_made[SF_U_TYPES][SF_USER_OPS];
static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;

static int user_index(starfold_op_t op)
{
    switch (op) {
    case STARFOLD_OP_PROD: return SF_USER_PROD;
    case STARFOLD_OP_MIN: return SF_USER_MIN;
    case STARFOLD_OP_MAX: return SF_USER_MAX;
    default: return SF_USER_SUM; /* SUM, and MEAN before its division */
    }
}

/* The row of user_fns for @dt, or -1 when MPI's own op serves. */
static int user_type(starfold_dtype_t dt)
{
    switch (dt) {
    case STARFOLD_FLOAT16: return SF_U_F16;
    case STARFOLD_BFLOAT16: return SF_U_BF16;
    case STARFOLD_INT8: return SF_U_I8;
    case STARFOLD_UINT8: return SF_U_U8;
    case STARFOLD_INT16: return SF_U_I16;
    case STARFOLD_UINT16: return SF_U_U16;
    default: return -1;
    }
}

MPI_Op starfold__mpi_reduce_op(starfold_dtype_t dt, starfold_op_t op)
{
    const int h = user_type(dt), k = user_index(op);
    if (h < 0 || !user_fns[h][k]) {
        switch (op) {
        case STARFOLD_OP_MIN: return MPI_MIN;
        case STARFOLD_OP_MAX: return MPI_MAX;
        case STARFOLD_OP_PROD: return MPI_PROD;
        default: return MPI_SUM;
        }
    }
    MPI_Op made = MPI_OP_NULL;
    pthread_mutex_lock(&user_lock);
    if (!user_made[h][k] && MPI_Op_create(user_fns[h][k], 1, &user_ops[h][k]) == MPI_SUCCESS) user_made[h][k] = 1;
    if (user_made[h][k]) made = user_ops[h][k];
    pthread_mutex_unlock(&user_lock);
    return made;
}
