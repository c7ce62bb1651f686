/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/**
 * @file starfold/mpi.h
 * @brief Process groups: starfold across MPI ranks, over StarPU-MPI (in libstarfold when it is built
 *        with MPI; `pkg-config starfold` then carries MPI's flags).
 *
 * A group is the set of processes that reduce together, as an MPI communicator is: every rank of the
 * communicator creates it, collectively, over its own starfold context (its local devices), and
 * destroys it, collectively, before its context. The group knows each rank's node (the ranks that
 * share memory and a network namespace, or a forced number of consecutive ranks per node so that one
 * machine can play several nodes in tests) and each rank's device count; collectives across ranks
 * are built on it.
 *
 * Initialisation order, as StarPU-MPI needs it:
 *
 *     MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);   the caller's
 *     starfold_context_create(&copt, &ctx);                            starts StarPU
 *     starfold_group_create(ctx, MPI_COMM_WORLD, &gopt, &group);       starts StarPU-MPI (first group)
 *     ...
 *     starfold_group_destroy(group);                                   stops StarPU-MPI (last group)
 *     starfold_context_destroy(ctx);
 *     MPI_Finalize();
 *
 * The group duplicates the communicator twice: one for StarPU-MPI's transfers, one for starfold's own
 * agreement between ranks, so neither ever matches a message of the application's. Both return MPI
 * errors instead of aborting (MPI_ERRORS_RETURN).
 *
 * Errors are collective: a call that fails because of one rank's arguments fails on every rank, with
 * the same status and a message naming the rank, so that no rank waits for another that gave up.
 *
 * This header includes <mpi.h>; <starfold.h> does not include it (as <starpu.h> leaves <starpu_mpi.h>
 * out), so programs without MPI are unaffected.
 */
#ifndef STARFOLD_MPI_H
#define STARFOLD_MPI_H

#include <mpi.h>
#include <starfold/common.h>
#include <starfold/exec.h>
#include <starfold/distribute.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Opaque process group. */
typedef struct starfold_group *starfold_group_t;

/** @brief How a group is made. Initialise with starfold_group_options_init(). */
typedef struct starfold_group_options {
    /**
     * 0 (default): a node is the set of ranks that share memory (MPI_Comm_split_type with
     * MPI_COMM_TYPE_SHARED) and a network namespace (on Linux, /proc/self/ns/net): ranks in network
     * namespaces of their own, as tests/netns/cluster.sh runs them, are nodes that reach each other
     * only over their links, though they share the machine's memory. k > 0: ranks 0..k-1 are node 0,
     * k..2k-1 node 1, and so on, whatever the machines (one machine playing several nodes). Every rank
     * must give the same value.
     */
    int ranks_per_node;
    /**
     * 0 (default): starfold starts StarPU-MPI with the first group of the process (over a duplicate of
     * its communicator) and stops it with the last. 1: the application started StarPU-MPI itself
     * (starpu_mpi_init_conf() or similar) and stops it itself.
     */
    int starpu_mpi_started_by_caller;
    /**
     * How long a collective waits for the other ranks to join it before failing with
     * ::STARFOLD_ERR_TIMEOUT (on every rank that waits): 0 (default) or infinity = no limit.
     * After a timeout the group is broken (see starfold_group_all_reduce()). It bounds
     * starfold_group_create() too: each of its exchanges, and the measure of each link.
     */
    double timeout_seconds;
    /**
     * After this long waiting for other ranks, a collective prints once on stderr which ranks it
     * is waiting for (Horovod's stall warning). Default 60; 0 = never.
     */
    double stall_warning_seconds;
    /**
     * The links between ranks that graphs across ranks are compiled on (starfold_group_rank_topology(),
     * starfold_group_cluster_topology()): bandwidth per direction in GB/s (1e9 B/s) and latency in
     * microseconds, between nodes (network_*) and between ranks of one node (shm_*). 0 (default):
     * measured at creation by a short ping-pong on the group's communicator between rank 0 and one
     * rank of another node (network) and one rank of its own node (shm), well under half a second,
     * and broadcast from rank 0 so that every rank holds the same values; a kind no pair of ranks
     * has keeps starfold_topology_ranks()'s default. A value given (> 0) skips its measurement; it
     * must be in the topology's range (::STARFOLD_LINK_BANDWIDTH_MIN_GBPS ..
     * ::STARFOLD_LINK_BANDWIDTH_MAX_GBPS, latency up to ::STARFOLD_LINK_LATENCY_MAX_US) and the same on
     * every rank. With ranks_per_node forced on one machine the "network" is loopback shared memory,
     * and that is what is measured.
     */
    double network_bandwidth_GBps;
    double network_latency_us;    /**< see network_bandwidth_GBps; 0 = measure */
    double shm_bandwidth_GBps;    /**< see network_bandwidth_GBps; 0 = measure */
    double shm_latency_us;        /**< see network_bandwidth_GBps; 0 = measure */
} starfold_group_options_t;

