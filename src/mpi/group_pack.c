/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The packed plan of the "mpi" lowering (chosen by group_layout.c): one device on this rank with
 * tensors that are not one run of a vector (each its own vector, as a StarPU application registers
 * its gradients, or views out of order), or several devices in host memory whose tensors are not
 * buckets. One StarPU task per dtype takes every input and output handle of that dtype as its
 * buffers, reduces the devices' inputs into the group's staging buffer, calls MPI's all-reduce out of
 * place into its second half, and copies the result to every device's outputs: Horovod's fusion
 * buffer, inside one StarPU task, instead of graphs of copies and reductions into a leader vector and
 * back out (tasks per tensor and way). The two steps around MPI are the executor's CPU kernels
 * (kernels_cpu.c: blocked, one pass, streaming stores), given the staging buffer as two more buffers.
 *
 *     dev 0: a b c ... \                                                               / dev 0: a b c ...
 *                       >-- reduce --> stage [a b c] --MPI_Iallreduce--> result [a b c] -- copy -->
 *     dev 1: a b c ... /                                                               \ dev 1: a b c ...
 *
 * Buffers. A handle is listed once per task (R if only read, RW if read and written, W only when one
 * tensor writes the whole vector), so several views of one vector and in-place views are allowed; the
 * group's token comes last (STARPU_RW), ordering the group's MPI tasks as they were submitted.
 *
 * Ownership. The layout (handles, modes, spans) is the plan's, the staging buffer the group's (every
 * MPI task of a group runs after the previous one: one buffer serves them all, grown before a call
 * while none is in flight, freed with the group). The outputs are written only after MPI's
 * all-reduce completed: a timeout or a failure leaves them as they were.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "mpi/group.h"
#include "mpi/group_plan.h"
#include "exec/kernels.h"
#include "exec/handle_table.h"

/*
 * One dtype's task: its distinct handles and their modes, and the two kernels it runs around MPI's
 * all-reduce, as the executor's CPU kernels take them (kernels.h), their spans naming the task's
 * buffers and, past them, the staging buffer (STAGE = nbuf) and its result half (RESULT = nbuf + 1):
 *
 *   pack    REDUCE, a segment per tensor:  in(dev 0) op in(dev 1) ...  -> STAGE at the tensor's place
 *   unpack  REDUCE, a segment per tensor:  RESULT at the tensor's place -> out(dev 0), out(dev 1), ...
 */
typedef struct pack_dtype {
    size_t nbuf, nt, total;
    starpu_data_handle_t *handles;
    enum starpu_data_access_mode *modes;
    unsigned *writes;          /* [nbuf] outputs written in the handle */
    starfold__kernel_args_t pack, unpack;
    int cancelled;             /* never set: the kernels' flag */
    starfold__mpi_task_arg_t mpi;  /* count = total; the status pointer set by each run */
    char *stage;               /* the group's staging buffer as it is when a run submits the task (the */
    size_t stage_bytes;        /* task never reads the group: a broken group may be gone by then) */
    size_t ncalls;             /* the plan's cuts (group_cuts.c), as segments: call c covers segments */
    size_t *call_end;          /* call_end[c - 1] .. call_end[c] - 1 */
    unsigned char *direct;     /* [ncalls] 1: one tensor on the one device, its MPI call from its own
                                * input into its own output, not through the staging buffer */
} pack_dtype_t;

typedef struct starfold__pack {
    pack_dtype_t d[STARFOLD_DTYPE_COUNT];
} starfold__pack_t;

/* ------------------------------------------------------------------------------------------------
 * The layout, made once per plan
 */

/* The buffer index of @h in @d (the table numbers handles as @d lists them), listing it (mode none
 * yet) when new; (size_t)-1 when out of memory. */
