/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The cost model: a discrete-event replay of a graph on its topology (see starfold/model.h).
 *
 * Each task goes through
 *
 *   waiting --(deps done)--> transferring --(all flows done)--> queued --(worker free)--> computing --> done
 *
 * Transfers are fluid flows. A flow starts after its path's latency and then drains at
 *   rate = min over its links of (link bandwidth / flows active on that directed link),
 * recomputed at every event (equal sharing; links are full duplex, so a->b and b->a are separate).
 * Reads between devices sharing one memory (CPU devices in host memory) are no transfer at all: the
 * kernel reads them in place.
 *
 * A device's worker runs one kernel at a time; among the tasks waiting for it, the one with the longest
 * chain of tasks still after it goes first (its upward rank counted in tasks), ties in the order they
 * became ready. A kernel takes the per-task overhead plus (bytes read + bytes written) / memory
 * bandwidth; on a CPU device the bytes are a flow on the host memory, shared by every CPU kernel
 * running at that moment (the host memory is the last entry of the link table), and CPU devices may
 * share workers (cpu_workers: device d on worker d mod W, as a context maps them). A caller's compute
 * tasks (starfold_simulate_backward_pass) run on a second worker of the device, beside the graph's
 * kernels, as a collective library's stream runs beside the compute stream (with StarPU: two workers
 * per GPU, STARPU_NWORKER_PER_CUDA=2, starfold's tasks on one). Units: time in us, bandwidth in
 * bytes/us (1 GB/s = 1e3 B/us).
 *
 * Flows are kept by path. Every flow on one path (one ordered pair of devices, or the host memory)
 * drains at the same rate, so a path is one "flow group": a service counter `served` (the bytes each
 * of its flows has received since the group was last empty) and a min-heap of its flows by `target`
 * (the counter's value at which the flow is done: `served` when it started + its bytes). A step of
 * the clock advances each live group's counter, not each flow, and the next flow to finish on a path
 * is its heap's top:
 *
 *   group g (path a->b):  served ----------------------->
 *                          flow 7 target |      flow 9 target |     flow 12 target |
 *
 * Flows that finish at one instant are handed on in the order they were created, whatever their
 * paths, so the replay does not depend on how groups are stored. A link's bytes are the sum of its
 * flows' bytes (every flow finishes), its busy time is accumulated when its count of active flows
 * falls back to zero.
 *
 * Cost: O(events x (live paths + log flows)), never O(events x flows): 1,792 packs of flows on one
 * path cost what one does. A few thousand tasks simulate in milliseconds.
 */
#include "config.h"

#include <float.h>
#include <math.h>

#include "base/common.h"
#include "graph/graph.h"
#include "topology/topology.h"
#include <starfold/model.h>


/* A directed hop of a transfer path. */
typedef struct hop {
    int from, to;
    double bw;      /* bytes/us */
    double latency; /* us */
} hop_t;

typedef struct flow {
    size_t node;
    double bytes;     /* its size */
    double target;    /* its group's `served` at which it is done (set when it starts flowing) */
    size_t group;     /* its path: a directed device pair a * ndev + b, or ndev * ndev (host memory) */
    int kernel;       /* 1: a CPU kernel's memory traffic on the shared host memory, 0: a transfer */
} flow_t;

/* The flows on one path, all at one rate (see the top of this file). */
typedef struct flow_group {
    int nhops;
    int link[2];      /* indices into the directed-link table (the host memory is the last entry) */
    double latency;   /* us, the path's */
    int known;        /* the path was looked up (0: not yet; nhops 0 after: no path) */
    double served;    /* bytes each member has received since the group was last empty */
    size_t *heap;     /* member flows, min-heap by (target, flow index) */
    size_t n, cap;
    int live;         /* in the live-group list */
} flow_group_t;

typedef struct timer {
    double at;
    int kind;         /* 0: a flow starts, 1: a kernel ends, 2: a CPU kernel's overhead is over */
    size_t index;     /* flow index or node */
} timer_t_;

/*
 * One task of a replay: a node of a compiled graph (transfers for its reads of other memories, then
 * a kernel), or a compute task of the caller's (a fixed time on its device's worker, no transfer).
 * Dependencies name earlier tasks only.
 */
typedef struct sim_task {
    int device;
    const struct starfold_graph *g;   /* NULL for a compute task */
    const starfold__node_t *node;            /* its node in g */
    double compute_us;                /* a compute task's duration */
    const size_t *deps;               /* task indices, all smaller than this task's */
    size_t ndeps;
} sim_task_t;

typedef struct sim {
    starfold_topology_t topology;
    const sim_task_t *tasks;
    size_t ntasks;
    starfold_cost_params_t p;
    int ndev;
    /* directed links: dense ndev x ndev table of (bw, active flows, busy time, bytes) for direct links,
     * then the host memory; `since` is when a link's active count last rose from zero */
    double *bw, *busy, *bytes, *since;
    int *active;
    /* tasks */
    size_t *pending_deps, *pending_flows;
    size_t **succ, *nsucc;
    double *ready_at, end;
    /* device workers: tasks ready to compute, a binary heap per worker picking the highest rank and,
     * among equal ranks, the earliest queued (O(log q) per task, where a scan made a worker with
     * 100,000 queued tasks quadratic) */
    size_t **queue, *qlen;
    size_t *rank;      /* tasks on the longest chain after each task, itself included */
    size_t *qseq, next_qseq; /* the order in which tasks were queued */
    int *busy_worker;
    /* flows, their groups (one per path, ndev * ndev + 1) and timers */
    flow_t *flows;
    size_t nflows, cap_flows;
    flow_group_t *groups;
    size_t *live;      /* groups with flows */
    size_t nlive, cap_live;
    size_t *finished;  /* flows done at the current instant */
    size_t nfinished, cap_finished;
    timer_t_ *heap;
    size_t nheap, cap_heap;
} sim_t;

static int dl(const sim_t *s, int a, int b) { return a * s->ndev + b; }

static starfold_status_t heap_push(sim_t *s, double at, int kind, size_t index)
{
    if (SF_GROW(s->heap, s->nheap, s->cap_heap)) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "simulate: out of memory");
    size_t i = s->nheap++;
    s->heap[i] = (timer_t_){ at, kind, index };
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (s->heap[parent].at <= s->heap[i].at) break;
        timer_t_ t = s->heap[parent];
        s->heap[parent] = s->heap[i];
        s->heap[i] = t;
        i = parent;
    }
    return STARFOLD_OK;
}

