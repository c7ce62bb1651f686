/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * All-gather across the ranks of a process group (starfold_group_all_gather()): MPI_Allgatherv for
 * StarPU vectors. Every rank gives one part, of any length (0 included); every rank gets the parts
 * one after another in rank order, in a new vector on its device 0.
 *
 *   rank 0: [a0 a1]      rank 1: []      rank 2: [c0 c1 c2]
 *   every rank:  [a0 a1 | c0 c1 c2]                               counts {2, 0, 3}
 *
 *   1. agree   as an all-reduce does (group_agree.c), each rank's count riding along as the payload:
 *              the dtype must be the same everywhere, the counts may differ, and after it every rank
 *              knows every count, so the whole is allocated before anything moves
 *   2. gather  one StarPU task on a CPU worker calls MPI_Iallgatherv (group_mpi_task.c), polled
 *              against timeout_seconds, in the group's MPI order (its token)
 *
 * The TensorFlow layer across processes (MultiWorkerMirroredStrategy's gather, all_gather and
 * IndexedSlices) first gathers its replicas' parts on device 0 with a graph, then calls this.
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "mpi/group.h"
#include "mpi/group_call.h"
#include "mpi/group_plan.h"

/* This rank's verdict on its part: a vector of @dtype holding @count elements from @offset. */
static starfold_status_t check_part(const char *fn, starfold_dtype_t dtype, starfold_view_t in, size_t count)
{
    if ((int)dtype < 0 || (int)dtype >= STARFOLD_DTYPE_COUNT)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d", fn, (int)dtype);
    if (count && !in.handle) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL input of %zu elements", fn, count);
    if (count > (size_t)INT_MAX)
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "%s: %zu elements: MPI counts are ints (at most %d)", fn, count,
                               INT_MAX);
    if (in.handle) {
        if (starpu_data_get_interface_id(in.handle) != STARPU_VECTOR_INTERFACE_ID)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the input is not a StarPU vector", fn);
        if (starpu_vector_get_elemsize(in.handle) != starfold_dtype_size(dtype))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the input's elements are %zu bytes, %s's %zu", fn,
                                   (size_t)starpu_vector_get_elemsize(in.handle), starfold_dtype_name(dtype),
                                   starfold_dtype_size(dtype));
        if (in.offset > starpu_vector_get_nx(in.handle) || count > starpu_vector_get_nx(in.handle) - in.offset)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %zu elements from %zu overrun the input's %zu", fn,
                                   count, in.offset, (size_t)starpu_vector_get_nx(in.handle));
    }
    if (starpu_worker_get_count_by_type(STARPU_CPU_WORKER) <= 0)
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED,
                               "%s: the MPI step runs on a CPU worker and StarPU has none here (set STARPU_NCPU >= 1)", fn);
    return STARFOLD_OK;
}

/* The whole's layout from every rank's count (the same on every rank): refused past MPI's ints. */
static starfold_status_t layout(const char *fn, starfold_group_t g, const int64_t *counts, starfold__mpi_gather_arg_t *a)
{
    size_t total = 0;
    for (int r = 0; r < g->size; r++) {
        a->counts[r] = (int)counts[r];
        a->displs[r] = (int)total;
        total += (size_t)counts[r];
        if (total > (size_t)INT_MAX)
            return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "%s: the ranks' parts add up to more than %d elements "
                                   "(MPI's displacements are ints)", fn, INT_MAX);
    }
    a->total = total;
    return STARFOLD_OK;
}

/*
 * The collective. @match: compared across ranks (1 for a plain gather). @st: this rank's verdict so far (a refusal still takes part, so that every rank
 * fails together). *@out: the whole (NULL when every part is empty), the caller's; @counts: NULL or
 * [size], every rank's count.
 */
