"""verl's ``core_algos`` on libverl: advantage estimators, KL, loss aggregation, policy / value /
entropy losses — same function names, arguments, defaults and return values as verl 0.9.1, so
code written against verl runs unchanged. The math runs in C++ (``verl/algo/*.h``).

Registries work as in verl: ``@register_adv_est(name)`` / ``@register_policy_loss(name)`` add a
Python function, ``get_adv_estimator_fn`` / ``get_policy_loss_fn`` return the function registered
under a name. Python functions are also registered in the C++ registries, so the C++ trainer
calls them too. Re-registering the same function is a no-op; a different function under a taken
name raises ``ValueError``.

``index`` (group ids) may be a numpy object array of uid strings (verl's ``uid`` column), a list,
or an integer array / tensor; it is turned into int64 group ids in one C++ pass.

Signatures follow verl 0.9.1 parameter for parameter, ``**kwargs`` included: verl's
``compute_advantage`` calls every estimator but GAE and GRPO with the same keyword set
(``token_level_rewards``, ``response_mask``, ``config``, plus ``index`` and ``reward_baselines`` when
the batch has them), so estimators that take ``**kwargs`` in verl drop the keywords they do not use,
as verl's do. ``compute_grpo_outcome_advantage`` / ``compute_grpo_vectorized_outcome_advantage``
take no ``**kwargs`` in verl and take none here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any

import numpy as np
import torch

from ... import _C

__all__ = [
    "AdvantageEstimator",
    "ADV_ESTIMATOR_REGISTRY",
    "POLICY_LOSS_REGISTRY",
    "register_adv_est",
    "get_adv_estimator_fn",
    "register_policy_loss",
    "get_policy_loss_fn",
    "AdaptiveKLController",
    "FixedKLController",
    "get_kl_controller",
    "compute_gae_advantage_return",
    "compute_grpo_outcome_advantage",
    "compute_grpo_vectorized_outcome_advantage",
    "compute_grpo_passk_outcome_advantage",
    "compute_rloo_outcome_advantage",
    "compute_rloo_vectorized_outcome_advantage",
    "compute_opo_outcome_advantage",
    "compute_reinforce_plus_plus_outcome_advantage",
    "compute_reinforce_plus_plus_baseline_outcome_advantage",
    "compute_remax_outcome_advantage",
    "compute_gpg_outcome_advantage",
    "compute_gdpo_outcome_advantage",
    "compute_optimal_token_baseline_advantage",
    "compute_multi_turn_optimal_token_baseline_advantage",
    "compute_pf_ppo_reweight_data",
    "compute_rewards",
    "kl_penalty",
    "kl_penalty_forward",
    "agg_loss",
    "compute_policy_loss",
    "compute_policy_loss_vanilla",
    "compute_policy_loss_dppo_tv",
    "compute_policy_loss_dppo_kl",
    "compute_policy_loss_gspo",
    "compute_policy_loss_sapo",
    "compute_policy_loss_gpg",
    "compute_policy_loss_clip_cov",
    "compute_policy_loss_kl_cov",
    "compute_policy_loss_geo_mean",
    "compute_policy_loss_dro",
    "compute_policy_loss_cispo",
    "compute_policy_loss_reinforce",
    "compute_policy_loss_bypass_mode",
    "compute_value_loss",
    "compute_entropy_loss",
]

_algo = _C.algo
_MISSING = object()


class AdvantageEstimator(str, Enum):
    """The advantage estimators verl-cpp implements, under verl's names."""

    GAE = "gae"
    GRPO = "grpo"
    REINFORCE_PLUS_PLUS = "reinforce_plus_plus"
    REINFORCE_PLUS_PLUS_BASELINE = "reinforce_plus_plus_baseline"
    REMAX = "remax"
    RLOO = "rloo"
    OPO = "opo"
    GRPO_PASSK = "grpo_passk"
    GPG = "gpg"
    RLOO_VECTORIZED = "rloo_vectorized"
    GRPO_VECTORIZED = "grpo_vectorized"
    OPTIMAL_TOKEN_BASELINE = "optimal_token_baseline"
    TIR_OPTIMAL_TOKEN_BASELINE = "tir_optimal_token_baseline"
    GDPO = "gdpo"


