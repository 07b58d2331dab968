"""Hugging Face checkpoint directories for verl-cpp's models (libverl's verl/model/checkpoint.h).

``load_model(path)`` reads what transformers' ``save_pretrained`` writes (``config.json`` plus
``model.safetensors`` or shards with ``model.safetensors.index.json``); ``model.save_pretrained(path)``
writes a directory that ``transformers.AutoModelForCausalLM.from_pretrained`` (or
``AutoModelForTokenClassification`` for a value model) loads unchanged. Saving is atomic: the new
directory is built beside the target and swapped in only when complete.
"""

from __future__ import annotations

import os
import re
from typing import Callable, List, Optional, Union

import torch

from verl import _C

from .transformer import CausalLM, ValueModel

__all__ = ["load_model", "save_pretrained", "parse_shard_size", "DEFAULT_MAX_SHARD_SIZE"]

PathLike = Union[str, os.PathLike]

#: transformers' default ``max_shard_size``.
DEFAULT_MAX_SHARD_SIZE = "5GB"

_DTYPES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float64: "float64"}
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def parse_shard_size(size: Union[int, str]) -> int:
    """Bytes in ``size``: an int, or a string such as ``"5GB"`` (10**9) or ``"500MiB"`` (2**20), as
    transformers' ``convert_file_size_to_int`` reads it (a trailing ``b``, bits, divides by 8)."""
    if isinstance(size, bool) or not isinstance(size, (int, str)):
        raise ValueError(f"max_shard_size must be an int or a string like '5GB', got {size!r}")
    if isinstance(size, int):
        value = size
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?[Bb]?)\s*", size, re.IGNORECASE)
        if not m:
            raise ValueError(f"max_shard_size {size!r} is not a size like '5GB' or '500MiB'")
        unit = m.group(2)
        bits = unit.endswith("b") and not unit.endswith("B")
        value = int(float(m.group(1)) * _UNITS[unit.upper()] // (8 if bits else 1))
    if value <= 0:
        raise ValueError(f"max_shard_size must be positive, got {size!r}")
    return value


def _dtype_name(dtype: Union[str, torch.dtype, None]) -> Optional[str]:
    if dtype is None or isinstance(dtype, str):
        return dtype
    if dtype not in _DTYPES:
        raise ValueError(f"unsupported dtype {dtype} (float32, bfloat16, float16, float64)")
    return _DTYPES[dtype]


def load_model(path: PathLike, dtype: Union[str, torch.dtype] = "float32", device: Union[str, torch.device] = "cpu",
               value_head: bool = False) -> CausalLM:
    """The model saved in ``path`` as a :class:`CausalLM` (or :class:`ValueModel` with ``value_head=True``,
    from a checkpoint of ``AutoModelForTokenClassification(num_labels=1)``).

    ``dtype``: ``torch.float32`` / ``"bfloat16"`` / ... or ``"auto"`` (the config's ``torch_dtype``).
    Tensor names are checked strictly; a missing, corrupt or inconsistent file raises
    ``verl.CheckpointError`` naming it (``verl.ConfigError`` for an unsupported config.json).
    """
    module = _C.model.load_pretrained(os.fspath(path), _dtype_name(dtype), str(torch.device(device)), bool(value_head))
    return (ValueModel if value_head else CausalLM)._from_module(module)


def save_pretrained(model: CausalLM, path: PathLike, tokenizer_dir: Optional[PathLike] = None,
                    max_shard_size: Union[int, str] = DEFAULT_MAX_SHARD_SIZE,
                    on_file_written: Optional[Callable[[str], None]] = None) -> List[str]:
    """Writes ``model`` as a transformers checkpoint directory; see :meth:`CausalLM.save_pretrained`."""
    files = _C.model.save_pretrained(model._module, os.fspath(path),
                                     None if tokenizer_dir is None else os.fspath(tokenizer_dir),
                                     parse_shard_size(max_shard_size), on_file_written)
    return [str(f) for f in files]
