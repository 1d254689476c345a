"""Dummy clients of `mooncake client` (mooncake-client(1)): the reference's
scenarios of test_dummy_client.py / test_multi_dummy_clients.py, written
for this suite, and the failure cases of issue 30: a dummy killed mid-put,
the standalone client killed and restarted under its dummies.

Each test's standalone client runs on a free port (its socket is
@mooncake_client_PORT.sock) against the session's cluster.
"""
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from conftest import CLIENT_TTL_S, Buf, pattern, setup_args
from harness import free_port, start, stop, tempdir, wait_until
from mooncake.store import (MooncakeDistributedStore, MooncakeHostMemAllocator,
                            ReplicateConfig, get_alloc_func_addr, get_free_func_addr)

HERE = os.path.dirname(__file__)
POOL = 64 << 20
LOCAL = 16 << 20


class StandaloneClient:
    """One `mooncake client` process with a segment, stopped by pid."""

    def __init__(self, cluster, segment="64mb", port=None):
        self.cluster = cluster
        self.segment = segment
        self.port = port or free_port()
        self.logdir = tempdir("mooncake-clientd-")
        self.p = None
        self.start()

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        self.log = os.path.join(self.logdir, f"client-{time.time_ns()}.log")
        self.p = start(["client", "--port", str(self.port), "--global-segment-size", self.segment],
                       env=self.cluster.env, log_name=self.log)
        ready = wait_until(lambda: self.p.poll() is not None or "client ready" in self.text(), 20)
        assert ready and self.p.poll() is None, self.text()[-2000:]

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def pools(self):
        """Dummy pools this process maps now (memfds of /proc/PID/maps)."""
        with open(f"/proc/{self.p.pid}/maps") as f:
            return sum("mooncake-dummy-pool" in line for line in f)

    def segment_name(self):
        for line in self.text().splitlines():
            if "client ready" in line and ", segment " in line:
                return line.split(", segment ")[1].split(" ")[0]
        return None

    def kill(self):
        os.kill(self.p.pid, signal.SIGKILL)
        self.p.wait()

    def stop(self):
        stop(self.p)


@pytest.fixture(scope="module")
def mclient(cluster):
    c = StandaloneClient(cluster)
    yield c
    c.stop()


def attach(address):
    s = MooncakeDistributedStore()
    assert s.setup_dummy(POOL, LOCAL, address) == 0
    return s


@pytest.fixture
def dummy(mclient):
    s = attach(mclient.address)
    yield s
    s.close()


def test_a_dummy_puts_gets_and_removes_through_the_client(dummy, mclient):
    key = "dummy-" + uuid.uuid4().hex
    data = pattern(key, 1000)
    assert dummy.get_hostname() == mclient.segment_name()
    assert dummy.put(key, data) == 0
    assert dummy.is_exist(key) == 1
    assert dummy.get_size(key) == len(data)
    assert dummy.get(key) == data
    assert dummy.put(key, b"other") == 0  # the first writer's bytes stay
    assert dummy.get(key) == data
    # is_exist and get took read leases (as they do embedded): force.
    assert dummy.remove(key, True) == 0
    assert dummy.is_exist(key) == 0
    assert dummy.get(key) == b""
    assert dummy.get_size(key) == -704
    assert dummy.health_check() == 0


