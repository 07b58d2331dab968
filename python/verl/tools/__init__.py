"""Tools for multi-turn agent rollouts, with verl's module paths: ``verl.tools.base_tool.BaseTool``,
``verl.tools.function_tool`` (plain functions as tools), ``verl.tools.schemas`` and ``verl.tools.tool_registry``
(the tool config YAML)."""

from .base_tool import BaseTool
from .function_tool import FunctionTool, function_tool
from .schemas import OpenAIFunctionToolSchema, ToolResponse
from .tool_registry import initialize_tools_from_config, load_all_tools

__all__ = ["BaseTool", "FunctionTool", "function_tool", "OpenAIFunctionToolSchema", "ToolResponse",
           "initialize_tools_from_config", "load_all_tools"]
