"""The task: "What is 37 minus 8? Reply with only the number." -- two-operand mental arithmetic in words.

Every problem is ``a plus b`` or ``a minus b`` with ``a`` in 10..49 and ``b`` in 1..9 (720 problems in all; a
difference is never negative). SmolLM2-135M-Instruct gets about one in seven of them right (greedy): it reads the
question as a riddle ("17 minus 8 equals 1."), explains instead of answering, or runs past the response budget.

``write_dataset`` shuffles the 720 problems with the seed and cuts them into a held-out split and a training split
that share no problem, written as JSON Lines in verl's RL row schema::

    {"data_source": "mental_arith",
     "prompt": [{"role": "user", "content": "What is 37 minus 8? Reply with only the number."}],
     "ability": "math",
     "reward_model": {"style": "rule", "ground_truth": "29"},
     "extra_info": {"split": "test", "index": 0, "a": 37, "op": "minus", "b": 8}}

``compute_score`` is the reward, in verl's ``custom_reward_function`` form (this file is what
``custom_reward_function.path`` names; it imports nothing outside the standard library): 1 when the last integer in
the response is the answer (the "final answer" rule of verl's GSM8K scorer in flexible mode), else 0. It also
reports ``exact``: whether the response is the bare number (a trailing period allowed), the letter of the
instruction, which the reward does not ask for.
"""

from __future__ import annotations

import json
import os
import random
import re
from typing import Any

DATA_SOURCE = "mental_arith"
INSTRUCTION = "Reply with only the number."
FIRST = range(10, 50)  # a
SECOND = range(1, 10)  # b
OPERATIONS = ("plus", "minus")
N_PROBLEMS = len(FIRST) * len(SECOND) * len(OPERATIONS)  # 720

_INTEGER = re.compile(r"-?\d+")


def answer(a: int, op: str, b: int) -> int:
    if op == "plus":
        return a + b
    if op == "minus":
        return a - b
    raise ValueError(f"unknown operation {op!r}; expected one of {OPERATIONS}")


def question(a: int, op: str, b: int) -> str:
    return f"What is {a} {op} {b}? {INSTRUCTION}"


def all_problems() -> list[tuple[int, str, int]]:
    """Every (a, op, b) of the task, in a fixed order."""
    return [(a, op, b) for op in OPERATIONS for a in FIRST for b in SECOND]


def split_problems(n_test: int, seed: int = 0, n_train: int | None = None) -> tuple[list, list]:
    """(train, test): the problems shuffled with ``seed``, the first ``n_test`` held out, the next ``n_train`` (default:
    all the rest) for training. The two share no problem."""
    if n_test < 1:
        raise ValueError(f"n_test must be >= 1, got {n_test}")
    rest = N_PROBLEMS - n_test
    n_train = rest if n_train is None else n_train
    if not 1 <= n_train <= rest:
        raise ValueError(f"n_train must be in 1..{rest} (the {N_PROBLEMS} problems less the {n_test} held out), "
                         f"got {n_train}")
    problems = all_problems()
    random.Random(seed).shuffle(problems)
    return problems[n_test:n_test + n_train], problems[:n_test]


def rl_row(a: int, op: str, b: int, split: str, index: int) -> dict[str, Any]:
    """One row of verl's RL dataset schema."""
    return {"data_source": DATA_SOURCE,
            "prompt": [{"role": "user", "content": question(a, op, b)}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str(answer(a, op, b))},
            "extra_info": {"split": split, "index": index, "a": a, "op": op, "b": b}}


def write_dataset(directory: str, n_test: int, seed: int = 0, n_train: int | None = None) -> dict[str, str]:
    """Writes ``train.jsonl`` and ``test.jsonl`` into ``directory``; returns {"train": path, "test": path}."""
    os.makedirs(directory, exist_ok=True)
    train, test = split_problems(n_test, seed, n_train)
    paths = {}
    for split, problems in (("train", train), ("test", test)):
        paths[split] = os.path.join(directory, f"{split}.jsonl")
        with open(paths[split], "w", encoding="utf-8") as f:
            for i, (a, op, b) in enumerate(problems):
                f.write(json.dumps(rl_row(a, op, b, split, i)) + "\n")
    return paths


def read_rows(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def final_integer(text: str) -> str | None:
    """The last integer written in ``text`` (None when there is none)."""
    found = _INTEGER.findall(text)
    return found[-1] if found else None


def is_bare_number(text: str, ground_truth: str) -> bool:
    """The response is the number alone ("29" or "29."), as the instruction asks."""
    return text.strip().removesuffix(".").strip() == ground_truth


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None) -> dict[str, float]:
    """verl's ``compute_score``: ``score`` (the reward) and ``acc`` are 1.0 when the response's last integer is the
    answer; ``exact`` is 1.0 when the response is the bare number. verl logs every key per data source
    (``val-core/mental_arith/acc/mean@1``, ``val-aux/mental_arith/exact/mean@1``)."""
    correct = float(final_integer(solution_str) == ground_truth)
    return {"score": correct, "acc": correct, "exact": float(is_bare_number(solution_str, ground_truth))}
