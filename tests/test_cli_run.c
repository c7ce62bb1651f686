/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The starfold command's run, demo and bench, run as a user runs them (test_cli.c has the rest): the built binary (SF_BUILDDIR/starfold) is spawned
 * through /bin/sh with its stdout and stderr captured, and what it prints is checked - tables, JSON
 * (parsed by a small parser below and compared with the library's own numbers), CSV, the files it
 * writes, exit statuses (0 success, 1 failure, 2 bad arguments with exactly one line on stderr).
 * Plus the library's tensor-list parser (starfold_tools_tensors_parse, starfold_tools_size_parse): models,
 * grammar, every error, and a small fuzz loop.
 *
 * StarPU runs CPU-only here (tests/run-test.sh: 2 CPU workers); one `run --emulated` exercises the
 * emulated 8-device box on 3 devices.
 *
 * The all-reduce whose numbers are asserted exactly (TensorFlow's hierarchical copy, num_packs = 1,
 * one tensor of S bytes, DGX-1 V100, groups {0,1,2,3} and {4,5,6,7}, roots 0 and 4):
 *
 *     gather  1,2,3 -> 0     5,6,7 -> 4        6 transfers, 2 reduce tasks
 *     cross   4 -> 0                            1 transfer,  1 reduce task (the final sum on 0)
 *     back    0 -> 4                            1 transfer
 *     scatter 0 -> 1,2,3     4 -> 5,6,7        6 transfers
 *                                               = 14 S bytes moved, 3 reduce tasks, no pack/unpack
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "config.h"

#include <CUnit/Basic.h>
#include <ctype.h>
#include <signal.h>
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef HAVE_LIBPNG
#include <png.h>
#endif

#include <starfold.h>

#include "tools.h"
#include "cli_harness.h"
#include "runner.h"


/* ------------------------------------------------------------------------------------------------
 * run and demo (CPU-only StarPU from run-test.sh; one emulated-box run)
 */

/* "Verified: A of B elements": A == B > 0. */
static int verified_all(const char *out)
{
    const char *v = strstr(out, "Verified: ");
    unsigned long long a = 0, b = 0;
    return v && sscanf(v, "Verified: %llu of %llu", &a, &b) == 2 && a == b && b > 0;
}

static void test_run(void)
{
    static const char *const cases[] = {
        "run",
        "run -g 4 --tensors 3x1000,12 --op mean -d int32 -n 2",
        "run --topology host -g 3 -b 4K --op prod -d float64",
        "run --topology dgx1-v100 --algorithm reduce-to-one -b 64K --op max",
        "run --topology dgx1-v100 -g 5 --tensors 4x4K,100 --bytes-per-pack 8K --op mean",
        "run --topology pcie4 --tensors 0,8,1M --num-packs 0 -d int64",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_result_t r;
        run(&r, "%s", cases[i]);
        const int ok = r.status == 0 && verified_all(r.out) && strstr(r.out, "Time: ") != NULL;
        if (!ok) fprintf(stderr, "\n  %s: status %d\n%s%s\n", cases[i], r.status, r.out, r.err);
        CU_ASSERT(ok);
        result_free(&r);
    }
    cli_result_t r;
    run(&r, "run --topology host -g 2 -b 4K");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "CPU workers"));
    /* One untimed warm-up run by default, as bench; -w N changes it, and warm-ups are verified too. */
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(mean of 1 after 1 warm-up, best "));
    result_free(&r);
    run(&r, "run --topology host -g 2 -b 4K -n 2 -w 3");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(mean of 2 after 3 warm-up, best "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Verified: 10240 of 10240 elements right on all 2 replicas over every"));
    result_free(&r);
    run(&r, "run --topology host -g 2 -b 4K --warmup 0");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(mean of 1 after 0 warm-up, best "));
    result_free(&r);
    run(&r, "run --topology host -w -1");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "starfold run: -w: expected a warm-up count from 0 to 1000000, got '-1'"));
    CU_ASSERT_STRING_EQUAL(r.out, "");
    result_free(&r);
    /* Algorithm names are case-insensitive, as op names; the registry's spelling is printed. */
    run(&r, "run --topology host -g 2 -b 4K --algorithm Ring -w 0");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "2 replicas, ring\n"));
    result_free(&r);
    /* --trace: one more run, verified, drawn as a timeline (an SVG with a bar per task). */
    char trace[1024];
    snprintf(trace, sizeof trace, "%s/run-trace.svg", out_dir());
    run(&r, "run --topology host -g 4 -b 64K --algorithm ring --trace %s", trace);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Trace: "));
    CU_ASSERT_TRUE(verified_all(r.out));
    FILE *f = fopen(trace, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char head[64] = "";
    CU_ASSERT_TRUE(fread(head, 1, sizeof head - 1, f) > 0);
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(head, "<?xml"));
    result_free(&r);
}

