/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold_topology_detect(): the live machine through hwloc 2.x.
 *
 * Accelerators are the OS devices of the CUDA, NVML and RSMI backends and OpenCL devices of type GPU.
 * One GPU seen by several backends (cuda0, nvml0 and opencl0d0 under one PCI device) is one device,
 * named after the preferred backend (CUDA, then NVML/RSMI, then OpenCL). Where hwloc was built without
 * those backends (Debian's is), display-class PCI devices made by NVIDIA or AMD stand in for them.
 * Devices are numbered in PCI bus order, as CUDA_DEVICE_ORDER=PCI_BUS_ID and nvidia-smi do.
 *
 * Links, one per pair, stored in (a, b) order like the built-in tables:
 *  - NVLink where hwloc's "NVLinkBandwidth" distances (MB/s) give the pair a bandwidth, directly or
 *    through an NVSwitch (then the smaller of the two ports); lanes are estimated at 25 GB/s each;
 *  - otherwise from PCIe locality (starfold__pcie_link): same PCIe switch, same package, or across packages.
 * No accelerator: the "host" model sized to the cores, clamped to [2, 8].
 */
#include "config.h"

#include "base/common.h"
#include "topology/topology.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <hwloc.h>

#define SF_NVLINK_LANE_MBPS 25000.0
#define SF_PCI_VENDOR_NVIDIA 0x10de
#define SF_PCI_VENDOR_AMD 0x1002

typedef struct {
    hwloc_obj_t osdev;   /* the preferred backend's OS device; NULL for a bare PCI device */
    hwloc_obj_t pci;     /* the PCI device it sits on; NULL when hwloc gives none */
    int rank;            /* backend preference, lower wins */
} starfold__accel_t;

typedef struct {
    hwloc_topology_t topo;
    int n;
    starfold__accel_t acc[STARFOLD_MAX_DEVICES];
    double nvlink_MBps[STARFOLD_MAX_DEVICES][STARFOLD_MAX_DEVICES];   /* 0: no NVLink */
} starfold__detect_t;

/* Preference of the backend that reported @os; -1 when it is no accelerator. */
static int backend_rank(hwloc_obj_t os)
{
    const char *sub = os->subtype ? os->subtype : "";
    const char *type = hwloc_obj_get_info_by_name(os, "OpenCLDeviceType");
    if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC && !strcmp(sub, "CUDA")) return 0;
    if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU && (!strcmp(sub, "NVML") || !strcmp(sub, "RSMI"))) return 1;
    if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC && !strcmp(sub, "OpenCL") && type && !strcmp(type, "GPU"))
        return 2;
    return -1;
}

static hwloc_obj_t pci_of(hwloc_obj_t obj)
{
    while (obj && obj->type != HWLOC_OBJ_PCI_DEVICE) obj = obj->parent;
    return obj;
}

static int find_pci(const starfold__detect_t *d, hwloc_obj_t pci)
{
    for (int i = 0; pci && i < d->n; i++)
        if (d->acc[i].pci == pci) return i;
    return -1;
}

static starfold_status_t add_accel(starfold__detect_t *d, hwloc_obj_t os, hwloc_obj_t pci, int rank)
{
    int k = find_pci(d, pci);
    if (k >= 0) {
        if (rank < d->acc[k].rank) d->acc[k] = (starfold__accel_t){ os, pci, rank };
        return STARFOLD_OK;
    }
    if (d->n == STARFOLD_MAX_DEVICES)
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "hwloc: more than %d accelerators", STARFOLD_MAX_DEVICES);
    d->acc[d->n++] = (starfold__accel_t){ os, pci, rank };
    return STARFOLD_OK;
}

