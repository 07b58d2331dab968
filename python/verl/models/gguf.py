"""Reading GGUF files (llama.cpp's model format) in pure Python + numpy, without the ``gguf`` package.

verl-cpp turns a ``.gguf`` file into a Hugging Face checkpoint (``verl.models.from_gguf``) so that a user's llama.cpp
model can be trained. That needs three things from the file: its metadata (the model's shape, the tokenizer), the
list of tensors, and their values as float32. This module provides them:

>>> f = read_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
>>> f.metadata["llama.block_count"]
30
>>> f.tensors["blk.0.attn_q.weight"].shape, f.tensors["blk.0.attn_q.weight"].type_name
((576, 576), 'Q4_1')
>>> w = f.tensor("blk.0.attn_q.weight")          # torch.float32, dequantized

The file is memory-mapped and only the tensors asked for are read. Dequantization is vectorized over blocks and
gives bit for bit the values of gguf-py's ``gguf.quants.dequantize`` (which transformers' GGUF loader uses).

Layout facts (llama.cpp's ``gguf.h`` / ``docs/gguf.md``): a file is the magic ``GGUF``, a uint32 version (2 and 3
are read here; 1 used 32-bit counts and is long gone), uint64 tensor and metadata counts, the metadata key/values,
the tensor infos, then the tensor data at the next multiple of ``general.alignment`` (default 32), each tensor at an
offset from there that is itself aligned. All values are little-endian. Tensor dimensions are listed innermost first
(``ne[0]`` is the contiguous one, along which quantization blocks run), so a tensor's torch shape is the reverse.

The file is untrusted: every count, length, offset and type is checked against the file before it is used, so a
truncated or corrupt file raises ``verl.CheckpointError`` naming the file and the field (the metadata key, the tensor)
rather than an IndexError, a struct.error or a huge allocation. A tensor type this reader does not know (or cannot
dequantize) is a ``verl.ConfigError`` naming the tensor and the type.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, NamedTuple, Sequence, Tuple, Union

import numpy as np
import torch

from ..errors import CheckpointError, ConfigError

__all__ = ["GGMLType", "GGML_TYPES", "GGUFFile", "TensorInfo", "ValueType", "dequantize", "read_gguf",
           "supported_types"]

PathLike = Union[str, os.PathLike]

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS
# Arrays may hold arrays; real files never nest, so a deep nesting is corruption (and would recurse without bound).
MAX_ARRAY_NESTING = 8


class ValueType:
    """GGUF metadata value types (``gguf_type``)."""

    UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)


# Fixed-size value types: struct format and numpy dtype (little-endian).
_SCALARS: Dict[int, Tuple[str, str]] = {
    ValueType.UINT8: ("<B", "<u1"), ValueType.INT8: ("<b", "<i1"), ValueType.UINT16: ("<H", "<u2"),
    ValueType.INT16: ("<h", "<i2"), ValueType.UINT32: ("<I", "<u4"), ValueType.INT32: ("<i", "<i4"),
    ValueType.FLOAT32: ("<f", "<f4"), ValueType.BOOL: ("<B", "<u1"), ValueType.UINT64: ("<Q", "<u8"),
    ValueType.INT64: ("<q", "<i8"), ValueType.FLOAT64: ("<d", "<f8"),
}
_VALUE_TYPE_NAMES = ["UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY",
                     "UINT64", "INT64", "FLOAT64"]


class GGMLType(NamedTuple):
    """A ggml tensor type: its name, the elements per block and the bytes per block."""

    name: str
    block_size: int
    type_size: int


QK_K = 256  # elements per K-quant super-block

#: Every ggml type id llama.cpp has assigned (ggml.h's ``ggml_type``), with its block geometry, so that any tensor's
#: extent in the file can be checked even where its values cannot be dequantized here.
GGML_TYPES: Dict[int, GGMLType] = {
    0: GGMLType("F32", 1, 4), 1: GGMLType("F16", 1, 2), 2: GGMLType("Q4_0", 32, 18), 3: GGMLType("Q4_1", 32, 20),
    6: GGMLType("Q5_0", 32, 22), 7: GGMLType("Q5_1", 32, 24), 8: GGMLType("Q8_0", 32, 34),
    9: GGMLType("Q8_1", 32, 40), 10: GGMLType("Q2_K", QK_K, 84), 11: GGMLType("Q3_K", QK_K, 110),
    12: GGMLType("Q4_K", QK_K, 144), 13: GGMLType("Q5_K", QK_K, 176), 14: GGMLType("Q6_K", QK_K, 210),
    15: GGMLType("Q8_K", QK_K, 292), 16: GGMLType("IQ2_XXS", QK_K, 66), 17: GGMLType("IQ2_XS", QK_K, 74),
    18: GGMLType("IQ3_XXS", QK_K, 98), 19: GGMLType("IQ1_S", QK_K, 50), 20: GGMLType("IQ4_NL", 32, 18),
    21: GGMLType("IQ3_S", QK_K, 110), 22: GGMLType("IQ2_S", QK_K, 82), 23: GGMLType("IQ4_XS", QK_K, 136),
    24: GGMLType("I8", 1, 1), 25: GGMLType("I16", 1, 2), 26: GGMLType("I32", 1, 4), 27: GGMLType("I64", 1, 8),
    28: GGMLType("F64", 1, 8), 29: GGMLType("IQ1_M", QK_K, 56), 30: GGMLType("BF16", 1, 2),
    34: GGMLType("TQ1_0", QK_K, 54), 35: GGMLType("TQ2_0", QK_K, 66), 39: GGMLType("MXFP4", 32, 17),
}


def _type_label(ggml_type: int) -> str:
    known = GGML_TYPES.get(ggml_type)
    return f"{known.name} (type {ggml_type})" if known else f"type {ggml_type}"


# ---- dequantization ------------------------------------------------------------------------------------------------
# Each function takes whole blocks, a (n_blocks, type_size) uint8 array, and returns (n_blocks, block_size) float32.
# The block layouts are ggml's (ggml-common.h); the arithmetic is done in float32 in the order gguf-py's reference
# uses (e.g. (d * scale) * q - dmin * min), so the results are identical to the bit.


def _f16(blocks: np.ndarray, start: int) -> np.ndarray:
    """The float16 at byte ``start`` of every block, as a (n_blocks, 1) float32 column."""
    return blocks[:, start:start + 2].copy().view("<f2").astype(np.float32)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """ggml's 4-bit packing of 32 values in 16 bytes: value j is the low nibble of byte j, value 16 + j the high."""
    return np.concatenate([qs & np.uint8(0x0F), qs >> np.uint8(4)], axis=1)


