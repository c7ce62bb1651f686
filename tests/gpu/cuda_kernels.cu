/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The CUDA kernels against the CPU kernels, on a real GPU, without StarPU's runtime.
 *
 * starfold__kernel_cuda() and starfold__kernel_cpu() take the same arguments (kernels.h): StarPU vector interfaces
 * and a starfold__kernel_args_t. This program builds those by hand - device allocations for CUDA, host
 * copies for the CPU - runs both on the same data and compares every byte of every buffer, the
 * untouched ones and the untouched margins included (an out-of-bounds write shows).
 *
 *     random case: kind x dtype x op x sources x destinations x divisor x segments x aliasing
 *         host buffers  --starfold__kernel_cpu-->  expected
 *         device copies --starfold__kernel_cuda--> got (copied back)      every byte equal
 *
 * Every kernel reduces left to right in the dtype, so the results are bitwise equal, floats included.
 * Then it times the fused reduce (8 sources -> 1 and -> 8 destinations) against cudaMemcpy, the
 * figure the cost model's gpu_memory_GBps stands for.
 *
 * Build and run (tests/gpu/run.sh does both): needs nvcc and StarPU's headers, not a CUDA-enabled
 * StarPU: starpu_cuda_get_local_stream() is provided here (the default stream).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>

#include "base/half.h"
#include "exec/kernels.h"

extern "C" cudaStream_t starpu_cuda_get_local_stream(void) { return 0; }
/* The kernels' timing hook (template.c): these hand-made arguments are never timed. */
extern "C" void starfold__kernel_time(starfold__kernel_args_t *a, int end)
{
    (void)a;
    (void)end;
}

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));     \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

static uint64_t rng = 88172645463325252ULL;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static size_t esize(int dt)
{
    switch (dt) {
    case SF_K_FLOAT64: case SF_K_INT64: case SF_K_UINT64: return 8;
    case SF_K_FLOAT16: case SF_K_BFLOAT16: case SF_K_INT16: case SF_K_UINT16: return 2;
    case SF_K_INT8: case SF_K_UINT8: return 1;
    default: return 4;
    }
}

/*
 * Small values (quarters, -3..3 for PROD; unsigned types without the sign) so sums and products stay
 * in range; float16 and bfloat16 are computed in float32 on both sides and rounded once, so they
 * match bitwise as long as a task has at most SF_CUDA_FUSED (8) sources (one_case keeps to that).
 */
static void fill(void *p, int dt, size_t n, int prod)
{
    for (size_t i = 0; i < n; i++) {
        int v = prod ? (int)rnd(7) - 3 : (int)rnd(41) - 20;
        const float f = prod ? (float)v : v * 0.25f;
        switch (dt) {
        case SF_K_FLOAT32: ((float *)p)[i] = f; break;
        case SF_K_FLOAT64: ((double *)p)[i] = prod ? (double)v : v * 0.25; break;
        case SF_K_FLOAT16: ((uint16_t *)p)[i] = starfold__f32_to_f16(f); break;
        case SF_K_BFLOAT16: ((uint16_t *)p)[i] = starfold__f32_to_bf16(f); break;
        case SF_K_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
        case SF_K_UINT8: ((uint8_t *)p)[i] = (uint8_t)(v < 0 ? -v : v); break;
        case SF_K_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
        case SF_K_UINT16: ((uint16_t *)p)[i] = (uint16_t)(v < 0 ? -v : v); break;
        case SF_K_INT32: ((int32_t *)p)[i] = v; break;
        case SF_K_UINT32: ((uint32_t *)p)[i] = (uint32_t)(v < 0 ? -v : v); break;
        case SF_K_UINT64: ((uint64_t *)p)[i] = (uint64_t)(v < 0 ? -v : v); break;
        default: ((int64_t *)p)[i] = v; break;
        }
    }
}

#define MAXB 40
#define MARGIN 16 /* elements of slack around every span, checked untouched */

typedef struct bufset {
    int n;
    size_t bytes[MAXB];
    unsigned char *host[MAXB], *ref[MAXB];
    void *dev[MAXB];
    struct starpu_vector_interface cpu_if[MAXB], gpu_if[MAXB];
    void *cpu_ptrs[MAXB], *gpu_ptrs[MAXB];
} bufset_t;

static int add_buf(bufset_t *b, size_t bytes, int dt, int prod)
{
    const int k = b->n++;
    b->bytes[k] = bytes;
    b->host[k] = (unsigned char *)malloc(bytes);
    b->ref[k] = (unsigned char *)malloc(bytes);
    fill(b->host[k], dt, bytes / esize(dt), prod);
    memcpy(b->ref[k], b->host[k], bytes);
    CHECK(cudaMalloc(&b->dev[k], bytes));
    CHECK(cudaMemcpy(b->dev[k], b->host[k], bytes, cudaMemcpyHostToDevice));
    memset(&b->cpu_if[k], 0, sizeof b->cpu_if[k]);
    b->cpu_if[k].ptr = (uintptr_t)b->ref[k];
    b->gpu_if[k] = b->cpu_if[k];
    b->gpu_if[k].ptr = (uintptr_t)b->dev[k];
    b->cpu_ptrs[k] = &b->cpu_if[k];
    b->gpu_ptrs[k] = &b->gpu_if[k];
    return k;
}

