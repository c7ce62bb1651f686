/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * one-pass: for devices that share one memory (CPU devices in host memory, StarPU's CPU-only mode).
 *
 * On one memory node there is nothing to route: copies between "devices" are memcpys through the same
 * DRAM, so a hierarchy or a ring only multiplies the memory traffic. The floor is reading each of the
 * n inputs once and writing each of the m outputs once. Here every chunk of every tensor is one task
 * that does exactly that: it reads the chunk from every replica, reduces it in cache-sized blocks,
 * and stores the result (divided by n for MEAN) into every destination.
 *
 *     chunk c of tensor t, a task on device d(c) (round robin over the sources):
 *
 *        in_0[c] --\                              /--> out_0[c]
 *        in_1[c] ---+--> reduce (/n for MEAN) ---+---> out_1[c]
 *          ...    --/                              \--> ...
 *        in_n-1[c]                                      out_m-1[c]
 *
 *     memory traffic: n reads + m writes per element, nothing else (an all-reduce of 8 replicas:
 *     16 x S, against 8 x S more per extra pass a hierarchy of copies adds)
 *
 * Chunks: chunk_bytes of one replica's tensor (default 8 MiB on CPU devices: fewer pieces for StarPU to track;
 * 1 MiB chunks measured 25 % slower at 64 MiB). Where the whole graph would have fewer chunks than
 * sources (one tensor of 1 MiB, a list of small ones), a tensor or batch of at least n x 64 KiB gets n
 * chunks, so every worker has work; a graph with enough chunks of its own is not cut further (cutting
 * ResNet-50's 161 gradients so made 337 tasks where 88 do, and cost 15-25 % a step against one fused
 * tensor). The devices run the chunks in turn across tensors, so many tensors spread too. Broadcast
 * is the same with one source (one pass that writes every destination). A promoted integer MEAN
 * (float64 outputs) reduces each chunk into a temporary, then divides it into each output.
 *
 * Small tensors: a task per tensor costs StarPU a task for a few KiB of data, so consecutive tensors
 * of one dtype under ONE_PASS_SMALL bytes are batched, up to a chunk each batch, and a batch is split
 * into groups of whole tensors of about equal bytes (as many groups as a tensor of the batch's size
 * would have chunks). Each group is ONE segmented REDUCE task, a segment per tensor, reading the
 * inputs and writing every output directly:
 *
 *     group g = tensors [ta, tb):   for t in [ta, tb):  out_*[t] = in_0[t] op ... op in_n-1[t]  (/n)
 *
 * so tasks grow with groups, not tensors, and the memory traffic is still n reads + m writes per
 * element, no pack and no temporary. (StarPU still tracks each tensor's handles; given as views of
 * one vector per replica, starfold_submit_views(), a group touches 2 handles per replica.)
 * A promoted integer MEAN batch (float64 outputs) packs instead:
 *
 *     in_r[t0..tk] --PACK (one task per replica)--> pack_r          (every source r)
 *     pack_0 .. pack_n-1 --reduce, chunk by chunk--> sum --/n (float64)--> result
 *     result --UNPACK (one task per destination)--> out_d[t0..tk]    (every destination d)
 *
 * GPU devices sharing one memory (the StarPU workers of one GPU, STARPU_NWORKER_PER_CUDA): one
 * kernel already spreads over the whole GPU, and StarPU drives a GPU's workers from one thread, a task
 * at a time. Cut for CPU workers, 1 GiB on 8 replicas made 128 tasks of 90 us each, 0.35 of the copy
 * bound on an H200, where one task per tensor reached 0.75-0.81 (1 GiB). There a tensor of its own
 * is one task up to ONE_PASS_GPU_CHUNK, never cut to give every source a task. Small tensors are
 * batched and grouped as on CPU devices: one task for all of ResNet-50's 161 gradients, 2,576 StarPU
 * handles, took 6.3 ms a step where other graphs took 3.6. "auto" leaves one-pass out on GPU devices
 * (compile.c).
 *
 * In place: the task reading in_d[c] is the task writing out_d[c], element for element, so the same
 * handle may be both (a batch's UNPACK into out_d runs after every PACK has read the inputs). Devices
 * that do not share one memory: STARFOLD_ERR_NOT_SUPPORTED from compile.c (.shared_memory), and "auto"
 * leaves one-pass out.
 */
#include "config.h"

#include "algorithms/algorithms.h"
#include "base/common.h"

#define ONE_PASS_CHUNK ((size_t)8 << 20)
#define ONE_PASS_MIN_SPLIT ((size_t)64 << 10)
#define ONE_PASS_SMALL ((size_t)256 << 10)
#define ONE_PASS_GPU_CHUNK ((size_t)1 << 30)

typedef struct one_pass {
    starfold_graph_t g;
    int n, m;
    int broadcast, mean;
    starfold_op_t acc;  /* the accumulation (SUM for MEAN) */
    size_t target;      /* bytes per chunk */
    size_t gpu_target;  /* bytes per chunk of a tensor of its own on GPU devices; 0 on CPU devices */
    int split;          /* the graph has fewer natural chunks than sources: cut big enough ones in n */
    size_t turn;        /* round robin of the tasks over the source devices, across tensors */
    starfold__span_t *src, *dst;
} one_pass_t;

/* Integers under TensorFlow's MEAN: a float64 result, the division its own step. */
static int promoted(const one_pass_t *o, starfold_dtype_t dt)
{
    return !o->broadcast && o->mean && starfold__graph_out_dtype(o->g, dt) != dt;
}

/* Chunks of @count elements of @dt: chunk_bytes each, at least one per source for big enough data;
 * a tensor of its own (@alone) on GPU devices: gpu_target each, never cut further. */
static size_t chunks_of(const one_pass_t *o, size_t count, starfold_dtype_t dt, int alone)
{
    const size_t bytes = count * starfold_dtype_size(dt);
    if (alone && o->gpu_target) {
        const size_t chunks = (bytes + o->gpu_target - 1) / o->gpu_target;
        return chunks > count ? count : chunks;
    }
    size_t chunks = (bytes + o->target - 1) / o->target;
    if (o->split && chunks < (size_t)o->n && bytes >= (size_t)o->n * ONE_PASS_MIN_SPLIT) chunks = (size_t)o->n;
    return chunks > count ? count : chunks;
}

/* Tensor @t, chunk by chunk: every input read once, every output written once. */
static starfold_status_t one_tensor(one_pass_t *o, size_t t)
{
    starfold_status_t st;
    starfold_graph_t g = o->g;
    const size_t count = g->tensors[t].count;
    const starfold_dtype_t dt = g->tensors[t].dtype;
    const int prom = promoted(o, dt);
    const uint32_t divisor = o->mean && !prom ? (uint32_t)o->n : 1;
    const size_t chunks = chunks_of(o, count, dt, 1);
    starfold_status_t reserved = starfold__graph_reserve(o->g, chunks); /* a task per chunk */
    if (reserved != STARFOLD_OK) return reserved;
    for (size_t c = 0; c < chunks; c++) {
        const size_t lo = starfold__part_start(count, c, chunks), len = starfold__part_start(count, c + 1, chunks) - lo;
        const int device = g->input_devices[o->turn++ % (size_t)o->n];
        for (int s = 0; s < o->n; s++) o->src[s] = starfold__span(starfold__graph_input(g, s, t), lo, len);
        if (!prom) {
            for (int d = 0; d < o->m; d++) o->dst[d] = starfold__span(starfold__graph_output(g, d, t), lo, len);
            if ((st = starfold__graph_reduce_on(g, device, o->acc, o->src, (size_t)o->n, o->dst, (size_t)o->m, divisor, (int)t,
                                         NULL)) != STARFOLD_OK)
                return st;
            continue;
        }
        /* TensorFlow's truediv: the integer sum in a temporary, divided into each float64 output. */
        size_t sum;
        if ((st = starfold__graph_add_temp(g, device, dt, len, (int)t, &sum)) != STARFOLD_OK) return st;
        const starfold__span_t whole = starfold__whole(g, sum);
        if ((st = starfold__graph_reduce_on(g, device, o->acc, o->src, (size_t)o->n, &whole, 1, 1, (int)t, NULL)) != STARFOLD_OK)
            return st;
        for (int d = 0; d < o->m; d++)
            if ((st = starfold__graph_scale(g, whole, starfold__span(starfold__graph_output(g, d, t), lo, len), (uint32_t)o->n, (int)t,
                                     NULL)) != STARFOLD_OK)
                return st;
    }
    return STARFOLD_OK;
}

/*
 * Tensors [t0, t1) (one dtype, each small, not a promoted MEAN): groups of whole tensors of about
 * total / chunks bytes each, one segmented REDUCE per group (see the top of the file).
 */
static starfold_status_t batch_segments(one_pass_t *o, size_t t0, size_t t1)
{
    starfold_graph_t g = o->g;
    const starfold_dtype_t dt = g->tensors[t0].dtype;
    const uint32_t divisor = o->mean ? (uint32_t)o->n : 1;
    size_t total = 0, nt = 0;
    for (size_t t = t0; t < t1; t++) total += g->tensors[t].count, nt += g->tensors[t].count > 0;
    const size_t groups = chunks_of(o, total, dt, 0);
    starfold__span_t *src = malloc(sizeof *src * nt * (size_t)o->n + 1), *dst = malloc(sizeof *dst * nt * (size_t)o->m + 1);
    starfold_status_t st = STARFOLD_OK;
    if (!src || !dst) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "one-pass: out of memory");
    /* Group k (1-based) closes once the tensors so far hold k / groups of the batch's elements. */
    size_t k = 1, q = 0, done = 0;
    for (size_t t = t0; t < t1 && st == STARFOLD_OK; t++) {
        if (g->tensors[t].count == 0) continue;
        for (int s = 0; s < o->n; s++) src[q * (size_t)o->n + (size_t)s] = starfold__whole(g, starfold__graph_input(g, s, t));
        for (int d = 0; d < o->m; d++) dst[q * (size_t)o->m + (size_t)d] = starfold__whole(g, starfold__graph_output(g, d, t));
        q++;
        done += g->tensors[t].count;
        if (done < starfold__part_start(total, k, groups) && done < total) continue;
        while (k < groups && done >= starfold__part_start(total, k, groups)) k++;
        const int device = g->input_devices[o->turn++ % (size_t)o->n];
        st = starfold__graph_reduce_segments(g, device, o->acc, src, (size_t)o->n, dst, (size_t)o->m, q, divisor, (int)t0,
                                      NULL);
        q = 0;
    }
    free(src);
    free(dst);
    return st;
}

