"""The ``algorithm`` section of the config tree as dataclasses (verl's ``verl.trainer.config.algorithm``): the same
fields and defaults as verl 0.9.1's, so code that builds or reads them runs unchanged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

from ...base_config import BaseConfig

__all__ = ["AlgoConfig", "CostFunctionConfig", "FilterGroupsConfig", "KLControlConfig", "RolloutCorrectionConfig",
           "SafeRLHFConfig"]


@dataclass
class KLControlConfig(BaseConfig):
    """``algorithm.kl_ctrl``: ``type`` fixed or adaptive, the initial ``kl_coef``, and the adaptive controller's
    ``horizon`` and ``target_kl``."""

    type: str = "fixed"
    kl_coef: float = 0.001
    horizon: int = 10000
    target_kl: float = 0.1


@dataclass
class FilterGroupsConfig(BaseConfig):
    """``algorithm.filter_groups`` (DAPO's dynamic sampling): drop prompt groups whose ``metric`` is the same for
    every sample; at most ``max_num_gen_batches`` generation batches per step (non-positive: no limit)."""

    enable: bool = False
    metric: Optional[str] = None
    max_num_gen_batches: int = 0
    max_inflight_gen_batches: int = 1


@dataclass
class RolloutCorrectionConfig(BaseConfig):
    """``algorithm.rollout_correction``: importance-sampling weights (``rollout_is``: token / sequence / None) and
    rejection sampling (``rollout_rs``) between the rollout and the training policy."""

    rollout_is: Optional[str] = "sequence"
    rollout_is_threshold: Union[str, float] = 2.0
    rollout_is_batch_normalize: bool = False
    rollout_rs: Optional[str] = None
    rollout_rs_threshold: Optional[Union[str, float]] = None
    bypass_mode: bool = False
    loss_type: str = "ppo_clip"

    # verl 0.9.1's named presets. "Decoupled" keeps three policies (rollout, old, current: IS weights correct the
    # rollout-to-old gap); "bypass" reuses the rollout log-probs as the old ones (two policies) with loss_type
    # ppo_clip (the ratio does the correction) or reinforce (explicit IS weights). TIS truncates weights at the
    # threshold; IcePop ("lower_upper") zeroes token weights outside the band; Geo-RS rejects sequences whose
    # geometric-mean ratio (seq_mean_k1) leaves the band; K3-RS those whose mean K3 divergence exceeds the bound.

    @classmethod
    def decoupled_token_is(cls, threshold: float = 2.0) -> "RolloutCorrectionConfig":
        """Token-level truncated IS (Token-TIS)."""
        return cls(rollout_is="token", rollout_is_threshold=threshold, rollout_rs=None)

    @classmethod
    def decoupled_seq_is(cls, threshold: float = 2.0) -> "RolloutCorrectionConfig":
        """Sequence-level truncated IS (Seq-TIS)."""
        return cls(rollout_is="sequence", rollout_is_threshold=threshold, rollout_rs=None)

    @classmethod
    def decoupled_token_icepop(cls, threshold: float = 5.0, threshold_lower: float = 0.5) -> "RolloutCorrectionConfig":
        """Token-level IcePop: weights outside [threshold_lower, threshold] become 0, the response mask is kept."""
        return cls(rollout_is="token", rollout_is_threshold=f"{threshold_lower}_{threshold}", rollout_rs=None)

    @classmethod
    def decoupled_seq_is_rs(cls, is_threshold: float = 2.0,
                            rs_threshold: Optional[Union[str, float]] = "0.5_2.0") -> "RolloutCorrectionConfig":
        """Seq-TIS plus rejection of sequences whose summed log-ratio (seq_sum_k1) leaves the band (Seq-MIS)."""
        return cls(rollout_is="sequence", rollout_is_threshold=is_threshold, rollout_rs="seq_sum_k1",
                   rollout_rs_threshold=rs_threshold)

    @classmethod
    def decoupled_geo_rs(cls, rs_threshold: Optional[Union[str, float]] = "0.999_1.001") -> "RolloutCorrectionConfig":
        """Geo-RS alone, no IS weights."""
        return cls(rollout_is=None, rollout_rs="seq_mean_k1", rollout_rs_threshold=rs_threshold)

    @classmethod
    def decoupled_geo_rs_seq_tis(cls, is_threshold: float = 2.0,
                                 rs_threshold: Optional[Union[str, float]] = "0.999_1.001"
                                 ) -> "RolloutCorrectionConfig":
        """Geo-RS plus Seq-TIS."""
        return cls(rollout_is="sequence", rollout_is_threshold=is_threshold, rollout_rs="seq_mean_k1",
                   rollout_rs_threshold=rs_threshold)

    @classmethod
    def decoupled_geo_rs_token_tis(cls, is_threshold: float = 2.0,
                                   rs_threshold: Optional[Union[str, float]] = "0.999_1.001"
                                   ) -> "RolloutCorrectionConfig":
        """Geo-RS plus Token-TIS."""
        return cls(rollout_is="token", rollout_is_threshold=is_threshold, rollout_rs="seq_mean_k1",
                   rollout_rs_threshold=rs_threshold)

    @classmethod
    def decoupled_k3_rs(cls, rs_threshold: float = 0.01) -> "RolloutCorrectionConfig":
        """K3-RS alone (sequence mean of exp(log r) - 1 - log r at most rs_threshold), no IS weights."""
        return cls(rollout_is=None, rollout_rs="seq_mean_k3", rollout_rs_threshold=rs_threshold)

    @classmethod
    def decoupled_k3_rs_seq_tis(cls, is_threshold: float = 2.0, rs_threshold: float = 0.01
                                ) -> "RolloutCorrectionConfig":
        """K3-RS plus Seq-TIS."""
        return cls(rollout_is="sequence", rollout_is_threshold=is_threshold, rollout_rs="seq_mean_k3",
                   rollout_rs_threshold=rs_threshold)

    @classmethod
    def decoupled_k3_rs_token_tis(cls, is_threshold: float = 2.0, rs_threshold: float = 0.01
                                  ) -> "RolloutCorrectionConfig":
        """K3-RS plus Token-TIS."""
        return cls(rollout_is="token", rollout_is_threshold=is_threshold, rollout_rs="seq_mean_k3",
                   rollout_rs_threshold=rs_threshold)

    @classmethod
    def bypass_ppo_clip(cls) -> "RolloutCorrectionConfig":
        """Bypass mode, PPO-clip against the rollout policy, no IS weights and no rejection."""
        return cls(rollout_is=None, rollout_rs=None, bypass_mode=True, loss_type="ppo_clip")

    @classmethod
    def bypass_ppo_clip_geo_rs(cls, rs_threshold: Optional[Union[str, float]] = "0.999_1.001"
                               ) -> "RolloutCorrectionConfig":
        """Bypass mode, PPO-clip plus Geo-RS."""
        return cls(rollout_is=None, rollout_rs="seq_mean_k1", rollout_rs_threshold=rs_threshold, bypass_mode=True,
                   loss_type="ppo_clip")

    @classmethod
    def bypass_ppo_clip_k3_rs(cls, rs_threshold: float = 0.01) -> "RolloutCorrectionConfig":
        """Bypass mode, PPO-clip plus K3-RS."""
        return cls(rollout_is=None, rollout_rs="seq_mean_k3", rollout_rs_threshold=rs_threshold, bypass_mode=True,
                   loss_type="ppo_clip")

    @classmethod
    def bypass_pg_is(cls, threshold: float = 2.0) -> "RolloutCorrectionConfig":
        """Bypass mode, REINFORCE with Seq-TIS weights."""
        return cls(rollout_is="sequence", rollout_is_threshold=threshold, rollout_rs=None, bypass_mode=True,
                   loss_type="reinforce")

    @classmethod
    def bypass_pg_token_icepop(cls, threshold: float = 5.0, threshold_lower: float = 0.5) -> "RolloutCorrectionConfig":
        """Bypass mode, REINFORCE with token-level IcePop weights."""
        return cls(rollout_is="token", rollout_is_threshold=f"{threshold_lower}_{threshold}", rollout_rs=None,
                   bypass_mode=True, loss_type="reinforce")

    @classmethod
    def bypass_pg_geo_rs(cls, rs_threshold: Optional[Union[str, float]] = "0.999_1.001") -> "RolloutCorrectionConfig":
        """Bypass mode, REINFORCE with Geo-RS and no IS weights."""
        return cls(rollout_is=None, rollout_rs="seq_mean_k1", rollout_rs_threshold=rs_threshold, bypass_mode=True,
                   loss_type="reinforce")

    @classmethod
    def bypass_pg_geo_rs_seq_tis(cls, is_threshold: float = 2.0,
                                 rs_threshold: Optional[Union[str, float]] = "0.999_1.001"
                                 ) -> "RolloutCorrectionConfig":
        """Bypass mode, REINFORCE with Geo-RS and Seq-TIS."""
        return cls(rollout_is="sequence", rollout_is_threshold=is_threshold, rollout_rs="seq_mean_k1",
                   rollout_rs_threshold=rs_threshold, bypass_mode=True, loss_type="reinforce")

    @classmethod
    def bypass_pg_geo_rs_token_tis(cls, is_threshold: float = 2.0,
                                   rs_threshold: Optional[Union[str, float]] = "0.999_1.001"
                                   ) -> "RolloutCorrectionConfig":
        """Bypass mode, REINFORCE with Geo-RS and Token-TIS."""
        return cls(rollout_is="token", rollout_is_threshold=is_threshold, rollout_rs="seq_mean_k1",
                   rollout_rs_threshold=rs_threshold, bypass_mode=True, loss_type="reinforce")

    @classmethod
    def disabled(cls) -> "RolloutCorrectionConfig":
        """Metrics only: off-policy diagnostics are logged, nothing is corrected."""
        return cls(rollout_is=None, rollout_rs=None)


@dataclass
class CostFunctionConfig(BaseConfig):
    """``algorithm.safe_rlhf.cost_function``: the cost as a Python file's function (custom_reward_function's form)."""

    path: Optional[str] = None
    name: str = "compute_score"


@dataclass
class SafeRLHFConfig(BaseConfig):
    """``algorithm.safe_rlhf`` (not in verl; PKU safe-rlhf's PPO-Lagrangian defaults): the cost constraint
    ``cost_limit``, the multiplier's start, step size and cap, and the command line's cost sources."""

    enable: bool = False
    cost_limit: float = 0.0
    lambda_init: float = 1.0
    lambda_lr: float = 0.1
    lambda_max: Optional[float] = None
    cost_function: CostFunctionConfig = field(default_factory=CostFunctionConfig)
    cost_model_path: Optional[str] = None


@dataclass
class AlgoConfig(BaseConfig):
    """``algorithm``: the advantage estimator and its discounting (``gamma``, ``lam``), GRPO's std normalisation,
    the in-reward KL penalty and its controller, PF-PPO reweighting, DAPO's group filter, rollout correction."""

    gamma: float = 1.0
    lam: float = 1.0
    adv_estimator: str = "gae"
    norm_adv_by_std_in_grpo: bool = True
    use_kl_in_reward: bool = False
    kl_penalty: str = "kl"
    kl_ctrl: KLControlConfig = field(default_factory=KLControlConfig)
    use_pf_ppo: bool = False
    pf_ppo: dict[str, Any] = field(default_factory=dict)
    filter_groups: Optional[FilterGroupsConfig] = None
    rollout_correction: Optional[RolloutCorrectionConfig] = None
    gdpo_reward_keys: Optional[list[str]] = None
    gdpo_reward_weights: Optional[list[float]] = None
    sppo_eta: float = 1.0  # SPPO (the paper's eta; verl's recipe/sppo reads it as a softmean beta)
    safe_rlhf: SafeRLHFConfig = field(default_factory=SafeRLHFConfig)
