"""Rollout correction (verl's rollout_corr_helper) and the "bypass_mode" policy loss (issue 16 item 3).

- against verl 0.9.1's own functions, run from the unpacked release wheel ($VERL_091_SOURCE, default
  /tmp/verl091/verl; skipped without it) with verl's imports replaced by its own torch_functional helpers
  and a DataProto stand-in: weights, masks, losses and gradients are compared with torch.equal and every
  metric with ==, since libverl performs verl's tensor ops in verl's order;
- against hand-computed values (always run).
"""

import ast
import math
import os
import types
from typing import Any, Optional

import pytest
import torch

import verl
from verl.trainer.ppo import core_algos
from verl.trainer.ppo import rollout_corr_helper as ours

F64 = torch.float64
VERL_SRC = os.environ.get("VERL_091_SOURCE", "/tmp/verl091/verl")


class _StripImports(ast.NodeTransformer):
    """Drops every import (module level and inside functions): the names come from the namespace, so verl's
    `from verl.trainer.ppo.rollout_corr_helper import ...` inside a function cannot reach verl-cpp's module."""

    def visit_Import(self, node):
        return None

    def visit_ImportFrom(self, node):
        return None


def _exec_module(path, namespace, keep=None):
    with open(path) as f:
        tree = ast.parse(f.read())
    body = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if keep is not None and not (isinstance(node, ast.FunctionDef) and node.name in keep):
            continue
        if isinstance(node, ast.FunctionDef):
            node.decorator_list = []
        body.append(_StripImports().visit(node))
    module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
    exec(compile(module, path, "exec"), namespace)
    return namespace


class _DataProtoStandIn:
    def __init__(self, tensors):
        self.batch = tensors

    @classmethod
    def from_dict(cls, tensors):
        return cls(dict(tensors))


@pytest.fixture(scope="module")
def verl091():
    helper = os.path.join(VERL_SRC, "trainer/ppo/rollout_corr_helper.py")
    if not os.path.exists(helper):
        pytest.skip(f"verl 0.9.1's source is not unpacked at {VERL_SRC} (set VERL_091_SOURCE)")
    functional = _exec_module(os.path.join(VERL_SRC, "utils/torch_functional.py"), {"torch": torch},
                              keep={"masked_sum", "masked_mean", "distributed_masked_mean"})
    ns = {"torch": torch, "math": math, "Any": Any, "Optional": Optional, "DataProto": _DataProtoStandIn,
          "RolloutCorrectionConfig": Any, "PolicyLossConfig": Any,
          "verl_F": types.SimpleNamespace(**{k: functional[k] for k in ("masked_sum", "masked_mean",
                                                                         "distributed_masked_mean")})}
    _exec_module(helper, ns)
    core_ns = {"torch": torch, "Any": Any, "Optional": Optional, "ActorConfig": Any,
               "AlgoConfig": type("AlgoConfig", (), {}), "verl_F": ns["verl_F"],
               "compute_rollout_correction_and_rejection_mask": ns["compute_rollout_correction_and_rejection_mask"]}
    _exec_module(os.path.join(VERL_SRC, "trainer/ppo/core_algos.py"), core_ns,
                 keep={"agg_loss", "compute_policy_loss_vanilla", "compute_policy_loss_reinforce",
                       "compute_policy_loss_bypass_mode"})
    ns.update({k: core_ns[k] for k in ("compute_policy_loss_bypass_mode",)})
    return types.SimpleNamespace(**ns)


class _ActorConfig:
    """The ActorConfig fields verl's losses read (attributes and .get, as verl's dataclass)."""

    def __init__(self, rollout_correction=None, **fields):
        self.clip_ratio = 0.2
        self.clip_ratio_low = 0.2
        self.clip_ratio_high = 0.28
        self.clip_ratio_c = 3.0
        self.global_batch_info = {}
        self.policy_loss = {"loss_mode": "bypass_mode", "rollout_correction": rollout_correction}
        self.__dict__.update(fields)

    def get(self, key, default=None):
        return getattr(self, key, default)


