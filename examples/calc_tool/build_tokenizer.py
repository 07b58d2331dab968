"""Builds examples/calc_tool/tokenizer/ (tokenizer.json + tokenizer_config.json with the chat template).

Run once by a developer (needs HF ``tokenizers`` and ``jinja2``, dev dependencies); the output is committed, so
run.py needs nothing but verl-cpp. Byte-level BPE with Qwen2's pre-tokenizer (single digits, so numbers are spelt
digit by digit), trained on the task's own rendered conversations, with Qwen's special tokens: ``<|im_start|>`` /
``<|im_end|>`` (special: skipped when decoding without special tokens) and ``<tool_call>`` / ``</tool_call>`` /
``<tool_response>`` / ``</tool_response>`` (added but not special, as in Qwen2.5 and Qwen3: a decoded response
keeps them, so the tool-call parser and the reward function see the calls).

The chat template is Qwen3's hermes layout, shortened for a tiny model's context: the tools block is
``<tools>`` + one JSON schema per line + ``</tools>`` in the system turn (without Qwen's paragraph of instructions:
the model learns the format from its SFT data), an assistant turn's ``tool_calls`` are
``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``, and consecutive ``tool`` messages share one user
turn of ``<tool_response>`` blocks. An assistant turn ends with ``<|im_end|>\\n`` whatever it holds, so the agent
loop can append tool turns to the model's own tokens (chat_tokens.py) and the SFT dataset can locate assistant turns.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import calc_task  # noqa: E402
from calculator import TOOL_SCHEMA  # noqa: E402
from chatml_bpe import build_chatml_bpe  # noqa: E402

TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- '<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools><|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'system' and loop.first %}"
    "{%- elif message.role == 'assistant' %}"
    "{%- set content = message.content or '' %}"
    "{{- '<|im_start|>assistant\\n' + content }}"
    "{%- for tool_call in message.tool_calls or [] %}"
    "{%- if (loop.first and content) or not loop.first %}{{- '\\n' }}{%- endif %}"
    "{%- if tool_call.function %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' + tool_call.name + '\", \"arguments\": ' }}"
    "{%- if tool_call.arguments is string %}{{- tool_call.arguments }}"
    "{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def render(messages: list[dict], tools: list[dict] | None = None, add_generation_prompt: bool = False) -> str:
    """The template rendered with jinja2 the way transformers (and verl-cpp's tokenizer) render it."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x: json.dumps(x, ensure_ascii=False)
    return env.from_string(CHAT_TEMPLATE).render(messages=messages, tools=tools,
                                                 add_generation_prompt=add_generation_prompt)


def corpus() -> list[str]:
    """Every kind of text the example renders: tool-using and direct conversations, and the calculator's errors."""
    from calculator import calculator

    train, test = calc_task.generate_splits(4000, 400, seed=0)
    texts = []
    for a, b in train + test:
        prompt = [{"role": "user", "content": calc_task.problem_text(a, b)}]
        texts.append(render(prompt + calc_task.tool_call_messages(a, b), [TOOL_SCHEMA]))
        texts.append(render(prompt + [{"role": "assistant", "content": calc_task.answer_text(a * b)}], [TOOL_SCHEMA]))
    for bad in ("", "3+", "3%4", "(1+2", "1/0", "12x34"):
        try:
            calculator(bad)
        except ValueError as e:
            texts.append(f"Error executing tool 'calculator': ValueError: {e}")
    return texts


def build(out_dir: str, vocab_size: int = 508) -> None:
    build_chatml_bpe(corpus(), out_dir, vocab_size, chat_template=CHAT_TEMPLATE, added_tokens=TOOL_TOKENS)


if __name__ == "__main__":
    build(os.path.join(HERE, "tokenizer"))
