/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * How an all-reduce crosses ranks (step 3 of group_allreduce.c), once each rank's devices are reduced
 * into one fusion buffer per dtype (its leader vectors):
 *
 *   "mpi"               one StarPU task per dtype calls MPI's own all-reduce (group_allreduce.c)
 *   "ring"              a graph of the registry's algorithm of that name, compiled on the group's
 *   "halving-doubling"  rank topology (starfold_topology_ranks(): one device per rank, shm links
 *   "hierarchical"      inside a node, network links between nodes), run by rank_graph.c with
 *   "leader"            StarPU-MPI sends and receives on its cross-rank edges and StarPU tasks for
 *                       its reductions. hierarchical and leader group the ranks by node (the rank
 *                       topology's sockets): reduce-scatter inside the node, a ring per shard between
 *                       nodes, all-gather inside; or one leader per node, direct exchange, broadcast
 *   "auto"              the cheapest of them all for the call's bytes, by the cost model
 *
 * The graphs reduce with SUM for MEAN; MEAN's division by every replica of every rank comes after,
 * on the output leaders, as the MPI task does it (floats divide, integers truncate).
 * Every rank decides alike: the same tensors, the same rank topology (its links are the same on every
 * rank), the same model; the agreement (group_allreduce.c) checks the lowering anyway.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "exec/group.h"
#include "graph/graph.h"
#include <starfold/model.h>

static const char *const lowering_names[SF_LOWER_COUNT] = {
    [SF_LOWER_AUTO] = "auto",
    [SF_LOWER_MPI] = "mpi",
    [SF_LOWER_RING] = "ring",
    [SF_LOWER_HALVING_DOUBLING] = "halving-doubling",
    [SF_LOWER_HIERARCHICAL] = "hierarchical",
    [SF_LOWER_LEADER] = "leader",
};

const char *starfold__lowering_name(int lowering)
{
    return lowering >= 0 && lowering < SF_LOWER_COUNT ? lowering_names[lowering] : "unknown";
}

STARFOLD_API starfold_status_t starfold_group_set_lowering(starfold_group_t group, const char *lowering)
{
    if (!group || !lowering)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_group_set_lowering: NULL %s",
                               !group ? "group" : "lowering");
    for (int k = 0; k < SF_LOWER_COUNT; k++)
        if (!strcmp(lowering, lowering_names[k])) {
            group->lowering = k;
            return STARFOLD_OK;
        }
    return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_group_set_lowering: unknown lowering '%s' (known: "
                           "%s)", lowering, STARFOLD__LOWERING_NAMES);
}

STARFOLD_API const char *starfold_group_last_lowering(starfold_group_t group)
{
    return group ? lowering_names[group->last_lowering] : NULL;
}

/*
 * The rank topology the graphs are compiled and priced on, made once: the group's links, each with
 * the latency of a message through StarPU-MPI where that was measured (group_links.c), since every
 * cross-rank edge of a graph lowering is one; MPI's own all-reduce is priced with MPI's latency.
 */
static starfold_status_t rank_topology(starfold_group_t g)
{
    if (g->ranks) return STARFOLD_OK;
    starfold_link_t shm = g->shm_link, net = g->network_link;
    if (g->hop_us[0] > shm.latency_us) shm.latency_us = g->hop_us[0];
    if (g->hop_us[1] > net.latency_us) net.latency_us = g->hop_us[1];
    return starfold_topology_ranks(g->size, g->node_of, &shm, &net, &g->ranks);
}

static starfold_status_t rank_compile(starfold_group_t g, int lowering, starfold_op_t op, const size_t *totals,
                                      starfold_graph_t *graph)
{
    starfold_tensor_desc_t fused[STARFOLD_DTYPE_COUNT];
    size_t nt = 0;
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++)
        if (totals[dt]) fused[nt++] = (starfold_tensor_desc_t){ (starfold_dtype_t)dt, totals[dt] };
    int ranks[STARFOLD_MAX_DEVICES];
    for (int r = 0; r < g->size; r++) ranks[r] = r;
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = op,
                                              .num_tensors = nt, .tensors = fused,
                                              .num_sources = g->size, .sources = ranks,
                                              .num_destinations = g->size, .destinations = ranks };
    return starfold_graph_compile(g->ranks, starfold__lowering_name(lowering), &desc, NULL, graph);
}

/*
 * MPI's own all-reduce as the model sees it: Open MPI's tuned component takes recursive doubling for
 * small messages (log2 n steps of the whole vector) and a ring for large ones (2(n-1) steps of 1/n),
 * with no per-task cost but the one StarPU task that calls it, over the slowest link between ranks.
 */
static double mpi_predict_us(starfold_group_t g, const size_t *totals)
{
    double bytes = 0;
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) bytes += (double)totals[dt] * starfold_dtype_size((starfold_dtype_t)dt);
    const starfold_link_t *l = g->num_nodes > 1 ? &g->network_link : &g->shm_link;
    const double n = g->size, per_byte_us = 1e-3 / l->bandwidth_GBps;
    const double doubling = ceil(log2(n)) * (l->latency_us + bytes * per_byte_us);
    const double ring = 2 * (n - 1) * (l->latency_us + bytes / n * per_byte_us);
    starfold_cost_params_t p;
    starfold_topology_cost_params(g->ranks, &p); /* the parameters the graphs are simulated with */
    return (doubling < ring ? doubling : ring) + p.task_overhead_us;
}

starfold_status_t starfold__group_lower(starfold_group_t g, starfold_op_t op, const size_t *totals, int *lowering,
                                        starfold_graph_t *graph)
{
    *graph = NULL;
    *lowering = g->size == 1 ? SF_LOWER_MPI : g->lowering; /* one rank: nothing crosses ranks */
    if (*lowering == SF_LOWER_MPI) return STARFOLD_OK;
    starfold_status_t st = rank_topology(g);
    if (st != STARFOLD_OK) return st;
    if (*lowering != SF_LOWER_AUTO) return rank_compile(g, *lowering, op, totals, graph);
    /* auto: the graph that beats MPI's own by the model, kept to run; else MPI's. */
    *lowering = SF_LOWER_MPI;
    double best_us = mpi_predict_us(g, totals);
    for (int k = SF_LOWER_RING; k < SF_LOWER_COUNT; k++) {
        starfold_graph_t candidate = NULL;
        starfold_prediction_t pr;
        if (rank_compile(g, k, op, totals, &candidate) == STARFOLD_OK &&
            starfold_graph_simulate(candidate, NULL, &pr) == STARFOLD_OK && pr.time_us < best_us) {
            starfold_graph_destroy(*graph);
            *graph = candidate, *lowering = k, best_us = pr.time_us;
        } else {
            starfold_graph_destroy(candidate);
        }
    }
    return STARFOLD_OK;
}
