"""The tensor methods of mooncake.store (torch CPU tensors) against a real
local cluster: every dtype and shape bit for bit, tensor-parallel split,
zero copy into and from registered buffers, safetensors files, bad input,
and the module without torch. The _with_parallelism family is in
test_tensor_parallel.py."""
import ctypes
import inspect
import json
import os
import struct
import subprocess
import sys
import uuid

import pytest

from conftest import MooncakeDistributedStore, ReplicateConfig, setup_args

torch = pytest.importorskip("torch", reason="the tensor API needs python3-torch")

INVALID_PARAMS = -600
FILE_NOT_FOUND = -1100
HEADER_BYTES = 304
ALL_DTYPES = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)
SHAPES = [(), (0,), (3, 0, 2), (7,), (2, 3, 5), (1,) * 8, (2,) * 8]
has_upsert = pytest.mark.skipif(not hasattr(MooncakeDistributedStore, "upsert"),
                                reason="the binding has no upsert yet (branch pyops)")


def key(tag):
    return f"{tag}-{uuid.uuid4().hex}"


def raw(t):
    """A tensor's bytes in row-major order (the integer values when quantized)."""
    c = t.contiguous()
    if c.is_quantized:
        c = c.int_repr().contiguous()
    return ctypes.string_at(c.data_ptr(), c.numel() * c.element_size())


def same(a, b):
    if a is None or b is None or a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_quantized and (a.q_scale(), a.q_zero_point()) != (b.q_scale(), b.q_zero_point()):
        return False
    return raw(a) == raw(b)


def sample(dtype, shape, gen):
    """A tensor of any dtype whose bytes are random (NaN payloads included)."""
    if str(dtype).startswith("torch.q"):
        return torch.quantize_per_tensor(torch.rand(shape, generator=gen) * 4, 0.05, 2, dtype)
    t = torch.empty(shape, dtype=dtype)
    n = t.numel() * t.element_size()
    if dtype == torch.bool:
        t.copy_(torch.randint(0, 2, shape, generator=gen).bool())
    elif n:
        noise = torch.randint(0, 256, (n,), dtype=torch.uint8, generator=gen)
        ctypes.memmove(t.data_ptr(), noise.data_ptr(), n)
    return t


@pytest.fixture
def gen():
    g = torch.Generator()
    g.manual_seed(int(os.environ.get("MC_SEED", "1")))
    return g


class Region:
    """A registered buffer made of a torch uint8 tensor."""

    def __init__(self, store, size):
        self.store, self.t = store, torch.zeros(size, dtype=torch.uint8)
        self.ptr, self.size = self.t.data_ptr(), size
        assert store.register_buffer(self.ptr, size) == 0

    def close(self):
        assert self.store.unregister_buffer(self.ptr) == 0


@pytest.fixture
def region(store):
    r = Region(store, 1 << 20)
    yield r
    r.close()


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_every_dtype_and_shape_round_trips_bit_for_bit(store, gen):
    for dtype in ALL_DTYPES:
        for shape in SHAPES:
            x = sample(dtype, shape, gen)
            k = key("dt")
            assert store.put_tensor(k, x) == 0, (dtype, shape)
            y = store.get_tensor(k)
            assert same(x, y), (dtype, shape, x, y)
    assert len(ALL_DTYPES) >= 15  # every dtype torch has, complex and quantized included


def test_batch_put_and_get_tensor_give_one_result_per_key(store, gen):
    xs = [sample(d, (4, 3), gen) for d in (torch.float32, torch.bfloat16, torch.int64, torch.bool)]
    keys = [key("b") for _ in xs]
    assert store.batch_put_tensor(keys, xs) == [0] * len(xs)
    got = store.batch_get_tensor(keys + [key("missing")])
    assert all(same(a, b) for a, b in zip(xs, got)) and got[-1] is None
    assert store.batch_put_tensor(keys[:2], xs[:1]) == [INVALID_PARAMS] * 2
    assert store.batch_put_tensor([key("x"), key("y")], [xs[0], "not a tensor"]) == [0, INVALID_PARAMS]


