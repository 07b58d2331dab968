"""Issue 21's fuzzing findings on the model and checkpoint readers (bugs 3, 7, 9, 11, 13), each from the
input that crashed, ran away with memory, read outside the checkpoint or raised the wrong class. The
inputs that overflowed the stack or allocated without bound run in a child process (tests/python/isolated.py):
a regression fails one test with its signal instead of killing pytest, and the child's memory is capped, so
building a model of 17 GB from a hostile config.json fails the test rather than the machine. Inputs that
only raised the wrong class (or, bug 13, loaded what they should not) run in-process."""

import json
import os
import struct
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from isolated import expect_verl_error  # noqa: E402

import verl  # noqa: E402
from verl import _C  # noqa: E402
from verl.models import CausalLM, load_model  # noqa: E402
from verl.models.safetensors import load_checkpoint_dir, safe_open  # noqa: E402

TINY = dict(model_type="qwen2", vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=False)
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def checkpoint(tmp_path):
    """A tiny checkpoint directory in several shards (so it has an index to tamper with)."""
    path = tmp_path / "ckpt"
    CausalLM(TINY).save_pretrained(str(path), max_shard_size=20_000)
    assert (path / "model.safetensors.index.json").exists()
    return path


def shard_of(path, tensor="model.norm.weight"):
    return path / json.loads((path / "model.safetensors.index.json").read_text())["weight_map"][tensor]


def load(path) -> str:
    return f"from verl.models import load_model; load_model({str(path)!r})"


def edit_index(path, edit):
    index_path = path / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    edit(index["weight_map"])
    index_path.write_text(json.dumps(index))
    return str(index_path)


def raw_safetensors(path, header, data_bytes: int = 0):
    body = header if isinstance(header, bytes) else header.encode()
    path.write_bytes(struct.pack("<Q", len(body)) + body + b"\0" * data_bytes)
    return str(path)


# ---- bug 3: config.json sizes ------------------------------------------------------------------

@pytest.mark.parametrize("field", ["num_hidden_layers", "hidden_size", "vocab_size", "intermediate_size",
                                   "num_attention_heads"])
def test_huge_config_sizes_are_a_config_error_naming_field_and_file(checkpoint, field):
    config = checkpoint / "config.json"
    cfg = json.loads(config.read_text())
    cfg[field] = 1_000_000_000
    config.write_text(json.dumps(cfg))
    expect_verl_error(load(checkpoint), "ConfigError", f"'{field}'", str(config), timeout=60)


def test_config_that_does_not_fit_the_weights_fails_before_allocating(checkpoint):
    # Within every bound, but describing a model of ~2^56 parameters: before the fix load_model built it
    # (or died trying) before comparing it with the checkpoint.
    config = checkpoint / "config.json"
    cfg = json.loads(config.read_text())
    cfg.update(vocab_size=1 << 24, hidden_size=1 << 17, intermediate_size=1 << 20, num_hidden_layers=4096,
               num_attention_heads=1024, num_key_value_heads=1024)
    config.write_text(json.dumps(cfg))
    expect_verl_error(load(checkpoint), "CheckpointError", "does not fit its config", str(config),
                      "model.embed_tokens.weight (checkpoint [64, 32]", "config [16777216, 131072])", timeout=60)


# ---- bug 9: deep nesting -----------------------------------------------------------------------

def test_config_json_nested_100000_deep(checkpoint):
    config = checkpoint / "config.json"
    config.write_text(config.read_text().replace("{", '{"my_custom_key": ' + DEEP + ",", 1))
    expect_verl_error(load(checkpoint), "CheckpointError", str(config), "nesting deeper than 128 levels")


def test_config_text_nested_100000_deep_through_the_bindings():
    # Built in the child: 200 kB is more than one command-line argument may hold.
    text = "text = " + repr(json.dumps(TINY)[:-1] + ', "x": ') + " + '[' * 100_000 + ']' * 100_000 + '}'"
    expect_verl_error(f"from verl import _C; {text}; _C.model.parse_model_config(text)", "ConfigError",
                      "nesting deeper than 128 levels")
    expect_verl_error(f"from verl import _C; {text}; _C.model.CausalLM(text, False)", "ConfigError",
                      "nesting deeper than 128 levels")


