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
    "distributed_mean_max_min_std",
    "distributed_masked_mean",
    "expand_as_nested",
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


def distributed_mean_max_min_std(local_tensor: torch.Tensor, compute_max: bool = True, compute_min: bool = True,
                                 compute_std: bool = True
                                 ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """Mean, max, min and sample standard deviation (``n - 1``) of every element on every rank of the default
    ``torch.distributed`` group, the same on each rank; the statistics not asked for are None. Every rank must call
    it (it all-reduces). The element count is kept on ``local_tensor``'s device, so gloo (CPU) and nccl both work."""
    dist = torch.distributed
    total = torch.sum(local_tensor)
    count = torch.tensor(local_tensor.numel(), device=local_tensor.device)
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    dist.all_reduce(count, op=dist.ReduceOp.SUM)
    mean = total / count
    global_max = global_min = std = None
    if compute_max:
        global_max = torch.max(local_tensor)
        dist.all_reduce(global_max, op=dist.ReduceOp.MAX)
    if compute_min:
        global_min = torch.min(local_tensor)
        dist.all_reduce(global_min, op=dist.ReduceOp.MIN)
    if compute_std:
        squares = torch.sum((local_tensor - mean) ** 2)
        dist.all_reduce(squares, op=dist.ReduceOp.SUM)
        std = torch.sqrt(squares / (count - 1))
    return mean, global_max, global_min, std


def distributed_masked_mean(local_tensor: torch.Tensor, local_mask: torch.Tensor) -> torch.Tensor:
    """Mean of the elements whose ``local_mask`` is 1 over every rank of the default group (``local_mask`` has
    ``local_tensor``'s shape); every rank gets the same value. No valid element anywhere gives NaN, as in verl."""
    dist = torch.distributed
    total = torch.sum(local_tensor * local_mask)
    count = torch.sum(local_mask)
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    dist.all_reduce(count, op=dist.ReduceOp.SUM)
    return total / count


def expand_as_nested(tensor: torch.Tensor, nested_tensor: torch.Tensor) -> torch.Tensor:
    """One value per row, ``tensor`` (bsz,), repeated along each row of the jagged ``nested_tensor`` (bsz, j): a
    jagged nested tensor with ``nested_tensor``'s offsets whose row i holds ``tensor[i]`` ``len(row i)`` times.

    AssertionError (as in verl) when ``nested_tensor`` is not nested or not 2-D, ``tensor`` is not 1-D, or the two
    batch sizes differ."""
    assert nested_tensor.is_nested, "nested_tensor must be nested"
    assert tensor.shape[0] == nested_tensor.shape[0], (
        f"The batch shape must be the same. Got {tensor.shape[0]} vs {nested_tensor.shape[0]}")
    assert tensor.dim() == 1, "The ndim of tensor must be 1"
    assert nested_tensor.dim() == 2, "The ndim of nested_tensor must be 2"
    offsets = nested_tensor.offsets()
    values = torch.repeat_interleave(tensor, offsets.diff(), dim=0)
    return torch.nested.nested_tensor_from_jagged(values=values, offsets=offsets)
