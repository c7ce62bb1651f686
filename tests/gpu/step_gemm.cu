/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The compute of tests/gpu/bench_gpu's training step: C = alpha * A x B in float32, row-major, as a
 * StarPU codelet's CUDA function (declared STARPU_CUDA_ASYNC: the kernel is queued on the worker's
 * stream and StarPU waits for it). A tiled kernel of our own, 64 x 64 outputs per block of 256 threads,
 * 4 x 4 per thread: cuBLAS would be faster, but Debian's cuBLAS 11.8 is 670 MB and cannot travel to
 * the lent GPU machine, whose own CUDA is another release. What the step needs is GPU work that a
 * reduction must overlap, with exact results to check: small integers times an integer alpha are
 * exact in float32.
 *
 *     block (bx, by) -> C[by*64 .. +64][bx*64 .. +64]; K in slices of 16 staged in shared memory
 */
#include <cuda_runtime.h>
#include <starpu.h>

#include "step_gemm.h"

namespace {

constexpr int TILE = 64, SLICE = 16, PER = 4; /* outputs per block side, K per slice, outputs per thread side */

__global__ void gemm_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M,
                            int N, int K, float alpha)
{
    __shared__ float As[SLICE][TILE + 1];
    __shared__ float Bs[SLICE][TILE];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    float acc[PER][PER] = {};
    for (int k0 = 0; k0 < K; k0 += SLICE) {
        for (int e = threadIdx.x; e < TILE * SLICE; e += blockDim.x) {
            const int r = e / SLICE, k = e % SLICE; /* A: TILE rows x SLICE columns */
            const int gr = row0 + r, gk = k0 + k;
            As[k][r] = gr < M && gk < K ? A[(size_t)gr * K + gk] : 0.0f;
            const int kb = e / TILE, c = e % TILE; /* B: SLICE rows x TILE columns */
            const int gkb = k0 + kb, gc = col0 + c;
            Bs[kb][c] = gkb < K && gc < N ? B[(size_t)gkb * N + gc] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < SLICE; k++) {
            float a[PER], b[PER];
            for (int i = 0; i < PER; i++) a[i] = As[k][ty * PER + i];
            for (int j = 0; j < PER; j++) b[j] = Bs[k][tx * PER + j];
            for (int i = 0; i < PER; i++)
                for (int j = 0; j < PER; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < PER; i++)
        for (int j = 0; j < PER; j++) {
            const int r = row0 + ty * PER + i, c = col0 + tx * PER + j;
            if (r < M && c < N) C[(size_t)r * N + c] = alpha * acc[i][j];
        }
}

} // namespace

extern "C" void sf_step_gemm_cuda(void *buffers[], void *cl_arg)
{
    const sf_step_gemm_arg_t *g = (const sf_step_gemm_arg_t *)cl_arg;
    const float *A = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const float *B = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
    float *C = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const dim3 grid((unsigned)((g->n + TILE - 1) / TILE), (unsigned)((g->m + TILE - 1) / TILE));
    gemm_kernel<<<grid, 256, 0, starpu_cuda_get_local_stream()>>>(A, B, C, g->m, g->n, g->k, g->alpha);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) STARPU_CUDA_REPORT_ERROR(err);
}