static timer_t_ heap_pop(sim_t *s)
{
    timer_t_ top = s->heap[0];
    s->heap[0] = s->heap[--s->nheap];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->nheap && s->heap[l].at < s->heap[m].at) m = l;
        if (r < s->nheap && s->heap[r].at < s->heap[m].at) m = r;
        if (m == i) break;
        timer_t_ t = s->heap[m];
        s->heap[m] = s->heap[i];
        s->heap[i] = t;
        i = m;
    }
    return top;
}

/* The path a transfer a -> b takes: the direct link, else the two-hop path with the best bottleneck. */
static int path(const sim_t *s, int a, int b, int *links, double *latency)
{
    starfold_topology_t t = s->topology;
    starfold_link_t l;
    if (starfold_topology_best_link(t, a, b, &l) == STARFOLD_OK) {
        links[0] = dl(s, a, b);
        *latency = l.latency_us;
        return 1;
    }
    int best = -1;
    double best_bw = 0;
    for (int c = 0; c < s->ndev; c++) {
        double bw = fmin(s->bw[dl(s, a, c)], s->bw[dl(s, c, b)]);
        if (c != a && c != b && bw > best_bw) {
            best_bw = bw;
            best = c;
        }
    }
    if (best < 0) return 0;
    starfold_link_t l1, l2;
    starfold_topology_best_link(t, a, best, &l1);
    starfold_topology_best_link(t, best, b, &l2);
    links[0] = dl(s, a, best);
    links[1] = dl(s, best, b);
    *latency = l1.latency_us + l2.latency_us;
    return 2;
}

/* The group of transfers a -> b, its path looked up once. NULL when there is no path. */
static flow_group_t *transfer_group(sim_t *s, int a, int b)
{
    flow_group_t *g = &s->groups[dl(s, a, b)];
    if (!g->known) {
        g->known = 1;
        g->link[1] = -1;
        g->nhops = path(s, a, b, g->link, &g->latency);
    }
    return g->nhops ? g : NULL;
}

/* Whether flow @a finishes before flow @b of one group: smaller target, else created first. */
static int flow_before(const sim_t *s, size_t a, size_t b)
{
    const double ta = s->flows[a].target, tb = s->flows[b].target;
    return ta != tb ? ta < tb : a < b;
}

static void group_heap_push(sim_t *s, flow_group_t *g, size_t f)
{
    size_t i = g->n++;
    for (; i > 0 && flow_before(s, f, g->heap[(i - 1) / 2]); i = (i - 1) / 2) g->heap[i] = g->heap[(i - 1) / 2];
    g->heap[i] = f;
}

