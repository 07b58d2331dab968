"""Converting a GGUF file (llama.cpp's format) into a Hugging Face checkpoint directory.

verl-cpp trains Hugging Face checkpoints; many users hold their models as ``.gguf`` files. ``convert_gguf`` writes the
directory that ``transformers.AutoModelForCausalLM`` / ``AutoTokenizer.from_pretrained`` and verl's own
``verl.models.load_model`` / ``verl.load_tokenizer`` read: ``config.json``, the weights dequantized to float32 (or
bfloat16 / float16) in ``model.safetensors`` (shards past ``max_shard_size``), ``tokenizer.json``,
``tokenizer_config.json``, ``chat_template.jinja`` and ``generation_config.json``.

    python -m verl.models.from_gguf SmolLM2-135M-Instruct.Q4_1.gguf smollm2/ [--dtype bfloat16]

Dequantized weights are the quantized model's values, not the original checkpoint's. They equal, bit for bit, what
transformers' own GGUF loader (``from_pretrained(..., gguf_file=...)``) makes of the file, and the config has the same
meaning. The tokenizer is the one llama.cpp runs, spelled as the model's original ``tokenizer.json`` would be (for
``tokenizer.ggml.pre`` smollm that splits digits off, which transformers' GGUF tokenizer does not).

Supported: ``general.architecture`` llama, qwen2, qwen3 with a byte-level BPE vocabulary (``tokenizer.ggml.model``
gpt2). The directory is built beside ``out_dir`` and renamed into place when complete, so a failed or interrupted
conversion never leaves a half-written checkpoint.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import secrets
import shutil
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ..errors import CheckpointError, ConfigError, InvalidArgumentError, VerlError
from .checkpoint_writer import DEFAULT_MAX_SHARD_SIZE, parse_shard_size
from .gguf import GGUFFile, ValueType, read_gguf, supported_types
from .safetensors import save_file

__all__ = ["convert_gguf", "SUPPORTED_ARCHITECTURES"]

PathLike = Union[str, os.PathLike]

#: general.architecture -> the transformers class the checkpoint is for.
SUPPORTED_ARCHITECTURES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

# llama.cpp token types (llama_token_type).
_CONTROL, _USER_DEFINED = 3, 4

_REQUIRED = object()


# ---- metadata -----------------------------------------------------------------------------------------------------


class _Metadata:
    """Typed reads of a GGUF file's metadata; a missing key or a value of the wrong type is a CheckpointError naming
    the key."""

    _INTEGERS = {ValueType.UINT8, ValueType.INT8, ValueType.UINT16, ValueType.INT16, ValueType.UINT32,
                 ValueType.INT32, ValueType.UINT64, ValueType.INT64}

    def __init__(self, f: GGUFFile):
        self.f = f

    def fail(self, key: str, message: str) -> CheckpointError:
        return CheckpointError(f"{self.f.path}: metadata key {key!r} {message}")

    def has(self, key: str) -> bool:
        return key in self.f.metadata

    def _get(self, key: str, default: Any, kinds: set, what: str) -> Tuple[Any, bool]:
        if key not in self.f.metadata:
            if default is _REQUIRED:
                raise self.fail(key, "is missing")
            return default, False
        if self.f.value_types[key][0] not in kinds:
            raise self.fail(key, f"must be {what}, got {self.f.metadata[key]!r}"[:300])
        return self.f.metadata[key], True

    def get_int(self, key: str, default: Any = _REQUIRED, minimum: int = 1, maximum: int = 2**31 - 1) -> Any:
        value, found = self._get(key, default, self._INTEGERS, "an integer")
        if found and not minimum <= value <= maximum:
            raise self.fail(key, f"must be in [{minimum}, {maximum}], got {value}")
        return value

    def get_float(self, key: str, default: Any = _REQUIRED) -> Any:
        value, found = self._get(key, default, self._INTEGERS | {ValueType.FLOAT32, ValueType.FLOAT64}, "a number")
        if not found:
            return value
        if self.f.value_types[key][0] == ValueType.FLOAT32:
            value = _shortest_f32(value)
        if not math.isfinite(value):
            raise self.fail(key, f"must be finite, got {value}")
        return float(value)

    def get_str(self, key: str, default: Any = _REQUIRED) -> Any:
        return self._get(key, default, {ValueType.STRING}, "a string")[0]

    def get_bool(self, key: str, default: Any = _REQUIRED) -> Any:
        return self._get(key, default, {ValueType.BOOL}, "a bool")[0]

    def get_list(self, key: str, element_types: set, what: str, default: Any = _REQUIRED) -> Any:
        if key in self.f.metadata and self.f.value_types[key][0] == ValueType.ARRAY and \
                self.f.value_types[key][1] not in element_types:
            raise self.fail(key, f"must be an array of {what}")
        return self._get(key, default, {ValueType.ARRAY}, f"an array of {what}")[0]


def _shortest_f32(x: float) -> float:
    """The shortest decimal that reads back as the same float32: 1e-05, the value the original config.json held,
    rather than its float32 approximation 9.999999747378752e-06 (both compute the same model)."""
    return float(str(np.float32(x)))


# ---- config.json --------------------------------------------------------------------------------------------------


def _llama3_factor_table(wavelen: np.ndarray, factor: float, low: float, high: float, original: int) -> np.ndarray:
    """llama.cpp's ``rope_freqs`` for Llama 3's rope scaling (convert_hf_to_gguf's LlamaModel.generate_extra_tensors):
    per frequency, the divisor of the rotation frequency -- 1 above the high-frequency band, ``factor`` below the
    low-frequency one, and in between 1 / ((1 - s) / factor + s) with s = (original / wavelength - low) / (high - low).
    """
    smooth = (original / wavelen - low) / (high - low)
    mid = 1.0 / ((1.0 - smooth) / factor + smooth)
    return np.where(wavelen < original / high, 1.0, np.where(wavelen > original / low, factor, mid))


def _llama3_rope(f: GGUFFile, theta: float, head_dim: int) -> Optional[Dict[str, Any]]:
    """The Llama 3 rope scaling that the ``rope_freqs.weight`` tensor encodes, as transformers' rope parameters.

    llama.cpp stores no rope-scaling metadata for Llama 3.1+; it precomputes the per-frequency divisors instead. They
    are a function of (factor, low_freq_factor, high_freq_factor, original_max_position_embeddings), which we recover
    by checking the tensor against the table each candidate gives: the factor is the divisor of the lowest
    frequencies, and Meta's models all use low/high 1/4 with a power-of-two original context.
    """
    name = "rope_freqs.weight"
    factors = f.dequantize(name).astype(np.float64)
    if factors.shape != (head_dim // 2,):
        raise CheckpointError(f"{f.path}: tensor {name!r} has shape {list(factors.shape)}, expected "
                              f"[{head_dim // 2}] (head_dim / 2)")
    if np.all(factors == 1.0):
        return None
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    wavelen = 2 * math.pi / inv_freq
    factor = float(factors.max())
    low, high = 1.0, 4.0
    for original in (2**k for k in range(4, 24)):
        if np.allclose(_llama3_factor_table(wavelen, factor, low, high, original), factors, rtol=1e-5, atol=0.0):
            return {"rope_type": "llama3", "factor": _shortest_f32(factor), "low_freq_factor": low,
                    "high_freq_factor": high, "original_max_position_embeddings": original}
    raise ConfigError(f"{f.path}: tensor {name!r} holds rope frequency factors that are not Llama 3's rope scaling "
                      "(factor, low_freq_factor=1, high_freq_factor=4, a power-of-two original context); such a "
                      "rope scaling is not supported")


def _rope_parameters(f: GGUFFile, meta: _Metadata, arch: str, theta: float, head_dim: int) -> Dict[str, Any]:
    """transformers 5's ``rope_parameters``: the base, and the scaling the file states (metadata, or for llama the
    ``rope_freqs`` tensor)."""
    key = f"{arch}.rope.scaling.type"
    scaling = meta.get_str(key, "none")
    if scaling == "none" and meta.has(f"{arch}.rope.scale_linear"):  # the key before rope.scaling.* existed
        factor = meta.get_float(f"{arch}.rope.scale_linear")
        scaling = "linear" if factor != 1.0 else "none"
    else:
        factor = meta.get_float(f"{arch}.rope.scaling.factor", 1.0)
    if scaling == "linear":
        rope: Dict[str, Any] = {"rope_type": "linear", "factor": factor}
    elif scaling == "none":
        rope = {"rope_type": "default"}
    else:
        raise ConfigError(f"{f.path}: metadata key {key!r} is {scaling!r}, which is not supported (supported: none, "
                          "linear; Llama 3's scaling comes as the rope_freqs tensor)")
    if arch == "llama" and "rope_freqs.weight" in f.tensors:
        if rope["rope_type"] != "default":
            raise ConfigError(f"{f.path}: both {key!r} ({scaling!r}) and the rope_freqs tensor scale the rope")
        rope = _llama3_rope(f, theta, head_dim) or rope
    return {**rope, "rope_theta": theta}


def _model_config(f: GGUFFile, meta: _Metadata, arch: str, dtype: str) -> Dict[str, Any]:
    """config.json, with the keys and meaning transformers' GGUF loader gives the same file."""
    p = f"{arch}."
    hidden = meta.get_int(p + "embedding_length")
    n_head = meta.get_int(p + "attention.head_count")
    n_kv = meta.get_int(p + "attention.head_count_kv", n_head)
    if n_head % n_kv:
        raise ConfigError(f"{f.path}: {p}attention.head_count ({n_head}) is not a multiple of "
                          f"{p}attention.head_count_kv ({n_kv})")
    # head_dim: attention.key_length where the file states it (Qwen3's 128 is not hidden / heads); llama.cpp's llama
    # files may state it as the rotary width instead, which transformers reads as head_dim there.
    head_dim = meta.get_int(p + "attention.key_length", 0)
    if not head_dim and arch == "llama":
        head_dim = meta.get_int(p + "rope.dimension_count", 0)
    head_dim = head_dim or hidden // n_head
    for key in (p + "attention.value_length", p + "rope.dimension_count"):
        if meta.get_int(key, head_dim) != head_dim:
            raise ConfigError(f"{f.path}: metadata key {key!r} is {meta.get_int(key)}, but the heads are {head_dim} "
                              f"wide ({p}attention.key_length or {p}embedding_length / {p}attention.head_count): "
                              "value heads or a rotary part of another width are not supported")
    theta = meta.get_float(p + "rope.freq_base", 10000.0)
    if theta <= 0:
        raise meta.fail(p + "rope.freq_base", f"must be positive, got {theta}")
    eps = meta.get_float(p + "attention.layer_norm_rms_epsilon")
    if eps < 0:
        raise meta.fail(p + "attention.layer_norm_rms_epsilon", f"must be non-negative, got {eps}")

    embedding = f.tensors.get("token_embd.weight")
    if embedding is None:
        raise CheckpointError(f"{f.path}: tensor 'token_embd.weight' (the token embedding) is missing")
    if len(embedding.shape) != 2 or embedding.shape[1] != hidden:
        raise CheckpointError(f"{f.path}: tensor 'token_embd.weight' has shape {list(embedding.shape)}, expected "
                              f"[vocab_size, {hidden}]")
    vocab_size = embedding.shape[0]
    if meta.get_int(p + "vocab_size", vocab_size) != vocab_size:
        raise CheckpointError(f"{f.path}: metadata key {p + 'vocab_size'!r} is {meta.get_int(p + 'vocab_size')}, but "
                              f"token_embd.weight has {vocab_size} rows")

    def token_id(key: str) -> Optional[int]:
        return meta.get_int(f"tokenizer.ggml.{key}", None, minimum=0, maximum=vocab_size - 1)

    config: Dict[str, Any] = {
        "architectures": [SUPPORTED_ARCHITECTURES[arch]],
        "model_type": arch,
        "vocab_size": vocab_size,
        "hidden_size": hidden,
        "intermediate_size": meta.get_int(p + "feed_forward_length"),
        "num_hidden_layers": meta.get_int(p + "block_count"),
        "num_attention_heads": n_head,
        "num_key_value_heads": n_kv,
        "head_dim": head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": meta.get_int(p + "context_length"),
        "rms_norm_eps": eps,
        "rope_parameters": _rope_parameters(f, meta, arch, theta, head_dim),
        # llama.cpp writes the output projection only when it is not the embedding matrix.
        "tie_word_embeddings": "output.weight" not in f.tensors,
        "attention_dropout": 0.0,
        "bos_token_id": token_id("bos_token_id"),
        "eos_token_id": token_id("eos_token_id"),
        "pad_token_id": token_id("padding_token_id"),
        "use_cache": True,
        "torch_dtype": dtype,
        "dtype": dtype,
    }
    if arch in ("llama", "qwen3"):  # Qwen2's q/k/v biases are implied by its model_type
        config["attention_bias"] = "blk.0.attn_q.bias" in f.tensors
    if arch == "llama":
        config["mlp_bias"] = "blk.0.ffn_gate.bias" in f.tensors
    else:
        config["use_sliding_window"] = False
    return config


