"""The reference's methods beyond put/get: ReplicateConfig's fields,
module-level functions, replica descriptors, extra segments, ranged reads,
put_from_with_metadata and the put/get sessions, with their bad inputs."""
import ctypes
import json
import time
import urllib.parse
import uuid

import pytest

import mooncake.store as ms
from cluster import Cluster
from conftest import Buf, ReplicateConfig, pattern, setup_args
from harness import tempdir

NOT_FOUND, ALREADY_EXISTS, INVALID_PARAMS = -704, -705, -600
SEGMENT_NOT_FOUND, NOT_SUPPORTED = -101, -1012


def key(tag):
    return f"{tag}-{uuid.uuid4().hex}"


def query(cluster, k):
    status, body = cluster.admin("/query_key?key=" + urllib.parse.quote(k, safe=""))
    assert status == 200, body
    return json.loads(body)


# ---- ReplicateConfig ------------------------------------------------------

def test_replicate_config_has_the_references_fields_and_defaults():
    c = ReplicateConfig()
    assert c.replica_num == 1 and c.nof_replica_num == 0 and c.dfs_replica_num == 0
    assert c.with_soft_pin is False and c.with_hard_pin is False
    assert c.soft_pin_action == ms.SoftPinAction.PRESERVE
    assert c.soft_pin_ttl_ms is None
    assert c.preferred_segment == "" and c.preferred_segments == []
    assert c.preferred_nof_segments == [] and c.prefer_alloc_in_same_node is False
    assert c.data_type == ms.ObjectDataType.UNKNOWN and c.group_ids is None
    c.soft_pin_ttl_ms = 5000
    c.group_ids = ["g1", ""]
    c.data_type = ms.ObjectDataType.KVCACHE
    assert c.soft_pin_ttl_ms == 5000 and c.group_ids == ["g1", ""]
    c.soft_pin_ttl_ms = None
    assert c.soft_pin_ttl_ms is None
    text = str(c)
    for field in ["replica_num", "nof_replica_num", "dfs_replica_num", "soft_pin_action",
                  "soft_pin_ttl_ms=None", "group_ids=['g1', '']", "data_type", "preferred_nof_segments"]:
        assert field in text, text
    with pytest.raises(TypeError):
        c.soft_pin_action = 1
    with pytest.raises(TypeError):
        c.group_ids = "g1"
    with pytest.raises(TypeError):
        c.soft_pin_ttl_ms = -1
    with pytest.raises(TypeError):
        c.soft_pin_ttl_ms = 1 << 64


def test_soft_pin_by_with_soft_pin_or_enable_and_a_ttl_needs_one_of_them(store, cluster):
    def cfg(**kw):
        c = ReplicateConfig()
        for k, v in kw.items():
            setattr(c, k, v)
        return c
    E, D = ms.SoftPinAction.ENABLE, ms.SoftPinAction.DISABLE
    for c, pinned in [(cfg(with_soft_pin=True), True),
                      (cfg(with_soft_pin=True, soft_pin_ttl_ms=60000), True),
                      (cfg(soft_pin_action=E), True),
                      (cfg(soft_pin_action=E, soft_pin_ttl_ms=60000), True),
                      (cfg(), False), (cfg(soft_pin_action=D), False)]:
        k = key("pin")
        assert store.put(k, b"pin?", c) == 0
        assert query(cluster, k)["soft_pinned"] is pinned, c
    for c in [cfg(soft_pin_ttl_ms=1000), cfg(soft_pin_action=D, soft_pin_ttl_ms=1000),
              cfg(with_soft_pin=True, soft_pin_action=D)]:
        k = key("pinbad")
        assert store.put(k, b"v", c) == INVALID_PARAMS, c
        assert store.is_exist(k) == 0


