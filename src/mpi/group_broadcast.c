/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Broadcast across the ranks of a process group (starfold_group_broadcast()): the root rank's
 * tensors into every replica of every rank, as Horovod's broadcast and MultiWorkerMirroredStrategy's
 * initial values need; and the barrier (starfold_group_barrier()), which is the agreement alone.
 *
 *   root rank r:  in[t] ----copy----> out[0][t] --MPI_Ibcast--> every rank's out[0][t]
 *   every rank:   out[0][t] --StarPU copy--> out[d][t], d = 1 .. devices - 1
 *
 *   1. agree     as an all-reduce's direct plan does (group_agree.c, one round): the same tensors
 *                everywhere, and the root as
 *                the payload, which every rank then compares (a root that differs fails every rank,
 *                naming both)
 *   2. send      one StarPU task on a CPU worker: every tensor's MPI_Ibcast in flight at once (the
 *                root sending straight from its inputs, copying each into its device 0 output while
 *                MPI moves it, unless they are one handle), polled against timeout_seconds, in the
 *                group's MPI order (its token); a task per tensor, waited for one after the other,
 *                took 28 ms a tensor on 3 ranks here
 *   3. fan out   device 0's outputs copied to the rank's other devices by StarPU (starpu_data_cpy),
 *                after the MPI step succeeded: a failed broadcast leaves those outputs as they were
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/common.h"
#include "mpi/group.h"
#include "mpi/group_plan.h"

/* This rank's verdict on its arguments: the root, the tensors, its inputs (the root's) and outputs. */
static starfold_status_t check_args(const char *fn, starfold_group_t g, int root, size_t nt,
                                    const starfold_tensor_desc_t *tensors, const starpu_data_handle_t *inputs,
                                    const starpu_data_handle_t *outputs)
{
    if (root < 0 || root >= g->size)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: root rank %d outside the group's %d ranks", fn, root,
                               g->size);
    if (nt == 0 || !tensors || !outputs)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                               nt == 0 ? "no tensors" : !tensors ? "NULL tensors" : "NULL outputs");
    if (g->rank == root && !inputs)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL inputs on the root rank %d", fn, root);
    const int nd = starfold_context_num_devices(g->ctx);
    for (size_t t = 0; t < nt; t++) {
        const starfold_dtype_t dt = tensors[t].dtype;
        if ((int)dt < 0 || (int)dt >= STARFOLD_DTYPE_COUNT)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: tensor %zu: unknown dtype %d", fn, t, (int)dt);
        if (tensors[t].count > (size_t)INT_MAX)
            return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "%s: tensor %zu: %zu elements: MPI counts are ints", fn, t,
                                   tensors[t].count);
        for (int k = -1; k < nd; k++) {
            if (k < 0 && g->rank != root) continue;
            const starpu_data_handle_t h = k < 0 ? inputs[t] : outputs[(size_t)k * nt + t];
            char what[80]; /* "output " + 20 digits + " of device " + 11 digits */
            if (k < 0) snprintf(what, sizeof what, "input %zu", t);
            else snprintf(what, sizeof what, "output %zu of device %d", t, k);
            if (!h && tensors[t].count == 0) continue;
            if (!h) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, what);
            if (starpu_data_get_interface_id(h) != STARPU_VECTOR_INTERFACE_ID)
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s is not a StarPU vector", fn, what);
            if (starpu_vector_get_nx(h) != tensors[t].count || starpu_vector_get_elemsize(h) != starfold_dtype_size(dt))
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "%s: %s holds %zu elements of %zu bytes, the tensor %zu of %s", fn, what,
                                       (size_t)starpu_vector_get_nx(h), (size_t)starpu_vector_get_elemsize(h),
                                       tensors[t].count, starfold_dtype_name(dt));
        }
    }
    if (starpu_worker_get_count_by_type(STARPU_CPU_WORKER) <= 0)
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED,
                               "%s: the MPI step runs on a CPU worker and StarPU has none here (set STARPU_NCPU >= 1)", fn);
    return STARFOLD_OK;
}

/* Every rank's root, from the agreement's payloads: the same verdict on every rank. */
static starfold_status_t same_root(const char *fn, starfold_group_t g, const int64_t *roots)
{
    for (int r = 1; r < g->size; r++)
        if (roots[r] != roots[0])
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: collective #%ld: rank %d broadcasts from rank %lld, rank 0 from rank %lld; "
                                   "nothing was submitted", fn, g->sequence, r, (long long)roots[r], (long long)roots[0]);
    return STARFOLD_OK;
}

/* Step 3: device 0's outputs into the other devices' (StarPU copies, waited for). */
static starfold_status_t fan_out(const char *fn, starfold_group_t g, size_t nt, const starfold_tensor_desc_t *tensors,
                                 const starpu_data_handle_t *outputs)
{
    const int nd = starfold_context_num_devices(g->ctx);
    for (int d = 1; d < nd; d++)
        for (size_t t = 0; t < nt; t++) {
            const starpu_data_handle_t from = outputs[t], to = outputs[(size_t)d * nt + t];
            if (!tensors[t].count || to == from) continue;
            if (starpu_data_cpy(to, from, 1, NULL, NULL) != 0)
                return starfold__error(STARFOLD_ERR_RUNTIME, "%s: StarPU refused the copy of tensor %zu to device %d", fn, t, d);
        }
    for (int d = 1; d < nd; d++)
        for (size_t t = 0; t < nt; t++) {
            const starpu_data_handle_t to = outputs[(size_t)d * nt + t];
            if (!tensors[t].count || to == outputs[t]) continue;
            if (starpu_data_acquire(to, STARPU_R) == 0) starpu_data_release(to);
        }
    return STARFOLD_OK;
}

