"""The torch check ``import verl`` makes before loading its compiled core.

verl._C and libverl link LibTorch's C++ API, which has no stable ABI across releases: loaded into another torch
they fail with an undefined symbol or crash. So the release must be the one the build used (written at build time
into ``verl/_build_info.py``); the local variant (``+cpu``, ``+cu130``) may differ, as it does between the CPU and
CUDA wheels of one release.
"""

from __future__ import annotations


def release(version: str) -> str:
    """``"2.14.1+cu130"`` -> ``"2.14.1"``."""
    return version.split("+", 1)[0]


def check_torch(installed: str, built: str) -> None:
    """ImportError naming both versions when ``installed`` torch is another release than ``built``."""
    if release(installed) != release(built):
        raise ImportError(
            f"verl-cpp was built against torch {built}, but torch {installed} is installed. Its compiled core needs "
            f"that exact release: `pip install torch=={release(built)}`, or build verl-cpp against your torch "
            f"(`pip install --no-binary verl-cpp verl-cpp`, or `make build` in a checkout).")
