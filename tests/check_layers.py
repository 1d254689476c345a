#!/usr/bin/env python3
"""Fails when a module includes a header of a module it may not depend on.

The allowed order has one source: the module map at the top of HACKING.md
(a table of layer, module, job, may include). This check reads that table,
so the document and the check cannot drift. It fails, naming the file, the
line and the include, when
- a folder under src/ is not in the map, or the map names a folder that
  does not exist;
- the map lets a module include one of the same or a higher layer;
- a file in src/<module>/ includes "<other>/..." for a module <other> that
  is neither <module> itself nor listed in its "may include" column. A unit
  test (<thing>_test.cc) may also include any module of a lower layer, to
  run its module against an in-process peer (the client against the master
  core); the library code it tests may not.
Usage: check_layers.py [SOURCE_ROOT]  (default: $MOONCAKE_SRC or this repo)
"""
import os
import re
import sys

ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`(\w+)`\s*\|[^|]*\|([^|]*)\|\s*$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"(\w+)/')


def read_map(hacking):
    """{module: (layer, set of allowed modules)} from the table in HACKING.md."""
    rows = {}
    with open(hacking) as f:
        for line in f:
            m = ROW.match(line)
            if not m:
                continue
            layer, module, deps = int(m.group(1)), m.group(2), m.group(3)
            rows[module] = (layer, set(re.findall(r"`(\w+)`", deps)),
                            "everything below" in deps)
    return rows


def main():
    root = (sys.argv[1] if len(sys.argv) > 1 else
            os.environ.get("MOONCAKE_SRC", os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    rows = read_map(os.path.join(root, "HACKING.md"))
    errors = []
    if not rows:
        errors.append("HACKING.md: no module map found (| layer | `module` | job | may include |)")
    src = os.path.join(root, "src")
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for d in folders:
        if d not in rows:
            errors.append(f"src/{d}/: not in the module map of HACKING.md")
    for module in rows:
        if module not in folders:
            errors.append(f"HACKING.md: module `{module}` has no folder src/{module}/")
    allowed = {}
    below_layer = {}
    for module, (layer, deps, below) in rows.items():
        for dep in sorted(deps):
            if dep not in rows:
                errors.append(f"HACKING.md: `{module}` may include unknown module `{dep}`")
            elif rows[dep][0] >= layer:
                errors.append(f"HACKING.md: `{module}` (layer {layer}) may include `{dep}` "
                              f"(layer {rows[dep][0]}): dependencies must point down")
        below_layer[module] = {m for m, r in rows.items() if r[0] < layer}
        allowed[module] = below_layer[module] if below else deps
    checked = 0
    for module in folders:
        if module not in rows:
            continue
        folder = os.path.join(src, module)
        for name in sorted(os.listdir(folder)):
            if not name.endswith((".h", ".cc")):
                continue
            path = os.path.join(folder, name)
            may = allowed[module] | (below_layer[module] if name.endswith("_test.cc") else set())
            with open(path, errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m or m.group(1) not in rows:
                        continue
                    checked += 1
                    dep = m.group(1)
                    if dep != module and dep not in may:
                        errors.append(
                            f"src/{module}/{name}:{lineno}: includes \"{dep}/...\" but `{module}` "
                            f"(layer {rows[module][0]}) may include only "
                            f"{', '.join(sorted(may)) or 'nothing'} "
                            f"(HACKING.md module map): {line.strip()}")
    for e in errors:
        print(e)
    print(f"{len(rows)} modules, {checked} module includes checked, {len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
