/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * OpenCL kernels, built once from an embedded source string.
 *
 * Only two kernels: POCL compiles each kernel for every device (seconds per kernel when cold), so
 * the dtype and the op are kernel arguments instead of one kernel per combination. Both kernels are
 * always launched with the same local size (SF_CL_LOCAL) and a grid-stride loop, so each device
 * compiles one work-group function per kernel, whatever the element count.
 *
 *   starfold__reduce: dst[i] = a[i] op b[i]   (REDUCE runs it pairwise, left to right: dst = s0 op s1,
 *                                        dst = dst op s2, ...; op 5 is the internal SUB: a[i] - b[i])
 *   starfold__scale:  dst[i] = src[i] / divisor   (integers to float64, 8- and 16-bit ones to float32,
 *                                        when dst_dtype says so)
 *
 * float16 and bfloat16 are computed in float (vload_half / vstore_half_rte, which need no fp16
 * extension; bfloat16 by its bits). With more than two sources or a divisor they accumulate in a
 * float32 scratch buffer and are rounded once, at the end (cl_reduce_half_seg).
 *
 * Copies are clEnqueueCopyBuffer between StarPU's cl_mem handles (each with its offset). Every call
 * ends with clFinish: the task is complete when the function returns (the rig disables StarPU's
 * asynchronous OpenCL copies, and the codelet is not declared STARPU_OPENCL_ASYNC).
 *
 * A REDUCE whose destination is source k >= 1 (accumulating in place into a later source) cannot run
 * pairwise in place - the first step would overwrite source k before it is read - so it is computed
 * into a scratch buffer and copied into the destination. A REDUCE with several destinations computes
 * into the first and copies it to the others. REDUCE and SCALE run segment by segment (kernels.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "exec/kernels.h"

#define SF_CL_LOCAL 64
#define SF_CL_MAX_GROUPS 1024

static const char starfold__cl_source[] =
    "#ifdef cl_khr_fp64\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    "#define SF_BIN(T, x, y, op, ADD, MUL, SUB) ((op) == 0 || (op) == 1 ? ADD : (op) == 4 ? MUL : \\\n"
    "    (op) == 5 ? SUB : (op) == 2 ? ((y) < (x) ? (y) : (x)) : ((y) > (x) ? (y) : (x)))\n"
    /* float16 (4) and bfloat16 (5) are computed in float; kind 0 is a float32 accumulator. */
    "float sf_ld(__global const uchar *p, ulong i, int kind)\n"
    "{\n"
    "    if (kind == 4) return vload_half(i, (__global const half *)p);\n"
    "    if (kind == 5) return as_float((uint)((__global const ushort *)p)[i] << 16);\n"
    "    return ((__global const float *)p)[i];\n"
    "}\n"
    "void sf_st(__global uchar *p, ulong i, int kind, float v)\n"
    "{\n"
    "    if (kind == 4) {\n"
    "        vstore_half_rte(v, i, (__global half *)p);\n"
    "    } else if (kind == 5) {\n"
    "        uint u = as_uint(v);\n"
    "        ((__global ushort *)p)[i] = isnan(v) ? (ushort)((u >> 16) | 0x40u) : (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "    } else {\n"
    "        ((__global float *)p)[i] = v;\n"
    "    }\n"
    "}\n"
    /* Integers wrap through their unsigned type (signed: reinterpreted back with as_T). */
    "#define SF_INT(code, T, UT, AS) else if (dtype == code) {\\\n"
    "    T x = ((__global const T *)(a + a_off))[i], y = ((__global const T *)(b + b_off))[i];\\\n"
    "    ((__global T *)(dst + dst_off))[i] = SF_BIN(T, x, y, op, AS((UT)((UT)x + (UT)y)), AS((UT)((UT)x * (UT)y)),\\\n"
    "                                                AS((UT)((UT)x - (UT)y))); }\n"
    "#define SF_SAME(v) (v)\n"
    "__kernel void starfold__reduce(__global uchar *dst, ulong dst_off, __global const uchar *a, ulong a_off,\n"
    "                        __global const uchar *b, ulong b_off, ulong n, int dtype, int op, int wide)\n"
    "{\n"
    "    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {\n"
    "        if (dtype == 0) {\n"
    "            float x = ((__global const float *)(a + a_off))[i], y = ((__global const float *)(b + b_off))[i];\n"
    "            ((__global float *)(dst + dst_off))[i] = SF_BIN(float, x, y, op, x + y, x * y, x - y);\n"
    "        } else if (dtype == 4 || dtype == 5) {\n"
    "            float x = sf_ld(a + a_off, i, (wide & 1) ? 0 : dtype), y = sf_ld(b + b_off, i, dtype);\n"
    "            sf_st(dst + dst_off, i, (wide & 2) ? 0 : dtype, SF_BIN(float, x, y, op, x + y, x * y, x - y));\n"
    "        }\n"
    "#ifdef cl_khr_fp64\n"
    "        else if (dtype == 1) {\n"
    "            double x = ((__global const double *)(a + a_off))[i], y = ((__global const double *)(b + b_off))[i];\n"
    "            ((__global double *)(dst + dst_off))[i] = SF_BIN(double, x, y, op, x + y, x * y, x - y);\n"
    "        }\n"
    "#endif\n"
    "        SF_INT(2, int, uint, as_int)\n"
    "        SF_INT(3, long, ulong, as_long)\n"
    "        SF_INT(6, char, uchar, as_char)\n"
    "        SF_INT(7, uchar, uchar, SF_SAME)\n"
    "        SF_INT(8, short, ushort, as_short)\n"
    "        SF_INT(9, ushort, ushort, SF_SAME)\n"
    "        SF_INT(10, uint, uint, SF_SAME)\n"
    "        SF_INT(11, ulong, ulong, SF_SAME)\n"
    "    }\n"
    "}\n"
    "#define SF_DIV(code, T, W) else if (dtype == code)\\\n"
    "    ((__global T *)(dst + dst_off))[i] = (T)((W)((__global const T *)(src + src_off))[i] / (W)divisor);\n"
    "#define SF_TO_F32(code, T) else if (dst_dtype == 0 && dtype == code)\\\n"
    "    ((__global float *)(dst + dst_off))[i] = (float)((__global const T *)(src + src_off))[i] / (float)divisor;\n"
    "#define SF_TO_F64(code, T) else if (dst_dtype == 1 && dtype == code)\\\n"
    "    ((__global double *)(dst + dst_off))[i] = (double)((__global const T *)(src + src_off))[i] / (double)divisor;\n"
    "__kernel void starfold__scale(__global uchar *dst, ulong dst_off, __global const uchar *src, ulong src_off,\n"
    "                       ulong n, int dtype, uint divisor, int dst_dtype)\n"
    "{\n"
    "    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {\n"
    "        if ((dtype == 0 || dtype == 4 || dtype == 5) && (dst_dtype == 0 || dst_dtype == 4 || dst_dtype == 5))\n"
    "            sf_st(dst + dst_off, i, dst_dtype, sf_ld(src + src_off, i, dtype) / (float)divisor);\n"
    "#ifdef cl_khr_fp64\n"
    "        else if (dtype == 1)\n"
    "            ((__global double *)(dst + dst_off))[i] = ((__global const double *)(src + src_off))[i] / (double)divisor;\n"
    "        SF_TO_F64(2, int) SF_TO_F64(3, long) SF_TO_F64(10, uint) SF_TO_F64(11, ulong)\n"
    "#endif\n"
    "        SF_TO_F32(6, char) SF_TO_F32(7, uchar) SF_TO_F32(8, short) SF_TO_F32(9, ushort)\n"
    "        SF_DIV(2, int, long) SF_DIV(3, long, long) SF_DIV(6, char, long) SF_DIV(7, uchar, ulong)\n"
    "        SF_DIV(8, short, long) SF_DIV(9, ushort, ulong) SF_DIV(10, uint, ulong) SF_DIV(11, ulong, ulong)\n"
    "    }\n"
    "}\n";

enum { SF_CL_REDUCE = 0, SF_CL_SCALE = 1, SF_CL_NKERNELS = 2 };
static const char *const starfold__cl_kernel_names[SF_CL_NKERNELS] = { "starfold__reduce", "starfold__scale" };

/*
 * The program, and each device's kernel objects. A device's kernels are created on first use by that
 * device's worker (one thread per OpenCL device, so no two threads touch the same slot) and released
 * by starfold__opencl_program_unload() once no task runs.
 */
static struct starpu_opencl_program starfold__cl_program;
static int starfold__cl_loaded;
static cl_kernel starfold__cl_kernels[STARPU_MAXOPENCLDEVS][SF_CL_NKERNELS];
/* Per device: 0 not asked yet, 1 has cl_khr_fp64, -1 has not (float64 tasks then fail, never run silently wrong). */
static int starfold__cl_fp64[STARPU_MAXOPENCLDEVS];

int starfold__opencl_program_load(void)
{
    if (starfold__cl_loaded) return 0;
    int ret = starpu_opencl_load_opencl_from_string(starfold__cl_source, &starfold__cl_program, NULL);
    if (ret) return ret < 0 ? ret : -ret;
    memset(starfold__cl_kernels, 0, sizeof starfold__cl_kernels);
    memset(starfold__cl_fp64, 0, sizeof starfold__cl_fp64);
    starfold__cl_loaded = 1;
    return 0;
}

void starfold__opencl_program_unload(void)
{
    if (!starfold__cl_loaded) return;
    for (int d = 0; d < STARPU_MAXOPENCLDEVS; d++)
        for (int k = 0; k < SF_CL_NKERNELS; k++)
            if (starfold__cl_kernels[d][k]) {
                starpu_opencl_release_kernel(starfold__cl_kernels[d][k]);
                starfold__cl_kernels[d][k] = NULL;
            }
    starpu_opencl_unload_opencl(&starfold__cl_program);
    starfold__cl_loaded = 0;
}

static cl_kernel get_kernel(int devid, int which)
{
    if (devid < 0 || devid >= STARPU_MAXOPENCLDEVS || !starfold__cl_loaded) return NULL;
    if (!starfold__cl_kernels[devid][which]) {
        cl_kernel k;
        cl_command_queue q;
        if (starpu_opencl_load_kernel(&k, &q, &starfold__cl_program, starfold__cl_kernel_names[which], devid) != CL_SUCCESS)
            return NULL;
        starfold__cl_kernels[devid][which] = k;
    }
    return starfold__cl_kernels[devid][which];
}

static int has_fp64(int devid)
{
    if (!starfold__cl_fp64[devid]) {
        cl_device_id dev;
        size_t len = 0;
        int yes = 0;
        starpu_opencl_get_device(devid, &dev);
        if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &len) == CL_SUCCESS && len > 0) {
            char *ext = malloc(len + 1);
            if (!ext) return 0; /* asked again next time */
            if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, len, ext, NULL) == CL_SUCCESS) {
                ext[len] = '\0';
                yes = strstr(ext, "cl_khr_fp64") != NULL;
            }
            free(ext);
        }
        starfold__cl_fp64[devid] = yes ? 1 : -1;
    }
    return starfold__cl_fp64[devid] > 0;
}

