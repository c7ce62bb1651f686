/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Running the replicas (replica.h has the whole picture): strategy.run in turn, on the caller's
 * thread as fibers, or in the strategy's threads; a run's storage, kept from one run to the next;
 * and what strategy.run returns: the first replica's own failure, or the replicas' results regrouped.
 */
#include "config.h"

#include <stdio.h>

#include "base/common.h"
#include "base/fiber.h"
#include "distribute/replica.h"

/* A replica has returned from its function: anyone waiting for it in a collective never will be joined. */
static void replica_done(starfold__run_t *run, int r, starfold_status_t st, const char *why)
{
    pthread_mutex_lock(&run->lock);
    run->done[r] = 1;
    run->status[r] = st;
    if (why[0]) snprintf(run->msg[r], SF_RUN_MSG_LEN, "%s", why);
    else run->msg[r][0] = '\0';
    run->secondary[r] = st != STARFOLD_OK && run->got_status[r] == st && run->got_secondary[r];
    if (!run->broken && run->arrived > 0) {
        if (st == STARFOLD_OK)
            starfold__run_break(run, STARFOLD_ERR_INVALID_ARGUMENT, 0,
                      "%s replica %d returned from its function after %ld collective(s) while replica %d waits in "
                      "collective #%ld (%s)",
                      SF_RUN_MISMATCH, r, run->ncalls[r], run->first, run->gen, coll_name(run->kind));
        else
            starfold__run_break(run, st, 1, "replica %d failed while replica %d waits in collective #%ld (%s): %s", r, run->first,
                      run->gen, coll_name(run->kind), why);
    }
    pthread_mutex_unlock(&run->lock);
}

/* Replica @rc's function, in its thread. */
static void replica_body(struct starfold_replica_context *rc)
{
    starfold__run_t *run = rc->run;
    starfold__tls_rc = rc;
    starfold__tls_run = run;
    starfold__error_restore(""); /* a failure's detail is what this replica's function set */
    const starfold_status_t st = run->fn(rc, run->arg);
    char why[SF_RUN_MSG_LEN];
    why[0] = '\0';
    if (st != STARFOLD_OK) snprintf(why, sizeof why, "%s", starfold_last_error());
    starfold__tls_rc = NULL;
    starfold__tls_run = NULL;
    replica_done(run, rc->id, st, why);
}

/* ------------------------------------------------------------------------------------------------
 * The replica threads, one per replica, kept by the strategy across runs: a training loop calls
 * strategy.run every step, and creating and joining n threads each time cost more than the step's
 * reductions. Created by the first run (strategy->run_lock held), stopped by starfold_strategy_destroy().
 *
 *   runner:  run, busy = n, gen++, post wake  ->  wait on idle until busy == 0
 *   thread r: wait on wake for gen to move  ->  replica r's function  ->  busy--, the last one posts idle
 *
 * Without a lock: the runner publishes run and busy before it moves gen (release), a thread reads
 * them after it saw gen move (acquire), and the events (base/event.h) wake every thread at once
 * rather than one after the other on a condition variable's mutex.
 */

static void *pool_main(void *p)
{
    const struct pool_arg *a = p;
    struct starfold__replica_pool *pool = a->pool;
    unsigned long seen = a->seen; /* the generation when it was made: a run posted since is for it */
    for (;;) {
        const unsigned ev = starfold__event_seq(&pool->wake);
        if (__atomic_load_n(&pool->quit, __ATOMIC_ACQUIRE)) break;
        const unsigned long gen = __atomic_load_n(&pool->gen, __ATOMIC_ACQUIRE);
        if (gen == seen) {
            starfold__event_wait(&pool->wake, ev, NULL);
            continue;
        }
        seen = gen;
        replica_body(&pool->run->rcs[a->r]);
        if (__atomic_sub_fetch(&pool->busy, 1, __ATOMIC_ACQ_REL) == 0) starfold__event_post(&pool->idle);
    }
    return NULL;
}

