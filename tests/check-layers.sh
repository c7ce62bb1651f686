#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# make check: the includes follow the layer table (Makefile.am, doc/design.md "Layout and layers"). A file
# of src/ may include the private headers of its own layer and of the layers before it in this order,
# never of one after it:
#
#     base patterns topology graph algorithms exec mpi distribute
#
# and only src/exec and src/mpi include <starpu.h>, only src/mpi <starpu_mpi.h> and <mpi.h> (the
# process layer; the TensorFlow layer reaches it through <starfold/mpi.h>). Names every include that
# breaks the table.
src="${SF_TOP_SRCDIR:-.}"
order="base patterns topology graph algorithms exec mpi distribute"
rank_of() {
    i=0
    for l in $order; do
        [ "$l" = "$1" ] && { echo $i; return; }
        i=$((i + 1))
    done
    echo -1
}
status=0
for dir in "$src"/src/*/; do
    layer=$(basename "$dir")
    mine=$(rank_of "$layer")
    [ "$mine" -ge 0 ] || { echo "src/$layer: a folder the layer table does not list"; status=1; continue; }
    for f in "$dir"*.c "$dir"*.h "$dir"*.cu; do
        [ -f "$f" ] || continue
        rel="src/$layer/$(basename "$f")"
        # Private headers: "folder/name.h".
        for used in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/[^"]*".*/\1/p' "$f" | sort -u); do
            theirs=$(rank_of "$used")
            if [ "$theirs" -lt 0 ] || [ "$theirs" -gt "$mine" ]; then
                echo "$rel includes \"$used/...\": the $layer layer may not use the $used layer"
                status=1
            fi
        done
        if grep -Eq '^[[:space:]]*#[[:space:]]*include[[:space:]]*<starpu\.h>' "$f" && [ "$layer" != exec ] && [ "$layer" != mpi ]; then
            echo "$rel includes <starpu.h>: only src/exec and src/mpi do"
            status=1
        fi
        if grep -Eq '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(starpu_mpi|mpi)\.h>' "$f" && [ "$layer" != mpi ]; then
            echo "$rel includes MPI's or StarPU-MPI's header: only src/mpi does"
            status=1
        fi
    done
done
[ $status -eq 0 ] && echo "every include of src/ follows the layer table ($order)"
exit $status
