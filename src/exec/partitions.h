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

#endif /* STARFOLD_SRC_EXEC_PARTITIONS_H */
