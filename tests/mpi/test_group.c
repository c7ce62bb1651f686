/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Process groups across MPI ranks (starfold/mpi.h), run by tests/mpi/run-mpi.sh under mpirun with 2,
 * 3 and 4 ranks: `test_group K` with K = the ranks per faked node (0: the ranks sharing memory, all of
 * them on this one machine).
 *
 * Every rank runs the same CUnit suite; failures are summed over the ranks and rank 0 prints the
 * total, so the exit status is the same on every rank. Expected values follow from the launch alone:
 * rank and size are MPI's, the node of rank r is r / K (K > 0) or 0 (one machine), each rank brings
 * the 2 devices its context was made with.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <starpu.h>
#include <starfold.h>
#include <starfold/mpi.h>

#include "mpi/group.h" /* the testing hook test_no_pack */
#include "../runner.h"

static starfold_context_t ctx;
static int ranks_per_node;
static int world_rank, world_size;

static void test_create(void)
{
    starfold_group_options_t o;
    starfold_group_options_init(&o);
    o.ranks_per_node = ranks_per_node;
    starfold_group_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_group_rank(g), world_rank);
    CU_ASSERT_EQUAL(starfold_group_size(g), world_size);
    CU_ASSERT_PTR_EQUAL(starfold_group_context(g), ctx);
    const int nodes = ranks_per_node > 0 ? (world_size + ranks_per_node - 1) / ranks_per_node : 1;
    CU_ASSERT_EQUAL(starfold_group_num_nodes(g), nodes);
    for (int r = 0; r < world_size; r++) {
        CU_ASSERT_EQUAL(starfold_group_node(g, r), ranks_per_node > 0 ? r / ranks_per_node : 0);
        CU_ASSERT_EQUAL(starfold_group_num_devices(g, r), 2);
    }
    CU_ASSERT_EQUAL(starfold_group_node(g, -1), -1);
    CU_ASSERT_EQUAL(starfold_group_node(g, world_size), -1);
    CU_ASSERT_EQUAL(starfold_group_num_devices(g, world_size), -1);
    starfold_group_destroy(g);
    CU_ASSERT_EQUAL(starfold_group_rank(NULL), -1);
    CU_ASSERT_EQUAL(starfold_group_size(NULL), 0);
    starfold_group_destroy(NULL);
}

/*
 * The links between ranks: measured at creation, the same bits on every rank; given values kept
 * without measuring; the rank topology (one device per rank) and the cluster topology (every rank's
 * 2 devices) with their link kinds.
 */
static void test_links_and_topologies(void)
{
    starfold_group_options_t o;
    starfold_group_options_init(&o);
    CU_ASSERT_EQUAL(o.network_bandwidth_GBps, 0);
    CU_ASSERT_EQUAL(o.shm_latency_us, 0);
    o.ranks_per_node = ranks_per_node;
    starfold_group_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_OK);
    const int n = world_size, nodes = starfold_group_num_nodes(g);
    starfold_topology_t rt = NULL, ct = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_group_rank_topology(g, &rt), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_num_devices(rt), n);
    CU_ASSERT_EQUAL(starfold_topology_num_links(rt), n * (n - 1) / 2);
    /* Every rank holds the same values: rank 0's, to the bit. */
    double mine[4] = { 0 }, root[4] = { 0 };
    int has_shm = 0, has_net = 0;
    for (int k = 0; k < starfold_topology_num_links(rt); k++) {
        starfold_link_t l;
        CU_ASSERT_EQUAL_FATAL(starfold_topology_link(rt, k, &l), STARFOLD_OK);
        const int same = starfold_group_node(g, l.a) == starfold_group_node(g, l.b);
        CU_ASSERT_EQUAL(l.kind, same ? STARFOLD_LINK_SHM : STARFOLD_LINK_NETWORK);
        CU_ASSERT(l.bandwidth_GBps >= STARFOLD_LINK_BANDWIDTH_MIN_GBPS && l.bandwidth_GBps <= STARFOLD_LINK_BANDWIDTH_MAX_GBPS);
        CU_ASSERT(l.latency_us >= 0 && l.latency_us <= STARFOLD_LINK_LATENCY_MAX_US);
        double *v = same ? mine : mine + 2;
        v[0] = l.bandwidth_GBps, v[1] = l.latency_us;
        has_shm |= same, has_net |= !same;
    }
    CU_ASSERT_EQUAL(has_net, nodes > 1);
    memcpy(root, mine, sizeof root);
    MPI_Bcast(root, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    CU_ASSERT(memcmp(root, mine, sizeof root) == 0);
    if (world_rank == 0)
        printf("\n    measured: shm %.3g GB/s %.3g us, network %.3g GB/s %.3g us (%s) ", mine[0], mine[1], mine[2],
               mine[3], has_shm && has_net ? "both" : has_shm ? "shm only" : "network only");

    /* The cluster topology: 2 devices a rank, rank-major, each rank's host link kept, first devices linked. */
    CU_ASSERT_EQUAL_FATAL(starfold_group_cluster_topology(g, &ct), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_topology_num_devices(ct), 2 * n);
    CU_ASSERT_EQUAL(starfold_topology_num_links(ct), n + n * (n - 1) / 2);
    for (int d = 0; d < 2 * n; d++) {
        char want[32];
        snprintf(want, sizeof want, "r%d:", d / 2);
        CU_ASSERT(strncmp(starfold_topology_device_name(ct, d), want, strlen(want)) == 0);
        CU_ASSERT_EQUAL(starfold_topology_device_rank(ct, d), d / 2);
        CU_ASSERT_EQUAL(starfold_topology_device_socket(ct, d), starfold_group_node(g, d / 2));
    }
    if (n > 1) {
        CU_ASSERT(starfold_topology_same_memory(ct, 0, 1));
        CU_ASSERT(!starfold_topology_same_memory(ct, 0, 2));
    }
    for (int k = 0; k < starfold_topology_num_links(ct); k++) {
        starfold_link_t l;
        CU_ASSERT_EQUAL_FATAL(starfold_topology_link(ct, k, &l), STARFOLD_OK);
        const int ra = l.a / 2, rb = l.b / 2;
        if (ra == rb) {
            CU_ASSERT(l.kind != STARFOLD_LINK_SHM && l.kind != STARFOLD_LINK_NETWORK);
        } else {
            CU_ASSERT(l.a % 2 == 0 && l.b % 2 == 0);
            CU_ASSERT_EQUAL(l.kind, starfold_group_node(g, ra) == starfold_group_node(g, rb) ? STARFOLD_LINK_SHM
                                                                                           : STARFOLD_LINK_NETWORK);
        }
    }
    CU_ASSERT_EQUAL(starfold_topology_validate(ct), STARFOLD_OK);
    /* The same topology on every rank: a checksum of its names, sockets and links, bit for bit. */
    unsigned long sum[2] = { 0, 0 }, sum0[2];
    for (int d = 0; d < starfold_topology_num_devices(ct); d++)
        for (const char *c = starfold_topology_device_name(ct, d); *c; c++) sum[0] = sum[0] * 31 + (unsigned char)*c;
    for (int k = 0; k < starfold_topology_num_links(ct); k++) {
        starfold_link_t l;
        starfold_topology_link(ct, k, &l);
        unsigned long bits[2];
        memcpy(bits, &l.bandwidth_GBps, sizeof bits[0]);
        memcpy(bits + 1, &l.latency_us, sizeof bits[1]);
        sum[1] = sum[1] * 31 + (unsigned long)(l.a * 4096 + l.b * 16 + (int)l.kind) + bits[0] * 7 + bits[1];
    }
    memcpy(sum0, sum, sizeof sum);
    MPI_Bcast(sum0, 2, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
    CU_ASSERT(sum0[0] == sum[0] && sum0[1] == sum[1]);
    starfold_topology_destroy(ct);
    starfold_topology_destroy(rt);
    CU_ASSERT_EQUAL(starfold_group_rank_topology(NULL, &rt), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_group_cluster_topology(g, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_group_destroy(g);

    /* Given values: kept as given, nothing measured for them. */
    o.network_bandwidth_GBps = 3.5, o.network_latency_us = 7;
    o.shm_bandwidth_GBps = 20, o.shm_latency_us = 0.5;
    CU_ASSERT_EQUAL_FATAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_group_rank_topology(g, &rt), STARFOLD_OK);
    for (int k = 0; k < starfold_topology_num_links(rt); k++) {
        starfold_link_t l;
        starfold_topology_link(rt, k, &l);
        CU_ASSERT_EQUAL(l.bandwidth_GBps, l.kind == STARFOLD_LINK_SHM ? 20 : 3.5);
        CU_ASSERT_EQUAL(l.latency_us, l.kind == STARFOLD_LINK_SHM ? 0.5 : 7);
    }
    starfold_topology_destroy(rt);
    starfold_group_destroy(g);

    /* Nodes faked on this one machine (2 ranks each), every link alike: a ring's two neighbours, one
     * in the node and one out, share one memory, not two ports, so no graph is priced under MPI's
     * own at 64 MiB and auto keeps "mpi" (it took the ring, 2-4x slower, on 16 cores). */
    if (world_size >= 3) {
        starfold_group_options_t f;
        starfold_group_options_init(&f);
        f.ranks_per_node = 2;
        f.network_bandwidth_GBps = f.shm_bandwidth_GBps = 10;
        f.network_latency_us = f.shm_latency_us = 1;
        CU_ASSERT_EQUAL_FATAL(starfold_group_create(ctx, MPI_COMM_WORLD, &f, &g), STARFOLD_OK);
        const starfold_tensor_desc_t big = { STARFOLD_FLOAT32, (size_t)16 << 20 };
        const char *chosen = NULL;
        double auto_us = 0, ring_us = 0, mpi_us = 0;
        CU_ASSERT_EQUAL(starfold_group_predict(g, STARFOLD_OP_SUM, 1, &big, "auto", &chosen, &auto_us), STARFOLD_OK);
        CU_ASSERT_PTR_NOT_NULL_FATAL(chosen);
        CU_ASSERT_STRING_EQUAL(chosen, "mpi");
        CU_ASSERT_EQUAL(starfold_group_predict(g, STARFOLD_OP_SUM, 1, &big, "ring", NULL, &ring_us), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_group_predict(g, STARFOLD_OP_SUM, 1, &big, "mpi", NULL, &mpi_us), STARFOLD_OK);
        CU_ASSERT(ring_us > 0.9 * mpi_us); /* the ring's bytes out of a rank, as MPI's ring's */
        starfold_group_destroy(g);
    }

    /* A bad value on the last rank, or values differing between ranks: every rank fails alike. */
    g = NULL;
    o.network_bandwidth_GBps = world_rank == world_size - 1 ? -1 : 3.5;
    CU_ASSERT_EQUAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(g);
    if (world_size > 1) {
        o.network_bandwidth_GBps = world_rank == world_size - 1 ? 4 : 3.5;
        CU_ASSERT_EQUAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NULL(g);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "network_bandwidth_GBps"));
    }
}

/* Two groups at once over different communicators (StarPU-MPI shared, stopped with the last). */
static void test_two_groups(void)
{
    MPI_Comm half = MPI_COMM_NULL;
    CU_ASSERT_EQUAL_FATAL(MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half), MPI_SUCCESS);
    starfold_group_t all = NULL, part = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_group_create(ctx, MPI_COMM_WORLD, NULL, &all), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_group_create(ctx, half, NULL, &part), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_group_size(part), (world_size + 1 - world_rank % 2) / 2);
    CU_ASSERT_EQUAL(starfold_group_rank(part), world_rank / 2);
    starfold_group_destroy(part);
    starfold_group_destroy(all);
    MPI_Comm_free(&half);
}

/*
 * Bad arguments on one rank fail every rank, with the same status, and create nothing: a negative
 * ranks_per_node on the last rank; ranks_per_node differing between ranks; a NULL output on rank 0.
 */
static void test_collective_errors(void)
{
    starfold_group_options_t o;
    starfold_group_options_init(&o);
    starfold_group_t g = (starfold_group_t)(uintptr_t)0x5eed;
    if (world_rank == world_size - 1) o.ranks_per_node = -1;
    CU_ASSERT_EQUAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    char want[64];
    snprintf(want, sizeof want, "rank %d refused its arguments", world_size - 1);
    const char *expected = world_rank == world_size - 1 ? "ranks_per_node must be >= 0" : want;
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), expected));
    CU_ASSERT_PTR_EQUAL(g, (starfold_group_t)(uintptr_t)0x5eed);

    o.ranks_per_node = world_rank == 1 ? 2 : 1;
    CU_ASSERT_EQUAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "rank 1 gives other options than rank 0"));
    CU_ASSERT_PTR_EQUAL(g, (starfold_group_t)(uintptr_t)0x5eed);

    starfold_group_options_init(&o);
    CU_ASSERT_EQUAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, world_rank == 0 ? NULL : &g),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_EQUAL(g, (starfold_group_t)(uintptr_t)0x5eed);
    CU_ASSERT_EQUAL(starfold_group_create(ctx, MPI_COMM_NULL, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "MPI_COMM_NULL"));
    /* Still usable afterwards: nothing was left half-made. */
    CU_ASSERT_EQUAL_FATAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_OK);
    starfold_group_destroy(g);
}

/* ------------------------------------------------------------------------------------------------
 * All-reduce across ranks. Global replica g = rank * 2 + device; element i of tensor t of replica g
 * at step s is value(op, g, i, s), small integers so every op is exact in every dtype; the expected
 * result is worked out here from the definition (op over all 2 x size replicas), not from starfold.
 */
#define NDEV 2
static double value(starfold_op_t op, int g, size_t i, int s)
{
    if (op == STARFOLD_OP_PROD) return (double)(1 + (g + (int)i + s) % 2); /* 1 or 2: products stay exact */
    return (double)((g * 7 + (int)(i % 13) + 3 * s) % 29) - 9;          /* -9 .. 19, distinct enough */
}

/* value() as dtype @dt holds it (unsigned types hold 0 for the negative ones). */
static double held(starfold_dtype_t dt, double x)
{
    unsigned char e[8] = { 0 };
    (void)starfold_element_from_double(dt, x, e, 0);
    return starfold_element_to_double(dt, e, 0);
}

/* Over @total replicas 0 .. total-1: exact sums (every dtype holds them), MEAN divided as the kernels
 * do (float32 for float32, float16 and bfloat16, rounded once to the type; integers truncating). */
static double expected_of(starfold_op_t op, starfold_dtype_t dt, size_t i, int s, int total)
{
    double acc = held(dt, value(op, 0, i, s));
    for (int g = 1; g < total; g++) {
        const double x = held(dt, value(op, g, i, s));
        if (op == STARFOLD_OP_SUM || op == STARFOLD_OP_MEAN) acc += x;
        else if (op == STARFOLD_OP_PROD) acc *= x;
        else if (op == STARFOLD_OP_MIN) acc = x < acc ? x : acc;
        else acc = x > acc ? x : acc;
    }
    if (op != STARFOLD_OP_MEAN) return acc;
    if (dt == STARFOLD_FLOAT32 || dt == STARFOLD_FLOAT16 || dt == STARFOLD_BFLOAT16)
        return held(dt, (double)((float)acc / (float)total));
    if (dt == STARFOLD_FLOAT64) return acc / total;
    return (double)((long long)acc / total); /* integers truncate toward zero */
}

/* Over every replica of every rank (NDEV per rank). */
static double expected(starfold_op_t op, starfold_dtype_t dt, size_t i, int s)
{
    return expected_of(op, dt, i, s, NDEV * world_size);
}

static void put(void *p, starfold_dtype_t dt, size_t i, double x)
{
    (void)starfold_element_from_double(dt, x, p, i);
}

static double get(const void *p, starfold_dtype_t dt, size_t i)
{
    return starfold_element_to_double(dt, p, i);
}

/* Replicas of NT tensors (sizes below) on this rank's 2 devices: in and out handles, device-major. */
#define NT 3
static const size_t sizes[NT] = { 1, 37, 1000 };

typedef struct replicas {
    starpu_data_handle_t in[NDEV * NT], out[NDEV * NT];
    starfold_tensor_desc_t tensors[NT];
} replicas_t;

static void replicas_make(replicas_t *r, starfold_dtype_t dt)
{
    for (int t = 0; t < NT; t++) r->tensors[t] = (starfold_tensor_desc_t){ dt, sizes[t] };
    for (int d = 0; d < NDEV; d++)
        for (int t = 0; t < NT; t++) {
            CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, d, dt, sizes[t], &r->in[d * NT + t]), STARFOLD_OK);
            CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, d, dt, sizes[t], &r->out[d * NT + t]), STARFOLD_OK);
        }
}

