/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold bench: a sweep in the style of nccl-tests' all_reduce_perf (reduce_perf, broadcast_perf with
 * --collective), printed in its layout.
 *
 *     for each dtype, op, size (-b .. -e, times -f or plus -i; or the one batch of --tensors):
 *         replicas filled once (out-of-place: inputs stay, outputs are overwritten)
 *         for each algorithm: -w warm-up iterations, outputs set to a sentinel (-c 1), -n timed
 *             iterations, every output element checked against the float64 reference (-c 1); then the
 *             same in place (each output its device's input), the inputs written again, one more
 *             in-place run checked (-c 1), the inputs written again; one row printed
 *         then the baselines copy, host-loop and starpu-redux (out-of-place), one '#' row each
 *
 * Every iteration is one submission waited for (starfold_submit .. starfold_request_wait), so the
 * time includes StarPU's task submission: time_us is the mean over the timed iterations. With
 * --persistent the graph is bound to the replicas once, before the warm-up, and every iteration is
 * starfold_persistent_start .. starfold_request_wait (the planning is left out, as in a training loop).
 * algbw = bytes per replica / time, busbw = algbw * the collective's factor (bench_collective_t:
 * 2(n-1)/n for all-reduce, 1 for reduce and broadcast, the nccl-tests definitions).
 *
 * Baselines, measured on the same data in the same run:
 *   copy          every input copied to its output by its device's worker (starfold_tools_baseline_copy()):
 *                 the n reads and n writes no all-reduce on one memory can avoid, so its time is the
 *                 memory-traffic bound; a note gives each algorithm's share of it;
 *   host-loop     one host thread reads the n inputs and writes the n outputs once, in blocks (what
 *                 a single-threaded reduction costs);
 *   starpu-redux  StarPU's own STARPU_REDUX reduction (starfold_tools_baseline_starpu_redux()).
 * They are all-reduces: a reduce or a broadcast is measured without them (a note says so).
 *
 * Long sweeps: a progress line on stderr when it is a terminal; Ctrl-C ends the sweep with the rows
 * measured so far (footer, JSON/CSV, plot) and exit status 130.
 */
#include "cli.h"
#include "base/half.h" /* the kernels' float16/bfloat16 conversions, for the plain-loop baseline */

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
/* Most sizes a sweep may have: an additive sweep over a wide range is a typing mistake. */
#define BENCH_MAX_SIZES 4096
/* Elements per block of the host loop: its replicas' blocks stay in cache between reads and writes. */
#define HOST_BLOCK 2048

/*
 * The collective measured, in one place: its name, nccl-tests' program for it, and nccl-tests' bus
 * bandwidth factor (busbw = algbw * factor(n), comparable with one link's bandwidth whatever n is).
 */
typedef struct bench_collective {
    const char *name;              /* in starfold's notes and the plot's title */
    const char *perf;              /* nccl-tests' program measuring it */
    const char *factor_text;       /* the factor, as the notes print it */
    double (*busbw_factor)(int n);
    int has_root;                  /* the root column holds a device; -1 otherwise */
} bench_collective_t;

static double all_reduce_factor(int n)
{
    return n > 1 ? 2.0 * (n - 1) / n : 0.0;
}

/* nccl-tests' reduce_perf and broadcast_perf: every byte crosses the root's link once, busbw = algbw. */
static double one_factor(int n)
{
    (void)n;
    return 1.0;
}

static const bench_collective_t bench_all_reduce = {
    .name = "all-reduce", .perf = "all_reduce_perf", .factor_text = "2(n-1)/n", .busbw_factor = all_reduce_factor,
};
static const bench_collective_t bench_reduce = {
    .name = "reduce", .perf = "reduce_perf", .factor_text = "1", .busbw_factor = one_factor, .has_root = 1,
};
static const bench_collective_t bench_broadcast = {
    .name = "broadcast", .perf = "broadcast_perf", .factor_text = "1", .busbw_factor = one_factor, .has_root = 1,
};

/* nccl-tests' all_gather_perf: each device receives (n-1)/n of the gathered size. */
static double all_gather_factor(int n)
{
    return n > 1 ? (double)(n - 1) / n : 0.0;
}

/*
 * An all-gather's size is all_gather_perf's: the gathered bytes on one device (n x a replica's), the
 * count its elements; a sweep's size is that total, each replica holding size / n (rounded down to
 * whole elements, as nccl-tests does). No in-place column: an input here is a vector of its own, not
 * a part of its output (N/A, as nccl-tests prints for what it does not measure).
 */
static const bench_collective_t bench_all_gather = {
    .name = "all-gather", .perf = "all_gather_perf", .factor_text = "(n-1)/n", .busbw_factor = all_gather_factor,
};

/* One measurement of a row: out-of-place or in-place. */
typedef struct meas {
    int valid;             /* measured (else N/A) */
    double time_us, algbw, busbw;
    long long wrong;       /* -1 when not checked */
} meas_t;

/* One measured row, kept for the footer and the plot. */
typedef struct row {
    char label[96];        /* algorithm, plus op and dtype when several are swept */
    const char *algorithm;
    char graph[64];        /* the graph that ran: "auto:<algorithm>" for auto, else the algorithm */
    int baseline;          /* copy, host-loop, starpu-redux: a reference, not the collective measured */
    starfold_op_t op;
    starfold_dtype_t dtype;
    uint64_t bytes, count;
    meas_t oop, ip;        /* out-of-place, in-place */
} row_t;

typedef struct bench {
    const cli_command_t *cmd;
    const bench_collective_t *coll;
    int root;              /* for a collective with a root; -1 otherwise */
    cli_coll_t devs;       /* the collective's sources and destinations (desc points into it) */
    starfold_collective_desc_t desc; /* kind, sources, destinations: what every graph compiles (cli_collective_setup) */
    cli_opts_t o;
    cli_machine_t m;
    FILE *info;            /* human-readable notes: stdout, or stderr under --json/--csv */
    const char *algorithms[16];
    int nalgorithms;
    char last_graph[64];   /* starfold_graph_algorithm() of the graph measure_graph() last compiled */
    int several;           /* several ops or dtypes: labels name them */
    int all_algorithms;    /* --algorithm all: an algorithm refusing a case is skipped, not a failure */
    row_t *rows;
    size_t nrows, cap;
    int failed;            /* an error happened (the bench goes on with the next row) */
    uint64_t wrong_total;
    uint64_t first_bytes, last_bytes; /* the sweep, for the header */
    /* Progress (stderr, only when it is a terminal): measurements done of the total, their sizes and times. */
    int progress, progress_shown;
    const uint64_t *sizes; /* the sweep's sizes (one: the batch of --tensors) */
    int nsizes, units_per_size, sweeps_total;      /* measurements per size; sweeps (ops x dtypes) */
    int sweep_index, size_index, unit_index;       /* where the bench is */
    long units_done;
    double start, fit_n, fit_x, fit_y, fit_xx, fit_xy;
} bench_t;

/* Set by the first SIGINT (Ctrl-C); read between measurements and between iterations. */
static volatile sig_atomic_t bench_interrupted;

static void bench_on_sigint(int sig)
{
    (void)sig;
    bench_interrupted = 1; /* SA_RESETHAND: a second Ctrl-C ends the process as usual */
}

/* ------------------------------------------------------------------------------------------------
 * Output, in nccl-tests' layout (src/common.cu): its header line and device list, the two-line
 * column header with out-of-place and in-place groups, rows printed with its formats, and its two
 * footer lines. Every column keeps the index it has in all_reduce_perf's table; starfold's algorithm
 * is one trailing column (as nccl-tests' own optional trailing timestamp), so several algorithms in
 * one table read like nccl-tests' `-d all -o all` tables (sizes repeat, a column tells them apart).
 * Baselines are references, not the collective measured: they are printed as '#' lines in the same
 * layout, so a script reading the table sees only the collective (JSON and CSV list them as rows).
 */

/* nccl-tests' type and reduction names. */
static const char *nccl_type_name(starfold_dtype_t d)
{
    switch (d) {
    case STARFOLD_FLOAT32: return "float";
    case STARFOLD_FLOAT64: return "double";
    case STARFOLD_INT32: return "int32";
    case STARFOLD_INT64: return "int64";
    case STARFOLD_FLOAT16: return "half";
    default: return starfold_dtype_name(d);
    }
}

static const char *nccl_op_name(starfold_op_t op)
{
    return op == STARFOLD_OP_MEAN ? "avg" : starfold_op_name(op);
}

/* The redop column: broadcast_perf and all_gather_perf print "none" (nothing is reduced). */
static const char *row_op_name(const bench_t *b, starfold_op_t op)
{
    return b->coll == &bench_broadcast || b->coll == &bench_all_gather ? "none" : nccl_op_name(op);
}

/* nccl-tests' getFloatStr(): the value in @width characters, fewer decimals as it grows. */
static void float_str(double v, int width, char *str, size_t len)
{
    if (snprintf(str, len, "%*.2f", width, v) <= width) return;
    if (snprintf(str, len, "%*.1f", width, v) <= width) return;
    if (snprintf(str, len, "%*.0f", width, v) <= width) return;
    snprintf(str, len, width >= 7 ? "%*.1e" : "%*.0e", width, v);
}

static const char *mode_name(starfold_device_mode_t mode)
{
    return mode == STARFOLD_DEVICES_OPENCL ? "OpenCL" : mode == STARFOLD_DEVICES_CUDA ? "CUDA" : "CPU";
}