def test_non_contiguous_tensors_round_trip_by_value(store, gen):
    base = sample(torch.float64, (6, 8), gen)
    views = [base.t(), base[::2, 1::3], base[:, 2], base.unsqueeze(0).expand(3, 6, 8),
             torch.tensor(3.5, dtype=torch.float64).expand(4, 4)]
    for v in views:
        assert not v.is_contiguous()
        k = key("nc")
        assert store.put_tensor(k, v) == 0
        got = store.get_tensor(k)
        assert got.is_contiguous() and same(v.contiguous(), got)


def test_reads_of_missing_or_foreign_objects_give_none(store):
    assert store.get_tensor(key("missing")) is None
    k = key("bytes")
    assert store.put(k, b"x" * 400) == 0
    assert store.get_tensor(k) is None  # not a tensor object: no magic
    assert store.batch_get_tensor([k]) == [None]


def test_bad_tensors_are_refused_with_invalid_params(store):
    assert store.put_tensor(key("s"), "not a tensor") == INVALID_PARAMS
    assert store.put_tensor(key("n"), None) == INVALID_PARAMS
    assert store.put_tensor(key("9d"), torch.zeros((1,) * 9)) == INVALID_PARAMS
    chan = torch.quantize_per_channel(torch.rand(2, 3), torch.tensor([0.1, 0.2]),
                                      torch.tensor([0, 1]), 0, torch.quint8)
    assert store.put_tensor(key("pc"), chan) == INVALID_PARAMS
    with pytest.raises(TypeError):
        store.get_tensor_into(key("t"), "0x10", 100)


def test_pub_tensor_takes_a_replicate_config(store, gen):
    x = sample(torch.float16, (5, 5), gen)
    c = ReplicateConfig()
    c.replica_num = 1
    k1, k2 = key("pub"), key("pub")
    assert store.pub_tensor(k1, x, c) == 0 and store.pub_tensor(k2, x, config=None) == 0
    assert same(store.get_tensor(k1), x) and same(store.get_tensor(k2), x)
    assert store.batch_pub_tensor([key("bp"), key("bp")], [x, x], c) == [0, 0]


@pytest.mark.parametrize("split_dim,tp_size", [(0, 2), (1, 3), (2, 4), (1, 1)])
def test_put_tensor_with_tp_stores_each_rank_split_along_split_dim(store, gen, split_dim, tp_size):
    x = sample(torch.float32, (4, 6, 8), gen)
    k = key("tp")
    assert store.put_tensor_with_tp(k, x, tp_size=tp_size, split_dim=split_dim) == 0
    want = torch.chunk(x, tp_size, dim=split_dim)
    for rank in range(tp_size):
        got = store.get_tensor_with_tp(k, tp_rank=rank, tp_size=tp_size, split_dim=split_dim)
        assert same(want[rank].contiguous(), got)
    if tp_size > 1:
        assert store.batch_is_exist([f"{k}_tp_{r}" for r in range(tp_size)]) == [1] * tp_size
        assert store.is_exist(k) == 0
    else:
        assert store.is_exist(k) == 1  # tp_size 1 is a plain put under the key


def test_uneven_or_out_of_range_tp_splits_write_nothing(store):
    x = torch.arange(30.0).reshape(5, 6)
    k = key("uneven")
    assert store.put_tensor_with_tp(k, x, tp_size=2, split_dim=0) == INVALID_PARAMS
    assert store.put_tensor_with_tp(k, x, tp_size=2, split_dim=2) == INVALID_PARAMS
    assert store.put_tensor_with_tp(k, x, tp_size=2, split_dim=-1) == INVALID_PARAMS
    assert store.batch_is_exist([f"{k}_tp_0", f"{k}_tp_1"]) == [0, 0]


