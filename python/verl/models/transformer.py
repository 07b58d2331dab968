"""The LibTorch decoder (Qwen2 / Qwen3 / Llama / Mistral / Phi-3) of verl-cpp, with Hugging Face parameter names.

``CausalLM`` is the policy / reference model (next-token logits); ``ValueModel`` is the critic
(``score`` head, as ``AutoModelForTokenClassification(num_labels=1)``). Both take HF ``config.json``
contents and HF state dicts unchanged, so loading is a name lookup. Rollout and training use the
same C++ module (``verl._C.model.CausalLM``).
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Mapping

import torch

from verl import _C
from verl.errors import CheckpointError
from verl.utils.dataset.reader import read_json_file

from .checkpoint_writer import write_pretrained

__all__ = ["CausalLM", "ValueModel", "load_model_config"]

_DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float64: "float64"}


def load_model_config(config: str | os.PathLike | Mapping[str, Any]) -> dict[str, Any]:
    """A config.json path (or its directory) or dict, validated and normalised (raises ConfigError)."""
    return _C.model.parse_model_config(json.dumps(_config_dict(config)))


def _config_dict(config: str | os.PathLike | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(config, Mapping):
        return dict(config)
    if hasattr(config, "to_dict"):  # a transformers PretrainedConfig
        return config.to_dict()
    path = os.fspath(config)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    config = read_json_file(path, CheckpointError)
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: a model config must be a JSON object, got {type(config).__name__}")
    return config


class CausalLM:
    """Decoder-only LM. ``config``: an HF config dict, a transformers config, or a config.json path."""

    _value_head = False
    #: The checkpoint directory the model was loaded from (transformers' attribute), or None; trainers find the
    #: tokenizer there.
    name_or_path: str | None = None

    def __init__(self, config: str | os.PathLike | Mapping[str, Any]) -> None:
        self._module = _C.model.CausalLM(json.dumps(_config_dict(config)), self._value_head)

    @classmethod
    def _from_module(cls, module: Any) -> "CausalLM":
        """Wraps an existing ``verl._C.model.CausalLM`` (e.g. from ``load_pretrained``)."""
        if module.value_head != cls._value_head:
            raise ValueError(f"{cls.__name__} cannot wrap a module with value_head={module.value_head}")
        self = cls.__new__(cls)
        self._module = module
        return self

    @property
    def config(self) -> dict[str, Any]:
        return self._module.config

    @property
    def dtype(self) -> torch.dtype:
        return getattr(torch, self._module.dtype)

    @property
    def device(self) -> torch.device:
        return torch.device(self._module.device)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """HF-named parameters; the tensors are the model's own (in-place edits change the model)."""
        return dict(self._module.state_dict())

    def named_parameters(self):
        return iter(sorted(self.state_dict().items()))

    def parameters(self):
        return (p for _, p in self.named_parameters())

    def load_state_dict(self, state_dict: Mapping[str, torch.Tensor], strict: bool = True) -> None:
        """Copies tensors in by HF name; raises verl.CheckpointError listing bad names."""
        self._module.load_state_dict(dict(state_dict), strict)

    def to(self, device: str | torch.device | None = None, dtype: torch.dtype | None = None) -> "CausalLM":
        if isinstance(device, torch.dtype):
            device, dtype = None, device
        self._module.to(None if device is None else str(torch.device(device)),
                        None if dtype is None else _DTYPE_NAMES[dtype])
        return self

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """(bs, seq) ids, left padding allowed -> (bs, seq, vocab) logits ((bs, seq) values for ValueModel)."""
        return self._module.forward(input_ids, attention_mask, position_ids)

    __call__ = forward

    def hidden_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                      position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Final-norm hidden states (bs, seq, hidden)."""
        return self._module.hidden_states(input_ids, attention_mask, position_ids)

    def forward_packed(self, input_ids: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
        """Concatenated sequences (total,) with cumulative lengths (n+1,) -> (total, vocab) / (total,)."""
        return self._module.forward_packed(input_ids, cu_seqlens)

    def save_pretrained(self, path: str | os.PathLike, tokenizer_dir: str | os.PathLike | None = None,
                        max_shard_size: int | str = "5GB") -> list[str]:
        """Writes a transformers checkpoint directory (config.json, safetensors in the model's dtype,
        sharded with an index above ``max_shard_size``, tokenizer files copied from ``tokenizer_dir``),
        atomically: an existing ``path`` is replaced only once the new directory is complete. Without
        ``tokenizer_dir`` the tokenizer files already in ``path`` are kept. Returns the files written."""
        return write_pretrained(self._module, path, tokenizer_dir, max_shard_size)

    # ---- LoRA (verl/model/lora.h: PEFT's semantics and names) ----

    def add_adapters(self, lora_rank: int, lora_alpha: float = 16, target_modules: str | list[str] = "all-linear",
                     exclude_modules: str | list[str] | None = None, use_rslora: bool = False,
                     seed: int = 0) -> list[str]:
        """LoRA adapters on the decoder linears ``target_modules`` selects (PEFT's rules: a list of module names
        matched by whole name or suffix, a regex string matched whole, or ``all-linear``), ``exclude_modules`` checked
        first. A is drawn from ``seed`` as PEFT draws it, B is zero, so outputs are unchanged; every other weight is
        frozen (a ValueModel's score head keeps training). Returns the adapted modules' names."""
        return self._module.add_adapters(int(lora_rank), float(lora_alpha), target_modules, exclude_modules,
                                         bool(use_rslora), int(seed))

    @property
    def lora(self) -> dict[str, Any] | None:
        """The adapters' settings (lora_rank, lora_alpha, target_modules, exclude_modules, use_rslora, scaling)."""
        return self._module.lora

    @contextlib.contextmanager
    def disable_adapter(self):
        """Within the block the model computes as its base model (PEFT's ``disable_adapter()``)."""
        was = self._module.adapters_enabled
        self._module.set_adapters_enabled(False)
        try:
            yield self
        finally:
            self._module.set_adapters_enabled(was)

    def adapter_state_dict(self) -> dict[str, torch.Tensor]:
        """The adapters' tensors (model.layers.N.self_attn.q_proj.lora_A.weight, ...), the live ones."""
        return dict(self._module.adapter_state())

    def merged_state_dict(self) -> dict[str, torch.Tensor]:
        """The weights with every adapter folded in (W + (B A) * scaling): a plain model's state dict."""
        return dict(self._module.merged_state())

    def save_adapter(self, path: str | os.PathLike, base_model_name_or_path: str | None = None) -> list[str]:
        """Writes the adapters as PEFT does (adapter_config.json + adapter_model.safetensors), atomically;
        ``peft.PeftModel.from_pretrained(base, path)`` loads them. Returns the files written."""
        base = base_model_name_or_path if base_model_name_or_path is not None else (self.name_or_path or "")
        return _C.model.save_peft_adapter(self._module, os.fspath(path), base)

    def load_adapter(self, path: str | os.PathLike) -> dict[str, Any]:
        """Loads a PEFT LoRA adapter directory (adding its adapters if the model has none); returns its settings."""
        return _C.model.load_peft_adapter_into(self._module, os.fspath(path))

    def gradient_checkpointing_enable(self) -> None:
        self._module.set_gradient_checkpointing(True)

    def gradient_checkpointing_disable(self) -> None:
        self._module.set_gradient_checkpointing(False)


class ValueModel(CausalLM):
    """Critic: the decoder with a ``score`` Linear(hidden, 1) head returning (bs, seq) values."""

    _value_head = True


def init_weights(model: CausalLM, seed: int = 0, initializer_range: float | None = None) -> CausalLM:
    """transformers' random initialisation for a model built from a config, in place (``verl::model::init_weights``):
    Linear and Embedding weights ~ N(0, initializer_range) (config.json's, default 0.02), biases 0, RMSNorm weights 1,
    the pad token's embedding row 0; the same seed gives the same weights on any device. Returns ``model``."""
    _C.model.init_weights(model._module, int(seed), initializer_range)
    return model