static size_t buffer_of(pack_dtype_t *d, starfold__handle_table_t *m, starpu_data_handle_t h)
{
    const size_t k = starfold__handle_number(m, h);
    if (k == d->nbuf) {
        d->handles[d->nbuf] = h;
        d->modes[d->nbuf] = STARPU_NONE;
        d->writes[d->nbuf++] = 0;
    }
    return k;
}

/* Every handle's mode: R, RW, or W when it is one output covering the whole vector. */
static void settle_modes(pack_dtype_t *d)
{
    for (size_t b = 0; b < d->nbuf; b++)
        if (d->modes[b] & STARPU_W) d->modes[b] = d->modes[b] & STARPU_R ? STARPU_RW : STARPU_W;
    const starfold__kernel_args_t *u = &d->unpack;
    for (size_t k = 0; k < u->nseg; k++) {
        const starfold__kspan_t *seg = starfold__kernel_segment(u, k);
        for (size_t j = 1; j <= u->ndst; j++) {
            const unsigned b = seg[j].buf;
            if (d->modes[b] == STARPU_W &&
                (d->writes[b] != 1 || seg[j].offset != 0 || seg[j].count != starpu_vector_get_nx(d->handles[b])))
                d->modes[b] = STARPU_RW;
        }
    }
}

static void pack_free(starfold__pack_t *pk)
{
    if (!pk) return;
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) {
        free(pk->d[dt].handles);
        free(pk->d[dt].modes);
        free(pk->d[dt].writes);
        free(pk->d[dt].pack.spans);
        free(pk->d[dt].unpack.spans);
        free(pk->d[dt].call_end);
        free(pk->d[dt].direct);
    }
    free(pk);
}

/* A REDUCE kernel of @nseg segments of @nsrc sources and @ndst destinations, spans to be filled. */
static int kernel_init(starfold__kernel_args_t *a, pack_dtype_t *d, starfold_dtype_t dt, starfold_op_t op, size_t nseg,
                       size_t nsrc, size_t ndst, int *status)
{
    memset(a, 0, sizeof *a);
    a->cancelled = &d->cancelled;
    a->status = status;
    a->kind = SF_KERNEL_REDUCE;
    a->dtype = a->dst_dtype = (int)dt;
    a->op = (int)op;
    a->divisor = 1;
    a->elemsize = a->dst_elemsize = starfold_dtype_size(dt);
    a->nseg = nseg, a->nsrc = nsrc, a->ndst = ndst;
    a->spans = malloc(sizeof *a->spans * (nseg ? nseg : 1) * (nsrc + ndst));
    return a->spans ? 0 : -1;
}

/* Lists dtype @dt's tensors (their inputs and outputs on @ndev devices) in @d's kernels. */
static starfold_status_t layout_dtype(const starfold__plan_t *p, int ndev, int dt, size_t nt, pack_dtype_t *d)
{
    const starfold_op_t local = p->op == STARFOLD_OP_MEAN ? STARFOLD_OP_SUM : p->op;
    const size_t most = 2 * nt * (size_t)ndev;
    starfold__handle_table_t m;
    d->handles = malloc(most * sizeof *d->handles);
    d->modes = malloc(most * sizeof *d->modes);
    d->writes = malloc(most * sizeof *d->writes);
    const int table = starfold__handle_table_init(&m);
    if (!d->handles || !d->modes || !d->writes || table != 0 ||
        kernel_init(&d->pack, d, (starfold_dtype_t)dt, local, nt, (size_t)ndev, 1, NULL) != 0 ||
        kernel_init(&d->unpack, d, (starfold_dtype_t)dt, STARFOLD_OP_SUM, nt, 1, (size_t)ndev, NULL) != 0) {
        starfold__handle_table_free(&m);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory");
    }
    size_t seg = 0;
    for (size_t t = 0; t < p->nt; t++) {
        const size_t count = p->tensors[t].count;
        if ((int)p->tensors[t].dtype != dt || !count) continue; /* kernels list no empty span */
        starfold__kspan_t *in = d->pack.spans + seg * (size_t)(ndev + 1), *out = d->unpack.spans + seg * (size_t)(1 + ndev);
        for (int dev = 0; dev < 2 * ndev; dev++) { /* the inputs, then the outputs */
            const int w = dev >= ndev;
            const starfold_view_t v = (w ? p->outputs : p->inputs)[(size_t)(dev % ndev) * p->nt + t];
            const size_t b = buffer_of(d, &m, v.handle);
            if (b == (size_t)-1) {
                starfold__handle_table_free(&m);
                return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory");
            }
            (w ? &out[1 + dev - ndev] : &in[dev])[0] = (starfold__kspan_t){ (unsigned)b, v.offset, count };
            d->modes[b] |= w ? STARPU_W : STARPU_R;
            d->writes[b] += (unsigned)w;
        }
        in[ndev] = (starfold__kspan_t){ 0, d->total, count };  /* STAGE: numbered once nbuf is known */
        out[0] = (starfold__kspan_t){ 0, d->total, count };    /* RESULT */
        d->total += count;
        seg++;
    }
    starfold__handle_table_free(&m);
    d->pack.nseg = d->unpack.nseg = d->nt = seg;
    for (size_t k = 0; k < seg; k++) {
        d->pack.spans[k * (size_t)(ndev + 1) + (size_t)ndev].buf = (unsigned)d->nbuf;
        d->unpack.spans[k * (size_t)(1 + ndev)].buf = (unsigned)d->nbuf + 1;
    }
    settle_modes(d);
    return STARFOLD_OK;
}

