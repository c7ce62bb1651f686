/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Execution contexts: logical devices bound to StarPU workers, StarPU's life cycle, the context's
 * topology as StarPU measured it, and the vector helpers.
 *
 * StarPU life cycle. A process-wide registry (one mutex) counts the live contexts. The first context
 * starts StarPU when the application has not (starpu_init(NULL), so STARPU_* variables apply; one of
 * several MPI ranks of a node gets its own CPUs for the workers: workers.c) and
 * the last one shuts it down again; an application that initialised StarPU itself keeps it. The
 * OpenCL program is built when the first OpenCL context is created and released with the last
 * context, whoever owns StarPU (so it never outlives the OpenCL contexts it was built for).
 *
 *     create #1: [starpu_init if needed] [build OpenCL program if OpenCL mode]  n = 1
 *     create #k:                         [build OpenCL program if not built]    n = k
 *     destroy  :                                                                n - 1
 *     destroy (n = 0): [release OpenCL program] [starpu_shutdown if starfold started StarPU]
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>

#include "base/common.h"
#include "exec/exec.h"
#include "exec/partitions.h"
#include "exec/vectors.h"
#include "topology/topology.h"

/* Host-to-host "link" of logical devices sharing one memory node: a memcpy, not a transfer. */
#define SF_HOST_COPY_GBPS 20.0
/* Used when StarPU has no calibrated figure for a pair of memory nodes. */
#define SF_DEFAULT_LINK_GBPS 1.0
#define SF_DEFAULT_LINK_US 10.0

/* ThreadSanitizer's stand-in for StarPU's own synchronisation (kernels.h). */
char starfold__tsan_starpu;

static pthread_mutex_t starfold__runtime_lock = PTHREAD_MUTEX_INITIALIZER;
static int starfold__num_contexts;      /* live contexts */
static int starfold__started_starpu;    /* starfold called starpu_init() and owes a starpu_shutdown() */
static int starfold__opencl_built;      /* the OpenCL program is loaded */
static int starfold__host_limit_set;    /* a STARPU_LIMIT_CPU_*MEM variable was set when StarPU started (see Vectors) */

/* Whether the user limits StarPU's host memory (read when the first context starts a session). */
static int host_limit_set(void)
{
    return starfold__env_set("STARPU_LIMIT_CPU_MEM") || starfold__env_set("STARPU_LIMIT_CPU_NUMA_MEM");
}

STARFOLD_API void starfold_context_options_init(starfold_context_options_t *options)
{
    if (!options) return;
    memset(options, 0, sizeof *options);
    options->mode = STARFOLD_DEVICES_AUTO;
    options->num_devices = 0;
}

static const char *mode_name(starfold_device_mode_t mode)
{
    switch (mode) {
    case STARFOLD_DEVICES_AUTO: return "auto";
    case STARFOLD_DEVICES_CPU: return "CPU";
    case STARFOLD_DEVICES_OPENCL: return "OpenCL";
    case STARFOLD_DEVICES_CUDA: return "CUDA";
    }
    return "unknown";
}

static enum starpu_worker_archtype worker_type(starfold_device_mode_t mode)
{
    switch (mode) {
    case STARFOLD_DEVICES_OPENCL: return STARPU_OPENCL_WORKER;
    case STARFOLD_DEVICES_CUDA: return STARPU_CUDA_WORKER;
    default: return STARPU_CPU_WORKER;
    }
}

/* Called with starfold__runtime_lock held when a context could not be created: undo what create did. */
static void runtime_release_locked(void)
{
    if (starfold__num_contexts > 0) return;
    if (starfold__opencl_built) {
#ifdef STARFOLD_HAVE_OPENCL
        starfold__opencl_program_unload();
#endif
        starfold__opencl_built = 0;
    }
    if (starfold__started_starpu) {
        starpu_shutdown();
        starfold__started_starpu = 0;
    }
}

