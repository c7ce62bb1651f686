#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# make check: nothing in the tree points at files a user of the repository does not have. The notes
# the project was built from (TensorFlow's semantics, the DGX-1 bounds, the StarPU test rig) lived
# beside the repository; what a reader needs of them is in doc/ now (tensorflow-semantics.md,
# test-machines.md), and a citation of one of them, or of the folder they came in, fails here.
src="${SF_TOP_SRCDIR:-.}"
pattern='tf-distribute-semantics\.md|starpu-test-rig\.md|topologies-and-bounds\.md|\.\./shared/|shared/(reference|seeds)/'
hits=$(cd "$src" && grep -rEn "$pattern" --include='*.c' --include='*.h' --include='*.cu' --include='*.md' \
       --include='*.sh' --include='*.am' --include='*.ac' --include='*.m4' --include='*.1' --include='*.in' \
       --include='*.dot' --include='quickstart' --include='run' \
       README.md BENCHMARKS.md Makefile.am configure.ac quickstart .ci cli doc examples graphs include m4 src tests tools 2>/dev/null |
       grep -v '^tests/check-references\.sh:')
if [ -n "$hits" ]; then
    echo "references to files outside the repository (write what the reader needs into doc/ instead):"
    echo "$hits" | sed 's/^/  /'
    exit 1
fi
echo "no reference to a file outside the repository"
