"""The demo's task: two-operand integer arithmetic, generated deterministically from a seed.

Each problem is a prompt such as ``"Compute 37+48."`` whose answer is the integer result (``"85"``).
Rows follow verl's RL dataset schema (``prompt`` chat messages, ``data_source``,
``reward_model.ground_truth``, ``extra_info``) so the same files drive verl and verl-cpp; the SFT
split holds ``prompt``/``response`` pairs for the warm start. Train and test are disjoint: a
problem is identified by its operands and operator, and the test split never repeats a train one.

The SFT demonstrations can come from an imperfect teacher: ``teacher_period_rate`` of them end the answer
with a period ("85."), which the exact-answer score rejects, the way distilled data carry a teacher's
formatting habits. ``sft_copies`` demonstrations per problem are drawn independently (deterministically
from the seed), so imitation learns the habit as a probability rather than memorising it per problem.
`make demo-arith` uses this to show what RL with a verifiable reward adds on top of imitation.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any, Iterator

DATA_SOURCE = "arith"
OPERATORS = ("+", "-")


def problem_text(a: int, op: str, b: int) -> str:
    return f"Compute {a}{op}{b}."


def answer(a: int, op: str, b: int) -> int:
    return a + b if op == "+" else a - b


def _problems(rng: random.Random, max_operand: int) -> Iterator[tuple[int, str, int]]:
    while True:
        yield rng.randint(0, max_operand), rng.choice(OPERATORS), rng.randint(0, max_operand)


def generate_splits(n_train: int, n_test: int, seed: int = 0, max_operand: int = 99) -> tuple[list, list]:
    """Returns (train, test) lists of (a, op, b); no problem appears twice or in both splits."""
    total = (max_operand + 1) ** 2 * len(OPERATORS)
    if n_train + n_test > total:
        raise ValueError(f"n_train + n_test = {n_train + n_test} exceeds the {total} distinct problems "
                         f"with operands up to {max_operand}")
    rng = random.Random(seed)
    seen: set[tuple[int, str, int]] = set()
    rows: list[tuple[int, str, int]] = []
    for p in _problems(rng, max_operand):
        if len(rows) == n_train + n_test:
            break
        if p not in seen:
            seen.add(p)
            rows.append(p)
    return rows[:n_train], rows[n_train:]


def rl_row(a: int, op: str, b: int, split: str, index: int) -> dict[str, Any]:
    return {
        "data_source": DATA_SOURCE,
        "prompt": [{"role": "user", "content": problem_text(a, op, b)}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": str(answer(a, op, b))},
        "extra_info": {"split": split, "index": index},
    }


def teacher_answer(a: int, op: str, b: int, period_rate: float = 0.0, seed: int = 0, copy: int = 0) -> str:
    """The teacher's demonstration for (a, op, b): the true answer, followed by "." for a ``period_rate`` share of
    the demonstrations (a pure function of the problem, ``seed`` and ``copy``)."""
    if not 0.0 <= period_rate <= 1.0:
        raise ValueError(f"period_rate must be in [0, 1], got {period_rate}")
    text = str(answer(a, op, b))
    if period_rate > 0 and random.Random(f"teacher:{seed}:{copy}:{a}{op}{b}").random() < period_rate:
        text += "."
    return text


def sft_row(a: int, op: str, b: int, period_rate: float = 0.0, seed: int = 0, copy: int = 0) -> dict[str, Any]:
    return {"prompt": [{"role": "user", "content": problem_text(a, op, b)}],
            "response": teacher_answer(a, op, b, period_rate, seed, copy)}


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None) -> float:
    """1.0 when the response is exactly the integer answer (surrounding whitespace ignored), else 0.0."""
    return 1.0 if solution_str.strip() == str(ground_truth).strip() else 0.0


def write_jsonl(path: str, rows: list[dict[str, Any]]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def write_dataset(out_dir: str, n_train: int = 4000, n_test: int = 500, seed: int = 0, max_operand: int = 99,
                  teacher_period_rate: float = 0.0, sft_copies: int = 1) -> dict[str, str]:
    """Writes train.jsonl, test.jsonl (RL schema, true answers) and sft.jsonl (``sft_copies`` teacher
    demonstrations of each train problem)."""
    os.makedirs(out_dir, exist_ok=True)
    train, test = generate_splits(n_train, n_test, seed, max_operand)
    paths = {name: os.path.join(out_dir, f"{name}.jsonl") for name in ("train", "test", "sft")}
    write_jsonl(paths["train"], [rl_row(*p, "train", i) for i, p in enumerate(train)])
    write_jsonl(paths["test"], [rl_row(*p, "test", i) for i, p in enumerate(test)])
    write_jsonl(paths["sft"], [sft_row(*p, teacher_period_rate, seed, copy) for copy in range(sft_copies) for p in train])
    return paths


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--n-train", type=int, default=4000)
    parser.add_argument("--n-test", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-operand", type=int, default=99)
    parser.add_argument("--teacher-period-rate", type=float, default=0.0)
    parser.add_argument("--sft-copies", type=int, default=1)
    args = parser.parse_args()
    for name, path in write_dataset(args.out_dir, args.n_train, args.n_test, args.seed, args.max_operand,
                                    args.teacher_period_rate, args.sft_copies).items():
        print(f"{name}: {path}")
