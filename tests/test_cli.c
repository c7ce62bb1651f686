/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The starfold command, run as a user runs it: the built binary (SF_BUILDDIR/starfold) is spawned
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
 * Top level and --help
 */

static void test_top_level(void)
{
    cli_result_t r;
    run(&r, "");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_EQUAL(count_lines(r.err), 1);
    result_free(&r);

    run(&r, "--help");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Usage: starfold COMMAND"));
    static const char *const cmds[] = { "topo", "graph", "simulate", "run", "bench", "demo" };
    for (size_t i = 0; i < 5; i++) {
        char line[32];
        snprintf(line, sizeof line, "  %s ", cmds[i]);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, line));
    }
    CU_ASSERT_STRING_EQUAL(r.err, "");
    result_free(&r);

    run(&r, "--version");
    CU_ASSERT_EQUAL(r.status, 0);
    char want[64];
    snprintf(want, sizeof want, "starfold %s\n", starfold_version());
    CU_ASSERT_STRING_EQUAL(r.out, want);
    result_free(&r);

    run(&r, "help bench");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Usage: starfold bench"));
    result_free(&r);

    run(&r, "frobnicate");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_EQUAL(count_lines(r.err), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "unknown command 'frobnicate'"));
    CU_ASSERT_STRING_EQUAL(r.out, "");
    result_free(&r);

    run(&r, "--frob");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_EQUAL(count_lines(r.err), 1);
    result_free(&r);
}

static void test_help_everywhere(void)
{
    static const char *const cmds[] = { "topo", "graph", "simulate", "run", "bench", "demo" };
    for (size_t i = 0; i < 5; i++) {
        for (int form = 0; form < 3; form++) {
            cli_result_t r;
            /* --help wins wherever it stands, even after other options. */
            run(&r, "%s %s", cmds[i], form == 0 ? "--help" : form == 1 ? "-h" : "--op sum --help");
            char want[64];
            snprintf(want, sizeof want, "Usage: starfold %s", cmds[i]);
            CU_ASSERT_EQUAL(r.status, 0);
            CU_ASSERT_PTR_NOT_NULL(strstr(r.out, want));
            CU_ASSERT_STRING_EQUAL(r.err, "");
            result_free(&r);
        }
    }
}

/* ------------------------------------------------------------------------------------------------
 * Bad arguments: exit 2, one line
 */