static void replicas_free(replicas_t *r)
{
    for (int k = 0; k < NDEV * NT; k++) {
        starfold_vector_destroy(ctx, r->in[k]);
        starfold_vector_destroy(ctx, r->out[k]);
    }
}

static void fill(replicas_t *r, starfold_op_t op, starfold_dtype_t dt, int s, double sentinel)
{
    static unsigned char buf[1000 * 8];
    for (int d = 0; d < NDEV; d++)
        for (int t = 0; t < NT; t++) {
            for (size_t i = 0; i < sizes[t]; i++) put(buf, dt, i, value(op, world_rank * NDEV + d, i, s));
            CU_ASSERT_EQUAL(starfold_vector_write(r->in[d * NT + t], buf, sizes[t] * starfold_dtype_size(dt)), STARFOLD_OK);
            for (size_t i = 0; i < sizes[t]; i++) put(buf, dt, i, sentinel);
            CU_ASSERT_EQUAL(starfold_vector_write(r->out[d * NT + t], buf, sizes[t] * starfold_dtype_size(dt)), STARFOLD_OK);
        }
}

/* Elements of this rank's outputs that are not the expected value (or not @sentinel when @untouched). */
static long wrong(replicas_t *r, starfold_op_t op, starfold_dtype_t dt, int s, int untouched, double sentinel)
{
    static unsigned char buf[1000 * 8];
    long bad = 0;
    for (int d = 0; d < NDEV; d++)
        for (int t = 0; t < NT; t++) {
            if (starfold_vector_read(r->out[d * NT + t], buf, sizes[t] * starfold_dtype_size(dt)) != STARFOLD_OK) return -1;
            for (size_t i = 0; i < sizes[t]; i++)
                bad += get(buf, dt, i) != (untouched ? sentinel : expected(op, dt, i, s));
        }
    return bad;
}

static starfold_group_t make_group(double timeout)
{
    starfold_group_options_t o;
    starfold_group_options_init(&o);
    o.ranks_per_node = ranks_per_node;
    o.timeout_seconds = timeout;
    starfold_group_t g = NULL;
    CU_ASSERT_EQUAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_OK);
    return g;
}

/*
 * Every op x dtype, three tensors (1, 37 and 1,000 elements, a vector each), over 2 devices per rank:
 * as the group chooses (MPI's lowering packs them, group_pack.c), then on two dtypes through the
 * leaders with MPI's all-reduce in place there (the path of devices with their own memory).
 */
static void test_all_reduce_ops(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    /* Every dtype as the group chooses, then float32 and int64 through the leaders. */
    static const int leaders[] = { STARFOLD_FLOAT32, STARFOLD_INT64 };
    for (int k = 0; k < STARFOLD_DTYPE_COUNT + 2; k++) {
        const int dt = k < STARFOLD_DTYPE_COUNT ? k : leaders[k - STARFOLD_DTYPE_COUNT];
        if (k == STARFOLD_DTYPE_COUNT) {
            g->test_no_pack = 1;
            CU_ASSERT_EQUAL(starfold_group_set_lowering(g, "mpi"), STARFOLD_OK);
        }
        replicas_t r;
        replicas_make(&r, (starfold_dtype_t)dt);
        for (int op = 0; op < STARFOLD_OP_COUNT; op++) {
            fill(&r, (starfold_op_t)op, (starfold_dtype_t)dt, 0, -77);
            CU_ASSERT_EQUAL(starfold_group_all_reduce(g, (starfold_op_t)op, NT, r.tensors, r.in, r.out), STARFOLD_OK);
            if (g->test_no_pack) {
                CU_ASSERT_STRING_EQUAL(starfold_group_last_plan(g), "leaders");
            }
            const long bad = wrong(&r, (starfold_op_t)op, (starfold_dtype_t)dt, 0, 0, 0);
            CU_ASSERT_EQUAL(bad, 0);
            if (bad) fprintf(stderr, "rank %d: %s %s: %ld wrong\n", world_rank, starfold_op_name((starfold_op_t)op),
                             starfold_dtype_name((starfold_dtype_t)dt), bad);
        }
        replicas_free(&r);
    }
    starfold_group_destroy(g);
}

/* 20 steps with the inputs changed every time: a stale transfer would give an earlier step's sums. */
static void test_all_reduce_steps(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    replicas_t r;
    replicas_make(&r, STARFOLD_FLOAT32);
    long bad = 0;
    for (int s = 0; s < 20; s++) {
        fill(&r, STARFOLD_OP_SUM, STARFOLD_FLOAT32, s, -77);
        CU_ASSERT_EQUAL(starfold_group_all_reduce(g, STARFOLD_OP_SUM, NT, r.tensors, r.in, r.out), STARFOLD_OK);
        bad += wrong(&r, STARFOLD_OP_SUM, STARFOLD_FLOAT32, s, 0, 0);
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* In place: outputs are the inputs. */
    fill(&r, STARFOLD_OP_MAX, STARFOLD_FLOAT32, 5, -77);
    CU_ASSERT_EQUAL(starfold_group_all_reduce(g, STARFOLD_OP_MAX, NT, r.tensors, r.in, r.in), STARFOLD_OK);
    starpu_data_handle_t keep[NDEV * NT];
    memcpy(keep, r.out, sizeof keep);
    memcpy(r.out, r.in, sizeof keep);
    CU_ASSERT_EQUAL(wrong(&r, STARFOLD_OP_MAX, STARFOLD_FLOAT32, 5, 0, 0), 0);
    memcpy(r.out, keep, sizeof keep);
    replicas_free(&r);
    starfold_group_destroy(g);
}

/* A context of its own with one device per rank, and a group over it with @lowering (NULL: the
 * group's own); NULL when either cannot be made (*@c1 then destroyed). */
static starfold_group_t one_device_group(starfold_context_t *c1, const char *lowering)
{
    starfold_context_options_t co;
    starfold_context_options_init(&co);
    co.mode = STARFOLD_DEVICES_CPU;
    co.num_devices = 1;
    *c1 = NULL;
    CU_ASSERT_EQUAL(starfold_context_create(&co, c1), STARFOLD_OK);
    if (!*c1) return NULL;
    starfold_group_options_t o;
    starfold_group_options_init(&o);
    o.timeout_seconds = 60;
    starfold_group_t g = NULL;
    CU_ASSERT_EQUAL(starfold_group_create(*c1, MPI_COMM_WORLD, &o, &g), STARFOLD_OK);
    if (g && lowering) {
        CU_ASSERT_EQUAL(starfold_group_set_lowering(g, lowering), STARFOLD_OK);
    }
    if (!g) starfold_context_destroy(*c1), *c1 = NULL;
    return g;
}

/*
 * One device per rank, the MPI lowering: the direct plan (no leader, MPI from the inputs into the
 * outputs). Over a context of its own with one device: two float32 tensors as views of one vector
 * and an int32 one, replica g (= the rank) holding (g + 1)(i + 1) + s at step s; MEAN (the int32
 * truncated), then SUM in place, then 5 persistent starts with the inputs changed; a layout that is
 * not one run (the outputs' views out of order) still right, packed.
 */
static void test_direct(void)
{
    starfold_context_t c1 = NULL;
    starfold_group_t g = one_device_group(&c1, "mpi");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const int R = world_size;
    const starfold_tensor_desc_t t[3] = { { STARFOLD_FLOAT32, 300 }, { STARFOLD_INT32, 7 }, { STARFOLD_FLOAT32, 700 } };
    starpu_data_handle_t fin = NULL, fout = NULL, iin = NULL, iout = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_vector_create(c1, 0, STARFOLD_FLOAT32, 1000, &fin), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_vector_create(c1, 0, STARFOLD_FLOAT32, 1000, &fout), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_vector_create(c1, 0, STARFOLD_INT32, 7, &iin), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_vector_create(c1, 0, STARFOLD_INT32, 7, &iout), STARFOLD_OK);
    starfold_view_t in[3] = { { fin, 0 }, { iin, 0 }, { fin, 300 } }, out[3] = { { fout, 0 }, { iout, 0 }, { fout, 300 } };
    float f[1000];
    int32_t k[7];
    long bad = 0;
#define FILL(s)                                                                                                  \
    do {                                                                                                         \
        for (int i = 0; i < 1000; i++) f[i] = (float)((world_rank + 1) * (i % 50 + 1) + (s));                  \
        for (int i = 0; i < 7; i++) k[i] = (world_rank + 1) * (i + 1) + (s);                                    \
        CU_ASSERT_EQUAL(starfold_vector_write(fin, f, sizeof f), STARFOLD_OK);                                 \
        CU_ASSERT_EQUAL(starfold_vector_write(iin, k, sizeof k), STARFOLD_OK);                                 \
    } while (0)
    /* sum over ranks of (r + 1) m + s = m R(R + 1)/2 + R s */
#define CHECK(h_f, h_i, s, mean)                                                                                 \
    do {                                                                                                         \
        CU_ASSERT_EQUAL(starfold_vector_read(h_f, f, sizeof f), STARFOLD_OK);                                  \
        CU_ASSERT_EQUAL(starfold_vector_read(h_i, k, sizeof k), STARFOLD_OK);                                  \
        for (int i = 0; i < 1000; i++) {                                                                         \
            const double sum = (double)(i % 50 + 1) * R * (R + 1) / 2 + (double)R * (s);                        \
            bad += f[i] != (float)((mean) ? sum / R : sum);                                                      \
        }                                                                                                        \
        for (int i = 0; i < 7; i++) {                                                                            \
            const long sum = (long)(i + 1) * R * (R + 1) / 2 + (long)R * (s);                                   \
            bad += k[i] != (int32_t)((mean) ? sum / R : sum);                                                    \
        }                                                                                                        \
    } while (0)
    FILL(0);
    CU_ASSERT_PTR_NULL(starfold_group_last_plan(g)); /* none before the first */
    CU_ASSERT_PTR_NULL(starfold_group_last_plan(NULL));
    CU_ASSERT_EQUAL(starfold_group_all_reduce_views(g, STARFOLD_OP_MEAN, 3, t, in, out), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_group_last_lowering(g), "mpi");
    CU_ASSERT_STRING_EQUAL(starfold_group_last_plan(g), "direct");
    CHECK(fout, iout, 0, 1);
    FILL(1);
    CU_ASSERT_EQUAL(starfold_group_all_reduce_views(g, STARFOLD_OP_SUM, 3, t, in, in), STARFOLD_OK); /* in place */
    CHECK(fin, iin, 1, 0);
    starfold_group_persistent_t p = NULL;
    const starpu_data_handle_t hin[2] = { fin, iin }, hout[2] = { fout, iout };
    const starfold_tensor_desc_t whole[2] = { { STARFOLD_FLOAT32, 1000 }, { STARFOLD_INT32, 7 } };
    CU_ASSERT_EQUAL_FATAL(starfold_group_all_reduce_init(g, STARFOLD_OP_SUM, 2, whole, hin, hout, &p), STARFOLD_OK);
    for (int s = 2; s < 7; s++) {
        FILL(s);
        CU_ASSERT_EQUAL(starfold_group_persistent_start(p), STARFOLD_OK);
        CHECK(fout, iout, s, 0);
    }
    starfold_group_persistent_destroy(p);
    /* Not one run: the float outputs swapped around (through the leaders, the same sums). */
    const starfold_tensor_desc_t t2[2] = { { STARFOLD_FLOAT32, 500 }, { STARFOLD_FLOAT32, 500 } };
    const starfold_view_t in2[2] = { { fin, 0 }, { fin, 500 } }, out2[2] = { { fout, 500 }, { fout, 0 } };
    FILL(9);
    CU_ASSERT_EQUAL(starfold_group_all_reduce_views(g, STARFOLD_OP_SUM, 2, t2, in2, out2), STARFOLD_OK);
    CU_ASSERT_STRING_EQUAL(starfold_group_last_plan(g), "packed");
    CU_ASSERT_EQUAL(starfold_vector_read(fout, f, sizeof f), STARFOLD_OK);
    for (int i = 0; i < 1000; i++) {
        const int src = i < 500 ? i + 500 : i - 500;
        bad += f[i] != (float)((double)(src % 50 + 1) * R * (R + 1) / 2 + (double)R * 9);
    }
#undef FILL
#undef CHECK
    CU_ASSERT_EQUAL(bad, 0);
    starfold_vector_destroy(c1, fin);
    starfold_vector_destroy(c1, fout);
    starfold_vector_destroy(c1, iin);
    starfold_vector_destroy(c1, iout);
    starfold_group_destroy(g);
    starfold_context_destroy(c1);
}

/*
 * One device per rank, the MPI lowering, each tensor its own vector (as a StarPU application registers
 * its gradients): the packed plan, one task per dtype packing every input, calling MPI's all-reduce
 * and unpacking. Four tensors of three dtypes, replica g (= the rank) holding value(op, g, i, s):
 * every op, a step each with the inputs changed (a stale pack would give an earlier step's
 * results), in place, persistent starts; a view outside its vector on one rank refused on every
 * rank, nothing written.
 */
#define PT 4
static void test_packed(void)
{
    starfold_context_t c1 = NULL;
    starfold_group_t g = one_device_group(&c1, "mpi");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const starfold_tensor_desc_t t[PT] = { { STARFOLD_FLOAT32, 37 }, { STARFOLD_INT32, 5 }, { STARFOLD_FLOAT32, 1000 },
                                           { STARFOLD_FLOAT64, 3 } };
    starpu_data_handle_t in[PT], out[PT];
    for (int k = 0; k < PT; k++) {
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(c1, 0, t[k].dtype, t[k].count, &in[k]), STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(c1, 0, t[k].dtype, t[k].count, &out[k]), STARFOLD_OK);
    }
    static unsigned char buf[1000 * 8];
    const int R = world_size;
    /* Replica g (= the rank) holds value(op, g, i, s); expected_of() over the R of them. */
#define VAL(op, i, s) value(op, world_rank, i, s)
    long bad = 0;
    for (int step = 0; step < STARFOLD_OP_COUNT + 3; step++) {
        const starfold_op_t op = (starfold_op_t)(step % STARFOLD_OP_COUNT);
        const int in_place = step >= STARFOLD_OP_COUNT && step < STARFOLD_OP_COUNT + 2;
        const int persistent = step == STARFOLD_OP_COUNT + 2;
        for (int k = 0; k < PT; k++) {
            for (size_t i = 0; i < t[k].count; i++) put(buf, t[k].dtype, i, VAL(op, i, step));
            CU_ASSERT_EQUAL(starfold_vector_write(in[k], buf, t[k].count * starfold_dtype_size(t[k].dtype)), STARFOLD_OK);
        }
        if (persistent) {
            starfold_group_persistent_t p = NULL;
            CU_ASSERT_EQUAL_FATAL(starfold_group_all_reduce_init(g, op, PT, t, in, out, &p), STARFOLD_OK);
            for (int again = 0; again < 3; again++) {
                for (int k = 0; k < PT; k++) {
                    for (size_t i = 0; i < t[k].count; i++) put(buf, t[k].dtype, i, VAL(op, i, step + again));
                    CU_ASSERT_EQUAL(starfold_vector_write(in[k], buf, t[k].count * starfold_dtype_size(t[k].dtype)),
                                    STARFOLD_OK);
                }
                CU_ASSERT_EQUAL(starfold_group_persistent_start(p), STARFOLD_OK);
                for (int k = 0; k < PT; k++) {
                    CU_ASSERT_EQUAL(starfold_vector_read(out[k], buf, t[k].count * starfold_dtype_size(t[k].dtype)),
                                    STARFOLD_OK);
                    for (size_t i = 0; i < t[k].count; i++)
                        bad += get(buf, t[k].dtype, i) != expected_of(op, t[k].dtype, i, step + again, R);
                }
            }
            starfold_group_persistent_destroy(p);
            continue;
        }
        CU_ASSERT_EQUAL(starfold_group_all_reduce(g, op, PT, t, in, in_place ? in : out), STARFOLD_OK);
        CU_ASSERT_STRING_EQUAL(starfold_group_last_lowering(g), "mpi");
        CU_ASSERT_STRING_EQUAL(starfold_group_last_plan(g), "packed");
        for (int k = 0; k < PT; k++) {
            CU_ASSERT_EQUAL(starfold_vector_read(in_place ? in[k] : out[k], buf, t[k].count * starfold_dtype_size(t[k].dtype)),
                            STARFOLD_OK);
            for (size_t i = 0; i < t[k].count; i++) bad += get(buf, t[k].dtype, i) != expected_of(op, t[k].dtype, i, step, R);
        }
    }
