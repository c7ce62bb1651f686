/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold simulate: the cost model's prediction for a graph `starfold graph` would compile (same
 * options): time, algbw, busbw and the bottleneck link. --algorithm all compares every algorithm,
 * one row each. Needs no device.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static void print_json(const char *algorithm, const starfold_prediction_t *p, starfold_topology_t topo)
{
    printf("{\"algorithm\": ");
    cli_json_string(stdout, algorithm);
    printf(", \"bytes\": %llu, \"time_us\": %.3f, \"algbw_GBps\": %.3f, \"busbw_GBps\": %.3f, \"bottleneck\": ",
           (unsigned long long)p->bytes, p->time_us, p->algbw_GBps, p->busbw_GBps);
    if (p->bottleneck_from < 0) {
        printf("null}\n");
        return;
    }
    printf("{\"from\": %d, \"to\": %d, \"from_name\": ", p->bottleneck_from, p->bottleneck_to);
    cli_json_string(stdout, starfold_topology_device_name(topo, p->bottleneck_from));
    printf(", \"to_name\": ");
    cli_json_string(stdout, starfold_topology_device_name(topo, p->bottleneck_to));
    printf(", \"kind\": \"%s\", \"GBps\": %.3f, \"bytes\": %llu, \"busy_us\": %.3f}}\n",
           starfold_link_kind_name(p->bottleneck_kind), p->bottleneck_GBps, (unsigned long long)p->bottleneck_bytes,
           p->bottleneck_busy_us);
}

static void print_row(const char *algorithm, const starfold_prediction_t *p, starfold_topology_t topo, size_t ntasks)
{
    char link[96] = "-";
    if (p->bottleneck_from >= 0)
        snprintf(link, sizeof link, "%s->%s %s %.0f GB/s, busy %.1f%%",
                 starfold_topology_device_name(topo, p->bottleneck_from), starfold_topology_device_name(topo, p->bottleneck_to),
                 starfold_link_kind_name(p->bottleneck_kind), p->bottleneck_GBps,
                 p->time_us > 0 ? 100.0 * p->bottleneck_busy_us / p->time_us : 0.0);
    printf("%-26s %8zu %12.1f %10.2f %10.2f  %s\n", algorithm, ntasks, p->time_us, p->algbw_GBps, p->busbw_GBps, link);
}

/*
 * --backward: the tensors are a model's gradients, layer by layer; the backward pass produces them in
 * reverse order, each layer taking a share of the compute time proportional to its gradient's size.
 * Buckets of consecutive gradients (in that reverse order) close once they hold --bucket-bytes, as
 * PyTorch DDP's do, and each is all-reduced by its own graph as soon as its last gradient is done.
 *
 *     backward:  [layer L-1][layer L-2] ... [layer 0]
 *     buckets:   [ bucket 0 (ready after L-1-k) ] [ bucket 1 ] ... [ last bucket: ready at the end ]
 */