/* A buffer region as OpenCL sees it: the cl_mem and a byte offset. */
typedef struct cl_region {
    cl_mem mem;
    size_t off;
} cl_region_t;

static cl_region_t region_at(void *buffers[], const starfold__kspan_t *s, size_t extra, size_t elemsize)
{
    struct starpu_vector_interface *v = buffers[s->buf];
    cl_region_t r = { (cl_mem)v->dev_handle, v->offset + (s->offset + extra) * elemsize };
    return r;
}

/* Element @extra of span @s, in the sources' element size (destinations share it but for a converting SCALE). */
static cl_region_t region(void *buffers[], const starfold__kernel_args_t *a, const starfold__kspan_t *s, size_t extra)
{
    return region_at(buffers, s, extra, a->elemsize);
}

static cl_int launch(cl_command_queue q, cl_kernel k, size_t n)
{
    size_t groups = (n + SF_CL_LOCAL - 1) / SF_CL_LOCAL;
    if (groups > SF_CL_MAX_GROUPS) groups = SF_CL_MAX_GROUPS;
    size_t global = groups * SF_CL_LOCAL, local = SF_CL_LOCAL;
    return clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
}

/* dst = x op y over @n elements; @wide (float16, bfloat16): bit 0 x, bit 1 dst is a float32 accumulator. */
static cl_int enqueue_reduce(cl_command_queue q, cl_kernel k, cl_region_t dst, cl_region_t x, cl_region_t y, size_t n,
                             int dtype, int op, int wide)
{
    cl_ulong dst_off = dst.off, x_off = x.off, y_off = y.off, count = n;
    cl_int err = 0;
    err |= clSetKernelArg(k, 0, sizeof(cl_mem), &dst.mem);
    err |= clSetKernelArg(k, 1, sizeof(cl_ulong), &dst_off);
    err |= clSetKernelArg(k, 2, sizeof(cl_mem), &x.mem);
    err |= clSetKernelArg(k, 3, sizeof(cl_ulong), &x_off);
    err |= clSetKernelArg(k, 4, sizeof(cl_mem), &y.mem);
    err |= clSetKernelArg(k, 5, sizeof(cl_ulong), &y_off);
    err |= clSetKernelArg(k, 6, sizeof(cl_ulong), &count);
    err |= clSetKernelArg(k, 7, sizeof(cl_int), &dtype);
    err |= clSetKernelArg(k, 8, sizeof(cl_int), &op);
    err |= clSetKernelArg(k, 9, sizeof(cl_int), &wide);
    if (err != CL_SUCCESS) return CL_INVALID_KERNEL_ARGS;
    return launch(q, k, n);
}