def test_batches_move_zero_copy_out_of_the_pool(dummy):
    prefix = uuid.uuid4().hex
    keys = [f"{prefix}-{i}" for i in range(32)]
    size = 4096
    src = dummy.alloc_from_mem_pool(32 * size)
    dst = dummy.alloc_from_mem_pool(32 * size)
    assert src and dst
    assert dummy.register_buffer(src, 32 * size) == 0  # accepted, not needed
    for i, k in enumerate(keys):
        ctypes.memmove(src + i * size, pattern(k, size), size)
    ptrs = [src + i * size for i in range(32)]
    assert dummy.batch_put_from(keys, ptrs, [size] * 32) == [0] * 32
    assert dummy.batch_is_exist(keys + ["absent-" + prefix]) == [1] * 32 + [0]
    got = dummy.batch_get_into(keys, [dst + i * size for i in range(32)], [size] * 32)
    assert got == [size] * 32
    for i, k in enumerate(keys):
        assert ctypes.string_at(dst + i * size, size) == pattern(k, size)
    assert dummy.batch_get_into(keys[:2], [dst], [size]) == [-600, -600]
    assert dummy.batch_put_from([], [], []) == []
    assert dummy.unregister_buffer(src) == 0
    assert dummy.batch_remove(keys, True) == [0] * 32


def test_ranged_reads_land_in_pool_buffers(dummy):
    prefix = uuid.uuid4().hex
    k1, k2 = f"{prefix}-1", f"{prefix}-2"
    d1, d2 = pattern(k1, 64), pattern(k2, 64)
    assert dummy.put(k1, d1) == 0 and dummy.put(k2, d2) == 0
    b0, b1 = dummy.alloc_from_mem_pool(64), dummy.alloc_from_mem_pool(64)
    got = dummy.get_into_ranges([b0, b1], [[k1, k2], [k2, k1]],
                                [[[0, 8], [20]], [[4], [16]]],
                                [[[2, 30], [10]], [[0], [12]]],
                                [[[4, 3], [6]], [[6], [4]]])
    assert got == [[[4, 3], [6]], [[6], [4]]]
    assert ctypes.string_at(b0, 4) == d1[2:6]
    assert ctypes.string_at(b0 + 8, 3) == d1[30:33]
    assert ctypes.string_at(b0 + 20, 6) == d2[10:16]
    assert ctypes.string_at(b1 + 4, 6) == d2[0:6]
    assert ctypes.string_at(b1 + 16, 4) == d1[12:16]
    # A pool buffer registered with its size bounds the ranges counted from
    # it (the reference's destination check); unregistered, the pool does.
    assert dummy.register_buffer(b0, 32) == 0
    assert dummy.get_into_ranges([b0], [[k1]], [[[30, 28]]], [[[0, 0]]], [[[4, 4]]]) == \
        [[[-600, 4]]]
    assert dummy.unregister_buffer(b0) == 0
    assert dummy.get_into_ranges([b0], [[k1]], [[[30]]], [[[0]]], [[[4]]]) == [[[4]]]


def run_calls(s, prefix, mem):
    """A run of calls whose answers an embedded store and a dummy must share.
    `mem` is (ptr, size) of memory usable for put_from / get_into."""
    ptr, size = mem
    k = [f"{prefix}-{i}" for i in range(6)]
    ctypes.memmove(ptr, pattern(k[0], 5000), 5000)
    out = [s.put(k[0], b"v0"), s.put(k[0], b"again"), s.get(k[0]), s.get(k[5]),
           s.get_size(k[5]), s.is_exist(k[5]), s.put_parts(k[1], b"ab", b"cd"), s.get(k[1]),
           s.put_batch([k[2], k[3]], [b"x" * 100, b"y" * 7]), s.get_batch([k[2], k[3], k[5]]),
           s.upsert(k[2], b"z" * 3), s.get(k[2]), s.put_from(k[4], ptr, 5000),
           s.get_into(k[4], ptr + 8192, 4096), s.get_into(k[4], ptr + 8192, 8192),
           ctypes.string_at(ptr + 8192, 5000) == pattern(k[0], 5000),
           s.get_into(k[5], ptr, 100), s.put("", b"x"), s.batch_is_exist(k),
           bytes(s.get_buffer(k[1]) or b""), s.batch_remove([k[3], k[5]], True),
           s.remove(k[3]), s.put(k[5], b"")]
    rc = ReplicateConfig()
    rc.replica_num = 0
    out.append(s.put(k[5], b"x", rc))
    out.append(s.remove_by_regex(f"^{prefix}-", True))
    out.append(s.batch_is_exist(k))
    return out


