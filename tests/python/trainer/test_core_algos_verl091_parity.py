"""GDPO, the Optimal Token Baseline estimators, PF-PPO resampling and the REINFORCE loss (issue 16 item 3).

Two kinds of checks:
- against independent float64 formulas written here from the papers' / verl's definitions
  (always run);
- against verl 0.9.1's own functions, bitwise, on random inputs: verl is not installed here (both
  packages are called ``verl``), so its functions are taken from the unpacked release wheel
  (``pip download verl==0.9.1 --no-deps`` and unzip; directory in $VERL_091_SOURCE, default
  /tmp/verl091/verl) with ``ast`` and executed on their own, without verl's imports. Skipped when
  the wheel is not unpacked.
"""

import ast
import os
import types
from collections import defaultdict
from typing import Any, Optional

import numpy as np
import pytest
import torch

import verl
from verl.protocol import DataProto
from verl.trainer.ppo import core_algos
from verl.utils import torch_functional as verl_F

F64 = torch.float64
VERL_SRC = os.environ.get("VERL_091_SOURCE", "/tmp/verl091/verl")


# ---- verl 0.9.1's functions, loaded from its source --------------------------------------------------
def _load_functions(path, names, namespace):
    with open(path) as f:
        tree = ast.parse(f.read())
    defs = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in names]
    assert {d.name for d in defs} == set(names), f"{path} lacks {set(names) - {d.name for d in defs}}"
    for d in defs:
        d.decorator_list = []  # register_adv_est / deprecated: verl's registries are not loaded
    exec(compile(ast.Module(body=defs, type_ignores=[]), path, "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def verl091():
    core = os.path.join(VERL_SRC, "trainer/ppo/core_algos.py")
    if not os.path.exists(core):
        pytest.skip(f"verl 0.9.1's source is not unpacked at {VERL_SRC} (set VERL_091_SOURCE)")
    functional = _load_functions(os.path.join(VERL_SRC, "utils/torch_functional.py"),
                                 ["masked_sum", "masked_mean", "masked_var", "masked_whiten"], {"torch": torch})
    ns = {"torch": torch, "np": np, "defaultdict": defaultdict, "Optional": Optional, "Any": Any,
          "AlgoConfig": Any, "ActorConfig": Any, "verl_F": types.SimpleNamespace(**functional)}
    return types.SimpleNamespace(**_load_functions(core, [
        "compute_grpo_outcome_advantage", "compute_gdpo_outcome_advantage", "compute_optimal_token_baseline_advantage",
        "compute_multi_turn_optimal_token_baseline_advantage", "compute_pf_ppo_reweight_data", "agg_loss",
        "compute_policy_loss_reinforce"], ns))


# ---- inputs ------------------------------------------------------------------------------------------
def otb_batch(seed, groups, n, length, dtype=F64, holes=False, singletons=0, empty_rows=0):
    """Grouped rows, shuffled: uid strings, outcome rewards at the last token, log-probs and sum pi^2 as
    a policy gives them (sum_pi_squared in [pi^2, 1]); holes = mask-0 observation tokens inside a row."""
    g = torch.Generator().manual_seed(seed)
    bs = groups * n + singletons
    lengths = torch.randint(1, length + 1, (bs,), generator=g)
    lengths[:empty_rows] = 0
    mask = (torch.arange(length)[None, :] < lengths[:, None]).to(dtype)
    if holes:
        mask = mask * (torch.rand(bs, length, generator=g) > 0.25).to(dtype)
    rewards = torch.zeros(bs, length, dtype=dtype)
    rewards[torch.arange(bs), (lengths - 1).clamp_min(0)] = torch.randint(-1, 3, (bs,), generator=g).to(dtype)
    rewards += 0.1 * torch.randn(bs, length, generator=g, dtype=dtype)  # token-level shaping too
    pi = torch.rand(bs, length, generator=g, dtype=dtype).clamp_min(1e-4)
    sum_pi_sq = pi**2 + (1 - pi**2) * torch.rand(bs, length, generator=g, dtype=dtype)
    uid = np.array([f"uid-{i // n}" for i in range(groups * n)] + [f"single-{i}" for i in range(singletons)], dtype=object)
    perm = torch.randperm(bs, generator=g)
    is_w = torch.rand(bs, length, generator=g, dtype=dtype) * 2
    return dict(token_level_rewards=rewards[perm], response_mask=mask[perm], index=uid[perm.numpy()],
                old_log_probs=torch.log(pi)[perm], sum_pi_squared=sum_pi_sq[perm]), is_w[perm]


OTB_CASES = [  # (seed, groups, n, length, dtype, holes, singletons, empty_rows)
    (0, 3, 4, 7, F64, False, 0, 0),
    (1, 5, 8, 16, F64, True, 2, 0),
    (2, 2, 16, 33, torch.float32, False, 1, 0),
    (3, 4, 5, 9, torch.float32, True, 0, 2),
    (4, 1, 2, 1, F64, False, 3, 0),  # one column, groups of size 1
    (5, 3, 3, 12, F64, True, 0, 3),  # rows without response tokens
    (6, 2, 40, 20, torch.float32, False, 0, 0),  # groups large enough for torch's cascade summation
]


@pytest.mark.parametrize("case", OTB_CASES)
@pytest.mark.parametrize("name", ["compute_optimal_token_baseline_advantage",
                                  "compute_multi_turn_optimal_token_baseline_advantage"])
@pytest.mark.parametrize("with_is,zero_tail", [(False, True), (True, True), (False, False)])
def test_otb_bitwise_equal_to_verl_091(verl091, case, name, with_is, zero_tail):
    kwargs, is_w = otb_batch(*case)
    kwargs.update(rollout_is_weights=is_w if with_is else None, handle_zero_tail=zero_tail)
    adv, ret = getattr(core_algos, name)(**kwargs)
    exp_adv, exp_ret = getattr(verl091, name)(**kwargs)
    assert adv.dtype == exp_adv.dtype and ret.dtype == exp_ret.dtype
    assert torch.equal(adv, exp_adv) and torch.equal(ret, exp_ret)


def reference_otb(rewards, mask, uid, logp, spsq, is_w=None, zero_tail=True, eps=1e-8, multi_turn=False):
    """The OTB formulas with Python loops over rows and timesteps, float64."""
    bs, T = rewards.shape
    R = [[float(rewards[i, t] * mask[i, t]) for t in range(T)] for i in range(bs)]
    G = [[sum(R[i][t:]) for t in range(T)] for i in range(bs)]
    w = [[(1 - 2 * float(torch.exp(logp[i, t])) + float(spsq[i, t])) * (float(is_w[i, t]) ** 2 if is_w is not None else 1)
          * float(mask[i, t]) for t in range(T)] for i in range(bs)]
    W = [[sum(w[i][: t + 1]) for t in range(T)] for i in range(bs)]
    steps = [[t for t in range(T) if mask[i, t] != 0] if multi_turn else list(range(T)) for i in range(bs)]
    length = [len([t for t in range(T) if mask[i, t] != 0]) for i in range(bs)]
    adv = torch.zeros(bs, T, dtype=F64)
    for i in range(bs):
        group = [j for j in range(bs) if uid[j] == uid[i] and not (multi_turn and length[j] == 0)]
        for k, t in enumerate(steps[i]):
            def at(j):  # (G, W) of row j at the k-th timestep, 0 past its end (multi-turn) / masked (otherwise)
                if multi_turn:
                    return (G[j][steps[j][k]], W[j][steps[j][k]]) if k < len(steps[j]) else (0.0, 0.0)
                return (G[j][t] * float(mask[j, t]), W[j][t] * float(mask[j, t]))
            b = 0.0
            if len(group) > 1:
                b = sum(at(j)[0] * at(j)[1] for j in group) / (sum(at(j)[1] for j in group) + eps)
                others = sorted(length[j] for j in group)
                if zero_tail and length[i] == others[-1] and others.count(length[i]) == 1 and k >= others[-2]:
                    b = 0.0
            adv[i, t] = (G[i][t] - b) * float(mask[i, t])
    return adv, torch.tensor(G, dtype=F64)


@pytest.mark.parametrize("multi_turn", [False, True])
@pytest.mark.parametrize("case", [c for c in OTB_CASES if c[4] is F64][:4])
def test_otb_against_loop_reference(case, multi_turn):
    kwargs, is_w = otb_batch(*case)
    fn = (core_algos.compute_multi_turn_optimal_token_baseline_advantage if multi_turn
          else core_algos.compute_optimal_token_baseline_advantage)
    adv, ret = fn(**kwargs, rollout_is_weights=is_w)
    exp_adv, exp_ret = reference_otb(kwargs["token_level_rewards"], kwargs["response_mask"], kwargs["index"],
                                     kwargs["old_log_probs"], kwargs["sum_pi_squared"], is_w, multi_turn=multi_turn)
    assert torch.allclose(ret, exp_ret, atol=1e-12, rtol=0)
    assert torch.allclose(adv, exp_adv, atol=1e-10, rtol=0)
    assert adv.abs().sum() > 0


def test_otb_singletons_keep_their_returns_and_the_lone_longest_row_its_tail():
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]], dtype=F64)
    rewards = torch.tensor([[0, 0, 0, 2.0], [0, 1.0, 0, 0], [0, 0, 3.0, 0]], dtype=F64)
    logp = torch.full((3, 4), -1.0, dtype=F64)
    spsq = torch.full((3, 4), 0.5, dtype=F64)
    adv, ret = core_algos.compute_optimal_token_baseline_advantage(rewards, mask, ["a", "a", "b"], logp, spsq)
    assert torch.equal(adv[2], ret[2])  # group "b" has one row: no baseline
    # group "a": row 0 is strictly longest (4 > 2) -> its baseline is 0 from t = 2 on
    assert torch.equal(adv[0, 2:], ret[0, 2:])
    assert not torch.equal(adv[0, :2], ret[0, :2])
    w = 1 - 2 * np.exp(-1.0) + 0.5  # the same w at every token: W_t = (t + 1) w
    b0 = (2.0 * w + 1.0 * w) / (2 * w + 1e-8)
    assert adv[0, 0].item() == pytest.approx(2.0 - b0, abs=1e-12)
    assert adv[1, 0].item() == pytest.approx(1.0 - b0, abs=1e-12)