static cl_int copy_region(cl_command_queue q, cl_region_t from, cl_region_t to, size_t bytes)
{
    if (from.mem == to.mem && from.off == to.off) return CL_SUCCESS;
    return clEnqueueCopyBuffer(q, from.mem, to.mem, from.off, to.off, bytes, 0, NULL, NULL);
}

static cl_int cl_copy(cl_command_queue q, void *buffers[], const starfold__kernel_args_t *a)
{
    const starfold__kspan_t *src = a->spans, *dst = a->spans + a->nsrc;
    size_t si = 0, di = 0, soff = 0, doff = 0;
    while (si < a->nsrc && di < a->ndst) {
        size_t n = src[si].count - soff;
        if (dst[di].count - doff < n) n = dst[di].count - doff;
        cl_int err = copy_region(q, region(buffers, a, &src[si], soff), region(buffers, a, &dst[di], doff),
                                 n * a->elemsize);
        if (err != CL_SUCCESS) return err;
        soff += n;
        doff += n;
        if (soff == src[si].count) si++, soff = 0;
        if (doff == dst[di].count) di++, doff = 0;
    }
    return CL_SUCCESS;
}

/* dst = src / divisor over @n elements (starfold__scale; dst_dtype float64 converts integers). */
static cl_int enqueue_scale(cl_command_queue q, cl_kernel k, cl_region_t dst, cl_region_t src, size_t n, int dtype,
                            int dst_dtype, uint32_t divisor)
{
    cl_ulong src_off = src.off, dst_off = dst.off, count = n;
    cl_int dt = dtype, ddt = dst_dtype;
    cl_uint d = divisor;
    cl_int err = 0;
    err |= clSetKernelArg(k, 0, sizeof(cl_mem), &dst.mem);
    err |= clSetKernelArg(k, 1, sizeof(cl_ulong), &dst_off);
    err |= clSetKernelArg(k, 2, sizeof(cl_mem), &src.mem);
    err |= clSetKernelArg(k, 3, sizeof(cl_ulong), &src_off);
    err |= clSetKernelArg(k, 4, sizeof(cl_ulong), &count);
    err |= clSetKernelArg(k, 5, sizeof(cl_int), &dt);
    err |= clSetKernelArg(k, 6, sizeof(cl_uint), &d);
    err |= clSetKernelArg(k, 7, sizeof(cl_int), &ddt);
    if (err != CL_SUCCESS) return CL_INVALID_KERNEL_ARGS;
    return launch(q, k, n);
}

