"""What both sides of bench_grpo_step.py share: models, tokenizer, prompts, the toy reward, and the arithmetic
of the report (FLOPs, MFU, medians, phase split, power-law fit).

Imported by the verl-cpp side (verl-cpp's venv), the TRL side (the TRL venv, which must not import verl-cpp's
``verl``) and tests/python/benchmarks/test_grpo_step_bench.py (no TRL): only the standard library at module level.
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import string
import sys
from collections.abc import Iterable, Mapping, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "rollout"))
sys.path.insert(0, os.path.join(HERE, ".."))

from bench_env import summarize  # noqa: E402  (medians with min-max, as every benchmark reports them)
from bench_rollout import MODELS, hf_config  # noqa: E402  (the rollout benchmark's tiny and small models)

__all__ = ["MODELS", "hf_config", "PAD_ID_FROM_END", "special_ids", "write_tokenizer", "make_prompt_texts",
           "toy_reward", "target_token_limit", "verl_flops", "mfu", "summarize", "phase_split", "fit_power_law",
           "write_checkpoint", "no_worse"]

EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|pad|>"
PAD_ID_FROM_END = 1  # the pad token is the model's last id (vocab_size - 1)


def special_ids(vocab_size: int) -> dict[str, int]:
    """Pad: the last id the model has (TRL and verl-cpp look up padded positions in the embedding). EOS: one id
    past the model's vocabulary, an id a random-init model can never sample, so no response stops early and
    both sides generate exactly max_tokens per sample."""
    return {"pad": vocab_size - PAD_ID_FROM_END, "eos": vocab_size}


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table of byte-level BPE."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def tokenizer_json(vocab_size: int) -> dict:
    """A byte-level BPE tokenizer.json with exactly ``vocab_size`` ids below the EOS: the 256 byte tokens, then
    merges of two byte tokens (printable ASCII pairs first) up to id vocab_size - 2, the pad token at
    vocab_size - 1 and EOS at vocab_size (see special_ids). Deterministic; HF ``tokenizers`` (TRL's side) and
    verl-cpp's tokenizer give the same ids for it."""
    ids = special_ids(vocab_size)
    alphabet = [c for _, c in sorted(_bytes_to_unicode().items())]
    vocab = {c: i for i, c in enumerate(alphabet)}
    printable = alphabet[33:127]  # bytes '!' .. '~'
    rest = alphabet[:33] + alphabet[127:]
    pairs = [(a, b) for a in printable for b in printable]  # ids 256 .. 256 + 94^2 - 1: printable ASCII pairs
    pairs += [(a, b) for a in alphabet for b in alphabet if a in rest or b in rest]
    merges = []
    for a, b in pairs[:ids["pad"] - len(vocab)]:
        vocab[a + b] = len(vocab)
        merges.append([a, b])
    added = [{"id": ids["pad"], "content": PAD_TOKEN}, {"id": ids["eos"], "content": EOS_TOKEN}]
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [dict(a, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
                         for a in added],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def write_tokenizer(directory: str, vocab_size: int) -> None:
    """tokenizer.json + tokenizer_config.json (pad and EOS, no chat template: prompts are plain text)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab_size), f, ensure_ascii=False)
    with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": EOS_TOKEN, "pad_token": PAD_TOKEN,
                   "bos_token": None, "padding_side": "left", "add_bos_token": False,
                   "model_max_length": 4096, "clean_up_tokenization_spaces": False}, f, indent=1)


def write_checkpoint(directory: str, model: str, seed: int = 0) -> None:
    """The random-init Hugging Face checkpoint (transformers' initialisation, ``seed``) and the tokenizer, written
    once and read by both sides."""
    import torch
    import transformers

    config = hf_config(model)
    config.max_position_embeddings = 2048  # room for the scaling run's 1024-token responses after the prompt
    torch.manual_seed(seed)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(directory)
    write_tokenizer(directory, MODELS[model]["vocab_size"])


def make_prompt_texts(count: int, approx_tokens: int, seed: int) -> list[str]:
    """``count`` plain-text prompts of random ASCII letters, about ``approx_tokens`` tokens each (the tokenizer
    merges letter pairs; lengths vary by +-25 %). Both sides tokenize the same strings with the same tokenizer,
    so they see the same prompt ids."""
    rng = random.Random(seed)
    letters = string.ascii_letters
    texts = []
    for _ in range(count):
        n = rng.randint(approx_tokens - approx_tokens // 4, approx_tokens + approx_tokens // 4)
        texts.append("".join(rng.choice(letters) for _ in range(2 * n)))
    return texts


def target_token_limit(vocab_size: int) -> int:
    """The toy task's target tokens are the ids below this (one eighth of the vocabulary)."""
    return vocab_size // 8


def toy_reward(token_ids: Sequence[int], vocab_size: int) -> float:
    """The learnable toy task: the fraction of response tokens whose id is below vocab_size / 8.

    A random-init model samples near-uniformly, so it starts at ~0.125 with a spread between the 8 samples of
    a prompt (a binomial over the response length), which gives GRPO's group-normalised advantages a signal
    from the first step; raising the logits of one eighth of the vocabulary is something a tiny model learns
    in a few dozen steps. Computed on token ids on both sides (TRL passes completion_ids to reward functions,
    verl-cpp's reward manager gets the response tensor), so no decoding differences enter. Empty: 0."""
    if len(token_ids) == 0:
        return 0.0
    limit = target_token_limit(vocab_size)
    return sum(1 for t in token_ids if t < limit) / len(token_ids)


# ---- the report's arithmetic ---------------------------------------------------------------------------------

def verl_flops(model: str | Mapping, seqlens: Iterable[int], forward_only: bool = False) -> float:
    """verl 0.9.1's FlopsCounter estimate for qwen2 (the formula cpp/src/model/flops_counter.cpp implements):
    6 * N_dense * sum(s) + 6 * sum(s^2) * head_dim * heads * layers for forward + backward, a third of it for a
    forward-only pass; N_dense = layers * (3 * hidden * intermediate + hidden * (2 q + 2 kv sizes)) +
    2 * vocab * hidden (embedding and LM head both counted, as verl does)."""
    spec = MODELS[model] if isinstance(model, str) else model
    hidden, layers = spec["hidden_size"], spec["num_hidden_layers"]
    heads = spec["num_attention_heads"]
    kv_heads = spec.get("num_key_value_heads", heads)
    head_dim = spec.get("head_dim", hidden // heads)
    q, kv = heads * head_dim, kv_heads * head_dim
    dense = layers * (3 * hidden * spec["intermediate_size"] + hidden * (2 * q + 2 * kv)) + 2 * spec["vocab_size"] * hidden
    seqlens = list(seqlens)
    tokens = sum(seqlens)
    squares = sum(s * s for s in seqlens)
    flops = 6 * dense * tokens + 6 * squares * head_dim * heads * layers
    return flops / 3 if forward_only else flops


def mfu(flops: float, seconds: float, peak_flops: float) -> float:
    """Model FLOPs utilisation: achieved FLOP/s over the peak FLOP/s."""
    if seconds <= 0 or peak_flops <= 0:
        raise ValueError(f"mfu: seconds ({seconds}) and peak_flops ({peak_flops}) must be positive")
    return flops / seconds / peak_flops


PHASES = ("generation", "log_prob", "update", "other")


def phase_split(step_s: float, generation_s: float, log_prob_s: float, update_s: float) -> dict[str, float]:
    """One step's wall time split into generation / log_prob / update and ``other`` (reward, advantages, data
    movement: the rest of the step). Raises when the measured phases add up to more than the step (timers that
    overlap or count something twice); a rounding excess of up to 1 ms is clamped."""
    parts = {"generation": generation_s, "log_prob": log_prob_s, "update": update_s}
    for name, value in parts.items():
        if value < 0:
            raise ValueError(f"phase_split: negative {name} time {value}")
    other = step_s - sum(parts.values())
    if other < -1e-3:
        raise ValueError(f"phase_split: phases add up to {sum(parts.values()):.4f} s, more than the step "
                         f"({step_s:.4f} s)")
    return dict(parts, other=max(other, 0.0), step=step_s)


def no_worse(ours: float, ours_sem: float, theirs: float, theirs_sem: float) -> dict:
    """Is ``ours`` no worse than ``theirs``? Two sampled training runs of the same algorithm differ by chance, so
    "no worse" allows 2 standard errors of the difference (sqrt(sem_a^2 + sem_b^2), the window means' standard
    errors); ``strictly_higher`` is the plain comparison."""
    tolerance = 2.0 * math.sqrt(ours_sem ** 2 + theirs_sem ** 2)
    return {"met": ours >= theirs - tolerance, "tolerance": tolerance, "strictly_higher": ours > theirs,
            "difference": ours - theirs}


def fit_power_law(xs: Sequence[float], ys: Sequence[float]) -> dict[str, float]:
    """Least-squares fit of log y = log a + k log x: y ~ a * x^k. Returns exponent k, coefficient a and the
    R^2 of the fit in log space."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"fit_power_law: need >= 2 (x, y) pairs of equal length, got {len(xs)} and {len(ys)}")
    if any(v <= 0 for v in list(xs) + list(ys)):
        raise ValueError("fit_power_law: x and y must be positive")
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    sxx = sum((x - mx) ** 2 for x in lx)
    if sxx == 0:
        raise ValueError("fit_power_law: all x are equal")
    k = sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sxx
    intercept = my - k * mx
    ss_res = sum((y - (intercept + k * x)) ** 2 for x, y in zip(lx, ly))
    ss_tot = sum((y - my) ** 2 for y in ly)
    return {"exponent": k, "coefficient": math.exp(intercept), "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0}