static void test_bad_arguments(void)
{
    static const struct {
        const char *cmd, *args, *mention;
    } cases[] = {
        { "topo", "--bogus", "unknown option '--bogus'" },
        { "topo", "--topology", "needs a value" },
        { "topo", "--topology no-such-machine", "no-such-machine" },
        { "topo", "--topology /nonexistent/file.dot", "/nonexistent/file.dot: cannot open: No such file or directory" },
        { "topo", "--topology /tmp", "/tmp: a directory, not a topology file" },
        { "topo", "--topology /dev/zero", "/dev/zero: a character device, not a topology file" },
        { "topo", "-o picture.pdf", ".pdf" },
        { "topo", "--algorithm hierarchical-copy", "does not apply to topo" },
        { "topo", "stray", "unexpected argument 'stray'" },
        { "topo", "--devices 0", "--devices" },
        { "topo", "--devices 65", "--devices" },
        { "topo", "--devices 9", "has 8 devices" },
        { "topo", "--ranks 0", "--ranks" },
        { "topo", "--ranks 257", "--ranks" },
        { "topo", "--ranks 2 --topology pcie4", "exclusive" },
        { "topo", "--ranks-per-node 2", "go with --ranks" },
        { "topo", "--ranks 2 --network-bandwidth -1", "--network-bandwidth" },
        { "topo", "--ranks 2 --network-latency x", "--network-latency" },
        { "graph", "--network-bandwidth 25", "does not apply to graph" },
        { "topo", "--json=1", "takes no value" },
        { "graph", "--num-packs -1", "--num-packs" },
        { "graph", "--num-packs two", "--num-packs" },
        { "graph", "--algorithm no-such-algorithm", "unknown algorithm 'no-such-algorithm'" },
        { "graph", "--algorithm all", "unknown algorithm 'all'" },
        { "graph", "--op average", "unknown operation" },
        { "graph", "--dtype complex128", "unknown type" },
        { "graph", "--tensors 4x3", "not a multiple of the float32 element size" },
        { "graph", "--tensors 1MB", "ambiguous unit" },
        { "graph", "--tensors 1M,,2M", "item 2" },
        { "graph", "--tensors 0x4K", ">= 1" },
        { "graph", "--tensors resnet", "unknown model" },
        { "graph", "--tensors ''", "empty" },
        { "graph", "--tensors 2000000x4", "more than" },
        { "graph", "--dtype float64 --tensors 12", "float64" },
        { "graph", "--num-packs 2 --bytes-per-pack 1M", "exclusive" },
        { "graph", "--bytes-per-pack 0", "> 0" },
        { "graph", "--bytes-per-pack 1.5M", "--bytes-per-pack" },
        { "graph", "--algorithm reduce-to-one --num-packs 2", "reduce-to-one" },
        { "graph", "--algorithm reduce-to-one --bytes-per-pack 1M", "reduce-to-one" },
        { "graph", "-o x.jpg", ".jpg" },
        { "graph", "-o - --json", "choose one" },
        { "graph", "--csv", "does not apply to graph" },
        { "run", "--tensors 1M -b 4K", "exclusive" },
        { "run", "-b 6", "multiple" },
        { "run", "-n 0", "iteration count" },
        { "run", "--emulated --topology host", "exclusive" },
        { "run", "--topology dgx1-v100 -g 9", "has 8 devices" },
        { "run", "--json", "does not apply to run" },
        { "run", "--trace x.png", "the timeline is an .svg file" },
        { "graph", "--tensors 1000x4KiB --num-packs 0 -o x.svg --full", "more than Graphviz lays out" },
        { "graph", "--traffic", "--traffic draws a picture: give -o FILE.svg" },
        { "graph", "-o - --traffic", "--traffic draws a picture" },
        { "graph", "-o x.svg --traffic --full", "--full and --traffic are exclusive" },
        { "graph", "--collective all-gather --root 2", "an all-gather has no root" },
        { "run", "--collective All-Gather --root 1", "an all-gather has no root" },
        { "bench", "--collective gather", "expected all-reduce, reduce, broadcast or all-gather" },
        { "bench", "--collective", "needs a value" },
        { "bench", "--root 1", "an all-reduce has no root" },
        { "bench", "-g 3 --collective reduce --root 3", "--root 3: the collective runs on devices 0..2" },
        { "bench", "--collective broadcast --root -1", "expected a device number" },
        { "bench", "--collective reduce --root 256", "expected a device number from 0 to 255" },
        { "simulate", "--collective reduce --root 4 -g 4", "--root 4: the collective runs on devices 0..3" },
        { "simulate", "--collective reduce --backward 100", "--backward models all-reduce buckets" },
        { "graph", "--collective scatter", "expected all-reduce, reduce, broadcast or all-gather" },
        { "graph", "--root 2", "an all-reduce has no root" },
        { "graph", "--collective reduce --root 8", "--root 8: the collective runs on devices 0..7" },
        { "simulate", "--collective broadcast --root x", "expected a device number" },
        { "run", "-g 2 --collective broadcast --root 2", "--root 2: the collective runs on devices 0..1" },
        { "bench", "-o sum", "--op" },
        { "bench", "-b 8M -e 1M", "larger than" },
        { "bench", "-b 1X", "unknown unit" },
        { "bench", "-f 1", "-f" },
        { "bench", "-c 2", "0 or 1" },
        { "bench", "-w -1", "-w" },
        { "bench", "--json --csv", "exclusive" },
        { "bench", "--tensors 4K -b 1K", "excludes the size sweep" },
        { "bench", "--op all --dtype complex64", "unknown type" },
        { "bench", "-b 1 -e 1G -i 1", "more than" },
        { "bench", "--baselines 2", "0 or 1" },
        { "bench", "-t 2", "unknown option '-t'" },
        { "demo", "--out", "needs a value" },
        { "demo", "--out /proc/starfold-cannot-exist", "cannot create" },
        { "demo", "--algorithm reduce-to-one", "does not apply to demo" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_usage_error(cases[i].cmd, cases[i].args, cases[i].mention);
}

/*
 * Output that cannot be written is a failure: stdout on /dev/full (every write fails with ENOSPC) or
 * closed gives exit 1 and the reason on stderr, for every command that prints a result.
 */
static void run_stdout(cli_result_t *r, const char *redirect, const char *args)
{
    char errp[1024], cmd[4096];
    snprintf(errp, sizeof errp, "%s/cli-stderr.txt", out_dir());
    snprintf(cmd, sizeof cmd, "exec '%s/starfold' %s %s 2>'%s'", SF_BUILDDIR, args, redirect, errp);
    memset(r, 0, sizeof *r);
    r->status = sh_status(cmd);
    r->out = calloc(1, 1);
    r->err = slurp(errp, NULL);
    if (!r->err) r->err = calloc(1, 1);
}

static void test_write_errors(void)
{
    static const struct {
        const char *args, *redirect, *reason;
    } cases[] = {
        { "graph --json", ">/dev/full", "No space left on device" },
        { "simulate --json", ">/dev/full", "No space left on device" },
        { "topo", ">/dev/full", "No space left on device" },
        { "topo --json", ">&-", "Bad file descriptor" },
        { "graph -o -", ">/dev/full", "No space left on device" },
        { "--help", ">/dev/full", "No space left on device" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_result_t r;
        run_stdout(&r, cases[i].redirect, cases[i].args);
        const int ok = r.status == 1 && strstr(r.err, "starfold: cannot write the output: ") &&
                       strstr(r.err, cases[i].reason);
        if (!ok)
            fprintf(stderr, "\n  starfold %s %s: status %d, stderr '%s'\n", cases[i].args, cases[i].redirect, r.status,
                    r.err);
        CU_ASSERT(ok);
        result_free(&r);
    }
}

/* ------------------------------------------------------------------------------------------------
 * topo
 */

static void test_topo_table(void)
{
    cli_result_t r;
    run(&r, "topo");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Topology 'dgx1-v100': 8 devices, 28 links"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "latency_us"));
    /* 0-3 is a doubled NVLink pair: 2 lanes, 50 GB/s; 0-5 crosses the sockets. */
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_builtin("dgx1-v100", &t), STARFOLD_OK);
    char line[256];
    snprintf(line, sizeof line, "%s  %s  nvlink", starfold_topology_device_name(t, 0), starfold_topology_device_name(t, 3));
    const char *at = strstr(r.out, line);
    CU_ASSERT_PTR_NOT_NULL(at);
    if (at) {
        int lanes = 0;
        double gbps = 0, lat = 0;
        CU_ASSERT_EQUAL(sscanf(at + strlen(line), "%d %lf %lf", &lanes, &gbps, &lat), 3);
        CU_ASSERT_EQUAL(lanes, 2);
        CU_ASSERT_DOUBLE_EQUAL(gbps, 50.0, 1e-9);
    }
    snprintf(line, sizeof line, "%s  %s  inter-socket", starfold_topology_device_name(t, 0),
             starfold_topology_device_name(t, 5));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, line));
    starfold_topology_destroy(t);
    result_free(&r);

    run(&r, "topo --topology pcie4 --json");
    CU_ASSERT_EQUAL(r.status, 0);
    jval_t v;
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &v), 0);
    const jval_t *devs = jget(&v, "devices"), *links = jget(&v, "links");
    CU_ASSERT(devs && devs->type == J_ARR && devs->n == 4);
    CU_ASSERT(links && links->type == J_ARR && links->n > 0);
    if (links && links->n > 0) {
        CU_ASSERT_PTR_NOT_NULL(jget(&links->items[0], "kind"));
        CU_ASSERT(jnum(&links->items[0], "bandwidth_GBps") > 0);
        CU_ASSERT(jnum(&links->items[0], "lanes") >= 1);
    }
    jfree(&v);
    result_free(&r);

    /* --ranks: the topology of 4 MPI ranks, 2 per node. */
    run(&r, "topo --ranks 4 --ranks-per-node 2");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Topology '4 ranks on 2 nodes': 4 devices, 6 links"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "rank 0  rank 1  shm"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "rank 1  rank 2  network"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "rank 2  rank 3  shm"));
    result_free(&r);
    run(&r, "topo --ranks 4 --ranks-per-node 2 --network-bandwidth 25 --network-latency 1.5 --json");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &v), 0);
    devs = jget(&v, "devices");
    links = jget(&v, "links");
    CU_ASSERT(devs && devs->n == 4 && links && links->n == 6);
    for (size_t k = 0; links && k < links->n; k++) {
        const jval_t *kind = jget(&links->items[k], "kind");
        const int net = kind && kind->str && strcmp(kind->str, "network") == 0;
        CU_ASSERT(jnum(&links->items[k], "bandwidth_GBps") == 25); /* shm's default, and the network as given */
        CU_ASSERT(jnum(&links->items[k], "latency_us") == (net ? 1.5 : 0.5));
    }
    if (devs && devs->n == 4) CU_ASSERT(jnum(&devs->items[3], "socket") == 1);
    jfree(&v);
    result_free(&r);

    /* --devices keeps the first N devices. */
    run(&r, "topo --topology dgx1-p100 -g 4 --json");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &v), 0);
    devs = jget(&v, "devices");
    CU_ASSERT(devs && devs->n == 4);
    links = jget(&v, "links");
    CU_ASSERT(links && links->n == 6); /* a 4-clique */
    jfree(&v);
    result_free(&r);
}

