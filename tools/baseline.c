/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Baselines for `starfold bench`, run on the same replicas as starfold's graphs so they can be
 * compared row by row. They are tools, not part of the library: they talk to StarPU directly and reuse
 * the executor's kernels, which is why the programs that link them link the library's objects.
 *
 * copy: every replica's input copied to its output by one task pinned to its device: the same n
 * reads and n writes as the cheapest possible all-reduce on one memory, with no arithmetic - the
 * memory-traffic bound as these workers reach it.
 *
 *     replica r (pinned to device r):   copy_r : out[r] = in[r]
 *
 * starpu-redux: StarPU's own reduction (the STARPU_REDUX access mode).
 *
 *     replica r (pinned to device r):   contrib_r : acc(REDUX) = acc op in[r]
 *     StarPU, on first non-REDUX access: one acc buffer per worker, initialised with the op's
 *                                        identity (init method), reduced in a binary tree paired by
 *                                        worker index (redux method, unpinned tasks), the result
 *                                        copied into acc
 *     replica r (pinned to device r):   deliver_r : out[r] = acc      (MEAN: acc / num_replicas)
 *
 * The contribution and delivery tasks reuse the graph kernels (kernels.h) with their own arguments.
 *
 * StarPU 1.3 calls the reduction methods with no argument: the init method is called as a plain
 * function with a NULL cl_arg while a task's data is fetched, the redux tasks are created by StarPU
 * with no cl_arg. So the dtype and op are baked into the methods: one pair of codelets per
 * (dtype, op), generated below, and their failures are reported through a process-wide flag, which
 * is why runs are serialised by a mutex.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <starpu.h>

#include "base/common.h"
#include "exec/kernels.h"
#include "exec/vectors.h"
#include "tools.h"

#ifdef STARFOLD_HAVE_CUDA
#include <cuda_runtime.h>
#endif

/* One baseline run at a time: the reduction methods' failure flag is shared. */
static pthread_mutex_t baseline_lock = PTHREAD_MUTEX_INITIALIZER;
/* __atomic: an init or redux method failed during the current run. */
static int method_failed;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The identity of @op for @dtype, as the bytes of one element; returns the element size. The
 * conversion saturates integers, so +-infinity is the type's largest and smallest value. */
static size_t identity(int dtype, int op, unsigned char pattern[8])
{
    const double v = op == SF_K_MIN ? INFINITY : op == SF_K_MAX ? -INFINITY : op == SF_K_PROD ? 1.0 : 0.0;
    memset(pattern, 0, 8);
    (void)starfold_element_from_double((starfold_dtype_t)dtype, v, pattern, 0);
    return starfold_dtype_size((starfold_dtype_t)dtype);
}