static void run_free(starfold__run_t *run);

/* Stops and frees a strategy's replica threads and fibers (starfold_strategy_destroy(), through
 * s->pool_destroy). */
static void pool_destroy(struct starfold__replica_pool *pool)
{
    if (!pool) return;
    __atomic_store_n(&pool->quit, 1, __ATOMIC_RELEASE);
    starfold__event_post(&pool->wake);
    for (int r = 0; r < pool->nthreads; r++) pthread_join(pool->threads[r], NULL);
    for (int r = 0; pool->fibers && r < pool->n; r++) starfold__fiber_destroy(pool->fibers[r]);
    free(pool->fibers);
    run_free(pool->spare);
    starfold__ar_inputs_clear(&pool->ar);
    free(pool->threads);
    free(pool->args);
    free(pool);
}

/* The strategy's pool, made on first use (run_lock held). */
static starfold_status_t pool_get(const char *name, starfold_strategy_t s, struct starfold__replica_pool **out)
{
    struct starfold__replica_pool *pool = s->pool;
    if (!pool) {
        if (!(pool = calloc(1, sizeof *pool))) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
        pool->n = s->n;
        pool->threads = calloc((size_t)s->n, sizeof *pool->threads);
        pool->args = calloc((size_t)s->n, sizeof *pool->args);
        if (!pool->threads || !pool->args) {
            free(pool->threads);
            free(pool->args);
            free(pool);
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
        }
        s->pool = pool;
        s->pool_destroy = pool_destroy;
    }
    *out = pool;
    return STARFOLD_OK;
}

/* The pool's n threads (run_lock held); an error naming the thread that could not start. */
static starfold_status_t threads_ready(const char *name, struct starfold__replica_pool *pool)
{
    while (pool->nthreads < pool->n) {
        const int r = pool->nthreads;
        pool->args[r] = (struct pool_arg){ pool, r, pool->gen }; /* no run is posted meanwhile: run_lock */
        const int err = pthread_create(&pool->threads[r], NULL, pool_main, &pool->args[r]);
        if (err != 0)
            return starfold__error(STARFOLD_ERR_RUNTIME, "%s: cannot start the thread of replica %d (%s); no replica ran",
                                   name, r, strerror(err));
        pool->nthreads++;
    }
    return STARFOLD_OK;
}

/* The pool's n fibers (run_lock held); an error naming the replica whose stack could not be mapped. */
static starfold_status_t fibers_ready(const char *name, struct starfold__replica_pool *pool)
{
    if (!pool->fibers && !(pool->fibers = calloc((size_t)pool->n, sizeof *pool->fibers)))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    for (int r = 0; r < pool->n; r++)
        if (!pool->fibers[r] && !(pool->fibers[r] = starfold__fiber_create()))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: cannot map a stack for replica %d; no replica ran",
                                   name, r);
    return STARFOLD_OK;
}

/* Runs every replica of @run in the pool's threads and returns when all have returned. */
static void pool_run(struct starfold__replica_pool *pool, starfold__run_t *run)
{
    pool->run = run;
    __atomic_store_n(&pool->busy, pool->n, __ATOMIC_RELAXED);
    __atomic_store_n(&pool->gen, pool->gen + 1, __ATOMIC_RELEASE);
    starfold__event_post(&pool->wake);
    for (;;) {
        const unsigned ev = starfold__event_seq(&pool->idle);
        if (__atomic_load_n(&pool->busy, __ATOMIC_ACQUIRE) == 0) break;
        starfold__event_wait(&pool->idle, ev, NULL);
    }
    pool->run = NULL;
}

static void turn_main(void *rc)
{
    replica_body(rc);
}

/* What moves a run on: collectives joined and completed, replicas returned, a break. Lock held. */
static long run_progress(const starfold__run_t *run)
{
    long p = run->gen + run->broken;
    for (int r = 0; r < run->n; r++) p += run->ncalls[r] + run->done[r];
    return p;
}

