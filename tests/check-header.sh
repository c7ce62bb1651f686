#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# make check: a C11 program that includes only <starfold.h> compiles as it is, with the strictest
# flags a user is likely to set (no _POSIX_C_SOURCE, no StarPU include path), and so does a C++
# one; a program that includes StarPU's header too, in either order, compiles as well (the handle
# typedef is StarPU's, repeated). Exit 77 only where no C compiler can be run.
src="${SF_TOP_SRCDIR:-..}"
cc="${CC:-cc}"
cxx="${CXX:-c++}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
command -v "${cc%% *}" >/dev/null 2>&1 || { echo "no C compiler ($cc): skipped"; exit 77; }
status=0

cat > "$tmp/alone.c" <<'C'
#include <starfold.h>
int main(void)
{
    starfold_topology_t t = NULL;
    starfold_status_t st = starfold_topology_builtin("dgx1-v100", &t);
    starfold_topology_destroy(t);
    return st == STARFOLD_OK ? 0 : 1;
}
C
echo "$cc -std=c11 -Wall -Wextra -Werror -pedantic -I$src/include -c alone.c"
$cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$src/include" -c "$tmp/alone.c" -o "$tmp/alone.o" || status=1

if [ -n "$STARPU_CFLAGS_FOR_TEST" ] || pkg-config --exists starpu-1.3 2>/dev/null; then
    sp="${STARPU_CFLAGS_FOR_TEST:-$(pkg-config --cflags starpu-1.3)}"
    for order in "starpu.h starfold.h" "starfold.h starpu.h"; do
        {
            echo "#define _POSIX_C_SOURCE 200809L"
            for h in $order; do echo "#include <$h>"; done
            echo "int main(void) { starpu_data_handle_t h = NULL; return h != NULL; }"
        } > "$tmp/both.c"
        echo "$cc -std=c11 -Wall -Wextra -Werror -pedantic (includes: $order)"
        $cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$src/include" $sp -c "$tmp/both.c" -o "$tmp/both.o" || status=1
    done
fi

if command -v "${cxx%% *}" >/dev/null 2>&1; then
    cp "$tmp/alone.c" "$tmp/alone.cpp"
    echo "$cxx -Wall -Wextra -Werror -c alone.cpp"
    $cxx -Wall -Wextra -Werror -I"$src/include" -c "$tmp/alone.cpp" -o "$tmp/alone_cpp.o" || status=1
fi
exit $status
