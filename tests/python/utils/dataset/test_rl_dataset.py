"""RLHFDataset: verl's schema, chat template, left padding, truncation modes, overlong filtering, errors that
name file:line, Parquet, collation into a DataProto."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import verl
from verl.utils.dataset import RLHFDataset, collate_fn, collate_to_dataproto
from verl.utils.dataset.rl_dataset import compute_position_id_with_mask

from .conftest import ROWS, write_jsonl


def hf_prompt_ids(hf_tokenizer, messages):
    ids = hf_tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def test_row_matches_transformers_chat_template_left_padded(data_file, tokenizer, hf_tokenizer):
    ds = RLHFDataset(data_file, tokenizer, {"max_prompt_length": 40, "return_raw_chat": True,
                                            "return_full_prompt": True})
    assert len(ds) == 3
    row = ds[0]
    expected = hf_prompt_ids(hf_tokenizer, ROWS[0]["prompt"])
    n = len(expected)
    assert row["raw_prompt_ids"] == expected
    assert row["input_ids"].tolist() == [tokenizer.pad_token_id] * (40 - n) + expected
    assert row["attention_mask"].tolist() == [0] * (40 - n) + [1] * n
    assert row["position_ids"].tolist() == [0] * (40 - n) + list(range(n))
    assert row["input_ids"].dtype == torch.long and row["input_ids"].shape == (40,)
    assert row["raw_prompt"] == ROWS[0]["prompt"] and "prompt" not in row
    assert row["full_prompts"] == "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
    assert row["index"] == 7 and row["extra_info"] == {"index": 7, "split": "train"}
    assert row["reward_model"]["ground_truth"] == "4" and row["ability"] == "math"
    assert ds[2]["index"] == 0 and ds[2]["extra_info"] == {}  # no extra_info in the row


def test_position_ids_formula():
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 0]])
    assert compute_position_id_with_mask(mask).tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 3]]


@pytest.mark.parametrize("limit", [10, 9])
def test_truncation_modes(data_file, tokenizer, hf_tokenizer, limit):
    full = hf_prompt_ids(hf_tokenizer, ROWS[1]["prompt"])
    assert len(full) > limit
    expected = {
        "left": full[-limit:],
        "right": full[:limit],
        "middle": full[: limit // 2] + full[-(limit - limit // 2):],
    }
    for mode, ids in expected.items():
        ds = RLHFDataset(data_file, tokenizer, {"max_prompt_length": limit, "truncation": mode})
        row = ds[1]
        assert row["raw_prompt_ids"] == ids, mode
        assert row["input_ids"].tolist() == ids and row["attention_mask"].tolist() == [1] * limit, mode
        assert row["position_ids"].tolist() == list(range(limit)), mode


def test_truncation_error_names_file_and_line(data_file, tokenizer, hf_tokenizer):
    n = len(hf_prompt_ids(hf_tokenizer, ROWS[1]["prompt"]))
    ds = RLHFDataset(data_file, tokenizer, {"max_prompt_length": 20})  # truncation defaults to error
    assert ds[0]["attention_mask"].sum().item() == len(hf_prompt_ids(hf_tokenizer, ROWS[0]["prompt"]))
    with pytest.raises(verl.DataError, match=rf"train\.jsonl:2: prompt length {n} is longer than "
                                             r"data\.max_prompt_length=20"):
        ds[1]
    with pytest.raises(verl.ConfigError, match="truncation"):
        RLHFDataset(data_file, tokenizer, {"truncation": "both"})


def test_filter_overlong_prompts(data_file, tokenizer, hf_tokenizer):
    limit = 20
    lengths = [len(hf_prompt_ids(hf_tokenizer, r["prompt"])) for r in ROWS]
    assert lengths[1] > limit and lengths[0] <= limit and lengths[2] <= limit
    ds = RLHFDataset(data_file, tokenizer, {"max_prompt_length": limit, "filter_overlong_prompts": True})
    assert len(ds) == 2
    assert [ds[i]["reward_model"]["ground_truth"] for i in range(2)] == ["4", "\\frac{3}{4}"]
    assert ds.origin(1).endswith("train.jsonl:3")


def test_verl_config_node_is_accepted(data_file, tokenizer):
    cfg = verl.load_config(overrides=["data.max_prompt_length=32", "data.truncation=right"])
    ds = RLHFDataset([data_file], tokenizer, cfg.data)
    assert ds.max_prompt_length == 32 and ds.truncation == "right" and ds.return_raw_chat  # verl's default: true
    assert ds[1]["input_ids"].shape == (32,)


@pytest.mark.parametrize(
    ("bad_row", "message"),
    [
        ({"data_source": "s", "reward_model": {"ground_truth": "1"}}, "no 'prompt'"),
        ({"data_source": "s", "prompt": [{"role": "user", "content": "x"}]}, "reward_model.ground_truth"),
        ({"data_source": "s", "prompt": [{"role": "user", "content": "x"}], "reward_model": {"style": "rule"}},
         "reward_model.ground_truth"),
        ({"data_source": "s", "prompt": "just text", "reward_model": {"ground_truth": "1"}}, "list of"),
        ({"data_source": "s", "prompt": [{"content": "x"}], "reward_model": {"ground_truth": "1"}}, "list of"),
        ('{"prompt": [', "invalid JSON"),
        ("[1, 2]", "must be an object"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path, tokenizer, bad_row, message):
    # two blank lines first and two good rows: the bad row is on line 5 of the file
    path = write_jsonl(tmp_path / "bad.jsonl", ROWS[:2] + [bad_row], blank_lines_before=2)
    with pytest.raises(verl.DataError, match=rf"bad\.jsonl:5: .*{message}"):
        RLHFDataset(path, tokenizer, {"max_prompt_length": 64})


def test_files_and_formats(tmp_path, tokenizer):
    a = write_jsonl(tmp_path / "a.jsonl", ROWS[:2])
    b = tmp_path / "b.json"
    b.write_text(json.dumps(ROWS[2:]))  # a JSON array
    ds = RLHFDataset([a, str(b)], tokenizer, {"max_prompt_length": 64})
    assert len(ds) == 3 and ds.origin(2).endswith("b.json:1")
    with pytest.raises(verl.DataError, match="not found"):
        RLHFDataset(str(tmp_path / "missing.jsonl"), tokenizer, {})
    (tmp_path / "c.csv").write_text("x\n")
    with pytest.raises(verl.DataError, match="Unsupported file format"):
        RLHFDataset(str(tmp_path / "c.csv"), tokenizer, {})


def test_max_samples(data_file, tokenizer):
    assert len(RLHFDataset(data_file, tokenizer, {"max_prompt_length": 64}, max_samples=2)) == 2
    shuffled = RLHFDataset(data_file, tokenizer, {"max_prompt_length": 64, "shuffle": True, "seed": 3}, max_samples=2)
    expected = np.random.default_rng(3).choice(3, size=2, replace=False).tolist()  # verl's selection
    assert [shuffled.origin(i) for i in range(2)] == [f"{data_file}:{i + 1}" for i in expected]


def test_parquet(tmp_path, tokenizer, data_file):
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        (tmp_path / "x.parquet").write_bytes(b"PAR1")
        with pytest.raises(verl.DataError, match="pyarrow"):
            RLHFDataset(str(tmp_path / "x.parquet"), tokenizer, {})
        pytest.skip("pyarrow is not installed: only the clear error was checked")
    path = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS[:2]), path)
    from_parquet = RLHFDataset(str(path), tokenizer, {"max_prompt_length": 64})
    from_jsonl = RLHFDataset(data_file, tokenizer, {"max_prompt_length": 64})
    assert len(from_parquet) == 2
    for i in range(2):
        assert from_parquet[i]["input_ids"].tolist() == from_jsonl[i]["input_ids"].tolist()
        assert from_parquet[i]["reward_model"]["ground_truth"] == ROWS[i]["reward_model"]["ground_truth"]


def test_collate_to_dataproto(data_file, tokenizer):
    ds = RLHFDataset(data_file, tokenizer, {"max_prompt_length": 64})
    rows = [ds[i] for i in range(3)]
    batch = collate_to_dataproto(rows)
    assert isinstance(batch, verl.DataProto) and len(batch) == 3
    assert set(batch.batch.keys()) == {"input_ids", "attention_mask", "position_ids"}
    assert batch.batch["input_ids"].shape == (3, 64)
    assert torch.equal(batch.batch["input_ids"][1], rows[1]["input_ids"])
    nt = batch.non_tensor_batch
    assert {"data_source", "reward_model", "extra_info", "raw_prompt_ids", "index", "ability"} <= set(nt)
    assert all(v.dtype == object and v.shape == (3,) for v in nt.values())
    assert nt["reward_model"][2] == {"style": "rule", "ground_truth": "\\frac{3}{4}"}
    assert nt["raw_prompt_ids"][0] == rows[0]["raw_prompt_ids"]  # a list stays one cell
    assert nt["index"].tolist() == [7, 8, 0]
    assert set(collate_fn(rows)) == set(batch.batch.keys()) | set(nt)


def test_create_rl_dataset_from_config(tmp_path, data_file, tokenizer):
    from verl.utils.dataset import create_rl_dataset

    cfg = verl.load_config(overrides=["data.max_prompt_length=64", "data.train_max_samples=2"])
    assert len(create_rl_dataset(data_file, cfg.data, tokenizer, is_train=True)) == 2
    assert len(create_rl_dataset(data_file, cfg.data, tokenizer, is_train=False)) == 3  # val_max_samples -1

    custom = tmp_path / "my_dataset.py"
    custom.write_text(
        "from verl.utils.dataset import RLHFDataset\n\n"
        "class Upper(RLHFDataset):\n"
        "    def __getitem__(self, i):\n"
        "        row = super().__getitem__(i)\n"
        "        row['data_source'] = row['data_source'].upper()\n"
        "        return row\n")
    cfg = verl.load_config(overrides=["data.max_prompt_length=64", f"data.custom_cls.path={custom}",
                                      "data.custom_cls.name=Upper"])
    ds = create_rl_dataset(data_file, cfg.data, tokenizer)
    assert type(ds).__name__ == "Upper" and ds[0]["data_source"] == "OPENAI/GSM8K"
