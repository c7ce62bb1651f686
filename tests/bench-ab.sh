#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
#
# Two commits side by side: builds a benchmark program at each commit, in a git worktree of its own
# under a temporary directory, then runs the two binaries in turn (old, new, old, new, ...) with the
# same arguments, RUNS times each, and prints every run's time in ms, their medians and the median of
# the per-run ratios new / old. On a shared machine timings move by tens of percent from one run to
# the next; two binaries alternated in one sitting is how BENCHMARKS.md compares two trees.
#
# Usage: tests/bench-ab.sh [-n RUNS] [-p PROGRAM] [-m MODE] [-k DIR] OLD [NEW] -- ARGS...
#
#   OLD, NEW    commits (anything git rev-parse names); NEW defaults to HEAD
#   -n RUNS     runs of each binary (default 5)
#   -p PROGRAM  bench_api (default): tests/bench_api ARGS, the TensorFlow API's bench;
#               starfold: the command, `starfold ARGS --csv` (ARGS starting with `bench`)
#   -m MODE     what one run's time is. bench_api: the first line of a mode whose name starts with
#               MODE (default "api batch_reduce_to"), the median of its rounds' ms per step (mode
#               names changed over time: "api run" is "api run + all_reduce" in older trees, "api run
#               in turn + all_reduce" in newer ones); starfold: the CSV row whose algorithm is MODE
#               (default the first row), its time_us in ms
#   -k DIR      keep the two trees in DIR (one worktree per commit, DIR/<commit>) and use them again
#               next time: several cases over the same two commits build each tree once. Remove
#               them with `git worktree remove DIR/<commit>`.
#   ARGS        the program's arguments, the same for both binaries
#
# Examples (the first: run + all_reduce of 1,000 x 4 KiB on two CPU workers, six runs each):
#   STARPU_NCPU=2 tests/bench-ab.sh -n 6 -m 'api run' 69ecfc0 84a1096 -- --tensors 1000x4KiB -n 50 -w 5 --rounds 2
#   tests/bench-ab.sh -p starfold -n 8 efc994f 4adc9a0 -- bench --topology host -b 64K --algorithm ring \
#       -n 20 -w 3 --baselines 0
#
# Each tree is configured in place (autoreconf -fi, ./configure --quiet $SF_AB_CONFIGURE) and only the
# program is built (make -j$SF_AB_JOBS, default 2). StarPU's environment (STARPU_NCPU, the emulated
# box's variables of doc/test-machines.md, ...) passes through to both binaries; STARPU_SILENT is 1
# unless set. Both binaries share $STARPU_HOME, so one calibration serves both. Run from inside the
# repository; the worktrees and the temporary directory are removed at the end, also on failure.
set -eu

usage() {
    echo "usage: tests/bench-ab.sh [-n RUNS] [-p bench_api|starfold] [-m MODE] [-k DIR] OLD [NEW] -- ARGS..." >&2
    exit 2
}

runs=5
program=bench_api
mode=
keep=
while getopts n:p:m:k:h opt; do
    case $opt in
        n) runs=$OPTARG ;;
        p) program=$OPTARG ;;
        m) mode=$OPTARG ;;
        k) keep=$OPTARG ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
case $runs in '' | *[!0-9]*) usage ;; esac
[ "$runs" -ge 1 ] || usage
case $program in
    bench_api) target=tests/bench_api; mode=${mode:-api batch_reduce_to} ;;
    starfold) target=starfold ;;
    *) usage ;;
esac

