#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# make check: the programs that run across MPI ranks, under mpirun on this one machine: 2, 3 and 4
# ranks (oversubscribed: the machine may have 2 cores), one or two ranks per faked node and the
# ranks-sharing-memory default; loopback shared memory only (self, vader), one StarPU CPU worker per
# rank. Open MPI refuses to run as root unless told: the two variables are set only when running as
# root. Every run has a time limit, so a hang is a failure, not a stuck CI.
# Exit 77 only where MPI is truly absent (no mpirun, or starfold configured without MPI).
top="${SF_TOP_BUILDDIR:-.}"
prog="$top/tests/mpi/test_group"
[ -x "$prog" ] || { echo "starfold was configured without MPI (no StarPU-MPI or MPI): skipped"; exit 77; }
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found: skipped"; exit 77; }
limit="${SF_MPI_TIMEOUT:-120}"
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# One CPU worker per rank; each configuration keeps its own StarPU home (its bus calibration).
export STARPU_NCPU=1 STARPU_NOPENCL=0 STARPU_NCUDA=0 STARPU_SILENT=1 STARPU_SCHED="${STARPU_SCHED:-eager}"
export STARPU_HOME="$top/tests/.starpu-mpi"
mkdir -p "$STARPU_HOME"
# SF_MPI_VALGRIND=COMMAND (make check-valgrind): test_group alone, each rank under COMMAND, on 2 ranks
# as 2 nodes and 3 ranks as nodes {0,1} {2}, every lowering by name; nothing else.
if [ -n "$SF_MPI_VALGRIND" ]; then
    export STARPU_HOME="$top/tests/.starpu-mpi"
    mkdir -p "$STARPU_HOME"
    status=0
    for np_k in "2 1" "3 2"; do
        set -- $np_k
        echo "== mpirun -np $1 $SF_MPI_VALGRIND test_group $2"
        timeout -k 10 "${SF_MPI_VALGRIND_TIMEOUT:-900}" mpirun -np "$1" --oversubscribe --bind-to none \
            --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 \
            -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT -x STARPU_SCHED -x STARPU_HOME \
            $SF_MPI_VALGRIND "$prog" "$2" || { echo "FAIL: test_group on $1 ranks under $SF_MPI_VALGRIND"; status=1; }
    done
    exit $status
fi
# Calibrate the bus once, in one process, before ranks share the home: two ranks calibrating a fresh
# home together race on its files (StarPU 1.3 asserts reading a half-written vm.affinity; seen in
# make distcheck, whose build tree starts empty).
"$top/starfold" run --topology host -g 1 -b 1K -w 0 >/dev/null 2>&1 || true
status=0
# Each configuration runs the whole program under one lowering (STARFOLD_MPI_LOWERING: MPI's
# all-reduce in a task, or a graph across ranks of StarPU-MPI sends and receives), so that 2, 3 and 4
# ranks meet all five (hierarchical on 3 and 4 ranks as nodes of 2: argument 2 is the ranks per
# node); test_group's lowering test also runs each by name in every one. 4 ranks on this 2-core
# machine run every lowering too since the library gives each local rank its own CPUs for StarPU's
# workers (src/exec/workers.c): before, the four ranks' workers all spun on CPU 0 and a graph
# lowering took seconds per dependent hop.
lowerings="mpi ring halving-doubling hierarchical leader"
for np in 2 3 4; do
    for k in 0 1 2; do
        case $np in 2) whole="mpi ring halving-doubling" ;; 3) whole="leader mpi hierarchical" ;; *) whole="ring leader hierarchical" ;; esac
        STARFOLD_MPI_LOWERING=$(echo $whole | cut -d' ' -f$((k + 1)))
        SF_TEST_LOWERINGS="$lowerings"
        # 3 ranks under mpi: the calls cut every 64 bytes (src/mpi/group_cuts.c), so that every plan
        # makes many calls and the packed plan sends most tensors direct; elsewhere the links' piece.
        STARFOLD_MPI_PIECE_BYTES=
        [ "$np$k" = 31 ] && STARFOLD_MPI_PIECE_BYTES=64
        export STARFOLD_MPI_LOWERING SF_TEST_LOWERINGS STARFOLD_MPI_PIECE_BYTES
        echo "== mpirun -np $np test_group $k (lowering $STARFOLD_MPI_LOWERING${STARFOLD_MPI_PIECE_BYTES:+, calls cut at $STARFOLD_MPI_PIECE_BYTES bytes})"
        timeout -k 10 "$limit" mpirun -np "$np" --oversubscribe --bind-to none \
            --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 \
            -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT -x STARPU_SCHED -x STARPU_HOME \
            -x STARFOLD_MPI_LOWERING -x SF_TEST_LOWERINGS -x STARFOLD_MPI_PIECE_BYTES \
            ${SF_TEST_WRAPPER:+$SF_TEST_WRAPPER} "$prog" "$k"
        rc=$?
        case $rc in
            0) ;;
            77) echo "skipped: the program says this MPI cannot run it"; exit 77 ;;
            124|137) echo "FAIL: mpirun -np $np test_group $k did not finish in $limit s"; status=1 ;;
            *) echo "FAIL: mpirun -np $np test_group $k exited $rc"; status=1 ;;
        esac
    done
