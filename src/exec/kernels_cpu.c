/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * CPU kernels: segmented copy, element-wise reduce per dtype x op, scale. float16 and bfloat16 are
 * computed in float32 and rounded once (SF_DEFINE_REDUCE_HALF).
 *
 * Integer SUM, PROD and the internal SUB (a variable's assign_sub: src0 - src1 - ...) wrap around
 * (two's complement) and are computed in unsigned arithmetic, so no signed overflow happens. MIN and MAX of floats use `<` / `>`: a NaN in a later source is ignored,
 * a NaN already accumulated stays.
 *
 * REDUCE works in blocks: acc = src0 op src1 op ... (left to right per element, up to eight sources
 * read side by side; large aligned segments a cache line at a time, see reduce_lines_T), divided by the divisor when it is > 1 (MEAN fused into the reduction), then
 * stored into every destination (non-temporal stores for large segments). Each element of every
 * source is read before any destination element is written, so a destination may be any one of the
 * sources (accumulate in place), whatever its position; with several destinations every input
 * element is read once and every output element written once (one pass).
 * REDUCE and SCALE run segment by segment (kernels.h).
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <starpu.h>

#include "base/half.h"
#include "exec/kernels.h"

/* Host address of the first element of span @s, elements of @elemsize bytes. */
static inline char *span_at(void *buffers[], const starfold__kspan_t *s, size_t elemsize)
{
    struct starpu_vector_interface *v = buffers[s->buf];
    return (char *)v->ptr + s->offset * elemsize;
}

/* Span @s of the task's sources (or of its destinations when they have the sources' dtype). */
static inline char *span_ptr(void *buffers[], const starfold__kernel_args_t *a, const starfold__kspan_t *s)
{
    return span_at(buffers, s, a->elemsize);
}

/* concat(src) -> concat(dst): walks both span lists with one cursor each. */
static void cpu_copy(void *buffers[], const starfold__kernel_args_t *a)
{
    const starfold__kspan_t *src = a->spans, *dst = a->spans + a->nsrc;
    size_t si = 0, di = 0, soff = 0, doff = 0;
    while (si < a->nsrc && di < a->ndst) {
        size_t n = src[si].count - soff;
        if (dst[di].count - doff < n) n = dst[di].count - doff;
        const char *from = span_ptr(buffers, a, &src[si]) + soff * a->elemsize;
        char *to = span_ptr(buffers, a, &dst[di]) + doff * a->elemsize;
        if (from != to) memmove(to, from, n * a->elemsize);
        soff += n;
        doff += n;
        if (soff == src[si].count) si++, soff = 0;
        if (doff == dst[di].count) di++, doff = 0;
    }
}

/*
 * Elements per block: a block of every source is combined into `acc` (on the stack, in L1/L2), then
 * stored into every destination.
 */
#define SF_BLOCK 4096
/* A task writing at least this much per destination uses non-temporal stores (see store_block). */
#define SF_STREAM_BYTES ((size_t)256 << 10)

/* Binary operations per type. Integers go through their unsigned counterpart for SUM, SUB and PROD. */
#define SF_FLOAT_OPS(T)                                                          \
    static inline T add_##T(T x, T y) { return x + y; }                          \
    static inline T sub_##T(T x, T y) { return x - y; }                          \
    static inline T mul_##T(T x, T y) { return x * y; }
#define SF_INT_OPS(T, UT)                                                        \
    static inline T add_##T(T x, T y) { return (T)((UT)x + (UT)y); }             \
    static inline T sub_##T(T x, T y) { return (T)((UT)x - (UT)y); }             \
    static inline T mul_##T(T x, T y) { return (T)((UT)x * (UT)y); }
/* MIN and MAX with the accumulated value first: a NaN in a later source is ignored, one kept stays. */
#define SF_ORDER_OPS(T)                                                          \
    static inline T min_##T(T x, T y) { return y < x ? y : x; }                  \
    static inline T max_##T(T x, T y) { return y > x ? y : x; }

typedef float f32;
typedef double f64;
typedef int32_t i32;
typedef int64_t i64;
typedef int8_t i8;
typedef uint8_t u8;
typedef int16_t i16;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
SF_FLOAT_OPS(f32)
SF_FLOAT_OPS(f64)
SF_INT_OPS(i32, uint32_t)
SF_INT_OPS(i64, uint64_t)
SF_INT_OPS(i8, uint32_t)
SF_INT_OPS(u8, uint32_t)
SF_INT_OPS(i16, uint32_t)
SF_INT_OPS(u16, uint32_t)
SF_INT_OPS(u32, uint32_t)
SF_INT_OPS(u64, uint64_t)
SF_ORDER_OPS(f32)
SF_ORDER_OPS(f64)
SF_ORDER_OPS(i32)
SF_ORDER_OPS(i64)
SF_ORDER_OPS(i8)
SF_ORDER_OPS(u8)
SF_ORDER_OPS(i16)
SF_ORDER_OPS(u16)
SF_ORDER_OPS(u32)
SF_ORDER_OPS(u64)

/* A REDUCE with a divisor (MEAN in one pass): as SCALE divides, integers truncating toward zero. */
static inline f32 div_f32(f32 x, uint32_t d) { return x / (f32)d; }
static inline f64 div_f64(f64 x, uint32_t d) { return x / (f64)d; }
static inline i32 div_i32(i32 x, uint32_t d) { return (i32)((i64)x / (i64)d); }
static inline i64 div_i64(i64 x, uint32_t d) { return x / (i64)d; }
static inline i8 div_i8(i8 x, uint32_t d) { return (i8)((i64)x / (i64)d); }
static inline i16 div_i16(i16 x, uint32_t d) { return (i16)((i64)x / (i64)d); }
static inline u8 div_u8(u8 x, uint32_t d) { return (u8)((u32)x / d); }
static inline u16 div_u16(u16 x, uint32_t d) { return (u16)((u32)x / d); }
static inline u32 div_u32(u32 x, uint32_t d) { return x / d; }
static inline u64 div_u64(u64 x, uint32_t d) { return x / (u64)d; }

/*
 * Stores @bytes of @acc (in cache) at @dst. Large segments go out with non-temporal stores where the
 * machine has them (x86 SSE2): the result is not read back soon, and streaming it skips the read of
 * each destination line an ordinary store makes first (a third of the traffic of a one-pass reduce).
 */
static inline void store_block(char *dst, const char *acc, size_t bytes, int stream)
{
#if defined(__SSE2__)
    if (stream) {
        size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
        if (head > bytes) head = bytes;
        memcpy(dst, acc, head);
        dst += head, acc += head, bytes -= head;
        for (; bytes >= 16; bytes -= 16, dst += 16, acc += 16)
            _mm_stream_si128((__m128i *)(void *)dst, _mm_loadu_si128((const __m128i *)(const void *)acc));
    }
#else
    (void)stream;
#endif
    memcpy(dst, acc, bytes);
}

static inline void store_fence(int stream)
{
#if defined(__SSE2__)
    if (stream) _mm_sfence();
#else
    (void)stream;
#endif
}

/*
 * combine_T_OP: acc[j] = acc[j] op s[0][j] op s[1][j] ... , left to right for each element (the order
 * every kernel uses), up to eight sources read side by side so the memory system streams them
 * together (one stream after the other is half as fast here); the loops over j vectorise.
 */
#define SF_OP8(T, OP, x, a0, a1, a2, a3, a4, a5, a6, a7, j)                                          \
    OP##_##T(OP##_##T(OP##_##T(OP##_##T(OP##_##T(OP##_##T(OP##_##T(OP##_##T(x, a0[j]), a1[j]), a2[j]), a3[j]), \
                                       a4[j]), a5[j]), a6[j]), a7[j])
