"""verl's GGUF reader and GGUF -> Hugging Face converter (verl.models.gguf, verl.models.from_gguf) against the
references: gguf-py's dequantizers bit for bit; tiny Llama / Qwen2 / Qwen3 models written to GGUF the way llama.cpp's
convert_hf_to_gguf writes them (Llama's rotary Q/K permute, F32 / F16 / Q8_0 tensors, a small byte-level BPE
vocabulary with control and user-defined tokens and a chat template), converted, and compared with transformers' own
GGUF loading (weights, logits), with verl's model and tokenizer, and with the tokenizer the vocabulary came from; and
the typed errors that truncated, corrupt and unsupported files raise."""

import json
import os
import random
import struct
from functools import lru_cache

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

import verl  # noqa: E402
from verl.models import from_gguf  # noqa: E402
from verl.models.from_gguf import convert_gguf  # noqa: E402
from verl.models.gguf import GGML_TYPES, dequantize, read_gguf  # noqa: E402
from verl.models.safetensors import load_checkpoint_dir  # noqa: E402

Q = gguf.GGMLQuantizationType
GGUF_NAME = "model.gguf"


# ---- dequantization ------------------------------------------------------------------------------------------------

# Byte offsets of the float16 scales in each quantized block: random bytes there could be inf/nan, which compare
# unequal to themselves; every other byte is any value.
F16_FIELDS = {"Q8_0": [0], "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q2_K": [80, 82],
              "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208]}
SIMPLE = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]  # gguf.quants.quantize has these
K_QUANTS = ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]


def random_blocks(type_name: str, rows: int, blocks_per_row: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    size = GGML_TYPES[Q[type_name].value].type_size
    raw = rng.integers(0, 256, size=(rows * blocks_per_row, size), dtype=np.uint8)
    for offset in F16_FIELDS[type_name]:
        scales = (rng.standard_normal(len(raw)) * 0.1).astype(np.float16)
        raw[:, offset:offset + 2] = scales.view(np.uint8).reshape(-1, 2)
    return raw.reshape(rows, -1)


def test_type_table_matches_gguf_py():
    for type_id, t in GGML_TYPES.items():
        assert gguf.GGML_QUANT_SIZES[Q(type_id)] == (t.block_size, t.type_size), t.name
        assert Q(type_id).name == t.name


@pytest.mark.parametrize("type_name", SIMPLE)
def test_simple_types_dequantize_as_gguf_py(type_name):
    rng = np.random.default_rng(0)
    values = (rng.standard_normal((6, 256)) * rng.uniform(0.01, 10, (6, 1))).astype(np.float32)
    values[0, :32] = 0.0  # an all-zero block (scale 0)
    raw = gguf.quants.quantize(values, Q[type_name])
    expected = gguf.quants.dequantize(raw, Q[type_name])
    ours = dequantize(raw.view(np.uint8).reshape(-1), Q[type_name].value, expected.shape)
    assert ours.dtype == np.float32 and ours.shape == expected.shape
    assert np.array_equal(ours.view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("type_name", K_QUANTS + [t for t in SIMPLE if t in F16_FIELDS])
def test_random_blocks_dequantize_as_gguf_py(type_name):
    raw = random_blocks(type_name, rows=4, blocks_per_row=5, seed=1)
    expected = gguf.quants.dequantize(raw, Q[type_name])
    ours = dequantize(raw.reshape(-1), Q[type_name].value, expected.shape)
    assert np.array_equal(ours.view(np.uint32), expected.view(np.uint32))


def test_large_tensor_dequantizes_in_chunks_as_one():
    # More blocks than one chunk of the dequantizer, so the chunk seams are covered.
    raw = random_blocks("Q4_K", rows=3, blocks_per_row=200, seed=2)
    expected = gguf.quants.dequantize(raw, Q.Q4_K)
    assert np.array_equal(dequantize(raw.reshape(-1), Q.Q4_K.value, expected.shape), expected)


# ---- tiny models written the way llama.cpp's convert_hf_to_gguf writes them ----------------------------------------

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
               r"|\s+(?!\S)|\s+")
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
CONTROL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
USER_DEFINED = ["<think>"]
CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
                 "'<|im_end|>\n' }}{% endfor %}"
                 "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's 2024, and we'll count 1 2 3 4 5 6 7 8 9 10 100 1000.",
    "Hello world! Hello, world? hello   world\n\nNew paragraph\twith tabs and  double  spaces.",
    "Prices: $3.50, 12% off, 007 agents; x = y + 42 * z ** 2 - 3.14159",
    "Unicode: café naïve résumé, 中文字符, 日本語, Ελληνικά, русский, emoji 😀👍🏽.",
    "def main():\n    return [i * 2 for i in range(10)]  # code\n",
    "I'm sure you've seen they're here; don't stop. THE END 1999-12-31",
]
TEST_STRINGS = [
    "Hello world", " Hello  world ", "123 4567 89", "a1b22c333", " 2024", "x=3.14159; y = 2e10", "  leading",
    "trailing  ", "\n\nnew\nlines\r\n", "tabs\tand\u00a0nbsp", "emoji 😀👍🏽 done", "中文字符测试", "Ελληνικά κείμενο",
    "don't you'll I'M we've", "<|im_start|>user\nhi 42<|im_end|>\n", "<|endoftext|>", "<think>why</think>",
    "a <think> b", "   ", "", "ÀÉÎÕÜ àéîõü", "١٢٣ ४५६ ⅫⅣ ½ ²", "mixed123abc456", "$$$ %%% ^^^", "'s 'S 'll",
    "https://example.com/path?q=1&b=2", "def f(x):\n    return x**2  # comment\n",
]


