/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The CPU kernels (src/exec/kernels_cpu.c) called directly, without StarPU running: REDUCE against an
 * element-wise reference in the element type itself (float16 and bfloat16: in float32, rounded
 * once), so results must be bitwise equal, for every dtype.
 *
 * The kernel takes three paths for REDUCE, and every case here is built to reach a chosen one:
 *   - small segments (< 256 KiB): blocks of 4096 elements, ordinary stores;
 *   - large segments whose destinations are 16-byte aligned alike: a blocked head up to the first
 *     64-byte line of the first destination, then line by line (the AVX2 or SSE2 clone the CPU
 *     picks), then a blocked tail;
 *   - large segments that cannot go line by line (destinations misaligned against each other, more
 *     than 64 sources): blocks with non-temporal stores.
 * Each is checked with 1 to 70 sources, 1 to 8 destinations, a destination that is one of the
 * sources (in place: that source must be read before it is overwritten, whatever its position),
 * MEAN's divisor, several segments per task, and the element just past every destination untouched.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "base/half.h"
#include "exec/kernels.h"
#include "runner.h"

#define MAX_SRC 70
#define MAX_DST 8
#define GUARD 8 /* elements after each destination that must stay untouched */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
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

/* A float16 or bfloat16 value as bits: |x| in [2^-6, 2^6) with random mantissa (sums round), or for
 * PROD +-0.25..1.25 (products of 70 stay finite), sometimes negative, zero or a subnormal. */
static uint16_t random_half(int dt, int op, uint64_t r)
{
    float v;
    if (op == SF_K_PROD) v = (float)((int)(r % 5) - 2) * 0.5f + 0.25f;
    else if (r % 97 == 0) v = 0.0f;
    else if (r % 89 == 0) v = (float)(r >> 8 & 0xff) * 0x1p-24f; /* float16's subnormals */
    else v = ldexpf(1.0f + (float)(r >> 16 & 0xffff) / 65536.0f, (int)(r >> 40 & 0xf) - 6) * ((r >> 50) & 1 ? -1.0f : 1.0f);
    return dt == SF_K_FLOAT16 ? starfold__f32_to_f16(v) : starfold__f32_to_bf16(v);
}

/* A value of @dt: floats with few mantissa bits (products of 70 stay finite), any integer. */
static void random_value(int dt, int op, void *p)
{
    const uint64_t r = rnd();
    switch (dt) {
    case SF_K_FLOAT32: {
        float v = op == SF_K_PROD ? (float)((int)(r % 5) - 2) * 0.5f + 0.25f : (float)((int64_t)(r % 20001) - 10000) / 64.0f;
        memcpy(p, &v, 4);
        break;
    }
    case SF_K_FLOAT64: {
        double v = op == SF_K_PROD ? (double)((int)(r % 5) - 2) * 0.5 + 0.25 : (double)((int64_t)(r % 2000001) - 1000000) / 1024.0;
        memcpy(p, &v, 8);
        break;
    }
    case SF_K_INT32: case SF_K_UINT32: {
        uint32_t v = (uint32_t)r;
        memcpy(p, &v, 4);
        break;
    }
    case SF_K_FLOAT16: case SF_K_BFLOAT16: {
        uint16_t v = random_half(dt, op, r);
        memcpy(p, &v, 2);
        break;
    }
    case SF_K_INT16: case SF_K_UINT16: {
        uint16_t v = (uint16_t)r;
        memcpy(p, &v, 2);
        break;
    }
    case SF_K_INT8: case SF_K_UINT8: {
        uint8_t v = (uint8_t)r;
        memcpy(p, &v, 1);
        break;
    }
    default:
        memcpy(p, &r, 8);
        break;
    }
}

/* acc op x, as the kernels define it (integers wrap through UT, MIN/MAX keep the accumulated NaN). */
#define REF_COMBINE(T, UT, acc, x, op)                                                                 \
    do {                                                                                               \
        switch (op) {                                                                                  \
        case SF_K_PROD: acc = (T)((UT)acc * (UT)x); break;                                             \
        case SF_K_SUB: acc = (T)((UT)acc - (UT)x); break;                                              \
        case SF_K_MIN: acc = x < acc ? x : acc; break;                                                 \
        case SF_K_MAX: acc = x > acc ? x : acc; break;                                                 \
        default: acc = (T)((UT)acc + (UT)x); break;                                                    \
        }                                                                                              \
    } while (0)

