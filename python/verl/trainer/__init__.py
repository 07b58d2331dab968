"""verl's trainer entry points: ``python -m verl.trainer.main_ppo`` (config keys as in verl), and the trainer classes
the tutorials import from here (``from verl.trainer import PPOTrainer``: the same classes as ``verl.PPOTrainer``)."""

from __future__ import annotations

from typing import Any

# Resolved on first use: ``import verl`` imports this package while it is still being initialised,
# before the trainer modules (which import from verl) can load.
_CLASSES = {"PPOTrainer": "ppo_trainer", "SFTTrainer": "sft_trainer", "RLConfig": "rl_config"}

__all__ = list(_CLASSES)


def __getattr__(name: str) -> Any:
    if name in _CLASSES:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_CLASSES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