#undef VAL
    CU_ASSERT_EQUAL(bad, 0);
    if (bad) fprintf(stderr, "rank %d: the packed plan: %ld wrong\n", world_rank, bad);
    /* A view outside its vector, on the last rank only: refused everywhere, the outputs untouched. */
    for (int k = 0; k < PT; k++) {
        for (size_t i = 0; i < t[k].count; i++) put(buf, t[k].dtype, i, -77);
        CU_ASSERT_EQUAL(starfold_vector_write(out[k], buf, t[k].count * starfold_dtype_size(t[k].dtype)), STARFOLD_OK);
    }
    starfold_view_t vin[PT], vout[PT];
    for (int k = 0; k < PT; k++) vin[k] = (starfold_view_t){ in[k], 0 }, vout[k] = (starfold_view_t){ out[k], 0 };
    if (world_rank == world_size - 1) vout[2].offset = 1; /* 1,000 elements from 1: one past the end */
    CU_ASSERT_EQUAL(starfold_group_all_reduce_views(g, STARFOLD_OP_SUM, PT, t, vin, vout), STARFOLD_ERR_INVALID_ARGUMENT);
    const char *why = world_rank == world_size - 1 ? "lie outside its vector of 1000" : "refused its arguments";
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), why));
    for (int k = 0; k < PT; k++) {
        CU_ASSERT_EQUAL(starfold_vector_read(out[k], buf, t[k].count * starfold_dtype_size(t[k].dtype)), STARFOLD_OK);
        for (size_t i = 0; i < t[k].count; i++) bad += get(buf, t[k].dtype, i) != -77;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(starfold_group_is_broken(g), 0);
    for (int k = 0; k < PT; k++) {
        starfold_vector_destroy(c1, in[k]);
        starfold_vector_destroy(c1, out[k]);
    }
    starfold_group_destroy(g);
    starfold_context_destroy(c1);
}
#undef PT

/*
 * Several devices, the MPI lowering, device 0's outputs one run: MPI's all-reduce writes them itself
 * from the leader and the broadcast copies them to the other devices only (the relay). Every
 * replica's inputs and outputs are views of one vector per rank, so device 0's run is part of it:
 * the inputs there must keep their values and the other devices' outputs get theirs. Every dtype,
 * a step per op with the inputs changed each time (a stale relay would give an earlier step's
 * results), the last in place; then persistent starts over whole vectors (device 0's output written
 * whole). The same views packed too (buckets on one worker pack: parts of a vector written).
 */
#define RT 2
static void test_relay(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(starfold_group_set_lowering(g, "mpi"), STARFOLD_OK);
    enum { M = 1037 }; /* one replica's tensors: 37 then 1,000 elements */
    static const size_t count[RT] = { 37, 1000 }, first[RT] = { 0, 37 };
    static unsigned char buf[2 * NDEV * M * 8];
    long bad = 0;
    /* Relayed (the hook: make check's devices share one worker, where buckets pack), then packed. */
    for (int round = 0; round < 2 * STARFOLD_DTYPE_COUNT; round++) {
        const int dt = round % STARFOLD_DTYPE_COUNT;
        g->test_no_pack = round < STARFOLD_DTYPE_COUNT;
        const starfold_dtype_t d_t = (starfold_dtype_t)dt;
        const size_t bytes = 2 * NDEV * M * starfold_dtype_size(d_t);
        starpu_data_handle_t v = NULL;
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, 0, d_t, 2 * NDEV * M, &v), STARFOLD_OK);
        const starfold_tensor_desc_t t[RT] = { { d_t, count[0] }, { d_t, count[1] } };
        starfold_view_t in[NDEV * RT], out[NDEV * RT];
        for (int d = 0; d < NDEV; d++)
            for (int k = 0; k < RT; k++) {
                in[d * RT + k] = (starfold_view_t){ v, (size_t)d * M + first[k] };
                out[d * RT + k] = (starfold_view_t){ v, (size_t)(NDEV + d) * M + first[k] };
            }
        for (int step = 0; step < STARFOLD_OP_COUNT; step++) {
            const starfold_op_t op = (starfold_op_t)step;
            const int in_place = step == STARFOLD_OP_COUNT - 1;
            for (int d = 0; d < NDEV; d++)
                for (int k = 0; k < RT; k++)
                    for (size_t i = 0; i < count[k]; i++) {
                        put(buf, d_t, (size_t)d * M + first[k] + i, value(op, world_rank * NDEV + d, i, step));
                        put(buf, d_t, (size_t)(NDEV + d) * M + first[k] + i, -77);
                    }
            CU_ASSERT_EQUAL(starfold_vector_write(v, buf, bytes), STARFOLD_OK);
            CU_ASSERT_EQUAL(starfold_group_all_reduce_views(g, op, RT, t, in, in_place ? in : out), STARFOLD_OK);
            CU_ASSERT_STRING_EQUAL(starfold_group_last_plan(g), g->test_no_pack ? "relay" : "packed");
            CU_ASSERT_EQUAL(starfold_vector_read(v, buf, bytes), STARFOLD_OK);
            for (int d = 0; d < NDEV; d++)
                for (int k = 0; k < RT; k++)
                    for (size_t i = 0; i < count[k]; i++) {
                        const size_t at = (size_t)d * M + first[k] + i;
                        bad += get(buf, d_t, in_place ? at : at + NDEV * M) != expected(op, d_t, i, step);
                        if (!in_place) bad += get(buf, d_t, at) != held(d_t, value(op, world_rank * NDEV + d, i, step));
                    }
        }
        CU_ASSERT_STRING_EQUAL(starfold_group_last_lowering(g), "mpi");
        starfold_vector_destroy(ctx, v);
    }
    /* Persistent, one float32 tensor per device, whole vectors, relayed. */
    g->test_no_pack = 1;
    starpu_data_handle_t pin[NDEV], pout[NDEV];
    for (int d = 0; d < NDEV; d++) {
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, d, STARFOLD_FLOAT32, 1000, &pin[d]), STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, d, STARFOLD_FLOAT32, 1000, &pout[d]), STARFOLD_OK);
    }
    const starfold_tensor_desc_t one = { STARFOLD_FLOAT32, 1000 };
    starfold_group_persistent_t p = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_group_all_reduce_init(g, STARFOLD_OP_SUM, 1, &one, pin, pout, &p), STARFOLD_OK);
    for (int step = 0; step < 5; step++) {
        for (int d = 0; d < NDEV; d++) {
            for (size_t i = 0; i < 1000; i++) put(buf, STARFOLD_FLOAT32, i, value(STARFOLD_OP_SUM, world_rank * NDEV + d, i, step));
            CU_ASSERT_EQUAL(starfold_vector_write(pin[d], buf, 1000 * sizeof(float)), STARFOLD_OK);
        }
        CU_ASSERT_EQUAL(starfold_group_persistent_start(p), STARFOLD_OK);
        CU_ASSERT_STRING_EQUAL(starfold_group_last_plan(g), "relay");
        for (int d = 0; d < NDEV; d++) {
            CU_ASSERT_EQUAL(starfold_vector_read(pout[d], buf, 1000 * sizeof(float)), STARFOLD_OK);
            for (size_t i = 0; i < 1000; i++)
                bad += get(buf, STARFOLD_FLOAT32, i) != expected(STARFOLD_OP_SUM, STARFOLD_FLOAT32, i, step);
        }
    }
    starfold_group_persistent_destroy(p);
    for (int d = 0; d < NDEV; d++) {
        starfold_vector_destroy(ctx, pin[d]);
        starfold_vector_destroy(ctx, pout[d]);
    }
    CU_ASSERT_EQUAL(bad, 0);
    if (bad) fprintf(stderr, "rank %d: the relay: %ld wrong\n", world_rank, bad);
    starfold_group_destroy(g);
}
#undef RT

/*
 * Persistent all-reduces (MPI-4's MPI_Allreduce_init / MPI_Start): bound once, started 20 times with
 * the inputs changed in between (every element right each time), a plain all-reduce interleaved, MEAN
 * on int64 too; ranks that bind different ops are refused alike at init (nothing made); NULLs refused.
 */
static void test_persistent(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    replicas_t r;
    replicas_make(&r, STARFOLD_FLOAT32);
    starfold_group_persistent_t p = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_group_all_reduce_init(g, STARFOLD_OP_SUM, NT, r.tensors, r.in, r.out, &p), STARFOLD_OK);
    long bad = 0;
    for (int s = 0; s < 20; s++) {
        fill(&r, STARFOLD_OP_SUM, STARFOLD_FLOAT32, s, -77);
        CU_ASSERT_EQUAL(starfold_group_persistent_start(p), STARFOLD_OK);
        bad += wrong(&r, STARFOLD_OP_SUM, STARFOLD_FLOAT32, s, 0, 0);
        if (s == 10) { /* another collective of the group in between, on the same handles */
            fill(&r, STARFOLD_OP_MAX, STARFOLD_FLOAT32, 3, -77);
            CU_ASSERT_EQUAL(starfold_group_all_reduce(g, STARFOLD_OP_MAX, NT, r.tensors, r.in, r.out), STARFOLD_OK);
            bad += wrong(&r, STARFOLD_OP_MAX, STARFOLD_FLOAT32, 3, 0, 0);
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    starfold_group_persistent_destroy(p);
    replicas_free(&r);
    replicas_make(&r, STARFOLD_INT64);
    CU_ASSERT_EQUAL_FATAL(starfold_group_all_reduce_init(g, STARFOLD_OP_MEAN, NT, r.tensors, r.in, r.out, &p), STARFOLD_OK);
    for (int s = 0; s < 3; s++) {
        fill(&r, STARFOLD_OP_MEAN, STARFOLD_INT64, s, -77);
        CU_ASSERT_EQUAL(starfold_group_persistent_start(p), STARFOLD_OK);
        CU_ASSERT_EQUAL(wrong(&r, STARFOLD_OP_MEAN, STARFOLD_INT64, s, 0, 0), 0);
    }
    starfold_group_persistent_destroy(p);
    /* Ranks binding different ops: refused on every rank at init. */
    p = (starfold_group_persistent_t)&r;
    const starfold_op_t op = world_rank == world_size - 1 && world_size > 1 ? STARFOLD_OP_MAX : STARFOLD_OP_SUM;
    const starfold_status_t st = starfold_group_all_reduce_init(g, op, NT, r.tensors, r.in, r.out, &p);
    if (world_size > 1) {
        CU_ASSERT_EQUAL(st, STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_EQUAL(p, (starfold_group_persistent_t)&r); /* left as it was (starfold.h) */
    } else {
        CU_ASSERT_EQUAL(st, STARFOLD_OK);
        starfold_group_persistent_destroy(p);
    }
    CU_ASSERT_EQUAL(starfold_group_persistent_start(NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_group_persistent_destroy(NULL);
    CU_ASSERT_EQUAL(starfold_group_is_broken(g), 0);
    replicas_free(&r);
    starfold_group_destroy(g);
}

/*
 * Every lowering by name (MPI's all-reduce in a task, and the graphs across ranks whose edges are
 * StarPU-MPI sends and receives): each op on two dtypes, the lowering that ran reported; ranks that
 * choose different lowerings fail alike before anything runs; an unknown name changes nothing.
 */
static void test_all_reduce_lowerings(void)
{
    /* The library's list: "auto" first, then every lowering a call can be forced to. */
    CU_ASSERT_STRING_EQUAL(starfold_group_lowering_name(0), "auto");
    CU_ASSERT_EQUAL(starfold_group_lowering_find("leader"), 5);
    CU_ASSERT_EQUAL(starfold_group_lowering_find("Ring"), -1);
    CU_ASSERT_EQUAL(starfold_group_lowering_find(NULL), -1);
    CU_ASSERT_PTR_NULL(starfold_group_lowering_name(6));
    CU_ASSERT_PTR_NULL(starfold_group_lowering_name(-1));
    /* SF_TEST_LOWERINGS (the runner sets all five): the lowerings to run by name, for a machine that
     * cannot afford some of them */
    const char *only = getenv("SF_TEST_LOWERINGS");
    const char *names[8];
    size_t nnames = 0;
    for (int l = 1; starfold_group_lowering_name(l) && nnames < 8; l++)
        if (!only || strstr(only, starfold_group_lowering_name(l))) names[nnames++] = starfold_group_lowering_name(l);
    CU_ASSERT_EQUAL(nnames, only ? nnames : 5);
    static const starfold_dtype_t dts[] = { STARFOLD_FLOAT32, STARFOLD_INT64 };
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(starfold_group_set_lowering(g, "butterfly"), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "unknown lowering 'butterfly'"));
    CU_ASSERT_EQUAL(starfold_group_set_lowering(NULL, "ring"), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(starfold_group_last_lowering(NULL));
    for (size_t l = 0; l < nnames; l++) {
        CU_ASSERT_EQUAL_FATAL(starfold_group_set_lowering(g, names[l]), STARFOLD_OK);
        for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
            replicas_t r;
            replicas_make(&r, dts[k]);
            for (int op = 0; op < STARFOLD_OP_COUNT; op++) {
                fill(&r, (starfold_op_t)op, dts[k], op, -77);
                CU_ASSERT_EQUAL(starfold_group_all_reduce(g, (starfold_op_t)op, NT, r.tensors, r.in, r.out), STARFOLD_OK);
                const long bad = wrong(&r, (starfold_op_t)op, dts[k], op, 0, 0);
                CU_ASSERT_EQUAL(bad, 0);
                if (bad) fprintf(stderr, "rank %d: %s %s %s: %ld wrong\n", world_rank, names[l],
                                 starfold_op_name((starfold_op_t)op), starfold_dtype_name(dts[k]), bad);
                /* One rank alone: nothing crosses ranks, MPI's call is the whole step. */
                CU_ASSERT_STRING_EQUAL(starfold_group_last_lowering(g), world_size > 1 ? names[l] : "mpi");
            }
            replicas_free(&r);
        }
    }
    /* Ranks that disagree on the lowering. */
    replicas_t r;
    replicas_make(&r, STARFOLD_FLOAT32);
    fill(&r, STARFOLD_OP_SUM, STARFOLD_FLOAT32, 0, -77);
    CU_ASSERT_EQUAL(starfold_group_set_lowering(g, world_rank == world_size - 1 ? "ring" : "halving-doubling"),
                    STARFOLD_OK);
    if (world_size > 1) { /* refused before anything runs: safe at any rank count */
        CU_ASSERT_EQUAL(starfold_group_all_reduce(g, STARFOLD_OP_SUM, NT, r.tensors, r.in, r.out),
                        STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "crosses ranks with"));
        CU_ASSERT_EQUAL(wrong(&r, STARFOLD_OP_SUM, STARFOLD_FLOAT32, 0, 1, -77), 0);
    }
    /* "auto": the model's choice, one of the five. */
    CU_ASSERT_EQUAL(starfold_group_set_lowering(g, only ? names[0] : "auto"), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_group_all_reduce(g, STARFOLD_OP_SUM, NT, r.tensors, r.in, r.out), STARFOLD_OK);
    CU_ASSERT_EQUAL(wrong(&r, STARFOLD_OP_SUM, STARFOLD_FLOAT32, 0, 0, 0), 0);
    const char *ran = starfold_group_last_lowering(g);
    CU_ASSERT(starfold_group_lowering_find(ran) > 0); /* a lowering that ran, not "auto" */
    /* The model's price: auto names what the call took; every lowering has a positive price. */
    const char *chosen = NULL;
    double us = 0;
    if (!only) {
        CU_ASSERT_EQUAL(starfold_group_predict(g, STARFOLD_OP_SUM, NT, r.tensors, "auto", &chosen, &us), STARFOLD_OK);
        CU_ASSERT_PTR_NOT_NULL_FATAL(chosen);
        CU_ASSERT_STRING_EQUAL(chosen, ran);
        CU_ASSERT(us > 0);
        /* A graph only where the model prices it well under MPI's own (a tie goes to MPI), and then
         * no graph cheaper than the one taken. */
        double mpi_us = 0, graph_us = 0;
        const char *named = NULL;
        CU_ASSERT_EQUAL(starfold_group_predict(g, STARFOLD_OP_SUM, NT, r.tensors, "mpi", NULL, &mpi_us), STARFOLD_OK);
        if (world_size > 1 && strcmp(chosen, "mpi") != 0) CU_ASSERT(us * 1.5 < mpi_us);
        for (int k = 2; (named = starfold_group_lowering_name(k)) != NULL; k++) {
            CU_ASSERT_EQUAL(starfold_group_predict(g, STARFOLD_OP_SUM, NT, r.tensors, named, NULL, &graph_us), STARFOLD_OK);
            if (graph_us * 1.5 < mpi_us) CU_ASSERT(strcmp(chosen, "mpi") != 0 && us <= graph_us);
        }
    }
    for (size_t l = 0; l < nnames; l++) {
        us = 0;
        CU_ASSERT_EQUAL(starfold_group_predict(g, STARFOLD_OP_MEAN, NT, r.tensors, names[l], &chosen, &us), STARFOLD_OK);
        CU_ASSERT_STRING_EQUAL(chosen, world_size > 1 ? names[l] : "mpi");
        CU_ASSERT(us > 0);
    }
    CU_ASSERT_EQUAL(starfold_group_predict(g, STARFOLD_OP_SUM, NT, r.tensors, "butterfly", NULL, &us),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_group_predict(g, STARFOLD_OP_SUM, NT, r.tensors, NULL, NULL, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_group_predict(g, STARFOLD_OP_SUM, 0, r.tensors, NULL, NULL, &us), STARFOLD_ERR_INVALID_ARGUMENT);
    replicas_free(&r);
    starfold_group_destroy(g);
}

/*
 * Mismatches agreed on before anything runs: every rank gets INVALID_ARGUMENT with the same reason,
 * no output changes, and the group goes on working.
 */
static void test_all_reduce_mismatch(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    replicas_t r;
    replicas_make(&r, STARFOLD_FLOAT32);
    fill(&r, STARFOLD_OP_SUM, STARFOLD_FLOAT32, 0, -77);
    /* Rank 1 asks for other sizes. */
    starfold_tensor_desc_t other[NT];
    memcpy(other, r.tensors, sizeof other);
    if (world_rank == 1) other[2].count = 999;
    CU_ASSERT_EQUAL(starfold_group_all_reduce(g, STARFOLD_OP_SUM, NT, other, r.in, r.out), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "rank 1 asks for sum over 3 tensors, rank 0 for sum over 3"));
    CU_ASSERT_EQUAL(wrong(&r, STARFOLD_OP_SUM, STARFOLD_FLOAT32, 0, 1, -77), 0);
    /* The last rank asks for another op. */
    const starfold_op_t op = world_rank == world_size - 1 ? STARFOLD_OP_MAX : STARFOLD_OP_SUM;
    CU_ASSERT_EQUAL(starfold_group_all_reduce(g, op, NT, r.tensors, r.in, r.out), STARFOLD_ERR_INVALID_ARGUMENT);
    char want[64];
    snprintf(want, sizeof want, "rank %d asks for max", world_size - 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), want));
    /* Rank 0 gives an unknown op: its own message there, "rank 0 refused its arguments" elsewhere. */
    CU_ASSERT_EQUAL(starfold_group_all_reduce(g, world_rank == 0 ? (starfold_op_t)99 : STARFOLD_OP_SUM, NT, r.tensors,
                                              r.in, r.out),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), world_rank == 0 ? "unknown reduce op 99" : "rank 0 refused"));
    CU_ASSERT_EQUAL(wrong(&r, STARFOLD_OP_SUM, STARFOLD_FLOAT32, 0, 1, -77), 0);
    /* Still in step: the next collective works. */
    CU_ASSERT_EQUAL(starfold_group_all_reduce(g, STARFOLD_OP_SUM, NT, r.tensors, r.in, r.out), STARFOLD_OK);
    CU_ASSERT_EQUAL(wrong(&r, STARFOLD_OP_SUM, STARFOLD_FLOAT32, 0, 0, 0), 0);
    CU_ASSERT_EQUAL(starfold_group_is_broken(g), 0);
    replicas_free(&r);
    starfold_group_destroy(g);
}

