"""The ``_with_parallelism`` tensor family: writes and reads described by
parallel axes (the reference's ParallelAxis, TensorParallelism, ReadTarget
and writer_partition requests), over tensor_api.

Storage, as the reference lays it out:
- no parallelism: the full tensor under ``key``;
- a single TP axis: every TP shard of the full tensor under ``key_tp_<rank>``
  (the same objects as put_tensor_with_tp);
- several axes with a TP axis: every TP shard under ``key`` followed by one
  ``__<kind>_<rank>of<size>[_sd<d>][_eid<e>][_sid<s>]`` suffix per axis in
  dp, tp, ep, pp order;
- axes without TP: the tensor as given, under that suffixed key;
- writer_partition (rank, size, split_dim): this writer's shard of the full
  tensor under ``key__writer_<rank>of<size>_sd<d>`` and a manifest (dtype,
  global shape, split) under ``key__writer_manifest``.

A read target is ``as_stored`` (the object under the key, or under the
target's parallelism key), ``shard`` (the target's shard: the stored shard,
or cut from the full tensor) or ``full`` (the full object, or gathered from
its TP or writer shards with torch.cat along split_dim).
"""
import ctypes
import logging
import struct

from mooncake import tensor_api as api
from mooncake import tensor_format as tf
from mooncake.tensor_format import TensorError

log = logging.getLogger("mooncake.store")

_READ_MODES = ("as_stored", "shard", "full")
_AXIS_ORDER = ("dp", "tp", "ep", "pp")
# The writer manifest: magic, version, header_size, dtype, ndim, split_dim,
# shard_count, reserved (28 bytes, padded to 32), then the global shape.
_MANIFEST = struct.Struct("<IHHiiiii4x8q")
_MANIFEST_MAGIC = 0x574D414E
_ALREADY_EXISTS = -705


class ParallelAxis:
    """One parallel axis of a shard: kind ("tp", "dp", "ep", "pp"), rank, size."""

    def __init__(self, kind="", rank=0, size=1, split_dim=None, expert_id=None, stage_id=None):
        self.kind, self.rank, self.size = kind, rank, size
        self.split_dim, self.expert_id, self.stage_id = split_dim, expert_id, stage_id

    def __repr__(self):
        return (f"ParallelAxis(kind={self.kind!r}, rank={self.rank}, size={self.size}, "
                f"split_dim={self.split_dim}, expert_id={self.expert_id}, "
                f"stage_id={self.stage_id})")


class TensorParallelism:
    """The axes that identify one shard of a tensor."""

    def __init__(self, axes=None):
        self.axes = list(axes or [])

    def __repr__(self):
        return f"TensorParallelism(axes={self.axes!r})"


class ReadTarget:
    """What a read wants: ``as_stored``, a ``shard``, or the ``full`` tensor."""

    def __init__(self, mode="as_stored", parallelism=None):
        self.mode = mode
        self.parallelism = parallelism

    @property
    def mode(self):
        return self._mode

    @mode.setter
    def mode(self, value):
        m = str(value).lower()
        if m not in _READ_MODES:
            raise RuntimeError(f"Unsupported ReadTarget mode: {value!r} "
                               f"(one of {', '.join(_READ_MODES)})")
        self._mode = m

    def __repr__(self):
        return f"ReadTarget(mode={self.mode!r}, parallelism={self.parallelism!r})"


# --- requests ------------------------------------------------------------------

def _axes(parallelism):
    """Validated axes as dicts, in the caller's order."""
    if not hasattr(parallelism, "axes"):
        raise TensorError("parallelism must provide axes (a TensorParallelism)")
    out, kinds = [], set()
    for a in list(parallelism.axes):
        if not all(hasattr(a, f) for f in ("kind", "rank", "size")):
            raise TensorError("a ParallelAxis must provide kind, rank and size")
        kind = str(a.kind).lower()
        if kind not in tf.AXIS_KINDS or kind in kinds:
            raise TensorError(f"unsupported or repeated parallel axis kind {a.kind!r}")
        kinds.add(kind)
        axis = {"kind": kind, "rank": a.rank, "size": a.size,
                "split_dim": getattr(a, "split_dim", None),
                "expert_id": getattr(a, "expert_id", None),
                "stage_id": getattr(a, "stage_id", None)}
        for f in ("rank", "size"):
            api._int_arg(f"ParallelAxis.{f}", axis[f])
        if axis["size"] <= 0 or not 0 <= axis["rank"] < axis["size"]:
            raise TensorError(f"axis {kind}: rank {axis['rank']} outside 0..{axis['size'] - 1}")
        out.append(axis)
    if not out:
        raise TensorError("parallelism has no axes")
    if len(out) > tf.MAX_LAYOUT_AXES:
        raise TensorError(f"at most {tf.MAX_LAYOUT_AXES} parallel axes")
    return out