# Estimators registered in the Python registry only: none -- the C++ registry's AdvantageInputs carries every built-in's
# inputs (GDPO's reward components, the optimal token baselines' old_log_probs and sum_pi_squared).
PYTHON_ONLY_ESTIMATORS: frozenset[str] = frozenset()


ADV_ESTIMATOR_REGISTRY: dict[str, Callable] = {}
POLICY_LOSS_REGISTRY: dict[str, Callable] = {}


class _AttrDict(dict):
    """A config dict that also answers attribute access, as verl's config objects do."""

    def __getattr__(self, name: str) -> Any:
        try:
            value = self[name]
        except KeyError as e:
            raise AttributeError(name) from e
        return _AttrDict(value) if isinstance(value, dict) and not isinstance(value, _AttrDict) else value


def _get(config: Any, key: str, default: Any = _MISSING) -> Any:
    """config[key] / config.key / config.get(key), for dicts, dataclasses, OmegaConf and verl.Config."""
    if config is None:
        return default
    if isinstance(config, Mapping):
        return config[key] if key in config else default
    value = getattr(config, key, _MISSING)
    if value is _MISSING and hasattr(config, "get"):
        value = config.get(key, _MISSING)
    return default if value is _MISSING else value


def _number(value: Any) -> Any:
    return value.item() if isinstance(value, torch.Tensor) else value


def _name(name_or_enum: str | Enum) -> str:
    return name_or_enum.value if isinstance(name_or_enum, Enum) else name_or_enum


def _index(index: Any, device: torch.device) -> torch.Tensor:
    """Group ids as an int64 tensor on `device`: integer arrays/tensors as they are, uids via one C++ pass."""
    if isinstance(index, torch.Tensor) and not index.is_floating_point():
        ids = index.long()
    elif isinstance(index, np.ndarray) and index.dtype.kind in "iu":
        ids = torch.from_numpy(index.astype(np.int64, copy=False))
    else:
        ids = _algo.group_ids(index)
    return ids.to(device)


# ---- registries ----------------------------------------------------------------------------------
def _check_free(registry: dict, kind: str, name: str, fn: Callable) -> None:
    existing = registry.get(name)
    if existing is not None and existing is not fn:
        raise ValueError(f"{kind} {name} has already been registered: {existing} vs {fn}")


def _call_with_accepted(fn: Callable, available: dict) -> Any:
    """Calls fn with the keyword arguments its signature accepts (all of them for **kwargs)."""
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return fn(**available)
    return fn(**{k: v for k, v in available.items() if k in params})


def _adv_adapter(fn: Callable) -> Callable:
    """What the C++ registry calls for a Python estimator: verl's keyword arguments, index as numpy ids."""

    def adapter(token_level_rewards, response_mask, index, values, reward_baselines, config):
        available = {"token_level_rewards": token_level_rewards, "response_mask": response_mask, "config": _AttrDict(config)}
        available.update({k: config[k] for k in ("gamma", "lam", "epsilon", "norm_adv_by_std_in_grpo")})
        for key, value in (("index", index), ("values", values), ("reward_baselines", reward_baselines)):
            if value is not None:
                available[key] = value.cpu().numpy() if key == "index" else value
        advantages, returns = _call_with_accepted(fn, available)
        return advantages, returns

    return adapter


def register_adv_est(name_or_enum: str | AdvantageEstimator) -> Callable[[Callable], Callable]:
    """Decorator registering an advantage estimator under a name (verl's ``register_adv_est``)."""
    name = _name(name_or_enum)

    def decorator(fn: Callable) -> Callable:
        _check_free(ADV_ESTIMATOR_REGISTRY, "Adv estimator", name, fn)
        if not getattr(fn, "_verl_builtin", False):
            _algo.register_adv_est(name, _adv_adapter(fn), fn)
        ADV_ESTIMATOR_REGISTRY[name] = fn
        return fn

    return decorator