static void method_fail(void)
{
    __atomic_store_n(&method_failed, 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------------------------------------
 * The reduction methods, per backend. The init methods fill a per-worker buffer with the identity;
 * the device versions write one element and double the filled prefix with device-side copies
 * (log2(n) copies, OpenCL 1.0 / plain CUDA runtime calls, no kernel to build).
 */

static void init_cpu(void *buffers[], int dtype, int op)
{
    struct starpu_vector_interface *v = buffers[0];
    unsigned char pattern[8];
    const size_t es = identity(dtype, op, pattern);
    char *p = (char *)v->ptr;
    for (size_t i = 0; i < v->nx; i++) memcpy(p + i * es, pattern, es);
}

#ifdef STARFOLD_HAVE_OPENCL
static void init_opencl(void *buffers[], int dtype, int op)
{
    struct starpu_vector_interface *v = buffers[0];
    unsigned char pattern[8];
    const size_t es = identity(dtype, op, pattern), n = v->nx;
    if (n == 0) return;
    cl_command_queue q;
    starpu_opencl_get_queue(starpu_worker_get_devid(starpu_worker_get_id()), &q);
    cl_mem mem = (cl_mem)v->dev_handle;
    cl_int err = clEnqueueWriteBuffer(q, mem, CL_TRUE, v->offset, es, pattern, 0, NULL, NULL);
    for (size_t done = 1; done < n && err == CL_SUCCESS; done *= 2) {
        const size_t k = done < n - done ? done : n - done;
        err = clEnqueueCopyBuffer(q, mem, mem, v->offset, v->offset + done * es, k * es, 0, NULL, NULL);
        /* The next copy reads what this one wrote. */
        if (err == CL_SUCCESS) err = clFinish(q);
    }
    if (err != CL_SUCCESS) method_fail();
}
#endif

#ifdef STARFOLD_HAVE_CUDA
static void init_cuda(void *buffers[], int dtype, int op)
{
    struct starpu_vector_interface *v = buffers[0];
    unsigned char pattern[8];
    const size_t es = identity(dtype, op, pattern), n = v->nx;
    if (n == 0) return;
    cudaStream_t s = starpu_cuda_get_local_stream();
    char *p = (char *)v->ptr;
    cudaError_t err = cudaMemcpyAsync(p, pattern, es, cudaMemcpyHostToDevice, s);
    /* Copies on one stream run in order: each reads a prefix the previous ones completed. */
    for (size_t done = 1; done < n && err == cudaSuccess; done *= 2) {
        const size_t k = done < n - done ? done : n - done;
        err = cudaMemcpyAsync(p + done * es, p, k * es, cudaMemcpyDeviceToDevice, s);
    }
    if (err == cudaSuccess) err = cudaStreamSynchronize(s);
    if (err != cudaSuccess) method_fail();
}
#endif

/* dst (buffer 0, RW) = dst op src (buffer 1, R), through the graph kernels. */
static void redux_with(void (*kernel)(void *[], void *), void *buffers[], int dtype, int op)
{
    struct starpu_vector_interface *v = buffers[0];
    if (v->nx == 0) return;
    int cancelled = 0, status = 0;
    starfold__kspan_t spans[3] = { { 0, 0, v->nx }, { 1, 0, v->nx }, { 0, 0, v->nx } };
    starfold__kernel_args_t a = {
        .cancelled = &cancelled, .status = &status, .kind = SF_KERNEL_REDUCE, .dtype = dtype,
        .dst_dtype = dtype, .op = op == SF_K_MEAN ? SF_K_SUM : op, .divisor = 1, .elemsize = v->elemsize,
        .dst_elemsize = v->elemsize, .nseg = 1, .nsrc = 2, .ndst = 1, .spans = spans,
    };
    kernel(buffers, &a);
    if (__atomic_load_n(&status, __ATOMIC_ACQUIRE) != 0) method_fail();
}

/* Per (dtype, op): the functions StarPU calls without argument. */
#define SF_METHODS_CPU(D, O)                                                                          \
    static void init_cpu_##D##_##O(void *b[], void *arg) { (void)arg; init_cpu(b, D, O); }            \
    static void redux_cpu_##D##_##O(void *b[], void *arg) { (void)arg; redux_with(starfold__kernel_cpu, b, D, O); }
#ifdef STARFOLD_HAVE_OPENCL
#define SF_METHODS_OPENCL(D, O)                                                                       \
    static void init_opencl_##D##_##O(void *b[], void *arg) { (void)arg; init_opencl(b, D, O); }      \
    static void redux_opencl_##D##_##O(void *b[], void *arg) { (void)arg; redux_with(starfold__kernel_opencl, b, D, O); }
#define SF_OPENCL_ENTRY(D, O) .init_opencl = init_opencl_##D##_##O, .redux_opencl = redux_opencl_##D##_##O,
#else
#define SF_METHODS_OPENCL(D, O)
#define SF_OPENCL_ENTRY(D, O)
#endif
#ifdef STARFOLD_HAVE_CUDA
#define SF_METHODS_CUDA(D, O)                                                                         \
    static void init_cuda_##D##_##O(void *b[], void *arg) { (void)arg; init_cuda(b, D, O); }          \
    static void redux_cuda_##D##_##O(void *b[], void *arg) { (void)arg; redux_with(starfold__kernel_cuda, b, D, O); }
#define SF_CUDA_ENTRY(D, O) .init_cuda = init_cuda_##D##_##O, .redux_cuda = redux_cuda_##D##_##O,
#else
#define SF_METHODS_CUDA(D, O)
#define SF_CUDA_ENTRY(D, O)
#endif
#define SF_METHODS(D, O) SF_METHODS_CPU(D, O) SF_METHODS_OPENCL(D, O) SF_METHODS_CUDA(D, O)
#define SF_METHODS_OF_DTYPE(D) SF_METHODS(D, 0) SF_METHODS(D, 1) SF_METHODS(D, 2) SF_METHODS(D, 3) SF_METHODS(D, 4)
SF_METHODS_OF_DTYPE(0)
SF_METHODS_OF_DTYPE(1)
SF_METHODS_OF_DTYPE(2)
SF_METHODS_OF_DTYPE(3)
SF_METHODS_OF_DTYPE(4)
SF_METHODS_OF_DTYPE(5)
SF_METHODS_OF_DTYPE(6)
SF_METHODS_OF_DTYPE(7)
SF_METHODS_OF_DTYPE(8)
SF_METHODS_OF_DTYPE(9)
SF_METHODS_OF_DTYPE(10)
SF_METHODS_OF_DTYPE(11)

typedef void (*kernel_func_t)(void *[], void *);
typedef struct method_funcs {
    kernel_func_t init_cpu, redux_cpu, init_opencl, redux_opencl, init_cuda, redux_cuda;
} method_funcs_t;

#define SF_ENTRY(D, O) \
    [D][O] = { .init_cpu = init_cpu_##D##_##O, .redux_cpu = redux_cpu_##D##_##O, SF_OPENCL_ENTRY(D, O) SF_CUDA_ENTRY(D, O) }
#define SF_ENTRIES_OF_DTYPE(D) SF_ENTRY(D, 0), SF_ENTRY(D, 1), SF_ENTRY(D, 2), SF_ENTRY(D, 3), SF_ENTRY(D, 4)
static const method_funcs_t method_table[STARFOLD_DTYPE_COUNT][STARFOLD_OP_COUNT] = {
    SF_ENTRIES_OF_DTYPE(0), SF_ENTRIES_OF_DTYPE(1), SF_ENTRIES_OF_DTYPE(2),  SF_ENTRIES_OF_DTYPE(3),
    SF_ENTRIES_OF_DTYPE(4), SF_ENTRIES_OF_DTYPE(5), SF_ENTRIES_OF_DTYPE(6),  SF_ENTRIES_OF_DTYPE(7),
    SF_ENTRIES_OF_DTYPE(8), SF_ENTRIES_OF_DTYPE(9), SF_ENTRIES_OF_DTYPE(10), SF_ENTRIES_OF_DTYPE(11),
};

_Static_assert(STARFOLD_DTYPE_COUNT == 12 && STARFOLD_OP_COUNT == 5, "one set of reduction methods per dtype and op");

static uint32_t baseline_where(void)
{
    uint32_t where = STARPU_CPU;
#ifdef STARFOLD_HAVE_OPENCL
    where |= STARPU_OPENCL;
#endif
#ifdef STARFOLD_HAVE_CUDA
    where |= STARPU_CUDA;
#endif
    return where;
}

/*
 * The codelets handed to StarPU. They must outlive every task that uses them, so they are static,
 * filled once; StarPU may write into a codelet (it caches per-codelet state), so each (dtype, op)
 * has its own.
 */
static struct starpu_codelet init_cl[STARFOLD_DTYPE_COUNT][STARFOLD_OP_COUNT];
static struct starpu_codelet redux_cl[STARFOLD_DTYPE_COUNT][STARFOLD_OP_COUNT];
static struct starpu_codelet contrib_cl, deliver_cl;
static pthread_once_t codelets_once = PTHREAD_ONCE_INIT;

static void codelets_fill(void)
{
    for (int d = 0; d < STARFOLD_DTYPE_COUNT; d++)
        for (int o = 0; o < STARFOLD_OP_COUNT; o++) {
            const method_funcs_t *f = &method_table[d][o];
            struct starpu_codelet *init = &init_cl[d][o], *redux = &redux_cl[d][o];
            starpu_codelet_init(init);
            starpu_codelet_init(redux);
            init->where = redux->where = baseline_where();
            init->cpu_funcs[0] = f->init_cpu;
            redux->cpu_funcs[0] = f->redux_cpu;
            init->opencl_funcs[0] = f->init_opencl;
            redux->opencl_funcs[0] = f->redux_opencl;
            init->cuda_funcs[0] = f->init_cuda;
            redux->cuda_funcs[0] = f->redux_cuda;
            init->nbuffers = 1;
            init->modes[0] = STARPU_W;
            redux->nbuffers = 2;
            redux->modes[0] = STARPU_RW;
            redux->modes[1] = STARPU_R;
            init->name = "starfold-redux-init";
            redux->name = "starfold-redux";
        }
    struct starpu_codelet *cls[2] = { &contrib_cl, &deliver_cl };
    for (int k = 0; k < 2; k++) {
        starpu_codelet_init(cls[k]);
        cls[k]->where = baseline_where();
        cls[k]->cpu_funcs[0] = starfold__kernel_cpu;
#ifdef STARFOLD_HAVE_OPENCL
        cls[k]->opencl_funcs[0] = starfold__kernel_opencl;
#endif
#ifdef STARFOLD_HAVE_CUDA
        cls[k]->cuda_funcs[0] = starfold__kernel_cuda;
#endif
        cls[k]->nbuffers = 2;
    }
    /* contrib: acc (REDUX) op= input (R);  deliver: acc (R) -> output (W). */
    contrib_cl.modes[0] = STARPU_REDUX;
    contrib_cl.modes[1] = STARPU_R;
    contrib_cl.name = "starfold-redux-contrib";
    deliver_cl.modes[0] = STARPU_R;
    deliver_cl.modes[1] = STARPU_W;
    deliver_cl.name = "starfold-redux-deliver";
}

/* Completion of one run's own tasks (StarPU's internal reduction tasks finish before any delivery). */
typedef struct run_sync {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int pending; /* submitted tasks whose callback has not run */
} run_sync_t;

static void task_done(void *arg)
{
    run_sync_t *s = arg;
    pthread_mutex_lock(&s->lock);
    if (--s->pending == 0) pthread_cond_broadcast(&s->done);
    pthread_mutex_unlock(&s->lock);
}

/* Kernel arguments of one task: the args and their spans in one allocation (kernels.h's layout). */
typedef struct task_args {
    starfold__kernel_args_t a;
    starfold__kspan_t spans[3];
} task_args_t;

static starfold_status_t check_replicas(starfold_context_t ctx, starfold_dtype_t dtype, starfold_op_t op, int n,
                                        const starpu_data_handle_t *inputs, const starpu_data_handle_t *outputs,
                                        size_t *count)
{
    static const char fn[] = "starfold_tools_baseline_starpu_redux";
    if (!ctx || !inputs || !outputs)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !ctx ? "context" : !inputs ? "inputs" : "outputs");
    const size_t es = starfold_dtype_size(dtype);
    if (es == 0) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d", fn, (int)dtype);
    if ((int)op < 0 || (int)op >= STARFOLD_OP_COUNT)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown op %d", fn, (int)op);
    if (n < 1 || n > starfold_context_num_devices(ctx))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d replicas, the context has %d devices", fn, n,
                        starfold_context_num_devices(ctx));
    size_t nx = 0;
    for (int r = 0; r < 2 * n; r++) {
        starpu_data_handle_t h = r < n ? inputs[r] : outputs[r - n];
        const char *what = r < n ? "input" : "output";
        const int slot = r < n ? r : r - n;
        if (!h) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s %d", fn, what, slot);
        if (!starfold__is_vector(h))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s %d is not a StarPU vector", fn, what, slot);
        if (starpu_vector_get_elemsize(h) != es)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s %d has %zu-byte elements, %s needs %zu", fn, what,
                            slot, starpu_vector_get_elemsize(h), starfold_dtype_name(dtype), es);
        if (r == 0) nx = starpu_vector_get_nx(h);
        else if (starpu_vector_get_nx(h) != nx)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s %d has %u elements, input 0 has %zu", fn, what, slot,
                            (unsigned)starpu_vector_get_nx(h), nx);
    }
    *count = nx;
    return STARFOLD_OK;
}