static int simulate_backward(const cli_command_t *cmd, const cli_opts_t *o, const char *algorithm,
                             starfold_topology_t topo, const starfold_collective_desc_t *desc)
{
    const size_t L = desc->num_tensors;
    starfold_tensor_desc_t *rev = malloc(sizeof *rev * L);
    double *layer_us = malloc(sizeof *layer_us * L);
    starfold_graph_t *buckets = calloc(L, sizeof *buckets);
    int *ready = malloc(sizeof *ready * L);
    int nb = 0, r = CLI_OK;
    if (!rev || !layer_us || !buckets || !ready) {
        r = cli_fail(cmd, STARFOLD_ERR_OUT_OF_MEMORY, "out of memory for %zu layers", L);
        goto out;
    }
    uint64_t total = 0;
    for (size_t l = 0; l < L; l++) {
        rev[l] = desc->tensors[L - 1 - l];
        total += (uint64_t)rev[l].count * starfold_dtype_size(rev[l].dtype);
    }
    starfold_algo_options_t aopt;
    if ((r = cli_algo_options(cmd, o, algorithm, &aopt)) != CLI_OK) goto out;
    for (size_t l = 0; l < L;) {
        size_t e = l;
        uint64_t bytes = 0;
        while (e < L && bytes < o->bucket_bytes) bytes += (uint64_t)rev[e].count * starfold_dtype_size(rev[e].dtype), e++;
        starfold_collective_desc_t d = *desc;
        d.tensors = rev + l;
        d.num_tensors = e - l;
        starfold_status_t st = starfold_graph_compile(topo, algorithm, &d, &aopt, &buckets[nb]);
        if (st != STARFOLD_OK) {
            r = st == STARFOLD_ERR_INVALID_ARGUMENT || st == STARFOLD_ERR_NOT_SUPPORTED
                    ? cli_bad_value(cmd, st, "cannot compile %s", algorithm)
                    : cli_fail(cmd, st, "cannot compile %s", algorithm);
            goto out;
        }
        ready[nb++] = (int)(e - 1);
        l = e;
    }
    double compute = o->backward_us;
    starfold_backward_pass_t bp = { (int)L, layer_us, nb, buckets, ready };
    starfold_overlap_prediction_t p;
    starfold_status_t st = STARFOLD_OK;
    if (compute < 0) { /* balanced: as long as the reductions alone */
        for (size_t l = 0; l < L; l++) layer_us[l] = 0;
        st = starfold_simulate_backward_pass(&bp, NULL, &p);
        compute = p.reduce_us;
    }
    for (size_t l = 0; l < L; l++)
        layer_us[l] = total ? compute * (double)rev[l].count * (double)starfold_dtype_size(rev[l].dtype) / (double)total
                            : compute / (double)L;
    if (st == STARFOLD_OK) st = starfold_simulate_backward_pass(&bp, NULL, &p);
    if (st != STARFOLD_OK) {
        r = cli_fail(cmd, st, "cannot model the backward pass");
        goto out;
    }
    if (o->json) {
        printf("{\"algorithm\": ");
        cli_json_string(stdout, algorithm);
        printf(", \"layers\": %zu, \"buckets\": %d, \"bucket_bytes\": %llu, \"compute_us\": %.3f, \"reduce_us\": %.3f, "
               "\"step_us\": %.3f, \"vs_sum\": %.4f, \"vs_max\": %.4f}\n",
               L, nb, (unsigned long long)o->bucket_bytes, p.compute_us, p.reduce_us, p.step_us, p.vs_sum, p.vs_max);
    } else {
        char b[32];
        printf("Model: backward pass over %d devices of '%s', %zu layers (%s of gradients), %d buckets of %s, %s\n",
               desc->num_sources, starfold_topology_name(topo), L, cli_format_bytes(b, sizeof b, total), nb,
               cli_format_bytes((char[32]){ 0 }, 32, o->bucket_bytes), algorithm);
        printf("  compute only        %12.1f us%s\n", p.compute_us, o->backward_us < 0 ? "  (balanced: = reduce only)" : "");
        printf("  reduce only         %12.1f us\n", p.reduce_us);
        printf("  overlapped step     %12.1f us  = %.3f x (compute + reduce), %.3f x max(compute, reduce)\n", p.step_us,
               p.vs_sum, p.vs_max);
    }
out:
    for (int k = 0; k < nb; k++) starfold_graph_destroy(buckets[k]);
    free(rev);
    free(layer_us);
    free(buckets);
    free(ready);
    return r;
}

