"""``naive``: scores samples one by one with ``compute_score`` (verl's ``NaiveRewardManager``)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch

from ...protocol import DataProto
from ...trainer.reward_fn import DEFAULT_MAX_CONCURRENT, RewardFunction, ScoreTimeout, check_max_concurrent, split_score
from ...utils.reward_score import default_compute_score
from .abstract import AbstractRewardManager, decode_samples, place_scores, print_examined, scores_by_data_source
from .registry import register

__all__ = ["NaiveRewardManager"]


@register("naive")
class NaiveRewardManager(AbstractRewardManager):
    """Per-sample scoring.

    Args:
        tokenizer: decodes the response ids (``decode(ids, skip_special_tokens=True)``).
        num_examine: how many samples per data source to print.
        compute_score: the scorer, in any form ``verl.trainer.reward_fn`` accepts (verl's
            ``f(data_source, solution_str, ground_truth, extra_info)``, ``f(response)``, ...); default
            ``default_compute_score``.
        reward_fn_key: the non-tensor column holding the data source.
        compute_score_timeout: seconds per sample; a sample over it scores 0.0 (as in verl).
        max_concurrent: how many samples an ``async def`` scorer scores at once (``reward.max_concurrent``).
    """

    def __init__(self, tokenizer: Any, num_examine: int, compute_score: Any = None, reward_fn_key: str = "data_source",
                 compute_score_timeout: float | None = None, max_concurrent: int = DEFAULT_MAX_CONCURRENT) -> None:
        self.tokenizer = tokenizer
        self.num_examine = num_examine
        self.compute_score = compute_score or default_compute_score
        self.reward_fn = RewardFunction(self.compute_score)
        self.reward_fn_key = reward_fn_key
        self.compute_score_timeout = compute_score_timeout
        self.max_concurrent = check_max_concurrent(max_concurrent)

    def __call__(self, data: DataProto, return_dict: bool = False) -> torch.Tensor | dict[str, Any]:
        from_rm = self._extract_reward_from_rm_scores(data, return_dict)
        if from_rm is not None:
            return from_rm

        reward_tensor = torch.zeros_like(data.batch["responses"], dtype=torch.float32)
        reward_extra_info: dict[str, list] = defaultdict(list)
        samples = decode_samples(data, self.tokenizer, self.reward_fn_key,
                                 decode_prompts=self.num_examine > 0 or self.reward_fn.wants_prompt,
                                 require_data_source=scores_by_data_source(self.compute_score))
        num_turns = data.non_tensor_batch.get("__num_turns__")
        rollout_scores = data.non_tensor_batch.get("reward_scores")
        for i, sample in enumerate(samples):
            sample.extra_info["num_turns"] = num_turns[i] if num_turns is not None else None
            sample.extra_info["rollout_reward_scores"] = rollout_scores[i] if rollout_scores is not None else {}
        results = self.reward_fn.score_each([s.fields() for s in samples], timeout=self.compute_score_timeout,
                                            max_concurrent=self.max_concurrent)
        seen: dict = {}
        scores = []
        for i, (sample, result) in enumerate(zip(samples, results)):
            if isinstance(result, ScoreTimeout):
                print(f"[NaiveRewardManager] compute_score exceeded {self.compute_score_timeout}s for "
                      f"data_source={sample.data_source}; assigning reward 0.0 and continuing.")
                result = 0.0
            score, as_dict = split_score(result, i, sample.data_source, sample.response)
            if as_dict is not None:
                for key, value in as_dict.items():
                    reward_extra_info[key].append(value)
            scores.append(score)
            print_examined(seen, self.num_examine, sample, result)
        place_scores(reward_tensor, scores, [s.valid_response_length for s in samples])

        if return_dict:
            return {"reward_tensor": reward_tensor, "reward_extra_info": reward_extra_info}
        return reward_tensor
