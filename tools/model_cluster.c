/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * model_cluster: the cost model's prediction of an all-reduce across DGX-1 nodes (BENCHMARKS.md,
 * "Modelled: DGX-1 clusters"). No MPI, no GPU, no StarPU: every figure is starfold_graph_simulate()
 * of a compiled graph, or a closed formula computed from the same link numbers.
 *
 * The machine: n nodes, each the built-in "dgx1-v100" (8 GPUs, hybrid cube-mesh NVLink), joined by a
 * network of B GB/s per node (12.5 = 100 Gb/s, 25 = 200 Gb/s) and 2 us per transfer. Every GPU holds
 * S bytes of float32 gradients; all 8n GPUs want their sum. Three ways of doing it:
 *
 *   leader        reduce the node's 8 replicas onto GPU 0 (the best graph of the registry for that
 *                 reduce on dgx1-v100), ring all-reduce of S between the n GPU 0s over the network
 *                 (starfold_topology_ranks(): one device per node), broadcast from GPU 0 to the 8
 *                 GPUs (best graph again). Time = the sum of the three predictions: each step waits
 *                 for the previous one on every node.
 *   hierarchical  Horovod's / NCCL's split rail: an intra-node reduce-scatter leaves S/8 on each GPU,
 *                 8 ring all-reduces of S/8 (one per GPU rank across nodes) run at once, an intra-node
 *                 all-gather. ASSUMPTIONS: the reduce-scatter and the all-gather are each half of the
 *                 best predicted single-node all-reduce of S (a ring all-reduce is exactly these two
 *                 halves); the 8 rings share the node's network bandwidth, so together they cost one
 *                 ring all-reduce of S over the network (8 shards x S/8 = S per node).
 *   flat ring     one ring through all 8n GPUs, every step as slow as its slowest hop, the network:
 *                 t = 2(8n-1) x (lat + S/(8n) / min(B, nvlink)), with lat the network's latency and
 *                 nvlink the slowest NVLink of dgx1-v100 (no kernel time, no pipelining).
 *   hierarchical  the same scheme as a compiled graph: the registry's "hierarchical" algorithm on the
 *   (graph)       whole cluster of 8n GPUs (each node a copy of dgx1-v100, its socket the node; GPU j of
 *                 every two nodes joined by a network rail of B/8, the node's port shared by its 8
 *                 rails), simulated. No assumption of the formula: its intra-node steps are the
 *                 algorithm's direct reduce-scatter and copies, whatever links they cross.
 *   bound         2(n-1)/n x S / B: the bytes a node must send over its network link in any
 *                 all-reduce across n nodes (the bus bandwidth bound), at the full network bandwidth.
 *
 * One more assumption, about the network topology of the model: starfold_topology_ranks() links every
 * pair of nodes by its own link at B, and the model shares a link's bandwidth only among the transfers
 * on that link, not among the links of a node. A graph that drives several of a node's links at once
 * (the ring goes both ways round, up to 2 rings) would then send faster than the node's one network
 * port allows. So a network graph whose predicted time beats its busiest node's bytes out / B is
 * recompiled on links of B / k, k the number of peers a node sends to in that graph: the k flows share
 * the port. Halving-doubling sends to one peer at a time and needs no such correction.
 *
 * Usage: model_cluster (no arguments). Prints a markdown table. Exit 0, or 1 with the reason on stderr.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starfold/common.h>
#include <starfold/topology.h>
#include <starfold/graph.h>
#include <starfold/model.h>

#define GPUS_PER_NODE 8
#define NET_LATENCY_US 2.0

/* Reports a failed call with the library's detail; the callers return 1 from main. */
static int fail(const char *what, starfold_status_t st)
{
    fprintf(stderr, "model_cluster: %s: %s (%s)\n", what, starfold_status_string(st), starfold_last_error());
    return -1;
}

/* The collective: kind, sources, destinations, one float32 tensor of @p bytes. */
static void describe(starfold_collective_desc_t *d, starfold_tensor_desc_t *tensor, starfold_collective_t kind,
                     int ns, const int *src, int nd, const int *dst, size_t bytes)
{
    memset(d, 0, sizeof *d);
    tensor->dtype = STARFOLD_FLOAT32;
    tensor->count = bytes / sizeof(float);
    d->kind = kind;
    d->op = STARFOLD_OP_SUM;
    d->num_sources = ns;
    d->sources = src;
    d->num_destinations = nd;
    d->destinations = dst;
    d->num_tensors = 1;
    d->tensors = tensor;
}

/*
 * The fastest prediction among @p names (NULL: every registered algorithm) for the collective, its
 * algorithm's name in @p best (the graph's own name, "auto:ring" for "auto"). Algorithms that cannot
 * do the collective on the topology (STARFOLD_ERR_NOT_SUPPORTED) are left out.
 */
