#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# LOG_COMPILER for `make check`: gives each test program the StarPU environment it is written for.
#   *_emulated : the 8-device box of discrete-memory OpenCL devices on the CPU (POCL), see doc/test-machines.md;
#   others     : CPU-only StarPU (2 CPU workers, one memory node).
# Each configuration keeps its own STARPU_HOME (bus calibration records the device count) and POCL
# kernel cache under the build tree, so repeated runs are warm.
prog="$1"; shift
top="${SF_TOP_BUILDDIR:-$(pwd)}"
name=$(basename "$prog")
case "$name" in
  *emulated*|*demo*)
    export POCL_DEVICES="pthread pthread pthread pthread pthread pthread pthread pthread"
    export STARPU_OPENCL_ON_CPUS=1 STARPU_NOPENCL=8 STARPU_NCPU=0
    export STARPU_DISABLE_ASYNCHRONOUS_OPENCL_COPY=1
    export STARPU_HOME="$top/tests/.starpu-emulated" POCL_CACHE_DIR="$top/tests/.pocl-cache"
    ;;
  *)
    export STARPU_NCPU="${STARPU_NCPU:-2}" STARPU_NOPENCL=0 STARPU_NCUDA=0
    export STARPU_HOME="$top/tests/.starpu-host"
    ;;
esac
export STARPU_SCHED="${STARPU_SCHED:-eager}" STARPU_SILENT=1
# Every graph compiled in a test, directly or through the distribute layer, is invariant-checked.
export STARFOLD_CHECK_GRAPHS=1
export SF_TEST_OUT="$top/tests/out"
mkdir -p "$STARPU_HOME" "$SF_TEST_OUT" ${POCL_CACHE_DIR:+"$POCL_CACHE_DIR"}
# One test at a time, whatever make's -j: the programs' StarPU workers busy-spin, and two of them on a
# small machine starve each other (doc/test-machines.md); `make -j check` still builds in parallel.
# SF_TEST_WRAPPER (make check-valgrind): a command to run the program under, e.g. valgrind.
exec flock "$top/tests/.one-at-a-time" ${SF_TEST_WRAPPER:-} "$prog" "$@"
