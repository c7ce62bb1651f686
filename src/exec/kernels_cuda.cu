/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * CUDA kernels (built with nvcc when configured --with-cuda; see Makefile.am). Same semantics as
 * kernels_cpu.c and kernels_opencl.c:
 *
 *   COPY   cudaMemcpyAsync device-to-device per segment on StarPU's stream for this worker;
 *   REDUCE up to SF_CUDA_FUSED sources and destinations in one pass (each element of every source
 *          read once, the result stored into every destination, so any destination may be a
 *          source); beyond that pairwise, left to right (dst = s0 op s1, dst = dst op s2, ...), into a
 *          scratch buffer first when the destination is source k >= 1 (see kernels.h), then copied to
 *          the other destinations. Segment by segment (kernels.h);
 *   SCALE  dst = src / divisor (integers truncate toward zero); integers to float64 for a converting
 *          SCALE (dst = (double)src / divisor).
 *
 * Integer SUM, PROD and the internal SUB (a variable's assign_sub) wrap around through unsigned arithmetic. Every call synchronises its stream
 * before returning (the codelet is not declared STARPU_CUDA_ASYNC). This file is compiled without
 * config.h; it only needs StarPU and kernels.h.
 */
#include <stdint.h>

#include <starpu.h>

#include "exec/kernels.h"

#define SF_CUDA_THREADS 256
#define SF_CUDA_MAX_BLOCKS 4096
#define SF_CUDA_FUSED 8

template <typename T> struct starfold__ops {
    __device__ static T add(T x, T y) { return x + y; }
    __device__ static T sub(T x, T y) { return x - y; }
    __device__ static T mul(T x, T y) { return x * y; }
};
template <> struct starfold__ops<int32_t> {
    __device__ static int32_t add(int32_t x, int32_t y) { return (int32_t)((uint32_t)x + (uint32_t)y); }
    __device__ static int32_t sub(int32_t x, int32_t y) { return (int32_t)((uint32_t)x - (uint32_t)y); }
    __device__ static int32_t mul(int32_t x, int32_t y) { return (int32_t)((uint32_t)x * (uint32_t)y); }
};
template <> struct starfold__ops<int64_t> {
    __device__ static int64_t add(int64_t x, int64_t y) { return (int64_t)((uint64_t)x + (uint64_t)y); }
    __device__ static int64_t sub(int64_t x, int64_t y) { return (int64_t)((uint64_t)x - (uint64_t)y); }
    __device__ static int64_t mul(int64_t x, int64_t y) { return (int64_t)((uint64_t)x * (uint64_t)y); }
};

template <typename T>
__global__ void starfold__reduce_kernel(T *dst, const T *x, const T *y, size_t n, int op)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const T a = x[i], b = y[i];
        T r;
        switch (op) {
        case SF_K_PROD: r = starfold__ops<T>::mul(a, b); break;
        case SF_K_SUB: r = starfold__ops<T>::sub(a, b); break;
        case SF_K_MIN: r = b < a ? b : a; break;
        case SF_K_MAX: r = b > a ? b : a; break;
        default: r = starfold__ops<T>::add(a, b); break; /* SUM, MEAN */
        }
        dst[i] = r;
    }
}

template <typename T> struct starfold__fused_args {
    const T *src[SF_CUDA_FUSED];
    T *dst[SF_CUDA_FUSED];
    int nsrc, ndst;
};

template <typename T> __device__ static T starfold__bin(T a, T b, int op)
{
    switch (op) {
    case SF_K_PROD: return starfold__ops<T>::mul(a, b);
    case SF_K_SUB: return starfold__ops<T>::sub(a, b);
    case SF_K_MIN: return b < a ? b : a;
    case SF_K_MAX: return b > a ? b : a;
    default: return starfold__ops<T>::add(a, b); /* SUM, MEAN */
    }
}

/* x / d as SCALE divides: floats directly, integers truncating toward zero (int32 through int64). */
template <typename T> __device__ static T starfold__div(T x, uint32_t d) { return x / (T)d; }
template <> __device__ int32_t starfold__div<int32_t>(int32_t x, uint32_t d) { return (int32_t)((int64_t)x / (int64_t)d); }
template <> __device__ int64_t starfold__div<int64_t>(int64_t x, uint32_t d) { return x / (int64_t)d; }

/*
 * Every destination = (src0 op src1 op ...) [/ divisor]: each element of each source read once,
 * before any store.
 */
template <typename T>
__global__ void starfold__reduce_fused_kernel(starfold__fused_args<T> p, size_t n, int op, uint32_t divisor)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        T acc = p.src[0][i];
        for (int k = 1; k < p.nsrc; k++) acc = starfold__bin<T>(acc, p.src[k][i], op);
        if (divisor > 1) acc = starfold__div<T>(acc, divisor);
        for (int d = 0; d < p.ndst; d++) p.dst[d][i] = acc;
    }
}