/* --collective reduce and broadcast: compiled, modelled with nccl-tests' busbw, run and verified. */
static void test_collectives(void)
{
    cli_result_t r;
    run(&r, "run --topology host -g 4 -b 16K --collective reduce --root 2 --op max -n 2");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Reduce (max) to device 2 of 1 float32 tensor"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Verified: 12288 of 12288 elements right on the root, device 2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "per reduce"));
    result_free(&r);
    run(&r, "run --topology host -g 3 --tensors 2x4K,100 --collective Broadcast --root 1 -d int32");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Broadcast from device 1 of 3 int32 tensors"));
    CU_ASSERT_TRUE(verified_all(r.out));
    result_free(&r);
    run(&r, "graph --collective broadcast --root 6 --tensors 4x1MiB");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "broadcast from device 6 of 4 float32 tensors"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "reduce 0"));
    result_free(&r);
    run(&r, "simulate --collective reduce --root 3 --tensors 64MiB");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Model: reduce (sum) to device 3 of 64MiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "busbw = algbw x 1"));
    result_free(&r);

    /*
     * all-gather: every device's tensors on every device, verified element by element; algbw counts the
     * gathered bytes (n x a replica's), busbw = algbw (n-1)/n as all_gather_perf; graph and simulate too.
     */
    run(&r, "run --topology host -g 4 --tensors 2x4K,96 --collective all-gather --algorithm ring -d int64 -n 2");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "All-gather of 3 int64 tensors"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "per all-gather"));
    /* 4 replicas x (2 x 512 + 12 elements) x 4 blocks per output, over 3 runs */
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Verified: 49728 of 49728 elements right on all 4 replicas"));
    result_free(&r);
    run(&r, "run --emulated -g 3 -b 4K --collective allgather --algorithm auto -w 0");
    if (r.status != 77) { /* the emulated box needs OpenCL (POCL) */
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_TRUE(verified_all(r.out));
    }
    result_free(&r);
    run(&r, "graph --collective all-gather --algorithm ring --tensors 1MiB --json");
    CU_ASSERT_EQUAL(r.status, 0);
    jval_t gv;
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &gv), 0);
    /* The DGX-1's rings: every device receives the 7 other blocks of 1 MiB once, over NVLink. */
    CU_ASSERT_EQUAL(jnum(&gv, "bytes_moved"), 8.0 * 7 * (1 << 20));
    jfree(&gv);
    result_free(&r);
    run(&r, "simulate --collective all-gather --algorithm ring --tensors 16MiB --json");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &gv), 0);
    CU_ASSERT_EQUAL(jnum(&gv, "bytes"), 8.0 * (16 << 20));
    CU_ASSERT(fabs(jnum(&gv, "busbw_GBps") - jnum(&gv, "algbw_GBps") * 7 / 8) < 1e-3);
    jfree(&gv);
    result_free(&r);

    /* The other cells of command x collective: all-reduce named (any case), graph's reduce, simulate's broadcast. */
    run(&r, "run --topology host -g 2 -b 4K --collective ALL-REDUCE -w 0");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "All-reduce (sum) of 1 float32 tensor"));
    CU_ASSERT_TRUE(verified_all(r.out));
    result_free(&r);
    run(&r, "graph --collective reduce --root 5 --tensors 2x64K --json");
    CU_ASSERT_EQUAL(r.status, 0);
    jval_t v;
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &v), 0);
    CU_ASSERT(jnum(jget(&v, "tasks"), "reduce") > 0);
    const jval_t *links = jget(&v, "links");
    /* Everything ends on the root: some link into device 5, none out of it (a reduce sends nothing back). */
    int into_root = 0, out_of_root = 0;
    for (size_t i = 0; links && i < links->n; i++) {
        if (jnum(&links->items[i], "to") == 5) into_root++;
        if (jnum(&links->items[i], "from") == 5) out_of_root++;
    }
    CU_ASSERT(into_root > 0);
    CU_ASSERT_EQUAL(out_of_root, 0);
    jfree(&v);
    result_free(&r);
    run(&r, "simulate --collective broadcast --root 7 --algorithm all --tensors 16MiB --json");
    CU_ASSERT_EQUAL(r.status, 0);
    int objects = 0;
    for (const char *line = r.out; *line;) {
        const char *end = strchr(line, '\n');
        if (!end) break;
        char buf[2048];
        snprintf(buf, sizeof buf, "%.*s", (int)(end - line), line);
        if (jparse_text(buf, &v) == 0) {
            objects++;
            CU_ASSERT(jnum(&v, "time_us") > 0);
            CU_ASSERT(fabs(jnum(&v, "busbw_GBps") - jnum(&v, "algbw_GBps")) < 1e-9); /* broadcast_perf: busbw = algbw */
            jfree(&v);
        }
        line = end + 1;
    }
    CU_ASSERT(objects >= 2);
    result_free(&r);
    run(&r, "simulate --collective broadcast --root 7 --tensors 16MiB");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Model: broadcast from device 7 of 16MiB"));
    result_free(&r);
}

/*
 * StarPU 1.3's default host memory limit is hwloc's size of the NUMA node, which a virtual machine
 * can report far too small (4.7 GB of 128 GiB). hwloc's synthetic topology plays such a machine: a
 * NUMA node of 1 GB, where two 256 MiB replicas' inputs and outputs (1 GiB) are the caller's data,
 * not counted, and are made and reduced. A limit the user sets (STARPU_LIMIT_CPU_MEM, MiB) counts
 * them: 48 MiB refuses the fourth 16 MiB vector, with a clear error.
 */
static void test_run_host_memory_limit(void)
{
    cli_result_t r;
    run_env(&r, "HWLOC_SYNTHETIC='numa:1(memory=1GB) core:2 pu:1'", "run --topology host -g 2 -b 256M -w 0 -n 1");
    const int ok = r.status == 0 && verified_all(r.out);
    if (!ok) fprintf(stderr, "\n  run on a synthetic 1 GB NUMA node: status %d\n%s%s\n", r.status, r.out, r.err);
    CU_ASSERT(ok);
    result_free(&r);
    run_env(&r, "STARPU_LIMIT_CPU_MEM=48", "run --topology host -g 2 -b 16M -w 0 -n 1");
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "cannot create the replicas: starfold_vector_create: cannot allocate 16777216 bytes"));
    result_free(&r);
}