/* Picks the worker kind for @requested (AUTO resolved) and lists its workers into @ids (malloc'ed). */
static starfold_status_t find_workers(starfold_device_mode_t requested, starfold_device_mode_t *mode, int **ids,
                                      int *count)
{
    starfold_device_mode_t m = requested;
    if (m == STARFOLD_DEVICES_AUTO) {
        /* Only kinds this build has kernels for. */
        m = STARFOLD_DEVICES_CPU;
#ifdef STARFOLD_HAVE_OPENCL
        if (starpu_worker_get_count_by_type(STARPU_OPENCL_WORKER) > 0) m = STARFOLD_DEVICES_OPENCL;
#endif
#ifdef STARFOLD_HAVE_CUDA
        if (starpu_worker_get_count_by_type(STARPU_CUDA_WORKER) > 0) m = STARFOLD_DEVICES_CUDA;
#endif
    }
    int n = starpu_worker_get_count_by_type(worker_type(m));
    if (n <= 0)
        return starfold__error(STARFOLD_ERR_NO_DEVICE, "starfold_context_create: StarPU has no %s worker", mode_name(m));
    int *w = malloc(sizeof(int) * (size_t)n);
    if (!w) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_context_create: out of memory");
    n = (int)starpu_worker_get_ids_by_type(worker_type(m), w, (unsigned)n);
    if (n <= 0) {
        free(w);
        return starfold__error(STARFOLD_ERR_NO_DEVICE, "starfold_context_create: StarPU has no %s worker", mode_name(m));
    }
    *mode = m;
    *ids = w;
    *count = n;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_context_create(const starfold_context_options_t *options,
                                                       starfold_context_t *context)
{
    if (!context) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_context_create: NULL context");
    starfold_context_options_t opts;
    starfold_context_options_init(&opts);
    if (options) opts = *options;
    if ((int)opts.mode < (int)STARFOLD_DEVICES_AUTO || (int)opts.mode > (int)STARFOLD_DEVICES_CUDA)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_context_create: unknown device mode %d", (int)opts.mode);
    if (opts.num_devices < 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_context_create: num_devices must be >= 0, got %d",
                        opts.num_devices);

    starfold_status_t st = STARFOLD_OK;
    struct starfold_context *ctx = NULL;
    int *ids = NULL, nworkers = 0;

    pthread_mutex_lock(&starfold__runtime_lock);
    if (starfold__num_contexts == 0) starfold__host_limit_set = host_limit_set();
    if (!starpu_is_initialized()) {
        /* Several ranks of one node: each its own CPUs (workers.c), else StarPU's default. */
        struct starpu_conf conf;
        starpu_conf_init(&conf);
        int ret = starpu_init(starfold__spread_workers(&conf) ? &conf : NULL);
        if (ret != 0) {
            st = ret == -ENODEV ? starfold__error(STARFOLD_ERR_NO_DEVICE, "starfold_context_create: StarPU found no worker")
                                : starfold__error(STARFOLD_ERR_RUNTIME, "starfold_context_create: starpu_init failed (%d)", ret);
            goto out;
        }
        starfold__started_starpu = 1;
    }

    starfold_device_mode_t mode = STARFOLD_DEVICES_CPU;
    SF_CHECK_GOTO(find_workers(opts.mode, &mode, &ids, &nworkers), st, out);
    const int n = opts.num_devices ? opts.num_devices : nworkers;
    if (mode != STARFOLD_DEVICES_CPU && n > nworkers) {
        st = starfold__error(STARFOLD_ERR_NO_DEVICE, "starfold_context_create: %d devices asked, StarPU has %d %s workers", n,
                      nworkers, mode_name(mode));
        goto out;
    }

    ctx = calloc(1, sizeof *ctx);
    if (ctx) {
        ctx->workers = malloc(sizeof(int) * (size_t)n);
        ctx->nodes = malloc(sizeof(int) * (size_t)n);
        ctx->pool = starfold__pool_create();
    }
    if (!ctx || !ctx->workers || !ctx->nodes || !ctx->pool) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_context_create: out of memory");
        goto out;
    }
    ctx->mode = mode;
    ctx->num_devices = n;
    ctx->test_refuse_task = -1;
    ctx->test_fail_task = -1;
    /* Device i -> i-th worker of the kind; CPU devices wrap around the CPU workers. */
    for (int i = 0; i < n; i++) {
        ctx->workers[i] = ids[i % nworkers];
        ctx->nodes[i] = (int)starpu_worker_get_memory_node((unsigned)ctx->workers[i]);
    }

    if (mode == STARFOLD_DEVICES_OPENCL && !starfold__opencl_built) {
#ifdef STARFOLD_HAVE_OPENCL
        int ret = starfold__opencl_program_load();
        if (ret != 0) {
            st = starfold__error(STARFOLD_ERR_RUNTIME, "starfold_context_create: building the OpenCL kernels failed (%d)", ret);
            goto out;
        }
        starfold__opencl_built = 1;
#else
        st = starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "starfold_context_create: this build has no OpenCL kernels");
        goto out;
#endif
    }
