"""The example's task: write a one-line Python function, judged by hidden function-call test cases.

Each problem is a prompt such as ``"Write a Python function g(n) that returns n times 7."``; a right answer is
the program ``"def g(n):\n    return n*7"``. A problem is an operation (plus, minus, times, modulo, floor
division, larger of, smaller of), a constant k (2..19), a function name and an argument name. Its test cases
are verl's function-call format (``{"fn_name", "inputs", "outputs"}``, one JSON argument per input, the JSON
result as output), which verl's code scorers run on the local sandbox or a Sandbox Fusion server alike: five
inputs per problem, two below k and three above it, so that a program right only on one side of k passes a
fraction of them.

Splits: the held-out problems use (operation, k) pairs that no training problem uses ("times 13" is never
seen in training with any names), so held-out accuracy measures composing an operation with a constant, not
recalling a training problem.

The SFT demonstrations come from an imperfect teacher: a ``defect_rate`` share of them has one of three bugs
the tests reject -- an off-by-one constant (``n*8``), a wrong operator (``n+7``), or a missing ``return``
(the function returns None). ``sft_copies`` demonstrations per training problem are drawn independently
(a pure function of the problem, the seed and the copy), so imitation learns the bugs as a probability.
Rows follow verl's RL dataset schema (``prompt`` chat messages, ``data_source``, ``reward_model.ground_truth``
-- here the test cases as JSON text, as verl's code data sets store them -- and ``extra_info``).
"""

from __future__ import annotations

import json
import os
import random
from typing import Any, NamedTuple

DATA_SOURCE = "code_synth"
K_RANGE = range(2, 20)
FN_NAMES = ("f", "g", "h", "solve")
ARG_NAMES = ("x", "n", "y", "v")
DEFECTS = ("off_by_one", "wrong_operator", "missing_return")
N_TESTS = 5
TEST_INPUT_MIN, TEST_INPUT_MAX = -9, 60

# operation -> (the prompt's wording, the program's expression); {a} is the argument, {k} the constant
OPERATIONS: dict[str, tuple[str, str]] = {
    "plus": ("returns {a} plus {k}", "{a}+{k}"),
    "minus": ("returns {a} minus {k}", "{a}-{k}"),
    "times": ("returns {a} times {k}", "{a}*{k}"),
    "modulo": ("returns {a} modulo {k}", "{a}%{k}"),
    "div": ("returns {a} divided by {k}, rounded down", "{a}//{k}"),
    "max": ("returns the larger of {a} and {k}", "max({a},{k})"),
    "min": ("returns the smaller of {a} and {k}", "min({a},{k})"),
}
# the teacher's wrong operator for each operation: the nearest confusion, so the bug is plausible
WRONG_OPERATOR = {"plus": "minus", "minus": "plus", "times": "plus", "modulo": "div", "div": "modulo",
                  "max": "min", "min": "max"}


class Problem(NamedTuple):
    op: str
    k: int
    fn: str
    arg: str


def problem_text(p: Problem) -> str:
    return f"Write a Python function {p.fn}({p.arg}) that {OPERATIONS[p.op][0].format(a=p.arg, k=p.k)}."


def program(p: Problem, op: str | None = None, k: int | None = None, with_return: bool = True) -> str:
    """The program for ``p`` (the right one by default; another operation or constant, or no ``return``, give
    the teacher's bugs)."""
    expr = OPERATIONS[op or p.op][1].format(a=p.arg, k=p.k if k is None else k)
    return f"def {p.fn}({p.arg}):\n    {'return ' if with_return else ''}{expr}"


def reference(p: Problem, x: int) -> int:
    """The right answer for input ``x``, computed without the program text (the tests' oracle)."""
    return {"plus": x + p.k, "minus": x - p.k, "times": x * p.k, "modulo": x % p.k, "div": x // p.k,
            "max": max(x, p.k), "min": min(x, p.k)}[p.op]


def defect_variants(p: Problem) -> dict[str, list[Problem]]:
    """The problems whose right programs are the teacher's buggy programs for ``p`` (a missing return has none:
    it returns None)."""
    return {"off_by_one": [p._replace(k=p.k - 1), p._replace(k=p.k + 1)],
            "wrong_operator": [p._replace(op=WRONG_OPERATOR[p.op])]}


def case_inputs(p: Problem) -> list[int]:
    """Five distinct inputs, two below k and three above it, on which every buggy program of the teacher fails
    at least once (a pure function of the problem). Random inputs alone would not do: ``x%2`` and ``x%3`` agree
    on 0, 1, 6, 7, 12, ..., ``x//18`` and ``x//19`` on most inputs below 60."""
    rng = random.Random(f"tests:{p.op}:{p.k}:{p.fn}:{p.arg}")
    wrong = [q for variants in defect_variants(p).values() for q in variants]
    while True:
        xs = rng.sample(range(TEST_INPUT_MIN, p.k), 2) + rng.sample(range(p.k + 1, TEST_INPUT_MAX + 1), 3)
        if all(any(reference(q, x) != reference(p, x) for x in xs) for q in wrong):
            return xs


