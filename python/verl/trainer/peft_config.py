"""A PEFT ``LoraConfig`` as verl's LoRA keys: the form TRL's trainers take (``GRPOTrainer(peft_config=LoraConfig(...))``)
for ``RLConfig(peft_config=...)``, ``PPOTrainer(..., peft_config=...)`` and the tutorial YAML's ``peft_config:``.

>>> from peft import LoraConfig
>>> cfg = verl.RLConfig(algorithm="grpo", model=path, peft_config=LoraConfig(r=32, lora_alpha=64,
...                                                                           target_modules="all-linear"))

verl's LoRA keys say everything verl's adapters do, so PEFT's ``r``, ``lora_alpha``, ``target_modules`` and
``exclude_modules`` become ``actor_rollout_ref.model.lora_rank / lora_alpha / target_modules / exclude_modules``
(``target_modules`` None is PEFT's default for the Llama / Qwen / Mistral families: ``q_proj`` and ``v_proj``).
Every other field must keep PEFT's default -- compared with ``LoraConfig()``'s own values, so the fields a newer PEFT
adds are checked too -- because it would train something else (dropout, DoRA, rsLoRA, biases, other
initialisations, modules trained in full, some layers only): a ``verl.ConfigError`` naming the field. A mapping in
``adapter_config.json``'s form is taken as well (without PEFT installed, only the fields listed in ``_DEFAULTS``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError

__all__ = ["peft_lora_settings", "LORA_KEYS"]

#: PEFT field -> verl key of the actor (RLConfig's short name of the same name sets it)
LORA_KEYS = {"r": "actor_rollout_ref.model.lora_rank", "lora_alpha": "actor_rollout_ref.model.lora_alpha",
             "target_modules": "actor_rollout_ref.model.target_modules",
             "exclude_modules": "actor_rollout_ref.model.exclude_modules"}

#: fields that describe where a config came from or how it is used, not what is trained
_METADATA = {"peft_type", "task_type", "base_model_name_or_path", "revision", "inference_mode", "auto_mapping",
             "peft_version", "runtime_config"}

#: PEFT's defaults of the fields users set most, for mappings when PEFT is not installed
_DEFAULTS = {"lora_dropout": 0.0, "bias": "none", "use_rslora": False, "use_dora": False, "fan_in_fan_out": False,
             "modules_to_save": None, "init_lora_weights": True, "layers_to_transform": None,
             "layers_pattern": None, "rank_pattern": {}, "alpha_pattern": {}, "megatron_config": None,
             "megatron_core": "megatron.core", "loftq_config": {}, "layer_replication": None, "lora_bias": False}

#: PEFT's default target modules for the families verl-cpp's decoder implements
_DEFAULT_TARGETS = ["q_proj", "v_proj"]


def _fields(peft_config: Any) -> dict[str, Any]:
    if isinstance(peft_config, Mapping):
        return dict(peft_config)
    to_dict = getattr(peft_config, "to_dict", None)
    if callable(to_dict):
        return dict(to_dict())
    raise ConfigError(f"peft_config must be a peft.LoraConfig or a mapping of its fields (adapter_config.json's "
                      f"form), got {type(peft_config).__name__}")


@functools.lru_cache(maxsize=1)
def _defaults() -> dict[str, Any] | None:
    """LoraConfig()'s fields (read only), once per process: RLConfig rebuilds its tree on every read of a setting."""
    try:
        from peft import LoraConfig
    except ImportError:
        return None
    return dict(LoraConfig().to_dict())


def _selector(field: str, value: Any) -> Any:
    """target_modules / exclude_modules as verl's keys take them: a string (all-linear, a regex) or a list."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    raise ConfigError(f"peft_config.{field} must be a string or a list of module names, got {value!r}")


def peft_lora_settings(peft_config: Any) -> dict[str, Any]:
    """``{verl key: value}`` of a PEFT ``LoraConfig`` (or its fields as a mapping); ConfigError naming a field verl's
    LoRA does not implement."""
    fields = _fields(peft_config)
    peft_type = fields.get("peft_type", "LORA")
    peft_type = getattr(peft_type, "value", peft_type)  # PeftType.LORA
    if peft_type != "LORA":
        raise ConfigError(f"peft_config.peft_type = {peft_type!r}: verl's adapters are LoRA (LORA) only")
    defaults = _defaults()
    known = defaults if defaults is not None else _DEFAULTS
    for field, value in fields.items():
        if field in LORA_KEYS or field in _METADATA:
            continue
        if field not in known:
            if defaults is None:
                raise ConfigError(f"peft_config.{field}: not a field verl-cpp knows without PEFT installed (its "
                                  f"defaults decide what a field means; pip install peft, or leave it out)")
            raise ConfigError(f"peft_config.{field}: not a field of peft.LoraConfig")
        default = known[field]
        if isinstance(value, (set, frozenset)) and isinstance(default, (list, tuple, type(None))):
            value = sorted(value) or None
        if value != default and not (value in (None, {}, []) and default in (None, {}, [])):
            raise ConfigError(f"peft_config.{field} = {value!r}: verl's LoRA trains adapters with PEFT's default "
                              f"{field} ({default!r}) only; verl's keys (actor_rollout_ref.model.lora_rank / "
                              "lora_alpha / target_modules / exclude_modules) say all it does")
    if "r" not in fields or "lora_alpha" not in fields:
        raise ConfigError("peft_config needs r and lora_alpha (a peft.LoraConfig always has them)")
    out = {LORA_KEYS["r"]: fields["r"], LORA_KEYS["lora_alpha"]: fields["lora_alpha"]}
    targets = _selector("target_modules", fields.get("target_modules"))
    out[LORA_KEYS["target_modules"]] = _DEFAULT_TARGETS if targets is None else targets
    exclude = _selector("exclude_modules", fields.get("exclude_modules"))
    if exclude is not None:
        out[LORA_KEYS["exclude_modules"]] = exclude
    return out
