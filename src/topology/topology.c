/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The topology object: devices, links, queries, bisection. Its DOT form is written by dot_writer.c
 * and read by dot_reader.c.
 *
 * Invariants kept by every function here:
 *  - 1 <= num_devices <= STARFOLD_MAX_DEVICES, every device has a non-empty name;
 *  - every stored link has 0 <= a < b < num_devices, lanes >= 1, bandwidth and latency within the
 *    STARFOLD_LINK_* ranges of topology.h;
 *  - a failing call leaves the topology and every output parameter as they were.
 * Links keep the order they were added in: DOT output and the link index follow it.
 */
#include "config.h"

#include "base/common.h"
#include "patterns/patterns.h"
#include "topology/topology.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------------
 * Life cycle
 */

static void topology_free(struct starfold_topology *t)
{
    if (!t) return;
    if (t->devices)
        for (int i = 0; i < t->num_devices; i++) free(t->devices[i].name);
    free(t->devices);
    free(t->links);
    free(t->name);
    free(t->origin);
    free(t->measurements);
    free(t);
}

STARFOLD_API starfold_status_t starfold_topology_create(const char *name, int num_devices,
                                                        starfold_topology_t *topology)
{
    if (!name || !topology)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_create: NULL %s",
                        !name ? "name" : "topology");
    if (num_devices < 1 || num_devices > STARFOLD_MAX_DEVICES)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_create: num_devices must be 1..%d, got %d",
                        STARFOLD_MAX_DEVICES, num_devices);

    starfold_status_t st = STARFOLD_OK;
    struct starfold_topology *t = calloc(1, sizeof *t);
    if (!t) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating topology '%s'", name);
    t->refcount = 1;
    t->num_devices = num_devices;
    t->devices = calloc((size_t)num_devices, sizeof *t->devices);
    if (!t->devices || !(t->name = starfold__strdup(name))) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory creating topology '%s'", name);
        goto fail;
    }
    for (int i = 0; i < num_devices; i++) {
        char label[16];
        snprintf(label, sizeof label, "dev%d", i);
        t->devices[i].kind = STARFOLD_DEVICE_GPU;
        t->devices[i].socket = -1;
        t->devices[i].memory = -1;
        if (!(t->devices[i].name = starfold__strdup(label))) {
            st = STARFOLD_ERR_OUT_OF_MEMORY;
            goto fail;
        }
    }
    *topology = t;
    return STARFOLD_OK;

fail:
    topology_free(t);
    return st;
}

STARFOLD_API starfold_topology_t starfold_topology_retain(starfold_topology_t topology)
{
    if (topology) __atomic_add_fetch(&topology->refcount, 1, __ATOMIC_RELAXED);
    return topology;
}

STARFOLD_API void starfold_topology_destroy(starfold_topology_t topology)
{
    /* acq_rel: the last owner must see every write the other owners made before dropping theirs. */
    if (topology && __atomic_sub_fetch(&topology->refcount, 1, __ATOMIC_ACQ_REL) == 0) topology_free(topology);
}

/* ------------------------------------------------------------------------------------------------
 * Building
 */

static int valid_device(starfold_topology_t t, int device) { return device >= 0 && device < t->num_devices; }

