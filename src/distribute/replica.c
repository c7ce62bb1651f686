/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * strategy.run and the replica context: replica threads, the rendezvous behind all_reduce and
 * merge_call, and the errors that replace TensorFlow's hangs.
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
 * Errors instead of hangs. The run is "broken" - every replica waiting in a collective fails at once,
 * and every later collective fails as soon as it is called - when:
 *  - a replica returns from its function while another waits in a collective, or calls a collective
 *    after another has returned: the numbers of calls differ (TensorFlow: "Some replicas made a
 *    different number of replica_context().merge_call() calls.");
 *  - replicas call different collectives (all_reduce here, merge_call there) at the same position;
 *  - a replica waits longer than its timeout_seconds while some replica has not arrived: the
 *    collective is abandoned before anything was submitted, so no input changed (STARFOLD_ERR_TIMEOUT).
 * A collective that every replica joined but that fails (replicas disagree on the values, a
 * reduction error, merge_fn's error) fails for every replica and does not break the run.
 *
 * The calling thread's replica context is thread-local: NULL outside a run and inside a merge
 * function (the cross-replica context), which is how cross-replica methods refuse replica contexts.
 *
 * Lifetime. Replica contexts live in their run, which starfold_strategy_run() frees before it returns;
 * a caller may still hold one (kept in a global, passed to another thread). Such a pointer is never
 * dereferenced: a context other than the calling thread's own is looked up by address among the live
 * runs (a process-wide list, under its own lock, that a run leaves before it is freed), and only a
 * context found there is read. A stale one gets STARFOLD_ERR_INVALID_ARGUMENT, or the accessors'
 * NULL answers.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "base/common.h"
#include "base/event.h"
#include "base/fiber.h"
#include "distribute/distribute.h"

#define MSG_LEN 512

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

static const char *coll_name(coll_kind_t k)
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
    char local_msg[MSG_LEN];
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
     * succeeded leaves without taking the lock again (rendezvous()).
     */
    starfold__event_t ev;
    struct starfold_replica_context *rcs;
    /* per replica */
    long *ncalls;                  /* collectives entered */
    int *done;                     /* returned from fn */
    starfold_status_t *status;     /* what fn returned */
    char (*msg)[MSG_LEN];          /* its error detail */
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
    char coll_msg[MSG_LEN];
    /* broken: every collective fails at once */
    int broken;
    starfold_status_t broken_status;
    int broken_secondary;
    char broken_msg[MSG_LEN];
    starfold__run_t *next_live;    /* the list of live runs (live_lock) */
};

static _Thread_local struct starfold_replica_context *tls_rc; /* NULL: cross-replica context */
static _Thread_local starfold__run_t *tls_run;                       /* the run this thread is a replica of */

starfold_replica_context_t starfold__current_replica(void)
{
    return tls_rc;
}

/* ------------------------------------------------------------------------------------------------
 * Live runs: which replica context pointers may be read (see "Lifetime" above)
 */

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static starfold__run_t *live_runs;

static void live_add(starfold__run_t *run)
{
    pthread_mutex_lock(&live_lock);
    run->next_live = live_runs;
    live_runs = run;
    pthread_mutex_unlock(&live_lock);
}

static void live_remove(starfold__run_t *run)
{
    pthread_mutex_lock(&live_lock);
    for (starfold__run_t **p = &live_runs; *p; p = &(*p)->next_live)
        if (*p == run) {
            *p = run->next_live;
            break;
        }
    pthread_mutex_unlock(&live_lock);
}

/* A copy of what a replica context says, and the run it belongs to (not to be dereferenced later). */
typedef struct rc_view {
    const starfold__run_t *run;
    int id, device, n;
    starfold_strategy_t strategy;
} rc_view_t;

/*
 * Fills @out from @rc when @rc is the calling thread's own context or one of a live run; returns 0,
 * or -1 for NULL or a context whose run has ended (nothing read through @rc then). Addresses are
 * compared as integers: @rc may point anywhere.
 */
static int rc_lookup(starfold_replica_context_t rc, rc_view_t *out)
{
    if (!rc) return -1;
    if (rc == tls_rc) {
        *out = (rc_view_t){ rc->run, rc->id, rc->device, rc->run->n, rc->strategy };
        return 0;
    }
    const uintptr_t at = (uintptr_t)rc;
    int found = -1;
    pthread_mutex_lock(&live_lock);
    for (const starfold__run_t *run = live_runs; run && found < 0; run = run->next_live) {
        const uintptr_t lo = (uintptr_t)run->rcs, hi = (uintptr_t)(run->rcs + run->n);
        if (at < lo || at >= hi || (at - lo) % sizeof *run->rcs != 0) continue;
        *out = (rc_view_t){ run, rc->id, rc->device, run->n, rc->strategy };
        found = 0;
    }
    pthread_mutex_unlock(&live_lock);
    return found;
}

STARFOLD_API starfold_replica_context_t starfold_get_replica_context(void)
{
    return tls_rc;
}

starfold_status_t starfold__require_cross_replica(const char *fn)
{
    if (!tls_rc) return STARFOLD_OK;
    return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                    "%s: Method requires being in cross-replica context, use get_replica_context().merge_call() "
                    "(called from replica %d)",
                    fn, tls_rc->id);
}

/* ------------------------------------------------------------------------------------------------
 * Replica context accessors
 */

/* The accessors answer as for NULL when the context's run has ended. */
/* Ids and counts are global under MultiWorkerMirroredStrategy: this process's replicas start at its
 * offset, and every process's are in sync. */
STARFOLD_API int starfold_replica_context_replica_id_in_sync_group(starfold_replica_context_t context)
{
    rc_view_t v;
    return rc_lookup(context, &v) == 0 ? v.strategy->replica_offset + v.id : -1;
}

