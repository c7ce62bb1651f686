/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Private layout of the tf.distribute layer (include/starfold/distribute.h) and the functions its
 * files share. Never installed.
 *
 *   values.c, value_shell.h  values: their layout, the submission records they keep, host vectors,
 *                          their lifetime
 *   value_api.c            the public value functions: create, wrap, regroup, read, write
 *   destinations.c         destinations resolved to device lists
 *   arena.c                the context's buckets that values and results live in
 *   options.c              communication options
 *   cross_device_ops.c     cross-device ops: the objects and the dispatch of their public methods
 *   batch_groups.c         a batch's pairs classified and grouped into graphs (batch_plan.h)
 *   batch_reduce.c         a batch's results laid out and its groups submitted
 *   batch_plan.c           the kept plans of a training loop's repeated batches
 *   ops_update.c           a variable's update, broadcasts, copies
 *   gather.c, indexed_slices.c  gather and sparse values
 *   strategy.c             strategies and their cross-replica methods
 *   variables.c            mirrored and sync-on-read variables
 *   replica_*.c, rendezvous.c  strategy.run and the replica context (replica.h)
 *   mwms.c                 MultiWorkerMirroredStrategy over the process layer (its own library)
 *
 * This layer sits above the executor and calls it through its public API. The only StarPU calls it
 * makes itself are in values.c and value_api.c, for values over handles: validating a wrapped handle
 * (interface id, element count and size) and registering / unregistering the host-memory vectors
 * that hold results on the host (the executor only allocates on devices).
 */
#ifndef STARFOLD_SRC_DISTRIBUTE_H
#define STARFOLD_SRC_DISTRIBUTE_H

#include <pthread.h>

#include <starfold/distribute.h>

#include "base/common.h"
#include "distribute/arena.h"

/* ------------------------------------------------------------------------------------------------
 * Submission records
 *
 * One starfold_submit() may write several values (a batch reduce writes one result per pair), and a
 * value may be written by several submissions (starfold_update_assign): values keep shared,
 * reference-counted records of the submissions writing them. Several threads may wait on a record
 * at once (the executor's wait is safe from several threads); the first outcome is kept, and the
 * waiters after a success return without the executor.
 */
typedef struct starfold__dist_req {
    int refs;                 /* atomic */
    pthread_mutex_t lock;
    starfold_request_t req;   /* destroyed with the last reference */
    int finished;             /* under lock: waited, status final (the first outcome) */
    starfold_status_t status; /* under lock */
    int done_ok;              /* atomic: finished with STARFOLD_OK (set once, after finished and status) */
} starfold__dist_req_t;

/* A record over @req with @refs references (the executor request is owned from now on); NULL when out of memory. */
starfold__dist_req_t *starfold__dist_req_new(starfold_request_t req, int refs);
void starfold__dist_req_release(starfold__dist_req_t *r);
/* Waits (seconds < 0: without limit); the submission's outcome, or STARFOLD_ERR_TIMEOUT. */
starfold_status_t starfold__dist_req_wait(starfold__dist_req_t *r, double seconds);

/* ------------------------------------------------------------------------------------------------
 * Values
 */

/* How a component's handle is released with the value. */
enum {
    SF_OWN_NONE = 0, /* the application's (wrapped) or borrowed from a part */
    SF_OWN_DEVICE,   /* starfold_vector_create(): starfold_vector_destroy() */
    SF_OWN_HOST      /* starfold__host_vector_create(): starfold__host_vector_destroy() */
};

/*
 * What makes a value a variable (starfold_strategy_create_variable(), variables.c): how its copies
 * are kept, TensorFlow's synchronization and aggregation, and what its updates and reads need of the
 * strategy that made it, held by reference so that the variable outlives the strategy as every value
 * does. Immutable once made.
 */
struct starfold__dest;

