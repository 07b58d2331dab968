"""Dataset fixtures: the Qwen3 tokenizer (ours, and transformers' as the independent reference)."""

from __future__ import annotations

import json
import os

import pytest

import verl

# tests/python/<area>/<sub>/conftest.py -> the repository root, whose tests/fixtures/ holds the Qwen3 tokenizer
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
QWEN3_DIR = os.path.join(REPO_ROOT, "tests", "fixtures", "qwen3-tokenizer")

ROWS = [
    {"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": "What is 2+2?"}],
     "reward_model": {"style": "rule", "ground_truth": "4"}, "extra_info": {"index": 7, "split": "train"},
     "ability": "math"},
    {"data_source": "openai/gsm8k",
     "prompt": [{"role": "system", "content": "Be brief."},
                {"role": "user",
                 "content": "A long question about many apples, pears and oranges in a basket: how many?"}],
     "reward_model": {"style": "rule", "ground_truth": "12"}, "extra_info": {"index": 8}, "ability": "math"},
    {"data_source": "lighteval/MATH", "prompt": [{"role": "user", "content": "Simplify 6/8."}],
     "reward_model": {"style": "rule", "ground_truth": "\\frac{3}{4}"}, "ability": "math"},
]


@pytest.fixture(scope="session")
def tokenizer():
    return verl.load_tokenizer(QWEN3_DIR)


@pytest.fixture(scope="session")
def hf_tokenizer():
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(QWEN3_DIR)


def write_jsonl(path, rows, blank_lines_before=0):
    with open(path, "w") as f:
        f.write("\n" * blank_lines_before)
        for row in rows:
            f.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return str(path)


@pytest.fixture
def data_file(tmp_path):
    return write_jsonl(tmp_path / "train.jsonl", ROWS)
