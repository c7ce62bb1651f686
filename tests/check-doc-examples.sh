#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# make check: every C example of the manual (doc/*.md) compiles against the headers of this tree with
# -std=c11 -Wall -Werror, and every whole program also links against libstarfold when told how. A page
# whose example drifted from the API fails here. The convention, also stated in doc/design.md:
#
#  - A fenced block opened by a line that is exactly ```c, at the start of the line, is a C example.
#    Blocks in other languages (sh, dot, text, or none) are not checked. A ```c fence that is indented
#    is refused, so that no C block escapes the check.
#  - A block with `int main` is a whole program: compiled as it is, then linked with SF_DOC_LDADD
#    when that is set.
#  - Any other block is a fragment: declarations and statements, compiled as the body of a function
#    in a file that includes <stddef.h>, <stdint.h>, <stdio.h>, <stdlib.h>, <string.h> and
#    <starfold.h>. Its own #include lines are moved above the function. Names the fragment uses
#    and the text around it defines are given on the line before the block (blank lines between are
#    allowed), in an HTML comment that neither GitHub nor Doxygen shows:
#        <!-- doc-example: given starfold_context_t ctx; starfold_graph_t graph -->
#    Each declaration becomes a parameter of the function, so the fragment sees it initialised.
#  - A block that includes <starfold/mpi.h> or <mpi.h> is compiled only where <mpi.h> is found
#    (with SF_DOC_MPI_CPPFLAGS), and skipped with a note otherwise (a build without MPI).
#
# Errors point at the page: the generated files carry #line directives, so the compiler names
# doc/PAGE.md and the line of the block.
#
# Environment:
#   SF_TOP_SRCDIR        the source tree (default .)
#   CC                   the C compiler (default cc)
#   SF_DOC_CPPFLAGS      more preprocessor flags, after -I$SF_TOP_SRCDIR/include
#   SF_DOC_CFLAGS        more compiler flags, after -std=c11 -Wall -Werror
#   SF_DOC_MPI_CPPFLAGS  MPI's include flags, for the blocks that include <starfold/mpi.h>
#   SF_DOC_LINK          the link command (default $CC), e.g. "libtool --mode=link cc" to link a .la
#   SF_DOC_LDADD         what whole programs link against (build/libstarfold.la with libtool, or
#                        -Lbuild/.libs -lstarfold); empty: whole programs are compiled, not linked
#   SF_DOC_MPI_LDADD     added for whole programs that include <starfold/mpi.h>; empty: not linked
# Arguments: the pages to check (default: every doc/*.md of SF_TOP_SRCDIR).
# Exit status: 0 every block passed, 1 a block failed (or no C block was found), 77 no C compiler.
src="${SF_TOP_SRCDIR:-.}"
cc="${CC:-cc}"
link="${SF_DOC_LINK:-$cc}"
command -v "${cc%% *}" >/dev/null 2>&1 || { echo "check-doc-examples: no C compiler ($cc): skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if [ $# -eq 0 ]; then
    set -- "$src"/doc/*.md
fi

# Extract every C block into $tmp/bN.c (a fragment already wrapped) and list it in $tmp/list as
# "N KIND MPI PAGE:LINE"; a malformed page is reported in $tmp/errors.
n=0
for page in "$@"; do
    [ -f "$page" ] || { echo "check-doc-examples: $page: no such page" >> "$tmp/errors"; continue; }
    name=${page#"$src"/}
    n=$(awk -v name="$name" -v dir="$tmp" -v n="$n" '
        function flush(   i, prog, mpi, f, params, parts, k, p, line) {
            prog = 0; mpi = 0
            for (i = 1; i <= nl; i++) {
                line = blk[i]
                if (line ~ /(^|[^A-Za-z0-9_])int[ \t]+main[ \t]*\(/) prog = 1
                if (line ~ /^[ \t]*#[ \t]*include[ \t]*<(starfold\/)?mpi\.h>/) mpi = 1
            }
            n++
            f = dir "/b" n ".c"
            if (prog) {
                printf "#line %d \"%s\"\n", start + 1, name > f
                for (i = 1; i <= nl; i++) print blk[i] > f
            } else {
                params = ""
                k = split(given, parts, ";")
                for (i = 1; i <= k; i++) {
                    p = parts[i]; sub(/^[ \t]+/, "", p); sub(/[ \t]+$/, "", p)
                    if (p != "") params = params (params == "" ? "" : ", ") p
                }
                if (params == "") params = "void"
                print "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>" > f
                print "#include <string.h>\n#include <starfold.h>" > f
                for (i = 1; i <= nl; i++)
                    if (blk[i] ~ /^[ \t]*#[ \t]*include/) printf "#line %d \"%s\"\n%s\n", start + i, name, blk[i] > f
                printf "int doc_fragment(%s);\nint doc_fragment(%s)\n{\n", params, params > f
                printf "#line %d \"%s\"\n", start + 1, name > f
                for (i = 1; i <= nl; i++) print (blk[i] ~ /^[ \t]*#[ \t]*include/ ? "" : blk[i]) > f
                print "    return 0;\n}" > f
            }
            close(f)
            printf "%d %s %d %s:%d\n", n, prog ? "program" : "fragment", mpi, name, start >> (dir "/list")
        }
        function bad(msg) { printf "%s:%d: %s\n", name, NR, msg >> (dir "/errors") }
        infence {
            if ($0 ~ /^[ \t]*```+[ \t]*$/) {
                if (isc) flush()
                infence = 0; isc = 0
            } else if (isc) blk[++nl] = $0
            next
        }
        /^[ \t]*```/ {
            lang = $0; sub(/^[ \t]*```+[ \t]*/, "", lang); sub(/[ \t].*$/, "", lang)
            infence = 1; isc = 0
            if (lang == "c" || lang == "C") {
                if ($0 ~ /^[ \t]/) bad("an indented ```c block: start C fences at the beginning of the line")
                else { isc = 1; nl = 0; start = NR; given = pending }
            } else if (pending_line) bad("a doc-example comment (line " pending_line ") not followed by a C block")
            pending = ""; pending_line = 0
            next
        }
        /^<!-- doc-example:/ {
            if ($0 ~ /^<!-- doc-example: given [^>]*-->[ \t]*$/) {
                pending = $0; sub(/^<!-- doc-example: given[ \t]*/, "", pending); sub(/[ \t]*-->[ \t]*$/, "", pending)
                pending_line = NR
            } else bad("unknown doc-example comment (the one form: <!-- doc-example: given DECLARATIONS -->)")
            next
        }
        /[^ \t]/ {
            if (pending_line) bad("a doc-example comment (line " pending_line ") not followed by a C block")
            pending = ""; pending_line = 0
        }
        END {
            if (infence) { NR = start; bad("a fenced block that is never closed") }
            print n
        }' "$page") || { echo "check-doc-examples: awk failed on $page" >> "$tmp/errors"; n=0; }
