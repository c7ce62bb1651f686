/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The kernels of the executor: one StarPU codelet whose CPU, OpenCL and CUDA functions run any node
 * of a graph. Everything a kernel needs travels in its cl_arg, a starfold__kernel_args_t built by
 * template.c for one node:
 *
 *   kind COPY   (COPY, PACK, UNPACK): concat(src spans) -> concat(dst spans), equal totals;
 *   kind REDUCE: every dst = src0 op src1 op ... (left to right; op SUB subtracts), divided by the divisor when it is
 *                > 1 (MEAN in the same pass, integers truncating); the first dst may be one of the
 *                sources (accumulate in place); with several dsts, the result is written to each;
 *   kind SCALE:  dst = src / divisor (integers truncate toward zero); a converting SCALE reads
 *                integers and writes float64: dst = (double)src / divisor, or float32 for 8- and
 *                16-bit integers, divided in float32 (TensorFlow's promoting integer MEAN, its
 *                truediv). Only there do the destination's dtype and element size differ.
 *
 * float16 and bfloat16 (base/half.h) are computed in float32: a REDUCE converts every source
 * element, combines and divides in float32, and rounds to nearest even once per destination
 * element; a SCALE divides in float32 and rounds once.
 *
 * A span names one of the task's buffers (an index into the buffers[] StarPU passes, so several
 * spans may share a handle) and an element range in it. Spans of zero elements are never listed.
 *
 * Segments. The executor cuts vectors into pieces (one StarPU handle each), so a graph span may lie
 * across several buffers. A COPY lists every piece of its sources, then of its destinations (nseg = 1,
 * nsrc and ndst count spans). REDUCE and SCALE are element-wise: their spans come in nseg segments
 * of nsrc + ndst spans each, all spans of one segment holding the same count, segment after segment:
 *
 *     spans = [ src0 src1 .. dst0 .. | src0 src1 .. dst0 .. | ... ]      (nseg groups)
 *
 * The request's flags are shared with the submitting thread: a kernel first reads `cancelled` and,
 * when set, does nothing (a refused submission turns the whole graph into no-ops); a kernel that fails
 * records STARFOLD_ERR_TASK_FAILED in `status` (first failure wins). Both are plain ints accessed with
 * the GCC __atomic builtins, so this header is valid C11 and C++ (nvcc compiles kernels_cuda.cu).
 *
 * This header is included by kernels_cuda.cu, which is compiled without config.h.
 */
#ifndef STARFOLD_SRC_KERNELS_H
#define STARFOLD_SRC_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a kernel does. */
enum starfold__kernel_kind { SF_KERNEL_COPY = 0, SF_KERNEL_REDUCE = 1, SF_KERNEL_SCALE = 2 };

/* Element types and ops as the kernels see them (the values of starfold_dtype_t / starfold_op_t). */
enum starfold__kernel_dtype {
    SF_K_FLOAT32 = 0, SF_K_FLOAT64 = 1, SF_K_INT32 = 2, SF_K_INT64 = 3, SF_K_FLOAT16 = 4, SF_K_BFLOAT16 = 5,
    SF_K_INT8 = 6, SF_K_UINT8 = 7, SF_K_INT16 = 8, SF_K_UINT16 = 9, SF_K_UINT32 = 10, SF_K_UINT64 = 11,
    SF_K_DTYPE_COUNT = 12
};
/*
 * SF_K_SUB is starfold's internal subtraction (STARFOLD__OP_SUB, base/common.h): dst = src0 - src1 -
 * ..., left to right, integers wrapping around; only a variable's assign_sub asks for it.
 */
enum starfold__kernel_op { SF_K_SUM = 0, SF_K_MEAN = 1, SF_K_MIN = 2, SF_K_MAX = 3, SF_K_PROD = 4, SF_K_SUB = 5 };

typedef struct starfold__kspan {
    unsigned buf;    /* index into the task's buffers[] */
    size_t offset;   /* first element */
    size_t count;    /* elements, > 0 */
} starfold__kspan_t;

/*
 * When a task ran (starfold_request_timeline(), `starfold run --trace`): written by its worker around
 * the kernel, read after the request completed. Times are CLOCK_MONOTONIC seconds.
 */
typedef struct starfold__kernel_timing {
    double start, end;    /* the kernel */
    double fetch;         /* seconds StarPU spent acquiring the task's data before it (profiling on), else 0 */
    int worker;           /* the StarPU worker */
    int ran;              /* 0: cancelled, or not run yet */
} starfold__kernel_timing_t;

