"""Issue 21's fuzzing findings on tokenizer.json (bugs 6, 9, 11, 12) through the Python API, each from the
input that crashed or raised the wrong class. Inputs that once crashed the interpreter run in a child process
(tests/python/isolated.py), so a regression fails one test instead of killing pytest. The C++ side is covered
in depth by tests/cpp/tokenizer/test_tokenizer_untrusted.cpp."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from isolated import expect_verl_error, run_isolated  # noqa: E402

import verl  # noqa: E402
from verl import _C  # noqa: E402

# A byte-level BPE with a TemplateProcessing post-processor (vocab a b c ab; "<s>" added as id 4).
TINY = {
    "version": "1.0",
    "added_tokens": [{"id": 4, "content": "<s>", "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True}],
    "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    "post_processor": {"type": "TemplateProcessing",
                       "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [4], "tokens": ["<s>"]}}},
    "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
              "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3}, "merges": [["a", "b"]]},
}


def tiny(**fields) -> dict:
    doc = json.loads(json.dumps(TINY))
    doc.update(fields)
    return doc


def load_in_child(field: str, raw: str, error: str, *fragments: str):
    """In a child process, loads TINY with `field` replaced by the raw JSON text that the Python expression
    `raw` evaluates to (built there: megabytes do not fit in a command line), expecting verl.errors.<error>
    with every fragment in its message."""
    template = json.dumps(tiny(**{field: "@@"}))
    return expect_verl_error(f"from verl import _C; _C.Tokenizer.from_json({template!r}.replace('\"@@\"', {raw}))",
                             error, *fragments)


def test_tiny_fixture_loads():
    tok = _C.Tokenizer.from_json(json.dumps(TINY))
    assert tok.encode("abc") == [4, 3, 2]
    assert tok.encode("abc", False) == [3, 2]


@pytest.mark.parametrize("piece, fragment", [
    ({"SpecialToken": {"id": 5, "type_id": 0}}, "post_processor.single[0].SpecialToken.id must be a string"),
    ({"SpecialToken": {"id": ["<s>"], "type_id": 0}}, "post_processor.single[0].SpecialToken.id must be a string"),
    ({"SpecialToken": "<s>"}, "post_processor.single[0].SpecialToken must be an object"),
    (7, "post_processor.single[0] must be"),
])
def test_bug6_template_special_token_of_the_wrong_type(piece, fragment):
    doc = tiny()
    doc["post_processor"]["single"][0] = piece
    with pytest.raises(verl.CheckpointError, match="^<tokenizer.json>: ") as info:
        _C.Tokenizer.from_json(json.dumps(doc))
    assert fragment in str(info.value)


@pytest.mark.parametrize("ids", [["4"], [4.5], [-1], [2 ** 40], [None], "4", {"a": 4}])
def test_bug6_template_ids_that_are_not_ids(ids):
    doc = tiny()
    doc["post_processor"]["special_tokens"]["<s>"]["ids"] = ids
    with pytest.raises(verl.CheckpointError, match=r"^<tokenizer.json>: post_processor.special_tokens\['<s>'\].ids"):
        _C.Tokenizer.from_json(json.dumps(doc))


def test_bug9_post_processor_of_60000_nested_sequences():
    # It overflowed the C++ stack (copied and parsed recursively).
    load_in_child("post_processor", """'{"type": "Sequence", "processors": [' * 60000 + 'null' + ']}' * 60000""",
                  "CheckpointError", "<tokenizer.json>: malformed JSON: nesting deeper than 128 levels")


def test_bug9_deep_merges_entry_is_not_dumped():
    doc = tiny()
    doc["model"]["merges"] = "@@"
    template = json.dumps(doc)
    expect_verl_error(f"from verl import _C; _C.Tokenizer.from_json({template!r}.replace('\"@@\"', "
                      "'[' + '[' * 100000 + ']' * 100000 + ']'))", "CheckpointError", "nesting deeper than 128 levels")
    deep = 1
    for _ in range(100):
        deep = [deep]
    doc["model"]["merges"] = [deep]
    with pytest.raises(verl.CheckpointError, match=r"model.merges\[0\] must be .* got an array of 1 items$"):
        _C.Tokenizer.from_json(json.dumps(doc))


def test_bug9_sequence_nesting_is_bounded():
    # 40 levels never overflowed anything (in process); the limit keeps recursion far from the stack's end.
    leaf = '{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}'
    nested = '{"type": "Sequence", "pretokenizers": [' * 40 + leaf + "]}" * 40
    with pytest.raises(verl.CheckpointError, match=r"^<tokenizer.json>: pre_tokenizer.pretokenizers\[0\]"
                                                   r".* nests Sequences 17 levels deep \(at most 16"):
        _C.Tokenizer.from_json(json.dumps(tiny(pre_tokenizer="@@")).replace('"@@"', nested))


@pytest.mark.parametrize("literal", ["1e400", "-1e400"])
def test_bug11_number_out_of_range(literal):
    # It escaped as nlohmann's out_of_range (a RuntimeError without the file name), not a crash: in process.
    with pytest.raises(verl.CheckpointError, match="^<tokenizer.json>: malformed JSON: .*number overflow"):
        _C.Tokenizer.from_json(json.dumps(tiny(version="@@")).replace('"@@"', literal))
    with pytest.raises(verl.CheckpointError, match="<tokenizer_config.json>"):
        _C.Tokenizer.from_json(json.dumps(TINY), '{"model_max_length": ' + literal + "}")


def test_bug11_through_a_file(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps(tiny(version="@@")).replace('"@@"', "1e400"))
    with pytest.raises(verl.CheckpointError, match=f"^{re.escape(str(tmp_path / 'tokenizer.json'))}: malformed JSON"):
        verl.load_tokenizer(tmp_path)


def test_bug12_sparse_vocab_id():
    # One id of 2^28-1 sized a 2 GB table. HF tokenizers loads this file (its vocab is a hash map) and
    # gives these ids; the child's memory is capped by the harness.
    doc = tiny(post_processor=None, pre_tokenizer=None, decoder=None)
    doc["model"]["vocab"] = {"a": 0, "b": 2 ** 28 - 1, "ab": 5}
    doc["added_tokens"][0]["id"] = 0
    outcome = run_isolated(f"""
        from verl import _C
        tok = _C.Tokenizer.from_json({json.dumps(doc)!r})
        assert tok.encode("ab<s>b") == [5, 3, 2 ** 28 - 1], tok.encode("ab<s>b")
        assert tok.vocab_size() == 4 and tok.id_to_token(2 ** 28 - 1) == "b" and tok.token_to_id("<s>") == 3
        # This program's own peak (VmHWM): getrusage's ru_maxrss keeps the peak across fork + exec, so it counted
        # the pytest process the child was forked from (over 1.5 GB late in a full run).
        status = open("/proc/self/status").read().split("VmHWM:")[1]
        peak_mb = int(status.split()[0]) / 1024
        assert peak_mb < 1500, peak_mb
    """)
    assert outcome.returncode == 0 and outcome.exception == "none", outcome.describe()
    doc["model"]["vocab"]["b"] = 2 ** 28
    with pytest.raises(verl.CheckpointError, match=r"model.vocab\['b'\] must be an id in \[0, 268435455\]"):
        _C.Tokenizer.from_json(json.dumps(doc))


def test_bug12_matches_hf_tokenizers_on_sparse_ids():
    tokenizers = pytest.importorskip("tokenizers")
    doc = tiny(post_processor=None, pre_tokenizer=None, decoder=None)
    doc["model"]["vocab"] = {"a": 0, "b": 2 ** 28 - 1, "ab": 5, "c": 77}
    doc["added_tokens"][0]["id"] = 0
    ours = _C.Tokenizer.from_json(json.dumps(doc))
    hf = tokenizers.Tokenizer.from_str(json.dumps(doc))
    for text in ["ab<s>b", "cab", "bbb<s>", "a<s>c"]:
        assert ours.encode(text) == hf.encode(text).ids, text
    assert ours.vocab_size() == hf.get_vocab_size()
    ids = [0, 2 ** 28 - 1, 77, 5, 3, 1000]
    assert ours.decode(ids) == hf.decode(ids)


def test_decode_of_ids_outside_int32_skips_them(qwen3_dir):
    # pybind's int32 conversion raised "incompatible function arguments" for these; they name no token.
    tok = verl.load_tokenizer(qwen3_dir)
    assert tok.decode([-1, 2 ** 31, -(2 ** 31) - 1, 2 ** 70, 9707, -(2 ** 80)]) == "Hello"
    assert tok.batch_decode([[2 ** 63, 9707], [10 ** 30]]) == ["Hello", ""]
    assert tok.convert_ids_to_tokens(2 ** 40) is None
    assert tok._cpp.id_to_token(-(2 ** 70)) is None
    assert tok._cpp.decode(iter([9707, 11])) == "Hello,"
    with pytest.raises(TypeError):
        tok._cpp.decode(["9707"])
    with pytest.raises(TypeError):
        tok._cpp.decode([1.5])


def test_encode_of_arbitrary_bytes_is_typed(qwen3_dir):
    tok = verl.load_tokenizer(qwen3_dir)
    for bad in [b"\xff", b"a\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"ab\xe4\xbd", b"\x80"]:
        with pytest.raises(verl.InvalidArgumentError, match="not valid UTF-8"):
            tok.encode(bad)