def test_a_dummy_answers_every_call_as_an_embedded_client_does(dummy, store):
    emb_buf = Buf(16 << 10)
    assert store.register_buffer(emb_buf.ptr, emb_buf.size) == 0
    embedded = run_calls(store, "emb-" + uuid.uuid4().hex, (emb_buf.ptr, emb_buf.size))
    pool = dummy.alloc_from_mem_pool(16 << 10)
    via_dummy = run_calls(dummy, "dum-" + uuid.uuid4().hex, (pool, 16 << 10))
    print("answers:", embedded)
    assert via_dummy == embedded
    # Memory neither from the pool nor registered is refused as embedded.
    other = Buf(64)
    assert dummy.put_from("unregistered-" + uuid.uuid4().hex, other.ptr, 64) == \
        store.put_from("unregistered-" + uuid.uuid4().hex, other.ptr, 64)
    # Registered memory outside the pool works too (staged through it).
    assert dummy.register_buffer(other.ptr, 64) == 0
    key = "staged-" + uuid.uuid4().hex
    ctypes.memmove(other.ptr, pattern(key, 64), 64)
    assert dummy.put_from(key, other.ptr, 64) == 0
    assert dummy.get(key) == pattern(key, 64)
    assert store.get(key) == pattern(key, 64)


def settled_pools(mclient):
    """The pools mapped once earlier tests' closed dummies are released
    (the client sees a close on its own thread, a moment later)."""
    assert wait_until(lambda: mclient.pools() == 0, 10)
    return 0


def start_dummy_child(mclient, mode, prefix):
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "dummy_child.py"), mclient.address,
                          mode, prefix], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    assert line == "ready", line
    return p


def test_several_dummies_share_one_client_and_see_each_others_keys(mclient, cluster):
    prefix = uuid.uuid4().hex
    base = settled_pools(mclient)
    a, b = attach(mclient.address), attach(mclient.address)
    try:
        assert mclient.pools() == base + 2
        child = start_dummy_child(mclient, "put", prefix)
        assert mclient.pools() == base + 3
        keys = [f"{prefix}-{i}" for i in range(10)]
        assert a.batch_is_exist(keys) == [1] * 10
        assert b.get_batch(keys) == [pattern(k, 64 << 10) for k in keys]
        assert a.put(prefix + "-from-a", b"a") == 0
        assert b.get(prefix + "-from-a") == b"a"
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(timeout=20) == 0
        assert wait_until(lambda: mclient.pools() == base + 2, 10)
        # An embedded client of the same cluster sees them too.
        s = MooncakeDistributedStore()
        assert s.setup(*setup_args(cluster)) == 0
        assert s.get(keys[3]) == pattern(keys[3], 64 << 10)
        s.close()
    finally:
        a.close()
        b.close()
    assert wait_until(lambda: mclient.pools() == base, 10)


def test_a_dummy_killed_mid_put_leaves_no_partial_object_and_no_pool(mclient):
    prefix = uuid.uuid4().hex
    base = settled_pools(mclient)
    child = start_dummy_child(mclient, "flood", prefix)
    assert mclient.pools() == base + 1
    reader = attach(mclient.address)
    try:
        assert wait_until(lambda: reader.is_exist(f"{prefix}-3") == 1, 20)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        # The client noticed at once: the killed dummy's pool is unmapped.
        assert wait_until(lambda: mclient.pools() == base + 1, 10)  # the reader's only
        size = 4 << 20
        dst = reader.alloc_from_mem_pool(size)
        whole = 0
        for i in range(10000):
            k = f"{prefix}-{i}"
            n = reader.get_into(k, dst, size)
            if n == -704:
                break
            assert n == size and ctypes.string_at(dst, size) == pattern(k, size), k
            whole += 1
        assert whole >= 4
        # Nothing after the last whole object: no key half written.
        assert reader.batch_is_exist([f"{prefix}-{i}" for i in range(whole, whole + 3)]) == [0] * 3
        # Nor a put left in progress: the dummy put by itself, and its
        # client revoked what its journal named (else the key would stay
        # taken, unreadable, until the master's put timeout).
        nxt = f"{prefix}-{whole}"
        ctypes.memmove(dst, pattern(nxt, size), size)
        assert reader.put_from(nxt, dst, size) == 0
        assert reader.get_into(nxt, dst, size) == size
        whole += 1
        revoked = [line for line in mclient.text().splitlines() if "ended mid-put" in line]
        print(f"{whole - 1} whole objects after the kill, none partial; {revoked[-1:]}")
        assert reader.remove_by_regex(f"^{prefix}-", True) == whole
    finally:
        reader.close()