/*
 * Broadcast from the last rank: three tensors of three dtypes (one in place on the root), every
 * device of every rank gets the root's values; then ranks that disagree on the root, and a bad root
 * on one rank, fail every rank; the group still reduces afterwards.
 */
static void test_broadcast(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    enum { BT = 3 };
    const starfold_tensor_desc_t t[BT] = { { STARFOLD_FLOAT32, 1000 }, { STARFOLD_INT8, 37 }, { STARFOLD_FLOAT16, 1 } };
    const int root = world_size - 1, is_root = world_rank == root;
    starpu_data_handle_t in[BT] = { NULL }, out[NDEV * BT];
    static unsigned char buf[1000 * 8];
    for (int d = 0; d < NDEV; d++)
        for (int k = 0; k < BT; k++) {
            CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, d, t[k].dtype, t[k].count, &out[d * BT + k]), STARFOLD_OK);
            for (size_t i = 0; i < t[k].count; i++) put(buf, t[k].dtype, i, -7);
            CU_ASSERT_EQUAL(starfold_vector_write(out[d * BT + k], buf, t[k].count * starfold_dtype_size(t[k].dtype)),
                            STARFOLD_OK);
        }
    /* The root's values: tensor 0 on device 1, tensor 1 on device 0, tensor 2 in place (its device 0 output). */
    for (int k = 0; is_root && k < BT; k++) {
        if (k == 2) in[k] = out[k];
        else CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, k == 0 ? 1 : 0, t[k].dtype, t[k].count, &in[k]), STARFOLD_OK);
        for (size_t i = 0; i < t[k].count; i++) put(buf, t[k].dtype, i, value(STARFOLD_OP_SUM, 100 + k, i, 0));
        CU_ASSERT_EQUAL(starfold_vector_write(in[k], buf, t[k].count * starfold_dtype_size(t[k].dtype)), STARFOLD_OK);
    }
    starfold_status_t st = starfold_group_broadcast(g, root, BT, t, is_root ? in : NULL, out);
    if (st != STARFOLD_OK) fprintf(stderr, "rank %d: %s\n", world_rank, starfold_last_error());
    CU_ASSERT_EQUAL(st, STARFOLD_OK);
    long bad = 0;
    for (int d = 0; d < NDEV; d++)
        for (int k = 0; k < BT; k++) {
            CU_ASSERT_EQUAL(starfold_vector_read(out[d * BT + k], buf, t[k].count * starfold_dtype_size(t[k].dtype)),
                            STARFOLD_OK);
            for (size_t i = 0; i < t[k].count; i++)
                bad += get(buf, t[k].dtype, i) != held(t[k].dtype, value(STARFOLD_OP_SUM, 100 + k, i, 0));
        }
    CU_ASSERT_EQUAL(bad, 0);
    if (bad) fprintf(stderr, "rank %d: broadcast: %ld wrong\n", world_rank, bad);

    /* The ranks disagree on the root: every rank fails, naming the rank that differs. */
    const starpu_data_handle_t own[BT] = { out[0], out[1], out[2] }; /* rank 0's own outputs, in place */
    st = starfold_group_broadcast(g, world_rank == 0 ? 0 : root, BT, t, world_rank == 0 ? own : in, out);
    if (world_size > 1 && root != 0) {
        CU_ASSERT_EQUAL(st, STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "broadcasts from rank"));
    }
    /* A bad root on the last rank: every rank fails. */
    st = starfold_group_broadcast(g, world_rank == world_size - 1 ? world_size : 0, BT, t, in, out);
    CU_ASSERT_EQUAL(st, STARFOLD_ERR_INVALID_ARGUMENT);
    /* Still usable: an all-reduce of the outputs of tensor 0 (the root's values on every replica). */
    starpu_data_handle_t sum_in[NDEV], sum_out[NDEV];
    const starfold_tensor_desc_t one = t[0];
    for (int d = 0; d < NDEV; d++) {
        sum_in[d] = out[d * BT];
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, d, one.dtype, one.count, &sum_out[d]), STARFOLD_OK);
    }
    CU_ASSERT_EQUAL(starfold_group_all_reduce(g, STARFOLD_OP_MAX, 1, &one, sum_in, sum_out), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_vector_read(sum_out[NDEV - 1], buf, one.count * 4), STARFOLD_OK);
    for (size_t i = 0; i < one.count; i++) bad += get(buf, one.dtype, i) != value(STARFOLD_OP_SUM, 100, i, 0);
    CU_ASSERT_EQUAL(bad, 0);
    for (int d = 0; d < NDEV; d++) starfold_vector_destroy(ctx, sum_out[d]);
    for (int k = 0; k < NDEV * BT; k++) starfold_vector_destroy(ctx, out[k]);
    for (int k = 0; is_root && k < 2; k++) starfold_vector_destroy(ctx, in[k]);
    starfold_group_destroy(g);
}

/*
 * Asynchronous all-reduces: three started back to back (SUM, MAX, MEAN on three sets of replicas),
 * tested while they run, waited for in another order than started; every output right. Then a
 * blocking all-reduce after a request still queued (it waits its turn), a request whose op differs on
 * the last rank (every rank's wait fails, naming it), and the group still in step.
 */
static void test_all_reduce_async(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    enum { K = 3 };
    static const starfold_op_t ops[K] = { STARFOLD_OP_SUM, STARFOLD_OP_MAX, STARFOLD_OP_MEAN };
    static const starfold_dtype_t dts[K] = { STARFOLD_FLOAT32, STARFOLD_INT16, STARFOLD_FLOAT64 };
    replicas_t r[K];
    starfold_group_request_t q[K] = { NULL };
    for (int k = 0; k < K; k++) {
        replicas_make(&r[k], dts[k]);
        fill(&r[k], ops[k], dts[k], k, -77);
    }
    for (int k = 0; k < K; k++)
        CU_ASSERT_EQUAL_FATAL(starfold_group_all_reduce_async(g, ops[k], NT, r[k].tensors, r[k].in, r[k].out, &q[k]),
                              STARFOLD_OK);
    const starfold_status_t t0 = starfold_group_request_test(q[K - 1]);
    CU_ASSERT(t0 == STARFOLD_ERR_IN_PROGRESS || t0 == STARFOLD_OK);
    for (int k = K - 1; k >= 0; k--) {
        const starfold_status_t st = starfold_group_request_wait(q[k]);
        if (st != STARFOLD_OK) fprintf(stderr, "rank %d: request %d: %s\n", world_rank, k, starfold_last_error());
        CU_ASSERT_EQUAL(st, STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_group_request_test(q[k]), STARFOLD_OK);
        const long bad = wrong(&r[k], ops[k], dts[k], k, 0, 0);
        CU_ASSERT_EQUAL(bad, 0);
        starfold_group_request_destroy(q[k]);
    }
    /* A blocking call after a queued request: both complete, in order. */
    fill(&r[0], STARFOLD_OP_SUM, dts[0], 7, -77);
    fill(&r[1], STARFOLD_OP_MIN, dts[1], 8, -77);
    CU_ASSERT_EQUAL_FATAL(starfold_group_all_reduce_async(g, STARFOLD_OP_SUM, NT, r[0].tensors, r[0].in, r[0].out, &q[0]),
                          STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_group_all_reduce(g, STARFOLD_OP_MIN, NT, r[1].tensors, r[1].in, r[1].out), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_group_request_test(q[0]), STARFOLD_OK); /* done before the blocking call ran */
    starfold_group_request_destroy(q[0]);
    CU_ASSERT_EQUAL(wrong(&r[0], STARFOLD_OP_SUM, dts[0], 7, 0, 0), 0);
    CU_ASSERT_EQUAL(wrong(&r[1], STARFOLD_OP_MIN, dts[1], 8, 0, 0), 0);
    /* The last rank asks for another op: every rank's request fails, naming it. */
    const starfold_op_t op = world_rank == world_size - 1 && world_size > 1 ? STARFOLD_OP_MAX : STARFOLD_OP_SUM;
    CU_ASSERT_EQUAL_FATAL(starfold_group_all_reduce_async(g, op, NT, r[2].tensors, r[2].in, r[2].out, &q[0]), STARFOLD_OK);
    if (world_size > 1) {
        CU_ASSERT_EQUAL(starfold_group_request_wait(q[0]), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "rank"));
    }
    starfold_group_request_destroy(q[0]);
    CU_ASSERT_EQUAL(starfold_group_barrier(g), STARFOLD_OK); /* still in step */
    CU_ASSERT_EQUAL(starfold_group_all_reduce_async(NULL, STARFOLD_OP_SUM, NT, r[2].tensors, r[2].in, r[2].out, &q[0]),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_group_request_test(NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_group_request_destroy(NULL);
    for (int k = 0; k < K; k++) replicas_free(&r[k]);
    starfold_group_destroy(g);
}

/*
 * The barrier: the last rank arrives 300 ms late, and no rank leaves before it (each measures at
 * least 250 ms inside: a lower bound, which a slow machine only raises). A rank that calls a barrier
 * while the others broadcast fails every rank, naming both collectives.
 */
static void test_barrier(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(starfold_group_barrier(g), STARFOLD_OK);
    if (world_rank == world_size - 1) usleep(300 * 1000);
    const double t0 = MPI_Wtime();
    CU_ASSERT_EQUAL(starfold_group_barrier(g), STARFOLD_OK);
    if (world_rank != world_size - 1) CU_ASSERT(MPI_Wtime() - t0 >= 0.25);
    if (world_size > 1) {
        const starfold_tensor_desc_t one = { STARFOLD_INT32, 0 };
        starpu_data_handle_t none[NDEV] = { NULL };
        const starfold_status_t st = world_rank == 0 ? starfold_group_barrier(g)
                                                     : starfold_group_broadcast(g, 1, 1, &one, none, none);
        CU_ASSERT_EQUAL(st, STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "a barrier"));
    }
    CU_ASSERT_EQUAL(starfold_group_barrier(g), STARFOLD_OK); /* still in step */
    CU_ASSERT_EQUAL(starfold_group_barrier(NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    starfold_group_destroy(g);
}

/*
 * starfold_group_all_gather(): rank r gives r + 2 int64 elements 100r, 100r + 1, ..., except rank 1,
 * which gives none (a NULL input); every rank gets them all in rank order on its device 0, and every
 * rank's count. A dtype that differs on the last rank, and a rank's bad input, fail every rank alike
 * with nothing written, and the group goes on; parts that are all empty give no vector.
 */
static size_t gather_count(int r) { return r == 1 ? 0 : (size_t)r + 2; }

static void test_all_gather(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const size_t mine = gather_count(world_rank);
    int64_t part[8];
    for (size_t i = 0; i < mine; i++) part[i] = 100 * world_rank + (int64_t)i;
    starpu_data_handle_t in = NULL, out = NULL;
    if (mine) {
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, 1, STARFOLD_INT64, mine, &in), STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(starfold_vector_write(in, part, sizeof part[0] * mine), STARFOLD_OK);
    }
    size_t counts[16] = { 0 };
    CU_ASSERT_EQUAL_FATAL(starfold_group_all_gather(g, STARFOLD_INT64, in, &out, counts), STARFOLD_OK);
    size_t total = 0;
    for (int r = 0; r < world_size; r++) {
        CU_ASSERT_EQUAL(counts[r], gather_count(r));
        total += gather_count(r);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    CU_ASSERT_EQUAL(starpu_vector_get_nx(out), total);
    int64_t *whole = calloc(total, sizeof *whole);
    CU_ASSERT_EQUAL(starfold_vector_read(out, whole, sizeof *whole * total), STARFOLD_OK);
    long bad = 0;
    for (int r = 0, at = 0; r < world_size; r++)
        for (size_t i = 0; i < gather_count(r); i++) bad += whole[at++] != 100 * r + (int64_t)i;
    CU_ASSERT_EQUAL(bad, 0);
    free(whole);
    starfold_vector_destroy(ctx, out);
    out = NULL;
    if (world_size > 1) {
        /* The last rank gathers float64: every rank is refused, named, and nothing is made. */
        const starfold_dtype_t dt = world_rank == world_size - 1 ? STARFOLD_FLOAT64 : STARFOLD_INT64;
        starpu_data_handle_t in2 = NULL;
        if (dt == STARFOLD_FLOAT64) CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, 0, dt, 3, &in2), STARFOLD_OK);
        /* On failure the output is left as it was (starfold.h): a sentinel stays. */
        starpu_data_handle_t const sentinel = (starpu_data_handle_t)&bad;
        out = sentinel;
        CU_ASSERT_EQUAL(starfold_group_all_gather(g, dt, in2 ? in2 : in, &out, NULL), STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_EQUAL(out, sentinel);
        char want[96];
        snprintf(want, sizeof want, "rank %d gathers another dtype or row width than rank 0", world_size - 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), want));
        starfold_vector_destroy(ctx, in2);
        /* Rank 0's input is not a vector of its dtype: its message there, "rank 0 refused" elsewhere. */
        CU_ASSERT_EQUAL(starfold_group_all_gather(g, world_rank == 0 ? STARFOLD_INT32 : STARFOLD_INT64, in, &out, NULL),
                        STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), world_rank == 0 ? "elements are 8 bytes" : "rank 0 refused"));
        CU_ASSERT_PTR_EQUAL(out, sentinel);
        out = NULL;
    }
    /* Nothing anywhere: no vector, every count 0. */
    CU_ASSERT_EQUAL(starfold_group_all_gather(g, STARFOLD_FLOAT32, NULL, &out, counts), STARFOLD_OK);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_EQUAL(counts[world_size - 1], 0);
    CU_ASSERT_EQUAL(starfold_group_is_broken(g), 0);
    starfold_vector_destroy(ctx, in);
    starfold_group_destroy(g);
}

