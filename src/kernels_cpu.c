/*
 * CPU kernels: segmented copy, element-wise reduce per dtype x op, scale.
 *
 * Integer SUM and PROD wrap around (two's complement) and are computed in unsigned arithmetic, so
 * no signed overflow happens. MIN and MAX of floats use `<` / `>`: a NaN in a later source is ignored,
 * a NaN already accumulated stays.
 *
 * REDUCE works in blocks: acc = src0; acc = acc op srck for k = 1..n-1; acc divided by the divisor
 * when it is > 1 (MEAN fused into the reduction); then acc is stored into every
 * destination. Each element of every source is read before any destination element is written, so a
 * destination may be any one of the sources (accumulate in place), whatever its position; with several
 * destinations every input element is read once and every output element written once (one pass).
 * REDUCE and SCALE run segment by segment (kernels.h).
 */
#include "config.h"

#include <string.h>

#include <starpu.h>

#include "kernels.h"

/* Host address of the first element of span @s, elements of @elemsize bytes. */
static inline char *span_at(void *buffers[], const sf_kspan_t *s, size_t elemsize)
{
    struct starpu_vector_interface *v = buffers[s->buf];
    return (char *)v->ptr + s->offset * elemsize;
}

/* Span @s of the task's sources (or of its destinations when they have the sources' dtype). */
static inline char *span_ptr(void *buffers[], const sf_kernel_args_t *a, const sf_kspan_t *s)
{
    return span_at(buffers, s, a->elemsize);
}

