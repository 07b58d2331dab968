"""Builds examples/arith/tokenizer/ (tokenizer.json + tokenizer_config.json) for the demo.

Run once by a developer (needs HF `tokenizers`, a dev dependency); the output is committed, so the
demo itself needs nothing but verl-cpp. The tokenizer is a byte-level BPE with Qwen2's
pre-tokenizer (single digits, so numbers are spelt digit by digit) and ChatML special tokens,
trained on the task's own prompts: every text the demo produces encodes to few tokens.
"""

from __future__ import annotations

import json
import os
import sys

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arith_task  # noqa: E402

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                 r"\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def corpus() -> list[str]:
    train, test = arith_task.generate_splits(4000, 500, seed=0)
    texts = []
    for a, op, b in train + test:
        texts.append(f"<|im_start|>user\n{arith_task.problem_text(a, op, b)}<|im_end|>\n<|im_start|>assistant\n")
        texts.append(str(arith_task.answer(a, op, b)))
    texts += ["system", "user", "assistant", "You are a helpful assistant."]
    return texts


def build(out_dir: str, vocab_size: int = 320) -> None:
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus(), trainer)
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "model_max_length": 512,
        "chat_template": CHAT_TEMPLATE,
    }
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    build(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizer"))