/* Grows the group's staging buffer to @bytes (input then result, each @bytes rounded up to a cache
 * line, so that the result half is aligned for every dtype and the kernels' lines): no task is in
 * flight. */
static starfold_status_t stage_reserve(starfold_group_t g, size_t bytes)
{
    bytes = (bytes + 63) & ~(size_t)63;
    if (g->stage_bytes >= bytes) return STARFOLD_OK;
    void *p = NULL;
    if (posix_memalign(&p, 64, 2 * bytes) != 0) p = NULL;
    if (!p) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: cannot allocate a staging "
                                   "buffer of 2 x %zu bytes", bytes);
    free(g->stage);
    g->stage = p;
    g->stage_bytes = bytes;
    return STARFOLD_OK;
}

/* The plan's calls for @d as ranges of its segments (the cuts fall between tensors, and segment k is
 * the dtype's k-th tensor with elements); a call of one tensor on the one device goes direct. */
static starfold_status_t calls_of(pack_dtype_t *d, const size_t *cuts, size_t ncuts, int ndev)
{
    d->call_end = malloc(sizeof *d->call_end * ncuts);
    d->direct = malloc(ncuts);
    if (!d->call_end || !d->direct)
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory");
    size_t seg = 0, at = 0;
    for (size_t c = 0; c < ncuts; c++) {
        const size_t first = seg;
        while (seg < d->nt && at < cuts[c]) at += starfold__kernel_segment(&d->pack, seg++)[0].count;
        d->call_end[c] = seg;
        d->direct[c] = ndev == 1 && seg == first + 1;
    }
    d->ncalls = ncuts;
    return STARFOLD_OK;
}