static void print_header(bench_t *b)
{
    FILE *f = b->info;
    const int n = b->m.num_devices;
    /* nccl-tests' run line: one thread driving every device; "graph" is CUDA graphs, not used. */
    const unsigned long long step = b->o.step_factor ? b->o.step_factor : b->o.step_bytes;
    fprintf(f, "# nThread 1 nGpus %d minBytes %llu maxBytes %llu step: %llu(%s) warmup iters: %d iters: %d "
               "agg iters: 1 validation: %d graph: 0\n#\n# Using devices\n",
            n, (unsigned long long)b->first_bytes, (unsigned long long)b->last_bytes, step,
            b->o.step_factor ? "factor" : "bytes", b->o.warmup, b->o.iters, b->o.check);
    char host[64] = "localhost";
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    const starfold_device_mode_t mode = starfold_context_mode(b->m.ctx);
    for (int d = 0; d < n; d++)
        fprintf(f, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s worker %d, '%s' of topology '%s'\n", d, 0,
                (int)getpid(), host, d, (unsigned)starfold_context_device_node(b->m.ctx, d) & 0xffu, mode_name(mode),
                starfold_context_device_worker(b->m.ctx, d), starfold_topology_device_name(b->m.topo, d),
                starfold_topology_name(b->m.topo));
    char what[64];
    fprintf(f, "#\n# starfold bench: %s, %s\n", cli_collective_text(&b->o, what, sizeof what), b->m.description);
    fprintf(f, "# algorithms:");
    for (int a = 0; a < b->nalgorithms; a++) fprintf(f, "%s %s", a ? "," : "", b->algorithms[a]);
    if (b->o.persistent) fprintf(f, "; each graph bound once, started every iteration (--persistent)");
    if (b->o.views) fprintf(f, "; each replica's tensors as views of one vector (--views), no baselines");
    else if (b->o.baselines && b->coll != &bench_all_reduce)
        fprintf(f, "\n# no baselines: copy, host-loop and starpu-redux are all-reduces, not a%s %s",
                b->coll == &bench_all_gather ? "n" : "", b->coll->name);
    else if (b->o.baselines)
        fprintf(f, "\n# baselines ('#' rows, out-of-place only): copy (each input copied to its output by its device: "
                   "the memory-traffic bound), host-loop (one host thread), starpu-redux (STARPU_REDUX)");
    fprintf(f, "\n# each iteration submitted and waited for; %stime = mean of the timed iterations\n",
            b->coll == &bench_all_gather ? "" : "in-place: each output is its device's input; ");
    if (b->coll == &bench_reduce)
        fprintf(f, "# reduce: every device's tensors reduced onto the root, device %d, only (its result verified)\n",
                b->root);
    else if (b->coll == &bench_broadcast)
        fprintf(f, "# broadcast: the root's (device %d's) tensors copied to every device (each copy verified)\n", b->root);
    else if (b->coll == &bench_all_gather)
        fprintf(f, "# all-gather: every device's tensors, device order, on every device; size = the gathered bytes (n x "
                   "a replica's), as all_gather_perf counts; in-place not measured (N/A)\n");
    fprintf(f, "# algbw = bytes / time, busbw = algbw * %s with n = %d (nccl-tests' %s); last column: algorithm\n",
            b->coll->factor_text, n, b->coll->perf);
    if (b->o.csv) {
        printf("algorithm,op,dtype,bytes,count,devices,time_us,algbw_GBps,busbw_GBps,wrong,"
               "inplace_time_us,inplace_algbw_GBps,inplace_busbw_GBps,inplace_wrong,collective,root,graph\n");
    } else if (!b->o.json) {
        printf("#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "",
               "", "", "", "");
        printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %s\n", "size", "count", "type",
               "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "algorithm");
        printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "",
               "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    }
    fflush(stdout);
    fflush(f);
}

/* One group of columns (time, algbw, busbw, #wrong) as nccl-tests prints it. */
static void print_group(const meas_t *m)
{
    if (!m->valid) {
        printf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
        return;
    }
    char t[32], a[32], s[32];
    float_str(m->time_us, 7, t, sizeof t);
    float_str(m->algbw, 6, a, sizeof a);
    float_str(m->busbw, 6, s, sizeof s);
    if (m->wrong >= 0) printf("  %7s  %6s  %6s  %6g", t, a, s, (double)m->wrong);
    else printf("  %7s  %6s  %6s  %6s", t, a, s, "N/A");
}

static void json_meas(const char *prefix, const meas_t *m)
{
    if (!m->valid) {
        printf(", \"%stime_us\": null, \"%salgbw_GBps\": null, \"%sbusbw_GBps\": null, \"%swrong\": null", prefix,
               prefix, prefix, prefix);
        return;
    }
    printf(", \"%stime_us\": %.3f, \"%salgbw_GBps\": %.6f, \"%sbusbw_GBps\": %.6f, \"%swrong\": ", prefix, m->time_us,
           prefix, m->algbw, prefix, m->busbw, prefix);
    if (m->wrong >= 0) printf("%lld", m->wrong);
    else printf("null");
}

static void csv_meas(const meas_t *m)
{
    if (!m->valid) {
        printf(",,,,");
        return;
    }
    printf(",%.3f,%.6f,%.6f,", m->time_us, m->algbw, m->busbw);
    if (m->wrong >= 0) printf("%lld", m->wrong);
}

static void progress_clear(bench_t *b);

static void print_row(bench_t *b, const row_t *r)
{
    progress_clear(b);
    if (b->o.json) {
        printf("{\"algorithm\": ");
        cli_json_string(stdout, r->algorithm);
        printf(", \"graph\": ");
        cli_json_string(stdout, r->graph);
        printf(", \"collective\": \"%s\", \"root\": %d", b->coll->name, b->coll->has_root ? b->root : -1);
        printf(", \"op\": \"%s\", \"dtype\": \"%s\", \"bytes\": %llu, \"count\": %llu, \"devices\": %d",
               starfold_op_name(r->op), starfold_dtype_name(r->dtype), (unsigned long long)r->bytes,
               (unsigned long long)r->count, b->m.num_devices);
        json_meas("", &r->oop);
        json_meas("inplace_", &r->ip);
        printf("}\n");
    } else if (b->o.csv) {
        printf("%s,%s,%s,%llu,%llu,%d", r->algorithm, starfold_op_name(r->op), starfold_dtype_name(r->dtype),
               (unsigned long long)r->bytes, (unsigned long long)r->count, b->m.num_devices);
        csv_meas(&r->oop);
        csv_meas(&r->ip);
        printf(",%s,%d,%s\n", b->coll->name, b->coll->has_root ? b->root : -1, r->graph);
    } else {
        /* A baseline is a '#' line: "# " takes the first two of the size column's twelve characters. */
        if (r->baseline) printf("# %10llu", (unsigned long long)r->bytes);
        else printf("%12llu", (unsigned long long)r->bytes);
        printf("  %12llu  %8s  %6s  %6d", (unsigned long long)r->count, nccl_type_name(r->dtype), row_op_name(b, r->op),
               b->coll->has_root ? b->root : -1);
        print_group(&r->oop);
        print_group(&r->ip);
        /* "auto -> one-pass": which algorithm auto ran at this size. */
        if (!strncmp(r->graph, "auto:", 5)) printf("  %s -> %s\n", r->label, r->graph + 5);
        else printf("  %s\n", r->label);
    }
    fflush(stdout); /* each row as soon as it is measured */
}

static void set_meas(const bench_t *b, meas_t *m, uint64_t bytes, double seconds, long long wrong)
{
    if (seconds < 0) return; /* not measured */
    m->valid = 1;
    m->time_us = seconds * 1e6;
    m->algbw = seconds > 0 ? (double)bytes / seconds / 1e9 : 0.0;
    m->busbw = m->algbw * b->coll->busbw_factor(b->m.num_devices);
    m->wrong = wrong;
}

/* Records and prints a measured row; a negative time is a measurement not made (N/A). */
static void add_row(bench_t *b, const char *algorithm, int baseline, starfold_op_t op, starfold_dtype_t dtype,
                    uint64_t bytes, uint64_t count, double seconds, long long wrong, double ip_seconds,
                    long long ip_wrong)
{
    row_t r;
    memset(&r, 0, sizeof r);
    r.algorithm = algorithm;
    snprintf(r.graph, sizeof r.graph, "%s", baseline ? algorithm : b->last_graph);
    r.baseline = baseline;
    if (b->several) snprintf(r.label, sizeof r.label, "%s %s %s", algorithm, starfold_op_name(op), starfold_dtype_name(dtype));
    else snprintf(r.label, sizeof r.label, "%s", algorithm);
    r.op = op;
    r.dtype = dtype;
    r.bytes = bytes;
    r.count = count;
    set_meas(b, &r.oop, bytes, seconds, wrong);
    set_meas(b, &r.ip, bytes, ip_seconds, ip_wrong);
    if (r.oop.valid && r.oop.wrong > 0) b->wrong_total += (uint64_t)r.oop.wrong;
    if (r.ip.valid && r.ip.wrong > 0) b->wrong_total += (uint64_t)r.ip.wrong;
    print_row(b, &r);
    if (b->nrows == b->cap) {
        const size_t ncap = b->cap ? 2 * b->cap : 64;
        row_t *p = realloc(b->rows, ncap * sizeof *p);
        if (!p) return; /* the row was printed; only the footer and the plot miss it */
        b->rows = p;
        b->cap = ncap;
    }
    b->rows[b->nrows++] = r;
}

/*
 * nccl-tests' two footer lines, once for the run: the wrong elements, and the busbw averaged over
 * every measurement of the collective (out-of-place and in-place, as nccl-tests averages both; the
 * baselines left out). Then each series' own average, on lines of a form of their own so that a
 * script grepping "# Avg bus bandwidth" finds exactly one line.
 */
static void print_footer(bench_t *b)
{
    FILE *f = b->info;
    double sum = 0.0;
    long k = 0;
    for (size_t i = 0; i < b->nrows; i++) {
        const row_t *r = &b->rows[i];
        if (r->baseline) continue;
        if (r->oop.valid) sum += r->oop.busbw, k++;
        if (r->ip.valid) sum += r->ip.busbw, k++;
    }
    fprintf(f, "# %-20s : %llu %s\n", "Out of bounds values", (unsigned long long)b->wrong_total,
            b->wrong_total ? "FAILED" : "OK");
    fprintf(f, "# %-20s : %g \n#\n", "Avg bus bandwidth", k ? sum / (double)k : 0.0);
    /* Average busbw per label, in the order labels first appeared. */
    for (size_t i = 0; i < b->nrows; i++) {
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            if (strcmp(b->rows[j].label, b->rows[i].label) == 0) first = 0;
        if (!first) continue;
        double s = 0.0, s_ip = 0.0;
        int n = 0, n_ip = 0;
        for (size_t j = i; j < b->nrows; j++)
            if (strcmp(b->rows[j].label, b->rows[i].label) == 0) {
                if (b->rows[j].oop.valid) s += b->rows[j].oop.busbw, n++;
                if (b->rows[j].ip.valid) s_ip += b->rows[j].ip.busbw, n_ip++;
            }
        fprintf(f, "# %s %-20s avg busbw : %g", b->rows[i].baseline ? "baseline " : "algorithm", b->rows[i].label,
                n ? s / n : 0.0);
        if (n_ip) fprintf(f, " out-of-place, %g in-place", s_ip / n_ip);
        fprintf(f, " (GB/s)\n");
    }
    fflush(f);
}

/* ------------------------------------------------------------------------------------------------
 * Progress: one line on stderr, rewritten in place, only when stderr is a terminal.
 */

static void fmt_duration(char *buf, size_t len, double s)
{
    const long t = s < 0 ? 0 : (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static void progress_clear(bench_t *b)
{
    if (!b->progress_shown) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    b->progress_shown = 0;
}

/*
 * Before measuring @what at @bytes: "row k of n", the time so far and an estimate of the rest. A
 * measurement's time grows with its size, so the estimate fits time = a + c * bytes over the
 * measurements done (least squares) and adds it up over those left, in the sweep's order.
 */
static void progress_show(bench_t *b, const char *what, uint64_t bytes)
{
    if (!b->progress) return;
    char el[32], left[48] = "", sz[32];
    fmt_duration(el, sizeof el, cli_now() - b->start);
    if (b->units_done >= 2) {
        const double n = b->fit_n, d = n * b->fit_xx - b->fit_x * b->fit_x;
        double c = d > 0 ? (n * b->fit_xy - b->fit_x * b->fit_y) / d : 0.0;
        if (c < 0) c = 0;
        double a = (b->fit_y - c * b->fit_x) / n;
        if (a < 0) a = 0;
        double sweep = 0.0, rest = 0.0;
        for (int s = 0; s < b->nsizes; s++) {
            const double t = (a + c * (double)b->sizes[s]) * b->units_per_size;
            sweep += t;
            if (s > b->size_index) rest += t;
        }
        rest += (a + c * (double)bytes) * (b->units_per_size - b->unit_index);
        rest += sweep * (b->sweeps_total - 1 - b->sweep_index);
        char r[32];
        fmt_duration(r, sizeof r, rest);
        snprintf(left, sizeof left, ", about %s left", r);
    }
    fprintf(stderr, "\r\033[Kstarfold bench: row %ld of %ld (%s, %s), %s elapsed%s", b->units_done + 1,
            (long)b->units_per_size * b->nsizes * b->sweeps_total, what, cli_format_bytes(sz, sizeof sz, bytes), el, left);
    fflush(stderr);
    b->progress_shown = 1;
}

/* A measurement done: it joins the fit. */
static void progress_done(bench_t *b, uint64_t bytes, double seconds)
{
    b->units_done++;
    b->unit_index++;
    if (seconds < 0) return; /* skipped: no time to learn from */
    const double x = (double)bytes;
    b->fit_n += 1;
    b->fit_x += x;
    b->fit_y += seconds;
    b->fit_xx += x * x;
    b->fit_xy += x * seconds;
}
/* ------------------------------------------------------------------------------------------------
 * Plot
 */

static int on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path) return 0;
    char dir[4096];
    for (const char *p = path; *p;) {
        const char *end = strchr(p, ':');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0 && len < sizeof dir - 64) {
            snprintf(dir, sizeof dir, "%.*s/%s", (int)len, p, prog);
            if (access(dir, X_OK) == 0) return 1;
        }
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

/* A gnuplot single-quoted string: '' stands for one quote. */
static void gnuplot_string(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', f);
        if (*s != '\n') fputc(*s, f);
    }
    fputc('\'', f);
}

/* "8 B", "512 B", "1 KiB", "64 MiB": a power of two as an axis label. */
static void pow2_label(char *buf, size_t len, int e)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    snprintf(buf, len, "%llu %s", 1ull << (e % 10), unit[e / 10]);
}

