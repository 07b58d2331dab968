"""tensordict helpers verl code imports (``verl.utils.tensordict_utils``): building one ``TensorDict`` from tensors,
per-row Python values and batch-wide values, as ``DataProto.to_tensordict`` hands it on.

Per-row values (lists, nested lists, dicts) become a ``NonTensorStack`` of one ``NonTensorData`` per row, so each
row keeps its own Python object whatever its shape; batch-wide values become ``NonTensorData``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict

from ..errors import DataContractError, VerlTypeError

__all__ = ["get_tensordict", "non_tensor_stack"]


def non_tensor_stack(values: Sequence[Any]) -> NonTensorStack:
    """One ``NonTensorData`` per row, stacked: each row's value kept as the Python object it is."""
    return NonTensorStack.from_list([NonTensorData(value) for value in values])


def _rows(key: str, value: Any) -> int:
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            raise DataContractError(f"{key} is a scalar tensor; per-row entries need a batch dimension")
        return value.size(0)
    return len(value)


def get_tensordict(tensor_dict: dict[str, Any], non_tensor_dict: dict[str, Any] | None = None) -> TensorDict:
    """A ``TensorDict`` of ``tensor_dict``'s per-row entries (tensors; lists or arrays become ``NonTensorStack``;
    jagged nested tensors allowed) sharing one batch size, plus ``non_tensor_dict``'s entries as ``NonTensorData``.

    Rows that disagree, a tensor inside a list, or a key in both dicts raise ``verl.DataContractError`` (verl
    asserts these)."""
    source: dict[str, Any] = {}
    batch_size: int | None = None
    for key, value in tensor_dict.items():
        if isinstance(value, torch.Tensor) and value.is_nested:
            if value.layout != torch.jagged or not value.is_contiguous():
                raise DataContractError(f"{key}: nested tensors must be contiguous with layout=torch.jagged")
        if isinstance(value, (list, np.ndarray)):
            if any(isinstance(v, torch.Tensor) for v in value):
                raise DataContractError(f"{key}: a list becomes a NonTensorStack, which holds no torch.Tensor; "
                                        "convert the tensors to numpy first")
            value = non_tensor_stack(value)
        elif not isinstance(value, (torch.Tensor, NonTensorStack)):
            raise VerlTypeError(f"{key} -> {type(value)} isn't of 'torch.Tensor | list | np.ndarray' type")
        rows = _rows(key, value)
        if batch_size is None:
            batch_size = rows
        elif rows != batch_size:
            raise DataContractError(
                f"Batch size of tensor {key} is not consistent with other tensors. Expected {batch_size}, got {rows}")
        source[key] = value
    for key, value in (non_tensor_dict or {}).items():
        if key in source:
            raise DataContractError(f"{key} is both a per-row entry and a batch-wide one")
        source[key] = NonTensorData(value)
    return TensorDict(source=source, batch_size=[] if batch_size is None else [batch_size])
