"""verl.utils.tensordict_utils: the TensorDict helpers of verl's newer workers, checked on hand-made batches whose
every row, offset and value is known."""

import pytest
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict

from verl.utils import tensordict_utils as tu


def _jagged(*rows):
    return torch.nested.as_nested_tensor([torch.tensor(r) for r in rows], layout=torch.jagged)


def _batch():
    return tu.get_tensordict(
        {"score": torch.tensor([10.0, 20.0, 30.0, 40.0]), "ids": _jagged([1], [2, 3], [4, 5, 6], [7, 8, 9, 10]),
         "uid": ["a", "b", "c", "d"]},
        non_tensor_dict={"temperature": 0.7})


def test_get_tensordict_keeps_each_row_object_and_batch_wide_values():
    td = tu.get_tensordict({"x": torch.zeros(3, 2), "turns": [[], [0.5, 0.8], [{"acc": 1.0}]]}, {"step": 42})
    assert td.batch_size == torch.Size([3])
    assert tu.get(td, "turns") == [[], [0.5, 0.8], [{"acc": 1.0}]]
    assert tu.get(td, "step") == 42
    assert tu.get(td, "missing", default="d") == "d"
    assert tu.get_tensordict({}, {"step": 1}).batch_size == torch.Size([])
    with pytest.raises(AssertionError, match="not consistent"):
        tu.get_tensordict({"x": torch.zeros(3), "names": ["a", "b"]})


def test_index_select_rebuilds_nested_rows_in_the_order_asked():
    td = _batch()
    picked = tu.index_select_tensor_dict(td, [3, 0, 3])
    assert picked.batch_size == torch.Size([3])
    assert picked["score"].tolist() == [40.0, 10.0, 40.0]
    assert picked["ids"].offsets().tolist() == [0, 4, 5, 9]
    assert picked["ids"].values().tolist() == [7, 8, 9, 10, 1, 7, 8, 9, 10]
    assert tu.get(picked, "uid") == ["d", "a", "d"]
    assert tu.get(picked, "temperature") == 0.7
    assert tu.index_select_tensor_dict(None, [0]) is None
    with pytest.raises(AssertionError, match="1D"):
        tu.index_select_tensor_dict(td, torch.tensor([[0, 1]]))


def test_three_dimensional_nested_rows_stay_ragged_on_their_sequence_dimension():
    # MRoPE position ids: per row (3, seq); two rows of equal length must not make the 3 the ragged dimension.
    rows = [torch.arange(2).expand(3, 2), torch.arange(5).expand(3, 5) + 10, torch.arange(5).expand(3, 5) + 20,
            torch.arange(1).expand(3, 1)]
    position_ids = tu.nested_tensor_from_tensor_list(rows)
    td = tu.get_tensordict({"position_ids": position_ids})
    picked = tu.index_select_tensor_dict(td, [1, 2])
    assert picked["position_ids"]._ragged_idx == 2
    assert picked["position_ids"].values().shape == torch.Size([3, 10])
    assert picked["position_ids"].offsets().tolist() == [0, 5, 10]
    first, second = tu.chunk_tensordict(td, chunks=2)
    assert first["position_ids"].offsets().tolist() == [0, 2, 7]
    assert torch.equal(second["position_ids"].unbind()[0], rows[2])
    assert torch.equal(second["position_ids"].unbind()[1], rows[3])


def test_chunk_then_concat_gives_the_batch_back():
    td = _batch()
    parts = tu.chunk_tensordict(td, chunks=2)
    assert [len(p) for p in parts] == [2, 2]
    assert parts[1]["ids"].values().tolist() == [4, 5, 6, 7, 8, 9, 10]
    assert parts[1]["score"].tolist() == [30.0, 40.0]
    back = tu.concat_tensordict(parts)
    tu.assert_tensordict_eq(back, td)
    with pytest.raises(AssertionError, match="divisible"):
        tu.chunk_tensordict(td, chunks=3)


