/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/**
 * @file starfold/graph.h
 * @brief Compiling a collective into a task graph, checking it, inspecting it and exporting it.
 *
 * A collective is described by ::starfold_collective_desc_t: which devices hold the replicas
 * (sources, in replica order), which devices receive the result (destinations), the list of tensors
 * every replica holds (dtype and element count; the same list on every replica) and the reduce
 * operation. An algorithm from the registry turns it into a graph:
 *
 *  - buffers: the inputs (one per source and tensor), the outputs (one per destination and tensor)
 *    and temporaries, each placed on one device;
 *  - tasks: copy, reduce, scale, pack and unpack, each run on one device. A task writes only buffers
 *    of its own device; reading a buffer of another device is a transfer over the link between the
 *    two devices (the runtime moves the data);
 *  - edges: "must finish before", derived from the data each task reads and writes.
 *
 * Compiling needs no StarPU worker and no GPU. Every compiled graph passes starfold_graph_check()
 * (the tests check each one: STARFOLD_CHECK_GRAPHS=1).
 *
 * Input slot s, tensor t of a submission is inputs[s * num_tensors + t]; output slot d, tensor t is
 * outputs[d * num_tensors + t] (see starfold_submit()).
 */
#ifndef STARFOLD_GRAPH_H
#define STARFOLD_GRAPH_H

#include <stdint.h>
#include <starfold/common.h>
#include <starfold/topology.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Opaque compiled graph. */
typedef struct starfold_graph *starfold_graph_t;

/** @brief Kind of a collective. */
typedef enum starfold_collective {
    /**
     * Reduce the sources' tensors with the op and deliver the result to every destination. When the
     * destinations are the sources (as a set) this is an all-reduce; with one destination a reduce.
     */
    STARFOLD_COLL_REDUCE = 0,
    /** Copy the single source's tensors to every destination; the op is ignored. */
    STARFOLD_COLL_BROADCAST,
    /**
     * Every destination receives, for each tensor, the sources' tensors concatenated in source order
     * (TensorFlow's gather along axis 0): output tensor t holds num_sources x count elements, source
     * s's at offset s x count (starfold_graph_output_count()); with source_counts the sources may hold
     * different counts. The op SUM (or any but MEAN) concatenates; MEAN also divides every gathered
     * element by num_sources, as TensorFlow's MEAN of IndexedSlices divides their values. When the destinations are the sources
     * this is an all-gather (ReplicaContext.all_gather), with one destination a gather
     * (Strategy.gather). The op is ignored. The ring algorithm forwards each block around a ring of
     * the topology's links (n - 1 steps); every other algorithm copies each source's tensor straight
     * to every destination, as TensorFlow does; "auto" picks by the cost model.
     */
    STARFOLD_COLL_GATHER
} starfold_collective_t;

/** @brief One tensor of the list every replica holds. */
typedef struct starfold_tensor_desc {
    starfold_dtype_t dtype;  /**< element type */
    size_t count;            /**< number of elements; 0 is valid (nothing to move) */
} starfold_tensor_desc_t;

/** @brief What to compile. Arrays are read during compilation only; the graph keeps copies. */
typedef struct starfold_collective_desc {
    starfold_collective_t kind;        /**< reduce (all-reduce, reduce) or broadcast */
    starfold_op_t op;                  /**< reduce operation (ignored for broadcast) */
    int num_sources;                   /**< replicas, >= 1 (exactly 1 for broadcast) */
    const int *sources;                /**< topology device of each replica, distinct */
    int num_destinations;              /**< >= 1; 0 with NULL destinations means "the sources" */
    const int *destinations;           /**< topology devices receiving the result, distinct */
    size_t num_tensors;                /**< tensors per replica, >= 1 */
    const starfold_tensor_desc_t *tensors; /**< their types and sizes */
    /**
     * MEAN of integer tensors: 0 (default) keeps the integer type, the sum divided with truncation
     * towards zero; 1 does what TensorFlow does (true division): the integer sum is converted and
     * divided in float64, and those tensors' outputs are float64 (see starfold_graph_output_dtype());
     * for 8- and 16-bit integers in float32, their outputs float32, as TensorFlow's truediv.
     */
    int promote_integer_mean;
    /**
     * ::STARFOLD_COLL_GATHER only (NULL otherwise, the default): [num_sources x num_tensors] element
     * counts, source s's tensor t holding source_counts[s x num_tensors + t] elements, which may differ
     * between sources (TensorFlow's all_gather along an axis whose size differs between replicas, the
     * rows of IndexedSlices); tensors[t].count is then ignored. Output tensor t holds their sum, source
     * s's block after those of sources 0 .. s-1.
     */
    const size_t *source_counts;
} starfold_collective_desc_t;