static void test_run_emulated(void)
{
    /* The emulated box on 3 of its 8 devices; the POCL kernel cache is the one the other tests warm. */
    char env[2048];
    snprintf(env, sizeof env, "STARFOLD_CACHE_DIR='%s/cli-cache' POCL_CACHE_DIR='%s/tests/.pocl-cache'", out_dir(),
             SF_BUILDDIR);
    cli_result_t r;
    run_env(&r, env, "run --emulated -g 3 -b 64K --op sum");
    const int ok = r.status == 0 && verified_all(r.out) && strstr(r.out, "emulated 8-device box") &&
                   strstr(r.out, "3 OpenCL devices");
    if (!ok) fprintf(stderr, "\n  run --emulated: status %d\n%s%s\n", r.status, r.out, r.err);
    CU_ASSERT(ok);
    result_free(&r);

    /* More devices than the box has: a bad argument (2), said alone, no set-up banner before it. */
    run_env(&r, env, "run --emulated -g 9 -b 1K");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "starfold run: -g 9: StarPU has 8 devices here (pass -g 1..8)"));
    CU_ASSERT_PTR_NULL(strstr(r.out, "emulated 8-device box"));
    result_free(&r);
    /* A topology file that is not there: its error alone, before StarPU starts. */
    run_env(&r, env, "run --emulated --topology nosuch.dot -b 1K");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "nosuch.dot: cannot open"));
    CU_ASSERT_STRING_EQUAL(r.out, "");
    result_free(&r);
    /* auto names the algorithm it chose. */
    run_env(&r, env, "run --emulated -g 2 -b 4K --algorithm AUTO");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "2 replicas, auto:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Cost model: calibrated on these devices"));
    result_free(&r);
}

static void test_demo(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/cli-demo", out_dir());
    char dot[1100], svg[1100];
    snprintf(dot, sizeof dot, "%s/allreduce.dot", dir);
    snprintf(svg, sizeof svg, "%s/allreduce.svg", dir);
    remove(dot);
    remove(svg);
    cli_result_t r;
    run(&r, "demo --out '%s' -g 4", dir);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT(verified_all(r.out));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, dot));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, svg));
    CU_ASSERT(file_starts_with(dot, "digraph", 7));
    CU_ASSERT(file_contains(svg, "<svg"));
    result_free(&r);
}

/* ------------------------------------------------------------------------------------------------
 * bench
 */

typedef struct bench_row {
    char algorithm[64], type[16], op[16], wrong[16], ip_time[16], ip_wrong[16];
    unsigned long long bytes, count;
    int root, baseline;
    double time_us, algbw, busbw, ip_busbw;
} bench_row_t;

/*
 * Parses the table as a script reading nccl-tests' all_reduce_perf output would: whitespace-separated
 * columns size count type redop root, then time algbw busbw #wrong out-of-place and the same in
 * place, then (starfold's) the algorithm. Baselines are the same columns after "#". Returns the count.
 */
static int bench_rows(const char *out, bench_row_t *rows, int max)
{
    int n = 0;
    for (const char *line = out; *line && n < max;) {
        const char *end = strchr(line, '\n');
        const int baseline = line[0] == '#';
        const char *p = baseline ? line + 1 : line;
        bench_row_t *b = &rows[n];
        char ip_algbw[16], ip_busbw[16];
        if (line[0] != '\n' &&
            sscanf(p, "%llu %llu %15s %15s %d %lf %lf %lf %15s %15s %15s %15s %15s %63s", &b->bytes, &b->count, b->type,
                   b->op, &b->root, &b->time_us, &b->algbw, &b->busbw, b->wrong, b->ip_time, ip_algbw, ip_busbw,
                   b->ip_wrong, b->algorithm) == 14) {
            b->baseline = baseline;
            b->ip_busbw = strcmp(ip_busbw, "N/A") ? atof(ip_busbw) : -1.0;
            n++;
        }
        if (!end) break;
        line = end + 1;
    }
    return n;
}

/* The table's rows without the baselines: what a script reading nccl-tests' output sees. */
static int bench_table_rows(const char *out, bench_row_t *rows, int max)
{
    const int all = bench_rows(out, rows, max);
    int n = 0;
    for (int i = 0; i < all; i++)
        if (!rows[i].baseline) rows[n++] = rows[i];
    return n;
}

static int count_occurrences(const char *s, const char *what)
{
    int k = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p++) k++;
    return k;
}