def test_batch_and_pub_tp_forms(store, gen):
    xs = [sample(torch.int32, (4, 4), gen), sample(torch.bfloat16, (8, 2), gen)]
    keys = [key("btp"), key("btp")]
    assert store.batch_put_tensor_with_tp(keys, xs, tp_size=2, split_dim=0) == [0, 0]
    for rank in range(2):
        got = store.batch_get_tensor_with_tp(keys, tp_rank=rank, tp_size=2)
        assert all(same(torch.chunk(x, 2)[rank].contiguous(), g) for x, g in zip(xs, got))
    c = ReplicateConfig()
    k = key("ptp")
    assert store.pub_tensor_with_tp(k, xs[0], c, tp_size=4, split_dim=1) == 0
    assert same(store.get_tensor_with_tp(k, 3, 4, 1), xs[0][:, 3:].contiguous())
    assert store.batch_pub_tensor_with_tp([key("bptp")], [xs[1]], c, 0, 2, 0) == [0]
    bad = store.batch_put_tensor_with_tp([key("bad"), key("ok")], [torch.zeros(3), xs[0]],
                                         tp_size=2, split_dim=0)
    assert bad == [INVALID_PARAMS, 0]


def test_get_tensor_into_returns_a_view_of_the_callers_buffer(store, region, gen):
    x = sample(torch.float32, (16, 16), gen)
    k = key("into")
    assert store.put_tensor(k, x) == 0
    got = store.get_tensor_into(k, region.ptr, region.size)
    assert same(x, got)
    assert got.data_ptr() == region.ptr + HEADER_BYTES  # zero copy: the tensor is the buffer
    region.t[HEADER_BYTES:HEADER_BYTES + 4] = torch.tensor([0, 0, 0x80, 0x3F], dtype=torch.uint8)
    assert got[0, 0].item() == 1.0  # a write to the buffer shows in the tensor
    # Too small a buffer: None, never an overrun.
    assert store.get_tensor_into(k, region.ptr, HEADER_BYTES + 100) is None
    assert store.get_tensor_into(key("missing"), region.ptr, region.size) is None


def test_batch_get_tensor_into_and_the_tp_forms(store, region, gen):
    xs = [sample(torch.float64, (4, 6), gen), sample(torch.uint8, (3,), gen)]
    keys = [key("bi"), key("bi")]
    assert store.batch_put_tensor(keys, xs) == [0, 0]
    ptrs = [region.ptr, region.ptr + 4096]
    got = store.batch_get_tensor_into(keys + [key("no")], ptrs + [region.ptr + 8192], [4096] * 3)
    assert same(xs[0], got[0]) and same(xs[1], got[1]) and got[2] is None
    assert [g.data_ptr() for g in got[:2]] == [p + HEADER_BYTES for p in ptrs]
    assert store.batch_get_tensor_into(keys, ptrs[:1], [4096]) == [INVALID_PARAMS] * 2
    k = key("tpi")
    assert store.put_tensor_with_tp(k, xs[0], tp_size=2, split_dim=1) == 0
    got = store.get_tensor_with_tp_into(k, region.ptr, 4096, tp_rank=1, tp_size=2, split_dim=1)
    assert same(xs[0][:, 3:].contiguous(), got) and got.data_ptr() == region.ptr + HEADER_BYTES
    got = store.batch_get_tensor_with_tp_into([k], [region.ptr + 4096], [4096], 0, 2)
    assert same(xs[0][:, :3].contiguous(), got[0])


def test_put_tensor_from_stores_a_registered_buffer_as_is(store, region, gen):
    x = sample(torch.int16, (10, 10), gen)
    k = key("src")
    assert store.put_tensor(k, x) == 0
    n = HEADER_BYTES + 200
    assert store.get_tensor_into(k, region.ptr, region.size) is not None
    k2 = key("from")
    assert store.put_tensor_from(k2, region.ptr, n) == 0
    assert same(store.get_tensor(k2), x)
    assert store.get(k2) == store.get(k)  # the same object bytes, header included
    region.t[n:2 * n] = region.t[:n]
    k3, k4 = key("bf"), key("bf")
    assert store.batch_put_tensor_from([k3, k4], [region.ptr, region.ptr + n], [n, n]) == [0, 0]
    assert same(store.get_tensor(k4), x)
    assert store.batch_put_tensor_from([], [], []) == []


