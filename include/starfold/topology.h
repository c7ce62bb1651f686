/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/**
 * @file starfold/topology.h
 * @brief Devices and the links between them: what a reduction graph's transfers follow.
 *
 * A topology is a set of devices numbered 0..n-1 and undirected links between pairs of them. Each
 * link has a kind, a number of lanes (a DGX-1 V100 has doubled NVLink pairs), a bandwidth per direction
 * (all lanes together, GB/s = 1e9 B/s) and a latency. Two devices may be joined by several links
 * (NVLink and PCIe); algorithms use the fastest.
 *
 * Sources of a topology:
 *  - built in: "dgx1-v100", "dgx1-p100" (the hybrid cube-mesh tables), "pcie4" (four GPUs behind two
 *    PCIe switches), "emulated" (eight discrete-memory devices staged through host memory, the StarPU
 *    OpenCL test rig), "host" (eight logical devices sharing one memory node);
 *  - a Graphviz DOT file (graph or digraph, read with cgraph), format in graphs/README.md;
 *  - the live machine through hwloc ("detect");
 *  - the StarPU workers present, see starfold_context_topology() in starfold/exec.h.
 *
 * Life cycle: create or load -> query -> starfold_topology_destroy(). A topology is immutable once
 * given to the graph compiler; the compiler keeps its own reference.
 */
#ifndef STARFOLD_TOPOLOGY_H
#define STARFOLD_TOPOLOGY_H

#include <starfold/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Opaque topology handle. */
typedef struct starfold_topology *starfold_topology_t;

/** @brief Kind of a link. */
typedef enum starfold_link_kind {
    STARFOLD_LINK_NVLINK = 0,      /**< "nvlink": direct GPU-GPU link. */
    STARFOLD_LINK_PCIE,            /**< "pcie": through a PCIe switch or root complex, same socket. */
    STARFOLD_LINK_INTER_SOCKET,    /**< "inter-socket": PCIe plus the socket interconnect (QPI/UPI). */
    STARFOLD_LINK_HOST,            /**< "host": staged through or shared in host memory. */
    STARFOLD_LINK_SHM,             /**< "shm": between processes of one node, through shared memory (MPI). */
    STARFOLD_LINK_NETWORK          /**< "network": between nodes (MPI over the cluster's network). */
} starfold_link_kind_t;

/** @brief Number of link kinds (one past the last). */
#define STARFOLD_LINK_KIND_COUNT (STARFOLD_LINK_NETWORK + 1)

/** @brief Kind of a device. */
typedef enum starfold_device_kind {
    STARFOLD_DEVICE_GPU = 0,       /**< "gpu": an accelerator with its own memory. */
    STARFOLD_DEVICE_CPU            /**< "cpu": a logical device in host memory. */
} starfold_device_kind_t;

/**
 * @name Link values a topology accepts
 * Wide enough for any interconnect (1 kB/s to 1 PB/s, up to a second per transfer), narrow enough that
 * the cost model's arithmetic stays finite and exact enough: a value outside is refused where it
 * enters (starfold_topology_add_link(), the DOT reader) with ::STARFOLD_ERR_INVALID_ARGUMENT or
 * ::STARFOLD_ERR_PARSE naming the range.
 * @{
 */
#define STARFOLD_LINK_BANDWIDTH_MIN_GBPS 1e-6 /**< smallest bandwidth, GB/s */
#define STARFOLD_LINK_BANDWIDTH_MAX_GBPS 1e6  /**< largest bandwidth, GB/s */
#define STARFOLD_LINK_LATENCY_MAX_US 1e6      /**< largest latency, us (latencies are >= 0) */
/** @} */

/** @brief One link, as stored in a topology. Devices a < b. */
typedef struct starfold_link {
    int a;                          /**< first device */
    int b;                          /**< second device */
    starfold_link_kind_t kind;      /**< what carries the traffic */
    int lanes;                      /**< parallel physical links it stands for (>= 1) */
    double bandwidth_GBps;          /**< per direction, all lanes together, in [1e-6, 1e6] */
    double latency_us;              /**< per transfer, in [0, 1e6] */
} starfold_link_t;

/**
 * @brief Creates an empty topology of @p num_devices GPU devices named "dev0".."devN-1".
 * @param [in]  name a label shown in tables and exports (copied)
 * @param [in]  num_devices 1 .. ::STARFOLD_MAX_DEVICES
 * @param [out] topology the new topology, owned by the caller
 */