/* concat(src) -> concat(dst): walks both span lists with one cursor each. */
static void cpu_copy(void *buffers[], const sf_kernel_args_t *a)
{
    const sf_kspan_t *src = a->spans, *dst = a->spans + a->nsrc;
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

#define SF_BLOCK 256

/* Binary operations per type. Integers go through their unsigned counterpart for SUM and PROD. */
#define SF_FLOAT_OPS(T)                                                          \
    static inline T add_##T(T x, T y) { return x + y; }                          \
    static inline T mul_##T(T x, T y) { return x * y; }
#define SF_INT_OPS(T, UT)                                                        \
    static inline T add_##T(T x, T y) { return (T)((UT)x + (UT)y); }             \
    static inline T mul_##T(T x, T y) { return (T)((UT)x * (UT)y); }

typedef float f32;
typedef double f64;
typedef int32_t i32;
typedef int64_t i64;
SF_FLOAT_OPS(f32)
SF_FLOAT_OPS(f64)
SF_INT_OPS(i32, uint32_t)
SF_INT_OPS(i64, uint64_t)

/* A REDUCE with a divisor (MEAN in one pass): as SCALE divides, integers truncating toward zero. */
static inline f32 div_f32(f32 x, uint32_t d) { return x / (f32)d; }
static inline f64 div_f64(f64 x, uint32_t d) { return x / (f64)d; }
static inline i32 div_i32(i32 x, uint32_t d) { return (i32)((i64)x / (i64)d); }
static inline i64 div_i64(i64 x, uint32_t d) { return x / (i64)d; }

/*
 * reduce_T: dst = src0 op ... op src(n-1) over @count elements, blockwise; the op switch sits outside
 * the inner loop so each loop vectorises.
 */
#define SF_DEFINE_REDUCE(T)                                                                          \
    static void reduce_seg_##T(void *buffers[], const sf_kernel_args_t *a, const sf_kspan_t *sp)    \
    {                                                                                                \
        const size_t count = sp[0].count;                                                            \
        T acc[SF_BLOCK];                                                                             \
        for (size_t b = 0; b < count; b += SF_BLOCK) {                                               \
            const size_t m = count - b < SF_BLOCK ? count - b : SF_BLOCK;                            \
            const T *s0 = (const T *)(const void *)span_ptr(buffers, a, &sp[0]) + b;                 \
            for (size_t j = 0; j < m; j++) acc[j] = s0[j];                                           \
            for (size_t k = 1; k < a->nsrc; k++) {                                                   \
                const T *s = (const T *)(const void *)span_ptr(buffers, a, &sp[k]) + b;              \
                switch (a->op) {                                                                     \
                case SF_K_SUM:                                                                       \
                case SF_K_MEAN:                                                                      \
                    for (size_t j = 0; j < m; j++) acc[j] = add_##T(acc[j], s[j]);                   \
                    break;                                                                           \
                case SF_K_PROD:                                                                      \
                    for (size_t j = 0; j < m; j++) acc[j] = mul_##T(acc[j], s[j]);                   \
                    break;                                                                           \
                case SF_K_MIN:                                                                       \
                    for (size_t j = 0; j < m; j++) acc[j] = s[j] < acc[j] ? s[j] : acc[j];           \
                    break;                                                                           \
                case SF_K_MAX:                                                                       \
                    for (size_t j = 0; j < m; j++) acc[j] = s[j] > acc[j] ? s[j] : acc[j];           \
                    break;                                                                           \
                default:                                                                             \
                    break;                                                                           \
                }                                                                                    \
            }                                                                                        \
            if (a->divisor > 1)                                                                      \
                for (size_t j = 0; j < m; j++) acc[j] = div_##T(acc[j], a->divisor);                  \
            for (size_t d = 0; d < a->ndst; d++)                                                     \
                memcpy((T *)(void *)span_ptr(buffers, a, &sp[a->nsrc + d]) + b, acc, m * sizeof(T));   \
        }                                                                                            \
    }                                                                                                \
    static void reduce_##T(void *buffers[], const sf_kernel_args_t *a)                              \
    {                                                                                                \
        for (size_t sg = 0; sg < a->nseg; sg++) reduce_seg_##T(buffers, a, sf_kernel_segment(a, sg)); \
    }

SF_DEFINE_REDUCE(f32)
SF_DEFINE_REDUCE(f64)
SF_DEFINE_REDUCE(i32)
SF_DEFINE_REDUCE(i64)

/* scale_T: dst = src / divisor; C division truncates integers toward zero. */
#define SF_DEFINE_SCALE(T, DT)                                                                       \
    static void scale_##T(void *buffers[], const sf_kernel_args_t *a)                               \
    {                                                                                                \
        for (size_t sg = 0; sg < a->nseg; sg++) {                                                    \
            const sf_kspan_t *sp = sf_kernel_segment(a, sg);                                         \
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

/* Converting scale: integers in, float64 out (dst = (double)src / divisor). */
#define SF_DEFINE_SCALE_TO_F64(T)                                                                    \
    static void scale_##T##_to_f64(void *buffers[], const sf_kernel_args_t *a)                       \
    {                                                                                                \
        for (size_t sg = 0; sg < a->nseg; sg++) {                                                    \
            const sf_kspan_t *sp = sf_kernel_segment(a, sg);                                         \
            const size_t count = sp[0].count;                                                        \
            const T *src = (const T *)(const void *)span_at(buffers, &sp[0], a->elemsize);           \
            f64 *dst = (f64 *)(void *)span_at(buffers, &sp[1], a->dst_elemsize);                     \
            const f64 d = (f64)a->divisor;                                                           \
            for (size_t i = 0; i < count; i++) dst[i] = (f64)src[i] / d;                             \
        }                                                                                            \
    }

SF_DEFINE_SCALE_TO_F64(i32)
SF_DEFINE_SCALE_TO_F64(i64)

void sf_kernel_cpu(void *buffers[], void *cl_arg)
{
    const sf_kernel_args_t *a = cl_arg;
    if (sf_kernel_cancelled(a)) return;
    if (a->fail) {
        sf_kernel_fail(a);
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
        default: break;
        }
        break;
    case SF_KERNEL_SCALE:
        if (a->dst_dtype != a->dtype) {
            if (a->dst_dtype != SF_K_FLOAT64) break;
            if (a->dtype == SF_K_INT32) {
                scale_i32_to_f64(buffers, a);
                return;
            }
            if (a->dtype == SF_K_INT64) {
                scale_i64_to_f64(buffers, a);
                return;
            }
            break;
        }
        switch (a->dtype) {
        case SF_K_FLOAT32: scale_f32(buffers, a); return;
        case SF_K_FLOAT64: scale_f64(buffers, a); return;
        case SF_K_INT32: scale_i32(buffers, a); return;
        case SF_K_INT64: scale_i64(buffers, a); return;
        default: break;
        }
        break;
    default:
        break;
    }
    sf_kernel_fail(a); /* unknown kind or dtype: cannot happen with args built by exec_submit.c */
}
