/*
 * CUDA kernels (built with nvcc when configured --with-cuda; see Makefile.am). Same semantics as
 * kernels_cpu.c and kernels_opencl.c:
 *
 *   COPY   cudaMemcpyAsync device-to-device per segment on StarPU's stream for this worker;
 *   REDUCE pairwise, left to right (dst = s0 op s1, dst = dst op s2, ...); when the destination is
 *          source k >= 1, into a scratch buffer first, then copied (see kernels.h);
 *   SCALE  dst = src / divisor (integers truncate toward zero); integers to float64 for a converting
 *          SCALE (dst = (double)src / divisor).
 *
 * Integer SUM and PROD wrap around through unsigned arithmetic. Every call synchronises its stream
 * before returning (the codelet is not declared STARPU_CUDA_ASYNC). This file is compiled without
 * config.h; it only needs StarPU and kernels.h.
 */
#include <stdint.h>

#include <starpu.h>

#include "kernels.h"

#define SF_CUDA_THREADS 256
#define SF_CUDA_MAX_BLOCKS 4096

template <typename T> struct sf_ops {
    __device__ static T add(T x, T y) { return x + y; }
    __device__ static T mul(T x, T y) { return x * y; }
};
template <> struct sf_ops<int32_t> {
    __device__ static int32_t add(int32_t x, int32_t y) { return (int32_t)((uint32_t)x + (uint32_t)y); }
    __device__ static int32_t mul(int32_t x, int32_t y) { return (int32_t)((uint32_t)x * (uint32_t)y); }
};
template <> struct sf_ops<int64_t> {
    __device__ static int64_t add(int64_t x, int64_t y) { return (int64_t)((uint64_t)x + (uint64_t)y); }
    __device__ static int64_t mul(int64_t x, int64_t y) { return (int64_t)((uint64_t)x * (uint64_t)y); }
};

template <typename T>
__global__ void sf_reduce_kernel(T *dst, const T *x, const T *y, size_t n, int op)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const T a = x[i], b = y[i];
        T r;
        switch (op) {
        case SF_K_PROD: r = sf_ops<T>::mul(a, b); break;
        case SF_K_MIN: r = b < a ? b : a; break;
        case SF_K_MAX: r = b > a ? b : a; break;
        default: r = sf_ops<T>::add(a, b); break; /* SUM, MEAN */
        }
        dst[i] = r;
    }
}

/* dst = (D)src / divisor, written as O: O = T (D wider for integers), or O = D = double when converting. */
template <typename T, typename D, typename O>
__global__ void sf_scale_kernel(O *dst, const T *src, size_t n, uint32_t divisor)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = (O)((D)src[i] / (D)divisor);
}

static unsigned blocks_for(size_t n)
{
    size_t b = (n + SF_CUDA_THREADS - 1) / SF_CUDA_THREADS;
    return (unsigned)(b > SF_CUDA_MAX_BLOCKS ? SF_CUDA_MAX_BLOCKS : (b ? b : 1));
}

static char *span_at(void *buffers[], const sf_kspan_t *s, size_t elemsize)
{
    struct starpu_vector_interface *v = (struct starpu_vector_interface *)buffers[s->buf];
    return (char *)v->ptr + s->offset * elemsize;
}

/* Span @s in the sources' element size (the destinations' too, but for a converting SCALE). */
static char *span_ptr(void *buffers[], const sf_kernel_args_t *a, const sf_kspan_t *s)
{
    return span_at(buffers, s, a->elemsize);
}

static cudaError_t cuda_copy(cudaStream_t stream, void *buffers[], const sf_kernel_args_t *a)
{
    const sf_kspan_t *src = a->spans, *dst = a->spans + a->nsrc;
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
static cudaError_t cuda_reduce_t(cudaStream_t stream, void *buffers[], const sf_kernel_args_t *a)
{
    const size_t n = a->spans[0].count, bytes = n * sizeof(T);
    T *dst = (T *)(void *)span_ptr(buffers, a, &a->spans[a->nsrc]);
    const T *s0 = (const T *)(const void *)span_ptr(buffers, a, &a->spans[0]);
    if (a->nsrc == 1)
        return (void *)dst == (const void *)s0 ? cudaSuccess
                                               : cudaMemcpyAsync(dst, s0, bytes, cudaMemcpyDeviceToDevice, stream);
    T *acc = dst, *scratch = NULL;
    if (sf_kernel_dst_alias(a)) {
        cudaError_t err = cudaMalloc((void **)&scratch, bytes);
        if (err != cudaSuccess) return err;
        acc = scratch;
    }
    const unsigned blocks = blocks_for(n);
    const T *s1 = (const T *)(const void *)span_ptr(buffers, a, &a->spans[1]);
    sf_reduce_kernel<T><<<blocks, SF_CUDA_THREADS, 0, stream>>>(acc, s0, s1, n, a->op);
    for (size_t k = 2; k < a->nsrc; k++) {
        const T *sk = (const T *)(const void *)span_ptr(buffers, a, &a->spans[k]);
        sf_reduce_kernel<T><<<blocks, SF_CUDA_THREADS, 0, stream>>>(acc, acc, sk, n, a->op);
    }
    cudaError_t err = cudaGetLastError();
    if (scratch) {
        if (err == cudaSuccess) err = cudaMemcpyAsync(dst, scratch, bytes, cudaMemcpyDeviceToDevice, stream);
        cudaError_t sync = cudaStreamSynchronize(stream);
        if (err == cudaSuccess) err = sync;
        cudaFree(scratch);
    }
    return err;
}

template <typename T, typename D, typename O>
static cudaError_t cuda_scale_t(cudaStream_t stream, void *buffers[], const sf_kernel_args_t *a)
{
    const size_t n = a->spans[0].count;
    const T *src = (const T *)(const void *)span_at(buffers, &a->spans[0], a->elemsize);
    O *dst = (O *)(void *)span_at(buffers, &a->spans[1], a->dst_elemsize);
    sf_scale_kernel<T, D, O><<<blocks_for(n), SF_CUDA_THREADS, 0, stream>>>(dst, src, n, a->divisor);
    return cudaGetLastError();
}

extern "C" void sf_kernel_cuda(void *buffers[], void *cl_arg)
{
    const sf_kernel_args_t *a = (const sf_kernel_args_t *)cl_arg;
    if (sf_kernel_cancelled(a)) return;
    if (a->fail) {
        sf_kernel_fail(a);
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
    if (err != cudaSuccess || sync != cudaSuccess) sf_kernel_fail(a);
}