static int best_time(starfold_topology_t topo, const starfold_collective_desc_t *d, const char *const *names,
                     double *time_us, char *best, size_t best_size)
{
    const int count = names ? 0 : starfold_algorithm_count();
    *time_us = DBL_MAX;
    for (int i = 0; names ? names[i] != NULL : i < count; i++) {
        const char *name = names ? names[i] : starfold_algorithm_name(i);
        starfold_graph_t g = NULL;
        starfold_status_t st = starfold_graph_compile(topo, name, d, NULL, &g);
        if (st == STARFOLD_ERR_NOT_SUPPORTED) continue;
        if (st != STARFOLD_OK) return fail(name, st);
        starfold_prediction_t p;
        st = starfold_graph_simulate(g, NULL, &p);
        if (st == STARFOLD_OK && p.time_us < *time_us) {
            *time_us = p.time_us;
            snprintf(best, best_size, "%s", starfold_graph_algorithm(g));
        }
        starfold_graph_destroy(g);
        if (st != STARFOLD_OK) return fail("simulate", st);
    }
    if (*time_us == DBL_MAX) {
        fprintf(stderr, "model_cluster: no algorithm compiles this collective on %s\n", starfold_topology_name(topo));
        return -1;
    }
    return 0;
}

/*
 * Predicted time of one all-reduce of @p bytes per node across @p nodes nodes joined at @p bw_GBps per
 * node, with @p algorithm. Corrects for the node's single network port (see the top of the file): when
 * the graph beats bytes out / bw, recompiled on links of bw / k. @p shared gets k (1: no correction).
 */
static int network_allreduce(int nodes, double bw_GBps, const char *algorithm, size_t bytes, double *time_us,
                             int *shared)
{
    int src[STARFOLD_MAX_DEVICES];
    for (int i = 0; i < nodes; i++) src[i] = i;
    starfold_collective_desc_t d;
    starfold_tensor_desc_t tensor;
    describe(&d, &tensor, STARFOLD_COLL_REDUCE, nodes, src, 0, NULL, bytes);
    *shared = 1;
    for (int round = 0; round < 2; round++) {
        starfold_link_t net = { 0, 0, STARFOLD_LINK_NETWORK, 1, bw_GBps / *shared, NET_LATENCY_US };
        starfold_topology_t topo = NULL;
        starfold_graph_t g = NULL;
        starfold_link_bytes_t *pairs = NULL;
        size_t npairs = 0;
        starfold_prediction_t p;
        starfold_status_t st = starfold_topology_ranks(nodes, NULL, NULL, &net, &topo);
        if (st != STARFOLD_OK) return fail("starfold_topology_ranks", st);
        st = starfold_graph_compile(topo, algorithm, &d, NULL, &g);
        if (st == STARFOLD_OK) st = starfold_graph_simulate(g, NULL, &p);
        if (st == STARFOLD_OK) st = starfold_graph_link_bytes(g, &pairs, &npairs);
        starfold_graph_destroy(g);
        starfold_topology_destroy(topo);
        if (st != STARFOLD_OK) {
            free(pairs);
            return fail(algorithm, st);
        }
        /* The busiest node's bytes out and the number of peers each node sends to. */
        uint64_t out[STARFOLD_MAX_DEVICES] = { 0 };
        int peers[STARFOLD_MAX_DEVICES] = { 0 };
        for (size_t i = 0; i < npairs; i++) {
            out[pairs[i].from] += pairs[i].bytes;
            peers[pairs[i].from]++;
        }
        free(pairs);
        uint64_t most = 0;
        int k = 1;
        for (int i = 0; i < nodes; i++) {
            if (out[i] > most) most = out[i];
            if (peers[i] > k) k = peers[i];
        }
        *time_us = p.time_us;
        const double port_us = (double)most / (bw_GBps * 1e3); /* GB/s = 1e3 bytes per us */
        if (round > 0 || p.time_us >= port_us || k == 1) break;
        *shared = k; /* several links at once beat the port: share it among them, once */
    }
    return 0;
}

/* The cluster of @p nodes copies of @p node (its socket = its node) with a network rail of @p bw_GBps / 8
 * between GPU j of every two nodes. */