static void test_bench_table(void)
{
    cli_result_t r;
    run(&r, "bench -g 4 -b 1K -e 4K -f 2 -n 2 -w 1");
    CU_ASSERT_EQUAL(r.status, 0);
    bench_row_t rows[64];
    const int n = bench_rows(r.out, rows, 64);
    /* 3 sizes x (hierarchical-copy, copy, host-loop, starpu-redux); copy's outputs are not a reduction. */
    CU_ASSERT_EQUAL(n, 12);
    static const char *const order[] = { "hierarchical-copy", "copy", "host-loop", "starpu-redux" };
    for (int i = 0; i < n; i++) {
        CU_ASSERT_STRING_EQUAL(rows[i].algorithm, order[i % 4]);
        CU_ASSERT_EQUAL(rows[i].baseline, i % 4 != 0);
        CU_ASSERT_EQUAL(rows[i].bytes, 1024ull << (i / 4));
        CU_ASSERT_EQUAL(rows[i].count, rows[i].bytes / 4);
        CU_ASSERT_STRING_EQUAL(rows[i].type, "float"); /* nccl-tests' names */
        CU_ASSERT_STRING_EQUAL(rows[i].op, "sum");
        CU_ASSERT_EQUAL(rows[i].root, -1);
        CU_ASSERT_STRING_EQUAL(rows[i].wrong, i % 4 == 1 ? "N/A" : "0");
        /* In place: measured and checked for the algorithm, N/A for the baselines. */
        CU_ASSERT_STRING_EQUAL(rows[i].ip_wrong, i % 4 == 0 ? "0" : "N/A");
        CU_ASSERT(i % 4 != 0 || (strcmp(rows[i].ip_time, "N/A") && atof(rows[i].ip_time) > 0 && rows[i].ip_busbw >= 0));
        CU_ASSERT(rows[i].time_us > 0);
        /* busbw = algbw * 2(n-1)/n, n = 4, within the printed precision (two decimals). */
        CU_ASSERT(fabs(rows[i].busbw - rows[i].algbw * 1.5) <= 0.011 + 1e-2 * rows[i].busbw);
    }
    /* A script reading nccl-tests' table sees one row per size: the baselines are '#' lines. */
    CU_ASSERT_EQUAL(bench_table_rows(r.out, rows, 64), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "# nThread 1 nGpus 4 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 1 "
                                         "iters: 2 agg iters: 1 validation: 1 graph: 0\n"));
    CU_ASSERT_EQUAL(count_occurrences(r.out, "#  Rank "), 4);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "#  Rank  3 Group  0 Pid "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "out-of-place                       in-place"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\n# Out of bounds values : 0 OK\n"));
    CU_ASSERT_EQUAL(count_occurrences(r.out, "# Avg bus bandwidth    : "), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "# algorithm hierarchical-copy    avg busbw : "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "# baseline  host-loop            avg busbw : "));
    /* The copy is called a bound only where no algorithm beat it (timing decides which line). */
    CU_ASSERT(strstr(r.out, "# memory-traffic bound (copy, 4 reads + 4 writes of 1024 B): hierarchical-copy ") != NULL ||
              strstr(r.out, "# copy baseline (4 reads + 4 writes of 1024 B) is no bound here; faster than it: ") != NULL);
    CU_ASSERT_PTR_NULL(strstr(r.err, "row 1 of")); /* no progress line: stderr is a file */
    result_free(&r);

    /* MEAN on every dtype: StarPU's REDUX baseline included (it once failed for all but float32). */
    run(&r, "bench -g 3 -b 1K -n 1 -w 0 --op mean -d all");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL(bench_rows(r.out, rows, 64), STARFOLD_DTYPE_COUNT * 4);
    static const char *const types[STARFOLD_DTYPE_COUNT] = { "half", "bfloat16", "float", "double", "int8",  "uint8",
                                                             "int16", "uint16", "int32", "uint32", "int64", "uint64" };
    for (int i = 0; i < STARFOLD_DTYPE_COUNT * 4; i++) {
        CU_ASSERT_STRING_EQUAL(rows[i].op, "avg");
        int known = 0;
        for (int t = 0; t < STARFOLD_DTYPE_COUNT; t++) known |= !strcmp(rows[i].type, types[t]);
        CU_ASSERT(known);
        if (!rows[i].baseline) CU_ASSERT_STRING_EQUAL(rows[i].ip_wrong, "0");
    }
    CU_ASSERT_PTR_NULL(strstr(r.err, "failed"));
    result_free(&r);

    /* Tuning options: checked values, exit 2 otherwise. */
    run(&r, "bench -g 4 -b 64K --algorithm one-pass --chunk-bytes 16K -n 1 -w 0 --baselines 0");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL(bench_rows(r.out, rows, 64), 1);
    result_free(&r);
    run(&r, "bench -g 4 -b 64K --chunk-bytes 0");
    CU_ASSERT_EQUAL(r.status, 2);
    result_free(&r);
    run(&r, "bench -g 2 -b 1K -e 4K -f 2 -i 1K");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "give one"));
    result_free(&r);
    run(&r, "graph --rings 5");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--rings"));
    result_free(&r);

    /* Persistent submissions, checked: each algorithm bound once, with and without views. */
    run(&r, "bench -g 3 --algorithm all --tensors 3x1K,12 -n 2 -w 1 --persistent --baselines 0");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(--persistent)"));
    CU_ASSERT_EQUAL(bench_rows(r.out, rows, 64), starfold_algorithm_count());
    for (int i = 0; i < starfold_algorithm_count(); i++) {
        CU_ASSERT_STRING_EQUAL(rows[i].wrong, "0");
        CU_ASSERT_STRING_EQUAL(rows[i].ip_wrong, "0"); /* in place, persistent */
    }
    result_free(&r);
    run(&r, "bench -g 3 --algorithm one-pass --tensors 3x1K,12 -n 2 -w 1 --persistent --views");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL(bench_rows(r.out, rows, 64), 1);
    CU_ASSERT_STRING_EQUAL(rows[0].wrong, "0");
    CU_ASSERT_STRING_EQUAL(rows[0].ip_wrong, "0"); /* in place with views */
    result_free(&r);

    /* Every algorithm, every op, a batch, unchecked. */
    run(&r, "bench -g 3 --algorithm all --op all --tensors 2x1K,12 -n 1 -w 0 -c 0 --baselines 0");
    CU_ASSERT_EQUAL(r.status, 0);
    const int m = bench_rows(r.out, rows, 64);
    /* Under --algorithm all, an algorithm that cannot do a case says so in a comment instead of a row. */
    int skipped = 0;
    for (const char *p = r.out; (p = strstr(p, " skipped: ")) != NULL; p++) skipped++;
    CU_ASSERT_EQUAL(m + skipped, starfold_algorithm_count() * STARFOLD_OP_COUNT);
    CU_ASSERT(m >= 2 * STARFOLD_OP_COUNT); /* reduce-to-one and hierarchical-copy do every op */
    for (int i = 0; i < m; i++) {
        CU_ASSERT_EQUAL(rows[i].bytes, 2 * 1024 + 12);
        CU_ASSERT_STRING_EQUAL(rows[i].wrong, "N/A");
        CU_ASSERT_STRING_EQUAL(rows[i].ip_wrong, "N/A");
    }
    result_free(&r);
}