#ifndef STARFOLD_HAVE_CUDA
    if (mode == STARFOLD_DEVICES_CUDA) {
        st = starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "starfold_context_create: this build has no CUDA kernels "
                                                  "(configure --with-cuda)");
        goto out;
    }
#endif

    /*
     * Vectors from starpu_malloc (starfold_vector_create() among them) start on a cache line: the
     * CPU kernels stream results a 64-byte line at a time, and a destination 16 bytes off a line
     * measured up to twice as slow. StarPU only ever raises this alignment.
     */
    starpu_malloc_set_align(64);
    starfold__num_contexts++;
    *context = ctx;
    ctx = NULL;
out:
    if (st != STARFOLD_OK) runtime_release_locked();
    pthread_mutex_unlock(&starfold__runtime_lock);
    if (ctx) {
        free(ctx->workers);
        free(ctx->nodes);
        starfold__pool_close(ctx->pool);
        free(ctx);
    }
    free(ids);
    return st;
}

STARFOLD_API void starfold_context_destroy(starfold_context_t context)
{
    if (!context) return;
    if (context->ext_fini) context->ext_fini(context->ext);
    pthread_mutex_lock(&starfold__runtime_lock);
    if (starfold__num_contexts > 0) starfold__num_contexts--;
    runtime_release_locked();
    pthread_mutex_unlock(&starfold__runtime_lock);
    free(context->workers);
    free(context->nodes);
    starfold__pool_close(context->pool);
    free(context);
}

STARFOLD_API starfold_device_mode_t starfold_context_mode(starfold_context_t context)
{
    return context ? context->mode : STARFOLD_DEVICES_AUTO;
}

STARFOLD_API int starfold_context_num_devices(starfold_context_t context)
{
    return context ? context->num_devices : 0;
}

STARFOLD_API int starfold_context_device_worker(starfold_context_t context, int device)
{
    return context && device >= 0 && device < context->num_devices ? context->workers[device] : -1;
}

STARFOLD_API int starfold_context_device_node(starfold_context_t context, int device)
{
    return context && device >= 0 && device < context->num_devices ? context->nodes[device] : -1;
}

/* StarPU's calibrated figures between two memory nodes, both directions, made usable as a link. */
static void measured_link(int a, int b, double *gbps, double *us)
{
    double bw_ab = starpu_transfer_bandwidth((unsigned)a, (unsigned)b);
    double bw_ba = starpu_transfer_bandwidth((unsigned)b, (unsigned)a);
    double lat_ab = starpu_transfer_latency((unsigned)a, (unsigned)b);
    double lat_ba = starpu_transfer_latency((unsigned)b, (unsigned)a);
    /* MB/s (10^6 B/s) -> GB/s; the slower direction, as a link is one figure per direction. */
    double bw = fmin(bw_ab, bw_ba) / 1000.0;
    double lat = fmax(lat_ab, lat_ba);
    *gbps = isfinite(bw) && bw > 0.0 ? bw : SF_DEFAULT_LINK_GBPS;
    *us = isfinite(lat) && lat >= 0.0 ? lat : SF_DEFAULT_LINK_US;
}

