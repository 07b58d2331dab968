"""Writing a libverl model as a Hugging Face checkpoint directory (libverl's verl/model/checkpoint.h): the shard-size
arithmetic and the one call that writes, below both ``CausalLM.save_pretrained`` (verl.models.transformer) and
``verl.models.checkpoint.save_pretrained``, which import it."""

from __future__ import annotations

import os
import re
from typing import Any, Callable, List, Optional, Union

from verl import _C

__all__ = ["DEFAULT_MAX_SHARD_SIZE", "parse_shard_size", "write_pretrained"]

#: transformers' default ``max_shard_size``.
DEFAULT_MAX_SHARD_SIZE = "5GB"

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


PathLike = Union[str, os.PathLike]


def write_pretrained(module: Any, path: PathLike, tokenizer_dir: Optional[PathLike] = None,
                     max_shard_size: Union[int, str] = DEFAULT_MAX_SHARD_SIZE,
                     on_file_written: Optional[Callable[[str], None]] = None) -> List[str]:
    """Writes the ``_C.model`` module as a transformers checkpoint directory, atomically; the files written."""
    tokenizer = None if tokenizer_dir is None else os.fspath(tokenizer_dir)
    files = _C.model.save_pretrained(module, os.fspath(path), tokenizer, parse_shard_size(max_shard_size),
                                     on_file_written)
    return [str(f) for f in files]
