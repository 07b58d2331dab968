"""Builds examples/arith/tokenizer/ (tokenizer.json + tokenizer_config.json) for the demo.

Run once by a developer (needs HF `tokenizers`, a dev dependency); the output is committed, so the
demo itself needs nothing but verl-cpp. The tokenizer is a byte-level BPE with Qwen2's
pre-tokenizer (single digits, so numbers are spelt digit by digit) and ChatML special tokens,
trained on the task's own prompts: every text the demo produces encodes to few tokens.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import arith_task  # noqa: E402
from chatml_bpe import CHAT_WORDS, build_chatml_bpe  # noqa: E402


def corpus() -> list[str]:
    train, test = arith_task.generate_splits(4000, 500, seed=0)
    texts = []
    for a, op, b in train + test:
        texts.append(f"<|im_start|>user\n{arith_task.problem_text(a, op, b)}<|im_end|>\n<|im_start|>assistant\n")
        texts.append(str(arith_task.answer(a, op, b)))
    return texts + CHAT_WORDS


def build(out_dir: str, vocab_size: int = 320) -> None:
    build_chatml_bpe(corpus(), out_dir, vocab_size)


if __name__ == "__main__":
    build(os.path.join(HERE, "tokenizer"))