/* The plot's file type from its name: 0 svg, 1 png, -1 neither. */
static int plot_kind(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot && strcasecmp(dot, ".svg") == 0) return 0;
    if (dot && strcasecmp(dot, ".png") == 0) return 1;
    return -1;
}

/*
 * busbw against size, both axes logarithmic (bandwidths of algorithms and baselines span orders of
 * magnitude): x in powers of two labelled 8 B, 1 KiB, 1 MiB; one colour and one marker per series
 * (Okabe-Ito's colour-blind-safe palette), the baselines as dashed grey-scale lines, the run's
 * parameters in the title, an opaque white background. SVG or PNG (cairo).
 */
static void plot(bench_t *b)
{
    const char *path = b->o.plot;
    if (!on_path("gnuplot")) {
        fflush(stdout);
        fprintf(stderr, "starfold bench: --plot %s: gnuplot is not installed (apt-get install gnuplot-nox); "
                        "the rows above are complete\n", path);
        return;
    }
    /* Series in order of appearance, points with busbw > 0 only (a log axis has no 0). */
    int nseries = 0;
    const char *labels[256];
    int is_baseline[256];
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < b->nrows; i++) {
        const row_t *r = &b->rows[i];
        if (!r->oop.valid || r->oop.busbw <= 0 || r->bytes == 0) continue;
        if (r->bytes < lo) lo = r->bytes;
        if (r->bytes > hi) hi = r->bytes;
        int seen = 0;
        for (int s = 0; s < nseries && !seen; s++) seen = strcmp(labels[s], r->label) == 0;
        if (!seen && nseries < 256) {
            is_baseline[nseries] = r->baseline;
            labels[nseries++] = r->label;
        }
    }
    if (nseries == 0) {
        fprintf(stderr, "starfold bench: --plot %s: no measured row to draw\n", path);
        return;
    }
    FILE *g = popen("gnuplot", "w");
    if (!g) {
        fprintf(stderr, "starfold bench: --plot %s: cannot start gnuplot\n", path);
        return;
    }
    /* The key (outside, right) lists every series: the picture grows to hold a long one. */
    const int height = nseries > 22 ? 200 + 22 * nseries : 680;
    if (plot_kind(path) == 1)
        fprintf(g, "set terminal pngcairo size 1200,%d enhanced font 'sans,11' background rgb 'white'\n", height);
    else fprintf(g, "set terminal svg size 1200,%d dynamic enhanced font 'sans,11' background rgb 'white'\n", height);
    fprintf(g, "set output ");
    gnuplot_string(g, path);
    char title[512], sub[256];
    snprintf(title, sizeof title, "starfold bench: %s bus bandwidth, out-of-place", b->coll->name);
    if (b->several) snprintf(sub, sizeof sub, "%s", "");
    else if (b->coll == &bench_broadcast) snprintf(sub, sizeof sub, "%s, root %d, ", nccl_type_name(b->rows[0].dtype), b->root);
    else if (b->coll->has_root)
        snprintf(sub, sizeof sub, "%s %s, root %d, ", nccl_type_name(b->rows[0].dtype), nccl_op_name(b->rows[0].op), b->root);
    else snprintf(sub, sizeof sub, "%s %s, ", nccl_type_name(b->rows[0].dtype), nccl_op_name(b->rows[0].op));
    char sub2[512];
    snprintf(sub2, sizeof sub2, "%s; %smean of %d iteration%s after %d warm-up%s", b->m.description, sub, b->o.iters,
             b->o.iters == 1 ? "" : "s", b->o.warmup, b->o.persistent ? ", persistent" : "");
    fprintf(g, "\nset title ");
    gnuplot_string(g, title);
    fprintf(g, " noenhanced font 'sans,14' offset 0,1.5\nset label 1 ");
    gnuplot_string(g, sub2);
    fprintf(g, " at graph 0.5, graph 1.035 center noenhanced font 'sans,10'\nset tmargin 5.5\n");
    /* x: log2, one label per power of two (every second or more when the range is wide). */
    int elo = 0, ehi = 0;
    while (elo < 62 && (1ull << (elo + 1)) <= lo) elo++;
    while (ehi < 62 && (1ull << ehi) < hi) ehi++;
    if (ehi == elo) elo = elo > 0 ? elo - 1 : 0, ehi++;
    int every = 1;
    while ((ehi - elo) / every > 13) every++;
    /* A margin around the points, so that no marker sits on the border. */
    fprintf(g, "set logscale x 2\nset xrange [%.6g:%.6g]\nset xtics (", (double)lo / 1.2, (double)hi * 1.2);
    for (int e = elo, first = 1; e <= ehi; e++) {
        if ((e - elo) % every) continue;
        char lab[32];
        pow2_label(lab, sizeof lab, e);
        fprintf(g, "%s'%s' %llu", first ? "" : ", ", lab, 1ull << e);
        first = 0;
    }
    fprintf(g, ")\nset mxtics default\n");
    fprintf(g, "set logscale y 10\nset format y '%%h'\nset mytics 10\n"
               "set xlabel 'bytes per replica'\nset ylabel 'busbw (GB/s)'\n"
               "set grid xtics ytics mytics lc rgb '#cccccc' lw 1 dt 1, lc rgb '#ebebeb' lw 1 dt 1\n"
               "set border 3 lc rgb '#444444'\nset tics nomirror\n"
               "set key outside right top vertical Left reverse noenhanced samplen 3 spacing 1.2\n");
    /* Okabe-Ito, then more; markers: filled square, circle, triangles, diamond, pentagon, open ones. */
    static const char *const colours[] = { "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                           "#56B4E9", "#000000", "#F0E442", "#882255", "#117733" };
    static const int markers[] = { 5, 7, 9, 11, 13, 15, 4, 6, 8, 12 };
    static const char *const greys[] = { "#555555", "#888888", "#333333", "#aaaaaa" };
    static const int dashes[] = { 2, 4, 5, 3 };
    for (int s = 0; s < nseries; s++) {
        fprintf(g, "$d%d << EOD\n", s);
        for (size_t j = 0; j < b->nrows; j++) {
            const row_t *r = &b->rows[j];
            if (strcmp(r->label, labels[s]) == 0 && r->oop.valid && r->oop.busbw > 0 && r->bytes > 0)
                fprintf(g, "%llu %.9g\n", (unsigned long long)r->bytes, r->oop.busbw);
        }
        fprintf(g, "EOD\n");
    }
    fprintf(g, "plot ");
    for (int s = 0, alg = 0, base = 0; s < nseries; s++) {
        char title_s[160];
        if (is_baseline[s]) {
            const int k = base++;
            snprintf(title_s, sizeof title_s, "%s (baseline)", labels[s]);
            fprintf(g, "%s$d%d using 1:2 with lines lw 2 dt %d lc rgb '%s' title ", s ? ", \\\n  " : "", s,
                    dashes[k % 4], greys[k % 4]);
        } else {
            const int k = alg++;
            snprintf(title_s, sizeof title_s, "%s", labels[s]);
            fprintf(g, "%s$d%d using 1:2 with linespoints lw 2 pt %d ps 1.3 lc rgb '%s' dt %d title ", s ? ", \\\n  " : "",
                    s, markers[k % 10], colours[k % 10], 1 + k / 10);
        }
        gnuplot_string(g, title_s);
    }
    fprintf(g, "\n");
    const int status = pclose(g);
    if (status != 0) fprintf(stderr, "starfold bench: --plot %s: gnuplot failed (status %d)\n", path, status);
    else fprintf(b->info, "# Plot written: %s\n", path);
}
/* ------------------------------------------------------------------------------------------------
 * Measurements
 */

