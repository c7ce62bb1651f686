#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
#
# make check-netns: starfold across real (namespaced) nodes, 2 nodes x 2 ranks over 100 Mbit/s links
# (tests/netns/cluster.sh), in five runs of `starfold run --mpi` and one of `bench --mpi`:
#
#   1. an all-reduce across the nodes: the group sees 2 nodes, measures the link between them, and
#      every element is right on every rank; and the model's prices respect the link between them
#      (no all-reduce across 2 nodes moves less than its bytes through each node's link);
#   2. a rank stopped (SIGSTOP) in node 1 mid-job, with --timeout 5: the job ends within a bound, a
#      rank naming the silent one, instead of waiting for it;
#   3. node 1's link taken down (ip link set down) mid-job, with --timeout 5: the ranks name the other
#      side's ranks, and the job ends;
#   4. node 1's link throttled to a trickle (tbf 8kbit), and 5. node 1's namespace removed with its
#      link: the same.
#
# Usage: tests/netns/check-netns.sh STARFOLD. Needs root and network namespaces: exits 77 with the
# reason otherwise (cluster.sh's own skip). Timings bound the faults only (a job that does not end is
# the failure); no speed is asserted.
set -u
[ $# -eq 1 ] && [ -x "$1" ] || { echo "usage: tests/netns/check-netns.sh STARFOLD" >&2; exit 2; }
starfold=$1
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/cluster.sh
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export STARPU_NCPU=1 STARPU_NOPENCL=0 STARPU_NCUDA=0 STARPU_SILENT=1
mpi_env="-x STARPU_NCPU -x STARPU_NOPENCL -x STARPU_NCUDA -x STARPU_SILENT"
status=0
fail() {
    echo "FAIL: $*"
    status=1
}

# 1. Correctness across the nodes.
"$cluster" --nodes 2 --ranks-per-node 2 --rate 100mbit --mpirun-args "$mpi_env" -- \
    "$starfold" run --mpi --tensors 4x256KiB,1000 -n 3 >"$tmp/run.out" 2>&1
rc=$?
[ $rc -eq 77 ] && { cat "$tmp/run.out"; exit 77; }
if [ $rc -ne 0 ]; then
    fail "run --mpi across 2 nodes exited $rc"; cat "$tmp/run.out"
elif ! grep -q 'on 2 nodes' "$tmp/run.out" || ! grep -q '^Links: between nodes' "$tmp/run.out" ||
    ! grep -q '^Verified: .* right on all 4 replicas' "$tmp/run.out"; then
    fail "run --mpi across 2 nodes: no 2 nodes, no measured link or not verified"; cat "$tmp/run.out"
else
    echo "ok: run --mpi across 2 namespaced nodes: $(grep '^Links:' "$tmp/run.out")"
fi

# 1b. The model knows the cut: across 2 nodes any all-reduce of S bytes moves at least S through each
# node's link, and both ranks of a node share it. So the model's price of every lowering
# (hierarchical's two shards crossing side by side too) and of MPI's own must be at least S over the
# measured link (less 10 %), and auto, which takes a graph only where it beats MPI's price by half,
# keeps mpi.
"$cluster" --nodes 2 --ranks-per-node 2 --rate 100mbit --mpirun-args "$mpi_env" -- \
    "$starfold" bench --mpi --lowering all -b 1M -e 1M -n 1 -w 0 >"$tmp/model.out" 2>&1
rc=$?
bw=$(sed -n 's/^# Links: between nodes \([0-9.]*\) GB\/s.*/\1/p' "$tmp/model.out")
if [ $rc -ne 0 ] || [ -z "$bw" ]; then
    fail "bench --mpi across 2 nodes exited $rc, or printed no measured link"; cat "$tmp/model.out"
elif ! awk -v bw="$bw" '
        $1 == 1048576 && $5 == "starfold-group" { rows++; floor = 0.9 * $1 / (bw * 1e3)
            if ($12 + 0 < floor) { printf "the %s row is priced %s us, under the cut (%.0f us)\n", $6, $12, floor; bad = 1 }
            if (rows == 1 && $6 != "mpi") { printf "auto took %s\n", $6; bad = 1 } }
        END { exit bad || rows < 2 }' "$tmp/model.out"; then
    fail "the model across 2 nodes"; cat "$tmp/model.out"
else
    echo "ok: the model across 2 nodes: every price at least the cut's, auto kept mpi ($(awk '$1 == 1048576 && $5 == "starfold-group" { printf "%s %s us; ", $6, $12 }' "$tmp/model.out"))"
fi

# fault NAME ACTION RANKS: a long job with --timeout 5; ACTION (a shell command, given the cluster's
# tag in $tag) runs 2 s into its all-reduces; the job must end non-zero within 180 s of it, at least
# RANKS ranks each saying which ranks went silent, or (a barrier, which cannot name them) that not
# every rank reached it (the first to tell ends the job with MPI_Abort, which may kill the others
# before they say it too).
named='(ranks? [0-9, ]+ (did not reach|got no word from this rank at)|not every rank reached)'
# A node removed has taken 10-66 s to be noticed here: the bound is for a hang, not a speed.
fault() {
    name=$1
    action=$2
    want=$3
    tag=nf$$
    "$cluster" --nodes 2 --ranks-per-node 2 --rate 100mbit --tag "$tag" --mpirun-args "$mpi_env" -- \
        "$starfold" run --mpi --tensors 256KiB -n 100000 --timeout 5 >"$tmp/$name.out" 2>&1 &
    job=$!
    # Into the collectives: rank 0 has printed the all-reduce's line (group made, links measured).
    waited=0
    while ! grep -q '^All-reduce' "$tmp/$name.out" 2>/dev/null && [ "$waited" -lt 120 ] && kill -0 "$job" 2>/dev/null; do
        sleep 1
        waited=$((waited + 1))
    done
    sleep 2
    start=$(date +%s)
    if ! eval "$action"; then
        fail "$name: could not inject the fault"
    fi
    waited=0
    while kill -0 "$job" 2>/dev/null && [ "$waited" -lt 180 ]; do
        sleep 1
        waited=$((waited + 1))
    done
    if kill -0 "$job" 2>/dev/null; then
        fail "$name: the job still runs 180 s after the fault"
        kill "$job" 2>/dev/null
        wait "$job" 2>/dev/null
        return
    fi
    wait "$job"
    rc=$?
    took=$(($(date +%s) - start))
    said=$(grep -Ec "^starfold run: rank [0-9]+: $named .* within --timeout" \
        "$tmp/$name.out")
    if [ $rc -eq 0 ]; then
        fail "$name: the job ended well despite the fault"; tail -5 "$tmp/$name.out"
    elif [ "$said" -lt "$want" ]; then
        fail "$name: the job ended ($rc), but $said ranks (not $want) named the silent ones"; tail -10 "$tmp/$name.out"
    else
        echo "ok: $name: the job ended (exit $rc) ${took} s after the fault, $said ranks naming the silent ones:"
        grep -E '^starfold run: rank [0-9]+: ' "$tmp/$name.out" | sed 's/^/    /'
    fi
}
# A rank of node 1 (its starfold process) stopped.
fault stop 'kill -STOP "$(ip netns pids "$tag-1" | while read -r p; do [ "$(cat /proc/$p/comm 2>/dev/null)" = starfold ] && echo "$p"; done | head -1)"' 1
# Node 1's link down.
fault link 'ip netns exec "$tag-1" ip link set "${tag}n1" down' 1
# Node 1's link throttled to a trickle, both ways.
fault trickle 'ip netns exec "$tag-1" tc qdisc change dev "${tag}n1" root tbf rate 8kbit burst 2kb latency 50ms &&
    tc qdisc change dev "${tag}h1" root tbf rate 8kbit burst 2kb latency 50ms' 1
# Node 1 gone: its namespace removed and its link with it.
fault gone 'ip netns del "$tag-1" && ip link del "${tag}h1"' 1
exit $status
