"""The reward-model worker: scores (prompt, response) pairs with a sequence-classification checkpoint.

verl 0.9.1 semantics (``reward.reward_model`` / the legacy ``reward_model`` section, which verl migrates into it):
the RM is a decoder with a ``score`` Linear(hidden, 1) head (``Qwen2ForSequenceClassification`` /
``LlamaForSequenceClassification`` with ``num_labels=1``); the score of a sequence is the head's output at its last
valid token, placed on the last valid response token of ``rm_scores`` (bs, response_length), zeros elsewhere.
Reward managers return ``rm_scores`` as the reward when the batch carries them.

Input: when ``reward_model.model.input_tokenizer`` (the actor's tokenizer) is set, each response is decoded with it
(eos text removed), appended as the assistant turn to the sample's ``raw_prompt`` messages and re-rendered with the
RM tokenizer's chat template (``add_generation_prompt=False``), as verl does for an RM with another vocabulary;
otherwise the actor's ``input_ids`` / ``attention_mask`` are scored as they are.

Why Python: the re-rendering needs the RM's Jinja chat template (rendered in Python: docs/architecture.md, section 7), and the reward
is already a Python callback of the C++ step; the forward pass itself is the C++ model (``forward_packed``,
padding removed), so the worker adds no per-token Python work.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from verl.errors import ConfigError, DataError
from verl.protocol import DataProto
from verl.trainer.checkpointing import tokenizer_dir

__all__ = ["RewardModelWorker", "RewardModelSettings", "reward_model_settings"]


@dataclass(frozen=True)
class RewardModelSettings:
    """The reward-model keys a run uses, resolved from either config layout."""

    enable: bool
    model_path: str | None
    input_tokenizer: str | None
    micro_batch_size_per_gpu: int
    use_dynamic_bsz: bool
    forward_max_token_len_per_gpu: int


def _get(config: Any, key: str) -> Any:
    if isinstance(config, Mapping) and key in config:  # a flat mapping of dotted keys
        return config[key]
    from verl.trainer.ppo.reward import _select  # here: reward.py imports verl.workers (its reward managers)

    return _select(config, key)


def _positive_int(config: Any, key: str, fallback_keys: tuple[str, ...], fallback: int) -> int:
    value = _get(config, key)
    name = key
    for fallback_key in fallback_keys:
        if value is None:
            value, name = _get(config, fallback_key), fallback_key
    if value is None:
        return fallback
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name}: must be a positive integer, got {value!r}")
    return value


def reward_model_settings(config: Any) -> RewardModelSettings:
    """``reward_model.*`` (verl's legacy layout, which verl 0.9.1 migrates) over ``reward.reward_model.*``.

    ``micro_batch_size_per_gpu`` defaults to ``reward_model.rollout.max_num_seqs`` (legacy) or
    ``reward.reward_model.rollout.max_num_seqs`` and ``forward_max_token_len_per_gpu`` to
    ``reward.reward_model.rollout.max_num_batched_tokens`` (or its legacy key) -- verl 0.9.1's per-pass limits of its
    RM server. Raises ``verl.ConfigError`` naming the key when the RM is enabled without
    a model path or a size is not a positive integer.
    """
    legacy_enable = _get(config, "reward_model.enable")
    enable = bool(legacy_enable if legacy_enable is not None else _get(config, "reward.reward_model.enable"))
    model_path = _get(config, "reward_model.model.path") or _get(config, "reward.reward_model.model_path")
    if enable and not model_path:
        raise ConfigError("reward_model.enable=True needs reward_model.model.path (or reward.reward_model.model_path):"
                          " the directory of a sequence-classification checkpoint")
    dynamic = _get(config, "reward_model.use_dynamic_bsz")
    return RewardModelSettings(
        enable=enable,
        model_path=os.path.expanduser(str(model_path)) if model_path else None,
        input_tokenizer=_get(config, "reward_model.model.input_tokenizer") or None,
        micro_batch_size_per_gpu=_positive_int(config, "reward_model.micro_batch_size_per_gpu",
                                               ("reward_model.rollout.max_num_seqs",
                                                "reward.reward_model.rollout.max_num_seqs"), 1024),
        use_dynamic_bsz=bool(dynamic) if dynamic is not None else False,
        forward_max_token_len_per_gpu=_positive_int(config, "reward_model.forward_max_token_len_per_gpu",
                                                    ("reward_model.rollout.max_num_batched_tokens",
                                                     "reward.reward_model.rollout.max_num_batched_tokens"), 8192),
    )


def _load_tokenizer(path: str, key: str) -> Any:
    from verl.tokenizer import load_tokenizer

    if tokenizer_dir(path) is None:
        raise ConfigError(f"{key}: no tokenizer.json in {path}")
    return load_tokenizer(path)


class RewardModelWorker:
    """verl's reward-model worker: ``compute_rm_score(data) -> DataProto`` with ``rm_scores`` (bs, response_length).

    ``config``: a verl.Config / mapping with the ``reward_model`` keys. ``model``: a ``verl.models.ValueModel`` to
    use instead of loading ``reward_model.model.path``; ``tokenizer``: the RM's tokenizer (default: the one in the
    model path) and ``input_tokenizer`` the actor's (default: ``reward_model.model.input_tokenizer``), both only
    needed when the two differ. ``device`` / ``dtype`` place a model loaded from the path.
    """

    def __init__(self, config: Any, model: Any = None, tokenizer: Any = None, input_tokenizer: Any = None,
                 device: str | torch.device = "cpu", dtype: torch.dtype | str = torch.float32) -> None:
        self.settings = reward_model_settings(config)
        s = self.settings
        if model is None:
            if not s.model_path:
                raise ConfigError("reward_model.model.path is not set and no model was given")
            if not os.path.isdir(s.model_path):
                raise ConfigError(f"reward_model.model.path: model directory not found: {s.model_path}")
            from verl.models import load_model

            model = load_model(s.model_path, dtype=dtype, device=device, value_head=True)
        if not getattr(getattr(model, "_module", None), "value_head", False):
            raise TypeError(f"the reward model must be a verl.models.ValueModel (score head), got {type(model).__name__}")
        self.model = model
        if input_tokenizer is None and s.input_tokenizer:
            input_tokenizer = _load_tokenizer(os.path.expanduser(str(s.input_tokenizer)),
                                              "reward_model.model.input_tokenizer")
        self.input_tokenizer = input_tokenizer
        if input_tokenizer is not None and tokenizer is None:
            if not s.model_path:
                raise ConfigError("reward_model.model.input_tokenizer needs the RM's tokenizer: set "
                                  "reward_model.model.path or pass tokenizer=")
            tokenizer = _load_tokenizer(s.model_path, "reward_model.model.path")
        self.tokenizer = tokenizer

    # -- inputs -------------------------------------------------------------------------------------------
    def _sequences_from_ids(self, data: DataProto) -> list[torch.Tensor]:
        ids, mask = data.batch["input_ids"], data.batch["attention_mask"].bool()
        return [ids[i][mask[i]] for i in range(ids.shape[0])]

    def _sequences_from_chat(self, data: DataProto) -> list[torch.Tensor]:
        src, rm = self.input_tokenizer, self.tokenizer
        if "raw_prompt" not in data.non_tensor_batch:
            raise DataError("re-rendering for the reward model (reward_model.model.input_tokenizer is set) needs the "
                            "'raw_prompt' messages in the batch (data.return_raw_chat=True)")
        responses = data.batch["responses"]
        response_mask = data.batch["attention_mask"][:, -responses.shape[1]:].bool()
        device = data.batch["input_ids"].device
        sequences = []
        for i in range(responses.shape[0]):
            text = src.decode(responses[i][response_mask[i]].tolist())
            if src.eos_token:
                text = text.replace(src.eos_token, "")
            chat = list(data.non_tensor_batch["raw_prompt"][i]) + [{"role": "assistant", "content": text}]
            rendered = rm.apply_chat_template(chat, add_generation_prompt=False, tokenize=False)
            # the RM tokenizer adds its own bos when encoding; a template that writes it too would double it
            if rm.bos_token and rendered.startswith(rm.bos_token):
                rendered = rendered[len(rm.bos_token):]
            ids = rm.encode(rendered, add_special_tokens=True)
            if not ids:
                raise DataError(f"sample {i}: the reward model's chat template rendered an empty sequence")
            sequences.append(torch.tensor(ids, dtype=torch.long, device=device))
        return sequences

    def _micro_batches(self, lengths: list[int]) -> list[list[int]]:
        s = self.settings
        if not s.use_dynamic_bsz:
            n = s.micro_batch_size_per_gpu
            return [list(range(i, min(i + n, len(lengths)))) for i in range(0, len(lengths), n)]
        # token budget: consecutive sequences until the next would exceed it (a longer one goes alone)
        groups: list[list[int]] = []
        current: list[int] = []
        tokens = 0
        for i, length in enumerate(lengths):
            if current and tokens + length > s.forward_max_token_len_per_gpu:
                groups.append(current)
                current, tokens = [], 0
            current.append(i)
            tokens += length
        if current:
            groups.append(current)
        return groups

    # -- scoring ------------------------------------------------------------------------------------------
    def score_sequences(self, sequences: list[torch.Tensor]) -> torch.Tensor:
        """(n,) float32 scores: the ``score`` head at the last token of each unpadded id sequence."""
        module = self.model._module
        device = torch.device(module.device)
        scores = torch.empty(len(sequences), dtype=torch.float32, device=device)
        for group in self._micro_batches([int(seq.numel()) for seq in sequences]):
            packed = torch.cat([sequences[i].to(device) for i in group])
            lengths = torch.tensor([sequences[i].numel() for i in group], dtype=torch.long, device=device)
            cu_seqlens = torch.zeros(len(group) + 1, dtype=torch.int32, device=device)
            cu_seqlens[1:] = torch.cumsum(lengths, 0).to(torch.int32)
            with torch.no_grad():
                values = module.forward_packed(packed, cu_seqlens)
            last = cu_seqlens[1:].long() - 1
            scores[torch.tensor(group, dtype=torch.long, device=device)] = values[last].float()
        return scores

    def compute_rm_score(self, data: DataProto) -> DataProto:
        """``rm_scores`` (bs, response_length) float32: each sample's score on its last valid response token.

        Needs ``responses`` and ``attention_mask`` (bs, prompt_length + response_length), plus ``input_ids``
        (reused ids) or ``raw_prompt`` (re-rendering). A sample with an empty response scores 0 everywhere.
        """
        for key in ("responses", "attention_mask") + (() if self.input_tokenizer else ("input_ids",)):
            if data.batch is None or key not in data.batch:
                raise DataError(f"compute_rm_score: the batch has no '{key}' tensor")
        responses = data.batch["responses"]
        bs, response_length = responses.shape
        valid_response_length = data.batch["attention_mask"][:, -response_length:].sum(-1).long()
        if self.input_tokenizer is not None:
            sequences = self._sequences_from_chat(data)
        else:
            sequences = self._sequences_from_ids(data)
        scores = self.score_sequences(sequences).to(responses.device)
        rm_scores = torch.zeros(bs, response_length, dtype=torch.float32, device=responses.device)
        has_response = valid_response_length > 0
        rows = torch.arange(bs, device=responses.device)[has_response]
        rm_scores[rows, valid_response_length[has_response] - 1] = scores[has_response]
        return DataProto.from_dict(tensors={"rm_scores": rm_scores})
