/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold demo: what `./quickstart demo` runs, two jobs on the same machine:
 *   1. data-parallel training (examples/linreg.c): linear regression by SGD with MirroredStrategy on
 *      every device, the gradients all-reduced every step; the loss must go down and the replicas'
 *      parameters end bit-identical; the graph of its gradient all-reduce is drawn;
 *   2. the all-reduce of examples/allreduce_demo.c (a gradient-like batch of four float32 tensors,
 *      hierarchical copy with two packs), verified element by element, its graph drawn.
 */
#include "cli.h"
#include "linreg.h"

#include <string.h>

/* A demo job: runs on the machine, writes its files under @out, prints what it did on @info. */
typedef struct demo_job {
    const char *name;
    int (*run)(const cli_command_t *cmd, const cli_opts_t *o, cli_machine_t *m, const char *out, FILE *info);
} demo_job_t;

/* Writes @g as @out/@stem.dot and @out/@stem.svg and prints both paths. */
static int write_graph(const cli_command_t *cmd, starfold_graph_t g, const char *out, const char *stem, FILE *info)
{
    char dot[4200], svg[4200];
    snprintf(dot, sizeof dot, "%s/%s.dot", out, stem);
    snprintf(svg, sizeof svg, "%s/%s.svg", out, stem);
    starfold_status_t st = starfold_graph_write_dot(g, dot);
    if (st == STARFOLD_OK) st = starfold_graph_render(g, svg);
    if (st != STARFOLD_OK) return cli_fail(cmd, st, "cannot write the graph into %s", out);
    fprintf(info, "Graph written to %s and %s\n", dot, svg);
    return CLI_OK;
}

static int demo_allreduce(const cli_command_t *cmd, const cli_opts_t *o, cli_machine_t *m, const char *out, FILE *info)
{
    /* A gradient-like batch whose sizes do not divide evenly into packs. */
    static const starfold_tensor_desc_t tensors[4] = {
        { STARFOLD_FLOAT32, 262144 }, { STARFOLD_FLOAT32, 65536 + 3 }, { STARFOLD_FLOAT32, 1000 }, { STARFOLD_FLOAT32, 13 },
    };
    const size_t nt = 4;
    const int n = m->num_devices;
    int devices[STARFOLD_MAX_DEVICES];
    for (int d = 0; d < n; d++) devices[d] = d;
    const starfold_collective_desc_t desc = {
        .kind = STARFOLD_COLL_REDUCE, .op = o->op, .num_sources = n, .sources = devices,
        .num_tensors = nt, .tensors = tensors,
    };
    starfold_algo_options_t aopt;
    starfold_algo_options_init(&aopt);
    aopt.num_packs = 2;

    int r = CLI_FAIL;
    starfold_graph_t g = NULL;
    cli_replicas_t rep;
    memset(&rep, 0, sizeof rep);
    starfold_graph_stats_t stats;
    starfold_request_t req = NULL;
    starfold_status_t st = starfold_graph_compile(m->topo, "hierarchical-copy", &desc, &aopt, &g);
    if (st == STARFOLD_OK) st = starfold_graph_check(g);
    if (st == STARFOLD_OK) st = starfold_graph_stats(g, &stats);
    if (st != STARFOLD_OK) {
        r = cli_fail(cmd, st, "cannot compile the all-reduce");
        goto out;
    }
    if ((st = cli_replicas_create(m->ctx, n, tensors, nt, o->op, CLI_COLL_ALL_REDUCE, 0, &rep)) != STARFOLD_OK ||
        (st = cli_replicas_clear(&rep)) != STARFOLD_OK) {
        r = cli_fail(cmd, st, "cannot create the replicas");
        goto out;
    }
    const double t0 = cli_now();
    st = starfold_submit(m->ctx, g, rep.in, rep.out, &req);
    if (st == STARFOLD_OK) st = starfold_request_wait(req);
    const double elapsed = cli_now() - t0;
    starfold_request_destroy(req);
    if (st != STARFOLD_OK) {
        r = cli_fail(cmd, st, "the all-reduce failed");
        goto out;
    }
    uint64_t wrong = 0, checked = 0;
    if ((st = cli_replicas_verify(&rep, &wrong, &checked)) != STARFOLD_OK) {
        r = cli_fail(cmd, st, "cannot read the results back");
        goto out;
    }
    char b1[32], b2[32];
    fprintf(info, "All-reduce (%s) of %zu tensors, %s per replica, over %d devices with hierarchical-copy, 2 packs\n",
            starfold_op_name(o->op), nt, cli_format_bytes(b1, sizeof b1, cli_tensors_bytes(tensors, nt)), n);
    fprintf(info, "Graph: %zu tasks (", stats.num_tasks);
    for (int k = 0; k < STARFOLD_TASK_KIND_COUNT; k++)
        fprintf(info, "%s%zu %s", k ? ", " : "", stats.tasks_by_kind[k], starfold_task_kind_name((starfold_task_kind_t)k));
    fprintf(info, "), %s moved between devices, critical path %zu tasks\n",
            cli_format_bytes(b2, sizeof b2, stats.bytes_moved), stats.critical_path_tasks);
    fprintf(info, "Time: %.3f ms%s\n", elapsed * 1e3,
            m->emulated ? " (emulated devices measure correctness, not speed)" : "");
    fprintf(info, "Verified: %llu of %llu elements right on all %d replicas%s\n",
            (unsigned long long)(checked - wrong), (unsigned long long)checked, n, wrong ? " -- WRONG RESULTS" : "");
    r = write_graph(cmd, g, out, "allreduce", info);
    if (r == CLI_OK && wrong) r = CLI_FAIL;
out:
    cli_replicas_destroy(&rep);
    starfold_graph_destroy(g);
    return r;
}

