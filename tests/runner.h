/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The one CUnit runner of the test programs: each program registers its suites and tests, the runner
 * runs them verbosely and counts every kind of failure (a failed assertion, a failed test, a suite
 * whose set-up failed: a program that only counted failed tests passed when its suite could not
 * start). Names carry the starfold__tu_ prefix of the test helpers.
 *
 *     if (starfold__tu_begin() != 0) return 1;
 *     static const starfold__tu_test_t tests[] = { { "name", test_fn }, ... };
 *     if (starfold__tu_add("suite", NULL, NULL, tests, SF_TU_COUNT(tests), only) != 0) return 1;
 *     return starfold__tu_run() ? 1 : 0;
 */
#ifndef SF_TEST_RUNNER_H
#define SF_TEST_RUNNER_H

#include <stddef.h>

#include <CUnit/Basic.h>

/* One test of a table: its name, as CUnit prints it, and its function. */
typedef struct starfold__tu_test {
    const char *name;
    CU_TestFunc fn;
} starfold__tu_test_t;

#define SF_TU_COUNT(table) (sizeof(table) / sizeof((table)[0]))

/* Makes CUnit's registry; 0, or -1 (with a message on stderr) when it cannot. */
int starfold__tu_begin(void);

/*
 * Adds suite @suite (@init and @cleanup may be NULL) with the @n tests of @tests, only those whose
 * name contains @only when @only is not NULL (a program's first argument, to run one test); 0, or -1
 * (with a message on stderr) when CUnit refuses.
 */
int starfold__tu_add(const char *suite, CU_InitializeFunc init, CU_CleanupFunc cleanup,
                     const starfold__tu_test_t *tests, size_t n, const char *only);

/* One test of a table that names its suites: consecutive entries of one suite make that suite. */
typedef struct starfold__tu_entry {
    const char *suite, *name;
    CU_TestFunc fn;
} starfold__tu_entry_t;

/* Adds the suites and tests of @tests (no set-up or clean-up); 0, or -1 as starfold__tu_add(). */
int starfold__tu_add_grouped(const starfold__tu_entry_t *tests, size_t n);

/* A whole program of grouped tests: the registry made, @tests added, run; the exit status (0: every
 * test passed, 1 otherwise). */
int starfold__tu_main_grouped(const starfold__tu_entry_t *tests, size_t n);

/* Runs every registered test verbosely, prints the time taken and frees the registry; the number of
 * failures of every kind (0: all passed). */
unsigned starfold__tu_run(void);
/* The same, silent unless @verbose (the ranks of an MPI test but one). */
unsigned starfold__tu_run_verbose(int verbose);

#endif /* SF_TEST_RUNNER_H */
