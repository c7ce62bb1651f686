/*
 * starfold_submit(): a graph becomes StarPU tasks; and the request that tracks them.
 *
 * Two halves. prepare() does everything that depends only on the graph, the context and the caller's
 * views: checks, the plan (pieces, which nodes are tasks, dependencies), each task's template (its
 * pieces, access modes and kernel arguments) and the partition plans of the caller's vectors. start()
 * turns the templates into StarPU tasks for one request and submits them. starfold_submit() and
 * starfold_submit_views() do both; a persistent submission (starfold_persistent_create()) keeps the
 * first half and runs the second per starfold_persistent_start(): for 1,000 tensors as views on 8
 * replicas the first half is most of the cost.
 *
 * One task per node, pinned to the worker of the node's device, its buffers the distinct handles its
 * spans name. Handles: inputs and outputs are the caller's (sequential consistency kept, so the
 * caller's own tasks before and after are ordered by StarPU's data dependencies); temporaries are new
 * vectors with home node -1 and sequential consistency off, so only the graph's edges order them.
 *
 * Submission order and the gate. All tasks are created and every dependency declared before anything
 * is submitted. The tasks without predecessors depend on one more task, the gate (no codelet), which
 * is submitted last:
 *
 *      gate ----> root tasks ----> ... graph edges ... ----> last tasks
 *      (submitted last: nothing of the graph can start before every task was accepted)
 *
 * If StarPU refuses a task, the request is marked cancelled, the refused task and every task not yet
 * submitted are submitted again as empty tasks (no codelet: always accepted, so every dependency
 * declared on them is satisfied), the gate goes last, and every kernel - seeing `cancelled` - does
 * nothing: nothing is written. starfold_submit() then waits for those no-ops and returns
 * STARFOLD_ERR_RUNTIME. The tasks already accepted keep the caller's data: see keep_caller_data().
 * Refusals are rare: before declaring anything, each task is checked with
 * starpu_worker_can_execute_task(), so the one cause StarPU 1.3 reports (-ENODEV: the worker cannot
 * run the codelet) fails early with nothing queued; the cancellation is the defence for the rest.
 *
 * Access modes. For each handle of a task: read and written -> RW; only read -> R; only written -> W
 * when the task writes the whole vector, or when it is the first task of the graph to write that
 * handle and no input range of the same handle is read by the graph (then the rest of the vector holds
 * nothing anyone will read before the graph writes it; StarPU also refuses to read a never-written
 * temporary, so the first write of a temporary must be W); RW otherwise. The first writer of a
 * temporary runs before every other task touching it: an extra dependency is added where the graph
 * has none. For a caller's handle, sequential consistency already orders tasks in submission order.
 *
 * Empty work. Spans of zero elements are dropped; a node whose spans are all empty is no task at all,
 * and its dependencies are passed through to the nodes depending on it, so ordering stays transitive.
 * Zero-element buffers are therefore never attached to a task, and their handles may be NULL.
 *
 * Completion. Each task's callback decrements the request's pending counter (gate included) under
 * the request's mutex and signals at zero; waits block on the condition variable. Temporaries are
 * unregistered without coherency by the first wait that sees completion (or by the destroy).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <time.h>

#include "base/common.h"
#include "exec/exec.h"
#include "graph/graph.h"

_Static_assert(SF_KERNEL_TASK_FAILED == (int)STARFOLD_ERR_TASK_FAILED, "kernels.h status mirror");
_Static_assert((int)SF_K_FLOAT32 == (int)STARFOLD_FLOAT32 && (int)SF_K_FLOAT64 == (int)STARFOLD_FLOAT64 &&
                   (int)SF_K_INT32 == (int)STARFOLD_INT32 && (int)SF_K_INT64 == (int)STARFOLD_INT64,
               "kernels.h dtype mirror");
_Static_assert((int)SF_K_SUM == (int)STARFOLD_OP_SUM && (int)SF_K_MEAN == (int)STARFOLD_OP_MEAN &&
                   (int)SF_K_MIN == (int)STARFOLD_OP_MIN && (int)SF_K_MAX == (int)STARFOLD_OP_MAX &&
                   (int)SF_K_PROD == (int)STARFOLD_OP_PROD,
               "kernels.h op mirror");

static struct starpu_codelet starfold__codelet = {
    .where = STARPU_CPU
#ifdef STARFOLD_HAVE_OPENCL
             | STARPU_OPENCL
#endif
#ifdef STARFOLD_HAVE_CUDA
             | STARPU_CUDA
#endif
    ,
    .cpu_funcs = { starfold__kernel_cpu },
#ifdef STARFOLD_HAVE_OPENCL
    .opencl_funcs = { starfold__kernel_opencl },
#endif
#ifdef STARFOLD_HAVE_CUDA
    .cuda_funcs = { starfold__kernel_cuda },
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .name = "starfold",
};

#define SF_NONE ((size_t)-1)

/* Serialises the submission windows of starfold_submit() (see there). */
static pthread_mutex_t starfold__submit_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------------------------------------
 * Requests
 */

static void task_done(void *arg)
{
    struct starfold_request *r = arg;
    pthread_mutex_lock(&r->lock);
    if (r->pending > 0 && --r->pending == 0) pthread_cond_broadcast(&r->done);
    pthread_mutex_unlock(&r->lock);
}

static struct starfold_request *request_new(void)
{
    struct starfold_request *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) {
        free(r);
        return NULL;
    }
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int ok = pthread_cond_init(&r->done, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!ok) {
        free(r);
        return NULL;
    }
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        pthread_cond_destroy(&r->done);
        free(r);
        return NULL;
    }
    return r;
}

/*
 * Unregisters the temporaries (no write-back). Only once every task completed; may block briefly
 * while StarPU finishes releasing them. The first caller does it (two threads may wait on a request).
 */
static void request_release_temps(struct starfold_request *r)
{
    pthread_mutex_lock(&r->lock);
    const int mine = !r->temps_released;
    r->temps_released = 1;
    pthread_mutex_unlock(&r->lock);
    if (!mine) return;
    for (size_t i = 0; i < r->ntemps; i++)
        if (r->temps[i]) starpu_data_unregister_no_coherency(r->temps[i]);
    if (r->temp_block) starfold__pool_put(r->pool, r->temp_block, r->temp_block_bytes);
    r->temp_block = NULL;
}

static void request_free(struct starfold_request *r)
{
    request_release_temps(r);
    for (size_t i = 0; i < r->nargs; i++) free(r->args[i]);
    free(r->args);
    free(r->temps);
    pthread_cond_destroy(&r->done);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static void request_wait_all(struct starfold_request *r)
{
    pthread_mutex_lock(&r->lock);
    while (r->pending > 0) pthread_cond_wait(&r->done, &r->lock);
    pthread_mutex_unlock(&r->lock);
    SF_TSAN_ACQUIRE(); /* what the kernels wrote */
}

static starfold_status_t request_result(struct starfold_request *r)
{
    return (starfold_status_t)__atomic_load_n(&r->status, __ATOMIC_ACQUIRE);
}

STARFOLD_API starfold_status_t starfold_request_wait(starfold_request_t request)
{
    if (!request) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_request_wait: NULL request");
    request_wait_all(request);
    request_release_temps(request);
    starfold_status_t st = request_result(request);
    if (st != STARFOLD_OK) starfold__error(st, "a task of the request failed on its device");
    return st;
}

STARFOLD_API starfold_status_t starfold_request_wait_timeout(starfold_request_t request, double seconds)
{
    if (!request) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_request_wait_timeout: NULL request");
    if (isnan(seconds) || seconds < 0.0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_request_wait_timeout: %g seconds", seconds);
    if (isinf(seconds)) return starfold_request_wait(request);

    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    double whole = floor(seconds);
    if (whole > 1e9) whole = 1e9; /* ~30 years: as good as forever, and no time_t overflow */
    deadline.tv_sec += (time_t)whole;
    deadline.tv_nsec += (long)((seconds - floor(seconds)) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    int timed_out = 0;
    pthread_mutex_lock(&request->lock);
    while (request->pending > 0 && !timed_out)
        timed_out = pthread_cond_timedwait(&request->done, &request->lock, &deadline) == ETIMEDOUT;
    const int finished = request->pending == 0;
    pthread_mutex_unlock(&request->lock);
    if (!finished)
        return starfold__error(STARFOLD_ERR_TIMEOUT, "starfold_request_wait_timeout: still running after %g s", seconds);
    SF_TSAN_ACQUIRE();
    request_release_temps(request);
    starfold_status_t st = request_result(request);
    if (st != STARFOLD_OK) starfold__error(st, "a task of the request failed on its device");
    return st;
}

STARFOLD_API starfold_status_t starfold_request_test(starfold_request_t request)
{
    if (!request) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_request_test: NULL request");
    pthread_mutex_lock(&request->lock);
    const int finished = request->pending == 0;
    pthread_mutex_unlock(&request->lock);
    if (!finished) return STARFOLD_ERR_IN_PROGRESS;
    SF_TSAN_ACQUIRE();
    /* Temporaries stay registered until a wait or the destroy: unregistering may block. */
    return request_result(request);
}

STARFOLD_API void starfold_request_destroy(starfold_request_t request)
{
    if (!request) return;
    request_wait_all(request);
    request_free(request);
}

/* ------------------------------------------------------------------------------------------------
 * Validation
 */

/* The shape of the handle last looked at: views of one vector come one after another. */
typedef struct shape_cache {
    starpu_data_handle_t handle;
    int vector;
    size_t nx, elemsize;
} shape_cache_t;

/*
 * @v: the view given for graph buffer @b (its element count and dtype); @exact: the vector must be
 * exactly the tensor (starfold_submit), else the range must lie within it (starfold_submit_views).
 */
static starfold_status_t check_view(const starfold_view_t *v, const starfold__buffer_t *b, const char *what, int slot,
                                    size_t tensor, int exact, shape_cache_t *sc, const char *fn)
{
    starpu_data_handle_t h = v->handle;
    if (!h) {
        if (b->count == 0) return STARFOLD_OK; /* nothing to move: no handle needed */
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s slot %d tensor %zu: NULL handle", fn, what, slot,
                        tensor);
    }
    if (sc->handle != h) {
        sc->handle = h;
        sc->vector = starfold__is_vector(h);
        if (sc->vector) sc->nx = starpu_vector_get_nx(h), sc->elemsize = starpu_vector_get_elemsize(h);
    }
    if (!sc->vector)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s slot %d tensor %zu: not a StarPU vector",
                        fn, what, slot, tensor);
    const size_t nx = sc->nx, elem = sc->elemsize;
    if (!exact) {
        if (elem != starfold_dtype_size(b->dtype))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                            "%s: %s slot %d tensor %zu: vector of %zu-byte elements, the tensor is "
                            "%s",
                            fn, what, slot, tensor, elem, starfold_dtype_name(b->dtype));
        if (v->offset > nx || b->count > nx - v->offset)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                            "%s: %s slot %d tensor %zu: elements [%zu, %zu + %zu) lie outside its "
                            "vector of %zu",
                            fn, what, slot, tensor, v->offset, v->offset, b->count, nx);
        return STARFOLD_OK;
    }
    if (nx != b->count || elem != starfold_dtype_size(b->dtype))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                        "%s: %s slot %d tensor %zu: vector of %zu elements of %zu bytes, the graph wants "
                        "%zu elements of %zu bytes (%s)",
                        fn, what, slot, tensor, nx, elem, b->count, starfold_dtype_size(b->dtype),
                        starfold_dtype_name(b->dtype));
    return STARFOLD_OK;
}

