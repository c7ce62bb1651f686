/*
 * starfold bench: a sweep in the style of nccl-tests' all_reduce_perf.
 *
 *     for each dtype, op, size (-b .. -e, times -f or plus -i; or the one batch of --tensors):
 *         replicas filled once (out-of-place: inputs stay, outputs are overwritten)
 *         for each algorithm, then the baselines copy, host-loop and starpu-redux:
 *             -w warm-up iterations, outputs set to a sentinel (-c 1), -n timed iterations,
 *             every output element checked against the float64 reference (-c 1), one row printed
 *
 * Every iteration is one submission waited for (starfold_submit .. starfold_request_wait), so the
 * time includes StarPU's task submission: time_us is the mean over the timed iterations. With
 * --persistent the graph is bound to the replicas once, before the warm-up, and every iteration is
 * starfold_persistent_start .. starfold_request_wait (the planning is left out, as in a training loop).
 * algbw = bytes per replica / time, busbw = algbw * 2(n-1)/n (the nccl-tests all-reduce definitions).
 *
 * Baselines, measured on the same data in the same run:
 *   copy          every input copied to its output by its device's worker (starfold_tools_baseline_copy()):
 *                 the n reads and n writes no all-reduce on one memory can avoid, so its time is the
 *                 memory-traffic bound; a note gives each algorithm's share of it;
 *   host-loop     one host thread reads the n inputs and writes the n outputs once, in blocks (what
 *                 a single-threaded reduction costs);
 *   starpu-redux  StarPU's own STARPU_REDUX reduction (starfold_tools_baseline_starpu_redux()).
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Most sizes a sweep may have: an additive sweep over a wide range is a typing mistake. */
#define BENCH_MAX_SIZES 4096
/* Elements per block of the host loop: its replicas' blocks stay in cache between reads and writes. */
#define HOST_BLOCK 2048

/* One measured row, kept for the footer and the plot. */
typedef struct row {
    char label[96];        /* algorithm, plus op and dtype when several are swept */
    const char *algorithm;
    starfold_op_t op;
    starfold_dtype_t dtype;
    uint64_t bytes, count;
    double time_us, algbw, busbw;
    long long wrong;       /* -1 when not checked */
} row_t;

typedef struct bench {
    const cli_command_t *cmd;
    cli_opts_t o;
    cli_machine_t m;
    FILE *info;            /* human-readable notes: stdout, or stderr under --json/--csv */
    const char *algorithms[16];
    int nalgorithms;
    int several;           /* several ops or dtypes: labels name them */
    int all_algorithms;    /* --algorithm all: an algorithm refusing a case is skipped, not a failure */
    row_t *rows;
    size_t nrows, cap;
    int failed;            /* an error happened (the bench goes on with the next row) */
    uint64_t wrong_total;
} bench_t;

/* ------------------------------------------------------------------------------------------------
 * Output
 */

static void print_header(bench_t *b)
{
    FILE *f = b->info;
    fprintf(f, "# starfold bench: all-reduce, out-of-place, %s\n", b->m.description);
    fprintf(f, "# algorithms:");
    for (int a = 0; a < b->nalgorithms; a++) fprintf(f, "%s %s", a ? "," : "", b->algorithms[a]);
    if (b->o.persistent) fprintf(f, "; each graph bound once, started every iteration (--persistent)");
    if (b->o.views) fprintf(f, "; each replica's tensors as views of one vector (--views), no baselines");
    else if (b->o.baselines)
        fprintf(f, "; baselines: copy (each input copied to its output by its device: the memory-traffic bound), "
                   "host-loop (one host thread), starpu-redux (STARPU_REDUX)");
    fprintf(f, "\n# %d timed iterations after %d warm-up, each submitted and waited for; check %d\n", b->o.iters,
            b->o.warmup, b->o.check);
    fprintf(f, "# algbw = bytes / time, busbw = algbw * 2(n-1)/n with n = %d\n", b->m.num_devices);
    if (b->o.csv) {
        printf("algorithm,op,dtype,bytes,count,devices,time_us,algbw_GBps,busbw_GBps,wrong\n");
    } else if (!b->o.json) {
        printf("#\n#%19s %12s %12s %8s %6s %12s %9s %9s %7s\n", "", "size", "count", "type", "redop", "time", "algbw",
               "busbw", "#wrong");
        printf("#%19s %12s %12s %8s %6s %12s %9s %9s %7s\n", "algorithm", "(B)", "(elements)", "", "", "(us)", "(GB/s)",
               "(GB/s)", "");
    }
    fflush(stdout);
    fflush(f);
}

