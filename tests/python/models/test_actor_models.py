"""The tutorials' policy constructors (issue 16): ``verl.models.HFActor(hf_model)`` gives verl-cpp's decoder with the
transformers model's weights (fp32 logits equal within 1e-4 for Qwen2 / Qwen3 / Llama / Mistral / Phi-3),
``get_actor_model`` loads a local checkpoint in transformers' ``from_pretrained`` vocabulary, and a Hub name is found in
the local cache or refused with a download hint."""


import pytest
import torch

transformers = pytest.importorskip("transformers")

import verl  # noqa: E402
from verl.models import HFActor, get_actor_model  # noqa: E402

VOCAB = 96


def hf_model(family: str, seed: int = 0):
    torch.manual_seed(seed)
    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=112, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6, initializer_range=0.1,
                  pad_token_id=0)
    config = {"qwen2": transformers.Qwen2Config, "qwen3": transformers.Qwen3Config,
              "llama": transformers.LlamaConfig, "mistral": transformers.MistralConfig,
              "phi3": transformers.Phi3Config}[family](**common)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").eval()
    with torch.no_grad():  # norms and biases away from 1 / 0 so that their copy is checked too
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_(0.2 * torch.randn(p.shape))
    return model


def max_logit_diff(ours, hf, seq_len: int = 40) -> float:
    ids = torch.randint(VOCAB, (2, seq_len), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return (ours(ids).float() - hf(input_ids=ids).logits.float()).abs().max().item()


@pytest.mark.parametrize("family", ["qwen2", "qwen3", "llama", "mistral", "phi3"])
def test_hf_actor_has_the_transformers_weights(family):
    hf = hf_model(family)
    actor = HFActor(hf)
    assert isinstance(actor, verl.models.CausalLM)
    assert actor.dtype == torch.float32 and actor.device == torch.device("cpu")
    assert max_logit_diff(actor, hf) <= 1e-4


def test_hf_actor_is_a_copy():
    hf = hf_model("qwen2")
    actor = HFActor(hf)
    with torch.no_grad():
        actor.state_dict()["model.embed_tokens.weight"].zero_()
    assert hf.model.embed_tokens.weight.abs().sum() > 0  # the transformers model keeps its weights


def test_hf_actor_from_a_checkpoint_knows_its_directory(tmp_path):
    hf = hf_model("qwen3")
    hf.save_pretrained(tmp_path)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32)
    actor = HFActor(loaded)
    assert actor.name_or_path == str(tmp_path)
    assert max_logit_diff(actor, hf) <= 1e-4
    assert HFActor(hf).name_or_path is None  # built from a config: no directory to find a tokenizer in


def test_hf_actor_refuses_what_is_not_a_transformers_model():
    with pytest.raises(verl.InvalidArgumentError, match="transformers PreTrainedModel"):
        HFActor(torch.nn.Linear(2, 2))


def test_get_actor_model_loads_a_local_checkpoint(tmp_path):
    hf = hf_model("llama")
    hf.save_pretrained(tmp_path)
    actor = get_actor_model(model_name=str(tmp_path), device_map="cpu", torch_dtype=torch.float32)
    assert actor.name_or_path == str(tmp_path)
    assert max_logit_diff(actor, hf) <= 1e-4
    bf16 = get_actor_model(model_name=tmp_path, device_map={"": "cpu"}, torch_dtype="bfloat16")
    assert bf16.dtype == torch.bfloat16
    # transformers' defaults: the checkpoint's own dtype for "auto", fp32 for None
    assert get_actor_model(tmp_path, torch_dtype="auto").dtype == torch.float32
    assert get_actor_model(tmp_path).dtype == torch.float32


def test_get_actor_model_auto_device():
    assert verl.models.actor.resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert verl.models.actor.resolve_device(0) == "cuda:0"
    assert verl.models.actor.resolve_device(None) == "cpu"


def test_hub_name_is_refused_with_a_download_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(verl.CheckpointError, match=r"does not download.*huggingface-cli download Qwen/Qwen2.5-0.5B"):
        get_actor_model(model_name="Qwen/Qwen2.5-0.5B", device_map="auto", torch_dtype="auto")
    with pytest.raises(verl.CheckpointError, match="model directory not found"):
        get_actor_model(model_name=str(tmp_path / "no" / "such" / "dir"))


def test_hub_name_in_the_local_cache_loads(tmp_path, monkeypatch):
    repo = tmp_path / "hub" / "models--org--tiny"
    snapshot = repo / "snapshots" / "abc123"
    hf = hf_model("qwen2")
    hf.save_pretrained(snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    actor = get_actor_model(model_name="org/tiny")
    assert actor.name_or_path == str(snapshot)
    assert max_logit_diff(actor, hf) <= 1e-4


@pytest.mark.parametrize("kwargs, match", [
    ({"device_map": {"model": "cpu", "lm_head": "cuda:1"}}, "one device"),
    ({"torch_dtype": "int8"}, "torch_dtype 'int8'"),
    ({"torch_dtype": torch.int32}, "not supported"),
    ({"load_in_8bit": True}, "unexpected keyword"),
])
def test_get_actor_model_bad_arguments(tmp_path, kwargs, match):
    hf_model("qwen2").save_pretrained(tmp_path)
    with pytest.raises(verl.InvalidArgumentError, match=match):
        get_actor_model(str(tmp_path), **kwargs)


def test_unsupported_architecture_is_a_config_error():
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=2)
    with pytest.raises(verl.ConfigError):
        HFActor(transformers.AutoModelForCausalLM.from_config(config))
