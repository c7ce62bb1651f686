#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# make check: every source file of the project states its licence (COPYING, BSD-3-Clause) in its first
# lines. Works in a git checkout and in a release tarball alike (it looks at the files, not at git).
# The m4 macros of autoconf-archive, pkg-config and libtool keep their own licences.
srcdir=${srcdir:-.}
cd "$srcdir" || exit 1
missing=0
checked=0
for f in $(find src include cli tools tests examples m4 -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \
               -o -name '*.sh' -o -name '*.m4' -o -name '*.supp' \) ! -path 'tests/fuzz/corpus*' \
               ! -name 'pkg.m4' ! -name 'ax_*.m4' ! -name 'lt*.m4' ! -name 'libtool.m4' 2>/dev/null) \
         configure.ac Makefile.am quickstart .ci/run autogen.sh starfold.pc.in doc/Doxyfile.in doc/starfold.1; do
    [ -f "$f" ] || continue
    checked=$((checked + 1))
    if ! head -n 5 "$f" | grep -q 'SPDX-License-Identifier: BSD-3-Clause'; then
        echo "check-licence: $f: no 'SPDX-License-Identifier: BSD-3-Clause' in its first 5 lines" >&2
        missing=$((missing + 1))
    fi
done
echo "check-licence: $checked files, $missing without the licence line"
[ "$checked" -gt 100 ] || { echo "check-licence: too few files found under $srcdir" >&2; exit 1; }
[ "$missing" -eq 0 ]
