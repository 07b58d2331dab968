"""verl.trainer.ppo.core_algos: verl's API on libverl, checked against independent float64 formulas."""

from collections import defaultdict

import numpy as np
import pytest
import torch

import verl
from verl import _C
from verl.trainer.ppo import core_algos
from verl.utils import torch_functional as verl_F

F64 = torch.float64


def grouped_batch(seed=0, groups=4, n=3, length=6):
    g = torch.Generator().manual_seed(seed)
    bs = groups * n
    scores = torch.randn(bs, generator=g, dtype=F64)
    lengths = torch.randint(1, length + 1, (bs,), generator=g)
    mask = (torch.arange(length)[None, :] < lengths[:, None]).to(F64)
    rewards = torch.zeros(bs, length, dtype=F64)
    rewards[torch.arange(bs), lengths - 1] = scores
    uids = np.array([f"uid-{i // n}" for i in range(bs)], dtype=object)
    perm = torch.randperm(bs, generator=g)  # groups interleaved, as after shuffling
    return rewards[perm], mask[perm], uids[perm.numpy()], scores[perm]


def reference_grpo(scores, uids, eps=1e-6, norm=True):
    by_uid = defaultdict(list)
    for s, u in zip(scores.tolist(), uids):
        by_uid[u].append(s)
    out = []
    for s, u in zip(scores.tolist(), uids):
        group = np.array(by_uid[u])
        mean = group.mean() if len(group) > 1 else 0.0
        std = group.std(ddof=1) if len(group) > 1 else 1.0
        out.append((s - mean) / (std + eps) if norm else s - mean)
    return torch.tensor(out, dtype=F64)


@pytest.mark.parametrize("norm", [True, False])
def test_grpo_against_reference_with_uid_strings(norm):
    rewards, mask, uids, scores = grouped_batch()
    adv, ret = core_algos.compute_grpo_outcome_advantage(rewards, mask, uids, norm_adv_by_std_in_grpo=norm)
    expected = reference_grpo(scores, uids, norm=norm)[:, None] * mask
    assert torch.allclose(adv, expected, atol=1e-10, rtol=0)
    assert torch.equal(adv, ret)


def test_grpo_config_overrides_argument_as_verl_does():
    rewards, mask, uids, scores = grouped_batch(1)
    adv, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, uids, config={"norm_adv_by_std_in_grpo": False})
    assert torch.allclose(adv, reference_grpo(scores, uids, norm=False)[:, None] * mask, atol=1e-10, rtol=0)


def test_index_forms_agree():
    rewards, mask, uids, _ = grouped_batch(2)
    ints = np.array([int(u.split("-")[1]) for u in uids])
    a = core_algos.compute_rloo_outcome_advantage(rewards, mask, uids)[0]
    b = core_algos.compute_rloo_outcome_advantage(rewards, mask, torch.from_numpy(ints))[0]
    c = core_algos.compute_rloo_outcome_advantage(rewards, mask, ints)[0]
    d = core_algos.compute_rloo_outcome_advantage(rewards, mask, list(uids))[0]
    assert torch.equal(a, b) and torch.equal(a, c) and torch.equal(a, d)


def test_vectorized_variants_equal_loop_variants():
    rewards, mask, uids, _ = grouped_batch(3)
    g1 = core_algos.compute_grpo_outcome_advantage(rewards, mask, uids)[0]
    g2 = core_algos.compute_grpo_vectorized_outcome_advantage(rewards, mask, uids)[0]
    assert torch.allclose(g1, g2, atol=1e-12, rtol=0)
    r1 = core_algos.compute_rloo_outcome_advantage(rewards, mask, uids)[0]
    r2 = core_algos.compute_rloo_vectorized_outcome_advantage(rewards, mask, uids)[0]
    assert torch.allclose(r1, r2, atol=1e-12, rtol=0)


def test_rloo_against_leave_one_out_formula():
    rewards, mask, uids, scores = grouped_batch(4, n=4)
    adv, _ = core_algos.compute_rloo_outcome_advantage(rewards, mask, uids)
    expected = []
    for i, u in enumerate(uids):
        others = [scores[j].item() for j in range(len(uids)) if uids[j] == u and j != i]
        expected.append(scores[i].item() - sum(others) / len(others))
    assert torch.allclose(adv, torch.tensor(expected, dtype=F64)[:, None] * mask, atol=1e-10, rtol=0)