STARFOLD_API int starfold_replica_context_num_replicas_in_sync(starfold_replica_context_t context)
{
    rc_view_t v;
    if (rc_lookup(context, &v) != 0) return 0;
    return v.strategy->total_replicas ? v.strategy->total_replicas : v.n;
}

STARFOLD_API int starfold_replica_context_device(starfold_replica_context_t context)
{
    rc_view_t v;
    return rc_lookup(context, &v) == 0 ? v.device : -2;
}

STARFOLD_API starfold_strategy_t starfold_replica_context_strategy(starfold_replica_context_t context)
{
    rc_view_t v;
    return rc_lookup(context, &v) == 0 ? v.strategy : NULL;
}

/* select_replica: the component on this device, else the only one, else the one of this index. */
static int select_index(const rc_view_t *rc, starfold_value_t v)
{
    int c = starfold__value_component_on(v, rc->device);
    if (c < 0 && v->n == 1) c = 0;
    if (c < 0 && v->n == rc->n) c = rc->id;
    return c;
}

STARFOLD_API starfold_status_t starfold_replica_context_select(starfold_replica_context_t context,
                                                               starfold_value_t value, starpu_data_handle_t *handle)
{
    static const char fn[] = "starfold_replica_context_select";
    if (!context || !value || !handle)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                        !context ? "context" : !value ? "value" : "handle");
    rc_view_t rc;
    if (rc_lookup(context, &rc) != 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the replica context is no longer valid (its "
                               "starfold_strategy_run() has returned)", fn);
    const int c = select_index(&rc, value);
    if (c < 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                        "%s: the value (%d components) has no component for replica %d (device %d)", fn, value->n,
                        rc.id, rc.device);
    if (!(*handle = starfold__value_handle(value, c))) {
        char why[512];
        snprintf(why, sizeof why, "%s", starfold_last_error());
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: %s", fn, why);
    }
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Rendezvous
 */

/* Marks the run broken with an error (the first cause wins) and wakes every waiting replica. Lock held. */
static void break_run(starfold__run_t *run, starfold_status_t st, int secondary, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void break_run(starfold__run_t *run, starfold_status_t st, int secondary, const char *fmt, ...)
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

static const char mismatch[] = "Some replicas made a different number of replica_context().merge_call() calls.";

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

static starfold_status_t execute(starfold__run_t *run, long k, char *msg);

/* In turn: lets the next replica run. What is the thread's own for a replica with a thread of its
 * own comes back with it: its context, and starfold_last_error()'s text. */
static void turn_yield(void)
{
    struct starfold_replica_context *rc = tls_rc;
    starfold__run_t *run = tls_run;
    char why[STARFOLD_ERROR_LEN];
    starfold__error_save(why);
    starfold__fiber_yield();
    tls_rc = rc;
    tls_run = run;
    starfold__error_restore(why);
}

/*
 * Joins collective number ncalls[rc->id] with slot @mine; returns its outcome for this replica (the
 * replica's results are in its slot's output fields).
 */
static starfold_status_t rendezvous(starfold_replica_context_t rc, coll_kind_t kind, const slot_t *mine,
                                    double timeout, const char *fn)
{
    starfold__run_t *run = rc->run;
    const int r = rc->id;
    char msg[MSG_LEN] = "";
    starfold_status_t st = STARFOLD_OK;
    int secondary = 0;

    pthread_mutex_lock(&run->lock);
    const long k = run->ncalls[r]++;
    if (!run->broken) {
        for (int j = 0; j < run->n; j++) {
            if (!run->done[j]) continue;
            if (run->status[j] == STARFOLD_OK)
                break_run(run, STARFOLD_ERR_INVALID_ARGUMENT, 0,
                          "%s replica %d returned from its function after %ld collective(s); replica %d called %s "
                          "as collective #%ld",
                          mismatch, j, run->ncalls[j], r, coll_name(kind), k);
            else
                break_run(run, run->status[j], 1, "replica %d failed before joining collective #%ld (%s): %s", j, k,
                          coll_name(kind), run->msg[j]);
        }
    }
    if (!run->broken && k != run->gen)
        break_run(run, STARFOLD_ERR_INTERNAL, 0, "replica %d entered collective #%ld while #%ld is open", r, k, run->gen);
    if (!run->broken && run->arrived > 0 && run->kind != kind)
        break_run(run, STARFOLD_ERR_INVALID_ARGUMENT, 0, "%s Collective #%ld is %s on replica %d but %s on replica %d.",
                  mismatch, k, coll_name(run->kind), run->first, coll_name(kind), r);
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
        st = execute(run, k, msg);
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
            break_run(run, STARFOLD_ERR_TIMEOUT, 0,
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

static ar_inputs_t *pool_ar_inputs(starfold_strategy_t s);

static void pairs_free(starfold__pair_t *pairs, size_t nv)
{
    for (size_t i = 0; pairs && i < nv; i++) starfold_value_destroy(pairs[i].value);
    free(pairs);
}

static void ar_inputs_clear(ar_inputs_t *a)
{
    pairs_free(a->pairs, a->nv);
    free(a->src);
    free(a->comps);
    memset(a, 0, sizeof *a);
}

/*
 * Whether replica @r passed the very values it passed to the last all_reduce: every stamp as kept.
 * Those values passed the checks then, and still would: a stamp is never given twice and changes
 * with a value's storage, a value's context and devices never change, and kept pairs never hold a
 * regrouped value (whose stamp does not follow its parts). Their components are then the kept
 * ones, copied to @comps. A step of a training loop reads one word of each value here instead of
 * checking it again. Each replica asks this of its own row, in its own thread, before it joins (the
 * kept pairs change only while every replica waits in the rendezvous); the leader then only reads
 * the answers.
 */
static int ar_inputs_row_same(const ar_inputs_t *a, int r, int n, size_t nv, const starfold_value_t *values, int *comps)
{
    if (!a || !a->pairs || a->nv != nv || a->n != n) return 0;
    const unsigned long long *stamps = &a->src[(size_t)r * nv];
    for (size_t i = 0; i < nv; i++)
        if (!values[i] || __atomic_load_n(&values[i]->stamp, __ATOMIC_RELAXED) != stamps[i]) return 0;
    memcpy(comps, &a->comps[(size_t)r * nv], sizeof *comps * nv);
    return 1;
}

static int ar_inputs_match(const ar_inputs_t *a, const slot_t *sl, int n, size_t nv)
{
    if (!a->pairs || a->nv != nv || a->n != n) return 0;
    for (int r = 0; r < n; r++)
        if (!sl[r].same_as_last) return 0;
    return 1;
}

/* New pairs over what the replicas passed: value i of every replica as one PerReplica value, which is
 * also its destination (TensorFlow's batch_all_reduce). The stamps and components they were made of
 * go to @stamps and @comps ([r * nv + i]) when given; *@regrouped says whether a source is a
 * regrouped value (which follows its parts: such pairs are not kept). */
static starfold_status_t make_pairs(starfold_strategy_t s, const slot_t *sl, int n, size_t nv, starfold__pair_t **pairs,
                                    unsigned long long *stamps, int *comps_out, int *regrouped)
{
    starfold_status_t st = STARFOLD_OK;
    const size_t m = nv * (size_t)n;
    starfold_value_t *src = malloc(sizeof *src * m), *made = calloc(nv, sizeof *made);
    int *comps = malloc(sizeof *comps * m);
    starfold__pair_t *p = calloc(nv, sizeof *p);
    *regrouped = 0;
    if (!src || !comps || !made || !p) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < nv; i++) {
            const size_t k = (size_t)r * nv + i;
            src[k] = sl[r].values[i];
            comps[k] = sl[r].comps[i];
            *regrouped |= starfold__value_regrouped(src[k]);
            if (stamps) stamps[k] = __atomic_load_n(&src[k]->stamp, __ATOMIC_RELAXED);
            if (comps_out) comps_out[k] = comps[k];
        }
    SF_CHECK_GOTO(starfold__values_borrow_block(STARFOLD_VALUE_PER_REPLICA, n, s->devices, nv, src, comps, made), st, out);
    for (size_t i = 0; i < nv; i++) {
        p[i].value = made[i];
        p[i].dest.n = n;
        memcpy(p[i].dest.devices, s->devices, sizeof(int) * (size_t)n);
        p[i].dest.ctx = sl[0].values[i]->ctx;
    }
    *pairs = p;
    p = NULL;
out:
    free(src);
    free(comps);
    free(made);
    free(p);
    return st;
}

/*
 * The pairs over what the replicas passed into *@pairs: last all_reduce's when they are the same
 * (@as_last: ar_inputs_match(), which the caller asked; *@kept = 1: not the caller's), else new ones, remembered for next time unless a regrouped value is
 * among the sources (then *@kept = 0: the caller frees them with pairs_free()).
 */
static starfold_status_t ar_inputs_get(starfold_strategy_t s, const slot_t *sl, int n, size_t nv, int as_last,
                                       starfold__pair_t **pairs, int *kept)
{
    ar_inputs_t *a = pool_ar_inputs(s);
    *kept = 0;
    if (as_last) {
        *pairs = a->pairs;
        *kept = 1;
        return STARFOLD_OK;
    }
    const size_t m = nv * (size_t)n;
    unsigned long long *stamps = a ? malloc(sizeof *stamps * m) : NULL;
    int *comps = a ? malloc(sizeof *comps * m) : NULL;
    int regrouped = 0;
    const starfold_status_t st = make_pairs(s, sl, n, nv, pairs, stamps, comps, &regrouped);
    if (st != STARFOLD_OK || !a || !stamps || !comps || regrouped) {
        free(stamps);
        free(comps);
        return st; /* not kept: the caller's */
    }
    ar_inputs_clear(a);
    a->src = stamps;
    a->comps = comps;
    a->pairs = *pairs;
    a->nv = nv;
    a->n = n;
    *kept = 1;
    return STARFOLD_OK;
}

/* The leader's all_reduce: one batch_reduce_to of PerReplica values over every replica's handles. */
/* A collective the replicas of this process cannot run (@st, @msg): across processes, the others
 * get the refusal instead of waiting for this process. */
static starfold_status_t refuse(starfold__run_t *run, starfold_status_t st, const char *msg)
{
    if (run->strategy->cross_refuse) run->strategy->cross_refuse(run->strategy, st, msg, &run->slots[0].options);
    return st;
}

/*
 * A collective this small (bytes per replica) is settled by its leader before the others leave the
 * rendezvous. Its reduction takes less time than waking the replicas once more: left to themselves,
 * each would wake from the rendezvous, find its results unfinished, sleep on them and be woken again
 * when they are. With the leader waiting, each is woken once and finds its results done (on this
 * 2-core machine, a step of run + all_reduce of one 4 KiB tensor on 8 replicas: 0.12 ms instead of
 * 0.14, BENCHMARKS.md). A larger one returns at once, so that a replica submits its next tasks while
 * the reduction runs.
 */
#define SF_SETTLED_COLLECTIVE_BYTES ((size_t)64 << 10)

static int small_collective(const starfold_value_t *values, size_t nv)
{
    size_t bytes = 0;
    for (size_t i = 0; i < nv && bytes <= SF_SETTLED_COLLECTIVE_BYTES; i++)
        bytes += values[i]->count * starfold_dtype_size(values[i]->dtype);
    return bytes <= SF_SETTLED_COLLECTIVE_BYTES;
}

/* Waits for the @m results of a small collective (small_collective()); the first error. */
static starfold_status_t settle(const starfold_value_t *results, size_t m)
{
    starfold_status_t st = STARFOLD_OK;
    for (size_t i = 0; i < m && st == STARFOLD_OK; i++) st = starfold_value_wait(results[i]);
    return st;
}

static starfold_status_t execute_all_reduce(starfold__run_t *run, long k, char *msg)
{
    slot_t *sl = run->slots;
    const int n = run->n;
    const size_t nv = sl[0].nvalues;
    for (int r = 1; r < n; r++) {
        if (sl[r].nvalues != nv) {
            snprintf(msg, MSG_LEN, "all_reduce #%ld: replica %d passed %zu values, replica 0 passed %zu; the structure "
                     "of the value must be the same on every replica", k, r, sl[r].nvalues, nv);
            return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
        }
        if (sl[r].op != sl[0].op) {
            snprintf(msg, MSG_LEN, "all_reduce #%ld: replica %d reduces with %s, replica 0 with %s", k, r,
                     starfold_op_name(sl[r].op), starfold_op_name(sl[0].op));
            return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
        }
    }
    /* The shapes, unless every replica passed what the kept pairs were made of: those passed this
     * check then, and a value's stamp names its shape (8,000 values read on the leader alone). */
    const ar_inputs_t *last = pool_ar_inputs(run->strategy);
    const int as_last = last && ar_inputs_match(last, sl, n, nv);
    for (size_t i = 0; !as_last && i < nv; i++)
        for (int r = 1; r < n; r++) {
            const starfold_value_t a = sl[0].values[i], b = sl[r].values[i];
            if (a->dtype != b->dtype || a->count != b->count) {
                snprintf(msg, MSG_LEN, "all_reduce #%ld: value %zu is %zu x %s on replica %d but %zu x %s on replica 0; "
                         "the shapes must be the same on every replica", k, i, b->count, starfold_dtype_name(b->dtype),
                         r, a->count, starfold_dtype_name(a->dtype));
                return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
            }
        }

    starfold_status_t st = STARFOLD_OK;
    const starfold_strategy_t s = run->strategy;
    starfold__pair_t *pairs = NULL;
    int kept = 0; /* pairs kept by the pool (not freed here) */
    starfold_value_t *res = calloc(nv, sizeof *res);
    starfold_value_t *mine = calloc(nv * (size_t)n, sizeof *mine); /* [r * nv + i] */
    if (!res || !mine) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    /* The replicas hold their values until the collective is over: the values over them take no reference. */
    SF_CHECK_GOTO(ar_inputs_get(s, sl, n, nv, as_last, &pairs, &kept), st, out);
    /* Straight into one-component results, replica r's at mine[r * nv + i] (destinations in replica order).
     * Kept pairs are this very array, unchanged since the call that last used them (every replica
     * checked its own row of them, in its own thread): their batch plan is taken by its id, without
     * comparing a thousand stamps and destinations on the leader alone while the others wait. */
    st = starfold__strategy_all_reduce_split(s, sl[0].op, nv, pairs, &sl[0].options, "all_reduce", mine,
                                             kept ? &pool_ar_inputs(s)->plan_id : NULL);
    if (st == STARFOLD_ERR_NOT_SUPPORTED) { /* across processes: mirrored results, then each replica's component */
        SF_CHECK_GOTO(starfold__strategy_batch_reduce(s, sl[0].op, nv, pairs, &sl[0].options, "all_reduce", res), st, out);
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < nv; i++)
                SF_CHECK_GOTO(starfold__value_take_component(res[i], r, &mine[(size_t)r * nv + i]), st, out);
    } else if (st != STARFOLD_OK) {
        goto out;
    }
    if (small_collective(sl[0].values, nv)) SF_CHECK_GOTO(settle(mine, nv * (size_t)n), st, out);
    for (int r = 0; r < n; r++) memcpy(sl[r].results, &mine[(size_t)r * nv], sizeof *mine * nv);
    memset(mine, 0, sizeof *mine * nv * (size_t)n);
out:
    if (st != STARFOLD_OK) snprintf(msg, MSG_LEN, "%s", starfold_last_error());
    for (size_t i = 0; mine && i < nv * (size_t)n; i++) starfold_value_destroy(mine[i]);
    for (size_t i = 0; res && i < nv; i++) starfold_value_destroy(res[i]);
    if (!kept) pairs_free(pairs, nv);
    free(res);
    free(mine);
    return st;
}

/*
 * The leader's all_gather: every replica's component gathered, replica order, onto every replica's
 * device (starfold__gather_parts(), counts that may differ), each replica taking its own component of
 * the mirrored result.
 */
static starfold_status_t execute_all_gather(starfold__run_t *run, long k, char *msg)
{
    slot_t *sl = run->slots;
    const int n = run->n;
    const starfold_strategy_t s = run->strategy;
    starfold_status_t st = STARFOLD_OK;
    for (int r = 1; r < n && st == STARFOLD_OK; r++) {
        const starfold_value_t a = sl[0].values[0], b = sl[r].values[0];
        if (a->dtype != b->dtype)
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "all_gather #%ld: the value is %s on replica %d but %s on "
                                 "replica 0", k, starfold_dtype_name(b->dtype), r, starfold_dtype_name(a->dtype));
    }
    if (st != STARFOLD_OK && !s->cross_gather) {
        snprintf(msg, MSG_LEN, "%s", starfold_last_error());
        return st;
    }
    /* Each replica's component as one part, replica order; the counts may differ (TensorFlow's shapes
     * equal except along the axis). */
    starfold_view_t views[STARFOLD_MAX_DEVICES];
    size_t counts[STARFOLD_MAX_DEVICES];
    for (int r = 0; r < n; r++) {
        views[r] = starfold__value_view(sl[r].values[0], sl[r].comps[0]);
        counts[r] = sl[r].values[0]->count;
    }
    starfold__dest_t dest = { .n = n, .ctx = sl[0].values[0]->ctx };
    memcpy(dest.devices, s->devices, sizeof(int) * (size_t)n);
    starfold_value_t res = NULL;
    /* Across processes: every process's replicas, global replica order (a refusal here joins too). */
    if (s->cross_gather)
        st = s->cross_gather(s, st, sl[0].values[0]->dtype, 1, views, counts, 1, &dest, &sl[0].options, "all_gather", &res);
    else
        st = starfold__gather_parts(s->ops, s->topology, dest.ctx, sl[0].values[0]->dtype, n, s->devices, views, counts,
                                    &dest, "all_gather", &res);
    if (st == STARFOLD_OK && small_collective(&res, 1)) st = settle(&res, 1);
    for (int r = 0; r < n && st == STARFOLD_OK; r++) st = starfold__value_take_component(res, r, &sl[r].results[0]);
    if (st != STARFOLD_OK) {
        snprintf(msg, MSG_LEN, "%s", starfold_last_error());
        for (int r = 0; r < n; r++) {
            starfold_value_destroy(sl[r].results[0]);
            sl[r].results[0] = NULL;
        }
    }
    starfold_value_destroy(res);
    return st;
}

/*
 * The leader's update of a mirrored variable: TensorFlow's merge_fn of MirroredVariable's update in
 * the replica context (values_util.apply_aggregation, then the update of every copy), as one graph.
 * What the replicas passed is regrouped as TensorFlow regroups it: the same object from every replica
 * is that one value (a non-distributed value, or a per-replica one given whole), else one component
 * from each replica, on its device, makes the per-replica value.
 */
static starfold_status_t execute_update(starfold__run_t *run, long k, char *msg)
{
    slot_t *sl = run->slots;
    const int n = run->n;
    const starfold_strategy_t s = run->strategy;
    const starfold__update_t update = run->kind == COLL_ASSIGN_ADD   ? SF_UPDATE_ADD
                                      : run->kind == COLL_ASSIGN_SUB ? SF_UPDATE_SUB
                                                                     : SF_UPDATE_ASSIGN;
    const char *name = coll_name(run->kind);
    const starfold_value_t var = sl[0].variable;
    for (int r = 1; r < n; r++)
        if (sl[r].variable != var) {
            snprintf(msg, MSG_LEN, "%s #%ld: replica %d updates another variable than replica 0; a mirrored variable's "
                     "update is a collective of every replica on the same variable", name, k, r);
            return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
        }
    const starfold_variable_aggregation_t agg = var->var->agg;
    int same = 1;
    for (int r = 1; r < n; r++) same &= sl[r].values[0] == sl[0].values[0];
    const starfold_value_t v0 = sl[0].values[0];
    const int whole_distributed = same && v0->n > 1 && v0->kind == STARFOLD_VALUE_PER_REPLICA;
    if (same && !whole_distributed && n > 1 && agg == STARFOLD_AGGREGATION_SUM) {
        snprintf(msg, MSG_LEN, "%s #%ld: A non-DistributedValues value (the same %s value on every replica) cannot be "
                 "reduced with the given reduce op ReduceOp.SUM: it would count %d times (TensorFlow refuses too); "
                 "give each replica a value of its own", name, k, v0->n == 1 ? "one-component" : "mirrored", n);
        return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
    }
    if (!same && agg != STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA)
        for (int r = 0; r < n; r++) {
            const starfold_value_t v = sl[r].values[0];
            if (v->devices[sl[r].comps[0]] != s->devices[r]) {
                snprintf(msg, MSG_LEN, "%s #%ld: replica %d's value is on %s %d, not on the replica's device %d; each "
                         "replica's part of a per-replica value is on its own device", name, k, r,
                         v->devices[sl[r].comps[0]] == STARFOLD_DEVICE_HOST ? "the host," : "device",
                         v->devices[sl[r].comps[0]], s->devices[r]);
                return refuse(run, STARFOLD_ERR_INVALID_ARGUMENT, msg);
            }
        }

    starfold_status_t st = STARFOLD_OK;
    starfold_value_t pv = NULL, *src = malloc(sizeof *src * (size_t)n);
    int *comps = malloc(sizeof *comps * (size_t)n);
    if (!src || !comps) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    char fn[64];
    snprintf(fn, sizeof fn, "%s #%ld", name, k);
    const starfold_op_t op = agg == STARFOLD_AGGREGATION_MEAN ? STARFOLD_OP_MEAN : STARFOLD_OP_SUM;
    int reduce = 0, comp = -1;
    starfold_value_t value = v0;
    if (agg == STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA) {
        /* Replica 0's value: its component (of a whole per-replica value, component 0), alone. */
        const int c = whole_distributed ? 0 : sl[0].comps[0];
        SF_CHECK_GOTO(starfold__value_borrow_components(v0->ctx, STARFOLD_VALUE_PER_REPLICA, 1, &v0->devices[c], &v0, &c,
                                                        &pv),
                      st, out);
        value = pv;
    } else if (whole_distributed) {
        reduce = 1; /* the per-replica value every replica passed, reduced as it is */
    } else if (!same) {
        for (int r = 0; r < n; r++) {
            src[r] = sl[r].values[0];
            comps[r] = sl[r].comps[0];
        }
        SF_CHECK_GOTO(starfold__value_borrow_components(v0->ctx, STARFOLD_VALUE_PER_REPLICA, n, s->devices, src, comps, &pv),
                      st, out);
        value = pv;
        reduce = 1;
    } else if (s->cross_process) {
        /* One value for this process's replicas (its only replica's, or the same object from each) is
         * still one of several processes' values: TensorFlow all-reduces a worker's non-distributed
         * value across the workers (SUM with several replicas here was refused above). */
        reduce = 1;
    } /* else: one value, MEAN (or one replica): the value itself, each copy from its component beside it or copied */
    st = starfold__strategy_update_variable(s, var, update, value, reduce, agg == STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA, op,
                                            comp, &sl[0].options, fn);
out:
    if (st != STARFOLD_OK) snprintf(msg, MSG_LEN, "%s", starfold_last_error());
    starfold_value_destroy(pv);
    free(src);
    free(comps);
    return st;
}

/* The leader's merge_call: merge_fn of replica 0, once, in the cross-replica context. */
static starfold_status_t execute_merge_call(starfold__run_t *run, char *msg)
{
    const int n = run->n;
    const size_t nn = n > 0 ? (size_t)n : 1;
    void **args = malloc(sizeof *args * nn);
    void **results = calloc(nn, sizeof *results);
    if (!args || !results) {
        free(args);
        free(results);
        snprintf(msg, MSG_LEN, "merge_call: out of memory");
        return STARFOLD_ERR_OUT_OF_MEMORY;
    }
    for (int r = 0; r < n; r++) args[r] = run->slots[r].arg;
    struct starfold_replica_context *saved = tls_rc;
    tls_rc = NULL; /* cross-replica context */
    starfold_status_t st = run->slots[0].fn(run->strategy, n, args, results);
    tls_rc = saved;
    if (st != STARFOLD_OK) {
        const char *why = starfold_last_error();
        snprintf(msg, MSG_LEN, "merge_fn failed (%s)%s%s", starfold_status_string(st), why[0] ? ": " : "", why);
    } else {
        for (int r = 0; r < n; r++) run->slots[r].result = results[r];
    }
    free(args);
    free(results);
    return st;
}

static starfold_status_t execute(starfold__run_t *run, long k, char *msg)
{
    for (int r = 0; r < run->n; r++)
        if (run->slots[r].local_status != STARFOLD_OK) {
            snprintf(msg, MSG_LEN, "%s #%ld: replica %d: %.440s", coll_name(run->kind), k, r, run->slots[r].local_msg);
            /* Across processes the others are about to wait for this one: they get its refusal (every
             * collective but merge_call crosses the processes; an update does since each replica's value
             * is reduced, or broadcast from global replica 0, over all of them). */
            if (run->strategy->cross_refuse && run->kind != COLL_MERGE_CALL)
                run->strategy->cross_refuse(run->strategy, run->slots[r].local_status, msg,
                                            &run->slots[r].options);
            return run->slots[r].local_status;
        }
    return run->kind == COLL_ALL_REDUCE   ? execute_all_reduce(run, k, msg)
           : run->kind == COLL_ALL_GATHER ? execute_all_gather(run, k, msg)
           : run->kind == COLL_MERGE_CALL ? execute_merge_call(run, msg)
                                          : execute_update(run, k, msg);
}

/* The replica context must be the calling thread's own, in its replica function. */
static starfold_status_t check_own(starfold_replica_context_t rc, const char *fn)
{
    if (!rc) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL replica context", fn);
    if (tls_rc == rc) return STARFOLD_OK;
    rc_view_t v;
    if (rc_lookup(rc, &v) != 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: the replica context is no longer valid (its starfold_strategy_run() has returned)", fn);
    if (!tls_rc && tls_run == v.run)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: called in the cross-replica context (a merge function)",
                               fn);
    return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                           "%s: the replica context of replica %d is used outside that replica's function", fn, v.id);
}