def test_nvmeof_replicas_are_not_supported_and_nothing_is_stored(store):
    src = Buf(16, b"n" * 16)
    store.register_buffer(src.ptr, src.size)
    c = ReplicateConfig()
    c.nof_replica_num = 1
    k = key("nof")
    assert store.put(k, b"v", c) == NOT_SUPPORTED
    assert store.put_from(k, src.ptr, 16, c) == NOT_SUPPORTED
    assert store.batch_put_from([k, key("nof")], [src.ptr] * 2, [16] * 2, c) == [NOT_SUPPORTED] * 2
    assert store.put_batch([k], [b"v"], c) == NOT_SUPPORTED
    c = ReplicateConfig()
    c.preferred_nof_segments = ["nof0"]
    assert store.put_parts(k, b"v", config=c) == NOT_SUPPORTED
    assert store.is_exist(k) == 0


def test_dfs_replicas_are_not_supported_and_nothing_is_stored(store):
    c = ReplicateConfig()
    c.dfs_replica_num = 2
    k = key("dfs")
    assert store.put(k, b"v", c) == NOT_SUPPORTED
    assert store.put_batch([k, key("dfs")], [b"v", b"w"], c) == NOT_SUPPORTED
    assert store.upsert(k, b"v", c) == NOT_SUPPORTED
    assert store.is_exist(k) == 0
    c.dfs_replica_num = 0
    assert store.put(k, b"v", c) == 0 and store.get(k) == b"v"


def test_group_ids_need_one_group_per_key_and_data_type_is_kept_out_of_the_way(store):
    src = Buf(32, b"g" * 32)
    store.register_buffer(src.ptr, src.size)
    keys = [key("grp"), key("grp")]
    c = ReplicateConfig()
    c.group_ids = ["only-one"]
    assert store.batch_put_from(keys, [src.ptr] * 2, [32, 32], c) == [INVALID_PARAMS] * 2
    c.group_ids = ["g", ""]
    c.data_type = ms.ObjectDataType.KVCACHE
    assert store.batch_put_from(keys, [src.ptr] * 2, [32, 32], c) == [0, 0]
    assert store.get_batch(keys) == [b"g" * 32] * 2


# ---- module-level functions ----------------------------------------------

def test_bind_to_numa_node_never_raises():
    assert ms.bind_to_numa_node(0) is None
    assert ms.bind_to_numa_node(4095) is None  # no such node: a warning
    with pytest.raises(TypeError):
        ms.bind_to_numa_node("0")


def test_alloc_and_free_functions_are_callable_by_address():
    alloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t)(ms.get_alloc_func_addr())
    free = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(ms.get_free_func_addr())
    p = alloc(1 << 20)
    assert p and p % 4096 == 0
    ctypes.memset(p, 0x5A, 1 << 20)
    assert ctypes.string_at(p + (1 << 20) - 4, 4) == b"ZZZZ"
    free(p)
    free(p)  # a second free of the same pointer is ignored
    assert alloc(0) is None


# ---- replica descriptors --------------------------------------------------

def test_get_replica_desc_describes_each_complete_replica(store):
    k = key("desc")
    assert store.put(k, pattern(k, 3000)) == 0
    d = store.get_replica_desc(k)
    assert len(d) == 1
    r = d[0]
    assert r.status == ms.ReplicaStatus.COMPLETE
    assert r.is_memory_replica() and not r.is_disk_replica() and not r.is_local_disk_replica()
    m = r.get_memory_descriptor()
    assert m.buffer_descriptor.size == sum(b.size for b in m.buffer_descriptors) or \
        m.buffer_descriptor.size <= 3000
    assert sum(b.size for b in m.buffer_descriptors) == 3000
    assert m.buffer_descriptor.transport_endpoint.startswith("127.0.0.1:")
    with pytest.raises(ValueError):
        r.get_disk_descriptor()
    assert store.get_replica_desc(key("missing")) == []


