"""verl.load_tokenizer gives the same ids and text as HF `tokenizers` (the reference, test-only).

Compared on thousands of generated strings for the real Qwen3 tokenizer and for byte-level BPEs
trained here with `tokenizers` (Qwen-style Split + ByteLevel, GPT-2-style ByteLevel, the other
Split behaviors), on every Unicode code point, and on decoding arbitrary id sequences.
"""

from __future__ import annotations

import json
import random
import unicodedata

import pytest

import verl
from verl import _C

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402

QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
                r"\s+(?!\S)|\s+")


def first_mismatch(ours: list, theirs: list, texts: list[str]) -> str:
    for text, a, b in zip(texts, ours, theirs):
        if a != b:
            return f"text={text!r}\n ours={a}\n   hf={b}"
    return ""


@pytest.fixture(scope="module")
def qwen3(qwen3_dir):
    return verl.load_tokenizer(qwen3_dir), tokenizers.Tokenizer.from_file(f"{qwen3_dir}/tokenizer.json")


# ---- Qwen3 ----------------------------------------------------------------------------------------


def test_qwen3_ids_match_on_generated_corpus(qwen3, corpus):
    ours, hf = qwen3
    assert len(corpus) >= 2000
    for add_special_tokens in (True, False):
        expected = [e.ids for e in hf.encode_batch(corpus, add_special_tokens=add_special_tokens)]
        got = [ours.encode(text, add_special_tokens=add_special_tokens) for text in corpus]
        assert got == expected, first_mismatch(got, expected, corpus)
        assert ours.batch_encode(corpus, add_special_tokens=add_special_tokens) == expected


def test_qwen3_every_codepoint(qwen3):
    # Every code point (no surrogates) in runs of 40, so that each meets neighbours of its block.
    ours, hf = qwen3
    cps = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
    texts = ["".join(map(chr, cps[i:i + 40])) for i in range(0, len(cps), 40)]
    texts += [" " + chr(cp) + "a" for cp in range(0x20, 0x3000)]
    expected = [e.ids for e in hf.encode_batch(texts)]
    got = ours.batch_encode(texts)
    assert got == expected, first_mismatch(got, expected, texts)


def test_qwen3_nfc_matches_hf_on_every_decomposable_character(qwen3):
    # HF's NFC carries Unicode 9.0 data; characters it does not know must pass through unchanged.
    ours, hf = qwen3
    texts = []
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        if unicodedata.decomposition(c) or unicodedata.combining(c):
            texts += [c, "a" + c + "\u0316", "a\u0316" + c, c + "\u0301", unicodedata.normalize("NFD", c) + "\u0300"]
    expected = [e.ids for e in hf.encode_batch(texts)]
    got = ours.batch_encode(texts)
    assert got == expected, first_mismatch(got, expected, texts)


def test_qwen3_decode_matches(qwen3, corpus):
    ours, hf = qwen3
    all_ids = [e.ids for e in hf.encode_batch(corpus)]
    for skip in (False, True):
        expected = hf.decode_batch(all_ids, skip_special_tokens=skip)
        assert [ours.decode(ids, skip_special_tokens=skip) for ids in all_ids] == expected
        assert ours.batch_decode(all_ids, skip_special_tokens=skip) == expected
    # Byte-level BPE is lossless: text that NFC leaves alone comes back unchanged.
    for text, ids in zip(corpus, all_ids):
        if hf.normalizer.normalize_str(text) == text:
            assert ours.decode(ids) == text


def test_qwen3_decode_arbitrary_ids_and_cut_sequences(qwen3, corpus):
    # Random ids and cuts through multi-byte characters: incomplete UTF-8 must become U+FFFD
    # exactly where HF puts it.
    ours, hf = qwen3
    rng = random.Random(7)
    n = len(ours)
    sequences = [[rng.randrange(n) for _ in range(rng.randint(1, 30))] for _ in range(1500)]
    for text in corpus[:800]:
        ids = hf.encode(text).ids
        if ids:
            a = rng.randrange(len(ids))
            sequences.append(ids[a:a + rng.randint(1, 6)])
    sequences.append([151643, 999999999, 9707])  # an unknown id is skipped
    for skip in (False, True):
        expected = [hf.decode(ids, skip_special_tokens=skip) for ids in sequences]
        got = [ours.decode(ids, skip_special_tokens=skip) for ids in sequences]
        assert got == expected, first_mismatch(got, expected, [str(s) for s in sequences])


def test_qwen3_vocab_queries(qwen3):
    ours, hf = qwen3
    assert len(ours) == hf.get_vocab_size(with_added_tokens=True)
    assert ours.vocab_size == hf.get_vocab_size(with_added_tokens=False)
    for token in ["<|im_end|>", "Hello", "Ġworld", "ä½łå¥½", "not-a-token"]:
        assert ours.convert_tokens_to_ids(token) == hf.token_to_id(token)
    for i in [0, 9707, 151643, 151668, 151669, 10**6]:
        assert ours.convert_ids_to_tokens(i) == hf.id_to_token(i)


# ---- tokenizers trained here ----------------------------------------------------------------------


