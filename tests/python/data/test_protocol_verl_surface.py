"""DataProto's verl surface beyond the core operations (issue 16 item 6): per-row repeat counts, column chunks
unfolded into rows, batch folding, the tensordict conversions and plain-data serialization, and verl's
AssertionError contract. Expected values are written out by hand."""

from __future__ import annotations

import copy
import io
import pickle

import numpy as np
import pytest
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict

import verl
from verl.protocol import (
    DataProto,
    deserialize_single_tensor,
    deserialize_tensordict,
    fold_batch_dim,
    serialize_single_tensor,
    serialize_tensordict,
    unfold_batch_dim,
    union_numpy_dict,
    union_tensor_dict,
)
from verl.utils import tensordict_utils


def sample(n: int = 3) -> DataProto:
    return DataProto.from_dict(tensors={"ids": torch.arange(n), "obs": torch.arange(2 * n).reshape(n, 2)},
                               non_tensors={"labels": list("abcdef"[:n])}, meta_info={"info": "x"})


def test_sample_level_repeat_counts_per_row():
    d = sample()
    for counts in ([2, 0, 3], (2, 0, 3), np.array([2, 0, 3]), torch.tensor([2, 0, 3])):
        r = d.sample_level_repeat(counts)
        assert r.batch["ids"].tolist() == [0, 0, 2, 2, 2]
        assert r.non_tensor_batch["labels"].tolist() == ["a", "a", "c", "c", "c"]
        assert r.batch["obs"][2].tolist() == [4, 5] and r.meta_info == {"info": "x"}
    with pytest.raises(verl.DataError, match="one count per row"):
        d.sample_level_repeat([1, 2])
    with pytest.raises(AssertionError):
        d.sample_level_repeat(3)


def test_unfold_column_chunks_splits_named_columns_and_repeats_the_rest():
    d = DataProto.from_dict(tensors={"wide": torch.arange(12).reshape(2, 6), "ids": torch.tensor([7, 8])},
                            non_tensors={"pair": [["p", "q", "r"], ["s", "t", "u"]], "tag": ["A", "B"]})
    r = d.unfold_column_chunks(3, split_keys=["wide", "pair"])
    assert r.batch["wide"].tolist() == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]
    assert r.batch["ids"].tolist() == [7, 7, 7, 8, 8, 8]
    assert r.non_tensor_batch["pair"].tolist() == [["p"], ["q"], ["r"], ["s"], ["t"], ["u"]]
    assert r.non_tensor_batch["tag"].tolist() == ["A", "A", "A", "B", "B", "B"]
    with pytest.raises(verl.DataError, match="'wide'"):
        d.unfold_column_chunks(4, split_keys=["wide"])


def test_fold_then_unfold_batch_dim_round_trips_after_a_reorder():
    d = sample().repeat(2, interleave=True)  # ids 0 0 1 1 2 2
    folded = fold_batch_dim(d, new_batch_size=3)
    assert len(folded) == 3 and folded.batch.batch_size == torch.Size([3])
    assert folded.batch["ids"].tolist() == [[0, 0], [1, 1], [2, 2]]
    assert folded.non_tensor_batch["labels"].tolist() == [["a", "a"], ["b", "b"], ["c", "c"]]
    folded.reorder(torch.tensor([2, 0, 1]))
    back = unfold_batch_dim(folded, batch_dims=2)
    assert back.batch["ids"].tolist() == [2, 2, 0, 0, 1, 1]
    assert back.batch["obs"].tolist() == [[4, 5], [4, 5], [0, 1], [0, 1], [2, 3], [2, 3]]
    assert back.non_tensor_batch["labels"].tolist() == ["c", "c", "a", "a", "b", "b"]
    with pytest.raises(AssertionError, match="do not fold"):
        fold_batch_dim(d, new_batch_size=4)


