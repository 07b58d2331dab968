"""LoRA adapters (verl/model/lora.h) against PEFT on tiny Qwen2 / Qwen3 / Llama / Mistral / Phi-3 checkpoints (Phi-3's
fused qkv_proj / gate_up_proj adapted whole, as PEFT adapts them): the modules
target_modules / exclude_modules select, logits and adapter gradients in float64 and float32, the fresh adapter's
bit-exact no-op, disabled adapters, merging, and PEFT's adapter files both ways."""

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

import verl  # noqa: E402
from verl import _C  # noqa: E402
from verl.models.transformer import CausalLM  # noqa: E402

from test_transformer_parity import FAMILIES, hf_config, perturb_  # noqa: E402

RANK, ALPHA = 4, 8


def hf_model(family: str, dtype=torch.float32):
    torch.manual_seed(0)
    hf = transformers.AutoModelForCausalLM.from_config(hf_config(family), attn_implementation="sdpa").eval()
    perturb_(hf)
    return hf.to(dtype)


def ours_like(hf, dtype=torch.float32) -> CausalLM:
    ours = CausalLM(hf.config.to_dict())
    ours.load_state_dict({k: v.float() for k, v in hf.state_dict().items()})
    return ours.to(dtype=dtype)


def peft_selected(hf, **lora_kwargs) -> list[str]:
    model = peft.get_peft_model(hf, peft.LoraConfig(r=RANK, lora_alpha=ALPHA, **lora_kwargs))
    prefix = "base_model.model."
    return [n[len(prefix):] for n, m in model.named_modules() if isinstance(m, peft.tuners.lora.LoraLayer)]


