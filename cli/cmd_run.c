/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold run: execute one all-reduce on the devices present, verify every element of every replica
 * against a float64 host reference, print the time. Also the helpers run, bench and demo share: the
 * choice of devices (cli_machine_*) and the replicas with their deterministic data (cli_replicas_*).
 *
 * Which devices (cli_machine_open):
 *
 *     --topology host ............................ CPU mode: logical devices on StarPU's CPU workers
 *     --emulated ................................. the emulated 8-device box (forced)
 *     StarPU configured by the user (STARPU_NCPU, STARPU_NOPENCL, STARPU_NCUDA, STARPU_OPENCL_ON_CPUS)
 *                                                  whatever StarPU gives (CUDA, else OpenCL, else CPU)
 *     else, an accelerator found by hwloc ........ whatever StarPU gives
 *     else ....................................... the emulated box, said on the info stream
 *
 * StarPU reads its environment when it starts, that is in the first starfold_context_create(): every
 * variable is set before that call.
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

/* ------------------------------------------------------------------------------------------------
 * Machines
 */

/* "FILE:LINE: device D ('NAME') is one more than StarPU has": the first device of the file StarPU lacks. */
static int cli_no_device(const cli_command_t *cmd, const char *file, int line, int have, const char *name)
{
    return cli_fail(cmd, STARFOLD_ERR_NO_DEVICE, "%s:%d: device %d ('%s') is one more than the %d StarPU has; pass "
                                                 "-g/--devices %d or fewer",
                    file, line, have, name, have, have);
}