def test_gae_against_reverse_recursion():
    g = torch.Generator().manual_seed(5)
    rewards = torch.randn(3, 5, generator=g, dtype=F64)
    values = torch.randn(3, 5, generator=g, dtype=F64)
    mask = torch.ones(3, 5, dtype=F64)
    gamma, lam = 0.9, 0.8
    adv, ret = core_algos.compute_gae_advantage_return(rewards, values, mask, gamma=gamma, lam=lam)
    expected = torch.zeros_like(rewards)
    for b in range(3):
        last = 0.0
        for t in reversed(range(5)):
            next_v = values[b, t + 1].item() if t + 1 < 5 else 0.0
            delta = rewards[b, t].item() + gamma * next_v - values[b, t].item()
            last = delta + gamma * lam * last
            expected[b, t] = last
    assert torch.allclose(ret, expected + values, atol=1e-10, rtol=0)
    assert torch.allclose(adv, verl_F.masked_whiten(expected, mask), atol=1e-10, rtol=0)


def test_reinforce_plus_plus_needs_config_gamma():
    rewards, mask, _, _ = grouped_batch(6)
    with pytest.raises(ValueError, match="config"):
        core_algos.compute_reinforce_plus_plus_outcome_advantage(rewards, mask)
    adv, _ = core_algos.compute_reinforce_plus_plus_outcome_advantage(rewards, mask, config=verl.Config().algorithm)
    assert adv.shape == rewards.shape


def test_every_builtin_estimator_is_registered_and_runs():
    rewards, mask, uids, _ = grouped_batch(7)
    values = torch.randn_like(rewards)
    baselines = torch.randn(rewards.shape[0], dtype=F64)
    cfg = verl.Config().algorithm
    for est in core_algos.AdvantageEstimator:
        fn = core_algos.get_adv_estimator_fn(est)
        assert core_algos.get_adv_estimator_fn(est.value) is fn
        kwargs = {"token_level_rewards": rewards, "response_mask": mask}
        if est is core_algos.AdvantageEstimator.GAE:
            kwargs.update(values=values, gamma=1.0, lam=0.95)
        elif est is core_algos.AdvantageEstimator.REMAX:
            kwargs.update(reward_baselines=baselines, config=cfg)
        elif est is core_algos.AdvantageEstimator.REINFORCE_PLUS_PLUS:
            kwargs.update(config=cfg)
        elif est.value in ("optimal_token_baseline", "tir_optimal_token_baseline"):
            kwargs.update(index=uids, old_log_probs=-torch.rand_like(rewards), sum_pi_squared=torch.rand_like(rewards))
        else:
            kwargs.update(index=uids, config=cfg)
        adv, ret = fn(**kwargs)
        assert adv.shape == rewards.shape and torch.isfinite(adv).all(), est
    # the C++ trainer runs every estimator but those whose inputs it does not produce yet
    cpp_names = set(_C.algo.adv_estimator_names())
    assert cpp_names >= {e.value for e in core_algos.AdvantageEstimator} - core_algos.PYTHON_ONLY_ESTIMATORS
    assert not cpp_names & core_algos.PYTHON_ONLY_ESTIMATORS


def test_registry_semantics():
    def my_est(token_level_rewards, response_mask, index, config=None):
        return token_level_rewards * 2, token_level_rewards

    core_algos.register_adv_est("py_double")(my_est)
    core_algos.register_adv_est("py_double")(my_est)  # the same function again is fine
    assert core_algos.get_adv_estimator_fn("py_double") is my_est
    with pytest.raises(ValueError, match="already been registered"):
        core_algos.register_adv_est("py_double")(lambda **kw: None)
    with pytest.raises(ValueError, match="already been registered"):
        core_algos.register_adv_est("grpo")(my_est)
    with pytest.raises(ValueError, match="grpo"):
        core_algos.get_adv_estimator_fn("no_such_estimator")
    with pytest.raises(verl.InvalidArgumentError, match="grpo"):
        _C.algo.run_adv_estimator("no_such_estimator", torch.zeros(1, 1), torch.ones(1, 1))


def test_python_estimator_is_usable_from_the_cpp_registry():
    seen = {}

    @core_algos.register_adv_est("py_centered")
    def centered(token_level_rewards, response_mask, index, config):
        seen["index"], seen["gamma"] = index, config.gamma
        scores = token_level_rewards.sum(-1)
        return (scores - scores.mean())[:, None] * response_mask, token_level_rewards

    rewards, mask, uids, scores = grouped_batch(8)
    ids = _C.algo.group_ids(uids)
    adv, ret = _C.algo.run_adv_estimator("py_centered", rewards, mask, index=ids, config={"gamma": 0.5})
    assert torch.allclose(adv, (scores - scores.mean())[:, None] * mask, atol=1e-12, rtol=0)
    assert isinstance(seen["index"], np.ndarray) and seen["gamma"] == 0.5
    # A Python exception inside the estimator reaches the caller.

    @core_algos.register_adv_est("py_broken")
    def broken(token_level_rewards, response_mask):
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        _C.algo.run_adv_estimator("py_broken", rewards, mask)


