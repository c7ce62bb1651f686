/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold's element types and reduce ops as MPI sees them (mpi_types.c): the group's MPI calls, and
 * the command's MPI baselines, which must reduce float16 and bfloat16 the same way.
 */
#ifndef STARFOLD_SRC_MPI_TYPES_H
#define STARFOLD_SRC_MPI_TYPES_H

#include <mpi.h>

#include <starfold/common.h>

/* The MPI datatype of @dt's elements: MPI's own, MPI_UINT16_T for float16 and bfloat16. */
MPI_Datatype starfold__mpi_datatype(starfold_dtype_t dt);

/*
 * The MPI op that reduces @dt with @op (MEAN: SUM, divided afterwards). float16 and bfloat16 have no
 * MPI op: theirs are user ops, created on first use (MPI_Op_create is local) and kept until
 * MPI_Finalize; each combination of two values converts both to float32 and rounds the result once
 * (base/half.h). The SUM and PROD of 8- and 16-bit integers are user ops as well, so that they wrap
 * around on every MPI (mpi_types.c). MPI_OP_NULL when MPI cannot create one.
 */
MPI_Op starfold__mpi_reduce_op(starfold_dtype_t dt, starfold_op_t op);

#endif /* STARFOLD_SRC_MPI_TYPES_H */