typedef struct starfold__variable {
    starfold_variable_synchronization_t sync; /* ON_WRITE or ON_READ (AUTO resolved) */
    starfold_variable_aggregation_t agg;
    starfold_strategy_kind_t strategy_kind;
    int plain;                                /* OneDeviceStrategy: TensorFlow's ordinary tf.Variable */
    int num_replicas;                         /* num_replicas_in_sync of the strategy */
    int cross_process;                        /* MultiWorkerMirroredStrategy: reductions cross processes */
    /*
     * MultiWorkerMirroredStrategy: a sync-on-read variable's cross-replica read, its copies reduced
     * with @op over every replica of every process onto @dest (mwms.c), through @group (the strategy's
     * process group, borrowed: it must still exist when the variable is read).
     */
    void *group;
    starfold_status_t (*cross_reduce)(const struct starfold__variable *info, starfold_value_t var, starfold_op_t op,
                                      const struct starfold__dest *dest, const char *fn, starfold_value_t *result);
    starfold_cross_device_ops_t ops;          /* the strategy's (a reference) */
    starfold_topology_t topology;             /* the strategy's (a reference) */
    starfold_communication_options_t options; /* the strategy's when the variable was made */
    /* Frees this record and drops its references (variables.c): values.c calls it, knowing nothing of
     * cross-device ops. */
    void (*release)(struct starfold__variable *info);
} starfold__variable_t;

/*
 * What a regrouped value (starfold_value_regroup()) has beyond a plain one, and what a component
 * taken from it keeps: NULL in every other value, so that the values a training step makes by the
 * thousand stay small.
 */
typedef struct starfold__value_group {
    /*
     * Component c is component origin_comp[c] of origin[c] (one of the parts, which hold the
     * references), looked up at every use, so that a part moving out of the arena moves for the
     * group too. NULL: not regrouped (a component taken from a regrouped value keeps only parts).
     */
    starfold_value_t *origin;
    int *origin_comp;
    starfold_value_t *parts; /* values whose handles this one borrows, one reference each */
    int nparts;
} starfold__value_group_t;

/*
 * A value: this struct, then its rows (values.c's shell_init(), n entries each, by decreasing
 * alignment): handles, host buffers, ranges, offsets, devices, ownership, and for a value that is
 * not in a slab its own mutex. A one-component value of a slab is 160 bytes: a replica's 1,000
 * results of a step are made, waited for and freed in as few cache lines as they can be.
 */
struct starfold_value {
    int refs;                     /* atomic */
    int n;                        /* components */
    /*
     * atomic: names this value's storage as it is now, never the same for two values or two layouts:
     * given at creation and again whenever a component's handle or offset changes (a move out of the
     * arena, a component taken away). A cached batch plan (batch_plan.c) that saw a stamp may trust
     * the value's devices and views without looking at them. Regrouped values (origin) do not
     * follow their parts' moves: plans are never made over them.
     */
    unsigned long long stamp;
    starfold_context_t ctx;
    size_t count;
    starfold_value_kind_t kind;
    starfold_dtype_t dtype;
    int *devices;                 /* [n] device or STARFOLD_DEVICE_HOST (a row of the shell) */
    /*
     * A value made in a block (starfold__values_alloc_block()) lives in its block's slab, which holds
     * the references on the ranges of its components (its ranges row then holds none) and is freed
     * with its last value. NULL for other values.
     */
    struct starfold__value_slab *slab;
    /*
     * Guards the records below and the rows: the slab's for a value of a slab (its values are made,
     * used and freed by one thread at a time in the common case, and no path holds two values'
     * locks unless the second is a value of its own, not of a slab), else the value's own.
     */
    pthread_mutex_t *lock;
    starfold__variable_t *var;    /* NULL: not a variable; owned */
    starfold__value_group_t *group; /* NULL: not regrouped, no parts; owned */
    starfold__dist_req_t **writers;      /* submissions writing this value, one reference each */
    size_t nwriters, capwriters;
    starfold__dist_req_t *writer0;       /* writers' first storage (a result has one): writers == &writer0
                                            until a second record, then a malloc'ed array */
};

/* Whether @v is a regrouped value (whose components follow its parts). */
static inline int starfold__value_regrouped(starfold_value_t v)
{
    return v->group && v->group->origin;
}

/* A value of @n components in the context's arena (views of its buckets), content undefined. */
starfold_status_t starfold__value_alloc(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                 starfold_dtype_t dtype, size_t count, starfold_value_t *value);
/*
 * @num_values values of @n components, value i of counts[i] elements, one after another in one
 * arena block per device of @devices (values of no element get handles of their own). Value i's
 * components are on value_devices[i] (the same devices in another order) when @value_devices and it
 * are not NULL, else on @devices. Content undefined; on failure nothing is left allocated. When
 * @blocks is not NULL, blocks[c] is where the block on devices[c] starts ({NULL, 0} for none), which
 * with @counts says where every value lies.
 */
