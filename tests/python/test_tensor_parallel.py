"""The _with_parallelism tensor family (ParallelAxis, TensorParallelism,
ReadTarget, writer_partition) against a real local cluster: where shards
are stored, shard reads, full reads gathered along split_dim, the _into and
_from forms, upserts and bad requests."""
import uuid

import pytest

from conftest import MooncakeDistributedStore, ReplicateConfig
from mooncake.store import ParallelAxis, ReadTarget, TensorParallelism

torch = pytest.importorskip("torch", reason="the tensor API needs python3-torch")

INVALID_PARAMS = -600
HEADER_BYTES = 304
has_upsert = pytest.mark.skipif(not hasattr(MooncakeDistributedStore, "upsert"),
                                reason="the binding has no upsert yet (branch pyops)")


def key(tag):
    return f"{tag}-{uuid.uuid4().hex}"


def tp(rank, size, split_dim=0):
    return TensorParallelism([ParallelAxis("tp", rank, size, split_dim)])


class Writer:
    """A writer_partition request (the reference reads rank, size, split_dim)."""

    def __init__(self, rank, size, split_dim):
        self.rank, self.size, self.split_dim = rank, size, split_dim


@pytest.fixture
def x():
    return torch.arange(4 * 6 * 2, dtype=torch.float32).reshape(4, 6, 2)


@pytest.fixture
def region(store):
    t = torch.zeros(1 << 16, dtype=torch.uint8)
    assert store.register_buffer(t.data_ptr(), t.numel()) == 0
    yield t
    assert store.unregister_buffer(t.data_ptr()) == 0


def test_no_parallelism_is_a_full_object(store, x):
    k = key("full")
    assert store.put_tensor_with_parallelism(k, x) == 0
    assert torch.equal(store.get_tensor(k), x)
    assert torch.equal(store.get_tensor_with_parallelism(k), x)
    assert torch.equal(store.get_tensor_with_parallelism(k, ReadTarget("as_stored")), x)
    assert torch.equal(store.get_tensor_with_parallelism(k, ReadTarget("full")), x)


def test_a_single_tp_axis_stores_every_shard_under_the_tp_keys(store, x):
    k = key("tp1")
    assert store.put_tensor_with_parallelism(k, x, tp(1, 3, 1)) == 0
    for rank, want in enumerate(torch.chunk(x, 3, dim=1)):
        assert torch.equal(store.get_tensor_with_tp(k, rank, 3, 1), want)
        got = store.get_tensor_with_parallelism(k, ReadTarget("shard", tp(rank, 3, 1)))
        assert torch.equal(got, want)
    # full: gathered from the shards along split_dim.
    assert torch.equal(store.get_tensor_with_parallelism(k, ReadTarget("full")), x)


def test_full_reads_gather_what_put_tensor_with_tp_stored(store, x):
    k = key("gather")
    assert store.put_tensor_with_tp(k, x, tp_size=2, split_dim=2) == 0
    assert torch.equal(store.get_tensor_with_parallelism(k, ReadTarget("full")), x)


def test_shard_reads_of_a_full_object_cut_the_shard(store, x):
    k = key("cut")
    assert store.put_tensor(k, x) == 0
    got = store.get_tensor_with_parallelism(k, ReadTarget("shard", tp(1, 2, 0)))
    assert torch.equal(got, x[2:])


def test_several_axes_store_the_tp_shards_under_suffixed_keys(store, x):
    k = key("mx")
    p = TensorParallelism([ParallelAxis("pp", 1, 2, stage_id=1), ParallelAxis("dp", 0, 2),
                           ParallelAxis("tp", 0, 2, 0)])
    assert store.put_tensor_with_parallelism(k, x, p) == 0
    # Keys in dp, tp, ep, pp order, one suffix per axis.
    names = [f"{k}__dp_0of2__tp_{r}of2_sd0__pp_1of2_sid1" for r in range(2)]
    assert store.batch_is_exist(names) == [1, 1]
    assert torch.equal(store.get_tensor_with_parallelism(k, ReadTarget("shard", p)), x[:2])
    assert torch.equal(store.get_tensor_with_parallelism(k, ReadTarget("full", p)), x)


def test_axes_without_tp_store_the_tensor_as_given(store, x):
    k = key("ep")
    p = TensorParallelism([ParallelAxis("ep", 3, 8, expert_id=3)])
    assert store.put_tensor_with_parallelism(k, x, p) == 0
    assert store.is_exist(f"{k}__ep_3of8_eid3") == 1
    assert torch.equal(store.get_tensor_with_parallelism(k, ReadTarget("as_stored", p)), x)


def test_writer_partitions_store_one_shard_each_and_read_back_whole(store, x):
    k = key("wp")
    for rank in range(2):
        assert store.put_tensor_with_parallelism(k, x, writer_partition=Writer(rank, 2, 0)) == 0
    assert store.batch_is_exist([f"{k}__writer_0of2_sd0", f"{k}__writer_1of2_sd0",
                                 f"{k}__writer_manifest"]) == [1, 1, 1]
    assert torch.equal(store.get_tensor_with_parallelism(k, ReadTarget("full")), x)
    got = store.get_tensor_with_parallelism(k, ReadTarget("shard", tp(1, 2, 0)))
    assert torch.equal(got, x[2:])