done
unset STARFOLD_MPI_LOWERING SF_TEST_LOWERINGS STARFOLD_MPI_PIECE_BYTES
# The training example across processes: 2 processes x 4 devices, weights identical everywhere.
ex="$top/examples/train_multi_worker"
if [ -x "$ex" ]; then
    echo "== mpirun -np 2 train_multi_worker 4"
    timeout -k 10 "$limit" mpirun -np 2 --oversubscribe --bind-to none \
        --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 \
        -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT -x STARPU_SCHED -x STARPU_HOME \
        ${SF_TEST_WRAPPER:+$SF_TEST_WRAPPER} "$ex" 4
    rc=$?
    [ $rc -eq 0 ] || { echo "FAIL: train_multi_worker exited $rc"; status=1; }
fi

# The command across ranks: `starfold run --mpi` on 2 and 3 ranks (2 devices each), every op, a small
# spec of three tensors; one `bench --mpi` over a tiny sweep, whose table names the MPI baseline.
sf="$top/starfold"
mkdir -p "$top/tests/out"
runlog="$top/tests/out/mpi-cli.log"
for np in 2 3; do
    for op in sum mean min max prod; do
        echo "== mpirun -np $np starfold run --mpi --op $op"
        timeout -k 10 "$limit" mpirun -np "$np" --oversubscribe --bind-to none \
            --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 \
            -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT -x STARPU_SCHED -x STARPU_HOME \
            "$sf" run --mpi --topology host -g 2 --ranks-per-node 2 --tensors 2x4K,1000 --op "$op" -n 2 > "$runlog" 2>&1
        rc=$?
        cat "$runlog"
        if [ $rc -ne 0 ]; then echo "FAIL: starfold run --mpi -np $np --op $op exited $rc"; status=1; continue; fi
        grep -q "^Verified: .* right on all $((np * 2)) replicas of $np ranks" "$runlog" ||
            { echo "FAIL: starfold run --mpi -np $np --op $op: no verdict over all replicas"; status=1; }
        grep -q "^Lowering: " "$runlog" || { echo "FAIL: starfold run --mpi: no lowering line"; status=1; }
    done
done
echo "== mpirun -np 3 starfold run --mpi --collective all-gather"
timeout -k 10 "$limit" mpirun -np 3 --oversubscribe --bind-to none \
    --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 \
    -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT -x STARPU_SCHED -x STARPU_HOME \
    "$sf" run --mpi --collective all-gather --topology host -g 2 --tensors 2x4K,1000 -n 2 > "$runlog" 2>&1
rc=$?
cat "$runlog"
[ $rc -eq 0 ] || { echo "FAIL: starfold run --mpi --collective all-gather exited $rc"; status=1; }
grep -q "^Verified: .* right on all 3 ranks" "$runlog" || { echo "FAIL: run --mpi all-gather: no verification line"; status=1; }
echo "== mpirun -np 2 starfold bench --mpi --persistent"
timeout -k 10 "$limit" mpirun -np 2 --oversubscribe --bind-to none \
    --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 \
    -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT -x STARPU_SCHED -x STARPU_HOME \
    "$sf" bench --mpi --persistent --topology host -g 1 -b 4K -e 16K -f 4 -n 2 -w 1 > "$runlog" 2>&1
rc=$?
cat "$runlog"
if [ $rc -ne 0 ]; then
    echo "FAIL: starfold bench --mpi exited $rc"; status=1
