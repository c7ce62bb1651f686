/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Asynchronous collectives of a process group (starfold_group_all_reduce_async()): Horovod's
 * allreduce_async, poll and synchronize. A training loop starts a bucket's all-reduce across ranks
 * and goes on submitting its backward pass.
 *
 *   caller:   start(A) start(B) ... its own StarPU tasks ...   wait(A) wait(B)
 *   queue:    [A] [B]  ->  one progress thread per group runs A, then B, each exactly as the
 *                          blocking call would (agreement, local reduce, MPI, local broadcast)
 *
 * Every rank starts its requests in the same order, so the progress threads of all ranks run the
 * same collectives in the same order, which the agreement of each checks as it would for blocking
 * calls (a mismatch fails that request on every rank, naming the rank). Timeouts and the broken group
 * are the blocking call's: a broken group fails the requests still queued at once. The group's other
 * calls (starfold__group_usable()) wait until the queue is empty, so that blocking and asynchronous
 * collectives keep one order. The request owns copies of its arguments; the caller's handles must
 * not be used until the request completed (the collective's tasks are submitted when the progress
 * thread reaches it, so StarPU cannot order the caller's own tasks on them).
 *
 * The failure's message is recorded in the progress thread (starfold_last_error() is per thread) and
 * handed to the caller's thread when it tests or waits.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "mpi/group.h"
#include "mpi/group_plan.h"

struct starfold_group_request {
    starfold_group_t group;
    starfold_op_t op;
    size_t nt;
    starfold_tensor_desc_t *tensors;   /* [nt] */
    starfold_view_t *inputs, *outputs; /* [devices x nt] */
    starfold_status_t status;          /* under the group's async_lock */
    int done;                          /* under the group's async_lock */
    char why[STARFOLD_ERROR_LEN];      /* the failure's message */
    struct starfold_group_request *next;
};

static void *progress_main(void *arg)
{
    starfold_group_t g = arg;
    static const char fn[] = "starfold_group_all_reduce_async";
    pthread_mutex_lock(&g->async_lock);
    for (;;) {
        while (!g->queue_head && !g->progress_stop) pthread_cond_wait(&g->async_work, &g->async_lock);
        struct starfold_group_request *r = g->queue_head;
        if (!r) break; /* stopping, and nothing left */
        g->queue_head = r->next;
        if (!g->queue_head) g->queue_tail = NULL;
        pthread_mutex_unlock(&g->async_lock);
        starfold_status_t st = g->broken ? starfold__error(STARFOLD_ERR_RUNTIME,
                                                           "%s: the group is broken (an earlier collective timed out "
                                                           "or failed between ranks): destroy it", fn)
                                         : starfold__group_all_reduce_run(fn, g, r->op, r->nt, r->tensors, r->inputs,
                                                                          r->outputs, STARFOLD_OK);
        pthread_mutex_lock(&g->async_lock);
        if (st != STARFOLD_OK) snprintf(r->why, sizeof r->why, "%s", starfold_last_error());
        r->status = st;
        r->done = 1;
        g->async_pending--;
        pthread_cond_broadcast(&g->async_done);
    }
    pthread_mutex_unlock(&g->async_lock);
    return NULL;
}

void starfold__group_async_quiesce(starfold_group_t g)
{
    pthread_mutex_lock(&g->async_lock);
    if (!g->progress_started || pthread_equal(pthread_self(), g->progress)) {
        pthread_mutex_unlock(&g->async_lock);
        return;
    }
    while (g->async_pending) pthread_cond_wait(&g->async_done, &g->async_lock);
    pthread_mutex_unlock(&g->async_lock);
}

void starfold__group_async_stop(starfold_group_t g)
{
    pthread_mutex_lock(&g->async_lock);
    const int started = g->progress_started;
    g->progress_stop = 1;
    pthread_cond_broadcast(&g->async_work);
    pthread_mutex_unlock(&g->async_lock);
    if (started) pthread_join(g->progress, NULL);
}

static void request_free(struct starfold_group_request *r)
{
    if (!r) return;
    free(r->tensors);
    free(r->inputs);
    free(r->outputs);
    free(r);
}

STARFOLD_API starfold_status_t starfold_group_all_reduce_async(starfold_group_t group, starfold_op_t op,
                                                               size_t num_tensors, const starfold_tensor_desc_t *tensors,
                                                               const starpu_data_handle_t *inputs,
                                                               const starpu_data_handle_t *outputs,
                                                               starfold_group_request_t *request)
{
    static const char fn[] = "starfold_group_all_reduce_async";
    if (!group || !request)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !group ? "group" : "request");
    const size_t n = (size_t)starfold_context_num_devices(group->ctx) * num_tensors;
    struct starfold_group_request *r = calloc(1, sizeof *r);
    if (r) {
        r->tensors = tensors ? calloc(num_tensors ? num_tensors : 1, sizeof *r->tensors) : NULL;
        r->inputs = inputs ? starfold__group_whole_views(n, inputs) : NULL;
        r->outputs = outputs ? starfold__group_whole_views(n, outputs) : NULL;
    }
    if (!r || (tensors && !r->tensors) || (inputs && !r->inputs) || (outputs && !r->outputs)) {
        request_free(r);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    /* The arguments are checked when the request runs, as the blocking call checks them (NULLs
     * included): a refusal there fails the request on every rank. */
    if (tensors && num_tensors) memcpy(r->tensors, tensors, sizeof *tensors * num_tensors);
    r->group = group;
    r->op = op;
    r->nt = num_tensors;
    pthread_mutex_lock(&group->async_lock);
    if (!group->progress_started) {
        if (pthread_create(&group->progress, NULL, progress_main, group) != 0) {
            pthread_mutex_unlock(&group->async_lock);
            request_free(r);
            return starfold__error(STARFOLD_ERR_RUNTIME, "%s: cannot start the group's progress thread", fn);
        }
        group->progress_started = 1;
    }
    if (group->queue_tail) group->queue_tail->next = r;
    else group->queue_head = r;
    group->queue_tail = r;
    group->async_pending++;
    pthread_cond_signal(&group->async_work);
    pthread_mutex_unlock(&group->async_lock);
    *request = r;
    return STARFOLD_OK;
}

/* The request's verdict in the calling thread: its status, its message as this thread's last error. */
static starfold_status_t verdict(struct starfold_group_request *r)
{
    if (r->status == STARFOLD_OK) return STARFOLD_OK;
    return starfold__error(r->status, "%s", r->why);
}

STARFOLD_API starfold_status_t starfold_group_request_test(starfold_group_request_t request)
{
    if (!request) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_group_request_test: NULL request");
    pthread_mutex_lock(&request->group->async_lock);
    const int done = request->done;
    pthread_mutex_unlock(&request->group->async_lock);
    return done ? verdict(request) : STARFOLD_ERR_IN_PROGRESS;
}

STARFOLD_API starfold_status_t starfold_group_request_wait(starfold_group_request_t request)
{
    if (!request) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_group_request_wait: NULL request");
    starfold_group_t g = request->group;
    pthread_mutex_lock(&g->async_lock);
    while (!request->done) pthread_cond_wait(&g->async_done, &g->async_lock);
    pthread_mutex_unlock(&g->async_lock);
    return verdict(request);
}

STARFOLD_API void starfold_group_request_destroy(starfold_group_request_t request)
{
    if (!request) return;
    (void)starfold_group_request_wait(request); /* its collective may not be abandoned half-way */
    request_free(request);
}