static void test_bench_json_csv(void)
{
    static const char *const keys[] = { "algorithm", "op", "dtype", "bytes", "time_us", "algbw_GBps", "busbw_GBps", "wrong" };
    cli_result_t r;
    run(&r, "bench -g 2 -b 256 -e 1K -f 4 -n 2 -w 0 --json -d all");
    CU_ASSERT_EQUAL(r.status, 0);
    int rows = 0;
    for (const char *line = r.out; *line;) {
        const char *end = strchr(line, '\n');
        CU_ASSERT_PTR_NOT_NULL_FATAL(end);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(end - line), line);
        jval_t v;
        CU_ASSERT_EQUAL_FATAL(jparse_text(buf, &v), 0);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) CU_ASSERT_PTR_NOT_NULL(jget(&v, keys[k]));
        const jval_t *alg = jget(&v, "algorithm"), *graph = jget(&v, "graph");
        /* "graph": the graph that ran, the algorithm itself here (baselines: their name) */
        CU_ASSERT(graph && graph->str && alg && alg->str && !strcmp(graph->str, alg->str));
        if (alg && alg->str && !strcmp(alg->str, "copy")) {
            CU_ASSERT_EQUAL(jget(&v, "wrong")->type, J_NULL);
        } else {
            CU_ASSERT_EQUAL(jnum(&v, "wrong"), 0);
        }
        /* In place: measured for the algorithm, null for the baselines. */
        const jval_t *ipw = jget(&v, "inplace_wrong"), *ipt = jget(&v, "inplace_time_us");
        CU_ASSERT(ipw && ipt);
        if (ipw && ipt && alg && alg->str) {
            const int base = !strcmp(alg->str, "copy") || !strcmp(alg->str, "host-loop") || !strcmp(alg->str, "starpu-redux");
            CU_ASSERT_EQUAL(ipw->type, base ? J_NULL : J_NUM);
            CU_ASSERT_EQUAL(ipt->type, base ? J_NULL : J_NUM);
            if (!base) CU_ASSERT_EQUAL(jnum(&v, "inplace_wrong"), 0);
        }
        CU_ASSERT(jnum(&v, "busbw_GBps") >= 0 && fabs(jnum(&v, "busbw_GBps") - jnum(&v, "algbw_GBps")) < 1e-5);
        const jval_t *dt = jget(&v, "dtype");
        CU_ASSERT(dt && dt->type == J_STR);
        if (dt && dt->str) {
            starfold_dtype_t d;
            CU_ASSERT_EQUAL(starfold_dtype_from_string(dt->str, &d), STARFOLD_OK);
            CU_ASSERT_EQUAL(fmod(jnum(&v, "bytes"), (double)starfold_dtype_size(d)), 0.0);
        }
        jfree(&v);
        rows++;
        line = end + 1;
    }
    CU_ASSERT_EQUAL(rows, STARFOLD_DTYPE_COUNT * 2 * 4); /* dtypes x sizes (256, 1K) x (algorithm + 3 baselines) */
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "# Out of bounds values : 0 OK")); /* notes go to stderr */
    result_free(&r);

    run(&r, "bench -g 2 -b 1K -n 1 -w 0 --csv");
    CU_ASSERT_EQUAL(r.status, 0);
    static const char csv_header[] = "algorithm,op,dtype,bytes,count,devices,time_us,algbw_GBps,busbw_GBps,wrong,"
                                     "inplace_time_us,inplace_algbw_GBps,inplace_busbw_GBps,inplace_wrong,collective,root,graph\n";
    CU_ASSERT(strncmp(r.out, csv_header, strlen(csv_header)) == 0);
    CU_ASSERT_EQUAL(count_lines(r.out), 5);
    const char *row = strchr(r.out, '\n');
    if (row) {
        char alg[64];
        unsigned long long bytes = 0, count = 0;
        int devices = 0, wrong = -1;
        double t, a, b;
        CU_ASSERT_EQUAL(sscanf(row + 1, "%63[^,],sum,float32,%llu,%llu,%d,%lf,%lf,%lf,%d", alg, &bytes, &count, &devices,
                               &t, &a, &b, &wrong), 8);
        CU_ASSERT_STRING_EQUAL(alg, "hierarchical-copy");
        CU_ASSERT_EQUAL(bytes, 1024);
        CU_ASSERT_EQUAL(count, 256);
        CU_ASSERT_EQUAL(devices, 2);
        CU_ASSERT_EQUAL(wrong, 0);
    }
    result_free(&r);

    /* auto names the algorithm it ran: "graph" in JSON, "auto -> NAME" in the table. */
    run(&r, "bench -g 4 -b 64K -n 1 -w 0 --algorithm auto --baselines 0 --json");
    CU_ASSERT_EQUAL(r.status, 0);
    jval_t v;
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &v), 0);
    const jval_t *graph = jget(&v, "graph");
    CU_ASSERT_FATAL(graph && graph->str);
    CU_ASSERT_EQUAL(strncmp(graph->str, "auto:", 5), 0);
    CU_ASSERT(starfold_algorithm_find(graph->str + 5) >= 0);
    char expect[96];
    snprintf(expect, sizeof expect, "  auto -> %s\n", graph->str + 5);
    jfree(&v);
    result_free(&r);
    run(&r, "bench -g 4 -b 64K -n 1 -w 0 --algorithm auto --baselines 0");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, expect));
    result_free(&r);
}