def test_put_tensor_from_refuses_bad_buffers(store, region, gen):
    x = sample(torch.float32, (8,), gen)
    k = key("src")
    store.put_tensor(k, x)
    store.get_tensor_into(k, region.ptr, region.size)
    n = HEADER_BYTES + 32
    assert store.put_tensor_from(key("small"), region.ptr, 100) == INVALID_PARAMS
    assert store.put_tensor_from(key("null"), 0, n) == INVALID_PARAMS
    assert store.put_tensor_from(key("short"), region.ptr, n - 4) == INVALID_PARAMS
    garbage = torch.zeros(n, dtype=torch.uint8)
    assert store.put_tensor_from(key("garbage"), garbage.data_ptr(), n) == INVALID_PARAMS
    unregistered = region.t[:n].clone()
    assert store.put_tensor_from(key("unreg"), unregistered.data_ptr(), n) == INVALID_PARAMS
    assert store.batch_put_tensor_from([key("a"), key("b")], [region.ptr, 0], [n, n]) \
        == [INVALID_PARAMS] * 2
    assert store.batch_put_tensor_from([key("a")], [region.ptr, region.ptr], [n]) \
        == [INVALID_PARAMS]


def test_put_tensor_with_tp_from_splits_a_buffer_held_tensor(store, region, gen):
    x = sample(torch.float32, (6, 4), gen)
    k = key("src")
    store.put_tensor(k, x)
    store.get_tensor_into(k, region.ptr, region.size)
    n = HEADER_BYTES + 96
    k2 = key("tpf")
    assert store.put_tensor_with_tp_from(k2, region.ptr, n, tp_size=3, split_dim=0) == 0
    assert same(store.get_tensor_with_tp(k2, 2, 3), x[4:].contiguous())
    k3 = key("btpf")
    assert store.batch_put_tensor_with_tp_from([k3], [region.ptr], [n], 0, 2, 1) == [0]
    assert same(store.get_tensor_with_tp(k3, 1, 2), x[:, 2:].contiguous())
    assert store.put_tensor_with_tp_from(key("x"), region.ptr, 10, tp_size=2) == INVALID_PARAMS


def test_safetensors_files_round_trip(store, gen, tmp_path, monkeypatch):
    x = sample(torch.bfloat16, (3, 4), gen)
    k = key("st")
    assert store.put_tensor(k, x) == 0
    path = tmp_path / "one.safetensors"
    assert store.save_tensor_to_safetensor(k, str(path)) == 0
    data = path.read_bytes()
    (n,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8:8 + n])
    assert header[k] == {"dtype": "BF16", "shape": [3, 4], "data_offsets": [0, 24]}
    assert data[8 + n:] == raw(x)
    k2 = key("loaded")
    got = store.load_tensor_from_safetensor(k2, str(path))  # k2 not in the file: first entry
    assert same(got, x) and same(store.get_tensor(k2), x)
    got = store.load_tensor_from_safetensor(file_name=str(path))
    assert same(got, x) and same(store.get_tensor(str(path)), x)
    monkeypatch.chdir(tmp_path)
    assert store.save_tensor_to_safetensor(k) == 0 and os.path.exists(tmp_path / k)
    assert store.save_tensor_to_safetensor(key("missing"), str(path)) == FILE_NOT_FOUND
    assert store.load_tensor_from_safetensor(k, str(tmp_path / "nope")) is None
    (tmp_path / "bad").write_bytes(b"\xff" * 16)
    assert store.load_tensor_from_safetensor(k, str(tmp_path / "bad")) is None