done

status=0
if [ -s "$tmp/errors" ]; then
    cat "$tmp/errors"
    status=1
fi
if [ ! -s "$tmp/list" ]; then
    echo "check-doc-examples: no C example found in $* (is SF_TOP_SRCDIR right?)"
    exit 1
fi

# <mpi.h> reachable? Then the MPI blocks are compiled, else skipped.
have_mpi=0
if grep -q ' 1 ' "$tmp/list"; then
    printf '#include <mpi.h>\nint doc_mpi_probe;\n' > "$tmp/probe.c"
    # shellcheck disable=SC2086 # the flags are lists of words
    $cc $SF_DOC_MPI_CPPFLAGS -c "$tmp/probe.c" -o "$tmp/probe.o" >/dev/null 2>&1 && have_mpi=1
fi

programs=0 fragments=0 linked=0 skipped=0 failed=0
while read -r i kind mpi where; do
    if [ "$mpi" = 1 ] && [ $have_mpi = 0 ]; then
        echo "skip $where ($kind: <mpi.h> not found; SF_DOC_MPI_CPPFLAGS gives its directory)"
        skipped=$((skipped + 1))
        continue
    fi
    flags=""
    [ "$mpi" = 1 ] && flags="$SF_DOC_MPI_CPPFLAGS"
    # shellcheck disable=SC2086
    if ! $cc -std=c11 -Wall -Werror -I"$src/include" $SF_DOC_CPPFLAGS $flags $SF_DOC_CFLAGS \
             -c "$tmp/b$i.c" -o "$tmp/b$i.o" > "$tmp/log" 2>&1; then
        echo "FAIL $where ($kind): does not compile"
        sed 's/^/    /' "$tmp/log"
        failed=$((failed + 1))
        continue
    fi
    what="compiles"
    if [ "$kind" = program ]; then
        programs=$((programs + 1))
        libs="$SF_DOC_LDADD"
        if [ "$mpi" = 1 ]; then
            [ -n "$SF_DOC_MPI_LDADD" ] && libs="$libs $SF_DOC_MPI_LDADD" || libs=""
        fi
        if [ -n "$libs" ]; then
            # shellcheck disable=SC2086
            if ! $link -o "$tmp/b$i" "$tmp/b$i.o" $libs > "$tmp/log" 2>&1; then
                echo "FAIL $where (program): does not link"
                sed 's/^/    /' "$tmp/log"
                failed=$((failed + 1))
                continue
            fi
            what="compiles and links"
            linked=$((linked + 1))
        fi
    else
        fragments=$((fragments + 1))
    fi
    echo "ok   $where ($kind $what)"
done < "$tmp/list"

[ $failed -eq 0 ] || status=1
echo "check-doc-examples: $programs programs ($linked linked), $fragments fragments, $skipped skipped, $failed failed"
[ -n "$SF_DOC_LDADD" ] || echo "check-doc-examples: SF_DOC_LDADD is empty: the programs were compiled, not linked"
exit $status
