"""``batch``: one call of a batched scorer for the whole batch (verl's ``BatchRewardManager``)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch

from ...protocol import DataProto
from ...trainer.reward_fn import DEFAULT_MAX_CONCURRENT, RewardFunction, check_max_concurrent, split_score
from ...utils.reward_score import default_compute_score
from .abstract import AbstractRewardManager, decode_samples, place_scores, print_examined, scores_by_data_source
from .registry import register

__all__ = ["BatchRewardManager", "default_batch_compute_score"]


def default_batch_compute_score(data_sources, solution_strs, ground_truths, extra_infos, **kwargs) -> list:
    """``default_compute_score`` over lists (used when the ``batch`` manager gets no scorer)."""
    return [default_compute_score(d, s, g, e, **kwargs)
            for d, s, g, e in zip(data_sources, solution_strs, ground_truths, extra_infos)]


@register("batch")
class BatchRewardManager(AbstractRewardManager):
    """Batched scoring: ``compute_score(data_sources=[...], solution_strs=[...], ground_truths=[...],
    extra_infos=[...], **reward_kwargs)`` returns one score (number or dict) per sample. Any batched form of
    ``verl.trainer.reward_fn`` works; a per-sample function is called once per sample. Also sets
    ``data.batch["acc"]`` (bs,) to the scores, as verl does. ``max_concurrent``: how many samples an ``async def``
    per-sample scorer scores at once (an async batched scorer is awaited once)."""

    def __init__(self, tokenizer: Any, num_examine: int, compute_score: Any = None, reward_fn_key: str = "data_source",
                 max_concurrent: int = DEFAULT_MAX_CONCURRENT, **reward_kwargs: Any) -> None:
        self.tokenizer = tokenizer
        self.num_examine = num_examine
        self.compute_score = compute_score or default_batch_compute_score
        self.reward_kwargs = reward_kwargs
        self.reward_fn = RewardFunction(self.compute_score, bound_kwargs=reward_kwargs)
        self.reward_fn_key = reward_fn_key
        self.max_concurrent = check_max_concurrent(max_concurrent)
        #: the scorer is verl's default, which chooses by data_source: rows without one are a DataError
        self.needs_data_source = (self.compute_score is default_batch_compute_score
                                  or scores_by_data_source(self.compute_score))

    def verify(self, data: DataProto) -> list:
        """The raw scores of every sample (one batched call)."""
        samples = decode_samples(data, self.tokenizer, self.reward_fn_key,
                                 decode_prompts=self.num_examine > 0 or self.reward_fn.wants_prompt,
                                 require_data_source=self.needs_data_source)
        return self._score(data, samples)

    def _score(self, data: DataProto, samples: list) -> list:
        rollout_scores = data.non_tensor_batch.get("reward_scores")
        for i, sample in enumerate(samples):
            sample.extra_info["rollout_reward_scores"] = rollout_scores[i] if rollout_scores is not None else {}
        return self.reward_fn.score_batch(
            responses=[s.response for s in samples], ground_truths=[s.ground_truth for s in samples],
            data_sources=[s.data_source for s in samples], extra_infos=[s.extra_info for s in samples],
            prompts=[s.prompt for s in samples], max_concurrent=self.max_concurrent)

    def __call__(self, data: DataProto, return_dict: bool = False) -> torch.Tensor | dict[str, Any]:
        from_rm = self._extract_reward_from_rm_scores(data, return_dict)
        if from_rm is not None:
            return from_rm

        reward_tensor = torch.zeros_like(data.batch["responses"], dtype=torch.float32)
        reward_extra_info: dict[str, list] = defaultdict(list)
        samples = decode_samples(data, self.tokenizer, self.reward_fn_key,
                                 decode_prompts=self.num_examine > 0 or self.reward_fn.wants_prompt,
                                 require_data_source=self.needs_data_source)
        results = self._score(data, samples)
        scores = []
        seen: dict = {}
        for i, (sample, result) in enumerate(zip(samples, results)):
            score, as_dict = split_score(result, i, sample.data_source, sample.response)
            if as_dict is not None:
                for key, value in as_dict.items():
                    reward_extra_info[key].append(value)
            scores.append(score)
            print_examined(seen, self.num_examine, sample, result)
        place_scores(reward_tensor, scores, [s.valid_response_length for s in samples])
        data.batch["acc"] = torch.tensor(scores, dtype=torch.float32, device=data.batch["prompts"].device)

        if return_dict:
            return {"reward_tensor": reward_tensor, "reward_extra_info": reward_extra_info}
        return reward_tensor
