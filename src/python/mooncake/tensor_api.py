"""The tensor methods of MooncakeDistributedStore (torch tensors, CPU).

Written in Python over the byte methods of the binding (put_parts, get_buffer,
get_into, put_from, batch_put_from, batch_get_into, and upsert_parts /
upsert / upsert_from / batch_upsert_from for the upsert family), with the
reference Mooncake Store's names, keyword names, defaults and return
conventions: a write returns 0 or a negative code (a list of them, one per
key, in batch calls); a read returns a tensor, or None on a miss or a bad
object. Wrong arguments are logged and returned as INVALID_PARAMS (-600) as
the reference does; without torch every call raises ImportError naming
python3-torch. The object format is in tensor_format.py; the
``_with_parallelism`` family in tensor_parallel.py.

Zero copy: put_tensor hands the tensor's own memory to the store (after
``contiguous()``, which copies only a non-contiguous tensor); get_tensor
returns a tensor over the fetched buffer; the ``_into`` forms return a
tensor over the caller's buffer (at buffer_ptr + 304) and the ``_from``
forms store the caller's registered buffer as is.
"""
import ctypes
import logging

from mooncake import safetensors_io
from mooncake import tensor_format as tf
from mooncake.tensor_format import TensorError

log = logging.getLogger("mooncake.store")

INVALID_PARAMS = -600
FILE_NOT_FOUND = -1100
# Enough of an object's head to parse its header (and quantized parameters).
_HEAD_BYTES = tf.METADATA_SIZE + 64