def batch(seed, dtype=F64, bs=24, T=11, spread=0.4, bool_mask=False):
    """Rows drift from the rollout policy by 0.05..2 x spread (log-prob noise), so every rejection option
    below keeps some rows and rejects others; the last row is empty."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (bs,), generator=g)
    lengths[-1] = 0
    mask = (torch.arange(T)[None, :] < lengths[:, None]).to(dtype)
    rollout = -torch.rand(bs, T, generator=g, dtype=dtype) * 3
    drift = spread * torch.linspace(0.05, 2.0, bs, dtype=dtype)[:, None]
    current = rollout + drift * torch.randn(bs, T, generator=g, dtype=dtype)
    adv = torch.randn(bs, T, generator=g, dtype=dtype)
    return rollout, current, adv, (mask.bool() if bool_mask else mask)


def assert_same_metrics(ours_m, theirs_m):
    assert set(ours_m) == set(theirs_m)
    for k in theirs_m:
        a, b = float(ours_m[k]), float(theirs_m[k])
        assert a == b or (math.isnan(a) and math.isnan(b)), (k, a, b)


RS_CASES = [
    (None, None),
    ("token_k1", 1.5),
    ("token_k1", "0.8_1.3"),
    ("token_k2", 0.05),
    ("token_k3", "0.04"),
    ("seq_sum_k1", "0.3_3.0"),
    ("seq_sum_k2", 0.5),
    ("seq_sum_k3", 0.4),
    ("seq_mean_k1", 1.2),
    ("seq_mean_k2", 0.03),
    ("seq_mean_k3", 0.03),
    ("seq_max_k2", 0.2),
    ("seq_max_k3", 0.3),
    ("token_k1,seq_mean_k3,seq_max_k2", "1.6,0.05,0.3"),
    ("seq_mean_k3, token_k2, seq_mean_k3", 0.08),
]
IS_CASES = [(None, 2.0, False), ("token", 2.0, False), ("token", 1.2, True), ("token", "0.7_1.4", False),
            ("sequence", 2.0, False), ("sequence", 5, True), ("sequence", "0.5_1.8", True), ("token", None, False)]


@pytest.mark.parametrize("rs,rs_threshold", RS_CASES)
@pytest.mark.parametrize("is_level,is_threshold,normalize", IS_CASES)
@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_correction_and_rejection_mask_equal_verl_091(verl091, rs, rs_threshold, is_level, is_threshold, normalize,
                                                      dtype):
    rollout, current, _, mask = batch(len(str(rs)) + len(str(is_threshold)), dtype)
    kwargs = dict(rollout_is=is_level, rollout_is_threshold=is_threshold, rollout_is_batch_normalize=normalize,
                  rollout_rs=rs, rollout_rs_threshold=rs_threshold)
    w, m, metrics = ours.compute_rollout_correction_and_rejection_mask(current, rollout, mask, **kwargs)
    ew, em, emetrics = verl091.compute_rollout_correction_and_rejection_mask(current, rollout, mask, **kwargs)
    assert (w is None) == (ew is None)
    if w is not None:
        assert w.batch["rollout_is_weights"].dtype == dtype
        assert torch.equal(w.batch["rollout_is_weights"], ew.batch["rollout_is_weights"])
    assert m.dtype == em.dtype and torch.equal(m, em)
    assert_same_metrics(metrics, emetrics)
    if rs is not None:  # something was rejected and something kept, so the comparison is not vacuous
        assert 0 < em.sum() < mask.sum()


@pytest.mark.parametrize("loss_type", ["ppo_clip", "reinforce"])
@pytest.mark.parametrize("rs,rs_threshold", [RS_CASES[0], RS_CASES[2], RS_CASES[9], RS_CASES[13]])
@pytest.mark.parametrize("is_level,is_threshold,normalize", [IS_CASES[0], IS_CASES[2], IS_CASES[3], IS_CASES[5]])
@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-sum"])
@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_bypass_mode_loss_equal_verl_091(verl091, loss_type, rs, rs_threshold, is_level, is_threshold, normalize, agg,
                                         dtype):
    rollout, current, adv, mask = batch(7, dtype, spread=0.15)
    corr = {"loss_type": loss_type, "rollout_is": is_level, "rollout_is_threshold": is_threshold,
            "rollout_is_batch_normalize": normalize, "rollout_rs": rs, "rollout_rs_threshold": rs_threshold}
    lp = current.clone().requires_grad_()
    lp_ref = current.clone().requires_grad_()
    fn = core_algos.get_policy_loss_fn("bypass_mode")
    assert fn is core_algos.compute_policy_loss_bypass_mode
    loss, metrics = fn(rollout, lp, adv, mask, agg, _ActorConfig(corr))
    eloss, emetrics = verl091.compute_policy_loss_bypass_mode(rollout, lp_ref, adv, mask, agg, _ActorConfig(corr))
    loss.backward()
    eloss.backward()
    # The rollout correction (weights, mask, rollout_corr/* metrics) is bitwise verl's, and so is the REINFORCE
    # loss. PPO-clip runs libverl's fused vanilla kernel, which sums the masked token losses in one pass in
    # another order than torch's reductions: equal to a few ulps of the dtype, not bitwise.
    if loss_type == "reinforce":
        assert torch.equal(loss, eloss) and torch.equal(lp.grad, lp_ref.grad)
        assert_same_metrics(metrics, emetrics)
    else:
        rtol = 1e-13 if dtype is F64 else 2e-6
        assert torch.allclose(loss, eloss, rtol=rtol, atol=0)
        assert torch.allclose(lp.grad, lp_ref.grad, rtol=rtol, atol=rtol * float(lp_ref.grad.abs().max()))
        assert set(metrics) == set(emetrics)
        assert_same_metrics({k: v for k, v in metrics.items() if k.startswith("rollout_corr/")},
                            {k: v for k, v in emetrics.items() if k.startswith("rollout_corr/")})
        for k in (k for k in emetrics if k.startswith("actor/")):
            assert metrics[k] == pytest.approx(float(emetrics[k]), rel=rtol, abs=rtol), k
    assert any(k.startswith("rollout_corr/") for k in metrics)


def test_bypass_mode_runs_through_the_cpp_registry():
    rollout, current, adv, mask = batch(3, spread=0.1)
    corr = {"loss_type": "reinforce", "rollout_is": "token", "rollout_is_threshold": 1.05}
    direct, direct_metrics = core_algos.compute_policy_loss_bypass_mode(rollout, current, adv, mask, "token-mean",
                                                                        _ActorConfig(corr))
    via_cpp, cpp_metrics = verl._C.algo.run_policy_loss(
        "bypass_mode", rollout, current, adv, mask, "token-mean",
        {"policy_loss": {"rollout_correction": {"loss_type": "reinforce", "rollout_is": "token",
                                                "rollout_is_threshold": 1.05}}}, None)
    assert torch.equal(direct, via_cpp) and direct_metrics == cpp_metrics
    assert "bypass_mode" in verl._C.algo.policy_loss_names()


def test_weights_and_masks_by_hand():
    lr = torch.log(torch.tensor([[3.0, 0.4, 1.0], [1.5, 1.2, 9.0]], dtype=F64))
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]], dtype=F64)
    w, m = ours.compute_rollout_correction_weights(lr, mask, "token", 2.0)
    assert torch.allclose(w, torch.tensor([[2.0, 0.4, 1.0], [1.5, 1.2, 0.0]], dtype=F64), rtol=1e-12, atol=0)
    assert m["rollout_is_ratio_fraction_high"] == pytest.approx(1 / 5)  # 3.0 > 2 (9.0 is padding)
    assert m["rollout_is_ratio_fraction_low"] == pytest.approx(1 / 5)  # 0.4 < 1/2
    assert m["rollout_is_max"] == pytest.approx(2.0) and m["rollout_is_min"] == pytest.approx(0.4)
    # sequence level: products 1.2 and 1.8, both under 2.0, on every valid token of their row
    w, _ = ours.compute_rollout_correction_weights(lr, mask, "sequence", 2.0)
    assert torch.allclose(w, torch.tensor([[1.2, 1.2, 1.2], [1.8, 1.8, 0.0]], dtype=F64), rtol=1e-12, atol=0)
    # IcePop [0.6, 1.6]: 3.0 and 0.4 -> 0
    w, m = ours.compute_rollout_correction_weights(lr, mask, "token", "0.6_1.6")
    assert torch.allclose(w, torch.tensor([[0.0, 0.0, 1.0], [1.5, 1.2, 0.0]], dtype=F64), rtol=1e-12, atol=0)
    assert m["rollout_is_oob_ratio"] == pytest.approx(2 / 5)
    # batch normalisation to mean 1 over the valid tokens (verl's masked mean divides by count + 1e-8)
    w, m = ours.compute_rollout_correction_weights(lr, mask, "token", 2.0, True)
    assert float((w * mask).sum() / mask.sum()) == pytest.approx((5 + 1e-8) / 5, rel=1e-13)
    assert m["rollout_is_batch_norm_factor"] == pytest.approx((2.0 + 0.4 + 1.0 + 1.5 + 1.2) / (5 + 1e-8), rel=1e-13)
    # token_k1 with bound 2 keeps ratios in [1/2, 2]: 3.0 and 0.4 rejected; padding stays 0
    kept, m = ours.compute_rollout_rejection_mask(lr, mask, "token_k1", 2.0)
    assert kept.tolist() == [[0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
    assert m["rollout_rs_masked_fraction"] == pytest.approx(2 / 5) and m["rollout_rs_seq_masked_fraction"] == 0.5
    # seq_mean_k2 (mean of (log r)^2 / 2) <= 0.1: row 0 has 0.341, row 1 0.049 -> row 0 rejected
    kept, _ = ours.compute_rollout_rejection_mask(lr, mask, "seq_mean_k2", 0.1)
    assert kept.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    metrics = ours.compute_offpolicy_metrics(lr, torch.zeros_like(lr), mask)
    assert metrics["kl"] == pytest.approx(-float(lr[mask.bool()].mean()), rel=1e-6)
    assert metrics["chi2_seq"] == pytest.approx((1.2**2 + 1.8**2) / 2 - 1, rel=1e-6)


def test_bad_specifications_are_refused():
    rollout, current, adv, mask = batch(1)
    lr = current - rollout
    with pytest.raises(verl.InvalidArgumentError, match="Invalid rollout_rs option: token_k4"):
        ours.compute_rollout_rejection_mask(lr, mask, "token_k4", 1.0)
    with pytest.raises(verl.InvalidArgumentError, match="single upper bound"):
        ours.compute_rollout_rejection_mask(lr, mask, "seq_max_k2", "0.1_0.2")
    with pytest.raises(verl.InvalidArgumentError, match="exactly 2 thresholds"):
        ours.compute_rollout_rejection_mask(lr, mask, "token_k2,token_k3", "1,2,3")
    with pytest.raises(verl.InvalidArgumentError, match="lower <= upper"):
        ours.compute_rollout_rejection_mask(lr, mask, "token_k1", "2_1")
    with pytest.raises(ValueError, match="rollout_rs_threshold must be provided"):
        ours.compute_rollout_rejection_mask(lr, mask, "token_k1", None)
    with pytest.raises(verl.InvalidArgumentError, match="upper bound must be positive"):
        ours.compute_rollout_correction_weights(lr, mask, "token", -1.0)
    with pytest.raises(verl.InvalidArgumentError, match="Invalid rollout_is_threshold 'abc'"):
        ours.compute_rollout_correction_weights(lr, mask, "token", "abc")
    with pytest.raises(TypeError, match="not a boolean"):
        ours.compute_rollout_correction_weights(lr, mask, "token", True)
    with pytest.raises(ValueError, match="Invalid rollout_is: geometric"):
        ours.compute_rollout_correction_weights(lr, mask, "geometric", 2.0)
    with pytest.raises(verl.InvalidArgumentError, match="rollout_rs_threshold must be explicitly provided"):
        ours.compute_rollout_correction_and_rejection_mask(current, rollout, mask, rollout_rs="token_k1")
    with pytest.raises(verl.InvalidArgumentError, match="at least one valid token"):
        ours.compute_rollout_correction_and_rejection_mask(current, rollout, torch.zeros_like(mask))
    with pytest.raises(verl.InvalidArgumentError, match="does not match rollout_log_prob shape"):
        ours.compute_rollout_correction_and_rejection_mask(current, rollout[:, :3], mask)
    with pytest.raises(AssertionError, match="config is required"):
        core_algos.compute_policy_loss_bypass_mode(rollout, current, adv, mask)
    with pytest.raises(ValueError, match="rollout_correction config not found"):
        core_algos.compute_policy_loss_bypass_mode(rollout, current, adv, mask, config=_ActorConfig(None))
    with pytest.raises(verl.InvalidArgumentError, match="Invalid loss_type: dpo"):
        core_algos.compute_policy_loss_bypass_mode(rollout, current, adv, mask,
                                                   config=_ActorConfig({"loss_type": "dpo"}))


def test_add_to_batch_and_bypass_setup():
    rollout, current, _, mask = batch(5)
    data = verl.DataProto.from_dict(tensors={"old_log_probs": current, "rollout_log_probs": rollout,
                                             "response_mask": mask})
    out, metrics = ours.compute_rollout_correction_and_add_to_batch(
        data, {"rollout_is": "token", "rollout_is_threshold": 2.0, "rollout_rs": "token_k3", "rollout_rs_threshold": 0.05})
    w, m, expected = ours.compute_rollout_correction_and_rejection_mask(current, rollout, mask, "token", 2.0, False,
                                                                        "token_k3", 0.05)
    assert torch.equal(out.batch["rollout_is_weights"], w.batch["rollout_is_weights"])
    assert torch.equal(out.batch["response_mask"], m) and metrics == expected
    assert all(k.startswith("rollout_corr/") for k in metrics)
    data = verl.DataProto.from_dict(tensors={"rollout_log_probs": rollout, "response_mask": mask})
    policy_loss = {"loss_mode": "vanilla"}
    ours.apply_bypass_mode(data, {"loss_type": "reinforce"}, policy_loss)
    assert torch.equal(data.batch["old_log_probs"], rollout)
    assert policy_loss == {"loss_mode": "bypass_mode", "rollout_correction": {"loss_type": "reinforce"}}
    with pytest.raises(ValueError, match="requires rollout_log_probs"):
        ours.apply_bypass_mode(verl.DataProto.from_dict(tensors={"response_mask": mask}), {}, {})
