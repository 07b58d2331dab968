"""Conversions shared by the worker wrappers: config and model arguments to their C++ objects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verl import _C
from verl.config import Config
from verl.protocol import DataProto

ConfigLike = Config | _C.Config | Mapping[str, Any] | None


def cpp_config(config: ConfigLike) -> _C.Config:
    """A C++ config: verl's defaults when None; a mapping sets dotted keys (``{"actor_rollout_ref.actor.ppo_epochs": 2}``)."""
    if config is None:
        return _C.Config()
    if isinstance(config, _C.Config):
        return config
    if isinstance(config, Config):
        return config.cpp
    if isinstance(config, Mapping):
        cpp = _C.Config()
        for key, value in config.items():
            cpp.set(key, value)
        cpp.validate()
        return cpp
    raise TypeError(f"config must be a verl.Config, a mapping of dotted keys or None, got {type(config).__name__}")


def cpp_model(model: Any, value_head: bool) -> _C.model.CausalLM:
    """The shared C++ module of a verl.models.transformer model (or a raw verl._C.model.CausalLM)."""
    module = getattr(model, "_module", model)
    if not isinstance(module, _C.model.CausalLM):
        raise TypeError(f"model must be a verl.models.transformer model, got {type(model).__name__}")
    if module.value_head != value_head:
        kind = "ValueModel (value head)" if value_head else "CausalLM (LM head)"
        raise ValueError(f"this worker needs a {kind} model")
    return module


def to_cpp(data: DataProto | _C.DataProto) -> _C.DataProto:
    return data if isinstance(data, _C.DataProto) else data.to_cpp()
