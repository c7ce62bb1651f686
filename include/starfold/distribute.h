/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/**
 * @file starfold/distribute.h
 * @brief tf.distribute in C: distributed values, cross-device ops, strategies and the replica context.
 *
 * This layer gives a TensorFlow user every tf.distribute concept of the cross-device reduction API
 * under a predictable C name (doc/tensorflow.md is the full map):
 *
 *  - **Values** (::starfold_value_t): TensorFlow's PerReplica and Mirrored values. A value has one
 *    component per device, each a StarPU vector handle on that device, all of the same dtype and
 *    element count. It either wraps handles the application registered itself (no copy; the
 *    application keeps ownership) or owns handles starfold allocated.
 *  - **Destinations** (::starfold_destination_t): one device, a value (its devices, in its order),
 *    the host, or a list of devices (::STARFOLD_DESTINATION_DEVICES, TensorFlow's list of device
 *    strings).
 *  - **Cross-device ops** (::starfold_cross_device_ops_t): ReductionToOneDevice,
 *    HierarchicalCopyAllReduce and every algorithm of the registry, each with reduce, batch_reduce and
 *    broadcast, following TensorFlow's dispatch (one-value shortcut, device-set matching, fallback to
 *    reduce-to-one-device).
 *  - **Communication options** (::starfold_communication_options_t): bytes_per_pack, timeout_seconds,
 *    implementation, with TensorFlow's merge rule.
 *  - **Strategies** (::starfold_strategy_t): MirroredStrategy, OneDeviceStrategy,
 *    CentralStorageStrategy; starfold_strategy_run() calls one replica function per device, in
 *    turn on the calling thread as TensorFlow does (or concurrently, one thread each:
 *    starfold_strategy_set_replica_mode()), each with a replica context (::starfold_replica_context_t) offering all_reduce and merge_call; the
 *    cross-replica methods reduce_to, batch_reduce_to, update, broadcast_to and Strategy.reduce.
 *  - **Variables** (starfold_strategy_create_variable_with_options()): TensorFlow's MirroredVariable
 *    and SyncOnReadVariable with their aggregation; assign, assign_add, assign_sub and read_value in
 *    the replica and the cross-replica context (starfold_variable_assign() and the functions beside it).
 *
 * **Reduce ops.** TensorFlow's tf.distribute.ReduceOp is ::starfold_op_t (SUM and MEAN, plus MIN,
 * MAX and PROD, which TensorFlow's NCCL kernels have but tf.distribute never exposed). Strings are
 * parsed case-insensitively by starfold_op_from_string() ("sum", "MEAN", "Mean").
 *
 * **Integer MEAN.** By default an integer MEAN keeps the integer type and truncates towards zero
 * (the integer-preserving mode). TensorFlow promotes integer MEAN with true division: int32, int64,
 * uint32 and uint64 to float64, int8, uint8, int16 and uint16 to float32; set
 * ::starfold_communication_options_t::promote_integer_mean to get exactly that.
 *
 * **Asynchrony.** Every reduction, broadcast and update is submitted to StarPU and returns at once
 * with its result values; StarPU orders the application's later tasks on those handles after the
 * reduction through its data dependencies. starfold_value_read() and starfold_value_wait() wait.
 * A value keeps the submissions that write it: destroy every value before the context.
 *
 * **Errors.** The rule of starfold.h holds: every fallible call returns a ::starfold_status_t,
 * changes nothing on failure (no result is created, no input is written, nothing is submitted) and
 * leaves a sentence in starfold_last_error(). TensorFlow's ValueError messages are kept where
 * TensorFlow has one ("destinations can not be empty", "HierarchicalCopy requires num_packs >= 0,
 * but -1 is specified", "Some replicas made a different number of replica_context().merge_call()
 * calls.").
 *
 * **Devices.** A device is a logical device of the ::starfold_context_t (0 .. num_devices-1), which
 * is also its number in the topology the reductions are planned on. ::STARFOLD_DEVICE_HOST stands
 * for host memory (TensorFlow's "/device:CPU:0").
 */
#ifndef STARFOLD_DISTRIBUTE_H
#define STARFOLD_DISTRIBUTE_H

#include <limits.h>
#include <stdint.h>

#include <starfold/common.h>
#include <starfold/topology.h>
#include <starfold/graph.h>
#include <starfold/exec.h>

