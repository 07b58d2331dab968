"""The tutorials' YAML shape for ``RLConfig``, translated onto RLConfig's short names and verl's keys.

The shape (every section optional; verl's own sections such as ``data`` or ``trainer`` may sit beside it)::

    model:      {name_or_path: /models/Qwen2.5-0.5B-Instruct, torch_dtype: bfloat16}
    algorithm:  {name: grpo, grpo: {num_generations: 8, beta: 0.04, clip_ratio: 0.2}}
    training:   {learning_rate: 1.0e-6, batch_size: 16, num_epochs: 1, seed: 0, output_dir: ckpt}
    generation: {max_new_tokens: 256, temperature: 1.0, top_p: 1.0}
    reward:     {type: function}

A mapping has this shape when it has a ``training`` or ``generation`` section, a ``model`` section (RLConfig's
``model`` short name is a path, not a mapping), ``algorithm.name`` or ``reward.type``. Every key of ``model``,
``training`` and ``generation`` and of the algorithm's own section must be in the tables below; anything else is
a ``verl.ConfigError`` naming all unknown keys. Other keys of ``algorithm`` and ``reward`` are verl's
(``algorithm.gamma``, ``reward.custom_reward_function.path``) and are checked by the config tree.
``algorithm.name`` becomes RLConfig's ``algorithm`` short name, mapped by ``adv_estimator_of`` as
``RLConfig(algorithm=...)`` is: ``ppo`` is verl's GAE with a critic, ``grpo`` / ``rloo`` / ... verl's estimators.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError

__all__ = ["is_tutorial_shape", "translate", "adv_estimator_of", "MODEL_KEYS", "ALGORITHM_KEYS", "TRAINING_KEYS",
           "GENERATION_KEYS", "REWARD_TYPES", "ALGORITHM_NAMES"]

_ACTOR = "actor_rollout_ref.actor"
_ROLLOUT = "actor_rollout_ref.rollout"

#: ``model.<key>`` -> RLConfig short name or dotted verl key
MODEL_KEYS = {"name_or_path": "model", "path": "model", "tokenizer_name_or_path": "tokenizer",
              "torch_dtype": f"{_ACTOR}.fsdp_config.model_dtype", "dtype": f"{_ACTOR}.fsdp_config.model_dtype",
              "enable_gradient_checkpointing": "actor_rollout_ref.model.enable_gradient_checkpointing",
              # LoRA (verl's keys; a top-level peft_config: mapping takes PEFT's field names instead)
              "lora_rank": "lora_rank", "lora_alpha": "lora_alpha", "target_modules": "target_modules",
              "exclude_modules": "exclude_modules", "lora_adapter_path": "lora_adapter_path"}

#: ``algorithm.<name>.<key>`` -> short name / verl key (``beta`` is handled on its own: the KL loss coefficient,
#: with the KL loss on when it is > 0, as TRL's GRPO ``beta``)
ALGORITHM_KEYS = {"num_generations": "n", "clip_ratio": "clip_ratio", "clip_ratio_low": "clip_epsilon_low",
                  "clip_ratio_high": "clip_epsilon_high", "beta": None, "kl_loss_type": "kl_loss_type",
                  "entropy_coeff": "entropy_coeff", "gamma": "gamma", "lam": "lam", "ppo_epochs": "ppo_epochs",
                  "loss_agg_mode": "loss_agg_mode", "norm_adv_by_std_in_grpo": "norm_adv_by_std_in_grpo"}

#: the tutorials' algorithm names -> ``algorithm.adv_estimator``: PPO is verl's GAE estimator, with a critic
#: (``critic.enable`` null means a critic exactly for GAE). The one table for RLConfig's ``algorithm=`` and the
#: YAML's ``algorithm.name`` (``adv_estimator_of``); any other name is taken as verl's estimator name.
ALGORITHM_NAMES = {"ppo": "gae", "gae": "gae", "grpo": "grpo", "rloo": "rloo", "remax": "remax",
                   "reinforce_plus_plus": "reinforce_plus_plus", "reinforce++": "reinforce_plus_plus",
                   "opo": "opo", "gpg": "gpg", "grpo_passk": "grpo_passk"}

TRAINING_KEYS = {"learning_rate": "learning_rate", "lr": "learning_rate", "batch_size": "batch_size",
                 "train_batch_size": "batch_size", "rollout_batch_size": "batch_size",
                 "mini_batch_size": "mini_batch_size", "micro_batch_size": "micro_batch_size",
                 "num_epochs": "total_epochs", "epochs": "total_epochs", "total_epochs": "total_epochs",
                 "max_steps": "total_training_steps", "total_training_steps": "total_training_steps",
                 "ppo_epochs": "ppo_epochs", "seed": "seed", "output_dir": "output_dir", "save_steps": "save_freq",
                 "save_freq": "save_freq", "eval_steps": "test_freq", "test_freq": "test_freq",
                 "max_grad_norm": "grad_clip", "grad_clip": "grad_clip", "weight_decay": "weight_decay",
                 "warmup_steps": "warmup_steps", "lr_scheduler_type": "lr_scheduler", "device": "device",
                 "train_files": "train_files", "val_files": "val_files", "logger": "logger",
                 "project_name": "project_name", "experiment_name": "experiment_name"}

GENERATION_KEYS = {"max_new_tokens": "max_response_length", "max_response_length": "max_response_length",
                   "max_tokens": "max_response_length", "max_prompt_length": "max_prompt_length",
                   "temperature": "temperature", "top_p": "top_p", "top_k": "top_k",
                   "do_sample": f"{_ROLLOUT}.do_sample"}

#: ``reward.type`` -> verl's ``reward.reward_manager.name``: a rule / Python function is scored sample by sample
#: (``naive``: the ``reward_fn`` given to the trainer, or verl's ``default_compute_score`` by data source)
REWARD_TYPES = {"function": "naive", "custom": "naive", "rule": "naive", "naive": "naive", "batch": "batch",
                "dapo": "dapo"}

_DTYPES = {"float32": "fp32", "fp32": "fp32", "bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16"}


def adv_estimator_of(name: Any) -> Any:
    """``algorithm.adv_estimator`` for an algorithm name: a tutorial name (``ALGORITHM_NAMES``, any case: ``"ppo"``
    and ``"PPO"`` are GAE) mapped, any other value as given (verl's estimator names, ``grpo_vectorized``, ``sppo``,
    one registered with ``register_adv_est``: the trainer checks it against the registry when it starts)."""
    if isinstance(name, str):
        return ALGORITHM_NAMES.get(name.lower(), name)
    return name


def is_tutorial_shape(data: Mapping[str, Any]) -> bool:
    """Whether ``data`` uses the tutorials' shape (see the module docstring)."""
    algorithm, reward = data.get("algorithm"), data.get("reward")
    return ("training" in data or "generation" in data or isinstance(data.get("model"), Mapping)
            or (isinstance(algorithm, Mapping) and "name" in algorithm)
            or (isinstance(reward, Mapping) and "type" in reward))


