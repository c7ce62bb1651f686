#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# make check: the README's program is examples/mirrored_allreduce.c (which make check builds and
# runs), from its first #include on, character for character; and every doc/ page the README links
# to exists. A README that drifted from the code fails here.
src="${SF_TOP_SRCDIR:-.}"
readme="$src/README.md"
example="$src/examples/mirrored_allreduce.c"
[ -f "$readme" ] && [ -f "$example" ] || { echo "README.md or $example missing"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# The first ```c block after "## A first program".
awk '/^## A first program/ { on = 1 } on && /^```c$/ { copy = 1; next } copy && /^```$/ { exit } copy { print }' \
    "$readme" > "$tmp/readme.c"
sed -n '/^#include <stdio.h>/,$p' "$example" > "$tmp/example.c"
status=0
if ! cmp -s "$tmp/readme.c" "$tmp/example.c"; then
    echo "README.md's program differs from examples/mirrored_allreduce.c:"
    diff "$tmp/example.c" "$tmp/readme.c" | head -20
    status=1
fi
for page in $(sed -n 's/.*](\(doc\/[a-z0-9._-]*\)).*/\1/p; s/.*](\(doc\/[a-z0-9._-]*\)).*](\(doc\/[a-z0-9._-]*\)).*/\2/p' "$readme" | sort -u); do
    [ -f "$src/$page" ] || { echo "README.md links to $page, which does not exist"; status=1; }
done
[ $status -eq 0 ] && echo "README.md's program is examples/mirrored_allreduce.c, and its doc/ links resolve"
exit $status
