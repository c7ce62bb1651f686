dnl SPDX-License-Identifier: BSD-3-Clause
dnl Copyright (c) 2026 The starfold authors
# SF_CHECK_CUNIT: CUnit for `make check`. Without it the library still builds and the tests report an error.
AC_DEFUN([SF_CHECK_CUNIT], [
  PKG_CHECK_MODULES([CUNIT], [cunit], [sf_have_cunit=yes],
    [sf_have_cunit=no
     AC_MSG_WARN([CUnit not found: `make check` needs it. On Debian: apt-get install libcunit1-dev])])
  AM_CONDITIONAL([HAVE_CUNIT], [test "x$sf_have_cunit" = xyes])
])
