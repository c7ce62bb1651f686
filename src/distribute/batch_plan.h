/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * What a batch reduce works out before it submits (batch_groups.c, batch_reduce.c): each pair's classification,
 * the groups and their graphs, where each group's results go, and the arena's persistent bindings
 * it started; and the cache of these plans that lets a training loop's next call over the same
 * list skip all of it (batch_plan.c). Private to the distribute layer.
 */
#ifndef STARFOLD_SRC_DISTRIBUTE_BATCH_PLAN_H
#define STARFOLD_SRC_DISTRIBUTE_BATCH_PLAN_H

#include "distribute/distribute.h"

/* One pair's graph: sources and destinations as graph devices (the host mapped to a device). */
typedef struct starfold__item {
    starfold__path_t path;
    int nsrc, src[STARFOLD_MAX_DEVICES];
    int ndst, dst[STARFOLD_MAX_DEVICES];
    int reduce_device;   /* reduce-to-one graphs: R; -1 for the all-reduce */
    int host_as;         /* the device standing for the host in this pair, -1 when no host is involved */
    int group;
} starfold__item_t;

/*
 * A group's results of one output dtype: one block per destination device, the results one after
 * another in it (reserve_results() in batch_reduce.c). Arrays owned by the group.
 */
typedef struct starfold__result_layout {
    starfold_dtype_t dtype;
    size_t nk;
    size_t *idx;         /* [nk] pair index of each result */
    size_t *cnt;         /* [nk] its elements */
    const int **devs;    /* [nk] its destination devices in the pair's order (the pairs', or the plan's copy) */
    int same_order;      /* every devs[j] lists the group's destination devices in one order (a split result's
                          * component c is then on the group's device c: no search per result) */
} starfold__result_layout_t;

/* Where a call's result blocks were: [layout][device] = the block's bucket vector and first element. */
typedef starfold_view_t starfold__blocks_t[STARFOLD_DTYPE_COUNT][STARFOLD_MAX_DEVICES];

/* An arena binding started for a group, and the result blocks it was bound with (its output views). */
#define SF_PLAN_BINDINGS 2   /* results freed before the next step use one, kept one step longer two */
typedef struct starfold__binding {
    unsigned long long ticket;  /* 0: none */
    starfold__blocks_t blocks;
} starfold__binding_t;

/* A group of items compiled into one graph. */
typedef struct starfold__group {
    size_t first;        /* first item: its sources and destinations are the graph's */
    size_t *members;     /* item indices, in input order */
    size_t nmembers;
    size_t *run_first;   /* [nruns + 1] owned: run r is members [run_first[r], run_first[r + 1]), graph tensor r;
                          * NULL: every member is a run of its own (batch_groups.c, starfold__plan_runs()) */
    size_t nruns;        /* with run_first only */
    starfold_graph_t graph;
    int cached;          /* graph borrowed from the ops' cache (released, not destroyed) */
    unsigned long long serial; /* the cache entry's serial number (names the graph), 0 when not cached */
    unsigned long long ticket; /* this call's arena binding, 0 when not submitted through the arena */
    starfold__dist_req_t *req; /* this call's submission */
    int nlayouts;
    starfold__result_layout_t layouts[STARFOLD_DTYPE_COUNT];
    struct starfold__group_blocks *where; /* owned, made with the layouts */
} starfold__group_t;

/* Where a group's results go: this call's blocks, and (kept by a plan) the bindings of earlier calls. */
typedef struct starfold__group_blocks {
    starfold__blocks_t blocks;
    starfold__binding_t bind[SF_PLAN_BINDINGS];
    int next_bind;
} starfold__group_blocks_t;

/*
 * A batch reduce's plan, kept in its cross-device ops and found again by a call with the same key:
 * the context, topology, op, split, the options a compile reads, and for every pair its value's
 * stamp (which names the value's devices and storage) and its resolved destination. Owns its items,
 * groups (their layouts, and one borrow of each group's graph from the ops' cache) and key arrays.
 * Used by one call at a time (borrowed).
 */
typedef struct starfold__batch_plan {
    starfold_context_t ctx;
    starfold_topology_t topo;
    starfold_op_t op;
    int split;
    int promote_integer_mean;
    int64_t bytes_per_pack;
    size_t n;
    unsigned long long *stamps;  /* [n] */
    starfold__dest_t *dests;     /* [n] */
    starfold__item_t *items;     /* [n] */
    starfold__group_t *groups;   /* [ngroups] */
    size_t ngroups;
    size_t *member_store;        /* [n] the groups' members */
    unsigned long long used;     /* last use, for LRU eviction */
    unsigned long long id;       /* unique among every ops' plans, never 0 (starfold__plan_find()'s @known) */
    int borrowed;                /* a call is using it */
} starfold__batch_plan_t;

/*
 * The plan in @ops for exactly this call, borrowed (NULL: none, or in use by another call). O(n)
 * comparisons, no allocation. Given back with starfold__plan_return().
 */
