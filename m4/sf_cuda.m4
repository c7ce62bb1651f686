dnl SPDX-License-Identifier: BSD-3-Clause
dnl Copyright (c) 2026 The starfold authors
# SF_CHECK_CUDA: CUDA kernels are built with nvcc when StarPU was built with CUDA (--with-cuda[=DIR]).
AC_DEFUN([SF_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [build CUDA kernels (StarPU must have CUDA); DIR is the toolkit])],
    [], [with_cuda=check])
  sf_have_cuda=no
  AS_IF([test "x$with_cuda" != xno], [
    sf_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $STARPU_CFLAGS"
    AC_PREPROC_IFELSE([AC_LANG_SOURCE([[#include <starpu_config.h>
#ifndef STARPU_USE_CUDA
#error no CUDA
#endif]])], [sf_starpu_cuda=yes], [sf_starpu_cuda=no])
    CPPFLAGS=$sf_save_CPPFLAGS
    AS_IF([test "x$with_cuda" != xyes && test "x$with_cuda" != xcheck], [sf_cuda_dir=$with_cuda], [sf_cuda_dir=/usr/local/cuda])
    AC_PATH_PROG([NVCC], [nvcc], [], [$sf_cuda_dir/bin$PATH_SEPARATOR$PATH])
    AS_IF([test "x$sf_starpu_cuda" = xyes && test -n "$NVCC"], [
      sf_have_cuda=yes
      # A toolkit in the system's own folders (Debian's nvidia-cuda-toolkit: --with-cuda=/usr) needs
      # no -I or -L: -I/usr/include would break the C++ headers' #include_next.
      CUDA_CFLAGS=
      CUDA_LIBS="-lcudart"
      AS_IF([test "x$sf_cuda_dir" != x/usr && test -d "$sf_cuda_dir/include"], [CUDA_CFLAGS="-I$sf_cuda_dir/include"])
      AS_IF([test "x$sf_cuda_dir" != x/usr && test -d "$sf_cuda_dir/lib64"], [CUDA_LIBS="-L$sf_cuda_dir/lib64 -lcudart"])
      # Machine code for Volta, Ampere and Hopper, and PTX for newer GPUs, unless NVCCFLAGS says otherwise
      # (nvcc's own default is one old architecture, JIT-compiled at every first load).
      AS_IF([test "x${NVCCFLAGS+set}" != xset], [
        NVCCFLAGS=
        for sf_arch in 70 80 90; do
          AS_IF([$NVCC --list-gpu-arch 2>/dev/null | grep -q "compute_$sf_arch\$"],
                [NVCCFLAGS="$NVCCFLAGS -gencode arch=compute_$sf_arch,code=sm_$sf_arch"; sf_last_arch=$sf_arch])
        done
        AS_IF([test -n "$sf_last_arch"], [NVCCFLAGS="$NVCCFLAGS -gencode arch=compute_$sf_last_arch,code=compute_$sf_last_arch"])
      ])
    ])
    AS_IF([test "x$with_cuda" != xcheck && test "x$sf_have_cuda" != xyes],
      [AC_MSG_ERROR([--with-cuda given but StarPU has no CUDA ($sf_starpu_cuda) or nvcc is missing])])
  ])
  AC_SUBST([CUDA_CFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_ARG_VAR([NVCCFLAGS], [flags for nvcc (default: -gencode for sm_70, sm_80 and sm_90 where nvcc knows them)])
  AS_IF([test "x$sf_have_cuda" = xyes], [AC_DEFINE([STARFOLD_HAVE_CUDA], [1], [Build CUDA kernels])])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$sf_have_cuda" = xyes])
])
