"""verl.models.load_model / save_pretrained against transformers' save_pretrained / from_pretrained:
identical logits both ways for Qwen2 / Qwen3 / Llama / Mistral / Phi-3 (llama3 rope; Phi-3's fused qkv_proj and
gate_up_proj under their own names), tied and untied, sharded, bf16,
the value head (AutoModelForTokenClassification), tokenizer files, errors and atomic replacement."""

import json
import os

import pytest
import torch

transformers = pytest.importorskip("transformers")

import verl  # noqa: E402
from verl.models import CausalLM, ValueModel, load_model  # noqa: E402
from verl.models.checkpoint import parse_shard_size  # noqa: E402
from verl.models.safetensors import safe_open  # noqa: E402

VOCAB = 96
FAMILIES = ["qwen2", "qwen3", "llama", "mistral", "mistral_window", "qwen2_window", "phi3", "phi3_window"]
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# A real tokenizer directory that ships with the repository (so this test never depends on fixtures).
TOKENIZER_DIR = os.path.join(REPO_ROOT, "examples", "arith", "tokenizer")


def hf_config(family, tied=False, **extra):
    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=112, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=256, tie_word_embeddings=tied,
                  initializer_range=0.1, bos_token_id=1, eos_token_id=2, pad_token_id=0, **extra)
    if family == "qwen2":
        return transformers.Qwen2Config(num_key_value_heads=2, rope_theta=10000.0, **common)
    if family == "qwen3":
        return transformers.Qwen3Config(num_key_value_heads=2, head_dim=24, rope_theta=1000000.0, **common)
    if family == "mistral":
        return transformers.MistralConfig(num_key_value_heads=2, head_dim=24, rope_theta=1000000.0,
                                          sliding_window=None, **common)
    if family == "mistral_window":  # windows shorter than the 80-token test sequences
        return transformers.MistralConfig(num_key_value_heads=2, rope_theta=10000.0, sliding_window=7, **common)
    if family == "qwen2_window":
        return transformers.Qwen2Config(num_key_value_heads=2, rope_theta=10000.0, use_sliding_window=True,
                                        sliding_window=5, max_window_layers=1, **common)
    if family == "phi3":  # fused qkv_proj / gate_up_proj, GQA 4:2, no window (Phi3Config's default)
        return transformers.Phi3Config(num_key_value_heads=2, rope_theta=10000.0, **common)
    if family == "phi3_window":  # every layer windowed (Phi-3-mini-4k's 2047, shortened)
        return transformers.Phi3Config(num_key_value_heads=2, rope_theta=10000.0, sliding_window=6, **common)
    return transformers.LlamaConfig(
        num_key_value_heads=1, rope_theta=500000.0,
        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                          original_max_position_embeddings=64), **common)


def hf_model(family, tied=False, value=False, dtype=torch.float32):
    torch.manual_seed(0)
    cfg = hf_config(family, tied, **({"num_labels": 1} if value else {}))
    auto = transformers.AutoModelForTokenClassification if value else transformers.AutoModelForCausalLM
    model = auto.from_config(cfg, attn_implementation="sdpa", dtype=dtype).eval()
    g = torch.Generator().manual_seed(123)
    with torch.no_grad():  # move norms and biases off their init so the test sees them
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_((0.2 * torch.randn(p.shape, generator=g)).to(p.dtype))
    return model


IDS = torch.randint(VOCAB, (3, 80), generator=torch.Generator().manual_seed(1))  # past llama3's 64


def hf_out(model, ids=IDS):
    with torch.no_grad():
        return model(input_ids=ids).logits


def our_out(model, ids=IDS):
    with torch.no_grad():
        return model(ids)