def _tp(axes):
    return next((a for a in axes if a["kind"] == "tp"), None)


def _key(base, axes):
    if len(axes) == 1 and axes[0]["kind"] == "tp":
        return tf.tp_key(base, axes[0]["rank"])
    key = base
    for a in sorted(axes, key=lambda a: _AXIS_ORDER.index(a["kind"])):
        key += f"__{a['kind']}_{a['rank']}of{a['size']}"
        for field, tag in (("split_dim", "sd"), ("expert_id", "eid"), ("stage_id", "sid")):
            if a[field] is not None:
                key += f"_{tag}{a[field]}"
    return key


def _with_rank(axes, tp_rank):
    return [dict(a, rank=tp_rank) if a["kind"] == "tp" else a for a in axes]


def _layout(axes, local_shape):
    out = []
    for a in axes:
        sd = -1 if a["split_dim"] is None else a["split_dim"]
        extent = local_shape[sd] if 0 <= sd < len(local_shape) else -1
        tag = a["expert_id"] if a["kind"] == "ep" else a["stage_id"] if a["kind"] == "pp" else None
        out.append((tf.AXIS_KINDS[a["kind"]], a["rank"], a["size"], sd, extent, tag or 0))
    return out


def _writer(writer_partition):
    if not all(hasattr(writer_partition, f) for f in ("rank", "size", "split_dim")):
        raise TensorError("writer_partition must provide rank, size and split_dim")
    w = {f: getattr(writer_partition, f) for f in ("rank", "size", "split_dim")}
    for f, v in w.items():
        api._int_arg(f"writer_partition.{f}", v)
    if w["size"] <= 0 or not 0 <= w["rank"] < w["size"] or w["split_dim"] < 0:
        raise TensorError(f"invalid writer partition {w}")
    return w


def _writer_key(base, rank, size, split_dim):
    return f"{base}__writer_{rank}of{size}_sd{split_dim}"


# --- writes --------------------------------------------------------------------

def _shard(tensor, split_dim, rank, size):
    tf.check_uniform_split(list(tensor.shape), split_dim, size)
    start, length = tf.shard_range(tensor.shape[split_dim], rank, size)
    return tensor.narrow(split_dim, start, length)


def _write_writer_shard(store, key, tensor, w, config, upsert):
    shard = _shard(tensor, w["split_dim"], w["rank"], w["size"])
    axis = (tf.AXIS_KINDS["tp"], w["rank"], w["size"], w["split_dim"], shard.shape[w["split_dim"]])
    enc = tf.encode(shard, list(tensor.shape), tf.LAYOUT_SHARD, [axis])
    rc = api._write(store, _writer_key(key, w["rank"], w["size"], w["split_dim"]), enc, config,
                    upsert)
    if rc != 0:
        return rc
    shape = list(tensor.shape)
    manifest = _MANIFEST.pack(_MANIFEST_MAGIC, 1, _MANIFEST.size, tf.dtype_code(tensor.dtype),
                              len(shape), w["split_dim"], w["size"], 0,
                              *(shape + [-1] * tf.MAX_TENSOR_DIMS)[:tf.MAX_TENSOR_DIMS])
    if upsert:
        return store.upsert(f"{key}__writer_manifest", manifest, config)
    rc = store.put(f"{key}__writer_manifest", manifest, config)
    # Every writer of the tensor puts the same manifest; the first one stays.
    return 0 if rc == _ALREADY_EXISTS else rc