def test_otb_refuses_bad_input():
    kwargs, _ = otb_batch(0, 2, 3, 5)
    for key in ("old_log_probs", "sum_pi_squared"):
        bad = dict(kwargs, **{key: kwargs[key][:, :4]})
        with pytest.raises(verl.InvalidArgumentError, match=key):
            core_algos.compute_optimal_token_baseline_advantage(**bad)
    bad = dict(kwargs, sum_pi_squared=kwargs["sum_pi_squared"].clone())
    bad["sum_pi_squared"][0, 0] = float("nan")
    with pytest.raises(verl.InvalidArgumentError, match="sum_pi_squared"):
        core_algos.compute_optimal_token_baseline_advantage(**bad)
    half = dict(kwargs, response_mask=kwargs["response_mask"] * 0.5)
    with pytest.raises(verl.InvalidArgumentError, match="0/1"):
        core_algos.compute_multi_turn_optimal_token_baseline_advantage(**half)
    with pytest.raises(TypeError):
        core_algos.compute_optimal_token_baseline_advantage(kwargs["token_level_rewards"], kwargs["response_mask"], kwargs["index"])


# ---- GDPO ----------------------------------------------------------------------------------------------
def gdpo_batch(seed, groups=3, n=4, prompt=3, length=6, singletons=0):
    g = torch.Generator().manual_seed(seed)
    bs = groups * n + singletons
    lengths = torch.randint(1, length + 1, (bs,), generator=g)
    response_mask = (torch.arange(length)[None, :] < lengths[:, None]).float()
    attention_mask = torch.cat([torch.ones(bs, prompt), response_mask], dim=1).long()
    uid = np.array([f"u{i // n}" for i in range(groups * n)] + [f"s{i}" for i in range(singletons)], dtype=object)
    components = {"format_reward": torch.randint(0, 2, (bs,), generator=g).float().numpy(),
                  "accuracy_reward": (torch.randn(bs, generator=g) * 3).numpy().tolist()}
    rewards = torch.zeros(bs, length)
    rewards[torch.arange(bs), lengths - 1] = torch.randn(bs, generator=g)
    batch = {"prompts": torch.zeros(bs, prompt, dtype=torch.long), "attention_mask": attention_mask}
    return rewards, response_mask, uid, components, batch