/** @brief Algorithm parameters. Initialise with starfold_algo_options_init(). */
typedef struct starfold_algo_options {
    /**
     * hierarchical-copy: number of packs to concatenate-and-split each dtype's tensors into
     * (>= 0; 0 = no packing, every tensor reduced separately; default 1). A negative value is rejected.
     */
    int num_packs;
    /** reduce-to-one: the intermediate device (topology number), or -1 for the first destination. */
    int reduce_to_device;
    /**
     * Size-based packing (TensorFlow's CommunicationOptions.bytes_per_pack, group_by_size): when > 0,
     * the tensors of each dtype are grouped in order into packs of whole tensors, a pack being closed
     * once it holds more than this many bytes; it replaces num_packs. 0 (default) = use num_packs.
     */
    size_t bytes_per_pack;
    /**
     * ring: pipelining granularity. Each ring moves its share of a pack in rounds whose chunks are at
     * most this many bytes, so one round's additions overlap the next round's transfers.
     * The same number of rounds serves every ring (sized by the largest share), so the rings advance in
     * step. 0 (default) = automatic (chunks of at most 2.5 MiB, at most 16 rounds).
     */
    size_t chunk_bytes;
    /**
     * ring: number of edge-disjoint rings to use, each in both directions, 1 to 4; 0 (default) =
     * automatic (up to 2). A value outside 0..4 is rejected whichever algorithm is named.
     */
    int num_rings;
} starfold_algo_options_t;

/** @brief Fills @p options with the defaults (num_packs = 1, reduce_to_device = -1, bytes_per_pack = 0). */
STARFOLD_API void starfold_algo_options_init(starfold_algo_options_t *options);

/** @brief Kind of a task in a graph. */
typedef enum starfold_task_kind {
    STARFOLD_TASK_COPY = 0,  /**< "copy": a range to a range, possibly from another device */
    STARFOLD_TASK_REDUCE,    /**< "reduce": element-wise op over several ranges ("add" for SUM/MEAN) */
    STARFOLD_TASK_SCALE,     /**< "scale": division by the replica count, for MEAN */
    STARFOLD_TASK_PACK,      /**< "pack": tensors concatenated into a pack buffer */
    STARFOLD_TASK_UNPACK     /**< "unpack": a pack buffer split back into tensors */
} starfold_task_kind_t;

/** @brief Number of task kinds. */
#define STARFOLD_TASK_KIND_COUNT 5

/** @brief "copy", "reduce", "scale", "pack", "unpack". */
STARFOLD_API const char *starfold_task_kind_name(starfold_task_kind_t kind);

/** @brief Number of registered algorithms. */
STARFOLD_API int starfold_algorithm_count(void);
/**
 * @brief Looks an algorithm up by name, ignoring case ("ring", "Ring" and "RING" are one algorithm).
 * @param [in] name an algorithm name, or NULL
 * @return its index (0 .. starfold_algorithm_count() - 1), or -1 when @p name is NULL or names no
 *         registered algorithm (no error is recorded)
 */
STARFOLD_API int starfold_algorithm_find(const char *name);
/** @brief Name of algorithm @p index ("reduce-to-one", "hierarchical-copy", ...), NULL out of range. */
STARFOLD_API const char *starfold_algorithm_name(int index);
/** @brief One-line description of algorithm @p index, NULL out of range. */
STARFOLD_API const char *starfold_algorithm_description(int index);

/** @brief The fields of ::starfold_algo_options_t an algorithm reads (starfold_algorithm_options()). */
typedef enum starfold_algo_option {
    STARFOLD_ALGO_OPTION_NUM_PACKS = 1 << 0,        /**< num_packs */
    STARFOLD_ALGO_OPTION_BYTES_PER_PACK = 1 << 1,   /**< bytes_per_pack */
    STARFOLD_ALGO_OPTION_CHUNK_BYTES = 1 << 2,      /**< chunk_bytes */
    STARFOLD_ALGO_OPTION_NUM_RINGS = 1 << 3,        /**< num_rings */
    STARFOLD_ALGO_OPTION_REDUCE_TO_DEVICE = 1 << 4  /**< reduce_to_device */
} starfold_algo_option_t;

