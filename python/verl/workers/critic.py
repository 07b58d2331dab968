"""The critic worker (C++ ``verl::workers::CriticWorker``)."""

from __future__ import annotations

import os
from typing import Any

from verl import _C
from verl.protocol import DataProto

from ._common import ConfigLike, cpp_config, cpp_model, to_cpp


class CriticWorker:
    """verl's critic: ``compute_values`` and ``update_critic`` (``critic.*`` keys).

    ``model`` is a ``verl.models.transformer.ValueModel`` that the worker trains in place.
    """

    def __init__(self, config: ConfigLike, model: Any) -> None:
        self.model = model
        self._worker = _C.workers.CriticWorker(cpp_config(config), cpp_model(model, value_head=True))

    def compute_values(self, data: DataProto) -> DataProto:
        """``values`` (bs, response_length): the value before each response token, 0 at padding."""
        return DataProto.from_cpp(self._worker.compute_values(to_cpp(data)))

    def update_critic(self, data: DataProto) -> dict[str, float]:
        """PPO epochs x mini-batches x micro-batches of the clipped value loss; ``critic/*`` metrics."""
        return dict(self._worker.update_critic(to_cpp(data)))

    def optimizer_state(self) -> dict[str, Any]:
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
