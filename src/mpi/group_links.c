/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The links between a group's ranks (starfold/mpi.h): measured at creation, and the topologies that
 * graphs across ranks are compiled on.
 *
 * Measuring (starfold__group_links(), collective, at the end of starfold_group_create()): rank 0
 * ping-pongs on the group's own communicator with the lowest other rank of its node (shm) and the
 * lowest rank of another node (network): latency = the fastest of a few 8-byte round trips / 2;
 * bandwidth from two sizes, 1 MiB / ((the fastest 2 MiB round trip - the fastest 1 MiB one) / 2):
 * what both sizes pay alike drops out, the latency and a shaped link's burst (a token bucket lets its
 * first bytes through at line rate: measured with 1 MiB alone, a 1 Gbit/s link with a 256 KiB bucket
 * read a third faster than it is). A few milliseconds on shared memory, well under half a second on
 * a 1 Gbit/s network. Rank 0 then broadcasts the values, so
 * every rank holds the same bits and compiles the same graphs from them. While rank 0 and its peers
 * measure, every rank's StarPU workers are paused and the ranks that wait for the result sleep
 * between polls: on a node with fewer cores than threads, idle workers spinning and ranks waiting
 * in a blocking MPI_Bcast took the cores from the ping-pong, and 4 ranks on 2 cores measured
 * 0.03 GB/s of shared memory (the real figure: several GB/s), which priced every lowering 10-50x
 * too high.
 *
 * Hops (starfold__group_hops(), collective, once StarPU-MPI runs): the same two pairs time a round
 * trip of 8 bytes through StarPU-MPI itself (a registered variable, starpu_mpi_send / _recv on the
 * data communicator), which is what each cross-rank edge of a graph lowering pays: the request goes
 * through StarPU-MPI's progress thread on both sides, on top of MPI's latency. Measured here (2 cores,
 * 3 ranks): MPI 1-5 us, StarPU-MPI several hundred. The cost model prices the graph lowerings with
 * it (group_lowering.c) and MPI's own all-reduce with MPI's latency, so auto weighs what each pays.
 *
 *     node 0                      node 1
 *     rank 0 <-shm-> rank 1       rank 2      rank 3        rank 0 <-network-> rank 2
 *
 * The cluster topology (starfold_group_cluster_topology(), collective): every rank's local topology
 * (starfold_context_topology()) flattened into fixed-size records, all-gathered, and joined:
 *
 *     rank 0: r0:cpu0 -host- r0:cpu1        rank 1: r1:cpu0 -host- r1:cpu1
 *                \________________ shm or network ____/
 *
 * (the first devices of every two ranks linked; each rank's own links kept, so it stays connected).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu_mpi.h>

#include "base/common.h"
#include "mpi/group.h"
#include "topology/topology.h"

#define PING_TAG 0x5f1d    /* on g->comm, before any collective of the group can use it */
#define SMALL_BYTES 8
#define LARGE_BYTES (1 << 20) /* and twice it: the two sizes of the bandwidth */
#define SMALL_REPS 10
#define LARGE_REPS 3
#define HOP_TAG 0x5f1e     /* on g->data_comm, before any collective of the group can use it */
#define HOP_REPS 8

static starfold_status_t mpi_error(const char *fn, const char *what, int err)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", err);
    return starfold__error(STARFOLD_ERR_RUNTIME, "%s: %s failed: %s", fn, what, text);
}

static double clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/*
 * MPI_Bcast from rank 0 on @comm, waited for sleeping between polls (see the top of the file), at
 * most @limit seconds (group_bounded.c: @v is then abandoned). Rank 0 broadcasts whether its own
 * measures succeeded or not, so the others wait for it at most as long as its measures may take.
 */
static int bcast_sleeping(double *v, int n, MPI_Comm comm, double limit)
{
    MPI_Request rq = MPI_REQUEST_NULL;
    int err = MPI_Ibcast(v, n, MPI_DOUBLE, 0, comm, &rq);
    return err == MPI_SUCCESS ? starfold__mpi_wait_bounded(1, &rq, limit, 0) : err;
}

