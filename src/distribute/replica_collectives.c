/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * What the leader of a rendezvous runs (rendezvous.c), every replica's slot filled: the replica
 * context's all_reduce (one batch all-reduce over every replica's values, its pairs kept for the
 * next step), all_gather, a mirrored variable's update, and merge_call. Across processes, a
 * collective this process refuses is shared with the others (refuse()), which would otherwise wait.
 */
#include "config.h"

#include <stdio.h>

#include "base/common.h"
#include "distribute/replica.h"

static void pairs_free(starfold__pair_t *pairs, size_t nv)
{
    for (size_t i = 0; pairs && i < nv; i++) starfold_value_destroy(pairs[i].value);
    free(pairs);
}

void starfold__ar_inputs_clear(ar_inputs_t *a)
{
    pairs_free(a->pairs, a->nv);
    free(a->src);
    free(a->comps);
    memset(a, 0, sizeof *a);
}

/*
 * Whether replica @r passed the very values it passed to the last all_reduce: every stamp as kept.
 * Those values passed the checks then, and still would: a stamp is never given twice and changes
 * with a value's storage, a value's context and devices never change, and kept pairs never hold a
 * regrouped value (whose stamp does not follow its parts). Their components are then the kept
 * ones, copied to @comps. A step of a training loop reads one word of each value here instead of
 * checking it again. Each replica asks this of its own row, in its own thread, before it joins (the
 * kept pairs change only while every replica waits in the rendezvous); the leader then only reads
 * the answers.
 */
int starfold__ar_inputs_row_same(const ar_inputs_t *a, int r, int n, size_t nv, const starfold_value_t *values, int *comps)
{
    if (!a || !a->pairs || a->nv != nv || a->n != n) return 0;
    const unsigned long long *stamps = &a->src[(size_t)r * nv];
    for (size_t i = 0; i < nv; i++)
        if (!values[i] || __atomic_load_n(&values[i]->stamp, __ATOMIC_RELAXED) != stamps[i]) return 0;
    memcpy(comps, &a->comps[(size_t)r * nv], sizeof *comps * nv);
    return 1;
}

static int ar_inputs_match(const ar_inputs_t *a, const slot_t *sl, int n, size_t nv)
{
    if (!a->pairs || a->nv != nv || a->n != n) return 0;
    for (int r = 0; r < n; r++)
        if (!sl[r].same_as_last) return 0;
    return 1;
}

/* New pairs over what the replicas passed: value i of every replica as one PerReplica value, which is
 * also its destination (TensorFlow's batch_all_reduce). The stamps and components they were made of
 * go to @stamps and @comps ([r * nv + i]) when given; *@regrouped says whether a source is a
 * regrouped value (which follows its parts: such pairs are not kept). */
static starfold_status_t make_pairs(starfold_strategy_t s, const slot_t *sl, int n, size_t nv, starfold__pair_t **pairs,
                                    unsigned long long *stamps, int *comps_out, int *regrouped)
{
    starfold_status_t st = STARFOLD_OK;
    const size_t m = nv * (size_t)n;
    starfold_value_t *src = malloc(sizeof *src * m), *made = calloc(nv, sizeof *made);
    int *comps = malloc(sizeof *comps * m);
    starfold__pair_t *p = calloc(nv, sizeof *p);
    *regrouped = 0;
    if (!src || !comps || !made || !p) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < nv; i++) {
            const size_t k = (size_t)r * nv + i;
            src[k] = sl[r].values[i];
            comps[k] = sl[r].comps[i];
            *regrouped |= starfold__value_regrouped(src[k]);
            if (stamps) stamps[k] = __atomic_load_n(&src[k]->stamp, __ATOMIC_RELAXED);
            if (comps_out) comps_out[k] = comps[k];
        }
    SF_CHECK_GOTO(starfold__values_borrow_block(STARFOLD_VALUE_PER_REPLICA, n, s->devices, nv, src, comps, made), st, out);
    for (size_t i = 0; i < nv; i++) {
        p[i].value = made[i];
        p[i].dest.n = n;
        memcpy(p[i].dest.devices, s->devices, sizeof(int) * (size_t)n);
        p[i].dest.ctx = sl[0].values[i]->ctx;
    }
    *pairs = p;
    p = NULL;
out:
    free(src);
    free(comps);
    free(made);
    free(p);
    return st;
}