/*
 * Element @i: out = src[0] op ... op src[ns-1] [/ divisor] in T (UT: its wrapping counterpart for
 * integers, T itself for floats), the division in DT as the kernels divide (floats in their type,
 * integers in int64, truncating).
 */
#define REF_ELEMENT(T, UT, DT)                                                                         \
    do {                                                                                               \
        T acc, x;                                                                                      \
        memcpy(&acc, src[0] + i * sizeof(T), sizeof(T));                                               \
        for (size_t k = 1; k < ns; k++) {                                                              \
            memcpy(&x, src[k] + i * sizeof(T), sizeof(T));                                             \
            REF_COMBINE(T, UT, acc, x, op);                                                            \
        }                                                                                              \
        if (divisor > 1) acc = (T)((DT)acc / (DT)divisor);                                             \
        memcpy(out + i * sizeof(T), &acc, sizeof(T));                                                  \
    } while (0)

/*
 * float16 / bfloat16 element @i: every source converted to float32 and combined there, divided in
 * float32, rounded once (TOF / FROMF: base/half.h's conversions, checked against exact values in
 * test_types).
 */
#define REF_HALF(TOF, FROMF)                                                                           \
    do {                                                                                               \
        uint16_t h;                                                                                    \
        memcpy(&h, src[0] + i * 2, 2);                                                                 \
        float acc = TOF(h);                                                                            \
        for (size_t k = 1; k < ns; k++) {                                                              \
            memcpy(&h, src[k] + i * 2, 2);                                                             \
            const float x = TOF(h);                                                                    \
            REF_COMBINE(float, float, acc, x, op);                                                     \
        }                                                                                              \
        if (divisor > 1) acc /= (float)divisor;                                                        \
        h = FROMF(acc);                                                                                \
        memcpy(out + i * 2, &h, 2);                                                                    \
    } while (0)

/* out[i] = src[0][i] op ... op src[ns-1][i] [/ divisor], in the element type (halves: in float32). */
static void reference(int dt, int op, uint32_t divisor, const char *const *src, size_t ns, size_t count, char *out)
{
    for (size_t i = 0; i < count; i++) {
        switch (dt) {
        case SF_K_FLOAT32: REF_ELEMENT(float, float, float); break;
        case SF_K_FLOAT64: REF_ELEMENT(double, double, double); break;
        case SF_K_INT32: REF_ELEMENT(int32_t, uint32_t, int64_t); break;
        case SF_K_INT64: REF_ELEMENT(int64_t, uint64_t, int64_t); break;
        case SF_K_FLOAT16: REF_HALF(starfold__f16_to_f32, starfold__f32_to_f16); break;
        case SF_K_BFLOAT16: REF_HALF(starfold__bf16_to_f32, starfold__f32_to_bf16); break;
        case SF_K_INT8: REF_ELEMENT(int8_t, uint32_t, int64_t); break;
        case SF_K_UINT8: REF_ELEMENT(uint8_t, uint32_t, uint64_t); break;
        case SF_K_INT16: REF_ELEMENT(int16_t, uint32_t, int64_t); break;
        case SF_K_UINT16: REF_ELEMENT(uint16_t, uint32_t, uint64_t); break;
        case SF_K_UINT32: REF_ELEMENT(uint32_t, uint32_t, uint64_t); break;
        default: REF_ELEMENT(uint64_t, uint64_t, uint64_t); break;
        }
    }
}

typedef struct kcase {
    int dt, op;
    uint32_t divisor;
    size_t ns, nd, count, nseg;
    size_t src_off, dst_off; /* element offsets of every source / the first destination in its buffer */
    size_t skew;             /* extra elements of offset of destinations 1.. (misaligns them against dst 0) */
    int in_place;            /* 0, or 1 + the source index destination 0 is */
} kcase_t;

/*
 * Runs one case: every source and destination its own buffer (but an in-place destination, which is
 * its source's span), @nseg segments of @count elements each, one after the other in the buffers.
 * Returns the number of wrong elements (guards included), printing the first.
 */
