/*
 * trees: reduce up and broadcast down several spanning trees at once, each carrying a share of the data.
 *
 * Trees come from the topology: a maximum spanning tree (Kruskal on link bandwidth) maximises the
 * tree's bottleneck; its bottleneck b is taken off every one of its links, and the next tree is built
 * on what is left, while b stays at least half the first tree's. Links are full duplex: the reduce
 * uses child -> parent, the broadcast parent -> child, so one tree uses b of each direction. Each tree
 * is rooted at its centre (the device of least height) and gets a share of every pack in proportion
 * to b, moved in rounds of bounded chunks so the broadcast of one round overlaps the reduce of the next.
 *
 *          root                     reduce (post-order): a node adds its own data and its children's
 *         /    \                    partial sums, then sends up; the root scales for MEAN and writes
 *       v1      v2                  its result;
 *      /  \       \                 broadcast (pre-order): each node copies its parent's result.
 *    v3    v4      v5
 *
 * On a DGX-1 the minimum cut around a GPU is its degree, so such trees reach the reduce and broadcast
 * bounds in principle; with log-depth trees they also cut latency against a ring's 2(n-1) hops.
 * Packing and the fallbacks are those of the other all-reduce algorithms (algo_common.c).
 */
#include "config.h"

#include <math.h>

#include "algorithms/algorithms.h"
#include "base/common.h"

#define TREES_MAX 4
#define TREES_AUTO_CHUNK ((size_t)4 << 20)
#define TREES_AUTO_MAX_ROUNDS 8

typedef struct tree {
    int parent[STARFOLD_MAX_DEVICES]; /* replica position of the parent, -1 for the root */
    int order[STARFOLD_MAX_DEVICES];  /* positions in pre-order (root first); post-order is its reverse */
    double weight;                    /* bottleneck bandwidth, GB/s */
} tree_t;

/* ------------------------------------------------------------------------------------------------ */
/* Pattern maths: trees on residual bandwidth                                                        */

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
static int orient(int n, const unsigned char adj[][STARFOLD_MAX_DEVICES], int root, tree_t *t)
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

static int find_trees(starfold_topology_t topo, int n, const int *devices, int max, tree_t *trees)
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
        for (int b = 0; b < n; b++) res[a][b] = a == b ? 0 : starfold_topology_bandwidth(topo, devices[a], devices[b]);
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
        if (!isfinite(b)) { /* one device: a tree without links, used once */
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
    return count;
}

/* ------------------------------------------------------------------------------------------------ */
/* Graph building                                                                                    */

typedef struct trees_build {
    starfold_graph_t g;
    int n;
    int *out_slot;
    starfold__span_t *have, *dest;
    starfold_op_t acc;
} trees_build_t;

