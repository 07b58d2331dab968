"""Batch sizes a user need not set (issue 16 item 2): ``RLConfig(algorithm=..., model=..., train_files=...)`` with
nothing else trains.

One derivation for both languages: C++'s ``verl::trainer::fill_batch_defaults`` (verl/trainer/batch_defaults.h, which
says what it settles), which PPOTrainer's C++ constructor runs too; here it also knows the training set's size and
logs one note per change on the ``verl`` logger. A value the user set is never changed except by its two clips.
"""

from __future__ import annotations

import logging
from typing import Any

from .. import _C

__all__ = ["fill_batch_defaults"]

logger = logging.getLogger("verl")


def fill_batch_defaults(cfg: Any, dataset_size: int | None = None) -> list[str]:
    """Settles the batch sizes of ``cfg`` (a ``verl.Config``, changed in place); the notes logged, one per change."""
    notes: list[str] = []
    for key, value, why in _C.trainer.fill_batch_defaults(cfg.cpp, dataset_size):
        notes.append(f"{key}={value}: {why}")
        logger.warning("verl: %s=%d (%s)", key, value, why)
    return notes