#define SF_OP4(T, OP, x, a0, a1, a2, a3, j) OP##_##T(OP##_##T(OP##_##T(OP##_##T(x, a0[j]), a1[j]), a2[j]), a3[j])
#define SF_DEFINE_COMBINE(T, OP)                                                                     \
    static inline __attribute__((always_inline)) void combine_body_##T##_##OP(                       \
        T *restrict acc, const T *const *s, size_t ns, size_t m, int init)                           \
    {                                                                                                \
        size_t k = 0;                                                                                \
        if (init) { /* acc starts as source 0 */                                                     \
            const T *restrict a0 = s[0];                                                             \
            if (ns >= 8) {                                                                           \
                const T *restrict a1 = s[1], *restrict a2 = s[2], *restrict a3 = s[3], *restrict a4 = s[4]; \
                const T *restrict a5 = s[5], *restrict a6 = s[6], *restrict a7 = s[7];               \
                for (size_t j = 0; j < m; j++)                                                       \
                    acc[j] = OP##_##T(OP##_##T(OP##_##T(OP##_##T(OP##_##T(OP##_##T(OP##_##T(a0[j], a1[j]), a2[j]), \
                                                                          a3[j]), a4[j]), a5[j]), a6[j]), a7[j]); \
                k = 8;                                                                               \
            } else if (ns >= 4) {                                                                    \
                const T *restrict a1 = s[1], *restrict a2 = s[2], *restrict a3 = s[3];               \
                for (size_t j = 0; j < m; j++) acc[j] = OP##_##T(OP##_##T(OP##_##T(a0[j], a1[j]), a2[j]), a3[j]); \
                k = 4;                                                                               \
            } else if (ns >= 2) {                                                                    \
                const T *restrict a1 = s[1];                                                         \
                for (size_t j = 0; j < m; j++) acc[j] = OP##_##T(a0[j], a1[j]);                      \
                k = 2;                                                                               \
            } else {                                                                                 \
                memcpy(acc, a0, m * sizeof(T));                                                      \
                k = 1;                                                                               \
            }                                                                                        \
        }                                                                                            \
        for (; k + 8 <= ns; k += 8) {                                                                \
            const T *restrict a0 = s[k], *restrict a1 = s[k + 1], *restrict a2 = s[k + 2], *restrict a3 = s[k + 3]; \
            const T *restrict a4 = s[k + 4], *restrict a5 = s[k + 5], *restrict a6 = s[k + 6], *restrict a7 = s[k + 7]; \
            for (size_t j = 0; j < m; j++) acc[j] = SF_OP8(T, OP, acc[j], a0, a1, a2, a3, a4, a5, a6, a7, j); \
        }                                                                                            \
        for (; k + 4 <= ns; k += 4) {                                                                \
            const T *restrict a0 = s[k], *restrict a1 = s[k + 1], *restrict a2 = s[k + 2], *restrict a3 = s[k + 3]; \
            for (size_t j = 0; j < m; j++) acc[j] = SF_OP4(T, OP, acc[j], a0, a1, a2, a3, j);         \
        }                                                                                            \
        for (; k < ns; k++) {                                                                        \
            const T *restrict a0 = s[k];                                                             \
            for (size_t j = 0; j < m; j++) acc[j] = OP##_##T(acc[j], a0[j]);                         \
        }                                                                                            \
    }                                                                                                \
    /* Full blocks have a constant trip count: vector code with no scalar remainder, which even     \
     * GCC's -O2 cost model accepts. */                                                             \
    static void combine_##T##_##OP(T *restrict acc, const T *const *s, size_t ns, size_t m, int init) \
    {                                                                                                \
        if (m == SF_BLOCK) combine_body_##T##_##OP(acc, s, ns, SF_BLOCK, init);                      \
        else combine_body_##T##_##OP(acc, s, ns, m, init);                                           \
    }

