"""The reward-manager interface (verl's ``AbstractRewardManager``) and the decoding every manager shares.

A reward manager turns a rollout batch into token-level scores. Input ``DataProto`` tensors:
``prompts`` (bs, prompt_length) left-padded, ``responses`` (bs, response_length) right-padded and
``attention_mask`` (bs, prompt_length + response_length); non-tensors ``reward_model`` (dicts with
``ground_truth``) and optionally ``data_source`` (or the column named by ``reward_fn_key``) and ``extra_info``.
Rows without a data source (the tutorials' ``{"prompt": ..., "extra_info": {"ground_truth": ...}}``) score with
``data_source=None``: the reward function decides; verl's ``default_compute_score`` picks its scorer by data source,
so a manager using it refuses a batch without the column (``DataError`` naming it).
Output ``reward_tensor`` (bs, response_length) float32: each sample's score on its last valid response token,
zeros elsewhere.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ...errors import DataError
from ...protocol import DataProto
from ...trainer.reward_fn import RewardFunction
from ...utils.reward_score import default_compute_score

__all__ = ["AbstractRewardManager", "RawRewardFn", "DecodedSample", "decode_samples", "ground_truth_of",
           "place_scores", "scores_by_data_source"]

RawRewardFn = Callable[..., Any]


@dataclass
class DecodedSample:
    """One rollout sample as text, with what scoring needs."""

    prompt: str
    response: str
    valid_response_length: int
    data_source: Any
    ground_truth: Any
    extra_info: dict

    def fields(self) -> dict[str, Any]:
        """The reward function's inputs (``RewardFunction.score_each``'s sample dict)."""
        return {"response": self.response, "ground_truth": self.ground_truth, "data_source": self.data_source,
                "extra_info": self.extra_info, "prompt": self.prompt}


def ground_truth_of(reward_model: Any, index: int) -> Any:
    """``reward_model["ground_truth"]`` of sample ``index``; ``DataError`` naming the sample when missing."""
    if not isinstance(reward_model, dict) or "ground_truth" not in reward_model:
        raise DataError(f"sample {index}: non_tensor_batch['reward_model'] must be a dict with 'ground_truth', got "
                        f"{reward_model!r}")
    return reward_model["ground_truth"]


def scores_by_data_source(compute_score: Any) -> bool:
    """Whether ``compute_score`` is verl's ``default_compute_score`` (also wrapped with bound kwargs, as the sandbox
    settings are): it chooses its scorer by each sample's data source, so it cannot score rows without one."""
    while isinstance(compute_score, RewardFunction):
        compute_score = compute_score.fn
    return compute_score is default_compute_score