def test_safetensors_shape_nested_100000_deep(tmp_path):
    path = raw_safetensors(tmp_path / "deep.safetensors",
                           '{"w":{"dtype":"F32","shape":' + DEEP + ',"data_offsets":[0,4]}}', 4)
    expect_verl_error(f"from verl.models.safetensors import safe_open; safe_open({path!r})", "CheckpointError",
                      path, "nesting deeper than 128 levels")
    # Nested less deep than the limit: the message quotes a bounded prefix, not the whole value.
    path = raw_safetensors(tmp_path / "nested.safetensors",
                           '{"w":{"dtype":"F32","shape":[' + "[" * 100 + "1" + "]" * 100 + '],"data_offsets":[0,4]}}', 4)
    outcome = expect_verl_error(f"from verl.models.safetensors import safe_open; safe_open({path!r})",
                                "CheckpointError", "non-integer dimension")
    assert len(outcome.message) < 1000


# ---- bug 7 / 13: shard names -------------------------------------------------------------------

@pytest.mark.parametrize("shard, why", [
    ("../outside.safetensors", "is a path"),
    ("/etc/hostname", "is a path"),
    ("sub/model.safetensors", "is a path"),
    ("", "is empty"),
    (".", "is not a file name"),
    ("..", "is not a file name"),
    ("x" * 300 + ".safetensors", "longer than 255 bytes"),
])
def test_weight_map_shard_names_must_be_plain_file_names(checkpoint, shard, why):
    # A valid safetensors file outside the directory: before the fix, "../" loaded it.
    outside = checkpoint.parent / "outside.safetensors"
    outside.write_bytes(shard_of(checkpoint).read_bytes())
    index = edit_index(checkpoint, lambda wm: wm.update({"model.norm.weight": shard}))
    for read in (load_model, load_checkpoint_dir):
        with pytest.raises(verl.CheckpointError) as info:
            read(checkpoint)
        message = str(info.value)
        assert index in message and "weight_map['model.norm.weight'] names shard" in message and why in message


# ---- bug 11: library exceptions ----------------------------------------------------------------

def test_shard_that_is_a_symlink_loop(checkpoint):
    shard = shard_of(checkpoint)
    shard.unlink()
    os.symlink(shard.name, shard)
    with pytest.raises(verl.CheckpointError, match="symbolic links") as info:
        load_model(checkpoint)
    assert str(shard) in str(info.value)


def test_config_json_that_is_a_symlink_loop(checkpoint):
    config = checkpoint / "config.json"
    config.unlink()
    os.symlink(config.name, config)
    with pytest.raises(verl.CheckpointError, match="symbolic links") as info:
        load_model(checkpoint)
    assert str(config) in str(info.value)


def test_numbers_out_of_range(checkpoint, tmp_path):
    index = checkpoint / "model.safetensors.index.json"
    index.write_text(index.read_text().replace("{", '{"x": 1e400,', 1))
    with pytest.raises(verl.CheckpointError, match="not valid JSON") as info:
        load_model(checkpoint)
    assert str(index) in str(info.value)
    with pytest.raises(verl.ConfigError, match="not valid JSON"):
        _C.model.parse_model_config('{"rope_theta": 1e400}')
    path = raw_safetensors(tmp_path / "e400.safetensors", '{"w":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}}', 4)
    with pytest.raises(verl.CheckpointError, match="not valid JSON") as info:
        safe_open(path)
    assert path in str(info.value)


def test_paths_and_names_that_are_not_utf8_reach_python_escaped(tmp_path):
    # A Linux path is bytes; Python passes undecodable ones as surrogates. The message escapes them.
    missing = os.fsdecode(os.fsencode(str(tmp_path)) + b"/ckpt\xff")
    with pytest.raises(verl.CheckpointError, match="does not exist") as info:
        load_model(missing)
    assert "ckpt\\xff" in str(info.value)
    # A non-UTF-8 byte inside the header's JSON: the parser's message quotes it; ours arrives escaped.
    path = raw_safetensors(tmp_path / "utf8.safetensors", b'{"w\xff":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', 4)
    with pytest.raises(verl.CheckpointError, match="not valid JSON") as info:
        safe_open(path)
    assert path in str(info.value)


def test_symlinked_checkpoint_files_keep_loading(tmp_path):
    # The Hugging Face hub cache: snapshots/<rev>/<file> -> ../../blobs/<hash>.
    staged = tmp_path / "staged"
    model = CausalLM(TINY)
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    model.save_pretrained(str(staged), max_shard_size=20_000)
    blobs, snapshot = tmp_path / "hub" / "blobs", tmp_path / "hub" / "snapshots" / "abc"
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for f in list(staged.iterdir()):
        f.rename(blobs / ("sha-" + f.name))
        os.symlink(os.path.join("..", "..", "blobs", "sha-" + f.name), snapshot / f.name)
    loaded = load_model(snapshot).state_dict()
    assert loaded.keys() == saved.keys()
    assert all(torch.equal(loaded[k], saved[k]) for k in saved)
