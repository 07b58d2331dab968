"""Reward managers (verl's ``verl.workers.reward_manager``): ``naive``, ``batch``, ``dapo`` and the registry.

``get_reward_manager_cls(name)(tokenizer=..., num_examine=..., compute_score=...)(data, return_dict=True)`` gives
``{"reward_tensor": (bs, response_length) float32, "reward_extra_info": {key: [per sample]}}``.
"""

from .registry import get_reward_manager_cls, register  # noqa: I001  (registry first: the managers use it)
from .abstract import AbstractRewardManager
from .batch import BatchRewardManager
from .dapo import DAPORewardManager
from .naive import NaiveRewardManager
from .from_function import build_reward_manager

__all__ = [
    "AbstractRewardManager",
    "BatchRewardManager",
    "DAPORewardManager",
    "NaiveRewardManager",
    "build_reward_manager",
    "register",
    "get_reward_manager_cls",
]
