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

/* Registry lookup by name; NULL when unknown. */
const sf_algorithm_t *sf_algorithm_find(const char *name);

#endif /* STARFOLD_SRC_ALGORITHMS_H */
