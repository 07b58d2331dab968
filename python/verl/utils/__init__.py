"""verl's utilities (``verl.utils``), backed by libverl where the work is numeric.

``hf_tokenizer``, ``hf_processor`` and ``omega_conf_to_dataclass`` are reachable here as in verl; they load on first
use (``verl.utils`` is imported while ``verl`` itself initialises, before the modules they need)."""

from typing import Any

__all__ = ["hf_tokenizer", "hf_processor", "omega_conf_to_dataclass"]

_LAZY = {"hf_tokenizer": "tokenizer", "hf_processor": "tokenizer", "omega_conf_to_dataclass": "config"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