# ---- tensors ------------------------------------------------------------------------------------------------------

_GLOBAL_TENSORS = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
                   "output.weight": "lm_head.weight"}
_LAYER_TENSORS = {
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
    "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}
_LAYER_NAME = re.compile(r"blk\.(0|[1-9][0-9]{0,8})\.([a-z_]+)\.(weight|bias)")


def _unpermute_rotary(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undoes convert_hf_to_gguf's permute of a llama Q or K projection (weight rows or bias).

    llama.cpp's llama rotates adjacent pairs (x[2i], x[2i+1]) of each head, where HF's LlamaAttention rotates
    x[i] with x[i + head_dim / 2] (rotate_half). The converter therefore reorders each head's rows from
    (half, i) to (i, half); reading them as (i, half) and swapping back restores HF's order. K uses the KV head
    count. This is transformers' ``LlamaTensorProcessor._reverse_permute_weights``; Qwen2/Qwen3 already rotate
    halves in llama.cpp (NEOX rope) and are stored unpermuted.
    """
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _expected_tensors(config: Dict[str, Any]) -> Dict[str, Tuple[str, Tuple[int, ...]]]:
    """HF name -> (GGUF name, torch shape) for every tensor the config's model has, in transformers' order."""
    arch, h = config["model_type"], config["hidden_size"]
    q, kv, inter = config["num_attention_heads"] * config["head_dim"], config["num_key_value_heads"] * \
        config["head_dim"], config["intermediate_size"]
    qkv_bias = arch == "qwen2" or config.get("attention_bias", False)
    out: Dict[str, Tuple[str, Tuple[int, ...]]] = {"model.embed_tokens.weight": ("token_embd.weight",
                                                                                  (config["vocab_size"], h))}
    for i in range(config["num_hidden_layers"]):
        layer: List[Tuple[str, Tuple[int, ...]]] = [
            ("attn_norm.weight", (h,)), ("attn_q.weight", (q, h)), ("attn_k.weight", (kv, h)),
            ("attn_v.weight", (kv, h)), ("attn_output.weight", (h, q))]
        if qkv_bias:
            layer += [("attn_q.bias", (q,)), ("attn_k.bias", (kv,)), ("attn_v.bias", (kv,))]
        if config.get("attention_bias", False):
            layer.append(("attn_output.bias", (h,)))
        if arch == "qwen3":
            layer += [("attn_q_norm.weight", (config["head_dim"],)), ("attn_k_norm.weight", (config["head_dim"],))]
        layer += [("ffn_norm.weight", (h,)), ("ffn_gate.weight", (inter, h)), ("ffn_up.weight", (inter, h)),
                  ("ffn_down.weight", (h, inter))]
        if config.get("mlp_bias", False):
            layer += [("ffn_gate.bias", (inter,)), ("ffn_up.bias", (inter,)), ("ffn_down.bias", (h,))]
        for gguf_name, shape in layer:
            module, kind = gguf_name.rsplit(".", 1)
            out[f"model.layers.{i}.{_LAYER_TENSORS[module]}.{kind}"] = (f"blk.{i}.{gguf_name}", shape)
    out["model.norm.weight"] = ("output_norm.weight", (h,))
    if not config["tie_word_embeddings"]:
        out["lm_head.weight"] = ("output.weight", (config["vocab_size"], h))
    return out


def _hf_name(gguf_name: str, arch: str) -> Optional[str]:
    if gguf_name in _GLOBAL_TENSORS:
        return _GLOBAL_TENSORS[gguf_name]
    m = _LAYER_NAME.fullmatch(gguf_name)
    if m is None or m.group(2) not in _LAYER_TENSORS:
        return None
    if m.group(2) in ("attn_q_norm", "attn_k_norm") and arch != "qwen3":
        return None
    return f"model.layers.{m.group(1)}.{_LAYER_TENSORS[m.group(2)]}.{m.group(3)}"


_Transform = Optional[Callable[[np.ndarray], np.ndarray]]


def _tensor_plan(f: GGUFFile, config: Dict[str, Any]) -> List[Tuple[str, str, _Transform]]:
    """(HF name, GGUF name, transform) for every tensor to write, after checking that the file has exactly the
    model's tensors, in the model's shapes and in types that can be dequantized."""
    arch = config["model_type"]
    expected = _expected_tensors(config)
    by_gguf = {gguf_name: hf for hf, (gguf_name, _) in expected.items()}
    consumed = {"rope_freqs.weight"} if arch == "llama" else set()  # read into the config's rope scaling
    for name, info in f.tensors.items():
        if name in consumed:
            continue
        if name not in by_gguf:
            hf = _hf_name(name, arch)
            why = (f"which this {arch} model (per its metadata) does not have" if hf is not None
                   else f"which has no Hugging Face {SUPPORTED_ARCHITECTURES[arch]} counterpart")
            raise CheckpointError(f"{f.path}: tensor {name!r} is not converted, {why}")
        shape = expected[by_gguf[name]][1]
        if info.shape != shape:
            raise CheckpointError(f"{f.path}: tensor {name!r} has shape {list(info.shape)}, expected {list(shape)} "
                                  f"(from the {arch}.* metadata)")
        if info.type_name not in supported_types():
            raise ConfigError(f"{f.path}: tensor {name!r} has type {info.type_name}, which is not supported "
                              f"(supported: {', '.join(supported_types())})")
    missing = [gguf_name for gguf_name, _ in expected.values() if gguf_name not in f.tensors]
    if missing:
        raise CheckpointError(f"{f.path}: {len(missing)} tensor(s) of the {arch} model are missing: "
                              + ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else ""))
    plan: List[Tuple[str, str, _Transform]] = []
    for hf, (gguf_name, _) in expected.items():
        transform: _Transform = None
        if arch == "llama" and re.fullmatch(r"blk\.\d+\.attn_[qk]\.(weight|bias)", gguf_name):
            heads = config["num_attention_heads"] if ".attn_q." in gguf_name else config["num_key_value_heads"]
            transform = lambda w, heads=heads: _unpermute_rotary(w, heads)  # noqa: E731
        plan.append((hf, gguf_name, transform))
    return plan


def _write_weights(f: GGUFFile, plan: List[Tuple[str, str, _Transform]], directory: str, dtype: torch.dtype,
                   max_shard_bytes: int) -> None:
    """The weights as transformers lays them out (huggingface_hub's sharding: in order, a new shard when the next
    tensor would overflow, an oversized tensor on its own), dequantizing one shard at a time so memory holds one
    shard, not the model."""
    itemsize = torch.empty(0, dtype=dtype).element_size()
    shards: List[List[Tuple[str, str, _Transform]]] = []
    current: List[Tuple[str, str, _Transform]] = []
    current_size = total_size = total_parameters = 0
    for item in plan:
        n = f.tensors[item[1]].n_elements
        size = n * itemsize
        total_size += size
        total_parameters += n
        if size > max_shard_bytes:
            shards.append([item])
            continue
        if current and current_size + size > max_shard_bytes:
            shards.append(current)
            current, current_size = [], 0
        current.append(item)
        current_size += size
    if current or not shards:
        shards.append(current)

    weight_map: Dict[str, str] = {}
    for i, shard in enumerate(shards):
        file_name = "model.safetensors" if len(shards) == 1 else f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        tensors = {}
        for hf, gguf_name, transform in shard:
            values = f.dequantize(gguf_name)
            if transform is not None:
                values = transform(values)
            tensors[hf] = torch.from_numpy(values).to(dtype)
            weight_map[hf] = file_name
        save_file(tensors, os.path.join(directory, file_name), metadata={"format": "pt"})
        del tensors
    if len(shards) > 1:
        index = {"metadata": {"total_parameters": total_parameters, "total_size": total_size},
                 "weight_map": weight_map}
        _write_json(os.path.join(directory, "model.safetensors.index.json"), index, sort_keys=True)


# ---- tokenizer ----------------------------------------------------------------------------------------------------

_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                r"|\s+(?!\S)|\s+")
_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def _split(pattern: str) -> Dict[str, Any]:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


def _byte_level(use_regex: bool) -> Dict[str, Any]:
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


def _sequence(*steps: Dict[str, Any]) -> Dict[str, Any]:
    return {"type": "Sequence", "pretokenizers": list(steps)}


# tokenizer.ggml.pre -> (pre-tokenizer, ignore_merges): the split each model's own tokenizer.json does, which is the
# one its merges were learned on (llama.cpp's llm_tokenizer_bpe regexes per pre type say the same).
_PRE_TOKENIZERS: Dict[str, Tuple[Dict[str, Any], bool]] = {
    # GPT-2's regex, inside ByteLevel.
    "default": (_byte_level(True), False),
    "gpt-2": (_byte_level(True), False),
    # SmolLM / StarCoder: every digit on its own, then GPT-2's regex. Their tokenizer.json has a Digits
    # (individual_digits) pre-tokenizer; a Split isolating each \p{N} character is the same split (Digits splits on
    # char::is_numeric, i.e. the N categories) in a form verl's C++ tokenizer reads too.
    "smollm": (_sequence(_split(r"\p{N}"), _byte_level(True)), False),
    "qwen2": (_sequence(_split(_QWEN2_SPLIT), _byte_level(False)), False),
    "deepseek-r1-qwen": (_sequence(_split(_QWEN2_SPLIT), _byte_level(False)), False),
    # Llama 3's tokenizer.json takes a word that is in the vocabulary whole, before any merge (ignore_merges).
    "llama-bpe": (_sequence(_split(_LLAMA3_SPLIT), _byte_level(False)), True),
    "llama3": (_sequence(_split(_LLAMA3_SPLIT), _byte_level(False)), True),
    "llama-v3": (_sequence(_split(_LLAMA3_SPLIT), _byte_level(False)), True),
}

_SPECIAL_TOKEN_KEYS = {"bos_token": "bos_token_id", "eos_token": "eos_token_id", "unk_token": "unknown_token_id",
                       "pad_token": "padding_token_id"}
_TEMPLATE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def _added_token(token_id: int, content: str, special: bool) -> Dict[str, Any]:
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": special}


def _tokenizer_files(f: GGUFFile, meta: _Metadata, config: Dict[str, Any]) -> Dict[str, Union[str, Dict]]:
    """File name -> contents (JSON values are dicts) of the tokenizer files."""
    model = meta.get_str("tokenizer.ggml.model")
    if model != "gpt2":
        raise ConfigError(f"{f.path}: metadata key 'tokenizer.ggml.model' is {model!r}, which is not supported "
                          "(supported: 'gpt2', byte-level BPE; SentencePiece vocabularies such as 'llama' are not "
                          "converted)")
    pre = meta.get_str("tokenizer.ggml.pre", "default")
    if pre not in _PRE_TOKENIZERS:
        raise ConfigError(f"{f.path}: metadata key 'tokenizer.ggml.pre' is {pre!r}, which is not supported "
                          f"(supported: {', '.join(sorted(_PRE_TOKENIZERS))})")
    pre_tokenizer, ignore_merges = _PRE_TOKENIZERS[pre]

    tokens = meta.get_list("tokenizer.ggml.tokens", {ValueType.STRING}, "strings")
    if not tokens:
        raise meta.fail("tokenizer.ggml.tokens", "is empty")
    if len(tokens) > config["vocab_size"]:
        raise CheckpointError(f"{f.path}: metadata key 'tokenizer.ggml.tokens' has {len(tokens)} tokens, more than "
                              f"the {config['vocab_size']} rows of token_embd.weight")
    integer_types = _Metadata._INTEGERS
    token_types = meta.get_list("tokenizer.ggml.token_type", integer_types, "integers", [1] * len(tokens))
    if len(token_types) != len(tokens):
        raise meta.fail("tokenizer.ggml.token_type", f"has {len(token_types)} entries for {len(tokens)} tokens")
    # A token listed twice keeps its last id, as in llama.cpp's token_to_id and transformers' GGUF tokenizer.
    vocab = {token: i for i, token in enumerate(tokens)}

    merges = []
    for i, merge in enumerate(meta.get_list("tokenizer.ggml.merges", {ValueType.STRING}, "strings", [])):
        parts = merge.split(" ")
        if len(parts) != 2 or not all(parts) or not all(part in vocab for part in parts) or \
                parts[0] + parts[1] not in vocab:
            raise meta.fail("tokenizer.ggml.merges", f"entry {i} ({merge!r}) is not two tokens of the vocabulary "
                            "whose concatenation is one")
        merges.append(parts)

    added = [_added_token(i, token, token_type == _CONTROL)
             for i, (token, token_type) in enumerate(zip(tokens, token_types))
             if token_type in (_CONTROL, _USER_DEFINED) and vocab[token] == i]

    special: Dict[str, Optional[str]] = {}
    for name, key in _SPECIAL_TOKEN_KEYS.items():
        token_id = meta.get_int(f"tokenizer.ggml.{key}", None, minimum=0)
        if token_id is not None and token_id >= len(tokens):
            raise meta.fail(f"tokenizer.ggml.{key}", f"is {token_id}, past the {len(tokens)} tokens")
        special[name] = None if token_id is None else tokens[token_id]

    add_bos = meta.get_bool("tokenizer.ggml.add_bos_token", False)
    add_eos = meta.get_bool("tokenizer.ggml.add_eos_token", False)
    post_processor: Dict[str, Any] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                                      "use_regex": True}
    if add_bos or add_eos:
        # transformers' TemplateProcessing for add_bos_token / add_eos_token: "<bos> $A <eos>", and for pairs
        # "<bos> $A <eos> <bos> $B <eos>".
        single: List[Dict[str, Any]] = []
        pair: List[Dict[str, Any]] = []
        specials: Dict[str, Any] = {}
        for flag, name, key in ((add_bos, "bos_token", "add_bos_token"), (add_eos, "eos_token", "add_eos_token")):
            if flag and special[name] is None:
                raise meta.fail(f"tokenizer.ggml.{key}", f"is true, but the file has no {_SPECIAL_TOKEN_KEYS[name]}")
        for type_id, sequence, target in ((0, "A", single), (1, "B", pair)):
            if add_bos:
                target.append({"SpecialToken": {"id": special["bos_token"], "type_id": type_id}})
            target.append({"Sequence": {"id": sequence, "type_id": type_id}})
            if add_eos:
                target.append({"SpecialToken": {"id": special["eos_token"], "type_id": type_id}})
        for flag, name in ((add_bos, "bos_token"), (add_eos, "eos_token")):
            if flag:
                token = special[name]
                specials[token] = {"id": token, "ids": [vocab[token]], "tokens": [token]}
        template = {"type": "TemplateProcessing", "single": single, "pair": single + pair, "special_tokens": specials}
        post_processor = {"type": "Sequence", "processors": [post_processor, template]}

    tokenizer_json = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": ignore_merges, "vocab": vocab, "merges": merges},
    }
    tokenizer_config = {
        "add_bos_token": add_bos,
        "add_eos_token": add_eos,
        "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in added},
        **special,
        "clean_up_tokenization_spaces": False,
        "model_max_length": config["max_position_embeddings"],
        # transformers' own classes for these models rebuild the tokenizer from vocab and merges with their own
        # pre-tokenizer (LlamaTokenizer's is SentencePiece's); TokenizersBackend runs tokenizer.json as written.
        "tokenizer_class": "TokenizersBackend",
    }
    files: Dict[str, Union[str, Dict]] = {"tokenizer.json": tokenizer_json, "tokenizer_config.json": tokenizer_config}
    for key in f.metadata:
        if key != "tokenizer.chat_template" and not key.startswith("tokenizer.chat_template."):
            continue
        template = meta.get_str(key)
        if key == "tokenizer.chat_template":
            files["chat_template.jinja"] = template  # where transformers 5 keeps it
            continue
        name = key[len("tokenizer.chat_template."):]
        if not _TEMPLATE_NAME.fullmatch(name):
            raise meta.fail(key, "names a chat template that is not a plain file name")
        files[f"additional_chat_templates/{name}.jinja"] = template
    generation = {k: config[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if config[k] is not None}
    files["generation_config.json"] = generation
    return files


# ---- writing ------------------------------------------------------------------------------------------------------


def _write_json(path: str, value: Any, sort_keys: bool = False) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=sort_keys) + "\n")


def _check_target(out_dir: str, overwrite: bool) -> None:
    if not os.path.lexists(out_dir):
        return
    if not os.path.isdir(out_dir) or os.path.islink(out_dir):
        raise CheckpointError(f"{out_dir} exists and is not a directory")
    if os.listdir(out_dir) and not overwrite:
        raise CheckpointError(f"{out_dir} exists and is not empty; pass overwrite=True (--overwrite) to replace it")


def _publish(staging: str, out_dir: str, overwrite: bool) -> None:
    """Moves the finished ``staging`` directory to ``out_dir``: one rename onto a missing or empty directory; a
    non-empty one (with ``overwrite``) is first renamed aside and removed once the new one is in place."""
    _check_target(out_dir, overwrite)
    if os.path.isdir(out_dir) and os.listdir(out_dir):
        old = f"{out_dir}.old-{secrets.token_hex(4)}"
        os.rename(out_dir, old)
        try:
            os.rename(staging, out_dir)
        except BaseException:
            os.rename(old, out_dir)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(staging, out_dir)


def convert_gguf(gguf_path: PathLike, out_dir: PathLike, dtype: Union[str, torch.dtype] = "float32",
                 overwrite: bool = False, max_shard_size: Union[int, str] = DEFAULT_MAX_SHARD_SIZE) -> str:
    """Writes the GGUF model ``gguf_path`` as a Hugging Face checkpoint directory ``out_dir``; returns its path.

    ``dtype``: the weights' dtype, ``"float32"`` (exact), ``"bfloat16"`` or ``"float16"``. ``out_dir`` may be missing
    or empty; a non-empty one is replaced only with ``overwrite=True``. Raises ``verl.CheckpointError`` for a corrupt
    or inconsistent file (naming the key or tensor) and ``verl.ConfigError`` for what is valid GGUF but not supported
    here (architecture, tensor type, tokenizer, rope scaling).
    """
    if isinstance(dtype, torch.dtype):
        dtype = next((name for name, d in _DTYPES.items() if d == dtype), str(dtype))
    if dtype not in _DTYPES:
        raise InvalidArgumentError(f"dtype {dtype!r} is not supported (supported: {', '.join(_DTYPES)})")
    max_shard_bytes = parse_shard_size(max_shard_size)
    out_dir = os.path.abspath(os.fspath(out_dir))
    _check_target(out_dir, overwrite)

    f = read_gguf(gguf_path)
    meta = _Metadata(f)
    arch = meta.get_str("general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise ConfigError(f"{f.path}: metadata key 'general.architecture' is {arch!r}, which is not supported "
                          f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})")
    # Everything that can be refused is checked before a byte is written.
    config = _model_config(f, meta, arch, dtype)
    plan = _tensor_plan(f, config)
    files = _tokenizer_files(f, meta, config)

    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    staging = os.path.join(parent, f".{os.path.basename(out_dir)}.converting-{secrets.token_hex(4)}")
    os.mkdir(staging)
    try:
        _write_weights(f, plan, staging, _DTYPES[dtype], max_shard_bytes)
        _write_json(os.path.join(staging, "config.json"), config, sort_keys=True)
        for name, contents in files.items():
            path = os.path.join(staging, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if isinstance(contents, dict):
                _write_json(path, contents)
            else:
                with open(path, "w", encoding="utf-8") as out:
                    out.write(contents)
        _publish(staging, out_dir, overwrite)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verl.models.from_gguf",
                                     description="Convert a GGUF model into a Hugging Face checkpoint directory.")
    parser.add_argument("gguf", help="the .gguf file")
    parser.add_argument("out_dir", help="the directory to write (missing or empty, unless --overwrite)")
    parser.add_argument("--dtype", default="float32", choices=sorted(_DTYPES), help="the weights' dtype")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty out_dir")
    parser.add_argument("--max-shard-size", default=DEFAULT_MAX_SHARD_SIZE, help="e.g. 5GB (transformers' default)")
    args = parser.parse_args(argv)
    try:
        out = convert_gguf(args.gguf, args.out_dir, dtype=args.dtype, overwrite=args.overwrite,
                           max_shard_size=args.max_shard_size)
    except (VerlError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
