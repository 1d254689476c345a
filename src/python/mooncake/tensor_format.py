"""The bytes of a tensor object in the store, and the shard arithmetic.

A tensor is stored as one object: a 304-byte header (the reference Mooncake
Store's TensorMetadata, little-endian, same field order and sizes) followed
by the tensor's bytes in row-major order. The header says the dtype, the
local shape (the bytes that follow), the global shape and, for a shard, the
parallel axes it belongs to. Objects written here with the reference's
fifteen dtypes are readable by the reference and the other way round; the
dtypes torch 1.13 has and the reference does not (complex, quantized) use
codes from 64 up, which only this module reads (mooncake-python(3)).

torch is imported on first use, never at import time, so ``import
mooncake.store`` works without it; a tensor call then raises ImportError
naming the Debian package.
"""
import ctypes
import functools
import struct

TORCH_PACKAGE = "python3-torch"

TENSOR_OBJECT_MAGIC = 0x4D4F4F4E
TENSOR_OBJECT_VERSION = 1
MAX_TENSOR_DIMS = 8
MAX_LAYOUT_AXES = 4
LAYOUT_FULL, LAYOUT_SHARD = 0, 1
AXIS_KINDS = {"dp": 0, "tp": 1, "ep": 2, "pp": 3}
AXIS_NAMES = {v: k for k, v in AXIS_KINDS.items()}

# Header: magic u32, version u16, header_size u16, dtype i32, ndim i32,
# layout_kind u32, reserved_flags u32, data_offset u64, data_bytes u64.
_HEADER = struct.Struct("<IHHiiIIQQ")
_SHAPE = struct.Struct("<8q")
_AXIS_COUNT = struct.Struct("<II")
# Axis: kind, axis_index, shard_rank, shard_count, split_dim, reserved0 (i32),
# reserved1 (i64: the local extent along split_dim).
_AXIS = struct.Struct("<iiiiiiq")
METADATA_SIZE = _HEADER.size + 2 * _SHAPE.size + _AXIS_COUNT.size + MAX_LAYOUT_AXES * _AXIS.size
assert METADATA_SIZE == 304

# (code, torch attribute name). 0..14 are the reference's codes; 64.. are
# ours. A name torch 1.13 lacks (uint16, float8_*) is skipped at lookup.
_DTYPE_CODES = (
    (0, "float32"), (1, "float64"), (2, "int8"), (3, "uint8"), (4, "int16"),
    (5, "uint16"), (6, "int32"), (7, "uint32"), (8, "int64"), (9, "uint64"),
    (10, "bool"), (11, "float16"), (12, "bfloat16"), (13, "float8_e4m3fn"),
    (14, "float8_e5m2"),
    (64, "complex32"), (65, "complex64"), (66, "complex128"),
    (67, "quint8"), (68, "qint8"), (69, "qint32"), (70, "quint4x2"), (71, "quint2x4"),
)
# Quantized dtypes (per-tensor affine): the integer representation (packed,
# row-major, for the sub-byte ones), with scale and zero point (f64, i64)
# between the header and the bytes (data_offset says where).
# name -> (integer dtype, values per byte; 1 means one value per element).
_QUANT = {"quint8": ("uint8", 1), "qint8": ("int8", 1), "qint32": ("int32", 1),
          "quint4x2": ("uint8", 2), "quint2x4": ("uint8", 4)}
_QPARAMS = struct.Struct("<dq")

_torch = None


class TensorError(ValueError):
    """An argument the tensor API cannot store or a stored object it cannot read."""


def torch():
    """The torch module, imported on first use."""
    global _torch
    if _torch is None:
        try:
            import torch as t
        except ImportError as e:
            raise ImportError(
                "the mooncake.store tensor methods need PyTorch: install the Debian "
                f"package {TORCH_PACKAGE} (apt-get install {TORCH_PACKAGE}); "
                "the byte methods work without it") from e
        _torch = t
    return _torch


@functools.lru_cache(maxsize=None)
def _dtype_tables():
    t = torch()
    by_dtype, by_code = {}, {}
    for code, name in _DTYPE_CODES:
        dt = getattr(t, name, None)
        if isinstance(dt, t.dtype):
            by_dtype[dt] = code
            by_code[code] = dt
    return by_dtype, by_code


def dtype_code(dtype):
    by_dtype, _ = _dtype_tables()
    if dtype not in by_dtype:
        raise TensorError(f"unsupported tensor dtype {dtype}")
    return by_dtype[dtype]


def code_dtype(code):
    _, by_code = _dtype_tables()
    if code not in by_code:
        raise TensorError(f"stored tensor has dtype code {code}, unknown to this torch")
    return by_code[code]


def is_tensor(obj):
    return isinstance(obj, torch().Tensor)