@has_upsert
def test_upsert_tensor_replaces_the_stored_tensor(store, gen):
    k = key("up")
    a, b = sample(torch.float32, (4,), gen), sample(torch.int8, (2, 2), gen)
    assert store.upsert_tensor(k, a) == 0 and same(store.get_tensor(k), a)
    assert store.upsert_tensor(k, b) == 0 and same(store.get_tensor(k), b)
    keys = [k, key("up")]
    assert store.batch_upsert_tensor(keys, [a, b]) == [0, 0]
    assert same(store.get_tensor(keys[0]), a) and same(store.get_tensor(keys[1]), b)
    assert store.upsert_pub_tensor(k, b, ReplicateConfig()) == 0 and same(store.get_tensor(k), b)
    assert store.batch_upsert_pub_tensor(keys, [b, a]) == [0, 0]
    assert same(store.get_tensor(keys[1]), a)
    assert store.upsert_tensor(k, "nope") == INVALID_PARAMS


@has_upsert
def test_upsert_tensor_from_replaces_from_a_registered_buffer(store, region, gen):
    a, b = sample(torch.float32, (8,), gen), sample(torch.float32, (8,), gen)
    ka, k = key("a"), key("upf")
    store.put_tensor(ka, a)
    store.put_tensor(k, b)
    store.get_tensor_into(ka, region.ptr, region.size)
    n = HEADER_BYTES + 32
    assert store.upsert_tensor_from(k, region.ptr, n) == 0 and same(store.get_tensor(k), a)
    assert store.batch_upsert_tensor_from([k, key("n")], [region.ptr] * 2, [n] * 2) == [0, 0]
    assert store.upsert_tensor_from(k, region.ptr, 10) == INVALID_PARAMS


def test_cuda_forms_say_unsupported(store):
    assert store.get_tensor_into_cuda(key("c"), torch.zeros(2)) == INVALID_PARAMS
    assert store.batch_get_tensor_into_cuda([key("c")], [torch.zeros(2)]) == [INVALID_PARAMS]


