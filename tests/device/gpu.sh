#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
#
# starfold through StarPU's CUDA workers, on the lent GPU machine, from the repository root, after
# `tests/device/bundle.sh --cuda` here (device tool: carry [".devbundle"], `bash .devbundle/gpu.sh`).
# One run of about 2 minutes on an H200 (10 at most): every step has a time limit, and a step that would
# start past BUDGET seconds (default 480) is skipped. Everything printed also goes to $OUT/log.txt, and
# each step's own output, in $OUT/steps.tar.gz, to <step>.txt (the device tool brings back 8 files).
#
#   1. make check-gpu's program: the CUDA kernels against the CPU kernels, bitwise, without StarPU
#   2. bench_gpu: replicas in the GPU's memory against cudaMemcpy, GPU + host against PCIe, StarPU's
#      cost per task on a CUDA worker, a training step's GEMMs overlapped with its bucket all-reduces
#      (twice: a GEMM with k = 256 and one 16 times lighter)
#   3. the GPU's memory nearly full: a graph whose temporaries do not fit is refused, never stuck
#   4. bench_api --cuda: the TensorFlow layer's batch_reduce_to and strategy.run on 8 GPU replicas,
#      and StarPU's task and transfer counts for a step of persistent views
#   5. make check's programs with StarPU's CUDA worker on (CPU and GPU memory nodes side by side), then
#      the strategy, distribute, soak and property tests with their replicas on the GPU
#      (SF_TEST_DEVICES=cuda, 8 CUDA workers on one GPU)
#   6. the command on the GPU: run (verified) and bench
#
# Dry run without a GPU: `STARPU_NCUDA=0 bash .devbundle/gpu.sh` runs the same steps on CPU workers.
set -u
R=$PWD; B=$R/.devbundle; OUT=${OUT:-/tmp/starfold-gpu-out}; S=/tmp/starfold-gpu-steps; BUDGET=${BUDGET:-480}
mkdir -p "$OUT" "$S"
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s); step() { echo; echo "## t=$(( $(date +%s) - T0 ))s $*"; }
summary=()
# run NAME LIMIT COMMAND...: the step's output to $OUT/NAME.txt and here; its result to the summary.
run() {
    local name=$1 limit=$2; shift 2
    if [ $(( $(date +%s) - T0 )) -gt "$BUDGET" ]; then
        summary+=("$name: NOT RUN (past the ${BUDGET}s budget)")
        return
    fi
    step "$name: $*"
    timeout --kill-after=10 "$limit" "$@" > "$S/$name.txt" 2>&1
    local rc=$?
    cat "$S/$name.txt"
    local verdict=pass
    case $rc in 0) ;; 77) verdict=skip ;; 124|137) verdict="TIMEOUT after ${limit}s" ;; *) verdict="FAIL (exit $rc)" ;; esac
    echo "## $name: $verdict"
    summary+=("$name: $verdict")
}

GPU=1
if [ "${STARPU_NCUDA:-}" = 0 ] || ! command -v nvidia-smi >/dev/null 2>&1; then GPU=0; fi
nproc; grep PRETTY /etc/os-release
[ $GPU = 1 ] && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
# The bundle's libraries, then the driver's (libcuda, libnvidia-ml) wherever this machine keeps them.
drv=$( (ldconfig -p | awk '/libnvidia-ml.so.1 |libcuda.so.1 / { print $NF }'; find /usr/local/nvidia /usr/lib64 /usr/lib/x86_64-linux-gnu \
        -maxdepth 2 -name 'libnvidia-ml.so.1' 2>/dev/null) | xargs -r -n1 dirname | sort -u | paste -sd: -)
