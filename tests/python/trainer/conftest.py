"""Fixtures for the trainer tests (see trainer_helpers.py): a tiny random Qwen2 checkpoint with the arith demo's
real tokenizer and a toy prompt dataset in verl's schema."""

from __future__ import annotations

import pytest

from trainer_helpers import TOKENIZER_DIR, write_rows, write_tiny_model, write_untied_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> str:
    return write_tiny_model(str(tmp_path_factory.mktemp("tiny_qwen2")))


@pytest.fixture(scope="session")
def untied_model_dir(tmp_path_factory) -> str:
    """The tiny model with an untied std-0.5 head, which LoRA on the decoder can steer (trainer_helpers)."""
    return write_untied_model(str(tmp_path_factory.mktemp("untied")))


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("toy_data")
    return {"train": write_rows(str(d / "train.jsonl"), 16), "test": write_rows(str(d / "test.jsonl"), 6, offset=100)}


@pytest.fixture(scope="module")
def tokenizer():
    """The arith demo's tokenizer (verl-cpp's)."""
    import verl

    return verl.load_tokenizer(TOKENIZER_DIR)
