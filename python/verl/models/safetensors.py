"""safetensors files with ``safetensors.torch``'s API, backed by libverl (``verl._C.model``).

``load_file`` / ``save_file`` / ``safe_open`` mirror ``safetensors.torch``: the files are the same
bytes HF writes, and loading validates the header as strictly as HF does. Loaded tensors are views
of a private (copy-on-write) memory map where their data is aligned: writing to them never changes
the file. ``load_checkpoint_dir`` / ``save_sharded`` handle transformers' checkpoint directories
(``model.safetensors`` or shards with ``model.safetensors.index.json``).
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Union

import torch

from .._C import model as _model

__all__ = ["safe_open", "load_file", "save_file", "load", "save", "load_checkpoint_dir", "save_sharded"]

PathLike = Union[str, os.PathLike]


def _check_framework(framework: str) -> None:
    if framework not in ("pt", "torch"):
        raise ValueError(f"verl.models.safetensors only loads into torch (framework='pt'), got {framework!r}")


class safe_open:  # noqa: N801  (the name safetensors uses)
    """``with safe_open(path, framework="pt", device="cpu") as f: f.get_tensor(name)``."""

    def __init__(self, filename: PathLike, framework: str = "pt", device: Union[str, int, torch.device] = "cpu"):
        _check_framework(framework)
        self._file = _model.safe_open(os.fspath(filename))
        self._device = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def keys(self) -> List[str]:
        return self._file.keys()

    def metadata(self) -> Optional[Dict[str, str]]:
        return self._file.metadata()

    def get_tensor(self, name: str) -> torch.Tensor:
        tensor = self._file.get_tensor(name)
        return tensor if self._device.type == "cpu" else tensor.to(self._device)


def load_file(filename: PathLike, device: Union[str, int, torch.device] = "cpu") -> Dict[str, torch.Tensor]:
    """All tensors of ``filename``, as ``safetensors.torch.load_file``."""
    tensors = _model.load_file(os.fspath(filename))
    dev = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    if dev.type != "cpu":
        tensors = {k: v.to(dev) for k, v in tensors.items()}
    return tensors


def save_file(tensors: Dict[str, torch.Tensor], filename: PathLike, metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes ``tensors`` (any device, any strides) as ``safetensors.torch.save_file`` does, atomically."""
    _model.save_file(tensors, os.fspath(filename), metadata)


def save(tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The file's bytes, as ``safetensors.torch.save``."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.safetensors")
        save_file(tensors, path, metadata)
        with open(path, "rb") as f:
            return f.read()


def load(data: bytes) -> Dict[str, torch.Tensor]:
    """Tensors from a file's bytes, as ``safetensors.torch.load`` (copies: the bytes are not kept)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.safetensors")
        with open(path, "wb") as f:
            f.write(data)
        return {k: v.clone() for k, v in load_file(path).items()}


def load_checkpoint_dir(directory: PathLike) -> Dict[str, torch.Tensor]:
    """``model.safetensors``, or every tensor of ``model.safetensors.index.json``'s weight_map."""
    return _model.load_checkpoint_dir(os.fspath(directory))


def save_sharded(directory: PathLike, tensors: Dict[str, torch.Tensor], max_shard_bytes: int) -> List[str]:
    """transformers' layout; shards are split in ``tensors``' order. Returns the files written."""
    return [str(p) for p in _model.save_sharded(os.fspath(directory), tensors, int(max_shard_bytes))]
