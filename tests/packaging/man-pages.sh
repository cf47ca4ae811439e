#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: the man pages as built (docs/man, from docs/*.[1-8].md) are what the packages can ship: each
# formats without a groff warning at 80 and at 120 columns, run as lintian runs it (man --warnings), has
# a NAME line that lexgrog reads (the whatis entry), every program cmake --install installs has its page,
# and every elastic-pool page one page names, as NAME(N), is built.
. "$(dirname "$0")/../integration/lib.sh"
need_cmd man lexgrog cmake
man_dir=$EP_BUILD_DIR/docs/man
compgen -G "$man_dir/*.[1-8]" >/dev/null || skip "no man pages in $man_dir (configured with -DEP_BUILD_MAN=OFF?)"

for page in "$man_dir"/*.[1-8]; do
        name=${page##*/}
        whatis=$(lexgrog "$page" 2>&1) || fail "$name: lexgrog cannot read its NAME section: $whatis"
        for width in 80 120; do
                warnings=$(cd "$man_dir" && env -i PATH="$PATH" LC_ALL=C.UTF-8 MANROFFSEQ= MANWIDTH=$width \
                        man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
                [[ -z $warnings ]] || fail "$name at $width columns: $warnings"
        done
done
note "$(compgen -G "$man_dir/*.[1-8]" | wc -l) pages format cleanly at 80 and 120 columns"

# every program installed has its page
DESTDIR=$EP_TMP/root cmake --install "$EP_BUILD_DIR" >"$EP_TMP/install.log" 2>&1 ||
        fail "cmake --install failed: $(tail -n 5 "$EP_TMP/install.log")"
for program in "$EP_TMP"/root/*/bin/* "$EP_TMP"/root/*/*/bin/*; do
        [[ -e $program ]] || continue
        p=${program##*/}
        compgen -G "$EP_TMP/root/*/share/man/man[18]/$p.[18]" >/dev/null ||
                compgen -G "$EP_TMP/root/*/*/share/man/man[18]/$p.[18]" >/dev/null ||
                fail "$p is installed without a man page (docs/$p.1.md or .8.md)"
done

# every elastic-pool page named in a page exists
for page in "$man_dir"/*.[1-8]; do
        for ref in $(grep -ohE 'elastic-pool[a-z.-]*\\?\(([1-8])\\?\)' "$page" | tr -d '\\' | sort -u); do
                target=${ref%(*}.${ref: -2:1}
                [[ -f $man_dir/$target ]] || fail "${page##*/} names $ref, which is not built (docs/$target.md)"
        done
done
echo "PASS: man-pages"
