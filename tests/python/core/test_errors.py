"""C++ exceptions arrive in Python as the documented classes, message intact."""

import pytest

import verl
from verl import _C

CASES = [
    ("ConfigError", verl.ConfigError, ValueError),
    ("ConfigTypeError", verl.ConfigTypeError, TypeError),
    ("DataError", verl.DataError, ValueError),
    ("InvalidArgument", verl.InvalidArgumentError, ValueError),
    ("TypeMismatch", verl.VerlTypeError, TypeError),
    ("CheckpointError", verl.CheckpointError, RuntimeError),
    ("DistributedError", verl.DistributedError, RuntimeError),
    ("Error", verl.VerlError, RuntimeError),
]


@pytest.mark.parametrize("kind, cls, builtin", CASES)
def test_cpp_exception_maps_to_python_class(kind, cls, builtin):
    with pytest.raises(cls) as info:
        _C._raise_for_test(kind, f"boom from {kind}: key 'a.b'")
    assert isinstance(info.value, builtin)
    assert isinstance(info.value, verl.VerlError)
    assert str(info.value) == f"boom from {kind}: key 'a.b'"


def test_config_type_error_is_also_a_config_error():
    with pytest.raises(verl.ConfigError):
        _C._raise_for_test("ConfigTypeError", "x")


def test_real_cpp_config_error_reaches_python():
    with pytest.raises(verl.ConfigError, match="did you mean 'algorithm.gamma'"):
        verl.load_config(overrides=["algorithm.gama=0.9"])


def test_real_cpp_data_error_reaches_python():
    with pytest.raises(verl.DataError, match="only support equal chunk"):
        _C.row_plan.chunk_sizes(6, 5, False)
