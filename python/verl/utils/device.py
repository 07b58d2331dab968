"""Device helpers verl code imports (``verl.utils.device``): which accelerator this process computes on, and the
``torch.distributed`` backend that goes with it. verl-cpp runs on CUDA when it is there and on the CPU otherwise, so
these name ``cuda`` / ``nccl`` or ``cpu`` / ``gloo`` (verl 0.9.1 also knows NPUs and other vendors' devices)."""

from __future__ import annotations

import torch

__all__ = ["get_device_id", "get_device_name", "get_nccl_backend", "get_torch_device", "is_cuda_available"]

is_cuda_available = torch.cuda.is_available()


def get_device_name() -> str:
    """``"cuda"`` when a CUDA device is visible, else ``"cpu"``."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def get_torch_device():
    """The torch device module of ``get_device_name()`` (``torch.cuda`` or ``torch.cpu``)."""
    return getattr(torch, get_device_name())


def get_device_id() -> int:
    """The current device's index (0 on the CPU)."""
    return torch.cuda.current_device() if torch.cuda.is_available() else 0


def get_nccl_backend() -> str:
    """The collective backend for ``get_device_name()``: ``"nccl"`` on CUDA, ``"gloo"`` on the CPU."""
    return "nccl" if torch.cuda.is_available() else "gloo"
