"""The reward manager for a Python reward function in any form ``verl.trainer.reward_fn.RewardFunction`` accepts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...trainer.reward_fn import RewardFunction
from .batch import BatchRewardManager
from .naive import NaiveRewardManager

__all__ = ["build_reward_manager"]


def build_reward_manager(reward_fn: Callable[..., Any] | None, tokenizer: Any, num_examine: int = 0,
                         reward_fn_key: str = "data_source", **manager_kwargs: Any) -> Any:
    """The reward manager for a Python reward function: ``BatchRewardManager`` for a batched one,
    ``NaiveRewardManager`` otherwise (``default_compute_score`` when ``reward_fn`` is None). ``manager_kwargs``
    go to the manager (``compute_score_timeout`` for the naive one, bound scorer kwargs for the batched one)."""
    if reward_fn is None:
        return NaiveRewardManager(tokenizer, num_examine, None, reward_fn_key, **manager_kwargs)
    wrapped = reward_fn if isinstance(reward_fn, RewardFunction) else RewardFunction(reward_fn)
    cls = BatchRewardManager if wrapped.batched else NaiveRewardManager
    return cls(tokenizer, num_examine, wrapped, reward_fn_key, **manager_kwargs)