static int starpu_configured(void)
{
    static const char *const vars[] = { "STARPU_NCPU", "STARPU_NCPUS", "STARPU_NOPENCL", "STARPU_NCUDA",
                                        "STARPU_OPENCL_ON_CPUS" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

/*
 * Whether hwloc sees an accelerator. Asked in a child process: hwloc's OpenCL discovery initialises
 * the OpenCL platforms (POCL reads POCL_DEVICES once, then), and that must happen in this process only
 * after the emulated box's variables are set.
 */
static int accelerator_present(void)
{
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        starfold_topology_t t = NULL;
        int found = 0;
        if (starfold_topology_detect(&t) == STARFOLD_OK)
            for (int d = 0; d < starfold_topology_num_devices(t); d++)
                if (starfold_topology_device_kind(t, d) == STARFOLD_DEVICE_GPU) found = 1;
        _exit(found ? 0 : 1);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int cli_make_dirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* $STARFOLD_CACHE_DIR, else $XDG_CACHE_HOME/starfold, else ~/.cache/starfold, else /tmp/starfold-UID. */
static void cache_dir(char *buf, size_t len, const char *sub)
{
    const char *e;
    if ((e = getenv("STARFOLD_CACHE_DIR")) && *e) snprintf(buf, len, "%s/%s", e, sub);
    else if ((e = getenv("XDG_CACHE_HOME")) && *e) snprintf(buf, len, "%s/starfold/%s", e, sub);
    else if ((e = getenv("HOME")) && *e) snprintf(buf, len, "%s/.cache/starfold/%s", e, sub);
    else snprintf(buf, len, "/tmp/starfold-%u/%s", (unsigned)getuid(), sub);
}

/*
 * The emulated box (doc/test-machines.md): 8 POCL devices on the CPU, each an
 * OpenCL worker with its own memory node. STARPU_HOME is always a folder of its own, as StarPU's bus
 * calibration records the device count; a POCL kernel cache the user chose is kept.
 */
static int setup_emulated(const cli_command_t *cmd, FILE *info, const char *why)
{
    char home[4096], pocl[4096];
    cache_dir(home, sizeof home, "starpu-emulated");
    if (getenv("POCL_CACHE_DIR") && *getenv("POCL_CACHE_DIR")) snprintf(pocl, sizeof pocl, "%s", getenv("POCL_CACHE_DIR"));
    else cache_dir(pocl, sizeof pocl, "pocl-cache");
    if (cli_make_dirs(home) != 0 || cli_make_dirs(pocl) != 0)
        return cli_usage_error(cmd, "cannot create the cache folders %s and %s (set STARFOLD_CACHE_DIR)", home, pocl);
    setenv("POCL_DEVICES", "pthread pthread pthread pthread pthread pthread pthread pthread", 1);
    setenv("STARPU_OPENCL_ON_CPUS", "1", 1);
    setenv("STARPU_NOPENCL", "8", 1);
    setenv("STARPU_NCPU", "0", 1);
    setenv("STARPU_NCUDA", "0", 1);
    setenv("STARPU_DISABLE_ASYNCHRONOUS_OPENCL_COPY", "1", 1);
    setenv("STARPU_SCHED", "eager", 0);
    setenv("STARPU_SILENT", "1", 0);
    setenv("STARPU_HOME", home, 1);
    setenv("POCL_CACHE_DIR", pocl, 1);
    fprintf(info,
            "Using the emulated 8-device box (%s): 8 OpenCL devices on the CPU (POCL), each with its own memory\n"
            "node, so every transfer is a real copy; its timings measure CPU contention, not interconnect speed.\n"
            "  set: POCL_DEVICES=\"pthread x8\" STARPU_OPENCL_ON_CPUS=1 STARPU_NOPENCL=8 STARPU_NCPU=0 STARPU_NCUDA=0\n"
            "       STARPU_DISABLE_ASYNCHRONOUS_OPENCL_COPY=1 STARPU_SCHED=%s STARPU_HOME=%s\n"
            "       POCL_CACHE_DIR=%s\n",
            why, getenv("STARPU_SCHED"), home, pocl);
    return CLI_OK;
}

/* CPU mode for --topology host: no OpenCL or CUDA initialisation unless the user configured StarPU. */
static void setup_host(FILE *info)
{
    if (starpu_configured()) {
        fprintf(info, "Using StarPU's CPU workers (topology host), as StarPU's environment configures them\n");
        return;
    }
    char home[4096];
    cache_dir(home, sizeof home, "starpu-host");
    setenv("STARPU_NOPENCL", "0", 1);
    setenv("STARPU_NCUDA", "0", 1);
    setenv("STARPU_SCHED", "eager", 0);
    setenv("STARPU_SILENT", "1", 0);
    if (!getenv("STARPU_HOME") && cli_make_dirs(home) == 0) setenv("STARPU_HOME", home, 1);
    fprintf(info, "Using StarPU's CPU workers (topology host): set STARPU_NOPENCL=0 STARPU_NCUDA=0 STARPU_SCHED=%s\n",
            getenv("STARPU_SCHED"));
}

static const char *mode_name(starfold_device_mode_t mode)
{
    return mode == STARFOLD_DEVICES_OPENCL ? "OpenCL" : mode == STARFOLD_DEVICES_CUDA ? "CUDA" : "CPU-worker";
}

int cli_machine_open(const cli_command_t *cmd, const cli_opts_t *o, FILE *info, cli_machine_t *m)
{
    memset(m, 0, sizeof *m);
    int r = CLI_OK;
    const int host = o->topology && strcmp(o->topology, "host") == 0;
    if (host && o->emulated)
        return cli_usage_error(cmd, "--emulated and --topology host are exclusive (host runs on the CPU workers)");
    /* The environment first: opening "detect" below already initialises OpenCL. What it says is held
     * back until the arguments are known good: a bad --topology prints its error alone. */
    char *said = NULL;
    size_t said_len = 0;
    FILE *banner = open_memstream(&said, &said_len);
    if (!banner) banner = info;
    if (o->emulated) r = setup_emulated(cmd, banner, "--emulated");
    else if (host) setup_host(banner);
    else if (!starpu_configured() && !accelerator_present())
        r = setup_emulated(cmd, banner, "no accelerator found and StarPU not configured");
    if (banner != info) fclose(banner);
    starfold_topology_t topo = NULL;
    if (r == CLI_OK) r = cli_open_topology(cmd, o, NULL, &topo);
    if (r != CLI_OK) {
        free(said);
        return r;
    }
    m->emulated = o->emulated || getenv("STARPU_OPENCL_ON_CPUS") != NULL;

    starfold_context_options_t copt;
    starfold_context_options_init(&copt);
    copt.mode = host ? STARFOLD_DEVICES_CPU : STARFOLD_DEVICES_AUTO;
    copt.num_devices = topo ? starfold_topology_num_devices(topo) : o->devices;
    fflush(info);
    starfold_status_t st = starfold_context_create(&copt, &m->ctx);
    /* StarPU gave the devices asked for: now the set-up is worth saying (not before an -g error). */
    if (st == STARFOLD_OK && said) fputs(said, info);
    free(said);
    said = NULL;
    if (st != STARFOLD_OK) {
        if (st == STARFOLD_ERR_NO_DEVICE && copt.num_devices > 0) {
            /* A topology file asking for more devices than StarPU has: name the first one too many. */
            int have = 0;
            starfold_context_t probe = NULL;
            copt.num_devices = 0; /* every device StarPU has */
            if (starfold_context_create(&copt, &probe) == STARFOLD_OK) {
                have = starfold_context_num_devices(probe);
                starfold_context_destroy(probe);
            }
            const char *file = starfold_topology_origin(topo);
            const int line = have > 0 ? starfold_topology_device_line(topo, have) : 0;
            if (file && line > 0) {
                st = cli_no_device(cmd, file, line, have, starfold_topology_device_name(topo, have));
                starfold_topology_destroy(topo);
                return st;
            }
            if (!topo) /* -g N beyond the machine: a bad argument */
                return cli_usage_error(cmd, "-g %d: StarPU has %d device%s here (pass -g 1..%d)", o->devices, have,
                                       have == 1 ? "" : "s", have);
            copt.num_devices = starfold_topology_num_devices(topo);
            starfold_topology_destroy(topo);
            return cli_fail(cmd, st, "StarPU cannot give %d devices (pass -g/--devices with fewer)", copt.num_devices);
        }
        starfold_topology_destroy(topo);
        return cli_fail(cmd, st, "cannot start StarPU");
    }
    m->num_devices = starfold_context_num_devices(m->ctx);
    if (m->num_devices > STARFOLD_MAX_DEVICES) {
        /* More workers than a topology may have devices: keep the first ones. */
        starfold_context_destroy(m->ctx);
        m->ctx = NULL;
        copt.num_devices = STARFOLD_MAX_DEVICES;
        fprintf(info, "StarPU has %d workers; using the first %d as devices\n", m->num_devices, STARFOLD_MAX_DEVICES);
        if ((st = starfold_context_create(&copt, &m->ctx)) != STARFOLD_OK) {
            starfold_topology_destroy(topo);
            return cli_fail(cmd, st, "cannot start StarPU");
        }
        m->num_devices = starfold_context_num_devices(m->ctx);
    }
    const starfold_device_mode_t mode = starfold_context_mode(m->ctx);
    if (mode != STARFOLD_DEVICES_OPENCL) m->emulated = 0;

    if (!topo) {
        /* The emulated box's own table, else the workers as StarPU measured them. */
        starfold_topology_t full = NULL;
        if (m->emulated && m->num_devices <= 8) st = starfold_topology_builtin("emulated", &full);
        else st = starfold_context_topology(m->ctx, &full);
        if (st == STARFOLD_OK && starfold_topology_num_devices(full) > m->num_devices) {
            st = starfold_topology_subset(full, m->num_devices, &topo);
            starfold_topology_destroy(full);
        } else if (st == STARFOLD_OK) {
            topo = full;
        }
        if (st != STARFOLD_OK) {
            starfold_context_destroy(m->ctx);
            m->ctx = NULL;
            return cli_fail(cmd, st, "cannot build the devices' topology");
        }
    }
    m->topo = topo;
    snprintf(m->description, sizeof m->description, "%d %s device%s%s, topology '%s'", m->num_devices, mode_name(mode),
             m->num_devices == 1 ? "" : "s", m->emulated ? " (the emulated box)" : "", starfold_topology_name(topo));
    return CLI_OK;
}

void cli_machine_close(cli_machine_t *m)
{
    starfold_topology_destroy(m->topo);
    starfold_context_destroy(m->ctx);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------------------------------------
 * Data and reference
 */

uint64_t cli_tensors_bytes(const starfold_tensor_desc_t *tensors, size_t nt)
{
    uint64_t b = 0;
    for (size_t t = 0; t < nt; t++) b += (uint64_t)tensors[t].count * starfold_dtype_size(tensors[t].dtype);
    return b;
}

uint64_t cli_tensors_elements(const starfold_tensor_desc_t *tensors, size_t nt)
{
    uint64_t e = 0;
    for (size_t t = 0; t < nt; t++) e += tensors[t].count;
    return e;
}

/* ------------------------------------------------------------------------------------------------
 * Replicas
 */

/* Elements of all tensors together (a bucket). */
static size_t total_count(const cli_replicas_t *rep)
{
    size_t c = 0;
    for (size_t t = 0; t < rep->nt; t++) c += rep->tensors[t].count;
    return c;
}

/* Elements of output tensor @t: an all-gather's hold every replica's. */
static size_t out_count(const cli_replicas_t *rep, size_t t)
{
    return rep->gathered * rep->tensors[t].count;
}

/* A host buffer for the largest output tensor, or for a whole output bucket (at least one byte). */
static void *host_buffer(const cli_replicas_t *rep)
{
    size_t most = 1;
    if (rep->bucketed) {
        most = rep->gathered * total_count(rep) * starfold_dtype_size(rep->tensors[0].dtype);
    } else {
        for (size_t t = 0; t < rep->nt; t++) {
            const size_t b = out_count(rep, t) * starfold_dtype_size(rep->tensors[t].dtype);
            if (b > most) most = b;
        }
    }
    return malloc(most ? most : 1);
}

void cli_replicas_destroy(cli_replicas_t *rep)
{
    const size_t total = (size_t)rep->n * rep->nt;
    for (size_t k = 0; k < total; k++) {
        if (rep->in && rep->in[k]) starfold_vector_destroy(rep->ctx, rep->in[k]);
        if (rep->out && rep->out[k]) starfold_vector_destroy(rep->ctx, rep->out[k]);
    }
    for (int r = 0; r < rep->n; r++) {
        if (rep->bin && rep->bin[r]) starfold_vector_destroy(rep->ctx, rep->bin[r]);
        if (rep->bout && rep->bout[r]) starfold_vector_destroy(rep->ctx, rep->bout[r]);
    }
    free(rep->in);
    free(rep->out);
    free(rep->bin);
    free(rep->bout);
    free(rep->vin);
    free(rep->vout);
    memset(rep, 0, sizeof *rep);
}

static void replicas_init(cli_replicas_t *rep, starfold_context_t ctx, int n, const starfold_tensor_desc_t *tensors,
                          size_t nt, starfold_op_t op, int collective, int root)
{
    memset(rep, 0, sizeof *rep);
    rep->collective = collective;
    rep->root = root;
    rep->gathered = collective == CLI_COLL_ALL_GATHER ? (size_t)n : 1;
    rep->ctx = ctx;
    rep->n = n;
    rep->offset = 0;
    rep->total = n;
    rep->nt = nt;
    rep->tensors = tensors;
    rep->op = op;
}

static starfold_status_t replicas_create(starfold_context_t ctx, int n, int offset, int total,
                                         const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                                         int collective, int root, cli_replicas_t *rep)
{
    replicas_init(rep, ctx, n, tensors, nt, op, collective, root);
    rep->offset = offset;
    rep->total = total;
    rep->in = calloc((size_t)n * nt, sizeof *rep->in);
    rep->out = calloc((size_t)n * nt, sizeof *rep->out);
    void *host = host_buffer(rep);
    starfold_status_t st = STARFOLD_ERR_OUT_OF_MEMORY;
    if (!rep->in || !rep->out || !host) goto fail;
    for (int r = 0; r < n; r++)
        for (size_t t = 0; t < nt; t++) {
            const size_t k = (size_t)r * nt + t, count = tensors[t].count;
            const starfold_dtype_t dt = tensors[t].dtype;
            if ((st = starfold_vector_create(ctx, r, dt, count, &rep->in[k])) != STARFOLD_OK) goto fail;
            if ((st = starfold_vector_create(ctx, r, dt, out_count(rep, t), &rep->out[k])) != STARFOLD_OK) goto fail;
            for (size_t i = 0; i < count; i++)
                starfold_tools_set(host, dt, i, starfold_tools_value(op, dt, offset + r, t, i));
            if ((st = starfold_vector_write(rep->in[k], host, count * starfold_dtype_size(dt))) != STARFOLD_OK) goto fail;
        }
    free(host);
    return STARFOLD_OK;
fail:
    free(host);
    cli_replicas_destroy(rep);
    return st;
}

starfold_status_t cli_replicas_create(starfold_context_t ctx, int n, const starfold_tensor_desc_t *tensors, size_t nt,
                                      starfold_op_t op, int collective, int root, cli_replicas_t *rep)
{
    return replicas_create(ctx, n, 0, n, tensors, nt, op, collective, root, rep);
}

starfold_status_t cli_replicas_create_global(starfold_context_t ctx, int n, int offset, int total,
                                             const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                                             cli_replicas_t *rep)
{
    if (n < 1 || offset < 0 || total < offset + n) return STARFOLD_ERR_INVALID_ARGUMENT;
    return replicas_create(ctx, n, offset, total, tensors, nt, op, CLI_COLL_ALL_REDUCE, 0, rep);
}

static starfold_status_t bucketed_create(starfold_context_t ctx, int n, int offset, int total_replicas,
                                         const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                                         int collective, int root, cli_replicas_t *rep)
{
    replicas_init(rep, ctx, n, tensors, nt, op, collective, root);
    rep->offset = offset;
    rep->total = total_replicas;
    for (size_t t = 1; t < nt; t++)
        if (tensors[t].dtype != tensors[0].dtype) return STARFOLD_ERR_INVALID_ARGUMENT;
    rep->bucketed = 1;
    const starfold_dtype_t dt = nt ? tensors[0].dtype : STARFOLD_FLOAT32;
    const size_t total = total_count(rep);
    rep->bin = calloc((size_t)n, sizeof *rep->bin);
    rep->bout = calloc((size_t)n, sizeof *rep->bout);
    rep->vin = calloc((size_t)n * nt + 1, sizeof *rep->vin);
    rep->vout = calloc((size_t)n * nt + 1, sizeof *rep->vout);
    void *host = host_buffer(rep);
    starfold_status_t st = STARFOLD_ERR_OUT_OF_MEMORY;
    if (!rep->bin || !rep->bout || !rep->vin || !rep->vout || !host) goto fail;
    for (int r = 0; r < n; r++) {
        if ((st = starfold_vector_create(ctx, r, dt, total, &rep->bin[r])) != STARFOLD_OK) goto fail;
        if ((st = starfold_vector_create(ctx, r, dt, rep->gathered * total, &rep->bout[r])) != STARFOLD_OK) goto fail;
        size_t at = 0;
        for (size_t t = 0; t < nt; t++) {
            const size_t k = (size_t)r * nt + t;
            rep->vin[k] = (starfold_view_t){ rep->bin[r], at };
            rep->vout[k] = (starfold_view_t){ rep->bout[r], rep->gathered * at }; /* an all-gather's: n blocks */
            for (size_t i = 0; i < tensors[t].count; i++)
                starfold_tools_set(host, dt, at + i, starfold_tools_value(op, dt, offset + r, t, i));
            at += tensors[t].count;
        }
        if ((st = starfold_vector_write(rep->bin[r], host, total * starfold_dtype_size(dt))) != STARFOLD_OK) goto fail;
    }
    free(host);
    return STARFOLD_OK;
fail:
    free(host);
    cli_replicas_destroy(rep);
    return st;
}

starfold_status_t cli_replicas_create_bucketed(starfold_context_t ctx, int n, const starfold_tensor_desc_t *tensors,
                                               size_t nt, starfold_op_t op, int collective, int root,
                                               cli_replicas_t *rep)
{
    return bucketed_create(ctx, n, 0, n, tensors, nt, op, collective, root, rep);
}

starfold_status_t cli_replicas_create_global_bucketed(starfold_context_t ctx, int n, int offset, int total,
                                                      const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                                                      cli_replicas_t *rep)
{
    if (n < 1 || offset < 0 || total < offset + n) return STARFOLD_ERR_INVALID_ARGUMENT;
    return bucketed_create(ctx, n, offset, total, tensors, nt, op, CLI_COLL_ALL_REDUCE, 0, rep);
}

/* First input and output slot of the collective: a reduce writes the root's only, a broadcast reads it only. */
static size_t in_slot(const cli_replicas_t *rep)
{
    return rep->collective == CLI_COLL_BROADCAST ? (size_t)rep->root : 0;
}

static size_t out_slot(const cli_replicas_t *rep)
{
    return rep->collective == CLI_COLL_REDUCE ? (size_t)rep->root : 0;
}

starfold_status_t cli_replicas_submit(cli_replicas_t *rep, starfold_graph_t g, starfold_request_t *req)
{
    if (rep->bucketed)
        return starfold_submit_views(rep->ctx, g, rep->vin + in_slot(rep) * rep->nt, rep->vout + out_slot(rep) * rep->nt, req);
    return starfold_submit(rep->ctx, g, rep->in + in_slot(rep) * rep->nt, rep->out + out_slot(rep) * rep->nt, req);
}

starfold_status_t cli_replicas_persistent(cli_replicas_t *rep, starfold_graph_t g, starfold_persistent_t *p)
{
    if (rep->bucketed)
        return starfold_persistent_create_views(rep->ctx, g, rep->vin + in_slot(rep) * rep->nt,
                                                rep->vout + out_slot(rep) * rep->nt, p);
    return starfold_persistent_create(rep->ctx, g, rep->in + in_slot(rep) * rep->nt, rep->out + out_slot(rep) * rep->nt, p);
}

/*
 * Element i of tensor t's expected result: the reduction over every replica, the root's own value,
 * or for an all-gather replica i / count's element i % count.
 */
static double expected_at(const cli_replicas_t *rep, starfold_dtype_t dt, size_t t, size_t i)
{
    if (rep->collective == CLI_COLL_BROADCAST) return starfold_tools_value(rep->op, dt, rep->root, t, i);
    if (rep->collective == CLI_COLL_ALL_GATHER) {
        const size_t c = rep->tensors[t].count;
        return starfold_tools_value(rep->op, dt, (int)(i / c), t, i % c);
    }
    return starfold_tools_reference_at(rep->op, dt, rep->total, t, i); /* every replica of every rank */
}

/* Whether replica r's outputs hold a result (a reduce writes only the root's). */
static int has_result(const cli_replicas_t *rep, int r)
{
    return rep->collective != CLI_COLL_REDUCE || r == rep->root;
}

starfold_status_t cli_replicas_clear(cli_replicas_t *rep)
{
    void *host = host_buffer(rep);
    if (!host) return STARFOLD_ERR_OUT_OF_MEMORY;
    starfold_status_t st = STARFOLD_OK;
    if (rep->bucketed) {
        const starfold_dtype_t dt = rep->nt ? rep->tensors[0].dtype : STARFOLD_FLOAT32;
        const size_t total = rep->gathered * total_count(rep);
        for (size_t i = 0; i < total; i++) starfold_tools_set(host, dt, i, STARFOLD_TOOLS_SENTINEL);
        for (int r = 0; r < rep->n && st == STARFOLD_OK; r++)
            st = starfold_vector_write(rep->bout[r], host, total * starfold_dtype_size(dt));
        free(host);
        return st;
    }
    for (size_t t = 0; t < rep->nt && st == STARFOLD_OK; t++) {
        const starfold_dtype_t dt = rep->tensors[t].dtype;
        for (size_t i = 0; i < out_count(rep, t); i++) starfold_tools_set(host, dt, i, STARFOLD_TOOLS_SENTINEL);
        for (int r = 0; r < rep->n && st == STARFOLD_OK; r++)
            st = starfold_vector_write(rep->out[(size_t)r * rep->nt + t], host, out_count(rep, t) * starfold_dtype_size(dt));
    }
    free(host);
    return st;
}

starfold_status_t cli_replicas_verify(cli_replicas_t *rep, uint64_t *wrong, uint64_t *checked)
{
    uint64_t bad = 0, seen = 0;
    void *host = host_buffer(rep);
    size_t most = 1;
    for (size_t t = 0; t < rep->nt; t++)
        if (out_count(rep, t) > most) most = out_count(rep, t);
    double *ref = malloc(most * sizeof *ref);
    starfold_status_t st = STARFOLD_OK;
    if (!host || !ref) st = STARFOLD_ERR_OUT_OF_MEMORY;
    if (rep->bucketed) { /* every replica's bucket read once, its tensors checked in place */
        const starfold_dtype_t dt = rep->nt ? rep->tensors[0].dtype : STARFOLD_FLOAT32;
        for (int r = 0; r < rep->n && st == STARFOLD_OK; r++) {
            if (!has_result(rep, r)) continue;
            st = starfold_vector_read(rep->bout[r], host, rep->gathered * total_count(rep) * starfold_dtype_size(dt));
            for (size_t t = 0, at = 0; t < rep->nt && st == STARFOLD_OK; at += out_count(rep, t++)) {
                for (size_t i = 0; i < out_count(rep, t); i++)
                    if (!starfold_tools_close_enough(dt, starfold_tools_get(host, dt, at + i), expected_at(rep, dt, t, i)))
                        bad++;
                seen += out_count(rep, t);
            }
        }
    }
    for (size_t t = 0; t < rep->nt && st == STARFOLD_OK && !rep->bucketed; t++) {
        const starfold_dtype_t dt = rep->tensors[t].dtype;
        const size_t count = out_count(rep, t);
        /* The reference once per tensor, then every replica against it. */
        for (size_t i = 0; i < count; i++) ref[i] = expected_at(rep, dt, t, i);
        for (int r = 0; r < rep->n && st == STARFOLD_OK; r++) {
            if (!has_result(rep, r)) continue;
            st = starfold_vector_read(rep->out[(size_t)r * rep->nt + t], host, count * starfold_dtype_size(dt));
            for (size_t i = 0; i < count && st == STARFOLD_OK; i++)
                if (!starfold_tools_close_enough(dt, starfold_tools_get(host, dt, i), ref[i])) bad++;
            seen += count;
        }
    }
    free(host);
    free(ref);
    if (st == STARFOLD_OK) {
        *wrong = bad;
        *checked = seen;
    }
    return st;
}

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
        "  -d, --dtype D     float32 (default), float64, int32, int64\n"
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
        "                    on every rank (starfold_group_all_gather()), checked everywhere. No\n"
        "                    --algorithm, other collectives, --trace or packing options\n"
        "  --ranks-per-node K  with --mpi: ranks 0..K-1 are node 0, K..2K-1 node 1, ... (default: the ranks\n"
        "                    that share memory are one node)\n"
        "  --lowering L      with --mpi: how the all-reduce crosses ranks: auto (default), mpi, ring,\n"
        "                    halving-doubling, hierarchical, leader (starfold_group_set_lowering())\n"
        "  --timeout S       with --mpi: a rank that does not join or finish a collective within S seconds\n"
        "                    fails every rank that waits, which then end the job (default: wait; a rank\n"
        "                    silent for 60 s is named on stderr either way). Every rank runs the same\n"
        "                    command: ranks started with different ones are refused before anything runs\n"
        "  -h, --help        this text\n",
    .main = run_main,
};
