/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The arena of a context: where values live, so that a list of them is views of a few vectors
 * (PyTorch DDP's gradient buckets, Horovod's fusion buffer), and the persistent submissions bound to
 * those views (MPI-4's persistent collectives, NCCL's graph capture: plan once, start every step).
 * Private to the distribute layer; see arena.c for the picture.
 */
#ifndef STARFOLD_SRC_DISTRIBUTE_ARENA_H
#define STARFOLD_SRC_DISTRIBUTE_ARENA_H

#include <starfold/distribute.h>

/*
 * A bucket: one StarPU vector of @capacity elements of @dtype on one device (or the host), handed out
 * in ranges. It is never unregistered before its context is destroyed. A range goes back when its last
 * reference does, and allocation takes the first gap that fits, so a training loop that frees a
 * step's results before the next step gets the same ranges every step (and one that keeps them one
 * step longer, two sets of ranges in turn).
 */
typedef struct starfold__bucket starfold__bucket_t;
typedef struct starfold__range {
    int refs;                        /* atomic: value components in it */
    starfold__bucket_t *bucket;
    size_t offset, count;            /* elements */
} starfold__range_t;

struct starfold__bucket {
    void *arena;
    int device;                      /* device, or STARFOLD_DEVICE_HOST */
    starfold_dtype_t dtype;
    int lane;                        /* which values it holds (starfold__arena_alloc()) */
    starpu_data_handle_t handle;     /* the vector */
    void *host_mem;                  /* host buckets: their memory */
    size_t capacity;                 /* elements */
    starfold__range_t **live;        /* ranges handed out, by offset; under the arena's lock */
    size_t nlive, caplive;
    size_t used;                     /* elements in live ranges; under the arena's lock */
    size_t follow_end;               /* where the last value made in it with @follow ended ... */
    unsigned long long follow_stamp; /* ... and when (0: never); under the arena's lock */
    struct starfold__bucket *next;
};

/*
 * @count elements (>= 1) of @dtype on @device (or STARFOLD_DEVICE_HOST) from @ctx's arena: a range
 * with one reference for the caller; *@offset = its first element's index in its bucket.
 *
 * @lane keeps kinds of values in buckets of their own: a component of a value of several components
 * (a per-replica gradient over every replica, a mirrored result) in SF_LANE_MULTI, of a one-component
 * value (a replica's own) in SF_LANE_SINGLE. A list of gradients made in one loop beside each
 * replica's own values then stays consecutive on every device, so its views merge into one kernel
 * segment instead of 1,000 (measured: the list's reduction 1.1-1.5x slower when interleaved).
 *
 * @follow (a value made by the caller, starfold_value_create()): the range goes right after the last
 * one made with @follow on the same device, dtype and lane while that one lives and the space after
 * it is free, else where first fit puts it. Values made one after another are then one stretch of
 * one bucket, which a batch reduces as one tensor (batch_groups.c, "Runs"); first fit alone puts
 * a small value made after a big one into an older bucket's tail. Result blocks use first fit (0),
 * so they land where the previous step's were.
 */
enum { SF_LANE_SINGLE = 0, SF_LANE_MULTI = 1 };
starfold_status_t starfold__arena_alloc(starfold_context_t ctx, int device, starfold_dtype_t dtype, int lane, size_t count,
                                        int follow, starfold__range_t **range, size_t *offset);
void starfold__range_retain(starfold__range_t *r);
/* Drops a reference; the last one gives the range back to its bucket. NULL is ignored. */
void starfold__range_release(starfold__range_t *r);

/*
 * Starts @graph over views that all lie in @ctx's buckets, through a persistent submission kept in
 * the arena and keyed by (@graph_key, every view): the first call with a key binds it
 * (starfold_persistent_create_views()), the next ones only start it. @graph_key names the compiled
 * graph for as long as the caller keeps it (a serial number, never reused). *@reused says which;
 * *@ticket names the binding started (never reused by another), for starfold__arena_restart().
 */
starfold_status_t starfold__arena_start(starfold_context_t ctx, starfold_graph_t graph, unsigned long long graph_key,
                                        size_t num_inputs, const starfold_view_t *inputs, size_t num_outputs,
                                        const starfold_view_t *outputs, starfold_request_t *request, int *reused,
                                        unsigned long long *ticket);
/*
 * Starts the binding named @ticket again, without looking at its views: for a caller that knows the
 * views are the same as when the ticket was given (batch_plan.c). *@found = 0, with nothing done and
 * no error, when the binding was evicted since (the caller then goes through starfold__arena_start()).
 */
starfold_status_t starfold__arena_restart(starfold_context_t ctx, unsigned long long ticket, starfold_request_t *request,
                                          int *found);

/*
 * Memory for a slab of values (values.c), at least @bytes, not zeroed; *@got = its size. A slab's
 * memory goes back with starfold__arena_mem_give() and is handed out again by the next take that
 * it fits (a step's values are freed before the next step's are made), so a training step finds it
 * mapped and in cache. NULL when out of memory.
 */
void *starfold__arena_mem_take(starfold_context_t ctx, size_t bytes, size_t *got);
void starfold__arena_mem_give(starfold_context_t ctx, void *mem, size_t bytes);

/* For tests: buckets and bytes of @ctx's arena, persistent submissions kept, and how many starts reused one. */
typedef struct starfold__arena_stats {
    size_t buckets, bytes, persistents;
    unsigned long long starts, reuses;
} starfold__arena_stats_t;
void starfold__arena_stats(starfold_context_t ctx, starfold__arena_stats_t *out);

#endif /* STARFOLD_SRC_DISTRIBUTE_ARENA_H */
