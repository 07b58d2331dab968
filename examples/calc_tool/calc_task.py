"""The calculator task: "Compute 37*48." with two-digit operands, generated deterministically from a seed.

A model of ~0.1 M parameters cannot multiply two-digit numbers, but it can copy: the operands into a call of the
``calculator`` tool, the tool's result into its answer. Rows follow verl's RL dataset schema (``prompt`` chat
messages, ``data_source``, ``reward_model.ground_truth``, ``extra_info``) plus ``agent_name: "tool_agent"``, the
column verl's agent loop reads to run a row through its tool loop. Train and test are disjoint: a problem is its
ordered operand pair, and no test pair is a train pair.

The SFT split holds conversations of an imperfect teacher (``{"messages": [...]}``, verl's multi-turn SFT form):
a ``tool_rate`` share call the tool and copy its result, the rest answer the product directly, as a teacher that
multiplies in its head would; both end "The answer is 1776.". The direct answers are right, but a student this
small can only imitate their form: its own direct answers are wrong. That is the gap RL closes: the reward (1 for
the exact product) is earned through the tool, so GRPO raises the tool-call rate and with it the accuracy.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

DATA_SOURCE = "calc_tool"
AGENT_NAME = "tool_agent"
MIN_OPERAND, MAX_OPERAND = 10, 99
TOOL_NAME = "calculator"

# Text the chat template puts around turns: removed from a decoded response before its final answer is read, so
# the score is the same whether the response was decoded with or without special tokens.
_TURN_MARKERS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")


def problem_text(a: int, b: int) -> str:
    return f"Compute {a}*{b}."


def generate_splits(n_train: int, n_test: int, seed: int = 0) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(train, test) lists of distinct operand pairs (a, b) in MIN_OPERAND..MAX_OPERAND; no pair in both."""
    span = MAX_OPERAND - MIN_OPERAND + 1
    if n_train < 0 or n_test < 0 or n_train + n_test > span * span:
        raise ValueError(f"n_train + n_test = {n_train + n_test} must be in 0..{span * span} (the distinct problems "
                         f"with operands {MIN_OPERAND}..{MAX_OPERAND})")
    pairs = [(a, b) for a in range(MIN_OPERAND, MAX_OPERAND + 1) for b in range(MIN_OPERAND, MAX_OPERAND + 1)]
    random.Random(seed).shuffle(pairs)
    return pairs[:n_train], pairs[n_train:n_train + n_test]


def rl_row(a: int, b: int, split: str, index: int) -> dict[str, Any]:
    return {
        "data_source": DATA_SOURCE,
        "agent_name": AGENT_NAME,
        "prompt": [{"role": "user", "content": problem_text(a, b)}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": str(a * b)},
        "extra_info": {"split": split, "index": index},
    }


def answer_text(result: int | str) -> str:
    """The final answer's one accepted form. Both of the teacher's ways of answering end with it, so the model's
    first token tells them apart: "The" (answering from its head) or ``<tool_call>``."""
    return f"The answer is {result}."


def tool_call_messages(a: int, b: int) -> list[dict[str, Any]]:
    """The tool-using answer after the user's prompt: call the calculator, read its result, answer with it."""
    return [
        {"role": "assistant", "content": "",
         "tool_calls": [{"type": "function",
                         "function": {"name": TOOL_NAME, "arguments": {"expression": f"{a}*{b}"}}}]},
        {"role": "tool", "content": str(a * b)},
        {"role": "assistant", "content": answer_text(a * b)},
    ]


def teacher_messages(a: int, b: int, tool_rate: float, seed: int = 0, copy: int = 0) -> list[dict[str, Any]]:
    """The teacher's conversation for a*b: with probability ``tool_rate`` (a pure function of the problem, ``seed``
    and ``copy``) it uses the calculator, otherwise it answers the product directly."""
    if not 0.0 <= tool_rate <= 1.0:
        raise ValueError(f"tool_rate must be in [0, 1], got {tool_rate}")
    prompt = [{"role": "user", "content": problem_text(a, b)}]
    if random.Random(f"teacher:{seed}:{copy}:{a}*{b}").random() < tool_rate:
        return prompt + tool_call_messages(a, b)
    return prompt + [{"role": "assistant", "content": answer_text(a * b)}]


def final_answer(response: str) -> str:
    """The model's last turn in a decoded multi-turn response (model turns and tool turns, as verl decodes it): the
    text after the last tool response, without the template's turn markers and the ``assistant`` role line; the
    whole response when no tool answered."""
    text = response
    for marker in _TURN_MARKERS:
        text = text.replace(marker, "")
    if "</tool_response>" in text:
        text = text.rsplit("</tool_response>", 1)[1].strip()
        if text.startswith("assistant\n") or text == "assistant":
            text = text[len("assistant"):]
    return text.strip()


def called_tool(response: str) -> bool:
    return "<tool_call>" in response


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None) -> dict[str, float]:
    """verl's compute_score form. ``score`` and ``acc``: 1.0 when the final answer is exactly "The answer is
    <ground_truth>."; ``tool_call``: 1.0 when the response calls a tool (validation reports its mean as the held-out
    tool-call rate)."""
    score = 1.0 if final_answer(solution_str) == answer_text(str(ground_truth).strip()) else 0.0
    return {"score": score, "acc": score, "tool_call": 1.0 if called_tool(solution_str) else 0.0}


def write_jsonl(path: str, rows: list[dict[str, Any]]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def write_dataset(out_dir: str, n_train: int, n_test: int, seed: int = 0, tool_rate: float = 0.4,
                  sft_copies: int = 1) -> dict[str, str]:
    """Writes train.jsonl and test.jsonl (RL rows) and sft.jsonl (``sft_copies`` teacher conversations per train
    problem, each copy with its own draw of tool use)."""
    os.makedirs(out_dir, exist_ok=True)
    train, test = generate_splits(n_train, n_test, seed)
    paths = {name: os.path.join(out_dir, f"{name}.jsonl") for name in ("train", "test", "sft")}
    write_jsonl(paths["train"], [rl_row(a, b, "train", i) for i, (a, b) in enumerate(train)])
    write_jsonl(paths["test"], [rl_row(a, b, "test", i) for i, (a, b) in enumerate(test)])
    write_jsonl(paths["sft"], [{"messages": teacher_messages(a, b, tool_rate, seed, copy)}
                               for copy in range(sft_copies) for a, b in train])
    return paths
