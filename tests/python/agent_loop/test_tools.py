"""verl's tool interfaces: schemas (model_validate / model_dump as verl's pydantic models), plain functions as
tools (the OpenAI schema from the signature and docstring), BaseTool's defaults, and the tool config YAML."""

from __future__ import annotations

import asyncio
import textwrap
from typing import Literal, Optional

import pytest

from verl.tools.base_tool import BaseTool
from verl.tools.function_tool import FunctionTool, normalize_function_tool_return
from verl.tools.schemas import OpenAIFunctionCallSchema, OpenAIFunctionParsedSchema, OpenAIFunctionToolSchema, ToolResponse
from verl.tools.tool_registry import initialize_tools_from_config, load_all_tools

from .conftest import ADD_SCHEMA, CalculatorTool


def test_schema_round_trip_keeps_only_what_was_given():
    schema = OpenAIFunctionToolSchema.model_validate(ADD_SCHEMA)
    assert schema.function.name == "add" and schema.function.parameters.properties["a"].type == "integer"
    assert schema.model_dump(exclude_unset=True, exclude_none=True) == ADD_SCHEMA  # no "strict": False added
    full = schema.model_dump()
    assert full["function"]["strict"] is False and full["function"]["parameters"]["properties"]["a"]["enum"] is None
    with pytest.raises(ValueError, match="OpenAIFunctionSchema: field 'name' is required"):
        OpenAIFunctionToolSchema.model_validate({"type": "function", "function": {"description": "x"}})
    with pytest.raises(ValueError, match="unknown field"):
        OpenAIFunctionToolSchema.model_validate({"type": "function", "fucntion": {}})
    with pytest.raises(ValueError, match=r"ToolResponse.image must be a list"):
        ToolResponse(image="img")
    call, bad = OpenAIFunctionCallSchema.from_openai_function_parsed_schema(
        OpenAIFunctionParsedSchema(name="f", arguments="[1]"))
    assert bad and call.arguments == {}


def test_function_tool_schema_from_signature():
    def search(query: str, top_k: int = 3, mode: Literal["fast", "exact"] = "fast", scale: float | int = 1.0,
               tags: Optional[list[str]] = None) -> str:
        """Search the index.

        Args:
            query: What to look for.
            top_k (int): How many results
                to return.
            mode: Matching mode.
        """
        return f"{query}:{top_k}:{mode}:{scale}:{tags}"

    tool = FunctionTool.from_function(search)
    assert tool.tool_schema.model_dump(exclude_unset=True) == {"type": "function", "function": {
        "name": "search", "description": "Search the index.",
        "parameters": {"type": "object", "required": ["query"], "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "top_k": {"type": "integer", "description": "How many results to return."},
            "mode": {"type": "string", "enum": ["fast", "exact"], "description": "Matching mode."},
            "scale": {"type": ["number", "integer"]},
            "tags": {"type": "array"}}}}}
    assert asyncio.run(tool.call({"query": "q", "top_k": 5})) == "q:5:fast:1.0:None"

    def untyped(x):
        return x

    with pytest.raises(TypeError, match="parameter 'x' needs a type hint"):
        FunctionTool.from_function(untyped)

    def variadic(*args: int):
        return 0

    with pytest.raises(ValueError, match="variadic parameter 'args'"):
        FunctionTool.from_function(variadic)


def test_async_function_tool_and_returns():
    async def double(x: int) -> dict:
        """Twice x."""
        return {"value": 2 * x}

    tool = FunctionTool.from_function(double, name="twice")
    assert tool.name == "twice" and tool.is_async
    assert normalize_function_tool_return(asyncio.run(tool.call({"x": 4})))[0].text == '{"value": 8}'
    assert normalize_function_tool_return(("t", None, None)) == (ToolResponse(text="t"), 0.0, {})
    assert normalize_function_tool_return((ToolResponse(text="t"), 0.5, {"k": 1})) == (ToolResponse(text="t"), 0.5, {"k": 1})
    assert normalize_function_tool_return(12)[0].text == "12"
    with pytest.raises(TypeError, match="length 4"):
        normalize_function_tool_return((1, 2, 3, 4))


def test_base_tool_defaults():
    tool = BaseTool({}, OpenAIFunctionToolSchema.model_validate(ADD_SCHEMA))
    instance, created = asyncio.run(tool.create())
    assert tool.name == "add" and len(instance) == 36 and created.is_empty()
    response, reward, metrics = asyncio.run(tool.execute(instance, {}))
    assert (response.text, reward, metrics) == ("Updated the tool state.", 0.0, {})
    assert asyncio.run(tool.calc_reward(instance)) == 0.0
    with pytest.raises(ValueError, match="no tool_schema given"):
        BaseTool({}, None)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_tool_config_yaml(tmp_path):
    path = write(tmp_path, "tools.yaml", """\
        tools:
          - class_name: agent_loop.conftest.CalculatorTool
            config:
              type: native
              delay: 0.25
            tool_schema:
              type: function
              function:
                name: add
                description: Add two integers.
                parameters:
                  type: object
                  properties:
                    a: {type: integer, description: first}
                    b: {type: integer, description: second}
                  required: [a, b]
          - class_name: verl.tools.base_tool.BaseTool
            config: {type: native}
            tool_schema:
              type: function
              function: {name: noop, description: Does nothing.}
        """)
    calc, noop = initialize_tools_from_config(path)
    assert isinstance(calc, CalculatorTool) and calc.config == {"type": "native", "delay": 0.25} and calc.delay == 0.25
    assert calc.tool_schema.model_dump(exclude_unset=True, exclude_none=True) == ADD_SCHEMA
    assert noop.name == "noop" and type(noop) is BaseTool

    functions = write(tmp_path, "fns.py", '''
        from verl.tools.function_tool import function_tool

        @function_tool
        def yaml_test_upper(text: str) -> str:
            """Upper-cases text.

            Args:
                text: The text.
            """
            return text.upper()
        ''')
    tools = load_all_tools(path, functions)
    assert [t.name for t in tools] == ["add", "noop", "yaml_test_upper"]
    assert asyncio.run(tools[2].call({"text": "ab"})) == "AB"


@pytest.mark.parametrize("body,error", [
    ("tools: {}", "needs a top-level 'tools:' list"),
    ("tools:\n  - config: {type: native}", r"tools\[0\]: each tool needs 'class_name'"),
    ("tools:\n  - class_name: verl.tools.base_tool.BaseTool\n    config: {type: mcp}", "unsupported tool type 'mcp'"),
    ("tools:\n  - class_name: verl.tools.schemas.ToolResponse\n    config: {type: native}", "is not a verl.tools.base_tool.BaseTool subclass"),
    ("tools:\n  - class_name: verl.tools.base_tool.BaseTool\n    config: {type: native}\n    tool_schema: {type: function}",
     r"tools\[0\].tool_schema: OpenAIFunctionToolSchema: field 'function' is required"),
    ("tools:\n  - class_name: verl.tools.base_tool.BaseTool\n    confg: {}", r"unknown key\(s\) \['confg'\]"),
])
def test_tool_config_errors(tmp_path, body, error):
    with pytest.raises((ValueError, TypeError), match=error):
        initialize_tools_from_config(write(tmp_path, "bad.yaml", body + "\n"))
    with pytest.raises(FileNotFoundError):
        initialize_tools_from_config(str(tmp_path / "missing.yaml"))
