"""verl.load_tokenizer's Python surface: argument types, the exported names, threads."""

from __future__ import annotations

import concurrent.futures

import numpy as np
import pytest
import torch

import verl


def test_exported_from_the_package(qwen3_dir):
    assert verl.load_tokenizer is verl.tokenizer.load_tokenizer
    tok = verl.load_tokenizer(qwen3_dir)
    assert isinstance(tok, verl.Tokenizer)
    assert "eos_token='<|im_end|>'" in repr(tok)


def test_path_forms(qwen3_dir):
    import pathlib

    by_dir = verl.load_tokenizer(pathlib.Path(qwen3_dir))
    by_file = verl.load_tokenizer(f"{qwen3_dir}/tokenizer.json")
    assert by_dir.encode("Hello, world!") == by_file.encode("Hello, world!") == [9707, 11, 1879, 0]
    assert by_file.eos_token_id == 151645


def test_decode_accepts_lists_arrays_tensors_and_ints(qwen3_dir):
    tok = verl.load_tokenizer(qwen3_dir)
    ids = [9707, 11, 1879, 0]
    assert tok.decode(ids) == "Hello, world!"
    assert tok.decode(np.array(ids, dtype=np.int64)) == "Hello, world!"
    assert tok.decode(torch.tensor(ids)) == "Hello, world!"
    assert tok.decode(9707) == "Hello"
    assert tok.batch_decode(torch.tensor([[9707, 0], [1879, 0]])) == ["Hello!", " world!"]
    assert tok.batch_decode([[151644, 9707, 151645]], skip_special_tokens=True) == ["Hello"]


def test_token_conversions(qwen3_dir):
    tok = verl.load_tokenizer(qwen3_dir)
    assert tok.convert_tokens_to_ids("<|im_end|>") == 151645
    assert tok.convert_tokens_to_ids(["Hello", "nope-nope"]) == [9707, None]
    assert tok.convert_ids_to_tokens(9707) == "Hello"
    assert tok.convert_ids_to_tokens(torch.tensor([9707, 151643])) == ["Hello", "<|endoftext|>"]


def test_concurrent_encodes_from_python_threads(qwen3_dir, corpus):
    # encode releases the GIL; the tokenizer is shared and must give every thread the same ids.
    tok = verl.load_tokenizer(qwen3_dir)
    expected = [tok.encode(text) for text in corpus[:600]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(tok.encode, corpus[:600]))
        batches = list(pool.map(tok.batch_encode, [corpus[i:i + 100] for i in range(0, 600, 100)]))
    assert got == expected
    assert [ids for batch in batches for ids in batch] == expected


def test_encode_rejects_what_is_not_utf8_text(qwen3_dir):
    tok = verl.load_tokenizer(qwen3_dir)
    # A lone surrogate ("\ud800" from a JSON escape, a surrogate-escaped byte from sys.argv) has no UTF-8 form: a
    # typed error naming the call and the item (pybind's own conversion raised a bare UnicodeEncodeError).
    with pytest.raises(verl.InvalidArgumentError, match=r"Tokenizer.encode: text: 'a\\ud800b' is not valid text"):
        tok.encode("a\ud800b")
    with pytest.raises(verl.InvalidArgumentError, match=r"Tokenizer.encode_batch: texts\[1\]: '\\udfff'"):
        tok.batch_encode(["ok", "\udfff"])
    with pytest.raises(TypeError, match="expected str, got int"):
        tok.encode(42)
    # UTF-8 bytes are taken as text; anything else is refused by the C++ check.
    assert tok.encode("héllo".encode()) == tok.encode("héllo")
    with pytest.raises(verl.InvalidArgumentError, match="not valid UTF-8"):
        tok.encode(b"abc\xff")
