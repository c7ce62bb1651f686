/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The replicas of a graph grouped by node, for the builders that reduce inside a node first
 * (hierarchical.c, leader.c). A node is what the topology calls a socket: on a cluster or rank
 * topology (starfold/mpi.h) the machine a rank runs on, on one machine a CPU socket and the devices
 * hanging from it (a DGX-1's two quads). Devices whose socket is unknown (-1) form one node.
 *
 *   replica positions  0  1  2  3  4  5        sockets  1  1  0  0  1  0
 *   nodes              node 0 = {0, 1, 4}   node 1 = {2, 3, 5}     (first[] = 0, 3, 6)
 *
 * Nodes are numbered by their lowest replica position, members kept in position order, so every rank
 * that compiles the same collective on the same topology groups it alike.
 */
#include "config.h"

#include "algorithms/algorithms.h"

void starfold__graph_nodes(const struct starfold_graph *g, starfold__nodes_t *nodes)
{
    const int n = g->num_inputs;
    int socket[STARFOLD_MAX_DEVICES], done[STARFOLD_MAX_DEVICES] = { 0 };
    for (int p = 0; p < n; p++) socket[p] = starfold_topology_device_socket(g->topology, g->input_devices[p]);
    int m = 0;
    nodes->count = 0;
    for (int p = 0; p < n; p++) {
        if (done[p]) continue;
        nodes->first[nodes->count++] = m;
        for (int q = p; q < n; q++)
            if (!done[q] && socket[q] == socket[p]) {
                done[q] = 1;
                nodes->member[m++] = q;
            }
    }
    nodes->first[nodes->count] = m;
}

starfold_status_t starfold__allreduce_by_nodes(starfold_graph_t g, const starfold_algo_options_t *options,
                                               const starfold__allreduce_pattern_t *pattern)
{
    starfold__nodes_t nodes;
    starfold__graph_nodes(g, &nodes);
    return starfold__allreduce_packs(g, options, pattern, &nodes);
}