/* The MPI task's argument over the tensors with elements (@sel[n] their indices), its arrays in one
 * allocation with it. NULL when memory runs out. */
static starfold__mpi_bcast_arg_t *bcast_arg(starfold_group_t g, int root, size_t nt, const starfold_tensor_desc_t *tensors,
                                            const starpu_data_handle_t *inputs, const starpu_data_handle_t *outputs,
                                            size_t *sel)
{
    size_t n = 0;
    for (size_t t = 0; t < nt; t++)
        if (tensors[t].count) sel[n++] = t;
    const size_t arrays = n ? n : 1;
    starfold__mpi_bcast_arg_t *a =
        calloc(1, sizeof *a + arrays * (sizeof *a->dtype + sizeof *a->count + sizeof *a->from_input));
    if (!a) return NULL;
    a->count = (size_t *)(a + 1);
    a->dtype = (starfold_dtype_t *)(a->count + arrays);
    a->from_input = (int *)(a->dtype + arrays);
    *a = (starfold__mpi_bcast_arg_t){ g->data_comm, g->timeout_seconds, root, n, a->dtype, a->count, a->from_input,
                                      STARFOLD_OK };
    for (size_t k = 0; k < n; k++) {
        a->dtype[k] = tensors[sel[k]].dtype;
        a->count[k] = tensors[sel[k]].count;
        a->from_input[k] = g->rank == root && inputs[sel[k]] != outputs[sel[k]];
    }
    return a;
}

STARFOLD_API starfold_status_t starfold_group_broadcast(starfold_group_t group, int root, size_t num_tensors,
                                                        const starfold_tensor_desc_t *tensors,
                                                        const starpu_data_handle_t *inputs,
                                                        const starpu_data_handle_t *outputs)
{
    static const char fn[] = "starfold_group_broadcast";
    starfold_status_t st = starfold__group_usable(fn, group);
    if (st != STARFOLD_OK) return st;
    starfold_group_t g = group;
    st = check_args(fn, g, root, num_tensors, tensors, inputs, outputs);
    const int ok = st == STARFOLD_OK;
    const starfold__agree_what_t what = { SF_GROUP_BROADCAST, STARFOLD_OP_SUM, ok ? num_tensors : 0, ok ? tensors : NULL,
                                          SF_LOWER_MPI, root };
    int64_t *roots = calloc((size_t)g->size, sizeof *roots);
    /* [3 x num_tensors]: the tensors with elements, then their outputs and the root's inputs, in that order */
    size_t *sel = ok ? calloc(num_tensors, sizeof *sel) : NULL;
    starpu_data_handle_t *h = ok ? calloc(2 * num_tensors, sizeof *h) : NULL;
    starfold__mpi_bcast_arg_t *a = ok && sel ? bcast_arg(g, root, num_tensors, tensors, inputs, outputs, sel) : NULL;
    if (st == STARFOLD_OK && (!roots || !sel || !h || !a)) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    st = starfold__group_agree(fn, g, &what, st, roots);
    if (st == STARFOLD_OK && (st = same_root(fn, g, roots)) != STARFOLD_OK) g->sequence++; /* alike on every rank */
    free(roots);
    /* No second round: nothing local is submitted before the MPI task, whose submission failing
     * breaks the group (as a refused MPI task of the all-reduce's direct plan does). */
    if (st == STARFOLD_OK) g->sequence++;
    int abandoned = 0;
    if (st == STARFOLD_OK && a->n) {
        /* Step 2: one task, every tensor's call in flight at once, in the group's MPI order. */
        for (size_t k = 0; k < a->n; k++) {
            h[k] = outputs[sel[k]];
            h[num_tensors + k] = g->rank == root ? inputs[sel[k]] : NULL;
        }
        st = starfold__group_mpi_bcast_submit(g, h, h + num_tensors, a);
        if (st == STARFOLD_OK) st = starfold__group_mpi_done(fn, g, h, a->n, &a->status, "MPI_Ibcast", &abandoned);
    }
    if (!abandoned) free(a); /* else the task may still read it: StarPU's now */
    free(sel);
    free(h);
    if (st == STARFOLD_OK) st = fan_out(fn, g, num_tensors, tensors, outputs);
    return st;
}

/*
 * The barrier: the agreement's first round alone. Every rank tells every other that it reached
 * collective #sequence and waits to hear the same from all of them, so none returns before the last
 * one arrived; a rank that does not come within timeout_seconds is named, as in any collective.
 */
STARFOLD_API starfold_status_t starfold_group_barrier(starfold_group_t group)
{
    static const char fn[] = "starfold_group_barrier";
    starfold_status_t st = starfold__group_usable(fn, group);
    if (st != STARFOLD_OK) return st;
    const starfold__agree_what_t what = { SF_GROUP_BARRIER, STARFOLD_OP_SUM, 0, NULL, SF_LOWER_MPI, 0 };
    st = starfold__group_agree(fn, group, &what, STARFOLD_OK, NULL);
    if (st == STARFOLD_OK) group->sequence++; /* the agreement consumed it only on a failure */
    return st;
}
