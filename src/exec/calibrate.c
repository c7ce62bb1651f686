/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Calibrating the cost model on the context's devices (starfold_context_calibrate()).
 *
 * The model (src/graph/cost.c) needs what the links do not say: StarPU's cost per task and per
 * submission, and the bandwidth the kernels reach in the devices' memory. Defaults describe a GPU
 * server; on the host's CPU workers or on POCL's emulated devices they are off by 10-100x, which made
 * "auto" pick by NVLink-like figures. Measured here, on the context's own topology
 * (starfold_context_topology(): StarPU's calibrated bus figures), in two steps:
 *
 *   1. overheads. reduce-to-one all-reduces of k one-element tensors over every device, k = 1, 2,
 *      4, 8, 16, 32 (nothing to move: the time is tasks). Each graph's measured time y(k) (median of
 *      9 after 3 warm-ups) is fitted, by least squares over the six points, to
 *
 *          y(k) = submit + task x C(k) + L(k)
 *
 *      where the model itself gives C(k), the graph's critical path counted in task overheads (its
 *      time at 1 us per task minus its time at 0), and L(k), its time at no overhead (link
 *      latencies). Fitting the model's own replay, not a task count, keeps the two figures what the
 *      model means by them.
 *
 *          y |            x
 *            |       x  /
 *            |   x  /            slope: task_overhead_us
 *            | x /               intercept: submit_overhead_us
 *            |/______________ C(k)
 *
 *   2. memory. An all-reduce of one 4 MiB tensor per device; the memory bandwidth at which the
 *      model predicts the measured time, found by bisection (the prediction falls as the bandwidth
 *      grows), clamped to [0.05, 1e5] GB/s. On CPU devices it is the host memory the kernels share
 *      (cpu_memory_GBps), elsewhere each device's own (gpu_memory_GBps).
 *
 *   3. algorithms. Every algorithm's all-reduce of one tensor at every power of two from 32 KiB to
 *      16 MiB per device, timed beside the model's prediction with the figures of steps 1 and 2: the
 *      measurements "auto" scales its predictions by (starfold_measurement_t, compile.c). Steps 1
 *      and 2 fit two numbers for all algorithms; what differs between algorithms and the model does
 *      not describe (StarPU partitioning a buffer into 8 or 64 pieces, workers noticing dependent
 *      tasks) shows here, and it changes in steps where an algorithm starts cutting buffers into pieces
 *      (one-pass from 512 KiB): a coarser grid interpolated across such a step misled "auto". A size
 *      is measured only while the time spent so far, plus the last size's time scaled by the size
 *      step, stays within MEASURE_BUDGET_S: the emulated box or a loaded machine stops earlier.
 *
 * The result is kept in StarPU's home, as StarPU keeps its performance models:
 * $STARPU_HOME/.starpu/starfold/calibration.<host>.<mode>.<n> ($STARPU_HOME defaults to $HOME), a
 * "key = value" text file; a later calibration of the same machine, mode and device count reads it
 * instead of measuring, unless STARFOLD_CALIBRATE=2 (StarPU's STARPU_CALIBRATE=2 means the same:
 * measure again). Calibrating takes about a second on the host, a few on the emulated box.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/common.h"
#include "exec/exec.h"
#include "topology/topology.h"
#include <starfold/model.h>

#define CAL_POINTS 6
#define CAL_WARMUP 3
#define CAL_REPS 9
#define CAL_MEMORY_ELEMENTS ((size_t)1 << 20) /* 4 MiB of float32 per device */
#define CAL_FORMAT 2 /* of the file: 2 = with step 3's measurements on the x2 grid */
#define MEASURE_SIZES 10
#define MEASURE_FIRST_BYTES ((size_t)32 << 10) /* then x2 up to 16 MiB */
#define MEASURE_STEP 2
#define MEASURE_BUDGET_S 6.0

