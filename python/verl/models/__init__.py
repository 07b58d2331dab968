"""Models for verl-cpp: LibTorch decoders with Hugging Face names (``verl.models.transformer``),
Hugging Face checkpoint directories (``verl.models.checkpoint``: ``load_model``, ``save_pretrained``),
safetensors files (``verl.models.safetensors``), GGUF files converted into checkpoints (``verl.models.from_gguf``:
``convert_gguf``; any model path may name a ``.gguf`` file: ``verl.models.gguf_checkpoint``), and the tutorials' policy
constructors (``verl.models.actor``: ``get_actor_model``, ``HFActor``)."""

from . import safetensors
from .actor import HFActor, get_actor_model
from .checkpoint import load_model, save_pretrained
from .from_gguf import convert_gguf
from .transformer import CausalLM, ValueModel, init_weights

__all__ = ["safetensors", "load_model", "save_pretrained", "convert_gguf", "CausalLM", "ValueModel", "init_weights",
           "get_actor_model", "HFActor"]
