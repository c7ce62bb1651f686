/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * What the cost model describes for run and bench: the devices that run the graphs, or a topology the
 * user named and runs elsewhere.
 *
 *   --topology not given, host, or emulated on the emulated box
 *        the topology is the machine's own: the context is calibrated (starfold_context_calibrate(),
 *        once per machine, kept in StarPU's home) and the topology carries the figures, so --model
 *        and "auto" predict these devices;
 *   --topology dgx1-v100 (any other)
 *        the graphs follow that topology's links and the model describes it as named (its links,
 *        default GPU parameters), not the CPU or POCL devices that run them: said on the banner.
 */
#include "cli.h"

#include <string.h>
#include <strings.h>

static int own_topology(const cli_opts_t *o, const cli_machine_t *m)
{
    if (!o->topology) return 1;
    if (!strcasecmp(o->topology, "host")) return 1;
    return m->emulated && !strcasecmp(o->topology, "emulated");
}

void cli_machine_model(const cli_opts_t *o, cli_machine_t *m, FILE *info)
{
    if (!own_topology(o, m)) {
        fprintf(info,
                "Cost model: describes topology '%s' as named (its links, default device parameters), not the %d\n"
                "  %s devices this runs on: predictions and 'auto' are for that topology, not for this machine\n",
                starfold_topology_name(m->topo), m->num_devices, m->emulated ? "emulated (POCL)" : "local");
        return;
    }
    starfold_calibration_t c;
    fflush(info);
    const starfold_status_t st = starfold_context_calibrate(m->ctx, 0, &c);
    if (st != STARFOLD_OK || starfold_topology_set_cost_params(m->topo, &c.params) != STARFOLD_OK ||
        starfold_topology_set_measurements(m->topo, c.num_measurements, c.measurements) != STARFOLD_OK) {
        fprintf(info, "Cost model: calibration failed (%s: %s); the model's defaults apply\n", starfold_status_string(st),
                starfold_last_error());
        return;
    }
    const int cpu = starfold_context_mode(m->ctx) == STARFOLD_DEVICES_CPU;
    fprintf(info, "Cost model: calibrated on these devices: %.1f us per task, %.1f us per submission, %.2f GB/s %s\n"
                  "  (fit error %.0f %%; %s %s)\n",
            c.params.task_overhead_us, c.params.submit_overhead_us,
            cpu ? c.params.cpu_memory_GBps : c.params.gpu_memory_GBps, cpu ? "of shared host memory" : "per device",
            100.0 * c.fit_error, c.from_file ? "read from" : "measured now, kept in",
            c.path[0] ? c.path : "nowhere: no $STARPU_HOME or $HOME");
    /* Which algorithms at which sizes "auto" scales the model by (starfold_measurement_t). */
    size_t lo = 0, hi = 0;
    int algorithms = 0;
    for (size_t i = 0; i < c.num_measurements; i++) {
        const size_t b = c.measurements[i].bytes;
        if (!lo || b < lo) lo = b;
        if (b > hi) hi = b;
        int first = 1;
        for (size_t j = 0; j < i; j++) first &= strcmp(c.measurements[j].algorithm, c.measurements[i].algorithm) != 0;
        algorithms += first;
    }
    if (c.num_measurements) {
        char a[32], b[32];
        fprintf(info, "  'auto' ranks the algorithms by the model scaled by what %d of them measured here, %s to %s\n",
                algorithms, cli_format_bytes(a, sizeof a, lo), cli_format_bytes(b, sizeof b, hi));
    }
}
