/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The packed plan of the "mpi" lowering: one device on this rank, tensors that are not one run of a
 * vector (each its own vector, as a StarPU application registers its gradients, or views out of
 * order). One StarPU task per dtype takes every input and output handle of that dtype as its
 * buffers, packs the inputs into the group's staging buffer, calls MPI's all-reduce out of place into
 * the second half, and unpacks the results into the outputs: Horovod's fusion buffer, inside one
 * StarPU task, instead of a graph of copies into a leader vector and back out (a task per tensor and
 * way).
 *
 *     in a   in b   in c            stage [a b c]                    result [a b c]
 *       \      |      /   memcpy  --------------> MPI_Iallreduce --> ---------------  memcpy  out a, out b, out c
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
#include "exec/group.h"
#include "exec/group_plan.h"

/* One tensor of a dtype: its input and output as (buffer index, first element). */
typedef struct pack_tensor {
    size_t count;
    unsigned in_buf, out_buf;
    size_t in_offset, out_offset;
} pack_tensor_t;

/* One dtype's task: its distinct handles and their modes, its tensors in the caller's order. */
typedef struct pack_dtype {
    size_t nbuf, nt, total;
    starpu_data_handle_t *handles;
    enum starpu_data_access_mode *modes;
    unsigned *writes;          /* [nbuf] tensors writing the handle */
    pack_tensor_t *tensors;
    starfold__mpi_task_arg_t mpi;  /* count = total; the status pointer set by each run */
    starfold_group_t group;    /* the staging buffer, read when the task runs */
} pack_dtype_t;

typedef struct starfold__pack {
    pack_dtype_t d[STARFOLD_DTYPE_COUNT];
} starfold__pack_t;

/* ------------------------------------------------------------------------------------------------
 * The layout, made once per plan
 */

/* Handles to buffer indices: open addressing on the pointer, capacity a power of two >= 2 x entries. */
typedef struct handle_map {
    starpu_data_handle_t *key;
    unsigned *value;
    size_t mask;
} handle_map_t;

static int map_init(handle_map_t *m, size_t entries)
{
    size_t cap = 16;
    while (cap < 2 * entries) cap <<= 1;
    m->key = calloc(cap, sizeof *m->key);
    m->value = calloc(cap, sizeof *m->value);
    m->mask = cap - 1;
    return m->key && m->value ? 0 : -1;
}

static void map_free(handle_map_t *m)
{
    free(m->key);
    free(m->value);
}

/* The buffer index of @h in @d, listing it (mode none yet) when new. */
static unsigned buffer_of(pack_dtype_t *d, handle_map_t *m, starpu_data_handle_t h)
{
    size_t i = ((uintptr_t)h >> 4) * 0x9E3779B97F4A7C15ull & m->mask;
    while (m->key[i] && m->key[i] != h) i = (i + 1) & m->mask;
    if (m->key[i]) return m->value[i];
    m->key[i] = h;
    m->value[i] = (unsigned)d->nbuf;
    d->handles[d->nbuf] = h;
    d->modes[d->nbuf] = STARPU_NONE;
    d->writes[d->nbuf] = 0;
    return (unsigned)d->nbuf++;
}

/* Every handle's mode: R, RW, or W when it is one tensor's output covering the whole vector. */
static void settle_modes(pack_dtype_t *d)
{
    for (size_t b = 0; b < d->nbuf; b++) {
        if (!(d->modes[b] & STARPU_W)) continue;
        d->modes[b] = d->modes[b] & STARPU_R ? STARPU_RW : STARPU_W;
    }
    for (size_t k = 0; k < d->nt; k++) {
        const pack_tensor_t *t = &d->tensors[k];
        const unsigned b = t->out_buf;
        if (d->modes[b] == STARPU_W && (d->writes[b] != 1 || t->out_offset != 0 || t->count != starpu_vector_get_nx(d->handles[b])))
            d->modes[b] = STARPU_RW;
    }
}

static void pack_free(starfold__pack_t *pk)
{
    if (!pk) return;
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) {
        free(pk->d[dt].handles);
        free(pk->d[dt].modes);
        free(pk->d[dt].writes);
        free(pk->d[dt].tensors);
    }
    free(pk);
}

