/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Soak, faults and concurrency on CPU-only StarPU (run-test.sh: 2 CPU workers; the context exposes 8
 * logical devices on them, the "host" topology).
 *
 *   in place, every algorithm   every registered algorithm x op x dtype, all-reduce with each output
 *                               the very handle of its device's input: the guarantee of exec.h
 *                               (no input range is overwritten before every read of it is done)
 *   usable after a failure      a kernel fails (test hook) -> TASK_FAILED from wait; StarPU refuses
 *                               a task (test hook) -> RUNTIME from submit, nothing written; then the
 *                               same graph submitted again gives the exact result
 *   soak                        N collectives, each drawn from a fixed seed: 1..8 replicas on random
 *                               distinct devices, all-reduce / reduce to one / broadcast, 1..4
 *                               tensors of random dtypes and sizes (0..70,000 elements), random op,
 *                               algorithm (auto included), packing options, in place or not; every
 *                               element of every output verified and every input checked unchanged.
 *                               Integers exactly; floats within 1e-5 (float32) / 1e-12 (float64)
 *                               relative to max(1, |expected|) (tests/util.h; the data are quarter-
 *                               integers, so results are in practice exact).
 *                               Resident memory (/proc/self/statm, read after malloc_trim(0) so
 *                               that free space kept in glibc's arenas does not count, and after
 *                               emptying the context's pool of temporaries, which keeps up to 8
 *                               blocks of the largest sizes seen: +12 MiB in steps) after the
 *                               warm-up (the first 10%, at least 200 collectives) and at the end
 *                               must differ by at most SOAK_RSS_MARGIN_KIB (8 MiB). Measured: +1.1 MiB
 *                               over 7,200 collectives with six algorithms; +5.5 MiB over 3,600 with
 *                               eight (2026-11-26: hierarchical and leader register more temporaries),
 *                               StarPU 1.3's own loss per registered handle (tests/valgrind.supp,
 *                               "StarPU"): the margin holds that for ~5,000 collectives. Skipped for
 *                               runs shorter than the
 *                               warm-up. Without the trim, RSS wanders by +-10 MiB (fragmentation).
 *                               Under ASan/TSan the heap the sanitizer's allocator holds is compared
 *                               instead (their quarantine and shadow make RSS wander by +-60 MiB).
 *   4 threads                   four threads, each with its own graphs and handles, submit and wait
 *                               concurrently on the shared context; every result verified.
 *
 * N: SF_SOAK_COLLECTIVES (environment) or the first argument; default 1,000 (make check, a few
 * seconds on 2 cores); `make soak` runs 20,000 (SOAK_COLLECTIVES=N to change). The 4 threads run
 * N/4 each. The seed: SF_SOAK_SEED, default 20261121; printed.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starfold.h>

#include "exec/exec.h"
#include "util.h"
#include "runner.h"

/* Resident memory may grow by at most this much between the warm-up and the end (see above). A leak
 * of one vector or one request per collective would be tens of MiB. */
#define SOAK_RSS_MARGIN_KIB (8 * 1024)
#define NUM_THREADS 4

static starfold_context_t ctx;
static starfold_topology_t topo;
static long num_collectives = 1000;
static unsigned long seed = 20261121UL;

/* xorshift64*: a small generator with its state in the caller's hands (one per thread). */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static unsigned pick(uint64_t *s, unsigned n)
{
    return (unsigned)(next_random(s) % n);
}

/*
 * Resident memory after giving freed heap pages back (malloc_trim): what the process still holds,
 * without the free space glibc keeps in its arenas (random sizes from several threads fragment them,
 * which is no leak).
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/*
 * Under AddressSanitizer and ThreadSanitizer the resident size says nothing about leaks: freed blocks
 * sit in the sanitizer's quarantine and its shadow memory grows and shrinks with it (seen: +-60 MiB
 * between two samples of the same soak). The sanitizer's allocator counts what the program holds.
 */
#define SOAK_MEMORY_WHAT "heap held (sanitizer allocator)"
size_t __sanitizer_get_current_allocated_bytes(void);
static long resident_kib(void)
{
    starfold__pool_trim(ctx->pool);
    return (long)(__sanitizer_get_current_allocated_bytes() / 1024);
}
#else
#define SOAK_MEMORY_WHAT "resident"
static long resident_kib(void)
{
    starfold__pool_trim(ctx->pool);
    malloc_trim(0);
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}
#endif