/** @brief Fills @p options with the defaults. */
STARFOLD_API void starfold_group_options_init(starfold_group_options_t *options);

/**
 * @brief Creates a group of every rank of @p comm, collectively: every rank of @p comm calls it.
 *
 * Learns each rank's node and device count, measures the links between ranks unless the options
 * give them (see starfold_group_options_t; every rank's StarPU workers are paused for the few
 * milliseconds that takes, so that idle workers spinning do not take the cores from the measure),
 * duplicates @p comm (twice) and starts StarPU-MPI on the first group of the process.
 * @param [in]  context this rank's context: its devices are the ones it brings to the group
 * @param [in]  comm an intra-communicator; MPI must be initialised with MPI_THREAD_MULTIPLE
 * @param [in]  options NULL for the defaults
 * @param [out] group the new group, owned by the caller (starfold_group_destroy())
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT on every rank for a NULL argument, MPI not initialised or
 *         below MPI_THREAD_MULTIPLE, MPI_COMM_NULL, a negative ranks_per_node, a link value that
 *         is negative or out of range, or ranks that give different options (the message names the
 *         first rank that differs);
 *         ::STARFOLD_ERR_TIMEOUT on every rank that waits when a rank does not come within the
 *         options' timeout_seconds (it never called this function, stopped, is gone, or its link is
 *         down), or a link's measure takes longer (a link too slow for it: give the link options);
 *         MPI then keeps a request of the creation pending on @p comm, which can no longer end
 *         cleanly: end the job (starfold_group_abort()). Without a timeout_seconds such a rank
 *         leaves the others waiting for ever. Three steps stay unbounded, all once every rank has
 *         agreed on the options: MPI_Comm_split_type (which MPI offers only blocking),
 *         StarPU-MPI's start, and the timing of a StarPU-MPI round trip after it;
 *         ::STARFOLD_ERR_RUNTIME when MPI or StarPU-MPI fails. Nothing is created on failure.
 */
STARFOLD_API starfold_status_t starfold_group_create(starfold_context_t context, MPI_Comm comm,
                                                     const starfold_group_options_t *options,
                                                     starfold_group_t *group);

/**
 * @brief Destroys a group, collectively (every rank of the group calls it, before destroying its
 *        context). Stops StarPU-MPI with the process's last group when starfold started it.
 *
 * The ranks meet first, for at most the group's timeout_seconds: a broken group, or one whose ranks
 * do not all come in time, is freed without waiting and leaves StarPU-MPI running (the job cannot
 * end cleanly then: starfold_group_abort()).
 * @param [in] group the group, or NULL (no-op)
 */
STARFOLD_API void starfold_group_destroy(starfold_group_t group);

/** @brief This process's rank in the group (its rank in the communicator); -1 for NULL. */
STARFOLD_API int starfold_group_rank(starfold_group_t group);
/** @brief Number of ranks; 0 for NULL. */
STARFOLD_API int starfold_group_size(starfold_group_t group);
/** @brief Number of nodes; 0 for NULL. */
STARFOLD_API int starfold_group_num_nodes(starfold_group_t group);
/**
 * @brief The node of @p rank: nodes are numbered 0.. in the order of their lowest rank.
 * @return the node, -1 for NULL or a rank out of range
 */
STARFOLD_API int starfold_group_node(starfold_group_t group, int rank);
/** @brief Devices of @p rank's context; -1 for NULL or a rank out of range. */
STARFOLD_API int starfold_group_num_devices(starfold_group_t group, int rank);
/** @brief This rank's context. */
STARFOLD_API starfold_context_t starfold_group_context(starfold_group_t group);