def load_hf(path, value=False, **kw):
    auto = transformers.AutoModelForTokenClassification if value else transformers.AutoModelForCausalLM
    model, info = auto.from_pretrained(path, attn_implementation="sdpa", output_loading_info=True, **kw)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    return model.eval()


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("tied", [False, True])
def test_round_trip_both_ways(tmp_path, family, tied):
    hf = hf_model(family, tied)
    hf.save_pretrained(tmp_path / "hf")
    ours = load_model(tmp_path / "hf")
    assert isinstance(ours, CausalLM) and ours.dtype == torch.float32
    assert ("lm_head.weight" in ours.state_dict()) == (not tied)
    ref = hf_out(hf)
    diff = (our_out(ours) - ref).abs().max().item()
    print(f"{family} tied={tied}: transformers save -> load_model fp32 max|diff| = {diff:.3e}")
    assert diff <= 1e-5

    files = ours.save_pretrained(tmp_path / "ours")
    assert sorted(os.path.basename(f) for f in files) == ["config.json", "model.safetensors"]
    back = load_hf(tmp_path / "ours")
    assert type(back).__name__ == type(hf).__name__
    assert back.config.tie_word_embeddings == tied
    assert (back.config.bos_token_id, back.config.eos_token_id) == (1, 2)
    for name, p in hf.state_dict().items():
        assert torch.equal(back.state_dict()[name], p), name
    diff = (hf_out(back) - ref).abs().max().item()
    print(f"{family} tied={tied}: save_pretrained -> transformers fp32 max|diff| = {diff:.3e}")
    assert diff == 0.0
    cfg = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert cfg["initializer_range"] == 0.1  # a key we do not model, kept from the loaded config
    if family.startswith("phi3"):
        assert "model.layers.0.self_attn.qkv_proj.weight" in ours.state_dict()
        assert "model.layers.0.mlp.gate_up_proj.weight" in ours.state_dict()
        assert back.config.sliding_window == hf.config.sliding_window
    if family == "llama":
        assert back.config.rope_parameters["rope_type"] == "llama3"
        assert back.config.rope_parameters["original_max_position_embeddings"] == 64


@pytest.mark.parametrize("family", ["qwen2", "llama", "phi3"])
def test_sharded_round_trip(tmp_path, family):
    hf = hf_model(family)
    hf.save_pretrained(tmp_path / "hf", max_shard_size="40KB")
    assert (tmp_path / "hf" / "model.safetensors.index.json").exists()
    ours = load_model(tmp_path / "hf")
    assert (our_out(ours) - hf_out(hf)).abs().max().item() <= 1e-5
    ours.save_pretrained(tmp_path / "ours", max_shard_size="40KB")
    index = json.loads((tmp_path / "ours" / "model.safetensors.index.json").read_text())
    hf_index = json.loads((tmp_path / "hf" / "model.safetensors.index.json").read_text())
    assert index["weight_map"] == hf_index["weight_map"]  # the same split as transformers
    assert len(set(index["weight_map"].values())) > 2
    back = load_hf(tmp_path / "ours")
    assert torch.equal(hf_out(back), hf_out(hf))
    assert torch.equal(our_out(load_model(tmp_path / "ours")), our_out(ours))


def test_bf16_stays_bf16(tmp_path):
    hf = hf_model("qwen3", dtype=torch.bfloat16)
    hf.save_pretrained(tmp_path / "hf")
    ours = load_model(tmp_path / "hf", dtype="auto")
    assert ours.dtype == torch.bfloat16
    ours.save_pretrained(tmp_path / "ours")
    with safe_open(tmp_path / "ours" / "model.safetensors") as f:
        assert f.get_tensor("model.norm.weight").dtype == torch.bfloat16
    cfg = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert cfg["dtype"] == cfg["torch_dtype"] == "bfloat16"
    back = load_hf(tmp_path / "ours", dtype="auto")
    assert back.dtype == torch.bfloat16
    for name, p in hf.state_dict().items():
        assert torch.equal(back.state_dict()[name], p), name
    f32 = load_model(tmp_path / "ours", dtype=torch.float32)
    assert f32.dtype == torch.float32
    assert torch.equal(f32.state_dict()["model.embed_tokens.weight"],
                       hf.state_dict()["model.embed_tokens.weight"].float())


@pytest.mark.parametrize("family", FAMILIES)
def test_value_head_round_trip(tmp_path, family):
    hf = hf_model(family, value=True)
    hf.save_pretrained(tmp_path / "hf")
    critic = load_model(tmp_path / "hf", value_head=True)
    assert isinstance(critic, ValueModel)
    ref = hf_out(hf).squeeze(-1)
    diff = (our_out(critic) - ref).abs().max().item()
    print(f"{family} value head: transformers save -> load_model max|diff| = {diff:.3e}")
    assert diff <= 1e-5
    critic.save_pretrained(tmp_path / "ours")
    cfg = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert cfg["architectures"] == [type(hf).__name__]
    back = load_hf(tmp_path / "ours", value=True)
    assert back.config.num_labels == 1
    assert torch.equal(hf_out(back), hf_out(hf))
    with pytest.raises(verl.CheckpointError, match="unexpected.*score"):
        load_model(tmp_path / "hf")  # a critic checkpoint is not a causal LM


