"""Every method of mooncake.store.MooncakeDistributedStore against a real
local cluster, with the reference's return conventions."""
import uuid

from conftest import Buf, MooncakeDistributedStore, ReplicateConfig, pattern, setup_args

NOT_FOUND = -704
BUFFER_OVERFLOW = -10
INVALID_PARAMS = -600


def key(tag):
    return f"{tag}-{uuid.uuid4().hex}"


def test_put_get_exist_size_remove(store):
    k = key("basic")
    assert store.put(k, b"hello mooncake") == 0
    assert store.get(k) == b"hello mooncake"
    assert store.is_exist(k) == 1
    assert store.get_size(k) == 14
    # A put of a key that exists succeeds and leaves the object as it was.
    assert store.put(k, b"again") == 0
    assert store.get(k) == b"hello mooncake"
    assert store.remove(k) == 0
    assert store.is_exist(k) == 0
    assert store.get(k) == b""
    assert store.get_size(k) == NOT_FOUND
    assert store.remove(k) == NOT_FOUND


def test_put_accepts_any_contiguous_buffer(store):
    k1, k2 = key("ba"), key("mv")
    assert store.put(k1, bytearray(b"x" * 1000)) == 0
    assert store.put(k2, memoryview(b"abcdef")[1:4]) == 0
    assert store.get(k1) == b"x" * 1000
    assert store.get(k2) == b"bcd"


def test_batch_bytes(store):
    keys = [key(f"b{i}") for i in range(8)]
    values = [pattern(k, 100 + i) for i, k in enumerate(keys)]
    assert store.put_batch(keys, values) == 0
    assert store.get_batch(keys + ["missing-" + keys[0]]) == values + [b""]
    assert store.batch_is_exist(keys[:2] + ["nope"]) == [1, 1, 0]
    # An existing key in a batch is a success that keeps its object.
    fresh = key("new")
    assert store.put_batch([keys[0], fresh], [b"a", b"b"]) == 0
    assert store.get_batch([keys[0], fresh]) == [values[0], b"b"]
    # The gets above leased these keys; force removes them regardless.
    assert store.batch_remove(keys[:3] + ["nope"], force=True) == [0, 0, 0, NOT_FOUND]
    assert store.batch_is_exist(keys[:4]) == [0, 0, 0, 1]


def test_put_parts_is_one_object(store):
    k = key("parts")
    assert store.put_parts(k, b"abc", bytearray(b"def"), memoryview(b"ghi")) == 0
    assert store.get(k) == b"abcdefghi"
    assert store.put_parts(key("parts"), b"a", config=ReplicateConfig()) == 0


def test_get_buffer_exposes_the_buffer_protocol(store):
    k = key("buf")
    data = pattern(k, 5000)
    assert store.put(k, data) == 0
    b = store.get_buffer(k)
    assert len(b) == 5000 and b.size() == 5000 and b.ptr() != 0
    assert bytes(memoryview(b)) == data
    assert store.get_buffer("missing-" + k) is None
    got = store.batch_get_buffer([k, "missing-" + k])
    assert bytes(memoryview(got[0])) == data and got[1] is None


def test_zero_copy_put_from_get_into(store):
    k = key("zc")
    data = pattern(k, 1 << 20)
    src, dst = Buf(len(data), data), Buf(len(data) + 100)
    assert store.register_buffer(src.ptr, src.size) == 0
    assert store.register_buffer(dst.ptr, dst.size) == 0
    assert store.put_from(k, src.ptr, src.size) == 0
    assert store.get_into(k, dst.ptr, dst.size) == len(data)
    assert dst.bytes(len(data)) == data
    # A buffer too small is an error, never an overrun.
    small = Buf(1000)
    assert store.register_buffer(small.ptr, small.size) == 0
    assert store.get_into(k, small.ptr, small.size) == BUFFER_OVERFLOW
    assert store.get_into("missing-" + k, dst.ptr, dst.size) == NOT_FOUND
    # Inside a registered buffer is fine; outside is refused.
    assert store.get_into(k, dst.ptr + 50, dst.size - 50) == len(data)
    assert store.get_into(k, dst.ptr + 50, dst.size) == INVALID_PARAMS
    for b in (src, dst, small):
        assert store.unregister_buffer(b.ptr) == 0
    assert store.unregister_buffer(src.ptr) == INVALID_PARAMS
    assert store.put_from(key("unreg"), src.ptr, src.size) == INVALID_PARAMS
    assert store.get_into(k, dst.ptr, dst.size) == INVALID_PARAMS


