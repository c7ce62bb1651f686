#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# On the lent GPU machine (16 cores), from the repository root, after tests/device/bundle.sh here:
# issue 13's targets with a core per thread (starfold_group_all_reduce against MPI_Allreduce: 2, 4
# and 8 ranks of one device; 2 ranks of 2 and 4 devices, 4 ranks of 2, buckets and a vector per
# tensor), the list through the TensorFlow API (bench_api, 1, 2 and 4 workers), then the MPI tests
# of make check (run-mpi.sh).
# About 5 minutes; the log also goes to $OUT/log.txt.
set -u
R=$PWD; B=$R/.devbundle; OUT=${OUT:-/tmp}
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s); step() { echo "## t=$(( $(date +%s) - T0 ))s $*"; }
nproc; grep PRETTY /etc/os-release
# Debian's Open MPI and PMIx at their own paths (the image's own, if any, moved aside).
for d in usr/lib/x86_64-linux-gnu/openmpi usr/lib/x86_64-linux-gnu/pmix2 usr/share/openmpi etc/openmpi; do
    [ -e "/$d" ] && [ ! -L "/$d" ] && mv "/$d" "/$d.orig"
    mkdir -p "$(dirname "/$d")"; ln -sfn "$B/root/$d" "/$d"
done
mkdir -p /tmp/sfbin; ln -sf "$B/root/usr/bin/orterun" /tmp/sfbin/mpirun; ln -sf "$B/root/usr/bin/orted" /tmp/sfbin/orted
unset OPAL_PREFIX; for v in $(env | grep -o "^OMPI_MCA_[^=]*"); do unset "$v"; done
export PATH=/tmp/sfbin:$PATH
command -v ssh >/dev/null || export OMPI_MCA_plm_rsh_agent=/bin/false
L="env LD_LIBRARY_PATH=$B/lib"   # only for the bundle's programs: the image's own keep theirs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mca_base_component_show_load_errors=0
export STARPU_SILENT=1 STARPU_NCPU=1 STARPU_NOPENCL=0 STARPU_NCUDA=0 STARPU_HOME=/tmp/sphome
mkdir -p "$STARPU_HOME"
S=$B/top/starfold
$L "$S" run --topology host -g 1 -b 1K -w 0 | tail -1   # calibrates the bus once, before ranks share the home
M="$L mpirun --oversubscribe --bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 -x STARPU_SILENT -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_HOME -x LD_LIBRARY_PATH"
BN="$S bench --mpi --topology host -g 1"
for np in 2 4 8; do
    step "np=$np 64 MiB"; timeout 90 $M -np "$np" $BN -b 64M -e 64M -n 5 -w 1 --lowering mpi | grep -E "^ "
    for r in 1 2 3; do step "np=$np 1000 x 4 KiB views, run $r"; timeout 60 $M -np "$np" $BN --tensors 1000x4K --views -n 10 -w 2 --lowering mpi | grep -E "^ "; done
done
# Several devices per rank, a worker per device: buckets relay (a local reduce, MPI into device 0's
# outputs, copies to the others), a vector per tensor packs (one task per dtype; group_layout.c).
for np_g in "2 2" "2 4" "4 2"; do
    set -- $np_g
    step "np=$1 -g $2 64 MiB"; STARPU_NCPU=$2 timeout 90 $M -np "$1" $S bench --mpi --topology host -g "$2" -b 64M -e 64M -n 5 -w 1 --lowering mpi | grep -E "^ "
    for v in --views ""; do for t in 1000x4K resnet50; do
        step "np=$1 -g $2 $t ${v:-a vector each}"; STARPU_NCPU=$2 timeout 60 $M -np "$1" $S bench --mpi --topology host -g "$2" --tensors $t $v -n 5 -w 1 --lowering mpi | grep -E "^ "
    done; done
done
for np in 2 4; do for low in auto mpi; do
    step "np=$np sweep, lowering $low"; timeout 90 $M -np "$np" $BN -b 4K -e 64M -f 16 -n 5 -w 1 --lowering "$low" | grep -E "^ "
done; done
# bench_api.before (bundle.sh's BEFORE=): another build's, run in turn with this one's on the list.
for c in 1 2 4; do
    for k in 1 2; do for b in "$B"/bin/bench_api "$B"/bin/bench_api.before; do
        [ -x "$b" ] || continue
        step "$(basename "$b") NCPU=$c 1000x4KiB, run $k"; STARPU_NCPU=$c timeout 60 $L "$b" --tensors 1000x4KiB -n 50 -w 5 --rounds 2 | tail -5
    done; done
    step "bench_api NCPU=$c resnet50"; STARPU_NCPU=$c timeout 80 $L "$B/bin/bench_api" --tensors resnet50 -n 20 -w 3 --rounds 3 | tail -6
done
step "run-mpi.sh"
LD_LIBRARY_PATH=$B/lib SF_TOP_BUILDDIR=$B/top SF_MPI_TIMEOUT=60 timeout 200 sh "$R/tests/mpi/run-mpi.sh" > "$OUT/run-mpi.log" 2>&1
echo "run-mpi.sh exit $?"; grep -E "^FAIL" "$OUT/run-mpi.log"
step done
