"""verl.models.transformer against transformers' Qwen2 / Qwen3 / Llama / Mistral / Phi-3 with the same weights:
fp32 logits, bf16 argmax, left padding, packing, decoding in the rollout engine, the value head, tied
embeddings."""

import pytest
import torch

transformers = pytest.importorskip("transformers")

import verl  # noqa: E402
from verl.models.transformer import CausalLM, ValueModel, load_model_config  # noqa: E402

VOCAB = 96


def hf_config(family: str, tied: bool = False, vocab: int = VOCAB, **extra):
    common = dict(vocab_size=vocab, hidden_size=64, intermediate_size=112, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=256, rms_norm_eps=1e-6,
                  tie_word_embeddings=tied, initializer_range=0.1, pad_token_id=0, **extra)
    if family == "qwen2":  # q/k/v biases, GQA 4:2
        return transformers.Qwen2Config(num_key_value_heads=2, rope_theta=10000.0, **common)
    if family == "qwen3":  # q/k norm, explicit head_dim != hidden / heads
        return transformers.Qwen3Config(num_key_value_heads=2, head_dim=24, rope_theta=1000000.0, **common)
    if family == "mistral":  # Llama's decoder under MistralConfig: no window (null), explicit head_dim (as NeMo)
        return transformers.MistralConfig(num_key_value_heads=2, head_dim=24, rope_theta=1000000.0,
                                          sliding_window=None, **common)
    # Sliding windows shorter than the tests' sequences (up to 80 tokens, decoding past 9-token prompts):
    if family == "mistral_window":  # Mistral 7B v0.1's form: every layer windowed
        return transformers.MistralConfig(num_key_value_heads=2, rope_theta=10000.0, sliding_window=5, **common)
    if family == "qwen2_window":  # Qwen2's use_sliding_window: the layers from max_window_layers on
        return transformers.Qwen2Config(num_key_value_heads=2, rope_theta=10000.0, use_sliding_window=True,
                                        sliding_window=6, max_window_layers=1, **common)
    if family == "qwen3_window":  # transformers 5's layer_types, the windowed layer first
        return transformers.Qwen3Config(num_key_value_heads=2, head_dim=24, rope_theta=1000000.0,
                                        use_sliding_window=True, sliding_window=4,
                                        layer_types=["sliding_attention", "full_attention"], **common)
    if family == "phi3":  # fused qkv_proj ([q; k; v]) and gate_up_proj ([gate; up]), GQA 4:2, no window
        return transformers.Phi3Config(num_key_value_heads=2, rope_theta=10000.0, bos_token_id=1, eos_token_id=2,
                                       **common)
    if family == "phi3_window":  # Phi-3-mini-4k's form (sliding_window 2047 on every layer), shortened
        return transformers.Phi3Config(num_key_value_heads=2, rope_theta=10000.0, sliding_window=5, bos_token_id=1,
                                       eos_token_id=2, **common)
    if family == "llama":  # llama3 rope scaling (original context short enough to hit all bands), GQA 4:1
        return transformers.LlamaConfig(
            num_key_value_heads=1, rope_theta=500000.0,
            rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                              original_max_position_embeddings=64),
            **common)
    raise ValueError(family)


def perturb_(model: torch.nn.Module) -> None:
    """HF initialises norms to 1 and biases to 0; move them so the test sees their use."""
    g = torch.Generator().manual_seed(123)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_(0.2 * torch.randn(p.shape, generator=g))


def make_pair(family: str, tied: bool = False, value: bool = False):
    torch.manual_seed(0)
    cfg = hf_config(family, tied, **({"num_labels": 1} if value else {}))
    auto = transformers.AutoModelForTokenClassification if value else transformers.AutoModelForCausalLM
    hf = auto.from_config(cfg, attn_implementation="sdpa").eval()
    perturb_(hf)
    ours = (ValueModel if value else CausalLM)(cfg.to_dict())
    ours.load_state_dict(hf.state_dict())
    return hf, ours


