/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The rendezvous behind every collective of the replica context (replica.h has the whole picture),
 * and the errors that replace TensorFlow's hangs. The run is "broken" - every replica waiting in a
 * collective fails at once, and every later collective fails as soon as it is called - when:
 *  - a replica returns from its function while another waits in a collective, or calls a collective
 *    after another has returned: the numbers of calls differ (TensorFlow: "Some replicas made a
 *    different number of replica_context().merge_call() calls.");
 *  - replicas call different collectives (all_reduce here, merge_call there) at the same position;
 *  - a replica waits longer than its timeout_seconds while some replica has not arrived: the
 *    collective is abandoned before anything was submitted, so no input changed (STARFOLD_ERR_TIMEOUT).
 * A collective that every replica joined but that fails (replicas disagree on the values, a
 * reduction error, merge_fn's error) fails for every replica and does not break the run.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "base/common.h"
#include "base/fiber.h"
#include "distribute/replica.h"

/* Marks the run broken with an error (the first cause wins) and wakes every waiting replica. Lock held. */
void starfold__run_break(starfold__run_t *run, starfold_status_t st, int secondary, const char *fmt, ...)
{
    if (run->broken) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run->broken_msg, sizeof run->broken_msg, fmt, ap);
    va_end(ap);
    run->broken = 1;
    run->broken_status = st;
    run->broken_secondary = secondary;
    starfold__event_post(&run->ev);
}

/* Lists the replicas that have not joined collective @k into @buf. Lock held. */
static void missing_replicas(const starfold__run_t *run, long k, char *buf, size_t len)
{
    buf[0] = 0;
    for (int j = 0; j < run->n; j++)
        if (run->ncalls[j] <= k) {
            size_t used = strlen(buf);
            snprintf(buf + used, len - used, "%sreplica %d", used ? ", " : "", j);
        }
}

/* In turn: lets the next replica run. What is the thread's own for a replica with a thread of its
 * own comes back with it: its context, and starfold_last_error()'s text. */
static void turn_yield(void)
{
    struct starfold_replica_context *rc = starfold__tls_rc;
    starfold__run_t *run = starfold__tls_run;
    char why[STARFOLD_ERROR_LEN];
    starfold__error_save(why);
    starfold__fiber_yield();
    starfold__tls_rc = rc;
    starfold__tls_run = run;
    starfold__error_restore(why);
}

/*
 * Joins collective number ncalls[rc->id] with slot @mine; returns its outcome for this replica (the
 * replica's results are in its slot's output fields).
 */
starfold_status_t starfold__rendezvous(starfold_replica_context_t rc, coll_kind_t kind, const slot_t *mine,
                                    double timeout, const char *fn)
{
    starfold__run_t *run = rc->run;
    const int r = rc->id;
    char msg[SF_RUN_MSG_LEN] = "";
    starfold_status_t st = STARFOLD_OK;
    int secondary = 0;

    pthread_mutex_lock(&run->lock);
    const long k = run->ncalls[r]++;
    if (!run->broken) {
        for (int j = 0; j < run->n; j++) {
            if (!run->done[j]) continue;
            if (run->status[j] == STARFOLD_OK)
                starfold__run_break(run, STARFOLD_ERR_INVALID_ARGUMENT, 0,
                          "%s replica %d returned from its function after %ld collective(s); replica %d called %s "
                          "as collective #%ld",
                          SF_RUN_MISMATCH, j, run->ncalls[j], r, coll_name(kind), k);
            else
                starfold__run_break(run, run->status[j], 1, "replica %d failed before joining collective #%ld (%s): %s", j, k,
                          coll_name(kind), run->msg[j]);
        }
    }
    if (!run->broken && k != run->gen)
        starfold__run_break(run, STARFOLD_ERR_INTERNAL, 0, "replica %d entered collective #%ld while #%ld is open", r, k, run->gen);
    if (!run->broken && run->arrived > 0 && run->kind != kind)
        starfold__run_break(run, STARFOLD_ERR_INVALID_ARGUMENT, 0, "%s Collective #%ld is %s on replica %d but %s on replica %d.",
                  SF_RUN_MISMATCH, k, coll_name(run->kind), run->first, coll_name(kind), r);
    if (run->broken) goto broken;

    if (run->arrived == 0) {
        run->kind = kind;
        run->first = r;
    }
    run->slots[r] = *mine;
    if (++run->arrived == run->n) {
        /* The leader: everyone is here. */
        run->executing = 1;
        pthread_mutex_unlock(&run->lock);
        st = starfold__collective_execute(run, k, msg);
        pthread_mutex_lock(&run->lock);
        run->executing = 0;
        run->arrived = 0;
        run->kind = COLL_NONE;
        run->coll_status = st;
        if (st != STARFOLD_OK) snprintf(run->coll_msg, sizeof run->coll_msg, "%s", msg);
        __atomic_store_n(&run->gen, run->gen + 1, __ATOMIC_RELEASE); /* publishes the outcome and results */
        starfold__event_post(&run->ev);
        goto out;
    }

    if (run->in_turn) {
        /* The replicas not here yet run on this thread: the next one's turn. No timeout: the one
         * missing is running (or has returned, which breaks the run). */
        while (run->gen == k && !run->broken) {
            pthread_mutex_unlock(&run->lock);
            turn_yield();
            pthread_mutex_lock(&run->lock);
        }
        if (run->gen > k && run->coll_status == STARFOLD_OK) {
            pthread_mutex_unlock(&run->lock);
            return STARFOLD_OK;
        }
    }
    struct timespec deadline;
    const int timed = !run->in_turn && starfold__timeout_in_force(timeout);
    if (timed) starfold__deadline_after(timeout, &deadline);
    while (run->gen == k && !run->broken) {
        const unsigned seen = starfold__event_seq(&run->ev);
        const int limited = timed && !run->executing;
        pthread_mutex_unlock(&run->lock);
        const int rc_wait = starfold__event_wait(&run->ev, seen, limited ? &deadline : NULL);
        /* Done, and well: the outcome stays until this replica joins the next collective. */
        if (__atomic_load_n(&run->gen, __ATOMIC_ACQUIRE) > k && run->coll_status == STARFOLD_OK) return STARFOLD_OK;
        pthread_mutex_lock(&run->lock);
        if (limited && rc_wait == ETIMEDOUT && run->gen == k && !run->broken && !run->executing) {
            char who[256];
            missing_replicas(run, k, who, sizeof who);
            starfold__run_break(run, STARFOLD_ERR_TIMEOUT, 0,
                      "%s #%ld: only %d of %d replicas joined within %g s (missing: %s); nothing was submitted",
                      coll_name(kind), k, run->arrived, run->n, timeout, who);
        }
    }
    if (run->gen > k) {
        st = run->coll_status;
        snprintf(msg, sizeof msg, "%s", run->coll_msg);
        goto out;
    }
broken:
    st = run->broken_status;
    secondary = run->broken_secondary;
    snprintf(msg, sizeof msg, "%s", run->broken_msg);
out:
    if (st != STARFOLD_OK) {
        run->got_status[r] = st;
        run->got_secondary[r] = secondary;
    }
    pthread_mutex_unlock(&run->lock);
    if (st != STARFOLD_OK) return starfold__error(st, "%s: %s", fn, msg);
    return STARFOLD_OK;
}

