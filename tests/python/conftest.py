"""Fixtures of the mooncake.store suite: a real local cluster (master with
its metadata server, one store) on free loopback ports, started once per
session and stopped by pid (tests/e2e/harness.py), and engine-side stores.

Run by `meson test -C build --suite python` (which sets PYTHONPATH to the
build's src/python and MOONCAKE_BIN), or by hand:
  PYTHONPATH=build/src/python MOONCAKE_BIN=build/src/cli/mooncake \
    python3 -m pytest tests/python
"""
import ctypes
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))

from cluster import Cluster  # noqa: E402
from harness import tempdir  # noqa: E402

from mooncake.store import MooncakeDistributedStore, ReplicateConfig  # noqa: E402,F401

# A client silent this long is dead (master --client-ttl): short, so the
# kill -9 tests see a killed engine's segment leave within seconds.
CLIENT_TTL_S = 2


@pytest.fixture(scope="session")
def cluster():
    c = Cluster(stores=1, segment="128mb", logdir=tempdir("mooncake-pytest-"),
                extra_master=["--client-ttl", f"{CLIENT_TTL_S}s"])
    yield c
    c.stop()


def setup_args(cluster, segment=0):
    """The seven positional setup() arguments, as the engines pass them."""
    return ("127.0.0.1", f"http://127.0.0.1:{cluster.meta_port}/metadata", segment,
            16 << 20, "tcp", "", f"127.0.0.1:{cluster.rpc_port}")


@pytest.fixture
def store(cluster):
    """A pure client (global_segment_size 0)."""
    s = MooncakeDistributedStore()
    assert s.setup(*setup_args(cluster)) == 0
    yield s
    s.close()


@pytest.fixture
def engine(cluster):
    """An engine contributing 64 MiB of its own memory."""
    s = MooncakeDistributedStore()
    assert s.setup(*setup_args(cluster, 64 << 20)) == 0
    yield s
    s.close()


class Buf:
    """Caller memory with an address, as engines pass (ptr, size)."""

    def __init__(self, size, fill=None):
        self.raw = (ctypes.c_ubyte * size)()
        self.size = size
        self.ptr = ctypes.addressof(self.raw)
        if fill is not None:
            ctypes.memmove(self.ptr, fill, len(fill))

    def bytes(self, n=None):
        return ctypes.string_at(self.ptr, self.size if n is None else n)


def pattern(key, size):
    """Bytes that depend on the key, so a wrong object is noticed."""
    seed = (key.encode() * (64 // max(1, len(key)) + 1))[:64]
    return (seed * (size // 64 + 1))[:size]
