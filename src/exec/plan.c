/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Planning a graph for StarPU: resources and their pieces, which nodes become tasks, and their
 * dependencies. No StarPU here (plan.h): what planning knows of StarPU comes in the facts.
 *
 * Resources. A resource is one StarPU vector the graph touches: a caller's vector (an in-place output
 * shares its input's; views share their vector) or a temporary.
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
 * task reading a range that spans several pieces is given all of them. One task's adjacent ranges
 * are merged before they cut (a PACK writing a thousand tensors side by side is one piece).
 *
 * Temporaries are registered piece by piece. A caller's vector with more than one piece is
 * partitioned around the graph (submit.c); one StarPU cannot partition (sequential consistency off,
 * or partitioned by the caller: the facts say) stays whole: correct, but a transfer of any range of
 * it then moves all of it.
 *
 * The steps of starfold__plan_build(), each reading what the one before left:
 *
 *      resources   buf_res[], buf_base[]: every buffer placed in its resource
 *      cuts        skip[] (nodes with nothing to move), each resource's candidate cuts
 *      pieces      cuts sorted and distinct, units[] (pieces of resource r: unit0 .. unit0 + npieces)
 *      ordering    deps[] in node order, first writers, input reads
 *
 * Invariants once built: for every resource 0 = cuts[0] < cuts[1] < ... < cuts[npieces] = count;
 * units are numbered resource after resource. deps[i] names only earlier task-nodes (a skipped node's
 * own dependencies stand in for it, so ordering stays transitive), without duplicates. The first
 * writer of each temporary piece precedes every other task touching it (a dependency is added where
 * the graph has none): StarPU refuses to read a never-written temporary, and its first write is W.
 *
 * Ownership: the plan owns res[] (with their cuts), units[] and the per-node scratch; it borrows the
 * graph and the facts, until starfold__plan_drop_scratch() forgets both (the templates made, nothing
 * reads them any more).
 */
#include "config.h"

#include "base/common.h"
#include "exec/plan.h"

void starfold__plan_drop_scratch(starfold__plan_t *p)
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
    p->facts = NULL;
}

void starfold__plan_free(starfold__plan_t *p)
{
    if (p->g) starfold__plan_drop_scratch(p);
    if (p->res)
        for (size_t r = 0; r < p->nres; r++) free(p->res[r].cuts);
    free(p->res);
    free(p->units);
}

static starfold_status_t plan_oom(const starfold__plan_t *p)
{
    return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory planning %zu tasks",
                           p->g->nnodes);
}

/* Adds @d to node @i's effective deps unless marked already (stamp[d] == i + 1). */
static int plan_add_dep(starfold__plan_t *p, size_t i, size_t d)
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

static int add_cut(starfold__resource_t *r, size_t at)
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