/**
 * @brief All-reduces a list of tensors over every replica of every rank: each rank's outputs get the
 *        op over all its devices' inputs and all other ranks' (MultiWorkerMirroredStrategy's
 *        collectives, at the low level). Collective: every rank calls it, with the same op and
 *        tensors, in the same order as its other collectives of the group.
 *
 * Before anything is submitted the ranks agree, point to point on the group's own communicator: each
 * tells every other its verdict on its own arguments, the collective's sequence number and a
 * fingerprint of (op, dtypes, sizes). A rank's bad arguments, or ranks asking for different
 * collectives, fail every rank with ::STARFOLD_ERR_INVALID_ARGUMENT and a message naming the rank and
 * what differed; no input or output changes. A rank that does not join within the group's
 * timeout_seconds fails every rank that waits with ::STARFOLD_ERR_TIMEOUT naming the missing ranks;
 * after the stall warning time the waiting ranks say on stderr whom they wait for. Once every rank
 * joined, a rank that stops before the collective completes (MPI's all-reduce, the sends and
 * receives of a graph lowering) is named the same way: each rank that keeps waiting tells the others
 * so (a message on the group's communicator after a quarter of the stall warning time, or of
 * timeout_seconds), and the warning and the timeout's message name the ranks that never did.
 *
 * After a timeout (or an MPI failure) the group is broken: every later call fails at once,
 * starfold_group_destroy() does not wait for the other ranks, and the job cannot reduce any more:
 * MPI offers no way to recover the missing rank (Open MPI 4 has no ULFM). End the job:
 * starfold_group_abort(), or let the batch scheduler do it; do not call MPI_Finalize() while a rank
 * is missing (it waits for it).
 *
 * Lowering: this rank's devices reduce to leader vectors on device 0 (a graph; one vector per dtype
 * holding all the tensors of that dtype one after another, a fusion buffer), one StarPU task per
 * dtype calls MPI's all-reduce on it across ranks on a CPU worker (so StarPU needs one), and a graph
 * copies the results to every local output. With the MPI lowering, when device 0's outputs of each
 * dtype are one run of one vector, MPI's all-reduce writes them itself (from the leader) and the
 * graph copies them to the other devices only (the relay). With one device on this rank and the MPI
 * lowering, when each dtype's inputs are one run of one vector and its outputs one run of another
 * (or the same, in place), there is nothing to reduce locally: MPI's all-reduce reads the inputs and
 * writes the outputs itself, no leader, no copy (the direct path); when they are not (each tensor its
 * own vector, as a StarPU application registers its data), one task per dtype packs every input
 * into a staging buffer, calls MPI's all-reduce and unpacks into the outputs (the packed path: a
 * task over all the handles, not a copy task per tensor each way). Each path makes the same MPI calls
 * per dtype on every rank: the dtype's tensors cut into pieces at tensor edges, a tensor of a piece
 * or more a call of its own, the smaller ones together up to a piece (the piece follows from the
 * measured links, a few hundred KiB to a few MiB; the environment variable STARFOLD_MPI_PIECE_BYTES,
 * the same on every rank, sets it, 0 for one call per dtype). All of them are in flight at once, and
 * the packed path packs piece k + 1 while MPI reduces piece k and sends a tensor of its own call
 * straight from its input into its output, as Horovod sends large tensors unfused. MEAN divides by
 * the number of replicas of all ranks (integers truncating, as on one process). Returns when the
 * outputs are written. After a timeout the outputs are as they were, except those MPI's own
 * all-reduce writes (the direct path's, the relay's device 0's, the packed path's tensors of a call
 * of their own): a rank lost during it can leave them partly written,
 * as an MPI_Allreduce would; and since MPI cannot cancel a collective, the abandoned one may go on
 * writing them (if a late rank completes it) until the job ends, which it must anyway
 * (starfold_group_abort()).
 * @param [in] group the group
 * @param [in] op the reduce operation
 * @param [in] num_tensors >= 1
 * @param [in] tensors their types and sizes (the same on every rank)
 * @param [in] inputs this rank's replicas: num_devices x num_tensors handles, device-major as
 *                    starfold_submit() takes them (device d of the context holds slot d)
 * @param [in] outputs the same layout; may be the inputs (in place)
 * @return ::STARFOLD_OK on every rank, or the same error on every rank that took part:
 *         ::STARFOLD_ERR_INVALID_ARGUMENT, ::STARFOLD_ERR_TIMEOUT, ::STARFOLD_ERR_NOT_SUPPORTED (no CPU
 *         worker for the MPI step), ::STARFOLD_ERR_RUNTIME (MPI or StarPU failed; a broken group).
 */