STARFOLD_API starfold_status_t starfold_topology_set_device(starfold_topology_t topology, int device,
                                                            const char *name, starfold_device_kind_t kind,
                                                            int socket)
{
    if (!topology) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_set_device: NULL topology");
    if (!valid_device(topology, device))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "device %d is not in topology '%s' (0..%d)", device,
                        topology->name, topology->num_devices - 1);
    if (kind != STARFOLD_DEVICE_GPU && kind != STARFOLD_DEVICE_CPU)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "device %d: unknown device kind %d", device, (int)kind);
    if (socket < -1)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "device %d: socket must be >= 0 or -1 (unknown), got %d",
                        device, socket);
    if (name && !*name) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "device %d: empty name", device);

    char *copy = NULL;
    if (name && !(copy = starfold__strdup(name))) return STARFOLD_ERR_OUT_OF_MEMORY;
    starfold__device_t *d = &topology->devices[device];
    if (copy) {
        free(d->name);
        d->name = copy;
    }
    d->kind = kind;
    d->socket = socket;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_topology_add_link(starfold_topology_t topology, const starfold_link_t *link)
{
    if (!topology || !link)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_add_link: NULL %s",
                        !topology ? "topology" : "link");
    const starfold_link_t *l = link;
    if (!valid_device(topology, l->a) || !valid_device(topology, l->b))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "link %d-%d: device %d is not in topology '%s' (0..%d)", l->a,
                        l->b, valid_device(topology, l->a) ? l->b : l->a, topology->name, topology->num_devices - 1);
    if (l->a == l->b)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "link %d-%d: a link joins two different devices", l->a, l->b);
    if ((unsigned)l->kind >= (unsigned)STARFOLD_LINK_KIND_COUNT)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "link %d-%d: unknown link kind %d", l->a, l->b, (int)l->kind);
    if (l->lanes < 1)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "link %d-%d: lanes must be >= 1, got %d", l->a, l->b, l->lanes);
    if (!(l->bandwidth_GBps >= STARFOLD_LINK_BANDWIDTH_MIN_GBPS && l->bandwidth_GBps <= STARFOLD_LINK_BANDWIDTH_MAX_GBPS))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "link %d-%d: bandwidth must be in [%g, %g] GB/s, got %g",
                               l->a, l->b, STARFOLD_LINK_BANDWIDTH_MIN_GBPS, STARFOLD_LINK_BANDWIDTH_MAX_GBPS,
                               l->bandwidth_GBps);
    if (!(l->latency_us >= 0 && l->latency_us <= STARFOLD_LINK_LATENCY_MAX_US))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "link %d-%d: latency must be in [0, %g] us, got %g", l->a,
                               l->b, STARFOLD_LINK_LATENCY_MAX_US, l->latency_us);
    if (SF_GROW(topology->links, topology->num_links, topology->cap_links) != 0)
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory adding link %d-%d", l->a, l->b);

    starfold_link_t *dst = &topology->links[topology->num_links++];
    *dst = *l;
    if (dst->a > dst->b) {
        dst->a = l->b;
        dst->b = l->a;
    }
    return STARFOLD_OK;
}

starfold_status_t starfold__topology_add(starfold_topology_t t, int a, int b, starfold_link_kind_t kind, int lanes,
                                  double bandwidth_GBps, double latency_us)
{
    const starfold_link_t l = {
        .a = a, .b = b, .kind = kind, .lanes = lanes, .bandwidth_GBps = bandwidth_GBps, .latency_us = latency_us
    };
    return starfold_topology_add_link(t, &l);
}

/* ------------------------------------------------------------------------------------------------
 * Queries
 */

STARFOLD_API const char *starfold_topology_name(starfold_topology_t topology)
{
    return topology ? topology->name : "";
}

STARFOLD_API int starfold_topology_num_devices(starfold_topology_t topology)
{
    return topology ? topology->num_devices : 0;
}

STARFOLD_API const char *starfold_topology_device_name(starfold_topology_t topology, int device)
{
    return topology && valid_device(topology, device) ? topology->devices[device].name : NULL;
}

STARFOLD_API starfold_device_kind_t starfold_topology_device_kind(starfold_topology_t topology, int device)
{
    return topology && valid_device(topology, device) ? topology->devices[device].kind : STARFOLD_DEVICE_GPU;
}

STARFOLD_API const char *starfold_topology_origin(starfold_topology_t topology)
{
    return topology ? topology->origin : NULL;
}

STARFOLD_API int starfold_topology_device_line(starfold_topology_t topology, int device)
{
    return topology && valid_device(topology, device) ? topology->devices[device].line : 0;
}

STARFOLD_API int starfold_topology_same_memory(starfold_topology_t topology, int a, int b)
{
    if (!topology || !valid_device(topology, a) || !valid_device(topology, b)) return 0;
    const starfold__device_t *x = &topology->devices[a], *y = &topology->devices[b];
    if (a == b) return 1;
    if (x->rank != y->rank) return 0;
    return (x->kind == STARFOLD_DEVICE_CPU && y->kind == STARFOLD_DEVICE_CPU) || (x->memory >= 0 && x->memory == y->memory);
}