def test_to_and_from_tensordict_keep_nested_cells_and_meta_info():
    d = DataProto.from_dict(tensors={"ids": torch.tensor([5, 6])},
                            non_tensors={"turns": [[], [0.5, 0.25]], "info": [{"acc": 1.0}, {"acc": 0.0}]},
                            meta_info={"step": 4})
    td = d.to_tensordict()
    assert isinstance(td, TensorDict) and td.batch_size == torch.Size([2])
    assert isinstance(td.get("turns"), NonTensorStack) and isinstance(td.get("step"), NonTensorData)
    assert td["turns"] == [[], [0.5, 0.25]] and td["step"] == 4
    back = DataProto.from_tensordict(td)
    assert back.batch["ids"].tolist() == [5, 6] and back.meta_info == {"step": 4}
    assert back.non_tensor_batch["turns"].tolist() == [[], [0.5, 0.25]]
    assert back.non_tensor_batch["info"].tolist() == [{"acc": 1.0}, {"acc": 0.0}]
    clash = DataProto.from_dict(tensors={"k": torch.zeros(1)}, non_tensors={"k": ["v"]})
    with pytest.raises(AssertionError, match="common keys"):
        clash.to_tensordict()


def test_get_tensordict_checks_row_counts():
    td = tensordict_utils.get_tensordict({"x": torch.zeros(3, 2), "names": ["a", "b", "c"]}, {"run": "r1"})
    assert td.batch_size == torch.Size([3]) and td["names"] == ["a", "b", "c"] and td["run"] == "r1"
    with pytest.raises(AssertionError, match="Expected 3, got 2"):
        tensordict_utils.get_tensordict({"x": torch.zeros(3), "names": ["a", "b"]})
    with pytest.raises(AssertionError, match="numpy"):
        tensordict_utils.get_tensordict({"names": [torch.zeros(1)]})


def test_tensordict_batch_in_the_constructor():
    d = DataProto(batch=TensorDict({"a": torch.arange(4)}, batch_size=[4]))
    assert len(d) == 4 and d.batch["a"].tolist() == [0, 1, 2, 3]
    empty = DataProto(batch=TensorDict({}, batch_size=[10]))
    back = pickle.loads(pickle.dumps(empty))
    assert len(back) == 10 and len(back.batch.keys()) == 0
    with pytest.raises(AssertionError, match="num_batch_dims=1"):
        DataProto(batch=TensorDict({"a": torch.zeros(2, 3)}, batch_size=[2, 3]))
    with pytest.raises(AssertionError, match="num_batch_dims=1"):
        DataProto.from_dict(tensors={"a": torch.zeros(2, 3)}, num_batch_dims=2)


def test_serialize_single_tensor_round_trips_every_dtype_bit_for_bit():
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32, torch.int64, torch.bool,
                  torch.uint8):
        t = (torch.arange(-6, 6).reshape(3, 4) % 5).to(dtype)
        name, shape, data = serialize_single_tensor(t)
        assert name == str(dtype).removeprefix("torch.") and tuple(shape) == (3, 4)
        assert data.dtype == np.uint8 and data.size == t.numel() * t.element_size()
        back = deserialize_single_tensor((name, shape, data))
        assert back.dtype == dtype and torch.equal(back, t)
    with pytest.raises(verl.DataError, match="not a torch dtype"):
        deserialize_single_tensor(("nope", (1,), np.zeros(4, dtype=np.uint8)))


def test_serialize_tensordict_with_a_nested_tensor():
    nested = torch.nested.as_nested_tensor([torch.ones(2, 3), torch.zeros(1, 3)], layout=torch.jagged)
    td = TensorDict({"n": nested, "r": torch.arange(2.0)}, batch_size=[2])
    batch_size, device, items = serialize_tensordict(td)
    assert batch_size == (2,) and device is None and items["n"][0] == "jagged"
    back = deserialize_tensordict((batch_size, device, items))
    assert back.batch_size == torch.Size([2]) and torch.equal(back["r"], td["r"])
    assert [t.tolist() for t in back["n"].unbind()] == [[[1.0] * 3] * 2, [[0.0] * 3]]
    with pytest.raises(verl.DataError, match="expected length 2 or 3"):
        deserialize_tensordict(((1,), None, {"x": ("a",)}))