def get_adv_estimator_fn(name_or_enum: str | AdvantageEstimator) -> Callable:
    """The estimator registered under a name; ``ValueError`` listing the known names otherwise."""
    name = _name(name_or_enum)
    if name not in ADV_ESTIMATOR_REGISTRY:
        # verl's wording ("... simply: name"), which code written against verl matches on.
        raise ValueError(f"Unknown advantage estimator simply: {name}. Registered: {sorted(ADV_ESTIMATOR_REGISTRY)}")
    return ADV_ESTIMATOR_REGISTRY[name]


def _policy_adapter(fn: Callable) -> Callable:
    def adapter(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights):
        loss, metrics = fn(
            old_log_prob=old_log_prob,
            log_prob=log_prob,
            advantages=advantages,
            response_mask=response_mask,
            loss_agg_mode=loss_agg_mode,
            config=_AttrDict(config),
            rollout_is_weights=rollout_is_weights,
        )
        return loss, {k: float(_number(v)) for k, v in metrics.items()}

    return adapter


def register_policy_loss(name: str) -> Callable[[Callable], Callable]:
    """Decorator registering a policy loss under a name (verl's ``register_policy_loss``).

    The function takes ``(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config,
    rollout_is_weights)`` and returns ``(loss, metrics_dict)``.
    """

    def decorator(fn: Callable) -> Callable:
        _check_free(POLICY_LOSS_REGISTRY, "Policy loss", name, fn)
        if not getattr(fn, "_verl_builtin", False):
            _algo.register_policy_loss(name, _policy_adapter(fn), fn)
        POLICY_LOSS_REGISTRY[name] = fn
        return fn

    return decorator


def get_policy_loss_fn(name: str) -> Callable:
    """The policy loss registered under a name; ``ValueError`` listing the supported modes otherwise."""
    if name not in POLICY_LOSS_REGISTRY:
        raise ValueError(f"Unsupported loss mode: {name}. Supported modes are: {list(POLICY_LOSS_REGISTRY)}")
    return POLICY_LOSS_REGISTRY[name]


def _builtin(fn: Callable) -> Callable:
    fn._verl_builtin = True  # implemented by libverl, already in the C++ registry
    return fn


# ---- advantage estimators -------------------------------------------------------------------------
@register_adv_est(AdvantageEstimator.GAE)
@_builtin
def compute_gae_advantage_return(token_level_rewards, values, response_mask, gamma, lam):
    """GAE advantages and returns, (bs, response_length) each; positions with mask 0 carry value and advantage through."""
    return _algo.compute_gae_advantage_return(token_level_rewards, values, response_mask, float(_number(gamma)), float(_number(lam)))


def _grpo_like(cpp_fn: Callable) -> Callable:
    # verl's GRPO takes no **kwargs and uses its own norm_adv_by_std_in_grpo argument; an explicit
    # argument therefore wins over config. None (not passed) reads config.norm_adv_by_std_in_grpo,
    # and defaults to True, verl's default, without one.
    def estimator(token_level_rewards, response_mask, index, epsilon=1e-6, norm_adv_by_std_in_grpo=None, config=None):
        if norm_adv_by_std_in_grpo is None:
            norm_adv_by_std_in_grpo = _get(config, "norm_adv_by_std_in_grpo", True)
        ids = _index(index, token_level_rewards.device)
        return cpp_fn(token_level_rewards, response_mask, ids, float(epsilon), bool(norm_adv_by_std_in_grpo))

    return _builtin(estimator)


