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
      CUDA_CFLAGS="-I$sf_cuda_dir/include"
      CUDA_LIBS="-L$sf_cuda_dir/lib64 -lcudart"
    ])
    AS_IF([test "x$with_cuda" != xcheck && test "x$sf_have_cuda" != xyes],
      [AC_MSG_ERROR([--with-cuda given but StarPU has no CUDA ($sf_starpu_cuda) or nvcc is missing])])
  ])
  AC_SUBST([CUDA_CFLAGS])
  AC_SUBST([CUDA_LIBS])
  AS_IF([test "x$sf_have_cuda" = xyes], [AC_DEFINE([STARFOLD_HAVE_CUDA], [1], [Build CUDA kernels])])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$sf_have_cuda" = xyes])
])
