"""A tiny transformers Qwen2ForSequenceClassification checkpoint on disk, shared by the reward-model tests
(tests/python is on sys.path through its conftest.py)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(ROOT, "examples", "arith", "tokenizer")
VOCAB = 304


def write_rm_checkpoint(path: str, seed: int = 0) -> str:
    """A transformers Qwen2ForSequenceClassification (num_labels=1) with random weights and the arith tokenizer."""
    transformers = pytest.importorskip("transformers")
    with open(os.path.join(TOKENIZER_DIR, "tokenizer.json"), encoding="utf-8") as f:
        added = {t["content"]: t["id"] for t in json.load(f)["added_tokens"]}
    config = transformers.Qwen2Config(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                      rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False, num_labels=1,
                                      pad_token_id=added["<|endoftext|>"], eos_token_id=added["<|im_end|>"])
    torch.manual_seed(seed)
    model = transformers.Qwen2ForSequenceClassification(config).to(torch.float32).eval()
    with torch.no_grad():  # a score head with weight comparable to the backbone's, so scores differ visibly
        model.score.weight.normal_(0.0, 1.0)
    model.save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER_DIR, name), os.path.join(path, name))
    return path
