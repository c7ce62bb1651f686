/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
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
    int first_replica;        /* in: the global id of this process's first replica (0 but across processes) */
    float theta[5];           /* out: the learned parameters (local replica 0's) */
} linreg_result_t;

/*
 * Trains for @steps steps over every device of @ctx (topology @topo, NULL = the context's), printing
 * the loss on @info. When @grad_graph is not NULL it receives the graph of one step's gradient
 * all-reduce (compiled as the strategy compiles it), owned by the caller.
 */
starfold_status_t linreg_train(starfold_context_t ctx, starfold_topology_t topo, int steps, FILE *info,
                               linreg_result_t *result, starfold_graph_t *grad_graph);

/*
 * The same training with a strategy the caller made (MultiWorkerMirroredStrategy across processes:
 * each process trains its replicas' shards; set result->first_replica to this process's first global
 * replica id before the call, the rest of *result is filled).
 */
starfold_status_t linreg_train_strategy(starfold_strategy_t strategy, int steps, FILE *info, linreg_result_t *result);

#endif /* STARFOLD_EXAMPLES_LINREG_H */
