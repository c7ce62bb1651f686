/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold_submit() and the persistent submissions: a graph becomes StarPU tasks.
 *
 * Two halves. prepare() does everything that depends only on the graph, the context and the caller's
 * views: checks (views.c), the plan (plan.c: pieces, which nodes are tasks, dependencies), each
 * task's template (template.c: its pieces, access modes and kernel arguments) and the partition plans
 * of the caller's vectors. start() turns the templates into StarPU tasks for one request (request.c)
 * and submits them. starfold_submit() and starfold_submit_views() do both; a persistent submission
 * (starfold_persistent_create()) keeps the first half and runs the second per
 * starfold_persistent_start(): for 1,000 tensors as views on 8 replicas the first half is most of
 * the cost.
 *
 * One task per node, pinned to the worker of the node's device, its buffers the distinct handles its
 * spans name. Handles: inputs and outputs are the caller's (sequential consistency kept, so the
 * caller's own tasks before and after are ordered by StarPU's data dependencies); temporaries are new
 * vectors with home node -1 and sequential consistency off, so only the graph's edges order them.
 * A caller's vector of several pieces is partitioned with StarPU's asynchronous partitioning
 * (starpu_data_partition_plan() with starpu_vector_filter_list_long) around the graph: partitioned
 * before the graph's first task on it, unpartitioned on its home node after the last one, so the
 * caller's tasks before and after see the whole vector, in order, through sequential consistency.
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
 * StarPU facts. Planning does not call StarPU: plan_facts() reads what it needs (each caller's
 * vector's size and whether it can be partitioned, each device's memory node, each node's size)
 * before planning, and the persistent submission keeps the StarPU handles the plan only numbers.
 */
#include "config.h"

#include <errno.h>

#include "base/common.h"
#include "exec/partitions.h"
#include "exec/submit.h"

_Static_assert(STARPU_MAIN_RAM == SF_PLAN_MAIN_NODE, "plan.h's main memory node");

/* A caller's vector of several pieces, partition-planned: its children are its pieces. */
typedef struct partition {
    size_t res;                     /* its resource (= its vector's number) */
    starpu_data_handle_t *children; /* [npieces] */
    long *lengths;                  /* [npieces] the filter's argument, kept until the plan is cleaned */
    int kept;                       /* its vector is kept partitioned between starts (partitions.c) */
} partition_t;

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
 * started once, its own temporaries, sequential consistency off). The caller's handles are borrowed.
 */
struct starfold_persistent {
    starfold_context_t context;
    starfold__plan_t plan;              /* its res[] and units[] (lo, hi, first_writer) */
    starfold__task_tmpl_t *tasks;       /* [ntasks] in graph order, so deps name earlier tasks */
    size_t ntasks;
    size_t ntemps;                      /* temporary pieces some task touches */
    size_t host_bytes;                  /* of them, the bytes in main memory (one pool block) */
    starpu_data_handle_t *vectors;      /* [plan.nvectors] the caller's vectors: resource r's handle */
    /*
     * [plan.nunits] every piece's handle: a caller's vector whole, or a child of its partition; a
     * temporary's when they are kept, else NULL (each start registers its own).
     */
    starpu_data_handle_t *uh;
    partition_t *parts;                 /* [nparts] partitioned by each start, in resource order */
    size_t nparts;
    size_t nunkept;                     /* of them, those each start unpartitions again (not kept) */
    /*
     * Kept temporaries (starfold_persistent_create*() only; NULL for a submission started once, which
     * registers them per request): registered once with sequential consistency on, so StarPU orders
     * each start's accesses after the previous start's, as it does for the caller's vectors.
     */
    starpu_data_handle_t *temps;        /* [ntemps] kept */
    size_t nkept;
    void *temp_block;                   /* their main-memory block from the context's pool */
    size_t temp_block_bytes;
};

/* ------------------------------------------------------------------------------------------------
 * Partition plans
 */

/*
 * Partition plans, made once per persistent submission: a caller's vector of several pieces gets a
 * partition plan (starpu_data_partition_plan()), its children being the pieces. Each start partitions
 * it and unpartitions it again around its tasks; a kept vector (an arena's bucket, partitions.c) is
 * partitioned by the first start and left so until something else needs it. The plan is cleaned when
 * the persistent submission is destroyed (persistent_free()). On failure what was planned stays
 * recorded for persistent_free().
 */
