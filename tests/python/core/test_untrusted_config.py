"""Issue 21's fuzzing findings on the config path, each from the input that crashed or raised the
wrong class. Inputs that once crashed the interpreter run in a child process (tests/python/isolated.py)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from isolated import expect_verl_error  # noqa: E402

import verl  # noqa: E402
from verl import _C  # noqa: E402


def test_self_referencing_alias_in_an_override():  # bug 1: stack overflow in to_json
    expect_verl_error("import verl; verl.load_config(overrides=['trainer.project_name=&a [1, *a]'])",
                      "ConfigError", "alias refers to a node that contains it")


def test_self_referencing_alias_in_a_yaml_file(tmp_path):  # bug 1
    path = tmp_path / "cycle.yaml"
    path.write_text("actor_rollout_ref: &a [1, *a]\n")
    expect_verl_error(f"import verl; verl.load_config({str(path)!r})", "ConfigError", "cycle.yaml:1")


def test_billion_laughs_yaml(tmp_path):  # bug 1: exponential alias expansion
    lines = ["l0: &l0 [" + ", ".join(["lol"] * 10) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 10)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    expect_verl_error(f"import verl; verl.load_config({str(path)!r})", "ConfigError", "expands to more than",
                      timeout=60)


@pytest.mark.parametrize("code", [
    "verl.load_config(overrides=['+foo={\"a.b\": 1}'])",
    "cfg = verl.load_config(); cfg['actor_rollout_ref.model.override_config'] = {'..': 1}; cfg.validate()",
    "cfg = verl.load_config(); cfg.actor_rollout_ref.model.override_config = {'x': {'': 2}}; cfg.validate()",
])
def test_dotted_or_empty_map_keys(code):  # bug 2: null dereference in validate()
    expect_verl_error("import verl\n" + code, "ConfigError", "config key")


def test_dotted_map_key_in_a_yaml_file(tmp_path):  # bug 2
    path = tmp_path / "dots.yaml"
    path.write_text('actor_rollout_ref:\n  model:\n    override_config:\n      "a.b": 1\n')
    expect_verl_error(f"import verl; verl.load_config({str(path)!r})", "ConfigError", "dots.yaml", "'a.b'")


def test_invalid_utf8_in_a_yaml_value(tmp_path):  # bug 10: json type_error.316
    path = tmp_path / "bytes.yaml"
    path.write_bytes(b"trainer:\n  total_epochs: a\xff\n")
    with pytest.raises(verl.ConfigError, match=r"bytes.yaml:2: not valid UTF-8"):
        verl.load_config(path)


def test_yaml_escapes_that_yaml_cpp_decodes_to_latin1_bytes():  # bug 10: UnicodeDecodeError in to_dict
    cfg = verl.load_config(overrides=['trainer.project_name="a\\Nb\\_c"'])
    assert cfg.trainer.project_name == "a\x85b\xa0c"
    assert cfg.to_dict()["trainer"]["project_name"] == "a\x85b\xa0c"


def test_override_with_a_surrogate_escaped_byte():  # bug 14: pybind TypeError "incompatible function arguments"
    bad = b"trainer.project_name=a\xff".decode("utf-8", "surrogateescape")  # how sys.argv carries that byte
    with pytest.raises(verl.ConfigError, match=r"override.*not valid text"):
        verl.load_config(overrides=[bad])
    with pytest.raises(verl.ConfigError, match="not valid text"):
        verl.load_config().override(bad)
    with pytest.raises(verl.ConfigError, match="not valid text"):
        verl.load_config()["trainer.project_name\udcff"] = 1
    with pytest.raises(verl.InvalidArgumentError, match=r"trainer.project_name.*not valid text"):
        verl.load_config()["trainer.project_name"] = "x\ud800"


def test_config_file_with_a_non_utf8_name(tmp_path):  # a surrogate-escaped path still opens the file
    path = os.path.join(os.fsencode(tmp_path), b"conf\xff.yaml")
    with open(path, "wb") as f:
        f.write(b"trainer:\n  total_epochs: 3\n")
    cfg = verl.load_config(os.fsdecode(path))
    assert cfg.trainer.total_epochs == 3


def test_deeply_nested_python_value():  # recursion in the bindings' Python -> JSON conversion
    expect_verl_error("""
import verl
v = []
for _ in range(100000):
    v = [v]
verl.load_config()['actor_rollout_ref.model.override_config'] = {'x': v}
""", "VerlTypeError", "nested deeper than 128")


def test_non_utf8_bytes_in_a_cpp_message_keep_the_error_class():  # bug 4: UnicodeDecodeError instead
    with pytest.raises(verl.DataError) as info:
        _C._raise_for_test("DataError", b"tensor '\xff\xfe' missing")
    assert str(info.value) == "tensor '\\xff\\xfe' missing"
    with pytest.raises(verl.CheckpointError, match=r"\\xc3"):
        _C._raise_for_test("CheckpointError", b"file '\xc3'")


def test_overrides_must_be_a_list_of_strings():
    with pytest.raises(verl.ConfigTypeError, match="not one string"):
        _C.Config.load("", "trainer.total_epochs=2")
    with pytest.raises(verl.ConfigTypeError, match="must be strings"):
        verl.load_config(overrides=[3])
