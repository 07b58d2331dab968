"""``*.optim``: the optimizer and learning-rate schedule of a trained role (verl's ``verl.workers.config.optimizer``),
with the FSDP (torch optimizers) and Megatron-Core variants verl's YAML names."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar, Optional

from omegaconf import MISSING

from ...base_config import BaseConfig

__all__ = ["FSDPOptimizerConfig", "McoreOptimizerConfig", "OptimizerConfig"]


@dataclass
class OptimizerConfig(BaseConfig):
    """Learning rate, warmup (``lr_warmup_steps``; -1 or None: ``lr_warmup_steps_ratio`` of
    ``total_training_steps``, which the trainer sets), weight decay, Adam ``betas`` and gradient clipping
    (``clip_grad``; ``grad_clip`` is its deprecated name and overrides it, with a DeprecationWarning)."""

    _mutable_fields: ClassVar[set[str]] = {"clip_grad", "total_training_steps", "lr_warmup_steps"}

    lr: float = 1e-3
    lr_warmup_steps_ratio: float = 0.0
    total_training_steps: int = -1
    weight_decay: float = 0.01
    lr_warmup_steps: Optional[int] = -1
    betas: tuple[float, float] = (0.9, 0.999)
    clip_grad: float = 1.0
    grad_clip: Optional[float] = None

    def __post_init__(self) -> None:
        assert self.lr != MISSING
        if self.grad_clip is not None:
            warnings.warn("`grad_clip` is deprecated, use `clip_grad` instead.", DeprecationWarning, stacklevel=2)
            self.clip_grad = self.grad_clip


@dataclass
class FSDPOptimizerConfig(OptimizerConfig):
    """A torch optimizer by name (``optimizer`` from the module ``optimizer_impl``) with a ``constant`` or
    ``cosine`` schedule (``lr_scheduler_type``; cosine decays to ``min_lr_ratio`` x lr over ``num_cycles``);
    ``warmup_style`` is the schedule's deprecated name and overrides it. ``override_optimizer_config`` adds
    keyword arguments to the optimizer; ``zero_indexed_step`` counts scheduler steps from 0."""

    _mutable_fields: ClassVar[set[str]] = OptimizerConfig._mutable_fields | {"lr_scheduler_type"}

    optimizer: str = "AdamW"
    optimizer_impl: str = "torch.optim"
    min_lr_ratio: Optional[float] = None
    warmup_style: Optional[str] = None
    lr_scheduler_type: str = "constant"
    num_cycles: float = 0.5
    override_optimizer_config: Optional[dict] = None
    zero_indexed_step: bool = True

    def __post_init__(self) -> None:
        if self.warmup_style is not None:
            assert self.warmup_style in ["constant", "cosine"], f"warmup_style {self.warmup_style!r}"
            warnings.warn("`warmup_style` is deprecated, use `lr_scheduler_type` instead.", DeprecationWarning,
                          stacklevel=2)
            self.lr_scheduler_type = self.warmup_style
        assert self.lr_scheduler_type in ["constant", "cosine"], f"lr_scheduler_type {self.lr_scheduler_type!r}"
        super().__post_init__()


@dataclass
class McoreOptimizerConfig(OptimizerConfig):
    """Megatron-Core's optimizer (``adam``, ``sgd`` or ``muon``) and its parameter scheduler: warmup from
    ``lr_warmup_init``, decay (``lr_decay_style`` over ``lr_decay_steps`` to ``min_lr``), weight-decay increments,
    the precision-aware optimizer's state dtypes (fp32 or bf16), and Muon's settings."""

    optimizer: str = "adam"
    lr_warmup_init: float = 0.0
    lr_decay_steps: Optional[int] = None
    lr_decay_style: str = "linear"
    min_lr: float = 0.0
    weight_decay_incr_style: str = "constant"
    lr_wsd_decay_style: str = "exponential"
    lr_wsd_decay_steps: Optional[int] = None
    use_checkpoint_opt_param_scheduler: bool = False
    use_precision_aware_optimizer: bool = False
    main_grads_dtype: str = "fp32"
    exp_avg_dtype: str = "fp32"
    exp_avg_sq_dtype: str = "fp32"
    use_layer_wise_distributed_optimizer: bool = False
    use_layer_wise_param_layout: Optional[bool] = None
    muon_momentum: float = 0.95
    muon_nesterov: bool = False
    muon_split_qkv: bool = True
    muon_scale_mode: str = "spectral"
    muon_coefficient_type: str = "quintic"
    muon_num_ns_steps: int = 5
    muon_tp_mode: str = "blockwise"
    muon_fp32_matmul_prec: str = "medium"
    muon_extra_scale_factor: float = 1.0
    muon_scalar_optimizer: str = "adam"
    muon_match_adamw_update_rms: bool = False
    override_optimizer_config: Optional[dict] = None

    def __post_init__(self) -> None:
        allowed = {"fp32", "float32", "32", "bf16", "bfloat16"}
        for name in ("main_grads_dtype", "exp_avg_dtype", "exp_avg_sq_dtype"):
            value = getattr(self, name)
            assert str(value) in allowed, f"`{name}` must be one of {sorted(allowed)}, got {value!r}"
        super().__post_init__()