static starfold_status_t partition_plans(struct starfold_persistent *P)
{
    const starfold__plan_t *p = &P->plan;
    P->parts = calloc(p->nvectors + 1, sizeof *P->parts);
    if (!P->parts)
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory partitioning a vector");
    for (size_t r = 0; r < p->nvectors; r++) {
        const starfold__resource_t *x = &p->res[r];
        if (x->npieces < 2) continue;
        partition_t *part = &P->parts[P->nparts];
        part->res = r;
        part->children = malloc(sizeof *part->children * x->npieces);
        part->lengths = malloc(sizeof *part->lengths * x->npieces);
        if (!part->children || !part->lengths) {
            free(part->children);
            free(part->lengths);
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory partitioning a vector");
        }
        for (size_t k = 0; k < x->npieces; k++) part->lengths[k] = (long)(x->cuts[k + 1] - x->cuts[k]);
        struct starpu_data_filter f = {
            .filter_func = starpu_vector_filter_list_long,
            .nchildren = (unsigned)x->npieces,
            .filter_arg_ptr = part->lengths,
        };
        starpu_data_partition_plan(P->vectors[r], &f, part->children);
        pthread_mutex_lock(&starfold__submit_lock);
        part->kept = starfold__kept_find(P->vectors[r]) != NULL;
        pthread_mutex_unlock(&starfold__submit_lock);
        P->nunkept += !part->kept;
        P->nparts++;
        for (size_t k = 0; k < x->npieces; k++) P->uh[x->unit0 + k] = part->children[k];
    }
    return STARFOLD_OK;
}

/*
 * Drops the partition plans (their children are unregistered once the tasks using them are done); a
 * kept vector still partitioned by one of them is made whole first. Lock held.
 */
static void partition_clean(struct starfold_persistent *P)
{
    for (size_t i = 0; i < P->nparts; i++) {
        partition_t *part = &P->parts[i];
        if (part->kept) starfold__kept_drop(starfold__kept_find(P->vectors[part->res]), part->children);
        starpu_data_partition_clean(P->vectors[part->res], (unsigned)P->plan.res[part->res].npieces, part->children);
        free(part->children);
        free(part->lengths);
    }
    P->nparts = 0;
    P->nunkept = 0;
}

static void persistent_free(struct starfold_persistent *P)
{
    /* Kept temporaries: each unregistration waits for the starts' tasks on it (sequential consistency). */
    for (size_t i = 0; i < P->nkept; i++) starpu_data_unregister_no_coherency(P->temps[i]);
    if (P->temp_block) starfold__pool_put(P->context->pool, P->temp_block, P->temp_block_bytes);
    free(P->temps);
    if (P->nparts) {
        pthread_mutex_lock(&starfold__submit_lock); /* no start's window may be between its partition and unpartition */
        partition_clean(P);
        pthread_mutex_unlock(&starfold__submit_lock);
    }
    free(P->parts);
    free(P->uh);
    free(P->vectors);
    for (size_t k = 0; k < P->ntasks; k++) starfold__tmpl_free(&P->tasks[k]);
    free(P->tasks);
    starfold__plan_free(&P->plan);
    free(P);
}

/* ------------------------------------------------------------------------------------------------
 * Prepare: the half that depends only on the graph, the context and the views
 */

/*
 * Devices first: a graph for a bigger machine is NO_DEVICE whatever its handles, even when the
 * devices it happens to use exist here (it was compiled for another machine: its links and its
 * placement are not this context's).
 */
static starfold_status_t check_devices(starfold_context_t context, const struct starfold_graph *g, const char *fn)
{
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
    return STARFOLD_OK;
}

/* Whether the caller's vector @h can be partitioned for the graph's duration. */
static int partitionable(starpu_data_handle_t h)
{
    return starpu_data_get_sequential_consistency_flag(h) && starpu_data_get_nb_children(h) == 0;
}