#define SF_DEFINE_COMBINES(T)                                                                        \
    SF_DEFINE_COMBINE(T, add)                                                                        \
    SF_DEFINE_COMBINE(T, sub)                                                                        \
    SF_DEFINE_COMBINE(T, mul)                                                                        \
    SF_DEFINE_COMBINE(T, min)                                                                        \
    SF_DEFINE_COMBINE(T, max)

SF_DEFINE_COMBINES(f32)
SF_DEFINE_COMBINES(f64)
SF_DEFINE_COMBINES(i32)
SF_DEFINE_COMBINES(i64)
SF_DEFINE_COMBINES(i8)
SF_DEFINE_COMBINES(u8)
SF_DEFINE_COMBINES(i16)
SF_DEFINE_COMBINES(u16)
SF_DEFINE_COMBINES(u32)
SF_DEFINE_COMBINES(u64)

/*
 * Large segments whose destinations are 16-byte aligned alike go line by line: one cache line of the
 * result (64 bytes) is combined in registers from every source, divided, then streamed into every
 * destination before the next line is read:
 *
 *     for each 64-byte line j:   acc = s0[j] op s1[j] op ... op s(n-1)[j]  [/ divisor]
 *                                dst0[j] = dst1[j] = ... = acc          (non-temporal stores)
 *
 * All n read streams and m write streams advance together, a line at a time; measured here 15-20 %
 * faster than the blocked loop below on 8 x 64 MiB (the blocked loop sends 16 KiB to one destination,
 * then the next). Each line of every source is read before that line of any destination is written,
 * so in-place stays correct. Elements before the first aligned line and after the last full line go
 * through the blocked loop (streaming as well).
 *
 * The line loop is built twice on x86-64 (GCC and clang), for AVX2 and for the baseline (SSE2), and
 * the CPU's own is called (starfold__cpu_avx2()): a line is then two 32-byte loads per source instead of
 * four 16-byte ones, and that is what decides here: 8 x 64 MiB SUM measured 14.3 ms with AVX2 against
 * 20.9 ms with SSE2 (glibc's memcpy of the same 8 x 64 MiB: 15.4-17.6 ms). A plain test, not an ifunc
 * (target_clones): an ifunc resolver runs while the dynamic loader relocates, before a sanitizer's
 * runtime is up, and under ThreadSanitizer it crashed every program.
 */
#define SF_LINE 64
#if defined(__x86_64__) && defined(__GNUC__)
#define SF_DISPATCH_AVX2 1
/* Whether this CPU runs AVX2, asked once (a relaxed atomic: threads may race to store the same value). */
static int starfold__cpu_avx2(void)
{
    static int known = -1;
    int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx2") != 0;
        __atomic_store_n(&known, v, __ATOMIC_RELAXED);
    }
    return v;
}
#else
#define SF_DISPATCH_AVX2 0
#endif
#if defined(__SSE2__)
static inline void stream_line(char *dst, const void *acc)
{
    const __m128i *x = acc;
    _mm_stream_si128((__m128i *)(void *)dst, _mm_load_si128(x));
    _mm_stream_si128((__m128i *)(void *)(dst + 16), _mm_load_si128(x + 1));
    _mm_stream_si128((__m128i *)(void *)(dst + 32), _mm_load_si128(x + 2));
    _mm_stream_si128((__m128i *)(void *)(dst + 48), _mm_load_si128(x + 3));
}
#define SF_HAVE_LINES 1
#else
#define SF_HAVE_LINES 0
#endif

/*
 * reduce_T: every destination = src0 op ... op src(n-1) [/ divisor], block by block: every source
 * block is read before any destination block is written, so a destination may be any one of the
 * sources (accumulate in place). Sources beyond a first group of 64 are folded in as further groups.
 */
