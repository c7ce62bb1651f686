#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
#
# Does "auto" pick the measured fastest? For each size and round, one `starfold bench --algorithm all`
# (every algorithm and auto, in one process, one after the other) on the machine's own devices; the
# row of each algorithm against auto's choice. Prints one line per (round, size) and a summary per size:
#
#   size  round  auto chose  its row (us)  fastest  fastest (us)  chosen/fastest  verdict  model alone
#
# The last column is what auto would choose from the model alone (STARFOLD_AUTO_MEASUREMENTS=0, the
# choice before the calibration measured each algorithm), with its verdict on the same rows.
# "right" when auto chose the fastest row's algorithm; "close" when the chosen algorithm's own row is
# within 10 % of the fastest (rows of one graph vary more than that between runs on a loaded machine).
# Usage: bench-auto.sh STARFOLD [ROUNDS [SIZES...]]  (make bench-auto runs it from a build directory)
set -eu
starfold=${1:?usage: bench-auto.sh STARFOLD [ROUNDS [SIZES...]]}
rounds=${2:-3}
[ $# -ge 2 ] && shift 2 || shift $#
sizes=${*:-64K 96K 512K 768K 4M 6M 32M}
args=${BENCH_AUTO_ARGS:---topology host -n 10 -w 2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# The calibration these runs use (measured now if this machine has none yet).
$starfold bench $args -b 1K -e 1K --algorithm auto --baselines 0 --csv 2>&1 >/dev/null | grep -A2 '^Cost model' || true

printf '%-6s %5s  %-18s %12s  %-18s %12s  %14s  %-7s  %s\n' size round "auto chose" "its row (us)" fastest \
    "fastest (us)" chosen/fastest verdict "model alone"
for r in $(seq 1 "$rounds"); do
    for s in $sizes; do
        $starfold bench $args -b "$s" -e "$s" --algorithm all --baselines 0 --csv >"$tmp/rows.csv" 2>"$tmp/err" || {
            cat "$tmp/err" >&2
            exit 1
        }
        model=$(STARFOLD_AUTO_MEASUREMENTS=0 $starfold bench $args -b "$s" -e "$s" -n 1 -w 0 --algorithm auto \
            --baselines 0 --csv 2>/dev/null | awk -F, 'NR == 2 { print substr($17, 6) }')
        # CSV: algorithm,...,time_us (7th),...,graph (17th)
        awk -F, -v size="$s" -v round="$r" -v model="$model" '
            NR == 1 { next }
            $1 == "auto" { chose = substr($17, 6); next }
            { t[$1] = $7 + 0; if (best == "" || $7 + 0 < t[best]) best = $1 }
            END {
                own = t[chose]
                ratio = own / t[best]
                verdict = chose == best ? "right" : (ratio <= 1.10 ? "close" : "wrong")
                mratio = t[model] / t[best]
                mverdict = model == best ? "right" : (mratio <= 1.10 ? "close" : "wrong")
                printf "%-6s %5d  %-18s %12.1f  %-18s %12.1f  %14.2f  %-7s  %s %s (%.2f)\n", size, round, chose, own, best,
                    t[best], ratio, verdict, model, mverdict, mratio
            }' "$tmp/rows.csv" | tee -a "$tmp/all"
    done
done

echo
echo "per size: rounds where auto chose the fastest (right), or an algorithm within 10 % of it (close);"
echo "then the same for the model alone"
for s in $sizes; do
    awk -v size="$s" '$1 == size { n++; if ($8 == "right") ok++; else if ($8 == "close") near++
                                   if ($10 == "right") mok++; else if ($10 == "close") mnear++ }
        END { printf "%-6s auto: right %d of %d, close %d, wrong %d; model alone: right %d, close %d, wrong %d\n",
              size, ok, n, near, n - ok - near, mok, mnear, n - mok - mnear }' "$tmp/all"
done
