/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/**
 * @file starfold/exec.h
 * @brief Running compiled graphs on StarPU.
 *
 * A context binds the topology's logical devices to StarPU workers: logical device i runs its tasks
 * on one worker and keeps its buffers on that worker's memory node. Modes:
 *  - CUDA or OpenCL: device i is the i-th worker of that kind (its own memory node);
 *  - CPU: devices are spread round-robin over the CPU workers, all in main memory (one memory node);
 *  - AUTO: CUDA if StarPU has CUDA workers, else OpenCL, else CPU.
 *
 * starfold_submit() turns a graph into StarPU tasks, each pinned to its device's worker, with the
 * graph's edges as explicit dependencies, and returns at once. Input and output handles keep StarPU's
 * sequential consistency, so a task the caller submits before starfold_submit() that writes an input
 * runs first, and a task submitted after it that reads an output waits for the result: the caller's
 * compute overlaps with the reduction through StarPU's own data dependencies. Temporaries live on
 * their devices and are released without write-back.
 *
 * Guarantee on inputs: a graph writes only its outputs and temporaries. When an output handle is also
 * an input handle (in-place), every read of an input range is ordered before any write of the
 * same range, so no replica's contribution is overwritten before the whole collective has read it:
 * the result is the same as with separate outputs, for every algorithm (tests/test_soak.c runs each
 * registered algorithm in place for every op and dtype). An input that is not also an output is
 * never written, whatever happens. After ::STARFOLD_ERR_TASK_FAILED the outputs (and so in-place
 * inputs) hold unspecified data; after a refused submission nothing was written.
 *
 * Data movement: StarPU moves whole handles, so the executor cuts every vector at the boundaries of
 * the ranges that cross memory nodes or are written by different tasks. Temporaries are registered
 * piece by piece; a caller's vector is partitioned with StarPU's asynchronous partitioning for the
 * duration of the graph (partitioned before its first task, unpartitioned on its home node after its
 * last; the request completes after the unpartitions). Each transfer then moves exactly the bytes of
 * a graph edge. Handles given to starfold_submit() must not be partitioned by the caller at that
 * moment; a handle with sequential consistency off is used whole (correct, but a transfer of part of it
 * moves all of it). A handle homed in main memory but written on a device is gathered back to main
 * memory by the unpartition.
 *
 * Repeated submissions: a training loop reduces the same buffers every step. A persistent submission
 * (starfold_persistent_create(), MPI-4's persistent collectives) checks and plans the graph on its
 * handles once; each starfold_persistent_start() then only creates and submits the tasks.
 *
 * Memory: before submitting, the graph's temporaries and copies on each memory node are added up;
 * when StarPU knows the node's capacity and they exceed it, the submission fails with
 * ::STARFOLD_ERR_OUT_OF_MEMORY and nothing runs.
 *
 * Errors leave the library usable: a failed or refused submission releases everything it created,
 * and the same context, graph and handles can be submitted again.
 *
 * This header does not include <starpu.h>: it names StarPU's data handle type only, as StarPU's own
 * headers declare it (a pointer to an incomplete struct), so a program that includes just
 * <starfold.h> compiles under a strict `-std=c11 -Wall -Werror`. A program that calls StarPU itself
 * includes <starpu.h> before or after <starfold.h> (C11 allows the identical typedef twice); StarPU's
 * headers use POSIX types (pthread_rwlock_t...), so under a strict -std=c11 such a program defines
 * _POSIX_C_SOURCE 200809L (or _GNU_SOURCE) first, or uses -std=gnu11.
 *
 * Failures come back as statuses: a submission that StarPU refuses is cancelled as a whole (tasks
 * already queued turn into no-ops, outputs are not written); a kernel that fails makes
 * starfold_request_wait() return ::STARFOLD_ERR_TASK_FAILED.
 */
#ifndef STARFOLD_EXEC_H
#define STARFOLD_EXEC_H

#include <starfold/common.h>
#include <starfold/topology.h>
#include <starfold/graph.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @typedef starpu_data_handle_t
 * @brief StarPU's handle of registered data, declared exactly as <starpu_data.h> declares it.
 *
 * Repeated here so that this header needs no StarPU header (nor the POSIX feature macros those need);
 * identical to StarPU's typedef, which C11 and C++ accept twice.
 */