def _mixed_batch() -> DataProto:
    """3 rows: float32 with a NaN and an inf, bf16, bool, int64, a non-contiguous column view and a row view of a
    10,000-element tensor; a nested-cell column and meta_info."""
    base = torch.arange(10_000, dtype=torch.float64)
    grid = torch.arange(12, dtype=torch.int32).reshape(4, 3)
    return DataProto.from_dict(
        tensors={"f": torch.tensor([[0.5, float("nan")], [-2.0, float("inf")], [1e-30, 3.0]]),
                 "h": torch.tensor([1.5, -0.25, 65504.0], dtype=torch.bfloat16),
                 "b": torch.tensor([True, False, True]),
                 "i": torch.tensor([2**40, -7, 0]),
                 "col": grid.t()[:, 1:],        # (3, 3) view with strides (1, 3)
                 "rows": base[100:106].view(3, 2)},  # a view into 80,000 bytes
        non_tensors={"labels": ["a", "b", "c"], "cells": [{"k": [1, 2]}, None, [3.5]]},
        meta_info={"step": 7, "temperature": 0.6, "names": ["x", "y"]})


def _assert_same(back: DataProto, d: DataProto) -> None:
    assert isinstance(back.batch, type(d.batch)) and len(back) == len(d)
    assert list(back.batch.keys()) == list(d.batch.keys())
    for key, t in d.batch.items():
        b = back.batch[key]
        assert b.dtype == t.dtype and b.shape == t.shape and b.device == t.device, key
        bits = lambda x: x.contiguous().view(-1).view(torch.uint8)  # noqa: E731
        assert torch.equal(bits(b), bits(t)), key  # bit for bit, NaN included
    assert back.non_tensor_batch.keys() == d.non_tensor_batch.keys()
    for key, column in d.non_tensor_batch.items():
        assert back.non_tensor_batch[key].dtype == column.dtype and back.non_tensor_batch[key].tolist() == column.tolist()
    assert back.meta_info == d.meta_info


@pytest.mark.parametrize("method", ["torch", "numpy"])
def test_pickle_round_trips_bit_for_bit_in_both_serialization_methods(monkeypatch, method):
    if method == "numpy":
        monkeypatch.setenv("VERL_DATAPROTO_SERIALIZATION_METHOD", "numpy")
    else:
        monkeypatch.delenv("VERL_DATAPROTO_SERIALIZATION_METHOD", raising=False)
    d = _mixed_batch()
    blob = pickle.dumps(d)
    _assert_same(pickle.loads(blob), d)
    # The row view pickles its 6 elements, not the 10,000 of its base (48 bytes of float64, not 80,000).
    assert len(blob) < 10_000
    # No batch, only columns; and a batch of 10 rows without tensors.
    only_columns = DataProto.from_dict(non_tensors={"labels": ["p", "q"]}, meta_info={"m": 1})
    back = pickle.loads(pickle.dumps(only_columns))
    assert back.batch is None and len(back) == 2 and back.non_tensor_batch["labels"].tolist() == ["p", "q"]
    empty = pickle.loads(pickle.dumps(DataProto(batch=TensorDict({}, batch_size=[10]))))
    assert len(empty) == 10 and list(empty.batch.keys()) == []


def test_pickled_state_is_verls():
    """(batch, non_tensor_batch, meta_info) as verl 0.9.1 writes it, both ways: a state verl built (torch.save bytes
    of a TensorDict) restores here, and ours is a TensorDict for verl to load."""
    td = TensorDict({"obs": torch.arange(6).reshape(3, 2), "r": torch.tensor([0.5, 1.0, -1.0])}, batch_size=[3])
    labels = np.array(["a", "b", "c"], dtype=object)
    buffer = io.BytesIO()
    torch.save(td.contiguous().consolidate(), buffer)
    restored = DataProto()
    restored.__setstate__((buffer.getvalue(), {"labels": labels}, {"step": 1}))
    assert restored.batch["obs"].tolist() == [[0, 1], [2, 3], [4, 5]] and restored.batch["r"].tolist() == [0.5, 1.0, -1.0]
    assert restored.non_tensor_batch["labels"].tolist() == ["a", "b", "c"] and restored.meta_info == {"step": 1}

    batch_bytes, columns, meta = restored.__getstate__()
    ours = torch.load(io.BytesIO(batch_bytes), weights_only=False)
    assert isinstance(ours, TensorDict) and ours.batch_size == torch.Size([3])
    assert torch.equal(ours["obs"], td["obs"]) and torch.equal(ours["r"], td["r"])
    assert columns is restored.non_tensor_batch and meta is restored.meta_info