static void free_bufs(bufset_t *b)
{
    for (int k = 0; k < b->n; k++) {
        free(b->host[k]);
        free(b->ref[k]);
        cudaFree(b->dev[k]);
    }
    b->n = 0;
}

static const char *const kinds[] = { "copy", "reduce", "scale" };
static const char *const dtypes[] = { "float32", "float64", "int32", "int64", "float16", "bfloat16",
                                      "int8",    "uint8",   "int16", "uint16", "uint32", "uint64" };
static const char *const ops[] = { "sum", "mean", "min", "max", "prod" };

/* Runs one random case; returns 0 when every byte matches. */
static int one_case(int index)
{
    bufset_t b;
    memset(&b, 0, sizeof b);
    int cancelled = 0, status = 0;
    starfold__kernel_args_t a;
    memset(&a, 0, sizeof a);
    a.cancelled = &cancelled;
    a.status = &status;
    a.kind = (int)rnd(3);
    a.dtype = (int)rnd(SF_K_DTYPE_COUNT);
    a.dst_dtype = a.dtype;
    a.op = a.kind == SF_KERNEL_REDUCE ? (int)rnd(5) : SF_K_SUM;
    a.divisor = 1;
    const int prod = a.op == SF_K_PROD;
    const size_t counts[] = { 1, 7, 1000, 4099, 65537, 300001 };
    size_t count = counts[rnd(6)];
    starfold__kspan_t spans[2048];
    size_t ns = 0;
    int alias = 0;
    if (a.kind == SF_KERNEL_COPY) { /* concat(src) -> concat(dst), different cuts on each side */
        const int nsrc = 1 + (int)rnd(5), ndst = 1 + (int)rnd(5);
        const int bs = add_buf(&b, (count + 2 * MARGIN) * esize(a.dtype), a.dtype, 0);
        const int bd = add_buf(&b, (count + 2 * MARGIN) * esize(a.dtype), a.dtype, 0);
        for (int side = 0; side < 2; side++) {
            const int parts = side ? ndst : nsrc;
            size_t at = 0;
            for (int p = 0; p < parts; p++) {
                const size_t hi = p == parts - 1 ? count : count * (size_t)(p + 1) / (size_t)parts;
                if (hi > at) spans[ns++] = (starfold__kspan_t){ (unsigned)(side ? bd : bs), MARGIN + at, hi - at };
                at = hi;
            }
            if (side == 0) a.nsrc = ns;
            else a.ndst = ns - a.nsrc;
        }
        a.nseg = 1;
    } else {
        const int half = a.dtype == SF_K_FLOAT16 || a.dtype == SF_K_BFLOAT16;
        const int nsrc = a.kind == SF_KERNEL_SCALE ? 1 : 1 + (int)rnd(half ? 8 : 12);
        const int ndst = a.kind == SF_KERNEL_SCALE ? 1 : 1 + (int)rnd(10);
        if (a.kind == SF_KERNEL_SCALE) {
            a.divisor = 1 + rnd(9);
            if (rnd(2)) { /* converting: TensorFlow's truediv */
                if (a.dtype == SF_K_INT32 || a.dtype == SF_K_INT64 || a.dtype == SF_K_UINT32 || a.dtype == SF_K_UINT64)
                    a.dst_dtype = SF_K_FLOAT64;
                else if (a.dtype >= SF_K_INT8 && a.dtype <= SF_K_UINT16)
                    a.dst_dtype = SF_K_FLOAT32;
            }
        } else if ((a.op == SF_K_SUM || a.op == SF_K_MEAN) && rnd(2)) {
            a.divisor = (uint32_t)nsrc; /* MEAN fused into the reduction */
        }
        a.nsrc = (size_t)nsrc;
        a.ndst = (size_t)ndst;
        a.nseg = 1 + rnd(9); /* from 4 segments a fused REDUCE is one batched launch */
        if (count < a.nseg) a.nseg = 1;
        int src_buf[16], dst_buf[16];
        for (int s = 0; s < nsrc; s++) src_buf[s] = add_buf(&b, (count + 2 * MARGIN) * esize(a.dtype), a.dtype, prod);
        for (int d = 0; d < ndst; d++)
            dst_buf[d] = add_buf(&b, (count + 2 * MARGIN) * esize(a.dst_dtype), a.dst_dtype, 0);
        /* In place: the first destination is one of the sources, element for element. */
        if (a.kind == SF_KERNEL_REDUCE && rnd(3) == 0) {
            alias = 1;
            dst_buf[0] = src_buf[rnd((unsigned)nsrc)];
        }
        for (size_t sg = 0; sg < a.nseg; sg++) {
            const size_t lo = count * sg / a.nseg, len = count * (sg + 1) / a.nseg - lo;
            for (int s = 0; s < nsrc; s++) spans[ns++] = (starfold__kspan_t){ (unsigned)src_buf[s], MARGIN + lo, len };
            for (int d = 0; d < ndst; d++) spans[ns++] = (starfold__kspan_t){ (unsigned)dst_buf[d], MARGIN + lo, len };
        }
    }
    a.elemsize = esize(a.dtype);
    a.dst_elemsize = esize(a.dst_dtype);
    a.spans = spans;

    starfold__kernel_cpu(b.cpu_ptrs, &a);
    const int cpu_status = status;
    status = 0;
    starfold__kernel_cuda(b.gpu_ptrs, &a);
    CHECK(cudaDeviceSynchronize());
    int bad = cpu_status != 0 || status != 0;
    for (int k = 0; k < b.n && !bad; k++) {
        CHECK(cudaMemcpy(b.host[k], b.dev[k], b.bytes[k], cudaMemcpyDeviceToHost));
        if (memcmp(b.host[k], b.ref[k], b.bytes[k]) != 0) {
            size_t at = 0;
            while (b.host[k][at] == b.ref[k][at]) at++;
            fprintf(stderr, "  buffer %d differs at byte %zu\n", k, at);
            bad = 1;
        }
    }
    if (bad || index < 0)
        fprintf(stderr, "case %d: %s %s %s, %zu elements, %zu sources, %zu destinations, %zu segments, divisor %u%s%s: %s\n",
                index, kinds[a.kind], dtypes[a.dtype], ops[a.op], count, a.nsrc, a.ndst, a.nseg, a.divisor,
                a.dst_dtype != a.dtype ? (a.dst_dtype == SF_K_FLOAT32 ? ", to float32" : ", to float64") : "", alias ? ", in place" : "", bad ? "WRONG" : "ok");
    free_bufs(&b);
    return bad;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* GB/s of bytes read + written by the fused reduce (8 sources, @ndst destinations) and by a D2D copy. */
static void bandwidth(void)
{
    const size_t n = (size_t)64 << 20 >> 2; /* 64 MiB of float32 per buffer */
    float *src[8], *dst[8];
    for (int k = 0; k < 8; k++) {
        CHECK(cudaMalloc(&src[k], n * 4));
        CHECK(cudaMalloc(&dst[k], n * 4));
        CHECK(cudaMemset(src[k], 0, n * 4));
    }
    struct starpu_vector_interface ifs[16];
    void *ptrs[16];
    for (int k = 0; k < 16; k++) {
        memset(&ifs[k], 0, sizeof ifs[k]);
        ifs[k].ptr = (uintptr_t)(k < 8 ? src[k] : dst[k - 8]);
        ptrs[k] = &ifs[k];
    }
    int cancelled = 0, status = 0;
    for (int ndst = 1; ndst <= 8; ndst += 7) {
        starfold__kspan_t spans[16];
        for (int k = 0; k < 8 + ndst; k++) spans[k] = (starfold__kspan_t){ (unsigned)k, 0, n };
        starfold__kernel_args_t a;
        memset(&a, 0, sizeof a);
        a.cancelled = &cancelled, a.status = &status, a.kind = SF_KERNEL_REDUCE, a.dtype = a.dst_dtype = SF_K_FLOAT32;
        a.op = SF_K_SUM, a.divisor = 1, a.elemsize = a.dst_elemsize = 4, a.nseg = 1, a.nsrc = 8, a.ndst = (size_t)ndst;
        a.spans = spans;
        starfold__kernel_cuda(ptrs, &a); /* warm-up */
        const int reps = 20;
        const double t0 = now();
        for (int r = 0; r < reps; r++) starfold__kernel_cuda(ptrs, &a);
        const double t = (now() - t0) / reps;
        printf("  fused reduce, 8 x 64 MiB -> %d: %8.3f ms, %7.1f GB/s (bytes read + written)\n", ndst, t * 1e3,
               (double)(8 + ndst) * n * 4 / t / 1e9);
    }
    const int reps = 20;
    CHECK(cudaMemcpy(dst[0], src[0], n * 4, cudaMemcpyDeviceToDevice));
    CHECK(cudaDeviceSynchronize());
    const double t0 = now();
    for (int r = 0; r < reps; r++) CHECK(cudaMemcpy(dst[r % 8], src[r % 8], n * 4, cudaMemcpyDeviceToDevice));
    CHECK(cudaDeviceSynchronize());
    const double t = (now() - t0) / reps;
    printf("  cudaMemcpy D2D, 64 MiB:           %8.3f ms, %7.1f GB/s (bytes read + written)\n", t * 1e3,
           2.0 * n * 4 / t / 1e9);
    for (int k = 0; k < 8; k++) cudaFree(src[k]), cudaFree(dst[k]);
}

int main(int argc, char **argv)
{
    int cases = argc > 1 ? atoi(argv[1]) : 3000;
    cudaDeviceProp prop;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        fprintf(stderr, "cuda_kernels: no CUDA device\n");
        return 77;
    }
    printf("cuda_kernels: %s, %d random cases against the CPU kernels\n", prop.name, cases);
    int wrong = 0;
    for (int i = 0; i < cases; i++) wrong += one_case(i);
    printf("  %d of %d cases bitwise equal\n", cases - wrong, cases);
    bandwidth();
    return wrong ? 1 : 0;
}