/*
 * What planning needs of StarPU (plan.h), into @f: the context's memory nodes and what StarPU gives
 * each beside the caller's vectors of this graph homed there, and each of those vectors (checked to be
 * vectors already) from @views. The arrays are malloc'ed into @f's vectors and node_bytes, the
 * caller's to free; -1 when out of memory.
 *
 * A vector's home copy stays on its node for the graph's whole run (StarPU never evicts it), so the
 * temporaries and copies must fit in what is left: 8 replicas taking 94 GiB of an H200's 126 GiB left
 * 31 GiB, and a graph with 83 GiB of temporaries, checked against the 126, waited in StarPU for memory
 * that never came. Only where StarPU counts vectors against the node's size (a device's memory, main
 * memory under a limit the user set): StarPU's default size of main memory is hwloc's, which a
 * virtual machine reports far too small, and the caller's host data is not counted there. Other data
 * homed on the node is not seen here; StarPU's caches can be freed.
 */
static int plan_facts(starfold_context_t context, const starfold__views_t *views, starfold__plan_facts_t *f)
{
    size_t nodes = 0;
    for (int d = 0; d < context->num_devices; d++)
        if ((size_t)context->nodes[d] + 1 > nodes) nodes = (size_t)context->nodes[d] + 1;
    int64_t *node_bytes = malloc(sizeof *node_bytes * (nodes + 1));
    starfold__plan_vector_t *vectors = malloc(sizeof *vectors * (views->nvectors + 1));
    *f = (starfold__plan_facts_t){ context->num_devices, context->nodes, nodes, node_bytes, vectors,
                                   views->nvectors, views->refs, views->nrefs };
    if (!node_bytes || !vectors) return -1;
    for (size_t node = 0; node < nodes; node++) node_bytes[node] = (int64_t)starpu_memory_get_total((unsigned)node);
    for (size_t v = 0; v < views->nvectors; v++) {
        const starpu_data_handle_t h = views->handles[v];
        vectors[v] = (starfold__plan_vector_t){ starpu_vector_get_nx(h), starpu_vector_get_elemsize(h),
                                                partitionable(h) };
        const int home = starpu_data_get_home_node(h);
        if (home < 0 || (size_t)home >= nodes || node_bytes[home] <= 0 || !starfold__node_counts_vectors((unsigned)home))
            continue;
        /* Still a known size when the vectors take it all: 1 byte, so that any need is refused. */
        const int64_t left = node_bytes[home] - (int64_t)(vectors[v].count * vectors[v].elemsize);
        node_bytes[home] = left > 0 ? left : 1;
    }
    return 0;
}

/* The templates of the tasks, their dependencies renumbered among tasks. */
static starfold_status_t make_templates(struct starfold_persistent *P, const char *fn)
{
    starfold__plan_t *p = &P->plan;
    const struct starfold_graph *g = p->g;
    size_t *task_of_node = malloc(sizeof(size_t) * (g->nnodes + 1));
    for (size_t i = 0; i < g->nnodes; i++) P->ntasks += !p->skip[i];
    P->tasks = calloc(P->ntasks + 1, sizeof *P->tasks);
    if (!task_of_node || !P->tasks) {
        free(task_of_node);
        const starfold_status_t st =
            starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu tasks", fn, P->ntasks);
        P->ntasks = 0;
        return st;
    }
    starfold_status_t st = STARFOLD_OK;
    for (size_t i = 0, k = 0; i < g->nnodes; i++) {
        task_of_node[i] = p->skip[i] ? SF_NONE : k;
        if (p->skip[i]) continue;
        starfold__task_tmpl_t *tt = &P->tasks[k++];
        if ((st = starfold__make_template(p, P->context, i, tt)) != STARFOLD_OK) break;
        tt->deps = malloc(sizeof(size_t) * (p->ndeps[i] + 1));
        if (!tt->deps) {
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu tasks", fn, P->ntasks);
            break;
        }
        for (size_t e = 0; e < p->ndeps[i]; e++) tt->deps[tt->ndeps++] = task_of_node[p->deps[i][e]];
    }
    free(task_of_node);
    return st;
}

/*
 * Every piece's handle as far as prepare knows it (a caller's vector of one piece), and what each
 * start needs for its temporaries: the pieces some task touches, and their main-memory bytes.
 */
