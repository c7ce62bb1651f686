/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * strategy.run and the replica context, private to four files of one concern each:
 *
 *   replica_run.c          running the replicas: fibers in turn, or the strategy's threads; a run's
 *                          storage, strategy.run and its results
 *   rendezvous.c           the rendezvous behind every collective, and what breaks a run (calls that
 *                          differ, a replica that returned, a timeout) instead of hanging
 *   replica_collectives.c  what the leader of a rendezvous runs: all_reduce, all_gather, a mirrored
 *                          variable's update, merge_call
 *   replica_context.c      the replica context: its accessors, its collectives' local checks, its own
 *                          values
 *   replica_lookup.c       the calling thread's context, and which context pointers may still be read
 *
 * In turn (STARFOLD_REPLICAS_IN_TURN, the default). The replicas are fibers (base/fiber.h) on the
 * calling thread, resumed one after the other; a replica waiting in a rendezvous yields instead of
 * sleeping, and the leader, the last to arrive, goes on at once. TensorFlow's order (it resumes its
 * replica threads one at a time) without its deadlock (a blocking collective called from a
 * TensorFlow replica waits for replicas that never run: tensorflow#53748):
 *
 *     caller:  resume 0 ... resume 1 ... resume 2 (leader: runs the collective, goes on, returns)
 *              resume 0 (its results are there, it goes on) ... resume 1 ...
 *
 * No thread sleeps or wakes, which is what a small step costs with threads (BENCHMARKS.md).
 *
 * Threads (STARFOLD_REPLICAS_THREADS). starfold_strategy_run() runs each replica in a thread of the
 * strategy's pool, made by the first such run (all of them before any replica runs, so a failed
 * pthread_create never leaves a replica waiting for a missing one), woken together and waited for.
 * Replicas run concurrently, each with its own thread-local state.
 *
 * Rendezvous. A collective is the k-th all_reduce, all_gather, merge_call or update of a mirrored
 * variable (assign, assign_add, assign_sub: variables.c) of every replica. Each replica
 * deposits its slot (its values, or its merge argument) and waits; the last one to arrive is the
 * leader: it runs the collective (compiles and submits one graph, or runs merge_fn), publishes the
 * outcome and wakes the others, each of which picks its own result from its slot.
 *
 *     replica 0 --- slot ---\                       /--- result ---> replica 0 continues
 *     replica 1 --- slot ----+-- [last arrival runs it] --- result ---> replica 1 continues
 *     replica 2 --- slot ---/   (gen k -> k + 1)    \--- result ---> replica 2 continues
 *
 * The calling thread's replica context is thread-local: NULL outside a run and inside a merge
 * function (the cross-replica context), which is how cross-replica methods refuse replica contexts.
 */
#ifndef STARFOLD_DISTRIBUTE_REPLICA_H
#define STARFOLD_DISTRIBUTE_REPLICA_H

#include <pthread.h>

#include "base/event.h"
#include "base/fiber.h"
#include "distribute/distribute.h"

#define SF_RUN_MSG_LEN 512

/* TensorFlow's words for calls that differ between replicas. */
#define SF_RUN_MISMATCH "Some replicas made a different number of replica_context().merge_call() calls."

/* The collectives; the last three are a mirrored variable's updates in the replica context. */
typedef enum coll_kind {
    COLL_NONE = 0,
    COLL_ALL_REDUCE,
    COLL_MERGE_CALL,
    COLL_ALL_GATHER,
    COLL_ASSIGN,
    COLL_ASSIGN_ADD,
    COLL_ASSIGN_SUB
} coll_kind_t;

static inline const char *coll_name(coll_kind_t k)
{
    return k == COLL_ALL_REDUCE    ? "all_reduce"
           : k == COLL_MERGE_CALL  ? "merge_call"
           : k == COLL_ALL_GATHER  ? "all_gather"
           : k == COLL_ASSIGN      ? "assign"
           : k == COLL_ASSIGN_ADD  ? "assign_add"
           : k == COLL_ASSIGN_SUB  ? "assign_sub"
                                   : "none";
}

/* One replica's part of the collective in progress. */
typedef struct slot {
    starfold_status_t local_status; /* an error found by the replica itself: the collective fails */
    char local_msg[SF_RUN_MSG_LEN];
    /* all_reduce (and all_gather, assign*: one value, op unused) */
    starfold_op_t op;
    size_t nvalues;
    int *comps;                     /* [nvalues] this replica's component of each value */
    const starfold_value_t *values;
    starfold_communication_options_t options;
    starfold_value_t *results;      /* [nvalues] where this replica wants its results */
    int same_as_last;               /* all_reduce: this replica passed what it passed to the last one
                                       (its row of the kept pairs' sources, see ar_inputs_t) */
    /* assign, assign_add, assign_sub */
    starfold_value_t variable;
    /* merge_call */
    starfold_merge_fn_t fn;
    void *arg;
    void *result;
} slot_t;

typedef struct starfold__run starfold__run_t;

struct starfold_replica_context {
    starfold__run_t *run;
    int id;
    int device;
    starfold_strategy_t strategy;
    starfold_value_t result;       /* starfold_replica_context_set_result()'s, a reference; NULL: none */
};