static void print_row(bench_t *b, const row_t *r)
{
    char wrong[32];
    if (r->wrong < 0) snprintf(wrong, sizeof wrong, "%s", b->o.json ? "null" : b->o.csv ? "" : "N/A");
    else snprintf(wrong, sizeof wrong, "%lld", r->wrong);
    if (b->o.json) {
        printf("{\"algorithm\": ");
        cli_json_string(stdout, r->algorithm);
        printf(", \"op\": \"%s\", \"dtype\": \"%s\", \"bytes\": %llu, \"count\": %llu, \"devices\": %d, "
               "\"time_us\": %.3f, \"algbw_GBps\": %.6f, \"busbw_GBps\": %.6f, \"wrong\": %s}\n",
               starfold_op_name(r->op), starfold_dtype_name(r->dtype), (unsigned long long)r->bytes,
               (unsigned long long)r->count, b->m.num_devices, r->time_us, r->algbw, r->busbw, wrong);
    } else if (b->o.csv) {
        printf("%s,%s,%s,%llu,%llu,%d,%.3f,%.6f,%.6f,%s\n", r->algorithm, starfold_op_name(r->op),
               starfold_dtype_name(r->dtype), (unsigned long long)r->bytes, (unsigned long long)r->count,
               b->m.num_devices, r->time_us, r->algbw, r->busbw, wrong);
    } else {
        printf(" %19s %12llu %12llu %8s %6s %12.1f %9.3f %9.3f %7s\n", r->algorithm, (unsigned long long)r->bytes,
               (unsigned long long)r->count, starfold_dtype_name(r->dtype), starfold_op_name(r->op), r->time_us,
               r->algbw, r->busbw, wrong);
    }
    fflush(stdout); /* each row as soon as it is measured */
}