/* One external buffer and its view, for grouping the graph's buffers by handle. */
typedef struct ext_ref {
    starpu_data_handle_t handle;
    size_t lo, hi; /* the view's elements in the vector */
    size_t buf;
} ext_ref_t;

/* By range, then buffer (within one handle). */
static int ext_ref_range_cmp(const void *pa, const void *pb)
{
    const ext_ref_t *a = pa, *b = pb;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
    return a->buf < b->buf ? -1 : a->buf > b->buf;
}

/* Index of @h in the open-addressing table @slots (@cap a power of two): where it is, or the empty slot. */
static size_t handle_slot(const starpu_data_handle_t *slots, size_t cap, starpu_data_handle_t h)
{
    size_t i = (size_t)(((uintptr_t)h >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1);
    while (slots[i] && slots[i] != h) i = (i + 1) & (cap - 1);
    return i;
}

/*
 * The views of the graph's inputs and outputs that name a handle, grouped by handle (groups in order
 * of first appearance), each group sorted by range then buffer (ext_ref_range_cmp); NULL on OOM.
 * Grouping goes through a hash table of the distinct handles and one counting pass, and a group that
 * arrives sorted (a bucket's tensors, one after another) is not sorted again: a general sort of the
 * 16,000 views of 1,000 tensors on 8 replicas took a third of starfold_submit_views().
 */
static ext_ref_t *ext_refs(const struct starfold_graph *g, const starfold_view_t *inputs,
                           const starfold_view_t *outputs, size_t *nrefs)
{
    const size_t nin = (size_t)g->num_inputs * g->num_tensors, nout = (size_t)g->num_outputs * g->num_tensors;
    const size_t nall = nin + nout;
    ext_ref_t *refs = malloc(sizeof *refs * (nall + 1)), *out = NULL;
    size_t *gid = malloc(sizeof *gid * (nall + 1)), *start = NULL, *group_of = NULL;
    size_t cap = 64, ngroups = 0, n = 0;
    starpu_data_handle_t *slots = calloc(cap, sizeof *slots);
    size_t *slot_group = malloc(sizeof *slot_group * cap);
    if (!refs || !gid || !slots || !slot_group) goto fail;
    for (size_t i = 0; i < nall; i++) {
        const starfold_view_t *v = i < nin ? &inputs[i] : &outputs[i - nin];
        const size_t b = i < nin ? g->input_buf[i] : g->output_buf[i - nin];
        if (!v->handle) continue;
        if (n == 0 || v->handle != refs[n - 1].handle) { /* consecutive views usually share their handle */
            size_t k = handle_slot(slots, cap, v->handle);
            if (!slots[k]) {
                if (2 * (ngroups + 1) > cap) { /* grow: rehash every handle seen */
                    const size_t ncap = cap * 2;
                    starpu_data_handle_t *ns = calloc(ncap, sizeof *ns);
                    size_t *ng = malloc(sizeof *ng * ncap);
                    if (!ns || !ng) {
                        free(ns);
                        free(ng);
                        goto fail;
                    }
                    for (size_t j = 0; j < cap; j++)
                        if (slots[j]) {
                            const size_t m = handle_slot(ns, ncap, slots[j]);
                            ns[m] = slots[j];
                            ng[m] = slot_group[j];
                        }
                    free(slots);
                    free(slot_group);
                    slots = ns;
                    slot_group = ng;
                    cap = ncap;
                    k = handle_slot(slots, cap, v->handle);
                }
                slots[k] = v->handle;
                slot_group[k] = ngroups++;
            }
            gid[n] = slot_group[k];
        } else {
            gid[n] = gid[n - 1];
        }
        refs[n++] = (ext_ref_t){ v->handle, v->offset, v->offset + g->bufs[b].count, b };
    }
    /*
     * Each handle's views in one run already (a bucket per replica gives that): nothing to move.
     * Otherwise a counting pass puts group k's views at out[start[k] .. start[k + 1]), in their order.
     */
    size_t runs = n > 0;
    for (size_t i = 1; i < n; i++) runs += gid[i] != gid[i - 1];
    if (runs != ngroups) {
        out = malloc(sizeof *out * (n + 1));
        start = calloc(ngroups + 1, sizeof *start);
        group_of = malloc(sizeof *group_of * (ngroups + 1));
        if (!out || !start || !group_of) goto fail;
        for (size_t i = 0; i < n; i++) start[gid[i] + 1]++;
        for (size_t k = 0; k < ngroups; k++) start[k + 1] += start[k];
        memcpy(group_of, start, sizeof *start * ngroups);
        for (size_t i = 0; i < n; i++) out[group_of[gid[i]]++] = refs[i];
        free(refs);
        refs = out;
        out = NULL;
    }
    /* Each handle's views by range: sorted only when they do not come sorted. */
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && refs[j].handle == refs[i].handle; j++) {}
        size_t k = i + 1;
        while (k < j && ext_ref_range_cmp(&refs[k - 1], &refs[k]) <= 0) k++;
        if (k < j) qsort(refs + i, j - i, sizeof *refs, ext_ref_range_cmp);
    }
    free(gid);
    free(start);
    free(group_of);
    free(slots);
    free(slot_group);
    *nrefs = n;
    return refs;
fail:
    free(refs);
    free(out);
    free(gid);
    free(start);
    free(group_of);
    free(slots);
    free(slot_group);
    return NULL;
}

/* ------------------------------------------------------------------------------------------------
 * Planning: resources and their pieces, which nodes become tasks, their dependencies, their handles
 * and access modes.
 *
 * Resources. A resource is one StarPU vector the graph touches: a caller's handle (an in-place output
 * shares its input's) or a temporary.
 *
 * Pieces. StarPU moves, allocates and locks whole handles: a task reading elements [lo, hi) of a
 * vector valid only on another memory node fetches the whole vector, and two tasks writing different
 * ranges of one vector are serialised. So every resource is cut at the boundaries of each range that
 * crosses memory nodes (read by a task on another node) and of each range written:
 *
 *      vector        |---------------------------------------------------|
 *      written               [=======)       [========)
 *      read remotely                   [====)                [======)
 *      pieces        |-------|-------|-|----|-|--------|-----|------|----|
 *
 * Every transfer then moves exactly the bytes of a graph edge (the cost model's assumption, and what
 * the statistics report), and writes of disjoint ranges stay independent. Local reads do not cut: a
 * task reading a range that spans several pieces is given all of them.
 *
 * Temporaries are registered piece by piece. A caller's handle with more than one piece is
 * partitioned with StarPU's asynchronous partitioning (starpu_data_partition_plan() with
 * starpu_vector_filter_list_long) around the graph: partitioned before the graph's first task on it,
 * unpartitioned on its home node after the last one, so the caller's tasks before and after see the
 * whole vector, in order, through sequential consistency. A caller's handle StarPU cannot partition
 * (sequential consistency off, or partitioned by the caller) stays whole: correct, but a transfer of
 * any range of it then moves all of it.
 */

typedef struct resource {
    starpu_data_handle_t handle;    /* the caller's vector; NULL for a temporary */
    size_t temp_buf;                /* the temporary's buffer, SF_NONE for a caller handle */
    size_t count, elemsize;
    size_t *cuts;                   /* while planning: candidate cuts; then [npieces + 1], 0 .. count */
    size_t ncuts, cap_cuts;
    size_t npieces, unit0;          /* its pieces are units[unit0 .. unit0 + npieces) */
    int views;                      /* a caller's vector holding more (or other) than one graph buffer */
    int host;                       /* a temporary in main memory (its device is a CPU device) */
    int planned;                    /* a caller's handle partition-planned, until plan_unpartition() */
    starpu_data_handle_t *children; /* [npieces] once a caller handle is partition-planned */
    long *lengths;                  /* [npieces] the filter's argument, kept until the plan is cleaned */
} resource_t;

typedef struct unit {
    starpu_data_handle_t handle;    /* the piece's StarPU handle */
    size_t res, lo, hi;             /* elements [lo, hi) of resource res */
    size_t first_writer;            /* first task-node writing it, SF_NONE if none */
    unsigned char input_read;       /* some task-node reads a range of an INPUT buffer in it */
} unit_t;

typedef struct plan {
    const struct starfold_graph *g;
    starfold_context_t ctx;
    resource_t *res;                /* [nres] */
    size_t nres;
    size_t *buf_res;                /* [nbufs] resource of each buffer, SF_NONE if unused */
    size_t *buf_base;               /* [nbufs] element of its resource where the buffer starts */
    unit_t *units;                  /* [nunits] */
    size_t nunits;
    unsigned char *skip;            /* [nnodes] node with no element to move */
    size_t **deps;                  /* [nnodes] effective predecessors (task-nodes only), no duplicates */
    size_t *ndeps, *cap_deps;
    size_t *stamp;                  /* [max(nnodes, nunits) + 1] scratch marks */
    size_t *unit_mark, *unit_pos;   /* [nunits] scratch of make_task (task_buf_index) */
} plan_t;