STARFOLD_API starfold_status_t starfold_topology_create(const char *name, int num_devices,
                                                        starfold_topology_t *topology);

/** @brief Largest device count a topology may have. */
#define STARFOLD_MAX_DEVICES 256

/**
 * @brief Names a device and places it.
 * @param [in] topology the topology to change
 * @param [in] device 0 .. n-1
 * @param [in] name label (copied), NULL keeps the current one
 * @param [in] kind GPU or CPU
 * @param [in] socket CPU socket (NUMA package) the device hangs from, -1 if unknown
 */
STARFOLD_API starfold_status_t starfold_topology_set_device(starfold_topology_t topology, int device,
                                                            const char *name, starfold_device_kind_t kind,
                                                            int socket);

/**
 * @brief Adds a link (copied). Devices must differ and exist, lanes >= 1, bandwidth > 0, latency >= 0.
 */
STARFOLD_API starfold_status_t starfold_topology_add_link(starfold_topology_t topology,
                                                          const starfold_link_t *link);

/**
 * @brief A built-in topology: "dgx1-v100", "dgx1-p100", "pcie4", "emulated" or "host".
 * @return ::STARFOLD_ERR_NOT_FOUND for another name.
 */
STARFOLD_API starfold_status_t starfold_topology_builtin(const char *name, starfold_topology_t *topology);

/** @brief Names of the built-in topologies, NULL-terminated. */
STARFOLD_API const char *const *starfold_topology_builtin_names(void);

/** @brief Largest topology file starfold_topology_load() reads, in bytes (10,000 devices fit in about 1 MB). */
#define STARFOLD_TOPOLOGY_FILE_MAX (8 << 20)
/** @brief Longest name, quoted or HTML string or comment a topology text may hold, in bytes. */
#define STARFOLD_TOPOLOGY_TOKEN_MAX 65536
/** @brief Most edge operators (`--`, `->`) a topology text may hold: links, parallel ones included. */
#define STARFOLD_TOPOLOGY_EDGES_MAX 16384
/** @brief Deepest nesting of braces (subgraphs) a topology text may have. */
#define STARFOLD_TOPOLOGY_NESTING_MAX 1000

/**
 * @brief Reads a topology from a Graphviz DOT file with cgraph.
 *
 * Nodes are devices, in the order of their "id" attribute (or of appearance); edges are links with
 * attributes kind, bandwidth (GB/s), latency (us) and lanes. See graphs/README.md.
 *
 * The file is untrusted: it must be a regular file (a directory, a FIFO or a device such as
 * /dev/zero is refused before anything is read) of at most ::STARFOLD_TOPOLOGY_FILE_MAX bytes, text
 * without NUL bytes, with no token longer than ::STARFOLD_TOPOLOGY_TOKEN_MAX, at most
 * ::STARFOLD_TOPOLOGY_EDGES_MAX edges and braces nested at most ::STARFOLD_TOPOLOGY_NESTING_MAX deep;
 * the time to read it is linear in its size.
 * @return ::STARFOLD_ERR_IO (cannot open or read, not a regular file, larger than the limit; the
 *         detail says which), ::STARFOLD_ERR_PARSE (syntax, unknown attribute, bad value, a limit above;
 *         the detail names file and line), ::STARFOLD_ERR_TOPOLOGY (disconnected, no device).
 */
STARFOLD_API starfold_status_t starfold_topology_load(const char *path, starfold_topology_t *topology);

/** @brief As starfold_topology_load() from text in memory; @p origin names it in errors (may be NULL). */
STARFOLD_API starfold_status_t starfold_topology_load_string(const char *dot, const char *origin,
                                                             starfold_topology_t *topology);

/**
 * @brief The live machine's accelerators and their links, through hwloc.
 *
 * GPUs (CUDA, OpenCL GPU, NVML devices) become devices; NVLink bandwidths come from hwloc's
 * "NVLinkBandwidth" distances where hwloc exposes them, otherwise links come from PCIe locality
 * (same switch, same socket, across sockets). A machine without accelerators gives the "host"
 * topology sized to its cores (at least 2, at most 8).
 */
STARFOLD_API starfold_status_t starfold_topology_detect(starfold_topology_t *topology);

/**
 * @brief One entry point for users and scripts: a built-in name, "detect", or a path to a DOT file.
 */
