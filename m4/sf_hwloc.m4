dnl SPDX-License-Identifier: BSD-3-Clause
dnl Copyright (c) 2026 The starfold authors
# SF_CHECK_HWLOC: hwloc 2.x, for detecting the live machine's devices and links.
AC_DEFUN([SF_CHECK_HWLOC], [
  PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [],
    [AC_MSG_ERROR([hwloc >= 2.0 not found. On Debian: apt-get install libhwloc-dev])])
])
