/*
 * The algorithm registry. Each algorithm is one file that appends nodes to a graph whose inputs and
 * outputs already exist; it never touches the runtime. starfold_graph_compile() validates the
 * collective generically, creates the graph, calls build(), seals it and checks it.
 */
#ifndef STARFOLD_SRC_ALGORITHMS_H
#define STARFOLD_SRC_ALGORITHMS_H

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
starfold_status_t starfold__build_reduce_to_one(starfold_graph_t g, int reduce_device);

/* Output slot whose device is @device, or -1. */
int starfold__graph_output_slot_on(const struct starfold_graph *g, int device);

/* A reduce whose destinations are its sources as a set (STARFOLD__SUPPORTS_ALL_REDUCE). */
int starfold__graph_is_all_reduce(const struct starfold_graph *g);

/*
 * Shared steps of the all-reduce algorithms (allreduce_packs.c).
 *
 * starfold__allreduce_prepare(): for an all-reduce, fills out_slot[p] (the output slot on replica p's
 * device) and the pack plan (bytes_per_pack, else num_packs).
 */
starfold_status_t starfold__allreduce_prepare(starfold_graph_t g, const starfold_algo_options_t *options, int *out_slot,
                                       starfold__pack_plan_t *plan);
/* A pack that is exactly one whole tensor is reduced in place of that tensor: no pack/unpack copies. */
int starfold__pack_is_tensor(const struct starfold_graph *g, const starfold__pack_t *pk);
/* Replica p's data of pack @pk: its input tensor, or a temporary on its device filled by a PACK task. */
starfold_status_t starfold__pack_gather(starfold_graph_t g, const starfold__pack_t *pk, int p,
                                 starfold__span_t *have);
/* Where replica p's result of pack @pk is built: its output tensor, or a temporary (output dtype). */
starfold_status_t starfold__pack_result(starfold_graph_t g, const starfold__pack_t *pk, int p,
                                 int out_slot, starfold__span_t *dest);
/* Writes the reduced pack @from into output slot @out_slot: a COPY, an UNPACK, or nothing when @from
 * already is that output. */
starfold_status_t starfold__pack_scatter(starfold_graph_t g, const starfold__pack_t *pk, int out_slot,
                                  starfold__span_t from);

#endif /* STARFOLD_SRC_ALGORITHMS_H */