/* region = region / divisor, in place (a REDUCE with a divisor: MEAN fused into the reduction). */
static cl_int enqueue_scale_in_place(int devid, cl_command_queue q, cl_region_t r, size_t n, int dtype,
                                     uint32_t divisor)
{
    cl_kernel k = get_kernel(devid, SF_CL_SCALE);
    if (!k) return CL_INVALID_KERNEL;
    return enqueue_scale(q, k, r, r, n, dtype, dtype, divisor);
}

/* Copies the first destination of segment @sp into its other destinations. */
static cl_int fan_out(cl_command_queue q, void *buffers[], const starfold__kernel_args_t *a, const starfold__kspan_t *sp)
{
    cl_int err = CL_SUCCESS;
    const cl_region_t first = region(buffers, a, &sp[a->nsrc], 0);
    for (size_t d = 1; d < a->ndst && err == CL_SUCCESS; d++)
        err = copy_region(q, first, region(buffers, a, &sp[a->nsrc + d], 0), sp[0].count * a->elemsize);
    return err;
}

/*
 * float16 and bfloat16 with more than two sources or a divisor: the sources are combined into a
 * float32 scratch buffer (acc = s0 op s1, acc = acc op s2, ...), which the scale kernel divides and
 * rounds once into the first destination - one rounding, as the CPU and CUDA kernels.
 */
