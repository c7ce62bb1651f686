/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The submission windows' lock, and vectors kept partitioned between starts.
 *
 * A caller's vector of several pieces is partitioned around each start (submit.c): a partition, the
 * tasks on its children, an unpartition. For the caller's own vectors that is the contract: their
 * tasks before and after a graph see the whole vector. For the arena's buckets (distribute/arena.c)
 * it is pure cost: nobody but starfold ever touches a bucket, and a training loop starts the same
 * persistent submission on the same buckets every step. One 4 KiB tensor through batch_reduce_to
 * spent most of its 0.2 ms partitioning and unpartitioning. So a bucket is registered here as kept:
 *
 *     start k       [partition P] tasks of P ...                    (P stays active)
 *     start k + 1                  tasks of P ...                   (nothing to switch)
 *     a host read                  acquire the pieces it touches    (P still active)
 *     start of Q    [unpartition P] [partition Q] tasks of Q ...    (Q stays active)
 *     an MPI task   [unpartition Q] the task on the whole vector    (whole again)
 *
 * The partition stays until something needs the vector whole or in another shape: a graph using it
 * whole or cut otherwise, a collective across processes, the persistent submission's end, the
 * vector's unregistration. Each of those switches it back here first, explicitly: StarPU 1.3 would
 * switch on its own, but gathers the vector in main memory to do it, which is wrong for a bucket
 * living on an OpenCL device. Reads and writes from the host go through the pieces of the active
 * partition that their bytes touch (starfold__acquire_main_range()).
 *
 * Invariants. Every switch of a kept vector (partition, unpartition, and the acquires that need it
 * whole) is submitted under starfold__submit_lock, the lock of the submission windows, so no window
 * sees a kept vector change shape under its tasks. StarPU's sequential consistency orders each
 * switch after the tasks submitted before it on the vector or its children, so a switch never waits
 * here. A kept vector's record names its active partition by its children array (owned by the
 * persistent submission whose plan it is, which switches it back before cleaning the plan).
 *
 * The acquires (of the pieces, or of the whole vector after a switch) are submitted with the lock
 * held and waited for outside it (starpu_data_acquire_on_node_cb), so a thread waiting for its data
 * never holds the windows, and no switch can be submitted between the acquire and its release.
 * The collectives across processes (rank_graph.c, group_*.c) only switch the vectors they get back
 * to whole before using them; a bucket must not be given to one of them while another thread starts
 * a graph on it (as for any caller's vector they partition).
 */
#include "config.h"

#include <errno.h>

#include "base/common.h"
#include "exec/partitions.h"
#include "exec/vectors.h"

pthread_mutex_t starfold__submit_lock = PTHREAD_MUTEX_INITIALIZER;

/* A kept vector: its active partition, if any. */
struct starfold__kept {
    starpu_data_handle_t vector;
    starpu_data_handle_t *children; /* the active partition's children, NULL when whole */
    unsigned n;                     /* their number */
    size_t *starts;                 /* [n + 1] the byte each child starts at, then the end; made on first use */
};

/* The kept vectors, under starfold__submit_lock; a handful per device. */
static starfold__kept_t **starfold__kept_list;
static size_t starfold__kept_count, starfold__kept_cap;
/* How many there are, read without the lock: 0 spares the lock to a process without an arena. */
static size_t starfold__kept_any;
/* Partitions and unpartitions submitted on kept vectors, for the tests. */
static unsigned long long starfold__kept_nswitches;

unsigned long long starfold__kept_switches(void)
{
    return __atomic_load_n(&starfold__kept_nswitches, __ATOMIC_RELAXED);
}

starfold__kept_t *starfold__kept_find(starpu_data_handle_t vector)
{
    for (size_t i = 0; i < starfold__kept_count; i++)
        if (starfold__kept_list[i]->vector == vector) return starfold__kept_list[i];
    return NULL;
}

void starfold__kept_settle(starfold__kept_t *k)
{
    if (!k || !k->children) return;
    starpu_data_unpartition_submit(k->vector, k->n, k->children, -1); /* gathered where it is valid */
    __atomic_add_fetch(&starfold__kept_nswitches, 1, __ATOMIC_RELAXED);
    free(k->starts);
    k->starts = NULL;
    k->children = NULL;
    k->n = 0;
}

void starfold__kept_partition(starfold__kept_t *k, unsigned n, starpu_data_handle_t *children)
{
    if (k->children == children) return;
    starfold__kept_settle(k);
    starpu_data_partition_submit(k->vector, n, children);
    __atomic_add_fetch(&starfold__kept_nswitches, 1, __ATOMIC_RELAXED);
    k->children = children;
    k->n = n;
}

void starfold__kept_drop(starfold__kept_t *k, starpu_data_handle_t *children)
{
    if (k && k->children == children) starfold__kept_settle(k);
}

starfold_status_t starfold__vector_keep_partitions(starpu_data_handle_t vector)
{
    starfold__kept_t *k = calloc(1, sizeof *k);
    if (!k) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory for a bucket's record");
    k->vector = vector;
    pthread_mutex_lock(&starfold__submit_lock);
    if (starfold__kept_count == starfold__kept_cap) {
        const size_t cap = starfold__kept_cap ? 2 * starfold__kept_cap : 16;
        starfold__kept_t **list = realloc(starfold__kept_list, sizeof *list * cap);
        if (!list) {
            pthread_mutex_unlock(&starfold__submit_lock);
            free(k);
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory for a bucket's record");
        }
        starfold__kept_list = list;
        starfold__kept_cap = cap;
    }
    starfold__kept_list[starfold__kept_count++] = k;
    __atomic_store_n(&starfold__kept_any, starfold__kept_count, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&starfold__submit_lock);
    return STARFOLD_OK;
}

/* Whether a kept vector may exist: when not, no handle needs the lock to be looked up. */
static int any_kept(void)
{
    return __atomic_load_n(&starfold__kept_any, __ATOMIC_ACQUIRE) != 0;
}

void starfold__vector_forget_partitions(starpu_data_handle_t vector)
{
    if (!any_kept()) return;
    pthread_mutex_lock(&starfold__submit_lock);
    for (size_t i = 0; i < starfold__kept_count; i++) {
        starfold__kept_t *k = starfold__kept_list[i];
        if (k->vector != vector) continue;
        starfold__kept_settle(k); /* persistent submissions settle theirs first; this is the backstop */
        starfold__kept_list[i] = starfold__kept_list[--starfold__kept_count];
        free(k);
        break;
    }
    if (starfold__kept_count == 0) {
        free(starfold__kept_list);
        starfold__kept_list = NULL;
        starfold__kept_cap = 0;
    }
    __atomic_store_n(&starfold__kept_any, starfold__kept_count, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&starfold__submit_lock);
}

void starfold__vector_whole(starpu_data_handle_t vector)
{
    if (!any_kept()) return;
    pthread_mutex_lock(&starfold__submit_lock);
    starfold__kept_settle(starfold__kept_find(vector));
    pthread_mutex_unlock(&starfold__submit_lock);
}

/* Acquires submitted under the lock, granted on StarPU threads, waited for by their caller. */
typedef struct acquired {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    size_t pending;
} acquired_t;

static void acquired_cb(void *arg)
{
    acquired_t *a = arg;
    pthread_mutex_lock(&a->mutex);
    if (--a->pending == 0) pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->mutex);
}

