"""DataProto: the batch passed between every stage of an RL step, with verl's API.

Tensors live in ``batch`` (named tensors sharing the first dimension), per-row Python objects in
``non_tensor_batch`` (numpy object arrays, as in verl) and batch-wide values in ``meta_info``.
Which rows each operation takes (repeat order, chunk sizes, padding rows, iterator order) comes
from ``verl._C.row_plan`` -- the same code the C++ ``verl::DataProto`` runs -- so both sides agree
row for row. ``to_cpp()`` / ``from_cpp()`` cross to C++ sharing tensor storage.
"""

from __future__ import annotations

import copy
import io
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from . import _C
from .errors import DataContractError, DataError, VerlTypeError

__all__ = [
    "DataProto",
    "DataProtoItem",
    "DataProtoConfig",
    "TensorBatch",
    "pad_dataproto_to_divisor",
    "unpad_dataproto",
    "union_tensor_dict",
    "union_numpy_dict",
    "fold_batch_dim",
    "unfold_batch_dim",
    "serialize_single_tensor",
    "deserialize_single_tensor",
    "serialize_tensordict",
    "deserialize_tensordict",
]

_plan = _C.row_plan


class _DataProtoConfigMeta(type):
    _config: dict = {}
    auto_padding_key = "_verl_auto_padding"

    @property
    def auto_padding(cls) -> bool:
        enabled_by_env = os.getenv("VERL_AUTO_PADDING", "FALSE").upper() in ("TRUE", "1")
        return enabled_by_env or cls._config.get(cls.auto_padding_key, False)

    @auto_padding.setter
    def auto_padding(cls, enabled: bool) -> None:
        if not isinstance(enabled, bool):
            raise TypeError(f"auto_padding must be a bool, got {type(enabled).__name__}")
        cls._config[cls.auto_padding_key] = enabled


class DataProtoConfig(metaclass=_DataProtoConfigMeta):
    """Process-wide DataProto switches (verl's ``DataProtoConfig.auto_padding``)."""


def _object_array(values: Iterable[Any]) -> np.ndarray:
    """A 1-D object array holding ``values`` as they are (np.array would turn equal-length lists into 2-D)."""
    values = list(values)
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def _require_keys(keys: Iterable[str], store: dict, where: str) -> None:
    """Raises DataError naming the keys of ``keys`` missing from ``store`` (and the keys it has)."""
    missing = [k for k in keys if k not in store]
    if missing:
        raise DataError(f"keys {missing} not in {where}; keys: {sorted(store)}")


def _as_rows(n: int, idxs: Any) -> torch.Tensor:
    """int64 CPU row indices for a list / ndarray / tensor of indices or a boolean mask."""
    if isinstance(idxs, (list, tuple)):
        idxs = torch.tensor(idxs, dtype=torch.bool if idxs and isinstance(idxs[0], (bool, np.bool_)) else torch.long)
    elif isinstance(idxs, np.ndarray):
        idxs = torch.from_numpy(np.ascontiguousarray(idxs))
    if not isinstance(idxs, torch.Tensor):
        raise TypeError(f"indices must be a list, numpy array or tensor, got {type(idxs).__name__}")
    return _plan.selection_rows(n, idxs.reshape(-1) if idxs.dim() == 0 else idxs)


def _cells_as_columns(column: np.ndarray) -> np.ndarray:
    """A 1-D object column whose cells are sequences of one length L as a (rows, L) object array (what verl's
    ``np.array(list_of_lists, dtype=object)`` holds); any other array as it is."""
    if column.ndim != 1 or column.dtype != object or not len(column):
        return column
    if not all(isinstance(cell, (list, tuple, np.ndarray)) for cell in column) or len({len(c) for c in column}) != 1:
        return column
    out = np.empty((len(column), len(column[0])), dtype=object)
    for i, cell in enumerate(column):
        for j, value in enumerate(cell):
            out[i, j] = value
    return out