/*
 * How the measures are bounded. Each message waits at most @limit (the options' timeout_seconds): a
 * peer that does not answer that long is gone, stopped or cut off. The repetitions are a budget,
 * not a bound: once a pair has measured for half the limit, rank 0 stops at the next round trip
 * with what it has (at least one timed round trip per size) and tells its peer so in the message
 * itself (its first byte, or the word's value: 1 = the last round trip), so that both make the same
 * number. A machine too busy to repeat them all (2 cores under a parallel make check: 9 StarPU-MPI
 * round trips took over 1.5 s) then measures fewer, instead of failing the creation. The others
 * wait for rank 0's broadcast for as long as its measures may take.
 */
#define MEASURES_LIMIT(limit) ((limit) > 0 ? 16 * (limit) : 0)

/* The end of a pair's budget of repetitions (0: none). */
static double budget_end(double limit) { return limit > 0 ? starfold__now_s() + limit / 2 : 0; }

/* Whether round trip @i of at most @reps is the last: the reps done, or the budget spent after one timed. */
static int last_round(int i, int reps, double end)
{
    return i >= reps || (i >= 1 && end > 0 && starfold__now_s() >= end);
}

/* One message of the ping-pong, sent (@send) or received, polled busily (as a blocking call would) for
 * at most @limit: MPI_SUCCESS, MPI's error or STARFOLD__WAIT_EXPIRED. */
static int ping(MPI_Comm comm, int peer, int send, char *buf, int bytes, double limit)
{
    MPI_Request rq = MPI_REQUEST_NULL;
    const int err = send ? MPI_Isend(buf, bytes, MPI_BYTE, peer, PING_TAG, comm, &rq)
                         : MPI_Irecv(buf, bytes, MPI_BYTE, peer, PING_TAG, comm, &rq);
    return err == MPI_SUCCESS ? starfold__mpi_wait_bounded(1, &rq, limit, 1) : err;
}

/*
 * The fastest of up to @reps round trips of @bytes between this rank and @peer (after one to warm up),
 * in seconds; rank 0 (@lead) sends first and says which is the last (see MEASURES_LIMIT). -1 when MPI
 * fails, -2 when a message waited @limit (@buf is then abandoned: group_bounded.c).
 */
static double round_trip(MPI_Comm comm, int peer, int lead, char *buf, int bytes, int reps, double limit, double end)
{
    double best = INFINITY;
    if (!(limit > 0)) { /* no timeout: blocking calls, every repetition */
        for (int i = 0; i <= reps; i++) {
            const double t0 = MPI_Wtime();
            int err;
            if (lead) {
                err = MPI_Send(buf, bytes, MPI_BYTE, peer, PING_TAG, comm);
                if (err == MPI_SUCCESS) err = MPI_Recv(buf, bytes, MPI_BYTE, peer, PING_TAG, comm, MPI_STATUS_IGNORE);
            } else {
                err = MPI_Recv(buf, bytes, MPI_BYTE, peer, PING_TAG, comm, MPI_STATUS_IGNORE);
                if (err == MPI_SUCCESS) err = MPI_Send(buf, bytes, MPI_BYTE, peer, PING_TAG, comm);
            }
            if (err != MPI_SUCCESS) return -1;
            const double t = MPI_Wtime() - t0;
            if (i > 0 && t < best) best = t;
        }
        return best;
    }
    for (int i = 0;; i++) {
        if (lead) buf[0] = (char)last_round(i, reps, end);
        const double t0 = MPI_Wtime();
        int err = ping(comm, peer, lead, buf, bytes, limit);
        const int last = buf[0] != 0 || i >= reps; /* the peer reads it in what it received */
        if (err == MPI_SUCCESS) err = ping(comm, peer, !lead, buf, bytes, limit);
        if (err != MPI_SUCCESS) return err == STARFOLD__WAIT_EXPIRED ? -2 : -1;
        const double t = MPI_Wtime() - t0;
        if (i > 0 && t < best) best = t;
        if (last) return best;
    }
}

/*
 * Rank 0 and @peer measure: out[0] = bandwidth GB/s (when @bw), out[1] = latency us (when @lat), in
 * at most @limit seconds (0: no limit). Returns 0, -1 when MPI failed, -2 when the time ran out.
 */