/**
 * @brief The options algorithm @p index reads: an OR of ::starfold_algo_option_t bits ("auto" reads
 *        every option another algorithm reads); 0 out of range. starfold_graph_compile() ignores the
 *        other options' values as long as they are in range.
 */
STARFOLD_API unsigned starfold_algorithm_options(int index);

/**
 * @name What one collective may be
 * The limits starfold_graph_compile() holds every collective to, so that compiling (and simulating)
 * costs time and memory in proportion to the tasks, and the tasks are bounded: a collective whose
 * options would need more is refused with ::STARFOLD_ERR_INVALID_ARGUMENT naming the options and the
 * limit (a chunk_bytes of 4 bytes on 1 MiB, num_packs of a million), never left to run for minutes.
 * @{
 */
/** @brief Most tasks one compiled graph may have (BERT-base unpacked on a ring of 8: 89,600). */
#define STARFOLD_GRAPH_MAX_TASKS (1 << 18)
/** @brief Most task arguments (tensor ranges read or written, over all tasks) one graph may have. */
#define STARFOLD_GRAPH_MAX_SPANS (1 << 22)
/** @brief Most bytes one replica's tensors of a collective may add up to (4 PiB). */
#define STARFOLD_COLLECTIVE_MAX_BYTES ((uint64_t)1 << 52)
/** @} */

/**
 * @brief Compiles a collective with a named algorithm.
 *
 * Algorithms: "reduce-to-one" (TensorFlow's ReductionToOneDevice: every tensor reduced on one device
 * in replica order, then copied to each destination), "hierarchical-copy" (TensorFlow's
 * HierarchicalCopyAllReduce: two groups from starfold_topology_bisect(), roots rotated per pack,
 * concat-and-split packing per dtype), "ring" (chunked ring over the topology's edge-disjoint rings,
 * both directions, pipelined), "halving-doubling" (recursive halving and doubling, any replica
 * count), "trees", "one-pass", "hierarchical" (reduce-scatter inside each node - the topology's
 * sockets, a cluster's machines -, a ring of each shard between nodes, all-gather inside), "leader"
 * (one leader per node reduces its node, leaders exchange their sums directly, broadcast inside), and
 * "auto" (every other one compiled and replayed by the cost model, the fastest kept; its
 * graph is named "auto:<algorithm>"). The all-reduce algorithms fall back to reduce-to-one on the first
 * destination when the destinations are not the sources, and broadcast is a copy to every destination.
 *
 * Options: a value out of an option's range (num_packs < 0, num_rings outside 0..4, reduce_to_device
 * neither -1 nor a device) is rejected whichever algorithm is named, even one that does not read the
 * option; a value in range is ignored by the algorithms that do not read it (starfold_algorithm_options()).
 * A chunk_bytes or bytes_per_pack larger than the collective's bytes means all of them at once. The
 * tensors may add up to ::STARFOLD_COLLECTIVE_MAX_BYTES per replica, and the graph may have up to
 * ::STARFOLD_GRAPH_MAX_TASKS tasks and ::STARFOLD_GRAPH_MAX_SPANS task arguments. A graph is returned
 * only when it writes every destination.
 *
 * @param [in]  topology devices and links; the graph keeps a reference
 * @param [in]  algorithm a registered name, in any case (starfold_algorithm_find())
 * @param [in]  desc the collective
 * @param [in]  options NULL for the defaults
 * @param [out] graph the graph, owned by the caller (starfold_graph_destroy())
 * @return ::STARFOLD_ERR_NOT_FOUND for an unknown algorithm, ::STARFOLD_ERR_INVALID_ARGUMENT for a bad
 *         description or option (an option out of range, promote_integer_mean neither 0 nor 1, tensors
 *         past ::STARFOLD_COLLECTIVE_MAX_BYTES, options needing more tasks than the limits above),
 *         ::STARFOLD_ERR_NOT_SUPPORTED when
 *         the algorithm cannot do this collective on this topology (one-pass over devices that do not
 *         share one memory; "auto" then leaves it out). With the environment variable
 *         STARFOLD_CHECK_GRAPHS=1 (the test suite sets it) every compiled graph also goes through
 *         starfold_graph_check(), whose ::STARFOLD_ERR_GRAPH_INVALID is returned.
 */