/*
 * Runs every replica of @run in turn on this thread (the pool's fibers) and returns when all have
 * returned. A replica runs until it returns or waits in a collective; then the next one still
 * running gets its turn. A whole round in which no replica moved would be a bug (a collective
 * every waiting replica waits for, with none left to join it): the run is broken so that every
 * replica leaves with an error rather than the loop spinning.
 */
static void turns_run(struct starfold__replica_pool *pool, starfold__run_t *run)
{
    const int n = run->n;
    unsigned char finished[STARFOLD_MAX_DEVICES] = { 0 };
    char callers[STARFOLD_ERROR_LEN]; /* the caller's starfold_last_error(), as a run on other threads leaves it */
    starfold__error_save(callers);
    for (int r = 0; r < n; r++) starfold__fiber_start(pool->fibers[r], turn_main, &run->rcs[r]);
    for (int left = n; left > 0;) {
        pthread_mutex_lock(&run->lock);
        const long before = run_progress(run);
        pthread_mutex_unlock(&run->lock);
        for (int r = 0; r < n; r++) {
            if (finished[r]) continue;
            if (starfold__fiber_resume(pool->fibers[r])) {
                finished[r] = 1;
                left--;
            }
            starfold__tls_rc = NULL; /* the caller's own, outside any replica */
            starfold__tls_run = NULL;
        }
        pthread_mutex_lock(&run->lock);
        if (left > 0 && run_progress(run) == before)
            starfold__run_break(run, STARFOLD_ERR_INTERNAL, 0, "replicas in turn: none of the %d still running can go on", left);
        pthread_mutex_unlock(&run->lock);
    }
    starfold__error_restore(callers);
}

/*
 * A run's storage: the run, its replica contexts and its per-replica arrays, a few KiB in all
 * (slots and messages). A strategy's pool keeps the last run's storage for the next (run_take(),
 * run_give_back()): allocating it afresh every step made glibc consolidate its free lists each
 * time, a tenth of a small step's cost in turn (make bench-api). Everything a run changes is set
 * again by run_reset(); the lock and the event are made once.
 */
static void run_free(starfold__run_t *run)
{
    if (!run) return;
    pthread_mutex_destroy(&run->lock);
    free(run->rcs);
    free(run->ncalls);
    free(run->done);
    free(run->status);
    free(run->msg);
    free(run->secondary);
    free(run->got_status);
    free(run->got_secondary);
    free(run->slots);
    free(run);
}

static starfold__run_t *run_alloc(starfold_strategy_t s)
{
    starfold__run_t *run = calloc(1, sizeof *run);
    if (!run) return NULL;
    if (pthread_mutex_init(&run->lock, NULL) != 0) {
        free(run);
        return NULL;
    }
    const size_t n = (size_t)s->n;
    run->strategy = s;
    run->n = s->n;
    run->rcs = calloc(n, sizeof *run->rcs);
    run->ncalls = calloc(n, sizeof *run->ncalls);
    run->done = calloc(n, sizeof *run->done);
    run->status = calloc(n, sizeof *run->status);
    run->msg = calloc(n, sizeof *run->msg);
    run->secondary = calloc(n, sizeof *run->secondary);
    run->got_status = calloc(n, sizeof *run->got_status);
    run->got_secondary = calloc(n, sizeof *run->got_secondary);
    run->slots = calloc(n, sizeof *run->slots);
    if (!run->rcs || !run->ncalls || !run->done || !run->status || !run->msg || !run->secondary ||
        !run->got_status || !run->got_secondary || !run->slots) {
        run_free(run);
        return NULL;
    }
    for (int r = 0; r < run->n; r++) {
        run->rcs[r].run = run;
        run->rcs[r].id = r;
        run->rcs[r].device = s->devices[r];
        run->rcs[r].strategy = s;
    }
    return run;
}

