/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The topology of a process group seen one device per rank (starfold_topology_ranks()): what a graph
 * across ranks is compiled on. Rank r is device r, named "rank r", on "socket" = its node, so that
 * the pictures group a node's ranks as they group a socket's GPUs. Every pair of ranks is linked
 * (MPI reaches every rank from every rank): "shm" inside a node, "network" between nodes.
 *
 *      node 0              node 1
 *   rank0 -shm- rank1 ==network== rank2 -shm- rank3     (and every other pair)
 *
 * Devices are GPU-kind on purpose: a rank's memory is its own, so every edge between two ranks is
 * a transfer (a StarPU-MPI send and receive), never a shared write.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "base/common.h"
#include "topology/topology.h"

/* The defaults: Open MPI's shared memory on one node (a memory copy), and a 100 Gb/s network (EDR InfiniBand). */
static const starfold_link_t default_shm = { 0, 0, STARFOLD_LINK_SHM, 1, 25.0, 0.5 };
static const starfold_link_t default_network = { 0, 0, STARFOLD_LINK_NETWORK, 1, 12.5, 2.0 };

void starfold__ranks_default_links(starfold_link_t *shm, starfold_link_t *network)
{
    *shm = default_shm;
    *network = default_network;
}

static starfold_status_t check_template(const starfold_link_t *l, const char *which)
{
    if (!(l->bandwidth_GBps >= STARFOLD_LINK_BANDWIDTH_MIN_GBPS && l->bandwidth_GBps <= STARFOLD_LINK_BANDWIDTH_MAX_GBPS))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_ranks: %s bandwidth %g GB/s is outside "
                               "[%g, %g]", which, l->bandwidth_GBps, STARFOLD_LINK_BANDWIDTH_MIN_GBPS,
                               STARFOLD_LINK_BANDWIDTH_MAX_GBPS);
    if (!(l->latency_us >= 0 && l->latency_us <= STARFOLD_LINK_LATENCY_MAX_US))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_ranks: %s latency %g us is outside [0, %g]",
                               which, l->latency_us, STARFOLD_LINK_LATENCY_MAX_US);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_topology_ranks(int num_ranks, const int *node_of, const starfold_link_t *shm,
                                                       const starfold_link_t *network, starfold_topology_t *topology)
{
    if (!topology) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_ranks: NULL topology");
    if (num_ranks < 1 || num_ranks > STARFOLD_MAX_DEVICES)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_ranks: num_ranks must be 1..%d, got %d",
                               STARFOLD_MAX_DEVICES, num_ranks);
    for (int r = 0; node_of && r < num_ranks; r++)
        if (node_of[r] < 0 || node_of[r] >= num_ranks)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_ranks: rank %d: node %d is not in "
                                   "0..%d", r, node_of[r], num_ranks - 1);
    starfold_link_t s = shm ? *shm : default_shm, n = network ? *network : default_network;
    s.kind = STARFOLD_LINK_SHM, n.kind = STARFOLD_LINK_NETWORK;
    if (s.lanes < 1) s.lanes = 1;
    if (n.lanes < 1) n.lanes = 1;
    starfold_status_t st = check_template(&s, "shm");
    if (st == STARFOLD_OK) st = check_template(&n, "network");
    if (st != STARFOLD_OK) return st;

    char name[96];
    int nodes = 0;
    for (int r = 0; r < num_ranks; r++)
        if ((node_of ? node_of[r] : r) + 1 > nodes) nodes = (node_of ? node_of[r] : r) + 1;
    snprintf(name, sizeof name, "%d ranks on %d node%s", num_ranks, nodes, nodes == 1 ? "" : "s");
    starfold_topology_t t = NULL;
    SF_CHECK_GOTO(starfold_topology_create(name, num_ranks, &t), st, fail);
    for (int r = 0; r < num_ranks; r++) {
        char dev[32];
        snprintf(dev, sizeof dev, "rank %d", r);
        SF_CHECK_GOTO(starfold_topology_set_device(t, r, dev, STARFOLD_DEVICE_GPU, node_of ? node_of[r] : r), st, fail);
    }
    for (int a = 0; a < num_ranks; a++)
        for (int b = a + 1; b < num_ranks; b++) {
            const int same = node_of ? node_of[a] == node_of[b] : 0;
            const starfold_link_t *k = same ? &s : &n;
            SF_CHECK_GOTO(starfold__topology_add(t, a, b, k->kind, k->lanes, k->bandwidth_GBps, k->latency_us), st, fail);
        }
    *topology = t;
    return STARFOLD_OK;

fail:
    starfold_topology_destroy(t);
    return st;
}