STARFOLD_API starfold_status_t starfold_topology_open(const char *spec, starfold_topology_t *topology);

/**
 * @brief A new topology of the first @p num_devices devices of @p topology and the links among them.
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT when num_devices is not in 1..n.
 */
STARFOLD_API starfold_status_t starfold_topology_subset(starfold_topology_t topology, int num_devices,
                                                        starfold_topology_t *subset);

/**
 * @brief The topology of a process group, one device per rank: what a graph across ranks is compiled
 *        on (see starfold/mpi.h). Device r is rank r, named "rank r", its socket is its node; every
 *        pair of ranks is linked, with a ::STARFOLD_LINK_SHM link inside a node and a
 *        ::STARFOLD_LINK_NETWORK link between nodes. Works without MPI (pictures, the cost model).
 * @param [in]  num_ranks 1 .. ::STARFOLD_MAX_DEVICES
 * @param [in]  node_of [num_ranks] the node of each rank (0 .. num_ranks-1), or NULL for one rank per node
 * @param [in]  shm bandwidth, latency and lanes of the links inside a node (a, b and kind are ignored),
 *                  or NULL for 25 GB/s and 0.5 us (a node's shared memory beats its network)
 * @param [in]  network the same between nodes, or NULL for 12.5 GB/s (100 Gb/s) and 2 us
 * @param [out] topology the new topology, owned by the caller
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for a count, node or link value out of range.
 */
STARFOLD_API starfold_status_t starfold_topology_ranks(int num_ranks, const int *node_of, const starfold_link_t *shm,
                                                       const starfold_link_t *network, starfold_topology_t *topology);

/**
 * @brief Checks that the topology can carry reductions: at least one device, every device reachable
 *        from every other through links.
 * @return ::STARFOLD_OK or ::STARFOLD_ERR_TOPOLOGY naming an unreachable device.
 */
STARFOLD_API starfold_status_t starfold_topology_validate(starfold_topology_t topology);

/**
 * @brief Machine parameters the links do not carry, used by the cost model (starfold/model.h).
 *        Initialise with starfold_cost_params_init().
 *
 * The defaults describe a GPU server; a topology may carry measured ones
 * (starfold_topology_set_cost_params()): a context's topology carries its calibration
 * (starfold_context_calibrate() in starfold/exec.h), so the model and "auto" describe the machine
 * that runs the graphs.
 */
typedef struct starfold_cost_params {
    double task_overhead_us;   /**< runtime cost of one task on its worker (default 5 us) */
    double gpu_memory_GBps;    /**< kernel memory bandwidth on GPU devices (default 800, a V100's HBM2 in practice) */
    /**
     * Host memory bandwidth (bytes read + written) that the kernels of CPU devices share: every CPU
     * kernel running at a moment gets an equal part of it (default 20).
     */
    double cpu_memory_GBps;
    /**
     * Workers serving the CPU devices: 0 (default) = one per device; W > 0 = W workers, CPU device d
     * running on worker d mod W, as a starfold context maps logical devices onto StarPU's CPU workers.
     */
    int cpu_workers;
    /**
     * Fixed cost of one submission before its first task can start: planning the graph, StarPU's
     * bookkeeping of its handles and partitions, the wake-up of the waiting thread (default 0: the
     * graph alone). Added to the predicted time of starfold_graph_simulate().
     */
    double submit_overhead_us;
} starfold_cost_params_t;

/** @brief Fills @p params with the defaults. */
STARFOLD_API void starfold_cost_params_init(starfold_cost_params_t *params);

/**
 * @brief The cost parameters the model uses for graphs on @p topology: those set on it, else the
 *        defaults of starfold_cost_params_init().
 * @return 1 when the topology carries parameters of its own, 0 for the defaults (and for NULL
 *         arguments, @p params then untouched when NULL)
 */
STARFOLD_API int starfold_topology_cost_params(starfold_topology_t topology, starfold_cost_params_t *params);

/**
 * @brief Attaches machine parameters to @p topology (NULL: back to the defaults). Graphs compiled
 *        afterwards are simulated with them when no parameters are given, "auto" included; subsets
 *        keep them.
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for a NULL topology or parameters that are not finite with
 *         overheads >= 0, bandwidths > 0 and cpu_workers 0..4096 (nothing changes).
 */
