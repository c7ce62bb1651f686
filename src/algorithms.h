/*
 * The algorithm registry. Each algorithm is one file that appends nodes to a graph whose inputs and
 * outputs already exist; it never touches the runtime. starfold_graph_compile() validates the
 * collective generically, creates the graph, calls build(), seals it and checks it.
 */
#ifndef STARFOLD_SRC_ALGORITHMS_H
#define STARFOLD_SRC_ALGORITHMS_H

#include "graph.h"

typedef struct sf_algorithm {
    const char *name;
    const char *description;
    /* Appends the algorithm's nodes to @g. Errors are reported with sf_error(). */
    starfold_status_t (*build)(starfold_graph_t g, const starfold_algo_options_t *options);
} sf_algorithm_t;

extern const sf_algorithm_t sf_algo_reduce_to_one;
extern const sf_algorithm_t sf_algo_hierarchical_copy;
extern const sf_algorithm_t sf_algo_ring;
extern const sf_algorithm_t sf_algo_halving_doubling;

/* Registry lookup by name; NULL when unknown. */
const sf_algorithm_t *sf_algorithm_find(const char *name);

/*
 * Building blocks other algorithms fall back on (defined in algo_reduce_to_one.c):
 * TensorFlow's simple_broadcast (the source copied straight to every destination) and
 * ReductionToOneDevice's reduce (every tensor reduced on @reduce_device, then copied out).
 */
starfold_status_t sf_build_simple_broadcast(starfold_graph_t g);
starfold_status_t sf_build_reduce_to_one(starfold_graph_t g, int reduce_device);

/* Output slot whose device is @device, or -1. */
int sf_graph_output_slot_on(const struct starfold_graph *g, int device);

#endif /* STARFOLD_SRC_ALGORITHMS_H */