def _grpo_passk(cpp_fn: Callable) -> Callable:
    # verl's Pass@k reads norm_adv_by_std_in_grpo from config (which wins over the argument) and
    # ignores unknown keywords.
    def estimator(token_level_rewards, response_mask, index, epsilon=1e-6, norm_adv_by_std_in_grpo=True, config=None,
                  **kwargs):
        if config is not None:
            norm_adv_by_std_in_grpo = _get(config, "norm_adv_by_std_in_grpo", True)
        ids = _index(index, token_level_rewards.device)
        return cpp_fn(token_level_rewards, response_mask, ids, float(epsilon), bool(norm_adv_by_std_in_grpo))

    return _builtin(estimator)


def _grouped(cpp_fn: Callable) -> Callable:
    # epsilon and config are in verl's signature but unused by these estimators' math (there too);
    # **kwargs takes the rest of compute_advantage's keyword set (reward_baselines, ...).
    def estimator(token_level_rewards, response_mask, index, epsilon=1e-6, config=None, **kwargs):
        return cpp_fn(token_level_rewards, response_mask, _index(index, token_level_rewards.device))

    return _builtin(estimator)


compute_grpo_outcome_advantage = register_adv_est(AdvantageEstimator.GRPO)(_grpo_like(_algo.compute_grpo_outcome_advantage))
compute_grpo_vectorized_outcome_advantage = register_adv_est(AdvantageEstimator.GRPO_VECTORIZED)(
    _grpo_like(_algo.compute_grpo_vectorized_outcome_advantage)
)
compute_grpo_passk_outcome_advantage = register_adv_est(AdvantageEstimator.GRPO_PASSK)(
    _grpo_passk(_algo.compute_grpo_passk_outcome_advantage)
)
compute_rloo_outcome_advantage = register_adv_est(AdvantageEstimator.RLOO)(_grouped(_algo.compute_rloo_outcome_advantage))
compute_rloo_vectorized_outcome_advantage = register_adv_est(AdvantageEstimator.RLOO_VECTORIZED)(
    _grouped(_algo.compute_rloo_vectorized_outcome_advantage)
)
compute_opo_outcome_advantage = register_adv_est(AdvantageEstimator.OPO)(_grouped(_algo.compute_opo_outcome_advantage))
compute_reinforce_plus_plus_baseline_outcome_advantage = register_adv_est(AdvantageEstimator.REINFORCE_PLUS_PLUS_BASELINE)(
    _grouped(_algo.compute_reinforce_plus_plus_baseline_outcome_advantage)
)
for _fn, _verl_name in (
    (compute_grpo_outcome_advantage, "compute_grpo_outcome_advantage"),
    (compute_grpo_vectorized_outcome_advantage, "compute_grpo_vectorized_outcome_advantage"),
    (compute_grpo_passk_outcome_advantage, "compute_grpo_passk_outcome_advantage"),
    (compute_rloo_outcome_advantage, "compute_rloo_outcome_advantage"),
    (compute_rloo_vectorized_outcome_advantage, "compute_rloo_vectorized_outcome_advantage"),
    (compute_opo_outcome_advantage, "compute_opo_outcome_advantage"),
    (compute_reinforce_plus_plus_baseline_outcome_advantage, "compute_reinforce_plus_plus_baseline_outcome_advantage"),
):
    _fn.__name__ = _fn.__qualname__ = _verl_name
    _fn.__doc__ = f"verl's {_verl_name}: (advantages, returns), each (bs, response_length)."
for _fn in (compute_grpo_outcome_advantage, compute_grpo_vectorized_outcome_advantage):
    _fn.__doc__ += (
        " norm_adv_by_std_in_grpo: an explicit value wins, as in verl; not passed (None), it is read from"
        " config.norm_adv_by_std_in_grpo, True without a config (verl's default)."
    )