typedef struct starfold__kernel_args {
    int *cancelled;       /* request-wide: nonzero = do nothing */
    int *status;          /* request-wide first failure (a starfold_status_t), 0 = none */
    int kind;             /* enum starfold__kernel_kind */
    int dtype;            /* enum starfold__kernel_dtype of the sources (and of the destinations but for a
                             converting SCALE) */
    int dst_dtype;        /* enum starfold__kernel_dtype of the destinations */
    int op;               /* enum starfold__kernel_op (REDUCE; MEAN adds) */
    uint32_t divisor;     /* SCALE, and REDUCE (1 = none), >= 1 */
    size_t elemsize;      /* bytes per source element */
    size_t dst_elemsize;  /* bytes per destination element */
    size_t node;          /* graph node index, for messages */
    const long *fail_hook; /* testing hook: the context's test_fail_task (exec.h); NULL in hand-made args */
    size_t nseg;          /* segments: 1 for a COPY */
    size_t nsrc, ndst;    /* spans per segment (COPY: in total) */
    starfold__kspan_t *spans;    /* per segment, nsrc sources then ndst destinations (same allocation as the args) */
    int timed;            /* 1: a task of a request, record timing (set by the templates; 0 in hand-made args) */
    int task_kind;        /* the graph node's starfold_task_kind_t, for the timeline */
    int device;           /* its logical device */
    starfold__kernel_timing_t timing;
} starfold__kernel_args_t;

/* Records the start (@end 0) or the end (@end 1) of @a's kernel in a->timing (template.c). */
void starfold__kernel_time(starfold__kernel_args_t *a, int end);

/* The spans of segment @seg of an element-wise (REDUCE, SCALE) task: nsrc sources, then ndst dsts. */
static inline const starfold__kspan_t *starfold__kernel_segment(const starfold__kernel_args_t *a, size_t seg)
{
    return a->spans + seg * (a->nsrc + a->ndst);
}

/* STARFOLD_ERR_TASK_FAILED, repeated here because the CUDA file does not include starfold's headers. */
#define SF_KERNEL_TASK_FAILED 11

static inline int starfold__kernel_cancelled(const starfold__kernel_args_t *a)
{
    return __atomic_load_n(a->cancelled, __ATOMIC_ACQUIRE) != 0;
}

/* The testing hook: this node is the one the context's test_fail_task names now, as the kernel runs
 * (so that a plan made while it was set does not keep failing once it is cleared). */
static inline int starfold__kernel_hooked(const starfold__kernel_args_t *a)
{
    return a->fail_hook && __atomic_load_n(a->fail_hook, __ATOMIC_RELAXED) == (long)a->node;
}

/* Records a kernel failure; the first one is kept. */
static inline void starfold__kernel_fail(const starfold__kernel_args_t *a)
{
    int expected = 0;
    __atomic_compare_exchange_n(a->status, &expected, SF_KERNEL_TASK_FAILED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/*
 * Index k >= 1 of a source of REDUCE segment @seg that is the segment's first destination itself
 * (same buffer and offset), or 0 when none: such a source must not be overwritten before it is read,
 * which a pairwise (dst = a op b) device kernel would do. (The graph checker never lets a source
 * overlap a destination other than element for element.)
 */
static inline size_t starfold__kernel_dst_alias(const starfold__kernel_args_t *a, const starfold__kspan_t *seg)
{
    const starfold__kspan_t *d = &seg[a->nsrc];
    for (size_t k = 1; k < a->nsrc; k++)
        if (seg[k].buf == d->buf && seg[k].offset == d->offset) return k;
    return 0;
}

/*
 * ThreadSanitizer and StarPU. StarPU is not instrumented, so TSan cannot see that a task's arguments,
 * written before starpu_task_submit(), are read by a worker only after StarPU's queues hand the task
 * over, nor that a kernel's writes are visible to the thread that waited for the request or acquired
 * the data. Every such hand-over goes through one synchronisation object: released before a handle's
 * data or a task leaves starfold's hands (submit, the end of a kernel, vector release), acquired when
 * they come back (the start of a kernel, a finished wait, a vector acquired). Compiled to nothing
 * without TSan; it lets tests/tsan.supp stay empty of StarPU's own frames.
 */
#if defined(__SANITIZE_THREAD__)
#define SF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SF_TSAN 1
#endif
#endif
#if defined(SF_TSAN) && !defined(__CUDACC__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern char starfold__tsan_starpu;
#define SF_TSAN_ACQUIRE() __tsan_acquire(&starfold__tsan_starpu)
#define SF_TSAN_RELEASE() __tsan_release(&starfold__tsan_starpu)
#else
#define SF_TSAN_ACQUIRE() ((void)0)
#define SF_TSAN_RELEASE() ((void)0)
#endif

/* CPU implementation (kernels_cpu.c). */
void starfold__kernel_cpu(void *buffers[], void *cl_arg);
/* Testing: nonzero makes the CPU kernels reduce float16/bfloat16 element by element even where the
 * CPU has the vector conversions (test_kernels runs both paths against one reference). */
extern int starfold__kernels_scalar_half;

/* OpenCL implementation and program management (kernels_opencl.c, only with STARFOLD_HAVE_OPENCL). */
void starfold__kernel_opencl(void *buffers[], void *cl_arg);
/* Builds the OpenCL program for every OpenCL device; 0 or a negative StarPU/OpenCL error. */
int starfold__opencl_program_load(void);
/* Releases the kernels and the program; no task may be running. */
void starfold__opencl_program_unload(void);

/* CUDA implementation (kernels_cuda.cu, only with STARFOLD_HAVE_CUDA). */
void starfold__kernel_cuda(void *buffers[], void *cl_arg);

#ifdef __cplusplus
}
#endif

#endif /* STARFOLD_SRC_KERNELS_H */