struct _starpu_data_state;
typedef struct _starpu_data_state *starpu_data_handle_t;

/** @brief Opaque execution context. */
typedef struct starfold_context *starfold_context_t;
/** @brief Opaque handle of one submitted graph. */
typedef struct starfold_request *starfold_request_t;
/** @brief Opaque handle of a graph bound to its data once and started many times. */
typedef struct starfold_persistent *starfold_persistent_t;

/** @brief Which StarPU workers carry the logical devices. */
typedef enum starfold_device_mode {
    STARFOLD_DEVICES_AUTO = 0,  /**< CUDA, else OpenCL, else CPU */
    STARFOLD_DEVICES_CPU,       /**< CPU workers, main memory */
    STARFOLD_DEVICES_OPENCL,    /**< OpenCL workers, one memory node each */
    STARFOLD_DEVICES_CUDA       /**< CUDA workers, one memory node each */
} starfold_device_mode_t;

/** @brief Context parameters. Initialise with starfold_context_options_init(). */
typedef struct starfold_context_options {
    starfold_device_mode_t mode; /**< default AUTO */
    /**
     * Logical devices to expose. 0 (default) = one per worker of the chosen kind. In CPU mode any
     * positive number is allowed (devices share workers round-robin); in CUDA/OpenCL mode asking for
     * more devices than workers fails with ::STARFOLD_ERR_NO_DEVICE.
     */
    int num_devices;
} starfold_context_options_t;

/** @brief Fills @p options with the defaults. */
STARFOLD_API void starfold_context_options_init(starfold_context_options_t *options);

/**
 * @brief Creates a context over the StarPU workers present.
 *
 * If StarPU is not initialised yet, starfold initialises it (starpu_init(NULL), honouring STARPU_*
 * environment variables) and shuts it down when the last context is destroyed; an application that
 * initialised StarPU itself keeps it. Kernels for OpenCL are built here.
 * @return ::STARFOLD_ERR_NO_DEVICE when the mode has no worker or too few, ::STARFOLD_ERR_RUNTIME when
 *         StarPU fails to start.
 */
STARFOLD_API starfold_status_t starfold_context_create(const starfold_context_options_t *options,
                                                       starfold_context_t *context);

/** @brief Waits for nothing, frees the context. Requests must be finished (waited or tested done). */
STARFOLD_API void starfold_context_destroy(starfold_context_t context);

/** @brief The mode actually chosen (never AUTO). */
STARFOLD_API starfold_device_mode_t starfold_context_mode(starfold_context_t context);
/** @brief Number of logical devices. */
STARFOLD_API int starfold_context_num_devices(starfold_context_t context);
/** @brief StarPU worker id of logical device @p device, -1 out of range. */
STARFOLD_API int starfold_context_device_worker(starfold_context_t context, int device);
/** @brief StarPU memory node of logical device @p device, -1 out of range. */
STARFOLD_API int starfold_context_device_node(starfold_context_t context, int device);

/**
 * @brief A topology of the context's devices as StarPU sees them: one device per logical device,
 *        links between memory nodes with StarPU's calibrated bus bandwidth and latency (devices sharing
 *        a memory node get a "host" link at memory-copy speed); once the context is calibrated
 *        (starfold_context_calibrate()), it carries the calibration's cost parameters.
 */
STARFOLD_API starfold_status_t starfold_context_topology(starfold_context_t context,
                                                         starfold_topology_t *topology);

/** @brief Most measurements a calibration keeps (algorithms x sizes). */
#define STARFOLD_CALIBRATION_MAX_MEASUREMENTS 128

