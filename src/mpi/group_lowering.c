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
 *   "auto"              the cheapest of them all for the call's bytes, by the cost model (the decision
 *                       kept per sizes and op: a loop's later steps compile only the chosen graph)
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
#include "mpi/group.h"
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

STARFOLD_API const char *starfold_group_lowering_name(int index)
{
    return index >= 0 && index < SF_LOWER_COUNT ? lowering_names[index] : NULL;
}

STARFOLD_API int starfold_group_lowering_find(const char *name)
{
    for (int k = 0; name && k < SF_LOWER_COUNT; k++)
        if (!strcmp(name, lowering_names[k])) return k;
    return -1;
}

STARFOLD_API starfold_status_t starfold_group_set_lowering(starfold_group_t group, const char *lowering)
{
    if (!group || !lowering)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_group_set_lowering: NULL %s",
                               !group ? "group" : "lowering");
    const int k = starfold_group_lowering_find(lowering);
    if (k >= 0) {
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

STARFOLD_API const char *starfold_group_last_plan(starfold_group_t group) { return group ? group->last_plan : NULL; }

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
 * MPI's large all-reduce by recursive halving then doubling (Rabenseifner's: a reduce-scatter that
 * halves the vector at each step while the partner's distance doubles, then the all-gather back),
 * priced on the group's links: at distance d every rank r exchanges its current half with r ^ d,
 * inside its memory (its own port) or across the network, where every rank of a node that crosses at
 * that step shares the node's one interface:
 *
 *     2 nodes x 2 ranks, S bytes     d = 1: S/2 inside each node    d = 2: S/4 per rank, S/2 per node
 *     reduce-scatter + all-gather:   2 x (S/2 / shm + S/2 / network)  = S over each node's link
 *
 * which is the least any all-reduce can move across a cut between two nodes (each must learn the
 * other's S sums). Open MPI's non-blocking all-reduce, which the mpi lowering's task calls, measured
 * at it on 1 Gbit/s links (64 MiB: 675 ms, the link's S / bandwidth 564 ms); priced as a ring
 * instead (1.5 S over the link), MPI looked 1.5x dearer than it is, and auto took hierarchical,
 * whose S over the link StarPU-MPI moves at half MPI's speed there. A power of two of ranks only
 * (INFINITY otherwise: the ring's price stands).
 */
static double halving_doubling_us(starfold_group_t g, double bytes)
{
    const int n = g->size;
    if (n < 2 || (n & (n - 1)) != 0) return INFINITY;
    double *port = calloc((size_t)n, sizeof *port); /* a step's network bytes out of each memory */
    if (!port) return INFINITY;
    double total = 0, chunk = bytes;
    for (int d = 1; d < n; d *= 2) {
        chunk /= 2;
        memset(port, 0, sizeof *port * (size_t)n);
        int inside = 0, across = 0;
        for (int r = 0; r < n; r++) {
            const int m = g->memory_of[r];
            if (m == g->memory_of[r ^ d]) inside = 1;
            else if (m >= 0 && m < n) port[m] += chunk, across = 1;
        }
        double busiest = 0;
        for (int m = 0; m < n; m++)
            if (port[m] > busiest) busiest = port[m];
        const double shm_us = inside ? g->shm_link.latency_us + chunk * 1e-3 / g->shm_link.bandwidth_GBps : 0;
        const double net_us = across ? g->network_link.latency_us + busiest * 1e-3 / g->network_link.bandwidth_GBps : 0;
        total += shm_us > net_us ? shm_us : net_us;
    }
    free(port);
    return 2 * total; /* the all-gather retraces the reduce-scatter's steps */
}

/*
 * MPI's own all-reduce as the model sees it: recursive doubling for small messages (log2 n steps of
 * the whole vector), and for large ones the cheaper of a ring (2(n-1) steps of 1/n, each node's link
 * carrying one edge of it) and recursive halving and doubling (halving_doubling_us()), with no
 * per-task cost but the one StarPU task that calls it.
 */
static double mpi_predict_us(starfold_group_t g, const size_t *totals)
{
    double bytes = 0;
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) bytes += (double)totals[dt] * starfold_dtype_size((starfold_dtype_t)dt);
    const starfold_link_t *l = g->num_nodes > 1 ? &g->network_link : &g->shm_link;
    const double n = g->size, per_byte_us = 1e-3 / l->bandwidth_GBps;
    const double doubling = ceil(log2(n)) * (l->latency_us + bytes * per_byte_us);
    const double ring = 2 * (n - 1) * (l->latency_us + bytes / n * per_byte_us);
    const double halving = halving_doubling_us(g, bytes);
    starfold_cost_params_t p;
    starfold_topology_cost_params(g->ranks, &p); /* the parameters the graphs are simulated with */
    return fmin(doubling, fmin(ring, halving)) + p.task_overhead_us;
}

/*
 * The least time the busiest port needs to push its bytes out: a rank has a port of its own into its
 * shared memory, and every rank of a node shares the node's one network interface, while the rank
 * topology gives every pair of ranks a link of its own and the model shares bandwidth per link. A
 * graph that drives several links at once (the ring both ways round, a leader reading every node,
 * hierarchical's shards crossing the network side by side) is priced as if each had the port to
 * itself; this bound takes that back (tools/model_cluster makes the same correction, per node). 0
 * when the traffic cannot be counted. The ports follow the memory the ranks really share
 * (memory_of), not the nodes: nodes faked on one machine (ranks_per_node) have no network port, and
 * their "network" bytes leave through the one shared memory (on 16 cores, 4 ranks as 2 nodes of 2,
 * the two-port price made auto take the ring at 8 and 64 MiB, 2-4x slower than MPI's all-reduce).
 * Priced per rank, the network port let hierarchical's two shards of 2 nodes x 2 ranks cross a
 * 1 Gbit/s link at twice its rate: auto took it at 16 and 64 MiB, where it ran 1.8x the mpi lowering.
 */
static double port_bound_us(starfold_group_t g, starfold_graph_t graph)
{
    starfold_link_bytes_t *pairs = NULL;
    size_t n = 0;
    /* [rank][0]: the rank's bytes into shared memory; [m][1]: the bytes out of the network interface
     * of the ranks whose memory (and namespace) is m's (memory_of numbers from 0) */
    double *out = calloc(2 * (size_t)g->size, sizeof *out);
    if (!out || starfold_graph_link_bytes(graph, &pairs, &n) != STARFOLD_OK) {
        free(out);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const int from = pairs[i].from, to = pairs[i].to;
        if (from < 0 || from >= g->size || to < 0 || to >= g->size) continue;
        const int m = g->memory_of[from];
        if (m == g->memory_of[to]) out[2 * from] += (double)pairs[i].bytes;
        else if (m >= 0 && m < g->size) out[2 * m + 1] += (double)pairs[i].bytes;
    }
    free(pairs);
    double worst = 0;
    for (int r = 0; r < g->size; r++) {
        const double shm = out[2 * r] / (g->shm_link.bandwidth_GBps * 1e3); /* GB/s = 1e3 bytes per us */
        const double net = out[2 * r + 1] / (g->network_link.bandwidth_GBps * 1e3);
        if (shm > worst) worst = shm;
        if (net > worst) worst = net;
    }
    free(out);
    return worst;
}

/* The prediction of graph lowering @k for these sizes: compiled and simulated, no less than its ports
 * allow (port_bound_us()); the graph kept in *@graph. */
static starfold_status_t graph_predict(starfold_group_t g, int k, starfold_op_t op, const size_t *totals,
                                       starfold_graph_t *graph, double *us)
{
    starfold_prediction_t pr;
    starfold_status_t st = rank_compile(g, k, op, totals, graph);
    if (st == STARFOLD_OK) st = starfold_graph_simulate(*graph, NULL, &pr);
    if (st != STARFOLD_OK) {
        starfold_graph_destroy(*graph);
        *graph = NULL;
        return st;
    }
    const double ports = port_bound_us(g, *graph);
    *us = pr.time_us > ports ? pr.time_us : ports;
    return STARFOLD_OK;
}

/*
 * How much faster than MPI's own all-reduce the model must price a graph lowering for auto to take
 * it. The model sees links and tasks; it does not see what MPI's one call does better than a graph
 * of StarPU-MPI messages: segments pipelined inside the library, no progress thread to hand each
 * message to, no task per piece. Every measurement of a graph lowering against the mpi lowering on
 * one node came out slower than their prices said, never faster: 2 cores, 2-4 ranks, 2-9x
 * (BENCHMARKS.md, "the lowerings side by side"); 16 cores, 4 ranks, 64 MiB, the ring priced the same
 * as MPI's (both at the busiest rank's port) and measured 2.0x its time, and at 1 and 16 MiB auto
 * took hierarchical and the ring, priced under MPI's, which ran 5.6x and 4.4x MPI_Allreduce
 * (BENCHMARKS.md, "on 16 cores"). A graph must win by more than the model's error: a tie, or a near
 * one, goes to MPI. starfold_group_set_lowering() still runs any graph by name.
 */
#define GRAPH_MARGIN 1.5

/*
 * @want (SF_LOWER_*): a lowering by name, priced; or auto, the cheapest of MPI's own and every graph
 * lowering for these sizes, a graph only where it beats MPI's by GRAPH_MARGIN. *@graph the chosen
 * graph lowering's graph (NULL for MPI), *@us its price.
 */
static starfold_status_t lower_priced(starfold_group_t g, int want, starfold_op_t op, const size_t *totals, int *lowering,
                                      starfold_graph_t *graph, double *us)
{
    *graph = NULL;
    *lowering = g->size == 1 ? SF_LOWER_MPI : want; /* one rank: nothing crosses ranks */
    starfold_status_t st = rank_topology(g);
    if (st != STARFOLD_OK) return st;
    *us = mpi_predict_us(g, totals);
    if (*lowering == SF_LOWER_MPI) return STARFOLD_OK;
    if (*lowering != SF_LOWER_AUTO) return graph_predict(g, *lowering, op, totals, graph, us);
    /* auto, decided before for these sizes: only the chosen graph is compiled again. */
    for (int c = 0; c < SF_AUTO_CHOICES; c++) {
        const struct starfold__auto_choice *a = &g->auto_choice[c];
        if (!a->used || a->op != op || memcmp(a->totals, totals, sizeof a->totals) != 0) continue;
        *lowering = a->lowering;
        *us = a->us;
        return a->lowering == SF_LOWER_MPI ? STARFOLD_OK : rank_compile(g, a->lowering, op, totals, graph);
    }
    /* auto: the cheapest graph that beats MPI's own by the margin, kept to run; else MPI's. */
    *lowering = SF_LOWER_MPI;
    double bar = *us / GRAPH_MARGIN;
    for (int k = SF_LOWER_RING; k < SF_LOWER_COUNT; k++) {
        starfold_graph_t candidate = NULL;
        double t;
        if (graph_predict(g, k, op, totals, &candidate, &t) == STARFOLD_OK && t < bar) {
            starfold_graph_destroy(*graph);
            *graph = candidate, *lowering = k, *us = t, bar = t;
        } else {
            starfold_graph_destroy(candidate);
        }
    }
    struct starfold__auto_choice *a = &g->auto_choice[g->auto_next];
    g->auto_next = (g->auto_next + 1) % SF_AUTO_CHOICES;
    *a = (struct starfold__auto_choice){ .used = 1, .op = op, .lowering = *lowering, .us = *us };
    memcpy(a->totals, totals, sizeof a->totals);
    return STARFOLD_OK;
}

starfold_status_t starfold__group_lower(starfold_group_t g, starfold_op_t op, const size_t *totals, int *lowering,
                                        starfold_graph_t *graph)
{
    double us;
    if (g->size == 1 || g->lowering == SF_LOWER_MPI) { /* nothing to price */
        *graph = NULL;
        *lowering = SF_LOWER_MPI;
        return STARFOLD_OK;
    }
    return lower_priced(g, g->lowering, op, totals, lowering, graph, &us);
}

STARFOLD_API starfold_status_t starfold_group_predict(starfold_group_t group, starfold_op_t op, size_t num_tensors,
                                                      const starfold_tensor_desc_t *tensors, const char *lowering,
                                                      const char **chosen, double *time_us)
{
    static const char fn[] = "starfold_group_predict";
    if (!group || !tensors || !num_tensors || !time_us)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL group, tensors or time_us, or no tensors", fn);
    if ((int)op < 0 || (int)op >= STARFOLD_OP_COUNT)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown reduce op %d", fn, (int)op);
    int want = group->lowering;
    if (lowering) {
        want = starfold_group_lowering_find(lowering);
        if (want < 0)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown lowering '%s' (known: %s)", fn, lowering,
                                   STARFOLD__LOWERING_NAMES);
    }
    size_t totals[STARFOLD_DTYPE_COUNT] = { 0 };
    for (size_t t = 0; t < num_tensors; t++) {
        if ((int)tensors[t].dtype < 0 || (int)tensors[t].dtype >= STARFOLD_DTYPE_COUNT)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: tensor %zu: unknown dtype", fn, t);
        totals[tensors[t].dtype] += tensors[t].count;
    }
    int took;
    starfold_graph_t graph = NULL;
    double us = 0;
    const starfold_status_t st =
        lower_priced(group, want, op == STARFOLD_OP_MEAN ? STARFOLD_OP_SUM : op, totals, &took, &graph, &us);
    starfold_graph_destroy(graph);
    if (st != STARFOLD_OK) return st;
    *time_us = us;
    if (chosen) *chosen = lowering_names[took];
    return STARFOLD_OK;
}
