#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers of docs/architecture.md, checked: every source file belongs to a layer of the table
between <!-- layers --> and <!-- /layers -->, and includes headers of its own layer or of the layers
the table lets it include, nothing above. A pure layer includes no I/O header and reads no clock.

    layering.py SOURCE_DIR            exit 0, or 1 with one line per violation
"""
import os
import re
import sys

TOP = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
TOP = os.path.abspath(TOP)
ROOTS = ["shared", "proto", "daemon", "sensor", "demo", "ctl"]
# What a pure layer must not include or call: I/O, the loop, the clock. (A pure core is a function of
# its inputs; the shells around it feed it readings and the time.)
IMPURE_HEADERS = {"log.h", "fd-util.h", "channel.h", "config.h", "cgroup.h", "spawn.h", "sockdiag.h"}
IMPURE_SYSTEM = re.compile(r"^(systemd/|unistd\.h$|fcntl\.h$|sys/socket\.h$|sys/stat\.h$|sys/un\.h$|dirent\.h$)")
IMPURE_CALLS = re.compile(r"\b(now_usec|sd_event_now|clock_gettime|gettimeofday|time)\s*\(")
GENERATED = {"elastic_pool.pb-c.h": "proto/elastic_pool.pb-c.h"}


def fail(msg):
    print(msg)
    return 1


def read_layers():
    """[(name, {allowed}, pure, [patterns])] from the table in docs/architecture.md."""
    text = open(os.path.join(TOP, "docs", "architecture.md")).read()
    m = re.search(r"<!-- layers -->(.*?)<!-- /layers -->", text, re.S)
    if not m:
        sys.exit("docs/architecture.md has no <!-- layers --> table")
    layers = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("layer", "") or set(cells[0]) <= set("-: "):
            continue
        name, may, pure, files = cells
        allowed = {a.strip() for a in may.split(",") if a.strip() and a.strip() != "—"}
        patterns = re.findall(r"`([^`]+)`", files)
        layers.append((name, allowed, pure.lower() == "yes", patterns))
    return layers


def layer_of(path, layers):
    """The layer whose pattern matches path most specifically: `dir/` (a folder), `dir/name.*` (a
    file's .c and .h) or `dir/name.h` (one file)."""
    best, best_len = None, -1
    for name, _, _, patterns in layers:
        for p in patterns:
            if p.endswith("/"):
                ok = path.startswith(p)
            elif p.endswith(".*"):
                ok = os.path.splitext(path)[0] == p[:-2]
            else:
                ok = path == p
            if ok and len(p) > best_len:
                best, best_len = name, len(p)
    return best


def sources():
    for root in ROOTS:
        for d, _, files in os.walk(os.path.join(TOP, root)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), TOP)


def main():
    layers = read_layers()
    info = {name: (allowed, pure) for name, allowed, pure, _ in layers}
    for name, allowed, _, _ in layers:
        for a in allowed:
            if a not in info:
                sys.exit(f"docs/architecture.md: layer {name} may include an unknown layer '{a}'")
    files = list(sources())
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    errors = 0
    for f in files:
        layer = layer_of(f, layers)
        if not layer:
            errors += fail(f"{f}: in no layer of docs/architecture.md (add it to the table)")
            continue
        allowed, pure = info[layer]
        text = open(os.path.join(TOP, f), errors="replace").read()
        for n, line in enumerate(text.splitlines(), 1):
            m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
            if not m:
                continue
            kind, name = m.groups()
            if kind == "<":
                if pure and IMPURE_SYSTEM.search(name):
                    errors += fail(f"{f}:{n}: the pure layer {layer} includes <{name}> (I/O)")
                continue
            base = os.path.basename(name)
            if pure and base in IMPURE_HEADERS:
                errors += fail(f"{f}:{n}: the pure layer {layer} includes \"{name}\" (I/O)")
            local = os.path.normpath(os.path.join(os.path.dirname(f), name))
            if local in files:
                target = local
            elif base in GENERATED:
                target = GENERATED[base]
            elif len(by_name.get(base, [])) == 1:
                target = by_name[base][0]
            else:
                errors += fail(f"{f}:{n}: cannot tell which \"{name}\" this is")
                continue
            tl = layer_of(target, layers)
            if tl != layer and tl not in allowed:
                errors += fail(f"{f}:{n}: {layer} includes {target} of the layer {tl}, which it may not "
                               f"(it may include: {', '.join(sorted(allowed)) or 'nothing'})")
        if pure and f.endswith(".c"):
            for n, line in enumerate(text.splitlines(), 1):
                if IMPURE_CALLS.search(line.split("//")[0]) and not line.lstrip().startswith(("*", "/*")):
                    errors += fail(f"{f}:{n}: the pure layer {layer} reads the clock (callers pass now)")
    print(f"layering: {len(files)} files in {len(layers)} layers, {errors} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