class TensorBatch(dict):
    """``DataProto.batch``: named tensors sharing the first (batch) dimension.

    A small stand-in for tensordict's ``TensorDict`` with the parts verl code uses: item access,
    ``batch_size``, ``keys()/items()``, ``select``, ``to``, ``clone``, ``contiguous``.
    """

    def __init__(self, source: dict[str, torch.Tensor] | None = None, batch_size: Sequence[int] | int | None = None):
        super().__init__()
        source = dict(source or {})
        if batch_size is None:
            batch_size = next(iter(source.values())).shape[0] if source else 0
        elif not isinstance(batch_size, int):
            batch_size = int(batch_size[0]) if len(batch_size) else 0
        self._rows = int(batch_size)
        for key, value in source.items():
            self[key] = value

    @property
    def batch_size(self) -> torch.Size:
        return torch.Size([self._rows])

    @batch_size.setter
    def batch_size(self, value: Sequence[int] | int) -> None:
        """TensorDict's ``td.batch_size = ...`` (verl's PF-PPO sets it on a rebuilt batch): one batch dimension,
        which every tensor held must have as its first dimension."""
        if isinstance(value, (bool, str, bytes)) or not isinstance(value, (int, Sequence)):
            raise VerlTypeError(f"batch_size must be an int or a one-element size, got {type(value).__name__}")
        if not isinstance(value, int):
            if len(value) != 1:
                raise DataError(f"batch_size {tuple(value)}: a DataProto batch has exactly one batch dimension")
            value = value[0]
        rows = int(value)
        if rows < 0:
            raise DataError(f"batch_size must not be negative, got {rows}")
        wrong = {k: tuple(v.shape) for k, v in self.items() if v.shape[0] != rows}
        if wrong:
            raise DataError(f"batch_size {rows} does not match the first dimension of {wrong}")
        self._rows = rows

    @property
    def device(self) -> torch.device | None:
        devices = {t.device for t in self.values()}
        return devices.pop() if len(devices) == 1 else None

    def __setitem__(self, key: str, value: torch.Tensor) -> None:
        if not isinstance(value, torch.Tensor):
            raise VerlTypeError(f"batch['{key}'] must be a torch.Tensor, got {type(value).__name__}")
        if value.dim() == 0 or value.shape[0] != self._rows:
            shape = tuple(value.shape)
            raise DataError(f"batch['{key}'] has shape {shape} but the batch has {self._rows} rows")
        super().__setitem__(key, value)

    def __reduce__(self):  # rebuild through __init__ so row checks have the row count
        return (TensorBatch, (dict(self), self._rows))

    def select(self, *keys: str) -> TensorBatch:
        _require_keys(keys, self, "batch")
        return TensorBatch({k: self[k] for k in keys}, self._rows)

    def to(self, device: torch.device | str) -> TensorBatch:
        return TensorBatch({k: v.to(device) for k, v in self.items()}, self._rows)

    def clone(self) -> TensorBatch:
        return TensorBatch({k: v.clone() for k, v in self.items()}, self._rows)

    def contiguous(self) -> TensorBatch:
        return TensorBatch({k: v.contiguous() for k, v in self.items()}, self._rows)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}: {tuple(v.shape)} {v.dtype}" for k, v in self.items())
        return f"TensorBatch(batch_size={self._rows}, {{{fields}}})"


def _tensors_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    b = b.to(a.device)
    if a.is_floating_point() or a.is_complex():
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(0), b.nan_to_num(0))
    return torch.equal(a, b)


def _cells_equal(a: Any, b: Any, on_path: set[tuple[int, int]] | None = None) -> bool:
    """Deep equality for non-tensor cells (dicts, lists, arrays, NaN == NaN).

    ``on_path`` holds the (id(a), id(b)) pairs being compared further up: meeting a pair again means both sides
    loop back the same way (an object array holding itself), which counts as equal instead of recursing forever.
    """
    on_path = set() if on_path is None else on_path
    pair = (id(a), id(b))
    if pair in on_path:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
            return False
        if a.dtype != object and b.dtype != object:
            if a.dtype != b.dtype:
                return False
            try:
                return bool(np.array_equal(a, b, equal_nan=True))
            except TypeError:  # equal_nan on strings / bytes
                return bool(np.array_equal(a, b))
        on_path.add(pair)
        try:
            return all(_cells_equal(x, y, on_path) for x, y in zip(a.ravel(), b.ravel()))
        finally:
            on_path.discard(pair)
    if isinstance(a, dict) and isinstance(b, dict):
        on_path.add(pair)
        try:
            return a.keys() == b.keys() and all(_cells_equal(a[k], b[k], on_path) for k in a)
        finally:
            on_path.discard(pair)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        on_path.add(pair)
        try:
            return len(a) == len(b) and all(_cells_equal(x, y, on_path) for x, y in zip(a, b))
        finally:
            on_path.discard(pair)
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def union_tensor_dict(tensor_dict1: Any, tensor_dict2: Any) -> Any:
    """Adds tensor_dict2's tensors to tensor_dict1 (a ``TensorBatch`` or a tensordict ``TensorDict``, changed in
    place and returned); shared keys must hold equal tensors, else ``verl.DataContractError`` (an AssertionError,
    as verl asserts)."""
    if tensor_dict1.batch_size != tensor_dict2.batch_size:
        raise DataContractError(
            f"Two tensor dict must have identical batch size. Got {tensor_dict1.batch_size} and {tensor_dict2.batch_size}"
        )
    for key, value in tensor_dict2.items():
        if key in tensor_dict1.keys() and not _tensors_equal(tensor_dict1[key], value):
            raise DataContractError(f"{key} in tensor_dict1 and tensor_dict2 are not the same object")
    for key, value in tensor_dict2.items():
        if key not in tensor_dict1.keys():
            tensor_dict1[key] = value
    return tensor_dict1


