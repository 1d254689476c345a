"""Read and write safetensors files (the format of huggingface/safetensors).

Debian 12 has no python3-safetensors, so the two calls the tensor API needs
are written here from the format's specification: an 8-byte little-endian
header length, a JSON header mapping each name to its dtype, shape and
[begin, end) byte offsets (plus an optional "__metadata__" map of strings),
padded with spaces to a multiple of 8, then the tensors' bytes, row-major,
little-endian. Files are read and written whole.
"""
import ctypes
import json
import os
import struct

from mooncake import tensor_format as tf
from mooncake.tensor_format import TensorError

# safetensors dtype name -> torch attribute name.
_NAMES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16",
    "F16": "float16", "BF16": "bfloat16", "I32": "int32", "U32": "uint32", "F32": "float32",
    "F64": "float64", "I64": "int64", "U64": "uint64", "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2", "C64": "complex64",
}
# A header larger than this is refused rather than read (the format's own limit).
MAX_HEADER_BYTES = 100 << 20


def _by_dtype():
    t = tf.torch()
    return {getattr(t, v): k for k, v in _NAMES.items() if isinstance(getattr(t, v, None), t.dtype)}


def save(tensors, path):
    """Write ``{name: tensor}`` to ``path``; TensorError for a dtype the format lacks."""
    names = _by_dtype()
    header, blobs, offset = {}, [], 0
    for name, tensor in tensors.items():
        if tensor.dtype not in names or tensor.is_quantized:
            raise TensorError(f"safetensors has no dtype for {tensor.dtype}")
        c = tensor.contiguous()
        n = c.numel() * c.element_size()
        blobs.append(ctypes.string_at(c.data_ptr(), n) if n else b"")
        header[name] = {"dtype": names[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def load(path):
    """``{name: tensor}`` from ``path``, in file order; TensorError when malformed."""
    t = tf.torch()
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise TensorError(f"{path}: not a safetensors file (shorter than 8 bytes)")
    (n,) = struct.unpack_from("<Q", data)
    if n > MAX_HEADER_BYTES or 8 + n > len(data):
        raise TensorError(f"{path}: header length {n} does not fit the file")
    try:
        header = json.loads(data[8:8 + n])
    except ValueError as e:
        raise TensorError(f"{path}: header is not JSON ({e})") from e
    body = bytearray(data[8 + n:])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = getattr(t, _NAMES.get(info.get("dtype"), ""), None)
        begin, end = info.get("data_offsets", (0, -1))
        shape = info.get("shape", [])
        if not isinstance(dtype, t.dtype) or not 0 <= begin <= end <= len(body):
            raise TensorError(f"{path}: entry {name!r} has a bad dtype or offsets")
        numel = 1
        for d in shape:
            numel *= d
        if numel * tf.element_size(dtype) != end - begin:
            raise TensorError(f"{path}: entry {name!r}: shape {shape} does not match its bytes")
        if end == begin:
            out[name] = t.empty(shape, dtype=dtype)
            continue
        flat = t.frombuffer(body, dtype=t.uint8, count=end - begin, offset=begin).clone()
        out[name] = flat.view(dtype).reshape(shape) if dtype != t.uint8 else flat.reshape(shape)
    return out