class Encoded:
    """A tensor ready to store: its header bytes and its contiguous bytes.

    ``owner`` keeps the contiguous copy (if one was made) alive while the
    store reads ``data_ptr``.
    """

    def __init__(self, header, owner, data_ptr, nbytes):
        self.header, self.owner, self.data_ptr, self.nbytes = header, owner, data_ptr, nbytes

    def data_view(self):
        """The tensor's bytes as a buffer-protocol object, without a copy."""
        return (ctypes.c_char * self.nbytes).from_address(self.data_ptr)

    def parts(self):
        return [self.header] + ([self.data_view()] if self.nbytes else [])

    def joined(self):
        return self.header + (ctypes.string_at(self.data_ptr, self.nbytes) if self.nbytes else b"")


def pack_header(code, global_shape, local_shape, nbytes, layout=LAYOUT_FULL, axes=(), extra=b""):
    """The header bytes; ``axes`` are (kind, rank, count, split_dim, extent)."""
    if len(global_shape) > MAX_TENSOR_DIMS:
        raise TensorError(f"a tensor has at most {MAX_TENSOR_DIMS} dimensions, "
                          f"this one has {len(global_shape)}")
    if len(axes) > MAX_LAYOUT_AXES:
        raise TensorError(f"at most {MAX_LAYOUT_AXES} parallel axes")
    data_offset = METADATA_SIZE + len(extra)
    pad = [-1] * MAX_TENSOR_DIMS
    out = [_HEADER.pack(TENSOR_OBJECT_MAGIC, TENSOR_OBJECT_VERSION, METADATA_SIZE, code,
                        len(global_shape), layout, 0, data_offset, nbytes),
           _SHAPE.pack(*(list(global_shape) + pad)[:MAX_TENSOR_DIMS]),
           _SHAPE.pack(*(list(local_shape) + pad)[:MAX_TENSOR_DIMS]),
           _AXIS_COUNT.pack(len(axes), 0)]
    for i in range(MAX_LAYOUT_AXES):
        if i < len(axes):
            kind, rank, count, split_dim, extent, tag = (tuple(axes[i]) + (0,))[:6]
            out.append(_AXIS.pack(kind, i, rank, count, split_dim, tag, extent))
        else:
            out.append(bytes(_AXIS.size))
    return b"".join(out) + extra


class Header:
    """A parsed, validated header."""

    def __init__(self, raw, total_length):
        if total_length < METADATA_SIZE or len(raw) < METADATA_SIZE:
            raise TensorError(f"{total_length} bytes: too short for a tensor header "
                              f"({METADATA_SIZE} bytes)")
        (magic, version, header_size, self.code, self.ndim, self.layout, _flags,
         self.data_offset, self.data_bytes) = _HEADER.unpack_from(raw, 0)
        if magic != TENSOR_OBJECT_MAGIC or version != TENSOR_OBJECT_VERSION \
                or header_size != METADATA_SIZE:
            raise TensorError("not a tensor object (bad magic, version or header size)")
        if not 0 <= self.ndim <= MAX_TENSOR_DIMS or self.layout not in (LAYOUT_FULL, LAYOUT_SHARD):
            raise TensorError("corrupt tensor header (ndim or layout)")
        off = _HEADER.size
        self.global_shape = list(_SHAPE.unpack_from(raw, off))[:self.ndim]
        self.local_shape = list(_SHAPE.unpack_from(raw, off + _SHAPE.size))[:self.ndim]
        off += 2 * _SHAPE.size
        count, _ = _AXIS_COUNT.unpack_from(raw, off)
        off += _AXIS_COUNT.size
        if count > MAX_LAYOUT_AXES:
            raise TensorError("corrupt tensor header (axis count)")
        self.axes = []
        for i in range(count):
            kind, _idx, rank, shards, split_dim, tag, extent = _AXIS.unpack_from(
                raw, off + i * _AXIS.size)
            self.axes.append((kind, rank, shards, split_dim, extent, tag))
        if not METADATA_SIZE <= self.data_offset <= total_length \
                or self.data_bytes != total_length - self.data_offset:
            raise TensorError(f"tensor header says {self.data_bytes} bytes at offset "
                              f"{self.data_offset}, the object has {total_length}")
        if any(d < 0 for d in self.local_shape + self.global_shape):
            raise TensorError("corrupt tensor header (negative dimension)")
        self.dtype = code_dtype(self.code)
        self.qparams = None
        if quant_repr(self.dtype) is not None:
            if self.data_offset < METADATA_SIZE + _QPARAMS.size or len(raw) < self.data_offset:
                raise TensorError("quantized tensor object without its scale and zero point")
            self.qparams = _QPARAMS.unpack_from(raw, METADATA_SIZE)
        if payload_bytes(self.dtype, self.local_shape) != self.data_bytes:
            raise TensorError("tensor header: shape and dtype do not match the byte count")

    def tp_axis(self):
        for axis in self.axes:
            if axis[0] == AXIS_KINDS["tp"]:
                return axis
        return None