static void test_topo_output(void)
{
    const char *dot = out_path("cli-topo.dot"), *svg = out_path("cli-topo.svg"), *png = out_path("cli-topo.png");
    remove(dot);
    remove(svg);
    remove(png);
    cli_result_t r;
    run(&r, "topo --topology dgx1-v100 -o '%s'", dot);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Written: "));
    result_free(&r);
    run(&r, "topo --topology dgx1-v100 -o '%s'", svg);
    CU_ASSERT_EQUAL(r.status, 0);
    result_free(&r);
    run(&r, "topo --topology dgx1-v100 --output='%s'", png);
    CU_ASSERT_EQUAL(r.status, 0);
    result_free(&r);
    CU_ASSERT(file_contains(svg, "<svg"));
    CU_ASSERT(file_starts_with(png, "\x89PNG", 4));

    /* The DOT file reads back as the same machine, through the library and through --topology FILE. */
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_load(dot, &t), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_num_devices(t), 8);
    CU_ASSERT_EQUAL(starfold_topology_num_links(t), 28);
    CU_ASSERT_DOUBLE_EQUAL(starfold_topology_bandwidth(t, 0, 3), 50.0, 1e-9);
    starfold_topology_destroy(t);
    run(&r, "topo --topology '%s'", dot);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "8 devices, 28 links"));
    result_free(&r);

    /* -o - : DOT on stdout, the table on stderr. */
    run(&r, "topo --topology host -o -");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "graph"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "Topology 'host'"));
    result_free(&r);
}

/* ------------------------------------------------------------------------------------------------
 * graph
 */

/* Compiles what `graph` compiles, through the library, for comparison. */
static starfold_graph_t library_graph(const char *topology, int devices, const char *algorithm, starfold_op_t op,
                                      starfold_dtype_t dtype, const char *spec, int num_packs)
{
    starfold_topology_t full = NULL, t = NULL;
    starfold_tensor_desc_t *tensors = NULL;
    size_t nt = 0;
    starfold_graph_t g = NULL;
    if (starfold_topology_open(topology, &full) != STARFOLD_OK) return NULL;
    if (devices > 0) {
        starfold_topology_subset(full, devices, &t);
        starfold_topology_destroy(full);
    } else {
        t = full;
    }
    if (t && starfold_tools_tensors_parse(spec, dtype, &tensors, &nt) == STARFOLD_OK) {
        const int n = starfold_topology_num_devices(t);
        int dev[STARFOLD_MAX_DEVICES];
        for (int d = 0; d < n; d++) dev[d] = d;
        const starfold_collective_desc_t desc = {
            .kind = STARFOLD_COLL_REDUCE, .op = op, .num_sources = n, .sources = dev, .num_tensors = nt, .tensors = tensors,
        };
        starfold_algo_options_t opt;
        starfold_algo_options_init(&opt);
        opt.num_packs = num_packs;
        if (starfold_graph_compile(t, algorithm, &desc, &opt, &g) != STARFOLD_OK) g = NULL;
    }
    starfold_tools_tensors_free(tensors);
    starfold_topology_destroy(t);
    return g;
}