/* Frees what only planning needs (per-node state and scratch), and forgets the graph. */
static void plan_drop_scratch(plan_t *p)
{
    if (p->deps)
        for (size_t i = 0; i < p->g->nnodes; i++) free(p->deps[i]);
    free(p->deps);
    free(p->ndeps);
    free(p->cap_deps);
    free(p->skip);
    free(p->stamp);
    free(p->unit_mark);
    free(p->unit_pos);
    free(p->buf_res);
    free(p->buf_base);
    p->deps = NULL;
    p->ndeps = p->cap_deps = p->stamp = p->unit_mark = p->unit_pos = p->buf_res = p->buf_base = NULL;
    p->skip = NULL;
    p->g = NULL;
}

static void plan_free(plan_t *p)
{
    if (p->g) plan_drop_scratch(p);
    if (p->res)
        for (size_t r = 0; r < p->nres; r++) {
            free(p->res[r].cuts);
            free(p->res[r].children);
            free(p->res[r].lengths);
        }
    free(p->res);
    free(p->units);
}

/* First element of span @s in its resource (a view starts inside its caller's vector). */
static inline size_t span_lo(const plan_t *p, const starfold__span_t *s)
{
    return p->buf_base[s->buf] + s->offset;
}

/* Adds @d to node @i's effective deps unless marked already (stamp[d] == i + 1). */
static int plan_add_dep(plan_t *p, size_t i, size_t d)
{
    if (p->stamp[d] == i + 1) return 0;
    p->stamp[d] = i + 1;
    if (SF_GROW(p->deps[i], p->ndeps[i], p->cap_deps[i])) return -1;
    p->deps[i][p->ndeps[i]++] = d;
    return 0;
}

static size_t node_total(const starfold__node_t *n)
{
    size_t t = 0;
    for (size_t k = 0; k < n->nsrc; k++) t += n->src[k].count;
    for (size_t k = 0; k < n->ndst; k++) t += n->dst[k].count;
    return t;
}

static int add_cut(resource_t *r, size_t at)
{
    if (at == 0 || at >= r->count) return 0;
    if (SF_GROW(r->cuts, r->ncuts, r->cap_cuts)) return -1;
    r->cuts[r->ncuts++] = at;
    return 0;
}

static int size_cmp(const void *pa, const void *pb)
{
    const size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return a < b ? -1 : a > b;
}

/* A range one task writes or reads across memory nodes, while the cuts are collected. */
typedef struct cut_range {
    size_t res, lo, hi;
    int write;
} cut_range_t;

static int cut_range_cmp(const void *pa, const void *pb)
{
    const cut_range_t *a = pa, *b = pb;
    if (a->res != b->res) return a->res < b->res ? -1 : 1;
    if (a->write != b->write) return a->write - b->write;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Index of the piece of resource @r holding element @at (< count): the last cut <= at. */
static size_t piece_of(const resource_t *r, size_t at)
{
    size_t lo = 0, hi = r->npieces; /* cuts[lo] <= at < cuts[hi] */
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (r->cuts[mid] <= at) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* Iterates over the pieces a span overlaps: for (piece_iter_t it = pieces_of(p, s); piece_next(&it, &u);) */
typedef struct piece_iter {
    const resource_t *r;
    size_t k, end;
} piece_iter_t;

static piece_iter_t pieces_of(const plan_t *p, const starfold__span_t *s)
{
    const resource_t *r = &p->res[p->buf_res[s->buf]];
    const size_t lo = span_lo(p, s);
    piece_iter_t it = { r, piece_of(r, lo), lo + s->count };
    return it;
}

static int piece_next(piece_iter_t *it, size_t *unit)
{
    if (it->k >= it->r->npieces || it->r->cuts[it->k] >= it->end) return 0;
    *unit = it->r->unit0 + it->k++;
    return 1;
}

/* Whether the caller's handle @h can be partitioned for the graph's duration. */
static int partitionable(starpu_data_handle_t h)
{
    return starpu_data_get_sequential_consistency_flag(h) && starpu_data_get_nb_children(h) == 0;
}

/* @refs: the caller's views, from ext_refs() (grouped by handle). */
static starfold_status_t plan_build(plan_t *p, const struct starfold_graph *g, starfold_context_t ctx,
                                    const ext_ref_t *refs, size_t nrefs)
{
    const size_t nn = g->nnodes, nb = g->nbufs;
    memset(p, 0, sizeof *p);
    p->g = g;
    p->ctx = ctx;
    size_t maxres = 0; /* distinct handles, then temporaries */
    for (size_t i = 0; i < nrefs; i++) maxres += i == 0 || refs[i].handle != refs[i - 1].handle;
    for (size_t b = 0; b < nb; b++) maxres += g->bufs[b].kind == SF_BUF_TEMP && g->bufs[b].count > 0;
    p->res = calloc(maxres + 1, sizeof *p->res);
    p->buf_res = malloc(sizeof(size_t) * (nb + 1));
    p->buf_base = calloc(nb + 1, sizeof(size_t));
    p->skip = calloc(nn + 1, 1);
    p->deps = calloc(nn + 1, sizeof *p->deps);
    p->ndeps = calloc(nn + 1, sizeof(size_t));
    p->cap_deps = calloc(nn + 1, sizeof(size_t));
    if (!p->res || !p->buf_res || !p->buf_base || !p->skip || !p->deps || !p->ndeps || !p->cap_deps)
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory planning %zu tasks", nn);

    /*
     * Resources: caller handles grouped (an in-place output shares its input's view; views share
     * their vector), then temporaries. A buffer starts at its view's offset in its resource.
     */
    for (size_t b = 0; b < nb; b++) p->buf_res[b] = SF_NONE;
    for (size_t i = 0; i < nrefs; i++) {
        if (i == 0 || refs[i].handle != refs[i - 1].handle) {
            resource_t *r = &p->res[p->nres++];
            r->handle = refs[i].handle;
            r->temp_buf = SF_NONE;
            r->count = starpu_vector_get_nx(refs[i].handle);
            r->elemsize = starpu_vector_get_elemsize(refs[i].handle);
        }
        resource_t *r = &p->res[p->nres - 1];
        if (refs[i].lo != 0 || refs[i].hi != r->count) r->views = 1;
        p->buf_res[refs[i].buf] = p->nres - 1;
        p->buf_base[refs[i].buf] = refs[i].lo;
    }
    for (size_t b = 0; b < nb; b++)
        if (g->bufs[b].kind == SF_BUF_TEMP && g->bufs[b].count > 0) {
            resource_t *r = &p->res[p->nres];
            r->temp_buf = b;
            r->count = g->bufs[b].count;
            r->elemsize = starfold_dtype_size(g->bufs[b].dtype);
            p->buf_res[b] = p->nres++;
        }

    /*
     * Which nodes are tasks, and the cuts: the ranges each task writes and the ranges it reads on
     * another node, adjacent ranges of one task merged first (a PACK writing a thousand tensors side
     * by side into its pack buffer needs no cut between them: one task, one piece).
     */
    cut_range_t *rg = NULL, *grp = NULL;
    size_t cap_rg = 0, cap_grp = 0, *touched = NULL, cap_touched = 0;
    size_t *key_at = calloc(2 * p->nres + 1, sizeof *key_at); /* per (resource, write): count, then position */
    if (!key_at) goto oom;
    for (size_t i = 0; i < nn; i++) {
        const starfold__node_t *n = &g->nodes[i];
        p->skip[i] = node_total(n) == 0;
        if (p->skip[i]) continue;
        const int here = ctx->nodes[n->device];
        size_t nrg = 0;
        for (size_t k = 0; k < n->nsrc + n->ndst; k++) {
            const int write = k >= n->nsrc;
            const starfold__span_t *s = write ? &n->dst[k - n->nsrc] : &n->src[k];
            if (s->count == 0) continue;
            const size_t r = p->buf_res[s->buf];
            if (r == SF_NONE) {
                free(rg);
                free(grp);
                free(touched);
                free(key_at);
                return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "starfold_submit: task %zu %s an empty buffer", i,
                                write ? "writes" : "reads");
            }
            if (!write && ctx->nodes[g->bufs[s->buf].device] == here) continue;
            if (SF_GROW(rg, nrg, cap_rg)) goto oom_rg;
            rg[nrg++] = (cut_range_t){ r, span_lo(p, s), span_lo(p, s) + s->count, write };
        }
        /*
         * Group the ranges by (resource, write) with one counting pass (groups in order of first
         * appearance), each group sorted by its start: usually it comes sorted already (a segmented
         * REDUCE writes its tensors' views one after another), and a general sort of a thousand
         * ranges per task cost more than the rest of the planning.
         */
        if (nrg > cap_grp) {
            cut_range_t *bigger = realloc(grp, sizeof *grp * nrg);
            size_t *more = realloc(touched, sizeof *touched * nrg);
            if (bigger) grp = bigger;
            if (more) touched = more;
            if (!bigger || !more) goto oom_rg;
            cap_grp = cap_touched = nrg;
        }
        size_t ntouched = 0;
        for (size_t k = 0; k < nrg; k++) {
            const size_t key = 2 * rg[k].res + (size_t)rg[k].write;
            if (key_at[key]++ == 0) touched[ntouched++] = key;
        }
        for (size_t j = 0, at = 0; j < ntouched; j++) {
            const size_t c = key_at[touched[j]];
            key_at[touched[j]] = at;
            at += c;
        }
        for (size_t k = 0; k < nrg; k++) grp[key_at[2 * rg[k].res + (size_t)rg[k].write]++] = rg[k];
        for (size_t j = 0, at = 0; j < ntouched; j++) { /* key_at[key] is now its group's end */
            const size_t end = key_at[touched[j]];
            key_at[touched[j]] = 0;
            size_t k = at + 1;
            while (k < end && grp[k - 1].lo <= grp[k].lo) k++;
            if (k < end) qsort(grp + at, end - at, sizeof *grp, cut_range_cmp);
            at = end;
        }
        for (size_t k = 0; k < nrg;) {
            size_t hi = grp[k].hi, e = k + 1;
            while (e < nrg && grp[e].res == grp[k].res && grp[e].write == grp[k].write && grp[e].lo <= hi) {
                if (grp[e].hi > hi) hi = grp[e].hi;
                e++;
            }
            if (add_cut(&p->res[grp[k].res], grp[k].lo) || add_cut(&p->res[grp[k].res], hi)) goto oom_rg;
            k = e;
        }
    }
    free(rg);
    free(grp);
    free(touched);
    free(key_at);

    /* Pieces: the sorted distinct cuts (none for a caller handle StarPU cannot partition). */
    for (size_t r = 0; r < p->nres; r++) {
        resource_t *x = &p->res[r];
        if (x->handle && x->ncuts && !partitionable(x->handle)) x->ncuts = 0;
        if (x->ncuts > 1) qsort(x->cuts, x->ncuts, sizeof(size_t), size_cmp);
        size_t m = 0;
        for (size_t k = 0; k < x->ncuts; k++)
            if (m == 0 || x->cuts[m - 1] != x->cuts[k]) x->cuts[m++] = x->cuts[k];
        size_t *cuts = malloc(sizeof(size_t) * (m + 2));
        if (!cuts) goto oom;
        cuts[0] = 0;
        if (m) memcpy(cuts + 1, x->cuts, m * sizeof(size_t));
        cuts[m + 1] = x->count;
        free(x->cuts);
        x->cuts = cuts;
        x->npieces = m + 1;
        x->unit0 = p->nunits;
        p->nunits += x->npieces;
    }
    p->units = calloc(p->nunits + 1, sizeof *p->units);
    p->stamp = calloc((nn > p->nunits ? nn : p->nunits) + 1, sizeof(size_t));
    p->unit_mark = calloc(p->nunits + 1, sizeof(size_t));
    p->unit_pos = malloc((p->nunits + 1) * sizeof(size_t));
    if (!p->units || !p->stamp || !p->unit_mark || !p->unit_pos) goto oom;
    for (size_t r = 0; r < p->nres; r++) {
        const resource_t *x = &p->res[r];
        for (size_t k = 0; k < x->npieces; k++) {
            unit_t *u = &p->units[x->unit0 + k];
            u->res = r;
            u->lo = x->cuts[k];
            u->hi = x->cuts[k + 1];
            u->first_writer = SF_NONE;
            u->handle = x->npieces == 1 ? x->handle : NULL; /* children and temporaries: at registration */
        }
    }

    /*
     * One pass in node order (deps only name earlier nodes): dependencies (through skipped nodes), the
     * first writer of each piece, which pieces hold an input range that is read, and the extra
     * dependency on a temporary piece's first writer. The stamps that keep a node's dependency list
     * free of duplicates are only valid while that node is being planned.
     */
    for (size_t i = 0; i < nn; i++) {
        const starfold__node_t *n = &g->nodes[i];
        for (size_t k = 0; k < n->ndeps; k++) {
            const size_t d = n->deps[k];
            if (d >= i) return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "starfold_submit: task %zu depends on task %zu", i, d);
            if (!p->skip[d]) {
                if (plan_add_dep(p, i, d)) goto oom;
            } else {
                for (size_t e = 0; e < p->ndeps[d]; e++)
                    if (plan_add_dep(p, i, p->deps[d][e])) goto oom;
            }
        }
        if (p->skip[i]) continue;
        for (size_t k = 0; k < n->nsrc; k++) {
            const starfold__span_t *s = &n->src[k];
            if (s->count == 0) continue;
            const int temp = p->res[p->buf_res[s->buf]].temp_buf != SF_NONE;
            const int input = g->bufs[s->buf].kind == SF_BUF_INPUT;
            size_t u;
            for (piece_iter_t it = pieces_of(p, s); piece_next(&it, &u);) {
                if (temp) {
                    if (p->units[u].first_writer == SF_NONE)
                        return starfold__error(STARFOLD_ERR_GRAPH_INVALID,
                                        "starfold_submit: task %zu reads temporary buffer %zu before any task writes it",
                                        i, s->buf);
                    if (plan_add_dep(p, i, p->units[u].first_writer)) goto oom;
                }
                if (input) p->units[u].input_read = 1;
            }
        }
        for (size_t k = 0; k < n->ndst; k++) {
            const starfold__span_t *s = &n->dst[k];
            if (s->count == 0) continue;
            const int temp = p->res[p->buf_res[s->buf]].temp_buf != SF_NONE;
            size_t u;
            for (piece_iter_t it = pieces_of(p, s); piece_next(&it, &u);) {
                if (p->units[u].first_writer == SF_NONE) p->units[u].first_writer = i;
                else if (temp && p->units[u].first_writer != i && plan_add_dep(p, i, p->units[u].first_writer))
                    goto oom;
            }
        }
    }
    return STARFOLD_OK;
oom_rg:
    free(rg);
    free(grp);
    free(touched);
    free(key_at);
oom:
    return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory planning %zu tasks", nn);
}