/*
 * The pairs over what the replicas passed into *@pairs: last all_reduce's when they are the same
 * (@as_last: ar_inputs_match(), which the caller asked; *@kept = 1: not the caller's), else new ones, remembered for next time unless a regrouped value is
 * among the sources (then *@kept = 0: the caller frees them with pairs_free()).
 */
static starfold_status_t ar_inputs_get(starfold_strategy_t s, const slot_t *sl, int n, size_t nv, int as_last,
                                       starfold__pair_t **pairs, int *kept)
{
    ar_inputs_t *a = starfold__pool_ar_inputs(s);
    *kept = 0;
    if (as_last) {
        *pairs = a->pairs;
        *kept = 1;
        return STARFOLD_OK;
    }
    const size_t m = nv * (size_t)n;
    unsigned long long *stamps = a ? malloc(sizeof *stamps * m) : NULL;
    int *comps = a ? malloc(sizeof *comps * m) : NULL;
    int regrouped = 0;
    const starfold_status_t st = make_pairs(s, sl, n, nv, pairs, stamps, comps, &regrouped);
    if (st != STARFOLD_OK || !a || !stamps || !comps || regrouped) {
        free(stamps);
        free(comps);
        return st; /* not kept: the caller's */
    }
    starfold__ar_inputs_clear(a);
    a->src = stamps;
    a->comps = comps;
    a->pairs = *pairs;
    a->nv = nv;
    a->n = n;
    *kept = 1;
    return STARFOLD_OK;
}

/* The leader's all_reduce: one batch_reduce_to of PerReplica values over every replica's handles. */
/* A collective the replicas of this process cannot run (@st, @msg): across processes, the others
 * get the refusal instead of waiting for this process. */
static starfold_status_t refuse(starfold__run_t *run, starfold_status_t st, const char *msg)
{
    if (run->strategy->cross_refuse) run->strategy->cross_refuse(run->strategy, st, msg, &run->slots[0].options);
    return st;
}

/*
 * A collective this small (bytes per replica) is settled by its leader before the others leave the
 * rendezvous. Its reduction takes less time than waking the replicas once more: left to themselves,
 * each would wake from the rendezvous, find its results unfinished, sleep on them and be woken again
 * when they are. With the leader waiting, each is woken once and finds its results done (on this
 * 2-core machine, a step of run + all_reduce of one 4 KiB tensor on 8 replicas: 0.12 ms instead of
 * 0.14 with make bench-api). A larger one returns at once, so that a replica submits its next tasks while
 * the reduction runs.
 */
#define SF_SETTLED_COLLECTIVE_BYTES ((size_t)64 << 10)

static int small_collective(const starfold_value_t *values, size_t nv)
{
    size_t bytes = 0;
    for (size_t i = 0; i < nv && bytes <= SF_SETTLED_COLLECTIVE_BYTES; i++)
        bytes += values[i]->count * starfold_dtype_size(values[i]->dtype);
    return bytes <= SF_SETTLED_COLLECTIVE_BYTES;
}

/* Waits for the @m results of a small collective (small_collective()); the first error. */
static starfold_status_t settle(const starfold_value_t *results, size_t m)
{
    starfold_status_t st = STARFOLD_OK;
    for (size_t i = 0; i < m && st == STARFOLD_OK; i++) st = starfold_value_wait(results[i]);
    return st;
}

