#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# make check: every public function that returns a status and has an output parameter (an [out] or
# [in,out] @param in its header) has a failing call that checks its outputs come back untouched, the
# header's rule on failure: a BAD(...) case in tests/test_badinput.c (RC_FAILS(...) in a replica
# function), or for the process group's functions a FAILS(...) case in tests/mpi/test_group.c. A function added to a header without one
# fails this check, naming it.
src="${SF_TOP_SRCDIR:-.}"
cases=$(cat "$src/tests/test_badinput.c" "$src/tests/mpi/test_group.c" |
        sed -n -e 's/.*\(BAD\|FAILS\)( *\(starfold_[a-z0-9_]*\)(.*/\2/p' \
               -e 's/.*RC_FAILS( *[0-9]*, *\(starfold_[a-z0-9_]*\)(.*/\1/p' | sort -u)
# Doc comments (/** ... */) followed by "STARFOLD_API starfold_status_t NAME(": NAME when the
# comment documents an output parameter.
wanted=$(for h in "$src"/include/starfold/*.h; do
    awk '
        /\/\*\*/ { doc = 1; out = 0 }
        doc && /\[(out|in,out)\]/ { out = 1 }
        doc && /\*\// { doc = 0; pending = out; next }
        !doc && pending && /STARFOLD_API starfold_status_t starfold_/ {
            name = $0; sub(/.*STARFOLD_API starfold_status_t /, "", name); sub(/\(.*/, "", name); print name
        }
        !doc && NF { if (!/STARFOLD_API/) pending = 0 }
    ' "$h"
done | sort -u)
[ -n "$wanted" ] || { echo "no public function found in $src/include/starfold: the check is broken"; exit 1; }
missing=""
for f in $wanted; do
    echo "$cases" | grep -qx "$f" || missing="$missing $f"
done
total=$(echo "$wanted" | wc -l)
if [ -n "$missing" ]; then
    echo "public functions with an output parameter and no failing call checking it stays untouched:"
    for f in $missing; do echo "  $f"; done
    exit 1
fi
echo "$total public functions with output parameters: each has a failing call that leaves its outputs untouched"