starfold_status_t starfold__values_alloc_block(starfold_context_t ctx, starfold_value_kind_t kind, int n,
                                               const int *devices, starfold_dtype_t dtype, size_t num_values,
                                               const size_t *counts, const int *const *value_devices,
                                               starfold_value_t *values, starfold_view_t *blocks);
/*
 * starfold__values_alloc_block() in two steps, so that the work writing a block can start before its
 * values exist. reserve: the block's memory on every device (blocks[c] as there) and room for its
 * values, *@block NULL when no value has elements; on failure nothing is left. fill: the values, with
 * the same arguments as the reserve's (and @kind, @value_devices as in alloc_block); it takes @block,
 * failing or not. cancel: gives back a reserved block whose values will not be made (what was
 * written into it must be finished first).
 */
typedef struct starfold__value_slab starfold__values_block_t;
starfold_status_t starfold__values_block_reserve(starfold_context_t ctx, int n, const int *devices, starfold_dtype_t dtype,
                                                 size_t num_values, const size_t *counts, starfold_view_t *blocks,
                                                 starfold__values_block_t **block);
starfold_status_t starfold__values_block_fill(starfold__values_block_t *block, starfold_context_t ctx,
                                              starfold_value_kind_t kind, int n, const int *devices, starfold_dtype_t dtype,
                                              size_t num_values, const size_t *counts, const int *const *value_devices,
                                              starfold_value_t *values);
void starfold__values_block_cancel(starfold__values_block_t *block);
/* A value of @n components over fresh handles of their own (SF_OWN_DEVICE / SF_OWN_HOST), content undefined. */
starfold_status_t starfold__value_alloc_own(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                 starfold_dtype_t dtype, size_t count, starfold_value_t *value);
/*
 * A value borrowing component comps[i] of srcs[i] for each component i (views stay views, taking a
 * reference on their bucket), without validation; the sources must outlive it or be its parts.
 */
starfold_status_t starfold__value_borrow_components(starfold_context_t ctx, starfold_value_kind_t kind, int n,
                                                    const int *devices, const starfold_value_t *srcs, const int *comps,
                                                    starfold_value_t *value);
/*
 * @nv values of @n components on @devices, value k's component i borrowing component
 * comps[i * nv + k] of srcs[i * nv + k] (context, dtype and count those of srcs[k]), in one slab taking no
 * reference on the sources' ranges: the sources must outlive every use of the values (the
 * all_reduce leader's values over the replicas' own, used while the replicas hold them), and memory
 * of its own, so the values may be destroyed after their context. On failure nothing is left.
 */
starfold_status_t starfold__values_borrow_block(starfold_value_kind_t kind, int n, const int *devices, size_t nv,
                                                const starfold_value_t *srcs, const int *comps, starfold_value_t *values);
/* Component @c as a view: its own handle at offset 0, or its range of its bucket. */
starfold_view_t starfold__value_view(starfold_value_t v, int c);
/* Every component's view into views[0 .. n-1] (one lock); whether all of them live in the arena. */
int starfold__value_views(starfold_value_t v, starfold_view_t *views);
/* Whether component @c lives in the arena (else it has a handle of its own, or a caller's). */
int starfold__value_in_arena(starfold_value_t v, int c);
/*
 * Component @c's handle of its own, for code that hands a tensor's handle to someone else (a
 * caller's update function, starfold_value_handle()): a component in the arena first moves out to a
 * new handle (a copy, ordered after the tasks writing it); it stays there. NULL on failure (detail
 * in starfold_last_error()).
 */
starpu_data_handle_t starfold__value_handle(starfold_value_t v, int c);
/* A variable's storage: as starfold_value_create(), with handles of their own; @fn names the call in messages. */
starfold_status_t starfold__value_create_own(const char *fn, starfold_context_t ctx, starfold_value_kind_t kind, int n,
                                             const int *devices, starfold_dtype_t dtype, size_t count, const void *init,
                                             starfold_value_t *value);
/* A value borrowing @handles (SF_OWN_NONE), without validation: internal wrappers only. */
starfold_status_t starfold__value_borrow(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                  const starpu_data_handle_t *handles, starfold_dtype_t dtype, size_t count,
                                  starfold_value_t *value);
/* Records that @r writes @v (adds a reference to @r). Drops records of submissions already finished well. */
starfold_status_t starfold__value_add_writer(starfold_value_t v, starfold__dist_req_t *r);
/*
 * The first record of a value nobody else sees yet (a result being made: no writer, no other
 * thread): @r recorded without lock or allocation, with a reference of its own, or one its slab
 * holds for all of the slab's values (one per block of results, whatever their number).
 */