STARFOLD_API starfold_status_t starfold_topology_set_cost_params(starfold_topology_t topology,
                                                                 const starfold_cost_params_t *params);

/** @brief Longest algorithm name a measurement can carry, terminating NUL included. */
#define STARFOLD_MEASUREMENT_NAME_MAX 32

/**
 * @brief One algorithm's all-reduce, timed on the machine beside the model's prediction of the same
 *        graph: what "auto" trusts over the model near that size.
 *
 * The model misses costs it does not describe (StarPU's partitioning of a buffer into pieces, a
 * worker noticing a dependent task) and these differ between algorithms, so its ranking can be wrong
 * at a size where every absolute figure is close. A topology carrying measurements
 * (starfold_topology_set_measurements(); a calibrated context's topology carries those of
 * starfold_context_calibrate()) makes "auto" scale each algorithm's predicted time by
 * measured / predicted at the measured sizes, interpolated in log(size) between them and held at the
 * ends. Only all-reduces over `num_devices` devices (every source a destination) are scaled; other
 * collectives and device counts are ranked by the model alone.
 */
typedef struct starfold_measurement {
    char algorithm[STARFOLD_MEASUREMENT_NAME_MAX]; /**< a registry name (starfold_algorithm_name()) */
    int num_devices;      /**< devices the all-reduce spanned */
    size_t bytes;         /**< bytes per device (all tensors together), > 0 */
    double measured_us;   /**< the time measured (a median), > 0 */
    double predicted_us;  /**< the model's time of the same graph with the topology's cost parameters, > 0 */
} starfold_measurement_t;

/**
 * @brief Attaches @p count measurements to @p topology, replacing any it had (0 or NULL: none).
 *        Graphs compiled afterwards with "auto" use them; subsets keep them.
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for a NULL topology, NULL @p measurements with a count,
 *         an empty or unterminated algorithm name, a device count outside 1..the topology's, or a
 *         size or time that is not positive and finite (nothing changes);
 *         ::STARFOLD_ERR_OUT_OF_MEMORY.
 */
STARFOLD_API starfold_status_t starfold_topology_set_measurements(starfold_topology_t topology, size_t count,
                                                                  const starfold_measurement_t *measurements);

/**
 * @brief The measurements @p topology carries: copies up to @p max of them into @p out (may be NULL
 *        when @p max is 0).
 * @return their number (0 for NULL).
 */
STARFOLD_API size_t starfold_topology_measurements(starfold_topology_t topology, starfold_measurement_t *out,
                                                   size_t max);

/** @brief Adds a reference; starfold_topology_destroy() drops one. */
STARFOLD_API starfold_topology_t starfold_topology_retain(starfold_topology_t topology);

/** @brief Drops a reference; frees on the last. NULL is a no-op. */
STARFOLD_API void starfold_topology_destroy(starfold_topology_t topology);

/** @brief The topology's label; "" for NULL. */
STARFOLD_API const char *starfold_topology_name(starfold_topology_t topology);
/** @brief Device count; 0 for NULL. */
STARFOLD_API int starfold_topology_num_devices(starfold_topology_t topology);
/** @brief Device label; NULL when out of range. */
STARFOLD_API const char *starfold_topology_device_name(starfold_topology_t topology, int device);
/** @brief Device kind; GPU when out of range. */
STARFOLD_API starfold_device_kind_t starfold_topology_device_kind(starfold_topology_t topology, int device);
/** @brief The file the topology was read from (starfold_topology_load()), NULL for any other source. */
STARFOLD_API const char *starfold_topology_origin(starfold_topology_t topology);
/** @brief Line of device @p device's node in that file; 0 when unknown or out of range. */
STARFOLD_API int starfold_topology_device_line(starfold_topology_t topology, int device);

/**
 * @brief Whether devices @p a and @p b share one memory: the same device, two CPU devices (logical
 *        devices in host memory), or two devices given the same memory (starfold_topology_set_device_memory():
 *        several StarPU workers of one GPU), in each case of the same rank (starfold_topology_device_rank()).
 *        A task may write any buffer of a device sharing its memory, and reads between such devices
 *        move nothing over a link. 0 when out of range.
 */
