"""Reward test fixtures: the Qwen3 tokenizer and rollout batches laid out as verl's trainer builds them
(prompts left-padded, responses right-padded, one attention mask over both)."""

from __future__ import annotations

import os

import pytest
import torch

import verl

# tests/python/<area>/<sub>/conftest.py -> the repository root, whose tests/fixtures/ holds the Qwen3 tokenizer
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
QWEN3_DIR = os.path.join(REPO_ROOT, "tests", "fixtures", "qwen3-tokenizer")


@pytest.fixture(scope="session")
def qwen3_dir():
    return QWEN3_DIR


@pytest.fixture(scope="session")
def tokenizer():
    return verl.load_tokenizer(QWEN3_DIR)


def make_batch(tokenizer, prompts, responses, ground_truths, data_sources=None, prompt_length=24,
               response_length=16, extra_infos=None):
    """A rollout DataProto. ``responses`` are strings (encoded, eos appended) or lists of token ids (as is)."""
    pad = tokenizer.pad_token_id
    n = len(prompts)
    prompt_ids = torch.full((n, prompt_length), pad, dtype=torch.long)
    response_ids = torch.full((n, response_length), pad, dtype=torch.long)
    mask = torch.zeros((n, prompt_length + response_length), dtype=torch.long)
    for i, (prompt, response) in enumerate(zip(prompts, responses)):
        p = tokenizer.encode(prompt, add_special_tokens=False)
        r = response if isinstance(response, list) else tokenizer.encode(response) + [tokenizer.eos_token_id]
        assert len(p) <= prompt_length and len(r) <= response_length, (len(p), len(r))
        prompt_ids[i, prompt_length - len(p):] = torch.tensor(p)
        response_ids[i, :len(r)] = torch.tensor(r)
        mask[i, prompt_length - len(p):prompt_length] = 1
        mask[i, prompt_length:prompt_length + len(r)] = 1
    non_tensors = {
        "reward_model": [{"ground_truth": g, "style": "rule"} for g in ground_truths],
        "data_source": data_sources or ["openai/gsm8k"] * n,
    }
    if extra_infos is not None:
        non_tensors["extra_info"] = extra_infos
    return verl.DataProto.from_dict(
        tensors={"prompts": prompt_ids, "responses": response_ids, "attention_mask": mask,
                 "input_ids": torch.cat([prompt_ids, response_ids], dim=1)},
        non_tensors=non_tensors)


@pytest.fixture
def batch_maker(tokenizer):
    def build(*args, **kwargs):
        return make_batch(tokenizer, *args, **kwargs)

    return build