static size_t group_heap_pop(sim_t *s, flow_group_t *g)
{
    const size_t top = g->heap[0], last = g->heap[--g->n], n = g->n;
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && flow_before(s, g->heap[c + 1], g->heap[c])) c++;
        if (!flow_before(s, g->heap[c], last)) break;
        g->heap[i] = g->heap[c];
        i = c;
    }
    if (n) g->heap[i] = last;
    return top;
}

/* The rate of every flow of a group: its bottleneck link's bandwidth shared by the flows on it. */
static double group_rate(const sim_t *s, const flow_group_t *g)
{
    double r = DBL_MAX;
    for (int h = 0; h < g->nhops; h++) r = fmin(r, s->bw[g->link[h]] / s->active[g->link[h]]);
    return r;
}

/* Flow @f starts flowing at @now: it joins its group, and its links count one more active flow. */
static starfold_status_t flow_start(sim_t *s, size_t f, double now)
{
    flow_group_t *g = &s->groups[s->flows[f].group];
    if (SF_GROW(g->heap, g->n, g->cap)) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "simulate: out of memory");
    if (!g->live) {
        if (SF_GROW(s->live, s->nlive, s->cap_live)) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "simulate: out of memory");
        s->live[s->nlive++] = s->flows[f].group;
        g->live = 1;
        g->served = 0;
    }
    s->flows[f].target = g->served + s->flows[f].bytes;
    group_heap_push(s, g, f);
    for (int h = 0; h < g->nhops; h++) {
        const int l = g->link[h];
        if (s->active[l]++ == 0) s->since[l] = now;
        s->bytes[l] += s->flows[f].bytes;
    }
    return STARFOLD_OK;
}

/* Flow @f is done at @now: its links count one flow fewer (busy time accrues when one goes idle). */
static void flow_end(sim_t *s, size_t f, double now)
{
    const flow_group_t *g = &s->groups[s->flows[f].group];
    for (int h = 0; h < g->nhops; h++) {
        const int l = g->link[h];
        if (--s->active[l] == 0) s->busy[l] += now - s->since[l];
    }
}

/* Bytes a graph task's kernel reads and writes. */
static uint64_t task_touched_bytes(const sim_task_t *t)
{
    uint64_t touched = 0;
    for (size_t i = 0; i < t->node->nsrc; i++) touched += starfold__span_bytes(t->g, t->node->src[i]);
    for (size_t i = 0; i < t->node->ndst; i++) touched += starfold__span_bytes(t->g, t->node->dst[i]);
    return touched;
}

static double task_kernel_us(const sim_t *s, const sim_task_t *t)
{
    if (!t->g) return t->compute_us;
    const starfold__node_t *n = t->node;
    const uint64_t touched = task_touched_bytes(t);
    const double mem = starfold_topology_device_kind(s->topology, n->device) == STARFOLD_DEVICE_CPU
                           ? s->p.cpu_memory_GBps
                           : s->p.gpu_memory_GBps;
    return s->p.task_overhead_us + (double)touched / (mem * 1e3);
}

/* The worker a task runs on: the device's first for graph tasks, its second for compute tasks. */
static int task_worker(const sim_t *s, size_t node)
{
    const sim_task_t *t = &s->tasks[node];
    if (t->g && s->p.cpu_workers > 0 && starfold_topology_device_kind(s->topology, t->device) == STARFOLD_DEVICE_CPU)
        return 2 * s->ndev + t->device % s->p.cpu_workers; /* a CPU worker shared by several logical devices */
    return 2 * t->device + (t->g == NULL);
}

/* Whether a task's kernel is memory traffic on the shared host memory (a graph task on a CPU device). */
static int in_host_memory(const sim_t *s, const sim_task_t *t)
{
    return t->g && starfold_topology_device_kind(s->topology, t->device) == STARFOLD_DEVICE_CPU;
}

/*
 * A worker starts task @node's kernel: a fixed time (GPU kernels, compute tasks), or for a CPU device
 * the per-task overhead and then its bytes as a flow on the host memory, which every CPU kernel
 * running at the same moment shares (timer kind 2 starts that flow).
 */
static starfold_status_t begin_kernel(sim_t *s, size_t node, double now)
{
    const sim_task_t *t = &s->tasks[node];
    if (in_host_memory(s, t)) return heap_push(s, now + s->p.task_overhead_us, 2, node);
    return heap_push(s, now + task_kernel_us(s, t), 1, node);
}

/* Hands a task whose transfers are done to its device's worker. */
/* Whether queued task @a goes before @b: higher rank, else queued earlier. */
static int queue_before(const sim_t *s, size_t a, size_t b)
{
    return s->rank[a] != s->rank[b] ? s->rank[a] > s->rank[b] : s->qseq[a] < s->qseq[b];
}

