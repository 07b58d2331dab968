"""The demo's task: two-operand integer arithmetic, generated deterministically from a seed.

Each problem is a prompt such as ``"Compute 37+48."`` whose answer is the integer result (``"85"``).
Rows follow verl's RL dataset schema (``prompt`` chat messages, ``data_source``,
``reward_model.ground_truth``, ``extra_info``) so the same files drive verl and verl-cpp; the SFT
split holds ``prompt``/``response`` pairs for the warm start. Train and test are disjoint: a
problem is identified by its operands and operator, and the test split never repeats a train one.
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


def sft_row(a: int, op: str, b: int) -> dict[str, Any]:
    return {"prompt": [{"role": "user", "content": problem_text(a, op, b)}], "response": str(answer(a, op, b))}


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None) -> float:
    """1.0 when the response is exactly the integer answer (surrounding whitespace ignored), else 0.0."""
    return 1.0 if solution_str.strip() == str(ground_truth).strip() else 0.0


def write_jsonl(path: str, rows: list[dict[str, Any]]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def write_dataset(out_dir: str, n_train: int = 4000, n_test: int = 500, seed: int = 0) -> dict[str, str]:
    """Writes train.jsonl, test.jsonl (RL schema) and sft.jsonl (the train problems with answers)."""
    os.makedirs(out_dir, exist_ok=True)
    train, test = generate_splits(n_train, n_test, seed)
    paths = {name: os.path.join(out_dir, f"{name}.jsonl") for name in ("train", "test", "sft")}
    write_jsonl(paths["train"], [rl_row(*p, "train", i) for i, p in enumerate(train)])
    write_jsonl(paths["test"], [rl_row(*p, "test", i) for i, p in enumerate(test)])
    write_jsonl(paths["sft"], [sft_row(*p) for p in train])
    return paths


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--n-train", type=int, default=4000)
    parser.add_argument("--n-test", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name, path in write_dataset(args.out_dir, args.n_train, args.n_test, args.seed).items():
        print(f"{name}: {path}")
