"""Plain Python functions as tools (verl's ``verl.tools.function_tool``): ``@function_tool`` registers a function,
its OpenAI schema built from its signature and Google-style docstring; ``FunctionTool.from_function`` wraps one
without registering it. Function tools are stateless: no create / release, the arguments go straight to the call
(a sync function runs in a worker thread so it does not block the event loop the rollout runs on).

Types map to JSON schema as transformers' ``get_json_schema`` maps them: ``int`` integer, ``float`` number, ``str``
string, ``bool`` boolean, ``list[...]`` / ``tuple`` array, ``dict`` object, ``X | Y`` a list of types,
``Optional[X]`` X, ``Literal[...]`` an ``enum``. Parameters without a default are required.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import os
import re
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .schemas import OpenAIFunctionToolSchema, ToolResponse

__all__ = ["FunctionTool", "function_tool", "get_function_tool", "load_function_tools_from_path",
           "normalize_function_tool_return", "FUNCTION_TOOL_REGISTRY"]

FUNCTION_TOOL_REGISTRY: dict[str, FunctionTool] = {}
_LOADED_FUNCTION_TOOL_PATHS: dict[str, list[FunctionTool]] = {}

_JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean", list: "array", tuple: "array",
               dict: "object", type(None): "null"}


@dataclass
class FunctionTool:
    """A function the model can call: its ``name`` (the schema's), the callable and its OpenAI ``tool_schema``."""

    name: str
    fn: Callable[..., Any]
    tool_schema: OpenAIFunctionToolSchema
    is_async: bool = False

    @classmethod
    def from_function(cls, fn: Callable[..., Any], name: Optional[str] = None,
                      schema: Optional[OpenAIFunctionToolSchema | dict] = None) -> FunctionTool:
        tool_name = name or fn.__name__
        if schema is None:
            built = _build_schema_from_fn(fn, tool_name)
        else:
            built = OpenAIFunctionToolSchema.model_validate(schema)
        return cls(name=tool_name, fn=fn, tool_schema=built, is_async=inspect.iscoroutinefunction(fn))

    async def call(self, parameters: dict[str, Any]) -> Any:
        """Calls the function with the model's decoded arguments."""
        if self.is_async:
            return await self.fn(**parameters)
        return await asyncio.to_thread(self.fn, **parameters)


def function_tool(name: Optional[str | Callable] = None, *, schema: Optional[OpenAIFunctionToolSchema | dict] = None):
    """Registers a function as a tool: ``@function_tool``, ``@function_tool("name")`` or
    ``@function_tool(schema={...})``. Returns the function unchanged. Registering another function under a taken
    name is a ``ValueError``."""

    def register(fn: Callable, tool_name: Optional[str]) -> Callable:
        entry = FunctionTool.from_function(fn, tool_name, schema)
        existing = FUNCTION_TOOL_REGISTRY.get(entry.name)
        if existing is not None and existing.fn is not fn:
            raise ValueError(f"function tool '{entry.name}' is already registered to "
                             f"{existing.fn.__module__}.{existing.fn.__qualname__}")
        FUNCTION_TOOL_REGISTRY[entry.name] = entry
        return fn

    if callable(name):
        return register(name, None)
    return lambda fn: register(fn, name)


def get_function_tool(name: str) -> FunctionTool:
    if name not in FUNCTION_TOOL_REGISTRY:
        raise KeyError(f"function tool '{name}' is not registered (registered: {sorted(FUNCTION_TOOL_REGISTRY)}); "
                       "is its file named by rollout.multi_turn.function_tool_path?")
    return FUNCTION_TOOL_REGISTRY[name]


def load_function_tools_from_path(path: str | os.PathLike) -> list[FunctionTool]:
    """Runs a Python file (once per path) and returns the function tools it registered."""
    abs_path = os.path.abspath(os.fspath(path))
    if not os.path.isfile(abs_path):
        raise FileNotFoundError(f"function_tool_path does not exist: {path}")
    if abs_path in _LOADED_FUNCTION_TOOL_PATHS:
        return _LOADED_FUNCTION_TOOL_PATHS[abs_path]
    before = set(FUNCTION_TOOL_REGISTRY)
    module_name = "_verl_function_tools_" + re.sub(r"\W", "_", abs_path)
    spec = importlib.util.spec_from_file_location(module_name, abs_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import function_tool_path {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    tools = [FUNCTION_TOOL_REGISTRY[n] for n in sorted(set(FUNCTION_TOOL_REGISTRY) - before)]
    _LOADED_FUNCTION_TOOL_PATHS[abs_path] = tools
    return tools


def normalize_function_tool_return(ret: Any) -> tuple[ToolResponse, float, dict]:
    """A function's return as ``(ToolResponse, reward, metrics)``: a ``ToolResponse`` / str / dict (JSON text) /
    other (``str()``), or a tuple ``(response[, reward[, metrics]])`` where ``None`` means 0.0 / {}."""
    if isinstance(ret, tuple):
        if not 1 <= len(ret) <= 3:
            raise TypeError(f"a function tool's tuple return must be (response[, reward[, metrics]]), "
                            f"got length {len(ret)}")
        reward = 0.0 if len(ret) < 2 or ret[1] is None else float(ret[1])
        metrics = {} if len(ret) < 3 or ret[2] is None else dict(ret[2])
        return _as_response(ret[0]), reward, metrics
    return _as_response(ret), 0.0, {}


def _as_response(value: Any) -> ToolResponse:
    if isinstance(value, ToolResponse):
        return value
    if isinstance(value, str):
        return ToolResponse(text=value)
    if isinstance(value, dict):
        return ToolResponse(text=json.dumps(value, ensure_ascii=False))
    return ToolResponse(text=str(value))


# -- the schema from the signature -------------------------------------------------------------------------------
def _build_schema_from_fn(fn: Callable, tool_name: str) -> OpenAIFunctionToolSchema:
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception as e:  # an unresolvable annotation
        raise TypeError(f"function tool '{tool_name}': cannot resolve its type hints ({e})") from e
    summary, arg_docs = _parse_google_docstring(inspect.getdoc(fn) or "")
    properties: dict[str, dict[str, Any]] = {}
    required: list[str] = []
    for pname, param in signature.parameters.items():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ValueError(f"function tool '{tool_name}': variadic parameter '{pname}' has no JSON schema; "
                             "use named parameters")
        if pname not in hints:
            raise TypeError(f"function tool '{tool_name}': parameter '{pname}' needs a type hint (it becomes the "
                            "JSON schema type the model sees)")
        prop = _json_type(hints[pname], tool_name, pname)
        if pname in arg_docs:
            prop["description"] = arg_docs[pname]
        properties[pname] = prop
        if param.default is inspect.Parameter.empty:
            required.append(pname)
    return OpenAIFunctionToolSchema.model_validate({
        "type": "function",
        "function": {"name": tool_name, "description": summary,
                     "parameters": {"type": "object", "properties": properties, "required": required}},
    })


def _json_type(hint: Any, tool_name: str, pname: str) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        values = list(typing.get_args(hint))
        kinds = sorted({_JSON_TYPES[type(v)] for v in values if type(v) in _JSON_TYPES})
        return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in typing.get_args(hint) if a is not type(None)]  # Optional[X] is X
        kinds: list[str] = []
        for member in members:
            kind = _json_type(member, tool_name, pname)["type"]
            for k in kind if isinstance(kind, list) else [kind]:
                if k not in kinds:
                    kinds.append(k)
        return {"type": kinds[0] if len(kinds) == 1 else kinds}
    base = origin if origin is not None else hint
    if base in _JSON_TYPES:
        return {"type": _JSON_TYPES[base]}
    if base is Any:
        raise TypeError(f"function tool '{tool_name}': parameter '{pname}' is typed Any; give it a JSON type")
    raise TypeError(f"function tool '{tool_name}': parameter '{pname}' has type {hint!r}, which has no JSON schema "
                    "type (use int, float, str, bool, list, dict, a union or Literal of them)")


def _parse_google_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (text before the first section) and the ``Args:`` descriptions by parameter name."""
    lines = doc.splitlines()
    sections = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$")
    summary_lines: list[str] = []
    i = 0
    while i < len(lines) and not sections.match(lines[i]):
        summary_lines.append(lines[i])
        i += 1
    args: dict[str, str] = {}
    current: Optional[str] = None
    in_args = False
    for line in lines[i:]:
        header = sections.match(line)
        if header:
            in_args = header.group(1) in ("Args", "Arguments", "Parameters")
            current = None
            continue
        if not in_args:
            continue
        entry = re.match(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
        if entry:
            current = entry.group(1)
            args[current] = entry.group(2).strip()
        elif current is not None and line.strip():
            args[current] = (args[current] + " " + line.strip()).strip()
    return " ".join(s.strip() for s in summary_lines if s.strip()), args