def train(corpus: list[str], pre_tokenizer, normalizer=None, post_processor=None, vocab_size=900):
    tok = tokenizers.Tokenizer(models.BPE())
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    if post_processor is not None:
        tok.post_processor = post_processor
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus[:1200], trainer)
    tok.add_tokens([
        AddedToken("<mask>", lstrip=True, rstrip=True, normalized=False),
        AddedToken("hello world", single_word=True, normalized=True),
        AddedToken("café", normalized=True),
        AddedToken("[X]", normalized=False),
        AddedToken("fox", single_word=True, lstrip=True, normalized=False),
        AddedToken(" ", normalized=False),  # a lone space, as some Llama-style files have
    ])
    tok.add_special_tokens([AddedToken("<tool>", special=True, normalized=False), AddedToken("</s>", special=True)])
    return tok


def extra_texts(rng: random.Random, n: int) -> list[str]:
    """Strings aimed at the added tokens' flags."""
    bits = ["<mask>", " <mask> ", "hello world", "xhello world", "hello worldx", "café", "cafe\u0301", "[X]", "fox",
            "foxes", " fox ", "  fox", "<tool>", "</s>", "Hello World", " ", "\t<mask>\t", "a", "b c", "。", "1"]
    return ["".join(rng.choice(bits) for _ in range(rng.randint(1, 8))) for _ in range(n)]


def check_parity(hf_tok, path_or_json: str, texts: list[str], from_json: bool = False):
    ours = verl.Tokenizer(_C.Tokenizer.from_json(path_or_json)) if from_json else verl.load_tokenizer(path_or_json)
    for add_special_tokens in (True, False):
        expected = [e.ids for e in hf_tok.encode_batch(texts, add_special_tokens=add_special_tokens)]
        got = ours.batch_encode(texts, add_special_tokens=add_special_tokens)
        assert got == expected, first_mismatch(got, expected, texts)
    ids = [e.ids for e in hf_tok.encode_batch(texts)]
    for skip in (False, True):
        assert ours.batch_decode(ids, skip_special_tokens=skip) == hf_tok.decode_batch(ids, skip_special_tokens=skip)
    return ours


@pytest.fixture(scope="module")
def qwen_style(corpus):
    pre = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(QWEN_PATTERN), behavior="isolated"),
                                   pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    return train(corpus, pre, normalizer=normalizers.NFC())


def test_trained_qwen_style_bpe(qwen_style, corpus, tmp_path):
    path = tmp_path / "tokenizer.json"
    qwen_style.save(str(path))
    texts = corpus + extra_texts(random.Random(3), 600)
    ours = check_parity(qwen_style, str(path), texts)
    assert len(ours) == qwen_style.get_vocab_size()


def test_trained_bpe_legacy_merges_and_ignore_merges(qwen_style, corpus):
    # The same model with merges written as "a b" strings, then with ignore_merges set.
    config = json.loads(qwen_style.to_str())
    config["model"]["merges"] = [" ".join(pair) for pair in config["model"]["merges"]]
    texts = corpus[:1000] + extra_texts(random.Random(4), 200)
    check_parity(tokenizers.Tokenizer.from_str(json.dumps(config)), json.dumps(config), texts, from_json=True)
    config["model"]["ignore_merges"] = True
    check_parity(tokenizers.Tokenizer.from_str(json.dumps(config)), json.dumps(config), texts, from_json=True)


def test_trained_gpt2_style_bpe_with_bos_template(corpus, tmp_path):
    # ByteLevel with add_prefix_space and GPT-2's regex, no normalizer, a BOS/EOS template.
    pre = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tok = train(corpus, pre)
    tok.post_processor = processors.TemplateProcessing(
        single="<|im_start|> $A <|im_end|>", special_tokens=[("<|im_start|>", 1), ("<|im_end|>", 2)])
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    check_parity(tok, str(path), corpus[:1000] + extra_texts(random.Random(5), 300))


@pytest.mark.parametrize("behavior", ["removed", "merged_with_previous", "merged_with_next", "contiguous"])
@pytest.mark.parametrize("invert", [False, True])
def test_trained_bpe_split_behaviors(corpus, tmp_path, behavior, invert):
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\d+|\s+|x*"), behavior=behavior, invert=invert),
        pre_tokenizers.Split(" ", behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok = train(corpus, pre, normalizer=normalizers.Sequence([normalizers.NFC()]), vocab_size=500)
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    check_parity(tok, str(path), corpus[:400] + extra_texts(random.Random(6), 100))


def test_trained_bpe_unicode_classes_and_anchors(corpus, tmp_path):
    # Oniguruma constructs that PCRE2 spells or reads differently: \d \w \h, line anchors, \p{..}
    # with characters newer than PCRE2's Unicode tables.
    pattern = r"^\w+|\d+|\h+|\p{Lo}+|\p{So}|[^\s\w]+$|\p{Sk}|\P{L}"
    pre = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
                                   pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok = train(corpus, pre, vocab_size=500)
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    texts = corpus[:600] + ["\U000105c0\U000105c1 abc", "\U00031350\U00031351x", "🫎🪿 ok", "deadBEEF 0x1f\n^z$"]
    check_parity(tok, str(path), texts)