@pytest.mark.parametrize("seed,singletons", [(0, 0), (1, 2), (2, 0)])
@pytest.mark.parametrize("weights", [None, [1.0, 0.3]])
@pytest.mark.parametrize("norm", [True, False])
def test_gdpo_matches_verl_091(verl091, seed, singletons, weights, norm):
    rewards, mask, uid, components, batch = gdpo_batch(seed, singletons=singletons)
    cfg = {"gdpo_reward_keys": ["format_reward", "accuracy_reward"], "gdpo_reward_weights": weights}
    for config, nt, b in ((cfg, components, batch), (None, None, None)):  # per-component, and the fallback
        adv, ret = core_algos.compute_gdpo_outcome_advantage(rewards, mask, uid, norm_adv_by_std_in_grpo=norm,
                                                             config=config, non_tensor_batch=nt, batch=b)
        exp_adv, _ = verl091.compute_gdpo_outcome_advantage(rewards, mask, uid, norm_adv_by_std_in_grpo=norm,
                                                            config=config, non_tensor_batch=nt, batch=b)
        # verl-cpp's GRPO group statistics are a scatter, not verl's per-group torch.mean/std: equal to
        # float32 rounding, and the whitening after it amplifies nothing beyond that
        assert adv.dtype == exp_adv.dtype and torch.equal(adv, ret)
        assert torch.allclose(adv, exp_adv, atol=2e-6, rtol=1e-5)


