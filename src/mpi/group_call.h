/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * One collective of a process group with per-call settings, for the distribute layer's
 * MultiWorkerMirroredStrategy (its CommunicationOptions). No StarPU here: the distribute layer is
 * compiled without StarPU's flags. Private.
 */
#ifndef STARFOLD_SRC_MPI_GROUP_CALL_H
#define STARFOLD_SRC_MPI_GROUP_CALL_H

#include <stdint.h>

#include <starfold/mpi.h>

/*
 * starfold_group_all_reduce_views() with, for this call only, @timeout_seconds (> 0; else the
 * group's) bounding the whole collective, and @lowering (a name starfold_group_set_lowering() takes;
 * NULL: the group's). Every rank must pass the same lowering (the agreement compares it). @batch: a
 * fingerprint of the whole reduction when this call is one of several that make it (packs, dtypes
 * reduced apart), 0 for none; every rank must pass the same one, so that ranks whose reductions
 * differ only in a later call fail in the first, together, instead of one rank waiting alone. The
 * group runs one collective at a time: its settings are restored before this returns.
 */
starfold_status_t starfold__group_all_reduce_views_with(starfold_group_t group, starfold_op_t op, size_t num_tensors,
                                                        const starfold_tensor_desc_t *tensors,
                                                        const starfold_view_t *inputs, const starfold_view_t *outputs,
                                                        double timeout_seconds, const char *lowering, uint64_t batch);

/*
 * starfold_group_all_gather() of a view: this rank's @count elements of @dtype at @input (a NULL
 * handle for none), @match a number every rank must pass alike (a row's width; checked), the whole divided by @divisor when > 1 (an IndexedSlices MEAN), bounded by
 * @timeout_seconds (> 0; else the group's). @st: this rank's verdict so far (a refusal still takes
 * part, so that every rank fails alike). *@output: the whole on device 0 (NULL when empty;
 * starfold_vector_destroy()), *@total its elements.
 */
starfold_status_t starfold__group_all_gather_with(starfold_group_t group, starfold_dtype_t dtype, size_t match,
                                                  starfold_view_t input, size_t count, int divisor, double timeout_seconds, starfold_status_t st,
                                                  starpu_data_handle_t *output, size_t *total);

#endif /* STARFOLD_SRC_MPI_GROUP_CALL_H */
