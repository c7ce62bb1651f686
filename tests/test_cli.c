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

extern char **environ;

/* ------------------------------------------------------------------------------------------------
 * Running the command
 */

typedef struct cli_result {
    int status;  /* exit status, or -1 when it did not exit normally */
    char *out;   /* stdout, NUL-terminated */
    char *err;   /* stderr */
} cli_result_t;

static const char *out_dir(void)
{
    const char *d = getenv("SF_TEST_OUT");
    return d && *d ? d : SF_BUILDDIR "/tests/out";
}

/* A path under the test output folder; each of the 4 slots is reused every fourth call. */
static const char *out_path(const char *file)
{
    static char paths[4][1024];
    static int slot;
    char *p = paths[slot++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", out_dir(), file);
    return p;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

static void result_free(cli_result_t *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* The exit status of `sh -c CMD`, -1 when it did not exit. */
static int sh_status(char *cmd)
{
    char *argv[] = { "sh", "-c", cmd, NULL };
    pid_t pid;
    int status = -1;
    fflush(NULL);
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) == 0) {
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        if (WIFEXITED(st)) status = WEXITSTATUS(st);
    }
    return status;
}

/* Runs `[ENV] starfold ARGS` through /bin/sh; @env is a prefix of VAR=value words or NULL. */
static void run_env(cli_result_t *r, const char *env, const char *fmt, ...)
{
    char args[2048], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char outp[1024], errp[1024];
    snprintf(outp, sizeof outp, "%s/cli-stdout.txt", out_dir());
    snprintf(errp, sizeof errp, "%s/cli-stderr.txt", out_dir());
    snprintf(cmd, sizeof cmd, "%s exec '%s/starfold' %s >'%s' 2>'%s'", env ? env : "", SF_BUILDDIR, args, outp, errp);
    memset(r, 0, sizeof *r);
    r->status = sh_status(cmd);
    r->out = slurp(outp, NULL);
    r->err = slurp(errp, NULL);
    if (!r->out) r->out = calloc(1, 1);
    if (!r->err) r->err = calloc(1, 1);
}

#define run(r, ...) run_env((r), NULL, __VA_ARGS__)

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* A bad-argument run: status 2, nothing on stdout, exactly one line on stderr "starfold CMD: ...". */
static void expect_usage_error(const char *cmd, const char *args, const char *mention)
{
    cli_result_t r;
    run(&r, "%s %s", cmd, args);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "starfold %s: ", cmd);
    const int ok = r.status == 2 && r.out[0] == '\0' && count_lines(r.err) == 1 &&
                   strncmp(r.err, prefix, strlen(prefix)) == 0 && (!mention || strstr(r.err, mention));
    if (!ok)
        fprintf(stderr, "\n  starfold %s %s: status %d, stdout '%.80s', stderr '%s' (wanted 2 and '%s')\n", cmd, args,
                r.status, r.out, r.err, mention ? mention : "");
    CU_ASSERT(ok);
    result_free(&r);
}

/* ------------------------------------------------------------------------------------------------
 * A small JSON reader: enough for the command's output (objects, arrays, numbers, strings, null).
 */

typedef enum { J_NULL, J_NUM, J_STR, J_ARR, J_OBJ, J_BOOL } jtype_t;
typedef struct jval {
    jtype_t type;
    double num;
    char *str;
    size_t n;             /* items of an array or object */
    struct jval *items;   /* [n] */
    char **keys;          /* [n] for objects */
} jval_t;

typedef struct { const char *p; int bad; } jcur_t;

static void jskip(jcur_t *c)
{
    while (*c->p && isspace((unsigned char)*c->p)) c->p++;
}

static void jfree(jval_t *v)
{
    for (size_t i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof *v);
}

static char *jstring(jcur_t *c)
{
    if (*c->p != '"') {
        c->bad = 1;
        return NULL;
    }
    c->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    while (s && *c->p && *c->p != '"') {
        char ch = *c->p++;
        if (ch == '\\') {
            ch = *c->p++;
            if (ch == 'u') { /* the command escapes only control characters */
                ch = (char)strtol((char[]){ c->p[0], c->p[1], c->p[2], c->p[3], 0 }, NULL, 16);
                c->p += 4;
            } else if (ch == 'n') ch = '\n';
        }
        if (n + 2 > cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                s = NULL;
                break;
            }
            s = t;
        }
        s[n++] = ch;
    }
    if (!s || *c->p != '"') {
        free(s);
        c->bad = 1;
        return NULL;
    }
    c->p++;
    s[n] = '\0';
    return s;
}