void starfold__value_set_first_writer(starfold_value_t v, starfold__dist_req_t *r);
/*
 * A one-component value holding component @c of @v: the handle's ownership moves to it (when @v owned
 * it) and @v's writer records are shared. Used to hand each replica its part of an all-reduce result.
 */
starfold_status_t starfold__value_take_component(starfold_value_t v, int c, starfold_value_t *out);
/* Index of the component of @v on @device, -1 when none. */
int starfold__value_component_on(starfold_value_t v, int device);

/* ------------------------------------------------------------------------------------------------
 * Destinations, resolved: an ordered list of devices, or the host.
 */
typedef struct starfold__dest {
    int n;
    int devices[STARFOLD_MAX_DEVICES];
    int host;                 /* 1: the host (n = 1, devices[0] = STARFOLD_DEVICE_HOST) */
    starfold_context_t ctx;   /* of the destination value, NULL otherwise */
} starfold__dest_t;

/* Checks a public destination (TensorFlow's validate_destinations / check_destinations) and resolves it. */
starfold_status_t starfold__dest_resolve(const starfold_destination_t *d, const char *fn, starfold__dest_t *out);
/* TensorFlow's _devices_match: the same set of devices (order-insensitive). */
int starfold__devices_match(int na, const int *a, int nb, const int *b);

/* ------------------------------------------------------------------------------------------------
 * Cross-device ops
 */
/*
 * Compiled graphs kept for the next identical reduction (a training loop reduces the same gradients
 * every step; "auto" compiles every algorithm to choose). Keyed by everything a compile reads:
 * topology, algorithm, op, devices, tensors, options. A graph in use by a submission is never evicted.
 */
#define SF_OPS_CACHE 16
#define SF_PLAN_CACHE 4    /* batch plans kept (batch_plan.h) */
typedef struct starfold__graph_cache_entry {
    unsigned char *key;
    size_t keylen;
    starfold_graph_t graph;            /* owned by the cache */
    unsigned long long used;           /* last use, for LRU eviction */
    int borrowed;                      /* submissions using it now */
    unsigned long long serial;         /* names this graph for persistent submissions (arena.c), never reused */
} starfold__graph_cache_entry_t;

struct starfold_cross_device_ops {
    int refs;                          /* atomic */
    const char *algorithm;             /* the registry's static name */
    int all_reduce;                    /* 0: reduce-to-one (ReductionToOneDevice); 1: all-reduce algorithm */
    starfold_algo_options_t options;
    starfold_topology_t topology;      /* NULL: the caller's (strategy) or the context's */
    pthread_mutex_t cache_lock;
    starfold__graph_cache_entry_t cache[SF_OPS_CACHE];
    unsigned long long clock;
    unsigned long long cache_hits;     /* graphs reused instead of compiled (for tests and curious callers) */
    struct starfold__batch_plan *plans[SF_PLAN_CACHE]; /* batch_plan.c; under cache_lock */
    unsigned long long plan_hits;      /* batch calls that found their plan (for tests); under cache_lock */
};

/* One (value, resolved destination) pair. */
typedef struct starfold__pair {
    starfold_value_t value;
    starfold__dest_t dest;
} starfold__pair_t;

/*
 * The cross-device ops' batch reduce over resolved pairs (the work of reduce and batch_reduce);
 * @topology is used when the ops have none (NULL: the context's). @options already merged and valid.
 */
starfold_status_t starfold__ops_batch_reduce(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                      starfold_op_t op, size_t n, const starfold__pair_t *pairs,
                                      const starfold_communication_options_t *options, const char *fn,
                                      starfold_value_t *results);
/*
 * As starfold__ops_batch_reduce(), every pair with the same destination devices (not the host), the
 * results split: results[c * n + i] is a new one-component value, pair i's result on its destination
 * device c (the replica context's all_reduce hands each replica its own). @plan_id: NULL, or in,
 * the id of the batch plan the last call over this very array of pairs used (0: none), the caller
 * vouching that the pairs have not changed since; out, the plan this call used or kept (0: none).
 */
starfold_status_t starfold__ops_batch_reduce_split(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                                   starfold_op_t op, size_t n, const starfold__pair_t *pairs,
                                                   const starfold_communication_options_t *options, const char *fn,
                                                   starfold_value_t *results, unsigned long long *plan_id);