def _quant(dtype):
    return _QUANT.get(str(dtype).replace("torch.", ""))


def quant_repr(dtype):
    """The integer dtype holding a quantized dtype's values, or None."""
    q = _quant(dtype)
    return getattr(torch(), q[0]) if q else None


@functools.lru_cache(maxsize=None)
def element_size(dtype):
    return torch().empty((), dtype=quant_repr(dtype) or dtype).element_size()


def payload_bytes(dtype, shape):
    """Bytes of a contiguous tensor of ``dtype`` and ``shape``."""
    numel = 1
    for d in shape:
        numel *= d
    per_byte = (_quant(dtype) or (None, 1))[1]
    if per_byte > 1:
        return (numel + per_byte - 1) // per_byte
    return numel * element_size(dtype)


def encode(tensor, global_shape=None, layout=LAYOUT_FULL, axes=()):
    """Header and bytes of ``tensor`` (made contiguous first, as the reference does)."""
    t = torch()
    if not is_tensor(tensor):
        raise TensorError(f"expected a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise TensorError(f"only CPU tensors are supported, this one is on {tensor.device}")
    code = dtype_code(tensor.dtype)
    extra = b""
    if tensor.is_quantized:
        if tensor.qscheme() not in (t.per_tensor_affine, t.per_tensor_symmetric):
            raise TensorError(f"quantized tensors with {tensor.qscheme()} are not supported "
                              "(per-tensor affine only)")
        extra = _QPARAMS.pack(float(tensor.q_scale()), int(tensor.q_zero_point()))
        try:
            owner = tensor.contiguous().int_repr().contiguous()
        except RuntimeError as e:
            raise TensorError(f"cannot lay out this {tensor.dtype} tensor: {e}") from e
    else:
        owner = tensor.contiguous()
    nbytes = owner.numel() * owner.element_size()
    assert nbytes == payload_bytes(tensor.dtype, tensor.shape)
    shape = list(tensor.shape)
    header = pack_header(code, shape if global_shape is None else global_shape, shape, nbytes,
                         layout, axes, extra)
    return Encoded(header, owner, owner.data_ptr(), nbytes)


def decode(header, memory=None, address=None):
    """The tensor described by ``header`` over its bytes, without a copy.

    ``memory`` is a buffer-protocol object holding the whole object (the
    tensor keeps it alive); ``address`` is caller memory holding it (the
    caller keeps it alive, as with the reference's get_tensor_into).
    """
    t = torch()
    if header.qparams is not None:
        return _decode_quantized(header, memory, address)
    dtype = header.dtype
    if header.data_bytes == 0:
        flat = t.empty(header.local_shape, dtype=dtype)
    else:
        if memory is None:
            memory = (ctypes.c_ubyte * header.data_bytes).from_address(address + header.data_offset)
            offset = 0
        else:
            offset = header.data_offset
        flat = t.frombuffer(memory, dtype=t.uint8, count=header.data_bytes, offset=offset)
        if dtype != t.uint8:
            flat = flat.view(dtype)
        flat = flat.reshape(header.local_shape)
    return flat


def _decode_quantized(header, memory, address):
    """A quantized tensor: torch builds it only in its own memory, so a copy."""
    scale, zero_point = header.qparams
    out = torch()._empty_affine_quantized(header.local_shape, scale=scale, zero_point=zero_point,
                                          dtype=header.dtype)
    if header.data_bytes:
        if memory is not None:
            src = (ctypes.c_ubyte * len(memory)).from_buffer(memory)
            address = ctypes.addressof(src)
        ctypes.memmove(out.data_ptr(), address + header.data_offset, header.data_bytes)
    return out


def shard_range(dim_size, rank, count):
    """Start and length of shard ``rank`` of ``count`` along a dimension."""
    start = dim_size * rank // count
    return start, dim_size * (rank + 1) // count - start


def check_uniform_split(shape, split_dim, count):
    if not isinstance(split_dim, int) or not 0 <= split_dim < len(shape):
        raise TensorError(f"split_dim {split_dim} is out of range for a {len(shape)}-d tensor")
    if not isinstance(count, int) or count <= 0:
        raise TensorError(f"the shard count must be positive, got {count}")
    if shape[split_dim] % count:
        raise TensorError(f"dimension {split_dim} ({shape[split_dim]}) does not split evenly "
                          f"into {count} shards (only uniform sharding is supported)")


def tp_key(base_key, rank):
    """The reference's key of TP shard ``rank``."""
    return f"{base_key}_tp_{rank}"
