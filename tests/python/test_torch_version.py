"""``import verl`` checks the torch release it was built against before loading verl._C (issue 22): another
release gives an ImportError naming both versions, not an undefined symbol or a crash."""

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from isolated import run_isolated  # noqa: E402

from verl import _build_info  # noqa: E402
from verl._torch_version import check_torch, release  # noqa: E402


def test_the_build_recorded_the_torch_it_was_compiled_against():
    assert release(torch.__version__) == _build_info.torch_version


def test_local_variants_of_one_release_are_accepted():
    check_torch("2.14.1+cu130", "2.14.1")
    check_torch("2.14.1+cpu", "2.14.1")
    check_torch("2.14.1", "2.14.1")


def test_another_release_is_an_import_error_naming_both():
    with pytest.raises(ImportError, match=r"built against torch 2\.14\.1, but torch 2\.11\.0\+cu128 is installed"):
        check_torch("2.11.0+cu128", "2.14.1")


def test_import_verl_with_a_mismatched_torch_fails_cleanly():
    # The mismatch is faked by changing torch.__version__ before `import verl`, in a child process. 2.0.0 is a
    # release nothing is built against (verl-cpp needs >= 2.10), also in `make test-compat COMPAT_TORCH=2.11.0`.
    outcome = run_isolated("import torch\ntorch.__version__ = '2.0.0+cu118'\nimport verl\n")
    assert outcome.exception == "builtins.ImportError", outcome.describe()
    assert "torch 2.0.0+cu118 is installed" in outcome.message, outcome.describe()
    assert f"built against torch {_build_info.torch_version}" in outcome.message, outcome.describe()