STARFOLD_API starfold_status_t starfold_context_topology(starfold_context_t context, starfold_topology_t *topology)
{
    if (!context || !topology)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_context_topology: NULL %s",
                        !context ? "context" : "topology");
    const int n = context->num_devices;
    char name[64];
    snprintf(name, sizeof name, "starpu-%s", context->mode == STARFOLD_DEVICES_CPU      ? "cpu"
                                             : context->mode == STARFOLD_DEVICES_OPENCL ? "opencl"
                                                                                         : "cuda");
    starfold_topology_t t = NULL;
    starfold_status_t st = starfold_topology_create(name, n, &t);
    if (st != STARFOLD_OK) return st;
    const starfold_device_kind_t kind = context->mode == STARFOLD_DEVICES_CPU ? STARFOLD_DEVICE_CPU : STARFOLD_DEVICE_GPU;
    for (int i = 0; i < n; i++) {
        char dev[80], wname[48];
        starpu_worker_get_name(context->workers[i], wname, sizeof wname);
        snprintf(dev, sizeof dev, "dev%d (%s)", i, wname);
        SF_CHECK_GOTO(starfold_topology_set_device(t, i, dev, kind, -1), st, fail);
        /* A GPU device's memory is its StarPU memory node: the workers of one GPU share it. */
        if (kind == STARFOLD_DEVICE_GPU) SF_CHECK_GOTO(starfold_topology_set_device_memory(t, i, context->nodes[i]), st, fail);
    }
    starfold_cost_params_t params;
    starfold_cost_params_init(&params);
    if (context->calibrated) params = context->calibration;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            starfold_link_t l = { .a = a, .b = b, .lanes = 1 };
            const int na = context->nodes[a], nb = context->nodes[b];
            if (na == nb) {
                /* One memory: nothing moves; a copy between them is a memcpy in that memory. */
                l.kind = STARFOLD_LINK_HOST;
                l.bandwidth_GBps = kind == STARFOLD_DEVICE_GPU ? params.gpu_memory_GBps : SF_HOST_COPY_GBPS;
                l.latency_us = 0.0;
            } else {
                /* StarPU 1.3 stages OpenCL-to-OpenCL transfers through main memory. */
                l.kind = context->mode == STARFOLD_DEVICES_CUDA ? STARFOLD_LINK_PCIE : STARFOLD_LINK_HOST;
                measured_link(na, nb, &l.bandwidth_GBps, &l.latency_us);
            }
            SF_CHECK_GOTO(starfold_topology_add_link(t, &l), st, fail);
        }
    if (context->calibrated) {
        SF_CHECK_GOTO(starfold_topology_set_cost_params(t, &context->calibration), st, fail);
        SF_CHECK_GOTO(starfold_topology_set_measurements(t, context->num_measurements, context->measurements), st, fail);
    }
    *topology = t;
    return STARFOLD_OK;
fail:
    starfold_topology_destroy(t);
    return st;
}

/* ------------------------------------------------------------------------------------------------
 * Vectors
 *
 * A vector of zero elements is registered with its home node and no memory (StarPU accepts a
 * zero-length vector and acquiring it is a no-op); starfold_submit() never attaches zero-element
 * buffers to tasks, and reading or writing zero bytes returns at once.
 *
 * On a host memory node a vector's buffer is counted against StarPU's memory limit only where the
 * user set that limit (STARPU_LIMIT_CPU_MEM or STARPU_LIMIT_CPU_NUMA_MEM when StarPU started). By
 * default StarPU 1.3 takes the limit from hwloc's size of the NUMA node, which a virtual machine can
 * report far too small (4.7 GB of a 128 GiB VM: a ResNet-50 batch of 8 replicas was refused "out of
 * memory" with 120 GiB free); a vector is then the caller's data, uncounted as a malloc'd buffer
 * registered with StarPU is, and fails only when the system has no memory. StarPU's own temporaries
 * stay counted. A device's memory (an OpenCL or CUDA node) is always counted: there the limit is
 * real. Allocation and release take the same flags: the variables are read once per StarPU session.
 */

static int uncounted(unsigned node) { return !starfold__host_limit_set && starpu_node_get_kind(node) == STARPU_CPU_RAM; }

int starfold__node_counts_vectors(unsigned node) { return !uncounted(node); }