STARFOLD_API starfold_status_t starfold_group_all_reduce(starfold_group_t group, starfold_op_t op, size_t num_tensors,
                                                         const starfold_tensor_desc_t *tensors,
                                                         const starpu_data_handle_t *inputs,
                                                         const starpu_data_handle_t *outputs);

/**
 * @brief MPI_Allgatherv for StarPU vectors: every rank's @p input, one after another in rank order,
 *        in a new vector on this rank's device 0, on every rank. Collective.
 *
 *     rank 0: [a0 a1]   rank 1: (none)   rank 2: [c0 c1 c2]   ->  every rank: [a0 a1 c0 c1 c2]
 *
 * The ranks agree first, as for starfold_group_all_reduce() (the same dtype everywhere; the lengths
 * may differ and are shared), then one StarPU task on a CPU worker calls MPI_Iallgatherv, polled
 * against the group's timeout_seconds. Failures, timeouts and the broken group are as for
 * starfold_group_all_reduce(). MultiWorkerMirroredStrategy's gather, all_gather and IndexedSlices
 * reductions go through it.
 * @param [in]  group the group
 * @param [in]  dtype the element type, the same on every rank
 * @param [in]  input this rank's part: a vector of @p dtype, or NULL for none (0 elements)
 * @param [out] output the whole (starfold_vector_destroy()), or NULL when every part is empty
 * @param [out] counts NULL, or starfold_group_size() entries: each rank's number of elements
 * @return ::STARFOLD_OK on every rank, or the same error on every rank that took part:
 *         ::STARFOLD_ERR_INVALID_ARGUMENT (a rank's bad argument, or dtypes that differ: named),
 *         ::STARFOLD_ERR_NOT_SUPPORTED (more than 2^31 - 1 elements in all, or no CPU worker),
 *         ::STARFOLD_ERR_TIMEOUT, ::STARFOLD_ERR_RUNTIME.
 */
STARFOLD_API starfold_status_t starfold_group_all_gather(starfold_group_t group, starfold_dtype_t dtype,
                                                         starpu_data_handle_t input, starpu_data_handle_t *output,
                                                         size_t *counts);

/**
 * @brief Broadcast across ranks: rank @p root's tensors into every replica of every rank, its own
 *        included (Horovod's broadcast, MultiWorkerMirroredStrategy's initial values). Collective.
 *
 *     root rank:  inputs[t]  ->  outputs[d x num_tensors + t] of every device d of every rank
 *
 * The ranks agree first, as for starfold_group_all_reduce(): the same tensors (dtypes and sizes)
 * and the same root on every rank, else every rank fails with ::STARFOLD_ERR_INVALID_ARGUMENT naming
 * the rank that differs. Then one StarPU task per tensor on a CPU worker calls MPI_Ibcast from the
 * root's input into device 0's output, polled against the group's timeout_seconds, and StarPU copies
 * device 0's outputs to the rank's other devices. Failures, timeouts and the broken group are as for
 * starfold_group_all_reduce(); after a failure device 0's outputs may be partly written (they are
 * MPI's receive buffers), the other devices' are as they were. Any dtype: the bytes are copied.
 * @param [in] group the group
 * @param [in] root the rank whose inputs are sent, the same on every rank
 * @param [in] num_tensors >= 1
 * @param [in] tensors their types and sizes, the same on every rank
 * @param [in] inputs on the root: num_tensors vectors, on any of its devices (an input may be the
 *                    matching output of device 0: in place); ignored (may be NULL) elsewhere
 * @param [in] outputs num_devices x num_tensors vectors, device-major as starfold_submit() takes
 *                     them; a tensor of 0 elements may have NULL handles
 * @return ::STARFOLD_OK on every rank, or the same error on every rank that took part:
 *         ::STARFOLD_ERR_INVALID_ARGUMENT, ::STARFOLD_ERR_NOT_SUPPORTED (more than 2^31 - 1
 *         elements in a tensor, or no CPU worker), ::STARFOLD_ERR_TIMEOUT, ::STARFOLD_ERR_RUNTIME.
 */
