"""torch.autograd.gradcheck in float64 for every loss and differentiable helper of core_algos."""

import pytest
import torch

from verl.trainer.ppo import core_algos
from verl.utils import torch_functional as verl_F

F64 = torch.float64
# Losses whose value is differentiated as it stands. dppo_tv, dppo_kl, gspo and cispo are
# stop-gradient surrogates (their gradient is not the derivative of their value), so gradcheck
# does not apply; test_surrogate_gradients checks their gradient against the surrogate instead.
POLICY_LOSSES = ["vanilla", "sapo", "gpg", "clip_cov", "kl_cov", "geo_mean", "dro"]


def inputs(seed=0, bs=3, length=4):
    g = torch.Generator().manual_seed(seed)
    old = torch.randn(bs, length, generator=g, dtype=F64) * 0.2 - 1.0
    new = (old + torch.randn(bs, length, generator=g, dtype=F64) * 0.1).requires_grad_(True)
    adv = torch.randn(bs, length, generator=g, dtype=F64)
    mask = torch.ones(bs, length, dtype=F64)
    mask[0, -1] = 0
    return old, new, adv, mask


@pytest.mark.parametrize("name", POLICY_LOSSES)
def test_policy_loss_gradcheck(name):
    old, new, adv, mask = inputs()
    fn = core_algos.get_policy_loss_fn(name)
    config = {"policy_loss": {"dro_beta": 0.1, "clip_cov_ratio": 0.3, "kl_cov_ratio": 0.3}}

    def loss(log_prob):
        torch.manual_seed(0)  # clip_cov / kl_cov pick tokens at random: the same ones every call
        return fn(old, log_prob, adv, mask, config=config)[0]

    assert torch.autograd.gradcheck(loss, (new,), eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("mode", ["token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"])
def test_agg_loss_gradcheck(mode):
    _, new, _, mask = inputs(1)
    assert torch.autograd.gradcheck(lambda x: core_algos.agg_loss(x, mask, mode), (new,))


def test_value_loss_gradcheck():
    g = torch.Generator().manual_seed(2)
    vpreds = torch.randn(3, 4, generator=g, dtype=F64, requires_grad=True)
    returns, values = torch.randn(3, 4, generator=g, dtype=F64), torch.randn(3, 4, generator=g, dtype=F64)
    mask = torch.ones(3, 4, dtype=F64)
    assert torch.autograd.gradcheck(lambda v: core_algos.compute_value_loss(v, returns, values, mask, 0.5)[0], (vpreds,))


@pytest.mark.parametrize("mode", ["kl", "abs", "mse", "low_var_kl"])
def test_kl_penalty_gradcheck(mode):
    old, new, _, _ = inputs(3)
    ref = old.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: core_algos.kl_penalty(a, b, mode), (new, ref))


@pytest.mark.parametrize("mode", ["kl", "low_var_kl"])
def test_kl_penalty_plus_is_straight_through_k2(mode):
    old, new, _, _ = inputs(3)
    value = core_algos.kl_penalty(new, old, mode + "+")
    assert torch.allclose(value, core_algos.kl_penalty_forward(new, old, mode))
    value.sum().backward()
    assert torch.allclose(new.grad, (new - old).detach(), atol=1e-12)


def _surrogates(old, adv, mask, lo=0.2, hi=0.2, clip_c=3.0):
    """verl's stop-gradient surrogates written out independently (token-mean aggregation)."""
    n = mask.sum()

    def dppo(lp, binary):
        ratio = torch.exp(torch.clamp(lp - old, -20, 20))
        truncated = torch.clamp(ratio, max=clip_c).detach()
        p, po = lp.exp(), old.exp()
        if binary:
            bkl = po * (old - lp) + (1 - po) * torch.log((1 - po + 1e-8) / (1 - p + 1e-8))
            valid = torch.where(adv > 0, (bkl <= hi) | (p <= po), (bkl <= lo) | (p >= po))
        else:
            valid = torch.where(adv > 0, p - po <= hi, p - po >= -lo)
        return (-adv * truncated * lp * valid.detach().double() * mask).sum() / n

    def gspo(lp):
        seq_kl = ((lp - old) * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        s = torch.exp(torch.clamp(lp - lp.detach() + seq_kl.detach()[:, None], max=10.0))
        losses = torch.maximum(-adv * s, -adv * torch.clamp(s, 1 - lo, 1 + hi))
        return (losses * mask).sum() / n

    def cispo(lp):
        ratio = torch.exp(torch.clamp(lp - old, -20, 20))
        return (-torch.clamp(ratio, 1 - lo, 1 + hi).detach() * adv * lp * mask).sum() / n

    return {"dppo_tv": lambda lp: dppo(lp, False), "dppo_kl": lambda lp: dppo(lp, True), "gspo": gspo, "cispo": cispo}


@pytest.mark.parametrize("name", ["dppo_tv", "dppo_kl", "gspo", "cispo"])
def test_surrogate_gradients(name):
    old, new, adv, mask = inputs(6)
    ours = core_algos.get_policy_loss_fn(name)(old, new, adv, mask, loss_agg_mode="token-mean", config={})[0]
    (grad_ours,) = torch.autograd.grad(ours, new)
    reference = _surrogates(old, adv, mask)[name](new)
    (grad_ref,) = torch.autograd.grad(reference, new)
    assert ours.item() == pytest.approx(reference.item(), abs=1e-12)
    assert torch.allclose(grad_ours, grad_ref, atol=1e-12, rtol=0)


def test_entropy_logprob_and_entropy_loss_gradcheck():
    g = torch.Generator().manual_seed(4)
    logits = torch.randn(2, 3, 6, generator=g, dtype=F64, requires_grad=True)
    labels = torch.randint(0, 6, (2, 3), generator=g)
    mask = torch.ones(2, 3, dtype=F64)
    assert torch.autograd.gradcheck(lambda x: verl_F.entropy_from_logits(x, chunk_size=2), (logits,))
    assert torch.autograd.gradcheck(lambda x: verl_F.logprobs_from_logits(x, labels, chunk_size=4), (logits,))
    assert torch.autograd.gradcheck(lambda x: core_algos.compute_entropy_loss(x, mask), (logits,))


def test_masked_whiten_gradcheck():
    _, new, _, mask = inputs(5)
    assert torch.autograd.gradcheck(lambda x: verl_F.masked_whiten(x, mask), (new,))
