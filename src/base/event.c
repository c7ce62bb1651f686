/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Events (event.h) on Linux futexes; elsewhere a wait polls with short sleeps.
 *
 * No lost wake-up: a waiter counts itself in `waiters`, then sleeps only while `seq` is still the
 * value it saw (the futex checks that atomically with going to sleep); a poster moves `seq`, then
 * wakes only if `waiters` is not zero. Both sides are sequentially consistent, so either the
 * waiter sees the new `seq` or the poster sees the waiter.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>

#include "base/common.h"
#include "base/event.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

static int futex_wait(unsigned *addr, unsigned seen, const struct timespec *deadline)
{
    /* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline (FUTEX_WAIT a relative one). */
    const long rc = syscall(SYS_futex, addr, FUTEX_WAIT_BITSET_PRIVATE, seen, deadline, NULL, FUTEX_BITSET_MATCH_ANY);
    return rc == -1 && errno == ETIMEDOUT ? ETIMEDOUT : 0; /* EAGAIN (moved), EINTR: the caller looks again */
}

static void futex_wake_all(unsigned *addr)
{
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
#else
static int passed(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > deadline->tv_sec || (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

static int futex_wait(unsigned *addr, unsigned seen, const struct timespec *deadline)
{
    long ns = 1000;
    while (__atomic_load_n(addr, __ATOMIC_SEQ_CST) == seen) {
        if (deadline && passed(deadline)) return ETIMEDOUT;
        starfold__nap(&ns, 200000);
    }
    return 0;
}

static void futex_wake_all(unsigned *addr)
{
    (void)addr; /* the waiters poll */
}
#endif

void starfold__deadline_after(double seconds, struct timespec *deadline)
{
    clock_gettime(CLOCK_MONOTONIC, deadline);
    double whole = floor(seconds);
    if (whole > 1e9) whole = 1e9; /* ~30 years: as good as forever, and no time_t overflow */
    deadline->tv_sec += (time_t)whole;
    deadline->tv_nsec += (long)((seconds - floor(seconds)) * 1e9);
    if (deadline->tv_nsec >= 1000000000L) {
        deadline->tv_sec++;
        deadline->tv_nsec -= 1000000000L;
    }
}

int starfold__event_wait(starfold__event_t *e, unsigned seen, const struct timespec *deadline)
{
    __atomic_add_fetch(&e->waiters, 1, __ATOMIC_SEQ_CST);
    int rc = 0;
    if (__atomic_load_n(&e->seq, __ATOMIC_SEQ_CST) == seen) rc = futex_wait(&e->seq, seen, deadline);
    __atomic_sub_fetch(&e->waiters, 1, __ATOMIC_SEQ_CST);
    return rc;
}

void starfold__event_post(starfold__event_t *e)
{
    __atomic_add_fetch(&e->seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&e->waiters, __ATOMIC_SEQ_CST) != 0) futex_wake_all(&e->seq);
}
