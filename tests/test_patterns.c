/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The pattern maths (src/patterns): ring search, spanning-tree search and bisection as pure functions
 * of one bandwidth matrix, without a graph or a runtime. The DGX-1 matrices come from the built-in
 * topologies (src/topology/builtin.c); the small ones are written out here.
 *
 * DGX-1 V100 (see tests/test_topology.c): doubled NVLink pairs (50 GB/s) 0-3 0-4 1-2 1-5 2-3 4-7 5-6
 * 6-7, single ones (25 GB/s) 0-1 0-2 1-3 2-6 3-7 4-5 4-6 5-7, PCIe or inter-socket for the rest. The
 * doubled pairs form the ring 0-3-2-1-5-6-7-4, the single ones the ring 0-1-3-7-5-4-6-2: together
 * 2 x 50 + 2 x 25 = 150 GB/s out of every GPU, its line rate.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <starfold/topology.h>
#include "patterns/patterns.h"
#include "runner.h"

#define MAXN STARFOLD_MAX_DEVICES

/* ------------------------------------------------------------------------------------------------
 * Helpers
 */

/* The matrix of a built-in topology's first @n devices, through the public bandwidth query. */
static void builtin_matrix(const char *name, int n, double *bw)
{
    starfold_topology_t t = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_topology_builtin(name, &t), STARFOLD_OK);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) bw[a * n + b] = starfold_topology_bandwidth(t, a, b);
    starfold_topology_destroy(t);
}

/* A symmetric matrix of @n positions, all 0, then @nlinks links { a, b, GB/s }. */
static void hand_matrix(int n, double *bw, int nlinks, const double (*links)[3])
{
    memset(bw, 0, sizeof *bw * (size_t)n * (size_t)n);
    for (int i = 0; i < nlinks; i++) {
        const int a = (int)links[i][0], b = (int)links[i][1];
        bw[a * n + b] = bw[b * n + a] = links[i][2];
    }
}

static void assert_ring(const starfold__ring_t *r, int n, const int *order, double weight)
{
    for (int i = 0; i < n; i++) CU_ASSERT_EQUAL(r->order[i], order[i]);
    CU_ASSERT_DOUBLE_EQUAL(r->weight, weight, 1e-12);
}

static void assert_tree(const starfold__tree_t *t, int n, const int *parent, const int *order, double weight)
{
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(t->parent[i], parent[i]);
        CU_ASSERT_EQUAL(t->order[i], order[i]);
    }
    CU_ASSERT_DOUBLE_EQUAL(t->weight, weight, 1e-12);
}

static void assert_groups(int n, const double *bw, const int *want)
{
    int group[MAXN];
    for (int i = 0; i < n; i++) group[i] = -1;
    starfold__bisect(n, bw, group);
    for (int i = 0; i < n; i++) CU_ASSERT_EQUAL(group[i], want[i]);
}

