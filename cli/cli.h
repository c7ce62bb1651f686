/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The starfold command: shared declarations of its files.
 *
 *     main.c       dispatch: `starfold [--help | --version] COMMAND [OPTIONS]`
 *     options.c    one option table for every command, parsing and checking of values, messages
 *     cmd_topo.c   starfold topo      devices and links of a topology, drawn with -o
 *     cmd_graph.c  starfold graph     compile, check and export a reduction graph
 *     cmd_simulate.c starfold simulate the cost model's prediction for such a graph
 *     machine.c    the devices a command runs on (cli_machine_*), for run, bench, demo and --mpi
 *     replicas.c   the replicas it reduces and their verification (cli_replicas_*, cli_tensors_*)
 *     cmd_run.c    starfold run       execute a reduction and verify it
 *     cmd_bench.c  starfold bench     sweep in the style of nccl-tests' all_reduce_perf, with baselines
 *     cmd_demo.c   starfold demo      what `./quickstart demo` runs
 *     cmd_mpi.c    run --mpi, bench --mpi: across the ranks of mpirun (refused without MPI)
 *
 * Only the public API (<starfold.h>) is used. Exit statuses: 0 success, 1 failure (a library error,
 * wrong results), 2 bad arguments (a one-line reason on stderr).
 */
#ifndef STARFOLD_CLI_H
#define STARFOLD_CLI_H

#include <stdint.h>
#include <stdio.h>

#include <starfold.h>

#include "tools.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };
/* cli_parse() result when --help was given and printed: the command exits 0 at once. */
#define CLI_HELP_DONE (-1)

/* Every option of every command; a command accepts a subset (a mask of CLI_OPT() bits). */
typedef enum cli_opt_id {
    OPT_TOPOLOGY = 0,
    OPT_ALGORITHM,
    OPT_OP,
    OPT_DTYPE,
    OPT_TENSORS,
    OPT_DEVICES,
    OPT_NUM_PACKS,
    OPT_BYTES_PER_PACK,
    OPT_OUTPUT,
    OPT_JSON,
    OPT_CSV,
    OPT_MINBYTES,
    OPT_MAXBYTES,
    OPT_STEPFACTOR,
    OPT_STEPBYTES,
    OPT_ITERS,
    OPT_WARMUP,
    OPT_CHECK,
    OPT_PLOT,
    OPT_EMULATED,
    OPT_OUT_DIR,
    OPT_BASELINES,
    OPT_CHUNK_BYTES,
    OPT_RINGS,
    OPT_BACKWARD,
    OPT_BUCKET_BYTES,
    OPT_MODEL,
    OPT_VIEWS,
    OPT_PERSISTENT,
    OPT_TRACE,
    OPT_FULL,
    OPT_TRAFFIC,
    OPT_COLLECTIVE,
    OPT_ROOT,
    OPT_RANKS,
    OPT_RANKS_PER_NODE,
    OPT_NETWORK_BANDWIDTH,
    OPT_NETWORK_LATENCY,
    OPT_MPI,
    OPT_LOWERING,
    OPT_TIMEOUT,
    OPT_COUNT
} cli_opt_id_t;
#define CLI_OPT(id) ((uint64_t)1 << (id))

/* A command: its name, the options it accepts, its --help text and its entry point. */
typedef struct cli_command {
    const char *name;
    const char *summary;   /* one line, for `starfold --help` */
    uint64_t accepted;     /* CLI_OPT() bits */
    int allow_all;         /* "--algorithm all", "--op all", "--dtype all" */
    const char *usage;     /* the full --help text */
    int (*main)(const struct cli_command *cmd, int argc, char **argv);
} cli_command_t;

extern const cli_command_t cli_cmd_topo, cli_cmd_graph, cli_cmd_simulate, cli_cmd_run, cli_cmd_bench, cli_cmd_demo;

