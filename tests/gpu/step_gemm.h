/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/* tests/gpu/bench_gpu's GEMM codelet functions: C (m x n) = alpha * A (m x k) x B (k x n), float32, row-major. */
#ifndef SF_STEP_GEMM_H
#define SF_STEP_GEMM_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sf_step_gemm_arg {
    int m, n, k;
    float alpha;
} sf_step_gemm_arg_t;

/* StarPU codelet functions; buffers: A and B read, C written, each a StarPU vector. */
void sf_step_gemm_cuda(void *buffers[], void *cl_arg);

#ifdef __cplusplus
}
#endif
#endif