/* Every position once; the ring's links (both ways) together use no more than a link carries. */
static void assert_rings_fit(int n, const double *bw, int count, const starfold__ring_t *rings)
{
    double used[MAXN * MAXN] = { 0 };
    for (int r = 0; r < count; r++) {
        int seen[MAXN] = { 0 };
        for (int i = 0; i < n; i++) {
            CU_ASSERT_FATAL(rings[r].order[i] >= 0 && rings[r].order[i] < n);
            CU_ASSERT_EQUAL(seen[rings[r].order[i]]++, 0);
            const int a = rings[r].order[i], b = rings[r].order[(i + 1) % n];
            used[a * n + b] += rings[r].weight;
            used[b * n + a] += rings[r].weight;
        }
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (a != b) CU_ASSERT(used[a * n + b] <= bw[a * n + b] + 1e-9);
}

/* A spanning tree: one root, every other position's parent comes before it in pre-order. */
static void assert_spanning(int n, const starfold__tree_t *t)
{
    int pos[MAXN], roots = 0;
    for (int k = 0; k < n; k++) pos[t->order[k]] = k;
    for (int v = 0; v < n; v++) {
        if (t->parent[v] < 0) {
            roots++;
            CU_ASSERT_EQUAL(t->order[0], v);
        } else {
            CU_ASSERT(pos[t->parent[v]] < pos[v]);
        }
    }
    CU_ASSERT_EQUAL(roots, 1);
}

/* ------------------------------------------------------------------------------------------------
 * Rings
 */

static void test_rings_dgx1_v100(void)
{
    double bw[64];
    builtin_matrix("dgx1-v100", 8, bw);
    static const int doubled[8] = { 0, 3, 2, 1, 5, 6, 7, 4 }, single[8] = { 0, 1, 3, 7, 5, 4, 6, 2 };
    starfold__ring_t rings[4];

    /* One ring: the doubled links. */
    CU_ASSERT_EQUAL_FATAL(starfold__ring_search(8, bw, 1, rings), 1);
    assert_ring(&rings[0], 8, doubled, 50);
    for (int i = 0; i < 8; i++) CU_ASSERT_DOUBLE_EQUAL(bw[doubled[i] * 8 + doubled[(i + 1) % 8]], 50, 0);

    /* Two: then the single links, on what the first left. */
    memset(rings, 0, sizeof rings);
    CU_ASSERT_EQUAL_FATAL(starfold__ring_search(8, bw, 2, rings), 2);
    assert_ring(&rings[0], 8, doubled, 50);
    assert_ring(&rings[1], 8, single, 25);
    for (int i = 0; i < 8; i++) CU_ASSERT_DOUBLE_EQUAL(bw[single[i] * 8 + single[(i + 1) % 8]], 25, 0);
    assert_rings_fit(8, bw, 2, rings);

    /* Room for four: NVLink is used up, a PCIe ring is under half the first one's bottleneck. */
    CU_ASSERT_EQUAL(starfold__ring_search(8, bw, 4, rings), 2);
    assert_ring(&rings[1], 8, single, 25);
}

static void test_rings_dgx1_p100(void)
{
    double bw[64];
    builtin_matrix("dgx1-p100", 8, bw);
    starfold__ring_t rings[4];
    CU_ASSERT_EQUAL_FATAL(starfold__ring_search(8, bw, 4, rings), 2); /* the cube-mesh: two rings of 20 */
    assert_ring(&rings[0], 8, (const int[]){ 0, 1, 2, 3, 7, 5, 6, 4 }, 20);
    assert_ring(&rings[1], 8, (const int[]){ 0, 2, 6, 7, 4, 5, 1, 3 }, 20);
    assert_rings_fit(8, bw, 2, rings);
}

static void test_rings_small(void)
{
    starfold__ring_t rings[4];
    double bw[MAXN * MAXN];

    /* One position: the identity, weight 1. */
    bw[0] = 0;
    CU_ASSERT_EQUAL(starfold__ring_search(1, bw, 4, rings), 1);
    assert_ring(&rings[0], 1, (const int[]){ 0 }, 1);

    /* Two: 0 -> 1 -> 0 over their link; the link is then used up both ways. */
    hand_matrix(2, bw, 1, (const double[][3]){ { 0, 1, 10 } });
    CU_ASSERT_EQUAL(starfold__ring_search(2, bw, 4, rings), 1);
    assert_ring(&rings[0], 2, (const int[]){ 0, 1 }, 10);

    /* A line 0 - 1 - 2 - 3 has no cycle: the identity ring, weight 1. */
    hand_matrix(4, bw, 3, (const double[][3]){ { 0, 1, 10 }, { 1, 2, 10 }, { 2, 3, 10 } });
    CU_ASSERT_EQUAL(starfold__ring_search(4, bw, 4, rings), 1);
    assert_ring(&rings[0], 4, (const int[]){ 0, 1, 2, 3 }, 1);

    /* Disconnected: no link at all, the identity ring. */
    hand_matrix(3, bw, 0, NULL);
    CU_ASSERT_EQUAL(starfold__ring_search(3, bw, 4, rings), 1);
    assert_ring(&rings[0], 3, (const int[]){ 0, 1, 2 }, 1);

    /* A square 0-1-2-3 with thin diagonals: the cycle round the sides; its reverse, found later, is
     * no better (ties go to the first cycle found). */
    hand_matrix(4, bw, 6,
                (const double[][3]){ { 0, 1, 30 }, { 1, 2, 30 }, { 2, 3, 30 }, { 3, 0, 30 }, { 0, 2, 5 }, { 1, 3, 5 } });
    CU_ASSERT_EQUAL(starfold__ring_search(4, bw, 1, rings), 1);
    assert_ring(&rings[0], 4, (const int[]){ 0, 1, 2, 3 }, 30);
}

/* Beyond the exhaustive search: the identity ring, weighted by its slowest hop (1 without a link). */
static void test_rings_large(void)
{
    const int n = STARFOLD__RING_SEARCH_MAX + 1;
    double bw[MAXN * MAXN];
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) bw[a * n + b] = a == b ? 0 : 10 + a + b;
    starfold__ring_t rings[2];
    CU_ASSERT_EQUAL(starfold__ring_search(n, bw, 2, rings), 1);
    for (int i = 0; i < n; i++) CU_ASSERT_EQUAL(rings[0].order[i], i);
    CU_ASSERT_DOUBLE_EQUAL(rings[0].weight, 10 + 0 + 1, 0); /* hop 0 -> 1 */
    bw[5 * n + 6] = 0;
    CU_ASSERT_EQUAL(starfold__ring_search(n, bw, 2, rings), 1);
    CU_ASSERT_DOUBLE_EQUAL(rings[0].weight, 1, 0);
}

