/*
 * Data-parallel linear regression by SGD with MirroredStrategy: the training job shared by
 * examples/train_linear_regression and `starfold demo`. Public API only (plus StarPU for this
 * program's own codelets, which run on CPU workers and on OpenCL devices).
 */
#ifndef STARFOLD_EXAMPLES_LINREG_H
#define STARFOLD_EXAMPLES_LINREG_H

#include <stdio.h>
#include <starfold.h>

typedef struct linreg_result {
    int replicas;
    float first_loss, last_loss;
    int loss_went_down;       /* last < first / 100 */
    int identical;            /* every replica's parameters bit-identical */
    char algorithm[64];       /* the strategy's cross-device ops */
} linreg_result_t;

/*
 * Trains for @steps steps over every device of @ctx (topology @topo, NULL = the context's), printing
 * the loss on @info. When @grad_graph is not NULL it receives the graph of one step's gradient
 * all-reduce (compiled as the strategy compiles it), owned by the caller.
 */
starfold_status_t linreg_train(starfold_context_t ctx, starfold_topology_t topo, int steps, FILE *info,
                               linreg_result_t *result, starfold_graph_t *grad_graph);

#endif /* STARFOLD_EXAMPLES_LINREG_H */
