"""Models for verl-cpp: LibTorch decoders with Hugging Face names (``verl.models.transformer``),
Hugging Face checkpoint directories (``verl.models.checkpoint``: ``load_model``, ``save_pretrained``)
and safetensors files (``verl.models.safetensors``)."""

from . import safetensors
from .checkpoint import load_model, save_pretrained
from .transformer import CausalLM, ValueModel, init_weights

__all__ = ["safetensors", "load_model", "save_pretrained", "CausalLM", "ValueModel", "init_weights"]