/* Records a local error in the slot (the collective will fail for everyone with it). */
static void slot_fail(slot_t *sl, starfold_status_t st)
{
    sl->local_status = st;
    snprintf(sl->local_msg, sizeof sl->local_msg, "%s", starfold_last_error());
}

STARFOLD_API starfold_status_t starfold_replica_context_all_reduce(starfold_replica_context_t context,
                                                                   starfold_op_t op, size_t num_values,
                                                                   const starfold_value_t *values,
                                                                   const starfold_communication_options_t *options,
                                                                   starfold_value_t *results)
{
    static const char fn[] = "starfold_replica_context_all_reduce";
    starfold_status_t st;
    if ((st = check_own(context, fn)) != STARFOLD_OK) return st;
    slot_t sl;
    memset(&sl, 0, sizeof sl);
    sl.op = op;
    sl.nvalues = num_values;
    sl.values = values;
    sl.results = results;
    double timeout = 0;
    int few[16]; /* the components of a short list: no allocation in a small step */
    /* Local checks: a failure still joins, so that every replica fails together instead of waiting. */
    if (!results || !values || num_values == 0)
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                                num_values == 0 ? "all_reduce needs at least one value" : "NULL values or results"));
    else if ((int)op < 0 || (int)op >= STARFOLD_OP_COUNT)
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown reduce op %d", fn, (int)op));
    else if ((st = starfold__strategy_options(context->strategy, options, &sl.options)) != STARFOLD_OK)
        slot_fail(&sl, st);
    else if (!(sl.comps = num_values <= sizeof few / sizeof *few ? few : malloc(sizeof *sl.comps * num_values)))
        slot_fail(&sl, starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn));
    else {
        timeout = sl.options.timeout_seconds;
        sl.same_as_last = ar_inputs_row_same(pool_ar_inputs(context->strategy), context->id, context->strategy->n,
                                             num_values, values, sl.comps);
        for (size_t i = 0; !sl.same_as_last && i < num_values && sl.local_status == STARFOLD_OK; i++) {
            const starfold_value_t v = values[i];
            const int c = v ? starfold__value_component_on(v, context->device) : -1;
            if (!v)
                slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: value %zu is NULL", fn, i));
            else if (v->ctx != context->strategy->ctx)
                slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: value %zu belongs to another context", fn, i));
            else if (c < 0)
                slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                        "%s: value %zu has no component on this replica's device %d", fn, i,
                                        context->device));
            else
                sl.comps[i] = c;
        }
    }
    st = rendezvous(context, COLL_ALL_REDUCE, &sl, timeout, fn);
    if (sl.comps != few) free(sl.comps);
    return st;
}