def test_phi3_reward_model_round_trip(tmp_path):
    """A Phi3ForSequenceClassification (a reward model: bias-free score head, last-token pooling) loads as a value model
    whose last-token value is transformers' score, and saves back as Phi3ForSequenceClassification."""
    torch.manual_seed(0)
    hf = transformers.Phi3ForSequenceClassification(hf_config("phi3", num_labels=1)).eval()
    hf.save_pretrained(tmp_path / "hf")
    rm = load_model(tmp_path / "hf", value_head=True)
    assert "score.bias" not in rm.state_dict()
    ids = IDS[:, :20].clamp(min=3)  # no pad token (0): transformers pools the last token
    ref = hf_out(hf, ids)[:, 0]
    assert (our_out(rm, ids)[:, -1] - ref).abs().max().item() <= 1e-5
    rm.save_pretrained(tmp_path / "ours")
    assert json.loads((tmp_path / "ours" / "config.json").read_text())["architectures"] == [
        "Phi3ForSequenceClassification"]
    back = transformers.Phi3ForSequenceClassification.from_pretrained(tmp_path / "ours", dtype=torch.float32).eval()
    assert torch.equal(hf_out(back, ids), hf_out(hf, ids))


def test_tokenizer_files_copied(tmp_path):
    hf = hf_model("qwen3")
    hf.save_pretrained(tmp_path / "hf")
    ours = load_model(tmp_path / "hf")
    ours.save_pretrained(tmp_path / "ours", tokenizer_dir=TOKENIZER_DIR)
    for name in os.listdir(TOKENIZER_DIR):
        with open(os.path.join(TOKENIZER_DIR, name), "rb") as a, open(tmp_path / "ours" / name, "rb") as b:
            assert a.read() == b.read(), name
    # Saving again over it without tokenizer_dir keeps the tokenizer.
    ours.save_pretrained(tmp_path / "ours")
    assert (tmp_path / "ours" / "tokenizer.json").exists()


def test_errors_name_the_file(tmp_path):
    with pytest.raises(verl.CheckpointError, match="nowhere"):
        load_model(tmp_path / "nowhere")
    hf = hf_model("qwen2")
    hf.save_pretrained(tmp_path / "hf", max_shard_size="40KB")
    index = json.loads((tmp_path / "hf" / "model.safetensors.index.json").read_text())
    shard = index["weight_map"]["model.norm.weight"]
    path = tmp_path / "hf" / shard
    data = path.read_bytes()
    path.write_bytes(data[:-64])
    with pytest.raises(verl.CheckpointError, match=shard):
        load_model(tmp_path / "hf")
    path.unlink()
    with pytest.raises(verl.CheckpointError, match=shard):
        load_model(tmp_path / "hf")
    path.write_bytes(data)
    (tmp_path / "hf" / "config.json").write_text("{ not json")
    with pytest.raises(verl.CheckpointError, match="config.json"):
        load_model(tmp_path / "hf")
    (tmp_path / "hf" / "config.json").unlink()
    with pytest.raises(verl.CheckpointError, match="config.json"):
        load_model(tmp_path / "hf")
    with pytest.raises(ValueError):
        load_model(tmp_path / "hf", dtype="int8")


def test_failed_save_keeps_previous_directory(tmp_path):
    old = CausalLM(hf_config("llama"))
    old.save_pretrained(tmp_path / "ckpt", max_shard_size="40KB")
    before = {p.name: p.read_bytes() for p in (tmp_path / "ckpt").iterdir()}
    new = CausalLM(hf_config("llama"))  # other random weights
    seen = []

    def crash(path):
        seen.append(os.path.basename(path))
        if len(seen) == 3:  # config.json and two shards are complete
            raise OSError("disk full (simulated)")

    from verl.models.checkpoint import save_pretrained
    with pytest.raises(verl.CheckpointError, match="disk full"):
        save_pretrained(new, tmp_path / "ckpt", max_shard_size="40KB", on_file_written=crash)
    assert seen[0] == "config.json" and seen[2].startswith("model-0000")
    assert {p.name: p.read_bytes() for p in (tmp_path / "ckpt").iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]  # no staging directory left
    assert torch.equal(our_out(load_model(tmp_path / "ckpt")), our_out(old))
    new.save_pretrained(tmp_path / "ckpt")
    assert torch.equal(our_out(load_model(tmp_path / "ckpt")), our_out(new))


def test_parse_shard_size():
    assert parse_shard_size("5GB") == 5 * 10**9
    assert parse_shard_size("500MiB") == 500 * 2**20
    assert parse_shard_size("40KB") == 40_000
    assert parse_shard_size("8Kb") == 1000
    assert parse_shard_size(123) == 123
    for bad in ("lots", 0, -5, "0GB", 1.5):
        with pytest.raises(ValueError):
            parse_shard_size(bad)