static int measure(starfold_group_t g, int peer, int bw, int lat, char *buf, double *out, double limit)
{
    const int lead = g->rank == 0, other = lead ? peer : 0;
    const double end = budget_end(limit);
    const double small = round_trip(g->comm, other, lead, buf, SMALL_BYTES, SMALL_REPS, limit, end);
    if (small < 0) return (int)small;
    const double latency_s = small / 2;
    if (lat) out[1] = clamp(latency_s * 1e6, 0, STARFOLD_LINK_LATENCY_MAX_US);
    if (bw) {
        const double large = round_trip(g->comm, other, lead, buf, LARGE_BYTES, LARGE_REPS, limit, end);
        const double twice = large < 0 ? large
                                       : round_trip(g->comm, other, lead, buf, 2 * LARGE_BYTES, LARGE_REPS, limit, end);
        if (twice < 0) return (int)twice;
        /* The extra MiB's time; where noise hides it (shared memory, a few hundred us), 1 MiB alone. */
        double transfer = (twice - large) / 2;
        if (!(transfer > 0.25 * (large / 2))) transfer = large / 2 - latency_s;
        if (!(transfer > 0)) transfer = large / 2;
        out[0] = clamp(LARGE_BYTES / transfer / 1e9, STARFOLD_LINK_BANDWIDTH_MIN_GBPS, STARFOLD_LINK_BANDWIDTH_MAX_GBPS);
    }
    return 0;
}

/* Rank 0's partners: peers[0] the lowest other rank of its node, peers[1] the lowest rank of another
 * node; -1 where there is none. */
static void measured_peers(starfold_group_t g, int *peers)
{
    peers[0] = peers[1] = -1;
    for (int r = 1; r < g->size; r++) {
        if (peers[0] < 0 && g->node_of[r] == g->node_of[0]) peers[0] = r;
        if (peers[1] < 0 && g->node_of[r] != g->node_of[0]) peers[1] = r;
    }
}

/* The verdicts rank 0 broadcasts beside the values (the last double). */
enum { MEASURED = 0, MEASURE_FAILED = 1, MEASURE_EXPIRED = 2 };

