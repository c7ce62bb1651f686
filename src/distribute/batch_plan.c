/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The cache of batch plans of a cross-device ops (batch_plan.h).
 *
 *   ops  --plans[SF_PLAN_CACHE]-->  key:  ctx, topology, op, split, options a compile reads,
 *                                         stamps[n] of the values, dests[n]
 *                                   body: items[n], groups (graph borrowed, result layouts,
 *                                         arena bindings of earlier calls)
 *
 * Why. A training loop reduces the same list every step. Classifying and grouping 1,000 pairs,
 * working out the results' layout and matching 16,000 views against the arena's persistent
 * submissions cost about as much as the reduction of 4 MB; with the plan, a step compares two
 * arrays, allocates its results and restarts the binding.
 *
 * Invariants.
 * - A value's stamp is never the same for two values or two layouts of one value (values.c), so a
 *   plan whose stamps all match was made over values with the same devices and views as now; a
 *   value destroyed since simply never matches again (its plan goes by LRU eviction). The plan never
 *   dereferences the values it saw.
 * - Regrouped values are never keyed (their parts can move without their stamp changing).
 * - A plan's id names it alone, across every ops, for the life of the process: a caller that vouches
 *   for its pairs (starfold__plan_find_id()) finds that plan or none.
 * - The plans are under the ops' cache_lock; a plan in use (borrowed) is neither found nor evicted,
 *   so its groups' bindings are updated by one call at a time.
 */
#include "config.h"

#include "distribute/batch_plan.h"

static void plan_free(starfold_cross_device_ops_t ops, starfold__batch_plan_t *p)
{
    if (!p) return;
    for (size_t g = 0; g < p->ngroups; g++) starfold__group_fini(ops, &p->groups[g]);
    free(p->groups);
    free(p->items);
    free(p->member_store);
    free(p->stamps);
    free(p->dests);
    free(p);
}

static int dest_equal(const starfold__dest_t *a, const starfold__dest_t *b)
{
    return a->n == b->n && a->host == b->host && a->ctx == b->ctx &&
           !memcmp(a->devices, b->devices, sizeof(int) * (size_t)a->n);
}

/* The scalar part of the key. */
static int head_matches(const starfold__batch_plan_t *p, starfold_context_t ctx, starfold_topology_t topo,
                        starfold_op_t op, int split, const starfold_communication_options_t *o, size_t n)
{
    return p->ctx == ctx && p->topo == topo && p->op == op && p->split == split && p->n == n &&
           p->promote_integer_mean == o->promote_integer_mean && p->bytes_per_pack == o->bytes_per_pack;
}

static int pairs_match(const starfold__batch_plan_t *p, const starfold__pair_t *pairs)
{
    for (size_t i = 0; i < p->n; i++)
        if (__atomic_load_n(&pairs[i].value->stamp, __ATOMIC_RELAXED) != p->stamps[i] ||
            !dest_equal(&pairs[i].dest, &p->dests[i]))
            return 0;
    return 1;
}

int starfold__plan_keyable(size_t n, const starfold__pair_t *pairs)
{
    for (size_t i = 0; i < n; i++)
        if (starfold__value_regrouped(pairs[i].value)) return 0;
    return 1;
}

/* The plan of @ops matching (a borrowed one never does), borrowed; NULL for none. */
static starfold__batch_plan_t *find(starfold_cross_device_ops_t ops, starfold_context_t ctx, starfold_topology_t topo,
                                    starfold_op_t op, int split, const starfold_communication_options_t *options, size_t n,
                                    const starfold__pair_t *pairs, unsigned long long id)
{
    starfold__batch_plan_t *found = NULL;
    pthread_mutex_lock(&ops->cache_lock);
    for (int k = 0; k < SF_PLAN_CACHE && !found; k++) {
        starfold__batch_plan_t *p = ops->plans[k];
        if (p && !p->borrowed && head_matches(p, ctx, topo, op, split, options, n) &&
            (pairs ? pairs_match(p, pairs) : p->id == id))
            found = p;
    }
    if (found) {
        ops->plan_hits++;
        found->borrowed = 1;
        found->used = ++ops->clock;
    }
    pthread_mutex_unlock(&ops->cache_lock);
    return found;
}