/*
 * Memory a graph needs beyond the caller's data, checked before anything is submitted: on each memory
 * node, its temporaries (allocated there by their first writer) and a copy of every piece its tasks
 * read from another node. When StarPU knows a node's capacity (a GPU's memory, STARPU_LIMIT_*_MEM)
 * and the need exceeds it, the graph is refused with STARFOLD_ERR_OUT_OF_MEMORY instead of leaving
 * StarPU to run out in the middle of the graph (where StarPU 1.3 waits for memory that never frees).
 */
static starfold_status_t plan_check_memory(const plan_t *p)
{
    const struct starfold_graph *g = p->g;
    const starfold_context_t ctx = p->ctx;
    size_t nodes = 0;
    for (int d = 0; d < ctx->num_devices; d++)
        if ((size_t)ctx->nodes[d] + 1 > nodes) nodes = (size_t)ctx->nodes[d] + 1;
    uint64_t *need = calloc(nodes + 1, sizeof *need);
    size_t *seen = calloc(p->nunits + 1, sizeof *seen); /* per unit: nodes it was already counted on, as a bit set */
    if (!need || !seen) {
        free(need);
        free(seen);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory");
    }
    for (size_t u = 0; u < p->nunits; u++) {
        const unit_t *x = &p->units[u];
        const resource_t *r = &p->res[x->res];
        if (r->temp_buf == SF_NONE || x->first_writer == SF_NONE) continue;
        need[ctx->nodes[g->bufs[r->temp_buf].device]] += (uint64_t)(x->hi - x->lo) * r->elemsize;
    }
    for (size_t i = 0; i < g->nnodes; i++) {
        if (p->skip[i]) continue;
        const starfold__node_t *n = &g->nodes[i];
        const int here = ctx->nodes[n->device];
        for (size_t k = 0; k < n->nsrc; k++) {
            const starfold__span_t *sp = &n->src[k];
            if (sp->count == 0 || ctx->nodes[g->bufs[sp->buf].device] == here || here >= 64) continue;
            size_t u;
            for (piece_iter_t it = pieces_of(p, sp); piece_next(&it, &u);) {
                if (seen[u] >> here & 1) continue;
                seen[u] |= (size_t)1 << here;
                need[here] += (uint64_t)(p->units[u].hi - p->units[u].lo) * p->res[p->units[u].res].elemsize;
            }
        }
    }
    starfold_status_t st = STARFOLD_OK;
    for (size_t node = 0; node < nodes && st == STARFOLD_OK; node++) {
        const starpu_ssize_t total = starpu_memory_get_total((unsigned)node);
        if (total > 0 && need[node] > (uint64_t)total) {
            int dev = 0;
            while (dev < ctx->num_devices && (size_t)ctx->nodes[dev] != node) dev++;
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY,
                          "starfold_submit: device %d (memory node %zu) would need %.1f MiB for this graph's "
                          "temporaries and copies, StarPU gives it %.1f MiB: nothing was submitted",
                          dev, node, (double)need[node] / 1048576.0, (double)total / 1048576.0);
        }
    }
    free(need);
    free(seen);
    return st;
}

/* Bytes of a temporary piece in a main-memory block: 64-byte aligned, so kernels stream whole lines. */
static size_t temp_piece_bytes(const resource_t *x, const unit_t *u)
{
    return ((u->hi - u->lo) * x->elemsize + 63) / 64 * 64;
}

/* Whether temporary resource @x lives in main memory (its device is a CPU device). */
static int temp_in_main_memory(const plan_t *p, const resource_t *x)
{
    return p->ctx->nodes[p->g->bufs[x->temp_buf].device] == STARPU_MAIN_RAM;
}

/*
 * Partition plans, made once per persistent submission: a caller's handle of several pieces gets a
 * partition plan (starpu_data_partition_plan()), its children being the pieces. Each start partitions
 * it and unpartitions it again around its tasks; the plan is cleaned when the persistent submission is
 * destroyed (persistent_free()). On failure what was planned stays recorded for persistent_free().
 */
static starfold_status_t plan_partition(plan_t *p)
{
    for (size_t r = 0; r < p->nres; r++) {
        resource_t *x = &p->res[r];
        if (x->temp_buf != SF_NONE || x->npieces < 2) continue;
        x->children = malloc(sizeof *x->children * x->npieces);
        x->lengths = malloc(sizeof *x->lengths * x->npieces);
        if (!x->children || !x->lengths)
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory partitioning a vector");
        for (size_t k = 0; k < x->npieces; k++) x->lengths[k] = (long)(x->cuts[k + 1] - x->cuts[k]);
        struct starpu_data_filter f = {
            .filter_func = starpu_vector_filter_list_long,
            .nchildren = (unsigned)x->npieces,
            .filter_arg_ptr = x->lengths,
        };
        starpu_data_partition_plan(x->handle, &f, x->children);
        x->planned = 1;
        for (size_t k = 0; k < x->npieces; k++) p->units[x->unit0 + k].handle = x->children[k];
    }
    return STARFOLD_OK;
}

/* Drops the partition plans (their children are unregistered once the tasks using them are done). */
static void plan_unpartition(plan_t *p)
{
    for (size_t r = 0; r < p->nres; r++) {
        resource_t *x = &p->res[r];
        if (!x->planned) continue;
        starpu_data_partition_clean(x->handle, (unsigned)x->npieces, x->children);
        x->planned = 0;
    }
}

/* ------------------------------------------------------------------------------------------------
 * Tasks
 */

/* One distinct handle of a task: its piece, and whether the node reads and writes it. */
typedef struct task_buf {
    size_t unit;
    int read, written;
    size_t covered;   /* elements of the piece the node writes (its dst ranges never overlap) */
} task_buf_t;

/* A task of a persistent submission, all but its request (make_template()). */
typedef struct task_tmpl {
    size_t node;                         /* the graph node it runs, for messages */
    starfold_task_kind_t kind;
    int device;
    unsigned worker;                     /* the StarPU worker of its device */
    size_t nbuf;                         /* distinct handles */
    size_t *units;                       /* [nbuf] the piece behind each */
    enum starpu_data_access_mode *modes; /* [nbuf] */
    starfold__kernel_args_t *args;              /* kernel arguments, the request's flags NULL; args_size bytes */
    size_t args_size;
    size_t *deps, ndeps;                 /* earlier tasks (indices among the persistent's tasks) */
} task_tmpl_t;