/** @brief What starfold_context_calibrate() found, and where it keeps it. */
typedef struct starfold_calibration {
    /**
     * The machine parameters fitted on the context's devices: task_overhead_us and submit_overhead_us
     * (a least-squares line over six graphs of 1 to 32 one-element tensors), the memory bandwidth of
     * its kind of device (cpu_memory_GBps for CPU workers, gpu_memory_GBps otherwise: the bandwidth at
     * which the model predicts a measured 4 MiB all-reduce), cpu_workers as the context maps devices
     * onto workers; the other fields are the defaults.
     */
    starfold_cost_params_t params;
    int from_file;      /**< 1: read from @ref path (measured earlier), 0: measured by this call */
    char path[4096];    /**< the calibration file, "" when there is no $STARPU_HOME or $HOME to keep it */
    int points;         /**< graphs the overheads were fitted on */
    double fit_error;   /**< root-mean-square residual of that fit over the mean time (0.1 = 10 %) */
    /**
     * Every algorithm's all-reduce of one float32 tensor over all the context's devices, timed at
     * every power of two from 32 KiB to 16 MiB per device (median of 3 to 5 runs after a warm-up) beside
     * the model's prediction with @ref params; the larger sizes are left out when the smaller ones
     * show they would take more than a few seconds. "auto" scales its predictions by them
     * (::starfold_measurement_t).
     */
    size_t num_measurements;
    starfold_measurement_t measurements[STARFOLD_CALIBRATION_MAX_MEASUREMENTS]; /**< the first num_measurements */
} starfold_calibration_t;

/**
 * @brief Calibrates the cost model on the context's devices, once per machine.
 *
 * The model's defaults describe a GPU server. This measures what it needs on the devices the
 * context runs on (on the host's CPU workers, on POCL's emulated devices, on GPUs) and keeps the
 * result where StarPU keeps its performance models: `$STARPU_HOME/.starpu/starfold/` (StarPU's home
 * defaults to `$HOME`), one file per host, device mode and device count. Later calls, in this
 * process or another, read that file instead of measuring (a few seconds on the host or on the
 * emulated box), unless @p force is nonzero or the environment sets `STARFOLD_CALIBRATE=2` (StarPU's
 * own convention for "measure again").
 *
 * Three steps: the cost per task and per submission (a line fitted over six graphs), the memory
 * bandwidth the kernels reach, then every algorithm timed at a few sizes beside the model's
 * prediction (@ref starfold_calibration::measurements), which is what the model cannot know: the
 * costs StarPU adds per piece of a partitioned buffer, or per dependent task, differ by algorithm.
 *
 * From then on starfold_context_topology() returns topologies that carry these parameters
 * (starfold_topology_cost_params()) and measurements (starfold_topology_measurements()), so
 * starfold_graph_simulate() with NULL parameters describes this machine, not the default one, and
 * the "auto" algorithm ranks the algorithms by their predictions scaled by what each measured near
 * that size: measure once, remember, as NCCL's tuner plugins and UCC's score maps do. Topologies built otherwise (built-in,
 * from files) keep the defaults unless given parameters with starfold_topology_set_cost_params().
 *
 * Runs graphs on every device of the context: call it when no other work is running, or the figures
 * will include that work.
 * @param [in]  context the context
 * @param [in]  force nonzero to measure even when a calibration file exists (and replace it)
 * @param [out] calibration what was found, and where it is kept
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL; the status of a graph that failed to run
 *         (::STARFOLD_ERR_RUNTIME, ::STARFOLD_ERR_OUT_OF_MEMORY for the 4 MiB per device); an unwritable
 *         home is not an error (@ref starfold_calibration::path is then "").
 */
STARFOLD_API starfold_status_t starfold_context_calibrate(starfold_context_t context, int force,
                                                          starfold_calibration_t *calibration);

/**
 * @brief Submits @p graph to StarPU and returns without waiting.
 *
 * @param [in] context the context to run on; its devices carry the topology devices the graph uses
 * @param [in] graph   a compiled graph; it may be destroyed once this returns
 * @param [in] inputs  num_inputs x num_tensors vector handles, slot-major (inputs[s * num_tensors + t]);
 *                     each must be a StarPU vector of the tensor's element count and element size
 * @param [in] outputs num_outputs x num_tensors vector handles, same layout; an output may be the
 *                     very handle of the input of the same device and tensor (in-place)
 * @param [out] request to wait on, test and destroy
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for mismatched handles, ::STARFOLD_ERR_NO_DEVICE when the
 *         graph was compiled for a topology with more devices than the context has (even if the
 *         devices it uses exist; for a topology read from a file the detail names FILE:LINE of the
 *         first device too many) or uses a device the context lacks, ::STARFOLD_ERR_OUT_OF_MEMORY when
 *         the graph needs more memory on a device than StarPU gives it, ::STARFOLD_ERR_RUNTIME when
 *         StarPU refuses a task (nothing is written in any of these cases).
 */