STARFOLD_API starfold_status_t starfold_replica_context_all_gather(starfold_replica_context_t context,
                                                                   starfold_value_t value, int axis,
                                                                   const starfold_communication_options_t *options,
                                                                   starfold_value_t *result)
{
    static const char fn[] = "starfold_replica_context_all_gather";
    starfold_status_t st;
    if ((st = check_own(context, fn)) != STARFOLD_OK) return st;
    slot_t sl;
    memset(&sl, 0, sizeof sl);
    int comp = -1;
    starfold_value_t results[1] = { NULL };
    sl.nvalues = 1;
    sl.values = &value;
    sl.comps = &comp;
    sl.results = results;
    double timeout = 0;
    /* Local checks: a failure still joins, so that every replica fails together instead of waiting. */
    if (!result || !value)
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !value ? "value" : "result"));
    else if ((st = starfold__check_axis(fn, axis)) != STARFOLD_OK)
        slot_fail(&sl, st);
    else if ((st = starfold__strategy_options(context->strategy, options, &sl.options)) != STARFOLD_OK)
        slot_fail(&sl, st);
    else if (value->ctx != context->strategy->ctx)
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context", fn));
    else if ((comp = starfold__value_component_on(value, context->device)) < 0)
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "%s: the value has no component on this replica's device %d", fn, context->device));
    if (sl.local_status == STARFOLD_OK) timeout = sl.options.timeout_seconds;
    st = rendezvous(context, COLL_ALL_GATHER, &sl, timeout, fn);
    if (st == STARFOLD_OK) *result = results[0];
    else starfold_value_destroy(results[0]);
    return st;
}

