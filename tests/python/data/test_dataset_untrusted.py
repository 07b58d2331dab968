"""Datasets on hostile files and configs (issue 21, the fuzzing findings): every bad input ends in a
``verl.DataError`` naming ``file:line`` or a ``verl.ConfigError`` naming the key, never a bare
``UnicodeDecodeError`` (bug 5), a numpy ``TypeError`` (bug 8), a ``RecursionError`` (bug 9) or a
``UnicodeEncodeError`` at tokenization (bug 14). The reproducers are the fuzzer's inputs, cut down."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import verl
from verl.utils.dataset import RLHFDataset, SFTDataset
from verl.utils.dataset.reader import MAX_JSON_DEPTH, load_json, read_rows

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
QWEN3_DIR = os.path.join(REPO_ROOT, "tests", "fixtures", "qwen3-tokenizer")

ROW = {"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": "What is 2+2?"}],
       "reward_model": {"style": "rule", "ground_truth": "4"}}
SFT_ROW = {"prompt": "What is 2+2?", "response": "4"}


@pytest.fixture(scope="module")
def tokenizer():
    return verl.load_tokenizer(QWEN3_DIR)


def write(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def good_line(row=ROW) -> bytes:
    return json.dumps(row).encode() + b"\n"


def nested(depth: int) -> bytes:
    """A row whose ground truth is a list nested `depth` deep (the row object adds two more levels)."""
    return (b'{"prompt": [{"role": "user", "content": "hi"}], "reward_model": {"ground_truth": '
            + b"[" * depth + b"]" * depth + b"}}\n")


# -- bug 5: bytes that are not UTF-8 ------------------------------------------------------------------
def test_non_utf8_jsonl_is_a_data_error_naming_file_and_line(tmp_path, tokenizer):
    # the fuzzer's input: a valid file with one byte flipped to 0xff inside a message
    path = write(tmp_path / "train.jsonl", good_line() + good_line().replace(b"2+2", b"2\xff2"))
    column = good_line().index(b"+") + 1
    with pytest.raises(verl.DataError, match=rf"train\.jsonl:2: not valid UTF-8 \(byte 0xff at column {column}\)"):
        RLHFDataset(path, tokenizer)
    with pytest.raises(verl.DataError, match=r"sft\.jsonl:2: not valid UTF-8 \(byte 0xc3 at column 13\)"):
        SFTDataset(write(tmp_path / "sft.jsonl", good_line(SFT_ROW) + b'{"prompt": "\xc3(", "response": "4"}\n'),
                   tokenizer)
    with pytest.raises(verl.DataError, match=r"train\.jsonl:2: not valid UTF-8") as info:
        read_rows(tmp_path / "train.jsonl")
    assert isinstance(info.value.__cause__, UnicodeDecodeError)  # chained, for whoever wants the details


def test_non_utf8_json_array_file_names_the_line(tmp_path, tokenizer):
    path = write(tmp_path / "train.json", b"[\n" + good_line().rstrip() + b",\n" + b'{"a": "\xe2\x28\xa1"}\n]')
    with pytest.raises(verl.DataError, match=r"train\.json:3: not valid UTF-8 \(byte 0xe2 at column 8\)"):
        RLHFDataset(path, tokenizer)


# -- bug 9: nesting --------------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_row_is_a_data_error_not_recursion_error(tmp_path, tokenizer, depth):
    path = write(tmp_path / "deep.jsonl", good_line() + b"\n" + nested(depth))
    with pytest.raises(verl.DataError, match=rf"deep\.jsonl:3: JSON nests deeper than {MAX_JSON_DEPTH} levels"):
        RLHFDataset(path, tokenizer)
    with pytest.raises(verl.DataError, match=r"deep\.jsonl:3: JSON nests deeper than 128 levels"):
        SFTDataset(path, tokenizer)


def test_depth_limit_is_the_cpp_readers(tmp_path, tokenizer):
    # 128 levels in all are accepted (verl::untrusted::kMaxJsonDepth), 129 refused, as libverl's reader does;
    # brackets inside strings do not count.
    assert MAX_JSON_DEPTH == 128
    ok = write(tmp_path / "ok.jsonl", nested(MAX_JSON_DEPTH - 2))
    ds = RLHFDataset(ok, tokenizer)
    assert len(ds) == 1
    truth = ds.rows[0]["reward_model"]["ground_truth"]
    for _ in range(MAX_JSON_DEPTH - 3):
        truth = truth[0]
    assert truth == []
    first_bracket = nested(1).index(b"[]")
    column = first_bracket + 1 + MAX_JSON_DEPTH - 2  # the 129th level: the row and reward_model are two
    with pytest.raises(verl.DataError, match=rf"too\.jsonl:1: JSON nests deeper than 128 levels \(column {column}\)"):
        RLHFDataset(write(tmp_path / "too.jsonl", nested(MAX_JSON_DEPTH - 1)), tokenizer)
    brackets_in_text = dict(ROW, prompt=[{"role": "user", "content": "[" * 5000 + "{" * 5000}])
    assert RLHFDataset(write(tmp_path / "text.jsonl", good_line(brackets_in_text)), tokenizer).rows == [
        brackets_in_text]


def test_deep_json_array_file_names_the_line(tmp_path):
    path = write(tmp_path / "deep.json", b"[\n" + good_line().rstrip() + b",\n" + b"[" * 300 + b"]" * 300 + b"\n]")
    with pytest.raises(verl.DataError, match=r"deep\.json:3: JSON nests deeper than 128 levels \(column 128\)"):
        read_rows(path)


# -- bug 14: lone surrogates ----------------------------------------------------------------------
def test_lone_surrogate_escape_is_a_data_error_at_read_time(tmp_path, tokenizer):
    # the fuzzer's input: "\ud800" in a message; json.loads accepts it, tokenization then failed with
    # UnicodeEncodeError. It is refused while reading, naming the line and the field.
    row = good_line().replace(b"2+2", b"2\\ud8002")
    path = write(tmp_path / "train.jsonl", good_line() + row)
    with pytest.raises(verl.DataError, match=r"train\.jsonl:2: prompt\[0\]\.content holds a lone surrogate "
                                             r"\(\\ud800\), which is not valid Unicode text"):
        RLHFDataset(path, tokenizer)
    sft = write(tmp_path / "sft.jsonl", b'{"prompt": "hi", "response": "a\\udfffb"}\n')
    with pytest.raises(verl.DataError, match=r"sft\.jsonl:1: response holds a lone surrogate \(\\udfff\)"):
        SFTDataset(sft, tokenizer)
    key = write(tmp_path / "key.jsonl", good_line()[:-2] + b', "extra_info": {"\\udc00x": 1}}\n')
    with pytest.raises(verl.DataError, match=r"key\.jsonl:1: a key of extra_info holds a lone surrogate"):
        RLHFDataset(key, tokenizer)


def test_surrogate_pairs_are_text(tmp_path, tokenizer):
    # json.dumps escapes non-BMP characters as surrogate pairs by default: those are valid text
    row = dict(ROW, prompt=[{"role": "user", "content": "hug \U0001f917 2+2?"}])
    data = json.dumps(row).encode()
    assert b"\\ud83e\\udd17" in data
    ds = RLHFDataset(write(tmp_path / "emoji.jsonl", data + b"\n"), tokenizer, {"return_full_prompt": True})
    assert "hug \U0001f917 2+2?" in ds[0]["full_prompts"]


def test_render_prompt_refuses_a_surrogate_that_did_not_come_from_a_file(tmp_path, tokenizer):
    # chat template kwargs from a dict config are not read from a file; the rendered text is checked too
    template = "{{ messages[0]['content'] }}{{ suffix }}"
    path = write(tmp_path / "train.jsonl", good_line())
    ds = RLHFDataset(path, tokenizer, {"apply_chat_template_kwargs": {"chat_template": template,
                                                                      "suffix": "\ud800"}})
    with pytest.raises(verl.DataError, match=r"train\.jsonl:1: the rendered prompt is not valid Unicode text"):
        ds[0]


# -- line splitting and other JSON values ------------------------------------------------------------
def test_jsonl_lines_split_on_newline_only(tmp_path, tokenizer):
    # U+2028 / U+0085 / form feed are allowed raw inside JSON strings; str.splitlines split rows at them
    content = "a\u2028b\u0085c\x0cd"
    row = dict(ROW, prompt=[{"role": "user", "content": content}])
    data = json.dumps(row, ensure_ascii=False).encode() + b"\r\n" + good_line()
    ds = RLHFDataset(write(tmp_path / "seps.jsonl", data), tokenizer)
    assert len(ds) == 2 and ds.rows[0]["prompt"][0]["content"] == content
    assert [ds.origin(0), ds.origin(1)] == [f"{tmp_path}/seps.jsonl:1", f"{tmp_path}/seps.jsonl:2"]


def test_huge_integer_literal_is_a_data_error(tmp_path, tokenizer):
    path = write(tmp_path / "big.jsonl", good_line()[:-2] + b', "extra_info": {"index": ' + b"9" * 5000 + b"}}\n")
    with pytest.raises(verl.DataError, match=r"big\.jsonl:1: invalid JSON: Exceeds the limit"):
        RLHFDataset(path, tokenizer)


def test_load_json_names_the_origin():
    with pytest.raises(verl.DataError, match=r"x\.jsonl:7: invalid JSON: Expecting value \(column 7\)"):
        load_json('{"a": }', "x.jsonl:7")
    assert load_json('{"a": [1, {"b": "\\ud83e\\udd17"}]}', "x") == {"a": [1, {"b": "\U0001f917"}]}


# -- bug 8: config values of the wrong type -----------------------------------------------------------
@pytest.mark.parametrize("config, key", [
    ({"shuffle": True, "seed": "x"}, "data.seed"),  # the fuzzer's input: a numpy TypeError before
    ({"shuffle": True, "seed": 1.5}, "data.seed"),
    ({"shuffle": True, "seed": True}, "data.seed"),
    ({"shuffle": "yes"}, "data.shuffle"),
    ({"max_prompt_length": "512"}, "data.max_prompt_length"),
    ({"max_prompt_length": 1.5}, "data.max_prompt_length"),
    ({"prompt_key": ["prompt"]}, "data.prompt_key"),
    ({"prompt_key": 3}, "data.prompt_key"),
    ({"reward_fn_key": {}}, "data.reward_fn_key"),
    ({"truncation": ["left"]}, "data.truncation"),
    ({"filter_overlong_prompts": "false"}, "data.filter_overlong_prompts"),  # bool("false") is True
    ({"return_raw_chat": 1}, "data.return_raw_chat"),
    ({"return_full_prompt": "no"}, "data.return_full_prompt"),
    ({"apply_chat_template_kwargs": "enable_thinking=False"}, "data.apply_chat_template_kwargs"),
])
def test_rl_config_values_of_the_wrong_type_are_config_type_errors(tmp_path, tokenizer, config, key):
    path = write(tmp_path / "train.jsonl", good_line() * 3)
    with pytest.raises(verl.ConfigTypeError, match=rf"^{key} must be "):
        RLHFDataset(path, tokenizer, config, max_samples=2)


@pytest.mark.parametrize("config, match", [
    ({"max_prompt_length": 0}, r"data\.max_prompt_length must be at least 1, got 0"),
    ({"truncation": "both"}, r"data\.truncation must be one of \['error', 'left', 'right', 'middle'\], got 'both'"),
    ({"shuffle": True, "seed": -1}, r"data\.seed must be an integer in \[0, 2\*\*64\), got -1"),  # numpy's range
    ({"shuffle": True, "seed": 2**64}, r"data\.seed must be an integer in \[-9223372036854775808, 2\*\*64\), got "
                                       r"18446744073709551616"),  # torch's range
])
def test_rl_config_values_out_of_range_are_config_errors(tmp_path, tokenizer, config, match):
    path = write(tmp_path / "train.jsonl", good_line() * 3)
    with pytest.raises(verl.ConfigError, match=match):
        RLHFDataset(path, tokenizer, config, max_samples=2)


def test_valid_config_values_still_work(tmp_path, tokenizer):
    path = write(tmp_path / "train.jsonl", b"".join(good_line(dict(ROW, extra_info={"index": i})) for i in range(5)))
    a = RLHFDataset(path, tokenizer, {"shuffle": np.bool_(True), "seed": np.int64(3), "max_prompt_length": 64},
                    max_samples=2)
    b = RLHFDataset(path, tokenizer, verl.load_config(overrides=["data.seed=3", "data.max_prompt_length=64"]).data,
                    max_samples=np.int32(2))
    assert [r["extra_info"]["index"] for r in a.rows] == [r["extra_info"]["index"] for r in b.rows]
    # a negative seed is a valid torch seed; numpy's choice refuses it only when max_samples needs it
    assert len(RLHFDataset(path, tokenizer, {"shuffle": True, "seed": -1})) == 5
    with pytest.raises(verl.ConfigTypeError, match=r"^max_samples must be an integer, got str '2'"):
        RLHFDataset(path, tokenizer, max_samples="2")


@pytest.mark.parametrize("config, key", [
    ({"max_length": "1024"}, "data.max_length"),
    ({"messages_key": 7}, "data.messages_key"),
    ({"response_key": ["response"]}, "data.response_key"),
    ({"shuffle": True, "seed": "x"}, "data.seed"),
    ({"shuffle": "true"}, "data.shuffle"),
    ({"truncation": 1}, "data.truncation"),
    ({"apply_chat_template_kwargs": [("enable_thinking", False)]}, "data.apply_chat_template_kwargs"),
])
def test_sft_config_values_of_the_wrong_type_are_config_type_errors(tmp_path, tokenizer, config, key):
    path = write(tmp_path / "sft.jsonl", good_line(SFT_ROW) * 3)
    with pytest.raises(verl.ConfigTypeError, match=rf"^{key} must be "):
        SFTDataset(path, tokenizer, config, max_samples=2)
