#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# Builds and runs tests/gpu/cuda_kernels: the CUDA kernels against the CPU kernels on a real GPU.
# Needs nvcc, a C compiler and StarPU's headers (STARPU_CFLAGS, else pkg-config starpu-1.3), not a
# StarPU built with CUDA. Usage: tests/gpu/run.sh [OUT_DIR]   (CASES=N for the number of cases; NVCC and
# NVCCFLAGS choose the compiler and its targets; BUILD_ONLY=1 builds OUT_DIR/cuda_kernels without running
# it, as tests/device/bundle.sh --cuda does on a machine without a GPU)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:-${TMPDIR:-/tmp}/starfold-gpu}
mkdir -p "$out"
: > "$out/config.h" # kernels_cpu.c includes config.h; it needs nothing from it
cflags=${STARPU_CFLAGS:-$(pkg-config --cflags starpu-1.3)}
nvcc="${NVCC:-nvcc} ${NVCCFLAGS:-}"
$nvcc -O2 -std=c++14 -DSTARPU_USE_CUDA $cflags -I"$top/src" -c "$top/src/exec/kernels_cuda.cu" -o "$out/kernels_cuda.o"
${CC:-cc} -O2 -std=gnu11 $cflags -I"$out" -I"$top/src" -c "$top/src/exec/kernels_cpu.c" -o "$out/kernels_cpu.o"
$nvcc -O2 -std=c++14 -DSTARPU_USE_CUDA $cflags -I"$top/src" "$here/cuda_kernels.cu" "$out/kernels_cuda.o" \
    "$out/kernels_cpu.o" -o "$out/cuda_kernels"
[ -n "${BUILD_ONLY:-}" ] && exit 0
exec "$out/cuda_kernels" "${CASES:-3000}"