static size_t run_case(const kcase_t *c)
{
    const size_t es = esize(c->dt), total = c->count * c->nseg;
    const size_t nbuf = c->ns + c->nd;
    struct starpu_vector_interface vi[MAX_SRC + MAX_DST];
    void *buffers[MAX_SRC + MAX_DST];
    char *mem[MAX_SRC + MAX_DST];
    size_t off[MAX_SRC + MAX_DST];
    size_t wrong = 0;
    const size_t alias = c->in_place ? (size_t)c->in_place - 1 : SIZE_MAX;

    for (size_t b = 0; b < nbuf; b++) {
        off[b] = b < c->ns ? c->src_off : c->dst_off + (b > c->ns ? c->skew : 0);
        const size_t len = off[b] + total + GUARD;
        /* 64-byte aligned, as StarPU allocates: offsets alone decide the alignment */
        mem[b] = aligned_alloc(64, (len * es + 63) / 64 * 64);
        CU_ASSERT_PTR_NOT_NULL_FATAL(mem[b]);
        for (size_t i = 0; i < len; i++) random_value(c->dt, c->op, mem[b] + i * es);
        memset(&vi[b], 0, sizeof vi[b]);
        vi[b].ptr = (uintptr_t)mem[b];
        vi[b].nx = (uint32_t)len;
        vi[b].elemsize = es;
        buffers[b] = &vi[b];
    }

    /* expected: sources as they are before the kernel; guards as they are */
    char *expect = malloc((total + GUARD) * es);
    char *guard = malloc(GUARD * es * MAX_DST);
    CU_ASSERT_PTR_NOT_NULL_FATAL(expect);
    CU_ASSERT_PTR_NOT_NULL_FATAL(guard);
    const char *src[MAX_SRC];
    char *before[MAX_SRC];
    for (size_t k = 0; k < c->ns; k++) {
        src[k] = mem[k] + off[k] * es;
        before[k] = malloc((off[k] + total + GUARD) * es);
        CU_ASSERT_PTR_NOT_NULL_FATAL(before[k]);
        memcpy(before[k], mem[k], (off[k] + total + GUARD) * es);
    }
    reference(c->dt, c->op, c->divisor, src, c->ns, total, expect);
    for (size_t d = 0; d < c->nd; d++) {
        const size_t b = d == 0 && c->in_place ? alias : c->ns + d;
        memcpy(guard + d * GUARD * es, mem[b] + (off[b] + total) * es, GUARD * es);
    }

    const size_t per = c->ns + c->nd;
    starfold__kernel_args_t *a = calloc(1, sizeof *a + sizeof(starfold__kspan_t) * per * c->nseg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    int cancelled = 0, status = 0;
    a->cancelled = &cancelled;
    a->status = &status;
    a->kind = SF_KERNEL_REDUCE;
    a->dtype = a->dst_dtype = c->dt;
    a->op = c->op;
    a->divisor = c->divisor;
    a->elemsize = a->dst_elemsize = es;
    a->nseg = c->nseg;
    a->nsrc = c->ns;
    a->ndst = c->nd;
    a->spans = (starfold__kspan_t *)(a + 1);
    for (size_t sg = 0; sg < c->nseg; sg++) {
        starfold__kspan_t *sp = a->spans + sg * per;
        for (size_t k = 0; k < per; k++) {
            size_t b = k;
            if (k == c->ns && c->in_place) b = alias;
            sp[k] = (starfold__kspan_t){ (unsigned)b, off[b] + sg * c->count, c->count };
        }
    }
    starfold__kernel_cpu(buffers, a);
    CU_ASSERT_EQUAL(status, 0);

    for (size_t d = 0; d < c->nd; d++) {
        const size_t b = d == 0 && c->in_place ? alias : c->ns + d;
        const char *got = mem[b] + off[b] * es;
        for (size_t i = 0; i < total; i++)
            if (memcmp(got + i * es, expect + i * es, es) && wrong++ == 0)
                fprintf(stderr, "dtype %d op %d /%u: %zu sources, %zu dsts, %zu x %zu elements, offsets %zu/%zu+%zu, "
                        "in place %d: destination %zu element %zu wrong\n",
                        c->dt, c->op, c->divisor, c->ns, c->nd, c->nseg, c->count, c->src_off, c->dst_off, c->skew,
                        c->in_place, d, i);
        if (memcmp(got + total * es, guard + d * GUARD * es, GUARD * es) && wrong++ == 0)
            fprintf(stderr, "destination %zu written past its end\n", d);
    }
    /* sources that are not destinations are left as they were */
    for (size_t k = 0; k < c->ns; k++)
        if (k != alias && memcmp(mem[k], before[k], (off[k] + total + GUARD) * es) && wrong++ == 0)
            fprintf(stderr, "source %zu changed\n", k);
    for (size_t k = 0; k < c->ns; k++) free(before[k]);
    free(a);
    free(guard);
    free(expect);
    for (size_t b = 0; b < nbuf; b++) free(mem[b]);
    return wrong;
}

static const int dtypes[] = { SF_K_FLOAT32, SF_K_FLOAT64, SF_K_INT32,  SF_K_INT64,  SF_K_FLOAT16, SF_K_BFLOAT16,
                              SF_K_INT8,    SF_K_UINT8,   SF_K_INT16,  SF_K_UINT16, SF_K_UINT32,  SF_K_UINT64 };
#define NDT ((size_t)(sizeof dtypes / sizeof dtypes[0]))
/* SF_K_SUB last: the internal subtraction of a variable's assign_sub, not a reduction but the same kernel. */
static const int ops[] = { SF_K_SUM, SF_K_PROD, SF_K_MIN, SF_K_MAX, SF_K_SUB };
#define NOPS ((int)(sizeof ops / sizeof ops[0]))

/* Large segments, line by line: every dtype x op (and MEAN's divisor), heads of 0 to 15 elements. */
static void test_lines(void)
{
    for (size_t d = 0; d < NDT; d++)
        for (size_t o = 0; o <= (size_t)NOPS; o++) {
            const int mean = o == (size_t)NOPS;
            kcase_t c = { dtypes[d], mean ? SF_K_SUM : ops[o], mean ? 8 : 1, 8, 8, 100003, 1, 3, 0, 0, 0 };
            c.dst_off = (d * 5 + o) % 16 * 4 / esize(c.dt); /* 0 to 60 bytes */
            CU_ASSERT_EQUAL(run_case(&c), 0);
        }
}

/* In place: destination 0 is source k, first, middle or last; several destinations; MEAN. */
static void test_lines_in_place(void)
{
    const size_t where[] = { 0, 3, 7 };
    for (size_t d = 0; d < NDT; d++)
        for (size_t w = 0; w < 3; w++) {
            kcase_t c = { dtypes[d], SF_K_SUM, w == 1 ? 8 : 1, 8, w == 2 ? 1 : 8, 70001, 1, 0, 0, 0, (int)where[w] + 1 };
            c.dst_off = c.src_off = w; /* an in-place destination has its source's offset */
            CU_ASSERT_EQUAL(run_case(&c), 0);
        }
}

/*
 * The subtraction of assign_sub: var = var - delta, the destination being source 0 (the variable's
 * copy, in place), every dtype, small and large (line by line); and a - b - c ... left to right.
 */
static void test_sub_in_place(void)
{
    for (size_t d = 0; d < NDT; d++)
        for (size_t big = 0; big < 2; big++) {
            kcase_t c = { dtypes[d], SF_K_SUB, 1, 2, 1, big ? 70001 : 37, 1, d, 0, 0, 1 };
            c.dst_off = c.src_off;
            CU_ASSERT_EQUAL(run_case(&c), 0);
            kcase_t chain = { dtypes[d], SF_K_SUB, 1, 5, 2, big ? 70001 : 37, 2, 0, 3, 1, 0 };
            CU_ASSERT_EQUAL(run_case(&chain), 0);
        }
}

/* Source and destination counts around the kernel's groupings (8 and 4 side by side, 64 per group). */
static void test_source_counts(void)
{
    const size_t ns[] = { 1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 64, 65, 70 };
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t big = 0; big < 2; big++) {
            kcase_t c = { dtypes[i % NDT], ops[i % NOPS], 1, ns[i], 1 + i % 3, big ? 70001 : 5000, 1, i % 5, i % 3, 0,
                          ns[i] > 1 && i % 2 ? 2 : 0 };
            if (c.in_place) c.dst_off = c.src_off;
            CU_ASSERT_EQUAL(run_case(&c), 0);
        }
}