/* The options one algorithm is compiled with: tuning for all, packing for those that pack (under
 * --algorithm all the packing options are simply not given to the others). */
static void bench_algo_options(const bench_t *b, const char *algorithm, starfold_algo_options_t *aopt)
{
    starfold_algo_options_init(aopt);
    cli_algo_tuning(&b->o, aopt);
    if (!cli_algorithm_packs(algorithm)) return;
    if (b->o.given & CLI_OPT(OPT_NUM_PACKS)) aopt->num_packs = b->o.num_packs;
    if (b->o.given & CLI_OPT(OPT_BYTES_PER_PACK)) aopt->bytes_per_pack = (size_t)b->o.bytes_per_pack;
}

/* Writes every replica's input values again (an in-place run replaced them with its results). */
static starfold_status_t refill_inputs(const cli_replicas_t *rep)
{
    size_t most = 1, total = 0;
    for (size_t t = 0; t < rep->nt; t++) {
        total += rep->tensors[t].count;
        if (rep->tensors[t].count > most) most = rep->tensors[t].count;
    }
    if (rep->bucketed && total > most) most = total;
    void *host = malloc(most * sizeof(int64_t));
    if (!host) return STARFOLD_ERR_OUT_OF_MEMORY;
    starfold_status_t st = STARFOLD_OK;
    for (int r = 0; r < rep->n && st == STARFOLD_OK; r++) {
        size_t at = 0;
        for (size_t t = 0; t < rep->nt && st == STARFOLD_OK; t++) {
            const starfold_dtype_t dt = rep->tensors[t].dtype;
            const size_t count = rep->tensors[t].count;
            for (size_t i = 0; i < count; i++)
                starfold_tools_set(host, dt, (rep->bucketed ? at : 0) + i, starfold_tools_value(rep->op, dt, r, t, i));
            at += count;
            if (!rep->bucketed)
                st = starfold_vector_write(rep->in[(size_t)r * rep->nt + t], host, count * starfold_dtype_size(dt));
        }
        if (rep->bucketed && rep->nt)
            st = starfold_vector_write(rep->bin[r], host, total * starfold_dtype_size(rep->tensors[0].dtype));
    }
    free(host);
    return st;
}

/*
 * Warm-up and timed iterations of @g on @rep (its outputs, or its inputs when in place); the mean
 * time of the timed ones. Stops early when Ctrl-C was pressed (returns STARFOLD_OK, *seconds < 0).
 */
static starfold_status_t time_graph(bench_t *b, starfold_graph_t g, cli_replicas_t *rep, int clear, double *seconds)
{
    double total = 0.0;
    starfold_persistent_t persistent = NULL; /* --persistent: bound once, outside the timed loop */
    starfold_status_t st = STARFOLD_OK;
    *seconds = -1.0;
    if (b->o.persistent) st = cli_replicas_persistent(rep, g, &persistent);
    int it;
    for (it = 0; it < b->o.warmup + b->o.iters && st == STARFOLD_OK && !bench_interrupted; it++) {
        if (it == b->o.warmup && clear) st = cli_replicas_clear(rep);
        if (st != STARFOLD_OK) break;
        starfold_request_t req = NULL;
        const double t0 = cli_now();
        st = persistent ? starfold_persistent_start(persistent, &req) : cli_replicas_submit(rep, g, &req);
        if (st == STARFOLD_OK) st = starfold_request_wait(req);
        const double dt = cli_now() - t0;
        starfold_request_destroy(req);
        if (it >= b->o.warmup) total += dt;
    }
    starfold_persistent_destroy(persistent);
    if (st == STARFOLD_OK && it == b->o.warmup + b->o.iters) *seconds = total / b->o.iters;
    return st;
}

/*
 * Times one compiled graph on the replicas, out-of-place then in place (each output its device's
 * input, as nccl-tests' in-place columns). As in nccl-tests, the timed in-place iterations reduce
 * their own results again; the inputs are then written again, one more in-place run is checked
 * (-c 1), and the inputs written again for the next measurement.
 * Returns 0, 1 (skipped, note printed), 2 (interrupted) or -1 (message printed).
 */
static int measure_graph(bench_t *b, const char *algorithm, const starfold_tensor_desc_t *tensors, size_t nt,
                         cli_replicas_t *rep, double *seconds, long long *wrong, double *ip_seconds, long long *ip_wrong)
{
    starfold_collective_desc_t desc = b->desc; /* kind, sources and destinations */
    desc.op = rep->op;
    desc.num_tensors = nt;
    desc.tensors = tensors;
    starfold_algo_options_t aopt;
    bench_algo_options(b, algorithm, &aopt);
    starfold_graph_t g = NULL;
    starfold_status_t st = starfold_graph_compile(b->m.topo, algorithm, &desc, &aopt, &g);
    snprintf(b->last_graph, sizeof b->last_graph, "%s", st == STARFOLD_OK ? starfold_graph_algorithm(g) : algorithm);
    if (st == STARFOLD_ERR_NOT_SUPPORTED && b->all_algorithms) {
        progress_clear(b);
        fprintf(b->info, "# %s skipped: %s\n", algorithm, starfold_last_error());
        fflush(b->info);
        return 1;
    }
    progress_clear(b);
    if (st != STARFOLD_OK) {
        cli_fail(b->cmd, st, "%s: cannot compile", algorithm);
        return -1;
    }
    /* The same vectors, each output its device's input. */
    cli_replicas_t ip = *rep;
    ip.out = rep->in;
    ip.bout = rep->bin;
    ip.vout = rep->vin;
    const char *what = "run";
    *wrong = *ip_wrong = -1;
    *ip_seconds = -1.0;
    uint64_t w = 0, c = 0;
    st = time_graph(b, g, rep, b->o.check, seconds);
    if (st == STARFOLD_OK && *seconds >= 0 && b->o.check) {
        what = "read the outputs back";
        if ((st = cli_replicas_verify(rep, &w, &c)) == STARFOLD_OK) *wrong = (long long)w;
    }
    if (st == STARFOLD_OK && *seconds >= 0 && b->coll == &bench_all_gather) { /* no in-place all-gather */
        starfold_graph_destroy(g);
        return 0;
    }
    if (st == STARFOLD_OK && *seconds >= 0) {
        what = "run in place";
        st = time_graph(b, g, &ip, 0, ip_seconds);
        if (st == STARFOLD_OK && *ip_seconds >= 0 && b->o.check) {
            starfold_request_t req = NULL;
            if ((st = refill_inputs(rep)) == STARFOLD_OK && (st = cli_replicas_submit(&ip, g, &req)) == STARFOLD_OK)
                st = starfold_request_wait(req);
            starfold_request_destroy(req);
            what = "read the in-place results back";
            if (st == STARFOLD_OK && (st = cli_replicas_verify(&ip, &w, &c)) == STARFOLD_OK) *ip_wrong = (long long)w;
        }
        const starfold_status_t st2 = refill_inputs(rep);
        if (st == STARFOLD_OK) st = st2, what = "write the inputs again";
    }
    starfold_graph_destroy(g);
    if (st != STARFOLD_OK) {
        cli_fail(b->cmd, st, "%s: cannot %s", algorithm, what);
        return -1;
    }
    return *seconds < 0 || *ip_seconds < 0 ? 2 : 0;
}