def test_estimator_input_errors():
    rewards, mask, uids, _ = grouped_batch(9)
    with pytest.raises(ValueError, match="shape"):
        core_algos.compute_grpo_outcome_advantage(rewards, mask[:, :-1], uids)
    with pytest.raises(ValueError):
        core_algos.compute_grpo_outcome_advantage(rewards[:0], mask[:0], uids[:0])
    bad = rewards.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        core_algos.compute_grpo_outcome_advantage(bad, torch.ones_like(mask), uids)


# ---- KL ------------------------------------------------------------------------------------------
def test_kl_penalty_modes_against_formulas():
    g = torch.Generator().manual_seed(10)
    lp, ref = torch.randn(4, 5, generator=g, dtype=F64), torch.randn(4, 5, generator=g, dtype=F64)
    d = lp - ref
    assert torch.allclose(core_algos.kl_penalty(lp, ref, "kl"), d, atol=1e-12)
    assert torch.allclose(core_algos.kl_penalty(lp, ref, "abs"), d.abs(), atol=1e-12)
    assert torch.allclose(core_algos.kl_penalty(lp, ref, "mse"), 0.5 * d**2, atol=1e-12)
    k3 = torch.clamp(torch.exp(torch.clamp(-d, -20, 20)) - (-d) - 1, -10, 10)
    assert torch.allclose(core_algos.kl_penalty(lp, ref, "low_var_kl"), k3, atol=1e-12)
    with pytest.raises(ValueError, match="low_var_kl"):
        core_algos.kl_penalty(lp, ref, "nope")


def test_kl_controllers():
    fixed = core_algos.get_kl_controller(verl.Config().algorithm.kl_ctrl)
    assert isinstance(fixed, core_algos.FixedKLController) and fixed.value == 0.001
    adaptive = core_algos.get_kl_controller({"type": "adaptive", "kl_coef": 0.2, "target_kl": 0.1, "horizon": 100})
    adaptive.update(current_kl=0.15, n_steps=10)
    proportional_error = np.clip(0.15 / 0.1 - 1, -0.2, 0.2)
    assert adaptive.value == pytest.approx(0.2 * (1 + proportional_error * 10 / 100), rel=1e-12)


def test_compute_rewards():
    scores, old, ref = torch.ones(2, 3), torch.full((2, 3), 0.5), torch.zeros(2, 3)
    assert torch.allclose(core_algos.compute_rewards(scores, old, ref, 0.1), torch.full((2, 3), 0.95))


# ---- losses --------------------------------------------------------------------------------------
def loss_batch(seed=11, bs=4, length=6):
    g = torch.Generator().manual_seed(seed)
    old = torch.randn(bs, length, generator=g, dtype=F64) * 0.3 - 1
    new = (old + torch.randn(bs, length, generator=g, dtype=F64) * 0.3).requires_grad_(True)
    adv = torch.randn(bs, length, generator=g, dtype=F64)
    mask = (torch.rand(bs, length, generator=g, dtype=F64) > 0.2).to(F64)
    return old, new, adv, mask


def test_agg_loss_modes_against_formulas():
    _, loss, _, mask = loss_batch()
    loss = loss.detach()
    assert core_algos.agg_loss(loss, mask, "token-mean").item() == pytest.approx(((loss * mask).sum() / mask.sum()).item(), abs=1e-12)
    seq = (loss * mask).sum(-1)
    assert core_algos.agg_loss(loss, mask, "seq-mean-token-sum").item() == pytest.approx(seq.mean().item(), abs=1e-12)
    per_seq = seq / (mask.sum(-1) + 1e-8)
    assert core_algos.agg_loss(loss, mask, "seq-mean-token-mean").item() == pytest.approx(per_seq.mean().item(), abs=1e-12)
    assert core_algos.agg_loss(loss, mask, "seq-mean-token-sum-norm").item() == pytest.approx(seq.mean().item() / 6, abs=1e-12)
    assert core_algos.agg_loss(loss, mask, "token-mean", batch_num_tokens=mask.sum()).item() == pytest.approx(
        ((loss * mask).sum() / mask.sum()).item(), abs=1e-12
    )
    with pytest.raises(ValueError, match="token-mean"):
        core_algos.agg_loss(loss, mask, "mean")