else
    [ "$(grep -c '^ .* MPI_Allreduce ' "$runlog")" -eq 2 ] || { echo "FAIL: bench --mpi: no MPI_Allreduce baseline row per size"; status=1; }
    [ "$(grep -c '^ .* MPI_Iallreduce ' "$runlog")" -eq 2 ] || { echo "FAIL: bench --mpi: no MPI_Iallreduce baseline row per size"; status=1; }
    grep -q "faster of MPI_Allreduce and MPI_Iallreduce" "$runlog" || { echo "FAIL: bench --mpi: the ratio is not against the faster MPI call"; status=1; }
    [ "$(grep -c '^ .* starfold-group ' "$runlog")" -eq 2 ] || { echo "FAIL: bench --mpi: no starfold-group row per size"; status=1; }
    [ "$(grep -c '^ .* group-persist ' "$runlog")" -eq 2 ] || { echo "FAIL: bench --mpi --persistent: no group-persist row per size"; status=1; }
    grep -q "Out of bounds values : 0 OK" "$runlog" || { echo "FAIL: bench --mpi: wrong elements"; status=1; }
fi
echo "== mpirun -np 2 starfold bench --mpi --tensors 20x4K"
timeout -k 10 "$limit" mpirun -np 2 --oversubscribe --bind-to none \
    --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 \
    -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT -x STARPU_SCHED -x STARPU_HOME \
    "$sf" bench --mpi --tensors 20x4K --topology host -g 2 -n 2 -w 1 > "$runlog" 2>&1
rc=$?
cat "$runlog"
if [ $rc -ne 0 ]; then
    echo "FAIL: starfold bench --mpi --tensors exited $rc"; status=1
else
    grep -q '^ *81920 .* starfold-group ' "$runlog" || { echo "FAIL: bench --mpi --tensors: no row of the list's 81920 bytes"; status=1; }
    # 20 vectors on each of 2 devices sharing one worker: packed, unless auto crossed ranks with a graph.
    grep -Eq '^ *81920 .* starfold-group +(mpi .* packed|[a-z-]+ .* leaders)$' "$runlog" || { echo "FAIL: bench --mpi --tensors: no plan (packed, or leaders for a graph)"; status=1; }
    grep -q "Out of bounds values : 0 OK" "$runlog" || { echo "FAIL: bench --mpi --tensors: wrong elements"; status=1; }
fi
echo "== mpirun -np 3 starfold bench --mpi --collective all-gather"
timeout -k 10 "$limit" mpirun -np 3 --oversubscribe --bind-to none \
    --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 \
    -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT -x STARPU_SCHED -x STARPU_HOME \
    "$sf" bench --mpi --collective all-gather --topology host -g 1 -b 12K -e 48K -f 4 -n 2 -w 1 > "$runlog" 2>&1
rc=$?
cat "$runlog"
if [ $rc -ne 0 ]; then
    echo "FAIL: starfold bench --mpi --collective all-gather exited $rc"; status=1
else
    [ "$(grep -c '^ .* MPI_Allgather ' "$runlog")" -eq 2 ] || { echo "FAIL: bench --mpi all-gather: no MPI_Allgather row per size"; status=1; }
    grep -q '^ *49152 .* none .* starfold-group ' "$runlog" || { echo "FAIL: bench --mpi all-gather: no row of 48K"; status=1; }
    grep -q "Out of bounds values : 0 OK" "$runlog" || { echo "FAIL: bench --mpi all-gather: wrong elements"; status=1; }
fi

# Ranks started with different commands: refused on every rank before anything runs (they would meet
# different collectives and wait for each other), rank 0 naming both; the example likewise refuses a
# bad device count on one rank before its first collective. mismatch NAME WANT MPMD-ARGS...
mismatch() {
    name=$1 want=$2
    shift 2
    out="$top/tests/out/mpi-mismatch.log"
    echo "== mpirun $name"
    timeout -k 10 60 mpirun --oversubscribe --bind-to none \
        --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 \
        -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT -x STARPU_SCHED -x STARPU_HOME \
        "$@" > "$out" 2>&1
    rc=$?
    cat "$out"
    case $rc in
        0) echo "FAIL: $name: ran to the end"; status=1 ;;
        124|137) echo "FAIL: $name: hung (killed after 60 s)"; status=1 ;;
        *) grep -q "$want" "$out" || { echo "FAIL: $name: no '$want'"; status=1; } ;;
    esac
}
common="--mpi --topology host -g 1 -b 1M"
mismatch "run all-reduce : run all-gather" "rank 1 runs 'run --mpi --collective all-gather" \
    -np 1 "$sf" run $common : -np 1 "$sf" run $common --collective all-gather
mismatch "run : bench" "rank 1 runs 'bench --mpi" -np 1 "$sf" run $common : -np 1 "$sf" bench $common -e 1M
mismatch "bench all-reduce : bench all-gather : bench all-reduce" "rank 1 runs 'bench --mpi --collective all-gather" \
    -np 1 "$sf" bench $common -e 1M : -np 1 "$sf" bench $common -e 1M --collective all-gather : \
    -np 1 "$sf" bench $common -e 1M