static void queue_push(sim_t *s, int d, size_t node)
{
    size_t *h = s->queue[d], i = s->qlen[d]++;
    s->qseq[node] = s->next_qseq++;
    for (; i > 0 && queue_before(s, node, h[(i - 1) / 2]); i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
    h[i] = node;
}

static size_t queue_pop(sim_t *s, int d)
{
    size_t *h = s->queue[d];
    const size_t top = h[0], last = h[--s->qlen[d]], n = s->qlen[d];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && queue_before(s, h[c + 1], h[c])) c++;
        if (!queue_before(s, h[c], last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return top;
}

static starfold_status_t enqueue_compute(sim_t *s, size_t node, double now)
{
    const int d = task_worker(s, node);
    if (!s->busy_worker[d]) {
        s->busy_worker[d] = 1;
        return begin_kernel(s, node, now);
    }
    queue_push(s, d, node);
    return STARFOLD_OK;
}

/* A task's dependencies are done: start its transfers (or go straight to its kernel). */
static starfold_status_t start_task(sim_t *s, size_t node, double now)
{
    const sim_task_t *t = &s->tasks[node];
    s->ready_at[node] = now;
    const starfold__node_t *n = t->node;
    for (size_t i = 0; t->g && i < n->nsrc; i++) {
        const int from = t->g->bufs[n->src[i].buf].device;
        const uint64_t bytes = starfold__span_bytes(t->g, n->src[i]);
        if (bytes == 0 || starfold_topology_same_memory(s->topology, from, n->device)) continue;
        const flow_group_t *g = transfer_group(s, from, n->device);
        if (!g)
            return starfold__error(STARFOLD_ERR_TOPOLOGY, "simulate: no path from device %d to device %d", from, n->device);
        if (SF_GROW(s->flows, s->nflows, s->cap_flows)) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "simulate: out of memory");
        s->flows[s->nflows] = (flow_t){ node, (double)bytes, 0, (size_t)dl(s, from, n->device), 0 };
        starfold_status_t st = heap_push(s, now + g->latency, 0, s->nflows++);
        if (st != STARFOLD_OK) return st;
        s->pending_flows[node]++;
    }
    return s->pending_flows[node] ? STARFOLD_OK : enqueue_compute(s, node, now);
}

/* Whether a flow with @remaining bytes at @rate is done at @now: nothing left, or less than the clock
 * can still tell apart from now. Without the second test a flow whose last bytes take less than one
 * ulp of `now` (1e-9 us at 1e7 us of simulated time) would never finish: the step would round to 0
 * forever. So every step of the event loop retires a flow or a timer, or moves the clock, and the
 * cost depends on the events, not on the bytes or the simulated time. */
static int flow_done(double remaining, double rate, double now)
{
    return !(remaining > 1e-6 * (1 + remaining)) || !(now + remaining / rate > now);
}

/* The next instant something happens: the earliest timer, or the earliest flow to drain at current
 * rates (each live group's heap top). */
static double next_event(const sim_t *s, double now)
{
    double next = s->nheap ? s->heap[0].at : DBL_MAX;
    for (size_t k = 0; k < s->nlive; k++) {
        const flow_group_t *g = &s->groups[s->live[k]];
        next = fmin(next, now + (s->flows[g->heap[0]].target - g->served) / group_rate(s, g));
    }
    return next;
}

/* Moves the clock from @now to @next: every live group's flows receive rate x dt more bytes; the
 * flows done then are collected in s->finished, in creation order. */
static starfold_status_t advance(sim_t *s, double now, double next)
{
    const double dt = next - now;
    s->nfinished = 0;
    for (size_t k = 0; k < s->nlive; k++) {
        flow_group_t *g = &s->groups[s->live[k]];
        const double rate = group_rate(s, g);
        g->served += rate * dt;
        while (g->n && flow_done(s->flows[g->heap[0]].target - g->served, rate, next)) {
            if (SF_GROW(s->finished, s->nfinished, s->cap_finished))
                return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "simulate: out of memory");
            s->finished[s->nfinished++] = group_heap_pop(s, g);
        }
    }
    for (size_t k = 0; k < s->nlive;) { /* groups left empty leave the live list */
        flow_group_t *g = &s->groups[s->live[k]];
        if (g->n) {
            k++;
            continue;
        }
        g->live = 0;
        s->live[k] = s->live[--s->nlive];
    }
    /* insertion sort by flow index: usually a handful, and often already in order */
    for (size_t i = 1; i < s->nfinished; i++) {
        const size_t f = s->finished[i];
        size_t j = i;
        for (; j > 0 && s->finished[j - 1] > f; j--) s->finished[j] = s->finished[j - 1];
        s->finished[j] = f;
    }
    return STARFOLD_OK;
}