def test_batch_zero_copy(store):
    n, size = 32, 4096
    keys = [key(f"bz{i}") for i in range(n)]
    src, dst = Buf(n * size), Buf(n * size)
    for i, k in enumerate(keys):
        ctypes_fill(src, i * size, pattern(k, size))
    store.register_buffer(src.ptr, src.size)
    store.register_buffer(dst.ptr, dst.size)
    ptrs = [src.ptr + i * size for i in range(n)]
    assert store.batch_put_from(keys, ptrs, [size] * n) == [0] * n
    assert store.batch_put_from(keys[:1], ptrs[1:2], [size]) == [0]  # kept as it was
    out = [dst.ptr + i * size for i in range(n)]
    res = store.batch_get_into(keys + ["missing"], out + [dst.ptr], [size] * (n + 1))
    assert res == [size] * n + [NOT_FOUND]
    assert dst.bytes() == src.bytes()
    # Mismatched lengths: every key fails, nothing crashes.
    assert store.batch_get_into(keys[:2], out[:1], [size]) == [INVALID_PARAMS] * 2


def ctypes_fill(buf, offset, data):
    import ctypes
    ctypes.memmove(buf.ptr + offset, data, len(data))


def test_multi_buffers_gather_and_scatter(store):
    keys = [key("mb0"), key("mb1")]
    pieces = [[b"a" * 100, b"b" * 7000, b"c" * 3], [b"d" * 5000]]
    srcs = [[Buf(len(p), p) for p in obj] for obj in pieces]
    for obj in srcs:
        for b in obj:
            assert store.register_buffer(b.ptr, b.size) == 0
    res = store.batch_put_from_multi_buffers(
        keys, [[b.ptr for b in obj] for obj in srcs], [[b.size for b in obj] for obj in srcs])
    assert res == [0, 0]
    assert store.get(keys[0]) == b"".join(pieces[0])
    # Scatter into differently cut buffers.
    cuts = [[3000, 4103], [10, 4990]]
    dsts = [[Buf(n) for n in obj] for obj in cuts]
    for obj in dsts:
        for b in obj:
            store.register_buffer(b.ptr, b.size)
    got = store.batch_get_into_multi_buffers(
        keys, [[b.ptr for b in obj] for obj in dsts], [[b.size for b in obj] for obj in dsts])
    assert got == [7103, 5000]
    for obj, want in zip(dsts, pieces):
        assert b"".join(b.bytes() for b in obj) == b"".join(want)


def test_remove_all(store):
    keys = [key("ra") for _ in range(3)]
    assert store.put_batch(keys, [b"1", b"2", b"3"]) == 0
    assert store.remove_all() >= 3
    assert store.batch_is_exist(keys) == [0, 0, 0]


def test_remove_all_forced(store):
    keys = [key("raf") for _ in range(2)]
    assert store.put_batch(keys, [b"1", b"2"]) == 0
    assert store.remove_all(True) >= 2
    assert store.batch_is_exist(keys) == [0, 0]


def test_replicate_config_fields(store):
    c = ReplicateConfig()
    assert c.replica_num == 1 and not c.with_soft_pin and not c.with_hard_pin
    c.with_soft_pin = True
    c.soft_pin_ttl_ms = 60000
    c.with_hard_pin = False
    c.preferred_segment = ""
    c.preferred_segments = []
    c.prefer_alloc_in_same_node = True
    assert "replica_num=1" in repr(c)
    assert store.put(key("cfg"), b"pinned", c) == 0
    c.replica_num = 0
    assert store.put(key("cfg0"), b"x", c) == INVALID_PARAMS