static void jparse(jcur_t *c, jval_t *v)
{
    memset(v, 0, sizeof *v);
    jskip(c);
    if (*c->p == '{' || *c->p == '[') {
        const int obj = *c->p == '{';
        const char close = obj ? '}' : ']';
        v->type = obj ? J_OBJ : J_ARR;
        c->p++;
        jskip(c);
        if (*c->p == close) {
            c->p++;
            return;
        }
        for (;;) {
            v->items = realloc(v->items, (v->n + 1) * sizeof *v->items);
            if (obj) v->keys = realloc(v->keys, (v->n + 1) * sizeof *v->keys);
            if (!v->items || (obj && !v->keys)) {
                c->bad = 1;
                return;
            }
            if (obj) {
                jskip(c);
                v->keys[v->n] = jstring(c);
                jskip(c);
                if (c->bad || *c->p != ':') {
                    c->bad = 1;
                    free(v->keys[v->n]);
                    return;
                }
                c->p++;
            }
            jparse(c, &v->items[v->n]);
            v->n++;
            if (c->bad) return;
            jskip(c);
            if (*c->p == ',') {
                c->p++;
                continue;
            }
            if (*c->p == close) {
                c->p++;
                return;
            }
            c->bad = 1;
            return;
        }
    } else if (*c->p == '"') {
        v->type = J_STR;
        v->str = jstring(c);
    } else if (strncmp(c->p, "null", 4) == 0) {
        v->type = J_NULL;
        c->p += 4;
    } else if (strncmp(c->p, "true", 4) == 0 || strncmp(c->p, "false", 5) == 0) {
        v->type = J_BOOL;
        v->num = c->p[0] == 't';
        c->p += c->p[0] == 't' ? 4 : 5;
    } else {
        char *end = NULL;
        v->type = J_NUM;
        v->num = strtod(c->p, &end);
        if (end == c->p) c->bad = 1;
        c->p = end;
    }
}

/* Parses one JSON value that must be all of @text but blanks; 0 or -1. */
static int jparse_text(const char *text, jval_t *v)
{
    jcur_t c = { text, 0 };
    jparse(&c, v);
    jskip(&c);
    if (c.bad || *c.p) {
        jfree(v);
        return -1;
    }
    return 0;
}

static const jval_t *jget(const jval_t *obj, const char *key)
{
    if (!obj || obj->type != J_OBJ) return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (obj->keys[i] && strcmp(obj->keys[i], key) == 0) return &obj->items[i];
    return NULL;
}

static double jnum(const jval_t *obj, const char *key)
{
    const jval_t *v = jget(obj, key);
    return v && v->type == J_NUM ? v->num : NAN;
}

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
        { "graph", "--dtype float16", "unknown type" },
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
        { "bench", "--op all --dtype half", "unknown type" },
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

static int file_starts_with(const char *path, const char *prefix, size_t len)
{
    size_t n = 0;
    char *s = slurp(path, &n);
    const int ok = s && n >= len && memcmp(s, prefix, len) == 0;
    free(s);
    return ok;
}

static int file_contains(const char *path, const char *needle)
{
    char *s = slurp(path, NULL);
    const int ok = s && strstr(s, needle) != NULL;
    free(s);
    return ok;
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
    CU_ASSERT_EQUAL(bench_rows(r.out, rows, 64), 4 * 4);
    static const char *const types[] = { "float", "double", "int32", "int64" };
    for (int i = 0; i < 16; i++) {
        CU_ASSERT_STRING_EQUAL(rows[i].op, "avg");
        int known = 0;
        for (int t = 0; t < 4; t++) known |= !strcmp(rows[i].type, types[t]);
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
    CU_ASSERT_EQUAL(rows, 4 * 2 * 4); /* dtypes x sizes (256, 1K) x (algorithm + 3 baselines) */
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
    static const struct {
        const char *suite, *name;
        void (*fn)(void);
    } tests[] = {
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
        { "run", "CPU workers: every op and dtype verified", test_run },
        { "run", "the emulated box", test_run_emulated },
        { "run", "host vectors beyond hwloc's NUMA node size, not a user's limit", test_run_host_memory_limit },
        { "run", "--mpi refused outside mpirun, options that need it", test_run_mpi_refused },
        { "run", "reduce and broadcast in run, graph, simulate", test_collectives },
        { "demo", "writes and prints the graph files", test_demo },
        { "bench", "table rows and baselines", test_bench_table },
        { "bench", "--json and --csv", test_bench_json_csv },
        { "bench", "--collective reduce and broadcast, --root", test_bench_collectives },
        { "bench", "--plot", test_bench_plot },
        { "bench", "progress on a terminal", test_bench_progress },
        { "bench", "Ctrl-C", test_bench_interrupt },
    };
    struct stat sb;
    if (stat(SF_BUILDDIR "/starfold", &sb) != 0) {
        fprintf(stderr, "test_cli: %s/starfold is not built\n", SF_BUILDDIR);
        return 1;
    }
    mkdir(out_dir(), 0755);
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    CU_pSuite suite = NULL;
    const char *current = "";
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (strcmp(current, tests[i].suite) != 0) {
            current = tests[i].suite;
            suite = CU_add_suite(current, NULL, NULL);
        }
        if (!suite || !CU_add_test(suite, tests[i].name, tests[i].fn)) {
            CU_cleanup_registry();
            return 1;
        }
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