starfold__batch_plan_t *starfold__plan_find(starfold_cross_device_ops_t ops, starfold_context_t ctx,
                                            starfold_topology_t topo, starfold_op_t op, int split,
                                            const starfold_communication_options_t *options, size_t n,
                                            const starfold__pair_t *pairs)
{
    return find(ops, ctx, topo, op, split, options, n, pairs, 0);
}

starfold__batch_plan_t *starfold__plan_find_id(starfold_cross_device_ops_t ops, starfold_context_t ctx,
                                               starfold_topology_t topo, starfold_op_t op, int split,
                                               const starfold_communication_options_t *options, size_t n,
                                               unsigned long long id)
{
    return id ? find(ops, ctx, topo, op, split, options, n, NULL, id) : NULL;
}

void starfold__plan_return(starfold_cross_device_ops_t ops, starfold__batch_plan_t *plan)
{
    pthread_mutex_lock(&ops->cache_lock);
    plan->borrowed = 0;
    pthread_mutex_unlock(&ops->cache_lock);
}

int starfold__plan_keep(starfold_cross_device_ops_t ops, starfold_context_t ctx, starfold_topology_t topo,
                        starfold_op_t op, int split, const starfold_communication_options_t *options, size_t n,
                        const starfold__pair_t *pairs, starfold__item_t **items, starfold__group_t **groups,
                        size_t ngroups, size_t **member_store, unsigned long long *id)
{
    if (id) *id = 0;
    starfold__batch_plan_t *p = calloc(1, sizeof *p);
    if (!p) return 0;
    p->stamps = malloc(sizeof *p->stamps * n);
    p->dests = malloc(sizeof *p->dests * n);
    if (!p->stamps || !p->dests) {
        free(p->stamps);
        free(p->dests);
        free(p);
        return 0;
    }
    *p = (starfold__batch_plan_t){ .ctx = ctx, .topo = topo, .op = op, .split = split,
                                   .promote_integer_mean = options->promote_integer_mean,
                                   .bytes_per_pack = options->bytes_per_pack, .n = n, .stamps = p->stamps,
                                   .dests = p->dests, .items = *items, .groups = *groups, .ngroups = ngroups,
                                   .member_store = *member_store };
    static unsigned long long last_id; /* ids unique across every ops: a caller's @known never names another's */
    p->id = __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED);
    for (size_t i = 0; i < n; i++) {
        p->stamps[i] = __atomic_load_n(&pairs[i].value->stamp, __ATOMIC_RELAXED);
        p->dests[i] = pairs[i].dest;
    }
    /* The layouts pointed at the caller's destinations: at the plan's copy from now on. */
    for (size_t g = 0; g < ngroups; g++)
        for (int k = 0; k < p->groups[g].nlayouts; k++) {
            starfold__result_layout_t *l = &p->groups[g].layouts[k];
            for (size_t j = 0; j < l->nk; j++) l->devs[j] = p->dests[l->idx[j]].devices;
        }
    *items = NULL;
    *groups = NULL;
    *member_store = NULL;

    /* Into a free entry, else in place of the least recently used one not in use. */
    starfold__batch_plan_t *evicted = NULL;
    pthread_mutex_lock(&ops->cache_lock);
    int slot = -1;
    for (int k = 0; k < SF_PLAN_CACHE; k++) {
        if (!ops->plans[k]) {
            slot = k;
            break;
        }
        if (!ops->plans[k]->borrowed && (slot < 0 || ops->plans[k]->used < ops->plans[slot]->used)) slot = k;
    }
    if (slot >= 0) {
        evicted = ops->plans[slot];
        if (id) *id = p->id;
        p->used = ++ops->clock;
        ops->plans[slot] = p;
        p = NULL;
    }
    pthread_mutex_unlock(&ops->cache_lock);
    plan_free(ops, evicted); /* gives graphs back to the cache: outside its lock */
    plan_free(ops, p);       /* every plan in use: this one is not kept */
    return 1;
}

void starfold__plans_destroy(starfold_cross_device_ops_t ops)
{
    for (int k = 0; k < SF_PLAN_CACHE; k++) {
        plan_free(ops, ops->plans[k]);
        ops->plans[k] = NULL;
    }
}
