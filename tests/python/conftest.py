"""Shared pytest setup: tests import the installed verl-cpp package (make test installs it into the venv)."""

import os

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def repo_root() -> str:
    return REPO_ROOT


@pytest.fixture(autouse=True)
def _torch_thread_count_is_kept():
    """A test that sets torch's thread count (a benchmark side run in-process does) must not change the tests after
    it: float sums, and so sampled tokens and learning curves, depend on the thread count."""
    import torch

    threads = torch.get_num_threads()
    yield
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