static starfold_status_t execute_all_reduce(starfold__run_t *run, long k, char *msg)
{
    slot_t *sl = run->slots;
    const int n = run->n;
    const size_t nv = sl[0].nvalues;
    for (int r = 1; r < n; r++) {
        if (sl[r].nvalues != nv) {
            snprintf(msg, SF_RUN_MSG_LEN, "all_reduce #%ld: replica %d passed %zu values, replica 0 passed %zu; the structure "
                     "of the value must be the same on every replica", k, r, sl[r].nvalues, nv);
            return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
        }
        if (sl[r].op != sl[0].op) {
            snprintf(msg, SF_RUN_MSG_LEN, "all_reduce #%ld: replica %d reduces with %s, replica 0 with %s", k, r,
                     starfold_op_name(sl[r].op), starfold_op_name(sl[0].op));
            return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
        }
    }
    /* The shapes, unless every replica passed what the kept pairs were made of: those passed this
     * check then, and a value's stamp names its shape (8,000 values read on the leader alone). */
    const ar_inputs_t *last = starfold__pool_ar_inputs(run->strategy);
    const int as_last = last && ar_inputs_match(last, sl, n, nv);
    for (size_t i = 0; !as_last && i < nv; i++)
        for (int r = 1; r < n; r++) {
            const starfold_value_t a = sl[0].values[i], b = sl[r].values[i];
            if (a->dtype != b->dtype || a->count != b->count) {
                snprintf(msg, SF_RUN_MSG_LEN, "all_reduce #%ld: value %zu is %zu x %s on replica %d but %zu x %s on replica 0; "
                         "the shapes must be the same on every replica", k, i, b->count, starfold_dtype_name(b->dtype),
                         r, a->count, starfold_dtype_name(a->dtype));
                return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
            }
        }

    starfold_status_t st = STARFOLD_OK;
    const starfold_strategy_t s = run->strategy;
    starfold__pair_t *pairs = NULL;
    int kept = 0; /* pairs kept by the pool (not freed here) */
    starfold_value_t *res = calloc(nv, sizeof *res);
    starfold_value_t *mine = calloc(nv * (size_t)n, sizeof *mine); /* [r * nv + i] */
    if (!res || !mine) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    /* The replicas hold their values until the collective is over: the values over them take no reference. */
    SF_CHECK_GOTO(ar_inputs_get(s, sl, n, nv, as_last, &pairs, &kept), st, out);
    /* Straight into one-component results, replica r's at mine[r * nv + i] (destinations in replica order).
     * Kept pairs are this very array, unchanged since the call that last used them (every replica
     * checked its own row of them, in its own thread): their batch plan is taken by its id, without
     * comparing a thousand stamps and destinations on the leader alone while the others wait. */
    st = starfold__strategy_all_reduce_split(s, sl[0].op, nv, pairs, &sl[0].options, "all_reduce", mine,
                                             kept ? &starfold__pool_ar_inputs(s)->plan_id : NULL);
    if (st == STARFOLD_ERR_NOT_SUPPORTED) { /* across processes: mirrored results, then each replica's component */
        SF_CHECK_GOTO(starfold__strategy_batch_reduce(s, sl[0].op, nv, pairs, &sl[0].options, "all_reduce", res), st, out);
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < nv; i++)
                SF_CHECK_GOTO(starfold__value_take_component(res[i], r, &mine[(size_t)r * nv + i]), st, out);
    } else if (st != STARFOLD_OK) {
        goto out;
    }
    if (small_collective(sl[0].values, nv)) SF_CHECK_GOTO(settle(mine, nv * (size_t)n), st, out);
    for (int r = 0; r < n; r++) memcpy(sl[r].results, &mine[(size_t)r * nv], sizeof *mine * nv);
    memset(mine, 0, sizeof *mine * nv * (size_t)n);
out:
    if (st != STARFOLD_OK) snprintf(msg, SF_RUN_MSG_LEN, "%s", starfold_last_error());
    for (size_t i = 0; mine && i < nv * (size_t)n; i++) starfold_value_destroy(mine[i]);
    for (size_t i = 0; res && i < nv; i++) starfold_value_destroy(res[i]);
    if (!kept) pairs_free(pairs, nv);
    free(res);
    free(mine);
    return st;
}

/*
 * The leader's all_gather: every replica's component gathered, replica order, onto every replica's
 * device (starfold__gather_parts(), counts that may differ), each replica taking its own component of
 * the mirrored result.
 */