static int pci_cmp(const void *x, const void *y)
{
    const starfold__accel_t *a = x, *b = y;
    if (!a->pci || !b->pci) return (a->pci == NULL) - (b->pci == NULL);   /* PCI-less last */
    const struct hwloc_pcidev_attr_s *p = &a->pci->attr->pcidev, *q = &b->pci->attr->pcidev;
    unsigned long ka = ((unsigned long)p->domain << 24) | ((unsigned long)p->bus << 16) | (p->dev << 8) | p->func;
    unsigned long kb = ((unsigned long)q->domain << 24) | ((unsigned long)q->bus << 16) | (q->dev << 8) | q->func;
    return (ka > kb) - (ka < kb);
}

static starfold_status_t collect(starfold__detect_t *d)
{
    starfold_status_t st = STARFOLD_OK;
    for (hwloc_obj_t os = hwloc_get_next_osdev(d->topo, NULL); os && st == STARFOLD_OK;
         os = hwloc_get_next_osdev(d->topo, os)) {
        int rank = backend_rank(os);
        if (rank >= 0) st = add_accel(d, os, pci_of(os), rank);
    }
    for (hwloc_obj_t p = hwloc_get_next_pcidev(d->topo, NULL); p && st == STARFOLD_OK;
         p = hwloc_get_next_pcidev(d->topo, p)) {
        const struct hwloc_pcidev_attr_s *a = &p->attr->pcidev;
        int display = (a->class_id >> 8) == 0x03;
        if (display && (a->vendor_id == SF_PCI_VENDOR_NVIDIA || a->vendor_id == SF_PCI_VENDOR_AMD) &&
            find_pci(d, p) < 0)
            st = add_accel(d, NULL, p, 3);
    }
    /* stable enough: at most one entry per PCI device, and PCI-less entries keep hwloc's order among equals */
    qsort(d->acc, (size_t)d->n, sizeof d->acc[0], pci_cmp);
    return st;
}

static int socket_of(hwloc_topology_t topo, const starfold__accel_t *a)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, a->pci ? a->pci : a->osdev);
    while (anc && anc->type != HWLOC_OBJ_PACKAGE) anc = anc->parent;
    return anc ? (int)anc->logical_index : -1;
}

/* Same PCIe switch: the closest common ancestor is a PCI-to-PCI bridge (a switch port). */
static int same_switch(const starfold__accel_t *x, const starfold__accel_t *y)
{
    for (hwloc_obj_t p = x->pci ? x->pci->parent : NULL; p; p = p->parent)
        for (hwloc_obj_t q = y->pci ? y->pci->parent : NULL; q; q = q->parent)
            if (p == q)
                return p->type == HWLOC_OBJ_BRIDGE && p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
    return 0;
}

/* Device index of a distances object (a GPU OS device or its PCI device), -1 for anything else. */
static int device_of(const starfold__detect_t *d, hwloc_obj_t obj)
{
    hwloc_obj_t pci = pci_of(obj);
    for (int i = 0; i < d->n; i++)
        if (d->acc[i].osdev == obj || (pci && d->acc[i].pci == pci)) return i;
    return -1;
}

/* Fills nvlink_MBps from the "NVLinkBandwidth" matrix when hwloc has one. */
static void read_nvlink(starfold__detect_t *d)
{
    unsigned nr = 1;
    struct hwloc_distances_s *dist = NULL;
    if (hwloc_distances_get_by_name(d->topo, "NVLinkBandwidth", &nr, &dist, 0) != 0 || nr == 0 || !dist) return;
    const unsigned nb = dist->nbobjs;
    for (unsigned i = 0; i < nb; i++) {
        int di = device_of(d, dist->objs[i]);
        for (unsigned j = 0; j < nb; j++) {
            int dj = device_of(d, dist->objs[j]);
            double v = (double)dist->values[i * nb + j];
            if (di >= 0 && dj >= 0 && di != dj && v > 0) {
                d->nvlink_MBps[di][dj] = d->nvlink_MBps[dj][di] = v;
            } else if (di >= 0 && dj < 0 && v > 0 && dist->objs[j]->type != HWLOC_OBJ_PACKAGE) {
                /* an NVSwitch: every other GPU on it is reachable at the smaller port bandwidth */
                for (unsigned k = 0; k < nb; k++) {
                    int dk = device_of(d, dist->objs[k]);
                    double w = (double)dist->values[k * nb + j];
                    if (dk >= 0 && dk != di && w > 0 && d->nvlink_MBps[di][dk] == 0)
                        d->nvlink_MBps[di][dk] = d->nvlink_MBps[dk][di] = fmin(v, w);
                }
            }
        }
    }
    hwloc_distances_release(d->topo, dist);
}

