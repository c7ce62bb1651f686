dnl SPDX-License-Identifier: BSD-3-Clause
dnl Copyright (c) 2026 The starfold authors
# SF_CHECK_GRAPHVIZ: cgraph reads and writes DOT, gvc lays out and renders SVG/PNG.
AC_DEFUN([SF_CHECK_GRAPHVIZ], [
  PKG_CHECK_MODULES([GRAPHVIZ], [libcgraph libgvc], [],
    [AC_MSG_ERROR([Graphviz libraries (libcgraph, libgvc) not found. On Debian: apt-get install libgraphviz-dev])])
])
