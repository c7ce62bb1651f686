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
#
# `tests/device/bundle.sh --cuda [BUILD_DIR]` (default build-cuda, made by ./quickstart cuda) packs the CUDA
# build instead, for tests/device/gpu.sh: the programs it runs, the CUDA StarPU, libcudart 11.8, and
# stand-ins for cuBLAS and cuSPARSE (cuda_stubs.c: StarPU links them, starfold never calls them, and the
# real ones are 950 MB). Never the driver's libraries (libcuda, libnvidia-*): the GPU machine's own are
# the ones that match its GPU.
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
B=$top/.devbundle
if [ "${1:-}" = "--cuda" ]; then
    build=$(cd "${2:-$top/build-cuda}" && pwd)
    grep -q '^#define STARFOLD_HAVE_CUDA 1' "$build/config.h" || { echo "bundle.sh: $build is not a CUDA build (./quickstart cuda)" >&2; exit 1; }
    rm -rf "$B"
    mkdir -p "$B/bin" "$B/lib" "$B/stub"
    make -C "$build" -s all tests/bench_api >/dev/null
    make -C "$build" -s check TESTS= >/dev/null # the test programs, built and not run
    # Make's programs: the binary itself, not libtool's wrapper script.
    progs="starfold tests/bench_api tests/gpu/bench_gpu tests/test_types tests/test_kernels tests/test_exec_host
           tests/test_distribute tests/test_strategy tests/test_variables tests/test_badinput tests/test_limits tests/test_soak tests/test_properties
           examples/allreduce_demo examples/batch_reduce_to examples/train_linear_regression examples/embed_existing_app
           examples/overlap_backward examples/gradient_bucket examples/sparse_embedding"
    for p in $progs; do
        d=$(dirname "$p"); n=$(basename "$p")
        if [ -f "$build/$d/.libs/$n" ]; then cp "$build/$d/.libs/$n" "$B/bin/"; else cp "$build/$p" "$B/bin/"; fi
    done
    # make check-gpu's program, built here with the same nvcc (tests/gpu/run.sh).
    nvcc=$(sed -n 's/^NVCC = //p' "$build/Makefile")
    PATH=$(dirname "$nvcc"):$PATH BUILD_ONLY=1 NVCC=$nvcc NVCCFLAGS="$(sed -n 's/^NVCCFLAGS = //p' "$build/Makefile")" \
        STARPU_CFLAGS="$(sed -n 's/^STARPU_CFLAGS = //p' "$build/Makefile")" sh "$top/tests/gpu/run.sh" "$B/stub/gpu" >/dev/null
    cp "$B/stub/gpu/cuda_kernels" "$B/bin/"
    rm -rf "$B/stub/gpu"
    strip "$B"/bin/*
    # The examples link libstarfold.so (libtool's wrapper finds it in the build tree; here it travels).
    cp -L "$build/.libs/libstarfold.so.0" "$B/lib/"
    for o in "$B"/bin/*; do LD_LIBRARY_PATH=$B/lib ldd "$o" 2>/dev/null | awk '/=> \// { print $3 }'; done | sort -u | grep -v "^$B/" |
        grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libgcc_s|libstdc\+\+|libresolv|libutil)\.so' |
        grep -v -E '/lib(cuda|nvidia-[a-z-]*|cublas|cublasLt|cusparse)\.so' |
        while read -r lib; do cp -L "$lib" "$B/lib/"; done
    for l in libstarpu-1.3.so.9 libstarpumpi-1.3.so.3 libstarfold.so.0; do [ -f "$B/lib/$l" ] && strip --strip-unneeded "$B/lib/$l"; done
    for s in cublas:11 cusparse:11; do
        name=${s%%:*}; v=${s##*:}
        printf 'lib%s.so.%s { global: *; };\n' "$name" "$v" > "$B/stub/$name.map"
        ${CC:-cc} -shared -fPIC -O2 -DSF_STUB_$(echo "$name" | tr a-z A-Z) -Wl,--version-script="$B/stub/$name.map" \
            -Wl,-soname,lib$name.so.$v "$top/tests/device/cuda_stubs.c" -o "$B/lib/lib$name.so.$v"
    done
    rm -rf "$B/stub"
    # Graphviz's dot layout, SVG output and the neato plugin's edge routing (the demo draws its graphs);
    # gpu.sh points GVBINDIR here.
    mkdir -p "$B/graphviz"
    gv=$(dirname "$(ldconfig -p | awk '/libgvc.so.6 / { print $NF; exit }')")/graphviz
    cp "$gv/config6a" "$B/graphviz/"
    for p in core dot_layout neato_layout; do cp -L "$gv/libgvplugin_$p.so.6" "$B/graphviz/"; done
    for o in "$B"/graphviz/*.so.6; do LD_LIBRARY_PATH=$B/lib ldd "$o" | awk '/=> \// { print $3 }'; done | sort -u | grep -v "^$B/" |
        grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libgcc_s|libstdc\+\+)\.so' |
        while read -r lib; do cp -L "$lib" "$B/lib/"; done
    cp "$top/tests/device/gpu.sh" "$B/"
    du -sh "$B"
    exit 0
fi
build=${1:-build}
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