/*
 * Submits one detached task of @cl on (@h0, @h1) with @ta's arguments, pinned to @worker and counted in
 * @sync (StarPU destroys it after its callback). Returns 0, -ENOMEM when it cannot be created, or
 * StarPU's refusal (the task is then freed and not counted).
 */
static int submit_pinned(struct starpu_codelet *cl, starpu_data_handle_t h0, starpu_data_handle_t h1, task_args_t *ta,
                         run_sync_t *sync, int worker)
{
    struct starpu_task *t = starpu_task_create();
    if (!t) return -ENOMEM;
    t->cl = cl;
    t->handles[0] = h0;
    t->handles[1] = h1;
    t->cl_arg = &ta->a;
    t->cl_arg_size = sizeof *ta;
    t->cl_arg_free = 0;
    t->callback_func = task_done;
    t->callback_arg = sync;
    t->execute_on_a_specific_worker = 1;
    t->workerid = (unsigned)worker;
    pthread_mutex_lock(&sync->lock);
    sync->pending++;
    pthread_mutex_unlock(&sync->lock);
    const int ret = starpu_task_submit(t);
    if (ret != 0) {
        pthread_mutex_lock(&sync->lock);
        sync->pending--;
        pthread_mutex_unlock(&sync->lock);
        starpu_task_destroy(t); /* never submitted: ours to free */
    }
    return ret;
}