export LD_LIBRARY_PATH=$B/lib${drv:+:$drv}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
missing=$(for p in "$B"/bin/*; do ldd "$p" | grep "not found"; done | sort -u)
[ -n "$missing" ] && { echo "libraries not found:"; echo "$missing"; }
# The test programs look for the source tree where it was built (SF_SRCDIR, SF_BUILDDIR).
[ -e /work/main ] || { mkdir -p /work && ln -s "$R" /work/main; }
[ -e /work/main/build-cuda ] || ln -s "$B/bin" /work/main/build-cuda

export GVBINDIR=$B/graphviz # the bundle's Graphviz plugins (dot layout, SVG)
export STARPU_SILENT=1 STARPU_HOME=/tmp/sf-starpu-home STARPU_NOPENCL=0
mkdir -p "$STARPU_HOME"
if [ $GPU = 1 ]; then export STARPU_NCUDA=1; else export STARPU_NCUDA=0; fi
bin=$B/bin

# StarPU measures the bus once per home and worker set (seconds with a GPU): here, not inside a timed step.
step "StarPU's bus calibration"
STARPU_NCPU=2 STARPU_NWORKER_PER_CUDA=8 timeout 120 "$bin/starfold" run -g 2 -b 1K -w 0 2>&1 | tail -4
STARPU_NCPU=2 timeout 60 "$bin/starfold" run -g 1 -b 1K -w 0 2>&1 | tail -1

if [ $GPU = 1 ]; then run check-gpu 120 "$bin/cuda_kernels" 3000; fi
G8="env STARPU_NCPU=2 STARPU_NWORKER_PER_CUDA=8"
if [ $GPU = 1 ]; then
    run bench_gpu 240 $G8 "$bin/bench_gpu"
else
    run bench_gpu 240 $G8 STARPU_NCPU=2 "$bin/bench_gpu" --max-bytes 1M --dim 96 --k 16
fi
# The step again with a GEMM 16 times lighter: compute and reduction of the same order.
if [ $GPU = 1 ]; then run bench_gpu_step_k16 120 $G8 "$bin/bench_gpu" --only step --k 16; fi

# The GPU's memory nearly full and a graph whose temporaries do not fit: refused (it once hung in StarPU).
run bench_gpu_memory 100 $G8 "$bin/bench_gpu" --only memory

CUDA=$([ $GPU = 1 ] && echo --cuda)
run bench_api_1000x4KiB 120 $G8 "$bin/bench_api" $CUDA --tensors 1000x4KiB -n 50 -w 5 --rounds 3
run bench_api_resnet50 120 $G8 "$bin/bench_api" $CUDA --tensors resnet50 -n 10 -w 3 --rounds 2
# Where a step of persistent views spends its time: StarPU's task counts per worker and its transfers.
run views_stats 60 env STARPU_NCPU=2 STARPU_NWORKER_PER_CUDA=8 STARPU_SILENT=0 STARPU_WORKER_STATS=1 STARPU_BUS_STATS=1 \
    "$bin/bench_api" $CUDA --tensors 1000x4KiB -n 10 -w 2 --rounds 1 --only "exec persistent"

# make check's programs (run-test.sh's environment), StarPU's CUDA worker on beside two CPU workers.
export STARPU_SCHED=eager STARFOLD_CHECK_GRAPHS=1 SF_TEST_OUT=/tmp/sf-test-out
mkdir -p "$SF_TEST_OUT"
for t in test_types test_kernels test_exec_host test_distribute test_strategy test_variables test_badinput test_limits test_soak \
         test_properties allreduce_demo batch_reduce_to train_linear_regression embed_existing_app overlap_backward \
         gradient_bucket sparse_embedding; do
    case $t in allreduce_demo) args="--out /tmp/sf-demo" ;; *) args="" ;; esac
    run "cpu+cuda_$t" 120 env STARPU_NCPU=2 "$bin/$t" $args
done
# The same tests with their contexts on 8 CUDA workers of the GPU (on CPU workers in a dry run).
for t in test_distribute test_strategy test_variables test_soak test_properties; do
    run "gpu_$t" 150 env STARPU_NCPU=2 STARPU_NWORKER_PER_CUDA=8 SF_TEST_DEVICES=$([ $GPU = 1 ] && echo cuda || echo cpu) "$bin/$t"
done

# The command as a user types it: StarPU configured by the environment, so whatever StarPU gives.
run cli_run 60 $G8 "$bin/starfold" run -g 8 -b 64M -n 5
run cli_bench 120 $G8 "$bin/starfold" bench -g 8 -b 4K -e 64M -f 16 -n 10 -w 2
step "summary"
printf '%s\n' "${summary[@]}"
npass=$(printf '%s\n' "${summary[@]}" | grep -c ': pass$'); nskip=$(printf '%s\n' "${summary[@]}" | grep -c ': skip$')
nfail=$(( ${#summary[@]} - npass - nskip ))
echo "gpu.sh: $npass passed, $nfail failed, $nskip skipped"
tar -C "$S" -czf "$OUT/steps.tar.gz" .