STARFOLD_API int starfold_topology_same_memory(starfold_topology_t topology, int a, int b);
/**
 * @brief Says that device @p device's memory is memory @p memory: devices of one rank given the same
 *        memory share it, whatever their kind (starfold_topology_same_memory()). -1, every device's
 *        default, gives a GPU a memory of its own and a CPU device the host memory.
 *
 * starfold_context_topology() sets it to the StarPU memory node of each GPU device, so that the
 * StarPU workers of one GPU (STARPU_NWORKER_PER_CUDA) share its memory: one-pass runs there, and
 * nothing moves between them. A DOT file gives it as the node attribute "memory".
 * @return ::STARFOLD_OK; ::STARFOLD_ERR_INVALID_ARGUMENT for a device out of range or @p memory < -1.
 */
STARFOLD_API starfold_status_t starfold_topology_set_device_memory(starfold_topology_t topology, int device, int memory);
/** @brief Device @p device's memory (starfold_topology_set_device_memory()); -1 when its own or out of range. */
STARFOLD_API int starfold_topology_device_memory(starfold_topology_t topology, int device);
/** @brief Device socket; -1 when unknown or out of range. */
STARFOLD_API int starfold_topology_device_socket(starfold_topology_t topology, int device);
/**
 * @brief The MPI rank that holds device @p device: its rank in a cluster topology
 *        (starfold_group_cluster_topology(), or a DOT file's "rank" node attribute), 0 in any other.
 * @param [in] topology the topology
 * @param [in] device the device
 * @return the rank, -1 for NULL or a device out of range
 */
STARFOLD_API int starfold_topology_device_rank(starfold_topology_t topology, int device);
/** @brief Link count; 0 for NULL. */
STARFOLD_API int starfold_topology_num_links(starfold_topology_t topology);
/** @brief Copies link @p index (0 .. num_links-1) into @p link. */
STARFOLD_API starfold_status_t starfold_topology_link(starfold_topology_t topology, int index,
                                                      starfold_link_t *link);
/**
 * @brief The fastest direct link between two devices.
 * @return its bandwidth in GB/s, 0 when the devices have no direct link or an argument is invalid.
 */
STARFOLD_API double starfold_topology_bandwidth(starfold_topology_t topology, int a, int b);

/**
 * @brief Fastest direct link between two devices, copied into @p link.
 * @return ::STARFOLD_ERR_NOT_FOUND when none.
 */
STARFOLD_API starfold_status_t starfold_topology_best_link(starfold_topology_t topology, int a, int b,
                                                           starfold_link_t *link);

/**
 * @brief Splits a set of devices into the two best-connected halves.
 *
 * Of all splits into a group of floor(n/2) devices and one of ceil(n/2), takes the one with the most
 * bandwidth inside the groups (the least across); ties go to the split whose first group is smallest
 * in lexicographic order of positions, so on a topology where all links are equal the halves are
 * positions [0, n/2) and [n/2, n) - TensorFlow's halves. On a DGX-1 this gives {0,1,2,3} and {4,5,6,7}.
 * Exhaustive up to 20 devices, contiguous halves beyond.
 *
 * @param [in]  topology devices and links
 * @param [in]  n number of devices in the set (>= 1)
 * @param [in]  devices the set, as topology device numbers
 * @param [out] group for each position i in @p devices, 0 or 1; position 0 is always in group 0,
 *              which has floor(n/2) members; for n = 1 the only device is in group 0 and group 1 is empty
 */
STARFOLD_API starfold_status_t starfold_topology_bisect(starfold_topology_t topology, int n,
                                                        const int *devices, int *group);

/** @brief "nvlink", "pcie", "inter-socket", "host", "shm", "network"; "unknown" otherwise. */
STARFOLD_API const char *starfold_link_kind_name(starfold_link_kind_t kind);
/** @brief Parses a link kind name (case-insensitive; "qpi", "sys" and "upi" mean inter-socket). */
STARFOLD_API starfold_status_t starfold_link_kind_from_string(const char *name, starfold_link_kind_t *kind);

/**
 * @brief Writes the topology as DOT (the format starfold_topology_load() reads back), deterministic.
 * @param [in] topology the topology to write
 * @param [in] path file to write, or "-" for standard output
 */
STARFOLD_API starfold_status_t starfold_topology_write_dot(starfold_topology_t topology, const char *path);

/**
 * @brief Draws the topology with Graphviz into @p path; the format comes from the extension
 *        (.dot, .svg, .png).
 */
STARFOLD_API starfold_status_t starfold_topology_render(starfold_topology_t topology, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* STARFOLD_TOPOLOGY_H */