def decode_samples(data: DataProto, tokenizer: Any, reward_fn_key: str = "data_source",
                   strip_eos: bool = False, decode_prompts: bool = True,
                   require_data_source: bool = False) -> list[DecodedSample]:
    """Decodes each sample's valid prompt tokens (the last ``sum(prompt mask)``) and valid response tokens (the
    first ``sum(response mask)``), skipping special tokens; ``strip_eos`` also drops a trailing eos string
    (DAPO does, for tokenizers whose eos is not a special token). With ``decode_prompts=False`` prompts are left
    empty (a third of the decoding time when nothing reads them). Without a ``reward_fn_key`` column every
    sample's ``data_source`` is None, or, with ``require_data_source`` (the scorer is ``default_compute_score``),
    a ``DataError`` saying so."""
    for key in ("prompts", "responses", "attention_mask"):
        if data.batch is None or key not in data.batch:
            raise DataError(f"reward manager needs data.batch['{key}']")
    if "reward_model" not in data.non_tensor_batch:
        raise DataError("reward manager needs data.non_tensor_batch['reward_model']")
    data_sources = data.non_tensor_batch.get(reward_fn_key)
    if data_sources is None and require_data_source:
        raise DataError(
            f"the rows have no '{reward_fn_key}' field (data.reward_fn_key) and the reward is verl's "
            "default_compute_score, which chooses its scorer by data_source (e.g. 'openai/gsm8k' for GSM8K answers): "
            f"add a '{reward_fn_key}' field to every row, or pass reward_fn= to the trainer (or set "
            "custom_reward_function.path)")
    prompt_ids = data.batch["prompts"]
    response_ids = data.batch["responses"]
    prompt_length = prompt_ids.shape[-1]
    mask = data.batch["attention_mask"]
    valid_prompt_lengths = mask[:, :prompt_length].sum(dim=-1).tolist()
    valid_response_lengths = mask[:, prompt_length:].sum(dim=-1).tolist()
    prompt_rows, response_rows = prompt_ids.tolist(), response_ids.tolist()  # one device->host copy
    extra_infos = data.non_tensor_batch.get("extra_info")
    eos = getattr(tokenizer, "eos_token", None) if strip_eos else None

    samples = []
    for i in range(len(data)):
        n_prompt, n_response = int(valid_prompt_lengths[i]), int(valid_response_lengths[i])
        prompt = (tokenizer.decode(prompt_rows[i][prompt_length - n_prompt:], skip_special_tokens=True)
                  if decode_prompts else "")
        response = tokenizer.decode(response_rows[i][:n_response], skip_special_tokens=True)
        if eos and response.endswith(eos):
            response = response[: -len(eos)]
        extra = extra_infos[i] if extra_infos is not None else None
        samples.append(DecodedSample(
            prompt=prompt, response=response, valid_response_length=n_response,
            data_source=data_sources[i] if data_sources is not None else None,
            ground_truth=ground_truth_of(data.non_tensor_batch["reward_model"][i], i),
            # a copy: the managers add keys (num_turns, rollout_reward_scores) and the dataset's dicts must not grow
            extra_info=dict(extra) if isinstance(extra, dict) else {},
        ))
    return samples


def place_scores(reward_tensor: torch.Tensor, scores: list[float], valid_response_lengths: list[int]) -> None:
    """``reward_tensor[i, valid_response_length_i - 1] = score_i`` (position 0 for an empty response, which the
    response mask zeroes anyway) in one indexed write."""
    rows = torch.arange(len(scores), device=reward_tensor.device)
    cols = torch.tensor([max(n - 1, 0) for n in valid_response_lengths], dtype=torch.long,
                        device=reward_tensor.device)
    reward_tensor[rows, cols] = torch.tensor(scores, dtype=reward_tensor.dtype, device=reward_tensor.device)


class AbstractRewardManager(ABC):
    """``manager(data, return_dict=False)`` -> reward_tensor (bs, response_length), or with ``return_dict=True``
    ``{"reward_tensor": ..., "reward_extra_info": {key: list per sample}}``."""

    @abstractmethod
    def __init__(self, tokenizer: Any, num_examine: int, compute_score: RawRewardFn | None,
                 reward_fn_key: str = "data_source", **kwargs: Any) -> None: ...

    @abstractmethod
    def __call__(self, data: DataProto, return_dict: bool = False) -> torch.Tensor | dict[str, Any]: ...

    def _extract_reward_from_rm_scores(self, data: DataProto, return_dict: bool = False):
        """``rm_scores`` already in the batch (a reward model scored it): returned as is, else None."""
        if data.batch is None or "rm_scores" not in data.batch:
            return None
        if return_dict:
            keys = data.meta_info.get("reward_extra_keys", [])
            return {"reward_tensor": data.batch["rm_scores"],
                    "reward_extra_info": {k: data.non_tensor_batch[k] for k in keys}}
        return data.batch["rm_scores"]


def print_examined(seen: dict, num_examine: int, sample: DecodedSample, score: Any) -> None:
    """Prints the first ``num_examine`` samples of each data source (verl's debugging aid)."""
    count = seen.get(sample.data_source, 0)
    if count >= num_examine:
        return
    seen[sample.data_source] = count + 1
    print("[prompt]", sample.prompt)
    print("[response]", sample.response)
    print("[ground_truth]", sample.ground_truth)
    if isinstance(score, dict):
        for key, value in score.items():
            print(f"[{key}]", value)
    else:
        print("[score]", score)