starfold_status_t starfold__group_pack_make(starfold_group_t g, starfold__plan_t *p)
{
    starfold__pack_t *pk = calloc(1, sizeof *pk);
    if (!pk) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory");
    const int ndev = starfold_context_num_devices(g->ctx);
    size_t per[STARFOLD_DTYPE_COUNT] = { 0 }, bytes = 0;
    for (size_t t = 0; t < p->nt; t++) per[p->tensors[t].dtype]++;
    starfold_status_t st = STARFOLD_OK;
    for (int dt = 0; st == STARFOLD_OK && dt < STARFOLD_DTYPE_COUNT; dt++) {
        if (!per[dt]) continue;
        pack_dtype_t *d = &pk->d[dt];
        st = layout_dtype(p, ndev, dt, per[dt], d);
        if (st == STARFOLD_OK && d->nt) st = calls_of(d, p->cuts[dt], p->ncuts[dt], ndev);
        d->mpi = (starfold__mpi_task_arg_t){ g->data_comm, g->timeout_seconds, (starfold_dtype_t)dt, p->op, d->total,
                                             p->op == STARFOLD_OP_MEAN ? g->total_devices : 1, NULL, 0, 0, p->cuts[dt],
                                             p->ncuts[dt] };
        const size_t b = d->total * starfold_dtype_size((starfold_dtype_t)dt);
        if (b > bytes) bytes = b;
    }
    if (st == STARFOLD_OK) st = stage_reserve(g, bytes);
    if (st != STARFOLD_OK) {
        pack_free(pk);
        return st;
    }
    p->pack = pk;
    return STARFOLD_OK;
}

void starfold__group_pack_free(starfold__plan_t *p)
{
    if (!p->abandoned) pack_free(p->pack); /* abandoned: its task may still read it */
    p->pack = NULL;
}

/* ------------------------------------------------------------------------------------------------
 * The task
 */

/* Segments @s0 .. @s1 - 1 of kernel @k: the same kernel over part of its spans. */
static starfold__kernel_args_t part_of(const starfold__kernel_args_t *k, size_t s0, size_t s1)
{
    starfold__kernel_args_t part = *k;
    part.spans = k->spans + s0 * (k->nsrc + k->ndst);
    part.nseg = s1 - s0;
    return part;
}

/* The element at @offset of span @sp of the task's buffers @all. */
static char *span_at(void **all, const starfold__kspan_t *sp, size_t es)
{
    return (char *)STARPU_VECTOR_GET_PTR(all[sp->buf]) + sp->offset * es;
}

/*
 * The task: the plan's calls in order, each posted as soon as its bytes are ready, so that MPI
 * reduces call c while call c + 1 is packed (the calls posted so far are tested between two packs,
 * which is what moves a non-blocking collective on):
 *
 *     pack 0 | post 0 | pack 1 | post 1 | (direct 2: post from its input) | ... | wait all | unpack
 *
 * then, once every call completed, MEAN's division and the copies out. A direct call reads its
 * tensor's input and writes its output itself, as the direct plan's call does: after a failure that
 * output may be partly written; every other output is written only after all of MPI succeeded.
 */
