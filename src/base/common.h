/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Private helpers shared by every layer: error recording, the check-and-jump macro, growable arrays.
 * Never installed.
 */
#ifndef STARFOLD_SRC_COMMON_H
#define STARFOLD_SRC_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <starfold/common.h>

/* Every exported definition carries STARFOLD_API (the library is built with -fvisibility=hidden). */

/*
 * Records the detail of a failure for starfold_last_error() (thread-local) and returns @status, so a
 * failing path reads `return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "num_packs must be >= 0, got %d", n);`.
 */
starfold_status_t starfold__error(starfold_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears nothing: a success leaves the last detail in place, like errno. */

/* The detail's text kept aside, and put back (a replica in turn keeps its own across its turns) or
 * cleared (restore("")), without printf's cost. STARFOLD_ERROR_LEN bytes hold any detail. */
#define STARFOLD_ERROR_LEN 512
void starfold__error_save(char saved[STARFOLD_ERROR_LEN]);
void starfold__error_restore(const char *saved);

/*
 * Evaluates @expr into the status variable named at the call site and jumps to the label named at the
 * call site when it is not STARFOLD_OK. Both names are explicit: no hidden control flow.
 */
#define SF_CHECK_GOTO(expr, status_var, label)          \
    do {                                                \
        (status_var) = (expr);                          \
        if ((status_var) != STARFOLD_OK) goto label;    \
    } while (0)

/*
 * Growable arrays: `T *items; size_t n, cap;` grown by doubling. starfold__grow() makes room for one more
 * element and returns 0, or -1 (array unchanged) when memory runs out.
 */
int starfold__grow(void **items, size_t *cap, size_t n, size_t elem_size);
#define SF_GROW(items, n, cap) starfold__grow((void **)&(items), &(cap), (n), sizeof(*(items)))

/* strdup that reports failure through starfold__error; NULL in gives NULL out without error. */
char *starfold__strdup(const char *s);

/* The library's one clock: monotonic seconds (CLOCK_MONOTONIC), for time limits and timings. */
double starfold__now_s(void);
/* A polling wait's sleep: *@ns nanoseconds, then *@ns doubled up to @max_ns. Waits that poll sleep
 * rather than spin: the caller's thread shares the cores with StarPU's workers (and, under MPI, with
 * the other ranks); short at first (what is waited for is usually near), longer as the wait grows. */
void starfold__nap(long *ns, long max_ns);

/* Whether environment variable @name is set to something (not empty). */
int starfold__env_set(const char *name);

/* Element types by kind (types.c): integers (signed or not), signed integers, float16/bfloat16. */
int starfold__dtype_integer(starfold_dtype_t dt);
int starfold__dtype_signed(starfold_dtype_t dt);
int starfold__dtype_half(starfold_dtype_t dt);
/* TensorFlow's true division of an integer type: float32 for 8- and 16-bit integers, float64 for 32-
 * and 64-bit ones; @dt itself for the floating types. */
starfold_dtype_t starfold__dtype_truediv(starfold_dtype_t dt);
/* Element @i of an integer (or half: its 16 bits) array as 64 bits, signed types sign-extended, and
 * the store back (truncating to the type's width: wrapping arithmetic). 0 / nothing for the others. */
uint64_t starfold__element_bits(starfold_dtype_t dt, const void *data, size_t i);
void starfold__element_set_bits(starfold_dtype_t dt, void *data, size_t i, uint64_t v);

/* Case-insensitive ASCII string equality. */
int starfold__streq_nocase(const char *a, const char *b);

/*
 * The op that partial results of a reduction with @op are combined with: MEAN adds (the division by
 * the count is a step of its own), every other op combines with itself.
 */
starfold_op_t starfold__op_accumulation(starfold_op_t op);

/*
 * The one internal op of a REDUCE task, after the public ones: dst = src0 - src1 - ... (left to
 * right; integers wrap around). Not a reduction (it neither commutes nor associates), so no collective
 * may ask for it (starfold_graph_compile() refuses every op past STARFOLD_OP_COUNT): only the update
 * of a variable (starfold__graph_then_update(), assign_sub) emits it, as its last task per device.
 */
#define STARFOLD__OP_SUB ((starfold_op_t)STARFOLD_OP_COUNT)

/* Name of any op a task may carry: starfold_op_name()'s, and "sub" for STARFOLD__OP_SUB. */
const char *starfold__op_name(starfold_op_t op);

/* What a variable's update does to each copy (the distribute layer's assign, assign_add, assign_sub). */
typedef enum starfold__update {
    SF_UPDATE_ASSIGN = 0, /* copy = value */
    SF_UPDATE_ADD,        /* copy = copy + value */
    SF_UPDATE_SUB         /* copy = copy - value (STARFOLD__OP_SUB) */
} starfold__update_t;

/* FNV-1a over 64-bit words: h = STARFOLD__FNV_OFFSET, then h = starfold__fnv1a(h, word) for each word
 * (fingerprints compared across ranks, hash keys). */
#define STARFOLD__FNV_OFFSET 1469598103934665603ull
static inline uint64_t starfold__fnv1a(uint64_t h, uint64_t word)
{
    return (h ^ word) * 1099511628211ull;
}

#endif /* STARFOLD_SRC_COMMON_H */
