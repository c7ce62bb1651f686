/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The layout of a value's shell, shared by the files that make and read values (values.c,
 * value_api.c). Private to the distribute layer.
 */
#ifndef STARFOLD_SRC_DISTRIBUTE_VALUE_SHELL_H
#define STARFOLD_SRC_DISTRIBUTE_VALUE_SHELL_H

#include "distribute/distribute.h"

/*
 * A shell: the struct, then its rows, n entries each, by decreasing alignment, then (a value not in
 * a slab) its own mutex:
 *
 *   | struct starfold_value | handles | host_mem | range | offset | devices | own | (mutex) |
 *
 * The rows are found from n (handles_of() ...), not kept as pointers: a one-component value of a
 * slab is 160 bytes, not 272, and a training step makes, waits for and frees 8,000 of them.
 */
static inline starpu_data_handle_t *handles_of(starfold_value_t v)
{
    return (starpu_data_handle_t *)(v + 1);
}

static inline void **host_mem_of(starfold_value_t v)
{
    return (void **)(handles_of(v) + v->n);
}

static inline starfold__range_t **range_of(starfold_value_t v)
{
    return (starfold__range_t **)(host_mem_of(v) + v->n);
}

static inline size_t *offset_of(starfold_value_t v)
{
    return (size_t *)(range_of(v) + v->n);
}

static inline unsigned char *own_of(starfold_value_t v)
{
    return (unsigned char *)(v->devices + v->n);
}

/* Bytes of the struct and rows of a shell of @n components. */
static inline size_t rows_end(int n)
{
    const size_t un = (size_t)n;
    return sizeof(struct starfold_value) + un * (sizeof(starpu_data_handle_t) + sizeof(void *) + sizeof(starfold__range_t *) +
                                                 sizeof(size_t) + sizeof(int) + 1);
}

/* Where a shell of @n components keeps its own mutex, from its start. */
static inline size_t own_lock_at(int n)
{
    const size_t a = _Alignof(pthread_mutex_t);
    return (rows_end(n) + a - 1) / a * a;
}

/* Bytes of a shell of @n components; @own_lock: with a mutex of its own (a value not in a slab). */
static inline size_t shell_size(int n, int own_lock)
{
    const size_t size = own_lock ? own_lock_at(n) + sizeof(pthread_mutex_t) : rows_end(n);
    return (size + 15) & ~(size_t)15;
}


/* A zeroed group (starfold__value_group_t) for @v, made on first need; NULL: out of memory. */
static inline starfold__value_group_t *group_of(starfold_value_t v)
{
    if (!v->group) v->group = calloc(1, sizeof *v->group);
    return v->group;
}


/* As starfold__value_alloc(); @follow: the caller's value goes after the last one it made (arena.h). */
starfold_status_t starfold__value_alloc_at(starfold_context_t ctx, starfold_value_kind_t kind, int n, const int *devices,
                                           starfold_dtype_t dtype, size_t count, int follow, starfold_value_t *value);
/* Frees everything of @v, its last reference gone (values.c). */
void starfold__value_free(starfold_value_t v);

/* values.c, for value_api.c's moves out of the arena (starfold__value_handle()) */
/* A malloc'ed buffer of @count x @dtype registered with StarPU, home node main memory. */
starfold_status_t starfold__host_vector_create(starfold_dtype_t dtype, size_t count, starpu_data_handle_t *handle,
                                               void **mem);
void starfold__host_vector_destroy(starpu_data_handle_t handle, void *mem);
/* Records @r as a writer of @v; @v's lock held. */
starfold_status_t starfold__value_add_writer_locked(starfold_value_t v, starfold__dist_req_t *r);
/* Gives component @c's arena range back (a value not in a slab); @v's lock held. */
void starfold__value_drop_range(starfold_value_t v, int c);
/* A stamp never given before. */
unsigned long long starfold__value_new_stamp(void);
/* The value that keeps @v's component *@c (its part, for a regrouped value), *@c set to its index there. */
starfold_value_t starfold__value_root(starfold_value_t v, int *c);

#endif /* STARFOLD_SRC_DISTRIBUTE_VALUE_SHELL_H */
