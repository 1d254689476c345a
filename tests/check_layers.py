#!/usr/bin/env python3
"""Fails when a module includes a header of a module it may not depend on.

The allowed order has one source: the module map at the top of HACKING.md
(a table of layer, module, job, may include). This check reads that table,
so the document and the check cannot drift. A module is a folder under src/
(`client` is src/client/) or a room inside one (`transfer/rdma` is
src/transfer/rdma/, its own library); a file belongs to the deepest module
folder holding it, and an include "a/b/x.h" names the deepest module that
is a prefix of "a/b". A row whose job starts with "planned" reserves a room
that has no folder yet. The check fails, naming the file, the line and the
include, when
- a folder directly under src/ is not in the map, or the map names a folder
  that does not exist (or one marked planned that does);
- the map lets a module include one of the same or a higher layer;
- a file of a module includes a header of another module that is not
  listed in its "may include" column. A unit test (<thing>_test.cc, or a header only
  tests include, <thing>_testing.h) may also include any module of a lower
  layer, to run its module against an in-process peer (the client against
  the master core); the library code it tests may not.
Usage: check_layers.py [SOURCE_ROOT]  (default: $MOONCAKE_SRC or this repo)
"""
import os
import re
import sys

ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`([\w/]+)`\s*\|([^|]*)\|([^|]*)\|\s*$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([\w/]+)/[^/"]+"')


def read_map(hacking):
    """{module: (layer, set of allowed modules, everything below, planned)}."""
    rows = {}
    with open(hacking) as f:
        for line in f:
            m = ROW.match(line)
            if not m:
                continue
            layer, module, job, deps = int(m.group(1)), m.group(2), m.group(3), m.group(4)
            rows[module] = (layer, set(re.findall(r"`([\w/]+)`", deps)),
                            "everything below" in deps, job.strip().startswith("planned"))
    return rows


def owner(path, modules):
    """The deepest module that `path` ("transfer/rdma" or "transfer") lies in."""
    parts = path.split("/")
    for n in range(len(parts), 0, -1):
        if "/".join(parts[:n]) in modules:
            return "/".join(parts[:n])
    return None


def check_map(rows, src, errors):
    top = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for d in top:
        if d not in rows:
            errors.append(f"src/{d}/: not in the module map of HACKING.md")
    for module, (layer, deps, below, planned) in rows.items():
        exists = os.path.isdir(os.path.join(src, module))
        if planned and exists:
            errors.append(f"HACKING.md: module `{module}` is marked planned but src/{module}/ "
                          "exists: describe its job instead")
        elif not planned and not exists:
            errors.append(f"HACKING.md: module `{module}` has no folder src/{module}/")
        for dep in sorted(deps):
            if dep not in rows:
                errors.append(f"HACKING.md: `{module}` may include unknown module `{dep}`")
            elif rows[dep][0] >= layer:
                errors.append(f"HACKING.md: `{module}` (layer {layer}) may include `{dep}` "
                              f"(layer {rows[dep][0]}): dependencies must point down")


def check_includes(rows, src, errors):
    allowed, tests = {}, {}
    for module, (layer, deps, below, _) in rows.items():
        lower = {m for m, r in rows.items() if r[0] < layer}
        allowed[module] = lower if below else deps
        tests[module] = allowed[module] | lower
    checked = 0
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        module = owner(os.path.relpath(dirpath, src).replace(os.sep, "/"), rows)
        if module is None:
            continue
        for name in sorted(filenames):
            if not name.endswith((".h", ".cc")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            with open(path, errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    dep = owner(m.group(1), rows) if m else None
                    if dep is None:
                        continue
                    checked += 1
                    ok = (tests if name.endswith(("_test.cc", "_testing.h")) else allowed)[module]
                    if dep != module and dep not in ok:
                        errors.append(
                            f"src/{rel}:{lineno}: includes \"{dep}/...\" but `{module}` "
                            f"(layer {rows[module][0]}) may include only "
                            f"{', '.join(sorted(ok)) or 'nothing'} "
                            f"(HACKING.md module map): {line.strip()}")
    return checked


def main():
    root = (sys.argv[1] if len(sys.argv) > 1 else
            os.environ.get("MOONCAKE_SRC", os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    rows = read_map(os.path.join(root, "HACKING.md"))
    errors = []
    if not rows:
        errors.append("HACKING.md: no module map found (| layer | `module` | job | may include |)")
    src = os.path.join(root, "src")
    check_map(rows, src, errors)
    checked = check_includes(rows, src, errors)
    for e in errors:
        print(e)
    planned = sum(1 for r in rows.values() if r[3])
    print(f"{len(rows)} modules ({planned} planned), {checked} module includes checked, "
          f"{len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