static int demo_train(const cli_command_t *cmd, const cli_opts_t *o, cli_machine_t *m, const char *out, FILE *info)
{
    (void)o;
    linreg_result_t res;
    starfold_graph_t g = NULL;
    starfold_status_t st = linreg_train(m->ctx, m->topo, 40, info, &res, &g);
    if (st != STARFOLD_OK) return cli_fail(cmd, st, "training failed");
    int r = write_graph(cmd, g, out, "gradient-allreduce", info);
    starfold_graph_destroy(g);
    if (r == CLI_OK && !(res.loss_went_down && res.identical)) r = CLI_FAIL;
    return r;
}

static const demo_job_t demo_jobs[] = { { "data-parallel training", demo_train }, { "all-reduce", demo_allreduce } };

static int demo_main(const cli_command_t *cmd, int argc, char **argv)
{
    cli_opts_t o;
    int r = cli_parse(cmd, argc, argv, &o);
    if (r != CLI_OK) return r == CLI_HELP_DONE ? CLI_OK : r;
    const char *out = o.out_dir ? o.out_dir : "starfold-demo";
    if (cli_make_dirs(out) != 0) return cli_usage_error(cmd, "--out %s: cannot create the folder", out);

    cli_machine_t m;
    if ((r = cli_machine_open(cmd, &o, stdout, &m)) != CLI_OK) return r;
    printf("Devices: %s\n", m.description);
    fflush(stdout);
    for (size_t j = 0; j < sizeof demo_jobs / sizeof demo_jobs[0] && r == CLI_OK; j++) {
        printf("\n== %s\n", demo_jobs[j].name);
        fflush(stdout);
        r = demo_jobs[j].run(cmd, &o, &m, out, stdout);
    }
    cli_machine_close(&m);
    return r;
}

const cli_command_t cli_cmd_demo = {
    .name = "demo",
    .summary = "the quickstart demo: data-parallel training and an all-reduce on every device, graphs drawn",
    .accepted = CLI_OPT(OPT_OUT_DIR) | CLI_OPT(OPT_EMULATED) | CLI_OPT(OPT_TOPOLOGY) | CLI_OPT(OPT_DEVICES) |
                CLI_OPT(OPT_OP),
    .usage =
        "Usage: starfold demo [--out DIR] [--emulated] [--topology T] [-g|--devices N] [--op OP]\n"
        "\n"
        "What ./quickstart demo runs, on every device StarPU has:\n"
        "  1. data-parallel training: linear regression by SGD with MirroredStrategy, StarPU compute tasks\n"
        "     on every replica's device, the gradients all-reduced every step; the loss must go down and\n"
        "     every replica's parameters end bit-identical; the gradient all-reduce's graph is written as\n"
        "     DIR/gradient-allreduce.dot and .svg;\n"
        "  2. an all-reduce of a gradient-like batch (four float32 tensors, 1.25 MiB per replica) by\n"
        "     hierarchical-copy with 2 packs, verified element by element on every replica against a float64\n"
        "     host reference; its graph is written as DIR/allreduce.dot and DIR/allreduce.svg.\n"
        "All paths are printed. Without an accelerator it runs on the emulated 8-device box and says so\n"
        "(see starfold run --help for the device choice).\n"
        "\n"
        "  --out DIR          where to write the graph (created if needed), default ./starfold-demo\n"
        "  --emulated         force the emulated 8-device box\n"
        "  --topology T       compile for this topology (see starfold topo); 'host' = CPU workers\n"
        "  -g, --devices N    use the first N devices\n"
        "  --op OP            sum (default), mean, min, max, prod\n"
        "  -h, --help         this text\n",
    .main = demo_main,
};