# The reference's signatures (v0.3.12.post1 store_py.cpp): name -> parameters.
REFERENCE_SIGNATURES = {
    "put_tensor": "key, tensor", "get_tensor": "key",
    "batch_put_tensor": "keys, tensors_list", "batch_get_tensor": "keys",
    "pub_tensor": "key, tensor, config", "batch_pub_tensor": "keys, tensors_list, config",
    "put_tensor_with_tp": "key, tensor, tp_rank=0, tp_size=1, split_dim=0",
    "batch_put_tensor_with_tp": "base_keys, tensors_list, tp_rank=0, tp_size=1, split_dim=0",
    "pub_tensor_with_tp": "key, tensor, config, tp_rank=0, tp_size=1, split_dim=0",
    "batch_pub_tensor_with_tp":
        "base_keys, tensors_list, config, tp_rank=0, tp_size=1, split_dim=0",
    "get_tensor_with_tp": "key, tp_rank=0, tp_size=1, split_dim=0",
    "batch_get_tensor_with_tp": "base_keys, tp_rank=0, tp_size=1",
    "get_tensor_into": "key, buffer_ptr, size",
    "batch_get_tensor_into": "keys, buffer_ptrs, sizes",
    "get_tensor_with_tp_into": "key, buffer_ptr, size, tp_rank=0, tp_size=1, split_dim=0",
    "batch_get_tensor_with_tp_into": "base_keys, buffer_ptrs, sizes, tp_rank=0, tp_size=1",
    "put_tensor_from": "key, buffer_ptr, size",
    "batch_put_tensor_from": "keys, buffer_ptrs, sizes",
    "put_tensor_with_tp_from": "key, buffer_ptr, size, tp_rank=0, tp_size=1, split_dim=0",
    "batch_put_tensor_with_tp_from":
        "base_keys, buffer_ptrs, sizes, tp_rank=0, tp_size=1, split_dim=0",
    "upsert_tensor": "key, tensor", "batch_upsert_tensor": "keys, tensors_list",
    "upsert_pub_tensor": "key, tensor, config",
    "batch_upsert_pub_tensor": "keys, tensors_list, config",
    "upsert_tensor_from": "key, buffer_ptr, size",
    "batch_upsert_tensor_from": "keys, buffer_ptrs, sizes",
    "save_tensor_to_safetensor": "key, file_name=None",
    "load_tensor_from_safetensor": "key=None, file_name",
    "get_tensor_into_cuda": "key, tensor", "batch_get_tensor_into_cuda": "keys, tensors_list",
    "put_tensor_with_parallelism":
        "key, tensor, parallelism=None, config, writer_partition=None",
    "batch_put_tensor_with_parallelism":
        "keys, tensors_list, parallelisms=None, config, writer_partitions=None",
    "upsert_tensor_with_parallelism":
        "key, tensor, parallelism=None, config, writer_partition=None",
    "batch_upsert_tensor_with_parallelism":
        "keys, tensors_list, parallelisms=None, config, writer_partitions=None",
    "put_tensor_with_parallelism_from":
        "key, buffer_ptr, size, parallelism=None, config, writer_partition=None",
    "batch_put_tensor_with_parallelism_from":
        "keys, buffer_ptrs, sizes, parallelisms=None, config, writer_partitions=None",
    "upsert_tensor_with_parallelism_from":
        "key, buffer_ptr, size, parallelism=None, config, writer_partition=None",
    "batch_upsert_tensor_with_parallelism_from":
        "keys, buffer_ptrs, sizes, parallelisms=None, config, writer_partitions=None",
    "get_tensor_with_parallelism": "key, target=None",
    "batch_get_tensor_with_parallelism": "keys, targets=None",
    "get_tensor_with_parallelism_into": "key, buffer_ptr, size, target=None",
    "batch_get_tensor_with_parallelism_into": "keys, buffer_ptrs, sizes, targets=None",
}


def test_every_reference_tensor_method_has_its_names_and_defaults():
    for name, want in REFERENCE_SIGNATURES.items():
        params = list(inspect.signature(getattr(MooncakeDistributedStore, name)).parameters.values())
        got = []
        for p in params[1:]:
            # config's default is a fresh ReplicateConfig in the reference; None here means that.
            shown = p.name if p.name == "config" or p.default is inspect.Parameter.empty \
                else f"{p.name}={p.default!r}"
            got.append(shown)
        # load_tensor_from_safetensor's file_name is required (None is refused at call time).
        got_text = ", ".join(got).replace("file_name=None", "file_name") \
            if name == "load_tensor_from_safetensor" else ", ".join(got)
        assert got_text == want, name


