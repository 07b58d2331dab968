"""Rollout correction with verl's names and signatures (verl.trainer.ppo.rollout_corr_helper).

Importance-sampling weights pi_train / pi_rollout (token or sequence level; a single threshold truncates
them, "lower_upper" zeroes those outside), rejection of tokens / sequences whose divergence from the rollout
policy exceeds a bound (``token_k1`` ... ``seq_max_k3``, comma separated), and off-policy diagnostics (KL,
perplexities, chi^2). The math is libverl's (cpp/src/algo/rollout_correction.cpp); this module converts
verl's arguments and wraps the results as verl returns them.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from verl import _C
from verl.protocol import DataProto

__all__ = [
    "SAFETY_BOUND",
    "SUPPORTED_ROLLOUT_RS_OPTIONS",
    "TOKEN_LEVEL_ROLLOUT_RS_OPTIONS",
    "compute_rollout_rejection_mask",
    "compute_rollout_correction_weights",
    "compute_rollout_correction_and_rejection_mask",
    "compute_offpolicy_metrics",
    "compute_rollout_correction_and_add_to_batch",
    "compute_rollout_corr_metrics_from_logprobs",
    "apply_bypass_mode",
]

_algo = _C.algo

SAFETY_BOUND = 20.0
SUPPORTED_ROLLOUT_RS_OPTIONS: set[str] = {
    "token_k1", "token_k2", "token_k3",
    "seq_sum_k1", "seq_sum_k2", "seq_sum_k3",
    "seq_mean_k1", "seq_mean_k2", "seq_mean_k3",
    "seq_max_k2", "seq_max_k3",
}
TOKEN_LEVEL_ROLLOUT_RS_OPTIONS: set[str] = {"token_k1", "token_k2", "token_k3"}

_CONFIG_FIELDS = ("rollout_is", "rollout_is_threshold", "rollout_is_batch_normalize", "rollout_rs",
                  "rollout_rs_threshold", "bypass_mode", "loss_type")


def _threshold_text(spec: Any, name: str) -> Optional[str]:
    """verl's threshold specification (a float or a string) as the text libverl parses; repr(float) reads
    back as the same double."""
    if spec is None:
        return None
    if isinstance(spec, torch.Tensor):
        spec = spec.item()
    if isinstance(spec, bool):
        raise TypeError(f"{name} must be specified as a float or a string threshold specification, not a boolean.")
    if isinstance(spec, (int, float)):
        return repr(float(spec))
    if isinstance(spec, str):
        return spec
    raise TypeError(f"{name} must be a float or a string threshold specification.")


def rollout_correction_dict(config: Any) -> dict:
    """The fields of a RolloutCorrectionConfig (dataclass, dict, OmegaConf) that are set, thresholds as text;
    absent fields take verl's ``.get`` defaults in libverl."""
    out = {}
    for key in _CONFIG_FIELDS:
        if isinstance(config, dict) or hasattr(config, "keys"):
            present = key in config
            value = config[key] if present else None
        else:
            present = hasattr(config, key)
            value = getattr(config, key, None)
        if not present:
            continue
        out[key] = _threshold_text(value, key) if key.endswith("_threshold") else value
    return out


