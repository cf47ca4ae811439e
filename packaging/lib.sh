# SPDX-License-Identifier: MIT
# Shared by packaging/build-deb.sh and build-rpm.sh (sourced).

# project_version TOP: the VERSION of project() in TOP/CMakeLists.txt.
project_version() {
        local v
        v=$(sed -nE 's/^project\([^)]*VERSION ([0-9][0-9.]*).*/\1/p' "$1/CMakeLists.txt" | head -n1)
        [[ -n $v ]] || { echo "no project(... VERSION x.y.z) in $1/CMakeLists.txt" >&2; return 1; }
        echo "$v"
}

# clean_copy TOP DEST: the source tree without what a build made. In a git checkout: every file git
# knows of (tracked, or new and not ignored), as in the working tree; a tracked file deleted there is
# left out. Elsewhere: everything but .git, build/ and build-*/.
clean_copy() {
        local top=$1 dest=$2
        mkdir -p "$dest"
        if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
                (cd "$top" && git ls-files -z --cached --others --exclude-standard |
                        while IFS= read -r -d '' f; do
                                [[ -e $f || -L $f ]] && printf '%s\0' "$f"
                        done | tar --null -T - -cf -) | tar -C "$dest" -xf -
        else
                tar -C "$top" --exclude=./.git --exclude=./build --exclude='./build-*' -cf - . |
                        tar -C "$dest" -xf -
        fi
}