static int simulate_main(const cli_command_t *cmd, int argc, char **argv)
{
    cli_opts_t o;
    int r = cli_parse(cmd, argc, argv, &o);
    if (r != CLI_OK) return r == CLI_HELP_DONE ? CLI_OK : r;
    if ((o.given & CLI_OPT(OPT_BUCKET_BYTES)) && !(o.given & CLI_OPT(OPT_BACKWARD)))
        return cli_usage_error(cmd, "--bucket-bytes needs --backward");
    if ((o.given & CLI_OPT(OPT_BACKWARD)) && strcmp(o.algorithm, "all") == 0)
        return cli_usage_error(cmd, "--backward models one algorithm (auto picks one per bucket), not all");
    const int all = strcmp(o.algorithm, "all") == 0;
    const char *spec = o.tensors ? o.tensors : "1MiB";
    starfold_tensor_desc_t *tensors = NULL;
    size_t nt = 0;
    if ((r = cli_parse_tensors(cmd, spec, o.dtype, &tensors, &nt)) != CLI_OK) return r;
    starfold_topology_t topo = NULL;
    if ((r = cli_open_topology(cmd, &o, "dgx1-v100", &topo)) != CLI_OK) {
        starfold_tools_tensors_free(tensors);
        return r;
    }
    const int n = starfold_topology_num_devices(topo);
    int devices[STARFOLD_MAX_DEVICES];
    for (int d = 0; d < n; d++) devices[d] = d;
    starfold_collective_desc_t desc = {
        .kind = STARFOLD_COLL_REDUCE, .op = o.op, .num_sources = n, .sources = devices,
        .num_tensors = nt, .tensors = tensors,
    };
    cli_coll_t coll;
    if ((r = cli_collective_setup(cmd, &o, n, &coll, &desc)) != CLI_OK) {
        starfold_topology_destroy(topo);
        starfold_tools_tensors_free(tensors);
        return r;
    }
    if ((o.given & CLI_OPT(OPT_BACKWARD)) && o.collective != CLI_COLL_ALL_REDUCE) {
        r = cli_usage_error(cmd, "--backward models all-reduce buckets (drop --collective)");
        starfold_topology_destroy(topo);
        starfold_tools_tensors_free(tensors);
        return r;
    }
    if (o.given & CLI_OPT(OPT_BACKWARD)) {
        r = simulate_backward(cmd, &o, o.algorithm, topo, &desc);
        starfold_topology_destroy(topo);
        starfold_tools_tensors_free(tensors);
        return r;
    }
    if (!o.json) {
        char b[32];
        char c[64];
        printf("Model: %s of %s (%s), %d devices of '%s'; busbw = algbw x %s\n", cli_collective_text(&o, c, sizeof c),
               spec, cli_format_bytes(b, sizeof b, cli_tensors_bytes(tensors, nt)), n, starfold_topology_name(topo),
               o.collective == CLI_COLL_ALL_REDUCE ? "2(n-1)/n" : o.collective == CLI_COLL_ALL_GATHER ? "(n-1)/n" : "1");
        if (o.collective == CLI_COLL_ALL_GATHER)
            printf("(bytes: the gathered output's, n x a replica's; ring forwards each block around its rings, every\n"
                   " other algorithm copies each replica's tensors straight to every device, as TensorFlow does)\n");
        else if (o.collective != CLI_COLL_ALL_REDUCE)
            printf("(an algorithm without its own %s falls back to %s, as TensorFlow's cross-device ops do)\n",
                   o.collective == CLI_COLL_REDUCE ? "reduce" : "broadcast",
                   o.collective == CLI_COLL_REDUCE ? "reduce-to-one on the root" : "one copy per destination");
        printf("%-26s %8s %12s %10s %10s  %s\n", "algorithm", "tasks", "time (us)", "algbw GB/s", "busbw GB/s",
               "bottleneck link");
    }
    r = CLI_OK;
    for (int a = 0; a < starfold_algorithm_count() && r == CLI_OK; a++) {
        const char *name = all ? starfold_algorithm_name(a) : o.algorithm;
        starfold_algo_options_t aopt;
        if (all && (o.given & (CLI_OPT(OPT_NUM_PACKS) | CLI_OPT(OPT_BYTES_PER_PACK))) && !cli_algorithm_packs(name)) continue;
        if ((r = cli_algo_options(cmd, &o, name, &aopt)) != CLI_OK) break;
        starfold_graph_t g = NULL;
        starfold_prediction_t p;
        starfold_status_t st = starfold_graph_compile(topo, name, &desc, &aopt, &g);
        if (st == STARFOLD_ERR_NOT_SUPPORTED && all) { /* e.g. one-pass on devices with memories of their own */
            if (!o.json) printf("%-26s %8s  (%s)\n", name, "-", starfold_last_error());
            continue;
        }
        if (st == STARFOLD_OK) st = starfold_graph_simulate(g, NULL, &p);
        if (st != STARFOLD_OK) {
            r = st == STARFOLD_ERR_INVALID_ARGUMENT || st == STARFOLD_ERR_NOT_SUPPORTED
                    ? cli_bad_value(cmd, st, "cannot compile %s", name)
                    : cli_fail(cmd, st, "cannot model %s", name);
        } else if (o.json) {
            print_json(starfold_graph_algorithm(g), &p, topo);
        } else {
            print_row(starfold_graph_algorithm(g), &p, topo, starfold_graph_num_tasks(g));
        }
        fflush(stdout);
        starfold_graph_destroy(g);
        if (!all) break;
    }
    starfold_topology_destroy(topo);
    starfold_tools_tensors_free(tensors);
    return r;
}