[ $# -ge 1 ] || usage
old=$1; shift
new=HEAD
if [ $# -ge 1 ] && [ "$1" != "--" ]; then
    new=$1; shift
fi
if [ $# -lt 1 ] || [ "$1" != "--" ]; then usage; fi
shift

top=$(git rev-parse --show-toplevel) || { echo "bench-ab: run it inside the starfold repository" >&2; exit 1; }
old_rev=$(git -C "$top" rev-parse --verify --quiet "$old^{commit}") || { echo "bench-ab: no commit $old" >&2; exit 1; }
new_rev=$(git -C "$top" rev-parse --verify --quiet "$new^{commit}") || { echo "bench-ab: no commit $new" >&2; exit 1; }
jobs=${SF_AB_JOBS:-2}
STARPU_SILENT=${STARPU_SILENT-1}
export STARPU_SILENT

tmp=$(mktemp -d)
if [ -n "$keep" ]; then
    mkdir -p "$keep"
    trees=$(cd "$keep" && pwd)
else
    trees=$tmp
fi
old_dir=$trees/$old_rev
new_dir=$trees/$new_rev
cleanup() {
    if [ -z "$keep" ]; then
        for dir in "$old_dir" "$new_dir"; do
            if [ -d "$dir" ]; then git -C "$top" worktree remove --force "$dir" >/dev/null 2>&1 || true; fi
        done
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' HUP INT PIPE TERM

# build DIR REV: a worktree of REV at DIR, configured in place (once, with -k), the program built.
build() {
    echo "# building $target at $(git -C "$top" log -1 --format='%h %s' "$2")" >&2
    [ -d "$1" ] || git -C "$top" worktree add --quiet --detach "$1" "$2"
    # shellcheck disable=SC2086 # SF_AB_CONFIGURE is a list of configure arguments
    if ! (cd "$1" && { [ -f Makefile ] || { autoreconf -fi && ./configure --quiet ${SF_AB_CONFIGURE:-}; }; } &&
        make -j"$jobs" "$target") >"$tmp/build.log" 2>&1; then
        echo "bench-ab: building $target at $2 failed; the end of its log:" >&2
        tail -n 30 "$tmp/build.log" >&2
        exit 1
    fi
}
build "$old_dir" "$old_rev"
build "$new_dir" "$new_rev"

# One run's time (ms) from the program's output on stdin.
value() {
    if [ "$program" = bench_api ]; then
        # "  api batch_reduce_to   0.033 ( 0.91x)   0.034 ( 0.95x)": the rounds' ms, their median.
        awk -v mode="$mode" '
            { line = $0; sub(/^[ \t]+/, "", line) }
            line !~ /^#/ && index(line, mode) == 1 {
                gsub(/\([^)]*\)/, "", line)
                nf = split(line, f, /[ \t]+/)
                n = 0
                for (i = 1; i <= nf; i++) if (f[i] ~ /^[0-9]+(\.[0-9]+)?$/) v[++n] = f[i] + 0
                for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
                if (n) printf "%.6g\n", n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
                exit
            }'
    else
        # The CSV's header names the columns; the first row (or MODE's) gives time_us.
        awk -F, -v alg="$mode" '
            $1 == "algorithm" { for (i = 1; i <= NF; i++) if ($i == "time_us") c = i; next }
            /^#/ || !c { next }
            alg == "" || $1 == alg { printf "%.6g\n", $c / 1000; exit }'
    fi
}

csv=
if [ "$program" = starfold ]; then
    csv=--csv
    for a in "$@"; do
        if [ "$a" = --csv ]; then csv=; fi
    done
fi

# run SIDE ARGS...: one run of that side's binary; its time appended to $tmp/SIDE.ms.
run() {
    side=$1; shift
    # shellcheck disable=SC2086 # $csv is one word or none
    if [ "$side" = old ]; then dir=$old_dir; else dir=$new_dir; fi
    if ! "$dir/$target" "$@" $csv >"$tmp/out" 2>"$tmp/err"; then
        echo "bench-ab: the $side binary failed:" >&2
        cat "$tmp/err" >&2
        exit 1
    fi
    ms=$(value <"$tmp/out")
    if [ -z "$ms" ]; then
        echo "bench-ab: no time for '${mode:-the first row}' in the $side binary's output:" >&2
        cat "$tmp/out" >&2
        exit 1
    fi
    echo "$ms" >>"$tmp/$side.ms"
}

# median FILE [FORMAT]: the median of the numbers in FILE, one a line.
median() {
    awk -v fmt="${2:-%.6g}" '{ v[NR] = $1 + 0; for (j = NR; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t } }
         END { if (NR) printf fmt, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else printf "-" }' "$1"
}

echo "# bench-ab: old $(git -C "$top" log -1 --format='%h (%s)' "$old_rev")"
echo "#           new $(git -C "$top" log -1 --format='%h (%s)' "$new_rev")"
echo "# $target $* $csv"
echo "# $runs runs each, in turn, old first; ms${mode:+ of: $mode}"
printf '%-6s %12s %12s %9s\n' run "old (ms)" "new (ms)" new/old
: >"$tmp/old.ms"
: >"$tmp/new.ms"
: >"$tmp/ratio"
i=1
while [ "$i" -le "$runs" ]; do
    run old "$@"
    o=$ms
    run new "$@"
    n=$ms
    r=$(awk -v o="$o" -v n="$n" 'BEGIN { if (o > 0) printf "%.3f", n / o; else print "-" }')
    [ "$r" = - ] || echo "$r" >>"$tmp/ratio"
    printf '%-6s %12s %12s %9s\n' "$i" "$o" "$n" "$r"
    i=$((i + 1))
done
printf '%-6s %12s %12s %9s\n' median "$(median "$tmp/old.ms")" "$(median "$tmp/new.ms")" "$(median "$tmp/ratio" %.3f)"