/* Records and prints a measured row. */
static void add_row(bench_t *b, const char *algorithm, starfold_op_t op, starfold_dtype_t dtype, uint64_t bytes,
                    uint64_t count, double seconds, long long wrong)
{
    row_t r;
    memset(&r, 0, sizeof r);
    r.algorithm = algorithm;
    if (b->several) snprintf(r.label, sizeof r.label, "%s %s %s", algorithm, starfold_op_name(op), starfold_dtype_name(dtype));
    else snprintf(r.label, sizeof r.label, "%s", algorithm);
    r.op = op;
    r.dtype = dtype;
    r.bytes = bytes;
    r.count = count;
    r.time_us = seconds * 1e6;
    r.algbw = seconds > 0 ? (double)bytes / seconds / 1e9 : 0.0;
    const int n = b->m.num_devices;
    r.busbw = n > 1 ? r.algbw * 2.0 * (n - 1) / n : 0.0;
    r.wrong = wrong;
    if (wrong > 0) b->wrong_total += (uint64_t)wrong;
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

static void print_footer(bench_t *b)
{
    FILE *f = b->info;
    if (b->o.check) fprintf(f, "# Out of bounds values : %llu %s\n", (unsigned long long)b->wrong_total,
                            b->wrong_total ? "FAILED" : "OK");
    /* Average busbw per label, in the order labels first appeared. */
    for (size_t i = 0; i < b->nrows; i++) {
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            if (strcmp(b->rows[j].label, b->rows[i].label) == 0) first = 0;
        if (!first) continue;
        double sum = 0.0;
        int k = 0;
        for (size_t j = i; j < b->nrows; j++)
            if (strcmp(b->rows[j].label, b->rows[i].label) == 0) sum += b->rows[j].busbw, k++;
        fprintf(f, "# Avg bus bandwidth    : %9.3f GB/s  %s\n", sum / k, b->rows[i].label);
    }
    fflush(f);
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

static void plot(bench_t *b)
{
    const char *path = b->o.plot;
    if (!on_path("gnuplot")) {
        fflush(stdout);
        fprintf(stderr, "starfold bench: --plot %s: gnuplot is not installed (apt-get install gnuplot-nox); "
                        "the rows above are complete\n", path);
        return;
    }
    FILE *g = popen("gnuplot", "w");
    if (!g) {
        fprintf(stderr, "starfold bench: --plot %s: cannot start gnuplot\n", path);
        return;
    }
    /* Count the series first: the key lists them all, the picture grows to hold it. */
    size_t nlabels = 0;
    for (size_t i = 0; i < b->nrows; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = strcmp(b->rows[j].label, b->rows[i].label) == 0;
        nlabels += !seen;
    }
    const int height = nlabels > 24 ? 160 + 18 * (int)nlabels : 560;
    fprintf(g, "set terminal svg size 1000,%d dynamic enhanced font 'sans,11'\nset output ", height);
    gnuplot_string(g, path);
    fprintf(g, "\nset title ");
    char title[256];
    snprintf(title, sizeof title, "starfold bench: all-reduce bus bandwidth, %s", b->m.description);
    gnuplot_string(g, title);
    fprintf(g, " noenhanced\nset logscale x 2\nset format x '%%.0b %%BB'\nset xlabel 'bytes per replica'\n"
               "set ylabel 'busbw (GB/s)'\nset key outside right top noenhanced\nset grid\n");
    /* One inline data block per label, in order of appearance. */
    int nseries = 0;
    const char *labels[256];
    for (size_t i = 0; i < b->nrows && nseries < 256; i++) {
        int seen = 0;
        for (int s = 0; s < nseries && !seen; s++) seen = strcmp(labels[s], b->rows[i].label) == 0;
        if (seen) continue;
        labels[nseries] = b->rows[i].label;
        fprintf(g, "$d%d << EOD\n", nseries);
        for (size_t j = i; j < b->nrows; j++)
            if (strcmp(b->rows[j].label, labels[nseries]) == 0 && b->rows[j].bytes > 0)
                fprintf(g, "%llu %.9g\n", (unsigned long long)b->rows[j].bytes, b->rows[j].busbw);
        fprintf(g, "EOD\n");
        nseries++;
    }
    fprintf(g, "plot ");
    for (int s = 0; s < nseries; s++) {
        fprintf(g, "%s$d%d using 1:2 with linespoints lw 2 title ", s ? ", " : "", s);
        gnuplot_string(g, labels[s]);
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

/* Times one compiled graph on the replicas; returns 0, 1 (skipped, note printed) or -1 (message printed). */
static int measure_graph(bench_t *b, const char *algorithm, const starfold_tensor_desc_t *tensors, size_t nt,
                         cli_replicas_t *rep, double *seconds, long long *wrong)
{
    const int n = b->m.num_devices;
    int devices[STARFOLD_MAX_DEVICES];
    for (int d = 0; d < n; d++) devices[d] = d;
    const starfold_collective_desc_t desc = {
        .kind = STARFOLD_COLL_REDUCE, .op = rep->op, .num_sources = n, .sources = devices,
        .num_tensors = nt, .tensors = tensors,
    };
    starfold_algo_options_t aopt;
    bench_algo_options(b, algorithm, &aopt);
    starfold_graph_t g = NULL;
    starfold_status_t st = starfold_graph_compile(b->m.topo, algorithm, &desc, &aopt, &g);
    if (st == STARFOLD_ERR_NOT_SUPPORTED && b->all_algorithms) {
        fprintf(b->info, "# %s skipped: %s\n", algorithm, starfold_last_error());
        fflush(b->info);
        return 1;
    }
    if (st != STARFOLD_OK) {
        cli_fail(b->cmd, st, "%s: cannot compile", algorithm);
        return -1;
    }
    double total = 0.0;
    starfold_persistent_t persistent = NULL; /* --persistent: bound once, outside the timed loop */
    if (b->o.persistent) st = cli_replicas_persistent(rep, g, &persistent);
    for (int it = 0; it < b->o.warmup + b->o.iters && st == STARFOLD_OK; it++) {
        if (it == b->o.warmup && b->o.check) st = cli_replicas_clear(rep);
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
    starfold_graph_destroy(g);
    if (st != STARFOLD_OK) {
        cli_fail(b->cmd, st, "%s: run failed", algorithm);
        return -1;
    }
    *wrong = -1;
    if (b->o.check) {
        uint64_t w = 0, c = 0;
        if ((st = cli_replicas_verify(rep, &w, &c)) != STARFOLD_OK) {
            cli_fail(b->cmd, st, "%s: cannot read the outputs back", algorithm);
            return -1;
        }
        *wrong = (long long)w;
    }
    *seconds = total / b->o.iters;
    return 0;
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
    for (int it = 0; it < b->o.warmup + b->o.iters && st == STARFOLD_OK; it++)
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
    int devices[STARFOLD_MAX_DEVICES];
    for (int d = 0; d < n; d++) devices[d] = d;
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = op, .num_sources = n,
                                              .sources = devices, .num_tensors = nt, .tensors = tensors };
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
    for (int it = 0; it < b->o.warmup + b->o.iters && st == STARFOLD_OK; it++) {
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
        for (int it = 0; it < b->o.warmup + b->o.iters; it++) {
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
                default: host_loop_i64(ins, outs, n, tensors[t].count, op); break;
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
    return 0;
}

/* Every row of one batch of tensors (all of one dtype), for one op. */
static void bench_batch(bench_t *b, const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op)
{
    const starfold_dtype_t dtype = tensors[0].dtype;
    const uint64_t bytes = cli_tensors_bytes(tensors, nt), count = cli_tensors_elements(tensors, nt);
    cli_replicas_t rep;
    starfold_status_t st = b->o.views ? cli_replicas_create_bucketed(b->m.ctx, b->m.num_devices, tensors, nt, op, &rep)
                                      : cli_replicas_create(b->m.ctx, b->m.num_devices, tensors, nt, op, &rep);
    if (st != STARFOLD_OK) {
        cli_fail(b->cmd, st, "cannot create the replicas (%llu bytes each)", (unsigned long long)bytes);
        b->failed = 1;
        return;
    }
    double s = 0.0, times[16];
    long long wrong = -1;
    for (int a = 0; a < b->nalgorithms; a++) {
        times[a] = -1.0;
        const int m = measure_graph(b, b->algorithms[a], tensors, nt, &rep, &s, &wrong);
        if (m == 0) add_row(b, b->algorithms[a], op, dtype, bytes, count, s, wrong), times[a] = s;
        else if (m < 0) b->failed = 1;
    }
    if (b->o.baselines && !b->o.views) {
        double copy = 0.0;
        if (measure_copy(b, tensors, nt, &rep, &copy) == 0) {
            if (b->o.model) model_notes(b, tensors, nt, op, times, copy, rep.n, bytes);
            add_row(b, "copy", op, dtype, bytes, count, copy, -1);
            /* Against the copy: the share of the memory-traffic bound each algorithm reaches. */
            if (copy > 0) {
                fprintf(b->info, "# memory-traffic bound (copy, %d reads + %d writes of %llu B):", rep.n, rep.n,
                        (unsigned long long)bytes);
                for (int a = 0; a < b->nalgorithms; a++)
                    if (times[a] > 0) fprintf(b->info, " %s %.0f%%", b->algorithms[a], 100.0 * copy / times[a]);
                fprintf(b->info, "\n");
                fflush(b->info);
            }
        } else {
            b->failed = 1;
        }
        if (measure_host_loop(b, tensors, nt, op, &s, &wrong) == 0) add_row(b, "host-loop", op, dtype, bytes, count, s, wrong);
        else b->failed = 1;
        if (measure_starpu_redux(b, tensors, nt, &rep, &s, &wrong) == 0)
            add_row(b, "starpu-redux", op, dtype, bytes, count, s, wrong);
        else b->failed = 1;
    }
    cli_replicas_destroy(&rep);
}

static int bench_main(const cli_command_t *cmd, int argc, char **argv)
{
    bench_t b;
    memset(&b, 0, sizeof b);
    b.cmd = cmd;
    cli_opts_t *o = &b.o;
    int r = cli_parse(cmd, argc, argv, o);
    if (r != CLI_OK) return r == CLI_HELP_DONE ? CLI_OK : r;

    const uint32_t sweep = CLI_OPT(OPT_MINBYTES) | CLI_OPT(OPT_MAXBYTES) | CLI_OPT(OPT_STEPFACTOR) | CLI_OPT(OPT_STEPBYTES);
    if ((o->given & CLI_OPT(OPT_TENSORS)) && (o->given & sweep))
        return cli_usage_error(cmd, "--tensors measures one batch: it excludes the size sweep (-b, -e, -f, -i)");
    if ((o->given & CLI_OPT(OPT_STEPFACTOR)) && (o->given & CLI_OPT(OPT_STEPBYTES)))
        return cli_usage_error(cmd, "-f (multiply) and -i (add) are two ways to step the sizes: give one");
    if ((o->given & CLI_OPT(OPT_MINBYTES)) && !(o->given & CLI_OPT(OPT_MAXBYTES))) o->max_bytes = o->min_bytes;
    if (o->min_bytes > o->max_bytes)
        return cli_usage_error(cmd, "-b %llu is larger than -e %llu", (unsigned long long)o->min_bytes,
                               (unsigned long long)o->max_bytes);
    if (o->plot) {
        const char *dot = strrchr(o->plot, '.');
        if (!dot || strcasecmp(dot, ".svg") != 0) return cli_usage_error(cmd, "--plot %s: the plot is an .svg file", o->plot);
    }

    /* Sizes: as nccl-tests, a factor when given, else an increment. */
    uint64_t sizes[BENCH_MAX_SIZES];
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

    b.info = (o->json || o->csv) ? stderr : stdout;
    if ((r = cli_machine_open(cmd, o, b.info, &b.m)) != CLI_OK) goto out_tensors;
    /* --model and "auto" predict with the cost model: of these devices when the topology is theirs. */
    int uses_model = o->model;
    for (int a = 0; a < b.nalgorithms; a++) uses_model |= !strcasecmp(b.algorithms[a], "auto");
    if (uses_model) cli_machine_model(o, &b.m, b.info);
    print_header(&b);

    for (int k = 0; k < ndtypes; k++)
        for (int p = 0; p < nops; p++) {
            if (o->tensors) {
                bench_batch(&b, batches[k], batch_len[k], ops[p]);
                continue;
            }
            for (int s = 0; s < nsizes; s++) {
                /* As nccl-tests: count = size / element size, the row reports count * element size. */
                const starfold_tensor_desc_t one = { dtypes[k], (size_t)(sizes[s] / starfold_dtype_size(dtypes[k])) };
                bench_batch(&b, &one, 1, ops[p]);
            }
        }
    print_footer(&b);
    if (o->plot) plot(&b);
    r = b.failed || b.wrong_total ? CLI_FAIL : CLI_OK;
    cli_machine_close(&b.m);
out_tensors:
    for (int k = 0; k < STARFOLD_DTYPE_COUNT; k++) starfold_tools_tensors_free(batches[k]);
    free(b.rows);
    return r;
}

const cli_command_t cli_cmd_bench = {
    .name = "bench",
    .summary = "measure all-reduce time, algbw and busbw over a size sweep (nccl-tests style)",
    .accepted = CLI_OPT(OPT_TOPOLOGY) | CLI_OPT(OPT_ALGORITHM) | CLI_OPT(OPT_OP) | CLI_OPT(OPT_DTYPE) |
                CLI_OPT(OPT_TENSORS) | CLI_OPT(OPT_DEVICES) | CLI_OPT(OPT_NUM_PACKS) | CLI_OPT(OPT_CHUNK_BYTES) |
                CLI_OPT(OPT_RINGS) | CLI_OPT(OPT_MODEL) | CLI_OPT(OPT_BYTES_PER_PACK) |
                CLI_OPT(OPT_JSON) | CLI_OPT(OPT_CSV) | CLI_OPT(OPT_MINBYTES) | CLI_OPT(OPT_MAXBYTES) |
                CLI_OPT(OPT_STEPFACTOR) | CLI_OPT(OPT_STEPBYTES) | CLI_OPT(OPT_ITERS) | CLI_OPT(OPT_WARMUP) |
                CLI_OPT(OPT_CHECK) | CLI_OPT(OPT_PLOT) | CLI_OPT(OPT_EMULATED) | CLI_OPT(OPT_BASELINES) |
                CLI_OPT(OPT_VIEWS) | CLI_OPT(OPT_PERSISTENT),
    .allow_all = 1,
    .usage =
        "Usage: starfold bench [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-n ITERS] [-w WARMUP] [-c 0|1]\n"
        "                      [--algorithm A|all] [--op OP|all] [-d|--dtype D|all] [--tensors SPEC]\n"
        "                      [--topology T] [-g|--devices N] [--num-packs K | --bytes-per-pack B]\n"
        "                      [--baselines 0|1] [--views] [--persistent] [--json | --csv] [--plot FILE.svg]\n"
        "                      [--emulated]\n"
        "\n"
        "Measures all-reduce in the style of nccl-tests' all_reduce_perf: one row per size and algorithm,\n"
        "printed as soon as it is measured, with size (bytes per replica), count (elements), type, redop,\n"
        "time (us, mean over the timed iterations, each one submission waited for), algbw = size / time and\n"
        "busbw = algbw * 2(n-1)/n in GB/s (1e9 B/s; comparable with one device's link bandwidth), and the\n"
        "number of wrong elements over every replica (N/A with -c 0). Out-of-place: inputs and outputs are\n"
        "separate vectors. Three baselines run on the same data: copy (every input copied to its output\n"
        "by its device's worker: the reads and writes no all-reduce on one memory avoids, so a note gives\n"
        "each algorithm's share of this memory-traffic bound), host-loop (one host thread reading the n\n"
        "inputs and writing the n outputs once) and starpu-redux (StarPU's own STARPU_REDUX reduction,\n"
        "then a copy to every replica). Devices as for starfold run.\n"
        "Exits 1 when an element is wrong or a measurement fails.\n"
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
        "  -d, --dtype D|all       float32 (default), float64, int32, int64, or all (also --datatype)\n"
        "  --tensors SPEC          measure this batch (see starfold graph --help) instead of a sweep\n"
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
        "                          training loop's step, planning left out; the baselines are unchanged\n"
        "  --model                 beside each size, the cost model's prediction of each algorithm (starfold\n"
        "                          simulate) and its error against the measured time; on the machine's own\n"
        "                          topology the model is calibrated on its devices once (per-task and\n"
        "                          per-submission costs, memory bandwidth; kept in $STARPU_HOME/.starpu/\n"
        "                          starfold/, STARFOLD_CALIBRATE=2 measures again), as it is for 'auto'\n"
        "  --json                  one JSON object per row on stdout: algorithm, op, dtype, bytes, count,\n"
        "                          devices, time_us, algbw_GBps, busbw_GBps, wrong (null when unchecked)\n"
        "  --csv                   a header line, then one line per row with the same fields\n"
        "                          (with --json or --csv, the notes and summary go to stderr)\n"
        "  --plot FILE.svg         draw busbw against size per algorithm with gnuplot, if installed\n"
        "  -h, --help              this text\n"
        "\n"
        "Unlike nccl-tests, -o is not the operation (it is --op); -g is the device count.\n",
    .main = bench_main,
};