const cli_command_t cli_cmd_simulate = {
    .name = "simulate",
    .summary = "predict an all-reduce's time, algbw, busbw and bottleneck link with the cost model",
    .accepted = CLI_OPT(OPT_TOPOLOGY) | CLI_OPT(OPT_ALGORITHM) | CLI_OPT(OPT_OP) | CLI_OPT(OPT_DTYPE) |
                CLI_OPT(OPT_TENSORS) | CLI_OPT(OPT_DEVICES) | CLI_OPT(OPT_NUM_PACKS) | CLI_OPT(OPT_CHUNK_BYTES) |
                CLI_OPT(OPT_RINGS) | CLI_OPT(OPT_BACKWARD) | CLI_OPT(OPT_BUCKET_BYTES) | CLI_OPT(OPT_BYTES_PER_PACK) |
                CLI_OPT(OPT_JSON) | CLI_OPT(OPT_COLLECTIVE) | CLI_OPT(OPT_ROOT),
    .allow_all = 1,
    .usage =
        "Usage: starfold simulate [--topology T] [--algorithm A|all] [--op OP] [-d|--dtype D] [--tensors SPEC]\n"
        "                         [--num-packs K | --bytes-per-pack B] [--chunk-bytes B] [--rings N]\n"
        "                         [-g|--devices N] [--backward US|balanced [--bucket-bytes B]] [--json]\n"
        "                         [--collective all-reduce|reduce|broadcast|all-gather [--root D]]\n"
        "\n"
        "Compiles the all-reduce `starfold graph` would (same options) and replays it in the cost model:\n"
        "transfers share each directed link (alpha + bytes / bandwidth), kernels run one at a time per\n"
        "device (StarPU's per-task overhead + bytes / memory bandwidth). Prints the predicted time, algbw,\n"
        "busbw (nccl-tests' definitions) and the link that carries the most load. Needs no device.\n"
        "\n"
        "  --algorithm A|all   one algorithm (default hierarchical-copy), or all of them, one row each\n"
        "  --collective C      all-reduce (default), reduce (to --root), broadcast (from --root) or all-gather;\n"
        "                      busbw = algbw for reduce and broadcast, algbw (n-1)/n for all-gather (whose\n"
        "                      bytes are the gathered output's), as nccl-tests counts them\n"
        "  --root D            the reduce's destination or the broadcast's source (default 0)\n"
        "  --json              one object per algorithm: {\"algorithm\", \"bytes\", \"time_us\", \"algbw_GBps\",\n"
        "                      \"busbw_GBps\", \"bottleneck\": {\"from\", \"to\", \"from_name\", \"to_name\", \"kind\",\n"
        "                      \"GBps\", \"bytes\", \"busy_us\"} or null}\n"
        "  --backward US|balanced   model a data-parallel backward pass instead: the tensors are the\n"
        "                      gradients of a model's layers, produced in reverse order over US microseconds\n"
        "                      of compute in all (each layer in proportion to its gradient's size;\n"
        "                      'balanced' = as long as the reductions alone), reduced in buckets as soon as\n"
        "                      they are complete; prints compute only, reduce only, the overlapped step and\n"
        "                      its ratios to compute + reduce and to max(compute, reduce); with --json\n"
        "                      {\"algorithm\", \"layers\", \"buckets\", \"bucket_bytes\", \"compute_us\",\n"
        "                      \"reduce_us\", \"step_us\", \"vs_sum\", \"vs_max\"}\n"
        "  --bucket-bytes B    with --backward: close a bucket once it holds B bytes (default 25M, as DDP)\n"
        "  other options       as for starfold graph (see starfold graph --help)\n"
        "  -h, --help          this text\n",
    .main = simulate_main,
};