/*
 * Index of @unit in node @i's buffer list, appended when new. unit_mark[u] == i + 1 says unit u is in
 * the list being built, at unit_pos[u] (a PACK of a thousand tensors stays linear).
 */
static unsigned task_buf_index(plan_t *p, size_t i, task_buf_t *tb, size_t *nbuf, size_t unit)
{
    if (p->unit_mark[unit] == i + 1) return (unsigned)p->unit_pos[unit];
    p->unit_mark[unit] = i + 1;
    p->unit_pos[unit] = *nbuf;
    tb[(*nbuf)++] = (task_buf_t){ .unit = unit };
    return (unsigned)(*nbuf - 1);
}

/* Number of pieces span @s touches. */
static size_t span_pieces(const plan_t *p, const starfold__span_t *s)
{
    size_t c = 0, u;
    for (piece_iter_t it = pieces_of(p, s); piece_next(&it, &u);) c++;
    return c;
}

/*
 * Kernel segments of graph segment @q of an element-wise node (REDUCE, SCALE; a segmented REDUCE has
 * several graph segments, every other node one): its spans (sources ps * q.., destinations pd * q..)
 * have one count c; the kernel segments cut [0, c) wherever any of them crosses from one piece to the
 * next, so within a kernel segment each span lies in one piece. Writes the ascending boundaries (0
 * and c included) into @cut, returns their number.
 */
static size_t node_segments(const plan_t *p, const starfold__node_t *n, size_t q, size_t *cut)
{
    const size_t ps = n->nsrc / n->nseg, pd = n->ndst / n->nseg;
    const size_t c = n->dst[q * pd].count;
    size_t m = 0;
    cut[m++] = 0;
    for (size_t k = 0; k < ps + pd; k++) {
        const starfold__span_t *s = k < ps ? &n->src[q * ps + k] : &n->dst[q * pd + k - ps];
        const size_t lo = span_lo(p, s);
        size_t u;
        for (piece_iter_t it = pieces_of(p, s); piece_next(&it, &u);)
            if (p->units[u].lo > lo) cut[m++] = p->units[u].lo - lo;
    }
    cut[m++] = c;
    if (m == 2) return 2; /* every span within one piece: the usual case, nothing to sort */
    for (size_t k = 1; k < m; k++) { /* insertion sort: a handful of boundaries */
        const size_t x = cut[k];
        size_t j = k;
        for (; j > 0 && cut[j - 1] > x; j--) cut[j] = cut[j - 1];
        cut[j] = x;
    }
    size_t d = 0;
    for (size_t k = 0; k < m; k++)
        if (d == 0 || cut[d - 1] != cut[k]) cut[d++] = cut[k];
    return d;
}

/*
 * Everything of node @i's task a start does not change, computed once: its distinct pieces with their
 * access modes, its kernel arguments (but the request's flags), its worker. @tt zeroed by the caller;
 * on failure what it holds is freed by tmpl_free().
 */
static starfold_status_t make_template(plan_t *p, size_t i, task_tmpl_t *tt)
{
    const struct starfold_graph *g = p->g;
    const starfold__node_t *n = &g->nodes[i];
    const starfold_context_t ctx = p->ctx;
    const int elementwise = n->kind == STARFOLD_TASK_REDUCE || n->kind == STARFOLD_TASK_SCALE;

    /*
     * How many kernel spans: per piece for a copy; per kernel segment and span for an element-wise
     * node, whose graph segments (empty ones dropped) are cut into kernel segments at pieces:
     * cut[cut_at[q] .. cut_at[q + 1]) holds graph segment q's boundaries.
     */
    size_t npieces = 0, nseg = 1, *cut = NULL, *cut_at = NULL;
    const size_t gseg = elementwise ? n->nseg : 1;
    const size_t ps = n->nsrc / gseg, pd = n->ndst / gseg;
    for (size_t k = 0; k < n->nsrc; k++)
        if (n->src[k].count) npieces += span_pieces(p, &n->src[k]);
    for (size_t k = 0; k < n->ndst; k++)
        if (n->dst[k].count) npieces += span_pieces(p, &n->dst[k]);
    if (elementwise) {
        cut = malloc(sizeof(size_t) * (npieces + 2 * gseg + 1));
        cut_at = malloc(sizeof(size_t) * (gseg + 1));
        if (!cut || !cut_at) {
            free(cut);
            free(cut_at);
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory creating task %zu", i);
        }
        nseg = 0;
        size_t at = 0;
        for (size_t q = 0; q < gseg; q++) {
            cut_at[q] = at;
            if (n->dst[q * pd].count == 0) continue; /* an empty tensor of a batch: no kernel segment */
            const size_t m = node_segments(p, n, q, cut + at);
            nseg += m - 1;
            at += m;
        }
        cut_at[gseg] = at;
    }
    const size_t nkspans = elementwise ? nseg * (ps + pd) : npieces;

    starfold__kernel_args_t *a = malloc(sizeof *a + sizeof(starfold__kspan_t) * (nkspans + 1));
    task_buf_t *tb = malloc(sizeof *tb * (npieces + 1));
    if (!a || !tb) {
        free(a);
        free(tb);
        free(cut);
        free(cut_at);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory creating task %zu", i);
    }
    memset(a, 0, sizeof *a);
    a->spans = (starfold__kspan_t *)(void *)(a + 1);
    a->kind = n->kind == STARFOLD_TASK_REDUCE ? SF_KERNEL_REDUCE
              : n->kind == STARFOLD_TASK_SCALE ? SF_KERNEL_SCALE
                                               : SF_KERNEL_COPY;
    a->dtype = (int)n->dtype;
    a->dst_dtype = (int)g->bufs[n->dst[0].buf].dtype; /* differs only for a converting SCALE */
    a->op = (int)n->op;
    a->divisor = n->divisor ? n->divisor : 1;
    a->elemsize = starfold_dtype_size(n->dtype);
    a->dst_elemsize = starfold_dtype_size((starfold_dtype_t)a->dst_dtype);
    a->node = i;
    a->fail = ctx->test_fail_task >= 0 && (size_t)ctx->test_fail_task == i;
    a->nseg = nseg;

    /* Distinct pieces in order of first appearance; kernel spans point at them. */
    size_t nbuf = 0, ks = 0;
    if (elementwise) {
        /*
         * Kernel segment after kernel segment; one that continues the previous one in every span (the
         * same piece, the next element: tensors that are consecutive views of one vector per replica)
         * is merged into it, so a batch of views reduces like one tensor, and the kernel streams it.
         */
        const size_t w = ps + pd;
        size_t kseg = 0;
        a->nsrc = ps;
        a->ndst = pd;
        for (size_t q = 0; q < gseg; q++)
            for (size_t sg = cut_at[q]; sg + 1 < cut_at[q + 1]; sg++) {
                const size_t len = cut[sg + 1] - cut[sg];
                starfold__kspan_t *seg = a->spans + ks, *prev = kseg ? seg - w : NULL;
                int follows = prev != NULL;
                for (size_t k = 0; k < w; k++) {
                    const int is_src = k < ps;
                    const starfold__span_t *s = is_src ? &n->src[q * ps + k] : &n->dst[q * pd + k - ps];
                    const resource_t *r = &p->res[p->buf_res[s->buf]];
                    const size_t at = span_lo(p, s) + cut[sg];
                    const size_t u = r->unit0 + piece_of(r, at);
                    const unsigned j = task_buf_index(p, i, tb, &nbuf, u);
                    if (is_src) tb[j].read = 1;
                    else tb[j].written = 1, tb[j].covered += len;
                    seg[k] = (starfold__kspan_t){ j, at - p->units[u].lo, len };
                    follows = follows && prev[k].buf == j && prev[k].offset + prev[k].count == seg[k].offset;
                }
                if (follows) {
                    for (size_t k = 0; k < w; k++) prev[k].count += len;
                } else {
                    ks += w;
                    kseg++;
                }
            }
        a->nseg = kseg;
    } else {
        for (size_t k = 0; k < n->nsrc + n->ndst; k++) {
            const int is_src = k < n->nsrc;
            const starfold__span_t *s = is_src ? &n->src[k] : &n->dst[k - n->nsrc];
            if (s->count == 0) continue;
            const size_t start = span_lo(p, s), end = start + s->count;
            size_t u;
            for (piece_iter_t it = pieces_of(p, s); piece_next(&it, &u);) {
                const size_t lo = p->units[u].lo > start ? p->units[u].lo : start;
                const size_t hi = p->units[u].hi < end ? p->units[u].hi : end;
                const unsigned j = task_buf_index(p, i, tb, &nbuf, u);
                if (is_src) tb[j].read = 1, a->nsrc++;
                else tb[j].written = 1, tb[j].covered += hi - lo, a->ndst++;
                a->spans[ks++] = (starfold__kspan_t){ j, lo - p->units[u].lo, hi - lo };
            }
        }
    }
    free(cut);
    free(cut_at);

    tt->node = i;
    tt->kind = n->kind;
    tt->device = n->device;
    tt->worker = (unsigned)ctx->workers[n->device];
    tt->args_size = sizeof *a + sizeof(starfold__kspan_t) * ks; /* merged segments may leave spans unused */
    tt->args = realloc(a, tt->args_size);
    if (!tt->args) tt->args = a;
    tt->args->spans = (starfold__kspan_t *)(void *)(tt->args + 1);
    tt->nbuf = nbuf;
    tt->units = malloc(sizeof *tt->units * (nbuf + 1));
    tt->modes = malloc(sizeof *tt->modes * (nbuf + 1));
    if (!tt->units || !tt->modes) {
        free(tb);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory creating task %zu", i);
    }
    /*
     * Access modes: read only -> R; read and written -> RW; only written -> W when the node writes
     * the whole piece (its destination ranges never overlap, so the written count tells), or when it
     * is the piece's first writer and no input range in the piece is read (the rest of the piece then
     * holds nothing anyone reads before the graph writes it; StarPU also refuses to read a never
     * written temporary, so a temporary's first write must be W); RW otherwise.
     */
    for (size_t j = 0; j < nbuf; j++) {
        const unit_t *u = &p->units[tb[j].unit];
        enum starpu_data_access_mode mode = STARPU_R;
        if (tb[j].written) {
            const int whole = tb[j].covered >= u->hi - u->lo;
            /* (in a vector holding views, the rest of the piece may be the caller's other data) */
            const int first = u->first_writer == i && !u->input_read && !p->res[u->res].views;
            mode = tb[j].read ? STARPU_RW : (whole || first) ? STARPU_W : STARPU_RW;
        }
        tt->units[j] = tb[j].unit;
        tt->modes[j] = mode;
    }
    free(tb);
    return STARFOLD_OK;
}