starfold__batch_plan_t *starfold__plan_find(starfold_cross_device_ops_t ops, starfold_context_t ctx,
                                            starfold_topology_t topo, starfold_op_t op, int split,
                                            const starfold_communication_options_t *options, size_t n,
                                            const starfold__pair_t *pairs);
/*
 * Plan @id of @ops, borrowed, when the scalar part of its key is this call's (NULL: gone, changed or
 * in use). For a caller vouching that its pairs are the very ones a call that used plan @id had,
 * unchanged since (the same values, stamps and destinations: the replica context's kept pairs,
 * replica_collectives.c): no comparison per pair.
 */
starfold__batch_plan_t *starfold__plan_find_id(starfold_cross_device_ops_t ops, starfold_context_t ctx,
                                               starfold_topology_t topo, starfold_op_t op, int split,
                                               const starfold_communication_options_t *options, size_t n,
                                               unsigned long long id);
void starfold__plan_return(starfold_cross_device_ops_t ops, starfold__batch_plan_t *plan);
/* Whether a call over @pairs can be kept as a plan: no input is a regrouped value. */
int starfold__plan_keyable(size_t n, const starfold__pair_t *pairs);
/*
 * Keeps what a call worked out as a plan of @ops: takes *@items, *@groups (their layouts and graph
 * borrows) and *@member_store (set to NULL) when it returns 1; on 0 (out of memory) they stay the
 * caller's. Evicts the least recently used plan not in use when the cache is full. *@id (when not
 * NULL): the kept plan's id, 0 when it was not kept.
 */
int starfold__plan_keep(starfold_cross_device_ops_t ops, starfold_context_t ctx, starfold_topology_t topo,
                        starfold_op_t op, int split, const starfold_communication_options_t *options, size_t n,
                        const starfold__pair_t *pairs, starfold__item_t **items, starfold__group_t **groups,
                        size_t ngroups, size_t **member_store, unsigned long long *id);
/* Frees every plan of @ops (its destruction). */
void starfold__plans_destroy(starfold_cross_device_ops_t ops);

/* Frees a group's layouts, and gives its graph back (to the ops' cache, or destroys it). */
void starfold__group_fini(starfold_cross_device_ops_t ops, starfold__group_t *g);

/* ------------------------------------------------------------------------------------------------
 * Pairs into groups (batch_groups.c), shared with the submission (batch_reduce.c) and the updates
 * (ops_update.c)
 */

/* @device as a graph device: the host stands as @host_as. */
int starfold__map_host(int device, int host_as);
/* Pair @p's path and graph devices under @ops's dispatch (TensorFlow's reduce_implementation). */
void starfold__ops_classify(starfold_cross_device_ops_t ops, const starfold__pair_t *p, starfold__item_t *it);
/* Whether two pairs' graphs have the same sources, destinations and reduce device (one group). */
int starfold__items_same_graph(const starfold__item_t *a, const starfold__item_t *b);
/* The pair's graph devices exist in a topology of @ntopo devices and a context of @nctx. */
starfold_status_t starfold__check_item_devices(const char *fn, const starfold__item_t *it, int ntopo, int nctx,
                                               size_t pair);
/* The component of a value over @devices (@n of them) that graph device @gdev reads; -1 for none. */
int starfold__component_for(const int *devices, int n, int gdev, int host_as);
/* Whether members laid out one after another may reduce as one tensor (no packs by tensor asked). */
int starfold__ops_may_coalesce(starfold_cross_device_ops_t ops, const starfold_communication_options_t *options);
/* Whether view @vb of @b follows view @va of @a in memory on each of @n devices. */
int starfold__views_follow(starfold_value_t a, const starfold_view_t *va, starfold_value_t b,
                           const starfold_view_t *vb, int n);
/* Group @g's runs: members one after another in memory, one tensor of its graph each. */
starfold_status_t starfold__plan_runs(const starfold__pair_t *pairs, const starfold__item_t *items,
                                      starfold__group_t *g, int coalesce, const char *fn);
size_t starfold__group_runs(const starfold__group_t *g);
size_t starfold__group_run_begin(const starfold__group_t *g, size_t r);
size_t starfold__group_run_end(const starfold__group_t *g, size_t r);
/* Group @g's graph compiled, or taken from the ops' cache (released with starfold__ops_cache_release()). */
starfold_status_t starfold__ops_compile_group(starfold_cross_device_ops_t ops, starfold_topology_t topo,
                                              starfold_op_t op, const starfold__pair_t *pairs,
                                              const starfold__item_t *items, starfold__group_t *g,
                                              const starfold_communication_options_t *options, const char *fn);
void starfold__ops_cache_release(starfold_cross_device_ops_t ops, starfold_graph_t graph);

#endif /* STARFOLD_SRC_DISTRIBUTE_BATCH_PLAN_H */
