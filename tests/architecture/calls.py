#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No cycle of calls between files of different families, checked on the built objects: file A calls
file B when A's object references a symbol B's object defines (nm). A family is the files whose names
share the part before the first '-' (h1-connection.c, h1-request.c ... ; forward.c, forward-conn.c ...):
the parts of one protocol side may call each other, two modules may not. Calls up through hooks
(function pointers) are the allowed way back and are invisible here, on purpose.

    calls.py BUILD_DIR            exit 0, or 1 naming each cycle; 77 when nm or the objects are missing
"""
import collections
import glob
import os
import shutil
import subprocess
import sys

TARGETS = ["daemon/CMakeFiles/ep-core.dir", "daemon/CMakeFiles/elastic-pool.dir", "sensor/CMakeFiles/ep-sensor-obj.dir",
           "shared/CMakeFiles/ep-shared.dir", "proto/CMakeFiles/ep-proto.dir"]


def symbols(obj, *flags):
    out = subprocess.run(["nm", *flags, obj], capture_output=True, text=True, check=True).stdout
    return [line.split()[-1] for line in out.splitlines() if line.split()]


def name_of(obj, build):
    rel = os.path.relpath(obj, build)
    target_dir = next(t for t in TARGETS if rel.startswith(t + "/"))
    src = rel[len(target_dir) + 1:].replace(".c.o", ".c")
    return os.path.join(target_dir.split("/")[0], src)


def family(path):
    return os.path.dirname(path) + "/" + os.path.basename(path).split(".")[0].split("-")[0]


def sccs(nodes, edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("EP_BUILD_DIR", "."))
    if not shutil.which("nm"):
        print("SKIP: nm (binutils) is missing")
        return 77
    objs = [o for t in TARGETS for o in glob.glob(os.path.join(build, t, "**", "*.c.o"), recursive=True)]
    if not objs:
        print(f"SKIP: no objects under {build} (build the tree first)")
        return 77
    defined, wanted = {}, {}
    for o in objs:
        n = name_of(o, build)
        for s in symbols(o, "--defined-only", "-g"):
            defined[s] = n
        wanted[n] = symbols(o, "-u")
    edges = collections.defaultdict(set)
    for n, syms in wanted.items():
        for s in syms:
            if s in defined and defined[s] != n:
                edges[n].add(defined[s])
    cycles = [c for c in sccs(wanted.keys(), edges) if len(c) > 1]
    errors = 0
    for c in cycles:
        families = {family(f) for f in c}
        verdict = "within the family " + families.pop() if len(families) == 1 else "ACROSS modules"
        print(f"cycle of {len(c)} files {verdict}: {' '.join(c)}")
        errors += verdict.startswith("ACROSS")
    print(f"calls: {len(wanted)} files, {sum(len(c) for c in cycles)} in cycles, {errors} cycles across modules")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
