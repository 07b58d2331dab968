"""verl's tool config YAML (``rollout.multi_turn.tool_config_path``) -> tool objects.

    tools:
      - class_name: my_pkg.calc.CalculatorTool      # a BaseTool subclass, imported by its dotted path
        config: {type: native, precision: 3}        # passed as ``config`` (``type`` must be ``native``, as in verl)
        tool_schema:                                # optional: OpenAI function schema (else the class supplies it)
          type: function
          function: {name: calc, description: ..., parameters: {type: object, properties: {...}, required: [...]}}

``${...}`` interpolations resolve as OmegaConf resolves them (verl loads the file with OmegaConf).
"""

from __future__ import annotations

import importlib
import os
from enum import Enum
from typing import Any, Optional

from .base_tool import BaseTool
from .function_tool import FunctionTool, load_function_tools_from_path
from .schemas import OpenAIFunctionToolSchema

__all__ = ["ToolType", "get_tool_class", "initialize_tools_from_config", "load_all_tools"]


class ToolType(Enum):
    NATIVE = "native"


def get_tool_class(cls_name: str) -> type:
    """Imports ``package.module.ClassName``."""
    if not isinstance(cls_name, str) or "." not in cls_name:
        raise ValueError(f"tool class_name must be a dotted path 'module.ClassName', got {cls_name!r}")
    module_name, class_name = cls_name.rsplit(".", 1)
    module = importlib.import_module(module_name)
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise ImportError(f"tool class_name {cls_name!r}: module {module_name!r} has no {class_name!r}") from None


def initialize_tools_from_config(tools_config_file: str | os.PathLike) -> list[BaseTool]:
    """Instantiates the ``BaseTool`` subclasses a tool config YAML declares, in file order."""
    from omegaconf import OmegaConf

    path = os.fspath(tools_config_file)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"tool_config_path does not exist: {path}")
    raw = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    if not isinstance(raw, dict) or not isinstance(raw.get("tools"), list):
        raise ValueError(f"{path}: a tool config needs a top-level 'tools:' list")
    tools: list[BaseTool] = []
    for index, entry in enumerate(raw["tools"]):
        where = f"{path}: tools[{index}]"
        if not isinstance(entry, dict) or "class_name" not in entry:
            raise ValueError(f"{where}: each tool needs 'class_name' (and 'config')")
        unknown = sorted(set(entry) - {"class_name", "config", "tool_schema"})
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; a tool has class_name, config, tool_schema")
        config = entry.get("config") or {}
        if not isinstance(config, dict):
            raise ValueError(f"{where}.config must be a mapping, got {type(config).__name__}")
        try:
            tool_type = ToolType(config.get("type", "native"))
        except ValueError:
            raise ValueError(f"{where}.config.type: unsupported tool type {config.get('type')!r} "
                             f"(supported: {[t.value for t in ToolType]})") from None
        assert tool_type is ToolType.NATIVE
        tool_cls = get_tool_class(entry["class_name"])
        if not (isinstance(tool_cls, type) and issubclass(tool_cls, BaseTool)):
            raise TypeError(f"{where}: {entry['class_name']} is not a verl.tools.base_tool.BaseTool subclass")
        schema: Optional[OpenAIFunctionToolSchema] = None
        if entry.get("tool_schema") is not None:
            try:
                schema = OpenAIFunctionToolSchema.model_validate(entry["tool_schema"])
            except ValueError as e:
                raise ValueError(f"{where}.tool_schema: {e}") from None
        tools.append(tool_cls(config=config, tool_schema=schema))
    _check_unique([t.name for t in tools], path)
    return tools


def load_all_tools(tool_config_path: Optional[str], function_tool_path: Optional[str]) -> list[Any]:
    """The YAML's tools followed by the file's function tools; a name used twice is a ``ValueError``."""
    native: list[Any] = initialize_tools_from_config(tool_config_path) if tool_config_path else []
    functions: list[FunctionTool] = load_function_tools_from_path(function_tool_path) if function_tool_path else []
    _check_unique([t.name for t in native + functions], f"{tool_config_path} + {function_tool_path}")
    return native + functions


def _check_unique(names: list[str], where: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{where}: tool name {name!r} is declared twice; tool names must be unique")
        seen.add(name)
