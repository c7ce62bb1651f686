/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold topo: the devices and links of a topology as tables (or JSON), and drawn with -o.
 */
#include "cli.h"

#include <string.h>

static void print_json(FILE *f, starfold_topology_t t)
{
    fprintf(f, "{\"name\": ");
    cli_json_string(f, starfold_topology_name(t));
    fprintf(f, ", \"devices\": [");
    for (int d = 0; d < starfold_topology_num_devices(t); d++) {
        fprintf(f, "%s{\"id\": %d, \"name\": ", d ? ", " : "", d);
        cli_json_string(f, starfold_topology_device_name(t, d));
        fprintf(f, ", \"kind\": \"%s\", \"socket\": %d}",
                starfold_topology_device_kind(t, d) == STARFOLD_DEVICE_CPU ? "cpu" : "gpu",
                starfold_topology_device_socket(t, d));
    }
    fprintf(f, "], \"links\": [");
    for (int k = 0; k < starfold_topology_num_links(t); k++) {
        starfold_link_t l;
        if (starfold_topology_link(t, k, &l) != STARFOLD_OK) continue;
        fprintf(f, "%s{\"a\": %d, \"b\": %d, \"kind\": \"%s\", \"lanes\": %d, \"bandwidth_GBps\": %.6g, \"latency_us\": %.6g}",
                k ? ", " : "", l.a, l.b, starfold_link_kind_name(l.kind), l.lanes, l.bandwidth_GBps, l.latency_us);
    }
    fprintf(f, "]}\n");
}

static void print_tables(FILE *f, starfold_topology_t t)
{
    const int n = starfold_topology_num_devices(t), nl = starfold_topology_num_links(t);
    int w = 4;
    for (int d = 0; d < n; d++) {
        const int len = (int)strlen(starfold_topology_device_name(t, d));
        if (len > w) w = len;
    }
    fprintf(f, "Topology '%s': %d device%s, %d link%s\n\n", starfold_topology_name(t), n, n == 1 ? "" : "s", nl,
            nl == 1 ? "" : "s");
    fprintf(f, "Devices\n  %3s  %-*s  %-4s  %s\n", "id", w, "name", "kind", "socket");
    for (int d = 0; d < n; d++) {
        const int socket = starfold_topology_device_socket(t, d);
        char sock[16];
        if (socket >= 0) snprintf(sock, sizeof sock, "%d", socket);
        else snprintf(sock, sizeof sock, "-");
        fprintf(f, "  %3d  %-*s  %-4s  %s\n", d, w, starfold_topology_device_name(t, d),
                starfold_topology_device_kind(t, d) == STARFOLD_DEVICE_CPU ? "cpu" : "gpu", sock);
    }
    fprintf(f, "\nLinks (bandwidth per direction, all lanes together; GB/s = 1e9 B/s)\n");
    fprintf(f, "  %-*s  %-*s  %-12s  %5s  %8s  %10s\n", w, "a", w, "b", "kind", "lanes", "GB/s", "latency_us");
    for (int k = 0; k < nl; k++) {
        starfold_link_t l;
        if (starfold_topology_link(t, k, &l) != STARFOLD_OK) continue;
        fprintf(f, "  %-*s  %-*s  %-12s  %5d  %8.2f  %10.2f\n", w, starfold_topology_device_name(t, l.a), w,
                starfold_topology_device_name(t, l.b), starfold_link_kind_name(l.kind), l.lanes, l.bandwidth_GBps,
                l.latency_us);
    }
}

/* --ranks N: the topology of N MPI ranks, one device per rank, K consecutive ranks per node. */
static int open_ranks(const cli_command_t *cmd, const cli_opts_t *o, starfold_topology_t *t)
{
    const uint64_t rank_opts = CLI_OPT(OPT_RANKS_PER_NODE) | CLI_OPT(OPT_NETWORK_BANDWIDTH) | CLI_OPT(OPT_NETWORK_LATENCY);
    if (!(o->given & CLI_OPT(OPT_RANKS))) {
        if (o->given & rank_opts)
            return cli_usage_error(cmd, "--ranks-per-node, --network-bandwidth and --network-latency go with --ranks N");
        return -1; /* not a ranks topology */
    }
    if (o->given & (CLI_OPT(OPT_TOPOLOGY) | CLI_OPT(OPT_DEVICES)))
        return cli_usage_error(cmd, "--ranks and --topology/--devices are exclusive (--ranks N is the topology)");
    int node_of[STARFOLD_MAX_DEVICES];
    const int k = o->ranks_per_node > 0 ? o->ranks_per_node : 1;
    for (int r = 0; r < o->ranks; r++) node_of[r] = r / k;
    starfold_link_t net = { 0, 0, STARFOLD_LINK_NETWORK, 1, 12.5, 2.0 }; /* starfold_topology_ranks()'s default */
    if (o->given & CLI_OPT(OPT_NETWORK_BANDWIDTH)) net.bandwidth_GBps = o->network_GBps;
    if (o->given & CLI_OPT(OPT_NETWORK_LATENCY)) net.latency_us = o->network_us;
    starfold_status_t st = starfold_topology_ranks(o->ranks, node_of, NULL, &net, t);
    return st == STARFOLD_OK ? CLI_OK : cli_fail(cmd, st, "cannot make the topology of %d ranks", o->ranks);
}