#define SF_MAX_GROUP 64
#define SF_DEFINE_REDUCE(T)                                                                          \
    static void reduce_blocks_##T(void *buffers[], const starfold__kernel_args_t *a, const starfold__kspan_t *sp,  \
                                  size_t lo, size_t hi, int stream)                                  \
    {                                                                                                \
        void (*combine)(T *restrict, const T *const *, size_t, size_t, int) =                        \
            a->op == SF_K_PROD ? combine_##T##_mul : a->op == SF_K_MIN ? combine_##T##_min           \
            : a->op == SF_K_MAX ? combine_##T##_max : a->op == SF_K_SUB ? combine_##T##_sub          \
                                : combine_##T##_add;                                                 \
        T acc[SF_BLOCK];                                                                             \
        const T *src[SF_MAX_GROUP];                                                                  \
        for (size_t b = lo; b < hi; b += SF_BLOCK) {                                                 \
            const size_t m = hi - b < SF_BLOCK ? hi - b : SF_BLOCK;                                  \
            for (size_t k0 = 0; k0 < a->nsrc; k0 += SF_MAX_GROUP) {                                  \
                const size_t g = a->nsrc - k0 < SF_MAX_GROUP ? a->nsrc - k0 : SF_MAX_GROUP;          \
                for (size_t k = 0; k < g; k++)                                                       \
                    src[k] = (const T *)(const void *)span_ptr(buffers, a, &sp[k0 + k]) + b;         \
                combine(acc, src, g, m, k0 == 0);                                                    \
            }                                                                                        \
            if (a->divisor > 1)                                                                      \
                for (size_t j = 0; j < m; j++) acc[j] = div_##T(acc[j], a->divisor);                  \
            for (size_t d = 0; d < a->ndst; d++)                                                     \
                store_block(span_ptr(buffers, a, &sp[a->nsrc + d]) + b * sizeof(T), (const char *)acc, \
                            m * sizeof(T), stream);                                                  \
        }                                                                                            \
    }                                                                                                \
    SF_DEFINE_LINES(T)                                                                               \
    static void reduce_seg_##T(void *buffers[], const starfold__kernel_args_t *a, const starfold__kspan_t *sp,    \
                               int stream)                                                           \
    {                                                                                                \
        const size_t count = sp[0].count;                                                            \
        size_t lo = 0, hi = 0;                                                                       \
        if (stream && lines_fit(buffers, a, sp, count, sizeof(T), &lo, &hi)) {                      \
            reduce_blocks_##T(buffers, a, sp, 0, lo, 1);                                             \
            reduce_lines_##T(buffers, a, sp, lo, hi);                                                \
            reduce_blocks_##T(buffers, a, sp, hi, count, 1);                                         \
        } else {                                                                                     \
            reduce_blocks_##T(buffers, a, sp, 0, count, stream);                                     \
        }                                                                                            \
    }                                                                                                \
    static void reduce_##T(void *buffers[], const starfold__kernel_args_t *a)                              \
    {                                                                                                \
        const int stream = reduce_streams(a);                                                        \
        for (size_t sg = 0; sg < a->nseg; sg++)                                                      \
            reduce_seg_##T(buffers, a, starfold__kernel_segment(a, sg), stream);                            \
        store_fence(stream);                                                                         \
    }

/*
 * Whether a REDUCE task streams its results (non-temporal stores): when it writes at least
 * SF_STREAM_BYTES per destination over all its segments, the results would not stay in cache anyway
 * (a batch of many small tensors in one task streams too).
 */
static int reduce_streams(const starfold__kernel_args_t *a)
{
    size_t elems = 0;
    for (size_t sg = 0; sg < a->nseg; sg++) elems += starfold__kernel_segment(a, sg)[0].count;
    return elems * a->elemsize >= SF_STREAM_BYTES;
}

/*
 * Whether segment @sp can go line by line, and the elements [*lo, *hi) that do: at most
 * SF_MAX_GROUP sources and destinations (one sweep: a second would re-read a source written in
 * place), every destination 16-byte aligned where the first one is 64-byte aligned. Lines start at
 * the first destination's 64-byte boundaries (lines straddling cache lines measured twice as slow on
 * 8 x 64 MiB). A batch's segments follow one another in memory, so the head and tail of one segment
 * share cache lines with its neighbours' lines: they are streamed too (store_block; 8 x 8000
 * segments of 4 KiB, 16 bytes off a line: 17.6 ms, 22.1 ms with ordinary stores there, 15.8 ms as
 * one segment); only a sub-16-byte rest goes through ordinary stores.
 */
static int lines_fit(void *buffers[], const starfold__kernel_args_t *a, const starfold__kspan_t *sp, size_t count,
                     size_t elemsize, size_t *lo, size_t *hi)
{
    if (!SF_HAVE_LINES || a->nsrc > SF_MAX_GROUP || a->ndst > SF_MAX_GROUP || a->ndst == 0) return 0;
    const uintptr_t d0 = (uintptr_t)span_ptr(buffers, a, &sp[a->nsrc]);
    if (d0 % elemsize) return 0;
    for (size_t d = 1; d < a->ndst; d++)
        if (((uintptr_t)span_ptr(buffers, a, &sp[a->nsrc + d]) - d0) % 16) return 0;
    const size_t head = ((SF_LINE - d0 % SF_LINE) % SF_LINE) / elemsize;
    if (head >= count) return 0;
    *lo = head;
    *hi = head + (count - head) / (SF_LINE / elemsize) * (SF_LINE / elemsize);
    return 1;
}

#if SF_HAVE_LINES
/* One line at a time over [lo, hi): a line of every source into acc (registers), then every destination. */
#define SF_LINES_ARGS(T) const T *const *s, size_t ns, char *const *dst, size_t nd, uint32_t divisor, size_t lo, size_t hi
/*
 * The line loops start on a 64-byte boundary wherever the linker puts this file: their inner loops
 * then sit at the same offsets in every build. Without it, files added elsewhere in the library moved
 * lines_f32_add_avx2 by 16 bytes and one-pass over 8 x 64 MiB took 9-15 % longer on the 2-core
 * box (tests/bench-ab.sh, BENCHMARKS.md "No regression across restructurings").
 */
#define SF_LINES_ALIGN __attribute__((aligned(64)))
#if SF_DISPATCH_AVX2
#define SF_DEFINE_LINES_OP(T, OP)                                                                    \
    __attribute__((target("avx2"))) SF_LINES_ALIGN static void lines_##T##_##OP##_avx2(SF_LINES_ARGS(T)) \
        SF_LINES_BODY(T, OP)                                                                         \
    SF_LINES_ALIGN static void lines_##T##_##OP##_base(SF_LINES_ARGS(T)) SF_LINES_BODY(T, OP)        \
    static void lines_##T##_##OP(SF_LINES_ARGS(T))                                                   \
    {                                                                                                \
        if (starfold__cpu_avx2()) lines_##T##_##OP##_avx2(s, ns, dst, nd, divisor, lo, hi);                 \
        else lines_##T##_##OP##_base(s, ns, dst, nd, divisor, lo, hi);                              \
    }
