"""The byte-level BPE tokenizers of the examples (arith, code, calc_tool), built the same way: Qwen2's pre-tokenizer
(single digits, so numbers are spelt digit by digit), ChatML special tokens, trained on the example's own texts so
that everything it renders encodes to few tokens, saved as tokenizer.json + tokenizer_config.json (with the chat
template). Run once by a developer through each example's build_tokenizer.py (needs HF ``tokenizers``, a dev
dependency); the output is committed, so the examples themselves need nothing but verl-cpp."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                 r"\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# ChatML without tools: each message as <|im_start|>role\ncontent<|im_end|>\n, then the generation prompt.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# Words the chat template or a system prompt may render that the task's texts lack.
CHAT_WORDS = ["system", "user", "assistant", "You are a helpful assistant."]


def build_chatml_bpe(texts: Iterable[str], out_dir: str, vocab_size: int, chat_template: str = CHATML_TEMPLATE,
                     added_tokens: Sequence[str] = ()) -> None:
    """Trains the BPE on ``texts`` and writes it to ``out_dir``. ``added_tokens``: tokens added after training
    (not special: a decoded response keeps them), so the trainer neither merges across them nor renumbers them."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(list(texts), trainer)
    if added_tokens:
        tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in added_tokens])
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "model_max_length": 512,
        "chat_template": chat_template,
    }
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
