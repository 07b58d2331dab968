"""The fused CPU kernels behind GAE, the vanilla policy loss and logprobs_from_logits against verl's
formulas written out as plain torch ops (float32 as the trainer runs them; bitwise where promised)."""

import torch

import verl
from verl.trainer.ppo import core_algos
from verl.utils import torch_functional as verl_F


def multi_turn_mask(bs, length, gen):
    """0/1 int64 masks made of alternating response (1) and observation (0) runs, one row all 0."""
    flips = torch.rand(bs, length, generator=gen) < 0.1
    mask = (flips.long().cumsum(-1) % 2 == 0).long()
    mask[3] = 0
    mask[5] = 1
    return mask


def verl_gae(rewards, values, mask, gamma, lam):
    """verl 0.9.1's compute_gae_advantage_return, op for op."""
    nextvalues, lastgaelam, out = 0, 0, []
    for t in reversed(range(rewards.shape[-1])):
        delta = rewards[:, t] + gamma * nextvalues - values[:, t]
        lastgaelam_ = delta + gamma * lam * lastgaelam
        nextvalues = values[:, t] * mask[:, t] + (1 - mask[:, t]) * nextvalues
        lastgaelam = lastgaelam_ * mask[:, t] + (1 - mask[:, t]) * lastgaelam
        out.append(lastgaelam)
    adv = torch.stack(out[::-1], dim=1)
    returns = adv + values
    valid = torch.where(mask.bool(), adv, 0.0) * mask
    mean = valid.sum() / (mask.sum() + 1e-8)
    centered = torch.where(mask.bool(), (adv - mean) ** 2, 0.0) * mask
    var = centered.sum() / (mask.sum() + 1e-8) * (mask.sum() / (mask.sum() - 1))
    return (adv - mean) * torch.rsqrt(var + 1e-8), returns


def test_gae_float32_multi_turn_equals_verl_formula():
    gen = torch.Generator().manual_seed(0)
    bs, length = 16, 300
    mask = multi_turn_mask(bs, length, gen)
    rewards = torch.randn(bs, length, generator=gen) * 0.1
    values = torch.randn(bs, length, generator=gen)
    adv, ret = core_algos.compute_gae_advantage_return(rewards, values, mask, gamma=0.99, lam=0.95)
    ref_adv, ref_ret = verl_gae(rewards, values, mask, 0.99, 0.95)
    assert adv.dtype == ret.dtype == torch.float32
    assert torch.equal(ret, ref_ret)
    assert (adv - ref_adv).abs().max().item() <= 1e-6


def verl_vanilla(old_log_prob, log_prob, advantages, mask, low, high, c):
    """verl 0.9.1's compute_policy_loss_vanilla with token-mean, op for op."""
    negative_approx_kl = torch.clamp(log_prob - old_log_prob, min=-20.0, max=20.0)
    ratio = torch.exp(negative_approx_kl)
    ppo_kl = verl_F.masked_mean(-negative_approx_kl, mask)
    pg_losses1 = -advantages * ratio
    pg_losses2 = -advantages * torch.clamp(ratio, 1 - low, 1 + high)
    clip_pg_losses1 = torch.maximum(pg_losses1, pg_losses2)
    pg_clipfrac = verl_F.masked_mean(torch.gt(pg_losses2, pg_losses1).float(), mask)
    pg_losses3 = -advantages * c
    clip_pg_losses2 = torch.min(pg_losses3, clip_pg_losses1)
    pg_clipfrac_lower = verl_F.masked_mean(torch.gt(clip_pg_losses1, pg_losses3) * (advantages < 0).float(), mask)
    pg_losses = torch.where(advantages < 0, clip_pg_losses2, clip_pg_losses1)
    loss = verl_F.masked_sum(pg_losses, mask) / mask.sum()
    return loss, {"actor/pg_clipfrac": pg_clipfrac.item(), "actor/ppo_kl": ppo_kl.item(),
                  "actor/pg_clipfrac_lower": pg_clipfrac_lower.item()}


