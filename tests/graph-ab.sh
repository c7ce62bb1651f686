#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
#
# Two builds of the command side by side on the graphs they compile: `starfold graph ... -o -` (every
# task as DOT) for each case of a fixed list, by both binaries, compared byte for byte, with the exit
# status and the summary on stderr. A restructuring that is to change nothing must give identical
# output for every case; this prints the cases that differ and a count.
#
# Usage: tests/graph-ab.sh OLD_STARFOLD NEW_STARFOLD
#
# The cases: 5 topologies x 7 algorithms x 6 tensor lists x 6 option sets = 1,260 graphs (a case an
# algorithm refuses, one-pass on devices with memories of their own, compares its error). Each run
# is limited to 60 s (timeout(1)). The binaries come from any two builds, such as the trees
# tests/bench-ab.sh -k DIR keeps (DIR/<commit>/starfold).
set -u
[ $# -eq 2 ] && [ -x "$1" ] && [ -x "$2" ] || { echo "usage: tests/graph-ab.sh OLD_STARFOLD NEW_STARFOLD" >&2; exit 2; }
old=$1
new=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' HUP INT TERM

same=0
differ=0
for topo in dgx1-v100 dgx1-p100 pcie4 emulated host; do
    for alg in reduce-to-one hierarchical-copy ring halving-doubling trees one-pass hierarchical; do
        for tensors in 1MiB 4x1MiB,10x4KiB 3x1000 1000x4KiB resnet50 64MiB; do
            for opts in "" "--num-packs 0" "--num-packs 4" "--bytes-per-pack 1M" "--chunk-bytes 64K" \
                "--op mean -d float64"; do
                # shellcheck disable=SC2086 # $opts is a list of options
                set -- graph --topology "$topo" --algorithm "$alg" --tensors "$tensors" $opts -o -
                timeout 60 "$old" "$@" >"$tmp/old.out" 2>"$tmp/old.err"
                echo "exit $?" >>"$tmp/old.err"
                timeout 60 "$new" "$@" >"$tmp/new.out" 2>"$tmp/new.err"
                echo "exit $?" >>"$tmp/new.err"
                if cmp -s "$tmp/old.out" "$tmp/new.out" && cmp -s "$tmp/old.err" "$tmp/new.err"; then
                    same=$((same + 1))
                else
                    differ=$((differ + 1))
                    echo "differs: starfold $*"
                fi
            done
        done
    done
done
echo "graph-ab: $same identical, $differ different ($((same + differ)) cases)"
[ "$differ" -eq 0 ]
