/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Status strings, dtype and op names: the shared vocabulary, including TensorFlow's case-insensitive ops;
 * and the base layer's event (base/event.h), which the replica threads and requests wait on.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <starfold.h>

#include "base/event.h"
#include "base/half.h"
#include "base/fiber.h"
#include "runner.h"

static void test_status_strings(void)
{
    CU_ASSERT_EQUAL(STARFOLD_OK, 0);
    for (int s = 0; s < STARFOLD_STATUS_COUNT; s++) {
        const char *str = starfold_status_string((starfold_status_t)s);
        CU_ASSERT_PTR_NOT_NULL_FATAL(str);
        CU_ASSERT(strlen(str) > 0);
        CU_ASSERT_STRING_NOT_EQUAL(str, "unknown status");
        for (int o = 0; o < s; o++) CU_ASSERT_STRING_NOT_EQUAL(str, starfold_status_string((starfold_status_t)o));
    }
    CU_ASSERT_STRING_EQUAL(starfold_status_string((starfold_status_t)-1), "unknown status");
    CU_ASSERT_STRING_EQUAL(starfold_status_string((starfold_status_t)STARFOLD_STATUS_COUNT), "unknown status");
}

static void test_dtypes(void)
{
    starfold_dtype_t d = STARFOLD_INT64;
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_FLOAT32), 4);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_FLOAT64), 8);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_INT32), 4);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_INT64), 8);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_FLOAT16), 2);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_BFLOAT16), 2);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_INT8), 1);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_UINT8), 1);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_INT16), 2);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_UINT16), 2);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_UINT32), 4);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_UINT64), 8);
    CU_ASSERT_EQUAL(starfold_dtype_size((starfold_dtype_t)STARFOLD_DTYPE_COUNT), 0);
    CU_ASSERT_EQUAL(starfold_dtype_size((starfold_dtype_t)-1), 0);
    static const struct {
        const char *alias;
        starfold_dtype_t dt;
    } aliases[] = { { "half", STARFOLD_FLOAT16 }, { "F16", STARFOLD_FLOAT16 },  { "bf16", STARFOLD_BFLOAT16 },
                    { "i8", STARFOLD_INT8 },      { "u8", STARFOLD_UINT8 },     { "i16", STARFOLD_INT16 },
                    { "u16", STARFOLD_UINT16 },   { "u32", STARFOLD_UINT32 },   { "u64", STARFOLD_UINT64 } };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        CU_ASSERT_EQUAL(starfold_dtype_from_string(aliases[i].alias, &d), STARFOLD_OK);
        CU_ASSERT_EQUAL(d, aliases[i].dt);
    }
    int integers = 0;
    for (int i = 0; i < STARFOLD_DTYPE_COUNT; i++) integers += starfold_dtype_is_integer((starfold_dtype_t)i);
    CU_ASSERT_EQUAL(integers, 8);
    CU_ASSERT_FALSE(starfold_dtype_is_integer(STARFOLD_BFLOAT16));
    CU_ASSERT_TRUE(starfold_dtype_is_integer(STARFOLD_UINT8));
    for (int i = 0; i < STARFOLD_DTYPE_COUNT; i++) {
        CU_ASSERT_EQUAL(starfold_dtype_from_string(starfold_dtype_name((starfold_dtype_t)i), &d), STARFOLD_OK);
        CU_ASSERT_EQUAL(d, i);
    }
    CU_ASSERT_EQUAL(starfold_dtype_from_string("Float64", &d), STARFOLD_OK);
    CU_ASSERT_EQUAL(d, STARFOLD_FLOAT64);
    CU_ASSERT_EQUAL(starfold_dtype_from_string("double", &d), STARFOLD_OK);
    CU_ASSERT_EQUAL(d, STARFOLD_FLOAT64);
    d = STARFOLD_INT32;
    CU_ASSERT_EQUAL(starfold_dtype_from_string("complex64", &d), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(d, STARFOLD_INT32); /* untouched on error */
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "complex64"));
    CU_ASSERT_EQUAL(starfold_dtype_from_string(NULL, &d), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_dtype_from_string("float32", NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(starfold_dtype_name((starfold_dtype_t)STARFOLD_DTYPE_COUNT), "unknown");
}

/* The value of float16 (@e5 = 1) or bfloat16 bits @b, from the format's definition. */
static double half_value(int e5, uint16_t b)
{
    const int mbits = e5 ? 10 : 7, ebits = e5 ? 5 : 8, bias = e5 ? 15 : 127;
    const int e = b >> mbits & ((1 << ebits) - 1), m = b & ((1 << mbits) - 1);
    const double sign = b & 0x8000 ? -1.0 : 1.0;
    if (e == (1 << ebits) - 1) return m ? NAN : sign * INFINITY;
    if (e == 0) return sign * ldexp(m, 1 - bias - mbits);
    return sign * ldexp((1 << mbits) + m, e - bias - mbits);
}

static uint16_t store16(starfold_dtype_t dt, double v)
{
    uint16_t h = 0xdead;
    CU_ASSERT_EQUAL(starfold_element_from_double(dt, v, &h, 0), STARFOLD_OK);
    return h;
}

/*
 * Every float16 and bfloat16: read as its definition says, written back to the same bits; every
 * midpoint between two neighbours rounds to the even one, and just off it to the nearer one (through
 * double, whose round to odd must not round twice, and through the kernels' float32 path).
 */
static void test_half_conversions(void)
{
    for (int e5 = 0; e5 < 2; e5++) {
        const starfold_dtype_t dt = e5 ? STARFOLD_FLOAT16 : STARFOLD_BFLOAT16;
        size_t bad = 0;
        for (uint32_t b = 0; b < 0x10000; b++) {
            const uint16_t h = (uint16_t)b;
            const double want = half_value(e5, h), got = starfold_element_to_double(dt, &h, 0);
            if (isnan(want)) {
                bad += !isnan(got) || !isnan(half_value(e5, store16(dt, got)));
                continue;
            }
            bad += got != want || store16(dt, want) != h;
            bad += (e5 ? starfold__f32_to_f16((float)want) : starfold__f32_to_bf16((float)want)) != h;
            /* b and b + 1 are neighbours while b + 1 stays finite and of the same sign */
            const uint16_t next = (uint16_t)(b + 1);
            if ((b & 0x7fff) >= (e5 ? 0x7c00u : 0x7f80u) - 1) continue;
            const double hi = half_value(e5, next), mid = (want + hi) / 2, toward = (hi - want) * 0x1p-30;
            const uint16_t even = h & 1 ? next : h;
            bad += store16(dt, mid) != even;
            bad += store16(dt, mid + toward) != next; /* just past the midpoint, toward b + 1 */
            bad += store16(dt, mid - toward) != h;
            bad += (e5 ? starfold__f32_to_f16((float)mid) : starfold__f32_to_bf16((float)mid)) != even;
        }
        CU_ASSERT_EQUAL(bad, 0);
    }
    /* range ends */
    CU_ASSERT_EQUAL(store16(STARFOLD_FLOAT16, 65504.0), 0x7bff);
    CU_ASSERT_EQUAL(store16(STARFOLD_FLOAT16, 65519.99), 0x7bff);
    CU_ASSERT_EQUAL(store16(STARFOLD_FLOAT16, 65520.0), 0x7c00);  /* the tie past the largest: infinity */
    CU_ASSERT_EQUAL(store16(STARFOLD_FLOAT16, -1e300), 0xfc00);
    CU_ASSERT_EQUAL(store16(STARFOLD_FLOAT16, 0x1p-25), 0x0000);   /* half the smallest subnormal: even, 0 */
    CU_ASSERT_EQUAL(store16(STARFOLD_FLOAT16, 0x1.8p-25), 0x0001);
    CU_ASSERT_EQUAL(store16(STARFOLD_FLOAT16, 1.0 + 0x1p-11 + 0x1p-40), 0x3c01); /* (float) would tie to 1.0 */
    CU_ASSERT_EQUAL(store16(STARFOLD_BFLOAT16, 3.5e38), 0x7f80);
    CU_ASSERT_TRUE(isnan(starfold_element_to_double(STARFOLD_BFLOAT16, (uint16_t[]){ store16(STARFOLD_BFLOAT16, NAN) }, 0)));
    CU_ASSERT_EQUAL(starfold_element_from_double(STARFOLD_FLOAT16, 1.0, NULL, 0), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_element_from_double((starfold_dtype_t)STARFOLD_DTYPE_COUNT, 1.0, (uint16_t[]){ 0 }, 0),
                    STARFOLD_ERR_INVALID_ARGUMENT);
}

/* Integers: truncated toward zero, held to their range, NaN 0; read back exactly. */
static void test_integer_conversions(void)
{
    int8_t i8 = 0;
    uint8_t u8 = 0;
    int64_t i64 = 0;
    uint64_t u64 = 0;
    uint16_t u16 = 0;
    CU_ASSERT_EQUAL(starfold_element_from_double(STARFOLD_INT8, 300, &i8, 0), STARFOLD_OK);
    CU_ASSERT_EQUAL(i8, 127);
    starfold_element_from_double(STARFOLD_INT8, -300, &i8, 0);
    CU_ASSERT_EQUAL(i8, -128);
    starfold_element_from_double(STARFOLD_INT8, -2.9, &i8, 0);
    CU_ASSERT_EQUAL(i8, -2);
    starfold_element_from_double(STARFOLD_INT8, NAN, &i8, 0);
    CU_ASSERT_EQUAL(i8, 0);
    starfold_element_from_double(STARFOLD_UINT8, -5, &u8, 0);
    CU_ASSERT_EQUAL(u8, 0);
    starfold_element_from_double(STARFOLD_UINT8, 255.9, &u8, 0);
    CU_ASSERT_EQUAL(u8, 255);
    CU_ASSERT_EQUAL(starfold_element_to_double(STARFOLD_UINT8, &u8, 0), 255.0);
    starfold_element_from_double(STARFOLD_UINT16, 65536, &u16, 0);
    CU_ASSERT_EQUAL(u16, 65535);
    starfold_element_from_double(STARFOLD_INT64, -1e30, &i64, 0);
    CU_ASSERT_EQUAL(i64, INT64_MIN);
    starfold_element_from_double(STARFOLD_INT64, INFINITY, &i64, 0);
    CU_ASSERT_EQUAL(i64, INT64_MAX);
    starfold_element_from_double(STARFOLD_UINT64, 1e30, &u64, 0);
    CU_ASSERT_EQUAL(u64, UINT64_MAX);
    starfold_element_from_double(STARFOLD_UINT64, 0x1p63, &u64, 0);
    CU_ASSERT_EQUAL(u64, (uint64_t)1 << 63);
    CU_ASSERT_EQUAL(starfold_element_to_double(STARFOLD_UINT64, &u64, 0), 0x1p63);
    i8 = -128;
    CU_ASSERT_EQUAL(starfold_element_to_double(STARFOLD_INT8, &i8, 0), -128.0);
    CU_ASSERT_EQUAL(starfold_element_to_double(STARFOLD_INT8, NULL, 0), 0.0);
}

static void test_ops(void)
{
    starfold_op_t op = STARFOLD_OP_PROD;
    /* TensorFlow accepts "sum" or "MEAN": any case. */
    CU_ASSERT_EQUAL(starfold_op_from_string("sum", &op), STARFOLD_OK);
    CU_ASSERT_EQUAL(op, STARFOLD_OP_SUM);
    CU_ASSERT_EQUAL(starfold_op_from_string("MEAN", &op), STARFOLD_OK);
    CU_ASSERT_EQUAL(op, STARFOLD_OP_MEAN);
    CU_ASSERT_EQUAL(starfold_op_from_string("Max", &op), STARFOLD_OK);
    CU_ASSERT_EQUAL(op, STARFOLD_OP_MAX);
    for (int i = 0; i < STARFOLD_OP_COUNT; i++) {
        CU_ASSERT_EQUAL(starfold_op_from_string(starfold_op_name((starfold_op_t)i), &op), STARFOLD_OK);
        CU_ASSERT_EQUAL(op, i);
    }
    CU_ASSERT_EQUAL(starfold_op_from_string("average", &op), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(op, STARFOLD_OP_PROD); /* untouched: the last value parsed */
    CU_ASSERT_EQUAL(starfold_op_from_string("", &op), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(starfold_op_from_string(NULL, &op), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(starfold_op_name((starfold_op_t)-3), "unknown");
}

static void test_version(void)
{
    CU_ASSERT_STRING_EQUAL(starfold_version(), PACKAGE_VERSION);
}

/* ------------------------------------------------------------------------------------------------
 * Events
 */

static struct timespec after_ms(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_nsec += ms * 1000000L;
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static int passed(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > deadline->tv_sec || (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

static void test_event_moved(void)
{
    starfold__event_t e = { 0, 0 };
    const unsigned seen = starfold__event_seq(&e);
    starfold__event_post(&e);
    CU_ASSERT_NOT_EQUAL(starfold__event_seq(&e), seen);
    /* A wait for a sequence already moved returns at once, not at the deadline an hour away. */
    const struct timespec hour = after_ms(3600L * 1000L);
    CU_ASSERT_EQUAL(starfold__event_wait(&e, seen, &hour), 0);
    CU_ASSERT_EQUAL(e.waiters, 0);
}

static void test_event_deadline(void)
{
    starfold__event_t e = { 0, 0 };
    const struct timespec deadline = after_ms(30);
    int rc = 0;
    /* A wait may end early (a spurious wake-up), never with ETIMEDOUT before its deadline. */
    while ((rc = starfold__event_wait(&e, starfold__event_seq(&e), &deadline)) == 0 && !passed(&deadline)) continue;
    CU_ASSERT_EQUAL(rc, ETIMEDOUT);
    CU_ASSERT(passed(&deadline));
    CU_ASSERT_EQUAL(e.waiters, 0);
}

enum { EVENT_THREADS = 8, EVENT_ROUNDS = 200 };

typedef struct {
    starfold__event_t go, back;
    int round;                 /* atomic: the round posted on go */
    int data[EVENT_ROUNDS];    /* written before each post: read by every waiter after it */
    int arrived;               /* atomic: waiters done with the round (the last one posts back) */
    int seen_bad;              /* atomic: a waiter read data the poster had not published */
} event_race_t;

static void *event_waiter(void *p)
{
    event_race_t *x = p;
    for (int r = 1; r <= EVENT_ROUNDS; r++) {
        for (;;) {
            const unsigned seen = starfold__event_seq(&x->go);
            if (__atomic_load_n(&x->round, __ATOMIC_ACQUIRE) >= r) break;
            starfold__event_wait(&x->go, seen, NULL);
        }
        if (x->data[r - 1] != r * 7) __atomic_store_n(&x->seen_bad, 1, __ATOMIC_RELAXED);
        if (__atomic_add_fetch(&x->arrived, 1, __ATOMIC_ACQ_REL) == EVENT_THREADS * r) starfold__event_post(&x->back);
    }
    return NULL;
}

/* Every post wakes every waiter (none is lost: a lost one would hang here), and they see what was
 * published before it. */
static void test_event_wakes_all(void)
{
    static event_race_t x;
    memset(&x, 0, sizeof x);
    pthread_t t[EVENT_THREADS];
    for (int i = 0; i < EVENT_THREADS; i++) CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, event_waiter, &x), 0);
    for (int r = 1; r <= EVENT_ROUNDS; r++) {
        x.data[r - 1] = r * 7;
        __atomic_store_n(&x.round, r, __ATOMIC_RELEASE);
        starfold__event_post(&x.go);
        for (;;) {
            const unsigned seen = starfold__event_seq(&x.back);
            if (__atomic_load_n(&x.arrived, __ATOMIC_ACQUIRE) == EVENT_THREADS * r) break;
            starfold__event_wait(&x.back, seen, NULL);
        }
    }
    for (int i = 0; i < EVENT_THREADS; i++) pthread_join(t[i], NULL);
    CU_ASSERT_EQUAL(x.arrived, EVENT_THREADS * EVENT_ROUNDS);
    CU_ASSERT_EQUAL(x.seen_bad, 0);
    CU_ASSERT_EQUAL(x.go.waiters, 0);
}

/* ------------------------------------------------------------------------------------------------
 * Fibers
 */

typedef struct fiber_log {
    char trace[64];
    int len;
    starfold__fiber_t *self[2];
    int saw_self[2];
} fiber_log_t;

typedef struct fiber_arg {
    fiber_log_t *log;
    int id;
    int yields;
} fiber_arg_t;

static void fiber_body(void *p)
{
    fiber_arg_t *a = p;
    a->log->saw_self[a->id] = starfold__fiber_current() == a->log->self[a->id];
    for (int k = 0; k <= a->yields; k++) {
        a->log->trace[a->log->len++] = (char)((a->id ? 'a' : 'A') + k); /* A B C for fiber 0, a b for 1 */
        if (k < a->yields) starfold__fiber_yield();
    }
}

/* Two fibers resumed in turn: each runs until it yields, goes on where it left off, and reports
 * when it has returned; a finished fiber starts again. */
static void test_fiber_turns(void)
{
    fiber_log_t log;
    memset(&log, 0, sizeof log);
    starfold__fiber_t *f[2] = { starfold__fiber_create(), starfold__fiber_create() };
    CU_ASSERT_PTR_NOT_NULL_FATAL(f[0]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f[1]);
    log.self[0] = f[0];
    log.self[1] = f[1];
    for (int round = 0; round < 2; round++) {
        fiber_arg_t a0 = { &log, 0, 2 }, a1 = { &log, 1, 1 };
        log.len = 0;
        starfold__fiber_start(f[0], fiber_body, &a0);
        starfold__fiber_start(f[1], fiber_body, &a1);
        CU_ASSERT_PTR_NULL(starfold__fiber_current());
        CU_ASSERT_EQUAL(starfold__fiber_resume(f[0]), 0);
        CU_ASSERT_EQUAL(starfold__fiber_resume(f[1]), 0);
        CU_ASSERT_EQUAL(starfold__fiber_resume(f[0]), 0);
        CU_ASSERT_EQUAL(starfold__fiber_resume(f[1]), 1); /* a: yielded once, then returned */
        CU_ASSERT_EQUAL(starfold__fiber_resume(f[0]), 1);
        CU_ASSERT_PTR_NULL(starfold__fiber_current());
        log.trace[log.len] = 0;
        CU_ASSERT_STRING_EQUAL(log.trace, "AaBbC");
        CU_ASSERT_TRUE(log.saw_self[0] && log.saw_self[1]);
    }
    starfold__fiber_destroy(f[0]);
    starfold__fiber_destroy(f[1]);
    starfold__fiber_destroy(NULL);
}

/* A fiber's stack holds what a thread's would: 1 MiB of locals, touched, across a yield. */
static void fiber_deep(void *p)
{
    int *ok = p;
    volatile unsigned char big[(size_t)1 << 20];
    for (size_t i = 0; i < sizeof big; i += 4096) big[i] = (unsigned char)(i >> 12);
    starfold__fiber_yield();
    int good = 1;
    for (size_t i = 0; i < sizeof big; i += 4096) good &= big[i] == (unsigned char)(i >> 12);
    *ok = good;
}

static void test_fiber_deep_stack(void)
{
    int ok = 0;
    starfold__fiber_t *f = starfold__fiber_create();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    starfold__fiber_start(f, fiber_deep, &ok);
    CU_ASSERT_EQUAL(starfold__fiber_resume(f), 0);
    CU_ASSERT_EQUAL(starfold__fiber_resume(f), 1);
    CU_ASSERT_EQUAL(ok, 1);
    starfold__fiber_destroy(f);
}

/* Many switches: nothing leaks or drifts (the sanitizers' and Valgrind's bookkeeping included). */
static void fiber_count(void *p)
{
    int *n = p;
    for (int k = 0; k < 10000; k++) {
        (*n)++;
        starfold__fiber_yield();
    }
}

static void test_fiber_many_switches(void)
{
    int n = 0, resumes = 0;
    starfold__fiber_t *f = starfold__fiber_create();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (int run = 0; run < 3; run++) {
        starfold__fiber_start(f, fiber_count, &n);
        while (!starfold__fiber_resume(f)) resumes++;
    }
    CU_ASSERT_EQUAL(n, 30000);
    CU_ASSERT_EQUAL(resumes, 30000);
    starfold__fiber_destroy(f);
}

/* A fiber that finished on one thread starts again on another (a strategy run from another thread). */
static void *fiber_elsewhere(void *p)
{
    starfold__fiber_t *f = p;
    static fiber_log_t log;
    static fiber_arg_t a;
    memset(&log, 0, sizeof log);
    log.self[1] = f;
    a = (fiber_arg_t){ &log, 1, 1 };
    starfold__fiber_start(f, fiber_body, &a);
    int ok = starfold__fiber_resume(f) == 0 && starfold__fiber_current() == NULL;
    ok &= starfold__fiber_resume(f) == 1;
    log.trace[log.len] = 0;
    ok &= strcmp(log.trace, "ab") == 0 && log.saw_self[1];
    return ok ? f : NULL;
}

static void test_fiber_other_thread(void)
{
    fiber_log_t log;
    memset(&log, 0, sizeof log);
    starfold__fiber_t *f = starfold__fiber_create();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    log.self[0] = f;
    fiber_arg_t a = { &log, 0, 0 };
    starfold__fiber_start(f, fiber_body, &a);
    CU_ASSERT_EQUAL(starfold__fiber_resume(f), 1);
    for (int k = 0; k < 2; k++) { /* on another thread, then on another again */
        pthread_t t;
        void *back = NULL;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, fiber_elsewhere, f), 0);
        pthread_join(t, &back);
        CU_ASSERT_PTR_EQUAL(back, f);
    }
    starfold__fiber_start(f, fiber_body, &a); /* and back here */
    log.len = 0;
    CU_ASSERT_EQUAL(starfold__fiber_resume(f), 1);
    CU_ASSERT_EQUAL(log.trace[0], 'A');
    starfold__fiber_destroy(f);
}

int main(void)
{
    if (starfold__tu_begin() != 0) return 1;
    CU_pSuite s = CU_add_suite("types", NULL, NULL);
    CU_add_test(s, "status strings", test_status_strings);
    CU_add_test(s, "dtypes", test_dtypes);
    CU_add_test(s, "float16 and bfloat16: every value, every midpoint", test_half_conversions);
    CU_add_test(s, "integers: truncated and saturated", test_integer_conversions);
    CU_add_test(s, "reduce ops", test_ops);
    CU_add_test(s, "version", test_version);
    CU_pSuite ev = CU_add_suite("events", NULL, NULL);
    CU_add_test(ev, "a moved sequence: no sleep", test_event_moved);
    CU_add_test(ev, "a deadline: ETIMEDOUT, never before it", test_event_deadline);
    CU_add_test(ev, "a post wakes every waiter, with what was published", test_event_wakes_all);
    CU_pSuite fb = CU_add_suite("fibers", NULL, NULL);
    CU_add_test(fb, "two fibers in turn, started again", test_fiber_turns);
    CU_add_test(fb, "1 MiB of locals on a fiber's stack", test_fiber_deep_stack);
    CU_add_test(fb, "30,000 switches", test_fiber_many_switches);
    CU_add_test(fb, "started again on other threads", test_fiber_other_thread);
    const unsigned failed = starfold__tu_run();
    return failed ? 1 : 0;
}