static cl_int cl_reduce_half_seg(int devid, cl_command_queue q, cl_kernel k, void *buffers[],
                                 const starfold__kernel_args_t *a, const starfold__kspan_t *sp)
{
    const size_t n = sp[0].count;
    cl_kernel scale = get_kernel(devid, SF_CL_SCALE);
    if (!scale) return CL_INVALID_KERNEL;
    cl_context ctx;
    cl_int err;
    starpu_opencl_get_context(devid, &ctx);
    cl_mem scratch = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * sizeof(float), NULL, &err);
    if (!scratch) return err != CL_SUCCESS ? err : CL_MEM_OBJECT_ALLOCATION_FAILURE;
    const cl_region_t acc = { scratch, 0 };
    err = enqueue_reduce(q, k, acc, region(buffers, a, &sp[0], 0), region(buffers, a, &sp[1], 0), n, a->dtype, a->op, 2);
    for (size_t s = 2; s < a->nsrc && err == CL_SUCCESS; s++)
        err = enqueue_reduce(q, k, acc, acc, region(buffers, a, &sp[s], 0), n, a->dtype, a->op, 3);
    if (err == CL_SUCCESS)
        err = enqueue_scale(q, scale, region(buffers, a, &sp[a->nsrc], 0), acc, n, SF_K_FLOAT32, a->dtype, a->divisor);
    cl_int fin = clFinish(q); /* the scratch buffer outlives the commands that use it */
    if (err == CL_SUCCESS) err = fin;
    clReleaseMemObject(scratch);
    return err == CL_SUCCESS ? fan_out(q, buffers, a, sp) : err;
}

static cl_int cl_reduce_seg(int devid, cl_command_queue q, void *buffers[], const starfold__kernel_args_t *a,
                            const starfold__kspan_t *sp)
{
    const size_t n = sp[0].count, bytes = n * a->elemsize;
    cl_region_t dst = region(buffers, a, &sp[a->nsrc], 0);
    if (a->nsrc == 1) {
        cl_int err = copy_region(q, region(buffers, a, &sp[0], 0), dst, bytes);
        if (err == CL_SUCCESS && a->divisor > 1) err = enqueue_scale_in_place(devid, q, dst, n, a->dtype, a->divisor);
        return err == CL_SUCCESS ? fan_out(q, buffers, a, sp) : err;
    }
    cl_kernel k = get_kernel(devid, SF_CL_REDUCE);
    if (!k) return CL_INVALID_KERNEL;
    if ((a->dtype == SF_K_FLOAT16 || a->dtype == SF_K_BFLOAT16) && (a->nsrc > 2 || a->divisor > 1))
        return cl_reduce_half_seg(devid, q, k, buffers, a, sp);

    cl_mem scratch = NULL;
    cl_region_t acc = dst;
    if (starfold__kernel_dst_alias(a, sp)) {
        cl_context ctx;
        cl_int err;
        starpu_opencl_get_context(devid, &ctx);
        scratch = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (!scratch) return err != CL_SUCCESS ? err : CL_MEM_OBJECT_ALLOCATION_FAILURE;
        acc.mem = scratch;
        acc.off = 0;
    }
    cl_int err = enqueue_reduce(q, k, acc, region(buffers, a, &sp[0], 0), region(buffers, a, &sp[1], 0), n,
                                a->dtype, a->op, 0);
    for (size_t s = 2; s < a->nsrc && err == CL_SUCCESS; s++)
        err = enqueue_reduce(q, k, acc, acc, region(buffers, a, &sp[s], 0), n, a->dtype, a->op, 0);
    if (err == CL_SUCCESS && a->divisor > 1) err = enqueue_scale_in_place(devid, q, acc, n, a->dtype, a->divisor);
    if (scratch) {
        if (err == CL_SUCCESS) err = copy_region(q, acc, dst, bytes);
        /* The scratch buffer must outlive the commands that use it. */
        cl_int fin = clFinish(q);
        if (err == CL_SUCCESS) err = fin;
        clReleaseMemObject(scratch);
    }
    return err == CL_SUCCESS ? fan_out(q, buffers, a, sp) : err;
}