def _bits(packed: np.ndarray, n_bits: int) -> np.ndarray:
    """Bit k of each byte b of ``packed`` (n, n_bytes), at position k * n_bytes + b: (n, n_bits * n_bytes) uint8."""
    shifts = np.arange(n_bits, dtype=np.uint8).reshape(1, n_bits, 1)
    return ((packed[:, None, :] >> shifts) & np.uint8(1)).reshape(packed.shape[0], -1)


def _dq_f32(blocks: np.ndarray) -> np.ndarray:
    return blocks.copy().view("<f4").astype(np.float32)


def _dq_f16(blocks: np.ndarray) -> np.ndarray:
    return blocks.copy().view("<f2").astype(np.float32)


def _dq_bf16(blocks: np.ndarray) -> np.ndarray:
    # bfloat16 is the upper half of a float32.
    return (blocks.copy().view("<u2").astype(np.uint32) << np.uint32(16)).view(np.float32)


def _dq_q8_0(blocks: np.ndarray) -> np.ndarray:  # d: f16, qs: int8[32]
    return blocks[:, 2:].view(np.int8).astype(np.float32) * _f16(blocks, 0)


def _dq_q4_0(blocks: np.ndarray) -> np.ndarray:  # d: f16, qs: 32 nibbles, value = nibble - 8
    q = _nibbles(blocks[:, 2:]).astype(np.int8) - np.int8(8)
    return _f16(blocks, 0) * q.astype(np.float32)


def _dq_q4_1(blocks: np.ndarray) -> np.ndarray:  # d, m: f16, qs: 32 nibbles, value = d * nibble + m
    q = _nibbles(blocks[:, 4:]).astype(np.float32)
    return _f16(blocks, 0) * q + _f16(blocks, 2)