starfold_status_t starfold__replica_update_variable(starfold_replica_context_t rc, starfold_value_t var,
                                                    starfold_value_t value, starfold__update_t update, const char *fn)
{
    starfold_status_t st;
    if ((st = check_own(rc, fn)) != STARFOLD_OK) return st;
    const coll_kind_t kind = update == SF_UPDATE_ADD ? COLL_ASSIGN_ADD : update == SF_UPDATE_SUB ? COLL_ASSIGN_SUB : COLL_ASSIGN;
    const starfold__variable_t *info = var->var;
    slot_t sl;
    memset(&sl, 0, sizeof sl);
    int comp = -1;
    sl.nvalues = 1;
    sl.values = &value;
    sl.comps = &comp;
    sl.variable = var;
    double timeout = 0;
    /* Local checks: a failure still joins, so that every replica fails together instead of waiting. */
    if ((st = starfold__strategy_options(rc->strategy, NULL, &sl.options)) != STARFOLD_OK) slot_fail(&sl, st);
    else timeout = sl.options.timeout_seconds;
    const int integer = var->dtype == STARFOLD_INT32 || var->dtype == STARFOLD_INT64;
    if (sl.local_status != STARFOLD_OK) {
        /* recorded */
    } else if (info->agg == STARFOLD_AGGREGATION_NONE) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "%s: You must specify an aggregation method to update a %s in Replica Context. "
                                       "You can do so by passing an explicit value for argument `aggregation` to "
                                       "tf.Variable(..). (starfold: starfold_variable_options_t::aggregation, or update "
                                       "it in the cross-replica context, in a merge function)",
                                       fn, info->strategy_kind == STARFOLD_STRATEGY_CENTRAL_STORAGE ? "AggregatingVariable"
                                                                                                     : "MirroredVariable"));
    } else if (info->agg == STARFOLD_AGGREGATION_MEAN && integer) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "%s: Cannot update non-float variables with tf.VariableAggregation.MEAN aggregation "
                                       "in replica context. Either change the variable dtype to float or update it in "
                                       "cross-replica context. (the variable is %s)",
                                       fn, starfold_dtype_name(var->dtype)));
    } else if (var->ctx != rc->strategy->ctx) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the variable belongs to another context than "
                                       "the strategy", fn));
    } else if (!value) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL value", fn));
    } else if (value->ctx != var->ctx) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context", fn));
    } else if (value->dtype != var->dtype || value->count != var->count) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: cannot assign %zu x %s to a variable of %zu x %s",
                                       fn, value->count, starfold_dtype_name(value->dtype), var->count,
                                       starfold_dtype_name(var->dtype)));
    } else if ((comp = starfold__value_component_on(value, rc->device)) < 0 && value->n != 1) {
        slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "%s: the value (%d components) has no component on this replica's device %d", fn,
                                       value->n, rc->device));
    } else if (comp < 0) {
        comp = 0; /* a one-component value elsewhere: the leader decides (the same value everywhere, replica 0's) */
    }
    return rendezvous(rc, kind, &sl, timeout, fn);
}