static starfold_status_t run(sim_t *s)
{
    starfold_status_t st;
    double now = 0;
    size_t done = 0;
    for (size_t i = 0; i < s->ntasks; i++)
        if (s->pending_deps[i] == 0 && (st = start_task(s, i, 0)) != STARFOLD_OK) return st;
    while (done < s->ntasks) {
        const double next = next_event(s, now);
        if (next == DBL_MAX) return starfold__error(STARFOLD_ERR_INTERNAL, "simulate: %zu tasks never became ready", s->ntasks - done);
        if ((st = advance(s, now, next)) != STARFOLD_OK) return st;
        now = next;
        /* Finished flows: a kernel's memory traffic ends its kernel; a task's last transfer queues it. */
        for (size_t k = 0; k < s->nfinished; k++) {
            const flow_t *f = &s->flows[s->finished[k]];
            flow_end(s, s->finished[k], now);
            if (f->kernel) {
                if ((st = heap_push(s, now, 1, f->node)) != STARFOLD_OK) return st; /* the kernel ends now */
            } else if (--s->pending_flows[f->node] == 0 && (st = enqueue_compute(s, f->node, now)) != STARFOLD_OK) {
                return st;
            }
        }
        /* Timers due now. */
        while (s->nheap && s->heap[0].at <= now) {
            timer_t_ t = heap_pop(s);
            if (t.kind == 0) { /* a flow starts flowing */
                if ((st = flow_start(s, t.index, now)) != STARFOLD_OK) return st;
                continue;
            }
            if (t.kind == 2) { /* a CPU kernel's overhead is over: its bytes flow through the host memory */
                const uint64_t touched = task_touched_bytes(&s->tasks[t.index]);
                if (touched == 0) {
                    if ((st = heap_push(s, now, 1, t.index)) != STARFOLD_OK) return st;
                    continue;
                }
                if (SF_GROW(s->flows, s->nflows, s->cap_flows))
                    return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "simulate: out of memory");
                const size_t mem = (size_t)s->ndev * (size_t)s->ndev;
                s->flows[s->nflows] = (flow_t){ t.index, (double)touched, 0, mem, 1 };
                if ((st = flow_start(s, s->nflows++, now)) != STARFOLD_OK) return st;
                continue;
            }
            /* a kernel ended: the task is done, its worker takes the next one, successors may start */
            const size_t node = t.index;
            const int d = task_worker(s, node);
            done++;
            s->end = fmax(s->end, now);
            if (s->qlen[d]) {
                if ((st = begin_kernel(s, queue_pop(s, d), now)) != STARFOLD_OK) return st;
            } else {
                s->busy_worker[d] = 0;
            }
            for (size_t k = 0; k < s->nsucc[node]; k++) {
                size_t m = s->succ[node][k];
                if (--s->pending_deps[m] == 0 && (st = start_task(s, m, now)) != STARFOLD_OK) return st;
            }
        }
    }
    return STARFOLD_OK;
}

static void sim_free(sim_t *s)
{
    if (s->succ)
        for (size_t i = 0; i < s->ntasks; i++) free(s->succ[i]);
    if (s->queue)
        for (int d = 0; d < 2 * s->ndev + s->p.cpu_workers; d++) free(s->queue[d]);
    if (s->groups)
        for (size_t g = 0; g <= (size_t)s->ndev * (size_t)s->ndev; g++) free(s->groups[g].heap);
    free(s->groups), free(s->since), free(s->finished);
    free(s->bw), free(s->busy), free(s->bytes), free(s->active);
    free(s->pending_deps), free(s->pending_flows), free(s->succ), free(s->nsucc), free(s->ready_at);
    free(s->queue), free(s->qseq), free(s->qlen), free(s->busy_worker), free(s->rank);
    free(s->flows), free(s->live), free(s->heap);
}