def test_batch_get_replica_desc_leaves_missing_keys_out(store):
    ks = [key("bd"), key("bd")]
    assert store.put_batch(ks, [b"1", b"22"]) == 0
    out = store.batch_get_replica_desc(ks + ["nope-" + ks[0]])
    assert sorted(out) == sorted(ks)
    assert [sum(b.size for b in out[k][0].get_memory_descriptor().buffer_descriptors)
            for k in ks] == [1, 2]


# ---- segments ---------------------------------------------------------------

def test_allocate_mount_place_unmount_a_second_segment(engine, cluster):
    before = len(cluster.segments())
    r = engine.allocate_and_mount_segment(32 << 20)
    assert r["ret"] == 0, r
    assert len(r["segment_ids"]) == 1 and r["allocated_size"] >= 32 << 20
    seg = r["segment_ids"][0]
    assert seg != engine.get_hostname()
    assert len(cluster.segments()) == before + 1
    c = ReplicateConfig()
    c.preferred_segment = seg
    k = key("onseg")
    assert engine.put(k, pattern(k, 100000), c) == 0
    assert {b.segment_name for b in
            engine.get_replica_desc(k)[0].get_memory_descriptor().buffer_descriptors} == {seg}
    assert engine.get(k) == pattern(k, 100000)
    assert engine.unmount_segment([seg]) == 0
    assert len(cluster.segments()) == before
    assert engine.unmount_segment([seg]) == SEGMENT_NOT_FOUND
    assert engine.get(k) == b""  # its only replica left with the segment
    r = engine.allocate_and_mount_segment(16 << 20, "tcp", "cpu:0")
    assert r["ret"] == 0
    assert engine.unmount_and_free_segment(r["segment_ids"], 0) == 0
    assert engine.health_check() == 0


def test_segment_calls_with_bad_input(store):
    assert store.unmount_segment(["no-such-segment"]) == SEGMENT_NOT_FOUND
    assert store.unmount_and_free_segment(["no-such-segment"], 0) == SEGMENT_NOT_FOUND
    assert store.unmount_segment([]) == INVALID_PARAMS
    assert store.allocate_and_mount_segment(0)["ret"] == INVALID_PARAMS
    assert store.allocate_and_mount_segment(16 << 20, "rdma")["ret"] == NOT_SUPPORTED
    assert store.allocate_and_mount_segment(16 << 20, "carrier-pigeon")["ret"] == INVALID_PARAMS
    r = store.mount_segment("/dev/shm/some-file", 16 << 20)
    assert r == {"ret": NOT_SUPPORTED, "segment_ids": []}
    with pytest.raises(TypeError):
        store.unmount_segment("not-a-list-of-names-but-a-str", "0")
    with pytest.raises(TypeError):
        store.allocate_and_mount_segment("16mb")


# ---- ranged reads and put_from_with_metadata ---------------------------------