static int topo_main(const cli_command_t *cmd, int argc, char **argv)
{
    cli_opts_t o;
    int r = cli_parse(cmd, argc, argv, &o);
    if (r != CLI_OK) return r == CLI_HELP_DONE ? CLI_OK : r;
    if (o.output && (r = cli_check_output(cmd, "-o", o.output)) != CLI_OK) return r;
    if (o.output && strcmp(o.output, "-") == 0 && o.json)
        return cli_usage_error(cmd, "-o - and --json both write to stdout: choose one");

    starfold_topology_t t = NULL;
    if ((r = open_ranks(cmd, &o, &t)) == -1) r = cli_open_topology(cmd, &o, "dgx1-v100", &t);
    if (r != CLI_OK) return r;
    const int dot_on_stdout = o.output && strcmp(o.output, "-") == 0;
    /* With the DOT text on stdout, the tables go to stderr so the two never mix. */
    FILE *info = dot_on_stdout ? stderr : stdout;
    if (o.json) print_json(stdout, t);
    else print_tables(info, t);
    if (o.output) {
        fflush(stdout);
        starfold_status_t st = dot_on_stdout ? starfold_topology_write_dot(t, "-") : starfold_topology_render(t, o.output);
        if (st != STARFOLD_OK) {
            r = cli_fail(cmd, st, "cannot write %s", o.output);
        } else if (!dot_on_stdout) {
            fprintf(o.json ? stderr : stdout, "%sWritten: %s\n", o.json ? "" : "\n", o.output);
        }
    }
    starfold_topology_destroy(t);
    return r;
}

const cli_command_t cli_cmd_topo = {
    .name = "topo",
    .summary = "show a topology's devices and links, draw it (-o FILE.dot|svg|png)",
    .accepted = CLI_OPT(OPT_TOPOLOGY) | CLI_OPT(OPT_DEVICES) | CLI_OPT(OPT_OUTPUT) | CLI_OPT(OPT_JSON) |
                CLI_OPT(OPT_RANKS) | CLI_OPT(OPT_RANKS_PER_NODE) | CLI_OPT(OPT_NETWORK_BANDWIDTH) |
                CLI_OPT(OPT_NETWORK_LATENCY),
    .usage =
        "Usage: starfold topo [--topology T] [-g|--devices N] [-o FILE.dot|.svg|.png|-] [--json]\n"
        "       starfold topo --ranks N [--ranks-per-node K] [--network-bandwidth GBps] [--network-latency US]\n"
        "                     [-o FILE] [--json]\n"
        "\n"
        "Prints the devices and the links of a topology: kind (nvlink, pcie, inter-socket, host), lanes,\n"
        "bandwidth per direction in GB/s (1e9 B/s) and latency in microseconds.\n"
        "\n"
        "  --topology T      dgx1-v100 (default), dgx1-p100, pcie4, emulated, host, detect (this machine,\n"
        "                    through hwloc), or a Graphviz DOT file (format: graphs/README.md)\n"
        "  -g, --devices N   keep the first N devices and the links among them\n"
        "  -o, --output FILE draw it; the format comes from the extension: .dot (the DOT text that\n"
        "                    --topology reads back), .svg, .png; '-' writes DOT on stdout\n"
        "  --ranks N         instead of --topology: the topology of N MPI ranks, one device per rank, that\n"
        "                    graphs across ranks are compiled on (starfold_topology_ranks(); no MPI needed):\n"
        "                    shm links inside a node (25 GB/s, 0.5 us), network links between nodes\n"
        "  --ranks-per-node K  K consecutive ranks per node (default 1); drawn as one box per node\n"
        "  --network-bandwidth GBps, --network-latency US\n"
        "                    the network links' (default 12.5 GB/s, 2 us; a process group measures them)\n"
        "  --json            print {\"name\", \"devices\": [{\"id\", \"name\", \"kind\", \"socket\"}],\n"
        "                    \"links\": [{\"a\", \"b\", \"kind\", \"lanes\", \"bandwidth_GBps\", \"latency_us\"}]}\n"
        "  -h, --help        this text\n",
    .main = topo_main,
};