static starfold_status_t execute_all_gather(starfold__run_t *run, long k, char *msg)
{
    slot_t *sl = run->slots;
    const int n = run->n;
    const starfold_strategy_t s = run->strategy;
    starfold_status_t st = STARFOLD_OK;
    for (int r = 1; r < n && st == STARFOLD_OK; r++) {
        const starfold_value_t a = sl[0].values[0], b = sl[r].values[0];
        if (a->dtype != b->dtype)
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "all_gather #%ld: the value is %s on replica %d but %s on "
                                 "replica 0", k, starfold_dtype_name(b->dtype), r, starfold_dtype_name(a->dtype));
    }
    if (st != STARFOLD_OK && !s->cross_gather) {
        snprintf(msg, SF_RUN_MSG_LEN, "%s", starfold_last_error());
        return st;
    }
    /* Each replica's component as one part, replica order; the counts may differ (TensorFlow's shapes
     * equal except along the axis). */
    starfold_view_t views[STARFOLD_MAX_DEVICES];
    size_t counts[STARFOLD_MAX_DEVICES];
    for (int r = 0; r < n; r++) {
        views[r] = starfold__value_view(sl[r].values[0], sl[r].comps[0]);
        counts[r] = sl[r].values[0]->count;
    }
    starfold__dest_t dest = { .n = n, .ctx = sl[0].values[0]->ctx };
    memcpy(dest.devices, s->devices, sizeof(int) * (size_t)n);
    starfold_value_t res = NULL;
    /* Across processes: every process's replicas, global replica order (a refusal here joins too). */
    if (s->cross_gather)
        st = s->cross_gather(s, st, sl[0].values[0]->dtype, 1, views, counts, 1, &dest, &sl[0].options, "all_gather", &res);
    else
        st = starfold__gather_parts(s->ops, s->topology, dest.ctx, sl[0].values[0]->dtype, n, s->devices, views, counts,
                                    &dest, "all_gather", &res);
    if (st == STARFOLD_OK && small_collective(&res, 1)) st = settle(&res, 1);
    for (int r = 0; r < n && st == STARFOLD_OK; r++) st = starfold__value_take_component(res, r, &sl[r].results[0]);
    if (st != STARFOLD_OK) {
        snprintf(msg, SF_RUN_MSG_LEN, "%s", starfold_last_error());
        for (int r = 0; r < n; r++) {
            starfold_value_destroy(sl[r].results[0]);
            sl[r].results[0] = NULL;
        }
    }
    starfold_value_destroy(res);
    return st;
}

/*
 * The leader's update of a mirrored variable: TensorFlow's merge_fn of MirroredVariable's update in
 * the replica context (values_util.apply_aggregation, then the update of every copy), as one graph.
 * What the replicas passed is regrouped as TensorFlow regroups it: the same object from every replica
 * is that one value (a non-distributed value, or a per-replica one given whole), else one component
 * from each replica, on its device, makes the per-replica value.
 */
static starfold_status_t execute_update(starfold__run_t *run, long k, char *msg)
{
    slot_t *sl = run->slots;
    const int n = run->n;
    const starfold_strategy_t s = run->strategy;
    const starfold__update_t update = run->kind == COLL_ASSIGN_ADD   ? SF_UPDATE_ADD
                                      : run->kind == COLL_ASSIGN_SUB ? SF_UPDATE_SUB
                                                                     : SF_UPDATE_ASSIGN;
    const char *name = coll_name(run->kind);
    const starfold_value_t var = sl[0].variable;
    for (int r = 1; r < n; r++)
        if (sl[r].variable != var) {
            snprintf(msg, SF_RUN_MSG_LEN, "%s #%ld: replica %d updates another variable than replica 0; a mirrored variable's "
                     "update is a collective of every replica on the same variable", name, k, r);
            return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
        }
    const starfold_variable_aggregation_t agg = var->var->agg;
    int same = 1;
    for (int r = 1; r < n; r++) same &= sl[r].values[0] == sl[0].values[0];
    const starfold_value_t v0 = sl[0].values[0];
    const int whole_distributed = same && v0->n > 1 && v0->kind == STARFOLD_VALUE_PER_REPLICA;
    if (same && !whole_distributed && n > 1 && agg == STARFOLD_AGGREGATION_SUM) {
        snprintf(msg, SF_RUN_MSG_LEN, "%s #%ld: A non-DistributedValues value (the same %s value on every replica) cannot be "
                 "reduced with the given reduce op ReduceOp.SUM: it would count %d times (TensorFlow refuses too); "
                 "give each replica a value of its own", name, k, v0->n == 1 ? "one-component" : "mirrored", n);
        return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
    }
    if (!same && agg != STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA)
        for (int r = 0; r < n; r++) {
            const starfold_value_t v = sl[r].values[0];
            if (v->devices[sl[r].comps[0]] != s->devices[r]) {
                snprintf(msg, SF_RUN_MSG_LEN, "%s #%ld: replica %d's value is on %s %d, not on the replica's device %d; each "
                         "replica's part of a per-replica value is on its own device", name, k, r,
                         v->devices[sl[r].comps[0]] == STARFOLD_DEVICE_HOST ? "the host," : "device",
                         v->devices[sl[r].comps[0]], s->devices[r]);
                return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
            }
        }

    starfold_status_t st = STARFOLD_OK;
    starfold_value_t pv = NULL, *src = malloc(sizeof *src * (size_t)n);
    int *comps = malloc(sizeof *comps * (size_t)n);
    if (!src || !comps) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    char fn[64];
    snprintf(fn, sizeof fn, "%s #%ld", name, k);
    const starfold_op_t op = agg == STARFOLD_AGGREGATION_MEAN ? STARFOLD_OP_MEAN : STARFOLD_OP_SUM;
    int reduce = 0, comp = -1;
    starfold_value_t value = v0;
    if (agg == STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA) {
        /* Replica 0's value: its component (of a whole per-replica value, component 0), alone. */
        const int c = whole_distributed ? 0 : sl[0].comps[0];
        SF_CHECK_GOTO(starfold__value_borrow_components(v0->ctx, STARFOLD_VALUE_PER_REPLICA, 1, &v0->devices[c], &v0, &c,
                                                        &pv),
                      st, out);
        value = pv;
    } else if (whole_distributed) {
        reduce = 1; /* the per-replica value every replica passed, reduced as it is */
    } else if (!same) {
        for (int r = 0; r < n; r++) {
            src[r] = sl[r].values[0];
            comps[r] = sl[r].comps[0];
        }
        SF_CHECK_GOTO(starfold__value_borrow_components(v0->ctx, STARFOLD_VALUE_PER_REPLICA, n, s->devices, src, comps, &pv),
                      st, out);
        value = pv;
        reduce = 1;
    } else if (s->cross_process) {
        /* One value for this process's replicas (its only replica's, or the same object from each) is
         * still one of several processes' values: TensorFlow all-reduces a worker's non-distributed
         * value across the workers (SUM with several replicas here was refused above). */
        reduce = 1;
    } /* else: one value, MEAN (or one replica): the value itself, each copy from its component beside it or copied */
    st = starfold__strategy_update_variable(s, var, update, value, reduce, agg == STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA, op,
                                            comp, &sl[0].options, fn);
out:
    if (st != STARFOLD_OK) snprintf(msg, SF_RUN_MSG_LEN, "%s", starfold_last_error());
    starfold_value_destroy(pv);
    free(src);
    free(comps);
    return st;
}