def test_get_into_ranges_copies_each_range_and_reports_each(store):
    ka, kb = key("ra"), key("rb")
    a, b = pattern(ka, 4096), pattern(kb, 1000)
    assert store.put_batch([ka, kb], [a, b]) == 0
    dst = [Buf(8192), Buf(100)]
    for d in dst:
        store.register_buffer(d.ptr, d.size)
    res = store.get_into_ranges(
        [dst[0].ptr, dst[1].ptr],
        [[ka, kb], [kb, "missing"]],
        [[[0, 100], [5000]], [[0], [10]]],
        [[[10, 0], [990]], [[0], [0]]],
        [[[90, 50], [10]], [[10], [5]]])
    assert res == [[[90, 50], [10]], [[10], [NOT_FOUND]]]
    got = dst[0].bytes()
    assert got[:90] == a[10:100] and got[100:150] == a[:50] and got[5000:5010] == b[990:]
    assert dst[1].bytes(10) == b[:10]
    # A range past the object or into unregistered memory: that range fails.
    loose = Buf(64)
    res = store.get_into_ranges([dst[1].ptr, loose.ptr], [[ka], [ka]],
                                [[[0]], [[0]]], [[[4090]], [[0]]], [[[10]], [[8]]])
    assert res == [[[INVALID_PARAMS]], [[INVALID_PARAMS]]]
    # Offsets count from a buffer's start and stay inside its registration,
    # even where the next registered buffer begins right after it.
    two = Buf(64)
    assert store.register_buffer(two.ptr, 32) == 0
    assert store.register_buffer(two.ptr + 32, 32) == 0
    assert store.get_into_ranges([two.ptr], [[ka]], [[[40, 30, 28]]], [[[0, 0, 0]]],
                                 [[[4, 4, 4]]]) == [[[INVALID_PARAMS, INVALID_PARAMS, 4]]]
    assert two.bytes(64)[28:32] == a[:4] and two.bytes(64)[32:] == bytes(32)
    # Lists of different lengths: every range fails, nothing crashes.
    assert store.get_into_ranges([dst[0].ptr], [[ka]], [[[0]]], [], [[[1]]]) == [[[INVALID_PARAMS]]]
    # A key without its offsets list (ragged inner lists): that entry is
    # empty or fails, nothing crashes.
    assert store.get_into_ranges([dst[0].ptr], [[ka, kb]], [[[0]]], [[[0]]], [[[1]]]) == \
        [[[1], []]]
    assert store.get_into_ranges([dst[0].ptr], [[ka, kb]], [[[0], [8]]], [[[0]]], [[[1]]]) == \
        [[[1], [INVALID_PARAMS]]]


def test_put_from_with_metadata_stores_metadata_then_data(store):
    src = Buf(200, b"D" * 150 + b"M" * 50)
    store.register_buffer(src.ptr, src.size)
    k = key("meta")
    assert store.put_from_with_metadata(k, src.ptr, src.ptr + 150, 150, 50) == 0
    assert store.get(k) == b"M" * 50 + b"D" * 150
    loose = Buf(10)
    assert store.put_from_with_metadata(key("meta"), loose.ptr, src.ptr, 10, 5) == INVALID_PARAMS


# ---- sessions -------------------------------------------------------------------

def test_a_put_session_writes_ranges_then_publishes_at_end(store):
    ks = [key("ps"), key("ps")]
    src = Buf(300, bytes(range(100)) * 3)
    store.register_buffer(src.ptr, src.size)
    assert store.batch_put_session_start(ks, [200, 100]) == [0, 0]
    assert store.batch_is_exist(ks) == [0, 0]  # not readable before the end
    assert store.batch_put_from_multi_buffer_ranges(
        ks, [[src.ptr, src.ptr + 100], [src.ptr + 200]], [[100, 100], [100]],
        [[100, 0], [0]]) == [200, 100]
    assert store.batch_put_session_end(ks) == [0, 0]
    assert store.get(ks[0]) == src.bytes()[100:200] + src.bytes()[:100]
    assert store.get(ks[1]) == src.bytes()[200:300]
    # The session is gone once ended.
    assert store.batch_put_session_end(ks) == [INVALID_PARAMS] * 2


def test_put_session_refusals(store):
    k, gone = key("psr"), key("psr")
    src = Buf(64, b"s" * 64)
    store.register_buffer(src.ptr, src.size)
    assert store.put(k, b"exists") == 0
    assert store.batch_put_session_start([k, gone], [10, 64]) == [ALREADY_EXISTS, 0]
    assert store.batch_put_session_start([gone], [64]) == [INVALID_PARAMS]  # already open
    # Past the object's end, unregistered memory, unknown session.
    assert store.batch_put_from_multi_buffer_ranges([gone], [[src.ptr]], [[64]], [[1]]) == \
        [INVALID_PARAMS]
    assert store.batch_put_from_multi_buffer_ranges([gone], [[Buf(8).ptr]], [[8]], [[0]]) == \
        [INVALID_PARAMS]
    assert store.batch_put_from_multi_buffer_ranges([k], [[src.ptr]], [[8]], [[0]]) == \
        [INVALID_PARAMS]
    assert store.batch_put_session_revoke([gone, k]) == [0, INVALID_PARAMS]
    assert store.is_exist(gone) == 0
    assert store.batch_put_session_start([key("x")], [1, 2]) == [INVALID_PARAMS]
    c = ReplicateConfig()
    c.nof_replica_num = 1
    assert store.batch_put_session_start([key("x")], [8], c) == [NOT_SUPPORTED]
    assert store.get(k) == b"exists"


