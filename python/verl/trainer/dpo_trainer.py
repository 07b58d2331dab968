"""``verl.DPOTrainer``: Direct Preference Optimization on the C++ DPO step, driven like the SFT trainer.

>>> from verl import DPOTrainer
>>> trainer = DPOTrainer(config={"model.path": "path/to/hf_model", "data.train_files": "pairs.jsonl",
...                              "data.train_batch_size": 32, "optim.lr": 5e-7, "trainer.total_epochs": 1,
...                              "dpo": {"beta": 0.1, "loss_type": "sigmoid"}})
>>> trainer.fit()
>>> trainer.hf_model_path          # .../global_step_N/actor: use it as actor_rollout_ref.model.path

or ``python -m verl.trainer.dpo_trainer model.path=... data.train_files=pairs.jsonl dpo.beta=0.1 ...``.

Data: rows with ``prompt`` (text or chat messages), ``chosen`` and ``rejected`` (text or assistant messages), JSONL /
JSON / Parquet (``verl.utils.dataset.PreferenceDataset``: the chat template applied as the SFT and RL datasets apply
it). A batch holds each pair's two sequences (row 2i chosen, 2i + 1 rejected); the step removes the padding before
the forward, as the SFT step does.

Config: the SFT trainer's tree (``verl.load_sft_config``; every key keeps its SFT meaning) plus the ``dpo`` section:

=====================  ==========  ===============================================================================
key                    default     meaning (TRL's ``DPOConfig`` names)
=====================  ==========  ===============================================================================
``dpo.beta``           0.1         deviation from the reference: rewards are ``beta * log(pi / pi_ref)``; IPO's tau
``dpo.label_smoothing`` 0.0        probability that a label is flipped (conservative DPO), ``sigmoid`` only, [0, 0.5]
``dpo.loss_type``      sigmoid     ``sigmoid`` (DPO), ``ipo`` (length-averaged log-ratios, target 1/(2 beta)),
                                   ``hinge`` (SLiC: relu(1 - beta * margin))
=====================  ==========  ===============================================================================

``data.train_batch_size`` counts pairs; ``data.micro_batch_size_per_gpu`` counts pairs per forward/backward;
``data.max_token_len_per_gpu`` (``data.use_dynamic_bsz``) bounds a micro-batch's tokens over both sequences of its
pairs; ``data.max_length`` / ``data.truncation`` apply to each sequence; ``data.prompt_key`` names the prompt
column. ``data.messages_key`` and ``data.response_key`` (SFT's row forms) have no meaning for preference rows and are
a ``ConfigError`` when set. The loss is the mean over the batch's pairs.

The reference model is frozen: ``ref_model=`` (a ``verl.models.CausalLM`` or a checkpoint path), by default a copy
of the model's weights when the trainer is built (TRL's default); its log-probs are computed once per batch, before
the policy's forward. Metrics use TRL's names: ``loss``, ``rewards/chosen``, ``rewards/rejected``,
``rewards/accuracies``, ``rewards/margins``, ``logps/chosen``, ``logps/rejected``, ``grad_norm``,
``learning_rate``, ``num_tokens``; evaluation the same with ``eval_`` in front. Checkpoints are the SFT / PPO
trainers' layout (``trainer.default_local_dir/global_step_N/actor/`` is the policy in Hugging Face format, directly
usable as ``actor_rollout_ref.model.path``), resumable with ``trainer.resume_mode``.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .. import _C
from ..config import Config, load_sft_config
from ..errors import ConfigError, DataError
from ..utils.dataset.preference_dataset import PreferenceDataset, collate_preference
from .ppo_trainer import _DTYPES, _load_model
from . import distributed
from .sft_trainer import SFTTrainer, _as_cpp_batch, as_sft_config, cli_exit_status, spawns_local_ranks

__all__ = ["DPOTrainer", "DPO_DEFAULTS", "as_dpo_config", "main"]

DPO_DEFAULTS: dict[str, Any] = {"beta": 0.1, "label_smoothing": 0.0, "loss_type": "sigmoid"}
DPO_KEY_HELP = {
    "beta": "deviation from the reference model (rewards are beta * log(pi / pi_ref)); IPO's tau. Default 0.1",
    "label_smoothing": "probability that a preference label is flipped (conservative DPO), loss_type=sigmoid only; "
                       "in [0, 0.5]. Default 0.0",
    "loss_type": "sigmoid (DPO) | ipo | hinge. Default sigmoid",
}
# SFT keys that preference rows give no meaning to: refused when set (rather than accepted and ignored)
_UNUSED_SFT_KEYS = ("data.messages_key", "data.response_key")


def _dpo_value(key: str, value: Any) -> Any:
    if key == "loss_type":
        if not isinstance(value, str):
            raise ConfigError(f"config key 'dpo.loss_type' must be a string, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"config key 'dpo.{key}' must be a number, got {value!r}")
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"config key 'dpo.{key}' must be a number, got {value!r}") from None


def _set_dpo(dpo: dict[str, Any], key: str, value: Any) -> None:
    if key not in DPO_DEFAULTS:
        close = difflib.get_close_matches(key, list(DPO_DEFAULTS), n=1)
        hint = f" (did you mean 'dpo.{close[0]}'?)" if close else f" (keys: {', '.join(DPO_DEFAULTS)})"
        raise ConfigError(f"unknown config key 'dpo.{key}'{hint}")
    dpo[key] = _dpo_value(key, value)


def as_dpo_config(config: Any = None, overrides: Sequence[str] = ()) -> tuple[Config, dict[str, Any]]:
    """(the SFT tree, the ``dpo`` section) from None (the defaults), a dict (dotted keys and/or nested sections,
    ``dpo`` among them), a YAML path (a ``dpo:`` section beside the SFT keys) or a ``verl.load_sft_config`` tree;
    then ``key=value`` overrides. ConfigError naming the key for unknown or bad keys."""
    dpo = dict(DPO_DEFAULTS)
    rest: Any = config
    if isinstance(config, (str, os.PathLike)):
        import yaml

        try:
            with open(config, encoding="utf-8") as f:
                rest = yaml.safe_load(f) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"{os.fspath(config)}: cannot read the config ({e})") from e
        if not isinstance(rest, Mapping):
            raise ConfigError(f"{os.fspath(config)}: the config must be a mapping, got {type(rest).__name__}")
    if isinstance(rest, Mapping):
        kept = {}
        for key, value in rest.items():
            key = str(key)
            if key == "dpo":
                if not isinstance(value, Mapping):
                    raise ConfigError(f"config key 'dpo' must be a mapping, got {value!r}")
                for sub_key, sub_value in value.items():
                    _set_dpo(dpo, str(sub_key), sub_value)
            elif key.startswith("dpo."):
                _set_dpo(dpo, key[4:], value)
            else:
                kept[key] = value
        rest = kept
    sft_overrides = []
    for item in overrides:
        key, eq, value = item.partition("=")
        if key.startswith("dpo."):
            if not eq:
                raise ConfigError(f"override '{item}' needs key=value")
            _set_dpo(dpo, key[4:], value)
        else:
            sft_overrides.append(item)
    cfg = as_sft_config(rest)
    if sft_overrides:
        cfg = cfg.override(*sft_overrides).validate()
    defaults = load_sft_config()
    for key in _UNUSED_SFT_KEYS:
        if cfg.get(key) != defaults.get(key):
            raise ConfigError(f"config key '{key}' is not used by DPO: preference rows hold '{{data.prompt_key}}', "
                              "'chosen' and 'rejected'")
    _C.algo.check_dpo_loss_config(float(dpo["beta"]), float(dpo["label_smoothing"]), str(dpo["loss_type"]))
    return cfg, dpo


class DPOTrainer(SFTTrainer):
    """DPO with the SFT trainer's driver (data loading, loop, validation, checkpoints). See the module docstring.

    Args:
        config: None (defaults), a dict, a YAML path or a ``verl.load_sft_config`` tree (``dpo`` at its defaults).
        model: a ``verl.models.CausalLM`` to train in place; default: loaded from ``model.path``.
        ref_model: the frozen reference (a ``verl.models.CausalLM`` or a checkpoint directory); default: a copy of
            the model's weights now.
        tokenizer: default: loaded from ``model.tokenizer_path`` or ``model.path``.
        train_dataset / val_dataset: ``PreferenceDataset`` objects, other datasets of pairs, file paths, or None for
            ``data.train_files`` / ``data.val_files``.
    """

    def __init__(self, config: Any = None, model: Any = None, ref_model: Any = None, tokenizer: Any = None,
                 train_dataset: Any = None, val_dataset: Any = None) -> None:
        sft_config, self.dpo = as_dpo_config(config)
        self._ref_model = ref_model
        super().__init__(config=sft_config, model=model, tokenizer=tokenizer, train_dataset=train_dataset,
                         val_dataset=val_dataset)

    # -- the hooks of SFTTrainer ------------------------------------------------------------------
    def _make_step(self, module: Any) -> Any:
        ref = self._ref_model
        if isinstance(ref, (str, os.PathLike)):
            name = str(self.config.get("model.dtype") or "fp32")
            ref = _load_model(os.fspath(ref), _DTYPES[name], self.device, key="ref_model")
        if ref is not None and not isinstance(ref, _C.model.CausalLM):
            ref = getattr(ref, "_module", None)
            if not isinstance(ref, _C.model.CausalLM) or ref.value_head:
                raise TypeError(f"ref_model must be a verl.models.CausalLM or a checkpoint path, got "
                                f"{type(self._ref_model).__name__}")
        self._ref_model = None  # held by the C++ step from here on
        return _C.trainer.DPOTrainer(self.config.cpp, module, ref, float(self.dpo["beta"]),
                                     float(self.dpo["label_smoothing"]), str(self.dpo["loss_type"]),
                                     self.total_training_steps)

    def _file_dataset(self, paths: Any, max_samples: int) -> Any:
        return PreferenceDataset(paths, self.tokenizer, self.config.data, max_samples=max_samples)

    _collate_rows = staticmethod(collate_preference)

    @staticmethod
    def _batch(batch: Any) -> Any:
        if isinstance(batch, Sequence) and batch and isinstance(batch[0], Mapping):  # dataset pairs
            batch = collate_preference(list(batch))
        if isinstance(batch, Mapping) and "input_ids" not in batch:
            raise DataError("a DPO batch must be collated pairs (input_ids, attention_mask, loss_mask with rows 2i "
                            f"chosen, 2i+1 rejected), a DataProto or a list of pairs, got keys {sorted(batch)[:6]}")
        return _as_cpp_batch(batch)

    # -- one step -------------------------------------------------------------------------------------
    def train_step(self, batch: Any) -> dict[str, float]:
        """One optimizer step on a batch of pairs (collated dict, DataProto or list of dataset pairs); TRL's metrics
        (see the module docstring)."""
        cpp_batch = self._batch(batch)
        metrics = dict(self._trainer.train_step(cpp_batch))
        self.global_steps = self._trainer.global_step
        self.total_tokens += int(cpp_batch.batch["attention_mask"].sum())
        metrics["num_tokens"] = float(self.total_tokens)
        return metrics

    def validate(self, dataset: Any = None) -> dict[str, float]:
        """TRL's evaluation metrics (``eval_loss``, ``eval_rewards/accuracies``, ...): means over every pair of the
        validation set (``val_dataset``, or ``dataset``: a PreferenceDataset or file paths) under the current
        weights."""
        sums = None
        for batch in self._validation_batches(dataset):
            part = self._trainer.evaluate(self._batch(batch))
            if sums is None:
                sums = part
            else:
                sums += part
        if sums is None or sums.num_pairs == 0:
            raise DataError("validate: the validation data has no pair")
        return {f"eval_{name}": value for name, value in sums.means().items()}

    def sequence_log_probs(self, batch: Any, reference: bool = False) -> Any:
        """(2 * pairs,) float64 summed completion log-probs of a batch's sequences under the policy (or the
        reference), without gradients."""
        return self._trainer.sequence_log_probs(self._batch(batch), reference)


def _print_config(config: Config, dpo: dict[str, Any]) -> str:
    lines = [config.to_yaml().rstrip("\n"), "dpo:"]
    lines += [f"  {key}: {value}" for key, value in dpo.items()]
    return "\n".join(lines) + "\n"


def _explain(key: str, config: Config, dpo: dict[str, Any]) -> str:
    from .main_ppo import explain_keys

    if key.startswith("dpo."):
        if key[4:] not in DPO_DEFAULTS:
            _set_dpo({}, key[4:], None)  # the unknown-key error with its suggestion
        return f"{key} = {dpo[key[4:]]!r}: honoured -- {DPO_KEY_HELP[key[4:]]}\n"
    if key in _UNUSED_SFT_KEYS:
        return (f"{key} = {config.get(key)!r}: refused by DPO (an SFT row form; preference rows hold prompt, chosen "
                "and rejected) -- an error unless left at its default\n")
    return explain_keys([key], config)


def main(argv: list[str] | None = None) -> int:
    """``python -m verl.trainer.dpo_trainer [--print-config] [--explain KEY] [--config-path DIR --config-name NAME]
    key=value ...`` (the SFT keys and ``dpo.*``): exit status 2 with a message naming the key / file:line for config
    and data errors, 1 for checkpoint errors."""
    from .main_ppo import parse_args, split_explain

    def run() -> int:
        explain, args = split_explain(sys.argv[1:] if argv is None else argv)
        print_config, yaml_path, overrides = parse_args(args, prog="verl.trainer.dpo_trainer",
                                                        base_config_name="dpo_trainer")
        config, dpo = as_dpo_config(yaml_path, overrides)
        if explain:
            for key in explain:
                sys.stdout.write(_explain(key, config, dpo))
            return 0
        if print_config:
            sys.stdout.write(_print_config(config, dpo))
            return 0
        if spawns_local_ranks(config):
            return distributed.launch_local_workers(distributed.trainer_world_size(config), list(args),
                                                    module="verl.trainer.dpo_trainer")
        DPOTrainer(config={**config.to_dict(resolve=False), "dpo": dpo}).fit()
        return 0

    return cli_exit_status(run)


if __name__ == "__main__":
    sys.exit(main())
