#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# Packs a built tree with Debian's StarPU, StarPU-MPI and Open MPI for the lent GPU machine (Ubuntu
# 24.04, 16 cores, no StarPU, no MPI of ours): `tests/device/bundle.sh [BUILD_DIR]` writes .devbundle/
# (about 30 MiB, ignored by git; BEFORE=FILE adds another build's bench_api, compared in turn); the
# device tool carries it (`carry: [".devbundle"]`) and runs `bash .devbundle/bench.sh` there. Copied,
# not installed: the programs, every library they load but glibc's and the compiler's (newer there),
# and Open MPI's and PMIx's trees, which bench.sh links in at the paths Debian built them for (Open
# MPI looks for its components there).
set -e
build=${1:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
B=$top/.devbundle
rm -rf "$B"
mkdir -p "$B/bin" "$B/lib" "$B/root" "$B/top/tests/mpi" "$B/top/examples"
cp "$build/starfold" "$B/top/"
cp "$build/tests/mpi/test_group" "$B/top/tests/mpi/"
cp "$build/examples/train_multi_worker" "$B/top/examples/"
cp "$build/tests/bench_api" "$B/bin/"
[ -n "${BEFORE:-}" ] && cp "$BEFORE" "$B/bin/bench_api.before"   # another build's bench_api, compared in turn
strip "$B/top/starfold" "$B/top/tests/mpi/test_group" "$B/top/examples/train_multi_worker" "$B"/bin/bench_api*
tar -C / -cf - usr/lib/x86_64-linux-gnu/openmpi/lib usr/lib/x86_64-linux-gnu/pmix2/lib \
    usr/lib/x86_64-linux-gnu/pmix2/share usr/share/openmpi etc/openmpi usr/bin/orterun usr/bin/orted | tar -C "$B/root" -xf -
for o in "$B"/top/starfold "$B"/top/tests/mpi/test_group "$B"/top/examples/train_multi_worker "$B"/bin/bench_api \
         /usr/bin/orterun /usr/bin/orted \
         $(find /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 -name '*.so*' -type f); do
    ldd "$o" 2>/dev/null | awk '/=>/ { print $3 }'
done | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libgcc_s|libstdc\+\+|libresolv|libutil)\.so' |
while read -r lib; do cp -L "$lib" "$B/lib/"; done
cp "$top/tests/device/bench.sh" "$B/"
du -sh "$B"