/* One reduce-then-broadcast of elements [lo, lo + len) of the pack over tree @t. */
static starfold_status_t tree_round(trees_build_t *tb, const tree_t *t, starfold_dtype_t dt, size_t lo, size_t len,
                                    int tag)
{
    starfold_status_t st;
    starfold_graph_t g = tb->g;
    const int n = tb->n;
    starfold__span_t partial[STARFOLD_MAX_DEVICES], srcs[STARFOLD_MAX_DEVICES];
    for (int k = n - 1; k >= 0; k--) { /* post-order: children first */
        const int v = t->order[k];
        int ns = 0;
        srcs[ns++] = starfold__span(tb->have[v].buf, tb->have[v].offset + lo, len);
        for (int u = 0; u < n; u++)
            if (t->parent[u] == v) srcs[ns++] = partial[u];
        const int root = t->parent[v] < 0;
        if (ns == 1 && !root) { /* a leaf sends its own data */
            partial[v] = srcs[0];
            continue;
        }
        starfold__span_t mine = starfold__span(tb->dest[v].buf, tb->dest[v].offset + lo, len);
        if (root && g->op != STARFOLD_OP_MEAN) { /* the root's sum is its result */
            if ((st = starfold__graph_reduce(g, tb->acc, srcs, (size_t)ns, mine, tag, NULL)) != STARFOLD_OK) return st;
            continue;
        }
        size_t buf;
        if ((st = starfold__graph_add_temp(g, g->input_devices[v], dt, len, tag, &buf)) != STARFOLD_OK) return st;
        partial[v] = starfold__whole(g, buf);
        if ((st = starfold__graph_reduce(g, tb->acc, srcs, (size_t)ns, partial[v], tag, NULL)) != STARFOLD_OK) return st;
        if (root && (st = starfold__graph_scale(g, partial[v], mine, (uint32_t)n, tag, NULL)) != STARFOLD_OK) return st;
    }
    for (int k = 1; k < n; k++) { /* pre-order: every node copies its parent's result */
        const int v = t->order[k], p = t->parent[v];
        starfold__span_t from = starfold__span(tb->dest[p].buf, tb->dest[p].offset + lo, len);
        starfold__span_t to = starfold__span(tb->dest[v].buf, tb->dest[v].offset + lo, len);
        if ((st = starfold__graph_copy(g, STARFOLD_TASK_COPY, &from, 1, &to, 1, tag, NULL)) != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

static starfold_status_t build_pack(trees_build_t *tb, const starfold__pack_plan_t *plan, const starfold__pack_t *pk,
                                    const tree_t *trees, int ntrees, const starfold_algo_options_t *options)
{
    starfold_status_t st;
    starfold_graph_t g = tb->g;
    const int n = tb->n, tag = (int)pk->index;
    for (int p = 0; p < n; p++)
        if ((st = starfold__pack_gather(g, pk, p, &tb->have[p])) != STARFOLD_OK ||
            (st = starfold__pack_result(g, pk, p, tb->out_slot[p], &tb->dest[p])) != STARFOLD_OK)
            return st;
    double total_w = 0, acc_w = 0;
    for (int t = 0; t < ntrees; t++) total_w += trees[t].weight;
    const size_t es = starfold_dtype_size(pk->dtype);
    const size_t chunk = options->chunk_bytes ? options->chunk_bytes : TREES_AUTO_CHUNK;
    size_t lo = 0;
    for (int t = 0; t < ntrees; t++) {
        acc_w += trees[t].weight;
        const size_t hi = t == ntrees - 1 ? pk->count : (size_t)llround((double)pk->count * acc_w / total_w);
        const size_t share = hi - lo;
        size_t rounds = (share * es + chunk - 1) / chunk;
        if (rounds < 1) rounds = 1;
        if (!options->chunk_bytes && rounds > TREES_AUTO_MAX_ROUNDS) rounds = TREES_AUTO_MAX_ROUNDS;
        for (size_t k = 0; k < rounds; k++) {
            const size_t a = lo + share * k / rounds, b = lo + share * (k + 1) / rounds;
            if (b > a && (st = tree_round(tb, &trees[t], pk->dtype, a, b - a, tag)) != STARFOLD_OK) return st;
        }
        lo = hi;
    }
    for (int p = 0; p < n; p++)
        if ((st = starfold__pack_scatter(g, pk, tb->out_slot[p], tb->dest[p])) != STARFOLD_OK) return st;
    return STARFOLD_OK;
}

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    starfold_status_t st = STARFOLD_OK;
    const int n = g->num_inputs;
    trees_build_t tb = { g, n, calloc((size_t)n, sizeof(int)), calloc((size_t)n, sizeof(starfold__span_t)),
                         calloc((size_t)n, sizeof(starfold__span_t)), starfold__op_accumulation(g->op) };
    tree_t *trees = calloc(TREES_MAX, sizeof *trees);
    starfold__pack_plan_t plan = { 0 };
    int done = 0;
    if (!tb.out_slot || !tb.have || !tb.dest || !trees) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "trees: out of memory");
        goto out;
    }
    SF_CHECK_GOTO(starfold__allreduce_prepare(g, options, tb.out_slot, &plan, &done), st, out);
    if (done) goto out;
    int ntrees = find_trees(g->topology, n, g->input_devices, TREES_MAX, trees);
    if (ntrees < 0) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "trees: out of memory");
        goto out;
    }
    if (ntrees == 0) { /* no spanning tree over direct links: a star on replica 0, through any path */
        trees[0].weight = 1.0;
        trees[0].parent[0] = -1;
        for (int p = 0; p < n; p++) {
            trees[0].order[p] = p;
            if (p) trees[0].parent[p] = 0;
        }
        ntrees = 1;
    }
    for (size_t i = 0; i < plan.npacks; i++) SF_CHECK_GOTO(build_pack(&tb, &plan, &plan.packs[i], trees, ntrees, options), st, out);
out:
    starfold__pack_plan_free(&plan);
    free(tb.out_slot);
    free(tb.have);
    free(tb.dest);
    free(trees);
    return st;
}

const starfold__algorithm_t starfold__algo_trees = {
    .name = "trees",
    .description = "reduce up and broadcast down edge-disjoint maximum-bottleneck spanning trees, pipelined",
    .build = build,
};
