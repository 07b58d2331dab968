"""Backend-specific checkpoint configs (verl's ``verl.workers.config.checkpoint``); the base ``CheckpointConfig``
lives in ``verl.trainer.config``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...trainer.config import CheckpointConfig

__all__ = ["McoreCheckpointConfig"]


@dataclass
class McoreCheckpointConfig(CheckpointConfig):
    """Megatron's checkpoint: the base fields plus ``mbridge_config``, options handed to mbridge's exporter."""

    mbridge_config: dict[str, Any] = field(default_factory=dict)