STARFOLD_API starfold_status_t starfold_vector_create(starfold_context_t context, int device, starfold_dtype_t dtype,
                                                      size_t count, starpu_data_handle_t *handle)
{
    if (!context || !handle)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_vector_create: NULL %s", !context ? "context" : "handle");
    const size_t elem = starfold_dtype_size(dtype);
    if (elem == 0) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_vector_create: unknown dtype %d", (int)dtype);
    if (device < 0 || device >= context->num_devices)
        return starfold__error(STARFOLD_ERR_NO_DEVICE, "starfold_vector_create: device %d, the context has %d", device,
                        context->num_devices);
    if (count > UINT32_MAX)
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "starfold_vector_create: %zu elements, StarPU vectors hold at most %u",
                        count, (unsigned)UINT32_MAX);
    const unsigned node = (unsigned)context->nodes[device];
    uintptr_t ptr = 0;
    if (count > 0) {
        ptr = uncounted(node) ? starpu_malloc_on_node_flags(node, count * elem, STARPU_MALLOC_PINNED)
                              : starpu_malloc_on_node(node, count * elem);
        if (!ptr)
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_vector_create: cannot allocate %zu bytes on device %d",
                            count * elem, device);
    }
    starpu_vector_data_register(handle, (int)node, ptr, (uint32_t)count, elem);
    return STARFOLD_OK;
}

STARFOLD_API void starfold_vector_destroy(starfold_context_t context, starpu_data_handle_t handle)
{
    (void)context;
    if (!handle) return;
    /* Another kind of handle (a variable, a matrix) is the caller's to unregister: touching it as a
     * vector aborts inside StarPU. Left alone, with the reason in starfold_last_error(). */
    if (!starfold__is_vector(handle)) {
        starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_vector_destroy: the handle is not a StarPU vector; "
                                                       "left registered");
        return;
    }
    const int home = starpu_data_get_home_node(handle);
    const size_t bytes = (size_t)starpu_vector_get_nx(handle) * starpu_vector_get_elemsize(handle);
    uintptr_t ptr = 0;
    if (home >= 0) {
        const struct starpu_vector_interface *v = starpu_data_get_interface_on_node(handle, (unsigned)home);
        ptr = v->ptr;
    }
    starfold__vector_forget_partitions(handle);
    /* Waits for the tasks using it; no write-back to a home buffer that is freed next. */
    starpu_data_unregister_no_coherency(handle);
    if (home < 0 || !ptr || !bytes) return;
    if (uncounted((unsigned)home)) starpu_free_on_node_flags((unsigned)home, ptr, bytes, STARPU_MALLOC_PINNED);
    else starpu_free_on_node((unsigned)home, ptr, bytes);
}

int starfold__is_vector(starpu_data_handle_t handle)
{
    return starpu_data_get_interface_id(handle) == STARPU_VECTOR_INTERFACE_ID;
}

void starfold__vector_shape(starpu_data_handle_t handle, size_t *count, size_t *elem_size)
{
    *count = starpu_vector_get_nx(handle);
    *elem_size = starpu_vector_get_elemsize(handle);
}

starfold_status_t starfold__host_vector_register(void *mem, size_t count, size_t elem_size,
                                                 starpu_data_handle_t *handle)
{
    if (count > UINT32_MAX)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%zu elements: a StarPU vector holds at most %" PRIu32,
                               count, UINT32_MAX);
    starpu_vector_data_register(handle, STARPU_MAIN_RAM, (uintptr_t)mem, (uint32_t)count, elem_size);
    return STARFOLD_OK;
}

void starfold__vector_unregister_discard(starpu_data_handle_t handle)
{
    starfold__vector_forget_partitions(handle);
    starpu_data_unregister_no_coherency(handle);
}

static starfold_status_t check_vector(starpu_data_handle_t handle, const void *host, size_t bytes, const char *fn)
{
    if (!handle) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL handle", fn);
    if (!starfold__is_vector(handle))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: the handle is not a StarPU vector", fn);
    if (bytes > 0 && !host) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL host buffer", fn);
    const size_t size = (size_t)starpu_vector_get_nx(handle) * starpu_vector_get_elemsize(handle);
    if (bytes > size)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %zu bytes, the vector holds %zu", fn, bytes, size);
    return STARFOLD_OK;
}

