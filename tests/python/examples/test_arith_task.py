"""The demo's arithmetic task (examples/arith): deterministic, disjoint splits, exact scoring, and its
committed tokenizer encodes the task's chat prompts as HF `tokenizers` does."""

from __future__ import annotations

import json
import os
import sys

import pytest

import verl

ARITH_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "arith")
sys.path.insert(0, ARITH_DIR)
import arith_task  # noqa: E402


def test_splits_are_deterministic_and_disjoint():
    train, test = arith_task.generate_splits(300, 50, seed=3)
    assert (train, test) == arith_task.generate_splits(300, 50, seed=3)
    assert arith_task.generate_splits(300, 50, seed=4) != (train, test)
    assert len(set(train)) == 300 and len(set(test)) == 50 and not set(train) & set(test)
    for a, op, b in train + test:
        assert 0 <= a <= 99 and 0 <= b <= 99 and op in "+-"


def test_too_many_problems_is_an_error():
    with pytest.raises(ValueError, match="distinct problems"):
        arith_task.generate_splits(10, 10, max_operand=1)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_rows_follow_verl_schema_and_scoring(tmp_path):
    paths = arith_task.write_dataset(str(tmp_path), n_train=20, n_test=5, seed=1)
    rows = read_jsonl(paths["train"])
    assert len(rows) == 20
    row = rows[0]
    assert row["data_source"] == "arith" and row["prompt"][0]["role"] == "user"
    a, op, b = arith_task.generate_splits(20, 5, seed=1)[0][0]
    assert row["prompt"][0]["content"] == f"Compute {a}{op}{b}."
    assert row["reward_model"]["ground_truth"] == str(a + b if op == "+" else a - b)
    sft = read_jsonl(paths["sft"])
    assert sft[0]["response"] == row["reward_model"]["ground_truth"]
    assert arith_task.compute_score("arith", " -12\n", "-12") == 1.0
    assert arith_task.compute_score("arith", "-12.", "-12") == 0.0
    assert arith_task.compute_score("arith", "12", "-12") == 0.0


def test_committed_tokenizer_matches_hf():
    tokenizers = pytest.importorskip("tokenizers")
    tok = verl.load_tokenizer(os.path.join(ARITH_DIR, "tokenizer"))
    ref = tokenizers.Tokenizer.from_file(os.path.join(ARITH_DIR, "tokenizer", "tokenizer.json"))
    assert tok.eos_token_id == ref.token_to_id("<|im_end|>")
    assert tok.pad_token_id == ref.token_to_id("<|endoftext|>")
    train, _ = arith_task.generate_splits(200, 0, seed=0)
    for a, op, b in train:
        text = tok.apply_chat_template([{"role": "user", "content": arith_task.problem_text(a, op, b)}],
                                       add_generation_prompt=True, tokenize=False)
        assert text.endswith("<|im_start|>assistant\n")
        ids = tok.encode(text)
        assert ids == ref.encode(text).ids
        answer = str(arith_task.answer(a, op, b))
        assert tok.decode(tok.encode(answer)) == answer
        assert len(tok.encode(answer)) == len(answer)  # digits (and the sign) are single tokens
