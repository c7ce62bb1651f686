/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The graph IR: the private layout of starfold_graph and the builder that algorithms call.
 *
 * Layering: topology -> this IR -> algorithms (pure builders) -> executor. Nothing here touches StarPU.
 *
 * Buffers. Every buffer lives on one topology device and holds `count` elements of one dtype.
 *   INPUT  (slot s, tensor t): the caller's data on source device s; never written by a graph.
 *   OUTPUT (slot d, tensor t): the caller's result on destination device d; every element written
 *          exactly once.
 *   TEMP:  scratch on one device, created by the algorithm, released without write-back.
 *
 * Tasks (nodes). A node runs on one device and writes only buffers of devices sharing that device's
 * memory (the device itself, or any CPU device for a CPU device: starfold_topology_same_memory()).
 * Reading a buffer placed on a device of another memory is a transfer over the link between the two
 * devices: that is how a graph's edges follow the interconnect. Semantics, with spans = (buffer,
 * offset, count) in elements:
 *   COPY, PACK, UNPACK: concat(src spans) -> concat(dst spans), equal totals. PACK is many->one,
 *                       UNPACK one->many, COPY one->one; the kernel is the same segmented copy.
 *   REDUCE: one or more dst spans; each dst[i] = op(src0[i], src1[i], ...) left to right, every span
 *           the same count. A dst may be exactly one of the src spans (accumulate in place); several
 *           dsts receive the same result (a reduce-and-broadcast in one pass over the data). With a
 *           divisor > 1 the result is divided as SCALE divides (MEAN in the same pass). A segmented
 *           REDUCE (nseg > 1) is nseg such reductions in one task, its spans segment after segment
 *           (src: nseg groups of nsrc/nseg, dst: nseg groups of ndst/nseg), each segment's spans of
 *           one count: a batch of small tensors reduced by one task straight from the caller's
 *           buffers, without packing them first.
 *   SCALE:  one src, one dst of the same count; dst[i] = src[i] / divisor (integers truncate). A SCALE
 *           reading integers may write float64 (TensorFlow's promoting integer MEAN): dst = (double)src / d.
 * The node's dtype is its sources' dtype; every span has it, except that converting SCALE's dst.
 *
 * Dependencies. starfold__graph_* builders infer them from the data, like StarPU's sequential consistency:
 * a read depends on earlier overlapping writes, a write on earlier overlapping reads and writes. So
 * nodes are always appended in a valid submission order and deps[] only names earlier nodes.
 * starfold__graph_add_dep() adds an ordering that the data does not imply.
 */
#ifndef STARFOLD_SRC_GRAPH_H
#define STARFOLD_SRC_GRAPH_H

#include <stdint.h>
#include <starfold/graph.h>

typedef enum starfold__buf_kind { SF_BUF_INPUT = 0, SF_BUF_OUTPUT, SF_BUF_TEMP } starfold__buf_kind_t;

/* Accesses of one length class of a buffer, for dependency inference (graph.c). */
struct starfold__hist;

/* One access recorded for dependency inference. */
typedef struct starfold__access {
    size_t node;
    size_t offset, count;
    int write;
} starfold__access_t;

typedef struct starfold__buffer {
    starfold__buf_kind_t kind;
    int device;               /* topology device */
    starfold_dtype_t dtype;
    size_t count;             /* elements */
    int slot;                 /* input/output slot; -1 for TEMP */
    size_t tensor;            /* tensor index for INPUT/OUTPUT; for TEMP the pack or tensor it serves */
    struct starfold__hist *hist;     /* builder bookkeeping: the accesses, by length class (graph.c) */
    int nhist;                       /* classes allocated */
} starfold__buffer_t;

typedef struct starfold__span {
    size_t buf;
    size_t offset;
    size_t count;
} starfold__span_t;

typedef struct starfold__node {
    starfold_task_kind_t kind;
    int device;
    starfold_dtype_t dtype;   /* of the sources (and destinations, but for a converting SCALE) */
    starfold_op_t op;         /* REDUCE only */
    uint32_t divisor;         /* SCALE, and REDUCE (1: none; > 1: MEAN fused, op SUM or MEAN), >= 1 */
    starfold__span_t *src;
    size_t nsrc;
    starfold__span_t *dst;
    size_t ndst;
    size_t nseg;              /* REDUCE: segments (>= 1) the spans come in; 1 for every other kind */
    size_t *deps;             /* earlier node indices, ascending, no duplicates */
    size_t ndeps, cap_deps;
    int tag;                  /* pack index (or tensor index when unpacked), -1 if none: for labels */
} starfold__node_t;

struct starfold_graph {
    starfold_topology_t topology;   /* a reference, dropped by starfold_graph_destroy */
    char *algorithm;
    starfold_collective_t kind;
    starfold_op_t op;
    int promote_integer_mean;       /* integer MEAN outputs are float64 */
    int num_inputs;
    int *input_devices;             /* [num_inputs] */
    int num_outputs;
    int *output_devices;            /* [num_outputs] */
    size_t num_tensors;
    starfold_tensor_desc_t *tensors;/* [num_tensors] */
    size_t *source_counts;          /* GATHER with the desc's source_counts: [num_inputs * num_tensors]; else NULL */
    size_t *input_buf;              /* [num_inputs * num_tensors] buffer index of each input */
    size_t *output_buf;             /* [num_outputs * num_tensors] */
    starfold__buffer_t *bufs;
    size_t nbufs, cap_bufs;
    starfold__node_t *nodes;
    size_t nnodes, cap_nodes;
    size_t nspans;                  /* task arguments so far, against STARFOLD_GRAPH_MAX_SPANS */
    int over_budget;                /* a task was refused: the graph would pass a limit of graph.h */
};

/*
 * A builder about to append at least @tasks tasks says so first: past STARFOLD_GRAPH_MAX_TASKS the
 * graph is marked over budget and STARFOLD_ERR_INVALID_ARGUMENT returned at once, before any is built
 * (add_node enforces the limit anyway; this only makes a hopeless collective fail fast). @tasks must
 * be a lower bound of what follows, never more.
 */
starfold_status_t starfold__graph_reserve(starfold_graph_t g, size_t tasks);

/*
 * Creates an empty graph for @desc (already validated) with its input and output buffers.
 * Takes a reference on @topology.
 */
starfold_status_t starfold__graph_create(starfold_topology_t topology, const char *algorithm,
                                  const starfold_collective_desc_t *desc, starfold_graph_t *out);

/* Pictures (export.c, traffic.c). "512 B", "4.0 KiB", "1.5 MiB", "2.0 GiB". */
void starfold__human_bytes(uint64_t bytes, char *s, size_t n);
/* "all-reduce (sum) of 8 replicas", "reduce (mean) of 4 replicas to 2 devices", "broadcast ...". */
void starfold__graph_describe(const struct starfold_graph *g, char *s, size_t n);
/* starfold_graph_render_mode(g, path, STARFOLD_DRAW_TRAFFIC): the caller checked @path's format. */
starfold_status_t starfold__graph_render_traffic(starfold_graph_t g, const char *path);

/* Elements of input (@slot, @tensor): a gather's source may hold its own count. */
static inline size_t starfold__source_count(const struct starfold_graph *g, int slot, size_t tensor)
{
    return g->source_counts ? g->source_counts[(size_t)slot * g->num_tensors + tensor] : g->tensors[tensor].count;
}

/* A gather's: where source @slot's block of @tensor starts in every output (the blocks before it). */
static inline size_t starfold__gather_offset(const struct starfold_graph *g, int slot, size_t tensor)
{
    size_t at = 0;
    for (int s = 0; s < slot; s++) at += starfold__source_count(g, s, tensor);
    return at;
}

static inline size_t starfold__graph_input(const struct starfold_graph *g, int slot, size_t tensor)
{
    return g->input_buf[(size_t)slot * g->num_tensors + tensor];
}

static inline size_t starfold__graph_output(const struct starfold_graph *g, int slot, size_t tensor)
{
    return g->output_buf[(size_t)slot * g->num_tensors + tensor];
}

static inline starfold__span_t starfold__whole(const struct starfold_graph *g, size_t buf)
{
    starfold__span_t s = { buf, 0, g->bufs[buf].count };
    return s;
}

static inline starfold__span_t starfold__span(size_t buf, size_t offset, size_t count)
{
    starfold__span_t s = { buf, offset, count };
    return s;
}

/* Adds a temporary of @count elements on @device; its index in *buf. @tag is kept for labels. */
starfold_status_t starfold__graph_add_temp(starfold_graph_t g, int device, starfold_dtype_t dtype, size_t count,
                                    int tag, size_t *buf);

/*
 * Appends a COPY, PACK or UNPACK node (per @kind). The node runs on the device of the dst buffers
 * (all must be on one device). Its index in *node (may be NULL).
 */
starfold_status_t starfold__graph_copy(starfold_graph_t g, starfold_task_kind_t kind, const starfold__span_t *src,
                                size_t nsrc, const starfold__span_t *dst, size_t ndst, int tag, size_t *node);

/* Appends a REDUCE node: dst = op(src[0], ..., src[nsrc-1]); runs on dst's device. */
starfold_status_t starfold__graph_reduce(starfold_graph_t g, starfold_op_t op, const starfold__span_t *src, size_t nsrc,
                                  starfold__span_t dst, int tag, size_t *node);

/*
 * Appends a REDUCE node writing the result, divided by @divisor when it is > 1 (MEAN fused into the
 * reduction; op SUM or MEAN only), into each of @ndst destinations (on devices sharing one memory);
 * runs on the first destination's device.
 */
starfold_status_t starfold__graph_reduce_n(starfold_graph_t g, starfold_op_t op, const starfold__span_t *src, size_t nsrc,
                                    const starfold__span_t *dst, size_t ndst, uint32_t divisor, int tag, size_t *node);

/* As starfold__graph_reduce_n(), run on @device, which must share memory with every destination's device. */
starfold_status_t starfold__graph_reduce_on(starfold_graph_t g, int device, starfold_op_t op, const starfold__span_t *src,
                                     size_t nsrc, const starfold__span_t *dst, size_t ndst, uint32_t divisor, int tag,
                                     size_t *node);

/*
 * As starfold__graph_reduce_on(), for @nseg segments at once: src[q * nsrc + k] is source k of segment q,
 * dst[q * ndst + d] destination d of segment q; each segment's spans one count (segments may differ).
 */
starfold_status_t starfold__graph_reduce_segments(starfold_graph_t g, int device, starfold_op_t op, const starfold__span_t *src,
                                           size_t nsrc, const starfold__span_t *dst, size_t ndst, size_t nseg,
                                           uint32_t divisor, int tag, size_t *node);

/*
 * The last step of a reduction: dst = op(src[0..nsrc)) / @divisor, run on @device (dst's). When dst is a
 * promoted integer MEAN (float64 out of integers in), the sum goes to a temporary of the sources' dtype
 * on @device and a SCALE divides it into dst; otherwise one REDUCE does both. *node (may be NULL) = the
 * REDUCE, the node that reads every source.
 */
starfold_status_t starfold__graph_reduce_final(starfold_graph_t g, starfold_op_t op, int device, const starfold__span_t *src,
                                        size_t nsrc, starfold__span_t dst, uint32_t divisor, int tag, size_t *node);

/* Appends a SCALE node: dst = src / divisor; runs on dst's device. */
starfold_status_t starfold__graph_scale(starfold_graph_t g, starfold__span_t src, starfold__span_t dst, uint32_t divisor, int tag,
                                 size_t *node);

/* Orders node @before ahead of node @after (before < after). */
starfold_status_t starfold__graph_add_dep(starfold_graph_t g, size_t before, size_t after);

/* Output dtype of a tensor of dtype @dt in @g: float64 for a promoted integer MEAN. */
starfold_dtype_t starfold__graph_out_dtype(const struct starfold_graph *g, starfold_dtype_t dt);

/* Frees the builder's bookkeeping (access histories) once an algorithm is done. */
void starfold__graph_seal(starfold_graph_t g);

/* Bytes of a span. */
static inline uint64_t starfold__span_bytes(const struct starfold_graph *g, starfold__span_t s)
{
    return (uint64_t)s.count * starfold_dtype_size(g->bufs[s.buf].dtype);
}

#endif /* STARFOLD_SRC_GRAPH_H */
