"""verl's tool schemas (``verl.tools.schemas``): OpenAI function-tool schemas, parsed tool calls and ``ToolResponse``.

verl defines these as pydantic models; user tools call ``OpenAIFunctionToolSchema.model_validate(dict)``,
``schema.model_dump(exclude_unset=True, exclude_none=True)`` and ``ToolResponse(text=...)``. The same API is kept
here on plain classes (pydantic is no dependency of verl-cpp): fields are checked on construction (a typed
``ValueError`` naming the field), ``model_dump(exclude_unset=True)`` leaves out fields never given -- which keeps the
tools block rendered into the chat template exactly as the user's YAML wrote it (no ``"strict": false`` added).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar


class _Model:
    """Keyword-constructed record with pydantic's ``model_validate`` / ``model_dump`` / ``model_fields_set``."""

    # field name -> (allowed python types or a _Model subclass, required, default factory)
    _fields: ClassVar[dict[str, tuple[Any, bool, Any]]] = {}

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - set(self._fields))
        if unknown:
            # pydantic's default (extra="ignore") drops unknown keys; a tool schema with a misspelt key would then
            # silently lose it, so name it instead.
            raise ValueError(f"{type(self).__name__}: unknown field(s) {unknown}; known: {sorted(self._fields)}")
        self.model_fields_set: set[str] = set()
        for name, (kind, required, default) in self._fields.items():
            if name in values:
                object.__setattr__(self, name, self._coerce(name, kind, values[name]))
                self.model_fields_set.add(name)
            elif required:
                raise ValueError(f"{type(self).__name__}: field '{name}' is required")
            else:
                object.__setattr__(self, name, default() if callable(default) else default)

    def _coerce(self, name: str, kind: Any, value: Any) -> Any:
        if value is None:
            if self._fields[name][1]:
                raise ValueError(f"{type(self).__name__}.{name}: a value is required, got None")
            return None
        if isinstance(kind, type) and issubclass(kind, _Model):
            if isinstance(value, kind):
                return value
            if isinstance(value, dict):
                return kind.model_validate(value)
            raise ValueError(f"{type(self).__name__}.{name}: expected a {kind.__name__} or a dict, "
                             f"got {type(value).__name__}")
        if isinstance(kind, tuple) and len(kind) == 2 and kind[0] == "dict_of":
            if not isinstance(value, dict):
                raise ValueError(f"{type(self).__name__}.{name}: expected a dict, got {type(value).__name__}")
            return {str(k): v if isinstance(v, kind[1]) else kind[1].model_validate(v) for k, v in value.items()}
        if kind is Any:
            return value
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
            raise ValueError(f"{type(self).__name__}.{name}: expected {_type_names(kind)}, got "
                             f"{type(value).__name__} ({value!r:.60})")
        return value

    @classmethod
    def model_validate(cls, obj: Any) -> Any:
        if isinstance(obj, cls):
            return obj
        if not isinstance(obj, dict):
            raise ValueError(f"{cls.__name__}.model_validate: expected a dict, got {type(obj).__name__}")
        return cls(**obj)

    def model_dump(self, exclude_unset: bool = False, exclude_none: bool = False, **_: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self._fields:
            if exclude_unset and name not in self.model_fields_set:
                continue
            value = getattr(self, name)
            if exclude_none and value is None:
                continue
            out[name] = _dump(value, exclude_unset, exclude_none)
        return out

    def model_dump_json(self, exclude_unset: bool = False, exclude_none: bool = False, **_: Any) -> str:
        return json.dumps(self.model_dump(exclude_unset=exclude_unset, exclude_none=exclude_none), ensure_ascii=False)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._fields:
            value = self._coerce(name, self._fields[name][0], value)
            self.model_fields_set.add(name)
        object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.model_dump() == other.model_dump()  # type: ignore[union-attr]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{type(self).__name__}({args})"


def _as_tuple(kind: Any) -> tuple:
    return kind if isinstance(kind, tuple) else (kind,)


def _type_names(kind: Any) -> str:
    return " or ".join(k.__name__ for k in _as_tuple(kind))


def _dump(value: Any, exclude_unset: bool, exclude_none: bool) -> Any:
    if isinstance(value, _Model):
        return value.model_dump(exclude_unset=exclude_unset, exclude_none=exclude_none)
    if isinstance(value, dict):
        return {k: _dump(v, exclude_unset, exclude_none) for k, v in value.items()}
    if isinstance(value, list):
        return [_dump(v, exclude_unset, exclude_none) for v in value]
    return value


class OpenAIFunctionPropertySchema(_Model):
    """One parameter: its JSON type (a list of types for a union), description and allowed values."""

    _fields = {"type": ((str, list), True, None), "description": (str, False, None), "enum": (list, False, None)}


class OpenAIFunctionParametersSchema(_Model):
    """The parameters object: ``{"type": "object", "properties": {...}, "required": [...]}``."""

    _fields = {"type": (str, True, None), "properties": (("dict_of", OpenAIFunctionPropertySchema), True, None),
               "required": (list, False, list)}


class OpenAIFunctionSchema(_Model):
    _fields = {"name": (str, True, None), "description": (str, True, None),
               "parameters": (OpenAIFunctionParametersSchema, False,
                              lambda: OpenAIFunctionParametersSchema(type="object", properties={}, required=[])),
               "strict": (bool, False, False)}


class OpenAIFunctionToolSchema(_Model):
    """``{"type": "function", "function": {"name", "description", "parameters"}}``: what the chat template renders."""

    _fields = {"type": (str, True, None), "function": (OpenAIFunctionSchema, True, None)}


class OpenAIFunctionParsedSchema(_Model):
    """A tool call as the parser reads it: the name and the arguments' JSON text (not yet decoded)."""

    _fields = {"name": (str, True, None), "arguments": (str, True, None)}


class OpenAIFunctionCallSchema(_Model):
    _fields = {"name": (str, True, None), "arguments": (dict, True, None)}

    @staticmethod
    def from_openai_function_parsed_schema(
            parsed_schema: OpenAIFunctionParsedSchema) -> tuple[OpenAIFunctionCallSchema, bool]:
        """The decoded call and whether its arguments failed to decode to a JSON object (then ``{}``)."""
        try:
            arguments = json.loads(parsed_schema.arguments)
        except json.JSONDecodeError:
            return OpenAIFunctionCallSchema(name=parsed_schema.name, arguments={}), True
        if not isinstance(arguments, dict):
            return OpenAIFunctionCallSchema(name=parsed_schema.name, arguments={}), True
        return OpenAIFunctionCallSchema(name=parsed_schema.name, arguments=arguments), False


class OpenAIFunctionToolCall(_Model):
    _fields = {"id": (str, True, None), "type": (str, False, "function"),
               "function": (OpenAIFunctionCallSchema, True, None)}


class ToolResponse(_Model):
    """What a tool returns to the model: text (images / videos are kept for multimodal tools, which a text-only
    agent loop refuses)."""

    _fields = {"text": (str, False, None), "image": (list, False, None), "video": (list, False, None)}

    def __init__(self, **values: Any) -> None:
        for key in ("image", "video"):
            if values.get(key) is not None and not isinstance(values[key], list):
                raise ValueError(f"ToolResponse.{key} must be a list (wrap a single {key} as [{key}]), "
                                 f"got {type(values[key]).__name__}")
        super().__init__(**values)

    def is_empty(self) -> bool:
        return not self.text and not self.image and not self.video

    def is_text_only(self) -> bool:
        return bool(self.text) and not self.image and not self.video
