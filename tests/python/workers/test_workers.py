"""verl.workers against independent plain-torch references on a tiny float64 model.

* update_policy == PPO's clipped loss written out by hand, backpropagated by torch autograd through
  the model's forward, clipped with torch.nn.utils.clip_grad_norm_, stepped by torch.optim.AdamW;
* update_critic == the clipped value loss by hand, same optimizer path;
* compute_log_prob == log_softmax(logits / T) gathered; LR schedules == verl's formulas;
* mini-batch order == torch's DataLoader with verl's seeded generator; config errors name the key.
"""

import math

import pytest
import torch
from torch.utils.data import DataLoader

import verl
from verl import _C
from verl.models.transformer import CausalLM, ValueModel
from verl.workers import ActorWorker, CriticWorker

P, R, VOCAB = 5, 6, 64
MODEL = {
    "model_type": "qwen2", "vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 48,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0, "max_position_embeddings": 64, "tie_word_embeddings": False,
}


def make_model(value: bool = False):
    torch.manual_seed(0)
    return (ValueModel if value else CausalLM)(MODEL).to(dtype=torch.float64)


def rollout_batch(bs: int = 8) -> verl.DataProto:
    g = torch.Generator().manual_seed(1)
    prompt_len = torch.randint(2, P + 1, (bs,), generator=g)
    response_len = torch.randint(1, R + 1, (bs,), generator=g)
    prompt_mask = (torch.arange(P)[None] >= (P - prompt_len)[:, None]).long()
    response_mask = (torch.arange(R)[None] < response_len[:, None]).long()
    attention_mask = torch.cat([prompt_mask, response_mask], 1)
    input_ids = torch.randint(0, VOCAB, (bs, P + R), generator=g) * attention_mask
    position_ids = (attention_mask.cumsum(1) - 1).clamp(min=0)
    return verl.DataProto.from_dict({
        "input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids,
        "responses": input_ids[:, P:], "response_mask": response_mask,
    })


def reference_log_probs(model, data, temperature):
    logits = model.forward(data.batch["input_ids"], data.batch["attention_mask"], data.batch["position_ids"])
    logits = logits[:, P - 1:-1] / temperature
    lp = torch.log_softmax(logits, -1).gather(-1, data.batch["responses"][..., None])[..., 0]
    return lp * data.batch["response_mask"]


def actor_config(**extra):
    cfg = {
        "actor_rollout_ref.rollout.n": 1,
        "actor_rollout_ref.rollout.temperature": 0.8,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 3,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 8,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 4,
        "actor_rollout_ref.actor.optim.lr": 1e-2,
        "actor_rollout_ref.actor.optim.weight_decay": 0.05,
        "actor_rollout_ref.actor.optim.clip_grad": 0.5,
        "actor_rollout_ref.model.enable_gradient_checkpointing": False,
        # float64 models checked against plain torch in float64: no mixed precision (test_mixed_precision.py)
        "actor_rollout_ref.actor.fsdp_config.dtype": "float32",
        "actor_rollout_ref.ref.fsdp_config.dtype": "float32",
    }
    cfg.update(extra)
    return cfg


def test_compute_log_prob_matches_log_softmax_and_shares_the_model():
    model = make_model()
    data = rollout_batch()
    worker = ActorWorker(actor_config(), model)
    out = worker.compute_log_prob(data, calculate_entropy=True)
    with torch.no_grad():
        expected = reference_log_probs(model, data, 0.8)
    assert out.batch["old_log_probs"].dtype == torch.float64
    torch.testing.assert_close(out.batch["old_log_probs"], expected, rtol=0, atol=1e-12)
    assert out.meta_info["temperature"] == 0.8
    # The worker shares the C++ module: changing the caller's weights changes the worker's result.
    with torch.no_grad():
        model.state_dict()["lm_head.weight"].mul_(2.0)
        expected2 = reference_log_probs(model, data, 0.8)
    torch.testing.assert_close(worker.compute_log_prob(data).batch["old_log_probs"], expected2, rtol=0, atol=1e-12)