static starfold_status_t piece_handles(struct starfold_persistent *P, const char *fn)
{
    const starfold__plan_t *p = &P->plan;
    P->uh = calloc(p->nunits + 1, sizeof *P->uh);
    if (!P->uh) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t r = 0; r < p->nres; r++) {
        const starfold__resource_t *x = &p->res[r];
        if (x->temp_buf == SF_NONE) {
            if (x->npieces == 1) P->uh[x->unit0] = P->vectors[r]; /* several: the partition's children */
            continue;
        }
        for (size_t k = 0; k < x->npieces; k++) {
            const starfold__unit_t *u = &p->units[x->unit0 + k];
            if (u->first_writer == SF_NONE) continue; /* no task touches it */
            P->ntemps++;
            if (starfold__resource_in_main_memory(x)) P->host_bytes += starfold__temp_piece_bytes(x, u);
        }
    }
    return STARFOLD_OK;
}

/*
 * Checks @graph against @context and the caller's views (@exact as starfold__check_views()) and plans
 * it, all before anything is created in StarPU; then the partition plans. @fn names the public call.
 */
static starfold_status_t prepare(starfold_context_t context, starfold_graph_t graph, const starfold_view_t *inputs,
                                 const starfold_view_t *outputs, int exact, const char *fn,
                                 struct starfold_persistent **out)
{
    const struct starfold_graph *g = graph;
    starfold_status_t st = check_devices(context, g, fn);
    if (st != STARFOLD_OK) return st;

    /* Views: vectors of the right shape; an output may only be its own device's input (in-place). */
    starfold__views_t views;
    if (starfold__views_group(g, inputs, outputs, &views))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    st = starfold__check_views(g, inputs, outputs, exact, &views, fn);
    for (size_t b = 0; b < g->nbufs && st == STARFOLD_OK; b++)
        if (g->bufs[b].kind == SF_BUF_TEMP && g->bufs[b].count > UINT32_MAX)
            st = starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "%s: temporary of %zu elements (StarPU vectors hold at most %u)",
                          fn, g->bufs[b].count, (unsigned)UINT32_MAX);
    if (st != STARFOLD_OK) {
        starfold__views_free(&views);
        return st;
    }
    struct starfold_persistent *P = calloc(1, sizeof *P);
    if (!P) {
        starfold__views_free(&views);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    P->context = context;
    starfold__plan_t *p = &P->plan;
    starfold__plan_facts_t facts;
    if (plan_facts(context, &views, &facts)) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory planning %zu tasks",
                             g->nnodes);
        goto out;
    }
    P->vectors = views.handles; /* the persistent submission's from here on */
    views.handles = NULL;
    SF_CHECK_GOTO(starfold__plan_build(p, g, &facts), st, out);
    SF_CHECK_GOTO(starfold__plan_check_memory(p), st, out);
    SF_CHECK_GOTO(make_templates(P, fn), st, out);
    SF_CHECK_GOTO(piece_handles(P, fn), st, out);
    SF_CHECK_GOTO(partition_plans(P), st, out);
    starfold__plan_drop_scratch(p); /* and the graph may go now: nothing left reads it */
out:
    free((void *)facts.vectors);
    free((void *)facts.node_bytes);
    starfold__views_free(&views);
    if (st != STARFOLD_OK) {
        persistent_free(P);
        return st;
    }
    *out = P;
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Temporaries
 */

/*
 * Registers the temporaries: each piece some task touches gets a vector, recorded in @temps (*@ntemps
 * of them so far, also on failure) and in @uh[nunits] (every piece's handle). Those in main memory are
 * ranges of one block taken from the context's pool into *@block (pages warm from the last use,
 * pool.c); one on a device has home node -1 and is allocated there by StarPU for its first writer
 * (StarPU keeps freed device memory for reuse itself). @seq: sequential consistency - off for one
 * start's temporaries (only the graph's edges order them), on for kept ones (the starts too).
 */
