# Reading and writing safetensors files (Rota's checkpoint format) with NumPy only.
"""A safetensors file is `u64 little-endian N | N bytes of JSON header | data`; the header maps
each tensor name to dtype, shape and byte range, and `__metadata__` holds strings. Rota adds
`format: rota`, `format_version: 1` and `data_crc32c` (CRC-32C of the data section, 8 hex
digits), which `read` checks and `write` fills in. No third-party package is needed.
"""
import json
import os
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64,
           "F16": np.float16, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "BOOL": np.bool_}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}
_MAX_HEADER = 100 << 20


def _crc32c_table():
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table[i] = c
    return table


_TABLE = None


def _table():
    global _TABLE
    if _TABLE is None:
        _TABLE = _crc32c_table()
    return _TABLE


def _apply(columns, r):
    """A GF(2)-linear map of 32-bit registers, given as the images of the 32 unit vectors."""
    out = 0
    bit = 0
    while r:
        if r & 1:
            out ^= columns[bit]
        r >>= 1
        bit += 1
    return out


def _compose(a, b):
    return [_apply(a, c) for c in b]


def _zeros_operator(count):
    """The register map of feeding `count` zero bytes (reflected CRC, no init, no xor-out)."""
    table = [int(x) for x in _table()]
    one = [table[(1 << i) & 0xFF] ^ ((1 << i) >> 8) for i in range(32)]
    result = [1 << i for i in range(32)]
    while count:
        if count & 1:
            result = _compose(one, result)
        one = _compose(one, one)
        count >>= 1
    return result


def _raw_register(data):
    """The CRC-32C register after `data` from a zero start (no xor-out), byte by byte."""
    table = _table()
    r = 0
    for byte in data:
        r = int(table[(r ^ byte) & 0xFF]) ^ (r >> 8)
    return r


def crc32c(data):
    """CRC-32C (Castagnoli) of a bytes-like object.

    The register is linear in the message, so the data is cut into equal blocks whose registers
    NumPy advances side by side (one byte of every block per step) and the blocks are then
    joined with the zero-byte operator: fast enough for large checkpoints in pure NumPy."""
    buf = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
    n = len(buf)
    blocks = 4096 if n >= 1 << 16 else 1
    size = n // blocks
    table = _table()
    total = 0
    if size:
        body = buf[: blocks * size].reshape(blocks, size)
        regs = np.zeros(blocks, dtype=np.uint32)
        for j in range(size):
            regs = table[(regs ^ body[:, j]) & 0xFF] ^ (regs >> np.uint32(8))
        shift = _zeros_operator(size)
        for r in regs:
            total = _apply(shift, total) ^ int(r)
    tail = buf[blocks * size:]
    total = _apply(_zeros_operator(len(tail)), total) ^ _raw_register(tail.tolist())
    # The initial register 0xFFFFFFFF contributes its image after n bytes; then the xor-out.
    total ^= _apply(_zeros_operator(n), 0xFFFFFFFF)
    return total ^ 0xFFFFFFFF


class SafetensorsError(ValueError):
    pass


def _bf16_to_f32(raw):
    u16 = np.frombuffer(raw, dtype="<u2")
    return (u16.astype(np.uint32) << 16).view(np.float32)


def read(path, check_crc=True):
    """(tensors: dict name → NumPy array in file order, metadata: dict). BF16 becomes float32."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise SafetensorsError(f"{path}: {len(blob)} bytes, too short for a safetensors file")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > min(_MAX_HEADER, len(blob) - 8):
        raise SafetensorsError(f"{path}: header length {n} exceeds the file ({len(blob)} bytes)")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"{path}: header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header is not a JSON object")
    data = memoryview(blob)[8 + n:]
    metadata = header.pop("__metadata__", {}) or {}
    if check_crc and "data_crc32c" in metadata:
        actual = f"{crc32c(data):08x}"
        if actual != metadata["data_crc32c"].lower():
            raise SafetensorsError(f"{path}: data CRC-32C {actual} does not match the header's "
                                   f"{metadata['data_crc32c']} (the file is damaged)")
    tensors = {}
    for name, entry in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        dtype, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        if not (0 <= begin <= end <= len(data)):
            raise SafetensorsError(f"{path}: tensor {name}: byte range [{begin}, {end}) outside "
                                   f"the data section ({len(data)} bytes)")
        count = int(np.prod(shape, dtype=np.int64))
        if dtype == "BF16":
            if end - begin != 2 * count:
                raise SafetensorsError(f"{path}: tensor {name}: {end - begin} bytes for "
                                       f"{count} BF16 values")
            array = _bf16_to_f32(data[begin:end]).reshape(shape)
        elif dtype in _DTYPES:
            np_dtype = np.dtype(_DTYPES[dtype]).newbyteorder("<")
            if end - begin != np_dtype.itemsize * count:
                raise SafetensorsError(f"{path}: tensor {name}: {end - begin} bytes for "
                                       f"{count} {dtype} values")
            array = np.frombuffer(data[begin:end], dtype=np_dtype).reshape(shape).copy()
        else:
            raise SafetensorsError(f"{path}: tensor {name}: unsupported dtype {dtype}")
        tensors[name] = array
    return tensors, metadata


def write(path, tensors, metadata=None):
    """Writes name → array (NumPy or anything np.asarray takes) atomically: `<path>.tmp.<pid>`,
    fsync, rename. Metadata values must be strings; format and data_crc32c are filled in."""
    header, chunks, offset = {}, [], 0
    for name, value in tensors.items():
        array = np.ascontiguousarray(np.asarray(value))
        if array.dtype not in _NAMES:
            raise SafetensorsError(f"tensor {name}: dtype {array.dtype} has no safetensors name")
        raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _NAMES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    data = b"".join(chunks)
    meta = {"format": "rota", "format_version": "1"}
    meta.update({str(k): str(v) for k, v in (metadata or {}).items()})
    meta["data_crc32c"] = f"{crc32c(data):08x}"
    text = json.dumps({"__metadata__": meta, **header}, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