/* A rank 2 s late, within the timeout: everyone succeeds. */
static void test_all_reduce_late_rank(void)
{
    starfold_group_t g = make_group(30);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    replicas_t r;
    replicas_make(&r, STARFOLD_FLOAT64);
    fill(&r, STARFOLD_OP_MEAN, STARFOLD_FLOAT64, 1, -77);
    if (world_rank == world_size - 1) {
        const struct timespec two = { 2, 0 };
        nanosleep(&two, NULL);
    }
    CU_ASSERT_EQUAL(starfold_group_all_reduce(g, STARFOLD_OP_MEAN, NT, r.tensors, r.in, r.out), STARFOLD_OK);
    CU_ASSERT_EQUAL(wrong(&r, STARFOLD_OP_MEAN, STARFOLD_FLOAT64, 1, 0, 0), 0);
    replicas_free(&r);
    starfold_group_destroy(g);
}

/* ------------------------------------------------------------------------------------------------
 * MultiWorkerMirroredStrategy. TensorFlow's expected values: with replica i (global id) holding
 * i + 1, all_reduce SUM gives T(T+1)/2 and MEAN (T+1)/2 on every replica of every process, T being
 * num_replicas_in_sync = 2 x size; reduce_to a device gives the sum there.
 */
typedef struct mw_out {
    int ids[NDEV], nsync[NDEV];
    float sum[NDEV], mean[NDEV];
    starfold_status_t st[NDEV];
} mw_out_t;

static starfold_status_t mw_step(starfold_replica_context_t rc, void *arg)
{
    mw_out_t *out = arg;
    const int id = starfold_replica_context_replica_id_in_sync_group(rc);
    const int local = id - world_rank * NDEV;
    if (local < 0 || local >= NDEV) return STARFOLD_ERR_INTERNAL;
    out->ids[local] = id;
    out->nsync[local] = starfold_replica_context_num_replicas_in_sync(rc);
    const float x = (float)(id + 1);
    starfold_value_t v = NULL, sum = NULL, mean = NULL;
    starfold_status_t st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 1, &x, &v);
    if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &v, NULL, &sum);
    if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_MEAN, 1, &v, NULL, &mean);
    if (st == STARFOLD_OK) st = starfold_value_read(sum, 0, &out->sum[local], sizeof(float));
    if (st == STARFOLD_OK) st = starfold_value_read(mean, 0, &out->mean[local], sizeof(float));
    if (st == STARFOLD_OK) st = starfold_replica_context_set_result(rc, v);
    starfold_value_destroy(v);
    starfold_value_destroy(sum);
    starfold_value_destroy(mean);
    return out->st[local] = st;
}

/* One run of mw_step on @s (@T replicas in sync): TensorFlow's values on every replica of this
 * process; its per-replica result (NULL if the run failed). */
static starfold_value_t mw_run_checked(starfold_strategy_t s, int T)
{
    mw_out_t out;
    memset(&out, 0, sizeof out);
    starfold_value_t per_replica = NULL;
    CU_ASSERT_EQUAL(starfold_strategy_run_results(s, mw_step, &out, &per_replica), STARFOLD_OK);
    for (int d = 0; d < NDEV; d++) {
        CU_ASSERT_EQUAL(out.st[d], STARFOLD_OK);
        CU_ASSERT_EQUAL(out.ids[d], world_rank * NDEV + d);
        CU_ASSERT_EQUAL(out.nsync[d], T);
        CU_ASSERT_EQUAL(out.sum[d], (float)(T * (T + 1) / 2));
        CU_ASSERT_EQUAL(out.mean[d], (float)(T + 1) / 2.0f);
    }
    return per_replica;
}

static void test_mwms(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    starfold_strategy_t s = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_multi_worker_mirrored_strategy_create(g, NULL, &s), STARFOLD_OK);
    const int T = NDEV * world_size;
    CU_ASSERT_EQUAL(starfold_strategy_kind(s), STARFOLD_STRATEGY_MULTI_WORKER_MIRRORED);
    CU_ASSERT_STRING_EQUAL(starfold_strategy_kind_name(starfold_strategy_kind(s)), "MultiWorkerMirroredStrategy");
    CU_ASSERT_EQUAL(starfold_strategy_num_replicas_in_sync(s), T);

    starfold_value_t per_replica = mw_run_checked(s, T);
    CU_ASSERT_PTR_NOT_NULL_FATAL(per_replica);
    /* That was each process's replicas in turn on its calling thread (the default); the same step
     * with a thread per replica. */
    CU_ASSERT_EQUAL(starfold_strategy_set_replica_mode(s, STARFOLD_REPLICAS_THREADS), STARFOLD_OK);
    starfold_value_destroy(mw_run_checked(s, T));
    CU_ASSERT_EQUAL(starfold_strategy_set_replica_mode(s, STARFOLD_REPLICAS_IN_TURN), STARFOLD_OK);
    /* Cross-replica: reduce_to one device, to the host, and batch_reduce_to back onto the replicas. */
    starfold_value_t r = NULL;
    starfold_destination_t d1 = starfold_destination_device(1);
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, per_replica, &d1, NULL, &r), STARFOLD_OK);
    float y = -1;
    CU_ASSERT_EQUAL(starfold_value_num_components(r), 1);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), 1);
    CU_ASSERT_EQUAL(starfold_value_read(r, 0, &y, sizeof y), STARFOLD_OK);
    CU_ASSERT_EQUAL(y, (float)(T * (T + 1) / 2));
    starfold_value_destroy(r);
    starfold_destination_t host = starfold_destination_host();
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to(s, STARFOLD_OP_MAX, per_replica, &host, NULL, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_EQUAL(starfold_value_read(r, 0, &y, sizeof y), STARFOLD_OK);
    CU_ASSERT_EQUAL(y, (float)T);
    starfold_value_destroy(r);
    starfold_value_destroy(per_replica);
    /* A batch of two pairs onto the replicas' devices: one collective, results in input order. */
    const float a[2] = { 1.0f, 2.0f };
    const int devs[NDEV] = { 0, 1 };
    starfold_value_t v1 = NULL, v2 = NULL, res[2] = { NULL, NULL };
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, NDEV, devs, STARFOLD_FLOAT32, 1, &a[0], &v1),
                          STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, NDEV, devs, STARFOLD_FLOAT32, 1, &a[1], &v2),
                          STARFOLD_OK);
    starfold_value_destination_pair_t pairs[2] = { { v1, starfold_destination_value(v1) },
                                                   { v2, starfold_destination_value(v2) } };
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_batch_reduce_to(s, STARFOLD_OP_SUM, 2, pairs, NULL, res), STARFOLD_OK);
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < NDEV; c++) {
            CU_ASSERT_EQUAL(starfold_value_read(res[k], c, &y, sizeof y), STARFOLD_OK);
            CU_ASSERT_EQUAL(y, a[k] * (float)T);
        }
    starfold_value_destroy(res[0]);
    starfold_value_destroy(res[1]);
    starfold_value_destroy(v1);
    starfold_value_destroy(v2);
    starfold_strategy_destroy(s);
    starfold_group_destroy(g);
}

/*
 * The gathers of MultiWorkerMirroredStrategy, with TensorFlow's results: every replica of every process
 * in global replica order (replica g = rank x NDEV + device). Replica g holds g + 1 floats 10g, 10g + 1,
 * ... (counts that differ, as TensorFlow's all_gather allows along the axis). IndexedSlices: replica g
 * holds g % 3 rows of width 2, row j = (100g + 10j, 100g + 10j + 1) at index (g + j) % 5, dense shape
 * [5, 2]; SUM concatenates rows and indices in replica order, MEAN divides the values by every replica.
 */
typedef struct {
    int bad_axis;   /* replica 0 (rank 0) asks for axis 3 */
    size_t n[NDEV];
    float got[NDEV][256];
    starfold_status_t st[NDEV];
} mw_gather_t;

static starfold_status_t mw_gather_step(starfold_replica_context_t rc, void *arg)
{
    mw_gather_t *out = arg;
    const int id = starfold_replica_context_replica_id_in_sync_group(rc), local = id - world_rank * NDEV;
    float x[64];
    for (int i = 0; i <= id; i++) x[i] = (float)(10 * id + i);
    starfold_value_t v = NULL, all = NULL;
    starfold_status_t st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, (size_t)id + 1, x, &v);
    if (st == STARFOLD_OK) st = starfold_replica_context_all_gather(rc, v, out->bad_axis && id == 0 ? 3 : 0, NULL, &all);
    if (st == STARFOLD_OK) {
        out->n[local] = starfold_value_count(all);
        st = starfold_value_read(all, 0, out->got[local], sizeof(float) * out->n[local]);
    }
    starfold_value_destroy(v);
    starfold_value_destroy(all);
    return out->st[local] = st;
}

static void test_mwms_gather(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    starfold_strategy_t s = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_multi_worker_mirrored_strategy_create(g, NULL, &s), STARFOLD_OK);
    const int T = NDEV * world_size, devs[NDEV] = { 0, 1 };
    /* Replica context: all_gather onto every replica. */
    mw_gather_t ag;
    memset(&ag, 0, sizeof ag);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, mw_gather_step, &ag), STARFOLD_OK);
    const size_t total = (size_t)T * (T + 1) / 2;
    long bad = 0;
    for (int d = 0; d < NDEV; d++) {
        CU_ASSERT_EQUAL(ag.st[d], STARFOLD_OK);
        CU_ASSERT_EQUAL(ag.n[d], total);
        for (int r = 0, at = 0; r < T && ag.n[d] == total; r++)
            for (int i = 0; i <= r; i++) bad += ag.got[d][at++] != (float)(10 * r + i);
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* One replica's bad axis: every replica of every process fails with it, none waits (the group's
     * timeout is 60 s; this takes well under). */
    memset(&ag, 0, sizeof ag);
    ag.bad_axis = 1;
    CU_ASSERT_EQUAL(starfold_strategy_run(s, mw_gather_step, &ag), STARFOLD_ERR_INVALID_ARGUMENT);
    for (int d = 0; d < NDEV; d++) CU_ASSERT_EQUAL(ag.st[d], STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_group_is_broken(g), 0);
    /* Cross-replica: Strategy.gather of a per-replica value onto the host (2 floats per replica). */
    starfold_value_t v = NULL, r = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, NDEV, devs, STARFOLD_FLOAT32, 2, NULL, &v),
                          STARFOLD_OK);
    for (int d = 0; d < NDEV; d++) {
        const int id = world_rank * NDEV + d;
        const float x[2] = { (float)(10 * id), (float)(10 * id + 1) };
        CU_ASSERT_EQUAL(starfold_value_write(v, d, x, sizeof x), STARFOLD_OK);
    }
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_gather(s, v, 0, &r), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_EQUAL_FATAL(starfold_value_count(r), (size_t)(2 * T));
    float got[64];
    CU_ASSERT_EQUAL(starfold_value_read(r, 0, got, sizeof(float) * 2 * (size_t)T), STARFOLD_OK);
    bad = 0;
    for (int k = 0; k < 2 * T; k++) bad += got[k] != (float)(10 * (k / 2) + k % 2);
    CU_ASSERT_EQUAL(bad, 0);
    starfold_value_destroy(r);
    starfold_value_destroy(v);
    /* IndexedSlices, SUM and MEAN, onto both devices and onto the host. */
    size_t rows[NDEV], all_rows = 0;
    float vals[NDEV][4];
    int64_t idx[NDEV][2];
    for (int d = 0; d < NDEV; d++) {
        const int id = world_rank * NDEV + d;
        rows[d] = (size_t)(id % 3);
        for (size_t j = 0; j < rows[d]; j++) {
            vals[d][2 * j] = (float)(100 * id + 10 * (int)j);
            vals[d][2 * j + 1] = (float)(100 * id + 10 * (int)j + 1);
            idx[d][j] = (id + (int64_t)j) % 5;
        }
    }
    for (int id = 0; id < T; id++) all_rows += (size_t)(id % 3);
    const void *vp[NDEV] = { vals[0], vals[1] };
    const int64_t *ip[NDEV] = { idx[0], idx[1] };
    starfold_indexed_slices_t sl = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_indexed_slices_create(ctx, STARFOLD_VALUE_PER_REPLICA, NDEV, devs, STARFOLD_FLOAT32, 5, 2,
                                                         rows, vp, ip, &sl),
                          STARFOLD_OK);
    const starfold_destination_t dests[2] = { starfold_destination_devices(NDEV, devs), starfold_destination_host() };
    for (int m = 0; m < 2; m++)
        for (int where = 0; where < 2; where++) {
            const starfold_op_t op = m ? STARFOLD_OP_MEAN : STARFOLD_OP_SUM;
            starfold_indexed_slices_t res = NULL;
            CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to_indexed_slices(s, op, sl, &dests[where], NULL, &res),
                                  STARFOLD_OK);
            CU_ASSERT_EQUAL(starfold_indexed_slices_num_components(res), where ? 1 : NDEV);
            CU_ASSERT_EQUAL(starfold_indexed_slices_dense_rows(res), 5);
            float rv[64];
            int64_t ri[32];
            bad = 0;
            for (int c = 0; c < starfold_indexed_slices_num_components(res); c++) {
                CU_ASSERT_EQUAL_FATAL(starfold_indexed_slices_rows(res, c), all_rows);
                CU_ASSERT_EQUAL(starfold_indexed_slices_read(res, c, rv, sizeof(float) * 2 * all_rows, ri,
                                                             sizeof(int64_t) * all_rows),
                                STARFOLD_OK);
                for (int id = 0, at = 0; id < T; id++)
                    for (int j = 0; j < id % 3; j++, at++) {
                        const float div = m ? (float)T : 1.0f;
                        bad += rv[2 * at] != (float)(100 * id + 10 * j) / div;
                        bad += rv[2 * at + 1] != (float)(100 * id + 10 * j + 1) / div;
                        bad += ri[at] != (id + j) % 5;
                    }
            }
            CU_ASSERT_EQUAL(bad, 0);
            starfold_indexed_slices_destroy(res);
        }
    /* One process's bad op: every process is refused (none waits for it), and the strategy goes on. */
    starfold_indexed_slices_t res = NULL;
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to_indexed_slices(s, world_rank == 0 ? STARFOLD_OP_MAX : STARFOLD_OP_SUM, sl,
                                                               &dests[1], NULL, &res),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(res);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), world_rank == 0 ? "not max" : "rank 0 refused"));
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to_indexed_slices(s, STARFOLD_OP_SUM, sl, &dests[1], NULL, &res), STARFOLD_OK);
    starfold_indexed_slices_destroy(res);
    starfold_indexed_slices_destroy(sl);
    starfold_strategy_destroy(s);
    starfold_group_destroy(g);
}

/*
 * Mirrored variables under MultiWorkerMirroredStrategy, TensorFlow's MirroredVariable updated in the
 * replica context of every worker: replica g (global) adds [g + 1, 10(g + 1)] to a SUM variable of
 * [1, 2], so every copy of every process holds [1 + T(T+1)/2, 2 + 10 T(T+1)/2]; assigns [g, g] to a
 * MEAN variable ((T - 1) / 2 each); assigns [g + 5, g + 5] to an ONLY_FIRST_REPLICA variable (global
 * replica 0's value, 5, on every process). Sync-on-read SUM and MEAN variables: each replica assigns
 * [g + 1, 1] to its own copy; a cross-replica read reduces every copy of every process
 * ([T(T+1)/2, T] and [(T+1)/2, 1]).
 */
typedef struct {
    starfold_value_t sum, mean, first, on_read_sum, on_read_mean;
    starfold_status_t st[NDEV];
} mw_var_t;

static starfold_status_t mw_var_step(starfold_replica_context_t rc, void *arg)
{
    mw_var_t *a = arg;
    const int id = starfold_replica_context_replica_id_in_sync_group(rc), local = id - world_rank * NDEV;
    const float add[2] = { (float)(id + 1), (float)(10 * (id + 1)) }, same[2] = { (float)id, (float)id },
                fst[2] = { (float)(id + 5), (float)(id + 5) };
    starfold_value_t x = NULL, y = NULL, z = NULL;
    starfold_status_t st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 2, add, &x);
    if (st == STARFOLD_OK) st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 2, same, &y);
    if (st == STARFOLD_OK) st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 2, fst, &z);
    if (st == STARFOLD_OK) st = starfold_variable_assign_add(a->sum, x);
    if (st == STARFOLD_OK) st = starfold_variable_assign(a->mean, y);
    if (st == STARFOLD_OK) st = starfold_variable_assign(a->first, z);
    const float own[2] = { (float)(id + 1), 1.0f };
    starfold_value_t w = NULL;
    if (st == STARFOLD_OK) st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 2, own, &w);
    if (st == STARFOLD_OK) st = starfold_variable_assign(a->on_read_sum, w);
    if (st == STARFOLD_OK) st = starfold_variable_assign(a->on_read_mean, w);
    starfold_value_destroy(w);
    starfold_value_destroy(x);
    starfold_value_destroy(y);
    starfold_value_destroy(z);
    return a->st[local] = st;
}