/* The command's JSON must equal the library's statistics and link bytes, key for key. */
static void check_graph_json(const jval_t *v, starfold_graph_t g)
{
    CU_ASSERT_FATAL(v->type == J_OBJ);
    /* Exactly the four documented keys, in order. */
    static const char *const keys[] = { "tasks", "bytes_moved", "links", "critical_path" };
    CU_ASSERT_EQUAL(v->n, 4);
    for (size_t i = 0; i < 4 && i < v->n; i++) CU_ASSERT_STRING_EQUAL(v->keys[i], keys[i]);
    starfold_graph_stats_t s;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_stats(g, &s), STARFOLD_OK);
    const jval_t *tasks = jget(v, "tasks");
    CU_ASSERT_FATAL(tasks && tasks->type == J_OBJ);
    CU_ASSERT_EQUAL(tasks->n, STARFOLD_TASK_KIND_COUNT);
    for (int k = 0; k < STARFOLD_TASK_KIND_COUNT; k++)
        CU_ASSERT_EQUAL(jnum(tasks, starfold_task_kind_name((starfold_task_kind_t)k)), (double)s.tasks_by_kind[k]);
    CU_ASSERT_EQUAL(jnum(v, "bytes_moved"), (double)s.bytes_moved);
    const jval_t *cp = jget(v, "critical_path");
    CU_ASSERT_EQUAL(jnum(cp, "tasks"), (double)s.critical_path_tasks);
    CU_ASSERT_EQUAL(jnum(cp, "bytes"), (double)s.critical_path_bytes);
    starfold_link_bytes_t *pairs = NULL;
    size_t np = 0;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_link_bytes(g, &pairs, &np), STARFOLD_OK);
    const jval_t *links = jget(v, "links");
    CU_ASSERT_FATAL(links && links->type == J_ARR);
    CU_ASSERT_EQUAL(links->n, np);
    double sum = 0;
    for (size_t i = 0; i < np && i < links->n; i++) {
        CU_ASSERT_EQUAL(jnum(&links->items[i], "from"), pairs[i].from);
        CU_ASSERT_EQUAL(jnum(&links->items[i], "to"), pairs[i].to);
        CU_ASSERT_EQUAL(jnum(&links->items[i], "bytes"), (double)pairs[i].bytes);
        sum += jnum(&links->items[i], "bytes");
    }
    CU_ASSERT_EQUAL(sum, (double)s.bytes_moved);
    free(pairs);
}

static void test_graph_json_dgx1(void)
{
    /* The picture at the top of this file: one tensor of S = 1 MiB, num_packs = 1. */
    const double S = 1048576.0;
    cli_result_t r;
    run(&r, "graph --topology dgx1-v100 --algorithm hierarchical-copy --op sum --dtype float32 --tensors 1MiB "
            "--num-packs 1 --json");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    jval_t v;
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &v), 0);
    const jval_t *tasks = jget(&v, "tasks");
    CU_ASSERT_EQUAL(jnum(tasks, "reduce"), 3);
    CU_ASSERT_EQUAL(jnum(tasks, "scale"), 0);
    CU_ASSERT_EQUAL(jnum(tasks, "pack"), 0); /* one tensor: no concat-and-split copies */
    CU_ASSERT_EQUAL(jnum(tasks, "unpack"), 0);
    CU_ASSERT_EQUAL(jnum(&v, "bytes_moved"), 14 * S);
    const jval_t *links = jget(&v, "links");
    CU_ASSERT_FATAL(links && links->n == 14);
    /* Only the roots' links carry traffic: 0 <-> 1,2,3,4 and 4 <-> 5,6,7, S each way. */
    for (size_t i = 0; i < links->n; i++) {
        const int from = (int)jnum(&links->items[i], "from"), to = (int)jnum(&links->items[i], "to");
        const int root = from == 0 || to == 0 ? 0 : 4, other = from == root ? to : from;
        CU_ASSERT(from == root || to == root);
        CU_ASSERT(root == 0 ? (other >= 1 && other <= 4) : (other >= 5 && other <= 7));
        CU_ASSERT_EQUAL(jnum(&links->items[i], "bytes"), S);
    }
    starfold_graph_t g = library_graph("dgx1-v100", 0, "hierarchical-copy", STARFOLD_OP_SUM, STARFOLD_FLOAT32, "1MiB", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    check_graph_json(&v, g);
    starfold_graph_destroy(g);
    jfree(&v);
    result_free(&r);
}

