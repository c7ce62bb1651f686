/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold graph: compile an all-reduce over the first N devices of a topology, check it with the
 * invariant checker, print its summary (tasks by kind, bytes per directed device pair, critical path)
 * or the same as JSON, and export it with -o.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void print_json(FILE *f, const starfold_graph_stats_t *s, const starfold_link_bytes_t *pairs, size_t npairs)
{
    fprintf(f, "{\"tasks\": {");
    for (int k = 0; k < STARFOLD_TASK_KIND_COUNT; k++)
        fprintf(f, "%s\"%s\": %zu", k ? ", " : "", starfold_task_kind_name((starfold_task_kind_t)k), s->tasks_by_kind[k]);
    fprintf(f, "}, \"bytes_moved\": %llu, \"links\": [", (unsigned long long)s->bytes_moved);
    for (size_t i = 0; i < npairs; i++)
        fprintf(f, "%s{\"from\": %d, \"to\": %d, \"bytes\": %llu}", i ? ", " : "", pairs[i].from, pairs[i].to,
                (unsigned long long)pairs[i].bytes);
    fprintf(f, "], \"critical_path\": {\"tasks\": %zu, \"bytes\": %llu}}\n", s->critical_path_tasks,
            (unsigned long long)s->critical_path_bytes);
}

static void print_summary(FILE *f, starfold_topology_t topo, const char *algorithm, const cli_opts_t *o,
                          const char *spec, size_t nt, uint64_t bytes, const starfold_graph_stats_t *s,
                          const starfold_link_bytes_t *pairs, size_t npairs)
{
    char b1[32], b2[32];
    const int n = starfold_topology_num_devices(topo);
    char coll[64];
    fprintf(f, "Graph: %s, %s of %zu %s tensor%s (%s), %s per replica, over %d device%s of '%s'\n",
            algorithm, cli_collective_text(o, coll, sizeof coll), nt, starfold_dtype_name(o->dtype), nt == 1 ? "" : "s", spec,
            cli_format_bytes(b1, sizeof b1, bytes), n, n == 1 ? "" : "s", starfold_topology_name(topo));
    fprintf(f, "Tasks: %zu (", s->num_tasks);
    for (int k = 0; k < STARFOLD_TASK_KIND_COUNT; k++)
        fprintf(f, "%s%s %zu", k ? ", " : "", starfold_task_kind_name((starfold_task_kind_t)k), s->tasks_by_kind[k]);
    fprintf(f, "), %zu dependencies, %zu buffers, %s of temporaries\n", s->num_edges, s->num_buffers,
            cli_format_bytes(b1, sizeof b1, s->temp_bytes));
    fprintf(f, "Bytes moved between devices: %s (%llu B)\n", cli_format_bytes(b1, sizeof b1, s->bytes_moved),
            (unsigned long long)s->bytes_moved);
    if (npairs > 0) {
        int w = 4;
        for (int d = 0; d < n; d++) {
            const int len = (int)strlen(starfold_topology_device_name(topo, d));
            if (len > w) w = len;
        }
        fprintf(f, "  %-*s  %-*s  %12s  %-16s  %8s  %s\n", w, "from", w, "to", "bytes", "link", "GB/s",
                "time at line rate");
        for (size_t i = 0; i < npairs; i++) {
            starfold_link_t l;
            char link[32] = "(no direct link)", gbps[16] = "-", t[32] = "-";
            if (starfold_topology_best_link(topo, pairs[i].from, pairs[i].to, &l) == STARFOLD_OK) {
                snprintf(link, sizeof link, "%s x%d", starfold_link_kind_name(l.kind), l.lanes);
                snprintf(gbps, sizeof gbps, "%.1f", l.bandwidth_GBps);
                snprintf(t, sizeof t, "%.1f us", (double)pairs[i].bytes / (l.bandwidth_GBps * 1e3));
            }
            fprintf(f, "  %-*s  %-*s  %12s  %-16s  %8s  %s\n", w, starfold_topology_device_name(topo, pairs[i].from), w,
                    starfold_topology_device_name(topo, pairs[i].to), cli_format_bytes(b2, sizeof b2, pairs[i].bytes),
                    link, gbps, t);
        }
    }
    fprintf(f, "Critical path: %zu tasks, %s read along it\n", s->critical_path_tasks,
            cli_format_bytes(b1, sizeof b1, s->critical_path_bytes));
}

