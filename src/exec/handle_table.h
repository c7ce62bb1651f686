/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The distinct StarPU handles seen so far, numbered 0, 1, ... in order of first appearance: an
 * open-addressing table on the pointer, grown as needed (views.c). The views' grouping numbers the
 * caller's vectors with it, the packed MPI task its buffers (group_pack.c). Private.
 */
#ifndef STARFOLD_SRC_EXEC_HANDLE_TABLE_H
#define STARFOLD_SRC_EXEC_HANDLE_TABLE_H

#include <stddef.h>
#include <starpu.h>

typedef struct starfold__handle_table {
    starpu_data_handle_t *slots; /* [cap] */
    size_t *vec;                 /* [cap] the number of the handle in each slot */
    size_t cap, n;               /* n handles; cap a power of two, at least 2 n */
} starfold__handle_table_t;

/* An empty table; -1 when out of memory (nothing to free then). */
int starfold__handle_table_init(starfold__handle_table_t *t);
/* The number of @h, a new one (t->n before the call) when it is first seen; (size_t)-1 (SF_NONE)
 * when out of memory. */
size_t starfold__handle_number(starfold__handle_table_t *t, starpu_data_handle_t h);
void starfold__handle_table_free(starfold__handle_table_t *t);

#endif