starfold_status_t starfold__group_links(starfold_group_t g, const starfold_group_options_t *o)
{
    static const char fn[] = "starfold_group_create";
    const double limit = starfold__creation_limit(o);
    /* [0..1] shm bandwidth, latency; [2..3] network; [4] a verdict, [5] the peer it is about. On the
     * heap with the flags: abandoned, not freed, when a wait for them expired (group_bounded.c). */
    double *v = malloc(6 * sizeof *v);
    int *flags = malloc(2 * sizeof *flags); /* [0] this rank has no buffer, [1] some rank has none */
    if (!v || !flags) {
        free(v);
        free(flags);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    v[0] = g->shm_link.bandwidth_GBps;
    v[1] = g->shm_link.latency_us;
    v[2] = g->network_link.bandwidth_GBps;
    v[3] = g->network_link.latency_us;
    v[4] = MEASURED;
    v[5] = -1;
    const double given[4] = { o->shm_bandwidth_GBps, o->shm_latency_us, o->network_bandwidth_GBps, o->network_latency_us };
    for (int i = 0; i < 4; i++)
        if (given[i] > 0) v[i] = given[i];
    int peers[2];
    measured_peers(g, peers);
    int takes_part = 0;
    for (int k = 0; k < 2; k++)
        takes_part |= peers[k] >= 0 && (g->rank == 0 || g->rank == peers[k]) &&
                      (!(given[2 * k] > 0) || !(given[2 * k + 1] > 0));
    /* The buffer first, agreed on: a rank without one must not leave another waiting in a ping-pong. */
    char *buf = takes_part ? calloc(2, LARGE_BYTES) : NULL;
    flags[0] = takes_part && !buf;
    flags[1] = 0;
    MPI_Request rq = MPI_REQUEST_NULL;
    int err = MPI_Iallreduce(&flags[0], &flags[1], 1, MPI_INT, MPI_MAX, g->comm, &rq);
    if (err == MPI_SUCCESS) err = starfold__mpi_wait_bounded(1, &rq, limit, 0);
    if (err != MPI_SUCCESS || flags[1]) {
        free(buf);
        free(v);
        if (err == STARFOLD__WAIT_EXPIRED) return starfold__creation_expired(fn, "the measure of the links", limit);
        if (err != MPI_SUCCESS) return mpi_error(fn, "MPI_Iallreduce before measuring the links", err);
        free(flags);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for the ping-pong buffer (on some rank)",
                               fn);
    }
    free(flags);
    starpu_pause();
    int abandon_buf = 0;
    for (int k = 0; k < 2; k++) {
        const int peer = peers[k], bw = !(given[2 * k] > 0), lat = !(given[2 * k + 1] > 0);
        if (peer < 0 || (!bw && !lat) || (g->rank != 0 && g->rank != peer) || v[4] != MEASURED) continue;
        const int m = measure(g, peer, bw, lat, buf, v + 2 * k, limit);
        if (m != 0) {
            v[4] = m == -2 ? MEASURE_EXPIRED : MEASURE_FAILED;
            v[5] = peer;
            abandon_buf = m == -2;
        }
    }
    if (!abandon_buf) free(buf);
    err = bcast_sleeping(v, 6, g->comm, MEASURES_LIMIT(limit));
    starpu_resume();
    if (err == STARFOLD__WAIT_EXPIRED) return starfold__creation_expired(fn, "rank 0's measure of the links", limit);
    if (err != MPI_SUCCESS) {
        free(v);
        return mpi_error(fn, "MPI_Ibcast of the measured links", err);
    }
    const double verdict = v[4], about = v[5];
    if (verdict == MEASURED) {
        g->shm_link.bandwidth_GBps = v[0];
        g->shm_link.latency_us = v[1];
        g->network_link.bandwidth_GBps = v[2];
        g->network_link.latency_us = v[3];
    }
    free(v);
    if (verdict == MEASURE_EXPIRED)
        return starfold__error(STARFOLD_ERR_TIMEOUT,
                               "%s: measuring the link between ranks 0 and %d did not finish within timeout_seconds "
                               "(%g s): rank %d stopped or is gone, or the link is down or slower than %.2g MB/s; "
                               "nothing was created (give network_bandwidth_GBps and network_latency_us to skip the "
                               "measure, or a longer timeout); MPI keeps a request of it pending: end the job",
                               fn, (int)about, limit, (int)about,
                               2.0 * (SMALL_REPS + 1) * SMALL_BYTES / 1e6 / limit +
                                   2.0 * (LARGE_REPS + 1) * 3 * LARGE_BYTES / 1e6 / limit);
    if (verdict != MEASURED)
        return starfold__error(STARFOLD_ERR_RUNTIME, "%s: measuring the link between ranks 0 and %d failed", fn,
                               (int)about);
    return STARFOLD_OK;
}

/*
 * The fastest of HOP_REPS StarPU-MPI round trips of @h with @peer (after one to warm up), in seconds;
 * rank 0 (@lead) sends first. -1 when StarPU-MPI fails. Blocking calls: polled ones (starpu_mpi_test
 * between naps) stalled now and then, the reply never seen while the peer sat in
 * starpu_data_unregister (under valgrind for minutes; once at normal speed in run-mpi.sh). Every rank
 * has passed the bounded ping-pong by then; this step stays unbounded, as StarPU-MPI's start.
 */
static double hop_round_trip(starfold_group_t g, starpu_data_handle_t h, int peer, int lead)
{
    double best = INFINITY;
    for (int i = 0; i <= HOP_REPS; i++) {
        MPI_Status status;
        const double t0 = MPI_Wtime();
        int err;
        if (lead) {
            err = starpu_mpi_send(h, peer, HOP_TAG, g->data_comm);
            if (!err) err = starpu_mpi_recv(h, peer, HOP_TAG, g->data_comm, &status);
        } else {
            err = starpu_mpi_recv(h, peer, HOP_TAG, g->data_comm, &status);
            if (!err) err = starpu_mpi_send(h, peer, HOP_TAG, g->data_comm);
        }
        if (err) return -1;
        const double t = MPI_Wtime() - t0;
        if (i > 0 && t < best) best = t;
    }
    return best;
}

