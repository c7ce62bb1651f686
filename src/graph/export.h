/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The graph exporter's state and the pieces its files share (export.c builds and writes the picture,
 * and the summarised picture of a big graph, export_edges.c the edges, export_ids.c the ID discipline
 * that keeps cgraph's output in creation order). Private to the graph layer.
 */
#ifndef STARFOLD_SRC_GRAPH_EXPORT_H
#define STARFOLD_SRC_GRAPH_EXPORT_H

#include "base/gv.h"
#include "graph/graph.h"

/* A summary of more groups than this folds the rounds: past it a picture is a wall of boxes and edges. */
#define SUMMARY_FOLD_GROUPS 64

enum { DRAWN_LINK = 1 /* << link kind */, DRAWN_NO_LINK = 1 << 8, DRAWN_LOCAL = 1 << 9, DRAWN_ORDER = 1 << 10 };

/* An edge between two device boxes of a picture, drawn once dot has placed the boxes. */
struct late_edge {
    Agnode_t *tail, *head;
    uint64_t bytes;
    int from, to;
};

typedef struct exporter {
    const struct starfold_graph *g;
    Agraph_t *ag;
    Agraph_t *cluster[STARFOLD_MAX_DEVICES];
    int picture;         /* rendered (SVG, PNG): legend, groups and layout aids; a .dot file stays the data */
    Agraph_t **rank;     /* picture: rank=same subgraph of each round, created on first use */
    size_t nrank;
    Agraph_t *side[2];   /* picture: the inputs' row (rank=min) and the outputs' (rank=max) */
    struct late_edge *late; /* picture: edges between devices, added after dot's layout (add_late_edges) */
    size_t nlate, caplate;
    int adding_late;
    unsigned drawn;      /* what the legend explains: DRAWN_* bits of the edges drawn */
    Agnode_t **task;     /* [nnodes] */
    Agnode_t **bufnode;  /* [nbufs]: the node drawing an input or output buffer, NULL for temporaries */
    int aggregate;       /* one node per slot instead of per buffer */
    int tags_are_packs;  /* a pack or unpack task exists: node tags name packs, else tensors */
} exporter_t;

/*
 * cgraph orders subgraphs by ID, and its default ID discipline uses the address of the interned name
 * as the ID of a named object, so clusters would come out in heap order. This discipline numbers
 * named (sub)graphs 2, 4, 6... in creation order and prints their names back; everything else goes
 * to the default discipline (nodes and edges are written in sequence order anyway). Lives on the
 * exporter's stack for one agopen() .. agclose().
 */
typedef struct ag_ids {
    Agiddisc_t id;  /* first: cgraph hands &id back through disc->id */
    Agdisc_t disc;
    Agraph_t *root;
    void *dflt;     /* the default discipline's state */
    char **names;   /* the name of ID 2 * (i + 1), interned with agstrdup() as cgraph expects */
    size_t n, cap;
    int delegate;   /* a state of a later open: everything goes to the default discipline */
} ag_ids_t;

/* Fills @ids (zeroed first) as the ID discipline of one agopen() .. agclose() (export_ids.c). */
void starfold__ag_ids_init(ag_ids_t *ids);

/* Sorted disjoint element ranges already attributed to a later dependency. */
typedef struct ranges {
    size_t (*r)[2];
    size_t n, cap;
} ranges_t;

/* Adds [lo, hi) to @c and returns how many of its elements were not in it yet; -1 out of memory. */
long long starfold__ranges_add(ranges_t *c, size_t lo, size_t hi);
/* Bytes node @i reads from each dependency's writes, into out[k] for deps[k]. */
starfold_status_t starfold__graph_dep_bytes(const struct starfold_graph *g, size_t i, uint64_t *out, ranges_t *seen);
/* The round of each task: the length of the longest dependency chain before it. */
void starfold__graph_task_rounds(const struct starfold_graph *g, size_t *round);

/* export.c */
starfold_status_t starfold__export_label(exporter_t *x);
starfold_status_t starfold__export_clusters(exporter_t *x);
Agnode_t *starfold__export_node(exporter_t *x, int device, const char *name);
starfold_status_t starfold__export_pin_row(exporter_t *x, Agnode_t *n, size_t round);
starfold_status_t starfold__export_edge(exporter_t *x, Agnode_t *tail, Agnode_t *head, uint64_t bytes, int from, int to);

/* The summarised picture, at most @max_groups groups before the rounds fold. */
starfold_status_t starfold__export_summary(exporter_t *x, size_t max_groups);

/* export_edges.c: every edge of the full picture. */
starfold_status_t starfold__export_edges(exporter_t *x);

#endif /* STARFOLD_SRC_GRAPH_EXPORT_H */