/* One random collective, compiled, run and verified; 0 when correct. @what counts kinds. */
static int random_collective(uint64_t *rng, long index, int quiet)
{
    const int ndev = starfold_topology_num_devices(topo);
    int perm[8], dst[8];
    starfold_tensor_desc_t tensors[4];
    for (int i = 0; i < ndev; i++) perm[i] = i;
    for (int i = ndev - 1; i > 0; i--) {
        const int j = (int)pick(rng, (unsigned)i + 1), x = perm[i];
        perm[i] = perm[j], perm[j] = x;
    }
    starfold_collective_desc_t d = { 0 };
    const unsigned kind = pick(rng, 10);   /* 7 all-reduce, 2 reduce to one device, 1 broadcast */
    d.kind = kind == 9 ? STARFOLD_COLL_BROADCAST : STARFOLD_COLL_REDUCE;
    d.op = (starfold_op_t)pick(rng, STARFOLD_OP_COUNT);
    d.num_sources = d.kind == STARFOLD_COLL_BROADCAST ? 1 : 1 + (int)pick(rng, (unsigned)ndev);
    d.sources = perm;
    if (kind == 7 || kind == 8) {
        dst[0] = (int)pick(rng, (unsigned)ndev);
        d.num_destinations = 1, d.destinations = dst;
    } else if (d.kind == STARFOLD_COLL_BROADCAST) {
        const int n = 1 + (int)pick(rng, (unsigned)ndev);
        for (int i = 0; i < n; i++) dst[i] = perm[(i + 3) % ndev];
        d.num_destinations = n, d.destinations = dst;
    }
    d.num_tensors = 1 + pick(rng, 4);
    for (size_t t = 0; t < d.num_tensors; t++) {
        const unsigned r = pick(rng, 20);
        tensors[t].dtype = (starfold_dtype_t)pick(rng, STARFOLD_DTYPE_COUNT);
        tensors[t].count = r == 0 ? 0 : r < 4 ? 1 + pick(rng, 7) : r < 18 ? pick(rng, 5000) : 20000 + pick(rng, 50000);
    }
    d.tensors = tensors;
    d.promote_integer_mean = d.op == STARFOLD_OP_MEAN && pick(rng, 4) == 0;
    starfold_algo_options_t opt;
    starfold_algo_options_init(&opt);
    opt.num_packs = (int)pick(rng, 4);
    if (pick(rng, 4) == 0) opt.bytes_per_pack = 1 + pick(rng, 40000);
    if (pick(rng, 4) == 0) opt.chunk_bytes = 256 + pick(rng, 8192);
    const char *algorithm = starfold_algorithm_name((int)pick(rng, (unsigned)starfold_algorithm_count()));
    const int in_place = (int)pick(rng, 2);

    starfold_graph_t g = NULL;
    starfold_status_t st = starfold_graph_compile(topo, algorithm, &d, &opt, &g);
    char label[200];
    snprintf(label, sizeof label, "collective %ld (%s, %s %s, %d sources, %zu tensors%s)", index, algorithm,
             d.kind == STARFOLD_COLL_BROADCAST ? "broadcast" : d.num_destinations == 1 ? "reduce" : "all-reduce",
             starfold_op_name(d.op), d.num_sources, d.num_tensors, in_place ? ", in place" : "");
    if (st != STARFOLD_OK) {
        fprintf(stderr, "%s: compile: %s (%s)\n", label, starfold_status_string(st), starfold_last_error());
        return -1;
    }
    int rc = 0;
    if ((st = starfold_graph_check(g)) != STARFOLD_OK) {
        fprintf(stderr, "%s: check: %s\n", label, starfold_last_error());
        rc = -1;
    }
    if (starfold__tu_run_graph(ctx, g, in_place, label) != 0) rc = -1;
    if (!quiet && rc == 0 && index % 1000 == 999) printf("  %ld collectives verified\n", index + 1);
    starfold_graph_destroy(g);
    return rc;
}

/* ------------------------------------------------------------------------------------------------ */

