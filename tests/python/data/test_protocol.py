"""verl.protocol.DataProto: verl's API and invariants, and agreement with the C++ DataProto."""

import pickle

import numpy as np
import pytest
import torch

import verl
from verl import DataProto
from verl.protocol import DataProtoConfig, TensorBatch, pad_dataproto_to_divisor, unpad_dataproto


def sample(rows: int = 6) -> DataProto:
    """obs (rows, 2) = [[0,1],[2,3],...], ids = 0..rows-1, labels 'a'.., meta {'info': 'x'}."""
    return DataProto.from_dict(
        tensors={"obs": torch.arange(rows * 2).reshape(rows, 2), "ids": torch.arange(rows)},
        non_tensors={"labels": [chr(ord("a") + i) for i in range(rows)]},
        meta_info={"info": "x"},
    )


def ids(d: DataProto) -> list:
    return d.batch["ids"].tolist()


def labels(d: DataProto) -> list:
    return list(d.non_tensor_batch["labels"])


# -- construction ------------------------------------------------------------------------------
def test_from_dict_makes_object_arrays_and_checks_rows():
    d = sample()
    assert len(d) == 6
    assert d.non_tensor_batch["labels"].dtype == object
    assert d.batch.batch_size == torch.Size([6])
    with pytest.raises(verl.DataError, match="same batch size"):
        DataProto.from_dict(tensors={"a": torch.zeros(3), "b": torch.zeros(4)})
    with pytest.raises(verl.DataError, match="not equal to batch size"):
        DataProto.from_dict(tensors={"a": torch.zeros(3)}, non_tensors={"c": [1, 2]})


def test_from_dict_keeps_list_cells_whole():
    d = DataProto.from_dict(non_tensors={"msgs": [[1, 2], [3, 4]]})
    assert d.non_tensor_batch["msgs"].shape == (2,)
    assert d.non_tensor_batch["msgs"][1] == [3, 4]


def test_from_single_dict_splits_tensors_and_arrays():
    d = DataProto.from_single_dict({"a": torch.ones(2), "b": np.array(["x", "y"], dtype=object)})
    assert list(d.batch) == ["a"] and list(d.non_tensor_batch) == ["b"]
    with pytest.raises(TypeError):
        DataProto.from_single_dict({"a": [1, 2]})


def test_batch_assignment_checks_rows():
    d = sample()
    d.batch["new"] = torch.zeros(6, 3)
    with pytest.raises(verl.DataError, match="6 rows"):
        d.batch["bad"] = torch.zeros(5)
    with pytest.raises(TypeError):
        d.batch["bad"] = [0] * 6


def test_batch_size_setter_checks_rows_as_tensordict_does():
    # verl's PF-PPO rebuilds the batch from a dict and assigns the old batch_size to it
    d = sample()
    rebuilt = TensorBatch({k: v[[5, 0, 1, 1, 2, 3]] for k, v in d.batch.items()})
    rebuilt.batch_size = d.batch.batch_size
    assert rebuilt.batch_size == torch.Size([6])
    rebuilt.batch_size = 6
    rebuilt.batch_size = [6]
    empty = TensorBatch()
    empty.batch_size = torch.Size([4])
    empty["x"] = torch.zeros(4, 2)  # the new row count is the one checked from now on
    with pytest.raises(verl.DataError, match="4 rows"):
        empty["y"] = torch.zeros(3)
    with pytest.raises(verl.DataError, match="does not match the first dimension"):
        rebuilt.batch_size = torch.Size([5])
    with pytest.raises(verl.DataError, match="exactly one batch dimension"):
        rebuilt.batch_size = torch.Size([6, 2])
    with pytest.raises(TypeError):
        rebuilt.batch_size = "6"
    assert rebuilt.batch_size == torch.Size([6])  # a refused assignment changes nothing


# -- indexing ----------------------------------------------------------------------------------
def test_getitem_int_slice_list_array_tensor():
    d = sample()
    item = d[2]
    assert isinstance(item, verl.DataProtoItem)
    assert item.batch["ids"].item() == 2 and item.non_tensor_batch["labels"] == "c"
    assert d[-1].non_tensor_batch["labels"] == "f"
    assert ids(d[1:5:2]) == [1, 3]
    assert ids(d[[5, 0]]) == [5, 0]
    assert ids(d[np.array([1, 2])]) == [1, 2]
    assert ids(d[torch.tensor([4])]) == [4]
    assert ids(d[np.array([True, False, False, False, False, True])]) == [0, 5]
    assert ids(d[[True, False, True, False, False, False]]) == [0, 2]
    with pytest.raises(verl.DataError):
        d[6]
    with pytest.raises(verl.DataError):
        d[[0, 9]]
    with pytest.raises(TypeError):
        d["obs"]


def test_slice_is_a_view():
    d = sample()
    part = d.slice(2, 4)
    part.batch["obs"][0, 0] = 100
    assert d.batch["obs"][2, 0].item() == 100
    assert labels(part) == ["c", "d"]


