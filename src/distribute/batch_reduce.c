/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * A batch reduce (cross_device_ops.c has the dispatch and its picture): the groups planned
 * (batch_groups.c) or a kept plan taken again (batch_plan.c), every group's results laid out and
 * reserved in the arena, then every group submitted. Every graph is compiled and every result
 * allocated before the first submission, so a failure leaves nothing behind; inputs are never
 * written (results are always new vectors).
 */
#include "config.h"

#include <stdio.h>

#include "algorithms/algorithms.h"
#include "base/common.h"
#include "distribute/batch_plan.h"
#include "distribute/distribute.h"

typedef starfold__item_t item_t;
typedef starfold__group_t group_t;

static starfold_status_t record_group(const item_t *items, group_t *g, starfold_request_t req, starfold_value_t *results,
                                      size_t npairs, int split_n, int persistent, int reused, const char *fn)
{
    const item_t *it = &items[g->first];
    if (!(g->req = starfold__dist_req_new(req, 1))) {
        starfold_request_destroy(req);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    for (size_t t = 0; t < g->nmembers; t++) {
        const size_t i = g->members[t];
        if (!split_n) starfold__value_set_first_writer(results[i], g->req);
        for (int c = 0; c < split_n; c++) starfold__value_set_first_writer(results[(size_t)c * npairs + i], g->req);
    }
    starfold__trace_entry_t e = { .path = it->path, .num_tensors = g->nmembers, .num_graph_tensors = starfold__group_runs(g),
                                  .num_sources = it->nsrc,
                                  .num_destinations = it->ndst, .reduce_device = it->reduce_device,
                                  .persistent = persistent, .reused = reused };
    snprintf(e.algorithm, sizeof e.algorithm, "%s", starfold_graph_algorithm(g->graph));
    starfold__trace_add(&e);
    return STARFOLD_OK;
}

/*
 * Submits group @g: inputs and outputs mapped by device, as views (a component in the arena is its
 * range of a bucket, a wrapped handle is itself whole), a view per run: its first member's, the
 * others checked to follow it. When every view lies in the arena and the graph is a cached one, the
 * submission is the arena's persistent one for exactly these views, made the first time and started
 * every step after (g->ticket names it). Records the submission on the results.
 */
static starfold_status_t submit_group(starfold_context_t ctx, const starfold__pair_t *pairs, const item_t *items, group_t *g,
                                      starfold_value_t *results, size_t npairs, int split_n, const char *fn)
{
    const item_t *it = &items[g->first];
    const size_t nr = starfold__group_runs(g);
    starfold_status_t st = STARFOLD_OK;
    starfold_view_t *in = malloc(sizeof *in * nr * (size_t)it->nsrc);
    starfold_view_t *out = malloc(sizeof *out * nr * (size_t)it->ndst);
    int in_arena = g->serial != 0;
    g->ticket = 0;
    if (!in || !out) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto out;
    }
    for (size_t r = 0; r < nr; r++) {
        size_t at = 0; /* elements of the run before member t */
        for (size_t t = starfold__group_run_begin(g, r); t < starfold__group_run_end(g, r); at += pairs[g->members[t]].value->count, t++) {
            const size_t i = g->members[t];
            const starfold_value_t v = pairs[i].value;
            const starfold__dest_t *d = &pairs[i].dest;
            starfold_view_t vv[STARFOLD_MAX_DEVICES], rv[STARFOLD_MAX_DEVICES];
            in_arena &= starfold__value_views(v, vv);
            if (split_n) /* one one-component result per destination device */
                for (int c = 0; c < split_n; c++) in_arena &= starfold__value_views(results[(size_t)c * npairs + i], &rv[c]);
            else
                in_arena &= starfold__value_views(results[i], rv);
            for (int s = 0; s < it->nsrc + it->ndst; s++) {
                const int src = s < it->nsrc, k = src ? s : s - it->nsrc;
                const int c = src ? starfold__component_for(v->devices, v->n, it->src[k], items[i].host_as)
                                  : starfold__component_for(d->devices, d->n, it->dst[k], items[i].host_as);
                if (c < 0) {
                    st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: pair %zu has no %s for graph %s %d", fn, i,
                                  src ? "component" : "result", src ? "source" : "destination", k);
                    goto out;
                }
                const starfold_view_t view = src ? vv[c] : rv[c];
                starfold_view_t *slot = src ? &in[(size_t)k * nr + r] : &out[(size_t)k * nr + r];
                if (at == 0) {
                    *slot = view;
                } else if (view.handle != slot->handle || view.offset != slot->offset + at) {
                    /* Planned as one run: a component moved since (starfold_value_handle() from another thread). */
                    st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: pair %zu no longer follows pair %zu in memory (a "
                                         "component moved while the batch was planned)", fn, i, g->members[t - 1]);
                    goto out;
                }
            }
        }
    }
    starfold_request_t req;
    int reused = 0;
    st = in_arena ? starfold__arena_start(ctx, g->graph, g->serial, nr * (size_t)it->nsrc, in, nr * (size_t)it->ndst, out,
                                          &req, &reused, &g->ticket)
                  : starfold_submit_views(ctx, g->graph, in, out, &req);
    if (st != STARFOLD_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", starfold_last_error());
        st = starfold__error(st, "%s: %s", fn, why);
        goto out;
    }
    st = record_group(items, g, req, results, npairs, split_n, in_arena, reused, fn);