/*
 * Tensors [t0, t1) of a promoted integer MEAN as one batch: PACK per source, reduce the packs chunk by
 * chunk into one sum, divide it into a float64 result, UNPACK per destination.
 */
static starfold_status_t batch_promoted(one_pass_t *o, size_t t0, size_t t1)
{
    starfold_status_t st = STARFOLD_OK;
    starfold_graph_t g = o->g;
    const starfold_dtype_t dt = g->tensors[t0].dtype, out_dt = starfold__graph_out_dtype(g, dt);
    const int tag = (int)t0;
    size_t total = 0, nt = 0;
    for (size_t t = t0; t < t1; t++) total += g->tensors[t].count, nt += g->tensors[t].count > 0;
    starfold__span_t *segs = malloc(sizeof *segs * (nt ? nt : 1));
    size_t *packs = malloc(sizeof *packs * (size_t)o->n);
    if (!segs || !packs) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "one-pass: out of memory");
        goto out;
    }
    for (int s = 0; s < o->n; s++) {
        size_t k = 0;
        for (size_t t = t0; t < t1; t++)
            if (g->tensors[t].count) segs[k++] = starfold__whole(g, starfold__graph_input(g, s, t));
        SF_CHECK_GOTO(starfold__graph_add_temp(g, g->input_devices[s], dt, total, tag, &packs[s]), st, out);
        const starfold__span_t pk = starfold__whole(g, packs[s]);
        SF_CHECK_GOTO(starfold__graph_copy(g, STARFOLD_TASK_PACK, segs, nt, &pk, 1, tag, NULL), st, out);
    }
    const int home = g->input_devices[o->turn % (size_t)o->n];
    size_t sum, result;
    SF_CHECK_GOTO(starfold__graph_add_temp(g, home, dt, total, tag, &sum), st, out);
    SF_CHECK_GOTO(starfold__graph_add_temp(g, home, out_dt, total, tag, &result), st, out);
    const size_t chunks = chunks_of(o, total, dt, 0);
    for (size_t c = 0; c < chunks; c++) {
        const size_t lo = starfold__part_start(total, c, chunks), len = starfold__part_start(total, c + 1, chunks) - lo;
        const int device = g->input_devices[o->turn++ % (size_t)o->n];
        for (int s = 0; s < o->n; s++) o->src[s] = starfold__span(packs[s], lo, len);
        const starfold__span_t part = starfold__span(sum, lo, len);
        SF_CHECK_GOTO(starfold__graph_reduce_on(g, device, o->acc, o->src, (size_t)o->n, &part, 1, 1, tag, NULL), st, out);
        SF_CHECK_GOTO(starfold__graph_scale(g, part, starfold__span(result, lo, len), (uint32_t)o->n, tag, NULL), st, out);
    }
    const starfold__span_t from = starfold__whole(g, result);
    for (int d = 0; d < o->m; d++) {
        size_t k = 0;
        for (size_t t = t0; t < t1; t++)
            if (g->tensors[t].count) segs[k++] = starfold__whole(g, starfold__graph_output(g, d, t));
        SF_CHECK_GOTO(starfold__graph_copy(g, STARFOLD_TASK_UNPACK, &from, 1, segs, nt, tag, NULL), st, out);
    }
