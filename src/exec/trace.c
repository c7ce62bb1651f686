/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * A finished request's timeline as an SVG Gantt chart (starfold_request_trace_svg(), `starfold run
 * --trace FILE.svg`):
 *
 *      title
 *      CPU 0 (devices 0, 2, 4, 6)  |  [fetch][==reduce==]   [copy]  ...
 *      CPU 1 (devices 1, 3, 5, 7)  |       [fetch][==reduce==] ...
 *                                  +----+----+----+----+----> microseconds after the submission
 *      legend: task kinds, "waiting for data (transfers)"
 *
 * One row per StarPU worker that ran a task (a worker carries one or several logical devices), each
 * task a bar from its kernel's start to its end, coloured by kind (the colours of the graph pictures),
 * and before it a hatched bar for the time StarPU spent bringing its data to the worker (transfers
 * between memory nodes; recorded only with StarPU's profiling on). The picture is written by hand:
 * rectangles, lines and text, nothing a library would add.
 */
#include "config.h"

#include <stdio.h>
#include <starpu.h>

#include "base/common.h"
#include "graph/palette.h"
#include "exec/exec.h"
#include "exec/kernels.h"

enum { LEFT = 230, RIGHT = 30, TOP = 60, ROW = 34, BAR = 22, WIDTH = 1200 };

STARFOLD_API void starfold_context_set_profiling(starfold_context_t context, int on)
{
    (void)context;
    starpu_profiling_status_set(on ? STARPU_PROFILING_ENABLE : STARPU_PROFILING_DISABLE);
}

/* Text safe inside SVG: &, < and > escaped. */
static void svg_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '&') fputs("&amp;", f);
        else if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else fputc(*s, f);
    }
}

/* A "nice" tick step (1, 2 or 5 x 10^k) giving about 8 ticks over @span. */
static double tick_step(double span)
{
    double step = 1;
    while (step * 10 < span) step *= 10;
    while (step > span / 4 && step > 1e-3) step /= 2;
    if (span / step > 12) step *= 2;
    return step;
}

/* The row of each worker that ran a task (-1: none), rows in worker order; returns the row count. */
static int assign_rows(const starfold_task_timing_t *t, size_t n, int *row_of, int nworkers)
{
    for (int w = 0; w < nworkers; w++) row_of[w] = -1;
    for (size_t k = 0; k < n; k++)
        if (t[k].worker >= 0 && t[k].worker < nworkers) row_of[t[k].worker] = 0;
    int rows = 0;
    for (int w = 0; w < nworkers; w++)
        if (row_of[w] == 0) row_of[w] = rows++;
    return rows;
}

static void write_rows(FILE *f, starfold_context_t ctx, const int *row_of, int nworkers, double x1)
{
    for (int w = 0; w < nworkers; w++) {
        if (row_of[w] < 0) continue;
        const int y = TOP + row_of[w] * ROW;
        /* "OpenCL 3": StarPU's full worker names carry the device's marketing name, too long here. */
        char full[128] = "", name[64];
        starpu_worker_get_name(w, full, sizeof full);
        const enum starpu_worker_archtype type = starpu_worker_get_type(w);
        snprintf(name, sizeof name, "%s %d",
                 type == STARPU_CPU_WORKER ? "CPU" : type == STARPU_CUDA_WORKER ? "CUDA" : type == STARPU_OPENCL_WORKER ? "OpenCL" : "worker",
                 starpu_worker_get_devid(w));
        char devs[160] = "";
        size_t len = 0;
        for (int d = 0; d < ctx->num_devices && len + 8 < sizeof devs; d++)
            if (ctx->workers[d] == w) len += (size_t)snprintf(devs + len, sizeof devs - len, "%s%d", len ? ", " : "", d);
        if (row_of[w] % 2) fprintf(f, "<rect x='%d' y='%d' width='%.1f' height='%d' fill='#f4f4f4'/>\n", LEFT, y, x1 - LEFT, ROW);
        fprintf(f, "<text x='%d' y='%d' text-anchor='end' font-size='12'><title>", LEFT - 8, y + ROW / 2 + 4);
        svg_text(f, full);
        fprintf(f, "</title>%s (device%s %s)</text>\n", name, strchr(devs, ',') ? "s" : "", devs);
    }
}

static void write_axis(FILE *f, int rows, double span, double x1)
{
    const int y = TOP + rows * ROW + 6;
    const double scale = (x1 - LEFT) / span, step = tick_step(span);
    fprintf(f, "<line x1='%d' y1='%d' x2='%.1f' y2='%d' stroke='black'/>\n", LEFT, y, x1, y);
    for (double v = 0; v <= span * 1.0001; v += step) {
        const double x = LEFT + v * scale;
        fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='black'/>", x, y, x, y + 5);
        fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#dddddd'/>", x, TOP, x, y);
        fprintf(f, "<text x='%.1f' y='%d' text-anchor='middle' font-size='11'>%g</text>\n", x, y + 18, v);
    }
    fprintf(f, "<text x='%.1f' y='%d' text-anchor='middle' font-size='12'>microseconds after the submission</text>\n",
            (LEFT + x1) / 2, y + 36);
}

static void write_legend(FILE *f, const starfold_task_timing_t *t, size_t n, int y)
{
    int used[STARFOLD_TASK_KIND_COUNT] = { 0 }, fetch = 0, x = LEFT;
    for (size_t k = 0; k < n; k++) {
        if ((int)t[k].kind >= 0 && t[k].kind < STARFOLD_TASK_KIND_COUNT) used[t[k].kind] = 1;
        fetch |= t[k].fetch_us > 0;
    }
    for (int k = 0; k < STARFOLD_TASK_KIND_COUNT; k++) {
        if (!used[k]) continue;
        fprintf(f, "<rect x='%d' y='%d' width='18' height='12' fill='%s' stroke='#333333'/>", x, y, starfold__kind_fill(k));
        fprintf(f, "<text x='%d' y='%d' font-size='12'>%s</text>\n", x + 24, y + 11, starfold_task_kind_name((starfold_task_kind_t)k));
        x += 110;
    }
    fprintf(f, "<rect x='%d' y='%d' width='18' height='12' fill='url(#fetch)' stroke='#777777'/>", x, y);
    fprintf(f, "<text x='%d' y='%d' font-size='12'>waiting for data (transfers)%s</text>\n", x + 24, y + 11,
            fetch ? "" : ": not recorded, StarPU's profiling was off");
}

STARFOLD_API starfold_status_t starfold_request_trace_svg(starfold_request_t request, starfold_context_t context,
                                                          const char *title, const char *path)
{
    static const char fn[] = "starfold_request_trace_svg";
    if (!request || !context || !path)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                               !request ? "request" : !context ? "context" : "path");
    size_t n = 0;
    starfold_status_t st = starfold_request_timeline(request, NULL, 0, &n);
    if (st != STARFOLD_OK) return st;
    starfold_task_timing_t *t = malloc(sizeof *t * (n ? n : 1));
    const int nworkers = (int)starpu_worker_get_count();
    int *row_of = malloc(sizeof *row_of * (size_t)(nworkers > 0 ? nworkers : 1));
    if (!t || !row_of) {
        free(t);
        free(row_of);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    starfold_request_timeline(request, t, n, &n);
    const int rows = assign_rows(t, n, row_of, nworkers);
    double span = 1;
    for (size_t k = 0; k < n; k++) span = t[k].end_us > span ? t[k].end_us : span;
    span *= 1.02;

    FILE *f = fopen(path, "w");
    if (!f) {
        free(t);
        free(row_of);
        return starfold__error(STARFOLD_ERR_IO, "%s: cannot write %s", fn, path);
    }
    const int height = TOP + rows * ROW + 100;
    const double x1 = WIDTH - RIGHT, scale = (x1 - LEFT) / span;
    fprintf(f, "<?xml version='1.0' encoding='UTF-8'?>\n"
               "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif'>\n"
               "<defs><pattern id='fetch' width='6' height='6' patternUnits='userSpaceOnUse' "
               "patternTransform='rotate(45)'><rect width='6' height='6' fill='#eeeeee'/>"
               "<line x1='0' y1='0' x2='0' y2='6' stroke='#999999' stroke-width='2'/></pattern></defs>\n"
               "<rect width='100%%' height='100%%' fill='white'/>\n",
            WIDTH, height);
    fprintf(f, "<text x='%d' y='28' font-size='16' font-weight='bold'>", LEFT);
    svg_text(f, title && *title ? title : "starfold timeline");
    fprintf(f, "</text>\n<text x='%d' y='46' font-size='12'>%zu tasks on %d worker%s, %.0f us from submission to the last "
               "task's end</text>\n", LEFT, n, rows, rows == 1 ? "" : "s", span / 1.02);
    write_rows(f, context, row_of, nworkers, x1);
    write_axis(f, rows, span, x1);
    for (size_t k = 0; k < n; k++) {
        if (t[k].worker < 0 || t[k].worker >= nworkers) continue;
        const double y = TOP + row_of[t[k].worker] * ROW + (ROW - BAR) / 2.0;
        const double xs = LEFT + t[k].start_us * scale, w = (t[k].end_us - t[k].start_us) * scale;
        if (t[k].fetch_us > 0)
            fprintf(f, "<rect x='%.2f' y='%.1f' width='%.2f' height='%d' fill='url(#fetch)'/>\n", xs - t[k].fetch_us * scale,
                    y + 4, t[k].fetch_us * scale, BAR - 8);
        fprintf(f, "<rect x='%.2f' y='%.1f' width='%.2f' height='%d' fill='%s' stroke='#333333' stroke-width='0.5'>"
                   "<title>node %zu: %s on device %d, %.1f-%.1f us%s</title></rect>\n",
                xs, y, w > 0.5 ? w : 0.5, BAR, starfold__kind_fill(t[k].kind), t[k].node, starfold_task_kind_name(t[k].kind),
                t[k].device, t[k].start_us, t[k].end_us, t[k].fetch_us > 0 ? ", after waiting for its data" : "");
    }
    write_legend(f, t, n, TOP + rows * ROW + 62);
    fputs("</svg>\n", f);
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad) st = starfold__error(STARFOLD_ERR_IO, "%s: cannot write %s", fn, path);
    free(t);
    free(row_of);
    return st;
}
