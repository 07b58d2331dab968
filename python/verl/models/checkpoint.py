"""Hugging Face checkpoint directories for verl-cpp's models (libverl's verl/model/checkpoint.h).

``load_model(path)`` reads what transformers' ``save_pretrained`` writes (``config.json`` plus
``model.safetensors`` or shards with ``model.safetensors.index.json``); ``model.save_pretrained(path)``
writes a directory that ``transformers.AutoModelForCausalLM.from_pretrained`` (or
``AutoModelForTokenClassification`` for a value model) loads unchanged. Saving is atomic: the new
directory is built beside the target and swapped in only when complete.
"""

from __future__ import annotations

import os
from typing import Callable, List, Optional, Union

import torch

from verl import _C

from .gguf_checkpoint import local_checkpoint
from .checkpoint_writer import DEFAULT_MAX_SHARD_SIZE, parse_shard_size, write_pretrained
from .transformer import CausalLM, ValueModel

__all__ = ["load_model", "save_pretrained", "parse_shard_size", "DEFAULT_MAX_SHARD_SIZE"]

PathLike = Union[str, os.PathLike]

_DTYPES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float64: "float64"}


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

    ``path`` may name a GGUF file instead (``verl.models.gguf_checkpoint``: dequantized once into a cached
    checkpoint directory). ``dtype``: ``torch.float32`` / ``"bfloat16"`` / ... or ``"auto"`` (the config's
    ``torch_dtype``). Tensor names are checked strictly; a missing, corrupt or inconsistent file raises
    ``verl.CheckpointError`` naming it (``verl.ConfigError`` for an unsupported config.json).
    """
    module = _C.model.load_pretrained(local_checkpoint(path), _dtype_name(dtype), str(torch.device(device)), bool(value_head))
    return (ValueModel if value_head else CausalLM)._from_module(module)


def save_pretrained(model: CausalLM, path: PathLike, tokenizer_dir: Optional[PathLike] = None,
                    max_shard_size: Union[int, str] = DEFAULT_MAX_SHARD_SIZE,
                    on_file_written: Optional[Callable[[str], None]] = None) -> List[str]:
    """Writes ``model`` as a transformers checkpoint directory; see :meth:`CausalLM.save_pretrained`."""
    return write_pretrained(model._module, path, tokenizer_dir, max_shard_size, on_file_written)