static starfold_status_t register_temps(const struct starfold_persistent *P, int seq, void **block, size_t *block_bytes,
                                        starpu_data_handle_t *temps, size_t *ntemps, starpu_data_handle_t *uh,
                                        const char *fn)
{
    const starfold__plan_t *p = &P->plan;
    if (P->host_bytes) {
        *block = starfold__pool_get(P->context->pool, P->host_bytes, block_bytes);
        if (!*block)
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes of temporaries", fn,
                            P->host_bytes);
    }
    size_t host_at = 0;
    for (size_t r = 0; r < p->nres; r++) {
        const starfold__resource_t *x = &p->res[r];
        if (x->temp_buf == SF_NONE) continue;
        for (size_t k = 0; k < x->npieces; k++) {
            const starfold__unit_t *u = &p->units[x->unit0 + k];
            if (u->first_writer == SF_NONE) continue;
            starpu_data_handle_t h;
            if (starfold__resource_in_main_memory(x)) {
                starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)((char *)*block + host_at),
                                            (uint32_t)(u->hi - u->lo), x->elemsize);
                host_at += starfold__temp_piece_bytes(x, u);
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
    P->temps = malloc(sizeof *P->temps * (P->ntemps + 1));
    if (!P->temps) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    /* on failure persistent_free() releases what was registered */
    return register_temps(P, 1, &P->temp_block, &P->temp_block_bytes, P->temps, &P->nkept, P->uh, fn);
}

/* ------------------------------------------------------------------------------------------------
 * Start: one request's tasks created, declared and submitted
 */

/* One start under way. */
typedef struct launch {
    struct starfold_request *req;
    struct starpu_task **tasks;          /* [ntasks] created, not yet submitted */
    struct starpu_task *gate;
    struct starpu_task **deps;           /* scratch: one task's dependencies */
    starpu_data_handle_t *uh;            /* [nunits] this start's piece handles (its own temporaries), or NULL */
    const starpu_data_handle_t *handles; /* what the tasks take: uh, or the persistent's kept ones */
    size_t ncreated;
} launch_t;

/* The request, and its temporaries unless the persistent submission keeps them. */
static starfold_status_t launch_request(const struct starfold_persistent *P, launch_t *L, const char *fn)
{
    const starfold__plan_t *plan = &P->plan;
    const size_t ntasks = P->ntasks;
    const int own_temps = !P->temps;
    struct starfold_request *req = L->req = starfold__request_new();
    if (!req) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    size_t maxdeps = 1;
    for (size_t k = 0; k < ntasks; k++)
        if (P->tasks[k].ndeps > maxdeps) maxdeps = P->tasks[k].ndeps;
    L->tasks = calloc(ntasks + 1, sizeof *L->tasks);
    L->deps = malloc(sizeof *L->deps * maxdeps);
    req->args = calloc(ntasks + 1, sizeof *req->args);
    if (own_temps) {
        L->uh = malloc(sizeof *L->uh * (plan->nunits + 1));
        req->temps = calloc(P->ntemps + 1, sizeof *req->temps);
    }
    if (!L->tasks || !L->deps || !req->args || (own_temps && (!L->uh || !req->temps)))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu tasks", fn, ntasks);
    L->handles = P->uh;
    if (!own_temps) return STARFOLD_OK;
    memcpy(L->uh, P->uh, sizeof *L->uh * plan->nunits);
    L->handles = L->uh;
    const starfold_status_t st =
        register_temps(P, 0, &req->temp_block, &req->temp_block_bytes, req->temps, &req->ntemps, L->uh, fn);
    if (req->temp_block) req->pool = P->context->pool;
    return st;
}

/* Creates every task; checks each can run where it is pinned, while nothing is declared yet. */
static starfold_status_t create_tasks(const struct starfold_persistent *P, launch_t *L, const char *fn)
{
    for (size_t k = 0; k < P->ntasks; k++) {
        const starfold__task_tmpl_t *tt = &P->tasks[k];
        const starfold_status_t st = starfold__make_task(tt, L->handles, L->req, &L->tasks[k]);
        if (st != STARFOLD_OK) return st;
        L->ncreated = k + 1;
        if (!starpu_worker_can_execute_task(L->tasks[k]->workerid, L->tasks[k], 0))
            return starfold__error(STARFOLD_ERR_RUNTIME, "%s: worker %u of device %d cannot run a %s task", fn,
                                   L->tasks[k]->workerid, tt->device, starfold_task_kind_name(tt->kind));
    }
    return STARFOLD_OK;
}

