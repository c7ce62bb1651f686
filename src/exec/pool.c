/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The host-memory pool for temporaries in main memory (CPU devices), kept across submissions.
 *
 * Why: a temporary StarPU allocates for a graph is freed when the request ends; large blocks go back
 * to the kernel (glibc trims or unmaps them), so the next submission touches fresh pages, and each
 * first touch is a page fault. On the machines measured here a fault costs 10-20 us in a VM: a PACK
 * into a fresh 4 MiB temporary took 12.5 ms instead of 0.25 ms. Requests therefore take their main-
 * memory temporaries as one block from this pool and give it back when they release them, so a graph
 * submitted again (a training loop) reuses warm pages, as PyTorch's caching allocator does.
 *
 * Ownership: the pool is reference-counted. The context holds one reference and closes the pool when
 * destroyed (free blocks are freed at once); a request holding a block holds a reference, so a block
 * given back after the context is gone is simply freed, and the pool with it when the last reference
 * goes. Bounds: at most SF_POOL_BLOCKS free blocks and SF_POOL_BYTES bytes in them; a block that does
 * not fit is freed. get() hands out the smallest free block that is large enough.
 *
 * Blocks of 2 MiB or more are 2 MiB-aligned and advised for transparent huge pages where the kernel
 * offers them (madvise mode): one fault per 2 MiB instead of 512.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "exec/pool.h"

#define SF_POOL_BLOCKS 8
#define SF_POOL_BYTES ((size_t)1 << 30)
#define SF_POOL_HUGE ((size_t)2 << 20)

typedef struct block {
    void *ptr;
    size_t bytes;
} block_t;

struct starfold__pool {
    pthread_mutex_t lock;
    size_t refs;     /* the context's (until closed) and one per block handed out */
    int closed;
    block_t free_blocks[SF_POOL_BLOCKS];
    size_t nfree, free_bytes;
};

starfold__pool_t *starfold__pool_create(void)
{
    starfold__pool_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return NULL;
    }
    p->refs = 1;
    return p;
}

/* Drops one reference, the lock held; frees the pool at zero (then returns 1, the lock gone). */
static int unref_locked(starfold__pool_t *p)
{
    if (--p->refs > 0) return 0;
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_destroy(&p->lock);
    free(p);
    return 1;
}

/* Frees every free block, the lock held. */
static void free_blocks_locked(starfold__pool_t *p)
{
    for (size_t i = 0; i < p->nfree; i++) free(p->free_blocks[i].ptr);
    p->nfree = 0;
    p->free_bytes = 0;
}

void starfold__pool_trim(starfold__pool_t *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    free_blocks_locked(p);
    pthread_mutex_unlock(&p->lock);
}

void starfold__pool_close(starfold__pool_t *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->closed = 1;
    free_blocks_locked(p);
    if (!unref_locked(p)) pthread_mutex_unlock(&p->lock);
}

static void *new_block(size_t bytes)
{
    void *ptr = NULL;
    const size_t align = bytes >= SF_POOL_HUGE ? SF_POOL_HUGE : 64;
    if (posix_memalign(&ptr, align, bytes) != 0) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= SF_POOL_HUGE) (void)madvise(ptr, bytes / SF_POOL_HUGE * SF_POOL_HUGE, MADV_HUGEPAGE);
#endif
    return ptr;
}

void *starfold__pool_get(starfold__pool_t *p, size_t bytes, size_t *got)
{
    if (bytes == 0) bytes = 1;
    pthread_mutex_lock(&p->lock);
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < p->nfree; i++)
        if (p->free_blocks[i].bytes >= bytes && (best == SIZE_MAX || p->free_blocks[i].bytes < p->free_blocks[best].bytes))
            best = i;
    void *ptr = NULL;
    if (best != SIZE_MAX) {
        ptr = p->free_blocks[best].ptr;
        *got = p->free_blocks[best].bytes;
        p->free_bytes -= *got;
        p->free_blocks[best] = p->free_blocks[--p->nfree];
    }
    p->refs++;
    pthread_mutex_unlock(&p->lock);
    if (!ptr) {
        /* Round up, so a graph slightly larger than last time still fits the block next time. */
        const size_t round = bytes >= SF_POOL_HUGE ? SF_POOL_HUGE : (size_t)64 << 10;
        const size_t size = bytes > SIZE_MAX - round ? bytes : (bytes + round - 1) / round * round;
        ptr = new_block(size);
        *got = size;
        if (!ptr) {
            starfold__pool_put(p, NULL, 0);
            return NULL;
        }
    }
    return ptr;
}

void starfold__pool_put(starfold__pool_t *p, void *ptr, size_t bytes)
{
    pthread_mutex_lock(&p->lock);
    if (ptr && !p->closed && bytes <= SF_POOL_BYTES) {
        /* Room by evicting the smallest free blocks while the count or the bytes would overflow. */
        while (p->nfree > 0 && (p->nfree == SF_POOL_BLOCKS || p->free_bytes + bytes > SF_POOL_BYTES)) {
            size_t small = 0;
            for (size_t i = 1; i < p->nfree; i++)
                if (p->free_blocks[i].bytes < p->free_blocks[small].bytes) small = i;
            p->free_bytes -= p->free_blocks[small].bytes;
            free(p->free_blocks[small].ptr);
            p->free_blocks[small] = p->free_blocks[--p->nfree];
        }
        p->free_blocks[p->nfree++] = (block_t){ ptr, bytes };
        p->free_bytes += bytes;
        ptr = NULL;
    }
    free(ptr);
    if (!unref_locked(p)) pthread_mutex_unlock(&p->lock);
}