static void pack_allreduce_cpu(void *buffers[], void *cl_arg)
{
    pack_dtype_t *d = cl_arg;
    void **all = malloc(sizeof *all * (d->nbuf + 2));
    MPI_Request *rq = malloc(sizeof *rq * starfold__group_mpi_requests(&d->mpi));
    if (!all || !rq) {
        free(all);
        free(rq);
        starfold__kernel_fail(&d->pack);
        return;
    }
    memcpy(all, buffers, sizeof *all * d->nbuf);
    struct starpu_vector_interface stage = { .ptr = (uintptr_t)d->stage },
                                   result = { .ptr = (uintptr_t)(d->stage + d->stage_bytes) };
    all[d->nbuf] = &stage;
    all[d->nbuf + 1] = &result;
    const size_t es = d->pack.elemsize, ndev = d->pack.nsrc;
    size_t n = 0;
    /* A failed pack (or an earlier dtype's failed call) posts no more calls: the other ranks then time
     * out and fail, rather than sum this rank's garbage and succeed. */
    int failed = 0;
    for (size_t c = 0; !failed && c < d->ncalls; c++) {
        const size_t s0 = c ? d->call_end[c - 1] : 0, s1 = d->call_end[c];
        const starfold__kspan_t *first = starfold__kernel_segment(&d->pack, s0), *last = starfold__kernel_segment(&d->pack, s1 - 1);
        const size_t lo = first[ndev].offset, count = last[ndev].offset + last[ndev].count - lo; /* in the stage */
        const void *in = (char *)stage.ptr + lo * es;
        void *out = (char *)result.ptr + lo * es;
        if (d->direct[c]) {
            in = span_at(all, &first[0], es);
            out = span_at(all, &starfold__kernel_segment(&d->unpack, s0)[1], es);
        } else {
            const starfold__kernel_args_t part = part_of(&d->pack, s0, s1);
            starfold__kernel_cpu(all, (void *)&part);
        }
        failed = __atomic_load_n(d->mpi.status, __ATOMIC_ACQUIRE) != STARFOLD_OK ||
                 starfold__group_mpi_post(&d->mpi, in, out, count, rq, &n) != 0;
        int ignored = 0;
        if (!failed) MPI_Testall((int)n, rq, &ignored, MPI_STATUSES_IGNORE);
    }
    if (!failed && starfold__group_mpi_wait(&d->mpi, rq, n) == 0) {
        for (size_t c = 0; c < d->ncalls; c++) {
            const size_t s0 = c ? d->call_end[c - 1] : 0, s1 = d->call_end[c];
            const starfold__kspan_t *first = starfold__kernel_segment(&d->pack, s0), *last = starfold__kernel_segment(&d->pack, s1 - 1);
            const size_t lo = first[ndev].offset, count = last[ndev].offset + last[ndev].count - lo;
            char *out = d->direct[c] ? span_at(all, &starfold__kernel_segment(&d->unpack, s0)[1], es)
                                     : (char *)result.ptr + lo * es;
            if (d->mpi.divisor > 1) starfold__group_divide(out, d->mpi.dtype, count, d->mpi.divisor);
            if (d->direct[c]) continue;
            const starfold__kernel_args_t part = part_of(&d->unpack, s0, s1);
            starfold__kernel_cpu(all, (void *)&part);
        }
    }
    free(rq);
    free(all);
}

static struct starpu_codelet pack_allreduce_cl = {
    .where = STARPU_CPU,
    .cpu_funcs = { pack_allreduce_cpu },
    .cpu_funcs_name = { "starfold_pack_allreduce_cpu" },
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .name = "starfold_mpi_allreduce_packed",
};

starfold_status_t starfold__group_pack_submit(starfold_group_t g, starfold__plan_t *p, int *status)
{
    if (!g->token) starpu_variable_data_register(&g->token, STARPU_MAIN_RAM, (uintptr_t)&g->token_value, sizeof(int));
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) {
        pack_dtype_t *d = &p->pack->d[dt];
        if (!d->nt) continue;
        d->mpi.status = d->pack.status = d->unpack.status = status;
        d->stage = g->stage;
        d->stage_bytes = g->stage_bytes;
        d->mpi.timeout_seconds = g->timeout_seconds;
        struct starpu_task *task = starpu_task_create();
        task->cl = &pack_allreduce_cl;
        task->nbuffers = (int)d->nbuf + 1;
        task->dyn_handles = malloc(sizeof(starpu_data_handle_t) * (d->nbuf + 1));
        task->dyn_modes = malloc(sizeof(enum starpu_data_access_mode) * (d->nbuf + 1));
        if (!task->dyn_handles || !task->dyn_modes) {
            starpu_task_destroy(task); /* frees dyn_handles and dyn_modes */
            g->broken = 1;
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory submitting "
                                   "the MPI task; the group is broken");
        }
        memcpy(task->dyn_handles, d->handles, sizeof *d->handles * d->nbuf);
        memcpy(task->dyn_modes, d->modes, sizeof *d->modes * d->nbuf);
        task->dyn_handles[d->nbuf] = g->token;
        task->dyn_modes[d->nbuf] = STARPU_RW;
        task->cl_arg = d;
        task->cl_arg_size = sizeof *d;
        char which[40];
        snprintf(which, sizeof which, " of the %s tensors", starfold_dtype_name((starfold_dtype_t)dt));
        const starfold_status_t st = starfold__group_mpi_task_submit(g, task, "starfold_group_all_reduce", which);
        if (st != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}