def _five_bit(qh: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Q5_0 / Q5_1 values: a nibble from ``qs`` and, as bit 4, bit j of the little-endian uint32 ``qh`` for value j."""
    high = _bits(qh, 8)  # position k * 4 + b is bit k of byte b; value j = 8 * b + k needs bit j of the uint32
    high = high.reshape(-1, 8, 4).transpose(0, 2, 1).reshape(-1, 32)
    return _nibbles(qs) | (high << np.uint8(4))


def _dq_q5_0(blocks: np.ndarray) -> np.ndarray:  # d: f16, qh: uint32, qs: 32 nibbles, value = 5 bits - 16
    q = _five_bit(blocks[:, 2:6], blocks[:, 6:]).astype(np.int8) - np.int8(16)
    return _f16(blocks, 0) * q.astype(np.float32)


def _dq_q5_1(blocks: np.ndarray) -> np.ndarray:  # d, m: f16, qh: uint32, qs: 32 nibbles, value = d * 5 bits + m
    q = _five_bit(blocks[:, 4:8], blocks[:, 8:]).astype(np.float32)
    return _f16(blocks, 0) * q + _f16(blocks, 2)


def _crumbs(qs: np.ndarray) -> np.ndarray:
    """K-quants' 2-bit packing of 128 values in 32 bytes: value s * 32 + b is bits 2s..2s+1 of byte b."""
    shifts = np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 4, 1)
    return ((qs[:, None, :] >> shifts) & np.uint8(3)).reshape(qs.shape[0], 128)


def _dq_q2_k(blocks: np.ndarray) -> np.ndarray:
    # scales: u8[16] (low nibble: scale, high nibble: min, one pair per 16 values), qs: 2 bits x 256, d, dmin: f16
    n = blocks.shape[0]
    scales = blocks[:, :16]
    q = np.concatenate([_crumbs(blocks[:, 16:48]), _crumbs(blocks[:, 48:80])], axis=1)
    dl = (_f16(blocks, 80) * (scales & np.uint8(0x0F)).astype(np.float32)).reshape(n, 16, 1)
    ml = (_f16(blocks, 82) * (scales >> np.uint8(4)).astype(np.float32)).reshape(n, 16, 1)
    return (dl * q.reshape(n, 16, 16).astype(np.float32) - ml).reshape(n, QK_K)


def _dq_q3_k(blocks: np.ndarray) -> np.ndarray:
    # hmask: u8[32] (bit 2 of each value, set meaning "no -4 offset"), qs: 2 bits x 256, scales: 16 x 6 bits, d: f16
    n = blocks.shape[0]
    hmask, qs, packed = blocks[:, :32], blocks[:, 32:96], blocks[:, 96:108]
    # Scale s: its low 4 bits are nibble s // 8 of byte s % 8, its high 2 bits are bits 2 * (s // 4) of byte 8 + s % 4.
    low = np.concatenate([packed[:, :8] & np.uint8(0x0F), packed[:, :8] >> np.uint8(4)], axis=1)
    shifts = np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 4, 1)
    high = ((packed[:, None, 8:12] >> shifts) & np.uint8(3)).reshape(n, 16)
    scales = ((low | (high << np.uint8(4))).astype(np.int8) - np.int8(32)).astype(np.float32)
    dl = (_f16(blocks, 108) * scales).reshape(n, 16, 1)
    low_bits = np.concatenate([_crumbs(qs[:, :32]), _crumbs(qs[:, 32:])], axis=1)
    offset = (_bits(hmask, 8) ^ np.uint8(1)) << np.uint8(2)  # value k * 32 + b uses bit k of hmask[b]
    q = (low_bits.astype(np.int8) - offset.astype(np.int8)).astype(np.float32)
    return (dl * q.reshape(n, 16, 16)).reshape(n, QK_K)