/* Parsed options; a field is meaningful when its bit is in `given`, else it holds the default. */
typedef struct cli_opts {
    uint64_t given;             /* CLI_OPT() bits of the options present */
    const char *topology;       /* --topology: NULL = the command's default */
    const char *algorithm;      /* --algorithm: "hierarchical-copy" by default; "all" (bench) */
    starfold_op_t op;           /* --op, default sum */
    int all_ops;                /* --op all (bench) */
    starfold_dtype_t dtype;     /* -d/--dtype, default float32 */
    int all_dtypes;             /* --dtype all (bench) */
    const char *tensors;        /* --tensors SPEC */
    int devices;                /* -g/--devices N, 0 = all of the topology or machine */
    int num_packs;              /* --num-packs, default 1 (the library's default) */
    uint64_t bytes_per_pack;    /* --bytes-per-pack */
    const char *output;         /* -o/--output FILE */
    int json, csv;              /* --json, --csv */
    uint64_t min_bytes;         /* -b */
    uint64_t max_bytes;         /* -e */
    uint64_t step_bytes;        /* -i */
    unsigned step_factor;       /* -f, 0 = use step_bytes */
    int iters;                  /* -n */
    int warmup;                 /* -w */
    int check;                  /* -c 0|1 */
    const char *plot;           /* --plot FILE.svg */
    const char *trace;          /* --trace FILE.svg (run) */
    int full;                   /* --full (graph): draw every task, however many */
    int traffic;                /* --traffic (graph): draw the traffic between devices */
    int collective;             /* --collective: a cli_collective_t, all-reduce by default */
    int root;                   /* --root D: the reduce's destination, the broadcast's source (default 0) */
    int emulated;               /* --emulated */
    const char *out_dir;        /* --out DIR */
    int baselines;              /* --baselines 0|1 */
    uint64_t chunk_bytes;       /* --chunk-bytes (ring, one-pass), 0 = automatic */
    int num_rings;              /* --rings (ring), 0 = automatic */
    double backward_us;         /* --backward US (simulate): the backward pass's compute; < 0 = "balanced" */
    uint64_t bucket_bytes;      /* --bucket-bytes (simulate --backward), default 25 MiB */
    int model;                  /* --model (bench): the cost model's prediction beside each measured row */
    int views;                  /* --views (bench): each replica's tensors as views of one vector */
    int persistent;             /* --persistent (bench): each graph bound once, started every iteration */
    int ranks;                  /* --ranks N (topo, graph): the topology of N MPI ranks, one device each */
    int ranks_per_node;         /* --ranks-per-node K (topo/graph --ranks: default 1; run/bench --mpi: 0 = shared memory) */
    double network_GBps;        /* --network-bandwidth GBps (topo --ranks), 0 = the default */
    double network_us;          /* --network-latency us (topo --ranks), < 0 = the default */
    int mpi;                    /* --mpi (run, bench): across the ranks of mpirun (cmd_mpi.c) */
    const char *lowering;       /* --lowering (run/bench --mpi): auto (default), mpi, ring, halving-doubling */
    double timeout_s;           /* --timeout SECONDS (run/bench --mpi): the group's timeout_seconds, 0 = none */
} cli_opts_t;

/*
 * Parses argv[1..argc) (argv[0] is the command name) into @o, filled with defaults first.
 * Returns CLI_OK, CLI_HELP_DONE (usage printed on stdout) or CLI_USAGE (reason printed on stderr).
 */
int cli_parse(const cli_command_t *cmd, int argc, char **argv, cli_opts_t *o);

/* --collective: what the commands compile and run. */
typedef enum cli_collective {
    CLI_COLL_ALL_REDUCE = 0, /* every device's tensors reduced, the result on every device */
    CLI_COLL_REDUCE,         /* ... the result on --root only */
    CLI_COLL_BROADCAST,      /* --root's tensors copied to every device */
    CLI_COLL_ALL_GATHER      /* every device's tensors concatenated, device order, on every device */
} cli_collective_t;

/* Devices of a collective over devices 0..n-1 (desc points into it). */
typedef struct cli_coll {
    int src[STARFOLD_MAX_DEVICES], dst[STARFOLD_MAX_DEVICES];
} cli_coll_t;

/*
 * Fills @desc's kind, sources and destinations for o->collective over devices 0..@n-1 (the arrays in
 * @c). A --root outside them is a bad argument (exit 2), said alone.
 */
int cli_collective_setup(const cli_command_t *cmd, const cli_opts_t *o, int n, cli_coll_t *c,
                         starfold_collective_desc_t *desc);
/* "all-reduce (sum)", "reduce (sum) to device 2", "broadcast from device 2": what a run line says. */
const char *cli_collective_text(const cli_opts_t *o, char *buf, size_t len);
/* nccl-tests' busbw factor: 2(n-1)/n for all-reduce, 1 for reduce and broadcast. */
double cli_busbw_factor(const cli_opts_t *o, int n);

/* The long name of option @id, without "--". */
const char *cli_option_name(cli_opt_id_t id);

