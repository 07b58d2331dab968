"""The rollout sampler's empirical token distributions against the truncated distributions
(top-k, top-p, min-p, temperature), by a chi-square test on a small vocabulary with fixed draws."""

import math

import pytest
import torch

from verl import _C

VOCAB = 12
N = 40000


def chi2_critical(df: int, z: float = 3.09) -> float:
    """Upper 0.001 quantile of chi-square(df) (Wilson-Hilferty)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def expected(logits: torch.Tensor, temperature=1.0, top_k=-1, top_p=1.0, min_p=0.0) -> torch.Tensor:
    """The truncated, renormalised distribution, written out directly (float64)."""
    p = torch.softmax(logits.double() / temperature, -1)
    order = torch.argsort(p, descending=True)
    keep = torch.ones(VOCAB, dtype=torch.bool)
    if top_k > 0:
        keep[order[top_k:]] = False
    q = torch.where(keep, p, torch.zeros_like(p))
    q = q / q.sum()
    if top_p < 1.0:
        mass = 0.0
        keep_p = torch.zeros(VOCAB, dtype=torch.bool)
        for t in order.tolist():
            if q[t] == 0:
                continue
            if mass < top_p:
                keep_p[t] = True
            mass += float(q[t])
        q = torch.where(keep_p, q, torch.zeros_like(q))
    if min_p > 0.0:
        q = torch.where(q >= min_p * q.max(), q, torch.zeros_like(q))
    return q / q.sum()


@pytest.mark.parametrize("kw", [dict(), dict(temperature=0.6), dict(top_k=4), dict(top_p=0.7), dict(min_p=0.2),
                                dict(top_k=6, top_p=0.8, temperature=1.3)])
def test_empirical_distribution_matches_truncated(kw):
    torch.manual_seed(0)
    logits = torch.randn(VOCAB) * 1.5
    q = expected(logits, **kw)
    rows = N
    uniform = [_C.rollout.stream_uniform(1234, i) for i in range(rows)]
    tokens, logprobs = _C.rollout.sample(
        logits.float().expand(rows, VOCAB).contiguous(), [kw.get("temperature", 1.0)] * rows, [kw.get("top_k", -1)] * rows,
        [kw.get("top_p", 1.0)] * rows, [kw.get("min_p", 0.0)] * rows, uniform)
    counts = torch.bincount(tokens, minlength=VOCAB).double()
    kept = q > 0
    assert counts[~kept].sum() == 0, "a truncated token was sampled"
    exp = q[kept] * rows
    chi2 = float(((counts[kept] - exp) ** 2 / exp).sum())
    df = int(kept.sum()) - 1
    if df > 0:
        assert chi2 < chi2_critical(df), (chi2, df)
    # Log-probs are of the temperature-scaled, untruncated distribution.
    ref = torch.log_softmax(logits / kw.get("temperature", 1.0), -1)[tokens]
    assert torch.allclose(logprobs, ref.float(), atol=1e-6)


def test_greedy_rows_and_mixed_batches():
    torch.manual_seed(1)
    logits = torch.randn(6, VOCAB)
    u = [0.5] * 6
    tokens, logprobs = _C.rollout.sample(logits, [0.0, 1.0, 0.0, 0.7, 0.0, 1.0], [-1] * 6, [1.0] * 6, [0.0] * 6, u)
    for i in (0, 2, 4):
        assert tokens[i] == logits[i].argmax()
        assert torch.isclose(logprobs[i], torch.log_softmax(logits[i], -1)[tokens[i]])
    # A row's token depends only on its own logits and draw, not on the rest of the batch.
    alone, _ = _C.rollout.sample(logits[3:4], [0.7], [-1], [1.0], [0.0], [0.5])
    assert alone[0] == tokens[3]


def test_stream_uniform_is_a_pure_function():
    a = [_C.rollout.stream_uniform(5, i) for i in range(1000)]
    assert a == [_C.rollout.stream_uniform(5, i) for i in range(1000)]
    assert all(0.0 <= x < 1.0 for x in a)
    assert abs(sum(a) / len(a) - 0.5) < 0.05
    assert a != [_C.rollout.stream_uniform(6, i) for i in range(1000)]
