#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# doc/tidy-man3.sh DIR: makes Doxygen's section-3 man pages in DIR fit to install into a shared
# man3 directory, and prints the names of the pages to install, one a line (Makefile.am keeps the list
# in doc/man.stamp; install-data-local installs and uninstall-local removes exactly these).
#
#  - MAN_LINKS writes a one-line page (".so man3/PAGE.3") for every documented name, struct fields
#    included: count.3, path.3, a.3, from.3, ... (the last struct to have the field wins), and StarPU's
#    own names (starpu_data_handle_t). Only the links in starfold's namespace are kept: starfold_*,
#    STARFOLD_*.
#  - A header's page is named after its file: graph.h.3, common.h.3. They become starfold_graph.h.3,
#    starfold_common.h.3 (starfold/graph.h as Doxygen writes '/' in a page name), and the links to
#    them follow; starfold.h.3 keeps its name.
set -e
dir=${1:?usage: tidy-man3.sh DIR}
cd "$dir"
for f in *.3; do
    [ -f "$f" ] || continue
    case $f in
        starfold_*|STARFOLD_*|starfold.h.3) ;;
        *.h.3) mv "$f" "starfold_$f" ;;
        *) # a link outside starfold's namespace goes; a page of its own (with a .TH line) stays
           if [ "$(sed -n '$=' "$f")" = 1 ] && grep -q '^\.so ' "$f"; then rm -f "$f"; fi ;;
    esac
done
for f in *.3; do
    target=$(sed -n 's|^\.so man3/\([^/]*\.h\.3\)$|\1|p' "$f")
    case $target in
        ''|starfold.h.3|starfold_*) ;;
        *) echo ".so man3/starfold_$target" > "$f.tmp" && mv "$f.tmp" "$f" ;;
    esac
done
# Every link must lead to a page that is installed with it.
for f in *.3; do
    target=$(sed -n 's|^\.so man3/||p' "$f")
    if [ -n "$target" ] && [ ! -f "$target" ]; then
        echo "tidy-man3.sh: $f sources man3/$target, which is not there" >&2
        exit 1
    fi
done
ls *.3