static starfold_status_t sim_init(sim_t *s)
{
    const size_t n = s->ntasks, nd = (size_t)s->ndev, nl = nd * nd;
    s->bw = calloc(nl + 1, sizeof(double)); /* entry nl: the host memory, shared by CPU kernels */
    s->busy = calloc(nl + 1, sizeof(double));
    s->bytes = calloc(nl + 1, sizeof(double));
    s->active = calloc(nl + 1, sizeof(int));
    s->since = calloc(nl + 1, sizeof(double));
    s->groups = calloc(nl + 1, sizeof(flow_group_t));
    s->pending_deps = calloc(n + 1, sizeof(size_t));
    s->pending_flows = calloc(n + 1, sizeof(size_t));
    s->succ = calloc(n + 1, sizeof(size_t *));
    s->nsucc = calloc(n + 1, sizeof(size_t));
    s->ready_at = calloc(n + 1, sizeof(double));
    /* two workers per device (graph tasks, compute tasks), then the shared CPU workers (task_worker) */
    const size_t nw = 2 * nd + (size_t)s->p.cpu_workers;
    s->queue = calloc(nw, sizeof(size_t *));
    s->qseq = calloc(n + 1, sizeof(size_t));
    s->qlen = calloc(nw, sizeof(size_t));
    s->busy_worker = calloc(nw, sizeof(int));
    s->rank = calloc(n + 1, sizeof(size_t));
    if (!s->rank || !s->since || !s->groups || !s->bw || !s->busy || !s->bytes || !s->active || !s->pending_deps || !s->pending_flows || !s->succ ||
        !s->nsucc || !s->ready_at || !s->queue || !s->qseq || !s->qlen || !s->busy_worker)
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "simulate: out of memory for %zu tasks", n);
    for (size_t d = 0; d < nw; d++)
        if (!(s->queue[d] = malloc((n + 1) * sizeof(size_t))))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "simulate: out of memory for %zu tasks", n);
    for (int a = 0; a < s->ndev; a++)
        for (int b = 0; b < s->ndev; b++)
            if (a != b) s->bw[dl(s, a, b)] = starfold_topology_bandwidth(s->topology, a, b) * 1e3;
    s->bw[nl] = s->p.cpu_memory_GBps * 1e3;
    s->groups[nl] = (flow_group_t){ .nhops = 1, .link = { (int)nl, -1 }, .known = 1 }; /* CPU kernels' traffic */
    /* successors from the deps; each task counts its distinct dependencies */
    for (size_t i = 0; i < n; i++) {
        s->pending_deps[i] = s->tasks[i].ndeps;
        for (size_t k = 0; k < s->tasks[i].ndeps; k++) s->nsucc[s->tasks[i].deps[k]]++;
    }
    for (size_t i = 0; i < n; i++) {
        if (s->nsucc[i] && !(s->succ[i] = malloc(s->nsucc[i] * sizeof(size_t))))
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "simulate: out of memory for %zu tasks", n);
        s->nsucc[i] = 0;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < s->tasks[i].ndeps; k++) {
            size_t d = s->tasks[i].deps[k];
            s->succ[d][s->nsucc[d]++] = i;
        }
    for (size_t i = n; i-- > 0;) { /* successors come later in task order */
        size_t r = 0;
        for (size_t k = 0; k < s->nsucc[i]; k++)
            if (s->rank[s->succ[i][k]] > r) r = s->rank[s->succ[i][k]];
        s->rank[i] = r + 1;
    }
    return STARFOLD_OK;
}

/*
 * nccl-tests' bus bandwidth factor: all-reduce 2(n-1)/n, reduce and broadcast 1, all-gather (n-1)/n
 * of the gathered size (a gather to fewer devices too: each destination receives (n-1)/n of it).
 */
static double bus_factor(const struct starfold_graph *g)
{
    if (g->kind == STARFOLD_COLL_GATHER) return g->num_inputs > 1 ? (double)(g->num_inputs - 1) / g->num_inputs : 1.0;
    if (g->kind == STARFOLD_COLL_BROADCAST || g->num_outputs != g->num_inputs) return 1.0;
    for (int i = 0; i < g->num_inputs; i++) {
        int found = 0;
        for (int o = 0; o < g->num_outputs; o++) found |= g->output_devices[o] == g->input_devices[i];
        if (!found) return 1.0;
    }
    const int n = g->num_inputs;
    return n > 1 ? 2.0 * (n - 1) / n : 1.0;
}

/* The parameters a replay uses: the caller's, else the topology's (its calibration or the defaults). */
static starfold_status_t check_params(starfold_topology_t topology, const starfold_cost_params_t *params,
                                      starfold_cost_params_t *p)
{
    if (params) *p = *params;
    else starfold_topology_cost_params(topology, p);
    return starfold__cost_params_check(p, "simulate");
}