/* simulate: the model's JSON per algorithm, equal to the library's prediction; a table for "all". */
static void test_simulate(void)
{
    cli_result_t r;
    run(&r, "simulate --topology dgx1-p100 --algorithm ring --tensors 64MiB --json");
    CU_ASSERT_EQUAL(r.status, 0);
    jval_t v;
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &v), 0);
    starfold_graph_t g = library_graph("dgx1-p100", 0, "ring", STARFOLD_OP_SUM, STARFOLD_FLOAT32, "64MiB", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    starfold_prediction_t p;
    CU_ASSERT_EQUAL_FATAL(starfold_graph_simulate(g, NULL, &p), STARFOLD_OK);
    CU_ASSERT(fabs(jnum(&v, "time_us") - p.time_us) < 1e-3 * p.time_us);
    CU_ASSERT(fabs(jnum(&v, "busbw_GBps") - p.busbw_GBps) < 1e-3 * p.busbw_GBps);
    CU_ASSERT(fabs(jnum(&v, "algbw_GBps") * 1.75 - jnum(&v, "busbw_GBps")) < 1e-2);
    const jval_t *b = jget(&v, "bottleneck");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(jnum(b, "from"), p.bottleneck_from);
    CU_ASSERT_EQUAL(jnum(b, "to"), p.bottleneck_to);
    starfold_graph_destroy(g);
    jfree(&v);
    result_free(&r);
    run(&r, "simulate --algorithm all --tensors 256MiB");
    CU_ASSERT_EQUAL(r.status, 0);
    for (int a = 0; a < starfold_algorithm_count(); a++) CU_ASSERT_PTR_NOT_NULL(strstr(r.out, starfold_algorithm_name(a)));
    result_free(&r);
    run(&r, "simulate --algorithm no-such");
    CU_ASSERT_EQUAL(r.status, 2);
    result_free(&r);

    /* A backward pass overlapped with its buckets: the keys, and the step between max and sum. */
    run(&r, "simulate --tensors resnet50 --algorithm ring --backward 20000 --bucket-bytes 25M --json");
    CU_ASSERT_EQUAL(r.status, 0);
    jval_t bw;
    CU_ASSERT_EQUAL_FATAL(jparse_text(r.out, &bw), 0);
    static const char *const bkeys[] = { "algorithm", "layers", "buckets", "bucket_bytes", "compute_us", "reduce_us",
                                         "step_us", "vs_sum", "vs_max" };
    for (size_t k = 0; k < sizeof bkeys / sizeof bkeys[0]; k++) CU_ASSERT_PTR_NOT_NULL(jget(&bw, bkeys[k]));
    CU_ASSERT_EQUAL(jnum(&bw, "layers"), 161);
    CU_ASSERT(jnum(&bw, "compute_us") > 19999.0 && jnum(&bw, "compute_us") < 20001.0);
    const double step = jnum(&bw, "step_us"), c = jnum(&bw, "compute_us"), red = jnum(&bw, "reduce_us");
    CU_ASSERT(step >= (c > red ? c : red) - 1e-6 && step <= c + red + 1e-6);
    jfree(&bw);
    result_free(&r);
    run(&r, "simulate --tensors resnet50 --backward balanced");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "overlapped step"));
    result_free(&r);
    run(&r, "simulate --bucket-bytes 4M");
    CU_ASSERT_EQUAL(r.status, 2);
    result_free(&r);
    run(&r, "simulate --backward -5");
    CU_ASSERT_EQUAL(r.status, 2);
    result_free(&r);
    run(&r, "simulate --backward 100 --algorithm all");
    CU_ASSERT_EQUAL(r.status, 2);
    result_free(&r);
}

static void test_graph_json_cases(void)
{
    static const struct {
        const char *topology;
        int devices;
        const char *algorithm, *op, *dtype, *spec;
        int packs;
    } cases[] = {
        { "dgx1-v100", 0, "hierarchical-copy", "mean", "float32", "4x1MiB,10x4KiB,1000", 2 },
        { "dgx1-p100", 5, "hierarchical-copy", "max", "int64", "3x4K,8", 0 },
        { "dgx1-v100", 0, "reduce-to-one", "prod", "float64", "2x64KiB", 1 },
        { "pcie4", 0, "hierarchical-copy", "sum", "int32", "resnet50", 1 },
        { "host", 3, "reduce-to-one", "min", "float32", "0,4", 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_result_t r;
        char packs[32] = "", devices[32] = "";
        if (strcmp(cases[i].algorithm, "hierarchical-copy") == 0) snprintf(packs, sizeof packs, "--num-packs %d", cases[i].packs);
        if (cases[i].devices) snprintf(devices, sizeof devices, "-g %d", cases[i].devices);
        run(&r, "graph --topology %s %s --algorithm %s --op %s -d %s --tensors %s %s --json", cases[i].topology, devices,
            cases[i].algorithm, cases[i].op, cases[i].dtype, cases[i].spec, packs);
        CU_ASSERT_EQUAL(r.status, 0);
        jval_t v;
        if (jparse_text(r.out, &v) != 0) {
            fprintf(stderr, "\n  case %zu: not JSON: '%s' '%s'\n", i, r.out, r.err);
            CU_FAIL("graph --json output is not JSON");
            result_free(&r);
            continue;
        }
        starfold_op_t op;
        starfold_dtype_t dt;
        CU_ASSERT_EQUAL(starfold_op_from_string(cases[i].op, &op), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_dtype_from_string(cases[i].dtype, &dt), STARFOLD_OK);
        starfold_graph_t g = library_graph(cases[i].topology, cases[i].devices, cases[i].algorithm, op, dt, cases[i].spec, cases[i].packs);
        CU_ASSERT_PTR_NOT_NULL(g);
        if (g) check_graph_json(&v, g);
        starfold_graph_destroy(g);
        jfree(&v);
        result_free(&r);
    }
}

static void test_graph_summary_and_files(void)
{
    cli_result_t r;
    run(&r, "graph --tensors 4x1MiB --num-packs 2");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Graph: hierarchical-copy, all-reduce (sum) of 4 float32 tensors"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Tasks: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Bytes moved between devices: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "time at line rate"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Critical path: "));
    result_free(&r);

    const char *dot = out_path("cli-graph.dot"), *svg = out_path("cli-graph.svg"), *png = out_path("cli-graph.png");
    remove(dot);
    remove(svg);
    remove(png);
    run(&r, "graph --tensors 2x4K -o '%s'", dot);
    CU_ASSERT_EQUAL(r.status, 0);
    result_free(&r);
    run(&r, "graph --tensors 2x4K -o '%s'", svg);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Written: "));
    result_free(&r);
    /* 12,000 tasks: drawn summarised, in seconds (Graphviz took over ten minutes on every task). */
    const char *big = out_path("cli-graph-big.svg");
    run(&r, "graph --tensors 1000x4KiB --num-packs 0 -o '%s'", big);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Written: "));
    result_free(&r);
    CU_ASSERT(file_contains(big, "summary: 12000 tasks as 32 groups"));
    CU_ASSERT(file_contains(big, ">legend<"));
    /* 16 unpacked tensors: 192 tasks but 128 inputs in a row, summarised; --full draws every task. */
    char wide[1024]; /* not out_path(): its four slots hold dot, svg, png and big */
    snprintf(wide, sizeof wide, "%s/cli-graph-wide.svg", out_dir());
    run(&r, "graph --tensors 16x4KiB --num-packs 0 -o '%s'", wide);
    CU_ASSERT_EQUAL(r.status, 0);
    result_free(&r);
    CU_ASSERT(file_contains(wide, "summary: 192 tasks as"));
    run(&r, "graph --tensors 16x4KiB --num-packs 0 -o '%s' --full", wide);
    CU_ASSERT_EQUAL(r.status, 0);
    result_free(&r);
    CU_ASSERT(!file_contains(wide, "summary:"));
    CU_ASSERT(file_contains(wide, "<title>t191</title>"));
    /* --traffic: the devices and the bytes between them, whatever the size (12,000 tasks here). */
    run(&r, "graph --tensors 1000x4KiB --num-packs 0 -o '%s' --traffic", wide);
    CU_ASSERT_EQUAL(r.status, 0);
    result_free(&r);
    CU_ASSERT(file_contains(wide, "12000 tasks, "));
    CU_ASSERT(file_contains(wide, "(traffic view)"));
    CU_ASSERT(file_contains(wide, "gpu7 (device 7)"));
    run(&r, "graph --tensors 2x4K -o '%s' --json", png);
    CU_ASSERT_EQUAL(r.status, 0);
    jval_t v;
    CU_ASSERT_EQUAL(jparse_text(r.out, &v), 0); /* -o with --json: stdout stays pure JSON */
    jfree(&v);
    result_free(&r);
    CU_ASSERT(file_starts_with(dot, "digraph", 7));
    CU_ASSERT(file_contains(svg, "<svg"));
    CU_ASSERT(file_starts_with(png, "\x89PNG", 4));

    /* -o - : DOT on stdout, the summary on stderr; the same bytes as the library writes. */
    run(&r, "graph --tensors 2x4K -o -");
    CU_ASSERT_EQUAL(r.status, 0);
    char *want = slurp(dot, NULL);
    CU_ASSERT(want && strcmp(r.out, want) == 0);
    free(want);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "Tasks: "));
    result_free(&r);

    /* Size-based packing now exists in the library: the flag is accepted and changes the graph. */
    run(&r, "graph --tensors resnet50 --bytes-per-pack 4M --json");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL(jparse_text(r.out, &v), 0);
    const double packs_by_size = jnum(jget(&v, "tasks"), "pack");
    jfree(&v);
    result_free(&r);
    run(&r, "graph --tensors resnet50 --num-packs 1 --json");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_EQUAL(jparse_text(r.out, &v), 0);
    CU_ASSERT(jnum(jget(&v, "tasks"), "pack") != packs_by_size);
    jfree(&v);
    result_free(&r);
}

