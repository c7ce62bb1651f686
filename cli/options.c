/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Option parsing shared by every command.
 *
 * One table lists every option once, with its long name, its nccl-tests alias where the meaning is
 * the same (-b/--minbytes, -e/--maxbytes, -i/--stepbytes, -f/--stepfactor, -n/--iters,
 * -w/--warmup_iters, -c/--check, -d/--datatype, -g/--ngpus), and whether it takes a value. A command
 * accepts a subset. Forms: --name VALUE, --name=VALUE, -x VALUE, -xVALUE; "--" ends the options.
 *
 * nccl-tests' -o is the reduce operation; here -o is the output file (as in Graphviz and most
 * tools), the operation is --op. `bench -o` is refused with a message saying so, never misread.
 *
 * Every bad argument ends in one line on stderr, "starfold CMD: reason", and exit status 2.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct opt_def {
    cli_opt_id_t id;
    const char *name;   /* long name, without "--" */
    const char *alias;  /* another long name (nccl-tests'), or NULL */
    char short_name;    /* 0 = none */
    int has_arg;
} opt_def_t;

static const opt_def_t opt_defs[] = {
    { OPT_TOPOLOGY, "topology", NULL, 0, 1 },
    { OPT_ALGORITHM, "algorithm", NULL, 0, 1 },
    { OPT_OP, "op", NULL, 0, 1 },
    { OPT_DTYPE, "dtype", "datatype", 'd', 1 },
    { OPT_TENSORS, "tensors", NULL, 0, 1 },
    { OPT_DEVICES, "devices", "ngpus", 'g', 1 },
    { OPT_NUM_PACKS, "num-packs", NULL, 0, 1 },
    { OPT_BYTES_PER_PACK, "bytes-per-pack", NULL, 0, 1 },
    { OPT_OUTPUT, "output", NULL, 'o', 1 },
    { OPT_JSON, "json", NULL, 0, 0 },
    { OPT_CSV, "csv", NULL, 0, 0 },
    { OPT_MINBYTES, "minbytes", NULL, 'b', 1 },
    { OPT_MAXBYTES, "maxbytes", NULL, 'e', 1 },
    { OPT_STEPFACTOR, "stepfactor", NULL, 'f', 1 },
    { OPT_STEPBYTES, "stepbytes", NULL, 'i', 1 },
    { OPT_ITERS, "iters", NULL, 'n', 1 },
    { OPT_WARMUP, "warmup", "warmup_iters", 'w', 1 },
    { OPT_CHECK, "check", NULL, 'c', 1 },
    { OPT_PLOT, "plot", NULL, 0, 1 },
    { OPT_EMULATED, "emulated", NULL, 0, 0 },
    { OPT_OUT_DIR, "out", NULL, 0, 1 },
    { OPT_BASELINES, "baselines", NULL, 0, 1 },
    { OPT_CHUNK_BYTES, "chunk-bytes", NULL, 0, 1 },
    { OPT_RINGS, "rings", NULL, 0, 1 },
    { OPT_BACKWARD, "backward", NULL, 0, 1 },
    { OPT_BUCKET_BYTES, "bucket-bytes", NULL, 0, 1 },
    { OPT_MODEL, "model", NULL, 0, 0 },
    { OPT_VIEWS, "views", NULL, 0, 0 },
    { OPT_PERSISTENT, "persistent", NULL, 0, 0 },
    { OPT_TRACE, "trace", NULL, 0, 1 },
    { OPT_FULL, "full", NULL, 0, 0 },
    { OPT_TRAFFIC, "traffic", NULL, 0, 0 },
    { OPT_COLLECTIVE, "collective", NULL, 0, 1 },
    { OPT_ROOT, "root", NULL, 0, 1 },
    { OPT_RANKS, "ranks", NULL, 0, 1 },
    { OPT_RANKS_PER_NODE, "ranks-per-node", NULL, 0, 1 },
    { OPT_NETWORK_BANDWIDTH, "network-bandwidth", NULL, 0, 1 },
    { OPT_NETWORK_LATENCY, "network-latency", NULL, 0, 1 },
    { OPT_MPI, "mpi", NULL, 0, 0 },
    { OPT_LOWERING, "lowering", NULL, 0, 1 },
    { OPT_TIMEOUT, "timeout", NULL, 0, 1 },
};
#define NUM_OPT_DEFS (sizeof opt_defs / sizeof opt_defs[0])