/* Appends graph @g's nodes as tasks from index @base on, each dependency offset by @base. */
static void add_graph_tasks(sim_task_t *tasks, size_t base, const struct starfold_graph *g, size_t **deps_store)
{
    for (size_t i = 0; i < g->nnodes; i++) {
        sim_task_t *t = &tasks[base + i];
        const starfold__node_t *n = &g->nodes[i];
        t->device = n->device;
        t->g = g;
        t->node = n;
        t->ndeps = n->ndeps;
        size_t *d = *deps_store;
        for (size_t k = 0; k < n->ndeps; k++) d[k] = base + n->deps[k];
        t->deps = d;
        *deps_store += n->ndeps;
    }
}

STARFOLD_API starfold_status_t starfold_graph_simulate(starfold_graph_t graph, const starfold_cost_params_t *params,
                                                       starfold_prediction_t *prediction)
{
    if (!graph || !prediction) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_graph_simulate: NULL argument");
    sim_t s = { 0 };
    starfold_status_t st = check_params(graph->topology, params, &s.p);
    if (st != STARFOLD_OK) return st;
    s.topology = graph->topology;
    s.ndev = starfold_topology_num_devices(graph->topology);
    size_t ndeps = 0;
    for (size_t i = 0; i < graph->nnodes; i++) ndeps += graph->nodes[i].ndeps;
    sim_task_t *tasks = calloc(graph->nnodes + 1, sizeof *tasks);
    size_t *deps = malloc(sizeof *deps * (ndeps + 1)), *fill = deps;
    if (!tasks || !deps) {
        free(tasks);
        free(deps);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "simulate: out of memory for %zu tasks", graph->nnodes);
    }
    add_graph_tasks(tasks, 0, graph, &fill);
    s.tasks = tasks;
    s.ntasks = graph->nnodes;
    st = sim_init(&s);
    if (st == STARFOLD_OK) st = run(&s);
    if (st == STARFOLD_OK) {
        starfold_prediction_t r = { 0 };
        r.time_us = s.end + s.p.submit_overhead_us;
        for (size_t t = 0; t < graph->num_tensors; t++) /* a gather: all_gather_perf's size, the gathered output */
            r.bytes += (uint64_t)(graph->kind == STARFOLD_COLL_GATHER ? starfold_graph_output_count(graph, t)
                                                                      : graph->tensors[t].count) *
                       starfold_dtype_size(graph->tensors[t].dtype);
        r.algbw_GBps = r.time_us > 0 ? (double)r.bytes / r.time_us / 1e3 : 0;
        r.busbw_GBps = r.algbw_GBps * bus_factor(graph);
        r.bottleneck_from = r.bottleneck_to = -1;
        double worst = 0;
        for (int a = 0; a < s.ndev; a++)
            for (int b = 0; b < s.ndev; b++) {
                const int l = dl(&s, a, b);
                if (s.bytes[l] <= 0 || s.bw[l] <= 0) continue;
                const double load = s.bytes[l] / s.bw[l]; /* time the link needs at full speed */
                if (load > worst) {
                    worst = load;
                    r.bottleneck_from = a;
                    r.bottleneck_to = b;
                    r.bottleneck_busy_us = s.busy[l];
                    r.bottleneck_GBps = s.bw[l] / 1e3;
                    r.bottleneck_bytes = (uint64_t)llround(s.bytes[l]);
                }
            }
        if (r.bottleneck_from >= 0) {
            starfold_link_t l;
            if (starfold_topology_best_link(graph->topology, r.bottleneck_from, r.bottleneck_to, &l) == STARFOLD_OK)
                r.bottleneck_kind = l.kind;
        }
        *prediction = r;
    }
    sim_free(&s);
    free(tasks);
    free(deps);
    return st;
}

/*
 * A backward pass with bucketed reductions, replayed as one task list:
 *
 *   tasks [0, L*D):  layer l's compute on the d-th device of the buckets' sources, l = 0..L-1 in the
 *                    order the backward pass computes them; each after the same device's layer l-1
 *   then bucket 0's graph, bucket 1's graph, ...: a bucket's tasks without dependencies wait for
 *                    its ready layer on every device (its gradients are complete everywhere)
 *
 * Compute tasks and the buckets' kernels share each device's worker (StarPU runs one task at a time
 * per worker); the transfers do not. With @with_compute 0 the compute tasks are left out (the buckets
 * alone, all ready at once); with @with_buckets 0 the buckets are left out.
 */