static void test_mwms_variables(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    starfold_strategy_t s = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_multi_worker_mirrored_strategy_create(g, NULL, &s), STARFOLD_OK);
    /* Initial values that differ between processes: every copy starts from rank 0's, as TensorFlow
     * broadcasts them from the chief. */
    const float drawn[2] = { (float)(world_rank + 1), 10.0f * (float)world_rank };
    starfold_value_t chief = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable(s, STARFOLD_FLOAT32, 2, drawn, &chief), STARFOLD_OK);
    for (int c = 0; c < starfold_value_num_components(chief); c++) {
        float got[2] = { -1, -1 };
        CU_ASSERT_EQUAL(starfold_value_read(chief, c, got, sizeof got), STARFOLD_OK);
        CU_ASSERT(got[0] == 1.0f && got[1] == 0.0f);
    }
    starfold_value_destroy(chief);
    const int T = NDEV * world_size;
    const float init[2] = { 1.0f, 2.0f };
    starfold_variable_options_t vo;
    mw_var_t a;
    memset(&a, 0, sizeof a);
    starfold_value_t *vars[3] = { &a.sum, &a.mean, &a.first };
    const starfold_variable_aggregation_t aggs[3] = { STARFOLD_AGGREGATION_SUM, STARFOLD_AGGREGATION_MEAN,
                                                      STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA };
    for (int k = 0; k < 3; k++) {
        starfold_variable_options_init(&vo);
        vo.aggregation = aggs[k];
        CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable_with_options(s, STARFOLD_FLOAT32, 2, init, &vo, vars[k]),
                              STARFOLD_OK);
    }
    starfold_variable_options_init(&vo);
    vo.synchronization = STARFOLD_SYNCHRONIZATION_ON_READ;
    vo.aggregation = STARFOLD_AGGREGATION_SUM;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable_with_options(s, STARFOLD_FLOAT32, 2, init, &vo, &a.on_read_sum),
                          STARFOLD_OK);
    vo.aggregation = STARFOLD_AGGREGATION_MEAN;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable_with_options(s, STARFOLD_FLOAT32, 2, init, &vo, &a.on_read_mean),
                          STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, mw_var_step, &a), STARFOLD_OK);
    const float tri = (float)(T * (T + 1) / 2);
    const float want[3][2] = { { 1.0f + tri, 2.0f + 10.0f * tri },
                               { (float)(T - 1) / 2.0f, (float)(T - 1) / 2.0f },
                               { 5.0f, 5.0f } };
    long bad = 0;
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < starfold_value_num_components(*vars[k]); c++) {
            float got[2] = { -1, -1 };
            CU_ASSERT_EQUAL(starfold_value_read(*vars[k], c, got, sizeof got), STARFOLD_OK);
            bad += got[0] != want[k][0] || got[1] != want[k][1];
            if (got[0] != want[k][0] || got[1] != want[k][1])
                fprintf(stderr, "rank %d: variable %d copy %d: %g %g, want %g %g\n", world_rank, k, c, got[0], got[1],
                        want[k][0], want[k][1]);
        }
    CU_ASSERT_EQUAL(bad, 0);
    for (int d = 0; d < NDEV; d++) CU_ASSERT_EQUAL(a.st[d], STARFOLD_OK);
    /* Sync-on-read: the cross-replica read is a collective over every process. */
    for (int k = 0; k < 2; k++) {
        starfold_value_t r = NULL;
        float got[2] = { -1, -1 };
        CU_ASSERT_EQUAL_FATAL(starfold_variable_read_value(k ? a.on_read_mean : a.on_read_sum, &r), STARFOLD_OK);
        CU_ASSERT_EQUAL(starfold_value_device(r, 0), STARFOLD_DEVICE_HOST);
        CU_ASSERT_EQUAL(starfold_value_read(r, 0, got, sizeof got), STARFOLD_OK);
        CU_ASSERT_EQUAL(got[0], k ? (float)(T + 1) / 2.0f : tri);
        CU_ASSERT_EQUAL(got[1], k ? 1.0f : (float)T);
        starfold_value_destroy(r);
    }
    starfold_value_destroy(a.on_read_sum);
    starfold_value_destroy(a.on_read_mean);
    for (int k = 0; k < 3; k++) starfold_value_destroy(*vars[k]);
    starfold_strategy_destroy(s);
    starfold_group_destroy(g);
}

/*
 * MultiWorkerMirroredStrategy honours CommunicationOptions: a batch of five tensors of four dtypes
 * cut by bytes_per_pack = 4,000 into packs ({4,000 B float32, 296 B int64}, {4 B, 4,000 B float64},
 * {12 B int32}), each its own group all-reduce, all right; implementation RING crosses processes with
 * the "ring" lowering and NCCL with "mpi"; processes whose bytes_per_pack differ cut the batch
 * differently, so the first pack differs and every process gets INVALID_ARGUMENT (no result, the
 * group still usable), which only separate per-pack collectives can produce.
 */
/*
 * promote_integer_mean across processes: TensorFlow's integer MEAN is a true division into float64.
 * Replica g (global, rank x NDEV + device) holds g + 1 in an int32 and an int64 tensor of 3 elements
 * (element i: (g + 1) * (i + 1)) beside a float32 one: the integer MEANs are float64
 * (T + 1) / 2 x (i + 1) (2.5 on 4 replicas, where the integer mode truncates to 2), the float one
 * stays float32. Then a batch whose tail differs on rank 0, cut into packs: every process refuses in
 * the first pack's agreement (the batch's fingerprint), none waits for a pack the others skip.
 */
static void test_mwms_promote(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const int T = NDEV * world_size, devs[NDEV] = { 0, 1 };
    starfold_communication_options_t so;
    starfold_communication_options_init(&so);
    so.promote_integer_mean = 1;
    starfold_strategy_t s = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_multi_worker_mirrored_strategy_create(g, &so, &s), STARFOLD_OK);
    /* int8 comes out as float32, int32 and int64 as float64 (TensorFlow's truediv) */
    enum { K = 4 };
    static const starfold_dtype_t dt[K] = { STARFOLD_INT32, STARFOLD_FLOAT32, STARFOLD_INT64, STARFOLD_INT8 };
    starfold_value_t v[K] = { NULL }, res[K] = { NULL };
    starfold_value_destination_pair_t pairs[K];
    for (int k = 0; k < K; k++) {
        CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, NDEV, devs, dt[k], 3, NULL, &v[k]),
                              STARFOLD_OK);
        for (int c = 0; c < NDEV; c++) {
            const long gid = (long)world_rank * NDEV + c + 1;
            unsigned char src[3 * 8];
            for (int i = 0; i < 3; i++) put(src, dt[k], (size_t)i, (double)(gid * (i + 1)));
            CU_ASSERT_EQUAL(starfold_value_write(v[k], c, src, 3 * starfold_dtype_size(dt[k])), STARFOLD_OK);
        }
        pairs[k] = (starfold_value_destination_pair_t){ v[k], starfold_destination_value(v[k]) };
    }
    starfold_status_t st = starfold_strategy_batch_reduce_to(s, STARFOLD_OP_MEAN, K, pairs, NULL, res);
    if (st != STARFOLD_OK) fprintf(stderr, "rank %d: %s\n", world_rank, starfold_last_error());
    CU_ASSERT_EQUAL_FATAL(st, STARFOLD_OK);
    long bad = 0;
    for (int k = 0; k < K; k++) {
        const starfold_dtype_t want_dt =
            dt[k] == STARFOLD_FLOAT32 || dt[k] == STARFOLD_INT8 ? STARFOLD_FLOAT32 : STARFOLD_FLOAT64;
        CU_ASSERT_EQUAL(starfold_value_dtype(res[k]), want_dt);
        CU_ASSERT_EQUAL(starfold_value_num_components(res[k]), NDEV);
        for (int c = 0; c < NDEV; c++) {
            double got[3] = { 0 };
            CU_ASSERT_EQUAL(starfold_value_read(res[k], c, got, 3 * starfold_dtype_size(want_dt)), STARFOLD_OK);
            for (int i = 0; i < 3; i++) {
                const double want = (double)(T + 1) / 2.0 * (i + 1);
                const double x = want_dt == STARFOLD_FLOAT32 ? ((float *)got)[i] : got[i];
                bad += x != want;
            }
        }
        starfold_value_destroy(res[k]);
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* A reduce_to onto the host: one float64 value. */
    starfold_value_t r = NULL;
    const starfold_destination_t host = starfold_destination_host();
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_reduce_to(s, STARFOLD_OP_MEAN, v[0], &host, NULL, &r), STARFOLD_OK);
    double h[3] = { 0 };
    CU_ASSERT_EQUAL(starfold_value_device(r, 0), STARFOLD_DEVICE_HOST);
    CU_ASSERT_EQUAL(starfold_value_read(r, 0, h, sizeof h), STARFOLD_OK);
    CU_ASSERT_EQUAL(h[2], (double)(T + 1) / 2.0 * 3);
    starfold_value_destroy(r);

    if (world_size > 1) {
        /* Rank 0 leaves the last pair out; in packs of one tensor the first pack is the same everywhere. */
        starfold_communication_options_t call;
        starfold_communication_options_init(&call);
        call.bytes_per_pack = 4;
        call.timeout_seconds = 30;
        starfold_value_t out[3] = { NULL };
        CU_ASSERT_EQUAL(starfold_strategy_batch_reduce_to(s, STARFOLD_OP_SUM, world_rank == 0 ? 2 : 3, pairs, &call, out),
                        STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "another batch"));
        CU_ASSERT_PTR_NULL(out[0]);
        CU_ASSERT_EQUAL(starfold_group_is_broken(g), 0);
        /* The group goes on. */
        CU_ASSERT_EQUAL(starfold_strategy_batch_reduce_to(s, STARFOLD_OP_SUM, 3, pairs, &call, out), STARFOLD_OK);
        for (int k = 0; k < 3; k++) starfold_value_destroy(out[k]);
        /* The last rank's value is one component, the same tensor on both its replicas, whose SUM would
         * count it twice: refused there, shared with every process. */
        starfold_value_t lone = NULL, one = NULL;
        const float x = 1.0f;
        CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, devs, STARFOLD_FLOAT32, 1, &x, &lone),
                              STARFOLD_OK);
        starfold_value_destination_pair_t p1 = { world_rank == world_size - 1 ? lone : v[1],
                                                 starfold_destination_value(v[1]) };
        CU_ASSERT_EQUAL(starfold_strategy_batch_reduce_to(s, STARFOLD_OP_SUM, 1, &p1, &call, &one),
                        STARFOLD_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NULL(one);
        if (world_rank != world_size - 1) {
            char want[64];
            snprintf(want, sizeof want, "rank %d refused its arguments", world_size - 1);
            CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), want));
        }
        CU_ASSERT_EQUAL(starfold_group_is_broken(g), 0);
        starfold_value_destroy(lone);
    }
    for (int k = 0; k < K; k++) starfold_value_destroy(v[k]);
    starfold_strategy_destroy(s);
    starfold_group_destroy(g);
}

static void test_mwms_options(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const int T = NDEV * world_size, devs[NDEV] = { 0, 1 };
    static const starfold_tensor_desc_t t[5] = { { STARFOLD_FLOAT32, 1000 }, { STARFOLD_INT64, 37 }, { STARFOLD_FLOAT32, 1 },
                                                 { STARFOLD_FLOAT64, 500 }, { STARFOLD_INT32, 3 } };
    double init[1000]; /* room for any of them: element i is i % 7 + k, in the tensor's dtype */
    starfold_value_t v[5] = { NULL };
    starfold_value_destination_pair_t pairs[5];
    for (int k = 0; k < 5; k++) {
        for (size_t i = 0; i < t[k].count; i++) {
            const long x = (long)(i % 7) + k;
            switch (t[k].dtype) {
            case STARFOLD_FLOAT32: ((float *)init)[i] = (float)x; break;
            case STARFOLD_FLOAT64: init[i] = (double)x; break;
            case STARFOLD_INT32: ((int32_t *)init)[i] = (int32_t)x; break;
            default: ((int64_t *)init)[i] = x; break;
            }
        }
        CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, NDEV, devs, t[k].dtype, t[k].count, init,
                                                    &v[k]),
                              STARFOLD_OK);
        pairs[k] = (starfold_value_destination_pair_t){ v[k], starfold_destination_value(v[k]) };
    }
    static const starfold_communication_implementation_t impl[2] = { STARFOLD_COMMUNICATION_RING,
                                                                     STARFOLD_COMMUNICATION_NCCL };
    static const char *const lowering[2] = { "ring", "mpi" };
    /* SF_TEST_LOWERINGS without "ring" (a machine that cannot afford the graph lowerings): NCCL's
     * "mpi" only. */
    const char *only = getenv("SF_TEST_LOWERINGS");
    for (int m = only && !strstr(only, "ring") ? 1 : 0; m < 2; m++) {
        starfold_communication_options_t so, call;
        starfold_communication_options_init(&so);
        so.implementation = impl[m];
        starfold_communication_options_init(&call);
        call.bytes_per_pack = 4000;
        call.timeout_seconds = 30;
        starfold_strategy_t s = NULL;
        CU_ASSERT_EQUAL_FATAL(starfold_multi_worker_mirrored_strategy_create(g, &so, &s), STARFOLD_OK);
        starfold_value_t res[5] = { NULL };
        const starfold_status_t st = starfold_strategy_batch_reduce_to(s, STARFOLD_OP_SUM, 5, pairs, &call, res);
        if (st != STARFOLD_OK) fprintf(stderr, "rank %d: %s\n", world_rank, starfold_last_error());
        CU_ASSERT_EQUAL_FATAL(st, STARFOLD_OK);
        CU_ASSERT_STRING_EQUAL(starfold_group_last_lowering(g), world_size > 1 ? lowering[m] : "mpi");
        long bad = 0;
        for (int k = 0; k < 5; k++) {
            for (int c = 0; c < NDEV; c++) {
                double got[1000];
                CU_ASSERT_EQUAL(starfold_value_read(res[k], c, got, t[k].count * starfold_dtype_size(t[k].dtype)), STARFOLD_OK);
                for (size_t i = 0; i < t[k].count; i++) {
                    const double want = (double)((long)(i % 7) + k) * T;
                    const double x = t[k].dtype == STARFOLD_FLOAT32 ? ((float *)got)[i]
                                     : t[k].dtype == STARFOLD_FLOAT64 ? got[i]
                                     : t[k].dtype == STARFOLD_INT32 ? ((int32_t *)got)[i] : (double)((int64_t *)got)[i];
                    bad += x != want;
                }
            }
            starfold_value_destroy(res[k]);
        }
        CU_ASSERT_EQUAL(bad, 0);
        /* Different packing on one process: the packs differ, every process refuses alike. */
        if (world_size > 1) {
            call.bytes_per_pack = world_rank == 0 ? 0 : 4000;
            CU_ASSERT_EQUAL(starfold_strategy_batch_reduce_to(s, STARFOLD_OP_SUM, 5, pairs, &call, res),
                            STARFOLD_ERR_INVALID_ARGUMENT);
            CU_ASSERT_EQUAL(starfold_group_is_broken(g), 0);
        }
        starfold_strategy_destroy(s);
    }
    for (int k = 0; k < 5; k++) starfold_value_destroy(v[k]);
    starfold_group_destroy(g);
}

/*
 * `test_group K timeout`: the last rank never joins collective #0 in time. Every other rank gets
 * STARFOLD_ERR_TIMEOUT naming it, after the stall warning; the group is broken there (later calls
 * fail at once); the late rank, arriving after, fails at once on the others' notice instead of
 * waiting; destroying the broken groups does not block. A broken group cannot be finalised (MPI
 * would wait for the missing rank), so the job ends as the documentation says: rank 0 aborts it, with
 * the failure count as the exit code (mpirun returns it).
 *
 * `test_group K lost LOWERING`: the last rank is lost in the middle of a graph lowering: it joins the
 * agreement, then its StarPU workers hang (a task sleeping on each, as a hung kernel would), so its
 * part of the graph never runs and its sends never leave. Every rank, the hung one included, gets
 * STARFOLD_ERR_TIMEOUT from its own wait on the graph's handles after timeout_seconds, instead of
 * waiting forever; the group is broken everywhere, nothing was written, and the job ends the same way.
 *
 * `test_group K lost mpi direct`: the same over a context of one device per rank, where the MPI
 * lowering goes straight from the inputs into the outputs (the direct plan): the other ranks' MPI
 * all-reduce starts and never completes, and times out in the task that polls it. The same TIMEOUT
 * everywhere; the outputs are MPI's receive buffers then, which it may have begun to write (the
 * documented exception): 0 or this rank's own input here. `test_group K lost mpi packed`: one device
 * and two tensors, each its own vector (the packed plan): the same TIMEOUT, and since its task
 * unpacks only after MPI's all-reduce completed, nothing was written. `test_group K lost mpi` over several
 * devices relays: MPI writes device 0's outputs (0 or this rank's own sum, likewise), the other
 * devices' stay as they were.
 */
