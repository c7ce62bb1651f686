/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/**
 * @file starfold/model.h
 * @brief A cost model of compiled graphs: predicted time, algorithm and bus bandwidth, bottleneck link.
 *
 * The model replays a graph on its topology with no runtime and no GPU:
 *  - a task starts when its dependencies are done; its reads of other devices' buffers are transfers,
 *    each taking the link's latency (alpha) and then flowing over the fastest direct link (or the best
 *    two-link path) at the link's bandwidth, shared equally by the transfers active on the same
 *    directed link at the same moment (beta, with contention);
 *  - then its kernel runs on the device's worker, one kernel at a time per device: StarPU's per-task
 *    overhead plus the bytes the kernel reads and writes at the device's memory bandwidth; CPU devices
 *    (in host memory) share one memory bandwidth among the kernels running at once, and may share
 *    workers (cpu_workers).
 * Speeds are reported as nccl-tests does: algbw = S / t with S the bytes of one replica's tensors;
 * busbw = algbw x 2(n-1)/n for an all-reduce, x 1 for a reduce or a broadcast.
 */
#ifndef STARFOLD_MODEL_H
#define STARFOLD_MODEL_H

#include <stdint.h>
#include <starfold/common.h>
#include <starfold/topology.h>
#include <starfold/graph.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * starfold_cost_params_t, the machine parameters the links do not carry, and
 * starfold_cost_params_init() are declared in <starfold/topology.h>: a topology may carry them
 * (starfold_topology_set_cost_params(), a calibrated context's topology does).
 */

/** @brief What starfold_graph_simulate() predicts. */
typedef struct starfold_prediction {
    double time_us;                 /**< from the first task's start to the last task's end */
    uint64_t bytes;                 /**< S: bytes of one replica's tensors (a gather: of one destination's
                                         outputs, every source's tensors, as nccl-tests' all_gather_perf counts) */
    double algbw_GBps;              /**< S / time */
    double busbw_GBps;              /**< algbw scaled as nccl-tests does */
    int bottleneck_from;            /**< busiest directed link: source device, -1 when nothing moves */
    int bottleneck_to;              /**< busiest directed link: destination device */
    starfold_link_kind_t bottleneck_kind; /**< its kind */
    double bottleneck_busy_us;      /**< how long it carried data */
    double bottleneck_GBps;         /**< its bandwidth per direction */
    uint64_t bottleneck_bytes;      /**< bytes it carried */
} starfold_prediction_t;

/**
 * @brief Predicts the run time of @p graph on its topology.
 * @param [in]  graph a compiled graph
 * @param [in]  params NULL for the topology's (starfold_topology_cost_params(): its calibration if it
 *              carries one, else the defaults)
 * @param [out] prediction the result
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL or non-positive parameters.
 */
STARFOLD_API starfold_status_t starfold_graph_simulate(starfold_graph_t graph, const starfold_cost_params_t *params,
                                                       starfold_prediction_t *prediction);

/**
 * @brief A data-parallel backward pass whose gradients are reduced in buckets as they complete.
 *
 * The layers are listed in the order the backward pass computes them (the last layer of the model
 * first); each takes layer_us[l] on every device, one after the other. Bucket b is a compiled
 * reduction (typically an all-reduce of the gradients of consecutive layers) that may start once
 * layer ready_after[b] is computed on every device: the way PyTorch DDP and Horovod overlap the
 * gradient reduction with the rest of the backward pass.
 */
typedef struct starfold_backward_pass {
    int num_layers;                   /**< >= 1 */
    const double *layer_us;           /**< [num_layers] compute time of each layer on every device, >= 0 */
    int num_buckets;                  /**< >= 1 */
    const starfold_graph_t *buckets;  /**< [num_buckets] graphs over the same topology and source devices */
    const int *ready_after;           /**< [num_buckets] the layer after which each bucket's gradients are complete */
} starfold_backward_pass_t;

/** @brief What starfold_simulate_backward_pass() predicts. */
typedef struct starfold_overlap_prediction {
    double compute_us;  /**< the backward pass alone */
    double reduce_us;   /**< the buckets alone, every gradient ready at once */
    double step_us;     /**< both, each bucket starting when its gradients are complete */
    double vs_sum;      /**< step_us / (compute_us + reduce_us): 1 = no overlap at all */
    double vs_max;      /**< step_us / max(compute_us, reduce_us): 1 = perfect overlap */
} starfold_overlap_prediction_t;

/**
 * @brief Predicts the step time of a backward pass overlapped with its bucketed reductions.
 *
 * One replay of compute tasks and the buckets' tasks together: the compute tasks run on a second
 * worker of each device, beside the reductions' kernels on its first (as a collective library's
 * stream runs beside the compute stream; with StarPU, two workers per device), transfers run beside
 * them on the links; a worker picks, among its ready tasks, the one with the longest chain of tasks
 * after it. Also replays each side alone, for the ratios.
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL or inconsistent arguments (buckets over different
 *         devices, a ready layer out of range, a negative time).
 */
STARFOLD_API starfold_status_t starfold_simulate_backward_pass(const starfold_backward_pass_t *pass,
                                                                const starfold_cost_params_t *params,
                                                                starfold_overlap_prediction_t *prediction);

#ifdef __cplusplus
}
#endif

#endif /* STARFOLD_MODEL_H */
