"""GGUF files as model paths: ``load_model("SmolLM2-135M-Instruct.Q4_1.gguf")``, ``get_actor_model``,
``hf_tokenizer``, ``verl.load_tokenizer`` and the trainers' ``*.model.path`` / ``*.model.tokenizer_path`` keys accept a
``.gguf`` file (or a directory holding one GGUF file and no ``config.json``), the format llama.cpp users already have.

The file is dequantized once (``verl.models.from_gguf.convert_gguf``: weights in float32, the tokenizer as
``tokenizer.json``, the chat template) into a Hugging Face checkpoint directory in the cache,
``$VERL_CACHE_DIR/gguf/`` (default ``~/.cache/verl-cpp/gguf/``), with a logged note; later runs, and the other ranks of
a torchrun job, reuse it. The cache entry is keyed by the file's resolved path, size and modification time, so a
replaced file is converted again. Dequantized weights are the quantized model's values, not the original ones.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import logging
import os
from typing import Any, Iterable

from ..errors import CheckpointError

__all__ = ["is_gguf", "gguf_file", "cache_dir", "checkpoint_dir", "local_checkpoint", "resolve_gguf_paths"]

logger = logging.getLogger("verl")

# Bumped when the conversion's output changes, so cached directories of an older converter are not reused.
CONVERTER_VERSION = 1
_MAGIC = b"GGUF"


def gguf_file(path: str | os.PathLike) -> str | None:
    """The GGUF file ``path`` names: the file itself (by its magic bytes), or the one ``*.gguf`` in a directory that
    has no ``config.json``; None for anything else. A directory with several GGUF files is a ``CheckpointError``
    (which one is meant is ambiguous)."""
    path = os.path.expanduser(os.fspath(path))
    if os.path.isfile(path):
        try:
            with open(path, "rb") as f:
                return path if f.read(4) == _MAGIC else None
        except OSError:
            return None
    if os.path.isdir(path) and not os.path.exists(os.path.join(path, "config.json")):
        found = sorted(glob.glob(os.path.join(glob.escape(path), "*.gguf")))
        if len(found) > 1:
            raise CheckpointError(f"{path} holds {len(found)} GGUF files and no config.json; pass one of them: "
                                  + ", ".join(os.path.basename(f) for f in found))
        if found:
            return gguf_file(found[0])
    return None


def is_gguf(path: str | os.PathLike) -> bool:
    return gguf_file(path) is not None


def cache_dir() -> str:
    """Where converted checkpoints live: ``$VERL_CACHE_DIR/gguf`` or ``~/.cache/verl-cpp/gguf``."""
    root = os.environ.get("VERL_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "verl-cpp")
    return os.path.join(root, "gguf")


def checkpoint_dir(path: str | os.PathLike, dtype: str = "float32") -> str:
    """The Hugging Face checkpoint directory converted from the GGUF file ``path``, converting it on first use."""
    source = gguf_file(path)
    if source is None:
        raise CheckpointError(f"{os.fspath(path)} is not a GGUF file (no 'GGUF' magic bytes)")
    stat = os.stat(source)
    real = os.path.realpath(source)
    key = hashlib.sha256(f"{real}|{stat.st_size}|{stat.st_mtime_ns}|{dtype}|{CONVERTER_VERSION}".encode()).hexdigest()
    stem = os.path.splitext(os.path.basename(source))[0]
    target = os.path.join(cache_dir(), f"{stem}-{key[:16]}")
    if os.path.isfile(os.path.join(target, "config.json")):
        return target
    os.makedirs(cache_dir(), exist_ok=True)
    # One converter at a time per file: the ranks of a torchrun job all ask for it at once.
    with open(target + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.isfile(os.path.join(target, "config.json")):
            from .from_gguf import convert_gguf

            logger.warning("verl: dequantizing %s (%.0f MB) into a Hugging Face checkpoint at %s (once; later runs "
                           "reuse it)", source, stat.st_size / 2**20, target)
            convert_gguf(source, target, dtype=dtype, overwrite=True)
    return target


def local_checkpoint(path: str | os.PathLike) -> str:
    """``path`` with ``~`` expanded, or its converted checkpoint directory when it names a GGUF file."""
    expanded = os.path.expanduser(os.fspath(path))
    return checkpoint_dir(expanded) if is_gguf(expanded) else expanded


def resolve_gguf_paths(config: Any, keys: Iterable[str]) -> None:
    """Replaces every config value among ``keys`` that names a GGUF file by its converted checkpoint directory, so
    the model, the tokenizer and the tokenizer files copied into checkpoints all come from that directory."""
    for key in keys:
        value = config.get(key)
        if value and isinstance(value, (str, os.PathLike)) and is_gguf(value):
            config[key] = checkpoint_dir(value)