/* x = x / divisor in place (a REDUCE with a divisor beyond the fused kernel's reach). */
template <typename T> __global__ void starfold__divide_kernel(T *x, size_t n, uint32_t divisor)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = starfold__div<T>(x[i], divisor);
}

/* dst = (D)src / divisor, written as O: O = T (D wider for integers), or O = D = double when converting. */
template <typename T, typename D, typename O>
__global__ void starfold__scale_kernel(O *dst, const T *src, size_t n, uint32_t divisor)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = (O)((D)src[i] / (D)divisor);
}

static unsigned blocks_for(size_t n)
{
    size_t b = (n + SF_CUDA_THREADS - 1) / SF_CUDA_THREADS;
    return (unsigned)(b > SF_CUDA_MAX_BLOCKS ? SF_CUDA_MAX_BLOCKS : (b ? b : 1));
}

static char *span_at(void *buffers[], const starfold__kspan_t *s, size_t elemsize)
{
    struct starpu_vector_interface *v = (struct starpu_vector_interface *)buffers[s->buf];
    return (char *)v->ptr + s->offset * elemsize;
}

/* Span @s in the sources' element size (the destinations' too, but for a converting SCALE). */
static char *span_ptr(void *buffers[], const starfold__kernel_args_t *a, const starfold__kspan_t *s)
{
    return span_at(buffers, s, a->elemsize);
}

static cudaError_t cuda_copy(cudaStream_t stream, void *buffers[], const starfold__kernel_args_t *a)
{
    const starfold__kspan_t *src = a->spans, *dst = a->spans + a->nsrc;
    size_t si = 0, di = 0, soff = 0, doff = 0;
    while (si < a->nsrc && di < a->ndst) {
        size_t n = src[si].count - soff;
        if (dst[di].count - doff < n) n = dst[di].count - doff;
        const char *from = span_ptr(buffers, a, &src[si]) + soff * a->elemsize;
        char *to = span_ptr(buffers, a, &dst[di]) + doff * a->elemsize;
        if (from != to) {
            cudaError_t err = cudaMemcpyAsync(to, from, n * a->elemsize, cudaMemcpyDeviceToDevice, stream);
            if (err != cudaSuccess) return err;
        }
        soff += n;
        doff += n;
        if (soff == src[si].count) si++, soff = 0;
        if (doff == dst[di].count) di++, doff = 0;
    }
    return cudaSuccess;
}

template <typename T>
static cudaError_t cuda_reduce_seg(cudaStream_t stream, void *buffers[], const starfold__kernel_args_t *a,
                                   const starfold__kspan_t *sp)
{
    const size_t n = sp[0].count, bytes = n * sizeof(T);
    if (a->nsrc <= SF_CUDA_FUSED && a->ndst <= SF_CUDA_FUSED && (a->nsrc > 1 || a->ndst > 1 || a->divisor > 1)) {
        starfold__fused_args<T> p;
        p.nsrc = (int)a->nsrc;
        p.ndst = (int)a->ndst;
        for (size_t k = 0; k < a->nsrc; k++) p.src[k] = (const T *)(const void *)span_ptr(buffers, a, &sp[k]);
        for (size_t d = 0; d < a->ndst; d++) p.dst[d] = (T *)(void *)span_ptr(buffers, a, &sp[a->nsrc + d]);
        starfold__reduce_fused_kernel<T><<<blocks_for(n), SF_CUDA_THREADS, 0, stream>>>(p, n, a->op, a->divisor);
        return cudaGetLastError();
    }
    T *dst = (T *)(void *)span_ptr(buffers, a, &sp[a->nsrc]);
    const T *s0 = (const T *)(const void *)span_ptr(buffers, a, &sp[0]);
    const unsigned blocks = blocks_for(n);
    if (a->nsrc == 1) { /* a copy (more than SF_CUDA_FUSED destinations, or exactly one) */
        cudaError_t err = (void *)dst == (const void *)s0
                              ? cudaSuccess
                              : cudaMemcpyAsync(dst, s0, bytes, cudaMemcpyDeviceToDevice, stream);
        if (err == cudaSuccess && a->divisor > 1) {
            starfold__divide_kernel<T><<<blocks, SF_CUDA_THREADS, 0, stream>>>(dst, n, a->divisor);
            err = cudaGetLastError();
        }
        for (size_t d = 1; d < a->ndst && err == cudaSuccess; d++)
            err = cudaMemcpyAsync(span_ptr(buffers, a, &sp[a->nsrc + d]), dst, bytes, cudaMemcpyDeviceToDevice, stream);
        return err;
    }
    T *acc = dst, *scratch = NULL;
    if (starfold__kernel_dst_alias(a, sp)) {
        cudaError_t err = cudaMalloc((void **)&scratch, bytes);
        if (err != cudaSuccess) return err;
        acc = scratch;
    }
    const T *s1 = (const T *)(const void *)span_ptr(buffers, a, &sp[1]);
    starfold__reduce_kernel<T><<<blocks, SF_CUDA_THREADS, 0, stream>>>(acc, s0, s1, n, a->op);
    for (size_t k = 2; k < a->nsrc; k++) {
        const T *sk = (const T *)(const void *)span_ptr(buffers, a, &sp[k]);
        starfold__reduce_kernel<T><<<blocks, SF_CUDA_THREADS, 0, stream>>>(acc, acc, sk, n, a->op);
    }
    if (a->divisor > 1) starfold__divide_kernel<T><<<blocks, SF_CUDA_THREADS, 0, stream>>>(acc, n, a->divisor);
    cudaError_t err = cudaGetLastError();
    if (scratch) {
        if (err == cudaSuccess) err = cudaMemcpyAsync(dst, scratch, bytes, cudaMemcpyDeviceToDevice, stream);
        cudaError_t sync = cudaStreamSynchronize(stream);
        if (err == cudaSuccess) err = sync;
        cudaFree(scratch);
    }
    for (size_t d = 1; d < a->ndst && err == cudaSuccess; d++)
        err = cudaMemcpyAsync(span_ptr(buffers, a, &sp[a->nsrc + d]), dst, bytes, cudaMemcpyDeviceToDevice, stream);
    return err;
}