starfold_status_t starfold_tools_baseline_starpu_redux(starfold_context_t context, starfold_dtype_t dtype,
                                                              starfold_op_t op, int num_replicas,
                                                              const starpu_data_handle_t *inputs,
                                                              const starpu_data_handle_t *outputs, double *seconds)
{
    size_t nx = 0;
    starfold_status_t st = check_replicas(context, dtype, op, num_replicas, inputs, outputs, &nx);
    if (st != STARFOLD_OK) return st;
    const int n = num_replicas;
    if (nx == 0) { /* nothing to reduce; StarPU would have nothing to allocate */
        if (seconds) *seconds = 0.0;
        return STARFOLD_OK;
    }
    const size_t es = starfold_dtype_size(dtype);
    pthread_once(&codelets_once, codelets_fill);

    /* args[0..n) contribute, args[n..2n) deliver; they live until every task has run. */
    task_args_t *args = calloc((size_t)2 * n, sizeof *args);
    if (!args) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_tools_baseline_starpu_redux: out of memory");
    int cancelled = 0, status = 0; /* shared by this run's tasks, see kernels.h */
    run_sync_t sync = { .pending = 0 };
    if (pthread_mutex_init(&sync.lock, NULL) != 0 || pthread_cond_init(&sync.done, NULL) != 0) {
        free(args);
        return starfold__error(STARFOLD_ERR_RUNTIME, "starfold_tools_baseline_starpu_redux: cannot create a condition variable");
    }
    starpu_data_handle_t acc = NULL;

    pthread_mutex_lock(&baseline_lock);
    __atomic_store_n(&method_failed, 0, __ATOMIC_RELEASE);
    const double t0 = now_seconds();

    /* Home node -1: StarPU allocates acc where it is first used; the tree's result lands there. */
    starpu_vector_data_register(&acc, -1, 0, (uint32_t)nx, es);
    starpu_data_set_reduction_methods(acc, &redux_cl[dtype][op], &init_cl[dtype][op]);

    for (int k = 0; k < 2 * n; k++) {
        const int r = k % n, deliver = k >= n;
        task_args_t *ta = &args[k];
        ta->a = (starfold__kernel_args_t){
            /* The destination has the sources' dtype: the baseline's integer MEAN truncates (no promotion). */
            .cancelled = &cancelled, .status = &status, .dtype = (int)dtype, .dst_dtype = (int)dtype, .elemsize = es,
            .dst_elemsize = es, .divisor = 1, .node = (size_t)k, .nseg = 1, .spans = ta->spans,
        };
        if (!deliver) {
            /* acc = acc op input: a two-source REDUCE into its first source. */
            ta->a.kind = SF_KERNEL_REDUCE;
            ta->a.op = op == STARFOLD_OP_MEAN ? SF_K_SUM : (int)op;
            ta->a.nsrc = 2;
            ta->a.ndst = 1;
        } else {
            ta->a.kind = op == STARFOLD_OP_MEAN && n > 1 ? SF_KERNEL_SCALE : SF_KERNEL_COPY;
            ta->a.divisor = (uint32_t)n;
            ta->a.nsrc = 1;
            ta->a.ndst = 1;
        }
        /* Buffer 0 is acc, buffer 1 the replica's input or output; REDUCE writes back into buffer 0. */
        ta->spans[0] = (starfold__kspan_t){ 0, 0, nx };
        ta->spans[1] = (starfold__kspan_t){ 1, 0, nx };
        ta->spans[2] = (starfold__kspan_t){ 0, 0, nx };
        const int ret = submit_pinned(deliver ? &deliver_cl : &contrib_cl, acc, deliver ? outputs[r] : inputs[r], ta,
                                      &sync, starfold_context_device_worker(context, r));
        if (ret != 0) {
            st = ret == -ENOMEM ? starfold__error(STARFOLD_ERR_OUT_OF_MEMORY,
                                           "starfold_tools_baseline_starpu_redux: out of memory creating a task")
                                : starfold__error(ret == -ENODEV ? STARFOLD_ERR_NO_DEVICE : STARFOLD_ERR_RUNTIME,
                                           "starfold_tools_baseline_starpu_redux: StarPU refused the %s task of replica %d (%d)",
                                           deliver ? "delivery" : "contribution", r, ret);
            /* What was queued still runs, as no-ops: outputs are then not the reduction. */
            __atomic_store_n(&cancelled, 1, __ATOMIC_RELEASE);
            break;
        }
    }
    pthread_mutex_lock(&sync.lock);
    while (sync.pending > 0) pthread_cond_wait(&sync.done, &sync.lock);
    pthread_mutex_unlock(&sync.lock);
    const double elapsed = now_seconds() - t0;
    /* A scratch handle: no write-back anywhere. */
    starpu_data_unregister_no_coherency(acc);
    if (st == STARFOLD_OK && (__atomic_load_n(&status, __ATOMIC_ACQUIRE) != 0 ||
                              __atomic_load_n(&method_failed, __ATOMIC_ACQUIRE) != 0))
        st = starfold__error(STARFOLD_ERR_TASK_FAILED, "starfold_tools_baseline_starpu_redux: a kernel failed (%s %s)",
                      starfold_dtype_name(dtype), starfold_op_name(op));
    pthread_mutex_unlock(&baseline_lock);

    pthread_cond_destroy(&sync.done);
    pthread_mutex_destroy(&sync.lock);
    free(args);
    if (st == STARFOLD_OK && seconds) *seconds = elapsed;
    return st;
}