/*
 * Creates the (not yet submitted) task of template @tt for request @req, the pieces' handles in @uh:
 * a copy of the template's kernel arguments (owned by the request, req->args[req->nargs++]) pointing
 * at the request's flags.
 */
static starfold_status_t make_task(const task_tmpl_t *tt, const starpu_data_handle_t *uh,
                                   struct starfold_request *req, struct starpu_task **task_out)
{
    const size_t nbuf = tt->nbuf;
    starfold__kernel_args_t *a = malloc(tt->args_size);
    if (!a) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory creating task %zu", tt->node);
    memcpy(a, tt->args, tt->args_size);
    a->spans = (starfold__kspan_t *)(void *)(a + 1);
    a->cancelled = &req->cancelled;
    a->status = &req->status;
    req->args[req->nargs++] = a;

    struct starpu_task *t = starpu_task_create();
    if (!t) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory creating task %zu", tt->node);
    t->destroy = 0; /* until submitted: a task that never gets submitted is destroyed by us */
    if (nbuf > STARPU_NMAXBUFS) {
        t->dyn_handles = malloc(sizeof(starpu_data_handle_t) * nbuf);
        t->dyn_modes = malloc(sizeof(enum starpu_data_access_mode) * nbuf);
        if (!t->dyn_handles || !t->dyn_modes) {
            starpu_task_destroy(t); /* frees dyn_handles and dyn_modes */
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory creating task %zu", tt->node);
        }
        for (size_t j = 0; j < nbuf; j++) t->dyn_handles[j] = uh[tt->units[j]];
        memcpy(t->dyn_modes, tt->modes, sizeof *tt->modes * nbuf);
    } else {
        for (size_t j = 0; j < nbuf; j++) {
            t->handles[j] = uh[tt->units[j]];
            t->modes[j] = tt->modes[j];
        }
    }
    t->nbuffers = (int)nbuf;
    t->cl = &starfold__codelet;
    t->cl_arg = a;
    t->cl_arg_size = tt->args_size;
    t->cl_arg_free = 0;
    t->callback_func = task_done;
    t->callback_arg = req;
    t->execute_on_a_specific_worker = 1;
    t->workerid = tt->worker;
    t->name = starfold_task_kind_name(tt->kind);
    *task_out = t;
    return STARFOLD_OK;
}

/*
 * Cancellation, for the @nqueued tasks already accepted: their kernels will do nothing, but a STARPU_W
 * access still makes the task's replica the valid one without fetching the current value first - on
 * a device with its own memory, stale content. Those tasks cannot have started (they all wait for the
 * gate, not yet submitted) and StarPU reads a task's access modes only once its task dependencies are
 * satisfied, so W becomes RW here for the caller's handles: the current value is fetched and kept.
 * Implicit dependencies, computed at submission, are the same for W and RW. Handles with home node -1
 * (the temporaries, or a caller's handle that may never have been written, which RW could not fetch)
 * keep W.
 */
static void keep_caller_data(struct starpu_task **tasks, size_t nqueued)
{
    for (size_t k = 0; k < nqueued; k++) {
        struct starpu_task *t = tasks[k];
        for (int j = 0; j < t->nbuffers; j++) {
            enum starpu_data_access_mode *mode = t->dyn_modes ? &t->dyn_modes[j] : &t->modes[j];
            starpu_data_handle_t h = t->dyn_handles ? t->dyn_handles[j] : t->handles[j];
            if (*mode == STARPU_W && starpu_data_get_home_node(h) >= 0) *mode = STARPU_RW;
        }
    }
}

/* ------------------------------------------------------------------------------------------------
 * Submission
 */

/*
 * The caller's views, checked: each within its vector and of its tensor's element size (@exact: the
 * vector is the tensor, as starfold_submit() wants); and no output overlapping another view but its
 * in-place input. Views come grouped by handle and sorted by range (ext_refs()), so each group of
 * identical ranges may hold inputs only, or one output with at most its own device's input of the
 * same tensor; a group with an output must then overlap no other group: swept in order, with the
 * farthest end reached by any group and by any group holding an output.
 */
static starfold_status_t check_views(const struct starfold_graph *g, const starfold_view_t *inputs,
                                     const starfold_view_t *outputs, int exact, const ext_ref_t *refs, size_t nrefs,
                                     const char *fn)
{
    const size_t T = g->num_tensors;
    starfold_status_t st = STARFOLD_OK;
    shape_cache_t sc = { NULL, 0, 0, 0 };
    for (int s = 0; s < g->num_inputs; s++)
        for (size_t t = 0; t < T; t++)
            if ((st = check_view(&inputs[(size_t)s * T + t], &g->bufs[starfold__graph_input(g, s, t)], "input", s, t,
                                 exact, &sc, fn)) != STARFOLD_OK)
                return st;
    /* Outputs have the graph's output dtype (float64 for a promoted integer MEAN). */
    for (int d = 0; d < g->num_outputs; d++)
        for (size_t t = 0; t < T; t++)
            if ((st = check_view(&outputs[(size_t)d * T + t], &g->bufs[starfold__graph_output(g, d, t)], "output", d, t,
                                 exact, &sc, fn)) != STARFOLD_OK)
                return st;
    size_t reach = 0, reach_out = 0;
    for (size_t i = 0; i < nrefs && st == STARFOLD_OK; i++) {
        if (i == 0 || refs[i].handle != refs[i - 1].handle) reach = reach_out = 0;
        size_t j = i;
        while (j + 1 < nrefs && refs[j + 1].handle == refs[i].handle && refs[j + 1].lo == refs[i].lo &&
               refs[j + 1].hi == refs[i].hi)
            j++;
        /* Group refs[i..j]: one range of one vector. */
        size_t nouts = 0, out_buf = SF_NONE;
        for (size_t k = i; k <= j; k++)
            if (g->bufs[refs[k].buf].kind == SF_BUF_OUTPUT) nouts++, out_buf = refs[k].buf;
        const int empty = refs[i].lo == refs[i].hi;
        if (nouts > 1 && !empty) {
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: one %s given for several outputs", fn,
                          exact ? "handle" : "range of a vector");
        } else if (nouts == 1 && !empty) {
            const starfold__buffer_t *o = &g->bufs[out_buf];
            for (size_t k = i; k <= j && st == STARFOLD_OK; k++) {
                const starfold__buffer_t *b = &g->bufs[refs[k].buf];
                if (b->kind == SF_BUF_INPUT && (b->tensor != o->tensor || b->device != o->device))
                    st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                  "%s: output slot %d tensor %zu is the %s of input slot %d tensor %zu; an output may "
                                  "only be its own device's input of the same tensor",
                                  fn, o->slot, o->tensor, exact ? "handle" : "range", b->slot, b->tensor);
                else if (b->kind == SF_BUF_INPUT && b->dtype != o->dtype)
                    st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                  "%s: output slot %d tensor %zu is %s, its input %s: it cannot be computed in place",
                                  fn, o->slot, o->tensor, starfold_dtype_name(o->dtype), starfold_dtype_name(b->dtype));
            }
            if (st == STARFOLD_OK && refs[i].lo < reach)
                st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                              "%s: output slot %d tensor %zu (elements [%zu, %zu) of its vector) overlaps another view",
                              fn, o->slot, o->tensor, refs[i].lo, refs[i].hi);
        }
        if (st == STARFOLD_OK && !empty && refs[i].lo < reach_out) {
            const starfold__buffer_t *b = &g->bufs[refs[i].buf];
            st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                          "%s: %s slot %d tensor %zu (elements [%zu, %zu) of its vector) overlaps an output", fn,
                          b->kind == SF_BUF_OUTPUT ? "output" : "input", b->slot, b->tensor, refs[i].lo, refs[i].hi);
        }
        if (refs[i].hi > reach) reach = refs[i].hi;
        if (nouts && refs[i].hi > reach_out) reach_out = refs[i].hi;
        i = j;
    }
    return st;
}

/*
 * A persistent submission: a graph bound to its caller's views once (checked, planned, its tasks'
 * pieces, access modes and kernel arguments computed, its vectors partition-planned), started as
 * often as wanted. A start only creates the tasks from their templates, registers the temporaries
 * (from the context's pool) and submits. starfold_submit() is a persistent submission started once.
 *
 * Ownership: the persistent submission owns the plan's resources and pieces, the partition plans on
 * the caller's vectors (cleaned by persistent_free()) and, when created by starfold_persistent_create*(),
 * its temporaries, registered once with sequential consistency on: two starts in flight at once are
 * ordered by StarPU on the caller's vectors and on the temporaries alike, and destroying it waits for
 * the tasks still using them. Each start's request owns its kernel arguments (and, for a submission
 * started once, its own temporaries, sequential consistency off).
 */
struct starfold_persistent {
    starfold_context_t context;
    plan_t plan;                  /* its res[] and units[] (lo, hi, first_writer, the callers' handles) */
    task_tmpl_t *tasks;           /* [ntasks] in graph order, so deps name earlier tasks */
    size_t ntasks;
    size_t ntemps;                /* temporary pieces some task touches */
    size_t host_bytes;            /* of them, the bytes in main memory (one pool block) */
    size_t npartitioned;          /* caller's vectors partitioned by each start */
    /*
     * Kept temporaries (starfold_persistent_create*() only; a submission started once registers them
     * per request): registered once with sequential consistency on, so StarPU orders each start's
     * accesses after the previous start's, as it does for the caller's vectors. uh[] is then every
     * piece's handle, the same for every start.
     */
    starpu_data_handle_t *uh;     /* [nunits], or NULL: temporaries registered by each start */
    starpu_data_handle_t *temps;  /* [ntemps] kept */
    size_t nkept;
    void *temp_block;             /* their main-memory block from the context's pool */
    size_t temp_block_bytes;
};

static void tmpl_free(task_tmpl_t *tt)
{
    free(tt->units);
    free(tt->modes);
    free(tt->args);
    free(tt->deps);
}

