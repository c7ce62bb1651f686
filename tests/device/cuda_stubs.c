/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Stand-ins for libcublas.so.11 and libcusparse.so.11 in the CUDA device bundle (bundle.sh --cuda).
 *
 * StarPU 1.3 refuses CUDA without cuBLAS, so the CUDA StarPU links both libraries; it calls them only
 * from starpu_cublas_init() and starpu_cusparse_init(), which starfold never calls. The real
 * libraries are 950 MB with cuBLASLt, far more than a device run may carry (64 MiB), and the lent
 * machine's own CUDA is another release. These define the nine entry points libstarpu-1.3 imports
 * (nm -D --undefined-only), under the same symbol versions, and fail every call: a program that does
 * call starpu_cublas_init() in the bundle gets StarPU's error report, not a wrong result.
 *
 * Built twice by bundle.sh, once per library, with -DSF_STUB_CUBLAS or -DSF_STUB_CUSPARSE and a
 * version script naming the library's version node.
 */
#include <stddef.h>

#define SF_STUB_FAIL 1 /* CUBLAS_STATUS_NOT_INITIALIZED, CUSPARSE_STATUS_NOT_INITIALIZED */

#ifdef SF_STUB_CUBLAS
int cublasInit(void) { return SF_STUB_FAIL; }
int cublasShutdown(void) { return SF_STUB_FAIL; }
int cublasCreate_v2(void **handle)
{
    if (handle) *handle = NULL;
    return SF_STUB_FAIL;
}
int cublasDestroy_v2(void *handle)
{
    (void)handle;
    return SF_STUB_FAIL;
}
int cublasSetStream_v2(void *handle, void *stream)
{
    (void)handle;
    (void)stream;
    return SF_STUB_FAIL;
}
int cublasSetKernelStream(void *stream)
{
    (void)stream;
    return SF_STUB_FAIL;
}
#endif

#ifdef SF_STUB_CUSPARSE
int cusparseCreate(void **handle)
{
    if (handle) *handle = NULL;
    return SF_STUB_FAIL;
}
int cusparseDestroy(void *handle)
{
    (void)handle;
    return SF_STUB_FAIL;
}
int cusparseSetStream(void *handle, void *stream)
{
    (void)handle;
    (void)stream;
    return SF_STUB_FAIL;
}
#endif
