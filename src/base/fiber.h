/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Fibers: functions that run on stacks of their own, on the thread that resumes them, until they
 * yield back or return. strategy.run uses them to run its replicas in turn on the calling thread
 * (STARFOLD_REPLICAS_IN_TURN), switching at collectives, as TensorFlow's eager mode runs its replica
 * threads one at a time.
 *
 *   thread:   resume(f0) ......... resume(f1) ......... resume(f0) ...... (returns 1: finished)
 *   f0:             fn(arg) - yield               .. continues - returns
 *   f1:                              fn(arg) - yield
 *
 * Every resume of one start of a fiber comes from the same thread, outside any fiber; a later start
 * may be on another thread (a strategy's runs start their fibers afresh). A switch costs some
 * tens of nanoseconds (_setjmp/_longjmp, no system call; fiber.c says which builds keep
 * swapcontext()), where waking a sleeping thread costs microseconds on a loaded machine.
 *
 * Stacks are mapped, not allocated: 8 MiB each (a thread's default), committed only as used, below
 * a guard page that turns an overflow into a fault rather than silent corruption. Under ASan, TSan
 * and Valgrind every switch is announced to the tool, which otherwise takes a stack switch for a
 * wild jump of the stack pointer.
 */
#ifndef STARFOLD_BASE_FIBER_H
#define STARFOLD_BASE_FIBER_H

#include <stddef.h>

typedef struct starfold__fiber starfold__fiber_t;

/* A fiber with its stack, not yet started; NULL when out of memory. */
starfold__fiber_t *starfold__fiber_create(void);

/* Frees a fiber that is not running (never started, finished, or abandoned while yielded: its stack
 * is dropped as it is, so a yielded fiber must hold nothing that needs its function to go on). */
void starfold__fiber_destroy(starfold__fiber_t *fiber);

/* Starts @fn(@arg) on the fiber when it next resumes; the fiber is new or its last function returned. */
void starfold__fiber_start(starfold__fiber_t *fiber, void (*fn)(void *), void *arg);

/* Runs the fiber until it yields (returns 0) or its function returns (returns 1; it may be started
 * again). Called from outside any fiber of this thread. */
int starfold__fiber_resume(starfold__fiber_t *fiber);

/* From inside a fiber's function: back to whoever resumed it; returns when it is resumed again. */
void starfold__fiber_yield(void);

/* The fiber running on the calling thread; NULL outside any. */
starfold__fiber_t *starfold__fiber_current(void);

#endif