def test_a_dummy_puts_by_itself_without_a_hop_through_its_client(mclient):
    """Puts go from the dummy to the master and the same-host segment
    directly (client/dummy_puts.h): a batch put completes while the
    standalone client is stopped (SIGSTOP), where one through it would wait."""
    s = attach(mclient.address)
    prefix = "own-" + uuid.uuid4().hex
    keys = [f"{prefix}-{i}" for i in range(32)]
    size = 4096
    src = s.alloc_from_mem_pool(32 * size)
    for i, k in enumerate(keys):
        ctypes.memmove(src + i * size, pattern(k, size), size)
    outside = Buf(size, pattern(prefix, size))  # not pool memory: no staging either
    assert s.register_buffer(outside.ptr, size) == 0
    try:
        got = []
        os.kill(mclient.p.pid, signal.SIGSTOP)
        try:
            t = threading.Thread(target=lambda: got.append(
                (s.batch_put_from(keys, [src + i * size for i in range(32)], [size] * 32),
                 s.put_from(prefix, outside.ptr, size))))
            t.start()
            t.join(10)
            answered = not t.is_alive()
        finally:
            os.kill(mclient.p.pid, signal.SIGCONT)
        t.join(30)
        assert answered and got == [([0] * 32, 0)]
        assert s.get_batch(keys) == [pattern(k, size) for k in keys]
        assert s.get(prefix) == pattern(prefix, size)
        # An upsert still goes through the client (other dummies learn of it there).
        assert s.upsert_from(prefix, src, size) == 0
        assert s.get(prefix) == pattern(keys[0], size)
        assert s.remove_by_regex(f"^{prefix}", True) == 33
    finally:
        s.close()


def test_a_killed_client_fails_calls_fast_and_serves_again_once_back(cluster):
    mc = StandaloneClient(cluster, segment="32mb")
    s = attach(mc.address)
    try:
        ptr = s.alloc_from_mem_pool(4096)
        ctypes.memmove(ptr, b"before the crash", 16)
        key = "restart-" + uuid.uuid4().hex
        assert s.put_from(key, ptr, 16) == 0
        old_segment = mc.segment_name()
        into = s.alloc_from_mem_pool(4096)
        assert s.get_into(key, into, 4096) == 16  # learnt: the next one reads directly
        assert s.get_into(key, into, 4096) == 16
        mc.kill()
        t0 = time.monotonic()
        # Not even a read the dummy could make alone: the bytes of a dead client.
        assert s.get_into(key, into, 4096) == -900
        assert s.put_from(key + "-x", ptr, 16) == -900
        assert s.get(key) == b""
        assert s.is_exist(key) == -900
        assert time.monotonic() - t0 < 1.0
        mc.start()
        # No new setup: the next call attaches to the new client, which maps
        # the same pool addresses with their bytes.
        assert s.put_from(key + "-y", ptr, 16) == 0
        assert s.get(key + "-y") == b"before the crash"
        assert s.get_hostname() != ""
        assert mc.pools() == 1
        assert s.remove(key + "-y", True) == 0
    finally:
        s.close()
        mc.stop()
    # The dead client's segment leaves within the client TTL; later tests
    # must not be placed on it.
    assert wait_until(lambda: not any(old_segment in x for x in cluster.segments()),
                      CLIENT_TTL_S + 10)