STARFOLD_API starfold_status_t starfold_submit(starfold_context_t context, starfold_graph_t graph,
                                               const starpu_data_handle_t *inputs,
                                               const starpu_data_handle_t *outputs,
                                               starfold_request_t *request);

/**
 * @brief A tensor as a range of a StarPU vector: elements [offset, offset + the tensor's count) of
 *        @p handle. Many tensors may live in one vector (a gradient bucket, a fusion buffer).
 */
typedef struct starfold_view {
    starpu_data_handle_t handle; /**< a StarPU vector whose element size is the tensor's dtype size */
    size_t offset;               /**< first element of the tensor in it */
} starfold_view_t;

/**
 * @brief As starfold_submit(), each tensor given as a view: a range of a vector that may hold other
 *        tensors too.
 *
 * This is how a batch of many small tensors stays cheap: StarPU 1.3 spends about a microsecond per
 * handle a task touches (dependency tracking at submission, a fetch and a release at execution), so
 * 1,000 tensors of 4 KiB on 8 replicas given as 16,000 handles cost more in StarPU than the reduction
 * itself. Laid out one after another in one vector per replica (as PyTorch DDP's gradient buckets and
 * Horovod's fusion buffer do), they are 8 + 8 handles; the graph's tasks still read and write each
 * tensor's own range, and the executor gives StarPU only the pieces of each vector that the graph's
 * ranges need (see starfold_submit()). Elements of a vector outside every view are never read or
 * written, on any memory node.
 *
 * @param [in] context as starfold_submit()
 * @param [in] graph   as starfold_submit()
 * @param [in] inputs  num_inputs x num_tensors views, slot-major as in starfold_submit(); a view's
 *                     range must lie within its vector; views of inputs may overlap each other
 * @param [in] outputs num_outputs x num_tensors views; an output's range may overlap no other view but
 *                     the very same range given as its own device's input of the same tensor (in place)
 * @param [out] request as starfold_submit()
 * @return as starfold_submit(); ::STARFOLD_ERR_INVALID_ARGUMENT for a range outside its vector, an
 *         element size that is not the tensor's, or an output overlapping another view.
 */
STARFOLD_API starfold_status_t starfold_submit_views(starfold_context_t context, starfold_graph_t graph,
                                                     const starfold_view_t *inputs, const starfold_view_t *outputs,
                                                     starfold_request_t *request);

/**
 * @brief Binds @p graph to its data once, for starting it many times (MPI-4's persistent collectives,
 *        MPI_Allreduce_init() and MPI_Start()).
 *
 * A training loop reduces the same buckets every step. starfold_submit() checks the handles, plans the
 * pieces of every vector and computes each task's buffers and kernel arguments on every call; for
 * 1,000 tensors as views that is most of the submission's cost. A persistent submission does all of
 * it here, once, and each starfold_persistent_start() only creates the tasks, takes its temporaries
 * and submits: the same tasks, the same guarantees and the same errors as starfold_submit() with
 * these arguments.
 *
 * The graph may be destroyed once this returns; the context, and every handle given, must outlive
 * the persistent submission. Its temporaries are registered once and kept until
 * starfold_persistent_destroy() (in main memory from the context's pool, on devices through StarPU),
 * so starts do not register and release them. The caller's vectors that the graph uses in several pieces keep a
 * StarPU partition plan until starfold_persistent_destroy(): they must not be unregistered before
 * it, nor partitioned by the caller while a start is being submitted. Between starts, and around
 * them, the caller uses its vectors whole as usual (sequential consistency orders everything).
 *
 * @param [in] context the context to start on; must outlive the persistent submission
 * @param [in] graph   a compiled graph; it may be destroyed once this returns
 * @param [in] inputs  as starfold_submit()
 * @param [in] outputs as starfold_submit()
 * @param [out] persistent to start, and destroy
 * @return as starfold_submit() (but a refused task, which only a start can meet)
 */
