/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * What the layers above the executor may ask of StarPU about vectors, without including <starpu.h>:
 * the distribute layer wraps callers' handles and keeps host copies, and goes through these calls
 * (context.c) for the few StarPU operations that takes. starpu_data_handle_t comes from the public
 * <starfold/exec.h>, declared as StarPU declares it.
 */
#ifndef STARFOLD_SRC_EXEC_VECTORS_H
#define STARFOLD_SRC_EXEC_VECTORS_H

#include <stddef.h>
#include <starfold/exec.h>

/* Whether @handle is a StarPU vector, the one data interface starfold reads and writes. */
int starfold__is_vector(starpu_data_handle_t handle);

/* The elements of vector @handle and their size in bytes. */
void starfold__vector_shape(starpu_data_handle_t handle, size_t *count, size_t *elem_size);

/*
 * Registers @count elements of @elem_size bytes at @mem (host memory the caller owns; NULL when
 * @count is 0) as a vector whose home is main memory. Fails when @count does not fit StarPU's
 * 32-bit vector length.
 */
starfold_status_t starfold__host_vector_register(void *mem, size_t count, size_t elem_size,
                                                 starpu_data_handle_t *handle);

/* Unregisters @handle after the tasks using it, without writing it back home (its memory is freed next). */
void starfold__vector_unregister_discard(starpu_data_handle_t handle);

/*
 * Copies @bytes between @host and the bytes [@offset, @offset + @bytes) of vector @handle's copy in
 * main memory (fetched there first; a write keeps the rest of the vector). Ordered by StarPU's
 * sequential consistency after the tasks already submitted on @handle. The range must lie within it.
 */
starfold_status_t starfold__vector_read_range(starpu_data_handle_t handle, size_t offset, void *host, size_t bytes);
starfold_status_t starfold__vector_write_range(starpu_data_handle_t handle, size_t offset, const void *host,
                                               size_t bytes);

/* @bytes of host memory at @host for the bytes from @offset of a vector. */
typedef struct starfold__host_piece {
    size_t offset;
    const void *host;
    size_t bytes;
} starfold__host_piece_t;

/*
 * starfold__vector_write_range() of @n pieces of one vector under one acquire, in order (where two
 * overlap the later wins). Every piece must lie within the vector; nothing is written otherwise.
 */
starfold_status_t starfold__vector_write_pieces(starpu_data_handle_t handle, size_t n, const starfold__host_piece_t *pieces);

/*
 * Marks @vector (a bucket the caller owns and nobody else touches) as kept partitioned: a persistent
 * submission cutting it into pieces leaves it partitioned after its start, and the next start of the
 * same submission finds it so. Every other use switches it back first (partitions.c). Must be
 * called before any graph uses it; starfold__vector_forget_partitions() before it is unregistered
 * (starfold_vector_destroy() and starfold__vector_unregister_discard() do).
 */
starfold_status_t starfold__vector_keep_partitions(starpu_data_handle_t vector);
void starfold__vector_forget_partitions(starpu_data_handle_t vector);

/* @vector whole again if it is kept partitioned, for a use outside the submission windows. */
void starfold__vector_whole(starpu_data_handle_t vector);

/* Partitions and unpartitions submitted so far on kept vectors, in the process (for the tests). */
unsigned long long starfold__kept_switches(void);

/*
 * The upper layer's slot in a context (struct starfold_context's ext): starfold__context_ext() reads
 * it; starfold__context_ext_set() stores @ext with @fini when the slot is still empty and returns 1,
 * else leaves it and returns 0 (another thread was first). @fini runs at the start of
 * starfold_context_destroy().
 */
void *starfold__context_ext(starfold_context_t ctx);
int starfold__context_ext_set(starfold_context_t ctx, void *ext, void (*fini)(void *ext));

#endif /* STARFOLD_SRC_EXEC_VECTORS_H */