template <typename T>
static cudaError_t cuda_reduce_t(cudaStream_t stream, void *buffers[], const starfold__kernel_args_t *a)
{
    cudaError_t err = cudaSuccess;
    for (size_t sg = 0; sg < a->nseg && err == cudaSuccess; sg++)
        err = cuda_reduce_seg<T>(stream, buffers, a, starfold__kernel_segment(a, sg));
    return err;
}

template <typename T, typename D, typename O>
static cudaError_t cuda_scale_t(cudaStream_t stream, void *buffers[], const starfold__kernel_args_t *a)
{
    for (size_t sg = 0; sg < a->nseg; sg++) {
        const starfold__kspan_t *sp = starfold__kernel_segment(a, sg);
        const size_t n = sp[0].count;
        const T *src = (const T *)(const void *)span_at(buffers, &sp[0], a->elemsize);
        O *dst = (O *)(void *)span_at(buffers, &sp[1], a->dst_elemsize);
        starfold__scale_kernel<T, D, O><<<blocks_for(n), SF_CUDA_THREADS, 0, stream>>>(dst, src, n, a->divisor);
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) return err;
    }
    return cudaSuccess;
}

extern "C" void starfold__kernel_cuda(void *buffers[], void *cl_arg)
{
    const starfold__kernel_args_t *a = (const starfold__kernel_args_t *)cl_arg;
    if (starfold__kernel_cancelled(a)) return;
    if (a->fail) {
        starfold__kernel_fail(a);
        return;
    }
    cudaStream_t stream = starpu_cuda_get_local_stream();
    cudaError_t err = cudaErrorInvalidValue;
    switch (a->kind) {
    case SF_KERNEL_COPY: err = cuda_copy(stream, buffers, a); break;
    case SF_KERNEL_REDUCE:
        switch (a->dtype) {
        case SF_K_FLOAT32: err = cuda_reduce_t<float>(stream, buffers, a); break;
        case SF_K_FLOAT64: err = cuda_reduce_t<double>(stream, buffers, a); break;
        case SF_K_INT32: err = cuda_reduce_t<int32_t>(stream, buffers, a); break;
        case SF_K_INT64: err = cuda_reduce_t<int64_t>(stream, buffers, a); break;
        default: break;
        }
        break;
    case SF_KERNEL_SCALE:
        if (a->dst_dtype != a->dtype) { /* converting: integers to float64 */
            if (a->dst_dtype == SF_K_FLOAT64 && a->dtype == SF_K_INT32)
                err = cuda_scale_t<int32_t, double, double>(stream, buffers, a);
            else if (a->dst_dtype == SF_K_FLOAT64 && a->dtype == SF_K_INT64)
                err = cuda_scale_t<int64_t, double, double>(stream, buffers, a);
            break;
        }
        switch (a->dtype) {
        case SF_K_FLOAT32: err = cuda_scale_t<float, float, float>(stream, buffers, a); break;
        case SF_K_FLOAT64: err = cuda_scale_t<double, double, double>(stream, buffers, a); break;
        case SF_K_INT32: err = cuda_scale_t<int32_t, int64_t, int32_t>(stream, buffers, a); break;
        case SF_K_INT64: err = cuda_scale_t<int64_t, int64_t, int64_t>(stream, buffers, a); break;
        default: break;
        }
        break;
    default: break;
    }
    cudaError_t sync = cudaStreamSynchronize(stream);
    if (err != cudaSuccess || sync != cudaSuccess) starfold__kernel_fail(a);
}