static void test_in_place_every_algorithm(void)
{
    static const size_t counts[3] = { 1001, 1, 0 };
    int devices[8];
    for (int i = 0; i < 8; i++) devices[i] = i;
    int failures = 0, runs = 0;
    for (int a = 0; a < starfold_algorithm_count(); a++)
        for (int op = 0; op < STARFOLD_OP_COUNT; op++)
            for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) {
                /* Short runs (valgrind, ThreadSanitizer): one dtype per (algorithm, op), rotating. */
                if (num_collectives < 400 && dt != (a + op) % STARFOLD_DTYPE_COUNT) continue;
                starfold_tensor_desc_t t[3];
                for (int k = 0; k < 3; k++) t[k] = (starfold_tensor_desc_t){ (starfold_dtype_t)dt, counts[k] * (size_t)(a + 1) };
                const int n = 2 + (a + op + dt) % 7;   /* 2..8 replicas, odd counts included */
                starfold_collective_desc_t d = { .kind = STARFOLD_COLL_REDUCE, .op = (starfold_op_t)op,
                                                 .num_sources = n, .sources = devices, .num_tensors = 3, .tensors = t };
                starfold_algo_options_t o;
                starfold_algo_options_init(&o);
                o.num_packs = 1 + (op % 3);
                failures += starfold__tu_run_collective(ctx, topo, starfold_algorithm_name(a), &d, &o, 1) != 0;
                runs++;
            }
    printf("  in place: %d collectives, %d failed\n", runs, failures);
    CU_ASSERT_EQUAL(failures, 0);
}

/* The hooks of exec.h's context (private): a failing kernel, a refused task; then a correct run. */
static void test_usable_after_failure(void)
{
    int devices[4] = { 0, 1, 2, 3 };
    starfold_tensor_desc_t t[2] = { { STARFOLD_INT32, 999 }, { STARFOLD_FLOAT64, 10 } };
    starfold_collective_desc_t d = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = 4,
                                     .sources = devices, .num_tensors = 2, .tensors = t };
    for (int a = 0; a < starfold_algorithm_count(); a++) {
        starfold_graph_t g = NULL;
        CU_ASSERT_FATAL(starfold_graph_compile(topo, starfold_algorithm_name(a), &d, NULL, &g) == STARFOLD_OK);
        starpu_data_handle_t in[8], out[8];
        for (int s = 0; s < 4; s++)
            for (int k = 0; k < 2; k++) {
                CU_ASSERT_FATAL(starfold_vector_create(ctx, s, t[k].dtype, t[k].count, &in[s * 2 + k]) == STARFOLD_OK);
                CU_ASSERT_FATAL(starfold_vector_create(ctx, s, t[k].dtype, t[k].count, &out[s * 2 + k]) == STARFOLD_OK);
            }
        starfold_request_t req = NULL;
        /* A kernel fails: wait says TASK_FAILED (no hang, no crash). */
        __atomic_store_n(&ctx->test_fail_task, (long)(starfold_graph_num_tasks(g) / 2), __ATOMIC_RELAXED);
        CU_ASSERT_EQUAL(starfold_submit(ctx, g, in, out, &req), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_request_wait(req), STARFOLD_ERR_TASK_FAILED);
        CU_ASSERT_EQUAL(starfold_request_wait_timeout(req, 0.0), STARFOLD_ERR_TASK_FAILED);
        CU_ASSERT_EQUAL(starfold_request_test(req), STARFOLD_ERR_TASK_FAILED);
        starfold_request_destroy(req);
        __atomic_store_n(&ctx->test_fail_task, -1, __ATOMIC_RELAXED);
        /* StarPU refuses a task: submit says RUNTIME, no request. */
        req = NULL;
        ctx->test_refuse_task = 0;
        CU_ASSERT_EQUAL(starfold_submit(ctx, g, in, out, &req), STARFOLD_ERR_RUNTIME);
        CU_ASSERT_PTR_NULL(req);
        ctx->test_refuse_task = -1;
        for (int i = 0; i < 8; i++) {
            starfold_vector_destroy(ctx, in[i]);
            starfold_vector_destroy(ctx, out[i]);
        }
        /* The same graph, again, on fresh data: the exact result. */
        CU_ASSERT_EQUAL(starfold__tu_run_graph(ctx, g, a % 2, starfold_algorithm_name(a)), 0);
        starfold_graph_destroy(g);
    }
}

