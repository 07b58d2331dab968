"""``BaseConfig`` (verl's ``verl.base_config``): the base of verl's typed config dataclasses, readable like the
config tree it comes from (``cfg.get("gamma")``, ``cfg["gamma"]``, iteration over field names) and frozen once
built, except for the fields a class lists in ``_mutable_fields``."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, fields
from typing import Any, ClassVar

__all__ = ["BaseConfig"]


@dataclass
class BaseConfig:
    """A dataclass config with a dict-like read interface; assigning to a field after construction raises
    ``dataclasses.FrozenInstanceError`` unless the field is in ``_mutable_fields``."""

    _mutable_fields: ClassVar[set[str]] = set()
    _target_: str = ""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.__dict__ and name not in type(self)._mutable_fields:
            raise FrozenInstanceError(f"Field '{name}' is frozen and cannot be modified")
        super().__setattr__(name, value)

    def get(self, key: str, default: Any = None) -> Any:
        """The field ``key``, or ``default`` when the config has no such field."""
        return getattr(self, key, default)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __iter__(self):
        for f in fields(self):
            yield f.name

    def __len__(self) -> int:
        return len(fields(self))
