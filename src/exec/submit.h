/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * What the files of a submission share (StarPU's side; the plan itself is plan.h):
 *
 *     views.c     the public calls' arguments and the caller's views, checked and grouped by vector
 *     plan.c      resources, pieces, tasks and dependencies (no StarPU)
 *     template.c  each task's pieces, access modes and kernel arguments, once; StarPU tasks from them
 *     request.c   one start's request: completion, waits, its temporaries
 *     submit.c    prepare and start, the submission window, the persistent and public entry points
 */
#ifndef STARFOLD_SRC_EXEC_SUBMIT_H
#define STARFOLD_SRC_EXEC_SUBMIT_H

#include "exec/exec.h"
#include "exec/handle_table.h"
#include "exec/plan.h"
#include "graph/graph.h"

/* ------------------------------------------------------------------------------------------------
 * views.c
 */

/* The caller's views grouped by vector (starfold__views_group()). */
typedef struct starfold__views {
    starfold__plan_ref_t *refs;     /* [nrefs] grouped by vector (vec 0 first), each group by range then buffer */
    size_t nrefs;
    starpu_data_handle_t *handles;  /* [nvectors] vector v's handle; numbered in order of first appearance */
    size_t nvectors;
} starfold__views_t;

/* The arguments of the public entry points: non-NULL where needed. */
starfold_status_t starfold__check_args(starfold_context_t context, starfold_graph_t graph, const void *inputs,
                                      const void *outputs, const void *out, const char *fn, const char *out_name);

/* Groups the views that name a handle into *@views; -1 when out of memory (nothing to free then). */
int starfold__views_group(const struct starfold_graph *g, const starfold_view_t *inputs,
                          const starfold_view_t *outputs, starfold__views_t *views);

void starfold__views_free(starfold__views_t *views);

/*
 * Each view against its graph buffer (@exact: the vector must be the tensor, as starfold_submit()
 * wants; else the range must lie within it), then no output overlapping another view but its
 * in-place input. @fn names the public call in messages.
 */
starfold_status_t starfold__check_views(const struct starfold_graph *g, const starfold_view_t *inputs,
                                       const starfold_view_t *outputs, int exact, const starfold__views_t *views,
                                       const char *fn);

/* ------------------------------------------------------------------------------------------------
 * request.c
 */

/* A request with nothing pending; NULL when out of memory. */
struct starfold_request *starfold__request_new(void);

/* Gives its temporaries back (once) and frees it; every task must be done. */
void starfold__request_free(struct starfold_request *r);

/* Blocks until every task, the gate and the unpartitions completed. */
void starfold__request_wait_all(struct starfold_request *r);

/* The StarPU callback of each task, the gate and each unpartition: @arg is the request. */
void starfold__request_task_done(void *arg);

/* ------------------------------------------------------------------------------------------------
 * template.c
 */

/* A task of a persistent submission, all but its request (starfold__make_template()). */
typedef struct starfold__task_tmpl {
    size_t node;                         /* the graph node it runs, for messages */
    starfold_task_kind_t kind;
    int device;
    unsigned worker;                     /* the StarPU worker of its device */
    size_t nbuf;                         /* distinct handles */
    size_t *units;                       /* [nbuf] the piece behind each */
    enum starpu_data_access_mode *modes; /* [nbuf] */
    starfold__kernel_args_t *args;       /* kernel arguments, the request's flags NULL; args_size bytes */
    size_t args_size;
    size_t *deps, ndeps;                 /* earlier tasks (indices among the persistent's tasks) */
} starfold__task_tmpl_t;

/*
 * Node @i's template from plan @p (built, scratch not yet dropped) on @ctx. @tt zeroed by the caller;
 * on failure what it holds is freed by starfold__tmpl_free(). Its deps are the caller's to fill.
 */
starfold_status_t starfold__make_template(starfold__plan_t *p, starfold_context_t ctx, size_t i,
                                          starfold__task_tmpl_t *tt);

void starfold__tmpl_free(starfold__task_tmpl_t *tt);

/*
 * The (not yet submitted) task of template @tt for request @req, the pieces' handles in @uh: a copy of
 * the template's kernel arguments (owned by the request, req->args[req->nargs++]) pointing at the
 * request's flags.
 */
starfold_status_t starfold__make_task(const starfold__task_tmpl_t *tt, const starpu_data_handle_t *uh,
                                      struct starfold_request *req, struct starpu_task **task_out);

#endif /* STARFOLD_SRC_EXEC_SUBMIT_H */
