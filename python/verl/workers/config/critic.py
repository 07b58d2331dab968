"""``critic``: the value model's training config (verl's ``verl.workers.config.critic``): PPO batching, value
clipping (``cliprange_value``), loss aggregation, optimizer, checkpointing, profiling, with FSDP and Megatron-Core
variants (``dp_critic.yaml``, ``megatron_critic.yaml``). Checked as verl checks it: one of the micro-batch sizes
unless ``use_dynamic_bsz``, and a deprecated global micro-batch size must divide the mini-batch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from omegaconf import MISSING

from ...base_config import BaseConfig
from ...trainer.config import CheckpointConfig
from ...utils.profiler.config import ProfilerConfig
from .checkpoint import McoreCheckpointConfig
from .engine import FSDPEngineConfig, McoreEngineConfig
from .optimizer import FSDPOptimizerConfig, McoreOptimizerConfig, OptimizerConfig

__all__ = ["CriticConfig", "FSDPCriticConfig", "McoreCriticConfig"]


@dataclass
class CriticConfig(BaseConfig):
    """The critic's settings shared by every strategy: ``enable`` (None: decided by the advantage estimator),
    mini-batches of ``ppo_mini_batch_size`` prompts (times ``rollout_n``), micro-batches per device or a token
    budget, ``ppo_epochs``, ``shuffle`` with ``data_loader_seed``, ``cliprange_value``, ``loss_agg_mode``."""

    _mutable_fields: ClassVar[set[str]] = BaseConfig._mutable_fields | {
        "ppo_micro_batch_size_per_gpu", "ppo_mini_batch_size", "ppo_micro_batch_size", "engine", "model"}

    strategy: str = MISSING
    ppo_micro_batch_size_per_gpu: Optional[int] = None
    enable: Optional[bool] = None
    rollout_n: int = 1
    ppo_mini_batch_size: int = 1
    use_dynamic_bsz: bool = False
    ppo_max_token_len_per_gpu: int = 32768
    forward_max_token_len_per_gpu: int = 32768
    ppo_infer_micro_batch_size_per_gpu: Optional[int] = None
    ppo_infer_max_token_len_per_gpu: int = 32768
    ppo_epochs: int = 1
    data_loader_seed: int = 42
    shuffle: bool = True
    cliprange_value: float = 0.5
    loss_agg_mode: str = "token-mean"
    loss_scale_factor: Optional[int] = None
    ppo_micro_batch_size: Optional[int] = None  # deprecated: global, divided by the device count
    engine: BaseConfig = field(default_factory=BaseConfig)  # the strategy's engine section, set by subclasses
    optim: OptimizerConfig = field(default_factory=OptimizerConfig)
    model: Any = None  # the critic model's config
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    profiler: ProfilerConfig = field(default_factory=ProfilerConfig)

    def __post_init__(self) -> None:
        assert self.strategy != MISSING
        if not self.use_dynamic_bsz:
            self._check_mutually_exclusive(self.ppo_micro_batch_size, self.ppo_micro_batch_size_per_gpu, "critic")
            if self.ppo_micro_batch_size is not None and self.ppo_mini_batch_size % self.ppo_micro_batch_size != 0:
                raise ValueError(f"[critic] ppo_mini_batch_size ({self.ppo_mini_batch_size}) must be divisible by "
                                 f"ppo_micro_batch_size ({self.ppo_micro_batch_size})")

    def validate(self, n_gpus: int, train_batch_size: int) -> None:
        """ValueError when the batch does not fill a mini-batch (fixed micro-batches only)."""
        if not self.use_dynamic_bsz and train_batch_size < self.ppo_mini_batch_size:
            raise ValueError(f"train_batch_size ({train_batch_size}) must be >= "
                             f"critic.ppo_mini_batch_size ({self.ppo_mini_batch_size})")

    @staticmethod
    def _check_mutually_exclusive(mbs: Optional[int], mbs_per_gpu: Optional[int], name: str) -> None:
        param, param_per_gpu = "micro_batch_size", "micro_batch_size_per_gpu"
        if mbs is None and mbs_per_gpu is None:
            raise ValueError(f"[{name}] Please set at least one of '{name}.{param}' or '{name}.{param_per_gpu}'.")
        if mbs is not None and mbs_per_gpu is not None:
            raise ValueError(f"[{name}] You have set both '{name}.{param}' AND '{name}.{param_per_gpu}'. Please "
                             f"remove '{name}.{param}' because only '*_{param_per_gpu}' is supported (the former is "
                             "deprecated).")


@dataclass
class McoreCriticConfig(CriticConfig):
    """The Megatron-Core critic: engine section ``megatron``, the NCCL timeout, mbridge checkpoint options."""

    strategy: str = "megatron"
    optim: McoreOptimizerConfig = field(default_factory=McoreOptimizerConfig)  # what megatron_critic.yaml gives it
    nccl_timeout: int = 600
    megatron: McoreEngineConfig = field(default_factory=McoreEngineConfig)
    checkpoint: McoreCheckpointConfig = field(default_factory=McoreCheckpointConfig)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.engine = self.megatron


@dataclass
class FSDPCriticConfig(CriticConfig):
    """The FSDP critic (verl-cpp's): engine section ``fsdp`` (which takes the critic's ``strategy``), forward-only
    micro-batch sizes for computing values, Ulysses sequence parallelism, gradient clipping ``grad_clip``."""

    _mutable_fields: ClassVar[set[str]] = CriticConfig._mutable_fields | {
        "forward_micro_batch_size", "forward_micro_batch_size_per_gpu"}

    strategy: str = "fsdp"
    optim: FSDPOptimizerConfig = field(default_factory=FSDPOptimizerConfig)  # what dp_critic.yaml gives it
    fsdp: FSDPEngineConfig = field(default_factory=FSDPEngineConfig)
    forward_micro_batch_size: int = 1
    forward_micro_batch_size_per_gpu: int = 1
    ulysses_sequence_parallel_size: int = 1
    grad_clip: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self.engine = self.fsdp
        object.__setattr__(self.engine, "strategy", self.strategy)

    def validate(self, n_gpus: int, train_batch_size: int) -> None:
        """``CriticConfig.validate``, and a deprecated global micro-batch (times the sequence-parallel size) must
        cover every device."""
        super().validate(n_gpus, train_batch_size)
        sp_size = self.ulysses_sequence_parallel_size
        if not self.use_dynamic_bsz and self.ppo_micro_batch_size is not None and \
                self.ppo_micro_batch_size * sp_size < n_gpus:
            raise ValueError(f"critic.ppo_micro_batch_size ({self.ppo_micro_batch_size}) * "
                             f"ulysses_sequence_parallel_size ({sp_size}) must be >= n_gpus ({n_gpus})")