/*
 * --ranks N [--ranks-per-node K]: the topology a process group's graphs are compiled on, one device
 * per rank (starfold_topology_ranks()): ranks 0..K-1 on node 0, K..2K-1 on node 1, ... (shared-memory
 * links inside a node, network links between nodes); without K, one rank per node.
 */
static int ranks_topology(const cli_command_t *cmd, const cli_opts_t *o, starfold_topology_t *topo)
{
    int node_of[STARFOLD_MAX_DEVICES];
    for (int k = 0; k < o->ranks; k++) node_of[k] = o->ranks_per_node > 0 ? k / o->ranks_per_node : k;
    const starfold_status_t st = starfold_topology_ranks(o->ranks, node_of, NULL, NULL, topo);
    if (st != STARFOLD_OK) return cli_bad_value(cmd, st, "--ranks %d", o->ranks);
    return CLI_OK;
}

static int graph_main(const cli_command_t *cmd, int argc, char **argv)
{
    cli_opts_t o;
    int r = cli_parse(cmd, argc, argv, &o);
    if (r != CLI_OK) return r == CLI_HELP_DONE ? CLI_OK : r;
    if (o.output && (r = cli_check_output(cmd, "-o", o.output)) != CLI_OK) return r;
    const int dot_on_stdout = o.output && strcmp(o.output, "-") == 0;
    if (dot_on_stdout && o.json) return cli_usage_error(cmd, "-o - and --json both write to stdout: choose one");
    starfold_algo_options_t aopt;
    if ((r = cli_algo_options(cmd, &o, o.algorithm, &aopt)) != CLI_OK) return r;
    if (o.ranks > 0 && (o.given & (CLI_OPT(OPT_TOPOLOGY) | CLI_OPT(OPT_DEVICES))))
        return cli_usage_error(cmd, "--ranks compiles on the ranks' topology: it excludes %s",
                               (o.given & CLI_OPT(OPT_TOPOLOGY)) ? "--topology" : "-g/--devices");
    if ((o.given & CLI_OPT(OPT_RANKS_PER_NODE)) && o.ranks == 0)
        return cli_usage_error(cmd, "--ranks-per-node needs --ranks N");

    const char *spec = o.tensors ? o.tensors : "1MiB";
    starfold_tensor_desc_t *tensors = NULL;
    size_t nt = 0;
    if ((r = cli_parse_tensors(cmd, spec, o.dtype, &tensors, &nt)) != CLI_OK) return r;
    starfold_topology_t topo = NULL;
    if (o.ranks > 0) r = ranks_topology(cmd, &o, &topo);
    else r = cli_open_topology(cmd, &o, "dgx1-v100", &topo);
    if (r != CLI_OK) {
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
    starfold_graph_t g = NULL;
    starfold_link_bytes_t *pairs = NULL;
    size_t npairs = 0;
    starfold_graph_stats_t stats;
    starfold_status_t st = starfold_graph_compile(topo, o.algorithm, &desc, &aopt, &g);
    if (st != STARFOLD_OK) {
        /* The library refuses what the arguments asked for (an op for a dtype, a packing option). */
        r = st == STARFOLD_ERR_INVALID_ARGUMENT || st == STARFOLD_ERR_NOT_SUPPORTED || st == STARFOLD_ERR_NOT_FOUND
                ? cli_bad_value(cmd, st, "cannot compile %s", o.algorithm)
                : cli_fail(cmd, st, "cannot compile %s", o.algorithm);
        goto out;
    }
    if ((st = starfold_graph_check(g)) != STARFOLD_OK) {
        r = cli_fail(cmd, st, "the compiled graph fails the invariant checker");
        goto out;
    }
    if ((st = starfold_graph_stats(g, &stats)) != STARFOLD_OK || (st = starfold_graph_link_bytes(g, &pairs, &npairs)) != STARFOLD_OK) {
        r = cli_fail(cmd, st, "cannot summarise the graph");
        goto out;
    }
    /* --full beyond what Graphviz lays out: said before the tables, not after them. */
    if (o.traffic && (!o.output || dot_on_stdout)) {
        r = cli_usage_error(cmd, "--traffic draws a picture: give -o FILE.svg or FILE.png (a .dot file holds every task)");
        goto out;
    }
    if (o.full && o.output && !dot_on_stdout && stats.num_tasks > STARFOLD_DRAW_MAX_TASKS &&
        !(strlen(o.output) > 4 && !strcasecmp(o.output + strlen(o.output) - 4, ".dot"))) {
        r = cli_usage_error(cmd, "--full: %zu tasks, more than Graphviz lays out in reasonable time (%d); drop --full "
                            "for the summary, or write .dot", stats.num_tasks, STARFOLD_DRAW_MAX_TASKS);
        goto out;
    }
    FILE *info = dot_on_stdout ? stderr : stdout;
    if (o.json) print_json(stdout, &stats, pairs, npairs);
    else print_summary(info, topo, o.algorithm, &o, spec, nt, cli_tensors_bytes(tensors, nt), &stats, pairs, npairs);
    if (o.output) {
        fflush(stdout);
        st = dot_on_stdout ? starfold_graph_write_dot(g, "-")
                           : starfold_graph_render_mode(g, o.output, o.full      ? STARFOLD_DRAW_FULL
                                                                     : o.traffic ? STARFOLD_DRAW_TRAFFIC
                                                                                 : STARFOLD_DRAW_AUTO);
        if (st != STARFOLD_OK) {
            r = cli_fail(cmd, st, "cannot write %s", o.output);
            goto out;
        }
        if (!dot_on_stdout) fprintf(o.json ? stderr : stdout, "Written: %s\n", o.output);
    }
    r = CLI_OK;
out:
    free(pairs);
    starfold_graph_destroy(g);
    starfold_topology_destroy(topo);
    starfold_tools_tensors_free(tensors);
    return r;
}

const cli_command_t cli_cmd_graph = {
    .name = "graph",
    .summary = "compile an all-reduce into a task graph, check it, summarise it, draw it",
    .accepted = CLI_OPT(OPT_TOPOLOGY) | CLI_OPT(OPT_ALGORITHM) | CLI_OPT(OPT_OP) | CLI_OPT(OPT_DTYPE) |
                CLI_OPT(OPT_TENSORS) | CLI_OPT(OPT_DEVICES) | CLI_OPT(OPT_NUM_PACKS) | CLI_OPT(OPT_CHUNK_BYTES) |
                CLI_OPT(OPT_RINGS) | CLI_OPT(OPT_BYTES_PER_PACK) |
                CLI_OPT(OPT_OUTPUT) | CLI_OPT(OPT_JSON) | CLI_OPT(OPT_FULL) | CLI_OPT(OPT_TRAFFIC) |
                CLI_OPT(OPT_COLLECTIVE) | CLI_OPT(OPT_ROOT) | CLI_OPT(OPT_RANKS) | CLI_OPT(OPT_RANKS_PER_NODE),
    .usage =
        "Usage: starfold graph [--topology T] [--algorithm A] [--op OP] [-d|--dtype D] [--tensors SPEC]\n"
        "                      [--num-packs K | --bytes-per-pack B] [--chunk-bytes B] [--rings N]\n"
        "                      [-g|--devices N] [-o FILE [--full | --traffic]] [--json] [--collective C [--root D]]\n"
        "       starfold graph --ranks N [--ranks-per-node K] [--algorithm ring|hierarchical|...] [options above]\n"
        "\n"
        "Compiles an all-reduce of SPEC's tensors over the first N devices of a topology, runs the invariant\n"
        "checker, and prints the tasks by kind, the bytes moved per directed device pair (with the link and\n"
        "the time that many bytes take at its line rate) and the critical path. Needs no device.\n"
        "\n"
        "  --topology T        dgx1-v100 (default), dgx1-p100, pcie4, emulated, host, detect, or a DOT file\n"
        "  --algorithm A       hierarchical-copy (default), reduce-to-one, ... (listed below)\n"
        "  --op OP             sum (default), mean (or avg), min, max, prod\n"
        "  -d, --dtype D       float32 (default), float64, float16, bfloat16, int8, uint8, int16, uint16,\n"
        "                      int32, uint32, int64, uint64\n"
        "  --tensors SPEC      the tensors of each replica, default 1MiB: comma-separated [COUNTx]SIZE items\n"
        "                      such as 4x1MiB,10x4KiB,1000, or a model: resnet50, bert-base. SIZE is in bytes\n"
        "                      with an optional suffix K, M, G (or KiB, MiB, GiB): binary multiples, as\n"
        "                      nccl-tests reads sizes; it must be a multiple of the element size\n"
        "  --num-packs K       hierarchical-copy: concat-and-split into K packs per dtype (default 1,\n"
        "                      0 = every tensor on its own)\n"
        "  --bytes-per-pack B  hierarchical-copy: pack whole tensors in order, closing a pack once it\n"
        "                      holds more than B bytes (TensorFlow's bytes_per_pack); replaces --num-packs\n"
        "  --chunk-bytes B     ring: move each ring's share in rounds of chunks of at most B bytes (default\n"
        "                      2.5 MiB, at most 16 rounds); one-pass: B bytes of a tensor per task (default\n"
        "                      8 MiB)\n"
        "  --rings N           ring: use N edge-disjoint rings, each both ways (1-4; default up to 2)\n"
        "  -g, --devices N     use the first N devices of the topology (default: all)\n"
        "  --ranks N           instead of --topology: the graph across N MPI ranks, one device per rank\n"
        "                      (starfold_topology_ranks(): shared-memory links inside a node, network links\n"
        "                      between nodes), the one a process group's graph lowering (ring,\n"
        "                      halving-doubling, hierarchical, leader) compiles (starfold run --mpi); needs\n"
        "                      no MPI\n"
        "  --ranks-per-node K  with --ranks: ranks 0..K-1 are node 0, K..2K-1 node 1, ... (default 1)\n"
        "  -o, --output FILE   export the graph: .dot, .svg or .png from the extension; '-' = DOT on stdout\n"
        "                      (the summary then goes to stderr). Pictures have a title and a legend.\n"
        "                      A picture of more than 400 tasks, or 48 nodes in a row, is summarised:\n"
        "                      tasks of one kind on one device in one round are one node with their\n"
        "                      count, rounds folded past 64 nodes (Graphviz takes minutes over thousands\n"
        "                      of tasks); a .dot file always holds every task\n"
        "  --full              draw every task whatever the size (refused beyond 3000 tasks)\n"
        "  --traffic           draw the devices and the bytes between them instead of the tasks, at any\n"
        "                      size: one arrow per device pair, labelled with the bytes each way, coloured\n"
        "                      by the link, as wide as its share of the busiest pair; devices in order on a\n"
        "                      circle (the DGX-1 as its cube), so a ring shows as a cycle, trees as trees\n"
        "  --collective C      all-reduce (default), reduce (the result on --root only), broadcast (--root's\n"
        "                      tensors to every device) or all-gather (every device's tensors on every device)\n"
        "  --root D            the reduce's destination or the broadcast's source (default 0)\n"
        "  --json              print exactly {\"tasks\": {\"copy\": n, \"reduce\": n, \"scale\": n, \"pack\": n,\n"
        "                      \"unpack\": n}, \"bytes_moved\": N, \"links\": [{\"from\": a, \"to\": b, \"bytes\": n}, ...],\n"
        "                      \"critical_path\": {\"tasks\": n, \"bytes\": n}}; bytes_moved counts the bytes\n"
        "                      tasks read from other devices' buffers, links are directed device pairs\n"
        "                      (topology device numbers), the critical path is the longest dependency chain\n"
        "                      (tasks) and the heaviest one weighted by bytes read (bytes)\n"
        "  -h, --help          this text\n",
    .main = graph_main,
};
