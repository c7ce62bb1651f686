/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Fibers (fiber.h) on ucontext, with their switches announced to ASan, TSan and Valgrind.
 *
 *   resumer's stack                    fiber's stack (mapped, guard page below)
 *   resume(f): current = f  --swap-->  trampoline: fn(arg) ... yield(): --swap--> back in resume()
 *              ... returns 0                                  (f->ctx saved, f->back restored)
 *   resume(f)               --swap-->  ... yield() returns, fn goes on, returns:
 *              ... returns 1 <--swap-- finished = 1, parked in the trampoline's loop
 *   start(f, fn2); resume(f) --swap--> the loop goes round: fn2(arg2) ...
 *
 * The sanitizers' protocol for a switch from A to B: A calls start_switch(where to keep A's fake
 * stack, B's stack bounds) just before, B calls finish_switch(what B kept when it left, where to
 * put A's bounds) just after. A fiber learns its resumer's stack bounds on each arrival, so a
 * fiber started by another thread next time yields back to the right stack. ThreadSanitizer gets
 * a fiber of its own for each.
 *
 * The switch. A fiber is entered the first time by setcontext() into the context makecontext()
 * made; after that every switch is _setjmp() on one side and _longjmp() to the other (the
 * "sjlj" machine context of GNU Pth; R. S. Engelschall, "Portable Multithreading", USENIX 2000).
 * Unlike swapcontext(), _setjmp() keeps no signal mask, so a switch is a few dozen nanoseconds
 * rather than a system call each way, and a fiber runs with the mask of the thread that resumed
 * it. Two builds keep swapcontext() for every switch:
 *  - ThreadSanitizer, whose longjmp() interceptor looks for the jump's target on the current
 *    fiber's shadow stack;
 *  - x86 shadow stacks (compiled with -fcf-protection=return: __CET__ & 2), where a _longjmp()
 *    cannot cross onto another stack's shadow stack and glibc's swapcontext() switches both.
 * glibc's _FORTIFY_SOURCE turns _longjmp() into __longjmp_chk(), which takes a jump onto a stack
 * lower in memory for a corrupted frame and aborts: it is off in this file.
 */
#undef _FORTIFY_SOURCE
#include "config.h"

#include <setjmp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/fiber.h"

#ifdef __has_feature
#define SF_HAS_FEATURE(x) __has_feature(x)
#else
#define SF_HAS_FEATURE(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || SF_HAS_FEATURE(address_sanitizer)
#define SF_FIBER_ASAN 1
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__) || SF_HAS_FEATURE(thread_sanitizer)
#define SF_FIBER_TSAN 1
#include <sanitizer/tsan_interface.h>
#endif
#ifdef HAVE_VALGRIND_VALGRIND_H
#include <valgrind/valgrind.h>
#endif

#if defined(SF_FIBER_TSAN) || (defined(__CET__) && (__CET__ & 2))
#define SF_FIBER_SWAPCONTEXT 1
#endif

#define SF_FIBER_STACK_BYTES ((size_t)8 << 20)

struct starfold__fiber {
    ucontext_t ctx;              /* the trampoline's entry (and, with swapcontext, the fiber's while it is yielded) */
#ifdef SF_FIBER_SWAPCONTEXT
    ucontext_t back;             /* its resumer's, while it runs */
#else
    jmp_buf at;                  /* the fiber's, while it is yielded */
    jmp_buf back;                /* its resumer's, while it runs */
    int entered;                 /* the trampoline has been entered: later resumes jump to `at` */
#endif
    void *map;                   /* guard page, then the stack */
    size_t map_bytes;
    void *stack;
    size_t stack_bytes;
    void (*fn)(void *);
    void *arg;
    int finished;
    const void *back_bottom;     /* the resumer's stack (ASan) */
    size_t back_size;
#ifdef SF_FIBER_TSAN
    void *tsan_fiber, *tsan_back;
#endif
#ifdef HAVE_VALGRIND_VALGRIND_H
    unsigned vg_stack;
#endif
};

static _Thread_local starfold__fiber_t *current;

starfold__fiber_t *starfold__fiber_current(void)
{
    return current;
}

/* The sanitizers' half of a switch, before and after it (see the top of the file). */
static void switch_out(void **fake, const void *bottom, size_t size)
{
#ifdef SF_FIBER_ASAN
    __sanitizer_start_switch_fiber(fake, bottom, size);
#else
    (void)fake, (void)bottom, (void)size;
#endif
}

