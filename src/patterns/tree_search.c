/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Spanning-tree search: maximum-bottleneck spanning trees on residual bandwidth (patterns.h).
 *
 * Kruskal on the links still left, heaviest first, gives a maximum spanning tree, which maximises the
 * tree's bottleneck b; b comes off every one of its links and the next tree is built on the rest.
 * Each tree is then rooted at its centre, so reduce and broadcast have the fewest hops.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "patterns/patterns.h"

typedef struct edge {
    int a, b;
    double w;
} edge_t;

static int edge_cmp(const void *pa, const void *pb)
{
    const edge_t *x = pa, *y = pb;
    if (x->w != y->w) return x->w < y->w ? 1 : -1; /* heaviest first */
    if (x->a != y->a) return x->a - y->a;
    return x->b - y->b;
}

static int uf_find(int *uf, int x)
{
    while (uf[x] != x) x = uf[x] = uf[uf[x]];
    return x;
}

/* Orients the tree given as an adjacency matrix from @root: parents and pre-order; returns the height. */
static int orient(int n, const unsigned char adj[][STARFOLD_MAX_DEVICES], int root, starfold__tree_t *t)
{
    int queue[STARFOLD_MAX_DEVICES], depth[STARFOLD_MAX_DEVICES], head = 0, tail = 0, height = 0;
    for (int i = 0; i < n; i++) t->parent[i] = -2;
    t->parent[root] = -1;
    depth[root] = 0;
    queue[tail++] = root;
    while (head < tail) { /* breadth-first: a parent always comes before its children */
        int v = queue[head++];
        for (int u = 0; u < n; u++)
            if (adj[v][u] && t->parent[u] == -2) {
                t->parent[u] = v;
                depth[u] = depth[v] + 1;
                if (depth[u] > height) height = depth[u];
                queue[tail++] = u;
            }
    }
    memcpy(t->order, queue, sizeof(int) * (size_t)n);
    return height;
}

int starfold__tree_search(int n, const double *bw, int max, starfold__tree_t *trees)
{
    /* Residual bandwidths: per call, never static (compiles run concurrently from several threads). */
    double (*res)[STARFOLD_MAX_DEVICES] = malloc(sizeof *res * (size_t)n);
    edge_t *edges = malloc(sizeof *edges * (size_t)(n * n));
    if (!res || !edges) {
        free(res);
        free(edges);
        return -1;
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) res[a][b] = a == b ? 0 : bw[a * n + b];
    int count = 0;
    for (; count < max; count++) {
        int ne = 0;
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++)
                if (res[a][b] > 0) edges[ne++] = (edge_t){ a, b, res[a][b] };
        qsort(edges, (size_t)ne, sizeof *edges, edge_cmp);
        int uf[STARFOLD_MAX_DEVICES], joined = 1;
        unsigned char adj[STARFOLD_MAX_DEVICES][STARFOLD_MAX_DEVICES];
        memset(adj, 0, sizeof adj);
        for (int i = 0; i < n; i++) uf[i] = i;
        double b = INFINITY;
        for (int e = 0; e < ne && joined < n; e++) { /* Kruskal, heaviest links first */
            int x = uf_find(uf, edges[e].a), y = uf_find(uf, edges[e].b);
            if (x == y) continue;
            uf[x] = y;
            adj[edges[e].a][edges[e].b] = adj[edges[e].b][edges[e].a] = 1;
            b = fmin(b, edges[e].w);
            joined++;
        }
        if (joined < n || (count > 0 && b < 0.5 * trees[0].weight)) break;
        if (!isfinite(b)) { /* one position: a tree without links, used once */
            b = 1.0;
            max = count + 1;
        }
        /* the centre: the root of least height, the lowest position among equals */
        int best_root = 0, best_h = n;
        for (int r = 0; r < n; r++) {
            int h = orient(n, adj, r, &trees[count]);
            if (h < best_h) best_h = h, best_root = r;
        }
        orient(n, adj, best_root, &trees[count]);
        trees[count].weight = b;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (adj[i][j]) res[i][j] -= b;
    }
    free(edges);
    free(res);
    if (count == 0) { /* no spanning tree over direct links: a star on position 0, through any path */
        trees[0].weight = 1.0;
        trees[0].parent[0] = -1;
        for (int p = 0; p < n; p++) {
            trees[0].order[p] = p;
            if (p) trees[0].parent[p] = 0;
        }
        count = 1;
    }
    return count;
}