out:
    free(in);
    free(out);
    return st;
}

/*
 * Group @g of a plan, before its results' values exist: when this call's result blocks are those of
 * a binding an earlier call started, and the arena still has it, that binding is started again (the
 * inputs are the same views: the plan's key says so), *@req its submission (recorded on the results
 * once they are made, record_group()); else *@req NULL.
 */
static starfold_status_t restart_planned_group(starfold_context_t ctx, group_t *g, const char *fn, starfold_request_t *req)
{
    *req = NULL;
    for (int b = 0; b < SF_PLAN_BINDINGS; b++) {
        const starfold__binding_t *bd = &g->where->bind[b];
        if (!bd->ticket || memcmp(bd->blocks, g->where->blocks, sizeof bd->blocks) != 0) continue;
        int found = 0;
        starfold_status_t st = starfold__arena_restart(ctx, bd->ticket, req, &found);
        if (st != STARFOLD_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", starfold_last_error());
            return starfold__error(st, "%s: %s", fn, why);
        }
        if (found) {
            g->ticket = bd->ticket;
            return STARFOLD_OK;
        }
        *req = NULL;
    }
    return STARFOLD_OK;
}

/* Group @g of a plan that restarted no binding: as submit_group(), the new binding remembered. */
static starfold_status_t submit_planned_group(starfold_context_t ctx, const starfold__pair_t *pairs, const item_t *items,
                                              group_t *g, starfold_value_t *results, size_t npairs, int split_n,
                                              const char *fn)
{
    starfold_status_t st = submit_group(ctx, pairs, items, g, results, npairs, split_n, fn);
    if (st == STARFOLD_OK && g->ticket) {
        starfold__group_blocks_t *w = g->where;
        starfold__binding_t *bd = &w->bind[w->next_bind];
        w->next_bind = (w->next_bind + 1) % SF_PLAN_BINDINGS;
        bd->ticket = g->ticket;
        memcpy(bd->blocks, w->blocks, sizeof bd->blocks);
    }
    return st;
}

/*
 * The layout of group @g's results (see reserve_results()): for each output dtype of its graph, the
 * members of that dtype, their counts and their destinations' device orders.
 */