@register_adv_est(AdvantageEstimator.REINFORCE_PLUS_PLUS)
@_builtin
def compute_reinforce_plus_plus_outcome_advantage(token_level_rewards, response_mask, config=None, **kwargs):
    """REINFORCE++: discounted returns (gamma = config.gamma), whitened over the batch. Other keywords
    (index, reward_baselines, as compute_advantage passes them) are not used, as in verl."""
    if config is None:
        raise ValueError("compute_reinforce_plus_plus_outcome_advantage needs config (for config.gamma)")
    return _algo.compute_reinforce_plus_plus_outcome_advantage(token_level_rewards, response_mask, float(_number(_get(config, "gamma"))))


@register_adv_est(AdvantageEstimator.REMAX)
@_builtin
def compute_remax_outcome_advantage(token_level_rewards, reward_baselines, response_mask, config=None, **kwargs):
    """ReMax: returns minus the greedy-rollout baseline reward_baselines (bs,). index is not used, as in verl."""
    return _algo.compute_remax_outcome_advantage(token_level_rewards, reward_baselines, response_mask)


@register_adv_est(AdvantageEstimator.GPG)
@_builtin
def compute_gpg_outcome_advantage(token_level_rewards, response_mask, index, epsilon=1e-6, f_norm=1.0, alpha=1.0, config=None,
                                  **kwargs):
    """GPG: group-mean baseline scaled by alpha = bs / #nonzero scores, divided by f_norm. As in verl, the
    alpha argument is overwritten by that ratio and epsilon is unused, so neither changes the result."""
    return _algo.compute_gpg_outcome_advantage(token_level_rewards, response_mask, _index(index, token_level_rewards.device), float(f_norm))


@register_adv_est(AdvantageEstimator.GDPO)
@_builtin
def compute_gdpo_outcome_advantage(token_level_rewards, response_mask, index, epsilon=1e-6, norm_adv_by_std_in_grpo=True,
                                   config=None, non_tensor_batch=None, batch=None, **kwargs):
    """GDPO: each reward component GRPO-normalized in its group, weighted sum, whitened over the batch.

    With config, non_tensor_batch and batch all given (verl's compute_advantage passes them), the
    components are non_tensor_batch[k] for k in config.gdpo_reward_keys (required then), each score
    placed at its row's last response token, weighted by config.gdpo_reward_weights (all 1 when
    unset); otherwise token_level_rewards is the single component. norm_adv_by_std_in_grpo is the
    argument's (verl does not read config's here)."""
    components, weights = [token_level_rewards], None
    if config is not None and non_tensor_batch is not None and batch is not None:
        keys = _get(config, "gdpo_reward_keys", None)
        if not keys:
            raise ValueError(
                "GDPO requires 'algorithm.gdpo_reward_keys' listing the individual reward component keys returned by "
                "compute_score (e.g. ['format_reward', 'accuracy_reward'])."
            )
        prompt_length = batch["prompts"].size(1)
        components = []
        for key in keys:
            if key not in non_tensor_batch:
                raise KeyError(
                    f"GDPO reward key '{key}' not found in non_tensor_batch. Available keys: {list(non_tensor_batch.keys())}. "
                    f"Make sure your compute_score returns a dict containing '{key}'."
                )
            scores = torch.from_numpy(np.asarray(non_tensor_batch[key], dtype=np.float32))
            components.append(_algo.gdpo_component_rewards(scores, batch["attention_mask"], prompt_length, response_mask))
        gdpo_weights = _get(config, "gdpo_reward_weights", None)
        if gdpo_weights is not None:
            weights = [float(w) for w in gdpo_weights]
    ids = _index(index, token_level_rewards.device)
    return _algo.compute_gdpo_outcome_advantage(components, response_mask, ids, float(epsilon), bool(norm_adv_by_std_in_grpo),
                                                weights)


def _otb(cpp_fn: Callable, verl_name: str, enum: AdvantageEstimator) -> Callable:
    def estimator(token_level_rewards, response_mask, index, old_log_probs, sum_pi_squared, rollout_is_weights=None,
                  handle_zero_tail=True, epsilon=1e-8, **kwargs):
        ids = _index(index, token_level_rewards.device)
        return cpp_fn(token_level_rewards, response_mask, ids, old_log_probs, sum_pi_squared, rollout_is_weights,
                      bool(handle_zero_tail), float(epsilon))

    estimator.__name__ = estimator.__qualname__ = verl_name
    return register_adv_est(enum)(_builtin(estimator))


