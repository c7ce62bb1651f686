/*
 * Host-memory blocks for the temporaries of requests, reused across submissions (exec_pool.c).
 * No StarPU here: plain memory, handed to StarPU by exec_submit.c.
 */
#ifndef STARFOLD_SRC_EXEC_POOL_H
#define STARFOLD_SRC_EXEC_POOL_H

#include <stddef.h>

typedef struct sf_pool sf_pool_t;

/* A pool holding the creator's reference; NULL when out of memory. */
sf_pool_t *sf_pool_create(void);
/* The creator gives up its reference: free blocks are freed, blocks handed out are freed when put back. */
void sf_pool_close(sf_pool_t *pool);
/* A block of at least @bytes (64-byte aligned; *@got its real size), holding a reference; NULL on OOM. */
void *sf_pool_get(sf_pool_t *pool, size_t bytes, size_t *got);
/* Gives back a block from sf_pool_get() (its @bytes as *got said), dropping its reference. */
void sf_pool_put(sf_pool_t *pool, void *ptr, size_t bytes);

#endif /* STARFOLD_SRC_EXEC_POOL_H */
