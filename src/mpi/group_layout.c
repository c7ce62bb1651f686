/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * How an all-reduce's MPI step reaches the caller's views (the "mpi" lowering; a graph lowering
 * always goes through the leaders): decided from the layout of the views alone, the same on every
 * rank that passes the same kind of views.
 *
 *   direct   one device, each dtype's inputs one run of a vector and its outputs one run: MPI's
 *            all-reduce from the inputs into the outputs (group_mpi_task.c)
 *   packed   one device otherwise, or several in host memory whose tensors are not buckets or who
 *            share one worker: one task per dtype over every handle (group_pack.c)
 *   relay    several devices, device 0's outputs of each dtype one run: the local reduce into a
 *            leader, MPI from it into device 0's outputs, copies to the other devices
 *   leaders  otherwise: the local reduce into a leader, MPI in place, copies to every device
 *
 * The views an MPI task touches itself (direct, packed, relay's device 0 outputs) are checked here,
 * before the agreement: the graphs check theirs when they are submitted, after MPI has run.
 */
#include "config.h"

#include <string.h>

#include "base/common.h"
#include "mpi/group.h"
#include "mpi/group_plan.h"
#include "exec/vectors.h"

/*
 * A view that an MPI task reads or writes itself (the direct and relay plans' runs, the packed plan's
 * views; the graphs check their own): a vector of the tensor's element size that holds its elements.
 */
static starfold_status_t check_task_view(const char *fn, const char *what, size_t t, starfold_view_t v,
                                         const starfold_tensor_desc_t *d)
{
    if (!d->count) return STARFOLD_OK;
    if (!v.handle) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s of tensor %zu: NULL handle", fn, what, t);
    if (!starfold__is_vector(v.handle))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s of tensor %zu: not a StarPU vector", fn, what, t);
    const size_t elem = starpu_vector_get_elemsize(v.handle), nx = starpu_vector_get_nx(v.handle);
    if (elem != starfold_dtype_size(d->dtype))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s of tensor %zu: vector of %zu-byte elements, the "
                               "tensor is %s", fn, what, t, elem, starfold_dtype_name(d->dtype));
    if (v.offset > nx || d->count > nx - v.offset)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s of tensor %zu: elements [%zu, %zu + %zu) lie "
                               "outside its vector of %zu", fn, what, t, v.offset, v.offset, d->count, nx);
    return STARFOLD_OK;
}

/* The views of device @dev (its inputs when @inputs, else its outputs), each checked. */
static starfold_status_t check_task_views(const char *fn, const starfold__plan_t *p, int dev, int inputs)
{
    const starfold_view_t *v = (inputs ? p->inputs : p->outputs) + (size_t)dev * p->nt;
    starfold_status_t st = STARFOLD_OK;
    for (size_t t = 0; st == STARFOLD_OK && t < p->nt; t++)
        st = check_task_view(fn, inputs ? "the input" : "the output", t, v[t], &p->tensors[t]);
    return st;
}

/*
 * Whether device @dev's views (inputs when @inputs, else outputs) of each dtype are one run of one
 * vector, tensor after tensor; if so and @h, @first and @count [STARFOLD_DTYPE_COUNT] are given, each
 * dtype's run there.
 */
static int run_of(const starfold__plan_t *p, int dev, int inputs, starpu_data_handle_t *h, size_t *first, size_t *count)
{
    const starfold_view_t *v = (inputs ? p->inputs : p->outputs) + (size_t)dev * p->nt;
    starpu_data_handle_t hh[STARFOLD_DTYPE_COUNT] = { 0 };
    size_t ff[STARFOLD_DTYPE_COUNT] = { 0 }, cc[STARFOLD_DTYPE_COUNT] = { 0 };
    for (size_t t = 0; t < p->nt; t++) {
        const int dt = p->tensors[t].dtype;
        if (!v[t].handle) return 0;
        if (!hh[dt]) hh[dt] = v[t].handle, ff[dt] = v[t].offset;
        else if (v[t].handle != hh[dt] || v[t].offset != ff[dt] + cc[dt]) return 0;
        cc[dt] += p->tensors[t].count;
    }
    if (h) memcpy(h, hh, sizeof hh), memcpy(first, ff, sizeof ff), memcpy(count, cc, sizeof cc);
    return 1;
}

/*
 * Whether @p can go direct (group_plan.h, starfold__runs_t): one device, the MPI lowering, and per
 * dtype every input one after another in one vector and every output likewise (in place only at
 * the same place: a task cannot read and write one handle as two buffers). Fills p->runs when it can.
 */