compute_optimal_token_baseline_advantage = _otb(
    _algo.compute_optimal_token_baseline_advantage, "compute_optimal_token_baseline_advantage",
    AdvantageEstimator.OPTIMAL_TOKEN_BASELINE,
)
compute_optimal_token_baseline_advantage.__doc__ = (
    "Optimal Token Baseline: per-timestep group baseline B_t = sum(G_t W_t) / (sum(W_t) + epsilon), W_t the "
    "cumulative 1 - 2 pi_t + sum_pi_squared (times rollout_is_weights^2 when given); returns (advantages, returns)."
)
compute_multi_turn_optimal_token_baseline_advantage = _otb(
    _algo.compute_multi_turn_optimal_token_baseline_advantage, "compute_multi_turn_optimal_token_baseline_advantage",
    AdvantageEstimator.TIR_OPTIMAL_TOKEN_BASELINE,
)
compute_multi_turn_optimal_token_baseline_advantage.__doc__ = (
    "Optimal Token Baseline for multi-turn rows: timestep t is a row's t-th response token (mask-0 observation "
    "tokens squeezed out); rows without response tokens get advantage 0. Returns (advantages, returns)."
)


def compute_pf_ppo_reweight_data(data, reweight_method="pow", weight_pow=2.0):
    """PF-PPO: a copy of ``data`` resampled with replacement, rows drawn with weights of their summed
    token_level_scores (pow: |score|^weight_pow; max_min; max_random). Drawn with torch.multinomial on
    the default generator. Non-tensor columns and meta_info lists of batch length are resampled too."""
    from copy import deepcopy

    sample_indices = _algo.pf_ppo_sample_indices(data.batch["token_level_scores"], reweight_method, float(weight_pow))
    batch_size = sample_indices.shape[0]
    resampled_batch = {key: tensor[sample_indices] for key, tensor in data.batch.items()}
    rows = sample_indices.cpu().numpy()
    non_tensor = {
        key: array[rows] if isinstance(array, np.ndarray) else [array[i] for i in rows]
        for key, array in data.non_tensor_batch.items()
    }
    meta_info = {
        key: [value[i] for i in rows] if isinstance(value, list) and len(value) == batch_size else value
        for key, value in data.meta_info.items()
    }
    resampled = deepcopy(data)
    resampled.batch = type(data.batch)(resampled_batch, batch_size=data.batch.batch_size)
    resampled.non_tensor_batch = non_tensor
    resampled.meta_info = meta_info
    return resampled


# ---- KL ------------------------------------------------------------------------------------------
FixedKLController = _algo.FixedKLController
AdaptiveKLController = _algo.AdaptiveKLController


def get_kl_controller(kl_ctrl: Any):
    """A Fixed- or AdaptiveKLController from ``algorithm.kl_ctrl`` (object or dict with type, kl_coef, target_kl, horizon)."""
    return _algo.get_kl_controller(
        _get(kl_ctrl, "type", "fixed"),
        float(_get(kl_ctrl, "kl_coef", 0.001)),
        float(_get(kl_ctrl, "target_kl", 0.1)),
        int(_get(kl_ctrl, "horizon", 10000)),
    )


def kl_penalty(logprob: torch.Tensor, ref_logprob: torch.Tensor, kl_penalty: str) -> torch.Tensor:
    """Per-token KL estimate: kl/k1, abs, mse/k2, low_var_kl/k3 (clamped as verl), "+" for k2 gradients."""
    return _algo.kl_penalty(logprob, ref_logprob, kl_penalty)