/*
 * The memory-traffic reference: every replica's input copied to its output by its device's worker
 * (starfold_tools_baseline_copy()), the n reads and n writes an all-reduce on one memory cannot avoid.
 * Nothing to verify: its outputs are copies, not a reduction.
 */
static int measure_copy(bench_t *b, const starfold_tensor_desc_t *tensors, size_t nt, cli_replicas_t *rep,
                        double *seconds)
{
    const int n = rep->n;
    starpu_data_handle_t in[STARFOLD_MAX_DEVICES], out[STARFOLD_MAX_DEVICES];
    double total = 0.0;
    starfold_status_t st = STARFOLD_OK;
    for (int it = 0; it < b->o.warmup + b->o.iters && st == STARFOLD_OK && !bench_interrupted; it++)
        for (size_t t = 0; t < nt && st == STARFOLD_OK; t++) {
            for (int r = 0; r < n; r++) {
                in[r] = rep->in[(size_t)r * nt + t];
                out[r] = rep->out[(size_t)r * nt + t];
            }
            double s = 0.0;
            st = starfold_tools_baseline_copy(b->m.ctx, tensors[t].dtype, n, in, out, &s);
            if (it >= b->o.warmup) total += s;
        }
    if (st != STARFOLD_OK) {
        cli_fail(b->cmd, st, "copy failed");
        return -1;
    }
    if (bench_interrupted) return 2;
    *seconds = total / b->o.iters;
    return 0;
}

/*
 * --model: the cost model's prediction of each measured algorithm, replayed on the same graph, and its
 * error. The parameters are the topology's: on the machine's own topology, the context's calibration
 * (cli_machine_model(): per-task and per-submission costs fitted over six graphs, the memory bandwidth
 * fitted to a measured all-reduce, once per machine); on a topology the user named, its defaults.
 */
static void model_notes(bench_t *b, const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                        const double *times, double copy_s, int n, uint64_t bytes)
{
    /* The topology's parameters: the calibration of these devices (cli_machine_model()), or the
     * defaults of a topology the user named. */
    starfold_cost_params_t p;
    const int own = starfold_topology_cost_params(b->m.topo, &p);
    (void)copy_s;
    (void)bytes;
    fprintf(b->info, "# model: %s\n",
            own ? "the topology's calibration of these devices (see 'Cost model' above)"
                : "the defaults of the topology as named, not this machine (see 'Cost model' above)");
    (void)n;
    starfold_collective_desc_t desc = b->desc; /* the collective measured */
    desc.op = op;
    desc.num_tensors = nt;
    desc.tensors = tensors;
    for (int a = 0; a < b->nalgorithms; a++) {
        if (times[a] <= 0) continue;
        starfold_algo_options_t aopt;
        bench_algo_options(b, b->algorithms[a], &aopt);
        starfold_graph_t g = NULL;
        starfold_prediction_t pr;
        if (starfold_graph_compile(b->m.topo, b->algorithms[a], &desc, &aopt, &g) != STARFOLD_OK ||
            starfold_graph_simulate(g, &p, &pr) != STARFOLD_OK) {
            starfold_graph_destroy(g);
            continue;
        }
        fprintf(b->info, "# model: %-18s predicted %12.1f us, measured %12.1f us, error %+6.1f %%\n",
                b->algorithms[a], pr.time_us, times[a] * 1e6, 100.0 * (pr.time_us - times[a] * 1e6) / (times[a] * 1e6));
        starfold_graph_destroy(g);
    }
    fflush(b->info);
}

/* StarPU's STARPU_REDUX on the same replicas, one reduction per tensor. */
static int measure_starpu_redux(bench_t *b, const starfold_tensor_desc_t *tensors, size_t nt, cli_replicas_t *rep,
                                double *seconds, long long *wrong)
{
    const int n = rep->n;
    starpu_data_handle_t in[STARFOLD_MAX_DEVICES], out[STARFOLD_MAX_DEVICES];
    double total = 0.0;
    starfold_status_t st = STARFOLD_OK;
    for (int it = 0; it < b->o.warmup + b->o.iters && st == STARFOLD_OK && !bench_interrupted; it++) {
        if (it == b->o.warmup && b->o.check) st = cli_replicas_clear(rep);
        for (size_t t = 0; t < nt && st == STARFOLD_OK; t++) {
            for (int r = 0; r < n; r++) {
                in[r] = rep->in[(size_t)r * nt + t];
                out[r] = rep->out[(size_t)r * nt + t];
            }
            double s = 0.0;
            st = starfold_tools_baseline_starpu_redux(b->m.ctx, tensors[t].dtype, rep->op, n, in, out, &s);
            if (it >= b->o.warmup) total += s;
        }
    }
    if (st != STARFOLD_OK) {
        cli_fail(b->cmd, st, "starpu-redux failed");
        return -1;
    }
    if (bench_interrupted) return 2;
    *wrong = -1;
    if (b->o.check) {
        uint64_t w = 0, c = 0;
        if ((st = cli_replicas_verify(rep, &w, &c)) != STARFOLD_OK) {
            cli_fail(b->cmd, st, "starpu-redux: cannot read the outputs back");
            return -1;
        }
        *wrong = (long long)w;
    }
    *seconds = total / b->o.iters;
    return 0;
}

/*
 * The host loop, per element type: for each block, acc = in[0]; acc = acc op in[r] for r >= 1;
 * MEAN divides; the block is copied to every output. Integers add and multiply in their unsigned
 * type (wrapping, as the kernels do).
 */
#define HOST_LOOP(NAME, T, U)                                                                                     \
    static void NAME(void *const *inv, void *const *outv, int n, size_t count, starfold_op_t op)                  \
    {                                                                                                             \
        for (size_t base = 0; base < count; base += HOST_BLOCK) {                                                 \
            const size_t len = count - base < HOST_BLOCK ? count - base : HOST_BLOCK;                             \
            T *acc = (T *)outv[0] + base;                                                                         \
            memcpy(acc, (const T *)inv[0] + base, len * sizeof(T));                                               \
            for (int r = 1; r < n; r++) {                                                                         \
                const T *s = (const T *)inv[r] + base;                                                            \
                switch (op) {                                                                                     \
                case STARFOLD_OP_MIN:                                                                             \
                    for (size_t j = 0; j < len; j++) acc[j] = s[j] < acc[j] ? s[j] : acc[j];                      \
                    break;                                                                                        \
                case STARFOLD_OP_MAX:                                                                             \
                    for (size_t j = 0; j < len; j++) acc[j] = s[j] > acc[j] ? s[j] : acc[j];                      \
                    break;                                                                                        \
                case STARFOLD_OP_PROD:                                                                            \
                    for (size_t j = 0; j < len; j++) acc[j] = (T)((U)acc[j] * (U)s[j]);                           \
                    break;                                                                                        \
                default:                                                                                          \
                    for (size_t j = 0; j < len; j++) acc[j] = (T)((U)acc[j] + (U)s[j]);                           \
                    break;                                                                                        \
                }                                                                                                 \
            }                                                                                                     \
            if (op == STARFOLD_OP_MEAN)                                                                           \
                for (size_t j = 0; j < len; j++) acc[j] = (T)(acc[j] / (T)n);                                     \
            for (int d = 1; d < n; d++) memcpy((T *)outv[d] + base, acc, len * sizeof(T));                        \
        }                                                                                                         \
    }
HOST_LOOP(host_loop_f32, float, float)
HOST_LOOP(host_loop_f64, double, double)
HOST_LOOP(host_loop_i32, int32_t, uint32_t)
HOST_LOOP(host_loop_i64, int64_t, uint64_t)
HOST_LOOP(host_loop_i8, int8_t, uint32_t)
HOST_LOOP(host_loop_u8, uint8_t, uint32_t)
HOST_LOOP(host_loop_i16, int16_t, uint32_t)
HOST_LOOP(host_loop_u16, uint16_t, uint32_t)
HOST_LOOP(host_loop_u32, uint32_t, uint32_t)
HOST_LOOP(host_loop_u64, uint64_t, uint64_t)

/* float16 and bfloat16 as a plain loop computes them: a block of float32 sums, rounded once. */
#define HOST_LOOP_HALF(NAME, H)                                                                                   \
    static void NAME(void *const *inv, void *const *outv, int n, size_t count, starfold_op_t op)                  \
    {                                                                                                             \
        float acc[HOST_BLOCK];                                                                                    \
        for (size_t base = 0; base < count; base += HOST_BLOCK) {                                                 \
            const size_t len = count - base < HOST_BLOCK ? count - base : HOST_BLOCK;                             \
            const uint16_t *s0 = (const uint16_t *)inv[0] + base;                                                 \
            for (size_t j = 0; j < len; j++) acc[j] = starfold__##H##_to_f32(s0[j]);                              \
            for (int r = 1; r < n; r++) {                                                                         \
                const uint16_t *s = (const uint16_t *)inv[r] + base;                                              \
                for (size_t j = 0; j < len; j++) {                                                                \
                    const float x = starfold__##H##_to_f32(s[j]);                                                 \
                    acc[j] = op == STARFOLD_OP_MIN    ? (x < acc[j] ? x : acc[j])                                 \
                             : op == STARFOLD_OP_MAX  ? (x > acc[j] ? x : acc[j])                                 \
                             : op == STARFOLD_OP_PROD ? acc[j] * x                                                \
                                                      : acc[j] + x;                                               \
                }                                                                                                 \
            }                                                                                                     \
            for (int d = 0; d < n; d++) {                                                                         \
                uint16_t *out = (uint16_t *)outv[d] + base;                                                       \
                for (size_t j = 0; j < len; j++)                                                                  \
                    out[j] = starfold__f32_to_##H(op == STARFOLD_OP_MEAN ? acc[j] / (float)n : acc[j]);           \
            }                                                                                                     \
        }                                                                                                         \
    }