#else
#define SF_DEFINE_LINES_OP(T, OP) SF_LINES_ALIGN static void lines_##T##_##OP(SF_LINES_ARGS(T)) SF_LINES_BODY(T, OP)
#endif
#define SF_LINES_BODY(T, OP)                                                                         \
    {                                                                                                \
        enum { L = SF_LINE / sizeof(T) };                                                            \
        for (size_t j = lo; j < hi; j += L) {                                                        \
            T acc[L] __attribute__((aligned(SF_LINE)));                                              \
            const T *a0 = s[0] + j;                                                                  \
            for (size_t i = 0; i < L; i++) acc[i] = a0[i];                                           \
            for (size_t k = 1; k < ns; k++) {                                                        \
                const T *ak = s[k] + j;                                                              \
                for (size_t i = 0; i < L; i++) acc[i] = OP##_##T(acc[i], ak[i]);                     \
            }                                                                                        \
            if (divisor > 1)                                                                         \
                for (size_t i = 0; i < L; i++) acc[i] = div_##T(acc[i], divisor);                    \
            for (size_t d = 0; d < nd; d++) stream_line(dst[d] + j * sizeof(T), acc);                \
        }                                                                                            \
    }
#define SF_DEFINE_LINES(T)                                                                           \
    SF_DEFINE_LINES_OP(T, add)                                                                       \
    SF_DEFINE_LINES_OP(T, sub)                                                                       \
    SF_DEFINE_LINES_OP(T, mul)                                                                       \
    SF_DEFINE_LINES_OP(T, min)                                                                       \
    SF_DEFINE_LINES_OP(T, max)                                                                       \
    static void reduce_lines_##T(void *buffers[], const starfold__kernel_args_t *a, const starfold__kspan_t *sp,   \
                                 size_t lo, size_t hi)                                               \
    {                                                                                                \
        const T *src[SF_MAX_GROUP];                                                                  \
        char *dst[SF_MAX_GROUP];                                                                     \
        for (size_t k = 0; k < a->nsrc; k++) src[k] = (const T *)(const void *)span_ptr(buffers, a, &sp[k]); \
        for (size_t d = 0; d < a->ndst; d++) dst[d] = span_ptr(buffers, a, &sp[a->nsrc + d]);        \
        (a->op == SF_K_PROD  ? lines_##T##_mul                                                       \
         : a->op == SF_K_MIN ? lines_##T##_min                                                       \
         : a->op == SF_K_MAX ? lines_##T##_max                                                       \
         : a->op == SF_K_SUB ? lines_##T##_sub                                                       \
                             : lines_##T##_add)(src, a->nsrc, dst, a->ndst, a->divisor, lo, hi);     \
    }
#else
#define SF_DEFINE_LINES(T)                                                                           \
    static void reduce_lines_##T(void *buffers[], const starfold__kernel_args_t *a, const starfold__kspan_t *sp,   \
                                 size_t lo, size_t hi)                                               \
    {                                                                                                \
        reduce_blocks_##T(buffers, a, sp, lo, hi, 1);                                                \
    }
#endif

SF_DEFINE_REDUCE(f32)
SF_DEFINE_REDUCE(f64)
SF_DEFINE_REDUCE(i32)
SF_DEFINE_REDUCE(i64)
SF_DEFINE_REDUCE(i8)
SF_DEFINE_REDUCE(u8)
SF_DEFINE_REDUCE(i16)
SF_DEFINE_REDUCE(u16)
SF_DEFINE_REDUCE(u32)
SF_DEFINE_REDUCE(u64)

/*
 * float16 and bfloat16 (H = f16, bf16): a block of every source converted to float32 and combined
 * there (left to right, as the other types), divided in float32, rounded once (base/half.h), then
 * stored into every destination. Every source element of the block is read before any destination
 * element is written, so a destination may be a source, as above.
 */
#define SF_HALF_COMBINE(OP, acc, src, m, TOF)                                                        \
    for (size_t j = 0; j < (m); j++) (acc)[j] = OP##_f32((acc)[j], TOF((src)[j]))
