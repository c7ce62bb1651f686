/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Private layout of a topology. Devices 0..n-1, links stored as given (a < b after normalisation).
 * Reference-counted: graphs keep the topology they were compiled for.
 */
#ifndef STARFOLD_SRC_TOPOLOGY_H
#define STARFOLD_SRC_TOPOLOGY_H

#include <starfold/topology.h>

typedef struct starfold__device {
    char *name;
    starfold_device_kind_t kind;
    int socket;
    int line;                 /* line of its node in the topology file, 0 when unknown */
    int rank;                 /* the MPI rank holding it (a cluster topology), 0 otherwise */
    int memory;               /* >= 0: devices of one rank with the same memory share it (several StarPU
                                 workers on one GPU); -1: its own, or host memory for a CPU device */
} starfold__device_t;

struct starfold_topology {
    int refcount;             /* atomic: graphs in other threads may hold references */
    char *name;
    char *origin;             /* the file it was read from, NULL otherwise */
    int num_devices;
    starfold__device_t *devices;     /* num_devices entries */
    starfold_link_t *links;   /* growable */
    size_t num_links, cap_links;
    int has_cost_params;      /* 1: cost_params were set (a calibration), 0: the model's defaults */
    starfold_cost_params_t cost_params;
    starfold_measurement_t *measurements; /* starfold_topology_set_measurements(), owned */
    size_t num_measurements;
};

/* Checks cost parameters (finite, overheads >= 0, bandwidths > 0, cpu_workers 0..4096); @fn names the caller. */
starfold_status_t starfold__cost_params_check(const starfold_cost_params_t *p, const char *fn);

/* "gpu" / "cpu"; "unknown" otherwise. */
const char *starfold__device_kind_name(starfold_device_kind_t kind);

/* Parses "gpu" / "cpu" case-insensitively; -1 (no error recorded) for anything else. */
int starfold__device_kind_parse(const char *name, starfold_device_kind_t *kind);

/* starfold_topology_add_link() from its fields. */
starfold_status_t starfold__topology_add(starfold_topology_t t, int a, int b, starfold_link_kind_t kind, int lanes,
                                  double bandwidth_GBps, double latency_us);

/*
 * The PCIe / socket-interconnect link between two GPUs that have no NVLink, from where they sit: the
 * one place the PCIe model numbers live (built-in tables and hwloc detection share it).
 */
starfold_link_t starfold__pcie_link(int a, int b, int same_switch, int same_socket);

/*
 * The bandwidth matrix of @n devices for the pattern searches (src/patterns/patterns.h): *bw (malloc'd,
 * n x n) gets at [a * n + b] the bandwidth of the fastest direct link between devices[a] and
 * devices[b], 0 when none and on the diagonal. The devices must exist.
 */
starfold_status_t starfold__topology_bandwidths(starfold_topology_t t, int n, const int *devices, double **bw);

/* Sets the MPI rank holding @device (a valid device; @rank >= 0): CPU devices of different ranks
 * share no memory. */
void starfold__topology_set_rank(starfold_topology_t t, int device, int rank);

/* starfold_topology_ranks()'s links when none are given: a process group's until measured. */
void starfold__ranks_default_links(starfold_link_t *shm, starfold_link_t *network);

/* The first device that links cannot reach from device 0, -1 when all can. */
int starfold__topology_unreachable(starfold_topology_t t);

/* The "host" model: @n CPU devices cpu0.. in one memory node, every pair a host link. */
starfold_status_t starfold__topology_host(const char *name, int n, starfold_topology_t *topology);

/*
 * Serialises cgraph's global state (its parser and some static buffers are not thread-safe).
 * Every starfold use of cgraph in the topology layer runs under it.
 */
/*
 * Where a picture puts device @device of a built-in topology that has a drawing of its own (the
 * DGX-1's hybrid cube-mesh, by name "dgx1*" with 8 devices), in inches; 0 when it has none (then
 * pictures lay devices out themselves).
 */
int starfold__builtin_position(const char *topology_name, int num_devices, int device, double *x, double *y);

void starfold__cgraph_lock(void);
void starfold__cgraph_unlock(void);

#endif /* STARFOLD_SRC_TOPOLOGY_H */
