"""upsert*, copy/move tasks, batch_replica_clear and remove_by_regex against
a live cluster: names, keywords and return shapes as the reference's, a
reader racing upserts never sees a mix of two versions, and a copy or move
really places the replica on the named segment (the master's /query_key)."""
import json
import threading
import time
import urllib.parse
import uuid

import pytest

from conftest import Buf, pattern
from mooncake.store import (FAILED, PENDING, PROCESSING, REPLICA_COPY, REPLICA_MOVE, SUCCESS,
                            QueryTaskResponse, ReplicateConfig, TaskStatus, TaskType)

INVALID_PARAMS, INVALID_WRITE = -600, -700
OBJECT_NOT_FOUND = -704
TASK_NOT_FOUND = -1400


def key(tag):
    return f"ops-{tag}-{uuid.uuid4().hex}"


def replica_segments(cluster, k):
    """The segment of each replica of `k`, as the master reports them."""
    status, body = cluster.admin("/query_key?key=" + urllib.parse.quote(k))
    assert status == 200, body
    return [sorted({b["segment"] for b in r}) for r in json.loads(body)["replicas"]]


def store_segment(cluster, engine):
    """The stand-alone store's segment (the cluster's one that is not the engine's)."""
    others = [s.split()[0] for s in cluster.segments() if engine.get_hostname() not in s]
    assert others, cluster.segments()
    return others[0]


def test_upsert_inserts_then_replaces_with_any_size(store):
    k = key("replace")
    assert store.upsert(k, b"first") == 0
    assert store.get(k) == b"first"
    assert store.upsert(k, b"a longer second version") == 0
    assert store.get(k) == b"a longer second version"
    assert store.upsert(k, b"3") == 0
    assert store.get(k) == b"3"
    assert store.get_size(k) == 1
    assert store.upsert(k, b"", ReplicateConfig()) == 0  # empty: nothing stored (reference)
    assert store.get(k) == b"3"


def test_upsert_parts_and_batches_keep_the_reference_shapes(store):
    k = key("parts")
    assert store.upsert_parts(k, b"ab", bytearray(b"cd"), memoryview(b"ef")) == 0
    assert store.get(k) == b"abcdef"
    assert store.upsert_parts(k, b"xyz", config=ReplicateConfig()) == 0
    assert store.get(k) == b"xyz"
    with pytest.raises(RuntimeError, match="1-D bytes-like"):
        store.upsert_parts(k, memoryview(bytearray(8)).cast("i"))
    keys = [key("batch") for _ in range(3)]
    assert store.upsert_batch(keys, [pattern(x, 100) for x in keys]) == 0
    assert store.upsert_batch(keys=keys, values=[pattern(x, 300) for x in keys],
                              config=ReplicateConfig()) == 0
    assert [store.get(x) for x in keys] == [pattern(x, 300) for x in keys]
    assert store.upsert_batch(keys, [b"x"]) == INVALID_PARAMS
    with pytest.raises(TypeError):
        store.upsert(k, 12)


def test_upsert_from_needs_registered_memory(engine):
    size = 4096
    src = Buf(size, pattern("from", size))
    k, k2 = key("from"), key("from")
    assert engine.upsert_from(k, src.ptr, size) == INVALID_PARAMS  # not registered
    assert engine.register_buffer(src.ptr, size) == 0
    assert engine.upsert_from(k, src.ptr, size) == 0
    assert engine.get(k) == pattern("from", size)
    src.raw[:] = pattern("again", size)
    assert engine.upsert_from(key=k, buffer_ptr=src.ptr, size=size, config=ReplicateConfig()) == 0
    assert engine.get(k) == pattern("again", size)
    got = engine.batch_upsert_from([k, k2], [src.ptr, src.ptr + 1024], [1024, 2048])
    assert got == [0, 0]
    assert engine.get(k) == pattern("again", size)[:1024]
    assert engine.get(k2) == pattern("again", size)[1024:3072]
    assert engine.batch_upsert_from([k], [src.ptr], [1, 2]) == [INVALID_PARAMS]
    engine.unregister_buffer(src.ptr)


def test_upsert_under_concurrent_gets_never_shows_a_mix(engine):
    """Each version is one byte value repeated, its length tied to the value:
    a torn read (two versions' bytes, or a freed and reused buffer) shows as
    a mixed or wrongly sized result."""
    k = key("race")

    def version(n):
        return bytes([n % 251]) * (4096 + (n % 7) * 1024)

    assert engine.upsert(k, version(0)) == 0
    stop = threading.Event()
    errors, reads = [], [0]

    def reader():
        dst = Buf(16384)
        engine.register_buffer(dst.ptr, dst.size)
        try:
            while not stop.is_set():
                n = engine.get_into(k, dst.ptr, dst.size)
                for got in (engine.get(k), dst.bytes(max(0, n))):
                    reads[0] += 1
                    if not got:
                        errors.append(("missing",))
                    elif got != bytes([got[0]]) * len(got):
                        errors.append(("mixed", len(got), sorted(set(got))[:4]))
                    elif len(got) != len(version(got[0])):
                        errors.append(("size", len(got), got[0]))
        finally:
            engine.unregister_buffer(dst.ptr)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for n in range(1, 250):
            assert engine.upsert(k, version(n)) == 0
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not errors, errors[:5]
    assert reads[0] > 0
    assert engine.get(k) == version(249)


