"""The hermes parser: single and parallel calls, the text around them, and every kind of bad call kept as an error
(malformed JSON, not an object, no name, non-object arguments, arguments as JSON text, a call left open)."""

from __future__ import annotations

import asyncio
import json

import pytest

from verl.experimental.agent_loop import FunctionCall, HermesToolParser, ToolParser


@pytest.fixture
def parser(qwen3):
    return ToolParser.get_tool_parser("hermes", qwen3)


def test_no_call(parser):
    assert parser.parse_text("just text<|im_end|>") == ("just text<|im_end|>", [])
    assert parser.parse_text("a </tool_call> b") == ("a </tool_call> b", [])


def test_parallel_calls_and_content_from_ids(parser, qwen3):
    text = ('Let me compute.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n'
            '<tool_call>\n{"name": "mul", "arguments": {"x": [1, 2], "s": "\u00e9"}, "id": "c2"}\n</tool_call><|im_end|>')
    content, calls = asyncio.run(parser.extract_tool_calls(qwen3.encode(text, add_special_tokens=False)))
    assert content == "Let me compute.\n\n<|im_end|>"
    assert calls == [FunctionCall(arguments='{"a": 1, "b": 2}', name="add"),
                     FunctionCall(arguments='{"x": [1, 2], "s": "\u00e9"}', name="mul", tool_call_id="c2")]


@pytest.mark.parametrize("body,name,error", [
    ('{"name": "add", "arguments": {"a": 1,}}', "", "the tool call is not valid JSON (Expecting property name "
                                                    "enclosed in double quotes at position 37)"),
    ('[1, 2]', "", "the tool call must be a JSON object with 'name' and 'arguments', got list"),
    ('{"arguments": {}}', "", "the tool call has no 'name' string"),
    ('{"name": 3, "arguments": {}}', "", "the tool call has no 'name' string"),
    ('{"name": "add", "arguments": [1]}', "add", "the arguments of 'add' must be a JSON object, got [1]"),
    ('{"name": "add", "arguments": "not json"}', "add", "the arguments of 'add' must be a JSON object, got \"not json\""),
])
def test_bad_calls_are_kept_with_their_error(parser, body, name, error):
    content, calls = parser.parse_text(f"pre<tool_call>{body}</tool_call>post")
    assert content == "prepost"
    assert len(calls) == 1 and calls[0].name == name and calls[0].arguments == "{}"
    assert calls[0].error.startswith(error)


def test_arguments_given_as_json_text_and_no_arguments(parser):
    _, calls = parser.parse_text('<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>'
                                 '<tool_call>{"name": "g"}</tool_call>')
    assert [(c.name, json.loads(c.arguments), c.error) for c in calls] == [("f", {"a": 1}, None), ("g", {}, None)]


def test_partial_call_after_complete_ones(parser):
    content, calls = parser.parse_text('a<tool_call>{"name": "f", "arguments": {}}</tool_call>b<tool_call>{"name": "g", "argu')
    assert content == "ab"
    assert calls[0] == FunctionCall(arguments="{}", name="f")
    assert calls[1].error == "incomplete tool call: <tool_call> was never closed by </tool_call>"


def test_unknown_format(qwen3):
    with pytest.raises(ValueError, match="unknown tool parser 'nope'"):
        ToolParser.get_tool_parser("nope", qwen3)
    assert isinstance(ToolParser.get_tool_parser("hermes", qwen3), HermesToolParser)
