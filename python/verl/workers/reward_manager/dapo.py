"""``dapo``: per-sample scoring plus DAPO's overlong reward shaping (verl's ``DAPORewardManager``).

With ``overlong_buffer_cfg.enable``, a response longer than ``max_resp_len - len`` tokens gets
``min(-(length - (max_resp_len - len)) / len * penalty_factor, 0)`` added: a linear ramp from 0 at the start of
the buffer to ``-penalty_factor`` at ``max_resp_len`` (DAPO paper, "soft overlong punishment").
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch

from ...errors import ConfigError
from ...protocol import DataProto
from ...trainer.reward_fn import DEFAULT_MAX_CONCURRENT, RewardFunction, check_max_concurrent, split_score
from ...utils.reward_score import default_compute_score
from .abstract import AbstractRewardManager, decode_samples, place_scores, print_examined, scores_by_data_source
from .registry import register

__all__ = ["DAPORewardManager"]


def _field(cfg: Any, name: str, default: Any = None) -> Any:
    """``cfg.name`` for a verl.Config / attribute object, ``cfg[name]`` for a dict."""
    if isinstance(cfg, dict):
        return cfg.get(name, default)
    if hasattr(cfg, "get"):
        return cfg.get(name, default)
    return getattr(cfg, name, default)


@register("dapo")
class DAPORewardManager(AbstractRewardManager):
    """Args as ``NaiveRewardManager``, plus ``max_resp_len`` (data.max_response_length) and
    ``overlong_buffer_cfg`` (``enable``, ``len``, ``penalty_factor``, ``log``; a dict or config node).
    A non-dict score is also logged as ``reward_extra_info["acc"]``; with ``log`` the penalty is logged as
    ``overlong_reward`` and ``overlong`` (bool). ``max_concurrent``: as the naive manager's."""

    def __init__(self, tokenizer: Any, num_examine: int, compute_score: Any = None, reward_fn_key: str = "data_source",
                 max_resp_len: int | None = None, overlong_buffer_cfg: Any = None,
                 max_concurrent: int = DEFAULT_MAX_CONCURRENT) -> None:
        self.tokenizer = tokenizer
        self.num_examine = num_examine
        self.compute_score = compute_score or default_compute_score
        self.reward_fn = RewardFunction(self.compute_score)
        self.reward_fn_key = reward_fn_key
        self.max_concurrent = check_max_concurrent(max_concurrent)
        self.overlong_buffer_cfg = overlong_buffer_cfg
        self.max_resp_len = max_resp_len
        self.overlong_enabled = overlong_buffer_cfg is not None and bool(_field(overlong_buffer_cfg, "enable", False))
        if self.overlong_enabled:
            buffer_len = _field(overlong_buffer_cfg, "len")
            if max_resp_len is None:
                raise ConfigError(f"max_resp_len must be provided if overlong_buffer_cfg={overlong_buffer_cfg!r}, "
                                  "but got None")
            if buffer_len is None or buffer_len <= 0:
                raise ConfigError(f"overlong_buffer.len must be positive when overlong penalty is enabled, but got "
                                  f"{buffer_len}. To disable the overlong penalty, set overlong_buffer.enable = False")
            if max_resp_len < buffer_len:
                raise ConfigError(f"max_resp_len ({max_resp_len}) must be larger than overlong_buffer.len "
                                  f"({buffer_len})")
            self.overlong_len = int(buffer_len)
            self.overlong_penalty_factor = float(_field(overlong_buffer_cfg, "penalty_factor", 1.0))
            self.overlong_log = bool(_field(overlong_buffer_cfg, "log", False))

    def overlong_reward(self, valid_response_length: int) -> float:
        """The (non-positive) shaping term for a response of this many tokens."""
        expected_len = self.max_resp_len - self.overlong_len
        exceed_len = valid_response_length - expected_len
        return min(-exceed_len / self.overlong_len * self.overlong_penalty_factor, 0.0)

    def __call__(self, data: DataProto, return_dict: bool = False) -> torch.Tensor | dict[str, Any]:
        from_rm = self._extract_reward_from_rm_scores(data, return_dict)
        if from_rm is not None:
            return from_rm

        reward_tensor = torch.zeros_like(data.batch["responses"], dtype=torch.float32)
        reward_extra_info: dict[str, list] = defaultdict(list)
        samples = decode_samples(data, self.tokenizer, self.reward_fn_key, strip_eos=True,
                                 decode_prompts=self.num_examine > 0 or self.reward_fn.wants_prompt,
                                 require_data_source=scores_by_data_source(self.compute_score))
        rollout_scores = data.non_tensor_batch.get("reward_scores")
        for i, sample in enumerate(samples):
            sample.extra_info["rollout_reward_scores"] = rollout_scores[i] if rollout_scores is not None else {}
        results = self.reward_fn.score_each([s.fields() for s in samples], max_concurrent=self.max_concurrent)
        seen: dict = {}
        rewards = []
        for i, (sample, result) in enumerate(zip(samples, results)):
            score, as_dict = split_score(result, i, sample.data_source, sample.response)
            if as_dict is not None:
                for key, value in as_dict.items():
                    reward_extra_info[key].append(value)
            else:
                reward_extra_info["acc"].append(score)
            reward = score
            if self.overlong_enabled:
                penalty = self.overlong_reward(sample.valid_response_length)
                reward += penalty
                if self.overlong_log:
                    reward_extra_info["overlong_reward"].append(penalty)
                    reward_extra_info["overlong"].append(penalty < 0)
            rewards.append(reward)
            print_examined(seen, self.num_examine, sample, result)
        place_scores(reward_tensor, rewards, [s.valid_response_length for s in samples])

        if return_dict:
            return {"reward_tensor": reward_tensor, "reward_extra_info": reward_extra_info}
        return reward_tensor
