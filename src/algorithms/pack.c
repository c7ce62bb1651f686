/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Concat-and-split packing plans (see pack.h for the picture). Pure arithmetic on element counts.
 */
#include "config.h"

#include "base/common.h"
#include "algorithms/pack.h"

void starfold__pack_plan_free(starfold__pack_plan_t *plan)
{
    if (!plan) return;
    for (size_t i = 0; i < plan->npacks; i++) free(plan->packs[i].segs);
    free(plan->packs);
    plan->packs = NULL;
    plan->npacks = 0;
}

static starfold_status_t push_pack(starfold__pack_plan_t *plan, size_t *cap, size_t index, starfold_dtype_t dtype,
                                   size_t count, starfold__pack_t **out)
{
    if (SF_GROW(plan->packs, plan->npacks, *cap))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory planning pack %zu", index);
    starfold__pack_t *p = &plan->packs[plan->npacks++];
    memset(p, 0, sizeof *p);
    p->index = index;
    p->dtype = dtype;
    p->count = count;
    *out = p;
    return STARFOLD_OK;
}

static starfold_status_t push_seg(starfold__pack_t *p, size_t *cap, size_t tensor, size_t offset, size_t count,
                                  size_t pack_offset)
{
    if (SF_GROW(p->segs, p->nsegs, *cap))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory planning pack %zu", p->index);
    p->segs[p->nsegs++] = (starfold__pack_seg_t){ tensor, offset, count, pack_offset };
    return STARFOLD_OK;
}

/* Direct plan: one pack per non-empty tensor, the tensor itself. */
static starfold_status_t plan_direct(const starfold_tensor_desc_t *tensors, size_t ntensors, starfold__pack_plan_t *plan)
{
    starfold_status_t st = STARFOLD_OK;
    size_t cap = 0;
    for (size_t t = 0; t < ntensors; t++) {
        if (tensors[t].count == 0) continue;
        starfold__pack_t *p;
        size_t segcap = 0;
        SF_CHECK_GOTO(push_pack(plan, &cap, t, tensors[t].dtype, tensors[t].count, &p), st, fail);
        SF_CHECK_GOTO(push_seg(p, &segcap, t, 0, tensors[t].count, 0), st, fail);
    }
    return STARFOLD_OK;
fail:
    starfold__pack_plan_free(plan);
    return st;
}

/*
 * Splits one dtype group [first tensors of that dtype, in order] into num_packs packs of
 * total / num_packs elements, the last taking the remainder, and records which tensor ranges fall
 * into each. Walks the tensors once with a cursor (t, offset within t).
 */
static starfold_status_t plan_group(const starfold_tensor_desc_t *tensors, size_t ntensors, starfold_dtype_t dtype,
                                    size_t first_index, int num_packs, starfold__pack_plan_t *plan, size_t *cap)
{
    starfold_status_t st;
    size_t total = 0;
    for (size_t t = 0; t < ntensors; t++)
        if (tensors[t].dtype == dtype) total += tensors[t].count;
    const size_t per = total / (size_t)num_packs;
    size_t t = 0, in_t = 0; /* cursor: tensor and element within it */
    for (int k = 0; k < num_packs; k++) {
        size_t want = k == num_packs - 1 ? total - per * (size_t)(num_packs - 1) : per;
        if (want == 0) continue;
        starfold__pack_t *p;
        size_t segcap = 0, filled = 0;
        if ((st = push_pack(plan, cap, first_index + (size_t)k, dtype, want, &p)) != STARFOLD_OK) return st;
        while (filled < want) {
            while (tensors[t].dtype != dtype || in_t == tensors[t].count) {
                t++;
                in_t = 0;
            }
            size_t take = tensors[t].count - in_t;
            if (take > want - filled) take = want - filled;
            if ((st = push_seg(p, &segcap, t, in_t, take, filled)) != STARFOLD_OK) return st;
            in_t += take;
            filled += take;
        }
    }
    return STARFOLD_OK;
}

starfold_status_t starfold__pack_plan_concat_split(const starfold_tensor_desc_t *tensors, size_t ntensors, int num_packs,
                                            starfold__pack_plan_t *plan)
{
    memset(plan, 0, sizeof *plan);
    if (num_packs < 0) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "num_packs must be >= 0, got %d", num_packs);
    if (num_packs == 0) return plan_direct(tensors, ntensors, plan);

    /* Dtype groups in order of first appearance; group g's packs are numbered g*num_packs + k. */
    starfold_status_t st = STARFOLD_OK;
    size_t cap = 0, group = 0;
    int seen[STARFOLD_DTYPE_COUNT] = { 0 };
    for (size_t t = 0; t < ntensors; t++) {
        starfold_dtype_t dt = tensors[t].dtype;
        if (seen[dt]) continue;
        seen[dt] = 1;
        SF_CHECK_GOTO(plan_group(tensors, ntensors, dt, group * (size_t)num_packs, num_packs, plan, &cap), st, fail);
        group++;
    }
    return STARFOLD_OK;
fail:
    starfold__pack_plan_free(plan);
    return st;
}

starfold_status_t starfold__pack_plan_by_size(const starfold_tensor_desc_t *tensors, size_t ntensors, size_t bytes_per_pack,
                                       starfold__pack_plan_t *plan)
{
    starfold_status_t st = STARFOLD_OK;
    size_t cap = 0, index = 0;
    int seen[STARFOLD_DTYPE_COUNT] = { 0 };
    memset(plan, 0, sizeof *plan);
    for (size_t first = 0; first < ntensors; first++) {
        const starfold_dtype_t dt = tensors[first].dtype;
        if (seen[dt]) continue;
        seen[dt] = 1;
        const size_t es = starfold_dtype_size(dt);
        starfold__pack_t *p = NULL;
        size_t segcap = 0;
        for (size_t t = first; t < ntensors; t++) {
            if (tensors[t].dtype != dt || tensors[t].count == 0) continue;
            if (!p || p->count * es > bytes_per_pack) { /* close the pack once it is over the limit */
                SF_CHECK_GOTO(push_pack(plan, &cap, index++, dt, 0, &p), st, fail);
                segcap = 0;
            }
            SF_CHECK_GOTO(push_seg(p, &segcap, t, 0, tensors[t].count, p->count), st, fail);
            p->count += tensors[t].count;
        }
    }
    return STARFOLD_OK;
fail:
    starfold__pack_plan_free(plan);
    return st;
}
