"""The tensor methods as MooncakeDistributedStore sees them: the reference's
names, parameter names, order and defaults, each a thin call into
tensor_api / tensor_parallel. ``attach(cls)`` adds them to the class
(mooncake.store does it at import; torch is imported on a method's first
call, so the import works without it). Listed in mooncake-python(3),
section TENSOR METHODS.
"""
import logging

from mooncake import tensor_api as api
from mooncake import tensor_format as tf
from mooncake import tensor_parallel as par

log = logging.getLogger("mooncake.store")


def _cfg(config):
    """A ReplicateConfig: None (the reference's documented default) is the default one."""
    return api._default_config() if config is None else config


# --- put / get ----------------------------------------------------------------

def put_tensor(self, key, tensor):
    return api.put_one(self, key, tensor, _cfg(None))


def get_tensor(self, key):
    return api.get_one(self, key)


def batch_put_tensor(self, keys, tensors_list):
    return api.put_many(self, keys, tensors_list, _cfg(None))


def batch_get_tensor(self, keys):
    return api.get_many(self, keys)


def pub_tensor(self, key, tensor, config=None):
    return api.put_one(self, key, tensor, _cfg(config))


def batch_pub_tensor(self, keys, tensors_list, config=None):
    return api.put_many(self, keys, tensors_list, _cfg(config))


# --- tensor parallelism (key_tp_<rank>) -------------------------------------------

def put_tensor_with_tp(self, key, tensor, tp_rank=0, tp_size=1, split_dim=0):
    return api.put_tp(self, key, tensor, _cfg(None), tp_size, split_dim)


def batch_put_tensor_with_tp(self, base_keys, tensors_list, tp_rank=0, tp_size=1, split_dim=0):
    return api.put_tp_many(self, base_keys, tensors_list, _cfg(None), tp_size, split_dim)


def pub_tensor_with_tp(self, key, tensor, config=None, tp_rank=0, tp_size=1, split_dim=0):
    return api.put_tp(self, key, tensor, _cfg(config), tp_size, split_dim)


def batch_pub_tensor_with_tp(self, base_keys, tensors_list, config=None, tp_rank=0, tp_size=1,
                             split_dim=0):
    return api.put_tp_many(self, base_keys, tensors_list, _cfg(config), tp_size, split_dim)


def _tp_key(key, tp_rank, tp_size):
    tf.torch()
    api._int_arg("tp_rank", tp_rank)
    api._int_arg("tp_size", tp_size)
    return key if tp_size <= 1 else tf.tp_key(key, tp_rank)


def get_tensor_with_tp(self, key, tp_rank=0, tp_size=1, split_dim=0):
    return api.get_one(self, _tp_key(key, tp_rank, tp_size))


def batch_get_tensor_with_tp(self, base_keys, tp_rank=0, tp_size=1):
    return api.get_many(self, [_tp_key(k, tp_rank, tp_size) for k in base_keys])


# --- zero copy: into caller buffers, from registered buffers --------------------

def get_tensor_into(self, key, buffer_ptr, size):
    return api.get_into_one(self, key, buffer_ptr, size)


def batch_get_tensor_into(self, keys, buffer_ptrs, sizes):
    return api.get_into_many(self, keys, buffer_ptrs, sizes)


def get_tensor_with_tp_into(self, key, buffer_ptr, size, tp_rank=0, tp_size=1, split_dim=0):
    return api.get_into_one(self, _tp_key(key, tp_rank, tp_size), buffer_ptr, size)


def batch_get_tensor_with_tp_into(self, base_keys, buffer_ptrs, sizes, tp_rank=0, tp_size=1):
    keys = [_tp_key(k, tp_rank, tp_size) for k in base_keys]
    return api.get_into_many(self, keys, buffer_ptrs, sizes)


def put_tensor_from(self, key, buffer_ptr, size):
    return api.put_from_one(self, key, buffer_ptr, size, _cfg(None))


def batch_put_tensor_from(self, keys, buffer_ptrs, sizes):
    return api.put_from_many(self, keys, buffer_ptrs, sizes, _cfg(None))


def put_tensor_with_tp_from(self, key, buffer_ptr, size, tp_rank=0, tp_size=1, split_dim=0):
    return api.put_tp_from_one(self, key, buffer_ptr, size, tp_size, split_dim)


def batch_put_tensor_with_tp_from(self, base_keys, buffer_ptrs, sizes, tp_rank=0, tp_size=1,
                                  split_dim=0):
    return api.put_tp_from_many(self, base_keys, buffer_ptrs, sizes, tp_size, split_dim)


def get_tensor_into_cuda(self, key, tensor):
    """The reference reads into CUDA tensors only through a dummy client's CUDA IPC."""
    tf.torch()
    log.error("get_tensor_into_cuda: CUDA IPC tensor reads need a dummy client; "
              "this build has neither (use get_tensor_into)")
    return api.INVALID_PARAMS


def batch_get_tensor_into_cuda(self, keys, tensors_list):
    tf.torch()
    log.error("batch_get_tensor_into_cuda: CUDA IPC tensor reads need a dummy client; "
              "this build has neither (use batch_get_tensor_into)")
    return [api.INVALID_PARAMS] * len(keys)


# --- upsert (replace) --------------------------------------------------------------

def upsert_tensor(self, key, tensor):
    return api.put_one(self, key, tensor, _cfg(None), upsert=True)


def batch_upsert_tensor(self, keys, tensors_list):
    return api.put_many(self, keys, tensors_list, _cfg(None), upsert=True)


