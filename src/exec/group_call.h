/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * One collective of a process group with per-call settings, for the distribute layer's
 * MultiWorkerMirroredStrategy (its CommunicationOptions). No StarPU here: the distribute layer is
 * compiled without StarPU's flags. Private.
 */
#ifndef STARFOLD_SRC_EXEC_GROUP_CALL_H
#define STARFOLD_SRC_EXEC_GROUP_CALL_H

#include <starfold/mpi.h>

/*
 * starfold_group_all_reduce_views() with, for this call only, @timeout_seconds (> 0; else the
 * group's) bounding the whole collective, and @lowering (a name starfold_group_set_lowering() takes;
 * NULL: the group's). Every rank must pass the same lowering (the agreement compares it). The group
 * runs one collective at a time: its settings are restored before this returns.
 */
starfold_status_t starfold__group_all_reduce_views_with(starfold_group_t group, starfold_op_t op, size_t num_tensors,
                                                        const starfold_tensor_desc_t *tensors,
                                                        const starfold_view_t *inputs, const starfold_view_t *outputs,
                                                        double timeout_seconds, const char *lowering);

#endif /* STARFOLD_SRC_EXEC_GROUP_CALL_H */