/* ------------------------------------------------------------------------------------------------
 * Spanning trees
 */

static void test_trees_dgx1(void)
{
    double bw[64];
    starfold__tree_t trees[4];
    builtin_matrix("dgx1-v100", 8, bw);
    /*
     * First the doubled links: the path 6-5-1-2-3-0-4-7, rooted at 2 (height 4, as 3, but lower);
     * then, on the single links left, a tree of 25, rooted at 2 too.
     */
    CU_ASSERT_EQUAL_FATAL(starfold__tree_search(8, bw, 4, trees), 2);
    assert_tree(&trees[0], 8, (const int[]){ 3, 2, -1, 2, 0, 1, 5, 4 }, (const int[]){ 2, 1, 3, 5, 0, 6, 4, 7 }, 50);
    assert_tree(&trees[1], 8, (const int[]){ 2, 0, -1, 1, 6, 4, 2, 6 }, (const int[]){ 2, 0, 6, 1, 4, 7, 3, 5 }, 25);
    for (int t = 0; t < 2; t++) {
        assert_spanning(8, &trees[t]);
        for (int v = 0; v < 8; v++)
            if (trees[t].parent[v] >= 0) CU_ASSERT(bw[v * 8 + trees[t].parent[v]] >= trees[t].weight);
    }
    /* max = 1: the first tree only */
    CU_ASSERT_EQUAL(starfold__tree_search(8, bw, 1, trees), 1);
    CU_ASSERT_DOUBLE_EQUAL(trees[0].weight, 50, 0);

    /* P100: every NVLink single; one tree (0 to its quad and 4, the others across), the next under half. */
    builtin_matrix("dgx1-p100", 8, bw);
    CU_ASSERT_EQUAL_FATAL(starfold__tree_search(8, bw, 4, trees), 1);
    assert_tree(&trees[0], 8, (const int[]){ -1, 0, 0, 0, 0, 1, 2, 3 }, (const int[]){ 0, 1, 2, 3, 4, 5, 6, 7 }, 20);
}