mismatch "run -n 2 : run -n 3" "rank 1 runs 'run .* -n 3 " -np 1 "$sf" run $common -n 2 : -np 1 "$sf" run $common -n 3
if [ -x "$ex" ]; then
    mismatch "train_multi_worker 2 : train_multi_worker 0" "rank 1: usage: train_multi_worker" \
        -np 1 "$ex" 2 : -np 1 "$ex" 0
fi

# The fault cases end with starfold_group_abort(), whose code mpirun returns (0 when every rank
# passed): fault_case NP CASE ARGS... runs `test_group ARGS` and wants "CASE case: 0 failures".
mkdir -p "$top/tests/out"
fault_case() {
    np=$1 case=$2
    shift 2
    out="$top/tests/out/mpi-$case.log"
    echo "== mpirun -np $np test_group $*"
    timeout -k 10 "$limit" mpirun -np "$np" --oversubscribe --bind-to none \
        --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 \
        -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT -x STARPU_SCHED -x STARPU_HOME \
        "$prog" "$@" > "$out" 2>&1
    rc=$?
    cat "$out"
    grep -q "$case case: 0 failures over all ranks" "$out" || rc=1
    # A rank lost after the agreement: the stall warning (0.5 s in the case) comes before the timeout.
    if [ "$case" = lost ] && ! grep -q "since every rank joined it" "$out"; then
        echo "FAIL: the lost case ($*): no stall warning after the agreement"; rc=1
    fi
    case $rc in
        0) ;;
        124|137) echo "FAIL: the $case case ($*) did not finish in $limit s"; status=1 ;;
        *) echo "FAIL: the $case case ($*) exited $rc"; status=1 ;;
    esac
}
# A rank that never joins in time: TIMEOUT on the others, the late one fails at once, nobody hangs.
fault_case 2 timeout 1 timeout
fault_case 3 timeout 1 timeout
# A rank that comes to starfold_group_create() late: TIMEOUT there on every rank, no group, nobody hangs.
fault_case 3 create 1 create
# A rank lost after the agreement (its workers hung), under each lowering: every rank, the hung one
# included, gets TIMEOUT within timeout_seconds, the group is broken, no output changed, nobody hangs.
fault_case 2 lost 1 lost ring
fault_case 2 lost 1 lost mpi
fault_case 2 lost 1 lost mpi direct   # one device per rank: MPI's all-reduce itself never completes
fault_case 2 lost 1 lost mpi packed   # and two tensors, a vector each: packed into one task, none written
fault_case 3 lost 2 lost hierarchical
fault_case 3 lost 1 lost leader

# A rank stopped mid-run (SIGSTOP, as a debugger or a full node would): with --timeout 5 the other rank
# names it and ends the job within seconds; without the group and the command bounding their waits it
# waited for ever in silence.
echo "== mpirun -np 2 starfold run --mpi --timeout 5, rank 1 stopped after 3 s"
out="$top/tests/out/mpi-stopped.log"
timeout -k 10 "$limit" mpirun -np 2 --oversubscribe --bind-to none \
    --mca btl self,vader --mca btl_vader_single_copy_mechanism none --mca pml ob1 \
    -x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT -x STARPU_SCHED -x STARPU_HOME \
    "$sf" run --mpi --topology host -g 1 -b 4M -n 100000 -w 0 --lowering mpi --timeout 5 > "$out" 2>&1 &
job=$!
sleep 3
stopped=""
for p in $(pgrep -x starfold); do
    tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && stopped=$p
done
if [ -z "$stopped" ]; then
    echo "FAIL: rank 1 of the stopped run not found"; status=1
    wait $job
else
    kill -STOP "$stopped"
    t0=$(date +%s)
    wait $job
    rc=$?
    took=$(( $(date +%s) - t0 ))
    kill -CONT "$stopped" 2>/dev/null
    cat "$out"
    case $rc in
        0) echo "FAIL: the stopped run ended well"; status=1 ;;
        124|137) echo "FAIL: the stopped run hung ($limit s)"; status=1 ;;
        *) [ "$took" -le 30 ] || { echo "FAIL: the stopped run took $took s to end"; status=1; }
           grep -Eq "rank 1 (did not reach|did not join|sent no word)" "$out" || { echo "FAIL: the stopped rank was not named"; status=1; } ;;
    esac
fi
exit $status