def test_a_get_session_serves_ranges_until_its_end(store):
    k = key("gs")
    data = pattern(k, 10000)
    assert store.put(k, data) == 0
    dst = Buf(300)
    store.register_buffer(dst.ptr, dst.size)
    assert store.batch_get_session_start([k, "missing-" + k]) == [0, NOT_FOUND]
    assert store.batch_get_into_multi_buffer_ranges(
        [k], [[dst.ptr, dst.ptr + 100]], [[100, 200]], [[9900, 0]]) == [300]
    assert dst.bytes() == data[9900:] + data[:200]
    # Out of the object, unregistered memory, a key without a session.
    assert store.batch_get_into_multi_buffer_ranges([k], [[dst.ptr]], [[101]], [[9900]]) == \
        [INVALID_PARAMS]
    assert store.batch_get_into_multi_buffer_ranges([k], [[Buf(8).ptr]], [[8]], [[0]]) == \
        [INVALID_PARAMS]
    assert store.batch_get_into_multi_buffer_ranges(["missing-" + k], [[dst.ptr]], [[1]],
                                                    [[0]]) == [INVALID_PARAMS]
    assert store.batch_get_session_end([k]) == 0
    assert store.batch_get_into_multi_buffer_ranges([k], [[dst.ptr]], [[1]], [[0]]) == \
        [INVALID_PARAMS]


def test_new_methods_refuse_wrong_types(store):
    with pytest.raises(TypeError):
        store.get_replica_desc(5)
    with pytest.raises(TypeError):
        store.batch_put_session_start(["k"], ["10"])
    with pytest.raises(TypeError):
        store.get_into_ranges([0], [["k"]], [[0]], [[[0]]], [[[1]]])
    with pytest.raises(TypeError):
        store.put_from_with_metadata("k", "ptr", 0, 1, 1)


# ---- the disk half: unmount_local_disk_segment, get_offload_rpc_read_count --

NOT_SUPPORTED_CODE = -1012


def test_unmount_local_disk_segment_without_a_disk_tier(cluster, engine, store):
    fresh = ms.MooncakeDistributedStore()
    assert fresh.unmount_local_disk_segment() == -1  # not set up: the reference's -1
    assert fresh.get_offload_rpc_read_count() == 0
    # No segment of these processes has a disk tier: nothing to drain.
    assert engine.unmount_local_disk_segment() == 0
    assert store.unmount_local_disk_segment(grace_period_seconds=0) == 0
    assert engine.unmount_local_disk_segment(3601) == INVALID_PARAMS
    with pytest.raises(TypeError):
        engine.unmount_local_disk_segment(-1)
    # The memory segment is still there and serves.
    k = key("after-disk-unmount")
    assert engine.put(k, b"still here") == 0 and store.get(k) == b"still here"