static void switch_in(void *fake, const void **from_bottom, size_t *from_size)
{
#ifdef SF_FIBER_ASAN
    __sanitizer_finish_switch_fiber(fake, from_bottom, from_size);
#else
    (void)fake, (void)from_bottom, (void)from_size;
#endif
}

#ifdef SF_FIBER_SWAPCONTEXT
/* Into @f, from its resumer; returns when @f yields. */
static void go_in(starfold__fiber_t *f)
{
    swapcontext(&f->back, &f->ctx);
}

/* Out of @f, to its resumer; returns when @f is resumed. */
static void go_out(starfold__fiber_t *f)
{
    swapcontext(&f->ctx, &f->back);
}
#else
static void go_in(starfold__fiber_t *f)
{
    if (_setjmp(f->back) != 0) return; /* @f jumped back */
    if (f->entered) _longjmp(f->at, 1);
    f->entered = 1;
    setcontext(&f->ctx); /* the trampoline, once per fiber */
}

static void go_out(starfold__fiber_t *f)
{
    if (_setjmp(f->at) == 0) _longjmp(f->back, 1);
}
#endif

/* The fiber's whole life: each start's function, then parked (finished) until the next start. Its
 * context is made once, so that a start costs no getcontext() (a system call: the signal mask). */
static void trampoline(void)
{
    /* Read once: a later start may resume the loop on another thread, whose `current` the
     * compiler might not read again (a thread-local's address may be kept within a function). */
    starfold__fiber_t *const f = current;
    switch_in(NULL, &f->back_bottom, &f->back_size);
    for (;;) {
        f->fn(f->arg);
        f->finished = 1;
        starfold__fiber_yield();
    }
}

/* The context that enters the trampoline on @f's stack (apart: getcontext() returns twice). */
static void make_context(starfold__fiber_t *const f)
{
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = f->stack_bytes;
    f->ctx.uc_link = NULL; /* the trampoline never returns */
    makecontext(&f->ctx, trampoline, 0);
}

starfold__fiber_t *starfold__fiber_create(void)
{
    starfold__fiber_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    const long page = sysconf(_SC_PAGESIZE);
    const size_t guard = page > 0 ? (size_t)page : 4096;
    f->map_bytes = guard + SF_FIBER_STACK_BYTES;
    f->map = mmap(NULL, f->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (f->map == MAP_FAILED) {
        free(f);
        return NULL;
    }
    if (mprotect(f->map, guard, PROT_NONE) != 0) {
        munmap(f->map, f->map_bytes);
        free(f);
        return NULL;
    }
    f->stack = (char *)f->map + guard;
    f->stack_bytes = SF_FIBER_STACK_BYTES;
    f->finished = 1; /* not started */
    make_context(f);
#ifdef SF_FIBER_TSAN
    f->tsan_fiber = __tsan_create_fiber(0);
#endif
#ifdef HAVE_VALGRIND_VALGRIND_H
    f->vg_stack = VALGRIND_STACK_REGISTER(f->stack, (char *)f->stack + f->stack_bytes);
#endif
    return f;
}

void starfold__fiber_destroy(starfold__fiber_t *f)
{
    if (!f) return;
#ifdef SF_FIBER_TSAN
    if (f->tsan_fiber) __tsan_destroy_fiber(f->tsan_fiber);
#endif
#ifdef HAVE_VALGRIND_VALGRIND_H
    VALGRIND_STACK_DEREGISTER(f->vg_stack);
#endif
    munmap(f->map, f->map_bytes);
    free(f);
}

void starfold__fiber_start(starfold__fiber_t *f, void (*fn)(void *), void *arg)
{
    f->fn = fn;
    f->arg = arg;
    f->finished = 0; /* the next resume enters the trampoline, or wakes it where it parked */
}

int starfold__fiber_resume(starfold__fiber_t *f)
{
    void *fake = NULL;
    current = f;
    switch_out(&fake, f->stack, f->stack_bytes);
#ifdef SF_FIBER_TSAN
    f->tsan_back = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(f->tsan_fiber, 0);
#endif
    go_in(f);
    switch_in(fake, NULL, NULL);
    current = NULL;
    return f->finished;
}

void starfold__fiber_yield(void)
{
    starfold__fiber_t *f = current;
    void *fake = NULL;
    switch_out(&fake, f->back_bottom, f->back_size);
#ifdef SF_FIBER_TSAN
    __tsan_switch_to_fiber(f->tsan_back, 0);
#endif
    go_out(f);
    switch_in(fake, &f->back_bottom, &f->back_size);
}
