/*
 * The algorithm registry. Each algorithm is one file that appends nodes to a graph whose inputs and
 * outputs already exist; it never touches the runtime. starfold_graph_compile() validates the
 * collective generically, creates the graph, calls build(), seals it and checks it.
 */
#ifndef STARFOLD_SRC_ALGORITHMS_H
#define STARFOLD_SRC_ALGORITHMS_H

#include "graph/graph.h"
#include "algorithms/pack.h"

typedef struct starfold__algorithm {
    const char *name;
    const char *description;
    /* Appends the algorithm's nodes to @g. Errors are reported with starfold__error(). */
    starfold_status_t (*build)(starfold_graph_t g, const starfold_algo_options_t *options);
} starfold__algorithm_t;

extern const starfold__algorithm_t starfold__algo_reduce_to_one;
extern const starfold__algorithm_t starfold__algo_hierarchical_copy;
extern const starfold__algorithm_t starfold__algo_ring;
extern const starfold__algorithm_t starfold__algo_halving_doubling;
extern const starfold__algorithm_t starfold__algo_trees;
extern const starfold__algorithm_t starfold__algo_one_pass;

/* Registry lookup by name; NULL when unknown. */
const starfold__algorithm_t *starfold__algorithm_find(const char *name);

/*
 * Building blocks other algorithms fall back on (defined in algo_reduce_to_one.c):
 * TensorFlow's simple_broadcast (the source copied straight to every destination) and
 * ReductionToOneDevice's reduce (every tensor reduced on @reduce_device, then copied out).
 */
starfold_status_t starfold__build_simple_broadcast(starfold_graph_t g);
starfold_status_t starfold__build_reduce_to_one(starfold_graph_t g, int reduce_device);

/* Output slot whose device is @device, or -1. */
int starfold__graph_output_slot_on(const struct starfold_graph *g, int device);

/*
 * Shared steps of the all-reduce algorithms (algo_common.c).
 *
 * starfold__allreduce_prepare(): rejects num_packs < 0 ("<algorithm> requires num_packs >= 0"), builds the
 * simple broadcast for a broadcast and reduce-to-one on the first destination when the destinations
 * are not the sources (*done = 1 then); otherwise fills out_slot[p] (the output slot on replica p's
 * device) and the pack plan (bytes_per_pack, else num_packs), *done = 0.
 */
starfold_status_t starfold__allreduce_prepare(starfold_graph_t g, const starfold_algo_options_t *options, int *out_slot,
                                       starfold__pack_plan_t *plan, int *done);
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