STARFOLD_API starfold_status_t starfold_persistent_create(starfold_context_t context, starfold_graph_t graph,
                                                          const starpu_data_handle_t *inputs,
                                                          const starpu_data_handle_t *outputs,
                                                          starfold_persistent_t *persistent);

/** @brief As starfold_persistent_create(), with views, checked as starfold_submit_views() checks them. */
STARFOLD_API starfold_status_t starfold_persistent_create_views(starfold_context_t context, starfold_graph_t graph,
                                                                const starfold_view_t *inputs,
                                                                const starfold_view_t *outputs,
                                                                starfold_persistent_t *persistent);

/**
 * @brief Submits the persistent submission's tasks once, like starfold_submit(): returns without
 *        waiting, with a request of its own.
 *
 * A start may begin before the previous one completed: StarPU's sequential consistency on the
 * caller's vectors and on the kept temporaries orders the two. Starts from several threads are safe.
 *
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL arguments, ::STARFOLD_ERR_OUT_OF_MEMORY,
 *         ::STARFOLD_ERR_RUNTIME when StarPU refuses a task (the start is cancelled: nothing is written)
 */
STARFOLD_API starfold_status_t starfold_persistent_start(starfold_persistent_t persistent,
                                                         starfold_request_t *request);

/**
 * @brief Waits for the tasks of starts still running on its temporaries, releases them, drops the
 *        partition plans and frees. Requests of earlier starts stay valid (wait on them and destroy
 *        them as usual). Not while a thread is inside starfold_persistent_start() on it. NULL is ignored.
 */
STARFOLD_API void starfold_persistent_destroy(starfold_persistent_t persistent);

/**
 * @brief Waits until every task of the request has run; the first failure, or ::STARFOLD_OK.
 *
 * Several threads may wait on one request at once (not while another destroys it).
 */
STARFOLD_API starfold_status_t starfold_request_wait(starfold_request_t request);

/**
 * @brief Waits at most @p seconds.
 * @return as starfold_request_wait(), or ::STARFOLD_ERR_TIMEOUT (the request keeps running).
 */
STARFOLD_API starfold_status_t starfold_request_wait_timeout(starfold_request_t request, double seconds);

/** @brief ::STARFOLD_ERR_IN_PROGRESS while running; then as starfold_request_wait(). Never blocks. */
STARFOLD_API starfold_status_t starfold_request_test(starfold_request_t request);

/** @brief Waits for the request if still running, then frees it. NULL is a no-op. */
STARFOLD_API void starfold_request_destroy(starfold_request_t request);

/** @brief One task of a finished request as it ran (starfold_request_timeline()). */
typedef struct starfold_task_timing {
    size_t node;               /**< the graph node it ran */
    starfold_task_kind_t kind; /**< the node's kind */
    int device;                /**< its logical device */
    int worker;                /**< the StarPU worker that ran it */
    double fetch_us;           /**< time StarPU spent bringing its data to the worker before it ran (the
                                    transfers); 0 unless StarPU's profiling is on
                                    (starfold_context_set_profiling()) */
    double start_us;           /**< the kernel's start, microseconds after the submission */
    double end_us;             /**< the kernel's end, microseconds after the submission */
} starfold_task_timing_t;

/**
 * @brief What a finished request's tasks did: when each ran, where, and how long StarPU took to bring
 *        its data. Recorded by the kernels themselves (two clock reads per task), so it needs no
 *        StarPU rebuild (StarPU's own FxT traces do); tasks of a cancelled request that never ran
 *        are left out.
 * @param [in]  request a finished request (waited, or tested done)
 * @param [out] timings room for @p capacity entries, in graph order (NULL with capacity 0 to count)
 * @param [in]  capacity entries @p timings holds
 * @param [out] count tasks that ran (may exceed @p capacity: then only @p capacity are written)
 * @return ::STARFOLD_ERR_IN_PROGRESS while it runs, ::STARFOLD_ERR_INVALID_ARGUMENT for NULL arguments
 */