def compute_rollout_rejection_mask(
    log_ratio: torch.Tensor,
    response_mask: torch.Tensor,
    rollout_rs: str = "token_k1",
    rollout_rs_threshold: Optional[str | float] = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Masks tokens / sequences whose divergence estimate of log_ratio = log pi_train - log pi_rollout
    (bs, response_length) breaks the bound; every comma-separated option must pass. Returns
    (response_mask with rejected tokens 0, metrics)."""
    if rollout_rs is None or not isinstance(rollout_rs, str):
        raise ValueError("rollout_rs must be a non-empty string (comma separated for multiple options).")
    if rollout_rs_threshold is None:
        raise ValueError("rollout_rs_threshold must be provided for rejection sampling.")
    if isinstance(rollout_rs_threshold, bool) or not isinstance(rollout_rs_threshold, (int, float, str)):
        raise TypeError("rollout_rs_threshold must be a string or numeric value specifying per-option thresholds.")
    spec = rollout_rs_threshold if isinstance(rollout_rs_threshold, str) else str(rollout_rs_threshold)
    return _algo.compute_rollout_rejection_mask(log_ratio, response_mask, rollout_rs, spec)


def compute_rollout_correction_weights(
    log_ratio: torch.Tensor,
    response_mask: torch.Tensor,
    rollout_is: str = "token",
    rollout_is_threshold: str | float = 2.0,
    rollout_is_batch_normalize: bool = False,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Truncated (or IcePop-masked) importance weights exp(log_ratio) per token or per sequence,
    (bs, response_length), detached, zero on padding; returns (weights, metrics)."""
    if rollout_is not in ("token", "sequence"):
        raise ValueError(f"Invalid rollout_is: {rollout_is}. Must be one of {{'token', 'sequence'}}.")
    return _algo.compute_rollout_correction_weights(
        log_ratio, response_mask, rollout_is, _threshold_text(rollout_is_threshold, "rollout_is_threshold"),
        bool(rollout_is_batch_normalize),
    )


def compute_rollout_correction_and_rejection_mask(
    old_log_prob: torch.Tensor,
    rollout_log_prob: torch.Tensor,
    response_mask: torch.Tensor,
    rollout_is: Optional[str] = None,
    rollout_is_threshold: Optional[str | float] = 2.0,
    rollout_is_batch_normalize: bool = False,
    rollout_rs: Optional[str] = None,
    rollout_rs_threshold: Optional[str | float] = None,
) -> tuple[Optional[DataProto], torch.Tensor, dict[str, float]]:
    """IS weights (a DataProto with ``rollout_is_weights``, or None when rollout_is is None), the response
    mask with rejections applied, and every metric prefixed ``rollout_corr/``."""
    config = {
        "rollout_is": rollout_is,
        "rollout_is_threshold": _threshold_text(rollout_is_threshold, "rollout_is_threshold"),
        "rollout_is_batch_normalize": bool(rollout_is_batch_normalize),
        "rollout_rs": rollout_rs,
        "rollout_rs_threshold": _threshold_text(rollout_rs_threshold, "rollout_rs_threshold"),
    }
    weights, mask, metrics = _algo.compute_rollout_correction_and_rejection_mask(
        old_log_prob, rollout_log_prob, response_mask, config
    )
    proto = None if weights is None else DataProto.from_dict(tensors={"rollout_is_weights": weights})
    return proto, mask, metrics


def compute_offpolicy_metrics(
    old_log_prob: torch.Tensor,
    rollout_log_prob: Optional[torch.Tensor],
    response_mask: torch.Tensor,
) -> dict[str, Any]:
    """Training / rollout perplexities, KL(pi_rollout || pi_train) (direct and k3), log-PPL differences and
    chi^2 per token and per sequence, unprefixed (only the training ones without rollout_log_prob)."""
    assert response_mask.any(), "Expected at least one valid token in response_mask"
    return _algo.compute_offpolicy_metrics(old_log_prob, rollout_log_prob, response_mask)


def compute_rollout_correction_and_add_to_batch(batch: DataProto, rollout_corr_config: Any) -> tuple[DataProto, dict]:
    """Applies the rejection mask to batch's ``response_mask`` and adds ``rollout_is_weights`` when IS is on,
    from its ``old_log_probs`` and ``rollout_log_probs``; returns (batch, rollout_corr/* metrics)."""
    config = rollout_correction_dict(rollout_corr_config)
    weights, mask, metrics = _algo.compute_rollout_correction_and_rejection_mask(
        batch.batch["old_log_probs"], batch.batch["rollout_log_probs"], batch.batch["response_mask"], config
    )
    batch.batch["response_mask"] = mask
    if weights is not None:
        batch = batch.union(DataProto.from_dict(tensors={"rollout_is_weights": weights}))
    return batch, metrics


def compute_rollout_corr_metrics_from_logprobs(
    log_prob: torch.Tensor,
    rollout_log_prob: torch.Tensor,
    response_mask: torch.Tensor,
) -> dict[str, float]:
    """compute_offpolicy_metrics of the current policy's log-probs, prefixed ``rollout_corr/``."""
    return {f"rollout_corr/{k}": v for k, v in compute_offpolicy_metrics(log_prob, rollout_log_prob, response_mask).items()}


def apply_bypass_mode(batch: DataProto, rollout_corr_config: Any = None, policy_loss_config: Any = None) -> None:
    """Bypass mode: ``old_log_probs`` := ``rollout_log_probs`` (no recomputation), and the policy loss
    becomes ``bypass_mode`` with this rollout correction."""
    if "rollout_log_probs" not in batch.batch:
        raise ValueError(
            "bypass_mode=True requires rollout_log_probs in batch. "
            "Ensure rollout worker is configured to calculate_log_probs=true."
        )
    batch.batch["old_log_probs"] = batch.batch["rollout_log_probs"]
    try:  # OmegaConf configs in struct mode take new keys only inside open_dict, as in verl
        from omegaconf import DictConfig, open_dict
    except ImportError:  # pragma: no cover - omegaconf is optional
        DictConfig = None
    if DictConfig is not None and isinstance(policy_loss_config, DictConfig):
        with open_dict(policy_loss_config):
            policy_loss_config["rollout_correction"] = rollout_corr_config
            policy_loss_config["loss_mode"] = "bypass_mode"
    else:
        policy_loss_config["rollout_correction"] = rollout_corr_config
        policy_loss_config["loss_mode"] = "bypass_mode"
