/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/* The test programs' CUnit runner (runner.h). */
#include "runner.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int starfold__tu_begin(void)
{
    if (CU_initialize_registry() == CUE_SUCCESS) return 0;
    fprintf(stderr, "cannot make CUnit's registry: %s\n", CU_get_error_msg());
    return -1;
}

int starfold__tu_add(const char *suite, CU_InitializeFunc init, CU_CleanupFunc cleanup,
                     const starfold__tu_test_t *tests, size_t n, const char *only)
{
    CU_pSuite s = CU_add_suite(suite, init, cleanup);
    if (!s) {
        fprintf(stderr, "cannot add suite \"%s\": %s\n", suite, CU_get_error_msg());
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (only && !strstr(tests[i].name, only)) continue;
        if (!CU_add_test(s, tests[i].name, tests[i].fn)) {
            fprintf(stderr, "cannot add test \"%s\": %s\n", tests[i].name, CU_get_error_msg());
            return -1;
        }
    }
    return 0;
}

int starfold__tu_add_grouped(const starfold__tu_entry_t *tests, size_t n)
{
    size_t first = 0;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && strcmp(tests[i].suite, tests[first].suite) == 0) continue;
        CU_pSuite s = CU_add_suite(tests[first].suite, NULL, NULL);
        if (!s) {
            fprintf(stderr, "cannot add suite \"%s\": %s\n", tests[first].suite, CU_get_error_msg());
            return -1;
        }
        for (size_t k = first; k < i; k++)
            if (!CU_add_test(s, tests[k].name, tests[k].fn)) {
                fprintf(stderr, "cannot add test \"%s\": %s\n", tests[k].name, CU_get_error_msg());
                return -1;
            }
        first = i;
    }
    return 0;
}

unsigned starfold__tu_run(void)
{
    return starfold__tu_run_verbose(1);
}

unsigned starfold__tu_run_verbose(int verbose)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_basic_set_mode(verbose ? CU_BRM_VERBOSE : CU_BRM_SILENT);
    CU_basic_run_tests();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (verbose) printf("elapsed: %.2f s\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    const unsigned failed =
        CU_get_number_of_failures() + CU_get_number_of_tests_failed() + CU_get_number_of_suites_failed();
    CU_cleanup_registry();
    return failed;
}

int starfold__tu_main_grouped(const starfold__tu_entry_t *tests, size_t n)
{
    if (starfold__tu_begin() != 0) return 1;
    if (starfold__tu_add_grouped(tests, n) != 0) {
        CU_cleanup_registry();
        return 1;
    }
    return starfold__tu_run() ? 1 : 0;
}