def test_import_works_without_torch_and_tensor_calls_name_the_package(cluster):
    # A meta-path finder that refuses torch, as on a machine without python3-torch.
    script = f"""
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError("No module named 'torch'", name=name)
sys.meta_path.insert(0, NoTorch())
import mooncake.store as ms
s = ms.MooncakeDistributedStore()
assert s.setup(*{setup_args(cluster)!r}) == 0
assert s.put("no-torch-{uuid.uuid4().hex}", b"bytes still work") == 0
ms.ReadTarget("full"); ms.TensorParallelism([ms.ParallelAxis("tp", 0, 2, 0)])
for call in (lambda: s.put_tensor("k", None), lambda: s.get_tensor("k"),
             lambda: s.get_tensor_into("k", 1, 1), lambda: s.batch_put_tensor([], []),
             lambda: s.get_tensor_with_parallelism("k")):
    try:
        call()
    except ImportError as e:
        assert "python3-torch" in str(e), e
    else:
        raise SystemExit("no ImportError")
assert "torch" not in sys.modules
s.close()
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, env=os.environ.copy())
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@has_upsert
def test_readers_racing_upsert_tensor_see_one_whole_tensor(store, cluster):
    # Two tensors that differ in every byte; a torn read would mix them.
    k = key("race")
    versions = [torch.full((64, 1024), float(v)) for v in (1, 2)]
    assert store.upsert_tensor(k, versions[0]) == 0
    reader = MooncakeDistributedStore()
    assert reader.setup(*setup_args(cluster)) == 0
    seen, errors, done = set(), [], []

    def read():
        while not done:
            t = reader.get_tensor(k)
            if t is None:
                errors.append("miss")
                return
            values = set(t.unique().tolist())
            if len(values) != 1:
                errors.append(values)
                return
            seen.update(values)

    import threading
    threads = [threading.Thread(target=read) for _ in range(2)]
    for th in threads:
        th.start()
    try:
        for i in range(40):
            assert store.upsert_tensor(k, versions[i % 2]) == 0
    finally:
        done.append(True)
        for th in threads:
            th.join(timeout=60)
        reader.close()
    assert not errors and seen <= {1.0, 2.0} and seen


# ---- the reference's module-level codec helpers ----------------------------

@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_serialize_tensor_gives_the_object_put_tensor_stores(store, gen):
    """_serialize_tensor's header plus the bytes at data_ptr are the very
    object put_tensor writes, and _deserialize_tensor reads such bytes back
    (the reference's structured object store relies on both)."""
    import mooncake.store as ms
    assert ms._tensor_metadata_size() == HEADER_BYTES
    for dtype in ALL_DTYPES:
        if str(dtype).startswith("torch.q"):
            continue
        for shape in [(), (0,), (7,), (2, 3, 5)]:
            x = sample(dtype, shape, gen)
            metadata, data_ptr, nbytes, owner = ms._serialize_tensor(x)
            assert isinstance(metadata, bytes) and len(metadata) == HEADER_BYTES, dtype
            assert nbytes == len(raw(x)) and owner is not None
            payload = metadata + (ctypes.string_at(data_ptr, nbytes) if nbytes else b"")
            k = key("ser")
            assert store.put_tensor(k, x) == 0
            assert store.get(k) == payload, (dtype, shape)
            y = ms._deserialize_tensor(payload)
            assert same(x, y), (dtype, shape)
            assert same(x, ms._deserialize_tensor(bytearray(payload)))
    # The copy is the tensor's own: the payload may go.
    x = torch.arange(12, dtype=torch.int64).reshape(3, 4)
    metadata, data_ptr, nbytes, _owner = ms._serialize_tensor(x)
    payload = bytearray(metadata + ctypes.string_at(data_ptr, nbytes))
    y = ms._deserialize_tensor(payload)
    payload[:] = bytes(len(payload))
    assert torch.equal(y, x)
    # Non-contiguous: the bytes of its contiguous copy, which `owner` holds.
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6).t()
    metadata, data_ptr, nbytes, owner = ms._serialize_tensor(t)
    assert data_ptr == owner.data_ptr() and owner.is_contiguous()
    assert torch.equal(ms._deserialize_tensor(metadata + ctypes.string_at(data_ptr, nbytes)), t)


def test_tensor_codec_helpers_refuse_what_they_cannot_describe():
    import mooncake.store as ms
    for bad in ["tensor", 3, None]:
        with pytest.raises(ValueError, match="expected a torch.Tensor"):
            ms._serialize_tensor(bad)
    q = torch.quantize_per_tensor(torch.rand(4), 0.1, 0, torch.quint8)
    with pytest.raises(ValueError, match="quantized"):
        ms._serialize_tensor(q)
    metadata, data_ptr, nbytes, _ = ms._serialize_tensor(torch.ones(3))
    good = metadata + ctypes.string_at(data_ptr, nbytes)
    for bad in [b"", b"x" * 400, good[:-1], good + b"\0", metadata[:100]]:
        with pytest.raises(ValueError):
            ms._deserialize_tensor(bad)
    with pytest.raises(TypeError):
        ms._deserialize_tensor("not bytes")