def _int_arg(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def _default_config():
    from mooncake._store import ReplicateConfig
    return ReplicateConfig()


# --- writing -----------------------------------------------------------------

def _write(store, key, enc, config, upsert):
    """Store one encoded tensor; the store reads the tensor's own memory."""
    if not upsert:
        return store.put_parts(key, *enc.parts(), config=config)
    if hasattr(store, "upsert_parts"):
        return store.upsert_parts(key, *enc.parts(), config=config)
    return store.upsert(key, enc.joined(), config)


def _tp_shards(tensor, tp_size, split_dim):
    """The uniform TP shards of ``tensor`` with their headers, rank order."""
    if not tf.is_tensor(tensor):
        raise TensorError(f"expected a torch.Tensor, got {type(tensor).__name__}")
    shape = list(tensor.shape)
    tf.check_uniform_split(shape, split_dim, tp_size)
    shards = []
    for rank in range(tp_size):
        start, length = tf.shard_range(shape[split_dim], rank, tp_size)
        chunk = tensor.narrow(split_dim, start, length)
        axis = (tf.AXIS_KINDS["tp"], rank, tp_size, split_dim, length)
        shards.append(tf.encode(chunk, shape, tf.LAYOUT_SHARD, [axis]))
    return shards


def put_one(store, key, tensor, config, upsert=False):
    tf.torch()
    try:
        enc = tf.encode(tensor)
    except TensorError as e:
        log.error("%s of %r: %s", "upsert_tensor" if upsert else "put_tensor", key, e)
        return INVALID_PARAMS
    return _write(store, key, enc, config, upsert)


def put_many(store, keys, tensors, config, upsert=False):
    tf.torch()
    keys, tensors = list(keys), list(tensors)
    if len(keys) != len(tensors):
        log.error("batch tensor write: %d keys but %d tensors", len(keys), len(tensors))
        return [INVALID_PARAMS] * len(keys)
    return [put_one(store, k, t, config, upsert) for k, t in zip(keys, tensors)]


def put_tp(store, key, tensor, config, tp_size, split_dim, upsert=False):
    """Every TP shard of ``tensor`` under key_tp_<rank>; first failure's code."""
    tf.torch()
    _int_arg("tp_size", tp_size)
    if tp_size <= 1:
        return put_one(store, key, tensor, config, upsert)
    try:
        shards = _tp_shards(tensor, tp_size, split_dim)
    except TensorError as e:
        log.error("tensor write with tp of %r: %s", key, e)
        return INVALID_PARAMS
    for rank, enc in enumerate(shards):
        rc = _write(store, tf.tp_key(key, rank), enc, config, upsert)
        if rc != 0:
            return rc
    return 0


def put_tp_many(store, base_keys, tensors, config, tp_size, split_dim, upsert=False):
    tf.torch()
    base_keys, tensors = list(base_keys), list(tensors)
    if len(base_keys) != len(tensors):
        log.error("batch tensor write with tp: %d keys but %d tensors", len(base_keys), len(tensors))
        return [INVALID_PARAMS] * len(base_keys)
    return [put_tp(store, k, t, config, tp_size, split_dim, upsert)
            for k, t in zip(base_keys, tensors)]


# --- reading -----------------------------------------------------------------

def tensor_of_handle(handle, key=""):
    """The tensor in a get_buffer handle (a view of it), or None."""
    if handle is None:
        return None
    try:
        mem = memoryview(handle)
        header = tf.Header(bytes(mem[:_HEAD_BYTES]), len(mem))
        return tf.decode(header, memory=handle)
    except TensorError as e:
        log.error("object %r is not a readable tensor: %s", key, e)
        return None


def tensor_at(address, length, key=""):
    """The tensor in caller memory [address, address + length), or None."""
    if length < 0:
        log.error("get of tensor %r failed with code %d", key, length)
        return None
    try:
        header = tf.Header(ctypes.string_at(address, min(length, _HEAD_BYTES)), length)
        return tf.decode(header, address=address)
    except TensorError as e:
        log.error("object %r is not a readable tensor: %s", key, e)
        return None


def get_one(store, key):
    tf.torch()
    return tensor_of_handle(store.get_buffer(key), key)


def get_many(store, keys):
    tf.torch()
    keys = list(keys)
    return [tensor_of_handle(h, k) for h, k in zip(store.batch_get_buffer(keys), keys)]


def get_into_one(store, key, buffer_ptr, size):
    tf.torch()
    _int_arg("buffer_ptr", buffer_ptr)
    _int_arg("size", size)
    return tensor_at(buffer_ptr, store.get_into(key, buffer_ptr, size), key)


def get_into_many(store, keys, buffer_ptrs, sizes):
    tf.torch()
    keys, buffer_ptrs, sizes = list(keys), list(buffer_ptrs), list(sizes)
    if not len(keys) == len(buffer_ptrs) == len(sizes):
        log.error("batch_get_tensor_into: keys, buffer_ptrs and sizes differ in length")
        return [INVALID_PARAMS] * len(keys)
    lengths = store.batch_get_into(keys, buffer_ptrs, sizes)
    return [tensor_at(p, n, k) for k, p, n in zip(keys, buffer_ptrs, lengths)]


# --- writing from caller buffers ([header][data], registered) ------------------

def check_object_buffer(buffer_ptr, size, what):
    """Refuse a buffer that does not hold one whole tensor object."""
    _int_arg("buffer_ptr", buffer_ptr)
    _int_arg("size", size)
    if buffer_ptr == 0:
        raise TensorError(f"{what}: buffer_ptr is null")
    if size < tf.METADATA_SIZE:
        raise TensorError(f"{what}: {size} bytes is too small for a tensor header "
                          f"({tf.METADATA_SIZE} bytes)")
    return tf.Header(ctypes.string_at(buffer_ptr, min(size, _HEAD_BYTES)), size)


def put_from_one(store, key, buffer_ptr, size, config, upsert=False):
    tf.torch()
    what = "upsert_tensor_from" if upsert else "put_tensor_from"
    try:
        check_object_buffer(buffer_ptr, size, what)
    except TensorError as e:
        log.error("%s of %r: %s", what, key, e)
        return INVALID_PARAMS
    if upsert:
        return store.upsert_from(key, buffer_ptr, size, config)
    return store.put_from(key, buffer_ptr, size, config)


def put_from_many(store, keys, buffer_ptrs, sizes, config, upsert=False):
    tf.torch()
    what = "batch_upsert_tensor_from" if upsert else "batch_put_tensor_from"
    keys, buffer_ptrs, sizes = list(keys), list(buffer_ptrs), list(sizes)
    if not keys:
        return []
    if not len(keys) == len(buffer_ptrs) == len(sizes):
        log.error("%s: keys, buffer_ptrs and sizes differ in length", what)
        return [INVALID_PARAMS] * len(keys)
    try:
        for p, n in zip(buffer_ptrs, sizes):
            check_object_buffer(p, n, what)
    except TensorError as e:
        log.error("%s: %s", what, e)
        return [INVALID_PARAMS] * len(keys)
    if not upsert:
        return store.batch_put_from(keys, buffer_ptrs, sizes, config)
    if hasattr(store, "batch_upsert_from"):
        return store.batch_upsert_from(keys, buffer_ptrs, sizes, config)
    return [store.upsert_from(k, p, n, config) for k, p, n in zip(keys, buffer_ptrs, sizes)]


def tensor_in_buffer(buffer_ptr, size, what):
    """The full tensor held by a caller buffer (a view of it)."""
    header = check_object_buffer(buffer_ptr, size, what)
    return tf.decode(header, address=buffer_ptr)


def put_tp_from_one(store, key, buffer_ptr, size, tp_size, split_dim):
    tf.torch()
    _int_arg("tp_size", tp_size)
    if tp_size <= 1:
        return put_from_one(store, key, buffer_ptr, size, _default_config())
    try:
        tensor = tensor_in_buffer(buffer_ptr, size, "put_tensor_with_tp_from")
    except TensorError as e:
        log.error("put_tensor_with_tp_from of %r: %s", key, e)
        return INVALID_PARAMS
    return put_tp(store, key, tensor, _default_config(), tp_size, split_dim)


def put_tp_from_many(store, base_keys, buffer_ptrs, sizes, tp_size, split_dim):
    tf.torch()
    _int_arg("tp_size", tp_size)
    if tp_size <= 1:
        return put_from_many(store, base_keys, buffer_ptrs, sizes, _default_config())
    base_keys, buffer_ptrs, sizes = list(base_keys), list(buffer_ptrs), list(sizes)
    if not len(base_keys) == len(buffer_ptrs) == len(sizes):
        log.error("batch_put_tensor_with_tp_from: keys, buffer_ptrs and sizes differ in length")
        return [INVALID_PARAMS] * len(base_keys)
    return [put_tp_from_one(store, k, p, n, tp_size, split_dim)
            for k, p, n in zip(base_keys, buffer_ptrs, sizes)]


# --- safetensors files ---------------------------------------------------------

def save_safetensor(store, key, file_name):
    tensor = get_one(store, key)
    if tensor is None:
        log.error("save_tensor_to_safetensor: no tensor under %r", key)
        return FILE_NOT_FOUND
    try:
        safetensors_io.save({key: tensor}, key if file_name is None else file_name)
    except (OSError, TensorError) as e:
        log.error("save_tensor_to_safetensor of %r: %s", key, e)
        return INVALID_PARAMS
    return 0


def load_safetensor(store, key, file_name):
    tf.torch()
    if file_name is None:
        raise TypeError("load_tensor_from_safetensor() missing required argument 'file_name'")
    try:
        loaded = safetensors_io.load(file_name)
    except (OSError, TensorError) as e:
        log.error("load_tensor_from_safetensor of %s: %s", file_name, e)
        return None
    if not loaded:
        log.error("load_tensor_from_safetensor: no tensors in %s", file_name)
        return None
    target = file_name if key is None else key
    name = next(iter(loaded))
    if key is not None and key in loaded:
        name = key
    elif key is not None:
        log.warning("key %r not in %s; storing its first tensor %r", key, file_name, name)
    tensor = loaded[name]
    rc = put_one(store, target, tensor, _default_config())
    if rc != 0:
        log.error("load_tensor_from_safetensor: storing %r failed with %d", target, rc)
        return None
    return tensor