static int direct_layout(starfold_group_t g, starfold__plan_t *p)
{
    if (p->lowering != SF_LOWER_MPI || starfold_context_num_devices(g->ctx) != 1) return 0;
    starfold__runs_t d;
    memset(&d, 0, sizeof d);
    if (!run_of(p, 0, 1, d.in, d.in_offset, d.count) || !run_of(p, 0, 0, d.out, d.out_offset, d.count)) return 0;
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++)
        if (d.count[dt] && d.in[dt] == d.out[dt] && d.in_offset[dt] != d.out_offset[dt]) return 0;
    p->runs = d;
    return 1;
}

/* Whether the devices run on one StarPU worker between them: then no two tasks of a graph run side by side. */
static int one_worker(starfold_context_t ctx, int n)
{
    for (int d = 1; d < n; d++)
        if (starfold_context_device_worker(ctx, d) != starfold_context_device_worker(ctx, 0)) return 0;
    return 1;
}

/*
 * Whether @p packs (group_pack.c; the MPI lowering, not direct): with one device, always (the
 * leaders' graphs would copy the same bytes in and out with a task per tensor each way). With
 * several, when they all use host memory (the packed task reads and writes them there, where a
 * device of its own memory would move every replica across its link instead of one leader), unless
 * the tensors are buckets (every device's inputs and outputs of a dtype one run of a vector each)
 * and the devices have workers of their own: then the graphs, whose one-pass tasks take a run at
 * once and spread over the workers, and the relay. On 2 cores, 2 ranks x 2 devices on one worker
 * each (us; MPI_Allreduce of the same bytes beside):
 *
 *                          graphs (relay or leaders)   packed               MPI_Allreduce
 *   a vector per tensor    ResNet-50 251-292 k         115-131 k            96-120 k
 *                          1,000 x 4 KiB 19-28 k       14-16 k              1.5 k
 *   buckets                ResNet-50 193-200 k         128-130 k            104-123 k
 *                          64 MiB 124-128 k            84-86 k              71-81 k
 */
static int pack_layout(starfold_group_t g, const starfold__plan_t *p)
{
    const int n = starfold_context_num_devices(g->ctx);
    if (p->lowering != SF_LOWER_MPI) return 0;
    if (n == 1) return 1;
    if (g->test_no_pack) return 0;
    int buckets = 1;
    for (int d = 0; d < n; d++) {
        if (starfold_context_device_node(g->ctx, d) != STARPU_MAIN_RAM) return 0;
        buckets = buckets && run_of(p, d, 1, NULL, NULL, NULL) && run_of(p, d, 0, NULL, NULL, NULL);
    }
    return !buckets || one_worker(g->ctx, n);
}

/*
 * Whether @p can relay (the file's header): several devices, the MPI lowering, and per dtype device
 * 0's outputs one after another in one vector. Sets the runs' outputs there (their inputs are the
 * leaders, made later). The vector may hold other views too (inputs, other devices' outputs): the
 * MPI task takes the whole handle, which StarPU orders after the local reduce's tasks on it and
 * before the broadcast's.
 */
static int relay_layout(starfold_group_t g, starfold__plan_t *p)
{
    if (p->lowering != SF_LOWER_MPI || starfold_context_num_devices(g->ctx) < 2) return 0;
    starfold__runs_t d;
    memset(&d, 0, sizeof d);
    if (!run_of(p, 0, 0, d.out, d.out_offset, d.count)) return 0;
    p->runs = d;
    return 1;
}

starfold_status_t starfold__group_layout(const char *fn, starfold_group_t g, starfold__plan_t *p, int *packed)
{
    starfold_status_t st = STARFOLD_OK;
    *packed = 0;
    if ((p->direct = direct_layout(g, p))) {
        st = check_task_views(fn, p, 0, 1);
        return st == STARFOLD_OK ? check_task_views(fn, p, 0, 0) : st;
    }
    if ((*packed = pack_layout(g, p))) {
        for (int d = 0; st == STARFOLD_OK && d < starfold_context_num_devices(g->ctx); d++) {
            st = check_task_views(fn, p, d, 1);
            if (st == STARFOLD_OK) st = check_task_views(fn, p, d, 0);
        }
        return st;
    }
    if ((p->relay = relay_layout(g, p))) st = check_task_views(fn, p, 0, 0);
    return st;
}