static void persistent_free(struct starfold_persistent *P)
{
    /* Kept temporaries: each unregistration waits for the starts' tasks on it (sequential consistency). */
    for (size_t i = 0; i < P->nkept; i++) starpu_data_unregister_no_coherency(P->temps[i]);
    if (P->temp_block) starfold__pool_put(P->context->pool, P->temp_block, P->temp_block_bytes);
    free(P->temps);
    free(P->uh);
    if (P->plan.res) {
        pthread_mutex_lock(&starfold__submit_lock); /* no start's window may be between its partition and unpartition */
        plan_unpartition(&P->plan);
        pthread_mutex_unlock(&starfold__submit_lock);
    }
    for (size_t k = 0; k < P->ntasks; k++) tmpl_free(&P->tasks[k]);
    free(P->tasks);
    plan_free(&P->plan);
    free(P);
}

/*
 * Checks @graph against @context and the caller's views (@exact as check_views()) and plans it, all
 * before anything is created in StarPU; then the partition plans. @fn names the public call.
 */
static starfold_status_t prepare(starfold_context_t context, starfold_graph_t graph, const starfold_view_t *inputs,
                                 const starfold_view_t *outputs, int exact, const char *fn,
                                 struct starfold_persistent **out)
{
    const struct starfold_graph *g = graph;
    /*
     * Devices first: a graph for a bigger machine is NO_DEVICE whatever its handles, even when the
     * devices it happens to use exist here (it was compiled for another machine: its links and its
     * placement are not this context's).
     */
    const int topo_devices = starfold_topology_num_devices(g->topology);
    if (topo_devices > context->num_devices) {
        const char *file = starfold_topology_origin(g->topology);
        const int line = starfold_topology_device_line(g->topology, context->num_devices);
        if (file && line > 0)
            return starfold__error(STARFOLD_ERR_NO_DEVICE,
                            "%s:%d: device %d ('%s') of topology '%s' (%d devices): the context has only %d", file,
                            line, context->num_devices,
                            starfold_topology_device_name(g->topology, context->num_devices),
                            starfold_topology_name(g->topology), topo_devices, context->num_devices);
        return starfold__error(STARFOLD_ERR_NO_DEVICE,
                        "%s: the graph was compiled for topology '%s' of %d devices, the context has %d", fn,
                        starfold_topology_name(g->topology), topo_devices, context->num_devices);
    }
    for (size_t b = 0; b < g->nbufs; b++)
        if (g->bufs[b].device < 0 || g->bufs[b].device >= context->num_devices)
            return starfold__error(STARFOLD_ERR_NO_DEVICE, "%s: the graph uses device %d, the context has %d", fn,
                            g->bufs[b].device, context->num_devices);
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].device < 0 || g->nodes[i].device >= context->num_devices)
            return starfold__error(STARFOLD_ERR_NO_DEVICE, "%s: task %zu runs on device %d, the context has %d", fn, i,
                            g->nodes[i].device, context->num_devices);

    /* Views: vectors of the right shape; an output may only be its own device's input (in-place). */
    size_t nrefs = 0;
    ext_ref_t *refs = ext_refs(g, inputs, outputs, &nrefs);
    if (!refs) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    starfold_status_t st = check_views(g, inputs, outputs, exact, refs, nrefs, fn);
    for (size_t b = 0; b < g->nbufs && st == STARFOLD_OK; b++)
        if (g->bufs[b].kind == SF_BUF_TEMP && g->bufs[b].count > UINT32_MAX)
            st = starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "%s: temporary of %zu elements (StarPU vectors hold at most %u)",
                          fn, g->bufs[b].count, (unsigned)UINT32_MAX);
    if (st != STARFOLD_OK) {
        free(refs);
        return st;
    }
    struct starfold_persistent *P = calloc(1, sizeof *P);
    if (!P) {
        free(refs);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    P->context = context;
    plan_t *p = &P->plan;
    st = plan_build(p, g, context, refs, nrefs);
    free(refs);
    if (st != STARFOLD_OK) goto fail;
    SF_CHECK_GOTO(plan_check_memory(p), st, fail);

    /* Templates of the tasks, their dependencies renumbered among tasks. */
    size_t *task_of_node = malloc(sizeof(size_t) * (g->nnodes + 1));
    for (size_t i = 0; i < g->nnodes; i++) P->ntasks += !p->skip[i];
    P->tasks = calloc(P->ntasks + 1, sizeof *P->tasks);
    if (!task_of_node || !P->tasks) {
        free(task_of_node);
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu tasks", fn, P->ntasks);
        P->ntasks = 0;
        goto fail;
    }
    for (size_t i = 0, k = 0; i < g->nnodes; i++) {
        task_of_node[i] = p->skip[i] ? SF_NONE : k;
        if (p->skip[i]) continue;
        task_tmpl_t *tt = &P->tasks[k++];
        if ((st = make_template(p, i, tt)) != STARFOLD_OK) break;
        tt->deps = malloc(sizeof(size_t) * (p->ndeps[i] + 1));
        if (!tt->deps) {
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu tasks", fn, P->ntasks);
            break;
        }
        for (size_t e = 0; e < p->ndeps[i]; e++) tt->deps[tt->ndeps++] = task_of_node[p->deps[i][e]];
    }
    free(task_of_node);
    if (st != STARFOLD_OK) goto fail;

    /* What each start needs: its temporaries, and the pieces of the caller's vectors. */
    for (size_t r = 0; r < p->nres; r++) {
        resource_t *x = &p->res[r];
        if (x->temp_buf == SF_NONE) continue;
        x->host = temp_in_main_memory(p, x);
        for (size_t k = 0; k < x->npieces; k++) {
            const unit_t *u = &p->units[x->unit0 + k];
            if (u->first_writer == SF_NONE) continue; /* no task touches it */
            P->ntemps++;
            if (x->host) P->host_bytes += temp_piece_bytes(x, u);
        }
    }
    SF_CHECK_GOTO(plan_partition(p), st, fail);
    for (size_t r = 0; r < p->nres; r++) P->npartitioned += p->res[r].planned;
    plan_drop_scratch(p); /* and the graph may go now: nothing left reads it */
    *out = P;
    return STARFOLD_OK;
fail:
    persistent_free(P);
    return st;
}

/*
 * Registers the temporaries: each piece some task touches gets a vector, recorded in @temps (*@ntemps
 * of them so far, also on failure) and in @uh[nunits] (every piece's handle). Those in main memory are
 * ranges of one block taken from the context's pool into *@block (pages warm from the last use,
 * exec_pool.c); one on a device has home node -1 and is allocated there by StarPU for its first
 * writer (StarPU keeps freed device memory for reuse itself). @seq: sequential consistency - off for
 * one start's temporaries (only the graph's edges order them), on for kept ones (the starts too).
 */
static starfold_status_t register_temps(const struct starfold_persistent *P, int seq, void **block, size_t *block_bytes,
                                        starpu_data_handle_t *temps, size_t *ntemps, starpu_data_handle_t *uh,
                                        const char *fn)
{
    const plan_t *p = &P->plan;
    if (P->host_bytes) {
        *block = starfold__pool_get(P->context->pool, P->host_bytes, block_bytes);
        if (!*block)
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes of temporaries", fn,
                            P->host_bytes);
    }
    size_t host_at = 0;
    for (size_t r = 0; r < p->nres; r++) {
        const resource_t *x = &p->res[r];
        if (x->temp_buf == SF_NONE) continue;
        for (size_t k = 0; k < x->npieces; k++) {
            const unit_t *u = &p->units[x->unit0 + k];
            if (u->first_writer == SF_NONE) continue;
            starpu_data_handle_t h;
            if (x->host) {
                starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)((char *)*block + host_at),
                                            (uint32_t)(u->hi - u->lo), x->elemsize);
                host_at += temp_piece_bytes(x, u);
            } else {
                starpu_vector_data_register(&h, -1, 0, (uint32_t)(u->hi - u->lo), x->elemsize);
            }
            starpu_data_set_sequential_consistency_flag(h, (unsigned)seq);
            temps[(*ntemps)++] = h;
            uh[x->unit0 + k] = h;
        }
    }
    return STARFOLD_OK;
}

/* Keeps the temporaries of persistent submission @P registered from one start to the next. */
static starfold_status_t keep_temps(struct starfold_persistent *P, const char *fn)
{
    const plan_t *p = &P->plan;
    P->uh = malloc(sizeof *P->uh * (p->nunits + 1));
    P->temps = malloc(sizeof *P->temps * (P->ntemps + 1));
    if (!P->uh || !P->temps) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t u = 0; u < p->nunits; u++) P->uh[u] = p->units[u].handle;
    const starfold_status_t st =
        register_temps(P, 1, &P->temp_block, &P->temp_block_bytes, P->temps, &P->nkept, P->uh, fn);
    if (st != STARFOLD_OK) {
        free(P->uh); /* persistent_free() releases what was registered; starts would not use uh[] */
        P->uh = NULL;
    }
    return st;
}