def _scale_min_k4(packed: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Q4_K / Q5_K's 8 six-bit scales and mins in 12 bytes: for j < 4 the low 6 bits of bytes j and 4 + j; for j >= 4
    a nibble of byte 8 + j - 4 (low: scale, high: min) under the top 2 bits of bytes j - 4 and j."""
    d, m, md = packed[:, 0:4], packed[:, 4:8], packed[:, 8:12]
    scale = np.concatenate([d & np.uint8(0x3F), (md & np.uint8(0x0F)) | ((d >> np.uint8(2)) & np.uint8(0x30))], axis=1)
    minimum = np.concatenate([m & np.uint8(0x3F), (md >> np.uint8(4)) | ((m >> np.uint8(2)) & np.uint8(0x30))], axis=1)
    return scale, minimum


def _k4_nibbles(qs: np.ndarray) -> np.ndarray:
    """Q4_K / Q5_K's low 4 bits: 64 values per 32 bytes, the first 32 the low nibbles, the next 32 the high ones."""
    n = qs.shape[0]
    chunks = qs.reshape(n, -1, 1, 32) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
    return (chunks & np.uint8(0x0F)).reshape(n, 8, 32)


def _dq_q4_k(blocks: np.ndarray) -> np.ndarray:  # d, dmin: f16, scales: 12 bytes, qs: 4 bits x 256
    n = blocks.shape[0]
    scale, minimum = _scale_min_k4(blocks[:, 4:16])
    d = (_f16(blocks, 0) * scale.astype(np.float32)).reshape(n, 8, 1)
    dm = (_f16(blocks, 2) * minimum.astype(np.float32)).reshape(n, 8, 1)
    return (d * _k4_nibbles(blocks[:, 16:]).astype(np.float32) - dm).reshape(n, QK_K)


def _dq_q5_k(blocks: np.ndarray) -> np.ndarray:  # d, dmin: f16, scales: 12 bytes, qh: u8[32] (bit 4), qs: 4 bits
    n = blocks.shape[0]
    scale, minimum = _scale_min_k4(blocks[:, 4:16])
    d = (_f16(blocks, 0) * scale.astype(np.float32)).reshape(n, 8, 1)
    dm = (_f16(blocks, 2) * minimum.astype(np.float32)).reshape(n, 8, 1)
    high = _bits(blocks[:, 16:48], 8).reshape(n, 8, 32)  # sub-block j takes bit j of qh[b]
    q = (_k4_nibbles(blocks[:, 48:]) | (high << np.uint8(4))).astype(np.float32)
    return (d * q - dm).reshape(n, QK_K)


def _dq_q6_k(blocks: np.ndarray) -> np.ndarray:
    # ql: u8[128] (low 4 bits), qh: u8[64] (high 2 bits), scales: int8[16] (one per 16 values), d: f16
    n = blocks.shape[0]
    d = (_f16(blocks, 208) * blocks[:, 192:208].view(np.int8).astype(np.float32)).reshape(n, 16, 1)
    # Each half of 128 values: 64 bytes of ql (low nibbles, then high nibbles) and 32 bytes of qh (4 crumbs each).
    low = blocks[:, :128].reshape(n, 2, 1, 64) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
    low = (low & np.uint8(0x0F)).reshape(n, 8, 32)
    high = blocks[:, 128:192].reshape(n, 2, 1, 32) >> np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)
    high = (high & np.uint8(3)).reshape(n, 8, 32)
    q = ((low | (high << np.uint8(4))).astype(np.int8) - np.int8(32)).reshape(n, 16, 16).astype(np.float32)
    return (d * q).reshape(n, QK_K)


_DEQUANTIZERS: Dict[int, Callable[[np.ndarray], np.ndarray]] = {
    0: _dq_f32, 1: _dq_f16, 30: _dq_bf16, 8: _dq_q8_0, 2: _dq_q4_0, 3: _dq_q4_1, 6: _dq_q5_0, 7: _dq_q5_1,
    10: _dq_q2_k, 11: _dq_q3_k, 12: _dq_q4_k, 13: _dq_q5_k, 14: _dq_q6_k,
}

# Values dequantized per step: bounds the temporaries for any tensor size, and a chunk that stays in cache is faster
# than one pass over a whole large tensor.
_CHUNK_ELEMENTS = 1 << 16


