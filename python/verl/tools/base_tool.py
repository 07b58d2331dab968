"""``verl.tools.base_tool.BaseTool``: verl's stateful tool interface, unchanged so verl users' tool classes work.

The agent loop calls, per tool call: ``instance_id, _ = await tool.create(create_kwargs=...)``, then
``response, reward, metrics = await tool.execute(instance_id, arguments, agent_data=...)``, then (always, also after
an error) ``await tool.release(instance_id)``. ``calc_reward`` is for callers that score a trajectory's tool state.
"""

from __future__ import annotations

from typing import Any, Optional
from uuid import uuid4

from .schemas import OpenAIFunctionToolSchema, ToolResponse


class BaseTool:
    """A tool built from its YAML entry: ``config`` (the ``config:`` mapping) and its OpenAI ``tool_schema`` (a
    subclass with no ``tool_schema:`` in the YAML overrides ``get_openai_tool_schema``)."""

    def __init__(self, config: dict, tool_schema: Optional[OpenAIFunctionToolSchema]) -> None:
        self.config = config
        self.tool_schema = tool_schema or self.get_openai_tool_schema()
        if self.tool_schema is None:
            raise ValueError(f"{type(self).__name__}: no tool_schema given and get_openai_tool_schema() returned None")
        if isinstance(self.tool_schema, dict):
            self.tool_schema = OpenAIFunctionToolSchema.model_validate(self.tool_schema)
        self.name = self.tool_schema.function.name

    def get_openai_tool_schema(self) -> Optional[OpenAIFunctionToolSchema]:
        return getattr(self, "tool_schema", None)

    async def create(self, instance_id: Optional[str] = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        """Starts a tool instance for one trajectory; returns its id and a creation response."""
        return (instance_id if instance_id is not None else str(uuid4())), ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any],
                      **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        """Runs the tool on the decoded arguments: (response, step reward, metrics)."""
        return ToolResponse(text="Updated the tool state."), 0.0, {}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        return 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Frees the instance's state."""