def test_concat_keeps_the_first_batch_wide_value_and_leaves_inputs_alone():
    one = tu.get_tensordict({"ids": _jagged([1, 2], [3]), "uid": ["a", "b"]}, {"temperature": 1.0})
    two = tu.get_tensordict({"ids": _jagged([4], [5, 6, 7]), "uid": ["c", "d"]}, {"temperature": 2.0})
    joined = tu.concat_tensordict([one, two])
    assert joined["ids"].offsets().tolist() == [0, 2, 3, 4, 7]
    assert tu.get(joined, "uid") == ["a", "b", "c", "d"]
    assert tu.get(joined, "temperature") == 1.0
    assert tu.get(one, "temperature") == 1.0 and tu.get(two, "temperature") == 2.0
    plain = tu.concat_tensordict([tu.get_tensordict({"x": torch.tensor([1])}, {"t": 1}),
                                  tu.get_tensordict({"x": torch.tensor([2])}, {"t": 2})])
    assert plain["x"].tolist() == [1, 2] and tu.get(plain, "t") == 1
    meta_only = tu.concat_tensordict([tu.get_tensordict({}, {"t": 1}), tu.get_tensordict({}, {"t": 2})])
    assert tu.get(meta_only, "t") == 1


def test_concat_nested_tensors_of_two_and_three_dimensions():
    joined = tu.concat_nested_tensors([_jagged([1, 2, 3]), _jagged([4], [5, 6])])
    assert joined.offsets().tolist() == [0, 3, 4, 6]
    rows = [torch.full((2, n), n) for n in (1, 3, 2)]
    joined3 = tu.concat_nested_tensors([tu.nested_tensor_from_tensor_list(rows[:2]),
                                        tu.nested_tensor_from_tensor_list(rows[2:])])
    assert [tuple(r.shape) for r in joined3.unbind()] == [(2, 1), (2, 3), (2, 2)]


def test_union_adds_missing_keys_and_refuses_conflicts():
    x = torch.tensor([1.0, 2.0])
    left = tu.get_tensordict({"x": x}, {"top_p": 0.8})
    right = tu.get_tensordict({"x": x.clone(), "y": torch.tensor([3.0, 4.0]), "uid": ["p", "q"]})
    merged = tu.union_tensor_dict(left, right)
    assert merged is left
    assert left["y"].tolist() == [3.0, 4.0] and tu.get(left, "uid") == ["p", "q"]
    with pytest.raises(AssertionError, match="x in tensor_dict1"):
        tu.union_tensor_dict(left, tu.get_tensordict({"x": torch.tensor([1.0, 9.0])}))
    with pytest.raises(AssertionError, match="top_p"):
        tu.union_tensor_dict(left, tu.get_tensordict({"x": x}, {"top_p": 0.9}))
    with pytest.raises(AssertionError, match="identical batch size"):
        tu.union_tensor_dict(left, tu.get_tensordict({"x": torch.zeros(3)}))


def test_assert_tensordict_eq_compares_nested_rows_and_non_tensors():
    tu.assert_tensordict_eq(_batch(), _batch())
    moved = _batch()
    moved["ids"] = _jagged([1], [2, 3], [4, 5, 7], [7, 8, 9, 10])
    with pytest.raises(AssertionError, match="nested rows differ"):
        tu.assert_tensordict_eq(_batch(), moved)
    relabelled = _batch()
    tu.assign_non_tensor(relabelled, uid=["a", "b", "c", "z"])
    with pytest.raises(AssertionError):
        tu.assert_tensordict_eq(_batch(), relabelled)
    with pytest.raises(AssertionError, match="key set"):
        tu.assert_tensordict_eq(_batch(), tu.get_keys(_batch(), ["score"]))