static int cmp_double(const void *pa, const void *pb)
{
    const double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

static const char *mode_name(starfold_device_mode_t mode)
{
    return mode == STARFOLD_DEVICES_CPU ? "cpu" : mode == STARFOLD_DEVICES_OPENCL ? "opencl" : "cuda";
}

/* ------------------------------------------------------------------------------------------------
 * Measuring one graph
 */

/* One all-reduce of @nt tensors of @count float32 over every device by @algorithm, with its data. */
typedef struct cal_case {
    starfold_graph_t graph;
    starpu_data_handle_t *in, *out; /* [n * nt] slot-major */
    size_t nh;
} cal_case_t;

static void case_free(starfold_context_t ctx, cal_case_t *c)
{
    for (size_t i = 0; i < c->nh; i++) {
        if (c->in) starfold_vector_destroy(ctx, c->in[i]);
        if (c->out) starfold_vector_destroy(ctx, c->out[i]);
    }
    free(c->in);
    free(c->out);
    starfold_graph_destroy(c->graph);
    memset(c, 0, sizeof *c);
}

/* @algorithm's all-reduce of @nt tensors of @count float32 over every device of @ctx. */
static starfold_status_t case_compile(starfold_context_t ctx, starfold_topology_t topo, const char *algorithm, size_t nt,
                                      size_t count, starfold_graph_t *graph)
{
    const int n = ctx->num_devices;
    int devices[STARFOLD_MAX_DEVICES];
    starfold_tensor_desc_t tensors[32];
    for (int d = 0; d < n; d++) devices[d] = d;
    for (size_t t = 0; t < nt; t++) tensors[t] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, count };
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM, .num_sources = n,
                                              .sources = devices, .num_tensors = nt, .tensors = tensors };
    return starfold_graph_compile(topo, algorithm, &desc, NULL, graph);
}

static starfold_status_t case_make(starfold_context_t ctx, starfold_topology_t topo, const char *algorithm, size_t nt,
                                   size_t count, cal_case_t *c)
{
    const int n = ctx->num_devices;
    memset(c, 0, sizeof *c);
    starfold_status_t st = case_compile(ctx, topo, algorithm, nt, count, &c->graph);
    if (st != STARFOLD_OK) return st;
    c->nh = (size_t)n * nt;
    c->in = calloc(c->nh, sizeof *c->in);
    c->out = calloc(c->nh, sizeof *c->out);
    if (!c->in || !c->out) {
        case_free(ctx, c);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_context_calibrate: out of memory");
    }
    for (int d = 0; d < n; d++)
        for (size_t t = 0; t < nt; t++) {
            const size_t i = (size_t)d * nt + t;
            if ((st = starfold_vector_create(ctx, d, STARFOLD_FLOAT32, count, &c->in[i])) != STARFOLD_OK ||
                (st = starfold_vector_create(ctx, d, STARFOLD_FLOAT32, count, &c->out[i])) != STARFOLD_OK) {
                case_free(ctx, c);
                return st;
            }
        }
    return STARFOLD_OK;
}

/*
 * Median seconds of @reps submissions after @warmup, each waited for; -1 on failure. A graph whose
 * first run takes over 20 ms (the emulated box, a loaded machine) gets 1 warm-up and 3 runs, so a
 * calibration stays within seconds.
 */
static double case_time(starfold_context_t ctx, const cal_case_t *c, int warmup, int reps)
{
    double t[CAL_WARMUP + CAL_REPS];
    for (int i = 0; i < warmup + reps; i++) {
        if (i == 1 && t[0] > 0.02 && warmup + reps > 4) warmup = 1, reps = 3;
        starfold_request_t req = NULL;
        const double t0 = starfold__now_s();
        starfold_status_t st = starfold_submit(ctx, c->graph, c->in, c->out, &req);
        if (st == STARFOLD_OK) st = starfold_request_wait(req);
        t[i] = starfold__now_s() - t0;
        starfold_request_destroy(req);
        if (st != STARFOLD_OK) return -1;
    }
    qsort(t + warmup, (size_t)reps, sizeof t[0], cmp_double);
    return t[warmup + reps / 2];
}

/* The model's time for @g (us) with @p on its topology; -1 on failure. */
static double model_us(starfold_graph_t g, const starfold_cost_params_t *p)
{
    starfold_prediction_t r;
    return starfold_graph_simulate(g, p, &r) == STARFOLD_OK ? r.time_us : -1;
}

/* ------------------------------------------------------------------------------------------------
 * The two steps
 */

