"""Shared pytest setup: tests import the installed verl-cpp package (make test installs it into the venv)."""

import os

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def repo_root() -> str:
    return REPO_ROOT