/* Destinations misaligned against each other: no line path, blocks with non-temporal stores. */
static void test_misaligned_destinations(void)
{
    for (size_t d = 0; d < NDT; d++)
        for (size_t skew = 1; skew < 4; skew++) {
            kcase_t c = { dtypes[d], SF_K_SUM, skew == 2 ? 8 : 1, 8, 4, 90001, 1, skew, 0, skew, skew == 3 ? 2 : 0 };
            if (c.in_place) c.dst_off = c.src_off;
            CU_ASSERT_EQUAL(run_case(&c), 0);
        }
}

/* Several segments per task, small and large, one of them in place. */
static void test_segments(void)
{
    for (size_t d = 0; d < NDT; d++) {
        kcase_t small = { dtypes[d], SF_K_MAX, 1, 3, 2, 777, 5, 1, 2, 0, 0 };
        kcase_t large = { dtypes[d], SF_K_SUM, 8, 8, 3, 65536 + 17, 3, 0, 4, 0, 1 };
        large.dst_off = large.src_off;
        CU_ASSERT_EQUAL(run_case(&small), 0);
        CU_ASSERT_EQUAL(run_case(&large), 0);
    }
}

/* float16 and bfloat16 by both CPU paths (vector conversions where the CPU has them, and element by
 * element), every op, with and without MEAN's divisor, odd lengths (the vector loops' tails). */