static starfold_status_t create_gate(launch_t *L, const char *fn)
{
    L->gate = starpu_task_create();
    if (!L->gate) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    L->gate->destroy = 0;
    L->gate->callback_func = starfold__request_task_done;
    L->gate->callback_arg = L->req;
    L->gate->name = "starfold-gate";
    return STARFOLD_OK;
}

/* Nothing was submitted or declared: destroy what was created; the request gives the temporaries back. */
static void launch_discard(launch_t *L)
{
    for (size_t k = 0; k < L->ncreated; k++) starpu_task_destroy(L->tasks[k]);
    if (L->gate) starpu_task_destroy(L->gate);
    if (L->req) starfold__request_free(L->req);
    L->req = NULL;
}

/*
 * Every task's dependencies, the gate for those without; and what the request waits for. From here on
 * every task will be submitted: no more failure exits that leave tasks behind.
 */
static void declare_deps(const struct starfold_persistent *P, launch_t *L)
{
    L->req->pending = P->ntasks + 1 + P->nunkept;
    for (size_t k = 0; k < P->ntasks; k++) {
        const starfold__task_tmpl_t *tt = &P->tasks[k];
        size_t nd = 0;
        for (size_t e = 0; e < tt->ndeps; e++) L->deps[nd++] = L->tasks[tt->deps[e]];
        if (nd == 0) L->deps[nd++] = L->gate;
        starpu_task_declare_deps_array(L->tasks[k], (unsigned)nd, L->deps);
    }
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

/* What went wrong in a submission window. */
typedef struct refusal {
    size_t at;   /* the task StarPU refused, SF_NONE when none */
    int ret;     /* StarPU's error for it */
    int lost;    /* empty tasks StarPU refused too */
} refusal_t;

/*
 * The vectors in the shape the tasks use (lock held): each vector of several pieces partitioned, a
 * kept one only when another shape is active; a kept vector used whole made whole.
 */
static void shape_vectors(const struct starfold_persistent *P)
{
    for (size_t i = 0; i < P->nparts; i++) {
        const partition_t *part = &P->parts[i];
        const unsigned n = (unsigned)P->plan.res[part->res].npieces;
        starfold__kept_t *k = part->kept ? starfold__kept_find(P->vectors[part->res]) : NULL;
        if (k) starfold__kept_partition(k, n, part->children);
        else starpu_data_partition_submit(P->vectors[part->res], n, part->children);
    }
    for (size_t r = 0; r < P->plan.nvectors; r++)
        if (P->plan.res[r].npieces < 2) starfold__kept_settle(starfold__kept_find(P->vectors[r]));
}

/*
 * The vectors that are not kept, unpartitioned on their home nodes after the graph's last task on
 * them, each counted in @req (lock held). A kept vector whose record is gone (unregistered while this
 * submission lived: the caller's error) is unpartitioned uncounted rather than left partitioned.
 */
static void unshape_vectors(const struct starfold_persistent *P, starfold_request_t req)
{
    for (size_t i = 0; i < P->nparts; i++) {
        const partition_t *part = &P->parts[i];
        const unsigned n = (unsigned)P->plan.res[part->res].npieces;
        if (!part->kept)
            starpu_data_unpartition_submit_sequential_consistency_cb(P->vectors[part->res], n, part->children, -1, 1,
                                                                     starfold__request_task_done, req);
        else if (!starfold__kept_find(P->vectors[part->res]))
            starpu_data_unpartition_submit(P->vectors[part->res], n, part->children, -1);
    }
}

/*
 * The submission window. The caller's partitioned vectors are partitioned first (after the caller's
 * earlier tasks on them, through sequential consistency), then the tasks go in, then the vectors are
 * unpartitioned on their home nodes (after the graph's last task on them); the unpartitions count in
 * the request. A kept vector (an arena's bucket) stays partitioned after the window, for the next
 * start (partitions.c). One window at a time in the process: StarPU allows one active partition per
 * vector, and another graph touching the same vector whole in the middle of this window would
 * unpartition it under our tasks. A refused task cancels the request: it and the rest go in as empty
 * tasks.
 */
static refusal_t submit_window(const struct starfold_persistent *P, launch_t *L)
{
    const starfold_context_t context = P->context;
    const size_t ntasks = P->ntasks;
    struct starpu_task **tasks = L->tasks;
    refusal_t rf = { SF_NONE, 0, 0 };
    pthread_mutex_lock(&starfold__submit_lock);
    SF_TSAN_RELEASE(); /* the tasks' arguments, written above, go to StarPU's workers */
    shape_vectors(P);
    for (size_t k = 0; k < ntasks; k++) {
        int ret;
        if (rf.at == SF_NONE) {
            const int hook = context->test_refuse_task >= 0 && (size_t)context->test_refuse_task == P->tasks[k].node;
            tasks[k]->destroy = 1;
            ret = hook ? -ENODEV : starpu_task_submit(tasks[k]);
            if (ret == 0) continue;
            rf.at = k;
            rf.ret = ret;
            __atomic_store_n(&L->req->cancelled, 1, __ATOMIC_RELEASE);
            keep_caller_data(tasks, k);
        }
        /* Cancelled: the rest go in as empty tasks, so every declared dependency completes. */
        tasks[k]->cl = NULL;
        tasks[k]->destroy = 1;
        ret = starpu_task_submit(tasks[k]);
        if (ret != 0) rf.lost++;
    }
    L->gate->destroy = 1;
    if (starpu_task_submit(L->gate) != 0) rf.lost++;
    unshape_vectors(P, L->req);
    pthread_mutex_unlock(&starfold__submit_lock);
    return rf;
}

/* The refusal path: the error, and the cancelled request waited for and freed (or leaked). */
static starfold_status_t refused(const struct starfold_persistent *P, launch_t *L, const refusal_t *rf, const char *fn)
{
    starfold_status_t st = STARFOLD_OK;
    if (rf->at != SF_NONE) {
        const starfold__task_tmpl_t *tt = &P->tasks[rf->at];
        st = starfold__error(STARFOLD_ERR_RUNTIME,
                      "%s: StarPU refused task %zu (%s on device %d, error %d); the graph was "
                      "cancelled, nothing was written",
                      fn, tt->node, starfold_task_kind_name(tt->kind), tt->device, rf->ret);
    }
    if (rf->lost) {
        /* Unreachable in practice (an empty task is always accepted): tasks may still wait on what
         * was lost, so the request cannot be freed safely; it is leaked rather than crash. */
        st = starfold__error(STARFOLD_ERR_RUNTIME, "%s: StarPU refused %d empty tasks; request leaked", fn, rf->lost);
    } else {
        starfold__request_wait_all(L->req);
        starfold__request_free(L->req);
    }
    L->req = NULL;
    return st;
}

/* One start of @P: a new request, its tasks created, declared and submitted (see the file's head). */
static starfold_status_t start(struct starfold_persistent *P, starfold_request_t *request, const char *fn)
{
    launch_t L = { 0 };
    starfold_status_t st = launch_request(P, &L, fn);
    if (st == STARFOLD_OK) st = create_tasks(P, &L, fn);
    if (st == STARFOLD_OK && P->ntasks > 0) st = create_gate(&L, fn);
    if (st != STARFOLD_OK) {
        launch_discard(&L);
    } else if (P->ntasks == 0) {
        *request = L.req; /* nothing to move: the request is complete at once */
    } else {
        declare_deps(P, &L);
        const refusal_t rf = submit_window(P, &L);
        if (rf.at == SF_NONE && !rf.lost) *request = L.req;
        else st = refused(P, &L, &rf, fn);
    }
    free(L.tasks);
    free(L.deps);
    free(L.uh);
    return st;
}

/* ------------------------------------------------------------------------------------------------
 * The public entry points
 */

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
    starfold_status_t st = starfold__check_args(context, graph, inputs, outputs, request, fn, "request");
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
    starfold_status_t st = starfold__check_args(context, graph, inputs, outputs, request, fn, "request");
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
    starfold_status_t st = starfold__check_args(context, graph, inputs, outputs, persistent, fn, "persistent");
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
    starfold_status_t st = starfold__check_args(context, graph, inputs, outputs, persistent, fn, "persistent");
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
