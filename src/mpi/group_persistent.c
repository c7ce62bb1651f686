/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Persistent all-reduces across ranks (MPI-4's MPI_Allreduce_init / MPI_Start): the plan (lowering,
 * graphs, leader vectors) made and agreed on once; every start runs it, still agreed on (round 1 with
 * the plan's fingerprint, then round 2) and time-limited like a call.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "mpi/group.h"
#include "mpi/group_plan.h"

struct starfold_group_persistent {
    starfold_group_t group;
    starfold_tensor_desc_t *tensors;       /* copies: the plan borrows them */
    starfold_view_t *inputs, *outputs;
    starfold__plan_t plan;
};

STARFOLD_API starfold_status_t starfold_group_all_reduce_init(starfold_group_t group, starfold_op_t op,
                                                              size_t num_tensors, const starfold_tensor_desc_t *tensors,
                                                              const starpu_data_handle_t *inputs,
                                                              const starpu_data_handle_t *outputs,
                                                              starfold_group_persistent_t *persistent)
{
    static const char fn[] = "starfold_group_all_reduce_init";
    starfold_status_t st = starfold__group_usable(fn, group);
    if (st != STARFOLD_OK) return st;
    const size_t n = (size_t)starfold_context_num_devices(group->ctx) * num_tensors;
    struct starfold_group_persistent *P = calloc(1, sizeof *P);
    if (P) {
        P->group = group;
        P->tensors = tensors && num_tensors ? malloc(num_tensors * sizeof *tensors) : NULL;
        if (P->tensors) memcpy(P->tensors, tensors, num_tensors * sizeof *tensors);
        P->inputs = inputs ? starfold__group_whole_views(n, inputs) : NULL;
        P->outputs = outputs ? starfold__group_whole_views(n, outputs) : NULL;
    }
    if (!persistent) st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL persistent", fn);
    else if (!P || (tensors && num_tensors && !P->tensors) || (inputs && !P->inputs) || (outputs && !P->outputs))
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    starfold__plan_t scratch;
    starfold__plan_t *plan = P ? &P->plan : &scratch;
    st = starfold__group_plan_make(fn, group, op, num_tensors, P ? P->tensors : NULL, P ? P->inputs : NULL, P ? P->outputs : NULL, st, plan);
    /* Agreed on once, like a call's first round: a refusal or a difference fails every rank here. */
    const starfold__agree_what_t what = { SF_GROUP_ALL_REDUCE, op, num_tensors, plan->tensors, plan->lowering, 0 };
    st = starfold__group_agree(fn, group, &what, st, NULL);
    if (st == STARFOLD_OK) group->sequence++;
    if (st != STARFOLD_OK || !P) {
        starfold__group_plan_free(group, plan);
        if (P) free(P->tensors), free(P->inputs), free(P->outputs);
        free(P);
        return st;
    }
    *persistent = P;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_group_persistent_start(starfold_group_persistent_t persistent)
{
    static const char fn[] = "starfold_group_persistent_start";
    if (!persistent) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL persistent", fn);
    const starfold_status_t st = starfold__group_usable(fn, persistent->group);
    if (st != STARFOLD_OK) return st;
    return starfold__group_plan_run(fn, persistent->group, &persistent->plan, STARFOLD_OK);
}

STARFOLD_API void starfold_group_persistent_destroy(starfold_group_persistent_t persistent)
{
    if (!persistent) return;
    starfold__group_plan_free(persistent->group, &persistent->plan);
    free(persistent->tensors);
    free(persistent->inputs);
    free(persistent->outputs);
    free(persistent);
}

