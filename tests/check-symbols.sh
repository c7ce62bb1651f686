#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# make check: the global symbols of both libstarfold libraries.
#
#   libstarfold.so  exports the public API only: starfold_* names, none of the private starfold__*;
#   libstarfold.a   defines no global name outside starfold_ (the private ones are starfold__*), so a
#                   program linking it statically meets no clash (sf_error once clashed with libsndfile).
#
# Symbols a sanitizer build adds on its own (__asan_*, __odr_asan_*, ...) are not starfold's and are
# left out. Prints every offending symbol and fails; exit 77 where nm is missing.
top="${SF_TOP_BUILDDIR:-.}"
command -v nm >/dev/null 2>&1 || { echo "nm not found: skipped"; exit 77; }
so="$top/.libs/libstarfold.so"
ar="$top/.libs/libstarfold.a"
status=0
for lib in "$so" "$ar"; do
    [ -f "$lib" ] || { echo "missing: $lib"; status=1; }
done
[ $status -eq 0 ] || exit 1

sanitizer='^_*(asan|odr_asan|ubsan|tsan|sancov|msan|lsan)'

# Dynamic symbols defined by the shared library (text, data, bss, read-only, weak, unique).
bad=$(nm -D --defined-only "$so" | awk 'NF == 3 && $2 ~ /[BDGRSTVWiu]/ { print $3 }' |
      grep -Ev "$sanitizer" | grep -Ev '^starfold_[a-z0-9]' | sort -u)
if [ -n "$bad" ]; then
    echo "libstarfold.so exports names outside the public API (starfold_*, never starfold__*):"
    echo "$bad" | sed 's/^/  /'
    status=1
fi
echo "libstarfold.so: $(nm -D --defined-only "$so" | awk 'NF == 3 && $2 ~ /[BDGRSTVWiu]/' | grep -c ' starfold_') public symbols"

# Global symbols defined in the static archive.
bad=$(nm -g --defined-only "$ar" 2>/dev/null | awk 'NF == 3 { print $3 }' |
      grep -Ev "$sanitizer" | grep -Ev '^starfold_' | sort -u)
if [ -n "$bad" ]; then
    echo "libstarfold.a defines global names outside starfold_ (use the private prefix starfold__):"
    echo "$bad" | sed 's/^/  /'
    status=1
fi
echo "libstarfold.a: $(nm -g --defined-only "$ar" 2>/dev/null | awk 'NF == 3' | grep -c ' starfold__') private, all under starfold_"
[ $status -eq 0 ] && echo "symbols: ok"
exit $status
