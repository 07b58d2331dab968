"""verl.models.safetensors against HF safetensors 0.8.0: same bytes, same tensors, same index json."""

import json
import os

import pytest
import torch

import verl
from verl.models import safetensors as ours

hf = pytest.importorskip("safetensors.torch")

DTYPES = [
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
    torch.int8, torch.uint8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2,
    torch.uint16, torch.uint32, torch.uint64,
]


def random_bits(dtype, shape):
    """Every bit pattern of the dtype can occur (NaN payloads, infinities); bools stay 0/1."""
    g = torch.Generator().manual_seed(hash(str(dtype)) % 1000)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    itemsize = torch.empty((), dtype=dtype).element_size()
    n = int(torch.tensor(shape).prod()) if shape else 1
    return torch.randint(0, 256, (n * itemsize,), dtype=torch.uint8, generator=g).view(dtype).reshape(shape)


def sample():
    tensors = {f"layer.{i}.{str(d).split('.')[1]}": random_bits(d, [3, 5]) for i, d in enumerate(DTYPES)}
    tensors["scalar"] = torch.tensor(2.5)
    tensors["empty"] = torch.zeros(0, 7)
    return tensors


def same_bits(a, b):
    return (a.dtype == b.dtype and a.shape == b.shape
            and a.reshape(-1).view(torch.uint8).equal(b.reshape(-1).view(torch.uint8)))


def assert_same(expected, actual):
    assert sorted(expected) == sorted(actual)
    for name, tensor in expected.items():
        assert same_bits(tensor, actual[name]), name


def test_files_written_by_hf_load_identically(tmp_path):
    tensors = sample()
    path = tmp_path / "hf.safetensors"
    hf.save_file(tensors, str(path), metadata={"format": "pt", "step": "7"})
    assert_same(tensors, ours.load_file(path))
    with ours.safe_open(path, framework="pt") as f:
        assert f.metadata() == {"format": "pt", "step": "7"}
        assert sorted(f.keys()) == sorted(tensors)
        assert same_bits(f.get_tensor("layer.1.float32"), tensors["layer.1.float32"])


def test_files_we_write_load_identically_in_hf(tmp_path):
    tensors = sample()
    tensors["transposed"] = torch.arange(12.0).reshape(3, 4).t()  # HF refuses non-contiguous; we copy
    path = tmp_path / "ours.safetensors"
    ours.save_file(tensors, path, metadata={"format": "pt", "step": "7"})
    assert_same(tensors, hf.load_file(str(path)))
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        assert f.metadata() == {"format": "pt", "step": "7"}


@pytest.mark.parametrize("metadata", [None, {"format": "pt"}])
def test_bytes_equal_hf(tmp_path, metadata):
    # One metadata key at most: HF writes __metadata__ from a hash map, in no fixed order.
    tensors = sample()
    hf.save_file(tensors, str(tmp_path / "hf.safetensors"), metadata=metadata)
    ours.save_file(tensors, tmp_path / "ours.safetensors", metadata=metadata)
    assert (tmp_path / "ours.safetensors").read_bytes() == (tmp_path / "hf.safetensors").read_bytes()
    assert ours.save(tensors, metadata) == hf.save(tensors, metadata)
    assert_same(tensors, ours.load(hf.save(tensors, metadata)))


def test_loaded_tensors_are_views_and_writable_without_touching_the_file(tmp_path):
    path = tmp_path / "v.safetensors"
    hf.save_file({"w": torch.arange(6.0), "b": torch.ones(3, dtype=torch.uint8)}, str(path))
    f = verl._C.model.safe_open(str(path))
    assert f.is_zero_copy("w") and f.dtype("w") == "F32" and f.shape("w") == [6]
    w = ours.load_file(path)["w"]
    w += 1  # private copy-on-write mapping
    assert torch.equal(hf.load_file(str(path))["w"], torch.arange(6.0))


def test_corrupt_files_raise_checkpoint_error_naming_the_file(tmp_path):
    path = tmp_path / "bad.safetensors"
    data = bytearray(hf.save({"w": torch.ones(4)}))
    path.write_bytes(bytes(data[:-1]))  # one byte short: w's data_offsets leave the file
    with pytest.raises(verl.CheckpointError, match=r"bad\.safetensors.*tensor 'w'.*outside the data section"):
        ours.load_file(path)
    path.write_bytes(bytes(data) + b"\0")  # HF rejects trailing bytes too
    with pytest.raises(Exception):
        hf.load_file(str(path))
    with pytest.raises(verl.CheckpointError, match=r"bad\.safetensors.*belong to no tensor"):
        ours.load_file(path)


def test_sharded_checkpoint_follows_transformers(tmp_path):
    from huggingface_hub import split_torch_state_dict_into_shards

    state = {f"model.layers.{i}.weight": torch.randn(4, 4) for i in range(5)}  # 64 bytes each
    state["lm_head.weight"] = torch.randn(10, 10)  # 400 bytes > max: a shard of its own
    state["model.norm.weight"] = torch.randn(4).to(torch.bfloat16)
    max_bytes = 150
    files = ours.save_sharded(tmp_path, state, max_bytes)

    split = split_torch_state_dict_into_shards(state, max_shard_size=max_bytes)
    assert split.is_sharded
    assert sorted(os.path.basename(f) for f in files[:-1]) == sorted(split.filename_to_tensors)
    index_text = (tmp_path / "model.safetensors.index.json").read_text()
    # What transformers' save_pretrained writes (total_parameters: every tensor's numel here).
    expected = {
        "metadata": {"total_parameters": sum(t.numel() for t in state.values()), **split.metadata},
        "weight_map": split.tensor_to_filename,
    }
    assert index_text == json.dumps(expected, indent=2, sort_keys=True) + "\n"

    loaded = {}
    for shard in split.filename_to_tensors:
        part = hf.load_file(str(tmp_path / shard))
        assert sorted(part) == sorted(split.filename_to_tensors[shard])
        loaded.update(part)
    assert_same(state, loaded)
    assert_same(state, ours.load_checkpoint_dir(tmp_path))


def test_single_shard_is_model_safetensors(tmp_path):
    state = {"a": torch.ones(2), "b": torch.zeros(3)}
    files = ours.save_sharded(tmp_path, state, 1 << 30)
    assert [os.path.basename(f) for f in files] == ["model.safetensors"]
    assert sorted(os.listdir(tmp_path)) == ["model.safetensors"]
    with open(tmp_path / "model.safetensors", "rb") as f:
        assert f.read() == hf.save(state, metadata={"format": "pt"})
    assert_same(state, ours.load_checkpoint_dir(tmp_path))


def test_missing_shard_names_the_shard(tmp_path):
    ours.save_sharded(tmp_path, {"a": torch.ones(4), "b": torch.ones(4)}, 16)
    os.remove(tmp_path / "model-00002-of-00002.safetensors")
    with pytest.raises(verl.CheckpointError, match=r"model-00002-of-00002\.safetensors.*'b'"):
        ours.load_checkpoint_dir(tmp_path)