STARFOLD_API starfold_status_t starfold_graph_compile(starfold_topology_t topology, const char *algorithm,
                                                      const starfold_collective_desc_t *desc,
                                                      const starfold_algo_options_t *options,
                                                      starfold_graph_t *graph);

/** @brief Frees a graph. NULL is a no-op. A graph may be destroyed while its submissions still run. */
STARFOLD_API void starfold_graph_destroy(starfold_graph_t graph);

/**
 * @brief Runs the invariant checker: dependencies acyclic and in submission order; every range read
 *        was written before by a task it depends on (inputs count as written); every output element
 *        written exactly once; no two unordered tasks touch the same range with one of them writing;
 *        every task writes only its own device's buffers; ranges in bounds; types consistent.
 * @return ::STARFOLD_OK or ::STARFOLD_ERR_GRAPH_INVALID with the first violation in starfold_last_error().
 */
STARFOLD_API starfold_status_t starfold_graph_check(starfold_graph_t graph);

/** @brief Summary numbers of a graph, from starfold_graph_stats(). */
typedef struct starfold_graph_stats {
    size_t num_tasks;                               /**< all tasks */
    size_t tasks_by_kind[STARFOLD_TASK_KIND_COUNT]; /**< per ::starfold_task_kind_t */
    size_t num_edges;                               /**< dependency edges */
    size_t num_buffers;                             /**< inputs + outputs + temporaries */
    uint64_t temp_bytes;                            /**< bytes of temporaries */
    uint64_t bytes_moved;                           /**< bytes read by tasks from other devices' buffers */
    size_t critical_path_tasks;                     /**< tasks on the longest dependency chain */
    uint64_t critical_path_bytes;                   /**< the heaviest chain, weighting each task by the bytes it reads */
} starfold_graph_stats_t;

/** @brief Computes the summary of @p graph. */
STARFOLD_API starfold_status_t starfold_graph_stats(starfold_graph_t graph, starfold_graph_stats_t *stats);

/** @brief One directed device pair's traffic, from starfold_graph_link_bytes(). */
typedef struct starfold_link_bytes {
    int from;        /**< device whose buffer is read */
    int to;          /**< device of the reading task */
    uint64_t bytes;  /**< total over the graph */
} starfold_link_bytes_t;

/**
 * @brief Bytes moved per directed device pair, sorted by (from, to), only pairs with traffic.
 * @param [in]  graph a compiled graph
 * @param [out] pairs array allocated with malloc(), to free(); NULL when the count is 0
 * @param [out] count number of pairs
 */
STARFOLD_API starfold_status_t starfold_graph_link_bytes(starfold_graph_t graph, starfold_link_bytes_t **pairs,
                                                         size_t *count);

/** @brief Number of tasks. */
STARFOLD_API size_t starfold_graph_num_tasks(starfold_graph_t graph);
/**
 * @brief Elements of output tensor @p t on every destination: the tensor's count, or num_sources x
 *        count for ::STARFOLD_COLL_GATHER; 0 out of range.
 */
STARFOLD_API size_t starfold_graph_output_count(starfold_graph_t graph, size_t t);
/**
 * @brief Elements of input tensor @p t of slot @p slot: the tensor's count, or a gather's
 *        source_counts entry; 0 out of range.
 */
STARFOLD_API size_t starfold_graph_input_count(starfold_graph_t graph, int slot, size_t t);
/** @brief Number of input slots (the collective's sources). */
STARFOLD_API int starfold_graph_num_inputs(starfold_graph_t graph);
/** @brief Number of output slots (the collective's destinations). */
STARFOLD_API int starfold_graph_num_outputs(starfold_graph_t graph);
/** @brief Tensors per slot. */
STARFOLD_API size_t starfold_graph_num_tensors(starfold_graph_t graph);
/** @brief Topology device of input slot @p slot, -1 out of range. */
STARFOLD_API int starfold_graph_input_device(starfold_graph_t graph, int slot);
/** @brief Topology device of output slot @p slot, -1 out of range. */
STARFOLD_API int starfold_graph_output_device(starfold_graph_t graph, int slot);
/** @brief Description of tensor @p t, or NULL out of range. */
STARFOLD_API const starfold_tensor_desc_t *starfold_graph_tensor(starfold_graph_t graph, size_t t);
/**
 * @brief Element type of the outputs of tensor @p t: the tensor's dtype, or for an integer MEAN
 *        compiled with promote_integer_mean float64 (float32 for 8- and 16-bit integers).
 *        STARFOLD_FLOAT32 when out of range.
 */
