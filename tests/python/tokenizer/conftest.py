"""Tokenizer test fixtures: the Qwen3 tokenizer fixture and a seeded corpus of varied strings.

HF ``tokenizers``/``transformers`` are the reference and test-only dependencies: tests that need
them skip when they are missing. The Qwen3 fixture is the repository's own (tests/fixtures/): a missing file fails.
"""

from __future__ import annotations

import os
import random

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
QWEN3_DIR = os.path.join(REPO_ROOT, "tests", "fixtures", "qwen3-tokenizer")

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|vision_pad|>", "<tool_call>", "</tool_call>", "<think>",
            "</think>"]

ENGLISH = ("The quick brown fox jumps over the lazy dog. I'm sure it's fine, isn't it? We'll see; they've "
           "said THEY'RE READY. Reinforcement learning from human feedback (RLHF) fine-tunes LLMs with PPO, "
           "GRPO and DAPO. Don't panic: 42 is the answer, and 3.14159 is pi. e-mail: someone@example.com, "
           "URL https://github.com/volcengine/verl?tab=readme#install").split(" ")
CHINESE = "强化学习是一种机器学习方法，智能体通过与环境交互来学习策略。我们使用大语言模型进行后训练，数学推理能力显著提升！"
JAPANESE = "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。カタカナ、ひらがな、漢字を混ぜた文章です。ｱｲｳ半角"
KOREAN = "안녕하세요 세계! 한국어 문장을 토큰화합니다. 한글 자모 ᄀᄁᄂ"
OTHER_SCRIPTS = ["Привет, мир! Ёжик в тумане.", "Γειά σου Κόσμε", "مرحبا بالعالم ١٢٣", "שלום עולם", "नमस्ते दुनिया १२३",
                 "สวัสดีชาวโลก", "Xin chào thế giới", "Ünïcödé façade naïve café Ångström", "ﬁﬂ ﬀ Ⅻ ① ㎞ ™ ½",
                 "Ꭰ Ᏸ 𐐷 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛", "𠀀𠀁𪜀 𫝀 𬺰 𰀀 𱍐𲎯", "𐗀𐗁𐗂 Todhri", "ǅǈ ǲ"]
CODE = [
    "def f(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
    "import torch\nx = torch.randn(3, 4)\nprint(x @ x.T)\n",
    "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';",
    "<div class=\"row\">&nbsp;<a href='#'>link</a></div>",
    "{\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
    "#!/bin/bash\nset -euo pipefail\necho \"$HOME\" | tr a-z A-Z\n",
    "fn main() { let v: Vec<u32> = (0..10).map(|x| x * x).collect(); }",
    "    \n\n\t\t    if x:\r\n        pass\r\n",
    "λx. x + 1  ∀ε>0 ∃δ>0: |x−a|<δ ⇒ |f(x)−f(a)|<ε  ∑_{i=1}^{n} i² = n(n+1)(2n+1)/6",
]
EMOJI = ["🤗", "🚀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "🏳️‍🌈", "❤️", "🩷", "🫠", "😀😃😄", "✅", "🧑🏿‍💻", "🪿", "🫎"]
SPACES = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\u0085", "\u2009", " \n ", "\t \n"]
COMBINING = ["e\u0301", "a\u0308", "o\u0302\u0323", "q\u0307\u0323", "\u1e0b\u0323", "A\u030a", "\u212b", "\u1100\u1161\u11a8",
             "\uac00\u11a8", "\u0915\u093c", "n\u0303\u0301", "\u0041\u0316\u0301\u0300", "\u0f71\u0f72\u0f74",
             "\u0898a", "a\u0898\u0316", "\U00011935\U00011930", "\u05b8\u05b7", "i\u0307\u0301", "\u0344", "\u0958"]
APOSTROPHES = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'LL", "'ſ", "’s", "''"]


def _random_codepoint(rng: random.Random) -> str:
    blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
              (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x1E00, 0x1EFF), (0x2000, 0x206F), (0x2190, 0x23FF),
              (0x2460, 0x24FF), (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xFB00, 0xFB4F),
              (0xFF00, 0xFFEF), (0x1D400, 0x1D7FF), (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF), (0x31350, 0x323AF),
              (0x10000, 0x1FFFF), (0x0, 0x1F)]
    lo, hi = rng.choice(blocks)
    while True:
        cp = rng.randint(lo, hi)
        if not 0xD800 <= cp < 0xE000:
            return chr(cp)


def _piece(rng: random.Random) -> str:
    kind = rng.randrange(14)
    if kind == 0:
        return " ".join(rng.choice(ENGLISH) for _ in range(rng.randint(1, 12)))
    if kind == 1:
        start = rng.randrange(len(CHINESE))
        return CHINESE[start:start + rng.randint(1, 30)]
    if kind == 2:
        start = rng.randrange(len(JAPANESE))
        return JAPANESE[start:start + rng.randint(1, 30)]
    if kind == 3:
        return rng.choice([KOREAN] + OTHER_SCRIPTS)
    if kind == 4:
        return rng.choice(CODE)
    if kind == 5:
        return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 5)))
    if kind == 6:
        return "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 60)))
    if kind == 7:
        return "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 8)))
    if kind == 8:
        return rng.choice(SPECIALS) + rng.choice(["", "user\n", "assistant\n", " ", "x"])
    if kind == 9:
        return rng.choice(["<|im_", "<|im_start", "|>", "<|", "im_end|>", "<think", "</tool_call"])
    if kind == 10:
        return "".join(rng.choice(COMBINING) for _ in range(rng.randint(1, 4)))
    if kind == 11:
        return rng.choice(["I", "it", "we", "THEY", "you"]) + rng.choice(APOSTROPHES)
    if kind == 12:
        return "".join(_random_codepoint(rng) for _ in range(rng.randint(1, 20)))
    return rng.choice(["\u00bd", "3.14", "1,000,000", "2024-01-01T12:00:00Z", "¥100", "$5.99", "100%", "x²+y²=z²"])


def make_corpus(n: int, seed: int = 1234) -> list[str]:
    """n varied strings: every kind of piece above, mixed with separators, plus some edge cases."""
    rng = random.Random(seed)
    corpus = ["", " ", "\n", "a", "  a  ", "\t\t\t", "a" * 3000, " " * 2000, "\n" * 500, "9" * 1000, "ab" * 1500,
              "\u00e9" * 700, "e\u0301" * 300, "<|im_start|>" * 20, "🤗" * 200, "。" * 100]
    while len(corpus) < n:
        parts = [_piece(rng) for _ in range(rng.randint(1, 8))]
        seps = ["", " ", "\n", "", " "]
        corpus.append("".join(p + rng.choice(seps) for p in parts))
    return corpus


@pytest.fixture(scope="session")
def qwen3_dir() -> str:
    return QWEN3_DIR


@pytest.fixture(scope="session")
def corpus() -> list[str]:
    return make_corpus(2500)