static starfold_status_t cluster_of(starfold_topology_t node, int nodes, double bw_GBps, starfold_topology_t *out)
{
    const int per = starfold_topology_num_devices(node);
    starfold_topology_t t = NULL;
    starfold_status_t st = starfold_topology_create("dgx1-v100 cluster", nodes * per, &t);
    for (int k = 0; k < nodes && st == STARFOLD_OK; k++) {
        for (int d = 0; d < per && st == STARFOLD_OK; d++) {
            char name[32];
            snprintf(name, sizeof name, "n%d:gpu%d", k, d);
            st = starfold_topology_set_device(t, k * per + d, name, STARFOLD_DEVICE_GPU, k);
        }
        for (int i = 0; i < starfold_topology_num_links(node) && st == STARFOLD_OK; i++) {
            starfold_link_t l;
            if ((st = starfold_topology_link(node, i, &l)) != STARFOLD_OK) break;
            l.a += k * per, l.b += k * per;
            st = starfold_topology_add_link(t, &l);
        }
    }
    for (int a = 0; a < nodes && st == STARFOLD_OK; a++)
        for (int b = a + 1; b < nodes && st == STARFOLD_OK; b++)
            for (int j = 0; j < per && st == STARFOLD_OK; j++) {
                const starfold_link_t rail = { a * per + j, b * per + j, STARFOLD_LINK_NETWORK, 1, bw_GBps / per,
                                               NET_LATENCY_US };
                st = starfold_topology_add_link(t, &rail);
            }
    if (st != STARFOLD_OK) {
        starfold_topology_destroy(t);
        return st;
    }
    *out = t;
    return STARFOLD_OK;
}

/* The compiled "hierarchical" all-reduce of @p bytes per GPU over the whole cluster, simulated. */
static int hierarchical_graph(starfold_topology_t node, int nodes, double bw_GBps, size_t bytes, double *time_us)
{
    starfold_topology_t t = NULL;
    starfold_status_t st = cluster_of(node, nodes, bw_GBps, &t);
    if (st != STARFOLD_OK) return fail("the cluster topology", st);
    const int n = starfold_topology_num_devices(t);
    int *all = malloc(sizeof *all * (size_t)n);
    if (!all) {
        starfold_topology_destroy(t);
        return fail("the cluster topology", STARFOLD_ERR_OUT_OF_MEMORY);
    }
    for (int i = 0; i < n; i++) all[i] = i;
    starfold_collective_desc_t d;
    starfold_tensor_desc_t tensor;
    describe(&d, &tensor, STARFOLD_COLL_REDUCE, n, all, 0, NULL, bytes);
    starfold_graph_t g = NULL;
    starfold_prediction_t p;
    st = starfold_graph_compile(t, "hierarchical", &d, NULL, &g);
    if (st == STARFOLD_OK) st = starfold_graph_simulate(g, NULL, &p);
    starfold_graph_destroy(g);
    starfold_topology_destroy(t);
    free(all);
    if (st != STARFOLD_OK) return fail("hierarchical on the cluster", st);
    *time_us = p.time_us;
    return 0;
}

/* The slowest NVLink of the node: a flat ring's intra-node hops go no faster. */
static double slowest_nvlink(starfold_topology_t node)
{
    double bw = DBL_MAX;
    for (int i = 0; i < starfold_topology_num_links(node); i++) {
        starfold_link_t l;
        if (starfold_topology_link(node, i, &l) == STARFOLD_OK && l.kind == STARFOLD_LINK_NVLINK && l.bandwidth_GBps < bw)
            bw = l.bandwidth_GBps;
    }
    return bw;
}

