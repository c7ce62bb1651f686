dnl SPDX-License-Identifier: BSD-3-Clause
dnl Copyright (c) 2026 The starfold authors
# SF_WARNINGS: strict warnings; --enable-werror (CI) turns them into errors.
AC_DEFUN([SF_WARNINGS], [
  AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors])],
    [sf_werror=$enableval], [sf_werror=no])
  # Each warning flag the compiler accepts (autoconf-archive's AX_CHECK_COMPILE_FLAG), so another
  # compiler or version builds without an unknown-option error.
  SF_CFLAGS="-std=c11"
  for sf_flag in -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
                 -Wno-unused-parameter -Wno-missing-field-initializers; do
    AX_CHECK_COMPILE_FLAG([$sf_flag], [SF_CFLAGS="$SF_CFLAGS $sf_flag"], [], [-Werror])
  done
  AS_IF([test "x$sf_werror" = xyes], [SF_CFLAGS="$SF_CFLAGS -Werror"])
  AC_SUBST([SF_CFLAGS])
])

# SF_SANITIZERS: --enable-sanitizers builds everything with ASan+UBSan, --enable-sanitizers=thread with TSan.
AC_DEFUN([SF_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers@<:@=address|thread@:>@], [AddressSanitizer+UndefinedBehaviorSanitizer (default) or ThreadSanitizer])],
    [], [enable_sanitizers=no])
  AS_CASE([$enable_sanitizers],
    [no], [sf_sanitizers=no; SANITIZER_FLAGS=],
    [yes|address], [sf_sanitizers="address,undefined"; SANITIZER_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"],
    [thread], [sf_sanitizers=thread; SANITIZER_FLAGS="-fsanitize=thread -fno-omit-frame-pointer"],
    [AC_MSG_ERROR([unknown --enable-sanitizers value: $enable_sanitizers])])
  AC_SUBST([SANITIZER_FLAGS])
])

# SF_DOXYGEN: `make doc` (HTML) and the API's section-3 man pages, built by `make` and installed, when
# doxygen is installed; without it both are skipped and everything else builds. sf_man3 is the summary.
AC_DEFUN([SF_DOXYGEN], [
  AC_PATH_PROG([DOXYGEN], [doxygen])
  AS_IF([test -n "$DOXYGEN"], [sf_have_doxygen=yes], [sf_have_doxygen=no])
  AS_IF([test $sf_have_doxygen = yes], [sf_man3="section 3, built and installed"],
        [sf_man3="skipped (no doxygen: apt-get install doxygen)"
         AC_MSG_WARN([doxygen not found: the API's man pages (section 3) will not be built or installed])])
  AM_CONDITIONAL([HAVE_DOXYGEN], [test "x$sf_have_doxygen" = xyes])
])
