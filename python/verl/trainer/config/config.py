"""Config dataclasses shared by the trainer and the workers (verl's ``verl.trainer.config.config``): the
``checkpoint`` section of an actor, critic or reference config."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...base_config import BaseConfig

__all__ = ["CheckpointConfig"]


@dataclass
class CheckpointConfig(BaseConfig):
    """``*.checkpoint``: what a checkpoint saves and what a resume loads (``model``, ``optimizer``, ``extra``,
    ``hf_model``), whether the save runs asynchronously, whether weight export is strict, and whether a model with
    LoRA adapters saves only the adapters."""

    save_contents: list[str] = field(default_factory=lambda: ["model", "optimizer", "extra"])
    load_contents: list[str] = field(default_factory=lambda: ["model", "optimizer", "extra"])
    async_save: bool = False
    strict: bool = True
    save_lora_only: bool = False
