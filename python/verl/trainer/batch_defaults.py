"""Batch sizes a user need not set (issue 16 item 2): ``RLConfig(algorithm=..., model=..., train_files=...)`` with
nothing else trains.

verl requires every micro-batch size and leaves a batch larger than the data (or a mini-batch larger than the batch)
to fail later. ``fill_batch_defaults`` settles them before the trainer is built, logging one note per change on the
``verl`` logger:

- ``data.train_batch_size`` larger than the training set: clipped to the set's size.
- ``ppo_mini_batch_size`` (actor, critic) larger than ``data.train_batch_size``: clipped to it.
- micro-batch sizes left unset (``null``) while ``use_dynamic_bsz`` is off: the update's
  (``actor.ppo_micro_batch_size_per_gpu``, ``critic.ppo_micro_batch_size_per_gpu``) is the largest divisor of the
  trajectories of one rank's share of the mini-batch (``ppo_mini_batch_size x rollout.n`` over ``trainer.nnodes x
  trainer.n_gpus_per_node`` ranks, as verl normalises it) whose sequences fit verl's per-GPU token budget
  (``ppo_max_token_len_per_gpu`` over ``max_prompt_length + max_response_length``); the forward passes'
  (``rollout`` / ``ref`` ``log_prob_micro_batch_size_per_gpu``, ``critic.forward_micro_batch_size_per_gpu``) as many
  trajectories of the batch as fit that budget.

A value the user set is never changed except by the two clips above.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["fill_batch_defaults"]

logger = logging.getLogger("verl")

_ACTOR = "actor_rollout_ref.actor"


def _unset(cfg: Any, key: str) -> bool:
    """Neither ``key`` nor its legacy global form (``key`` without ``_per_gpu``) has a value."""
    legacy = key.removesuffix("_per_gpu")
    return cfg.get(key) is None and (legacy == key or cfg.get(legacy) is None)


def _largest_divisor_at_most(n: int, cap: int) -> int:
    return max(d for d in range(1, min(n, cap) + 1) if n % d == 0)


def fill_batch_defaults(cfg: Any, dataset_size: int | None = None) -> list[str]:
    """Settles the batch sizes of ``cfg`` (a ``verl.Config``, changed in place) as the module docstring says; the
    notes logged, one per change."""
    notes: list[str] = []

    def note(key: str, value: int, why: str) -> None:
        cfg[key] = value
        notes.append(f"{key}={value}: {why}")
        logger.warning("verl: %s=%d (%s)", key, value, why)

    batch = int(cfg.get("data.train_batch_size"))
    if dataset_size is not None and 0 < dataset_size < batch and cfg.get("data.gen_batch_size") is None:
        note("data.train_batch_size", dataset_size, f"clipped from {batch}: the training set has {dataset_size} rows")
        batch = dataset_size
    for key in (f"{_ACTOR}.ppo_mini_batch_size", "critic.ppo_mini_batch_size"):
        mini = int(cfg.get(key))
        if mini > batch:
            note(key, batch, f"clipped from {mini} to data.train_batch_size")

    n = int(cfg.get("actor_rollout_ref.rollout.n"))
    ranks = max(1, int(cfg.get("trainer.nnodes")) * int(cfg.get("trainer.n_gpus_per_node")))
    seq_len = int(cfg.get("data.max_prompt_length")) + int(cfg.get("data.max_response_length"))

    def fitting(budget_key: str) -> int:
        return max(1, int(cfg.get(budget_key)) // max(seq_len, 1))

    for role in (_ACTOR, "critic"):
        key = f"{role}.ppo_micro_batch_size_per_gpu"
        if cfg.get(f"{role}.use_dynamic_bsz") or not _unset(cfg, key):
            continue
        # per rank, as verl normalises the mini-batch (a share the ranks cannot split is refused at start)
        rows = max(1, int(cfg.get(f"{role}.ppo_mini_batch_size")) * n // ranks)
        budget = f"{role}.ppo_max_token_len_per_gpu"
        note(key, _largest_divisor_at_most(rows, fitting(budget)),
             f"unset: the largest divisor of one rank's {rows} trajectories of the mini-batch whose {seq_len}-token "
             f"sequences fit {budget}={cfg.get(budget)}")

    forward = [("actor_rollout_ref.rollout", "log_prob_micro_batch_size_per_gpu", "log_prob_use_dynamic_bsz",
                "log_prob_max_token_len_per_gpu"),
               ("actor_rollout_ref.ref", "log_prob_micro_batch_size_per_gpu", "log_prob_use_dynamic_bsz",
                "log_prob_max_token_len_per_gpu"),
               ("critic", "forward_micro_batch_size_per_gpu", "use_dynamic_bsz", "forward_max_token_len_per_gpu")]
    for section, micro, dynamic, budget in forward:
        key = f"{section}.{micro}"
        if cfg.get(f"{section}.{dynamic}") or not _unset(cfg, key):
            continue
        value = min(batch * n, fitting(f"{section}.{budget}"))
        note(key, value, f"unset: the trajectories of the batch ({batch * n}) whose {seq_len}-token sequences fit "
                         f"{section}.{budget}={cfg.get(f'{section}.{budget}')}")
    return notes
