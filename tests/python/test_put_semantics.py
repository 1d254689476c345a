"""A put of a key that exists returns 0 from every put call and leaves the
stored bytes as they were; two writers racing on one key both get 0 and
readers only ever see one whole object."""
import threading
import uuid

from conftest import Buf, ReplicateConfig, pattern


def key(tag):
    return f"{tag}-{uuid.uuid4().hex}"


def test_every_put_call_returns_0_for_an_existing_key_and_keeps_its_bytes(store):
    k = key("exists")
    first = pattern(k, 5000)
    assert store.put(k, first) == 0
    other = b"y" * 5000
    src = Buf(3 * 5000, other * 3)
    assert store.register_buffer(src.ptr, src.size) == 0
    assert store.put(k, other) == 0
    assert store.put_parts(k, other[:10], other[10:]) == 0
    assert store.put_batch([k], [other]) == 0
    assert store.put_from(k, src.ptr, 5000) == 0
    assert store.batch_put_from([k], [src.ptr], [5000]) == [0]
    assert store.batch_put_from_multi_buffers([k], [[src.ptr, src.ptr + 5000]],
                                              [[100, 4900]]) == [0]
    assert store.put_from_with_metadata(k, src.ptr, src.ptr + 5000, 4000, 1000) == 0
    assert store.get(k) == first
    assert store.get_size(k) == 5000


def test_a_batch_mixing_new_and_existing_keys_stores_the_new_ones(store):
    old, new = key("old"), key("new")
    assert store.put(old, b"old bytes") == 0
    src = Buf(64, b"n" * 64)
    store.register_buffer(src.ptr, src.size)
    assert store.batch_put_from([old, new], [src.ptr, src.ptr], [64, 64]) == [0, 0]
    assert store.get_batch([old, new]) == [b"old bytes", b"n" * 64]


def test_other_put_errors_are_still_reported(store):
    c = ReplicateConfig()
    c.replica_num = 0
    assert store.put(key("bad"), b"v", c) == -600
    assert store.put("", b"v") == -400


def test_two_writers_of_one_key_both_get_0_and_readers_see_one_whole_object(store, cluster):
    from conftest import MooncakeDistributedStore, setup_args
    other = MooncakeDistributedStore()
    assert other.setup(*setup_args(cluster)) == 0
    size = 256 << 10
    a_bytes, b_bytes = b"A" * size, b"B" * size
    rounds = 40
    codes, seen, errors = [], [], []
    stop = threading.Event()
    keys = [key("race") for _ in range(rounds)]

    def writer(s, data):
        for k in keys:
            codes.append(s.put(k, data))

    def reader():
        while not stop.is_set():
            for k in keys:
                v = store.get(k)
                if v:
                    seen.append(v == a_bytes or v == b_bytes)
                    if v not in (a_bytes, b_bytes):
                        errors.append((k, len(v), v[:1], v[-1:]))

    r = threading.Thread(target=reader)
    r.start()
    w = [threading.Thread(target=writer, args=(store, a_bytes)),
         threading.Thread(target=writer, args=(other, b_bytes))]
    for t in w:
        t.start()
    for t in w:
        t.join()
    stop.set()
    r.join()
    assert codes == [0] * (2 * rounds)
    assert not errors, errors[:3]
    for k in keys:
        assert store.get(k) in (a_bytes, b_bytes)
    other.close()


def test_zero_copy_writers_race_on_one_key(store, cluster):
    from conftest import MooncakeDistributedStore, setup_args
    other = MooncakeDistributedStore()
    assert other.setup(*setup_args(cluster)) == 0
    size, n = 64 << 10, 32
    bufs = [Buf(size * n, bytes([c]) * (size * n)) for c in b"XY"]
    for s, b in zip((store, other), bufs):
        assert s.register_buffer(b.ptr, b.size) == 0
    keys = [key("zrace") for _ in range(n)]
    out = {}

    def writer(s, b, tag):
        out[tag] = s.batch_put_from(keys, [b.ptr + i * size for i in range(n)], [size] * n)

    ts = [threading.Thread(target=writer, args=(s, b, t))
          for s, b, t in zip((store, other), bufs, "XY")]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out["X"] == [0] * n and out["Y"] == [0] * n
    for k in keys:
        v = store.get(k)
        assert v in (b"X" * size, b"Y" * size)
    other.close()