def write_tensor(store, key, tensor, parallelism, config, writer_partition, upsert=False):
    """One write of the family; 0 or a negative code."""
    tf.torch()
    try:
        if not tf.is_tensor(tensor):
            raise TensorError(f"expected a torch.Tensor, got {type(tensor).__name__}")
        if writer_partition is not None:
            if parallelism is not None:
                raise TensorError("writer_partition cannot be combined with parallelism")
            return _write_writer_shard(store, key, tensor, _writer(writer_partition), config,
                                       upsert)
        if parallelism is None:
            return api.put_one(store, key, tensor, config, upsert)
        axes = _axes(parallelism)
        tp = _tp(axes)
        if tp is None:
            enc = tf.encode(tensor, None, tf.LAYOUT_SHARD, _layout(axes, list(tensor.shape)))
            return api._write(store, _key(key, axes), enc, config, upsert)
        split_dim = 0 if tp["split_dim"] is None else tp["split_dim"]
        tp = dict(tp, split_dim=split_dim)
        axes = [tp if a["kind"] == "tp" else a for a in axes]
        for rank in range(tp["size"]):
            shard = _shard(tensor, split_dim, rank, tp["size"])
            shard_axes = _with_rank(axes, rank)
            enc = tf.encode(shard, list(tensor.shape), tf.LAYOUT_SHARD,
                            _layout(shard_axes, list(shard.shape)))
            rc = api._write(store, _key(key, shard_axes), enc, config, upsert)
            if rc != 0:
                return rc
        return 0
    except TensorError as e:
        log.error("tensor write with parallelism of %r: %s", key, e)
        return api.INVALID_PARAMS


def write_tensor_from(store, key, buffer_ptr, size, parallelism, config, writer_partition,
                      upsert=False):
    tf.torch()
    if parallelism is None and writer_partition is None:
        return api.put_from_one(store, key, buffer_ptr, size, config, upsert)
    try:
        tensor = api.tensor_in_buffer(buffer_ptr, size, "tensor write with parallelism from")
    except TensorError as e:
        log.error("tensor write with parallelism from of %r: %s", key, e)
        return api.INVALID_PARAMS
    return write_tensor(store, key, tensor, parallelism, config, writer_partition, upsert)


def _requests(name, requests, n):
    if requests is None:
        return [None] * n
    requests = list(requests)
    if len(requests) != n:
        raise TensorError(f"keys and {name} must have the same length")
    return requests


def write_many(store, keys, items, parallelisms, config, writer_partitions, upsert=False,
               from_buffers=None):
    tf.torch()
    keys, items = list(keys), list(items)
    try:
        if len(items) != len(keys):
            raise TensorError("keys and tensors differ in length")
        ps = _requests("parallelisms", parallelisms, len(keys))
        ws = _requests("writer_partitions", writer_partitions, len(keys))
        if from_buffers is not None and len(from_buffers) != len(keys):
            raise TensorError("keys, buffer_ptrs and sizes differ in length")
    except TensorError as e:
        log.error("batch tensor write with parallelism: %s", e)
        return [api.INVALID_PARAMS] * len(keys)
    if from_buffers is not None:
        return [write_tensor_from(store, k, p, n, par, config, w, upsert)
                for k, p, n, par, w in zip(keys, items, from_buffers, ps, ws)]
    return [write_tensor(store, k, t, par, config, w, upsert)
            for k, t, par, w in zip(keys, items, ps, ws)]


# --- reads ---------------------------------------------------------------------

def _gather(store, keys):
    """The full tensor from its shards (each header says where it belongs)."""
    parts = api.get_many(store, keys) if keys else []
    if not parts or any(p is None for p in parts):
        return None
    head = store.get_buffer(keys[0])
    header = tf.Header(bytes(memoryview(head)[:api._HEAD_BYTES]), len(head))
    tp = header.tp_axis()
    split_dim = tp[3] if tp else 0
    full = tf.torch().cat(parts, dim=split_dim)
    if list(full.shape) != header.global_shape:
        raise TensorError(f"shards of {keys[0]} do not make the global shape "
                          f"{header.global_shape}")
    return full


