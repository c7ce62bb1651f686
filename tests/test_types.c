/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/* Status strings, dtype and op names: the shared vocabulary, including TensorFlow's case-insensitive ops. */
#include "config.h"

#include <CUnit/Basic.h>
#include <string.h>

#include <starfold.h>

static void test_status_strings(void)
{
    CU_ASSERT_EQUAL(STARFOLD_OK, 0);
    for (int s = 0; s < STARFOLD_STATUS_COUNT; s++) {
        const char *str = starfold_status_string((starfold_status_t)s);
        CU_ASSERT_PTR_NOT_NULL_FATAL(str);
        CU_ASSERT(strlen(str) > 0);
        CU_ASSERT_STRING_NOT_EQUAL(str, "unknown status");
        for (int o = 0; o < s; o++) CU_ASSERT_STRING_NOT_EQUAL(str, starfold_status_string((starfold_status_t)o));
    }
    CU_ASSERT_STRING_EQUAL(starfold_status_string((starfold_status_t)-1), "unknown status");
    CU_ASSERT_STRING_EQUAL(starfold_status_string((starfold_status_t)STARFOLD_STATUS_COUNT), "unknown status");
}

static void test_dtypes(void)
{
    starfold_dtype_t d = STARFOLD_INT64;
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_FLOAT32), 4);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_FLOAT64), 8);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_INT32), 4);
    CU_ASSERT_EQUAL(starfold_dtype_size(STARFOLD_INT64), 8);
    CU_ASSERT_EQUAL(starfold_dtype_size((starfold_dtype_t)7), 0);
    for (int i = 0; i < STARFOLD_DTYPE_COUNT; i++) {
        CU_ASSERT_EQUAL(starfold_dtype_from_string(starfold_dtype_name((starfold_dtype_t)i), &d), STARFOLD_OK);
        CU_ASSERT_EQUAL(d, i);
    }
    CU_ASSERT_EQUAL(starfold_dtype_from_string("Float64", &d), STARFOLD_OK);
    CU_ASSERT_EQUAL(d, STARFOLD_FLOAT64);
    CU_ASSERT_EQUAL(starfold_dtype_from_string("double", &d), STARFOLD_OK);
    CU_ASSERT_EQUAL(d, STARFOLD_FLOAT64);
    d = STARFOLD_INT32;
    CU_ASSERT_EQUAL(starfold_dtype_from_string("complex64", &d), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(d, STARFOLD_INT32); /* untouched on error */
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "complex64"));
    CU_ASSERT_EQUAL(starfold_dtype_from_string(NULL, &d), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(starfold_dtype_from_string("float32", NULL), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(starfold_dtype_name((starfold_dtype_t)9), "unknown");
}

static void test_ops(void)
{
    starfold_op_t op = STARFOLD_OP_PROD;
    /* TensorFlow accepts "sum" or "MEAN": any case. */
    CU_ASSERT_EQUAL(starfold_op_from_string("sum", &op), STARFOLD_OK);
    CU_ASSERT_EQUAL(op, STARFOLD_OP_SUM);
    CU_ASSERT_EQUAL(starfold_op_from_string("MEAN", &op), STARFOLD_OK);
    CU_ASSERT_EQUAL(op, STARFOLD_OP_MEAN);
    CU_ASSERT_EQUAL(starfold_op_from_string("Max", &op), STARFOLD_OK);
    CU_ASSERT_EQUAL(op, STARFOLD_OP_MAX);
    for (int i = 0; i < STARFOLD_OP_COUNT; i++) {
        CU_ASSERT_EQUAL(starfold_op_from_string(starfold_op_name((starfold_op_t)i), &op), STARFOLD_OK);
        CU_ASSERT_EQUAL(op, i);
    }
    CU_ASSERT_EQUAL(starfold_op_from_string("average", &op), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(op, STARFOLD_OP_PROD); /* untouched: the last value parsed */
    CU_ASSERT_EQUAL(starfold_op_from_string("", &op), STARFOLD_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(starfold_op_from_string(NULL, &op), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(starfold_op_name((starfold_op_t)-3), "unknown");
}

static void test_version(void)
{
    CU_ASSERT_STRING_EQUAL(starfold_version(), PACKAGE_VERSION);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    CU_pSuite s = CU_add_suite("types", NULL, NULL);
    CU_add_test(s, "status strings", test_status_strings);
    CU_add_test(s, "dtypes", test_dtypes);
    CU_add_test(s, "reduce ops", test_ops);
    CU_add_test(s, "version", test_version);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
