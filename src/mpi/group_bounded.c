/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The waits of starfold_group_create(), bounded by the options' timeout_seconds. Creation is
 * collective: every exchange in it waits for every rank (or rank 0 and its peers), and a rank that
 * never called it, stopped, or lost its link, would leave the others in a blocking MPI call forever.
 * So creation posts each exchange non-blocking (MPI_Comm_idup, MPI_Iallgather, MPI_Ibcast, ...) and
 * waits here:
 *
 *   post ---- poll, nap (10 us doubling to 200 us: the cores stay with the ranks being waited for) ---- done
 *        \___________________________ timeout_seconds ___________________________ expired
 *
 * An MPI request cannot be cancelled once it is a collective's: an expired wait leaves it pending,
 * and MPI may still complete it later (the missing rank comes back, and any MPI call here
 * progresses it). What it reads and writes must therefore stay allocated: the callers abandon those
 * buffers (never free them) when a wait expired. That leak is the price of returning at all; the
 * group is not created, and the job is expected to end (starfold_group_abort()).
 *
 * The ping-pong that times the links is waited for with busy polls instead (a nap would be timed as
 * the link's): group_links.c.
 */
#include "config.h"

#include <math.h>

#include "base/common.h"
#include "mpi/group.h"

static int bounded(double limit) { return limit > 0 && isfinite(limit); }

int starfold__mpi_wait_bounded(int n, MPI_Request *rq, double limit, int busy)
{
    const double t0 = starfold__now_s();
    long nap = 10000; /* ns */
    for (unsigned polls = 0;; polls++) {
        int done = 0;
        const int err = MPI_Testall(n, rq, &done, MPI_STATUSES_IGNORE);
        if (err != MPI_SUCCESS) return err;
        if (done) return MPI_SUCCESS;
        /* A busy poll reads the clock every 64th time only: it is the ping-pong's inner loop. */
        if ((!busy || polls % 64 == 0) && bounded(limit) && starfold__now_s() - t0 >= limit)
            return STARFOLD__WAIT_EXPIRED;
        if (!busy) starfold__nap(&nap, 200000);
    }
}

double starfold__creation_limit(const starfold_group_options_t *o)
{
    return bounded(o->timeout_seconds) ? o->timeout_seconds : 0;
}

starfold_status_t starfold__creation_expired(const char *fn, const char *step, double limit)
{
    return starfold__error(STARFOLD_ERR_TIMEOUT,
                           "%s: not every rank reached %s within timeout_seconds (%g s): a rank never called %s, "
                           "stopped or is gone, or a link between ranks is down; nothing was created, and MPI keeps "
                           "a request of it pending on the communicator: end the job (starfold_group_abort())",
                           fn, step, limit, fn);
}