STARFOLD_API starfold_status_t starfold_group_broadcast(starfold_group_t group, int root, size_t num_tensors,
                                                        const starfold_tensor_desc_t *tensors,
                                                        const starpu_data_handle_t *inputs,
                                                        const starpu_data_handle_t *outputs);

/** @brief An asynchronous collective of a process group (starfold_group_all_reduce_async()). */
typedef struct starfold_group_request *starfold_group_request_t;

/**
 * @brief starfold_group_all_reduce() started and returned at once, as Horovod's allreduce_async: the
 *        caller goes on (submitting its backward pass to StarPU) and tests or waits for it later.
 *
 * Requests run one after the other, in the order this rank started them, on a progress thread of
 * the group; every rank must start the same collectives in the same order (each is agreed on as the
 * blocking call is, and a mismatch fails that request on every rank, naming the rank). Several may be
 * in flight. The group's blocking calls wait until the requests started before them are done. The
 * request keeps copies of the arrays; the handles themselves must not be written (inputs) or used
 * (outputs) until it completed. Errors, timeouts and the broken group are the blocking call's, given
 * by starfold_group_request_test() or starfold_group_request_wait() (a broken group fails the
 * requests still queued at once). Wait for or destroy every request before the group.
 * @param [in]  group the group
 * @param [in]  op the reduce operation
 * @param [in]  num_tensors >= 1
 * @param [in]  tensors their types and sizes (the same on every rank)
 * @param [in]  inputs this rank's replicas, as starfold_group_all_reduce() takes them
 * @param [in]  outputs the same layout; may be the inputs (in place)
 * @param [out] request the request (starfold_group_request_destroy()); untouched on failure
 * @return ::STARFOLD_OK once queued (the collective's own verdict comes with the wait),
 *         ::STARFOLD_ERR_INVALID_ARGUMENT for a NULL group or request, ::STARFOLD_ERR_OUT_OF_MEMORY,
 *         ::STARFOLD_ERR_RUNTIME when the progress thread cannot start.
 */
STARFOLD_API starfold_status_t starfold_group_all_reduce_async(starfold_group_t group, starfold_op_t op,
                                                               size_t num_tensors, const starfold_tensor_desc_t *tensors,
                                                               const starpu_data_handle_t *inputs,
                                                               const starpu_data_handle_t *outputs,
                                                               starfold_group_request_t *request);

/**
 * @brief Whether @p request completed: ::STARFOLD_ERR_IN_PROGRESS while it runs or waits its turn,
 *        then its status (as starfold_group_all_reduce() would have returned; the message in
 *        starfold_last_error()). Never blocks.
 */
STARFOLD_API starfold_status_t starfold_group_request_test(starfold_group_request_t request);

/** @brief Waits for @p request; its status, as starfold_group_request_test() gives it once done. */
STARFOLD_API starfold_status_t starfold_group_request_wait(starfold_group_request_t request);

/** @brief Waits for @p request if it still runs, then frees it. NULL does nothing. */
STARFOLD_API void starfold_group_request_destroy(starfold_group_request_t request);

/**
 * @brief Barrier: returns once every rank of the group has called it (Horovod's barrier). Collective,
 *        in the order of the group's other collectives.
 *
 * It is the agreement of every collective alone: each rank tells every other it arrived, point to
 * point on the group's communicator, and waits to hear it from all of them. A rank that does not
 * arrive within the group's timeout_seconds fails every rank that waits with ::STARFOLD_ERR_TIMEOUT
 * naming it (the group is then broken, as after any timeout); ranks that call another collective
 * instead fail with ::STARFOLD_ERR_INVALID_ARGUMENT naming theirs. No StarPU task is involved:
 * tasks the application submitted before are not waited for.
 * @return ::STARFOLD_OK on every rank, or the same error on every rank that took part.
 */
