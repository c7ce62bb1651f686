/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The devices a command runs on (cli_machine_*), which run, bench and demo share, and run --mpi on
 * every rank:
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