def test_two_upserters_of_one_key_stay_whole_and_only_a_stored_version_is_acknowledged(store, engine):
    # An upsert that another client's later upsert took over before it ended
    # fails with INVALID_WRITE (as the reference refuses its End); the key
    # holds one writer's whole value, from a writer that was told 0.
    k = key("writers")
    a, b = b"A" * 50000, b"B" * 70000
    results = []
    ts = [threading.Thread(target=lambda s=s, v=v: results.append((v, s.upsert(k, v))))
          for s, v in ((store, a), (engine, b)) for _ in range(5)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert len(results) == 10
    assert all(rc in (0, INVALID_WRITE) for _, rc in results), [rc for _, rc in results]
    assert store.get(k) in {v for v, rc in results if rc == 0}


def wait_task(s, task_id, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        resp, code = s.query_task(task_id)
        assert code == 0 and isinstance(resp, QueryTaskResponse)
        if resp.status in (TaskStatus.SUCCESS, TaskStatus.FAILED) or time.monotonic() > deadline:
            return resp
        time.sleep(0.05)


def test_copy_task_places_a_replica_on_the_target_segment(cluster, engine):
    src_seg, dst_seg = store_segment(cluster, engine), engine.get_hostname()
    k = key("copy")
    config = ReplicateConfig()
    config.preferred_segment = src_seg
    assert engine.put(k, pattern(k, 200000), config) == 0
    assert replica_segments(cluster, k) == [[src_seg]]
    task_id, code = engine.create_copy_task(k, [dst_seg])
    assert code == 0 and isinstance(task_id, tuple) and task_id != (0, 0)
    resp = wait_task(engine, task_id)
    assert resp.status == TaskStatus.SUCCESS, resp.message
    assert resp.type == TaskType.REPLICA_COPY
    assert resp.id == task_id
    assert resp.created_at_ms_epoch <= resp.last_updated_at_ms_epoch
    assert sorted(replica_segments(cluster, k)) == sorted([[src_seg], [dst_seg]])
    assert engine.get(k) == pattern(k, 200000)
    assert "QueryTaskResponse(id=" in repr(resp)


def test_move_task_leaves_the_replica_only_on_the_target(cluster, engine):
    src_seg, dst_seg = store_segment(cluster, engine), engine.get_hostname()
    k = key("move")
    config = ReplicateConfig()
    config.preferred_segment = src_seg
    assert engine.put(k, pattern(k, 100000), config) == 0
    task_id, code = engine.create_move_task(key=k, source=src_seg, target=dst_seg)
    assert code == 0
    resp = wait_task(engine, task_id)
    assert resp.status == SUCCESS and resp.type == REPLICA_MOVE, resp.message
    assert replica_segments(cluster, k) == [[dst_seg]]
    assert engine.get(k) == pattern(k, 100000)


def test_tasks_refuse_bad_requests_with_the_reference_codes(cluster, engine):
    seg = engine.get_hostname()
    assert engine.create_copy_task(key("none"), [seg]) == ((0, 0), OBJECT_NOT_FOUND)
    k = key("bad")
    assert engine.put(k, b"v" * 100) == 0
    assert engine.create_copy_task(k, ["no-such-segment:1"]) == ((0, 0), INVALID_PARAMS)
    assert engine.create_copy_task(k, []) == ((0, 0), INVALID_PARAMS)
    assert engine.create_move_task(k, seg, seg) == ((0, 0), INVALID_PARAMS)
    assert engine.query_task((12345, 678)) == (None, TASK_NOT_FOUND)
    assert (REPLICA_COPY, PENDING, PROCESSING, FAILED) == (
        TaskType.REPLICA_COPY, TaskStatus.PENDING, TaskStatus.PROCESSING, TaskStatus.FAILED)
    assert [int(v) for v in (PENDING, PROCESSING, FAILED, SUCCESS)] == [0, 1, 2, 3]


def test_batch_replica_clear_removes_the_replicas_it_names(cluster, store, engine):
    ka, kb, kc = key("clear"), key("clear"), key("clear")
    for k in (ka, kb):
        assert store.put(k, b"x" * 1000) == 0
    config = ReplicateConfig()
    config.replica_num = 2
    assert engine.put(kc, b"y" * 1000, config) == 0
    assert len(replica_segments(cluster, kc)) == 2
    assert store.batch_replica_clear([ka, "missing-" + ka]) == [ka]
    assert store.is_exist(ka) == 0 and store.is_exist(kb) == 1
    seg = engine.get_hostname()
    assert store.batch_replica_clear(keys=[kc], segment_name=seg) == [kc]
    assert seg not in str(replica_segments(cluster, kc))
    assert store.get(kc) == b"y" * 1000
    assert store.batch_replica_clear([kc], "no-such-segment:1") == []


def test_remove_by_regex_removes_matches_and_refuses_a_bad_pattern(store):
    prefix = uuid.uuid4().hex
    for name in ("a1", "a2", "b1"):
        assert store.put(f"{prefix}/{name}", b"v") == 0
    assert store.remove_by_regex("(") == INVALID_PARAMS
    assert store.remove_by_regex(regex_pattern="[z-a]") == INVALID_PARAMS
    assert store.remove_by_regex(f"^{prefix}/a") == 2
    assert store.is_exist(f"{prefix}/a1") == 0
    assert store.is_exist(f"{prefix}/b1") == 1
    assert store.remove_by_regex(f"^{prefix}/", force=True) == 1
    assert store.remove_by_regex(f"^{prefix}") == 0
