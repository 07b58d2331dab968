"""Reward managers by name (verl's ``verl.workers.reward_manager.registry``): ``@register("naive")``."""

from __future__ import annotations

from collections.abc import Callable

from ...errors import ConfigError

__all__ = ["register", "get_reward_manager_cls", "REWARD_MANAGER_REGISTRY"]

REWARD_MANAGER_REGISTRY: dict[str, type] = {}


def register(name: str) -> Callable[[type], type]:
    """Class decorator registering a reward manager under ``name``; registering another class under a taken name
    is a ``ValueError`` (re-registering the same class is allowed, as in verl)."""

    def decorator(cls: type) -> type:
        existing = REWARD_MANAGER_REGISTRY.get(name)
        if existing is not None and existing is not cls:
            raise ValueError(f"Reward manager {name} has already been registered: {existing} vs {cls}")
        REWARD_MANAGER_REGISTRY[name] = cls
        return cls

    return decorator


def get_reward_manager_cls(name: str) -> type:
    """The class registered as ``name``; ``verl.ConfigError`` (a ValueError) listing the known names otherwise."""
    if name not in REWARD_MANAGER_REGISTRY:
        raise ConfigError(f"Unknown reward manager: {name} (registered: {sorted(REWARD_MANAGER_REGISTRY)})")
    return REWARD_MANAGER_REGISTRY[name]