def supported_types() -> List[str]:
    """The names of the tensor types :func:`dequantize` handles."""
    return [GGML_TYPES[t].name for t in sorted(_DEQUANTIZERS)]


def _nbytes(ggml_type: int, n_elements: int) -> int:
    t = GGML_TYPES[ggml_type]
    return n_elements // t.block_size * t.type_size


def dequantize(raw: np.ndarray, ggml_type: int, shape: Sequence[int], name: str = "tensor") -> np.ndarray:
    """float32 values of a tensor of ``shape`` (torch order: the last dimension is GGUF's ``ne[0]``) stored as
    ``ggml_type`` in the bytes ``raw`` (any uint8 array of exactly that tensor's size)."""
    if ggml_type not in _DEQUANTIZERS:
        raise ConfigError(f"{name}: tensor type {_type_label(ggml_type)} is not supported "
                          f"(supported: {', '.join(supported_types())})")
    t = GGML_TYPES[ggml_type]
    shape = tuple(int(s) for s in shape)
    n_elements = int(np.prod(shape, dtype=object)) if shape else 1
    if shape and shape[-1] % t.block_size != 0:
        raise CheckpointError(f"{name}: a row of {shape[-1]} values is not a whole number of {t.name} blocks of "
                              f"{t.block_size}")
    raw = np.asarray(raw)
    if raw.dtype != np.uint8 or raw.size != _nbytes(ggml_type, n_elements):
        raise CheckpointError(f"{name}: {t.name} data of shape {list(shape)} takes {_nbytes(ggml_type, n_elements)} "
                              f"bytes, got {raw.size} of {raw.dtype}")
    n_blocks = n_elements // t.block_size
    blocks = raw.reshape(n_blocks, t.type_size)
    out = np.empty((n_blocks, t.block_size), dtype=np.float32)
    step = max(1, _CHUNK_ELEMENTS // t.block_size)
    fn = _DEQUANTIZERS[ggml_type]
    for start in range(0, n_blocks, step):
        out[start:start + step] = fn(blocks[start:start + step])
    return out.reshape(shape)


# ---- the file ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorInfo:
    """A tensor of a GGUF file: ``shape`` in torch order (GGUF's dims reversed), ``offset`` from the file's start."""

    name: str
    shape: Tuple[int, ...]
    ggml_type: int
    offset: int
    nbytes: int

    @property
    def type_name(self) -> str:
        return GGML_TYPES[self.ggml_type].name

    @property
    def n_elements(self) -> int:
        return int(np.prod(self.shape, dtype=object)) if self.shape else 1


class _Cursor:
    """Reads little-endian values from the mapped file, checking every read against its end."""

    def __init__(self, data: np.ndarray, path: str):
        self.data = data
        self.size = int(data.size)
        self.path = path
        self.pos = 0

    def fail(self, message: str) -> CheckpointError:
        return CheckpointError(f"{self.path}: {message}")

    def need(self, n: int, what: str) -> None:
        if n < 0 or n > self.size - self.pos:
            raise self.fail(f"truncated or corrupt GGUF file: {what} needs {n} bytes at offset {self.pos}, "
                            f"but only {self.size - self.pos} remain")

    def remaining(self) -> int:
        return self.size - self.pos

    def scalar(self, value_type: int, what: str) -> Any:
        fmt, _ = _SCALARS[value_type]
        n = struct.calcsize(fmt)
        self.need(n, what)
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += n
        return bool(value) if value_type == ValueType.BOOL else value

    def u32(self, what: str) -> int:
        return self.scalar(ValueType.UINT32, what)

    def u64(self, what: str) -> int:
        return self.scalar(ValueType.UINT64, what)

    def string(self, what: str) -> str:
        length = self.u64(f"the length of {what}")
        self.need(length, f"{what} ({length} bytes)")
        raw = bytes(self.data[self.pos:self.pos + length])
        self.pos += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.fail(f"{what} is not valid UTF-8 ({e.reason} at byte {e.start})") from None

    def array(self, what: str, depth: int) -> Tuple[list, int]:
        """An array value: its elements as a list, and its element type."""
        element_type = self.u32(f"the element type of {what}")
        count = self.u64(f"the length of {what}")
        if element_type in _SCALARS:
            _, dtype = _SCALARS[element_type]
            size = np.dtype(dtype).itemsize
            if count > self.remaining() // size:
                raise self.fail(f"{what}: an array of {count} {_VALUE_TYPE_NAMES[element_type]} needs "
                                f"{count * size} bytes, but only {self.remaining()} remain (truncated or corrupt)")
            values = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
            self.pos += count * size
            if element_type == ValueType.BOOL:
                return (values != 0).tolist(), element_type
            return values.tolist(), element_type
        if element_type == ValueType.STRING:
            if count > self.remaining() // 8:  # each string takes at least its 8-byte length
                raise self.fail(f"{what}: an array of {count} strings cannot fit in the {self.remaining()} bytes "
                                f"that remain (truncated or corrupt)")
            return [self.string(f"{what}[{i}]") for i in range(count)], element_type
        if element_type == ValueType.ARRAY:
            if depth >= MAX_ARRAY_NESTING:
                raise self.fail(f"{what}: arrays nested more than {MAX_ARRAY_NESTING} deep")
            if count > self.remaining() // 12:  # each inner array takes at least its type and length
                raise self.fail(f"{what}: an array of {count} arrays cannot fit in the {self.remaining()} bytes "
                                f"that remain (truncated or corrupt)")
            return [self.array(f"{what}[{i}]", depth + 1)[0] for i in range(count)], element_type
        raise self.fail(f"{what}: unknown array element type {element_type}")

    def value(self, value_type: int, what: str) -> Tuple[Any, Tuple[int, ...]]:
        """A metadata value and its type: (type,) for a scalar, (ARRAY, element type) for an array."""
        if value_type in _SCALARS:
            return self.scalar(value_type, what), (value_type,)
        if value_type == ValueType.STRING:
            return self.string(what), (value_type,)
        if value_type == ValueType.ARRAY:
            values, element_type = self.array(what, 0)
            return values, (value_type, element_type)
        raise self.fail(f"{what}: unknown value type {value_type}")


class GGUFFile:
    """A GGUF file's header, read eagerly; tensor data is read from the memory map on request.

    ``metadata`` maps keys to Python values (int, float, bool, str, or lists of them); ``value_types`` gives each
    key's GGUF type (``(ValueType.X,)`` or ``(ValueType.ARRAY, element type)``); ``tensors`` maps names to
    :class:`TensorInfo` in file order.
    """

    def __init__(self, path: PathLike):
        self.path = os.fspath(path)
        try:
            size = os.path.getsize(self.path)
            self._map = np.memmap(self.path, dtype=np.uint8, mode="r") if size else np.zeros(0, np.uint8)
        except OSError as e:
            raise CheckpointError(f"cannot read GGUF file {self.path}: {e.strerror or e}") from None
        self.metadata: Dict[str, Any] = {}
        self.value_types: Dict[str, Tuple[int, ...]] = {}
        self.tensors: Dict[str, TensorInfo] = {}
        self._parse(_Cursor(self._map, self.path))

    def _parse(self, cur: _Cursor) -> None:
        cur.need(4, "the magic")
        magic = bytes(self._map[:4])
        if magic != MAGIC:
            raise cur.fail(f"not a GGUF file (magic {magic!r}, expected {MAGIC!r})")
        cur.pos = 4
        version = cur.u32("the version")
        if version not in (2, 3):
            swapped = struct.unpack("<I", struct.pack(">I", version))[0]
            if swapped in (2, 3):
                raise cur.fail(f"big-endian GGUF (version {swapped}) is not supported")
            raise cur.fail(f"GGUF version {version} is not supported (versions 2 and 3 are)")
        self.version = version
        tensor_count = cur.u64("tensor_count")
        kv_count = cur.u64("kv_count")
        # Each key/value takes at least 13 bytes (key length, type, a one-byte value); each tensor info 24.
        if kv_count > cur.remaining() // 13:
            raise cur.fail(f"kv_count {kv_count} is more key/values than the file's {cur.size} bytes can hold "
                           "(truncated or corrupt)")
        for i in range(kv_count):
            key = cur.string(f"the key of metadata entry {i}")
            if key in self.metadata:
                raise cur.fail(f"metadata key {key!r} appears twice")
            value_type = cur.u32(f"the type of metadata key {key!r}")
            self.metadata[key], self.value_types[key] = cur.value(value_type, f"metadata key {key!r}")

        self.alignment = DEFAULT_ALIGNMENT
        if "general.alignment" in self.metadata:
            alignment = self.metadata["general.alignment"]
            if self.value_types["general.alignment"] != (ValueType.UINT32,) or alignment <= 0 or \
                    alignment & (alignment - 1):
                raise cur.fail(f"metadata key 'general.alignment' must be a power of two (UINT32), got {alignment!r}")
            self.alignment = alignment

        if tensor_count > cur.remaining() // 24:
            raise cur.fail(f"tensor_count {tensor_count} is more tensor infos than the file's {cur.size} bytes can "
                           "hold (truncated or corrupt)")
        infos = []
        names = set()
        for i in range(tensor_count):
            name = cur.string(f"the name of tensor {i}")
            if name in names:
                raise cur.fail(f"tensor {name!r} appears twice")
            names.add(name)
            n_dims = cur.u32(f"the dimension count of tensor {name!r}")
            if n_dims > MAX_DIMS:
                raise cur.fail(f"tensor {name!r} has {n_dims} dimensions (at most {MAX_DIMS})")
            dims = [cur.u64(f"dimension {d} of tensor {name!r}") for d in range(n_dims)]
            ggml_type = cur.u32(f"the type of tensor {name!r}")
            offset = cur.u64(f"the data offset of tensor {name!r}")
            if ggml_type not in GGML_TYPES:
                raise ConfigError(f"{self.path}: tensor {name!r} has unknown tensor type {ggml_type} "
                                  f"(supported: {', '.join(supported_types())})")
            infos.append((name, dims, ggml_type, offset))

        data_start = -(-cur.pos // self.alignment) * self.alignment
        data_size = cur.size - data_start
        for name, dims, ggml_type, offset in infos:
            t = GGML_TYPES[ggml_type]
            n_elements = int(np.prod(dims, dtype=object)) if dims else 1
            if dims and dims[0] % t.block_size != 0:
                raise cur.fail(f"tensor {name!r}: its rows of {dims[0]} values are not whole {t.name} blocks of "
                               f"{t.block_size}")
            nbytes = _nbytes(ggml_type, n_elements)
            if offset % self.alignment != 0:
                raise cur.fail(f"tensor {name!r}: data offset {offset} is not a multiple of the alignment "
                               f"{self.alignment}")
            if data_size < 0 or offset > data_size or nbytes > data_size - offset:
                raise cur.fail(f"tensor {name!r} ({t.name}, dims {dims}): its {nbytes} bytes at data offset {offset} "
                               f"run past the end of the file (truncated or corrupt)")
            self.tensors[name] = TensorInfo(name, tuple(int(d) for d in reversed(dims)), ggml_type,
                                            data_start + offset, nbytes)

    def raw(self, name: str) -> np.ndarray:
        """The tensor's bytes, a read-only uint8 view of the file."""
        info = self._info(name)
        return self._map[info.offset:info.offset + info.nbytes]

    def dequantize(self, name: str) -> np.ndarray:
        """The tensor's values as a new float32 numpy array of its (torch-order) shape."""
        info = self._info(name)
        return dequantize(self.raw(name), info.ggml_type, info.shape, f"{self.path}: tensor {name!r}")

    def tensor(self, name: str) -> torch.Tensor:
        """The tensor's values as a float32 torch tensor (owning its memory)."""
        return torch.from_numpy(self.dequantize(name))

    def _info(self, name: str) -> TensorInfo:
        if name not in self.tensors:
            raise KeyError(f"{self.path} has no tensor {name!r}")
        return self.tensors[name]

    def __repr__(self) -> str:
        return (f"GGUFFile({self.path!r}, version={self.version}, {len(self.metadata)} keys, "
                f"{len(self.tensors)} tensors)")


def read_gguf(path: PathLike) -> GGUFFile:
    """The GGUF file at ``path`` (header parsed and checked; tensors read on demand)."""
    return GGUFFile(path)