STARFOLD_API starfold_status_t starfold_group_barrier(starfold_group_t group);

/**
 * @brief As starfold_group_all_reduce(), each tensor given as a view, a range of a vector that may
 *        hold other tensors too (starfold_submit_views()): the layout of a gradient bucket, and of the
 *        TensorFlow layer's values (MultiWorkerMirroredStrategy reduces through it). Ranges are
 *        checked as starfold_submit_views() checks them, on every rank before anything moves.
 */
STARFOLD_API starfold_status_t starfold_group_all_reduce_views(starfold_group_t group, starfold_op_t op,
                                                               size_t num_tensors, const starfold_tensor_desc_t *tensors,
                                                               const starfold_view_t *inputs,
                                                               const starfold_view_t *outputs);

/** @brief A persistent all-reduce of a process group (starfold_group_all_reduce_init()). */
typedef struct starfold_group_persistent *starfold_group_persistent_t;

/**
 * @brief MPI-4's `MPI_Allreduce_init`: binds an all-reduce of these handles once, so that every step
 *        of a training loop only starts it (starfold_group_persistent_start()).
 *
 * Collective, like starfold_group_all_reduce(): every rank calls it with the same op and tensors, and
 * the ranks agree on it here (a refusal or a difference fails every rank alike, nothing is kept). What
 * a call would prepare each time is made once: the lowering (the cost model's choice for these bytes,
 * or the group's), its graph across ranks, the local reduce and broadcast graphs, and the leader
 * vectors (allocated once, so later steps touch warm memory).
 * @param [in]  group, op, num_tensors, tensors, inputs, outputs as for starfold_group_all_reduce();
 *              the handles must stay registered until starfold_group_persistent_destroy()
 * @param [out] persistent the new persistent all-reduce
 * @return as starfold_group_all_reduce(); ::STARFOLD_ERR_INVALID_ARGUMENT for a NULL @p persistent.
 */
STARFOLD_API starfold_status_t starfold_group_all_reduce_init(starfold_group_t group, starfold_op_t op,
                                                              size_t num_tensors, const starfold_tensor_desc_t *tensors,
                                                              const starpu_data_handle_t *inputs,
                                                              const starpu_data_handle_t *outputs,
                                                              starfold_group_persistent_t *persistent);

/**
 * @brief MPI's `MPI_Start` + `MPI_Wait`: runs the bound all-reduce on the handles' current contents
 *        and returns when this rank's outputs hold the result. Collective: every rank starts its
 *        persistent all-reduces in the same order, interleaved with the group's other collectives
 *        alike; each start is agreed on (sequence number, fingerprint) and time-limited as a call is.
 * @return as starfold_group_all_reduce().
 */
STARFOLD_API starfold_status_t starfold_group_persistent_start(starfold_group_persistent_t persistent);

/** @brief Frees a persistent all-reduce (local; NULL is ignored). Before its group is destroyed. */
STARFOLD_API void starfold_group_persistent_destroy(starfold_group_persistent_t persistent);

/**
 * @brief Chooses how the group's all-reduces cross ranks (the step between the local reduce to each
 *        rank's leader vectors and the local broadcast, see starfold_group_all_reduce()):
 *        - "mpi": one StarPU task per dtype calls MPI's own all-reduce on the fusion buffer;
 *        - "ring", "halving-doubling", "hierarchical", "leader": a graph compiled on the group's
 *          rank topology (starfold_group_rank_topology()) with that algorithm, its cross-rank edges
 *          lowered to StarPU-MPI sends and receives, its reductions to StarPU tasks. "hierarchical"
 *          (for several ranks per node, large messages): reduce-scatter among a node's ranks, a ring
 *          of each shard between nodes, all-gather inside the node; "leader" (small messages): each
 *          node reduces onto one rank, the leaders exchange their sums directly, and broadcast;
 *        - "auto" (the default): the cost model's choice among them for each call's bytes; a graph
 *          only where the model prices it at least 1.5x under MPI's own (the model's measured error
 *          against MPI's one call), so a tie or a near one goes to "mpi".
 *        Every rank must choose the same (the agreement compares it).
 * @param [in] group the group
 * @param [in] lowering one of the names above
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL or an unknown name (nothing changes).
 */