/* ------------------------------------------------------------------------------------------------
 * The tensor-list parser (library)
 */

static uint64_t total_elements(const starfold_tensor_desc_t *t, size_t n)
{
    uint64_t e = 0;
    for (size_t i = 0; i < n; i++) e += t[i].count;
    return e;
}

static void test_spec_models(void)
{
    starfold_tensor_desc_t *t = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(starfold_tools_tensors_parse("resnet50", STARFOLD_FLOAT32, &t, &n), STARFOLD_OK);
    CU_ASSERT_EQUAL(n, 161);
    CU_ASSERT_EQUAL(total_elements(t, n), 25557032ull);
    CU_ASSERT_EQUAL(t[0].count, 7 * 7 * 3 * 64); /* conv1 */
    CU_ASSERT_EQUAL(t[n - 2].count, 2048 * 1000); /* fc */
    CU_ASSERT_EQUAL(t[n - 1].count, 1000);
    for (size_t i = 0; i < n; i++) CU_ASSERT_EQUAL(t[i].dtype, STARFOLD_FLOAT32);
    starfold_tools_tensors_free(t);

    CU_ASSERT_EQUAL_FATAL(starfold_tools_tensors_parse(" ResNet50 ", STARFOLD_FLOAT64, &t, &n), STARFOLD_OK);
    CU_ASSERT_EQUAL(total_elements(t, n), 25557032ull);
    CU_ASSERT_EQUAL(t[0].dtype, STARFOLD_FLOAT64);
    starfold_tools_tensors_free(t);

    CU_ASSERT_EQUAL_FATAL(starfold_tools_tensors_parse("bert-base", STARFOLD_FLOAT32, &t, &n), STARFOLD_OK);
    CU_ASSERT_EQUAL(n, 199);
    CU_ASSERT_EQUAL(total_elements(t, n), 109482240ull);
    CU_ASSERT_EQUAL(t[0].count, 30522 * 768);
    starfold_tools_tensors_free(t);

    const char *const *names = starfold_tools_tensors_model_names();
    CU_ASSERT_STRING_EQUAL(names[0], "resnet50");
    CU_ASSERT_STRING_EQUAL(names[1], "bert-base");
    CU_ASSERT_PTR_NULL(names[2]);
}