def kl_penalty_forward(logprob: torch.Tensor, ref_logprob: torch.Tensor, kl_penalty: str) -> torch.Tensor:
    """The KL estimate's value without the straight-through "+" handling."""
    return _algo.kl_penalty_forward(logprob, ref_logprob, kl_penalty)


def compute_rewards(token_level_scores, old_log_prob, ref_log_prob, kl_ratio):
    """token_level_scores - kl_ratio * (old_log_prob - ref_log_prob)."""
    return _algo.compute_rewards(token_level_scores, old_log_prob, ref_log_prob, float(_number(kl_ratio)))


# ---- losses --------------------------------------------------------------------------------------
def agg_loss(loss_mat, loss_mask, loss_agg_mode, dp_size=1, batch_num_tokens=None, global_batch_size=None, loss_scale_factor=None):
    """Aggregates a (bs, response_length) loss matrix: token-mean, token-sum, seq-mean-token-sum,
    seq-mean-token-mean, seq-mean-token-sum-norm (verl's global normalisation over dp ranks)."""
    return _algo.agg_loss(
        loss_mat, loss_mask, loss_agg_mode, int(dp_size), _optional_float(batch_num_tokens),
        _optional_float(global_batch_size), _optional_float(loss_scale_factor),
    )


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(_number(value))


_POLICY_FIELDS = ("clip_ratio", "clip_ratio_low", "clip_ratio_high", "clip_ratio_c", "loss_agg_mode", "tau_pos", "tau_neg")
_POLICY_LOSS_FIELDS = ("loss_mode", "clip_cov_ratio", "clip_cov_lb", "clip_cov_ub", "kl_cov_ratio", "ppo_kl_coef", "dro_beta")
_GLOBAL_BATCH_FIELDS = ("dp_size", "batch_num_tokens", "global_batch_size", "loss_scale_factor")


def _pick(source: Any, fields: tuple[str, ...]) -> dict:
    out = {}
    for key in fields:
        value = _get(source, key)
        if value is not _MISSING:
            out[key] = _number(value)
    return out


def _policy_config(config: Any) -> dict:
    """verl's ActorConfig fields the losses read, from an object with verl's attribute names or a dict."""
    if config is None:
        raise ValueError("policy losses need the actor config (clip_ratio, policy_loss, ...); got config=None")
    out = _pick(config, _POLICY_FIELDS)
    policy_loss = _get(config, "policy_loss")
    if policy_loss is not _MISSING and policy_loss is not None:
        out["policy_loss"] = _pick(policy_loss, _POLICY_LOSS_FIELDS)
        rollout_correction = _get(policy_loss, "rollout_correction")
        if rollout_correction is not _MISSING and rollout_correction is not None:
            from verl.trainer.ppo.rollout_corr_helper import rollout_correction_dict

            out["policy_loss"]["rollout_correction"] = rollout_correction_dict(rollout_correction)
    global_batch_info = _get(config, "global_batch_info")
    if global_batch_info is not _MISSING and global_batch_info is not None:
        out["global_batch_info"] = _pick(global_batch_info, _GLOBAL_BATCH_FIELDS)
    return out


def _builtin_policy_loss(name: str, default_agg: str = "token-mean") -> Callable:
    def policy_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode=default_agg, config=None, rollout_is_weights=None):
        return _algo.run_policy_loss(
            name, old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, _policy_config(config), rollout_is_weights
        )

    policy_loss.__name__ = policy_loss.__qualname__ = f"compute_policy_loss_{name}"
    policy_loss.__doc__ = (
        f'verl\'s "{name}" policy loss: (old_log_prob, log_prob, advantages, response_mask) all (bs, response_length); '
        "returns (pg_loss, metrics)."
    )
    return register_policy_loss(name)(_builtin(policy_loss))


