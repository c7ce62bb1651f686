/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The algorithm registry. Each algorithm is one file that appends nodes to a graph whose inputs and
 * outputs already exist; it never touches the runtime. starfold_graph_compile() validates the
 * collective generically, creates the graph, calls build(), seals it and checks it.
 */
#ifndef STARFOLD_SRC_ALGORITHMS_H
#define STARFOLD_SRC_ALGORITHMS_H

#include "base/common.h"
#include "graph/graph.h"
#include "algorithms/pack.h"

/*
 * Collectives an algorithm has a pattern of its own for (starfold__algorithm_t.supports). compile.c
 * hands build() only those; the others get TensorFlow's fallbacks, the same whatever the algorithm: a
 * broadcast is the simple broadcast, a reduce to other devices than its sources is reduce-to-one on
 * the first destination.
 */
#define STARFOLD__SUPPORTS_ALL_REDUCE 1u /* an all-reduce pattern: a reduce whose destinations are its
                                          * sources as a set (the distribute layer's all-reduce path) */
#define STARFOLD__SUPPORTS_REDUCE 2u     /* a reduce to any destinations, the sources included */
#define STARFOLD__SUPPORTS_BROADCAST 4u
#define STARFOLD__SUPPORTS_ALL_GATHER 8u /* a gather whose destinations are its sources as a set */

/*
 * One row of the registry: what an algorithm is, besides its builder. compile.c reads these
 * properties and nothing else about an algorithm; no code compares algorithm names.
 */
typedef struct starfold__algorithm {
    const char *name;
    const char *description;
    unsigned supports;   /* STARFOLD__SUPPORTS_* */
    unsigned options;    /* STARFOLD_ALGO_OPTION_*: the options build() reads (compile.c's options rule) */
    int max_rings;       /* with STARFOLD_ALGO_OPTION_NUM_RINGS: the most rings num_rings may ask for */
    int shared_memory;   /* 1: every device in one memory, else STARFOLD_ERR_NOT_SUPPORTED (compile.c) */
    int is_auto;         /* 1: builds nothing (build = NULL); compile.c compiles every other algorithm
                          * with the same options and keeps the graph the cost model predicts fastest */
    /*
     * Appends the algorithm's nodes to @g, a collective it supports, on devices it can use, with
     * options compile.c has checked. Errors are reported with starfold__error().
     */
    starfold_status_t (*build)(starfold_graph_t g, const starfold_algo_options_t *options);
} starfold__algorithm_t;

extern const starfold__algorithm_t starfold__algo_reduce_to_one;
extern const starfold__algorithm_t starfold__algo_hierarchical_copy;
extern const starfold__algorithm_t starfold__algo_ring;
extern const starfold__algorithm_t starfold__algo_halving_doubling;
extern const starfold__algorithm_t starfold__algo_trees;
extern const starfold__algorithm_t starfold__algo_one_pass;
extern const starfold__algorithm_t starfold__algo_hierarchical;
extern const starfold__algorithm_t starfold__algo_leader;

/* Registry row @index (0 .. starfold_algorithm_count() - 1), NULL out of range. */
const starfold__algorithm_t *starfold__algorithm_at(int index);

/*
 * The registry row named @name (starfold_algorithm_find(): case-insensitive); when there is none,
 * records "unknown algorithm '<name>' (known: ...)" and returns STARFOLD_ERR_NOT_FOUND.
 */
starfold_status_t starfold__algorithm_lookup(const char *name, const starfold__algorithm_t **algorithm);

/*
 * Building blocks other algorithms fall back on (defined in reduce_to_one.c):
 * TensorFlow's simple_broadcast (the source copied straight to every destination) and
 * ReductionToOneDevice's reduce (every tensor reduced on @reduce_device, then copied out).
 */
starfold_status_t starfold__build_simple_broadcast(starfold_graph_t g);
/* TensorFlow's gather: every source's tensor copied straight into its block of every destination. */
starfold_status_t starfold__build_direct_gather(starfold_graph_t g);
/* A gather's copy out of a source: a SCALE by num_sources for MEAN (more than one source), else a COPY. */
starfold_status_t starfold__gather_first_copy(starfold_graph_t g, starfold__span_t src, starfold__span_t dst, int tag);
starfold_status_t starfold__build_reduce_to_one(starfold_graph_t g, int reduce_device);

/*
 * A variable's update after @first, as one graph (update.c has the picture): @first (one tensor, a
 * reduce or a broadcast onto the variable's devices; its outputs become temporaries), then on each of
 * its destinations d one task: assign_add and assign_sub read copy d of the variable from input
 * S + d (S = @first's sources) and write it as output d (the caller binds both to the copy: in
 * place); assign writes @first's result divided by @divisor (> 1 for assign only). @first NULL: the
 * value is input d on each of the @n @devices already (then @topology and @tensor describe it;
 * with @first they come from it). Checked when STARFOLD_CHECK_GRAPHS asks.
 */
starfold_status_t starfold__graph_then_update(starfold_topology_t topology, starfold_graph_t first, int n,
                                              const int *devices, starfold_tensor_desc_t tensor,
                                              starfold__update_t update, uint32_t divisor, starfold_graph_t *out);

/* Whether STARFOLD_CHECK_GRAPHS asks for the invariant checker on every graph made (read once). */
int starfold__check_graphs_wanted(void);

/* Output slot whose device is @device, or -1. */
int starfold__graph_output_slot_on(const struct starfold_graph *g, int device);

/* A reduce whose destinations are its sources as a set (STARFOLD__SUPPORTS_ALL_REDUCE). */
int starfold__graph_is_all_reduce(const struct starfold_graph *g);
/* A gather whose destinations are its sources as a set (STARFOLD__SUPPORTS_ALL_GATHER). */
int starfold__graph_is_all_gather(const struct starfold_graph *g);

/*
 * The all-reduce driver (allreduce_packs.c), shared by hierarchical-copy, ring, halving-doubling and
 * trees, which each supply only their pattern: the reduction of one pack.
 *
 * The driver cuts the tensors into packs (bytes_per_pack, else num_packs; pack.h), and for each pack:
 *
 *   inputs of replica p ---pack (or nothing: a pack that is one whole tensor)---> have[p]
 *   have[0..n-1] ---the pattern's reduce_pack()---> result[p] on every replica p
 *   result[p] ---unpack (or copy, or nothing when it is the output)---> outputs of replica p
 *
 * Unless the pattern places results itself, result[p] is set before reduce_pack() to where replica p's
 * result goes: its output tensor for a pack that is one whole tensor, else a temporary of the output
 * dtype on its device. With one replica there is nothing to exchange: unless the pattern reduces a
 * single replica itself, the driver copies the input into the result (divides by 1 for MEAN).
 */
typedef struct starfold__allreduce {
    starfold_graph_t g;
    const starfold_algo_options_t *options;
    int n;                         /* replicas: the graph's inputs, also its outputs */
    starfold_op_t acc;             /* the op partial results are combined with (SUM for MEAN) */
    const starfold__pack_t *pack;  /* the pack being reduced */
    int tag;                       /* its index, for the tasks' labels */
    starfold__span_t *have;        /* [n] replica p's data of the pack */
    starfold__span_t *result;      /* [n] replica p's result of the pack */
} starfold__allreduce_t;

typedef struct starfold__allreduce_pattern {
    /* Reduces ar->pack: reads ar->have[p] and leaves replica p's result in ar->result[p]. */
    starfold_status_t (*reduce_pack)(starfold__allreduce_t *ar, void *self);
    int places_results;  /* 1: reduce_pack() points result[p] at its own buffers (the driver places none) */
    int reduces_single;  /* 1: reduce_pack() builds the one-replica case too */
} starfold__allreduce_pattern_t;

/* Builds the all-reduce of @g with @pattern; @self is handed to every reduce_pack() call. */
starfold_status_t starfold__allreduce_packs(starfold_graph_t g, const starfold_algo_options_t *options,
                                     const starfold__allreduce_pattern_t *pattern, void *self);

/*
 * The replicas grouped by node (nodes.c): the topology's socket of each one's device, a machine on a
 * cluster or rank topology. Node k's members are member[first[k] .. first[k + 1]), in position order;
 * nodes are numbered by their lowest position.
 */
typedef struct starfold__nodes {
    int count;
    int first[STARFOLD_MAX_DEVICES + 1];
    int member[STARFOLD_MAX_DEVICES];
} starfold__nodes_t;

void starfold__graph_nodes(const struct starfold_graph *g, starfold__nodes_t *nodes);
/* The all-reduce driver with @pattern, its reduce_pack() handed the graph's nodes as self. */
starfold_status_t starfold__allreduce_by_nodes(starfold_graph_t g, const starfold_algo_options_t *options,
                                               const starfold__allreduce_pattern_t *pattern);

/*
 * One chunked ring all-reduce (ring.c's picture) over @n positions, for builders that run a ring over
 * some of the replicas (ring.c over all of them, hierarchical.c over one member of each node).
 * Position p's operand is have[p] and its result result[p]; the pass covers elements [lo, lo + count)
 * of both (offsets relative to each span's own offset). Temporaries go on devices[p]. The total is
 * divided by @divisor (> 1 only for MEAN) in the last reduction, or by a SCALE into a promoted result
 * (integers in, float64 out). Every position receives the same bits.
 */
typedef struct starfold__ring_pass {
    starfold_graph_t g;
    starfold_op_t acc;              /* the op partial results are combined with (SUM for MEAN) */
    int n;                          /* positions on the ring */
    const int *order;               /* [n] the positions in ring order */
    const int *devices;             /* [n] device of each position */
    const starfold__span_t *have;   /* [n] operand of each position (the graph's pack dtype) */
    const starfold__span_t *result; /* [n] result of each position (the output dtype) */
    uint32_t divisor;               /* 1, or the MEAN divisor */
    int tag;                        /* for the tasks' labels */
    size_t *chain;                  /* [n x 2n] the previous round's hops (ring.c's wavefront), or NULL */
} starfold__ring_pass_t;

starfold_status_t starfold__ring_pass(const starfold__ring_pass_t *rp, size_t lo, size_t count);

/*
 * The first element of part @k of @total elements cut into @parts near-equal parts: floor(total * k /
 * parts), computed without the product (which wraps for tensors of 2^47 elements cut into 2^17
 * chunks). Needs parts * parts to fit in size_t; the builders' reservations keep parts below 2^18.
 */
static inline size_t starfold__part_start(size_t total, size_t k, size_t parts)
{
    return total / parts * k + total % parts * k / parts;
}

#endif /* STARFOLD_SRC_ALGORITHMS_H */
