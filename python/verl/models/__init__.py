"""Model checkpoints for verl-cpp: ``verl.models.safetensors`` reads and writes Hugging Face files."""

from . import safetensors

__all__ = ["safetensors"]