static void hang(void *buffers[], void *arg)
{
    (void)buffers;
    (void)arg;
    const struct timespec t = { 8, 0 };
    nanosleep(&t, NULL);
}

static struct starpu_codelet hang_cl = { .cpu_funcs = { hang }, .nbuffers = 0, .name = "hung_kernel" };

/* Occupies every CPU worker of this rank with a hung task. */
static void hang_workers(void)
{
    int ids[STARPU_NMAXWORKERS];
    const int n = starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, ids, STARPU_NMAXWORKERS);
    for (int w = 0; w < n; w++) starpu_task_insert(&hang_cl, STARPU_EXECUTE_ON_WORKER, ids[w], 0);
}

static int run_fault_case(const char *lowering, int direct, int packed)
{
    int failed = 0;
#define EXPECT(cond)                                                                                   \
    do {                                                                                               \
        if (!(cond)) {                                                                                 \
            fprintf(stderr, "rank %d: %s:%d: expected %s (last error: %s)\n", world_rank, __FILE__, __LINE__, \
                    #cond, starfold_last_error());                                                      \
            failed++;                                                                                  \
        }                                                                                              \
    } while (0)
    starfold_group_options_t o;
    starfold_group_options_init(&o);
    o.ranks_per_node = ranks_per_node;
    o.timeout_seconds = 1.5;
    o.stall_warning_seconds = 0.5;
    starfold_group_t g = NULL;
    EXPECT(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g) == STARFOLD_OK);
    if (!g) return 1;
    if (lowering) EXPECT(starfold_group_set_lowering(g, lowering) == STARFOLD_OK);
    g->test_no_pack = !packed; /* several devices relay (on one worker they would pack) */
    const float x = 1.0f;
    /* One tensor per device, or with `packed` two on the one device, each its own vector. */
    starpu_data_handle_t in[NDEV], out[NDEV];
    const int ndev = starfold_context_num_devices(ctx), nt = packed ? 2 : 1;
    EXPECT(ndev == (direct || packed ? 1 : NDEV));
    for (int d = 0; d < ndev * nt; d++) {
        EXPECT(starfold_vector_create(ctx, d / nt, STARFOLD_FLOAT32, 1, &in[d]) == STARFOLD_OK);
        EXPECT(starfold_vector_create(ctx, d / nt, STARFOLD_FLOAT32, 1, &out[d]) == STARFOLD_OK);
        const float zero = 0.0f;
        starfold_vector_write(in[d], &x, sizeof x);
        starfold_vector_write(out[d], &zero, sizeof zero);
    }
    const starfold_tensor_desc_t t[2] = { { STARFOLD_FLOAT32, 1 }, { STARFOLD_FLOAT32, 1 } };
    const int late = world_rank == world_size - 1;
    if (lowering) {
        if (late) hang_workers();
        EXPECT(starfold_group_all_reduce(g, STARFOLD_OP_SUM, (size_t)nt, t, in, out) == STARFOLD_ERR_TIMEOUT);
        EXPECT(strstr(starfold_last_error(), "did not complete within timeout_seconds") != NULL);
        EXPECT(!strcmp(starfold_group_last_lowering(g), lowering));
        EXPECT(starfold_group_is_broken(g) == 1);
        EXPECT(starfold_group_all_reduce(g, STARFOLD_OP_SUM, (size_t)nt, t, in, out) == STARFOLD_ERR_RUNTIME);
        EXPECT(strstr(starfold_last_error(), "the group is broken") != NULL);
    } else if (late) {
        const struct timespec wait = { 4, 0 };
        nanosleep(&wait, NULL);
        EXPECT(starfold_group_all_reduce(g, STARFOLD_OP_SUM, (size_t)nt, t, in, out) == STARFOLD_ERR_RUNTIME);
        EXPECT(strstr(starfold_last_error(), "declared the group broken") != NULL);
    } else {
        EXPECT(starfold_group_all_reduce(g, STARFOLD_OP_SUM, (size_t)nt, t, in, out) == STARFOLD_ERR_TIMEOUT);
        char want[64]; /* its own limit passed, or another waiting rank's first: the same missing rank */
        snprintf(want, sizeof want, "rank %d did not join", world_size - 1);
        EXPECT(strstr(starfold_last_error(), want) != NULL);
        EXPECT(starfold_group_is_broken(g) == 1);
        EXPECT(starfold_group_all_reduce(g, STARFOLD_OP_SUM, (size_t)nt, t, in, out) == STARFOLD_ERR_RUNTIME);
        EXPECT(strstr(starfold_last_error(), "the group is broken") != NULL);
    }
    EXPECT(starfold_group_is_broken(g) == 1);
    float y = -1;
    /* Several devices and the MPI lowering relay: MPI's all-reduce writes device 0's outputs itself
     * (from the leader, this rank's own sum), the broadcast to the others never ran. */
    const int relay = !direct && !packed && lowering && !strcmp(lowering, "mpi");
    for (int d = 1; !direct && !packed && d < ndev; d++) {
        EXPECT(starfold_vector_read(out[d], &y, sizeof y) == STARFOLD_OK);
        EXPECT(y == 0.0f); /* nothing was written */
    }
    if (!direct && !relay && !packed) {
        EXPECT(starfold_vector_read(out[0], &y, sizeof y) == STARFOLD_OK);
        EXPECT(y == 0.0f); /* nothing was written */
    } else if (packed && !late) {
        /* The packed task unpacks only once MPI's all-reduce completed: nothing was written. (The
         * hung rank's outputs stay its queued task's until it has run: not read.) */
        for (int k = 0; k < nt; k++) {
            EXPECT(starfold_vector_read(out[k], &y, sizeof y) == STARFOLD_OK);
            EXPECT(y == 0.0f);
        }
    } else if (relay && !late) {
        /* MPI's receive buffer: untouched, or this rank's own sum copied in. */
        EXPECT(starfold_vector_read(out[0], &y, sizeof y) == STARFOLD_OK);
        EXPECT(y == 0.0f || y == (float)ndev * x);
    } else if (direct && !late) {
        /* MPI's receive buffer: untouched, or its own part copied in. (The hung rank's output stays
         * its queued MPI task's until that task has run: not read.) */
        EXPECT(starfold_vector_read(out[0], &y, sizeof y) == STARFOLD_OK);
        EXPECT(y == 0.0f || y == x);
    }
    starfold_group_destroy(g); /* broken: returns without waiting for the others */
    int total = 0;
    MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) {
        printf("test_group: %d ranks, %s case: %d failures over all ranks; ending the job with "
               "starfold_group_abort()\n", world_size, lowering ? "lost" : "timeout", total);
        fflush(stdout);
        starfold_group_abort(NULL, total ? 1 : 0);
    }
    for (;;) pause(); /* until the abort ends this rank */
#undef EXPECT
}

/*
 * `test_group K create`: the last rank calls starfold_group_create() 4 s late, the others with a
 * timeout of 1.5 s. Every other rank gets STARFOLD_ERR_TIMEOUT after the timeout, instead of waiting
 * in MPI; the late rank, whose first exchange the others have abandoned, gets it too; no group is
 * made anywhere. MPI keeps the abandoned requests, so the job ends as the documentation says: rank 0
 * aborts it with the failure count as the exit code.
 */
static int run_creation_timeout(void)
{
    int failed = 0;
    starfold_group_options_t o;
    starfold_group_options_init(&o);
    o.ranks_per_node = ranks_per_node;
    o.timeout_seconds = 1.5;
    const int late = world_rank == world_size - 1;
    if (late) {
        const struct timespec wait = { 4, 0 };
        nanosleep(&wait, NULL);
    }
    starfold_group_t g = NULL;
    const double t0 = MPI_Wtime();
    const starfold_status_t st = starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g);
    const double took = MPI_Wtime() - t0;
    if (st != STARFOLD_ERR_TIMEOUT || g != NULL || !strstr(starfold_last_error(), "within timeout_seconds (1.5 s)")) {
        fprintf(stderr, "rank %d: expected STARFOLD_ERR_TIMEOUT and no group, got %s (%s)\n", world_rank,
                starfold_status_string(st), starfold_last_error());
        failed++;
    }
    /* Bounded: the timeout, plus the naps and a loaded machine's delays (not a speed: a hang's bound). */
    if (took > 30) {
        fprintf(stderr, "rank %d: the timed-out creation took %.1f s\n", world_rank, took);
        failed++;
    }
    printf("test_group: rank %d%s: starfold_group_create: %s after %.1f s: %s\n", world_rank, late ? " (late)" : "",
           starfold_status_string(st), took, starfold_last_error());
    fflush(stdout);
    int total = 0;
    MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) {
        printf("test_group: %d ranks, create case: %d failures over all ranks; ending the job with "
               "starfold_group_abort()\n", world_size, total);
        fflush(stdout);
        starfold_group_abort(NULL, total ? 1 : 0);
    }
    for (;;) pause(); /* until the abort ends this rank */
    return 1;
}

/*
 * A non-distributed value (one object on every replica of a process) across processes. Under SUM it
 * would count once per replica of the process: TensorFlow refuses, and so does every process here,
 * whichever of them passed it, with the variables unchanged and the group usable. Under MEAN it is
 * the process's value: rank r's r + 1 everywhere gives the mean over the processes, (size + 1) / 2.
 * The same for reduce_to: rank 0 alone passing a one-component value to a SUM fails every rank.
 */
typedef struct {
    starfold_value_t sum, mean;
    starfold_value_t shared;  /* one value, made before the run */
    int own_on_others;        /* ranks other than 0 give each replica a value of its own */
    starfold_status_t st_sum[NDEV], st_mean[NDEV];
} mw_nd_t;

static starfold_status_t mw_nd_step(starfold_replica_context_t rc, void *arg)
{
    mw_nd_t *a = arg;
    const int id = starfold_replica_context_replica_id_in_sync_group(rc), local = id - world_rank * NDEV;
    const float x = (float)(id + 1);
    starfold_value_t own = NULL;
    starfold_status_t st = STARFOLD_OK;
    if (a->own_on_others && world_rank != 0) st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 1, &x, &own);
    a->st_sum[local] = st == STARFOLD_OK ? starfold_variable_assign(a->sum, own ? own : a->shared) : st;
    a->st_mean[local] = starfold_variable_assign(a->mean, a->shared);
    starfold_value_destroy(own);
    return STARFOLD_OK;
}

static void test_mwms_non_distributed(void)
{
    starfold_group_t g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    starfold_strategy_t s = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_multi_worker_mirrored_strategy_create(g, NULL, &s), STARFOLD_OK);
    const float init = 7.0f, mine = (float)(world_rank + 1), mean = (float)(world_size + 1) / 2.0f;
    const int host = STARFOLD_DEVICE_HOST;
    mw_nd_t a;
    memset(&a, 0, sizeof a);
    starfold_variable_options_t vo;
    starfold_variable_options_init(&vo);
    vo.aggregation = STARFOLD_AGGREGATION_SUM;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable_with_options(s, STARFOLD_FLOAT32, 1, &init, &vo, &a.sum), STARFOLD_OK);
    vo.aggregation = STARFOLD_AGGREGATION_MEAN;
    CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable_with_options(s, STARFOLD_FLOAT32, 1, &init, &vo, &a.mean), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, 1, &host, STARFOLD_FLOAT32, 1, &mine, &a.shared),
                          STARFOLD_OK);
    for (int mixed = 0; mixed < 2; mixed++) {
        a.own_on_others = mixed;
        CU_ASSERT_EQUAL(starfold_strategy_run(s, mw_nd_step, &a), STARFOLD_OK);
        for (int d = 0; d < NDEV; d++) {
            CU_ASSERT_EQUAL(a.st_sum[d], STARFOLD_ERR_INVALID_ARGUMENT);
            CU_ASSERT_EQUAL(a.st_mean[d], STARFOLD_OK);
        }
        for (int c = 0; c < NDEV; c++) {
            float got = -1;
            CU_ASSERT_EQUAL(starfold_value_read(a.sum, c, &got, sizeof got), STARFOLD_OK);
            CU_ASSERT_EQUAL(got, init);
            CU_ASSERT_EQUAL(starfold_value_read(a.mean, c, &got, sizeof got), STARFOLD_OK);
            CU_ASSERT_EQUAL(got, mean);
        }
    }
    /* reduce_to: a one-component value's SUM on rank 0 only, a per-replica value on the others. */
    const int devs[NDEV] = { 0, 1 };
    starfold_value_t pr = NULL, r = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(ctx, STARFOLD_VALUE_PER_REPLICA, NDEV, devs, STARFOLD_FLOAT32, 1, &mine, &pr),
                          STARFOLD_OK);
    starfold_destination_t dh = starfold_destination_host();
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, world_rank == 0 ? a.shared : pr, &dh, NULL, &r),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), world_rank == 0 ? "non-DistributedValues" : "rank 0 refused"));
    /* The group is still usable: the per-replica value's SUM, then the one-component value's MEAN. */
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, pr, &dh, NULL, &r), STARFOLD_OK);
    float got = -1;
    if (r) CU_ASSERT_EQUAL(starfold_value_read(r, 0, &got, sizeof got), STARFOLD_OK);
    CU_ASSERT_EQUAL(got, (float)(NDEV * world_size * (world_size + 1) / 2));
    starfold_value_destroy(r);
    r = NULL;
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to(s, STARFOLD_OP_MEAN, a.shared, &dh, NULL, &r), STARFOLD_OK);
    got = -1;
    if (r) CU_ASSERT_EQUAL(starfold_value_read(r, 0, &got, sizeof got), STARFOLD_OK);
    CU_ASSERT_EQUAL(got, mean);
    starfold_value_destroy(r);
    starfold_value_destroy(pr);
    starfold_value_destroy(a.shared);
    starfold_value_destroy(a.sum);
    starfold_value_destroy(a.mean);
    starfold_strategy_destroy(s);
    starfold_group_destroy(g);
}

/*
 * The header's rule on failure, for the group's functions with output parameters (the others are in
 * tests/test_badinput.c; tests/check-failure-paths.sh keeps the list whole): each failing call leaves
 * every output as it was, on every rank.
 */
#define FAILS(call, want, untouched)                                                                    \
    do {                                                                                                \
        const starfold_status_t st_ = (call);                                                           \
        if (st_ != (want))                                                                              \
            fprintf(stderr, "rank %d: %s gave %s (%s)\n", world_rank, #call, starfold_status_string(st_), \
                    starfold_last_error());                                                             \
        CU_ASSERT_EQUAL(st_, (want));                                                                   \
        CU_ASSERT(untouched);                                                                           \
    } while (0)