starfold_status_t starfold__group_hops(starfold_group_t g, const starfold_group_options_t *o)
{
    static const char fn[] = "starfold_group_create";
    const double limit = starfold__creation_limit(o);
    int peers[2];
    measured_peers(g, peers);
    const double given[2] = { o->shm_latency_us, o->network_latency_us };
    /* [0..1] the one-way hop in us inside a node and between nodes (0: not measured); [2] a verdict,
     * [3] the peer it is about. The word and @v are abandoned when a wait for them expired. */
    double *v = calloc(4, sizeof *v);
    uint64_t *word = calloc(1, sizeof *word);
    if (!v || !word) {
        free(v);
        free(word);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    starpu_data_handle_t h = NULL;
    for (int k = 0; k < 2 && v[2] == MEASURED; k++) {
        if (peers[k] < 0 || given[k] > 0 || (g->rank != 0 && g->rank != peers[k])) continue;
        if (!h) starpu_variable_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)word, sizeof *word);
        const double rt = hop_round_trip(g, h, g->rank == 0 ? peers[k] : 0, g->rank == 0);
        if (rt < 0) {
            v[2] = rt == -2 ? MEASURE_EXPIRED : MEASURE_FAILED;
            v[3] = peers[k];
        } else {
            v[k] = clamp(rt / 2 * 1e6, 0, STARFOLD_LINK_LATENCY_MAX_US);
        }
    }
    if (v[2] != MEASURE_EXPIRED) {
        if (h) starpu_data_unregister(h);
        free(word);
    }
    const int err = bcast_sleeping(v, 4, g->comm, MEASURES_LIMIT(limit));
    if (err == STARFOLD__WAIT_EXPIRED) return starfold__creation_expired(fn, "rank 0's timing of StarPU-MPI", limit);
    const double verdict = v[2], about = v[3];
    if (err == MPI_SUCCESS && verdict == MEASURED) {
        g->hop_us[0] = v[0];
        g->hop_us[1] = v[1];
    }
    free(v);
    if (err != MPI_SUCCESS) return mpi_error(fn, "MPI_Ibcast of the measured hops", err);
    if (verdict == MEASURE_EXPIRED)
        return starfold__error(STARFOLD_ERR_TIMEOUT,
                               "%s: timing StarPU-MPI between ranks 0 and %d did not finish within timeout_seconds "
                               "(%g s): rank %d stopped or is gone, or the link is down; nothing was created, and "
                               "StarPU-MPI keeps a request of it pending: end the job", fn, (int)about, limit, (int)about);
    if (verdict != MEASURED)
        return starfold__error(STARFOLD_ERR_RUNTIME, "%s: timing StarPU-MPI between ranks 0 and %d failed", fn,
                               (int)about);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_group_rank_topology(starfold_group_t group, starfold_topology_t *topology)
{
    if (!group || !topology)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_group_rank_topology: NULL %s",
                               !group ? "group" : "topology");
    return starfold_topology_ranks(group->size, group->node_of, &group->shm_link, &group->network_link, topology);
}

/* One device of a rank's local topology, as the ranks exchange it. */
typedef struct wire_device {
    int kind, unused;
    char name[56];
} wire_device_t;

/* One rank's local topology: fixed size, so that one MPI_Allgather carries them all. */
#define WIRE_MAX_LINKS 512
typedef struct wire_topology {
    int status;              /* this rank's verdict (a starfold_status_t) */
    int num_devices, num_links, unused;
    wire_device_t devices[STARFOLD_MAX_DEVICES];
    starfold_link_t links[WIRE_MAX_LINKS];
} wire_topology_t;