STARFOLD_API starfold_status_t starfold_request_timeline(starfold_request_t request, starfold_task_timing_t *timings,
                                                         size_t capacity, size_t *count);

/**
 * @brief Draws a finished request's timeline as an SVG Gantt chart: one row per StarPU worker (the
 *        logical devices it carries named), each task a bar coloured by kind, the time StarPU spent
 *        bringing its data (the transfers between memory nodes) drawn before it, a time axis, a title
 *        and a legend. `starfold run --trace FILE.svg` calls it.
 * @param [in] request a finished request
 * @param [in] context the context it ran on (worker names)
 * @param [in] title the picture's title (NULL: none)
 * @param [in] path the .svg file to write
 * @return as starfold_request_timeline(); ::STARFOLD_ERR_IO when the file cannot be written
 */
STARFOLD_API starfold_status_t starfold_request_trace_svg(starfold_request_t request, starfold_context_t context,
                                                          const char *title, const char *path);

/**
 * @brief Turns StarPU's task profiling on or off (process-wide: StarPU's setting), so that timelines
 *        say how long each task waited for its data. Costs a few clock reads per task.
 */
STARFOLD_API void starfold_context_set_profiling(starfold_context_t context, int on);

/**
 * @brief Stops StarPU's workers until starfold_context_resume() (process-wide: starpu_pause()).
 *
 * Each worker finishes the task it runs, then blocks: it takes no task and, unlike an idle worker,
 * does not spin on its CPU. Tasks submitted meanwhile wait; nothing is lost. For a phase in which
 * another library needs the CPUs: `starfold bench --mpi` times MPI's own collective this way, since
 * idle workers spinning beside it would slow it down. Pauses count: each needs its resume. Do not
 * wait for starfold's work (a value, a request, a collective across processes) while paused.
 * @param [in] context a context (StarPU's workers are the process's, not the context's)
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL.
 */
STARFOLD_API starfold_status_t starfold_context_pause(starfold_context_t context);

/** @brief Undoes one starfold_context_pause(): the workers take tasks again once every pause is undone. */
STARFOLD_API starfold_status_t starfold_context_resume(starfold_context_t context);

/**
 * @brief Allocates a vector of @p count elements on logical device @p device's memory node and
 *        registers it with StarPU (home node = that memory node).
 *
 * On a host memory node the buffer counts against StarPU's memory limit only when the user set one
 * (STARPU_LIMIT_CPU_MEM or STARPU_LIMIT_CPU_NUMA_MEM, read when StarPU starts); StarPU 1.3's default
 * limit is hwloc's NUMA node size, which some virtual machines report far below their memory, so by
 * default a host vector is uncounted, as a buffer the caller allocates and registers is, and fails
 * only when the system has no memory left. On a device's memory (OpenCL, CUDA) it always counts.
 * @return ::STARFOLD_ERR_OUT_OF_MEMORY when the memory cannot be had; ::STARFOLD_ERR_NO_DEVICE for a
 *         device the context does not have; ::STARFOLD_ERR_INVALID_ARGUMENT for NULL or an unknown
 *         dtype; ::STARFOLD_ERR_NOT_SUPPORTED above 2^32 - 1 elements (a StarPU vector's limit).
 */
STARFOLD_API starfold_status_t starfold_vector_create(starfold_context_t context, int device,
                                                      starfold_dtype_t dtype, size_t count,
                                                      starpu_data_handle_t *handle);

/**
 * @brief Unregisters and frees a vector made by starfold_vector_create(). NULL is a no-op; a handle
 *        that is not a StarPU vector is left as it is, with the reason in starfold_last_error().
 */
STARFOLD_API void starfold_vector_destroy(starfold_context_t context, starpu_data_handle_t handle);

/** @brief Copies @p bytes from host memory into a vector (waits for tasks using it). */
STARFOLD_API starfold_status_t starfold_vector_write(starpu_data_handle_t handle, const void *src, size_t bytes);

/** @brief Copies a vector's current content into host memory (waits for tasks writing it). */
STARFOLD_API starfold_status_t starfold_vector_read(starpu_data_handle_t handle, void *dst, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* STARFOLD_EXEC_H */