def _section(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"RLConfig: '{name}' must be a mapping in the tutorial config shape, got "
                          f"{type(value).__name__} {value!r}")
    return value


def _unknown(key: str, table: Mapping[str, Any]) -> str:
    section, _, name = key.rpartition(".")
    close = difflib.get_close_matches(name, list(table), n=1, cutoff=0.6)
    return f"{key} (did you mean {section}.{close[0]}?)" if close else key


def translate(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` (tutorial shape) as RLConfig's dict form: short names and dotted verl keys; verl sections and
    other keys as they were. ConfigError naming every unknown key."""
    out: dict[str, Any] = {k: v for k, v in data.items() if k not in ("model", "algorithm", "training", "generation",
                                                                      "reward")}
    unknown: list[str] = []

    def put(target: str, value: Any) -> None:
        out[target] = value

    for key, value in _section(data, "model").items():
        if key not in MODEL_KEYS:
            unknown.append(_unknown(f"model.{key}", MODEL_KEYS))
        elif MODEL_KEYS[key].endswith("model_dtype"):
            if str(value).removeprefix("torch.") not in _DTYPES:
                raise ConfigError(f"RLConfig: model.{key}={value!r} is not one of {sorted(_DTYPES)}")
            put(MODEL_KEYS[key], _DTYPES[str(value).removeprefix("torch.")])
        else:
            put(MODEL_KEYS[key], value)

    algorithm = dict(_section(data, "algorithm"))
    name = algorithm.pop("name", None)
    if name is not None:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"RLConfig: algorithm.name must be a non-empty string, got {name!r}")
        put("algorithm", name)  # RLConfig's algorithm= maps it (adv_estimator_of)
        own = algorithm.pop(name, None) or {}
        if not isinstance(own, Mapping):
            raise ConfigError(f"RLConfig: algorithm.{name} must be a mapping, got {type(own).__name__}")
        for key, value in own.items():
            if key not in ALGORITHM_KEYS:
                unknown.append(_unknown(f"algorithm.{name}.{key}", ALGORITHM_KEYS))
            elif key == "beta":
                put("kl_coef", value)
                put("use_kl_loss", bool(value))
            else:
                put(ALGORITHM_KEYS[key], value)
    for key, value in algorithm.items():  # verl's own algorithm.* keys
        out[f"algorithm.{key}"] = value

    for section, table in (("training", TRAINING_KEYS), ("generation", GENERATION_KEYS)):
        for key, value in _section(data, section).items():
            if key not in table:
                unknown.append(_unknown(f"{section}.{key}", table))
            else:
                put(table[key], value)

    reward = dict(_section(data, "reward"))
    reward_type = reward.pop("type", None)
    if reward_type is not None:
        if reward_type not in REWARD_TYPES:
            raise ConfigError(f"RLConfig: reward.type={reward_type!r} is not one of {sorted(REWARD_TYPES)}")
        put("reward_manager", REWARD_TYPES[reward_type])
    for key, value in reward.items():  # verl's own reward.* keys
        out[f"reward.{key}"] = value

    if unknown:
        raise ConfigError(f"RLConfig: unknown key(s) in the tutorial config shape: {', '.join(unknown)}")
    return out
