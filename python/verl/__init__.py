"""verl-cpp: verl (the HybridFlow RL framework for LLM post-training) with a C++ core.

``import verl`` gives verl's Python API on top of libverl: ``DataProto`` (``verl.protocol``), the
config tree (``verl.config``, and ``RLConfig`` with short names), ``PPOTrainer`` (training on the C++
trainer), ``SFTTrainer`` (the supervised warm start), ``DPOTrainer`` (preference optimisation), and the
``python -m verl.trainer.main_ppo`` / ``sft_trainer`` / ``dpo_trainer`` command lines.
"""

import os as _os

# OpenMP's idle threads (LibTorch's intra-op pool and MKL's GEMMs share one libgomp) spin 300,000 times at the barrier
# that ends each parallel region before they sleep. Beside one more busy process than there are cores, a thread then
# spins for a thread the OS has descheduled, and each of a forward's thousands of barriers waits for a scheduler time
# slice: a rollout on 2 cores fell from 478 to 20-37 tokens/s beside one niced busy process (issue 40). Spinning 3,000
# times (a few microseconds) catches back-to-back regions on a quiet machine and gives the core back at once when the
# machine is busy: beside a busy loop a rollout and a GRPO step took 2.5x and 2.2x their quiet time, against 4.2x and
# 3.8x with the default, and on the quiet machine 1-4 % more than the default (OMP_WAIT_POLICY=PASSIVE: 2.2x and 1.9x,
# but 10-13 % slower when quiet) -- benchmarks/contention/. libgomp reads this when it loads, with torch: so it is set
# here, before `import torch` -- for this process when verl is imported first (the CLIs, torchrun's ranks), and for
# every process it starts -- unless the caller chose a wait policy. (A script that imports torch first keeps
# libgomp's default in its own process: export GOMP_SPINCOUNT=3000 or OMP_WAIT_POLICY=PASSIVE there.)
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "3000"

import torch as _torch  # noqa: E402,F401  (loads LibTorch and its CUDA libraries before verl._C needs them)

from ._torch_version import check_torch as _check_torch

try:
    from ._build_info import torch_version as _built_torch_version
except ModuleNotFoundError:  # a source tree with verl._C linked in by hand, not an installed build
    _built_torch_version = None
if _built_torch_version is not None:
    _check_torch(_torch.__version__, _built_torch_version)  # before verl._C, which a wrong torch would crash

from . import errors
from ._C import __version__
from .config import Config, load_config, load_sft_config
from .errors import *  # noqa: F403  (every exception class, listed in errors.__all__)
from .protocol import DataProto, DataProtoItem
from .tokenizer import Tokenizer, load_tokenizer
from .trainer.rl_config import RLConfig
from .trainer.ppo_trainer import PPOTrainer
from .trainer.sft_trainer import SFTTrainer
from .trainer.dpo_trainer import DPOTrainer
from . import data, envs, models, rollout, trainer, utils  # reachable as verl.models, ... after `import verl`

#: Directory to put on CMAKE_PREFIX_PATH for ``find_package(verl)`` (the C++ SDK shipped in the wheel).
cmake_prefix_path = _os.path.join(_os.path.dirname(__file__), "lib", "cmake")

__all__ = [
    "__version__",
    "cmake_prefix_path",
    "Config",
    "load_config",
    "load_sft_config",
    "RLConfig",
    "PPOTrainer",
    "SFTTrainer",
    "DPOTrainer",
    "DataProto",
    "DataProtoItem",
    "Tokenizer",
    "load_tokenizer",
    "errors",
    *errors.__all__,
]