/*
 * A variable's update from @value as one graph (starfold__graph_then_update()), submitted and recorded
 * as a writer of @var; nothing is submitted on failure. @copy -1 writes every copy of @var, else copy
 * @copy alone (a sync-on-read variable's replica-context update). Where the value comes from:
 *   @reduce 1: @value's components reduced with @op onto the variable's devices (the ops' dispatch, as
 *              reduce_to with the variable as destination: the all-reduce when they are the same
 *              devices, else reduce-to-one);
 *   @reduce 0: each copy takes @value's component on its own device when every copy has one (no
 *              transfer), else component @comp (-1: 0) copied to every copy's device;
 * then each copy becomes that divided by @divisor (assign), or itself plus or minus it (@update).
 * @topology is used when the ops have none (NULL: the context's); @options merged and valid.
 */
starfold_status_t starfold__ops_update(starfold_cross_device_ops_t ops, starfold_topology_t topology, starfold_value_t var,
                                       int copy, starfold__update_t update, starfold_value_t value, int reduce,
                                       starfold_op_t op, int comp, uint32_t divisor,
                                       const starfold_communication_options_t *options, const char *fn);
/* Broadcast of a one-component (or mirrored) value to a resolved destination. */
starfold_status_t starfold__ops_broadcast(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                   starfold_value_t value, const starfold__dest_t *dest, const char *fn,
                                   starfold_value_t *result);
/*
 * TensorFlow's gather (gather.c): @value's components concatenated in component order on every device
 * of @dest, as a new mirrored value of n x count elements; one component: a copy (broadcast).
 * @topology is used when the ops have none (NULL: the context's).
 */
starfold_status_t starfold__ops_gather(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                       starfold_value_t value, const starfold__dest_t *dest, const char *fn,
                                       starfold_value_t *result);
/*
 * The gather of @n parts (part c: @counts[c] elements of @dtype at @views[c] on @devices[c]) onto every
 * device of @dest, as a new mirrored value of their total count. All-gather of values of different counts.
 */
starfold_status_t starfold__gather_parts(starfold_cross_device_ops_t ops, starfold_topology_t topology,
                                         starfold_context_t ctx, starfold_dtype_t dtype, int n, const int *devices,
                                         const starfold_view_t *views, const size_t *counts, const starfold__dest_t *dest,
                                         const char *fn, starfold_value_t *result);
/*
 * A gather's graph devices: @devices (the parts' devices, none on the host) checked against @topo and
 * @ctx, and dst[k] for each of @dest's devices, the host mapped onto devices[0].
 */
starfold_status_t starfold__gather_devices(starfold_context_t ctx, int n, const int *devices, const starfold__dest_t *dest,
                                           starfold_topology_t topo, const char *fn, int *dst);
/*
 * Compiles and submits one gather of the @n parts (@views, @counts elements of @dtype on @devices)
 * into @outs on the graph devices @dst, with @op (MEAN divides); records the submission as a writer of
 * each of the @nowners values that own @outs.
 */
starfold_status_t starfold__gather_submit(starfold_cross_device_ops_t ops, starfold_topology_t topo, starfold_context_t ctx,
                                          starfold_op_t op, starfold_dtype_t dtype, int n, const int *devices,
                                          const starfold_view_t *views, const size_t *counts, int ndst, const int *dst,
                                          const starfold_view_t *outs, int nowners, const starfold_value_t *owners,
                                          const char *fn);
/* The axis rule of values (1-D tensors): 0 or -1, else INVALID_ARGUMENT naming @fn. */
starfold_status_t starfold__check_axis(const char *fn, int axis);
/* The topology to plan on: the ops', else @hint, else the context's (*made is then set, to destroy). */
starfold_status_t starfold__pick_topology(starfold_cross_device_ops_t ops, starfold_topology_t hint,
                                          starfold_context_t ctx, starfold_topology_t *topo, int *made);

/* One copy graph from view @src on @src_device to view @dst on @dst_device (host allowed), submitted; *req its record. */
starfold_status_t starfold__copy_view(starfold_context_t ctx, starfold_dtype_t dtype, size_t count, starfold_view_t src,
                                      int src_device, starfold_view_t dst, int dst_device, starfold__dist_req_t **req);