starfold_status_t starfold_tools_baseline_copy(starfold_context_t context, starfold_dtype_t dtype,
                                                      int num_replicas, const starpu_data_handle_t *inputs,
                                                      const starpu_data_handle_t *outputs, double *seconds)
{
    size_t nx = 0;
    starfold_status_t st = check_replicas(context, dtype, STARFOLD_OP_SUM, num_replicas, inputs, outputs, &nx);
    if (st != STARFOLD_OK) return st;
    const int n = num_replicas;
    if (nx == 0) {
        if (seconds) *seconds = 0.0;
        return STARFOLD_OK;
    }
    const size_t es = starfold_dtype_size(dtype);
    pthread_once(&codelets_once, codelets_fill);
    task_args_t *args = calloc((size_t)n, sizeof *args);
    if (!args) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_tools_baseline_copy: out of memory");
    int cancelled = 0, status = 0;
    run_sync_t sync = { .pending = 0 };
    if (pthread_mutex_init(&sync.lock, NULL) != 0 || pthread_cond_init(&sync.done, NULL) != 0) {
        free(args);
        return starfold__error(STARFOLD_ERR_RUNTIME, "starfold_tools_baseline_copy: cannot create a condition variable");
    }
    const double t0 = now_seconds();
    for (int r = 0; r < n; r++) {
        task_args_t *ta = &args[r];
        ta->a = (starfold__kernel_args_t){
            .cancelled = &cancelled, .status = &status, .kind = SF_KERNEL_COPY, .dtype = (int)dtype,
            .dst_dtype = (int)dtype, .elemsize = es, .dst_elemsize = es, .divisor = 1, .node = (size_t)r,
            .nseg = 1, .nsrc = 1, .ndst = 1, .spans = ta->spans,
        };
        ta->spans[0] = (starfold__kspan_t){ 0, 0, nx };
        ta->spans[1] = (starfold__kspan_t){ 1, 0, nx };
        /* deliver_cl reads buffer 0 and writes buffer 1: a copy. */
        const int ret = submit_pinned(&deliver_cl, inputs[r], outputs[r], ta, &sync,
                                      starfold_context_device_worker(context, r));
        if (ret != 0) {
            st = ret == -ENOMEM ? starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_tools_baseline_copy: out of memory creating a task")
                                : starfold__error(ret == -ENODEV ? STARFOLD_ERR_NO_DEVICE : STARFOLD_ERR_RUNTIME,
                                           "starfold_tools_baseline_copy: StarPU refused the task of replica %d (%d)", r, ret);
            __atomic_store_n(&cancelled, 1, __ATOMIC_RELEASE);
            break;
        }
    }
    pthread_mutex_lock(&sync.lock);
    while (sync.pending > 0) pthread_cond_wait(&sync.done, &sync.lock);
    pthread_mutex_unlock(&sync.lock);
    const double elapsed = now_seconds() - t0;
    if (st == STARFOLD_OK && __atomic_load_n(&status, __ATOMIC_ACQUIRE) != 0)
        st = starfold__error(STARFOLD_ERR_TASK_FAILED, "starfold_tools_baseline_copy: a kernel failed (%s)", starfold_dtype_name(dtype));
    pthread_cond_destroy(&sync.done);
    pthread_mutex_destroy(&sync.lock);
    free(args);
    if (st == STARFOLD_OK && seconds) *seconds = elapsed;
    return st;
}