def pre_tokenizer(pre: str):
    from tokenizers import Regex, pre_tokenizers as pt

    if pre == "smollm":  # SmolLM's own tokenizer.json
        return pt.Sequence([pt.Digits(individual_digits=True), pt.ByteLevel(add_prefix_space=False, use_regex=True)])
    if pre == "gpt-2":
        return pt.ByteLevel(add_prefix_space=False, use_regex=True)
    split = {"qwen2": QWEN2_SPLIT, "llama-bpe": LLAMA3_SPLIT}[pre]
    return pt.Sequence([pt.Split(Regex(split), behavior="isolated"), pt.ByteLevel(add_prefix_space=False,
                                                                                  use_regex=False)])


@lru_cache(maxsize=None)
def source_tokenizer_json(pre: str) -> str:
    """A tiny byte-level BPE trained with ``pre``'s split: the tokenizer.json a model's repository would have."""
    from tokenizers import Tokenizer, decoders, models, trainers

    tok = Tokenizer(models.BPE(ignore_merges=pre == "llama-bpe"))
    tok.pre_tokenizer = pre_tokenizer(pre)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=420, special_tokens=CONTROL, show_progress=False,
                                  initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 3, trainer)
    tok.add_tokens([tokenizers.AddedToken(t, special=False, normalized=False) for t in USER_DEFINED])
    return tok.to_str()


def model_config(case: str):
    common = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  max_position_embeddings=256, rms_norm_eps=1e-5, initializer_range=0.1)
    if case == "llama":  # GQA 4:2, untied
        return transformers.LlamaConfig(num_key_value_heads=2, rope_theta=100000.0, tie_word_embeddings=False, **common)
    if case == "llama3":  # GQA 4:1, tied, Llama 3's rope scaling (llama.cpp stores it as the rope_freqs tensor)
        return transformers.LlamaConfig(
            num_key_value_heads=1, rope_theta=500000.0, tie_word_embeddings=True,
            rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                              original_max_position_embeddings=64), **common)
    if case == "qwen2":  # q/k/v biases
        return transformers.Qwen2Config(num_key_value_heads=2, rope_theta=1000000.0, tie_word_embeddings=False,
                                        **common)
    if case == "qwen3":  # q/k norms, head_dim 128 != hidden / heads, tied
        return transformers.Qwen3Config(num_key_value_heads=2, head_dim=128, rope_theta=1000000.0,
                                        tie_word_embeddings=True, **common)
    raise ValueError(case)


# case -> (tokenizer.ggml.pre, add_bos_token, the type of the 2-D weights, the type of the embedding)
CASES = {"llama": ("smollm", False, "Q8_0", "F16"), "llama3": ("llama-bpe", True, "F16", "Q8_0"),
         "qwen2": ("qwen2", False, "F16", "F32"), "qwen3": ("qwen2", False, "F32", "F32")}


@lru_cache(maxsize=None)
def hf_model(case: str):
    pre = CASES[case][0]
    vocab = len(json.loads(source_tokenizer_json(pre))["model"]["vocab"]) + len(USER_DEFINED)
    config = model_config(case)
    config.vocab_size = vocab
    config.bos_token_id, config.eos_token_id, config.pad_token_id = 1, 2, 0
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    g = torch.Generator().manual_seed(123)
    with torch.no_grad():  # HF starts norms at 1 and biases at 0; move them so the test sees them used
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_(0.2 * torch.randn(p.shape, generator=g))
    return model