static void test_trees_small(void)
{
    starfold__tree_t trees[4];
    double bw[MAXN * MAXN];

    /* One position: a tree without links, used once. */
    bw[0] = 0;
    CU_ASSERT_EQUAL(starfold__tree_search(1, bw, 4, trees), 1);
    assert_tree(&trees[0], 1, (const int[]){ -1 }, (const int[]){ 0 }, 1);

    /* Two: their link, rooted at 0 (equal heights, lowest position). */
    hand_matrix(2, bw, 1, (const double[][3]){ { 0, 1, 10 } });
    CU_ASSERT_EQUAL(starfold__tree_search(2, bw, 4, trees), 1);
    assert_tree(&trees[0], 2, (const int[]){ -1, 0 }, (const int[]){ 0, 1 }, 10);

    /* A line 0 - 1 - 2 - 3: the line itself, rooted at 1 (height 2, as 2, but lower). */
    hand_matrix(4, bw, 3, (const double[][3]){ { 0, 1, 10 }, { 1, 2, 20 }, { 2, 3, 10 } });
    CU_ASSERT_EQUAL(starfold__tree_search(4, bw, 4, trees), 1);
    assert_tree(&trees[0], 4, (const int[]){ 1, -1, 1, 2 }, (const int[]){ 1, 0, 2, 3 }, 10);

    /* Disconnected: no spanning tree over links, a star on 0. */
    hand_matrix(3, bw, 1, (const double[][3]){ { 1, 2, 10 } });
    CU_ASSERT_EQUAL(starfold__tree_search(3, bw, 4, trees), 1);
    assert_tree(&trees[0], 3, (const int[]){ -1, 0, 0 }, (const int[]){ 0, 1, 2 }, 1);
}

/* ------------------------------------------------------------------------------------------------
 * Bisection
 */

static void test_bisect_dgx1(void)
{
    double bw[64];
    builtin_matrix("dgx1-v100", 8, bw);
    assert_groups(8, bw, (const int[]){ 0, 0, 0, 0, 1, 1, 1, 1 }); /* the two quads */
    builtin_matrix("dgx1-p100", 8, bw);
    assert_groups(8, bw, (const int[]){ 0, 0, 0, 0, 1, 1, 1, 1 });
}

static void test_bisect_small(void)
{
    double bw[MAXN * MAXN];
    bw[0] = 0;
    assert_groups(1, bw, (const int[]){ 0 });
    hand_matrix(2, bw, 1, (const double[][3]){ { 0, 1, 10 } });
    assert_groups(2, bw, (const int[]){ 0, 1 });
    /* a line 0 - 1 - 2 - 3: {0,1} {2,3} keep two links inside */
    hand_matrix(4, bw, 3, (const double[][3]){ { 0, 1, 10 }, { 1, 2, 10 }, { 2, 3, 10 } });
    assert_groups(4, bw, (const int[]){ 0, 0, 1, 1 });
    /* fat 0=2 and 1=3: interleaved halves */
    hand_matrix(4, bw, 4, (const double[][3]){ { 0, 2, 100 }, { 2, 1, 10 }, { 1, 3, 100 }, { 3, 0, 10 } });
    assert_groups(4, bw, (const int[]){ 0, 1, 0, 1 });
    /* disconnected, odd: every split is as good, the first wins; floor(n/2) in group 0 */
    hand_matrix(5, bw, 0, NULL);
    assert_groups(5, bw, (const int[]){ 0, 0, 1, 1, 1 });
    /* beyond the exhaustive search: contiguous halves whatever the links */
    const int n = STARFOLD__BISECT_EXHAUSTIVE_MAX + 2;
    hand_matrix(n, bw, 1, (const double[][3]){ { 0, n - 1, 100 } });
    int want[MAXN];
    for (int i = 0; i < n; i++) want[i] = i >= n / 2;
    assert_groups(n, bw, want);
}

/* ------------------------------------------------------------------------------------------------ */

int main(void)
{
    static const starfold__tu_entry_t tests[] = {
        { "rings", "dgx1-v100: doubled ring, then single ring", test_rings_dgx1_v100 },
        { "rings", "dgx1-p100: two rings", test_rings_dgx1_p100 },
        { "rings", "one, two, a line, disconnected, a square", test_rings_small },
        { "rings", "beyond the exhaustive search", test_rings_large },
        { "trees", "dgx1", test_trees_dgx1 },
        { "trees", "one, two, a line, disconnected", test_trees_small },
        { "bisect", "dgx1 quads", test_bisect_dgx1 },
        { "bisect", "one, two, a line, interleaved, disconnected, large", test_bisect_small },
    };
    return starfold__tu_main_grouped(tests, SF_TU_COUNT(tests));
}