STARFOLD_API starfold_status_t starfold_topology_set_device_memory(starfold_topology_t topology, int device, int memory)
{
    if (!topology) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_set_device_memory: NULL topology");
    if (!valid_device(topology, device))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "device %d is not in topology '%s' (0..%d)", device,
                               topology->name, topology->num_devices - 1);
    if (memory < -1)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "device %d: memory must be >= 0 or -1 (its own), got %d",
                               device, memory);
    topology->devices[device].memory = memory;
    return STARFOLD_OK;
}

STARFOLD_API int starfold_topology_device_memory(starfold_topology_t topology, int device)
{
    return topology && valid_device(topology, device) ? topology->devices[device].memory : -1;
}

STARFOLD_API int starfold_topology_device_rank(starfold_topology_t topology, int device)
{
    return topology && valid_device(topology, device) ? topology->devices[device].rank : -1;
}

void starfold__topology_set_rank(starfold_topology_t t, int device, int rank)
{
    t->devices[device].rank = rank;
}

STARFOLD_API int starfold_topology_device_socket(starfold_topology_t topology, int device)
{
    return topology && valid_device(topology, device) ? topology->devices[device].socket : -1;
}

STARFOLD_API int starfold_topology_num_links(starfold_topology_t topology)
{
    return topology ? (int)topology->num_links : 0;
}

STARFOLD_API starfold_status_t starfold_topology_link(starfold_topology_t topology, int index, starfold_link_t *link)
{
    if (!topology || !link)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_link: NULL %s",
                        !topology ? "topology" : "link");
    if (index < 0 || (size_t)index >= topology->num_links)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "link index %d is not in topology '%s' (%zu links)", index,
                        topology->name, topology->num_links);
    *link = topology->links[index];
    return STARFOLD_OK;
}

/* Index of the fastest link between a and b (the first of equals), -1 when none. Records no error. */
static int best_link_index(starfold_topology_t t, int a, int b)
{
    if (a > b) {
        int tmp = a;
        a = b;
        b = tmp;
    }
    int best = -1;
    for (size_t i = 0; i < t->num_links; i++) {
        const starfold_link_t *l = &t->links[i];
        if (l->a == a && l->b == b && (best < 0 || l->bandwidth_GBps > t->links[best].bandwidth_GBps)) best = (int)i;
    }
    return best;
}

STARFOLD_API double starfold_topology_bandwidth(starfold_topology_t topology, int a, int b)
{
    if (!topology || !valid_device(topology, a) || !valid_device(topology, b) || a == b) return 0;
    int i = best_link_index(topology, a, b);
    return i < 0 ? 0 : topology->links[i].bandwidth_GBps;
}

starfold_status_t starfold__topology_bandwidths(starfold_topology_t t, int n, const int *devices, double **bw)
{
    double *m = malloc(sizeof *m * (size_t)n * (size_t)n);
    if (!m) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory reading the bandwidths of topology '%s'", t->name);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) m[a * n + b] = a == b ? 0 : starfold_topology_bandwidth(t, devices[a], devices[b]);
    *bw = m;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_topology_best_link(starfold_topology_t topology, int a, int b,
                                                           starfold_link_t *link)
{
    if (!topology || !link)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_best_link: NULL %s",
                        !topology ? "topology" : "link");
    if (!valid_device(topology, a) || !valid_device(topology, b))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "device %d is not in topology '%s' (0..%d)",
                        valid_device(topology, a) ? b : a, topology->name, topology->num_devices - 1);
    int i = a == b ? -1 : best_link_index(topology, a, b);
    if (i < 0)
        return starfold__error(STARFOLD_ERR_NOT_FOUND, "topology '%s' has no link between devices %d and %d", topology->name,
                        a, b);
    *link = topology->links[i];
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Machine parameters for the cost model
 */

STARFOLD_API void starfold_cost_params_init(starfold_cost_params_t *p)
{
    if (!p) return;
    p->task_overhead_us = 5.0;
    p->gpu_memory_GBps = 800.0;
    p->cpu_memory_GBps = 20.0;
    p->cpu_workers = 0;
    p->submit_overhead_us = 0.0;
}

