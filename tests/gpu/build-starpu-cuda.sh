#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
#
# A CUDA StarPU from Debian 12's own archive, next to the system's StarPU (never in its place):
#
#   1. /etc/apt/sources.list.d/starfold-cuda.sources: bookworm's contrib and non-free (CUDA 11.8,
#      nvidia-cuda-toolkit; its libcuda1 needs contrib's nvidia-support) and deb-src for main;
#   2. the toolkit (nvcc 11.8 targets sm_50 to sm_90) and StarPU's build dependencies;
#   3. `apt-get source starpu` (1.3.10+dfsg-2, Debian's patches applied), autoreconf as Debian's
#      build does, configure with CUDA, OpenCL and MPI, make, make install into PREFIX.
#
# Usage: tests/gpu/build-starpu-cuda.sh        (./quickstart cuda calls it)
#   STARFOLD_CUDA_PREFIX  where StarPU goes     (default /opt/starfold/starpu-1.3.10-cuda)
#   STARFOLD_CUDA_SRC     where its source goes (default /opt/starfold/src)
# A second run finds PREFIX built from the same configure line and only says so. Needs root (apt).
set -euo pipefail

prefix=${STARFOLD_CUDA_PREFIX:-/opt/starfold/starpu-1.3.10-cuda}
srcdir=${STARFOLD_CUDA_SRC:-/opt/starfold/src}
version=1.3.10+dfsg
sources=/etc/apt/sources.list.d/starfold-cuda.sources
say() { printf '\n==> %s\n' "$*"; }

# Debian's own nvcc first: it finds ptxas through PATH, and a /usr/local/cuda of another release
# (13.0 refuses sm_52, nvcc 11.8's default) must not answer for it.
export PATH=/usr/bin:/bin:$PATH

# Everything of Debian's configure line (debian/rules) that a library user sees: CUDA (found in /usr),
# OpenCL, MPI, OpenMP. Left out: documentation, examples, tests, Fortran, StarPU-FFT, the OpenGL
# renderer and the resource manager, which nothing of starfold's loads and which triple the build.
configure_args=(--prefix="$prefix" --with-cuda-dir=/usr --with-cuda-include-dir=/usr/include
                --with-cuda-lib-dir=/usr/lib/x86_64-linux-gnu --enable-openmp --disable-build-doc
                --disable-build-tests --disable-build-examples --disable-fortran --disable-starpufft
                NVCC=/usr/bin/nvcc "NVCCFLAGS=-Xcompiler -fPIC")
stamp="$prefix/.starfold-build"
wanted="starpu $version: ${configure_args[*]}"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && [ -x /usr/bin/nvcc ]; then
    say "StarPU $version with CUDA is already in $prefix (delete $stamp to build it again)"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "build-starpu-cuda.sh: installing the CUDA toolkit needs root (apt-get); run it as root" >&2
    exit 1
fi

if [ ! -f "$sources" ]; then
    say "Adding $sources: bookworm contrib + non-free (nvidia-cuda-toolkit 11.8) and deb-src main (StarPU's source)"
    cat > "$sources" <<'EOF'
# Added by starfold's ./quickstart cuda (tests/gpu/build-starpu-cuda.sh): CUDA 11.8 from non-free
# (its libcuda1 needs contrib's nvidia-support) and the source of Debian's StarPU. Delete to undo.
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
fi

say "Installing the CUDA 11.8 toolkit (about 1.6 GB to download, 5 GB installed) and StarPU's build dependencies"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# libcuda1 and libnvidia-ml1 come with the toolkit: the driver's user-space libraries, unused
# without a GPU; on a GPU machine its own driver's copies are the ones loaded.
apt-get install -y -qq --no-install-recommends nvidia-cuda-toolkit nvidia-cuda-dev dpkg-dev \
    build-essential autoconf automake libtool pkg-config libhwloc-dev libnuma-dev libglpk-dev \
    mpi-default-dev libblas-dev ocl-icd-opencl-dev opencl-c-headers

say "Fetching and unpacking Debian's StarPU source ($version) in $srcdir"
mkdir -p "$srcdir"
cd "$srcdir"
tree="$srcdir/starpu-$version"
if [ ! -d "$tree" ]; then
    apt-get source --download-only "starpu=$version-2" >/dev/null 2>&1 || apt-get source --download-only starpu
    dpkg-source -x starpu_"$version"-*.dsc >/dev/null
    # Debian's patches change Makefile.am files: regenerate as dh_autoreconf does.
    (cd "$tree" && autoreconf -fi >/dev/null 2>&1)
fi

say "Configuring and building StarPU with CUDA into $prefix ($(nproc) cores)"
rm -rf "$tree/build"
mkdir -p "$tree/build"
cd "$tree/build"
../configure "${configure_args[@]}" > configure.log 2>&1 || { tail -40 configure.log; exit 1; }
grep -q "^#define STARPU_USE_CUDA 1" include/starpu_config.h || {
    echo "build-starpu-cuda.sh: StarPU's configure did not enable CUDA (see $tree/build/configure.log)" >&2
    exit 1
}
make -j"$(nproc)" > make.log 2>&1 || { tail -40 make.log; exit 1; }
make install > install.log 2>&1 || { tail -40 install.log; exit 1; }
printf '%s' "$wanted" > "$stamp"
say "StarPU $version with CUDA, OpenCL and MPI installed in $prefix"