/* Everything a run of @fn changes, as run_alloc() left it. */
static void run_reset(starfold__run_t *run, starfold_replica_fn_t fn, void *arg)
{
    const size_t n = (size_t)run->n;
    run->fn = fn;
    run->arg = arg;
    run->in_turn = 0;
    memset(run->ncalls, 0, n * sizeof *run->ncalls);
    memset(run->done, 0, n * sizeof *run->done);
    memset(run->status, 0, n * sizeof *run->status);
    memset(run->secondary, 0, n * sizeof *run->secondary);
    memset(run->got_status, 0, n * sizeof *run->got_status);
    memset(run->got_secondary, 0, n * sizeof *run->got_secondary);
    memset(run->slots, 0, n * sizeof *run->slots);
    for (size_t r = 0; r < n; r++) {
        run->msg[r][0] = '\0';
        run->rcs[r].result = NULL;
    }
    run->gen = 0;
    run->kind = COLL_NONE;
    run->arrived = 0;
    run->first = 0;
    run->executing = 0;
    run->coll_status = STARFOLD_OK;
    run->coll_msg[0] = '\0';
    run->broken = 0;
    run->broken_status = STARFOLD_OK;
    run->broken_secondary = 0;
    run->broken_msg[0] = '\0';
    run->next_live = NULL;
}

/* A run of @fn(@arg) for the pool's strategy, live; NULL when out of memory (run_lock held). */
static starfold__run_t *run_take(struct starfold__replica_pool *pool, starfold_strategy_t s, starfold_replica_fn_t fn,
                                 void *arg)
{
    starfold__run_t *run = pool->spare;
    pool->spare = NULL;
    if (!run && !(run = run_alloc(s))) return NULL;
    run_reset(run, fn, arg);
    starfold__run_live_add(run);
    return run;
}

/* Ends @run: no longer live, its replicas' results released, its storage kept for the next run
 * (run_lock held). */
static void run_give_back(struct starfold__replica_pool *pool, starfold__run_t *run)
{
    starfold__run_live_remove(run);
    for (int r = 0; r < run->n; r++) {
        starfold_value_destroy(run->rcs[r].result);
        run->rcs[r].result = NULL;
    }
    if (!pool->spare) pool->spare = run;
    else run_free(run);
}

/*
 * The replicas' results, regrouped as TensorFlow's strategy.run regroups what its replicas return:
 * none from every replica gives NULL; one from every replica, a PerReplica of them (or the object
 * itself when all returned the same one). Called after the threads joined, so no lock.
 */