def test_a_repeated_get_is_read_by_the_dummy_without_its_client(mclient):
    """The second get of a key is the dummy's own direct read: it is answered
    while the standalone client is stopped (SIGSTOP), where a get through it
    would wait."""
    s = attach(mclient.address)
    key = "direct-" + uuid.uuid4().hex
    size = 64 << 10
    src, dst = s.alloc_from_mem_pool(size), s.alloc_from_mem_pool(size)
    ctypes.memmove(src, pattern(key, size), size)
    try:
        assert s.put_from(key, src, size) == 0
        assert s.get_into(key, dst, size) == size
        ctypes.memset(dst, 0, size)
        got = []
        os.kill(mclient.p.pid, signal.SIGSTOP)
        try:
            t = threading.Thread(target=lambda: got.append(s.get_into(key, dst, size)))
            t.start()
            t.join(10)
            answered = not t.is_alive()
        finally:
            os.kill(mclient.p.pid, signal.SIGCONT)
        t.join(30)
        assert answered and got == [size]
        assert ctypes.string_at(dst, size) == pattern(key, size)
        assert s.remove(key, True) == 0
        assert s.get_into(key, dst, size) == -704
    finally:
        s.close()


def test_a_change_through_another_dummy_is_seen_at_once(mclient):
    """A dummy that reads a key directly sees another dummy's upsert and
    removal of it at once (the shared forget table), not after the TTL."""
    a, b = attach(mclient.address), attach(mclient.address)
    key = "forget-" + uuid.uuid4().hex
    size = 16 << 10
    pa, pb = a.alloc_from_mem_pool(size), b.alloc_from_mem_pool(size)
    try:
        ctypes.memmove(pb, b"1" * size, size)
        assert b.put_from(key, pb, size) == 0
        for _ in range(3):  # learnt, then read directly
            assert a.get_into(key, pa, size) == size
            assert ctypes.string_at(pa, size) == b"1" * size
        ctypes.memmove(pb, b"2" * size, size)
        assert b.upsert_from(key, pb, size) == 0
        assert a.get_into(key, pa, size) == size
        assert ctypes.string_at(pa, size) == b"2" * size
        assert a.get_into(key, pa, size) == size  # the new version, directly
        assert ctypes.string_at(pa, size) == b"2" * size
        assert b.remove(key, True) == 0
        assert a.get_into(key, pa, size) == -704
    finally:
        a.close()
        b.close()


def test_setup_dummy_without_a_client_fails_fast():
    s = MooncakeDistributedStore()
    t0 = time.monotonic()
    assert s.setup_dummy(POOL, LOCAL, f"127.0.0.1:{free_port()}") == -900
    assert s.setup_dummy(POOL, LOCAL, "no-port") == -600
    assert time.monotonic() - t0 < 1.0
    assert s.alloc_from_mem_pool(4096) == 0
    assert s.put("k", b"v") == -600


def test_host_memory_comes_from_the_dummy_pool(mclient):
    alloc = MooncakeHostMemAllocator()
    plain = alloc.alloc(4096)
    assert plain != 0 and alloc.free(plain) == 0 and alloc.free(plain) == -1
    s = attach(mclient.address)
    try:
        p = alloc.alloc(1 << 20)
        assert p != 0
        key = "hostmem-" + uuid.uuid4().hex
        ctypes.memmove(p, pattern(key, 1 << 20), 1 << 20)
        assert s.put_from(key, p, 1 << 20) == 0  # pool memory: no register_buffer
        assert s.get(key) == pattern(key, 1 << 20)
        assert alloc.free(p) == 0
        assert s.remove(key, True) == 0
    finally:
        s.close()
    assert get_alloc_func_addr() != 0 and get_free_func_addr() != 0