/* Host pointer of the main-memory replica, valid between acquire and release on STARPU_MAIN_RAM. */
static void *main_ram_ptr(starpu_data_handle_t handle)
{
    const struct starpu_vector_interface *v = starpu_data_get_interface_on_node(handle, STARPU_MAIN_RAM);
    return (void *)v->ptr;
}

STARFOLD_API starfold_status_t starfold_vector_write(starpu_data_handle_t handle, const void *src, size_t bytes)
{
    starfold_status_t st = check_vector(handle, src, bytes, "starfold_vector_write");
    if (st != STARFOLD_OK || bytes == 0) return st;
    const size_t size = (size_t)starpu_vector_get_nx(handle) * starpu_vector_get_elemsize(handle);
    /* A partial write keeps the rest: read-write; a full one need not fetch the old value. */
    const enum starpu_data_access_mode mode = bytes == size ? STARPU_W : STARPU_RW;
    int ret = starfold__acquire_main(handle, mode);
    if (ret != 0) return starfold__error(STARFOLD_ERR_RUNTIME, "starfold_vector_write: starpu_data_acquire_on_node failed (%d)", ret);
    SF_TSAN_ACQUIRE();
    memcpy(main_ram_ptr(handle), src, bytes);
    SF_TSAN_RELEASE();
    starpu_data_release_on_node(handle, STARPU_MAIN_RAM);
    return STARFOLD_OK;
}

/* The bytes [@offset, @offset + @bytes) lie within vector @handle. */
static starfold_status_t check_range(starpu_data_handle_t handle, size_t offset, size_t bytes, const char *fn)
{
    const size_t size = (size_t)starpu_vector_get_nx(handle) * starpu_vector_get_elemsize(handle);
    if (offset > size || bytes > size - offset)
        return starfold__error(STARFOLD_ERR_INTERNAL, "%s: bytes [%zu, %zu) outside a vector of %zu", fn, offset,
                               offset + bytes, size);
    return STARFOLD_OK;
}

/*
 * Acquires in main memory, with @mode, what holds the bytes [@lo, @hi) of @handle: the vector, or
 * the pieces of a kept vector's active partition (partitions.c), so reading or writing a value between
 * two starts leaves its bucket cut. *@spans is the caller's to release and free.
 */
static starfold_status_t acquire_spans(starpu_data_handle_t handle, size_t lo, size_t hi,
                                       enum starpu_data_access_mode mode, const char *fn, starfold__held_t **spans,
                                       size_t *nspans)
{
    const starfold_status_t st = check_range(handle, lo, hi - lo, fn);
    if (st != STARFOLD_OK) return st;
    const int ret = starfold__acquire_main_range(handle, lo, hi, mode, spans, nspans);
    if (ret == -ENOMEM) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (ret != 0) return starfold__error(STARFOLD_ERR_RUNTIME, "%s: starpu_data_acquire_on_node failed (%d)", fn, ret);
    return STARFOLD_OK;
}

static void release_spans(starfold__held_t *spans, size_t nspans)
{
    starfold__release_main_range(spans, nspans);
    free(spans);
}

/*
 * Copies between @host and the bytes [@offset, @offset + @bytes) of a vector, through its acquired
 * @spans (by offset; together they hold the range): into @host when @to_host.
 */
static void copy_spans(const starfold__held_t *spans, size_t nspans, size_t offset, void *host, size_t bytes,
                       int to_host)
{
    size_t i = 0, hi = nspans; /* the first span ending after @offset */
    while (i < hi) {
        const size_t mid = i + (hi - i) / 2;
        if (spans[mid].offset + spans[mid].bytes <= offset) i = mid + 1;
        else hi = mid;
    }
    for (; i < nspans && spans[i].offset < offset + bytes; i++) {
        const size_t a = spans[i].offset > offset ? spans[i].offset : offset;
        const size_t b = spans[i].offset + spans[i].bytes < offset + bytes ? spans[i].offset + spans[i].bytes
                                                                            : offset + bytes;
        unsigned char *mem = (unsigned char *)main_ram_ptr(spans[i].child) + (a - spans[i].offset);
        unsigned char *h = (unsigned char *)host + (a - offset);
        if (to_host) memcpy(h, mem, b - a);
        else memcpy(mem, h, b - a);
    }
}

