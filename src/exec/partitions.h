/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The submission windows' lock, and the vectors kept partitioned between starts (partitions.c).
 * The calls for the layers above are in vectors.h.
 */
#ifndef STARFOLD_SRC_EXEC_PARTITIONS_H
#define STARFOLD_SRC_EXEC_PARTITIONS_H

#include <pthread.h>

#include "exec/exec.h"

/* Serialises the submission windows (submit.c) and every switch of a kept vector. */
extern pthread_mutex_t starfold__submit_lock;

/* A vector kept partitioned between starts (an arena's bucket). */
typedef struct starfold__kept starfold__kept_t;

/* Lock held: @vector's record when it is kept partitioned, else NULL. */
starfold__kept_t *starfold__kept_find(starpu_data_handle_t vector);

/* Lock held: @k partitioned into @children (a partition plan of @n) unless that is already active. */
void starfold__kept_partition(starfold__kept_t *k, unsigned n, starpu_data_handle_t *children);

/* Lock held: @k whole again (an unpartition submitted when a partition is active). NULL: nothing. */
void starfold__kept_settle(starfold__kept_t *k);

/* Lock held: @k whole again if @children is its active partition (a plan about to be cleaned). */
void starfold__kept_drop(starfold__kept_t *k, starpu_data_handle_t *children);

/*
 * starpu_data_acquire_on_node(@vector, STARPU_MAIN_RAM, @mode), a kept vector made whole first in
 * the same window: StarPU's return value.
 */
int starfold__acquire_main(starpu_data_handle_t vector, enum starpu_data_access_mode mode);

/* Bytes [offset, offset + bytes) of a vector, held by @child (the vector itself, or a piece). */
typedef struct starfold__held {
    starpu_data_handle_t child;
    size_t offset;
    size_t bytes;
} starfold__held_t;

/*
 * Acquires on main memory what holds bytes [@lo, @hi) of @vector: when it is kept partitioned, the
 * children of the active partition that the range overlaps, so a host read or write between two
 * starts switches nothing; otherwise the vector whole (a kept one made whole first). @mode STARPU_W
 * promises that all of [@lo, @hi) is written (a child only partly inside it is acquired RW). *@spans
 * (malloc'ed, the caller's to free after starfold__release_main_range()) lists them by offset.
 * Returns 0, or StarPU's error (nothing left acquired).
 */
int starfold__acquire_main_range(starpu_data_handle_t vector, size_t lo, size_t hi, enum starpu_data_access_mode mode,
                                 starfold__held_t **spans, size_t *nspans);
void starfold__release_main_range(const starfold__held_t *spans, size_t nspans);

#endif /* STARFOLD_SRC_EXEC_PARTITIONS_H */
