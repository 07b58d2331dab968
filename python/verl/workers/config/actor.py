"""``actor_rollout_ref.actor``: the policy's training config (verl's ``verl.workers.config.actor``) -- the PPO
mini/micro-batching, the policy loss and its clipping, entropy and KL terms, the optimizer, checkpointing and
profiling -- with the FSDP and Megatron-Core variants verl's YAML names (``dp_actor.yaml``, ``megatron_actor.yaml``).

Built and validated as verl does: a micro-batch size is needed unless ``use_dynamic_bsz`` (and only one of the
deprecated global ``ppo_micro_batch_size`` and ``ppo_micro_batch_size_per_gpu``), the loss aggregation must be one
verl knows; ``validate`` checks them against the run's devices and batch size. Fields are frozen after
construction except the batch sizes the trainer normalises per device."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from omegaconf import MISSING

from ...base_config import BaseConfig
from ...trainer.config import CheckpointConfig, RolloutCorrectionConfig
from ...utils.profiler.config import ProfilerConfig
from .checkpoint import McoreCheckpointConfig
from .engine import EngineRouterReplayConfig, FSDPEngineConfig, McoreEngineConfig, QATEngineConfig
from .optimizer import FSDPOptimizerConfig, McoreOptimizerConfig, OptimizerConfig

__all__ = ["ActorConfig", "FSDPActorConfig", "McoreActorConfig", "PolicyLossConfig", "QATConfig",
           "RouterReplayConfig"]

LOSS_AGG_MODES = ["token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]


@dataclass
class RouterReplayConfig(EngineRouterReplayConfig):
    """``actor.router_replay``: the engine's MoE router replay settings under verl's actor-side name."""


@dataclass
class QATConfig(QATEngineConfig):
    """``actor.qat``: the engine's quantization-aware training settings under verl's actor-side name (verl's
    ``verl.utils.qat.QATConfig``)."""


@dataclass
class PolicyLossConfig(BaseConfig):
    """``actor.policy_loss``: the registered policy loss (``loss_mode``: vanilla, gspo, sapo, gpg, clip_cov,
    kl_cov, geo_mean, dro, cispo, ...) and its parameters: clip-cov's clipped-token ratio and bounds, kl-cov's
    ratio, the KL coefficient, DRO's ``dro_beta``; and the rollout correction the loss sees."""

    loss_mode: str = "vanilla"
    clip_cov_ratio: float = 0.0002
    clip_cov_lb: float = 1.0
    clip_cov_ub: float = 5.0
    kl_cov_ratio: float = 0.0002
    ppo_kl_coef: float = 0.1
    dro_beta: Optional[float] = None
    rollout_correction: RolloutCorrectionConfig = field(default_factory=RolloutCorrectionConfig)