def test_engine_segment_and_replicas(engine, cluster):
    name = engine.get_hostname()
    assert name.startswith("127.0.0.1:")
    assert any(name in line for line in cluster.segments())
    c = ReplicateConfig()
    c.replica_num = 2  # the engine's segment and the store's
    k = key("rep2")
    assert engine.put(k, pattern(k, 300000), c) == 0
    assert engine.get(k) == pattern(k, 300000)
    assert engine.health_check() == 0


def test_setup_with_a_dict_and_string_sizes(cluster):
    s = MooncakeDistributedStore()
    args = setup_args(cluster)
    assert s.setup({"local_hostname": args[0], "metadata_server": args[1],
                    "global_segment_size": "32mb", "local_buffer_size": "16MB",
                    "protocol": "tcp", "master_server_address": args[6]}) == 0
    assert s.get_hostname() != "127.0.0.1"
    assert s.close() == 0


def placed_on(cluster, k):
    import json
    import urllib.parse
    status, body = cluster.admin("/query_key?key=" + urllib.parse.quote(k, safe=""))
    assert status == 200, body
    return [{b["segment"] for b in r} for r in json.loads(body)["replicas"]]


def test_preferred_segment_keeps_data_local_and_falls_back(engine, cluster):
    mine = engine.get_hostname()
    others = [s.split()[0] for s in cluster.segments() if mine not in s]
    c = ReplicateConfig()
    for target in [mine] + others[:1]:
        c.preferred_segment = target
        for i in range(4):
            k = key("pref")
            assert engine.put(k, pattern(k, 50000), c) == 0
            assert placed_on(cluster, k) == [{target}], (target, placed_on(cluster, k))
    c = ReplicateConfig()
    c.preferred_segments = ["no-such-segment:1"]
    k = key("pref-gone")
    assert engine.put(k, b"still stored", c) == 0
    assert engine.get(k) == b"still stored"
    c = ReplicateConfig()
    c.with_hard_pin = True
    c.prefer_alloc_in_same_node = True
    k = key("hard")
    assert engine.put(k, b"hard-pinned", c) == 0
    assert engine.remove(k) == 0


def test_setup_from_mooncake_json_and_environment(cluster, tmp_path, monkeypatch):
    import json
    path = tmp_path / "mooncake.json"
    path.write_text(json.dumps({
        "local_hostname": "127.0.0.1",
        "metadata_server": f"http://127.0.0.1:{cluster.meta_port}/metadata",
        "master_server_address": "127.0.0.1:1",  # overridden by MOONCAKE_MASTER below
        "protocol": "tcp", "device_name": "",
        "global_segment_size": "32mb", "local_buffer_size": 16777216}))
    monkeypatch.setenv("MOONCAKE_CONFIG_PATH", str(path))
    monkeypatch.setenv("MOONCAKE_MASTER", f"127.0.0.1:{cluster.rpc_port}")
    s = MooncakeDistributedStore()
    assert s.setup() == 0  # everything from the file and the environment
    name = s.get_hostname()
    assert name.startswith("127.0.0.1:") and any(name in x for x in cluster.segments())
    k = key("envcfg")
    assert s.put(k, b"configured") == 0 and s.get(k) == b"configured"
    assert s.close() == 0
    monkeypatch.setenv("MOONCAKE_GLOBAL_SEGMENT_SIZE", "12xb")
    assert MooncakeDistributedStore().setup() == INVALID_PARAMS
    monkeypatch.delenv("MOONCAKE_GLOBAL_SEGMENT_SIZE")
    # Arguments given to setup() win over the file and the environment.
    s = MooncakeDistributedStore()
    args = list(setup_args(cluster))
    args[2] = "0"
    assert s.setup(*args) == 0 and s.get_hostname() == "127.0.0.1"
    s.close()