def test_select_and_pop():
    d = sample()
    s = d.select(batch_keys=["obs"], non_tensor_batch_keys=[], meta_info_keys=["info"])
    assert list(s.batch) == ["obs"] and s.non_tensor_batch == {} and s.meta_info == {"info": "x"}
    deep = d.select(deepcopy=True)
    deep.batch["obs"][0, 0] = -1
    assert d.batch["obs"][0, 0].item() == 0
    with pytest.raises(verl.DataError, match="nope"):
        d.select(batch_keys=["nope"])
    popped = d.pop(batch_keys=["obs"], non_tensor_batch_keys=["labels"], meta_info_keys=["info"])
    assert "obs" in popped.batch and "labels" in popped.non_tensor_batch and popped.meta_info == {"info": "x"}
    assert "obs" not in d.batch and "labels" not in d.non_tensor_batch and "info" not in d.meta_info
    with pytest.raises(verl.DataError, match="missing"):
        d.pop(batch_keys=["ids", "missing"])
    assert "ids" in d.batch  # a bad key changes nothing


def test_rename():
    d = sample()
    assert d.rename("obs", "observations") is d
    assert "observations" in d.batch and "obs" not in d.batch
    with pytest.raises(verl.DataError):
        d.rename(["observations"], ["ids"])
    assert "observations" in d.batch
    with pytest.raises(ValueError):
        d.rename(["a", "b"], ["c"])
    with pytest.raises(TypeError):
        d.rename(1, 2)


# -- combining ---------------------------------------------------------------------------------
def test_union_merges_and_rejects_conflicts():
    a = sample()
    b = DataProto.from_dict(
        tensors={"obs": a.batch["obs"].clone(), "extra": torch.ones(6)},
        non_tensors={"labels": list("abcdef"), "more": list(range(6))},
        meta_info={"step": 1},
    )
    a.union(b)
    assert set(a.batch) == {"obs", "ids", "extra"} and "more" in a.non_tensor_batch and a.meta_info["step"] == 1
    with pytest.raises(verl.DataError, match="obs"):
        sample().union(DataProto.from_dict(tensors={"obs": torch.zeros(6, 2, dtype=torch.long)}))
    with pytest.raises(verl.DataError, match="labels"):
        sample().union(DataProto.from_dict(non_tensors={"labels": list("zzzzzz")}))
    with pytest.raises(verl.DataError, match="info"):
        sample().union(DataProto(meta_info={"info": "y"}))
    nan = DataProto.from_dict(tensors={"v": torch.tensor([1.0, float("nan")])})
    nan.union(DataProto.from_dict(tensors={"v": torch.tensor([1.0, float("nan")])}))


def test_concat_joins_rows_and_gathers_metrics():
    a, b = sample(2), sample(3)
    a.meta_info["metrics"] = {"loss": 1.0}
    b.meta_info["metrics"] = [{"loss": 2.0}]
    c = DataProto.concat([a, b])
    assert ids(c) == [0, 1, 0, 1, 2] and labels(c) == ["a", "b", "a", "b", "c"]
    assert c.meta_info == {"info": "x", "metrics": {"loss": [1.0, 2.0]}}
    other = sample(2)
    other.meta_info["info"] = "y"
    with pytest.raises(verl.DataError, match="info"):
        DataProto.concat([a, other])
    with pytest.raises(verl.DataError):
        DataProto.concat([])


def test_repeat_interleave_vs_tile():
    d = sample(2)
    inter = d.repeat(repeat_times=3, interleave=True)
    assert ids(inter) == [0, 0, 0, 1, 1, 1] and labels(inter) == ["a", "a", "a", "b", "b", "b"]
    tile = d.repeat(repeat_times=3, interleave=False)
    assert ids(tile) == [0, 1, 0, 1, 0, 1] and labels(tile) == ["a", "b", "a", "b", "a", "b"]
    assert torch.equal(tile.batch["obs"][2], d.batch["obs"][0])
    assert inter.meta_info == d.meta_info


def test_chunk_divisibility_and_auto_padding():
    d = sample()
    with pytest.raises(verl.DataError, match="only support equal chunk"):
        d.chunk(5)
    parts = d.chunk(3)
    assert [ids(p) for p in parts] == [[0, 1], [2, 3], [4, 5]]
    assert [labels(p) for p in parts] == [["a", "b"], ["c", "d"], ["e", "f"]]
    padded = DataProto.from_dict(tensors={"ids": torch.arange(6)}, auto_padding=True)
    assert [len(p) for p in padded.chunk(4)] == [2, 2, 1, 1]
    DataProtoConfig.auto_padding = True
    try:
        assert [len(p) for p in sample().chunk(4)] == [2, 2, 1, 1]
    finally:
        DataProtoConfig.auto_padding = False


def test_split_last_piece_shorter():
    assert [ids(p) for p in sample(5).split(2)] == [[0, 1], [2, 3], [4]]


def test_reorder_in_place():
    d = sample(3)
    d.reorder(torch.tensor([2, 0, 1]))
    assert ids(d) == [2, 0, 1] and labels(d) == ["c", "a", "b"]
    with pytest.raises(verl.DataError):
        d.reorder(torch.tensor([0, 1]))