static starfold_status_t layout_results(const starfold__pair_t *pairs, group_t *g)
{
    const starfold__dest_t *first = &pairs[g->members[0]].dest;
    size_t counts[STARFOLD_DTYPE_COUNT] = { 0 };
    for (size_t r = 0; r < starfold__group_runs(g); r++) counts[starfold_graph_output_dtype(g->graph, r)] += starfold__group_run_end(g, r) - starfold__group_run_begin(g, r);
    g->nlayouts = 0;
    if (!(g->where = calloc(1, sizeof *g->where))) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < STARFOLD_DTYPE_COUNT; k++) {
        if (!counts[k]) continue;
        starfold__result_layout_t *l = &g->layouts[g->nlayouts++];
        l->dtype = (starfold_dtype_t)k;
        l->same_order = 1;
        l->idx = malloc(sizeof *l->idx * counts[k]);
        l->cnt = malloc(sizeof *l->cnt * counts[k]);
        l->devs = malloc(sizeof *l->devs * counts[k]);
        if (!l->idx || !l->cnt || !l->devs) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t r = 0; r < starfold__group_runs(g); r++) {
            if (starfold_graph_output_dtype(g->graph, r) != l->dtype) continue;
            for (size_t t = starfold__group_run_begin(g, r); t < starfold__group_run_end(g, r); t++) {
                const size_t i = g->members[t];
                l->idx[l->nk] = i;
                l->devs[l->nk] = pairs[i].dest.devices; /* the same set, in the pair's order */
                l->same_order &= !memcmp(pairs[i].dest.devices, first->devices, sizeof(int) * (size_t)first->n);
                l->cnt[l->nk++] = pairs[i].value->count;
            }
        }
    }
    return STARFOLD_OK;
}

/*
 * The results of group @g in the arena, as its layouts say: one block per destination device and
 * output dtype, the results one after another in it, so the group's outputs are views of as few
 * vectors as possible (and the same ones every step of a loop that frees its results before the
 * next). Every pair of a group has the same destination devices (maybe in another order).
 * Made in two steps (starfold__values_block_reserve() / _fill()): the blocks first, where they are
 * going to g->where->blocks and their reservations to @resv (group_blocks(@g) of them), then the
 * values, which a restarted binding need not wait for.
 *   split_n == 0: res[i] = pair i's result, mirrored over its destination's devices;
 *   split_n  > 0: res[c * npairs + i] = a one-component result on pair i's destination device c.
 */
static size_t group_blocks(const group_t *g, int split_n)
{
    return (size_t)g->nlayouts * (size_t)(split_n ? split_n : 1);
}

static starfold_status_t reserve_results(starfold_context_t ctx, const starfold__pair_t *pairs, group_t *g, int split_n,
                                         starfold__values_block_t **resv)
{
    const starfold__dest_t *d = &pairs[g->members[0]].dest;
    memset(g->where->blocks, 0, sizeof g->where->blocks);
    starfold_status_t st = STARFOLD_OK;
    for (int k = 0; k < g->nlayouts && st == STARFOLD_OK; k++) {
        const starfold__result_layout_t *l = &g->layouts[k];
        if (!split_n)
            st = starfold__values_block_reserve(ctx, d->n, d->devices, l->dtype, l->nk, l->cnt, g->where->blocks[k], &resv[k]);
        for (int b = 0; st == STARFOLD_OK && split_n && b < d->n; b++) /* split: a block per device */
            st = starfold__values_block_reserve(ctx, 1, &d->devices[b], l->dtype, l->nk, l->cnt, &g->where->blocks[k][b],
                                                &resv[(size_t)k * (size_t)split_n + (size_t)b]);
    }
    return st;
}