compute_policy_loss_vanilla = _builtin_policy_loss("vanilla")
compute_policy_loss_dppo_tv = _builtin_policy_loss("dppo_tv")
compute_policy_loss_dppo_kl = _builtin_policy_loss("dppo_kl")
compute_policy_loss_gspo = _builtin_policy_loss("gspo", "seq-mean-token-mean")
compute_policy_loss_sapo = _builtin_policy_loss("sapo", "seq-mean-token-mean")
compute_policy_loss_gpg = _builtin_policy_loss("gpg")
compute_policy_loss_clip_cov = _builtin_policy_loss("clip_cov")
compute_policy_loss_kl_cov = _builtin_policy_loss("kl_cov")
compute_policy_loss_geo_mean = _builtin_policy_loss("geo_mean")
compute_policy_loss_dro = _builtin_policy_loss("dro")
compute_policy_loss_cispo = _builtin_policy_loss("cispo")


def compute_policy_loss_reinforce(rollout_log_prob, log_prob, advantages, response_mask, loss_agg_mode="seq-mean-token-sum",
                                  config=None, rollout_is_weights=None):
    """REINFORCE loss -A * log_prob (times rollout_is_weights when given), no ratio or clip; returns
    (pg_loss, {"actor/ppo_kl": masked mean of rollout_log_prob - log_prob}). Needs the actor config
    (its global_batch_info)."""
    if config is None:
        raise ValueError("ActorConfig must be provided for REINFORCE loss (config=None)")
    return _algo.compute_policy_loss_reinforce(
        rollout_log_prob, log_prob, advantages, response_mask, loss_agg_mode, _policy_config(config), rollout_is_weights
    )


@register_policy_loss("bypass_mode")
@_builtin
def compute_policy_loss_bypass_mode(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean",
                                    config=None, rollout_is_weights=None):
    """Rollout correction's loss when old_log_prob is the rollout's log-prob (verl's bypass mode): IS weights
    and rejection mask of log_prob against old_log_prob from config.policy_loss.rollout_correction, then
    PPO-clip on the kept tokens (loss_type "ppo_clip", no weights: the ratio is already pi / pi_rollout) or
    REINFORCE with the weights ("reinforce"). rollout_is_weights is ignored (computed here). Returns
    (pg_loss, metrics) with the rollout_corr/* metrics."""
    assert config is not None, "config is required for bypass_mode loss"
    policy_loss = _get(config, "policy_loss", None)
    if policy_loss is None or _get(policy_loss, "rollout_correction", None) is None:
        raise ValueError(
            "rollout_correction config not found in policy_loss. "
            "When using loss_mode='bypass_mode', ensure rollout_correction config is passed."
        )
    return _algo.run_policy_loss(
        "bypass_mode", old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, _policy_config(config), None
    )


def compute_policy_loss(old_log_prob, log_prob, advantages, response_mask, cliprange=None, cliprange_low=None,
                        cliprange_high=None, clip_ratio_c=3.0, loss_agg_mode="token-mean"):
    """Deprecated verl form of the vanilla loss: returns (pg_loss, pg_clipfrac, ppo_kl, pg_clipfrac_lower)."""
    return _algo.compute_policy_loss(
        old_log_prob, log_prob, advantages, response_mask, _optional_float(cliprange), _optional_float(cliprange_low),
        _optional_float(cliprange_high), float(clip_ratio_c), loss_agg_mode,
    )


def compute_value_loss(vpreds, returns, values, response_mask, cliprange_value, loss_agg_mode="token-mean", dp_size=1,
                       batch_num_tokens=None, global_batch_size=None, loss_scale_factor=None):
    """Clipped value loss: returns (vf_loss, vf_clipfrac)."""
    return _algo.compute_value_loss(
        vpreds, returns, values, response_mask, float(cliprange_value), loss_agg_mode, int(dp_size),
        _optional_float(batch_num_tokens), _optional_float(global_batch_size), _optional_float(loss_scale_factor),
    )


def compute_entropy_loss(logits, response_mask, loss_agg_mode: str = "token-mean"):
    """Aggregated entropy of softmax(logits) over the response tokens."""
    return _algo.compute_entropy_loss(logits, response_mask, loss_agg_mode)
