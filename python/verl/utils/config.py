"""``omega_conf_to_dataclass`` (verl's ``verl.utils.config``): a section of the config tree -- an OmegaConf
``DictConfig``, a ``verl.Config`` section or a plain dict -- as one of verl's typed config dataclasses.

The class is ``dataclass_type`` when given, else the section's ``_target_`` (a dotted class path, as verl's YAML
files carry it). Nested sections become dataclasses too: by their own ``_target_``, or by the field's declared
dataclass type. A key that is not a field of its class raises ``verl.ConfigError`` naming it.
"""

from __future__ import annotations

import dataclasses
import importlib
import typing
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError

__all__ = ["omega_conf_to_dataclass"]


def _plain(config: Any) -> Any:
    """Dicts and lists of plain values (interpolations resolved) from a DictConfig / ListConfig / verl.Config."""
    module = type(config).__module__
    if module.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(config, resolve=True)
    if hasattr(config, "to_dict") and not isinstance(config, Mapping):
        return config.to_dict()
    if isinstance(config, Mapping):
        return {k: _plain(v) for k, v in config.items()}
    if isinstance(config, (list, tuple)):
        return [_plain(v) for v in config]
    return config


def _locate(path: str) -> type:
    module_name, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError, ValueError) as e:
        raise ConfigError(f"_target_ '{path}' names no importable class ({e})") from None


def _dataclass_of(annotation: Any) -> type | None:
    """The dataclass an annotation names (itself, or inside Optional / Union); None when it names none."""
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return annotation
    for arg in typing.get_args(annotation):
        found = _dataclass_of(arg)
        if found is not None:
            return found
    return None


def _build(cls: type, data: Mapping[str, Any], where: str) -> Any:
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise ValueError(f"{cls} must be a dataclass")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(k for k in data if k not in names and k != "_target_")
    if unknown:
        raise ConfigError(f"{where}: {unknown} are not fields of {cls.__name__} (fields: {sorted(names)})")
    kwargs = {}
    for key, value in data.items():
        if key not in names:
            continue  # _target_ on a dataclass without that field
        if isinstance(value, Mapping) and "_target_" in value:
            value = _build(_locate(value["_target_"]), value, f"{where}.{key}")
        elif isinstance(value, Mapping) and (nested := _dataclass_of(hints.get(key))) is not None:
            value = _build(nested, value, f"{where}.{key}")
        kwargs[key] = value
    return cls(**kwargs)


def omega_conf_to_dataclass(config: Any, dataclass_type: type | None = None) -> Any:
    """``config`` as an instance of ``dataclass_type`` (or of its ``_target_``); fields it leaves out keep their
    defaults. An empty config gives ``dataclass_type()`` (None without a type); an object that is not a config
    section is returned as it is."""
    if not config:
        return dataclass_type() if dataclass_type is not None else None
    data = _plain(config)
    if not isinstance(data, Mapping):
        return config
    if dataclass_type is None:
        if "_target_" not in data:
            raise ConfigError("When dataclass_type is not provided, config must contain _target_ (the dotted path "
                              f"of the dataclass, e.g. verl.trainer.config.AlgoConfig). Got config: {dict(data)}")
        dataclass_type = _locate(data["_target_"])
    return _build(dataclass_type, data, dataclass_type.__name__)