size_t starfold__piece_of(const starfold__resource_t *r, size_t at)
{
    size_t lo = 0, hi = r->npieces; /* cuts[lo] <= at < cuts[hi] */
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (r->cuts[mid] <= at) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* ------------------------------------------------------------------------------------------------
 * Resources
 */

/*
 * The caller's vectors (resource r is vector r), then the temporaries of at least one element; a
 * buffer starts at its view's offset in its resource. Allocates the per-node state too.
 */
static starfold_status_t plan_resources(starfold__plan_t *p)
{
    const struct starfold_graph *g = p->g;
    const starfold__plan_facts_t *f = p->facts;
    const size_t nn = g->nnodes, nb = g->nbufs;
    size_t maxres = f->nvectors;
    for (size_t b = 0; b < nb; b++) maxres += g->bufs[b].kind == SF_BUF_TEMP && g->bufs[b].count > 0;
    p->res = calloc(maxres + 1, sizeof *p->res);
    p->buf_res = malloc(sizeof(size_t) * (nb + 1));
    p->buf_base = calloc(nb + 1, sizeof(size_t));
    p->skip = calloc(nn + 1, 1);
    p->deps = calloc(nn + 1, sizeof *p->deps);
    p->ndeps = calloc(nn + 1, sizeof(size_t));
    p->cap_deps = calloc(nn + 1, sizeof(size_t));
    if (!p->res || !p->buf_res || !p->buf_base || !p->skip || !p->deps || !p->ndeps || !p->cap_deps)
        return plan_oom(p);

    for (size_t b = 0; b < nb; b++) p->buf_res[b] = SF_NONE;
    for (size_t v = 0; v < f->nvectors; v++) {
        starfold__resource_t *r = &p->res[v];
        r->temp_buf = SF_NONE;
        r->node = -1;
        r->count = f->vectors[v].count;
        r->elemsize = f->vectors[v].elemsize;
    }
    p->nres = p->nvectors = f->nvectors;
    for (size_t i = 0; i < f->nrefs; i++) {
        const starfold__plan_ref_t *ref = &f->refs[i];
        starfold__resource_t *r = &p->res[ref->vec];
        if (ref->lo != 0 || ref->hi != r->count) r->views = 1;
        p->buf_res[ref->buf] = ref->vec;
        p->buf_base[ref->buf] = ref->lo;
    }
    for (size_t b = 0; b < nb; b++)
        if (g->bufs[b].kind == SF_BUF_TEMP && g->bufs[b].count > 0) {
            starfold__resource_t *r = &p->res[p->nres];
            r->temp_buf = b;
            r->node = f->nodes[g->bufs[b].device];
            r->count = g->bufs[b].count;
            r->elemsize = starfold_dtype_size(g->bufs[b].dtype);
            p->buf_res[b] = p->nres++;
        }
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Cuts
 */

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

/* Scratch of the cut step, reused from task to task. */
typedef struct cut_scratch {
    cut_range_t *rg;   /* [nrg] the task's ranges, in span order */
    cut_range_t *grp;  /* [nrg] the same, grouped by key (resource, write), each group by start */
    size_t *touched;   /* the keys the task touches, in order of first appearance */
    size_t cap_rg, cap_grp;
    size_t *key_at;    /* [2 nres] per key: its count, then its group's position; all 0 between tasks */
} cut_scratch_t;

static void cut_scratch_free(cut_scratch_t *cs)
{
    free(cs->rg);
    free(cs->grp);
    free(cs->touched);
    free(cs->key_at);
}

/*
 * Node @i's ranges that cut (its writes, and its reads of a buffer on another memory node) into
 * cs->rg, their number in *@nrg. STARFOLD_ERR_GRAPH_INVALID for a span on a buffer without elements.
 */
static starfold_status_t task_ranges(starfold__plan_t *p, size_t i, cut_scratch_t *cs, size_t *nrg)
{
    const struct starfold_graph *g = p->g;
    const starfold__node_t *n = &g->nodes[i];
    const int *nodes = p->facts->nodes;
    const int here = nodes[n->device];
    *nrg = 0;
    for (size_t k = 0; k < n->nsrc + n->ndst; k++) {
        const int write = k >= n->nsrc;
        const starfold__span_t *s = write ? &n->dst[k - n->nsrc] : &n->src[k];
        if (s->count == 0) continue;
        const size_t r = p->buf_res[s->buf];
        if (r == SF_NONE)
            return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "starfold_submit: task %zu %s an empty buffer", i,
                                   write ? "writes" : "reads");
        if (!write && nodes[g->bufs[s->buf].device] == here) continue;
        if (SF_GROW(cs->rg, *nrg, cs->cap_rg)) return plan_oom(p);
        const size_t lo = starfold__span_lo(p, s);
        cs->rg[(*nrg)++] = (cut_range_t){ r, lo, lo + s->count, write };
    }
    return STARFOLD_OK;
}

/*
 * Groups cs->rg[0 .. nrg) by (resource, write) into cs->grp with one counting pass (groups in order
 * of first appearance), each group sorted by its start: usually it comes sorted already (a segmented
 * REDUCE writes its tensors' views one after another), and a general sort of a thousand ranges per
 * task cost more than the rest of the planning. -1 when out of memory.
 */
static int group_ranges(cut_scratch_t *cs, size_t nrg)
{
    if (nrg > cs->cap_grp) {
        cut_range_t *bigger = realloc(cs->grp, sizeof *cs->grp * nrg);
        size_t *more = realloc(cs->touched, sizeof *cs->touched * nrg);
        if (bigger) cs->grp = bigger;
        if (more) cs->touched = more;
        if (!bigger || !more) return -1;
        cs->cap_grp = nrg;
    }
    const cut_range_t *rg = cs->rg;
    cut_range_t *grp = cs->grp;
    size_t *key_at = cs->key_at, *touched = cs->touched, ntouched = 0;
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
    return 0;
}

/* Cuts at both ends of each run of overlapping or adjacent ranges of a group; -1 when out of memory. */
static int cut_at_groups(starfold__plan_t *p, const cut_range_t *grp, size_t nrg)
{
    for (size_t k = 0; k < nrg;) {
        size_t hi = grp[k].hi, e = k + 1;
        while (e < nrg && grp[e].res == grp[k].res && grp[e].write == grp[k].write && grp[e].lo <= hi) {
            if (grp[e].hi > hi) hi = grp[e].hi;
            e++;
        }
        if (add_cut(&p->res[grp[k].res], grp[k].lo) || add_cut(&p->res[grp[k].res], hi)) return -1;
        k = e;
    }
    return 0;
}

/* Which nodes are tasks (skip[]), and every resource's candidate cuts, task by task. */
static starfold_status_t plan_cuts(starfold__plan_t *p)
{
    const struct starfold_graph *g = p->g;
    cut_scratch_t cs = { 0 };
    starfold_status_t st = STARFOLD_OK;
    cs.key_at = calloc(2 * p->nres + 1, sizeof *cs.key_at);
    if (!cs.key_at) st = plan_oom(p);
    for (size_t i = 0; i < g->nnodes && st == STARFOLD_OK; i++) {
        p->skip[i] = node_total(&g->nodes[i]) == 0;
        if (p->skip[i]) continue;
        size_t nrg;
        if ((st = task_ranges(p, i, &cs, &nrg)) != STARFOLD_OK) break;
        if (group_ranges(&cs, nrg) || cut_at_groups(p, cs.grp, nrg)) st = plan_oom(p);
    }
    cut_scratch_free(&cs);
    return st;
}

/* ------------------------------------------------------------------------------------------------
 * Pieces
 */

/* Each resource's pieces: its sorted distinct cuts (none for a caller's vector StarPU cannot partition). */
static starfold_status_t plan_pieces(starfold__plan_t *p)
{
    const size_t nn = p->g->nnodes;
    for (size_t r = 0; r < p->nres; r++) {
        starfold__resource_t *x = &p->res[r];
        if (x->temp_buf == SF_NONE && x->ncuts && !p->facts->vectors[r].partitionable) x->ncuts = 0;
        if (x->ncuts > 1) qsort(x->cuts, x->ncuts, sizeof(size_t), size_cmp);
        size_t m = 0;
        for (size_t k = 0; k < x->ncuts; k++)
            if (m == 0 || x->cuts[m - 1] != x->cuts[k]) x->cuts[m++] = x->cuts[k];
        size_t *cuts = malloc(sizeof(size_t) * (m + 2));
        if (!cuts) return plan_oom(p);
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
    if (!p->units || !p->stamp || !p->unit_mark || !p->unit_pos) return plan_oom(p);
    for (size_t r = 0; r < p->nres; r++) {
        const starfold__resource_t *x = &p->res[r];
        for (size_t k = 0; k < x->npieces; k++) {
            starfold__unit_t *u = &p->units[x->unit0 + k];
            u->res = r;
            u->lo = x->cuts[k];
            u->hi = x->cuts[k + 1];
            u->first_writer = SF_NONE;
        }
    }
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Ordering: one pass in node order (deps only name earlier nodes). The stamps that keep a node's
 * dependency list free of duplicates are only valid while that node is being planned.
 */

/* Node @i's dependencies, through skipped nodes (whose own dependencies stand in for them). */
static starfold_status_t node_deps(starfold__plan_t *p, size_t i)
{
    const starfold__node_t *n = &p->g->nodes[i];
    for (size_t k = 0; k < n->ndeps; k++) {
        const size_t d = n->deps[k];
        if (d >= i)
            return starfold__error(STARFOLD_ERR_GRAPH_INVALID, "starfold_submit: task %zu depends on task %zu", i, d);
        if (!p->skip[d]) {
            if (plan_add_dep(p, i, d)) return plan_oom(p);
        } else {
            for (size_t e = 0; e < p->ndeps[d]; e++)
                if (plan_add_dep(p, i, p->deps[d][e])) return plan_oom(p);
        }
    }
    return STARFOLD_OK;
}

/* Task @i's reads: after each temporary piece's first writer; which pieces hold an input range read. */
static starfold_status_t node_reads(starfold__plan_t *p, size_t i)
{
    const struct starfold_graph *g = p->g;
    const starfold__node_t *n = &g->nodes[i];
    for (size_t k = 0; k < n->nsrc; k++) {
        const starfold__span_t *s = &n->src[k];
        if (s->count == 0) continue;
        const int temp = p->res[p->buf_res[s->buf]].temp_buf != SF_NONE;
        const int input = g->bufs[s->buf].kind == SF_BUF_INPUT;
        size_t u;
        for (starfold__piece_iter_t it = starfold__pieces_of(p, s); starfold__piece_next(&it, &u);) {
            if (temp) {
                if (p->units[u].first_writer == SF_NONE)
                    return starfold__error(STARFOLD_ERR_GRAPH_INVALID,
                                           "starfold_submit: task %zu reads temporary buffer %zu before any task "
                                           "writes it",
                                           i, s->buf);
                if (plan_add_dep(p, i, p->units[u].first_writer)) return plan_oom(p);
            }
            if (input) p->units[u].input_read = 1;
        }
    }
    return STARFOLD_OK;
}

/* Task @i's writes: the first writer of each piece; a later writer of a temporary piece after it. */
static starfold_status_t node_writes(starfold__plan_t *p, size_t i)
{
    const starfold__node_t *n = &p->g->nodes[i];
    for (size_t k = 0; k < n->ndst; k++) {
        const starfold__span_t *s = &n->dst[k];
        if (s->count == 0) continue;
        const int temp = p->res[p->buf_res[s->buf]].temp_buf != SF_NONE;
        size_t u;
        for (starfold__piece_iter_t it = starfold__pieces_of(p, s); starfold__piece_next(&it, &u);) {
            if (p->units[u].first_writer == SF_NONE) p->units[u].first_writer = i;
            else if (temp && p->units[u].first_writer != i && plan_add_dep(p, i, p->units[u].first_writer))
                return plan_oom(p);
        }
    }
    return STARFOLD_OK;
}

static starfold_status_t plan_order(starfold__plan_t *p)
{
    starfold_status_t st = STARFOLD_OK;
    for (size_t i = 0; i < p->g->nnodes && st == STARFOLD_OK; i++) {
        st = node_deps(p, i);
        if (st == STARFOLD_OK && !p->skip[i]) st = node_reads(p, i);
        if (st == STARFOLD_OK && !p->skip[i]) st = node_writes(p, i);
    }
    return st;
}

starfold_status_t starfold__plan_build(starfold__plan_t *p, const struct starfold_graph *g,
                                       const starfold__plan_facts_t *facts)
{
    memset(p, 0, sizeof *p);
    p->g = g;
    p->facts = facts;
    starfold_status_t st = plan_resources(p);
    if (st == STARFOLD_OK) st = plan_cuts(p);
    if (st == STARFOLD_OK) st = plan_pieces(p);
    if (st == STARFOLD_OK) st = plan_order(p);
    return st;
}

/* ------------------------------------------------------------------------------------------------
 * Memory pre-flight
 */

/*
 * Memory a graph needs beyond the caller's data, checked before anything is submitted: on each memory
 * node, its temporaries (allocated there by their first writer) and a copy of every piece its tasks
 * read from another node. When StarPU knows a node's capacity (a GPU's memory, STARPU_LIMIT_*_MEM)
 * and the need exceeds what the caller's vectors of this graph leave of it, the graph is refused with STARFOLD_ERR_OUT_OF_MEMORY instead of leaving
 * StarPU to run out in the middle of the graph (where StarPU 1.3 waits for memory that never frees).
 * A piece read on a node by several tasks is copied there once: seen[] has a bit per (piece, node).
 */
starfold_status_t starfold__plan_check_memory(const starfold__plan_t *p)
{
    const struct starfold_graph *g = p->g;
    const starfold__plan_facts_t *f = p->facts;
    const size_t nodes = f->num_nodes;
    uint64_t *need = calloc(nodes + 1, sizeof *need);
    unsigned char *seen = calloc(p->nunits * nodes / 8 + 1, 1);
    if (!need || !seen) {
        free(need);
        free(seen);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory");
    }
    for (size_t u = 0; u < p->nunits; u++) {
        const starfold__unit_t *x = &p->units[u];
        const starfold__resource_t *r = &p->res[x->res];
        if (r->temp_buf == SF_NONE || x->first_writer == SF_NONE) continue;
        need[r->node] += (uint64_t)(x->hi - x->lo) * r->elemsize;
    }
    for (size_t i = 0; i < g->nnodes; i++) {
        if (p->skip[i]) continue;
        const starfold__node_t *n = &g->nodes[i];
        const int here = f->nodes[n->device];
        for (size_t k = 0; k < n->nsrc; k++) {
            const starfold__span_t *sp = &n->src[k];
            if (sp->count == 0 || f->nodes[g->bufs[sp->buf].device] == here) continue;
            size_t u;
            for (starfold__piece_iter_t it = starfold__pieces_of(p, sp); starfold__piece_next(&it, &u);) {
                const size_t bit = u * nodes + (size_t)here;
                if (seen[bit / 8] >> (bit % 8) & 1) continue;
                seen[bit / 8] |= (unsigned char)(1u << (bit % 8));
                need[here] += (uint64_t)(p->units[u].hi - p->units[u].lo) * p->res[p->units[u].res].elemsize;
            }
        }
    }
    starfold_status_t st = STARFOLD_OK;
    for (size_t node = 0; node < nodes && st == STARFOLD_OK; node++) {
        const int64_t total = f->node_bytes[node];
        if (total > 0 && need[node] > (uint64_t)total) {
            int dev = 0;
            while (dev < f->num_devices && (size_t)f->nodes[dev] != node) dev++;
            st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY,
                                 "starfold_submit: device %d (memory node %zu) would need %.1f MiB for this graph's "
                                 "temporaries and copies, StarPU gives it %.1f MiB beside the graph's own vectors "
                                 "there: nothing was submitted",
                                 dev, node, (double)need[node] / 1048576.0, (double)total / 1048576.0);
        }
    }
    free(need);
    free(seen);
    return st;
}