def randomise_adapters_(model: CausalLM, seed: int = 1) -> None:
    """B is zero after add_adapters (the adapter is a no-op); give both factors values so the test sees them."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in sorted(model.adapter_state_dict().items()):
            p.copy_(0.3 * torch.randn(p.shape, generator=g, dtype=torch.float64))


def copy_adapters_to_peft_(pm, ours: CausalLM) -> None:
    own = ours.adapter_state_dict()
    with torch.no_grad():
        for name, p in pm.named_parameters():
            if ".lora_" in name:
                key = name.replace("base_model.model.", "", 1).replace(".default", "")
                p.copy_(own[key])


SELECTIONS = [
    dict(target_modules="all-linear"),
    dict(target_modules=["q_proj", "v_proj"]),
    dict(target_modules=["self_attn.o_proj", "down_proj", "model.layers.1.mlp.up_proj"]),
    dict(target_modules=r".*\.(q|k)_proj"),
    dict(target_modules=r"model\.layers\.1\..*_proj"),
    dict(target_modules="all-linear", exclude_modules=["down_proj", "model.layers.0.self_attn.k_proj"]),
    dict(target_modules=["q_proj", "gate_proj", "up_proj"], exclude_modules=r".*layers\.0\..*"),
]

# Phi-3's fused projections are one linear each, for PEFT as for verl-cpp: its selections name qkv_proj / gate_up_proj.
PHI3_FAMILIES = [f for f in FAMILIES if f.startswith("phi3")]
SEPARATE_FAMILIES = [f for f in FAMILIES if f not in PHI3_FAMILIES]
PHI3_SELECTIONS = [
    dict(target_modules="all-linear"),
    dict(target_modules=["qkv_proj", "gate_up_proj"]),
    dict(target_modules=r"model\.layers\.1\..*_proj"),
    dict(target_modules="all-linear", exclude_modules=["down_proj", "model.layers.0.self_attn.qkv_proj"]),
]
FAMILY_SELECTIONS = ([(f, s) for f in SEPARATE_FAMILIES for s in SELECTIONS] +
                     [(f, s) for f in PHI3_FAMILIES for s in PHI3_SELECTIONS])


def selection_id(value):
    return json.dumps(value) if isinstance(value, dict) else str(value)


@pytest.mark.parametrize("family, selection", FAMILY_SELECTIONS, ids=selection_id)
def test_target_and_exclude_modules_select_what_peft_selects(family, selection):
    hf = hf_model(family)
    expected = peft_selected(hf, **selection)
    ours = _C.model.lora_target_modules(json.dumps(hf.config.to_dict()), RANK, ALPHA,
                                        selection["target_modules"], selection.get("exclude_modules"))
    assert ours == expected
    model = ours_like(hf_model(family))
    assert model.add_adapters(RANK, ALPHA, **selection) == expected
    adapters = model.adapter_state_dict()
    assert sorted(adapters) == sorted([f"{m}.lora_{f}.weight" for m in expected for f in "AB"])


@pytest.mark.parametrize("target", [["lm_head"], ["embed_tokens"], ["mlp"], ["input_layernorm"], r"model\.norm"])
def test_targets_outside_the_decoder_linears_are_config_errors(target):
    model = ours_like(hf_model("qwen2"))
    with pytest.raises(verl.ConfigError, match="decoder layers' linear modules"):
        model.add_adapters(RANK, ALPHA, target_modules=target)


@pytest.mark.parametrize("kwargs, match", [
    (dict(target_modules=["q_prj"]), "selects no module"),
    (dict(target_modules="all-linear", exclude_modules=r".*"), "selects no module"),
    (dict(target_modules="(unclosed"), "not a regular expression"),
    (dict(target_modules=[1, 2]), "module names"),
])
def test_bad_selections_are_config_errors(kwargs, match):
    model = ours_like(hf_model("llama"))
    with pytest.raises(verl.ConfigError, match=match):
        model.add_adapters(RANK, ALPHA, **kwargs)


@pytest.mark.parametrize("rank, alpha", [(0, 8), (-2, 8), (4, 0), (4, float("nan"))])
def test_rank_and_alpha_must_be_positive(rank, alpha):
    with pytest.raises(verl.ConfigError, match="lora_rank|lora_alpha"):
        ours_like(hf_model("qwen2")).add_adapters(rank, alpha)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_fresh_adapter_changes_nothing_bit_for_bit_and_freezes_the_base(family):
    ours = ours_like(hf_model(family))
    ids = torch.randint(0, 96, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = ours(ids)
    names = ours.add_adapters(RANK, ALPHA, seed=7)
    with torch.no_grad():
        after = ours(ids)
    assert torch.equal(before, after)
    for name, p in ours.state_dict().items():
        assert p.requires_grad == (".lora_" in name), name
    # PEFT's initialisation: A ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform, a=sqrt(5)), B = 0.
    state = ours.adapter_state_dict()
    for name in names:
        a, b = state[f"{name}.lora_A.weight"], state[f"{name}.lora_B.weight"]
        bound = 1 / a.shape[1] ** 0.5
        assert a.abs().max() <= bound and a.abs().max() > 0.5 * bound
        assert torch.count_nonzero(b) == 0
    # The same seed draws the same A.
    again = ours_like(hf_model(family))
    again.add_adapters(RANK, ALPHA, seed=7)
    assert all(torch.equal(state[k], v) for k, v in again.adapter_state_dict().items())


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-12), (torch.float32, 2e-5)])
@pytest.mark.parametrize("family, selection",
                         [(f, s) for f in SEPARATE_FAMILIES for s in (SELECTIONS[0], SELECTIONS[5])] +
                         [(f, s) for f in PHI3_FAMILIES for s in (PHI3_SELECTIONS[0], PHI3_SELECTIONS[3])],
                         ids=selection_id)
def test_logits_and_adapter_gradients_equal_peft(family, dtype, tol, selection):
    hf = hf_model(family, dtype)
    ours = ours_like(hf, dtype)
    ours.add_adapters(RANK, ALPHA, **selection)
    randomise_adapters_(ours)
    pm = peft.get_peft_model(hf, peft.LoraConfig(r=RANK, lora_alpha=ALPHA, **selection))
    copy_adapters_to_peft_(pm, ours)

    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 96, (3, 11), generator=g)
    mask = torch.ones_like(ids)
    mask[0, :4] = 0  # left padding
    weights = torch.randn(3, 11, 96, generator=g, dtype=torch.float64).to(dtype)

    pos = (mask.cumsum(-1) - 1).clamp(min=0)  # verl's positions for left padding
    ours_logits = ours(ids, mask, pos)
    peft_logits = pm(input_ids=ids, attention_mask=mask, position_ids=pos).logits
    valid = mask.bool()
    torch.testing.assert_close(ours_logits[valid], peft_logits[valid], rtol=tol, atol=tol)
    (ours_logits[valid] * weights[valid]).sum().backward()
    (peft_logits[valid] * weights[valid]).sum().backward()

    peft_grads = {n.replace("base_model.model.", "", 1).replace(".default", ""): p.grad
                  for n, p in pm.named_parameters() if ".lora_" in n}
    ours_params = ours.adapter_state_dict()
    assert sorted(peft_grads) == sorted(ours_params)
    for name, p in ours_params.items():
        torch.testing.assert_close(p.grad, peft_grads[name], rtol=tol * 10, atol=tol * 10, msg=name)
    for name, p in ours.state_dict().items():
        if ".lora_" not in name:
            assert p.grad is None, f"{name}: the frozen base got a gradient"


@pytest.mark.parametrize("family", FAMILIES)
def test_packed_forward_and_gradient_checkpointing_carry_the_adapters(family):
    ours = ours_like(hf_model(family), torch.float64)
    ours.add_adapters(RANK, ALPHA)
    randomise_adapters_(ours)
    g = torch.Generator().manual_seed(5)
    lens = [5, 8, 3]
    seqs = [torch.randint(0, 96, (n,), generator=g) for n in lens]
    cu = torch.tensor([0, 5, 13, 16])
    packed = ours.forward_packed(torch.cat(seqs), cu)
    for s, (a, b) in zip(seqs, zip(cu[:-1], cu[1:])):
        torch.testing.assert_close(packed[a:b], ours(s.unsqueeze(0))[0], rtol=1e-12, atol=1e-12)

    def grads(checkpointing: bool):
        for p in ours.adapter_state_dict().values():
            p.grad = None
        (ours.gradient_checkpointing_enable if checkpointing else ours.gradient_checkpointing_disable)()
        ours.forward_packed(torch.cat(seqs), cu).pow(2).mean().backward()
        return {k: p.grad.clone() for k, p in ours.adapter_state_dict().items()}

    plain, recomputed = grads(False), grads(True)
    for k in plain:
        assert torch.equal(plain[k], recomputed[k]), k


@pytest.mark.parametrize("family", FAMILIES)
def test_disabled_adapters_compute_the_base_and_merging_folds_them_in(family):
    hf = hf_model(family, torch.float64)
    base = ours_like(hf, torch.float64)
    ours = ours_like(hf, torch.float64)
    targets = ["qkv_proj", "o_proj", "down_proj"] if family in PHI3_FAMILIES else ["q_proj", "o_proj", "down_proj"]
    ours.add_adapters(RANK, ALPHA, target_modules=targets)
    randomise_adapters_(ours)
    ids = torch.randint(0, 96, (2, 7), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        adapted, plain = ours(ids), base(ids)
        assert not torch.allclose(adapted, plain)
        with ours.disable_adapter():
            assert torch.equal(ours(ids), plain)
        assert torch.equal(ours(ids), adapted)

        merged_state = ours.merged_state_dict()
        assert not any(".lora_" in k for k in merged_state)
        merged = CausalLM(hf.config.to_dict()).to(dtype=torch.float64)
        merged.load_state_dict(merged_state)
        torch.testing.assert_close(merged(ids), adapted, rtol=1e-12, atol=1e-12)
        # transformers with the merged weights computes base + adapter (PEFT's merge_and_unload does the same).
        pm = peft.get_peft_model(hf, peft.LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=targets))
        copy_adapters_to_peft_(pm, ours)
        merged_hf = pm.merge_and_unload()
        torch.testing.assert_close(merged_hf(input_ids=ids).logits, adapted, rtol=1e-12, atol=1e-12)
        hf2 = hf_model(family, torch.float64)
        hf2.load_state_dict(merged_state, strict=False)
        torch.testing.assert_close(hf2(input_ids=ids).logits, adapted, rtol=1e-12, atol=1e-12)


def test_rslora_scales_by_the_square_root_of_the_rank():
    ours = ours_like(hf_model("qwen3"))
    ours.add_adapters(16, 8, use_rslora=True)
    assert ours.lora["scaling"] == pytest.approx(8 / 4)
    plain = ours_like(hf_model("qwen3"))
    plain.add_adapters(16, 8)
    assert plain.lora["scaling"] == pytest.approx(8 / 16)


@pytest.mark.parametrize("family", FAMILIES)
def test_our_adapter_files_load_in_peft_with_the_same_logits(family, tmp_path):
    hf = hf_model(family)
    ours = ours_like(hf)
    phi3 = family in PHI3_FAMILIES
    excluded = "gate_up_proj" if phi3 else "gate_proj"
    ours.add_adapters(RANK, ALPHA, target_modules="all-linear", exclude_modules=[excluded])
    randomise_adapters_(ours)
    files = ours.save_adapter(tmp_path / "adapter", base_model_name_or_path="tiny-base")
    assert sorted(p.rsplit("/", 1)[1] for p in files) == ["adapter_config.json", "adapter_model.safetensors"]
    config = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert config["r"] == RANK and config["lora_alpha"] == ALPHA and config["peft_type"] == "LORA"
    assert sorted(config["target_modules"]) == (["down_proj", "o_proj", "qkv_proj"] if phi3 else
                                                ["down_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"])

    pm = peft.PeftModel.from_pretrained(hf, tmp_path / "adapter")
    ids = torch.randint(0, 96, (2, 10), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        torch.testing.assert_close(pm(input_ids=ids).logits, ours(ids), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_peft_adapter_files_load_into_ours_with_the_same_logits(family, tmp_path):
    hf = hf_model(family)
    base = ours_like(hf)
    targets = ["qkv_proj", "gate_up_proj"] if family in PHI3_FAMILIES else ["q_proj", "v_proj", "down_proj"]
    pm = peft.get_peft_model(hf, peft.LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=targets))
    with torch.no_grad():
        g = torch.Generator().manual_seed(8)
        for n, p in pm.named_parameters():
            if ".lora_" in n:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
    pm.save_pretrained(tmp_path / "peft")
    settings = base.load_adapter(tmp_path / "peft")
    assert settings["lora_rank"] == RANK and settings["lora_alpha"] == ALPHA
    ids = torch.randint(0, 96, (2, 10), generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        torch.testing.assert_close(base(ids), pm(input_ids=ids).logits, rtol=2e-5, atol=2e-5)
    # And back: our copy of PEFT's adapter writes the same tensors PEFT wrote.
    base.save_adapter(tmp_path / "again")
    from safetensors.torch import load_file
    theirs, again = load_file(tmp_path / "peft" / "adapter_model.safetensors"), load_file(
        tmp_path / "again" / "adapter_model.safetensors")
    assert sorted(theirs) == sorted(again)
    assert all(torch.equal(theirs[k], again[k]) for k in theirs)


def write_adapter(path, config: dict, tensors: dict):
    from safetensors.torch import save_file
    path.mkdir()
    (path / "adapter_config.json").write_text(json.dumps(config))
    save_file(tensors, str(path / "adapter_model.safetensors"))


@pytest.mark.parametrize("field, value", [("use_dora", True), ("rank_pattern", {"q_proj": 8}), ("bias", "all"),
                                          ("peft_type", "IA3"), ("layers_to_transform", [0]),
                                          ("lora_dropout", 0.1)])
def test_adapter_settings_we_do_not_implement_are_config_errors(tmp_path, field, value):
    config = dict(peft_type="LORA", r=RANK, lora_alpha=ALPHA, target_modules=["q_proj"])
    config[field] = value
    write_adapter(tmp_path / "a", config, {})
    with pytest.raises(verl.ConfigError, match=field if field != "lora_dropout" else "dropout"):
        ours_like(hf_model("qwen2")).load_adapter(tmp_path / "a")


def test_bad_adapter_files_are_checkpoint_errors(tmp_path):
    model = ours_like(hf_model("qwen2"))
    with pytest.raises(verl.CheckpointError, match="does not exist"):
        model.load_adapter(tmp_path / "missing")
    config = dict(peft_type="LORA", r=RANK, lora_alpha=ALPHA, target_modules=["q_proj"])
    write_adapter(tmp_path / "embedding", config,
                  {"base_model.model.model.embed_tokens.lora_embedding_A": torch.zeros(4, 96)})
    with pytest.raises(verl.CheckpointError, match="not a LoRA factor"):
        model.load_adapter(tmp_path / "embedding")
    write_adapter(tmp_path / "short", config,
                  {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.zeros(RANK, 64)})
    with pytest.raises(verl.CheckpointError, match="missing model.layers.0.self_attn.q_proj.lora_B.weight"):
        ours_like(hf_model("qwen2")).load_adapter(tmp_path / "short")
    (tmp_path / "notjson").mkdir()
    (tmp_path / "notjson" / "adapter_config.json").write_text("{")
    with pytest.raises(verl.CheckpointError, match="adapter config"):
        model.load_adapter(tmp_path / "notjson")


def test_a_saved_adapter_replaces_the_directory_whole(tmp_path):
    ours = ours_like(hf_model("llama"))
    ours.add_adapters(RANK, ALPHA)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "stale.bin").write_text("old")
    ours.save_adapter(tmp_path / "a")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]


def test_a_value_model_adapter_carries_its_head_and_loads_in_peft(tmp_path):
    """A critic's adapters train beside a fully trained value head: our files name it as PEFT's TOKEN_CLS task does
    (modules_to_save), PEFT loads them onto the base with the same values, and ours takes them back."""
    from verl.models.transformer import ValueModel

    torch.manual_seed(0)
    cfg = hf_config("qwen2", num_labels=1)
    hf = transformers.AutoModelForTokenClassification.from_config(cfg, attn_implementation="sdpa").eval()
    perturb_(hf)
    base_state = {k: v.clone() for k, v in hf.state_dict().items()}
    ours = ValueModel(cfg.to_dict())
    ours.load_state_dict(base_state)
    ours.add_adapters(RANK, ALPHA)
    assert ours.state_dict()["score.weight"].requires_grad  # the head is trained in full
    randomise_adapters_(ours)
    with torch.no_grad():
        ours.state_dict()["score.weight"].add_(0.5)
    ours.save_adapter(tmp_path / "critic")
    config = json.loads((tmp_path / "critic" / "adapter_config.json").read_text())
    assert config["task_type"] == "TOKEN_CLS" and "score" in config["modules_to_save"]

    pm = peft.PeftModel.from_pretrained(hf, tmp_path / "critic")
    ids = torch.randint(0, 96, (2, 10), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        values = ours(ids)
        torch.testing.assert_close(pm(input_ids=ids).logits.squeeze(-1), values, rtol=2e-5, atol=2e-5)
    again = ValueModel(cfg.to_dict())
    again.load_state_dict(base_state)
    again.load_adapter(tmp_path / "critic")
    with torch.no_grad():
        torch.testing.assert_close(again(ids), values, rtol=0, atol=0)
