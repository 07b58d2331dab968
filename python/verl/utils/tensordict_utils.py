"""tensordict helpers verl code imports (``verl.utils.tensordict_utils``): the ``TensorDict`` that replaces
``DataProto`` in verl's newer workers, built, indexed, split, joined, padded and compared with verl 0.9.1's rules.

A batch ``TensorDict`` holds three kinds of entries:
  * tensors with the batch dimension first, dense or jagged nested (``layout=torch.jagged``, contiguous);
  * per-row Python values -- lists, nested lists, dicts, numpy rows -- as a ``NonTensorStack`` of one
    ``NonTensorData`` per row, so each row keeps its own object whatever its shape;
  * batch-wide values (``meta_info`` in ``DataProto`` terms) as ``NonTensorData``.

Failures are verl's: ``AssertionError`` where verl asserts (``verl.DataContractError`` is one), ``KeyError`` for a
missing key. Nested tensors of 3 or more dimensions (MRoPE ``position_ids``: per row (4, seq)) keep their ragged
dimension (``_ragged_idx``) through selection, chunking and concatenation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict

from ..errors import DataContractError, VerlTypeError

__all__ = [
    "assert_tensordict_eq",
    "assign_non_tensor",
    "assign_non_tensor_data",
    "assign_non_tensor_stack",
    "chunk_tensordict",
    "concat_nested_tensors",
    "concat_tensordict",
    "contiguous",
    "get",
    "get_keys",
    "get_non_tensor_data",
    "get_tensordict",
    "index_select_tensor_dict",
    "list_of_dict_to_tensordict",
    "make_iterator",
    "maybe_fix_3d_position_ids",
    "nested_tensor_from_tensor_list",
    "non_tensor_stack",
    "pad_to_divisor",
    "pop",
    "pop_keys",
    "union_tensor_dict",
    "unpad",
    "unwrap_non_tensor_data",
]

logger = logging.getLogger(__name__)


def non_tensor_stack(values: Sequence[Any]) -> NonTensorStack:
    """One ``NonTensorData`` per row, stacked: each row's value kept as the Python object it is."""
    return NonTensorStack.from_list([NonTensorData(value) for value in values])