static starfold_status_t flatten(starfold_topology_t t, wire_topology_t *w)
{
    w->num_devices = starfold_topology_num_devices(t);
    w->num_links = starfold_topology_num_links(t);
    if (w->num_links > WIRE_MAX_LINKS)
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "starfold_group_cluster_topology: a rank's topology has %d "
                               "links, more than %d", w->num_links, WIRE_MAX_LINKS);
    for (int d = 0; d < w->num_devices; d++) {
        w->devices[d].kind = (int)starfold_topology_device_kind(t, d);
        snprintf(w->devices[d].name, sizeof w->devices[d].name, "%s", starfold_topology_device_name(t, d));
    }
    for (int k = 0; k < w->num_links; k++) {
        starfold_status_t st = starfold_topology_link(t, k, &w->links[k]);
        if (st != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

/* Joins the ranks' flattened topologies (identical input on every rank, identical result). */
static starfold_status_t join(starfold_group_t g, const wire_topology_t *all, starfold_topology_t *out)
{
    static const char fn[] = "starfold_group_cluster_topology";
    int total = 0, base[STARFOLD_MAX_DEVICES + 1];
    for (int r = 0; r < g->size; r++) {
        if (all[r].status != STARFOLD_OK)
            return starfold__error((starfold_status_t)all[r].status, "%s: rank %d could not describe its devices%s", fn, r,
                                   r == g->rank ? "" : "; see its message");
        if (r < STARFOLD_MAX_DEVICES) base[r] = total;
        total += all[r].num_devices;
    }
    if (total > STARFOLD_MAX_DEVICES || g->size > STARFOLD_MAX_DEVICES)
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "%s: the %d ranks hold %d devices together; a topology has at "
                               "most %d", fn, g->size, total, STARFOLD_MAX_DEVICES);
    char name[96];
    snprintf(name, sizeof name, "%d ranks on %d node%s, %d devices", g->size, g->num_nodes, g->num_nodes == 1 ? "" : "s",
             total);
    starfold_topology_t t = NULL;
    starfold_status_t st;
    SF_CHECK_GOTO(starfold_topology_create(name, total, &t), st, fail);
    for (int r = 0; r < g->size; r++) {
        for (int d = 0; d < all[r].num_devices; d++) {
            char dev[80];
            snprintf(dev, sizeof dev, "r%d:%.56s", r, all[r].devices[d].name);
            SF_CHECK_GOTO(starfold_topology_set_device(t, base[r] + d, dev, (starfold_device_kind_t)all[r].devices[d].kind,
                                                       g->node_of[r]), st, fail);
            starfold__topology_set_rank(t, base[r] + d, r);
        }
        for (int k = 0; k < all[r].num_links; k++) {
            const starfold_link_t *l = &all[r].links[k];
            SF_CHECK_GOTO(starfold__topology_add(t, base[r] + l->a, base[r] + l->b, l->kind, l->lanes, l->bandwidth_GBps,
                                                 l->latency_us), st, fail);
        }
    }
    for (int a = 0; a < g->size; a++)
        for (int b = a + 1; b < g->size; b++) {
            const starfold_link_t *l = g->node_of[a] == g->node_of[b] ? &g->shm_link : &g->network_link;
            SF_CHECK_GOTO(starfold__topology_add(t, base[a], base[b], l->kind, l->lanes, l->bandwidth_GBps, l->latency_us),
                          st, fail);
        }
    *out = t;
    return STARFOLD_OK;

fail:
    starfold_topology_destroy(t);
    return st;
}

STARFOLD_API starfold_status_t starfold_group_cluster_topology(starfold_group_t group, starfold_topology_t *topology)
{
    static const char fn[] = "starfold_group_cluster_topology";
    if (!group || !topology)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !group ? "group" : "topology");
    if (group->broken) return starfold__error(STARFOLD_ERR_RUNTIME, "%s: the group is broken (a collective failed)", fn);
    wire_topology_t *mine = calloc(1, sizeof *mine);
    wire_topology_t *all = calloc((size_t)group->size, sizeof *all);
    /* Agreed before the all-gather: a rank without its buffers must not leave the others waiting. */
    int no_mem = !mine || !all, any_no_mem = 0;
    int err = MPI_Allreduce(&no_mem, &any_no_mem, 1, MPI_INT, MPI_MAX, group->comm);
    if (err != MPI_SUCCESS || any_no_mem) {
        free(mine);
        free(all);
        return err != MPI_SUCCESS ? mpi_error(fn, "MPI_Allreduce", err)
                                  : starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory (on some rank)", fn);
    }
    starfold_topology_t local = NULL;
    starfold_status_t st = starfold_context_topology(group->ctx, &local);
    if (st == STARFOLD_OK) st = flatten(local, mine);
    starfold_topology_destroy(local);
    char my_msg[512];
    snprintf(my_msg, sizeof my_msg, "%s", st != STARFOLD_OK ? starfold_last_error() : "");
    mine->status = (int)st;
    err = MPI_Allgather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, group->comm);
    if (err != MPI_SUCCESS) {
        st = mpi_error(fn, "MPI_Allgather of the ranks' topologies", err);
    } else if (st != STARFOLD_OK) {
        st = starfold__error(st, "%s", my_msg); /* this rank's own failure keeps its own words */
    } else {
        st = join(group, all, topology);
    }
    free(mine);
    free(all);
    return st;
}