/* Waits for the @nsubmitted acquires StarPU took, of the @ntried @a counts; then destroys @a's sync. */
static void acquired_wait(acquired_t *a, size_t nsubmitted, size_t ntried)
{
    pthread_mutex_lock(&a->mutex);
    a->pending -= ntried - nsubmitted; /* the ones StarPU refused will never call back */
    while (a->pending) pthread_cond_wait(&a->cond, &a->mutex);
    pthread_mutex_unlock(&a->mutex);
    pthread_cond_destroy(&a->cond);
    pthread_mutex_destroy(&a->mutex);
}

/*
 * The children of @k's active partition that bytes [@lo, @hi) overlap, into @spans (malloc'ed), in
 * order; each child's bytes from the vector's start. A binary search over the children's starts
 * (made once per partition): a list of values that are not one stretch cuts a bucket into thousands
 * of pieces, and each of its values is read on its own. (size_t)-1 when out of memory. Lock held, a
 * partition active.
 */
static size_t overlapping_children(starfold__kept_t *k, size_t lo, size_t hi, starfold__held_t **spans)
{
    if (!k->starts) {
        if (!(k->starts = malloc(sizeof *k->starts * (k->n + 1)))) return (size_t)-1;
        const size_t elem = starpu_vector_get_elemsize(k->vector);
        k->starts[0] = 0;
        for (unsigned c = 0; c < k->n; c++)
            k->starts[c + 1] = k->starts[c] + (size_t)starpu_vector_get_nx(k->children[c]) * elem;
    }
    size_t first = 0, end = k->n; /* the first child ending after @lo */
    while (first < end) {
        const size_t mid = first + (end - first) / 2;
        if (k->starts[mid + 1] <= lo) first = mid + 1;
        else end = mid;
    }
    size_t last = first; /* one past the last child starting before @hi */
    while (last < k->n && k->starts[last] < hi) last++;
    if (last == first) return 0;
    if (!(*spans = malloc(sizeof **spans * (last - first)))) return (size_t)-1;
    for (size_t c = first; c < last; c++)
        (*spans)[c - first] = (starfold__held_t){ k->children[c], k->starts[c], k->starts[c + 1] - k->starts[c] };
    return last - first;
}