static starfold_status_t regroup_results(const char *name, starfold__run_t *run, starfold_value_t *result)
{
    int first_set = -1, first_unset = -1;
    for (int r = 0; r < run->n; r++) {
        if (run->rcs[r].result && first_set < 0) first_set = r;
        if (!run->rcs[r].result && first_unset < 0) first_unset = r;
    }
    if (first_set < 0) {
        *result = NULL;
        return STARFOLD_OK;
    }
    if (first_unset >= 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: replica %d returned a result and replica %d none (every replica returns one, or none "
                               "does)",
                               name, first_set, first_unset);
    starfold_value_t values[STARFOLD_MAX_DEVICES];
    for (int r = 0; r < run->n; r++) values[r] = run->rcs[r].result;
    const starfold_status_t st = starfold_value_regroup(STARFOLD_VALUE_PER_REPLICA, run->n, values, result);
    if (st != STARFOLD_OK)
        return starfold__error(st, "%s: the replicas' results cannot form one PerReplica value: %s", name,
                               starfold_last_error());
    return STARFOLD_OK;
}

static starfold_status_t run_replicas(const char *name, starfold_strategy_t strategy, starfold_replica_fn_t fn,
                                      void *arg, starfold_value_t *result)
{
    if (!strategy || !fn)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", name, !strategy ? "strategy" : "fn");
    if (starfold__tls_run)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: called from a replica function or a merge function", name);
    pthread_mutex_lock(&strategy->run_lock);
    struct starfold__replica_pool *pool = NULL;
    starfold__run_t *run = NULL;
    starfold_status_t st = pool_get(name, strategy, &pool);
    if (st == STARFOLD_OK && !(run = run_take(pool, strategy, fn, arg)))
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    if (st != STARFOLD_OK) {
        pthread_mutex_unlock(&strategy->run_lock);
        return st;
    }
    run->in_turn = strategy->replica_mode == STARFOLD_REPLICAS_IN_TURN;
    st = run->in_turn ? fibers_ready(name, pool) : threads_ready(name, pool);
    if (st == STARFOLD_OK) {
        if (run->in_turn) turns_run(pool, run);
        else pool_run(pool, run);
    }
    pthread_mutex_unlock(&strategy->run_lock);

    if (st == STARFOLD_OK) {
        /* The lowest replica whose failure is its own; else the lowest failure. */
        int pick = -1;
        for (int r = 0; r < run->n && pick < 0; r++)
            if (run->status[r] != STARFOLD_OK && !run->secondary[r]) pick = r;
        for (int r = 0; r < run->n && pick < 0; r++)
            if (run->status[r] != STARFOLD_OK) pick = r;
        /* A replica function may fail without recording a detail: then the status names the failure. */
        if (pick >= 0 && run->msg[pick][0])
            st = starfold__error(run->status[pick], "replica %d (device %d): %s", pick, run->rcs[pick].device, run->msg[pick]);
        else if (pick >= 0)
            st = starfold__error(run->status[pick], "replica %d (device %d) returned %s with no detail", pick,
                                 run->rcs[pick].device, starfold_status_string(run->status[pick]));
    }
    if (st == STARFOLD_OK && result) st = regroup_results(name, run, result);
    pthread_mutex_lock(&strategy->run_lock);
    run_give_back(pool, run);
    pthread_mutex_unlock(&strategy->run_lock);
    return st;
}

STARFOLD_API starfold_status_t starfold_strategy_set_replica_mode(starfold_strategy_t strategy,
                                                                  starfold_replica_mode_t mode)
{
    static const char fn[] = "starfold_strategy_set_replica_mode";
    if (!strategy) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL strategy", fn);
    if (mode != STARFOLD_REPLICAS_THREADS && mode != STARFOLD_REPLICAS_IN_TURN)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown replica mode %d", fn, (int)mode);
    if (starfold__tls_run) /* its run holds run_lock */
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: called from a replica function or a merge function", fn);
    pthread_mutex_lock(&strategy->run_lock); /* after a run in progress */
    __atomic_store_n(&strategy->replica_mode, mode, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&strategy->run_lock);
    return STARFOLD_OK;
}

STARFOLD_API starfold_replica_mode_t starfold_strategy_replica_mode(starfold_strategy_t strategy)
{
    /* No lock: a replica function may ask, while its run holds run_lock. */
    return strategy ? __atomic_load_n(&strategy->replica_mode, __ATOMIC_RELAXED) : STARFOLD_REPLICAS_IN_TURN;
}

STARFOLD_API starfold_status_t starfold_strategy_run(starfold_strategy_t strategy, starfold_replica_fn_t fn, void *arg)
{
    return run_replicas("starfold_strategy_run", strategy, fn, arg, NULL);
}

STARFOLD_API starfold_status_t starfold_strategy_run_results(starfold_strategy_t strategy, starfold_replica_fn_t fn,
                                                             void *arg, starfold_value_t *result)
{
    static const char name[] = "starfold_strategy_run_results";
    if (!result) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL result", name);
    starfold_value_t r = NULL;
    const starfold_status_t st = run_replicas(name, strategy, fn, arg, &r);
    if (st == STARFOLD_OK) *result = r;
    return st;
}