def test_gdpo_against_formula_and_grpo():
    rewards, mask, uid, components, batch = gdpo_batch(3, groups=4, n=3)
    keys = ["format_reward", "accuracy_reward"]
    weights = [0.5, 2.0]
    adv, _ = core_algos.compute_gdpo_outcome_advantage(
        rewards.double(), mask.double(), uid, config={"gdpo_reward_keys": keys, "gdpo_reward_weights": weights},
        non_tensor_batch=components, batch=batch)
    total = np.zeros(len(uid))
    for key, w in zip(keys, weights):
        s = np.asarray(components[key], dtype=np.float32).astype(np.float64)
        for i, u in enumerate(uid):
            grp = s[uid == u]
            total[i] += np.float32(w) * (s[i] - grp.mean()) / (grp.std(ddof=1) + 1e-6)
    tok = torch.tensor(total)[:, None].expand_as(mask).double()
    m = mask.double()
    mean = (tok * m).sum() / m.sum()
    var = ((tok - mean) ** 2 * m).sum() / m.sum() * m.sum() / (m.sum() - 1)
    assert torch.allclose(adv, (tok - mean) / torch.sqrt(var + 1e-8) * m, atol=1e-5, rtol=0)
    # one component, weight 1: GRPO whitened over the batch
    grpo = core_algos.compute_grpo_outcome_advantage(rewards, mask, uid)[0]
    alone, _ = core_algos.compute_gdpo_outcome_advantage(rewards, mask, uid)
    assert torch.equal(alone, verl_F.masked_whiten(grpo, mask) * mask)


def test_gdpo_needs_reward_keys_when_given_the_batch():
    rewards, mask, uid, components, batch = gdpo_batch(4)
    with pytest.raises(ValueError, match="gdpo_reward_keys"):
        core_algos.compute_gdpo_outcome_advantage(rewards, mask, uid, config={}, non_tensor_batch=components, batch=batch)
    with pytest.raises(KeyError, match="no_such"):
        core_algos.compute_gdpo_outcome_advantage(rewards, mask, uid, config={"gdpo_reward_keys": ["no_such"]},
                                                  non_tensor_batch=components, batch=batch)
    with pytest.raises(verl.InvalidArgumentError, match="reward_weights"):
        core_algos.compute_gdpo_outcome_advantage(
            rewards, mask, uid, config={"gdpo_reward_keys": ["format_reward"], "gdpo_reward_weights": [1.0, 2.0]},
            non_tensor_batch=components, batch=batch)


# ---- REINFORCE loss ------------------------------------------------------------------------------------
class _ActorConfig:
    def __init__(self, **global_batch_info):
        self.global_batch_info = global_batch_info


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm",
                                  "token-sum"])
@pytest.mark.parametrize("with_is", [False, True])
@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_reinforce_loss_matches_verl_091(verl091, mode, with_is, dtype):
    g = torch.Generator().manual_seed(len(mode))
    bs, T = 6, 9
    mask = (torch.arange(T)[None, :] < torch.randint(0, T + 1, (bs,), generator=g)[:, None]).to(dtype)
    mask[0] = 1
    rollout = -torch.rand(bs, T, generator=g, dtype=dtype) * 3
    adv = torch.randn(bs, T, generator=g, dtype=dtype)
    is_w = torch.rand(bs, T, generator=g, dtype=dtype) * 2 if with_is else None
    lp = (rollout + 0.1 * torch.randn(bs, T, generator=g, dtype=dtype)).requires_grad_()
    lp_ref = lp.detach().clone().requires_grad_()
    loss, metrics = core_algos.compute_policy_loss_reinforce(rollout, lp, adv, mask, mode, _ActorConfig(), is_w)
    exp_loss, exp_metrics = verl091.compute_policy_loss_reinforce(rollout, lp_ref, adv, mask, mode, _ActorConfig(), is_w)
    loss.backward()
    exp_loss.backward()
    assert torch.allclose(loss, exp_loss, atol=1e-6 if dtype is torch.float32 else 1e-12, rtol=0)
    assert torch.allclose(lp.grad, lp_ref.grad, atol=1e-7 if dtype is torch.float32 else 1e-14, rtol=0)
    assert metrics["actor/ppo_kl"] == pytest.approx(exp_metrics["actor/ppo_kl"], abs=1e-6)


