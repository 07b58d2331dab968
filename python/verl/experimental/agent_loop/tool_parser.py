"""Tool-call parsers (verl's ``verl.experimental.agent_loop.tool_parser``), chosen by ``rollout.multi_turn.format``.

``hermes`` (Qwen2.5 / Qwen3 / Hermes chat templates): each call is ``<tool_call>{"name": ..., "arguments": {...}}
</tool_call>``, several in one turn are parallel calls. Unlike verl, which logs and drops a call it cannot decode, a
bad call is kept as a ``FunctionCall`` with ``error`` set, so the agent loop answers it with a tool message saying
what was wrong (the model learns from the mistake; the rollout never crashes on it). Bad calls: a body that is not
JSON, not an object, without a string ``name``, with ``arguments`` that are not an object (or a string holding
one), and a ``<tool_call>`` left open when generation stopped (partial).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["FunctionCall", "ToolParser", "HermesToolParser"]


@dataclass
class FunctionCall:
    arguments: str
    """The arguments as JSON text (an object); ``"{}"`` for a call that failed to parse."""
    name: str
    """The function's name (``""`` when the call was too broken to name one)."""
    tool_call_id: Optional[str] = None
    """The model-emitted id, if the format has one."""
    error: Optional[str] = None
    """Why the call could not be parsed (it is then answered with this error, not executed)."""


class ToolParser(ABC):
    _registry: dict[str, type[ToolParser]] = {}

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    @property
    def stop_token_ids(self) -> list[int]:
        """Ids that must stop generation for the parser to run (none for hermes: the model ends its turn)."""
        return []

    @abstractmethod
    async def extract_tool_calls(self, responses_ids: list[int],
                                 tools: Optional[list[Any]] = None) -> tuple[str, list[FunctionCall]]:
        """The turn's text without the calls, and the calls in order."""

    @classmethod
    def get_tool_parser(cls, name: str, tokenizer: Any) -> ToolParser:
        if name not in cls._registry:
            raise ValueError(f"rollout.multi_turn.format: unknown tool parser {name!r} "
                             f"(known: {sorted(cls._registry)})")
        return cls._registry[name](tokenizer)

    @classmethod
    def register(cls, name: str):
        def decorator(subclass: type[ToolParser]) -> type[ToolParser]:
            cls._registry[name] = subclass
            return subclass

        return decorator


@ToolParser.register("hermes")
class HermesToolParser(ToolParser):
    start_token = "<tool_call>"
    end_token = "</tool_call>"
    _complete = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)

    async def extract_tool_calls(self, responses_ids: list[int],
                                 tools: Optional[list[Any]] = None) -> tuple[str, list[FunctionCall]]:
        return self.parse_text(self.tokenizer.decode(list(responses_ids), skip_special_tokens=False))

    def parse_text(self, text: str) -> tuple[str, list[FunctionCall]]:
        if self.start_token not in text:
            return text, []
        calls: list[FunctionCall] = []
        content_parts: list[str] = []
        position = 0
        for match in self._complete.finditer(text):
            content_parts.append(text[position:match.start()])
            calls.append(self._parse_body(match.group(1)))
            position = match.end()
        tail = text[position:]
        open_at = tail.find(self.start_token)
        if open_at >= 0:  # a call the model began and never closed (stopped by length or a stop id)
            content_parts.append(tail[:open_at])
            calls.append(FunctionCall(arguments="{}", name="", error=(
                f"incomplete tool call: {self.start_token} was never closed by {self.end_token}")))
        else:
            content_parts.append(tail)
        return "".join(content_parts), calls

    @staticmethod
    def _parse_body(body: str) -> FunctionCall:
        try:
            call = json.loads(body)
        except json.JSONDecodeError as e:
            return FunctionCall(arguments="{}", name="", error=f"the tool call is not valid JSON ({e.msg} at "
                                                                f"position {e.pos}): {body.strip()[:200]}")
        if not isinstance(call, dict):
            return FunctionCall(arguments="{}", name="", error=f"the tool call must be a JSON object with 'name' "
                                                               f"and 'arguments', got {type(call).__name__}")
        name = call.get("name")
        if not isinstance(name, str) or not name:
            return FunctionCall(arguments="{}", name="", error="the tool call has no 'name' string")
        arguments = call.get("arguments", {})
        if isinstance(arguments, str):  # some models emit the arguments as JSON text
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                pass
        if not isinstance(arguments, dict):
            return FunctionCall(arguments="{}", name=name, error=(
                f"the arguments of '{name}' must be a JSON object, got {json.dumps(arguments)[:200]}"))
        call_id = call.get("id")
        return FunctionCall(arguments=json.dumps(arguments, ensure_ascii=False), name=name,
                            tool_call_id=call_id if isinstance(call_id, str) else None)
