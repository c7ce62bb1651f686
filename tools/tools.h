/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold's tools: a helper library for the command, the tests and the examples. It is not part of
 * libstarfold, is never installed and has no ABI (UCC keeps the same kind of code in tools/perf).
 *
 *   tensor lists   the text `starfold graph --tensors SPEC` reads, and the built-in model lists
 *   baselines      StarPU's own reduction and a plain copy, the rows `starfold bench` compares against
 *   verification   deterministic fills, float64 references and tolerances (verify.h)
 *
 * Names carry the starfold_tools_ prefix. A program linking this library links the layers it uses.
 */
#ifndef STARFOLD_TOOLS_H
#define STARFOLD_TOOLS_H

#include <stdint.h>

#include <starfold/common.h>
#include <starfold/graph.h>

#include <starfold/exec.h>

#include "verify.h"

/**
 * Tensor lists from text
 *
 * What `starfold graph --tensors SPEC` reads: a comma-separated list of items, each `[COUNTx]SIZE`
 * (COUNT >= 1 tensors of SIZE bytes), or the name of a built-in model:
 *
 *     4x1MiB,10x4KiB,1000       four tensors of 1 MiB, ten of 4 KiB and one of 1000 bytes
 *     resnet50                  ResNet-50's 161 gradient tensors, 25,557,032 elements
 *     bert-base                 BERT-base's 199 gradient tensors (BertModel with pooler), 109,482,240 elements
 *
 * Sizes are decimal byte counts with an optional suffix, letters in any case: B, K or KiB (2^10),
 * M or MiB (2^20), G or GiB (2^30), T or TiB (2^40) - binary multiples, as nccl-tests reads its sizes.
 * "KB", "MB", "GB" and "TB" are rejected as ambiguous. Blanks around items are ignored.
 * @{
 */

/** @brief Most tensors one list may describe. */
#define STARFOLD_TOOLS_TENSORS_MAX 1048576

/**
 * @brief Parses a byte size ("1M", "4KiB", "1000"), see above.
 * @param [in]  text the size; blanks around it are ignored
 * @param [out] bytes the value; untouched on error
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for NULL, ::STARFOLD_ERR_PARSE for a malformed size, an unknown
 *         or ambiguous unit, or a value that does not fit in 64 bits.
 */
starfold_status_t starfold_tools_size_parse(const char *text, uint64_t *bytes);

/**
 * @brief Parses a tensor list or a model name into tensor descriptions of type @p dtype.
 *
 * Every size must be a multiple of the element size (0 is allowed: an empty tensor). A model gives
 * its variables' element counts, in the order of the model's parameters, whatever @p dtype.
 * The input is untrusted: no overflow, at most ::STARFOLD_TOOLS_TENSORS_MAX tensors, total size within size_t.
 *
 * @param [in]  spec the text
 * @param [in]  dtype element type of every tensor
 * @param [out] tensors a malloc'ed array, to release with starfold_tools_tensors_free(); untouched on error
 * @param [out] count its length (>= 1); untouched on error
 * @return ::STARFOLD_ERR_PARSE naming the offending item (its position and text) in starfold_last_error(),
 *         ::STARFOLD_ERR_INVALID_ARGUMENT for NULL or an unknown dtype, ::STARFOLD_ERR_OUT_OF_MEMORY.
 */
starfold_status_t starfold_tools_tensors_parse(const char *spec, starfold_dtype_t dtype,
                                                      starfold_tensor_desc_t **tensors, size_t *count);

/** @brief Frees a list from starfold_tools_tensors_parse(). NULL is a no-op. */
void starfold_tools_tensors_free(starfold_tensor_desc_t *tensors);

/** @brief Names of the built-in models starfold_tools_tensors_parse() knows, NULL-terminated. */
const char *const *starfold_tools_tensors_model_names(void);



/**
 * @brief Baseline for benchmarks: the same all-reduce done with StarPU's own STARPU_REDUX access mode
 *        (the "starpu-redux" rows of `starfold bench`).
 *
 * One task per replica, pinned to the replica's device, accumulates its input into a scratch handle
 * accessed in STARPU_REDUX mode. StarPU keeps one buffer per worker, initialised with the op's
 * identity, and reduces them in its own binary tree paired by worker index (tasks not pinned, no
 * topology awareness, no chunking); then one task per replica, pinned to its device, copies the
 * result into the replica's output (MEAN divides there, integers truncating toward zero).
 *
 * Blocks until every task has run. Calls are serialised process-wide: StarPU 1.3 gives reduction
 * methods no argument, so their failures are reported through a shared flag.
 *
 * @param [in]  context the devices: replica r runs on logical device r
 * @param [in]  dtype element type of every vector
 * @param [in]  op reduce operation
 * @param [in]  num_replicas 1 .. starfold_context_num_devices()
 * @param [in]  inputs num_replicas StarPU vectors of the same element count and @p dtype's element size
 * @param [in]  outputs num_replicas vectors of the same shape, each receiving the result; an output may
 *              be the input of the same replica (in place)
 * @param [out] seconds wall time from the scratch handle's registration to the last task's
 *              completion; may be NULL; untouched on error
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT for mismatched vectors, ::STARFOLD_ERR_NO_DEVICE or
 *         ::STARFOLD_ERR_RUNTIME when StarPU refuses a task (the outputs are then unspecified),
 *         ::STARFOLD_ERR_TASK_FAILED when a kernel failed.
 */
starfold_status_t starfold_tools_baseline_starpu_redux(starfold_context_t context, starfold_dtype_t dtype,
                                                              starfold_op_t op, int num_replicas,
                                                              const starpu_data_handle_t *inputs,
                                                              const starpu_data_handle_t *outputs, double *seconds);

/**
 * @brief The memory-traffic reference: every replica's input copied to its output, one task per
 *        replica pinned to its device, no arithmetic.
 *
 * On devices sharing one memory an all-reduce must at least read every input once and write every
 * output once; this copy does exactly that much traffic on the same workers, so its time is the bound
 * `starfold bench` reports the algorithms against. Arguments as starfold_tools_baseline_starpu_redux()
 * (the op is not needed); an output must not be its own input.
 */
starfold_status_t starfold_tools_baseline_copy(starfold_context_t context, starfold_dtype_t dtype,
                                                      int num_replicas, const starpu_data_handle_t *inputs,
                                                      const starpu_data_handle_t *outputs, double *seconds);


#endif /* STARFOLD_TOOLS_H */