static starfold_status_t fit_overheads(starfold_context_t ctx, starfold_topology_t topo, starfold_cost_params_t *p,
                                       starfold_calibration_t *out)
{
    static const size_t ks[CAL_POINTS] = { 1, 2, 4, 8, 16, 32 };
    double x[CAL_POINTS], y[CAL_POINTS];
    for (int i = 0; i < CAL_POINTS; i++) {
        cal_case_t c;
        starfold_status_t st = case_make(ctx, topo, "reduce-to-one", ks[i], 1, &c);
        if (st != STARFOLD_OK) return st;
        starfold_cost_params_t q = *p;
        q.submit_overhead_us = 0;
        q.task_overhead_us = 0;
        const double lat = model_us(c.graph, &q);
        q.task_overhead_us = 1;
        const double one = model_us(c.graph, &q);
        const double secs = case_time(ctx, &c, CAL_WARMUP, CAL_REPS);
        case_free(ctx, &c);
        if (lat < 0 || one < 0 || secs < 0)
            return starfold__error(STARFOLD_ERR_RUNTIME, "starfold_context_calibrate: a graph of %zu tensors failed: %s",
                                   ks[i], starfold_last_error());
        x[i] = one - lat;
        y[i] = secs * 1e6 - lat;
    }
    double mx = 0, my = 0;
    for (int i = 0; i < CAL_POINTS; i++) mx += x[i] / CAL_POINTS, my += y[i] / CAL_POINTS;
    double sxy = 0, sxx = 0;
    for (int i = 0; i < CAL_POINTS; i++) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
    double task = sxx > 0 ? sxy / sxx : 0, submit = my - task * mx;
    if (task < 0) task = 0;
    if (submit < 0) submit = 0;
    double se = 0, sy = 0;
    for (int i = 0; i < CAL_POINTS; i++) {
        const double r = y[i] - (submit + task * x[i]);
        se += r * r;
        sy += y[i];
    }
    p->task_overhead_us = task;
    p->submit_overhead_us = submit;
    out->points = CAL_POINTS;
    out->fit_error = sy > 0 ? sqrt(se / CAL_POINTS) / (sy / CAL_POINTS) : 0;
    return STARFOLD_OK;
}

static starfold_status_t fit_memory(starfold_context_t ctx, starfold_topology_t topo, starfold_cost_params_t *p)
{
    cal_case_t c;
    starfold_status_t st = case_make(ctx, topo, "reduce-to-one", 1, CAL_MEMORY_ELEMENTS, &c);
    if (st != STARFOLD_OK) return st;
    const double secs = case_time(ctx, &c, 1, 5);
    if (secs < 0) {
        case_free(ctx, &c);
        return starfold__error(STARFOLD_ERR_RUNTIME, "starfold_context_calibrate: the 4 MiB all-reduce failed: %s",
                               starfold_last_error());
    }
    const double target = secs * 1e6;
    const int cpu = ctx->mode == STARFOLD_DEVICES_CPU;
    double lo = log(0.05), hi = log(1e5); /* GB/s, in log space */
    for (int it = 0; it < 40; it++) {
        const double mid = 0.5 * (lo + hi);
        starfold_cost_params_t q = *p;
        if (cpu) q.cpu_memory_GBps = exp(mid);
        else q.gpu_memory_GBps = exp(mid);
        const double t = model_us(c.graph, &q);
        if (t < 0) break;
        if (t > target) lo = mid; /* too slow: more bandwidth */
        else hi = mid;
    }
    if (cpu) p->cpu_memory_GBps = exp(0.5 * (lo + hi));
    else p->gpu_memory_GBps = exp(0.5 * (lo + hi));
    case_free(ctx, &c);
    return STARFOLD_OK;
}

/*
 * Step 3: each algorithm at each size, until the budget says stop. An algorithm that cannot run here
 * (one-pass without shared memory) or at that size is left out; a run that fails is an error.
 */