def test_batch_forms_give_one_result_per_key(store, x):
    keys = [key("b0"), key("b1"), key("b2")]
    ps = [None, tp(0, 2, 0), None]
    ws = [None, None, Writer(0, 1, 1)]
    assert store.batch_put_tensor_with_parallelism(keys, [x, x, x], ps, None, ws) == [0, 0, 0]
    got = store.batch_get_tensor_with_parallelism(keys, [None, ReadTarget("full"),
                                                         ReadTarget("full")])
    assert all(torch.equal(g, x) for g in got)
    assert store.batch_put_tensor_with_parallelism(keys[:2], [x]) == [INVALID_PARAMS] * 2
    assert store.batch_get_tensor_with_parallelism(keys, [None]) == [None] * 3


def test_into_forms_lay_the_object_out_in_the_callers_buffer(store, x, region):
    k = key("into")
    assert store.put_tensor_with_tp(k, x, tp_size=2, split_dim=0) == 0
    base = region.data_ptr()
    got = store.get_tensor_with_parallelism_into(k, base, 4096, ReadTarget("full"))
    assert torch.equal(got, x) and got.data_ptr() == base + HEADER_BYTES
    got = store.get_tensor_with_parallelism_into(k, base, 4096, ReadTarget("shard", tp(1, 2)))
    assert torch.equal(got, x[2:]) and got.data_ptr() == base + HEADER_BYTES
    assert store.get_tensor_with_parallelism_into(k, base, 200, ReadTarget("full")) is None
    got = store.batch_get_tensor_with_parallelism_into([k, key("no")], [base, base + 8192],
                                                       [4096, 4096], [ReadTarget("full"), None])
    assert torch.equal(got[0], x) and got[1] is None


def test_from_forms_write_a_registered_buffer(store, x, region):
    k = key("src")
    store.put_tensor(k, x)
    base = region.data_ptr()
    n = HEADER_BYTES + x.numel() * 4
    assert store.get_tensor_into(k, base, 4096) is not None
    k1, k2 = key("f1"), key("f2")
    assert store.put_tensor_with_parallelism_from(k1, base, n) == 0
    assert store.get(k1) == store.get(k)  # the buffer stored as is
    assert store.put_tensor_with_parallelism_from(k2, base, n, tp(0, 2, 1)) == 0
    assert torch.equal(store.get_tensor_with_tp(k2, 1, 2), x[:, 3:])
    keys = [key("bf"), key("bf")]
    assert store.batch_put_tensor_with_parallelism_from(keys, [base, base], [n, n],
                                                        [None, tp(0, 2, 0)]) == [0, 0]
    assert torch.equal(store.get_tensor_with_parallelism(keys[1], ReadTarget("full")), x)
    assert store.put_tensor_with_parallelism_from(key("s"), base, 16) == INVALID_PARAMS


def test_bad_requests_are_refused(store, x):
    k = key("bad")
    assert store.put_tensor_with_parallelism(k, x, tp(0, 2), writer_partition=Writer(0, 2, 0)) \
        == INVALID_PARAMS
    assert store.put_tensor_with_parallelism(k, x, tp(0, 5, 0)) == INVALID_PARAMS  # uneven
    assert store.put_tensor_with_parallelism(k, x, tp(2, 2, 0)) == INVALID_PARAMS  # rank
    p = TensorParallelism([ParallelAxis("zz", 0, 2)])
    assert store.put_tensor_with_parallelism(k, x, p) == INVALID_PARAMS
    p = TensorParallelism([ParallelAxis("tp", 0, 2, 0), ParallelAxis("tp", 1, 2, 0)])
    assert store.put_tensor_with_parallelism(k, x, p) == INVALID_PARAMS
    assert store.put_tensor_with_parallelism(k, x, object()) == INVALID_PARAMS
    assert store.put_tensor_with_parallelism(k, x, writer_partition=Writer(0, 2, 7)) \
        == INVALID_PARAMS
    assert store.put_tensor_with_parallelism(k, [1, 2]) == INVALID_PARAMS
    assert store.get_tensor_with_parallelism(k, ReadTarget("shard")) is None
    with pytest.raises(RuntimeError, match="mode"):
        ReadTarget("sideways")
    t = ReadTarget()
    t.mode = "FULL"
    assert t.mode == "full" and t.parallelism is None


@has_upsert
def test_upsert_forms_replace_every_shard(store, x):
    k = key("up")
    assert store.upsert_tensor_with_parallelism(k, x, tp(0, 2, 0)) == 0
    y = x * -1
    assert store.upsert_tensor_with_parallelism(k, y, tp(0, 2, 0), ReplicateConfig()) == 0
    assert torch.equal(store.get_tensor_with_parallelism(k, ReadTarget("full")), y)
    keys = [key("bu"), key("bu")]
    assert store.batch_upsert_tensor_with_parallelism(keys, [x, y]) == [0, 0]
    assert store.batch_upsert_tensor_with_parallelism(keys, [y, x]) == [0, 0]
    assert torch.equal(store.get_tensor(keys[0]), y) and torch.equal(store.get_tensor(keys[1]), x)


@has_upsert
def test_upsert_from_forms(store, x, region):
    k = key("src")
    store.put_tensor(k, x)
    base = region.data_ptr()
    n = HEADER_BYTES + x.numel() * 4
    store.get_tensor_into(k, base, 4096)
    k1 = key("uf")
    store.put_tensor(k1, x[:1].clone())
    assert store.upsert_tensor_with_parallelism_from(k1, base, n) == 0
    assert torch.equal(store.get_tensor(k1), x)
    assert store.batch_upsert_tensor_with_parallelism_from([k1], [base], [n], [tp(1, 2)]) == [0]
    assert torch.equal(store.get_tensor_with_tp(k1, 1, 2), x[2:])