def ppo_reference_step(model, data, temperature, clip_low, clip_high, clip_c, lr, wd, clip_grad, micro):
    """One mini-batch of vanilla PPO (token-mean) by hand; returns metrics as verl reports them."""
    params = [p for _, p in model.named_parameters()]
    mask = data.batch["response_mask"].double()
    adv = data.batch["advantages"]
    old = data.batch["old_log_probs"]
    lp = reference_log_probs(model, data, temperature)
    neg_kl = torch.clamp(lp - old, -20.0, 20.0)
    ratio = torch.exp(neg_kl)
    l1 = -adv * ratio
    l2 = -adv * torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    clipped = torch.maximum(l1, l2)
    l3 = -adv * clip_c
    dual = torch.minimum(l3, clipped)
    per_token = torch.where(adv < 0, dual, clipped)
    loss = (per_token * mask).sum() / mask.sum()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(params, clip_grad)
    torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.999), weight_decay=wd).step()

    def mmean(x, rows):  # verl's masked_mean with a bool mask (so float32 for the .float() fractions)
        bool_mask = mask[rows].bool()
        return float((x[rows] * bool_mask).sum() / (bool_mask.sum() + 1e-8))

    chunks = [slice(i, i + micro) for i in range(0, mask.shape[0], micro)]
    clipfrac = [mmean(torch.gt(l2, l1).float(), c) for c in chunks]
    lower = [mmean((torch.gt(clipped, l3) & (adv < 0)).float(), c) for c in chunks]
    ppo_kl = [mmean(-neg_kl.detach(), c) for c in chunks]
    return {
        "actor/pg_loss": float(loss.detach()), "actor/loss": float(loss.detach()), "actor/grad_norm": float(grad_norm),
        "actor/pg_clipfrac": sum(clipfrac) / len(chunks), "actor/pg_clipfrac_lower": sum(lower) / len(chunks),
        "actor/ppo_kl": sum(ppo_kl) / len(chunks),
    }