def test_reinforce_loss_formula_and_config():
    lp = torch.tensor([[-1.0, -2.0, -0.5]], dtype=F64, requires_grad=True)
    rollout = torch.tensor([[-1.5, -2.0, -9.0]], dtype=F64)
    adv = torch.tensor([[2.0, -1.0, 4.0]], dtype=F64)
    mask = torch.tensor([[1.0, 1.0, 0.0]], dtype=F64)
    w = torch.tensor([[0.5, 2.0, 7.0]], dtype=F64)
    loss, metrics = core_algos.compute_policy_loss_reinforce(rollout, lp, adv, mask, config=_ActorConfig(), rollout_is_weights=w)
    # seq-mean-token-sum over the one sequence: -(2 * -1 * 0.5 + -1 * -2 * 2) = -3
    assert loss.item() == pytest.approx(-3.0, abs=1e-12)
    assert metrics["actor/ppo_kl"] == pytest.approx((-1.5 + 1.0 + 0.0) / 2, abs=1e-8)
    loss.backward()
    assert torch.allclose(lp.grad, torch.tensor([[-1.0, 2.0, 0.0]], dtype=F64))
    halved, _ = core_algos.compute_policy_loss_reinforce(rollout, lp, adv, mask, config=_ActorConfig(global_batch_size=2),
                                                         rollout_is_weights=w)
    assert halved.item() == pytest.approx(-1.5, abs=1e-12)
    with pytest.raises(ValueError, match="ActorConfig"):
        core_algos.compute_policy_loss_reinforce(rollout, lp, adv, mask)
    with pytest.raises(verl.InvalidArgumentError, match="rollout_log_prob"):
        core_algos.compute_policy_loss_reinforce(rollout[:, :2], lp, adv, mask, config=_ActorConfig())


# ---- PF-PPO --------------------------------------------------------------------------------------------
def pf_data(seed=0, bs=8, T=5):
    g = torch.Generator().manual_seed(seed)
    scores = torch.zeros(bs, T)
    scores[:, -1] = torch.randint(-2, 3, (bs,), generator=g).float()
    batch = {"token_level_scores": scores, "responses": torch.arange(bs * T).view(bs, T)}
    non_tensor = {"uid": np.array([f"u{i}" for i in range(bs)], dtype=object)}
    return DataProto.from_dict(tensors=batch, non_tensors=non_tensor, meta_info={"per_row": list(range(bs)), "step": 3})


@pytest.mark.parametrize("method", ["pow", "max_min", "max_random"])
def test_pf_ppo_draws_what_verl_091_draws(verl091, method):
    data = pf_data(1)
    torch.manual_seed(123)
    ours = core_algos.compute_pf_ppo_reweight_data(data, method, 2.0)
    torch.manual_seed(123)
    # verl's function on verl-cpp's own DataProto: it rebuilds the batch as type(data.batch)(dict) and assigns
    # batch.batch_size, which TensorBatch takes as TensorDict does
    theirs = verl091.compute_pf_ppo_reweight_data(pf_data(1), method, 2.0)
    assert isinstance(theirs, DataProto) and theirs.batch.batch_size == torch.Size([len(data)])
    for key in ("token_level_scores", "responses"):
        assert torch.equal(ours.batch[key], theirs.batch[key])
    assert list(ours.non_tensor_batch["uid"]) == list(theirs.non_tensor_batch["uid"])
    assert ours.meta_info == theirs.meta_info


def test_pf_ppo_resamples_rows_consistently_and_by_weight():
    data = pf_data(2, bs=6)
    torch.manual_seed(0)
    out = core_algos.compute_pf_ppo_reweight_data(data, "max_min")
    assert len(out) == len(data)
    rows = out.batch["responses"][:, 0] // 5  # the source row of each drawn row
    assert [f"u{r}" for r in rows.tolist()] == list(out.non_tensor_batch["uid"])
    assert out.meta_info["per_row"] == rows.tolist() and out.meta_info["step"] == 3
    scores = data.batch["token_level_scores"].sum(-1)
    extreme = (scores == scores.max()) | (scores == scores.min())
    assert extreme[rows].all()  # the other rows have weight 1e-8: practically never drawn
    assert data.batch["responses"][:, 0].tolist() == [0, 5, 10, 15, 20, 25]  # input untouched
    w = verl._C.algo.pf_ppo_weights(torch.tensor([-2.0, 0.0, 3.0]), "pow", 2.0)
    assert torch.allclose(w, torch.tensor([4.0, 1e-8, 9.0]), rtol=1e-6, atol=0)
    with pytest.raises(verl.InvalidArgumentError, match="reweight_method"):
        core_algos.compute_pf_ppo_reweight_data(data, "softmax")