/* Grows the group's staging buffer to @bytes (input then result, each @bytes): no task is in flight. */
static starfold_status_t stage_reserve(starfold_group_t g, size_t bytes)
{
    if (g->stage_bytes >= bytes) return STARFOLD_OK;
    void *p = malloc(2 * bytes);
    if (!p) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: cannot allocate a staging "
                                   "buffer of 2 x %zu bytes", bytes);
    free(g->stage);
    g->stage = p;
    g->stage_bytes = bytes;
    return STARFOLD_OK;
}

starfold_status_t starfold__group_pack_make(starfold_group_t g, starfold__plan_t *p)
{
    starfold__pack_t *pk = calloc(1, sizeof *pk);
    if (!pk) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory");
    size_t per[STARFOLD_DTYPE_COUNT] = { 0 }, bytes = 0;
    for (size_t t = 0; t < p->nt; t++) per[p->tensors[t].dtype]++;
    handle_map_t m = { 0 };
    starfold_status_t st = STARFOLD_OK;
    for (int dt = 0; st == STARFOLD_OK && dt < STARFOLD_DTYPE_COUNT; dt++) {
        if (!per[dt]) continue;
        pack_dtype_t *d = &pk->d[dt];
        d->handles = malloc(2 * per[dt] * sizeof *d->handles);
        d->modes = malloc(2 * per[dt] * sizeof *d->modes);
        d->writes = malloc(2 * per[dt] * sizeof *d->writes);
        d->tensors = malloc(per[dt] * sizeof *d->tensors);
        if (!d->handles || !d->modes || !d->writes || !d->tensors || map_init(&m, 2 * per[dt]) != 0) {
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory");
            break;
        }
        for (size_t t = 0; t < p->nt; t++) {
            if ((int)p->tensors[t].dtype != dt || !p->tensors[t].count) continue;
            const starfold_view_t in = p->inputs[t], out = p->outputs[t];
            pack_tensor_t *k = &d->tensors[d->nt++];
            *k = (pack_tensor_t){ p->tensors[t].count, buffer_of(d, &m, in.handle), 0, in.offset, out.offset };
            k->out_buf = buffer_of(d, &m, out.handle);
            d->modes[k->in_buf] |= STARPU_R;
            d->modes[k->out_buf] |= STARPU_W;
            d->writes[k->out_buf]++;
            d->total += k->count;
        }
        map_free(&m);
        memset(&m, 0, sizeof m);
        settle_modes(d);
        d->group = g;
        d->mpi = (starfold__mpi_task_arg_t){ g->data_comm, g->timeout_seconds, (starfold_dtype_t)dt, p->op, d->total,
                                             p->op == STARFOLD_OP_MEAN ? g->total_devices : 1, NULL, 0, 0 };
        const size_t b = d->total * starfold_dtype_size((starfold_dtype_t)dt);
        if (b > bytes) bytes = b;
    }
    map_free(&m);
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

static void pack_allreduce_cpu(void *buffers[], void *cl_arg)
{
    const pack_dtype_t *d = cl_arg;
    const size_t es = starfold_dtype_size(d->mpi.dtype);
    char *stage = d->group->stage, *result = stage + d->group->stage_bytes;
    size_t at = 0;
    for (size_t k = 0; k < d->nt; k++) {
        const pack_tensor_t *t = &d->tensors[k];
        memcpy(stage + at * es, (const char *)STARPU_VECTOR_GET_PTR(buffers[t->in_buf]) + t->in_offset * es, t->count * es);
        at += t->count;
    }
    if (starfold__group_mpi_allreduce(&d->mpi, stage, result) != 0) return; /* the outputs stay as they were */
    at = 0;
    for (size_t k = 0; k < d->nt; k++) {
        const pack_tensor_t *t = &d->tensors[k];
        memcpy((char *)STARPU_VECTOR_GET_PTR(buffers[t->out_buf]) + t->out_offset * es, result + at * es, t->count * es);
        at += t->count;
    }
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
        d->mpi.status = status;
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