/* Copies value @src's component @sc into handle @dst of device @dst_device (one graph); records the writer on @owner. */
starfold_status_t starfold__copy_component(starfold_topology_t topology, starfold_value_t src, int sc,
                                    starpu_data_handle_t dst, int dst_device, starfold_value_t owner);

/* ------------------------------------------------------------------------------------------------
 * Strategies
 */
struct starfold_strategy {
    starfold_strategy_kind_t kind;
    starfold_context_t ctx;
    starfold_topology_t topology;             /* a reference */
    int n;                                    /* replicas */
    int *devices;                             /* [n] replica devices */
    int nvar;                                 /* devices of a variable */
    int *var_devices;                         /* [nvar] */
    starfold_cross_device_ops_t ops;          /* in use: the caller's or the default (a reference) */
    starfold_cross_device_ops_t ring_ops;     /* implementation RING with default ops ("ring");
                                                 NULL with the caller's ops */
    starfold_cross_device_ops_t nccl_ops;     /* implementation NCCL with default ops: hierarchical-copy */
    starfold_communication_options_t options; /* defaults for every call */
    pthread_mutex_t run_lock;                 /* one run at a time */
    struct starfold__replica_pool *pool;      /* the replica threads or fibers, made by the first run (replica_run.c) */
    void (*pool_destroy)(struct starfold__replica_pool *pool); /* set with pool: stops and frees it */
    starfold_replica_mode_t replica_mode;     /* atomic; changed under run_lock, between runs */
    /*
     * MultiWorkerMirroredStrategy (mwms.c, built with MPI): the replicas of every process are in sync.
     * replica_offset is this process's first global replica id, total_replicas all of them (0: this
     * process's n alone); cross_process, when set, carries out every reduction of the strategy (its
     * batch_reduce_to, reduce_to and the replica context's all_reduce) across the processes.
     */
    int replica_offset, total_replicas;
    void *group;
    starfold_status_t (*cross_process)(struct starfold_strategy *s, starfold_op_t op, size_t n,
                                       const struct starfold__pair *pairs, const starfold_communication_options_t *o,
                                       const char *fn, starfold_value_t *results);
    /*
     * MultiWorkerMirroredStrategy's gathers (gather, all_gather, IndexedSlices): this process's parts
     * (@views[s->n] of @counts elements, one per replica in device order) and every other process's,
     * concatenated in global replica order, onto @dest as a new mirrored value; divided by @divisor
     * when > 1. Every process passes the same @dtype and @match (a row's width), checked across them.
     * @st: this process's verdict so far; a refusal still takes part, so that every process fails alike.
     */
    starfold_status_t (*cross_gather)(struct starfold_strategy *s, starfold_status_t st, starfold_dtype_t dtype,
                                      size_t match, const starfold_view_t *views, const size_t *counts, int divisor,
                                      const starfold__dest_t *dest, const starfold_communication_options_t *o,
                                      const char *fn, starfold_value_t *result);
    /* MultiWorkerMirroredStrategy: this process cannot take part in the collective it was about to
     * join (@st, @why): the other processes get a refusal instead of waiting for it. */
    void (*cross_refuse)(struct starfold_strategy *s, starfold_status_t st, const char *why,
                         const starfold_communication_options_t *o);
    /* MultiWorkerMirroredStrategy: a new variable @var takes the chief's (rank 0's) initial value on
     * every process, as TensorFlow broadcasts it; collective (every process creates its variables in
     * the same order). NULL for the other strategies. */
    starfold_status_t (*cross_init)(struct starfold_strategy *s, starfold_value_t var, const char *fn);
    /* MultiWorkerMirroredStrategy: what its variables' cross-replica reads use (starfold__variable_t). */
    starfold_status_t (*cross_reduce)(const struct starfold__variable *info, starfold_value_t var, starfold_op_t op,
                                      const struct starfold__dest *dest, const char *fn, starfold_value_t *result);
};

/* The strategy's batch_reduce_to over resolved pairs, no context check (all_reduce's leader uses it). */
starfold_status_t starfold__strategy_batch_reduce(starfold_strategy_t s, starfold_op_t op, size_t n, const starfold__pair_t *pairs,
                                           const starfold_communication_options_t *options, const char *fn,
                                           starfold_value_t *results);
/*
 * The replica context's all_reduce in one process: starfold__ops_batch_reduce_split() through the
 * strategy's ops (@plan_id as there). ::STARFOLD_ERR_NOT_SUPPORTED, with nothing done and no error recorded, for a
 * strategy whose reductions go across processes (the caller then splits mirrored results).
 */