const char *cli_option_name(cli_opt_id_t id)
{
    for (size_t k = 0; k < NUM_OPT_DEFS; k++)
        if (opt_defs[k].id == id) return opt_defs[k].name;
    return "?";
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Messages never span lines: a newline in a quoted value or a library detail becomes a blank. */
/* The message as one line, written with one call: stderr is unbuffered, and written a character at
 * a time the lines of several MPI ranks (mpirun forwards each as it comes) interleaved mid-word. */
static void print_one_line(const char *prefix, const char *text)
{
    char line[1200];
    size_t n = (size_t)snprintf(line, sizeof line - 1, "%s", prefix);
    for (const char *p = text; *p && n < sizeof line - 2; p++) line[n++] = *p == '\n' || *p == '\r' ? ' ' : *p;
    line[n++] = '\n';
    fwrite(line, 1, n, stderr);
}

static int vmessage(const cli_command_t *cmd, int code, starfold_status_t st, int with_status, const char *fmt, va_list ap)
{
    char text[1024], prefix[64];
    vsnprintf(text, sizeof text, fmt, ap);
    if (with_status) {
        const size_t len = strlen(text);
        const char *detail = starfold_last_error();
        if (detail && *detail) snprintf(text + len, sizeof text - len, ": %s", detail);
        else snprintf(text + len, sizeof text - len, ": %s", starfold_status_string(st));
    }
    snprintf(prefix, sizeof prefix, "starfold%s%s: ", cmd ? " " : "", cmd ? cmd->name : "");
    fflush(stdout); /* keep the order of what was printed */
    print_one_line(prefix, text);
    return code;
}

int cli_usage_error(const cli_command_t *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vmessage(cmd, CLI_USAGE, STARFOLD_OK, 0, fmt, ap);
    va_end(ap);
    return r;
}

int cli_fail(const cli_command_t *cmd, starfold_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vmessage(cmd, CLI_FAIL, st, 1, fmt, ap);
    va_end(ap);
    return r;
}

int cli_bad_value(const cli_command_t *cmd, starfold_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vmessage(cmd, CLI_USAGE, st, 1, fmt, ap);
    va_end(ap);
    return r;
}

/* ------------------------------------------------------------------------------------------------
 * Values
 */

/* A decimal integer in [lo, hi], the whole text. */
static int parse_int(const char *text, long lo, long hi, long *out)
{
    if (!text || !*text || isspace((unsigned char)*text)) return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static void algorithm_list(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < starfold_algorithm_count() && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", starfold_algorithm_name(i));
}

/* Stores the value of option @d into @o; CLI_OK or CLI_USAGE. @shown is how the user wrote it. */
static int set_option(const cli_command_t *cmd, const opt_def_t *d, const char *shown, const char *v, cli_opts_t *o)
{
    long n = 0;
    uint64_t bytes = 0;
    switch (d->id) {
    case OPT_TOPOLOGY:
        if (!*v) return cli_usage_error(cmd, "%s: empty topology", shown);
        o->topology = v;
        break;
    case OPT_ALGORITHM:
        if (cmd->allow_all && strcmp(v, "all") == 0) {
            o->algorithm = v;
            break;
        }
        const int index = starfold_algorithm_find(v);
        if (index < 0) {
            char list[256];
            algorithm_list(list, sizeof list);
            return cli_usage_error(cmd, "%s: unknown algorithm '%s' (known: %s%s)", shown, v, list,
                                   cmd->allow_all ? ", all" : "");
        }
        o->algorithm = starfold_algorithm_name(index); /* the registry's spelling */
        break;
    case OPT_OP:
        o->all_ops = 0;
        if (cmd->allow_all && strcmp(v, "all") == 0) o->all_ops = 1;
        else if (strcasecmp(v, "avg") == 0) o->op = STARFOLD_OP_MEAN; /* nccl-tests' name */
        else if (starfold_op_from_string(v, &o->op) != STARFOLD_OK)
            return cli_usage_error(cmd, "%s: unknown operation '%s' (known: sum, mean, min, max, prod%s)", shown, v,
                                   cmd->allow_all ? ", all" : "");
        break;
    case OPT_DTYPE:
        o->all_dtypes = 0;
        if (cmd->allow_all && strcmp(v, "all") == 0) o->all_dtypes = 1;
        else if (starfold_dtype_from_string(v, &o->dtype) != STARFOLD_OK)
            return cli_usage_error(cmd, "%s: unknown type '%s' (known: float16, bfloat16, float32, float64, int8, int16, int32, int64, "
                                   "uint8, uint16, uint32, uint64%s)", shown, v,
                                   cmd->allow_all ? ", all" : "");
        break;
    case OPT_TENSORS:
        if (!*v) return cli_usage_error(cmd, "%s: empty tensor list", shown);
        o->tensors = v;
        break;
    case OPT_DEVICES:
        if (parse_int(v, 1, STARFOLD_MAX_DEVICES, &n) != 0)
            return cli_usage_error(cmd, "%s: expected a device count from 1 to %d, got '%s'", shown, STARFOLD_MAX_DEVICES, v);
        o->devices = (int)n;
        break;
    case OPT_NUM_PACKS:
        if (parse_int(v, 0, INT_MAX, &n) != 0)
            return cli_usage_error(cmd, "%s: expected an integer >= 0, got '%s'", shown, v);
        o->num_packs = (int)n;
        break;
    case OPT_RINGS:
        if (parse_int(v, 1, 4, &n) != 0) return cli_usage_error(cmd, "%s: expected 1 to 4 rings, got '%s'", shown, v);
        o->num_rings = (int)n;
        break;
    case OPT_BACKWARD: {
        if (strcmp(v, "balanced") == 0) {
            o->backward_us = -1.0;
            break;
        }
        char *end = NULL;
        const double us = strtod(v, &end);
        if (!*v || *end || !(us >= 0) || us > 1e12)
            return cli_usage_error(cmd, "%s: expected the backward pass's compute time in us (>= 0) or 'balanced', got '%s'",
                                   shown, v);
        o->backward_us = us;
        break;
    }
    case OPT_BUCKET_BYTES:
    case OPT_CHUNK_BYTES:
    case OPT_BYTES_PER_PACK:
    case OPT_MINBYTES:
    case OPT_MAXBYTES:
    case OPT_STEPBYTES:
        if (starfold_tools_size_parse(v, &bytes) != STARFOLD_OK)
            return cli_usage_error(cmd, "%s: bad size '%s': %s", shown, v, starfold_last_error());
        if (d->id == OPT_CHUNK_BYTES || d->id == OPT_BUCKET_BYTES) {
            if (bytes == 0)
                return cli_usage_error(cmd, "%s: must be > 0%s", shown,
                                       d->id == OPT_CHUNK_BYTES ? " (omit it for the automatic size)" : "");
#if SIZE_MAX < UINT64_MAX
            if (bytes > SIZE_MAX) return cli_usage_error(cmd, "%s: too large", shown);
#endif
            if (d->id == OPT_CHUNK_BYTES) o->chunk_bytes = bytes;
            else o->bucket_bytes = bytes;
        } else if (d->id == OPT_BYTES_PER_PACK) {
            if (bytes == 0) return cli_usage_error(cmd, "%s: must be > 0 (omit it to pack by --num-packs)", shown);
#if SIZE_MAX < UINT64_MAX
            if (bytes > SIZE_MAX) return cli_usage_error(cmd, "%s: too large", shown);
#endif
            o->bytes_per_pack = bytes;
        } else if (d->id == OPT_MINBYTES) {
            o->min_bytes = bytes;
        } else if (d->id == OPT_MAXBYTES) {
            o->max_bytes = bytes;
        } else {
            if (bytes == 0) return cli_usage_error(cmd, "%s: must be > 0", shown);
            o->step_bytes = bytes;
        }
        break;
    case OPT_STEPFACTOR:
        if (parse_int(v, 2, 1024, &n) != 0)
            return cli_usage_error(cmd, "%s: expected an integer factor from 2 to 1024, got '%s'", shown, v);
        o->step_factor = (unsigned)n;
        break;
    case OPT_ITERS:
        if (parse_int(v, 1, 1000000, &n) != 0)
            return cli_usage_error(cmd, "%s: expected an iteration count from 1 to 1000000, got '%s'", shown, v);
        o->iters = (int)n;
        break;
    case OPT_WARMUP:
        if (parse_int(v, 0, 1000000, &n) != 0)
            return cli_usage_error(cmd, "%s: expected a warm-up count from 0 to 1000000, got '%s'", shown, v);
        o->warmup = (int)n;
        break;
    case OPT_CHECK:
    case OPT_BASELINES:
        if (parse_int(v, 0, 1, &n) != 0) return cli_usage_error(cmd, "%s: expected 0 or 1, got '%s'", shown, v);
        if (d->id == OPT_CHECK) o->check = (int)n;
        else o->baselines = (int)n;
        break;
    case OPT_OUTPUT:
    case OPT_PLOT:
    case OPT_OUT_DIR:
    case OPT_TRACE:
        if (!*v) return cli_usage_error(cmd, "%s: empty file name", shown);
        if (d->id == OPT_OUTPUT) o->output = v;
        else if (d->id == OPT_PLOT) o->plot = v;
        else if (d->id == OPT_TRACE) o->trace = v;
        else o->out_dir = v;
        break;
    case OPT_JSON: o->json = 1; break;
    case OPT_CSV: o->csv = 1; break;
    case OPT_EMULATED: o->emulated = 1; break;
    case OPT_MODEL: o->model = 1; break;
    case OPT_VIEWS: o->views = 1; break;
    case OPT_PERSISTENT: o->persistent = 1; break;
    case OPT_FULL: o->full = 1; break;
    case OPT_TRAFFIC: o->traffic = 1; break;
    case OPT_COLLECTIVE:
        if (!strcasecmp(v, "all-reduce") || !strcasecmp(v, "allreduce")) o->collective = CLI_COLL_ALL_REDUCE;
        else if (!strcasecmp(v, "reduce")) o->collective = CLI_COLL_REDUCE;
        else if (!strcasecmp(v, "broadcast")) o->collective = CLI_COLL_BROADCAST;
        else if (!strcasecmp(v, "all-gather") || !strcasecmp(v, "allgather")) o->collective = CLI_COLL_ALL_GATHER;
        else return cli_usage_error(cmd, "%s '%s': expected all-reduce, reduce, broadcast or all-gather", shown, v);
        break;
    case OPT_ROOT:
        if (parse_int(v, 0, STARFOLD_MAX_DEVICES - 1, &n) != 0)
            return cli_usage_error(cmd, "%s: expected a device number from 0 to %d, got '%s'", shown,
                                   STARFOLD_MAX_DEVICES - 1, v);
        o->root = (int)n;
        break;
    case OPT_MPI: o->mpi = 1; break;
    case OPT_RANKS:
    case OPT_RANKS_PER_NODE:
        if (parse_int(v, 1, STARFOLD_MAX_DEVICES, &n) != 0)
            return cli_usage_error(cmd, "%s: expected a rank count from 1 to %d, got '%s'", shown, STARFOLD_MAX_DEVICES, v);
        if (d->id == OPT_RANKS) o->ranks = (int)n;
        else o->ranks_per_node = (int)n;
        break;
    case OPT_NETWORK_BANDWIDTH:
    case OPT_NETWORK_LATENCY: {
        char *end = NULL;
        const double x = strtod(v, &end);
        const int bw = d->id == OPT_NETWORK_BANDWIDTH;
        if (!*v || *end || (bw ? !(x >= STARFOLD_LINK_BANDWIDTH_MIN_GBPS && x <= STARFOLD_LINK_BANDWIDTH_MAX_GBPS)
                               : !(x >= 0 && x <= STARFOLD_LINK_LATENCY_MAX_US)))
            return cli_usage_error(cmd, bw ? "%s: expected a bandwidth in GB/s from %g to %g, got '%s'"
                                           : "%s: expected a latency in us from %g to %g, got '%s'",
                                   shown, bw ? STARFOLD_LINK_BANDWIDTH_MIN_GBPS : 0.0,
                                   bw ? STARFOLD_LINK_BANDWIDTH_MAX_GBPS : STARFOLD_LINK_LATENCY_MAX_US, v);
        if (bw) o->network_GBps = x;
        else o->network_us = x;
        break;
    }
    case OPT_LOWERING:
        o->lowering = v; /* checked with --mpi (cli_mpi_check()), against the library's lowerings */
        break;
    case OPT_TIMEOUT: {
        char *end = NULL;
        const double x = strtod(v, &end);
        if (!*v || *end || !(x > 0 && x <= 1e6))
            return cli_usage_error(cmd, "%s: expected seconds, more than 0 and at most 1e6, got '%s'", shown, v);
        o->timeout_s = x;
        break;
    }
    case OPT_COUNT: break;
    }
    o->given |= CLI_OPT(d->id);
    return CLI_OK;
}

static void defaults(cli_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->algorithm = "hierarchical-copy";
    o->op = STARFOLD_OP_SUM;
    o->dtype = STARFOLD_FLOAT32;
    o->num_packs = 1;
    o->min_bytes = 4096;
    o->max_bytes = 4u << 20;
    o->step_bytes = 1u << 20;
    o->step_factor = 2;
    o->iters = 20;
    o->warmup = 5;
    o->check = 1;
    o->baselines = 1;
    o->bucket_bytes = 25u << 20;
    o->lowering = "auto";
}

/* A hint for options users bring from nccl-tests or elsewhere that mean something else here. */
static const char *foreign_hint(const cli_command_t *cmd, const char *arg)
{
    if (strcmp(arg, "-o") == 0 && !(cmd->accepted & CLI_OPT(OPT_OUTPUT)))
        return " (-o is an output file in starfold; the reduce operation is --op, nccl-tests' -o)";
    if (strcmp(arg, "-t") == 0 || strcmp(arg, "-a") == 0)
        return " (nccl-tests' threads/average options have no meaning here; see --help)";
    return "";
}

int cli_parse(const cli_command_t *cmd, int argc, char **argv, cli_opts_t *o)
{
    defaults(o);
    /* --help wins wherever it stands before "--", whatever else is wrong on the line. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(cmd->usage, stdout);
            if (cmd->accepted & CLI_OPT(OPT_ALGORITHM)) {
                /* The registry grows with releases: list what this build has. */
                char list[256];
                algorithm_list(list, sizeof list);
                printf("\nAlgorithms in this build: %s.\n", list);
            }
            return CLI_HELP_DONE;
        }
    int options_done = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = 1;
            continue;
        }
        if (options_done || arg[0] != '-' || arg[1] == '\0')
            return cli_usage_error(cmd, "unexpected argument '%s' (see starfold %s --help)", arg, cmd->name);

        const opt_def_t *d = NULL;
        const char *value = NULL;
        char shown[64];
        if (arg[1] == '-') {
            const char *name = arg + 2, *eq = strchr(name, '=');
            const size_t len = eq ? (size_t)(eq - name) : strlen(name);
            for (size_t k = 0; k < NUM_OPT_DEFS && !d; k++)
                if ((strlen(opt_defs[k].name) == len && strncmp(opt_defs[k].name, name, len) == 0) ||
                    (opt_defs[k].alias && strlen(opt_defs[k].alias) == len && strncmp(opt_defs[k].alias, name, len) == 0))
                    d = &opt_defs[k];
            snprintf(shown, sizeof shown, "--%.*s", (int)(len < 40 ? len : 40), name);
            if (!d) return cli_usage_error(cmd, "unknown option '%s' (see starfold %s --help)", shown, cmd->name);
            if (eq) {
                if (!d->has_arg) return cli_usage_error(cmd, "%s takes no value", shown);
                value = eq + 1;
            }
        } else {
            for (size_t k = 0; k < NUM_OPT_DEFS && !d; k++)
                if (opt_defs[k].short_name == arg[1]) d = &opt_defs[k];
            snprintf(shown, sizeof shown, "-%c", arg[1]);
            if (!d || !(cmd->accepted & CLI_OPT(d->id)))
                return cli_usage_error(cmd, "unknown option '%s'%s", shown, foreign_hint(cmd, shown));
            if (arg[2] != '\0') {
                if (!d->has_arg) return cli_usage_error(cmd, "%s takes no value", shown);
                value = arg + 2;
            }
        }
        if (!(cmd->accepted & CLI_OPT(d->id)))
            return cli_usage_error(cmd, "option '%s' does not apply to %s (see starfold %s --help)", shown, cmd->name,
                                   cmd->name);
        if (d->has_arg && !value) {
            if (i + 1 >= argc) return cli_usage_error(cmd, "%s needs a value", shown);
            value = argv[++i];
        }
        int r = set_option(cmd, d, shown, d->has_arg ? value : "", o);
        if (r != CLI_OK) return r;
    }
    /* nccl-tests: a factor, when given, wins over an increment. */
    if ((o->given & CLI_OPT(OPT_STEPBYTES)) && !(o->given & CLI_OPT(OPT_STEPFACTOR))) o->step_factor = 0;
    if (o->json && o->csv) return cli_usage_error(cmd, "--json and --csv are exclusive");
    /* Before any banner: a root given to a collective that has none. */
    if ((o->given & CLI_OPT(OPT_ROOT)) && (o->collective == CLI_COLL_ALL_REDUCE || o->collective == CLI_COLL_ALL_GATHER))
        return cli_usage_error(cmd, "--root: an %s has no root (--collective reduce or broadcast)",
                               o->collective == CLI_COLL_ALL_GATHER ? "all-gather" : "all-reduce");
    if (o->full && o->traffic) return cli_usage_error(cmd, "--full and --traffic are exclusive (every task, or the devices' traffic)");
    if ((o->given & CLI_OPT(OPT_NUM_PACKS)) && (o->given & CLI_OPT(OPT_BYTES_PER_PACK)))
        return cli_usage_error(cmd, "--num-packs and --bytes-per-pack are exclusive (bytes-per-pack replaces num-packs)");
    return CLI_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Shared argument checks
 */