#ifdef __cplusplus
extern "C" {
#endif

/* =================================================================================================
 * Values
 * ================================================================================================= */

/**
 * @brief Opaque distributed value: TensorFlow's PerReplica or Mirrored (tf.distribute.DistributedValues).
 *
 * Reference-counted: starfold_value_retain() adds a reference, starfold_value_destroy() drops one.
 * A value may be used from several threads at once (the replica threads of a run); its component
 * handles are StarPU data and obey StarPU's sequential consistency.
 */
typedef struct starfold_value *starfold_value_t;

/** @brief What the components of a value hold. */
typedef enum starfold_value_kind {
    /** TensorFlow's PerReplica: one tensor per replica, each replica's own content. */
    STARFOLD_VALUE_PER_REPLICA = 0,
    /** TensorFlow's Mirrored: the same content on every device (results of reductions and broadcasts). */
    STARFOLD_VALUE_MIRRORED
} starfold_value_kind_t;

/**
 * @brief The host, as a device number: TensorFlow's "/device:CPU:0".
 *
 * A component on the host is a StarPU vector whose home is main memory. A value with a host
 * component has exactly one component. Reductions and copies never run "on the host": a reduction
 * whose destination is the host runs on a device (the ops' reduce_to_device, else the value's first
 * device) and writes the host vector from there; a host component used as a source is read by the
 * device that reads it first (StarPU moves the data).
 */
#define STARFOLD_DEVICE_HOST (-1)

/** @brief Component index meaning "every component" for starfold_value_write(). */
#define STARFOLD_ALL_COMPONENTS (-1)

/**
 * @brief Name of a value kind.
 * @param [in] kind the kind
 * @return "per-replica" or "mirrored"; "unknown" otherwise (never NULL)
 */
STARFOLD_API const char *starfold_value_kind_name(starfold_value_kind_t kind);

/**
 * @brief Creates a value whose storage starfold allocates and owns.
 *
 * Component i holds @p count elements of @p dtype on device @p devices[i] (on the host for
 * ::STARFOLD_DEVICE_HOST), filled with @p init (count elements, copied to every component;
 * TensorFlow's `tf.Variable(init)` under a strategy) or with zeros when @p init is NULL.
 *
 * Where it lives: in the context's arena, one StarPU vector per device and dtype (a "bucket") that
 * many values share, each value a range of it, as DDP's gradient buckets and Horovod's fusion buffer
 * lay out gradients. A list of values is then a few vectors for StarPU, and reductions of the same
 * list every step start one persistent submission (see starfold_strategy_batch_reduce_to()). A value
 * goes right after the last one made on each of its devices where there is room, so values made one
 * after another (a model's gradients) are one stretch of each device's bucket, and a batch reduces
 * such a stretch as one tensor: a list of gradients costs what one fused tensor costs. The
 * results of every reduction live there too. The range goes back to its bucket when the last
 * reference is dropped; buckets are freed with the context. A component moves out to a StarPU
 * handle of its own, with one copy task, the first time its handle is asked for
 * (starfold_value_handle(), starfold_replica_context_select(), an update function's arguments); it
 * stays there and leaves the fast path. Values made by starfold_strategy_create_variable() have
 * handles of their own from the start.
 *
 * @param [in]  context the context the devices belong to; must outlive the value
 * @param [in]  kind per-replica or mirrored
 * @param [in]  num_components 1 .. ::STARFOLD_MAX_DEVICES
 * @param [in]  devices distinct devices of @p context, or a single ::STARFOLD_DEVICE_HOST (copied)
 * @param [in]  dtype element type
 * @param [in]  count elements per component (0 is allowed)
 * @param [in]  init NULL or @p count elements of @p dtype
 * @param [out] value the new value, owned by the caller (starfold_value_destroy())
 * @return ::STARFOLD_OK; ::STARFOLD_ERR_INVALID_ARGUMENT for a NULL pointer, a bad kind, dtype or
 *         component count, duplicated devices or a host component among others;
 *         ::STARFOLD_ERR_NO_DEVICE for a device the context lacks; ::STARFOLD_ERR_OUT_OF_MEMORY.
 */
STARFOLD_API starfold_status_t starfold_value_create(starfold_context_t context, starfold_value_kind_t kind,
                                                     int num_components, const int *devices, starfold_dtype_t dtype,
                                                     size_t count, const void *init, starfold_value_t *value);

/**
 * @brief Wraps StarPU vector handles the application registered itself, without copying anything.
 *
 * This is how an existing StarPU program hands its data to starfold. Each handle must be a StarPU
 * vector whose element size is that of @p dtype; all must have the same element count, which
 * becomes the value's count. The device of a component says where reductions should read it from
 * (the StarPU worker of that device runs the tasks reading it); StarPU moves the data if it lives
 * elsewhere.
 *
 * Ownership: the handles stay the application's. starfold never unregisters them; they must stay
 * registered until the last reference to the value is dropped and every reduction reading them has
 * completed (unregistering a handle waits for StarPU's tasks, so unregistering after
 * starfold_value_destroy() is always safe).
 *
 * @param [in]  context the context the devices belong to
 * @param [in]  kind per-replica or mirrored
 * @param [in]  num_components 1 .. ::STARFOLD_MAX_DEVICES
 * @param [in]  devices distinct devices of @p context, or a single ::STARFOLD_DEVICE_HOST (copied)
 * @param [in]  handles @p num_components StarPU vector handles (copied; the handles are borrowed)
 * @param [in]  dtype element type of every handle
 * @param [out] value the new value, owned by the caller
 * @return ::STARFOLD_OK; ::STARFOLD_ERR_INVALID_ARGUMENT for a NULL handle, a handle that is not a
 *         vector, an element size that is not @p dtype's, counts that differ, duplicated devices;
 *         ::STARFOLD_ERR_NO_DEVICE for a device the context lacks.
 */
STARFOLD_API starfold_status_t starfold_value_wrap(starfold_context_t context, starfold_value_kind_t kind,
                                                   int num_components, const int *devices,
                                                   const starpu_data_handle_t *handles, starfold_dtype_t dtype,
                                                   starfold_value_t *value);

/**
 * @brief Groups one-component values into one distributed value: TensorFlow's regroup.
 *
 * When every element of @p values is the same object, that object is returned with a new reference
 * (TensorFlow collapses identical objects the same way). Otherwise the result has component i =
 * the only component of @p values[i], without copying: it keeps a reference to each of them.
 * This is how a merge function turns the per-replica arguments of merge_call into a PerReplica.
 *
 * @param [in]  kind kind of the grouped value
 * @param [in]  num_values 1 .. ::STARFOLD_MAX_DEVICES
 * @param [in]  values one-component values of one context, one dtype and one count, on distinct devices
 * @param [out] value the grouped value, owned by the caller
 * @return ::STARFOLD_OK or ::STARFOLD_ERR_INVALID_ARGUMENT naming the offending element.
 */
STARFOLD_API starfold_status_t starfold_value_regroup(starfold_value_kind_t kind, int num_values,
                                                      const starfold_value_t *values, starfold_value_t *value);

/**
 * @brief Adds a reference to @p value (each reference is dropped by one starfold_value_destroy()).
 * @param [in] value the value, or NULL
 * @return @p value
 */
STARFOLD_API starfold_value_t starfold_value_retain(starfold_value_t value);

/**
 * @brief Drops a reference. The last one releases the records of the reductions writing the value
 *        (waiting for them), then unregisters and frees the handles starfold allocated (wrapped
 *        handles are left alone; unregistering waits for the StarPU tasks still using them).
 * @param [in] value the value, or NULL (no-op)
 */
STARFOLD_API void starfold_value_destroy(starfold_value_t value);

/**
 * @brief What the components hold.
 * @param [in] value the value
 * @return per-replica or mirrored (per-replica for NULL)
 */
STARFOLD_API starfold_value_kind_t starfold_value_kind(starfold_value_t value);
/**
 * @brief Number of components.
 * @param [in] value the value
 * @return 1 .. ::STARFOLD_MAX_DEVICES; 0 for NULL
 */
STARFOLD_API int starfold_value_num_components(starfold_value_t value);
/**
 * @brief Device of a component.
 * @param [in] value the value
 * @param [in] component 0 .. n-1
 * @return the device, ::STARFOLD_DEVICE_HOST for the host; -2 when out of range
 */
STARFOLD_API int starfold_value_device(starfold_value_t value, int component);
/**
 * @brief StarPU vector handle of a component: TensorFlow's experimental_local_results()[component].
 *
 * A component in the context's arena (see starfold_value_create()) first moves out to a handle of
 * its own: one copy task from its range, submitted without waiting and ordered by StarPU after the
 * reductions writing the value, so tasks the caller submits on the handle see the result. Later
 * calls return the same handle.
 * @param [in] value the value
 * @param [in] component 0 .. n-1
 * @return the handle, borrowed (valid while the value lives); NULL when out of range, or when the
 *         move fails (out of memory: the reason in starfold_last_error())
 */
STARFOLD_API starpu_data_handle_t starfold_value_handle(starfold_value_t value, int component);
/**
 * @brief Element type of every component.
 * @param [in] value the value
 * @return the dtype (float32 for NULL)
 */
STARFOLD_API starfold_dtype_t starfold_value_dtype(starfold_value_t value);
/**
 * @brief Elements per component.
 * @param [in] value the value
 * @return the count; 0 for NULL
 */
STARFOLD_API size_t starfold_value_count(starfold_value_t value);
/**
 * @brief The context the value belongs to.
 * @param [in] value the value
 * @return the context (borrowed); NULL for NULL
 */
STARFOLD_API starfold_context_t starfold_value_context(starfold_value_t value);

/**
 * @brief Copies host data into one component, or into every one.
 *
 * Waits for the tasks using the component(s), as starfold_vector_write() does. Many values every
 * step (a model's gradients): starfold_value_write_many(), which acquires each StarPU vector once.
 * @param [in] value the value
 * @param [in] component 0 .. n-1, or ::STARFOLD_ALL_COMPONENTS
 * @param [in] src @p bytes of host data
 * @param [in] bytes at most count * dtype size; a shorter write replaces the first bytes, keeps the rest
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for a bad component, a NULL @p src or more bytes than the
 *         component holds; ::STARFOLD_ERR_RUNTIME when StarPU fails.
 */
STARFOLD_API starfold_status_t starfold_value_write(starfold_value_t value, int component, const void *src,
                                                    size_t bytes);

/**
 * @brief Copies host data into many values at once, as one starfold_value_write() each: a training
 *        step filling its gradients from the host.
 *
 * Write k copies @p bytes[k] bytes from @p srcs[k] into component @p components[k] of
 * @p values[k] (every component for ::STARFOLD_ALL_COMPONENTS). Values made by
 * starfold_value_create() share a few StarPU vectors (see there); each of those is acquired once for
 * all the writes into it, where starfold_value_write() acquires it once per write (a StarPU acquire
 * and release cost microseconds: 8,000 writes of 4 KiB one by one took 50-70 ms a step on a 2-core
 * machine, BENCHMARKS.md). Where two writes overlap, the later one wins.
 *
 * Every write is checked before anything is written: a bad one changes nothing. A failure of StarPU
 * itself may leave the writes into some vectors done and others not.
 * @param [in] num_writes the number of writes (0: nothing to do)
 * @param [in] values @p num_writes values
 * @param [in] components for each write, 0 .. n-1 or ::STARFOLD_ALL_COMPONENTS
 * @param [in] srcs for each write, its host data
 * @param [in] bytes for each write, at most count * dtype size (a shorter write keeps the rest)
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL arrays or a bad write (the error names it),
 *         ::STARFOLD_ERR_OUT_OF_MEMORY, ::STARFOLD_ERR_RUNTIME when StarPU fails.
 */
STARFOLD_API starfold_status_t starfold_value_write_many(size_t num_writes, const starfold_value_t *values,
                                                         const int *components, const void *const *srcs,
                                                         const size_t *bytes);

/**
 * @brief Copies one component's current content into host memory.
 *
 * First waits for the reductions writing the value (so their failures are reported), then for the
 * StarPU tasks writing the handle.
 * @param [in]  value the value
 * @param [in]  component 0 .. n-1
 * @param [out] dst @p bytes of host memory
 * @param [in]  bytes at most count * dtype size (a shorter read gives the first bytes)
 * @return as starfold_value_write(), or the failure of a reduction writing the value
 *         (::STARFOLD_ERR_TASK_FAILED).
 */
STARFOLD_API starfold_status_t starfold_value_read(starfold_value_t value, int component, void *dst, size_t bytes);

/**
 * @brief Waits until every starfold submission writing @p value has completed.
 * @param [in] value the value
 * @return ::STARFOLD_OK or the first failure of those submissions (::STARFOLD_ERR_TASK_FAILED).
 */
STARFOLD_API starfold_status_t starfold_value_wait(starfold_value_t value);

/**
 * @brief As starfold_value_wait(), for at most @p seconds.
 * @param [in] value the value
 * @param [in] seconds >= 0 (infinity waits without limit)
 * @return ::STARFOLD_ERR_TIMEOUT when the submissions are still running (they keep running).
 */
STARFOLD_API starfold_status_t starfold_value_wait_timeout(starfold_value_t value, double seconds);

/* =================================================================================================
 * IndexedSlices (tf.IndexedSlices): sparse values
 * ================================================================================================= */

/**
 * @brief Opaque IndexedSlices: per component (replica) a @c values tensor of k rows of
 *        row_elements elements, an @c indices vector of k int64 row numbers, and one dense shape
 *        [dense_rows, row_elements]. Components may hold different row counts.
 *
 * A reduction (starfold_cross_device_ops_reduce_indexed_slices(),
 * starfold_strategy_reduce_to_indexed_slices()) is TensorFlow's: every component's rows and indices
 * concatenated in component order, a MEAN dividing the values (not the indices) by the number of
 * components, the result IndexedSlices again; starfold_indexed_slices_densify() adds duplicate rows.
 * Reductions run as graphs of the graph layer's gather collective (copy tasks into the gathered
 * buffers), which `starfold graph --collective all-gather` draws.
 */
typedef struct starfold_indexed_slices *starfold_indexed_slices_t;

/**
 * @brief Creates IndexedSlices whose storage starfold owns (in the context's arena).
 * @param [in]  context the context
 * @param [in]  kind per-replica or mirrored
 * @param [in]  num_components 1 .. ::STARFOLD_MAX_DEVICES
 * @param [in]  devices distinct devices of @p context, one per component
 * @param [in]  dtype the values' element type
 * @param [in]  dense_rows the dense shape's first dimension: every index is below it
 * @param [in]  row_elements elements of a row (the dense shape's other dimensions, multiplied), >= 1
 * @param [in]  rows [num_components] rows of each component (0 allowed)
 * @param [in]  values NULL (contents undefined), or per component rows[c] x row_elements elements
 * @param [in]  indices NULL (contents undefined), or per component rows[c] row numbers
 * @param [out] slices the new object, owned by the caller (starfold_indexed_slices_destroy())
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL arguments, a bad count, kind, dtype or device, an
 *         index outside [0, dense_rows) (naming it); ::STARFOLD_ERR_OUT_OF_MEMORY.
 */
STARFOLD_API starfold_status_t starfold_indexed_slices_create(starfold_context_t context, starfold_value_kind_t kind,
                                                              int num_components, const int *devices,
                                                              starfold_dtype_t dtype, size_t dense_rows,
                                                              size_t row_elements, const size_t *rows,
                                                              const void *const *values, const int64_t *const *indices,
                                                              starfold_indexed_slices_t *slices);
/** @brief Adds a reference; starfold_indexed_slices_destroy() drops one. */
STARFOLD_API starfold_indexed_slices_t starfold_indexed_slices_retain(starfold_indexed_slices_t slices);
/** @brief Drops a reference; the last one releases the storage. NULL is a no-op. */
STARFOLD_API void starfold_indexed_slices_destroy(starfold_indexed_slices_t slices);
/** @brief Number of components; 0 for NULL. */
STARFOLD_API int starfold_indexed_slices_num_components(starfold_indexed_slices_t slices);
/** @brief Device of component @p component (::STARFOLD_DEVICE_HOST for the host); -1 out of range. */
STARFOLD_API int starfold_indexed_slices_device(starfold_indexed_slices_t slices, int component);
/** @brief Rows of component @p component; 0 out of range. */
STARFOLD_API size_t starfold_indexed_slices_rows(starfold_indexed_slices_t slices, int component);
/** @brief The dense shape's rows. */
STARFOLD_API size_t starfold_indexed_slices_dense_rows(starfold_indexed_slices_t slices);
/** @brief Elements of a row. */
STARFOLD_API size_t starfold_indexed_slices_row_elements(starfold_indexed_slices_t slices);
/** @brief The values' element type. */
STARFOLD_API starfold_dtype_t starfold_indexed_slices_dtype(starfold_indexed_slices_t slices);
/** @brief Per-replica or mirrored (a reduction's result). */
STARFOLD_API starfold_value_kind_t starfold_indexed_slices_kind(starfold_indexed_slices_t slices);

/**
 * @brief Copies component @p component's values and indices to the host, waiting for the reductions
 *        writing them. Either buffer may be NULL; a given one must be exactly the component's size.
 * @param [in]  slices the IndexedSlices
 * @param [in]  component which component
 * @param [out] values NULL, or rows x row_elements elements of the dtype
 * @param [in]  values_bytes the size of @p values
 * @param [out] indices NULL, or rows row numbers
 * @param [in]  indices_bytes the size of @p indices
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for a bad component or a size that is not the component's.
 */
STARFOLD_API starfold_status_t starfold_indexed_slices_read(starfold_indexed_slices_t slices, int component, void *values,
                                                            size_t values_bytes, int64_t *indices, size_t indices_bytes);

/**
 * @brief TensorFlow's `tf.convert_to_tensor(indexed_slices)`: component @p component as a dense
 *        value of dense_rows x row_elements elements on its device, rows that share an index added,
 *        rows no index names zero. Waits for the reductions writing the component (the scatter runs on
 *        the host).
 * @param [in]  slices the IndexedSlices
 * @param [in]  component which component
 * @param [out] dense a new one-component value, owned by the caller
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for a bad component or an index outside the dense shape.
 */
STARFOLD_API starfold_status_t starfold_indexed_slices_densify(starfold_indexed_slices_t slices, int component,
                                                               starfold_value_t *dense);

/* =================================================================================================
 * Destinations
 * ================================================================================================= */

/** @brief What a destination names. */
typedef enum starfold_destination_kind {
    /** Nothing: TensorFlow's empty destinations; rejected with "destinations can not be empty". */
    STARFOLD_DESTINATION_NONE = 0,
    /** One device (TensorFlow's device string): the result has one component there. */
    STARFOLD_DESTINATION_DEVICE,
    /**
     * The devices of a value, in its order (TensorFlow's DistributedValues or variable destination).
     * The value itself is not written: the result is a new value over the same devices. To all-reduce,
     * pass the value as its own destination.
     */
    STARFOLD_DESTINATION_VALUE,
    /** Host memory (TensorFlow's "/device:CPU:0"): the result is one host component. */
    STARFOLD_DESTINATION_HOST,
    /**
     * A list of devices, in its order (TensorFlow's list of device strings): the result is a value
     * over them, as for ::STARFOLD_DESTINATION_VALUE, without a value to name them.
     */
    STARFOLD_DESTINATION_DEVICES
} starfold_destination_kind_t;

/**
 * @brief Where a reduction or broadcast delivers its result. Build one with
 *        starfold_destination_device(), starfold_destination_value() or starfold_destination_host();
 *        a zero-initialised destination is the empty one.
 */
typedef struct starfold_destination {
    starfold_destination_kind_t kind; /**< which of the fields below is meant */
    int device;                       /**< ::STARFOLD_DESTINATION_DEVICE: the device */
    starfold_value_t value;           /**< ::STARFOLD_DESTINATION_VALUE: the value (borrowed) */
    int num_devices;                  /**< ::STARFOLD_DESTINATION_DEVICES: 1 .. ::STARFOLD_MAX_DEVICES */
    const int *devices;               /**< ::STARFOLD_DESTINATION_DEVICES: distinct devices (borrowed) */
} starfold_destination_t;

/**
 * @brief The destination "device @p device".
 * @param [in] device a device of the context (::STARFOLD_DEVICE_HOST means the host)
 * @return the destination
 */
static inline starfold_destination_t starfold_destination_device(int device)
{
    starfold_destination_t d = { STARFOLD_DESTINATION_DEVICE, device, NULL, 0, NULL };
    return d;
}

/**
 * @brief The destination "the devices of @p value, in its order".
 * @param [in] value the value (borrowed by the destination; it must live during the call using it)
 * @return the destination
 */
static inline starfold_destination_t starfold_destination_value(starfold_value_t value)
{
    starfold_destination_t d = { STARFOLD_DESTINATION_VALUE, 0, value, 0, NULL };
    return d;
}

/**
 * @brief The destination "host memory".
 * @return the destination
 */
static inline starfold_destination_t starfold_destination_host(void)
{
    starfold_destination_t d = { STARFOLD_DESTINATION_HOST, STARFOLD_DEVICE_HOST, NULL, 0, NULL };
    return d;
}

/**
 * @brief The destination "these devices, in this order" (TensorFlow's list of device strings), with
 *        no value to allocate for naming them. To all-reduce onto a value's own devices, its devices or
 *        the value itself (starfold_destination_value()) are the same destination.
 * @param [in] num_devices 1 .. ::STARFOLD_MAX_DEVICES
 * @param [in] devices distinct devices of the context (borrowed: they must live during the call using it)
 * @return the destination
 */
static inline starfold_destination_t starfold_destination_devices(int num_devices, const int *devices)
{
    starfold_destination_t d = { STARFOLD_DESTINATION_DEVICES, 0, NULL, num_devices, devices };
    return d;
}

/* =================================================================================================
 * Communication options (tf.distribute.experimental.CommunicationOptions)
 * ================================================================================================= */

/** @brief TensorFlow's CommunicationImplementation, mapped to starfold algorithms. */
typedef enum starfold_communication_implementation {
    /** "AUTO": the strategy's own choice (its cross-device ops). */
    STARFOLD_COMMUNICATION_AUTO = 0,
    /** "RING": the "ring" algorithm. */
    STARFOLD_COMMUNICATION_RING,
    /** "NCCL": "hierarchical-copy" (starfold has no NCCL; its graphs run on any StarPU worker). */
    STARFOLD_COMMUNICATION_NCCL
} starfold_communication_implementation_t;

/**
 * @brief Options of a collective: TensorFlow's CommunicationOptions (and the deprecated CollectiveHints).
 *
 * Initialise with starfold_communication_options_init() (or build one, validated, with
 * starfold_communication_options_create()). Every field's zero is its default.
 */
typedef struct starfold_communication_options {
    /**
     * Size-based packing: tensors are grouped in order into packs of whole tensors, a pack being
     * closed once it holds more than this many bytes (TensorFlow's group_by_size); >= 0; 0 = automatic
     * (the algorithm's own packing: num_packs). Maps to ::starfold_algo_options_t::bytes_per_pack.
     */
    int64_t bytes_per_pack;
    /**
     * Seconds a replica waits for the other replicas to join a collective (all_reduce, merge_call)
     * before the collective fails with ::STARFOLD_ERR_TIMEOUT; >= 0; 0 or +infinity = no limit
     * (wait as long as it takes). No thread is created for it. It applies to replicas in threads
     * (::STARFOLD_REPLICAS_THREADS) and to a collective across processes, not to the wait of
     * replicas in turn (the default) for each other: the replica missing runs on the very thread.
     */
    double timeout_seconds;
    /** Which algorithm a strategy with default cross-device ops uses (see the enum). */
    starfold_communication_implementation_t implementation;
    /**
     * starfold's addition: 0 (default) keeps an integer MEAN integer (truncating division);
     * 1 does TensorFlow's promotion: integer MEAN results are float64 (float32 for 8- and 16-bit
     * integers).
     */
    int promote_integer_mean;
} starfold_communication_options_t;

/**
 * @brief Fills @p options with the defaults (all zero: automatic packing, no timeout, AUTO, no promotion).
 * @param [out] options the options to initialise (NULL is a no-op)
 */
STARFOLD_API void starfold_communication_options_init(starfold_communication_options_t *options);

/**
 * @brief TensorFlow's `CommunicationOptions(bytes_per_pack, timeout_seconds, implementation)`, validated.
 * @param [in]  bytes_per_pack >= 0
 * @param [in]  timeout_seconds >= 0 (0 or +infinity = none)
 * @param [in]  implementation "AUTO", "RING" or "NCCL" in any case; NULL = AUTO
 * @param [out] options the options (promote_integer_mean = 0)
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT: "Argument `bytes_per_pack` must be >=0, Received -1", a
 *         negative or NaN timeout; ::STARFOLD_ERR_NOT_FOUND for another implementation name.
 */
STARFOLD_API starfold_status_t starfold_communication_options_create(int64_t bytes_per_pack, double timeout_seconds,
                                                                     const char *implementation,
                                                                     starfold_communication_options_t *options);

/**
 * @brief Checks every field of @p options.
 * @param [in] options the options; NULL is valid (the defaults)
 * @return ::STARFOLD_OK or ::STARFOLD_ERR_INVALID_ARGUMENT naming the first bad field
 */
STARFOLD_API starfold_status_t starfold_communication_options_validate(const starfold_communication_options_t *options);

/**
 * @brief TensorFlow's `Options.merge(other)`: a copy of @p self where every non-default field of
 *        @p other wins (bytes_per_pack != 0, timeout_seconds != 0, implementation != AUTO,
 *        promote_integer_mean != 0).
 * @param [in]  self the base (NULL = defaults)
 * @param [in]  other the overrides (NULL = none)
 * @param [out] merged the result (may be @p self or @p other)
 * @return ::STARFOLD_OK; ::STARFOLD_ERR_INVALID_ARGUMENT when an input is invalid (nothing written)
 */
STARFOLD_API starfold_status_t starfold_communication_options_merge(const starfold_communication_options_t *self,
                                                                    const starfold_communication_options_t *other,
                                                                    starfold_communication_options_t *merged);

/**
 * @brief Name of an implementation.
 * @param [in] impl the implementation
 * @return "AUTO", "RING", "NCCL"; "unknown" otherwise (never NULL)
 */
STARFOLD_API const char *starfold_communication_implementation_name(starfold_communication_implementation_t impl);

/**
 * @brief Parses an implementation name, upper-casing it as TensorFlow does ("ring" = "RING").
 * @param [in]  name the name
 * @param [out] impl the implementation; untouched on error
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL, ::STARFOLD_ERR_NOT_FOUND for another name.
 */
STARFOLD_API starfold_status_t starfold_communication_implementation_from_string(
    const char *name, starfold_communication_implementation_t *impl);

/* =================================================================================================
 * Cross-device ops (tf.distribute.CrossDeviceOps)
 * ================================================================================================= */

/**
 * @brief Opaque cross-device ops object: how values are reduced across devices. Immutable once
 *        created, so any thread may use it; reference-counted (strategies keep a reference).
 */
typedef struct starfold_cross_device_ops *starfold_cross_device_ops_t;

/**
 * @brief Cross-device ops for any registered algorithm (starfold_algorithm_count(), starfold_algorithm_name()).
 *
 * "reduce-to-one" behaves as TensorFlow's ReductionToOneDevice; every other algorithm as TensorFlow's
 * AllReduceCrossDeviceOps: an all-reduce when the value's devices are the destination's devices,
 * else the fallback to reduce-to-one.
 *
 * @param [in]  algorithm a registered name, in any case (starfold_algorithm_find())
 * @param [in]  options algorithm options (copied; NULL = starfold_algo_options_init() defaults)
 * @param [in]  topology the topology to plan on (a reference is kept); NULL = the strategy's
 *              topology when used by a strategy, else the context's (starfold_context_topology())
 * @param [out] ops the new object, owned by the caller (starfold_cross_device_ops_destroy())
 * @return ::STARFOLD_ERR_NOT_FOUND for an unknown algorithm, ::STARFOLD_ERR_INVALID_ARGUMENT for a
 *         bad option (num_packs < 0, reduce_to_device < -1).
 */
STARFOLD_API starfold_status_t starfold_cross_device_ops_create(const char *algorithm,
                                                                const starfold_algo_options_t *options,
                                                                starfold_topology_t topology,
                                                                starfold_cross_device_ops_t *ops);

/**
 * @brief TensorFlow's `tf.distribute.ReductionToOneDevice(reduce_to_device)`.
 * @param [in]  reduce_to_device the intermediate device, or -1 for the first device of the destinations
 * @param [out] ops the new object, owned by the caller (starfold_cross_device_ops_destroy())
 * @return ::STARFOLD_OK; ::STARFOLD_ERR_INVALID_ARGUMENT for a device below -1
 */
STARFOLD_API starfold_status_t starfold_reduction_to_one_device_create(int reduce_to_device,
                                                                       starfold_cross_device_ops_t *ops);

/**
 * @brief TensorFlow's `tf.distribute.HierarchicalCopyAllReduce(num_packs)`.
 * @param [in]  num_packs >= 0; 0 = no packing (TensorFlow's default is 1)
 * @param [out] ops the new object, owned by the caller (starfold_cross_device_ops_destroy())
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT with "HierarchicalCopy requires num_packs >= 0, but -1 is
 *         specified" for a negative @p num_packs.
 */
STARFOLD_API starfold_status_t starfold_hierarchical_copy_all_reduce_create(int num_packs,
                                                                            starfold_cross_device_ops_t *ops);

/**
 * @brief TensorFlow 1.x's `choose_the_best(devices, session_config)`: the cross-device ops chosen from
 *        the devices' link matrix, as TensorFlow 1.12-1.14 chose them.
 *
 *  - a device that is not a GPU (@p all_gpus 0): ReductionToOneDevice (reduce_to_device -1);
 *  - exactly 8 GPUs linked as a DGX-1 (device i's NVLink neighbours are TensorFlow's `_dgx1_links[i]`:
 *    {1,2,3,4}, {0,2,3,5}, {0,1,3,6}, {0,1,2,7}, {0,5,6,7}, {1,4,6,7}, {2,4,5,7}, {3,4,5,6}; a link of a
 *    device to itself is ignored): HierarchicalCopyAllReduce with `num_packs` = 8, one pack per device,
 *    so the packs' roots rotate over all of them;
 *  - any other matrix (fewer GPUs, other links, the same links with devices numbered otherwise):
 *    TensorFlow's NCCL all-reduce with one pack, which starfold runs as "ring".
 * TensorFlow compared the link lists exactly, so a relabelled DGX-1 is not recognised; neither is it
 * here (a strategy's default ops, "auto", find the quads on any labelling through the topology).
 * @param [in]  num_devices 1 .. ::STARFOLD_MAX_DEVICES
 * @param [in]  link_matrix @p num_devices x @p num_devices, row-major: nonzero at [i * n + j] when devices
 *              i and j share a direct (NVLink) link; may be NULL when @p all_gpus is 0
 * @param [in]  all_gpus nonzero when every device is a GPU
 * @param [out] ops the new object, owned by the caller (starfold_cross_device_ops_destroy())
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL or a device count out of range.
 */
STARFOLD_API starfold_status_t starfold_cross_device_ops_choose_the_best(int num_devices, const int *link_matrix,
                                                                         int all_gpus, starfold_cross_device_ops_t *ops);

/**
 * @brief Adds a reference (each reference is dropped by one starfold_cross_device_ops_destroy()).
 * @param [in] ops the object, or NULL
 * @return @p ops
 */
STARFOLD_API starfold_cross_device_ops_t starfold_cross_device_ops_retain(starfold_cross_device_ops_t ops);

/**
 * @brief Drops a reference; frees on the last.
 * @param [in] ops the object, or NULL (no-op)
 */
STARFOLD_API void starfold_cross_device_ops_destroy(starfold_cross_device_ops_t ops);

/**
 * @brief The algorithm the ops run.
 * @param [in] ops the object
 * @return its registry name ("reduce-to-one", "hierarchical-copy", ...), static; "" for NULL
 */
STARFOLD_API const char *starfold_cross_device_ops_algorithm(starfold_cross_device_ops_t ops);

/**
 * @brief The algorithm options the ops were created with.
 * @param [in]  ops the object
 * @param [out] options a copy of them
 * @return ::STARFOLD_OK or ::STARFOLD_ERR_INVALID_ARGUMENT for NULL
 */
STARFOLD_API starfold_status_t starfold_cross_device_ops_options(starfold_cross_device_ops_t ops,
                                                                 starfold_algo_options_t *options);

/**
 * @brief TensorFlow's `CrossDeviceOps.reduce(reduce_op, per_replica_value, destinations, options)`.
 *
 * Dispatch, as TensorFlow's:
 *  1. **one-value shortcut**: a one-component value whose device is the destination's (as a set) is
 *     copied (TensorFlow's identity), no reduction;
 *  2. **all-reduce**: an all-reduce algorithm, the value's devices equal to the destination's devices
 *     as a set (order does not matter) and a destination that is not the host: the algorithm, result
 *     components in the destination's order;
 *  3. **fallback**: otherwise ReductionToOneDevice: every component reduced on the ops'
 *     reduce_to_device (or the first destination device; for the host, the value's first device),
 *     then copied to the destinations.
 *
 * MEAN divides by the number of components of the value (which an all-reduce's destinations equal).
 * Options: bytes_per_pack (when > 0) replaces the algorithm's packing and promote_integer_mean selects
 * TensorFlow's float64 integer MEAN; the implementation field is ignored (the ops are the choice).
 *
 * @param [in]  ops the cross-device ops
 * @param [in]  op the reduce operation
 * @param [in]  value the value to reduce (not written)
 * @param [in]  destinations where the result goes (not written)
 * @param [in]  options NULL = defaults
 * @param [out] result a new mirrored value over the destination's devices (one component for a
 *              device or the host), owned by the caller; its content is ready once starfold_value_wait()
 *              returns or through StarPU's dependencies
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT ("destinations can not be empty", an empty value, values of
 *         different contexts, a destination device below -1, or a device of the context that is not in
 *         the ops' topology), ::STARFOLD_ERR_NO_DEVICE (a destination device the context does not have,
 *         as starfold_value_create() answers), ::STARFOLD_ERR_NOT_SUPPORTED (an op for a dtype),
 *         ::STARFOLD_ERR_OUT_OF_MEMORY, ::STARFOLD_ERR_RUNTIME (StarPU refused the tasks).
 */
STARFOLD_API starfold_status_t starfold_cross_device_ops_reduce(starfold_cross_device_ops_t ops, starfold_op_t op,
                                                                starfold_value_t value,
                                                                const starfold_destination_t *destinations,
                                                                const starfold_communication_options_t *options,
                                                                starfold_value_t *result);

/** @brief One (value, destinations) pair of a batch reduce. */
typedef struct starfold_value_destination_pair {
    starfold_value_t value;               /**< the value to reduce */
    starfold_destination_t destinations;  /**< where its result goes */
} starfold_value_destination_pair_t;

/**
 * @brief TensorFlow's `CrossDeviceOps.batch_reduce(reduce_op, value_destination_pairs, options)`.
 *
 * Each pair is dispatched as starfold_cross_device_ops_reduce() would. The pairs that take the same
 * path over the same devices are compiled into **one graph** and submitted once: when every pair's
 * value devices equal its destination's devices and the first value's devices (TensorFlow's
 * _all_devices_match) the whole batch is one all-reduce graph whose tensors are all the pairs'
 * tensors, packed by the algorithm. Values may list the same devices in different orders.
 *
 * @param [in]  ops the cross-device ops
 * @param [in]  op the reduce operation
 * @param [in]  num_pairs >= 1
 * @param [in]  pairs the pairs (not written)
 * @param [in]  options NULL = defaults
 * @param [out] results @p num_pairs new values, one per pair **in input order**, owned by the caller;
 *              untouched on failure
 * @return as starfold_cross_device_ops_reduce(); "batch_reduce needs at least one (value,
 *         destinations) pair" for an empty batch.
 */
STARFOLD_API starfold_status_t starfold_cross_device_ops_batch_reduce(
    starfold_cross_device_ops_t ops, starfold_op_t op, size_t num_pairs, const starfold_value_destination_pair_t *pairs,
    const starfold_communication_options_t *options, starfold_value_t *results);

/**
 * @brief TensorFlow's `CrossDeviceOps.broadcast(tensor, destinations)`: a copy of the tensor on every
 *        destination device (TensorFlow's simple_broadcast, always mirrored).
 * @param [in]  ops the cross-device ops (their topology, if any, plans the copies)
 * @param [in]  value a one-component value, or a mirrored value (its first component is the source)
 * @param [in]  destinations where the copies go
 * @param [out] result a new mirrored value over the destination's devices, owned by the caller
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for a per-replica value of several components or bad destinations.
 */
STARFOLD_API starfold_status_t starfold_cross_device_ops_broadcast(starfold_cross_device_ops_t ops,
                                                                   starfold_value_t value,
                                                                   const starfold_destination_t *destinations,
                                                                   starfold_value_t *result);

/**
 * @brief TensorFlow's `CrossDeviceOps._gather(value, destinations, axis)`: the value's components
 *        concatenated along @p axis in component (replica) order, on every destination device.
 *
 * Values are 1-D tensors, so the axis is 0 (or -1) and the result has n x count elements, component
 * c's at offset c x count. One graph of the graph layer's gather collective: the ops' algorithm when it
 * has a gather of its own (ring forwards each block around the topology's rings when the destinations
 * are the components' devices), direct copies otherwise (TensorFlow concatenates on one device, then
 * broadcasts). A value of one component is copied (TensorFlow's single-value shortcut). The
 * components must be on distinct devices, with the same count (values have one shape).
 * @param [in]  ops the cross-device ops (their algorithm and topology plan the graph)
 * @param [in]  value the value (not written)
 * @param [in]  axis 0 or -1
 * @param [in]  destinations where the result goes (the host too)
 * @param [in]  options checked as for reduce; nothing in them applies to a gather
 * @param [out] result a new mirrored value over the destination's devices, owned by the caller
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL arguments, another axis ("axis 1 is out of bounds
 *         for a 1-D tensor (rank 1)"), bad destinations, a component on the host, or components on one
 *         device twice.
 */
STARFOLD_API starfold_status_t starfold_cross_device_ops_gather(starfold_cross_device_ops_t ops, starfold_value_t value,
                                                                int axis, const starfold_destination_t *destinations,
                                                                const starfold_communication_options_t *options,
                                                                starfold_value_t *result);

/**
 * @brief TensorFlow's `CrossDeviceOps.reduce(op, indexed_slices, destinations)`: every component's
 *        rows and indices concatenated in component order on every destination; MEAN divides the
 *        values by the number of components. The result is IndexedSlices (TensorFlow's is too).
 * @param [in]  ops the cross-device ops (their algorithm and topology plan the two gathers)
 * @param [in]  op ::STARFOLD_OP_SUM or ::STARFOLD_OP_MEAN
 * @param [in]  slices the IndexedSlices (not written)
 * @param [in]  destinations where the result goes (devices, a value's devices, or the host)
 * @param [in]  options checked; nothing in them applies
 * @param [out] result new mirrored IndexedSlices over the destinations, owned by the caller
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL arguments, another op, bad destinations or a
 *         component on the host.
 */
STARFOLD_API starfold_status_t starfold_cross_device_ops_reduce_indexed_slices(
    starfold_cross_device_ops_t ops, starfold_op_t op, starfold_indexed_slices_t slices,
    const starfold_destination_t *destinations, const starfold_communication_options_t *options,
    starfold_indexed_slices_t *result);

/* =================================================================================================
 * Strategies (tf.distribute.Strategy, StrategyExtended)
 * ================================================================================================= */

/** @brief Opaque strategy: which devices the replicas run on and how their values are reduced. */
typedef struct starfold_strategy *starfold_strategy_t;

/** @brief Opaque replica context: what a replica function may do (tf.distribute.ReplicaContext). */
typedef struct starfold_replica_context *starfold_replica_context_t;

/** @brief The strategy classes. */
typedef enum starfold_strategy_kind {
    STARFOLD_STRATEGY_MIRRORED = 0,   /**< tf.distribute.MirroredStrategy */
    STARFOLD_STRATEGY_ONE_DEVICE,     /**< tf.distribute.OneDeviceStrategy */
    STARFOLD_STRATEGY_CENTRAL_STORAGE, /**< tf.distribute.experimental.CentralStorageStrategy */
    /** tf.distribute.MultiWorkerMirroredStrategy: starfold_multi_worker_mirrored_strategy_create() in starfold/mpi.h */
    STARFOLD_STRATEGY_MULTI_WORKER_MIRRORED
} starfold_strategy_kind_t;

/**
 * @brief Name of a strategy class.
 * @param [in] kind the class
 * @return "MirroredStrategy", "OneDeviceStrategy", "CentralStorageStrategy", "MultiWorkerMirroredStrategy"; "unknown" otherwise
 */
STARFOLD_API const char *starfold_strategy_kind_name(starfold_strategy_kind_t kind);

/**
 * @brief TensorFlow's `tf.distribute.MirroredStrategy(devices, cross_device_ops)`.
 *
 * Replica i runs on @p devices[i]; variables (starfold_strategy_create_variable()) are mirrored over
 * the same devices. Without @p cross_device_ops the strategy uses "auto": for each collective, the
 * algorithm the cost model predicts fastest on the topology (compiled once and kept by the ops for the
 * next identical collective). TensorFlow 1.x's own rule - HierarchicalCopyAllReduce(num_packs =
 * number of devices) on a DGX-1-like machine, ReductionToOneDevice() elsewhere - is a caller's choice
 * (pass those ops). The default ops also follow the implementation field of the communication
 * options: RING selects "ring" (or "hierarchical-copy" without a registered ring), NCCL selects
 * "hierarchical-copy".
 *
 * @param [in]  context the StarPU context; must outlive the strategy
 * @param [in]  topology the topology reductions are planned on (a reference is kept); NULL = the
 *              context's (starfold_context_topology())
 * @param [in]  num_devices number of replicas; 0 with NULL @p devices = every device of the context
 * @param [in]  devices distinct devices (copied)
 * @param [in]  cross_device_ops NULL for the default choice; else a reference is kept
 * @param [out] strategy the new strategy, owned by the caller (starfold_strategy_destroy())
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT ("No duplicates allowed in `devices` argument", a device
 *         outside the context or the topology).
 */
STARFOLD_API starfold_status_t starfold_mirrored_strategy_create(starfold_context_t context,
                                                                 starfold_topology_t topology, int num_devices,
                                                                 const int *devices,
                                                                 starfold_cross_device_ops_t cross_device_ops,
                                                                 starfold_strategy_t *strategy);

/**
 * @brief TensorFlow's `tf.distribute.OneDeviceStrategy(device)`: one replica on @p device.
 *
 * Its reductions have one component: reduce_to and batch_reduce_to give the value itself (a copy on
 * the destination), as TensorFlow returns the value unchanged.
 * @param [in]  context the StarPU context; must outlive the strategy
 * @param [in]  topology the topology (a reference is kept); NULL = the context's
 * @param [in]  device the replica's device
 * @param [out] strategy the new strategy, owned by the caller (starfold_strategy_destroy())
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for a device outside the context or the topology.
 */
STARFOLD_API starfold_status_t starfold_one_device_strategy_create(starfold_context_t context,
                                                                   starfold_topology_t topology, int device,
                                                                   starfold_strategy_t *strategy);

/** @brief For starfold_central_storage_strategy_create(): TensorFlow's default parameter device. */
#define STARFOLD_PARAMETER_DEVICE_DEFAULT (-2)

/**
 * @brief TensorFlow's `tf.distribute.experimental.CentralStorageStrategy(compute_devices, parameter_device)`.
 *
 * Replicas run on the compute devices; variables live in one place, the parameter device (a device
 * or ::STARFOLD_DEVICE_HOST). Reductions use ReductionToOneDevice(reduce_to_device = the parameter
 * device; for the host, the first device of the destinations), as TensorFlow's
 * ReductionToOneDevice("/device:CPU:0").
 *
 * @param [in]  context the StarPU context; must outlive the strategy
 * @param [in]  topology the topology (a reference is kept); NULL = the context's
 * @param [in]  num_compute_devices 0 with NULL @p compute_devices = every device of the context
 * @param [in]  compute_devices the replicas' distinct devices (copied)
 * @param [in]  parameter_device a device, ::STARFOLD_DEVICE_HOST, or ::STARFOLD_PARAMETER_DEVICE_DEFAULT
 *              (TensorFlow's default: the only compute device when there is one, else the host)
 * @param [out] strategy the new strategy, owned by the caller (starfold_strategy_destroy())
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for duplicated devices or a device outside the context or the topology.
 */
STARFOLD_API starfold_status_t starfold_central_storage_strategy_create(starfold_context_t context,
                                                                        starfold_topology_t topology,
                                                                        int num_compute_devices,
                                                                        const int *compute_devices,
                                                                        int parameter_device,
                                                                        starfold_strategy_t *strategy);

/**
 * @brief Frees a strategy (no run may be in progress). Values created with it stay valid.
 * @param [in] strategy the strategy, or NULL (no-op)
 */
STARFOLD_API void starfold_strategy_destroy(starfold_strategy_t strategy);

/**
 * @brief Which strategy class.
 * @param [in] strategy the strategy
 * @return the class (Mirrored for NULL)
 */
STARFOLD_API starfold_strategy_kind_t starfold_strategy_kind(starfold_strategy_t strategy);
/**
 * @brief TensorFlow's `num_replicas_in_sync`.
 * @param [in] strategy the strategy
 * @return the number of replicas; 0 for NULL
 */
STARFOLD_API int starfold_strategy_num_replicas_in_sync(starfold_strategy_t strategy);
/**
 * @brief TensorFlow's `extended.worker_devices[replica]`.
 * @param [in] strategy the strategy
 * @param [in] replica 0 .. num_replicas_in_sync-1
 * @return the device of that replica; -2 out of range
 */
STARFOLD_API int starfold_strategy_worker_device(starfold_strategy_t strategy, int replica);
/**
 * @brief The context the strategy runs on.
 * @param [in] strategy the strategy
 * @return the context (borrowed); NULL for NULL
 */
STARFOLD_API starfold_context_t starfold_strategy_context(starfold_strategy_t strategy);
/**
 * @brief The topology reductions are planned on.
 * @param [in] strategy the strategy
 * @return the topology (borrowed); NULL for NULL
 */
STARFOLD_API starfold_topology_t starfold_strategy_topology(starfold_strategy_t strategy);
/**
 * @brief The cross-device ops in use: the caller's or the default choice (TensorFlow's
 *        `extended._cross_device_ops`).
 * @param [in] strategy the strategy
 * @return the ops (borrowed; retain them to keep them beyond the strategy); NULL for NULL
 */
STARFOLD_API starfold_cross_device_ops_t starfold_strategy_cross_device_ops(starfold_strategy_t strategy);

/**
 * @brief Sets the strategy's default communication options; every call's own options are merged over
 *        them (starfold_communication_options_merge()). merge_call, which takes no options, uses these.
 * @param [in] strategy the strategy
 * @param [in] options the options (copied); NULL restores the defaults
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for invalid options. Not to be called during a run.
 */
STARFOLD_API starfold_status_t starfold_strategy_set_communication_options(
    starfold_strategy_t strategy, const starfold_communication_options_t *options);

/**
 * @brief A variable created in the strategy's scope (TensorFlow's `tf.Variable(init)` under
 *        `strategy.scope()`): mirrored over the replica devices (MirroredStrategy), one component on
 *        the parameter device (CentralStorageStrategy) or on the device (OneDeviceStrategy).
 *
 * The same as starfold_strategy_create_variable_with_options() with the default options: TensorFlow's
 * synchronization AUTO (ON_WRITE, a MirroredVariable) and aggregation NONE, so the cross-replica
 * updates work and a replica-context assign is refused (see starfold_variable_assign()).
 * @param [in]  strategy the strategy
 * @param [in]  dtype element type
 * @param [in]  count elements
 * @param [in]  init NULL (zeros) or @p count elements of @p dtype, copied to every component
 * @param [out] variable a new mirrored value, owned by the caller
 * @return as starfold_value_create()
 */
STARFOLD_API starfold_status_t starfold_strategy_create_variable(starfold_strategy_t strategy, starfold_dtype_t dtype,
                                                                 size_t count, const void *init,
                                                                 starfold_value_t *variable);

/* =================================================================================================
 * Variables: synchronization and aggregation (MirroredVariable, SyncOnReadVariable)
 * ================================================================================================= */

/** @brief TensorFlow's `tf.VariableSynchronization` (same numbering): when a variable's copies meet. */
typedef enum starfold_variable_synchronization {
    /** "AUTO": the strategy decides; every strategy decides ON_WRITE, as TensorFlow's do. */
    STARFOLD_SYNCHRONIZATION_AUTO = 0,
    /** "NONE": refused under a strategy, as TensorFlow refuses it. */
    STARFOLD_SYNCHRONIZATION_NONE,
    /** "ON_WRITE": TensorFlow's MirroredVariable, every copy updated alike by every update. */
    STARFOLD_SYNCHRONIZATION_ON_WRITE,
    /**
     * "ON_READ": TensorFlow's SyncOnReadVariable (metrics, batch-norm statistics): one copy per replica,
     * each replica updating its own, the copies aggregated when read in the cross-replica context.
     */
    STARFOLD_SYNCHRONIZATION_ON_READ
} starfold_variable_synchronization_t;

/** @brief TensorFlow's `tf.VariableAggregation` (same numbering): how the replicas' values combine. */
typedef enum starfold_variable_aggregation {
    STARFOLD_AGGREGATION_NONE = 0,          /**< "NONE" (TensorFlow's default): no aggregation */
    STARFOLD_AGGREGATION_SUM,               /**< "SUM": the replicas' values added */
    STARFOLD_AGGREGATION_MEAN,              /**< "MEAN": their sum divided by the number of replicas */
    STARFOLD_AGGREGATION_ONLY_FIRST_REPLICA /**< "ONLY_FIRST_REPLICA": replica 0's value, the others' ignored */
} starfold_variable_aggregation_t;

/**
 * @brief Name of a synchronization.
 * @param [in] synchronization the synchronization
 * @return "AUTO", "NONE", "ON_WRITE", "ON_READ"; "unknown" otherwise (never NULL)
 */
STARFOLD_API const char *starfold_variable_synchronization_name(starfold_variable_synchronization_t synchronization);

/**
 * @brief Name of an aggregation.
 * @param [in] aggregation the aggregation
 * @return "NONE", "SUM", "MEAN", "ONLY_FIRST_REPLICA"; "unknown" otherwise (never NULL)
 */
STARFOLD_API const char *starfold_variable_aggregation_name(starfold_variable_aggregation_t aggregation);

/**
 * @brief The arguments of `tf.Variable(..., synchronization=, aggregation=)` that starfold keeps.
 *        Initialise with starfold_variable_options_init(); every field's zero is TensorFlow's default.
 */
typedef struct starfold_variable_options {
    starfold_variable_synchronization_t synchronization; /**< default AUTO (ON_WRITE) */
    starfold_variable_aggregation_t aggregation;         /**< default NONE */
} starfold_variable_options_t;

/**
 * @brief Fills @p options with TensorFlow's defaults: synchronization AUTO, aggregation NONE.
 * @param [out] options the options to initialise (NULL is a no-op)
 */
STARFOLD_API void starfold_variable_options_init(starfold_variable_options_t *options);

/**
 * @brief TensorFlow's `tf.Variable(init, synchronization=..., aggregation=...)` under `strategy.scope()`.
 *
 * ON_WRITE (and AUTO): a MirroredVariable, laid out as starfold_strategy_create_variable() lays it out
 * (one copy per replica device, one on the parameter device for CentralStorageStrategy, which
 * TensorFlow calls an AggregatingVariable); a value of kind ::STARFOLD_VALUE_MIRRORED.
 * ON_READ: a SyncOnReadVariable, one copy per replica device whatever the strategy (each replica
 * updating a copy of its own is what makes one; under CentralStorageStrategy too, on the compute
 * devices); a value of kind ::STARFOLD_VALUE_PER_REPLICA, @p init in every copy to start with.
 * Under OneDeviceStrategy TensorFlow makes an ordinary variable: its updates and reads are those of
 * one replica whatever the options (no refusal, no aggregation to do).
 *
 * The variable keeps what its updates and reads need of the strategy (its cross-device ops, topology,
 * communication options and number of replicas, by reference), so it outlives the strategy as every
 * value does.
 * @param [in]  strategy the strategy
 * @param [in]  dtype element type
 * @param [in]  count elements
 * @param [in]  init NULL (zeros) or @p count elements of @p dtype, copied to every copy
 * @param [in]  options NULL = starfold_variable_options_init()'s defaults
 * @param [out] variable the new variable, owned by the caller (starfold_value_destroy())
 * @return as starfold_value_create(); ::STARFOLD_ERR_INVALID_ARGUMENT for synchronization NONE
 *         ("`NONE` variable synchronization mode is not supported with `tf.distribute` strategy."),
 *         or a synchronization or aggregation out of its enum ("Invalid variable aggregation mode: 7").
 */
STARFOLD_API starfold_status_t starfold_strategy_create_variable_with_options(
    starfold_strategy_t strategy, starfold_dtype_t dtype, size_t count, const void *init,
    const starfold_variable_options_t *options, starfold_value_t *variable);

/**
 * @brief Whether @p value is a variable (made by starfold_strategy_create_variable() or
 *        starfold_strategy_create_variable_with_options()).
 * @param [in] value the value, or NULL
 * @return 1 or 0
 */
STARFOLD_API int starfold_value_is_variable(starfold_value_t value);

/**
 * @brief A variable's synchronization, AUTO resolved.
 * @param [in] variable the variable
 * @return ON_WRITE or ON_READ; NONE for NULL or a value that is no variable
 */
STARFOLD_API starfold_variable_synchronization_t starfold_variable_synchronization(starfold_value_t variable);

/**
 * @brief A variable's aggregation.
 * @param [in] variable the variable
 * @return its aggregation; NONE for NULL or a value that is no variable
 */
STARFOLD_API starfold_variable_aggregation_t starfold_variable_aggregation(starfold_value_t variable);

/**
 * @brief TensorFlow's `var.assign(value)`, in the replica context or the cross-replica context (the
 *        calling thread's: starfold_get_replica_context()).
 *
 * **Mirrored (ON_WRITE) variable, replica context** (inside starfold_strategy_run()): a collective, as
 * TensorFlow's MirroredVariable makes it (its merge_call): every replica calls it, in the same order
 * as its other collectives, on the same variable with its own value; the values are aggregated and
 * every copy gets the same result:
 *  - SUM: the replicas' values added; MEAN: their sum divided by the number of replicas (floating
 *    dtypes only: TensorFlow refuses an integer variable, "Cannot update non-float variables with
 *    tf.VariableAggregation.MEAN aggregation in replica context. Either change the variable dtype to
 *    float or update it in cross-replica context.");
 *  - ONLY_FIRST_REPLICA: replica 0's value (the others are not read);
 *  - NONE: refused on every replica, none left waiting, with TensorFlow's message: "You must specify
 *    an aggregation method to update a MirroredVariable in Replica Context. You can do so by passing
 *    an explicit value for argument `aggregation` to tf.Variable(..)." (AggregatingVariable under
 *    CentralStorageStrategy). Update it in the cross-replica context instead (a merge function).
 * When every replica passes the very same value object, it is one value, not a per-replica one (as
 * TensorFlow's regroup makes it): MEAN and ONLY_FIRST_REPLICA give it, SUM is refused ("A
 * non-DistributedValues value ... cannot be reduced with the given reduce op ReduceOp.SUM").
 * The last replica to arrive submits **one graph**, the cross-device ops' all-reduce (or reduce to the
 * parameter device, or copy of replica 0's value) followed by the update of every copy, and every
 * replica returns without waiting for it. With replicas in threads, the wait for the others is
 * bounded by the strategy's timeout_seconds (::STARFOLD_ERR_TIMEOUT for every replica, nothing
 * submitted).
 *
 * **Mirrored variable, cross-replica context** (outside a run, or in a merge function): every copy is
 * assigned the same value, TensorFlow's `strategy.extended.update`: @p value has one component (any
 * device, or the host) or is mirrored; a per-replica value of several components would leave the
 * copies different and is refused (reduce it first).
 *
 * **Sync-on-read (ON_READ) variable**: in the replica context only the calling replica's copy is
 * assigned (no communication, not a collective); in the cross-replica context every copy is assigned
 * @p value, divided by the number of replicas for SUM (TensorFlow does this, so that reading the SUM
 * gives @p value back; integers truncate), as is for MEAN, ONLY_FIRST_REPLICA and NONE.
 *
 * Asynchronous: the update is submitted to StarPU and the call returns; StarPU orders later tasks on
 * the copies after it, starfold_value_read() and starfold_value_wait() wait for it.
 * @param [in] variable the variable (written)
 * @param [in] value what to assign, of the variable's dtype and count (not written); in the replica
 *             context, a value with a component on the replica's device (or a one-component value)
 * @return ::STARFOLD_OK; ::STARFOLD_ERR_INVALID_ARGUMENT (a value that is no variable, another dtype or
 *         count, the refusals above, replicas updating different variables or making different
 *         collectives); ::STARFOLD_ERR_TIMEOUT. Under MultiWorkerMirroredStrategy a replica-context
 *         update aggregates over every replica of every process (ONLY_FIRST_REPLICA: global replica 0).
 */
STARFOLD_API starfold_status_t starfold_variable_assign(starfold_value_t variable, starfold_value_t value);

/**
 * @brief TensorFlow's `var.assign_add(value)`: as starfold_variable_assign(), each copy adding the
 *        (aggregated) value: a mirrored variable in the replica context gets copy + SUM, MEAN or replica
 *        0's value of the replicas' values, in one graph with the all-reduce.
 *
 * A sync-on-read variable with aggregation SUM refuses it in the cross-replica context, as TensorFlow
 * does ("SyncOnReadVariable does not support `assign_add` in cross-replica context when aggregation
 * is set to `tf.VariableAggregation.SUM`."); with the other aggregations every copy adds @p value.
 * @param [in] variable the variable (written)
 * @param [in] value what to add (not written)
 * @return as starfold_variable_assign()
 */
STARFOLD_API starfold_status_t starfold_variable_assign_add(starfold_value_t variable, starfold_value_t value);

/**
 * @brief TensorFlow's `var.assign_sub(value)`: as starfold_variable_assign_add(), each copy subtracting
 *        the (aggregated) value (integers wrap around).
 * @param [in] variable the variable (written)
 * @param [in] value what to subtract (not written)
 * @return as starfold_variable_assign_add()
 */
STARFOLD_API starfold_status_t starfold_variable_assign_sub(starfold_value_t variable, starfold_value_t value);

/**
 * @brief TensorFlow's `var.read_value()`: a snapshot of the variable, as a new one-component value.
 *
 * In the replica context: the calling replica's copy, on its device (a mirrored variable's copies are
 * equal; a sync-on-read variable's copy is the replica's own). In the cross-replica context, on the
 * host (TensorFlow's current device there): a mirrored variable's first copy; a sync-on-read
 * variable's copies aggregated as TensorFlow's `strategy.reduce(aggregation, var, axis=None)`: SUM
 * their sum, MEAN their mean (an integer MEAN as the strategy's promote_integer_mean says),
 * ONLY_FIRST_REPLICA copy 0; NONE is refused, as TensorFlow refuses it ("Could not convert from
 * `tf.VariableAggregation` VariableAggregation.NONE to`tf.distribute.ReduceOp` type").
 * Asynchronous as the other reductions: starfold_value_read() of the result waits.
 * @param [in]  variable the variable (not written)
 * @param [out] result the snapshot, owned by the caller; untouched on failure
 * @return ::STARFOLD_OK; ::STARFOLD_ERR_INVALID_ARGUMENT (a value that is no variable, NONE above, a
 *         replica with no copy of a sync-on-read variable). Under MultiWorkerMirroredStrategy a SUM or
 *         MEAN read of a sync-on-read variable in the cross-replica context reduces the copies of every
 *         process: a collective (every process reads), through the strategy's process group, which
 *         must then still exist; its errors are the group's, on every process.
 */
STARFOLD_API starfold_status_t starfold_variable_read_value(starfold_value_t variable, starfold_value_t *result);

/**
 * @brief A replica function: what starfold_strategy_run() calls once per replica.
 * @param [in] context this replica's context (valid during the call, in this thread)
 * @param [in] arg the argument given to starfold_strategy_run(), shared by every replica
 * @return ::STARFOLD_OK, or an error that starfold_strategy_run() reports
 */
typedef starfold_status_t (*starfold_replica_fn_t)(starfold_replica_context_t context, void *arg);

/**
 * @brief How starfold_strategy_run() runs the replica functions (starfold_strategy_set_replica_mode()).
 */
typedef enum starfold_replica_mode {
    /**
     * One thread per replica, all at once. A replica may compute, block or wait on its own while
     * the others go on, and keeps its own thread-local state; each of its collectives wakes the
     * others' threads, which costs a small step 3-5x batch_reduce_to of the same values on a
     * loaded machine (BENCHMARKS.md). timeout_seconds applies to the replicas' wait for each other.
     */
    STARFOLD_REPLICAS_THREADS = 0,
    /**
     * One replica at a time, on the thread that calls starfold_strategy_run(), each on a stack of
     * its own (8 MiB, mapped as used), switching to the next when a replica waits in a collective:
     * TensorFlow's eager MirroredStrategy, which resumes its replica threads one at a time. The
     * default. No thread is woken, so a step of a small collective costs little more than the
     * collective (BENCHMARKS.md: run + all_reduce of one 4 KiB tensor on 8 replicas, 1.1-1.3x
     * batch_reduce_to of it, against 3-5x with threads). The replicas share the calling thread:
     * its thread-local state (a CUDA current device, errno) is every replica's, their host
     * computations do not overlap (the StarPU tasks they submit still do), a replica that blocks
     * on something only a later replica provides outside a collective never returns (as in
     * TensorFlow), and timeout_seconds does not apply to the replicas' wait for each other (the
     * replica not yet there is running on this very thread). A replica that returns while others
     * wait in a collective still fails them at once.
     */
    STARFOLD_REPLICAS_IN_TURN
} starfold_replica_mode_t;

/**
 * @brief Sets how the strategy's later runs run their replicas (::STARFOLD_REPLICAS_IN_TURN unless set).
 *
 * Waits for a run in progress on another thread to end.
 * @param [in] strategy the strategy
 * @param [in] mode the mode
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL, an unknown mode, or a call from a replica or a
 *         merge function (nothing changed)
 */
STARFOLD_API starfold_status_t starfold_strategy_set_replica_mode(starfold_strategy_t strategy,
                                                                  starfold_replica_mode_t mode);

/**
 * @brief The strategy's replica mode.
 * @param [in] strategy the strategy
 * @return the mode; the default, ::STARFOLD_REPLICAS_IN_TURN, for NULL
 */
STARFOLD_API starfold_replica_mode_t starfold_strategy_replica_mode(starfold_strategy_t strategy);

/**
 * @brief TensorFlow's `strategy.run(fn, args)`: calls @p fn once per replica, one at a time on
 *        the calling thread, and returns when every replica has returned.
 *
 * As TensorFlow's eager mode, the replicas take turns (::STARFOLD_REPLICAS_IN_TURN, the default);
 * unlike it, a replica switches to the next at every collective, so that a collective issued
 * directly from a replica never deadlocks (tensorflow#53748). With ::STARFOLD_REPLICAS_THREADS
 * (starfold_strategy_set_replica_mode()) they run at once, one thread each. Collectives are
 * rendezvous of all replicas. Each replica must make the same sequence of all_reduce and merge_call calls. A replica
 * that returns while the others wait in a collective (or that skips one) makes them fail at once
 * with "Some replicas made a different number of replica_context().merge_call() calls." - never a
 * deadlock. With threads, a replica waiting longer than the options' timeout_seconds for the
 * others fails with ::STARFOLD_ERR_TIMEOUT, and so does every replica of that collective; after
 * either failure every later collective of the run fails at once.
 *
 * @param [in] strategy the strategy
 * @param [in] fn the replica function
 * @param [in] arg passed to every replica (index per-replica data with the replica id)
 * @return ::STARFOLD_OK when every replica returned ::STARFOLD_OK; else the error of the lowest
 *         replica whose failure is not a consequence of another replica's (starfold_last_error()
 *         names the replica); ::STARFOLD_ERR_INVALID_ARGUMENT when called from a replica or merge
 *         function; ::STARFOLD_ERR_RUNTIME when the threads cannot be started, ::STARFOLD_ERR_OUT_OF_MEMORY
 *         when the stacks of replicas in turn cannot be mapped (nothing ran either way).
 */
STARFOLD_API starfold_status_t starfold_strategy_run(starfold_strategy_t strategy, starfold_replica_fn_t fn, void *arg);

/**
 * @brief TensorFlow's `per_replica = strategy.run(fn, args)`: starfold_strategy_run(), then what the
 *        replicas returned as one value.
 *
 * Each replica hands its result over with starfold_replica_context_set_result() (typically a value
 * it made with starfold_replica_context_create_value(), TensorFlow's tf.constant inside `run`, or
 * the result of an all_reduce). When every replica set one, @p result is TensorFlow's regroup of
 * them: a PerReplica value whose component i is replica i's (one-component values on the replicas'
 * devices, not copied), or the very object when every replica returned the same one (a mirrored
 * variable). When no replica set one, @p result is NULL.
 * @param [in]  strategy the strategy
 * @param [in]  fn the replica function
 * @param [in]  arg passed to every replica
 * @param [out] result the regrouped result (owned by the caller), or NULL; untouched on failure
 * @return as starfold_strategy_run(); ::STARFOLD_ERR_INVALID_ARGUMENT when some replicas set a result
 *         and others none, or when the results cannot be regrouped (not one component each, devices
 *         repeated, dtypes or counts differing), naming the replica.
 */
STARFOLD_API starfold_status_t starfold_strategy_run_results(starfold_strategy_t strategy, starfold_replica_fn_t fn,
                                                             void *arg, starfold_value_t *result);

/**
 * @brief A new one-component value on the calling replica's device (TensorFlow's `tf.constant(...)`
 *        inside `strategy.run`, placed by the replica's device scope).
 * @param [in]  context the calling replica's context (from its own replica function only)
 * @param [in]  dtype element type
 * @param [in]  count elements
 * @param [in]  init NULL (zeros) or @p count elements of @p dtype
 * @param [out] value the new value, owned by the caller
 * @return as starfold_value_create(); ::STARFOLD_ERR_INVALID_ARGUMENT outside that replica function.
 */
STARFOLD_API starfold_status_t starfold_replica_context_create_value(starfold_replica_context_t context,
                                                                     starfold_dtype_t dtype, size_t count,
                                                                     const void *init, starfold_value_t *value);

/**
 * @brief Sets what the calling replica returns to starfold_strategy_run_results() (a reference is
 *        taken: the replica may destroy its own afterwards). A later call replaces it; NULL clears it.
 *        starfold_strategy_run() drops the results.
 * @param [in] context the calling replica's context (from its own replica function only)
 * @param [in] value a value of the strategy's context, or NULL
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT outside that replica function or for a value of another context.
 */
STARFOLD_API starfold_status_t starfold_replica_context_set_result(starfold_replica_context_t context,
                                                                   starfold_value_t value);

/**
 * @brief TensorFlow's `strategy.extended.reduce_to(reduce_op, value, destinations, options)`.
 *
 * Cross-replica context only (not in a replica function; in a merge function it is fine).
 * MirroredStrategy: a mirrored value reduced with MEAN, MIN or MAX is copied (its components are
 * equal; TensorFlow returns it unchanged), anything else goes through the cross-device ops.
 * CentralStorageStrategy: ReductionToOneDevice on the parameter device. OneDeviceStrategy: a copy on
 * the destination.
 *
 * Refused with ::STARFOLD_ERR_INVALID_ARGUMENT, as TensorFlow refuses them:
 *  - a SUM of a mirrored value of several components (it is one value, not n; TensorFlow asserts);
 *  - a SUM (or PROD) of a value of one component (TensorFlow's non-DistributedValues) when more than one
 *    replica is in sync: "A non-DistributedValues value ... cannot be reduced with the given reduce op
 *    ReduceOp.SUM". Its MEAN, MIN and MAX are the value itself (copied to the destinations); with one
 *    replica in sync every op gives the value.
 *
 * @param [in]  strategy the strategy
 * @param [in]  op the reduce operation
 * @param [in]  value the value to reduce (not written)
 * @param [in]  destinations where the result goes (not written)
 * @param [in]  options merged over the strategy's (NULL = the strategy's)
 * @param [out] result a new mirrored value over the destination's devices, owned by the caller
 * @return as starfold_cross_device_ops_reduce(); ::STARFOLD_ERR_INVALID_ARGUMENT with "Method requires
 *         being in cross-replica context, use get_replica_context().merge_call()" in a replica function.
 */
STARFOLD_API starfold_status_t starfold_strategy_reduce_to(starfold_strategy_t strategy, starfold_op_t op,
                                                           starfold_value_t value,
                                                           const starfold_destination_t *destinations,
                                                           const starfold_communication_options_t *options,
                                                           starfold_value_t *result);

/**
 * @brief TensorFlow's `strategy.extended.reduce_to(reduce_op, indexed_slices, destinations)`: as
 *        starfold_cross_device_ops_reduce_indexed_slices() with the strategy's ops and topology.
 *        Cross-replica context only. Under MultiWorkerMirroredStrategy, TensorFlow's CollectiveAllReduce:
 *        the rows and indices of every replica of every process, in global replica order (MEAN divides
 *        the values by num_replicas_in_sync), through starfold_group_all_gather(); the slices must
 *        have one component per replica of the process, the same dtype, width and dense rows
 *        everywhere, and a process's refusal fails every process alike.
 * @param [in]  strategy the strategy
 * @param [in]  op ::STARFOLD_OP_SUM or ::STARFOLD_OP_MEAN
 * @param [in]  slices the IndexedSlices (not written)
 * @param [in]  destinations where the result goes
 * @param [in]  options merged over the strategy's
 * @param [out] result new mirrored IndexedSlices, owned by the caller
 * @return as starfold_cross_device_ops_reduce_indexed_slices(), or the cross-replica context error
 */
STARFOLD_API starfold_status_t starfold_strategy_reduce_to_indexed_slices(
    starfold_strategy_t strategy, starfold_op_t op, starfold_indexed_slices_t slices,
    const starfold_destination_t *destinations, const starfold_communication_options_t *options,
    starfold_indexed_slices_t *result);

/** @brief One pair of a batch mixing dense values and IndexedSlices: exactly one of the two is set. */
typedef struct starfold_mixed_pair {
    starfold_value_t value;               /**< a dense value, or NULL */
    starfold_indexed_slices_t slices;     /**< IndexedSlices, or NULL */
    starfold_destination_t destinations;  /**< where its result goes */
} starfold_mixed_pair_t;

/**
 * @brief TensorFlow's `batch_reduce_to` of a list that mixes dense values and IndexedSlices: the
 *        dense pairs reduced together as starfold_strategy_batch_reduce_to() does, each IndexedSlices
 *        pair as starfold_strategy_reduce_to_indexed_slices() does, every result at its pair's index.
 * @param [in]  strategy the strategy
 * @param [in]  op ::STARFOLD_OP_SUM or ::STARFOLD_OP_MEAN (any op when there is no IndexedSlices pair)
 * @param [in]  num_pairs >= 1
 * @param [in]  pairs the pairs (not written)
 * @param [in]  options merged over the strategy's
 * @param [out] dense_results [num_pairs]: result i for a dense pair, NULL for an IndexedSlices one
 * @param [out] sparse_results [num_pairs]: result i for an IndexedSlices pair, NULL for a dense one
 * @return as the two functions; on failure no result is returned.
 */
STARFOLD_API starfold_status_t starfold_strategy_batch_reduce_to_mixed(starfold_strategy_t strategy, starfold_op_t op,
                                                                       size_t num_pairs, const starfold_mixed_pair_t *pairs,
                                                                       const starfold_communication_options_t *options,
                                                                       starfold_value_t *dense_results,
                                                                       starfold_indexed_slices_t *sparse_results);

/**
 * @brief TensorFlow's `strategy.extended.batch_reduce_to(reduce_op, value_destination_pairs, options)`:
 *        the cross-device ops' batch_reduce (one graph per group of pairs over the same devices).
 *        Cross-replica context only.
 *
 * The fast path of a training loop, taken without asking: when every value of a group lives in the
 * context's arena (starfold_value_create(), results of earlier reductions), the group's tensors are
 * views of a few vectors, its results come as one range per destination device, and the graph is
 * started as a persistent submission bound to exactly those ranges, made by the first call and
 * started by every later call over the same values and result ranges (a loop that destroys each
 * step's results before the next step gets the same ranges). make bench-api measures it against the
 * executor's own persistent views and one fused tensor. Values wrapped from the caller's handles
 * are submitted afresh every call, as their owner may unregister them at any time.
 * @param [in]  strategy the strategy
 * @param [in]  op the reduce operation
 * @param [in]  num_pairs >= 1
 * @param [in]  pairs the pairs (not written)
 * @param [in]  options merged over the strategy's (NULL = the strategy's)
 * @param [out] results @p num_pairs new values, one per pair in input order, owned by the caller
 * @return as starfold_cross_device_ops_batch_reduce(), or the cross-replica context error
 */
STARFOLD_API starfold_status_t starfold_strategy_batch_reduce_to(starfold_strategy_t strategy, starfold_op_t op,
                                                                 size_t num_pairs,
                                                                 const starfold_value_destination_pair_t *pairs,
                                                                 const starfold_communication_options_t *options,
                                                                 starfold_value_t *results);

/**
 * @brief TensorFlow's `strategy.extended.broadcast_to(tensor, destinations)`: a copy of a
 *        one-component (or mirrored) value on the destination's devices. Empty destinations mean the
 *        strategy's replica devices, as in TensorFlow. Cross-replica context only.
 * @param [in]  strategy the strategy
 * @param [in]  value a one-component or mirrored value (not written)
 * @param [in]  destinations where the copies go; a zero-initialised destination = the replica devices
 * @param [out] result a new mirrored value, owned by the caller
 * @return as starfold_cross_device_ops_broadcast(), or the cross-replica context error
 */
STARFOLD_API starfold_status_t starfold_strategy_broadcast_to(starfold_strategy_t strategy, starfold_value_t value,
                                                              const starfold_destination_t *destinations,
                                                              starfold_value_t *result);

/** @brief What an update function receives for one component of the updated variable. */
typedef struct starfold_update_call {
    starfold_strategy_t strategy;      /**< the strategy */
    starfold_value_t variable;         /**< the updated value */
    int component;                     /**< index of the component being updated (TensorFlow's update_%d) */
    int device;                        /**< its device (::STARFOLD_DEVICE_HOST for the host) */
    starpu_data_handle_t target;       /**< its handle: what the function updates */
    size_t num_args;                   /**< number of arguments */
    /**
     * The arguments selected for this component (TensorFlow's select_replica): the argument's
     * component on the same device, else its only component, else its component of the same index.
     */
    const starpu_data_handle_t *args;
    const starfold_value_t *arg_values; /**< the argument values themselves */
} starfold_update_call_t;

/**
 * @brief An update function: updates `call->target` from `call->args`, typically by submitting a
 *        StarPU task pinned to the component's device (starfold_context_device_worker()), or with
 *        starfold_update_assign().
 * @param [in] call this component's target and selected arguments (valid during the call)
 * @param [in] user_data what starfold_strategy_update() was given
 * @return ::STARFOLD_OK, or an error that stops the update and is returned by starfold_strategy_update()
 */
typedef starfold_status_t (*starfold_update_fn_t)(const starfold_update_call_t *call, void *user_data);

/**
 * @brief TensorFlow's `strategy.extended.update(var, fn, args)`: calls @p fn once per component of
 *        @p variable, in order, in the calling thread (cross-replica context only).
 *
 * CentralStorageStrategy rejects per-replica arguments of several components and mirrored
 * arguments of several components, as TensorFlow does.
 *
 * @param [in] strategy the strategy
 * @param [in] variable the value to update (its components are passed to @p fn; the value itself is
 *             not replaced)
 * @param [in] fn the update function
 * @param [in] num_args number of arguments
 * @param [in] args the arguments (values), each with one component, or one per component of @p variable
 * @param [in] user_data passed to @p fn
 * @return ::STARFOLD_OK, the first error of @p fn (the later components are not updated), or
 *         ::STARFOLD_ERR_INVALID_ARGUMENT for arguments that cannot be matched to the components.
 */
STARFOLD_API starfold_status_t starfold_strategy_update(starfold_strategy_t strategy, starfold_value_t variable,
                                                        starfold_update_fn_t fn, size_t num_args,
                                                        const starfold_value_t *args, void *user_data);

/**
 * @brief `var.assign(value)` in an update function: copies argument @p arg into the target component
 *        (asynchronously, through StarPU; the variable waits for it in starfold_value_wait()).
 * @param [in] call the call the update function received
 * @param [in] arg index of the argument to copy
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT when @p arg is out of range or its dtype or count differ.
 */
STARFOLD_API starfold_status_t starfold_update_assign(const starfold_update_call_t *call, size_t arg);

/** @brief starfold_strategy_reduce() without an axis: across replicas only. */
#define STARFOLD_AXIS_NONE INT_MIN

/**
 * @brief TensorFlow's `strategy.reduce(reduce_op, value, axis)`: the value reduced to the host.
 *
 * Without an axis (::STARFOLD_AXIS_NONE) the value is reduced across replicas only (the result has
 * the value's element count). With axis 0 (or -1; values are 1-D tensors) the elements are reduced
 * too, giving one element: SUM over every element of every replica; MEAN divides that sum by the
 * global element count (components x count), as TensorFlow divides by the summed dimension sizes;
 * MIN, MAX and PROD over everything. The element reduction runs on the host once the cross-replica
 * reduction is done (the operations commute), so a call with an axis waits for it.
 *
 * @param [in]  strategy the strategy
 * @param [in]  op the reduce operation (promote_integer_mean from the strategy's options applies)
 * @param [in]  value the value (not written)
 * @param [in]  axis ::STARFOLD_AXIS_NONE, 0 or -1
 * @param [out] result a new one-component host value, owned by the caller
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for another axis ("axis 1 is out of bounds for a 1-D
 *         tensor"), an integer MEAN over zero elements, or in a replica function.
 */
STARFOLD_API starfold_status_t starfold_strategy_reduce(starfold_strategy_t strategy, starfold_op_t op,
                                                        starfold_value_t value, int axis, starfold_value_t *result);

/**
 * @brief TensorFlow's `Strategy.gather(value, axis)`: the replicas' components concatenated along
 *        @p axis in replica order, on the current device, which in the cross-replica context is the
 *        host. Cross-replica context only.
 *
 * A per-replica value (the results of starfold_strategy_run_results()) gives n x count elements; a
 * mirrored value gives every copy, one after the other, as TensorFlow gathers a mirrored variable's
 * components; a value of one component is copied. Planned as starfold_cross_device_ops_gather() with
 * the strategy's ops.
 * @param [in]  strategy the strategy
 * @param [in]  value the value (not written)
 * @param [in]  axis 0 or -1 (values are 1-D tensors)
 * @param [out] result a new one-component host value, owned by the caller
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL arguments, another axis, a value of another context,
 *         or in a replica function. Under MultiWorkerMirroredStrategy every process gets every
 *         replica's elements, global replica order (starfold_group_all_gather()), the value holding
 *         one component per replica of the process; the errors are then the group's, on every process.
 */
STARFOLD_API starfold_status_t starfold_strategy_gather(starfold_strategy_t strategy, starfold_value_t value, int axis,
                                                        starfold_value_t *result);

/* =================================================================================================
 * Replica context (tf.distribute.ReplicaContext)
 * ================================================================================================= */

/**
 * @brief TensorFlow's `tf.distribute.get_replica_context()`.
 * @return the replica context of the calling thread while it runs a replica function (borrowed);
 *         NULL in the cross-replica context (outside a run, or inside a merge function)
 */
STARFOLD_API starfold_replica_context_t starfold_get_replica_context(void);

/**
 * @brief TensorFlow's `replica_id_in_sync_group`.
 * @param [in] context the replica context
 * @return 0 .. num_replicas_in_sync-1; -1 for NULL
 */
STARFOLD_API int starfold_replica_context_replica_id_in_sync_group(starfold_replica_context_t context);
/**
 * @brief TensorFlow's `num_replicas_in_sync`.
 * @param [in] context the replica context
 * @return the number of replicas; 0 for NULL
 */
STARFOLD_API int starfold_replica_context_num_replicas_in_sync(starfold_replica_context_t context);
/**
 * @brief TensorFlow's `devices`: the one device this replica runs on.
 * @param [in] context the replica context
 * @return the device; -2 for NULL
 */
STARFOLD_API int starfold_replica_context_device(starfold_replica_context_t context);
/**
 * @brief TensorFlow's `strategy`.
 * @param [in] context the replica context
 * @return the strategy running this replica (borrowed); NULL for NULL
 */
STARFOLD_API starfold_strategy_t starfold_replica_context_strategy(starfold_replica_context_t context);

/**
 * @brief This replica's handle of a distributed value (TensorFlow's select_replica): its component
 *        on this replica's device, else its only component, else its component of this replica's index.
 * @param [in]  context the replica context
 * @param [in]  value the value
 * @param [out] handle borrowed, valid while the value lives
 * @return ::STARFOLD_OK or ::STARFOLD_ERR_INVALID_ARGUMENT when no component fits
 */
STARFOLD_API starfold_status_t starfold_replica_context_select(starfold_replica_context_t context,
                                                               starfold_value_t value, starpu_data_handle_t *handle);

/**
 * @brief TensorFlow's `ReplicaContext.all_reduce(reduce_op, value, options)` for a list of values:
 *        every replica passes its own list, all are reduced in **one batched collective** (one graph
 *        for the whole list), and every replica gets the reduced values.
 *
 * A rendezvous of all replicas: each must call it (in the same order relative to its other
 * collectives) with as many values, of the same dtypes and counts, and the same op. The last replica
 * to arrive compiles and submits the graph (the strategy's batch_reduce_to with each value as its own
 * destination). Every replica returns without waiting for the graph to run, unless the collective
 * is small (64 KiB per replica or less): then the last replica waits for it before the others leave,
 * since the reduction takes less time than waking every replica once more, and the results are
 * ready when it returns (a failed reduction is this call's error). Each value must have a component on
 * this replica's device (a one-component value there, or a mirrored variable: its component on this
 * device is used, so all_reduce of a mirrored variable sums every replica's copy).
 *
 * @param [in]  context this replica's context (the calling thread's own)
 * @param [in]  op the reduce operation (the same on every replica)
 * @param [in]  num_values >= 1
 * @param [in]  values this replica's values (not written)
 * @param [in]  options merged over the strategy's; its timeout_seconds bounds the wait for the others
 *              (replicas in threads: ::STARFOLD_REPLICAS_THREADS)
 * @param [out] results @p num_values new one-component values on this replica's device, owned by the
 *              caller; untouched on failure
 * @return ::STARFOLD_ERR_TIMEOUT (not every replica joined in time; nothing was submitted, so no
 *         input changed), ::STARFOLD_ERR_INVALID_ARGUMENT (replicas that disagree, a replica that
 *         returned instead of joining, a call outside this replica's function), or the reduction's error.
 */
STARFOLD_API starfold_status_t starfold_replica_context_all_reduce(starfold_replica_context_t context,
                                                                   starfold_op_t op, size_t num_values,
                                                                   const starfold_value_t *values,
                                                                   const starfold_communication_options_t *options,
                                                                   starfold_value_t *results);

/**
 * @brief TensorFlow's `ReplicaContext.all_gather(value, axis)`: every replica's value concatenated
 *        along @p axis in replica order, on every replica's device.
 *
 * A collective, as starfold_replica_context_all_reduce(): every replica of the run must call it, in
 * the same order as its other collectives, with a value of the same dtype; the counts may differ (as
 * TensorFlow's shapes may differ along the gathered axis), replica r's block following those of
 * replicas 0 .. r-1. The last to arrive compiles and submits one gather graph and returns without
 * waiting for it, unless the gathered value is 64 KiB or less (then, as for all_reduce, the results
 * are ready when every replica returns). The value must have a component on this replica's device.
 * @param [in]  context this replica's context (the calling thread's own)
 * @param [in]  value this replica's value (not written)
 * @param [in]  axis 0 or -1 (values are 1-D tensors)
 * @param [in]  options merged over the strategy's; its timeout_seconds bounds the wait for the others
 *              (replicas in threads: ::STARFOLD_REPLICAS_THREADS)
 * @param [out] result a new one-component value on this replica's device holding every replica's
 *              elements, owned by the caller; untouched on failure
 * @return ::STARFOLD_ERR_TIMEOUT (not every replica joined in time), ::STARFOLD_ERR_INVALID_ARGUMENT
 *         (another axis, replicas that disagree on the dtype, a call outside this replica's function).
 *         Under MultiWorkerMirroredStrategy the replicas of every process, global replica order
 *         (starfold_group_all_gather()); one replica's refusal fails every replica of every process.
 */
STARFOLD_API starfold_status_t starfold_replica_context_all_gather(starfold_replica_context_t context,
                                                                   starfold_value_t value, int axis,
                                                                   const starfold_communication_options_t *options,
                                                                   starfold_value_t *result);

/**
 * @brief A merge function: runs once, in the cross-replica context, with every replica's argument.
 * @param [in]  strategy the strategy (TensorFlow's first argument of merge_fn)
 * @param [in]  num_replicas number of replicas
 * @param [in]  args args[r] = the argument replica r passed to merge_call (TensorFlow's PerReplica
 *              arguments; starfold_value_regroup() turns values into one)
 * @param [out] results results[r] = what replica r's merge_call returns (all NULL on entry; set the
 *              same pointer everywhere for a shared result)
 * @return ::STARFOLD_OK or an error that every replica's merge_call returns
 */
typedef starfold_status_t (*starfold_merge_fn_t)(starfold_strategy_t strategy, int num_replicas, void *const *args,
                                                 void **results);

/**
 * @brief TensorFlow's `ReplicaContext.merge_call(merge_fn, args)`: every replica pauses here; when all
 *        have arrived, @p merge_fn runs once (with replica 0's function, as TensorFlow uses thread 0's)
 *        in the cross-replica context, in the thread of the last replica to arrive; then each replica
 *        continues with its result.
 *
 * With replicas in threads (::STARFOLD_REPLICAS_THREADS), the wait for the other replicas is
 * bounded by the strategy's timeout_seconds (starfold_strategy_set_communication_options()).
 *
 * @param [in]  context this replica's context (the calling thread's own)
 * @param [in]  fn the merge function
 * @param [in]  arg this replica's argument
 * @param [out] result this replica's result (may be NULL if not wanted)
 * @return @p fn's status, ::STARFOLD_ERR_TIMEOUT, or ::STARFOLD_ERR_INVALID_ARGUMENT ("Some replicas
 *         made a different number of replica_context().merge_call() calls.", a call from the
 *         cross-replica context).
 */
STARFOLD_API starfold_status_t starfold_replica_context_merge_call(starfold_replica_context_t context,
                                                                   starfold_merge_fn_t fn, void *arg, void **result);

#ifdef __cplusplus
}
#endif

#endif /* STARFOLD_DISTRIBUTE_H */
