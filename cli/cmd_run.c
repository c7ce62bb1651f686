/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold run: execute one all-reduce on the devices present (cli/machine.c), verify every element of
 * every replica against a float64 host reference (cli/replicas.c), print the time.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * --trace FILE.svg: one more run, untimed, with StarPU's profiling on so that the picture shows the
 * waits for data too; verified like the others; its timeline drawn by starfold_request_trace_svg().
 */
static int write_trace(const cli_command_t *cmd, const cli_opts_t *o, cli_machine_t *m, starfold_graph_t g,
                       cli_replicas_t *rep)
{
    starfold_status_t st = cli_replicas_clear(rep);
    starfold_request_t req = NULL;
    starfold_context_set_profiling(m->ctx, 1);
    if (st == STARFOLD_OK) st = cli_replicas_submit(rep, g, &req);
    if (st == STARFOLD_OK) st = starfold_request_wait(req);
    starfold_context_set_profiling(m->ctx, 0);
    char title[256];
    snprintf(title, sizeof title, "%s on %s: %zu tasks", starfold_graph_algorithm(g), starfold_topology_name(m->topo),
             starfold_graph_num_tasks(g));
    if (st == STARFOLD_OK) st = starfold_request_trace_svg(req, m->ctx, title, o->trace);
    size_t ntasks = 0;
    if (st == STARFOLD_OK) st = starfold_request_timeline(req, NULL, 0, &ntasks);
    starfold_request_destroy(req);
    uint64_t wrong = 0, checked = 0;
    if (st == STARFOLD_OK) st = cli_replicas_verify(rep, &wrong, &checked);
    if (st != STARFOLD_OK) return cli_fail(cmd, st, "the traced run failed");
    if (wrong) {
        fprintf(stderr, "starfold run: %llu wrong elements in the traced run\n", (unsigned long long)wrong);
        return CLI_FAIL;
    }
    printf("Trace: %s (%zu tasks on their workers, one more run after the timed ones)\n", o->trace, ntasks);
    return CLI_OK;
}

/* ------------------------------------------------------------------------------------------------
 * starfold run
 */