STARFOLD_API starfold_status_t starfold_group_set_lowering(starfold_group_t group, const char *lowering);

/**
 * @brief The lowerings starfold_group_set_lowering() takes, by index: 0 is "auto", then "mpi" and
 *        the graph lowerings; NULL for an index out of range. Count them with
 *        starfold_group_lowering_find() failing, or loop until NULL.
 */
STARFOLD_API const char *starfold_group_lowering_name(int index);

/**
 * @brief The index of lowering @p name (case-sensitive), or -1 for NULL or an unknown name. Local:
 *        no group needed, so a program can check a name before creating one.
 */
STARFOLD_API int starfold_group_lowering_find(const char *name);

/**
 * @brief The cost model's price of one all-reduce of these tensors across the group's ranks, as the
 *        lowering's choice sees it: MPI's own all-reduce as recursive doubling or a ring over the
 *        slowest link between ranks plus one task, a graph lowering by simulating its graph on the
 *        rank topology (links and StarPU-MPI's latency measured at creation). The local reduce and
 *        broadcast on each rank's devices are not included. Local: no communication.
 * @param [in]  group, op, num_tensors, tensors as for starfold_group_all_reduce()
 * @param [in]  lowering a lowering's name, or NULL for the group's (starfold_group_set_lowering());
 *              "auto" prices them all and keeps the cheapest, as a call does
 * @param [out] chosen NULL, or the lowering priced (auto's choice)
 * @param [out] time_us the prediction in microseconds
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULLs, no tensors, an unknown op, dtype or name.
 */
STARFOLD_API starfold_status_t starfold_group_predict(starfold_group_t group, starfold_op_t op, size_t num_tensors,
                                                      const starfold_tensor_desc_t *tensors, const char *lowering,
                                                      const char **chosen, double *time_us);

/**
 * @brief The lowering the group's last all-reduce used ("mpi" or a graph lowering's name), or the
 *        chosen one ("auto" included) before the first; NULL for NULL.
 */
STARFOLD_API const char *starfold_group_last_lowering(starfold_group_t group);

/**
 * @brief How this rank's last all-reduce reached its views: "direct" (MPI's all-reduce from the
 *        inputs into the outputs), "packed" (one task per dtype reducing the devices into a staging
 *        buffer, MPI, copies out), "relay" (a local reduce into a leader, MPI into device 0's
 *        outputs, copies to the others) or "leaders" (a local reduce into a leader, across ranks
 *        there, copies to every device: every graph lowering's way); NULL for NULL or before the
 *        first all-reduce. Decided from this rank's views alone: ranks passing different layouts may
 *        differ. Not collective.
 */
STARFOLD_API const char *starfold_group_last_plan(starfold_group_t group);

/**
 * @brief The group's topology one device per rank (starfold_topology_ranks()): rank r is device r,
 *        its socket is its node, ::STARFOLD_LINK_SHM links inside a node and ::STARFOLD_LINK_NETWORK
 *        links between nodes with the group's measured (or given) bandwidth and latency. The same on
 *        every rank. Not collective.
 * @param [in]  group the group
 * @param [out] topology a new topology, owned by the caller (starfold_topology_destroy())
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL; as starfold_topology_ranks().
 */
STARFOLD_API starfold_status_t starfold_group_rank_topology(starfold_group_t group, starfold_topology_t *topology);

/**
 * @brief Every rank's devices in one topology, collectively (every rank of the group calls it; it
 *        exchanges the ranks' local topologies, starfold_context_topology(), over the group's
 *        communicator).
 *
 * Devices are numbered rank-major (rank 0's devices first), named "r<R>:<local name>", with the
 * rank's node as socket and starfold_topology_device_rank() = R. Each rank's own links are kept; the
 * first devices of every two ranks are linked, ::STARFOLD_LINK_SHM inside a node and
 * ::STARFOLD_LINK_NETWORK between nodes, with the group's links (starfold_group_rank_topology()). The
 * same on every rank.
 * @param [in]  group the group
 * @param [out] topology a new topology, owned by the caller (starfold_topology_destroy())
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL (this rank's NULL fails only this rank: pass
 *         valid arguments on every rank), ::STARFOLD_ERR_NOT_SUPPORTED on every rank when the ranks
 *         hold more than ::STARFOLD_MAX_DEVICES devices together, ::STARFOLD_ERR_RUNTIME when MPI
 *         fails or the group is broken.
 */