/*
 * bench --collective: reduce_perf's and broadcast_perf's tables (the root in its column, broadcast's
 * redop "none", busbw = algbw), every row verified out-of-place and in place, no all-reduce baselines;
 * the header, JSON and CSV name the collective. The all-reduce keeps busbw = algbw x 2(n-1)/n.
 */
static void test_bench_collectives(void)
{
    cli_result_t r;
    bench_row_t rows[64];
    run(&r, "bench -g 4 -b 1K -e 4K -f 2 -n 2 -w 1 --collective reduce --root 2 --op max");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "# starfold bench: reduce (max) to device 2, "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "busbw = algbw * 1 with n = 4 (nccl-tests' reduce_perf)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "# no baselines: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\n# Out of bounds values : 0 OK\n"));
    int n = bench_rows(r.out, rows, 64);
    CU_ASSERT_EQUAL(n, 3); /* 3 sizes, the algorithm alone */
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(rows[i].baseline, 0);
        CU_ASSERT_EQUAL(rows[i].bytes, 1024ull << i);
        CU_ASSERT_STRING_EQUAL(rows[i].op, "max");
        CU_ASSERT_EQUAL(rows[i].root, 2);
        CU_ASSERT_STRING_EQUAL(rows[i].wrong, "0");
        CU_ASSERT_STRING_EQUAL(rows[i].ip_wrong, "0");
        CU_ASSERT(rows[i].time_us > 0);
        CU_ASSERT_EQUAL(rows[i].busbw, rows[i].algbw); /* printed from the same value */
    }
    result_free(&r);

    /* all-gather: size = the gathered bytes, each replica holding size / 4; redop "none", no in-place. */
    run(&r, "bench --topology host -g 4 -b 4K -e 16K -f 4 -n 2 -w 1 --collective all-gather --algorithm all -d float64");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "# starfold bench: all-gather, "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "busbw = algbw * (n-1)/n with n = 4 (nccl-tests' all_gather_perf)"));
    n = bench_rows(r.out, rows, 64);
    CU_ASSERT_EQUAL(n, 2 * starfold_algorithm_count()); /* 2 sizes x every algorithm, auto included */
    for (int i = 0; i < n; i++) {
        CU_ASSERT(rows[i].bytes == 4096 || rows[i].bytes == 16384);
        CU_ASSERT_EQUAL(rows[i].count, rows[i].bytes / 8);
        CU_ASSERT_STRING_EQUAL(rows[i].op, "none");
        CU_ASSERT_EQUAL(rows[i].root, -1);
        CU_ASSERT_STRING_EQUAL(rows[i].wrong, "0");
        CU_ASSERT_STRING_EQUAL(rows[i].ip_time, "N/A");
        CU_ASSERT(fabs(rows[i].busbw - rows[i].algbw * 3 / 4) <= 0.01 + 0.01 * rows[i].algbw);
    }
    result_free(&r);
    run(&r, "bench -g 3 --tensors 3x1K,28 -n 1 -w 0 --collective all-gather --views --json");
    CU_ASSERT_EQUAL(r.status, 0);
    jval_t av;
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &av), 0);
    CU_ASSERT_EQUAL(jnum(&av, "bytes"), 3.0 * (3 * 1024 + 7 * 4));
    CU_ASSERT_EQUAL(jnum(&av, "wrong"), 0);
    CU_ASSERT_EQUAL(jget(&av, "inplace_time_us")->type, J_NULL);
    jfree(&av);
    result_free(&r);

    /* Every algorithm (those without a broadcast of their own fall back), a batch, persistent, int32. */
    run(&r, "bench -g 3 --tensors 2x1K,12 -n 1 -w 1 -d int32 --collective Broadcast --root 1 --algorithm all --persistent");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "# starfold bench: broadcast from device 1, "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(nccl-tests' broadcast_perf)"));
    n = bench_rows(r.out, rows, 64);
    CU_ASSERT_EQUAL(n + count_occurrences(r.out, " skipped: "), starfold_algorithm_count());
    CU_ASSERT(n >= 2);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(rows[i].baseline, 0);
        CU_ASSERT_EQUAL(rows[i].bytes, 2 * 1024 + 12);
        CU_ASSERT_STRING_EQUAL(rows[i].type, "int32");
        CU_ASSERT_STRING_EQUAL(rows[i].op, "none"); /* broadcast_perf's redop */
        CU_ASSERT_EQUAL(rows[i].root, 1);
        CU_ASSERT_STRING_EQUAL(rows[i].wrong, "0");
        CU_ASSERT_STRING_EQUAL(rows[i].ip_wrong, "0");
        CU_ASSERT_EQUAL(rows[i].busbw, rows[i].algbw);
    }
    result_free(&r);

    /* Views, JSON: the collective and the root in every object. */
    run(&r, "bench -g 4 -b 4K -n 1 -w 0 --views --json --collective reduce --root 3 --op mean -d float64");
    CU_ASSERT_EQUAL(r.status, 0);
    int objects = 0;
    for (const char *line = r.out; *line;) {
        const char *end = strchr(line, '\n');
        CU_ASSERT_PTR_NOT_NULL_FATAL(end);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(end - line), line);
        jval_t v;
        CU_ASSERT_EQUAL_FATAL(jparse_text(buf, &v), 0);
        const jval_t *c = jget(&v, "collective");
        CU_ASSERT(c && c->type == J_STR && c->str && !strcmp(c->str, "reduce"));
        CU_ASSERT_EQUAL(jnum(&v, "root"), 3);
        CU_ASSERT_EQUAL(jnum(&v, "wrong"), 0);
        CU_ASSERT_EQUAL(jnum(&v, "inplace_wrong"), 0);
        CU_ASSERT(fabs(jnum(&v, "busbw_GBps") - jnum(&v, "algbw_GBps")) < 1e-9);
        jfree(&v);
        objects++;
        line = end + 1;
    }
    CU_ASSERT_EQUAL(objects, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "# starfold bench: reduce (mean) to device 3, "));
    result_free(&r);

    /* CSV: the collective, the root and the graph that ran last. */
    run(&r, "bench -g 2 -b 1K -n 1 -w 0 --csv --collective broadcast --root 1");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL(count_lines(r.out), 2);
    const char *row = strchr(r.out, '\n');
    CU_ASSERT(row && strstr(row, ",broadcast,1,hierarchical-copy\n") != NULL);
    result_free(&r);

    /* The all-reduce named: unchanged (root -1, busbw = algbw x 2(n-1)/n = 1.5 algbw on 4 devices). */
    run(&r, "bench -g 4 -b 64K -n 2 -w 1 --collective all-reduce --baselines 0 --json");
    CU_ASSERT_EQUAL(r.status, 0);
    jval_t v;
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &v), 0);
    const jval_t *c = jget(&v, "collective");
    CU_ASSERT(c && c->str && !strcmp(c->str, "all-reduce"));
    CU_ASSERT_EQUAL(jnum(&v, "root"), -1);
    CU_ASSERT(fabs(jnum(&v, "busbw_GBps") - 1.5 * jnum(&v, "algbw_GBps")) < 1e-5);
    jfree(&v);
    result_free(&r);
}

