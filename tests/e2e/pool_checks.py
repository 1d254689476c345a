"""Checks of a master's pool shared by the crash and HA tests: no two live
buffers overlap, and the allocated bytes are exactly the live buffers'
(nothing leaked). `c` is anything with admin(path) -> (status, body) on the
master's admin port."""
import json
import re
import urllib.parse

from harness import check

ALIGN = 64  # the master's allocation alignment


def metric(c, name):
    status, body = c.admin("/metrics")
    m = re.search(rf"^{name} (\S+)", body.decode(), re.M) if status == 200 else None
    return int(float(m.group(1))) if m else None


def layout(c):
    """{key: [(segment, offset, size)]} of every live object."""
    status, body = c.admin("/get_all_keys")
    out = {}
    for key in body.decode().split():
        status, desc = c.admin("/query_key?key=" + urllib.parse.quote(key, safe=""))
        if status != 200:
            continue
        doc = json.loads(desc)
        out[key] = [(b["segment"], b["offset"], b["size"]) for r in doc["replicas"] for b in r]
    return out


def check_allocations(c, what):
    objects = layout(c)
    by_segment = {}
    for key, bufs in objects.items():
        for seg, off, size in bufs:
            by_segment.setdefault(seg, []).append((off, off + size, key))
    overlaps = []
    for seg, ranges in by_segment.items():
        ranges.sort()
        for (a0, a1, ka), (b0, b1, kb) in zip(ranges, ranges[1:]):
            if b0 < a1:
                overlaps.append(f"{seg}: {ka} [{a0},{a1}) and {kb} [{b0},{b1})")
    check(not overlaps, f"{what}: no two live buffers overlap ({len(objects)} objects) "
          + "; ".join(overlaps[:3]))
    used = sum((size + ALIGN - 1) // ALIGN * ALIGN for bufs in objects.values()
               for _, _, size in bufs)
    allocated = metric(c, "master_allocated_bytes")
    check(allocated == used, f"{what}: allocated bytes {allocated} equal the live buffers' "
          f"{used} (nothing leaked by revoked in-flight puts)")
    return objects
