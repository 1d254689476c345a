"""Bad input gives a negative code or a Python exception, never a crash."""
import pytest

from conftest import Buf, MooncakeDistributedStore, ReplicateConfig, setup_args

INVALID_KEY = -400
INVALID_PARAMS = -600


def test_calls_before_setup_and_after_close(cluster):
    s = MooncakeDistributedStore()
    b = Buf(64)
    assert s.health_check() == 1
    assert s.get_hostname() == ""
    assert s.put("k", b"v") == INVALID_PARAMS
    assert s.get("k") == b""
    assert s.get_buffer("k") is None
    assert s.is_exist("k") == INVALID_PARAMS
    assert s.batch_is_exist(["a", "b"]) == [INVALID_PARAMS] * 2
    assert s.register_buffer(b.ptr, b.size) == INVALID_PARAMS
    assert s.get_into("k", b.ptr, b.size) == INVALID_PARAMS
    assert s.batch_get_into(["k"], [b.ptr], [b.size]) == [INVALID_PARAMS]
    assert s.remove_all() == INVALID_PARAMS
    assert s.close() == 0
    assert s.setup(*setup_args(cluster)) == 0
    assert s.put("closing-key", b"v") == 0
    assert s.close() == 0
    assert s.close() == 0
    assert s.put("k", b"v") == INVALID_PARAMS
    assert s.get("closing-key") == b""
    assert s.health_check() == 1


def test_a_segment_larger_than_the_host_is_refused_not_crashed(cluster):
    # The memory guard (mooncake-store(1)): an engine contributing more than
    # the machine can give gets INVALID_PARAMS from setup, and can retry.
    with open("/proc/meminfo") as f:
        total = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemTotal:"))
    s = MooncakeDistributedStore()
    args = list(setup_args(cluster))
    args[2] = 2 * total
    assert s.setup(*args) == INVALID_PARAMS
    args[2] = 16 << 20
    assert s.setup(*args) == 0
    assert s.put("after-refusal", b"v") == 0
    assert s.get("after-refusal") == b"v"
    assert s.close() == 0


def test_setup_errors(cluster):
    s = MooncakeDistributedStore()
    args = list(setup_args(cluster))
    args[2] = "4xb"
    assert s.setup(*args) == INVALID_PARAMS
    with pytest.raises(TypeError):
        s.setup("127.0.0.1", "meta", [1], 0, "tcp", "", "x")
    args = list(setup_args(cluster))
    args[6] = "127.0.0.1:1"  # nothing listens there
    assert s.setup(*args) < 0
    assert s.setup(*setup_args(cluster)) == 0
    assert s.setup(*setup_args(cluster)) == INVALID_PARAMS  # already set up
    s.close()


def test_wrong_python_types_raise(store):
    with pytest.raises(TypeError):
        store.put("k", "a str is not bytes")
    with pytest.raises(TypeError):
        store.put(12, b"v")
    with pytest.raises(TypeError):
        store.get_into("k", "not a pointer", 10)
    with pytest.raises(TypeError):
        store.get_into("k", -5, 10)
    with pytest.raises(TypeError):
        store.batch_get_into("k", [1], [1])
    with pytest.raises(TypeError):
        store.put_parts("k", b"a", 5)
    with pytest.raises(TypeError):
        store.put("k", b"v", "not a config")


def test_bad_keys_and_buffers(store):
    assert store.put("", b"v") == INVALID_KEY
    assert store.put("k" * 5000, b"v") < 0  # over the master's max_key_bytes
    assert store.put("k" * 70000, b"v") == INVALID_KEY  # over the wire limit
    assert store.get("k" * 70000) == b""
    assert store.is_exist("") == INVALID_KEY
    assert store.register_buffer(0, 10) == INVALID_PARAMS
    b = Buf(16)
    assert store.register_buffer(b.ptr, 0) == INVALID_PARAMS
    assert store.put_from("unreg", b.ptr, 16) == INVALID_PARAMS
    assert store.put_from("unreg", 0, 16) == INVALID_PARAMS
    assert store.register_buffer(b.ptr, 16) == 0
    assert store.put_from("zero-size", b.ptr, 0) == INVALID_PARAMS
    assert store.put_from("over", b.ptr, 17) == INVALID_PARAMS
    assert store.batch_put_from(["a", "b"], [b.ptr], [16]) == [INVALID_PARAMS] * 2
    assert store.batch_put_from_multi_buffers(["a"], [[]], [[]]) == [INVALID_PARAMS]
    assert store.batch_get_into_multi_buffers(["a"], [[b.ptr]], [[16, 1]]) == [INVALID_PARAMS]
    c = ReplicateConfig()
    c.replica_num = 10 ** 6
    assert store.put("many-replicas", b"v", c) == INVALID_PARAMS
    assert store.unregister_buffer(b.ptr) == 0


def test_empty_batches(store):
    assert store.batch_is_exist([]) == []
    assert store.get_batch([]) == []
    assert store.batch_get_into([], [], []) == []
    assert store.batch_put_from([], [], []) == []
    assert store.put_batch([], []) == 0
    assert store.batch_remove([]) == []
