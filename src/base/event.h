/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * An event: a sequence number that waiters sleep on and a poster moves, waking all of them at once.
 * Never installed.
 *
 * Why not a condition variable: a broadcast wakes every waiter, and each must then take the mutex
 * again before pthread_cond_wait() returns, one after the other. On a node whose cores StarPU's
 * workers spin on, each hand-off of that mutex waits for the next thread to be scheduled: eight
 * replica threads woken by a broadcast came out over ~45 us, one by one. Waiters of an event hold
 * no lock: they wake together, and read what the poster published before posting (release /
 * acquire on the sequence number).
 *
 * Use: the waiter reads the sequence, checks its condition, and sleeps only if the sequence has not
 * moved since it read it:
 *
 *     for (;;) {
 *         unsigned seen = starfold__event_seq(&e);
 *         if (condition()) break;                      // published before the post
 *         starfold__event_wait(&e, seen, deadline);    // returns at once if e moved since `seen`
 *     }
 *
 * and the poster makes the condition true, then posts. A wait may return without a post (a
 * spurious wake-up): the caller's loop checks again.
 */
#ifndef STARFOLD_SRC_EVENT_H
#define STARFOLD_SRC_EVENT_H

#include <time.h>

typedef struct starfold__event {
    unsigned seq;     /* atomic: moved by every post */
    unsigned waiters; /* atomic: threads inside starfold__event_wait() */
} starfold__event_t;

/* The sequence number now (acquire: what was published before the post that moved it is visible). */
static inline unsigned starfold__event_seq(const starfold__event_t *e)
{
    return __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
}

/*
 * Sleeps while the sequence number is @seen, until @deadline (CLOCK_MONOTONIC, absolute; NULL: no
 * limit). 0 when it returns for a post or spuriously, ETIMEDOUT once @deadline passed.
 */
int starfold__event_wait(starfold__event_t *e, unsigned seen, const struct timespec *deadline);

/* The absolute CLOCK_MONOTONIC deadline @seconds (>= 0, finite) from now, for starfold__event_wait(). */
void starfold__deadline_after(double seconds, struct timespec *deadline);

/* Moves the sequence number (release) and wakes every waiter. */
void starfold__event_post(starfold__event_t *e);

#endif