def _is_nested(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_nested


def _native(value: Any) -> Any:
    """A stored entry as plain Python: tensors as they are, a NonTensorStack as a list, NonTensorData unwrapped."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, NonTensorStack):
        return value.tolist()
    assert isinstance(value, NonTensorData), f"unexpected entry of type {type(value)}"
    return value.data


# -- building --------------------------------------------------------------------------------------------------------

def _rows(key: str, value: Any) -> int:
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            raise DataContractError(f"{key} is a scalar tensor; per-row entries need a batch dimension")
        return value.size(0)
    return len(value)


def get_tensordict(tensor_dict: dict[str, Any], non_tensor_dict: dict[str, Any] | None = None) -> TensorDict:
    """A ``TensorDict`` of ``tensor_dict``'s per-row entries (tensors; lists or arrays become ``NonTensorStack``;
    jagged nested tensors allowed) sharing one batch size, plus ``non_tensor_dict``'s entries as ``NonTensorData``.
    No per-row entry gives an empty batch size (``[]``).

    Rows that disagree, a tensor inside a list, a strided nested tensor, or a key in both dicts raise
    ``verl.DataContractError`` (an ``AssertionError``, as verl asserts these); another type, ``verl.VerlTypeError``."""
    source: dict[str, Any] = {}
    batch_size: int | None = None
    for key, value in tensor_dict.items():
        if _is_nested(value):
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


def list_of_dict_to_tensordict(list_of_dicts: list[dict[str, Any]]) -> TensorDict:
    """One row per dict (all with the first dict's keys): a key whose values are tensors of one shape becomes a
    stacked tensor, tensors of different lengths a jagged nested tensor, anything else a ``NonTensorStack``."""
    assert len(list_of_dicts) > 0, "need at least one row"
    source: dict[str, Any] = {}
    for key in list_of_dicts[0]:
        values = [row[key] for row in list_of_dicts]
        if all(isinstance(v, torch.Tensor) for v in values):
            if all(v.shape == values[0].shape for v in values):
                source[key] = torch.stack(values)
            else:
                source[key] = torch.nested.as_nested_tensor(values, layout=torch.jagged)
        else:
            source[key] = NonTensorStack(*values)
    return TensorDict(source, batch_size=[len(list_of_dicts)])


# -- non-tensor entries ----------------------------------------------------------------------------------------------

def assign_non_tensor_data(tensor_dict: TensorDict, key: str, val: Any) -> None:
    """``tensor_dict[key]`` = ``val`` as one batch-wide ``NonTensorData``."""
    assert isinstance(tensor_dict, TensorDict), "input dict must be a TensorDict"
    tensor_dict[key] = NonTensorData(val)


def assign_non_tensor_stack(tensor_dict: TensorDict, key: str, val: list) -> None:
    """``tensor_dict[key]`` = ``val`` as one ``NonTensorData`` per row (lists of lists, of dicts, ... kept as they
    are). A length other than the batch size raises tensordict's ``RuntimeError``."""
    assert isinstance(tensor_dict, TensorDict), "input dict must be a TensorDict"
    tensor_dict[key] = non_tensor_stack(val)


def assign_non_tensor(tensor_dict: TensorDict, **kwargs: Any) -> TensorDict:
    """Each keyword into ``tensor_dict``: a ``NonTensorData`` / ``NonTensorStack`` as it is, a list as per-row
    values (``assign_non_tensor_stack``), anything else as a batch-wide value. Returns ``tensor_dict``."""
    assert isinstance(tensor_dict, TensorDict), "input dict must be a TensorDict"
    for key, val in kwargs.items():
        if isinstance(val, (NonTensorData, NonTensorStack)):
            tensor_dict[key] = val
        elif isinstance(val, list):
            assign_non_tensor_stack(tensor_dict, key, val)
        else:
            assign_non_tensor_data(tensor_dict, key, val)
    return tensor_dict


def unwrap_non_tensor_data(data: Any) -> Any:
    """The value inside a ``NonTensorData``; anything else unchanged."""
    return data.data if isinstance(data, NonTensorData) else data


def get_non_tensor_data(data: TensorDict, key: str, default: Any) -> Any:
    """``data[key]`` unwrapped from its ``NonTensorData``, or ``default`` when absent."""
    return unwrap_non_tensor_data(data.get(key, default))


def get(tensordict: TensorDict, key: str, default: Any = None) -> Any:
    """``tensordict[key]`` as plain Python (a tensor; a list for per-row values; the value of a batch-wide one),
    or ``default`` when absent."""
    if key not in tensordict.keys():
        return default
    return _native(tensordict.get(key))


def pop(tensordict: TensorDict, key: str, default: Any = None) -> Any:
    """``get`` that also removes ``key``; ``default`` when absent."""
    if key not in tensordict.keys():
        return default
    return _native(tensordict.pop(key))


def _subset(tensordict: TensorDict, keys: Iterable[str], remove: bool) -> TensorDict:
    per_row: dict[str, Any] = {}
    batch_wide: dict[str, Any] = {}
    keys = list(keys)
    for key in keys:  # every key is checked before anything is removed
        if key not in tensordict.keys():
            raise KeyError(f"key {key} not in tensordict")
    for key in keys:
        value = tensordict.pop(key) if remove else tensordict.get(key)
        if isinstance(value, (torch.Tensor, NonTensorStack)):
            per_row[key] = _native(value)
        else:
            batch_wide[key] = _native(value)
    return get_tensordict(per_row, batch_wide)


def get_keys(tensordict: TensorDict, keys: Iterable[str]) -> TensorDict:
    """A new ``TensorDict`` of ``keys`` only (tensors shared, not copied); ``KeyError`` for a missing key."""
    return _subset(tensordict, keys, remove=False)


def pop_keys(tensordict: TensorDict, keys: Iterable[str]) -> TensorDict:
    """``get_keys`` that also removes ``keys`` from ``tensordict``; ``KeyError`` for a missing key (nothing is
    removed then)."""
    return _subset(tensordict, keys, remove=True)


# -- nested tensors --------------------------------------------------------------------------------------------------

def _ragged_idx(nested: torch.Tensor) -> int:
    return getattr(nested, "_ragged_idx", nested.dim() - 1)


def nested_tensor_from_tensor_list(tensors: Sequence[torch.Tensor], ragged_idx: int | None = None) -> torch.Tensor:
    """A jagged nested tensor of ``tensors`` (one per row, all of one rank), ragged along row dimension
    ``ragged_idx - 1`` (default: the last). Rows of 2 or more dimensions are concatenated along that dimension with
    offsets by hand, so the ragged dimension is the one asked for even when every row has the same length there
    (``torch.nested.as_nested_tensor`` would pick the last)."""
    assert len(tensors) > 0, "Must provide at least one tensor"
    row_dim = tensors[0].dim()
    if ragged_idx is None:
        ragged_idx = row_dim
    assert 1 <= ragged_idx <= row_dim, f"ragged_idx must be in [1, {row_dim}]. Got {ragged_idx=} and {row_dim=}"
    if row_dim == 1:
        return torch.nested.as_nested_tensor(list(tensors), layout=torch.jagged)
    cat_dim = ragged_idx - 1
    values = torch.cat(list(tensors), dim=cat_dim)
    lengths = torch.tensor([t.shape[cat_dim] for t in tensors], dtype=torch.long, device=values.device)
    offsets = torch.zeros(len(tensors) + 1, dtype=torch.long, device=values.device)
    torch.cumsum(lengths, dim=0, out=offsets[1:])
    nested = torch.nested.nested_tensor_from_jagged(values=values, offsets=offsets)
    nested._ragged_idx = ragged_idx
    return nested


def concat_nested_tensors(tensors: list[torch.Tensor]) -> torch.Tensor:
    """The rows of several contiguous jagged nested tensors (2 or more dimensions) as one, in order, ragged where
    the first one is."""
    for tensor in tensors:
        assert tensor.is_nested and tensor.is_contiguous(), "concat_nested_tensors takes contiguous nested tensors"
        assert tensor.dim() >= 2, f"nested tensor must have 2 or more dimensions. Got {tensor.shape}"
    rows = [row for tensor in tensors for row in tensor.unbind(0)]
    return nested_tensor_from_tensor_list(rows, ragged_idx=_ragged_idx(tensors[0]))


def maybe_fix_3d_position_ids(data: TensorDict) -> None:
    """Sets a 3-D nested ``position_ids``' ragged dimension back to 2 (MRoPE: per row (4, seq)), which a
    consolidated TensorDict loses through pickling."""
    if "position_ids" in data.keys():
        position_ids = data["position_ids"]
        if position_ids.is_nested and position_ids.dim() == 3:
            position_ids._ragged_idx = 2


# -- rows: selection, splitting, joining -----------------------------------------------------------------------------

def index_select_tensor_dict(batch: TensorDict | None, indices: torch.Tensor | list[int]) -> TensorDict | None:
    """The rows ``indices`` (1-D, any order, repeats allowed) of ``batch``, batch-wide values kept; None for None.
    Nested tensors are rebuilt from the selected rows with their ragged dimension."""
    if isinstance(indices, list):
        indices = torch.tensor(indices)
    assert indices.dim() == 1, "indices must be a 1D tensor"
    if batch is None:
        return None
    selected: dict[str, Any] = {}
    for key, value in batch.items():
        if _is_nested(value):
            rows = value.unbind()
            selected[key] = nested_tensor_from_tensor_list([rows[i] for i in indices.tolist()],
                                                           ragged_idx=_ragged_idx(value))
        elif isinstance(value, torch.Tensor):
            selected[key] = value[indices]
        elif value.shape:  # NonTensorStack: per-row
            selected[key] = value[indices]
        else:  # NonTensorData: batch-wide
            selected[key] = value
    return TensorDict(source=selected, batch_size=indices.shape[0])


def chunk_tensordict(td: TensorDict, chunks: int) -> list[TensorDict]:
    """``td`` in ``chunks`` equal consecutive parts (its length must divide evenly, else AssertionError). Nested
    tensors are split row by row (``TensorDict.chunk`` cannot split jagged ones); where ``unbind`` fails on a 3-D+
    jagged tensor (pytorch issue 153238) the rows come from its padded form cut back to their lengths."""
    assert isinstance(td, TensorDict) and len(td) % chunks == 0, (
        f"expecting td with length divisible by chunks, but got {len(td)} and {chunks}")
    size = len(td) // chunks
    nested_keys = [key for key, value in td.items() if _is_nested(value)]
    dense = TensorDict({k: v for k, v in td.items() if k not in nested_keys}, batch_size=td.batch_size,
                       device=td.device)
    parts = dense.chunk(chunks=chunks)
    for key in nested_keys:
        nested = td[key]
        try:
            rows = list(nested.unbind(dim=0))
        except RuntimeError:
            padded = nested.to_padded_tensor(0)
            lengths = nested.offsets().diff().tolist()
            dim = _ragged_idx(nested) - 1  # the ragged dimension of a row
            rows = [padded[i].narrow(dim, 0, length) for i, length in enumerate(lengths)]
        for i, part in enumerate(parts):
            part[key] = nested_tensor_from_tensor_list(rows[i * size:(i + 1) * size], ragged_idx=_ragged_idx(nested))
    return list(parts)


def concat_tensordict(data: list[TensorDict]) -> TensorDict:
    """The rows of several TensorDicts with the same keys, in order (inputs untouched); batch-wide values are the
    first one's. TensorDicts without a batch dimension (batch-wide values only) give the first of them."""
    assert len(data) > 0, "Must have at least one tensordict"
    if len(data[0].batch_size) == 0:
        for td in data:
            assert len(td.batch_size) == 0, "cannot concatenate a TensorDict without rows with one that has rows"
        return data[0]
    nested_keys = {key for key in data[0].keys() if _is_nested(data[0].get(key))}
    # Batch-wide values are set from the first TensorDict after the rows are joined: TensorDict.cat keeps the first
    # one only up to tensordict 0.10 (verl's pin); later versions stack differing values into a list.
    batch_wide = {key: data[0].get(key) for key in data[0].keys() if isinstance(data[0].get(key), NonTensorData)}
    rows = []
    for td in data:
        keys = {key for key in td.keys() if _is_nested(td.get(key))}
        assert keys == nested_keys, "All tensordicts must have the same set of nested tensors."
        rows.append(TensorDict({k: td.get(k) for k in td.keys() if k not in nested_keys and k not in batch_wide},
                               batch_size=td.batch_size, device=td.device))
    output = TensorDict.cat(rows, dim=0)
    for key in nested_keys:
        output[key] = concat_nested_tensors([td.get(key) for td in data])
    for key, value in batch_wide.items():
        output[key] = NonTensorData(value.data)
    return output


def union_tensor_dict(tensor_dict1: TensorDict, tensor_dict2: TensorDict) -> TensorDict:
    """``tensor_dict2``'s keys added to ``tensor_dict1`` in place (and returned). Both must have one batch size, and
    a key in both must hold equal values (tensors element-wise, the rest with ``==``): AssertionError otherwise."""
    assert tensor_dict1.batch_size == tensor_dict2.batch_size, (
        f"Two tensor dict must have identical batch size. Got {tensor_dict1.batch_size} and {tensor_dict2.batch_size}")
    for key in tensor_dict2.keys():
        if key not in tensor_dict1.keys():
            tensor_dict1[key] = tensor_dict2.get(key)  # get() keeps NonTensorData / NonTensorStack wrapped
        elif isinstance(tensor_dict2[key], torch.Tensor):
            assert tensor_dict1[key].equal(tensor_dict2[key]), (
                f"{key} in tensor_dict1 and tensor_dict2 are not the same object")
        else:
            assert tensor_dict1[key] == tensor_dict2[key], (
                f"{key} in tensor_dict1 and tensor_dict2 are not the same object")
    return tensor_dict1


def make_iterator(tensordict: TensorDict, mini_batch_size: int, epochs: int, seed: int | None = None,
                  dataloader_kwargs: dict[str, Any] | None = None) -> Iterator[TensorDict]:
    """Mini-batches of ``mini_batch_size`` rows (which must divide the batch size), ``epochs`` passes over the
    rows. ``dataloader_kwargs`` go to the ``torch.utils.data.DataLoader`` that draws the row indices
    (``shuffle``, ``drop_last``, ...); ``seed`` seeds its generator, so one seed gives one order."""
    from torch.utils.data import DataLoader

    assert tensordict.batch_size[0] % mini_batch_size == 0, f"{tensordict.batch_size[0]} % {mini_batch_size} != 0"
    dataloader_kwargs = {} if dataloader_kwargs is None else dataloader_kwargs
    assert isinstance(dataloader_kwargs, dict)
    generator = None
    if seed is not None:
        generator = torch.Generator()
        generator.manual_seed(seed)
    loader = DataLoader(dataset=torch.arange(tensordict.shape[0]), batch_size=mini_batch_size,
                        collate_fn=lambda rows: rows, generator=generator, **dataloader_kwargs)

    def batches() -> Iterator[TensorDict]:
        for _ in range(epochs):
            for rows in loader:
                yield index_select_tensor_dict(tensordict, torch.stack(rows) if isinstance(rows, list) else rows)

    return iter(batches())


def pad_to_divisor(data: TensorDict, size_divisor: int) -> tuple[TensorDict, int]:
    """``data`` with rows repeated from its start (cycling when more are needed than it has) until its length is a
    multiple of ``size_divisor``, and how many rows were added. Unchanged (and 0) when it already is."""
    assert isinstance(data, TensorDict), "data must be a TensorDict"
    if len(data) % size_divisor == 0:
        if len(data) == 0:
            logger.warning("padding a DataProto with no item, no changed made")
        return data, 0
    pad_size = size_divisor - len(data) % size_divisor
    padding = []
    remaining = pad_size
    while remaining > 0:
        take = min(remaining, len(data))
        padding.append(data[:take])
        remaining -= take
    return torch.cat([data] + padding), pad_size


def unpad(data: TensorDict, pad_size: int) -> TensorDict:
    """``data`` without its last ``pad_size`` rows (``pad_to_divisor`` undone)."""
    return data[:-pad_size] if pad_size != 0 else data


def contiguous(data: TensorDict) -> TensorDict:
    """A new TensorDict of ``data``'s entries with every tensor contiguous (``TensorDict.contiguous`` would turn
    the non-tensor entries into something else), so that it can be consolidated."""
    per_row: dict[str, Any] = {}
    batch_wide: dict[str, Any] = {}
    for key in data.keys():
        value = data.get(key)
        if isinstance(value, NonTensorData):
            batch_wide[key] = value
        elif isinstance(value, NonTensorStack):
            per_row[key] = value
        else:
            assert isinstance(value, torch.Tensor), f"Expect val to be a torch.Tensor. Got {type(value)}"
            per_row[key] = value.contiguous()
    return get_tensordict(per_row, batch_wide)


# -- comparison ------------------------------------------------------------------------------------------------------

def assert_tensordict_eq(tensordict1: TensorDict, tensordict2: TensorDict) -> None:
    """AssertionError unless both have the same keys with values of the same types that are equal: tensors
    element-wise, nested tensors row by row (same rows, same lengths), the rest with ``==``."""
    keys1, keys2 = set(tensordict1.keys()), set(tensordict2.keys())
    assert keys1 == keys2, f"key set diffs. Got {keys2=} vs {keys1=}"
    for key in tensordict1.keys():
        val1, val2 = tensordict1[key], tensordict2[key]
        assert type(val1) is type(val2), f"The type of {key} must be the same. Got {type(val1)} vs {type(val2)}"
        if isinstance(val1, torch.Tensor):
            if val1.is_nested or val2.is_nested:
                assert val1.is_nested and val2.is_nested, (
                    f"{key}: both tensors must be nested. {val1.is_nested=}, {val2.is_nested=}")
                rows1, rows2 = val1.unbind(), val2.unbind()
                assert len(rows1) == len(rows2), f"{key}: {len(rows1)} rows vs {len(rows2)}"
                for r1, r2 in zip(rows1, rows2, strict=True):
                    assert torch.equal(r1, r2), f"{key}: nested rows differ. {r1=} vs {r2=}"
            else:
                assert torch.all(torch.eq(val1, val2)).item(), f"{key}: tensors differ"
        else:
            assert val1 == val2, f"{key}: {val1!r} != {val2!r}"
