"""verl.utils.torch_functional on libverl against independent float64 formulas."""

import pytest
import torch

import verl
from verl.utils import torch_functional as F


def test_masked_mean_sum_hand_values_and_axis():
    v = torch.tensor([[1.0, 2.0, float("nan")], [4.0, 5.0, 6.0]], dtype=torch.float64)
    m = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.float64)
    assert F.masked_sum(v, m).item() == 7.0
    assert F.masked_mean(v, m).item() == pytest.approx(7.0 / (3.0 + 1e-8), rel=1e-14)
    rows = F.masked_mean(v, m, axis=1)
    assert rows.tolist() == pytest.approx([3.0 / (2 + 1e-8), 4.0 / (1 + 1e-8)], rel=1e-14)
    assert F.masked_sum(v, m, axis=(0, 1)).item() == 7.0


def test_masked_var_and_whiten_against_numpy_style_reference():
    torch.manual_seed(0)
    v = torch.randn(5, 8, dtype=torch.float64)
    m = (torch.rand(5, 8, dtype=torch.float64) > 0.3).double()
    picked = v[m.bool()]
    assert F.masked_var(v, m).item() == pytest.approx(picked.var(unbiased=True).item(), rel=1e-8)
    w = F.masked_whiten(v, m)
    assert abs(F.masked_mean(w, m).item()) < 1e-8
    with pytest.raises(ValueError, match="At least one element"):
        F.masked_var(v, torch.zeros_like(m))


def test_get_response_mask_examples():
    ids = torch.tensor([[20, 10, 34, 1, 0, 0, 0], [78, 0, 76, 2, 1, 0, 0]])
    assert F.get_response_mask(ids, eos_token=1).tolist() == [[1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0]]
    assert F.get_response_mask(ids, eos_token=[1, 2]).tolist() == [[1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0, 0]]
    assert F.get_response_mask(ids, 1, dtype=torch.bool).dtype == torch.bool


def test_entropy_and_logprobs_match_autograd_reference():
    torch.manual_seed(1)
    logits = torch.randn(3, 4, 17, dtype=torch.float64, requires_grad=True)
    ref_in = logits.detach().clone().requires_grad_(True)
    labels = torch.randint(0, 17, (3, 4))
    w1, w2 = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    ours = (F.entropy_from_logits(logits, chunk_size=5) * w1).sum() + (F.logprobs_from_logits(logits, labels, chunk_size=5) * w2).sum()
    logp = torch.log_softmax(ref_in, -1)
    ref = (-(logp.exp() * logp).sum(-1) * w1).sum() + (logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1) * w2).sum()
    assert abs(ours.item() - ref.item()) < 1e-10
    ours.backward()
    ref.backward()
    assert torch.allclose(logits.grad, ref_in.grad, atol=1e-12, rtol=0)


def test_bad_shapes_raise_value_error_naming_both():
    with pytest.raises(verl.InvalidArgumentError, match=r"\[2, 3\].*\[3\]"):
        F.masked_mean(torch.zeros(2, 3), torch.zeros(3))