/* A child written whole by the caller (@mode W for all of [@lo, @hi)) may skip fetching; else RW. */
static enum starpu_data_access_mode child_mode(enum starpu_data_access_mode mode, const starfold__held_t *s, size_t lo,
                                               size_t hi)
{
    if (mode != STARPU_W) return mode;
    return s->offset >= lo && s->offset + s->bytes <= hi ? STARPU_W : STARPU_RW;
}

/*
 * Lock held: acquires each of @spans on main memory (child_mode() of @mode over [@lo, @hi)), then
 * lets the lock go and waits for them, so no switch comes between and no thread waits holding the
 * windows. 0, or StarPU's error with nothing left acquired.
 */
static int acquire_unlock(const starfold__held_t *spans, size_t n, enum starpu_data_access_mode mode, size_t lo,
                          size_t hi)
{
    acquired_t a = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, n };
    size_t ok = 0;
    int ret = 0;
    for (; ok < n && ret == 0; ok += ret == 0)
        ret = starpu_data_acquire_on_node_cb(spans[ok].child, STARPU_MAIN_RAM, child_mode(mode, &spans[ok], lo, hi),
                                             acquired_cb, &a);
    pthread_mutex_unlock(&starfold__submit_lock);
    acquired_wait(&a, ok, n);
    if (ret != 0) starfold__release_main_range(spans, ok);
    return ret;
}

int starfold__acquire_main(starpu_data_handle_t vector, enum starpu_data_access_mode mode)
{
    if (!any_kept()) return starpu_data_acquire_on_node(vector, STARPU_MAIN_RAM, mode);
    const starfold__held_t whole = { vector, 0, (size_t)starpu_vector_get_nx(vector) * starpu_vector_get_elemsize(vector) };
    pthread_mutex_lock(&starfold__submit_lock);
    starfold__kept_settle(starfold__kept_find(vector));
    return acquire_unlock(&whole, 1, mode, 0, whole.bytes);
}

int starfold__acquire_main_range(starpu_data_handle_t vector, size_t lo, size_t hi, enum starpu_data_access_mode mode,
                                 starfold__held_t **spans, size_t *nspans)
{
    const size_t size = (size_t)starpu_vector_get_nx(vector) * starpu_vector_get_elemsize(vector);
    *nspans = 0;
    const int locked = any_kept();
    if (locked) pthread_mutex_lock(&starfold__submit_lock);
    starfold__kept_t *k = locked ? starfold__kept_find(vector) : NULL;
    size_t n = k && k->children && hi > lo ? overlapping_children(k, lo, hi, spans) : 0;
    if (n == 0 && (*spans = malloc(sizeof **spans))) {
        /* Not cut: the vector whole (a kept one made whole first). */
        **spans = (starfold__held_t){ vector, 0, size };
        starfold__kept_settle(k);
        n = 1;
    }
    if (n == 0 || n == (size_t)-1) {
        if (locked) pthread_mutex_unlock(&starfold__submit_lock);
        *spans = NULL;
        return -ENOMEM;
    }
    const int ret = locked ? acquire_unlock(*spans, n, mode, lo, hi)
                           : starpu_data_acquire_on_node(vector, STARPU_MAIN_RAM, child_mode(mode, *spans, lo, hi));
    if (ret != 0) {
        free(*spans);
        *spans = NULL;
        return ret;
    }
    *nspans = n;
    return 0;
}

void starfold__release_main_range(const starfold__held_t *spans, size_t nspans)
{
    for (size_t i = 0; i < nspans; i++) starpu_data_release_on_node(spans[i].child, STARPU_MAIN_RAM);
}