HOST_LOOP_HALF(host_loop_f16, f16)
HOST_LOOP_HALF(host_loop_bf16, bf16)

static int measure_host_loop(bench_t *b, const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                             double *seconds, long long *wrong)
{
    const int n = b->m.num_devices;
    void **in = calloc((size_t)n * nt, sizeof *in), **out = calloc((size_t)n * nt, sizeof *out);
    int ok = in && out;
    for (size_t t = 0; t < nt && ok; t++) {
        const starfold_dtype_t dt = tensors[t].dtype;
        const size_t count = tensors[t].count, bytes = count * starfold_dtype_size(dt);
        for (int r = 0; r < n && ok; r++) {
            void *p = malloc(bytes ? bytes : 1), *q = malloc(bytes ? bytes : 1);
            in[(size_t)r * nt + t] = p;
            out[(size_t)r * nt + t] = q;
            if (!p || !q) ok = 0;
            else {
                for (size_t i = 0; i < count; i++) starfold_tools_set(p, dt, i, starfold_tools_value(op, dt, r, t, i));
                memset(q, 0, bytes); /* touch the pages before timing */
            }
        }
    }
    if (ok) {
        void *ins[STARFOLD_MAX_DEVICES], *outs[STARFOLD_MAX_DEVICES];
        double total = 0.0;
        for (int it = 0; it < b->o.warmup + b->o.iters && !bench_interrupted; it++) {
            const double t0 = cli_now();
            for (size_t t = 0; t < nt; t++) {
                for (int r = 0; r < n; r++) {
                    ins[r] = in[(size_t)r * nt + t];
                    outs[r] = out[(size_t)r * nt + t];
                }
                switch (tensors[t].dtype) {
                case STARFOLD_FLOAT32: host_loop_f32(ins, outs, n, tensors[t].count, op); break;
                case STARFOLD_FLOAT64: host_loop_f64(ins, outs, n, tensors[t].count, op); break;
                case STARFOLD_INT32: host_loop_i32(ins, outs, n, tensors[t].count, op); break;
                case STARFOLD_INT64: host_loop_i64(ins, outs, n, tensors[t].count, op); break;
                case STARFOLD_FLOAT16: host_loop_f16(ins, outs, n, tensors[t].count, op); break;
                case STARFOLD_BFLOAT16: host_loop_bf16(ins, outs, n, tensors[t].count, op); break;
                case STARFOLD_INT8: host_loop_i8(ins, outs, n, tensors[t].count, op); break;
                case STARFOLD_UINT8: host_loop_u8(ins, outs, n, tensors[t].count, op); break;
                case STARFOLD_INT16: host_loop_i16(ins, outs, n, tensors[t].count, op); break;
                case STARFOLD_UINT16: host_loop_u16(ins, outs, n, tensors[t].count, op); break;
                case STARFOLD_UINT32: host_loop_u32(ins, outs, n, tensors[t].count, op); break;
                case STARFOLD_UINT64: host_loop_u64(ins, outs, n, tensors[t].count, op); break;
                }
            }
            if (it >= b->o.warmup) total += cli_now() - t0;
        }
        *seconds = total / b->o.iters;
        *wrong = -1;
        if (b->o.check) {
            long long bad = 0;
            for (size_t t = 0; t < nt; t++) {
                const starfold_dtype_t dt = tensors[t].dtype;
                for (size_t i = 0; i < tensors[t].count; i++) {
                    const double want = starfold_tools_reference_at(op, dt, n, t, i);
                    for (int r = 0; r < n; r++)
                        if (!starfold_tools_close_enough(dt, starfold_tools_get(out[(size_t)r * nt + t], dt, i), want)) bad++;
                }
            }
            *wrong = bad;
        }
    }
    for (size_t k = 0; in && out && k < (size_t)n * nt; k++) {
        free(in[k]);
        free(out[k]);
    }
    free(in);
    free(out);
    if (!ok) {
        cli_fail(b->cmd, STARFOLD_ERR_OUT_OF_MEMORY, "host-loop: out of memory");
        return -1;
    }
    return bench_interrupted ? 2 : 0;
}

/* Whether the baselines are measured: asked for, not with --views, and only beside an all-reduce (which they are). */
static int bench_baselines(const bench_t *b)
{
    return b->o.baselines && !b->o.views && b->coll == &bench_all_reduce;
}

/* Every row of one batch of tensors (all of one dtype), for one op. */
static void bench_batch(bench_t *b, const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op)
{
    const starfold_dtype_t dtype = tensors[0].dtype;
    /* The row's size and count: an all-gather's are the gathered output's (all_gather_perf). */
    const uint64_t bytes = cli_collective_bytes(&b->o, b->m.num_devices, cli_tensors_bytes(tensors, nt)),
                   count = cli_collective_bytes(&b->o, b->m.num_devices, cli_tensors_elements(tensors, nt));
    b->unit_index = 0;
    progress_show(b, "creating the replicas", bytes);
    cli_replicas_t rep;
    const int root = b->root < 0 ? 0 : b->root;
    starfold_status_t st = b->o.views ? cli_replicas_create_bucketed(b->m.ctx, b->m.num_devices, tensors, nt, op,
                                                                     b->o.collective, root, &rep)
                                      : cli_replicas_create(b->m.ctx, b->m.num_devices, tensors, nt, op, b->o.collective,
                                                            root, &rep);
    if (st != STARFOLD_OK) {
        progress_clear(b);
        cli_fail(b->cmd, st, "cannot create the replicas (%llu bytes each)", (unsigned long long)bytes);
        b->failed = 1;
        return;
    }
    double s = 0.0, ip = 0.0, times[16];
    long long wrong = -1, ip_wrong = -1;
    for (int a = 0; a < b->nalgorithms && !bench_interrupted; a++) {
        times[a] = -1.0;
        progress_show(b, b->algorithms[a], bytes);
        const double t0 = cli_now();
        const int m = measure_graph(b, b->algorithms[a], tensors, nt, &rep, &s, &wrong, &ip, &ip_wrong);
        progress_done(b, bytes, m == 0 ? cli_now() - t0 : -1.0);
        if (m == 0) add_row(b, b->algorithms[a], 0, op, dtype, bytes, count, s, wrong, ip, ip_wrong), times[a] = s;
        else if (m < 0) b->failed = 1;
    }
    if (!bench_baselines(b) && b->o.model && !bench_interrupted)
        model_notes(b, tensors, nt, op, times, 0.0, rep.n, bytes);
    if (bench_baselines(b) && !bench_interrupted) {
        double copy = 0.0;
        progress_show(b, "copy", bytes);
        double t0 = cli_now();
        int m = measure_copy(b, tensors, nt, &rep, &copy);
        progress_done(b, bytes, cli_now() - t0);
        progress_clear(b);
        if (m == 0) {
            if (b->o.model) model_notes(b, tensors, nt, op, times, copy, rep.n, bytes);
            add_row(b, "copy", 1, op, dtype, bytes, count, copy, -1, -1.0, -1);
            /*
             * Against the copy: the share of the memory-traffic bound each algorithm reaches - only
             * where the copy is a bound. Where an algorithm beat it (the emulated box's copy runs
             * through StarPU's OpenCL queues, slower than the kernels' own reads), it is no bound
             * and is called a baseline, with the algorithms that were faster named.
             */
            if (copy > 0) {
                int beaten = 0;
                for (int a = 0; a < b->nalgorithms; a++) beaten |= times[a] > 0 && times[a] < copy;
                if (!beaten) {
                    fprintf(b->info, "# memory-traffic bound (copy, %d reads + %d writes of %llu B):", rep.n, rep.n,
                            (unsigned long long)bytes);
                    for (int a = 0; a < b->nalgorithms; a++)
                        if (times[a] > 0) fprintf(b->info, " %s %.0f%%", b->algorithms[a], 100.0 * copy / times[a]);
                } else {
                    fprintf(b->info, "# copy baseline (%d reads + %d writes of %llu B) is no bound here; faster than it:",
                            rep.n, rep.n, (unsigned long long)bytes);
                    for (int a = 0; a < b->nalgorithms; a++)
                        if (times[a] > 0 && times[a] < copy)
                            fprintf(b->info, " %s (%.2fx)", b->algorithms[a], copy / times[a]);
                }
                fprintf(b->info, "\n");
                fflush(b->info);
            }
        } else if (m < 0) {
            b->failed = 1;
        }
        if (!bench_interrupted) {
            progress_show(b, "host-loop", bytes);
            t0 = cli_now();
            m = measure_host_loop(b, tensors, nt, op, &s, &wrong);
            progress_done(b, bytes, cli_now() - t0);
            progress_clear(b);
            if (m == 0) add_row(b, "host-loop", 1, op, dtype, bytes, count, s, wrong, -1.0, -1);
            else if (m < 0) b->failed = 1;
        }
        if (!bench_interrupted) {
            progress_show(b, "starpu-redux", bytes);
            t0 = cli_now();
            m = measure_starpu_redux(b, tensors, nt, &rep, &s, &wrong);
            progress_done(b, bytes, cli_now() - t0);
            progress_clear(b);
            if (m == 0) add_row(b, "starpu-redux", 1, op, dtype, bytes, count, s, wrong, -1.0, -1);
            else if (m < 0) b->failed = 1;
        }
    }
    cli_replicas_destroy(&rep);
}

