"""Builds examples/code/tokenizer/ (tokenizer.json + tokenizer_config.json) for the example.

Run once by a developer (needs HF `tokenizers`, a dev dependency); the output is committed, so the example
itself needs nothing but verl-cpp. The tokenizer is a byte-level BPE with Qwen2's pre-tokenizer (single digits,
so constants are spelt digit by digit; a space or punctuation mark joins the word it precedes) and ChatML special
tokens, trained on the task's prompts and programs (right and defective): every text the example produces
encodes to few tokens, and the model sees "return", "max(" or "):\n" as one token each.
"""

from __future__ import annotations

import json
import os
import sys

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import code_task  # noqa: E402

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                 r"\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
VOCAB_SIZE = 384


def corpus() -> list[str]:
    texts = []
    for p in code_task.all_problems():
        texts.append(f"<|im_start|>user\n{code_task.problem_text(p)}<|im_end|>\n<|im_start|>assistant\n")
        texts.append(code_task.program(p))
        for copy in range(2):  # the teacher's defective programs are texts the model produces too
            texts.append(code_task.teacher_program(p, defect_rate=1.0, copy=copy)[0])
    texts += ["system", "user", "assistant", "You are a helpful assistant."]
    return texts


def build(out_dir: str, vocab_size: int = VOCAB_SIZE) -> None:
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
