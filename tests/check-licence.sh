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
# The project's files by name: C, CUDA, headers, shell, m4 (not autoconf-archive's, pkg-config's or
# libtool's), suppressions, automake and autoconf inputs; and, in a git checkout, every tracked file
# starting with '#!' (scripts without a suffix). A new file anywhere in the tree is covered.
is_external() {
    case "$1" in
        m4/pkg.m4|m4/ax_*.m4|m4/lt*.m4|m4/libtool.m4|tests/fuzz/corpus*) return 0 ;;
    esac
    return 1
}
if [ -d .git ] || [ -f .git ] && git rev-parse --show-toplevel >/dev/null 2>&1 &&
   [ "$(cd "$(git rev-parse --show-toplevel)" && pwd -P)" = "$(pwd -P)" ]; then
    files=$(git ls-files | while IFS= read -r f; do
        is_external "$f" && continue
        case "$f" in
            *.c|*.h|*.cu|*.sh|*.m4|*.supp|*.am|*.ac|*.in) echo "$f" ;;
            *) [ -f "$f" ] && [ "$(head -c 2 "$f")" = '#!' ] && echo "$f" ;;
        esac
    done)
    files="$files doc/starfold.1"
else # a release tarball: the same files, found by name
    files="$(find src include cli tools tests examples m4 -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \
               -o -name '*.sh' -o -name '*.m4' -o -name '*.supp' -o -name '*.am' -o -name '*.in' \) \
               ! -path 'tests/fuzz/corpus*' ! -name 'Makefile.in' \
               ! -name 'pkg.m4' ! -name 'ax_*.m4' ! -name 'lt*.m4' ! -name 'libtool.m4' 2>/dev/null)
         configure.ac Makefile.am quickstart .ci/run autogen.sh starfold.pc.in doc/Doxyfile.in doc/starfold.1"
fi
for f in $files; do
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