def llama_cpp_permute(w: np.ndarray, n_head: int, n_head_kv: int) -> np.ndarray:
    """convert_hf_to_gguf's LlamaModel.permute."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_rope_freqs(config) -> np.ndarray:
    """convert_hf_to_gguf's LlamaModel.generate_extra_tensors for rope_type llama3."""
    import math

    rope = config.rope_parameters
    dim = config.head_dim
    freqs = 1.0 / (rope["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    old = rope["original_max_position_embeddings"]
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            out.append(1)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(out, dtype=torch.float32).numpy()


def encode_tensor(values: np.ndarray, type_name: str):
    """(data, raw_dtype) for GGUFWriter.add_tensor."""
    if type_name == "F32":
        return values.astype(np.float32), None
    if type_name == "F16":
        return values.astype(np.float16), None
    return gguf.quants.quantize(values.astype(np.float32), Q[type_name]), Q[type_name]


def write_gguf(path, case: str, *, pre=None, kv_overrides=None, drop=(), extra_tensors=None, tensor_types=None):
    """The model of ``case`` as convert_hf_to_gguf writes it. ``kv_overrides``: key -> (add method, value) replacing
    or adding metadata (value None: leave the key out; a tuple: the method's arguments); ``tensor_types``: GGUF name
    -> a type to store zero bytes of."""
    model = hf_model(case)
    config = model.config
    pre = pre or CASES[case][0]
    add_bos, weight_type, embedding_type = CASES[case][1:]
    source = json.loads(source_tokenizer_json(pre))
    arch = config.model_type
    kv = {
        "context_length": ("add_context_length", config.max_position_embeddings),
        "embedding_length": ("add_embedding_length", config.hidden_size),
        "block_count": ("add_block_count", config.num_hidden_layers),
        "feed_forward_length": ("add_feed_forward_length", config.intermediate_size),
        "head_count": ("add_head_count", config.num_attention_heads),
        "head_count_kv": ("add_head_count_kv", config.num_key_value_heads),
        "rope_freq_base": ("add_rope_freq_base", config.rope_parameters["rope_theta"]),
        "rms_eps": ("add_layer_norm_rms_eps", config.rms_norm_eps),
        "file_type": ("add_file_type", 1),
    }
    if arch == "qwen3":
        kv["key_length"] = ("add_key_length", config.head_dim)
        kv["value_length"] = ("add_value_length", config.head_dim)
    if arch == "llama":
        kv["vocab_size"] = ("add_vocab_size", config.vocab_size)
        kv["rope_dim"] = ("add_rope_dimension_count", config.head_dim)

    # The vocabulary as convert_hf_to_gguf's get_vocab_base: tokens by id, added tokens CONTROL when special, else
    # USER_DEFINED; merges as "a b".
    vocab = dict(source["model"]["vocab"])
    special = {t["content"]: t["special"] for t in source["added_tokens"]}
    for t in source["added_tokens"]:
        vocab[t["content"]] = t["id"]
    tokens = [None] * len(vocab)
    for token, i in vocab.items():
        tokens[i] = token
    types = [(3 if special[t] else 4) if t in special else 1 for t in tokens]
    merges = [" ".join(m) if isinstance(m, list) else m for m in source["model"]["merges"]]
    kv.update({
        "tokenizer_model": ("add_tokenizer_model", "gpt2"), "tokenizer_pre": ("add_tokenizer_pre", pre),
        "tokens": ("add_token_list", tokens), "token_types": ("add_token_types", types),
        "merges": ("add_token_merges", merges), "bos": ("add_bos_token_id", config.bos_token_id),
        "eos": ("add_eos_token_id", config.eos_token_id), "unk": ("add_unk_token_id", 0),
        "pad": ("add_pad_token_id", config.pad_token_id), "add_bos": ("add_add_bos_token", add_bos),
        "chat_template": ("add_chat_template", CHAT_TEMPLATE),
    })
    kv.update(kv_overrides or {})

    writer = gguf.GGUFWriter(str(path), arch)
    for method, value in kv.values():
        if value is not None:
            getattr(writer, method)(*value) if isinstance(value, tuple) else getattr(writer, method)(value)
    names = gguf.get_tensor_name_map(next(a for a, n in gguf.MODEL_ARCH_NAMES.items() if n == arch),
                                     config.num_hidden_layers)
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and config.tie_word_embeddings:
            continue
        stem, suffix = name.rsplit(".", 1)
        gguf_name = f"{names.get_name(stem)}.{suffix}"
        if gguf_name in drop:
            continue
        values = tensor.numpy()
        if arch == "llama" and name.endswith(("q_proj.weight", "q_proj.bias")):
            values = llama_cpp_permute(values, config.num_attention_heads, config.num_attention_heads)
        if arch == "llama" and name.endswith(("k_proj.weight", "k_proj.bias")):
            values = llama_cpp_permute(values, config.num_attention_heads, config.num_key_value_heads)
        # llama.cpp keeps 1-D tensors (norms, biases) in F32
        type_name = "F32" if values.ndim == 1 else embedding_type if gguf_name == "token_embd.weight" else weight_type
        if tensor_types and gguf_name in tensor_types:
            t = GGML_TYPES[Q[tensor_types[gguf_name]].value]
            data = np.zeros((values.shape[0], values.shape[1] // t.block_size * t.type_size), dtype=np.uint8)
            writer.add_tensor(gguf_name, data, raw_dtype=Q[tensor_types[gguf_name]])
            continue
        data, raw_dtype = encode_tensor(values, type_name)
        writer.add_tensor(gguf_name, data, raw_dtype=raw_dtype)
    if config.rope_parameters.get("rope_type") == "llama3":
        writer.add_tensor("rope_freqs.weight", llama3_rope_freqs(config))
    for name, values in (extra_tensors or {}).items():
        writer.add_tensor(name, values)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return str(path)


def model_dir(tmp_path, case: str, **kwargs):
    """A directory holding the case's GGUF file (transformers' gguf_file= loads from a directory)."""
    directory = tmp_path / f"gguf-{case}"
    directory.mkdir(exist_ok=True)
    write_gguf(directory / GGUF_NAME, case, **kwargs)
    return directory


def hf_from_gguf(directory):
    """transformers' own GGUF loading: the reference the converted weights must equal."""
    return transformers.AutoModelForCausalLM.from_pretrained(str(directory), gguf_file=GGUF_NAME).eval()


@pytest.mark.parametrize("case", list(CASES))
def test_converted_checkpoint_matches_transformers_gguf_loading(tmp_path, case):
    directory = model_dir(tmp_path, case)
    out = convert_gguf(directory / GGUF_NAME, tmp_path / "out")
    assert sorted(os.listdir(out)) == ["chat_template.jinja", "config.json", "generation_config.json",
                                       "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    reference = hf_from_gguf(directory)
    expected = reference.state_dict()

    # (a) the weights are transformers' dequantized (and, for llama, un-permuted) GGUF weights, bit for bit
    written = load_checkpoint_dir(out)
    tied = reference.config.tie_word_embeddings
    assert set(written) == set(expected) - ({"lm_head.weight"} if tied else set())
    for name, tensor in written.items():
        assert tensor.dtype == torch.float32 and torch.equal(tensor, expected[name]), name
    # the original weights come back up to the storage type's rounding: the llama permute is undone exactly
    original = hf_model(case).state_dict()
    for name, tensor in written.items():
        assert torch.allclose(tensor, original[name], rtol=0, atol=0.05), name
        if CASES[case][2] == "F32" or tensor.ndim == 1:
            assert torch.equal(tensor, original[name]), name

    # config.json means what the model's own config means
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    source = hf_model(case).config
    for key in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "tie_word_embeddings",
                "bos_token_id", "eos_token_id", "pad_token_id", "rope_parameters", "model_type"):
        assert config[key] == getattr(source, key), key
    assert config["head_dim"] == getattr(source, "head_dim", source.hidden_size // source.num_attention_heads)
    assert config["architectures"] == [type(reference).__name__] and config["torch_dtype"] == "float32"

    # (b) transformers loads the directory to the same model
    converted = transformers.AutoModelForCausalLM.from_pretrained(out).eval()
    assert type(converted) is type(reference)
    ids = torch.randint(0, source.vocab_size, (2, 80), generator=torch.Generator().manual_seed(0))  # past 64 positions
    with torch.no_grad():
        logits = converted(ids).logits
        if case == "llama3":
            # transformers' GGUF loader drops rope_freqs (Llama 3's rope scaling) from the config; the same weights
            # under the source config are the model the file describes.
            reference = transformers.AutoModelForCausalLM.from_config(source, attn_implementation="sdpa").eval()
            reference.load_state_dict(expected)
        assert torch.equal(logits, reference(ids).logits)

    # (c) verl's model
    ours = verl.models.load_model(out)
    with torch.no_grad():
        assert (ours(ids) - logits).abs().max().item() <= 1e-5


@pytest.mark.parametrize("pre", ["smollm", "gpt-2", "qwen2", "llama-bpe"])
def test_tokenizer_matches_the_source_and_transformers(tmp_path, pre):
    add_bos = pre == "llama-bpe"
    directory = model_dir(tmp_path, "llama", pre=pre, kv_overrides={"add_bos": ("add_add_bos_token", add_bos)})
    out = convert_gguf(directory / GGUF_NAME, tmp_path / "out")
    converted = tokenizers.Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
    source = tokenizers.Tokenizer.from_str(source_tokenizer_json(pre))
    gguf_reference = transformers.AutoTokenizer.from_pretrained(str(directory), gguf_file=GGUF_NAME)
    hf_converted = transformers.AutoTokenizer.from_pretrained(out)
    ours = verl.load_tokenizer(out)
    bos = [1] if add_bos else []
    strings = TEST_STRINGS + [s + " " + t for s in CORPUS for t in CONTROL]
    rng = random.Random(0)
    alphabet = "ab xyz 0123456789 \n\t.,;'-_()<>/|$%é中😀½Ⅻ"
    strings += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(200)]
    for s in strings:
        ids = converted.encode(s).ids
        assert ids == bos + source.encode(s).ids, s  # the model's own tokenizer (plus the BOS the file asks for)
        assert ids == hf_converted.encode(s) == ours.encode(s), s
        if pre != "smollm" or not any(c.isnumeric() for c in s):
            # transformers' GGUF tokenizer has no pre-tokenizer for "smollm": it splits no digits off, where SmolLM's
            # tokenizer and llama.cpp do; otherwise it is the same tokenizer
            assert ids == gguf_reference.encode(s), s
        assert hf_converted.decode(ids) == ours.decode(ids) == gguf_reference.decode(ids)
        assert hf_converted.decode(ids, skip_special_tokens=True) == ours.decode(ids, skip_special_tokens=True)

    for name in ("bos_token", "eos_token", "pad_token", "unk_token"):
        assert getattr(hf_converted, name) == getattr(gguf_reference, name), name
    assert ours.bos_token == "<|im_start|>" and ours.eos_token_id == 2 and ours.pad_token_id == 0
    assert converted.token_to_id("<think>") == source.token_to_id("<think>")
    specials = {t.content: t.special for t in converted.get_added_tokens_decoder().values()}
    assert specials == {**{t: True for t in CONTROL}, **{t: False for t in USER_DEFINED}}

    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2 + 2 = ?"},
            {"role": "assistant", "content": "4"}, {"role": "user", "content": "Thanks 😀"}]
    rendered = gguf_reference.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    assert hf_converted.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) == rendered
    assert ours.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) == rendered
    generation = json.loads((tmp_path / "out" / "generation_config.json").read_text())
    assert generation == {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}


def test_bfloat16_sharded_and_cli(tmp_path):
    directory = model_dir(tmp_path, "qwen2")
    assert from_gguf.main([str(directory / GGUF_NAME), str(tmp_path / "bf16"), "--dtype", "bfloat16",
                           "--max-shard-size", "40000"]) == 0
    index = json.loads((tmp_path / "bf16" / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1 and not (tmp_path / "bf16" / "model.safetensors").exists()
    written = load_checkpoint_dir(tmp_path / "bf16")
    expected = hf_from_gguf(directory).state_dict()
    for name, tensor in written.items():
        assert tensor.dtype == torch.bfloat16 and torch.equal(tensor, expected[name].to(torch.bfloat16)), name
    assert json.loads((tmp_path / "bf16" / "config.json").read_text())["dtype"] == "bfloat16"
    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "bf16")
    assert model.dtype == torch.bfloat16
    ours = verl.models.load_model(tmp_path / "bf16", dtype="auto").state_dict()
    assert all(tensor.dtype == torch.bfloat16 for tensor in ours.values())
    # the CLI reports a refusal on stderr with status 1
    assert from_gguf.main([str(directory / GGUF_NAME), str(tmp_path / "bf16")]) == 1


def test_reader_api(tmp_path):
    path = write_gguf(tmp_path / GGUF_NAME, "llama")
    f = read_gguf(path)
    assert f.version == 3 and f.alignment == 32
    assert f.metadata["general.architecture"] == "llama" and f.metadata["llama.block_count"] == 2
    assert f.metadata["tokenizer.ggml.tokens"][:3] == CONTROL
    info = f.tensors["blk.0.attn_k.weight"]
    assert info.type_name == "Q8_0" and info.shape == (32, 64)
    t = f.tensor("blk.0.ffn_down.weight")
    assert t.dtype == torch.float32 and t.shape == (64, 96)
    reference = gguf.GGUFReader(path)
    for tensor in reference.tensors:
        expected = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        assert np.array_equal(f.dequantize(tensor.name), expected), tensor.name


# ---- refusals --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["gemma", "phi3"])  # Phi-3 loads from Hugging Face checkpoints, not GGUF yet
def test_unsupported_architecture(tmp_path, arch):
    writer = gguf.GGUFWriter(str(tmp_path / "g.gguf"), arch)
    writer.add_block_count(1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(verl.ConfigError, match=rf"general\.architecture.*'{arch}'.*llama, qwen2, qwen3"):
        convert_gguf(tmp_path / "g.gguf", tmp_path / "out")


@pytest.mark.parametrize("kv, error, pattern", [
    ({"tokenizer_model": ("add_tokenizer_model", "llama")}, verl.ConfigError, r"tokenizer\.ggml\.model.*'llama'"),
    ({"tokenizer_pre": ("add_tokenizer_pre", "mystery-bpe")}, verl.ConfigError, r"tokenizer\.ggml\.pre.*mystery-bpe"),
    ({"rope_scaling": ("add_rope_scaling_type", gguf.RopeScalingType.YARN)}, verl.ConfigError,
     r"llama\.rope\.scaling\.type.*'yarn'"),
    ({"block_count": ("add_block_count", None)}, verl.CheckpointError, r"'llama\.block_count' is missing"),
    ({"block_count": ("add_string", ("llama.block_count", "two"))}, verl.CheckpointError,
     r"'llama\.block_count' must be an integer, got 'two'"),
    ({"head_count_kv": ("add_head_count_kv", 3)}, verl.ConfigError, r"head_count.*multiple"),
    ({"bos": ("add_bos_token_id", 10**6)}, verl.CheckpointError, r"tokenizer\.ggml\.bos_token_id"),
    ({"merges": ("add_token_merges", ["zz qq"])}, verl.CheckpointError, r"tokenizer\.ggml\.merges.*entry 0"),
])
def test_unsupported_or_inconsistent_metadata(tmp_path, kv, error, pattern):
    directory = model_dir(tmp_path, "llama", kv_overrides=kv)
    with pytest.raises(error, match=pattern):
        convert_gguf(directory / GGUF_NAME, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not [p for p in os.listdir(tmp_path) if p.startswith(".out")]


def test_tensor_problems(tmp_path):
    directory = model_dir(tmp_path, "qwen2", extra_tensors={"blk.0.mystery.weight": np.zeros(4, np.float32)})
    with pytest.raises(verl.CheckpointError, match=r"blk\.0\.mystery\.weight"):
        convert_gguf(directory / GGUF_NAME, tmp_path / "out")
    directory = model_dir(tmp_path, "qwen2", drop={"blk.1.ffn_up.weight", "output_norm.weight"})
    with pytest.raises(verl.CheckpointError, match=r"2 tensor\(s\).*missing: blk\.1\.ffn_up\.weight, output_norm"):
        convert_gguf(directory / GGUF_NAME, tmp_path / "out")
    # a Qwen2 file has no use for Llama 3's rope frequencies
    directory = model_dir(tmp_path, "qwen2", extra_tensors={"rope_freqs.weight": np.ones(8, np.float32)})
    with pytest.raises(verl.CheckpointError, match=r"rope_freqs\.weight"):
        convert_gguf(directory / GGUF_NAME, tmp_path / "out")
    # a type that can be read but not dequantized
    directory = model_dir(tmp_path, "llama", tensor_types={"blk.0.attn_v.weight": "IQ4_NL"})
    with pytest.raises(verl.ConfigError, match=r"blk\.0\.attn_v\.weight.*IQ4_NL"):
        convert_gguf(directory / GGUF_NAME, tmp_path / "out")
    with pytest.raises(verl.ConfigError, match=r"blk\.0\.attn_v\.weight.*IQ4_NL \(type 20\)"):
        read_gguf(directory / GGUF_NAME).tensor("blk.0.attn_v.weight")
    assert not (tmp_path / "out").exists()


def test_out_dir_must_be_empty_unless_overwrite(tmp_path):
    directory = model_dir(tmp_path, "qwen3")
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(verl.CheckpointError, match=r"out exists and is not empty"):
        convert_gguf(directory / GGUF_NAME, out)
    assert os.listdir(out) == ["keep.txt"]
    (out / "keep.txt").unlink()
    convert_gguf(directory / GGUF_NAME, out)  # an empty directory is fine
    (out / "stale.txt").write_text("x")
    assert convert_gguf(directory / GGUF_NAME, out, overwrite=True) == str(out)
    assert "stale.txt" not in os.listdir(out) and "config.json" in os.listdir(out)
    assert sorted(os.listdir(tmp_path)) == ["gguf-qwen3", "out"]  # no staging or set-aside directory left


def test_failed_conversion_leaves_nothing(tmp_path, monkeypatch):
    directory = model_dir(tmp_path, "llama")

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(from_gguf, "save_file", disk_full)
    with pytest.raises(OSError, match="No space left"):
        convert_gguf(directory / GGUF_NAME, tmp_path / "out")
    assert sorted(os.listdir(tmp_path)) == ["gguf-llama"]


# Hand-made GGUF bytes, for what GGUFWriter will not write.


def gguf_string(s: bytes) -> bytes:
    return struct.pack("<Q", len(s)) + s


def raw_gguf(kvs=b"", n_kv=0, tensors=b"", n_tensors=0, data=b"", magic=b"GGUF", version=3, alignment=32) -> bytes:
    head = magic + struct.pack("<IQQ", version, n_tensors, n_kv) + kvs + tensors
    return head + b"\0" * (-len(head) % alignment) + data


def tensor_info(name: bytes, dims, type_id: int, offset: int) -> bytes:
    return gguf_string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims) + \
        struct.pack("<IQ", type_id, offset)


KV_ARCH = gguf_string(b"general.architecture") + struct.pack("<I", 8) + gguf_string(b"llama")


@pytest.mark.parametrize("contents, error, pattern", [
    (b"", verl.CheckpointError, r"the magic needs 4 bytes"),
    (b"GGML" + bytes(20), verl.CheckpointError, r"not a GGUF file"),
    (raw_gguf(version=1), verl.CheckpointError, r"version 1 is not supported"),
    (raw_gguf(version=3 << 24), verl.CheckpointError, r"big-endian"),
    (raw_gguf(n_kv=2**62), verl.CheckpointError, r"kv_count 4611686018427387904"),
    (raw_gguf(KV_ARCH, 1, n_tensors=2**60), verl.CheckpointError, r"tensor_count 1152921504606846976"),
    (raw_gguf(struct.pack("<Q", 2**40), 1, data=bytes(64)), verl.CheckpointError,
     r"the key of metadata entry 0 \(1099511627776 bytes"),
    (raw_gguf(gguf_string(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2**61), 1), verl.CheckpointError,
     r"'tokenizer\.ggml\.tokens'.*2305843009213693952 strings"),
    (raw_gguf(gguf_string(b"tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 2**50), 1), verl.CheckpointError,
     r"'tokenizer\.ggml\.scores'.*FLOAT32"),
    (raw_gguf(gguf_string(b"general.name") + struct.pack("<I", 8) + struct.pack("<Q", 2**63), 1),
     verl.CheckpointError, r"'general\.name'"),
    (raw_gguf(gguf_string(b"x") + struct.pack("<I", 13), 1), verl.CheckpointError, r"'x': unknown value type 13"),
    (raw_gguf(gguf_string(b"x") + struct.pack("<I", 8) + gguf_string(b"\xff\xfe"), 1), verl.CheckpointError,
     r"'x' is not valid UTF-8"),
    (raw_gguf(KV_ARCH * 2, 2), verl.CheckpointError, r"'general\.architecture' appears twice"),
    (raw_gguf(gguf_string(b"general.alignment") + struct.pack("<II", 4, 48), 1), verl.CheckpointError,
     r"general\.alignment.*power of two"),
    (raw_gguf(tensors=tensor_info(b"w", [4] * 5, 0, 0), n_tensors=1), verl.CheckpointError, r"'w' has 5 dimensions"),
    (raw_gguf(tensors=tensor_info(b"w", [4], 99, 0), n_tensors=1, data=bytes(16)), verl.ConfigError,
     r"'w' has unknown tensor type 99"),
    (raw_gguf(tensors=tensor_info(b"w", [2**40, 2**40], 0, 0), n_tensors=1, data=bytes(64)), verl.CheckpointError,
     r"'w'.*run past the end"),
    (raw_gguf(tensors=tensor_info(b"w", [8], 0, 32), n_tensors=1, data=bytes(32)), verl.CheckpointError,
     r"'w'.*run past the end"),
    (raw_gguf(tensors=tensor_info(b"w", [8], 0, 4), n_tensors=1, data=bytes(64)), verl.CheckpointError,
     r"'w': data offset 4 is not a multiple of the alignment 32"),
    (raw_gguf(tensors=tensor_info(b"w", [40], 8, 0), n_tensors=1, data=bytes(64)), verl.CheckpointError,
     r"'w'.*not whole Q8_0 blocks"),
    (raw_gguf(tensors=tensor_info(b"w", [8], 0, 0) * 2, n_tensors=2, data=bytes(64)), verl.CheckpointError,
     r"'w' appears twice"),
])
def test_corrupt_headers(tmp_path, contents, error, pattern):
    path = tmp_path / "bad.gguf"
    path.write_bytes(contents)
    with pytest.raises(error, match=pattern) as caught:
        read_gguf(path)
    assert str(path) in str(caught.value)


def test_handmade_file_reads(tmp_path):
    # the hand-made layout above is valid GGUF when nothing is wrong with it
    path = tmp_path / "ok.gguf"
    values = np.arange(8, dtype=np.float32)
    path.write_bytes(raw_gguf(KV_ARCH, 1, tensor_info(b"w", [8], 0, 0), 1, values.tobytes()))
    f = read_gguf(path)
    assert f.metadata == {"general.architecture": "llama"} and torch.equal(f.tensor("w"), torch.from_numpy(values))


def test_truncated_and_mutated_files_raise_typed_errors(tmp_path):
    path = write_gguf(tmp_path / GGUF_NAME, "llama")
    with open(path, "rb") as f:
        good = f.read()
    tensors = read_gguf(path).tensors.values()
    header_end = min(t.offset for t in tensors)
    data_end = max(t.offset + t.nbytes for t in tensors)  # the writer pads the file's end
    bad = tmp_path / "bad.gguf"
    for cut in (3, 10, 25, 100, 5000, header_end - 10, header_end + 1, data_end - 1):
        bad.write_bytes(good[:cut])
        with pytest.raises(verl.CheckpointError, match=r"truncated|run past the end|the magic"):
            f = read_gguf(bad)
            for name in f.tensors:
                f.dequantize(name)
    # random byte changes in the header: a typed error or a file that still reads, never another exception
    rng = random.Random(0)
    for _ in range(300):
        mutated = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(4, min(header_end, 20000))] = rng.randrange(256)
        bad.write_bytes(bytes(mutated))
        try:
            f = read_gguf(bad)
            for name in f.tensors:
                f.dequantize(name)
        except (verl.CheckpointError, verl.ConfigError):
            pass


# ---- GGUF files as model paths (verl.models.gguf_checkpoint) ---------------------------------------------------------

def test_gguf_files_are_model_paths(tmp_path, monkeypatch):
    """load_model / get_actor_model / load_tokenizer / hf_tokenizer take the .gguf file (or a directory holding one and
    no config.json): converted once into $VERL_CACHE_DIR/gguf, reused after, converted again when the file changes."""
    from verl.models import gguf_checkpoint
    from verl.utils import hf_tokenizer

    monkeypatch.setenv("VERL_CACHE_DIR", str(tmp_path / "cache"))
    directory = model_dir(tmp_path, "qwen2")
    path = str(directory / GGUF_NAME)
    reference = convert_gguf(path, str(tmp_path / "explicit"))
    ids = torch.tensor([[5, 17, 42, 99, 3]])
    expected = verl.models.load_model(reference)(ids)

    assert torch.equal(verl.models.load_model(path)(ids), expected)
    entries = sorted(os.listdir(tmp_path / "cache" / "gguf"))
    assert [e for e in entries if not e.endswith(".lock")] == [os.path.basename(gguf_checkpoint.checkpoint_dir(path))]
    # Reused: no second conversion (one would fail here), for every entry point and the directory form.
    monkeypatch.setattr(from_gguf, "convert_gguf", lambda *a, **k: pytest.fail("converted twice"))
    assert torch.equal(verl.models.get_actor_model(path)(ids), expected)
    assert torch.equal(verl.models.load_model(str(directory))(ids), expected)
    text = "<|im_start|>user\nhi 42<|im_end|>"
    want = verl.load_tokenizer(reference).encode(text)
    assert verl.load_tokenizer(path).encode(text) == want
    assert hf_tokenizer(str(directory)).encode(text) == want
    monkeypatch.undo()

    # A changed file (new modification time) is converted again into a new entry.
    monkeypatch.setenv("VERL_CACHE_DIR", str(tmp_path / "cache"))
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert gguf_checkpoint.checkpoint_dir(path) != os.path.join(tmp_path, "cache", "gguf", entries[0])
    assert torch.equal(verl.models.load_model(path)(ids), expected)

    # Which file of several is meant is ambiguous; a file that is not GGUF is not taken for one.
    write_gguf(directory / "second.gguf", "qwen2")
    with pytest.raises(verl.CheckpointError, match="holds 2 GGUF files.*model.gguf, second.gguf"):
        verl.models.load_model(str(directory))
    (tmp_path / "fake.gguf").write_bytes(b"not a gguf file")
    with pytest.raises(verl.CheckpointError, match="fake.gguf' is a file, not a checkpoint directory"):
        verl.models.load_model(str(tmp_path / "fake.gguf"))


def test_trainer_keys_take_a_gguf_file(tmp_path, monkeypatch):
    """actor_rollout_ref.model.path = a .gguf file: the trainer runs on the converted checkpoint, whose directory the
    key then names (the tokenizer and the files copied into checkpoints come from it), and a GRPO step trains."""
    import math

    from verl import PPOTrainer, RLConfig

    monkeypatch.setenv("VERL_CACHE_DIR", str(tmp_path / "cache"))
    path = str(model_dir(tmp_path, "qwen2") / GGUF_NAME)
    rows = tmp_path / "train.jsonl"
    rows.write_text("".join(json.dumps({"data_source": "toy", "prompt": [{"role": "user", "content": f"Add {i} 1"}],
                                        "reward_model": {"ground_truth": str(i + 1)}}) + "\n" for i in range(4)))
    cfg = RLConfig(overrides=[
        f"actor_rollout_ref.model.path={path}", "algorithm.adv_estimator=grpo", "data.max_prompt_length=32",
        "data.max_response_length=8", "data.train_batch_size=2", "actor_rollout_ref.rollout.n=2",
        "actor_rollout_ref.actor.ppo_mini_batch_size=2", "trainer.logger=[console]", "trainer.val_before_train=false",
        "trainer.total_training_steps=1", f"trainer.default_local_dir={tmp_path}/ckpt"])
    trainer = PPOTrainer(config=cfg, reward_fn=lambda response: float(len(response)), train_dataset=str(rows))
    converted = trainer.config["actor_rollout_ref.model.path"]
    assert os.path.dirname(converted) == str(tmp_path / "cache" / "gguf")
    assert trainer.tokenizer.name_or_path == converted
    metrics = trainer.step([trainer.train_dataset[i] for i in range(2)])
    assert math.isfinite(metrics["actor/grad_norm"]) and metrics["actor/grad_norm"] > 0


def test_sft_model_path_takes_a_gguf_file(tmp_path, monkeypatch):
    """model.path = a .gguf file in the SFT trainer (and so DPO's, which shares its setup): trained from the converted
    checkpoint, whose tokenizer it loads."""
    import math

    from verl.trainer.sft_trainer import SFTTrainer

    monkeypatch.setenv("VERL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # the metrics file goes to <project>/<experiment>.jsonl under the working directory
    path = str(model_dir(tmp_path, "qwen2") / GGUF_NAME)
    rows = tmp_path / "sft.jsonl"
    rows.write_text("".join(json.dumps({"prompt": f"Add {i} 1", "response": str(i + 1)}) + "\n" for i in range(4)))
    trainer = SFTTrainer({"model": {"path": path, "enable_gradient_checkpointing": False},
                          "data": {"train_files": str(rows), "train_batch_size": 4, "micro_batch_size_per_gpu": 2,
                                   "max_length": 32},
                          "trainer": {"default_local_dir": f"{tmp_path}/ckpt", "logger": ["console"],
                                      "total_training_steps": 1, "device": "cpu"}})
    assert os.path.dirname(trainer.config["model.path"]) == str(tmp_path / "cache" / "gguf")
    assert trainer.tokenizer.encode("Add 3 1") == verl.load_tokenizer(path).encode("Add 3 1")
    trainer.fit()
    assert math.isfinite(trainer.validate(trainer.train_dataset)["val/loss"])
    assert os.path.isfile(os.path.join(trainer.hf_model_path, "tokenizer.json"))