def _gather_tp(store, key, axes):
    """Gather TP shards. With several axes the target's TP axis names the
    keys; otherwise key_tp_<r>, the count taken from rank 0's header."""
    tp = _tp(axes)
    if tp is not None and len(axes) > 1:
        return _gather(store, [_key(key, _with_rank(axes, r)) for r in range(tp["size"])])
    handle = store.get_buffer(tf.tp_key(key, 0))
    if handle is None:
        return None
    header = tf.Header(bytes(memoryview(handle)[:api._HEAD_BYTES]), len(handle))
    stored = header.tp_axis()
    count = stored[2] if stored else 1
    return _gather(store, [tf.tp_key(key, r) for r in range(count)])


def _gather_writers(store, key):
    handle = store.get_buffer(f"{key}__writer_manifest")
    if handle is None or len(handle) < _MANIFEST.size:
        return None
    fields = _MANIFEST.unpack_from(bytes(memoryview(handle)[:_MANIFEST.size]))
    magic, _v, _hs, _dtype, ndim, split_dim, count = fields[:7]
    if magic != _MANIFEST_MAGIC or not 0 <= split_dim < ndim or count <= 0:
        raise TensorError(f"corrupt writer manifest for {key}")
    return _gather(store, [_writer_key(key, r, count, split_dim) for r in range(count)])


def _full(store, key, axes):
    tensor = api.get_one(store, key)
    if tensor is None:
        tensor = _gather_tp(store, key, axes)
    if tensor is None:
        tensor = _gather_writers(store, key)
    return tensor


def read_tensor(store, key, target):
    """The tensor a ReadTarget asks for, or None."""
    tf.torch()
    try:
        mode = "as_stored" if target is None else ReadTarget(target.mode).mode
        par = None if target is None else getattr(target, "parallelism", None)
        axes = _axes(par) if par is not None else []
        if mode == "full":
            return _full(store, key, axes)
        if not axes:
            if mode == "shard":
                raise TensorError("a shard read needs the target's parallelism")
            return api.get_one(store, key)
        tensor = api.get_one(store, _key(key, axes))
        if tensor is not None or mode == "as_stored":
            return tensor
        tp = _tp(axes)
        if tp is None:
            return None
        w = _writer_key(key, tp["rank"], tp["size"], tp["split_dim"] or 0)
        tensor = api.get_one(store, w) if len(axes) == 1 else None
        if tensor is not None:
            return tensor
        full = _full(store, key, [])
        if full is None:
            return None
        return _shard(full, tp["split_dim"] or 0, tp["rank"], tp["size"]).contiguous()
    except TensorError as e:
        log.error("tensor read with parallelism of %r: %s", key, e)
        return None


def read_tensor_into(store, key, buffer_ptr, size, target):
    """As read_tensor, the object laid out in the caller's buffer."""
    tf.torch()
    api._int_arg("buffer_ptr", buffer_ptr)
    api._int_arg("size", size)
    mode = "as_stored" if target is None else str(target.mode).lower()
    if mode == "as_stored" and getattr(target, "parallelism", None) is None:
        return api.get_into_one(store, key, buffer_ptr, size)
    tensor = read_tensor(store, key, target)
    if tensor is None:
        return None
    try:
        enc = tf.encode(tensor)
    except TensorError as e:
        log.error("tensor read with parallelism into of %r: %s", key, e)
        return None
    total = len(enc.header) + enc.nbytes
    if total > size:
        log.error("tensor %r needs %d bytes, the buffer has %d (BUFFER_OVERFLOW)", key, total, size)
        return None
    ctypes.memmove(buffer_ptr, enc.header, len(enc.header))
    if enc.nbytes:
        ctypes.memmove(buffer_ptr + len(enc.header), enc.data_ptr, enc.nbytes)
    return api.tensor_at(buffer_ptr, total, key)


def read_many(store, keys, targets, buffer_ptrs=None, sizes=None):
    tf.torch()
    keys = list(keys)
    try:
        ts = _requests("targets", targets, len(keys))
        if buffer_ptrs is not None and not len(keys) == len(buffer_ptrs) == len(sizes):
            raise TensorError("keys, buffer_ptrs and sizes differ in length")
    except TensorError as e:
        log.error("batch tensor read with parallelism: %s", e)
        return [None] * len(keys)
    if buffer_ptrs is None:
        return [read_tensor(store, k, t) for k, t in zip(keys, ts)]
    return [read_tensor_into(store, k, p, n, t)
            for k, p, n, t in zip(keys, buffer_ptrs, sizes, ts)]