static void test_soak(void)
{
    uint64_t rng = seed * 2654435761ULL + 1;
    const long warm = num_collectives / 10 > 200 ? num_collectives / 10 : 200;
    long rss_warm = -1, failures = 0;
    const double t0 = starfold_tools_now();
    printf("\n  soak: %ld collectives, seed %lu (SF_SOAK_SEED)\n", num_collectives, seed);
    for (long i = 0; i < num_collectives; i++) {
        if (i == warm) rss_warm = resident_kib();
        if (num_collectives >= 1000 && i % (num_collectives / 10) == 0)
            printf("  %ld collectives: " SOAK_MEMORY_WHAT " %ld KiB\n", i, resident_kib());
        failures += random_collective(&rng, i, 0) != 0;
    }
    const long rss_end = resident_kib();
    printf("  soak: %ld collectives in %.1f s, %ld failed; " SOAK_MEMORY_WHAT " %ld KiB after %ld, %ld KiB at the end "
           "(margin %d KiB)\n",
           num_collectives, starfold_tools_now() - t0, failures, rss_warm, warm, rss_end, SOAK_RSS_MARGIN_KIB);
    CU_ASSERT_EQUAL(failures, 0);
    if (num_collectives > warm) {
        CU_ASSERT(rss_warm > 0 && rss_end > 0);
        CU_ASSERT(rss_end - rss_warm <= SOAK_RSS_MARGIN_KIB);
    }
}

typedef struct {
    int id;
    long count;
    long failures;
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    uint64_t rng = (seed + 7919u * (unsigned)(w->id + 1)) * 2654435761ULL + 1;
    for (long i = 0; i < w->count; i++) w->failures += random_collective(&rng, i, 1) != 0;
    return NULL;
}

static void test_concurrent(void)
{
    pthread_t th[NUM_THREADS];
    worker_t w[NUM_THREADS];
    long per = num_collectives / 4 > 25 ? num_collectives / 4 : 25;
    const double t0 = starfold_tools_now();
    for (int i = 0; i < NUM_THREADS; i++) {
        w[i] = (worker_t){ i, per, 0 };
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
    }
    long failures = 0;
    for (int i = 0; i < NUM_THREADS; i++) {
        pthread_join(th[i], NULL);
        failures += w[i].failures;
    }
    printf("\n  %d threads x %ld collectives in %.1f s, %ld failed\n", NUM_THREADS, per, starfold_tools_now() - t0, failures);
    CU_ASSERT_EQUAL(failures, 0);
}

/* ------------------------------------------------------------------------------------------------ */

static int suite_init(void)
{
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = starfold__tu_device_mode(); /* CPU workers; CUDA ones on a GPU (tests/device/gpu.sh) */
    o.num_devices = 8;
    if (starfold_context_create(&o, &ctx) != STARFOLD_OK) return -1;
    return starfold_topology_open("host", &topo) == STARFOLD_OK ? 0 : -1;
}

static int suite_cleanup(void)
{
    starfold_topology_destroy(topo);
    starfold_context_destroy(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    const char *n = argc > 1 ? argv[1] : getenv("SF_SOAK_COLLECTIVES");
    if (n && *n) num_collectives = strtol(n, NULL, 10);
    if (getenv("SF_SOAK_SEED") && *getenv("SF_SOAK_SEED")) seed = strtoul(getenv("SF_SOAK_SEED"), NULL, 10);
    if (num_collectives < 1) {
        fprintf(stderr, "test_soak: the number of collectives must be >= 1\n");
        return 2;
    }
    if (starfold__tu_begin() != 0) return 1;
    CU_pSuite s = CU_add_suite("soak (CPU-only StarPU, 8 logical devices)", suite_init, suite_cleanup);
    if (!s || !CU_add_test(s, "in place with every algorithm, op and dtype", test_in_place_every_algorithm) ||
        !CU_add_test(s, "usable after a failed task and a refused submission", test_usable_after_failure) ||
        !CU_add_test(s, "random collectives, verified, memory flat", test_soak) ||
        !CU_add_test(s, "4 threads submitting concurrently", test_concurrent))
        return 1;
    const unsigned failed = starfold__tu_run();
    return failed ? 1 : 0;
}