def test_numpy_serialization_state_is_plain_data(monkeypatch):
    monkeypatch.setenv("VERL_DATAPROTO_SERIALIZATION_METHOD", "numpy")
    d = DataProto.from_dict(tensors={"obs": torch.arange(4, dtype=torch.int16).reshape(2, 2)},
                            non_tensors={"labels": ["a", "b"]}, meta_info={"step": 2})
    (batch_size, device, items), columns, meta = d.__getstate__()
    assert batch_size == (2,) and device == "cpu" and list(items) == ["obs"]
    dtype, shape, data = items["obs"]
    assert dtype == "int16" and tuple(shape) == (2, 2) and data.tolist() == [0, 0, 1, 0, 2, 0, 3, 0]  # little-endian
    assert d.__getstate__()[0] is not None and DataProto.from_dict(non_tensors={"x": [1]}).__getstate__()[0] is None
    with pytest.raises(verl.DataError, match="expected \\(batch, non_tensor_batch, meta_info\\)"):
        DataProto().__setstate__({"batch": None})


def test_deepcopy_is_independent():
    d = _mixed_batch()
    c = copy.deepcopy(d)
    _assert_same(c, d)
    c.batch["i"][0] = 1
    c.non_tensor_batch["cells"][0]["k"].append(3)
    c.meta_info["names"].append("z")
    assert d.batch["i"][0].item() == 2**40 and d.non_tensor_batch["cells"][0] == {"k": [1, 2]}
    assert d.meta_info["names"] == ["x", "y"]


def test_broken_contracts_are_assertion_errors_with_verls_wording():
    with pytest.raises(AssertionError, match="only support equal chunk"):
        sample(6).chunk(4)
    a = sample()
    other = sample()
    other.meta_info["info"] = "y"
    with pytest.raises(AssertionError, match="Conflicting values for meta_info key 'info'"):
        DataProto.concat([a, other])
    with pytest.raises(verl.DataContractError):
        a.union(DataProto.from_dict(tensors={"ids": torch.tensor([9, 9, 9])}))
    obs = torch.randn(4, 2)
    td1 = TensorDict({"obs": obs}, batch_size=[4])
    union_tensor_dict(td1, TensorDict({"obs": obs, "new": torch.ones(4)}, batch_size=[4]))
    assert set(td1.keys()) == {"obs", "new"}
    with pytest.raises(AssertionError, match="obs"):
        union_tensor_dict(td1, TensorDict({"obs": obs + 1}, batch_size=[4]))
    assert issubclass(verl.DataContractError, verl.DataError)


def test_union_numpy_dict_compares_deeply():
    with pytest.raises(AssertionError, match="`v` in tensor_dict1 and tensor_dict2 are not the same object."):
        union_numpy_dict({"v": np.arange(6).reshape(2, 3)}, {"v": np.arange(6).reshape(2, 3) + 1})
    union_numpy_dict({"v": np.array([1.0, np.nan])}, {"v": np.array([1.0, np.nan])})  # NaN == NaN
    with pytest.raises(AssertionError):
        union_numpy_dict({"v": np.array([np.nan, 1.0])}, {"v": np.array([1.0, np.nan])})
    loop1, loop2 = np.empty(1, dtype=object), np.empty(1, dtype=object)
    loop1[0], loop2[0] = loop1, loop2
    union_numpy_dict({"v": loop1}, {"v": loop2})  # same self-reference on both sides: equal, no RecursionError
    with pytest.raises(AssertionError):
        union_numpy_dict({"v": loop1}, {"v": np.array([None], dtype=object)})