def test_update_policy_equals_plain_torch_ppo_step():
    model, ref_model = make_model(), make_model()
    worker = ActorWorker(actor_config(), model)
    data = rollout_batch()
    old = worker.compute_log_prob(data).batch["old_log_probs"]
    g = torch.Generator().manual_seed(7)
    mask = data.batch["response_mask"].double()
    data.batch["old_log_probs"] = old + 0.3 * torch.randn(old.shape, generator=g, dtype=torch.float64) * mask
    data.batch["advantages"] = torch.randn(old.shape, generator=g, dtype=torch.float64) * mask

    metrics = worker.update_policy(data)
    expected = ppo_reference_step(ref_model, data, 0.8, 0.2, 0.2, 3.0, lr=1e-2, wd=0.05, clip_grad=0.5, micro=4)

    assert expected["actor/grad_norm"] > 0.5  # the clip was active
    for name, p in model.state_dict().items():
        torch.testing.assert_close(p, ref_model.state_dict()[name], rtol=0, atol=1e-10, msg=name)
    for key, value in expected.items():
        assert metrics[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    assert metrics["actor/lr"] == 1e-2
    assert 0 < metrics["actor/pg_clipfrac"] < 1


def test_update_policy_on_policy_takes_the_old_log_probs_from_its_forward():
    # one mini-batch of the 8 rows, the log-prob pass's micro-batches of 4 in the update too
    cfg = actor_config(**{"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 4})
    model, pass_model, ref_model = make_model(), make_model(), make_model()
    worker = ActorWorker(cfg, model)
    assert worker.old_log_prob_from_update_is_exact(8)
    assert not ActorWorker(actor_config(), make_model()).old_log_prob_from_update_is_exact(8)  # 3-row pass
    data = rollout_batch()
    g = torch.Generator().manual_seed(7)
    data.batch["advantages"] = torch.randn((8, R), generator=g, dtype=torch.float64) * data.batch["response_mask"]

    want = ActorWorker(cfg, pass_model).compute_log_prob(data, calculate_entropy=True)
    out, metrics = worker.update_policy_on_policy(data)
    assert torch.equal(out.batch["old_log_probs"], want.batch["old_log_probs"])
    assert torch.equal(out.batch["entropys"], want.batch["entropys"])
    # the update: plain torch's PPO step from those old log-probs (the ratio starts at exactly 1)
    data.batch["old_log_probs"] = want.batch["old_log_probs"]
    expected = ppo_reference_step(ref_model, data, 0.8, 0.2, 0.2, 3.0, lr=1e-2, wd=0.05, clip_grad=0.5, micro=4)
    for name, p in model.state_dict().items():
        torch.testing.assert_close(p, ref_model.state_dict()[name], rtol=0, atol=1e-10, msg=name)
    assert metrics["actor/pg_loss"] == pytest.approx(expected["actor/pg_loss"], rel=1e-9, abs=1e-12)
    assert metrics["actor/ppo_kl"] == 0.0
    two_mini_batches = ActorWorker(actor_config(**{"actor_rollout_ref.actor.ppo_mini_batch_size": 4}), make_model())
    fresh = rollout_batch()
    fresh.batch["advantages"] = data.batch["advantages"]
    with pytest.raises(verl.DataError, match="compute them first"):  # the second mini-batch is not on-policy
        two_mini_batches.update_policy_on_policy(fresh)


def test_update_critic_equals_plain_torch_value_step():
    model, ref_model = make_model(value=True), make_model(value=True)
    cfg = {
        "actor_rollout_ref.rollout.n": 1, "critic.ppo_mini_batch_size": 8, "critic.ppo_micro_batch_size_per_gpu": 2,
        "critic.forward_micro_batch_size_per_gpu": 3, "critic.cliprange_value": 0.2, "critic.optim.lr": 1e-2,
        "critic.model.enable_gradient_checkpointing": False, "critic.fsdp.dtype": "float32",
    }
    worker = CriticWorker(cfg, model)
    data = rollout_batch()
    values = worker.compute_values(data).batch["values"]
    with torch.no_grad():
        expected_values = ref_model.forward(data.batch["input_ids"], data.batch["attention_mask"],
                                            data.batch["position_ids"])[:, P - 1:-1] * data.batch["response_mask"]
    torch.testing.assert_close(values, expected_values, rtol=0, atol=1e-12)

    g = torch.Generator().manual_seed(3)
    mask = data.batch["response_mask"].double()
    data.batch["values"] = values + 0.3 * torch.randn(values.shape, generator=g, dtype=torch.float64) * mask
    data.batch["returns"] = torch.randn(values.shape, generator=g, dtype=torch.float64) * mask
    metrics = worker.update_critic(data)

    params = [p for _, p in ref_model.named_parameters()]
    vpreds = ref_model.forward(data.batch["input_ids"], data.batch["attention_mask"],
                               data.batch["position_ids"])[:, P - 1:-1]
    old, ret = data.batch["values"], data.batch["returns"]
    clipped = old + torch.clamp(vpreds - old, -0.2, 0.2)
    loss = 0.5 * (torch.maximum((vpreds - ret) ** 2, (clipped - ret) ** 2) * mask).sum() / mask.sum()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
    torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01).step()
    for name, p in model.state_dict().items():
        torch.testing.assert_close(p, ref_model.state_dict()[name], rtol=0, atol=1e-10, msg=name)
    assert metrics["critic/vf_loss"] == pytest.approx(float(loss.detach()), rel=1e-9)
    assert metrics["critic/grad_norm"] == pytest.approx(float(grad_norm), rel=1e-9)
    assert metrics["critic/lr"] == 1e-2


def verl_cosine(step, warmup, total, min_lr_ratio, num_cycles):
    # verl/utils/torch_functional.py get_cosine_schedule_with_warmup's lr_lambda (zero-indexed).
    if step < warmup:
        return step / max(1, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    return max(min_lr_ratio, math.cos(math.pi * num_cycles * 2.0 * progress) * (1 - min_lr_ratio) * 0.5
               + (1 + min_lr_ratio) * 0.5)


@pytest.mark.parametrize("step", [0, 1, 2, 3, 5, 8, 10, 11])
def test_schedules_match_verl_formulas(step):
    assert _C.workers.cosine_schedule_with_warmup(step, 3, 10, 0.1, 0.5) == pytest.approx(
        verl_cosine(step, 3, 10, 0.1, 0.5), abs=1e-15)
    assert _C.workers.cosine_schedule_with_warmup(step, 2, 10, 0.0, 1.0) == pytest.approx(
        verl_cosine(step, 2, 10, 0.0, 1.0), abs=1e-15)
    assert _C.workers.constant_schedule_with_warmup(step, 4) == (step / 4 if step < 4 else 1.0)


def test_worker_lr_follows_torch_lambda_lr_over_updates():
    cfg = actor_config(**{
        "actor_rollout_ref.actor.optim.lr_scheduler_type": "cosine",
        "actor_rollout_ref.actor.optim.total_training_steps": 4,
        "actor_rollout_ref.actor.optim.lr_warmup_steps": 1,
        "actor_rollout_ref.actor.optim.min_lr_ratio": 0.1,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 4,  # two optimizer steps per update, one scheduler step
    })
    worker = ActorWorker(cfg, make_model())
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: verl_cosine(s, 1, 4, 0.1, 0.5))
    assert worker.lr == pytest.approx(opt.param_groups[0]["lr"], abs=1e-18)
    data = rollout_batch()
    data.batch["old_log_probs"] = worker.compute_log_prob(data).batch["old_log_probs"]
    data.batch["advantages"] = data.batch["response_mask"].double()
    for _ in range(3):
        metrics = worker.update_policy(data)
        opt.step()
        sched.step()
        assert metrics["actor/lr"] == pytest.approx(sched.get_last_lr()[0], rel=1e-12)
    assert worker.optimizer_state()["scheduler_step_count"] == 3


@pytest.mark.parametrize("epochs,shuffle,seed", [(1, True, 42), (3, True, 7), (2, False, 42)])
def test_mini_batch_order_is_verls_dataloader(epochs, shuffle, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    loader = DataLoader(torch.arange(12), batch_size=4, collate_fn=lambda x: x, generator=g, shuffle=shuffle)
    expected = [[int(i) for i in b] for _ in range(epochs) for b in loader]
    assert _C.workers.mini_batch_rows(12, 4, epochs, seed, shuffle) == expected


def test_dynamic_batching_restores_order_and_packed_equals_padded():
    model = make_model()
    data = rollout_batch(bs=16)
    with torch.no_grad():
        expected = reference_log_probs(model, data, 0.8)
    dyn = ActorWorker(actor_config(**{"actor_rollout_ref.actor.use_dynamic_bsz": True,
                                      "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu": 24}), model)
    torch.testing.assert_close(dyn.compute_log_prob(data).batch["old_log_probs"], expected, rtol=0, atol=1e-12)
    b = data.batch
    lp_packed, ent_packed = _C.workers.response_log_probs(model._module, b["input_ids"], b["attention_mask"],
                                                          b["position_ids"], R, 0.8, True, True)
    lp_padded, ent_padded = _C.workers.response_log_probs(model._module, b["input_ids"], b["attention_mask"],
                                                          b["position_ids"], R, 0.8, True, False)
    torch.testing.assert_close(lp_packed, lp_padded, rtol=0, atol=1e-12)
    torch.testing.assert_close(ent_packed, ent_padded, rtol=0, atol=1e-12)
    # Entropy against its definition.
    with torch.no_grad():
        logits = model.forward(b["input_ids"], b["attention_mask"], b["position_ids"])[:, P - 1:-1] / 0.8
        ent = -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum(-1) * b["response_mask"]
    torch.testing.assert_close(ent_packed.detach(), ent, rtol=0, atol=1e-12)


def test_bad_config_raises_config_error_naming_the_key():
    model = make_model()
    data = rollout_batch()
    worker = ActorWorker(actor_config(**{"actor_rollout_ref.actor.ppo_mini_batch_size": 3}), model)
    data.batch["old_log_probs"] = worker.compute_log_prob(data).batch["old_log_probs"]
    data.batch["advantages"] = data.batch["response_mask"].double()
    with pytest.raises(verl.ConfigError, match="actor_rollout_ref.actor.ppo_mini_batch_size"):
        worker.update_policy(data)
    with pytest.raises(verl.ConfigError, match="policy_loss.loss_mode"):
        ActorWorker(actor_config(**{"actor_rollout_ref.actor.policy_loss.loss_mode": "nope"}), model)
    with pytest.raises(ValueError, match="ValueModel"):
        CriticWorker({}, model)


def test_optimizer_checkpoint_resumes_the_same_update(tmp_path):
    cfg = actor_config(**{"actor_rollout_ref.actor.optim.lr_warmup_steps": 3})
    model_a, model_b = make_model(), make_model()
    a = ActorWorker(cfg, model_a)
    data = rollout_batch()
    data.batch["old_log_probs"] = a.compute_log_prob(data).batch["old_log_probs"]
    data.batch["advantages"] = torch.linspace(-1, 1, data.batch["response_mask"].numel(),
                                              dtype=torch.float64).view_as(data.batch["old_log_probs"])
    a.update_policy(data)
    a.save_optimizer(tmp_path / "optim.pt")
    model_b.load_state_dict(model_a.state_dict())
    b = ActorWorker(cfg, model_b)
    b.load_optimizer(tmp_path / "optim.pt")
    assert b.optimizer_state()["scheduler_step_count"] == 1
    assert b.lr == a.lr
    a.update_policy(data)
    b.update_policy(data)
    for name, p in model_a.state_dict().items():
        assert torch.equal(p, model_b.state_dict()[name]), name
    with pytest.raises(verl.CheckpointError):
        b.load_optimizer(tmp_path / "missing.pt")


def test_workers_accept_a_loaded_verl_config():
    cfg = verl.load_config(overrides=[
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
        "actor_rollout_ref.actor.entropy_coeff=0.01",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
    ])
    model = make_model()
    data = rollout_batch()
    actor = ActorWorker(cfg, model)
    ref = ActorWorker(cfg, model, role="ref")
    assert ref.role == "ref"
    torch.testing.assert_close(ref.compute_ref_log_prob(data).batch["ref_log_prob"],
                               actor.compute_log_prob(data).batch["old_log_probs"], rtol=0, atol=1e-12)
