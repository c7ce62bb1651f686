/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The executor's plan of a graph (plan.c): resources, their pieces, which nodes are tasks and their
 * dependencies. No StarPU here: the few facts of StarPU the planning needs (each caller's vector's
 * size and whether it can be partitioned, each device's memory node, each memory node's size) come
 * in a starfold__plan_facts_t, gathered by submit.c, so the planning is tested without a worker
 * (tests/test_plan.c) and plan.c is compiled without StarPU's flags (Makefile.am).
 *
 * Indices, not handles: resource r < nvectors is the caller's vector r of the facts; the StarPU
 * handles of the vectors and of the pieces are kept by the persistent submission (submit.h).
 */
#ifndef STARFOLD_SRC_EXEC_PLAN_H
#define STARFOLD_SRC_EXEC_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"

#define SF_NONE ((size_t)-1)

/* Main memory's memory node (STARPU_MAIN_RAM; submit.c checks they agree). */
#define SF_PLAN_MAIN_NODE 0

/* A caller's vector named by the graph's views. */
typedef struct starfold__plan_vector {
    size_t count, elemsize;         /* its elements, and their size */
    int partitionable;              /* StarPU can partition it for the graph's duration */
} starfold__plan_vector_t;

/* A view: graph buffer @buf is elements [lo, hi) of the caller's vector @vec. */
typedef struct starfold__plan_ref {
    size_t vec, lo, hi, buf;
} starfold__plan_ref_t;

/*
 * What planning knows of StarPU and of the caller. refs[] are grouped by vector, in vector order
 * (vec 0 first), each group sorted by range then buffer (views.c's starfold__views_group()); buffers
 * without a view (no handle, no elements) are absent.
 */
typedef struct starfold__plan_facts {
    int num_devices;
    const int *nodes;                       /* [num_devices] memory node of each logical device */
    size_t num_nodes;                       /* every nodes[d] < num_nodes */
    const int64_t *node_bytes;              /* [num_nodes] what StarPU gives each node beside the caller's
                                               vectors homed there; <= 0: not known */
    const starfold__plan_vector_t *vectors; /* [nvectors] */
    size_t nvectors;
    const starfold__plan_ref_t *refs;       /* [nrefs] */
    size_t nrefs;
} starfold__plan_facts_t;

/*
 * A resource: one vector the graph touches, a caller's (an in-place output shares its input's; views
 * share their vector) or a temporary; cut into pieces at cuts[0 .. npieces].
 */
typedef struct starfold__resource {
    size_t temp_buf;                /* the temporary's buffer, SF_NONE for a caller's vector */
    int node;                       /* a temporary's memory node (its device's), -1 for a caller's vector */
    size_t count, elemsize;
    size_t *cuts;                   /* while planning: candidate cuts; then [npieces + 1], 0 .. count */
    size_t ncuts, cap_cuts;
    size_t npieces, unit0;          /* its pieces are units[unit0 .. unit0 + npieces) */
    int views;                      /* a caller's vector holding more (or other) than one graph buffer */
} starfold__resource_t;

/* A piece: a range of a resource, one StarPU handle. */
typedef struct starfold__unit {
    size_t res, lo, hi;             /* elements [lo, hi) of resource res */
    size_t first_writer;            /* first task-node writing it, SF_NONE if none */
    unsigned char input_read;       /* some task-node reads a range of an INPUT buffer in it */
} starfold__unit_t;

typedef struct starfold__plan {
    const struct starfold_graph *g; /* NULL once the scratch is dropped */
    const starfold__plan_facts_t *facts; /* while planning only */
    starfold__resource_t *res;      /* [nres] the caller's vectors (resource r = vector r), then temporaries */
    size_t nres, nvectors;
    size_t *buf_res;                /* [nbufs] resource of each buffer, SF_NONE if unused */
    size_t *buf_base;               /* [nbufs] element of its resource where the buffer starts */
    starfold__unit_t *units;        /* [nunits] */
    size_t nunits;
    unsigned char *skip;            /* [nnodes] node with no element to move */
    size_t **deps;                  /* [nnodes] effective predecessors (task-nodes only), no duplicates */
    size_t *ndeps, *cap_deps;
    size_t *stamp;                  /* [max(nnodes, nunits) + 1] scratch marks */
    size_t *unit_mark, *unit_pos;   /* [nunits] scratch of the templates (template.c) */
} starfold__plan_t;

/*
 * Plans @g: resources, cuts, pieces, tasks and dependencies. @facts must stay valid until the scratch
 * is dropped. On failure what was built stays for starfold__plan_free().
 */
starfold_status_t starfold__plan_build(starfold__plan_t *p, const struct starfold_graph *g,
                                       const starfold__plan_facts_t *facts);

/* Refuses the graph (STARFOLD_ERR_OUT_OF_MEMORY) when a memory node StarPU gives a size is too small. */
starfold_status_t starfold__plan_check_memory(const starfold__plan_t *p);

/* Frees what only planning and the templates need (per-node state, scratch) and forgets the graph. */
void starfold__plan_drop_scratch(starfold__plan_t *p);

void starfold__plan_free(starfold__plan_t *p);

/* Index of the piece of resource @r holding element @at (< count). */
size_t starfold__piece_of(const starfold__resource_t *r, size_t at);

/* First element of span @s in its resource (a view starts inside its caller's vector). */
static inline size_t starfold__span_lo(const starfold__plan_t *p, const starfold__span_t *s)
{
    return p->buf_base[s->buf] + s->offset;
}

/*
 * The pieces a span overlaps:
 *     size_t u;
 *     for (starfold__piece_iter_t it = starfold__pieces_of(p, s); starfold__piece_next(&it, &u);) ...
 */
typedef struct starfold__piece_iter {
    const starfold__resource_t *r;
    size_t k, end;
} starfold__piece_iter_t;

static inline starfold__piece_iter_t starfold__pieces_of(const starfold__plan_t *p, const starfold__span_t *s)
{
    const starfold__resource_t *r = &p->res[p->buf_res[s->buf]];
    const size_t lo = starfold__span_lo(p, s);
    starfold__piece_iter_t it = { r, starfold__piece_of(r, lo), lo + s->count };
    return it;
}

static inline int starfold__piece_next(starfold__piece_iter_t *it, size_t *unit)
{
    if (it->k >= it->r->npieces || it->r->cuts[it->k] >= it->end) return 0;
    *unit = it->r->unit0 + it->k++;
    return 1;
}

/* Whether temporary resource @x lives in main memory (its device is a CPU device). */
static inline int starfold__resource_in_main_memory(const starfold__resource_t *x)
{
    return x->node == SF_PLAN_MAIN_NODE;
}

/* Bytes of a temporary piece in a main-memory block: 64-byte aligned, so kernels stream whole lines. */
static inline size_t starfold__temp_piece_bytes(const starfold__resource_t *x, const starfold__unit_t *u)
{
    return ((u->hi - u->lo) * x->elemsize + 63) / 64 * 64;
}

#endif /* STARFOLD_SRC_EXEC_PLAN_H */