def test_offload_read_count_counts_gets_a_disk_tier_served(tmp_path):
    """An engine whose segment has a disk tier (enable_ssd_offload): objects
    past the master's memory watermark go to disk; a get of one only on disk
    is counted (the master staged it from disk), a get of one in memory is
    not, nor is get_size; once a second read promotes a key into memory,
    its reads stop counting, as the reference's promotion test checks."""
    c = Cluster(stores=0, logdir=tempdir("mooncake-pytest-offload-"),
                extra_master=["--enable-offload", "--promotion-on-hit",
                              "--eviction-high-watermark-ratio", "0.5", "--client-ttl", "2s"])
    s = ms.MooncakeDistributedStore()
    try:
        assert s.setup(*setup_args(c, 32 << 20), None, enable_ssd_offload=True,
                       ssd_offload_path=str(tmp_path / "ssd")) == 0
        assert s.get_offload_rpc_read_count() == 0
        assert s.unmount_local_disk_segment() == NOT_SUPPORTED_CODE
        size = 1 << 20
        keys = [key(f"tiered{i:02d}") for i in range(40)]
        for k in keys:
            assert s.put(k, pattern(k, size)) == 0

        def tier(k):
            return query(c, k).get("tier")

        # Until the offloads are over: the same keys on disk three polls running.
        deadline = time.monotonic() + 30
        seen = []
        while time.monotonic() < deadline and (len(seen) < 3 or len(set(seen[-3:])) > 1
                                               or len(seen[-1]) < 6):
            seen.append(tuple(k for k in keys if tier(k) == "disk"))
            time.sleep(0.2)
        on_disk = list(seen[-1])
        assert len(on_disk) >= 6, f"objects past the watermark reached the disk tier ({on_disk})"
        in_memory = [k for k in reversed(keys) if tier(k) == "memory"]  # the newest first
        assert in_memory, "objects under the watermark stayed in memory"

        assert s.get(in_memory[0]) == pattern(in_memory[0], size)
        assert s.get_offload_rpc_read_count() == 0, "a get from memory is not counted"
        assert s.get_size(on_disk[0]) == size
        assert s.get_offload_rpc_read_count() == 0, "get_size reads no bytes: not counted"
        assert s.get(on_disk[1]) == pattern(on_disk[1], size)
        assert s.get_offload_rpc_read_count() == 1
        bufs = [Buf(size) for _ in range(2)]
        assert all(s.register_buffer(b.ptr, size) == 0 for b in bufs)
        assert s.batch_get_into(on_disk[2:4], [b.ptr for b in bufs], [size, size]) == [size, size]
        assert [b.bytes() for b in bufs] == [pattern(k, size) for k in on_disk[2:4]]
        assert s.get_offload_rpc_read_count() == 3

        # Described without being read: one LOCAL_DISK replica, nothing staged.
        cold = on_disk[5]
        descs = s.get_replica_desc(cold)
        assert len(descs) == 1, descs
        assert descs[0].is_local_disk_replica() and not descs[0].is_memory_replica()
        assert not descs[0].is_disk_replica()
        assert descs[0].status == ms.ReplicaStatus.COMPLETE
        with pytest.raises(ValueError):
            descs[0].get_memory_descriptor()
        assert list(s.batch_get_replica_desc([cold])) == [cold]
        assert s.get_offload_rpc_read_count() == 3 and tier(cold) == "disk"
        mem = s.get_replica_desc(in_memory[0])
        assert [d.is_memory_replica() for d in mem] == [True]
        assert not mem[0].is_local_disk_replica()

        # Promotion: the staged copy of a first read goes again; a second
        # read within the window keeps the object in memory, after which
        # its reads are memory reads.
        hot = on_disk[4]
        assert s.get(hot) == pattern(hot, size)
        assert s.get_offload_rpc_read_count() == 4
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and tier(hot) != "disk":
            time.sleep(0.1)
        assert tier(hot) == "disk"
        assert s.get(hot) == pattern(hot, size)
        assert s.get_offload_rpc_read_count() == 5
        assert tier(hot) == "memory+disk", "the second read promoted the key"
        kinds = [(d.is_memory_replica(), d.is_local_disk_replica()) for d in s.get_replica_desc(hot)]
        assert kinds == [(True, False), (False, True)], kinds
        assert s.get(hot) == pattern(hot, size)
        assert s.get_offload_rpc_read_count() == 5, "a promoted key is read from memory"
    finally:
        s.close()
        c.stop()