def test_make_iterator_walks_every_row_once_per_epoch():
    td = tu.get_tensordict({"row": torch.arange(6)})
    ordered = [b["row"].tolist() for b in tu.make_iterator(td, mini_batch_size=2, epochs=2)]
    assert ordered == [[0, 1], [2, 3], [4, 5]] * 2
    shuffled = [b["row"].tolist() for b in tu.make_iterator(td, 3, 1, seed=7, dataloader_kwargs={"shuffle": True})]
    again = [b["row"].tolist() for b in tu.make_iterator(td, 3, 1, seed=7, dataloader_kwargs={"shuffle": True})]
    assert shuffled == again
    assert sorted(sum(shuffled, [])) == [0, 1, 2, 3, 4, 5]
    with pytest.raises(AssertionError, match="6 % 4"):
        tu.make_iterator(td, mini_batch_size=4, epochs=1)


def test_pop_keys_and_get_keys():
    td = _batch()
    kept = tu.get_keys(td, ["score", "temperature"])
    assert set(kept.keys()) == {"score", "temperature"} and set(td.keys()) == {"score", "ids", "uid", "temperature"}
    popped = tu.pop_keys(td, ["uid", "temperature"])
    assert tu.get(popped, "uid") == ["a", "b", "c", "d"] and tu.get(popped, "temperature") == 0.7
    assert popped.batch_size == torch.Size([4])
    assert set(td.keys()) == {"score", "ids"}
    with pytest.raises(KeyError):
        tu.pop_keys(td, ["score", "uid"])
    assert set(td.keys()) == {"score", "ids"}  # nothing removed when a key is missing
    assert tu.pop(td, "score").tolist() == [10.0, 20.0, 30.0, 40.0]
    assert tu.pop(td, "score", default=-1) == -1


def test_pad_to_divisor_cycles_rows_from_the_start_and_unpad_undoes_it():
    td = tu.get_tensordict({"x": torch.tensor([5, 6, 7])}, {"info": "i"})
    padded, pad = tu.pad_to_divisor(td, 8)
    assert pad == 5
    assert padded["x"].tolist() == [5, 6, 7, 5, 6, 7, 5, 6]
    assert tu.unpad(padded, pad)["x"].tolist() == [5, 6, 7]
    same, none = tu.pad_to_divisor(td, 3)
    assert none == 0 and same is td and tu.unpad(same, 0) is same


def test_assign_non_tensor_routes_lists_wrappers_and_scalars():
    td = tu.get_tensordict({"x": torch.zeros(2)})
    tu.assign_non_tensor(td, note="run-1", rewards=[[1.0], []], wrapped=NonTensorData(3),
                         stack=NonTensorStack.from_list([NonTensorData("p"), NonTensorData("q")]))
    assert isinstance(td.get("note"), NonTensorData) and tu.get(td, "note") == "run-1"
    assert isinstance(td.get("rewards"), NonTensorStack) and tu.get(td, "rewards") == [[1.0], []]
    assert tu.get(td, "wrapped") == 3 and tu.get(td, "stack") == ["p", "q"]
    assert tu.get_non_tensor_data(td, "note", None) == "run-1"
    assert tu.unwrap_non_tensor_data(5) == 5
    with pytest.raises(RuntimeError):
        tu.assign_non_tensor_stack(td, "short", [1.0])


def test_contiguous_makes_a_consolidatable_copy():
    strided = torch.arange(12.0).reshape(3, 4)[:, :3]
    td = tu.get_tensordict({"a": strided, "uid": ["p", "q", "r"]}, {"meta": 1})
    out = tu.contiguous(td)
    assert out is not td and out["a"].is_contiguous()
    tu.assert_tensordict_eq(out, td)


def test_list_of_dict_to_tensordict_stacks_pads_nothing_and_keeps_objects():
    td = tu.list_of_dict_to_tensordict([
        {"x": torch.tensor([1, 2]), "ids": torch.tensor([1]), "tag": "a"},
        {"x": torch.tensor([3, 4]), "ids": torch.tensor([2, 3]), "tag": "b"},
    ])
    assert isinstance(td, TensorDict) and td.batch_size == torch.Size([2])
    assert td["x"].tolist() == [[1, 2], [3, 4]]
    assert td["ids"].is_nested and td["ids"].offsets().tolist() == [0, 1, 3]
    assert tu.get(td, "tag") == ["a", "b"]