static starfold_status_t fill_results(starfold_context_t ctx, const starfold__pair_t *pairs, group_t *g,
                                      starfold_value_t *res, size_t npairs, int split_n, starfold__values_block_t **resv)
{
    const starfold__dest_t *d = &pairs[g->members[0]].dest;
    starfold_value_t few[64], *out = few;
    size_t maxk = 0;
    for (int k = 0; k < g->nlayouts; k++) maxk = g->layouts[k].nk > maxk ? g->layouts[k].nk : maxk;
    if (maxk > 64 && !(out = malloc(sizeof *out * maxk))) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
    starfold_status_t st = STARFOLD_OK;
    for (int k = 0; k < g->nlayouts && st == STARFOLD_OK; k++) {
        const starfold__result_layout_t *l = &g->layouts[k];
        if (!split_n) {
            starfold__values_block_t *blk = resv[k];
            resv[k] = NULL; /* taken by the fill, failing or not */
            st = starfold__values_block_fill(blk, ctx, STARFOLD_VALUE_MIRRORED, d->n, d->devices, l->dtype, l->nk, l->cnt,
                                             l->devs, out);
            for (size_t j = 0; st == STARFOLD_OK && j < l->nk; j++) res[l->idx[j]] = out[j];
        }
        /* Split: pair i's result on device D goes where D is in its destination. */
        for (int b = 0; st == STARFOLD_OK && split_n && b < d->n; b++) {
            const size_t r = (size_t)k * (size_t)split_n + (size_t)b;
            starfold__values_block_t *blk = resv[r];
            resv[r] = NULL;
            st = starfold__values_block_fill(blk, ctx, STARFOLD_VALUE_MIRRORED, 1, &d->devices[b], l->dtype, l->nk, l->cnt,
                                             NULL, out);
            for (size_t j = 0; st == STARFOLD_OK && j < l->nk; j++) {
                int c = l->same_order ? b : 0;
                while (c < split_n - 1 && l->devs[j][c] != d->devices[b]) c++;
                res[(size_t)c * npairs + l->idx[j]] = out[j];
            }
        }
    }
    if (out != few) free(out);
    return st;
}

/*
 * Every group's results, and its submission:
 *   1. every group's result blocks reserved      (a failure here: nothing submitted, nothing made)
 *   2. a plan's group whose blocks are those of a binding an earlier call started restarts it now,
 *      and its work runs while 3 makes the values (a replica context's all_reduce of 1,000 gradients
 *      on 8 replicas makes 8,000 one-component results: a third of a millisecond, no longer spent
 *      before the reduction starts)
 *   3. the results' values, in their blocks
 *   4. every other group submitted over them; every submission recorded on its results
 * On failure after 2 the restarted work is waited for before its blocks are given back (@res, the
 * values made, are the caller's to destroy, after this returns).
 */
static starfold_status_t make_and_submit(starfold_context_t ctx, const starfold__pair_t *pairs, const item_t *items,
                                         group_t *groups, size_t ngroups, int planned, starfold_value_t *res,
                                         size_t npairs, int split_n, const char *fn)
{
    size_t nresv = 0, at = 0;
    for (size_t gi = 0; gi < ngroups; gi++) nresv += group_blocks(&groups[gi], split_n);
    starfold__values_block_t **resv = calloc(nresv ? nresv : 1, sizeof *resv);
    starfold_request_t *early = calloc(ngroups ? ngroups : 1, sizeof *early);
    starfold_status_t st = STARFOLD_OK;
    if (!resv || !early) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto out;
    }
    for (size_t gi = 0; gi < ngroups; at += group_blocks(&groups[gi], split_n), gi++)
        SF_CHECK_GOTO(reserve_results(ctx, pairs, &groups[gi], split_n, &resv[at]), st, out);
    for (size_t gi = 0; planned && gi < ngroups; gi++)
        SF_CHECK_GOTO(restart_planned_group(ctx, &groups[gi], fn, &early[gi]), st, out);
    at = 0;
    for (size_t gi = 0; gi < ngroups; at += group_blocks(&groups[gi], split_n), gi++)
        SF_CHECK_GOTO(fill_results(ctx, pairs, &groups[gi], res, npairs, split_n, &resv[at]), st, out);
    for (size_t gi = 0; gi < ngroups; gi++) {
        const starfold_request_t req = early[gi];
        early[gi] = NULL; /* record_group() takes it */
        st = req ? record_group(items, &groups[gi], req, res, npairs, split_n, 1, 1, fn)
                 : planned ? submit_planned_group(ctx, pairs, items, &groups[gi], res, npairs, split_n, fn)
                           : submit_group(ctx, pairs, items, &groups[gi], res, npairs, split_n, fn);
        if (st != STARFOLD_OK) goto out;
    }
out:
    /* Restarted work not recorded on its results writes their blocks: finished before they go back. */
    for (size_t gi = 0; early && gi < ngroups; gi++) starfold_request_destroy(early[gi]);
    for (size_t r = 0; resv && r < nresv; r++) starfold__values_block_cancel(resv[r]);
    free(resv);
    free(early);
    return st;
}