static starfold_status_t simulate_pass(const starfold_backward_pass_t *bp, const starfold_cost_params_t *p,
                                       int with_compute, int with_buckets, double *time_us)
{
    const starfold_graph_t g0 = bp->buckets[0];
    const int D = g0->num_inputs, L = with_compute ? bp->num_layers : 0;
    size_t ntasks = (size_t)L * (size_t)D, ndeps = ntasks;
    for (int b = 0; with_buckets && b < bp->num_buckets; b++) {
        const starfold_graph_t g = bp->buckets[b];
        ntasks += g->nnodes;
        for (size_t i = 0; i < g->nnodes; i++) ndeps += g->nodes[i].ndeps ? g->nodes[i].ndeps : (size_t)D;
    }
    sim_task_t *tasks = calloc(ntasks + 1, sizeof *tasks);
    size_t *deps = malloc(sizeof *deps * (ndeps + 1)), *fill = deps;
    if (!tasks || !deps) {
        free(tasks);
        free(deps);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "simulate: out of memory for %zu tasks", ntasks);
    }
    for (int l = 0; l < L; l++)
        for (int d = 0; d < D; d++) {
            sim_task_t *t = &tasks[(size_t)l * D + d];
            t->device = g0->input_devices[d];
            t->compute_us = bp->layer_us[l];
            if (l > 0) {
                *fill = (size_t)(l - 1) * D + d;
                t->deps = fill++;
                t->ndeps = 1;
            }
        }
    size_t base = (size_t)L * D;
    for (int b = 0; with_buckets && b < bp->num_buckets; b++) {
        const starfold_graph_t g = bp->buckets[b];
        add_graph_tasks(tasks, base, g, &fill);
        for (size_t i = 0; L && i < g->nnodes; i++) {
            if (g->nodes[i].ndeps) continue;
            sim_task_t *t = &tasks[base + i];
            t->deps = fill;
            t->ndeps = (size_t)D;
            for (int d = 0; d < D; d++) *fill++ = (size_t)bp->ready_after[b] * D + d;
        }
        base += g->nnodes;
    }
    sim_t s = { 0 };
    s.p = *p;
    s.topology = g0->topology;
    s.ndev = starfold_topology_num_devices(g0->topology);
    s.tasks = tasks;
    s.ntasks = ntasks;
    starfold_status_t st = sim_init(&s);
    if (st == STARFOLD_OK) st = run(&s);
    if (st == STARFOLD_OK) *time_us = s.end;
    sim_free(&s);
    free(tasks);
    free(deps);
    return st;
}

STARFOLD_API starfold_status_t starfold_simulate_backward_pass(const starfold_backward_pass_t *pass,
                                                                const starfold_cost_params_t *params,
                                                                starfold_overlap_prediction_t *prediction)
{
    static const char fn[] = "starfold_simulate_backward_pass";
    if (!pass || !prediction) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    if (pass->num_layers < 1 || !pass->layer_us)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d layers (at least 1, with their times)", fn,
                        pass->num_layers);
    if (pass->num_buckets < 1 || !pass->buckets || !pass->ready_after)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d buckets (at least 1, with their graphs and ready layers)",
                        fn, pass->num_buckets);
    for (int l = 0; l < pass->num_layers; l++)
        if (!(pass->layer_us[l] >= 0) || !isfinite(pass->layer_us[l]))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: layer %d takes %g us", fn, l, pass->layer_us[l]);
    const starfold_graph_t g0 = pass->buckets[0];
    for (int b = 0; b < pass->num_buckets; b++) {
        const starfold_graph_t g = pass->buckets[b];
        if (!g) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: bucket %d has no graph", fn, b);
        if (g->topology != g0->topology || g->num_inputs != g0->num_inputs ||
            memcmp(g->input_devices, g0->input_devices, sizeof(int) * (size_t)g0->num_inputs) != 0)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                            "%s: bucket %d reduces over other devices than bucket 0 (one topology, one device list)", fn,
                            b);
        if (pass->ready_after[b] < 0 || pass->ready_after[b] >= pass->num_layers)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: bucket %d is ready after layer %d of %d", fn, b,
                            pass->ready_after[b], pass->num_layers);
    }
    starfold_cost_params_t p;
    starfold_status_t st = check_params(pass->buckets[0]->topology, params, &p);
    starfold_overlap_prediction_t r = { 0 };
    if (st == STARFOLD_OK) st = simulate_pass(pass, &p, 1, 0, &r.compute_us);
    if (st == STARFOLD_OK) st = simulate_pass(pass, &p, 0, 1, &r.reduce_us);
    if (st == STARFOLD_OK) st = simulate_pass(pass, &p, 1, 1, &r.step_us);
    if (st != STARFOLD_OK) return st;
    const double sum = r.compute_us + r.reduce_us, mx = r.compute_us > r.reduce_us ? r.compute_us : r.reduce_us;
    r.vs_sum = sum > 0 ? r.step_us / sum : 0;
    r.vs_max = mx > 0 ? r.step_us / mx : 0;
    *prediction = r;
    return STARFOLD_OK;
}