starfold_status_t starfold__cost_params_check(const starfold_cost_params_t *p, const char *fn)
{
    if (!(p->task_overhead_us >= 0) || !(p->gpu_memory_GBps > 0) || !(p->cpu_memory_GBps > 0) ||
        !isfinite(p->task_overhead_us) || !isfinite(p->gpu_memory_GBps) || !isfinite(p->cpu_memory_GBps) ||
        !(p->submit_overhead_us >= 0) || !isfinite(p->submit_overhead_us))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: cost parameters must be finite with overheads >= 0 and bandwidths > 0 (got %g us "
                               "per task, %g us per submission, %g, %g GB/s)",
                               fn, p->task_overhead_us, p->submit_overhead_us, p->gpu_memory_GBps, p->cpu_memory_GBps);
    if (p->cpu_workers < 0 || p->cpu_workers > 4096)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: cost parameters: cpu_workers must be 0 to 4096, got %d",
                               fn, p->cpu_workers);
    return STARFOLD_OK;
}

STARFOLD_API int starfold_topology_cost_params(starfold_topology_t topology, starfold_cost_params_t *params)
{
    if (!params) return 0;
    if (topology && topology->has_cost_params) {
        *params = topology->cost_params;
        return 1;
    }
    starfold_cost_params_init(params);
    return 0;
}

STARFOLD_API starfold_status_t starfold_topology_set_cost_params(starfold_topology_t topology,
                                                                 const starfold_cost_params_t *params)
{
    static const char fn[] = "starfold_topology_set_cost_params";
    if (!topology) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL topology", fn);
    if (!params) {
        topology->has_cost_params = 0;
        return STARFOLD_OK;
    }
    const starfold_status_t st = starfold__cost_params_check(params, fn);
    if (st != STARFOLD_OK) return st;
    topology->cost_params = *params;
    topology->has_cost_params = 1;
    return STARFOLD_OK;
}

/*
 * Measurements ("auto"'s corrections, src/algorithms/compile.c). The topology only keeps them: it
 * checks their shape, not their algorithm names (the registry is a layer above).
 */
static starfold_status_t measurement_check(starfold_topology_t t, size_t i, const starfold_measurement_t *m)
{
    static const char fn[] = "starfold_topology_set_measurements";
    if (!memchr(m->algorithm, '\0', sizeof m->algorithm) || !m->algorithm[0])
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: measurement %zu: the algorithm name is %s", fn, i,
                               m->algorithm[0] ? "not terminated within 32 characters" : "empty");
    if (m->num_devices < 1 || m->num_devices > t->num_devices)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: measurement %zu (%s): num_devices must be 1..%d, got %d",
                               fn, i, m->algorithm, t->num_devices, m->num_devices);
    if (m->bytes == 0 || !(m->measured_us > 0) || !isfinite(m->measured_us) || !(m->predicted_us > 0) ||
        !isfinite(m->predicted_us))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: measurement %zu (%s): bytes and times must be positive and finite (got %zu B, "
                               "measured %g us, predicted %g us)",
                               fn, i, m->algorithm, m->bytes, m->measured_us, m->predicted_us);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_topology_set_measurements(starfold_topology_t topology, size_t count,
                                                                  const starfold_measurement_t *measurements)
{
    static const char fn[] = "starfold_topology_set_measurements";
    if (!topology) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL topology", fn);
    if (count && !measurements)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL measurements with a count of %zu", fn, count);
    for (size_t i = 0; i < count; i++) {
        const starfold_status_t st = measurement_check(topology, i, &measurements[i]);
        if (st != STARFOLD_OK) return st;
    }
    starfold_measurement_t *copy = NULL;
    if (count) {
        if (!(copy = malloc(count * sizeof *copy)))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        memcpy(copy, measurements, count * sizeof *copy);
    }
    free(topology->measurements);
    topology->measurements = copy;
    topology->num_measurements = count;
    return STARFOLD_OK;
}

STARFOLD_API size_t starfold_topology_measurements(starfold_topology_t topology, starfold_measurement_t *out,
                                                   size_t max)
{
    if (!topology) return 0;
    const size_t n = topology->num_measurements < max ? topology->num_measurements : max;
    if (n && out) memcpy(out, topology->measurements, n * sizeof *out);
    return topology->num_measurements;
}