STARFOLD_API starfold_status_t starfold_group_cluster_topology(starfold_group_t group, starfold_topology_t *topology);

/** @brief 1 once a collective of the group timed out or failed between ranks (and for NULL), else 0. */
STARFOLD_API int starfold_group_is_broken(starfold_group_t group);

/**
 * @brief Ends the whole job: MPI_Abort() on the group's communicator with @p code. What to call after
 *        a timeout, when a rank is gone for good. Does not return.
 */
STARFOLD_API void starfold_group_abort(starfold_group_t group, int code);

/**
 * @brief TensorFlow's `tf.distribute.MultiWorkerMirroredStrategy(communication_options)`: one
 *        strategy per process over every device of its context, in sync with every other
 *        process's.
 *
 * Replicas are numbered across processes, rank by rank: replica_id_in_sync_group is this process's
 * offset (the devices of the ranks before it) plus the local replica's index, and
 * num_replicas_in_sync counts every replica of every process (TensorFlow's global replica ids).
 * starfold_strategy_run(), merge_call, variables and update are this process's, as for
 * MirroredStrategy over its devices, except that a new variable starts from rank 0's initial value on
 * every process, as TensorFlow broadcasts it from the chief (starfold_group_broadcast()): creating a
 * variable is collective, every process creating its variables in the same order; every reduction (batch_reduce_to, reduce_to, the replica
 * context's all_reduce) goes across the processes with starfold_group_all_reduce(): the same
 * results as one process holding every replica. Each value holds one component per device of this
 * process, or is one tensor (one component, on the host or a device): TensorFlow's non-distributed
 * value, which stands for each of this process's replicas. With one device per process it is that
 * worker's replica's value, all-reduced across the workers as TensorFlow does (2 processes each
 * reducing 1.0 with SUM give 2.0); with several, its SUM or PROD would count it once per replica and
 * is refused, on every process. A mirrored variable updated in the replica context is updated across
 * the processes too (TensorFlow's merge_fn: apply_aggregation, then every copy): the replicas' values
 * reduced over every process with the variable's aggregation, or global replica 0's for
 * ONLY_FIRST_REPLICA, so every copy on every process ends equal; a refusal on one process (such as a
 * SUM of one value on several replicas) fails the update on all. Every process must make the same
 * reductions in the same order; the group agrees on each
 * before it runs, and a mismatch or a missing process fails every process alike (see
 * starfold_group_all_reduce() for timeouts and what to do after one). CommunicationOptions (the
 * strategy's, merged with a call's): bytes_per_pack cuts a batch, in order, into packs of whole
 * tensors closed once they hold more than that many bytes (TensorFlow's group_by_size), one group
 * all-reduce per pack (0: the batch in one, a fusion buffer per dtype); timeout_seconds bounds each
 * of them, agreement included (0: the group's); implementation picks the lowering across processes:
 * RING "ring", NCCL "mpi" (the communication library's own tuned all-reduce, as NCCL is), AUTO the
 * group's (starfold_group_set_lowering()); promote_integer_mean makes an integer MEAN float64
 * (float32 for 8- and 16-bit integers) as on one process (the integers summed across processes, then divided on the host, as the group divides
 * every MEAN). Every process must use the same options: each pack's agreement compares a fingerprint
 * of the whole batch too, so processes whose batches differ only in a later pack fail in the first
 * pack, every one of them.
 * @param [in]  group the process group (it must outlive the strategy)
 * @param [in]  options NULL for the defaults
 * @param [out] strategy the new strategy (starfold_strategy_destroy())
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL or bad options; as starfold_mirrored_strategy_create().
 */
STARFOLD_API starfold_status_t starfold_multi_worker_mirrored_strategy_create(
    starfold_group_t group, const starfold_communication_options_t *options, starfold_strategy_t *strategy);

#ifdef __cplusplus
}
#endif

#endif /* STARFOLD_MPI_H */