def test_vanilla_policy_loss_with_verl_config_object_and_dict():
    old, new, adv, mask = loss_batch()
    actor_cfg = verl.load_config(overrides=["actor_rollout_ref.actor.clip_ratio_high=0.28"]).actor_rollout_ref.actor
    loss, metrics = core_algos.compute_policy_loss_vanilla(old, new, adv, mask, config=actor_cfg)
    ratio = torch.exp(torch.clamp(new - old, -20, 20))
    l1, l2 = -adv * ratio, -adv * torch.clamp(ratio, 0.8, 1.28)
    clipped = torch.maximum(l1, l2)
    l3 = torch.where(adv < 0, torch.minimum(-adv * 3.0, clipped), clipped)
    expected = (l3 * mask).sum() / mask.sum()
    assert loss.item() == pytest.approx(expected.item(), abs=1e-10)
    assert set(metrics) == {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"}
    loss.backward()
    assert new.grad is not None and torch.isfinite(new.grad).all()
    loss2, _ = core_algos.get_policy_loss_fn("vanilla")(old, new, adv, mask, config={"clip_ratio_high": 0.28})
    assert loss2.item() == pytest.approx(loss.item(), abs=1e-14)


def test_deprecated_compute_policy_loss_returns_four_values():
    old, new, adv, mask = loss_batch()
    pg_loss, clipfrac, ppo_kl, clipfrac_lower = core_algos.compute_policy_loss(old, new, adv, mask, cliprange=0.2)
    loss, metrics = core_algos.compute_policy_loss_vanilla(old, new, adv, mask, config={})
    assert pg_loss.item() == pytest.approx(loss.item(), abs=1e-12)
    assert clipfrac.item() == pytest.approx(metrics["actor/pg_clipfrac"], abs=1e-7)


def test_all_builtin_policy_losses_run():
    old, new, adv, mask = loss_batch()
    cfg = {"policy_loss": {"dro_beta": 0.1}}
    for name in ["vanilla", "dppo_tv", "dppo_kl", "gspo", "sapo", "gpg", "clip_cov", "kl_cov", "geo_mean", "dro", "cispo"]:
        loss, metrics = core_algos.get_policy_loss_fn(name)(old, new, adv, mask, config=cfg)
        assert loss.dim() == 0 and torch.isfinite(loss), name
        assert getattr(core_algos, f"compute_policy_loss_{name}") is core_algos.get_policy_loss_fn(name)


def test_python_policy_loss_through_cpp_registry():
    @core_algos.register_policy_loss("py_neg_mean")
    def neg_mean(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights):
        loss = core_algos.agg_loss(-advantages * log_prob, response_mask, loss_agg_mode)
        return loss, {"custom/clip": config.clip_ratio}

    old, new, adv, mask = loss_batch()
    loss, metrics = _C.algo.run_policy_loss("py_neg_mean", old, new, adv, mask, "token-mean", {"clip_ratio": 0.3})
    assert loss.item() == pytest.approx(((-adv * new) * mask).sum().item() / mask.sum().item(), abs=1e-10)
    assert metrics == {"custom/clip": 0.3}
    with pytest.raises(ValueError, match="already been registered"):
        core_algos.register_policy_loss("vanilla")(neg_mean)


def test_value_and_entropy_loss():
    g = torch.Generator().manual_seed(12)
    vpreds, returns, values = (torch.randn(3, 4, generator=g, dtype=F64) for _ in range(3))
    mask = torch.ones(3, 4, dtype=F64)
    vf_loss, clipfrac = core_algos.compute_value_loss(vpreds, returns, values, mask, cliprange_value=0.5)
    clipped = values + torch.clamp(vpreds - values, -0.5, 0.5)
    expected = 0.5 * torch.maximum((vpreds - returns) ** 2, (clipped - returns) ** 2).mean()
    assert vf_loss.item() == pytest.approx(expected.item(), abs=1e-10)
    assert 0 <= clipfrac.item() <= 1
    logits = torch.randn(3, 4, 7, generator=g, dtype=F64)
    ent = core_algos.compute_entropy_loss(logits, mask)
    p = torch.softmax(logits, -1)
    assert ent.item() == pytest.approx((-(p * p.log()).sum(-1)).mean().item(), abs=1e-10)