/* ------------------------------------------------------------------------------------------------
 * Derived topologies and checks
 */

STARFOLD_API starfold_status_t starfold_topology_subset(starfold_topology_t topology, int num_devices,
                                                        starfold_topology_t *subset)
{
    if (!topology || !subset)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_subset: NULL %s",
                        !topology ? "topology" : "subset");
    if (num_devices < 1 || num_devices > topology->num_devices)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "subset of topology '%s': num_devices must be 1..%d, got %d",
                        topology->name, topology->num_devices, num_devices);

    char name[256];
    if (num_devices == topology->num_devices) snprintf(name, sizeof name, "%s", topology->name);
    else snprintf(name, sizeof name, "%s (devices 0-%d)", topology->name, num_devices - 1);

    starfold_topology_t s = NULL;
    starfold_status_t st;
    SF_CHECK_GOTO(starfold_topology_create(name, num_devices, &s), st, fail);
    for (int i = 0; i < num_devices; i++) {
        const starfold__device_t *d = &topology->devices[i];
        SF_CHECK_GOTO(starfold_topology_set_device(s, i, d->name, d->kind, d->socket), st, fail);
        s->devices[i].line = d->line;
        s->devices[i].rank = d->rank;
        s->devices[i].memory = d->memory;
    }
    if (topology->origin && !(s->origin = starfold__strdup(topology->origin))) {
        st = STARFOLD_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    for (size_t i = 0; i < topology->num_links; i++)
        if (topology->links[i].b < num_devices)
            SF_CHECK_GOTO(starfold_topology_add_link(s, &topology->links[i]), st, fail);
    s->has_cost_params = topology->has_cost_params;
    s->cost_params = topology->cost_params;
    /* Measurements of more devices than the subset has describe no graph on it. */
    if (topology->num_measurements && !(s->measurements = malloc(topology->num_measurements * sizeof *s->measurements))) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_topology_subset: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < topology->num_measurements; i++)
        if (topology->measurements[i].num_devices <= num_devices)
            s->measurements[s->num_measurements++] = topology->measurements[i];
    *subset = s;
    return STARFOLD_OK;

fail:
    starfold_topology_destroy(s);
    return st;
}

int starfold__topology_unreachable(starfold_topology_t t)
{
    /* Flood fill from device 0: repeat until no link adds a device (n <= STARFOLD_MAX_DEVICES, links few). */
    char reached[STARFOLD_MAX_DEVICES] = { 1 };
    for (int grew = 1; grew;) {
        grew = 0;
        for (size_t i = 0; i < t->num_links; i++) {
            const starfold_link_t *l = &t->links[i];
            if (reached[l->a] != reached[l->b]) {
                reached[l->a] = reached[l->b] = 1;
                grew = 1;
            }
        }
    }
    for (int d = 0; d < t->num_devices; d++)
        if (!reached[d]) return d;
    return -1;
}

STARFOLD_API starfold_status_t starfold_topology_validate(starfold_topology_t topology)
{
    if (!topology) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_validate: NULL topology");
    if (topology->num_devices < 1)
        return starfold__error(STARFOLD_ERR_TOPOLOGY, "topology '%s' has no device", topology->name);
    int d = starfold__topology_unreachable(topology);
    if (d >= 0)
        return starfold__error(STARFOLD_ERR_TOPOLOGY,
                        "topology '%s' is disconnected: device %d (%s) cannot be reached from device 0 (%s)",
                        topology->name, d, topology->devices[d].name, topology->devices[0].name);
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Bisection: the search is pattern maths (src/patterns/bisection.c) over the devices' bandwidths.
 */

STARFOLD_API starfold_status_t starfold_topology_bisect(starfold_topology_t topology, int n, const int *devices,
                                                        int *group)
{
    if (!topology || !devices || !group)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_bisect: NULL %s",
                        !topology ? "topology" : !devices ? "devices" : "group");
    if (n < 1 || n > topology->num_devices)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "bisect: n must be 1..%d (the devices of '%s'), got %d",
                        topology->num_devices, topology->name, n);
    char seen[STARFOLD_MAX_DEVICES] = { 0 };
    for (int i = 0; i < n; i++) {
        if (!valid_device(topology, devices[i]))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "bisect: devices[%d] = %d is not in topology '%s' (0..%d)",
                            i, devices[i], topology->name, topology->num_devices - 1);
        if (seen[devices[i]]++)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "bisect: device %d appears twice", devices[i]);
    }

    double *bw = NULL;
    starfold_status_t st = starfold__topology_bandwidths(topology, n, devices, &bw);
    if (st != STARFOLD_OK) return st;
    starfold__bisect(n, bw, group);
    free(bw);
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Names
 */

