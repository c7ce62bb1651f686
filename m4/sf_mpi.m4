dnl SPDX-License-Identifier: BSD-3-Clause
dnl Copyright (c) 2026 The starfold authors
# SF_CHECK_MPI: StarPU-MPI and an MPI library, for process groups across ranks (src/mpi/group.c,
# <starfold/mpi.h>), built into libstarfold.
#
#   --with-mpi=yes   required: configure fails when either is missing
#   --with-mpi=no    not built
#   (default)        built when both are found
#
# StarPU-MPI's pkg-config file (starpumpi-1.3 / -1.4) does not give mpi.h: the MPI flags come from
# Open MPI's own pkg-config file (ompi-c), else from `mpicc --showme` (Open MPI), else from MPICH's
# pkg-config file (mpich).
AC_DEFUN([SF_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi], [build process groups over StarPU-MPI (default: when StarPU-MPI and MPI are found)])],
    [sf_want_mpi=$withval], [sf_want_mpi=check])
  sf_have_mpi=no
  AS_IF([test "x$sf_want_mpi" != xno], [
    sf_starpumpi_pc=`echo "$STARPU_PC" | sed 's/^starpu-/starpumpi-/'`
    PKG_CHECK_MODULES([STARPUMPI], [$sf_starpumpi_pc], [sf_starpumpi=yes], [sf_starpumpi=no])
    sf_mpi_found=no
    PKG_CHECK_MODULES([MPI], [ompi-c], [sf_mpi_found=yes], [
      AC_PATH_PROG([MPICC], [mpicc])
      AS_IF([test -n "$MPICC"], [
        MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null`
        MPI_LIBS=`$MPICC --showme:link 2>/dev/null`
        AS_IF([test -n "$MPI_LIBS"], [sf_mpi_found=yes])])
      AS_IF([test $sf_mpi_found = no],
        [PKG_CHECK_MODULES([MPI], [mpich], [sf_mpi_found=yes], [sf_mpi_found=no])])
    ])
    AS_IF([test $sf_starpumpi = yes && test $sf_mpi_found = yes], [
      sf_save_CPPFLAGS=$CPPFLAGS
      CPPFLAGS="$CPPFLAGS $MPI_CFLAGS $STARPU_CFLAGS"
      AC_CHECK_HEADER([mpi.h], [AC_CHECK_HEADER([starpu_mpi.h], [sf_have_mpi=yes], [], [#include <starpu.h>])])
      CPPFLAGS=$sf_save_CPPFLAGS
    ])
    AS_IF([test "x$sf_want_mpi" = xyes && test $sf_have_mpi = no],
      [AC_MSG_ERROR([--with-mpi: StarPU-MPI ($sf_starpumpi_pc) and an MPI library with mpi.h are needed. On Debian: apt-get install libstarpu-dev openmpi-bin libopenmpi-dev])])
  ])
  AS_IF([test $sf_have_mpi = yes], [
    AC_DEFINE([STARFOLD_HAVE_MPI], [1], [Define to 1 when libstarfold_mpi is built])
    # As for StarPU: system headers, not warned about.
    STARPUMPI_CFLAGS=`echo " $STARPUMPI_CFLAGS" | sed 's/ -I/ -isystem /g'`
    MPI_CFLAGS=`echo " $MPI_CFLAGS" | sed 's/ -I/ -isystem /g'`
    AC_PATH_PROG([MPIRUN], [mpirun])
    AC_SUBST([STARPUMPI_PC], [$sf_starpumpi_pc])
  ])
  # starfold.pc: what a program using <starfold/mpi.h> needs on top (empty without MPI).
  AS_IF([test $sf_have_mpi = yes], [
    AC_SUBST([PC_REQUIRES_MPI], [$sf_starpumpi_pc])
    AC_SUBST([PC_CFLAGS_MPI], [`echo " $MPI_CFLAGS" | sed 's/ -isystem / -I/g'`])
    AC_SUBST([PC_LIBS_MPI], [$MPI_LIBS])
  ], [
    AC_SUBST([PC_REQUIRES_MPI], [])
    AC_SUBST([PC_CFLAGS_MPI], [])
    AC_SUBST([PC_LIBS_MPI], [])
  ])
  AM_CONDITIONAL([HAVE_MPI], [test $sf_have_mpi = yes])
])
