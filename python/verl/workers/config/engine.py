"""Training-engine configs (verl's ``verl.workers.config.engine``): what every engine shares (offloading, dtype,
micro-batching, seed) and the FSDP and Megatron-Core specifics. verl-cpp's C++ engine reads the FSDP section
(``fsdp_config`` / ``fsdp``) of our ppo_trainer.yaml; the Megatron one is here so verl's YAML builds."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from ...base_config import BaseConfig

__all__ = ["EngineConfig", "EngineRouterReplayConfig", "FSDPEngineConfig", "McoreEngineConfig", "QATEngineConfig"]


@dataclass
class EngineRouterReplayConfig(BaseConfig):
    """MoE router replay: ``disabled``, ``R2`` (replay the training routes) or ``R3`` (replay the rollout's),
    with the files routes are recorded to and replayed from."""

    mode: str = "disabled"
    record_file: Optional[str] = None
    replay_file: Optional[str] = None

    def __post_init__(self) -> None:
        modes = ["disabled", "R2", "R3"]
        if self.mode not in modes:
            raise ValueError(f"Invalid router_replay mode: {self.mode}. Must be one of {modes}")


@dataclass
class EngineConfig(BaseConfig):
    """What every engine has: parameter / optimizer offloading, forward-only (a reference policy), the
    ``strategy`` name, the compute ``dtype``, dynamic (token-budget) or fixed micro-batches for training and for
    inference, fused kernels, padding removal, the seed and full determinism."""

    _mutable_fields: ClassVar[set[str]] = BaseConfig._mutable_fields | {
        "use_dynamic_bsz", "max_token_len_per_gpu", "micro_batch_size_per_gpu", "infer_max_token_len_per_gpu",
        "infer_micro_batch_size_per_gpu", "use_fused_kernels", "use_remove_padding", "forward_only", "param_offload"}

    param_offload: bool = False
    optimizer_offload: bool = False
    forward_only: bool = False
    strategy: Optional[str] = None
    dtype: str = "bfloat16"
    use_dynamic_bsz: bool = True
    max_token_len_per_gpu: Optional[int] = None
    micro_batch_size_per_gpu: Optional[int] = None
    infer_max_token_len_per_gpu: Optional[int] = None
    infer_micro_batch_size_per_gpu: Optional[int] = None
    use_fused_kernels: bool = False
    use_remove_padding: bool = True
    seed: int = 42
    full_determinism: bool = False
    router_replay: EngineRouterReplayConfig = field(default_factory=EngineRouterReplayConfig)


@dataclass
class QATEngineConfig(BaseConfig):
    """Quantization-aware training inside an engine: ``w4a16`` or ``w4a4`` with blockwise ``group_size``, the
    modules left unquantized, the activation observer (W4A4) and a quantization config for the rollout."""

    enable: bool = False
    mode: str = "w4a16"
    group_size: int = 16
    ignore_patterns: list[str] = field(default_factory=lambda: ["lm_head", "embed_tokens", "re:.*mlp.gate$"])
    activation_observer: str = "static_minmax"
    quantization_config_path: Optional[str] = None


@dataclass
class McoreEngineConfig(EngineConfig):
    """Megatron-Core: tensor / expert / pipeline / context parallel sizes, sequence parallelism (turned off, with
    a warning, when the tensor-parallel size is 1), the distributed optimizer, padding, distributed checkpoints,
    config overrides and mbridge. Its dtype must be bfloat16 or float16."""

    _mutable_fields: ClassVar[set[str]] = EngineConfig._mutable_fields | {"sequence_parallel"}

    tensor_model_parallel_size: int = 1
    expert_model_parallel_size: int = 1
    expert_tensor_parallel_size: Optional[int] = None
    pipeline_model_parallel_size: int = 1
    virtual_pipeline_model_parallel_size: Optional[int] = None
    context_parallel_size: int = 1
    dynamic_context_parallel: bool = False
    entropy_from_logits_with_chunking: bool = False
    entropy_from_logits_chunk_size: int = 2048
    max_seqlen_per_dp_cp_rank: Optional[int] = None
    sequence_parallel: bool = True
    use_distributed_optimizer: bool = True
    pad_bshd_to_minibatch_max: bool = True
    pad_to_length: bool = False
    pad_to_length_bucket: int = 512
    use_dist_checkpointing: bool = False
    dist_checkpointing_path: Optional[str] = None
    dist_checkpointing_prefix: str = ""
    dist_ckpt_optim_fully_reshardable: bool = False
    distrib_optim_fully_reshardable_mem_efficient: bool = False
    override_ddp_config: dict[str, Any] = field(default_factory=dict)
    override_transformer_config: dict[str, Any] = field(default_factory=dict)
    override_mcore_model_config: dict[str, Any] = field(default_factory=dict)
    use_mbridge: bool = True
    vanilla_mbridge: bool = False
    use_megatron_fsdp: bool = False
    strategy: str = "megatron"
    qat: QATEngineConfig = field(default_factory=QATEngineConfig)

    def __post_init__(self) -> None:
        assert self.strategy == "megatron"
        assert self.dtype in ["bfloat16", "float16"], f"dtype {self.dtype} not supported"
        if self.vanilla_mbridge:
            warnings.warn("The legacy mbridge backend selected by `vanilla_mbridge=True` is deprecated; use "
                          "Megatron-Bridge (`vanilla_mbridge=False`).", FutureWarning, stacklevel=2)
        if self.dynamic_context_parallel and (not isinstance(self.max_seqlen_per_dp_cp_rank, int)
                                              or isinstance(self.max_seqlen_per_dp_cp_rank, bool)
                                              or self.max_seqlen_per_dp_cp_rank <= 0):
            raise ValueError("max_seqlen_per_dp_cp_rank must be a positive integer when dynamic_context_parallel "
                             "is enabled")
        if self.tensor_model_parallel_size == 1:
            warnings.warn("set sequence parallel to false as TP size is 1", stacklevel=2)
            self.sequence_parallel = False


@dataclass
class FSDPEngineConfig(EngineConfig):
    """FSDP / FSDP2: the wrap policy, CPU offload, resharding after forward, the FSDP group size (-1: every
    device), the dtype the model is created in (``model_dtype``) and the mixed-precision ``dtype``, Ulysses
    sequence parallelism, chunked entropy, torch.compile, gradient-sync deferral over micro-batches, padding packed
    micro-batches to ``pad_to_length_bucket`` tokens, QAT. ``strategy`` is fsdp, fsdp2 or fsdp_turbo."""

    _mutable_fields: ClassVar[set[str]] = EngineConfig._mutable_fields | {"ulysses_sequence_parallel_size"}

    wrap_policy: dict[str, Any] = field(default_factory=dict)
    offload_policy: bool = False
    reshard_after_forward: bool = True
    fsdp_size: int = -1
    forward_prefetch: bool = False
    model_dtype: str = "fp32"
    use_orig_params: bool = False
    mixed_precision: Optional[dict[str, Any]] = None
    ulysses_sequence_parallel_size: int = 1
    entropy_from_logits_with_chunking: bool = False
    entropy_from_logits_chunk_size: int = 2048
    use_torch_compile: bool = True
    entropy_checkpointing: bool = False
    use_no_sync_for_gradient_accumulation: bool = True
    strategy: str = "fsdp"
    pad_to_length: bool = False
    pad_to_length_bucket: int = 1024
    qat: QATEngineConfig = field(default_factory=QATEngineConfig)
    turbo_config: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        assert self.strategy in ["fsdp", "fsdp2", "fsdp_turbo"], f"strategy {self.strategy} not supported"
