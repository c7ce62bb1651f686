/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * CUDA kernels (built with nvcc when configured --with-cuda; see Makefile.am). Same semantics as
 * kernels_cpu.c and kernels_opencl.c:
 *
 *   COPY   cudaMemcpyAsync device-to-device per segment on StarPU's stream for this worker; more
 *          than SF_CUDA_BATCH_MIN segments in one kernel launch (batched, below);
 *   REDUCE up to SF_CUDA_FUSED sources and destinations in one pass (each element of every source
 *          read once, the result stored into every destination, so any destination may be a
 *          source); beyond that pairwise, left to right (dst = s0 op s1, dst = dst op s2, ...), into a
 *          scratch buffer first when the destination is source k >= 1 (see kernels.h), then copied to
 *          the other destinations. Segment by segment (kernels.h), except that a fused REDUCE of
 *          several segments is one launch (batched);
 *   SCALE  dst = src / divisor (integers truncate toward zero); integers to float64 for a converting
 *          SCALE (dst = (double)src / divisor).
 *
 * float16 and bfloat16 are loaded into float32, computed there and rounded once when stored
 * (starfold__acc): once per task in the fused and batched kernels; beyond SF_CUDA_FUSED sources the
 * pairwise kernels round after each source.
 *
 * Batched: a task over views of one list (1,000 tensors of 4 KiB) has a segment per tensor, and a
 * launch (or a cudaMemcpyAsync) per segment cost 66 ms per step on an H200 where the same bytes as
 * one tensor took 2 ms. The segments are cut into chunks of at most SF_CUDA_CHUNK elements, one block
 * each; a table of the chunks and of each segment's pointers goes to the GPU ahead of the kernel, in
 * stream-ordered memory (cudaMallocAsync), so the whole task is one copy and one launch:
 *
 *     host:  chunks [seg 0: 0..4095][seg 0: 4096..5119][seg 1: 0..1023] ...  ptrs [seg][src..., dst...]
 *     GPU:   block b reduces chunk b's elements of its segment's sources into its destinations
 *
 * Where stream-ordered memory is refused, the segments go one by one as before.
 *
 * Integer SUM, PROD and the internal SUB (a variable's assign_sub) wrap around through unsigned arithmetic. Every call synchronises its stream
 * before returning (the codelet is not declared STARPU_CUDA_ASYNC). This file is compiled without
 * config.h; it only needs StarPU and kernels.h.
 */
#include <stdint.h>

#include <starpu.h>

#include "base/half.h"
#include "exec/kernels.h"

#define SF_CUDA_THREADS 256
#define SF_CUDA_MAX_BLOCKS 4096
#define SF_CUDA_FUSED 8
#define SF_CUDA_CHUNK 8192    /* elements of one segment per block of a batched kernel */
#define SF_CUDA_BATCH_MIN 4   /* segments (COPY: pieces) from which a task is batched */

/* Everything but the codelet function has internal linkage: no kernel or helper of this file is a
 * global name of libstarfold (tests/check-symbols.sh). */
namespace {

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

/* 8- and 16-bit integers wrap through 32-bit unsigned arithmetic (no promotion to a signed int that overflows). */
#define SF_SMALL_INT_OPS(T)                                                                          \
    template <> struct starfold__ops<T> {                                                            \
        __device__ static T add(T x, T y) { return (T)((uint32_t)x + (uint32_t)y); }                 \
        __device__ static T sub(T x, T y) { return (T)((uint32_t)x - (uint32_t)y); }                 \
        __device__ static T mul(T x, T y) { return (T)((uint32_t)x * (uint32_t)y); }                 \
    };
SF_SMALL_INT_OPS(int8_t)
SF_SMALL_INT_OPS(uint8_t)
SF_SMALL_INT_OPS(int16_t)
SF_SMALL_INT_OPS(uint16_t)

/* float16 and bfloat16 as stored: 16 bits, computed in float32 (base/half.h). */
struct starfold__f16 {
    uint16_t bits;
};
struct starfold__bf16 {
    uint16_t bits;
};

/*
 * What a kernel computes an element of T in (A), and the conversions: T itself for every type but
 * float16 and bfloat16, which load into float32 and are rounded once when stored.
 */
template <typename T> struct starfold__acc {
    typedef T A;
    __device__ static A load(T x) { return x; }
    __device__ static T store(A x) { return x; }
};
template <> struct starfold__acc<starfold__f16> {
    typedef float A;
    __device__ static float load(starfold__f16 x) { return starfold__f16_to_f32(x.bits); }
    __device__ static starfold__f16 store(float x) { return { starfold__f32_to_f16(x) }; }
};
template <> struct starfold__acc<starfold__bf16> {
    typedef float A;
    __device__ static float load(starfold__bf16 x) { return starfold__bf16_to_f32(x.bits); }
    __device__ static starfold__bf16 store(float x) { return { starfold__f32_to_bf16(x) }; }
};

template <typename T> __device__ T starfold__bin(T a, T b, int op);

/* dst = x op y, pairwise (float16 and bfloat16: rounded after each pair). */
template <typename T>
__global__ void starfold__reduce_kernel(T *dst, const T *x, const T *y, size_t n, int op)
{
    typedef starfold__acc<T> C;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = C::store(starfold__bin<typename C::A>(C::load(x[i]), C::load(y[i]), op));
}

template <typename T> struct starfold__fused_args {
    const T *src[SF_CUDA_FUSED];
    T *dst[SF_CUDA_FUSED];
    int nsrc, ndst;
};

template <typename T> __device__ T starfold__bin(T a, T b, int op)
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
template <> __device__ int8_t starfold__div<int8_t>(int8_t x, uint32_t d) { return (int8_t)((int64_t)x / (int64_t)d); }
template <> __device__ int16_t starfold__div<int16_t>(int16_t x, uint32_t d) { return (int16_t)((int64_t)x / (int64_t)d); }
template <> __device__ uint8_t starfold__div<uint8_t>(uint8_t x, uint32_t d) { return (uint8_t)((uint32_t)x / d); }
template <> __device__ uint16_t starfold__div<uint16_t>(uint16_t x, uint32_t d) { return (uint16_t)((uint32_t)x / d); }
template <> __device__ uint32_t starfold__div<uint32_t>(uint32_t x, uint32_t d) { return x / d; }
template <> __device__ uint64_t starfold__div<uint64_t>(uint64_t x, uint32_t d) { return x / (uint64_t)d; }

/*
 * Every destination = (src0 op src1 op ...) [/ divisor]: each element of each source read once,
 * before any store.
 */
template <typename T>
__global__ void starfold__reduce_fused_kernel(starfold__fused_args<T> p, size_t n, int op, uint32_t divisor)
{
    typedef starfold__acc<T> C;
    typedef typename C::A A;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        A acc = C::load(p.src[0][i]);
        for (int k = 1; k < p.nsrc; k++) acc = starfold__bin<A>(acc, C::load(p.src[k][i]), op);
        if (divisor > 1) acc = starfold__div<A>(acc, divisor);
        const T out = C::store(acc);
        for (int d = 0; d < p.ndst; d++) p.dst[d][i] = out;
    }
}

/* Elements [lo, lo + n) of segment seg (batched kernels). */
struct starfold__chunk {
    size_t seg, lo, n;
};

/* The fused kernel over chunk blockIdx.x: ptrs holds each segment's nsrc sources then ndst destinations. */
template <typename T>
__global__ void starfold__reduce_batched_kernel(const starfold__chunk *chunks, T *const *ptrs, int nsrc, int ndst, int op,
                                                uint32_t divisor)
{
    const starfold__chunk c = chunks[blockIdx.x];
    T *const *p = ptrs + c.seg * (size_t)(nsrc + ndst);
    typedef starfold__acc<T> C;
    typedef typename C::A A;
    for (size_t i = c.lo + threadIdx.x; i < c.lo + c.n; i += blockDim.x) {
        A acc = C::load(p[0][i]);
        for (int k = 1; k < nsrc; k++) acc = starfold__bin<A>(acc, C::load(p[k][i]), op);
        if (divisor > 1) acc = starfold__div<A>(acc, divisor);
        const T out = C::store(acc);
        for (int d = 0; d < ndst; d++) p[nsrc + d][i] = out;
    }
}

/* Copies chunk blockIdx.x, in 4-byte words (every dtype's size is a multiple): ptrs[2 seg] to ptrs[2 seg + 1]. */
__global__ void starfold__copy_batched_kernel(const starfold__chunk *chunks, uint32_t *const *ptrs)
{
    const starfold__chunk c = chunks[blockIdx.x];
    const uint32_t *from = ptrs[2 * c.seg];
    uint32_t *to = ptrs[2 * c.seg + 1];
    for (size_t i = c.lo + threadIdx.x; i < c.lo + c.n; i += blockDim.x) to[i] = from[i];
}

/* x = x / divisor in place (a REDUCE with a divisor beyond the fused kernel's reach). */
template <typename T> __global__ void starfold__divide_kernel(T *x, size_t n, uint32_t divisor)
{
    typedef starfold__acc<T> C;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = C::store(starfold__div<typename C::A>(C::load(x[i]), divisor));
}

/*
 * dst = (D)src / divisor, written as O: O = T (D wider for integers, float for float16 and bfloat16),
 * or O = D = double when converting.
 */
template <typename T, typename D, typename O>
__global__ void starfold__scale_kernel(O *dst, const T *src, size_t n, uint32_t divisor)
{
    typedef starfold__acc<O> CO;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = CO::store((typename CO::A)((D)starfold__acc<T>::load(src[i]) / (D)divisor));
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

/*
 * A batched launch's tables: @nseg segments of @per pointers each and the chunks of their @counts
 * elements, laid out host-side (malloc) then copied into one stream-ordered allocation on @stream.
 * *chunks_out and *ptrs_out point into *mem, which the caller frees with cudaFreeAsync after the
 * launch; *nchunks_out is 0 when there is nothing to do.
 */
typedef struct batch_tables {
    void *mem;
    starfold__chunk *chunks;
    void **ptrs;
    size_t nchunks;
} batch_tables_t;

static size_t chunks_of(size_t n) { return (n + SF_CUDA_CHUNK - 1) / SF_CUDA_CHUNK; }

static cudaError_t batch_upload(cudaStream_t stream, const void *host, size_t bytes, batch_tables_t *t, size_t nptrs)
{
    cudaError_t err = cudaMallocAsync(&t->mem, bytes, stream);
    if (err != cudaSuccess) {
        (void)cudaGetLastError(); /* the refusal is not the task's error: the caller goes segment by segment */
        t->mem = NULL;
        return err;
    }
    /* From pageable memory: the call returns once @host is staged, so the caller may free it. */
    err = cudaMemcpyAsync(t->mem, host, bytes, cudaMemcpyHostToDevice, stream);
    t->ptrs = (void **)t->mem;
    t->chunks = (starfold__chunk *)((char *)t->mem + nptrs * sizeof(void *));
    return err;
}

/* Appends the chunks of segment @seg (@n elements) to @c from index *k. */
static void add_chunks(starfold__chunk *c, size_t *k, size_t seg, size_t n)
{
    for (size_t lo = 0; lo < n; lo += SF_CUDA_CHUNK) c[(*k)++] = { seg, lo, n - lo < SF_CUDA_CHUNK ? n - lo : SF_CUDA_CHUNK };
}

/* A fused REDUCE of every segment in one launch; cudaErrorNotSupported when it must go segment by segment. */
template <typename T>
static cudaError_t cuda_reduce_batched(cudaStream_t stream, void *buffers[], const starfold__kernel_args_t *a)
{
    const size_t per = a->nsrc + a->ndst;
    size_t nchunks = 0;
    for (size_t sg = 0; sg < a->nseg; sg++) nchunks += chunks_of(starfold__kernel_segment(a, sg)[0].count);
    if (nchunks == 0) return cudaSuccess;
    if (nchunks > 0x7fffffff) return cudaErrorNotSupported;
    const size_t nptrs = a->nseg * per, bytes = nptrs * sizeof(void *) + nchunks * sizeof(starfold__chunk);
    char *host = (char *)malloc(bytes);
    if (!host) return cudaErrorNotSupported;
    void **ptrs = (void **)host;
    starfold__chunk *chunks = (starfold__chunk *)(host + nptrs * sizeof(void *));
    size_t k = 0;
    for (size_t sg = 0; sg < a->nseg; sg++) {
        const starfold__kspan_t *sp = starfold__kernel_segment(a, sg);
        for (size_t j = 0; j < per; j++) ptrs[sg * per + j] = span_ptr(buffers, a, &sp[j]);
        add_chunks(chunks, &k, sg, sp[0].count);
    }
    batch_tables_t t;
    cudaError_t err = batch_upload(stream, host, bytes, &t, nptrs);
    free(host);
    if (!t.mem) return cudaErrorNotSupported;
    if (err == cudaSuccess) {
        starfold__reduce_batched_kernel<T><<<(unsigned)nchunks, SF_CUDA_THREADS, 0, stream>>>(
            t.chunks, (T *const *)t.ptrs, (int)a->nsrc, (int)a->ndst, a->op, a->divisor);
        err = cudaGetLastError();
    }
    cudaError_t freed = cudaFreeAsync(t.mem, stream);
    return err != cudaSuccess ? err : freed;
}

/* The (from, to, elements) pieces of a COPY: its sources' elements, in order, into its destinations'. */
template <typename F> static void copy_pieces(void *buffers[], const starfold__kernel_args_t *a, F &&each)
{
    const starfold__kspan_t *src = a->spans, *dst = a->spans + a->nsrc;
    size_t si = 0, di = 0, soff = 0, doff = 0;
    while (si < a->nsrc && di < a->ndst) {
        size_t n = src[si].count - soff;
        if (dst[di].count - doff < n) n = dst[di].count - doff;
        const char *from = span_ptr(buffers, a, &src[si]) + soff * a->elemsize;
        char *to = span_ptr(buffers, a, &dst[di]) + doff * a->elemsize;
        if (from != to && n) each(from, to, n);
        soff += n;
        doff += n;
        if (soff == src[si].count) si++, soff = 0;
        if (doff == dst[di].count) di++, doff = 0;
    }
}

/* A COPY of many pieces in one launch; cudaErrorNotSupported when it must go piece by piece. */
static cudaError_t cuda_copy_batched(cudaStream_t stream, void *buffers[], const starfold__kernel_args_t *a, size_t npieces)
{
    const size_t words = a->elemsize / 4;
    size_t nchunks = 0;
    copy_pieces(buffers, a, [&](const char *, char *, size_t n) { nchunks += chunks_of(n * words); });
    if (nchunks == 0) return cudaSuccess;
    if (nchunks > 0x7fffffff || a->elemsize % 4) return cudaErrorNotSupported;
    const size_t nptrs = 2 * npieces, bytes = nptrs * sizeof(void *) + nchunks * sizeof(starfold__chunk);
    char *host = (char *)malloc(bytes);
    if (!host) return cudaErrorNotSupported;
    void **ptrs = (void **)host;
    starfold__chunk *chunks = (starfold__chunk *)(host + nptrs * sizeof(void *));
    size_t k = 0, piece = 0;
    copy_pieces(buffers, a, [&](const char *from, char *to, size_t n) {
        ptrs[2 * piece] = (void *)from;
        ptrs[2 * piece + 1] = to;
        add_chunks(chunks, &k, piece++, n * words);
    });
    batch_tables_t t;
    cudaError_t err = batch_upload(stream, host, bytes, &t, nptrs);
    free(host);
    if (!t.mem) return cudaErrorNotSupported;
    if (err == cudaSuccess) {
        starfold__copy_batched_kernel<<<(unsigned)nchunks, SF_CUDA_THREADS, 0, stream>>>(t.chunks, (uint32_t *const *)t.ptrs);
        err = cudaGetLastError();
    }
    cudaError_t freed = cudaFreeAsync(t.mem, stream);
    return err != cudaSuccess ? err : freed;
}

static cudaError_t cuda_copy(cudaStream_t stream, void *buffers[], const starfold__kernel_args_t *a)
{
    size_t npieces = 0;
    copy_pieces(buffers, a, [&](const char *, char *, size_t) { npieces++; });
    if (npieces >= SF_CUDA_BATCH_MIN) {
        const cudaError_t err = cuda_copy_batched(stream, buffers, a, npieces);
        if (err != cudaErrorNotSupported) return err;
    }
    cudaError_t err = cudaSuccess;
    copy_pieces(buffers, a, [&](const char *from, char *to, size_t n) {
        if (err == cudaSuccess) err = cudaMemcpyAsync(to, from, n * a->elemsize, cudaMemcpyDeviceToDevice, stream);
    });
    return err;
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
    if (a->nseg >= SF_CUDA_BATCH_MIN && a->nsrc <= SF_CUDA_FUSED && a->ndst <= SF_CUDA_FUSED) {
        const cudaError_t err = cuda_reduce_batched<T>(stream, buffers, a);
        if (err != cudaErrorNotSupported) return err;
    }
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

/* The work of one task; the stream is synchronised before it returns. */
void kernel_cuda(void *buffers[], const starfold__kernel_args_t *a)
{
    if (starfold__kernel_cancelled(a)) return;
    if (starfold__kernel_hooked(a)) {
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
        case SF_K_FLOAT16: err = cuda_reduce_t<starfold__f16>(stream, buffers, a); break;
        case SF_K_BFLOAT16: err = cuda_reduce_t<starfold__bf16>(stream, buffers, a); break;
        case SF_K_INT8: err = cuda_reduce_t<int8_t>(stream, buffers, a); break;
        case SF_K_UINT8: err = cuda_reduce_t<uint8_t>(stream, buffers, a); break;
        case SF_K_INT16: err = cuda_reduce_t<int16_t>(stream, buffers, a); break;
        case SF_K_UINT16: err = cuda_reduce_t<uint16_t>(stream, buffers, a); break;
        case SF_K_UINT32: err = cuda_reduce_t<uint32_t>(stream, buffers, a); break;
        case SF_K_UINT64: err = cuda_reduce_t<uint64_t>(stream, buffers, a); break;
        default: break;
        }
        break;
    case SF_KERNEL_SCALE:
        if (a->dst_dtype != a->dtype) { /* converting: integers to float64, 8- and 16-bit ones to float32 */
            switch (a->dst_dtype == SF_K_FLOAT32 ? a->dtype : -1) {
            case SF_K_INT8: err = cuda_scale_t<int8_t, float, float>(stream, buffers, a); break;
            case SF_K_UINT8: err = cuda_scale_t<uint8_t, float, float>(stream, buffers, a); break;
            case SF_K_INT16: err = cuda_scale_t<int16_t, float, float>(stream, buffers, a); break;
            case SF_K_UINT16: err = cuda_scale_t<uint16_t, float, float>(stream, buffers, a); break;
            default: break;
            }
            if (a->dst_dtype != SF_K_FLOAT64) break;
            switch (a->dtype) {
            case SF_K_INT32: err = cuda_scale_t<int32_t, double, double>(stream, buffers, a); break;
            case SF_K_INT64: err = cuda_scale_t<int64_t, double, double>(stream, buffers, a); break;
            case SF_K_UINT32: err = cuda_scale_t<uint32_t, double, double>(stream, buffers, a); break;
            case SF_K_UINT64: err = cuda_scale_t<uint64_t, double, double>(stream, buffers, a); break;
            default: break;
            }
            break;
        }
        switch (a->dtype) {
        case SF_K_FLOAT32: err = cuda_scale_t<float, float, float>(stream, buffers, a); break;
        case SF_K_FLOAT64: err = cuda_scale_t<double, double, double>(stream, buffers, a); break;
        case SF_K_INT32: err = cuda_scale_t<int32_t, int64_t, int32_t>(stream, buffers, a); break;
        case SF_K_INT64: err = cuda_scale_t<int64_t, int64_t, int64_t>(stream, buffers, a); break;
        case SF_K_FLOAT16: err = cuda_scale_t<starfold__f16, float, starfold__f16>(stream, buffers, a); break;
        case SF_K_BFLOAT16: err = cuda_scale_t<starfold__bf16, float, starfold__bf16>(stream, buffers, a); break;
        case SF_K_INT8: err = cuda_scale_t<int8_t, int64_t, int8_t>(stream, buffers, a); break;
        case SF_K_UINT8: err = cuda_scale_t<uint8_t, uint64_t, uint8_t>(stream, buffers, a); break;
        case SF_K_INT16: err = cuda_scale_t<int16_t, int64_t, int16_t>(stream, buffers, a); break;
        case SF_K_UINT16: err = cuda_scale_t<uint16_t, uint64_t, uint16_t>(stream, buffers, a); break;
        case SF_K_UINT32: err = cuda_scale_t<uint32_t, uint64_t, uint32_t>(stream, buffers, a); break;
        case SF_K_UINT64: err = cuda_scale_t<uint64_t, uint64_t, uint64_t>(stream, buffers, a); break;
        default: break;
        }
        break;
    default: break;
    }
    cudaError_t sync = cudaStreamSynchronize(stream);
    if (err != cudaSuccess || sync != cudaSuccess) starfold__kernel_fail(a);
}

} // namespace

/* Timed as the CPU and OpenCL kernels are (a request's timeline): the work is synchronous, so the
 * two host clock readings bound the GPU's. */
extern "C" void starfold__kernel_cuda(void *buffers[], void *cl_arg)
{
    starfold__kernel_time((starfold__kernel_args_t *)cl_arg, 0);
    kernel_cuda(buffers, (const starfold__kernel_args_t *)cl_arg);
    starfold__kernel_time((starfold__kernel_args_t *)cl_arg, 1);
}
