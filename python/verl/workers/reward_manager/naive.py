"""``naive``: scores samples one by one with ``compute_score`` (verl's ``NaiveRewardManager``)."""

from __future__ import annotations

import signal
from collections import defaultdict
from contextlib import contextmanager
from typing import Any

import torch

from ...protocol import DataProto
from ...trainer.reward_fn import RewardFunction, ScoreTimeout, split_score
from ...utils.reward_score import default_compute_score
from .abstract import AbstractRewardManager, decode_samples, place_scores, print_examined
from .registry import register

__all__ = ["NaiveRewardManager"]


@contextmanager
def _score_timeout(seconds: float | None):
    """TimeoutError when the block runs past ``seconds`` (SIGALRM: main thread only, a no-op elsewhere).

    One pathological rollout (catastrophic regex backtracking, a slow symbolic check) must not stall training;
    verl scores such a sample 0.0 and goes on.
    """
    if not seconds or seconds <= 0:
        yield
        return

    def _handler(signum, frame):
        raise ScoreTimeout(f"compute_score timed out after {seconds}s")

    try:
        previous = signal.signal(signal.SIGALRM, _handler)
    except ValueError:  # not the main thread
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


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
    """

    def __init__(self, tokenizer: Any, num_examine: int, compute_score: Any = None, reward_fn_key: str = "data_source",
                 compute_score_timeout: float | None = None) -> None:
        self.tokenizer = tokenizer
        self.num_examine = num_examine
        self.compute_score = compute_score or default_compute_score
        self.reward_fn = RewardFunction(self.compute_score)
        self.reward_fn_key = reward_fn_key
        self.compute_score_timeout = compute_score_timeout

    def __call__(self, data: DataProto, return_dict: bool = False) -> torch.Tensor | dict[str, Any]:
        from_rm = self._extract_reward_from_rm_scores(data, return_dict)
        if from_rm is not None:
            return from_rm

        reward_tensor = torch.zeros_like(data.batch["responses"], dtype=torch.float32)
        reward_extra_info: dict[str, list] = defaultdict(list)
        samples = decode_samples(data, self.tokenizer, self.reward_fn_key,
                                 decode_prompts=self.num_examine > 0 or self.reward_fn.wants_prompt)
        num_turns = data.non_tensor_batch.get("__num_turns__")
        rollout_scores = data.non_tensor_batch.get("reward_scores")
        seen: dict = {}
        scores = []
        for i, sample in enumerate(samples):
            sample.extra_info["num_turns"] = num_turns[i] if num_turns is not None else None
            sample.extra_info["rollout_reward_scores"] = rollout_scores[i] if rollout_scores is not None else {}
            try:
                with _score_timeout(self.compute_score_timeout):
                    result = self.reward_fn.score(i, response=sample.response, ground_truth=sample.ground_truth,
                                                  data_source=sample.data_source, extra_info=sample.extra_info,
                                                  prompt=sample.prompt)
            except ScoreTimeout:
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