static int gnuplot_installed(void)
{
    return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

#ifdef HAVE_LIBPNG
/*
 * Looks at a PNG as a picture: its size, the colour of its top-left pixel, how many distinct colours
 * it has (counted up to @cap) and whether it holds @want (0xRRGGBB). 0, or -1 when it cannot be read.
 */
static int png_look(const char *path, int cap, unsigned *w, unsigned *h, uint32_t *corner, int *colours, uint32_t want,
                    int *has_want)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&img, path)) return -1;
    img.format = PNG_FORMAT_RGB;
    png_bytep buf = malloc(PNG_IMAGE_SIZE(img));
    if (!buf || !png_image_finish_read(&img, NULL, buf, 0, NULL)) {
        png_image_free(&img);
        free(buf);
        return -1;
    }
    *w = img.width;
    *h = img.height;
    uint32_t *seen = malloc((size_t)cap * sizeof *seen);
    int k = 0;
    *has_want = 0;
    for (size_t i = 0; seen && i < (size_t)img.width * img.height; i++) {
        const uint32_t c = (uint32_t)buf[3 * i] << 16 | (uint32_t)buf[3 * i + 1] << 8 | buf[3 * i + 2];
        if (i == 0) *corner = c;
        if (c == want) *has_want = 1;
        int j = 0;
        while (j < k && seen[j] != c) j++;
        if (j == k && k < cap) seen[k++] = c;
    }
    *colours = k;
    free(seen);
    free(buf);
    return 0;
}
#endif

static void test_bench_plot(void)
{
    const char *svg = out_path("cli-bench.svg");
    remove(svg);
    cli_result_t r;
    run(&r, "bench -g 2 -b 1K -e 4K -n 1 -w 0 --plot '%s'", svg);
    CU_ASSERT_EQUAL(r.status, 0); /* with or without gnuplot: the rows are the result */
    bench_row_t rows[16];
    CU_ASSERT_EQUAL(bench_rows(r.out, rows, 16), 12);
    if (gnuplot_installed()) {
        CU_ASSERT(file_contains(svg, "<svg"));
        CU_ASSERT(file_contains(svg, "starpu-redux (baseline)"));
        CU_ASSERT(file_contains(svg, "1 KiB")); /* x labelled in bytes, log axes */
        CU_ASSERT(file_contains(svg, "fill=\"white\"") || file_contains(svg, "fill=\"#ffffff\""));
    } else {
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "gnuplot is not installed"));
    }
    result_free(&r);

    /* PNG, looked at as a picture: a white background, many colours, the first series' blue. */
    const char *png = out_path("cli-bench.png");
    remove(png);
    run(&r, "bench -g 2 -b 1K -e 64K -f 4 -n 1 -w 0 --algorithm all --plot '%s'", png);
    CU_ASSERT_EQUAL(r.status, 0);
    if (gnuplot_installed()) {
        size_t len = 0;
        char *data = slurp(png, &len);
        CU_ASSERT(data && len > 8 && memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0);
        free(data);
#ifdef HAVE_LIBPNG
        unsigned w = 0, h = 0;
        uint32_t corner = 0;
        int colours = 0, blue = 0;
        CU_ASSERT_EQUAL(png_look(png, 256, &w, &h, &corner, &colours, 0x0072B2, &blue), 0);
        CU_ASSERT(w >= 800 && h >= 500);
        CU_ASSERT_EQUAL(corner, 0xFFFFFFu); /* opaque white, not transparent */
        CU_ASSERT(colours >= 32);           /* not empty, not uniform: lines, markers, text */
        CU_ASSERT(blue);                    /* the first series is drawn */
#endif
    }
    result_free(&r);
    run(&r, "bench -g 2 -b 1K --plot busbw.pdf");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, ".svg or a .png"));
    result_free(&r);

    /* No gnuplot on PATH: a clear message, not a failure. */
    run_env(&r, "PATH=/nonexistent", "bench -g 2 -b 1K -n 1 -w 0 --plot '%s'", svg);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "gnuplot is not installed"));
    result_free(&r);
}

