"""verl's config tree from Python: attribute and dict access over the C++ ``verl::Config``.

>>> cfg = load_config(overrides=["actor_rollout_ref.rollout.n=8"])
>>> cfg.actor_rollout_ref.rollout.n, cfg["algorithm"]["gamma"], cfg["data.max_prompt_length"]
(8, 1.0, 512)

Maps come back as views (so ``cfg.algorithm.gamma = 0.99`` writes through, type-checked by C++);
leaves come back as plain Python values with interpolations resolved.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from . import _C

__all__ = ["Config", "load_config", "load_sft_config"]


def load_config(path: str | os.PathLike | None = None, overrides: Iterable[str] = ()) -> Config:
    """verl's defaults, then the YAML file at ``path`` (if any), then ``key=value`` overrides; validated.

    Raises ``verl.ConfigError`` (a ``ValueError``) naming the key, file and line on any problem.
    """
    return Config(_C.Config.load(_path_arg(path), list(overrides)))


def load_sft_config(path: str | os.PathLike | None = None, overrides: Iterable[str] = ()) -> Config:
    """The SFT trainer's tree (verl's ``sft_trainer`` keys and defaults: ``data.*``, ``model.*``, ``optim.*``,
    ``trainer.*``), then the YAML file and overrides as ``load_config``; validated with the SFT tree's rules."""
    return Config(_C.Config.load_sft(_path_arg(path), list(overrides)))


def _path_arg(path: str | os.PathLike | None) -> bytes:
    """A file path as the OS's bytes, so a name that is not UTF-8 (surrogate-escaped in a str) still opens."""
    return os.fsencode(path) if path is not None else b""


class Config(Mapping):
    """A node of the config tree. ``Config()`` is verl's defaults."""

    __slots__ = ("_cpp", "_prefix")

    def __init__(self, cpp: _C.Config | None = None, prefix: str = "") -> None:
        object.__setattr__(self, "_cpp", cpp if cpp is not None else _C.Config())
        object.__setattr__(self, "_prefix", prefix)

    # -- access ------------------------------------------------------------------------------
    def _key(self, name: str) -> str:
        return f"{self._prefix}.{name}" if self._prefix else name

    def _node(self, key: str) -> Any:
        raw = self._cpp.raw(key)
        if isinstance(raw, dict):
            return Config(self._cpp, key)
        return self._cpp.get(key)

    def __getitem__(self, name: str) -> Any:
        if not isinstance(name, str):
            raise TypeError(f"config keys are strings, got {type(name).__name__}")
        return self._node(self._key(name))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as e:  # pragma: no cover - ConfigError is raised instead
            raise AttributeError(name) from e

    def __setitem__(self, name: str, value: Any) -> None:
        self._cpp.set(self._key(name), value.to_dict() if isinstance(value, Config) else value)

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._cpp.has(self._key(name))

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw_map())

    def __len__(self) -> int:
        return len(self._raw_map())

    def _raw_map(self) -> dict:
        return self._cpp.raw(self._prefix) if self._prefix else self._cpp.to_dict(resolve=False)

    def get(self, name: str, default: Any = None) -> Any:
        """Value at a (dotted) key below this node, or ``default`` when the key does not exist."""
        return self[name] if name in self else default

    # -- whole-tree operations ----------------------------------------------------------------
    def to_dict(self, resolve: bool = True) -> dict:
        """This node as nested dicts (interpolations resolved unless ``resolve=False``)."""
        if not self._prefix:
            return self._cpp.to_dict(resolve=resolve)
        return self._cpp.get(self._prefix) if resolve else self._cpp.raw(self._prefix)

    def to_yaml(self, resolve: bool = True) -> str:
        """The whole tree as YAML."""
        return self._cpp.to_yaml(resolve=resolve)

    def override(self, *overrides: str) -> Config:
        """Applies ``key=value`` / ``+key=value`` / ``++key=value`` / ``~key`` overrides in place."""
        self._cpp.apply_overrides(list(overrides))
        return self

    def merge_yaml(self, path: str | os.PathLike) -> Config:
        """Merges a YAML file onto the tree in place."""
        self._cpp.merge_yaml_file(_path_arg(path))
        return self

    def validate(self) -> Config:
        """Checks every value's type and range; raises ``verl.ConfigError`` / ``verl.ConfigTypeError``."""
        self._cpp.validate()
        return self

    def copy(self) -> Config:
        """An independent copy of the whole tree."""
        return Config(self._cpp.copy())

    @property
    def is_sft(self) -> bool:
        """Whether this is the SFT trainer's tree (``load_sft_config``) rather than the PPO one."""
        return self._cpp.is_sft

    @property
    def cpp(self) -> _C.Config:
        """The underlying C++ config (for passing to C++ components)."""
        return self._cpp

    def __repr__(self) -> str:
        return f"Config({self._prefix or '<root>'}: {self.to_dict()!r})"