STARFOLD_API starfold_status_t starfold_replica_context_merge_call(starfold_replica_context_t context,
                                                                   starfold_merge_fn_t merge_fn, void *arg,
                                                                   void **result)
{
    static const char fn[] = "starfold_replica_context_merge_call";
    starfold_status_t st;
    if ((st = check_own(context, fn)) != STARFOLD_OK) return st;
    slot_t sl;
    memset(&sl, 0, sizeof sl);
    sl.fn = merge_fn;
    sl.arg = arg;
    if (!merge_fn) slot_fail(&sl, starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL merge_fn", fn));
    st = rendezvous(context, COLL_MERGE_CALL, &sl, context->strategy->options.timeout_seconds, fn);
    if (st == STARFOLD_OK && result) {
        pthread_mutex_lock(&context->run->lock);
        *result = context->run->slots[context->id].result;
        pthread_mutex_unlock(&context->run->lock);
    }
    return st;
}

/* ------------------------------------------------------------------------------------------------
 * strategy.run
 */

/* A replica has returned from its function: anyone waiting for it in a collective never will be joined. */
static void replica_done(starfold__run_t *run, int r, starfold_status_t st, const char *why)
{
    pthread_mutex_lock(&run->lock);
    run->done[r] = 1;
    run->status[r] = st;
    if (why[0]) snprintf(run->msg[r], MSG_LEN, "%s", why);
    else run->msg[r][0] = '\0';
    run->secondary[r] = st != STARFOLD_OK && run->got_status[r] == st && run->got_secondary[r];
    if (!run->broken && run->arrived > 0) {
        if (st == STARFOLD_OK)
            break_run(run, STARFOLD_ERR_INVALID_ARGUMENT, 0,
                      "%s replica %d returned from its function after %ld collective(s) while replica %d waits in "
                      "collective #%ld (%s)",
                      mismatch, r, run->ncalls[r], run->first, run->gen, coll_name(run->kind));
        else
            break_run(run, st, 1, "replica %d failed while replica %d waits in collective #%ld (%s): %s", r, run->first,
                      run->gen, coll_name(run->kind), why);
    }
    pthread_mutex_unlock(&run->lock);
}

/* Replica @rc's function, in its thread. */
static void replica_body(struct starfold_replica_context *rc)
{
    starfold__run_t *run = rc->run;
    tls_rc = rc;
    tls_run = run;
    starfold__error_restore(""); /* a failure's detail is what this replica's function set */
    const starfold_status_t st = run->fn(rc, run->arg);
    char why[MSG_LEN];
    why[0] = '\0';
    if (st != STARFOLD_OK) snprintf(why, sizeof why, "%s", starfold_last_error());
    tls_rc = NULL;
    tls_run = NULL;
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

static ar_inputs_t *pool_ar_inputs(starfold_strategy_t s)
{
    return s->pool ? &s->pool->ar : NULL;
}

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

void starfold__replica_pool_destroy(struct starfold__replica_pool *pool)
{
    if (!pool) return;
    __atomic_store_n(&pool->quit, 1, __ATOMIC_RELEASE);
    starfold__event_post(&pool->wake);
    for (int r = 0; r < pool->nthreads; r++) pthread_join(pool->threads[r], NULL);
    for (int r = 0; pool->fibers && r < pool->n; r++) starfold__fiber_destroy(pool->fibers[r]);
    free(pool->fibers);
    run_free(pool->spare);
    ar_inputs_clear(&pool->ar);
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
            tls_rc = NULL; /* the caller's own, outside any replica */
            tls_run = NULL;
        }
        pthread_mutex_lock(&run->lock);
        if (left > 0 && run_progress(run) == before)
            break_run(run, STARFOLD_ERR_INTERNAL, 0, "replicas in turn: none of the %d still running can go on", left);
        pthread_mutex_unlock(&run->lock);
    }
    starfold__error_restore(callers);
}