def union_numpy_dict(dict1: dict[str, np.ndarray], dict2: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Adds dict2's columns to dict1; shared keys must hold equal values (NaN equals NaN, object arrays compared
    cell by cell, self-referencing arrays allowed), else ``verl.DataContractError``."""
    for key, value in dict2.items():
        if key in dict1 and not _cells_equal(dict1[key], value):
            raise DataContractError(f"`{key}` in tensor_dict1 and tensor_dict2 are not the same object.")
    dict1.update(dict2)
    return dict1


def _union_meta(dict1: dict, dict2: dict, what: str) -> dict:
    for key, value in dict2.items():
        if key in dict1 and not _cells_equal(dict1[key], value):
            raise DataContractError(
                f"{what}: Conflicting values for meta_info key '{key}': {dict1[key]!r} and {value!r}")
    dict1.update(dict2)
    return dict1


@dataclass
class DataProtoItem:
    """One row of a DataProto (``data[i]``): the row's tensors, its non-tensor cells, the batch's meta_info."""

    batch: dict = field(default_factory=dict)
    non_tensor_batch: dict = field(default_factory=dict)
    meta_info: dict = field(default_factory=dict)


@dataclass
class DataProto:
    """verl's DataProto: ``batch`` (named tensors), ``non_tensor_batch`` (numpy object arrays) and ``meta_info``."""

    batch: TensorBatch | None = None
    non_tensor_batch: dict = field(default_factory=dict)
    meta_info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.batch is not None and not isinstance(self.batch, TensorBatch):
            if not hasattr(self.batch, "items"):
                raise VerlTypeError(f"batch must be a dict of tensors, got {type(self.batch).__name__}")
            size = getattr(self.batch, "batch_size", None)  # a tensordict.TensorDict keeps its batch size
            if size is not None and not isinstance(size, int) and len(size) != 1:
                raise DataContractError(f"only support num_batch_dims=1, got a batch of batch_size {tuple(size)}")
            self.batch = TensorBatch(dict(self.batch.items()), size)
        if self.non_tensor_batch is None:
            self.non_tensor_batch = {}
        if self.meta_info is None:
            self.meta_info = {}
        self.check_consistency()

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_dict(
        cls,
        tensors: dict[str, torch.Tensor] | None = None,
        non_tensors: dict[str, Any] | None = None,
        meta_info: dict | None = None,
        num_batch_dims: int = 1,
        auto_padding: bool = False,
    ) -> DataProto:
        """From tensors sharing dim 0 and per-row non-tensor values (lists become object arrays). A DataProto has one
        batch dimension, as verl's (whose ``check_consistency`` asserts it): ``num_batch_dims`` other than 1 raises
        ``verl.DataContractError``."""
        if num_batch_dims != 1:
            raise DataContractError(f"only support num_batch_dims=1, got num_batch_dims={num_batch_dims}")
        tensors = dict(tensors or {})
        meta_info = dict(meta_info or {})
        columns = {k: v if isinstance(v, np.ndarray) else _object_array(v) for k, v in (non_tensors or {}).items()}
        pivot = None
        for key, tensor in tensors.items():
            if not isinstance(tensor, torch.Tensor):
                raise VerlTypeError(f"tensors['{key}'] must be a torch.Tensor, got {type(tensor).__name__}")
            if tensor.dim() == 0:
                raise DataError(f"tensors['{key}'] is a scalar; batch tensors need a batch dimension")
            if pivot is None:
                pivot = key
            elif tensor.shape[0] != tensors[pivot].shape[0]:
                raise DataContractError(
                    "Not all the tensor in tensors have the same batch size with batch_dims=1. "
                    f"Got {pivot} has {tensors[pivot].shape[0]}, {key} has {tensor.shape[0]}"
                )
        if auto_padding:
            meta_info[DataProtoConfig.auto_padding_key] = True
        batch = TensorBatch(tensors) if tensors else None
        return cls(batch=batch, non_tensor_batch=columns, meta_info=meta_info)

    @classmethod
    def from_single_dict(cls, data: dict[str, Any], meta_info: dict | None = None, auto_padding: bool = False) -> DataProto:
        """From one dict: tensors go to ``batch``, numpy arrays to ``non_tensor_batch``."""
        tensors, non_tensors = {}, {}
        for key, value in data.items():
            if isinstance(value, torch.Tensor):
                tensors[key] = value
            elif isinstance(value, np.ndarray):
                non_tensors[key] = value
            else:
                raise VerlTypeError(f"Unsupported type in data['{key}']: {type(value).__name__}")
        return cls.from_dict(tensors=tensors, non_tensors=non_tensors, meta_info=meta_info, auto_padding=auto_padding)

    # -- C++ ------------------------------------------------------------------------------------
    def to_cpp(self) -> _C.DataProto:
        """The C++ DataProto: tensors shared (no copy), non-tensor cells and meta_info as JSON values."""
        tensors = dict(self.batch) if self.batch is not None else {}
        return _C.DataProto(tensors, dict(self.non_tensor_batch), self.meta_info)

    @classmethod
    def from_cpp(cls, data: _C.DataProto) -> DataProto:
        """Wraps a C++ DataProto: tensors shared (no copy), columns as numpy object arrays."""
        tensors = data.batch
        batch = TensorBatch(tensors, len(data)) if tensors else None
        columns = {k: _object_array(v) for k, v in data.non_tensor_batch.items()}
        return cls(batch=batch, non_tensor_batch=columns, meta_info=data.meta_info)

    # -- size and checks ------------------------------------------------------------------------
    def __len__(self) -> int:
        if self.batch is not None:
            return self.batch.batch_size[0]
        if self.non_tensor_batch:
            return next(iter(self.non_tensor_batch.values())).shape[0]
        return 0

    def check_consistency(self) -> None:
        """Raises ``verl.DataError`` unless every tensor and non-tensor column has len(self) rows."""
        for key, value in self.non_tensor_batch.items():
            if not isinstance(value, np.ndarray):
                raise DataError(
                    f"data in the non_tensor_batch must be a numpy.array with dtype=object, but for {key=}, got {type(value)=}"
                )
        if not isinstance(self.meta_info, dict):
            raise DataError(f"meta_info must be a dict, got {type(self.meta_info).__name__}")
        n = len(self)
        if self.batch is not None:
            for key, tensor in self.batch.items():
                if tensor.shape[0] != n:
                    raise DataError(f"tensor '{key}' has {tensor.shape[0]} rows but the batch has {n}")
        for key, value in self.non_tensor_batch.items():
            if value.shape[0] != n:
                raise DataContractError(f"key {key} length {len(value)} is not equal to batch size {n}")

    def is_padding_enabled(self) -> bool:
        """Whether chunk() may split unevenly (meta_info flag, DataProtoConfig.auto_padding or VERL_AUTO_PADDING)."""
        return bool(self.meta_info.get(DataProtoConfig.auto_padding_key, False)) or DataProtoConfig.auto_padding

    # -- row selection --------------------------------------------------------------------------
    def _take(self, rows: torch.Tensor) -> DataProto:
        """The rows at int64 CPU indices ``rows`` (copies; meta_info shared as in verl)."""
        batch = None
        if self.batch is not None:
            batch = TensorBatch({k: t.index_select(0, rows.to(t.device)) for k, t in self.batch.items()}, rows.numel())
        idx = rows.numpy()
        columns = {k: v[idx] for k, v in self.non_tensor_batch.items()}
        return type(self)(batch=batch, non_tensor_batch=columns, meta_info=self.meta_info)

    def __getitem__(self, item: Any) -> DataProto | DataProtoItem:
        """int -> DataProtoItem; slice / list / ndarray / tensor -> DataProto."""
        if isinstance(item, slice):
            return self.slice(item.start, item.stop, item.step)
        if isinstance(item, (list, np.ndarray, torch.Tensor)):
            return self.select_idxs(item)
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            i = _plan.normalize_index(len(self), int(item))
            tensors = {k: t[i] for k, t in self.batch.items()} if self.batch is not None else {}
            cells = {k: v[i] for k, v in self.non_tensor_batch.items()}
            return DataProtoItem(batch=tensors, non_tensor_batch=cells, meta_info=self.meta_info)
        raise TypeError(f"Indexing with {type(item).__name__} is not supported")

    def select_idxs(self, idxs: Any) -> DataProto:
        """Rows by indices (negative allowed) or a boolean mask."""
        return self._take(_as_rows(len(self), idxs))

    def slice(self, start: int | None = None, end: int | None = None, step: int | None = None) -> DataProto:
        """Rows start:end:step as views of the same storage."""
        s = slice(*_plan.normalize_slice(len(self), start, end, step))
        batch = None
        if self.batch is not None:
            batch = TensorBatch({k: t[s] for k, t in self.batch.items()}, len(range(s.start, s.stop, s.step)))
        columns = {k: v[s] for k, v in self.non_tensor_batch.items()}
        return type(self)(batch=batch, non_tensor_batch=columns, meta_info=self.meta_info)

    def select(self, batch_keys=None, non_tensor_batch_keys=None, meta_info_keys=None, deepcopy=False) -> DataProto:
        """A DataProto with only the named entries (all of a kind when its keys are None)."""
        batch = self.batch
        if batch_keys is not None:
            _require_keys(batch_keys, self.batch or {}, "batch")
            batch = self.batch.select(*batch_keys) if self.batch is not None else None
        columns = self.non_tensor_batch
        if non_tensor_batch_keys is not None:
            _require_keys(non_tensor_batch_keys, self.non_tensor_batch, "non_tensor_batch")
            columns = {k: v for k, v in self.non_tensor_batch.items() if k in non_tensor_batch_keys}
        meta = self.meta_info
        if meta_info_keys is not None:
            _require_keys(meta_info_keys, self.meta_info, "meta_info")
            meta = {k: v for k, v in self.meta_info.items() if k in meta_info_keys}
        if deepcopy:
            batch = batch.clone() if batch is not None else None
            columns, meta = copy.deepcopy(columns), copy.deepcopy(meta)
        return type(self)(batch=batch, non_tensor_batch=dict(columns), meta_info=meta)

    def pop(self, batch_keys=None, non_tensor_batch_keys=None, meta_info_keys=None) -> DataProto:
        """Moves the named entries out of this DataProto into a new one."""
        batch_keys, non_tensor_batch_keys, meta_info_keys = batch_keys or [], non_tensor_batch_keys or [], meta_info_keys or []
        _require_keys(batch_keys, self.batch or {}, "batch")
        _require_keys(non_tensor_batch_keys, self.non_tensor_batch, "non_tensor_batch")
        _require_keys(meta_info_keys, self.meta_info, "meta_info")
        tensors = {k: dict.pop(self.batch, k) for k in batch_keys}
        columns = {k: self.non_tensor_batch.pop(k) for k in non_tensor_batch_keys}
        meta = {k: self.meta_info.pop(k) for k in meta_info_keys}
        return DataProto.from_dict(tensors=tensors, non_tensors=columns, meta_info=meta)

    def rename(self, old_keys=None, new_keys=None) -> DataProto:
        """Renames tensors of the batch in place (verl renames only tensors)."""

        def as_list(keys):
            if keys is None or isinstance(keys, list):
                return keys or []
            if isinstance(keys, str):
                return [keys]
            raise TypeError(f"keys must be a list or a string, but got {type(keys)}")

        old_keys, new_keys = as_list(old_keys), as_list(new_keys)
        if len(new_keys) != len(old_keys):
            raise ValueError(f"new_keys and old_keys must have the same length, but got {len(new_keys)} and {len(old_keys)}")
        batch = self.batch if self.batch is not None else TensorBatch()
        _require_keys(old_keys, batch, "batch")
        moved = {new: batch[old] for old, new in zip(old_keys, new_keys)}
        for old in old_keys:
            dict.pop(batch, old)
        clash = [k for k in moved if k in batch]
        if clash:
            batch.update({old: moved[new] for old, new in zip(old_keys, new_keys)})  # restore
            raise DataError(f"cannot rename to {clash}: the keys already exist")
        for key, value in moved.items():
            batch[key] = value
        return self

    def union(self, other: DataProto) -> DataProto:
        """Adds other's entries in place; shared keys must hold equal values (else ``verl.DataError``)."""
        if self.batch is not None and other.batch is not None:
            union_tensor_dict(self.batch, other.batch)
        elif other.batch is not None:
            if self.non_tensor_batch and len(self) != len(other):
                raise DataError(f"union needs identical batch sizes, got {len(self)} and {len(other)}")
            self.batch = TensorBatch(dict(other.batch), len(other))
        if self.non_tensor_batch and other.non_tensor_batch and len(self) != len(other):
            raise DataError(f"union needs identical batch sizes, got {len(self)} and {len(other)}")
        union_numpy_dict(self.non_tensor_batch, other.non_tensor_batch)
        _union_meta(self.meta_info, other.meta_info, "union")
        return self

    @staticmethod
    def concat(data: list[DataProto]) -> DataProto:
        """Rows of all parts in order; meta_info merged, "metrics" gathered into a dict of lists (as verl)."""
        if not data:
            raise DataError("concat needs at least one DataProto")
        first = data[0]
        batch = None
        if first.batch is not None:
            keys = set(first.batch)
            for i, d in enumerate(data):
                if d.batch is None or set(d.batch) != keys:
                    raise DataError(f"concat: part {i} has tensor keys {sorted(d.batch or {})} but part 0 has {sorted(keys)}")
            batch = TensorBatch({k: torch.cat([d.batch[k] for d in data]) for k in first.batch})
        columns = {}
        for key in first.non_tensor_batch:
            for i, d in enumerate(data):
                if set(d.non_tensor_batch) != set(first.non_tensor_batch):
                    raise DataError(
                        f"concat: part {i} has non-tensor keys {sorted(d.non_tensor_batch)} but part 0 has "
                        f"{sorted(first.non_tensor_batch)}"
                    )
            columns[key] = np.concatenate([d.non_tensor_batch[key] for d in data], axis=0)
        meta, metrics = {}, []
        for d in data:
            for key, value in d.meta_info.items():
                if key == "metrics":
                    if isinstance(value, list):
                        metrics.extend(value)
                    elif value is not None:
                        metrics.append(value)
                else:
                    _union_meta(meta, {key: value}, "concat")
        if metrics:
            gathered: dict[str, list] = {}
            for m in metrics:
                for key, value in m.items():
                    gathered.setdefault(key, []).append(value)
            meta["metrics"] = gathered
        return type(first)(batch=batch, non_tensor_batch=columns, meta_info=meta)

    def chunk(self, chunks: int) -> list[DataProto]:
        """``chunks`` pieces along the rows; sizes must divide unless auto-padding is enabled."""
        out, begin = [], 0
        try:
            sizes = _plan.chunk_sizes(len(self), chunks, self.is_padding_enabled())
        except DataError as e:  # verl asserts divisibility: the same error, catchable as an AssertionError too
            raise DataContractError(str(e)) from None
        for size in sizes:
            out.append(self.slice(begin, begin + size))
            begin += size
        return out

    def split(self, split_size: int) -> list[DataProto]:
        """Pieces of ``split_size`` rows (the last may be shorter)."""
        return [self.slice(b, e) for b, e in _plan.split_bounds(len(self), split_size)]

    def repeat(self, repeat_times: int = 2, interleave: bool = True) -> DataProto:
        """interleave: rows a,b -> a,a,b,b (each prompt's n samples together); else a,b,a,b."""
        return self._take(_plan.repeat_rows(len(self), repeat_times, interleave))

    def reorder(self, indices: torch.Tensor) -> None:
        """Reorders the rows in place by a permutation."""
        rows = _as_rows(len(self), indices)
        if rows.numel() != len(self):
            raise DataError(f"reorder needs one index per row: got {rows.numel()} indices for {len(self)} rows")
        reordered = self._take(rows)
        self.batch, self.non_tensor_batch = reordered.batch, reordered.non_tensor_batch

    def padding(self, padding_size: int, padding_candidate: str = "") -> None:
        """Appends ``padding_size`` copies of the first (``"first"``) or last row, in place."""
        if padding_size == 0:
            return
        row = self.select_idxs([0 if padding_candidate == "first" else len(self) - 1])
        padded = DataProto.concat([self, row.repeat(padding_size)])
        self.batch, self.non_tensor_batch = padded.batch, padded.non_tensor_batch

    def make_iterator(self, mini_batch_size: int, epochs: int, seed: int | None = None, dataloader_kwargs=None) -> Iterator[DataProto]:
        """Mini-batches for ``epochs`` passes; ``len(self)`` must divide by ``mini_batch_size``.

        With a seed the rows are shuffled, each epoch with a fresh permutation from a generator
        seeded once (same seed, same order); ``dataloader_kwargs={"shuffle": False}`` keeps 0..n-1.
        """
        kwargs = dict(dataloader_kwargs or {})
        shuffle = kwargs.pop("shuffle", seed is not None)
        if kwargs:
            raise ValueError(f"unsupported dataloader_kwargs {sorted(kwargs)}; supported: ['shuffle']")
        plans = _plan.iterator_rows(len(self), mini_batch_size, epochs, seed, bool(shuffle))

        def batches() -> Iterator[DataProto]:
            for rows in plans:
                batch = self._take(rows)
                batch.meta_info = self.meta_info
                yield batch

        return batches()

    def sample_level_repeat(self, repeat_times: Any) -> DataProto:
        """Row i repeated ``repeat_times[i]`` times, rows kept together (a list, tuple, 1-D ndarray or tensor of
        counts, one per row)."""
        if isinstance(repeat_times, (torch.Tensor, np.ndarray)):
            if repeat_times.ndim != 1:
                raise DataContractError(f"repeat_times must be 1-D, got shape {tuple(repeat_times.shape)}")
            repeat_times = repeat_times.tolist()
        elif isinstance(repeat_times, tuple):
            repeat_times = list(repeat_times)
        elif not isinstance(repeat_times, list):
            raise DataContractError(
                f"repeat_times type must be in [list, torch.Tensor, np.ndarray, tuple], got {type(repeat_times)}")
        if len(repeat_times) != len(self):
            raise DataError(f"sample_level_repeat needs one count per row: got {len(repeat_times)} for {len(self)} rows")
        counts = torch.tensor(repeat_times, dtype=torch.long)
        if counts.numel() and counts.min() < 0:
            raise DataError(f"sample_level_repeat counts must be >= 0, got {repeat_times}")
        return self._take(torch.repeat_interleave(torch.arange(len(self)), counts))

    def unfold_column_chunks(self, n_split: int, split_keys: list[str] | None = None) -> DataProto:
        """Each row becomes ``n_split`` rows: the entries named in ``split_keys`` are cut along their second dimension
        into ``n_split`` pieces (one per new row), every other entry is repeated ``n_split`` times."""
        split_keys = set(split_keys or [])
        if n_split < 1:
            raise DataError(f"n_split must be >= 1, got {n_split}")

        def unfold(key: str, value: Any) -> Any:
            if isinstance(value, np.ndarray):
                value = _cells_as_columns(value)
            if value.ndim < 2 or value.shape[1] % n_split:
                raise DataError(f"unfold_column_chunks: '{key}' has shape {tuple(value.shape)}, whose second "
                                f"dimension does not divide into {n_split}")
            return value.reshape(value.shape[0] * n_split, value.shape[1] // n_split, *value.shape[2:])

        batch = None
        if self.batch is not None:
            batch = TensorBatch({k: unfold(k, t) if k in split_keys else t.repeat_interleave(n_split, dim=0)
                                 for k, t in self.batch.items()}, len(self) * n_split)
        columns = {k: unfold(k, v) if k in split_keys else np.repeat(v, n_split, axis=0)
                   for k, v in self.non_tensor_batch.items()}
        return type(self)(batch=batch, non_tensor_batch=columns, meta_info=self.meta_info)

    # -- tensordict -----------------------------------------------------------------------------
    def to_tensordict(self) -> Any:
        """One ``tensordict.TensorDict``: the tensors, each non-tensor column as a ``NonTensorStack`` (nested lists
        and dicts kept per row) and each meta_info entry as ``NonTensorData``; ``from_tensordict`` inverts it."""
        from .utils import tensordict_utils

        tensors: dict[str, Any] = dict(self.batch.items()) if self.batch is not None else {}
        common = set(tensors) & set(self.non_tensor_batch)
        if common:
            raise DataContractError(f"tensor_batch and non_tensor_batch have common keys {common}")
        for key, column in self.non_tensor_batch.items():
            tensors[key] = tensordict_utils.non_tensor_stack(column)
        return tensordict_utils.get_tensordict(tensors, dict(self.meta_info))

    @classmethod
    def from_tensordict(cls, tensor_dict: Any, meta_info: dict | None = None, num_batch_dims: int = 1) -> DataProto:
        """From a ``tensordict.TensorDict``: tensors to ``batch``, ``NonTensorStack`` entries to ``non_tensor_batch``
        (object arrays), ``NonTensorData`` entries to ``meta_info``."""
        from tensordict import NonTensorData, NonTensorStack

        if num_batch_dims != 1:
            raise DataContractError(f"only support num_batch_dims=1, got num_batch_dims={num_batch_dims}")
        meta = dict(meta_info or {})
        tensors, columns = {}, {}
        for key, value in tensor_dict.items():
            if isinstance(value, torch.Tensor):
                tensors[key] = value
            elif isinstance(value, NonTensorStack):
                columns[key] = _object_array(value.tolist())
            elif isinstance(value, NonTensorData):
                meta[key] = value.data
            else:
                raise VerlTypeError(f"from_tensordict: entry '{key}' is a {type(value).__name__}, not a tensor, "
                                    "NonTensorStack or NonTensorData")
        return cls.from_dict(tensors=tensors, non_tensors=columns, meta_info=meta)

    def to(self, device: torch.device | str) -> DataProto:
        """Moves the tensors to ``device`` in place and returns self."""
        if self.batch is not None:
            self.batch = self.batch.to(device)
        return self

    # -- pickling -------------------------------------------------------------------------------
    def __getstate__(self) -> tuple[Any, dict, dict]:
        """verl's pickled state, (batch, non_tensor_batch, meta_info), so a DataProto pickled by verl unpickles here
        and one pickled here unpickles in verl. The batch is ``torch.save`` bytes of a consolidated
        ``tensordict.TensorDict`` (of None without a batch), or, with ``VERL_DATAPROTO_SERIALIZATION_METHOD=numpy``,
        ``serialize_tensordict``'s plain tuple (raw bytes per tensor, no consolidation; None without a batch). Either
        way tensors travel as data: values, dtype, shape and device, not autograd history or ``requires_grad``."""
        if os.getenv("VERL_DATAPROTO_SERIALIZATION_METHOD") == "numpy":
            batch = serialize_tensordict(self.batch) if self.batch is not None else None
            return batch, self.non_tensor_batch, self.meta_info
        batch = None
        if self.batch is not None:
            from tensordict import TensorDict

            batch = TensorDict(dict(self.batch), batch_size=self.batch.batch_size)
            if len(self.batch):  # one packed storage: a view pickles its own elements, not its base's
                batch = batch.contiguous().consolidate()
        buffer = io.BytesIO()
        torch.save(batch, buffer)
        return buffer.getvalue(), self.non_tensor_batch, self.meta_info

    def __setstate__(self, state: tuple[Any, dict, dict]) -> None:
        """Restores what ``__getstate__`` (verl's or ours) returned, read in the same serialization method; tensors
        return to the device they were saved from, or to the CPU where CUDA is not available (as in verl)."""
        if not isinstance(state, tuple) or len(state) != 3:
            raise DataError(f"DataProto.__setstate__: expected (batch, non_tensor_batch, meta_info), got {state!r:.80}")
        batch, non_tensor_batch, meta_info = state
        if os.getenv("VERL_DATAPROTO_SERIALIZATION_METHOD") == "numpy":
            batch = deserialize_tensordict(batch) if batch is not None else None
        else:
            map_location = None if torch.cuda.is_available() else "cpu"
            batch = torch.load(io.BytesIO(batch), weights_only=False, map_location=map_location)
        self.batch = batch
        self.non_tensor_batch = non_tensor_batch
        self.meta_info = meta_info
        self.__post_init__()  # the batch as a TensorBatch, and the row checks

    # -- files ----------------------------------------------------------------------------------
    def save_to_disk(self, filepath: str | os.PathLike) -> None:
        """One file, shared with C++ and readable by ``torch.load``; written atomically.

        Non-tensor cells and meta_info must be JSON-like (None, bool, int, float, str, lists,
        dicts, numpy values); anything else raises ``verl.VerlTypeError`` naming the cell.
        """
        self.to_cpp().save_to_disk(os.fspath(filepath))

    @staticmethod
    def load_from_disk(filepath: str | os.PathLike) -> DataProto:
        """Reads a file written by ``save_to_disk`` (from Python or C++)."""
        return DataProto.from_cpp(_C.DataProto.load_from_disk(os.fspath(filepath)))

    def __repr__(self) -> str:
        columns = {k: v.shape for k, v in self.non_tensor_batch.items()}
        return f"DataProto(len={len(self)}, batch={self.batch!r}, non_tensor_batch={columns}, meta_info={self.meta_info!r})"


def pad_dataproto_to_divisor(data: DataProto, size_divisor: int) -> tuple[DataProto, int]:
    """Pads ``data`` with its first rows (cycling) to a multiple of ``size_divisor``; returns (padded, pad_size)."""
    if not isinstance(data, DataProto):
        raise TypeError(f"data must be a DataProto, got {type(data).__name__}")
    rows = _plan.pad_rows(len(data), size_divisor)
    if rows.numel() == 0:
        return data, 0
    return DataProto.concat([data, data._take(rows)]), rows.numel()


def unpad_dataproto(data: DataProto, pad_size: int) -> DataProto:
    """Drops the last ``pad_size`` rows (``data[:-pad_size]``)."""
    return data[:-pad_size] if pad_size != 0 else data


def fold_batch_dim(data: DataProto, new_batch_size: int) -> DataProto:
    """Rows [bsz, ...] regrouped as [new_batch_size, bsz // new_batch_size, ...]: each tensor and non-tensor column
    gets a second dimension, the DataProto keeps one batch dimension of ``new_batch_size`` rows."""
    n = len(data)
    if new_batch_size < 1 or n % new_batch_size:
        raise DataContractError(f"fold_batch_dim: {n} rows do not fold into {new_batch_size} groups")
    group = n // new_batch_size
    batch = None
    if data.batch is not None:
        batch = TensorBatch({k: t.reshape(new_batch_size, group, *t.shape[1:]) for k, t in data.batch.items()},
                            new_batch_size)
    columns = {k: np.reshape(v, (new_batch_size, group, *v.shape[1:])) for k, v in data.non_tensor_batch.items()}
    return type(data)(batch=batch, non_tensor_batch=columns, meta_info=data.meta_info)


def unfold_batch_dim(data: DataProto, batch_dims: int = 2) -> DataProto:
    """The inverse of ``fold_batch_dim``: the first ``batch_dims`` dimensions of every entry flattened into rows."""
    if batch_dims < 1:
        raise DataError(f"unfold_batch_dim: batch_dims must be >= 1, got {batch_dims}")

    def rows_of(key: str, shape: Sequence[int]) -> int:
        if len(shape) < batch_dims:
            raise DataError(f"unfold_batch_dim: '{key}' has shape {tuple(shape)}, fewer than {batch_dims} dimensions")
        return int(np.prod(shape[:batch_dims]))

    batch, n = None, None
    if data.batch is not None and len(data.batch):
        tensors = {k: t.reshape(rows_of(k, t.shape), *t.shape[batch_dims:]) for k, t in data.batch.items()}
        n = next(iter(tensors.values())).shape[0]
        batch = TensorBatch(tensors, n)
    columns = {k: np.reshape(v, (rows_of(k, v.shape), *v.shape[batch_dims:])) for k, v in data.non_tensor_batch.items()}
    return type(data)(batch=batch, non_tensor_batch=columns, meta_info=data.meta_info)


def serialize_single_tensor(obj: torch.Tensor) -> tuple[str, torch.Size, np.ndarray]:
    """(dtype name, shape, the raw bytes as a uint8 array): a tensor as plain data, for any dtype numpy lacks too
    (bfloat16, float8)."""
    data = obj.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()
    return str(obj.dtype).removeprefix("torch."), obj.shape, data


def deserialize_single_tensor(arr: tuple[str, Sequence[int], Any]) -> torch.Tensor:
    """The tensor ``serialize_single_tensor`` described (a CPU tensor owning a copy of the bytes)."""
    dtype_name, shape, data = arr
    dtype = getattr(torch, dtype_name, None)
    if not isinstance(dtype, torch.dtype):
        raise DataError(f"deserialize_single_tensor: '{dtype_name}' is not a torch dtype")
    raw = torch.frombuffer(bytearray(data), dtype=torch.uint8) if len(data) else torch.empty(0, dtype=torch.uint8)
    return raw.view(dtype).reshape(tuple(shape))


def serialize_tensordict(batch: Any) -> tuple[tuple[int, ...], str | None, dict[str, tuple]]:
    """(batch_size, device, {key: serialized tensor}) of a ``TensorDict`` (or ``TensorBatch``); a nested tensor is
    (layout name, [serialized component, ...])."""
    items: dict[str, tuple] = {}
    for key, value in batch.items():
        if value.is_nested:
            items[key] = (str(value.layout).removeprefix("torch."), [serialize_single_tensor(t) for t in value.unbind()])
        else:
            items[key] = serialize_single_tensor(value)
    device = getattr(batch, "device", None)
    return tuple(batch.batch_size), (str(device) if device is not None else None), items


def deserialize_tensordict(arr: tuple) -> Any:
    """The ``tensordict.TensorDict`` ``serialize_tensordict`` described."""
    from tensordict import TensorDict

    batch_size, device, items = arr
    tensors = {}
    for key, value in items.items():
        if len(value) == 3:
            tensors[key] = deserialize_single_tensor(value)
        elif len(value) == 2:
            layout_name, parts = value
            layout = getattr(torch, layout_name, None)
            if not isinstance(layout, torch.layout):
                raise DataError(f"deserialize_tensordict: '{layout_name}' of '{key}' is not a torch layout")
            tensors[key] = torch.nested.as_nested_tensor([deserialize_single_tensor(p) for p in parts], layout=layout)
        else:
            raise DataError(f"Invalid tensor encoding format, expected length 2 or 3, got {len(value)}")
    return TensorDict(source=tensors, batch_size=batch_size, device=device)