static int bench_main(const cli_command_t *cmd, int argc, char **argv)
{
    bench_t b;
    memset(&b, 0, sizeof b);
    b.cmd = cmd;
    b.coll = &bench_all_reduce;
    b.root = -1;
    cli_opts_t *o = &b.o;
    int r = cli_parse(cmd, argc, argv, o);
    if (r != CLI_OK) return r == CLI_HELP_DONE ? CLI_OK : r;
    if ((r = cli_mpi_check(cmd, o)) != CLI_OK) return r;

    /* --collective and --root: a root beyond -g, or given to an all-reduce, is refused before StarPU starts. */
    {
        cli_coll_t devs;
        starfold_collective_desc_t desc;
        memset(&desc, 0, sizeof desc);
        const int most = (o->given & CLI_OPT(OPT_DEVICES)) ? o->devices : STARFOLD_MAX_DEVICES;
        if ((r = cli_collective_setup(cmd, o, most, &devs, &desc)) != CLI_OK) return r;
    }
    b.coll = o->collective == CLI_COLL_REDUCE       ? &bench_reduce
             : o->collective == CLI_COLL_BROADCAST  ? &bench_broadcast
             : o->collective == CLI_COLL_ALL_GATHER ? &bench_all_gather
                                                    : &bench_all_reduce;
    b.root = b.coll->has_root ? o->root : -1;

    const uint64_t sweep = CLI_OPT(OPT_MINBYTES) | CLI_OPT(OPT_MAXBYTES) | CLI_OPT(OPT_STEPFACTOR) | CLI_OPT(OPT_STEPBYTES);
    if ((o->given & CLI_OPT(OPT_TENSORS)) && (o->given & sweep))
        return cli_usage_error(cmd, "--tensors measures one batch: it excludes the size sweep (-b, -e, -f, -i)");
    if ((o->given & CLI_OPT(OPT_STEPFACTOR)) && (o->given & CLI_OPT(OPT_STEPBYTES)))
        return cli_usage_error(cmd, "-f (multiply) and -i (add) are two ways to step the sizes: give one");
    if ((o->given & CLI_OPT(OPT_MINBYTES)) && !(o->given & CLI_OPT(OPT_MAXBYTES))) o->max_bytes = o->min_bytes;
    if (o->min_bytes > o->max_bytes)
        return cli_usage_error(cmd, "-b %llu is larger than -e %llu", (unsigned long long)o->min_bytes,
                               (unsigned long long)o->max_bytes);
    if (o->plot && plot_kind(o->plot) < 0)
        return cli_usage_error(cmd, "--plot %s: the plot is an .svg or a .png file", o->plot);

    /* Sizes: as nccl-tests, a factor when given, else an increment. */
    static uint64_t sizes[BENCH_MAX_SIZES];
    int nsizes = 0;
    if (!o->tensors) {
        for (uint64_t s = o->min_bytes; s <= o->max_bytes;) {
            if (nsizes == BENCH_MAX_SIZES)
                return cli_usage_error(cmd, "more than %d sizes from -b to -e: use a larger -i or -f", BENCH_MAX_SIZES);
            sizes[nsizes++] = s;
            const uint64_t next = o->step_factor ? (s == 0 ? 1 : s * o->step_factor) : s + o->step_bytes;
            if (next <= s || (o->step_factor && s != 0 && next / o->step_factor != s)) break; /* overflow */
            s = next;
        }
    }

    /* Across the ranks of mpirun: the group's all-reduce and MPI's own per size (cmd_mpi.c). */
    if (o->mpi) return cli_bench_mpi(cmd, o, sizes, nsizes);

    /* Algorithms, ops and dtypes swept. */
    if (strcmp(o->algorithm, "all") == 0) {
        b.all_algorithms = 1;
        for (int a = 0; a < starfold_algorithm_count() && b.nalgorithms < 16; a++)
            b.algorithms[b.nalgorithms++] = starfold_algorithm_name(a);
    } else {
        starfold_algo_options_t unused;
        if ((r = cli_algo_options(cmd, o, o->algorithm, &unused)) != CLI_OK) return r;
        b.algorithms[b.nalgorithms++] = o->algorithm;
    }
    starfold_op_t ops[STARFOLD_OP_COUNT];
    starfold_dtype_t dtypes[STARFOLD_DTYPE_COUNT];
    const int nops = o->all_ops ? STARFOLD_OP_COUNT : 1, ndtypes = o->all_dtypes ? STARFOLD_DTYPE_COUNT : 1;
    for (int k = 0; k < nops; k++) ops[k] = o->all_ops ? (starfold_op_t)k : o->op;
    for (int k = 0; k < ndtypes; k++) dtypes[k] = o->all_dtypes ? (starfold_dtype_t)k : o->dtype;
    b.several = nops > 1 || ndtypes > 1;

    /* --tensors is parsed per dtype (sizes must be multiples of each element size) before anything runs. */
    starfold_tensor_desc_t *batches[STARFOLD_DTYPE_COUNT] = { 0 };
    size_t batch_len[STARFOLD_DTYPE_COUNT] = { 0 };
    if (o->tensors)
        for (int k = 0; k < ndtypes; k++)
            if ((r = cli_parse_tensors(cmd, o->tensors, dtypes[k], &batches[k], &batch_len[k])) != CLI_OK) goto out_tensors;
    if (o->tensors) {
        sizes[0] = cli_tensors_bytes(batches[0], batch_len[0]);
        nsizes = 1;
    }
    b.first_bytes = nsizes ? sizes[0] : 0;
    b.last_bytes = nsizes ? sizes[nsizes - 1] : 0;

    b.info = (o->json || o->csv) ? stderr : stdout;
    if ((r = cli_machine_open(cmd, o, b.info, &b.m)) != CLI_OK) goto out_tensors;
    /* The collective over the devices there are (a --root beyond them: exit 2). */
    if ((r = cli_collective_setup(cmd, o, b.m.num_devices, &b.devs, &b.desc)) != CLI_OK) {
        cli_machine_close(&b.m);
        goto out_tensors;
    }
    /* --model and "auto" predict with the cost model: of these devices when the topology is theirs. */
    int uses_model = o->model;
    for (int a = 0; a < b.nalgorithms; a++) uses_model |= !strcasecmp(b.algorithms[a], "auto");
    if (uses_model) cli_machine_model(o, &b.m, b.info);
    print_header(&b);

    /*
     * Ctrl-C: the measurement under way stops at its next iteration, the rows measured so far get
     * their footer, JSON/CSV lines and plot, and the command exits 130 (128 + SIGINT, as a shell
     * reports a command ended by Ctrl-C). SA_RESETHAND: a second Ctrl-C ends the process at once.
     * Installed after StarPU started (StarPU 1.3 installs a SIGINT handler of its own in starpu_init),
     * StarPU's put back at the end.
     */
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = bench_on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    bench_interrupted = 0;
    const int handler = sigaction(SIGINT, &sa, &old_sa) == 0;

    b.progress = isatty(STDERR_FILENO);
    b.start = cli_now();
    b.sizes = sizes;
    b.nsizes = nsizes;
    b.units_per_size = b.nalgorithms + (bench_baselines(&b) ? 3 : 0);
    b.sweeps_total = nops * ndtypes;
    for (int k = 0; k < ndtypes && !bench_interrupted; k++)
        for (int p = 0; p < nops && !bench_interrupted; p++) {
            b.sweep_index = k * nops + p;
            if (o->tensors) {
                b.size_index = 0;
                bench_batch(&b, batches[k], batch_len[k], ops[p]);
                continue;
            }
            for (int s = 0; s < nsizes && !bench_interrupted; s++) {
                /* As nccl-tests: count = size / element size, the row reports count * element size. */
                b.size_index = s;
                const uint64_t per = b.coll == &bench_all_gather ? (uint64_t)b.m.num_devices : 1;
                const starfold_tensor_desc_t one = { dtypes[k], (size_t)(sizes[s] / starfold_dtype_size(dtypes[k]) / per) };
                bench_batch(&b, &one, 1, ops[p]);
            }
        }
    progress_clear(&b);
    const int interrupted = bench_interrupted != 0;
    if (interrupted) {
        fprintf(b.info, "# Interrupted (Ctrl-C) after %zu rows of %ld: the rows above are complete, the one under way "
                        "was dropped\n", b.nrows, (long)b.units_per_size * nsizes * b.sweeps_total);
        fflush(b.info);
    }
    print_footer(&b);
    if (o->plot) plot(&b);
    r = interrupted ? 130 : b.failed || b.wrong_total ? CLI_FAIL : CLI_OK;
    cli_machine_close(&b.m);
    if (handler && !interrupted) sigaction(SIGINT, &old_sa, NULL);
out_tensors:
    for (int k = 0; k < STARFOLD_DTYPE_COUNT; k++) starfold_tools_tensors_free(batches[k]);
    free(b.rows);
    return r;
}
const cli_command_t cli_cmd_bench = {
    .name = "bench",
    .summary = "measure all-reduce (reduce, broadcast) time, algbw and busbw over a size sweep (nccl-tests style)",
    .accepted = CLI_OPT(OPT_TOPOLOGY) | CLI_OPT(OPT_ALGORITHM) | CLI_OPT(OPT_OP) | CLI_OPT(OPT_DTYPE) |
                CLI_OPT(OPT_TENSORS) | CLI_OPT(OPT_DEVICES) | CLI_OPT(OPT_NUM_PACKS) | CLI_OPT(OPT_CHUNK_BYTES) |
                CLI_OPT(OPT_RINGS) | CLI_OPT(OPT_MODEL) | CLI_OPT(OPT_BYTES_PER_PACK) |
                CLI_OPT(OPT_JSON) | CLI_OPT(OPT_CSV) | CLI_OPT(OPT_MINBYTES) | CLI_OPT(OPT_MAXBYTES) |
                CLI_OPT(OPT_STEPFACTOR) | CLI_OPT(OPT_STEPBYTES) | CLI_OPT(OPT_ITERS) | CLI_OPT(OPT_WARMUP) |
                CLI_OPT(OPT_CHECK) | CLI_OPT(OPT_PLOT) | CLI_OPT(OPT_EMULATED) | CLI_OPT(OPT_BASELINES) |
                CLI_OPT(OPT_VIEWS) | CLI_OPT(OPT_PERSISTENT) | CLI_OPT(OPT_COLLECTIVE) | CLI_OPT(OPT_ROOT) |
                CLI_OPT(OPT_MPI) | CLI_OPT(OPT_RANKS_PER_NODE) | CLI_OPT(OPT_LOWERING) | CLI_OPT(OPT_TIMEOUT),
    .allow_all = 1,
    .usage =
        "Usage: starfold bench [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-n ITERS] [-w WARMUP] [-c 0|1]\n"
        "                      [--algorithm A|all] [--op OP|all] [-d|--dtype D|all] [--tensors SPEC]\n"
        "                      [--topology T] [-g|--devices N] [--num-packs K | --bytes-per-pack B]\n"
        "                      [--baselines 0|1] [--views] [--persistent] [--json | --csv] [--plot FILE.svg|.png]\n"
        "                      [--emulated] [--collective all-reduce|reduce|broadcast|all-gather [--root D]]\n"
        "       mpirun -np N starfold bench --mpi [--ranks-per-node K] [--lowering L] [--timeout S] [-b -e -f -i -n -w -c --json]\n"
        "                      [--tensors SPEC [--views | --persistent]] [--collective all-gather|broadcast [--root R]]\n"
        "\n"
        "Measures all-reduce as nccl-tests' all_reduce_perf does, and prints it in its layout (its run line,\n"
        "device list, column header, formats and footer), so that scripts reading its logs read this:\n"
        "size (bytes per replica), count (elements), type (half, bfloat16, float, double, int8, uint8, int32, ...), redop (sum, prod,\n"
        "max, min, avg), root (-1; --root for a reduce or broadcast), then time (us, mean over the timed\n"
        "iterations, each one submission waited for), algbw = size / time, busbw = algbw * 2(n-1)/n (1 for\n"
        "a reduce or broadcast) in GB/s (1e9 B/s; comparable with one\n"
        "device's link bandwidth) and #wrong (wrong elements over every replica, N/A with -c 0), out-of-place\n"
        "(separate input and output vectors) then in-place (each output its device's input), and last the\n"
        "algorithm. '# Avg bus bandwidth' is printed once: over every measurement of the algorithms, each\n"
        "algorithm's own on a '# algorithm NAME avg busbw' line. Three baselines run on the same data,\n"
        "out-of-place, printed as '#' rows: copy (every input copied to its output by its device's worker:\n"
        "the reads and writes no all-reduce on one memory avoids, so a note gives each algorithm's share of\n"
        "this memory-traffic bound), host-loop (one host thread reading the n inputs and writing the n\n"
        "outputs once) and starpu-redux (StarPU's own STARPU_REDUX reduction, then a copy to every\n"
        "replica). Devices as for starfold run. On a terminal, stderr shows the progress (row k of n,\n"
        "elapsed, time left); Ctrl-C ends the sweep with the rows so far, their footer and plot.\n"
        "Exits 1 when an element is wrong or a measurement fails, 130 after Ctrl-C.\n"
        "\n"
        "  -b, --minbytes SIZE     smallest size, default 4K (suffixes K, M, G or KiB, MiB, GiB: binary)\n"
        "  -e, --maxbytes SIZE     largest size, default 4M (-b alone measures that one size)\n"
        "  -f, --stepfactor F      multiply the size by F (default 2)\n"
        "  -i, --stepbytes SIZE    add SIZE instead (when no -f is given)\n"
        "  -n, --iters N           timed iterations, default 20\n"
        "  -w, --warmup N          warm-up iterations (also --warmup_iters), default 5\n"
        "  -c, --check 0|1         verify every element (default 1)\n"
        "  --algorithm A|all       hierarchical-copy (default), reduce-to-one, ... (listed below), or all\n"
        "                          (with all, an algorithm that cannot do a case is skipped with a note)\n"
        "  --op OP|all             sum (default), mean (or avg), min, max, prod, or all\n"
        "  -d, --dtype D|all       float32 (default), float64, float16, bfloat16, int8, uint8, int16, uint16,\n"
        "                          int32, uint32, int64, uint64, or all (also --datatype)\n"
        "  --tensors SPEC          measure this batch (see starfold graph --help) instead of a sweep; with\n"
        "                          --mpi, the group's all-reduce of the list against one MPI_Allreduce of\n"
        "                          its bytes (a fused buffer)\n"
        "  --collective C          all-reduce (default); reduce (every device's tensors reduced onto --root\n"
        "                          only, as reduce_perf) or broadcast (--root's tensors copied to every\n"
        "                          device, as broadcast_perf: redop column 'none'); for both, busbw = algbw,\n"
        "                          the root column holds the root, and no baselines are measured (they are\n"
        "                          all-reduces); all-gather (every device's tensors concatenated on every\n"
        "                          device, as all_gather_perf: size = the gathered bytes, busbw = algbw\n"
        "                          (n-1)/n, no in-place column)\n"
        "  --root D                the reduce's destination or the broadcast's source (default 0)\n"
        "  --topology T, -g N, --emulated   the devices, as for starfold run\n"
        "  --chunk-bytes B, --rings N   ring and one-pass tuning (see starfold graph --help)\n"
        "  --num-packs K, --bytes-per-pack B   hierarchical-copy's packing (ignored by reduce-to-one\n"
        "                          under --algorithm all)\n"
        "  --baselines 0|1         measure copy, host-loop and starpu-redux (default 1)\n"
        "  --views                 each replica's tensors one after another in one input and one output\n"
        "                          vector, each tensor a view (starfold_submit_views: StarPU tracks 2n\n"
        "                          vectors, not 2n per tensor; the graph is the same); no baselines\n"
        "  --persistent            bind each graph to the replicas once (starfold_persistent_create) and\n"
        "                          start it every iteration (starfold_persistent_start): the time of a\n"
        "                          training loop's step, planning left out; the baselines are unchanged.\n"
        "                          With --mpi: a 'group-persist' row beside each starfold-group row, bound\n"
        "                          once (starfold_group_all_reduce_init) and started every iteration\n"
        "  --model                 beside each size, the cost model's prediction of each algorithm (starfold\n"
        "                          simulate) and its error against the measured time; on the machine's own\n"
        "                          topology the model is calibrated on its devices once (per-task and\n"
        "                          per-submission costs, memory bandwidth; kept in $STARPU_HOME/.starpu/\n"
        "                          starfold/, STARFOLD_CALIBRATE=2 measures again), as it is for 'auto'\n"
        "  --json                  one JSON object per row on stdout: algorithm, collective, root (-1 for\n"
        "                          an all-reduce), op, dtype, bytes, count,\n"
        "                          devices, time_us, algbw_GBps, busbw_GBps, wrong (null when unchecked),\n"
        "                          and the same in place: inplace_time_us, ... (null for the baselines)\n"
        "  --csv                   a header line, then one line per row with the same fields (the\n"
        "                          collective and root last)\n"
        "                          (with --json or --csv, the notes and summary go to stderr)\n"
        "  --plot FILE.svg|.png    draw busbw against size (log axes), one line per algorithm, the baselines\n"
        "                          dashed, with gnuplot if installed\n"
        "  --mpi                   across the ranks of mpirun (a build with MPI): per size of the sweep, the\n"
        "                          process group's all-reduce over every replica of every rank\n"
        "                          (starfold_group_all_reduce(), row 'starfold-group', with the lowering it\n"
        "                          used and, last, its plan: direct, packed, relay or leaders), then Open\n"
        "                          MPI's own MPI_Allreduce of the same bytes (an input and an\n"
        "                          output host buffer per rank, out of place as the group's row, the same op;\n"
        "                          mean as a sum) as the baseline row\n"
        "                          'MPI_Allreduce'; time = the slowest rank's, busbw factor 2(n-1)/n with n =\n"
        "                          the replicas (group) or the ranks (MPI), 'vs MPI' = group time / MPI time.\n"
        "                          The baseline runs with StarPU's workers paused (starfold_context_pause():\n"
        "                          idle workers spin beside MPI otherwise). --views: the list as views of one\n"
        "                          vector per replica (starfold_group_all_reduce_views). --collective\n"
        "                          all-gather: starfold_group_all_gather() of one vector per rank against\n"
        "                          MPI_Allgather (size = the gathered bytes, busbw = algbw (n-1)/n over the\n"
        "                          ranks; no --op, --lowering, --tensors); --collective broadcast [--root R]:\n"
        "                          starfold_group_broadcast() from rank R into every device of every rank\n"
        "                          against MPI_Bcast (busbw = algbw, as broadcast_perf). Rank 0 prints the table (--json:\n"
        "                          one object per row)\n"
        "  --ranks-per-node K      with --mpi: ranks 0..K-1 are node 0, K..2K-1 node 1, ...\n"
        "  --lowering L            with --mpi: auto (default), mpi, ring, halving-doubling, hierarchical,\n"
        "                          leader, or all: a row for each beside auto's, in one run\n"
        "  --timeout S             with --mpi: a rank that does not start, join or finish a collective in S\n"
        "                          seconds fails every rank that waits, which then end the job (MPI's\n"
        "                          blocking baseline call excepted); every rank runs the same command\n"
        "  -h, --help              this text\n"
        "\n"
        "Unlike nccl-tests, -o is not the operation (it is --op); -g is the device count.\n",
    .main = bench_main,
};
