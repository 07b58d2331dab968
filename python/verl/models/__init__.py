"""Models for verl-cpp: LibTorch decoders with Hugging Face names (``verl.models.transformer``) and
Hugging Face checkpoint files (``verl.models.safetensors``)."""

from . import safetensors

__all__ = ["safetensors"]