STARFOLD_API starfold_dtype_t starfold_graph_output_dtype(starfold_graph_t graph, size_t t);
/** @brief The op the graph applies. */
STARFOLD_API starfold_op_t starfold_graph_op(starfold_graph_t graph);
/** @brief Name of the algorithm that compiled it. */
STARFOLD_API const char *starfold_graph_algorithm(starfold_graph_t graph);
/** @brief The topology it was compiled for (borrowed). */
STARFOLD_API starfold_topology_t starfold_graph_topology(starfold_graph_t graph);

/**
 * @brief Writes the graph as DOT: one cluster per device, nodes coloured by task kind, edges labelled
 *        with the bytes they carry (bold when they cross devices). Same graph, same bytes.
 * @param [in] graph a compiled graph
 * @param [in] path a file, or "-" for standard output
 */
STARFOLD_API starfold_status_t starfold_graph_write_dot(starfold_graph_t graph, const char *path);

/** @brief Graphs of more tasks than this are drawn summarised by starfold_graph_render(). */
#define STARFOLD_DRAW_SUMMARY_TASKS 400
/** @brief Graphs whose full picture has a row of more nodes than this (tasks of one round, or the
 *         input or output buffers) are drawn summarised by starfold_graph_render(). */
#define STARFOLD_DRAW_SUMMARY_ROW 48
/** @brief Most tasks drawn one by one (Graphviz's layout takes minutes beyond). */
#define STARFOLD_DRAW_MAX_TASKS 3000
/** @brief Most groups a summary draws. */
#define STARFOLD_DRAW_MAX_GROUPS 1500

/** @brief How starfold_graph_render_mode() draws. */
typedef enum starfold_draw_mode {
    STARFOLD_DRAW_AUTO = 0, /**< every task up to ::STARFOLD_DRAW_SUMMARY_TASKS tasks and
                                 ::STARFOLD_DRAW_SUMMARY_ROW nodes in a row, the summary beyond */
    STARFOLD_DRAW_FULL,     /**< every task (refused beyond ::STARFOLD_DRAW_MAX_TASKS) */
    STARFOLD_DRAW_SUMMARY,  /**< tasks of one kind on one device in one round as one node with their count,
                                 the edges between two such groups as one edge with their bytes; past 64
                                 groups the rounds are folded (one node per kind and device) */
    /**
     * The traffic between devices, whatever the graph's size: one node per device (with the tasks it
     * runs, by kind), placed in device order on a circle (the DGX-1 as its cube), and one arrow per
     * pair of devices that exchange data, labelled with the bytes each way, coloured by the link it
     * crosses and as wide as its share of the most bytes on one pair. A ring shows as a cycle, a tree
     * as a tree, hierarchical copy as two stars joined at their roots.
     */
    STARFOLD_DRAW_TRAFFIC
} starfold_draw_mode_t;

/**
 * @brief Draws the graph with Graphviz (dot layout) into @p path; the format comes from the
 *        extension: .dot, .svg, .png. Pictures of more than ::STARFOLD_DRAW_SUMMARY_TASKS tasks, or
 *        wider than ::STARFOLD_DRAW_SUMMARY_ROW nodes, are summarised (::STARFOLD_DRAW_SUMMARY); a .dot
 *        file always holds every task. A picture has a title, a legend, the device boxes in device order
 *        and the topology's groups (hierarchical copy's halves, else the CPU sockets) shaded.
 * @return ::STARFOLD_ERR_NOT_SUPPORTED for another extension, or a summary of more than
 *         ::STARFOLD_DRAW_MAX_GROUPS groups (with the numbers in starfold_last_error()).
 */
STARFOLD_API starfold_status_t starfold_graph_render(starfold_graph_t graph, const char *path);

/**
 * @brief As starfold_graph_render(), drawn as @p mode says.
 * @return as starfold_graph_render(); ::STARFOLD_ERR_NOT_SUPPORTED for ::STARFOLD_DRAW_FULL beyond
 *         ::STARFOLD_DRAW_MAX_TASKS tasks; ::STARFOLD_ERR_INVALID_ARGUMENT for an unknown mode.
 */
STARFOLD_API starfold_status_t starfold_graph_render_mode(starfold_graph_t graph, const char *path,
                                                          starfold_draw_mode_t mode);

#ifdef __cplusplus
}
#endif

#endif /* STARFOLD_GRAPH_H */
