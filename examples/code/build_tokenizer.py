"""Builds examples/code/tokenizer/ (tokenizer.json + tokenizer_config.json) for the example.

Run once by a developer (needs HF `tokenizers`, a dev dependency); the output is committed, so the example
itself needs nothing but verl-cpp. The tokenizer is a byte-level BPE with Qwen2's pre-tokenizer (single digits,
so constants are spelt digit by digit; a space or punctuation mark joins the word it precedes) and ChatML special
tokens, trained on the task's prompts and programs (right and defective): every text the example produces
encodes to few tokens, and the model sees "return", "max(" or "):\n" as one token each.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import code_task  # noqa: E402
from chatml_bpe import CHAT_WORDS, build_chatml_bpe  # noqa: E402

VOCAB_SIZE = 384


def corpus() -> list[str]:
    texts = []
    for p in code_task.all_problems():
        texts.append(f"<|im_start|>user\n{code_task.problem_text(p)}<|im_end|>\n<|im_start|>assistant\n")
        texts.append(code_task.program(p))
        for copy in range(2):  # the teacher's defective programs are texts the model produces too
            texts.append(code_task.teacher_program(p, defect_rate=1.0, copy=copy)[0])
    return texts + CHAT_WORDS


def build(out_dir: str, vocab_size: int = VOCAB_SIZE) -> None:
    build_chatml_bpe(corpus(), out_dir, vocab_size)


if __name__ == "__main__":
    build(os.path.join(HERE, "tokenizer"))