/* One start of @P: a new request, its tasks created, declared and submitted (see the file's head). */
static starfold_status_t start(struct starfold_persistent *P, starfold_request_t *request, const char *fn)
{
    const starfold_context_t context = P->context;
    const plan_t *plan = &P->plan;
    const size_t ntasks = P->ntasks;
    starfold_status_t st = STARFOLD_OK;
    struct starfold_request *req = request_new();
    struct starpu_task **tasks = NULL, *gate = NULL, **deps = NULL;
    starpu_data_handle_t *uh = NULL;
    size_t ncreated = 0, maxdeps = 1;
    if (!req) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t k = 0; k < ntasks; k++)
        if (P->tasks[k].ndeps > maxdeps) maxdeps = P->tasks[k].ndeps;
    tasks = calloc(ntasks + 1, sizeof *tasks);
    deps = malloc(sizeof *deps * maxdeps);
    req->args = calloc(ntasks + 1, sizeof *req->args);
    if (!P->uh) { /* this request's own temporaries */
        uh = malloc(sizeof *uh * (plan->nunits + 1));
        req->temps = calloc(P->ntemps + 1, sizeof *req->temps);
    }
    if (!tasks || !deps || !req->args || (!P->uh && (!uh || !req->temps))) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu tasks", fn, ntasks);
        goto fail;
    }
    if (!P->uh) {
        for (size_t u = 0; u < plan->nunits; u++) uh[u] = plan->units[u].handle;
        st = register_temps(P, 0, &req->temp_block, &req->temp_block_bytes, req->temps, &req->ntemps, uh, fn);
        if (req->temp_block) req->pool = context->pool;
        if (st != STARFOLD_OK) goto fail;
    }
    const starpu_data_handle_t *handles = P->uh ? P->uh : uh;

    /* Create every task; check each can run where it is pinned, while nothing is declared yet. */
    for (size_t k = 0; k < ntasks; k++) {
        const task_tmpl_t *tt = &P->tasks[k];
        SF_CHECK_GOTO(make_task(tt, handles, req, &tasks[k]), st, fail);
        ncreated = k + 1;
        if (!starpu_worker_can_execute_task(tasks[k]->workerid, tasks[k], 0)) {
            st = starfold__error(STARFOLD_ERR_RUNTIME, "%s: worker %u of device %d cannot run a %s task", fn,
                          tasks[k]->workerid, tt->device, starfold_task_kind_name(tt->kind));
            goto fail;
        }
    }
    if (ntasks == 0) goto done; /* nothing to move: the request is complete at once */

    gate = starpu_task_create();
    if (!gate) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto fail;
    }
    gate->destroy = 0;
    gate->callback_func = task_done;
    gate->callback_arg = req;
    gate->name = "starfold-gate";

    /* From here on every task will be submitted: no more failure exits that leave tasks behind. */
    req->pending = ntasks + 1 + P->npartitioned;
    for (size_t k = 0; k < ntasks; k++) {
        const task_tmpl_t *tt = &P->tasks[k];
        size_t nd = 0;
        for (size_t e = 0; e < tt->ndeps; e++) deps[nd++] = tasks[tt->deps[e]];
        if (nd == 0) deps[nd++] = gate;
        starpu_task_declare_deps_array(tasks[k], (unsigned)nd, deps);
    }

    /*
     * The submission window. The caller's partitioned vectors are partitioned first (after the
     * caller's earlier tasks on them, through sequential consistency), then the tasks go in, then the
     * vectors are unpartitioned on their home nodes (after the graph's last task on them); the
     * unpartitions count in the request. One window at a time in the process: StarPU allows one
     * active partition per vector, and another graph touching the same vector whole in the middle of
     * this window would unpartition it under our tasks.
     */
    pthread_mutex_lock(&starfold__submit_lock);
    SF_TSAN_RELEASE(); /* the tasks' arguments, written above, go to StarPU's workers */
    for (size_t r = 0; r < plan->nres; r++)
        if (plan->res[r].planned)
            starpu_data_partition_submit(plan->res[r].handle, (unsigned)plan->res[r].npieces, plan->res[r].children);
    size_t refused_at = SF_NONE;
    int refused_ret = 0, lost = 0;
    for (size_t k = 0; k < ntasks; k++) {
        int ret;
        if (refused_at == SF_NONE) {
            const int hook = context->test_refuse_task >= 0 && (size_t)context->test_refuse_task == P->tasks[k].node;
            tasks[k]->destroy = 1;
            ret = hook ? -ENODEV : starpu_task_submit(tasks[k]);
            if (ret == 0) continue;
            refused_at = k;
            refused_ret = ret;
            __atomic_store_n(&req->cancelled, 1, __ATOMIC_RELEASE);
            keep_caller_data(tasks, k);
        }
        /* Cancelled: the rest go in as empty tasks, so every declared dependency completes. */
        tasks[k]->cl = NULL;
        tasks[k]->destroy = 1;
        ret = starpu_task_submit(tasks[k]);
        if (ret != 0) lost++;
    }
    gate->destroy = 1;
    if (starpu_task_submit(gate) != 0) lost++;
    for (size_t r = 0; r < plan->nres; r++) {
        const resource_t *x = &plan->res[r];
        if (x->planned)
            starpu_data_unpartition_submit_sequential_consistency_cb(x->handle, (unsigned)x->npieces, x->children, -1,
                                                                     1, task_done, req);
    }
    pthread_mutex_unlock(&starfold__submit_lock);

    if (refused_at != SF_NONE || lost) {
        if (refused_at != SF_NONE) {
            const task_tmpl_t *tt = &P->tasks[refused_at];
            st = starfold__error(STARFOLD_ERR_RUNTIME,
                          "%s: StarPU refused task %zu (%s on device %d, error %d); the graph was "
                          "cancelled, nothing was written",
                          fn, tt->node, starfold_task_kind_name(tt->kind), tt->device, refused_ret);
        }
        if (lost) {
            /* Unreachable in practice (an empty task is always accepted): tasks may still wait on what
             * was lost, so the request cannot be freed safely; it is leaked rather than crash. */
            st = starfold__error(STARFOLD_ERR_RUNTIME, "%s: StarPU refused %d empty tasks; request leaked", fn, lost);
        } else {
            request_wait_all(req);
            request_free(req);
        }
        req = NULL;
        goto out;
    }

done:
    *request = req;
    req = NULL;
out:
    free(tasks);
    free(deps);
    free(uh);
    return st;

fail:
    /* Nothing was submitted or declared: destroy what was created; the request gives the temporaries back. */
    for (size_t k = 0; k < ncreated; k++) starpu_task_destroy(tasks[k]);
    if (gate) starpu_task_destroy(gate);
    request_free(req);
    req = NULL;
    goto out;
}

/* The arguments of the public entry points: non-NULL where needed. */
static starfold_status_t check_args(starfold_context_t context, starfold_graph_t graph, const void *inputs,
                                    const void *outputs, const void *out, const char *fn, const char *out_name)
{
    if (!context || !graph || !out)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                        !context ? "context" : !graph ? "graph" : out_name);
    const size_t T = graph->num_tensors;
    if ((graph->num_inputs && T && !inputs) || (graph->num_outputs && T && !outputs))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s array", fn, !inputs ? "inputs" : "outputs");
    return STARFOLD_OK;
}

/* Handles as views at offset 0 (the vector must then be the tensor: prepare()'s @exact). */
static starfold_status_t prepare_handles(starfold_context_t context, starfold_graph_t graph,
                                         const starpu_data_handle_t *inputs, const starpu_data_handle_t *outputs,
                                         const char *fn, struct starfold_persistent **out)
{
    const size_t T = graph->num_tensors;
    const size_t nin = (size_t)graph->num_inputs * T, nout = (size_t)graph->num_outputs * T;
    starfold_view_t *views = malloc(sizeof *views * (nin + nout + 1));
    if (!views) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t i = 0; i < nin; i++) views[i] = (starfold_view_t){ inputs[i], 0 };
    for (size_t i = 0; i < nout; i++) views[nin + i] = (starfold_view_t){ outputs[i], 0 };
    const starfold_status_t st = prepare(context, graph, views, views + nin, 1, fn, out);
    free(views);
    return st;
}

/* Prepares, starts once, and lets go (the request needs nothing of the persistent submission). */
static starfold_status_t submit_once(struct starfold_persistent *P, starfold_status_t st, starfold_request_t *request,
                                     const char *fn)
{
    if (st != STARFOLD_OK) return st;
    st = start(P, request, fn);
    persistent_free(P);
    return st;
}

STARFOLD_API starfold_status_t starfold_submit(starfold_context_t context, starfold_graph_t graph,
                                               const starpu_data_handle_t *inputs,
                                               const starpu_data_handle_t *outputs, starfold_request_t *request)
{
    static const char fn[] = "starfold_submit";
    starfold_status_t st = check_args(context, graph, inputs, outputs, request, fn, "request");
    if (st != STARFOLD_OK) return st;
    struct starfold_persistent *P = NULL;
    st = prepare_handles(context, graph, inputs, outputs, fn, &P);
    return submit_once(P, st, request, fn);
}

STARFOLD_API starfold_status_t starfold_submit_views(starfold_context_t context, starfold_graph_t graph,
                                                     const starfold_view_t *inputs, const starfold_view_t *outputs,
                                                     starfold_request_t *request)
{
    static const char fn[] = "starfold_submit_views";
    starfold_status_t st = check_args(context, graph, inputs, outputs, request, fn, "request");
    if (st != STARFOLD_OK) return st;
    struct starfold_persistent *P = NULL;
    st = prepare(context, graph, inputs, outputs, 0, fn, &P);
    return submit_once(P, st, request, fn);
}

/* The public half of a persistent create: its temporaries kept; *@out set only on success. */
static starfold_status_t persistent_keep(struct starfold_persistent *P, starfold_persistent_t *out, const char *fn)
{
    const starfold_status_t st = keep_temps(P, fn);
    if (st != STARFOLD_OK) {
        persistent_free(P);
        return st;
    }
    *out = P;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_persistent_create(starfold_context_t context, starfold_graph_t graph,
                                                          const starpu_data_handle_t *inputs,
                                                          const starpu_data_handle_t *outputs,
                                                          starfold_persistent_t *persistent)
{
    static const char fn[] = "starfold_persistent_create";
    starfold_status_t st = check_args(context, graph, inputs, outputs, persistent, fn, "persistent");
    if (st != STARFOLD_OK) return st;
    struct starfold_persistent *P = NULL;
    if ((st = prepare_handles(context, graph, inputs, outputs, fn, &P)) != STARFOLD_OK) return st;
    return persistent_keep(P, persistent, fn);
}

STARFOLD_API starfold_status_t starfold_persistent_create_views(starfold_context_t context, starfold_graph_t graph,
                                                                const starfold_view_t *inputs,
                                                                const starfold_view_t *outputs,
                                                                starfold_persistent_t *persistent)
{
    static const char fn[] = "starfold_persistent_create_views";
    starfold_status_t st = check_args(context, graph, inputs, outputs, persistent, fn, "persistent");
    if (st != STARFOLD_OK) return st;
    struct starfold_persistent *P = NULL;
    if ((st = prepare(context, graph, inputs, outputs, 0, fn, &P)) != STARFOLD_OK) return st;
    return persistent_keep(P, persistent, fn);
}

STARFOLD_API starfold_status_t starfold_persistent_start(starfold_persistent_t persistent, starfold_request_t *request)
{
    if (!persistent || !request)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_persistent_start: NULL %s",
                        !persistent ? "persistent" : "request");
    return start(persistent, request, "starfold_persistent_start");
}

STARFOLD_API void starfold_persistent_destroy(starfold_persistent_t persistent)
{
    if (persistent) persistent_free(persistent);
}
