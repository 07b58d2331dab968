"""verl's mixed precision through the Python workers (the C++ side: tests/cpp/workers/test_mixed_precision.cpp).

* With verl's default (fsdp_config.dtype = bfloat16 over an fp32 model) the worker's passes compute in bf16: its log-probs
  equal a plain-torch bf16 copy's, not the fp32 model's, and follow in-place edits of the caller's fp32 weights;
* at lr 1e-6 one update moves the fp32 weights; a pure bf16 model loses it and the worker warns on stderr;
* float32 turns mixed precision off (the fp32 model's own log-probs).
"""

import torch

import verl
from verl import _C
from verl.models.transformer import CausalLM
from verl.workers import ActorWorker

P, R, VOCAB = 5, 6, 64
MODEL = {
    "model_type": "qwen2", "vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 48,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0, "max_position_embeddings": 64, "tie_word_embeddings": False,
}


def make_model(dtype=torch.float32):
    """transformers' initialisation (normal(0, 0.02), norms at 1): weights of a real checkpoint's magnitude."""
    torch.manual_seed(0)
    model = CausalLM(MODEL)
    with torch.no_grad():
        for name, p in model.state_dict().items():
            p.fill_(1.0) if name.endswith("norm.weight") else p.normal_(0.0, 0.02)
    return model.to(dtype=dtype)


def rollout_batch(bs: int = 8) -> verl.DataProto:
    g = torch.Generator().manual_seed(1)
    prompt_len = torch.randint(2, P + 1, (bs,), generator=g)
    response_len = torch.randint(1, R + 1, (bs,), generator=g)
    prompt_mask = (torch.arange(P)[None] >= (P - prompt_len)[:, None]).long()
    response_mask = (torch.arange(R)[None] < response_len[:, None]).long()
    attention_mask = torch.cat([prompt_mask, response_mask], 1)
    input_ids = torch.randint(0, VOCAB, (bs, P + R), generator=g) * attention_mask
    return verl.DataProto.from_dict({
        "input_ids": input_ids, "attention_mask": attention_mask,
        "position_ids": (attention_mask.cumsum(1) - 1).clamp(min=0),
        "responses": input_ids[:, P:], "response_mask": response_mask,
    })


def packed_log_probs(model, data):
    """The workers' packed response log-probs (verl._C.workers.response_log_probs) of `model` itself."""
    b = data.batch
    lp, _ = _C.workers.response_log_probs(model._module, b["input_ids"], b["attention_mask"], b["position_ids"], R,
                                          1.0, False, True)
    return lp.float()


def log_probs_of(model, data):
    with torch.no_grad():
        logits = model.forward(data.batch["input_ids"], data.batch["attention_mask"], data.batch["position_ids"])
    lp = torch.log_softmax(logits[:, P - 1:-1].float(), -1).gather(-1, data.batch["responses"][..., None])[..., 0]
    return lp * data.batch["response_mask"]


def actor_config(lr=1e-6, **extra):
    cfg = {
        "actor_rollout_ref.rollout.n": 1,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 8,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 8,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 4,
        "actor_rollout_ref.actor.optim.lr": lr,
    }
    cfg.update(extra)
    return cfg


def bf16_copy(model):
    copy = CausalLM(MODEL).to(dtype=torch.bfloat16)
    copy.load_state_dict(model.state_dict())
    return copy


def test_verls_default_computes_in_bf16_over_the_fp32_weights():
    model = make_model()
    data = rollout_batch()
    worker = ActorWorker(actor_config(**{"actor_rollout_ref.actor.fsdp_config.dtype": "bfloat16"}), model)
    got = worker.compute_log_prob(data).batch["old_log_probs"]
    assert got.dtype == torch.float32
    # exactly an independent bf16 model's (built here from the same weights, same packed pass), not the fp32 one's
    assert torch.equal(got, packed_log_probs(bf16_copy(model), data))
    assert (got - packed_log_probs(model, data)).abs().max() > 1e-4
    # The caller's fp32 weights stay the master: an in-place edit reaches the bf16 copy before the next pass.
    with torch.no_grad():
        model.state_dict()["lm_head.weight"].mul_(2.0)
    again = worker.compute_log_prob(data).batch["old_log_probs"]
    assert torch.equal(again, packed_log_probs(bf16_copy(model), data))
    assert not torch.equal(again, got)

    off = ActorWorker(actor_config(**{"actor_rollout_ref.actor.fsdp_config.dtype": "float32"}), model)
    torch.testing.assert_close(off.compute_log_prob(data).batch["old_log_probs"], log_probs_of(model, data),
                               rtol=0, atol=1e-5)


def training_batch(worker):
    data = rollout_batch()
    old = worker.compute_log_prob(data).batch["old_log_probs"]
    data.batch["old_log_probs"] = old
    data.batch["advantages"] = torch.randn(old.shape, generator=torch.Generator().manual_seed(2)) * \
        data.batch["response_mask"]
    return data


def fraction_changed(before, model):
    after = model.state_dict()
    changed = sum(int((after[k] != v).sum()) for k, v in before.items())
    return changed / sum(v.numel() for v in before.values())


def test_lr_1e6_moves_fp32_master_weights_and_pure_bf16_warns(capfd):
    mixed, pure = make_model(), make_model(torch.bfloat16)
    mixed_worker = ActorWorker(actor_config(**{"actor_rollout_ref.actor.fsdp_config.dtype": "bfloat16"}), mixed)
    assert "WARNING" not in capfd.readouterr().err
    pure_worker = ActorWorker(actor_config(), pure)
    err = capfd.readouterr().err
    assert "actor_rollout_ref.actor.fsdp_config.model_dtype" in err and "lost" in err
    data = training_batch(mixed_worker)
    before_mixed = {k: v.clone() for k, v in mixed.state_dict().items()}
    before_pure = {k: v.clone() for k, v in pure.state_dict().items()}
    mixed_worker.update_policy(data)
    pure_worker.update_policy(data)
    # AdamW's first step moves each weight by ~1e-6: representable in fp32, below half of bf16's spacing for all
    # but the smallest weights.
    assert fraction_changed(before_mixed, mixed) > 0.95
    assert fraction_changed(before_pure, pure) < 0.03
    assert mixed.state_dict()["lm_head.weight"].dtype == torch.float32