static void test_half_paths(void)
{
    for (int scalar = 0; scalar < 2; scalar++) {
        starfold__kernels_scalar_half = scalar;
        for (int h = 0; h < 2; h++)
            for (size_t o = 0; o <= (size_t)NOPS; o++) {
                const int mean = o == (size_t)NOPS;
                kcase_t c = { h ? SF_K_BFLOAT16 : SF_K_FLOAT16, mean ? SF_K_SUM : ops[o], mean ? 5 : 1, 5, 3,
                              4096 * 2 + 13, 2, o % 3, o % 5, o % 2, o == 2 ? 3 : 0 };
                if (c.in_place) c.dst_off = c.src_off;
                CU_ASSERT_EQUAL(run_case(&c), 0);
            }
    }
    starfold__kernels_scalar_half = 0;
}

/* Random cases over every parameter. */
static void test_random(void)
{
    for (int i = 0; i < 150; i++) {
        kcase_t c;
        c.dt = dtypes[rnd() % NDT];
        c.op = ops[rnd() % NOPS];
        c.divisor = c.op == SF_K_SUM && rnd() % 2 ? (uint32_t)(1 + rnd() % 9) : 1;
        c.ns = 1 + rnd() % 12;
        c.nd = 1 + rnd() % MAX_DST;
        c.count = rnd() % 3 == 0 ? 1 + rnd() % 100000 : 1 + rnd() % 3000;
        c.nseg = 1 + rnd() % 3;
        c.src_off = rnd() % 20;
        c.dst_off = rnd() % 20;
        c.skew = rnd() % 2 ? 0 : rnd() % 8;
        c.in_place = rnd() % 3 == 0 ? (int)(1 + rnd() % c.ns) : 0;
        if (c.in_place) c.dst_off = c.src_off;
        CU_ASSERT_EQUAL(run_case(&c), 0);
    }
}

int main(void)
{
    if (starfold__tu_begin() != 0) return 1;
    CU_pSuite s = CU_add_suite("cpu kernels", NULL, NULL);
    CU_add_test(s, "reduce line by line, every dtype and op", test_lines);
    CU_add_test(s, "reduce in place", test_lines_in_place);
    CU_add_test(s, "subtraction in place (assign_sub)", test_sub_in_place);
    CU_add_test(s, "source counts", test_source_counts);
    CU_add_test(s, "misaligned destinations", test_misaligned_destinations);
    CU_add_test(s, "several segments", test_segments);
    CU_add_test(s, "float16 and bfloat16: vector and scalar paths", test_half_paths);
    CU_add_test(s, "random cases", test_random);
    const unsigned failed = starfold__tu_run();
    return failed ? 1 : 0;
}
