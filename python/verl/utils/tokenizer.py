"""``hf_tokenizer`` / ``hf_processor`` (verl's ``verl.utils.tokenizer``): the tokenizer of a local checkpoint as
verl code loads it, here verl-cpp's own (``verl.Tokenizer``: Hugging Face ``tokenizer.json`` and
``tokenizer_config.json`` read in C++, the same ids as transformers).

A Hub name is looked up in the local Hugging Face cache like ``verl.models.get_actor_model``'s; verl-cpp downloads
nothing.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import InvalidArgumentError
from ..models.actor import resolve_model_dir
from ..tokenizer import Tokenizer, load_tokenizer

__all__ = ["hf_tokenizer", "hf_processor"]

# Files only a multimodal checkpoint has: its processor (image / video / audio inputs) is not supported.
_PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json", "video_preprocessor_config.json")


def hf_tokenizer(name_or_path: str | os.PathLike, correct_pad_token: bool = True, correct_gemma2: bool = True,
                 trust_remote_code: bool = False) -> Tokenizer:
    """The checkpoint's tokenizer. ``correct_pad_token``: a tokenizer without a pad token pads with its eos token
    (verl's correction). ``correct_gemma2`` asks for verl's Gemma-2 eos fix; Gemma-2 is not a supported architecture,
    so a Gemma-2 checkpoint is refused rather than tokenized differently from its model. ``trust_remote_code``
    changes nothing: no checkpoint code runs here, ``tokenizer.json`` is read as data."""
    path = resolve_model_dir(name_or_path)
    if correct_gemma2 and "gemma-2" in os.fspath(name_or_path).lower():
        raise InvalidArgumentError(f"{name_or_path}: Gemma-2 checkpoints are not supported (Qwen2 / Qwen2.5 / Qwen3 / "
                                   "Llama)")
    tokenizer = load_tokenizer(path)
    if correct_pad_token and tokenizer.pad_token_id is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def hf_processor(name_or_path: str | os.PathLike, **kwargs: Any) -> None:
    """verl's multimodal processor: None for a text-only checkpoint (what verl returns there too, and what verl code
    checks for); a checkpoint with an image / video / audio processor raises, as verl-cpp takes text only."""
    unknown = sorted(set(kwargs) - {"trust_remote_code", "use_fast"})
    if unknown:
        raise TypeError(f"hf_processor() got unexpected keyword arguments {unknown}")
    path = resolve_model_dir(name_or_path)
    found = [f for f in _PROCESSOR_FILES if os.path.exists(os.path.join(path, f))]
    if found:
        raise InvalidArgumentError(f"{name_or_path} has a multimodal processor ({', '.join(found)}); verl-cpp trains "
                                   "on text only")
    return None