#define SF_DEFINE_REDUCE_HALF(H)                                                                     \
    static void reduce_##H(void *buffers[], const starfold__kernel_args_t *a)                        \
    {                                                                                                \
        for (size_t sg = 0; sg < a->nseg; sg++) {                                                    \
            const starfold__kspan_t *sp = starfold__kernel_segment(a, sg);                           \
            const size_t count = sp[0].count;                                                        \
            for (size_t b = 0; b < count; b += SF_BLOCK) {                                           \
                const size_t m = count - b < SF_BLOCK ? count - b : SF_BLOCK;                        \
                float acc[SF_BLOCK];                                                                 \
                uint16_t out[SF_BLOCK];                                                              \
                const uint16_t *s0 = (const uint16_t *)(const void *)span_ptr(buffers, a, &sp[0]) + b; \
                for (size_t j = 0; j < m; j++) acc[j] = starfold__##H##_to_f32(s0[j]);               \
                for (size_t k = 1; k < a->nsrc; k++) {                                               \
                    const uint16_t *sk = (const uint16_t *)(const void *)span_ptr(buffers, a, &sp[k]) + b; \
                    switch (a->op) {                                                                 \
                    case SF_K_PROD: SF_HALF_COMBINE(mul, acc, sk, m, starfold__##H##_to_f32); break; \
                    case SF_K_SUB: SF_HALF_COMBINE(sub, acc, sk, m, starfold__##H##_to_f32); break;  \
                    case SF_K_MIN: SF_HALF_COMBINE(min, acc, sk, m, starfold__##H##_to_f32); break;  \
                    case SF_K_MAX: SF_HALF_COMBINE(max, acc, sk, m, starfold__##H##_to_f32); break;  \
                    default: SF_HALF_COMBINE(add, acc, sk, m, starfold__##H##_to_f32); break;        \
                    }                                                                                \
                }                                                                                    \
                if (a->divisor > 1)                                                                  \
                    for (size_t j = 0; j < m; j++) acc[j] /= (float)a->divisor;                      \
                for (size_t j = 0; j < m; j++) out[j] = starfold__f32_to_##H(acc[j]);                \
                for (size_t d = 0; d < a->ndst; d++)                                                 \
                    memcpy(span_ptr(buffers, a, &sp[a->nsrc + d]) + b * sizeof(uint16_t), out,       \
                           m * sizeof(uint16_t));                                                    \
            }                                                                                        \
        }                                                                                            \
    }                                                                                                \
    static void scale_##H(void *buffers[], const starfold__kernel_args_t *a)                         \
    {                                                                                                \
        for (size_t sg = 0; sg < a->nseg; sg++) {                                                    \
            const starfold__kspan_t *sp = starfold__kernel_segment(a, sg);                           \
            const uint16_t *src = (const uint16_t *)(const void *)span_ptr(buffers, a, &sp[0]);      \
            uint16_t *dst = (uint16_t *)(void *)span_ptr(buffers, a, &sp[1]);                        \
            for (size_t i = 0; i < sp[0].count; i++)                                                 \
                dst[i] = starfold__f32_to_##H(starfold__##H##_to_f32(src[i]) / (float)a->divisor);   \
        }                                                                                            \
    }

SF_DEFINE_REDUCE_HALF(f16)
SF_DEFINE_REDUCE_HALF(bf16)

#if SF_DISPATCH_AVX2
/*
 * float16 and bfloat16 eight at a time (AVX2, and F16C for float16): the same blocks, order and
 * single rounding as SF_DEFINE_REDUCE_HALF, the conversions in vector instructions. The scalar
 * conversions made float16 8x and bfloat16 4x slower than float32 per byte (8 x 16 MiB one-pass on
 * the 2-core box: 45 and 23 ms against 5.7 ms). F16C's VCVTPS2PH rounds to nearest even, as
 * starfold__f32_to_f16 does, NaNs included (quieted, their upper payload kept); bfloat16's rounding is
 * starfold__f32_to_bf16's, lane by lane. MIN and MAX keep the accumulated NaN as the scalar code does:
 * _mm256_min_ps(y, x) is y < x ? y : x.
 */
static int starfold__cpu_f16c(void)
{
    static int known = -1;
    int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
        __atomic_store_n(&known, v, __ATOMIC_RELAXED);
    }
    return v;
}

#define SF_HALF_TARGET __attribute__((target("avx2,f16c")))

SF_HALF_TARGET static inline __attribute__((always_inline)) __m256 half8_load(const uint16_t *p, int bf)
{
    const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (!bf) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

SF_HALF_TARGET static inline __attribute__((always_inline)) void half8_store(uint16_t *p, __m256 v, int bf)
{
    __m128i h;
    if (!bf) {
        h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {
        const __m256i u = _mm256_castps_si256(v);
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                               _mm256_set1_epi32(0x7f800000));
        r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
        /* 32-bit lanes to 16 bits: [r0-3 r0-3 | r4-7 r4-7], then quadwords 0 and 2 */
        h = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
    }
    _mm_storeu_si128((__m128i *)(void *)p, h);
}

/*
 * acc[0..m8) op= the @ns sources @src, eight elements at a time, read side by side (one source after
 * the other measured 2.8x slower than float32 per byte: the loads waited); acc starts as src[0] when
 * @init. OPV(y, x) combines the accumulated x with the next y.
 */
#define SF_HALF8_GROUP(OPV)                                                                          \
    for (size_t j = 0; j < m8; j += 8) {                                                             \
        __m256 x = init ? half8_load(src[0] + j, bf) : _mm256_load_ps(acc + j);                      \
        for (size_t k = (size_t)init; k < ns; k++) {                                                 \
            const __m256 y = half8_load(src[k] + j, bf);                                             \
            x = OPV;                                                                                 \
        }                                                                                            \
        _mm256_store_ps(acc + j, x);                                                                 \
    }

#define SF_HALF_INLINE SF_HALF_TARGET static inline __attribute__((always_inline))
SF_HALF_INLINE void half8_group(float *acc, const uint16_t *const *src, size_t ns, size_t m8, int op, int init,
                                const int bf)
{
    switch (op) {
    case SF_K_PROD: SF_HALF8_GROUP(_mm256_mul_ps(x, y)); break;
    case SF_K_SUB: SF_HALF8_GROUP(_mm256_sub_ps(x, y)); break;
    case SF_K_MIN: SF_HALF8_GROUP(_mm256_min_ps(y, x)); break;
    case SF_K_MAX: SF_HALF8_GROUP(_mm256_max_ps(y, x)); break;
    default: SF_HALF8_GROUP(_mm256_add_ps(x, y)); break;
    }
}

SF_HALF_INLINE void reduce_half8_bf(void *buffers[], const starfold__kernel_args_t *a, const int bf)
{
    enum { GROUP = 8 }; /* sources read side by side */
    const int stream = reduce_streams(a); /* large results go out with non-temporal stores, as above */
    float (*const tof)(uint16_t) = bf ? starfold__bf16_to_f32 : starfold__f16_to_f32;
    uint16_t (*const fromf)(float) = bf ? starfold__f32_to_bf16 : starfold__f32_to_f16;
    for (size_t sg = 0; sg < a->nseg; sg++) {
        const starfold__kspan_t *sp = starfold__kernel_segment(a, sg);
        const size_t count = sp[0].count;
        for (size_t b = 0; b < count; b += SF_BLOCK) {
            const size_t m = count - b < SF_BLOCK ? count - b : SF_BLOCK, m8 = m & ~(size_t)7;
            float acc[SF_BLOCK] __attribute__((aligned(32)));
            uint16_t out[SF_BLOCK];
            const uint16_t *src[GROUP];
            for (size_t k0 = 0; k0 < a->nsrc; k0 += GROUP) {
                const size_t k1 = a->nsrc - k0 < GROUP ? a->nsrc : k0 + GROUP;
                for (size_t k = k0; k < k1; k++)
                    src[k - k0] = (const uint16_t *)(const void *)span_ptr(buffers, a, &sp[k]) + b;
                half8_group(acc, src, k1 - k0, m8, a->op, k0 == 0, bf);
                for (size_t j = m8; j < m; j++)
                    for (size_t k = k0; k < k1; k++) {
                        const float y = tof(src[k - k0][j]);
                        acc[j] = k == 0              ? y
                                 : a->op == SF_K_PROD ? mul_f32(acc[j], y)
                                 : a->op == SF_K_SUB  ? sub_f32(acc[j], y)
                                 : a->op == SF_K_MIN  ? min_f32(acc[j], y)
                                 : a->op == SF_K_MAX  ? max_f32(acc[j], y)
                                                      : add_f32(acc[j], y);
                    }
            }
            if (a->divisor > 1) {
                const __m256 d = _mm256_set1_ps((float)a->divisor);
                for (size_t j = 0; j < m8; j += 8) _mm256_store_ps(acc + j, _mm256_div_ps(_mm256_load_ps(acc + j), d));
                for (size_t j = m8; j < m; j++) acc[j] /= (float)a->divisor;
            }
            for (size_t j = 0; j < m8; j += 8) half8_store(out + j, _mm256_load_ps(acc + j), bf);
            for (size_t j = m8; j < m; j++) out[j] = fromf(acc[j]);
            for (size_t d = 0; d < a->ndst; d++)
                store_block(span_ptr(buffers, a, &sp[a->nsrc + d]) + b * sizeof(uint16_t), (const char *)out,
                            m * sizeof(uint16_t), stream);
        }
    }
    store_fence(stream);
}

/* The type as a constant in each copy, so that the loops carry no test of it. */
SF_HALF_TARGET static void reduce_half8(void *buffers[], const starfold__kernel_args_t *a, int bf)
{
    if (bf) reduce_half8_bf(buffers, a, 1);
    else reduce_half8_bf(buffers, a, 0);
}
#endif

int starfold__kernels_scalar_half;

/* float16 / bfloat16 REDUCE: eight at a time where the CPU can, else element by element. */
static void reduce_half(void *buffers[], const starfold__kernel_args_t *a, int bf)
{
#if SF_DISPATCH_AVX2
    if (starfold__cpu_f16c() && !__atomic_load_n(&starfold__kernels_scalar_half, __ATOMIC_RELAXED)) {
        reduce_half8(buffers, a, bf);
        return;
    }
#endif
    if (bf) reduce_bf16(buffers, a);
    else reduce_f16(buffers, a);
}

/* scale_T: dst = src / divisor; C division truncates integers toward zero. */
#define SF_DEFINE_SCALE(T, DT)                                                                       \
    static void scale_##T(void *buffers[], const starfold__kernel_args_t *a)                               \
    {                                                                                                \
        for (size_t sg = 0; sg < a->nseg; sg++) {                                                    \
            const starfold__kspan_t *sp = starfold__kernel_segment(a, sg);                                         \
            const size_t count = sp[0].count;                                                        \
            const T *src = (const T *)(const void *)span_ptr(buffers, a, &sp[0]);                    \
            T *dst = (T *)(void *)span_ptr(buffers, a, &sp[1]);                                      \
            const DT d = (DT)a->divisor;                                                             \
            for (size_t i = 0; i < count; i++) dst[i] = (T)((DT)src[i] / d);                         \
        }                                                                                            \
    }

SF_DEFINE_SCALE(f32, f32)
SF_DEFINE_SCALE(f64, f64)
SF_DEFINE_SCALE(i32, i64)
SF_DEFINE_SCALE(i64, i64)
SF_DEFINE_SCALE(i8, i64)
SF_DEFINE_SCALE(u8, u64)
SF_DEFINE_SCALE(i16, i64)
SF_DEFINE_SCALE(u16, u64)
SF_DEFINE_SCALE(u32, u64)
SF_DEFINE_SCALE(u64, u64)

/* Converting scale: integers in, float64 out (dst = (double)src / divisor). */
#define SF_DEFINE_SCALE_TO_F64(T)                                                                    \
    static void scale_##T##_to_f64(void *buffers[], const starfold__kernel_args_t *a)                       \
    {                                                                                                \
        for (size_t sg = 0; sg < a->nseg; sg++) {                                                    \
            const starfold__kspan_t *sp = starfold__kernel_segment(a, sg);                                         \
            const size_t count = sp[0].count;                                                        \
            const T *src = (const T *)(const void *)span_at(buffers, &sp[0], a->elemsize);           \
            f64 *dst = (f64 *)(void *)span_at(buffers, &sp[1], a->dst_elemsize);                     \
            const f64 d = (f64)a->divisor;                                                           \
            for (size_t i = 0; i < count; i++) dst[i] = (f64)src[i] / d;                             \
        }                                                                                            \
    }

SF_DEFINE_SCALE_TO_F64(i32)
SF_DEFINE_SCALE_TO_F64(i64)
SF_DEFINE_SCALE_TO_F64(u32)
SF_DEFINE_SCALE_TO_F64(u64)

/* Converting scale of 8- and 16-bit integers: float32 out (TensorFlow's truediv), divided in float32. */
#define SF_DEFINE_SCALE_TO_F32(T)                                                                    \
    static void scale_##T##_to_f32(void *buffers[], const starfold__kernel_args_t *a)                \
    {                                                                                                \
        for (size_t sg = 0; sg < a->nseg; sg++) {                                                    \
            const starfold__kspan_t *sp = starfold__kernel_segment(a, sg);                           \
            const T *src = (const T *)(const void *)span_at(buffers, &sp[0], a->elemsize);           \
            f32 *dst = (f32 *)(void *)span_at(buffers, &sp[1], a->dst_elemsize);                     \
            for (size_t i = 0; i < sp[0].count; i++) dst[i] = (f32)src[i] / (f32)a->divisor;        \
        }                                                                                            \
    }

SF_DEFINE_SCALE_TO_F32(i8)
SF_DEFINE_SCALE_TO_F32(u8)
SF_DEFINE_SCALE_TO_F32(i16)
SF_DEFINE_SCALE_TO_F32(u16)

static void kernel_cpu(void *buffers[], const starfold__kernel_args_t *a);

void starfold__kernel_cpu(void *buffers[], void *cl_arg)
{
    SF_TSAN_ACQUIRE();
    starfold__kernel_time(cl_arg, 0);
    kernel_cpu(buffers, cl_arg);
    starfold__kernel_time(cl_arg, 1);
    SF_TSAN_RELEASE();
}

static void kernel_cpu(void *buffers[], const starfold__kernel_args_t *a)
{
    if (starfold__kernel_cancelled(a)) return;
    if (starfold__kernel_hooked(a)) {
        starfold__kernel_fail(a);
        return;
    }
    switch (a->kind) {
    case SF_KERNEL_COPY:
        cpu_copy(buffers, a);
        return;
    case SF_KERNEL_REDUCE:
        switch (a->dtype) {
        case SF_K_FLOAT32: reduce_f32(buffers, a); return;
        case SF_K_FLOAT64: reduce_f64(buffers, a); return;
        case SF_K_INT32: reduce_i32(buffers, a); return;
        case SF_K_INT64: reduce_i64(buffers, a); return;
        case SF_K_FLOAT16: reduce_half(buffers, a, 0); return;
        case SF_K_BFLOAT16: reduce_half(buffers, a, 1); return;
        case SF_K_INT8: reduce_i8(buffers, a); return;
        case SF_K_UINT8: reduce_u8(buffers, a); return;
        case SF_K_INT16: reduce_i16(buffers, a); return;
        case SF_K_UINT16: reduce_u16(buffers, a); return;
        case SF_K_UINT32: reduce_u32(buffers, a); return;
        case SF_K_UINT64: reduce_u64(buffers, a); return;
        default: break;
        }
        break;
    case SF_KERNEL_SCALE:
        if (a->dst_dtype != a->dtype) {
            if (a->dst_dtype == SF_K_FLOAT32) {
                switch (a->dtype) {
                case SF_K_INT8: scale_i8_to_f32(buffers, a); return;
                case SF_K_UINT8: scale_u8_to_f32(buffers, a); return;
                case SF_K_INT16: scale_i16_to_f32(buffers, a); return;
                case SF_K_UINT16: scale_u16_to_f32(buffers, a); return;
                default: break;
                }
                break;
            }
            if (a->dst_dtype != SF_K_FLOAT64) break;
            switch (a->dtype) {
            case SF_K_INT32: scale_i32_to_f64(buffers, a); return;
            case SF_K_INT64: scale_i64_to_f64(buffers, a); return;
            case SF_K_UINT32: scale_u32_to_f64(buffers, a); return;
            case SF_K_UINT64: scale_u64_to_f64(buffers, a); return;
            default: break;
            }
            break;
        }
        switch (a->dtype) {
        case SF_K_FLOAT32: scale_f32(buffers, a); return;
        case SF_K_FLOAT64: scale_f64(buffers, a); return;
        case SF_K_INT32: scale_i32(buffers, a); return;
        case SF_K_INT64: scale_i64(buffers, a); return;
        case SF_K_FLOAT16: scale_f16(buffers, a); return;
        case SF_K_BFLOAT16: scale_bf16(buffers, a); return;
        case SF_K_INT8: scale_i8(buffers, a); return;
        case SF_K_UINT8: scale_u8(buffers, a); return;
        case SF_K_INT16: scale_i16(buffers, a); return;
        case SF_K_UINT16: scale_u16(buffers, a); return;
        case SF_K_UINT32: scale_u32(buffers, a); return;
        case SF_K_UINT64: scale_u64(buffers, a); return;
        default: break;
        }
        break;
    default:
        break;
    }
    starfold__kernel_fail(a); /* unknown kind or dtype: cannot happen with args built by template.c */
}