static starfold_status_t measure_algorithms(starfold_context_t ctx, starfold_topology_t topo,
                                            const starfold_cost_params_t *p, starfold_calibration_t *out)
{
    const double start = starfold__now_s();
    double last_size_s = 0;
    size_t bytes = MEASURE_FIRST_BYTES;
    out->num_measurements = 0;
    for (int k = 0; k < MEASURE_SIZES; k++, bytes *= MEASURE_STEP) {
        const double spent = starfold__now_s() - start;
        if (k > 0 && spent + last_size_s * MEASURE_STEP > MEASURE_BUDGET_S) break;
        const double size_start = starfold__now_s();
        /* One set of vectors per size; each algorithm's graph runs on it in turn. */
        cal_case_t c;
        starfold_status_t st = case_make(ctx, topo, "reduce-to-one", 1, bytes / sizeof(float), &c);
        if (st != STARFOLD_OK) return st;
        for (int a = 0; a < starfold_algorithm_count(); a++) {
            const char *name = starfold_algorithm_name(a);
            if (!strcmp(name, "auto") || out->num_measurements == STARFOLD_CALIBRATION_MAX_MEASUREMENTS) continue;
            starfold_graph_t g = NULL;
            st = case_compile(ctx, topo, name, 1, bytes / sizeof(float), &g);
            if (st == STARFOLD_ERR_NOT_SUPPORTED) continue;
            if (st != STARFOLD_OK) break;
            starfold_graph_destroy(c.graph);
            c.graph = g;
            const double predicted = model_us(c.graph, p);
            const double secs = case_time(ctx, &c, 1, 5);
            if (secs < 0 || predicted <= 0) {
                st = starfold__error(STARFOLD_ERR_RUNTIME, "starfold_context_calibrate: %s at %zu bytes failed: %s", name,
                                     bytes, starfold_last_error());
                break;
            }
            starfold_measurement_t *m = &out->measurements[out->num_measurements++];
            memset(m, 0, sizeof *m);
            snprintf(m->algorithm, sizeof m->algorithm, "%s", name);
            m->num_devices = ctx->num_devices;
            m->bytes = bytes;
            m->measured_us = secs > 0 ? secs * 1e6 : 1e-3;
            m->predicted_us = predicted;
        }
        case_free(ctx, &c);
        if (st != STARFOLD_OK && st != STARFOLD_ERR_NOT_SUPPORTED) return st;
        last_size_s = starfold__now_s() - size_start;
    }
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Keeping it: $STARPU_HOME/.starpu/starfold/calibration.<host>.<mode>.<n>
 */

static int calibration_path(starfold_context_t ctx, char *path, size_t size, int create_dirs)
{
    const char *home = getenv("STARPU_HOME");
    if (!home || !*home) home = getenv("HOME");
    if (!home || !*home) return 0;
    char host[64] = "localhost";
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    for (char *s = host; *s; s++)
        if (*s == '/') *s = '_';
    int n = snprintf(path, size, "%s/.starpu", home);
    if (n < 0 || (size_t)n >= size) return 0;
    if (create_dirs && mkdir(path, 0755) != 0 && errno != EEXIST) return 0;
    n = snprintf(path, size, "%s/.starpu/starfold", home);
    if (n < 0 || (size_t)n >= size) return 0;
    if (create_dirs && mkdir(path, 0755) != 0 && errno != EEXIST) return 0;
    n = snprintf(path, size, "%s/.starpu/starfold/calibration.%s.%s.%d", home, host, mode_name(ctx->mode),
                 ctx->num_devices);
    return n > 0 && (size_t)n < size;
}

/* Reads a calibration file; 0 when it is absent or not one (then it is measured again). */
static int load(starfold_context_t ctx, const char *path, starfold_cost_params_t *p, starfold_calibration_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    int seen = 0;
    size_t expected = (size_t)-1;
    int format = 0;
    starfold_cost_params_t q = *p;
    out->num_measurements = 0;
    while (fgets(line, sizeof line, f)) {
        char key[64];
        double v;
        if (line[0] == '#') continue;
        /* measurement = <algorithm> <devices> <bytes> <measured us> <predicted us> */
        starfold_measurement_t m;
        memset(&m, 0, sizeof m);
        if (sscanf(line, " measurement = %31s %d %zu %lf %lf", m.algorithm, &m.num_devices, &m.bytes, &m.measured_us,
                   &m.predicted_us) == 5) {
            if (out->num_measurements < STARFOLD_CALIBRATION_MAX_MEASUREMENTS) out->measurements[out->num_measurements++] = m;
            continue;
        }
        if (sscanf(line, " %63[a-z_A-Z] = %lf", key, &v) != 2) continue;
        if (!strcmp(key, "format")) {
            format = (int)v;
            continue;
        }
        if (!strcmp(key, "measurements")) {
            expected = v >= 0 && v <= STARFOLD_CALIBRATION_MAX_MEASUREMENTS ? (size_t)v : (size_t)-1;
            continue;
        }
        if (!strcmp(key, "task_overhead_us")) q.task_overhead_us = v, seen |= 1;
        else if (!strcmp(key, "submit_overhead_us")) q.submit_overhead_us = v, seen |= 2;
        else if (!strcmp(key, "cpu_memory_GBps")) q.cpu_memory_GBps = v, seen |= 4;
        else if (!strcmp(key, "gpu_memory_GBps")) q.gpu_memory_GBps = v, seen |= 8;
        else if (!strcmp(key, "fit_error")) out->fit_error = v;
        else if (!strcmp(key, "points")) out->points = (int)v;
    }
    fclose(f);
    q.cpu_workers = p->cpu_workers; /* the context's mapping, not the file's */
    /* A file of another format (before step 3, another grid), or one cut short, is measured again. */
    if (seen != 15 || format != CAL_FORMAT || expected != out->num_measurements ||
        starfold__cost_params_check(&q, "calibration file") != STARFOLD_OK)
        return 0;
    for (size_t i = 0; i < out->num_measurements; i++) {
        const starfold_measurement_t *m = &out->measurements[i];
        if (m->num_devices != ctx->num_devices || m->bytes == 0 || !(m->measured_us > 0) || !(m->predicted_us > 0) ||
            !isfinite(m->measured_us) || !isfinite(m->predicted_us) || starfold_algorithm_find(m->algorithm) < 0)
            return 0;
    }
    *p = q;
    return 1;
}

static void save(starfold_context_t ctx, const char *path, const starfold_cost_params_t *p,
                 const starfold_calibration_t *c)
{
    char tmp[sizeof c->path + 16];
    snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    const time_t t = time(NULL);
    char when[32] = "";
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    fprintf(f,
            "# starfold cost-model calibration (see starfold_context_calibrate()); delete this file or set\n"
            "# STARFOLD_CALIBRATE=2 to measure again. %s, %d %s devices, StarPU %d.%d.%d\n",
            when, ctx->num_devices, mode_name(ctx->mode), STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION,
            STARPU_RELEASE_VERSION);
    fprintf(f, "format = %d\n", CAL_FORMAT);
    fprintf(f, "task_overhead_us = %.17g\nsubmit_overhead_us = %.17g\ncpu_memory_GBps = %.17g\ngpu_memory_GBps = %.17g\n",
            p->task_overhead_us, p->submit_overhead_us, p->cpu_memory_GBps, p->gpu_memory_GBps);
    fprintf(f, "points = %d\nfit_error = %.6g\n", c->points, c->fit_error);
    fprintf(f, "# measurement = algorithm devices bytes measured_us predicted_us\nmeasurements = %zu\n",
            c->num_measurements);
    for (size_t i = 0; i < c->num_measurements; i++) {
        const starfold_measurement_t *m = &c->measurements[i];
        fprintf(f, "measurement = %s %d %zu %.17g %.17g\n", m->algorithm, m->num_devices, m->bytes, m->measured_us,
                m->predicted_us);
    }
    /* A file is whole or absent: written aside, then renamed over (calibrations may race). */
    if (fclose(f) != 0 || rename(tmp, path) != 0) remove(tmp);
}

/* ------------------------------------------------------------------------------------------------
 * The entry point
 */

/* The context's workers serving its devices: distinct count, for cpu_workers (0 = one each). */
static int distinct_workers(starfold_context_t ctx)
{
    int n = 0;
    for (int d = 0; d < ctx->num_devices; d++) {
        int seen = 0;
        for (int e = 0; e < d; e++) seen |= ctx->workers[e] == ctx->workers[d];
        n += !seen;
    }
    return n < ctx->num_devices ? n : 0;
}

STARFOLD_API starfold_status_t starfold_context_calibrate(starfold_context_t context, int force,
                                                          starfold_calibration_t *calibration)
{
    static const char fn[] = "starfold_context_calibrate";
    if (!context || !calibration)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !context ? "context" : "calibration");
    const char *env = getenv("STARFOLD_CALIBRATE");
    if (env && !strcmp(env, "2")) force = 1;
    starfold_calibration_t c;
    memset(&c, 0, sizeof c);
    starfold_cost_params_t p;
    starfold_cost_params_init(&p);
    if (context->mode == STARFOLD_DEVICES_CPU) p.cpu_workers = distinct_workers(context);
    const int persist = calibration_path(context, c.path, sizeof c.path, 0);
    if (!persist) c.path[0] = '\0';
    if (persist && !force && load(context, c.path, &p, &c)) {
        c.from_file = 1;
    } else {
        starfold_topology_t topo = NULL;
        starfold_status_t st = starfold_context_topology(context, &topo);
        if (st != STARFOLD_OK) return st;
        /* Measured on the bare topology: a calibration already attached must not feed this one. */
        starfold_topology_set_cost_params(topo, NULL);
        st = fit_overheads(context, topo, &p, &c);
        if (st == STARFOLD_OK) st = fit_memory(context, topo, &p);
        if (st == STARFOLD_OK) st = measure_algorithms(context, topo, &p, &c);
        starfold_topology_destroy(topo);
        if (st != STARFOLD_OK) return st;
        if (persist && calibration_path(context, c.path, sizeof c.path, 1)) save(context, c.path, &p, &c);
        else c.path[0] = '\0';
    }
    c.params = p;
    context->calibration = p;
    context->num_measurements = c.num_measurements;
    memcpy(context->measurements, c.measurements, c.num_measurements * sizeof c.measurements[0]);
    context->calibrated = 1;
    *calibration = c;
    return STARFOLD_OK;
}
