/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Which replica context a thread is in, and which context pointers may be read (replica.h has the
 * whole picture). The bottom of the replica machinery: strategies and gathers ask it whether they
 * are called from a replica, runs register here while they live.
 *
 * Lifetime. Replica contexts live in their run, which starfold_strategy_run() frees before it returns;
 * a caller may still hold one (kept in a global, passed to another thread). Such a pointer is never
 * dereferenced: a context other than the calling thread's own is looked up by address among the live
 * runs (a process-wide list, under its own lock, that a run leaves before it is freed), and only a
 * context found there is read. A stale one gets STARFOLD_ERR_INVALID_ARGUMENT, or the accessors'
 * NULL answers.
 */
#include "config.h"

#include <stdint.h>

#include "base/common.h"
#include "distribute/replica.h"

_Thread_local struct starfold_replica_context *starfold__tls_rc; /* NULL: cross-replica context */
_Thread_local starfold__run_t *starfold__tls_run;                      /* the run this thread is a replica of */

starfold_replica_context_t starfold__current_replica(void)
{
    return starfold__tls_rc;
}

/* ------------------------------------------------------------------------------------------------
 * Live runs: which replica context pointers may be read (see "Lifetime" above)
 */

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static starfold__run_t *live_runs;

void starfold__run_live_add(starfold__run_t *run)
{
    pthread_mutex_lock(&live_lock);
    run->next_live = live_runs;
    live_runs = run;
    pthread_mutex_unlock(&live_lock);
}

void starfold__run_live_remove(starfold__run_t *run)
{
    pthread_mutex_lock(&live_lock);
    for (starfold__run_t **p = &live_runs; *p; p = &(*p)->next_live)
        if (*p == run) {
            *p = run->next_live;
            break;
        }
    pthread_mutex_unlock(&live_lock);
}

/*
 * Fills @out from @rc when @rc is the calling thread's own context or one of a live run; returns 0,
 * or -1 for NULL or a context whose run has ended (nothing read through @rc then). Addresses are
 * compared as integers: @rc may point anywhere.
 */
int starfold__rc_lookup(starfold_replica_context_t rc, rc_view_t *out)
{
    if (!rc) return -1;
    if (rc == starfold__tls_rc) {
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
    return starfold__tls_rc;
}

starfold_status_t starfold__require_cross_replica(const char *fn)
{
    if (!starfold__tls_rc) return STARFOLD_OK;
    return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                    "%s: Method requires being in cross-replica context, use get_replica_context().merge_call() "
                    "(called from replica %d)",
                    fn, starfold__tls_rc->id);
}