/* Prints "starfold CMD: <reason>" on one line of stderr; returns CLI_USAGE. */
int cli_usage_error(const cli_command_t *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "starfold CMD: <what>: <status> (<detail>)" on stderr; returns CLI_FAIL. */
int cli_fail(const cli_command_t *cmd, starfold_status_t st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Same message, CLI_USAGE: for library refusals caused by an argument (unknown topology, bad spec). */
int cli_bad_value(const cli_command_t *cmd, starfold_status_t st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Opens --topology (or @default_spec when not given; NULL = none) and keeps its first --devices
 * devices. *topology is NULL when neither was given. Errors are bad arguments (exit 2).
 */
int cli_open_topology(const cli_command_t *cmd, const cli_opts_t *o, const char *default_spec,
                      starfold_topology_t *topology);

/* Parses --tensors (or @default_spec) for @dtype. Errors are bad arguments (exit 2). */
int cli_parse_tensors(const cli_command_t *cmd, const char *spec, starfold_dtype_t dtype,
                      starfold_tensor_desc_t **tensors, size_t *count);

/* Whether @algorithm packs tensors (accepts --num-packs / --bytes-per-pack). */
int cli_algorithm_packs(const char *algorithm);

/* Applies --chunk-bytes and --rings (pipelining granularity and ring count; algorithms that have no
 * use for them ignore them). */
void cli_algo_tuning(const cli_opts_t *o, starfold_algo_options_t *opt);

/* Validates the packing options for @algorithm (exit 2 when it cannot use them) and fills @opt. */
int cli_algo_options(const cli_command_t *cmd, const cli_opts_t *o, const char *algorithm,
                     starfold_algo_options_t *opt);

/* Checks an output file name's extension against .dot/.svg/.png ("-" = DOT on stdout). */
int cli_check_output(const cli_command_t *cmd, const char *option, const char *path);

/* "4.00 MiB", "1000 B": human-readable bytes into @buf. */
const char *cli_format_bytes(char *buf, size_t len, uint64_t bytes);

/* Writes @s as a JSON string (quotes and escapes included). */
void cli_json_string(FILE *f, const char *s);

/* Monotonic seconds. */
double cli_now(void);

/* ------------------------------------------------------------------------------------------------
 * Machines (machine.c) and replicas (replicas.c), shared by run, bench, demo and --mpi.
 */

/* The devices a command runs on: a StarPU context and the topology its graphs are compiled for. */
typedef struct cli_machine {
    starfold_context_t ctx;
    starfold_topology_t topo;  /* device i of the topology is logical device i of the context */
    int num_devices;
    int emulated;              /* the emulated 8-device box was set up */
    char description[160];     /* "8 OpenCL devices (the emulated box), topology 'emulated'" */
} cli_machine_t;

/*
 * Chooses the devices from the options (--topology, --devices, --emulated) and the environment, sets
 * StarPU's environment when it uses the emulated box or the host's CPU workers (saying so on @info),
 * starts StarPU through a context and settles the topology. Returns CLI_OK, CLI_USAGE or CLI_FAIL
 * (message printed).
 */
int cli_machine_open(const cli_command_t *cmd, const cli_opts_t *o, FILE *info, cli_machine_t *m);
void cli_machine_close(cli_machine_t *m);

/*
 * Settles what the cost model describes (model.c): on the machine's own topology, calibrates the
 * context (once per machine) and attaches the figures to m->topo, so --model and "auto" predict these
 * devices; on a topology the user named, says that the model describes it, not this machine.
 */
void cli_machine_model(const cli_opts_t *o, cli_machine_t *m, FILE *info);

/*
 * One input and one output vector per replica and tensor, on the replica's device; or, bucketed, one
 * input and one output vector per replica holding every tensor one after another (tensors of one
 * dtype), each tensor a view (starfold_submit_views()).
 */
typedef struct cli_replicas {
    starfold_context_t ctx;
    int n;                                 /* replicas = devices 0..n-1 */
    size_t nt;                             /* tensors per replica */
    const starfold_tensor_desc_t *tensors; /* borrowed */
    starfold_op_t op;                      /* the values suit this op (no overflow, exact results) */
    int offset, total;                     /* across ranks: replica r is global replica offset + r of total (else 0, n) */
    starpu_data_handle_t *in, *out;        /* [n * nt], replica-major (starfold_submit's layout); NULL bucketed */
    int bucketed;                          /* the bucket layout: */
    starpu_data_handle_t *bin, *bout;      /* [n] each replica's input and output vector */
    starfold_view_t *vin, *vout;           /* [n * nt] the tensors as views of them */
    int collective, root;                  /* a cli_collective_t and its root: which slots go in and out */
    size_t gathered;                       /* outputs hold this many blocks of a tensor: n for an all-gather, else 1 */
} cli_replicas_t;


/* Bytes a row of @o's collective reports for tensors of @bytes per replica on @n devices: an
 * all-gather's gathered size (n x bytes, nccl-tests' all_gather_perf), else @bytes. */
uint64_t cli_collective_bytes(const cli_opts_t *o, int n, uint64_t bytes);

/* Values, references and tolerances: tools/verify.h (shared with the tests and examples). */

/*
 * Allocates the vectors and fills the inputs for @collective (a cli_collective_t; @root for reduce and
 * broadcast): submissions pass only its slots, an all-gather's outputs are n times its inputs.
 * Returns a status (message in starfold_last_error()).
 */
starfold_status_t cli_replicas_create(starfold_context_t ctx, int n, const starfold_tensor_desc_t *tensors, size_t nt,
                                      starfold_op_t op, int collective, int root, cli_replicas_t *rep);
/* The same, bucketed (every tensor of one dtype, else STARFOLD_ERR_INVALID_ARGUMENT). */
starfold_status_t cli_replicas_create_bucketed(starfold_context_t ctx, int n, const starfold_tensor_desc_t *tensors,
                                               size_t nt, starfold_op_t op, int collective, int root,
                                               cli_replicas_t *rep);
/* Submits @g on the replicas (starfold_submit(), or starfold_submit_views() when bucketed). */
starfold_status_t cli_replicas_submit(cli_replicas_t *rep, starfold_graph_t g, starfold_request_t *req);
/* Binds @g to the replicas once (starfold_persistent_create(), or _create_views() when bucketed). */
starfold_status_t cli_replicas_persistent(cli_replicas_t *rep, starfold_graph_t g, starfold_persistent_t *p);
/* Fills every output with a sentinel no reduction produces (so a missed write is seen). */
starfold_status_t cli_replicas_clear(cli_replicas_t *rep);
/* Counts wrong elements over every output; @checked gets the number compared. */
starfold_status_t cli_replicas_verify(cli_replicas_t *rep, uint64_t *wrong, uint64_t *checked);
void cli_replicas_destroy(cli_replicas_t *rep);

/*
 * The same across MPI ranks: this rank's @n replicas are global replicas @offset .. @offset+n-1 of
 * @total, filled as replicas with those ids, verified against the reduction over all @total.
 */
starfold_status_t cli_replicas_create_global(starfold_context_t ctx, int n, int offset, int total,
                                             const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                                             cli_replicas_t *rep);
/* The same, bucketed: each replica's tensors as views of one vector (bench --mpi --views). */
starfold_status_t cli_replicas_create_global_bucketed(starfold_context_t ctx, int n, int offset, int total,
                                                      const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                                                      cli_replicas_t *rep);

/* ------------------------------------------------------------------------------------------------
 * Across MPI ranks (cmd_mpi.c): `run --mpi` and `bench --mpi`, under mpirun. Without MPI in the
 * build, or outside a launcher, they refuse with a reason (exit 2) before anything starts.
 */

/* Refuses what --mpi cannot do with @o (exit 2), and --ranks-per-node / --lowering without --mpi. */
int cli_mpi_check(const cli_command_t *cmd, const cli_opts_t *o);
/* starfold run --mpi over the tensors @tensors (@spec as the user wrote it). */
int cli_run_mpi(const cli_command_t *cmd, const cli_opts_t *o, const starfold_tensor_desc_t *tensors, size_t nt,
                const char *spec);
/* starfold bench --mpi over the sweep @sizes (bytes per replica). */
int cli_bench_mpi(const cli_command_t *cmd, const cli_opts_t *o, const uint64_t *sizes, int nsizes);

/* mkdir -p: 0, or -1 with errno set. */
int cli_make_dirs(const char *path);

/* Sum of the tensors' bytes and elements. */
uint64_t cli_tensors_bytes(const starfold_tensor_desc_t *tensors, size_t nt);
uint64_t cli_tensors_elements(const starfold_tensor_desc_t *tensors, size_t nt);

#endif /* STARFOLD_CLI_H */