out:
    free(segs);
    free(packs);
    return st;
}

/*
 * The run of tensors that starts at @t: a batch [t, end) of small tensors of one dtype (up to a chunk,
 * at least two of them not empty), or tensor t alone (end = t + 1). *@bytes: the run's bytes per
 * replica.
 */
static size_t run_end(const one_pass_t *o, size_t t, size_t *bytes)
{
    const starfold_graph_t g = o->g;
    const starfold_dtype_t dt = g->tensors[t].dtype;
    const size_t es = starfold_dtype_size(dt);
    size_t e = t, sum = 0, nonempty = 0;
    while (e < g->num_tensors && g->tensors[e].dtype == dt && sum < o->target && g->tensors[e].count * es < ONE_PASS_SMALL) {
        sum += g->tensors[e].count * es;
        nonempty += g->tensors[e].count > 0;
        e++;
    }
    if (nonempty >= 2) {
        *bytes = sum;
        return e;
    }
    *bytes = g->tensors[t].count * es;
    return t + 1;
}

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    starfold_status_t st = STARFOLD_OK;
    one_pass_t o = { .g = g, .n = g->num_inputs, .m = g->num_outputs };
    o.broadcast = g->kind == STARFOLD_COLL_BROADCAST;
    o.mean = !o.broadcast && g->op == STARFOLD_OP_MEAN;
    o.acc = o.broadcast ? STARFOLD_OP_SUM : starfold__op_accumulation(g->op);
    o.target = options->chunk_bytes ? options->chunk_bytes : ONE_PASS_CHUNK;
    if (starfold_topology_device_kind(g->topology, g->input_devices[0]) == STARFOLD_DEVICE_GPU)
        o.gpu_target = options->chunk_bytes ? options->chunk_bytes : ONE_PASS_GPU_CHUNK;
    o.src = malloc(sizeof *o.src * (size_t)o.n);
    o.dst = malloc(sizeof *o.dst * (size_t)o.m);
    if (!o.src || !o.dst) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "one-pass: out of memory");
        goto out;
    }
    /* Cut to give every source a task only where the graph has too few of its own. */
    size_t natural = 0;
    for (size_t t = 0; t < g->num_tensors;) {
        size_t bytes = 0;
        const size_t e = run_end(&o, t, &bytes);
        if (bytes) natural += (bytes + o.target - 1) / o.target;
        t = e;
    }
    o.split = natural < (size_t)o.n;
    for (size_t t = 0; t < g->num_tensors;) {
        size_t bytes = 0;
        const size_t e = run_end(&o, t, &bytes);
        const int prom = promoted(&o, g->tensors[t].dtype);
        if (e > t + 1) SF_CHECK_GOTO(prom ? batch_promoted(&o, t, e) : batch_segments(&o, t, e), st, out);
        else if (bytes) SF_CHECK_GOTO(one_tensor(&o, t), st, out);
        t = e;
    }
out:
    free(o.src);
    free(o.dst);
    return st;
}

const starfold__algorithm_t starfold__algo_one_pass = {
    .name = "one-pass",
    .description = "devices sharing one memory: each chunk read once from every replica, reduced and written to "
                   "every destination by one task (small tensors batched)",
    .supports = STARFOLD__SUPPORTS_ALL_REDUCE | STARFOLD__SUPPORTS_REDUCE | STARFOLD__SUPPORTS_BROADCAST,
    .options = STARFOLD_ALGO_OPTION_CHUNK_BYTES,
    .shared_memory = 1,
    .build = build,
};
