dnl SPDX-License-Identifier: BSD-3-Clause
dnl Copyright (c) 2026 The starfold authors
# SF_CHECK_OPENCL: OpenCL kernels are built when StarPU was built with OpenCL.
AC_DEFUN([SF_CHECK_OPENCL], [
  AC_ARG_ENABLE([opencl],
    [AS_HELP_STRING([--disable-opencl], [do not build the OpenCL kernels even if StarPU has OpenCL])],
    [], [enable_opencl=auto])
  sf_have_opencl=no
  AS_IF([test "x$enable_opencl" != xno], [
    sf_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $STARPU_CFLAGS"
    AC_MSG_CHECKING([whether StarPU was built with OpenCL])
    AC_PREPROC_IFELSE([AC_LANG_SOURCE([[#include <starpu_config.h>
#ifndef STARPU_USE_OPENCL
#error no OpenCL
#endif]])], [sf_starpu_opencl=yes], [sf_starpu_opencl=no])
    AC_MSG_RESULT([$sf_starpu_opencl])
    CPPFLAGS=$sf_save_CPPFLAGS
    AS_IF([test "x$sf_starpu_opencl" = xyes], [
      PKG_CHECK_MODULES([OPENCL], [OpenCL], [sf_have_opencl=yes],
        [AC_CHECK_LIB([OpenCL], [clGetPlatformIDs], [OPENCL_LIBS=-lOpenCL; sf_have_opencl=yes], [sf_have_opencl=no])])
    ])
    AS_IF([test "x$enable_opencl" = xyes && test "x$sf_have_opencl" != xyes],
      [AC_MSG_ERROR([--enable-opencl given but StarPU has no OpenCL or libOpenCL is missing])])
  ])
  AS_IF([test "x$sf_have_opencl" = xyes], [AC_DEFINE([STARFOLD_HAVE_OPENCL], [1], [Build OpenCL kernels])])
  AM_CONDITIONAL([HAVE_OPENCL], [test "x$sf_have_opencl" = xyes])
])