/*
 * A run's storage: the run, its replica contexts and its per-replica arrays, a few KiB in all
 * (slots and messages). A strategy's pool keeps the last run's storage for the next (run_take(),
 * run_give_back()): allocating it afresh every step made glibc consolidate its free lists each
 * time, a tenth of a small step's cost in turn (BENCHMARKS.md). Everything a run changes is set
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
    live_add(run);
    return run;
}

/* Ends @run: no longer live, its replicas' results released, its storage kept for the next run
 * (run_lock held). */
static void run_give_back(struct starfold__replica_pool *pool, starfold__run_t *run)
{
    live_remove(run);
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
    if (tls_run)
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
    if (tls_run) /* its run holds run_lock */
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

/* ------------------------------------------------------------------------------------------------
 * A replica's own values and result
 */

/* The calling thread's replica context, checked to be @context (a replica's calls are its own). */
static starfold_status_t own_context(const char *fn, starfold_replica_context_t context)
{
    if (!context) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL context", fn);
    if (context != tls_rc)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: called outside the replica function of this replica context (its own thread, "
                               "during starfold_strategy_run())",
                               fn);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_replica_context_create_value(starfold_replica_context_t context,
                                                                     starfold_dtype_t dtype, size_t count,
                                                                     const void *init, starfold_value_t *value)
{
    static const char fn[] = "starfold_replica_context_create_value";
    starfold_status_t st = own_context(fn, context);
    if (st != STARFOLD_OK) return st;
    if (!value) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL value", fn);
    return starfold_value_create(context->strategy->ctx, STARFOLD_VALUE_PER_REPLICA, 1, &context->device, dtype, count,
                                 init, value);
}

STARFOLD_API starfold_status_t starfold_replica_context_set_result(starfold_replica_context_t context,
                                                                   starfold_value_t value)
{
    static const char fn[] = "starfold_replica_context_set_result";
    starfold_status_t st = own_context(fn, context);
    if (st != STARFOLD_OK) return st;
    if (value && value->ctx != context->strategy->ctx)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the value belongs to another context than the strategy",
                               fn);
    starfold_value_retain(value);
    starfold_value_destroy(context->result);
    context->result = value;
    return STARFOLD_OK;
}
