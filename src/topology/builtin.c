/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Built-in topologies: machines described as data, so graphs can be compiled and checked with no GPU.
 * graphs/<name>.dot holds the same tables in the DOT format (tests check that both agree).
 *
 * The DGX-1 hybrid cube-mesh (nvidia-smi numbering), two 4-cliques joined by the matching i <-> i+4:
 *
 *        socket 0                               socket 1
 *     GPU0 ----------- GPU1                  GPU4 ----------- GPU5
 *      | \\         // |                      | \\         // |
 *      |    \\   //    |                      |    \\   //    |
 *      |      \\//     |                      |      \\//     |
 *      |      //\\     |                      |      //\\     |
 *      |    //   \\    |                      |    //   \\    |
 *      | //         \\ |                      | //         \\ |
 *     GPU2 =========== GPU3                  GPU6 =========== GPU7
 *
 *     across the sockets: 0 == 4, 1 == 5, 2 -- 6, 3 -- 7
 *     - | \ /  one NVLink       = \\ //  two NVLinks (V100; on a P100 every pair has one)
 *
 * V100: 6 NVLink lanes per GPU, 25 GB/s each per direction; P100: 4 lanes of 20 GB/s. PCIe switches
 * {0,1} {2,3} hang from socket 0, {4,5} {6,7} from socket 1. The twelve pairs without NVLink all cross
 * the sockets (each socket's four GPUs form a clique), so they get one "inter-socket" link each and
 * the graph is complete: every pair has exactly one link, the fastest path between them that does not
 * relay through a third GPU. Links are stored in (a, b) order.
 */
#include "config.h"

#include "base/common.h"
#include "topology/topology.h"

#include <string.h>

#include <stdio.h>

/* Latencies: NVLink from the published DGX-1 alpha (0.3 us per hop); the PCIe figures are estimates. */
#define SF_NVLINK_LATENCY_US 0.3
#define SF_PCIE_SWITCH_GBPS 12.0        /* same PCIe Gen3 switch: x16 measured */
#define SF_PCIE_SWITCH_LATENCY_US 1.0
#define SF_PCIE_ROOT_GBPS 10.0          /* same socket, through the root complex */
#define SF_PCIE_ROOT_LATENCY_US 1.5
#define SF_INTER_SOCKET_GBPS 6.0        /* across QPI/UPI (NCCL's model) */
#define SF_INTER_SOCKET_LATENCY_US 2.0

starfold_link_t starfold__pcie_link(int a, int b, int same_switch, int same_socket)
{
    starfold_link_t l = { .a = a, .b = b, .lanes = 1 };
    if (same_switch) {
        l.kind = STARFOLD_LINK_PCIE;
        l.bandwidth_GBps = SF_PCIE_SWITCH_GBPS;
        l.latency_us = SF_PCIE_SWITCH_LATENCY_US;
    } else if (same_socket) {
        l.kind = STARFOLD_LINK_PCIE;
        l.bandwidth_GBps = SF_PCIE_ROOT_GBPS;
        l.latency_us = SF_PCIE_ROOT_LATENCY_US;
    } else {
        l.kind = STARFOLD_LINK_INTER_SOCKET;
        l.bandwidth_GBps = SF_INTER_SOCKET_GBPS;
        l.latency_us = SF_INTER_SOCKET_LATENCY_US;
    }
    return l;
}

/* Lanes of NVLink between DGX-1 GPUs a < b on a V100 (0: none). */
static int dgx1_lanes(int a, int b)
{
    static const struct { int a, b, lanes; } nvlink[] = {
        { 0, 1, 1 }, { 0, 2, 1 }, { 0, 3, 2 }, { 0, 4, 2 }, { 1, 2, 2 }, { 1, 3, 1 }, { 1, 5, 2 }, { 2, 3, 2 },
        { 2, 6, 1 }, { 3, 7, 1 }, { 4, 5, 1 }, { 4, 6, 1 }, { 4, 7, 2 }, { 5, 6, 2 }, { 5, 7, 1 }, { 6, 7, 2 },
    };
    for (size_t i = 0; i < sizeof nvlink / sizeof nvlink[0]; i++)
        if (nvlink[i].a == a && nvlink[i].b == b) return nvlink[i].lanes;
    return 0;
}

/*
 * @lane_GBps: bandwidth of one NVLink lane; @max_lanes: 2 on V100, 1 on P100 (doubled pairs single).
 */
static starfold_status_t build_dgx1(const char *name, double lane_GBps, int max_lanes, starfold_topology_t *out)
{
    starfold_topology_t t = NULL;
    starfold_status_t st;
    SF_CHECK_GOTO(starfold_topology_create(name, 8, &t), st, fail);
    for (int d = 0; d < 8; d++) {
        char label[16];
        snprintf(label, sizeof label, "gpu%d", d);
        SF_CHECK_GOTO(starfold_topology_set_device(t, d, label, STARFOLD_DEVICE_GPU, d / 4), st, fail);
    }
    for (int a = 0; a < 8; a++)
        for (int b = a + 1; b < 8; b++) {
            int lanes = dgx1_lanes(a, b);
            if (lanes > max_lanes) lanes = max_lanes;
            if (lanes > 0) {
                SF_CHECK_GOTO(starfold__topology_add(t, a, b, STARFOLD_LINK_NVLINK, lanes, lanes * lane_GBps,
                                              SF_NVLINK_LATENCY_US), st, fail);
            } else {
                starfold_link_t l = starfold__pcie_link(a, b, a / 2 == b / 2, a / 4 == b / 4);
                SF_CHECK_GOTO(starfold_topology_add_link(t, &l), st, fail);
            }
        }
    *out = t;
    return STARFOLD_OK;

fail:
    starfold_topology_destroy(t);
    return st;
}

/*
 * The DGX-1 drawn as the hybrid cube-mesh it is: its two fully connected quads (one per CPU socket)
 * are the front and back faces of a cube, each GPU linked to the one behind it (i -- i+4). The back
 * face is set off to the right far enough that no GPU sits on another's link.
 *
 *                     4 -------- 5
 *        0 -------- 1 |          |       front face 0 1 2 3 (socket 0),
 *        |  \    /  | |  \    /  |       back face 4 5 6 7 (socket 1),
 *        |    \/    | 7 -------- 6       diagonals: the faces' crossed links
 *        3 -------- 2
 */
int starfold__builtin_position(const char *topology_name, int num_devices, int device, double *x, double *y)
{
    static const double xy[8][2] = { { 0, 3 }, { 3, 3 }, { 3, 0 }, { 0, 0 }, { 4.2, 4.6 }, { 7.2, 4.6 }, { 7.2, 1.6 }, { 4.2, 1.6 } };
    if (!topology_name || strncmp(topology_name, "dgx1", 4) != 0 || num_devices != 8 || device < 0 || device >= 8)
        return 0;
    *x = 1.1 * xy[device][0];
    *y = 1.1 * xy[device][1];
    return 1;
}

static starfold_status_t build_dgx1_v100(starfold_topology_t *out) { return build_dgx1("dgx1-v100", 25.0, 2, out); }
static starfold_status_t build_dgx1_p100(starfold_topology_t *out) { return build_dgx1("dgx1-p100", 20.0, 1, out); }

/*
 * Four GPUs on one socket behind two PCIe switches:
 *
 *            root complex (socket 0)
 *             /                  \
 *       switch A               switch B
 *       /      \               /      \
 *    GPU0      GPU1         GPU2      GPU3
 *
 * 0-1 and 2-3 through their switch (12 GB/s), the other pairs through the root complex (10 GB/s).
 */
static starfold_status_t build_pcie4(starfold_topology_t *out)
{
    starfold_topology_t t = NULL;
    starfold_status_t st;
    SF_CHECK_GOTO(starfold_topology_create("pcie4", 4, &t), st, fail);
    for (int d = 0; d < 4; d++) {
        char label[16];
        snprintf(label, sizeof label, "gpu%d", d);
        SF_CHECK_GOTO(starfold_topology_set_device(t, d, label, STARFOLD_DEVICE_GPU, 0), st, fail);
    }
    for (int a = 0; a < 4; a++)
        for (int b = a + 1; b < 4; b++) {
            starfold_link_t l = starfold__pcie_link(a, b, a / 2 == b / 2, 1);
            SF_CHECK_GOTO(starfold_topology_add_link(t, &l), st, fail);
        }
    *out = t;
    return STARFOLD_OK;

fail:
    starfold_topology_destroy(t);
    return st;
}

/*
 * A complete graph of @n devices named <prefix><i>, every pair one "host" link: devices whose copies
 * go through (or live in) main memory. Socket unknown (-1): the model names no machine.
 */
static starfold_status_t build_flat(const char *name, int n, const char *prefix, starfold_device_kind_t kind,
                                    double GBps, double latency_us, starfold_topology_t *out)
{
    starfold_topology_t t = NULL;
    starfold_status_t st;
    SF_CHECK_GOTO(starfold_topology_create(name, n, &t), st, fail);
    for (int d = 0; d < n; d++) {
        char label[32];
        snprintf(label, sizeof label, "%s%d", prefix, d);
        SF_CHECK_GOTO(starfold_topology_set_device(t, d, label, kind, -1), st, fail);
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            SF_CHECK_GOTO(starfold__topology_add(t, a, b, STARFOLD_LINK_HOST, 1, GBps, latency_us), st, fail);
    *out = t;
    return STARFOLD_OK;

fail:
    starfold_topology_destroy(t);
    return st;
}

/* The StarPU OpenCL test rig: 8 discrete-memory devices on the CPU, every copy staged through RAM. */
static starfold_status_t build_emulated(starfold_topology_t *out)
{
    return build_flat("emulated", 8, "opencl", STARFOLD_DEVICE_GPU, 5.0, 10.0, out);
}

starfold_status_t starfold__topology_host(const char *name, int n, starfold_topology_t *topology)
{
    return build_flat(name, n, "cpu", STARFOLD_DEVICE_CPU, 10.0, 1.0, topology);
}

static starfold_status_t build_host(starfold_topology_t *out) { return starfold__topology_host("host", 8, out); }

/* The registry: names here and in builtin_names[] in the same order. */
static const struct {
    const char *name;
    starfold_status_t (*build)(starfold_topology_t *out);
} builtins[] = {
    { "dgx1-v100", build_dgx1_v100 },
    { "dgx1-p100", build_dgx1_p100 },
    { "pcie4", build_pcie4 },
    { "emulated", build_emulated },
    { "host", build_host },
};

static const char *const builtin_names[] = { "dgx1-v100", "dgx1-p100", "pcie4", "emulated", "host", NULL };

_Static_assert(sizeof builtins / sizeof builtins[0] + 1 == sizeof builtin_names / sizeof builtin_names[0],
               "builtin_names[] must list every built-in topology");

STARFOLD_API const char *const *starfold_topology_builtin_names(void) { return builtin_names; }

STARFOLD_API starfold_status_t starfold_topology_builtin(const char *name, starfold_topology_t *topology)
{
    if (!name || !topology)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_builtin: NULL %s",
                        !name ? "name" : "topology");
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (starfold__streq_nocase(name, builtins[i].name)) return builtins[i].build(topology);
    return starfold__error(STARFOLD_ERR_NOT_FOUND,
                    "unknown built-in topology '%s' (known: dgx1-v100, dgx1-p100, pcie4, emulated, host)", name);
}