starfold_status_t starfold__vector_read_range(starpu_data_handle_t handle, size_t offset, void *host, size_t bytes)
{
    if (bytes == 0) return STARFOLD_OK;
    starfold__held_t *spans = NULL;
    size_t nspans = 0;
    const starfold_status_t st = acquire_spans(handle, offset, offset + bytes, STARPU_R, "reading a value", &spans,
                                               &nspans);
    if (st != STARFOLD_OK) return st;
    SF_TSAN_ACQUIRE();
    copy_spans(spans, nspans, offset, host, bytes, 1);
    SF_TSAN_RELEASE();
    release_spans(spans, nspans);
    return STARFOLD_OK;
}

starfold_status_t starfold__vector_write_range(starpu_data_handle_t handle, size_t offset, const void *host,
                                               size_t bytes)
{
    const starfold__host_piece_t piece = { offset, host, bytes };
    return starfold__vector_write_pieces(handle, 1, &piece);
}

/*
 * One acquire for every piece: a StarPU acquire and release cost microseconds, and 1,000 values of
 * a bucket written one by one paid them 1,000 times. What is acquired spans the pieces' bytes: the
 * vector, or the pieces of a kept vector's partition they touch. Read-write, but where one piece is
 * all that is written (then what lies wholly inside it need not be fetched).
 */
starfold_status_t starfold__vector_write_pieces(starpu_data_handle_t handle, size_t n, const starfold__host_piece_t *pieces)
{
    static const char fn[] = "writing a value";
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t k = 0; k < n; k++) {
        const starfold_status_t st = check_range(handle, pieces[k].offset, pieces[k].bytes, fn);
        if (st != STARFOLD_OK) return st;
        if (!pieces[k].bytes) continue;
        if (pieces[k].offset < lo) lo = pieces[k].offset;
        if (pieces[k].offset + pieces[k].bytes > hi) hi = pieces[k].offset + pieces[k].bytes;
    }
    if (hi == 0) return STARFOLD_OK;
    starfold__held_t *spans = NULL;
    size_t nspans = 0;
    const starfold_status_t st = acquire_spans(handle, lo, hi, n == 1 ? STARPU_W : STARPU_RW, fn, &spans, &nspans);
    if (st != STARFOLD_OK) return st;
    SF_TSAN_ACQUIRE();
    for (size_t k = 0; k < n; k++)
        if (pieces[k].bytes) copy_spans(spans, nspans, pieces[k].offset, (void *)pieces[k].host, pieces[k].bytes, 0);
    SF_TSAN_RELEASE();
    release_spans(spans, nspans);
    return STARFOLD_OK;
}

void *starfold__context_ext(starfold_context_t ctx)
{
    return __atomic_load_n(&ctx->ext, __ATOMIC_ACQUIRE);
}

int starfold__context_ext_set(starfold_context_t ctx, void *ext, void (*fini)(void *ext))
{
    void *expected = NULL;
    if (!__atomic_compare_exchange_n(&ctx->ext, &expected, ext, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return 0;
    ctx->ext_fini = fini; /* read only by starfold_context_destroy(), after every other use */
    return 1;
}

STARFOLD_API starfold_status_t starfold_vector_read(starpu_data_handle_t handle, void *dst, size_t bytes)
{
    starfold_status_t st = check_vector(handle, dst, bytes, "starfold_vector_read");
    if (st != STARFOLD_OK || bytes == 0) return st;
    int ret = starfold__acquire_main(handle, STARPU_R);
    if (ret != 0) return starfold__error(STARFOLD_ERR_RUNTIME, "starfold_vector_read: starpu_data_acquire_on_node failed (%d)", ret);
    SF_TSAN_ACQUIRE();
    memcpy(dst, main_ram_ptr(handle), bytes);
    SF_TSAN_RELEASE();
    starpu_data_release_on_node(handle, STARPU_MAIN_RAM);
    return STARFOLD_OK;
}
