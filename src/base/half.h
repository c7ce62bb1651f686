/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * float16 and bfloat16 <-> float32, bit by bit, for every kernel (CPU, CUDA) and every layer that
 * reads or writes half-precision elements (types.c, the MPI ops). Standalone: no config.h, valid C11
 * and CUDA C++ (device code included), so that all of them round the same way.
 *
 *   float16  = sign | exponent (5 bits, bias 15) | mantissa (10 bits)
 *   bfloat16 = sign | exponent (8 bits, bias 127) | mantissa (7 bits)   = float32's upper half
 *
 * To float32 is exact for both. From float32 rounds to nearest, ties to even; out of range becomes
 * infinity; NaN stays NaN (quiet, its upper payload kept: float16's as F16C's VCVTPS2PH gives it, so
 * that the CPU kernels' vector path and this one agree bit for bit). The float16 conversions are F. Giesen's branch-light ones
 * ("half_to_float" / "float_to_half_fast3_rtne"): subnormals go through one float32 addition, so
 * they need float32 arithmetic in round-to-nearest, which every starfold build uses (no -ffast-math).
 */
#ifndef STARFOLD_SRC_HALF_H
#define STARFOLD_SRC_HALF_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define SF_HALF_FN static __host__ __device__ inline
#else
#define SF_HALF_FN static inline
#endif

SF_HALF_FN uint32_t starfold__f32_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

SF_HALF_FN float starfold__f32_from_bits(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

SF_HALF_FN float starfold__f16_to_f32(uint16_t h)
{
    const uint32_t shifted_exp = 0x7c00u << 13; /* float16's exponent field, moved to float32's place */
    uint32_t o = ((uint32_t)h & 0x7fffu) << 13;
    const uint32_t exp = shifted_exp & o;
    o += (127u - 15u) << 23; /* rebias */
    if (exp == shifted_exp) {
        o += (128u - 16u) << 23; /* infinity, NaN */
    } else if (exp == 0) {       /* zero, subnormal: renormalise through one subtraction */
        o += 1u << 23;
        o = starfold__f32_bits(starfold__f32_from_bits(o) - starfold__f32_from_bits(113u << 23));
    }
    return starfold__f32_from_bits(o | ((uint32_t)h & 0x8000u) << 16);
}

SF_HALF_FN uint16_t starfold__f32_to_f16(float f)
{
    uint32_t u = starfold__f32_bits(f);
    const uint32_t sign = u & 0x80000000u;
    uint32_t o;
    u ^= sign;
    if (u >= (127u + 16u) << 23) {                 /* >= 65536 (or infinity, NaN) */
        /* NaN: quiet, the upper payload kept (as x86's F16C converts); else infinity */
        o = u > 255u << 23 ? 0x7e00u | ((u >> 13) & 0x3ffu) : 0x7c00u;
    } else if (u < 113u << 23) {                   /* below float16's smallest normal: subnormal or 0 */
        const float magic = starfold__f32_from_bits(((127u - 15u) + (23u - 10u) + 1u) << 23);
        o = starfold__f32_bits(starfold__f32_from_bits(u) + magic) - starfold__f32_bits(magic);
    } else {
        const uint32_t odd = (u >> 13) & 1u;        /* ties to even */
        u += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
        o = u >> 13;                                /* a carry out of the mantissa reaches infinity */
    }
    return (uint16_t)(o | sign >> 16);
}

SF_HALF_FN float starfold__bf16_to_f32(uint16_t h)
{
    return starfold__f32_from_bits((uint32_t)h << 16);
}

SF_HALF_FN uint16_t starfold__f32_to_bf16(float f)
{
    const uint32_t u = starfold__f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN, quiet */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);               /* ties to even */
}

#endif /* STARFOLD_SRC_HALF_H */