static void test_out_params(void)
{
    starfold_group_options_t o;
    starfold_group_options_init(&o);
    o.timeout_seconds = -1;
    starfold_group_t g = (starfold_group_t)(uintptr_t)0x5eed;
    FAILS(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT,
          g == (starfold_group_t)(uintptr_t)0x5eed);
    g = make_group(60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    starfold_topology_t t = (starfold_topology_t)(uintptr_t)0x5eed;
    FAILS(starfold_group_rank_topology(NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT, t == (starfold_topology_t)(uintptr_t)0x5eed);
    FAILS(starfold_group_cluster_topology(NULL, &t), STARFOLD_ERR_INVALID_ARGUMENT,
          t == (starfold_topology_t)(uintptr_t)0x5eed);
    const starfold_tensor_desc_t tensor = { STARFOLD_FLOAT32, 4 };
    const char *chosen = "untouched";
    double us = -7;
    FAILS(starfold_group_predict(g, STARFOLD_OP_SUM, 1, &tensor, "no-such-lowering", &chosen, &us),
          STARFOLD_ERR_INVALID_ARGUMENT, !strcmp(chosen, "untouched") && us == -7);
    starpu_data_handle_t in = NULL, out = (starpu_data_handle_t)(uintptr_t)0x5eed;
    CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, 0, STARFOLD_FLOAT32, 4, &in), STARFOLD_OK);
    size_t counts[64];
    for (int r = 0; r < 64; r++) counts[r] = 777;
    /* The last rank's dtype is not the vector's: refused there, every rank fails alike. */
    FAILS(starfold_group_all_gather(g, world_rank == world_size - 1 ? STARFOLD_INT64 : STARFOLD_FLOAT32, in, &out, counts),
          STARFOLD_ERR_INVALID_ARGUMENT, out == (starpu_data_handle_t)(uintptr_t)0x5eed && counts[0] == 777);
    starfold_group_persistent_t p = (starfold_group_persistent_t)(uintptr_t)0x5eed;
    starpu_data_handle_t ins[NDEV], outs[NDEV];
    for (int d = 0; d < NDEV; d++) {
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, d, STARFOLD_FLOAT32, 4, &ins[d]), STARFOLD_OK);
        CU_ASSERT_EQUAL_FATAL(starfold_vector_create(ctx, d, STARFOLD_FLOAT32, 4, &outs[d]), STARFOLD_OK);
    }
    FAILS(starfold_group_all_reduce_init(g, world_rank == 0 ? (starfold_op_t)99 : STARFOLD_OP_SUM, 1, &tensor, ins, outs, &p),
          STARFOLD_ERR_INVALID_ARGUMENT, p == (starfold_group_persistent_t)(uintptr_t)0x5eed);
    starfold_communication_options_t co;
    starfold_communication_options_init(&co);
    co.bytes_per_pack = -1;
    starfold_strategy_t s = (starfold_strategy_t)(uintptr_t)0x5eed;
    FAILS(starfold_multi_worker_mirrored_strategy_create(g, &co, &s), STARFOLD_ERR_INVALID_ARGUMENT,
          s == (starfold_strategy_t)(uintptr_t)0x5eed);
    /* An asynchronous all-reduce refused before it is queued (no group): the request untouched. */
    starfold_group_request_t q = (starfold_group_request_t)(uintptr_t)0x5eed;
    FAILS(starfold_group_all_reduce_async(NULL, STARFOLD_OP_SUM, 1, &tensor, ins, outs, &q), STARFOLD_ERR_INVALID_ARGUMENT,
          q == (starfold_group_request_t)(uintptr_t)0x5eed);
    /* The group still works. */
    CU_ASSERT_EQUAL(starfold_group_all_reduce(g, STARFOLD_OP_SUM, 1, &tensor, ins, outs), STARFOLD_OK);
    for (int d = 0; d < NDEV; d++) {
        starfold_vector_destroy(ctx, ins[d]);
        starfold_vector_destroy(ctx, outs[d]);
    }
    starfold_vector_destroy(ctx, in);
    starfold_group_destroy(g);
}

/* ------------------------------------------------------------------------------------------------
 * One device per process (a context of its own with one device): TensorFlow's multi_worker_mirrored
 * 2x1 and 3x1 combinations. Replica g is rank g, T = world_size.
 */

/* MultiWorkerMirroredStrategy over a context of one device (*@c1, *@g: destroy both after it). */
static starfold_strategy_t one_device_strategy(starfold_context_t *c1, starfold_group_t *g)
{
    starfold_strategy_t s = NULL;
    *g = one_device_group(c1, NULL);
    if (*g) CU_ASSERT_EQUAL(starfold_multi_worker_mirrored_strategy_create(*g, NULL, &s), STARFOLD_OK);
    return s;
}

static void one_device_done(starfold_context_t c1, starfold_group_t g, starfold_strategy_t s)
{
    starfold_strategy_destroy(s);
    starfold_group_destroy(g);
    starfold_context_destroy(c1);
}

/*
 * Mirrored variables of one copy per process, updated in the replica context (mirrored_strategy_test):
 * every update crosses the processes even though each process has one replica. MEAN: assign(g) gives
 * (T-1)/2 everywhere, assign_add(g) 1 + (T-1)/2, assign_sub(g) 5 - (T-1)/2; SUM: assign_add(g + 1)
 * gives 1 + T(T+1)/2; ONLY_FIRST_REPLICA: assign(g + 5) gives 5; and a value on the host, rank + 1,
 * assigned to a SUM variable, is that worker's replica's value (TensorFlow all-reduces a worker's
 * non-distributed value across workers): T(T+1)/2.
 */
enum { V1_MEAN_ASSIGN, V1_MEAN_ADD, V1_MEAN_SUB, V1_SUM_ADD, V1_FIRST, V1_SUM_HOST, V1_COUNT };
typedef struct {
    starfold_value_t var[V1_COUNT];
    starfold_value_t host; /* made before the run, on the host */
    starfold_status_t st;
} mw1_var_t;

static starfold_status_t mw1_var_step(starfold_replica_context_t rc, void *arg)
{
    mw1_var_t *a = arg;
    const int g = starfold_replica_context_replica_id_in_sync_group(rc);
    const float id = (float)g, id1 = (float)(g + 1), id5 = (float)(g + 5);
    starfold_value_t x = NULL, x1 = NULL, x5 = NULL;
    starfold_status_t st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 1, &id, &x);
    if (st == STARFOLD_OK) st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 1, &id1, &x1);
    if (st == STARFOLD_OK) st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 1, &id5, &x5);
    if (st == STARFOLD_OK) st = starfold_variable_assign(a->var[V1_MEAN_ASSIGN], x);
    if (st == STARFOLD_OK) st = starfold_variable_assign_add(a->var[V1_MEAN_ADD], x);
    if (st == STARFOLD_OK) st = starfold_variable_assign_sub(a->var[V1_MEAN_SUB], x);
    if (st == STARFOLD_OK) st = starfold_variable_assign_add(a->var[V1_SUM_ADD], x1);
    if (st == STARFOLD_OK) st = starfold_variable_assign(a->var[V1_FIRST], x5);
    if (st == STARFOLD_OK) st = starfold_variable_assign(a->var[V1_SUM_HOST], a->host);
    starfold_value_destroy(x);
    starfold_value_destroy(x1);
    starfold_value_destroy(x5);
    return a->st = st;
}

static void test_mwms_one_device_variables(void)
{
    starfold_context_t c1 = NULL;
    starfold_group_t g = NULL;
    starfold_strategy_t s = one_device_strategy(&c1, &g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    const int T = world_size;
    CU_ASSERT_EQUAL(starfold_strategy_num_replicas_in_sync(s), T);
    const starfold_variable_aggregation_t agg[V1_COUNT] = {
        STARFOLD_AGGREGATION_MEAN, STARFOLD_AGGREGATION_MEAN, STARFOLD_AGGREGATION_MEAN,
        STARFOLD_AGGREGATION_SUM,  STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA, STARFOLD_AGGREGATION_SUM
    };
    const float init[V1_COUNT] = { 1.0f, 1.0f, 5.0f, 1.0f, 0.0f, 0.0f };
    const float half = (float)(T - 1) / 2.0f, tri = (float)(T * (T + 1) / 2);
    const float want[V1_COUNT] = { half, 1.0f + half, 5.0f - half, 1.0f + tri, 5.0f, tri };
    mw1_var_t a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < V1_COUNT; k++) {
        starfold_variable_options_t vo;
        starfold_variable_options_init(&vo);
        vo.aggregation = agg[k];
        CU_ASSERT_EQUAL_FATAL(starfold_strategy_create_variable_with_options(s, STARFOLD_FLOAT32, 1, &init[k], &vo, &a.var[k]),
                              STARFOLD_OK);
    }
    const int host = STARFOLD_DEVICE_HOST;
    const float mine = (float)(world_rank + 1);
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(c1, STARFOLD_VALUE_PER_REPLICA, 1, &host, STARFOLD_FLOAT32, 1, &mine, &a.host),
                          STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_strategy_run(s, mw1_var_step, &a), STARFOLD_OK);
    CU_ASSERT_EQUAL(a.st, STARFOLD_OK);
    for (int k = 0; k < V1_COUNT; k++) {
        float got = -1;
        CU_ASSERT_EQUAL(starfold_value_read(a.var[k], 0, &got, sizeof got), STARFOLD_OK);
        if (got != want[k]) fprintf(stderr, "rank %d: one-device variable %d: %g, want %g\n", world_rank, k, got, want[k]);
        CU_ASSERT_EQUAL(got, want[k]);
    }
    for (int k = 0; k < V1_COUNT; k++) starfold_value_destroy(a.var[k]);
    starfold_value_destroy(a.host);
    one_device_done(c1, g, s);
}

/*
 * A value on the host under MultiWorkerMirroredStrategy with one device per process: TensorFlow takes
 * such a tensor as this worker's per-replica value and all-reduces it across the workers. Rank r
 * holds [r + 1, 2]: strategy.reduce(SUM) gives [T(T+1)/2, 2T] on the host, reduce_to a device and
 * batch_reduce_to (the host and the device) the same, MEAN [(T+1)/2, 2].
 */
static void test_mwms_one_device_host_value(void)
{
    starfold_context_t c1 = NULL;
    starfold_group_t g = NULL;
    starfold_strategy_t s = one_device_strategy(&c1, &g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    const int T = world_size, host = STARFOLD_DEVICE_HOST;
    const float x[2] = { (float)(world_rank + 1), 2.0f };
    const float sum[2] = { (float)(T * (T + 1) / 2), 2.0f * (float)T }, mean[2] = { (float)(T + 1) / 2.0f, 2.0f };
    starfold_value_t v = NULL, r = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_value_create(c1, STARFOLD_VALUE_PER_REPLICA, 1, &host, STARFOLD_FLOAT32, 2, x, &v),
                          STARFOLD_OK);
    float got[2] = { -1, -1 };
    CU_ASSERT_EQUAL(starfold_strategy_reduce(s, STARFOLD_OP_SUM, v, STARFOLD_AXIS_NONE, &r), STARFOLD_OK);
    if (r) {
        CU_ASSERT_EQUAL(starfold_value_device(r, 0), STARFOLD_DEVICE_HOST);
        CU_ASSERT_EQUAL(starfold_value_read(r, 0, got, sizeof got), STARFOLD_OK);
        CU_ASSERT(got[0] == sum[0] && got[1] == sum[1]);
        starfold_value_destroy(r);
        r = NULL;
    }
    CU_ASSERT_EQUAL(starfold_strategy_reduce(s, STARFOLD_OP_MEAN, v, STARFOLD_AXIS_NONE, &r), STARFOLD_OK);
    if (r) {
        CU_ASSERT_EQUAL(starfold_value_read(r, 0, got, sizeof got), STARFOLD_OK);
        CU_ASSERT(got[0] == mean[0] && got[1] == mean[1]);
        starfold_value_destroy(r);
        r = NULL;
    }
    starfold_destination_t d0 = starfold_destination_device(0), dh = starfold_destination_host();
    CU_ASSERT_EQUAL(starfold_strategy_reduce_to(s, STARFOLD_OP_SUM, v, &d0, NULL, &r), STARFOLD_OK);
    if (r) {
        CU_ASSERT_EQUAL(starfold_value_device(r, 0), 0);
        CU_ASSERT_EQUAL(starfold_value_read(r, 0, got, sizeof got), STARFOLD_OK);
        CU_ASSERT(got[0] == sum[0] && got[1] == sum[1]);
        starfold_value_destroy(r);
        r = NULL;
    }
    starfold_value_destination_pair_t pairs[2] = { { v, dh }, { v, d0 } };
    starfold_value_t res[2] = { NULL, NULL };
    CU_ASSERT_EQUAL(starfold_strategy_batch_reduce_to(s, STARFOLD_OP_SUM, 2, pairs, NULL, res), STARFOLD_OK);
    for (int k = 0; k < 2; k++) {
        if (!res[k]) continue;
        CU_ASSERT_EQUAL(starfold_value_device(res[k], 0), k ? 0 : STARFOLD_DEVICE_HOST);
        CU_ASSERT_EQUAL(starfold_value_read(res[k], 0, got, sizeof got), STARFOLD_OK);
        CU_ASSERT(got[0] == sum[0] && got[1] == sum[1]);
        starfold_value_destroy(res[k]);
    }
    /* The value was only read. */
    CU_ASSERT_EQUAL(starfold_value_read(v, 0, got, sizeof got), STARFOLD_OK);
    CU_ASSERT(got[0] == x[0] && got[1] == x[1]);
    starfold_value_destroy(v);
    one_device_done(c1, g, s);
}

int main(int argc, char **argv)
{
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    ranks_per_node = argc > 1 ? atoi(argv[1]) : 0;
    int failed = 0;
    if (provided < MPI_THREAD_MULTIPLE) {
        if (world_rank == 0) fprintf(stderr, "test_group: this MPI gives no MPI_THREAD_MULTIPLE (%d)\n", provided);
        MPI_Finalize();
        return 77;
    }
    starfold_context_options_t co;
    starfold_context_options_init(&co);
    co.mode = STARFOLD_DEVICES_CPU;
    const int direct = argc > 4 && !strcmp(argv[4], "direct"); /* `lost mpi direct`: one device per rank */
    const int packed = argc > 4 && !strcmp(argv[4], "packed"); /* `lost mpi packed`: and two tensors */
    co.num_devices = direct || packed ? 1 : NDEV;
    if (starfold_context_create(&co, &ctx) != STARFOLD_OK) {
        fprintf(stderr, "test_group: rank %d: cannot create the context: %s\n", world_rank, starfold_last_error());
        failed = 1;
    } else if (argc > 2 && !strcmp(argv[2], "timeout")) {
        return run_fault_case(NULL, 0, 0);
    } else if (argc > 2 && !strcmp(argv[2], "create")) {
        return run_creation_timeout();
    } else if (argc > 3 && !strcmp(argv[2], "lost")) {
        return run_fault_case(argv[3], direct, packed);
    } else if (starfold__tu_begin() == 0) {
        static const starfold__tu_test_t tests[] = {
            { "create: rank, size, nodes, devices", test_create },
            { "links measured alike on every rank; rank and cluster topologies", test_links_and_topologies },
            { "two groups, StarPU-MPI shared", test_two_groups },
            { "one rank's bad arguments fail every rank", test_collective_errors },
            { "output parameters untouched on failure", test_out_params },
            { "all-reduce across ranks: every op x dtype", test_all_reduce_ops },
            { "all-reduce across ranks: 20 steps, inputs changed; in place", test_all_reduce_steps },
            { "all-reduce across ranks: every lowering, and ranks that disagree", test_all_reduce_lowerings },
            { "persistent all-reduce: init once, start every step", test_persistent },
            { "one device per rank: MPI straight from the inputs into the outputs", test_direct },
            { "one device, a vector per tensor: packed into one MPI task per dtype", test_packed },
            { "several devices: MPI into device 0's outputs, copies to the others", test_relay },
            { "all-reduce across ranks: mismatches fail every rank", test_all_reduce_mismatch },
            { "all-reduce across ranks: a late rank", test_all_reduce_late_rank },
            { "all-gather across ranks: parts of any length, mismatches", test_all_gather },
            { "broadcast across ranks: every replica gets the root's tensors; roots that differ", test_broadcast },
            { "barrier: no rank leaves before the last arrives; a mismatch fails every rank", test_barrier },
            { "asynchronous all-reduces: several in flight, waited in any order; mismatches", test_all_reduce_async },
            { "MultiWorkerMirroredStrategy: run, all_reduce, reduce_to, batch_reduce_to", test_mwms },
            { "MultiWorkerMirroredStrategy: bytes_per_pack, implementation, timeout", test_mwms_options },
            { "MultiWorkerMirroredStrategy: promote_integer_mean; batches that differ late", test_mwms_promote },
            { "MultiWorkerMirroredStrategy: gather, all_gather, IndexedSlices", test_mwms_gather },
            { "MultiWorkerMirroredStrategy: variables updated across processes", test_mwms_variables },
            { "MultiWorkerMirroredStrategy: a non-distributed value, SUM refused on every process", test_mwms_non_distributed },
            { "MultiWorkerMirroredStrategy, one device per process: variables", test_mwms_one_device_variables },
            { "MultiWorkerMirroredStrategy, one device per process: a value on the host", test_mwms_one_device_host_value },
        };
        if (starfold__tu_add("process groups (starfold/mpi.h)", NULL, NULL, tests, SF_TU_COUNT(tests), NULL) != 0) {
            CU_cleanup_registry();
            failed = 1;
        } else {
            failed = (int)starfold__tu_run_verbose(world_rank == 0);
            if (failed) fprintf(stderr, "test_group: rank %d: %d failures\n", world_rank, failed);
        }
        starfold_context_destroy(ctx);
    } else {
        failed = 1;
    }
    int total = 0;
    MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("test_group: %d ranks, ranks_per_node %d: %d failures over all ranks\n", world_size, ranks_per_node, total);
    MPI_Finalize();
    return total ? 1 : 0;
}