static starfold_status_t build(const starfold__detect_t *d, starfold_topology_t *out)
{
    starfold_topology_t t = NULL;
    starfold_status_t st;
    int socket[STARFOLD_MAX_DEVICES];

    char label[64];
    snprintf(label, sizeof label, "detected (%d GPU%s)", d->n, d->n == 1 ? "" : "s");
    SF_CHECK_GOTO(starfold_topology_create(label, d->n, &t), st, fail);
    for (int i = 0; i < d->n; i++) {
        char name[64];
        const hwloc_obj_t os = d->acc[i].osdev, pci = d->acc[i].pci;
        if (os && os->name) snprintf(name, sizeof name, "%s", os->name);
        else if (pci) snprintf(name, sizeof name, "pci%04x:%02x:%02x.%x", pci->attr->pcidev.domain,
                               pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
        else snprintf(name, sizeof name, "gpu%d", i);
        socket[i] = socket_of(d->topo, &d->acc[i]);
        SF_CHECK_GOTO(starfold_topology_set_device(t, i, name, STARFOLD_DEVICE_GPU, socket[i]), st, fail);
    }
    for (int a = 0; a < d->n; a++)
        for (int b = a + 1; b < d->n; b++) {
            const double mbps = d->nvlink_MBps[a][b];
            if (mbps > 0) {
                int lanes = (int)lround(mbps / SF_NVLINK_LANE_MBPS);
                SF_CHECK_GOTO(starfold__topology_add(t, a, b, STARFOLD_LINK_NVLINK, lanes < 1 ? 1 : lanes, mbps / 1000.0, 0.3),
                              st, fail);
            } else {
                const int sw = same_switch(&d->acc[a], &d->acc[b]);
                starfold_link_t l = starfold__pcie_link(a, b, sw, sw || (socket[a] >= 0 && socket[a] == socket[b]));
                SF_CHECK_GOTO(starfold_topology_add_link(t, &l), st, fail);
            }
        }
    *out = t;
    return STARFOLD_OK;

fail:
    starfold_topology_destroy(t);
    return st;
}

static starfold_status_t build_host(hwloc_topology_t topo, starfold_topology_t *out)
{
    int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    if (cores < 1) cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    char name[64];
    snprintf(name, sizeof name, "host (detected, %d cores)", cores);
    return starfold__topology_host(name, cores < 2 ? 2 : cores > 8 ? 8 : cores, out);
}

STARFOLD_API starfold_status_t starfold_topology_detect(starfold_topology_t *topology)
{
    if (!topology) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_detect: NULL topology");
    starfold_status_t st;
    starfold__detect_t *d = calloc(1, sizeof *d);
    if (!d) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory detecting the topology");
    if (hwloc_topology_init(&d->topo) != 0) {
        st = starfold__error(STARFOLD_ERR_RUNTIME, "hwloc: cannot initialise a topology: %s", strerror(errno));
        d->topo = NULL;
        goto done;
    }
    hwloc_topology_set_io_types_filter(d->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(d->topo) != 0) {
        st = starfold__error(STARFOLD_ERR_RUNTIME, "hwloc: cannot discover the machine: %s", strerror(errno));
        goto done;
    }
    SF_CHECK_GOTO(collect(d), st, done);
    if (d->n == 0) {
        st = build_host(d->topo, topology);
        goto done;
    }
    read_nvlink(d);
    st = build(d, topology);

done:
    if (d->topo) hwloc_topology_destroy(d->topo);
    free(d);
    return st;
}