@dataclass
class ActorConfig(BaseConfig):
    """The actor's training settings shared by every strategy.

    Batching: ``ppo_mini_batch_size`` prompts per optimizer step (times ``rollout_n`` samples), micro-batches of
    ``ppo_micro_batch_size_per_gpu`` (or a token budget of ``ppo_max_token_len_per_gpu`` with
    ``use_dynamic_bsz``), ``ppo_epochs`` passes, ``shuffle`` with ``data_loader_seed``. Loss: PPO clipping
    (``clip_ratio``, asymmetric ``clip_ratio_low`` / ``clip_ratio_high``, dual-clip ``clip_ratio_c``), SAPO's
    ``tau_pos`` / ``tau_neg``, ``loss_agg_mode`` (``loss_scale_factor`` fixes seq-mean-token-sum-norm's divisor),
    ``entropy_coeff``, the KL loss (``use_kl_loss``, ``kl_loss_coef``, ``kl_loss_type``)."""

    _mutable_fields: ClassVar[set[str]] = BaseConfig._mutable_fields | {
        "ppo_mini_batch_size", "ppo_micro_batch_size", "ppo_micro_batch_size_per_gpu",
        "ppo_infer_micro_batch_size_per_gpu", "engine", "model_config"}

    strategy: str = MISSING
    ppo_mini_batch_size: int = 256
    ppo_micro_batch_size: Optional[int] = None  # deprecated: global, divided by the device count
    ppo_micro_batch_size_per_gpu: Optional[int] = None
    ppo_infer_micro_batch_size_per_gpu: Optional[int] = None
    use_dynamic_bsz: bool = False
    ppo_max_token_len_per_gpu: int = 16384
    ppo_infer_max_token_len_per_gpu: int = 16384
    clip_ratio: float = 0.2
    clip_ratio_low: float = 0.2
    clip_ratio_high: float = 0.2
    freeze_vision_tower: bool = False
    policy_loss: PolicyLossConfig = field(default_factory=PolicyLossConfig)
    clip_ratio_c: float = 3.0
    loss_agg_mode: str = "token-mean"
    loss_scale_factor: Optional[int] = None
    entropy_coeff: float = 0
    tau_pos: float = 1.0
    tau_neg: float = 1.05
    calculate_entropy: bool = False
    calculate_sum_pi_squared: bool = False
    use_kl_loss: bool = False
    use_prefix_grouper: bool = False
    use_torch_compile: bool = True
    kl_loss_coef: float = 0.001
    kl_loss_type: str = "low_var_kl"
    ppo_epochs: int = 1
    shuffle: bool = False
    data_loader_seed: int = 42
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    optim: OptimizerConfig = field(default_factory=OptimizerConfig)
    use_fused_kernels: bool = False
    profiler: ProfilerConfig = field(default_factory=ProfilerConfig)
    engine: BaseConfig = field(default_factory=BaseConfig)  # the strategy's engine section, set by subclasses
    rollout_n: int = MISSING  # samples per prompt, from the rollout config
    model_config: Any = field(default_factory=BaseConfig)  # the model's HF config, set by the worker
    global_batch_info: dict = field(default_factory=dict)
    qat: QATConfig = field(default_factory=QATConfig)
    # verl-cpp's, not verl's (our ppo_trainer.yaml documents it): skip the old-log-prob pass when the update's own
    # forward gives the same numbers bit for bit; False always runs it.
    old_log_prob_from_update: bool = True

    def __post_init__(self) -> None:
        assert self.strategy != MISSING
        assert self.rollout_n != MISSING
        if not self.use_dynamic_bsz:
            if self.ppo_micro_batch_size is not None and self.ppo_micro_batch_size_per_gpu is not None:
                raise ValueError(
                    "[actor] You have set both 'actor.ppo_micro_batch_size' AND 'actor.ppo_micro_batch_size_per_gpu'. "
                    "Please remove 'actor.ppo_micro_batch_size' because only '*_ppo_micro_batch_size_per_gpu' is "
                    "supported (the former is deprecated).")
            assert not (self.ppo_micro_batch_size is None and self.ppo_micro_batch_size_per_gpu is None), (
                "[actor] Please set at least one of 'actor.ppo_micro_batch_size' or "
                "'actor.ppo_micro_batch_size_per_gpu' if use_dynamic_bsz is not enabled.")
        if self.loss_agg_mode not in LOSS_AGG_MODES:
            raise ValueError(f"Invalid loss_agg_mode: {self.loss_agg_mode}")

    def validate(self, n_gpus: int, train_batch_size: int, model_config: Optional[dict] = None) -> None:
        """ValueError when the batch does not fill a mini-batch, or (with the deprecated global micro-batch size)
        the mini-batch is not a whole number of micro-batches or a micro-batch cannot cover every device."""
        if self.use_dynamic_bsz:
            return
        if train_batch_size < self.ppo_mini_batch_size:
            raise ValueError(f"train_batch_size ({train_batch_size}) must be >= "
                             f"actor.ppo_mini_batch_size ({self.ppo_mini_batch_size})")
        sp_size = getattr(self, "ulysses_sequence_parallel_size", 1)
        if self.ppo_micro_batch_size is not None:
            if self.ppo_mini_batch_size % self.ppo_micro_batch_size != 0:
                raise ValueError(f"ppo_mini_batch_size ({self.ppo_mini_batch_size}) must be divisible by "
                                 f"ppo_micro_batch_size ({self.ppo_micro_batch_size})")
            if self.ppo_micro_batch_size * sp_size < n_gpus:
                raise ValueError(f"ppo_micro_batch_size ({self.ppo_micro_batch_size}) * "
                                 f"ulysses_sequence_parallel_size ({sp_size}) must be >= n_gpus ({n_gpus})")


@dataclass
class McoreActorConfig(ActorConfig):
    """The Megatron-Core actor: its engine section is ``megatron``, its checkpoint adds mbridge options."""

    strategy: str = "megatron"
    optim: McoreOptimizerConfig = field(default_factory=McoreOptimizerConfig)  # what megatron_actor.yaml gives it
    entropy_from_logits_with_chunking: bool = False
    entropy_from_logits_chunk_size: int = 2048
    megatron: McoreEngineConfig = field(default_factory=McoreEngineConfig)
    profile: dict[str, Any] = field(default_factory=dict)
    use_rollout_log_probs: bool = False
    checkpoint: McoreCheckpointConfig = field(default_factory=McoreCheckpointConfig)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.engine = self.megatron


@dataclass
class FSDPActorConfig(ActorConfig):
    """The FSDP actor (verl-cpp's): its engine section is ``fsdp_config`` (which takes the actor's ``strategy``,
    and its deprecated ``ulysses_sequence_parallel_size`` when > 1), gradient clipping ``grad_clip``, chunked
    and checkpointed entropy, padding removal, padding packed micro-batches to a bucket."""

    strategy: str = "fsdp"
    optim: FSDPOptimizerConfig = field(default_factory=FSDPOptimizerConfig)  # what dp_actor.yaml gives it
    grad_clip: float = 1.0
    ulysses_sequence_parallel_size: int = 1
    entropy_from_logits_with_chunking: bool = False
    entropy_from_logits_chunk_size: int = 2048
    entropy_checkpointing: bool = False
    pad_to_length: bool = False
    fsdp_config: FSDPEngineConfig = field(default_factory=FSDPEngineConfig)
    use_remove_padding: bool = False
    use_rollout_log_probs: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self.engine = self.fsdp_config
        object.__setattr__(self.engine, "strategy", self.strategy)
        if self.ulysses_sequence_parallel_size > 1:
            self.fsdp_config.ulysses_sequence_parallel_size = self.ulysses_sequence_parallel_size

    def validate(self, n_gpus: int, train_batch_size: int, model_config: Optional[dict] = None) -> None:
        """``ActorConfig.validate``, and sequence parallelism needs ``use_remove_padding`` in ``model_config``."""
        super().validate(n_gpus, train_batch_size, model_config)
        if self.ulysses_sequence_parallel_size > 1 and model_config and not model_config.get("use_remove_padding",
                                                                                               False):
            raise ValueError("When using sequence parallelism for actor/ref policy, you must enable "
                             "`use_remove_padding`.")
