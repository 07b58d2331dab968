"""``verl.data.get_dataloader`` (issue 16): batches of verl-schema rows from JSONL / Parquet (the ground truth moved
from ``extra_info`` into ``reward_model`` when it sits there), or verl's tokenized batch dicts with a tokenizer;
shuffling reproducible and resumable; missing files and Hub names are DataErrors saying what to do."""

from __future__ import annotations

import json
import os

import pytest

import verl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOKENIZER_DIR = os.path.join(ROOT, "examples", "arith", "tokenizer")


def row(i: int, in_extra_info: bool = False) -> dict:
    r = {"data_source": "toy", "prompt": [{"role": "user", "content": f"Compute {i}+1."}],
         "extra_info": {"index": i}}
    if in_extra_info:
        r["extra_info"]["ground_truth"] = str(i + 1)
    else:
        r["reward_model"] = {"style": "rule", "ground_truth": str(i + 1)}
    return r


@pytest.fixture
def jsonl(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(row(i, in_extra_info=i % 2 == 1)) + "\n" for i in range(10)))
    return str(path)


def test_rows_in_order(jsonl):
    loader = verl.data.get_dataloader(jsonl, batch_size=4, shuffle=False)
    batches = list(loader)
    assert [len(b) for b in batches] == [4, 4, 2] and len(loader) == 3
    rows = [r for b in batches for r in b]
    assert [r["reward_model"]["ground_truth"] for r in rows] == [str(i + 1) for i in range(10)]
    assert rows[1]["extra_info"] == {"index": 1, "ground_truth": "2"}  # the row keeps its extra_info
    assert rows[3]["prompt"] == [{"role": "user", "content": "Compute 3+1."}]


def test_parquet_and_shuffle_are_reproducible(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = str(tmp_path / "train.parquet")
    pq.write_table(pa.Table.from_pylist([row(i) for i in range(10)]), path)

    def order(seed):
        loader = verl.data.get_dataloader(path, batch_size=5, seed=seed, drop_last=True)
        return [r["extra_info"]["index"] for b in loader for r in b]

    assert sorted(order(1)) == list(range(10))
    assert order(1) == order(1) != order(2)


def test_resumes_mid_epoch(jsonl):
    loader = verl.data.get_dataloader(jsonl, batch_size=3, seed=0)
    it = iter(loader)
    first = next(it)
    state = loader.state_dict()
    rest = [[r["extra_info"]["index"] for r in b] for b in it]
    resumed = verl.data.get_dataloader(jsonl, batch_size=3, seed=0)
    resumed.load_state_dict(state)
    assert [[r["extra_info"]["index"] for r in b] for b in resumed] == rest
    assert len(first) == 3


def test_with_a_tokenizer_batches_are_verls_dicts(jsonl):
    tok = verl.load_tokenizer(TOKENIZER_DIR)
    loader = verl.data.get_dataloader(jsonl, batch_size=4, tokenizer=tok, shuffle=False,
                                      config={"max_prompt_length": 32})
    batch = next(iter(loader))
    assert batch["input_ids"].shape == (4, 32) and batch["attention_mask"].shape == (4, 32)
    assert [rm["ground_truth"] for rm in batch["reward_model"]] == ["1", "2", "3", "4"]
    text = tok.decode(batch["input_ids"][0][batch["attention_mask"][0].bool()])
    assert text == tok.apply_chat_template(row(0)["prompt"], tokenize=False, add_generation_prompt=True)


def test_bad_input(tmp_path, jsonl):
    with pytest.raises(verl.DataError, match="Hugging Face dataset name; verl-cpp does not download"):
        verl.data.get_dataloader("openai/gsm8k")
    with pytest.raises(verl.DataError, match="data file not found"):
        verl.data.get_dataloader(str(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": [{"role": "user", "content": "x"}]}) + "\n")
    with pytest.raises(verl.DataError, match=r"bad\.jsonl:1: row has no 'reward_model.ground_truth'"):
        verl.data.get_dataloader(str(bad))
    with pytest.raises(verl.ConfigError, match="batch_size"):
        verl.data.get_dataloader(jsonl, batch_size=0)
    with pytest.raises(verl.DataError, match="path or a non-empty list"):
        verl.data.get_dataloader([])