static int run_main(const cli_command_t *cmd, int argc, char **argv)
{
    cli_opts_t o;
    int r = cli_parse(cmd, argc, argv, &o);
    if (r != CLI_OK) return r == CLI_HELP_DONE ? CLI_OK : r;
    if ((r = cli_mpi_check(cmd, &o)) != CLI_OK) return r;
    if (!(o.given & CLI_OPT(OPT_ITERS))) o.iters = 1;
    if (!(o.given & CLI_OPT(OPT_WARMUP))) o.warmup = 1; /* first-run costs (registration, kernels) untimed */
    if ((o.given & CLI_OPT(OPT_TENSORS)) && (o.given & CLI_OPT(OPT_MINBYTES)))
        return cli_usage_error(cmd, "--tensors and -b are exclusive (-b SIZE is one tensor of SIZE bytes)");
    if (o.trace && (!strrchr(o.trace, '.') || strcasecmp(strrchr(o.trace, '.'), ".svg") != 0))
        return cli_usage_error(cmd, "--trace %s: the timeline is an .svg file", o.trace);
    starfold_algo_options_t aopt;
    if ((r = cli_algo_options(cmd, &o, o.algorithm, &aopt)) != CLI_OK) return r;

    starfold_tensor_desc_t *tensors = NULL;
    size_t nt = 0;
    char spec[64];
    if (o.given & CLI_OPT(OPT_MINBYTES)) {
        const size_t es = starfold_dtype_size(o.dtype);
        if (o.min_bytes % es != 0)
            return cli_usage_error(cmd, "-b %llu: not a multiple of the %s element size (%zu bytes)",
                                   (unsigned long long)o.min_bytes, starfold_dtype_name(o.dtype), es);
        snprintf(spec, sizeof spec, "%llu", (unsigned long long)o.min_bytes);
    } else {
        snprintf(spec, sizeof spec, "%s", "1MiB");
    }
    const char *spec_text = o.tensors ? o.tensors : spec;
    /* A --root beyond -g is known now: said before any banner (the topology's size is checked below). */
    if ((o.given & CLI_OPT(OPT_DEVICES)) && o.root >= o.devices)
        return cli_usage_error(cmd, "--root %d: the collective runs on devices 0..%d", o.root, o.devices - 1);
    if ((r = cli_parse_tensors(cmd, spec_text, o.dtype, &tensors, &nt)) != CLI_OK) return r;
    if (o.mpi) { /* across the ranks of mpirun: cmd_mpi.c */
        r = cli_run_mpi(cmd, &o, tensors, nt, spec_text);
        starfold_tools_tensors_free(tensors);
        return r;
    }

    cli_machine_t m;
    cli_replicas_t rep;
    memset(&rep, 0, sizeof rep);
    starfold_graph_t g = NULL;
    if ((r = cli_machine_open(cmd, &o, stdout, &m)) != CLI_OK) {
        starfold_tools_tensors_free(tensors);
        return r;
    }
    printf("Devices: %s\n", m.description);
    /* "auto" chooses with the cost model: of these devices when the topology is theirs. */
    if (!strcasecmp(o.algorithm, "auto")) cli_machine_model(&o, &m, stdout);

    const int n = starfold_topology_num_devices(m.topo);
    int devices[STARFOLD_MAX_DEVICES];
    for (int d = 0; d < n; d++) devices[d] = d;
    starfold_collective_desc_t desc = {
        .kind = STARFOLD_COLL_REDUCE, .op = o.op, .num_sources = n, .sources = devices,
        .num_tensors = nt, .tensors = tensors,
    };
    cli_coll_t coll;
    if ((r = cli_collective_setup(cmd, &o, n, &coll, &desc)) != CLI_OK) goto out;
    starfold_status_t st = starfold_graph_compile(m.topo, o.algorithm, &desc, &aopt, &g);
    if (st != STARFOLD_OK) {
        r = st == STARFOLD_ERR_INVALID_ARGUMENT || st == STARFOLD_ERR_NOT_SUPPORTED
                ? cli_bad_value(cmd, st, "cannot compile %s", o.algorithm)
                : cli_fail(cmd, st, "cannot compile %s", o.algorithm);
        goto out;
    }
    starfold_graph_stats_t stats;
    if ((st = starfold_graph_check(g)) != STARFOLD_OK || (st = starfold_graph_stats(g, &stats)) != STARFOLD_OK) {
        r = cli_fail(cmd, st, "the compiled graph fails the invariant checker");
        goto out;
    }
    const uint64_t bytes = cli_tensors_bytes(tensors, nt), moved = cli_collective_bytes(&o, n, bytes);
    char b1[32], b2[32];
    char what[64];
    cli_collective_text(&o, what, sizeof what);
    what[0] = (char)toupper((unsigned char)what[0]);
    printf("%s of %zu %s tensor%s (%s), %s per replica, %d replica%s, %s\n", what, nt,
           starfold_dtype_name(o.dtype), nt == 1 ? "" : "s", spec_text, cli_format_bytes(b1, sizeof b1, bytes), n,
           n == 1 ? "" : "s", starfold_graph_algorithm(g)); /* "auto:<the one chosen>" for auto */
    printf("Graph: %zu tasks, %s moved between devices, critical path %zu tasks\n", stats.num_tasks,
           cli_format_bytes(b2, sizeof b2, stats.bytes_moved), stats.critical_path_tasks);
    fflush(stdout);

    if ((st = cli_replicas_create(m.ctx, n, tensors, nt, o.op, o.collective, o.root, &rep)) != STARFOLD_OK) {
        r = cli_fail(cmd, st, "cannot create the replicas");
        goto out;
    }
    double total = 0.0, best = INFINITY;
    uint64_t wrong = 0, checked = 0;
    for (int it = -o.warmup; it < o.iters; it++) { /* it < 0: warm-up, run and verified, not timed */
        if ((st = cli_replicas_clear(&rep)) != STARFOLD_OK) {
            r = cli_fail(cmd, st, "cannot clear the outputs");
            goto out;
        }
        starfold_request_t req = NULL;
        const double t0 = cli_now();
        st = cli_replicas_submit(&rep, g, &req);
        if (st == STARFOLD_OK) st = starfold_request_wait(req);
        const double dt = cli_now() - t0;
        starfold_request_destroy(req);
        if (st != STARFOLD_OK) {
            if (it < 0) r = cli_fail(cmd, st, "warm-up iteration %d failed", it + o.warmup + 1);
            else r = cli_fail(cmd, st, "iteration %d failed", it + 1);
            goto out;
        }
        if (it >= 0) {
            total += dt;
            if (dt < best) best = dt;
        }
        uint64_t w = 0, c = 0;
        if ((st = cli_replicas_verify(&rep, &w, &c)) != STARFOLD_OK) {
            r = cli_fail(cmd, st, "cannot read the outputs back");
            goto out;
        }
        wrong += w;
        checked += c;
    }
    const double mean = total / o.iters, algbw = mean > 0 ? (double)moved / mean / 1e9 : 0.0;
    printf("Time: %.3f ms per %s (mean of %d after %d warm-up, best %.3f ms), algbw %.3f GB/s, busbw %.3f GB/s%s\n", mean * 1e3,
           o.collective == CLI_COLL_REDUCE       ? "reduce"
           : o.collective == CLI_COLL_BROADCAST  ? "broadcast"
           : o.collective == CLI_COLL_ALL_GATHER ? "all-gather"
                                                 : "all-reduce",
           o.iters, o.warmup, best * 1e3, algbw, algbw * cli_busbw_factor(&o, n),
           m.emulated ? " (emulated devices: CPU contention, not interconnect speed)" : "");
    if (o.collective == CLI_COLL_REDUCE)
        printf("Verified: %llu of %llu elements right on the root, device %d%s\n", (unsigned long long)(checked - wrong),
               (unsigned long long)checked, o.root, o.iters + o.warmup > 1 ? ", over every iteration" : "");
    else printf("Verified: %llu of %llu elements right on %s %d replica%s%s\n", (unsigned long long)(checked - wrong),
           (unsigned long long)checked, n == 1 ? "its" : "all", n, n == 1 ? "" : "s",
           o.iters + o.warmup > 1 ? " over every iteration" : "");
    if (wrong) {
        fflush(stdout);
        fprintf(stderr, "starfold run: %llu wrong elements\n", (unsigned long long)wrong);
        r = CLI_FAIL;
    } else {
        r = o.trace ? write_trace(cmd, &o, &m, g, &rep) : CLI_OK;
    }
out:
    cli_replicas_destroy(&rep);
    starfold_graph_destroy(g);
    cli_machine_close(&m);
    starfold_tools_tensors_free(tensors);
    return r;
}

