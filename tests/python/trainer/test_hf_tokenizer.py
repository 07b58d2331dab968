"""verl.utils.hf_tokenizer / hf_processor (issue 16 item 6) on a local checkpoint: verl-cpp's tokenizer with verl's
pad-token correction; no processor for a text-only model."""

from __future__ import annotations

import json
import os
import shutil

import pytest

import verl
from verl.utils import hf_processor, hf_tokenizer


def test_hf_tokenizer_loads_the_checkpoints_tokenizer(tiny_model_dir):
    tok = hf_tokenizer(tiny_model_dir)
    ref = verl.load_tokenizer(tiny_model_dir)
    assert isinstance(tok, verl.Tokenizer) and tok.encode("Compute 2+3.") == ref.encode("Compute 2+3.")
    assert tok.pad_token_id == ref.pad_token_id  # it has one: nothing corrected
    with pytest.raises(verl.CheckpointError, match="does not download"):
        hf_tokenizer("someone/not-cached-model")


def test_missing_pad_token_becomes_eos(tiny_model_dir, tmp_path):
    path = tmp_path / "nopad"
    shutil.copytree(tiny_model_dir, path)
    with open(path / "tokenizer_config.json") as f:
        config = json.load(f)
    config.pop("pad_token", None)
    with open(path / "tokenizer_config.json", "w") as f:
        json.dump(config, f)
    assert verl.load_tokenizer(str(path)).pad_token_id is None
    tok = hf_tokenizer(str(path))
    assert tok.pad_token == tok.eos_token and tok.pad_token_id == tok.eos_token_id is not None
    assert hf_tokenizer(str(path), correct_pad_token=False).pad_token_id is None
    with pytest.raises(verl.InvalidArgumentError, match="not a token"):
        tok.pad_token = "<no such token>"


def test_hf_processor_is_none_for_text_only_models(tiny_model_dir, tmp_path):
    assert hf_processor(tiny_model_dir) is None
    vision = tmp_path / "vision"
    shutil.copytree(tiny_model_dir, vision)
    (vision / "preprocessor_config.json").write_text("{}")
    with pytest.raises(verl.InvalidArgumentError, match="text only"):
        hf_processor(str(vision))
    with pytest.raises(TypeError, match="unexpected keyword"):
        hf_processor(tiny_model_dir, size=3)
    assert os.path.isdir(tiny_model_dir)