/* On a terminal (script(1) gives the command one), stderr shows the progress, rewritten in place. */
static void test_bench_progress(void)
{
    if (system("command -v script >/dev/null 2>&1") != 0) return; /* util-linux's script: not essential */
    char outp[1024], cmd[4096];
    snprintf(outp, sizeof outp, "%s/cli-tty.txt", out_dir());
    snprintf(cmd, sizeof cmd, "script -qec \"'%s/starfold' bench -g 2 -b 1K -e 4K -n 1 -w 0 >/dev/null\" /dev/null >'%s' 2>&1",
             SF_BUILDDIR, outp);
    CU_ASSERT_EQUAL(sh_status(cmd), 0);
    char *tty = slurp(outp, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tty);
    CU_ASSERT_PTR_NOT_NULL(strstr(tty, "\r\033[Kstarfold bench: row 1 of 12 ("));
    CU_ASSERT_PTR_NOT_NULL(strstr(tty, "row 12 of 12 (starpu-redux, "));
    CU_ASSERT_PTR_NOT_NULL(strstr(tty, " left")); /* the estimate, once two rows are measured */
    free(tty);
}

/*
 * Ctrl-C during a long sweep: the rows measured so far, the footer and the plot, exit status 130.
 * The bench is started in the background; SIGINT is sent once its first row is on stdout.
 */
static void test_bench_interrupt(void)
{
    char outp[1024], errp[1024], cmd[4096];
    snprintf(outp, sizeof outp, "%s/cli-int-stdout.txt", out_dir());
    snprintf(errp, sizeof errp, "%s/cli-int-stderr.txt", out_dir());
    const char *svg = out_path("cli-bench-int.svg");
    remove(svg);
    remove(outp);
    /* 64 sizes of 256 KiB steps: far longer than the moment the first row appears. */
    snprintf(cmd, sizeof cmd, "exec '%s/starfold' bench -g 2 -b 256K -e 16M -i 256K -n 5 -w 1 --plot '%s' >'%s' 2>'%s'",
             SF_BUILDDIR, svg, outp, errp);
    char *argv[] = { "sh", "-c", cmd, NULL };
    pid_t pid;
    fflush(NULL);
    CU_ASSERT_EQUAL_FATAL(posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ), 0);
    int rows = 0, status = 0, exited = 0;
    for (int waited = 0; waited < 6000 && rows == 0; waited++) { /* 10 minutes at most, not a timing */
        char *out = slurp(outp, NULL);
        bench_row_t row[1];
        rows = out ? bench_table_rows(out, row, 1) : 0;
        free(out);
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = 1;
            break;
        }
        if (!rows) usleep(100000);
    }
    CU_ASSERT_FATAL(!exited && rows == 1);
    CU_ASSERT_EQUAL(kill(pid, SIGINT), 0);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 130);
    char *out = slurp(outp, NULL), *err = slurp(errp, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    bench_row_t all[256];
    const int n = bench_rows(out, all, 256);
    CU_ASSERT(n >= 1 && n < 64 * 4);
    for (int i = 0; i < n; i++) CU_ASSERT_EQUAL(all[i].bytes, (256ull << 10) * (1 + (unsigned)i / 4) * 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "# Interrupted (Ctrl-C) after "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "# Out of bounds values : 0 OK"));
    CU_ASSERT_EQUAL(count_occurrences(out, "# Avg bus bandwidth    : "), 1);
    if (gnuplot_installed()) CU_ASSERT(file_contains(svg, "<svg"));
    free(out);
    free(err);
}

/* ------------------------------------------------------------------------------------------------ */

int main(void)
{
    static const starfold__tu_entry_t tests[] = {
        { "run", "CPU workers: every op and dtype verified", test_run },
        { "run", "the emulated box", test_run_emulated },
        { "run", "host vectors beyond hwloc's NUMA node size, not a user's limit", test_run_host_memory_limit },
        { "run", "reduce and broadcast in run, graph, simulate", test_collectives },
        { "demo", "writes and prints the graph files", test_demo },
        { "bench", "table rows and baselines", test_bench_table },
        { "bench", "--json and --csv", test_bench_json_csv },
        { "bench", "--collective reduce and broadcast, --root", test_bench_collectives },
        { "bench", "--plot", test_bench_plot },
        { "bench", "progress on a terminal", test_bench_progress },
        { "bench", "Ctrl-C", test_bench_interrupt },
    };
    return cli_harness_main("test_cli_run", tests, SF_TU_COUNT(tests));
}
