"""``RLConfig``: the training config with short names, producing verl's config tree.

>>> cfg = RLConfig(algorithm="grpo", model="Qwen/Qwen2.5-0.5B-Instruct", batch_size=64, n=8,
...                learning_rate=1e-6, max_response_length=256, overrides=["trainer.logger=[console]"])
>>> tree = cfg.to_config()          # a verl.Config: tree.algorithm.adv_estimator == "grpo"

``algorithm`` takes verl's advantage estimator names and the tutorials' algorithm names
(``tutorial_config.ALGORITHM_NAMES``, the table the tutorial YAML's ``algorithm.name`` uses too): ``"ppo"`` is PPO
with a critic, i.e. ``algorithm.adv_estimator=gae`` (verl trains a critic for GAE), ``"reinforce++"`` is
``reinforce_plus_plus``. ``adv_estimator`` is verl's key as it is.

Layers, later wins: verl's defaults -> a base (a verl YAML file, a ``verl.Config`` or a dict) -> the short names ->
``overrides`` (verl ``key=value`` strings, ``+key=value`` to add a key). ``SHORT_NAMES`` lists every short name
and the verl keys it sets (some set several: ``clip_epsilon`` sets ``clip_ratio`` and both of its bounds,
``model`` the actor's and the critic's path, ``seed`` every seed). An unknown short name is a
``verl.ConfigError`` suggesting the closest one; a bad value is the tree's own ``ConfigError`` /
``ConfigTypeError`` naming the verl key.

From a dict (``RLConfig.from_dict``): keys are short names, dotted verl keys (``"data.shuffle": False``), verl
sections given as mappings (``{"trainer": {"save_freq": 5}}``) and ``"overrides"``; or the tutorials' shape
(``model.name_or_path``, ``algorithm.name`` / ``algorithm.grpo.*``, ``training.*``, ``generation.*``,
``reward.type``: see ``verl.trainer.tutorial_config``). From a YAML file (``RLConfig.from_yaml`` or
``RLConfig("run.yaml")``): a verl config file, or a mapping in one of the dict forms above.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..config import Config, load_config
from ..errors import ConfigError
from .peft_config import LORA_KEYS, peft_lora_settings
from .tutorial_config import adv_estimator_of, is_tutorial_shape, translate

__all__ = ["RLConfig", "SHORT_NAMES"]

_ACTOR = "actor_rollout_ref.actor"
_ROLLOUT = "actor_rollout_ref.rollout"

#: short name -> the verl keys it sets (all of them, to the same value)
SHORT_NAMES: dict[str, tuple[str, ...]] = {
    # algorithm
    "algorithm": ("algorithm.adv_estimator",),
    "adv_estimator": ("algorithm.adv_estimator",),
    "gamma": ("algorithm.gamma",),
    "lam": ("algorithm.lam",),
    "norm_adv_by_std_in_grpo": ("algorithm.norm_adv_by_std_in_grpo",),
    "use_kl_in_reward": ("algorithm.use_kl_in_reward",),
    "kl_coef": (f"{_ACTOR}.kl_loss_coef", "algorithm.kl_ctrl.kl_coef"),
    "use_kl_loss": (f"{_ACTOR}.use_kl_loss",),
    "kl_loss_type": (f"{_ACTOR}.kl_loss_type",),
    "entropy_coeff": (f"{_ACTOR}.entropy_coeff",),
    "clip_epsilon": (f"{_ACTOR}.clip_ratio", f"{_ACTOR}.clip_ratio_low", f"{_ACTOR}.clip_ratio_high"),
    "clip_ratio": (f"{_ACTOR}.clip_ratio", f"{_ACTOR}.clip_ratio_low", f"{_ACTOR}.clip_ratio_high"),
    "clip_epsilon_low": (f"{_ACTOR}.clip_ratio_low",),
    "clip_epsilon_high": (f"{_ACTOR}.clip_ratio_high",),
    "loss_agg_mode": (f"{_ACTOR}.loss_agg_mode",),
    "policy_loss": (f"{_ACTOR}.policy_loss.loss_mode",),
    "filter_groups": ("algorithm.filter_groups.enable",),
    # batch sizes
    "batch_size": ("data.train_batch_size",),
    "train_batch_size": ("data.train_batch_size",),
    "gen_batch_size": ("data.gen_batch_size",),
    "val_batch_size": ("data.val_batch_size",),
    "mini_batch_size": (f"{_ACTOR}.ppo_mini_batch_size",),
    "micro_batch_size": (f"{_ACTOR}.ppo_micro_batch_size_per_gpu", f"{_ROLLOUT}.log_prob_micro_batch_size_per_gpu",
                         "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
                         "critic.ppo_micro_batch_size_per_gpu"),
    "use_dynamic_bsz": (f"{_ACTOR}.use_dynamic_bsz",),
    "max_token_len_per_gpu": (f"{_ACTOR}.ppo_max_token_len_per_gpu",),
    "ppo_epochs": (f"{_ACTOR}.ppo_epochs",),
    # optimisation
    "learning_rate": (f"{_ACTOR}.optim.lr",),
    "lr": (f"{_ACTOR}.optim.lr",),
    "critic_learning_rate": ("critic.optim.lr",),
    "weight_decay": (f"{_ACTOR}.optim.weight_decay",),
    "warmup_steps": (f"{_ACTOR}.optim.lr_warmup_steps",),
    "lr_scheduler": (f"{_ACTOR}.optim.lr_scheduler_type",),
    "grad_clip": (f"{_ACTOR}.grad_clip",),
    # rollout
    "n": (f"{_ROLLOUT}.n",),
    "temperature": (f"{_ROLLOUT}.temperature",),
    "top_p": (f"{_ROLLOUT}.top_p",),
    "top_k": (f"{_ROLLOUT}.top_k",),
    # model and data
    "model": ("actor_rollout_ref.model.path", "critic.model.path"),
    "tokenizer": ("actor_rollout_ref.model.tokenizer_path", "critic.model.tokenizer_path"),
    "train_files": ("data.train_files",),
    "val_files": ("data.val_files",),
    "max_prompt_length": ("data.max_prompt_length",),
    "max_response_length": ("data.max_response_length",),
    "prompt_key": ("data.prompt_key",),
    "truncation": ("data.truncation",),
    "filter_overlong_prompts": ("data.filter_overlong_prompts",),
    "shuffle": ("data.shuffle",),
    "reward_manager": ("reward.reward_manager.name",),
    # LoRA on the actor (PEFT's semantics; the reference policy is then the base model)
    "lora_rank": ("actor_rollout_ref.model.lora_rank",),
    "lora_alpha": ("actor_rollout_ref.model.lora_alpha",),
    "target_modules": ("actor_rollout_ref.model.target_modules",),
    "exclude_modules": ("actor_rollout_ref.model.exclude_modules",),
    "lora_adapter_path": ("actor_rollout_ref.model.lora_adapter_path",),
    # a peft.LoraConfig (TRL's peft_config=): its r / lora_alpha / target_modules / exclude_modules (peft_config.py)
    "peft_config": tuple(LORA_KEYS.values()),
    # trainer
    "epochs": ("trainer.total_epochs",),
    "total_epochs": ("trainer.total_epochs",),
    "total_steps": ("trainer.total_training_steps",),
    "total_training_steps": ("trainer.total_training_steps",),
    "seed": ("data.seed", f"{_ACTOR}.data_loader_seed", f"{_ROLLOUT}.seed", "critic.data_loader_seed"),
    "device": ("trainer.device",),
    "save_freq": ("trainer.save_freq",),
    "test_freq": ("trainer.test_freq",),
    "val_before_train": ("trainer.val_before_train",),
    "output_dir": ("trainer.default_local_dir",),
    "resume_mode": ("trainer.resume_mode",),
    "max_ckpt_to_keep": ("trainer.max_actor_ckpt_to_keep", "trainer.max_critic_ckpt_to_keep"),
    "critic_warmup": ("trainer.critic_warmup",),
    "project_name": ("trainer.project_name",),
    "experiment_name": ("trainer.experiment_name",),
    "logger": ("trainer.logger",),
    "n_gpus_per_node": ("trainer.n_gpus_per_node",),
    "nnodes": ("trainer.nnodes",),
}

_SECTIONS = tuple(Config().keys())  # verl's top-level sections (algorithm, data, trainer, ...)


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, list(SHORT_NAMES) + list(_SECTIONS), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _set_tree(cfg: Config, key: str, value: Any) -> None:
    """Sets ``key`` to ``value``; a mapping onto a map node of the tree is merged leaf by leaf (so the C++ tree
    checks each key), onto an empty / free-form node it is set whole."""
    if isinstance(value, Config):
        value = value.to_dict(resolve=False)
    if isinstance(value, Mapping) and key in cfg:
        node = cfg.cpp.raw(key)
        if isinstance(node, dict) and node:
            for sub_key, sub_value in value.items():
                _set_tree(cfg, f"{key}.{sub_key}", sub_value)
            return
    cfg[key] = value


class RLConfig:
    """Training settings by short name (see the module docstring); ``to_config()`` gives the verl tree."""

    def __init__(self, config: str | os.PathLike | Mapping | Config | None = None, *,
                 overrides: Iterable[str] = (), **short_names: Any) -> None:
        for name in short_names:
            if name not in SHORT_NAMES:
                raise ConfigError(f"RLConfig: unknown setting '{name}'{_suggest(name)} (verl keys go in "
                                  "overrides=[\"key=value\"]; RLConfig.SHORT_NAMES lists the short names)")
        if isinstance(overrides, str):
            raise ConfigError("RLConfig: overrides must be a list of 'key=value' strings, got one string")
        self.base = config
        self.overrides = list(overrides)
        self.values = dict(short_names)
        self.to_config()  # fail now, not when training starts

    SHORT_NAMES = SHORT_NAMES

    # -- construction -----------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RLConfig:
        """From short names, dotted verl keys, verl sections (mappings) and ``overrides``."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"RLConfig.from_dict needs a mapping, got {type(data).__name__}")
        return cls(dict(data))

    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> RLConfig:
        """From a verl YAML file or a YAML mapping in the ``from_dict`` form."""
        return cls(os.fspath(path))

    def replace(self, **changes: Any) -> RLConfig:
        """A copy with some short names (or ``overrides=``) changed, like ``dataclasses.replace``."""
        overrides = changes.pop("overrides", self.overrides)
        return RLConfig(self.base, overrides=overrides, **{**self.values, **changes})

    # -- building ---------------------------------------------------------------------------------
    def _base_config(self) -> tuple[Config, list[str]]:
        """(the tree after the base layer, overrides found inside a dict base)."""
        base = self.base
        if base is None:
            return load_config(), []
        if isinstance(base, Config):
            return base.copy(), []
        if isinstance(base, (str, os.PathLike)):
            path = os.fspath(base)
            if not os.path.isfile(path):
                raise ConfigError(f"RLConfig: config file not found: {path}")
            mapping = _yaml_mapping_with_short_names(path)
            if mapping is None:  # a verl config file: the C++ loader reports errors with file and line
                return load_config(path), []
            base = mapping
        if not isinstance(base, Mapping):
            raise ConfigError(f"RLConfig: config must be a path, dict or verl.Config, got {type(base).__name__}")
        if is_tutorial_shape(base):
            base = translate(base)
        cfg = load_config()
        extra_overrides: list[str] = []
        short: dict[str, Any] = {}
        for key, value in base.items():
            if key == "overrides":
                extra_overrides = list(value or [])
            elif key == "defaults":
                continue  # Hydra's defaults list: verl's defaults are always the first layer here
            elif "." in key or (key in _SECTIONS and isinstance(value, Mapping)):
                _set_tree(cfg, key, value)
            elif key in SHORT_NAMES:
                short[key] = value
            else:
                raise ConfigError(f"RLConfig: unknown setting '{key}'{_suggest(key)}")
        self._apply_short_names(cfg, short)
        return cfg, extra_overrides

    @staticmethod
    def _apply_short_names(cfg: Config, values: Mapping[str, Any]) -> None:
        if "peft_config" in values:
            both = sorted(set(values) & {"lora_rank", "lora_alpha", "target_modules", "exclude_modules"})
            if both and values["peft_config"] is not None:
                raise ConfigError(f"RLConfig: peft_config and {', '.join(both)} both set the actor's LoRA; give one")
        for name, value in values.items():
            if name == "peft_config":
                for key, setting in (peft_lora_settings(value) if value is not None else {}).items():
                    _set_tree(cfg, key, setting)
                continue
            if name == "algorithm":  # the tutorials' names: "ppo" is GAE with a critic (adv_estimator= is verl's)
                value = adv_estimator_of(value)
            for key in SHORT_NAMES[name]:
                _set_tree(cfg, key, value)

    def to_config(self) -> Config:
        """A new verl.Config: defaults, base, short names, overrides; validated."""
        cfg, base_overrides = self._base_config()
        self._apply_short_names(cfg, self.values)
        cfg.override(*base_overrides, *self.overrides)
        return cfg.validate()

    # -- access -----------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in SHORT_NAMES:
            raise AttributeError(f"RLConfig has no setting '{name}'{_suggest(name)}")
        if name in self.values:
            return self.values[name]
        if name == "peft_config":  # a setting, not a key of the tree
            return None
        return self.to_config()[SHORT_NAMES[name][0]]

    def __setattr__(self, name: str, value: Any) -> None:
        """``cfg.n = 8`` sets a short name (checked at once: a bad value leaves the config unchanged)."""
        if name in ("base", "overrides", "values"):
            object.__setattr__(self, name, value)
            return
        if name not in SHORT_NAMES:
            raise ConfigError(f"RLConfig: unknown setting '{name}'{_suggest(name)}")
        had, previous = name in self.values, self.values.get(name)
        self.values[name] = value
        try:
            self.to_config()
        except Exception:
            if had:
                self.values[name] = previous
            else:
                del self.values[name]
            raise

    def to_dict(self) -> dict:
        """The whole verl tree as nested dicts (interpolations resolved)."""
        return self.to_config().to_dict()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RLConfig) and self.to_dict() == other.to_dict()

    __hash__ = None  # mutable, compared by value

    def __repr__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in self.values.items()]
        if self.base is not None:
            parts.insert(0, f"config={self.base!r}" if not isinstance(self.base, Config) else "config=<verl.Config>")
        if self.overrides:
            parts.append(f"overrides={self.overrides!r}")
        return f"RLConfig({', '.join(parts)})"


def _yaml_mapping_with_short_names(path: str) -> dict | None:
    """The file as a dict when its top level uses short names, ``overrides`` or the tutorials' shape; None for a
    plain verl file."""
    import yaml

    with open(path, encoding="utf-8") as f:
        try:
            data = yaml.safe_load(f)
        except yaml.YAMLError:
            return None  # let the C++ loader report it with the line
    if not isinstance(data, dict):
        return None
    uses_short = any(k == "overrides" or (k in SHORT_NAMES and not (k in _SECTIONS and isinstance(v, Mapping)))
                     for k, v in data.items())
    return data if uses_short or is_tutorial_shape(data) else None