const cli_command_t cli_cmd_run = {
    .name = "run",
    .summary = "run an all-reduce on the devices present, verify every replica, print the time",
    .accepted = CLI_OPT(OPT_TOPOLOGY) | CLI_OPT(OPT_ALGORITHM) | CLI_OPT(OPT_OP) | CLI_OPT(OPT_DTYPE) |
                CLI_OPT(OPT_TENSORS) | CLI_OPT(OPT_MINBYTES) | CLI_OPT(OPT_DEVICES) | CLI_OPT(OPT_NUM_PACKS) | CLI_OPT(OPT_CHUNK_BYTES) |
                CLI_OPT(OPT_RINGS) |
                CLI_OPT(OPT_BYTES_PER_PACK) | CLI_OPT(OPT_ITERS) | CLI_OPT(OPT_WARMUP) | CLI_OPT(OPT_EMULATED) |
                CLI_OPT(OPT_TRACE) | CLI_OPT(OPT_COLLECTIVE) | CLI_OPT(OPT_ROOT) | CLI_OPT(OPT_MPI) |
                CLI_OPT(OPT_RANKS_PER_NODE) | CLI_OPT(OPT_LOWERING) | CLI_OPT(OPT_TIMEOUT),
    .usage =
        "Usage: starfold run [--topology T] [--algorithm A] [--op OP] [-d|--dtype D] [--tensors SPEC | -b SIZE]\n"
        "                    [-g|--devices N] [--num-packs K | --bytes-per-pack B] [-n|--iters I] [-w|--warmup N] [--emulated]\n"
        "                    [--trace FILE.svg] [--collective all-reduce|reduce|broadcast|all-gather [--root D]]\n"
        "       mpirun -np N starfold run --mpi [--ranks-per-node K] [--lowering L] [--timeout S] [options above]\n"
        "\n"
        "Runs an all-reduce on StarPU's devices, checks every element of every replica against a float64\n"
        "host reference and prints the time. Exits 0 only when every element is right.\n"
        "\n"
        "Devices: CUDA workers, else OpenCL, else CPU workers, as StarPU finds them. When StarPU is not\n"
        "configured (no STARPU_NCPU, STARPU_NOPENCL, STARPU_NCUDA, STARPU_OPENCL_ON_CPUS) and the machine has\n"
        "no accelerator, the emulated 8-device box is used and said so: 8 OpenCL devices on the CPU (POCL),\n"
        "each with its own memory node; StarPU's calibration and POCL's kernels are cached under\n"
        "$STARFOLD_CACHE_DIR (default ~/.cache/starfold).\n"
        "\n"
        "  --topology T      compile for this topology (see starfold topo) and run on its device count;\n"
        "                    'host' runs on StarPU's CPU workers (one memory node). Default: the emulated\n"
        "                    box's table on the emulated box, else the workers as StarPU measured them\n"
        "  --emulated        force the emulated 8-device box\n"
        "  -g, --devices N   use the first N devices\n"
        "  --algorithm A     hierarchical-copy (default), reduce-to-one, ... (listed below)\n"
        "  --op OP           sum (default), mean (or avg), min, max, prod\n"
        "  -d, --dtype D     float32 (default), float64, float16, bfloat16, int8, uint8, int16, uint16,\n"
        "                    int32, uint32, int64, uint64\n"
        "  --tensors SPEC    the tensors of each replica (see starfold graph --help), default 1MiB\n"
        "  -b SIZE           one tensor of SIZE bytes (K, M, G suffixes: binary multiples)\n"
        "  --num-packs K, --bytes-per-pack B   hierarchical-copy's packing (see starfold graph --help)\n"
        "  --chunk-bytes B, --rings N   ring and one-pass tuning (see starfold graph --help)\n"
        "  -n, --iters I     run I times (outputs cleared and verified each time), default 1\n"
        "  -w, --warmup N    N untimed runs first (verified too), default 1\n"
        "  --collective C    all-reduce (default); reduce: every device's tensors reduced onto --root only;\n"
        "                    broadcast: --root's tensors copied to every device (verified against its values);\n"
        "                    all-gather: every device's tensors concatenated, device order, on every device\n"
        "                    (algbw counts the gathered bytes, busbw = algbw (n-1)/n, as all_gather_perf)\n"
        "  --root D          the reduce's destination or the broadcast's source (default 0)\n"
        "  --trace FILE.svg  after the timed runs, one more drawn as a timeline: a row per StarPU worker,\n"
        "                    each task a bar coloured by kind, the waits for data (transfers) before it\n"
        "  --mpi             across the ranks of mpirun (needs a build with MPI): every rank opens its devices\n"
        "                    as above, the ranks form a process group and all-reduce the tensors of every\n"
        "                    replica of every rank (starfold_group_all_reduce()); replica values depend on the\n"
        "                    global replica id (the rank's offset + its device), every rank checks its outputs\n"
        "                    against the reduction over all replicas; rank 0 prints the result (ranks, nodes,\n"
        "                    devices, lowering, time as the max over ranks, wrong elements over all ranks).\n"
        "                    --collective all-gather: each rank's spec (one dtype) as one vector gathered\n"
        "                    on every rank (starfold_group_all_gather()), checked everywhere;\n"
        "                    --collective broadcast [--root R]: rank R's tensors into every device of every\n"
        "                    rank (starfold_group_broadcast(), MPI_Ibcast), busbw = algbw. No --algorithm,\n"
        "                    other collectives, --trace or packing options\n"
        "  --ranks-per-node K  with --mpi: ranks 0..K-1 are node 0, K..2K-1 node 1, ... (default: the ranks\n"
        "                    that share memory are one node)\n"
        "  --lowering L      with --mpi: how the all-reduce crosses ranks: auto (default), mpi, ring,\n"
        "                    halving-doubling, hierarchical, leader (starfold_group_set_lowering())\n"
        "  --timeout S       with --mpi: a rank that does not start, join or finish a collective in S seconds\n"
        "                    fails every rank that waits, which then end the job (default: wait; a rank\n"
        "                    silent for 60 s is named on stderr either way). Every rank runs the same\n"
        "                    command: ranks started with different ones are refused before anything runs\n"
        "  -h, --help        this text\n",
    .main = run_main,
};