def test_pad_and_unpad_round_trip():
    d = sample(5)
    padded, pad = pad_dataproto_to_divisor(d, 4)
    assert pad == 3 and ids(padded) == [0, 1, 2, 3, 4, 0, 1, 2]
    assert labels(padded)[5:] == ["a", "b", "c"]
    back = unpad_dataproto(padded, pad)
    assert ids(back) == ids(d) and labels(back) == labels(d)
    same, zero = pad_dataproto_to_divisor(d, 5)
    assert zero == 0 and same is d


def test_padding_appends_copies_of_a_row():
    d = sample(2)
    d.padding(2, "first")
    assert ids(d) == [0, 1, 0, 0]


def test_make_iterator_seeded_order():
    d = sample(8)

    def order(seed):
        out = []
        for mb in d.make_iterator(mini_batch_size=4, epochs=2, seed=seed):
            assert mb.meta_info is d.meta_info
            out += ids(mb)
        return out

    assert len(order(1)) == 16
    assert order(1) == order(1)
    assert order(1) != order(2)
    assert sorted(order(1)[:8]) == list(range(8))
    assert [ids(mb) for mb in d.make_iterator(4, 1)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    plain = d.make_iterator(4, 1, seed=3, dataloader_kwargs={"shuffle": False})
    assert ids(next(plain)) == [0, 1, 2, 3]
    with pytest.raises(verl.DataError):
        d.make_iterator(3, 1)
    with pytest.raises(ValueError, match="num_workers"):
        d.make_iterator(4, 1, dataloader_kwargs={"num_workers": 2})


def test_to_device_in_place():
    d = sample()
    assert d.to("cpu") is d
    assert d.batch["obs"].device.type == "cpu"


# -- files and C++ -----------------------------------------------------------------------------
def test_save_and_load_round_trip(tmp_path):
    d = sample()
    d.non_tensor_batch["extra"] = np.array([{"k": 1}, None, 2.5, True, [1, 2], "s"], dtype=object)
    d.meta_info["temperature"] = 0.7
    path = tmp_path / "batch.pt"
    d.save_to_disk(path)
    back = DataProto.load_from_disk(path)
    assert torch.equal(back.batch["obs"], d.batch["obs"])
    assert list(back.non_tensor_batch["extra"]) == list(d.non_tensor_batch["extra"])
    assert back.meta_info == d.meta_info
    assert not (tmp_path / "batch.pt.tmp").exists()
    loaded = torch.load(path, weights_only=False)  # the file is a torch pickle too
    assert torch.equal(loaded["tensors"]["ids"], d.batch["ids"])


def test_save_rejects_objects_it_cannot_store(tmp_path):
    d = sample(1)
    d.non_tensor_batch["bad"] = np.array([object()], dtype=object)
    with pytest.raises(verl.VerlTypeError, match="non_tensor_batch\\['bad'\\]\\[0\\]"):
        d.save_to_disk(tmp_path / "x.pt")


def test_load_garbage_is_a_checkpoint_error(tmp_path):
    (tmp_path / "garbage.pt").write_bytes(b"not a pickle")
    with pytest.raises(verl.CheckpointError, match="garbage.pt"):
        DataProto.load_from_disk(tmp_path / "garbage.pt")


def test_cpp_round_trip_shares_storage():
    d = sample()
    cpp = d.to_cpp()
    assert cpp.batch["obs"].data_ptr() == d.batch["obs"].data_ptr()
    back = DataProto.from_cpp(cpp)
    assert back.batch["obs"].data_ptr() == d.batch["obs"].data_ptr()
    back.batch["obs"][0, 0] = 42
    assert d.batch["obs"][0, 0].item() == 42
    assert labels(back) == labels(d) and back.meta_info == d.meta_info


def test_python_and_cpp_agree_row_for_row():
    d = sample(6)
    cpp = d.to_cpp()
    pairs = [
        (d.repeat(3, interleave=False), cpp.repeat(3, interleave=False)),
        (d.select_idxs([4, -1, 0]), cpp.select_idxs(torch.tensor([4, -1, 0]))),
        (d.slice(1, None, 2), cpp.slice(1, None, 2)),
        (DataProto.concat([d, d[:2]]), _C_concat([cpp, cpp.slice(None, 2)])),
    ]
    for mb_py, mb_cpp in zip(d.make_iterator(3, 2, seed=11), cpp.make_iterator(3, 2, seed=11)):
        pairs.append((mb_py, mb_cpp))
    for part_py, part_cpp in zip(d.chunk(2), cpp.chunk(2)):
        pairs.append((part_py, part_cpp))
    for py_side, cpp_side in pairs:
        back = DataProto.from_cpp(cpp_side)
        assert ids(py_side) == ids(back)
        assert labels(py_side) == labels(back)


def _C_concat(parts):
    return verl._C.DataProto.concat(parts)


def test_pickle_round_trip():
    d = sample()
    back = pickle.loads(pickle.dumps(d))
    assert ids(back) == ids(d) and labels(back) == labels(d) and back.meta_info == d.meta_info


def test_tensordict_like_batch_is_accepted():
    d = DataProto(batch={"a": torch.zeros(3)})
    assert isinstance(d.batch, TensorBatch) and len(d) == 3
