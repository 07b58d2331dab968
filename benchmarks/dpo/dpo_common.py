"""What both sides of bench_dpo.py share: the checkpoint and tokenizer, the preference data, and the expected token
ids of every pair (as TRL's DPOTrainer tokenizes a plain-text row).

Imported by the parent and the verl-cpp side (verl-cpp's venv) and by the TRL side (the TRL venv, which must not
import verl-cpp's ``verl``): only the standard library at module level.
"""

from __future__ import annotations

import os
import random
import string
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "grpo_step"))

# The rollout benchmark's tiny (~3.7M) and small (~100M) Qwen2 models, and grpo_step's byte-level BPE writer.
from grpo_common import MODELS, hf_config, summarize, write_tokenizer  # noqa: E402

__all__ = ["MODELS", "summarize", "forward_flops", "write_checkpoint", "special_ids", "make_pair_texts",
           "expected_pair_ids", "common_prefix_length"]


def special_ids(vocab_size: int) -> dict[str, int]:
    """Pad and EOS as the model's last two ids. Unlike the GRPO benchmark (whose EOS lies outside the vocabulary so
    that generation never stops), DPO trains on the EOS that ends every completion, so it must be a real id."""
    return {"pad": vocab_size - 2, "eos": vocab_size - 1}


def write_checkpoint(directory: str, model: str, seed: int = 0) -> None:
    """The random-init Hugging Face checkpoint (transformers' initialisation under ``seed``) and the tokenizer
    (grpo_common's byte-level BPE with one id less, so that pad and EOS are the model's last two ids), written once
    and read by both sides."""
    import torch
    import transformers

    vocab = MODELS[model]["vocab_size"]
    config = hf_config(model)
    config.max_position_embeddings = 2048
    config.pad_token_id = special_ids(vocab)["pad"]
    config.eos_token_id = special_ids(vocab)["eos"]
    torch.manual_seed(seed)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(directory)
    write_tokenizer(directory, vocab - 1)  # its pad = vocab - 2, its EOS = vocab - 1


def make_pair_texts(count: int, prompt_tokens: int, completion_tokens: tuple[int, int], seed: int) -> list[dict]:
    """``count`` plain-text preference rows ``{"prompt", "chosen", "rejected"}``: a prompt of random letters (about
    ``prompt_tokens`` tokens, +-25 %), a chosen completion of random lowercase letters and a rejected one of random
    uppercase letters, each of an independent length in ``completion_tokens`` (about; the tokenizer merges letter
    pairs). The completions start with a space so that the byte-level pre-tokenizer splits them from the prompt: the
    tokenized prompt is a prefix of the tokenized prompt + completion, so TRL keeps the whole prompt. The preference
    (lowercase over uppercase) is learnable, so the loss falls from log 2."""
    rng = random.Random(seed)
    lo, hi = completion_tokens

    def letters(alphabet: str, tokens: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(2 * tokens))

    rows = []
    for _ in range(count):
        n = rng.randint(prompt_tokens - prompt_tokens // 4, prompt_tokens + prompt_tokens // 4)
        rows.append({"prompt": letters(string.ascii_letters, n),
                     "chosen": " " + letters(string.ascii_lowercase, rng.randint(lo, hi)),
                     "rejected": " " + letters(string.ascii_uppercase, rng.randint(lo, hi))})
    return rows


def common_prefix_length(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def expected_pair_ids(tokenizer, row: dict, eos_token: str) -> dict[str, list[int]]:
    """A plain-text row's ``prompt_ids`` / ``chosen_ids`` / ``rejected_ids`` as TRL 1.16's DPOTrainer makes them:
    EOS appended to each completion's text, prompt and prompt + completion tokenized, the completion starting where
    the tokenized prompt stops being a prefix. ``tokenizer`` is a Hugging Face tokenizer (callable)."""
    prompt = tokenizer(row["prompt"])["input_ids"]
    full = {side: tokenizer(row["prompt"] + row[side] + eos_token)["input_ids"] for side in ("chosen", "rejected")}
    cut = min(common_prefix_length(prompt, full["chosen"]), common_prefix_length(prompt, full["rejected"]))
    return {"prompt_ids": prompt[:cut], "chosen_ids": full["chosen"][cut:], "rejected_ids": full["rejected"][cut:]}


def forward_flops(model: str, seqlens: list[int], completion_lens: list[int]) -> float:
    """The matmul FLOPs a DPO forward needs: the decoder layers on every token (2 per weight, the attention scores
    2 * s^2 * head_dim * heads per layer as verl's formula counts them) and the LM head on the completion tokens only
    (the log-probs of the other positions are never used). verl's FLOP formula (grpo_common.verl_flops) also counts
    the embedding lookup and the head on every token, which overstates this work (an MFU above 100 % for a step that
    skips them); a step's useful work is 3x this for the policy (forward + backward) plus 1x for the reference."""
    spec = MODELS[model]
    hidden, layers, heads = spec["hidden_size"], spec["num_hidden_layers"], spec["num_attention_heads"]
    head_dim = spec.get("head_dim", hidden // heads)
    q, kv = heads * head_dim, spec.get("num_key_value_heads", heads) * head_dim
    layer_weights = layers * (3 * hidden * spec["intermediate_size"] + hidden * (2 * q + 2 * kv))
    return (2 * layer_weights * sum(seqlens) + 2 * sum(s * s for s in seqlens) * head_dim * heads * layers
            + 2 * spec["vocab_size"] * hidden * sum(completion_lens))
