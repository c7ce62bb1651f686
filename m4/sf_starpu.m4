dnl SPDX-License-Identifier: BSD-3-Clause
dnl Copyright (c) 2026 The starfold authors
# SF_CHECK_STARPU: StarPU through pkg-config, newest first (starpu-1.4, then starpu-1.3).
AC_DEFUN([SF_CHECK_STARPU], [
  PKG_PROG_PKG_CONFIG
  AC_ARG_WITH([starpu],
    [AS_HELP_STRING([--with-starpu=PC], [pkg-config name of StarPU (default: starpu-1.4, else starpu-1.3)])],
    [STARPU_PC=$withval], [STARPU_PC=])
  AS_IF([test -z "$STARPU_PC"], [
    PKG_CHECK_EXISTS([starpu-1.4], [STARPU_PC=starpu-1.4],
      [PKG_CHECK_EXISTS([starpu-1.3], [STARPU_PC=starpu-1.3],
        [AC_MSG_ERROR([StarPU not found by pkg-config (starpu-1.4 or starpu-1.3). On Debian: apt-get install libstarpu-dev])])])
  ])
  PKG_CHECK_MODULES([STARPU], [$STARPU_PC])
  # StarPU's headers are not clean under our warnings (-Wstrict-prototypes): include them as system headers.
  STARPU_CFLAGS=`echo " $STARPU_CFLAGS" | sed 's/ -I/ -isystem /g'`
  AC_SUBST([STARPU_PC])
  sf_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $STARPU_CFLAGS"
  AC_CHECK_HEADER([starpu.h], [], [AC_MSG_ERROR([starpu.h not usable with $STARPU_CFLAGS])])
  CPPFLAGS=$sf_save_CPPFLAGS
])
