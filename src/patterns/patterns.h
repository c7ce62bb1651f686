/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Communication patterns as pure maths over one bandwidth matrix: which rings, which spanning trees,
 * which two halves. No topology object, no graph, no runtime (NCCL keeps these in src/graph/search.cc,
 * UCC in coll_patterns/): the topology and the graph builders turn their devices into a matrix, call
 * these, and map the positions back.
 *
 * The matrix: @bw holds n x n doubles, row-major, bw[a * n + b] = the bandwidth from position a to
 * position b in GB/s per direction, 0 when they have no direct link. The diagonal is never read.
 * Positions are 0..n-1; 1 <= n <= STARFOLD_MAX_DEVICES. Every function is deterministic (ties are
 * broken by position) and keeps no state, so concurrent calls are safe.
 */
#ifndef STARFOLD_SRC_PATTERNS_H
#define STARFOLD_SRC_PATTERNS_H

#include <starfold/topology.h> /* STARFOLD_MAX_DEVICES */

/* ------------------------------------------------------------------------------------------------
 * Rings (ring_search.c)
 */

/* Exhaustive Hamiltonian-cycle search up to this many positions; the identity ring beyond. */
#define STARFOLD__RING_SEARCH_MAX 12

typedef struct starfold__ring {
    int order[STARFOLD_MAX_DEVICES]; /* positions in ring order, order[0] = 0 */
    double weight;                   /* bottleneck bandwidth, GB/s */
} starfold__ring_t;

/*
 * Up to @max rings (@rings has room for @max), each the Hamiltonian cycle with the best bottleneck on
 * the bandwidth the previous ones left of every link (a cycle is used both ways, so it takes its
 * bottleneck off both directions of each of its links); stops at a cycle under half the first one's
 * bottleneck (it would only add hops). Without any cycle over direct links: the identity ring of
 * weight 1. Beyond STARFOLD__RING_SEARCH_MAX positions: the identity ring, weighted by its slowest
 * link (1 when a hop has no link). Returns the number of rings, >= 1.
 */
int starfold__ring_search(int n, const double *bw, int max, starfold__ring_t *rings);

/* ------------------------------------------------------------------------------------------------
 * Spanning trees (tree_search.c)
 */

typedef struct starfold__tree {
    int parent[STARFOLD_MAX_DEVICES]; /* parent position, -1 for the root */
    int order[STARFOLD_MAX_DEVICES];  /* positions in pre-order (root first); post-order is its reverse */
    double weight;                    /* bottleneck bandwidth, GB/s */
} starfold__tree_t;

/*
 * Up to @max spanning trees (@trees has room for @max): each a maximum spanning tree (Kruskal, heaviest
 * links first, ties by position) on the bandwidth the previous ones left, which maximises its
 * bottleneck b; b is taken off both directions of every one of its links. Stops at a tree under half
 * the first one's bottleneck. Each tree is rooted at its centre (least height, the lowest position
 * among equals). One position: one tree without links, weight 1. No spanning tree over direct links:
 * a star on position 0, weight 1. Returns the number of trees (>= 1), or -1 when memory runs out.
 */
int starfold__tree_search(int n, const double *bw, int max, starfold__tree_t *trees);

/* ------------------------------------------------------------------------------------------------
 * Bisection (bisection.c)
 */

/* Exhaustive bisection up to this many positions; contiguous halves beyond. */
#define STARFOLD__BISECT_EXHAUSTIVE_MAX 20

/*
 * The two best-connected halves: of all splits into a group 0 of floor(n/2) positions (position 0
 * among them) and a group 1 of the others, the one with the most bandwidth inside the groups; ties go
 * to the split whose group 0 is smallest in lexicographic order, so equal links give the halves
 * [0, n/2) and [n/2, n). Beyond STARFOLD__BISECT_EXHAUSTIVE_MAX positions those contiguous halves.
 * n = 1: the only position in group 0. Writes group[i] = 0 or 1 for every position.
 */
void starfold__bisect(int n, const double *bw, int *group);

#endif /* STARFOLD_SRC_PATTERNS_H */