struct starfold__run {
    starfold_strategy_t strategy;
    starfold_replica_fn_t fn;
    void *arg;
    int n;
    int in_turn;                   /* the replicas are fibers of the calling thread */
    pthread_mutex_t lock;
    /*
     * Posted (lock held) when a collective completes or the run breaks. Waiters sleep on it without
     * the lock, so that the replicas leave a collective together; a replica whose collective
     * succeeded leaves without taking the lock again (starfold__rendezvous()).
     */
    starfold__event_t ev;
    struct starfold_replica_context *rcs;
    /* per replica */
    long *ncalls;                  /* collectives entered */
    int *done;                     /* returned from fn */
    starfold_status_t *status;     /* what fn returned */
    char (*msg)[SF_RUN_MSG_LEN];          /* its error detail */
    int *secondary;                /* its error is a consequence of another replica's */
    starfold_status_t *got_status; /* the last collective error it received */
    int *got_secondary;            /* ... and whether that was a consequence of another replica's */
    /* the collective in progress: its index is gen (atomic; written under the lock) */
    long gen;
    coll_kind_t kind;
    int arrived;
    int first;                     /* first replica to arrive */
    int executing;                 /* the leader runs it: no timeout any more */
    slot_t *slots;
    starfold_status_t coll_status; /* outcome of collective gen - 1 */
    char coll_msg[SF_RUN_MSG_LEN];
    /* broken: every collective fails at once */
    int broken;
    starfold_status_t broken_status;
    int broken_secondary;
    char broken_msg[SF_RUN_MSG_LEN];
    starfold__run_t *next_live;    /* the list of live runs (live_lock) */
};

/*
 * The pairs the leader made for its last all_reduce: the PerReplica values over the replicas' own,
 * each its own destination, and what they were made of: every replica's value (its stamp) and
 * component. The same values and components next time have the same devices and views (stamps say
 * so), so the pairs are used again as they are, with their values' stamps, and the batch plan of
 * the last step is taken again by its id (plan_id; batch_plan.c). A step of a training loop then
 * makes nothing here: a pair holds a whole resolved destination (STARFOLD_MAX_DEVICES device
 * numbers), and 1,000 of them made afresh were a megabyte cleared every step.
 * Kept in the strategy's pool, used by the leader alone (one run at a time, one collective at a
 * time). The values hold no reference on what they borrow and are only used while the stamps match
 * (the sources alive and unmoved); their memory is their own (not the arena's), so they may be
 * destroyed after their context.
 */
typedef struct ar_inputs {
    size_t nv;
    int n;
    unsigned long long *src;     /* [r * nv + i] stamp of replica r's value i */
    int *comps;                  /* [r * nv + i] its component */
    starfold__pair_t *pairs;     /* [nv] the pairs made over them, one reference on each value */
    unsigned long long plan_id;  /* the batch plan the last call over these pairs used (0: none yet) */
} ar_inputs_t;

/* The calling thread's replica context (NULL: the cross-replica context) and the run it is a
 * replica of (replica_lookup.c). Set by the replica's body, saved across a fiber's turns. */
extern _Thread_local struct starfold_replica_context *starfold__tls_rc;
extern _Thread_local starfold__run_t *starfold__tls_run;

/* replica_lookup.c: a run is live (its contexts may be looked up) from run_take() to run_give_back(). */
void starfold__run_live_add(starfold__run_t *run);
void starfold__run_live_remove(starfold__run_t *run);

/* A copy of what a replica context says, and the run it belongs to (not to be dereferenced later). */
typedef struct rc_view {
    const starfold__run_t *run;
    int id, device, n;
    starfold_strategy_t strategy;
} rc_view_t;

/*
 * Fills @out from @rc when @rc is the calling thread's own context or one of a live run; returns 0,
 * or -1 for NULL or a context whose run has ended (nothing read through @rc then).
 */
int starfold__rc_lookup(starfold_replica_context_t rc, rc_view_t *out);

/* rendezvous.c */
/* Marks the run broken with an error (the first cause wins) and wakes every waiting replica. Lock held. */
void starfold__run_break(starfold__run_t *run, starfold_status_t st, int secondary, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Joins collective number ncalls[rc->id] with slot @mine; its outcome for this replica (the
 * replica's results are in its slot's output fields). */
starfold_status_t starfold__rendezvous(starfold_replica_context_t rc, coll_kind_t kind, const slot_t *mine,
                                       double timeout, const char *fn);

/* replica_collectives.c */
/* The leader runs collective @k of @run (every slot filled); the outcome, its text in @msg. */
starfold_status_t starfold__collective_execute(starfold__run_t *run, long k, char *msg);
/* Whether replica @r passes what it passed to the last all_reduce (its components then in @comps). */
int starfold__ar_inputs_row_same(const ar_inputs_t *a, int r, int n, size_t nv, const starfold_value_t *values,
                                 int *comps);
void starfold__ar_inputs_clear(ar_inputs_t *a);

/* The strategy's replica threads or fibers, made by its first run (replica_run.c has the picture). */
struct starfold__replica_pool {
    starfold__event_t wake;        /* a run was posted, or quit */
    starfold__event_t idle;        /* busy reached 0 */
    int n;                         /* replicas */
    int nthreads;                  /* threads running */
    pthread_t *threads;
    struct pool_arg { struct starfold__replica_pool *pool; int r; unsigned long seen; } *args;
    unsigned long gen;             /* atomic: runs posted */
    starfold__run_t *run;          /* the run of generation gen */
    int busy;                      /* atomic: threads still in it */
    int quit;                      /* atomic */
    starfold__fiber_t **fibers;    /* [n] replicas in turn, made by the first such run */
    starfold__run_t *spare;        /* the last run's storage, for the next (run_take()) */
    ar_inputs_t ar;                /* the leaders' last all_reduce (execute_all_reduce()) */
};

/* The last all_reduce's pairs, kept by the strategy's pool (NULL before its first run). */
static inline ar_inputs_t *starfold__pool_ar_inputs(starfold_strategy_t s)
{
    return s->pool ? &s->pool->ar : NULL;
}

#endif