def hf_logits(hf, ids, mask=None, pos=None):
    with torch.no_grad():
        return hf(input_ids=ids, attention_mask=mask, position_ids=pos).logits


FAMILIES = ["qwen2", "qwen3", "llama", "mistral", "mistral_window", "qwen2_window", "qwen3_window", "phi3",
            "phi3_window"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("tied", [False, True])
def test_fp32_logits_match(family, tied):
    hf, ours = make_pair(family, tied)
    names = set(ours.state_dict())
    assert ("lm_head.weight" in names) == (not tied)
    ids = torch.randint(VOCAB, (3, 80), generator=torch.Generator().manual_seed(1))  # past original ctx 64
    with torch.no_grad():
        diff = (ours(ids) - hf_logits(hf, ids)).abs().max().item()
    print(f"{family} tied={tied} fp32 max|diff| = {diff:.3e}")
    assert diff <= 1e-4


def hf_bf16(hf):
    """The bf16 transformers model as from_pretrained(dtype=bfloat16) builds it: weights in bf16,
    RoPE inv_freq computed in float32 (hf.to(bfloat16) would round that buffer to bf16 too)."""
    out = transformers.AutoModelForCausalLM.from_config(hf.config, attn_implementation="sdpa", dtype=torch.bfloat16)
    out.eval()
    out.load_state_dict(hf.state_dict())
    assert out.model.rotary_emb.inv_freq.dtype == torch.float32
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_bf16_argmax_agrees(family):
    hf, ours = make_pair(family)
    hb = hf_bf16(hf)
    ours.to(dtype=torch.bfloat16)
    assert ours.dtype == torch.bfloat16
    ids = torch.randint(VOCAB, (4, 64), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        a, b = ours(ids), hf_logits(hb, ids)
    assert a.dtype == torch.bfloat16
    agree = (a.argmax(-1) == b.argmax(-1)).float().mean().item()
    print(f"{family} bf16 argmax agreement = {agree:.4f}, max|diff| = {(a.float() - b.float()).abs().max():.3e}")
    assert agree >= 0.99


def left_padded(seqs, pad=0):
    seq = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), seq), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), seq), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, seq - len(s):] = s
        mask[i, seq - len(s):] = 1
    return ids, mask


def random_seqs(lengths, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(1, VOCAB, (n,), generator=g) for n in lengths]


@pytest.mark.parametrize("family", FAMILIES)
def test_left_padding_and_packing(family):
    hf, ours = make_pair(family)
    lengths = [7, 20, 1, 13]
    seqs = random_seqs(lengths, 3)
    ids, mask = left_padded(seqs)
    cu = torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist())
    with torch.no_grad():
        padded = ours(ids, mask)
        packed = ours.forward_packed(torch.cat(seqs), cu)
        assert packed.shape == (sum(lengths), VOCAB)
        assert torch.isfinite(padded).all()
        # HF on the same left-padded batch with verl's position ids.
        pos = (mask.cumsum(1) - 1).clamp(min=0)
        hf_padded = hf_logits(hf, ids, mask, pos)
        worst = 0.0
        for i, s in enumerate(seqs):
            n = len(s)
            alone = ours(s[None])[0]
            worst = max(worst, (alone - hf_logits(hf, s[None])[0]).abs().max().item())
            torch.testing.assert_close(padded[i, -n:], alone, atol=1e-5, rtol=0)
            torch.testing.assert_close(packed[cu[i]:cu[i + 1]], alone, atol=1e-5, rtol=0)
            torch.testing.assert_close(padded[i, -n:], hf_padded[i, -n:], atol=1e-4, rtol=0)
    assert worst <= 1e-4


