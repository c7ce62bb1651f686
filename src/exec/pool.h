/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Host-memory blocks for the temporaries of requests, reused across submissions (pool.c).
 * No StarPU here: plain memory, handed to StarPU by submit.c.
 */
#ifndef STARFOLD_SRC_EXEC_POOL_H
#define STARFOLD_SRC_EXEC_POOL_H

#include <stddef.h>

typedef struct starfold__pool starfold__pool_t;

/* A pool holding the creator's reference; NULL when out of memory. */
starfold__pool_t *starfold__pool_create(void);
/* The creator gives up its reference: free blocks are freed, blocks handed out are freed when put back. */
void starfold__pool_close(starfold__pool_t *pool);
/* Frees the free blocks now (the pool stays open): memory a caller measuring leaks must not count. */
void starfold__pool_trim(starfold__pool_t *pool);
/* A block of at least @bytes (64-byte aligned; *@got its real size), holding a reference; NULL on OOM. */
void *starfold__pool_get(starfold__pool_t *pool, size_t bytes, size_t *got);
/* Gives back a block from starfold__pool_get() (its @bytes as *got said), dropping its reference. */
void starfold__pool_put(starfold__pool_t *pool, void *ptr, size_t bytes);

#endif /* STARFOLD_SRC_EXEC_POOL_H */