static cl_int cl_reduce(int devid, cl_command_queue q, void *buffers[], const starfold__kernel_args_t *a)
{
    cl_int err = CL_SUCCESS;
    for (size_t sg = 0; sg < a->nseg && err == CL_SUCCESS; sg++)
        err = cl_reduce_seg(devid, q, buffers, a, starfold__kernel_segment(a, sg));
    return err;
}

static cl_int cl_scale_seg(cl_kernel k, cl_command_queue q, void *buffers[], const starfold__kernel_args_t *a,
                           const starfold__kspan_t *sp)
{
    return enqueue_scale(q, k, region_at(buffers, &sp[1], 0, a->dst_elemsize), region(buffers, a, &sp[0], 0),
                         sp[0].count, a->dtype, a->dst_dtype, a->divisor);
}

static cl_int cl_scale(int devid, cl_command_queue q, void *buffers[], const starfold__kernel_args_t *a)
{
    cl_kernel k = get_kernel(devid, SF_CL_SCALE);
    if (!k) return CL_INVALID_KERNEL;
    cl_int err = CL_SUCCESS;
    for (size_t sg = 0; sg < a->nseg && err == CL_SUCCESS; sg++)
        err = cl_scale_seg(k, q, buffers, a, starfold__kernel_segment(a, sg));
    return err;
}

static void kernel_opencl(void *buffers[], const starfold__kernel_args_t *a);

void starfold__kernel_opencl(void *buffers[], void *cl_arg)
{
    SF_TSAN_ACQUIRE();
    starfold__kernel_time(cl_arg, 0);
    kernel_opencl(buffers, cl_arg);
    starfold__kernel_time(cl_arg, 1);
    SF_TSAN_RELEASE();
}

static void kernel_opencl(void *buffers[], const starfold__kernel_args_t *a)
{
    if (starfold__kernel_cancelled(a)) return;
    if (starfold__kernel_hooked(a)) {
        starfold__kernel_fail(a);
        return;
    }
    const int devid = starpu_worker_get_devid(starpu_worker_get_id());
    cl_command_queue q;
    starpu_opencl_get_queue(devid, &q);

    cl_int err;
    if (a->kind != SF_KERNEL_COPY && (a->dtype == SF_K_FLOAT64 || a->dst_dtype == SF_K_FLOAT64) && !has_fp64(devid)) {
        starfold__kernel_fail(a);
        return;
    }
    switch (a->kind) {
    case SF_KERNEL_COPY: err = cl_copy(q, buffers, a); break;
    case SF_KERNEL_REDUCE: err = cl_reduce(devid, q, buffers, a); break;
    case SF_KERNEL_SCALE: err = cl_scale(devid, q, buffers, a); break;
    default: err = CL_INVALID_VALUE; break;
    }
    cl_int fin = clFinish(q);
    if (err != CL_SUCCESS || fin != CL_SUCCESS) starfold__kernel_fail(a);
}
