"""verl's ``verl.utils.torch_functional`` helpers on libverl (C++): same names, arguments and results.

All functions are differentiable and device-generic. ``entropy_from_logits`` and
``logprobs_from_logits`` work through the vocabulary in row chunks with a recomputing backward,
so they never hold a second (batch, seq, vocab) tensor; half-precision logits are computed in
float32 and the result is float32.
"""

from __future__ import annotations

import torch

from .. import _C

__all__ = [
    "masked_sum",
    "masked_mean",
    "masked_var",
    "masked_whiten",
    "get_response_mask",
    "entropy_from_logits",
    "logprobs_from_logits",
]

_algo = _C.algo


def masked_sum(values: torch.Tensor, mask: torch.Tensor, axis: int | tuple[int, ...] | None = None) -> torch.Tensor:
    """Sum of ``values`` where ``mask`` is non-zero (NaNs outside the mask do not leak in)."""
    return _algo.masked_sum(values, mask, axis)


def masked_mean(values: torch.Tensor, mask: torch.Tensor, axis: int | tuple[int, ...] | None = None) -> torch.Tensor:
    """``masked_sum / (mask.sum(axis) + 1e-8)``, as verl."""
    return _algo.masked_mean(values, mask, axis)


def masked_var(values: torch.Tensor, mask: torch.Tensor, unbiased: bool = True) -> torch.Tensor:
    """Variance over the masked elements; unbiased needs at least two of them (else ValueError)."""
    return _algo.masked_var(values, mask, unbiased)


def masked_whiten(values: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    """``(values - mean) * rsqrt(var + 1e-8)`` over the masked elements."""
    return _algo.masked_whiten(values, mask, shift_mean)


def get_response_mask(response_id: torch.Tensor, eos_token: int | list[int] = 2, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    """1 up to and including the first EOS of each row, 0 after: (bs, response_length) -> same shape."""
    eos = [eos_token] if isinstance(eos_token, int) else list(eos_token)
    return _algo.get_response_mask(response_id, eos).to(dtype)


def entropy_from_logits(logits: torch.Tensor, chunk_size: int = 1024) -> torch.Tensor:
    """Entropy of softmax(logits) over the last dim: (..., vocab) -> (...)."""
    return _algo.entropy_from_logits(logits, chunk_size)


def logprobs_from_logits(logits: torch.Tensor, labels: torch.Tensor, inplace_backward: bool = True, chunk_size: int = 1024) -> torch.Tensor:
    """``log_softmax(logits)[labels]``: logits (..., vocab), labels (...) -> (...).

    ``inplace_backward`` is accepted for verl compatibility; the backward never needs the
    (…, vocab) probabilities kept alive anyway.
    """
    del inplace_backward
    return _algo.logprobs_from_logits(logits, labels, chunk_size)
