/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Ring search: Hamiltonian cycles maximising their bottleneck on residual bandwidth (patterns.h).
 *
 * Depth-first over the cycles that start at position 0, pruned by the best bottleneck found so far.
 * On a DGX-1 V100 this finds the ring of doubled links 0-3-2-1-5-6-7-4 (50 GB/s), then, on what it
 * leaves, the ring of single links 0-1-3-7-5-4-6-2 (25 GB/s).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "patterns/patterns.h"

typedef struct search {
    int n;
    double res[STARFOLD__RING_SEARCH_MAX][STARFOLD__RING_SEARCH_MAX]; /* residual bandwidth */
    int path[STARFOLD__RING_SEARCH_MAX], used[STARFOLD__RING_SEARCH_MAX];
    int best[STARFOLD__RING_SEARCH_MAX];
    double best_b;
} search_t;

static void dfs(search_t *s, int depth, double bottleneck)
{
    if (bottleneck <= s->best_b) return; /* cannot beat the best cycle found */
    const int last = s->path[depth - 1];
    if (depth == s->n) {
        double b = fmin(bottleneck, s->res[last][s->path[0]]);
        if (b > s->best_b) {
            s->best_b = b;
            memcpy(s->best, s->path, sizeof(int) * (size_t)s->n);
        }
        return;
    }
    for (int v = 1; v < s->n; v++) {
        if (s->used[v] || s->res[last][v] <= 0) continue;
        s->used[v] = 1;
        s->path[depth] = v;
        dfs(s, depth + 1, fmin(bottleneck, s->res[last][v]));
        s->used[v] = 0;
    }
}

int starfold__ring_search(int n, const double *bw, int max, starfold__ring_t *rings)
{
    if (n > STARFOLD__RING_SEARCH_MAX) { /* identity ring: the positions' order */
        for (int i = 0; i < n; i++) rings[0].order[i] = i;
        double w = INFINITY;
        for (int i = 0; i < n; i++) w = fmin(w, bw[i * n + (i + 1) % n]);
        rings[0].weight = w > 0 && isfinite(w) ? w : 1.0;
        return 1;
    }
    search_t s;
    memset(&s, 0, sizeof s);
    s.n = n;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) s.res[a][b] = a == b ? 0 : bw[a * n + b];
    int count = 0;
    for (; count < max; count++) {
        s.best_b = 0;
        memset(s.used, 0, sizeof s.used);
        s.path[0] = 0;
        s.used[0] = 1;
        dfs(&s, 1, INFINITY);
        if (s.best_b <= 0 || (count > 0 && s.best_b < 0.5 * rings[0].weight)) break;
        memcpy(rings[count].order, s.best, sizeof(int) * (size_t)n);
        rings[count].weight = s.best_b;
        for (int i = 0; i < n; i++) { /* both directions use b of the link's per-direction bandwidth */
            int a = s.best[i], b = s.best[(i + 1) % n];
            s.res[a][b] -= s.best_b;
            s.res[b][a] -= s.best_b;
        }
    }
    if (count == 0) { /* no cycle over direct links: the positions' order, through whatever paths exist */
        for (int i = 0; i < n; i++) rings[0].order[i] = i;
        rings[0].weight = 1.0;
        count = 1;
    }
    return count;
}