/* "1 MiB", "64 MiB". */
static const char *size_name(size_t bytes, char *buf, size_t size)
{
    if (bytes >= (size_t)1 << 30) snprintf(buf, size, "%zu GiB", bytes >> 30);
    else snprintf(buf, size, "%zu MiB", bytes >> 20);
    return buf;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "usage: model_cluster (no arguments)\n");
        return 2;
    }
    static const int node_counts[] = { 4, 16 };
    static const double networks_GBps[] = { 12.5, 25.0 }; /* 100 and 200 Gb/s per node */
    static const size_t sizes[] = { (size_t)1 << 20, (size_t)64 << 20, (size_t)256 << 20 };
    static const char *const net_algorithms[] = { "ring", "halving-doubling", NULL };

    starfold_topology_t node = NULL;
    starfold_status_t st = starfold_topology_builtin("dgx1-v100", &node);
    if (st != STARFOLD_OK) {
        fail("dgx1-v100", st);
        return 1;
    }
    if (starfold_topology_num_devices(node) != GPUS_PER_NODE) {
        fprintf(stderr, "model_cluster: dgx1-v100 has %d devices, not %d\n", starfold_topology_num_devices(node),
                GPUS_PER_NODE);
        starfold_topology_destroy(node);
        return 1;
    }
    const double nvlink_GBps = slowest_nvlink(node);
    int gpus[GPUS_PER_NODE];
    for (int i = 0; i < GPUS_PER_NODE; i++) gpus[i] = i;
    const int root = 0;
    int rc = 0;

    printf("| nodes | network | S per GPU | leader (ms) | hierarchical (ms) | hierarchical graph (ms) | flat ring (ms) | "
           "bound (ms) | best/bound |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    char notes[64][512];
    int num_notes = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0] && rc == 0; si++) {
        const size_t S = sizes[si];
        starfold_collective_desc_t d;
        starfold_tensor_desc_t tensor;
        double reduce_us, bcast_us, allreduce_us;
        char reduce_alg[64], bcast_alg[64], allreduce_alg[64];

        /* The node's three collectives, best of the registry each (they do not depend on n or B). */
        describe(&d, &tensor, STARFOLD_COLL_REDUCE, GPUS_PER_NODE, gpus, 1, &root, S);
        if (best_time(node, &d, NULL, &reduce_us, reduce_alg, sizeof reduce_alg)) rc = 1;
        describe(&d, &tensor, STARFOLD_COLL_BROADCAST, 1, &root, GPUS_PER_NODE, gpus, S);
        if (!rc && best_time(node, &d, NULL, &bcast_us, bcast_alg, sizeof bcast_alg)) rc = 1;
        describe(&d, &tensor, STARFOLD_COLL_REDUCE, GPUS_PER_NODE, gpus, 0, NULL, S);
        if (!rc && best_time(node, &d, NULL, &allreduce_us, allreduce_alg, sizeof allreduce_alg)) rc = 1;
        if (rc) break;
        char sname[32];
        if (num_notes < 64)
            snprintf(notes[num_notes++], sizeof notes[0], "S = %s: node reduce %.3f ms (%s), broadcast %.3f ms (%s), "
                     "all-reduce %.3f ms (%s)", size_name(S, sname, sizeof sname), reduce_us / 1e3, reduce_alg,
                     bcast_us / 1e3, bcast_alg, allreduce_us / 1e3, allreduce_alg);

        for (size_t ni = 0; ni < sizeof node_counts / sizeof node_counts[0] && rc == 0; ni++)
            for (size_t bi = 0; bi < sizeof networks_GBps / sizeof networks_GBps[0] && rc == 0; bi++) {
                const int n = node_counts[ni];
                const double B = networks_GBps[bi];
                /* The network all-reduce of S: ring for the leader (as the issue names it); the best of
                   ring and halving-doubling for the 8 concurrent shards of the hierarchical scheme. */
                double ring_us = 0, net_us = DBL_MAX;
                const char *net_alg = NULL;
                for (int a = 0; net_algorithms[a]; a++) {
                    double t;
                    int shared;
                    if (network_allreduce(n, B, net_algorithms[a], S, &t, &shared)) {
                        rc = 1;
                        break;
                    }
                    if (a == 0) ring_us = t;
                    if (t < net_us) net_us = t, net_alg = net_algorithms[a];
                    if (shared > 1 && num_notes < 64)
                        snprintf(notes[num_notes++], sizeof notes[0], "%d nodes, %g GB/s, %s, %s: network port "
                                 "shared by %d flows (links at %g GB/s)", n, B, size_name(S, sname, sizeof sname),
                                 net_algorithms[a], shared, B / shared);
                }
                if (rc) break;
                const double leader_us = reduce_us + ring_us + bcast_us;
                const double hier_us = allreduce_us / 2 + net_us + allreduce_us / 2;
                const int ring_len = GPUS_PER_NODE * n;
                const double hop_GBps = B < nvlink_GBps ? B : nvlink_GBps;
                const double flat_us = 2.0 * (ring_len - 1) *
                                       (NET_LATENCY_US + (double)S / ring_len / (hop_GBps * 1e3));
                const double bound_us = 2.0 * (n - 1) / n * (double)S / (B * 1e3);
                double graph_us = 0;
                if (hierarchical_graph(node, n, B, S, &graph_us)) {
                    rc = 1;
                    break;
                }
                double best_us = leader_us;
                if (hier_us < best_us) best_us = hier_us;
                if (graph_us < best_us) best_us = graph_us;
                if (flat_us < best_us) best_us = flat_us;
                printf("| %d | %.0f Gb/s | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f |\n", n, B * 8,
                       size_name(S, sname, sizeof sname), leader_us / 1e3, hier_us / 1e3, graph_us / 1e3, flat_us / 1e3,
                       bound_us / 1e3, best_us / bound_us);
                if (net_alg && strcmp(net_alg, "ring") != 0 && num_notes < 64)
                    snprintf(notes[num_notes++], sizeof notes[0], "%d nodes, %g GB/s, %s: hierarchical's network "
                             "part by %s (%.3f ms; ring %.3f ms)", n, B, sname, net_alg, net_us / 1e3, ring_us / 1e3);
            }
    }
    if (rc == 0) {
        printf("\nslowest NVLink of dgx1-v100: %g GB/s; network latency %g us\n", nvlink_GBps, NET_LATENCY_US);
        for (int i = 0; i < num_notes; i++) printf("- %s\n", notes[i]);
    }
    starfold_topology_destroy(node);
    return rc;
}