static void test_spec_lists(void)
{
    starfold_tensor_desc_t *t = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(starfold_tools_tensors_parse("4x1MiB,10x4KiB,1000", STARFOLD_FLOAT32, &t, &n), STARFOLD_OK);
    CU_ASSERT_EQUAL(n, 15);
    for (size_t i = 0; i < 4; i++) CU_ASSERT_EQUAL(t[i].count, 262144);
    for (size_t i = 4; i < 14; i++) CU_ASSERT_EQUAL(t[i].count, 1024);
    CU_ASSERT_EQUAL(t[14].count, 250);
    starfold_tools_tensors_free(t);

    /* Suffixes in any case, blanks around items, 0 bytes, X for x. */
    CU_ASSERT_EQUAL_FATAL(starfold_tools_tensors_parse(" 2X1k , 1m,1G, 0 ,8B,3x16kib ", STARFOLD_INT64, &t, &n), STARFOLD_OK);
    CU_ASSERT_EQUAL(n, 9);
    const size_t want[9] = { 128, 128, 131072, 134217728, 0, 1, 2048, 2048, 2048 };
    for (size_t i = 0; i < 9 && i < n; i++) CU_ASSERT_EQUAL(t[i].count, want[i]);
    starfold_tools_tensors_free(t);

    uint64_t b = 0;
    CU_ASSERT_EQUAL(starfold_tools_size_parse("1K", &b), STARFOLD_OK);
    CU_ASSERT_EQUAL(b, 1024);
    CU_ASSERT_EQUAL(starfold_tools_size_parse("3MiB", &b), STARFOLD_OK);
    CU_ASSERT_EQUAL(b, 3ull << 20);
    CU_ASSERT_EQUAL(starfold_tools_size_parse("2g", &b), STARFOLD_OK);
    CU_ASSERT_EQUAL(b, 2ull << 30);
    CU_ASSERT_EQUAL(starfold_tools_size_parse("1TiB", &b), STARFOLD_OK);
    CU_ASSERT_EQUAL(b, 1ull << 40);
    CU_ASSERT_EQUAL(starfold_tools_size_parse("  77 ", &b), STARFOLD_OK);
    CU_ASSERT_EQUAL(b, 77);
    CU_ASSERT_EQUAL(starfold_tools_size_parse("18446744073709551615", &b), STARFOLD_OK);
    CU_ASSERT_EQUAL(b, UINT64_MAX);
}

static void test_spec_errors(void)
{
    static const struct {
        const char *spec;
        const char *mention;
    } bad[] = {
        { "", "empty" },
        { "   ", "empty" },
        { ",", "item 1" },
        { "1M,", "item 2" },
        { "1M,,1M", "item 2" },
        { "x4", "unknown model" },
        { "4x", "item 1" },
        { "0x4", ">= 1" },
        { "1.5M", "unknown unit" },
        { "-1", "starts with a digit" },
        { "+4", "starts with a digit" },
        { "1MB", "ambiguous" },
        { "1kb", "ambiguous" },
        { "4 x 1K", "unknown unit" },
        { "3", "not a multiple" },
        { "2x6,4", "item 1" },
        { "1000,10x2", "item 2" },
        { "99999999999999999999", "too large" },
        { "18446744073709551615K", "too large" },
        { "99999999999999999999x4", "count too large" },
        { "1048577x4", "more than" },
        { "1048576x4,4", "more than" },
        { "1048576x16E", "unknown unit" },
        { "3x9223372036854775804", "overflow" },
        { "2x9223372036854775804,8", "overflow" },
        { "resnet50,4", "item 1" },
        { "bert", "unknown model" },
        { "1M\n", NULL }, /* a trailing newline is a blank: valid */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        starfold_tensor_desc_t sentinel_t = { STARFOLD_INT32, 12345 };
        starfold_tensor_desc_t *t = &sentinel_t;
        size_t n = 777;
        starfold_status_t st = starfold_tools_tensors_parse(bad[i].spec, STARFOLD_FLOAT32, &t, &n);
        if (!bad[i].mention) {
            CU_ASSERT_EQUAL(st, STARFOLD_OK);
            if (st == STARFOLD_OK) starfold_tools_tensors_free(t);
            continue;
        }
        const int ok = st == STARFOLD_ERR_PARSE && t == &sentinel_t && n == 777 && strstr(starfold_last_error(), bad[i].mention);
        if (!ok) fprintf(stderr, "\n  spec '%s': status %d, '%s'\n", bad[i].spec, (int)st, starfold_last_error());
        CU_ASSERT(ok);
    }
    starfold_tensor_desc_t *t = NULL;
    size_t n = 0;
    uint64_t b = 5;
    CU_ASSERT_EQUAL(starfold_tools_tensors_parse(NULL, STARFOLD_FLOAT32, &t, &n), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_tools_tensors_parse("1K", STARFOLD_FLOAT32, NULL, &n), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_tools_tensors_parse("1K", (starfold_dtype_t)99, &t, &n), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_tools_size_parse(NULL, &b), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_tools_size_parse("1KB", &b), STARFOLD_ERR_PARSE);
    CU_ASSERT_EQUAL(starfold_tools_size_parse("", &b), STARFOLD_ERR_PARSE);
    CU_ASSERT_EQUAL(starfold_tools_size_parse("18446744073709551616", &b), STARFOLD_ERR_PARSE);
    CU_ASSERT_EQUAL(b, 5);
    starfold_tools_tensors_free(NULL);
}