/* Classifies, checks and groups the pairs (first appearance order), and compiles each group's graph. */
static starfold_status_t plan_groups(starfold_cross_device_ops_t ops, starfold_topology_t topo, starfold_op_t op, size_t n,
                                     const starfold__pair_t *pairs, const starfold_communication_options_t *options,
                                     const char *fn, item_t *items, group_t *groups, size_t *member_store,
                                     size_t *ngroups)
{
    const int ntopo = starfold_topology_num_devices(topo), nctx = starfold_context_num_devices(pairs[0].value->ctx);
    starfold_status_t st;
    for (size_t i = 0; i < n; i++) {
        starfold__ops_classify(ops, &pairs[i], &items[i]);
        if ((st = starfold__check_item_devices(fn, &items[i], ntopo, nctx, i)) != STARFOLD_OK) return st;
        size_t gi = 0;
        while (gi < *ngroups && !starfold__items_same_graph(&items[groups[gi].first], &items[i])) gi++;
        if (gi == *ngroups) groups[(*ngroups)++].first = i;
        items[i].group = (int)gi;
    }
    /* Members of each group, in input order, in one shared array. */
    for (size_t gi = 0, pos = 0; gi < *ngroups; gi++) {
        groups[gi].members = &member_store[pos];
        for (size_t i = 0; i < n; i++)
            if (items[i].group == (int)gi) groups[gi].members[groups[gi].nmembers++] = i;
        pos += groups[gi].nmembers;
    }
    for (size_t gi = 0; gi < *ngroups; gi++) {
        if ((st = starfold__plan_runs(pairs, items, &groups[gi], starfold__ops_may_coalesce(ops, options), fn)) != STARFOLD_OK) return st;
        if ((st = starfold__ops_compile_group(ops, topo, op, pairs, items, &groups[gi], options, fn)) != STARFOLD_OK) return st;
        if ((st = layout_results(pairs, &groups[gi])) != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

/* Every pair of one context; for split results (@split_n > 0) every destination of @split_n devices, no host. */
static starfold_status_t check_pairs(const char *fn, size_t n, const starfold__pair_t *pairs, starfold_context_t ctx,
                                     int split_n)
{
    for (size_t i = 0; i < n; i++) {
        if (pairs[i].value->ctx != ctx || (pairs[i].dest.ctx && pairs[i].dest.ctx != ctx))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: pair %zu: values and destinations of another context "
                                   "than pair 0's", fn, i);
        if (split_n && (pairs[i].dest.n != split_n || pairs[i].dest.host))
            return starfold__error(STARFOLD_ERR_INTERNAL, "%s: split results need one destination device list", fn);
    }
    return STARFOLD_OK;
}

/*
 * The batch reduce: results mirrored (@split 0), or split per destination device (see reserve_results()).
 * @plan_id (NULL, or in and out): in, the id of the plan a call over this very array of pairs used,
 * the caller vouching for them (starfold__plan_find_id()); out, the plan this call used or
 * kept, 0 for none.
 *
 *   plan kept for exactly this call? --yes--> its groups, graphs and layouts
 *                                    --no---> classify, group, compile, lay out (plan_groups())
 *   every group's results and submission (make_and_submit(): a plan's group restarts its binding when
 *   the results landed where an earlier call's did); a new plan is kept when every group went
 *   through the arena.
 */
static starfold_status_t batch_reduce(starfold_cross_device_ops_t ops, starfold_topology_t topology, starfold_op_t op,
                                      size_t n, const starfold__pair_t *pairs,
                                      const starfold_communication_options_t *options, const char *fn,
                                      starfold_value_t *results, int split, unsigned long long *plan_id)
{
    const unsigned long long known = plan_id ? *plan_id : 0;
    if (plan_id) *plan_id = 0;
    if (n == 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: batch_reduce needs at least one (value, destinations) pair",
                        fn);
    if ((int)op < 0 || (int)op >= STARFOLD_OP_COUNT)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown reduce op %d", fn, (int)op);
    const starfold_context_t ctx = pairs[0].value->ctx;
    const int split_n = split ? pairs[0].dest.n : 0;
    starfold_status_t st = STARFOLD_OK;
    starfold_topology_t topo = NULL;
    int made_topo = 0, keyable = 0;
    item_t *items = NULL;
    group_t *groups = NULL;
    size_t *member_store = NULL, ngroups = 0;
    const size_t nres = split ? n * (size_t)split_n : n;
    starfold_value_t *res = calloc(nres ? nres : 1, sizeof *res);
    starfold__batch_plan_t *plan = NULL;
    if (!res) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto out;
    }
    SF_CHECK_GOTO(starfold__pick_topology(ops, topology, ctx, &topo, &made_topo), st, out);
    /* Pairs their caller vouches for (the very ones a call that used plan @known had) passed the
     * checks then: 3 x n reads saved on a replica context's leader, while the others wait. */
    if (!(plan = starfold__plan_find_id(ops, ctx, topo, op, split, options, n, known))) {
        SF_CHECK_GOTO(check_pairs(fn, n, pairs, ctx, split_n), st, out);
        if ((keyable = starfold__plan_keyable(n, pairs))) plan = starfold__plan_find(ops, ctx, topo, op, split, options, n, pairs);
    }
    if (plan) {
        items = plan->items;
        groups = plan->groups;
        ngroups = plan->ngroups;
    } else {
        items = calloc(n, sizeof *items);
        groups = calloc(n, sizeof *groups);
        member_store = calloc(n, sizeof *member_store);
        if (!items || !groups || !member_store) {
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
            goto out;
        }
        SF_CHECK_GOTO(plan_groups(ops, topo, op, n, pairs, options, fn, items, groups, member_store, &ngroups), st, out);
    }
    SF_CHECK_GOTO(make_and_submit(ctx, pairs, items, groups, ngroups, plan != NULL, res, n, split_n, fn), st, out);

    memcpy(results, res, sizeof *res * nres);
    memset(res, 0, sizeof *res * nres); /* ownership moved to the caller */
out:
    /* On failure the results already submitted are destroyed: their records wait for the graphs. */
    for (size_t i = 0; res && i < nres; i++) starfold_value_destroy(res[i]);
    for (size_t gi = 0; groups && gi < ngroups; gi++) {
        starfold__dist_req_release(groups[gi].req);
        groups[gi].req = NULL;
    }
    if (plan) {
        if (plan_id && st == STARFOLD_OK) *plan_id = plan->id;
        starfold__plan_return(ops, plan);
    } else if (st == STARFOLD_OK && keyable) {
        /* Kept when every group is a cached graph started through the arena: the next call restarts it. */
        int all_bound = 1;
        for (size_t gi = 0; gi < ngroups; gi++) {
            group_t *g = &groups[gi];
            all_bound &= g->cached && g->ticket != 0;
            g->where->bind[0].ticket = g->ticket;
            memcpy(g->where->bind[0].blocks, g->where->blocks, sizeof g->where->blocks);
            g->where->next_bind = 1 % SF_PLAN_BINDINGS;
        }
        if (all_bound)
            starfold__plan_keep(ops, ctx, topo, op, split, options, n, pairs, &items, &groups, ngroups, &member_store,
                                plan_id);
    }
    if (!plan) {
        for (size_t gi = 0; groups && gi < ngroups; gi++) starfold__group_fini(ops, &groups[gi]);
        free(items);
        free(groups);
        free(member_store);
    }
    if (made_topo) starfold_topology_destroy(topo);
    free(res);
    return st;
}

starfold_status_t starfold__ops_batch_reduce(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                      starfold_op_t op, size_t n, const starfold__pair_t *pairs,
                                      const starfold_communication_options_t *options, const char *fn,
                                      starfold_value_t *results)
{
    return batch_reduce(ops, topology, op, n, pairs, options, fn, results, 0, NULL);
}

starfold_status_t starfold__ops_batch_reduce_split(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                                   starfold_op_t op, size_t n, const starfold__pair_t *pairs,
                                                   const starfold_communication_options_t *options, const char *fn,
                                                   starfold_value_t *results, unsigned long long *plan_id)
{
    return batch_reduce(ops, topology, op, n, pairs, options, fn, results, 1, plan_id);
}