@pytest.mark.parametrize("family", FAMILIES)
def test_engine_decode_matches_full_forward(family):
    """Incremental decoding runs in the rollout engine (verl.rollout.LLM: paged KV cache, the 9-token prompt
    prefilled in chunks, prompts at different stages in one forward). Each generated token's log-prob -- the
    log_softmax of the logits the engine computed for that step from its cache -- equals the one from our full
    forward and from transformers' full forward of the sequence so far."""
    from verl.rollout import LLM, SamplingParams

    hf, ours = make_pair(family)
    prompts = [s.tolist() for s in random_seqs([5, 9, 2], 4)]
    steps = 6
    llm = LLM(ours, block_size=4, max_num_batched_tokens=8)
    outs = llm.generate(prompt_token_ids=prompts,
                        sampling_params=SamplingParams(temperature=1.0, max_tokens=steps, seed=5, ignore_eos=True))
    for p, out in zip(prompts, outs):
        c = out.outputs[0]
        assert len(c.token_ids) == len(c.logprobs) == steps
        full = torch.tensor([p + c.token_ids])
        with torch.no_grad():
            ours_lp = torch.log_softmax(ours(full)[0, len(p) - 1:-1], -1)
            hf_lp = torch.log_softmax(hf_logits(hf, full)[0, len(p) - 1:-1], -1)
        chosen = torch.tensor(c.token_ids)[:, None]
        got = torch.tensor(c.logprobs)
        torch.testing.assert_close(got, ours_lp.gather(1, chosen)[:, 0], atol=1e-5, rtol=0)
        torch.testing.assert_close(got, hf_lp.gather(1, chosen)[:, 0], atol=1e-4, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_value_head_matches_token_classification(family):
    hf, ours = make_pair(family, value=True)
    assert {"score.weight", "score.bias"} <= set(ours.state_dict())
    assert "lm_head.weight" not in ours.state_dict()
    ids, mask = left_padded(random_seqs([6, 11], 6))
    pos = (mask.cumsum(1) - 1).clamp(min=0)
    with torch.no_grad():
        values = ours(ids, mask)
        ref = hf(input_ids=ids, attention_mask=mask, position_ids=pos).logits.squeeze(-1)
    assert values.shape == ids.shape
    diff = (values - ref)[mask.bool()].abs().max().item()
    print(f"{family} value head max|diff| = {diff:.3e}")
    assert diff <= 1e-4


@pytest.mark.parametrize("family", ["qwen3", "phi3"])
def test_gradients_and_checkpointing(family):
    hf, ours = make_pair(family)
    ids = torch.randint(VOCAB, (2, 16), generator=torch.Generator().manual_seed(7))
    ours(ids).logsumexp(-1).mean().backward()
    ref = hf(input_ids=ids).logits.logsumexp(-1).mean()
    ref.backward()
    hf_grads = {n: p.grad for n, p in hf.named_parameters()}
    grads = {}
    for name, p in ours.named_parameters():
        torch.testing.assert_close(p.grad, hf_grads[name], atol=1e-5, rtol=1e-4)
        grads[name] = p.grad.clone()
        p.grad = None
    ours.gradient_checkpointing_enable()
    ours(ids).logsumexp(-1).mean().backward()
    for name, p in ours.named_parameters():
        torch.testing.assert_close(p.grad, grads[name], atol=1e-6, rtol=1e-5)


def test_errors():
    hf, ours = make_pair("qwen2")
    state = hf.state_dict()
    state.pop("model.norm.weight")
    state["extra.weight"] = torch.zeros(1)
    with pytest.raises(verl.CheckpointError, match=r"missing: \[model.norm.weight\].*unexpected: \[extra.weight\]"):
        ours.load_state_dict(state)
    with pytest.raises(verl.ConfigError, match="model_type"):
        CausalLM({"model_type": "gpt2", "vocab_size": 8})
    with pytest.raises(verl.ConfigError, match="hidden_size"):
        load_model_config({"model_type": "llama", "vocab_size": 8})
    # Mistral with a window shorter than its context (Mistral 7B v0.1; MistralConfig's default 4096): refused by name.
    # Sliding windows as transformers reads them: Mistral's absent key is its 4096, null none; Qwen's layer_types.
    mistral = {k: v for k, v in hf_config("mistral").to_dict().items() if k not in ("sliding_window", "layer_types")}
    assert load_model_config(mistral)["sliding_window"] == 4096
    assert load_model_config({**mistral, "sliding_window": None})["sliding_window"] is None
    qwen = load_model_config(hf_config("qwen2_window").to_dict())
    assert qwen["use_sliding_window"] and qwen["layer_types"] == ["full_attention", "sliding_attention"]
    assert not load_model_config(hf_config("qwen2").to_dict())["use_sliding_window"]
    with pytest.raises(verl.ConfigError, match=r"layer_types\[1\] is \"chunked_attention\""):
        CausalLM({**hf_config("qwen3_window").to_dict(), "layer_types": ["full_attention", "chunked_attention"]})
    with pytest.raises(verl.ConfigError, match="one entry per layer"):
        CausalLM({**hf_config("qwen3_window").to_dict(), "layer_types": ["full_attention"]})
    cfg = load_model_config(hf_config("llama").to_dict())
    assert cfg["rope_scaling"]["rope_type"] == "llama3"
    # Our config.json loads back into transformers as the same architecture.
    back = transformers.AutoConfig.for_model(**{k: v for k, v in cfg.items() if k != "architectures"})
    assert back.num_key_value_heads == 1 and back.head_dim == 16


def test_phi3_config():
    """Phi-3 as Phi3Config reads it: fused projections under transformers' names, no window unless sliding_window,
    RMSNorm eps 1e-5 by default; what verl-cpp does not implement (partial RoPE, longrope, dropout) is refused by
    name."""
    cfg = hf_config("phi3").to_dict()
    names = set(CausalLM(cfg).state_dict())
    assert {"model.layers.1.self_attn.qkv_proj.weight", "model.layers.1.mlp.gate_up_proj.weight"} <= names
    assert not any(n.endswith(("q_proj.weight", ".gate_proj.weight", ".up_proj.weight")) for n in names)
    assert tuple(CausalLM(cfg).state_dict()["model.layers.0.self_attn.qkv_proj.weight"].shape) == (64 + 2 * 32, 64)
    bare = {k: v for k, v in cfg.items() if k not in ("sliding_window", "rms_norm_eps", "max_position_embeddings")}
    read = load_model_config(bare)
    assert read["sliding_window"] is None and read["rms_norm_eps"] == 1e-5 and read["max_position_embeddings"] == 4096
    assert read["architectures"] == ["Phi3ForCausalLM"]
    assert load_model_config(hf_config("phi3_window").to_dict())["sliding_window"] == 5
    for key in ("resid_pdrop", "embd_pdrop", "attention_dropout"):
        with pytest.raises(verl.ConfigError, match=f"{key} = 0.1 is not supported"):
            CausalLM({**cfg, key: 0.1})
    with pytest.raises(verl.ConfigError, match=r"rope_parameters.partial_rotary_factor = 0.5"):
        CausalLM({**cfg, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5}})
    with pytest.raises(verl.ConfigError, match=r"^.*partial_rotary_factor = 0.75"):
        CausalLM({**cfg, "partial_rotary_factor": 0.75})
    longrope = {"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
                "original_max_position_embeddings": 64}
    for field in ("rope_parameters", "rope_scaling"):
        with pytest.raises(verl.ConfigError, match=rf"{field}.rope_type \"longrope\" .*not supported yet"):
            CausalLM({**cfg, field: longrope})
    with pytest.raises(verl.ConfigError, match=r"rope_scaling.rope_type \"su\""):  # Phi-3-mini-128k's spelling
        CausalLM({**cfg, "rope_scaling": {**longrope, "type": "su", "rope_type": None}})
    # Our config.json is a Phi3Config transformers builds the same model from.
    back = transformers.AutoConfig.for_model(**{k: v for k, v in load_model_config(cfg).items()
                                                if k != "architectures"})
    assert type(back).__name__ == "Phi3Config" and back.sliding_window is None and back.num_key_value_heads == 2
