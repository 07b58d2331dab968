"""The actor / reference policy worker (C++ ``verl::workers::ActorWorker``)."""

from __future__ import annotations

import os
from typing import Any

from verl import _C
from verl.protocol import DataProto

from ._common import ConfigLike, cpp_config, cpp_model, to_cpp


class ActorWorker:
    """verl's actor: ``compute_log_prob``, ``compute_ref_log_prob``, ``update_policy``.

    ``config`` is the whole verl tree (the ``actor_rollout_ref`` block is read); ``model`` a
    ``verl.models.transformer.CausalLM`` that the worker trains in place. ``role="ref"`` makes a
    frozen reference policy (micro-batching from ``actor_rollout_ref.ref.log_prob_*``).
    """

    def __init__(self, config: ConfigLike, model: Any, role: str = "actor") -> None:
        self.model = model
        self._worker = _C.workers.ActorWorker(cpp_config(config), cpp_model(model, value_head=False), role)

    @property
    def role(self) -> str:
        return self._worker.role

    def compute_log_prob(self, data: DataProto, calculate_entropy: bool | None = None) -> DataProto:
        """``old_log_probs`` (bs, response_length) (+ ``entropys``) under the current weights."""
        return DataProto.from_cpp(self._worker.compute_log_prob(to_cpp(data), calculate_entropy))

    def compute_ref_log_prob(self, data: DataProto) -> DataProto:
        """``ref_log_prob`` (bs, response_length)."""
        return DataProto.from_cpp(self._worker.compute_ref_log_prob(to_cpp(data)))

    def update_policy(self, data: DataProto) -> dict[str, float]:
        """PPO epochs x mini-batches x micro-batches; returns verl's ``actor/*`` metrics."""
        return dict(self._worker.update_policy(to_cpp(data)))

    def update_policy_on_policy(self, data: DataProto) -> tuple[DataProto, dict[str, float]]:
        """``update_policy`` on a batch without ``old_log_probs``, for one epoch of one mini-batch: each micro-batch's
        forward gives them (detached) before the optimizer step. Returns ``old_log_probs`` and ``entropys`` in input
        order -- bitwise ``compute_log_prob(data, True)``'s where ``old_log_prob_from_update_is_exact`` -- and the
        update's metrics."""
        out, metrics = self._worker.update_policy_on_policy(to_cpp(data))
        return DataProto.from_cpp(out), dict(metrics)

    def old_log_prob_from_update_is_exact(self, global_rows: int) -> bool:
        """Whether ``update_policy_on_policy`` on ``global_rows`` rows gives the log-prob pass's numbers bit for bit:
        one epoch of one mini-batch, no shuffle, the pass's micro-batching."""
        return self._worker.old_log_prob_from_update_is_exact(global_rows)

    def optimizer_state(self) -> dict[str, Any]:
        """lr, scheduler_step_count, skipped_steps, clip_grad, num_warmup_steps."""
        return dict(self._worker.optimizer_state())

    def save_optimizer(self, path: str | os.PathLike) -> None:
        """AdamW state and schedule position (a torch archive, written atomically)."""
        self._worker.save_optimizer(os.fspath(path))

    def load_optimizer(self, path: str | os.PathLike) -> None:
        """Restores what save_optimizer wrote (raises verl.CheckpointError on a mismatch)."""
        self._worker.load_optimizer(os.fspath(path))

    @property
    def lr(self) -> float:
        return self._worker.optimizer_state()["lr"]