int cli_open_topology(const cli_command_t *cmd, const cli_opts_t *o, const char *default_spec,
                      starfold_topology_t *topology)
{
    const char *spec = o->topology ? o->topology : default_spec;
    *topology = NULL;
    if (!spec) return CLI_OK;
    starfold_topology_t t = NULL;
    starfold_status_t st = starfold_topology_open(spec, &t);
    if (st != STARFOLD_OK) {
        /* An unknown name gets the list of names; a file that cannot be read, the library's reason. */
        if (st == STARFOLD_ERR_NOT_FOUND) {
            const char *const *names = starfold_topology_builtin_names();
            char list[256] = "";
            size_t used = 0;
            for (int k = 0; names[k] && used < sizeof list; k++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s, ", names[k]);
            return cli_usage_error(cmd, "--topology: '%s' is neither a topology (%sdetect) nor a DOT file",
                                   spec, list);
        }
        return cli_bad_value(cmd, st, "--topology %s", spec);
    }
    const int n = starfold_topology_num_devices(t);
    if (o->devices > n) {
        starfold_topology_destroy(t);
        return cli_usage_error(cmd, "--devices %d: topology '%s' has %d devices", o->devices, spec, n);
    }
    if (o->devices > 0 && o->devices < n) {
        starfold_topology_t sub = NULL;
        st = starfold_topology_subset(t, o->devices, &sub);
        starfold_topology_destroy(t);
        if (st != STARFOLD_OK) return cli_fail(cmd, st, "cannot take the first %d devices of %s", o->devices, spec);
        t = sub;
    }
    *topology = t;
    return CLI_OK;
}

int cli_parse_tensors(const cli_command_t *cmd, const char *spec, starfold_dtype_t dtype,
                      starfold_tensor_desc_t **tensors, size_t *count)
{
    starfold_status_t st = starfold_tools_tensors_parse(spec, dtype, tensors, count);
    if (st == STARFOLD_ERR_PARSE) return cli_usage_error(cmd, "--tensors: %s", starfold_last_error());
    if (st != STARFOLD_OK) return cli_fail(cmd, st, "--tensors");
    return CLI_OK;
}

int cli_algorithm_packs(const char *algorithm)
{
    /* Those that read num_packs; the others run one task per tensor or per chunk of a tensor. */
    return (starfold_algorithm_options(starfold_algorithm_find(algorithm)) & STARFOLD_ALGO_OPTION_NUM_PACKS) != 0;
}

void cli_algo_tuning(const cli_opts_t *o, starfold_algo_options_t *opt)
{
    if (o->given & CLI_OPT(OPT_CHUNK_BYTES)) opt->chunk_bytes = (size_t)o->chunk_bytes;
    if (o->given & CLI_OPT(OPT_RINGS)) opt->num_rings = o->num_rings;
}

int cli_algo_options(const cli_command_t *cmd, const cli_opts_t *o, const char *algorithm,
                     starfold_algo_options_t *opt)
{
    starfold_algo_options_init(opt);
    cli_algo_tuning(o, opt);
    const int packing = (o->given & (CLI_OPT(OPT_NUM_PACKS) | CLI_OPT(OPT_BYTES_PER_PACK))) != 0;
    if (!packing) return CLI_OK;
    if (!cli_algorithm_packs(algorithm))
        return cli_usage_error(cmd, "%s: not supported by %s, which does not pack tensors (hierarchical-copy does)",
                               (o->given & CLI_OPT(OPT_NUM_PACKS)) ? "--num-packs" : "--bytes-per-pack", algorithm);
    if (o->given & CLI_OPT(OPT_NUM_PACKS)) opt->num_packs = o->num_packs;
    if (o->given & CLI_OPT(OPT_BYTES_PER_PACK)) opt->bytes_per_pack = (size_t)o->bytes_per_pack;
    return CLI_OK;
}

int cli_check_output(const cli_command_t *cmd, const char *option, const char *path)
{
    if (strcmp(path, "-") == 0) return CLI_OK;
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (dot && (!slash || dot > slash) &&
        (strcasecmp(dot, ".dot") == 0 || strcasecmp(dot, ".gv") == 0 || strcasecmp(dot, ".svg") == 0 ||
         strcasecmp(dot, ".png") == 0))
        return CLI_OK;
    return cli_usage_error(cmd, "%s %s: the format comes from the extension: .dot, .svg or .png (- for DOT on stdout)",
                           option, path);
}

const char *cli_format_bytes(char *buf, size_t len, uint64_t bytes)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
    if (bytes < 1024) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 3) v /= 1024.0, u++;
    snprintf(buf, len, "%.2f %s", v, units[u]);
    return buf;
}

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