def upsert_pub_tensor(self, key, tensor, config=None):
    return api.put_one(self, key, tensor, _cfg(config), upsert=True)


def batch_upsert_pub_tensor(self, keys, tensors_list, config=None):
    return api.put_many(self, keys, tensors_list, _cfg(config), upsert=True)


def upsert_tensor_from(self, key, buffer_ptr, size):
    return api.put_from_one(self, key, buffer_ptr, size, _cfg(None), upsert=True)


def batch_upsert_tensor_from(self, keys, buffer_ptrs, sizes):
    return api.put_from_many(self, keys, buffer_ptrs, sizes, _cfg(None), upsert=True)


# --- safetensors files -------------------------------------------------------------

def save_tensor_to_safetensor(self, key, file_name=None):
    return api.save_safetensor(self, key, file_name)


def load_tensor_from_safetensor(self, key=None, file_name=None):
    return api.load_safetensor(self, key, file_name)


# --- the unified parallelism family -------------------------------------------------

def put_tensor_with_parallelism(self, key, tensor, parallelism=None, config=None,
                                writer_partition=None):
    return par.write_tensor(self, key, tensor, parallelism, _cfg(config), writer_partition)


def batch_put_tensor_with_parallelism(self, keys, tensors_list, parallelisms=None, config=None,
                                      writer_partitions=None):
    return par.write_many(self, keys, tensors_list, parallelisms, _cfg(config), writer_partitions)


def upsert_tensor_with_parallelism(self, key, tensor, parallelism=None, config=None,
                                   writer_partition=None):
    return par.write_tensor(self, key, tensor, parallelism, _cfg(config), writer_partition,
                            upsert=True)


def batch_upsert_tensor_with_parallelism(self, keys, tensors_list, parallelisms=None,
                                         config=None, writer_partitions=None):
    return par.write_many(self, keys, tensors_list, parallelisms, _cfg(config), writer_partitions,
                          upsert=True)


def put_tensor_with_parallelism_from(self, key, buffer_ptr, size, parallelism=None, config=None,
                                     writer_partition=None):
    return par.write_tensor_from(self, key, buffer_ptr, size, parallelism, _cfg(config),
                                 writer_partition)


def batch_put_tensor_with_parallelism_from(self, keys, buffer_ptrs, sizes, parallelisms=None,
                                           config=None, writer_partitions=None):
    return par.write_many(self, keys, buffer_ptrs, parallelisms, _cfg(config), writer_partitions,
                          from_buffers=list(sizes))


def upsert_tensor_with_parallelism_from(self, key, buffer_ptr, size, parallelism=None,
                                        config=None, writer_partition=None):
    return par.write_tensor_from(self, key, buffer_ptr, size, parallelism, _cfg(config),
                                 writer_partition, upsert=True)


def batch_upsert_tensor_with_parallelism_from(self, keys, buffer_ptrs, sizes, parallelisms=None,
                                              config=None, writer_partitions=None):
    return par.write_many(self, keys, buffer_ptrs, parallelisms, _cfg(config), writer_partitions,
                          upsert=True, from_buffers=list(sizes))


def get_tensor_with_parallelism(self, key, target=None):
    return par.read_tensor(self, key, target)


def batch_get_tensor_with_parallelism(self, keys, targets=None):
    return par.read_many(self, keys, targets)


def get_tensor_with_parallelism_into(self, key, buffer_ptr, size, target=None):
    return par.read_tensor_into(self, key, buffer_ptr, size, target)


def batch_get_tensor_with_parallelism_into(self, keys, buffer_ptrs, sizes, targets=None):
    return par.read_many(self, keys, targets, list(buffer_ptrs), list(sizes))


METHODS = [name for name, f in list(globals().items())
           if callable(f) and not name.startswith("_") and "tensor" in name
           and getattr(f, "__module__", None) == __name__]


def attach(cls):
    """Add every tensor method to ``cls`` (the binding's MooncakeDistributedStore)."""
    for name in METHODS:
        setattr(cls, name, globals()[name])
    return cls


def _tensor_metadata_size():
    """Bytes of the header before a tensor's data (the reference's helper)."""
    return tf.METADATA_SIZE


def _serialize_tensor(tensor):
    """The reference's helper: ``(metadata, data_ptr, nbytes, owner)`` of a CPU
    tensor, where ``metadata`` is the header of its tensor object (bytes)
    and the object is ``metadata`` followed by the ``nbytes`` bytes at
    ``data_ptr``; ``owner`` (the contiguous tensor) must stay alive while
    they are read. ValueError for a tensor the reference's format cannot
    describe (not a CPU tensor, a quantized one, over 8 dimensions)."""
    if tf.is_tensor(tensor) and tensor.is_quantized:
        raise tf.TensorError("quantized tensors carry their scale between header and bytes; "
                             "_serialize_tensor gives the reference's header only")
    enc = tf.encode(tensor)
    return enc.header, enc.data_ptr, enc.nbytes, enc.owner


def _deserialize_tensor(payload):
    """The reference's helper: the tensor a whole tensor object's bytes hold
    (header then data, as get() returns a put_tensor object). The tensor
    owns a copy of the bytes. ValueError when they are not a tensor object."""
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise TypeError(f"_deserialize_tensor takes bytes, not {type(payload).__name__}")
    memory = bytearray(payload)
    header = tf.Header(memory, len(memory))
    return tf.decode(header, memory=memory)