def test_vanilla_policy_loss_float32_matches_verl_formula():
    gen = torch.Generator().manual_seed(1)
    bs, length = 32, 200
    mask = multi_turn_mask(bs, length, gen)
    old = -torch.empty(bs, length).exponential_(1.0, generator=gen)
    new = old + 0.3 * torch.randn(bs, length, generator=gen)
    new[:, 7] = old[:, 7]  # ratio exactly 1: the two clip terms tie
    adv = torch.randn(bs, 1, generator=gen) * mask
    config = {"clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "clip_ratio_c": 3.0}
    for mode in ("token-mean", "seq-mean-token-mean"):
        lp = new.clone().requires_grad_(True)
        loss, metrics = core_algos.compute_policy_loss_vanilla(old, lp, adv, mask, loss_agg_mode=mode, config=config)
        loss.backward()
        ref_lp = new.clone().requires_grad_(True)
        if mode == "token-mean":
            ref_loss, ref_metrics = verl_vanilla(old, ref_lp, adv, mask, 0.2, 0.28, 3.0)
        else:
            ref_loss = core_algos.agg_loss(verl_vanilla_matrix(old, ref_lp, adv, 0.2, 0.28, 3.0), mask, mode)
            ref_metrics = metrics
        ref_loss.backward()
        assert loss.dtype == torch.float32
        assert abs(loss.item() - ref_loss.item()) <= 1e-6
        assert (lp.grad - ref_lp.grad).abs().max().item() <= 1e-9
        assert metrics.keys() == ref_metrics.keys()
        for name, value in ref_metrics.items():
            assert abs(metrics[name] - value) <= 1e-6, name


def verl_vanilla_matrix(old_log_prob, log_prob, advantages, low, high, c):
    ratio = torch.exp(torch.clamp(log_prob - old_log_prob, min=-20.0, max=20.0))
    clip1 = torch.maximum(-advantages * ratio, -advantages * torch.clamp(ratio, 1 - low, 1 + high))
    return torch.where(advantages < 0, torch.min(-advantages * c, clip1), clip1)


def test_logprobs_from_logits_int32_labels_non_contiguous_and_bf16():
    gen = torch.Generator().manual_seed(2)
    base = torch.randn(40, 3, 50, generator=gen)
    for dtype in (torch.float32, torch.bfloat16):
        logits = base.to(dtype).transpose(0, 1).requires_grad_(True)  # (3, 40, 50), not contiguous
        assert not logits.is_contiguous()
        labels = torch.randint(0, 50, (3, 40), generator=gen, dtype=torch.int32)
        grad_out = torch.randn(3, 40, generator=gen)
        out = verl_F.logprobs_from_logits(logits, labels)
        out.backward(grad_out)
        ref_in = logits.detach().double().requires_grad_(True)
        ref = torch.log_softmax(ref_in, -1).gather(-1, labels.long().unsqueeze(-1)).squeeze(-1)
        ref.backward(grad_out.double())
        assert out.dtype == torch.float32 and logits.grad.dtype == dtype
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        assert (out.double() - ref).abs().max().item() <= tol
        assert torch.allclose(logits.grad.double(), ref_in.grad, rtol=tol, atol=tol * 1e-2)


def test_outcome_broadcast_equals_verl_product_for_every_mask_dtype():
    """GRPO's `scores.unsqueeze(-1) * response_mask` written by the CPU kernel, bitwise, for 0/1 masks of
    each dtype and for int64 masks holding other values (those rows take the exact int64 conversion)."""
    gen = torch.Generator().manual_seed(3)
    bs, length = 24, 37
    # Integer rewards in groups of 4: row sums and group means are exact, so equality can be bitwise.
    rewards = torch.randint(-5, 6, (bs, length), generator=gen).float()
    index = torch.arange(bs) // 4
    scores = rewards.sum(-1)
    centered = scores - scores.view(-1, 4).mean(-1).repeat_interleave(4)
    base = multi_turn_mask(bs, length, gen)
    odd = base.clone()
    odd[1, 4] = 2
    odd[7, 0] = -1
    odd[9, 5] = 3 + 2**40  # not representable in int32
    for mask in (base, base.bool(), base.to(torch.uint8), base.int(), base.short(), base.float(), base.double(), odd):
        adv, ret = core_algos.compute_grpo_outcome_advantage(rewards, mask, index, norm_adv_by_std_in_grpo=False)
        expected = (centered.unsqueeze(-1) * mask).float()
        assert adv.dtype == torch.float32, mask.dtype
        assert torch.equal(adv, expected), (mask.dtype, (adv - expected).abs().max())
        assert torch.equal(ret, adv)
