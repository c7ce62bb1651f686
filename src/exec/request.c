/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Requests: the life of one start of a submission, from its tasks' creation to the caller's wait.
 *
 * A request is created by submit.c's start() before any task, and owns what its tasks need until
 * they are done: each task's kernel arguments (args[]), the request-wide flags the kernels read
 * (cancelled, status) and, for a submission started once, its temporaries (temps[] and their
 * main-memory block from the context's pool).
 *
 * Completion. Every callback StarPU runs for the request - one per task, the gate's, one per
 * unpartition of a caller's vector - decrements `pending` under the mutex and posts the `done` event
 * at zero (base/event.h: the replicas of a run all wait for one request, and wake together rather
 * than one after the other on the mutex of a condition variable):
 *
 *     pending = tasks + gate + unpartitions      (set before the first submission)
 *         task_done() ... task_done()  -> 0  -> post done -> waiters return
 *
 * Invariants. `pending` reaches zero once, after every kernel ran: what the kernels wrote is then
 * visible to the waiter. The temporaries are unregistered (without coherency: nothing of them is
 * kept) by the first wait that sees completion, or by the destroy, exactly once (temps_released):
 * unregistering may block briefly, so starfold_request_test() leaves it to them. The destroy waits
 * for completion first, so a request is never freed under its tasks.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <time.h>

#include "base/common.h"
#include "base/event.h"
#include "exec/submit.h"

void starfold__request_task_done(void *arg)
{
    struct starfold_request *r = arg;
    pthread_mutex_lock(&r->lock);
    /* Posted under the lock: a waiter that saw zero takes the lock before it may free the request. */
    if (r->pending > 0 && __atomic_sub_fetch(&r->pending, 1, __ATOMIC_RELEASE) == 0) starfold__event_post(&r->done);
    pthread_mutex_unlock(&r->lock);
}

struct starfold_request *starfold__request_new(void)
{
    struct starfold_request *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return NULL;
    }
    r->submitted = starfold__now_s();
    return r;
}

/*
 * Unregisters the temporaries (no write-back). Only once every task completed; may block briefly
 * while StarPU finishes releasing them. The first caller does it (two threads may wait on a request).
 */
static void request_release_temps(struct starfold_request *r)
{
    pthread_mutex_lock(&r->lock);
    const int mine = !r->temps_released;
    r->temps_released = 1;
    pthread_mutex_unlock(&r->lock);
    if (!mine) return;
    for (size_t i = 0; i < r->ntemps; i++)
        if (r->temps[i]) starpu_data_unregister_no_coherency(r->temps[i]);
    if (r->temp_block) starfold__pool_put(r->pool, r->temp_block, r->temp_block_bytes);
    r->temp_block = NULL;
}

void starfold__request_free(struct starfold_request *r)
{
    request_release_temps(r);
    for (size_t i = 0; i < r->nargs; i++) free(r->args[i]);
    free(r->args);
    free(r->temps);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* Whether every callback of @r ran, waiting at most until @deadline (NULL: no limit). */
static int wait_finished(struct starfold_request *r, const struct timespec *deadline)
{
    for (;;) {
        const unsigned seen = starfold__event_seq(&r->done);
        if (__atomic_load_n(&r->pending, __ATOMIC_ACQUIRE) == 0) break;
        if (starfold__event_wait(&r->done, seen, deadline) == ETIMEDOUT &&
            __atomic_load_n(&r->pending, __ATOMIC_ACQUIRE) != 0)
            return 0;
    }
    /* The last callback may still be inside the lock, posting: the waiter, which may free the
     * request next, waits for it to let go. */
    pthread_mutex_lock(&r->lock);
    pthread_mutex_unlock(&r->lock);
    return 1;
}

void starfold__request_wait_all(struct starfold_request *r)
{
    wait_finished(r, NULL);
    SF_TSAN_ACQUIRE(); /* what the kernels wrote */
}

static starfold_status_t request_result(struct starfold_request *r)
{
    return (starfold_status_t)__atomic_load_n(&r->status, __ATOMIC_ACQUIRE);
}

STARFOLD_API starfold_status_t starfold_request_wait(starfold_request_t request)
{
    if (!request) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_request_wait: NULL request");
    starfold__request_wait_all(request);
    request_release_temps(request);
    starfold_status_t st = request_result(request);
    if (st != STARFOLD_OK) starfold__error(st, "a task of the request failed on its device");
    return st;
}

STARFOLD_API starfold_status_t starfold_request_wait_timeout(starfold_request_t request, double seconds)
{
    if (!request) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_request_wait_timeout: NULL request");
    if (isnan(seconds) || seconds < 0.0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_request_wait_timeout: %g seconds", seconds);
    if (isinf(seconds)) return starfold_request_wait(request);

    struct timespec deadline;
    starfold__deadline_after(seconds, &deadline);
    if (!wait_finished(request, &deadline))
        return starfold__error(STARFOLD_ERR_TIMEOUT, "starfold_request_wait_timeout: still running after %g s", seconds);
    SF_TSAN_ACQUIRE();
    request_release_temps(request);
    starfold_status_t st = request_result(request);
    if (st != STARFOLD_OK) starfold__error(st, "a task of the request failed on its device");
    return st;
}

STARFOLD_API starfold_status_t starfold_request_test(starfold_request_t request)
{
    if (!request) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_request_test: NULL request");
    pthread_mutex_lock(&request->lock);
    const int finished = request->pending == 0;
    pthread_mutex_unlock(&request->lock);
    if (!finished) return STARFOLD_ERR_IN_PROGRESS;
    SF_TSAN_ACQUIRE();
    /* Temporaries stay registered until a wait or the destroy: unregistering may block. */
    return request_result(request);
}

STARFOLD_API void starfold_request_destroy(starfold_request_t request)
{
    if (!request) return;
    starfold__request_wait_all(request);
    starfold__request_free(request);
}


STARFOLD_API starfold_status_t starfold_request_timeline(starfold_request_t request, starfold_task_timing_t *timings,
                                                         size_t capacity, size_t *count)
{
    static const char fn[] = "starfold_request_timeline";
    if (!request || !count || (capacity && !timings))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                               !request ? "request" : !count ? "count" : "timings");
    pthread_mutex_lock(&request->lock);
    const int finished = request->pending == 0;
    pthread_mutex_unlock(&request->lock);
    if (!finished) return starfold__error(STARFOLD_ERR_IN_PROGRESS, "%s: the request is still running", fn);
    SF_TSAN_ACQUIRE(); /* the workers' writes of the timings, before their completion callbacks */
    size_t n = 0;
    for (size_t k = 0; k < request->nargs; k++) {
        const starfold__kernel_args_t *a = request->args[k];
        if (!a->timing.ran) continue;
        if (n < capacity)
            timings[n] = (starfold_task_timing_t){
                .node = a->node,
                .kind = (starfold_task_kind_t)a->task_kind,
                .device = a->device,
                .worker = a->timing.worker,
                .fetch_us = 1e6 * a->timing.fetch,
                .start_us = 1e6 * (a->timing.start - request->submitted),
                .end_us = 1e6 * (a->timing.end - request->submitted),
            };
        n++;
    }
    *count = n;
    return STARFOLD_OK;
}