static const char *const link_kind_names[] = {
    [STARFOLD_LINK_NVLINK] = "nvlink",
    [STARFOLD_LINK_PCIE] = "pcie",
    [STARFOLD_LINK_INTER_SOCKET] = "inter-socket",
    [STARFOLD_LINK_HOST] = "host",
    [STARFOLD_LINK_SHM] = "shm",
    [STARFOLD_LINK_NETWORK] = "network",
};

STARFOLD_API const char *starfold_link_kind_name(starfold_link_kind_t kind)
{
    return (unsigned)kind < (unsigned)STARFOLD_LINK_KIND_COUNT ? link_kind_names[kind] : "unknown";
}

STARFOLD_API starfold_status_t starfold_link_kind_from_string(const char *name, starfold_link_kind_t *kind)
{
    static const struct { const char *name; starfold_link_kind_t kind; } aliases[] = {
        { "qpi", STARFOLD_LINK_INTER_SOCKET },
        { "upi", STARFOLD_LINK_INTER_SOCKET },
        { "sys", STARFOLD_LINK_INTER_SOCKET },
    };
    if (!name || !kind)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_link_kind_from_string: NULL %s",
                        !name ? "name" : "kind");
    for (int k = 0; k < (int)STARFOLD_LINK_KIND_COUNT; k++)
        if (starfold__streq_nocase(name, link_kind_names[k])) {
            *kind = (starfold_link_kind_t)k;
            return STARFOLD_OK;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (starfold__streq_nocase(name, aliases[i].name)) {
            *kind = aliases[i].kind;
            return STARFOLD_OK;
        }
    return starfold__error(STARFOLD_ERR_NOT_FOUND,
                    "unknown link kind '%s' (known: nvlink, pcie, inter-socket, host, shm, network; qpi, upi, sys)", name);
}

const char *starfold__device_kind_name(starfold_device_kind_t kind)
{
    return kind == STARFOLD_DEVICE_GPU ? "gpu" : kind == STARFOLD_DEVICE_CPU ? "cpu" : "unknown";
}

int starfold__device_kind_parse(const char *name, starfold_device_kind_t *kind)
{
    if (starfold__streq_nocase(name, "gpu")) *kind = STARFOLD_DEVICE_GPU;
    else if (starfold__streq_nocase(name, "cpu")) *kind = STARFOLD_DEVICE_CPU;
    else return -1;
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * One entry point
 */

/* Whether @path names something on disk. Not by opening it: opening a FIFO blocks until a writer comes,
 * which the reader's non-blocking open (dot_reader.c) exists to avoid. */
static int file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

STARFOLD_API starfold_status_t starfold_topology_open(const char *spec, starfold_topology_t *topology)
{
    if (!spec || !topology)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_open: NULL %s",
                        !spec ? "spec" : "topology");
    if (!*spec) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_open: empty topology name");
    for (const char *const *n = starfold_topology_builtin_names(); *n; n++)
        if (starfold__streq_nocase(spec, *n)) return starfold_topology_builtin(*n, topology);
    if (starfold__streq_nocase(spec, "detect")) return starfold_topology_detect(topology);
    /* Anything that looks like a path is one (so a missing file is an I/O error, not an unknown name). */
    if (strchr(spec, '/') || strchr(spec, '.') || file_exists(spec)) return starfold_topology_load(spec, topology);
    return starfold__error(STARFOLD_ERR_NOT_FOUND,
                    "unknown topology '%s': expected dgx1-v100, dgx1-p100, pcie4, emulated, host, detect, or the "
                    "path of a DOT file", spec);
}