/* Random texts over the grammar's alphabet: a valid result is consistent, a failure leaves the outputs. */
static void test_spec_fuzz(void)
{
    static const char alphabet[] = "0123456789012345678901234567890123456789xX,,,KMGTiBkmb -.";
    uint64_t state = 0x2545F4914F6CDD1DULL;
    char text[48];
    int valid = 0;
    for (int iter = 0; iter < 30000; iter++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        const size_t len = (size_t)(state % (sizeof text - 1));
        for (size_t k = 0; k < len; k++) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            text[k] = alphabet[state % (sizeof alphabet - 1)];
        }
        text[len] = '\0';
        starfold_tensor_desc_t sentinel_t, *t = &sentinel_t;
        size_t n = 0;
        const starfold_dtype_t dt = (starfold_dtype_t)(iter % STARFOLD_DTYPE_COUNT);
        const starfold_status_t st = starfold_tools_tensors_parse(text, dt, &t, &n);
        if (st == STARFOLD_OK) {
            valid++;
            CU_ASSERT(n >= 1 && n <= STARFOLD_TOOLS_TENSORS_MAX);
            uint64_t bytes = 0;
            for (size_t i = 0; i < n; i++) {
                CU_ASSERT_EQUAL(t[i].dtype, dt);
                bytes += t[i].count * starfold_dtype_size(dt);
            }
            CU_ASSERT(bytes / starfold_dtype_size(dt) == total_elements(t, n));
            starfold_tools_tensors_free(t);
        } else {
            CU_ASSERT(st == STARFOLD_ERR_PARSE);
            CU_ASSERT(t == &sentinel_t && n == 0);
            CU_ASSERT(starfold_last_error()[0] != '\0');
        }
    }
    CU_ASSERT(valid > 100); /* the alphabet does produce valid lists */
}

/* graph --ranks: the topology of a process group (one device per rank), no MPI needed. */
static void test_graph_ranks(void)
{
    cli_result_t r;
    run(&r, "graph --ranks 4 --ranks-per-node 2 --algorithm halving-doubling --tensors 1MiB");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "over 4 devices of '4 ranks on 2 nodes'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "rank 0  rank 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "shm x1"));     /* ranks 0 and 1 share node 0 */
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "network x1")); /* and reach node 1 over the network */
    result_free(&r);
    const char *png = out_path("cli-graph-ranks.png");
    remove(png);
    run(&r, "graph --ranks 4 --ranks-per-node 2 --algorithm ring -o '%s'", png);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Written: "));
    result_free(&r);
    CU_ASSERT(file_starts_with(png, "\x89PNG", 4));
    run(&r, "graph --ranks 4 --ranks-per-node 2 --json");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\"bytes_moved\": "));
    result_free(&r);
    static const struct { const char *args, *msg; } bad[] = {
        { "graph --ranks-per-node 2", "--ranks-per-node needs --ranks N" },
        { "graph --ranks 4 --topology pcie4", "it excludes --topology" },
        { "graph --ranks 4 -g 2", "it excludes -g/--devices" },
        { "graph --ranks 0", "expected a rank count" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run(&r, "%s", bad[i].args);
        CU_ASSERT_EQUAL(r.status, 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, bad[i].msg));
        CU_ASSERT_EQUAL(count_lines(r.err), 1);
        result_free(&r);
    }
}

/* run --mpi and bench --mpi outside mpirun (or in a build without MPI): refused, one line, exit 2, before
 * anything starts; --ranks-per-node and --lowering need --mpi. */
static void test_run_mpi_refused(void)
{
    /* No launcher's variables (empty counts as absent), whatever the environment of make check. */
    const char *nolauncher = "OMPI_COMM_WORLD_SIZE= PMI_SIZE= PMI_RANK= PMIX_RANK=";
    cli_result_t r;
#ifdef STARFOLD_HAVE_MPI
    const char *why = "not started by an MPI launcher";
#else
    const char *why = "built without MPI";
#endif
    static const char *const cmds[] = { "run --mpi --topology host -g 2 --tensors 4K", "bench --mpi -b 4K -e 8K" };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        run_env(&r, nolauncher, "%s", cmds[i]);
        CU_ASSERT_EQUAL(r.status, 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--mpi: "));
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, why));
        CU_ASSERT_EQUAL(count_lines(r.err), 1);
        CU_ASSERT_STRING_EQUAL(r.out, ""); /* nothing started */
        result_free(&r);
    }
    run(&r, "run --lowering ring");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--lowering applies across MPI ranks: add --mpi"));
    result_free(&r);
    run(&r, "bench --ranks-per-node 2");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--ranks-per-node applies across MPI ranks"));
    result_free(&r);
#ifdef STARFOLD_HAVE_MPI
    run(&r, "run --mpi --lowering bogus");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "unknown lowering 'bogus' (known: auto, mpi, ring, halving-doubling, "
                                         "hierarchical, leader)"));
    result_free(&r);
    run_env(&r, nolauncher, "run --mpi --algorithm ring");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--algorithm does not apply to run --mpi"));
    result_free(&r);
#endif
}

/* ------------------------------------------------------------------------------------------------ */

int main(void)
{
    static const starfold__tu_entry_t tests[] = {
        { "run", "--mpi refused outside mpirun, options that need it", test_run_mpi_refused },
        { "spec", "models: resnet50, bert-base", test_spec_models },
        { "spec", "lists and sizes", test_spec_lists },
        { "spec", "errors leave outputs untouched", test_spec_errors },
        { "spec", "fuzz", test_spec_fuzz },
        { "command", "top level, --version, unknown command", test_top_level },
        { "command", "--help for every command", test_help_everywhere },
        { "command", "bad arguments: exit 2, one line", test_bad_arguments },
        { "command", "lost output: exit 1 with the reason", test_write_errors },
        { "topo", "tables and JSON", test_topo_table },
        { "topo", "-o dot, svg, png, -", test_topo_output },
        { "graph", "JSON of the DGX-1 hierarchical copy", test_graph_json_dgx1 },
        { "graph", "JSON equals the library, several cases", test_graph_json_cases },
        { "graph", "summary and exported files", test_graph_summary_and_files },
        { "graph", "--ranks: the process group's topology", test_graph_ranks },
        { "simulate", "JSON equals the library's model; all algorithms", test_simulate },
    };
    return cli_harness_main("test_cli", tests, SF_TU_COUNT(tests));
}