int cli_collective_setup(const cli_command_t *cmd, const cli_opts_t *o, int n, cli_coll_t *c,
                         starfold_collective_desc_t *desc)
{
    if (o->root >= n)
        return cli_usage_error(cmd, "--root %d: the collective runs on devices 0..%d", o->root, n - 1);
    for (int d = 0; d < n; d++) c->src[d] = c->dst[d] = d;
    desc->kind = o->collective == CLI_COLL_BROADCAST    ? STARFOLD_COLL_BROADCAST
                 : o->collective == CLI_COLL_ALL_GATHER ? STARFOLD_COLL_GATHER
                                                        : STARFOLD_COLL_REDUCE;
    desc->num_sources = n;
    desc->sources = c->src;
    desc->num_destinations = 0; /* the sources */
    desc->destinations = NULL;
    if (o->collective == CLI_COLL_REDUCE) {
        desc->num_destinations = 1;
        desc->destinations = &c->dst[o->root];
    } else if (o->collective == CLI_COLL_BROADCAST) {
        desc->num_sources = 1;
        desc->sources = &c->src[o->root];
        desc->num_destinations = n;
        desc->destinations = c->dst;
    }
    return CLI_OK;
}

const char *cli_collective_text(const cli_opts_t *o, char *buf, size_t len)
{
    if (o->collective == CLI_COLL_REDUCE) snprintf(buf, len, "reduce (%s) to device %d", starfold_op_name(o->op), o->root);
    else if (o->collective == CLI_COLL_BROADCAST) snprintf(buf, len, "broadcast from device %d", o->root);
    else if (o->collective == CLI_COLL_ALL_GATHER) snprintf(buf, len, "all-gather");
    else snprintf(buf, len, "all-reduce (%s)", starfold_op_name(o->op));
    return buf;
}

uint64_t cli_collective_bytes(const cli_opts_t *o, int n, uint64_t bytes)
{
    return o->collective == CLI_COLL_ALL_GATHER ? (uint64_t)n * bytes : bytes;
}

double cli_busbw_factor(const cli_opts_t *o, int n)
{
    if (o->collective == CLI_COLL_ALL_GATHER) return n > 1 ? (double)(n - 1) / n : 0.0;
    if (o->collective != CLI_COLL_ALL_REDUCE) return 1.0;
    return n > 1 ? 2.0 * (n - 1) / n : 0.0;
}