def hidden_tests(p: Problem) -> dict[str, Any]:
    """verl's function-call test cases: ``inputs`` are the argument as JSON, ``outputs`` the result as JSON."""
    xs = case_inputs(p)
    return {"fn_name": p.fn, "inputs": [json.dumps(x) for x in xs], "outputs": [json.dumps(reference(p, x))
                                                                             for x in xs]}


def all_problems() -> list[Problem]:
    return [Problem(op, k, fn, arg) for op in OPERATIONS for k in K_RANGE for fn in FN_NAMES for arg in ARG_NAMES]


def generate_splits(n_train: int, n_test: int, seed: int = 0, held_out_share: float = 0.2
                    ) -> tuple[list[Problem], list[Problem]]:
    """(train, test) problems: a ``held_out_share`` of the (operation, k) pairs is held out, the test problems
    come only from those pairs, the training problems only from the others; no problem appears twice."""
    if not 0.0 < held_out_share < 1.0:
        raise ValueError(f"held_out_share must be in (0, 1), got {held_out_share}")
    rng = random.Random(seed)
    pairs = [(op, k) for op in OPERATIONS for k in K_RANGE]
    rng.shuffle(pairs)
    held_out = set(pairs[:round(len(pairs) * held_out_share)])
    problems = all_problems()
    rng.shuffle(problems)
    train = [p for p in problems if (p.op, p.k) not in held_out]
    test = [p for p in problems if (p.op, p.k) in held_out]
    if n_train > len(train) or n_test > len(test):
        raise ValueError(f"asked for {n_train} training and {n_test} held-out problems; the split has "
                         f"{len(train)} and {len(test)} distinct problems (held_out_share={held_out_share})")
    return train[:n_train], test[:n_test]


def teacher_program(p: Problem, defect_rate: float = 0.0, seed: int = 0, copy: int = 0) -> tuple[str, str | None]:
    """The teacher's demonstration for ``p`` and its defect (None when right): with probability ``defect_rate``
    one of ``DEFECTS``, uniformly (a pure function of the problem, ``seed`` and ``copy``)."""
    if not 0.0 <= defect_rate <= 1.0:
        raise ValueError(f"defect_rate must be in [0, 1], got {defect_rate}")
    rng = random.Random(f"teacher:{seed}:{copy}:{p.op}:{p.k}:{p.fn}:{p.arg}")
    if rng.random() >= defect_rate:
        return program(p), None
    defect = rng.choice(DEFECTS)
    if defect == "off_by_one":
        return program(p, k=p.k + rng.choice((-1, 1))), defect
    if defect == "wrong_operator":
        return program(p, op=WRONG_OPERATOR[p.op]), defect
    return program(p, with_return=False), defect


def classify(p: Problem, text: str) -> str:
    """What a program for ``p`` is: "right" (the reference program, up to surrounding whitespace), one of
    ``DEFECTS`` (a program the teacher's bug would give), or "other". For reports; the reward runs tests."""
    text = text.strip()
    if text == program(p):
        return "right"
    if text in (program(p, k=p.k - 1), program(p, k=p.k + 1)):
        return "off_by_one"
    if text == program(p, op=WRONG_OPERATOR[p.op]):
        return "wrong_operator"
    if text == program(p, with_return=False):
        return "missing_return"
    return "other"


def rl_row(p: Problem, split: str, index: int) -> dict[str, Any]:
    return {
        "data_source": DATA_SOURCE,
        "prompt": [{"role": "user", "content": problem_text(p)}],
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": json.dumps(hidden_tests(p))},
        "extra_info": {"split": split, "index": index, "op": p.op, "k": p.k},
    }


def sft_row(p: Problem, defect_rate: float = 0.0, seed: int = 0, copy: int = 0) -> dict[str, Any]:
    return {"prompt": [{"role": "user", "content": problem_text(p)}],
            "response": teacher_program(p, defect_rate, seed, copy)[0]}


def write_jsonl(path: str, rows: list[dict[str, Any]]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def write_dataset(out_dir: str, n_train: int, n_test: int, seed: int = 0, defect_rate: float = 0.0,
                  sft_copies: int = 1) -> dict[str, str]:
    """Writes train.jsonl, test.jsonl (RL schema, the test cases as ground truth) and sft.jsonl (``sft_copies``
    teacher demonstrations of each training problem)."""
    os.makedirs(out_dir, exist_ok=True)
    train, test = generate_splits(n_train, n_test, seed)
    paths = {name: os.path.join(out_dir, f"{name}.jsonl") for name in ("train", "test", "sft")}
    write_jsonl(paths["train"], [rl_row(p, "train", i) for i, p in enumerate(train)])
    write_jsonl(paths["test"], [rl_row(p, "test", i) for i, p in enumerate(test)])
    write_jsonl(paths["sft"], [sft_row(p, defect_rate, seed, copy) for copy in range(sft_copies) for p in train])
    return paths