/* The leader's merge_call: merge_fn of replica 0, once, in the cross-replica context. */
static starfold_status_t execute_merge_call(starfold__run_t *run, char *msg)
{
    const int n = run->n;
    const size_t nn = n > 0 ? (size_t)n : 1;
    void **args = calloc(nn, sizeof *args);
    void **results = calloc(nn, sizeof *results);
    if (!args || !results) {
        free(args);
        free(results);
        snprintf(msg, SF_RUN_MSG_LEN, "merge_call: out of memory");
        return STARFOLD_ERR_OUT_OF_MEMORY;
    }
    for (int r = 0; r < n; r++) args[r] = run->slots[r].arg;
    struct starfold_replica_context *saved = starfold__tls_rc;
    starfold__tls_rc = NULL; /* cross-replica context */
    starfold_status_t st = run->slots[0].fn(run->strategy, n, args, results);
    starfold__tls_rc = saved;
    if (st != STARFOLD_OK) {
        const char *why = starfold_last_error();
        snprintf(msg, SF_RUN_MSG_LEN, "merge_fn failed (%s)%s%s", starfold_status_string(st), why[0] ? ": " : "", why);
    } else {
        for (int r = 0; r < n; r++) run->slots[r].result = results[r];
    }
    free(args);
    free(results);
    return st;
}

starfold_status_t starfold__collective_execute(starfold__run_t *run, long k, char *msg)
{
    for (int r = 0; r < run->n; r++)
        if (run->slots[r].local_status != STARFOLD_OK) {
            snprintf(msg, SF_RUN_MSG_LEN, "%s #%ld: replica %d: %.440s", coll_name(run->kind), k, r, run->slots[r].local_msg);
            /* Across processes the others are about to wait for this one: they get its refusal (every
             * collective but merge_call crosses the processes; an update does since each replica's value
             * is reduced, or broadcast from global replica 0, over all of them). */
            if (run->strategy->cross_refuse && run->kind != COLL_MERGE_CALL)
                run->strategy->cross_refuse(run->strategy, run->slots[r].local_status, msg,
                                            &run->slots[r].options);
            return run->slots[r].local_status;
        }
    return run->kind == COLL_ALL_REDUCE   ? execute_all_reduce(run, k, msg)
           : run->kind == COLL_ALL_GATHER ? execute_all_gather(run, k, msg)
           : run->kind == COLL_MERGE_CALL ? execute_merge_call(run, msg)
                                          : execute_update(run, k, msg);
}