static starfold_status_t all_gather(const char *fn, starfold_group_t g, starfold_dtype_t dtype, size_t match,
                                    starfold_view_t in, size_t count, int divisor, starfold_status_t st,
                                    starpu_data_handle_t *out, size_t *counts)
{
    if (st == STARFOLD_OK) st = check_part(fn, dtype, in, count);
    const starfold_tensor_desc_t t = { dtype, match }; /* compared by the agreement, as a tensor's size is */
    const starfold__agree_what_t what = { SF_GROUP_ALL_GATHER, STARFOLD_OP_SUM, 1, &t, SF_LOWER_MPI, (int64_t)count };
    int64_t *all_counts = calloc((size_t)g->size, sizeof *all_counts);
    starfold__mpi_gather_arg_t *a = calloc(1, sizeof *a);
    int *ints = calloc(2 * (size_t)g->size, sizeof *ints);
    if (st == STARFOLD_OK && (!all_counts || !a || !ints)) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    st = starfold__group_agree(fn, g, &what, st, all_counts);
    if (st != STARFOLD_OK) {
        free(all_counts), free(a), free(ints);
        return st;
    }
    *a = (starfold__mpi_gather_arg_t){ g->data_comm, g->timeout_seconds, dtype, g->rank, count > 0, in.offset, 0, divisor,
                                       STARFOLD_OK, ints, ints + g->size };
    /* The same verdict on every rank: layout() sees the same counts everywhere. */
    st = layout(fn, g, all_counts, a);
    starpu_data_handle_t whole = NULL;
    if (st == STARFOLD_OK && a->total) st = starfold_vector_create(g->ctx, 0, dtype, a->total, &whole);
    st = starfold__group_agree_submitted(fn, g, SF_LOWER_MPI, st);
    g->sequence++;
    int abandoned = 0;
    if (st == STARFOLD_OK && whole) st = starfold__group_mpi_gather_submit(g, whole, count ? in.handle : NULL, a);
    if (st == STARFOLD_OK && whole) st = starfold__group_mpi_done(fn, g, &whole, 1, &a->status, "MPI_Allgatherv", &abandoned);
    for (int r = 0; st == STARFOLD_OK && counts && r < g->size; r++) counts[r] = (size_t)all_counts[r];
    free(all_counts);
    if (abandoned) return st; /* the task may still read @a and write @whole: both StarPU's now */
    free(ints);
    free(a);
    if (st != STARFOLD_OK) {
        starfold_vector_destroy(g->ctx, whole);
        return st; /* *out untouched: starfold.h's rule for output parameters */
    }
    *out = whole;
    return st;
}

STARFOLD_API starfold_status_t starfold_group_all_gather(starfold_group_t group, starfold_dtype_t dtype,
                                                         starpu_data_handle_t input, starpu_data_handle_t *output,
                                                         size_t *counts)
{
    static const char fn[] = "starfold_group_all_gather";
    starfold_status_t st = starfold__group_usable(fn, group);
    if (st != STARFOLD_OK) return st;
    if (!output) st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL output", fn);
    if (st == STARFOLD_OK && input && starpu_data_get_interface_id(input) != STARPU_VECTOR_INTERFACE_ID)
        st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the input is not a StarPU vector", fn);
    const size_t count = st == STARFOLD_OK && input ? starpu_vector_get_nx(input) : 0;
    starpu_data_handle_t scratch = NULL;
    return all_gather(fn, group, dtype, 1, (starfold_view_t){ input, 0 }, count, 1, st, output ? output : &scratch, counts);
}

starfold_status_t starfold__group_all_gather_with(starfold_group_t group, starfold_dtype_t dtype, size_t match,
                                                  starfold_view_t input, size_t count, int divisor, double timeout_seconds, starfold_status_t st,
                                                  starpu_data_handle_t *output, size_t *total)
{
    static const char fn[] = "starfold_group_all_gather";
    *output = NULL;
    *total = 0;
    const starfold_status_t usable = starfold__group_usable(fn, group);
    if (usable != STARFOLD_OK) return usable;
    const double timeout = group->timeout_seconds;
    if (timeout_seconds > 0) group->timeout_seconds = timeout_seconds;
    size_t *counts = calloc((size_t)group->size, sizeof *counts);
    if (!counts && st == STARFOLD_OK) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    st = all_gather(fn, group, dtype, match, input, count, divisor, st, output, counts);
    for (int r = 0; st == STARFOLD_OK && r < group->size; r++) *total += counts[r];
    free(counts);
    group->timeout_seconds = timeout;
    return st;
}