starfold_status_t starfold__strategy_all_reduce_split(starfold_strategy_t s, starfold_op_t op, size_t n,
                                                      const starfold__pair_t *pairs,
                                                      const starfold_communication_options_t *options, const char *fn,
                                                      starfold_value_t *results, unsigned long long *plan_id);
/*
 * The replica-context update of a mirrored variable, run by the collective's leader: starfold__ops_update()
 * through the strategy's ops (the implementation option's choice). @first: @value is replica 0's
 * (ONLY_FIRST_REPLICA). Across processes the value comes first through the processes (@reduce: an
 * all-reduce with @op; @first: global replica 0's, by an all-gather of process 0's part alone), then
 * every copy of this process is updated from it.
 */
starfold_status_t starfold__strategy_update_variable(starfold_strategy_t s, starfold_value_t var, starfold__update_t update,
                                                     starfold_value_t value, int reduce, int first, starfold_op_t op,
                                                     int comp, const starfold_communication_options_t *options,
                                                     const char *fn);
/* Strategy defaults merged with @call (validated). */
starfold_status_t starfold__strategy_options(starfold_strategy_t s, const starfold_communication_options_t *call,
                                      starfold_communication_options_t *merged);

/* ------------------------------------------------------------------------------------------------
 * Replica context of the calling thread (replica_context.c)
 */
/* Non-NULL while the thread runs a replica function (NULL again inside a merge function). */
starfold_replica_context_t starfold__current_replica(void);
/* Whether a timeout_seconds bounds a wait: finite and > 0 (0 and +infinity mean no timeout). */
int starfold__timeout_in_force(double seconds);

/*
 * TensorFlow's MirroredVariable update in the replica context (variables.c calls it for an ON_WRITE
 * variable in a replica function): a collective of every replica of the run (rendezvous.c), whose
 * leader aggregates the replicas' values and updates every copy in one graph. Checks that fail on a
 * replica (the aggregation NONE, an integer MEAN, the value's shape) still join, so every replica
 * fails together.
 */
starfold_status_t starfold__replica_update_variable(starfold_replica_context_t rc, starfold_value_t var,
                                                    starfold_value_t value, starfold__update_t update, const char *fn);

/* The error of a cross-replica method called in a replica function (TensorFlow's RuntimeError text). */
starfold_status_t starfold__require_cross_replica(const char *fn);

/* ------------------------------------------------------------------------------------------------
 * Test hook: what the layer compiled, so tests can see which path a reduction took and how many
 * graphs a batch became. A process-wide log of the last SF_TRACE_MAX graphs, under a mutex.
 */
typedef enum starfold__path {
    SF_PATH_SHORTCUT = 0, /* one component already on the destination: a copy */
    SF_PATH_ALL_REDUCE,   /* the ops' all-reduce algorithm */
    SF_PATH_REDUCE,       /* reduce-to-one: the ops' own (ReductionToOneDevice) */
    SF_PATH_FALLBACK,     /* reduce-to-one as the fallback of an all-reduce algorithm */
    SF_PATH_BROADCAST,    /* broadcast / copy */
    SF_PATH_GATHER,       /* gather / all-gather (gather.c) */
    SF_PATH_UPDATE,       /* a variable's update: its aggregation and the copies' update, one graph */
    SF_PATH_COUNT
} starfold__path_t;

typedef struct starfold__trace_entry {
    starfold__path_t path;
    char algorithm[32];
    size_t num_tensors;
    size_t num_graph_tensors; /* the graph's tensors: runs of members one after another in memory */
    int num_sources;
    int num_destinations;
    int reduce_device;    /* reduce-to-one paths: the intermediate device; else -1 */
    int persistent;       /* every view in the arena: started as the arena's persistent submission */
    int reused;           /* ... which an earlier call made (no planning this time) */
} starfold__trace_entry_t;

#define SF_TRACE_MAX 64
void starfold__trace_reset(void);
/* Number of graphs recorded since the reset (may exceed SF_TRACE_MAX; the oldest are dropped). */
size_t starfold__trace_count(void);
/* Entry @i (0 = oldest kept); -1 when out of range. */
int starfold__trace_get(size_t i, starfold__trace_entry_t *out);
void starfold__trace_add(const starfold__trace_entry_t *e);
const char *starfold__path_name(starfold__path_t p);

#endif /* STARFOLD_SRC_DISTRIBUTE_H */
